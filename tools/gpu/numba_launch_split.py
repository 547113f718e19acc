"""Where a numba-cuda launch's time goes: in the calls numba makes into cuda.core, or in numba
itself (issue 32, point 3). Run once per side, each in its own process, in the numba client's
environment (tools/gpu/clients.sh sets it up): PEER=control (NVIDIA's cuda.core) or PEER=ours
(CUDA_CORE_COMPAT=1, so that ``cuda.core`` is cuda_core).

Per launch, numba-cuda 0.30.4 calls into cuda.core (its ``dispatcher.py`` and
``cudadrv/driver.py``): ``Stream.from_handle(0)`` when ``k[grid, block]`` is configured (only
once for a preconfigured ``kc = k[grid, block]``), then ``LaunchConfig(grid=, block=,
shmem_size=, is_cooperative=)`` and ``launch(stream, config, kernel, *args)``. The tool times

* the whole launch, ``k[1, 32](arr)`` and ``kc(arr)``;
* each of those calls alone, in a loop, with the very arguments numba passed (captured by
  wrapping numba's ``launch`` for one call),

and prints per form the total, what the cuda.core calls take, and the rest, which is numba's
own work (type dispatch, argument preparation, its launch configuration). The rest bounds what
any cuda.core can achieve: even calls that cost nothing leave it.

    SPLIT <side> <form>: <total> us/launch = cuda.core calls <x> us (<parts>) + numba <y> us
"""

import os
import statistics
import sys
import time

os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
SIDE = os.environ.get("PEER", "control") or "control"
N = 10_000
RUNS = 5


def per_run_us(call, runs=RUNS) -> list[float]:
    """µs per call in each of ``runs`` loops of N calls (the device synchronized after each
    loop, outside the timing)."""
    from numba import cuda

    per = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(N):
            call()
        per.append((time.perf_counter() - t0) / N * 1e6)
        cuda.synchronize()
    return per


def per_call_us(call) -> float:
    """The median of :func:`per_run_us`."""
    return statistics.median(per_run_us(call))


def kernel_and_array():
    """``(k, arr)``: the kernel both tools launch, ``a[i] += 1`` over 32 floats, compiled and
    launched once, and its device array."""
    import numpy as np
    from numba import cuda

    @cuda.jit
    def k(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] += 1.0

    arr = cuda.to_device(np.zeros(32, dtype=np.float32))
    k[1, 32](arr)
    cuda.synchronize()
    return k, arr


def main() -> int:
    from numba import cuda
    from numba.cuda import dispatcher

    import cuda.core as core

    impl = core.Device.__module__
    if SIDE == "ours" and not impl.startswith("cuda_core"):
        print(f"SPLIT {SIDE} FAILED: cuda.core is {impl}: compat mode is not active")
        return 1

    k, arr = kernel_and_array()

    # One launch's call into cuda.core, as numba made it.
    seen = {}
    real = dispatcher.launch

    def recorder(stream, config, kernel, *args):
        seen.update(stream=stream, config=config, kernel=kernel, args=args)
        return real(stream, config, kernel, *args)

    dispatcher.launch = recorder
    try:
        k[1, 32](arr)
    finally:
        dispatcher.launch = real
    cuda.synchronize()
    if not seen:
        print(f"SPLIT {SIDE} FAILED: numba did not call cuda.core's launch")
        return 1
    stream, config, kernel, args = seen["stream"], seen["config"], seen["kernel"], seen["args"]
    LaunchConfig, launch, Stream = core.LaunchConfig, core.launch, core.Stream
    grid, block = tuple(config.grid), tuple(config.block)
    shmem = getattr(config, "shmem_size", 0)
    coop = bool(getattr(config, "is_cooperative", False))

    for _ in range(1000):  # warm-up
        k[1, 32](arr)
    cuda.synchronize()
    configured = k[1, 32]
    total = per_call_us(lambda: k[1, 32](arr))
    total_configured = per_call_us(lambda: configured(arr))
    parts = {
        "Stream.from_handle(0)": per_call_us(lambda: Stream.from_handle(0)),
        "LaunchConfig": per_call_us(lambda: LaunchConfig(grid=grid, block=block,
                                                         shmem_size=shmem,
                                                         is_cooperative=coop)),
        f"launch with {len(args)} args": per_call_us(lambda: launch(stream, config, kernel,
                                                                   *args)),
    }
    kinds = sorted({type(a).__name__ for a in args})
    for form, t, names in (("k[1,32](arr)", total, list(parts)),
                           ("kc(arr)", total_configured, list(parts)[1:])):
        ours = sum(parts[n] for n in names)
        detail = ", ".join(f"{n} {parts[n]:.2f}" for n in names)
        print(f"SPLIT {SIDE} {form}: {t:.2f} us/launch = cuda.core calls {ours:.2f} us "
              f"({detail}) + numba {t - ours:.2f} us ({(t - ours) / t:.0%}); "
              f"argument kinds {kinds}; cuda.core = {impl}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as exc:  # an honest failure: report where this side stops
        first = (str(exc).splitlines() or [""])[0]
        print(f"SPLIT {SIDE} FAILED: {type(exc).__name__}: {first}")
        sys.exit(1)
