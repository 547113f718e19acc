"""The launch cases' kernels and how ours and NVIDIA's cuda.core launch them, with the C floor
(``_floor``): shared by ``python -m cuda_core.bench`` and the project's
``benchmarks/launch_latency.py``.

Every case launches the kernels of ``SOURCE`` with grid 1 and block 1; they return at once for
the timed arguments, so what is measured is the launch call, not GPU work. Before timing, every
contender launches once with arguments that make the kernel write what it received, and reads
that back: wrong usage shows as an error, never as a fast number that launched nothing.
"""

from __future__ import annotations

import ctypes
import dataclasses
import importlib
import struct

from cuda_core.bench._bindings import check as _check
from cuda_core.bench._bindings import ctx_sync as _ctx_sync
from cuda_core.bench._bindings import driver as _driver
from cuda_core.bench._bindings import quietly as _quietly
from cuda_core.bench._harness import Prepared, Unavailable

OURS = "cuda_core"
NVIDIA = "cuda.core"
CUPY = "CuPy"
RAW = "cuda.bindings"
RAW_TUPLE = "cuda.bindings (tuple)"
FLOOR = "C floor"
FLOOR_USER_OBJECT = "C floor, user object"
PY_FLOOR = "Python floor"


# Verification launches pass MARK as the 4-argument kernel's n, and 1..8 as the 16-argument
# kernel's floats; timed launches pass n = 0 and a last float of 0, and the kernels return.
MARK = 0x5EED_0000_1234
OUT_BYTES = 128  # every buffer; the kernels write at most 96 bytes into their last pointer
STRUCT_TAG = 0x7A6  # struct_arg's first field, read back with the second (MARK or 0)
PAIR = [("tag", "<u8"), ("n", "<u8")]  # struct_arg's Pair, as a NumPy dtype

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

struct Pair { unsigned long long tag; unsigned long long n; };

extern "C" __global__ void struct_arg(float* out, Pair p)
{
    if (p.n == 0) return;
    unsigned long long* o = reinterpret_cast<unsigned long long*>(out);
    o[0] = reinterpret_cast<unsigned long long>(out);
    o[1] = p.tag;
    o[2] = p.n;
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
        return {"empty": 0, "four_args": 4, "seven_args": 7, "sixteen_args": 16,
                "struct_arg": 2}[self.kernel]


EMPTY = Variant("empty", 0)
BUF4 = Variant("four_args", 3)
INT4 = Variant("four_args", 3, ints=True)
MIX16 = Variant("sixteen_args", 8)
CFG4 = Variant("four_args", 3, new_config=True)
STRUCT = Variant("struct_arg", 1)  # a pointer and a 16-byte struct by value
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
    if v.kernel == "struct_arg":  # a NumPy structured scalar, the struct's bytes
        return (np.array([(STRUCT_TAG, MARK if verify else 0)], dtype=PAIR)[0],)
    return ()


def _args(v: Variant, pointers, verify: bool) -> tuple:
    """The kernel arguments: ``pointers`` as the API passes them, then the scalars."""
    return tuple(pointers) + _scalars(v, verify)


class _CPair(ctypes.Structure):
    _fields_ = [("tag", ctypes.c_uint64), ("n", ctypes.c_uint64)]


def _ctypes_args(v: Variant, ptrs: list[int], verify: bool) -> tuple[tuple, tuple]:
    """The same arguments as plain Python values and their ctypes types (raw bindings); a
    struct as its ctypes Structure."""
    if v.kernel == "struct_arg":
        return (ptrs[0], _CPair(STRUCT_TAG, MARK if verify else 0)), (ctypes.c_void_p, _CPair)
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
    if v.kernel == "struct_arg":
        return struct.pack("<3Q", ptrs[0], STRUCT_TAG, MARK)
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
        fmt = {"four_args": "<4Q", "seven_args": "<7Q", "struct_arg": "<3Q"}.get(v.kernel,
                                                                             "<8Q8f")
        raise RuntimeError(f"verification launch of {v.kernel}: the kernel received "
                           f"{struct.unpack(fmt, got)}, expected {struct.unpack(fmt, want)}")


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

        refused_struct(module, v, lambda: _prove(v, ptrs, once, s.sync))
        names = {"launch": launch, "s": s, "cfg": core.cfg, "k": k,
                 "LaunchConfig": LaunchConfig}
        names.update(_names(_args(v, pointers, False)))
        return Prepared(names, cleanup=core.close, after_sample=s.sync)
    except BaseException:
        _quietly(core.close)
        raise


def refused_struct(library: str, v: Variant, prove) -> None:
    """Run ``prove``; where ``library`` refuses a struct by value (TypeError or ValueError:
    cuda.core 1.2 does), the contender is not available, with the library's reason."""
    try:
        prove()
    except (TypeError, ValueError) as exc:
        if v.kernel != "struct_arg":
            raise
        raise Unavailable(f"{library} does not pass a struct by value: {exc}") from None


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
    from cuda_core.bench import _floor as _bench_floor
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
    from cuda_core.bench import _floor as _bench_floor
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
    from cuda_core.bench import _floor as _bench_floor
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
