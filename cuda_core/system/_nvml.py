"""NVML, loaded and initialized on first use, and the one path every NVML call takes.

Rules of this layer:

* Nothing here runs at import: ``import cuda_core.system`` loads neither ``cuda.bindings.nvml``
  (about 60 ms of imports) nor ``libnvidia-ml``.
* The first call that needs NVML imports the bindings and calls ``nvmlInit_v2`` under a lock,
  once per process; the initialized module is then published in ``_state`` and read without
  the lock. A failed initialization is not remembered: the next call tries again.
* Where NVML cannot be used (``cuda.bindings`` without NVML bindings, no ``libnvidia-ml``),
  every NVML-backed call raises :class:`~cuda_core.system.exceptions.NvmlUnavailableError` (a
  ``cuda.bindings.nvml.LibraryNotFoundError`` and a ``RuntimeError``) that names the cause.
* An error ``cuda.bindings.nvml`` raises is raised as it is (``cuda_core.system``'s error
  classes are the bindings' own), with a note naming the NVML call.
"""

from __future__ import annotations

import re
import sys
import threading
from typing import Any, Callable, Iterable


__all__ = ["CUDA_BINDINGS_NVML_IS_COMPATIBLE", "call", "lazy_names", "nvml", "unavailable"]


def lazy_names(module: str, names: Iterable[str], load: Callable[[str], Any]
               ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """PEP 562 ``__getattr__`` and ``__dir__`` for ``module``, whose ``names`` are looked up on
    first use as ``load(name)``: so that ``import cuda_core.system`` imports no
    ``cuda.bindings.nvml`` (about 60 ms); the import system's lock makes the first use
    thread-safe."""
    known = frozenset(names)

    def __getattr__(name: str) -> Any:
        if name in known:
            return load(name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted([*vars(sys.modules[module]), *known])

    return __getattr__, __dir__


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


def unavailable(message: str):
    """The error for NVML that cannot be used, ``message`` naming why."""
    from cuda_core.system._unavailable import NvmlUnavailableError

    return NvmlUnavailableError(message)


def _note(exc: BaseException, name: str) -> None:
    if hasattr(exc, "add_note"):  # Python 3.11 and later
        exc.add_note(f"(raised by cuda.bindings.nvml.{name}, called by cuda_core.system)")


def _initialize():
    if not CUDA_BINDINGS_NVML_IS_COMPATIBLE:
        version = ".".join(map(str, _bindings_version())) or "(unknown version)"
        raise unavailable(
            f"cuda_core.system needs NVML bindings: cuda-bindings {version} has none usable "
            f"(12.9.6 or later is needed on CUDA 12, 13.2.0 or later on CUDA 13)")
    from cuda.bindings import nvml as module

    try:
        module.init_v2()
    except module.NvmlError as exc:
        _note(exc, "init_v2")
        raise
    except (RuntimeError, OSError) as exc:
        # cuda.pathfinder's DynamicLibNotFoundError (a RuntimeError): no libnvidia-ml.
        raise unavailable(
            f"NVML (libnvidia-ml.so.1, part of the NVIDIA driver) cannot be loaded, so "
            f"cuda_core.system cannot query devices through it: {exc}") from None
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


def call(name: str, *args):
    """``cuda.bindings.nvml.<name>(*args)``, with NVML initialized; an NVML error is raised as
    the bindings raised it, with a note naming the call."""
    module = nvml()
    try:
        return getattr(module, name)(*args)
    except module.NvmlError as exc:
        _note(exc, name)
        raise
