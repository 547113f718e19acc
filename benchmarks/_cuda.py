"""What the GPU benchmark scripts share beside the harness: the driver through cuda.bindings
(imported when first used, so ``--help`` works anywhere), its result check, the floor module
of a ``CUDA_CORE_BENCH=1`` build, and quiet cleanup on failure paths."""

from __future__ import annotations

from _harness import Unavailable


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


def bench_floor_module():
    """``cuda_core._bench_floor``, which only a wheel built with ``CUDA_CORE_BENCH=1`` has."""
    try:
        from cuda_core import _bench_floor
    except ImportError:
        raise Unavailable("cuda_core was built without _bench_floor: build it with"
                          " CUDA_CORE_BENCH=1 (benchmarks/README.md)") from None
    return _bench_floor


def quietly(fn) -> None:
    """Cleanup on a failure path: the original exception is the one to report."""
    try:
        fn()
    except Exception:
        pass
