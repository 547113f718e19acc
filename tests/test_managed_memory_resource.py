"""ManagedMemoryResource and ManagedBuffer (cuda_core/_memory/_managed_mr.pyx)."""

import ctypes

import numpy as np
import pytest

from cuda_core import (Buffer, CUDAError, Device, Host, LEGACY_DEFAULT_STREAM, ManagedBuffer,
                       ManagedMemoryResource, ManagedMemoryResourceOptions)
from helpers import has_cuda_13
from helpers.memory import NumpyMemoryResource


def test_managed_buffer_not_constructible():
    with pytest.raises(RuntimeError, match="ManagedBuffer objects cannot be instantiated "
                                           "directly"):
        ManagedBuffer()


def test_from_handle_gives_a_managed_buffer():
    buf = ManagedBuffer.from_handle(0x1000, 64)
    assert type(buf) is ManagedBuffer and isinstance(buf, Buffer)
    assert buf.handle == 0x1000 and buf.memory_resource is None


def test_options_checked_before_the_driver():
    with pytest.raises(ValueError, match="must be a device ordinal"):
        ManagedMemoryResource({"preferred_location_type": "device"})
    with pytest.raises(TypeError, match="must be a ManagedMemoryResourceOptions"):
        ManagedMemoryResource(3)


def test_location_arguments_checked():
    buf = ManagedBuffer.from_handle(0x1000, 64)
    with pytest.raises(TypeError, match="location must be a Device or a Host, not str"):
        buf.prefetch("gpu", stream=LEGACY_DEFAULT_STREAM)
    with pytest.raises(TypeError, match="location must be a Device or a Host, not int"):
        buf.prefetch(0, stream=LEGACY_DEFAULT_STREAM)  # as cuda.core: no device ordinals here
    with pytest.raises(ValueError, match="location must be a Device or a Host, not NoneType"):
        buf.prefetch(None, stream=LEGACY_DEFAULT_STREAM)  # cuda.core: ValueError
    with pytest.raises(TypeError, match="read_mostly must be a bool"):
        buf.read_mostly = "no"
    with pytest.raises(TypeError, match="stream is required"):
        buf.discard(stream=None)


def _managed_pool_takes_advice():
    """Asked of the driver directly: does memory from the current managed pool take advice?"""
    from cuda.bindings import driver

    if not has_cuda_13():
        return False
    loc = driver.CUmemLocation()  # no location: the pool the resource uses by default
    loc.type = driver.CUmemLocationType(0)  # CU_MEM_LOCATION_TYPE_NONE
    err, pool = driver.cuMemGetMemPool(loc, driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_MANAGED)
    if err != driver.CUresult.CUDA_SUCCESS:
        return False
    err, ptr = driver.cuMemAllocFromPoolAsync(1, pool, driver.CU_STREAM_LEGACY)
    assert err == driver.CUresult.CUDA_SUCCESS, err
    dev_loc = driver.CUmemLocation()
    dev_loc.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    (err,) = driver.cuMemAdvise(ptr, 1, driver.CUmem_advise.CU_MEM_ADVISE_SET_READ_MOSTLY,
                                dev_loc)
    driver.cuMemFreeAsync(ptr, driver.CU_STREAM_LEGACY)
    driver.cuStreamSynchronize(driver.CU_STREAM_LEGACY)
    return err == driver.CUresult.CUDA_SUCCESS


def _bytes_at(address, n):
    return np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(address))


@pytest.mark.gpu
def test_round_trip(dev, stream):
    mr = ManagedMemoryResource()
    # A managed pool wherever the driver has one (CUDA 13), as cuda.core; a CUDA 12 build
    # cannot ask for one (its cuMemPoolCreate has no managed pools).
    assert mr.uses_pool == has_cuda_13()
    assert not mr.is_handle_owned
    assert mr.is_managed and mr.is_device_accessible and mr.is_host_accessible
    assert mr.preferred_location is None and mr.device_id == -1
    n = (1 << 20) + 3
    buf = mr.allocate(n, stream=stream)
    assert type(buf) is ManagedBuffer and buf.memory_resource is mr
    assert buf.is_managed and buf.is_host_accessible and buf.is_device_accessible
    assert buf.__dlpack_device__() == (13, 0)
    buf.fill(0x3C, stream=stream)
    stream.sync()
    host = _bytes_at(buf.handle, n)
    assert (host == 0x3C).all()  # the host reads managed memory in place
    host[:] = np.arange(n, dtype=np.uint64).astype(np.uint8)
    d = dev.allocate(n, stream=stream)
    d.copy_from(buf, stream=stream)
    out_mr = NumpyMemoryResource()
    out = out_mr.allocate(n)
    d.copy_to(out, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(out_mr.array(out), host)
    # A view of managed memory is classified by the driver.
    view = Buffer.from_handle(buf.handle, n)
    assert view.is_managed and view.__dlpack_device__()[0] == 13
    del host
    d.close()
    buf.close()
    stream.sync()


def _managed_by_the_driver(n):
    """A ManagedBuffer over cuMemAllocManaged memory (not a pool's), and its free."""
    from cuda.bindings import driver

    err, ptr = driver.cuMemAllocManaged(n, driver.CUmemAttach_flags.CU_MEM_ATTACH_GLOBAL.value)
    assert err == driver.CUresult.CUDA_SUCCESS, err
    return ManagedBuffer.from_handle(int(ptr), n), lambda: driver.cuMemFree(ptr)


@pytest.mark.gpu
def test_advice(dev, stream):
    mr = ManagedMemoryResource()
    buf = mr.allocate(1 << 21, stream=stream)
    stream.sync()
    free = buf.close
    if mr.uses_pool and not _managed_pool_takes_advice():
        # A CUDA 13.0 driver refuses advice on pool memory: the driver's error, as cuda.core
        # gives it. The advice itself is checked on memory that takes it.
        with pytest.raises(CUDAError, match="CUDA_ERROR_NOT_SUPPORTED"):
            buf.read_mostly = True
        buf.close()
        buf, free = _managed_by_the_driver(1 << 21)
    assert buf.read_mostly is False
    buf.read_mostly = True
    assert buf.read_mostly is True
    buf.read_mostly = False
    assert buf.read_mostly is False

    buf.preferred_location = dev
    assert buf.preferred_location == dev
    buf.preferred_location = Host()
    assert buf.preferred_location == Host()
    buf.preferred_location = None
    assert buf.preferred_location is None

    accessed = buf.accessed_by
    assert dev not in accessed
    accessed.add(dev)
    assert dev in buf.accessed_by and Device(dev.device_id) in set(buf.accessed_by)
    accessed.discard(dev)
    assert dev not in buf.accessed_by
    buf.accessed_by = [dev]
    assert set(buf.accessed_by) == {dev}
    buf.accessed_by = []
    assert len(buf.accessed_by) == 0
    with pytest.raises(TypeError, match="expected Device or Host items"):
        buf.accessed_by = ["x"]

    assert buf.last_prefetch_location is None  # never prefetched
    buf.prefetch(dev, stream=stream)
    stream.sync()
    assert buf.last_prefetch_location == dev
    buf.prefetch(Host(), stream=stream)
    stream.sync()
    assert buf.last_prefetch_location == Host()
    # A device ordinal is not a location here, as in cuda.core (which raises too).
    with pytest.raises(TypeError, match="location must be a Device or a Host, not int"):
        buf.prefetch(dev.device_id, stream=stream)
    stream.sync()
    free()


@pytest.mark.gpu
def test_discard(dev, stream):
    if not has_cuda_13():
        with pytest.raises(RuntimeError, match="needs a CUDA 13 driver"):
            ManagedMemoryResource().allocate(4096, stream=stream).discard(stream=stream)
        pytest.skip("discard needs a CUDA 13 driver and build (the refusal was checked)")
    # On cuMemAllocManaged memory; a pool's is compared with cuda.core's (test_differential).
    buf, free = _managed_by_the_driver(1 << 21)
    buf.fill(1, stream=stream)
    buf.discard(stream=stream)
    buf.discard_prefetch(dev, stream=stream)
    buf.fill(2, stream=stream)  # usable again once written
    stream.sync()
    assert (_bytes_at(buf.handle, 1 << 21) == 2).all()
    free()


@pytest.mark.gpu
def test_owned_pool_with_preferred_device(dev, stream):
    mr = ManagedMemoryResource(ManagedMemoryResourceOptions(preferred_location=dev.device_id))
    assert mr.preferred_location == dev and mr.device_id == dev.device_id
    if mr.uses_pool:
        assert mr.is_handle_owned
        base = mr.attributes.used_mem_current
        for _ in range(200):
            mr.allocate(1 << 16, stream=stream).close()
        stream.sync()
        assert mr.attributes.used_mem_current == base
    buf = mr.allocate(1 << 16, stream=stream)
    buf.fill(4, stream=stream)
    stream.sync()
    assert (_bytes_at(buf.handle, 1 << 16) == 4).all()
    buf.close()
    mr.close()


@pytest.mark.gpu
def test_host_preferred_pool(dev, stream):
    mr = ManagedMemoryResource({"preferred_location_type": "host"})
    assert mr.preferred_location == Host() and mr.device_id == -1
    buf = mr.allocate(4096, stream=stream)
    buf.fill(np.uint32(0xCAFEF00D), stream=stream)
    stream.sync()
    assert (_bytes_at(buf.handle, 4096).view(np.uint32) == 0xCAFEF00D).all()
    buf.close()
    mr.close()


@pytest.mark.gpu
def test_managed_resource_has_no_peer_access_set(dev):
    with pytest.raises(AttributeError, match="accessible from every device"):
        ManagedMemoryResource().peer_accessible_by
