"""Every field of every options class, given the edge inputs a user may pass (None, 0, -1, a
bool, NumPy scalars, a float, strs, tuples of other lengths, lists, bytes, 2**64), made with
NVIDIA's cuda.core 1.2.2 and with ours (issue 27, parts 5 and 6; CPU: options are made without
a GPU).

Where cuda.core refuses an input, ours refuses it too, with cuda.core's exception class or a
subclass, so that ``except`` written for cuda.core holds. Where both take it, both keep the same
setting. Where ours refuses what cuda.core takes, ``docs/migrating.rst`` names the rule
(floats and containers for flags, NumPy bools for ints, ... are checked when the options are
made, where cuda.core finds out at use or never); those are not compared here. Every warning
cuda.core gives (a ``DeprecationWarning`` for a deprecated field), ours gives too, whether or not
either refuses the input.
"""

import dataclasses
import importlib
import inspect
import warnings

import numpy as np
import pytest

from helpers.differential import missed_warnings, require_reference, their_class

require_reference("1.2.2")

CLASSES = [
    ("", name) for name in (
        "StreamOptions", "EventOptions", "LaunchConfig", "ProgramOptions", "LinkerOptions",
        "DeviceMemoryResourceOptions", "PinnedMemoryResourceOptions",
        "ManagedMemoryResourceOptions", "VirtualMemoryResourceOptions", "SMResourceOptions",
        "WorkqueueResourceOptions", "ContextOptions", "TensorMapDescriptorOptions")
] + [("graph", "GraphCompleteOptions"), ("graph", "GraphDebugPrintOptions"),
     ("utils", "CopyOptions"), ("texture", "OpaqueArrayOptions"),
     ("texture", "MipmappedArrayOptions"), ("texture", "TextureObjectOptions")]

# What a class needs besides the field under test (cuda.core's ProgramOptions and
# LinkerOptions ask the driver for the arch when none is given).
REQUIRED = {
    "TensorMapDescriptorOptions": {"box_dim": (8, 8)},
    "OpaqueArrayOptions": {"shape": (4,), "format": "float32", "num_channels": 1},
    "MipmappedArrayOptions": {"shape": (4,), "format": "float32", "num_channels": 1,
                              "num_levels": 1},
    "LaunchConfig": {"grid": 1, "block": 1},
    "ProgramOptions": {"arch": "sm_90"},
    "LinkerOptions": {"arch": "sm_90"},
}

EDGES = {
    "None": None, "0": 0, "-1": -1, "1": 1, "True": True, "False": False,
    "np.int32(3)": np.int32(3), "np.True_": np.True_, "1.5": 1.5, "np.float32(2)": np.float32(2),
    "''": "", "'x'": "x", "()": (), "(1,)": (1,), "(1, 2, 3)": (1, 2, 3), "[]": [],
    "[1, 2]": [1, 2], "b'x'": b"x", "2**64": 2**64,
}

# cuda.core's error here is an accident of its implementation (``name.encode`` of a non-str
# raises AttributeError), not a documented failure: ours raises TypeError.
ACCIDENTS = {("ProgramOptions", "name"), ("LinkerOptions", "name")}
# cuda.core refuses a true use_bundled_headers with RuntimeError where NVRTC is older than 13.3
# (the CUDA 12 build's): it looks at NVRTC before it looks at the value's type, as ours does
# after; either way the options are refused.
NVRTC_FIRST = {("ProgramOptions", "use_bundled_headers")}
# cuda.core looks for the driver while making some options (LaunchConfig with a cluster or a
# cooperative launch): what it would say of the input cannot be seen on a machine without one.
NO_DRIVER = {"DynamicLibNotFoundError"}
# Fields ours normalizes where cuda.core keeps what it was given (a dtype-like data_type is
# kept as the TensorMapDataType it names).
NORMALIZED = {("TensorMapDescriptorOptions", "data_type")}


# Classes without a Python signature (a cdef class), and their keyword fields.
FIELDS = {"LaunchConfig": ("grid", "cluster", "block", "shmem_size", "is_cooperative",
                           "programmatic_stream_serialization")}


def field_names(cls):
    if cls.__name__ in FIELDS:
        return list(FIELDS[cls.__name__])
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls)]
    return [p for p in inspect.signature(cls).parameters if p not in ("self", "args", "kwargs")]


def make(package, module, name, field, value):
    cls = getattr(importlib.import_module(package + (f".{module}" if module else "")), name)
    kwargs = dict(REQUIRED.get(name, {}), **{field: value})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value, error = getattr(cls(**kwargs), field), None
        except Exception as exc:  # the outcome under test, whatever it is
            value, error = None, exc
    return value, error, {w.category for w in caught}


def same_setting(theirs, ours):
    """Equal, or the same truth value where one side keeps the raw input of a flag (None for
    False, -1 for True) and the other the bool."""
    if isinstance(ours, bool) or isinstance(theirs, bool) or theirs is None or ours is None:
        return bool(theirs) == bool(ours)
    if isinstance(theirs, (list, tuple)) and isinstance(ours, (list, tuple)):
        theirs, ours = tuple(theirs), tuple(ours)  # ours keeps a list as a tuple
    try:
        return bool(theirs == ours)
    except Exception:
        return False


CASES = [(module, name, field)
         for module, name in CLASSES
         for field in field_names(getattr(importlib.import_module(
             "cuda.core" + (f".{module}" if module else "")), name))]


@pytest.mark.parametrize("module, name, field", CASES,
                         ids=[f"{name}.{field}" for _, name, field in CASES])
def test_an_option_field_given_edge_inputs(module, name, field):
    problems = []
    for label, value in EDGES.items():
        theirs, their_error, their_warnings = make("cuda.core", module, name, field, value)
        ours, our_error, our_warnings = make("cuda_core", module, name, field, value)
        # (Not for an accident of cuda.core's implementation, whose warnings are its own.)
        missed = ([] if (name, field) in ACCIDENTS
                  else missed_warnings(their_warnings, our_warnings))
        if missed:  # a deprecation cuda.core gives, ours gives, refused or not
            problems.append(f"{label}: cuda.core warns {missed}; ours does not")
        if their_error is not None:
            if (name, field) in ACCIDENTS or type(their_error).__name__ in NO_DRIVER:
                continue
            if (name, field) in NVRTC_FIRST and "requires NVRTC" in str(their_error):
                continue
            cls = their_class(their_error)
            compatible = (our_error is None or isinstance(our_error, cls) if cls is not None
                          else type(our_error).__name__ == type(their_error).__name__)
            # Ours taking what cuda.core refuses is leniency (a valid setting), not a break.
            if our_error is not None and not compatible:
                problems.append(f"{label}: cuda.core raises {type(their_error).__name__} "
                                f"({their_error}); ours {type(our_error).__name__} ({our_error})")
        elif our_error is None and (name, field) not in NORMALIZED and \
                not same_setting(theirs, ours):
            problems.append(f"{label}: cuda.core keeps {theirs!r}; ours {ours!r}")
    assert not problems, "\n".join(problems)
