"""Loading the run-time compiler libraries: NVRTC, nvJitLink and libNVVM (private).

A plain ``pip install`` does not bring them: the ``cu13`` extra does (``pip install
"cuda-core-cy[cu13]"``; ``cu12`` for the CUDA 12 build), or one pip package each. cuda.bindings loads each library on first
use, through cuda.pathfinder; :func:`load` loads it the same way first, so that a missing one is
one :class:`CUDAError` naming the pip package that provides it, rather than a pathfinder
exception from deep inside cuda.bindings.

A libNVVM found outside the nvidia-nvvm wheel (a system CUDA toolkit's, found through the
library path, ``CUDA_HOME`` or ``CUDA_PATH``) is used as it is when its banner says it is of our
CUDA major; one of another major, or of a version that cannot be read, warns once, with its path
and version (:class:`CUDAWarning`). The warning is raised after the library loaded, so a warning
filter that turns it into an error never reads as the library being missing.
"""

from __future__ import annotations

import functools
import mmap
import os
import re
import sys
import warnings
from typing import Any, NamedTuple

from cuda_core import _build_config
from cuda_core._errors import CUDAError, CUDAWarning

__all__ = ["COMPILERS", "EXTRA", "load", "nvrtc", "nvjitlink", "nvvm", "install_hint"]

# The extra that installs all three compilers, and the CUDA major their wheels must be of: that
# of this build (DESIGN.md, "One build per CUDA major").
CUDA_MAJOR = _build_config.CUDA_MAJOR
EXTRA = f"cu{CUDA_MAJOR}"


class Compiler(NamedTuple):
    label: str  # as messages name it
    name: str  # cuda.pathfinder's name
    package: str  # the pip package (wheel) that provides it
    soname: str  # the file cuda.pathfinder looks for on Linux


# The CUDA 12 wheels carry a -cu12 suffix, and libNVVM comes in the nvcc wheel; libNVVM's soname
# is libnvvm.so.4 in both majors.
_SUFFIX = "-cu12" if CUDA_MAJOR == 12 else ""
COMPILERS = {
    "nvrtc": Compiler("NVRTC", "nvrtc", f"nvidia-cuda-nvrtc{_SUFFIX}",
                      f"libnvrtc.so.{CUDA_MAJOR}"),
    "nvJitLink": Compiler("nvJitLink", "nvJitLink", f"nvidia-nvjitlink{_SUFFIX}",
                          f"libnvJitLink.so.{CUDA_MAJOR}"),
    "nvvm": Compiler("libNVVM", "nvvm",
                     "nvidia-cuda-nvcc-cu12" if CUDA_MAJOR == 12 else "nvidia-nvvm",
                     "libnvvm.so.4"),
}

# How cuda.pathfinder reports a library that a Python package manager installed; any other
# place (the system library path, CUDA_HOME, a toolkit found beside another library) is a
# toolkit of its own version.
_FROM_PACKAGES = ("site-packages", "conda")


def install_hint(name: str) -> str:
    """``install it with ...``: the pip commands that provide compiler ``name``."""
    package = COMPILERS[name].package
    return (f'install it with `pip install "cuda-core-cy[{EXTRA}]"` (all three compilers) or '
            f'`pip install "{package}=={CUDA_MAJOR}.*"`')


def missing_error(name: str, reason: BaseException | str) -> CUDAError:
    """The error for compiler ``name`` that cannot be loaded."""
    c = COMPILERS[name]
    why = reason if isinstance(reason, str) else _first_line(reason)
    return CUDAError(f"{c.label} not found: the {c.label} library ({c.soname}) could not be "
                     f"loaded ({why}); it comes from the pip package {c.package}: "
                     f"{install_hint(name)}")


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def toolkit_version(path: str) -> tuple[int, int] | None:
    """The CUDA version a compiler library was built for, from the banner its file holds
    (``Cuda compilation tools, release 13.0``); None where there is none."""
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            found = re.search(rb"Cuda compilation tools, release (\d+)\.(\d+)", data)
            return None if found is None else (int(found.group(1)), int(found.group(2)))
    except (OSError, ValueError):  # unreadable, or empty (mmap refuses a 0-byte file)
        return None


def _warn_outside_wheel(name: str, loaded: Any) -> None:
    c = COMPILERS[name]
    path = getattr(loaded, "abs_path", None) or "an unknown path"
    version = toolkit_version(path) if getattr(loaded, "abs_path", None) else None
    if version is not None and version[0] == CUDA_MAJOR:
        return  # a toolkit's library of our major: what the wheel would give
    have = f"CUDA {version[0]}.{version[1]}" if version else "of unknown CUDA version"
    via = getattr(loaded, "found_via", "an unknown search step")
    warnings.warn(
        f"{c.label} was loaded from {path} ({have}, found via {via}), not from the {c.package} "
        f"wheel: cuda_core expects {c.label} of CUDA {CUDA_MAJOR}.x from that wheel"
        + f"; to use the wheel's, {install_hint(name)}",
        CUDAWarning, stacklevel=_outside_level())


def _outside_level() -> int:
    """The ``stacklevel`` (for a warning its caller raises) of the first frame outside this
    package: the user's line that compiled something."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(package):
        frame = frame.f_back
        level += 1
    return level


@functools.lru_cache(maxsize=None)
def _load_once(name: str) -> Any:
    from cuda.pathfinder import load_nvidia_dynamic_lib

    return load_nvidia_dynamic_lib(COMPILERS[name].name)


@functools.lru_cache(maxsize=None)
def _origin_checked(name: str) -> None:
    """Warn, once, about a libNVVM from outside its wheel that is not of our CUDA major. A
    warning turned into an error propagates, and is not cached: the next load raises it
    again."""
    loaded = _load_once(name)
    if name == "nvvm" and getattr(loaded, "found_via", None) not in _FROM_PACKAGES:
        _warn_outside_wheel(name, loaded)


def load(name: str) -> Any:
    """Load compiler ``name`` (a key of COMPILERS) as cuda.bindings will, and return
    cuda.pathfinder's record of it; CUDAError naming the pip package where it is missing.
    Loads once; a failure is tried again on the next call. Only the loading is reported as
    "not found": the origin check comes after it, outside that report."""
    try:
        loaded = _load_once(name)
    except Exception as exc:  # cuda.pathfinder's not-found errors, or its import failing
        raise missing_error(name, exc) from None
    _origin_checked(name)
    return loaded


def nvrtc() -> Any:
    """``cuda.bindings.nvrtc``, with NVRTC loaded."""
    load("nvrtc")
    from cuda.bindings import nvrtc as module

    return module


def nvjitlink() -> Any:
    """``cuda.bindings.nvjitlink``, with nvJitLink loaded."""
    load("nvJitLink")
    from cuda.bindings import nvjitlink as module

    return module


def nvvm() -> Any:
    """``cuda.bindings.nvvm``, with libNVVM loaded."""
    load("nvvm")
    from cuda.bindings import nvvm as module

    return module
