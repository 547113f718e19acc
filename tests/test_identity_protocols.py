"""``==``, ``hash``, ``repr``, ``copy.copy``/``copy.deepcopy`` and pickling behave as cuda.core
1.2.2's (issue 27, part 3), compared on this machine (no GPU) with the cuda-core wheel the test
extra installs: objects built without a GPU side by side, and, for every public class, how
equality and hashing are defined and whether an object of it can be copied or pickled. The GPU
half (objects that need a device, graph node identity) is tests/test_differential_identity.py.
"""

import copy
import dataclasses
import importlib
import pickle
import sys
import tempfile

import pytest

pytest.importorskip("cuda.core", reason="NVIDIA's cuda-core 1.2.2 (the test extra installs it) "
                                        "is the reference")

from helpers.differential import Outcome, agree  # noqa: E402
from test_members import _is_enum, _surface  # noqa: E402


def _qualified_classes():
    theirs, ours = _surface("cuda.core"), _surface("cuda_core")
    return [(qual, ref, ours[qual]) for qual, ref in sorted(theirs.items())
            if isinstance(ref, type) and isinstance(ours.get(qual), type)
            and not issubclass(ref, BaseException)]


CLASSES = _qualified_classes()


# -- how equality and hashing are defined -------------------------------------------------------

def _eq_kind(cls):
    """'identity' (object's ==), 'value' (a class's own ==); hashable or not."""
    return ("identity" if cls.__eq__ is object.__eq__ else "value",
            "unhashable" if cls.__hash__ is None else "hashable")


# cuda.core's system.Device compares by identity; ours by device (issue 27, part 5: the NVML
# classes become cuda.bindings.nvml's).
EQ_NOT_YET: set[str] = set()


@pytest.mark.parametrize("qual, theirs, ours", CLASSES, ids=[c[0] for c in CLASSES])
def test_equality_and_hashing_are_defined_as_cuda_cores(qual, theirs, ours):
    if qual in EQ_NOT_YET:
        assert _eq_kind(theirs) != _eq_kind(ours), f"{qual} agrees now: take it off EQ_NOT_YET"
        return
    assert _eq_kind(ours) == _eq_kind(theirs)
    if dataclasses.is_dataclass(theirs):  # options: equal by value, dataclass repr, not frozen
        assert dataclasses.is_dataclass(ours)
        assert ours.__dataclass_params__.eq == theirs.__dataclass_params__.eq
        assert ours.__dataclass_params__.frozen == theirs.__dataclass_params__.frozen


# -- copy and pickle of each class, on an object made without __init__ --------------------------

def _copy_outcome(cls):
    """Whether pickle, copy.copy and copy.deepcopy work on ``cls.__new__(cls)``: for a class
    that refuses them whatever its state (cuda.core's Cython classes holding handles), the
    TypeError is the answer; ``None`` when no such object can be made."""
    try:
        obj = cls.__new__(cls)
    except Exception:
        return None
    out = []
    for action in (pickle.dumps, copy.copy, copy.deepcopy):
        try:
            action(obj)
            out.append("copies")
        except Exception as exc:
            out.append(type(exc).__name__)
    return tuple(out)


# What an object made without __init__ says depends on its state there (a closed Buffer, a
# resource without a pool, a device that cannot be looked up): these are compared on the GPU,
# with real objects (test_differential_identity.py).
STATEFUL = {"Buffer", "ManagedBuffer", "Device", "DeviceMemoryResource",
            "PinnedMemoryResource", "VirtualMemoryResource", "ObjectCode", "MemoryResource",
            "GraphMemoryResource", "utils.StridedMemoryView", "typing.IsStreamType",
            "utils.ProgramCacheResource", "utils.FileStreamProgramCache", "system.Device",
            "system.NvlinkInfo"}


@pytest.mark.parametrize("qual, theirs, ours",
                         [c for c in CLASSES if c[0] not in STATEFUL and not _is_enum(c[1])
                          and not dataclasses.is_dataclass(c[1])],
                         ids=[c[0] for c in CLASSES if c[0] not in STATEFUL
                              and not _is_enum(c[1]) and not dataclasses.is_dataclass(c[1])])
def test_copy_and_pickle_refused_or_allowed_as_cuda_core_does(qual, theirs, ours):
    expected = _copy_outcome(theirs)
    if expected is None:
        pytest.skip(f"cuda.core's {qual} cannot be made without __init__ on this machine")
    got = _copy_outcome(ours)
    if got is None:  # ours refuses even __new__ (a GPU-only class): nothing to copy
        return
    assert got == expected, f"cuda.core: {expected}; ours: {got}"


# -- objects made without a GPU, side by side ---------------------------------------------------

_TMP = tempfile.TemporaryDirectory(prefix="identity-")  # the program caches' directories


def _package(m, sub=""):
    """``m``'s package (cuda.core's module is named after its CUDA build) or a subpackage."""
    return importlib.import_module(("cuda.core" if m.__name__.startswith("cuda.core.")
                                    else m.__name__) + sub)


def _options(name, sub=""):
    return lambda m: getattr(_package(m, sub), name)()


MAKERS = {
    **{name: _options(name) for name in (
        "DeviceMemoryResourceOptions", "PinnedMemoryResourceOptions",
        "ManagedMemoryResourceOptions", "VirtualMemoryResourceOptions", "EventOptions",
        "StreamOptions", "LinkerOptions", "SMResourceOptions", "WorkqueueResourceOptions")},
    "TensorMapDescriptorOptions": lambda m: m.TensorMapDescriptorOptions(box_dim=(8, 8)),
    **{f"graph.{name}": _options(name, ".graph")
       for name in ("GraphCompleteOptions", "GraphDebugPrintOptions")},
    **{f"texture.{name}": _options(name, ".texture") for name in ("TextureObjectOptions",)},
    "utils.CopyOptions": _options("CopyOptions", ".utils"),
    "Host": lambda m: m.Host(),
    "Host(numa_id=1)": lambda m: m.Host(numa_id=1),
    "LaunchConfig": lambda m: m.LaunchConfig(grid=(2, 3), block=64, shmem_size=16),
    "LegacyPinnedMemoryResource": lambda m: m.LegacyPinnedMemoryResource(),
    "utils.InMemoryProgramCache": lambda m: _package(m, ".utils").InMemoryProgramCache(),
    "utils.FileStreamProgramCache": lambda m: _package(m, ".utils").FileStreamProgramCache(
        tempfile.mkdtemp(dir=_TMP.name)),
    "a Python subclass of MemoryResource": lambda m: _user_resource(m),
}


def _user_resource(m):
    cls = _USER_RESOURCES.get(m.__name__)
    if cls is None:
        def allocate(self, size, *, stream=None):
            raise NotImplementedError

        def deallocate(self, ptr, size, *, stream=None):
            pass

        cls = type("UserResource", (m.MemoryResource,), {
            "allocate": allocate, "deallocate": deallocate, "__module__": __name__,
            "__qualname__": f"_USER_RESOURCES_{m.__name__.replace('.', '_')}",
            "is_device_accessible": property(lambda self: True),
            "is_host_accessible": property(lambda self: False),
            "device_id": property(lambda self: 0)})
        _USER_RESOURCES[m.__name__] = cls
        setattr(sys.modules[__name__], cls.__qualname__, cls)  # pickle finds it by name
    obj = cls()
    obj.tag = "kept"
    return obj


_USER_RESOURCES = {}


def _observe(m, make):
    """What a user sees of one object's protocols, as plain values (exceptions by class)."""
    obj = make(m)
    seen = {"eq to itself": obj == obj, "eq to another made alike": obj == make(m)}
    try:
        seen["hash"] = hash(obj) == hash(obj) and (obj != make(m) or hash(obj) == hash(make(m)))
    except TypeError:
        seen["hash"] = "TypeError"
    for name, action in (("copy", copy.copy), ("deepcopy", copy.deepcopy),
                         ("pickle", lambda o: pickle.loads(pickle.dumps(o)))):
        try:
            other = action(obj)
        except Exception as exc:
            seen[name] = type(exc).__name__
            continue
        seen[name] = ("same object" if other is obj else "equal" if other == obj else
                      "a new object", type(other).__name__, getattr(other, "tag", None))
    text = repr(obj)
    seen["repr"] = ("dataclass fields" if text.startswith(type(obj).__name__ + "(") else
                    "angle brackets" if text.startswith("<") else text)
    return seen


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_protocols_of_objects_made_without_a_gpu_are_cuda_cores(name):
    outcomes = []
    for package in ("cuda.core", "cuda_core"):
        try:
            outcomes.append(Outcome(value=_observe(importlib.import_module(package),
                                                   MAKERS[name])))
        except Exception as exc:  # the outcome under test, whatever it is
            outcomes.append(Outcome(error=exc))
    theirs, ours = outcomes
    assert theirs.error is None, f"cuda.core's {name} cannot be made here: {theirs}"
    assert agree(theirs, ours), f"cuda.core {theirs}; ours {ours}"


def test_a_graph_condition_copies_and_pickles_as_a_value():
    from cuda_core.graph import GraphCondition

    cond = GraphCondition.__new__(GraphCondition)  # (no GPU: a condition of no graph)
    for action in (copy.copy, copy.deepcopy, lambda o: pickle.loads(pickle.dumps(o))):
        other = action(cond)
        assert type(other) is GraphCondition and other == cond and other is not cond
        assert hash(other) == hash(cond) and other.handle == cond.handle


@pytest.mark.parametrize("make", [
    lambda: __import__("cuda_core").LaunchConfig(grid=1, block=1),
    lambda: __import__("cuda_core.graph", fromlist=["x"]).ExecutableKernelNode.__new__(
        __import__("cuda_core.graph", fromlist=["x"]).ExecutableKernelNode),
    lambda: __import__("cuda_core.texture", fromlist=["x"]).TextureObject.__new__(
        __import__("cuda_core.texture", fromlist=["x"]).TextureObject),
    lambda: __import__("cuda_core.texture", fromlist=["x"]).SurfaceObject.__new__(
        __import__("cuda_core.texture", fromlist=["x"]).SurfaceObject),
], ids=["LaunchConfig", "ExecutableKernelNode", "TextureObject", "SurfaceObject"])
def test_refused_copies_name_the_class(make):
    obj = make()
    for action in (pickle.dumps, copy.copy, copy.deepcopy):
        with pytest.raises(TypeError, match=f"cannot pickle '{type(obj).__name__}' object"):
            action(obj)


def test_device_properties_copy_and_pickle_as_cuda_cores():
    """Reached through ``Device.properties`` only (no public name): both packages' class, made
    without a device. Ours failed to copy (IndexError) once an attribute was left unread."""
    seen = []
    for module in ("cuda.core._device", "cuda_core._device"):
        cls = importlib.import_module(module).DeviceProperties
        props = cls.__new__(cls)
        seen.append(tuple((type(other).__name__, other is props, other == props)
                          for other in (copy.copy(props), copy.deepcopy(props),
                                        pickle.loads(pickle.dumps(props)))))
    assert seen[1] == seen[0]
