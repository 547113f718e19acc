"""Why a numba-cuda launch through one side costs what it does (issue 32, point 3): per run of
N launches of ``k[1, 32](arr)`` its time (a trend shows growth), the Python heap and the
collector's objects before and after (a per-launch leak shows), the collections made, and a
cProfile of the launches by own time. Run per side in the numba client's environment, as
tools/gpu/numba_launch_split.py is (PEER=control or PEER=ours with CUDA_CORE_COMPAT=1)."""

import cProfile
import gc
import os
import pstats
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the split tool beside it

# The split tool's side (PEER), run length, kernel and timing loop.
from numba_launch_split import N, SIDE, kernel_and_array, per_run_us  # noqa: E402

RUNS = 8  # runs of N launches timed one by one


def main() -> int:
    from numba import cuda

    import cuda.core as core

    k, arr = kernel_and_array()
    for _ in range(1000):
        k[1, 32](arr)
    cuda.synchronize()
    gc.collect()
    blocks0, objects0 = sys.getallocatedblocks(), len(gc.get_objects())
    collections0 = [s["collections"] for s in gc.get_stats()]
    runs = per_run_us(lambda: k[1, 32](arr), RUNS)
    collections = [s["collections"] - c for s, c in zip(gc.get_stats(), collections0)]
    gc.collect()
    print(f"PROFILE {SIDE} ({core.Device.__module__}): us per launch by run of {N}: "
          + " ".join(f"{t:.2f}" for t in runs))
    print(f"PROFILE {SIDE}: after {RUNS * N} launches: heap blocks {sys.getallocatedblocks() - blocks0:+d}, "
          f"tracked objects {len(gc.get_objects()) - objects0:+d}, collections by generation "
          f"{collections}, warnings filters {len(warnings.filters)}")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(N):
        k[1, 32](arr)
    prof.disable()
    cuda.synchronize()
    stats = pstats.Stats(prof)
    print(f"PROFILE {SIDE}: top own time over {N} launches (calls, own s, cumulative s)")
    for func, (cc, nc, tt, ct, _) in sorted(stats.stats.items(), key=lambda x: -x[1][2])[:22]:
        where = f"{os.path.basename(func[0])}:{func[1]}({func[2]})"
        print(f"PROFILE {SIDE}:   {nc:7d} {tt:7.3f} {ct:7.3f}  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
