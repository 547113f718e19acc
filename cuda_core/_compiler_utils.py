"""Checks and helpers shared by ProgramOptions, LinkerOptions, Program and Linker (private):
text and list options, arch strings, the current device's arch, logs, NVRTC's status check and
version, and a program's inputs (its source and name expressions, checked once for Program and
the cache key alike) and its source as the compilers see it. Enum-like str arguments go through
``_checks.check_enum`` (with a tuple of the allowed strings).

The checks take the value first, then ``what``, the argument as the message names it
(``"ProgramOptions.include_path"``), as :mod:`cuda_core._checks` does, where bools and ints
are checked.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any

from cuda_core import _compiler_libs as _libs
from cuda_core._checks import check_int
from cuda_core._errors import NVRTCError

# sm_90, compute_90, and the architecture- and family-specific sm_90a / sm_100f forms.
_ARCH_RE = re.compile(r"^(sm|compute)_(\d{2,3})([af]?)$")


def check_text(item: Any, what: str, pathlike: bool = False, allow_empty: bool = False) -> str:
    """``item`` as a non-empty str without NUL (a path-like as its str where ``pathlike``; an
    empty str where ``allow_empty``)."""
    if pathlike and isinstance(item, os.PathLike):
        item = os.fspath(item)
        if isinstance(item, bytes):
            item = os.fsdecode(item)
    if not isinstance(item, str):
        kinds = "a str or path-like" if pathlike else "a str"
        raise TypeError(f"{what} must be {kinds} (or a list of them), not "
                        f"{type(item).__name__}")
    if not item and not allow_empty:
        raise ValueError(f"{what} must not be empty")
    if "\0" in item:
        raise ValueError(f"{what} must not contain NUL characters")
    return item


def str_list(value: Any, what: str, pathlike: bool = False,
             allow_empty: bool = False) -> list[str]:
    """``value`` (None, one str, or a list/tuple of str) as a list of str, checked (an empty
    str only where ``allow_empty``). An empty sequence means none, as None does (cuda.core's
    reading)."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [check_text(v, what, pathlike, allow_empty) for v in value]
    return [check_text(value, what, pathlike, allow_empty)]


def int_list(value: Any, what: str) -> list[int]:
    """``value`` (None, one int, or a list/tuple of ints, each >= 0) as a list of int; a
    number may be a str of its decimal digits, as cuda.core passes it on. An empty sequence
    means none, as None does."""
    if value is None:
        return []
    if isinstance(value, str) and len(value) > 1:
        # cuda.core iterates a bare str: "12" would be the numbers 1 and 2.
        raise ValueError(f"{what}={value!r}: a str is taken character by character, each a "
                         f"number of its own; pass an int or a list ({value!r} -> "
                         f"[{value!r}])")
    items = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for v in items:
        if isinstance(v, str):
            if not (v.isascii() and v.isdigit()):
                raise ValueError(f"{what} must be numbers, got {v!r}")
            v = int(v)
        if not hasattr(v, "__index__"):
            raise TypeError(f"{what} must be an int or a list of ints, not {type(v).__name__}")
        out.append(check_int(v, what, 0))
    return out


def file_name(value: Any) -> str:
    """A file option's value as the file name the compiler gets: a path-like's str, and an
    int as its decimal str (cuda.core formats the value into the flag)."""
    if type(value) is not bool and not isinstance(value, (str, os.PathLike)) \
            and hasattr(type(value), "__index__"):
        return str(check_int(value, "file name"))
    return os.fsdecode(os.fspath(value))


def check_file_name(value: Any, what: str) -> str:
    """A file option: a str or path-like (checked as ``check_text`` does), or an int (a file
    named by its digits, as cuda.core writes it). A bool is refused: cuda.core would write a
    file named ``True``."""
    if type(value) is not bool and not isinstance(value, (str, os.PathLike)) \
            and hasattr(type(value), "__index__"):
        return file_name(value)
    return check_text(value, what, True)


@functools.lru_cache(maxsize=128)
def arch_ok(value: str) -> bool:
    """Whether ``value`` (a str) is a valid arch string; remembered, as a program uses few."""
    return _ARCH_RE.match(value) is not None


def check_arch(value: Any, what: str) -> None:
    """An arch string, or None."""
    if value is None or (type(value) is str and arch_ok(value)):
        return
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str such as 'sm_90' or 'compute_90', not "
                        f"{type(value).__name__}")
    if not _ARCH_RE.match(value):
        hint = f" (did you mean 'sm_{value}'?)" if value.isdigit() else ""
        raise ValueError(f"{what} must look like 'sm_XX' or 'compute_XX' (e.g. "
                         f"'sm_90', 'compute_90', 'sm_90a'), got {value!r}{hint}")


def arch_parts(arch: str) -> tuple[str, int, str]:
    """``("sm" | "compute", number, suffix)`` of a checked arch string."""
    m = _ARCH_RE.match(arch)
    assert m is not None, arch
    return m.group(1), int(m.group(2)), m.group(3)


def current_device_arch() -> str | None:
    """``"sm_XY"`` of the device whose context is current on this thread, or None when no
    context is current (or there is no driver). Never creates a context."""
    try:
        from cuda.bindings import driver
        err, ctx = driver.cuCtxGetCurrent()
    except RuntimeError:  # cuda.bindings could not load libcuda
        return None
    if err != driver.CUresult.CUDA_SUCCESS or int(ctx) == 0:
        return None
    from cuda_core._device import Device

    return "sm_" + Device().arch


def resolve_arch(cls_name: str, arch: str | None) -> str:
    if arch is not None:
        return arch
    found = current_device_arch()
    if found is None:
        raise RuntimeError(
            f"{cls_name}.arch is not set and no CUDA context is current to take it from: pass "
            f"{cls_name}(arch='sm_XX') (e.g. 'sm_90'), or call Device(N).set_current() first")
    return found


def write_log(logs: Any, text: str) -> None:
    if logs is not None and text:
        logs.write(text)


def check_logs(logs: Any) -> None:
    if logs is not None and not callable(getattr(logs, "write", None)):
        raise TypeError(f"logs must be an object with a write() method (e.g. io.StringIO or "
                        f"sys.stderr) or None, not {type(logs).__name__}")


# Rendering an option as flags: a factory's function takes the option's value (set: not None)
# and returns the flags it stands for, as a tuple.

def switch_flag(flag: str):
    """A flag that a true value switches on; False renders nothing."""
    return lambda v: (flag,) if v else ()


def bool_flag(flag: str, true: str = "true", false: str = "false"):
    """``flag=true`` / ``flag=false``."""
    return lambda v: (f"{flag}={true if v else false}",)


def value_flag(flag: str):
    """``flag=value``."""
    return lambda v: (f"{flag}={v}",)


def path_flag(flag: str):
    """``flag=path`` for a str, path-like or int (see ``file_name``)."""
    return lambda v: (f"{flag}={file_name(v)}",)


def each_flag(flag: str, items):
    """``flag=item`` for each of ``items(value)``."""
    return lambda v: tuple(f"{flag}={x}" for x in items(v))


def nvrtc_check(err: Any, what: str, log: str = "") -> None:
    """Raise NVRTCError (``what`` failed, with the compiler's ``log``) unless ``err`` is
    NVRTC_SUCCESS."""
    from cuda.bindings import nvrtc

    if err == nvrtc.nvrtcResult.NVRTC_SUCCESS:
        return
    _, text = nvrtc.nvrtcGetErrorString(err)
    text = text.decode() if isinstance(text, bytes) else str(text)
    raise NVRTCError(f"{what} failed: {err.name}" + (f"\n{log}" if log else ""), int(err),
                     err.name, text, log)


def nvrtc_version() -> tuple[int, int]:
    """``(major, minor)`` of the NVRTC in use (loading it: CUDAError where it is missing)."""
    nvrtc = _libs.nvrtc()
    err, major, minor = nvrtc.nvrtcVersion()
    nvrtc_check(err, "nvrtcVersion")
    return major, minor


def check_code(code: Any, code_type: str, who: str) -> str | bytes:
    """A program's source as ``Program`` keeps it and the cache key hashes it: a str, or bytes
    (from a bytearray too, for NVVM only). What a compile further needs of it is
    ``check_compilable``'s."""
    if isinstance(code, os.PathLike):
        raise TypeError(f"{who}: code is a path; pass the file's contents instead (for example "
                        f"pathlib.Path(p).read_text(), or read_bytes() for NVVM bitcode)")
    if isinstance(code, str):
        return str.__str__(code)
    if isinstance(code, bytes) or (code_type == "nvvm" and isinstance(code, bytearray)):
        return bytes(code)
    kinds = "a str, bytes or bytearray" if code_type == "nvvm" else "a str or bytes"
    raise TypeError(f"{who}: code must be {kinds}, not {type(code).__name__} (for code_type "
                    f"{code_type!r})")


def check_compilable(code: str | bytes, code_type: str, who: str) -> None:
    """What a compile needs of checked code beyond its form: not empty but for C++ (an empty
    translation unit is valid), no NUL characters but for NVVM (bitcode is binary). A cache
    key, which compiles nothing, does not ask this (as cuda.core's does not)."""
    if not code and code_type != "c++":
        raise ValueError(f"{who}: {code_type} code is empty")
    if code_type != "nvvm" and (b"\0" in code if isinstance(code, bytes) else "\0" in code):
        raise ValueError(f"{who}: {code_type} code must not contain NUL characters")


def check_name_expressions(value: Any, who: str) -> tuple[str | bytes, ...]:
    """The name expressions of a compile as ``Program.compile`` and the cache key take them:
    each a str or bytes, kept as given, so that ``"f"`` and ``b"f"`` give different keys, as
    cuda.core's do. What a compile further needs of them is ``compile_names``'."""
    if isinstance(value, (str, bytes, bytearray)):
        raise TypeError(f"{who}: name_expressions must be a sequence of str or bytes, not "
                        f"{type(value).__name__} (wrap a single name: [name])")
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(f"{who}: name_expressions must be a sequence of str or bytes, not "
                        f"{type(value).__name__}") from None
    names: list[str | bytes] = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            names.append(str.__str__(item))
        elif isinstance(item, bytes):
            names.append(bytes(item))
        else:
            raise TypeError(f"{who}: name_expressions[{i}] must be a str or bytes, not "
                            f"{type(item).__name__}")
    return tuple(names)


def compile_names(names: tuple[str | bytes, ...], code_type: str, who: str) -> tuple[str, ...]:
    """Checked name expressions as the compiler and the symbol mapping take them: str (bytes
    as UTF-8), none empty or with NUL, for C++ programs only."""
    texts = []
    for i, name in enumerate(names):
        try:
            text = name.decode() if isinstance(name, bytes) else name
        except UnicodeDecodeError:
            raise ValueError(f"{who}: name_expressions[{i}] is not UTF-8: {name!r}") from None
        if not text or "\0" in text:
            raise ValueError(f"{who}: invalid name expression {name!r} (name_expressions[{i}])")
        texts.append(text)
    if texts and code_type != "c++":
        raise ValueError(f"{who}: name_expressions apply to C++ programs only, not to "
                         f"{code_type}")
    return tuple(texts)


def code_bytes(code: str | bytes) -> bytes:
    """The source as the compiler (and the cache key) sees it: a str as UTF-8."""
    if isinstance(code, bytes):
        return code
    try:
        return code.encode()
    except UnicodeEncodeError as exc:
        raise ValueError(f"Program: code is not valid text: {exc}") from None
