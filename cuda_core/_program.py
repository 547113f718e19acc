"""Run-time compilation: :class:`Program` (its options, :class:`ProgramOptions`, are in
``_program_options``; the cache key in ``utils._program_cache_key``).

* ``code_type="c++"``: CUDA C++ through NVRTC, to PTX, cubin or LTO IR;
* ``code_type="nvvm"``: NVVM IR (LLVM IR text or bitcode) through libNVVM, to PTX or LTO IR;
* ``code_type="ptx"``: PTX through the linker (nvJitLink, or the driver's where nvJitLink is
  unavailable), to a cubin.

A failed compilation raises :class:`NVRTCError` whose message and ``log`` hold the compiler's
full log.
"""

from __future__ import annotations

import copy
import os
import threading
from typing import Any

from cuda_core import _compiler_libs as _libs
from cuda_core import _compiler_utils as _cu
from cuda_core._compiler_handles import NvrtcProgram, NvvmProgram
from cuda_core._closable import Closable
from cuda_core._compiler_utils import nvrtc_check as _nvrtc_check
from cuda_core._errors import NVRTCError
from cuda_core._linker import CompilerBackendType, Linker
from cuda_core._object_code import ObjectCode
from cuda_core._program_options import (PCHStatusType, ProgramOptions, check_code_type,
                                        check_compile_options, check_target,
                                        extra_source_list)
from cuda_core.utils._program_cache_key import cache_key as _cache_key

__all__ = ["Program", "ProgramOptions"]


def _nvrtc_log(prog: Any) -> str:
    from cuda.bindings import nvrtc

    err, size = nvrtc.nvrtcGetProgramLogSize(prog)
    _nvrtc_check(err, "nvrtcGetProgramLogSize")
    if size <= 1:
        return ""
    buf = b" " * size
    (err,) = nvrtc.nvrtcGetProgramLog(prog, buf)
    _nvrtc_check(err, "nvrtcGetProgramLog")
    return buf.rstrip(b"\0").decode(errors="replace")


def _object_code_from_cache(hit: Any, target: str, name: str, has_names: bool) -> ObjectCode | None:
    """A value read from a cache that is not one of ours (bytes or an ObjectCode) as the
    ObjectCode compile() returns; None when it cannot serve (compile again)."""
    if isinstance(hit, ObjectCode):
        return hit
    if isinstance(hit, (bytes, bytearray, memoryview)):
        if has_names or not hit:  # raw bytes lost the symbol mapping: compile again
            return None
        return ObjectCode._init(bytes(hit), target, name=name)
    raise TypeError(f"Program.compile(): the cache returned a {type(hit).__name__}; expected an "
                    f"ObjectCode or bytes")


# -- Program ------------------------------------------------------------------------------------

class _ProgramState:
    """What a Program holds once it is used: the owner of the compiler handle and the lock
    that serializes its use (compile, close). Made on first need (see Program._get_state)."""

    __slots__ = ("lock", "owner", "used", "pch_status", "code")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        # NvrtcProgram, NvvmProgram, or the Linker of a PTX program: each destroys its handle
        # at close(), or when collected with the Program.
        self.owner: NvrtcProgram | NvvmProgram | Linker | None = None
        self.used = False
        self.pch_status: PCHStatusType | None = None
        self.code: bytes | None = None

    def handle(self) -> Any:
        """The compiler handle, once Program._new_handle has made its owner."""
        owner = self.owner
        assert owner is not None, "made by Program._new_handle"
        return owner.handle


# Guards only the creation of each Program's _ProgramState (a few instructions, once per
# program): two threads using a new Program at once must end up with the same state.
_STATE_LOCK = threading.Lock()

class Program(Closable):
    """Compiles CUDA C++, NVVM IR or PTX into an :class:`ObjectCode`.

    Parameters
    ----------
    code : str or bytes (bytes or bytearray for NVVM)
        The source itself, never a file path.
    code_type : SourceCodeType or str
        ``"c++"`` (NVRTC), ``"nvvm"`` (libNVVM; LLVM IR text or bitcode) or ``"ptx"`` (the
        linker: nvJitLink, or the driver's where nvJitLink is unavailable).
    options : ProgramOptions or dict, optional
        ``arch`` defaults to the device of the current context. The options object is kept,
        not copied: :meth:`compile` reads it.

    Raises
    ------
    TypeError, ValueError
        Bad code, code type or options; an option the backend cannot honour. (Text that is
        not valid Unicode, which the check here does not scan for, is a ValueError at
        :meth:`compile`.) A code type that is no supported one is also a RuntimeError, as
        in cuda.core.
    RuntimeError
        ``arch`` not given and no context current.

    Notes
    -----
    Construction only checks and stores. The program is created with
    ``nvrtcCreateProgram`` / ``nvvmCreateProgram`` / ``nvJitLinkCreate`` on first use
    (:attr:`handle`, or a :meth:`compile` that is not answered by a cache); :meth:`close`
    (or garbage collection) destroys it.
    """

    __slots__ = ("_source", "_code_type", "_options", "_state", "_closed", "__weakref__")

    def __init__(self, code: str | bytes | bytearray, code_type: str,
                 options: ProgramOptions | dict | None = None):
        ct = check_code_type(code_type, "Program: code_type")
        if type(code) is not str or not code or ("\0" in code and ct != "nvvm"):
            code = _cu.check_code(code, ct, "Program")
            _cu.check_compilable(code, ct, "Program")
        options = check_compile_options(options, ct, "Program options")
        if "arch" not in options.__dict__:
            options = copy.copy(options)
            options.__dict__["arch"] = _cu.resolve_arch("ProgramOptions", None)
        self._source = code
        self._code_type = ct
        self._options = options
        self._state: _ProgramState | None = None
        self._closed = False

    def _get_state(self) -> _ProgramState:
        state = self._state
        if state is None:
            with _STATE_LOCK:
                state = self._state
                if state is None:
                    state = self._state = _ProgramState()
        return state

    def _arch(self) -> str:
        """The options' arch; one unset since construction is filled in again. Threads that
        get here at once each install an equal copy (one attribute store each, atomic also
        without the GIL): whichever stays, its arch is filled in."""
        arch = self._options.arch
        if arch is None:
            opts = copy.copy(self._options)
            opts.__dict__["arch"] = arch = _cu.resolve_arch("ProgramOptions", None)
            self._options = opts
        return arch

    def _new_handle(self, state: _ProgramState) -> None:
        """A fresh compiler handle (NVRTC and NVVM programs are compiled once each). Called
        with ``state.lock`` held."""
        old, state.owner = state.owner, None
        if old is not None:
            old.close()
        state.used = False
        ct = self._code_type
        opts = self._options
        if state.code is None:
            state.code = _cu.code_bytes(self._source)
        if ct == "c++":
            nvrtc = _libs.nvrtc()
            err, prog = nvrtc.nvrtcCreateProgram(state.code, opts._name().encode(), 0, [], [])
            _nvrtc_check(err, "nvrtcCreateProgram")
            state.owner = NvrtcProgram(prog)
        elif ct == "nvvm":
            state.owner = NvvmProgram(_libs.nvvm().create_program())
        else:
            self._arch()
            state.owner = Linker(ObjectCode._init(state.code, "ptx", name=opts._name()),
                                 options=self._options._linker_options())

    # -- properties -------------------------------------------------------------------------

    @property
    def backend(self) -> CompilerBackendType:
        """:class:`CompilerBackendType`: NVRTC, NVVM, or the linker's for PTX (nvJitLink or
        driver)."""
        if self._code_type == "c++":
            return CompilerBackendType.NVRTC
        if self._code_type == "nvvm":
            return CompilerBackendType.NVVM
        return Linker.which_backend()

    @property
    def handle(self) -> Any:
        """The compiler handle: an ``nvrtcProgram`` (NVRTC), an int (``nvvmProgram`` or
        nvJitLink handle / ``CUlinkState`` address)."""
        state = self._get_state()
        with state.lock:
            self._check_open()
            if state.owner is None:
                self._new_handle(state)
            return state.handle()

    @property
    def pch_status(self) -> PCHStatusType | None:
        """What NVRTC did about a precompiled header at the last :meth:`compile`:
        ``"created"``, ``"not_attempted"`` or ``"failed"``; None when no PCH option was given,
        before the first compile, and for NVVM and PTX programs.

        .. note:: Reads ``nvrtcGetPCHCreateStatus``.
        """
        state = self._state
        return None if state is None else state.pch_status

    def close(self) -> None:
        """Destroy the compiler handle; idempotent. Waits for a :meth:`compile` in progress
        on another thread.

        Raises
        ------
        NVRTCError
            The handle could not be destroyed (the message names the call, e.g.
            ``nvrtcDestroyProgram``); the Program is closed all the same.
        """
        state = self._get_state()
        with state.lock:
            self._closed = True
            owner, state.owner = state.owner, None
        if owner is not None:
            owner.close()

    def __repr__(self) -> str:
        state = " closed" if self.is_closed else ""
        return f"<Program {self._options.name!r} {self._code_type}{state}>"

    def __reduce__(self) -> Any:
        # As cuda.core: it owns a compiler handle; copy.copy, copy.deepcopy and pickle raise
        # TypeError.
        raise TypeError(f"cannot pickle {type(self).__name__!r} object")

    # -- compile ----------------------------------------------------------------------------

    def compile(self, target_type: str, name_expressions: tuple | list = (), logs: Any = None,
                *, cache: Any = None) -> ObjectCode:
        """Compile to ``target_type``.

        Parameters
        ----------
        target_type : ObjectCodeFormatType or str
            C++: ``"ptx"``, ``"cubin"`` or ``"ltoir"``; NVVM: ``"ptx"`` or ``"ltoir"``; PTX:
            ``"cubin"``, or ``"ptx"`` (the input, once the linker has assembled it without
            error).
        name_expressions : sequence of str or bytes, optional
            C++ only: names such as ``"saxpy<float>"`` to instantiate; their lowered names
            fill the result's :attr:`ObjectCode.symbol_mapping`, so that
            ``get_kernel("saxpy<float>")`` works. A bytes name is UTF-8 and is recorded as
            its str; the cache key still tells ``"f"`` from ``b"f"``, as cuda.core's does.
        logs : object with ``write(str)``, optional
            Receives the compiler's log (warnings) when it is not empty. Nothing is written
            on a cache hit.
        cache : ProgramCacheResource, optional
            Keyword-only. Looked up with the key
            ``cuda_core.utils.make_program_cache_key(code=..., code_type=..., options=...,
            target_type=..., name_expressions=...)`` gives for this program (``options`` with
            ``arch`` filled in); on a hit no compiler runs and a new ObjectCode is made from
            the cached code; a miss compiles and stores ``cache[key] = result``. The caches
            of :mod:`cuda_core.utils` keep the symbol mapping with the code, so name
            expressions work with a cache. Options a key cannot stand for are refused (see
            :func:`~cuda_core.utils.make_program_cache_key`).

        Returns
        -------
        ObjectCode
            Named ``options.name``.

        Raises
        ------
        ValueError
            A target the backend cannot produce (the message names those it can), name
            expressions for a non-C++ program, an empty one or one with NUL, ``"cubin"`` with
            a ``compute_XX`` arch; with ``cache``, options a cache key cannot stand for.
        NVRTCError
            Compilation failed; the message and ``log`` hold the compiler's log.

        Notes
        -----
        Calls ``nvrtcCompileProgram`` (``nvrtcAddNameExpression``,
        ``nvrtcGetLoweredName``), ``nvvmCompileProgram`` or ``nvJitLinkComplete``.
        """
        ct = self._code_type
        target = check_target(target_type, ct, "Program.compile(): target_type")
        given: tuple[str | bytes, ...] = ()  # as given: the cache key tells "f" from b"f"
        names: tuple[str, ...] = ()  # as the compiler and the symbol mapping take them
        if type(name_expressions) is not tuple or name_expressions:
            given = _cu.check_name_expressions(name_expressions, "Program.compile()")
            names = _cu.compile_names(given, ct, "Program.compile()")
        if logs is not None:
            _cu.check_logs(logs)
        self._check_open()
        opts = self._options
        arch = opts.arch
        if arch is None:
            arch = self._arch()
            opts = self._options
        if target == "cubin" and ct != "ptx" and arch.startswith("compute_"):
            raise ValueError(f"Program.compile('cubin') needs a real architecture: "
                             f"ProgramOptions.arch is {arch!r}; use 'sm_{arch[8:]}' or compile "
                             f"to 'ptx'")
        if target != "ltoir" and ct != "ptx" and opts.link_time_optimization:
            raise ValueError(f"Program.compile({target!r}): "
                             f"ProgramOptions.link_time_optimization=True makes LTO IR; compile "
                             f"to 'ltoir'")
        if cache is None:
            return self._compile(target, names, logs)
        key = _cache_key(self._source, ct, opts, arch, target, given, None)
        lookup = getattr(cache, "_get_record", None)
        if lookup is not None:
            # One of our caches: the code with its code type and symbol mapping.
            record = lookup(key)
            if record is not None:
                code, code_type, mapping = record
                if ((code_type == target or not code_type)
                        and (not names or (mapping is not None
                                           and all(n in mapping for n in names)))):
                    return ObjectCode._init(code, target, name=opts._name(),
                                            symbol_mapping=mapping)
        else:
            try:
                hit = cache[key]
            except KeyError:
                hit = None
            if hit is not None:
                found = _object_code_from_cache(hit, target, opts._name(), bool(names))
                if found is not None:
                    return found
        result = self._compile(target, names, logs)
        cache[key] = result
        return result

    def _compile(self, target: str, names: tuple[str, ...], logs: Any) -> ObjectCode:
        state = self._get_state()
        # The compiler's log, written to ``logs`` once the lock is released: the user's write()
        # must not run under it (it may close this Program).
        log: list[str] = []
        try:
            with state.lock:
                self._check_open()
                if state.owner is None or state.used:
                    self._new_handle(state)
                state.used = True
                if self._code_type == "c++":
                    return self._compile_nvrtc(state, target, names, log)
                if self._code_type == "nvvm":
                    return self._compile_nvvm(state, target, log)
                return self._compile_ptx(state, target, log)
        finally:
            if log:
                _cu.write_log(logs, log[0])

    def _compile_nvrtc(self, state: _ProgramState, target: str, names: tuple[str, ...],
                       logs: list[str]) -> ObjectCode:
        from cuda.bindings import nvrtc

        opts = self._options
        prog = state.handle()
        if opts.use_bundled_headers and _cu.nvrtc_version() < (13, 3):
            raise RuntimeError(f"ProgramOptions.use_bundled_headers needs NVRTC 13.3 or newer; "
                               f"this NVRTC is {'.'.join(map(str, _cu.nvrtc_version()))}")
        if opts.fdevice_time_trace is not None:
            # NVRTC aborts the whole process when it cannot open the trace file.
            trace = os.path.abspath(_cu.file_name(opts.fdevice_time_trace))
            if os.path.isdir(trace) or not os.path.isdir(os.path.dirname(trace)):
                raise ValueError(f"ProgramOptions.fdevice_time_trace={trace!r} must name a file "
                                 f"in an existing directory (NVRTC writes <name>.json)")
        for name in names:
            (err,) = nvrtc.nvrtcAddNameExpression(prog, name.encode())
            _nvrtc_check(err, f"nvrtcAddNameExpression({name!r})")
        flags = opts.as_bytes("nvrtc", target)
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(flags), flags)
        wants_pch = bool(opts.pch) or opts.create_pch is not None
        if (err == nvrtc.nvrtcResult.NVRTC_SUCCESS and wants_pch
                and nvrtc.nvrtcGetPCHCreateStatus(prog)[0]
                == nvrtc.nvrtcResult.NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED):
            # The PCH did not fit the process-wide heap: grow it to what NVRTC asks for, retry.
            err2, required = nvrtc.nvrtcGetPCHHeapSizeRequired(prog)
            _nvrtc_check(err2, "nvrtcGetPCHHeapSizeRequired")
            (err2,) = nvrtc.nvrtcSetPCHHeapSize(required)
            _nvrtc_check(err2, "nvrtcSetPCHHeapSize")
            (err,) = nvrtc.nvrtcCompileProgram(prog, len(flags), flags)
        log = _nvrtc_log(prog)
        logs.append(log)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _nvrtc_check(err, f"NVRTC: compiling {opts.name!r}", log)
        if wants_pch or opts.use_pch is not None:
            status = nvrtc.nvrtcGetPCHCreateStatus(prog)[0]
            if status == nvrtc.nvrtcResult.NVRTC_SUCCESS:
                state.pch_status = PCHStatusType.CREATED
            elif status == nvrtc.nvrtcResult.NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED:
                state.pch_status = PCHStatusType.NOT_ATTEMPTED
            else:
                state.pch_status = PCHStatusType.FAILED
        else:
            state.pch_status = None
        getters = {"ptx": (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX),
                   "cubin": (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN),
                   "ltoir": (nvrtc.nvrtcGetLTOIRSize, nvrtc.nvrtcGetLTOIR)}[target]
        err, size = getters[0](prog)
        _nvrtc_check(err, f"reading the {target} of {opts.name!r}")
        if size == 0:
            raise NVRTCError(f"NVRTC produced no {target} for {opts.name!r} (with flags "
                             f"{[f.decode() for f in flags]})", None, None, None, log)
        buf = b" " * size
        (err,) = getters[1](prog, buf)
        _nvrtc_check(err, f"reading the {target} of {opts.name!r}")
        if target == "ptx":
            buf = buf.rstrip(b"\0")
        mapping = {}
        for name in names:
            err, lowered = nvrtc.nvrtcGetLoweredName(prog, name.encode())
            _nvrtc_check(err, f"nvrtcGetLoweredName({name!r})")
            mapping[name] = lowered.decode() if isinstance(lowered, bytes) else str(lowered)
        return ObjectCode._init(buf, target, name=opts._name(), symbol_mapping=mapping)

    def _compile_nvvm(self, state: _ProgramState, target: str, logs: list[str]) -> ObjectCode:
        from cuda.bindings import nvvm

        opts = self._options
        prog = state.handle()
        code = state.code
        assert code is not None, "made by _new_handle"

        def program_log() -> str:
            size = nvvm.get_program_log_size(prog)
            if size <= 1:
                return ""
            buf = bytearray(size)
            nvvm.get_program_log(prog, buf)
            return bytes(buf).rstrip(b"\0").decode(errors="replace")

        flags = [f.decode() for f in opts.as_bytes("nvvm", target)]
        try:
            nvvm.add_module_to_program(prog, code, len(code), opts._name())
            for name, src in extra_source_list(opts.extra_sources):
                nvvm.add_module_to_program(prog, src, len(src), name)
            if opts.use_libdevice:
                libdevice = _libdevice()
                nvvm.lazy_add_module_to_program(prog, libdevice, len(libdevice), "libdevice")
            nvvm.verify_program(prog, len(flags), flags)
            nvvm.compile_program(prog, len(flags), flags)
        except nvvm.nvvmError as exc:
            log = program_log()
            logs.append(log)
            status = getattr(exc, "status", None)
            raise NVRTCError(f"libNVVM: compiling {opts.name!r} failed: {exc}"
                             + (f"\n{log}" if log else ""),
                             None if status is None else int(status), str(exc), None,
                             log) from None
        logs.append(program_log())
        buf = bytearray(nvvm.get_compiled_result_size(prog))
        nvvm.get_compiled_result(prog, buf)
        data = bytes(buf)
        if target == "ptx":
            data = data.rstrip(b"\0")
        return ObjectCode._init(data, target, name=opts._name())

    def _compile_ptx(self, state: _ProgramState, target: str, logs: list[str]) -> ObjectCode:
        linker, code = state.owner, state.code
        assert isinstance(linker, Linker) and code is not None, "made by _new_handle"
        result = linker.link("cubin")
        logs.append(linker.get_info_log())
        if target == "ptx":
            return ObjectCode._init(code, "ptx", name=self._options._name())
        return result


def _libdevice() -> bytes:
    try:
        from cuda.pathfinder import find_bitcode_lib

        path = find_bitcode_lib("device")
    except Exception as exc:  # cuda.pathfinder's not-found errors have no common base
        raise RuntimeError(f"ProgramOptions.use_libdevice=True, but libdevice was not found "
                           f"({exc}); it comes with libNVVM: {_libs.install_hint('nvvm')}, or set "
                           f"CUDA_HOME to a CUDA toolkit") from None
    with open(path, "rb") as f:
        return f.read()
