"""ProgramOptions: the options of :class:`Program`, checked when set, and their tables: the
check of each field, its flags for NVRTC and libNVVM (the linker's come from
:class:`LinkerOptions`), which backend honours it, and its normalized form for the cache key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import operator
import os
import sys
from typing import Any

from cuda_core import _compiler_utils as _cu
from cuda_core._compiler_utils import bool_flag as _tf_flag
from cuda_core._compiler_utils import each_flag as _each
from cuda_core._compiler_utils import path_flag as _path
from cuda_core._compiler_utils import switch_flag as _flag
from cuda_core._compiler_utils import value_flag as _value
from cuda_core._checks import ArgumentTypeError, check_bool, check_enum, check_int
from cuda_core._enum import StrEnum as _StrEnum
from cuda_core._linker import (CompilerBackendType, LinkerOptions, compiler_check_arch,
                               compiler_check_int, refused_by_compiler)
from cuda_core._options import check_or_create_options

__all__ = ["ProgramOptions"]

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

class SourceCodeType(_StrEnum):
    """The language of :class:`cuda_core.Program` input."""

    CXX = "c++"
    PTX = "ptx"
    NVVM = "nvvm"


class PCHStatusType(_StrEnum):
    """What became of a precompiled header that NVRTC was asked to create
    (``Program.pch_status``)."""

    CREATED = "created"
    NOT_ATTEMPTED = "not_attempted"
    FAILED = "failed"


# Targets per source language, in the order error messages list them.
TARGETS = {"c++": ("ptx", "cubin", "ltoir"), "nvvm": ("ptx", "ltoir"), "ptx": ("cubin", "ptx")}
BACKEND_OF = {"c++": "NVRTC", "nvvm": "NVVM", "ptx": "nvJitLink"}
CODE_TYPES = ("c++", "ptx", "nvvm")
_TARGET_OF = {ct: {t: t for t in targets} for ct, targets in TARGETS.items()}


class CodeTypeError(ValueError, RuntimeError):
    """A code type ``Program`` does not compile: a ``ValueError``, as ours are, and a
    ``RuntimeError``, cuda.core's class there."""


class CodeTypeArgumentError(ArgumentTypeError, RuntimeError):
    """A ``code_type`` that is not a str: a ``TypeError``, as ours are, and the
    ``RuntimeError`` cuda.core raises for any code type it does not know."""


def _user_cache_dir() -> str:
    """The root of every folder cuda_core writes by default (the program cache, NVRTC's bundled
    headers): ``$XDG_CACHE_HOME/cuda-python``, where an unset, empty or relative value (which
    the XDG spec says to ignore) means ``~/.cache``; on Windows
    ``%LOCALAPPDATA%\\cuda-python`` (``~\\AppData\\Local`` when unset or empty)."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(
            os.path.expanduser("~"), "AppData", "Local")
    else:
        base = os.environ.get("XDG_CACHE_HOME", "")
        if not os.path.isabs(base):
            base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cuda-python")


def _bundled_headers_dir() -> str:
    major, minor = _cu.nvrtc_version()
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
        items = list(value)  # empty: no macro, as None
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


def extra_source_list(value: Any) -> list[tuple[str, bytes]]:
    cls, field = "ProgramOptions", "extra_sources"
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):  # empty: no extra source, as None
        raise TypeError(f"{cls}.{field} must be a sequence of (name, source) pairs, "
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
        [``-arch=``, as cuda.core renders it; NVVM ``-arch=compute_XX``; nvJitLink
        ``-arch=``]. Defaults
        to the device of the current context; where none is current it must be given.
    relocatable_device_code : bool [``--relocatable-device-code=``]
    extensible_whole_program : bool [``--extensible-whole-program``]
    debug : bool [``--device-debug``; NVVM/nvJitLink ``-g``]
    lineinfo : bool [``--generate-line-info``; NVVM ``-generate-line-info``; nvJitLink ``-lineinfo``]
    device_code_optimize : bool [``--dopt=on``; NVVM ``-opt=3|0``; nvJitLink ``-O3|-O0``]
        NVRTC takes only True; False is a ValueError there (``debug=True`` turns device
        optimization off).
    ptxas_options : str or list of str [``--ptxas-options=``; nvJitLink ``-Xptxas=``]
    max_register_count : int [``--maxrregcount=``; nvJitLink ``-maxrregcount=``]: 0 or less
        is no limit.
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
        [``--diag-error=``, ``--diag-suppress=``, ``--diag-warn=``, comma-separated]. A
        number may be a str of its digits (``"1"``, ``["12", 34]``); a bare str of more than
        one character is refused (cuda.core would take each character as a number).
    brief_diagnostics : bool [``--brief-diagnostics=``]
    time : str or path-like [``--time=``]: a CSV file for per-phase timings. This and the
        other file fields (``fdevice_time_trace``, ``create_pch``, ``use_pch``, ``pch_dir``)
        take an int as its decimal str (a file named ``1``), as cuda.core writes it.
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
        """The fields set to something other than None, False or an empty sequence (none, as
        for cuda.core), ``name`` aside, in field order."""
        d = self.__dict__
        return [f for f in _FIELD_ORDER if f != "name" and f in d and d[f] is not False
                and not (type(d[f]) in (list, tuple) and not d[f])]

    def _check_backend(self, backend: str) -> None:
        """ValueError for a field the backend cannot honour (``backend`` as in
        ``BACKEND_OF``)."""
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
            Any other value adds nothing, as in cuda.core, which does not check it.

        Returns
        -------
        list of bytes
            ``arch`` is rendered only when set (``Program`` fills it in from the current
            device).

        Raises
        ------
        ValueError
            An unknown backend, or a field the backend cannot honour.
        """
        which = check_enum(backend, "ProgramOptions.as_bytes(): backend",
                           ("NVRTC", "NVVM", "nvJitLink", "driver"), casefold=True)
        if which == "driver":
            raise ValueError("ProgramOptions.as_bytes(): the driver's linker takes no flags; "
                             "backend must be 'nvrtc', 'nvvm' or 'nvjitlink'")
        # The target only decides the LTO flag: no check of it prevents anything (cuda.core
        # takes any value).
        ltoir = isinstance(target_type, str) and target_type.lower() == "ltoir"
        self._check_backend(which)
        if which == "NVRTC":
            flags = self._render(_NVRTC_RENDER, _FIELD_ORDER, ltoir, "--dlink-time-opt")
        elif which == "NVVM":
            flags = self._render(_NVVM_RENDER, _NVVM_ORDER, ltoir, "-gen-lto")
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
    # NVRTC takes an empty program name, as cuda.core passes it.
    "name": lambda v: _cu.check_text(v, "ProgramOptions.name", allow_empty=True),
    # Values cuda.core passes on and the compiler refuses: refused here with the compiler's
    # class (CompilerOptionError, an NVRTCError and nvJitLinkError).
    "arch": lambda v: None if type(v) is str and _cu.arch_ok(v) else compiler_check_arch(
        v, "ProgramOptions.arch"),
    # allow_none: the messages say that None (unset) is allowed too. Any int: NVRTC and
    # nvJitLink take 0 and negative counts (no limit), as cuda.core passes them. Another type
    # is the compiler's refusal (cuda.core renders "x" as --maxrregcount=x).
    "max_register_count": lambda v: compiler_check_int(v, "ProgramOptions.max_register_count",
                                                       None, None, True),
    "split_compile": lambda v: compiler_check_int(v, "ProgramOptions.split_compile", 0, None,
                                                  True),
    "define_macro": refused_by_compiler(_macro_list),
    "frandom_seed": refused_by_compiler(_frandom_seed_check),
    "extra_sources": extra_source_list,
}


def _field_check(check: Any, field: str, *args: Any):
    what = f"ProgramOptions.{field}"
    return lambda v: check(v, what, *args)


for _f in _BOOL_FIELDS:
    _CHECKS[_f] = _field_check(check_bool, _f, True)
_CHECKS["ptxas_options"] = refused_by_compiler(_field_check(_cu.str_list, "ptxas_options"))
# An empty str, or another type that cuda.core formats into the flag (undefine_macro=b"x" is
# --undefine-macro=120): NVRTC refuses them (verified with NVRTC 13), so the compiler's class.
# include_path="" is --include-path=, which NVRTC takes (no path), as cuda.core passes it on.
_CHECKS["undefine_macro"] = refused_by_compiler(_field_check(_cu.str_list, "undefine_macro"))
_CHECKS["include_path"] = refused_by_compiler(_field_check(_cu.str_list, "include_path", True,
                                                           True))
_CHECKS["pre_include"] = refused_by_compiler(_field_check(_cu.str_list, "pre_include", True))
for _f, _choices in (("std", _STD_VALUES), ("optimization_info", _OPTIMIZATION_INFO_VALUES),
                     ("ofast_compile", _OFAST_VALUES)):
    _CHECKS[_f] = refused_by_compiler(_field_check(check_enum, _f, _choices))
for _f in ("diag_error", "diag_suppress", "diag_warn"):
    # cuda.core passes what is not a number on, and NVRTC refuses it.
    _CHECKS[_f] = refused_by_compiler(_field_check(_cu.int_list, _f))
for _f in ("time", "fdevice_time_trace", "create_pch", "use_pch", "pch_dir"):
    # An empty name: NVRTC refuses it. A bool: cuda.core writes a file named True.
    _CHECKS[_f] = refused_by_compiler(_field_check(_cu.check_file_name, _f))
assert set(_CHECKS) == set(_FIELD_ORDER), set(_FIELD_ORDER) ^ set(_CHECKS)

# help(ProgramOptions) and inspect.signature show the fields, as for a generated __init__.
ProgramOptions.__init__.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # read by inspect
    [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    + [inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=f.default,
                         annotation=f.type) for f in dataclasses.fields(ProgramOptions)])


# Rendering: field -> value -> flags. Only set fields are rendered, in field order.
def _nvrtc_device_code_optimize(value: bool) -> tuple[str, ...]:
    if value:
        return ("--dopt=on",)
    raise ValueError("ProgramOptions.device_code_optimize=False cannot be passed to NVRTC, "
                     "which only takes --dopt=on; device code is optimized unless debug=True")


def _diag(flag: str, field: str):
    def render(v: Any) -> tuple[str, ...]:
        numbers = _cu.int_list(v, f"{_CLS}.{field}")
        return (f"{flag}={','.join(map(str, numbers))}",) if numbers else ()
    return render


def _int_value(flag: str):
    """``flag=N`` for an int field (a bool is its int, as for cuda.core)."""
    return lambda v: (f"{flag}={operator.index(v)}",)


_NVRTC_RENDER = {
    "arch": _value("-arch"),  # NVRTC's short spelling, byte for byte cuda.core's
    "relocatable_device_code": _tf_flag("--relocatable-device-code"),
    "extensible_whole_program": _flag("--extensible-whole-program"),
    "debug": _flag("--device-debug"),
    "lineinfo": _flag("--generate-line-info"),
    "device_code_optimize": _nvrtc_device_code_optimize,
    "ptxas_options": _each("--ptxas-options", _field_check(_cu.str_list, "ptxas_options")),
    "max_register_count": _int_value("--maxrregcount"),
    "ftz": _tf_flag("--ftz"),
    "prec_sqrt": _tf_flag("--prec-sqrt"),
    "prec_div": _tf_flag("--prec-div"),
    "fma": _tf_flag("--fmad"),
    "use_fast_math": _flag("--use_fast_math"),
    "extra_device_vectorization": _flag("--extra-device-vectorization"),
    "gen_opt_lto": _flag("--gen-opt-lto"),
    "define_macro": _each("--define-macro", _macro_list),
    "undefine_macro": _each("--undefine-macro", _field_check(_cu.str_list, "undefine_macro")),
    "include_path": _each("--include-path", _field_check(_cu.str_list, "include_path", True,
                                                         True)),
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
    "split_compile": _int_value("--split-compile"),
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


def _key_str_list(field: str, pathlike: bool = False, allow_empty: bool = False):
    what = f"{_CLS}.{field}"
    return lambda v: tuple(_cu.str_list(v, what, pathlike, allow_empty))


def _key_extra_sources(value: Any) -> tuple:
    return tuple((name, hashlib.sha256(src).hexdigest()) for name, src in extra_source_list(value))


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
# The other bool fields by truth value ("yes" and True are one key).
_KEY_NORM.update(dict.fromkeys(set(_BOOL_FIELDS) - _PRESENCE_FIELDS, bool))
_KEY_NORM.update({
    "name": lambda v: _SKIP if v == "default_program" else v,
    "arch": _SKIP,
    "ptxas_options": _key_str_list("ptxas_options"),
    "undefine_macro": _key_str_list("undefine_macro"),
    "include_path": _key_str_list("include_path", True, True),
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
    _KEY_NORM[_f] = _cu.file_name


# The fields that each code type takes without a closer look (_check_backend): what
# check_compile_options tests first, ``PLAIN_FIELDS[code_type].issuperset(options.__dict__)``.
PLAIN_FIELDS = {
    "c++": frozenset(_FIELD_ORDER) - _NVRTC_ONLY_EXCLUDED - {"device_code_optimize"},
    "nvvm": _NVVM_FIELDS | {"name"},
    "ptx": _PTX_FIELDS | {"name"},
}


# The one normaliser of a compile's code type, target and options, for Program and the cache key
# alike: a code type or target in any case, a StrEnum member or a plain str, given back as the
# plain lower-case name; options as a ProgramOptions the code type's backend can honour.

def check_code_type(code_type: Any, what: str) -> str:
    """``"c++"``, ``"ptx"`` or ``"nvvm"``, named in any case."""
    if type(code_type) is str and code_type in _TARGET_OF:
        return code_type
    return check_enum(code_type, what, CODE_TYPES, casefold=True, error=CodeTypeError,
                      type_error=CodeTypeArgumentError)


def check_compile_options(options: Any, code_type: str, what: str) -> ProgramOptions:
    """``options`` (a ProgramOptions, a dict of its fields or None) as a ProgramOptions that
    the backend of ``code_type`` (checked) can honour; a ProgramOptions is given back as it is."""
    if type(options) is not ProgramOptions:
        options = check_or_create_options(ProgramOptions, options, what)
    if not PLAIN_FIELDS[code_type].issuperset(options.__dict__):
        options._check_backend(BACKEND_OF[code_type])
    return options


def check_target(target_type: Any, code_type: str, what: str) -> str:
    """A target ``code_type`` (checked) compiles to, named in any case."""
    target = _TARGET_OF[code_type].get(target_type) if type(target_type) is str else None
    if target is not None:
        return target
    if not isinstance(target_type, str):
        raise ArgumentTypeError(f"{what} must be a str, not {type(target_type).__name__}")
    allowed = TARGETS[code_type]
    folded = str.__str__(target_type).lower()
    if folded in allowed:
        return folded
    raise ValueError(f"{what} {target_type!r} is not supported for code_type {code_type!r}; "
                     f"expected one of {', '.join(map(repr, allowed))}")
