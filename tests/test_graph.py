"""cuda_core.graph: stream capture into graphs (cuda_core/graph/: _builder, _graph, _condition,
_host_callback)."""

import ctypes
import dataclasses
import gc
import struct
import sys
import threading
import types
import warnings
import weakref

import numpy as np
import pytest
from cuda.bindings import driver

import cuda_core
from helpers import StreamGate, eventually, run_python
from cuda_core import (CUDAError, Device, DeviceMemoryResource, GraphMemoryResource,
                       LaunchConfig, Program, ProgramOptions, launch)
from cuda_core.graph import (Graph, GraphBuilder, GraphCompleteOptions, GraphCondition,
                             GraphDebugPrintOptions)


# -- CPU ---------------------------------------------------------------------------------------

def test_all_names():
    import cuda_core.graph as graph_module

    # cuda.core 1.2.2's cuda.core.graph.__all__: 30 names.
    expected = {"Graph", "GraphBuilder", "GraphCompleteOptions", "GraphDebugPrintOptions",
                "GraphCondition", "GraphDefinition", "GraphNode", "EmptyNode", "KernelNode",
                "AllocNode", "FreeNode", "MemsetNode", "MemcpyNode", "ChildGraphNode",
                "EventRecordNode", "EventWaitNode", "HostCallbackNode", "ConditionalNode",
                "IfNode", "IfElseNode", "WhileNode", "SwitchNode", "ExecutableGraphNode",
                "ExecutableKernelNode", "ExecutableMemsetNode", "ExecutableMemcpyNode",
                "ExecutableChildGraphNode", "ExecutableEventRecordNode",
                "ExecutableEventWaitNode", "ExecutableHostCallbackNode"}
    assert len(expected) == 30
    assert set(graph_module.__all__) == expected
    theirs = sys.modules.get("cuda.core.graph")
    if theirs is None:
        try:
            import cuda.core.graph as theirs
        except ImportError:
            theirs = None
    if theirs is not None and theirs is not graph_module:  # not in compat mode
        assert set(theirs.__all__) == expected
    for name in expected:
        assert hasattr(graph_module, name), name
        assert not hasattr(cuda_core, name), name  # cuda_core.graph only, as cuda.core 1.2
    assert callable(Device.create_graph_builder)
    assert callable(cuda_core.Stream.create_graph_builder)


def test_import_does_not_load_the_driver():
    code = (
        "import cuda_core.graph\n"
        "from cuda_core.graph import GraphCompleteOptions, GraphDebugPrintOptions\n"
        "GraphCompleteOptions(auto_free_on_launch=True)\n"
        "GraphDebugPrintOptions(verbose=True)\n"
        "maps = open('/proc/self/maps').read()\n"
        "assert 'libcuda.so' not in maps, 'libcuda was loaded'\n"
        "print('ok')\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_builder_is_not_constructible():
    with pytest.raises(RuntimeError, match="create_graph_builder"):
        GraphBuilder()


@pytest.mark.parametrize("cls", [Graph, GraphCondition], ids=lambda c: c.__name__)
def test_not_constructible(cls):
    with pytest.raises(RuntimeError):
        cls()


def test_complete_options_fields_and_defaults():
    names = [f.name for f in dataclasses.fields(GraphCompleteOptions)]
    assert names == ["auto_free_on_launch", "upload_stream", "device_launch",
                     "use_node_priority"]
    opts = GraphCompleteOptions()
    assert (opts.auto_free_on_launch, opts.upload_stream, opts.device_launch,
            opts.use_node_priority) == (False, None, False, False)
    assert GraphCompleteOptions(use_node_priority=True).use_node_priority is True
    assert GraphCompleteOptions(device_launch=True).device_launch is True
    # upload_stream is kept as given and checked where a graph is completed, as cuda.core does.
    assert GraphCompleteOptions(upload_stream="s").upload_stream == "s"


@pytest.mark.parametrize("field", ["auto_free_on_launch", "device_launch", "use_node_priority"])
@pytest.mark.parametrize("value", ["no", 1.5])
def test_complete_options_flags_must_be_bool(field, value):
    with pytest.raises(TypeError, match=field):
        GraphCompleteOptions(**{field: value})


@pytest.mark.parametrize("field", ["auto_free_on_launch", "device_launch", "use_node_priority"])
@pytest.mark.parametrize("value, truth", [(1, True), (0, False), (None, False)])
def test_complete_options_flags_take_an_int_or_none_by_truth(field, value, truth):
    # As cuda.core reads them.
    opts = GraphCompleteOptions(**{field: value})
    assert bool(getattr(opts, field)) is truth


def test_device_launch_excludes_auto_free():
    with pytest.raises(ValueError, match="device_launch.*auto_free_on_launch|"
                                         "auto_free_on_launch.*device_launch"):
        GraphCompleteOptions(device_launch=True, auto_free_on_launch=True)


DEBUG_FIELDS = [
    "verbose", "runtime_types", "kernel_node_params", "memcpy_node_params",
    "memset_node_params", "host_node_params", "event_node_params",
    "ext_semas_signal_node_params", "ext_semas_wait_node_params", "kernel_node_attributes",
    "handles", "mem_alloc_node_params", "mem_free_node_params", "batch_mem_op_node_params",
    "extra_topo_info", "conditional_node_params",
]


def test_debug_print_options_fields_and_defaults():
    assert [f.name for f in dataclasses.fields(GraphDebugPrintOptions)] == DEBUG_FIELDS
    opts = GraphDebugPrintOptions()
    assert all(getattr(opts, name) is False for name in DEBUG_FIELDS)
    assert GraphDebugPrintOptions(handles=True).handles is True


@pytest.mark.parametrize("field", DEBUG_FIELDS)
def test_debug_print_options_must_be_bool(field):
    with pytest.raises(TypeError, match=field):
        GraphDebugPrintOptions(**{field: "off"})
    # Any other str by its truth value, as cuda.core takes it.
    assert GraphDebugPrintOptions(**{field: "x"}) == GraphDebugPrintOptions(**{field: True})
    assert GraphDebugPrintOptions(**{field: 1}) == GraphDebugPrintOptions(**{field: True})


def test_builder_and_graph_share_the_resource_lifecycle():
    from cuda_core._resource import Resource

    assert issubclass(GraphBuilder, Resource) and issubclass(Graph, Resource)
    assert not issubclass(GraphCondition, Resource)  # its handle belongs to its graph


def test_bare_objects_close_and_finalize_quietly():
    # Made with __new__, a builder has no stream and a Graph no handle: close() and the
    # finalizer have nothing to give back and must neither crash nor warn (a subprocess: a
    # crash must fail the test).
    code = (
        "import gc, warnings\n"
        "from cuda_core.graph import Graph, GraphBuilder\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    for cls in (Graph, GraphBuilder):\n"
        "        closed = cls.__new__(cls)\n"
        "        closed.close()\n"
        "        closed.close()\n"
        "        assert closed.is_closed and 'closed' in repr(closed)\n"
        "        dropped = cls.__new__(cls)\n"
        "        del closed, dropped\n"
        "    gc.collect()\n"
        "assert not caught, [str(w.message) for w in caught]\n"
        "print('ok')\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# -- GPU helpers -------------------------------------------------------------------------------

def _check(result):
    err = result[0]
    assert err == driver.CUresult.CUDA_SUCCESS, err
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


class DeviceArray:
    """Device memory through cuda.bindings (independent of Buffer), written and read
    synchronously from the host."""

    def __init__(self, values, dtype):
        host = np.ascontiguousarray(values, dtype=dtype)
        self.dtype, self.count, self.nbytes = host.dtype, host.size, host.nbytes
        self.ptr = int(_check(driver.cuMemAlloc(self.nbytes)))
        self.write(host)

    def write(self, values):
        host = np.ascontiguousarray(values, dtype=self.dtype)
        assert host.size == self.count
        _check(driver.cuMemcpyHtoD(self.ptr, host.ctypes.data, host.nbytes))
        _check(driver.cuCtxSynchronize())  # the copy has landed before any stream reads it

    def read(self):
        out = np.empty(self.count, self.dtype)
        _check(driver.cuMemcpyDtoH(out.ctypes.data, self.ptr, self.nbytes))
        return out

    def free(self):
        _check(driver.cuMemFree(self.ptr))


@pytest.fixture
def device_array(dev):
    """``device_array(values, dtype=np.int32)``: a DeviceArray on device 0, freed at teardown."""
    made = []

    def make(values, dtype=np.int32):
        array = DeviceArray(values, dtype)
        made.append(array)
        return array

    yield make
    for array in made:
        array.free()


N = 64
CFG = LaunchConfig(grid=1, block=N)
ONE = LaunchConfig(grid=1, block=1)

KERNELS = r"""
#define ELEMENTWISE(name, op)                                                         \
    extern "C" __global__ void name(int* x, int value, unsigned int n) {              \
        unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;                       \
        if (i < n) x[i] = op;                                                         \
    }
ELEMENTWISE(fill, value)
ELEMENTWISE(add, x[i] + value)
ELEMENTWISE(mul, x[i] * value)
ELEMENTWISE(sub, x[i] - value)

extern "C" __global__ void add_arrays(const int* a, const int* b, int* out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
"""

# cudaGraphConditionalHandle is a type NVRTC knows; cudaGraphSetConditional is a builtin the
# driver resolves at load time, declared here as in <cuda_device_runtime_api.h> (that header
# needs crt/host_defines.h, which the nvidia-cuda-runtime wheel does not ship).
CONDITIONAL_KERNELS = r"""
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(
    cudaGraphConditionalHandle handle, unsigned int value);

extern "C" __global__ void set_condition(cudaGraphConditionalHandle handle,
                                         const unsigned int* value) {
    cudaGraphSetConditional(handle, *value);
}

extern "C" __global__ void count_down(cudaGraphConditionalHandle handle, unsigned int* counter,
                                      unsigned int* trips) {
    unsigned int left = *counter - 1;
    *counter = left;
    *trips += 1;
    cudaGraphSetConditional(handle, left != 0u);
}

extern "C" __global__ void add(int* x, int value, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += value;
}
"""


def _compile(source, names):
    dev = Device(0)
    dev.set_current()
    opts = ProgramOptions(arch=f"sm_{dev.arch}", std="c++17")
    mod = Program(source, "c++", options=opts).compile("cubin")
    return types.SimpleNamespace(**{name: mod.get_kernel(name) for name in names})


@pytest.fixture(scope="module")
def k():
    return _compile(KERNELS, ["fill", "add", "mul", "sub", "add_arrays"])


@pytest.fixture(scope="module")
def ck():
    # IF/ELSE and SWITCH need a CUDA 12.8 driver; cuda-bindings 13 already needs a 13.x one.
    return _compile(CONDITIONAL_KERNELS, ["set_condition", "count_down", "add"])


def n32():
    return np.uint32(N)


def run(graph, stream):
    graph.launch(stream)
    stream.sync()


def captured(dev, *steps):
    """A builder whose building ended after the launches ``(kernel, *args)`` in ``steps``."""
    gb = dev.create_graph_builder().begin_building()
    for kernel, *args in steps:
        launch(gb, CFG, kernel, *args)
    return gb.end_building()


def in_a_fresh_thread(fn):
    """``fn()`` run on a new thread, where no context is current; its exception re-raised."""
    out = []

    def body():
        try:
            out.append((True, fn()))
        except BaseException as error:  # handed back to the caller, re-raised there
            out.append((False, error))

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    ok, value = out[0]
    if not ok:
        raise value
    return value


def current_context():
    """The address of the calling thread's current context (0 for none)."""
    err, ctx = driver.cuCtxGetCurrent()
    assert err == driver.CUresult.CUDA_SUCCESS, err
    return int(ctx)


# -- GPU: capture, launch ----------------------------------------------------------------------

@pytest.mark.gpu
def test_capture_three_kernels_and_launch_twice(dev, stream, k, device_array):
    start = np.arange(N, dtype=np.int32) - 7
    x = device_array(start)
    gb = dev.create_graph_builder()
    assert not gb.is_building and not gb.is_join_required and not gb.is_closed
    assert gb.begin_building() is gb
    assert gb.is_building
    assert gb.__cuda_stream__() == (0, int(gb.stream.handle))
    launch(gb, CFG, k.add, x.ptr, np.int32(1), n32())
    launch(gb, CFG, k.mul, x.ptr, np.int32(2), n32())
    launch(gb, CFG, k.sub, x.ptr, np.int32(3), n32())
    assert gb.end_building() is gb
    assert not gb.is_building
    graph = gb.complete()
    assert isinstance(graph, Graph) and int(graph.handle) != 0
    stream.sync()
    assert np.array_equal(x.read(), start)  # capturing ran nothing
    graph.upload(stream)
    run(graph, stream)
    once = (start + 1) * 2 - 3
    assert np.array_equal(x.read(), once)

    class Foreign:
        def __cuda_stream__(self):
            return (0, int(stream.handle))

    graph.launch(Foreign())
    stream.sync()
    assert np.array_equal(x.read(), (once + 1) * 2 - 3)
    graph.close()
    owned = gb.stream
    gb.close()
    assert gb.is_closed and owned.is_closed


@pytest.mark.gpu
def test_builder_on_an_existing_stream(dev, stream, k, device_array):
    x = device_array(np.zeros(N))
    gb = stream.create_graph_builder()
    assert gb.stream == stream
    gb.begin_building()
    assert gb.__cuda_stream__() == (0, int(stream.handle))
    launch(gb, CFG, k.fill, x.ptr, np.int32(9), n32())
    graph = gb.end_building().complete()
    gb.close()
    assert not stream.is_closed  # borrowed, not owned
    run(graph, stream)
    assert np.array_equal(x.read(), np.full(N, 9))
    graph.close()


@pytest.mark.gpu
def test_close_abandons_a_capture_in_progress(dev, stream, k, device_array):
    x = device_array(np.zeros(N))
    gb = stream.create_graph_builder().begin_building()
    launch(gb, CFG, k.fill, x.ptr, np.int32(1), n32())
    gb.close()
    gb.close()  # idempotent
    # The stream is no longer capturing: ordinary work runs on it, and synchronizes.
    launch(stream, CFG, k.add, x.ptr, np.int32(5), n32())
    stream.sync()
    assert np.array_equal(x.read(), np.full(N, 5))


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["relaxed", "global", "thread_local"])
def test_capture_modes(dev, stream, k, device_array, mode):
    x = device_array(np.zeros(N))
    launch(stream, CFG, k.add, x.ptr, np.int32(0), n32())  # first use outside capture
    stream.sync()
    gb = dev.create_graph_builder().begin_building(mode)
    launch(gb, CFG, k.add, x.ptr, np.int32(4), n32())
    graph = gb.end_building().complete()
    run(graph, stream)
    run(graph, stream)
    assert np.array_equal(x.read(), np.full(N, 8))
    graph.close()
    gb.close()


@pytest.mark.gpu
def test_mode_is_checked(dev):
    gb = dev.create_graph_builder()
    with pytest.raises(ValueError, match="mode"):
        gb.begin_building("RELAXED")
    with pytest.raises(ValueError, match="mode"):
        gb.begin_building("strict")
    with pytest.raises(TypeError, match="mode"):
        gb.begin_building(0)
    with pytest.raises(TypeError, match="mode"):
        gb.begin_building(None)
    assert not gb.is_building  # a refused mode starts nothing
    gb.begin_building("relaxed").end_building()
    gb.close()


@pytest.mark.gpu
def test_launch_with_no_context_current(dev, stream, k, device_array):
    # On a thread where no context is current, Graph.launch runs in the stream's context (a
    # refused cuGraphLaunch is retried with it pushed), and a bound default stream pushes its
    # device's context; neither is left current afterwards.
    x = device_array(np.zeros(N))
    gb = captured(dev, (k.add, x.ptr, np.int32(2), n32()))
    graph = gb.complete()

    def launch_on(s):
        before = current_context()
        graph.launch(s)
        return before, current_context()

    assert in_a_fresh_thread(lambda: launch_on(stream)) == (0, 0)
    stream.sync()
    assert np.array_equal(x.read(), np.full(N, 2))
    default = dev.default_stream
    assert in_a_fresh_thread(lambda: launch_on(default)) == (0, 0)
    _check(driver.cuCtxSynchronize())  # the per-thread default stream, too, if it is that
    assert np.array_equal(x.read(), np.full(N, 4))
    graph.close()
    gb.close()


@pytest.mark.gpu
def test_builder_and_graph_calls_leave_no_context_behind(dev, stream):
    # Each call that needs the builder's or the graph's context makes it current for itself
    # on a thread where none is, and only for the call.
    def fork_and_join(builder):
        builder.begin_building()
        _, forked = builder.split(2)
        GraphBuilder.join(builder, forked)
        return current_context()

    gb, same = dev.create_graph_builder(), dev.create_graph_builder()
    assert in_a_fresh_thread(lambda: fork_and_join(gb)) == 0
    gb.end_building()
    fork_and_join(same)  # the same topology, for update()
    same.end_building()

    def complete_and_launch():
        graph = gb.complete()
        graph.upload(stream)
        graph.update(same)
        graph.launch(stream)
        return graph, current_context()

    graph, left = in_a_fresh_thread(complete_and_launch)
    assert left == 0
    stream.sync()
    graph.close()
    gb.close()
    same.close()


@pytest.mark.gpu
def test_dropped_builders_and_graphs_clean_up_quietly(dev, stream, k, device_array):
    x = device_array(np.zeros(N))
    building = stream.create_graph_builder().begin_building()
    launch(building, CFG, k.fill, x.ptr, np.int32(1), n32())
    ended = captured(dev, (k.fill, x.ptr, np.int32(1), n32()))
    owned = ended.stream
    graph = ended.complete()
    refs = [weakref.ref(obj) for obj in (building, ended, graph)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del building, ended, graph
        gc.collect()
    assert [ref() for ref in refs] == [None] * 3
    assert [str(w.message) for w in caught] == []
    # The capture in progress was abandoned: the stream runs ordinary work again.
    launch(stream, CFG, k.add, x.ptr, np.int32(5), n32())
    stream.sync()
    assert np.array_equal(x.read(), np.full(N, 5))
    # close() closes the stream a builder made; dropped, the builder leaves it to its holders.
    assert not owned.is_closed
    owned.close()


# -- GPU: fork and join ------------------------------------------------------------------------

@pytest.mark.gpu
def test_split_and_join(dev, stream, k, device_array):
    a, b = device_array(np.zeros(N)), device_array(np.zeros(N))
    c = device_array(np.zeros(N))
    gb = dev.create_graph_builder().begin_building()
    launch(gb, CFG, k.fill, a.ptr, np.int32(1), n32())
    launch(gb, CFG, k.fill, b.ptr, np.int32(1), n32())
    b0, b1 = gb.split(2)
    assert b0 is gb and not b0.is_join_required
    assert b1.is_join_required and b1.is_building
    assert b1.stream != b0.stream
    with pytest.raises(RuntimeError, match="forked off with split"):  # as cuda.core 1.3
        b1.end_building()
    assert b1.is_building  # the refusal changed nothing
    launch(b0, CFG, k.add, a.ptr, np.int32(4), n32())  # each branch follows the fills
    launch(b1, CFG, k.add, b.ptr, np.int32(6), n32())
    joined = GraphBuilder.join(b1, b0)
    assert joined is gb
    assert b1.is_closed and not gb.is_closed
    launch(joined, CFG, k.add_arrays, a.ptr, b.ptr, c.ptr, n32())  # after both branches
    graph = gb.end_building().complete()
    run(graph, stream)
    assert np.array_equal(a.read(), np.full(N, 5))
    assert np.array_equal(b.read(), np.full(N, 7))
    assert np.array_equal(c.read(), np.full(N, 12))
    graph.close()
    gb.close()


@pytest.mark.gpu
def test_join_returns_the_first_builder_not_needing_a_join(dev, stream, k, device_array):
    x = device_array(np.zeros(N))
    gb = dev.create_graph_builder().begin_building()
    b0, b1, b2 = gb.split(3)
    assert (b1.is_join_required, b2.is_join_required) == (True, True)
    launch(b2, CFG, k.fill, x.ptr, np.int32(3), n32())
    assert GraphBuilder.join(b2, b1) is b2  # none of them is free: the first given
    assert b1.is_closed and b2.is_join_required
    launch(b2, CFG, k.mul, x.ptr, np.int32(5), n32())
    assert GraphBuilder.join(b2, b0) is b0
    launch(b0, CFG, k.add, x.ptr, np.int32(1), n32())
    graph = b0.end_building().complete()
    run(graph, stream)
    assert np.array_equal(x.read(), np.full(N, 16))
    graph.close()
    b0.close()


@pytest.mark.gpu
def test_split_builder_must_be_joined_before_it_ends(dev):
    gb = dev.create_graph_builder().begin_building()
    b0, b1 = gb.split(2)
    with pytest.raises(RuntimeError, match="GraphBuilder.join"):
        b1.end_building()
    assert b1.is_building
    GraphBuilder.join(b0, b1)
    gb.end_building()
    gb.close()


@pytest.mark.gpu
def test_split_count_is_bounded(dev):
    # Past the C int, an OverflowError at once (the GPU matrix found 2**64 creating streams
    # until it was killed); below 2, a ValueError; the capture is unharmed.
    gb = dev.create_graph_builder().begin_building()
    for count, cls in ((2**64, OverflowError), (2**31, OverflowError), (1, ValueError),
                       (-1, ValueError)):
        with pytest.raises(cls, match="split\\(\\): count must be between 2 and 2147483647"):
            gb.split(count)
    gb.end_building()
    gb.close()


@pytest.mark.gpu
def test_root_cannot_end_with_unjoined_work(dev, k, device_array):
    x = device_array(np.zeros(N))
    gb = dev.create_graph_builder().begin_building()
    _, b1 = gb.split(2)
    launch(b1, CFG, k.fill, x.ptr, np.int32(1), n32())
    with pytest.raises(RuntimeError, match="(?i)join"):
        gb.end_building()
    b1.close()
    gb.close()
    assert gb.is_closed and b1.is_closed


@pytest.mark.gpu
def test_split_and_join_arguments_are_checked(dev):
    gb = dev.create_graph_builder()
    with pytest.raises(RuntimeError):
        gb.split(2)  # not building
    gb.begin_building()
    for bad in (1, 0, -2):
        with pytest.raises(ValueError, match="count"):
            gb.split(bad)
    for bad in (2.0, "2", None):
        with pytest.raises(TypeError, match="count"):
            gb.split(bad)
    with pytest.raises(ValueError):
        GraphBuilder.join(gb)
    with pytest.raises(ValueError):
        GraphBuilder.join()
    with pytest.raises(ValueError):
        GraphBuilder.join(gb, gb)
    with pytest.raises(TypeError):
        GraphBuilder.join(gb, "builder")
    assert gb.is_building and not gb.is_closed
    gb.end_building()
    gb.close()


# -- GPU: life cycle errors --------------------------------------------------------------------

@pytest.mark.gpu
def test_life_cycle_order_is_enforced(dev, k, device_array):
    x = device_array(np.zeros(N))
    gb = dev.create_graph_builder()
    with pytest.raises(RuntimeError):
        gb.end_building()
    with pytest.raises(RuntimeError):
        gb.complete()
    with pytest.raises(RuntimeError):
        gb.debug_dot_print("unused.dot")
    gb.begin_building()
    with pytest.raises(RuntimeError):
        gb.begin_building()
    launch(gb, CFG, k.fill, x.ptr, np.int32(1), n32())
    with pytest.raises(RuntimeError):
        gb.complete()
    assert gb.is_building
    gb.end_building()
    with pytest.raises(RuntimeError):
        gb.end_building()
    with pytest.raises(RuntimeError, match="builds one graph"):
        gb.begin_building()
    with pytest.raises(RuntimeError):
        gb.create_condition()
    gb.complete().close()
    gb.close()


@pytest.mark.gpu
def test_capture_invalidated_by_the_driver_is_a_cuda_error(dev):
    gb = dev.create_graph_builder().begin_building()
    with pytest.raises(CUDAError):
        gb.stream.sync()  # illegal on a capturing stream: the driver invalidates the capture
    with pytest.raises(CUDAError):
        gb.end_building()
    gb.close()


@pytest.mark.gpu
@pytest.mark.parametrize("use", [
    lambda gb, k: gb.begin_building(),
    lambda gb, k: gb.end_building(),
    lambda gb, k: gb.complete(),
    lambda gb, k: gb.split(2),
    lambda gb, k: gb.is_building,
    lambda gb, k: gb.is_join_required,
    lambda gb, k: gb.stream,
    lambda gb, k: gb.create_condition(),
    lambda gb, k: gb.callback(lambda: None),
    lambda gb, k: gb.debug_dot_print("unused.dot"),
    lambda gb, k: gb.__cuda_stream__(),
    lambda gb, k: launch(gb, CFG, k.fill, 0, np.int32(0), n32()),
], ids=["begin_building", "end_building", "complete", "split", "is_building",
        "is_join_required", "stream", "create_condition", "callback", "debug_dot_print",
        "__cuda_stream__", "launch"])
def test_closed_builder_refuses_use(dev, k, use):
    gb = dev.create_graph_builder()
    gb.close()
    with pytest.raises(RuntimeError, match="this GraphBuilder is closed"):
        use(gb, k)
    gb.close()
    assert gb.is_closed


@pytest.mark.gpu
def test_closed_builder_cannot_be_embedded(dev):
    parent = dev.create_graph_builder().begin_building()
    child = dev.create_graph_builder().begin_building().end_building()
    child.close()
    with pytest.raises(RuntimeError, match="closed"):
        parent.embed(child)
    parent.end_building()
    parent.close()


@pytest.mark.gpu
def test_closed_graph_refuses_use(dev, stream, k, device_array):
    x = device_array(np.zeros(N))
    gb = captured(dev, (k.fill, x.ptr, np.int32(1), n32()))
    graph = gb.complete()
    graph.close()
    graph.close()
    assert graph.is_closed
    for use in (lambda: graph.launch(stream), lambda: graph.upload(stream),
                lambda: graph.update(gb), lambda: graph.handle):
        with pytest.raises(RuntimeError, match="this Graph is closed"):
            use()
    gb.close()


# -- GPU: conditional nodes --------------------------------------------------------------------

@pytest.mark.gpu
def test_if_then(dev, stream, ck, device_array):
    flag = device_array([1], np.uint32)
    x = device_array(np.zeros(N))
    gb = dev.create_graph_builder().begin_building()
    cond = gb.create_condition()
    assert isinstance(cond, GraphCondition)
    launch(gb, ONE, ck.set_condition, cond, flag.ptr)
    body = gb.if_then(cond)
    assert isinstance(body, GraphBuilder) and not body.is_building
    body.begin_building()
    launch(body, CFG, ck.add, x.ptr, np.int32(1), n32())
    body.end_building()
    launch(gb, CFG, ck.add, x.ptr, np.int32(100), n32())  # after the conditional node
    graph = gb.end_building().complete()
    run(graph, stream)
    assert np.array_equal(x.read(), np.full(N, 101))
    flag.write([0])
    run(graph, stream)
    assert np.array_equal(x.read(), np.full(N, 201))
    flag.write([7])  # any nonzero value is true
    run(graph, stream)
    assert np.array_equal(x.read(), np.full(N, 302))
    graph.close()
    body.close()
    gb.close()


@pytest.mark.gpu
def test_if_else(dev, stream, ck, device_array):
    flag = device_array([1], np.uint32)
    x = device_array(np.zeros(N))
    gb = dev.create_graph_builder().begin_building()
    cond = gb.create_condition()
    launch(gb, ONE, ck.set_condition, cond, flag.ptr)
    then, otherwise = gb.if_else(cond)
    for body, value in ((then, 1), (otherwise, 1000)):
        assert not body.is_building
        body.begin_building()
        launch(body, CFG, ck.add, x.ptr, np.int32(value), n32())
        body.end_building()
    graph = gb.end_building().complete()
    run(graph, stream)
    assert np.array_equal(x.read(), np.full(N, 1))
    flag.write([0])
    run(graph, stream)
    assert np.array_equal(x.read(), np.full(N, 1001))
    graph.close()
    then.close()
    otherwise.close()
    gb.close()


@pytest.mark.gpu
def test_switch(dev, stream, ck, device_array):
    flag = device_array([0], np.uint32)
    x = device_array(np.zeros(N))
    gb = dev.create_graph_builder().begin_building()
    cond = gb.create_condition()
    launch(gb, ONE, ck.set_condition, cond, flag.ptr)
    branches = gb.switch(cond, 3)
    assert isinstance(branches, tuple) and len(branches) == 3
    for i, body in enumerate(branches):
        body.begin_building()
        launch(body, CFG, ck.add, x.ptr, np.int32(10 ** i), n32())
        body.end_building()
    graph = gb.end_building().complete()
    expected = 0
    for value in (0, 2, 1, 2, 3, 4000000000):  # 3 and above select no branch
        flag.write([value])
        run(graph, stream)
        expected += 10 ** value if value < 3 else 0
        assert np.array_equal(x.read(), np.full(N, expected)), value
    assert expected == 211
    graph.close()
    for body in branches:
        body.close()
    gb.close()


@pytest.mark.gpu
def test_while_loop_counts_down(dev, stream, ck, device_array):
    counter = device_array([5], np.uint32)
    trips = device_array([0], np.uint32)
    gb = dev.create_graph_builder().begin_building()
    cond = gb.create_condition(default_value=1)
    body = gb.while_loop(cond)
    assert not body.is_building
    body.begin_building()
    launch(body, ONE, ck.count_down, cond, counter.ptr, trips.ptr)
    body.end_building()
    graph = gb.end_building().complete()
    run(graph, stream)
    assert (counter.read()[0], trips.read()[0]) == (0, 5)
    # The condition is reset to its default at each launch, so the loop runs again.
    counter.write([3])
    run(graph, stream)
    assert (counter.read()[0], trips.read()[0]) == (0, 8)
    graph.close()
    body.close()
    gb.close()


@pytest.mark.gpu
@pytest.mark.parametrize("default, runs", [(0, False), (1, True), (2**32 - 1, True)])
def test_default_value_alone_decides(dev, stream, ck, device_array, default, runs):
    x = device_array(np.zeros(N))
    gb = dev.create_graph_builder().begin_building()
    body = gb.if_then(gb.create_condition(default_value=default))
    body.begin_building()
    launch(body, CFG, ck.add, x.ptr, np.int32(3), n32())
    body.end_building()
    graph = gb.end_building().complete()
    run(graph, stream)
    assert np.array_equal(x.read(), np.full(N, 3 if runs else 0))
    graph.close()
    body.close()
    gb.close()


@pytest.mark.gpu
def test_create_condition_checks_default_value(dev):
    gb = dev.create_graph_builder().begin_building()
    for bad in (np.True_, 1.0, "1", np.float32(1)):
        with pytest.raises(TypeError, match="default_value"):
            gb.create_condition(default_value=bad)
    gb.create_condition(default_value=True)  # Python's bool is an int, as for cuda.core
    gb.create_condition(default_value=False)
    for bad in (-1, 2**32, 2**64):
        with pytest.raises(ValueError, match="default_value"):
            gb.create_condition(default_value=bad)
    gb.create_condition(default_value=0)
    gb.create_condition(default_value=2**32 - 1)
    gb.end_building()
    gb.close()


@pytest.mark.gpu
def test_counts_and_default_value_take_integer_likes(dev):
    # Checked by cuda_core._checks: an int or an object with __index__ (NumPy integers), never
    # NumPy's bool.
    gb = dev.create_graph_builder().begin_building()
    GraphBuilder.join(*gb.split(np.int64(2)))
    cond = gb.create_condition(default_value=np.uint32(4))
    for bad in (0, 2**32, -1):
        with pytest.raises(ValueError, match="switch\\(\\): count"):
            gb.switch(cond, bad)
    for bad in (np.True_, 2.0, None):
        with pytest.raises(TypeError, match="switch\\(\\): count"):
            gb.switch(cond, bad)
    bodies = gb.switch(cond, np.int16(3))
    assert len(bodies) == 3
    gb.end_building()
    for b in (*bodies, gb):
        b.close()


@pytest.mark.gpu
def test_conditional_arguments_and_bodies_are_checked(dev, ck):
    gb = dev.create_graph_builder().begin_building()
    other = dev.create_graph_builder().begin_building()
    foreign = other.create_condition()
    cond = gb.create_condition(default_value=0)
    for make in (gb.if_then, gb.if_else, gb.while_loop, lambda c: gb.switch(c, 2)):
        with pytest.raises(ValueError, match="another graph"):
            make(foreign)  # made by another graph
        with pytest.raises(TypeError):
            make(int(cond.handle))  # a GraphCondition, not its handle
    body = gb.if_then(cond)
    body.begin_building().end_building()
    with pytest.raises(RuntimeError):
        body.complete()  # the body belongs to the parent's conditional node
    gb.end_building()
    with pytest.raises(RuntimeError):
        gb.if_then(cond)  # the parent no longer builds
    for b in (body, gb, other):
        b.close()


@pytest.mark.gpu
def test_condition_packs_to_its_handle(dev):
    from cuda_core._kernel_args import _packed_arguments

    gb = dev.create_graph_builder().begin_building()
    cond = gb.create_condition()
    second = gb.create_condition(default_value=4)
    assert isinstance(cond.handle, int) and 0 <= cond.handle < 2**64
    assert _packed_arguments(cond) == [struct.pack("<Q", cond.handle)]
    assert _packed_arguments(second, cond) == [struct.pack("<Q", second.handle),
                                               struct.pack("<Q", cond.handle)]
    assert second.handle != cond.handle and cond != second
    assert cond == cond and not (cond != cond)
    assert len({cond, second, cond}) == 2
    gb.end_building()
    gb.close()


# -- GPU: child graphs, host callbacks ---------------------------------------------------------

@pytest.mark.gpu
def test_embed(dev, stream, k, device_array):
    x = device_array(np.zeros(N))
    child = captured(dev, (k.add, x.ptr, np.int32(5), n32()), (k.mul, x.ptr, np.int32(3), n32()))
    parent = dev.create_graph_builder().begin_building()
    launch(parent, CFG, k.fill, x.ptr, np.int32(1), n32())
    parent.embed(child)
    child.close()  # the node holds its own copy of the child graph
    launch(parent, CFG, k.sub, x.ptr, np.int32(2), n32())
    graph = parent.end_building().complete()
    run(graph, stream)
    assert np.array_equal(x.read(), np.full(N, 16))
    graph.close()
    parent.close()


@pytest.mark.gpu
def test_python_callback(dev, stream, k, device_array):
    x = device_array(np.zeros(N))
    calls = []
    gb = dev.create_graph_builder().begin_building()
    launch(gb, CFG, k.fill, x.ptr, np.int32(2), n32())
    gb.callback(lambda: calls.append("ran"))  # no CUDA call allowed in a host node
    launch(gb, CFG, k.add, x.ptr, np.int32(1), n32())
    graph = gb.end_building().complete()
    assert calls == []
    run(graph, stream)
    assert calls == ["ran"]
    run(graph, stream)
    assert calls == ["ran", "ran"]
    assert np.array_equal(x.read(), np.full(N, 3))
    graph.close()
    gb.close()


@pytest.mark.gpu
def test_python_callback_exception_is_unraisable(dev, stream, monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)

    def boom():
        raise ValueError("from the host node")

    gb = dev.create_graph_builder().begin_building()
    gb.callback(boom)
    graph = gb.end_building().complete()
    run(graph, stream)  # the graph still completes
    assert [type(u.exc_value) for u in seen] == [ValueError]
    assert str(seen[0].exc_value) == "from the host node"
    graph.close()
    gb.close()


@pytest.mark.gpu
def test_callback_arguments_are_checked(dev):
    c_fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda address: None)
    gb = dev.create_graph_builder().begin_building()
    with pytest.raises(TypeError, match="callback\\(\\): fn must be callable"):
        gb.callback(42)
    with pytest.raises(ValueError, match="user_data is for ctypes functions"):
        gb.callback(lambda: None, user_data=b"data")  # as cuda.core: ValueError
    wrong = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(lambda address: 0)
    with pytest.raises(TypeError, match="CFUNCTYPE\\(None, c_void_p\\)"):
        gb.callback(wrong)
    for bad in ("1", 1.0, True, object()):
        with pytest.raises(TypeError, match="callback\\(\\): user_data"):
            gb.callback(c_fn, user_data=bad)
    for bad in (-1, 2**64):
        with pytest.raises(ValueError, match="callback\\(\\): user_data"):
            gb.callback(c_fn, user_data=bad)
    assert gb.is_building
    gb.end_building()
    gb.close()


@pytest.mark.gpu
def test_refused_launch_gives_its_callback_references_back(dev, stream, k):
    def note():
        pass

    baseline = sys.getrefcount(note)
    gb = dev.create_graph_builder().begin_building()
    buf = GraphMemoryResource(dev).allocate(4 * N, stream=gb)  # not freed inside the graph
    launch(gb, CFG, k.fill, buf, np.int32(1), n32())
    gb.callback(note)
    graph = gb.end_building().complete()
    run(graph, stream)
    with pytest.raises(CUDAError):
        graph.launch(stream)  # its allocation from the last launch is still live
    buf.close(stream)
    stream.sync()
    graph.close()
    gb.close()
    del graph, gb
    # the refused launch held nothing back
    assert eventually(lambda: sys.getrefcount(note) == baseline)


@pytest.mark.gpu
def test_ctypes_callback_with_user_data(dev, stream):
    received = []

    @ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    def count(address):
        received.append(address)
        ctypes.c_uint32.from_address(address).value += 1

    @ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    def read_bytes(address):
        received.append(ctypes.string_at(address, 5))

    counter = ctypes.c_uint32(0)
    gb = dev.create_graph_builder().begin_building()
    gb.callback(count, user_data=ctypes.addressof(counter))
    gb.callback(read_bytes, user_data=b"hello")
    graph = gb.end_building().complete()
    run(graph, stream)
    run(graph, stream)
    assert counter.value == 2
    assert received == [ctypes.addressof(counter), b"hello"] * 2
    graph.close()
    gb.close()


@pytest.mark.gpu
def test_callbacks_outlive_a_graph_closed_with_launches_queued(dev, stream):
    ran = []

    def note():
        ran.append("python")

    @ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    def c_note(address):
        ran.append(ctypes.string_at(address, 2))

    baseline = sys.getrefcount(note)
    gb = dev.create_graph_builder().begin_building()
    gb.callback(note)
    gb.callback(c_note, user_data=b"ok")
    graph = gb.end_building().complete()
    gate = StreamGate(stream)
    try:
        graph.launch(stream)
        graph.launch(stream)
        graph.close()  # queued launches still run, and their callbacks with them
        gb.close()
        del graph, gb, c_note
        gc.collect()
        assert ran == []  # held back by the gate
    finally:
        gate.open()
    stream.sync()
    gate.close()
    assert ran == ["python", b"ok"] * 2
    # once the driver let the graphs' user objects go
    assert eventually(lambda: sys.getrefcount(note) == baseline)


# -- GPU: update, debug print, complete options ------------------------------------------------

@pytest.mark.gpu
def test_update_with_the_same_topology(dev, stream, k, device_array):
    x = device_array(np.zeros(N))

    def fill_then_add(value):
        return captured(dev, (k.fill, x.ptr, np.int32(value), n32()),
                        (k.add, x.ptr, np.int32(1), n32()))

    first = fill_then_add(10)
    graph = first.complete()
    run(graph, stream)
    assert np.array_equal(x.read(), np.full(N, 11))
    second = fill_then_add(20)
    graph.update(second)
    run(graph, stream)
    assert np.array_equal(x.read(), np.full(N, 21))
    graph.close()
    first.close()
    second.close()


@pytest.mark.gpu
def test_update_refuses_another_topology(dev, k, device_array):
    x = device_array(np.zeros(N))
    two = captured(dev, (k.fill, x.ptr, np.int32(1), n32()), (k.add, x.ptr, np.int32(1), n32()))
    one = captured(dev, (k.fill, x.ptr, np.int32(1), n32()))
    graph = two.complete()
    with pytest.raises(CUDAError, match="(?i)topology"):
        graph.update(one)
    with pytest.raises(TypeError):
        graph.update(graph)
    graph.close()
    two.close()
    one.close()


@pytest.mark.gpu
def test_debug_dot_print(dev, k, device_array, tmp_path):
    x = device_array(np.zeros(N))
    gb = captured(dev, (k.fill, x.ptr, np.int32(1), n32()), (k.mul, x.ptr, np.int32(2), n32()))
    plain, verbose, by_dict = (tmp_path / name for name in ("plain.dot", "verbose.dot",
                                                             "dict.dot"))
    gb.debug_dot_print(str(plain))
    gb.debug_dot_print(str(verbose), GraphDebugPrintOptions(verbose=True,
                                                            kernel_node_params=True))
    gb.debug_dot_print(str(by_dict), {"kernel_node_params": True, "handles": True})
    for path in (plain, verbose, by_dict):
        assert path.read_text().startswith("digraph"), path
    assert len(verbose.read_text()) > len(plain.read_text())
    with pytest.raises(TypeError):
        gb.debug_dot_print(str(plain), {"not_a_flag": True})
    gb.debug_dot_print(plain)  # an os.PathLike
    for bad in (b"x.dot", 3, None):  # a str path only, as cuda.core
        with pytest.raises(TypeError, match="path must be a str or an os.PathLike of one"):
            gb.debug_dot_print(bad)
    gb.close()


@pytest.mark.gpu
def test_complete_options(dev, stream, k, device_array):
    x = device_array(np.zeros(N))
    variants = [GraphCompleteOptions(upload_stream=stream), {"upload_stream": stream},
                {"use_node_priority": True}, GraphCompleteOptions(device_launch=True), None]
    for i, options in enumerate(variants):
        gb = captured(dev, (k.add, x.ptr, np.int32(1), n32()))
        graph = gb.complete(options)
        run(graph, stream)
        assert np.array_equal(x.read(), np.full(N, i + 1)), options
        graph.close()
        gb.close()
    gb = captured(dev, (k.add, x.ptr, np.int32(1), n32()))
    with pytest.raises(TypeError, match="not_an_option"):
        gb.complete({"not_an_option": True})
    with pytest.raises(TypeError):
        gb.complete(["auto_free_on_launch"])
    with pytest.raises(TypeError, match="upload_stream"):
        gb.complete(GraphCompleteOptions(upload_stream=1.5))
    gb.close()


def _allocating_graph(dev, k, out):
    """Captures: allocate graph memory, fill it, add 1, copy it out to ``out``; no free."""
    gb = dev.create_graph_builder().begin_building()
    buf = GraphMemoryResource(dev).allocate(4 * N, stream=gb)
    launch(gb, CFG, k.fill, buf, np.int32(41), n32())
    launch(gb, CFG, k.add, buf, np.int32(1), n32())
    buf.copy_to(out, stream=gb)
    return gb.end_building(), buf


@pytest.mark.gpu
def test_a_pool_resource_does_not_allocate_in_a_capture(dev):
    # As cuda.core documents: a DeviceMemoryResource (any pool resource) refuses a capturing
    # stream; GraphMemoryResource is the one for graphs. The capture goes on unharmed.
    gb = dev.create_graph_builder().begin_building()
    for mr in (dev.memory_resource, DeviceMemoryResource(dev, {})):
        with pytest.raises(RuntimeError, match="capturing stream.*GraphMemoryResource"):
            mr.allocate(64, stream=gb)
    GraphMemoryResource(dev).allocate(64, stream=gb).close(gb)
    gb.end_building().complete()
    gb.close()


@pytest.mark.gpu
def test_graph_memory_allocated_and_freed_inside(dev, stream, k):
    # GraphMemoryResource on a capturing stream: the driver records an allocation node, and the
    # close on the builder a free node.
    mr = GraphMemoryResource(dev)
    out = dev.allocate(4 * N, stream=stream)  # ordinary memory, outside the graph
    gb = dev.create_graph_builder().begin_building()
    buf = mr.allocate(4 * N, stream=gb)
    assert buf.size == 4 * N
    launch(gb, CFG, k.fill, buf, np.int32(41), n32())
    launch(gb, CFG, k.add, buf, np.int32(1), n32())
    buf.copy_to(out, stream=gb)
    buf.close(gb)  # a free node in the same graph
    graph = gb.end_building().complete()
    for _ in range(2):  # freed inside: it can launch again
        run(graph, stream)
        back = np.empty(N, np.int32)
        _check(driver.cuMemcpyDtoH(back.ctypes.data, int(out.handle), 4 * N))
        assert np.array_equal(back, np.full(N, 42))
    graph.close()
    gb.close()
    out.close(stream)


@pytest.mark.gpu
def test_graph_memory_outlives_the_builder_that_allocated_it(dev, stream, k):
    gb = dev.create_graph_builder().begin_building()
    capture_stream = gb.stream
    buf = GraphMemoryResource(dev).allocate(4 * N, stream=gb)  # freed by nothing in the graph
    launch(gb, CFG, k.fill, buf, np.int32(7), n32())
    graph = gb.end_building().complete()
    run(graph, stream)
    back = np.empty(N, np.int32)
    _check(driver.cuMemcpyDtoH(back.ctypes.data, int(buf.handle), 4 * N))
    assert np.array_equal(back, np.full(N, 7))
    gb.close()
    # The buffer's free stream is the builder's own Stream, closed with it: close() without a
    # stream then waits for the context instead of using the destroyed stream.
    assert capture_stream.is_closed
    address = int(buf.handle)
    buf.close()
    run(graph, stream)  # the memory was given back, so the graph may allocate it again
    GraphMemoryResource(dev).deallocate(address, 4 * N, stream=stream)  # at the same address
    stream.sync()
    graph.close()


@pytest.mark.gpu
def test_auto_free_on_launch(dev, stream, k):
    out = dev.allocate(4 * N, stream=stream)
    strict, strict_buf = _allocating_graph(dev, k, out)
    graph = strict.complete()
    run(graph, stream)
    with pytest.raises(CUDAError):
        graph.launch(stream)  # its allocation from the last launch is still live
    strict_buf.close(stream)
    stream.sync()
    graph.close()
    strict.close()

    freeing, buf = _allocating_graph(dev, k, out)
    graph = freeing.complete({"auto_free_on_launch": True})
    run(graph, stream)
    run(graph, stream)  # the launch frees the previous launch's allocation
    back = np.empty(N, np.int32)
    _check(driver.cuMemcpyDtoH(back.ctypes.data, int(out.handle), 4 * N))
    assert np.array_equal(back, np.full(N, 42))
    buf.close(stream)
    stream.sync()
    graph.close()
    freeing.close()
    out.close(stream)


# -- GPU: two devices --------------------------------------------------------------------------

@pytest.mark.gpu
def test_graph_of_another_device(k):
    from cuda_core import System

    if System().num_devices < 2:
        pytest.skip("needs two GPUs")
    d0, d1 = Device(0), Device(1)
    d1.set_current()
    x = DeviceArray(np.zeros(N), np.int32)  # on device 1
    gb = d1.create_graph_builder()
    assert gb.stream.device == d1
    gb.begin_building()
    launch(gb, CFG, k.fill, x.ptr, np.int32(6), n32())
    launch(gb, CFG, k.mul, x.ptr, np.int32(7), n32())
    graph = gb.end_building().complete()
    s1 = d1.create_stream()
    d0.set_current()
    run(graph, s1)  # launched with device 0 current
    d1.set_current()
    assert np.array_equal(x.read(), np.full(N, 42))
    graph.close()
    gb.close()
    s1.close()
    x.free()
    d0.set_current()
