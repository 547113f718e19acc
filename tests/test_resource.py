"""cuda_core._resource.Resource, the one lifecycle of every handle-owning class.

``close()`` is idempotent and raises when the release fails (never retrying it); a closed
object refuses its methods with ``RuntimeError("this <Type> is closed")``; an object that was
never closed is released by its finalizer, where a failure becomes a CUDAWarning naming the
class, the handle and the error, except once the driver is deinitialized or the interpreter is
finalizing. No GPU is needed for most of it: tests/helpers/downstream.pyx defines ``Handle``, a
Resource subclass whose release records its handle and can be made to fail, as a library built
on cuda_core's .pxd files would; it runs in a subprocess (helpers.cython_build).
"""

import pytest

from cuda_core import LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM, Event, Stream
from cuda_core._resource import Resource
from helpers import run_python
from helpers.cython_build import run_downstream

# Builds the errors the tests' releases raise, in the subprocess.
_ERRORS = """
import gc
import warnings
import cuda_core
from cuda_core import CUDAError, CUDAWarning

def driver_error(code, name):
    return CUDAError(f"{name}: in a test", code, name, "in a test")

ILLEGAL = driver_error(700, "CUDA_ERROR_ILLEGAL_ADDRESS")
DEINITIALIZED = driver_error(4, "CUDA_ERROR_DEINITIALIZED")
Handle, released = downstream.Handle, downstream.released

def collected(make):
    # The warnings the collection of what make() returns gives, as (category, message).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        obj = make()
        del obj
        gc.collect()
    return [(w.category.__name__, issubclass(w.category, CUDAWarning), str(w.message))
            for w in caught]
"""


def test_stream_and_event_are_resources():
    assert issubclass(Stream, Resource) and issubclass(Event, Resource)
    assert isinstance(LEGACY_DEFAULT_STREAM, Resource)


def test_the_base_class_closes_once():
    r = Resource()
    assert not r.is_closed
    r.close()
    assert r.is_closed
    r.close()  # idempotent
    assert r.is_closed


def test_context_is_a_resource_and_a_memory_resource_owns_nothing_to_close():
    from cuda_core import Context, MemoryResource

    assert issubclass(Context, Resource) and issubclass(MemoryResource, Resource)
    # No close() of their own: what close() does is the base's, told by the non-owning flag.
    assert "close" not in vars(Context) and "close" not in vars(MemoryResource)
    mr = MemoryResource()
    mr.close()
    mr.close()
    assert not mr.is_closed


def test_the_python_classes_share_one_closable_base():
    from cuda_core import Linker, Program
    from cuda_core._closable import Closable
    from cuda_core.utils import FileStreamProgramCache, InMemoryProgramCache

    for cls in (Program, Linker, FileStreamProgramCache, InMemoryProgramCache):
        assert issubclass(cls, Closable), cls
        assert "is_closed" not in vars(cls) and "_check_open" not in vars(cls), cls
    cache = InMemoryProgramCache()
    assert not cache.is_closed
    cache.close()
    assert cache.is_closed
    with pytest.raises(RuntimeError, match="^this InMemoryProgramCache is closed$"):
        len(cache)


def test_the_default_streams_are_never_closed():
    for s in (LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM):
        s.close()
        assert not s.is_closed
        assert s.__cuda_stream__()[1] in (1, 2)


def test_close_releases_once_and_a_closed_object_refuses_its_methods(downstream):
    result = run_downstream(downstream, _ERRORS + """
h = Handle(0x10)
before = [h.is_closed, h.value()]
h.close()
h.close()
try:
    h.value()
    refused = None
except RuntimeError as e:
    refused = str(e)
closed = h.is_closed
box = [h]
del h
after = collected(box.pop)  # a closed object's finalizer releases nothing
result = {"before": before, "closed": closed, "refused": refused,
          "released": released, "warnings": after}
""")
    assert result == {"before": [False, 0x10], "closed": True, "refused": "this Handle is closed",
                      "released": [0x10], "warnings": []}


def test_a_failed_close_raises_and_is_not_retried(downstream):
    result = run_downstream(downstream, _ERRORS + """
h = Handle(0x20, ILLEGAL)
try:
    h.close()
    raised = None
except CUDAError as e:
    raised = [e is ILLEGAL, str(e)]
h.close()  # closed already: no second release, no error
closed = h.is_closed
box = [h]
del h
result = {"raised": raised, "closed": closed, "warnings": collected(box.pop),
          "released": released}
""")
    assert result == {"raised": [True, "CUDA_ERROR_ILLEGAL_ADDRESS: in a test"], "closed": True,
                      "released": [0x20], "warnings": []}


def test_the_finalizer_releases_an_unclosed_object(downstream):
    result = run_downstream(downstream, _ERRORS + """
result = {"warnings": collected(lambda: Handle(0x30)), "released": released}
""")
    assert result == {"warnings": [], "released": [0x30]}


def test_a_failed_release_in_the_finalizer_is_a_warning_naming_class_handle_and_error(downstream):
    result = run_downstream(downstream, _ERRORS + """
result = {
    "driver": collected(lambda: Handle(0xDEAD0000, ILLEGAL)),
    "other": collected(lambda: Handle(0x40, ValueError("bad state"))),
    "no_handle": collected(lambda: Handle(0, ILLEGAL)),
    "released": released,
}
""")
    assert result == {
        "driver": [["CUDAWarning", True, "Handle 0xdead0000: cleanup failed: "
                                         "CUDA_ERROR_ILLEGAL_ADDRESS: in a test"]],
        "other": [["CUDAWarning", True, "Handle 0x40: cleanup failed: bad state"]],
        "no_handle": [["CUDAWarning", True, "Handle: cleanup failed: "
                                            "CUDA_ERROR_ILLEGAL_ADDRESS: in a test"]],
        "released": [0xDEAD0000, 0x40, 0],
    }


def test_the_finalizer_is_silent_once_the_driver_is_deinitialized(downstream):
    result = run_downstream(downstream, _ERRORS + """
result = {"warnings": collected(lambda: Handle(0x50, DEINITIALIZED)), "released": released}
""")
    assert result == {"warnings": [], "released": [0x50]}


def test_the_finalizer_runs_with_every_field_intact_in_a_reference_cycle(downstream):
    # The handle and its error refer to each other: only the cyclic collector frees them, and
    # the release (tp_finalize) still sees its fields, so the warning names the error.
    result = run_downstream(downstream, _ERRORS + """
def make():
    error = RuntimeError("cyclic")
    h = Handle(0x60, error)
    error.owner = h
    return h

result = {"warnings": collected(make), "released": released}
""")
    assert result == {"warnings": [["CUDAWarning", True, "Handle 0x60: cleanup failed: cyclic"]],
                      "released": [0x60]}


def test_a_warning_filter_that_raises_reaches_the_unraisable_hook(downstream):
    # The finalizer never raises into whatever code triggered the collection; the warning
    # turned error goes to sys.unraisablehook, as an exception in __del__ would.
    r = run_python(f"""
import gc, sys, warnings
sys.path.insert(0, {str(downstream)!r})
import downstream
seen = []
sys.unraisablehook = lambda u: seen.append(f"{{type(u.exc_value).__name__}}: {{u.exc_value}}")
warnings.simplefilter("error")
h = downstream.Handle(0x70, RuntimeError("boom"))
del h
gc.collect()
print("after", downstream.released, seen, flush=True)
""")
    assert (r.returncode, r.stdout) == (
        0, f"after [{0x70}] ['CUDAWarning: Handle 0x70: cleanup failed: boom']\n"), r.stderr


_AT_EXIT = """
import sys
sys.path.insert(0, {build!r})
import downstream
from cuda_core import CUDAError

error = CUDAError("CUDA_ERROR_ILLEGAL_ADDRESS: at exit", 700, "CUDA_ERROR_ILLEGAL_ADDRESS", "")
kept = downstream.Handle(0x80, error)        # alive until the interpreter finalizes
cycle = [downstream.Handle(0x90, error)]
cycle.append(cycle)                          # freed only by the collector at exit
{before_exit}
print("exiting", flush=True)
"""


def test_an_unclosed_object_at_interpreter_exit_gives_no_warning(downstream):
    r = run_python(_AT_EXIT.format(build=str(downstream), before_exit=""),
                   env={"PYTHONWARNINGS": "always::RuntimeWarning"})
    assert (r.returncode, r.stdout, r.stderr) == (0, "exiting\n", "")
    # The same objects dropped before the exit do warn: the silence above is the policy.
    r = run_python(_AT_EXIT.format(build=str(downstream),
                                   before_exit="del kept, cycle\nimport gc; gc.collect()"),
                   env={"PYTHONWARNINGS": "always::RuntimeWarning"})
    assert r.returncode == 0 and r.stdout == "exiting\n", r.stderr
    assert r.stderr.count("CUDAWarning: Handle 0x") == 2, r.stderr
    assert "Handle 0x80: cleanup failed" in r.stderr and "Handle 0x90: cleanup failed" in r.stderr


@pytest.mark.gpu
def test_unclosed_streams_and_events_are_released_without_a_warning():
    # Dropped by reference count and by the cyclic collector, then some left for the exit.
    r = run_python("""
import gc
from cuda_core import Device

dev = Device(0)
dev.set_current()
for _ in range(50):
    s, e = dev.create_stream(), dev.create_event()
    s.record(e)
    del s, e
    cycle = [dev.create_stream(), dev.create_event()]
    cycle.append(cycle)
    del cycle
gc.collect()
s, e = dev.create_stream(), dev.create_event()
assert not s.is_closed and not e.is_closed
s.close()
e.close()
assert s.is_closed and e.is_closed
s.close()
e.close()
kept = [dev.create_stream(), dev.create_event()]
print("exiting", flush=True)
""", env={"PYTHONWARNINGS": "always::RuntimeWarning"})
    assert (r.returncode, r.stdout, r.stderr) == (0, "exiting\n", "")


def test_an_object_never_given_a_handle_releases_nothing():
    # Every Resource class of the package, made by a bare __new__ (what a refused constructor
    # leaves to the finalizer) and finalized: no warning, no driver call, no descriptor closed
    # (fd 0 is a pipe here: a zeroed descriptor field would close it).
    code = (
        "import gc, importlib, inspect, os, pkgutil, sys, warnings\n"
        "warnings.simplefilter('error')\n"
        "r, w = os.pipe()\n"
        "os.dup2(r, 0)\n"
        "import cuda_core\n"
        "from cuda_core._resource import Resource\n"
        "failures = []\n"
        "sys.unraisablehook = lambda u: failures.append(f'{u.object!r}: {u.exc_value}')\n"
        "classes = set()\n"
        "for m in pkgutil.walk_packages(cuda_core.__path__, 'cuda_core.'):\n"
        "    mod = importlib.import_module(m.name)\n"
        "    classes |= {c for c in vars(mod).values()\n"
        "                if inspect.isclass(c) and issubclass(c, Resource)}\n"
        "made = 0\n"
        "for cls in sorted(classes, key=lambda c: c.__qualname__):\n"
        "    try:\n"
        "        obj = cls.__new__(cls)\n"
        "    except TypeError:  # abstract: nothing to finalize\n"
        "        continue\n"
        "    made += 1\n"
        "    del obj\n"
        "    gc.collect()\n"
        "print(made, failures, os.fstat(0).st_ino == os.fstat(r).st_ino)\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    made, rest = result.stdout.split(" ", 1)
    assert int(made) >= 20, result.stdout  # the walk found the package's classes
    assert rest.strip() == "[] True", result.stdout
