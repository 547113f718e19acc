"""cuda_core.graph executable-node views (``graph[node]``, cuda_core/graph/_exec_nodes) and
whole-graph updates (Graph.update with a GraphDefinition or a GraphBuilder): parameters of an
instantiated Graph changed in place, without instantiating it again."""

import ctypes

import numpy as np
import pytest

from cuda_core import CUDAError, LaunchConfig, launch
from cuda_core.graph import (ExecutableChildGraphNode, ExecutableEventRecordNode,
                             ExecutableEventWaitNode, ExecutableGraphNode,
                             ExecutableHostCallbackNode, ExecutableKernelNode,
                             ExecutableMemcpyNode, ExecutableMemsetNode, GraphDefinition)

from graph_kernels import (CFG, N, HostGate, buffers, fetch, i32, k, n32, put, run,
                           runs_past_a_busy_event)


@pytest.mark.gpu
def test_view_class_per_node_type(dev, k, buffers):
    x, y = buffers(), buffers()
    event, other_event = dev.create_event(), dev.create_event()
    child = GraphDefinition()
    child.launch(CFG, k.add, x, i32(1), n32())
    d = GraphDefinition()
    alloc = d.allocate(1024)
    cond = d.create_condition(default_value=0)
    conditional = d.if_then(cond)
    conditional.then.launch(CFG, k.add, x, i32(1), n32())
    expected = {
        d.launch(CFG, k.fill, x, i32(1), n32()): ExecutableKernelNode,
        d.memset(x, 0, 16): ExecutableMemsetNode,
        d.memcpy(y, x, 16): ExecutableMemcpyNode,
        d.embed(child): ExecutableChildGraphNode,
        d.record(event): ExecutableEventRecordNode,
        d.wait(other_event): ExecutableEventWaitNode,
        d.callback(lambda: None): ExecutableHostCallbackNode,
    }
    # The driver changes nothing of these in an executable graph: refused, as cuda.core does.
    refused = [d.empty(), alloc, alloc.deallocate(alloc.dptr), conditional]
    graph = d.instantiate()
    for node, cls in expected.items():
        view = graph[node]
        assert type(view) is cls, (node, type(view))
        assert isinstance(view, ExecutableGraphNode)
        assert graph[node] is not view  # a new lightweight view each time
    for node in refused:
        with pytest.raises(TypeError, match=f"{type(node).__name__} does not support "
                                            f"executable updates"):
            graph[node]
    for cls in set(expected.values()):
        assert issubclass(cls, ExecutableGraphNode)
        assert not issubclass(cls, GraphDefinition)
    graph.close()
    d.close()


# -- executable-node updates: the Graph changes in place ---------------------------------------

@pytest.mark.gpu
def test_kernel_view_update(dev, stream, k, buffers):
    x, y = buffers(fill=0), buffers(fill=0)
    d = GraphDefinition()
    node = d.launch(CFG, k.fill, x, i32(1), n32())
    graph = d.instantiate()
    handle = int(graph.handle)
    run(graph, stream)
    assert np.array_equal(fetch(x, stream), np.full(N, 1))
    view = graph[node]
    view.update(config=CFG, kernel=k.fill, args=(y, i32(5), n32()))  # new arguments
    run(graph, stream)
    assert np.array_equal(fetch(y, stream), np.full(N, 5))
    assert np.array_equal(fetch(x, stream), np.full(N, 1))  # no longer written
    view.update(config=CFG, kernel=k.add, args=[y, i32(10), n32()])  # another kernel
    run(graph, stream)
    assert np.array_equal(fetch(y, stream), np.full(N, 15))
    view.update(config=LaunchConfig(grid=1, block=N // 2), kernel=k.add,
                args=(y, i32(1), n32()))  # another config: half the threads
    run(graph, stream)
    assert np.array_equal(fetch(y, stream), np.repeat([16, 15], N // 2))
    assert int(graph.handle) == handle  # the same executable graph throughout
    assert node.kernel == k.fill and node.config == CFG  # the definition is untouched
    graph.close()
    d.close()


@pytest.mark.gpu
def test_kernel_view_disable_and_enable(dev, stream, k, buffers):
    x = buffers(fill=0)
    d = GraphDefinition()
    first = d.launch(CFG, k.add, x, i32(1), n32())
    second = first.launch(CFG, k.add, x, i32(100), n32())
    graph = d.instantiate()
    view = graph[second]
    assert view.is_enabled and graph[first].is_enabled
    view.disable()
    assert not view.is_enabled and not graph[second].is_enabled  # state of the graph, not view
    assert graph[first].is_enabled
    run(graph, stream)
    assert np.array_equal(fetch(x, stream), np.full(N, 1))  # the disabled node did nothing
    view.enable()
    assert view.is_enabled
    run(graph, stream)
    assert np.array_equal(fetch(x, stream), np.full(N, 102))
    graph.close()


@pytest.mark.gpu
def test_memset_and_memcpy_views(dev, stream, buffers):
    # The updates keep each node's shape (element size, width, bytes copied): the driver may
    # refuse an executable memset or memcpy a shape its instantiation did not plan for.
    x, y, z = buffers(fill=0), buffers(fill=0), buffers(fill=0)
    d = GraphDefinition()
    fill = d.memset(x, np.uint32(3), N)
    copy = fill.memcpy(y, x, N * 4)
    graph = d.instantiate()
    handle = int(graph.handle)
    graph[fill].update(dst=x, value=np.uint32(7), width=N)
    graph[copy].update(dst=z, src=x, size=N * 4)
    run(graph, stream)
    assert np.array_equal(fetch(x, stream), np.full(N, 7))
    assert np.array_equal(fetch(z, stream), np.full(N, 7))
    assert np.array_equal(fetch(y, stream), np.zeros(N))  # the old destination
    graph[copy].update(dst=y, src=x, size=N * 4)
    graph[fill].disable()
    assert not graph[fill].is_enabled and graph[copy].is_enabled
    put(x, np.arange(N), stream)
    run(graph, stream)
    assert np.array_equal(fetch(y, stream), np.arange(N))  # the memset did not run
    graph[fill].enable()
    run(graph, stream)
    assert np.array_equal(fetch(y, stream), np.full(N, 7))
    assert int(graph.handle) == handle
    assert (fill.value, copy.dst) == (3, int(y.handle))  # the definition is untouched
    graph.close()


@pytest.mark.gpu
def test_event_record_view_update(dev, stream):
    first, second = dev.create_event(), dev.create_event()
    gate = HostGate()
    d = GraphDefinition()
    node = d.callback(gate).record(first)
    graph = d.instantiate()
    graph[node].update(second)
    graph.launch(stream)
    try:
        assert gate.started.wait(10), "the host node did not run"
        assert not second.is_done  # recorded by this launch, behind the gate
        assert first.is_done  # never recorded
    finally:
        gate.open()
        stream.sync()
    assert node.event == first  # the definition is untouched
    graph.close()


@pytest.mark.gpu
def test_event_wait_view_update(dev, stream, k, buffers):
    y = buffers(fill=0)
    slow, ready = dev.create_event(), dev.create_event()  # ready: never recorded, so done
    d = GraphDefinition()
    node = d.wait(slow)
    node.launch(CFG, k.fill, y, i32(1), n32())
    graph = d.instantiate()
    graph[node].update(ready)
    runs_past_a_busy_event(dev, graph, slow, y, stream, k)
    graph.close()


@pytest.mark.gpu
def test_host_callback_view_update(dev, stream):
    calls = []

    def a():
        calls.append("a")

    def b():
        calls.append("b")

    @ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    def c(address):
        calls.append(ctypes.string_at(address, 2))

    d = GraphDefinition()
    node = d.callback(a)
    graph = d.instantiate()
    handle = int(graph.handle)
    run(graph, stream)
    graph[node].update(b)
    run(graph, stream)
    data = bytearray(b"ok")
    graph[node].update(c, user_data=data)
    data[:] = b"no"  # copied by the update
    run(graph, stream)
    with pytest.raises(ValueError, match="user_data"):
        graph[node].update(a, user_data=b"x")
    run(graph, stream)
    assert calls == ["a", "b", b"ok", b"ok"]
    assert int(graph.handle) == handle and node.callback is a
    graph.close()


@pytest.mark.gpu
def test_child_graph_view_update(dev, stream, k, buffers):
    x, y = buffers(fill=0), buffers(fill=0)
    one, two = GraphDefinition(), GraphDefinition()
    one.launch(CFG, k.fill, x, i32(1), n32()).launch(CFG, k.add, x, i32(1), n32())
    two.launch(CFG, k.fill, y, i32(5), n32()).launch(CFG, k.add, y, i32(5), n32())
    d = GraphDefinition()
    node = d.embed(one)
    graph = d.instantiate()
    handle = int(graph.handle)
    graph[node].update(two)  # the same topology, other arguments
    run(graph, stream)
    assert np.array_equal(fetch(y, stream), np.full(N, 10))
    assert np.array_equal(fetch(x, stream), np.zeros(N))
    three = GraphDefinition()
    three.launch(CFG, k.fill, x, i32(1), n32())  # one node fewer
    with pytest.raises(CUDAError):
        graph[node].update(three)
    put(y, np.zeros(N), stream)
    run(graph, stream)  # still the update that succeeded
    assert np.array_equal(fetch(y, stream), np.full(N, 10))
    assert int(graph.handle) == handle
    graph.close()


# -- whole-graph update ------------------------------------------------------------------------

def _fill_then_add(d, k, x, first, second):
    d.launch(CFG, k.fill, x, i32(first), n32()).launch(CFG, k.add, x, i32(second), n32())
    return d


@pytest.mark.gpu
def test_update_from_a_definition(dev, stream, k, buffers):
    x, y = buffers(fill=0), buffers(fill=0)
    d1 = _fill_then_add(GraphDefinition(), k, x, 1, 2)
    graph = d1.instantiate()
    handle = int(graph.handle)
    run(graph, stream)
    assert np.array_equal(fetch(x, stream), np.full(N, 3))
    d2 = _fill_then_add(GraphDefinition(), k, y, 10, 20)
    graph.update(d2)
    d2.close()  # the Graph holds what it took from d2
    run(graph, stream)
    assert np.array_equal(fetch(y, stream), np.full(N, 30))
    put(x, np.zeros(N), stream)
    run(graph, stream)
    assert np.array_equal(fetch(x, stream), np.zeros(N))  # d1's arguments are gone
    assert int(graph.handle) == handle
    graph.close()
    d1.close()


@pytest.mark.gpu
def test_update_from_a_builder(dev, stream, k, buffers):
    x = buffers(fill=0)
    d = _fill_then_add(GraphDefinition(), k, x, 1, 2)
    graph = d.instantiate()
    handle = int(graph.handle)
    gb = dev.create_graph_builder().begin_building()
    launch(gb, CFG, k.fill, x, i32(100), n32())
    launch(gb, CFG, k.add, x, i32(200), n32())
    gb.end_building()
    graph.update(gb)
    run(graph, stream)
    assert np.array_equal(fetch(x, stream), np.full(N, 300))
    assert int(graph.handle) == handle
    graph.close()
    gb.close()
    d.close()


@pytest.mark.gpu
def test_update_refuses_another_topology_or_node_type(dev, stream, k, buffers):
    x = buffers(fill=0)
    d = _fill_then_add(GraphDefinition(), k, x, 1, 2)
    graph = d.instantiate()
    extra = _fill_then_add(GraphDefinition(), k, x, 5, 5)
    extra.empty()
    with pytest.raises(CUDAError, match="(?i)topology"):
        graph.update(extra)
    other_type = GraphDefinition()
    other_type.launch(CFG, k.fill, x, i32(5), n32()).memset(x, 0, 4)
    with pytest.raises(CUDAError, match="(?i)type changed"):
        graph.update(other_type)
    with pytest.raises(TypeError):
        graph.update(d.nodes())
    run(graph, stream)  # unchanged by the refused updates
    assert np.array_equal(fetch(x, stream), np.full(N, 3))
    graph.close()
    for definition in (d, extra, other_type):
        definition.close()


# -- errors ------------------------------------------------------------------------------------

@pytest.mark.gpu
def test_getitem_checks_its_node(dev, k, buffers):
    x = buffers()
    d, other = GraphDefinition(), GraphDefinition()
    node = d.launch(CFG, k.fill, x, i32(1), n32())
    foreign = other.launch(CFG, k.fill, x, i32(1), n32())
    graph = d.instantiate()
    for bad in (None, 1, int(node.handle), node.handle, d):
        with pytest.raises(TypeError):
            graph[bad]
    with pytest.raises(ValueError, match="another"):
        graph[foreign]
    gone = node.launch(CFG, k.add, x, i32(1), n32())
    gone.destroy()
    with pytest.raises(RuntimeError, match="destroyed"):
        graph[gone]
    assert type(graph[node]) is ExecutableKernelNode
    graph.close()
    d.close()
    other.close()


@pytest.mark.gpu
def test_kernel_view_refuses_wrong_arguments(dev, stream, k, buffers):
    x = buffers(fill=0)
    d = GraphDefinition()
    node = d.launch(CFG, k.fill, x, i32(4), n32())
    graph = d.instantiate()
    view = graph[node]
    for kernel, args in ((k.fill, (x, i32(1))),                  # fill takes three
                         (k.fill, (x, i32(1), n32(), n32())),
                         (k.fill, (np.int32(0), i32(1), n32())),  # 4 bytes for a pointer
                         # a float for int*: refused by a C++ kernel, whose parameters' kinds
                         # are known (an extern "C" kernel's sizes only)
                         (k.typed_add, (1.5, i32(1), n32()))):
        with pytest.raises(TypeError):
            view.update(config=CFG, kernel=kernel, args=args)
    with pytest.raises(TypeError):
        view.update(config=CFG, kernel=k.fill)  # every parameter is required
    with pytest.raises(TypeError):
        view.update(config=(1, N), kernel=k.fill, args=(x, i32(1), n32()))
    with pytest.raises(ValueError):
        view.update(config=LaunchConfig(grid=2, cluster=2, block=32), kernel=k.fill,
                    args=(x, i32(1), n32()))
    run(graph, stream)  # the graph still runs what it was given
    assert np.array_equal(fetch(x, stream), np.full(N, 4))
    graph.close()


@pytest.mark.gpu
def test_memset_view_is_one_dimensional(dev, stream, buffers):
    x = buffers(fill=0)
    d = GraphDefinition()
    node = d.memset(x, 5, N * 4)
    graph = d.instantiate()
    with pytest.raises(ValueError):
        graph[node].update(dst=x, value=1, width=4, height=2, pitch=16)
    with pytest.raises(ValueError):
        graph[node].update(dst=x, value=1, width=N * 4 + 1)  # past the Buffer's end
    run(graph, stream)
    assert np.array_equal(fetch(x, stream, np.uint8), np.full(N * 4, 5, np.uint8))
    graph.close()


@pytest.mark.gpu
def test_views_of_a_closed_graph(dev, k, buffers):
    x = buffers()
    d = GraphDefinition()
    node = d.launch(CFG, k.fill, x, i32(1), n32())
    graph = d.instantiate()
    view = graph[node]
    graph.close()
    for use in (lambda: graph[node], lambda: view.is_enabled, view.disable, view.enable,
                lambda: view.update(config=CFG, kernel=k.fill, args=(x, i32(2), n32()))):
        with pytest.raises(RuntimeError, match="closed"):
            use()
    d.close()


@pytest.mark.gpu
def test_views_after_an_update_take_the_instantiated_definitions_nodes(dev, stream, k,
                                                                       buffers):
    # The driver names an executable graph's nodes by those of the graph it was instantiated
    # from, whatever it was updated from since.
    x, y = buffers(fill=0), buffers(fill=0)
    d1 = _fill_then_add(GraphDefinition(), k, x, 1, 2)
    graph = d1.instantiate()
    d2 = _fill_then_add(GraphDefinition(), k, y, 10, 20)
    graph.update(d2)
    second = next(n for n in d1.nodes() if n.pred)  # d1's add node
    graph[second].update(config=CFG, kernel=k.add, args=(y, i32(5), n32()))
    run(graph, stream)
    assert np.array_equal(fetch(y, stream), np.full(N, 15))  # d2's fill, then the new add
    with pytest.raises(ValueError, match="another GraphDefinition"):
        graph[next(iter(d2.nodes()))]
    graph.close()
    d2.close()
    d1.close()
