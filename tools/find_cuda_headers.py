"""Choose the directory of CUDA headers (cuda.h, cudaProfiler.h) that the build compiles with.

CMakeLists.txt runs this at configure time with the build's Python. The protocol:

* exit status 0: stdout is three lines, the include directory, its CUDA version (``13.3``)
  and the directory of cudaProfiler.h (the include directory but with the CUDA 12 wheels,
  which put it in a directory of its own); anything on stderr is one paragraph that CMake prints as a WARNING;
* exit status 1: stderr is one paragraph that CMake prints as a FATAL_ERROR.

The policy (docs/install.rst, "CUDA_HOME"): the headers must be those of the CUDA major of the
cuda-bindings in the build environment, and of its minor or a newer one, since cuda_core is
generated from that minor's cuda.h. A ``CUDA_HOME`` toolkit that qualifies is used. One that does
not (CUDA 13.0 under cuda-bindings 13.3, or another major) is passed over, with a warning, in
favour of the headers of the nvidia-cuda-runtime and nvidia-cuda-profiler-api wheels, which
pyproject.toml pins to the cuda-bindings minor. A ``CUDA_HOME`` without the headers, or no usable
headers at all, is an error.
"""
from __future__ import annotations

import os
import re
import sys
from typing import NamedTuple, Optional, Tuple

HEADERS = ("cuda.h", "cudaProfiler.h")
WHEELS = "nvidia-cuda-runtime and nvidia-cuda-profiler-api"

Version = Tuple[int, int]

_CUDA_VERSION = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+CUDA_VERSION[ \t]+(\d+)", re.MULTILINE)


class HeaderError(Exception):
    """The build cannot go on; the message is one paragraph for the user."""


class Choice(NamedTuple):
    include: str
    version: Version
    warning: Optional[str]  # one paragraph, or None


def fmt(v: Optional[Version]) -> str:
    return "an unknown version" if v is None else f"{v[0]}.{v[1]}"


def cuda_h_version(include: str) -> Optional[Version]:
    """(major, minor) from ``#define CUDA_VERSION 13030`` in include/cuda.h; None if absent."""
    try:
        with open(os.path.join(include, "cuda.h"), "rb") as f:
            m = _CUDA_VERSION.search(f.read())
    except OSError:
        return None
    if m is None:
        return None
    n = int(m.group(1))
    return n // 1000, n % 1000 // 10


def missing_headers(include: str) -> list:
    return [h for h in HEADERS if not os.path.isfile(os.path.join(include, h))]


def bindings_version() -> Tuple[Version, str]:
    """(major, minor) and the full version of cuda-bindings in this (the build's) environment."""
    from importlib import metadata

    try:
        text = metadata.version("cuda-bindings")
    except metadata.PackageNotFoundError:
        raise HeaderError(
            f"cuda_core: cuda-bindings is not installed in the build environment ({sys.executable});"
            " the build compiles against its cuda.bindings.cydriver. Install the cuda-bindings"
            " that pyproject.toml's build-system.requires names, or let pip build in its"
            " isolated environment (no --no-build-isolation)."
        ) from None
    m = re.match(r"(\d+)\.(\d+)", text)
    if m is None:
        raise HeaderError(f"cuda_core: cannot read the version of cuda-bindings ({text!r}).")
    return (int(m.group(1)), int(m.group(2))), text


def _wheel_includes() -> list:
    """The include directories of the NVIDIA wheels in this environment (nvidia/*/include)."""
    try:
        import nvidia
    except ImportError:
        return []
    found = []
    for root in nvidia.__path__:
        try:
            subs = sorted(os.listdir(root), reverse=True)  # cu13 before cu12
        except OSError:
            continue
        found.extend(os.path.join(root, sub, "include") for sub in subs)
    return found


def wheel_include() -> Optional[str]:
    """The include directory of the NVIDIA header wheels in this environment (the one with
    cuda.h), or None. The CUDA 13 wheels put every header in nvidia/cu13/include; the CUDA 12
    ones each in its own (nvidia/cuda_runtime/include, nvidia/cuda_profiler_api/include)."""
    includes = _wheel_includes()
    for inc in includes:
        if not missing_headers(inc):
            return inc
    for inc in includes:
        if os.path.isfile(os.path.join(inc, "cuda.h")) and header_include(inc, HEADERS[1]):
            return inc
    return None


def header_include(include: str, header: str) -> Optional[str]:
    """The directory that holds ``header`` for a build with ``include``: ``include`` itself,
    else (the CUDA 12 wheels' layout) the NVIDIA wheel include directory that has it."""
    if os.path.isfile(os.path.join(include, header)):
        return include
    for inc in _wheel_includes():
        if os.path.isfile(os.path.join(inc, header)):
            return inc
    return None


def usable(found: Optional[Version], needed: Version) -> bool:
    return found is not None and found[0] == needed[0] and found[1] >= needed[1]


def choose(cuda_home: Optional[str], wheels: Optional[str], needed: Version,
           bindings: str = "") -> Choice:
    """Apply the policy. ``cuda_home``: $CUDA_HOME or None; ``wheels``: wheel_include()."""
    need = fmt(needed)
    bindings = bindings or f"cuda-bindings {need}"
    toolkit_hint = f"a CUDA {needed[0]}.x toolkit of {need} or newer"
    install_hint = (f"install nvidia-cuda-runtime=={need}.* and nvidia-cuda-profiler-api=={need}.*"
                    " (pip's isolated build does)")

    warning = None
    if cuda_home:
        inc = os.path.join(cuda_home, "include")
        missing = missing_headers(inc)
        if missing:
            raise HeaderError(
                f"cuda_core: CUDA_HOME={cuda_home} has no include/{' or include/'.join(missing)};"
                f" unset CUDA_HOME to build with the headers of the {WHEELS} wheels,"
                f" or point it at {toolkit_hint}."
            )
        found = cuda_h_version(inc)
        if usable(found, needed):
            return Choice(inc, found, None)
        why = "older than" if found is not None and found[0] == needed[0] else "not"
        passed_over = (
            f"cuda_core: CUDA_HOME={cuda_home} holds the headers of CUDA {fmt(found)}, {why} the"
            f" CUDA {need} (or a newer {needed[0]}.x) that {bindings} needs, so the build"
            f" passes them over"
        )
        if wheels is None:
            raise HeaderError(
                f"{passed_over}, and the build environment has no {WHEELS} wheel headers to use"
                f" instead. Unset CUDA_HOME and {install_hint}, or point CUDA_HOME at"
                f" {toolkit_hint}."
            )
        warning = (
            f"{passed_over} and uses the CUDA headers of the {WHEELS} wheels ({wheels}), as a"
            f" build without CUDA_HOME does. To build with a toolkit's headers, point CUDA_HOME"
            f" at {toolkit_hint}; to silence this warning, unset CUDA_HOME."
        )

    if wheels is None:
        raise HeaderError(
            f"cuda_core: no CUDA headers: CUDA_HOME is not set and the build environment has no"
            f" {WHEELS} wheel headers. {install_hint[0].upper()}{install_hint[1:]}, or set"
            f" CUDA_HOME to {toolkit_hint}."
        )
    found = cuda_h_version(wheels)
    if not usable(found, needed):
        raise HeaderError(
            f"cuda_core: the {WHEELS} wheel headers ({wheels}) are CUDA {fmt(found)}, but"
            f" {bindings} needs CUDA {need} or a newer {needed[0]}.x; {install_hint},"
            f" or set CUDA_HOME to {toolkit_hint}."
        )
    return Choice(wheels, found, warning)


def main() -> int:
    try:
        needed, text = bindings_version()
        choice = choose(os.environ.get("CUDA_HOME") or None, wheel_include(), needed,
                        f"cuda-bindings {text}")
    except HeaderError as e:
        print(e, file=sys.stderr)
        return 1
    print(choice.include)
    print(fmt(choice.version))
    print(header_include(choice.include, HEADERS[1]))  # where cudaProfiler.h lies
    if choice.warning:
        print(choice.warning, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
