"""Linking device code: :class:`Linker` and :class:`LinkerOptions`.

The linker is nvJitLink where it can be loaded (it also does link-time optimization of LTO
IR), and the driver's ``cuLink*`` otherwise. Failures raise :class:`NVRTCError` carrying the
linker's error log; nvJitLink's are also ``cuda.bindings.nvjitlink.nvJitLinkError``, the class
cuda.core raises there (``NvJitLinkError`` here).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import threading
import warnings
from typing import TYPE_CHECKING, Any

from cuda_core import _compiler_libs as _libs
from cuda_core import _compiler_utils as _cu
from cuda_core import _ptx
from cuda_core._checks import check_bool, check_choice, check_enum, check_int
from cuda_core._closable import Closable
from cuda_core._compiler_handles import NvJitLinkHandle
from cuda_core._enum import StrEnum as _StrEnum
from cuda_core._errors import CUDAError, NVRTCError
from cuda_core._object_code import ObjectCode
from cuda_core._options import check_or_create_options

if TYPE_CHECKING:
    from cuda_core._driver_linker import DriverLinker

__all__ = ["Linker", "LinkerOptions"]

_NVJITLINK_ERROR_LOCK = threading.Lock()


def __getattr__(name: str) -> Any:
    # PEP 562: NvJitLinkError derives from cuda.bindings.nvjitlink's class, whose module is
    # imported only once nvJitLink is used (importing it costs about a millisecond); the class
    # is made once, under a lock, on first use, and is found here again by pickle.
    if name in ("CompilerOptionError", "CompilerOptionTypeError"):
        return _compiler_option_errors()[name == "CompilerOptionTypeError"]
    if name != "NvJitLinkError":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _NVJITLINK_ERROR_LOCK:
        cls = globals().get(name)
        if cls is None:
            from cuda.bindings import nvjitlink

            class NvJitLinkError(NVRTCError, nvjitlink.nvJitLinkError):
                """An nvJitLink failure: an :class:`NVRTCError`, as ours are, and
                ``cuda.bindings.nvjitlink.nvJitLinkError``, cuda.core's class there;
                ``status`` is nvJitLink's (``code`` too)."""

                def __init__(self, message: str, code: Any = None, name: Any = None,
                             explanation: Any = None, log: str = "") -> None:
                    # Past NVRTCError's chain, whose super() would reach nvJitLinkError's
                    # __init__, which takes a status, not a message.
                    Exception.__init__(self, message)
                    self.code = self.status = code
                    self.name, self.explanation, self.log = name, explanation, log

            NvJitLinkError.__qualname__ = name
            cls = globals()[name] = NvJitLinkError
    return cls


def _compiler_option_errors() -> tuple[type, type]:
    """``(CompilerOptionError, CompilerOptionTypeError)``, made once on first use (after
    NvJitLinkError, their base)."""
    base = __getattr__("NvJitLinkError")
    with _NVJITLINK_ERROR_LOCK:
        found = globals().get("CompilerOptionError")
        if found is None:
            class CompilerOptionError(base, ValueError):  # type: ignore[valid-type,misc]
                """A compiler or linker option refused when the options are built, where
                cuda.core passes it on and NVRTC or nvJitLink refuses it at compile or link:
                an :class:`NVRTCError` and nvJitLink's ``nvJitLinkError`` (cuda.core's classes
                there: ProgramOptions go to NVRTC, or to nvJitLink for PTX), and a
                ``ValueError``, as ours are."""

            class CompilerOptionTypeError(CompilerOptionError, TypeError):
                """A :class:`CompilerOptionError` for a value of the wrong type: also a
                ``TypeError``, as ours are."""

            for cls in (CompilerOptionError, CompilerOptionTypeError):
                cls.__qualname__ = cls.__name__
                globals()[cls.__name__] = cls
            found = CompilerOptionError
    return found, globals()["CompilerOptionTypeError"]


def refused_by_compiler(check: Any) -> Any:
    """``check`` (a function of the value) raising, in place of its TypeError or ValueError,
    the CompilerOptionError of that kind with the same message."""
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            return check(*args, **kwargs)
        except (TypeError, ValueError) as exc:
            error, type_error = _compiler_option_errors()
            raise (type_error if isinstance(exc, TypeError) else error)(str(exc)) from None
    return checked


# The checks of the options that nvJitLink refuses when cuda.core passes them on.
compiler_check_arch: Any = refused_by_compiler(_cu.check_arch)
compiler_check_choice: Any = refused_by_compiler(check_choice)
compiler_check_int: Any = refused_by_compiler(check_int)
compiler_str_list: Any = refused_by_compiler(_cu.str_list)


def _nvjitlink_error(message: str, exc: Exception, log: str = "") -> NVRTCError:
    """The error to raise for ``exc``, an nvJitLinkError of cuda.bindings."""
    status = getattr(exc, "status", None)
    return __getattr__("NvJitLinkError")(message, status, str(exc), None, log)


_BOOL_FIELDS = ("time", "verbose", "link_time_optimization", "ptx", "debug", "lineinfo", "ftz",
                "prec_div", "prec_sqrt", "fma", "optimize_unused_variables", "no_cache")


class CompilerBackendType(_StrEnum):
    """The library that does the work of a :class:`cuda_core.Program` or
    :class:`cuda_core.Linker`."""

    NVRTC = "NVRTC"
    NVVM = "NVVM"
    NVJITLINK = "nvJitLink"
    DRIVER = "driver"


class ObjectCodeFormatType(_StrEnum):
    """The format of an :class:`cuda_core.ObjectCode` (``ObjectCode.code_type``)."""

    PTX = "ptx"
    CUBIN = "cubin"
    LTOIR = "ltoir"
    FATBIN = "fatbin"
    OBJECT = "object"
    LIBRARY = "library"


@dataclasses.dataclass
class LinkerOptions:
    """Options for :class:`Linker`. Every field defaults to None: "do not pass".

    Attributes
    ----------
    name : str
        Name of the linked output (its :attr:`ObjectCode.name`). Default ``"<default linker>"``.
    arch : str, optional
        Target, ``"sm_XX"`` (or ``"compute_XX"``, ``"sm_XXa"``, ``"sm_XXf"``). Defaults to the
        device of the current context; without one it must be given.
    max_register_count : int, optional
        Most registers per thread (``-maxrregcount=N``); 0 or less is no limit.
    time : bool, optional
        Timing information into the info log (``-time``).
    verbose : bool, optional
        Verbose messages into the info log (``-verbose``).
    link_time_optimization : bool, optional
        Link-time optimization of LTO IR inputs (``-lto``).
    ptx : bool, optional
        Produce PTX instead of a cubin (``-ptx``); needs ``link_time_optimization=True``.
    optimization_level : int, optional
        0 or 3 (``-O0`` / ``-O3``).
    debug : bool, optional
        Debug information (``-g``).
    lineinfo : bool, optional
        Line information (``-lineinfo``).
    ftz, prec_div, prec_sqrt, fma : bool, optional
        Floating-point modes for LTO code generation (``-ftz=``, ``-prec-div=``,
        ``-prec-sqrt=``, ``-fma=``).
    kernels_used, variables_used : str or list of str, optional
        The only kernels / variables that are used; others may be removed
        (``-kernels-used=``, ``-variables-used=``).
    optimize_unused_variables : bool, optional
        Unreferenced device variables may be removed (``-optimize-unused-variables``).
    ptxas_options : str or list of str, optional
        Options passed to ptxas (``-Xptxas=``).
    split_compile : int, optional
        Threads for split compilation, 0 for all processors (``-split-compile=``).
    split_compile_extended : int, optional
        Threads for extended split compilation (``-split-compile-extended=``).
    no_cache : bool, optional
        Disable nvJitLink's cache (``-no-cache``).
    numba_debug : bool, optional
        Deprecated; has no effect.

    With the driver's linker (where nvJitLink is unavailable) only ``arch``,
    ``max_register_count``, ``verbose``, ``optimization_level``, ``debug`` and ``lineinfo``
    apply; setting another field then raises ValueError when the Linker is made.
    """

    name: str | None = "<default linker>"
    arch: str | None = None
    max_register_count: int | None = None
    time: bool | None = None
    verbose: bool | None = None
    link_time_optimization: bool | None = None
    ptx: bool | None = None
    optimization_level: int | None = None
    debug: bool | None = None
    lineinfo: bool | None = None
    ftz: bool | None = None
    prec_div: bool | None = None
    prec_sqrt: bool | None = None
    fma: bool | None = None
    kernels_used: str | list[str] | tuple[str, ...] | None = None
    variables_used: str | list[str] | tuple[str, ...] | None = None
    optimize_unused_variables: bool | None = None
    ptxas_options: str | list[str] | tuple[str, ...] | None = None
    split_compile: int | None = None
    split_compile_extended: int | None = None
    no_cache: bool | None = None
    numba_debug: bool | None = None

    def __post_init__(self):
        # Deprecated and ignored, as in cuda.core, whatever its value: nothing to check.
        if self.numba_debug is not None:
            warnings.warn("LinkerOptions.numba_debug is deprecated and has no effect",
                          DeprecationWarning, stacklevel=3)
        if self.name is None:
            self.name = "<default linker>"
        # Only a label (of the linked ObjectCode): an empty one is taken, as in cuda.core.
        _cu.check_text(self.name, "LinkerOptions.name", allow_empty=True)
        # Refused values that cuda.core passes on, which nvJitLink then refuses: the same
        # class (CompilerOptionError) here, before any link.
        compiler_check_arch(self.arch, "LinkerOptions.arch")
        # Any int, as cuda.core passes it (nvJitLink takes 0 and negative counts: no limit).
        # Another type: cuda.core renders "x" as -maxrregcount=x, which nvJitLink 13 takes
        # without a word (no limit, whatever was meant).
        self.max_register_count = check_int(self.max_register_count,
                                            "LinkerOptions.max_register_count", allow_none=True)
        self.optimization_level = compiler_check_choice(
            self.optimization_level, "LinkerOptions.optimization_level", (0, 3), allow_none=True)
        self.split_compile = compiler_check_int(
            self.split_compile, "LinkerOptions.split_compile", 0, allow_none=True)
        # nvJitLink refuses a negative count (ERROR_UNRECOGNIZED_OPTION, as cuda.core passes it)
        # and takes "x" without a word.
        self.split_compile_extended = compiler_check_int(
            self.split_compile_extended, "LinkerOptions.split_compile_extended", 0, None, True)
        for field in _BOOL_FIELDS:
            check_bool(getattr(self, field), f"LinkerOptions.{field}", allow_none=True)
        for field in ("kernels_used", "variables_used"):
            # An empty name: nvJitLink refuses -kernels-used= (ERROR_UNRECOGNIZED_OPTION).
            compiler_str_list(getattr(self, field), f"LinkerOptions.{field}")
        compiler_str_list(self.ptxas_options, "LinkerOptions.ptxas_options")
        if self.ptx and not self.link_time_optimization:
            raise _compiler_option_errors()[0](
                "LinkerOptions.ptx=True needs link_time_optimization=True: nvJitLink emits PTX "
                "only from LTO IR")

    def _name(self) -> str:
        """``name``, which __post_init__ made a str."""
        assert self.name is not None
        return self.name

    def as_bytes(self, backend: CompilerBackendType | str = "nvjitlink") -> list[bytes]:
        """The options as nvJitLink flags.

        Parameters
        ----------
        backend : CompilerBackendType or str
            ``"nvjitlink"`` (any case). The driver's linker takes ``CUjit_option`` values, not
            flags, so ``"driver"`` is a ValueError.

        Returns
        -------
        list of bytes
        """
        which = check_enum(backend, "LinkerOptions.as_bytes(): backend",
                           ("nvJitLink", "driver"), casefold=True)
        if which == "driver":
            raise ValueError("LinkerOptions.as_bytes(): the driver's linker takes CUjit_option "
                             "values, not flags; only backend='nvjitlink' renders flags")
        return [flag.encode() for flag in self._nvjitlink_flags()]

    def _nvjitlink_flags(self) -> list[str]:
        flags: list[str] = []
        for field, render in _NVJITLINK_FLAGS:
            value = getattr(self, field)
            if value is not None:
                flags += render(value)
        return flags

    def _driver_options(self) -> list[tuple[int, int]]:
        """``(CUjit_option, value)`` pairs for the driver's linker; ValueError naming the
        fields it cannot honour."""
        from cuda_core._driver_linker import JIT_OPTIONS

        unsupported = [f for f in ("time", "link_time_optimization", "ptx", "ftz", "prec_div",
                                   "prec_sqrt", "fma", "kernels_used", "variables_used",
                                   "optimize_unused_variables", "ptxas_options",
                                   "split_compile", "split_compile_extended", "no_cache")
                       if getattr(self, f) not in (None, False)]
        if unsupported:
            raise ValueError(
                f"nvJitLink is not available and the driver's linker cannot honour "
                f"LinkerOptions.{', LinkerOptions.'.join(unsupported)}; leave them unset, or "
                f"{_libs.install_hint('nvJitLink')}")
        options = []
        for field, option, convert in _DRIVER_OPTIONS:
            value = getattr(self, field)
            if value is not None and (value := convert(value)) is not None:
                options.append((JIT_OPTIONS[option], value))
        return options


def _str_list_flag(flag: str, field: str):
    what = f"LinkerOptions.{field}"
    return _cu.each_flag(flag, lambda v: _cu.str_list(v, what))


# field -> its nvJitLink flags (for a value that is not None), in the order they are given.
_NVJITLINK_FLAGS = (
    ("arch", _cu.value_flag("-arch")),
    ("max_register_count", _cu.value_flag("-maxrregcount")),
    ("time", _cu.switch_flag("-time")),
    ("verbose", _cu.switch_flag("-verbose")),
    ("link_time_optimization", _cu.switch_flag("-lto")),
    ("ptx", _cu.switch_flag("-ptx")),
    ("optimization_level", lambda v: (f"-O{v}",)),
    ("debug", _cu.switch_flag("-g")),
    ("lineinfo", _cu.switch_flag("-lineinfo")),
    ("ftz", _cu.bool_flag("-ftz")),
    ("prec_div", _cu.bool_flag("-prec-div")),
    ("prec_sqrt", _cu.bool_flag("-prec-sqrt")),
    ("fma", _cu.bool_flag("-fma")),
    ("kernels_used", _str_list_flag("-kernels-used", "kernels_used")),
    ("variables_used", _str_list_flag("-variables-used", "variables_used")),
    ("optimize_unused_variables", _cu.switch_flag("-optimize-unused-variables")),
    ("ptxas_options", _str_list_flag("-Xptxas", "ptxas_options")),
    ("split_compile", _cu.value_flag("-split-compile")),
    ("split_compile_extended", _cu.value_flag("-split-compile-extended")),
    ("no_cache", _cu.switch_flag("-no-cache")),
)


def _jit_target(arch: str) -> int:
    """``CU_JIT_TARGET``'s value for an arch string: the number, plus the family- or
    architecture-specific offset."""
    _, number, suffix = _cu.arch_parts(arch)
    return {"": 0, "a": 0x10000, "f": 0x20000}[suffix] + number


def _register_limit(count: int) -> int | None:
    """nvJitLink takes a count <= 0 as no limit: the driver's unsigned option is left out."""
    return int(count) if count > 0 else None


# field -> (its key in the driver linker's JIT_OPTIONS, its value as an int, or None to leave
# the option out), for a value that is not None.
_DRIVER_OPTIONS = (
    ("arch", "target", _jit_target),
    ("max_register_count", "max_registers", _register_limit),
    ("verbose", "log_verbose", int),
    ("optimization_level", "optimization_level", int),
    ("debug", "generate_debug_info", int),
    ("lineinfo", "generate_line_info", int),
)


@functools.lru_cache(maxsize=None)
def _nvjitlink_unavailable() -> str | None:
    """None where nvJitLink 12.3 or newer can be loaded; otherwise why not, as a message that
    names the pip package to install."""
    try:
        version = tuple(_libs.nvjitlink().version())
    except CUDAError as exc:  # the library is missing
        return str(exc)
    except (ImportError, RuntimeError, OSError) as exc:
        return str(_libs.missing_error("nvJitLink", exc))
    if version < (12, 3):
        return (f"nvJitLink {'.'.join(map(str, version))} is too old: Linker needs 12.3 or newer; "
                f"{_libs.install_hint('nvJitLink')}")
    return None


def _nvjitlink_available() -> bool:
    """True where nvJitLink 12.3 or newer can be loaded."""
    return _nvjitlink_unavailable() is None


def _without_nvjitlink() -> str:
    """Why nvJitLink is not used, for the messages of the driver's linker."""
    return _nvjitlink_unavailable() or "nvJitLink is not used"


_NVJITLINK_INPUT = {"cubin": "CUBIN", "ptx": "PTX", "ltoir": "LTOIR", "fatbin": "FATBIN",
                    "object": "OBJECT", "library": "LIBRARY"}


def _nvjitlink_log(nvjitlink: Any, handle: int, which: str) -> str:
    size = getattr(nvjitlink, f"get_{which}_log_size")(handle)
    if size <= 1:
        return ""
    buf = bytearray(size)
    getattr(nvjitlink, f"get_{which}_log")(handle, buf)
    return bytes(buf).rstrip(b"\0").decode(errors="replace")


class Linker(Closable):
    """Links :class:`ObjectCode` inputs (cubin, PTX, LTO IR, fatbin, object, library) into one
    cubin, or, with link-time optimization, into PTX.

    Parameters
    ----------
    *object_codes : ObjectCode
        The inputs; at least one.
    options : LinkerOptions or dict, optional
        ``arch`` defaults to the device of the current context.

    Raises
    ------
    ValueError
        No inputs, or an option the backend cannot honour.
    NVRTCError
        An input the linker rejects (with the linker's log).

    Notes
    -----
    Uses ``nvJitLinkCreate``/``nvJitLinkAddData``/``nvJitLinkComplete``; where
    nvJitLink is unavailable, ``cuLinkCreate``/``cuLinkAddData``/``cuLinkComplete`` (which
    need a current context).
    """

    __slots__ = ("_options", "_backend", "_nvjitlink", "_driver", "_result", "_error_log",
                 "_info_log", "_lock", "_closed", "__weakref__")

    def __init__(self, *object_codes: ObjectCode, options: LinkerOptions | dict | None = None):
        # The owner of the handle: nvJitLink's, or the driver's linker. Collecting it destroys
        # the handle (a failure then is a CUDAWarning).
        self._nvjitlink: NvJitLinkHandle | None = None
        self._driver: DriverLinker | None = None
        self._result: ObjectCode | None = None
        self._error_log = ""
        self._info_log = ""
        self._lock = threading.Lock()
        self._closed = False
        if not object_codes:
            raise ValueError("Linker needs at least one ObjectCode to link")
        for i, obj in enumerate(object_codes):
            if not isinstance(obj, ObjectCode):
                raise TypeError(f"Linker: input {i} must be an ObjectCode, not "
                                f"{type(obj).__name__}")
        opts = check_or_create_options(LinkerOptions, options, "Linker options")
        arch = _cu.resolve_arch("LinkerOptions", opts.arch)
        if arch != opts.arch:
            opts = copy.copy(opts)
            opts.arch = arch
        self._options = opts
        self._backend = self.which_backend()
        if self._backend == CompilerBackendType.NVJITLINK:
            self._start_nvjitlink(object_codes)
        else:
            self._start_driver(object_codes)

    def _nvjitlink_handle(self) -> int:
        """The nvJitLink handle, for an open Linker of that backend."""
        owner = self._nvjitlink
        assert owner is not None, "a Linker on nvJitLink has its handle from __init__ on"
        return owner.handle

    def _owner(self) -> NvJitLinkHandle | DriverLinker | None:
        """What owns the linker handle (None where __init__ failed before making one)."""
        return self._driver if self._driver is not None else self._nvjitlink

    def _start_nvjitlink(self, object_codes: tuple[ObjectCode, ...]) -> None:
        from cuda.bindings import nvjitlink

        flags = self._options._nvjitlink_flags()
        try:
            handle = nvjitlink.create(len(flags), flags)
        except nvjitlink.nvJitLinkError as exc:
            raise _nvjitlink_error(f"nvJitLink rejected the options {flags}: {exc}",
                                   exc) from None
        self._nvjitlink = NvJitLinkHandle(handle)
        for i, obj in enumerate(object_codes):
            kind = getattr(nvjitlink.InputType, _NVJITLINK_INPUT[obj.code_type])
            name = obj.name or f"input{i}.{obj.code_type}"
            try:
                if isinstance(obj.code, str):
                    nvjitlink.add_file(handle, kind, obj.code)
                else:
                    nvjitlink.add_data(handle, kind, obj.code, len(obj.code), name)
            except nvjitlink.nvJitLinkError as exc:
                self._raise_nvjitlink(exc, f"nvJitLink rejected input {i} ({name!r}, "
                                           f"{obj.code_type})")

    def _start_driver(self, object_codes: tuple[ObjectCode, ...]) -> None:
        from cuda_core._driver_linker import DriverLinker

        for i, obj in enumerate(object_codes):
            if obj.code_type == "ltoir":
                raise ValueError(f"Linker: input {i} is LTO IR, which only nvJitLink can link: "
                                 f"{_without_nvjitlink()}")
        driver_options = self._options._driver_options()
        for i, obj in enumerate(object_codes):
            if obj.code_type == "ptx":  # the driver JIT-compiles PTX: is its ISA too new?
                _ptx.check_loadable(obj.code, f"Linker input {i} ({obj.name or 'ptx'!r})",
                                    NVRTCError)
        try:
            self._driver = DriverLinker(driver_options)
        except CUDAError as exc:
            # Without a driver, say first that nvJitLink is missing: it is what to install.
            raise CUDAError(f"{_without_nvjitlink()}. The fallback, the CUDA driver's own "
                            f"linker, cannot be used either: {exc}",
                            exc.code, exc.name, exc.explanation) from None
        for i, obj in enumerate(object_codes):
            name = obj.name or f"input{i}.{obj.code_type}"
            self._driver.add(obj.code, obj.code_type, name, isinstance(obj.code, str))

    def _raise_nvjitlink(self, exc: Exception, what: str) -> None:
        from cuda.bindings import nvjitlink

        log = _nvjitlink_log(nvjitlink, self._nvjitlink_handle(), "error")
        self._error_log = log
        raise _nvjitlink_error(f"{what}: {exc}" + (f"\n{log}" if log else ""), exc,
                               log) from None

    @classmethod
    def which_backend(cls) -> CompilerBackendType:
        """:attr:`CompilerBackendType.NVJITLINK` where nvJitLink (12.3+) can be loaded,
        :attr:`CompilerBackendType.DRIVER` otherwise."""
        if _nvjitlink_available():
            return CompilerBackendType.NVJITLINK
        return CompilerBackendType.DRIVER

    def link(self, target_type: str) -> ObjectCode:
        """Link the inputs.

        Parameters
        ----------
        target_type : str
            ``"cubin"``, or ``"ptx"`` for a Linker made with
            ``LinkerOptions(link_time_optimization=True, ptx=True)``.

        Returns
        -------
        ObjectCode
            Named ``options.name``. Linking again returns the same object.

        Raises
        ------
        NVRTCError
            The link failed; ``log`` holds the linker's error log.
        """
        target = check_enum(target_type, "Linker.link(): target_type", ("cubin", "ptx"))
        self._check_open()
        wants_ptx = bool(self._options.ptx)
        if target == "ptx" and not wants_ptx:
            raise ValueError("Linker.link('ptx') needs a Linker made with "
                             "LinkerOptions(link_time_optimization=True, ptx=True)")
        if target == "cubin" and wants_ptx:
            raise ValueError("this Linker was made with LinkerOptions(ptx=True), so it links to "
                             "PTX: call link('ptx')")
        if self._backend == CompilerBackendType.DRIVER and target == "ptx":
            raise ValueError(f"the driver's linker cannot produce PTX: {_without_nvjitlink()}")
        with self._lock:
            if self._result is None:
                self._result = self._link(target)
        return self._result

    def _link(self, target: str) -> ObjectCode:
        if self._driver is not None:
            try:
                image = self._driver.complete()
            finally:
                self._info_log = self._driver.info_log()
                self._error_log = self._driver.error_log()
            return ObjectCode._init(image, target, name=self._options._name())
        from cuda.bindings import nvjitlink

        handle = self._nvjitlink_handle()
        try:
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as exc:
            self._info_log = _nvjitlink_log(nvjitlink, handle, "info")
            self._raise_nvjitlink(exc, f"nvJitLink: linking {self._options.name!r} failed")
        self._info_log = _nvjitlink_log(nvjitlink, handle, "info")
        self._error_log = _nvjitlink_log(nvjitlink, handle, "error")
        if target == "cubin":
            buf = bytearray(nvjitlink.get_linked_cubin_size(handle))
            nvjitlink.get_linked_cubin(handle, buf)
            image = bytes(buf)
        else:
            buf = bytearray(nvjitlink.get_linked_ptx_size(handle))
            nvjitlink.get_linked_ptx(handle, buf)
            image = bytes(buf).rstrip(b"\0")
        return ObjectCode._init(image, target, name=self._options._name())

    def get_error_log(self) -> str:
        """The linker's error log: live while the Linker is open, the copy taken at
        :meth:`link` afterwards."""
        with self._lock:  # not while link() or close() runs on another thread
            return self._log_locked("error")

    def get_info_log(self) -> str:
        """The linker's info log (warnings, ``verbose`` and ``time`` output)."""
        with self._lock:
            return self._log_locked("info")

    def _log_locked(self, kind: str) -> str:
        """The ``"error"`` or ``"info"`` log: the linker's own until link() or close() copied it."""
        if not self._closed and self._result is None:
            if self._driver is not None:
                return self._driver.error_log() if kind == "error" else self._driver.info_log()
            from cuda.bindings import nvjitlink

            return _nvjitlink_log(nvjitlink, self._nvjitlink_handle(), kind)
        return self._error_log if kind == "error" else self._info_log

    @property
    def handle(self) -> int:
        """The nvJitLink handle (``nvJitLinkHandle`` as an int), or the driver's
        ``CUlinkState`` address."""
        self._check_open()
        if self._driver is not None:
            return self._driver.handle
        return self._nvjitlink_handle()

    def close(self) -> None:
        """Destroy the linker handle; idempotent. Logs stay readable. Waits for a
        :meth:`link` in progress on another thread.

        Raises
        ------
        NVRTCError, CUDAError
            The handle could not be destroyed (the message names the call); the Linker is
            closed all the same.
        """
        with self._lock:
            owner = self._owner()
            if self._closed or owner is None:
                return
            if self._result is None:  # keep the logs: link() did not copy them
                self._error_log = self._log_locked("error")
                self._info_log = self._log_locked("info")
            self._closed = True
            owner.close()

    def __repr__(self) -> str:
        state = "closed" if self.is_closed else str(self._backend)
        return f"<Linker {self._options.name!r} {state}>"

    def __reduce__(self) -> Any:
        # As cuda.core: it owns a linker handle; copy.copy, copy.deepcopy and pickle raise
        # TypeError.
        raise TypeError(f"cannot pickle {type(self).__name__!r} object")
