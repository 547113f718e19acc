"""cuda_core.graph: explicit graphs (cuda_core/graph/_definition, _node_params, _adjacency):
GraphDefinition, GraphNode and the empty, kernel, memset and memcpy nodes."""

import ctypes
import gc
import inspect
import threading
import types
import weakref

import numpy as np
import pytest
from cuda.bindings import driver

import cuda_core
from helpers import eventually, has_gpu, run_python
from cuda_core import Buffer, Device, LaunchConfig, Program, ProgramOptions
from cuda_core.graph import (EmptyNode, Graph, GraphDefinition, GraphNode, KernelNode,
                             MemcpyNode, MemsetNode)

NEW_NAMES = {"GraphDefinition", "GraphNode", "EmptyNode", "KernelNode", "MemsetNode",
             "MemcpyNode"}


# -- CPU ---------------------------------------------------------------------------------------

def test_names_are_in_the_graph_namespace_only():
    import cuda_core.graph as graph_module

    assert NEW_NAMES <= set(graph_module.__all__)
    for name in NEW_NAMES:
        assert hasattr(graph_module, name), name
        assert not hasattr(cuda_core, name), name  # cuda.core 1.2 has them in graph only
    for cls in (EmptyNode, KernelNode, MemsetNode, MemcpyNode):
        assert issubclass(cls, GraphNode)


def _shape(fn):
    return [(p.name, p.kind.name, p.default) for p in inspect.signature(fn).parameters.values()]


BUILDERS = ["launch", "memset", "memcpy", "empty", "join"]


@pytest.mark.parametrize("cls_name, method", [
    *[("GraphDefinition", m) for m in BUILDERS + ["instantiate", "debug_dot_print", "nodes",
                                                  "edges"]],
    *[("GraphNode", m) for m in ["launch", "memset", "memcpy", "join", "destroy"]],
])
def test_signatures_are_cuda_cores(cls_name, method):
    theirs = pytest.importorskip("cuda.core.graph")
    import cuda_core.graph as ours

    assert _shape(getattr(getattr(ours, cls_name), method)) == \
        _shape(getattr(getattr(theirs, cls_name), method))


def test_node_properties_are_cuda_cores():
    theirs = pytest.importorskip("cuda.core.graph")
    import cuda_core.graph as ours

    for name, props in {"GraphNode": ["type", "graph", "handle", "is_valid", "pred", "succ"],
                        "KernelNode": ["grid", "block", "shmem_size", "kernel", "config"],
                        "MemsetNode": ["dptr", "value", "element_size", "width", "height",
                                       "pitch"],
                        "MemcpyNode": ["dst", "src", "size"],
                        "GraphDefinition": ["handle", "is_valid"]}.items():
        for prop in props:
            assert hasattr(getattr(theirs, name), prop), (name, prop)  # the list is right
            assert hasattr(getattr(ours, name), prop), (name, prop)


@pytest.mark.parametrize("cls", [GraphNode, EmptyNode, KernelNode, MemsetNode, MemcpyNode],
                         ids=lambda c: c.__name__)
def test_nodes_are_not_constructible(cls):
    with pytest.raises(RuntimeError, match="builder methods"):
        cls()


def test_definition_is_a_resource():
    from cuda_core._resource import Resource

    assert issubclass(GraphDefinition, Resource)
    assert not issubclass(GraphNode, Resource)  # a view: the definition owns the nodes


def test_new_definition_without_a_gpu_is_a_clear_error_or_works():
    code = (
        "from cuda_core.graph import GraphDefinition\n"
        "from cuda_core import CUDAError\n"
        "try:\n"
        "    d = GraphDefinition()\n"
        "except CUDAError as e:\n"
        "    print('error', e)\n"
        "else:\n"
        "    assert d.is_valid and int(d.handle) != 0 and d.nodes() == set()\n"
        "    d.close()\n"
        "    assert not d.is_valid\n"
        "    print('made')\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    if has_gpu():
        assert result.stdout.strip() == "made"
    else:
        assert result.stdout.startswith("error"), result.stdout


def bare():
    """A definition made without __init__: no CUgraph, so a builder whose arguments pass its
    checks stops at 'not initialized', before any driver call."""
    return GraphDefinition.__new__(GraphDefinition)


NOT_INITIALIZED = "not initialized"


@pytest.mark.parametrize("args, kwargs, error, match", [
    ((0x1000, 1.0, 4), {}, TypeError, "not float"),
    ((0x1000, 256, 4), {}, ValueError, "value"),
    ((0x1000, -1, 4), {}, ValueError, "value"),
    ((0x1000, np.int64(1), 4), {}, ValueError, "1, 2 or 4 bytes"),
    ((0x1000, 1.5, 4), {}, TypeError, "buffer protocol"),
    ((0x1000, 1, 0), {}, ValueError, "width"),
    ((0x1000, 1, 4, 0), {}, ValueError, "height"),
    ((0x1000, 1, 4, 2, 3), {}, ValueError, "pitch"),
    ((0x1000, 1, 4, 1, -1), {}, ValueError, "pitch"),
    ((0x1001, np.uint32(1), 4), {}, ValueError, "aligned"),
    ((0, 1, 4), {}, ValueError, "null"),
    ((-5, 1, 4), {}, ValueError, "address"),
    (("x", 1, 4), {}, TypeError, "dst"),
    ((Buffer.from_handle(0x1000, 16), np.uint32(1), 5), {}, ValueError, "20 bytes"),
    ((Buffer.from_handle(0x1000, 64), 1, 8, 3, 32), {}, ValueError, "72 bytes"),
    ((Buffer.from_handle(0x1000, 16), 1, 4), {"dst_owner": object()}, ValueError, "dst_owner"),
    # Arguments that pass: the definition's own state is checked next.
    ((0x1000, 7, 4), {}, RuntimeError, NOT_INITIALIZED),
    ((0x1000, np.uint16(7), 4, 2, 8), {}, RuntimeError, NOT_INITIALIZED),
    ((0x1000, np.float32(1.5), 4), {"dst_owner": object()}, RuntimeError, NOT_INITIALIZED),
    ((Buffer.from_handle(0x1000, 64), 1, 8, 3, 28), {}, RuntimeError, NOT_INITIALIZED),
])
def test_memset_arguments_are_checked_first(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        bare().memset(*args, **kwargs)


def test_closed_buffer_is_refused():
    buf = Buffer.from_handle(0x1000, 64)
    buf.close()
    with pytest.raises(RuntimeError, match="closed"):
        bare().memset(buf, 1, 4)
    with pytest.raises(RuntimeError, match="closed"):
        bare().memcpy(0x2000, buf, 4)


@pytest.mark.parametrize("args, kwargs, error, match", [
    ((0x1000, 0x2000, 0), {}, ValueError, "at least 1"),
    ((0x1000, 0x2000, -1), {}, ValueError, "size"),
    ((0x1000, 0x2000, 1.0), {}, TypeError, "size"),
    ((0x1000, None, 4), {}, TypeError, "src"),
    ((Buffer.from_handle(0x1000, 8), 0x2000, 9), {}, ValueError, "dst, a Buffer of 8"),
    ((0x1000, Buffer.from_handle(0x2000, 8), 9), {}, ValueError, "src, a Buffer of 8"),
    ((0x1000, Buffer.from_handle(0x2000, 8), 4), {"src_owner": 1}, ValueError, "src_owner"),
    ((0x1000, 0x2000, 4), {"dst_owner": object(), "src_owner": object()}, RuntimeError,
     NOT_INITIALIZED),
    ((Buffer.from_handle(0x1000, 8), Buffer.from_handle(0x2000, 8), 8), {}, RuntimeError,
     NOT_INITIALIZED),
])
def test_memcpy_arguments_are_checked_first(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        bare().memcpy(*args, **kwargs)


def test_launch_arguments_are_checked_first():
    d = bare()
    with pytest.raises(TypeError, match="config must be a LaunchConfig"):
        d.launch((1, 1), None)
    for config in (LaunchConfig(grid=2, cluster=2, block=32),
                   LaunchConfig(grid=1, block=32, is_cooperative=True),
                   LaunchConfig(grid=1, block=32, programmatic_stream_serialization=True)):
        with pytest.raises(ValueError, match="kernel node cannot take"):
            d.launch(config, None)
    with pytest.raises(TypeError, match="kernel must be a Kernel"):
        d.launch(LaunchConfig(grid=1, block=1), "kernel")


def test_bare_definition_refuses_use_and_finalizes_quietly():
    code = (
        "import gc, warnings\n"
        "from cuda_core.graph import GraphDefinition\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    d = GraphDefinition.__new__(GraphDefinition)\n"
        "    assert not d.is_valid and 'closed' in repr(d) and d == d and d != GraphDefinition.__new__(GraphDefinition)\n"
        "    for call in (d.empty, d.nodes, d.edges, d.instantiate, lambda: d.join(),\n"
        "                 lambda: d.handle, lambda: d.debug_dot_print('/dev/null')):\n"
        "        try:\n"
        "            call()\n"
        "        except RuntimeError as e:\n"
        "            assert 'not initialized' in str(e), e\n"
        "        else:\n"
        "            raise AssertionError(call)\n"
        "    d.close(); d.close()\n"
        "    del d\n"
        "    gc.collect()\n"
        "assert not caught, [str(w.message) for w in caught]\n"
        "print('ok')\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# -- GPU helpers -------------------------------------------------------------------------------

N = 64
CFG = LaunchConfig(grid=1, block=N)

KERNELS = r"""
extern "C" __global__ void add(int* x, int value, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += value;
}
extern "C" __global__ void mul(int* x, int value, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= value;
}
"""


@pytest.fixture(scope="module")
def k():
    dev = Device(0)
    dev.set_current()
    opts = ProgramOptions(arch=f"sm_{dev.arch}")
    mod = Program(KERNELS, "c++", options=opts).compile("cubin")
    return types.SimpleNamespace(add=mod.get_kernel("add"), mul=mod.get_kernel("mul"))


def _check(result):
    assert result[0] == driver.CUresult.CUDA_SUCCESS, result[0]
    return result[1] if len(result) > 1 else None


def read(ptr, count, dtype=np.int32):
    out = np.empty(count, dtype)
    _check(driver.cuMemcpyDtoH(out.ctypes.data, int(ptr), out.nbytes))
    return out


def write(ptr, values, dtype=np.int32):
    host = np.ascontiguousarray(values, dtype=dtype)
    _check(driver.cuMemcpyHtoD(int(ptr), host.ctypes.data, host.nbytes))
    # From pageable memory the call returns once the data is staged: without this, the DMA may
    # land after a non-blocking stream's work has begun. Under compute-sanitizer,
    # test_memset_then_kernels_in_order read 30 where 70 was due: -1 landing between the memset
    # (3) and the add (+4) gives (-1 + 4) * 10.
    _check(driver.cuCtxSynchronize())


def n32():
    return np.uint32(N)


def run(graph, stream):
    graph.launch(stream)
    stream.sync()


@pytest.fixture
def buffers(dev, stream):
    """``buffers(nbytes)``: a new device Buffer, closed at teardown."""
    made = []

    def make(nbytes=N * 4):
        buf = dev.allocate(nbytes, stream=stream)
        stream.sync()
        made.append(buf)
        return buf

    yield make
    for buf in made:
        buf.close()


# -- GPU: nodes, instantiate, launch -----------------------------------------------------------

@pytest.mark.gpu
def test_memset_then_kernels_in_order(dev, stream, k, buffers):
    x = buffers()
    d = GraphDefinition()
    fill = d.memset(x, np.uint32(3), N)
    add = fill.launch(CFG, k.add, x, np.int32(4), n32())
    mul = add.launch(CFG, k.mul, x, np.int32(10), n32())
    assert isinstance(fill, MemsetNode) and isinstance(add, KernelNode)
    assert d.nodes() == {fill, add, mul}
    assert d.edges() == {(fill, add), (add, mul)}
    graph = d.instantiate()
    assert isinstance(graph, Graph)
    write(x.handle, np.full(N, -1))
    stream.sync()
    run(graph, stream)
    assert np.array_equal(read(x.handle, N), np.full(N, 70))
    run(graph, stream)  # the memset starts it over
    assert np.array_equal(read(x.handle, N), np.full(N, 70))
    graph.close()
    d.close()


@pytest.mark.gpu
def test_node_types_and_properties(dev, k, buffers):
    x, y = buffers(), buffers()
    d = GraphDefinition()
    e = d.empty()
    kn = e.launch(LaunchConfig(grid=(2, 1, 1), block=(32, 1, 1), shmem_size=16), k.add, x,
                  np.int32(1), n32())
    ms = d.memset(x, np.uint16(0xABCD), 8, 4, 64)
    mc = kn.memcpy(y, x, 100)
    T = driver.CUgraphNodeType
    assert isinstance(e, EmptyNode) and e.type == T.CU_GRAPH_NODE_TYPE_EMPTY
    assert kn.type == T.CU_GRAPH_NODE_TYPE_KERNEL
    assert (kn.grid, kn.block, kn.shmem_size) == ((2, 1, 1), (32, 1, 1), 16)
    assert kn.config == LaunchConfig(grid=2, block=32, shmem_size=16)
    assert kn.kernel is k.add
    assert ms.type == T.CU_GRAPH_NODE_TYPE_MEMSET
    assert (ms.dptr, ms.value, ms.element_size, ms.width, ms.height, ms.pitch) == \
        (int(x.handle), 0xABCD, 2, 8, 4, 64)
    assert mc.type == T.CU_GRAPH_NODE_TYPE_MEMCPY
    assert (mc.dst, mc.src, mc.size) == (int(y.handle), int(x.handle), 100)
    by_type = {type(n) for n in d.nodes()}
    assert by_type == {EmptyNode, KernelNode, MemsetNode, MemcpyNode}
    assert all(n.graph is d and n.is_valid for n in d.nodes())
    d.close()


@pytest.mark.gpu
def test_memset_element_sizes_and_rows(dev, stream, buffers):
    x = buffers(256)
    d = GraphDefinition()
    first = d.memset(x, 0, 256)
    second = first.memset(x, np.uint16(0x0102), 4, 3, 32)  # 3 rows of 8 bytes, 32 apart
    second.memset(int(x.handle) + 200, np.float32(1.5), 2, dst_owner=x)
    run(d.instantiate(), stream)
    got = read(x.handle, 256, np.uint8)
    want = np.zeros(256, np.uint8)
    for row in range(3):
        want[row * 32:row * 32 + 8] = np.frombuffer(np.full(4, 0x0102, np.uint16).tobytes(),
                                                    np.uint8)
    want[200:208] = np.frombuffer(np.full(2, 1.5, np.float32).tobytes(), np.uint8)
    assert np.array_equal(got, want)


@pytest.mark.gpu
def test_memcpy_device_to_device_and_to_pinned_host(dev, stream, buffers):
    x, y = buffers(), buffers()
    write(x.handle, np.arange(N))
    host = _check(driver.cuMemHostAlloc(N * 4, 0))
    try:
        d = GraphDefinition()
        d.memcpy(y, x, N * 4).memcpy(int(host), y, N * 4)
        stream.sync()
        run(d.instantiate(), stream)
        assert np.array_equal(read(y.handle, N), np.arange(N))
        out = np.ctypeslib.as_array((ctypes.c_int32 * N).from_address(int(host)))
        assert np.array_equal(out, np.arange(N))
    finally:
        _check(driver.cuMemFreeHost(host))


@pytest.mark.gpu
def test_join_waits_for_every_branch(dev, stream, k, buffers):
    x, y = buffers(), buffers()
    d = GraphDefinition()
    a = d.memset(x, np.uint32(1), N)
    b = d.memset(y, np.uint32(2), N)
    j = a.join(b)
    assert isinstance(j, EmptyNode) and j.pred == {a, b}
    j.memcpy(x, y, N * 4).launch(CFG, k.add, x, np.int32(5), n32())
    assert d.join().pred == set()  # an entry node
    run(d.instantiate(), stream)
    assert np.array_equal(read(x.handle, N), np.full(N, 7))


@pytest.mark.gpu
def test_kernel_argument_mismatch_is_refused_when_added(dev, k, buffers):
    x = buffers()
    d = GraphDefinition()
    with pytest.raises(TypeError, match="int64 packs to 8 bytes"):
        d.launch(CFG, k.add, x, np.int64(5), n32())  # a NumPy int keeps its width
    with pytest.raises(OverflowError, match="int 4294967296 does not fit parameter 1"):
        d.launch(CFG, k.add, x, 2**32, n32())  # a Python int is packed at 4 bytes if it fits
    with pytest.raises(TypeError, match="takes 3 arguments, 2 given"):
        d.launch(CFG, k.add, x, np.int32(5))
    e = d.empty()
    with pytest.raises(TypeError, match="takes 3 arguments, 4 given"):
        e.launch(CFG, k.add, x, np.int32(5), n32(), n32())
    assert d.nodes() == {e}  # nothing was added
    d.close()


# -- GPU: edges --------------------------------------------------------------------------------

@pytest.mark.gpu
def test_pred_and_succ_are_live_and_assignable(dev):
    d = GraphDefinition()
    a, b, c = d.empty(), d.empty(), d.empty()
    assert a.succ == set() and len(b.pred) == 0
    b.pred.add(a)
    assert a in b.pred and b in a.succ and d.edges() == {(a, b)}
    b.pred.add(a)  # already there: a no-op
    c.succ |= {b}
    assert b.pred == {a, c}
    b.pred = [c]
    assert d.edges() == {(c, b)}
    a.succ = (b, c)
    assert d.edges() == {(c, b), (a, b), (a, c)}
    b.pred.discard(a)
    b.pred.discard(a)  # gone: a no-op
    assert d.edges() == {(c, b), (a, c)}
    b.pred.clear()
    assert d.edges() == {(a, c)}
    assert isinstance(b.pred | {a}, set)  # operators give snapshots
    d.close()


@pytest.mark.gpu
def test_edges_that_would_break_the_graph_are_refused(dev):
    d, other = GraphDefinition(), GraphDefinition()
    a = d.empty()
    b = a.join()
    c = b.join()
    with pytest.raises(ValueError, match="cycle"):
        a.pred.add(c)
    with pytest.raises(ValueError, match="cycle"):
        c.succ = [a]
    with pytest.raises(ValueError, match="itself"):
        a.succ.add(a)
    with pytest.raises(ValueError, match="another GraphDefinition"):
        a.succ.add(other.empty())
    with pytest.raises(ValueError, match="another GraphDefinition"):
        d.join(a, other.empty())
    with pytest.raises(TypeError, match="GraphNode"):
        a.succ.add("b")
    with pytest.raises(TypeError, match="GraphNode"):
        b.pred = [a, 1]
    assert d.edges() == {(a, b), (b, c)}  # nothing changed
    d.close()
    other.close()


@pytest.mark.gpu
def test_destroy_and_close(dev, stream, k, buffers):
    x = buffers()
    d = GraphDefinition()
    a = d.memset(x, np.uint32(2), N)
    b = a.launch(CFG, k.add, x, np.int32(1), n32())
    c = b.join()
    again = next(n for n in d.nodes() if n == b)
    assert again is b and hash(again) == hash(b) and again.is_valid  # one object per node
    graph = d.instantiate()
    b.destroy()
    assert not b.is_valid and not again.is_valid and "destroyed" in repr(b)
    b.destroy()  # a no-op
    for use in (lambda: b.pred, lambda: again.succ, lambda: b.join(), lambda: b.handle,
                lambda: again.grid, lambda: d.join(b), lambda: c.pred.add(b)):
        with pytest.raises(RuntimeError, match="destroyed"):
            use()
    assert d.nodes() == {a, c} and d.edges() == set()
    d.close()
    assert not d.is_valid and not a.is_valid
    with pytest.raises(RuntimeError, match="closed"):
        a.join()
    with pytest.raises(RuntimeError, match="closed"):
        d.nodes()
    run(graph, stream)  # the Graph outlives both
    assert np.array_equal(read(x.handle, N), np.full(N, 3))


@pytest.mark.gpu
def test_definition_identity(dev):
    d, e = GraphDefinition(), GraphDefinition()
    assert d == d and d != e and hash(d) == hash(d)
    assert int(d.handle) != 0 and isinstance(d.handle, driver.CUgraph)
    n = d.empty()
    assert n != e.empty() and n.graph == d and int(n.handle) != 0
    assert weakref.ref(d)() is d and weakref.ref(n)() is n
    d.close()
    e.close()


@pytest.mark.gpu
def test_instantiate_options_and_dot_print(dev, stream, tmp_path, buffers):
    x = buffers()
    d = GraphDefinition()
    d.memset(x, 9, N * 4)
    graph = d.instantiate({"upload_stream": stream})
    run(graph, stream)
    assert np.array_equal(read(x.handle, N * 4, np.uint8), np.full(N * 4, 9, np.uint8))
    path = tmp_path / "g.dot"
    d.debug_dot_print(path, {"verbose": True})
    assert "digraph" in path.read_text()
    with pytest.raises(TypeError):
        d.instantiate(options=3)
    for nothing in (0, False, "", (), []):  # a false value is no options, as for cuda.core
        run(d.instantiate(options=nothing), stream)


@pytest.mark.gpu
def test_nodes_need_a_current_context(dev, buffers):
    x = buffers()
    d = GraphDefinition()
    errors = []

    def body():
        errors.append(d.empty())  # an empty node needs no context
        for call in (lambda: d.memset(x, 1, 4), lambda: d.memcpy(x, x, 4), d.instantiate):
            try:
                call()
            except RuntimeError as error:
                errors.append(str(error))

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert isinstance(errors[0], EmptyNode)
    assert len(errors) == 4 and all("no CUDA context is current" in e for e in errors[1:])
    assert d.nodes() == {errors[0]}


# -- GPU: lifetime -----------------------------------------------------------------------------

@pytest.mark.gpu
def test_graph_keeps_what_its_nodes_use(dev, stream, k):
    def build():
        x = dev.allocate(N * 4, stream=stream)
        y = dev.allocate(N * 4, stream=stream)
        stream.sync()
        d = GraphDefinition()
        d.memset(x, np.uint32(20), N).launch(CFG, k.add, x, np.int32(2), n32()) \
            .memcpy(y, x, N * 4)
        return d.instantiate(), weakref.ref(d), weakref.ref(x), weakref.ref(y), int(y.handle)

    graph, d_ref, x_ref, y_ref, y_ptr = build()
    gc.collect()
    assert d_ref() is None  # the definition is gone ...
    assert x_ref() is not None and y_ref() is not None  # ... what its nodes use is not
    run(graph, stream)
    assert np.array_equal(read(y_ptr, N), np.full(N, 22))
    graph.close()
    del graph
    gc.collect()
    # held only as long as the Graph (its user object, released by the driver's thread)
    assert eventually(lambda: x_ref() is None and y_ref() is None)


def test_released_objects_go_on_the_main_thread():
    # What a Graph lets go behind its launches is handed over by a host function on a driver
    # thread, without the GIL: the last reference must be dropped on the main thread (its
    # finalizer may call CUDA, which a driver thread may not).
    from cuda_core.graph._graph import _release_later_address

    seen = []

    class Held:
        def __del__(self):
            seen.append(threading.get_ident())

    held = Held()
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(held))  # the reference the call gives up
    release = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(_release_later_address())
    # ctypes releases the GIL around the call: the thread is like a driver's.
    worker = threading.Thread(target=release, args=(id(held),))
    worker.start()
    worker.join()
    del held  # one reference is left, the queued one (or none: the queue was emptied already)
    for _ in range(1000):  # the main thread runs the pending release soon
        if seen:
            break
        sum(range(100))
    assert seen == [threading.main_thread().ident]


def test_objects_made_with_new_refuse_every_use():
    # Made without the factory (__new__), a Graph or an executable-node view has no handle:
    # every use is a RuntimeError, never a driver call on NULL or a crash (a subprocess).
    code = (
        "from cuda_core.graph import ExecutableKernelNode, ExecutableGraphNode, Graph\n"
        "view = ExecutableKernelNode.__new__(ExecutableKernelNode)\n"
        "graph = Graph.__new__(Graph)\n"
        "uses = [lambda: view.is_enabled, view.enable, view.disable,\n"
        "        lambda: view.update(config=None, kernel=None, args=()),\n"
        "        lambda: graph.launch(None), lambda: graph.upload(None),\n"
        "        lambda: graph.update(None), lambda: graph[None], lambda: graph.handle]\n"
        "for use in uses:\n"
        "    try:\n"
        "        use()\n"
        "    except RuntimeError as e:\n"
        "        assert 'was not made by' in str(e), e\n"
        "    else:\n"
        "        raise AssertionError('no error')\n"
        "print(repr(view), len(uses))\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "<ExecutableKernelNode (not made by graph[node])> 9"
