"""cuda_core.graph explicit graphs: what a Graph keeps alive (everything its nodes use, until it
is closed and its launches are done), and the calls a GraphDefinition refuses, each leaving the
definition as it was."""

import ctypes
import gc
import os
import time
import types
import weakref

import numpy as np
import pytest

from cuda_core import LaunchConfig
from cuda_core.graph import GraphDefinition

from graph_kernels import (CFG, KERNEL_NAMES, N, SOURCE, buffers, compile_kernels, fetch,
                           i32, k, n32, run, snapshot)
from helpers import run_python

_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))


def wait_until_dead(refs, seconds=2.0):
    """Collect garbage until every weak reference of ``refs`` is dead, for at most
    ``seconds``; returns the names of those still alive."""
    deadline = time.monotonic() + seconds
    while True:
        gc.collect()
        alive = [name for name, ref in refs.items() if ref() is not None]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.01)  # lets the driver's release of the graph's references come through


# -- lifetime ----------------------------------------------------------------------------------

def _build_unreferenced(dev, stream, out, calls):
    """A Graph whose definition, kernels, Buffers, event, callback and child definition are
    made here and referenced by nothing but the graph once this returns: memset x = 10, add 1,
    child graph (copy x to z, add 5 to z, copy z back to x), record an event, a callback,
    memcpy x to ``out``. Returns the Graph and weak references to what it uses."""
    kernels = compile_kernels()  # a module of its own: only the graph holds its kernels
    x = dev.allocate(N * 4, stream=stream)
    z = dev.allocate(N * 4, stream=stream)  # used by the child graph only
    stream.sync()
    event = dev.create_event()

    def note():
        calls.append("ran")

    child = GraphDefinition()
    child.launch(CFG, kernels.copy, x, z, n32()) \
        .launch(CFG, kernels.add, z, i32(5), n32()) \
        .launch(CFG, kernels.copy, z, x, n32())
    d = GraphDefinition()
    d.memset(x, np.uint32(10), N) \
        .launch(CFG, kernels.add, x, i32(1), n32()) \
        .embed(child) \
        .record(event) \
        .callback(note) \
        .memcpy(out, x, N * 4)
    graph = d.instantiate()
    refs = {"x": weakref.ref(x), "z": weakref.ref(z), "add": weakref.ref(kernels.add),
            "copy": weakref.ref(kernels.copy), "event": weakref.ref(event),
            "callback": weakref.ref(note)}
    return graph, refs


@pytest.mark.gpu
def test_graph_keeps_everything_its_nodes_use(dev, stream, buffers):
    out = buffers(fill=-1)
    calls = []
    graph, refs = _build_unreferenced(dev, stream, out, calls)
    gc.collect()
    assert [name for name, ref in refs.items() if ref() is None] == []
    for launch_count in (1, 2):
        run(graph, stream)
        assert np.array_equal(fetch(out, stream), np.full(N, 16))
        assert calls == ["ran"] * launch_count
    assert refs["event"]().is_done
    graph.close()
    stream.sync()
    buffers_only = {name: refs[name] for name in ("x", "z")}
    assert wait_until_dead(buffers_only) == []  # released with the closed, idle Graph


@pytest.mark.gpu
def test_buffers_used_only_by_a_graph_die_after_it_is_closed(dev, stream, k, buffers):
    out = buffers(fill=-1)

    def build():
        x = dev.allocate(N * 4, stream=stream)
        y = dev.allocate(N * 4, stream=stream)
        stream.sync()
        d = GraphDefinition()
        d.memset(x, np.uint32(20), N).launch(CFG, k.add, x, i32(2), n32()) \
            .memcpy(y, x, N * 4).memcpy(out, y, N * 4)
        return d.instantiate(), {"x": weakref.ref(x), "y": weakref.ref(y)}

    graph, refs = build()
    gc.collect()
    assert wait_until_dead(refs, 0) == ["x", "y"]  # held by the graph
    graph.launch(stream)
    graph.close()  # with the launch maybe still queued: it completes
    stream.sync()
    assert np.array_equal(fetch(out, stream), np.full(N, 22))
    assert wait_until_dead(refs) == []  # the Graph object itself is still referenced
    assert graph.is_closed


_QUEUED_SCRIPT = r"""
import ctypes, gc, types
import numpy as np
from cuda_core import Device, LaunchConfig, LegacyPinnedMemoryResource, Program, ProgramOptions
from cuda_core.graph import GraphDefinition

N = 64
dev = Device(0)
dev.set_current()
stream = dev.create_stream()
module = Program(SOURCE, "c++", ProgramOptions(arch=f"sm_{dev.arch}", std="c++17")) \
    .compile("cubin")
kernels = types.SimpleNamespace(**{name: module.get_kernel(name) for name in NAMES})
host = LegacyPinnedMemoryResource().allocate(N * 4)
out = np.ctypeslib.as_array((ctypes.c_int32 * N).from_address(int(host.handle)))
x = dev.allocate(N * 4, stream=stream)
stream.sync()

d = GraphDefinition()
nodes = [d.launch(LaunchConfig(grid=1, block=1), kernels.spin, np.uint64(200_000_000))]
nodes.append(nodes[-1].launch(LaunchConfig(grid=1, block=N), kernels.fill, x, np.int32(7),
                              np.uint32(N)))
nodes.append(nodes[-1].launch(LaunchConfig(grid=1, block=N), kernels.add, x, np.int32(1),
                              np.uint32(N)))
nodes.append(nodes[-1].memcpy(host, x, N * 4))
graph = d.instantiate()

# 1. Destroy every node and close the definition while a launch is queued behind the spin.
out[:] = -1
graph.launch(stream)
for node in reversed(nodes):
    node.destroy()
d.close()
del d, nodes, x, kernels, module
gc.collect()
assert not stream.is_done, "the spin kernel ended before the test could act"
stream.sync()
assert (out == 8).all(), out

# 2. Close the Graph, and drop it, while a launch is queued.
out[:] = -1
graph.launch(stream)
graph.close()
del graph
gc.collect()
stream.sync()
assert (out == 8).all(), out
print("ok")
"""


_CAPTURED_CALLBACK_SCRIPT = r"""
import gc
from cuda_core import Device

dev = Device(0)
dev.set_current()
stream = dev.create_stream()
calls = []


def captured(tag):
    builder = dev.create_graph_builder().begin_building()
    builder.callback(lambda: calls.append(tag))  # held by nothing but the capture
    return builder.end_building()


# 1. A Graph instantiated through a capture's graph_definition, the builder then dropped.
first = captured("instantiated")
graph = first.graph_definition.instantiate()
first.close()
del first
gc.collect()
graph.launch(stream)
stream.sync()

# 2. A Graph updated from a capture's graph_definition, both builders then dropped.
second, third = captured("old"), captured("updated")
updated = second.complete()
updated.update(third.graph_definition)
second.close()
third.close()
del second, third
gc.collect()
updated.launch(stream)
stream.sync()
print(calls)
"""


@pytest.mark.gpu
def test_captured_callbacks_live_with_graphs_made_through_graph_definition():
    # The Graph holds a captured host node's callback whether it was made by complete() or
    # through the capture's GraphDefinition view (instantiate, Graph.update).
    result = run_python(_CAPTURED_CALLBACK_SCRIPT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['instantiated', 'updated']", result.stdout + result.stderr


@pytest.mark.gpu
def test_destroying_and_closing_while_a_launch_is_queued():
    code = f"SOURCE = {SOURCE!r}\nNAMES = {KERNEL_NAMES!r}\n" + _QUEUED_SCRIPT
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok", result.stdout + result.stderr


# -- refused calls leave the definition unchanged ----------------------------------------------

@pytest.fixture
def base(dev, stream, k, buffers):
    """A definition ``d``: first (memset x = 1) -> mid (add 2) -> last (memcpy x to y), whose
    result is y = 3; plus what the refused calls use: another definition's node, closed
    operands, a destroyed node of ``d``, a definition holding an allocation node."""
    x, y = buffers(fill=0), buffers(fill=0)
    d = GraphDefinition()
    first = d.memset(x, np.uint32(1), N)
    mid = first.launch(CFG, k.add, x, i32(2), n32())
    last = mid.memcpy(y, x, N * 4)
    gone = mid.join()
    gone.destroy()
    other = GraphDefinition()
    closed_buffer = dev.allocate(N * 4, stream=stream)
    closed_buffer.close(stream)
    closed_event = dev.create_event()
    closed_event.close()
    closed_definition = GraphDefinition()
    closed_definition.empty()
    closed_definition.close()
    with_alloc = GraphDefinition()
    alloc = with_alloc.allocate(1024)
    alloc.deallocate(alloc.dptr)
    ns = types.SimpleNamespace(d=d, first=first, mid=mid, last=last, gone=gone, x=x, y=y, k=k,
                               foreign=other.empty(), closed_buffer=closed_buffer,
                               closed_event=closed_event, closed_definition=closed_definition,
                               with_alloc=with_alloc)
    yield ns
    for definition in (d, other, with_alloc):
        definition.close()


def _wrong_prototype():
    return ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(lambda address: 0)


REFUSALS = {  # name: (the refused call on the base namespace, exception, message pattern)
    # cycles and self-edges
    "succ_closes_a_cycle": (lambda b: b.last.succ.add(b.first), ValueError, "cycle"),
    "succ_back_edge": (lambda b: b.mid.succ.add(b.first), ValueError, "cycle"),
    "pred_closes_a_cycle": (lambda b: b.first.pred.add(b.last), ValueError, "cycle"),
    "pred_assignment_closes_a_cycle": (
        lambda b: setattr(b.first, "pred", [b.last]), ValueError, "cycle"),
    "succ_assignment_closes_a_cycle": (
        lambda b: setattr(b.last, "succ", {b.mid}), ValueError, "cycle"),
    "self_edge_by_succ": (lambda b: b.mid.succ.add(b.mid), ValueError, "itself"),
    "self_edge_by_pred": (lambda b: b.mid.pred.add(b.mid), ValueError, "itself"),
    # nodes of another definition
    "join_another_definition_node": (
        lambda b: b.d.join(b.first, b.foreign), ValueError, "another GraphDefinition"),
    "node_join_another_definition_node": (
        lambda b: b.mid.join(b.foreign), ValueError, "another GraphDefinition"),
    "pred_with_another_definition_node": (
        lambda b: b.mid.pred.add(b.foreign), ValueError, "another GraphDefinition"),
    "succ_assignment_with_another_definition_node": (
        lambda b: setattr(b.mid, "succ", [b.last, b.foreign]), ValueError,
        "another GraphDefinition"),
    # closed operands
    "memset_into_a_closed_buffer": (
        lambda b: b.mid.memset(b.closed_buffer, 1, 4), RuntimeError, "closed"),
    "memcpy_from_a_closed_buffer": (
        lambda b: b.d.memcpy(b.y, b.closed_buffer, 4), RuntimeError, "closed"),
    "record_a_closed_event": (lambda b: b.mid.record(b.closed_event), RuntimeError, "closed"),
    "wait_on_a_closed_event": (lambda b: b.d.wait(b.closed_event), RuntimeError, "closed"),
    "embed_a_closed_definition": (
        lambda b: b.mid.embed(b.closed_definition), RuntimeError, "closed"),
    # a destroyed node
    "build_on_a_destroyed_node": (
        lambda b: b.gone.launch(CFG, b.k.add, b.x, i32(1), n32()), RuntimeError, "destroyed"),
    "join_a_destroyed_node": (lambda b: b.d.join(b.mid, b.gone), RuntimeError, "destroyed"),
    "edge_to_a_destroyed_node": (lambda b: b.mid.succ.add(b.gone), RuntimeError, "destroyed"),
    # what a child graph may not hold
    "embed_a_definition_with_an_allocation": (
        lambda b: b.mid.embed(b.with_alloc), ValueError, "(?i)alloc"),
    "embed_the_definition_itself": (lambda b: b.mid.embed(b.d), ValueError, "itself"),
    # kernel arguments, checked as launch() checks them
    "kernel_with_too_few_arguments": (
        lambda b: b.mid.launch(CFG, b.k.add, b.x, i32(1)), TypeError,
        "takes 3 arguments, 2 given"),
    "np_int32_for_a_pointer": (
        lambda b: b.mid.launch(CFG, b.k.add, np.int32(0), i32(1), n32()), TypeError,
        "kernel argument 0"),
    "float_for_int_pointer": (  # a C++ kernel: its parameters' kinds are known
        lambda b: b.mid.launch(CFG, b.k.typed_add, 1.5, i32(1), n32()), TypeError,
        "kernel argument 0"),
    "clustered_config": (
        lambda b: b.d.launch(LaunchConfig(grid=2, cluster=2, block=32), b.k.add, b.x, i32(1),
                             n32()), ValueError, "cluster"),
    # memset range, host callbacks
    "memset_past_the_buffer_end": (
        lambda b: b.mid.memset(b.x, 1, N * 4 + 1), ValueError, "a Buffer of"),
    "user_data_with_a_python_callable": (
        lambda b: b.mid.callback(lambda: None, user_data=b"data"), ValueError, "user_data"),
    "ctypes_callback_of_another_prototype": (
        lambda b: b.d.callback(_wrong_prototype()), TypeError, "CFUNCTYPE"),
}


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(REFUSALS))
def test_refused_call_leaves_the_definition_unchanged(base, stream, name):
    call, error, match = REFUSALS[name]
    before = snapshot(base.d)
    assert len(before[0]) == 3 and len(before[1]) == 2
    with pytest.raises(error, match=match):
        call(base)
    assert snapshot(base.d) == before
    graph = base.d.instantiate()  # and it still runs as before
    run(graph, stream)
    assert np.array_equal(fetch(base.y, stream), np.full(N, 3))
    graph.close()


@pytest.mark.gpu
def test_refused_kernel_node_update_leaves_the_node_unchanged(dev, stream, k, buffers):
    x = buffers(fill=0)
    d = GraphDefinition()
    node = d.launch(CFG, k.typed_add, x, i32(4), n32())
    for args in ((x, i32(1)),                   # typed_add takes three
                 (np.int32(0), i32(1), n32()),   # 4 bytes for a pointer
                 (1.5, i32(1), n32())):          # a float for int*
        with pytest.raises(TypeError):
            node.update(args=args)
    with pytest.raises(TypeError):
        node.update(kernel=k.add)  # a new kernel needs its arguments
    assert node.kernel == k.typed_add and node.config == CFG
    run(d.instantiate(), stream)
    assert np.array_equal(fetch(x, stream), np.full(N, 4))
    d.close()


@pytest.mark.gpu
def test_pred_assignment_that_closes_a_cycle_changes_nothing(dev, stream, k, buffers):
    x = buffers(fill=0)
    d = GraphDefinition()
    a = d.launch(CFG, k.fill, x, i32(1), n32())
    b = a.launch(CFG, k.add, x, i32(1), n32())
    c = d.empty()
    before = snapshot(d)
    with pytest.raises(ValueError, match="cycle"):
        a.pred = [c, b]  # c -> a is fine, b -> a closes a cycle: neither is added
    assert snapshot(d) == before
    with pytest.raises(ValueError, match="cycle"):
        a.pred.update([c, b])
    assert snapshot(d) == before
    d.close()


@pytest.mark.gpu
def test_embedded_capture_keeps_what_its_graph_definition_nodes_use(dev, stream, k):
    code = """
import gc, weakref
import numpy as np
from cuda_core import Device, launch
from graph_kernels import CFG, N, compile_kernels, fetch, i32, n32
dev = Device(0); dev.set_current(); s = dev.create_stream()
k = compile_kernels()
x = dev.allocate(N * 4, stream=s)
def child_builder():
    y = dev.allocate(N * 4, stream=s)  # used only by a node of the child's view
    b2 = dev.create_graph_builder().begin_building()
    launch(b2, CFG, k.fill, x, i32(3), n32())
    b2.end_building()
    node = next(iter(b2.graph_definition.nodes()))
    node.launch(CFG, k.copy, x, y, n32()).launch(CFG, k.add, y, i32(4), n32()) \
        .launch(CFG, k.copy, y, x, n32())
    return b2, weakref.ref(y)
b2, y_ref = child_builder()
b1 = dev.create_graph_builder().begin_building()
b1.embed(b2)
b1.end_building()
graph = b1.complete()
b2.close(); del b2; gc.collect()
assert y_ref() is not None, "the embedded copy's Buffer was freed"
graph.launch(s)
assert (fetch(x, s) == 7).all(), fetch(x, s)[:4]
print("kept")
"""
    path = os.pathsep.join(p for p in (_TESTS_DIR, os.environ.get("PYTHONPATH")) if p)
    result = run_python(code, env={"PYTHONPATH": path})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "kept"


@pytest.mark.gpu
def test_body_views_live_with_the_capture_and_end_with_their_node(dev, stream, k):
    from cuda_core.graph import IfNode

    gb = dev.create_graph_builder().begin_building()
    body = gb.if_then(gb.create_condition(1))
    gb.end_building()
    view = body.graph_definition  # after the capture ended: the view keeps the graph
    root = gb.graph_definition
    gb.close()
    assert view.is_valid and view.nodes() == set()
    (if_node,) = [n for n in root.nodes() if isinstance(n, IfNode)]
    assert if_node.then == view
    if_node.destroy()  # the body goes with its node
    assert not view.is_valid
    with pytest.raises(RuntimeError, match="no longer valid"):
        view.nodes()
    with pytest.raises(RuntimeError, match="gone"):
        body.begin_building()
    body.close()
