"""Every public class and function of NVIDIA's cuda.core 1.2.2 has its counterpart in ours, with
each public member and the same parameter names (issue 27, part 2): a program written for
cuda.core finds what it uses. The reference is the cuda-core 1.2.2 wheel from PyPI, which the
test extra installs; both packages are read by introspection only, without a GPU.

Not compared here: members that are how a class is built rather than what it offers (pickling
hooks, rich comparisons, ``__repr__``; their behaviour is the differential suite's), and
parameters where either side's signature cannot be read (a Cython ``__init__`` shows
``*args, **kwargs``).
"""

import dataclasses
import enum
import importlib
import inspect
import sys

import pytest

cuda_core_ref = pytest.importorskip(
    "cuda.core", reason="NVIDIA's cuda-core 1.2.2 (the test extra installs it) is the reference")

SUBMODULES = ["", ".checkpoint", ".graph", ".system", ".system.typing", ".texture", ".typing",
              ".utils"]

# How a class is made, copied, compared and printed: behaviour the differential suite compares.
CONSTRUCTION = {
    "__new__", "__init__", "__post_init__", "__del__", "__reduce__", "__reduce_ex__",
    "__setstate__", "__getstate__", "__copy__", "__deepcopy__", "__eq__", "__ne__", "__lt__",
    "__le__", "__gt__", "__ge__", "__hash__", "__repr__", "__str__", "__format__",
    "__sizeof__", "__dir__", "__getattribute__", "__getattr__", "__setattr__", "__delattr__",
    "__init_subclass__", "__subclasshook__", "__class_getitem__", "__reduce_cython__",
    "__setstate_cython__", "__pyx_vtable__", "__weakref__", "__dict__", "__module__",
    "__doc__", "__annotations__", "__slots__", "__match_args__", "__dataclass_fields__",
    "__dataclass_params__", "__qualname__", "__firstlineno__", "__static_attributes__",
    "__orig_bases__", "__parameters__", "__abstractmethods__", "__signature__",
    "__text_signature__", "__annotate_func__", "__annotations_cache__",
    "__slotnames__",  # copyreg's cache, set on a class once one of its objects is copied
}
# Before Python 3.12 (PEP 688) the buffer protocol has no Python-level names: ours implements it
# in C (memoryview(buf) works on every version, tests/test_buffer.py), cuda.core as methods.
if sys.version_info < (3, 12):
    CONSTRUCTION |= {"__buffer__", "__release_buffer__"}

# Known gaps, each an open part of issue 27: this list only shrinks.
NOT_YET: set[str] = set()

# Parameters whose names still differ from cuda.core's (none now: the NVML errors are
# cuda.bindings.nvml's own classes, as in cuda.core).
NOT_YET_PARAMS: set[str] = set()


def _public(module):
    names = getattr(module, "__all__", None)
    return list(names) if names is not None else [n for n in dir(module) if not n.startswith("_")]


_ENUM_MODULES = ("enum", "cuda.bindings._internal._fast_enum")


def _is_enum(cls):
    return issubclass(cls, enum.Enum) or type(cls).__name__ == "FastEnumMetaclass"


def _members(cls):
    """The public members of ``cls``: names without a leading underscore, the protocol dunders
    (``__dlpack__``, ``__enter__``, ...), dataclass fields and annotated attributes."""
    names = set()
    for klass in cls.__mro__:
        # An enum's machinery is not its API: Python's (enum), or cuda.bindings' FastEnum, which
        # some of cuda.core's enums are (ours are Python's, with the same members).
        if klass is object or (_is_enum(cls) and klass.__module__ in _ENUM_MODULES):
            continue
        for name in list(vars(klass)) + list(vars(klass).get("__annotations__", {})):
            dunder = name.startswith("__") and name.endswith("__")
            if (not name.startswith("_") or dunder) and name not in CONSTRUCTION:
                names.add(name)
    if dataclasses.is_dataclass(cls):
        names.update(f.name for f in dataclasses.fields(cls))
    if _is_enum(cls):  # a FastEnum keeps these in the class itself; Python's in its metaclass
        names -= {"__members__", "__singletons__"}
    return names


def _keywords(func):
    """The names a caller can pass ``func``'s parameters by, in order; None when its signature
    cannot be read or hides them (``*args, **kwargs``)."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return None
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    named = [p.name for p in params
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if not named and any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return None
    return named


def _surface(root):
    """{qualified name: object} over the public modules of package ``root``."""
    out = {}
    for sub in SUBMODULES:
        module = importlib.import_module(root + sub)
        for name in _public(module):
            out[(sub[1:] + "." if sub else "") + name] = getattr(module, name, None)
    return out


def _differences():
    theirs, ours = _surface("cuda.core"), _surface("cuda_core")
    missing, renamed = set(), {}
    for qual, ref in theirs.items():
        if qual not in ours or ours[qual] is None and ref is not None:
            missing.add(qual)
            continue
        mine = ours[qual]
        if isinstance(ref, type):
            if not isinstance(mine, type):
                missing.add(qual)
                continue
            ka, kb = _keywords(ref), _keywords(mine)  # the constructor's
            if ka is not None and kb is not None and ka != kb and not _is_enum(ref):
                renamed[qual + "()"] = (ka, kb)
            for name in _members(ref):
                if name not in _members(mine):
                    missing.add(f"{qual}.{name}")
                elif not (name.startswith("__") and name != "__init__"):
                    a, b = getattr(ref, name, None), getattr(mine, name, None)
                    if callable(a) and callable(b) and not isinstance(a, type):
                        ka, kb = _keywords(a), _keywords(b)
                        if ka is not None and kb is not None and ka != kb:
                            renamed[f"{qual}.{name}"] = (ka, kb)
        elif callable(ref) and callable(mine):
            ka, kb = _keywords(ref), _keywords(mine)
            if ka is not None and kb is not None and ka != kb:
                renamed[qual] = (ka, kb)
    return missing, renamed


def test_every_public_member_of_cuda_core_exists_in_ours():
    missing, _ = _differences()
    assert sorted(missing - NOT_YET) == []
    # A gap closed is taken off NOT_YET, so that it cannot open again unnoticed.
    assert sorted(NOT_YET - missing) == []


def test_parameters_have_cuda_cores_names():
    _, renamed = _differences()
    assert {k: v for k, v in renamed.items() if k not in NOT_YET_PARAMS} == {}
    assert sorted(NOT_YET_PARAMS - set(renamed)) == []


def test_what_cuda_core_lets_you_weak_reference_ours_does():
    theirs, ours = _surface("cuda.core"), _surface("cuda_core")
    refused = [qual for qual, ref in theirs.items()
               if isinstance(ref, type) and ref.__weakrefoffset__
               and isinstance(ours.get(qual), type) and not ours[qual].__weakrefoffset__]
    assert refused == []


def _reachable(root):
    """{(public namespace, class name): class} for the classes with a public name defined in any
    module of package ``root``: also those only reached through an attribute or a return value
    (``DeviceProperties``, ``AdjacencySetProxy``, ``KernelAttributes``, ...)."""
    import pkgutil

    package = importlib.import_module(root)
    out = {}
    for info in pkgutil.walk_packages(package.__path__, root + "."):
        if any(part in info.name for part in (".cu12", ".cu13", ".tests", "__main__")):
            continue
        try:
            module = importlib.import_module(info.name)
        except Exception:  # a module of an optional dependency (NVML, OpenGL) not here
            continue
        for name, obj in vars(module).items():
            if isinstance(obj, type) and not name.startswith("_") and \
                    obj.__module__.startswith(root + "."):
                area = obj.__module__[len(root) + 1:].split(".")[0]
                out[("" if area.startswith("_") else area, name)] = obj
    return out


def test_what_cuda_core_lets_you_weak_reference_anywhere_ours_does():
    theirs, ours = _reachable("cuda.core"), _reachable("cuda_core")
    assert len(theirs) > 100  # the walk found cuda.core's modules
    refused = [key for key, ref in theirs.items()
               if ref.__weakrefoffset__ and key in ours and not ours[key].__weakrefoffset__]
    assert refused == []
