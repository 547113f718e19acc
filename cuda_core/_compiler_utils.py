"""Checks and helpers shared by ProgramOptions, LinkerOptions, Program and Linker (private)."""

from __future__ import annotations

import functools
import os
import re
from typing import Any

# sm_90, compute_90, and the architecture- and family-specific sm_90a / sm_100f forms.
_ARCH_RE = re.compile(r"^(sm|compute)_(\d{2,3})([af]?)$")


def check_bool(cls_name: str, field: str, value: Any) -> None:
    if value is not None and type(value) is not bool:
        raise TypeError(f"{cls_name}.{field} must be a bool or None, not "
                        f"{type(value).__name__}")


def check_int(cls_name: str, field: str, value: Any, low: int, high: int | None = None,
              allowed: tuple[int, ...] | None = None) -> None:
    if value is None:
        return
    if type(value) is bool or not isinstance(value, int):
        raise TypeError(f"{cls_name}.{field} must be an int or None, not {type(value).__name__}")
    if allowed is not None:
        if value not in allowed:
            raise ValueError(f"{cls_name}.{field} must be one of "
                             f"{', '.join(map(str, allowed))}, got {value}")
        return
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"between {low} and {high}"
        raise ValueError(f"{cls_name}.{field} must be {bound}, got {value}")


def _check_text(cls_name: str, field: str, item: Any, pathlike: bool) -> str:
    if pathlike and isinstance(item, os.PathLike):
        item = os.fspath(item)
        if isinstance(item, bytes):
            item = os.fsdecode(item)
    if not isinstance(item, str):
        kinds = "a str or path-like" if pathlike else "a str"
        raise TypeError(f"{cls_name}.{field} must be {kinds} (or a list of them), not "
                        f"{type(item).__name__}")
    if not item:
        raise ValueError(f"{cls_name}.{field} must not be empty")
    if "\0" in item:
        raise ValueError(f"{cls_name}.{field} must not contain NUL characters")
    return item


def check_str(cls_name: str, field: str, value: Any, pathlike: bool = False) -> None:
    if value is not None:
        _check_text(cls_name, field, value, pathlike)


def str_list(cls_name: str, field: str, value: Any, pathlike: bool = False) -> list[str]:
    """``value`` (None, one str, or a list/tuple of str) as a list of str, checked."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError(f"{cls_name}.{field} must not be an empty sequence (use None)")
        return [_check_text(cls_name, field, v, pathlike) for v in value]
    return [_check_text(cls_name, field, value, pathlike)]


def int_list(cls_name: str, field: str, value: Any) -> list[int]:
    if value is None:
        return []
    items = value if isinstance(value, (list, tuple)) else [value]
    if not items:
        raise ValueError(f"{cls_name}.{field} must not be an empty sequence (use None)")
    for v in items:
        if type(v) is bool or not isinstance(v, int):
            raise TypeError(f"{cls_name}.{field} must be an int or a list of ints, not "
                            f"{type(v).__name__}")
        if v < 0:
            raise ValueError(f"{cls_name}.{field} must hold non-negative numbers, got {v}")
    return list(items)


def check_choice(cls_name: str, field: str, value: Any, choices: tuple[str, ...]) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise TypeError(f"{cls_name}.{field} must be a str or None, not {type(value).__name__}")
    if str.__str__(value) not in choices:
        raise ValueError(f"{cls_name}.{field} must be one of {', '.join(map(repr, choices))}, "
                         f"got {value!r}")


@functools.lru_cache(maxsize=128)
def arch_ok(value: str) -> bool:
    """Whether ``value`` (a str) is a valid arch string; remembered, as a program uses few."""
    return _ARCH_RE.match(value) is not None


def check_arch(cls_name: str, value: Any) -> None:
    if value is None or (type(value) is str and arch_ok(value)):
        return
    if not isinstance(value, str):
        raise TypeError(f"{cls_name}.arch must be a str such as 'sm_90' or 'compute_90', not "
                        f"{type(value).__name__}")
    if not _ARCH_RE.match(value):
        hint = f" (did you mean 'sm_{value}'?)" if value.isdigit() else ""
        raise ValueError(f"{cls_name}.arch must look like 'sm_XX' or 'compute_XX' (e.g. "
                         f"'sm_90', 'compute_90', 'sm_90a'), got {value!r}{hint}")


def arch_parts(arch: str) -> tuple[str, int, str]:
    """``("sm" | "compute", number, suffix)`` of a checked arch string."""
    m = _ARCH_RE.match(arch)
    assert m is not None, arch
    return m.group(1), int(m.group(2)), m.group(3)


def enum_value(value: Any, what: str, choices: tuple[str, ...], casefold: bool = False) -> str:
    """The plain string of a StrEnum member or str, checked against ``choices``."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    text = str.__str__(value)
    if casefold:
        for choice in choices:
            if choice.lower() == text.lower():
                return choice
    elif text in choices:
        return text
    raise ValueError(f"{what} must be one of {', '.join(map(repr, choices))}, got {value!r}")


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
