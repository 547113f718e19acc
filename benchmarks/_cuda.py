"""What the GPU benchmark scripts share beside the harness: the driver through cuda.bindings,
its result check, context synchronization and quiet cleanup (the installed
``cuda_core.bench._bindings``), and the floor module of a ``CUDA_CORE_BENCH=1`` build."""

from __future__ import annotations

from _harness import Unavailable

from cuda_core.bench._bindings import check, ctx_sync, driver, quietly

__all__ = ["bench_floor_module", "check", "ctx_sync", "driver", "quietly"]


def bench_floor_module():
    """``cuda_core._bench_floor``, which only a wheel built with ``CUDA_CORE_BENCH=1`` has."""
    try:
        from cuda_core import _bench_floor
    except ImportError:
        raise Unavailable("cuda_core was built without _bench_floor: build it with"
                          " CUDA_CORE_BENCH=1 (benchmarks/README.md)") from None
    return _bench_floor
