"""VirtualMemoryResource (cuda_core/_memory/_vmm_mr.pyx)."""

import gc

import numpy as np
import pytest

from cuda_core import (Buffer, VirtualMemoryBuffer, VirtualMemoryResource,
                       VirtualMemoryResourceOptions)
from helpers.memory import NumpyMemoryResource, vmm_minimum_granularity


def test_config_checked_before_the_driver():
    with pytest.raises(TypeError, match="unknown field"):
        VirtualMemoryResource(0, {"location": "device"})
    with pytest.raises(ValueError, match="addr_align must be a power of two"):
        VirtualMemoryResource(0, {"addr_align": 3})


def _read(buf, stream, n=None):
    mr = NumpyMemoryResource()
    out = mr.allocate(buf.size if n is None else n)
    Buffer.from_handle(buf.handle, out.size).copy_to(out, stream=stream)
    stream.sync()
    return mr.array(out).copy()


def _vmm(dev, config=None):
    if not dev.properties.virtual_memory_management_supported:
        pytest.skip("the device has no virtual memory management")
    return VirtualMemoryResource(dev, config)


@pytest.mark.gpu
def test_round_trip(dev, stream):
    mr = _vmm(dev)
    assert mr.device_id == dev.device_id and mr.is_device_accessible
    assert not mr.is_host_accessible and not mr.is_managed
    assert mr.config == VirtualMemoryResourceOptions()
    n = (1 << 20) + 1
    buf = mr.allocate(n)  # no stream needed
    assert buf.size == n and buf.memory_resource is mr and buf.device_id == dev.device_id
    assert type(buf) is VirtualMemoryBuffer  # as cuda.core 1.3
    data = np.random.default_rng(7).integers(0, 256, n, dtype=np.uint8)
    host_mr = NumpyMemoryResource()
    host = host_mr.allocate(n)
    host_mr.array(host)[:] = data
    buf.copy_from(host, stream=stream)
    np.testing.assert_array_equal(_read(buf, stream), data)
    assert "allocations=1" in repr(mr)
    buf.close(stream)
    assert "allocations=0" in repr(mr)


@pytest.mark.gpu
def test_grow_in_place_then_move(dev, stream):
    mr = _vmm(dev, VirtualMemoryResourceOptions(granularity="minimum"))
    gran = vmm_minimum_granularity(dev)
    buf = mr.allocate(1000, stream=stream)  # one granule mapped, two reserved
    assert buf.handle % gran == 0
    buf.fill(0xA1, stream=stream)
    ptr = buf.handle
    # Within the memory already mapped: only the size changes.
    same = mr.modify_allocation(buf, 1500)
    assert same.handle == ptr and same.size == 1500
    assert buf.is_closed and not same.is_closed
    with pytest.raises(RuntimeError, match="this VirtualMemoryBuffer is closed"):
        buf.handle
    # Beyond it, within the reservation: a second granule is mapped in place.
    grown = mr.modify_allocation(same, gran + 1)
    assert grown.handle == ptr and grown.size == gran + 1
    assert (_read(grown, stream, 1000) == 0xA1).all()
    grown.fill(0x5C, stream=stream)
    assert (_read(grown, stream) == 0x5C).all()
    # Beyond the reservation: the physical memory is remapped at a new address; the bytes
    # stay where they are.
    Buffer.from_handle(grown.handle, 1000).fill(0x11, stream=stream)
    moved = mr.modify_allocation(grown, 16 * gran)
    assert grown.is_closed and moved.size == 16 * gran
    assert type(same) is type(grown) is type(moved) is VirtualMemoryBuffer
    assert (_read(moved, stream, 1000) == 0x11).all()
    assert (_read(moved, stream, gran + 1)[1000:] == 0x5C).all()
    moved.fill(0x22, stream=stream)
    assert (_read(moved, stream) == 0x22).all()
    assert "allocations=1" in repr(mr)
    moved.close(stream)
    assert "allocations=0" in repr(mr)


@pytest.mark.gpu
def test_modify_allocation_checks(dev, stream):
    mr = _vmm(dev)
    other = dev.allocate(64, stream=stream)
    with pytest.raises(ValueError, match="was not allocated by this resource"):
        mr.modify_allocation(other, 128)
    with pytest.raises(TypeError, match="buf must be a Buffer"):
        mr.modify_allocation(b"x", 128)
    buf = mr.allocate(4096)
    # It never shrinks, as cuda.core: a size no larger than the buffer's returns it unchanged.
    assert mr.modify_allocation(buf, 0) is buf and mr.modify_allocation(buf, 100) is buf
    assert mr.modify_allocation(buf, -1) is buf  # never shrinks: a no-op, as in cuda.core
    with pytest.raises(OverflowError, match="does not fit in 64 bits"):
        mr.modify_allocation(buf, 2**64)
    assert buf.size == 4096 and not buf.is_closed
    with pytest.raises(ValueError, match="config.location_type='host' differs"):
        mr.modify_allocation(buf, 1 << 22, {"location_type": "host"})
    capsule = buf.__dlpack__(stream=-1)
    with pytest.raises(RuntimeError, match="live DLPack exports"):
        mr.modify_allocation(buf, 1 << 22)
    del capsule
    bigger = mr.modify_allocation(buf, 1 << 22, {"self_access": "rw"})
    assert bigger.size == 1 << 22
    bigger.close()
    with pytest.raises(ValueError, match="was not allocated by this resource, or was freed"):
        mr.deallocate(0x1000, 16)
    other.close()


@pytest.mark.gpu
def test_garbage_collection_unmaps(dev, stream):
    mr = _vmm(dev)
    for _ in range(20):
        mr.allocate(3 << 20)
    gc.collect()
    assert "allocations=0" in repr(mr)


@pytest.mark.gpu
def test_host_location(dev, stream):
    if not dev.properties.host_virtual_memory_management_supported:
        with pytest.raises(RuntimeError, match="cannot map host memory"):
            VirtualMemoryResource(dev, {"location_type": "host"})
        pytest.skip("no host memory through the virtual memory API here (refusal checked)")
    mr = VirtualMemoryResource(dev, {"location_type": "host", "handle_type": None})
    assert mr.is_host_accessible
    buf = mr.allocate(1 << 16, stream=stream)
    buf.fill(3, stream=stream)
    stream.sync()
    assert (np.from_dlpack(buf) == 3).all()  # the host reads it in place
    buf.close()


def test_virtual_memory_buffer_is_a_buffer_made_only_by_the_resource():
    assert issubclass(VirtualMemoryBuffer, Buffer)
    with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
        VirtualMemoryBuffer()


@pytest.mark.gpu
def test_a_free_on_a_capturing_stream_is_refused_and_the_capture_stays_valid(dev):
    # As cuda.core 1.3: unmapping cannot be captured, and waiting for a capturing stream
    # would invalidate the capture, so the free is refused before either.
    mr = _vmm(dev)
    buf = mr.allocate(4096)
    ptr = int(buf.handle)
    gb = dev.create_graph_builder().begin_building()
    with pytest.raises(RuntimeError, match="cannot be freed on a stream that is capturing"):
        buf.close(gb.stream)
    graph = gb.end_building().complete()  # the capture is still valid
    graph.close()
    gb.close()
    assert "allocations=1" in repr(mr)  # the resource still holds the memory ...
    mr.deallocate(ptr, 4096)  # ... until it is freed outside the capture
    assert "allocations=0" in repr(mr)
