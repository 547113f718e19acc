"""DLPack export of Buffer (cuda_core/_memory/_dlpack.pyx, dlpack.pxd, Buffer.__dlpack__).

The CPU tests read the capsules with ctypes structures written here from the DLPack
specification (independently of the package's declarations), and play the consumer's part:
rename the capsule, call the deleter, with the GIL released as a C consumer would.
"""

import ctypes
import gc
import sys
import threading
import weakref

import numpy as np
import pytest

from cuda_core import Buffer, LEGACY_DEFAULT_STREAM, LegacyPinnedMemoryResource
from helpers import StreamGate
from helpers.dlpack import (DLPackVersion, DLTensor, kDLCPU, kDLCUDA, kDLCUDAHost,
                            kDLCUDAManaged)
from helpers.memory import NumpyMemoryResource


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", DLTensor)]


_api = ctypes.pythonapi
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
# Capsule names are not copied: keep the renamed names alive for the whole session.
_USED = {b"dltensor": ctypes.c_char_p(b"used_dltensor"),
         b"dltensor_versioned": ctypes.c_char_p(b"used_dltensor_versioned")}
_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # called with the GIL released


def _open(capsule):
    """(name, struct) of an unconsumed capsule."""
    for name, cls in ((b"dltensor_versioned", DLManagedTensorVersioned),
                      (b"dltensor", DLManagedTensor)):
        if _api.PyCapsule_IsValid(capsule, name):
            address = _api.PyCapsule_GetPointer(capsule, name)
            return name, cls.from_address(address)
    raise AssertionError("not a DLPack capsule")


def _consume(capsule):
    """Take the tensor as a consumer does: rename the capsule; returns a function that ends
    the consumer's use by calling the deleter (without the GIL, through ctypes)."""
    name, managed = _open(capsule)
    assert _api.PyCapsule_SetName(capsule, _USED[name]) == 0
    address = ctypes.addressof(managed)
    deleter = _DELETER(managed.deleter)
    return lambda: deleter(address)


def _device_only_mr():
    # Claims device memory (never dereferenced): exercises the CUDA device type on the CPU.
    return NumpyMemoryResource(device_accessible=True, host_accessible=False, device_id=0)


# -- layout and device types (CPU) -------------------------------------------------------------

@pytest.mark.parametrize("max_version, name", [
    (None, b"dltensor"), ((0, 8), b"dltensor"), ((1, 0), b"dltensor_versioned"),
    ((1, 3), b"dltensor_versioned"), ((2, 0), b"dltensor_versioned"),
])
def test_capsule_layout(max_version, name):
    mr = NumpyMemoryResource()
    buf = mr.allocate(37)
    capsule = buf.__dlpack__(max_version=max_version)
    got_name, managed = _open(capsule)
    assert got_name == name
    if name == b"dltensor_versioned":
        assert (managed.version.major, managed.version.minor) == (1, 0)
        assert managed.flags == 0  # writable, not a copy
    t = managed.dl_tensor
    assert t.data == buf.handle and t.byte_offset == 0
    assert (t.device.device_type, t.device.device_id) == (kDLCPU, 0)
    assert t.ndim == 1
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (0, 8, 1)  # int8
    assert t.shape[0] == 37 and t.strides[0] == 1
    assert managed.manager_ctx and managed.deleter


@pytest.mark.parametrize("kwargs, expected", [
    ({}, (kDLCPU, 0)),
    ({"device_accessible": True, "host_accessible": True}, (kDLCUDAHost, 0)),
    ({"device_accessible": True, "host_accessible": False, "device_id": 3}, (kDLCUDA, 3)),
    ({"device_accessible": True, "host_accessible": True, "managed": True, "device_id": 1},
     (kDLCUDAManaged, 1)),
    ({"device_accessible": True, "host_accessible": True, "managed": True, "device_id": -1},
     (kDLCUDAManaged, 0)),
])
def test_device_types(kwargs, expected):
    buf = NumpyMemoryResource(**kwargs).allocate(8)
    assert buf.__dlpack_device__() == expected
    _, managed = _open(buf.__dlpack__(stream=-1, max_version=(1, 0)))
    assert (managed.dl_tensor.device.device_type, managed.dl_tensor.device.device_id) == expected


def test_memory_neither_side_can_reach_is_refused():
    buf = NumpyMemoryResource(host_accessible=False).allocate(8)
    with pytest.raises(BufferError, match="accessible from neither"):
        buf.__dlpack_device__()


# -- lifetime (CPU) ----------------------------------------------------------------------------

@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_consumer_deleter_releases_exactly_once_without_the_gil(max_version):
    mr = NumpyMemoryResource()
    buf = mr.allocate(16)
    ptr = buf.handle
    ref = weakref.ref(buf)
    base = sys.getrefcount(buf)
    capsule = buf.__dlpack__(max_version=max_version)
    assert sys.getrefcount(buf) == base + 1  # the export keeps the buffer alive
    release = _consume(capsule)
    del capsule  # consumed: destroying the capsule must not release anything
    gc.collect()
    assert sys.getrefcount(buf) == base + 1
    del buf
    gc.collect()
    assert ref() is not None and mr.calls == []
    release()  # the consumer is done: the last reference goes, the buffer frees its memory
    gc.collect()
    assert ref() is None
    assert mr.calls == [(ptr, 16, None)]


def test_deleter_from_another_thread():
    mr = NumpyMemoryResource()
    buf = mr.allocate(16)
    ref = weakref.ref(buf)
    release = _consume(buf.__dlpack__(max_version=(1, 0)))
    del buf
    worker = threading.Thread(target=release)
    worker.start()
    worker.join()
    gc.collect()
    assert ref() is None and len(mr.calls) == 1


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_unconsumed_capsule_releases_on_destruction(max_version):
    mr = NumpyMemoryResource()
    buf = mr.allocate(16)
    base = sys.getrefcount(buf)
    capsule = buf.__dlpack__(max_version=max_version)
    assert sys.getrefcount(buf) == base + 1
    del capsule
    gc.collect()
    assert sys.getrefcount(buf) == base


def test_close_while_exported_defers_the_free():
    mr = NumpyMemoryResource()
    buf = mr.allocate(16)
    ptr = buf.handle
    first = _consume(buf.__dlpack__(max_version=(1, 0)))
    second = _consume(buf.__dlpack__())
    buf.close()
    assert buf.is_closed and mr.calls == []
    first()
    assert mr.calls == []  # one export is still alive
    second()
    assert mr.calls == [(ptr, 16, None)]


def test_deferred_free_uses_the_close_stream():
    mr = NumpyMemoryResource()
    buf = mr.allocate(16)
    release = _consume(buf.__dlpack__())
    buf.close(LEGACY_DEFAULT_STREAM)
    release()
    assert mr.calls[0][2] is LEGACY_DEFAULT_STREAM


def test_failing_deferred_free_warns():
    from cuda_core import CUDAWarning

    mr = NumpyMemoryResource(fail_deallocate=RuntimeError("late"))
    buf = mr.allocate(16)
    release = _consume(buf.__dlpack__())
    buf.close()
    with pytest.warns(CUDAWarning, match="late"):
        release()


def test_numpy_shares_the_memory():
    mr = NumpyMemoryResource()
    buf = mr.allocate(100)
    array = np.from_dlpack(buf)
    assert array.dtype == np.int8 and array.shape == (100,)
    assert array.ctypes.data == buf.handle
    array[:] = np.arange(100, dtype=np.int8)
    assert (mr.array(buf) == np.arange(100)).all()
    mr.array(buf)[5] = 99
    assert array[5] == 99
    buf.close()
    assert mr.calls == []  # the array still refers to the memory
    del array
    gc.collect()
    assert len(mr.calls) == 1


def test_numpy_reads_pinned_memory_in_place():
    mr = NumpyMemoryResource(device_accessible=True, host_accessible=True)
    buf = mr.allocate(10)
    assert buf.__dlpack_device__() == (kDLCUDAHost, 0)
    array = np.from_dlpack(buf)
    assert array.ctypes.data == buf.handle and array.shape == (10,)


@pytest.mark.parametrize("managed", [False, True])
def test_host_accessible_memory_exported_as_cpu_on_request(managed):
    # What np.from_dlpack(buf, device="cpu") asks for (NumPy >= 2.1).
    buf = NumpyMemoryResource(device_accessible=True, host_accessible=True,
                              managed=managed).allocate(10)
    _, tensor = _open(buf.__dlpack__(dl_device=(kDLCPU, 0), max_version=(1, 0)))
    assert (tensor.dl_tensor.device.device_type, tensor.dl_tensor.device.device_id) == (kDLCPU, 0)
    assert tensor.dl_tensor.data == buf.handle
    with pytest.raises(BufferError, match="stream must be None for host memory"):
        buf.__dlpack__(dl_device=(kDLCPU, 0), stream=1)


# -- argument checks (CPU) ---------------------------------------------------------------------

def test_copy_true_refused():
    buf = NumpyMemoryResource().allocate(8)
    with pytest.raises(BufferError, match="copy=True is not supported"):
        buf.__dlpack__(copy=True)
    buf.__dlpack__(copy=False)
    with pytest.raises(TypeError, match="copy must be a bool or None"):
        buf.__dlpack__(copy="yes")


def test_dl_device_must_match():
    buf = _device_only_mr().allocate(8)
    buf.__dlpack__(stream=-1, dl_device=(kDLCUDA, 0))
    with pytest.raises(BufferError, match="dl_device=\\(1, 0\\) differs from the buffer's "
                                          "device \\(2, 0\\)"):
        buf.__dlpack__(stream=-1, dl_device=(kDLCPU, 0))
    with pytest.raises(BufferError, match="differs"):
        buf.__dlpack__(stream=-1, dl_device=(kDLCUDA, 1))
    with pytest.raises(TypeError, match="dl_device must be a \\(device_type, device_id\\) pair"):
        buf.__dlpack__(stream=-1, dl_device="cuda")


def test_streams_checked():
    host = NumpyMemoryResource().allocate(8)
    host.__dlpack__(stream=None)
    host.__dlpack__(stream=-1)
    with pytest.raises(BufferError, match="stream must be None for host memory"):
        host.__dlpack__(stream=1)
    dev = _device_only_mr().allocate(8)
    with pytest.raises(BufferError, match="stream=0 is ambiguous"):
        dev.__dlpack__(stream=0)
    with pytest.raises(BufferError, match="stream=-5 is not a stream"):
        dev.__dlpack__(stream=-5)
    with pytest.raises(TypeError, match="stream must be an int or None, not bool"):
        dev.__dlpack__(stream=True)
    with pytest.raises(TypeError, match="not float"):
        dev.__dlpack__(stream=1.0)
    # No stream recorded: nothing to wait for, no driver call.
    dev.__dlpack__(stream=None)
    # The consumer's stream is the buffer's own: nothing to wait for either.
    same = _device_only_mr().allocate(8, stream=LEGACY_DEFAULT_STREAM)
    same.__dlpack__(stream=1)


def test_max_version_checked():
    buf = NumpyMemoryResource().allocate(8)
    with pytest.raises(TypeError, match="max_version must be a \\(major, minor\\) pair"):
        buf.__dlpack__(max_version=1)
    with pytest.raises(ValueError, match="max_version must be a \\(major, minor\\) pair"):
        buf.__dlpack__(max_version=(1, 0, 0))


# -- GPU ---------------------------------------------------------------------------------------

def _to_host(buf, stream):
    mr = NumpyMemoryResource()
    out = mr.allocate(buf.size)
    buf.copy_to(out, stream=stream)
    stream.sync()
    return mr.array(out).copy()


@pytest.mark.gpu
def test_cupy_zero_copy_both_ways(dev, stream):
    cp = pytest.importorskip("cupy")
    n = 1 << 16
    buf = dev.allocate(n, stream=stream)
    buf.fill(0x11, stream=stream)
    array = cp.from_dlpack(buf)  # its stream waits for the fill
    assert array.dtype == cp.int8 and array.shape == (n,)
    assert array.data.ptr == buf.handle
    assert int((array == 0x11).sum()) == n
    array[: n // 2] = 5
    cp.cuda.get_current_stream().synchronize()
    got = _to_host(buf, stream)
    assert (got[: n // 2] == 5).all() and (got[n // 2:] == 0x11).all()
    buf.fill(0x22, stream=stream)
    stream.sync()
    assert int((array == 0x22).sum()) == n
    del array
    buf.close()


@pytest.mark.gpu
def test_torch_zero_copy_both_ways(dev, stream):
    torch = pytest.importorskip("torch")
    n = 4096
    buf = dev.allocate(n, stream=stream)
    buf.fill(7, stream=stream)
    tensor = torch.from_dlpack(buf)
    assert tensor.dtype == torch.int8 and tensor.shape == (n,)
    assert tensor.device.type == "cuda" and tensor.device.index == dev.device_id
    assert tensor.data_ptr() == buf.handle
    assert int((tensor == 7).sum()) == n
    tensor[:10] = -3
    torch.cuda.synchronize()
    got = _to_host(buf, stream)
    assert (got[:10].view(np.int8) == -3).all() and (got[10:] == 7).all()
    buf.fill(1, stream=stream)
    stream.sync()
    assert int(tensor.sum()) == n
    buf.close()  # the tensor keeps the memory alive
    assert int(tensor.sum()) == n
    del tensor


@pytest.mark.gpu
def test_numpy_on_pinned_memory(dev, stream):
    buf = LegacyPinnedMemoryResource().allocate(256, stream=stream)
    assert buf.__dlpack_device__() == (kDLCUDAHost, 0)
    buf.fill(0x42, stream=stream)
    stream.sync()
    array = np.from_dlpack(buf)
    assert array.ctypes.data == buf.handle and (array == 0x42).all()
    array[:] = 1
    dev_copy = dev.allocate(256, stream=stream)
    dev_copy.copy_from(buf, stream=stream)
    assert (_to_host(dev_copy, stream) == 1).all()


@pytest.mark.gpu
def test_device_buffer_view_exports_as_cuda(dev, stream):
    buf = dev.allocate(64, stream=stream)
    view = Buffer.from_handle(buf.handle, 64)
    assert view.__dlpack_device__() == (kDLCUDA, dev.device_id)
    stream.sync()
    buf.close()


@pytest.mark.gpu
def test_consumer_stream_waits_for_the_buffer_stream(dev):
    producer = dev.create_stream()
    consumer = dev.create_stream()
    gate = StreamGate(producer)  # the producer's work cannot finish until the gate opens
    try:
        buf = dev.allocate(64, stream=producer)
        capsule = buf.__dlpack__(stream=int(consumer.handle), max_version=(1, 0))
        assert not consumer.is_done  # it waits on the producer's event
        gate.open()
        consumer.sync()
        assert consumer.is_done
        del capsule
    finally:
        gate.close()
    producer.sync()
    buf.close()
    producer.sync()
