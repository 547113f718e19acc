"""StridedMemoryView.copy_from/copy_to (_view_copy.pyx) and the view's DLPack C exchange table
(_view_exchange.pyx).

The CPU tests copy between views of NumPy arrays (pageable host memory, copied on the host by
the same walk that the device copies take), check the walk itself through ``_plan_of``, and call
the exchange table's functions through ctypes, declared here from the DLPack specification.
The GPU tests copy between device, pinned and host memory and check the stream the copies are
queued on.
"""

import ctypes
import gc
import itertools
import weakref

import numpy as np
import pytest

from test_memoryview import _cycles, _read_floats, kernels  # noqa: F401 (a fixture)
from helpers.dlpack import DLDataType, DLDevice, DLPackVersion, DLTensor, kDLCPU, kDLFloat
from cuda_core._view_copy import _plan_of
from cuda_core.utils import StridedMemoryView


def view(a):
    return StridedMemoryView.from_dlpack(a, stream_ptr=-1)


# -- layouts: every element lands at its index ----------------------------------------------------

def layouts(shape, rng):
    """Arrays of ``shape`` over a larger zeroed block, laid out by slicing with steps (some
    negative) and transposing: (the block, the array)."""
    nd = len(shape)
    for _ in range(12):
        steps = [int(rng.choice([1, 2, -1, -3])) for _ in range(nd)]
        perm = [int(p) for p in rng.permutation(nd)]
        block_shape = [abs(steps[p]) * shape[p] + 1 for p in perm]
        block = np.zeros(block_shape, np.float64)
        a = block[tuple(slice(None, None, steps[p]) for p in perm)] if nd else block[...]
        a = a[tuple(slice(0, shape[p]) for p in perm)] if nd else a
        a = a.transpose(np.argsort(perm)) if nd else a
        assert a.shape == shape
        yield block, a


@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (2, 3, 4), (4, 1, 3), (2, 3, 2, 3)])
def test_copy_between_any_layouts(shape):
    rng = np.random.default_rng(len(shape))
    for (_, src), (block, dst) in zip(layouts(shape, rng), layouts(shape, rng)):
        src[...] = rng.standard_normal(shape)
        marker = block.copy()
        view(dst).copy_from(view(src), None)
        np.testing.assert_array_equal(dst, src)
        dst[...] = np.nan  # every byte outside dst stays as it was
        untouched = ~np.isnan(block)
        np.testing.assert_array_equal(block[untouched], marker[untouched])


def test_copy_to_is_copy_from_reversed():
    src = np.arange(12.0).reshape(3, 4)
    dst = np.zeros((4, 3)).T
    view(src).copy_to(view(dst))
    np.testing.assert_array_equal(dst, src)


def test_broadcast_source():
    dst = np.zeros((3, 4))
    view(dst).copy_from(view(np.broadcast_to(np.arange(4.0), (3, 4))), None)
    np.testing.assert_array_equal(dst, np.tile(np.arange(4.0), (3, 1)))


def test_same_view_is_a_no_op():
    a = np.arange(5.0)
    view(a).copy_from(view(a), None)
    np.testing.assert_array_equal(a, np.arange(5.0))


def test_empty_views():
    view(np.zeros((0, 3))).copy_from(view(np.zeros((0, 3))), None)


def test_itemsize_only_views_copy_bytes():
    from helpers.memory import NumpyMemoryResource

    mr = NumpyMemoryResource(device_accessible=False)
    a, b = mr.allocate(16), mr.allocate(16)
    mr.array(a)[:] = np.arange(16, dtype=np.uint8)
    va = StridedMemoryView.from_buffer(a, (4,), itemsize=4)
    vb = StridedMemoryView.from_buffer(b, (4,), itemsize=4)
    vb.copy_from(va, None)
    np.testing.assert_array_equal(mr.array(b), np.arange(16, dtype=np.uint8))


# -- the walk --------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,dst,src,plan", [
    # C-contiguous both: one run of every byte.
    ((3, 4), (4, 1), (4, 1), ((), 1, 48, 48, 48)),
    # Padded source rows: rows of a 2D copy.
    ((3, 4), (4, 1), (6, 1), ((), 3, 16, 16, 24)),
    # A transpose: runs of one element, rows along the destination's rows, one copy per row.
    ((3, 4), (4, 1), (1, 3), ((3,), 4, 4, 4, 12)),
    # Reversed in both: walked forwards, one run.
    ((5,), (-1,), (-1,), ((), 1, 20, 20, 20)),
    # Reversed in the source only: its rows cannot take a negative pitch; one copy an element.
    ((5,), (1,), (-1,), ((5,), 1, 4, 4, 4)),
    # Extent-1 dimensions are dropped, whatever their strides.
    ((2, 1, 3), (3, 99, 1), (3, -7, 1), ((), 1, 24, 24, 24)),
    # A broadcast source: pitch 0 is no row pitch.
    ((3, 4), (4, 1), (0, 1), ((3,), 1, 16, 16, 16)),
    # F order both: the destination's order, merged.
    ((3, 4), (1, 3), (1, 3), ((), 1, 48, 48, 48)),
    # No elements.
    ((3, 0), (1, 1), (1, 1), None),
])
def test_plan(shape, dst, src, plan):
    assert _plan_of(shape, dst, src, 4) == plan


def test_plan_pitch_limit():
    # A row pitch past 2**31 - 1 bytes is walked as an outer dimension instead.
    assert _plan_of((3, 4), (4, 1), (2**29, 1), 4) == ((3,), 1, 16, 16, 16)


# -- refusals ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("src,match", [
    (np.zeros(3), "shapes differ"),
    (np.zeros((3, 4), np.int64), "element types differ"),
    (np.zeros((3, 4), np.float32), "element types differ"),
])
def test_mismatch_refused(src, match):
    dst = np.ones((3, 4))
    with pytest.raises(ValueError, match=match):
        view(dst).copy_from(view(src), None)
    assert (dst == 1).all()


def test_read_only_destination_refused():
    dst = np.zeros(4)
    dst.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        view(dst).copy_from(view(np.ones(4)), None)


def test_overlapping_destination_refused():
    base = np.zeros(8)
    dst = np.lib.stride_tricks.as_strided(base, (3, 4), (8, 8))  # rows share elements
    assert dst.flags.writeable
    with pytest.raises(ValueError, match="may overlap"):
        view(dst).copy_from(view(np.ones((3, 4))), None)
    assert (base == 0).all()


def test_overlapping_views_refused():
    x = np.arange(10.0)
    with pytest.raises(ValueError, match="overlap in memory"):
        view(x[1:]).copy_from(view(x[:-1]), None)
    np.testing.assert_array_equal(x, np.arange(10.0))


@pytest.mark.parametrize("kwargs,match", [
    (dict(blocking="yes"), "Argument 'blocking' has incorrect type"),
    (dict(blocking=1), "Argument 'blocking' has incorrect type"),
    (dict(allocator=3), "allocator must be a MemoryResource"),
])
def test_argument_types(kwargs, match):
    a = np.zeros(3)
    with pytest.raises(TypeError, match=match):
        view(a).copy_from(view(np.ones(3)), None, **kwargs)


def test_other_must_be_a_view():
    with pytest.raises(TypeError, match="Argument 'other' has incorrect type"):
        view(np.zeros(3)).copy_from(np.ones(3), None)
    with pytest.raises(TypeError, match="Argument 'other' has incorrect type"):
        view(np.zeros(3)).copy_to(None)


def test_device_copy_needs_a_stream():
    """A side of device-accessible memory (a pinned-memory Buffer here) needs a stream; the
    refusal comes before any driver call."""
    from helpers.memory import NumpyMemoryResource

    mr = NumpyMemoryResource(device_accessible=True)
    pinned = StridedMemoryView.from_buffer(mr.allocate(32), (8,), dtype=np.float32)
    with pytest.raises(TypeError, match="stream is required"):
        pinned.copy_from(view(np.zeros(8, np.float32)), None)


# -- the DLPack C exchange table -----------------------------------------------------------------

class Header(ctypes.Structure):
    pass


Header._fields_ = [("version", DLPackVersion), ("prev_api", ctypes.POINTER(Header))]


class ManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(ManagedTensor))
ManagedTensor._fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                          ("deleter", DELETER), ("flags", ctypes.c_uint64),
                          ("dl_tensor", DLTensor)]


class ExchangeAPI(ctypes.Structure):
    _fields_ = [("header", Header), ("managed_tensor_allocator", ctypes.c_void_p),
                ("managed_tensor_from_py_object_no_sync", ctypes.c_void_p),
                ("managed_tensor_to_py_object_no_sync", ctypes.c_void_p),
                ("dltensor_from_py_object_no_sync", ctypes.c_void_p),
                ("current_work_stream", ctypes.c_void_p)]


# PYFUNCTYPE: called with the GIL held, a Python exception set by the callee is raised.
FROM_PY = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object,
                            ctypes.POINTER(ctypes.POINTER(ManagedTensor)))
TO_PY = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.POINTER(ManagedTensor),
                          ctypes.POINTER(ctypes.py_object))
DLTENSOR = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(DLTensor))
STREAM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32,
                          ctypes.POINTER(ctypes.c_void_p))
SET_ERROR = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p)
ALLOCATOR = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(DLTensor),
                             ctypes.POINTER(ctypes.POINTER(ManagedTensor)), ctypes.c_void_p,
                             SET_ERROR)

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]


_decref = ctypes.pythonapi.Py_DecRef
_decref.argtypes = [ctypes.py_object]


def take(out):
    """The object a table function returned through ``out``, with the reference it handed over
    released (a ctypes py_object written through a pointer does not own it)."""
    obj = out.value
    _decref(obj)
    return obj


def table():
    capsule = StridedMemoryView.__dlpack_c_exchange_api__
    return ExchangeAPI.from_address(_get_pointer(capsule, b"dlpack_exchange_api"))


def test_capsule_names_and_version():
    capsule = StridedMemoryView.__dlpack_c_exchange_api__
    assert StridedMemoryView.__c_dlpack_exchange_api__ is capsule
    assert type(capsule).__name__ == "PyCapsule"
    assert _get_name(capsule) == b"dlpack_exchange_api"
    api = table()
    assert (api.header.version.major, api.header.version.minor) == (1, 3)
    assert not api.header.prev_api
    for name, _ in ExchangeAPI._fields_[1:]:
        assert getattr(api, name), name  # every function is provided


def _ints(p, n):
    return [p[i] for i in range(n)] if p else None


def test_managed_tensor_of_a_view():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    v = view(a)
    out = ctypes.POINTER(ManagedTensor)()
    assert FROM_PY(table().managed_tensor_from_py_object_no_sync)(v, ctypes.byref(out)) == 0
    m = out.contents
    t = m.dl_tensor
    assert m.version.major == 1 and m.flags == 0
    assert (t.device.device_type, t.device.device_id) == (kDLCPU, 0)
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (kDLFloat, 32, 1)
    assert t.data == a.ctypes.data and t.byte_offset == 0
    assert _ints(t.shape, t.ndim) == [3, 2] and _ints(t.strides, t.ndim) == [4, 2]
    # The tensor holds the view until its deleter runs.
    ref = weakref.ref(v)
    del v
    gc.collect()
    assert ref() is not None
    m.deleter(out)
    gc.collect()
    assert ref() is None


def test_managed_tensor_gives_strides_and_read_only():
    a = np.arange(6.0).reshape(2, 3)
    a.flags.writeable = False
    out = ctypes.POINTER(ManagedTensor)()
    assert FROM_PY(table().managed_tensor_from_py_object_no_sync)(
        StridedMemoryView.from_array_interface(a), ctypes.byref(out)) == 0
    t = out.contents.dl_tensor
    assert out.contents.flags & 1  # DLPACK_FLAG_BITMASK_READ_ONLY
    assert _ints(t.strides, t.ndim) == [3, 1]  # given, though the view's strides are None
    out.contents.deleter(out)


def test_borrowed_tensor_of_a_view():
    a = np.arange(24, dtype=np.int16).reshape(2, 3, 4).transpose(2, 0, 1)
    v = view(a)
    t = DLTensor()
    assert DLTENSOR(table().dltensor_from_py_object_no_sync)(v, ctypes.byref(t)) == 0
    assert t.ndim == 3 and _ints(t.shape, 3) == [4, 2, 3] and _ints(t.strides, 3) == [1, 12, 4]
    assert t.data == a.ctypes.data and (t.dtype.code, t.dtype.bits) == (0, 16)


def test_not_a_view_refused():
    out = ctypes.POINTER(ManagedTensor)()
    with pytest.raises(TypeError, match="must be a StridedMemoryView"):
        FROM_PY(table().managed_tensor_from_py_object_no_sync)(np.zeros(3), ctypes.byref(out))
    with pytest.raises(TypeError, match="must be a StridedMemoryView"):
        DLTENSOR(table().dltensor_from_py_object_no_sync)(np.zeros(3), ctypes.byref(DLTensor()))


def test_view_without_dtype_refused():
    from helpers.memory import NumpyMemoryResource

    v = StridedMemoryView.from_buffer(NumpyMemoryResource(device_accessible=False).allocate(8),
                                      (2,), itemsize=4)
    out = ctypes.POINTER(ManagedTensor)()
    with pytest.raises(BufferError, match="no dtype"):
        FROM_PY(table().managed_tensor_from_py_object_no_sync)(v, ctypes.byref(out))


def test_tensor_to_view_and_back():
    a = np.arange(10, dtype=np.float64)[::3]
    api = table()
    out = ctypes.POINTER(ManagedTensor)()
    assert FROM_PY(api.managed_tensor_from_py_object_no_sync)(view(a), ctypes.byref(out)) == 0
    obj = ctypes.py_object()
    assert TO_PY(api.managed_tensor_to_py_object_no_sync)(out, ctypes.byref(obj)) == 0
    w = take(obj)
    assert type(w) is StridedMemoryView
    assert w.shape == (4,) and w.strides == (3,) and w.dtype == np.float64
    assert w.ptr == a.ctypes.data and w.device_id == -1 and not w.readonly
    assert type(w.exporting_obj).__name__ == "PyCapsule"
    np.testing.assert_array_equal(np.from_dlpack(w), a)


def test_tensor_to_view_runs_the_deleter_once_when_freed():
    calls = []
    shape = (ctypes.c_int64 * 1)(4)
    strides = (ctypes.c_int64 * 1)(1)
    mem = (ctypes.c_float * 4)(1, 2, 3, 4)
    deleter = DELETER(lambda p: calls.append(1))
    m = ManagedTensor(version=DLPackVersion(1, 3), deleter=deleter, flags=0,
                      dl_tensor=DLTensor(ctypes.addressof(mem), DLDevice(kDLCPU, 0), 1,
                                         DLDataType(kDLFloat, 32, 1), shape, strides, 0))
    obj = ctypes.py_object()
    assert TO_PY(table().managed_tensor_to_py_object_no_sync)(ctypes.byref(m),
                                                              ctypes.byref(obj)) == 0
    w = take(obj)
    np.testing.assert_array_equal(np.from_dlpack(w), [1, 2, 3, 4])
    assert calls == []
    del w
    gc.collect()
    assert calls == [1]
    # A tensor of another major version is refused, and deleted at once.
    m.version = DLPackVersion(2, 0)
    with pytest.raises(BufferError, match="major version 2"):
        TO_PY(table().managed_tensor_to_py_object_no_sync)(ctypes.byref(m),
                                                           ctypes.byref(ctypes.py_object()))
    assert calls == [1, 1]


@pytest.mark.parametrize("device_type", [kDLCPU, 2, 13])
def test_current_work_stream_is_null(device_type):
    s = ctypes.c_void_p(0x1234)
    assert STREAM(table().current_work_stream)(device_type, 0, ctypes.byref(s)) == 0
    assert s.value is None


def test_allocator_reports_through_set_error():
    errors = []
    set_error = SET_ERROR(lambda ctx, kind, msg: errors.append((ctx, kind, msg)))
    proto = DLTensor(None, DLDevice(kDLCPU, 0), 1, DLDataType(kDLFloat, 32, 1),
                     (ctypes.c_int64 * 1)(4), None, 0)
    out = ctypes.POINTER(ManagedTensor)()
    rc = ALLOCATOR(table().managed_tensor_allocator)(ctypes.byref(proto), ctypes.byref(out),
                                                      ctypes.c_void_p(7), set_error)
    assert rc == -1 and not out
    assert errors == [(7, b"NotImplementedError",
                       b"managed_tensor_allocator is not supported by StridedMemoryView")]


def test_from_dlpack_of_a_view_keeps_using_dlpack():
    """A view made of a view goes through __dlpack__ (a view has no stream for the table to
    report): the exporter is the view, and the memory the same."""
    a = np.arange(6.0).reshape(2, 3)
    v = view(a)
    w = StridedMemoryView.from_dlpack(v, stream_ptr=-1)
    assert w.exporting_obj is v and w.ptr == v.ptr and w.shape == (2, 3)


# -- on the GPU ----------------------------------------------------------------------------------

def _device_view(dev, stream, shape, dtype=np.float32, strides=None, nbytes=None):
    n = nbytes or int(np.prod(shape)) * np.dtype(dtype).itemsize * 4
    buf = dev.allocate(n, stream=stream)
    return buf, StridedMemoryView.from_buffer(buf, shape, strides, dtype=dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("order", ["C", "F", "T", "rev", "padded"])
def test_host_device_host_round_trip(dev, stream, order):
    """Host to device into a non-contiguous device layout, device to device into C order, and
    back to a host array laid out another way: every element where it belongs."""
    rng = np.random.default_rng(0)
    src = rng.standard_normal((5, 7)).astype(np.float32)
    host_in = {"C": src, "F": np.asfortranarray(src), "T": src.T.copy().T,
               "rev": src[::-1, ::-1].copy()[::-1, ::-1], "padded": np.pad(src, 3)[3:-3, 3:-3]}
    h = host_in[order]
    buf1, d1 = _device_view(dev, stream, (5, 7), strides=(1, 6))  # column-major, padded
    buf2, d2 = _device_view(dev, stream, (5, 7))
    d1.copy_from(view(h), stream)
    d2.copy_from(d1, stream, blocking=True)
    out = np.zeros((7, 5), np.float32).T
    d2.copy_to(view(out), stream)  # blocking by default: device to host
    np.testing.assert_array_equal(out, src)
    buf1.close()
    buf2.close()


@pytest.mark.gpu
def test_device_to_device_is_queued_on_the_stream(dev, kernels):
    """The copy waits for a slow kernel queued before it on the same stream, and the call does
    not block (blocking None, device to device)."""
    from cuda_core import LaunchConfig, launch

    n = 1024
    s = dev.create_stream()
    src = dev.allocate(4 * n, stream=s)
    dst = dev.allocate(4 * n, stream=s)
    dst.fill(0, stream=s)
    launch(s, LaunchConfig(grid=1, block=256), kernels["slow_fill"], src, np.uint32(n),
           np.float32(2.5), np.int64(_cycles(dev, 300)))
    vs = StridedMemoryView.from_buffer(src, (n,), dtype=np.float32)
    vd = StridedMemoryView.from_buffer(dst, (n,), dtype=np.float32)
    vd.copy_from(vs, s)
    assert not s.is_done  # queued behind the slow kernel; the call returned
    np.testing.assert_array_equal(_read_floats(dst, n, s), np.full(n, 2.5, np.float32))
    src.close()
    dst.close()
    s.sync()
    s.close()


@pytest.mark.gpu
def test_pinned_to_device_transposed(dev, stream):
    from cuda_core import LegacyPinnedMemoryResource

    pinned = LegacyPinnedMemoryResource().allocate(4 * 64)
    hp = np.frombuffer((ctypes.c_float * 64).from_address(int(pinned.handle)), np.float32)
    hp[:] = np.arange(64, dtype=np.float32)
    vp = StridedMemoryView.from_buffer(pinned, (8, 8), dtype=np.float32)
    buf, vd = _device_view(dev, stream, (8, 8), strides=(1, 8))
    vd.copy_from(vp, stream, blocking=True)
    out = np.zeros((8, 8), np.float32)
    vd.copy_to(view(out), stream)
    np.testing.assert_array_equal(out, np.arange(64, dtype=np.float32).reshape(8, 8))
    buf.close()
    pinned.close()


@pytest.mark.gpu
def test_device_copy_with_cuda_stream_protocol(dev, stream):
    class Foreign:
        def __cuda_stream__(self):
            return (0, int(stream.handle))

    buf, vd = _device_view(dev, stream, (16,))
    vd.copy_from(view(np.arange(16, dtype=np.float32)), Foreign())
    out = np.zeros(16, np.float32)
    vd.copy_to(view(out), Foreign())
    np.testing.assert_array_equal(out, np.arange(16, dtype=np.float32))
    buf.close()


@pytest.mark.gpu
def test_exchange_table_of_a_device_view(dev, stream):
    buf, vd = _device_view(dev, stream, (4, 4), strides=(1, 4))
    out = ctypes.POINTER(ManagedTensor)()
    assert FROM_PY(table().managed_tensor_from_py_object_no_sync)(vd, ctypes.byref(out)) == 0
    t = out.contents.dl_tensor
    assert (t.device.device_type, t.device.device_id) == (2, dev.device_id)
    assert t.data == int(buf.handle) and _ints(t.strides, 2) == [1, 4]
    out.contents.deleter(out)
    buf.close()


@pytest.mark.gpu
def test_copy_between_random_layouts_on_the_device(dev, stream):
    """Many random layout pairs, host to device to host, against NumPy's own copy."""
    rng = np.random.default_rng(1)
    for shape in [(3, 5), (2, 3, 4), (6,), (2, 1, 3, 2)]:
        for (_, h_src), (_, h_out) in itertools.islice(
                zip(layouts(shape, rng), layouts(shape, rng)), 6):
            h_src[...] = rng.standard_normal(shape)
            strides = [0] * len(shape)  # dense, the dimensions in a random order
            step = 1
            for d in reversed([int(p) for p in rng.permutation(len(shape))]):
                strides[d] = step
                step *= shape[d]
            strides = tuple(strides)
            buf, d = _device_view(dev, stream, shape, np.float64, strides)
            d.copy_from(view(h_src), stream)
            d.copy_to(view(h_out), stream)
            np.testing.assert_array_equal(h_out, h_src)
            buf.close()
