"""Builds and loads _floor.c, the C loops that give each latency case its floor.

The library is compiled once per process with the system C compiler (``$CC``, else ``cc``,
``gcc`` or ``clang``) into a temporary folder and loaded with ctypes. Where there is no
compiler or no driver, :func:`load` raises :class:`_harness.Unavailable` with the reason, and
the floor is reported as ``n/a``.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile

from _harness import Unavailable

_HERE = os.path.dirname(os.path.abspath(__file__))
_SOURCE = os.path.join(_HERE, "_floor.c")

_lib: ctypes.CDLL | None = None
_failure: str | None = None

# name -> argument types; every function returns long long (ns, or -CUresult).
_SIGNATURES = {
    "floor_device_get": [ctypes.c_longlong, ctypes.c_int],
    "floor_ctx_set_current": [ctypes.c_longlong, ctypes.c_void_p],
    "floor_stream_create_destroy": [ctypes.c_longlong, ctypes.c_uint],
    "floor_event_record_query": [ctypes.c_longlong, ctypes.c_void_p, ctypes.c_void_p],
    "floor_stream_sync": [ctypes.c_longlong, ctypes.c_void_p],
    "floor_graphics_register": [ctypes.c_longlong, ctypes.c_uint],
    "floor_graphics_map_unmap": [ctypes.c_longlong, ctypes.c_void_p, ctypes.c_void_p],
}


def _compiler() -> str | None:
    cc = os.environ.get("CC")
    if cc:
        return cc
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return path
    return None


def load() -> ctypes.CDLL:
    """The loaded floor library; raises Unavailable (every time) if it cannot be had."""
    global _lib, _failure
    if _lib is not None:
        return _lib
    if _failure is not None:
        raise Unavailable(_failure)
    try:
        _lib = _build()
    except Unavailable as exc:
        _failure = str(exc)
        raise
    return _lib


def _build() -> ctypes.CDLL:
    cc = _compiler()
    if cc is None:
        raise Unavailable("no C compiler: set CC")
    with tempfile.TemporaryDirectory(prefix="cuda_core_floor_") as tmp:
        so = os.path.join(tmp, "floor.so")
        cmd = [cc, "-O2", "-shared", "-fPIC", "-o", so, _SOURCE, "-ldl"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError) as exc:
            raise Unavailable(f"C compiler failed: {exc}") from None
        if proc.returncode != 0:
            first = (proc.stderr.strip().splitlines() or ["?"])[0]
            raise Unavailable(f"C compile failed: {first}")
        lib = ctypes.CDLL(so)  # mapped now; removing the file afterwards is harmless
    err = ctypes.create_string_buffer(512)
    lib.floor_init.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.floor_init.restype = ctypes.c_int
    if lib.floor_init(err, len(err)) != 0:
        raise Unavailable(err.value.decode(errors="replace"))
    for name, argtypes in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.argtypes = argtypes
        fn.restype = ctypes.c_longlong
    return lib


def timed(fn, *args):
    """A harness ``run(n) -> ns`` over the C loop ``fn(n, *args)``; a driver error raises."""

    def run(n: int) -> int:
        result = fn(n, *args)
        if result < 0:
            raise RuntimeError(f"{fn.__name__} failed with CUresult {-result}")
        return result

    return run
