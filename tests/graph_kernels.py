"""Kernels, fixtures and read-back helpers shared by the explicit-graph GPU tests
(test_graph_nodes.py, test_graph_conditional_nodes.py, test_graph_exec_nodes.py,
test_graph_lifetime_errors.py).

A test module imports the fixtures it uses (``from graph_kernels import k, buffers, pinned``):
pytest finds fixtures in the module's namespace. Nothing here touches the GPU at import time.
"""

import ctypes
import functools
import os
import threading
import types

import numpy as np
import pytest

from cuda_core import (Device, LaunchConfig, LegacyPinnedMemoryResource, Program, ProgramOptions,
                       launch)

N = 64
CFG = LaunchConfig(grid=1, block=N)
ONE = LaunchConfig(grid=1, block=1)
SPIN_NS = np.uint64(150_000_000)  # 150 ms of GPU time: far longer than the host's next steps

# cudaGraphSetConditional is a builtin the driver resolves when the module loads, declared here
# as <cuda_device_runtime_api.h> does (tests/test_graph.py explains why the header is not used);
# cudaGraphConditionalHandle is a type NVRTC knows.
SOURCE = r"""
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(
    cudaGraphConditionalHandle handle, unsigned int value);

#define ELEMENTWISE(name, op)                                                         \
    extern "C" __global__ void name(int* x, int value, unsigned int n) {              \
        unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;                       \
        if (i < n) x[i] = op;                                                         \
    }
ELEMENTWISE(fill, value)
ELEMENTWISE(add, x[i] + value)
ELEMENTWISE(mul, x[i] * value)

extern "C" __global__ void copy(const int* src, int* dst, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}

// Busy-waits ns nanoseconds of the GPU's global timer: work that stays queued long enough for
// the host to act while it runs.
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

extern "C" __global__ void set_cond(cudaGraphConditionalHandle handle, unsigned int value) {
    cudaGraphSetConditional(handle, value);
}

extern "C" __global__ void set_cond_from(cudaGraphConditionalHandle handle,
                                         const unsigned int* value) {
    cudaGraphSetConditional(handle, *value);
}

// A C++ kernel (not extern "C"): its mangled name tells cuda_core its parameter types, so an
// argument of the wrong kind (a float for the pointer) is refused, not only a wrong size.
template <typename T>
__global__ void typed_add(T* x, T value, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += value;
}

// One trip of a while loop: counts *counter down and *trips up; the loop goes on while the
// counter is above zero.
extern "C" __global__ void countdown(cudaGraphConditionalHandle handle, int* counter,
                                     int* trips) {
    int left = *counter - 1;
    *counter = left;
    *trips += 1;
    cudaGraphSetConditional(handle, left > 0 ? 1u : 0u);
}
"""

KERNEL_NAMES = ("fill", "add", "mul", "copy", "spin", "set_cond", "set_cond_from", "countdown")
# Attribute name -> name expression, for the C++ kernels.
TYPED_KERNELS = {"typed_add": "typed_add<int>"}


def compile_kernels():
    """The kernels of SOURCE, compiled for device 0 (made current): KERNEL_NAMES and
    TYPED_KERNELS as attributes."""
    dev = Device(0)
    dev.set_current()
    opts = ProgramOptions(arch=f"sm_{dev.arch}", std="c++17")
    mod = Program(SOURCE, "c++", options=opts).compile(
        "cubin", name_expressions=tuple(TYPED_KERNELS.values()))
    kernels = {name: mod.get_kernel(name) for name in KERNEL_NAMES}
    kernels.update({name: mod.get_kernel(expr) for name, expr in TYPED_KERNELS.items()})
    return types.SimpleNamespace(**kernels)


@functools.lru_cache(maxsize=None)
def _shared_kernels():
    return compile_kernels()


@pytest.fixture(scope="module")
def k():
    """The kernels of SOURCE, compiled once per test session."""
    return _shared_kernels()


def n32(n=N):
    return np.uint32(n)


def i32(value):
    return np.int32(value)


def run(graph, stream):
    """Launch ``graph`` once on ``stream`` and wait for it."""
    graph.launch(stream)
    stream.sync()


# -- memory ------------------------------------------------------------------------------------

def host_bytes(buf):
    """A copy of the bytes of a host-accessible Buffer (pinned memory)."""
    return np.frombuffer(ctypes.string_at(int(buf.handle), buf.size), np.uint8).copy()


def host_view(buf, dtype=np.int32):
    """A NumPy array over a host-accessible Buffer's memory (no copy: it sees later writes)."""
    raw = (ctypes.c_uint8 * buf.size).from_address(int(buf.handle))
    return np.ctypeslib.as_array(raw).view(dtype)


def fetch(buf, stream, dtype=np.int32):
    """The contents of ``buf`` (any memory), through Buffer.copy_to a pinned host buffer."""
    staging = LegacyPinnedMemoryResource().allocate(buf.size)
    try:
        buf.copy_to(staging, stream=stream)
        stream.sync()
        return host_bytes(staging).view(dtype)
    finally:
        staging.close()


def put(buf, values, stream, dtype=np.int32):
    """Write ``values`` (of ``buf``'s size, any shape: C order) into ``buf`` and wait until they
    have landed."""
    data = np.ascontiguousarray(values, dtype=dtype).reshape(-1)
    assert data.nbytes == buf.size, (data.nbytes, buf.size)
    staging = LegacyPinnedMemoryResource().allocate(buf.size)
    try:
        host_view(staging, np.uint8)[:] = data.view(np.uint8)
        buf.copy_from(staging, stream=stream)
        stream.sync()
    finally:
        staging.close()


@pytest.fixture
def buffers(dev, stream):
    """``buffers(nbytes=N * 4, fill=None)``: a new device Buffer (its int32 elements set to
    ``fill`` when given), closed at teardown."""
    made = []

    def make(nbytes=N * 4, fill=None):
        buf = dev.allocate(nbytes, stream=stream)
        stream.sync()
        made.append(buf)
        if fill is not None:
            put(buf, np.full(nbytes // 4, fill), stream)
        return buf

    yield make
    for buf in made:
        buf.close(stream)
    stream.sync()


@pytest.fixture
def pinned(dev):
    """``pinned(nbytes=N * 4)``: a new page-locked host Buffer, zeroed, closed at teardown."""
    made = []

    def make(nbytes=N * 4):
        buf = LegacyPinnedMemoryResource().allocate(nbytes)
        host_view(buf, np.uint8)[:] = 0
        made.append(buf)
        return buf

    yield make
    for buf in made:
        buf.close()


# -- host-side synchronisation -----------------------------------------------------------------

class HostGate:
    """A zero-argument callable for a host callback node that blocks the graph until
    ``open()``: while it waits, the nodes after it have not run. Waits at most 30 s, so that a
    broken test cannot hang the suite."""

    def __init__(self):
        self.started = threading.Event()
        self._release = threading.Event()
        self.calls = 0

    def __call__(self):
        self.calls += 1
        self.started.set()
        self._release.wait(30)

    def open(self):
        self._release.set()

    def rearm(self):
        self.started.clear()
        self._release.clear()


def snapshot(definition):
    """What a refused call must leave unchanged: the definition's nodes and edges."""
    return definition.nodes(), definition.edges()


def runs_past_a_busy_event(dev, graph, slow, out, stream, kernels):
    """Record ``slow`` behind a 150 ms spin on another stream, launch ``graph`` (whose wait node
    now waits on a done event instead) and check that it did not wait for ``slow`` and filled
    ``out`` with ones."""
    busy = dev.create_stream()
    try:
        launch(busy, ONE, kernels.spin, SPIN_NS)
        busy.record(slow)
        graph.launch(stream)
        stream.sync()
        # The graph did not wait for the spinning stream. compute-sanitizer (tools/gpu/memcheck.sh)
        # runs one kernel at a time, so there the spin is always done first.
        if os.environ.get("CUDA_CORE_UNDER_SANITIZER") != "1":
            assert not slow.is_done
        assert np.array_equal(fetch(out, stream), np.ones(N))
    finally:
        busy.sync()
        busy.close()
