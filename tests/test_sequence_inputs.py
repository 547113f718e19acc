"""Sequences given by the user, at every public entry that indexes or unpacks one.

Each entry gets the same questions: ``()``, a 1-tuple, a tuple that is too long, a
non-sequence (``object()``, ``3.5``), a generator and, where they make sense, a list, a string
and items of the wrong type. Every answer is either the documented result or an exception of
the exact class expected, whose message names the parameter.

The cases of one entry run together in one child process, so that a crash fails the test, with
the child's stderr, instead of killing pytest. While the extension modules were compiled
without bounds checks, ``Buffer.__dlpack__(max_version=())`` (or ``dl_device=()``, or
``dl_device=(1,)``) read the tuple past its end and died of a segmentation fault, and so did a
``__cuda_array_interface__`` whose ``data`` was ``()`` (any ``launch``) and
``__setstate_cython__(())`` of the classes Cython pickles. Bounds checks or not, a tuple
subclass whose length changed under ``LaunchConfig`` made it write past a 3-entry C array.
"""

import json
import os
import signal
import textwrap

import pytest

from helpers import run_python

_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))

# The child: runs the setup, then each case (a statement) in order, printing a JSON line when a
# case starts and one with its outcome, so that a crash names the case that was running (a
# start of None: all cases are done).
_CHILD = """\
import json
import sys
sys.path.insert(0, {tests_dir!r})

{setup}

for _name, _code in {cases!r}:
    print(json.dumps({{"start": _name}}), flush=True)
    try:
        exec(_code, globals())
    except BaseException as _exc:
        _out = {{"case": _name, "raised": type(_exc).__name__, "message": str(_exc),
                 "classes": [c.__name__ for c in type(_exc).__mro__]}}
    else:
        _out = {{"case": _name, "raised": None, "message": ""}}
    print(json.dumps(_out), flush=True)
print(json.dumps({{"start": None}}), flush=True)
"""


def raises(exc, *parts):
    """The expectation that a case raises ``exc`` (or a subclass, such as an error that is
    also cuda.core's class) with each of ``parts`` in its message."""
    return (exc.__name__, parts)


OK = None  # the expectation that a case returns normally


def run_cases(setup, cases):
    """Run ``cases``, ``(name, statement, expectation)`` triples, after ``setup`` in one child
    process; fail if the child dies or any case's outcome differs from its expectation."""
    names = [name for name, _, _ in cases]
    assert len(set(names)) == len(names), "case names must be unique"
    code = _CHILD.format(tests_dir=_TESTS_DIR, setup=textwrap.dedent(setup),
                         cases=[(name, stmt) for name, stmt, _ in cases])
    proc = run_python(code, timeout=300)
    started, results = False, {}  # False: no case started yet
    for line in proc.stdout.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if "start" in record:
            started = record["start"]
        else:
            results[record["case"]] = record
    if proc.returncode != 0:
        how = (f"signal {signal.Signals(-proc.returncode).name}" if proc.returncode < 0
               else f"exit status {proc.returncode}")
        where = {False: "during the setup", None: "after its last case, at exit"}.get(
            started, f"in case {started!r}")
        pytest.fail(f"the child process died ({how}) {where}; stderr:\n{proc.stderr[-4000:]}")
    failures = []
    for name, stmt, expected in cases:
        got = results.get(name)
        if got is None:
            failures.append(f"{name}: no result (`{stmt}`)")
        elif expected is None:
            if got["raised"] is not None:
                failures.append(f"{name}: `{stmt}` raised {got['raised']}: {got['message']}")
        else:
            exc, parts = expected
            if exc not in got.get("classes", ()):
                failures.append(f"{name}: `{stmt}` gave {got['raised'] or 'no exception'} "
                                f"({got['message']!r}), expected {exc}")
            else:
                missing = [p for p in parts if p not in got["message"]]
                if missing:
                    failures.append(f"{name}: the message {got['message']!r} lacks {missing}")
    assert not failures, "\n".join(failures)


def matrix(template, rows):
    """Cases from ``template`` (a statement with ``{v}`` where the value goes) and ``rows``:
    ``(label, value source, expectation)``."""
    return [(f"{template} <- {label}", template.format(v=value), expected)
            for label, value, expected in rows]


# -- Buffer.__dlpack__ (CPU: a buffer of host memory from a Python memory resource) --------------

_DLPACK_SETUP = """
import enum
import numpy as np
from helpers.memory import NumpyMemoryResource

buf = NumpyMemoryResource().allocate(8)  # plain host memory: (kDLCPU, 0)
unreachable = NumpyMemoryResource(host_accessible=False).allocate(8)

class DLDeviceType(enum.IntEnum):
    kDLCPU = 1
    kDLCUDA = 2

class Shifty(tuple):  # a tuple whose __len__ says 2, whatever it holds
    def __len__(self):
        return 2
"""


def _pair_rows(param, pair):
    """The malformed values of a ``(a, b)`` pair of ints; each error names ``param``."""
    name = f"Buffer.__dlpack__(): {param} must be a {pair} pair of ints"
    return [
        ("empty", "()", raises(ValueError, name, "got 0 items")),
        ("1-tuple", "(1,)", raises(ValueError, name, "got 1 item:")),
        ("3-tuple", "(1, 0, 0)", raises(ValueError, name, "got 3 items")),
        ("object", "object()", raises(TypeError, name, "or None, not object")),
        ("float", "3.5", raises(TypeError, name, "not float")),
        ("int", "1", raises(TypeError, name, "not int")),
        ("generator", "(x for x in (1, 0))", raises(TypeError, name, "not generator")),
        ("list", "[1, 0]", raises(TypeError, name, "not list")),
        ("str", "'10'", raises(TypeError, name, "not str")),
        ("str items", "('1', '0')", raises(TypeError, name, "got str in")),
        ("float item", "(1, 0.0)", raises(TypeError, name, "got float in")),
        ("bool item", "(True, 0)", raises(TypeError, name, "got bool in")),
        ("None item", "(None, 0)", raises(TypeError, name, "got NoneType in")),
        ("tuple subclass holding 0", "Shifty()", raises(ValueError, name, "got 0 items")),
        ("tuple subclass holding 3", "Shifty((1, 0, 0))", raises(ValueError, name, "3 items")),
    ]


def test_dlpack_max_version():
    cases = matrix("buf.__dlpack__(max_version={v})",
                   _pair_rows("max_version", "(major, minor)") + [
                       ("(1, 0)", "(1, 0)", OK),
                       ("(0, 8)", "(0, 8)", OK),
                       ("NumPy ints", "(np.uint32(1), np.int64(3))", OK),
                       ("tuple subclass", "Shifty((1, 2))", OK),
                       ("negative", "(-1, 0)", raises(ValueError, "max_version must be a "
                                                      "(major, minor) pair of non-negative")),
                   ])
    # The arguments are checked before the buffer's memory is classified.
    cases.append(("checked first", "unreachable.__dlpack__(max_version=())",
                  raises(ValueError, "max_version", "got 0 items")))
    cases.append(("versioned capsule", "assert 'versioned' in repr(buf.__dlpack__("
                  "max_version=(1, 0)))", OK))
    run_cases(_DLPACK_SETUP, cases)


def test_dlpack_dl_device():
    cases = matrix("buf.__dlpack__(dl_device={v})",
                   _pair_rows("dl_device", "(device_type, device_id)") + [
                       ("(kDLCPU, 0)", "(1, 0)", OK),
                       ("IntEnum device type", "(DLDeviceType.kDLCPU, 0)", OK),
                       ("NumPy ints", "(np.int32(1), np.int64(0))", OK),
                       ("another device", "(DLDeviceType.kDLCUDA, 0)",
                        raises(BufferError, "dl_device=(2, 0) differs from the buffer's "
                                            "device (1, 0)")),
                   ])
    cases.append(("checked first", "unreachable.__dlpack__(dl_device=(1,))",
                  raises(ValueError, "dl_device", "got 1 item")))
    run_cases(_DLPACK_SETUP, cases)


# -- LaunchConfig: grid, block, cluster (CPU) ---------------------------------------------------

_LAUNCH_CONFIG_SETUP = """
import numpy as np
from cuda_core import LaunchConfig

class Sub(LaunchConfig):  # a subclass is built through __init__, not the type's vectorcall
    pass

class Shifty(tuple):  # says 2 items at the first len() and 9 afterwards; holds 9
    def __new__(cls):
        self = super().__new__(cls, (7,) * 9)
        self.calls = 0
        return self
    def __len__(self):
        self.calls += 1
        return 2 if self.calls == 1 else 9
"""


def _dims_rows(field):
    name = f"LaunchConfig.{field} must be an int or a tuple of up to 3 ints"
    return [
        ("empty", "()", OK),  # (1, 1, 1), as in cuda.core
        ("1-tuple", "(2,)", OK),
        ("3-tuple", "(2, 3, 4)", OK),
        ("4-tuple", "(1, 2, 3, 4)", raises(ValueError, name, "tuple of length 4")),
        ("object", "object()", raises(TypeError, name, "got object")),
        ("float", "3.5", raises(TypeError, name, "got float")),
        ("generator", "(x for x in (1, 2))", raises(TypeError, name, "got generator")),
        ("list", "[1, 2]", raises(TypeError, name, "got list")),
        ("str", "'12'", raises(TypeError, name, "got str")),
        ("str item", "(1, '2')", raises(TypeError, name, "got str in (1, '2')")),
        ("float item", "(1, 2.0)", raises(TypeError, name, "got float in")),
        ("bool item", "(True,)", OK),  # Python's bool is an int, as for cuda.core
        ("NumPy bool item", "(np.True_,)", raises(TypeError, name, "got bool in")),
        ("None item", "(1, None)", raises(TypeError, name, "got NoneType in")),
        ("zero", "(1, 0)", raises(ValueError, f"LaunchConfig.{field} values must be >= 1")),
        ("too big", "(2**32,)", raises(OverflowError, f"LaunchConfig.{field} values must fit "
                                                      f"in 32 bits")),
        ("NumPy ints", "(np.int32(2), np.uint64(3))", OK),
        ("shifting length", "Shifty()", raises(ValueError, name, "tuple of length 9")),
    ]


@pytest.mark.parametrize("field", ["grid", "block", "cluster"])
def test_launch_config_dims(field):
    others = {"grid": "grid=1", "block": "block=1", "cluster": ""}
    rest = ", ".join(v for k, v in others.items() if k != field and v)
    cases = matrix(f"LaunchConfig({field}={{v}}, {rest})", _dims_rows(field))
    cases += matrix(f"Sub({field}={{v}}, {rest})", _dims_rows(field))
    if field == "grid":  # by position, and again with the same objects
        cases += matrix("LaunchConfig({v}, None, 1)", _dims_rows(field))
        cases += [("positional again", "LaunchConfig(g, None, 1); LaunchConfig(g, None, 1)", OK)]
    run_cases(_LAUNCH_CONFIG_SETUP + "\ng = (3, 2)\n", cases)


# -- the __cuda_stream__ protocol's answer (CPU: checked before the driver is asked) ------------

_STREAM_SETUP = """
from cuda_core import Buffer, LEGACY_DEFAULT_STREAM

class Answers:
    def __init__(self, value):
        self.value = value
    def __cuda_stream__(self):
        return self.value

class Shifty(tuple):  # says 2 items, holds 1
    def __len__(self):
        return 2

class Inner:  # its own error, which must come through as it is
    def __cuda_stream__(self):
        raise AttributeError("inner failure")

class NotCallable:
    __cuda_stream__ = (0, 1)
"""


def _protocol_rows(what):
    name = f"{what}: Answers.__cuda_stream__() must return (version, address) as two ints"
    return [
        ("empty", "Answers(())", raises(TypeError, name, "got ()")),
        ("1-tuple", "Answers((0,))", raises(TypeError, name, "got (0,)")),
        ("3-tuple", "Answers((0, 1, 2))", raises(TypeError, name)),
        ("object", "Answers(object())", raises(TypeError, name)),
        ("float", "Answers(3.5)", raises(TypeError, name, "got 3.5")),
        ("generator", "Answers(x for x in (0, 1))", raises(TypeError, name)),
        ("list", "Answers([0, 1])", raises(TypeError, name, "got [0, 1]")),
        ("str", "Answers('01')", raises(TypeError, name)),
        ("str version", "Answers(('0', 1))", raises(TypeError, name)),
        ("float address", "Answers((0, 1.0))", raises(TypeError, name)),
        ("bool address", "Answers((0, True))",
         raises(TypeError, "must be a stream address (int), not bool")),
        ("version 1", "Answers((1, 1))",
         raises(ValueError, f"{what}: unsupported __cuda_stream__ protocol version 1")),
        ("negative address", "Answers((0, -1))", raises(ValueError, "is not a valid stream")),
        ("tuple subclass holding 1", "Answers(Shifty((0,)))", raises(TypeError, name)),
        ("a tuple itself", "()", raises(TypeError, f"{what}: expected a Stream or an object "
                                                   f"with __cuda_stream__, not tuple")),
        ("raises inside", "Inner()", raises(AttributeError, "inner failure")),
        ("not callable", "NotCallable()",
         raises(TypeError, f"{what}: NotCallable.__cuda_stream__ must be a method")),
    ]


def test_cuda_stream_protocol_answers():
    cases = matrix("Buffer.from_handle(0, 0, stream={v})", _protocol_rows("Buffer.from_handle()"))
    cases += matrix("LEGACY_DEFAULT_STREAM.wait({v})", _protocol_rows("wait()"))
    run_cases(_STREAM_SETUP, cases)


# -- kernel arguments with __cuda_array_interface__ (CPU, through the packing launch() runs) -----

_CAI_SETUP = """
import struct
from cuda_core._kernel_args import _packed_arguments

class Array:
    def __init__(self, data):
        self.__cuda_array_interface__ = {"data": data, "shape": (1,), "typestr": "<f4",
                                         "version": 3}

class NotADict:
    __cuda_array_interface__ = ()

def packs_to(arg, address):
    assert _packed_arguments(arg) == [struct.pack("<Q", address)]
"""


def test_cuda_array_interface_data():
    malformed = "kernel argument 0 (Array): malformed __cuda_array_interface__ (no 'data' pointer)"
    not_int = ("kernel argument 0 (Array): the __cuda_array_interface__ 'data' pointer must be "
               "an int")
    cases = matrix("_packed_arguments(Array({v}))", [
        ("empty", "()", raises(TypeError, malformed)),
        ("object", "object()", raises(TypeError, malformed)),
        ("float", "3.5", raises(TypeError, malformed)),
        ("generator", "(x for x in (16, False))", raises(TypeError, malformed)),
        ("None", "None", raises(TypeError, malformed)),
        ("str", "'ab'", raises(TypeError, not_int, "not str")),
        ("None pointer", "(None, False)", raises(TypeError, not_int, "not NoneType")),
        ("float pointer", "(16.0, False)", raises(TypeError, not_int, "not float")),
    ])
    # The pointer is the first item; the read-only flag is not needed to pass it.
    cases += matrix("packs_to(Array({v}), 4096)", [
        ("2-tuple", "(4096, False)", OK),
        ("1-tuple", "(4096,)", OK),
        ("3-tuple", "(4096, False, 'extra')", OK),
        ("list", "[4096, False]", OK),
    ])
    cases.append(("not a dict", "_packed_arguments(NotADict())",
                  raises(TypeError, "kernel argument 0 (NotADict): malformed "
                                    "__cuda_array_interface__")))
    run_cases(_CAI_SETUP, cases)


# -- Buffer.from_handle, copy_to, copy_from, GraphBuilder.join (CPU) -----------------------------

def test_buffer_and_join_arguments():
    setup = """
    from cuda_core import Buffer, LEGACY_DEFAULT_STREAM
    from cuda_core.graph import GraphBuilder
    from helpers.memory import NumpyMemoryResource

    buf = NumpyMemoryResource().allocate(8)
    """
    values = [("empty", "()"), ("1-tuple", "(8,)"), ("object", "object()"), ("float", "3.5"),
              ("generator", "(x for x in (8,))"), ("list", "[8]"), ("str", "'8'")]
    cases = matrix("Buffer.from_handle({v}, 8)", [
        (label, v, raises(TypeError, "Buffer.from_handle(): ptr must be an int"))
        for label, v in values])
    cases += matrix("Buffer.from_handle(4096, {v})", [
        (label, v, raises(TypeError, "Buffer.from_handle(): size must be an int"))
        for label, v in values])
    cases += matrix("buf.copy_from({v}, stream=LEGACY_DEFAULT_STREAM)", [
        (label, v, raises(TypeError, "Buffer.copy_from(): src must be a Buffer, not"))
        for label, v in values])
    cases += matrix("buf.copy_to({v}, stream=LEGACY_DEFAULT_STREAM)", [
        (label, v, raises(TypeError, "Buffer.copy_to(): dst must be a Buffer or None, not"))
        for label, v in values])
    cases += [
        ("join()", "GraphBuilder.join()",
         raises(ValueError, "join() takes at least two GraphBuilders, 0 given")),
        ("join(one)", "GraphBuilder.join(object())",  # each type first, as cuda.core
         raises(TypeError, "join() takes GraphBuilders, not object")),
        ("join(non-builders)", "GraphBuilder.join((), ())",
         raises(TypeError, "join() takes GraphBuilders, not tuple")),
        ("join(*generator)", "GraphBuilder.join(*(x for x in (1, 2)))",
         raises(TypeError, "join() takes GraphBuilders, not int")),
    ]
    run_cases(setup, cases)


# -- compiler options and name expressions (CPU: NVRTC needs no GPU) ----------------------------

def _str_list_rows(cls, field, *, path=False, empty_ok=False):
    kinds = "a str or path-like" if path else "a str"
    bad = f"{cls}.{field} must be {kinds} (or a list of them)"
    # NVRTC takes an empty include path (no path), as cuda.core passes it on.
    empty_item = OK if empty_ok else raises(ValueError, f"{cls}.{field} must not be empty")
    return [
        ("empty", "()", OK),  # none, as None (cuda.core's reading)
        ("1-tuple", "('a',)", OK),
        ("long tuple", "tuple('abcdefgh')", OK),
        ("object", "object()", raises(TypeError, bad, "not object")),
        ("float", "3.5", raises(TypeError, bad, "not float")),
        ("generator", "(x for x in 'ab')", raises(TypeError, bad, "not generator")),
        ("list", "['a', 'b']", OK),
        ("str", "'a'", OK),  # one option
        ("int item", "('a', 1)", raises(TypeError, bad, "not int")),
        ("empty item", "('a', '')", empty_item),
    ]


def test_program_and_linker_options():
    setup = """
    from cuda_core import LinkerOptions, ProgramOptions
    """
    cases = []
    for field, path in (("ptxas_options", False), ("undefine_macro", False),
                        ("include_path", True), ("pre_include", True)):
        cases += matrix(f"ProgramOptions({field}={{v}})",
                        _str_list_rows("ProgramOptions", field, path=path,
                                       empty_ok=field == "include_path"))
    for field in ("kernels_used", "variables_used", "ptxas_options"):
        cases += matrix(f"LinkerOptions({field}={{v}})", _str_list_rows("LinkerOptions", field))
    for field in ("diag_error", "diag_suppress", "diag_warn"):
        bad = f"ProgramOptions.{field} must be an int or a list of ints"
        cases += matrix(f"ProgramOptions({field}={{v}})", [
            ("empty", "()", OK),
            ("1-tuple", "(7,)", OK),
            ("long tuple", "tuple(range(40))", OK),
            ("object", "object()", raises(TypeError, bad, "not object")),
            ("float", "3.5", raises(TypeError, bad, "not float")),
            ("generator", "(x for x in (1, 2))", raises(TypeError, bad, "not generator")),
            ("list", "[1, 2]", OK),
            ("str", "'1'", OK),  # one number, as cuda.core passes it
            ("long str", "'12'", raises(ValueError, "character by character")),
            ("str items", "('12', 3)", OK),
            ("bool item", "(1, True)", OK),
        ])
    macro = "ProgramOptions.define_macro"
    cases += matrix("ProgramOptions(define_macro={v})", [
        ("empty", "()", OK),
        ("1-tuple", "('A',)", OK),
        ("name-value pair", "('A', '1')", OK),
        ("3-tuple", "('A', 'B', 'C')", OK),
        ("object", "object()", raises(TypeError, f"{macro} must be a str", "not object")),
        ("float", "3.5", raises(TypeError, f"{macro} must be a str", "not float")),
        ("generator", "(x for x in 'AB')", raises(TypeError, f"{macro} must be a str",
                                                  "not generator")),
        ("list", "['A', ('B', '2')]", OK),
        ("str", "'A=1'", OK),
        ("empty pair", "[()]", raises(ValueError, f"{macro}: a macro given as a tuple must be "
                                                  f"(name, value)")),
        ("1-tuple pair", "[('A',)]", raises(ValueError, f"{macro}: a macro given as a tuple")),
        ("3-tuple pair", "[('A', '1', '2')]", raises(ValueError, f"{macro}: a macro given")),
        ("int value", "[('A', 1)]", raises(TypeError, f"{macro}: the value of macro 'A' must "
                                                      f"be a str")),
    ])
    sources = "ProgramOptions.extra_sources"
    cases += matrix("ProgramOptions(extra_sources={v})", [
        ("empty", "()", OK),
        ("1-tuple", "(('m', b'BC'),)", OK),
        ("object", "object()", raises(TypeError, f"{sources} must be a sequence")),
        ("float", "3.5", raises(TypeError, f"{sources} must be a sequence")),
        ("generator", "(x for x in [('m', b'BC')])",
         raises(TypeError, f"{sources} must be a sequence")),
        ("str", "'m'", raises(TypeError, f"{sources} must be a sequence")),
        ("empty item", "[()]", raises(TypeError, f"{sources}: each item must be a (name, "
                                                 f"source) pair")),
        ("1-tuple item", "[('m',)]", raises(TypeError, f"{sources}: each item must be a")),
        ("3-tuple item", "[('m', b'BC', 1)]", raises(TypeError, f"{sources}: each item must")),
        ("list item", "[['m', b'BC']]", OK),
        ("int source", "[('m', 1)]", raises(TypeError, f"{sources}: the source of 'm' must be")),
    ])
    run_cases(setup, cases)


def test_name_expressions():
    setup = """
    from cuda_core import Program, ProgramOptions
    from cuda_core.utils import make_program_cache_key

    prog = Program("template <typename T> __global__ void k(T* p) {}", "c++",
                   ProgramOptions(arch="sm_80"))
    opts = ProgramOptions(arch="sm_80")

    def key(names):
        return make_program_cache_key(code="x", code_type="c++", options=opts,
                                      target_type="ptx", name_expressions=names)
    """
    compile_rows = [
        ("empty", "()", OK),
        ("1-tuple", "('k<int>',)", OK),
        ("3-tuple", "('k<int>', 'k<float>', 'k<double>')", OK),
        ("generator", "(x for x in ('k<int>',))", OK),
        ("list", "['k<float>']", OK),
        ("object", "object()", raises(TypeError, "Program.compile(): name_expressions must be "
                                                 "a sequence of str or bytes, not object")),
        ("float", "3.5", raises(TypeError, "Program.compile(): name_expressions must be a "
                                           "sequence of str or bytes, not float")),
        ("str", "'k<int>'", raises(TypeError, "Program.compile(): name_expressions must be a "
                                              "sequence of str or bytes, not str (wrap a single "
                                              "name: [name])")),
        ("int item", "(1,)", raises(TypeError, "Program.compile(): name_expressions[0] must be "
                                               "a str or bytes, not int")),
        ("empty item", "('',)", raises(ValueError, "Program.compile(): invalid name "
                                                   "expression ''")),
    ]
    cases = matrix("prog.compile('ptx', name_expressions={v})", compile_rows)
    cases += matrix("key({v})", [
        ("empty", "()", OK),
        ("1-tuple", "('k<int>',)", OK),
        ("3-tuple", "('a', 'b', 'c')", OK),
        ("generator", "(x for x in ('a',))", OK),
        ("list", "['a']", OK),
        ("bytes items", "(b'a', b'b')", OK),
        ("None", "None", raises(TypeError, "name_expressions must be a sequence of str or "
                                           "bytes, not NoneType")),
        ("object", "object()", raises(TypeError, "name_expressions must be a sequence of str or "
                                                 "bytes, not object")),
        ("float", "3.5", raises(TypeError, "name_expressions must be a sequence of str or "
                                           "bytes, not float")),
        ("str", "'a'", raises(TypeError, "name_expressions must be a sequence of str or bytes, "
                                         "not str")),
        ("int item", "('a', 1)", raises(TypeError, "name_expressions[1] must be a str or bytes, "
                                                   "not int")),
    ])
    run_cases(setup, cases)


def test_program_cache_update():
    setup = """
    from cuda_core.utils import InMemoryProgramCache

    cache = InMemoryProgramCache()
    """
    pair = "update(): element 0 is not a (key, value) pair"
    cases = matrix("cache.update({v})", [
        ("empty", "()", OK),
        ("1-tuple of pairs", "(('a', b'x'),)", OK),
        ("generator of pairs", "((k, b'x') for k in 'bc')", OK),
        ("list of pairs", "[('d', b'x'), ('e', b'y')]", OK),
        ("dict", "{'f': b'x'}", OK),
        ("object", "object()", raises(TypeError, "update() takes a mapping or an iterable of "
                                                 "(key, value) pairs, not object")),
        ("float", "3.5", raises(TypeError, "update() takes a mapping", "not float")),
        ("str", "'ab'", raises(TypeError, pair, "(str)")),
        ("empty pair", "[()]", raises(TypeError, pair, "(tuple)")),
        ("1-tuple pair", "[('a',)]", raises(TypeError, pair, "(tuple)")),
        ("3-tuple pair", "[('a', b'x', 1)]", raises(TypeError, pair, "(tuple)")),
        ("int key", "[(1, b'x')]", raises(TypeError, "program cache key must be bytes or str, "
                                                     "not int")),
    ])
    cases.append(("stored", "assert len(cache) == 6 and all(k in cache for k in 'abcdef')", OK))
    run_cases(setup, cases)


# -- memory options holding devices (CPU) --------------------------------------------------------

def test_virtual_memory_options_peers():
    setup = """
    import numpy as np
    from cuda_core import Device, VirtualMemoryResourceOptions
    """
    bad = "VirtualMemoryResourceOptions.peers must be an iterable of devices (Device or int)"
    items = "VirtualMemoryResourceOptions.peers[0] must be an int"
    cases = matrix("VirtualMemoryResourceOptions(peers={v})", [
        ("object", "object()", raises(TypeError, bad, "not object")),
        ("float", "3.5", raises(TypeError, bad, "not float")),
        ("int", "1", raises(TypeError, bad, "not int")),
        ("str", "'01'", raises(TypeError, bad, "not str")),
        ("float item", "(1.5,)", raises(TypeError, items, "not float")),
        ("NumPy bool item", "(np.True_,)", raises(TypeError, items, "not numpy.bool")),
        ("negative item", "(-1,)", raises(ValueError, "VirtualMemoryResourceOptions.peers[0] "
                                                      "must be >= 0, got -1")),
    ])
    cases += matrix("assert VirtualMemoryResourceOptions(peers={v}).peers == (1, 2)", [
        ("generator", "(x for x in (1, 2))", OK),
        ("list", "[1, 2]", OK),
        ("duplicates", "(1, 2, 1, 2, 2)", OK),
        ("NumPy ints", "(np.int32(1), np.int64(2))", OK),
    ])
    cases += [
        ("empty", "assert VirtualMemoryResourceOptions(peers=()).peers == ()", OK),
        ("1-tuple", "assert VirtualMemoryResourceOptions(peers=(3,)).peers == (3,)", OK),
        ("long", "assert VirtualMemoryResourceOptions(peers=range(100)).peers == "
                 "tuple(range(100))", OK),
    ]
    run_cases(setup, cases)


def test_accessed_by_refuses_what_is_not_a_set_of_locations():
    # The values are checked before the driver is asked (the GPU test below covers the rest).
    setup = """
    from cuda_core import ManagedBuffer

    buf = ManagedBuffer.from_handle(0x1000, 64)
    """
    where = "ManagedBuffer.accessed_by: expected a Device, a Host or an iterable of them"
    items = "ManagedBuffer.accessed_by: expected Device or Host items"
    cases = matrix("buf.accessed_by = {v}", [
        ("object", "object()", raises(TypeError, where, "not object")),
        ("float", "3.5", raises(TypeError, where, "not float")),
        # A str or bytes is iterated, as in cuda.core (an empty one is no locations).
        ("str", "'0'", raises(TypeError, items, "not str")),
        ("bytes", "b'0'", raises(TypeError, items, "not int")),
        ("float item", "(0.5,)", raises(TypeError, items, "not float")),
        ("float item of a generator", "(x for x in (1.5,))", raises(TypeError, items)),
        ("None item", "[None]", raises(TypeError, items, "not NoneType")),
    ])
    run_cases(setup, cases)


# -- the classes Cython pickles: their generated code keeps its bounds checks (CPU) -------------

def test_generated_setstate_checks_the_state_tuple():
    # Cython writes __setstate_cython__ for these classes and indexes the state tuple there;
    # compiled without bounds checks, an empty or short state was read past its end. (The
    # device properties pickle through a __reduce__ of their own: their device's ordinal.)
    setup = """
    from cuda_core._memory._buffer import _ExportGuard
    from cuda_core._kernel_views import KernelAttributes
    from cuda_core._kernel_views import KernelOccupancy
    import pickle
    """
    cases = []
    for cls in ("_ExportGuard",):
        cases.append((f"{cls} ()", f"{cls}.__new__({cls}).__setstate_cython__(())",
                      raises(IndexError, "out of range")))
    # The kernel views hold the kernel's handle as a C pointer: Cython writes no pickling for
    # them, and pickling one is refused (it was refused before, by the Kernel they held).
    for cls in ("KernelAttributes", "KernelOccupancy"):
        cases.append((f"{cls} pickle", f"pickle.dumps({cls}.__new__({cls}))",
                      raises(TypeError, "cannot be converted to a Python object for pickling")))
    run_cases(setup, cases)


# -- GPU: occupancy queries, launch, streams, graphs, memory resources ---------------------------

_GPU_SETUP = """
import types
import numpy as np
from cuda_core import (Device, DeviceMemoryResource, DeviceMemoryResourceOptions, LaunchConfig,
                       ManagedMemoryResource, Program, ProgramOptions,
                       VirtualMemoryResource, VirtualMemoryResourceOptions, launch)

dev = Device(0)
dev.set_current()
s = dev.create_stream()
CLUSTERS = dev.compute_capability >= (9, 0)

class Answers:
    def __init__(self, value):
        self.value = value
    def __cuda_stream__(self):
        return self.value

class Array:
    def __init__(self, data):
        self.__cuda_array_interface__ = {"data": data, "shape": (1,), "typestr": "<f4",
                                         "version": 3}
"""

_KERNEL_SETUP = _GPU_SETUP + """
code = 'extern "C" __global__ void k(float* p) { if (p) p[threadIdx.x] = 1.0f; }'
kernel = Program(code, "c++", ProgramOptions(arch="sm_" + dev.arch)).compile(
    "cubin").get_kernel("k")
occ = kernel.occupancy
buf = dev.allocate(1024, stream=s)
config = LaunchConfig(grid=1, block=32)

def cfg(**fields):
    values = dict(grid=(1, 1, 1), block=(32, 1, 1), cluster=(1, 1, 1), shmem_size=0)
    values.update(fields)
    return types.SimpleNamespace(**values)

def clusters(query, **fields):
    if CLUSTERS:  # the checks run first; the query itself needs compute capability 9.0
        getattr(occ, query)(cfg(**fields), stream=s)
    else:
        try:
            getattr(occ, query)(cfg(**fields), stream=s)
        except Exception as exc:
            if "config." in str(exc):
                raise
"""


def _occupancy_dims_rows(query, field):
    # The occupancy queries build a LaunchConfig from any object with its fields, so the
    # checks and messages are LaunchConfig's, naming the query's config.
    name = f"{query}(): config.{field} must be an int or a tuple of up to 3 ints"
    return [
        ("4-tuple", "(1, 1, 1, 1)", raises(ValueError, name, "tuple of length 4")),
        ("object", "object()", raises(TypeError, name, "got object")),
        ("float", "3.5", raises(TypeError, name, "got float")),
        ("generator", "(x for x in (1,))", raises(TypeError, name, "got generator")),
        ("list", "[1]", raises(TypeError, name, "got list")),
        ("str", "'1'", raises(TypeError, name, "got str")),
        ("str item", "('1',)", raises(TypeError, name, "got str in ('1',)")),
        ("zero item", "(1, 0)", raises(ValueError, f"{query}(): config.{field} values must "
                                                   f"be >= 1")),
        ("too big", "(2**32,)", raises(OverflowError, f"{query}(): config.{field} values "
                                                       f"must fit in 32 bits")),
    ]


def test_occupancy_config_checks_without_a_gpu():
    # Every check runs before the driver is asked, so a view with no kernel behind it shows
    # them (in a child process: a check that let a bad config through must not crash pytest).
    setup = """
import types
from cuda_core import LEGACY_DEFAULT_STREAM as s
from cuda_core._kernel_views import KernelOccupancy

occ = KernelOccupancy.__new__(KernelOccupancy)

def cfg(**fields):
    values = dict(grid=(1, 1, 1), block=(32, 1, 1), cluster=(1, 1, 1), shmem_size=0)
    values.update(fields)
    return types.SimpleNamespace(**values)

def clusters(query, **fields):
    getattr(occ, query)(cfg(**fields), stream=s)
"""
    cases = []
    for query in ("max_active_clusters", "max_potential_cluster_size"):
        for field in ("grid", "block", "cluster"):
            cases += matrix(f"clusters({query!r}, {field}={{v}})",
                            _occupancy_dims_rows(query, field))
        cases += [
            (f"{query} shmem", f"clusters({query!r}, shmem_size=-1)",
             raises(ValueError, f"{query}(): config.shmem_size must be between 0 and")),
            (f"{query} no grid", f"getattr(occ, {query!r})(object(), stream=s)",
             raises(TypeError, f"{query}(): config must be a LaunchConfig")),
            (f"{query} overflow", f"clusters({query!r}, grid=2**31, cluster=2)",
             raises(ValueError, f"{query}(): config: grid", "more than 2**32 - 1 blocks")),
        ]
    run_cases(setup, cases)


@pytest.mark.gpu
def test_occupancy_config_dims():
    cases = []
    for query in ("max_active_clusters", "max_potential_cluster_size"):
        for field in ("grid", "block", "cluster"):
            rows = _occupancy_dims_rows(query, field) + [("1-tuple", "(1,)", OK)]
            cases += matrix(f"clusters({query!r}, {field}={{v}})", rows)
    run_cases(_KERNEL_SETUP, cases)


@pytest.mark.gpu
def test_launch_arguments_and_streams():
    malformed = "kernel argument 0 (Array): malformed __cuda_array_interface__"
    cases = matrix("launch(s, config, kernel, Array({v})); s.sync()", [
        ("empty data", "()", raises(TypeError, malformed)),
        ("generator data", "(x for x in (0, False))", raises(TypeError, malformed)),
        ("float data", "3.5", raises(TypeError, malformed)),
        ("1-tuple data", "(buf.handle,)", OK),
        ("2-tuple data", "(int(buf.handle), False)", OK),
    ])
    protocol = "Answers.__cuda_stream__() must return (version, address) as two ints"
    rows = [
        ("empty", "Answers(())", raises(TypeError, protocol)),
        ("1-tuple", "Answers((0,))", raises(TypeError, protocol)),
        ("3-tuple", "Answers((0, int(s.handle), 0))", raises(TypeError, protocol)),
        ("generator", "Answers(x for x in (0, int(s.handle)))", raises(TypeError, protocol)),
        ("list", "Answers([0, int(s.handle)])", raises(TypeError, protocol)),
        ("float", "Answers(3.5)", raises(TypeError, protocol)),
        ("good", "Answers((0, int(s.handle)))", OK),
    ]
    cases += matrix("launch({v}, config, kernel, buf); s.sync()", rows)
    cases += matrix("s.wait({v})", rows)
    cases += matrix("dev.create_stream({v}).close()", rows)
    run_cases(_KERNEL_SETUP, cases)


@pytest.mark.gpu
def test_graph_counts():
    setup = _GPU_SETUP + """
gb = dev.create_graph_builder().begin_building()
cond = gb.create_condition(0)
"""
    cases = []
    for call in ("gb.split({v})", "gb.switch(cond, {v})"):
        what = call.split("(")[0][3:]
        cases += matrix(call, [
            (label, v, raises(TypeError, f"{what}(): count must be an int, not {kind}"))
            for label, v, kind in [("empty", "()", "tuple"), ("1-tuple", "(2,)", "tuple"),
                                   ("object", "object()", "object"), ("float", "3.5", "float"),
                                   ("generator", "(x for x in (2,))", "generator"),
                                   ("list", "[2]", "list"), ("str", "'2'", "str")]])
    # Python's bool is an int (1 here), as for cuda.core: one branch is too few for a split,
    # enough for a switch.
    cases += [("split(True)", "gb.split(True)",
               raises(ValueError, "count must be between 2 and 2147483647, got 1")),
              ("switch(cond, True)", "gb.switch(cond, True)", OK),
              ("split(2) joined", "gb.join(*gb.split(2))", OK),
              ("the capture still ends", "gb.end_building(); gb.close()", OK)]
    run_cases(setup, cases)


@pytest.mark.gpu
def test_memory_resource_device_sets():
    setup = _GPU_SETUP + """
mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions())
# cuMemAllocManaged memory: a CUDA 13.0 driver refuses advice on a managed pool's memory.
from cuda.bindings import driver as _drv
from cuda_core import ManagedBuffer
_err, _ptr = _drv.cuMemAllocManaged(1 << 16, _drv.CUmemAttach_flags.CU_MEM_ATTACH_GLOBAL.value)
assert _err == _drv.CUresult.CUDA_SUCCESS, _err
managed = ManagedBuffer.from_handle(int(_ptr), 1 << 16)
s.sync()
"""
    peers = "peer_accessible_by: expected a Device, an int or an iterable of them"
    cases = matrix("mr.peer_accessible_by = {v}", [
        ("empty", "()", OK),
        ("own device", "(dev.device_id,)", OK),
        ("own device, repeated", "(dev,) * 10", OK),
        ("generator", "(d for d in (dev,))", OK),
        ("list", "[dev.device_id]", OK),
        ("object", "object()", raises(TypeError, peers, "not object")),
        ("float", "3.5", raises(TypeError, peers, "not float")),
        ("str", "'0'", raises(TypeError, peers, "not str")),
        ("float item", "(0.0,)", raises(TypeError, "peer_accessible_by: expected Device or int "
                                                   "items, not float")),
        ("out of range", "(10**6,)", raises(ValueError, "out of range")),
    ])
    where = "ManagedBuffer.accessed_by: expected a Device, a Host or an iterable of them"
    cases += matrix("managed.accessed_by = {v}", [
        ("empty", "()", OK),
        ("1-tuple", "(dev,)", OK),
        ("generator", "(d for d in (dev,))", OK),
        ("list", "[dev]", OK),
        ("ordinal", "0", raises(TypeError, where, "not int")),  # cuda.core refuses ints too
        ("object", "object()", raises(TypeError, where, "not object")),
        ("float", "3.5", raises(TypeError, where, "not float")),
        ("empty str", "''", OK),  # iterated, as in cuda.core: no locations
        ("str", "'0'", raises(TypeError, "ManagedBuffer.accessed_by: expected Device or Host "
                                          "items, not str")),
        ("float item", "(0.5,)", raises(TypeError, "ManagedBuffer.accessed_by: expected "
                                                   "Device or Host items, not float")),
        ("ordinal item", "(0,)", raises(TypeError, "ManagedBuffer.accessed_by: expected "
                                                   "Device or Host items, not int")),
    ])
    run_cases(setup, cases)


@pytest.mark.gpu
def test_virtual_memory_resource_keeps_its_own_options():
    setup = _GPU_SETUP + """
class Many:  # a "sequence" of 1000 peers (device 1), slices included
    def __getitem__(self, index):
        return [1] * 1000
    def __iter__(self):
        return iter([1] * 1000)

VMM = dev.properties.virtual_memory_management_supported
opts = VirtualMemoryResourceOptions(peers=(), peer_access="rw")
mr = VirtualMemoryResource(dev, opts) if VMM else None
"""
    # The resource keeps a copy of the options it was given (for itself, and for each chunk a
    # modify_allocation maps): changing the caller's object afterwards changes nothing, and in
    # particular cannot overflow the access descriptors built from the peers.
    cases = [
        ("mutated peers", "opts.peers = Many()\n"
                          "if VMM:\n"
                          "    b = mr.allocate(1 << 16)\n"
                          "    assert mr.config.peers == ()\n"
                          "    b.close()", OK),
        ("mutated after modify_allocation",
         "if VMM:\n"
         "    grow = VirtualMemoryResourceOptions(peers=(), peer_access='rw')\n"
         "    b = mr.allocate(1 << 16)\n"
         "    b = mr.modify_allocation(b, 1 << 22, config=grow)\n"
         "    grow.peers = Many()\n"
         "    b = mr.modify_allocation(b, 1 << 30)  # moves: every chunk's access is set again\n"
         "    b.close()", OK),
    ]
    run_cases(setup, cases)
