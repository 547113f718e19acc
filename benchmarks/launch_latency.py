"""Launch latency benchmark: the host-side cost of one kernel launch.

Every case launches the same kernels (``SOURCE`` below) with grid 1 and block 1; the kernels
return at once for the timed arguments, so what is measured is the launch call, not GPU work.
The contenders, all in this one process:

* ``cuda_core``             -- this package: ``launch(s, config, kernel, *args)``, the subject;
* ``cuda.core``             -- NVIDIA's cuda.core 1.2, the same call on its own objects;
* ``CuPy``                  -- ``cupy.RawKernel(SOURCE, name)((1,), (1,), args)`` on a CuPy
                               stream of its own;
* ``cuda.bindings``         -- ``driver.cuLaunchKernel`` with a ``void*[]`` of ctypes values
                               packed once in setup (the careful bindings user), result not
                               checked inside the loop (checked once in setup);
* ``cuda.bindings (tuple)`` -- the same with the bindings' documented ``((values), (types))``
                               form, which the bindings pack on every call;
* ``C floor``               -- ``cuLaunchKernelEx`` in a C loop (``cuda_core._bench_floor``,
                               built with the package) on our stream, the kernel handle our
                               launch passes (its CUfunction in the stream's context) and the
                               argument bytes our param holder packs: the driver call alone;
* ``Python floor``          -- ``_bench_floor.python_floor``: called exactly as ours is (the
                               same statement and argument objects), it releases the GIL around
                               the C floor's prepared cuLaunchKernelEx and does nothing else.
                               It is the least any Python API that releases the GIL can cost,
                               so ours minus it is what our conversions and checks add, and
                               its ratio to cuda.core is the best any such API could reach.

Launches are asynchronous: a sample is at most ``--max-launches`` launches (so the driver's
queue never fills, which would time GPU throughput instead of launch cost), and every
contender synchronizes its stream after each of its samples, outside the timing.

Before timing, every contender launches once with arguments that make the kernel write what it
received (pointers, the integer, the floats) and reads that back: wrong usage shows as ERROR,
never as a fast number that launched nothing. The empty kernel writes nothing, so its path is
proved with the four-argument kernel first.

Cases 7-14 launch on wrapped streams (``Stream.from_handle``, a ``__cuda_stream__`` object, the
default-stream handles and constants, ``Device.default_stream``): ours, cuda.core and both floors
on the same handle, so the floors include what the driver charges for that kind of stream.

Case 13 passes the ``__cuda_stream__`` object to launch() itself, so every launch must call it:
no C loop does, and its Python floor (``python_floor(..., ask_stream=True)``) calls it and
reads the address before launching.

Targets: cuda_core within 1.15x the C floor in cases 1-5, 7-12 and 14, within 1.15x the
asking Python floor in case 13, and at most 0.85x NVIDIA cuda.core's time in every case. The report always exits 0 once it ran; it exits
1, with one line, where there is no GPU or driver.

Run on the GPU machine:  bash .gpu/on-gpu.sh python3 benchmarks/launch_latency.py
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import importlib
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _cuda import bench_floor_module as _bench_floor_module  # noqa: E402
from _cuda import check as _check  # noqa: E402
from _cuda import ctx_sync as _ctx_sync  # noqa: E402
from _cuda import driver as _driver  # noqa: E402
from _cuda import quietly as _quietly  # noqa: E402
from _harness import (Case, Contender, Prepared, Target,  # noqa: E402
                      add_arguments, device_meta, finish, run_cases, run_script)

OURS = "cuda_core"
NVIDIA = "cuda.core"
CUPY = "CuPy"
RAW = "cuda.bindings"
RAW_TUPLE = "cuda.bindings (tuple)"
FLOOR = "C floor"
FLOOR_USER_OBJECT = "C floor, user object"
PY_FLOOR = "Python floor"

FLOOR_RATIO = 1.15   # ours <= 1.15x the floor (the C floor; in case 13 the asking Python floor)
NVIDIA_RATIO = 0.85  # ours <= 0.85x cuda.core (every case)

# Verification launches pass MARK as the 4-argument kernel's n, and 1..8 as the 16-argument
# kernel's floats; timed launches pass n = 0 and a last float of 0, and the kernels return.
MARK = 0x5EED_0000_1234
OUT_BYTES = 128  # every buffer; the kernels write at most 96 bytes into their last pointer

SOURCE = r"""
extern "C" __global__ void empty() {}

extern "C" __global__ void four_args(const float* x, const float* y, float* out,
                                     unsigned long long n)
{
    if (n == 0) return;
    unsigned long long* o = reinterpret_cast<unsigned long long*>(out);
    o[0] = reinterpret_cast<unsigned long long>(x);
    o[1] = reinterpret_cast<unsigned long long>(y);
    o[2] = reinterpret_cast<unsigned long long>(out);
    o[3] = n;
}

extern "C" __global__ void seven_args(unsigned long long* out, unsigned long long a1,
                                      unsigned long long a2, unsigned long long a3,
                                      unsigned long long a4, unsigned long long a5,
                                      unsigned long long a6)
{
    if (a6 == 0) return;
    out[0] = reinterpret_cast<unsigned long long>(out);
    out[1] = a1; out[2] = a2; out[3] = a3; out[4] = a4; out[5] = a5; out[6] = a6;
}

extern "C" __global__ void sixteen_args(const float* p0, const float* p1, const float* p2,
                                        const float* p3, const float* p4, const float* p5,
                                        const float* p6, float* out,
                                        float f0, float f1, float f2, float f3,
                                        float f4, float f5, float f6, float f7)
{
    if (f7 == 0.0f) return;
    unsigned long long* o = reinterpret_cast<unsigned long long*>(out);
    o[0] = reinterpret_cast<unsigned long long>(p0);
    o[1] = reinterpret_cast<unsigned long long>(p1);
    o[2] = reinterpret_cast<unsigned long long>(p2);
    o[3] = reinterpret_cast<unsigned long long>(p3);
    o[4] = reinterpret_cast<unsigned long long>(p4);
    o[5] = reinterpret_cast<unsigned long long>(p5);
    o[6] = reinterpret_cast<unsigned long long>(p6);
    o[7] = reinterpret_cast<unsigned long long>(out);
    float* g = out + 16;  /* after the 8 pointers (64 bytes) */
    g[0] = f0; g[1] = f1; g[2] = f2; g[3] = f3;
    g[4] = f4; g[5] = f5; g[6] = f6; g[7] = f7;
}
"""


# -- what each case launches ------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Variant:
    """The kernel, its pointer arguments (buffers, the last one written on verification), and
    how cuda_core / cuda.core / CuPy pass them."""

    kernel: str
    pointers: int
    ints: bool = False        # pointers as Python ints instead of the API's buffers/arrays
    new_config: bool = False  # a new LaunchConfig inside the timed statement
    stream: str = "created"   # the stream launched on: a key of STREAM_KINDS

    @property
    def nargs(self) -> int:
        return {"empty": 0, "four_args": 4, "seven_args": 7, "sixteen_args": 16}[self.kernel]


EMPTY = Variant("empty", 0)
BUF4 = Variant("four_args", 3)
INT4 = Variant("four_args", 3, ints=True)
MIX16 = Variant("sixteen_args", 8)
CFG4 = Variant("four_args", 3, new_config=True)
GRAPH = BUF4  # the graph holds one four_args launch, captured with the writing arguments

# The streams a launch may go to besides one the library created (cases 7-12). Each library
# makes its own with the same public calls; the C floor launches on the same handle, so its
# time includes what the driver itself charges for that kind of stream.
STREAM_KINDS = {
    "from_handle": "Stream.from_handle(address of a created stream)",
    "foreign": "Device.create_stream(obj), obj a __cuda_stream__ object over a created stream",
    "legacy": "Stream.from_handle(0): the legacy default stream, as numba-cuda launches",
    "legacy_constant": "LEGACY_DEFAULT_STREAM",
    "per_thread": "PER_THREAD_DEFAULT_STREAM",
    "device_default": "Device.default_stream (the legacy default stream, bound to the device)",
    "direct": "a __cuda_stream__ object over a created stream, passed to launch() itself",
}
WRAPPED = {kind: Variant("four_args", 3, stream=kind) for kind in STREAM_KINDS}
NUMBA7 = Variant("seven_args", 1, ints=True, stream="legacy")  # 7 ints on Stream.from_handle(0)


def _scalars(v: Variant, verify: bool) -> tuple:
    import numpy as np

    if v.kernel == "four_args":
        return (np.uint64(MARK if verify else 0),)
    if v.kernel == "seven_args":  # Python ints, as numba-cuda passes its scalars
        return (1, 2, 3, 4, 5, MARK if verify else 0)
    if v.kernel == "sixteen_args":
        return tuple(np.float32(i + 1) for i in range(7)) + (np.float32(8 if verify else 0),)
    return ()


def _args(v: Variant, pointers, verify: bool) -> tuple:
    """The kernel arguments: ``pointers`` as the API passes them, then the scalars."""
    return tuple(pointers) + _scalars(v, verify)


def _ctypes_args(v: Variant, ptrs: list[int], verify: bool) -> tuple[tuple, tuple]:
    """The same arguments as plain Python values and their ctypes types (raw bindings)."""
    values = tuple(ptrs) + tuple(s.item() for s in _scalars(v, verify))
    scalar = {"four_args": ctypes.c_uint64, "seven_args": ctypes.c_uint64,
              "sixteen_args": ctypes.c_float}.get(v.kernel)
    types = (ctypes.c_void_p,) * len(ptrs) + (scalar,) * (len(values) - len(ptrs))
    return values, types


def _expected(v: Variant, ptrs: list[int]) -> bytes:
    """What a verification launch writes into the last pointer."""
    if v.kernel == "four_args":
        return struct.pack("<4Q", *ptrs[:3], MARK)
    if v.kernel == "seven_args":
        return struct.pack("<7Q", ptrs[0], 1, 2, 3, 4, 5, MARK)
    return struct.pack("<8Q8f", *ptrs[:8], *[float(i + 1) for i in range(8)])


def _names(args: tuple) -> dict:
    return {f"a{i}": a for i, a in enumerate(args)}


def _arglist(n: int) -> str:
    return ", ".join(f"a{i}" for i in range(n))


# -- the driver, through cuda.bindings: verification and the raw contenders -------------------







def _zero(ptr: int) -> None:
    d = _driver()
    _ctx_sync()
    _check(d.cuMemsetD8(ptr, 0, OUT_BYTES), "cuMemsetD8")
    _ctx_sync()


def _read(ptr: int, nbytes: int) -> bytes:
    d = _driver()
    _ctx_sync()
    host = bytearray(nbytes)
    _check(d.cuMemcpyDtoH(host, ptr, nbytes), "cuMemcpyDtoH")
    return bytes(host)


def _prove(v: Variant, ptrs: list[int], launch_once, sync) -> None:
    """Launch once with writing arguments and check what the kernel received.

    For the empty kernel: launch and synchronize (it writes nothing; the caller proves the
    same path with four_args first).
    """
    if v.kernel == "empty":
        launch_once()
        sync()
        _ctx_sync()
        return
    want = _expected(v, ptrs)
    _zero(ptrs[-1])
    launch_once()
    sync()
    got = _read(ptrs[-1], len(want))
    if got != want:
        fmt = {"four_args": "<4Q", "seven_args": "<7Q"}.get(v.kernel, "<8Q8f")
        raise RuntimeError(f"verification launch of {v.kernel}: the kernel received "
                           f"{struct.unpack(fmt, got)}, expected {struct.unpack(fmt, want)}")




_RAW_STATE: dict = {}


def _raw_context():
    """The primary context of device 0, retained once for the process and made current."""
    d = _driver()
    if "ctx" not in _RAW_STATE:
        dev = _check(d.cuDeviceGet(0), "cuDeviceGet")
        _RAW_STATE["dev"] = dev
        _RAW_STATE["ctx"] = _check(d.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    _check(d.cuCtxSetCurrent(_RAW_STATE["ctx"]), "cuCtxSetCurrent")
    return _RAW_STATE["dev"]


def _nvrtc_cubin(arch: str) -> bytes:
    """SOURCE compiled to a cubin for ``sm_<arch>`` with NVRTC through cuda.bindings."""
    from cuda.bindings import nvrtc

    def ok(result, what):
        err = result[0]
        if int(err) != 0:
            raise RuntimeError(f"{what} failed: {err!r}")
        return result[1] if len(result) > 1 else None

    prog = ok(nvrtc.nvrtcCreateProgram(SOURCE.encode(), b"launch_latency.cu", 0, [], []),
              "nvrtcCreateProgram")
    try:
        opts = [f"--gpu-architecture=sm_{arch}".encode()]
        err = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0]
        if int(err) != 0:
            size = ok(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
            log = b" " * size
            ok(nvrtc.nvrtcGetProgramLog(prog, log), "nvrtcGetProgramLog")
            raise RuntimeError(f"nvrtcCompileProgram failed: {err!r}: "
                               f"{log.decode(errors='replace').strip()}")
        size = ok(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
        cubin = b" " * size
        ok(nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
        return cubin
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


class _Raw:
    """The raw bindings: the primary context, a non-blocking stream of its own, the kernels
    from a module loaded (once per process) from an NVRTC cubin, memory from cuMemAlloc."""

    def __init__(self):
        d = self.d = _driver()
        dev = _raw_context()
        self.ptrs: list = []
        self.keep: list = []
        self.graphs: list = []
        if "module" not in _RAW_STATE:
            major = _check(d.cuDeviceGetAttribute(
                d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
                "cuDeviceGetAttribute")
            minor = _check(d.cuDeviceGetAttribute(
                d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
                "cuDeviceGetAttribute")
            cubin = _nvrtc_cubin(f"{major}{minor}")
            _RAW_STATE["module"] = _check(d.cuModuleLoadData(cubin), "cuModuleLoadData")
            _RAW_STATE["functions"] = {}
        flags = int(d.CUstream_flags.CU_STREAM_NON_BLOCKING)
        self.st = _check(d.cuStreamCreate(flags), "cuStreamCreate")

    def function(self, name: str):
        funcs = _RAW_STATE["functions"]
        if name not in funcs:
            funcs[name] = _check(self.d.cuModuleGetFunction(_RAW_STATE["module"], name.encode()),
                                 "cuModuleGetFunction")
        return funcs[name]

    def allocate(self, count: int) -> list[int]:
        new = [_check(self.d.cuMemAlloc(OUT_BYTES), "cuMemAlloc") for _ in range(count)]
        self.ptrs += new
        return [int(p) for p in new]

    def params(self, v: Variant, ptrs: list[int], verify: bool, form: str):
        """kernelParams: an address of a void*[] packed now ("packed"), or the bindings'
        ``((values), (types))`` tuple ("tuple")."""
        values, types = _ctypes_args(v, ptrs, verify)
        if form == "tuple":
            return (values, types)
        if not values:
            return 0
        cvalues = [t(x) for t, x in zip(types, values)]
        array = (ctypes.c_void_p * len(cvalues))(*[ctypes.addressof(c) for c in cvalues])
        self.keep.append((cvalues, array))
        return ctypes.addressof(array)

    def launch(self, f, params) -> None:
        _check(self.d.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, self.st, params, 0),
               "cuLaunchKernel")

    def sync(self) -> None:
        _check(self.d.cuStreamSynchronize(self.st), "cuStreamSynchronize")

    def graph(self, v: Variant, ptrs: list[int], user_object: bool = False):
        """An executable graph of one launch of ``v``'s kernel (writing arguments), captured
        from this stream, instantiated and uploaded; with ``user_object``, the graph retains a
        CUDA user object before it is instantiated (as cuda_core's graphs do)."""
        d = self.d
        f = self.function(v.kernel)
        params = self.params(v, ptrs, True, "packed")
        mode = d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
        _check(d.cuStreamBeginCapture(self.st, mode), "cuStreamBeginCapture")
        err = d.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, self.st, params, 0)[0]
        graph = _check(d.cuStreamEndCapture(self.st), "cuStreamEndCapture")
        try:
            if int(err) != 0:
                raise RuntimeError(f"cuLaunchKernel (captured) failed: {err!r}")
            if user_object:
                _bench_floor_module().retain_user_object(int(graph))
            gexec = _check(d.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        finally:
            _check(d.cuGraphDestroy(graph), "cuGraphDestroy")  # the executable is a copy
        self.graphs.append(gexec)
        _check(d.cuGraphUpload(gexec, self.st), "cuGraphUpload")
        return gexec

    def close(self) -> None:
        d = self.d
        try:
            self.sync()
        finally:
            for g in self.graphs:
                _check(d.cuGraphExecDestroy(g), "cuGraphExecDestroy")
            for p in self.ptrs:
                _check(d.cuMemFree(p), "cuMemFree")
            _check(d.cuStreamDestroy(self.st), "cuStreamDestroy")
            self.graphs, self.ptrs, self.keep = [], [], []


# -- cuda_core and cuda.core: one adapter, the same API shape ----------------------------------

_COMPILED: dict = {}


class _Core:
    """``cuda_core`` (ours) or NVIDIA's ``cuda.core``: Device(0) made current, a stream of its
    own, Buffers from Device.allocate, kernels from Program(...).compile("cubin") (compiled
    once per process and package)."""

    def __init__(self, module: str):
        mod = self.mod = importlib.import_module(module)
        self.module = module
        self.launch = mod.launch
        self.LaunchConfig = mod.LaunchConfig
        self.dev = mod.Device(0)
        self.dev.set_current()
        self.cfg = self.LaunchConfig(grid=1, block=1)
        self.buffers: list = []
        self.closers: list = []
        self.s = self.dev.create_stream()

    def kernel(self, name: str):
        obj = _COMPILED.get(self.module)
        if obj is None:
            options = self.mod.ProgramOptions(arch=f"sm_{self.dev.arch}")
            obj = self.mod.Program(SOURCE, "c++", options=options).compile("cubin")
            _COMPILED[self.module] = obj
        return obj.get_kernel(name)

    def launch_stream(self, kind: str):
        """The stream a case of ``kind`` launches on (see STREAM_KINDS), made with this
        library's public API; a created stream of this adapter stands behind the wrapping
        kinds."""
        mod, s = self.mod, self.s
        if kind == "created":
            return s
        if kind == "from_handle":
            return mod.Stream.from_handle(int(s.handle))
        if kind == "foreign":
            return self.dev.create_stream(_ForeignStream(int(s.handle)))
        if kind == "direct":
            return _ForeignStream(int(s.handle), s.sync)
        if kind == "legacy":
            return mod.Stream.from_handle(0)
        if kind == "legacy_constant":
            return mod.LEGACY_DEFAULT_STREAM
        if kind == "per_thread":
            return mod.PER_THREAD_DEFAULT_STREAM
        if kind == "device_default":
            return self.dev.default_stream
        raise ValueError(f"unknown stream kind {kind!r}")

    def allocate(self, count: int):
        bufs = [self.dev.allocate(OUT_BYTES, stream=self.s) for _ in range(count)]
        self.buffers += bufs
        self.s.sync()
        return bufs, [int(b.handle) for b in bufs]

    def close(self) -> None:
        try:
            self.s.sync()
            for c in reversed(self.closers):
                c()
            for b in self.buffers:
                b.close(self.s)
            self.s.sync()
        finally:
            self.buffers, self.closers = [], []
            self.s.close()


class _ForeignStream:
    """Another library's stream object: the ``__cuda_stream__`` protocol, and a ``sync`` for
    the harness (given where the object is passed to launch() itself)."""

    def __init__(self, address: int, sync=None):
        self.address = address
        if sync is not None:
            self.sync = sync

    def __cuda_stream__(self):
        return (0, self.address)


def _core_prove_path(core: _Core) -> None:
    """The empty kernel writes nothing: prove this package's launch with four_args."""
    bufs, ptrs = core.allocate(3)
    k = core.kernel("four_args")
    _prove(BUF4, ptrs, lambda: core.launch(core.s, core.cfg, k, *_args(BUF4, bufs, True)),
           core.s.sync)


def _core_setup(module: str, v: Variant):
    core = _Core(module)
    try:
        if v.kernel == "empty":
            _core_prove_path(core)
        k = core.kernel(v.kernel)
        bufs, ptrs = core.allocate(v.pointers)
        pointers = ptrs if v.ints else bufs
        LaunchConfig, launch = core.LaunchConfig, core.launch
        s = core.launch_stream(v.stream)

        def once():
            cfg = LaunchConfig(grid=1, block=1) if v.new_config else core.cfg
            launch(s, cfg, k, *_args(v, pointers, True))

        _prove(v, ptrs, once, s.sync)
        names = {"launch": launch, "s": s, "cfg": core.cfg, "k": k,
                 "LaunchConfig": LaunchConfig}
        names.update(_names(_args(v, pointers, False)))
        return Prepared(names, cleanup=core.close, after_sample=s.sync)
    except BaseException:
        _quietly(core.close)
        raise


def _core_stmt(v: Variant) -> str:
    cfg = "LaunchConfig(grid=1, block=1)" if v.new_config else "cfg"
    args = _arglist(v.nargs)
    return f"launch(s, {cfg}, k{', ' + args if args else ''})"


def _core_graph_setup(module: str):
    core = _Core(module)
    try:
        k = core.kernel(GRAPH.kernel)
        bufs, ptrs = core.allocate(GRAPH.pointers)
        args = _args(GRAPH, bufs, True)
        # A plain launch first: the kernel is loaded and the path proved outside the capture.
        _prove(GRAPH, ptrs, lambda: core.launch(core.s, core.cfg, k, *args), core.s.sync)
        gb = core.s.create_graph_builder()
        core.closers.append(gb.close)
        gb.begin_building()
        core.launch(gb, core.cfg, k, *args)
        gb.end_building()
        g = gb.complete()
        core.closers.append(g.close)
        g.upload(core.s)
        _prove(GRAPH, ptrs, lambda: g.launch(core.s), core.s.sync)
        return Prepared({"g": g, "s": core.s}, cleanup=core.close, after_sample=core.s.sync)
    except BaseException:
        _quietly(core.close)
        raise


# -- the C floor ---------------------------------------------------------------------------

ONE = (1, 1, 1)




def _floor_prepare(core: _Core, v: Variant):
    """What the floors launch for ``v``: the handle of the case's stream (our stream, or the
    default-stream handle), the handle launch() passes for the kernel on it, and the kernel's
    buffers, the path proved first with the C loop (writing arguments read back)."""
    _bench_floor = _bench_floor_module()
    from cuda_core._kernel_args import _packed_arguments
    from cuda_core._launcher import _launch_handle

    # A __cuda_stream__ object passed to launch() itself stands for a created stream.
    stream = core.launch_stream("created" if v.stream == "direct" else v.stream)
    sh = int(stream.handle)
    if v.kernel == "empty":
        bufs, ptrs = core.allocate(3)
        k4 = _launch_handle(stream, core.kernel("four_args"))
        packed = _packed_arguments(*_args(BUF4, bufs, True))
        _prove(BUF4, ptrs, lambda: _bench_floor.launch_loop(sh, k4, ONE, ONE, packed, 1),
               stream.sync)
    kh = _launch_handle(stream, core.kernel(v.kernel))
    bufs, ptrs = core.allocate(v.pointers)
    packed = _packed_arguments(*_args(v, ptrs if v.ints else bufs, True))
    _prove(v, ptrs, lambda: _bench_floor.launch_loop(sh, kh, ONE, ONE, packed, 1), stream.sync)
    return sh, kh, bufs, ptrs, stream


def _floor_setup(v: Variant):
    _bench_floor = _bench_floor_module()
    from cuda_core._kernel_args import _packed_arguments

    core = _Core(OURS)
    try:
        sh, kh, bufs, ptrs, stream = _floor_prepare(core, v)
        timed_args = _packed_arguments(*_args(v, ptrs if v.ints else bufs, False))

        def run(n: int) -> int:
            return _bench_floor.launch_loop(sh, kh, ONE, ONE, timed_args, n)

        return Prepared(run, cleanup=core.close, after_sample=stream.sync)
    except BaseException:
        _quietly(core.close)
        raise


def _python_floor_setup(v: Variant):
    """``_bench_floor.python_floor``, called as ours is (same statement, same argument objects),
    launching what the C floor launches: a Python call that releases the GIL around the
    driver call and does nothing else."""
    _bench_floor = _bench_floor_module()
    from cuda_core._kernel_args import _packed_arguments

    core = _Core(OURS)
    try:
        sh, kh, bufs, ptrs, stream = _floor_prepare(core, v)
        pointers = ptrs if v.ints else bufs
        # A __cuda_stream__ object passed to launch() itself: the floor asks it too.
        ask = v.stream == "direct"
        s = core.launch_stream(v.stream)
        proof = _bench_floor.python_floor(sh, kh, ONE, ONE,
                                          _packed_arguments(*_args(v, pointers, True)), ask)
        _prove(v, ptrs, lambda: proof(s, core.cfg, None), stream.sync)
        timed = _bench_floor.python_floor(sh, kh, ONE, ONE,
                                          _packed_arguments(*_args(v, pointers, False)), ask)
        names = {"launch": timed, "s": s, "cfg": core.cfg, "k": core.kernel(v.kernel)}
        names.update(_names(_args(v, pointers, False)))
        return Prepared(names, cleanup=core.close, after_sample=stream.sync)
    except BaseException:
        _quietly(core.close)
        raise


def _floor_graph_setup(user_object: bool = False):
    _bench_floor = _bench_floor_module()

    raw = _Raw()
    try:
        ptrs = raw.allocate(GRAPH.pointers)
        gexec = raw.graph(GRAPH, ptrs, user_object)
        ge, st = int(gexec), int(raw.st)
        _prove(GRAPH, ptrs, lambda: _bench_floor.graph_launch_loop(ge, st, 1), raw.sync)

        def run(n: int) -> int:
            return _bench_floor.graph_launch_loop(ge, st, n)

        return Prepared(run, cleanup=raw.close, after_sample=raw.sync)
    except BaseException:
        _quietly(raw.close)
        raise


# -- raw cuda.bindings ---------------------------------------------------------------------

RAW_STMT = "cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, st, params, 0)"


def _raw_setup(v: Variant, form: str):
    raw = _Raw()
    try:
        if v.kernel == "empty":
            ptrs4 = raw.allocate(3)
            f4, p4 = raw.function("four_args"), raw.params(BUF4, ptrs4, True, form)
            _prove(BUF4, ptrs4, lambda: raw.launch(f4, p4), raw.sync)
        f = raw.function(v.kernel)
        ptrs = raw.allocate(v.pointers)
        proof = raw.params(v, ptrs, True, form)
        _prove(v, ptrs, lambda: raw.launch(f, proof), raw.sync)
        names = {"cuLaunchKernel": raw.d.cuLaunchKernel, "f": f, "st": raw.st,
                 "params": raw.params(v, ptrs, False, form)}
        return Prepared(names, cleanup=raw.close, after_sample=raw.sync)
    except BaseException:
        _quietly(raw.close)
        raise


def _raw_graph_setup():
    raw = _Raw()
    try:
        ptrs = raw.allocate(GRAPH.pointers)
        gexec = raw.graph(GRAPH, ptrs)
        launch = raw.d.cuGraphLaunch
        _prove(GRAPH, ptrs, lambda: _check(launch(gexec, raw.st), "cuGraphLaunch"), raw.sync)
        return Prepared({"cuGraphLaunch": launch, "gexec": gexec, "st": raw.st},
                        cleanup=raw.close, after_sample=raw.sync)
    except BaseException:
        _quietly(raw.close)
        raise


# -- CuPy ----------------------------------------------------------------------------------

_CUPY_KERNELS: dict = {}


class _Cupy:
    """CuPy: a non-blocking stream of its own made current (restored at the end), RawKernels
    compiled from SOURCE, device arrays of OUT_BYTES."""

    def __init__(self):
        import cupy

        self.cp = cupy
        cupy.cuda.Device(0).use()
        self.previous = cupy.cuda.get_current_stream()
        self.st = cupy.cuda.Stream(non_blocking=True)
        self.st.use()
        self.arrays: list = []

    def kernel(self, name: str):
        if name not in _CUPY_KERNELS:
            _CUPY_KERNELS[name] = self.cp.RawKernel(SOURCE, name)
        return _CUPY_KERNELS[name]

    def allocate(self, count: int):
        arrays = [self.cp.empty(OUT_BYTES // 4, dtype=self.cp.float32) for _ in range(count)]
        self.arrays += arrays
        self.st.synchronize()
        return arrays, [int(a.data.ptr) for a in arrays]

    def sync(self) -> None:
        self.st.synchronize()

    def close(self) -> None:
        try:
            self.st.synchronize()
        finally:
            self.previous.use()
            self.arrays = []


def _cupy_setup(v: Variant):
    c = _Cupy()
    try:
        if v.kernel == "empty":
            arrays4, ptrs4 = c.allocate(3)
            k4, a4 = c.kernel("four_args"), _args(BUF4, arrays4, True)
            _prove(BUF4, ptrs4, lambda: k4((1,), (1,), a4), c.sync)
        k = c.kernel(v.kernel)
        arrays, ptrs = c.allocate(v.pointers)
        pointers = ptrs if v.ints else arrays
        proof = _args(v, pointers, True)
        _prove(v, ptrs, lambda: k((1,), (1,), proof), c.sync)
        names = {"k": k}
        names.update(_names(_args(v, pointers, False)))
        return Prepared(names, cleanup=c.close, after_sample=c.sync)
    except BaseException:
        _quietly(c.close)
        raise


def _cupy_stmt(v: Variant) -> str:
    args = _arglist(v.nargs)
    return f"k((1,), (1,), ({args}{',' if v.nargs == 1 else ''}))"


def _cupy_graph_setup():
    c = _Cupy()
    try:
        k = c.kernel(GRAPH.kernel)
        arrays, ptrs = c.allocate(GRAPH.pointers)
        args = _args(GRAPH, arrays, True)
        _prove(GRAPH, ptrs, lambda: k((1,), (1,), args), c.sync)  # loads it before capture
        c.st.begin_capture()
        try:
            k((1,), (1,), args)
        finally:
            g = c.st.end_capture()
        g.upload(c.st)
        _prove(GRAPH, ptrs, lambda: g.launch(c.st), c.sync)
        return Prepared({"g": g, "st": c.st}, cleanup=c.close, after_sample=c.sync)
    except BaseException:
        _quietly(c.close)
        raise


# -- cases -----------------------------------------------------------------------------------

C_EMPTY = "#1 0 args"
C_BUF4 = "#2 4 args (3 Buffers + uint64)"
C_INT4 = "#3 4 args (3 ints + uint64)"
C_MIX16 = "#4 16 args (8 Buffers + 8 float32)"
C_CFG4 = "#5 4 args + new LaunchConfig"
C_GRAPH = "#6 graph replay (1 node)"
C_WRAPPED = {
    "from_handle": "#7 case 2 on Stream.from_handle(created)",
    "foreign": "#8 case 2 on create_stream(__cuda_stream__ obj)",
    "legacy": "#9 case 2 on Stream.from_handle(0)",
    "legacy_constant": "#10 case 2 on LEGACY_DEFAULT_STREAM",
    "per_thread": "#11 case 2 on PER_THREAD_DEFAULT_STREAM",
    "device_default": "#12 case 2 on Device.default_stream",
    "direct": "#13 case 2 on a __cuda_stream__ obj itself",
}
C_NUMBA7 = "#14 7 ints on Stream.from_handle(0)"
WRAPPED_CASES = tuple(C_WRAPPED.values()) + (C_NUMBA7,)
# A __cuda_stream__ object passed to launch() itself must be asked for its stream at every
# launch, which no C loop does: that case is held to the Python floor that asks it.
ASKING_CASES = (C_WRAPPED["direct"],)
FLOOR_CASES = tuple(c for c in (C_EMPTY, C_BUF4, C_INT4, C_MIX16, C_CFG4) + WRAPPED_CASES
                    if c not in ASKING_CASES)


def _wrapped_contenders(v: Variant) -> list[Contender]:
    """ours, cuda.core and the floors, each on its own stream of kind ``v.stream`` (for a
    __cuda_stream__ object passed to launch() itself, the Python floor asks it too)."""
    return [
        Contender(OURS, setup=lambda: _core_setup(OURS, v), stmt=_core_stmt(v)),
        Contender(NVIDIA, setup=lambda: _core_setup(NVIDIA, v), stmt=_core_stmt(v),
                  requires=("cuda.core",)),
        Contender(PY_FLOOR, setup=lambda: _python_floor_setup(v), stmt=_core_stmt(v)),
        Contender(FLOOR, setup=lambda: _floor_setup(v), self_timed=True),
    ]


def _launch_contenders(v: Variant, *, peers: bool = True) -> list[Contender]:
    """ours, cuda.core, (CuPy, raw bindings in both forms,) and the floors for variant v."""
    out = [
        Contender(OURS, setup=lambda: _core_setup(OURS, v), stmt=_core_stmt(v)),
        Contender(NVIDIA, setup=lambda: _core_setup(NVIDIA, v), stmt=_core_stmt(v),
                  requires=("cuda.core",)),
    ]
    if peers:
        out.append(Contender(CUPY, setup=lambda: _cupy_setup(v), stmt=_cupy_stmt(v),
                             requires=("cupy",)))
        out.append(Contender(RAW, setup=lambda: _raw_setup(v, "packed"), stmt=RAW_STMT,
                             requires=("cuda.bindings",)))
        if v.nargs:
            out.append(Contender(RAW_TUPLE, setup=lambda: _raw_setup(v, "tuple"),
                                 stmt=RAW_STMT, requires=("cuda.bindings",)))
    if not v.new_config:  # case 5's floors are case 2's
        out.append(Contender(PY_FLOOR, setup=lambda: _python_floor_setup(v), stmt=_core_stmt(v)))
    out.append(Contender(FLOOR, setup=lambda: _floor_setup(v), self_timed=True))
    return out


def make_cases(max_launches: int) -> list[Case]:
    def case(name, contenders, note):
        return Case(name, contenders, note=note, max_inner=max_launches)

    return [
        case(C_EMPTY, _launch_contenders(EMPTY),
             "empty(); it writes nothing, so each contender first proves its launch path "
             "with four_args (read back), then launches empty() once"),
        case(C_BUF4, _launch_contenders(BUF4),
             "four_args(x, y, out, n) with n = np.uint64(0): it returns at once; CuPy passes "
             "its arrays, the raw rows CUdeviceptr values as c_void_p"),
        case(C_INT4, _launch_contenders(INT4),
             "the same with the buffers' addresses as Python ints (the raw rows are case 2's)"),
        case(C_MIX16, _launch_contenders(MIX16),
             "sixteen_args(7 const float*, float* out, 8 float) with np.float32 values, the "
             "last 0: it returns at once"),
        case(C_CFG4, _launch_contenders(CFG4, peers=False),
             "case 2 with LaunchConfig(grid=1, block=1) built inside the timed statement; "
             "the floor is case 2's (no config object in C)"),
        case(C_GRAPH, [
            Contender(OURS, setup=lambda: _core_graph_setup(OURS), stmt="g.launch(s)"),
            Contender(NVIDIA, setup=lambda: _core_graph_setup(NVIDIA), stmt="g.launch(s)",
                      requires=("cuda.core",)),
            Contender(CUPY, setup=_cupy_graph_setup, stmt="g.launch(st)", requires=("cupy",)),
            Contender(RAW, setup=_raw_graph_setup, stmt="cuGraphLaunch(gexec, st)",
                      requires=("cuda.bindings",)),
            Contender(FLOOR, setup=_floor_graph_setup, self_timed=True),
            Contender(FLOOR_USER_OBJECT, setup=lambda: _floor_graph_setup(user_object=True),
                      self_timed=True),
        ], "an uploaded executable graph of one four_args launch (writing 32 bytes), "
           "captured by each library from its own stream; raw and C: cuStreamBeginCapture + "
           "cuLaunchKernel, replayed with cuGraphLaunch; 'C floor, user object': the C floor's "
           "graph retaining one CUDA user object, as cuda_core's graphs do"),
    ] + [
        case(C_WRAPPED[kind], _wrapped_contenders(WRAPPED[kind]),
             f"case 2 on {STREAM_KINDS[kind]}, made by each library with its own API; the C "
             f"floor launches on the same handle, so it includes what the driver charges for "
             f"that kind of stream")
        for kind in STREAM_KINDS
    ] + [
        case(C_NUMBA7, _wrapped_contenders(NUMBA7),
             "seven_args(out, a1..a6): 7 Python ints (a pointer and six unsigned long long), "
             "on Stream.from_handle(0), as numba-cuda launches on cuda.core"),
    ]


# -- main ------------------------------------------------------------------------------------

def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="launch_latency.py",
        description="Host-side latency of one kernel launch (0, 4 and 16 arguments, ints for "
                    "pointers, a new LaunchConfig per call, a one-node graph replay): "
                    "cuda_core (ours) against NVIDIA's cuda.core, CuPy, the raw cuda.bindings "
                    "and a C loop of cuLaunchKernelEx. Targets: ours <= "
                    f"{FLOOR_RATIO:g}x the C floor in cases 1-5, 7-12 and 14 (in 13, the "
                    "Python floor that asks the object for its stream) and <= "
                    f"{NVIDIA_RATIO:g}x cuda.core in every case. Needs a GPU; exits 0 once the report is printed.")
    add_arguments(parser)
    parser.add_argument("--max-launches", type=_positive, default=1000, metavar="N",
                        help="at most N launches per sample, --inner included; the stream is "
                             "synchronized after each sample, outside the timing, so the "
                             "driver's launch queue never fills (default: %(default)s)")
    args = parser.parse_args(argv)

    # Fails here, with the driver's reason, where there is no GPU or no driver.
    meta = device_meta("launch_latency.py",
                       ("cuda-core-cy", "cuda-core", "cuda-bindings", "numpy"),
                       optional=("cupy-cuda13x", "cupy-cuda12x"))
    if meta is None:
        return 1
    meta["sample"] = (f"at most {args.max_launches} launches (grid 1, block 1), then a stream "
                      f"sync outside the timing")

    targets = [Target(OURS, FLOOR, FLOOR_RATIO, cases=FLOOR_CASES),
               Target(OURS, PY_FLOOR, FLOOR_RATIO, cases=ASKING_CASES),
               Target(OURS, NVIDIA, NVIDIA_RATIO)]
    report = run_cases(make_cases(args.max_launches), args,
                       title="cuda_core launch latency (time per launch)",
                       subject=OURS, baseline=NVIDIA, floor=FLOOR,
                       target="launches as cheap as a C driver call, and cheaper than "
                              "cuda.core's",
                       meta=meta, targets=targets, floor_ratio=True)
    _note_reach(report)
    _note_wrapped(report)
    return finish(report, args)


def _note_wrapped(report) -> None:
    """For each wrapped-stream case: what ours adds above the C floor on that stream, beside
    what it adds above the C floor on a created stream (case 2). The floor on a stream includes
    what the driver charges for its kind, so equal additions mean the wrapper costs nothing."""
    created = next((c for c in report.cases if c.name == C_BUF4), None)
    base = None
    if created is not None:
        ours, floor = created.get(OURS), created.get(FLOOR)
        if ours is not None and floor is not None and ours.ok and floor.ok:
            base = ours.median_ns - floor.median_ns
    for case in report.cases:
        if case.name not in WRAPPED_CASES:
            continue
        ours, floor = case.get(OURS), case.get(FLOOR)
        if not all(c is not None and c.ok for c in (ours, floor)):
            continue
        extra = ours.median_ns - floor.median_ns
        case.note += f"; cuda_core adds {extra:+.0f} ns above the C floor on this stream"
        if case.name == C_WRAPPED["direct"]:
            case.note += (" (the floor is a created stream's, with the CUfunction: ours calls "
                          "the object's __cuda_stream__() and checks its answer at every "
                          "launch, and passes the CUkernel, which the driver resolves in the "
                          "stream's context)")
            py = case.get(PY_FLOOR)
            if py is not None and py.ok:
                case.note += (f"; the Python floor that asks the object is "
                              f"{py.median_ns - floor.median_ns:+.0f} ns above the C floor, "
                              f"cuda_core {ours.median_ns - py.median_ns:+.0f} ns above it")
        elif base is not None and case.name != C_NUMBA7:
            case.note += f" (case 2, a created stream: {base:+.0f} ns)"


def _note_reach(report) -> None:
    """Add to each case's note how far a Python API could get in this run: the Python floor's
    ratio to cuda.core (no API that releases the GIL around the launch can beat it) and what
    ours adds above the Python floor."""
    for case in report.cases:
        py, core, ours = case.get(PY_FLOOR), case.get(NVIDIA), case.get(OURS)
        if not all(c is not None and c.ok for c in (py, core, ours)):
            continue
        ratio = py.median_ns / core.median_ns
        room = NVIDIA_RATIO * core.median_ns - py.median_ns
        if room < 0:
            reach = f"so no API that releases the GIL could meet {NVIDIA_RATIO:g}x in this run"
        else:
            reach = f"so {NVIDIA_RATIO:g}x leaves {room:.0f} ns above it"
        case.note += (f"; the Python floor is {ratio:.2f}x cuda.core, {reach}; cuda_core is "
                      f"{ours.median_ns - py.median_ns:+.0f} ns above the Python floor")


if __name__ == "__main__":
    run_script(main, "launch_latency.py")
