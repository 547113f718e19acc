"""The launch cases' peers: the raw cuda.bindings calls (a module of its own, loaded from an
NVRTC cubin, memory from cuMemAlloc), CuPy's RawKernel, and the graph-replay floor on a raw
graph. Each contender is set up in its own objects and proves its launch path first."""

from __future__ import annotations

import ctypes

from cuda_core.bench import _floor
from cuda_core.bench._bindings import check as _check
from cuda_core.bench._bindings import quietly as _quietly
from cuda_core.bench._bindings import driver as _driver
from cuda_core.bench._harness import Prepared
from cuda_core.bench._launch import (BUF4, CUPY, GRAPH, OUT_BYTES, SOURCE, Variant, _arglist,
                                     _args, _ctypes_args, _names, _prove, refused_struct)

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
        cvalues = [x if isinstance(x, t) else t(x) for t, x in zip(types, values)]
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
                _floor.retain_user_object(int(graph))
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


def _floor_graph_setup(user_object: bool = False):
    from cuda_core.bench import _floor as _bench_floor

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
        refused_struct(CUPY, v, lambda: _prove(v, ptrs, lambda: k((1,), (1,), proof), c.sync))
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
