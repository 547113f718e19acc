"""The program cache's key: :func:`make_program_cache_key`, and the same key for
``Program.compile(cache=...)``.

The key is a SHA-256 digest over an unambiguous encoding of what produced the code: the source,
the code type and target, the resolved arch, the options that are set (each normalized by
``ProgramOptions._key_fields``), the name expressions, the compiler's identity and the caller's
``extra_digest``. Options a key cannot stand for (side effects, files the compiler reads) are
refused here, for both callers.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Iterable
from typing import Any

from cuda_core import _compiler_utils as _cu
from cuda_core._program_options import (ProgramOptions, check_code_type, check_compile_options,
                                        check_target)

__all__ = ["make_program_cache_key"]

# Changed whenever what goes into a key, or how, changes: old entries then simply miss.
_KEY_FORMAT = "cuda_core.program_cache.key/2"
_BACKENDS = {"c++": "nvrtc", "nvvm": "nvvm", "ptx": "nvjitlink"}


def _lib_identity(libname: str) -> str:
    """File name and size of the compiler library cuda.bindings loads: release numbers alone do
    not tell patch releases apart (and libNVVM's stays at 2.0 across toolkits)."""
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        path = load_nvidia_dynamic_lib(libname).abs_path
        if not path:
            return "lib unknown"
        return f"lib {os.path.basename(path)}:{os.stat(path).st_size}"
    except Exception:  # any failure to locate the library only makes the key less specific
        return "lib unknown"


def _driver_linker_identity() -> str:
    """The driver's version, for PTX linked by the driver's cuLink (no nvJitLink)."""
    try:
        from cuda.bindings import driver

        err, version = driver.cuDriverGetVersion()
        if err != driver.CUresult.CUDA_SUCCESS:
            return "driver linker unknown"
        return f"driver linker {version}"
    except Exception:
        return "driver linker unknown"


@functools.lru_cache(maxsize=None)
def _compiler_identity(backend: str) -> str:
    """A string naming the compiler that serves ``backend``, or containing "unknown"."""
    # Every failure (module or library missing, an error status) yields "unknown" rather than an
    # exception: the key must be computable wherever the source could be compiled.
    try:
        if backend == "nvrtc":
            from cuda.bindings import nvrtc

            err, major, minor = nvrtc.nvrtcVersion()
            if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
                return "nvrtc unknown"
            return f"nvrtc {major}.{minor} " + _lib_identity("nvrtc")
        if backend == "nvvm":
            from cuda.bindings import nvvm

            version = ".".join(map(str, nvvm.version()))
            ir = ".".join(map(str, nvvm.ir_version()))
            return f"nvvm {version} ir {ir} " + _lib_identity("nvvm")
        if backend == "nvjitlink":
            # As Linker.which_backend(): nvJitLink 12.3+, else the driver's linker.
            linker_version: tuple[int, ...] | None
            try:
                from cuda.bindings import nvjitlink

                linker_version = tuple(nvjitlink.version())
            except Exception:
                linker_version = None
            if linker_version is None or linker_version < (12, 3):
                return _driver_linker_identity()
            return f"nvjitlink {'.'.join(map(str, linker_version))} " + _lib_identity("nvJitLink")
    except Exception:
        return f"{backend} unknown"
    raise AssertionError(backend)


def _digest(code: bytes, code_type: str, target: str, arch: str, option_fields: tuple,
            names: tuple, extra_digest: bytes | None) -> bytes:
    """SHA-256 over an unambiguous encoding of the key's inputs (checked and normalized by the
    caller). The head is NUL-separated text: no part holds a NUL (the two tuples are given as
    their repr, which escapes one); the lengths it ends with delimit the bytes after it."""
    head = "\0".join((
        _KEY_FORMAT, code_type, target, arch, _compiler_identity(_BACKENDS[code_type]),
        repr(option_fields) if option_fields else "",
        repr(names) if names else "",
        "-" if extra_digest is None else str(len(extra_digest)),
        str(len(code)),
    )).encode("utf-8", "backslashreplace")
    return hashlib.sha256(b"".join((head, b"\0", extra_digest or b"", code))).digest()


def make_program_cache_key(*, code: str | bytes, code_type: str, options: Any,
                           target_type: str, name_expressions: Iterable[str | bytes] = (),
                           extra_digest: bytes | None = None) -> bytes:
    """A 32-byte key naming the result of ``Program(code, code_type, options).compile(...)``.

    The key is the SHA-256 digest of an unambiguous encoding of: a key-format version; the
    source as UTF-8 bytes (a str and the bytes of its UTF-8 text give one key); ``code_type``
    and ``target_type``; ``options.arch`` (filled in from the current device when unset, as
    ``Program`` does); the other options that are set, each in a normalized form; the name
    expressions; the compiler that serves ``code_type`` (the NVRTC, libNVVM or nvJitLink
    version with the file name and size of its library, or the driver's version where the
    driver links PTX; ``"unknown"`` where it cannot be learned); and ``extra_digest``. Equal
    inputs give equal keys, in any process. ``Program.compile(cache=...)`` uses the same key.

    Parameters
    ----------
    code : str or bytes
        The program source (C++, PTX, or NVVM IR / bitcode), as given to ``Program`` and of
        the form it takes (a bytearray for NVVM only; the one check serves both).
    code_type : str
        ``"c++"``, ``"ptx"`` or ``"nvvm"`` (compared case-insensitively).
    options : ProgramOptions, dict or None
        As given to ``Program`` (a dict of ProgramOptions fields, or None for the defaults).
        Spellings that reach the compiler as the same flags give the same key: ``"X"`` and
        ``["X"]``, ``("X", "1")`` and ``"X=1"`` for a macro, a ``pathlib.Path`` and its str,
        ``False`` and unset for a flag that is only ever switched on (``debug``), and the
        program name given or left at its default.
    target_type : str
        ``"ptx"``, ``"cubin"`` or ``"ltoir"``, as allowed for ``code_type``: C++ gives any of
        the three, NVVM ``"ptx"`` or ``"ltoir"``, PTX ``"cubin"`` or ``"ptx"``.
    name_expressions : sequence of str or bytes
        The name expressions passed to ``compile``, of the form ``Program.compile`` takes (the
        one check serves both). Their order does not matter; a repeated one does, and ``"f"``
        and ``b"f"`` give different keys.
    extra_digest : bytes or None
        Anything else the result depends on, e.g. a digest of the headers the source includes.
        ``b""`` and None give different keys.

    Returns
    -------
    bytes
        32 bytes.

    Raises
    ------
    TypeError
        A parameter of the wrong type (naming it).
    ValueError
        An unknown ``code_type``; a ``target_type`` the code type cannot produce; an option the backend of the code type
        cannot honour (as ``Program`` refuses it); an option a key cannot stand for (see the
        notes).
    RuntimeError
        ``options.arch`` is unset and no CUDA context is current to take it from.

    Notes
    -----
    Options with a side effect, which a cache hit would skip, are refused with a ValueError
    whatever ``extra_digest``: ``create_pch`` (writes a precompiled header), ``time`` (writes
    a CSV) and ``fdevice_time_trace`` (writes a trace).

    Header files are **not** hashed. Inputs that make the compiler read files are refused with
    a ValueError unless ``extra_digest`` is given: ``include_path``, ``pre_include``, ``pch``,
    ``use_pch`` and ``pch_dir`` for C++, ``use_libdevice`` for NVVM, and, for C++, a
    ``name`` with a directory part (NVRTC resolves quoted ``#include`` files from it). Hash
    those files yourself and pass the digest, so that editing one changes the key. Headers the
    compiler ships are covered by the compiler identity.
    """
    ct = check_code_type(code_type, "code_type")
    code = _cu.check_code(code, ct, "make_program_cache_key()")
    tt = check_target(target_type, ct, "target_type")
    opts = check_compile_options(options, ct, "make_program_cache_key(): options")
    arch = opts.__dict__.get("arch")
    if arch is None:
        arch = _cu.resolve_arch("ProgramOptions", None)
    names: tuple[str | bytes, ...] = ()
    if type(name_expressions) is not tuple or name_expressions:
        names = _cu.check_name_expressions(name_expressions, "make_program_cache_key()")
    if extra_digest is not None:
        if not isinstance(extra_digest, (bytes, bytearray)):
            raise TypeError(f"extra_digest must be bytes or None, "
                            f"not {type(extra_digest).__name__}")
        extra_digest = bytes(extra_digest)
    return cache_key(code, ct, opts, arch, tt, names, extra_digest)


# Options whose compile writes a file: a hit would skip the write.
_SIDE_EFFECT_OPTIONS = {"create_pch": "a precompiled header", "time": "a timing CSV",
                        "fdevice_time_trace": "a time trace"}
# Options that make the compiler read files the key cannot see (NVRTC; NVVM's libdevice).
_FILE_READING_OPTIONS = ("include_path", "pre_include", "pch", "use_pch", "pch_dir",
                         "use_libdevice")
_KEY_CHECKED = frozenset(_SIDE_EFFECT_OPTIONS) | frozenset(_FILE_READING_OPTIONS)


def _refuse_uncacheable(opts: ProgramOptions, has_digest: bool) -> None:
    """ValueError for options a key cannot stand for: side effects always; files the compiler
    reads unless the caller's ``extra_digest`` covers them."""
    d = opts.__dict__
    for field, what in _SIDE_EFFECT_OPTIONS.items():
        if field in d:
            raise ValueError(f"options.{field} makes the compile write {what}, which a cache hit "
                             f"would skip: compile without a cache, or unset it")
    if has_digest:
        return
    for field in _FILE_READING_OPTIONS:
        if d.get(field) not in (None, False):
            raise ValueError(f"options.{field} makes the compiler read files that the cache key "
                             f"cannot see: hash their contents and pass the digest as "
                             f"extra_digest to make_program_cache_key, and use the cache by "
                             f"hand (Program.compile(cache=...) takes no digest)")


def _refuse_name_with_directory(name: str) -> None:
    raise ValueError(f"options.name={name!r} has a directory part, from which NVRTC resolves "
                     f"quoted #include files that the cache key cannot see: hash them and pass "
                     f"the digest as extra_digest to make_program_cache_key, or use a name "
                     f"without a directory")


def cache_key(code: str | bytes, code_type: str, opts: ProgramOptions, arch: str,
              target: str, names: tuple, extra_digest: bytes | None) -> bytes:
    """The key of ``Program(code, code_type, opts).compile(target, names)``; the arguments
    are checked already (``arch`` is the resolved one)."""
    d = opts.__dict__
    if not _KEY_CHECKED.isdisjoint(d):
        _refuse_uncacheable(opts, extra_digest is not None)
    if "name" in d and code_type == "c++" and extra_digest is None:
        name = d["name"]
        if "/" in name or "\\" in name:
            _refuse_name_with_directory(name)
    if len(names) > 1:
        # Their order does not change the result; str and bytes stay apart.
        names = tuple(sorted(names, key=lambda n: (type(n) is not str, n)))
    return _digest(_cu.code_bytes(code), code_type, target, arch, opts._key_fields(), names,
                   extra_digest)
