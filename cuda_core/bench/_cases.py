"""The launch cases: names, contenders, and :func:`make_cases`, which ``python -m
cuda_core.bench`` runs a selection of and ``benchmarks/launch_latency.py`` runs all of."""

from __future__ import annotations

from cuda_core.bench._harness import Case, Contender
from cuda_core.bench._launch import (BUF4, CFG4, CUPY, EMPTY, FLOOR, FLOOR_USER_OBJECT, INT4,
                                     MIX16, NUMBA7, NVIDIA, OURS, PY_FLOOR, RAW, RAW_TUPLE,
                                     STREAM_KINDS, STRUCT, WRAPPED, Variant, _core_graph_setup,
                                     _core_setup, _core_stmt, _floor_setup,
                                     _python_floor_setup)
from cuda_core.bench._peers import (RAW_STMT, _cupy_graph_setup, _cupy_setup, _cupy_stmt,
                                    _floor_graph_setup, _raw_graph_setup, _raw_setup)

# -- cases -----------------------------------------------------------------------------------

C_EMPTY = "#1 0 args"
C_BUF4 = "#2 4 args (3 Buffers + uint64)"
C_INT4 = "#3 4 args (3 ints + uint64)"
C_MIX16 = "#4 16 args (8 Buffers + 8 float32)"
C_CFG4 = "#5 4 args + new LaunchConfig"
C_GRAPH = "#6 graph replay (1 node)"
C_STRUCT = "#15 struct by value (pointer + 16-byte struct)"
C_WRAPPED = {
    "from_handle": "#7 case 2 on Stream.from_handle(created)",
    "foreign": "#8 case 2 on create_stream(__cuda_stream__ obj)",
    "legacy": "#9 case 2 on Stream.from_handle(0)",
    "legacy_constant": "#10 case 2 on LEGACY_DEFAULT_STREAM",
    "per_thread": "#11 case 2 on PER_THREAD_DEFAULT_STREAM",
    "device_default": "#12 case 2 on Device.default_stream",
    "direct": "#13 case 2 on a __cuda_stream__ obj itself",
}
C_NUMBA7 = "#14 7 ints on Stream.from_handle(0)"
WRAPPED_CASES = tuple(C_WRAPPED.values()) + (C_NUMBA7,)
# A __cuda_stream__ object passed to launch() itself must be asked for its stream at every
# launch, which no C loop does: that case is held to the Python floor that asks it.
ASKING_CASES = (C_WRAPPED["direct"],)
FLOOR_CASES = tuple(c for c in (C_EMPTY, C_BUF4, C_INT4, C_MIX16, C_CFG4) + WRAPPED_CASES
                    if c not in ASKING_CASES)


def _wrapped_contenders(v: Variant) -> list[Contender]:
    """ours, cuda.core and the floors, each on its own stream of kind ``v.stream`` (for a
    __cuda_stream__ object passed to launch() itself, the Python floor asks it too)."""
    return [
        Contender(OURS, setup=lambda: _core_setup(OURS, v), stmt=_core_stmt(v)),
        Contender(NVIDIA, setup=lambda: _core_setup(NVIDIA, v), stmt=_core_stmt(v),
                  requires=("cuda.core",)),
        Contender(PY_FLOOR, setup=lambda: _python_floor_setup(v), stmt=_core_stmt(v)),
        Contender(FLOOR, setup=lambda: _floor_setup(v), self_timed=True),
    ]


# What ``python -m cuda_core.bench`` runs: the everyday launches, against ours' C floor, the
# bare cuda.bindings call, NVIDIA's cuda.core and CuPy (those two where installed).
CLI_CASES = (C_EMPTY, C_BUF4, C_INT4, C_STRUCT, C_MIX16, C_GRAPH)


def _launch_contenders(v: Variant, *, peers: bool = True, extras: bool = True) -> list[Contender]:
    """ours, cuda.core, (CuPy, raw bindings,) and the C floor for variant v; ``extras`` adds
    the bindings' tuple form and the Python floor."""
    out = [
        Contender(OURS, setup=lambda: _core_setup(OURS, v), stmt=_core_stmt(v)),
        Contender(NVIDIA, setup=lambda: _core_setup(NVIDIA, v), stmt=_core_stmt(v),
                  requires=("cuda.core",)),
    ]
    if peers:
        out.append(Contender(CUPY, setup=lambda: _cupy_setup(v), stmt=_cupy_stmt(v),
                             requires=("cupy",)))
        out.append(Contender(RAW, setup=lambda: _raw_setup(v, "packed"), stmt=RAW_STMT,
                             requires=("cuda.bindings",)))
        if v.nargs and extras and v.kernel != "struct_arg":
            out.append(Contender(RAW_TUPLE, setup=lambda: _raw_setup(v, "tuple"),
                                 stmt=RAW_STMT, requires=("cuda.bindings",)))
    if extras and not v.new_config:  # case 5's floors are case 2's
        out.append(Contender(PY_FLOOR, setup=lambda: _python_floor_setup(v), stmt=_core_stmt(v)))
    out.append(Contender(FLOOR, setup=lambda: _floor_setup(v), self_timed=True))
    return out


def make_cases(max_launches: int, names=None, extras: bool = True) -> list[Case]:
    """The launch cases (those named in ``names``, in their order; all by default), at most
    ``max_launches`` launches per sample; ``extras``: the contenders only the project's
    benchmark shows (the bindings' tuple form, the Python floor)."""
    def case(name, contenders, note):
        return Case(name, contenders, note=note, max_inner=max_launches)

    launches = (  # (name, variant, note) of the plain launch cases
        (C_EMPTY, EMPTY,
         "empty(); it writes nothing, so each contender first proves its launch path "
         "with four_args (read back), then launches empty() once"),
        (C_BUF4, BUF4,
         "four_args(x, y, out, n) with n = np.uint64(0): it returns at once; CuPy passes "
         "its arrays, the raw rows CUdeviceptr values as c_void_p"),
        (C_INT4, INT4,
         "the same with the buffers' addresses as Python ints (the raw rows are case 2's)"),
        (C_STRUCT, STRUCT,
         "struct_arg(out, Pair p): a 16-byte struct by value (ours: a NumPy structured "
         "scalar; the raw row: a ctypes Structure), p.n = 0 returns at once"),
        (C_MIX16, MIX16,
         "sixteen_args(7 const float*, float* out, 8 float) with np.float32 values, the "
         "last 0: it returns at once"),
        (C_CFG4, CFG4,
         "case 2 with LaunchConfig(grid=1, block=1) built inside the timed statement; "
         "the floor is case 2's (no config object in C)"),
    )
    every = [
        # Case 5 times a config object, which CuPy and the raw bindings do not have.
        case(name, _launch_contenders(v, peers=v is not CFG4, extras=extras), note)
        for name, v, note in launches
    ] + [
        case(C_GRAPH, [
            Contender(OURS, setup=lambda: _core_graph_setup(OURS), stmt="g.launch(s)"),
            Contender(NVIDIA, setup=lambda: _core_graph_setup(NVIDIA), stmt="g.launch(s)",
                      requires=("cuda.core",)),
            Contender(CUPY, setup=_cupy_graph_setup, stmt="g.launch(st)", requires=("cupy",)),
            Contender(RAW, setup=_raw_graph_setup, stmt="cuGraphLaunch(gexec, st)",
                      requires=("cuda.bindings",)),
            Contender(FLOOR, setup=_floor_graph_setup, self_timed=True),
            Contender(FLOOR_USER_OBJECT, setup=lambda: _floor_graph_setup(user_object=True),
                      self_timed=True),
        ], "an uploaded executable graph of one four_args launch (writing 32 bytes), "
           "captured by each library from its own stream; raw and C: cuStreamBeginCapture + "
           "cuLaunchKernel, replayed with cuGraphLaunch; 'C floor, user object': the C floor's "
           "graph retaining one CUDA user object, as cuda_core's graphs do"),
    ] + [
        case(C_WRAPPED[kind], _wrapped_contenders(WRAPPED[kind]),
             f"case 2 on {STREAM_KINDS[kind]}, made by each library with its own API; the C "
             f"floor launches on the same handle, so it includes what the driver charges for "
             f"that kind of stream")
        for kind in STREAM_KINDS
    ] + [
        case(C_NUMBA7, _wrapped_contenders(NUMBA7),
             "seven_args(out, a1..a6): 7 Python ints (a pointer and six unsigned long long), "
             "on Stream.from_handle(0), as numba-cuda launches on cuda.core"),
    ]
    if names is None:
        return every
    by_name = {c.name: c for c in every}
    return [by_name[n] for n in names]
