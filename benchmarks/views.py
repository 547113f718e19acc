"""StridedMemoryView: the cost of making a view of another library's array, and of a launch that
takes views, for cuda_core (ours) and NVIDIA's cuda.core 1.2 in one process.

    python benchmarks/views.py [harness options]

Cases (rounds alternate between the two libraries; medians per call; target: each
construction at most 0.5x cuda.core's, each launch at most cuda.core's):

* ``CuPy array``, ``PyTorch tensor``: ``from_any_interface(x, stream_ptr)`` (DLPack), with the
  consumer's stream made the producer's current stream first
  (``cupy.cuda.Stream.from_external``, ``ExternalStream`` before CuPy 14;
  ``torch.cuda.ExternalStream``), so that neither producer orders streams with an event inside
  ``__dlpack__``: what is timed is the view, not the producer's synchronization. Then the same
  with ``stream_ptr=-1`` (what numba-cuda's ``typeof`` asks).
* ``CuPy array (CAI)``, ``Numba device array (CAI)``: ``from_cuda_array_interface(x,
  stream_ptr)`` (numba-cuda's ``cuda.to_device`` array reports no stream; CuPy reports its
  current stream, the consumer's, so no event either).
* ``NumPy array``: ``from_dlpack``, ``from_any_interface`` (with ``stream_ptr=-1``) and
  ``from_array_interface``. These need no GPU.
* ``launch(view of ...)``: ``launch(stream, config, kernel, view)`` of an empty kernel taking
  one pointer, each library's own ``launch``, ``Program``-compiled kernel and view of the same
  array, on the same stream (cuda.core's is made from ours through ``__cuda_stream__``); the
  stream is synchronized after each sample, outside the timing. cuda.core 1.2's ``launch``
  refuses a view, so its row passes ``view.ptr``, as its users do. Target: at most cuda.core's
  time (a view argument costs no more than cuda.core's plain pointer).

``producer floor`` (CuPy's DLPack cases and the CAI cases): what the producer itself charges any
consumer, its ``__dlpack__`` export (the capsule freed unconsumed) or its
``__cuda_array_interface__`` dict; ``over producer floor`` is each library's own work.

A peer library that is not installed, or a GPU case on a machine without a GPU, shows ``n/a``.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _harness import (Case, Contender, Prepared, Target, Unavailable, add_arguments,  # noqa: E402
                      device_meta, finish, run_cases)

OURS = "cuda_core"
NVIDIA = "cuda.core"
FLOOR = "producer floor"
RATIO = 0.5
N = 1 << 16

EMPTY_KERNEL = r'extern "C" __global__ void touch(float* p) { }'


class _State:
    """What the GPU cases share: one stream (ours) and, per library, the empty kernel."""

    gpu_error: str | None = None
    stream = None
    kernels: dict = {}


STATE = _State()


def _lib(name):
    """``(StridedMemoryView, core module)`` of one library."""
    import warnings

    if name == OURS:
        import cuda_core as core
        from cuda_core.utils import StridedMemoryView
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import cuda.core as core
            from cuda.core.utils import StridedMemoryView
    return StridedMemoryView, core


def _need_gpu():
    if STATE.gpu_error is not None:
        raise Unavailable(STATE.gpu_error)


def _stream_ptr():
    return int(STATE.stream.handle)


# -- producers -------------------------------------------------------------------------------

def _cupy_array():
    _need_gpu()
    import cupy as cp

    # The consumer's stream becomes CuPy's current one: __dlpack__ and the CAI's 'stream' then
    # name the same stream, and no event is recorded by either side. CuPy 14 takes our Stream
    # through __cuda_stream__ (and deprecates ExternalStream).
    from_external = getattr(cp.cuda.Stream, "from_external", None)
    (from_external(STATE.stream) if from_external else
     cp.cuda.ExternalStream(_stream_ptr())).use()
    return cp.zeros(N, dtype=cp.float32)


def _torch_tensor():
    _need_gpu()
    import torch

    torch.cuda.set_stream(torch.cuda.ExternalStream(_stream_ptr()))
    return torch.zeros(N, dtype=torch.float32, device="cuda:0")


def _numba_array():
    _need_gpu()
    import numpy as np
    from numba import cuda as numba_cuda

    return numba_cuda.to_device(np.zeros(N, dtype=np.float32))


def _numpy_array():
    import numpy as np

    return np.zeros((64, 64), dtype=np.float32)


PRODUCERS = {
    "CuPy array": (_cupy_array, "cupy"),
    "PyTorch tensor": (_torch_tensor, "torch"),
    "Numba device array": (_numba_array, "numba.cuda"),
    "NumPy array": (_numpy_array, "numpy"),
}


# -- cases -----------------------------------------------------------------------------------

def _view_setup(lib, producer, method, stream):
    def setup():
        SMV, _ = _lib(lib)
        x = PRODUCERS[producer][0]()
        s = _stream_ptr() if stream == "stream" else -1
        return {"f": getattr(SMV, method), "x": x, "s": s}
    return setup


def _launch_setup(lib, producer, method):
    def setup():
        _need_gpu()
        SMV, core = _lib(lib)
        x = PRODUCERS[producer][0]()
        kernel = STATE.kernels.get(lib)
        if kernel is None:
            dev = core.Device(0)
            dev.set_current()
            opts = core.ProgramOptions(arch=f"sm_{dev.arch}")
            kernel = core.Program(EMPTY_KERNEL, "c++", options=opts).compile(
                "cubin").get_kernel("touch")
            STATE.kernels[lib] = kernel
        if lib == OURS:
            stream = STATE.stream
        else:
            stream = core.Device(0).create_stream(STATE.stream)  # through __cuda_stream__
        view = getattr(SMV, method)(x, stream_ptr=_stream_ptr())
        names = {"launch": core.launch, "s": stream, "cfg": core.LaunchConfig(grid=1, block=32),
                 "k": kernel, "v": view, "x": x}
        return Prepared(names, after_sample=STATE.stream.sync)
    return setup


def _pair(name, make, stmt, requires, note="", nvidia_stmt=None, floor_stmt=None):
    contenders = [
        Contender(OURS, setup=make(OURS), stmt=stmt, requires=requires),
        Contender(NVIDIA, setup=make(NVIDIA), stmt=nvidia_stmt or stmt,
                  requires=("cuda.core", *requires)),
    ]
    if floor_stmt is not None:
        contenders.append(Contender(FLOOR, setup=make(OURS), stmt=floor_stmt, requires=requires))
    return Case(name, contenders, note=note)


# What the producer charges whichever library consumes its array: the DLPack export (a
# capsule, freed unconsumed, so that the producer's deleter runs as it does under a view) or
# the CUDA Array Interface dict. A consumer cannot go below it; only the DLPack producers
# that a view asks through __dlpack__ (CuPy; PyTorch's tensors go through the C exchange API
# and NumPy's are read in place) and the CAI ones get this row.
_FLOORS = {
    ("CuPy array", "from_any_interface"): "x.__dlpack__(stream=s, max_version=(1, 3))",
    ("CuPy array", "from_cuda_array_interface"): "x.__cuda_array_interface__",
    ("Numba device array", "from_cuda_array_interface"): "x.__cuda_array_interface__",
    ("Numba device array", "from_any_interface"): "x.__cuda_array_interface__",
}


def cases() -> list[Case]:
    out = []
    for producer, method, stream in (
            ("CuPy array", "from_any_interface", "stream"),
            ("CuPy array", "from_any_interface", "-1"),
            ("CuPy array", "from_cuda_array_interface", "stream"),
            ("PyTorch tensor", "from_any_interface", "stream"),
            ("PyTorch tensor", "from_any_interface", "-1"),
            ("Numba device array", "from_cuda_array_interface", "stream"),
            ("Numba device array", "from_any_interface", "-1"),
            ("NumPy array", "from_dlpack", "-1"),
            ("NumPy array", "from_any_interface", "-1"),
    ):
        requires = (PRODUCERS[producer][1],)
        label = "stream_ptr=-1" if stream == "-1" else "consumer stream"
        out.append(_pair(f"{producer}: {method} ({label})",
                         lambda lib, p=producer, m=method, s=stream: _view_setup(lib, p, m, s),
                         "f(x, s)", requires, floor_stmt=_FLOORS.get((producer, method))))
    out.append(_pair("NumPy array: from_array_interface",
                     lambda lib: (lambda: {"f": _lib(lib)[0].from_array_interface,
                                           "x": _numpy_array()}),
                     "f(x)", ("numpy",)))
    for producer, method in (("CuPy array", "from_dlpack"),
                             ("PyTorch tensor", "from_dlpack"),
                             ("Numba device array", "from_cuda_array_interface")):
        out.append(_pair(f"launch(view of {producer})",
                         lambda lib, p=producer, m=method: _launch_setup(lib, p, m),
                         "launch(s, cfg, k, v)", (PRODUCERS[producer][1],),
                         nvidia_stmt="launch(s, cfg, k, v.ptr)",
                         note="an empty kernel taking one pointer; the view made once; "
                              "cuda.core's launch() takes no view, so it is given v.ptr"))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="views.py",
        description="StridedMemoryView construction from CuPy, PyTorch, Numba and NumPy arrays, "
                    "and launch() taking views, cuda_core against NVIDIA's cuda.core; target: "
                    f"each at most {RATIO:g}x cuda.core's.")
    add_arguments(parser)
    args = parser.parse_args(argv)
    from cuda_core import CUDAError

    try:
        meta = device_meta("views.py", ("cuda-core-cy", "cuda-core", "cuda-bindings"),
                           optional=("cupy-cuda13x", "cupy-cuda12x", "torch", "numba-cuda",
                                     "numpy"))
        if meta is None:
            return 1
        import cuda_core

        STATE.stream = cuda_core.Device(0).create_stream()
    except CUDAError as exc:  # no driver or no GPU: the NumPy cases still run
        STATE.gpu_error = f"no GPU: {exc}"
        meta = {"device": f"none ({exc}); GPU cases n/a"}
    all_cases = cases()
    launches = [c.name for c in all_cases if c.name.startswith("launch(")]
    construction = [c.name for c in all_cases if c.name not in launches]
    report = run_cases(all_cases, args, title="StridedMemoryView: construction and launch",
                       subject=OURS, baseline=NVIDIA, floor=FLOOR,
                       target=f"each construction at most {RATIO:g}x cuda.core's, each "
                              f"launch at most cuda.core's", meta=meta,
                       targets=[Target(OURS, NVIDIA, RATIO, cases=construction),
                                Target(OURS, NVIDIA, 1.0, cases=launches)])
    return finish(report, args)


if __name__ == "__main__":
    sys.exit(main())
