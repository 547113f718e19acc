"""cuda_core.graph explicit graphs, node type by node type (cuda_core/graph/: _definition,
_node_params and the node classes): each node in a GraphDefinition with its result read back;
the properties of every node; definition-level update(); nodes()/edges(); the live pred/succ
sets; destroy(); identity. GraphDefinition itself and its argument checks:
test_graph_definition.py."""

import ctypes
import weakref

import numpy as np
import pytest
from cuda.bindings import driver

from cuda_core import CUDAError, Device, LaunchConfig
from cuda_core.graph import (AllocNode, ChildGraphNode, EmptyNode, EventRecordNode,
                             EventWaitNode, FreeNode, GraphDefinition, GraphNode,
                             HostCallbackNode, KernelNode, MemcpyNode, MemsetNode)
from cuda_core.typing import GraphMemoryType

from graph_kernels import (CFG, N, ONE, SPIN_NS, HostGate, buffers, fetch, host_view, i32, k,
                           n32, pinned, put, run, runs_past_a_busy_event, snapshot)

T = driver.CUgraphNodeType


# -- each node type, result read back ----------------------------------------------------------

@pytest.mark.gpu
def test_kernel_chain(dev, stream, k, buffers):
    x, y = buffers(fill=-1), buffers(fill=-1)
    d = GraphDefinition()
    fill = d.launch(CFG, k.fill, x, i32(5), n32())
    add = fill.launch(CFG, k.add, x, i32(3), n32())
    copy = add.launch(CFG, k.copy, x, y, n32())
    mul = copy.launch(CFG, k.mul, y, i32(2), n32())
    assert all(type(n) is KernelNode for n in (fill, add, copy, mul))
    assert d.edges() == {(fill, add), (add, copy), (copy, mul)}
    graph = d.instantiate()
    for _ in range(2):  # the fill starts the chain over at each launch
        put(y, np.zeros(N), stream)
        run(graph, stream)
        assert np.array_equal(fetch(x, stream), np.full(N, 8))
        assert np.array_equal(fetch(y, stream), np.full(N, 16))
    graph.close()
    d.close()


@pytest.mark.gpu
@pytest.mark.parametrize("value", [np.uint8(0xAB), np.uint16(0xBEEF), np.float32(-2.5)],
                         ids=["uint8", "uint16", "float32"])
def test_memset_element_sizes(dev, stream, buffers, value):
    nbytes = 256
    x = buffers(nbytes, fill=0)
    count = nbytes // value.itemsize
    d = GraphDefinition()
    node = d.memset(x, value, count)
    assert type(node) is MemsetNode
    assert (node.element_size, node.width, node.height) == (value.itemsize, count, 1)
    assert node.value == int.from_bytes(value.tobytes(), "little")
    run(d.instantiate(), stream)
    assert np.array_equal(fetch(x, stream, value.dtype), np.full(count, value, value.dtype))


@pytest.mark.gpu
def test_memset_pitched_rows(dev, stream, buffers):
    # Four rows of three 4-byte elements, 64 bytes apart, over a buffer of 0x11 bytes: the
    # bytes between the rows keep their value.
    x = buffers(256)
    d = GraphDefinition()
    ground = d.memset(x, 0x11, 256)
    rows = ground.memset(x, np.uint32(0xDEADBEEF), 3, 4, 64)
    assert (rows.width, rows.height, rows.pitch, rows.element_size) == (3, 4, 64, 4)
    assert rows.pred == {ground}
    run(d.instantiate(), stream)
    want = np.full(256, 0x11, np.uint8)
    row = np.full(3, 0xDEADBEEF, np.uint32).view(np.uint8)
    for r in range(4):
        want[r * 64:r * 64 + 12] = row
    assert np.array_equal(fetch(x, stream, np.uint8), want)


@pytest.mark.gpu
def test_memcpy_pinned_to_device_to_device_to_pinned(dev, stream, buffers, pinned):
    source, out = pinned(), pinned()
    host_view(source)[:] = np.arange(N) * 3
    x, y = buffers(fill=0), buffers(fill=0)
    d = GraphDefinition()
    up = d.memcpy(x, source, N * 4)        # pinned host -> device
    across = up.memcpy(y, x, N * 4)        # device -> device
    down = across.memcpy(out, y, N * 4)    # device -> pinned host
    assert (up.dst, up.src, up.size) == (int(x.handle), int(source.handle), N * 4)
    assert (across.dst, across.src) == (int(y.handle), int(x.handle))
    assert (down.dst, down.src) == (int(out.handle), int(y.handle))
    graph = d.instantiate()
    run(graph, stream)
    assert np.array_equal(host_view(out), np.arange(N) * 3)
    assert np.array_equal(fetch(x, stream), np.arange(N) * 3)
    assert np.array_equal(fetch(y, stream), np.arange(N) * 3)
    host_view(source)[:] = -np.arange(N)  # the nodes copy from the memory, not a snapshot
    run(graph, stream)
    assert np.array_equal(host_view(out), -np.arange(N))
    graph.close()


def _use_and_free(alloc, k, out):
    """After the allocation node ``alloc``: fill 40, add 2, memcpy to ``out``, deallocate."""
    fill = alloc.launch(CFG, k.fill, alloc.dptr, i32(40), n32())
    add = fill.launch(CFG, k.add, alloc.dptr, i32(2), n32())
    copy = add.memcpy(out, alloc.dptr, N * 4)
    return copy.deallocate(alloc.dptr)


@pytest.mark.gpu
def test_allocate_write_copy_out_and_free_launched_twice(dev, stream, k, buffers):
    out = buffers(fill=-1)
    d = GraphDefinition()
    alloc = d.allocate(N * 4)
    free = _use_and_free(alloc, k, out)
    assert type(alloc) is AllocNode and type(free) is FreeNode
    assert alloc.dptr != 0 and free.dptr == alloc.dptr
    assert alloc.type == T.CU_GRAPH_NODE_TYPE_MEM_ALLOC
    assert free.type == T.CU_GRAPH_NODE_TYPE_MEM_FREE
    graph = d.instantiate()
    for _ in range(2):  # freed inside the graph, so it may launch again
        put(out, np.zeros(N), stream)
        run(graph, stream)
        assert np.array_equal(fetch(out, stream), np.full(N, 42))
    graph.close()
    d.close()


# What a driver answers when it cannot make graph allocations of a memory type.
_UNSUPPORTED = {"CUDA_ERROR_NOT_SUPPORTED", "CUDA_ERROR_INVALID_VALUE"}


@pytest.mark.gpu
@pytest.mark.parametrize("memory_type", ["host", "managed"])
def test_allocate_host_and_managed_memory(dev, stream, k, buffers, memory_type):
    out = buffers(fill=-1)
    d = GraphDefinition()
    try:
        alloc = d.allocate(N * 4, memory_type=memory_type)
    except CUDAError as error:
        if error.name not in _UNSUPPORTED:
            raise
        # ISSUE14 1.2: the refusal names the parameter, not only the driver's code.
        assert "memory_type" in str(error), str(error)
        assert d.nodes() == set()  # the refused allocation left nothing behind
        pytest.skip(f"this driver makes no graph allocations of {memory_type} memory: "
                    f"{error.name}")
    free = _use_and_free(alloc, k, out)
    assert alloc.memory_type == memory_type
    assert isinstance(alloc.memory_type, GraphMemoryType)
    assert alloc.memory_type is GraphMemoryType(memory_type)
    assert alloc.bytesize == N * 4 and alloc.dptr != 0 and free.dptr == alloc.dptr
    graph = d.instantiate()
    for _ in range(2):
        put(out, np.zeros(N), stream)
        run(graph, stream)
        assert np.array_equal(fetch(out, stream), np.full(N, 42))
    graph.close()
    d.close()


@pytest.mark.gpu
def test_allocate_properties(dev):
    d = GraphDefinition()
    plain = d.allocate(1024)
    assert plain.bytesize == 1024 and plain.device_id == dev.device_id
    assert plain.memory_type == "device" and plain.memory_type is GraphMemoryType.DEVICE
    assert plain.peer_access == ()
    by_device = plain.allocate(2048, device=dev, memory_type=GraphMemoryType.DEVICE)
    by_id = d.allocate(4096, device=dev.device_id, memory_type="device")
    assert by_device.pred == {plain} and by_id.pred == set()
    assert (by_device.bytesize, by_device.device_id) == (2048, dev.device_id)
    assert (by_id.bytesize, by_id.device_id) == (4096, dev.device_id)
    assert len({plain.dptr, by_device.dptr, by_id.dptr}) == 3
    d.close()


@pytest.mark.gpu
def test_allocate_with_peer_access():
    from cuda_core import System

    if System().num_devices < 2:
        pytest.skip("needs two GPUs")
    d0, d1 = Device(0), Device(1)
    if not d1.can_access_peer(d0):
        pytest.skip("device 1 cannot access device 0's memory")
    d0.set_current()
    d = GraphDefinition()
    node = d.allocate(1024, device=d0, peer_access=[d1])
    assert node.peer_access == (1,) and node.device_id == 0
    assert d.allocate(1024, peer_access=[1]).peer_access == (1,)
    d.close()


@pytest.mark.gpu
def test_embed_copies_the_child(dev, stream, k, buffers):
    x = buffers(fill=0)
    child = GraphDefinition()
    child_add = child.launch(CFG, k.add, x, i32(5), n32())
    child_add.launch(CFG, k.mul, x, i32(3), n32())
    d = GraphDefinition()
    first = d.launch(CFG, k.fill, x, i32(1), n32())
    node = first.embed(child)
    assert type(node) is ChildGraphNode and node.type == T.CU_GRAPH_NODE_TYPE_GRAPH
    view = node.child_graph
    assert isinstance(view, GraphDefinition) and view != child
    assert len(view.nodes()) == 2 and len(view.edges()) == 1
    assert {type(n) for n in view.nodes()} == {KernelNode}
    # Changing the child afterwards changes the child only: the node holds a copy.
    child_add.update(args=(x, i32(100), n32()))
    child.launch(CFG, k.fill, x, i32(-7), n32())
    assert len(child.nodes()) == 3 and len(view.nodes()) == 2
    node.launch(CFG, k.add, x, i32(-2), n32())
    child.close()
    graph = d.instantiate()
    run(graph, stream)
    assert np.array_equal(fetch(x, stream), np.full(N, (1 + 5) * 3 - 2))
    graph.close()
    d.close()


@pytest.mark.gpu
def test_event_record_and_wait_order_two_graphs(dev, stream, k, buffers):
    # The producer spins, then writes 7 and records the event; the consumer, on another
    # stream, waits for the event and copies. Without the wait it would copy the 0 there first.
    x, y = buffers(fill=0), buffers(fill=-1)
    event = dev.create_event()
    producer = GraphDefinition()
    write = producer.launch(ONE, k.spin, SPIN_NS).launch(CFG, k.fill, x, i32(7), n32())
    record = write.record(event)
    assert type(record) is EventRecordNode and record.event == event
    assert record.type == T.CU_GRAPH_NODE_TYPE_EVENT_RECORD
    consumer = GraphDefinition()
    wait = consumer.wait(event)
    assert type(wait) is EventWaitNode and wait.event == event
    assert wait.type == T.CU_GRAPH_NODE_TYPE_WAIT_EVENT
    wait.launch(CFG, k.copy, x, y, n32())
    first, second = producer.instantiate(), consumer.instantiate()
    other = dev.create_stream()
    try:
        first.launch(stream)
        second.launch(other)  # after the producer's launch: waits for its record
        other.sync()
        assert event.is_done
        assert np.array_equal(fetch(y, other), np.full(N, 7))
    finally:
        stream.sync()
        other.close()
    first.close()
    second.close()


@pytest.mark.gpu
def test_python_callback_runs_once_per_launch_after_its_dependencies(dev, stream, k, buffers,
                                                                     pinned):
    # The callback reads pinned memory the nodes before it wrote: it runs after them.
    x, out = buffers(fill=0), pinned()
    seen = []

    def note():
        seen.append(int(host_view(out)[0]))

    d = GraphDefinition()
    node = d.launch(CFG, k.add, x, i32(1), n32()).memcpy(out, x, N * 4).callback(note)
    assert type(node) is HostCallbackNode and node.type == T.CU_GRAPH_NODE_TYPE_HOST
    assert node.callback is note
    graph = d.instantiate()
    assert seen == []
    for _ in range(3):
        run(graph, stream)
    assert seen == [1, 2, 3]
    graph.close()


@pytest.mark.gpu
def test_ctypes_callback_user_data(dev, stream):
    received = []

    @ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    def read(address):
        received.append(ctypes.string_at(address, 5))

    @ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    def count(address):
        ctypes.c_uint32.from_address(address).value += 1

    data = bytearray(b"hello")
    counter = ctypes.c_uint32(0)
    d = GraphDefinition()
    first = d.callback(read, user_data=data)
    # (first.callback is HostCallbackNode's property, as in cuda.core: a node after a host
    # node is added through join().)
    second = first.join().callback(count, user_data=ctypes.addressof(counter))
    assert first.callback is None and second.callback is None  # ctypes functions: None
    data[:] = b"XXXXX"  # bytes-like user_data was copied when the node was added
    del data
    graph = d.instantiate()
    run(graph, stream)
    run(graph, stream)
    assert received == [b"hello", b"hello"]
    assert counter.value == 2  # an int is an address, used as it is
    graph.close()


@pytest.mark.gpu
def test_callback_arguments_are_checked(dev):
    d = GraphDefinition()
    entry = d.empty()
    before = snapshot(d)
    wrong = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(lambda address: 0)
    with pytest.raises(ValueError, match="user_data"):
        d.callback(lambda: None, user_data=b"data")  # a Python callable takes nothing
    with pytest.raises(ValueError, match="user_data"):
        entry.callback(lambda: None, user_data=0)
    with pytest.raises(TypeError):
        entry.callback(wrong)  # not CFUNCTYPE(None, c_void_p)
    with pytest.raises(TypeError):
        d.callback(42)
    assert snapshot(d) == before
    d.close()


# -- properties --------------------------------------------------------------------------------

@pytest.mark.gpu
def test_every_node_reports_what_it_was_given(dev, k, buffers):
    x, y = buffers(), buffers(256)
    recorded, awaited = dev.create_event(), dev.create_event()

    def fn():
        pass

    child = GraphDefinition()
    child.launch(CFG, k.add, x, i32(1), n32())
    d = GraphDefinition()
    cfg = LaunchConfig(grid=(2, 1, 1), block=(16, 2, 1), shmem_size=64)
    kernel = d.launch(cfg, k.fill, x, i32(1), n32())
    alloc = d.allocate(4096)
    free = alloc.deallocate(alloc.dptr)
    memset = d.memset(y, np.uint16(0x1234), 8, 4, 64)
    memcpy = d.memcpy(y, x, 100)
    record, wait = d.record(recorded), d.wait(awaited)
    callback = d.callback(fn)
    embedded = d.embed(child)
    empty = d.empty()
    expected = {
        kernel: (KernelNode, {"grid": (2, 1, 1), "block": (16, 2, 1), "shmem_size": 64,
                              "kernel": k.fill, "config": cfg}),
        alloc: (AllocNode, {"bytesize": 4096, "device_id": dev.device_id,
                            "memory_type": "device", "peer_access": ()}),
        free: (FreeNode, {"dptr": alloc.dptr}),
        memset: (MemsetNode, {"dptr": int(y.handle), "value": 0x1234, "element_size": 2,
                              "width": 8, "height": 4, "pitch": 64}),
        memcpy: (MemcpyNode, {"dst": int(y.handle), "src": int(x.handle), "size": 100}),
        record: (EventRecordNode, {"event": recorded}),
        wait: (EventWaitNode, {"event": awaited}),
        callback: (HostCallbackNode, {}),
        embedded: (ChildGraphNode, {"child_graph": embedded.child_graph}),
        empty: (EmptyNode, {}),
    }
    assert alloc.dptr != 0
    # The nodes the builders returned, and the ones nodes() makes anew, say the same.
    fresh = d.nodes()
    assert fresh == set(expected)
    for node in list(expected) + list(fresh):
        cls, props = expected[node]
        assert type(node) is cls, node
        for name, value in props.items():
            assert getattr(node, name) == value, (node, name)
        if cls is HostCallbackNode:
            assert node.callback is fn
    assert len(embedded.child_graph.nodes()) == 1
    d.close()


@pytest.mark.gpu
def test_node_type_and_graph(dev, k, buffers):
    x, y = buffers(), buffers()
    event = dev.create_event()
    child = GraphDefinition()
    child.empty()
    d = GraphDefinition()
    alloc = d.allocate(64)
    made = {
        T.CU_GRAPH_NODE_TYPE_EMPTY: d.empty(),
        T.CU_GRAPH_NODE_TYPE_KERNEL: d.launch(CFG, k.fill, x, i32(0), n32()),
        T.CU_GRAPH_NODE_TYPE_MEMSET: d.memset(x, 0, 4),
        T.CU_GRAPH_NODE_TYPE_MEMCPY: d.memcpy(y, x, 4),
        T.CU_GRAPH_NODE_TYPE_MEM_ALLOC: alloc,
        T.CU_GRAPH_NODE_TYPE_MEM_FREE: alloc.deallocate(alloc.dptr),
        T.CU_GRAPH_NODE_TYPE_GRAPH: d.embed(child),
        T.CU_GRAPH_NODE_TYPE_EVENT_RECORD: d.record(event),
        T.CU_GRAPH_NODE_TYPE_WAIT_EVENT: d.wait(event),
        T.CU_GRAPH_NODE_TYPE_HOST: d.callback(lambda: None),
    }
    for node_type, node in made.items():
        assert isinstance(node, GraphNode)
        assert node.type == node_type and isinstance(node.type, driver.CUgraphNodeType)
        assert node.graph == d
    for node in d.nodes():
        assert node.graph == d and made[node.type] == node
    d.close()


# -- definition-level update -------------------------------------------------------------------

@pytest.mark.gpu
def test_kernel_node_update(dev, stream, k, buffers):
    x = buffers(fill=0)
    d = GraphDefinition()
    node = d.launch(CFG, k.fill, x, i32(1), n32())
    before = d.instantiate()
    node.update(args=(x, i32(4), n32()))  # arguments only: the kernel and config stay
    assert node.kernel == k.fill and node.config == CFG
    run(d.instantiate(), stream)
    assert np.array_equal(fetch(x, stream), np.full(N, 4))
    run(before, stream)  # a Graph instantiated earlier keeps the old arguments
    assert np.array_equal(fetch(x, stream), np.full(N, 1))

    with pytest.raises(TypeError):
        node.update(kernel=k.add)  # a new kernel needs its arguments
    with pytest.raises(TypeError):
        node.update(args=(x, i32(4)))  # fill takes three
    with pytest.raises(ValueError):
        node.update(config=LaunchConfig(grid=2, cluster=2, block=32))
    assert node.kernel == k.fill and node.config == CFG

    node.update(kernel=k.add, args=(x, i32(10), n32()))
    assert node.kernel == k.add
    run(d.instantiate(), stream)
    assert np.array_equal(fetch(x, stream), np.full(N, 11))

    node.update(config=LaunchConfig(grid=1, block=N // 2))
    assert node.block == (N // 2, 1, 1) and node.grid == (1, 1, 1) and node.kernel == k.add
    put(x, np.zeros(N), stream)
    run(d.instantiate(), stream)
    assert np.array_equal(fetch(x, stream), np.repeat([10, 0], N // 2))
    before.close()


@pytest.mark.gpu
def test_memset_node_update(dev, stream, buffers):
    x, y = buffers(fill=0), buffers(fill=0)
    d = GraphDefinition()
    node = d.memset(x, np.uint8(1), N * 4)
    node.update(value=np.uint8(9))  # the rest stays
    assert (node.dptr, node.value, node.element_size, node.width) == \
        (int(x.handle), 9, 1, N * 4)
    run(d.instantiate(), stream)
    assert np.array_equal(fetch(x, stream, np.uint8), np.full(N * 4, 9, np.uint8))
    node.update(dst=y, value=np.uint32(7), width=N)
    assert (node.dptr, node.value, node.element_size, node.width, node.height) == \
        (int(y.handle), 7, 4, N, 1)
    put(x, np.zeros(N), stream)
    run(d.instantiate(), stream)
    assert np.array_equal(fetch(y, stream), np.full(N, 7))
    assert np.array_equal(fetch(x, stream), np.zeros(N))  # no longer written
    node.update(dst=int(y.handle), value=np.uint32(3), width=4, height=2, pitch=128,
                dst_owner=y)
    assert (node.width, node.height, node.pitch) == (4, 2, 128)
    run(d.instantiate(), stream)
    want = np.full(N, 7)
    want[0:4] = want[32:36] = 3
    assert np.array_equal(fetch(y, stream), want)
    d.close()


@pytest.mark.gpu
def test_memcpy_node_update(dev, stream, buffers):
    x, y, z = buffers(fill=0), buffers(fill=0), buffers(fill=0)
    put(x, np.arange(N), stream)
    d = GraphDefinition()
    node = d.memcpy(y, x, N * 4)
    node.update(dst=z)
    assert (node.dst, node.src, node.size) == (int(z.handle), int(x.handle), N * 4)
    run(d.instantiate(), stream)
    assert np.array_equal(fetch(z, stream), np.arange(N))
    assert np.array_equal(fetch(y, stream), np.zeros(N))
    node.update(dst=y, size=8)
    assert (node.dst, node.src, node.size) == (int(y.handle), int(x.handle), 8)
    run(d.instantiate(), stream)
    assert np.array_equal(fetch(y, stream), np.concatenate([[0, 1], np.zeros(N - 2)]))
    # A raw-address destination and a Buffer source: a partial update keeps both.
    raw = d.memcpy(int(z.handle), x, N * 4)
    raw.update(size=12)
    assert (raw.dst, raw.src, raw.size) == (int(z.handle), int(x.handle), 12)
    raw.update(src=y)
    assert (raw.dst, raw.src, raw.size) == (int(z.handle), int(y.handle), 12)
    put(z, np.full(N, -1), stream)
    run(d.instantiate(), stream)
    assert np.array_equal(fetch(z, stream), np.concatenate([[0, 1, 0], np.full(N - 3, -1)]))
    d.close()


@pytest.mark.gpu
def test_event_record_node_update(dev, stream):
    # A gate (a host node) holds the launch before the record node: the event it records is
    # pending until the gate opens; the other one is untouched.
    first, second = dev.create_event(), dev.create_event()
    gate = HostGate()
    d = GraphDefinition()
    node = d.callback(gate).record(first)
    old = d.instantiate()
    node.update(second)
    assert node.event == second
    new = d.instantiate()
    for graph, recorded, untouched in ((new, second, first), (old, first, second)):
        gate.rearm()
        graph.launch(stream)
        try:
            assert gate.started.wait(10), "the host node did not run"
            assert not recorded.is_done
            assert untouched.is_done
        finally:
            gate.open()
            stream.sync()
        assert recorded.is_done
    assert gate.calls == 2
    old.close()
    new.close()


@pytest.mark.gpu
def test_event_wait_node_update(dev, stream, k, buffers):
    y = buffers(fill=0)
    slow, ready = dev.create_event(), dev.create_event()  # ready: never recorded, so done
    d = GraphDefinition()
    node = d.wait(slow)
    node.launch(CFG, k.fill, y, i32(1), n32())
    node.update(ready)
    assert node.event == ready
    graph = d.instantiate()
    runs_past_a_busy_event(dev, graph, slow, y, stream, k)
    graph.close()


@pytest.mark.gpu
def test_host_callback_node_update(dev, stream):
    calls = []

    def a():
        calls.append("a")

    def b():
        calls.append("b")

    @ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    def c(address):
        calls.append(ctypes.string_at(address, 3))

    d = GraphDefinition()
    node = d.callback(a)
    old = d.instantiate()
    node.update(b)
    assert node.callback is b
    with pytest.raises(ValueError, match="user_data"):
        node.update(a, user_data=b"x")
    assert node.callback is b
    run(d.instantiate(), stream)
    run(old, stream)
    assert calls == ["b", "a"]
    data = bytearray(b"xyz")
    node.update(c, user_data=data)
    data[:] = b"___"
    assert node.callback is None
    run(d.instantiate(), stream)
    assert calls == ["b", "a", b"xyz"]
    old.close()


@pytest.mark.gpu
def test_child_graph_node_update(dev, stream, k, buffers):
    x = buffers(fill=0)
    one, two = GraphDefinition(), GraphDefinition()
    one.launch(CFG, k.fill, x, i32(1), n32())
    two_fill = two.launch(CFG, k.fill, x, i32(2), n32())
    d = GraphDefinition()
    node = d.embed(one)
    old = d.instantiate()
    node.update(two)
    two_fill.update(args=(x, i32(3), n32()))  # after the update: the node's copy is older
    assert len(node.child_graph.nodes()) == 1
    run(d.instantiate(), stream)
    assert np.array_equal(fetch(x, stream), np.full(N, 2))
    run(old, stream)
    assert np.array_equal(fetch(x, stream), np.full(N, 1))
    old.close()


# -- topology: nodes(), edges(), pred/succ, destroy, identity ----------------------------------

@pytest.mark.gpu
def test_nodes_and_edges_of_a_mixed_graph(dev, stream, k, buffers, pinned):
    x, y, out = buffers(fill=0), buffers(fill=0), pinned()
    event = dev.create_event()
    ran = []
    d = GraphDefinition()
    start = d.empty()
    fill = start.launch(CFG, k.fill, x, i32(6), n32())
    zero = d.memset(y, 0, N * 4)
    joined = d.join(fill, zero)
    copy = joined.memcpy(y, x, N * 4)
    record = copy.record(event)
    down = record.memcpy(out, y, N * 4)
    note = down.callback(lambda: ran.append(int(host_view(out)[N - 1])))
    built = {start, fill, zero, joined, copy, record, down, note}
    assert d.nodes() == built
    assert d.edges() == {(start, fill), (fill, joined), (zero, joined), (joined, copy),
                         (copy, record), (record, down), (down, note)}
    assert {type(n) for n in d.nodes()} == {EmptyNode, KernelNode, MemsetNode, MemcpyNode,
                                            EventRecordNode, HostCallbackNode}
    assert joined.pred == {fill, zero} and joined.succ == {copy} and start.pred == set()
    for a, b in d.edges():  # edges() and the pred/succ sets agree
        assert a in b.pred and b in a.succ
    run(d.instantiate(), stream)
    assert ran == [6] and event.is_done
    assert np.array_equal(host_view(out), np.full(N, 6))
    d.close()


@pytest.mark.gpu
def test_pred_and_succ_edits_change_the_order_of_execution(dev, stream, k, buffers):
    # From x = 1, add 1 then multiply by 10 gives 20; the other order gives 11.
    x = buffers(fill=0)
    d = GraphDefinition()
    start = d.memset(x, np.uint32(1), N)
    add = start.launch(CFG, k.add, x, i32(1), n32())
    mul = start.launch(CFG, k.mul, x, i32(10), n32())

    def result():
        graph = d.instantiate()
        run(graph, stream)
        graph.close()
        return fetch(x, stream)

    add.succ.add(mul)
    assert mul.pred == {start, add} and (add, mul) in d.edges()
    assert np.array_equal(result(), np.full(N, 20))

    add.succ.discard(mul)
    mul.succ.add(add)
    assert d.edges() == {(start, add), (start, mul), (mul, add)}
    assert np.array_equal(result(), np.full(N, 11))

    mul.succ.clear()
    add.succ |= {mul}
    assert d.edges() == {(start, add), (start, mul), (add, mul)}
    assert np.array_equal(result(), np.full(N, 20))

    add.succ -= {mul}
    assert d.edges() == {(start, add), (start, mul)}
    add.pred = [start, mul]  # assignment: exactly these predecessors
    assert add.pred == {start, mul} and mul.succ == {add}
    assert np.array_equal(result(), np.full(N, 11))

    add.pred = {start}
    mul.pred.update([add])
    assert d.edges() == {(start, add), (start, mul), (add, mul)}
    assert np.array_equal(result(), np.full(N, 20))
    d.close()


@pytest.mark.gpu
def test_destroy_leaves_the_node_out_of_later_instantiations(dev, stream, k, buffers):
    x = buffers(fill=0)
    d = GraphDefinition()
    fill = d.launch(CFG, k.fill, x, i32(3), n32())
    add = fill.launch(CFG, k.add, x, i32(4), n32())
    mul = add.launch(CFG, k.mul, x, i32(5), n32())
    old = d.instantiate()
    add.destroy()
    add.destroy()  # idempotent
    assert not add.is_valid and fill.is_valid and mul.is_valid
    assert d.nodes() == {fill, mul} and d.edges() == set()
    mul.pred.add(fill)
    run(d.instantiate(), stream)
    assert np.array_equal(fetch(x, stream), np.full(N, 15))
    run(old, stream)  # instantiated before: it still has the add
    assert np.array_equal(fetch(x, stream), np.full(N, 35))
    with pytest.raises(RuntimeError, match="destroyed"):
        add.launch(CFG, k.add, x, i32(1), n32())
    old.close()
    d.close()


@pytest.mark.gpu
def test_nodes_compare_and_hash_by_handle(dev, k, buffers):
    x, y = buffers(), buffers()
    event = dev.create_event()
    child = GraphDefinition()
    child.empty()
    d, other = GraphDefinition(), GraphDefinition()
    alloc = d.allocate(64)
    made = [d.empty(), d.launch(CFG, k.fill, x, i32(0), n32()), d.memset(x, 0, 4),
            d.memcpy(y, x, 4), alloc, alloc.deallocate(alloc.dptr), d.embed(child),
            d.record(event), d.wait(event), d.callback(lambda: None)]
    fresh = {n: n for n in d.nodes()}
    assert len(fresh) == len(made)
    for node in made:
        again = fresh[node]  # found by hash and eq
        assert again == node and hash(again) == hash(node) and not (again != node)
        assert int(again.handle) == int(node.handle)
        assert weakref.ref(node)() is node
    assert len(set(made)) == len(made)  # distinct nodes differ
    assert all(a != b for a in made for b in made if a is not b)
    assert other.empty() not in set(made)
    assert made[0] != d and made[0] != int(made[0].handle)
    d.close()
    other.close()
