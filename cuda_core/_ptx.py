"""PTX newer than the driver (private).

The driver JIT-compiles PTX when it loads it (``cuLibraryLoadData``) or links it (``cuLink*``),
and it accepts PTX ISA versions up to the one of its own CUDA release: PTX from a newer NVRTC
(``.version 9.5`` from NVRTC 13.5) fails on a 13.0 driver with
``CUDA_ERROR_UNSUPPORTED_PTX_VERSION``. :func:`check_loadable` finds that before the driver is
called and raises an error that says what to do; :func:`unsupported_message` words the same
error where the driver reports it.
"""

from __future__ import annotations

import os
import re
from typing import Any

__all__ = ["ptx_isa_version", "max_ptx_isa", "driver_version", "unsupported_message",
           "check_loadable"]

UNSUPPORTED_PTX_VERSION = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"
UNSUPPORTED_PTX_VERSION_CODE = 222  # CUresult value

# ``.version X.Y``: the first directive of a PTX module, after comments (nvcc and NVRTC write a
# header comment first).
_VERSION_RE = re.compile(rb"^[ \t]*\.version[ \t]+(\d+)\.(\d+)", re.MULTILINE)
# How much of a PTX file is read to find it.
_HEAD_BYTES = 1 << 16

# The newest PTX ISA each CUDA release accepts, from the release history in NVIDIA's PTX ISA
# documentation (docs.nvidia.com/cuda/parallel-thread-execution, "Release Notes"):
# CUDA 11.x: ISA 7.x; 12.0-12.5: ISA 8.0-8.5; 12.6 stayed at 8.5; 12.7: 8.6 (no public CUDA
# 12.7 toolkit, but drivers report it); 12.8: 8.7; 12.9: 8.8; 13.0: 9.0; 13.1: 9.1; 13.4: 9.4.
# Assumption: every CUDA 13.y accepts ISA 9.y (the documented 13.x releases follow that rule).
# For a CUDA major newer than 13 nothing is assumed and nothing is checked before loading; the
# driver's own error is still reworded.
_CUDA12 = {0: (8, 0), 1: (8, 1), 2: (8, 2), 3: (8, 3), 4: (8, 4), 5: (8, 5), 6: (8, 5),
           7: (8, 6), 8: (8, 7), 9: (8, 8)}


def ptx_isa_version(ptx: bytes | bytearray | str) -> tuple[int, int] | None:
    """The PTX ISA version of a PTX module (its ``.version`` directive), or None where it has
    none."""
    data = ptx.encode(errors="replace") if isinstance(ptx, str) else bytes(ptx)
    found = _VERSION_RE.search(data)
    return None if found is None else (int(found.group(1)), int(found.group(2)))


def max_ptx_isa(cuda_version: int) -> tuple[int, int] | None:
    """The newest PTX ISA a driver of CUDA version ``cuda_version`` (``cuDriverGetVersion``'s
    ``1000 * major + 10 * minor``, 13000 for 13.0) can JIT-compile, or None where not known."""
    major, minor = cuda_version // 1000, cuda_version % 1000 // 10
    if major == 11:
        return (7, minor)
    if major == 12:
        return _CUDA12.get(minor, (8, 8))  # 12.10 and later are not expected
    if major == 13:
        return (9, minor)
    return None


def driver_version() -> int | None:
    """The driver's CUDA version in ``cuDriverGetVersion``'s form (13000 for 13.0), or None
    where the driver cannot be initialized (loading then reports why)."""
    from cuda_core._driver import driver_version as version_pair
    from cuda_core._errors import CUDAError

    try:
        major, minor = version_pair()
    except CUDAError:
        return None
    return major * 1000 + minor * 10


def _version_text(cuda_version: int) -> str:
    return f"{cuda_version // 1000}.{cuda_version % 1000 // 10}"


def unsupported_message(what: str, isa: tuple[int, int] | None, cuda_version: int | None) -> str:
    """Why ``what`` (e.g. ``ObjectCode 'k' (ptx)``) cannot be loaded, and what to do."""
    driver = f"CUDA {_version_text(cuda_version)} driver" if cuda_version else "driver"
    newer = (f"is PTX ISA {isa[0]}.{isa[1]}, newer than" if isa else
             "is of a newer PTX ISA than")
    limit = max_ptx_isa(cuda_version) if cuda_version else None
    most = f" (it takes PTX ISA {limit[0]}.{limit[1]} at most)" if limit else ""
    return (f"{what} {newer} the {driver} can JIT-compile{most} "
            f"({UNSUPPORTED_PTX_VERSION}): compile to a cubin for the GPU instead "
            f"(Program.compile('cubin')), use an NVRTC no newer than the driver "
            f"(pip install \"nvidia-cuda-nvrtc==X.Y.*\" for a CUDA X.Y driver), or update the "
            f"NVIDIA driver")


def _head(code: Any) -> bytes:
    """The start of PTX given as bytes, or as a path (a str) to a file."""
    if isinstance(code, (bytes, bytearray)):
        return bytes(code[:_HEAD_BYTES])
    try:
        with open(os.fspath(code), "rb") as f:
            return f.read(_HEAD_BYTES)
    except OSError:  # loading reports it
        return b""


def check_loadable(code: Any, what: str, error: type[Exception]) -> None:
    """Raise ``error`` (CUDAError or a subclass) where the PTX ``code`` (bytes, or a path) is of
    a PTX ISA newer than the driver accepts. Does nothing without a driver, or where either
    version is unknown."""
    cuda_version = driver_version()
    if cuda_version is None:
        return
    limit = max_ptx_isa(cuda_version)
    if limit is None:
        return
    isa = ptx_isa_version(_head(code))
    if isa is None or isa <= limit:
        return
    raise error(unsupported_message(what, isa, cuda_version), UNSUPPORTED_PTX_VERSION_CODE,
                UNSUPPORTED_PTX_VERSION,
                "the PTX was compiled with an unsupported toolchain")
