"""cuda_core.graph explicit graphs: conditional nodes (GraphDefinition.create_condition,
if_then, if_else, while_loop, switch) driven from a kernel that calls cudaGraphSetConditional,
their bodies as GraphDefinition views, and GraphBuilder.graph_definition."""

import numpy as np
import pytest
from cuda.bindings import driver

from cuda_core import launch
from cuda_core.graph import (ConditionalNode, GraphBuilder, GraphCondition,
                             GraphDefinition, IfElseNode, IfNode, KernelNode, SwitchNode,
                             WhileNode)
from cuda_core.typing import GraphConditionalType

from graph_kernels import CFG, N, ONE, buffers, fetch, i32, k, n32, put, run, snapshot

CONDITIONAL = driver.CUgraphNodeType.CU_GRAPH_NODE_TYPE_CONDITIONAL


def set_flag(flag, value, stream):
    put(flag, [value], stream, np.uint32)


# -- each kind, driven from a kernel -----------------------------------------------------------

@pytest.mark.gpu
def test_if_then(dev, stream, k, buffers):
    flag, x = buffers(4, fill=1), buffers(fill=0)
    d = GraphDefinition()
    cond = d.create_condition()
    assert isinstance(cond, GraphCondition)
    setter = d.launch(ONE, k.set_cond_from, cond, flag)
    node = setter.if_then(cond)
    assert type(node) is IfNode and isinstance(node, ConditionalNode)
    assert node.type == CONDITIONAL and node.pred == {setter}
    body = node.then
    assert isinstance(body, GraphDefinition) and body != d and body.nodes() == set()
    inner = body.launch(CFG, k.add, x, i32(1), n32())
    assert inner.graph == body and body.nodes() == {inner}
    assert inner not in d.nodes()  # a definition lists its own nodes, not its bodies'
    assert node.then == body and node.branches == (body,)
    assert node.condition == cond
    after = node.launch(CFG, k.add, x, i32(100), n32())
    assert d.nodes() == {setter, node, after}
    graph = d.instantiate()
    expected = 0
    for value in (1, 0, 7, 0):  # any nonzero value runs the body
        set_flag(flag, value, stream)
        run(graph, stream)
        expected += (1 if value else 0) + 100
        assert np.array_equal(fetch(x, stream), np.full(N, expected)), value
    graph.close()
    d.close()


@pytest.mark.gpu
def test_if_else(dev, stream, k, buffers):
    flag, x = buffers(4, fill=1), buffers(fill=0)
    d = GraphDefinition()
    cond = d.create_condition()
    node = d.launch(ONE, k.set_cond_from, cond, flag).if_else(cond)
    assert type(node) is IfElseNode and isinstance(node, ConditionalNode)
    then, otherwise = node.then, node.else_
    assert isinstance(then, GraphDefinition) and isinstance(otherwise, GraphDefinition)
    assert then != otherwise and node.branches == (then, otherwise)
    then.launch(CFG, k.add, x, i32(1), n32())
    otherwise.launch(CFG, k.add, x, i32(1000), n32())
    graph = d.instantiate()
    run(graph, stream)
    assert np.array_equal(fetch(x, stream), np.full(N, 1))
    set_flag(flag, 0, stream)
    run(graph, stream)
    assert np.array_equal(fetch(x, stream), np.full(N, 1001))
    graph.close()
    d.close()


@pytest.mark.gpu
def test_while_loop_counts_down_from_five(dev, stream, k, buffers):
    counter, trips, x = buffers(4, fill=5), buffers(4, fill=0), buffers(fill=0)
    d = GraphDefinition()
    cond = d.create_condition(default_value=1)  # set at each launch: the loop is entered
    node = d.while_loop(cond)
    assert type(node) is WhileNode and isinstance(node, ConditionalNode)
    body = node.body
    assert isinstance(body, GraphDefinition) and node.branches == (body,)
    step = body.launch(ONE, k.countdown, cond, counter, trips)
    step.launch(CFG, k.add, x, i32(1), n32())
    graph = d.instantiate()
    run(graph, stream)
    assert fetch(trips, stream)[0] == 5 and fetch(counter, stream)[0] == 0
    assert np.array_equal(fetch(x, stream), np.full(N, 5))  # the whole body ran 5 times
    put(counter, [3], stream)
    run(graph, stream)  # the default value enters the loop again
    assert fetch(trips, stream)[0] == 8 and fetch(counter, stream)[0] == 0
    assert np.array_equal(fetch(x, stream), np.full(N, 8))
    graph.close()
    d.close()


@pytest.mark.gpu
def test_switch(dev, stream, k, buffers):
    flag, x = buffers(4, fill=0), buffers(fill=0)
    d = GraphDefinition()
    cond = d.create_condition()
    node = d.launch(ONE, k.set_cond_from, cond, flag).switch(cond, 3)
    assert type(node) is SwitchNode and isinstance(node, ConditionalNode)
    branches = node.branches
    assert isinstance(branches, tuple) and len(branches) == 3 and len(set(branches)) == 3
    for i, branch in enumerate(branches):
        assert isinstance(branch, GraphDefinition)
        branch.launch(CFG, k.add, x, i32(10 ** i), n32())
    graph = d.instantiate()
    expected = 0
    for value, added in ((0, 1), (2, 100), (5, 0)):  # 5 >= count: no branch runs
        set_flag(flag, value, stream)
        run(graph, stream)
        expected += added
        assert np.array_equal(fetch(x, stream), np.full(N, expected)), value
    assert expected == 101
    graph.close()
    d.close()


@pytest.mark.gpu
@pytest.mark.parametrize("default, runs", [(0, False), (1, True), (2**32 - 1, True)])
def test_default_value_alone_decides(dev, stream, k, buffers, default, runs):
    x = buffers(fill=0)
    d = GraphDefinition()
    d.if_then(d.create_condition(default_value=default)).then.launch(CFG, k.add, x, i32(3),
                                                                    n32())
    graph = d.instantiate()
    run(graph, stream)
    run(graph, stream)
    assert np.array_equal(fetch(x, stream), np.full(N, 6 if runs else 0))
    graph.close()
    d.close()


# -- properties and checks ---------------------------------------------------------------------

@pytest.mark.gpu
def test_cond_type_values(dev):
    d = GraphDefinition()
    made = {"if": d.if_then(d.create_condition()),
            "if/else": d.if_else(d.create_condition()),
            "while": d.while_loop(d.create_condition()),
            "switch": d.switch(d.create_condition(), 2)}
    want = {"if": "if", "if/else": "if", "while": "while", "switch": "switch"}
    for name, node in made.items():
        assert isinstance(node.cond_type, GraphConditionalType), name
        assert node.cond_type == want[name] and node.cond_type is GraphConditionalType(want[name])
        assert isinstance(node.condition, GraphCondition)
    assert made["if"].cond_type is GraphConditionalType.IF
    assert made["while"].cond_type is GraphConditionalType.WHILE
    assert made["switch"].cond_type is GraphConditionalType.SWITCH
    assert [len(made[name].branches) for name in want] == [1, 2, 1, 2]
    # nodes() gives the same classes and conditions back.
    by_handle = {int(n.handle): n for n in d.nodes()}
    for node in made.values():
        again = by_handle[int(node.handle)]
        assert type(again) is type(node) and again == node
        assert again.condition == node.condition and again.cond_type == node.cond_type
        assert again.branches == node.branches
    d.close()


@pytest.mark.gpu
def test_condition_of_another_definition_is_refused(dev, k, buffers):
    x = buffers()
    d, other = GraphDefinition(), GraphDefinition()
    foreign = other.create_condition()
    own = d.create_condition(default_value=0)
    entry = d.launch(CFG, k.fill, x, i32(0), n32())
    node = entry.if_then(own)
    before = snapshot(d)
    for make in (d.if_then, d.if_else, d.while_loop, lambda c: d.switch(c, 2),
                 entry.if_then, entry.if_else, entry.while_loop, lambda c: entry.switch(c, 2)):
        with pytest.raises(ValueError):
            make(foreign)
        with pytest.raises(TypeError):
            make(own.handle)  # the condition, not its handle
    # A body's nodes take conditions of the body (its own create_condition), not the root's.
    with pytest.raises(ValueError):
        node.then.if_then(own)
    assert snapshot(d) == before and node.then.nodes() == set()
    inner = node.then.create_condition(default_value=0)
    nested = node.then.if_then(inner)
    assert isinstance(nested, IfNode) and node.then.nodes() == {nested}
    with pytest.raises(ValueError):
        entry.if_then(inner)  # and the reverse
    d.close()
    other.close()


@pytest.mark.gpu
def test_create_condition_checks_default_value(dev):
    d = GraphDefinition()
    for bad in (np.True_, 1.0, "1"):
        with pytest.raises(TypeError, match="default_value"):
            d.create_condition(default_value=bad)
    d.create_condition(default_value=True)  # Python's bool is an int, as for cuda.core
    for bad in (-1, 2**32):
        with pytest.raises(ValueError, match="default_value"):
            d.create_condition(default_value=bad)
    for count in (0, 2**32):
        with pytest.raises(ValueError, match="count"):
            d.switch(d.create_condition(), count)
    assert d.nodes() == set()
    d.close()


# -- GraphBuilder.graph_definition -------------------------------------------------------------

@pytest.mark.gpu
def test_builder_graph_definition_availability(dev):
    gb = dev.create_graph_builder()
    with pytest.raises(RuntimeError):
        gb.graph_definition  # noqa: B018 - not building yet: there is no graph
    gb.begin_building()
    with pytest.raises(RuntimeError):
        gb.graph_definition  # noqa: B018 - while building
    _, forked = gb.split(2)
    with pytest.raises(RuntimeError):
        forked.graph_definition  # noqa: B018 - a forked builder: never
    GraphBuilder.join(gb, forked)
    gb.end_building()
    view = gb.graph_definition
    assert isinstance(view, GraphDefinition) and view.is_valid
    assert gb.graph_definition == view  # views of the one captured graph
    gb.close()
    with pytest.raises(RuntimeError, match="closed"):
        gb.graph_definition  # noqa: B018
    assert view.is_valid  # a view taken before close() stays valid
    view.close()  # a view owns nothing: this closes the view only
    assert view.is_closed


@pytest.mark.gpu
def test_nodes_added_through_graph_definition_run(dev, stream, k, buffers):
    x = buffers(fill=0)
    gb = dev.create_graph_builder().begin_building()
    launch(gb, CFG, k.fill, x, i32(1), n32())
    gb.end_building()
    view = gb.graph_definition
    (captured,) = view.nodes()
    assert isinstance(captured, KernelNode) and captured.graph == view
    added = captured.launch(CFG, k.add, x, i32(5), n32())
    assert view.edges() == {(captured, added)}
    graph = gb.complete()  # the builder's graph now has the added node
    run(graph, stream)
    assert np.array_equal(fetch(x, stream), np.full(N, 6))
    gb.close()
    assert view.is_valid and view.nodes() == {captured, added}  # outlives the builder
    again = view.instantiate()
    put(x, np.zeros(N), stream)
    run(again, stream)
    assert np.array_equal(fetch(x, stream), np.full(N, 6))
    graph.close()
    again.close()


@pytest.mark.gpu
def test_conditional_body_built_through_graph_definition(dev, stream, k, buffers):
    # A body builder's graph exists as soon as its conditional node does: it may be filled
    # through graph_definition without ever capturing into it.
    x = buffers(fill=0)
    gb = dev.create_graph_builder().begin_building()
    body = gb.if_then(gb.create_condition(default_value=1))
    view = body.graph_definition
    assert isinstance(view, GraphDefinition) and view.nodes() == set()
    view.launch(CFG, k.add, x, i32(3), n32())
    gb.end_building()
    graph = gb.complete()
    run(graph, stream)
    run(graph, stream)
    assert np.array_equal(fetch(x, stream), np.full(N, 6))
    graph.close()
    body.close()
    gb.close()
