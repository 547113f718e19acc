"""The build backend: scikit-build-core's, with the CUDA major of the build chosen first.

pyproject.toml names this module as its build backend (``backend-path = ["tools/backend"]``)
and as the provider of two dynamic metadata fields. cuda_core is built for one CUDA major: its
Cython modules compile against ``cuda.bindings.cydriver``, whose declarations differ between
cuda-bindings 12.9 and 13.x (DESIGN.md, "One build per CUDA major"). The major is, in order:

1. the config setting ``cuda-major`` (``pip install . -C cuda-major=12``);
2. the environment variable ``CUDA_CORE_CUDA_MAJOR`` (``12`` or ``13``);
3. the major of the cuda-bindings installed in the environment of the interpreter that runs the
   build (pip runs it with the interpreter of the environment it installs into), so that
   ``pip install .`` next to cuda-bindings 12.9 builds for CUDA 12 rather than replace it;
4. otherwise 13.

From the major follow the build requirements (:func:`get_requires_for_build_wheel`: the pinned
cuda-bindings and the NVIDIA header wheels of its minor), the wheel's run-time requirement on
cuda-bindings and its extras (:func:`dynamic_metadata`), and a build directory of its own.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys


ENV = "CUDA_CORE_CUDA_MAJOR"
SETTING = "cuda-major"
DEFAULT = 13

# Per major: the cuda-bindings minor the build compiles against (its headers' minor too), and
# the pip packages of the CUDA headers and of the run-time compilers.
MAJORS = {
    12: {
        "bindings": "12.9",
        "headers": ["nvidia-cuda-runtime-cu12==12.9.*", "nvidia-cuda-profiler-api-cu12==12.9.*"],
        "test-headers": ["nvidia-cuda-runtime-cu12>=12.9,<13",
                         "nvidia-cuda-profiler-api-cu12>=12.9,<13"],
        # libNVVM of CUDA 12 comes in the nvcc wheel (nvidia/cuda_nvcc/nvvm); there is no
        # nvidia-nvvm-cu12.
        "compilers": ["nvidia-cuda-nvrtc-cu12>=12.0,<13", "nvidia-nvjitlink-cu12>=12.0,<13",
                      "nvidia-cuda-nvcc-cu12>=12.0,<13"],
    },
    13: {
        "bindings": "13.3",
        "headers": ["nvidia-cuda-runtime==13.3.*", "nvidia-cuda-profiler-api==13.3.*"],
        "test-headers": ["nvidia-cuda-runtime>=13.3,<14", "nvidia-cuda-profiler-api>=13.3,<14"],
        "compilers": ["nvidia-cuda-nvrtc>=13.0,<14", "nvidia-nvjitlink>=13.0,<14",
                      "nvidia-nvvm>=13.0,<14"],
    },
}


class CudaMajorError(ValueError):
    """An unusable choice of CUDA major; the message says what to do."""


def _parse(value: object, source: str) -> int:
    text = str(value).strip()
    if text not in ("12", "13"):
        raise CudaMajorError(f"cuda_core: {source}={text!r}: the CUDA major to build for is 12 or "
                             f"13 (DESIGN.md, 'One build per CUDA major')")
    return int(text)


def installed_bindings_major(python: str = sys.executable) -> int | None:
    """The major of the cuda-bindings installed for ``python``, read in a separate interpreter
    run with ``-I`` (pip's isolated build environment hides that interpreter's own
    site-packages from this process); None where there is none or it cannot be read."""
    code = ("import importlib.metadata as m\n"
            "try: print(m.version('cuda-bindings'))\n"
            "except m.PackageNotFoundError: pass\n")
    try:
        out = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True,
                             timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.match(r"\s*(\d+)\.", out)
    return int(m.group(1)) if m else None


def choose_major(config_settings: dict | None, environ=os.environ,
                 detect=installed_bindings_major) -> int:
    """The CUDA major of this build (the order of the module docstring)."""
    if config_settings and config_settings.get(SETTING) is not None:
        return _parse(config_settings[SETTING], f"-C {SETTING}")
    if environ.get(ENV):
        return _parse(environ[ENV], ENV)
    found = detect()
    return found if found in MAJORS else DEFAULT


def build_requires(major: int) -> list:
    """What the build of ``major`` needs besides pyproject.toml's build-system.requires."""
    return [f"cuda-bindings=={MAJORS[major]['bindings']}.*", *MAJORS[major]["headers"]]


def _settings(config_settings: dict | None) -> tuple:
    """(major, the config settings for scikit-build-core): ours taken out, the major recorded
    in the environment for dynamic_metadata (same process), and a build directory per major
    (CUDA 13 keeps pyproject.toml's)."""
    major = choose_major(config_settings)
    settings = {k: v for k, v in (config_settings or {}).items() if k != SETTING}
    if major != DEFAULT and "build-dir" not in settings:
        settings["build-dir"] = f"build/cu{major}-{{wheel_tag}}"
    os.environ[ENV] = str(major)
    return major, settings


def _check_build_environment(major: int) -> None:
    """The cuda-bindings that Cython will compile against must be of ``major`` (it is, in pip's
    isolated build; with --no-build-isolation it is whatever the environment holds)."""
    from importlib import metadata

    try:
        have = metadata.version("cuda-bindings")
    except metadata.PackageNotFoundError:
        return  # tools/find_cuda_headers.py reports it, with the fix
    if not have.startswith(f"{major}."):
        raise CudaMajorError(
            f"cuda_core: building for CUDA {major}, but the build environment has cuda-bindings "
            f"{have}: install cuda-bindings=={MAJORS[major]['bindings']}.* there, or choose "
            f"CUDA {have.split('.')[0]} ({ENV}={have.split('.')[0]} or -C {SETTING}=...)")


def _skbuild():
    # Imported when a hook runs, so that the tests read this module without scikit-build-core.
    from scikit_build_core import build

    return build


def get_requires_for_build_sdist(config_settings=None):
    _, settings = _settings(config_settings)
    return _skbuild().get_requires_for_build_sdist(settings)


def build_sdist(sdist_directory, config_settings=None):
    _, settings = _settings(config_settings)
    return _skbuild().build_sdist(sdist_directory, settings)


def get_requires_for_build_wheel(config_settings=None):
    major, settings = _settings(config_settings)
    return [*_skbuild().get_requires_for_build_wheel(settings), *build_requires(major)]


def get_requires_for_build_editable(config_settings=None):
    major, settings = _settings(config_settings)
    return [*_skbuild().get_requires_for_build_editable(settings), *build_requires(major)]


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    _, settings = _settings(config_settings)
    return _skbuild().prepare_metadata_for_build_wheel(metadata_directory, settings)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    _, settings = _settings(config_settings)
    return _skbuild().prepare_metadata_for_build_editable(metadata_directory, settings)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    major, settings = _settings(config_settings)
    _check_build_environment(major)
    return _skbuild().build_wheel(wheel_directory, settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    major, settings = _settings(config_settings)
    _check_build_environment(major)
    return _skbuild().build_editable(wheel_directory, settings, metadata_directory)


def dynamic_metadata(field, settings=None, project=None):
    """scikit-build-core's metadata provider (legacy form) for ``dependencies`` and
    ``optional-dependencies``: those of the major the hooks above chose. ``settings`` holds
    pyproject.toml's lists; in them, ``{bindings}`` is the cuda-bindings requirement of the
    major, ``{cu}`` the name of its compiler extra (cu12, cu13), and an item ``"{compilers}"``
    or ``"{test-headers}"`` stands for that list of the major."""
    major = _parse(os.environ.get(ENV, DEFAULT), ENV)
    lo = MAJORS[major]["bindings"]
    subst = {"bindings": f"cuda-bindings>={lo},<{major + 1}", "cu": f"cu{major}"}

    def expand(items):
        out = []
        for item in items:
            key = item[1:-1] if item.startswith("{") and item.endswith("}") else None
            if key in ("compilers", "test-headers"):
                out.extend(MAJORS[major][key])
            else:
                out.append(item.format(**subst))
        return out

    if field == "dependencies":
        return expand(settings["items"])
    if field == "optional-dependencies":
        extras = {name: expand(items) for name, items in settings.items()
                  if name not in ("cu12", "cu13")}
        # Both compiler extras exist in every build, each with its major's compilers and
        # cuda-bindings: the other major's extra conflicts with the wheel's cuda-bindings
        # requirement, and pip refuses it (ResolutionImpossible) rather than mix majors.
        for m in MAJORS:
            extras[f"cu{m}"] = [f"cuda-bindings>={MAJORS[m]['bindings']},<{m + 1}",
                                *MAJORS[m]["compilers"]]
        return extras
    raise ValueError(f"cuda_core_backend provides no {field!r}")
