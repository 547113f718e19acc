"""Identity and protocols on the GPU (issue 27, part 3): a graph node looked up twice is the same
Python object while a reference to it lives, as in cuda.core; and ``==``, ``hash``,
``copy.copy``/``copy.deepcopy`` and pickling of the objects that need a device (Device, Stream,
Event, Buffer, the memory resources, Kernel, ObjectCode, the graph classes) behave as cuda.core
1.2.2's, each scenario run through both packages and compared (tests/helpers/differential.py).
The CPU half is tests/test_identity_protocols.py.
"""

import copy
import ctypes
import gc
import importlib
import pickle
import threading
import weakref

import pytest

from helpers.differential import (Raised, Scenario, agree, outcome,
                                  skip_where_reference_lacks_cuda_13)

KERNEL = r'extern "C" __global__ void put(int* p, int v) { *p = v; }'
_STATE = {}


def gpu(m):
    """The package's device 0 (current), a stream and compiled code, made once."""
    if m.__name__ not in _STATE:
        dev = m.Device(0)
        dev.set_current()
        code = m.Program(KERNEL, "c++", m.ProgramOptions(arch="sm_" + dev.arch)).compile("cubin")
        _STATE[m.__name__] = (dev, dev.create_stream(), code)
    return _STATE[m.__name__]


def graph_module(m):
    return importlib.import_module(m.__name__ + ".graph")


# -- graph node identity -------------------------------------------------------------------------

def _identity_of_nodes(m):
    """Whether every way of reaching a node gives the object the builder returned."""
    gpu(m)
    d = graph_module(m).GraphDefinition()
    a = d.empty()
    b = a.join()
    c = d.join(a, b)
    nodes = d.nodes()
    edges = d.edges()
    return (
        all(any(n is x for n in nodes) for x in (a, b, c)),
        all(any(e[0] is s and e[1] is t for e in edges) for s, t in ((a, b), (a, c), (b, c))),
        next(iter(b.pred)) is a,
        {id(n) for n in c.pred} == {id(a), id(b)},
        {id(n) for n in a.succ} == {id(b), id(c)},
        next(iter(next(iter(d.nodes() - {b, c})).succ - {c})) is b,
    )


def _identity_of_conditional_and_child_nodes(m):
    g = graph_module(m)
    gpu(m)
    d = g.GraphDefinition()
    cond = d.create_condition(default_value=0)
    if_node = d.if_then(cond)
    child = g.GraphDefinition()
    child.empty()
    embedded = if_node.embed(child)
    return (next(iter(d.nodes() - {embedded})) is if_node,
            next(iter(if_node.succ)) is embedded, type(if_node).__name__,
            type(next(iter(embedded.pred))).__name__)


def _a_dead_node_object_is_replaced(m):
    """Once the last reference is gone the next lookup makes another object, equal to what the
    old one was; the node's record keeps no strong reference."""
    gpu(m)
    d = graph_module(m).GraphDefinition()
    node = d.empty()
    ref = weakref.ref(node)
    handle = int(node.handle)
    del node
    gc.collect()
    again = next(iter(d.nodes()))
    return ref() is None, int(again.handle) == handle, again.is_valid


def _a_destroyed_node_is_never_a_new_one(m):
    """A destroyed node's object stays invalid, and never stands for a node added later (the
    driver may give the new node the same address)."""
    gpu(m)
    d = graph_module(m).GraphDefinition()
    old = d.empty()
    old.destroy()
    fresh = [d.empty() for _ in range(8)]
    return (not old.is_valid, not any(f is old for f in fresh),
            not any(n is old for n in d.nodes()), all(f.is_valid for f in fresh))


GPU_SCENARIOS = [
    Scenario("a node is one object: nodes(), edges(), pred, succ", _identity_of_nodes),
    Scenario("a conditional and a child graph node are one object each",
             _identity_of_conditional_and_child_nodes),
    Scenario("a node object with no reference left is made again",
             _a_dead_node_object_is_replaced),
    Scenario("a destroyed node's object is never a new node's",
             _a_destroyed_node_is_never_a_new_one),
]


# -- ==, hash, copy and pickle of the objects that need a device ---------------------------------

def protocols(make):
    """What a user sees of an object's protocols: == to itself and to another made alike, hash
    consistent with ==, copy.copy, copy.deepcopy and a pickle round trip (the copy is the same
    object, an equal one or another; or the exception class raised), and the kind of repr."""
    def run(m):
        obj = make(m)
        other = make(m)
        seen = [obj == obj, obj == other]
        try:
            seen.append(hash(obj) == hash(obj) and (obj != other or hash(obj) == hash(other)))
        except TypeError:
            seen.append("unhashable")
        for action in (copy.copy, copy.deepcopy, lambda o: pickle.loads(pickle.dumps(o))):
            try:
                got = action(obj)
            except Exception as exc:  # the outcome compared, by class (differential.Raised)
                seen.append(Raised(exc))
                continue
            seen.append(("same object" if got is obj else "equal" if got == obj else
                         "another object", type(got).__name__))
        text = repr(obj)  # the same kind of repr: dataclass-like fields, or <...>
        seen.append("fields" if text.startswith(type(obj).__name__ + "(") else
                    "angle brackets" if text.startswith("<") else "other")
        return tuple(seen)
    return run


def _condition(m):
    return gpu(m)[0].create_graph_builder().begin_building().create_condition(default_value=1)


def _held_definition(m):
    d = graph_module(m).GraphDefinition()
    _HOLD.append(d)  # kept with its nodes past the scenario (node objects need it alive)
    return d


_HOLD = []


def _node(m):
    gpu(m)
    d = _held_definition(m)
    return d.empty()


def _same_node_twice(m):
    """The same node, reached again (nodes()): equal to itself and hashed alike."""
    gpu(m)
    d = _held_definition(m)
    node = d.empty()
    _HOLD.append(node)
    return node


def _graph(m):
    gpu(m)
    d = _held_definition(m)
    d.empty()
    return d.instantiate()


def _exec_node(m, kind="kernel"):
    dev, stream, _ = gpu(m)
    d = _held_definition(m)
    if kind == "kernel":
        out = dev.allocate(4, stream=stream)
        _HOLD.append(out)
        node = d.launch(m.LaunchConfig(grid=1, block=1), _kernel(m), out, ctypes.c_int(1))
    elif kind == "empty":
        node = d.empty()
    elif kind == "allocation":
        node = d.allocate(1024)
    else:  # a conditional node
        node = d.if_then(d.create_condition(default_value=0))
    _HOLD.append(node)
    return d.instantiate()[node]


def _kernel(m):
    return gpu(m)[2].get_kernel("put")


def _mr(name, **kw):
    def make(m):
        dev = gpu(m)[0]
        return getattr(m, name)(dev.device_id, **kw) if name != "LegacyPinnedMemoryResource" \
            else m.LegacyPinnedMemoryResource()
    return make


PROTOCOL_SCENARIOS = [
    Scenario("Device(0)", protocols(lambda m: (gpu(m), m.Device(0))[1])),
    Scenario("Device.properties", protocols(lambda m: gpu(m)[0].properties)),
    Scenario("Device.context", protocols(lambda m: gpu(m)[0].context)),
    Scenario("a new Stream", protocols(lambda m: gpu(m)[0].create_stream())),
    Scenario("Stream.from_handle of one stream", protocols(
        lambda m: m.Stream.from_handle(int(gpu(m)[1].handle)))),
    Scenario("default_stream", protocols(lambda m: gpu(m)[0].default_stream)),
    Scenario("a new Event", protocols(lambda m: gpu(m)[0].create_event())),
    Scenario("a device Buffer", protocols(lambda m: gpu(m)[0].allocate(64, stream=gpu(m)[1]))),
    Scenario("a LegacyPinnedMemoryResource Buffer", protocols(
        lambda m: (gpu(m), m.LegacyPinnedMemoryResource())[1].allocate(64))),
    Scenario("DeviceMemoryResource", protocols(_mr("DeviceMemoryResource"))),
    Scenario("PinnedMemoryResource", protocols(lambda m: (gpu(m), m.PinnedMemoryResource())[1])),
    Scenario("ManagedMemoryResource", protocols(
        lambda m: (gpu(m), m.ManagedMemoryResource())[1])),
    Scenario("LegacyPinnedMemoryResource", protocols(_mr("LegacyPinnedMemoryResource"))),
    Scenario("GraphMemoryResource", protocols(_mr("GraphMemoryResource"))),
    Scenario("VirtualMemoryResource", protocols(_mr("VirtualMemoryResource"))),
    Scenario("Device.memory_resource", protocols(lambda m: gpu(m)[0].memory_resource)),
    Scenario("ObjectCode", protocols(lambda m: m.ObjectCode.from_cubin(gpu(m)[2].code,
                                                                       name="put"))),
    Scenario("Kernel", protocols(_kernel)),
    Scenario("Kernel.attributes", protocols(lambda m: _kernel(m).attributes)),
    Scenario("Program", protocols(lambda m: (gpu(m), m.Program(KERNEL, "c++"))[1])),
    Scenario("LaunchConfig", protocols(lambda m: m.LaunchConfig(grid=2, block=32))),
    Scenario("GraphDefinition", protocols(lambda m: (gpu(m), _held_definition(m))[1])),
    Scenario("a GraphNode", protocols(_node)),
    Scenario("GraphCondition", protocols(_condition)),
    Scenario("GraphBuilder", protocols(lambda m: gpu(m)[0].create_graph_builder())),
    Scenario("Graph", protocols(_graph)),
    Scenario("an ExecutableKernelNode", protocols(_exec_node)),
]

# Graph[node] of a node the driver cannot change in an executable graph: cuda.core refuses
# EmptyNode with a TypeError ("... does not support executable updates").
PROTOCOL_SCENARIOS += [Scenario(f"Graph[an {kind} node]", lambda m, kind=kind: (
    type(_exec_node(m, kind)).__name__)) for kind in ("empty", "allocation", "conditional")]

# The same node reached twice: equal and hashed alike (and, with identity, the same object).
PROTOCOL_SCENARIOS.append(Scenario("a GraphNode reached through nodes()", lambda m: (
    lambda n: (n == next(iter(n.graph.nodes())), hash(n) == hash(next(iter(n.graph.nodes()))),
               n is next(iter(n.graph.nodes()))))(_same_node_twice(m))))

ALL = GPU_SCENARIOS + PROTOCOL_SCENARIOS

# Known differences, open in issue 27 (strict: each fails the run once it agrees).
OPEN: dict[str, str] = {}  # scenario name -> why it still differs (strict xfail)


def test_scenario_names_are_unique():
    names = [s.name for s in ALL]
    assert len(names) == len(set(names))


@pytest.mark.gpu
@pytest.mark.parametrize("scenario", [
    pytest.param(s, marks=pytest.mark.xfail(strict=True, reason=OPEN[s.name]))
    if s.name in OPEN else s for s in ALL], ids=[s.name for s in ALL])
def test_same_outcome_as_cuda_core_on_the_gpu(scenario):
    # The shared setup runs outside the comparison: were it to fail in both packages alike,
    # every scenario would "agree" on that error and test nothing.
    for name in ("cuda.core", "cuda_core"):
        gpu(importlib.import_module(name))
    theirs, ours = outcome(scenario, "cuda.core"), outcome(scenario, "cuda_core")
    if theirs.error is not None:
        skip_where_reference_lacks_cuda_13(str(theirs.error))
    assert agree(theirs, ours), f"cuda.core {theirs}; ours {ours}"
    if scenario in GPU_SCENARIOS:  # each says True where identity holds (or names a class)
        assert ours.error is None and all(v is True or isinstance(v, str) for v in ours.value), \
            f"ours {ours}"


# -- ours only: identity under threads, and the bookkeeping behind it ----------------------------

@pytest.mark.gpu
def test_threads_looking_up_one_node_get_one_object(dev):
    from cuda_core.graph import GraphDefinition

    d = GraphDefinition()
    first = d.empty()
    for _ in range(15):
        first.join()
    handles = {int(n.handle) for n in d.nodes()}
    del first
    gc.collect()  # every node object gone: the threads race to make them
    barrier = threading.Barrier(8)
    seen = []

    def look():
        dev.set_current()
        barrier.wait()
        for _ in range(50):
            seen.append({int(n.handle): n for n in d.nodes()})

    threads = [threading.Thread(target=look) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 400 and all(set(s) == handles for s in seen)
    # Each node's objects are one while any reference lives: every lookup holds them all.
    assert all(len({id(s[h]) for s in seen}) == 1 for h in handles)


@pytest.mark.gpu
def test_a_node_object_dies_with_its_last_reference(dev):
    from cuda_core.graph import GraphDefinition

    d = GraphDefinition()
    refs = [weakref.ref(d.empty()) for _ in range(4)]
    gc.collect()
    assert all(r() is None for r in refs)  # the graph's bookkeeping holds them weakly
    assert len(d.nodes()) == 4


@pytest.mark.gpu
def test_a_view_closed_by_the_user_does_not_keep_its_node_objects(dev):
    """``GraphDefinition.close()`` on a view (ours only: cuda.core's views cannot be closed)
    ends that view; a node reached through another view gets an object of the open one."""
    from cuda_core.graph import GraphDefinition

    d = GraphDefinition()
    cond = d.create_condition(default_value=0)
    body = d.if_then(cond).then
    inner = body.empty()
    body.close()
    with pytest.raises(RuntimeError):
        inner.pred
    again = next(iter(next(iter(d.nodes())).then.nodes()))
    assert again == inner and again is not inner and again.is_valid
    assert next(iter(again.graph.nodes())) is again
