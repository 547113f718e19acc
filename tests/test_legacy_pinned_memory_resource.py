"""LegacyPinnedMemoryResource and the synchronous device resource
(cuda_core/_memory/_legacy_mr.pyx)."""

import gc

import numpy as np
import pytest

from cuda_core import LegacyPinnedMemoryResource
from helpers.memory import NumpyMemoryResource


def test_properties_need_no_driver():
    mr = LegacyPinnedMemoryResource()
    assert mr.is_device_accessible and mr.is_host_accessible and not mr.is_managed
    assert mr.device_id == -1
    assert repr(mr) == "<LegacyPinnedMemoryResource>"


def test_arguments_checked_before_the_driver():
    mr = LegacyPinnedMemoryResource()
    with pytest.raises(TypeError, match="size must be an int, not float"):
        mr.allocate(1.0)
    with pytest.raises(ValueError, match="size must be >= 0"):
        mr.allocate(-8)
    with pytest.raises(TypeError, match="expected a Stream"):
        mr.allocate(8, stream="s")
    with pytest.raises(TypeError, match="ptr must be an int"):
        mr.deallocate(None, 8)
    mr.deallocate(0, 0)  # the empty allocation: nothing to free


@pytest.mark.gpu
def test_round_trip_without_stream(dev, stream):
    mr = LegacyPinnedMemoryResource()
    n = 1 << 20
    src = mr.allocate(n)  # synchronous: no stream needed
    assert src.memory_resource is mr and src.device_id == -1
    host = np.from_dlpack(src).view(np.uint8)
    host[:] = np.arange(n, dtype=np.uint64).astype(np.uint8)
    d = dev.allocate(n, stream=stream)
    d.copy_from(src, stream=stream)
    dst = mr.allocate(n, stream=stream)
    d.copy_to(dst, stream=stream)
    stream.sync()
    assert (np.from_dlpack(dst).view(np.uint8) == host).all()
    del host
    # A view of pinned memory classifies itself through the driver's pointer attributes.
    from cuda_core import Buffer

    view = Buffer.from_handle(src.handle, n)
    assert view.is_host_accessible and view.is_device_accessible and view.device_id == -1
    assert view.__dlpack_device__() == (3, 0)
    src.close()
    dst.close(stream)  # waits for the stream, then frees
    d.close(stream)
    stream.sync()


@pytest.mark.gpu
def test_gc_frees(dev):
    from cuda.bindings import driver

    def is_pinned(address):
        # cuMemHostGetFlags fails on any pointer outside a live cuMemAllocHost allocation.
        err, _ = driver.cuMemHostGetFlags(address)
        return err == driver.CUresult.CUDA_SUCCESS

    mr = LegacyPinnedMemoryResource()
    bufs = [mr.allocate(1 << 16) for _ in range(100)]
    addresses = [int(b.handle) for b in bufs]
    assert len(set(addresses)) == 100 and all(map(is_pinned, addresses))
    cycle = [mr.allocate(1 << 16)]
    cycle.append(cycle)  # freed only by the cyclic collector
    addresses.append(int(cycle[0].handle))
    assert is_pinned(addresses[-1])
    del bufs, cycle
    gc.collect()
    assert not any(map(is_pinned, addresses))


@pytest.mark.gpu
def test_synchronous_device_resource(dev, stream):
    from cuda_core._memory._legacy_mr import _SynchronousMemoryResource

    mr = _SynchronousMemoryResource(dev)
    assert mr.device_id == dev.device_id
    assert mr.is_device_accessible and not mr.is_host_accessible
    buf = mr.allocate(4096, stream=stream)
    buf.fill(np.uint16(0x1234), stream=stream)
    out_mr = NumpyMemoryResource()
    out = out_mr.allocate(4096)
    buf.copy_to(out, stream=stream)
    stream.sync()
    assert (out_mr.array(out).view(np.uint16) == 0x1234).all()
    buf.close()
    assert mr.allocate(0).handle == 0
