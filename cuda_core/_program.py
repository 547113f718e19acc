"""Run-time compilation: :class:`Program` and :class:`ProgramOptions`.

* ``code_type="c++"``: CUDA C++ through NVRTC, to PTX, cubin or LTO IR;
* ``code_type="nvvm"``: NVVM IR (LLVM IR text or bitcode) through libNVVM, to PTX or LTO IR;
* ``code_type="ptx"``: PTX through the linker (nvJitLink, or the driver's where nvJitLink is
  unavailable), to a cubin.

A failed compilation raises :class:`NVRTCError` whose message and ``log`` hold the compiler's
full log.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import inspect
import os
import threading
from typing import Any

from cuda_core import _compiler_libs as _libs
from cuda_core import _compiler_utils as _cu
from cuda_core._checks import check_bool, check_int
from cuda_core._compiler_handles import NvrtcProgram, NvvmProgram
from cuda_core._errors import NVRTCError
from cuda_core._linker import Linker, LinkerOptions
from cuda_core._module import ObjectCode
from cuda_core._options import check_or_create_options
from cuda_core.typing import CompilerBackendType, PCHStatusType
from cuda_core.utils import _program_cache as _pc

__all__ = ["Program", "ProgramOptions"]

_STD_VALUES = ("c++03", "c++11", "c++14", "c++17", "c++20", "c++23")
_OFAST_VALUES = ("0", "min", "mid", "max")
_OPTIMIZATION_INFO_VALUES = ("inline",)

_BOOL_FIELDS = (
    "relocatable_device_code", "extensible_whole_program", "debug", "lineinfo",
    "device_code_optimize", "ftz", "prec_sqrt", "prec_div", "fma", "use_fast_math",
    "extra_device_vectorization", "link_time_optimization", "gen_opt_lto", "use_bundled_headers",
    "no_source_include", "builtin_move_forward", "builtin_initializer_list", "disable_warnings",
    "restrict", "device_as_default_execution_space", "device_int128", "no_display_error_number",
    "brief_diagnostics", "fdevice_syntax_only", "minimal", "no_cache", "device_float128", "pch",
    "pch_verbose", "pch_messages", "instantiate_templates_in_pch", "use_libdevice",
    "numba_debug",
)

# What each backend can honour, besides ``name`` (never a flag). Setting another field to
# anything but None/False is a ValueError naming it.
_NVVM_FIELDS = frozenset((
    "arch", "device_code_optimize", "debug", "lineinfo", "ftz", "prec_sqrt", "prec_div", "fma",
    "link_time_optimization", "numba_debug", "extra_sources", "use_libdevice",
))
_PTX_FIELDS = frozenset((
    "arch", "device_code_optimize", "debug", "lineinfo", "ftz", "prec_sqrt", "prec_div", "fma",
    "max_register_count", "ptxas_options", "split_compile", "no_cache",
))
_NVRTC_ONLY_EXCLUDED = frozenset(("extra_sources", "use_libdevice"))

# Targets per source language, in the order error messages list them.
_TARGETS = {"c++": ("ptx", "cubin", "ltoir"), "nvvm": ("ptx", "ltoir"), "ptx": ("cubin", "ptx")}
_BACKEND_OF = {"c++": "NVRTC", "nvvm": "NVVM", "ptx": "nvJitLink"}


def _user_cache_dir() -> str:
    """``$XDG_CACHE_HOME/cuda-python`` (``~/.cache/cuda-python``; ``%LOCALAPPDATA%`` on
    Windows)."""
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser(r"~\AppData\Local")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "cuda-python")


def _nvrtc_version() -> tuple[int, int]:
    nvrtc = _libs.nvrtc()
    err, major, minor = nvrtc.nvrtcVersion()
    _nvrtc_check(err, "nvrtcVersion")
    return major, minor


def _bundled_headers_dir() -> str:
    major, minor = _nvrtc_version()
    return os.path.join(_user_cache_dir(), "nvrtc-bundled-headers", f"{major}.{minor}")


def _macro_list(value: Any) -> list[str]:
    """define_macro as ``NAME`` / ``NAME=VALUE`` strings. A str is one macro; a 2-tuple of str
    is one (name, value) pair; a list (or any other tuple) holds macros of either form."""
    cls, field = "ProgramOptions", "define_macro"
    if value is None:
        return []
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, str) for v in value):
        items = [value]
    elif isinstance(value, (list, tuple)):
        if not value:
            raise ValueError(f"{cls}.{field} must not be an empty sequence (use None)")
        items = list(value)
    else:
        items = [value]
    out = []
    for item in items:
        if isinstance(item, tuple):
            if len(item) != 2:
                raise ValueError(f"{cls}.{field}: a macro given as a tuple must be (name, value), "
                                 f"got {item!r}")
            name = _cu.check_text(item[0], f"{cls}.{field}")
            if not isinstance(item[1], str):
                raise TypeError(f"{cls}.{field}: the value of macro {name!r} must be a str, not "
                                f"{type(item[1]).__name__}")
            if "\0" in item[1]:
                raise ValueError(f"{cls}.{field} must not contain NUL characters")
            out.append(f"{name}={item[1]}")
        else:
            out.append(_cu.check_text(item, f"{cls}.{field}"))
    return out


def _extra_sources(value: Any) -> list[tuple[str, bytes]]:
    cls, field = "ProgramOptions", "extra_sources"
    if value is None:
        return []
    if not isinstance(value, (list, tuple)) or not value:
        raise TypeError(f"{cls}.{field} must be a non-empty sequence of (name, source) pairs, "
                        f"not {value!r}")
    out = []
    for item in value:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise TypeError(f"{cls}.{field}: each item must be a (name, source) pair, got "
                            f"{item!r}")
        name = _cu.check_text(item[0], f"{cls}.{field}")
        src = item[1]
        if isinstance(src, str):
            src = src.encode()
        elif isinstance(src, (bytes, bytearray)):
            src = bytes(src)
        else:
            raise TypeError(f"{cls}.{field}: the source of {name!r} must be str (LLVM IR text) "
                            f"or bytes (bitcode), not {type(src).__name__}")
        if not src:
            raise ValueError(f"{cls}.{field}: the source of {name!r} is empty")
        out.append((name, src))
    return out


@dataclasses.dataclass
class ProgramOptions:
    """Options for :class:`Program`. Every field but ``name`` defaults to None, meaning "do not
    pass": the compiler's own default applies. Fields are checked when the object is made and
    when one is assigned (an unknown attribute name is an AttributeError; None resets a field
    to its default); a field the chosen backend cannot honour is a ValueError at
    ``Program(...)``.

    NVRTC flags are given in brackets; NVVM and nvJitLink (PTX input) spellings are listed
    where those backends support the field.

    Attributes
    ----------
    name : str
        Program name, used in messages and as the output's :attr:`ObjectCode.name`.
        Default ``"default_program"``.
    arch : str
        ``"sm_XX"`` or ``"compute_XX"`` (also ``sm_XXa``/``sm_XXf``)
        [``--gpu-architecture=``; NVVM ``-arch=compute_XX``; nvJitLink ``-arch=``]. Defaults
        to the device of the current context; where none is current it must be given.
    relocatable_device_code : bool [``--relocatable-device-code=``]
    extensible_whole_program : bool [``--extensible-whole-program``]
    debug : bool [``--device-debug``; NVVM/nvJitLink ``-g``]
    lineinfo : bool [``--generate-line-info``; NVVM ``-generate-line-info``; nvJitLink ``-lineinfo``]
    device_code_optimize : bool [``--dopt=on``; NVVM ``-opt=3|0``; nvJitLink ``-O3|-O0``]
        NVRTC takes only True; False is a ValueError there (``debug=True`` turns device
        optimization off).
    ptxas_options : str or list of str [``--ptxas-options=``; nvJitLink ``-Xptxas=``]
    max_register_count : int [``--maxrregcount=``; nvJitLink ``-maxrregcount=``]
    ftz : bool [``--ftz=``; NVVM ``-ftz=1|0``; nvJitLink ``-ftz=``]
    prec_sqrt : bool [``--prec-sqrt=``; NVVM ``-prec-sqrt=``; nvJitLink ``-prec-sqrt=``]
    prec_div : bool [``--prec-div=``; NVVM ``-prec-div=``; nvJitLink ``-prec-div=``]
    fma : bool [``--fmad=``; NVVM ``-fma=``; nvJitLink ``-fma=``]
    use_fast_math : bool [``--use_fast_math``]
    extra_device_vectorization : bool [``--extra-device-vectorization``]
    link_time_optimization : bool [``--dlink-time-opt``; NVVM ``-gen-lto``]
        Produce LTO IR; compile to ``"ltoir"``.
    gen_opt_lto : bool [``--gen-opt-lto``]
    define_macro : str, (name, value), or a list of either [``--define-macro=``]
        A str defines a macro (as ``NAME`` or ``NAME=VALUE``); a 2-tuple of str is one
        ``(name, value)`` pair; a list holds several.
    undefine_macro : str or list of str [``--undefine-macro=``]
    include_path : str, path-like, or a list of them [``--include-path=``]
    use_bundled_headers : bool [``--use-bundled-headers=<dir>``]
        Use the CUDA and CCCL headers bundled with NVRTC 13.3+, installed on first use into
        ``$XDG_CACHE_HOME/cuda-python/nvrtc-bundled-headers/<nvrtc version>``.
    pre_include : str or list of str [``--pre-include=``]
    no_source_include : bool [``--no-source-include``]
    std : str [``--std=``]: ``"c++03"``, ``"c++11"``, ``"c++14"``, ``"c++17"``, ``"c++20"``
        or ``"c++23"`` (as far as the NVRTC in use supports them).
    builtin_move_forward : bool [``--builtin-move-forward=``]
    builtin_initializer_list : bool [``--builtin-initializer-list=``]
    disable_warnings : bool [``--disable-warnings``]
    restrict : bool [``--restrict``]
    device_as_default_execution_space : bool [``--device-as-default-execution-space``]
    device_int128 : bool [``--device-int128``]
    optimization_info : str [``--optimization-info=``]: ``"inline"``.
    no_display_error_number : bool [``--no-display-error-number``]
    diag_error, diag_suppress, diag_warn : int or list of int
        [``--diag-error=``, ``--diag-suppress=``, ``--diag-warn=``, comma-separated]
    brief_diagnostics : bool [``--brief-diagnostics=``]
    time : str or path-like [``--time=``]: a CSV file for per-phase timings.
    split_compile : int [``--split-compile=``]: threads; 0 for all processors.
    fdevice_syntax_only : bool [``--fdevice-syntax-only``]
    minimal : bool [``--minimal``]
    no_cache : bool [``--no-cache``; nvJitLink ``-no-cache``]
    fdevice_time_trace : str or path-like [``--fdevice-time-trace=``]
        A file name in an existing directory; NVRTC writes its JSON trace to
        ``<name>.json``.
    device_float128 : bool [``--device-float128``]
    frandom_seed : str or int [``--frandom-seed=``]
    ofast_compile : str [``--Ofast-compile=``]: ``"0"``, ``"min"``, ``"mid"`` or ``"max"``.
    pch : bool [``--pch``]: automatic precompiled headers (NVRTC 12.8+).
    create_pch : str or path-like [``--create-pch=``]
    use_pch : str or path-like [``--use-pch=``]
    pch_dir : str or path-like [``--pch-dir=``]
    pch_verbose : bool [``--pch-verbose=``]
    pch_messages : bool [``--pch-messages=``]
    instantiate_templates_in_pch : bool [``--instantiate-templates-in-pch=``]
    extra_sources : sequence of (name, source)
        NVVM only: more modules to compile with the program; a source is LLVM IR text (str)
        or bitcode (bytes).
    use_libdevice : bool
        NVVM only: link NVIDIA's libdevice math library (found with ``cuda.pathfinder``).
    numba_debug : bool [``--numba-debug``; NVVM ``-numba-debug``]: needs ``debug=True``.
    """

    name: str | None = "default_program"
    arch: str | None = None
    relocatable_device_code: bool | None = None
    extensible_whole_program: bool | None = None
    debug: bool | None = None
    lineinfo: bool | None = None
    device_code_optimize: bool | None = None
    ptxas_options: str | list[str] | tuple[str, ...] | None = None
    max_register_count: int | None = None
    ftz: bool | None = None
    prec_sqrt: bool | None = None
    prec_div: bool | None = None
    fma: bool | None = None
    use_fast_math: bool | None = None
    extra_device_vectorization: bool | None = None
    link_time_optimization: bool | None = None
    gen_opt_lto: bool | None = None
    define_macro: Any = None
    undefine_macro: str | list[str] | tuple[str, ...] | None = None
    include_path: Any = None
    use_bundled_headers: bool | None = None
    pre_include: str | list[str] | tuple[str, ...] | None = None
    no_source_include: bool | None = None
    std: str | None = None
    builtin_move_forward: bool | None = None
    builtin_initializer_list: bool | None = None
    disable_warnings: bool | None = None
    restrict: bool | None = None
    device_as_default_execution_space: bool | None = None
    device_int128: bool | None = None
    optimization_info: str | None = None
    no_display_error_number: bool | None = None
    diag_error: int | list[int] | tuple[int, ...] | None = None
    diag_suppress: int | list[int] | tuple[int, ...] | None = None
    diag_warn: int | list[int] | tuple[int, ...] | None = None
    brief_diagnostics: bool | None = None
    time: Any = None
    split_compile: int | None = None
    fdevice_syntax_only: bool | None = None
    minimal: bool | None = None
    no_cache: bool | None = None
    fdevice_time_trace: Any = None
    device_float128: bool | None = None
    frandom_seed: str | int | None = None
    ofast_compile: str | None = None
    pch: bool | None = None
    create_pch: Any = None
    use_pch: Any = None
    pch_dir: Any = None
    pch_verbose: bool | None = None
    pch_messages: bool | None = None
    instantiate_templates_in_pch: bool | None = None
    extra_sources: Any = None
    use_libdevice: bool | None = None
    numba_debug: bool | None = None


    # Construction stores only the fields given (not None) in the instance's __dict__; the
    # others read as the class-level defaults. So the fields that are set are ``vars(opts)``,
    # which keeps construction, the backend checks and the cache key proportional to the
    # handful of fields a caller sets rather than to all 55.
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The signature shown by help() and inspect is the dataclass one (set below the class).
        if args:
            kwargs = _positional_options(args, kwargs)
        d = self.__dict__
        checks = _CHECKS
        for field, value in kwargs.items():
            check = checks.get(field)
            if check is None:
                raise TypeError(f"ProgramOptions() got an unexpected keyword argument {field!r}")
            if value is not None:
                check(value)
                d[field] = value

    def __setattr__(self, field: str, value: Any) -> None:
        check = _CHECKS.get(field)
        if check is None:
            raise AttributeError(f"ProgramOptions has no field {field!r}")
        if value is None:
            self.__dict__.pop(field, None)  # back to the default
        else:
            check(value)
            self.__dict__[field] = value

    def _name(self) -> str:
        """``name``, never None: setting None restores the default."""
        assert self.name is not None
        return self.name

    def __repr__(self) -> str:
        d = self.__dict__
        shown = [f"name={self.name!r}"] + [f"{f}={d[f]!r}" for f in _FIELD_ORDER
                                           if f != "name" and f in d]
        return f"ProgramOptions({', '.join(shown)})"

    # -- rendering --------------------------------------------------------------------------

    def _set_fields(self) -> list[str]:
        """The fields set to something other than None or False, ``name`` aside, in field
        order."""
        d = self.__dict__
        return [f for f in _FIELD_ORDER if f != "name" and f in d and d[f] is not False]

    def _check_backend(self, backend: str) -> None:
        """ValueError for a field the backend cannot honour (``backend`` as in
        ``_BACKEND_OF``)."""
        if backend == "NVRTC":
            bad = [f for f in self._set_fields() if f in _NVRTC_ONLY_EXCLUDED]
        elif backend == "NVVM":
            bad = [f for f in self._set_fields() if f not in _NVVM_FIELDS]
        else:
            bad = [f for f in self._set_fields() if f not in _PTX_FIELDS]
        if bad:
            where = {"NVRTC": "C++ (NVRTC)", "NVVM": "NVVM IR (libNVVM)",
                     "nvJitLink": "PTX input (the linker)"}[backend]
            raise ValueError(f"ProgramOptions.{', ProgramOptions.'.join(bad)} cannot be used "
                             f"with {where}")
        if backend == "NVRTC" and self.device_code_optimize is False:
            # NVRTC takes --dopt=on only: device code is optimized unless -G is given.
            raise ValueError("ProgramOptions.device_code_optimize=False cannot be passed to "
                             "NVRTC, which only takes --dopt=on; device code is optimized "
                             "unless debug=True")

    def as_bytes(self, backend: CompilerBackendType | str,
                 target_type: str | None = None) -> list[bytes]:
        """The options as compiler flags.

        Parameters
        ----------
        backend : CompilerBackendType or str
            ``"nvrtc"``, ``"nvvm"`` or ``"nvjitlink"`` (any case; the latter renders the flags
            for PTX input).
        target_type : str, optional
            The compile target; ``"ltoir"`` adds the flag that makes LTO IR (NVRTC
            ``--dlink-time-opt``, NVVM ``-gen-lto``) when ``link_time_optimization`` is unset.

        Returns
        -------
        list of bytes
            ``arch`` is rendered only when set (``Program`` fills it in from the current
            device).

        Raises
        ------
        ValueError
            An unknown backend or target, or a field the backend cannot honour.
        """
        which = _cu.enum_value(backend, "ProgramOptions.as_bytes(): backend",
                               ("NVRTC", "NVVM", "nvJitLink", "driver"), casefold=True)
        if which == "driver":
            raise ValueError("ProgramOptions.as_bytes(): the driver's linker takes no flags; "
                             "backend must be 'nvrtc', 'nvvm' or 'nvjitlink'")
        if target_type is not None:
            source = {"NVRTC": "c++", "NVVM": "nvvm", "nvJitLink": "ptx"}[which]
            target_type = _cu.enum_value(target_type, "ProgramOptions.as_bytes(): target_type",
                                         _TARGETS[source])
        self._check_backend(which)
        if which == "NVRTC":
            flags = self._render(_NVRTC_RENDER, _FIELD_ORDER, target_type == "ltoir",
                                 "--dlink-time-opt")
        elif which == "NVVM":
            flags = self._render(_NVVM_RENDER, _NVVM_ORDER, target_type == "ltoir", "-gen-lto")
        else:
            flags = self._linker_options()._nvjitlink_flags()
        return [flag.encode() for flag in flags]

    def _render(self, table: dict, order: tuple, ltoir: bool, lto_flag: str) -> list[str]:
        """The flags of the set fields, in ``order``; ``lto_flag`` where the target is LTO IR
        or ``link_time_optimization`` is set (once)."""
        d = self.__dict__
        flags: list[str] = []
        for field in order:
            if field == "link_time_optimization":
                if ltoir or d.get(field):
                    flags.append(lto_flag)
                continue
            if field in d:
                render = table.get(field)
                if render is not None:
                    flags += render(d[field])
        return flags

    def _linker_options(self) -> LinkerOptions:
        """The LinkerOptions that carry these options for PTX input."""
        opt_level = None
        if self.device_code_optimize is not None:
            opt_level = 3 if self.device_code_optimize else 0
        return LinkerOptions(
            name=self.name, arch=self.arch, max_register_count=self.max_register_count,
            optimization_level=opt_level, debug=self.debug, lineinfo=self.lineinfo,
            ftz=self.ftz, prec_div=self.prec_div, prec_sqrt=self.prec_sqrt, fma=self.fma,
            ptxas_options=self.ptxas_options, split_compile=self.split_compile,
            no_cache=self.no_cache)

    def _key_fields(self) -> tuple:
        """The set fields as ``(field, normalized value)`` pairs, sorted, for the cache key:
        spellings that reach the compiler as the same flags (``"X"`` and ``["X"]``, a path and
        its str, ``False`` and unset for a flag that is only ever switched on) give the same
        pairs. ``arch`` is left out (the key takes the resolved one), and so is the default
        ``name``."""
        parts = []
        for field, value in self.__dict__.items():
            norm = _KEY_NORM.get(field, _AS_IS)
            if norm is not _AS_IS:
                if norm is _SKIP:
                    continue
                value = norm(value)
                if value is _SKIP:
                    continue
            parts.append((field, value))
        if len(parts) > 1:
            parts.sort()
        return tuple(parts)


# -- ProgramOptions tables ----------------------------------------------------------------------

_FIELD_ORDER = tuple(f.name for f in dataclasses.fields(ProgramOptions))
_CLS = "ProgramOptions"


def _positional_options(args: tuple, kwargs: dict) -> dict:
    if len(args) > len(_FIELD_ORDER):
        raise TypeError(f"ProgramOptions() takes at most {len(_FIELD_ORDER)} positional "
                        f"arguments ({len(args)} given)")
    merged = dict(zip(_FIELD_ORDER, args))
    for field in kwargs:
        if field in merged:
            raise TypeError(f"ProgramOptions() got multiple values for argument {field!r}")
    merged.update(kwargs)
    return merged


def _frandom_seed_check(value: Any) -> None:
    if type(value) is bool or not isinstance(value, (str, int)):
        raise TypeError(f"ProgramOptions.frandom_seed must be a str or int, not "
                        f"{type(value).__name__}")
    if isinstance(value, str):
        _cu.check_text(value, "ProgramOptions.frandom_seed")


# field -> the check of a value set (None, "unset", is never checked). Each names the field.
_CHECKS: dict[str, Any] = {
    "name": lambda v: _cu.check_text(v, "ProgramOptions.name"),
    "arch": lambda v: None if type(v) is str and _cu.arch_ok(v) else _cu.check_arch(
        v, "ProgramOptions.arch"),
    # allow_none: the messages say that None (unset) is allowed too.
    "max_register_count": lambda v: check_int(v, "ProgramOptions.max_register_count", 1, None,
                                              True),
    "split_compile": lambda v: check_int(v, "ProgramOptions.split_compile", 0, None, True),
    "define_macro": _macro_list,
    "frandom_seed": _frandom_seed_check,
    "extra_sources": _extra_sources,
}


def _field_check(check: Any, field: str, *args: Any):
    what = f"ProgramOptions.{field}"
    return lambda v: check(v, what, *args)


for _f in _BOOL_FIELDS:
    _CHECKS[_f] = _field_check(check_bool, _f, True)
for _f in ("ptxas_options", "undefine_macro"):
    _CHECKS[_f] = _field_check(_cu.str_list, _f)
for _f in ("include_path", "pre_include"):
    _CHECKS[_f] = _field_check(_cu.str_list, _f, True)
for _f, _choices in (("std", _STD_VALUES), ("optimization_info", _OPTIMIZATION_INFO_VALUES),
                     ("ofast_compile", _OFAST_VALUES)):
    _CHECKS[_f] = _field_check(_cu.enum_value, _f, _choices)
for _f in ("diag_error", "diag_suppress", "diag_warn"):
    _CHECKS[_f] = _field_check(_cu.int_list, _f)
for _f in ("time", "fdevice_time_trace", "create_pch", "use_pch", "pch_dir"):
    _CHECKS[_f] = _field_check(_cu.check_text, _f, True)
assert set(_CHECKS) == set(_FIELD_ORDER), set(_FIELD_ORDER) ^ set(_CHECKS)

# help(ProgramOptions) and inspect.signature show the fields, as for a generated __init__.
ProgramOptions.__init__.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # read by inspect
    [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    + [inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=f.default,
                         annotation=f.type) for f in dataclasses.fields(ProgramOptions)])


# Rendering: field -> value -> flags. Only set fields are rendered, in field order.
def _flag(flag: str):
    """A flag that a true value switches on; False renders nothing."""
    return lambda v: (flag,) if v else ()


def _tf_flag(flag: str, true: str = "true", false: str = "false"):
    """``flag=true`` / ``flag=false``."""
    return lambda v: (f"{flag}={true if v else false}",)


def _each(flag: str, items):
    return lambda v: tuple(f"{flag}={x}" for x in items(v))


def _path(flag: str):
    return lambda v: (f"{flag}={os.fspath(v)}",)


def _value(flag: str):
    return lambda v: (f"{flag}={v}",)


def _nvrtc_device_code_optimize(value: bool) -> tuple[str, ...]:
    if value:
        return ("--dopt=on",)
    raise ValueError("ProgramOptions.device_code_optimize=False cannot be passed to NVRTC, "
                     "which only takes --dopt=on; device code is optimized unless debug=True")


def _diag(flag: str, field: str):
    return lambda v: (f"{flag}={','.join(map(str, _cu.int_list(v, f'{_CLS}.{field}')))}",)


_NVRTC_RENDER = {
    "arch": _value("--gpu-architecture"),
    "relocatable_device_code": _tf_flag("--relocatable-device-code"),
    "extensible_whole_program": _flag("--extensible-whole-program"),
    "debug": _flag("--device-debug"),
    "lineinfo": _flag("--generate-line-info"),
    "device_code_optimize": _nvrtc_device_code_optimize,
    "ptxas_options": _each("--ptxas-options", _field_check(_cu.str_list, "ptxas_options")),
    "max_register_count": _value("--maxrregcount"),
    "ftz": _tf_flag("--ftz"),
    "prec_sqrt": _tf_flag("--prec-sqrt"),
    "prec_div": _tf_flag("--prec-div"),
    "fma": _tf_flag("--fmad"),
    "use_fast_math": _flag("--use_fast_math"),
    "extra_device_vectorization": _flag("--extra-device-vectorization"),
    "gen_opt_lto": _flag("--gen-opt-lto"),
    "define_macro": _each("--define-macro", _macro_list),
    "undefine_macro": _each("--undefine-macro", _field_check(_cu.str_list, "undefine_macro")),
    "include_path": _each("--include-path", _field_check(_cu.str_list, "include_path", True)),
    "use_bundled_headers": lambda v: ((f"--use-bundled-headers={_bundled_headers_dir()}",)
                                      if v else ()),
    "pre_include": _each("--pre-include", _field_check(_cu.str_list, "pre_include", True)),
    "no_source_include": _flag("--no-source-include"),
    "std": _value("--std"),
    "builtin_move_forward": _tf_flag("--builtin-move-forward"),
    "builtin_initializer_list": _tf_flag("--builtin-initializer-list"),
    "disable_warnings": _flag("--disable-warnings"),
    "restrict": _flag("--restrict"),
    "device_as_default_execution_space": _flag("--device-as-default-execution-space"),
    "device_int128": _flag("--device-int128"),
    "optimization_info": _value("--optimization-info"),
    "no_display_error_number": _flag("--no-display-error-number"),
    "diag_error": _diag("--diag-error", "diag_error"),
    "diag_suppress": _diag("--diag-suppress", "diag_suppress"),
    "diag_warn": _diag("--diag-warn", "diag_warn"),
    "brief_diagnostics": _tf_flag("--brief-diagnostics"),
    "time": _path("--time"),
    "split_compile": _value("--split-compile"),
    "fdevice_syntax_only": _flag("--fdevice-syntax-only"),
    "minimal": _flag("--minimal"),
    "no_cache": _flag("--no-cache"),
    "fdevice_time_trace": _path("--fdevice-time-trace"),
    "device_float128": _flag("--device-float128"),
    "frandom_seed": _value("--frandom-seed"),
    "ofast_compile": _value("--Ofast-compile"),
    "pch": _flag("--pch"),
    "create_pch": _path("--create-pch"),
    "use_pch": _path("--use-pch"),
    "pch_dir": _path("--pch-dir"),
    "pch_verbose": _tf_flag("--pch-verbose"),
    "pch_messages": _tf_flag("--pch-messages"),
    "instantiate_templates_in_pch": _tf_flag("--instantiate-templates-in-pch"),
    "numba_debug": _flag("--numba-debug"),
}


def _nvvm_arch(value: str) -> tuple[str, ...]:
    _, number, suffix = _cu.arch_parts(value)
    return (f"-arch=compute_{number}{suffix}",)  # libNVVM takes virtual archs only


_NVVM_RENDER = {
    "arch": _nvvm_arch,
    "device_code_optimize": _tf_flag("-opt", "3", "0"),
    "debug": _flag("-g"),
    "lineinfo": _flag("-generate-line-info"),
    "ftz": _tf_flag("-ftz", "1", "0"),
    "prec_sqrt": _tf_flag("-prec-sqrt", "1", "0"),
    "prec_div": _tf_flag("-prec-div", "1", "0"),
    "fma": _tf_flag("-fma", "1", "0"),
    "numba_debug": _flag("-numba-debug"),
}
_NVVM_ORDER = ("arch", "device_code_optimize", "debug", "lineinfo", "ftz", "prec_sqrt",
               "prec_div", "fma", "link_time_optimization", "numba_debug")
assert set(_NVRTC_RENDER) == set(_FIELD_ORDER) - {"name", "link_time_optimization"} \
    - _NVRTC_ONLY_EXCLUDED
assert set(_NVVM_RENDER) == _NVVM_FIELDS - {"link_time_optimization", "extra_sources",
                                            "use_libdevice"}

# The cache key: field -> value -> its normalized form (or _SKIP: as if unset); _SKIP in place
# of the function leaves the field out. A field not listed is keyed as it is (its values are
# already canonical: a tri-state bool, a str).
_SKIP = object()
_AS_IS = object()


def _key_flag(value: bool) -> Any:
    return True if value else _SKIP


def _key_str_list(field: str, pathlike: bool = False):
    what = f"{_CLS}.{field}"
    return lambda v: tuple(_cu.str_list(v, what, pathlike))


def _key_extra_sources(value: Any) -> tuple:
    return tuple((name, hashlib.sha256(src).hexdigest()) for name, src in _extra_sources(value))


# The bool fields whose False renders nothing (in NVRTC, NVVM and the linker alike): False
# and unset are one key. The others render False as a flag of its own (``--ftz=false``).
_PRESENCE_FIELDS = frozenset((
    "extensible_whole_program", "debug", "lineinfo", "use_fast_math",
    "extra_device_vectorization", "link_time_optimization", "gen_opt_lto", "use_bundled_headers",
    "no_source_include", "disable_warnings", "restrict", "device_as_default_execution_space",
    "device_int128", "no_display_error_number", "fdevice_syntax_only", "minimal", "no_cache",
    "device_float128", "pch", "numba_debug", "use_libdevice",
))
_KEY_NORM: dict[str, Any] = dict.fromkeys(_PRESENCE_FIELDS, _key_flag)
_KEY_NORM.update({
    "name": lambda v: _SKIP if v == "default_program" else v,
    "arch": _SKIP,
    "ptxas_options": _key_str_list("ptxas_options"),
    "undefine_macro": _key_str_list("undefine_macro"),
    "include_path": _key_str_list("include_path", True),
    "pre_include": _key_str_list("pre_include", True),
    "define_macro": lambda v: tuple(_macro_list(v)),
    "diag_error": lambda v: tuple(_cu.int_list(v, "ProgramOptions.diag_error")),
    "diag_suppress": lambda v: tuple(_cu.int_list(v, "ProgramOptions.diag_suppress")),
    "diag_warn": lambda v: tuple(_cu.int_list(v, "ProgramOptions.diag_warn")),
    "max_register_count": int, "split_compile": int, "frandom_seed": str,
    "std": str.__str__, "optimization_info": str.__str__, "ofast_compile": str.__str__,
    "extra_sources": _key_extra_sources,
})
for _f in ("time", "fdevice_time_trace", "create_pch", "use_pch", "pch_dir"):
    _KEY_NORM[_f] = lambda v: os.fsdecode(os.fspath(v))


# -- Program ------------------------------------------------------------------------------------

def _nvrtc_check(err: Any, what: str, log: str = "") -> None:
    from cuda.bindings import nvrtc

    if err == nvrtc.nvrtcResult.NVRTC_SUCCESS:
        return
    _, text = nvrtc.nvrtcGetErrorString(err)
    text = text.decode() if isinstance(text, bytes) else str(text)
    raise NVRTCError(f"{what} failed: {err.name}" + (f"\n{log}" if log else ""), int(err),
                     err.name, text, log)


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


def _check_code(code: Any, code_type: str) -> str | bytes:
    """The slow path of Program's code check: anything but a non-empty str. Returns the code
    to keep (a bytearray becomes bytes)."""
    if isinstance(code, os.PathLike):
        raise TypeError("Program: code is a path; pass the file's contents instead (for example "
                        "pathlib.Path(p).read_text(), or read_bytes() for NVVM bitcode)")
    data: str | bytes
    if isinstance(code, str):
        data = code
    elif isinstance(code, bytes) or (code_type == "nvvm" and isinstance(code, bytearray)):
        data = bytes(code)
    else:
        kinds = "str, bytes or bytearray" if code_type == "nvvm" else "str or bytes"
        raise TypeError(f"Program: code for code_type {code_type!r} must be {kinds}, not "
                        f"{type(code).__name__}")
    if not data and code_type != "c++":  # an empty C++ file is a valid translation unit
        raise ValueError(f"Program: {code_type} code is empty")
    if code_type != "nvvm" and (b"\0" in data if isinstance(data, bytes) else "\0" in data):
        raise ValueError(f"Program: {code_type} code must not contain NUL characters")
    return data


def _code_bytes(code: str | bytes) -> bytes:
    """The source as the compiler (and the cache key) sees it: a str as UTF-8."""
    if isinstance(code, bytes):
        return code
    try:
        return code.encode()
    except UnicodeEncodeError as exc:
        raise ValueError(f"Program: code is not valid text: {exc}") from None


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


# -- the cache key ------------------------------------------------------------------------------

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


def _cache_key(code: str | bytes, code_type: str, opts: ProgramOptions, arch: str,
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
    return _pc._digest(_code_bytes(code), code_type, target, arch, opts._key_fields(), names,
                       extra_digest)


# -- Program ------------------------------------------------------------------------------------

class _ProgramState:
    """What a Program holds once it is used: the owner of the compiler handle and the lock
    that serializes its use (compile, close). Made on first need (see Program._get_state)."""

    __slots__ = ("lock", "owner", "used", "closed", "pch_status", "code")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        # NvrtcProgram, NvvmProgram, or the Linker of a PTX program: each destroys its handle
        # at close(), or when collected with the Program.
        self.owner: NvrtcProgram | NvvmProgram | Linker | None = None
        self.used = False
        self.closed = False
        self.pch_status: PCHStatusType | None = None
        self.code: bytes | None = None


# Guards only the creation of each Program's _ProgramState (a few instructions, once per
# program): two threads using a new Program at once must end up with the same state.
_STATE_LOCK = threading.Lock()

_CODE_TYPES = {"c++": "c++", "ptx": "ptx", "nvvm": "nvvm"}
_TARGET_OF = {ct: {t: t for t in targets} for ct, targets in _TARGETS.items()}
# The fields that make Program.__init__ look closer at the options (see _check_backend).
_NVRTC_INIT_CHECK = _NVRTC_ONLY_EXCLUDED | {"device_code_optimize"}
_NVVM_ALLOWED = _NVVM_FIELDS | {"name"}
_PTX_ALLOWED = _PTX_FIELDS | {"name"}


class Program:
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
        :meth:`compile`.)
    RuntimeError
        ``arch`` not given and no context current.

    Notes
    -----
    Construction only checks and stores. The program is created with
    ``nvrtcCreateProgram`` / ``nvvmCreateProgram`` / ``nvJitLinkCreate`` on first use
    (:attr:`handle`, or a :meth:`compile` that is not answered by a cache); :meth:`close`
    (or garbage collection) destroys it.
    """

    __slots__ = ("_source", "_code_type", "_options", "_state", "__weakref__")

    def __init__(self, code: str | bytes | bytearray, code_type: str,
                 options: ProgramOptions | dict | None = None):
        ct = _CODE_TYPES.get(code_type) if type(code_type) is str else None
        if ct is None:
            ct = _cu.enum_value(code_type, "Program: code_type", ("c++", "ptx", "nvvm"),
                                casefold=True)
        if type(code) is not str or not code or ("\0" in code and ct != "nvvm"):
            code = _check_code(code, ct)
        if type(options) is not ProgramOptions:
            options = check_or_create_options(ProgramOptions, options, "Program options")
        d = options.__dict__
        if ct == "c++":
            if not _NVRTC_INIT_CHECK.isdisjoint(d):
                options._check_backend("NVRTC")
        elif not d.keys() <= (_NVVM_ALLOWED if ct == "nvvm" else _PTX_ALLOWED):
            options._check_backend(_BACKEND_OF[ct])
        if "arch" not in d:
            options = copy.copy(options)
            options.__dict__["arch"] = _cu.resolve_arch("ProgramOptions", None)
        self._source = code
        self._code_type = ct
        self._options = options
        self._state: _ProgramState | None = None

    def _get_state(self) -> _ProgramState:
        state = self._state
        if state is None:
            with _STATE_LOCK:
                state = self._state
                if state is None:
                    state = self._state = _ProgramState()
        return state

    def _arch(self) -> str:
        """The options' arch; one unset since construction is filled in again."""
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
            state.code = _code_bytes(self._source)
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
            if state.closed:
                raise RuntimeError("this Program is closed")
            if state.owner is None:
                self._new_handle(state)
            return state.owner.handle

    @property
    def is_closed(self) -> bool:
        state = self._state
        return state is not None and state.closed

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
            state.closed = True
            owner, state.owner = state.owner, None
        if owner is not None:
            owner.close()

    def _check_open(self) -> None:
        if self.is_closed:
            raise RuntimeError("this Program is closed")

    def __repr__(self) -> str:
        state = " closed" if self.is_closed else ""
        return f"<Program {self._options.name!r} {self._code_type}{state}>"

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
        name_expressions : sequence of str, optional
            C++ only: names such as ``"saxpy<float>"`` to instantiate; their lowered names
            fill the result's :attr:`ObjectCode.symbol_mapping`, so that
            ``get_kernel("saxpy<float>")`` works.
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
            expressions for a non-C++ program, ``"cubin"`` with a ``compute_XX`` arch; with
            ``cache``, options a cache key cannot stand for.
        NVRTCError
            Compilation failed; the message and ``log`` hold the compiler's log.

        Notes
        -----
        Calls ``nvrtcCompileProgram`` (``nvrtcAddNameExpression``,
        ``nvrtcGetLoweredName``), ``nvvmCompileProgram`` or ``nvJitLinkComplete``.
        """
        ct = self._code_type
        target = _TARGET_OF[ct].get(target_type) if type(target_type) is str else None
        if target is None:
            target = self._check_target(target_type)
        names: tuple[str, ...]
        if type(name_expressions) is tuple and not name_expressions:
            names = ()
        else:
            names = self._check_name_expressions(name_expressions)
        if logs is not None:
            _cu.check_logs(logs)
        state = self._state
        if state is not None and state.closed:
            raise RuntimeError("this Program is closed")
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
        key = _cache_key(self._source, ct, opts, arch, target, names, None)
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

    def _check_target(self, target_type: Any) -> str:
        ct = self._code_type
        supported = _TARGETS[ct]
        if not isinstance(target_type, str):
            raise TypeError(f"Program.compile(): target_type must be a str, not "
                            f"{type(target_type).__name__}")
        target = str.__str__(target_type).lower()
        if target not in supported:
            raise ValueError(f"Program.compile(): a {ct} program compiles to "
                             f"{', '.join(map(repr, supported))}, not {target_type!r}")
        return target

    def _check_name_expressions(self, name_expressions: Any) -> tuple[str, ...]:
        if isinstance(name_expressions, (str, bytes)):
            raise TypeError("Program.compile(): name_expressions must be a sequence of names, "
                            "not a single str (wrap it: [name])")
        try:
            items = tuple(name_expressions)
        except TypeError:
            raise TypeError(f"Program.compile(): name_expressions must be a sequence of str, "
                            f"not {type(name_expressions).__name__}") from None
        names = []
        for item in items:
            if isinstance(item, bytes):
                item = item.decode()
            if not isinstance(item, str):
                raise TypeError(f"Program.compile(): each name expression must be a str, not "
                                f"{type(item).__name__}")
            if not item or "\0" in item:
                raise ValueError(f"Program.compile(): invalid name expression {item!r}")
            names.append(item)
        if names and self._code_type != "c++":
            raise ValueError(f"Program.compile(): name_expressions apply to C++ programs only, "
                             f"not to {self._code_type}")
        return tuple(names)

    def _compile(self, target: str, names: tuple[str, ...], logs: Any) -> ObjectCode:
        state = self._get_state()
        # The compiler's log, written to ``logs`` once the lock is released: the user's write()
        # must not run under it (it may close this Program).
        log: list[str] = []
        try:
            with state.lock:
                if state.closed:
                    raise RuntimeError("this Program is closed")
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
        prog = state.owner.handle
        if opts.use_bundled_headers and _nvrtc_version() < (13, 3):
            raise RuntimeError(f"ProgramOptions.use_bundled_headers needs NVRTC 13.3 or newer; "
                               f"this NVRTC is {'.'.join(map(str, _nvrtc_version()))}")
        if opts.fdevice_time_trace is not None:
            # NVRTC aborts the whole process when it cannot open the trace file.
            trace = os.path.abspath(os.fspath(opts.fdevice_time_trace))
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
        prog = state.owner.handle
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
            for name, src in _extra_sources(opts.extra_sources):
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
