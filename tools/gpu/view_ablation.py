"""Where a CuPy array's view spends its time (issue 32, point 4): ours against the producer's
own __dlpack__ call, for a CuPy array (CuPy's current stream is the consumer's, as in
benchmarks/views.py) and for one of our views of it as the producer, in one process, rounds
alternated; the minimum over rounds of the time per call, results dropped at once.
On the GPU machine: python tools/gpu/view_ablation.py"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _loops beside it

import cupy

from _loops import best_times, device_stream, loops
from cuda_core.utils import StridedMemoryView as V

dev, stream, s = device_stream()
cupy.cuda.Stream.from_external(stream).use()  # through __cuda_stream__ (CuPy 14)
x = cupy.zeros(1024, dtype=cupy.float32)
w = V.from_dlpack(x, -1)
MV = (1, 3)
fa = V.from_any_interface
fd = V.from_dlpack

CASES = loops({
    "empty": "pass",
    "floor x s": "x.__dlpack__(stream=s, max_version=MV)",
    "floor x -1": "x.__dlpack__(stream=-1, max_version=MV)",
    "ours any x s": "fa(x, s)",
    "ours any x -1": "fa(x, -1)",
    "ours dl x s": "fd(x, s)",
    "ours dl x -1": "fd(x, -1)",
    "floor w s": "w.__dlpack__(stream=s, max_version=MV)",
    "floor w -1": "w.__dlpack__(stream=-1, max_version=MV)",
    "ours any w s": "fa(w, s)",
    "ours any w -1": "fa(w, -1)",
    "x.__dlpack_device__()": "x.__dlpack_device__()",
}, globals())

best, best_nogc = best_times(CASES, 20000, 12)
for k in CASES:
    print(f"{best[k]:9.1f} ns  (gc off {best_nogc[k]:7.1f})  {k}")
for p in ("x", "w"):
    for st in ("s", "-1"):
        print(f"ours over floor, {p} {st}: any {best[f'ours any {p} {st}'] - best[f'floor {p} {st}']:.1f} ns"
              + (f", from_dlpack {best[f'ours dl {p} {st}'] - best[f'floor {p} {st}']:.1f} ns"
                 if f"ours dl {p} {st}" in best else ""))
