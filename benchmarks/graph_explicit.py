"""Explicit graphs benchmark: the host-side cost of building, instantiating, updating and
replaying a graph built node by node (``cuda_core.graph.GraphDefinition``).

Every case uses one kernel, ``step(float* acc, const float* x, int n, float f)`` (two Buffers,
an ``np.int32`` and an ``np.float32``), launched with ``LaunchConfig(grid=1, block=32)``, in a
chain of ``NODES`` (100) kernel nodes, each depending on the one before. The contenders, all in
this one process, rounds alternated:

* ``cuda_core`` -- this package, the subject;
* ``cuda.core`` -- NVIDIA's cuda.core 1.2, the same statement on its own objects;
* ``C floor``   -- the driver calls alone, in a C loop on parameters prepared once
                   (``cuda_core._bench_floor``, built with the package when CUDA_CORE_BENCH=1),
                   with the kernel, context and argument bytes that ours gives the driver.

The cases:

1. build: a new GraphDefinition, a chain of 100 kernel nodes (``d.launch``, then 99 x
   ``n.launch``), dropped (ours ``d.close()``; both then ``del n, d``). Floor: cuGraphCreate,
   100 x cuGraphAddKernelNode, cuGraphDestroy.
2. instantiate: ``g = d.instantiate(); g.close()`` of a prebuilt 100-node definition. Floor:
   cuGraphInstantiateWithParams + cuGraphExecDestroy. Reported, no target.
3. exec update: ``g[n50].update(config=cfg, kernel=k, args=A)`` on the instantiated graph, the
   argument tuples A and B in turn (the statement swaps them: ``A, B = B, A``, a few ns).
   Floor: cuGraphExecKernelNodeSetParams.
4. definition update: ``n50.update(args=A)``, A and B in turn. Floor:
   cuGraphKernelNodeSetParams.
5. replay: ``g.launch(s)`` of the 100-node graph, at most ``--batch`` launches per sample and
   the stream synchronized after each sample, outside the timing, so the GPU's queue never
   fills. Floor: cuGraphLaunch in a C loop (``graph_launch_loop``).

Before timing, every contender proves its path once: the graph it built (or updated) is
launched and both accumulators are read back. ``step`` adds ``f * x[i] + n`` to ``acc[i]``
(``x[i] = i``): a chain of 100 nodes with A = (acc_a, x, 1, 2.0) leaves ``100 * (2i + 1)`` in
acc_a; with node 50 updated to B = (acc_b, x, 3, 0.5), acc_a holds ``99 * (2i + 1)`` and acc_b
``0.5i + 3``. A wrong argument, a missing node or an update that did not take shows as ERROR.

Targets: ours at most 0.5x cuda.core's time in cases 1, 3 and 4, and at most 1.10x the C floor
in case 5. The report always exits 0 once it ran; it exits 1, with one line, where there is no
GPU or driver.

Run on the GPU machine:  bash .gpu/on-gpu.sh python3 benchmarks/graph_explicit.py
"""

from __future__ import annotations

import argparse
import importlib
import os
import struct
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _cuda import bench_floor_module as _bench_floor_module  # noqa: E402
from _cuda import check as _check  # noqa: E402
from _cuda import ctx_sync as _ctx_sync  # noqa: E402
from _cuda import driver as _driver  # noqa: E402
from _cuda import quietly as _quietly  # noqa: E402
from _harness import (Case, Contender, Prepared, Target,  # noqa: E402
                      add_arguments, device_meta, finish, run_cases, run_script)

from cuda_core.bench._launch import _Core as _LaunchCore  # noqa: E402

OURS = "cuda_core"
NVIDIA = "cuda.core"
FLOOR = "C floor"
PY_FLOOR = "Python floor"

NVIDIA_RATIO = 0.5   # ours <= 0.5x cuda.core: build, exec update, definition update
REPLAY_RATIO = 1.10  # ours <= 1.10x the C floor: replay

NODES = 100
UPDATED = 50         # the index, in chain order, of the node the update cases change
THREADS = 32
GRID, BLOCK = (1, 1, 1), (THREADS, 1, 1)
NBYTES = 4 * THREADS

SOURCE = r"""
extern "C" __global__ void step(float* acc, const float* x, int n, float f)
{
    int i = threadIdx.x;
    acc[i] += f * x[i] + (float)n;
}
"""

# The scalar arguments of the two argument tuples, A (every node) and B (node 50 updated).
SCALARS_A = (1, 2.0)
SCALARS_B = (3, 0.5)


def _scalars(which: tuple) -> tuple:
    import numpy as np

    return np.int32(which[0]), np.float32(which[1])


def _expected(updated: bool) -> tuple[list[float], list[float]]:
    """acc_a and acc_b after one replay of the chain (x[i] = i), with node 50 on B or not."""
    (na, fa), (nb, fb) = SCALARS_A, SCALARS_B
    runs_a = NODES - 1 if updated else NODES
    acc_a = [runs_a * (fa * i + na) for i in range(THREADS)]
    acc_b = [fb * i + nb if updated else 0.0 for i in range(THREADS)]
    return acc_a, acc_b


# -- the driver, through cuda.bindings: memory set-up, read-back, the floor's graphs ----------







def _write(ptr: int, data: bytes) -> None:
    _ctx_sync()
    _check(_driver().cuMemcpyHtoD(ptr, data, len(data)), "cuMemcpyHtoD")
    _ctx_sync()


def _read_floats(ptr: int) -> list[float]:
    _ctx_sync()
    host = bytearray(NBYTES)
    _check(_driver().cuMemcpyDtoH(host, ptr, NBYTES), "cuMemcpyDtoH")
    return list(struct.unpack(f"<{THREADS}f", host))


def _prove(what: str, ptrs: list[int], launch_once, sync, updated: bool) -> None:
    """Zero both accumulators, launch the graph once, and compare what it left with what the
    chain must leave (node 50 on B when ``updated``)."""
    acc_a, acc_b = ptrs[0], ptrs[1]
    _write(acc_a, bytes(NBYTES))
    _write(acc_b, bytes(NBYTES))
    launch_once()
    sync()
    got = (_read_floats(acc_a), _read_floats(acc_b))
    want = _expected(updated)
    for name, g, w in zip(("acc_a", "acc_b"), got, want):
        if g != w:
            i = next(j for j in range(THREADS) if g[j] != w[j])
            raise RuntimeError(f"{what}: after one replay {name}[{i}] is {g[i]!r}, expected "
                               f"{w[i]!r} (node {UPDATED} {'updated to B' if updated else 'on A'})")




# -- cuda_core and cuda.core: one adapter, the same API shape ----------------------------------

_COMPILED: dict = {}


class _Core:
    """``cuda_core`` (ours) or NVIDIA's ``cuda.core``: Device(0) made current, a stream of its
    own, the kernel from Program(...).compile("cubin") (once per process and package), three
    Buffers (acc_a, acc_b, x with x[i] = i) and the argument tuples A and B."""

    def __init__(self, module: str):
        mod = self.mod = importlib.import_module(module)
        self.module = module
        self.GraphDefinition = importlib.import_module(module + ".graph").GraphDefinition
        self.dev = mod.Device(0)
        self.dev.set_current()
        self.cfg = mod.LaunchConfig(grid=1, block=THREADS)
        self.buffers: list = []
        self.closers: list = []
        self.s = self.dev.create_stream()
        try:
            obj = _COMPILED.get(module)
            if obj is None:
                options = mod.ProgramOptions(arch=f"sm_{self.dev.arch}")
                obj = mod.Program(SOURCE, "c++", options=options).compile("cubin")
                _COMPILED[module] = obj
            self.k = obj.get_kernel("step")
            self.buffers = [self.dev.allocate(NBYTES, stream=self.s) for _ in range(3)]
            self.s.sync()
            self.ptrs = [int(b.handle) for b in self.buffers]
            _write(self.ptrs[2], struct.pack(f"<{THREADS}f", *range(THREADS)))
            acc_a, acc_b, x = self.buffers
            self.A = (acc_a, x) + _scalars(SCALARS_A)
            self.B = (acc_b, x) + _scalars(SCALARS_B)
        except BaseException:
            _quietly(self.close)
            raise

    def chain(self):
        """A new definition of the chain of NODES nodes on A: ``(definition, nodes)``, the
        nodes in chain order. Built with the calls of the build case's statement."""
        d = self.GraphDefinition()
        n = d.launch(self.cfg, self.k, *self.A)
        nodes = [n]
        for _ in range(NODES - 1):
            n = n.launch(self.cfg, self.k, *self.A)
            nodes.append(n)
        if self.module == OURS:
            self.closers.append(d.close)
        return d, nodes

    def replay_once(self, g):
        return lambda: g.launch(self.s)

    # The launch cases' teardown, on the same fields (s, closers, buffers).
    close = _LaunchCore.close


def _instantiated(core: _Core, d):
    g = d.instantiate()
    core.closers.append(g.close)
    return g


BUILD_STMT = {
    OURS: """
d = GraphDefinition()
n = d.launch(cfg, k, a0, a1, a2, a3)
for _ in r99:
    n = n.launch(cfg, k, a0, a1, a2, a3)
d.close()
del n, d
""",
    NVIDIA: """
d = GraphDefinition()
n = d.launch(cfg, k, a0, a1, a2, a3)
for _ in r99:
    n = n.launch(cfg, k, a0, a1, a2, a3)
del n, d
""",
}
INSTANTIATE_STMT = "g = d.instantiate()\ng.close()"
EXEC_UPDATE_STMT = "g[n50].update(config=cfg, kernel=k, args=A)\nA, B = B, A"
DEF_UPDATE_STMT = "n50.update(args=A)\nA, B = B, A"
REPLAY_STMT = "g.launch(s)"


def _core_build_setup(module: str):
    core = _Core(module)
    try:
        d, _ = core.chain()
        g = _instantiated(core, d)
        _prove(f"{module}: a chain built by d.launch and n.launch", core.ptrs,
               core.replay_once(g), core.s.sync, False)
        names = {"GraphDefinition": core.GraphDefinition, "cfg": core.cfg, "k": core.k,
                 "r99": range(NODES - 1)}
        names.update({f"a{i}": a for i, a in enumerate(core.A)})
        return Prepared(names, cleanup=core.close)
    except BaseException:
        _quietly(core.close)
        raise


def _core_instantiate_setup(module: str):
    core = _Core(module)
    try:
        d, _ = core.chain()
        g = d.instantiate()
        try:
            _prove(f"{module}: d.instantiate()", core.ptrs, core.replay_once(g), core.s.sync,
                   False)
        finally:
            core.s.sync()
            g.close()
        return Prepared({"d": d}, cleanup=core.close)
    except BaseException:
        _quietly(core.close)
        raise


def _core_exec_update_setup(module: str):
    core = _Core(module)
    try:
        d, nodes = core.chain()
        n50 = nodes[UPDATED]
        g = d.instantiate()
        names = {"g": g, "n50": n50, "cfg": core.cfg, "k": core.k, "A": core.A, "B": core.B}
        core.closers.append(lambda: names["g"].close())  # the Graph of the last sample
        g[n50].update(config=core.cfg, kernel=core.k, args=core.B)
        _prove(f"{module}: g[node].update(config=, kernel=, args=B)", core.ptrs,
               core.replay_once(g), core.s.sync, True)

        def fresh_graph():
            # cuda.core's executable-node update costs more with every update its Graph has
            # had (it keeps each argument set; about 3 ns more per update on the H100), so
            # over a run its time grows without bound. Each sample starts on a fresh Graph
            # (made here, outside the timing), for both, so a sample measures updates of a
            # Graph that has had at most that sample's.
            old, names["g"] = names["g"], d.instantiate()
            old.close()

        return Prepared(names, cleanup=core.close, after_sample=fresh_graph)
    except BaseException:
        _quietly(core.close)
        raise


def _core_def_update_setup(module: str):
    core = _Core(module)
    try:
        d, nodes = core.chain()
        n50 = nodes[UPDATED]
        n50.update(args=core.B)
        g = d.instantiate()
        try:
            _prove(f"{module}: KernelNode.update(args=B), then instantiate()", core.ptrs,
                   core.replay_once(g), core.s.sync, True)
        finally:
            core.s.sync()
            g.close()
        return Prepared({"n50": n50, "A": core.A, "B": core.B}, cleanup=core.close)
    except BaseException:
        _quietly(core.close)
        raise


def _core_replay_setup(module: str):
    core = _Core(module)
    try:
        d, _ = core.chain()
        g = _instantiated(core, d)
        g.upload(core.s)
        _prove(f"{module}: g.launch(s)", core.ptrs, core.replay_once(g), core.s.sync, False)
        return Prepared({"g": g, "s": core.s}, cleanup=core.close, after_sample=core.s.sync)
    except BaseException:
        _quietly(core.close)
        raise


# -- the C floor ---------------------------------------------------------------------------



class _Floor:
    """The floor's inputs, from our adapter: the kernel's CUkernel, the current context and the
    argument bytes of A and B as our param holder packs them (what our nodes give the driver);
    graphs built by ``graph_build_chain`` and instantiated through cuda.bindings."""

    def __init__(self):
        self.bf = _bench_floor_module()
        from cuda_core._kernel_args import _packed_arguments

        self.core = _Core(OURS)
        self.graphs: list[int] = []
        self.execs: list = []
        try:
            self.kernel = int(self.core.k.handle)
            self.ctx = int(_check(_driver().cuCtxGetCurrent(), "cuCtxGetCurrent"))
            self.A = _packed_arguments(*self.core.A)
            self.B = _packed_arguments(*self.core.B)
            self.st = int(self.core.s.handle)
        except BaseException:
            _quietly(self.core.close)
            raise

    def chain(self) -> tuple[int, list[int]]:
        graph, nodes = self.bf.graph_build_chain(self.kernel, self.ctx, GRID, BLOCK, self.A,
                                                 NODES)
        self.graphs.append(graph)
        if len(nodes) != NODES:
            raise RuntimeError(f"graph_build_chain gave {len(nodes)} nodes, not {NODES}")
        return graph, nodes

    def instantiate(self, graph: int) -> int:
        d = _driver()
        gexec = _check(d.cuGraphInstantiate(d.CUgraph(graph), 0), "cuGraphInstantiate")
        self.execs.append(gexec)
        return int(gexec)

    def replay_once(self, gexec: int):
        return lambda: self.bf.graph_launch_loop(gexec, self.st, 1)

    def sync(self) -> None:
        self.core.s.sync()

    def close(self) -> None:
        d = _driver()
        try:
            self.core.s.sync()
            for e in self.execs:
                _check(d.cuGraphExecDestroy(e), "cuGraphExecDestroy")
            for g in self.graphs:
                _check(d.cuGraphDestroy(d.CUgraph(g)), "cuGraphDestroy")
        finally:
            self.execs, self.graphs = [], []
            self.core.close()


def _floor_setup(body):
    """A floor contender: ``body(floor)`` proves its path and returns ``run(n) -> ns`` (or a
    Prepared of it, without cleanup); the floor's graphs and our adapter are closed after."""
    def setup():
        f = _Floor()
        try:
            made = body(f)
            if isinstance(made, Prepared):
                return Prepared(made.value, cleanup=f.close, after_sample=made.after_sample)
            return Prepared(made, cleanup=f.close)
        except BaseException:
            _quietly(f.close)
            raise
    return setup


def _floor_build(f: _Floor):
    graph, _ = f.chain()
    _prove("C floor: graph_build_chain", f.core.ptrs, f.replay_once(f.instantiate(graph)),
           f.sync, False)
    bf, kernel, ctx, args = f.bf, f.kernel, f.ctx, f.A
    return lambda n: bf.graph_build_loop(kernel, ctx, GRID, BLOCK, args, NODES, n)


def _floor_instantiate(f: _Floor):
    graph, _ = f.chain()
    bf = f.bf
    bf.graph_instantiate_loop(graph, 1)  # the loop's own path, checked by its result code
    _prove("C floor: the chain instantiated", f.core.ptrs, f.replay_once(f.instantiate(graph)),
           f.sync, False)
    return lambda n: bf.graph_instantiate_loop(graph, n)


def _floor_exec_update(f: _Floor):
    graph, nodes = f.chain()
    gexec, node = f.instantiate(graph), nodes[UPDATED]
    bf, kernel, ctx, A, B = f.bf, f.kernel, f.ctx, f.A, f.B
    bf.exec_kernel_node_set_loop(gexec, node, kernel, ctx, GRID, BLOCK, B, A, 1)  # sets B
    _prove("C floor: exec_kernel_node_set_loop to B", f.core.ptrs, f.replay_once(gexec), f.sync,
           True)
    return lambda n: bf.exec_kernel_node_set_loop(gexec, node, kernel, ctx, GRID, BLOCK, A, B, n)


def _floor_def_update(f: _Floor):
    graph, nodes = f.chain()
    node = nodes[UPDATED]
    bf, kernel, ctx, A, B = f.bf, f.kernel, f.ctx, f.A, f.B
    bf.kernel_node_set_loop(node, kernel, ctx, GRID, BLOCK, B, A, 1)  # sets B
    _prove("C floor: kernel_node_set_loop to B, then instantiated", f.core.ptrs,
           f.replay_once(f.instantiate(graph)), f.sync, True)
    return lambda n: bf.kernel_node_set_loop(node, kernel, ctx, GRID, BLOCK, A, B, n)


def _floor_replay(f: _Floor):
    graph, _ = f.chain()
    gexec = f.instantiate(graph)
    d = _driver()
    _check(d.cuGraphUpload(d.CUgraphExec(gexec), d.CUstream(f.st)), "cuGraphUpload")
    _prove("C floor: graph_launch_loop", f.core.ptrs, f.replay_once(gexec), f.sync, False)
    bf, st = f.bf, f.st
    return Prepared(lambda n: bf.graph_launch_loop(gexec, st, n), after_sample=f.sync)


def _python_floor_replay_setup():
    """The replay's Python floor: ``g.launch(s)`` where ``g.launch`` is
    ``_bench_floor.graph_python_floor``, a built-in that only releases the GIL around
    cuGraphLaunch (an attribute of a plain object, looked up as our method is)."""
    def replay(f: _Floor):
        graph, _ = f.chain()
        gexec = f.instantiate(graph)
        d = _driver()
        _check(d.cuGraphUpload(d.CUgraphExec(gexec), d.CUstream(f.st)), "cuGraphUpload")
        g = types.SimpleNamespace(launch=f.bf.graph_python_floor(gexec, f.st))
        _prove("Python floor: graph_python_floor", f.core.ptrs, lambda: g.launch(f.core.s),
               f.sync, False)
        return Prepared({"g": g, "s": f.core.s}, after_sample=f.sync)
    return _floor_setup(replay)


# -- cases -----------------------------------------------------------------------------------

C_BUILD = f"#1 build ({NODES}-node chain)"
C_INSTANTIATE = f"#2 instantiate + close ({NODES} nodes)"
C_EXEC_UPDATE = "#3 Graph[node].update"
C_DEF_UPDATE = "#4 KernelNode.update(args=)"
C_REPLAY = f"#5 replay ({NODES} nodes)"
NVIDIA_CASES = (C_BUILD, C_EXEC_UPDATE, C_DEF_UPDATE)
FLOOR_CASES = (C_REPLAY,)


def _contenders(core_setup, stmt, floor_body) -> list[Contender]:
    stmts = stmt if isinstance(stmt, dict) else {OURS: stmt, NVIDIA: stmt}
    return [
        Contender(OURS, setup=lambda: core_setup(OURS), stmt=stmts[OURS]),
        Contender(NVIDIA, setup=lambda: core_setup(NVIDIA), stmt=stmts[NVIDIA],
                  requires=("cuda.core",)),
        Contender(FLOOR, setup=_floor_setup(floor_body), self_timed=True),
    ]


def make_cases(batch: int) -> list[Case]:
    return [
        Case(C_BUILD, _contenders(_core_build_setup, BUILD_STMT, _floor_build),
             note=f"GraphDefinition(), d.launch(cfg, k, *A), {NODES - 1} x n.launch(cfg, k, *A), "
                  f"then dropped (ours: d.close(); both: del n, d); floor: cuGraphCreate, "
                  f"{NODES} x cuGraphAddKernelNode (parameters prepared once), cuGraphDestroy"),
        Case(C_INSTANTIATE, _contenders(_core_instantiate_setup, INSTANTIATE_STMT,
                                        _floor_instantiate),
             note="g = d.instantiate(); g.close(); floor: cuGraphInstantiateWithParams (no "
                  "flags) + cuGraphExecDestroy; reported, no target"),
        Case(C_EXEC_UPDATE, _contenders(_core_exec_update_setup, EXEC_UPDATE_STMT,
                                        _floor_exec_update),
             note=f"g[n50].update(config=cfg, kernel=k, args=A), A and B in turn (A, B = B, A "
                  f"in the statement), on node {UPDATED} of the instantiated chain, a fresh "
                  f"Graph for each sample; floor: cuGraphExecKernelNodeSetParams, A and B "
                  f"prepared once"),
        Case(C_DEF_UPDATE, _contenders(_core_def_update_setup, DEF_UPDATE_STMT,
                                       _floor_def_update),
             note=f"n50.update(args=A), A and B in turn, on node {UPDATED} of the definition; "
                  f"floor: cuGraphKernelNodeSetParams, A and B prepared once"),
        Case(C_REPLAY, _contenders(_core_replay_setup, REPLAY_STMT, _floor_replay)
             + [Contender(PY_FLOOR, setup=_python_floor_replay_setup(), stmt=REPLAY_STMT)],
             note=f"g.launch(s) of the uploaded {NODES}-node graph, at most {batch} launches "
                  f"per sample, the stream synchronized after each sample outside the timing; "
                  f"floor: cuGraphLaunch in a C loop; Python floor: the same g.launch(s) "
                  f"where g.launch is a built-in that only releases the GIL around "
                  f"cuGraphLaunch", max_inner=batch),
    ]


# -- main ------------------------------------------------------------------------------------

def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="graph_explicit.py",
        description=f"Host-side cost of explicit graphs ({NODES}-node chains of one 4-argument "
                    f"kernel): build, instantiate, update an executable graph's node, update a "
                    f"definition's node, replay; cuda_core (ours) against NVIDIA's cuda.core "
                    f"and a C loop of the same driver calls. Targets: ours <= "
                    f"{NVIDIA_RATIO:g}x cuda.core in build and both updates, <= "
                    f"{REPLAY_RATIO:g}x the C floor in replay. Needs a GPU; exits 0 once the "
                    f"report is printed.")
    add_arguments(parser)
    parser.add_argument("--batch", type=_positive, default=16, metavar="N",
                        help="replay: at most N graph launches per sample, --inner included; "
                             "the stream is synchronized after each sample, outside the "
                             "timing, so the GPU's queue never fills (default: %(default)s)")
    args = parser.parse_args(argv)

    # Fails here, with the driver's reason, where there is no GPU or no driver.
    meta = device_meta("graph_explicit.py",
                       ("cuda-core-cy", "cuda-core", "cuda-bindings", "numpy"))
    if meta is None:
        return 1
    meta["graph"] = (f"a chain of {NODES} kernel nodes, step(acc, x, int32, float32), grid 1, "
                     f"block {THREADS}")

    targets = [Target(OURS, NVIDIA, NVIDIA_RATIO, cases=NVIDIA_CASES),
               Target(OURS, FLOOR, REPLAY_RATIO, cases=FLOOR_CASES)]
    report = run_cases(make_cases(args.batch), args,
                       title="cuda_core explicit graphs (time per call)",
                       subject=OURS, baseline=NVIDIA, floor=FLOOR,
                       target="explicit graphs at half cuda.core's cost, replayed at the "
                              "driver's",
                       meta=meta, targets=targets, floor_ratio=True)
    return finish(report, args)


if __name__ == "__main__":
    run_script(main, "graph_explicit.py")
