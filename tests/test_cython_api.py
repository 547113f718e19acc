"""The C API a library building on cuda_core uses: the ``.pxd`` files the wheel ships.

tests/helpers/downstream.pyx is such a library: it cimports cuda_core's checks, lifecycle,
context guard, streams and events, and is built at test time against the INSTALLED package
(Cython + the C++ compiler; the CUDA headers from the nvidia-cuda-runtime and
nvidia-cuda-profiler-api wheels), once per session. It is imported and called in a subprocess,
where a crash or a layout mismatch (Cython checks each cimported type's size at import) fails
the test. The CPU part runs everywhere; the GPU part reads real streams and events through
their C fields.
"""

import os
import re

import pytest

from helpers.cython_build import build_module, installed_root, run_downstream

# What downstream.pyx cimports: these must be shipped.
_USED = ("_checks", "_context", "_errors", "_event", "_resource", "_stream")

_CIMPORT = re.compile(r"^\s*(?:from\s+(cuda_core(?:\.\w+)+)\s+cimport|cimport\s+(cuda_core(?:\.\w+)+))",
                      re.MULTILINE)
_EXTERN = re.compile(r'^\s*cdef\s+extern\s+from\s+"([^"]+)"', re.MULTILINE)


def _installed_pxds():
    """{dotted module name: path} of every .pxd in the installed package."""
    root = installed_root()
    found = {}
    for dirpath, _, files in os.walk(os.path.join(root, "cuda_core")):
        for name in files:
            if name.endswith(".pxd"):
                path = os.path.join(dirpath, name)
                found[os.path.relpath(path, root)[:-4].replace(os.sep, ".")] = path
    return found


def test_the_wheel_ships_the_pxd_files_and_what_they_cimport():
    pxds = _installed_pxds()
    for name in _USED:
        assert f"cuda_core.{name}" in pxds, f"cuda_core/{name}.pxd is not installed"
    for name, path in pxds.items():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in _CIMPORT.finditer(text):
            target = m.group(1) or m.group(2)
            assert target in pxds, f"{name}.pxd cimports {target}, whose .pxd is not installed"
        for header in _EXTERN.findall(text):
            if header in ("Python.h", "cuda.h") or header.startswith("<"):
                continue
            # A header of the package's own: it must be installed beside the .pxd.
            assert os.path.isfile(os.path.join(os.path.dirname(path), header)), (
                f"{name}.pxd includes {header}, which is not installed")


@pytest.fixture(scope="module")
def all_pxds(tmp_path_factory):
    """A module that cimports every installed .pxd, built with no extra include path."""
    names = sorted(_installed_pxds())
    source = "".join(f"cimport {n}\n" for n in names) + "\nNAMES = " + repr(names) + "\n"
    return build_module(tmp_path_factory.mktemp("all_pxds"), "all_pxds", source)


def test_every_shipped_pxd_can_be_cimported(all_pxds):
    # Cython checks, at import, that each cimported extension type has the size the .pxd
    # declares: a .pxd out of step with its compiled module fails here.
    names = run_downstream(all_pxds, "result = all_pxds.NAMES", module="all_pxds")
    assert "cuda_core._resource" in names and len(names) >= 10


@pytest.mark.compiler
def test_kernel_args_pxd_needs_no_include_path(tmp_path):
    # Its slot struct is declared verbatim in the .pxd, so no header of ours is looked up.
    build_module(tmp_path, "kernel_args_user", "from cuda_core._kernel_args cimport ParamHolder\n"
                 "OK = sizeof(ParamHolder) >= 32 * 16\n")
    assert run_downstream(tmp_path, "result = kernel_args_user.OK", module="kernel_args_user")


@pytest.mark.compiler
def test_the_graph_hooks_register_once(tmp_path):
    # graph[node] (_exec_nodes) and the node classes (_node_types) are registered as
    # cuda_core.graph is imported; another registration is refused, never silently replaces them.
    build_module(tmp_path, "graph_hooks", (
        "from cuda_core.graph._graph cimport Graph, register_view_factory\n"
        "from cuda_core.graph._node_base cimport register_node_classes\n"
        "cdef object _view(Graph graph, object node):\n"
        "    return None\n"
        "def view_factory_again():\n"
        "    register_view_factory(_view)\n"
        "def node_classes_again():\n"
        "    register_node_classes({})\n"))
    result = run_downstream(tmp_path, """
        import cuda_core.graph
        outcomes = []
        for call in (graph_hooks.view_factory_again, graph_hooks.node_classes_again):
            try:
                call()
                outcomes.append(None)
            except RuntimeError as e:
                outcomes.append(str(e))
        result = outcomes
    """, module="graph_hooks")
    assert result == ["register_view_factory(): Graph[node] is already registered",
                      "register_node_classes(): the graph node classes are already registered"]


def test_cpu_calls_through_the_c_api(downstream):
    result = run_downstream(downstream, """
        import cuda_core
        from cuda_core import LEGACY_DEFAULT_STREAM as legacy, PER_THREAD_DEFAULT_STREAM as per_thread

        h = downstream.Handle(0xABC)
        value = h.value()
        downstream.check_open(h)
        h.close()
        try:
            downstream.check_open(h)
            closed = None
        except RuntimeError as e:
            closed = str(e)
        try:
            downstream.closed_error(legacy)
            raised = None
        except RuntimeError as e:
            raised = str(e)
        result = {
            "size": downstream.size(4096, "n"),
            "value": value,
            "closed": closed,
            "raise_closed": raised,
            "released": downstream.released,
            "streams_are_resources": [downstream.is_resource(legacy),
                                      downstream.is_resource(per_thread)],
            # The default streams' handles through the C field, and the .pxd's inline helper.
            "handles": [downstream.stream_handle(legacy), downstream.stream_handle(per_thread)],
            "python_handles": [int(legacy.handle), int(per_thread.handle)],
            "default": [downstream.stream_is_default(legacy),
                        downstream.stream_is_default(per_thread)],
        }
    """)
    assert result == {
        "size": 4096,
        "value": 0xABC,
        "closed": "this Handle is closed",
        "raise_closed": "this Stream is closed",
        "released": [0xABC],
        "streams_are_resources": [True, True],
        "handles": [1, 2],  # CU_STREAM_LEGACY, CU_STREAM_PER_THREAD
        "python_handles": [1, 2],
        "default": [True, True],
    }


def test_a_wrong_type_is_refused_at_the_c_boundary(downstream):
    result = run_downstream(downstream, """
        outcomes = []
        for call in (lambda: downstream.stream_handle(object()),
                     lambda: downstream.event_handle(downstream.Handle(1)),
                     lambda: downstream.check_open(None)):
            try:
                call()
                outcomes.append(None)
            except TypeError as e:
                outcomes.append(str(e))
        result = outcomes
    """)
    assert re.fullmatch(r"Argument 's' has incorrect type \(expected .*Stream, got object\)",
                        result[0]), result
    assert re.fullmatch(r"Argument 'e' has incorrect type \(expected .*Event, got .*Handle\)",
                        result[1]), result
    assert re.fullmatch(r"Argument 'obj' has incorrect type \(expected .*Resource, got NoneType\)",
                        result[2]), result


@pytest.mark.gpu
def test_streams_and_events_through_their_c_fields(downstream):
    result = run_downstream(downstream, """
        import threading
        from cuda.bindings import driver
        from cuda_core import Device

        dev = Device(0)
        dev.set_current()
        s = dev.create_stream()
        e = dev.create_event()
        s.record(e)
        ctx = int(s.context.handle)
        out = {"handles": [downstream.stream_handle(s) == int(s.handle),
                           downstream.event_handle(e) == int(e.handle)],
               "default": downstream.stream_is_default(s)}

        def current():
            err, c = driver.cuCtxGetCurrent()
            assert err == driver.CUresult.CUDA_SUCCESS, err
            return int(c)

        def on_a_thread_without_a_context():
            out["before"] = current()
            # The guard pushes the stream's context for the call and pops it on return.
            out["inside"] = downstream.stream_sync_in_its_context(s)
            out["after"] = current()
            # exit_context pops it early, within the function.
            out["event"] = list(downstream.query_event_after_exit(e))
            out["after_event"] = current()

        t = threading.Thread(target=on_a_thread_without_a_context)
        t.start()
        t.join()
        # On a thread where it is already current, the guard leaves it current.
        out["same"] = [downstream.stream_sync_in_its_context(s), current()]

        s.close()
        e.close()
        closed = []
        for call in (lambda: downstream.stream_handle(s), lambda: downstream.event_handle(e),
                     lambda: downstream.stream_sync_in_its_context(s)):
            try:
                call()
                closed.append(None)
            except RuntimeError as err:
                closed.append(str(err))
        out["closed"] = closed
        out["ctx"] = ctx
        result = out
    """)
    ctx = result.pop("ctx")
    assert ctx != 0
    assert result == {
        "handles": [True, True],
        "default": False,
        "before": 0,
        "inside": ctx,
        "after": 0,
        "event": [ctx, 0],
        "after_event": 0,
        "same": [ctx, ctx],
        "closed": ["this Stream is closed", "this Event is closed", "this Stream is closed"],
    }
