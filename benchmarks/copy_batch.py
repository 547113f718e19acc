"""Batched-copy latency benchmark: ``utils.copy_batch`` and ``Buffer.copy_to(options=...)``.

Each case is measured three ways in this one process:

* ``cuda_core``     -- this package, the subject;
* ``cuda.core``     -- NVIDIA's cuda.core 1.2 (the same calls), the baseline;
* ``cuda.bindings`` -- the raw Python bindings, results unchecked inside the loop (checked once
                       in setup): ``cuMemcpyBatchAsync`` with the arrays built once, the floor
                       of what a bindings user pays.

The copies are small (256 B, device to device, on a created stream), so a call costs its
submission, not the bytes; the stream is synchronized after every sample, outside the timing.
With ``copy_to(options=...)`` both packages fall back to ``cuMemcpyAsync`` on a driver older
than CUDA 13.2 (the report names the driver).

Target: none of ours slower than cuda.core's. The report always exits 0 once it ran; it exits
1, with one line, where there is no GPU or driver.

Run on the GPU machine:  bash .gpu/on-gpu.sh python3 benchmarks/copy_batch.py
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _cuda  # noqa: E402
from _harness import (Case, Contender, Prepared, add_arguments, device_meta,  # noqa: E402
                      finish, run_cases, run_script)

OURS = "cuda_core"
NVIDIA = "cuda.core"
RAW = "cuda.bindings"
TARGET = "none of ours slower than cuda.core's"
SIZE = 256
# Calls per sample at most: each queues up to 16 copies, and the driver's queue is finite.
MAX_INNER = 256


def _setup(module, count):
    """``module``'s Device(0) made current, a stream, and ``count`` source and destination
    buffers of SIZE bytes; the same statements for both libraries."""
    dev = importlib.import_module(module).Device(0)
    dev.set_current()
    s = dev.create_stream()
    srcs = [dev.allocate(SIZE, stream=s) for _ in range(count)]
    dsts = [dev.allocate(SIZE, stream=s) for _ in range(count)]
    s.sync()

    def cleanup():
        for b in srcs + dsts:
            b.close(s)
        s.sync()
        s.close()
    return dev, s, srcs, dsts, cleanup


def _ours(count):
    return _setup("cuda_core", count)


def _nvidia(count):
    return _setup("cuda.core", count)


def batch_case(count) -> Case:
    def ours():
        from cuda_core.utils import copy_batch

        _, s, srcs, dsts, cleanup = _ours(count)
        copy_batch(s, srcs, dsts)
        return Prepared({"copy_batch": copy_batch, "s": s, "srcs": srcs, "dsts": dsts},
                        cleanup, s.sync)

    def nvidia():
        from cuda.core.utils import copy_batch

        _, s, srcs, dsts, cleanup = _nvidia(count)
        copy_batch(s, srcs, dsts)
        return Prepared({"copy_batch": copy_batch, "s": s, "srcs": srcs, "dsts": dsts},
                        cleanup, s.sync)

    def raw():
        d = _cuda.driver()
        _, s, srcs, dsts, cleanup = _ours(count)
        attr = d.CUmemcpyAttributes()
        attr.srcAccessOrder = d.CUmemcpySrcAccessOrder.CU_MEMCPY_SRC_ACCESS_ORDER_STREAM
        names = {
            "cuMemcpyBatchAsync": d.cuMemcpyBatchAsync,
            "dp": [d.CUdeviceptr(int(b.handle)) for b in dsts],
            "sp": [d.CUdeviceptr(int(b.handle)) for b in srcs],
            "sizes": [SIZE] * count, "n": count, "attrs": [attr], "idx": [0],
            "st": int(s.handle),
        }
        _cuda.check(d.cuMemcpyBatchAsync(names["dp"], names["sp"], names["sizes"], count,
                                         [attr], [0], 1, names["st"]), "cuMemcpyBatchAsync")
        return Prepared(names, cleanup, s.sync)

    stmt = "copy_batch(s, srcs, dsts)"
    return Case(f"copy_batch, {count} x {SIZE} B", [
        Contender(OURS, setup=ours, stmt=stmt),
        Contender(NVIDIA, setup=nvidia, stmt=stmt, requires=("cuda.core",)),
        Contender(RAW, setup=raw, stmt="cuMemcpyBatchAsync(dp, sp, sizes, n, attrs, idx, 1, st)",
                  requires=("cuda.bindings",)),
    ], note=f"{count} device-to-device copies in one call, default options; raw: "
            f"cuMemcpyBatchAsync with the pointer and attribute lists built once",
        max_inner=MAX_INNER)


def options_case() -> Case:
    def ours():
        from cuda_core.utils import CopyOptions

        _, s, srcs, dsts, cleanup = _ours(1)
        a, b, o = srcs[0], dsts[0], CopyOptions("stream")
        a.copy_to(b, stream=s, options=o)
        return Prepared({"a": a, "b": b, "s": s, "o": o}, cleanup, s.sync)

    def nvidia():
        from cuda.core.utils import CopyOptions

        _, s, srcs, dsts, cleanup = _nvidia(1)
        a, b, o = srcs[0], dsts[0], CopyOptions("stream")
        a.copy_to(b, stream=s, options=o)
        return Prepared({"a": a, "b": b, "s": s, "o": o}, cleanup, s.sync)

    stmt = "a.copy_to(b, stream=s, options=o)"
    return Case(f"copy_to(options=...), {SIZE} B", [
        Contender(OURS, setup=ours, stmt=stmt),
        Contender(NVIDIA, setup=nvidia, stmt=stmt, requires=("cuda.core",)),
    ], note="CopyOptions('stream'): cuMemcpyWithAttributesAsync from CUDA 13.2, else "
            "cuMemcpyAsync", max_inner=4 * MAX_INNER)


CASES = [lambda: batch_case(1), lambda: batch_case(16), options_case]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="copy_batch.py",
        description="Latency of utils.copy_batch (1 and 16 copies) and of Buffer.copy_to with "
                    "CopyOptions: cuda_core (ours) against NVIDIA's cuda.core and the raw "
                    f"cuda.bindings. Target: {TARGET}. Needs a GPU; exits 0 once the report "
                    "is printed.")
    add_arguments(parser)
    args = parser.parse_args(argv)

    meta = device_meta("copy_batch.py", ("cuda-core-cy", "cuda-core", "cuda-bindings"))
    if meta is None:
        return 1

    report = run_cases([make() for make in CASES], args,
                       title="cuda_core batched copies (time per call)",
                       subject=OURS, baseline=NVIDIA, floor=RAW, target=TARGET, meta=meta)
    return finish(report, args)


if __name__ == "__main__":
    run_script(main, "copy_batch.py")
