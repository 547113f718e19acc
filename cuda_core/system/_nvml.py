"""NVML, loaded and initialized on first use, and the one path every NVML call takes.

Rules of this layer:

* Nothing here runs at import: ``import cuda_core.system`` loads neither ``cuda.bindings.nvml``
  (about 60 ms of imports) nor ``libnvidia-ml``.
* The first call that needs NVML imports the bindings and calls ``nvmlInit_v2`` under a lock,
  once per process; the initialized module is then published in ``_state`` and read without
  the lock. A failed initialization is not remembered: the next call tries again.
* Where NVML cannot be used (``cuda.bindings`` without NVML bindings, no ``libnvidia-ml``),
  every NVML-backed call raises :class:`~cuda_core.system.LibraryNotFoundError` (an
  :class:`~cuda_core.system.NvmlError`, itself a ``RuntimeError``) that names the cause.
* Every error ``cuda.bindings.nvml`` raises is re-raised as cuda_core's class of the same name
  (:mod:`cuda_core.system.exceptions`), with the same ``status``.
"""

from __future__ import annotations

import re
import threading

from cuda_core.system.exceptions import LibraryNotFoundError, NvmlError, error_for_status

__all__ = ["CUDA_BINDINGS_NVML_IS_COMPATIBLE", "call", "nvml"]


def _bindings_version() -> tuple[int, ...]:
    import cuda.bindings

    text = getattr(cuda.bindings, "__version__", "")
    match = re.match(r"(\d+)\.(\d+)\.(\d+)", text)
    return tuple(int(g) for g in match.groups()) if match else ()


def _nvml_is_compatible() -> bool:
    # cuda.core's rule: cuda.bindings.nvml is complete from 12.9.6 (CUDA 12) and 13.2.0 (CUDA 13).
    from importlib.util import find_spec

    version = _bindings_version()
    if not version:
        return False
    if not (version >= (13, 2, 0) or (version[0] == 12 and version[1:] >= (9, 6))):
        return False
    try:
        return find_spec("cuda.bindings.nvml") is not None
    except ImportError:
        return False


#: Whether the installed ``cuda.bindings`` has the NVML bindings ``cuda_core.system`` needs
#: (``cuda-bindings`` 12.9.6 or later on CUDA 12, 13.2.0 or later on CUDA 13). It says nothing
#: about whether the NVML library itself (the driver's ``libnvidia-ml``) can be loaded.
CUDA_BINDINGS_NVML_IS_COMPATIBLE: bool = _nvml_is_compatible()

_lock = threading.Lock()
# "module": the initialized cuda.bindings.nvml. Written once, under _lock; a dict read is
# atomic also on free-threaded CPython, so the fast path needs no lock.
_state: dict = {}


def _initialize():
    if not CUDA_BINDINGS_NVML_IS_COMPATIBLE:
        version = ".".join(map(str, _bindings_version())) or "(unknown version)"
        raise LibraryNotFoundError(
            f"cuda_core.system needs NVML bindings: cuda-bindings {version} has none usable "
            f"(12.9.6 or later is needed on CUDA 12, 13.2.0 or later on CUDA 13)", 12)
    from cuda.bindings import nvml as module

    try:
        module.init_v2()
    except module.NvmlError as exc:
        raise translate(exc, "NVML initialization (nvmlInit_v2)") from None
    except (RuntimeError, OSError) as exc:
        # cuda.pathfinder's DynamicLibNotFoundError (a RuntimeError): no libnvidia-ml.
        raise LibraryNotFoundError(
            f"NVML (libnvidia-ml.so.1, part of the NVIDIA driver) cannot be loaded, so "
            f"cuda_core.system cannot query devices through it: {exc}", 12) from None
    return module


def nvml():
    """The ``cuda.bindings.nvml`` module, with NVML initialized (once, thread-safely)."""
    module = _state.get("module")
    if module is not None:
        return module
    with _lock:
        module = _state.get("module")
        if module is None:
            module = _initialize()
            _state["module"] = module
    return module


def translate(exc: BaseException, what: str) -> NvmlError:
    """cuda_core's exception for an error ``cuda.bindings.nvml`` raised in ``what``."""
    status = getattr(exc, "status", None)
    if status is None and exc.args and isinstance(exc.args[0], int):
        status = exc.args[0]
    message = f"{what} failed: {exc}"
    if status is None:
        # No code to go by: the class of the same name, where there is one.
        from cuda_core.system import exceptions

        cls = getattr(exceptions, type(exc).__name__, None)
        if isinstance(cls, type) and issubclass(cls, NvmlError):
            return cls(message, None)
    return error_for_status(None if status is None else int(status), message)


def call(name: str, *args):
    """``cuda.bindings.nvml.<name>(*args)``, with NVML initialized and its errors translated."""
    module = nvml()
    try:
        return getattr(module, name)(*args)
    except module.NvmlError as exc:
        raise translate(exc, name) from None
