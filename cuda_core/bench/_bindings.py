"""The driver through cuda.bindings, for the benchmark cases: imported when first used (so
``--help`` works anywhere), its result check, the context synchronization the cases do outside
the timing, and quiet cleanup on failure paths."""

from __future__ import annotations


def driver():
    from cuda.bindings import driver as _driver

    return _driver


def check(result, what: str):
    """Unpack a cuda.bindings ``(err, *values)`` tuple, raising on a failure code."""
    err = result[0]
    if int(err) != 0:
        raise RuntimeError(f"{what} failed: {err!r}")
    values = result[1:]
    return values[0] if len(values) == 1 else values or None


def ctx_sync() -> None:
    check(driver().cuCtxSynchronize(), "cuCtxSynchronize")


def quietly(fn) -> None:
    """Cleanup on a failure path: the original exception is the one to report."""
    try:
        fn()
    except Exception:
        pass
