"""DeviceMemoryResource and the pool machinery it shares (cuda_core/_memory/_device_mr.pyx,
_mempool.pyx), and Device.allocate / Device.memory_resource."""

import gc
import uuid

import numpy as np
import pytest

from cuda_core import (Buffer, CUDAError, CUDAOutOfMemoryError, Device, DeviceMemoryResource,
                       DeviceMemoryResourceOptions, MemoryResource, PinnedMemoryResource,
                       PinnedMemoryResourceOptions)
from cuda_core._memory import _mempool
from helpers.memory import NumpyMemoryResource


@pytest.mark.gpu
def test_default_resource_is_the_device_pool(dev, stream):
    from cuda.bindings import driver

    mr = dev.memory_resource
    assert isinstance(mr, DeviceMemoryResource)
    assert dev.memory_resource is mr  # cached
    assert mr.device_id == dev.device_id
    assert not mr.is_handle_owned and not mr.is_ipc_enabled and not mr.is_mapped
    assert mr.is_device_accessible and not mr.is_host_accessible and not mr.is_managed
    err, pool = driver.cuDeviceGetMemPool(dev.device_id)
    assert err == driver.CUresult.CUDA_SUCCESS
    assert int(mr.handle) == int(pool)
    mr.close()  # not owned: a no-op
    assert not mr.is_closed
    buf = mr.allocate(256, stream=stream)
    assert buf.memory_resource is mr
    buf.close()
    stream.sync()


@pytest.mark.gpu
def test_owned_pool(dev, stream):
    mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(max_size=64 << 20))
    assert mr.is_handle_owned and mr.device_id == dev.device_id
    assert "owned pool" in repr(mr)
    kept = mr.allocate(1 << 20, stream=stream)
    kept.fill(3, stream=stream)
    mr.close()
    mr.close()
    assert mr.is_closed
    with pytest.raises(RuntimeError, match="this DeviceMemoryResource is closed"):
        mr.allocate(16, stream=stream)
    with pytest.raises(RuntimeError, match="is closed"):
        mr.attributes
    # A buffer allocated before the pool was closed stays usable and frees normally.
    out_mr = NumpyMemoryResource()
    out = out_mr.allocate(1 << 20)
    kept.copy_to(out, stream=stream)
    stream.sync()
    assert (out_mr.array(out) == 3).all()
    kept.close(stream)
    stream.sync()


@pytest.mark.gpu
def test_max_size_is_enforced(dev, stream):
    mr = DeviceMemoryResource(dev.device_id, {"max_size": 32 << 20})
    with pytest.raises(CUDAOutOfMemoryError, match=f"allocating {64 << 20} bytes"):
        mr.allocate(64 << 20, stream=stream)
    mr.close()


@pytest.mark.gpu
def test_options_checked_at_construction(dev):
    with pytest.raises(TypeError, match="unknown field"):
        DeviceMemoryResource(dev, {"size": 1})
    with pytest.raises(TypeError, match="must be a DeviceMemoryResourceOptions"):
        DeviceMemoryResource(dev, 42)
    with pytest.raises(ValueError, match="out of range"):
        DeviceMemoryResource(10_000)


@pytest.mark.gpu
def test_ipc_enabled_pool(dev):
    if not dev.properties.handle_type_posix_file_descriptor_supported:
        pytest.skip("the device does not support POSIX file-descriptor handles")
    mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(ipc_enabled=True))
    assert mr.is_ipc_enabled and mr.is_handle_owned and not mr.is_mapped
    assert isinstance(mr.uuid, uuid.UUID) and mr.uuid.hex[:8] in repr(mr) and "ipc" in repr(mr)
    other = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(ipc_enabled=True))
    assert other.uuid != mr.uuid
    plain = DeviceMemoryResource(dev, DeviceMemoryResourceOptions())
    assert plain.uuid is None and not plain.is_ipc_enabled
    for r in (mr, other, plain):
        r.close()


@pytest.mark.gpu
def test_attributes(dev, stream):
    mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions())
    attrs = mr.attributes
    assert attrs.release_threshold == (1 << 64) - 1  # raised from the driver default of 0
    for name in ("reuse_follow_event_dependencies", "reuse_allow_opportunistic",
                 "reuse_allow_internal_dependencies"):
        assert isinstance(getattr(attrs, name), bool)
    base = attrs.used_mem_current
    buf = mr.allocate(2 << 20, stream=stream)
    assert attrs.used_mem_current >= base + (2 << 20)
    assert attrs.reserved_mem_current >= attrs.used_mem_current
    assert attrs.used_mem_high >= attrs.used_mem_current
    buf.close(stream)
    stream.sync()
    assert attrs.used_mem_current == base
    attrs.used_mem_high = 0
    attrs.reserved_mem_high = 0
    with pytest.raises(ValueError, match="used_mem_high can only be reset, to 0"):
        attrs.used_mem_high = 5
    attrs.release_threshold = 1 << 20
    assert attrs.release_threshold == 1 << 20
    attrs.reuse_allow_opportunistic = False
    assert attrs.reuse_allow_opportunistic is False
    with pytest.raises(TypeError, match="reuse_allow_opportunistic must be a bool"):
        attrs.reuse_allow_opportunistic = "no"
    with pytest.raises(AttributeError):
        attrs.used_mem_current = 0
    mr.close()


@pytest.mark.gpu
def test_many_allocate_free_cycles_return_to_baseline(dev, stream):
    mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions())
    baseline = mr.attributes.used_mem_current
    for i in range(100_000):
        buf = mr.allocate(256 + (i % 7) * 512, stream=stream)
        buf.close()
    stream.sync()
    assert mr.attributes.used_mem_current == baseline
    # The same through garbage collection instead of close().
    for _ in range(1000):
        mr.allocate(4096, stream=stream)
    gc.collect()
    stream.sync()
    assert mr.attributes.used_mem_current == baseline
    mr.close()


@pytest.mark.gpu
def test_out_of_memory_names_the_size(dev, stream):
    huge = 1 << 50
    with pytest.raises(CUDAOutOfMemoryError) as info:
        dev.allocate(huge, stream=stream)
    assert isinstance(info.value, MemoryError) and isinstance(info.value, CUDAError)
    assert f"allocating {huge} bytes" in str(info.value)
    assert info.value.name == "CUDA_ERROR_OUT_OF_MEMORY"


@pytest.mark.gpu
def test_zero_size(dev, stream):
    buf = dev.allocate(0, stream=stream)
    assert buf.size == 0 and buf.handle == 0
    buf.fill(1, stream=stream)
    buf.copy_from(Buffer.from_handle(0, 0), stream=stream)
    buf.close()


@pytest.mark.gpu
def test_deallocate_directly(dev, stream):
    from cuda.bindings import driver

    mr = dev.memory_resource
    err, ptr = driver.cuMemAllocFromPoolAsync(128, mr.handle, int(stream.handle))
    assert err == driver.CUresult.CUDA_SUCCESS
    base = mr.attributes.used_mem_current
    mr.deallocate(int(ptr), 128, stream=stream)
    stream.sync()
    assert mr.attributes.used_mem_current < base
    with pytest.raises(TypeError, match="ptr must be an int"):
        mr.deallocate("1", 128)
    with pytest.raises(ValueError, match="is not a valid address"):
        mr.deallocate(-1, 128)


@pytest.mark.gpu
def test_peer_accessible_by_single_device(dev):
    mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions())
    peers = mr.peer_accessible_by
    assert set(peers) == set() and len(peers) == 0
    calls = _mempool._set_access_calls()
    # The pool's own device is ignored wherever it is given, as cuda.core 1.2.2 does: it always
    # has access, is never a member, and nothing reaches the driver.
    peers.add(dev)
    peers.discard(dev)
    peers.discard(dev.device_id)
    assert dev not in peers and dev.device_id not in peers
    mr.peer_accessible_by = [dev.device_id]
    mr.peer_accessible_by = dev
    peers |= {dev}
    peers -= {dev}
    peers &= {dev}
    peers ^= {dev.device_id}
    peers.update([dev], (dev.device_id,))
    peers.difference_update([dev])
    peers.intersection_update([dev], [])
    peers.symmetric_difference_update([dev])
    peers.clear()
    assert _mempool._set_access_calls() == calls
    assert len(mr.peer_accessible_by) == 0
    # The operators that make a new set give a plain set.
    assert peers | {7} == {7} and type(peers | set()) is set and peers & {dev} == set()
    assert "0" not in peers and None not in peers and 10_000 not in peers
    with pytest.raises(ValueError, match="out of range"):
        peers.add(Device.get_all_devices()[-1].device_id + 1)
    with pytest.raises(TypeError, match="expected Device or int items, not str"):
        mr.peer_accessible_by = ["0"]
    with pytest.raises(TypeError, match="expected a Device, an int or an iterable of them, not str"):
        peers.update("0")
    with pytest.raises(TypeError, match="expected Device or int items, not bool"):
        peers.discard(True)
    assert _mempool._set_access_calls() == calls
    mr.close()
    with pytest.raises(RuntimeError, match="closed"):
        mr.peer_accessible_by


@pytest.mark.gpu
def test_peer_accessible_by_two_devices():
    devices = Device.get_all_devices()
    if len(devices) < 2 or not devices[1].can_access_peer(devices[0]):
        pytest.skip("needs two devices with peer access")
    devices[0].set_current()
    mr = DeviceMemoryResource(0, DeviceMemoryResourceOptions())
    mr.peer_accessible_by = [1]
    assert set(mr.peer_accessible_by) == {Device(1)}
    mr.peer_accessible_by.discard(1)
    assert set(mr.peer_accessible_by) == set()
    mr.close()


@pytest.mark.gpu
def test_peer_access_bulk_operations_make_one_driver_call_each():
    devices = Device.get_all_devices()
    if len(devices) < 2 or not devices[1].can_access_peer(devices[0]):
        pytest.skip("needs two devices with peer access")
    devices[0].set_current()
    mr = DeviceMemoryResource(0, DeviceMemoryResourceOptions())
    peers = mr.peer_accessible_by
    try:
        def calls(op, *args):
            before = _mempool._set_access_calls()
            op(*args)
            return _mempool._set_access_calls() - before

        def assign(value):
            mr.peer_accessible_by = value

        assert calls(peers.update, [1], [0]) == 1 and set(peers) == {Device(1)}
        assert calls(peers.update, [Device(1)]) == 0  # nothing changes: no call
        assert calls(peers.clear) == 1 and set(peers) == set()
        assert calls(peers.clear) == 0
        assert calls(peers.__ior__, {1}) == 1 and 1 in peers and Device(1) in peers
        assert calls(peers.__iand__, {0}) == 1 and set(peers) == set()  # 0 is the owner
        assert calls(peers.__ixor__, {0, 1}) == 1 and set(peers) == {Device(1)}
        assert calls(peers.__ixor__, [1]) == 1 and set(peers) == set()
        assert calls(peers.symmetric_difference_update, [1]) == 1 and 1 in peers
        assert calls(peers.__isub__, {1}) == 1 and 1 not in peers
        assert calls(peers.difference_update, [1]) == 0
        assert calls(assign, [0, 1]) == 1 and set(mr.peer_accessible_by) == {Device(1)}
        assert calls(assign, [1]) == 0
        assert calls(peers.intersection_update, [1], [Device(1)]) == 0
        assert calls(assign, []) == 1 and len(peers) == 0
        assert calls(peers.add, 1) == 1 and calls(peers.discard, Device(1)) == 1
    finally:
        mr.peer_accessible_by = []
        mr.close()


@pytest.mark.gpu
def test_device_memory_resource_is_settable(dev, stream):
    original = dev.memory_resource
    mine = NumpyMemoryResource(device_accessible=False)
    try:
        dev.memory_resource = mine
        buf = dev.allocate(32, stream=stream)
        assert buf.memory_resource is mine
        buf.close()
        assert len(mine.calls) == 1
        with pytest.raises(TypeError, match="must be a MemoryResource, not str"):
            dev.memory_resource = "pool"
    finally:
        dev.memory_resource = original
    assert dev.memory_resource is original


@pytest.mark.gpu
def test_stream_work_needs_no_current_context(dev, stream):
    # The stream's context is made current around allocation, fill, copy and free.
    from cuda.bindings import driver

    buf = dev.allocate(64, stream=stream)
    err, ctx = driver.cuCtxPopCurrent()
    assert err == driver.CUresult.CUDA_SUCCESS
    try:
        err, current = driver.cuCtxGetCurrent()
        assert int(current) == 0
        buf.fill(9, stream=stream)
        other = dev.allocate(64, stream=stream)
        other.copy_from(buf, stream=stream)
        other.close()
        buf.close()
    finally:
        (err,) = driver.cuCtxPushCurrent(ctx)
        assert err == driver.CUresult.CUDA_SUCCESS
    stream.sync()


@pytest.mark.gpu
def test_user_memory_resource_subclass_of_device_resource_is_called(dev, stream):
    freed = []

    class Counting(DeviceMemoryResource):
        def deallocate(self, ptr, size, *, stream=None):
            freed.append(size)
            super().deallocate(ptr, size, stream=stream)

    mr = Counting(dev)
    buf = mr.allocate(100, stream=stream)
    buf.close()
    assert freed == [100]
    stream.sync()


@pytest.mark.gpu
def test_gc_frees_through_a_python_resource_wrapping_the_pool(dev, stream):
    # A user-written resource that delegates to a DeviceMemoryResource.
    class Tracking(MemoryResource):
        def __init__(self, inner):
            self.inner = inner
            self.outstanding = 0

        def allocate(self, size, *, stream=None):
            raw = self.inner.allocate(size, stream=stream)
            ptr = raw.handle
            # Take the pointer over: the raw buffer becomes a view, so only we free it.
            self.outstanding += 1
            self._keep = getattr(self, "_keep", {})
            self._keep[ptr] = raw
            return Buffer.from_handle(ptr, size, mr=self, stream=stream)

        def deallocate(self, ptr, size, *, stream=None):
            self.outstanding -= 1
            self._keep.pop(ptr).close(stream)

        is_device_accessible = property(lambda self: True)
        is_host_accessible = property(lambda self: False)
        device_id = property(lambda self: self.inner.device_id)

    mr = Tracking(dev.memory_resource)
    bufs = [mr.allocate(1000, stream=stream) for _ in range(10)]
    assert mr.outstanding == 10
    data = np.arange(1000, dtype=np.uint8)
    host_mr = NumpyMemoryResource()
    host = host_mr.allocate(1000)
    host_mr.array(host)[:] = data
    bufs[3].copy_from(host, stream=stream)
    back = host_mr.allocate(1000)
    bufs[3].copy_to(back, stream=stream)
    stream.sync()
    assert (host_mr.array(back) == data).all()
    del bufs
    gc.collect()
    assert mr.outstanding == 0
    stream.sync()


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["global", "thread_local"])
def test_made_during_a_stream_capture(dev, mode):
    # As cuda.core 1.3: the release threshold is set in relaxed capture mode, so a resource
    # made (or the device's default one first used) while this thread captures in global or
    # thread-local mode leaves the capture valid, and the thread's mode as it was. So do the
    # creation of a pool of its own and a host pool's access grants, which the driver refuses
    # in those modes too (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, seen on an H200).
    from cuda.bindings import driver

    def thread_mode():  # the thread's capture interaction mode, read by swapping it twice
        _, mine = driver.cuThreadExchangeStreamCaptureMode(
            driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED)
        driver.cuThreadExchangeStreamCaptureMode(mine)
        return mine

    stream = dev.create_stream()
    modes = {"global": driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL,
             "thread_local": driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL}
    err, = driver.cuStreamBeginCapture(driver.CUstream(int(stream.handle)), modes[mode])
    assert err == driver.CUresult.CUDA_SUCCESS
    try:
        before = thread_mode()
        mr = DeviceMemoryResource(dev.device_id)
        own = DeviceMemoryResource(dev.device_id, DeviceMemoryResourceOptions(max_size=1 << 21))
        host = (PinnedMemoryResource(PinnedMemoryResourceOptions())
                if dev.properties.host_memory_pools_supported else None)
        err, status = driver.cuStreamIsCapturing(driver.CUstream(int(stream.handle)))
        assert status == driver.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_ACTIVE
        assert thread_mode() == before
    finally:
        err, graph = driver.cuStreamEndCapture(driver.CUstream(int(stream.handle)))
    assert err == driver.CUresult.CUDA_SUCCESS
    driver.cuGraphDestroy(graph)
    assert mr.device_id == own.device_id == dev.device_id
    own.close()
    if host is not None:
        host.close()
    stream.close()
