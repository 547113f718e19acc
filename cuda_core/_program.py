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
import os
import threading
import weakref
from typing import Any

from cuda_core import _compiler_utils as _cu
from cuda_core._errors import NVRTCError
from cuda_core._linker import Linker, LinkerOptions
from cuda_core._module import ObjectCode
from cuda_core._options import check_or_create_options
from cuda_core.typing import CompilerBackendType, PCHStatusType

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


def _tf(value: bool) -> str:
    return "true" if value else "false"


def _user_cache_dir() -> str:
    """``$XDG_CACHE_HOME/cuda-python`` (``~/.cache/cuda-python``; ``%LOCALAPPDATA%`` on
    Windows)."""
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser(r"~\AppData\Local")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "cuda-python")


def _nvrtc_version() -> tuple[int, int]:
    from cuda.bindings import nvrtc

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
            name = _cu._check_text(cls, field, item[0], False)
            if not isinstance(item[1], str):
                raise TypeError(f"{cls}.{field}: the value of macro {name!r} must be a str, not "
                                f"{type(item[1]).__name__}")
            if "\0" in item[1]:
                raise ValueError(f"{cls}.{field} must not contain NUL characters")
            out.append(f"{name}={item[1]}")
        else:
            out.append(_cu._check_text(cls, field, item, False))
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
        name = _cu._check_text(cls, field, item[0], False)
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
    pass": the compiler's own default applies. Fields are checked when the object is made; a
    field the chosen backend cannot honour is a ValueError at ``Program(...)``.

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

    def __post_init__(self):
        cls = "ProgramOptions"
        if self.name is None:
            self.name = "default_program"
        _cu.check_str(cls, "name", self.name)
        _cu.check_arch(cls, self.arch)
        for field in _BOOL_FIELDS:
            _cu.check_bool(cls, field, getattr(self, field))
        _cu.check_int(cls, "max_register_count", self.max_register_count, 1)
        _cu.check_int(cls, "split_compile", self.split_compile, 0)
        _cu.str_list(cls, "ptxas_options", self.ptxas_options)
        _cu.str_list(cls, "undefine_macro", self.undefine_macro)
        _cu.str_list(cls, "include_path", self.include_path, pathlike=True)
        _cu.str_list(cls, "pre_include", self.pre_include, pathlike=True)
        _macro_list(self.define_macro)
        _cu.check_choice(cls, "std", self.std, _STD_VALUES)
        _cu.check_choice(cls, "optimization_info", self.optimization_info,
                         _OPTIMIZATION_INFO_VALUES)
        _cu.check_choice(cls, "ofast_compile", self.ofast_compile, _OFAST_VALUES)
        for field in ("diag_error", "diag_suppress", "diag_warn"):
            _cu.int_list(cls, field, getattr(self, field))
        for field in ("time", "fdevice_time_trace", "create_pch", "use_pch", "pch_dir"):
            _cu.check_str(cls, field, getattr(self, field), pathlike=True)
        if self.frandom_seed is not None:
            if type(self.frandom_seed) is bool or not isinstance(self.frandom_seed, (str, int)):
                raise TypeError(f"{cls}.frandom_seed must be a str or int, not "
                                f"{type(self.frandom_seed).__name__}")
            if isinstance(self.frandom_seed, str):
                _cu.check_str(cls, "frandom_seed", self.frandom_seed)
        _extra_sources(self.extra_sources)

    # -- rendering --------------------------------------------------------------------------

    def _set_fields(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self)
                if f.name != "name" and getattr(self, f.name) not in (None, False)]

    def _check_backend(self, backend: str) -> None:
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
            flags = self._nvrtc_flags(target_type)
        elif which == "NVVM":
            flags = self._nvvm_flags(target_type)
        else:
            flags = self._linker_options()._nvjitlink_flags()
        return [flag.encode() for flag in flags]

    def _nvrtc_flags(self, target_type: str | None) -> list[str]:
        cls = "ProgramOptions"
        f: list[str] = []
        if self.arch is not None:
            f.append(f"--gpu-architecture={self.arch}")
        if self.relocatable_device_code is not None:
            f.append(f"--relocatable-device-code={_tf(self.relocatable_device_code)}")
        if self.extensible_whole_program:
            f.append("--extensible-whole-program")
        if self.debug:
            f.append("--device-debug")
        if self.lineinfo:
            f.append("--generate-line-info")
        if self.device_code_optimize:
            f.append("--dopt=on")
        elif self.device_code_optimize is not None:
            # NVRTC takes --dopt=on only: device code is optimized unless -G is given.
            raise ValueError("ProgramOptions.device_code_optimize=False cannot be passed to "
                             "NVRTC, which only takes --dopt=on; device code is optimized "
                             "unless debug=True")
        f += [f"--ptxas-options={o}" for o in _cu.str_list(cls, "ptxas_options",
                                                            self.ptxas_options)]
        if self.max_register_count is not None:
            f.append(f"--maxrregcount={self.max_register_count}")
        for field, flag in (("ftz", "--ftz"), ("prec_sqrt", "--prec-sqrt"),
                            ("prec_div", "--prec-div"), ("fma", "--fmad")):
            value = getattr(self, field)
            if value is not None:
                f.append(f"{flag}={_tf(value)}")
        if self.use_fast_math:
            f.append("--use_fast_math")
        if self.extra_device_vectorization:
            f.append("--extra-device-vectorization")
        if self.link_time_optimization or target_type == "ltoir":
            f.append("--dlink-time-opt")
        if self.gen_opt_lto:
            f.append("--gen-opt-lto")
        f += [f"--define-macro={m}" for m in _macro_list(self.define_macro)]
        f += [f"--undefine-macro={m}" for m in _cu.str_list(cls, "undefine_macro",
                                                             self.undefine_macro)]
        f += [f"--include-path={p}" for p in _cu.str_list(cls, "include_path", self.include_path,
                                                           pathlike=True)]
        if self.use_bundled_headers:
            f.append(f"--use-bundled-headers={_bundled_headers_dir()}")
        f += [f"--pre-include={p}" for p in _cu.str_list(cls, "pre_include", self.pre_include,
                                                          pathlike=True)]
        if self.no_source_include:
            f.append("--no-source-include")
        if self.std is not None:
            f.append(f"--std={self.std}")
        if self.builtin_move_forward is not None:
            f.append(f"--builtin-move-forward={_tf(self.builtin_move_forward)}")
        if self.builtin_initializer_list is not None:
            f.append(f"--builtin-initializer-list={_tf(self.builtin_initializer_list)}")
        if self.disable_warnings:
            f.append("--disable-warnings")
        if self.restrict:
            f.append("--restrict")
        if self.device_as_default_execution_space:
            f.append("--device-as-default-execution-space")
        if self.device_int128:
            f.append("--device-int128")
        if self.optimization_info is not None:
            f.append(f"--optimization-info={self.optimization_info}")
        if self.no_display_error_number:
            f.append("--no-display-error-number")
        for field, flag in (("diag_error", "--diag-error"), ("diag_suppress", "--diag-suppress"),
                            ("diag_warn", "--diag-warn")):
            numbers = _cu.int_list(cls, field, getattr(self, field))
            if numbers:
                f.append(f"{flag}={','.join(map(str, numbers))}")
        if self.brief_diagnostics is not None:
            f.append(f"--brief-diagnostics={_tf(self.brief_diagnostics)}")
        if self.time is not None:
            f.append(f"--time={os.fspath(self.time)}")
        if self.split_compile is not None:
            f.append(f"--split-compile={self.split_compile}")
        if self.fdevice_syntax_only:
            f.append("--fdevice-syntax-only")
        if self.minimal:
            f.append("--minimal")
        if self.no_cache:
            f.append("--no-cache")
        if self.fdevice_time_trace is not None:
            f.append(f"--fdevice-time-trace={os.fspath(self.fdevice_time_trace)}")
        if self.device_float128:
            f.append("--device-float128")
        if self.frandom_seed is not None:
            f.append(f"--frandom-seed={self.frandom_seed}")
        if self.ofast_compile is not None:
            f.append(f"--Ofast-compile={self.ofast_compile}")
        if self.pch:
            f.append("--pch")
        if self.create_pch is not None:
            f.append(f"--create-pch={os.fspath(self.create_pch)}")
        if self.use_pch is not None:
            f.append(f"--use-pch={os.fspath(self.use_pch)}")
        if self.pch_dir is not None:
            f.append(f"--pch-dir={os.fspath(self.pch_dir)}")
        if self.pch_verbose is not None:
            f.append(f"--pch-verbose={_tf(self.pch_verbose)}")
        if self.pch_messages is not None:
            f.append(f"--pch-messages={_tf(self.pch_messages)}")
        if self.instantiate_templates_in_pch is not None:
            f.append(f"--instantiate-templates-in-pch={_tf(self.instantiate_templates_in_pch)}")
        if self.numba_debug:
            f.append("--numba-debug")
        return f

    def _nvvm_flags(self, target_type: str | None) -> list[str]:
        f: list[str] = []
        if self.arch is not None:
            _, number, suffix = _cu.arch_parts(self.arch)
            f.append(f"-arch=compute_{number}{suffix}")  # libNVVM takes virtual archs only
        if self.device_code_optimize is not None:
            f.append(f"-opt={3 if self.device_code_optimize else 0}")
        if self.debug:
            f.append("-g")
        if self.lineinfo:
            f.append("-generate-line-info")
        for field, flag in (("ftz", "-ftz"), ("prec_sqrt", "-prec-sqrt"),
                            ("prec_div", "-prec-div"), ("fma", "-fma")):
            value = getattr(self, field)
            if value is not None:
                f.append(f"{flag}={int(value)}")
        if self.link_time_optimization or target_type == "ltoir":
            f.append("-gen-lto")
        if self.numba_debug:
            f.append("-numba-debug")
        return f

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


def _destroy_nvrtc(prog: Any) -> None:
    try:
        from cuda.bindings import nvrtc

        nvrtc.nvrtcDestroyProgram(prog)
    except BaseException:  # a finalizer never raises
        pass


def _destroy_nvvm(prog: int) -> None:
    try:
        from cuda.bindings import nvvm

        nvvm.destroy_program(prog)
    except BaseException:
        pass


def _normalize_code(code: Any, code_type: str) -> bytes:
    if isinstance(code, os.PathLike):
        raise TypeError("Program: code is a path; pass the file's contents instead (for example "
                        "pathlib.Path(p).read_text(), or read_bytes() for NVVM bitcode)")
    if isinstance(code, str):
        data = code.encode()
    elif isinstance(code, bytes) or (code_type == "nvvm" and isinstance(code, bytearray)):
        data = bytes(code)
    else:
        kinds = "str, bytes or bytearray" if code_type == "nvvm" else "str or bytes"
        raise TypeError(f"Program: code for code_type {code_type!r} must be {kinds}, not "
                        f"{type(code).__name__}")
    if not data:
        raise ValueError("Program: code is empty")
    if code_type != "nvvm" and b"\0" in data:
        raise ValueError(f"Program: {code_type} code must not contain NUL characters")
    return data


def _object_code_from_cache(hit: Any, target: str, name: str, has_names: bool) -> ObjectCode | None:
    if isinstance(hit, ObjectCode):
        return hit
    if isinstance(hit, (bytes, bytearray, memoryview)):
        if has_names:  # raw bytes lost the symbol mapping: compile again
            return None
        return ObjectCode._init(bytes(hit), target, name=name)
    raise TypeError(f"Program.compile(): the cache returned a {type(hit).__name__}; expected an "
                    f"ObjectCode or bytes")


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
        ``arch`` defaults to the device of the current context.

    Raises
    ------
    TypeError, ValueError
        Bad code, code type or options; an option the backend cannot honour.
    RuntimeError
        ``arch`` not given and no context current.

    .. note:: Creates the program with ``nvrtcCreateProgram`` / ``nvvmCreateProgram`` /
       ``nvJitLinkCreate`` on first use (:attr:`handle` or a :meth:`compile` that is not
       answered by a cache); :meth:`close` (or garbage collection) destroys it.
    """

    __slots__ = ("_source", "_code", "_code_type", "_options", "_handle", "_finalizer",
                 "_used", "_closed", "_linker", "_pch_status", "_lock", "__weakref__")

    def __init__(self, code: str | bytes | bytearray, code_type: str,
                 options: ProgramOptions | dict | None = None):
        self._finalizer = None
        self._handle = None
        self._linker = None
        self._used = False
        self._closed = False
        self._pch_status = None
        self._lock = threading.Lock()
        self._code_type = ct = _cu.enum_value(code_type, "Program: code_type",
                                              ("c++", "ptx", "nvvm"), casefold=True)
        self._code = _normalize_code(code, ct)
        self._source = code if isinstance(code, (str, bytes)) else bytes(code)
        opts = check_or_create_options(ProgramOptions, options, "Program options")
        opts.as_bytes(_BACKEND_OF[ct])  # a field the backend cannot honour fails here, not later
        arch = _cu.resolve_arch("ProgramOptions", opts.arch)
        if arch != opts.arch:
            opts = copy.copy(opts)
            opts.arch = arch
        self._options = opts
        # The compiler handle is made on first use (handle or compile), so that a program
        # answered from a cache never loads the compiler.

    def _new_handle(self) -> None:
        """A fresh compiler handle (NVRTC and NVVM programs are compiled once each)."""
        if self._finalizer is not None:
            self._finalizer()
        self._used = False
        ct = self._code_type
        if ct == "c++":
            from cuda.bindings import nvrtc

            err, prog = nvrtc.nvrtcCreateProgram(self._code, self._options.name.encode(), 0, [],
                                                 [])
            _nvrtc_check(err, "nvrtcCreateProgram")
            self._handle = prog
            self._finalizer = weakref.finalize(self, _destroy_nvrtc, prog)
        elif ct == "nvvm":
            from cuda.bindings import nvvm

            prog = nvvm.create_program()
            self._handle = prog
            self._finalizer = weakref.finalize(self, _destroy_nvvm, prog)
        else:
            linker = Linker(ObjectCode._init(self._code, "ptx", name=self._options.name),
                            options=self._options._linker_options())
            self._linker = linker
            self._handle = linker.handle
            self._finalizer = weakref.finalize(self, Linker.close, linker)
        self._finalizer.atexit = False

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
        with self._lock:
            self._check_open()
            if self._handle is None:
                self._new_handle()
            return self._handle

    @property
    def is_closed(self) -> bool:
        return self._closed

    @property
    def pch_status(self) -> PCHStatusType | None:
        """What NVRTC did about a precompiled header at the last :meth:`compile`:
        ``"created"``, ``"not_attempted"`` or ``"failed"``; None when no PCH option was given,
        before the first compile, and for NVVM and PTX programs.

        .. note:: Reads ``nvrtcGetPCHCreateStatus``.
        """
        return self._pch_status

    def close(self) -> None:
        """Destroy the compiler handle; idempotent."""
        self._closed = True
        if self._finalizer is not None:
            self._finalizer()

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
            Keyword-only. Looked up with
            ``cuda_core.utils.make_program_cache_key(code=..., code_type=..., options=...,
            target_type=..., name_expressions=...)`` (``options`` with ``arch`` filled in); a
            hit is returned as is (an ObjectCode keeps its symbol mapping, so name
            expressions work with a cache), a miss compiles and stores ``cache[key] = result``.

        Returns
        -------
        ObjectCode
            Named ``options.name``.

        Raises
        ------
        ValueError
            A target the backend cannot produce (the message names those it can), name
            expressions for a non-C++ program, ``"cubin"`` with a ``compute_XX`` arch.
        NVRTCError
            Compilation failed; the message and ``log`` hold the compiler's log.

        .. note:: Calls ``nvrtcCompileProgram`` (``nvrtcAddNameExpression``,
           ``nvrtcGetLoweredName``), ``nvvmCompileProgram`` or ``nvJitLinkComplete``.
        """
        ct = self._code_type
        supported = _TARGETS[ct]
        if not isinstance(target_type, str):
            raise TypeError(f"Program.compile(): target_type must be a str, not "
                            f"{type(target_type).__name__}")
        target = str.__str__(target_type).lower()
        if target not in supported:
            raise ValueError(f"Program.compile(): a {ct} program compiles to "
                             f"{', '.join(map(repr, supported))}, not {target_type!r}")
        names = self._check_name_expressions(name_expressions)
        _cu.check_logs(logs)
        self._check_open()
        if target == "cubin" and ct != "ptx" and self._options.arch.startswith("compute_"):
            raise ValueError(f"Program.compile('cubin') needs a real architecture: "
                             f"ProgramOptions.arch is {self._options.arch!r}; use "
                             f"'sm_{self._options.arch[8:]}' or compile to 'ptx'")
        if target != "ltoir" and self._options.link_time_optimization and ct != "ptx":
            raise ValueError(f"Program.compile({target!r}): "
                             f"ProgramOptions.link_time_optimization=True makes LTO IR; compile "
                             f"to 'ltoir'")
        if cache is None:
            return self._compile(target, names, logs)
        from cuda_core.utils import make_program_cache_key  # lazy: an optional sub-package

        key = make_program_cache_key(code=self._source, code_type=ct, options=self._options,
                                     target_type=target, name_expressions=names)
        try:
            hit = cache[key]
        except KeyError:
            hit = None
        if hit is not None:
            found = _object_code_from_cache(hit, target, self._options.name, bool(names))
            if found is not None:
                return found
        result = self._compile(target, names, logs)
        cache[key] = result
        return result

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
        with self._lock:
            self._check_open()
            if self._handle is None or self._used:
                self._new_handle()
            self._used = True
            if self._code_type == "c++":
                return self._compile_nvrtc(target, names, logs)
            if self._code_type == "nvvm":
                return self._compile_nvvm(target, logs)
            return self._compile_ptx(target, logs)

    def _compile_nvrtc(self, target: str, names: tuple[str, ...], logs: Any) -> ObjectCode:
        from cuda.bindings import nvrtc

        opts = self._options
        prog = self._handle
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
        _cu.write_log(logs, log)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _nvrtc_check(err, f"NVRTC: compiling {opts.name!r}", log)
        if wants_pch or opts.use_pch is not None:
            status = nvrtc.nvrtcGetPCHCreateStatus(prog)[0]
            if status == nvrtc.nvrtcResult.NVRTC_SUCCESS:
                self._pch_status = PCHStatusType.CREATED
            elif status == nvrtc.nvrtcResult.NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED:
                self._pch_status = PCHStatusType.NOT_ATTEMPTED
            else:
                self._pch_status = PCHStatusType.FAILED
        else:
            self._pch_status = None
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
        return ObjectCode._init(buf, target, name=opts.name, symbol_mapping=mapping)

    def _compile_nvvm(self, target: str, logs: Any) -> ObjectCode:
        from cuda.bindings import nvvm

        opts = self._options
        prog = self._handle

        def program_log() -> str:
            size = nvvm.get_program_log_size(prog)
            if size <= 1:
                return ""
            buf = bytearray(size)
            nvvm.get_program_log(prog, buf)
            return bytes(buf).rstrip(b"\0").decode(errors="replace")

        flags = [f.decode() for f in opts.as_bytes("nvvm", target)]
        try:
            nvvm.add_module_to_program(prog, self._code, len(self._code), opts.name)
            for name, src in _extra_sources(opts.extra_sources):
                nvvm.add_module_to_program(prog, src, len(src), name)
            if opts.use_libdevice:
                libdevice = _libdevice()
                nvvm.lazy_add_module_to_program(prog, libdevice, len(libdevice), "libdevice")
            nvvm.verify_program(prog, len(flags), flags)
            nvvm.compile_program(prog, len(flags), flags)
        except nvvm.nvvmError as exc:
            log = program_log()
            _cu.write_log(logs, log)
            status = getattr(exc, "status", None)
            raise NVRTCError(f"libNVVM: compiling {opts.name!r} failed: {exc}"
                             + (f"\n{log}" if log else ""),
                             None if status is None else int(status), str(exc), None,
                             log) from None
        _cu.write_log(logs, program_log())
        buf = bytearray(nvvm.get_compiled_result_size(prog))
        nvvm.get_compiled_result(prog, buf)
        data = bytes(buf)
        if target == "ptx":
            data = data.rstrip(b"\0")
        return ObjectCode._init(data, target, name=opts.name)

    def _compile_ptx(self, target: str, logs: Any) -> ObjectCode:
        linker = self._linker
        result = linker.link("cubin")
        _cu.write_log(logs, linker.get_info_log())
        if target == "ptx":
            return ObjectCode._init(self._code, "ptx", name=self._options.name)
        return result


def _libdevice() -> bytes:
    try:
        from cuda.pathfinder import find_bitcode_lib

        path = find_bitcode_lib("device")
    except Exception as exc:  # cuda.pathfinder's not-found errors have no common base
        raise RuntimeError(f"ProgramOptions.use_libdevice=True, but libdevice was not found "
                           f"({exc}); install the nvidia-nvvm wheel or set CUDA_HOME") from None
    with open(path, "rb") as f:
        return f.read()
