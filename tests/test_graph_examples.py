"""cuda.core's documented graph examples, with ``cuda_core`` in place of ``cuda.core``: the
examples cuda_graphs.py (capture of three kernels; CuPy arrays) and graph_update.py
(Graph.update with a capture of the same topology), and the code of cuda.core's graph API
pages (a GraphDefinition built as a chain of builder calls, conditional nodes,
``graph[node].update``). Each runs in a fresh interpreter, written here in our own words, and
verifies its own result; the test checks what it printed."""

import ast
import os
import re
import textwrap

import pytest

from helpers import run_python

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs",
                   "explicit_graphs.rst")
_BLOCK = re.compile(r"^\.\. code-block:: python\n\n((?:(?:   .*)?\n)+)", re.MULTILINE)

def _run(code):
    result = run_python(code, timeout=300)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    return result.stdout.strip().splitlines()


CUDA_GRAPHS = r'''
import cupy as cp

from cuda_core import Device, LaunchConfig, Program, ProgramOptions, launch
from cuda_core.graph import GraphDefinition

CODE = """
template <typename T>
__global__ void vector_add(const T* a, const T* b, T* out, size_t n) {
    for (size_t i = threadIdx.x + blockIdx.x * (size_t)blockDim.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) out[i] = a[i] + b[i];
}
template <typename T>
__global__ void vector_multiply(const T* a, const T* b, T* out, size_t n) {
    for (size_t i = threadIdx.x + blockIdx.x * (size_t)blockDim.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) out[i] = a[i] * b[i];
}
template <typename T>
__global__ void vector_subtract(const T* a, const T* b, T* out, size_t n) {
    for (size_t i = threadIdx.x + blockIdx.x * (size_t)blockDim.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) out[i] = a[i] - b[i];
}
"""

dev = Device()
dev.set_current()
stream = dev.create_stream()
# CuPy works on our stream: taken through __cuda_stream__ by CuPy 14, which deprecates
# ExternalStream; by address before.
from_external = getattr(cp.cuda.Stream, "from_external", None)
(from_external(stream) if from_external else cp.cuda.ExternalStream(int(stream.handle))).use()

names = ("vector_add<float>", "vector_multiply<float>", "vector_subtract<float>")
module = Program(CODE, code_type="c++",
                 options=ProgramOptions(std="c++17", arch=f"sm_{dev.arch}")) \
    .compile("cubin", name_expressions=names)
add, multiply, subtract = (module.get_kernel(name) for name in names)

size = 1 << 20
rng = cp.random.default_rng(42)
a, b, c = (rng.random(size, dtype=cp.float32) for _ in range(3))
r1, r2, r3 = cp.empty_like(a), cp.empty_like(a), cp.empty_like(a)
config = LaunchConfig(grid=(size + 255) // 256, block=256)
n = cp.uint64(size)
dev.sync()

def check(label):
    e1 = a + b
    e2 = e1 * c
    e3 = e2 - a
    for got, want in ((r1, e1), (r2, e2), (r3, e3)):
        assert cp.allclose(got, want, rtol=1e-5, atol=1e-5), label
    print(f"{label}: verified")

def reset():
    for r in (r1, r2, r3):
        r.fill(0)
    stream.sync()

# The example: the three launches captured into a graph, uploaded and launched once.
builder = stream.create_graph_builder()
builder.begin_building()
launch(builder, config, add, a.data.ptr, b.data.ptr, r1.data.ptr, n)
launch(builder, config, multiply, r1.data.ptr, c.data.ptr, r2.data.ptr, n)
launch(builder, config, subtract, r2.data.ptr, a.data.ptr, r3.data.ptr, n)
graph = builder.end_building().complete()
graph.upload(stream)
graph.launch(stream)
stream.sync()
check("captured graph")

# The same operations launched one by one.
reset()
launch(stream, config, add, a.data.ptr, b.data.ptr, r1.data.ptr, n)
launch(stream, config, multiply, r1.data.ptr, c.data.ptr, r2.data.ptr, n)
launch(stream, config, subtract, r2.data.ptr, a.data.ptr, r3.data.ptr, n)
stream.sync()
check("individual launches")

# And as an explicit graph: each node depends on the one it was added to.
reset()
d = GraphDefinition()
d.launch(config, add, a.data.ptr, b.data.ptr, r1.data.ptr, n) \
    .launch(config, multiply, r1.data.ptr, c.data.ptr, r2.data.ptr, n) \
    .launch(config, subtract, r2.data.ptr, a.data.ptr, r3.data.ptr, n)
explicit = d.instantiate()
explicit.launch(stream)
stream.sync()
check("explicit graph")

cp.cuda.Stream.null.use()
for resource in (graph, explicit, builder, d, stream):
    resource.close()
'''


@pytest.mark.gpu
def test_cuda_graphs_example():
    pytest.importorskip("cupy")
    assert _run(CUDA_GRAPHS) == ["captured graph: verified", "individual launches: verified",
                                 "explicit graph: verified"]


GRAPH_UPDATE = r'''
import numpy as np

from cuda_core import (Device, LaunchConfig, LegacyPinnedMemoryResource, Program,
                       ProgramOptions, launch)
from cuda_core.graph import GraphDefinition

CODE = """
extern "C" __global__ void add_one(int* value) {
    if (threadIdx.x == 0 && blockIdx.x == 0) *value += 1;
}
"""
ONE = LaunchConfig(grid=1, block=1)

def increments(device, kernel, target):
    """A finished capture of two launches, each adding one to the int at ``target``."""
    builder = device.create_graph_builder().begin_building()
    launch(builder, ONE, kernel, target)
    launch(builder, ONE, kernel, target)
    return builder.end_building()

device = Device()
device.set_current()
stream = device.create_stream()
kernel = Program(CODE, code_type="c++",
                 options=ProgramOptions(std="c++17", arch=f"sm_{device.arch}")) \
    .compile("cubin").get_kernel("add_one")
buffer = LegacyPinnedMemoryResource().allocate(2 * np.dtype(np.int32).itemsize)
values = np.from_dlpack(buffer).view(np.int32)
values[:] = 0
first, second = values[0:].ctypes.data, values[1:].ctypes.data

def launch_once(graph):
    graph.upload(stream)
    graph.launch(stream)
    stream.sync()
    print(tuple(int(v) for v in values))

initial = increments(device, kernel, first)
updated = increments(device, kernel, second)
graph = initial.complete()
launch_once(graph)                      # (2, 0)
graph.update(updated)                   # same topology, another pointer
launch_once(graph)                      # (2, 2)

# The same update from an explicit definition of the same shape ...
explicit = GraphDefinition()
explicit.launch(ONE, kernel, first).launch(ONE, kernel, first)
graph.update(explicit)
launch_once(graph)                      # (4, 2)
# ... and from a capture seen as a GraphDefinition.
graph.update(updated.graph_definition)
launch_once(graph)                      # (4, 4)

for resource in (graph, explicit, updated, initial, buffer, stream):
    resource.close()
'''


@pytest.mark.gpu
def test_graph_update_example():
    assert _run(GRAPH_UPDATE) == ["(2, 0)", "(2, 2)", "(4, 2)", "(4, 4)"]


# The kernels of the API-page snippets below.
SNIPPET_KERNELS = r'''
import numpy as np

from cuda_core import Device, LaunchConfig, LegacyPinnedMemoryResource, Program, ProgramOptions

CODE = """
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(
    cudaGraphConditionalHandle handle, unsigned int value);

extern "C" __global__ void scale_add(float* x, float a, float b, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * x[i] + b;
}
extern "C" __global__ void sum2(const float* x, const float* y, float* out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}
extern "C" __global__ void halve_until_small(cudaGraphConditionalHandle keep_going, float* x) {
    *x = *x / 2.0f;
    cudaGraphSetConditional(keep_going, *x >= 1.0f ? 1u : 0u);
}
extern "C" __global__ void is_positive(cudaGraphConditionalHandle cond, const float* x) {
    cudaGraphSetConditional(cond, *x > 0.0f ? 1u : 0u);
}
"""

dev = Device()
dev.set_current()
stream = dev.create_stream()
module = Program(CODE, code_type="c++",
                 options=ProgramOptions(std="c++17", arch=f"sm_{dev.arch}")).compile("cubin")
scale_add, sum2, halve, is_positive = (module.get_kernel(name) for name in
                                       ("scale_add", "sum2", "halve_until_small", "is_positive"))
n = 256
cfg = LaunchConfig(grid=1, block=n)
one = LaunchConfig(grid=1, block=1)
host = LegacyPinnedMemoryResource().allocate(n * 4)
out = np.from_dlpack(host).view(np.float32)
'''

BUILDER_CHAIN = SNIPPET_KERNELS + r'''
from cuda_core.graph import EmptyNode, GraphDefinition, KernelNode, MemsetNode

x, y, total = (dev.allocate(n * 4, stream=stream) for _ in range(3))
stream.sync()

d = GraphDefinition()
# Entry nodes come from the definition; every other builder call adds a node that depends on
# the node it is called on.
init_x = d.memset(x, np.float32(1.0), n)
init_y = d.memset(y, np.float32(2.0), n)
grow_x = init_x.launch(cfg, scale_add, x, np.float32(3.0), np.float32(1.0), np.uint32(n))
grow_y = init_y.launch(cfg, scale_add, y, np.float32(10.0), np.float32(0.0), np.uint32(n))
both = grow_x.join(grow_y)                 # waits for both branches
add = both.launch(cfg, sum2, x, y, total, np.uint32(n))
add.memcpy(host, total, n * 4)
assert isinstance(init_x, MemsetNode) and isinstance(both, EmptyNode)
assert isinstance(add, KernelNode) and add.pred == {both}
print(len(d.nodes()), len(d.edges()))

graph = d.instantiate()
graph.launch(stream)
stream.sync()
assert (out == 24.0).all(), out
print(float(out[0]))
'''

CONDITIONALS = SNIPPET_KERNELS + r'''
from cuda_core.graph import GraphDefinition

x = dev.allocate(4, stream=stream)
stream.sync()

# A while loop: the body halves x and says whether to go on.
d = GraphDefinition()
keep_going = d.create_condition(default_value=1)
start = d.memset(x, np.float32(100.0), 1)
loop = start.while_loop(keep_going)
loop.body.launch(one, halve, keep_going, x)
# Then an if/else on the result: positive -> +10, else -> -10.
sign = d.create_condition()
branch = loop.launch(one, is_positive, sign, x).if_else(sign)
branch.then.launch(one, scale_add, x, np.float32(1.0), np.float32(10.0), np.uint32(1))
branch.else_.launch(one, scale_add, x, np.float32(1.0), np.float32(-10.0), np.uint32(1))
branch.memcpy(host, x, 4)
print(loop.cond_type, branch.cond_type, len(loop.branches), len(branch.branches))

graph = d.instantiate()
graph.launch(stream)
stream.sync()
print(float(out[0]))  # 100 halved down to 0.78125, then + 10
'''

EXEC_UPDATE = SNIPPET_KERNELS + r'''
from cuda_core.graph import ExecutableKernelNode, GraphDefinition

x = dev.allocate(n * 4, stream=stream)
stream.sync()

d = GraphDefinition()
node = d.memset(x, np.float32(1.0), n).launch(
    cfg, scale_add, x, np.float32(2.0), np.float32(0.0), np.uint32(n))
node.memcpy(host, x, n * 4)
graph = d.instantiate()
handle = int(graph.handle)

def once():
    graph.launch(stream)
    stream.sync()
    return float(out[0])

view = graph[node]
assert isinstance(view, ExecutableKernelNode)
print(once())                                   # 1 * 2 + 0
view.update(config=cfg, kernel=scale_add,
            args=(x, np.float32(5.0), np.float32(1.0), np.uint32(n)))
print(once())                                   # 1 * 5 + 1
view.disable()
print(once(), view.is_enabled)                  # the memset alone
view.enable()
print(once(), int(graph.handle) == handle)      # the same executable graph throughout
'''


@pytest.mark.gpu
def test_api_snippet_builder_chain():
    assert _run(BUILDER_CHAIN) == ["7 6", "24.0"]


@pytest.mark.gpu
def test_api_snippet_conditional_nodes():
    assert _run(CONDITIONALS) == ["while if 1 2", "10.78125"]


@pytest.mark.gpu
def test_api_snippet_executable_node_update():
    assert _run(EXEC_UPDATE) == ["2.0", "6.0", "1.0 False", "6.0 True"]


# -- our own page: docs/explicit_graphs.rst's example runs as written --------------------------

def _doc_example():
    if not os.path.isfile(DOC):
        pytest.skip(f"docs/explicit_graphs.rst is not in this test tree ({DOC})")
    with open(DOC) as f:
        match = _BLOCK.search(f.read())
    assert match, "docs/explicit_graphs.rst has no Python example"
    return textwrap.dedent(match.group(1))


def test_doc_example_parses():
    names = {node.id for node in ast.walk(ast.parse(_doc_example()))
             if isinstance(node, ast.Name)}
    assert {"graph", "twice", "y", "stream", "n"} <= names  # what the check below reads


@pytest.mark.gpu
def test_doc_example_runs():
    # The page's example, then a check: the launch after graph[twice].update left 3.0 in y
    # (the memset's 1.0 scaled by the new factor), with the same executable graph.
    check = """
handle = int(graph.handle)
stream.sync()
from cuda.bindings import driver
host = np.empty(n, np.float32)
assert driver.cuMemcpyDtoH(host.ctypes.data, int(y.handle), n * 4)[0] == 0
assert (host == 3.0).all(), host[:4]
assert int(graph.handle) == handle
print("doc example ok")
"""
    assert _run(_doc_example() + check)[-1] == "doc example ok"
