"""cuda_core.utils.StridedMemoryView and args_viewable_as_strided_memory (_memoryview.pyx,
_viewable_args.py).

The CPU tests use NumPy arrays (whose DLPack export and array interface need no GPU), Buffers of
a NumPy-backed memory resource (which export DLPack as host, pinned or managed memory without a
driver call), and a DLPack producer written here with ctypes from the DLPack specification, which
counts its deleter's calls and can produce what NumPy never would (legacy capsules, bad versions,
device types and element types, a consumed capsule).
"""

import ctypes
import gc
import inspect
import sys
import warnings
import weakref

import numpy as np
import pytest

from helpers import run_python
from helpers.dlpack import (DLDataType, DLDevice, DLPackVersion, DLTensor, kDLBfloat, kDLBool,
                            kDLComplex, kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged, kDLFloat,
                            kDLInt, kDLUInt)
from helpers.memory import NumpyMemoryResource
from cuda_core._kernel_args import _packed_arguments
from cuda_core.utils import StridedMemoryView, args_viewable_as_strided_memory

# -- a DLPack producer from the specification ----------------------------------------------------

DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", DELETER)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]


class Producer:
    """One DLPack tensor over 4 KiB of host memory, described however a test wants."""

    def __init__(self, shape, strides=None, *, code=kDLFloat, bits=32, lanes=1,
                 device=(kDLCPU, 0), versioned=True, major=1, flags=0, byte_offset=0,
                 max_version_ok=True, ndim=None, null_shape=False):
        self.mem = ctypes.create_string_buffer(4096)
        self._shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self._strides = None if strides is None else (ctypes.c_int64 * max(len(strides), 1))(
            *strides)
        self.deleted = 0
        self.calls = []
        self.capsules = []
        self.versioned = versioned
        self.device = device
        self.max_version_ok = max_version_ok

        def deleter(_):
            self.deleted += 1
        self._deleter = DELETER(deleter)
        tensor = DLTensor(
            ctypes.cast(self.mem, ctypes.c_void_p), DLDevice(*device),
            len(shape) if ndim is None else ndim, DLDataType(code, bits, lanes),
            None if null_shape else ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64)),
            None if strides is None else ctypes.cast(self._strides,
                                                     ctypes.POINTER(ctypes.c_int64)),
            byte_offset)
        if versioned:
            self.managed = DLManagedTensorVersioned(DLPackVersion(major, 0), None, self._deleter,
                                                    flags, tensor)
        else:
            self.managed = DLManagedTensor(tensor, None, self._deleter)

    @property
    def ptr(self):
        return ctypes.addressof(self.mem)

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.calls.append({"stream": stream, "max_version": max_version})
        if max_version is not None and not self.max_version_ok:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        name = b"dltensor_versioned" if self.versioned else b"dltensor"
        capsule = _capsule_new(ctypes.addressof(self.managed), name, None)
        self.capsules.append(capsule)
        return capsule


class LegacyNumpy:
    """A NumPy array behind a producer that predates DLPack 1.0 (no max_version)."""

    def __init__(self, array):
        self.array = array

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__(stream=stream)


class SubArray(np.ndarray):
    """Not exactly numpy.ndarray: views of it go through __dlpack__ and its capsule."""


def _elements(strides, itemsize):
    return tuple(s // itemsize for s in strides)


# NumPy's DLPack export gives strides for every array but a 0-d one from 2.4 on; before, none
# for a C-contiguous array either (the view reports what the export gives).
NUMPY_C_STRIDES = tuple(int(x) for x in np.__version__.split(".")[:2]) >= (2, 4)


def _exported_numpy_strides(array):
    """The strides (in elements) NumPy's DLPack export of ``array`` gives, or None."""
    if array.ndim == 0 or (array.flags.c_contiguous and not NUMPY_C_STRIDES):
        return None
    return _elements(array.strides, array.itemsize)


ARRAYS = [
    np.arange(12, dtype=np.float32).reshape(3, 4),
    np.arange(12, dtype=np.float32).reshape(3, 4).T,
    np.arange(24, dtype=np.int16).reshape(2, 3, 4)[:, :, ::2],
    np.arange(24, dtype=np.int16).reshape(2, 3, 4)[:, ::-1],
    np.arange(24, dtype=np.int16).reshape(2, 3, 4).transpose(1, 0, 2),
    np.arange(24, dtype=np.int64).reshape(2, 3, 4)[:, 1:2, :],
    np.zeros((0, 3), dtype=np.float64),
    np.zeros((3, 0, 2), dtype=np.uint8),
    np.zeros((), dtype=np.complex128),
    np.broadcast_to(np.arange(4, dtype=np.int32), (3, 4)),
    np.zeros((1, 5))[:, ::2],
    np.zeros((4, 1))[::2],
    np.arange(10, dtype=np.uint16)[::-3],
]
ARRAY_IDS = ["c", "f", "sliced", "negative", "permuted", "unit-dim", "empty", "empty3", "0-d",
             "broadcast", "row-step", "col-step", "neg-step"]

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]


# -- NumPy through DLPack ------------------------------------------------------------------------

@pytest.mark.parametrize("array", ARRAYS, ids=ARRAY_IDS)
@pytest.mark.parametrize("how", ["ndarray", "subclass", "legacy"])
def test_numpy_through_dlpack(array, how):
    obj = {"ndarray": array, "subclass": array.view(SubArray),
           "legacy": LegacyNumpy(array)}[how]
    if how == "legacy" and not array.flags.writeable:
        # A legacy capsule cannot say read-only: NumPy refuses to export such an array.
        with pytest.raises(BufferError):
            StridedMemoryView.from_dlpack(obj, stream_ptr=-1)
        return
    view = StridedMemoryView.from_dlpack(obj, stream_ptr=-1)
    assert view.ptr == array.__array_interface__["data"][0]
    assert view.shape == array.shape and type(view.shape) is tuple
    assert view.dtype == array.dtype
    assert view.size == array.size
    assert view.device_id == -1 and view.is_device_accessible is False
    assert view.readonly is not array.flags.writeable
    assert view.exporting_obj is obj
    assert view.strides == _exported_numpy_strides(array)


def test_shape_and_strides_own_their_ints():
    """Extents and strides outside CPython's small-int cache (above 256, below -5) are new int
    objects: the tuples must own them. Run under the debug allocator, which overwrites freed
    memory, in a child (a dangling item may crash the interpreter)."""
    code = """
import gc
import numpy as np
from cuda_core.utils import StridedMemoryView
base = np.zeros((300, 1000), dtype=np.int8)
view = StridedMemoryView.from_dlpack(base[::-1, ::-7], stream_ptr=-1)
got = [(view.shape, view.strides, view._layout.strides_in_bytes) for _ in range(200)]
churn = [i + 10**9 for i in range(200000)]  # reuses what was freed
gc.collect()
want = ((300, 143), (-1000, -7), (-1000, -7))
assert all(g == want for g in got), got[0]
print("ok")
"""
    result = run_python(code, env={"PYTHONMALLOC": "debug"})
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


@pytest.mark.parametrize("array", ARRAYS, ids=ARRAY_IDS)
def test_numpy_fast_path_equals_the_capsule_path(array):
    """Exact ndarrays are read in place; the result must be what their capsule gives."""
    fast = StridedMemoryView.from_dlpack(array, stream_ptr=-1)
    slow = StridedMemoryView.from_dlpack(array.view(SubArray), stream_ptr=-1)
    for name in ("ptr", "shape", "strides", "dtype", "size", "readonly", "device_id",
                 "is_device_accessible"):
        assert getattr(fast, name) == getattr(slow, name), name
    a, b = fast._layout, slow._layout
    for name in ("shape", "strides", "strides_in_bytes", "itemsize", "is_contiguous_c",
                 "is_contiguous_f", "is_contiguous_any"):
        assert getattr(a, name) == getattr(b, name), name


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype(dtype):
    array = np.zeros(5, dtype=dtype)
    for obj in (array, array.view(SubArray), LegacyNumpy(array)):
        view = StridedMemoryView.from_dlpack(obj, stream_ptr=-1)
        assert view.dtype == np.dtype(dtype)
        assert view._layout.itemsize == np.dtype(dtype).itemsize
    assert StridedMemoryView.from_array_interface(array).dtype == np.dtype(dtype)


def test_readonly_numpy():
    array = np.arange(4.0)
    array.flags.writeable = False
    assert StridedMemoryView.from_dlpack(array, stream_ptr=-1).readonly is True
    assert StridedMemoryView.from_dlpack(array.view(SubArray), stream_ptr=-1).readonly is True
    assert StridedMemoryView.from_array_interface(array).readonly is True


class HostOnlyProducer(Producer):
    """A host producer that takes no stream but None, as the DLPack protocol asks of one."""

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if stream is not None:
            self.calls.append({"stream": stream, "max_version": max_version})
            raise RuntimeError("only stream=None is supported")
        return super().__dlpack__(stream=stream, max_version=max_version)


def test_streams_handed_to_a_host_producer():
    """0 becomes None; -1 is asked as is and, refused by a host producer, asked again as None
    (NumPy takes nothing else); others go as given."""
    p = Producer((4,))
    StridedMemoryView.from_dlpack(p, stream_ptr=0)
    assert p.calls == [{"stream": None, "max_version": (1, 3)}]
    p = HostOnlyProducer((4,))
    view = StridedMemoryView.from_dlpack(p, stream_ptr=-1)
    assert p.calls == [{"stream": -1, "max_version": (1, 3)},
                       {"stream": None, "max_version": (1, 3)}]
    assert view.ptr == p.ptr
    view = StridedMemoryView.from_dlpack(np.zeros(3).view(SubArray), stream_ptr=-1)
    assert view.shape == (3,)
    p = Producer((4,))
    StridedMemoryView.from_dlpack(p, stream_ptr=7)
    assert p.calls == [{"stream": 7, "max_version": (1, 3)}]
    # NumPy's own refusal of a stream (RuntimeError before NumPy 2.5, ValueError since)
    with pytest.raises((RuntimeError, ValueError), match="stream=None"):
        StridedMemoryView.from_dlpack(np.zeros(3).view(SubArray), stream_ptr=7)


@pytest.mark.parametrize("device", [(kDLCUDA, 1), (kDLCUDAHost, 0), (kDLCUDAManaged, 0)])
def test_streams_handed_to_a_device_producer(device):
    for stream_ptr, expected in ((-1, -1), (0, None), (1, 1), (2, 2), (0x1234, 0x1234)):
        p = Producer((4,), device=device)
        view = StridedMemoryView.from_dlpack(p, stream_ptr=stream_ptr)
        assert p.calls == [{"stream": expected, "max_version": (1, 3)}]
        assert view.device_id == device[1]
        assert view.is_device_accessible is True


def test_a_device_producer_refusing_minus_one_is_not_asked_again():
    p = HostOnlyProducer((4,), device=(kDLCUDA, 0))
    with pytest.raises(RuntimeError, match="only stream=None"):
        StridedMemoryView.from_dlpack(p, stream_ptr=-1)
    assert p.calls == [{"stream": -1, "max_version": (1, 3)}]


# -- the DLPack C exchange API -------------------------------------------------------------------

class ExchangeHeader(ctypes.Structure):
    pass


ExchangeHeader._fields_ = [("version", DLPackVersion),
                           ("prev_api", ctypes.POINTER(ExchangeHeader))]
MANAGED_FROM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p,
                                ctypes.POINTER(ctypes.POINTER(DLManagedTensorVersioned)))
BORROWED_FROM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(DLTensor))
WORK_STREAM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32,
                               ctypes.POINTER(ctypes.c_void_p))


class ExchangeAPI(ctypes.Structure):
    _fields_ = [("header", ExchangeHeader), ("allocator", ctypes.c_void_p),
                ("managed_from", MANAGED_FROM), ("to_py", ctypes.c_void_p),
                ("borrowed_from", BORROWED_FROM), ("work_stream", WORK_STREAM)]


def exchange_type(producer, *, borrowed=True, major=1, older=None):
    """A type whose instances export ``producer``'s tensor through a C exchange table (and
    whose ``__dlpack__`` fails, so that a test sees which way was taken). Returns the type and
    the log of table calls."""
    log = []

    def managed_from(obj, out):
        log.append("managed")
        out[0] = ctypes.pointer(producer.managed)
        return 0

    def borrowed_from(obj, out):
        log.append("borrowed")
        out[0] = producer.managed.dl_tensor
        return 0

    def work_stream(device_type, device_id, out):
        log.append(("stream", device_type, device_id))
        out[0] = None
        return 0

    funcs = (MANAGED_FROM(managed_from), BORROWED_FROM(borrowed_from) if borrowed
             else BORROWED_FROM(), WORK_STREAM(work_stream))
    api = ExchangeAPI(ExchangeHeader(DLPackVersion(major, 3),
                                     None if older is None else ctypes.pointer(older.header)),
                      None, funcs[0], None, funcs[1], funcs[2])

    def dlpack(self, **kwargs):
        log.append("__dlpack__")
        return producer.__dlpack__(**kwargs)

    cls = type("Exchanged", (), {
        "__dlpack_c_exchange_api__": _capsule_new(ctypes.addressof(api),
                                                  b"dlpack_exchange_api", None),
        "__dlpack__": dlpack,
        "__dlpack_device__": lambda self: producer.device,
        "_keep": (api, funcs, producer),
    })
    return cls, log


def test_exchange_api_borrowed_tensor():
    p = Producer((4, 2), (1, 4))
    cls, log = exchange_type(p)
    obj = cls()
    view = StridedMemoryView.from_dlpack(obj, stream_ptr=7)
    assert log == ["borrowed"]  # no Python call, and no stream for host memory
    assert view.ptr == p.ptr and view.shape == (4, 2) and view.strides == (1, 4)
    assert view.dtype == np.float32 and view.device_id == -1 and view.exporting_obj is obj
    del view
    assert p.deleted == 0  # a borrowed tensor has no deleter to run
    assert StridedMemoryView.from_any_interface(obj, stream_ptr=-1).shape == (4, 2)


def test_exchange_api_owned_tensor():
    p = Producer((3,), flags=1)
    cls, log = exchange_type(p, borrowed=False)
    view = StridedMemoryView.from_dlpack(cls(), stream_ptr=-1)
    assert log == ["managed"] and view.readonly and view.shape == (3,)
    del view
    assert p.deleted == 1


def test_exchange_api_refused_tensor_is_deleted():
    p = Producer((3,), bits=24)
    cls, log = exchange_type(p, borrowed=False)
    with pytest.raises(TypeError, match="unsupported DLPack element type"):
        StridedMemoryView.from_dlpack(cls(), stream_ptr=-1)
    assert p.deleted == 1


def test_exchange_api_device_tensor_without_ordering():
    p = Producer((4,), device=(kDLCUDA, 0))
    cls, log = exchange_type(p)
    view = StridedMemoryView.from_dlpack(cls(), stream_ptr=-1)
    assert log == ["borrowed"]  # -1: the producer's stream is not asked
    assert view.device_id == 0 and view.is_device_accessible


def test_exchange_api_versions():
    p = Producer((2,))
    v1, _ = exchange_type(p)
    newer, log = exchange_type(p, major=2, older=v1.__dict__["_keep"][0])
    StridedMemoryView.from_dlpack(newer(), stream_ptr=-1)
    assert log == []  # the table of major version 1 behind it was used
    alone, log = exchange_type(p, major=2)
    view = StridedMemoryView.from_dlpack(alone(), stream_ptr=0)
    assert log == ["__dlpack__"] and view.ptr == p.ptr  # no usable table: the protocol call


def test_exchange_api_other_capsules_are_ignored():
    p = Producer((2,))
    cls, log = exchange_type(p)
    cls.__dlpack_c_exchange_api__ = _capsule_new(ctypes.addressof(p.managed), b"other", None)
    StridedMemoryView.from_dlpack(cls(), stream_ptr=0)
    cls.__dlpack_c_exchange_api__ = 12345
    StridedMemoryView.from_dlpack(cls(), stream_ptr=0)
    assert log == ["__dlpack__", "__dlpack__"]


def test_any_interface_asks_the_type_and_reads_a_cai_property_once():
    """Numba's device arrays have a __getattr__ (slow to fail) and a CAI property (slow to
    build): from_any_interface must neither call the one nor build the other twice."""
    from cuda_core import CUDAError

    class Lazy:
        evaluated = 0
        looked_up = []

        def __getattr__(self, name):
            Lazy.looked_up.append(name)
            raise AttributeError(name)

        @property
        def __cuda_array_interface__(self):
            Lazy.evaluated += 1
            return {"shape": (0,), "typestr": "<f4", "data": (0, False), "version": 3}

    try:
        view = StridedMemoryView.from_any_interface(Lazy(), stream_ptr=-1)
    except CUDAError as exc:  # no driver: the view needs the current device for a null pointer
        assert "driver" in str(exc)
    else:
        assert view.shape == (0,)
    assert Lazy.evaluated == 1 and Lazy.looked_up == []


def test_any_interface_takes_instance_attributes():
    p = Producer((4,))

    class Holder:
        pass

    h = Holder()
    h.__dlpack__ = p.__dlpack__
    h.__dlpack_device__ = p.__dlpack_device__
    assert StridedMemoryView.from_any_interface(h, stream_ptr=0).ptr == p.ptr


WRAPPED = 4611686018427387898  # -24 bytes divided by 4 as an unsigned number


def test_strides_spanning_more_than_2_63_bytes_are_refused():
    p = Producer((4, 6), (WRAPPED, 1))
    with pytest.raises(BufferError, match="spans more than 2\\*\\*63 bytes"):
        StridedMemoryView.from_dlpack(p, stream_ptr=0)
    assert p.deleted == 1
    big = Interface(shape=(4, 6), typestr="<f4", data=(4096, False), strides=(2**62, 4),
                    version=3)
    with pytest.raises(BufferError, match="spans more than"):
        StridedMemoryView.from_array_interface(big)
    huge = Interface(shape=(2**40, 2**40), typestr="<f8", data=(4096, False), version=3)
    with pytest.raises(BufferError, match="spans more than"):
        StridedMemoryView.from_array_interface(huge)
    ok = StridedMemoryView.from_dlpack(Producer((4, 6), (-6, 1)), stream_ptr=0)
    assert ok.strides == (-6, 1)


def test_stream_ptr_forms():
    class Handle:  # like cuda.bindings.driver.CUstream: an __index__
        def __index__(self):
            return 0x55

    p = Producer((4,), device=(kDLCUDA, 0))
    StridedMemoryView.from_dlpack(p, stream_ptr=Handle())
    assert p.calls[-1]["stream"] == 0x55
    with pytest.raises(BufferError, match="stream_ptr=None is ambiguous"):
        StridedMemoryView.from_dlpack(p, stream_ptr=None)
    with pytest.raises(BufferError, match="stream_ptr=None is ambiguous"):
        StridedMemoryView.from_dlpack(np.zeros(3))
    with pytest.raises(TypeError, match="stream_ptr must be an int"):
        StridedMemoryView.from_dlpack(p, stream_ptr="0x55")
    with pytest.raises(TypeError, match="not numpy.bool"):  # Python's bool is an int
        StridedMemoryView.from_dlpack(p, stream_ptr=np.True_)
    with pytest.raises(BufferError, match="stream_ptr=-5 is not a stream"):
        StridedMemoryView.from_dlpack(p, stream_ptr=-5)
    with pytest.raises(BufferError, match=f"stream_ptr={2**64} is not a stream"):
        StridedMemoryView.from_dlpack(p, stream_ptr=2**64)
    assert len(p.calls) == 1  # every refusal came before the producer was asked
    StridedMemoryView.from_dlpack(p, stream_ptr=2**64 - 1)  # a handle in 64 bits is passed on
    assert p.calls[-1]["stream"] == 2**64 - 1
    # Both sides of the inline read's edge (ints in [-1, 2**63) are read inline), and -1.
    for value in (2**63 - 1, 2**63, -1):
        StridedMemoryView.from_dlpack(p, stream_ptr=value)
        assert p.calls[-1]["stream"] == value


# -- capsules: both kinds, ownership, refusals ---------------------------------------------------

@pytest.mark.parametrize("versioned", [True, False])
def test_capsule_consumed_renamed_and_deleted_once(versioned):
    p = Producer((3, 4), (4, 1), versioned=versioned)
    view = StridedMemoryView.from_dlpack(p, stream_ptr=-1)
    capsule = p.capsules[-1]
    assert _capsule_name(capsule) == (b"used_dltensor_versioned" if versioned
                                      else b"used_dltensor")
    assert view.ptr == p.ptr and view.shape == (3, 4) and view.strides == (4, 1)
    assert p.deleted == 0
    del capsule
    p.capsules.clear()
    gc.collect()
    assert p.deleted == 0  # the view, not the capsule, owns the tensor now
    derived = view.view(dtype=np.int32)
    del view
    gc.collect()
    assert p.deleted == 0  # a derived view keeps the tensor alive
    assert derived.shape == (3, 4)
    del derived
    gc.collect()
    assert p.deleted == 1


def test_legacy_producer_is_asked_again_without_max_version():
    p = Producer((4,), versioned=False, max_version_ok=False)
    view = StridedMemoryView.from_dlpack(p, stream_ptr=0)
    assert p.calls == [{"stream": None, "max_version": (1, 3)},
                       {"stream": None, "max_version": None}]
    assert view.shape == (4,)


def test_versioned_fields():
    p = Producer((2,), byte_offset=8, flags=1)  # DLPACK_FLAG_BITMASK_READ_ONLY
    view = StridedMemoryView.from_dlpack(p, stream_ptr=-1)
    assert view.ptr == p.ptr + 8
    assert view.readonly is True
    assert view.strides is None  # no strides from the producer: C-contiguous
    layout = view._layout
    assert layout.strides is None and layout.strides_in_bytes is None
    assert layout.is_contiguous_c and layout.is_contiguous_any


@pytest.mark.parametrize("code,bits,dtype", [
    (kDLBool, 8, "bool"), (kDLInt, 8, "int8"), (kDLInt, 16, "int16"), (kDLInt, 32, "int32"),
    (kDLInt, 64, "int64"), (kDLUInt, 8, "uint8"), (kDLUInt, 16, "uint16"),
    (kDLUInt, 32, "uint32"), (kDLUInt, 64, "uint64"), (kDLFloat, 16, "float16"),
    (kDLFloat, 32, "float32"), (kDLFloat, 64, "float64"), (kDLComplex, 64, "complex64"),
    (kDLComplex, 128, "complex128")])
def test_dlpack_element_types(code, bits, dtype):
    view = StridedMemoryView.from_dlpack(Producer((2,), code=code, bits=bits), stream_ptr=-1)
    assert view.dtype == np.dtype(dtype)


def test_bfloat16():
    p = Producer((2,), code=kDLBfloat, bits=16)
    try:
        import ml_dtypes
    except ImportError:
        with pytest.raises(TypeError, match="ml_dtypes"):
            StridedMemoryView.from_dlpack(p, stream_ptr=-1)
        assert p.deleted == 1
    else:
        view = StridedMemoryView.from_dlpack(p, stream_ptr=-1)
        assert view.dtype == np.dtype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("kwargs,exc,match", [
    ({"major": 2}, BufferError, "major version 2"),
    ({"lanes": 4}, TypeError, "lanes=4"),
    ({"code": kDLComplex, "bits": 16}, TypeError, "code=5, bits=16"),
    ({"code": kDLFloat, "bits": 24}, TypeError, "code=2, bits=24"),
    ({"code": kDLFloat, "bits": 128}, TypeError, "code=2, bits=128"),
    ({"code": 8, "bits": 8}, TypeError, "code=8"),
    ({"device": (4, 0)}, BufferError, "device type 4"),
    ({"device": (10, 0)}, BufferError, "device type 10"),
    ({"ndim": -1}, BufferError, "negative"),
    ({"null_shape": True}, BufferError, "no shape"),
])
def test_refused_tensors_are_deleted(kwargs, exc, match):
    p = Producer((3,), **kwargs)
    with pytest.raises(exc, match=match):
        StridedMemoryView.from_dlpack(p, stream_ptr=-1)
    gc.collect()
    assert p.deleted == 1


def test_negative_extent_refused():
    p = Producer((2, -1))
    with pytest.raises(BufferError, match="extent -1 is negative"):
        StridedMemoryView.from_dlpack(p, stream_ptr=-1)
    assert p.deleted == 1


def test_consumed_capsule_refused():
    p = Producer((3,))
    capsule = p.__dlpack__()

    class Again:
        def __dlpack_device__(self):
            return (kDLCPU, 0)

        def __dlpack__(self, **kwargs):
            return capsule

    StridedMemoryView.from_dlpack(Again(), stream_ptr=-1)
    with pytest.raises(BufferError, match="already consumed"):
        StridedMemoryView.from_dlpack(Again(), stream_ptr=-1)
    gc.collect()
    assert p.deleted == 1


def test_not_a_capsule_refused():
    class Bad:
        def __init__(self, value):
            self.value = value

        def __dlpack_device__(self):
            return (kDLCPU, 0)

        def __dlpack__(self, **kwargs):
            return self.value

    with pytest.raises(BufferError, match="not a capsule"):
        StridedMemoryView.from_dlpack(Bad(b"bytes"), stream_ptr=-1)
    other = _capsule_new(ctypes.addressof(ctypes.c_int(0)), b"something_else", None)
    with pytest.raises(BufferError, match="something_else"):
        StridedMemoryView.from_dlpack(Bad(other), stream_ptr=-1)


def test_no_protocol_refused():
    with pytest.raises(BufferError, match="does not support DLPack"):
        StridedMemoryView.from_dlpack(object(), stream_ptr=-1)
    with pytest.raises(BufferError, match="supports neither"):
        StridedMemoryView.from_any_interface(object(), stream_ptr=-1)
    with pytest.raises(BufferError, match="has no __cuda_array_interface__"):
        StridedMemoryView.from_cuda_array_interface(object(), stream_ptr=-1)
    with pytest.raises(BufferError, match="has no __array_interface__"):
        StridedMemoryView.from_array_interface(object())


def test_exporter_kept_alive():
    class Owner(np.ndarray):
        pass

    array = np.arange(6.0).view(Owner)
    ref = weakref.ref(array)
    view = StridedMemoryView.from_dlpack(array, stream_ptr=-1)
    del array
    gc.collect()
    assert ref() is not None and view.exporting_obj is ref()
    del view
    gc.collect()
    assert ref() is None


def test_deprecated_constructor():
    array = np.arange(3.0)
    with pytest.warns(DeprecationWarning, match="from_any_interface"):
        view = StridedMemoryView(array, -1)
    assert view.shape == (3,)
    with pytest.raises(TypeError, match="already initialized"):
        view.__init__(np.arange(2.0), -1)
    assert view.shape == (3,)
    # No object: the warning, then an error that is a ValueError too (cuda.core makes an empty
    # view, whose every use raises ValueError).
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="from_dlpack") as info:
        StridedMemoryView()
    assert isinstance(info.value, ValueError)


CLASS_METHODS = {
    "from_dlpack": "(obj, stream_ptr=None)",
    "from_cuda_array_interface": "(obj, stream_ptr=None)",
    "from_array_interface": "(obj)",
    "from_any_interface": "(obj, stream_ptr=None)",
    "from_buffer": "(buffer, shape, strides=None, *, itemsize=None, dtype=None, "
                   "is_readonly=False)",
}


@pytest.mark.parametrize("name", sorted(CLASS_METHODS))
def test_class_methods_are_bound_to_the_class_and_keep_their_signatures(name):
    # Built-in methods (binding=False in _memoryview.pyx): the signature comes from
    # __text_signature__, which test_members.py cannot tell from an unreadable one.
    method = getattr(StridedMemoryView, name)
    assert method.__self__ is StridedMemoryView
    assert str(inspect.signature(method)) == CLASS_METHODS[name]
    assert not method.__doc__.startswith(name)  # the signature is not left in the text

    # Called with keywords, through the method bound once.
    if name in ("from_dlpack", "from_any_interface"):
        view = method(obj=np.arange(4.0), stream_ptr=-1)
        assert type(view) is StridedMemoryView and view.shape == (4,)
        with pytest.raises(TypeError, match="stream"):
            method(np.arange(4.0), -1, stream_ptr=-1)


class SubView(StridedMemoryView):
    def __init__(self, *args):  # the class methods must not run it (as ours: the deprecated one)
        raise AssertionError("__init__ called")


@pytest.mark.parametrize("name", sorted(set(CLASS_METHODS) - {"from_cuda_array_interface"}))
def test_class_methods_of_a_subclass_make_the_subclass(name):
    # As under cuda.core 1.2.2: a subclass's class method returns a view of the subclass.
    # from_cuda_array_interface needs the driver: test_cai_view_of_a_subclass.
    assert getattr(SubView, name).__self__ is SubView
    array = np.arange(6.0)
    if name == "from_buffer":
        view = SubView.from_buffer(NumpyMemoryResource().allocate(48), (6,), dtype=np.float64)
    elif name == "from_array_interface":
        view = SubView.from_array_interface(array)
    else:
        view = getattr(SubView, name)(array, -1)
    assert type(view) is SubView and view.shape == (6,)


# -- the array interfaces -------------------------------------------------------------------------

@pytest.mark.parametrize("array", ARRAYS, ids=ARRAY_IDS)
def test_array_interface(array):
    view = StridedMemoryView.from_array_interface(array)
    info = array.__array_interface__
    assert view.ptr == info["data"][0]
    assert view.shape == array.shape and view.dtype == array.dtype
    expected = None if info["strides"] is None else _elements(info["strides"], array.itemsize)
    assert view.strides == expected
    assert view.device_id == -1 and not view.is_device_accessible
    # The dict path (an object that is not exactly an ndarray) gives the same view.
    other = StridedMemoryView.from_array_interface(array.view(SubArray))
    assert (other.ptr, other.shape, other.strides, other.dtype) == (
        view.ptr, view.shape, view.strides, view.dtype)


@pytest.mark.parametrize("dtype", [np.dtype([("a", "<i4"), ("b", "<f8")]), np.dtype("V8"),
                                   np.dtype("M8[s]"), np.dtype(">f4"), np.dtype("S3")])
def test_array_interface_takes_any_numpy_dtype(dtype):
    array = np.zeros((2, 3), dtype=dtype)[:, ::2]
    for obj in (array, array.view(SubArray)):
        view = StridedMemoryView.from_array_interface(obj)
        assert view.dtype == dtype
        assert view.strides == _elements(array.strides, dtype.itemsize)


class Interface:
    def __init__(self, **d):
        self.__array_interface__ = d
        self.__cuda_array_interface__ = d


def _iface(**over):
    d = {"shape": (2, 3), "typestr": "<f4", "data": (0x1000, False), "version": 3}
    d.update(over)
    return Interface(**d)


@pytest.mark.parametrize("over,exc,match", [
    ({"mask": np.zeros(1)}, BufferError, "mask"),
    ({"data": b"raw"}, BufferError, "'data' must be a"),
    ({"data": ("0x1000", False)}, TypeError, "pointer must be an int"),
    ({"typestr": "<q7"}, TypeError, "not a NumPy type"),
    ({"typestr": 4}, TypeError, "'typestr' must be a str"),
    ({"shape": [2, 3]}, TypeError, "shape must be a tuple"),
    ({"shape": (2, -3)}, TypeError, "non-negative"),
    ({"strides": (12, 2)}, BufferError, "not a whole number"),
    ({"strides": (12,)}, TypeError, "differ in length"),
    ({"typestr": "|V0"}, TypeError, "0 bytes"),
])
def test_array_interface_refusals(over, exc, match):
    with pytest.raises(exc, match=match):
        StridedMemoryView.from_array_interface(_iface(**over))


def test_array_interface_fields():
    view = StridedMemoryView.from_array_interface(
        _iface(strides=(4, 8), data=(0x2000, True)))
    assert (view.ptr, view.shape, view.strides, view.readonly) == (0x2000, (2, 3), (1, 2), True)
    assert view._layout.strides_in_bytes == (4, 8)
    assert view._layout.is_contiguous_f and not view._layout.is_contiguous_c
    missing = Interface(shape=(2,), data=(0, False))
    with pytest.raises(TypeError, match="lacks"):
        StridedMemoryView.from_array_interface(missing)


def _fresh(key):
    """``key`` as a new str object, equal to the literal but not the interned one."""
    return "".join(list(key))


def _with_dict(d):
    obj = Interface()
    obj.__array_interface__ = d  # this very dict: no keyword copy between
    return obj


@pytest.mark.parametrize("spell", ["literal", "fresh", "extra key"])
def test_interface_keys_read_in_one_pass_or_by_look_up(spell):
    """The dict is read in one pass when its keys are the interned literals, else key by key:
    both give the same view and the same refusals."""
    d = {"shape": (2, 3), "typestr": "<f4", "data": (0x2000, True), "strides": (4, 8),
         "version": 3}
    if spell == "fresh":
        d = {_fresh(k): v for k, v in d.items()}
        assert not any(k is sys.intern(k) for k in d)
    elif spell == "extra key":
        d["producer_note"] = "ignored"
    view = StridedMemoryView.from_array_interface(_with_dict(d))
    assert (view.ptr, view.shape, view.strides, view.readonly) == (0x2000, (2, 3), (1, 2), True)
    with pytest.raises(BufferError, match="mask"):
        StridedMemoryView.from_array_interface(_with_dict({**d, _fresh("mask"): 1}))
    del d[_fresh("data")]
    with pytest.raises(TypeError, match="lacks"):
        StridedMemoryView.from_array_interface(_with_dict(d))


def test_cuda_array_interface_checks_before_the_driver():
    """These refusals need no GPU: they come before the driver is asked about the pointer."""
    with pytest.raises(BufferError, match="'stream' is 0"):
        StridedMemoryView.from_cuda_array_interface(_iface(stream=0), stream_ptr=-1)
    with pytest.raises(TypeError, match="'stream' must be an int"):
        StridedMemoryView.from_cuda_array_interface(_iface(stream="1"), stream_ptr=-1)
    with pytest.raises(BufferError, match="stream_ptr=None"):
        StridedMemoryView.from_cuda_array_interface(_iface())
    # A consumer stream is made a handle for cuStreamWaitEvent: the values no handle has are
    # refused as for DLPack, before the driver.
    for bad in (-5, 2**64):
        with pytest.raises(BufferError, match=f"stream_ptr={bad} is not a stream"):
            StridedMemoryView.from_cuda_array_interface(_iface(stream=7), stream_ptr=bad)
    with pytest.raises(BufferError, match="mask"):
        StridedMemoryView.from_cuda_array_interface(_iface(mask=1), stream_ptr=-1)

    class NotADict:
        __cuda_array_interface__ = [("shape", (1,))]

    with pytest.raises(TypeError, match="must be a dict"):
        StridedMemoryView.from_cuda_array_interface(NotADict(), stream_ptr=-1)


def test_from_any_interface_prefers_dlpack():
    array = np.arange(4.0)
    view = StridedMemoryView.from_any_interface(array, stream_ptr=-1)
    assert view.exporting_obj is array  # DLPack, not the array interface
    assert view.strides == _exported_numpy_strides(array)

    class Both(Producer):
        __cuda_array_interface__ = {"shape": (1,)}  # never read

    p = Both((4,))
    StridedMemoryView.from_any_interface(p, stream_ptr=-1)
    assert len(p.calls) == 1


# -- layout ----------------------------------------------------------------------------------

def test_layout_values():
    a = np.zeros((2, 3, 4), dtype=np.int16)
    cases = [
        (a, True, False, True),
        (a.T, False, True, True),
        (a.transpose(1, 0, 2), False, False, True),
        (a[:, :, ::2], False, False, False),
        (a[:, :1, :], False, False, False),   # extent-1 dims still count for the others
        (a[:1, :1, :1], True, True, True),
        (np.zeros((0, 3)), True, True, True),
        (np.broadcast_to(np.zeros(4), (3, 4)), False, False, False),
        (a[:, ::-1], False, False, False),
    ]
    for array, c, f, any_ in cases:
        layout = StridedMemoryView.from_dlpack(array, stream_ptr=-1)._layout
        assert (layout.is_contiguous_c, layout.is_contiguous_f, layout.is_contiguous_any) == (
            c, f, any_), array.strides
        exported = _exported_numpy_strides(array)
        assert layout.strides_in_bytes == (None if exported is None else array.strides)
        assert layout.shape == array.shape and layout.ndim == array.ndim


@pytest.mark.parametrize("array", ARRAYS, ids=ARRAY_IDS)
def test_layout_matches_cuda_core(array):
    """The values numba-cuda reads are cuda.core 1.2's, for the same producer."""
    cc = pytest.importorskip("cuda.core.utils")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = cc.StridedMemoryView.from_dlpack(array, stream_ptr=-1)
    ours = StridedMemoryView.from_dlpack(array, stream_ptr=-1)
    for name in ("ptr", "shape", "strides", "dtype", "size", "readonly", "device_id",
                 "is_device_accessible"):
        assert getattr(ours, name) == getattr(theirs, name), name
    for name in ("strides_in_bytes", "is_contiguous_c", "is_contiguous_f", "is_contiguous_any"):
        assert getattr(ours._layout, name) == getattr(theirs._layout, name), name


def test_numba_reads_strides_in_bytes_or_computes_them():
    """numba-cuda packs ``layout.strides_in_bytes or strides_from_shape(...)``: with no strides
    from the producer it must get None (never a wrong tuple) and C order."""
    view = StridedMemoryView.from_dlpack(Producer((3, 4)), stream_ptr=-1)
    layout = view._layout
    assert layout.strides_in_bytes is None
    assert layout.is_contiguous_c and not layout.is_contiguous_f


# -- from_buffer and view() ----------------------------------------------------------------------

@pytest.mark.parametrize("flags,device_id,accessible", [
    ({}, -1, False),
    ({"device_accessible": True, "device_id": 0}, 0, True),
])
def test_from_buffer(flags, device_id, accessible):
    buf = NumpyMemoryResource(**flags).allocate(64)
    view = StridedMemoryView.from_buffer(buf, (4, 4), dtype=np.float32)
    assert view.ptr == int(buf.handle) and view.shape == (4, 4) and view.strides is None
    assert view.dtype == np.float32 and view.exporting_obj is buf
    assert view.device_id == device_id and view.is_device_accessible is accessible
    assert view.readonly is False
    strided = StridedMemoryView.from_buffer(buf, (4, 2), (4, 2), itemsize=4, is_readonly=True)
    assert strided.dtype is None and strided.strides == (4, 2) and strided.readonly is True
    assert strided._layout.strides_in_bytes == (16, 8)


def test_from_buffer_refusals():
    buf = NumpyMemoryResource().allocate(64)
    with pytest.raises(TypeError, match="buffer must be a Buffer"):
        StridedMemoryView.from_buffer(np.zeros(4), (4,), itemsize=1)
    with pytest.raises(ValueError, match="pass itemsize or dtype"):
        StridedMemoryView.from_buffer(buf, (4,))
    with pytest.raises(ValueError, match="does not match dtype"):
        StridedMemoryView.from_buffer(buf, (4,), itemsize=2, dtype=np.float32)
    with pytest.raises(ValueError, match="itemsize must be >= 1, got 0"):
        StridedMemoryView.from_buffer(buf, (4,), itemsize=0)
    with pytest.raises(TypeError, match="itemsize must be an int, not str"):
        StridedMemoryView.from_buffer(buf, (4,), itemsize="4")
    with pytest.raises(TypeError, match="itemsize must be an int, not numpy.bool"):
        StridedMemoryView.from_buffer(buf, (4,), itemsize=np.True_)
    assert StridedMemoryView.from_buffer(buf, (4,), itemsize=np.int64(4))._layout.itemsize == 4
    with pytest.raises(ValueError, match="spans bytes \\[0, 68\\)"):
        StridedMemoryView.from_buffer(buf, (17,), dtype=np.float32)
    with pytest.raises(ValueError, match="spans bytes"):
        StridedMemoryView.from_buffer(buf, (2, 2), (-1, 1), dtype=np.float32)
    with pytest.raises(ValueError, match="non-negative"):
        StridedMemoryView.from_buffer(buf, (-1,), dtype=np.float32)
    with pytest.raises(ValueError, match="differ in length"):
        StridedMemoryView.from_buffer(buf, (2, 2), (1,), dtype=np.float32)
    with pytest.raises(TypeError, match="shape must be a tuple"):
        StridedMemoryView.from_buffer(buf, 4, dtype=np.float32)
    buf.close()
    with pytest.raises(ValueError, match="closed"):
        StridedMemoryView.from_buffer(buf, (4,), dtype=np.float32)


def test_view_method():
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    view = StridedMemoryView.from_dlpack(array, stream_ptr=-1)
    as_int = view.view(dtype=np.int32)
    assert as_int.dtype == np.int32 and as_int.shape == (3, 4) and as_int.ptr == view.ptr
    assert as_int.exporting_obj is array
    with pytest.raises(ValueError, match="pass a layout"):
        view.view(dtype=np.float64)
    column = StridedMemoryView.from_dlpack(array[:, :1], stream_ptr=-1)
    picked = view.view(layout=column._layout)
    assert picked.shape == (3, 1) and picked.strides == (4, 1)
    wide = StridedMemoryView.from_dlpack(np.zeros((4, 4), np.float32), stream_ptr=-1)
    with pytest.raises(ValueError, match="outside"):
        view.view(layout=wide._layout)
    with pytest.raises(ValueError, match="itemsize"):
        view.view(layout=column._layout, dtype=np.float64)
    with pytest.raises(TypeError, match="layout must be"):
        view.view(layout=(3, 4))
    assert hasattr(view, "copy_from") and hasattr(view, "as_tensor_map")


def test_repr():
    text = repr(StridedMemoryView.from_dlpack(np.zeros((2, 2)), stream_ptr=-1))
    assert "shape=(2, 2)" in text and "float64" in text and "device_id=-1" in text


def test_many_dimensions():
    array = np.zeros((1,) * 12 + (2,), dtype=np.int8)
    for obj in (array, array.view(SubArray)):
        view = StridedMemoryView.from_dlpack(obj, stream_ptr=-1)
        assert view.shape == array.shape
        assert view.strides == _exported_numpy_strides(array)


# -- through Buffer's DLPack export: host, pinned and managed device types -----------------------

@pytest.mark.parametrize("flags,device_id,accessible", [
    ({}, -1, False),                                                     # kDLCPU
    ({"device_accessible": True}, 0, True),                              # kDLCUDAHost
    ({"device_accessible": True, "managed": True, "device_id": 0}, 0, True),  # kDLCUDAManaged
])
def test_buffer_exports(flags, device_id, accessible):
    buf = NumpyMemoryResource(**flags).allocate(32)
    view = StridedMemoryView.from_dlpack(buf, stream_ptr=-1)
    assert view.ptr == int(buf.handle) and view.shape == (32,) and view.dtype == np.int8
    assert view.device_id == device_id and view.is_device_accessible is accessible
    assert view.exporting_obj is buf


# -- launch packing ------------------------------------------------------------------------------

def test_launch_packs_a_view_as_its_pointer():
    p = Producer((4,), device=(kDLCUDA, 0))
    view = StridedMemoryView.from_dlpack(p, stream_ptr=-1)
    assert _packed_arguments(view) == [view.ptr.to_bytes(8, sys.byteorder)]
    assert _packed_arguments(view, declared=["float*"]) == [view.ptr.to_bytes(8, sys.byteorder)]
    with pytest.raises(TypeError, match="kernel argument 0"):
        _packed_arguments(view, declared=["float"])
    with pytest.raises(TypeError, match="host memory that no device can access"):
        _packed_arguments(StridedMemoryView.from_dlpack(np.zeros(3), stream_ptr=-1))


# -- the decorator ----------------------------------------------------------------------------

def test_decorator():
    calls = []

    @args_viewable_as_strided_memory((0, 2))
    def f(a, b, c, *, stream_ptr=-1):
        """doc"""
        calls.append((a, b, c))
        return a.view(stream_ptr), c.view(stream_ptr)

    x, y = np.arange(3.0), np.arange(4, dtype=np.int8)
    va, vc = f(x, "untouched", y)
    assert isinstance(va, StridedMemoryView) and isinstance(vc, StridedMemoryView)
    assert va.shape == (3,) and vc.dtype == np.int8 and va.exporting_obj is x
    assert calls[0][1] == "untouched"
    assert f.__name__ == "f" and f.__doc__ == "doc"
    # A view passed in comes out as itself.
    assert f(va, None, vc)[0] is va
    with pytest.raises(TypeError, match="argument 2 is to be viewed"):
        f(x, y)
    with pytest.raises(TypeError, match="arg_indices must be a tuple"):
        args_viewable_as_strided_memory([0])
    with pytest.raises(TypeError, match="each item of arg_indices must be an int, not str"):
        args_viewable_as_strided_memory(("0",))
    with pytest.raises(TypeError, match="each item of arg_indices must be an int, not numpy.bool"):
        args_viewable_as_strided_memory((np.True_,))
    # Indices go through the package's int check: NumPy integers are ints.
    g = args_viewable_as_strided_memory((np.int64(0),))(lambda a: a)
    assert g(x).view(-1).exporting_obj is x


def test_docstring_example_runs():
    """The decorator's documented example, with cuda_core in place of cuda.core (CPU form:
    a NumPy array and -1 for the stream); the GPU test runs it on a real stream."""
    @args_viewable_as_strided_memory((1,))
    def my_func(arg0, arg1, arg2, stream_handle):
        view = arg1.view(stream_handle)
        assert isinstance(view, StridedMemoryView)
        return view

    assert my_func(None, np.ones(5), None, -1).size == 5


def test_exit_with_live_views_is_clean():
    code = ("import numpy as np\n"
            "from cuda_core.utils import StridedMemoryView as S\n"
            "class A(np.ndarray): pass\n"
            "keep = [S.from_dlpack(np.zeros(4).view(A), stream_ptr=-1) for _ in range(3)]\n"
            "keep.append(S.from_array_interface(np.zeros(2)))\n"
            "print('ok')\n")
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok" and result.stderr == ""


# -- GPU ---------------------------------------------------------------------------------------

SLOW_AND_COPY = r"""
extern "C" __global__ void slow_fill(float* out, unsigned int n, float value, long long cycles) {
    // One block: spin first, then write, so that a reader that does not wait sees old data.
    long long start = clock64();
    while (clock64() - start < cycles) { }
    for (unsigned int i = threadIdx.x; i < n; i += blockDim.x) out[i] = value;
}
extern "C" __global__ void copy(const float* in, float* out, unsigned int n) {
    for (unsigned int i = threadIdx.x; i < n; i += blockDim.x) out[i] = in[i];
}
extern "C" __global__ void axpy(float a, const float* x, float* y, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


@pytest.fixture
def kernels(dev):
    from cuda_core import Program, ProgramOptions

    code = Program(SLOW_AND_COPY, "c++",
                   options=ProgramOptions(arch=f"sm_{dev.arch}")).compile("cubin")
    return {name: code.get_kernel(name) for name in ("slow_fill", "copy", "axpy")}


def _cycles(dev, ms):
    return int(dev.properties.clock_rate) * ms  # clock_rate is in kHz


class CAIArray:
    """A device array that only speaks the CUDA Array Interface, with a producer stream."""

    def __init__(self, buf, n, stream_handle):
        self.buf = buf
        self.__cuda_array_interface__ = {
            "shape": (n,), "typestr": "<f4", "data": (int(buf.handle), False), "version": 3,
            "strides": None, "stream": stream_handle}


def _read_floats(buf, n, stream):
    mr = NumpyMemoryResource()
    out = mr.allocate(4 * n)
    buf.copy_to(out, stream=stream)
    stream.sync()
    return mr.array(out).view(np.float32).copy()


@pytest.mark.gpu
def test_cai_view_of_a_subclass(dev):
    buf = dev.allocate(24, stream=dev.default_stream)
    view = SubView.from_cuda_array_interface(CAIArray(buf, 6, None), stream_ptr=-1)
    assert type(view) is SubView and view.ptr == int(buf.handle) and view.shape == (6,)
    buf.close()


@pytest.mark.gpu
def test_cai_stream_ordering_waits_for_a_slow_producer(dev, kernels):
    from cuda_core import LaunchConfig, launch

    n = 1024
    producer, consumer = dev.create_stream(), dev.create_stream()
    src = dev.allocate(4 * n, stream=producer)
    dst = dev.allocate(4 * n, stream=consumer)
    src.fill(0, stream=producer)
    dst.fill(0, stream=consumer)
    producer.sync()
    consumer.sync()
    cfg = LaunchConfig(grid=1, block=256)
    launch(producer, cfg, kernels["slow_fill"], src, np.uint32(n), np.float32(7.5),
           np.int64(_cycles(dev, 100)))
    view = StridedMemoryView.from_cuda_array_interface(
        CAIArray(src, n, int(producer.handle)), stream_ptr=int(consumer.handle))
    assert view.ptr == int(src.handle) and view.device_id == dev.device_id
    launch(consumer, cfg, kernels["copy"], view, dst, np.uint32(n))
    consumer.sync()
    assert producer.is_done  # the consumer's work could not run before the producer's
    np.testing.assert_array_equal(_read_floats(dst, n, consumer), np.full(n, 7.5, np.float32))
    src.close()
    dst.close()
    producer.sync()
    consumer.sync()
    producer.close()
    consumer.close()


@pytest.mark.gpu
def test_exchange_api_stream_ordering_waits_for_a_slow_producer(dev, kernels):
    """PyTorch exports through its C exchange table, which orders no stream: the view makes the
    consumer's stream wait for PyTorch's current stream."""
    from cuda_core import LaunchConfig, launch

    torch = pytest.importorskip("torch")
    if not hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):
        pytest.skip(f"PyTorch {torch.__version__} has no DLPack C exchange API")
    n = 1024
    producer, consumer = dev.create_stream(), dev.create_stream()
    t = torch.zeros(n, dtype=torch.float32, device=f"cuda:{dev.device_id}")
    torch.cuda.synchronize()
    dst = dev.allocate(4 * n, stream=consumer)
    dst.fill(0, stream=consumer)
    consumer.sync()
    cfg = LaunchConfig(grid=1, block=256)
    launch(producer, cfg, kernels["slow_fill"], StridedMemoryView.from_dlpack(t, stream_ptr=-1),
           np.uint32(n), np.float32(7.5), np.int64(_cycles(dev, 100)))
    with torch.cuda.stream(torch.cuda.ExternalStream(int(producer.handle))):
        view = StridedMemoryView.from_dlpack(t, stream_ptr=int(consumer.handle))
    assert view.ptr == t.data_ptr() and view.exporting_obj is t
    launch(consumer, cfg, kernels["copy"], view, dst, np.uint32(n))
    consumer.sync()
    assert producer.is_done  # the consumer's work could not run before the producer's
    np.testing.assert_array_equal(_read_floats(dst, n, consumer), np.full(n, 7.5, np.float32))
    dst.close()
    consumer.sync()
    producer.close()
    consumer.close()


@pytest.mark.gpu
def test_cai_stream_ptr_minus_one_does_not_wait(dev, kernels):
    from cuda_core import LaunchConfig, launch

    n = 256
    producer, consumer = dev.create_stream(), dev.create_stream()
    src = dev.allocate(4 * n, stream=producer)
    launch(producer, LaunchConfig(grid=1, block=64), kernels["slow_fill"], src, np.uint32(n),
           np.float32(1.0), np.int64(_cycles(dev, 1000)))
    StridedMemoryView.from_cuda_array_interface(CAIArray(src, n, int(producer.handle)),
                                                stream_ptr=-1)
    consumer.sync()  # nothing made it wait: returns while the producer spins (1 s)
    assert not producer.is_done
    producer.sync()
    src.close()
    producer.sync()
    producer.close()
    consumer.close()


@pytest.mark.gpu
def test_cai_default_streams(dev):
    """A producer on the legacy default stream, a consumer on the per-thread one."""
    buf = dev.allocate(64, stream=dev.default_stream)
    view = StridedMemoryView.from_cuda_array_interface(CAIArray(buf, 16, 1), stream_ptr=2)
    assert view.ptr == int(buf.handle) and view.is_device_accessible
    dev.sync()


@pytest.mark.gpu
def test_cai_unknown_pointer_refused(dev):
    fake = Interface(shape=(4,), typestr="<f4", data=(0x10, False), version=3)  # never mapped
    with pytest.raises(BufferError, match="does not know the data pointer"):
        StridedMemoryView.from_cuda_array_interface(fake, stream_ptr=-1)


@pytest.mark.gpu
def test_from_buffer_on_device(dev, stream):
    buf = dev.allocate(256, stream=stream)
    view = StridedMemoryView.from_buffer(buf, (8, 8), dtype=np.float32)
    assert view.device_id == dev.device_id and view.is_device_accessible
    assert view.exporting_obj is buf and view.ptr == int(buf.handle)
    with pytest.raises(ValueError, match="spans bytes"):
        StridedMemoryView.from_buffer(buf, (9, 8), dtype=np.float32)
    stream.sync()


@pytest.mark.gpu
def test_pinned_and_managed_memory(dev, stream):
    from cuda_core import LegacyPinnedMemoryResource, ManagedMemoryResource

    pinned = LegacyPinnedMemoryResource().allocate(64)
    view = StridedMemoryView.from_dlpack(pinned, stream_ptr=int(stream.handle))
    assert view.is_device_accessible and view.device_id == 0 and view.ptr == int(pinned.handle)
    managed = ManagedMemoryResource().allocate(64, stream=stream)
    view = StridedMemoryView.from_dlpack(managed, stream_ptr=int(stream.handle))
    assert view.is_device_accessible and view.device_id == 0
    assert view.ptr == int(managed.handle)
    stream.sync()


def _exported_strides(array):
    """The strides (in elements) in the versioned DLPack capsule ``array`` exports, read raw;
    None when the capsule has none."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    capsule = array.__dlpack__(stream=-1, max_version=(1, 3))
    tensor = ctypes.cast(get(capsule, b"dltensor_versioned"),
                         ctypes.POINTER(DLManagedTensorVersioned)).contents.dl_tensor
    if not tensor.strides:
        return None
    return tuple(tensor.strides[i] for i in range(tensor.ndim))  # the capsule deletes itself


@pytest.mark.gpu
def test_cupy_arrays(dev, stream):
    cp = pytest.importorskip("cupy")
    base = cp.arange(24, dtype=cp.float32).reshape(4, 6)
    for array in (base, base.T, base[:, ::2], base[::-1]):
        want_strides = tuple(s // array.itemsize for s in array.strides)
        exported = _exported_strides(array)
        for make in (StridedMemoryView.from_dlpack, StridedMemoryView.from_any_interface,
                     StridedMemoryView.from_cuda_array_interface):
            try:
                view = make(array, stream_ptr=int(stream.handle))
            except BufferError as exc:
                # CuPy 14 exports a negative stride divided as an unsigned number
                # (4611686018427387898 for -6): a view of that would reach 2**64 bytes away.
                assert make is not StridedMemoryView.from_cuda_array_interface
                assert "spans more than 2**63 bytes" in str(exc)
                assert exported is not None and exported != want_strides
                continue
            assert view.ptr == array.data.ptr and view.shape == array.shape
            assert view.dtype == np.float32 and view.device_id == dev.device_id
            assert view.is_device_accessible and view.exporting_obj is array
            if view.strides is None:  # a producer may give none for a C-contiguous array
                assert array.flags.c_contiguous
            else:
                assert view.strides == want_strides
    reversed_rows = base[::-1]
    if _exported_strides(reversed_rows) != (-6, 1):  # CuPy's wrapped export, given as is
        class Exported:
            def __init__(self, capsule):
                self.capsule = capsule

            def __dlpack__(self, **kwargs):
                return self.capsule

            def __dlpack_device__(self):
                return reversed_rows.__dlpack_device__()

        capsule = reversed_rows.__dlpack__(stream=-1, max_version=(1, 3))
        with pytest.raises(BufferError, match="spans more than 2"):
            StridedMemoryView.from_dlpack(Exported(capsule), stream_ptr=-1)
    for dtype in ("bool", "int8", "uint16", "int32", "uint64", "float16", "float64",
                  "complex64", "complex128"):
        view = StridedMemoryView.from_dlpack(cp.zeros(3, dtype=dtype), stream_ptr=-1)
        assert view.dtype == np.dtype(dtype)
    empty = StridedMemoryView.from_cuda_array_interface(cp.zeros((0, 4), cp.float32),
                                                        stream_ptr=-1)
    assert empty.shape == (0, 4) and empty.size == 0


@pytest.mark.gpu
def test_torch_tensors(dev, stream):
    torch = pytest.importorskip("torch")
    t = torch.arange(24, dtype=torch.float32, device="cuda:0").reshape(4, 6)
    for tensor in (t, t.t(), t[:, ::2]):
        for make in (StridedMemoryView.from_dlpack, StridedMemoryView.from_any_interface):
            view = make(tensor, stream_ptr=int(stream.handle))
            assert view.ptr == tensor.data_ptr() and view.shape == tuple(tensor.shape)
            assert view.strides == tuple(tensor.stride()) and view.dtype == np.float32
            assert view.device_id == 0 and view.exporting_obj is tensor
    view = StridedMemoryView.from_cuda_array_interface(t, stream_ptr=-1)
    assert view.ptr == t.data_ptr() and view.shape == (4, 6)
    bf = torch.zeros(4, dtype=torch.bfloat16, device="cuda:0")
    try:
        import ml_dtypes
    except ImportError:
        with pytest.raises(TypeError, match="ml_dtypes"):
            StridedMemoryView.from_dlpack(bf, stream_ptr=-1)
    else:
        assert StridedMemoryView.from_dlpack(bf, stream_ptr=-1).dtype == ml_dtypes.bfloat16
    torch.cuda.synchronize()


@pytest.mark.gpu
def test_numba_device_arrays(dev, stream):
    numba_cuda = pytest.importorskip("numba.cuda")
    host = np.arange(12, dtype=np.float64).reshape(3, 4)
    array = numba_cuda.to_device(host)
    for make in (StridedMemoryView.from_cuda_array_interface,
                 StridedMemoryView.from_any_interface):
        view = make(array, stream_ptr=-1)
        assert view.ptr == array.device_ctypes_pointer.value
        assert view.shape == (3, 4) and view.dtype == np.float64
        assert view.device_id == dev.device_id and view.is_device_accessible
        assert view._layout.is_contiguous_c
        assert view.strides in (None, (4, 1))
    numba_cuda.synchronize()


@pytest.mark.gpu
def test_jax_arrays(dev, stream):
    import os

    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jax = pytest.importorskip("jax")
    try:
        gpu = jax.devices("gpu")[0]
    except RuntimeError as exc:
        pytest.skip(f"JAX has no GPU backend here: {exc}")
    x = jax.device_put(np.arange(8, dtype=np.float32), gpu)
    x.block_until_ready()
    view = StridedMemoryView.from_dlpack(x, stream_ptr=int(stream.handle))
    assert view.shape == (8,) and view.dtype == np.float32 and view.is_device_accessible
    assert view.ptr == x.unsafe_buffer_pointer()
    stream.sync()


@pytest.mark.gpu
def test_launch_with_views(dev, stream, kernels):
    from cuda_core import LaunchConfig, launch

    cfg = LaunchConfig(grid=4, block=256)
    n = 1000
    cp = pytest.importorskip("cupy")
    x = cp.arange(n, dtype=cp.float32)
    y = cp.ones(n, dtype=cp.float32)
    dev.sync()
    vx = StridedMemoryView.from_dlpack(x, stream_ptr=int(stream.handle))
    vy = StridedMemoryView.from_cuda_array_interface(y, stream_ptr=int(stream.handle))
    launch(stream, cfg, kernels["axpy"], np.float32(2), vx, vy, np.uint64(n))
    stream.sync()
    assert cp.allclose(y, 2 * cp.arange(n, dtype=cp.float32) + 1)
    with pytest.raises(TypeError, match="host memory"):
        launch(stream, cfg, kernels["axpy"], np.float32(2),
               StridedMemoryView.from_dlpack(np.zeros(n, np.float32), stream_ptr=-1), vy,
               np.uint64(n))


@pytest.mark.gpu
def test_launch_with_views_of_torch_and_numba(dev, stream, kernels):
    from cuda_core import LaunchConfig, launch

    cfg = LaunchConfig(grid=4, block=256)
    n = 1000
    torch = pytest.importorskip("torch")
    x = torch.arange(n, dtype=torch.float32, device="cuda:0")
    y = torch.full((n,), 3.0, device="cuda:0")
    torch.cuda.synchronize()
    launch(stream, cfg, kernels["axpy"], np.float32(-1),
           StridedMemoryView.from_dlpack(x, stream_ptr=int(stream.handle)),
           StridedMemoryView.from_dlpack(y, stream_ptr=int(stream.handle)), np.uint64(n))
    stream.sync()
    assert torch.equal(y, 3.0 - torch.arange(n, dtype=torch.float32, device="cuda:0"))
    numba_cuda = pytest.importorskip("numba.cuda")
    a = numba_cuda.to_device(np.arange(n, dtype=np.float32))
    b = numba_cuda.to_device(np.zeros(n, dtype=np.float32))
    numba_cuda.synchronize()
    launch(stream, cfg, kernels["axpy"], np.float32(1),
           StridedMemoryView.from_cuda_array_interface(a, stream_ptr=int(stream.handle)),
           StridedMemoryView.from_cuda_array_interface(b, stream_ptr=int(stream.handle)),
           np.uint64(n))
    stream.sync()
    np.testing.assert_array_equal(b.copy_to_host(), np.arange(n, dtype=np.float32))


@pytest.mark.gpu
def test_tutorial_snippet(dev, stream):
    """The documented decorator example, verbatim with cuda_core for cuda.core."""
    cp = pytest.importorskip("cupy")
    from cuda_core import Stream
    from cuda_core.utils import StridedMemoryView, args_viewable_as_strided_memory

    @args_viewable_as_strided_memory((1,))
    def my_func(arg0, arg1, arg2, stream: Stream):
        # arg1 can be any object supporting DLPack or CUDA Array Interface
        view = arg1.view(stream.handle)
        assert isinstance(view, StridedMemoryView)
        return view

    array = cp.ones(16, dtype=cp.float32)
    view = my_func(None, array, None, stream)
    assert view.ptr == array.data.ptr and view.shape == (16,)
    stream.sync()


@pytest.mark.gpu
def test_launch_with_a_view_runs_no_python_function(dev, stream, kernels):
    """A view is on launch()'s exact-type fast path, as a Buffer is."""
    from cuda_core import LaunchConfig, launch

    n = 64
    src = dev.allocate(4 * n, stream=stream)
    dst = dev.allocate(4 * n, stream=stream)
    src.fill(0x3F, stream=stream)
    dst.fill(0, stream=stream)
    vsrc = StridedMemoryView.from_buffer(src, (n,), dtype=np.float32)
    vdst = StridedMemoryView.from_buffer(dst, (n,), dtype=np.float32)
    cfg = LaunchConfig(grid=1, block=64)
    count = np.uint32(n)
    launch(stream, cfg, kernels["copy"], vsrc, vdst, count)  # first use reads the layout
    events = []

    def profiler(frame, event, arg):
        events.append((event, getattr(arg, "__name__", None) if arg is not None else
                       frame.f_code.co_name))

    sys.setprofile(profiler)
    try:
        launch(stream, cfg, kernels["copy"], vsrc, vdst, count)
    finally:
        sys.setprofile(None)
    stream.sync()
    assert not [e for e in events if e[0] == "call"]
    assert {e for e in events if e[0] == "c_call"} <= {("c_call", "launch"),
                                                       ("c_call", "setprofile")}
    expected = np.frombuffer(b"\x3f" * (4 * n), dtype=np.float32)
    np.testing.assert_array_equal(_read_floats(dst, n, stream), expected)
    src.close()
    dst.close()


# -- DLPack export of a view (issue 27, part 2) ----------------------------------------------------

def test_a_host_view_exports_itself_through_dlpack_without_a_copy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    view = StridedMemoryView.from_dlpack(a, stream_ptr=-1)
    assert view.__dlpack_device__() == (1, 0)
    b = np.from_dlpack(view)
    assert b.shape == (3, 4) and b.dtype == np.float32 and np.shares_memory(a, b)
    b[0, 0] = 42
    assert a[0, 0] == 42
    t = np.from_dlpack(StridedMemoryView.from_dlpack(a.T, stream_ptr=-1))
    assert t.strides == a.T.strides and (t == a.T).all()
    again = StridedMemoryView.from_dlpack(view, stream_ptr=-1)  # a view of a view
    assert (again.shape, again.ptr) == (view.shape, view.ptr)
    scalar = np.from_dlpack(StridedMemoryView.from_dlpack(np.full((), 7, np.int16), stream_ptr=-1))
    assert scalar.shape == () and scalar == 7


def test_the_capsule_keeps_the_view_and_its_memory_alive():
    view = StridedMemoryView.from_dlpack(np.arange(4, dtype=np.int64), stream_ptr=-1)
    ref = weakref.ref(view)
    out = np.from_dlpack(view)
    del view
    gc.collect()
    assert ref() is not None and out.tolist() == [0, 1, 2, 3]
    del out
    gc.collect()
    assert ref() is None
    StridedMemoryView.from_dlpack(np.zeros(2), stream_ptr=-1).__dlpack__()  # never consumed


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"copy": True}, BufferError, "copy=True is not supported"),
    ({"dl_device": (2, 0)}, BufferError, r"dl_device=\(2, 0\) differs from the view's device"),
    ({"stream": 5}, BufferError, "stream must be None for host memory"),
    ({"max_version": 1}, TypeError, "max_version must be a"),
])
def test_dlpack_export_arguments_are_checked(kwargs, exc, match):
    view = StridedMemoryView.from_dlpack(np.zeros(3), stream_ptr=-1)
    with pytest.raises(exc, match=r"StridedMemoryView.__dlpack__\(\): " + match):
        view.__dlpack__(**kwargs)


def test_a_read_only_view_exports_only_a_versioned_capsule():
    view = StridedMemoryView.from_dlpack(np.frombuffer(b"abcd", dtype=np.uint8), stream_ptr=-1)
    assert view.readonly
    with pytest.raises(BufferError, match="read-only, which only a versioned capsule can say"):
        view.__dlpack__()
    out = np.from_dlpack(view)  # NumPy asks for a versioned capsule
    assert not out.flags.writeable and bytes(out) == b"abcd"


def test_a_view_without_a_dlpack_dtype_is_refused():
    buf = NumpyMemoryResource().allocate(8)
    bare = StridedMemoryView.from_buffer(buf, (2,), itemsize=4)
    with pytest.raises(BufferError, match="made with an itemsize only"):
        bare.__dlpack__(max_version=(1, 0))
    swapped = StridedMemoryView.from_buffer(buf, (2,), dtype=np.dtype(">i4"))
    with pytest.raises(BufferError, match=r"dtype >i4 has no DLPack element type"):
        swapped.__dlpack__(max_version=(1, 0))


@pytest.mark.gpu
def test_a_device_view_exports_to_cupy_without_a_copy():
    cp = pytest.importorskip("cupy")
    x = cp.arange(12, dtype=cp.float32).reshape(3, 4)
    cp.cuda.get_current_stream().synchronize()
    view = StridedMemoryView.from_dlpack(x[:, 1:], stream_ptr=-1)
    assert view.__dlpack_device__() == (2, x.device.id)
    y = cp.from_dlpack(view)
    assert y.data.ptr == x[:, 1:].data.ptr and y.shape == (3, 3)
    assert y.strides == x[:, 1:].strides and bool((y == x[:, 1:]).all())
