"""Memory benchmarks, one process: allocate + free latency and pinned copy bandwidth.

Cases
-----
alloc+free 256 B, alloc+free 1 MiB
    One stream-ordered allocation from the device's memory pool and its free, per call:
    ``cuda_core`` (``dev.allocate(n, stream=s)`` then ``buf.close(s)``), NVIDIA's ``cuda.core``
    (the same calls), CuPy's default pool (``cupy.cuda.alloc(n)`` then dropping it; not
    stream-ordered, a different design, shown for scale) and the raw ``cuda.bindings`` calls
    ``cuMemAllocFromPoolAsync`` + ``cuMemFreeAsync`` on the same pool (the floor a Python caller
    can reach). Target: ``cuda_core`` no slower than ``cuda.core``.
H2D / D2H copy, 64 MiB, pinned
    ``copy_from``/``copy_to`` between a device buffer and page-locked host memory, against the
    floor of ``cuMemcpyHtoDAsync`` / ``cuMemcpyDtoHAsync`` called in a loop through
    ``cuda.bindings`` (one driver call per copy, bandwidth-bound at this size). Both are timed
    with CUDA events around a batch of copies on the same stream. Target: >= 95% of the floor.

Method: every contender runs in this process. Latency samples time ``--inner`` back-to-back
calls with ``time.perf_counter_ns`` (garbage collector off), after warm-up; the stream is
synchronized between samples, outside the timing. Rounds rotate the order of the contenders.
Reported: the median per call (and the interquartile range) and the ratio to the baseline.

Usage::

    python benchmarks/memory.py [--rounds 21] [--inner 2000] [--copies 20] [--json out.json]

Without a GPU the script prints one line naming the cause and exits 1; otherwise it exits 0
whatever the verdicts (it is a report).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time


def _median_iqr(samples):
    if len(samples) < 2:
        return samples[0], 0.0
    q = statistics.quantiles(samples, n=4, method="inclusive")
    return statistics.median(samples), q[2] - q[0]


def _time_calls(fn, inner):
    gc.disable()
    try:
        start = time.perf_counter_ns()
        for _ in range(inner):
            fn()
        return (time.perf_counter_ns() - start) / inner
    finally:
        gc.enable()


def _latency_contenders(size, dev, stream):
    """name -> (callable doing one allocate + free, sync callable)."""
    from cuda.bindings import driver

    contenders = {}
    s = stream

    def ours():
        buf = dev.allocate(size, stream=s)
        buf.close(s)

    contenders["cuda_core"] = (ours, s.sync)

    try:
        from cuda.core import Device as CoreDevice

        cdev = CoreDevice(dev.device_id)
        cdev.set_current()
        cs = cdev.create_stream()

        def theirs():
            buf = cdev.allocate(size, stream=cs)
            buf.close(cs)

        contenders["cuda.core"] = (theirs, cs.sync)
    except Exception as exc:  # reported, the other contenders still run
        contenders["cuda.core"] = (f"n/a ({type(exc).__name__}: {exc})", None)

    try:
        import cupy

        def cupy_pool():
            cupy.cuda.alloc(size)

        contenders["CuPy pool"] = (cupy_pool, cupy.cuda.Device().synchronize)
    except Exception as exc:
        contenders["CuPy pool"] = (f"n/a ({type(exc).__name__}: {exc})", None)

    pool = dev.memory_resource.handle
    h = int(stream.handle)
    err, p = driver.cuMemAllocFromPoolAsync(size, pool, h)
    assert err == driver.CUresult.CUDA_SUCCESS, err
    driver.cuMemFreeAsync(p, h)
    alloc, free = driver.cuMemAllocFromPoolAsync, driver.cuMemFreeAsync

    def bindings():
        _, ptr = alloc(size, pool, h)
        free(ptr, h)

    contenders["cuda.bindings"] = (bindings, s.sync)
    return contenders


def bench_latency(size, dev, stream, rounds, inner, warmup=2):
    contenders = _latency_contenders(size, dev, stream)
    runnable = [(k, v) for k, v in contenders.items() if not isinstance(v[0], str)]
    samples = {k: [] for k, _ in runnable}
    for r in range(warmup + rounds):
        order = runnable[r % len(runnable):] + runnable[:r % len(runnable)]
        for name, (fn, sync) in order:
            t = _time_calls(fn, inner)
            sync()
            if r >= warmup:
                samples[name].append(t)
    out = {}
    for name, v in contenders.items():
        if isinstance(v[0], str):
            out[name] = {"status": v[0]}
        else:
            med, iqr = _median_iqr(samples[name])
            out[name] = {"status": "ok", "median_ns": med, "iqr_ns": iqr,
                         "samples_ns": samples[name]}
    return out


def bench_copies(nbytes, dev, stream, rounds, copies):
    from cuda.bindings import driver

    from cuda_core import EventOptions, LegacyPinnedMemoryResource

    pinned = LegacyPinnedMemoryResource().allocate(nbytes, stream=stream)
    dbuf = dev.allocate(nbytes, stream=stream)
    dbuf.fill(1, stream=stream)
    pinned.fill(2, stream=stream)
    stream.sync()
    h = int(stream.handle)
    dptr, hptr = dbuf.handle, pinned.handle
    timing = EventOptions(timing_enabled=True)
    h2d, d2h = driver.cuMemcpyHtoDAsync, driver.cuMemcpyDtoHAsync

    def run(body):
        start = stream.record(options=timing)
        for _ in range(copies):
            body()
        end = stream.record(options=timing)
        end.sync()
        return (end - start) / 1e3  # seconds

    bodies = {
        ("H2D", "cuda_core"): lambda: dbuf.copy_from(pinned, stream=stream),
        ("H2D", "floor"): lambda: h2d(dptr, hptr, nbytes, h),
        ("D2H", "cuda_core"): lambda: dbuf.copy_to(pinned, stream=stream),
        ("D2H", "floor"): lambda: d2h(hptr, dptr, nbytes, h),
    }
    samples = {k: [] for k in bodies}
    keys = list(bodies)
    for key in keys:  # warm-up
        run(bodies[key])
    for r in range(rounds):
        for key in keys[r % len(keys):] + keys[:r % len(keys)]:
            seconds = run(bodies[key])
            samples[key].append(copies * nbytes / seconds / 1e9)  # GB/s
    pinned.close(stream)
    dbuf.close(stream)
    stream.sync()
    return {f"{d} {who}": {"median_GBps": statistics.median(v), "samples_GBps": v}
            for (d, who), v in samples.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--inner", type=int, default=2000, help="calls per latency sample")
    parser.add_argument("--copies", type=int, default=20, help="copies per bandwidth sample")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)

    try:
        from cuda_core import Device

        dev = Device(0)
        dev.set_current()
        stream = dev.create_stream()
    except Exception as exc:
        print(f"memory benchmark: cannot run: {type(exc).__name__}: {exc}")
        return 1

    results = {"device": dev.name, "latency": {}, "bandwidth": {}}
    print(f"device: {dev.name}; rounds={args.rounds}, inner={args.inner}, "
          f"copies={args.copies}; medians")
    verdicts = []
    for label, size in (("alloc+free 256 B", 256), ("alloc+free 1 MiB", 1 << 20)):
        res = bench_latency(size, dev, stream, args.rounds, args.inner)
        results["latency"][label] = res
        print(f"\n{label}")
        base = res.get("cuda.core", {}).get("median_ns")
        for name, r in res.items():
            if r["status"] != "ok":
                print(f"  {name:14s} {r['status']}")
                continue
            ratio = f"  x{r['median_ns'] / base:.2f} vs cuda.core" if base else ""
            print(f"  {name:14s} {r['median_ns']:9.0f} ns  (IQR {r['iqr_ns']:.0f}){ratio}")
        if base:
            ours = res["cuda_core"]["median_ns"]
            verdicts.append(f"{label}: cuda_core {ours:.0f} ns vs cuda.core {base:.0f} ns -> "
                            f"{'PASS' if ours <= base else 'FAIL'}")

    bw = bench_copies(64 << 20, dev, stream, args.rounds, args.copies)
    results["bandwidth"] = bw
    print("\ncopy 64 MiB, pinned host memory (GB/s, CUDA events)")
    for d in ("H2D", "D2H"):
        ours, floor = bw[f"{d} cuda_core"]["median_GBps"], bw[f"{d} floor"]["median_GBps"]
        print(f"  {d}: cuda_core {ours:6.2f}   floor {floor:6.2f}   ({ours / floor:.1%})")
        verdicts.append(f"{d} 64 MiB: {ours / floor:.1%} of the floor -> "
                        f"{'PASS' if ours >= 0.95 * floor else 'FAIL'}")
    print("\nTargets:")
    for v in verdicts:
        print(f"  {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    stream.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
