"""Where a view of a Numba device array spends its time (issue 32, point 4): the CUDA Array
Interface path of ours against the producer's own property, a plain dict producer (our work and
the driver's pointer query, without Numba's property), the same with an empty array (no pointer
query: its null pointer takes the current device), the bare pointer query through cuda.bindings,
and cuda.core's view; in one process, rounds alternated, the minimum over rounds per call.
On the GPU machine: python tools/gpu/cai_ablation.py"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _loops beside it

import numpy as np
from cuda.bindings import driver
from numba import cuda as numba_cuda

from _loops import best_times, device_stream, loops
from cuda_core.utils import StridedMemoryView as V

dev, stream, s = device_stream()
x = numba_cuda.to_device(np.zeros(1024, dtype=np.float32))
d = dict(x.__cuda_array_interface__)
ptr = d["data"][0]


class Plain:  # the interface as a class attribute: no property to evaluate
    __cuda_array_interface__ = d


class Empty:
    __cuda_array_interface__ = dict(d, shape=(0,), data=(0, False))


class Fresh:  # a property that builds a new dict of the same content, as Numba's does
    @property
    def __cuda_array_interface__(self):
        return {"shape": (1024,), "strides": None, "data": (ptr, False), "typestr": "<f4",
                "stream": d.get("stream"), "version": d.get("version", 3)}


p, e, f = Plain(), Empty(), Fresh()
NAME = "__cuda_array_interface__"
fc = V.from_cuda_array_interface
ATTR = driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
try:
    from cuda.core.utils import StridedMemoryView as CV
    cfc = CV.from_cuda_array_interface
except ImportError:
    cfc = None

STMTS = {
    "empty loop": "pass",
    "floor: x.__cuda_array_interface__": "x.__cuda_array_interface__",
    "ours fc(x, s)": "fc(x, s)",
    "ours fc(x, -1)": "fc(x, -1)",
    "ours fc(plain dict, s)": "fc(p, s)",
    "ours fc(empty dict, s)": "fc(e, s)",
    "floor: fresh-dict property": "f.__cuda_array_interface__",
    "ours fc(fresh-dict property, s)": "fc(f, s)",
    "floor through getattr(x, NAME)": "getattr(x, NAME)",
    "bindings cuPointerGetAttribute": "driver.cuPointerGetAttribute(ATTR, ptr)",
    "bindings cuCtxGetDevice": "driver.cuCtxGetDevice()",
}
if cfc is not None:
    STMTS["cuda.core fc(x, s)"] = "cfc(x, s)"
    STMTS["cuda.core fc(plain dict, s)"] = "cfc(p, s)"
CASES = loops(STMTS, globals())
best, best_nogc = best_times(CASES, 5000, 15)
print("CAI keys:", sorted(d), {k: d[k] for k in ("strides", "stream", "version") if k in d})
for k in CASES:
    print(f"CAI {best[k]:9.1f} ns  (gc off {best_nogc[k]:7.1f})  {k}")
print(f"CAI ours over floor {best['ours fc(x, s)'] - best['floor: x.__cuda_array_interface__']:.1f} ns; "
      f"pointer query (plain - empty) {best['ours fc(plain dict, s)'] - best['ours fc(empty dict, s)']:.1f} ns")
