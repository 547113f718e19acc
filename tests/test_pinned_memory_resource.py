"""PinnedMemoryResource (cuda_core/_memory/_pinned_mr.pyx)."""

import numpy as np
import pytest

from cuda_core import PinnedMemoryResource, PinnedMemoryResourceOptions
from helpers import has_cuda_13
from helpers.memory import NumpyMemoryResource


def test_options_checked_before_the_driver():
    with pytest.raises(TypeError, match="unknown field"):
        PinnedMemoryResource({"numa": 0})
    with pytest.raises(ValueError, match="numa_id must be >= 0"):
        PinnedMemoryResource({"numa_id": -3})


def _pinned_or_skip(dev, options=None):
    if not dev.properties.host_memory_pools_supported:
        with pytest.raises(RuntimeError, match="LegacyPinnedMemoryResource"):
            PinnedMemoryResource(options)
        pytest.skip("host memory pools are not supported here (the refusal was checked)")
    return PinnedMemoryResource(options)


@pytest.mark.gpu
def test_round_trip(dev, stream):
    mr = _pinned_or_skip(dev, PinnedMemoryResourceOptions())
    assert mr.device_id == -1 and mr.is_handle_owned and mr.numa_id is None
    assert mr.is_device_accessible and mr.is_host_accessible and not mr.is_managed
    n = 3 * 1024 * 1024 + 5
    data = np.random.default_rng(1).integers(0, 256, n, dtype=np.uint8)
    pinned = mr.allocate(n, stream=stream)
    assert pinned.device_id == -1 and pinned.is_host_accessible and pinned.is_device_accessible
    stream.sync()
    host = np.from_dlpack(pinned)  # kDLCUDAHost: NumPy reads it in place
    assert host.ctypes.data == pinned.handle
    host.view(np.uint8)[:] = data
    d = dev.allocate(n, stream=stream)
    d.copy_from(pinned, stream=stream)
    pinned.fill(0, stream=stream)
    d.copy_to(pinned, stream=stream)
    stream.sync()
    assert (host.view(np.uint8) == data).all()
    # The GPU writes pinned memory directly, too.
    pinned.fill(9, stream=stream)
    stream.sync()
    assert (host.view(np.uint8) == 9).all()
    del host
    d.close()
    pinned.close()
    stream.sync()
    mr.close()
    assert mr.is_closed


@pytest.mark.gpu
def test_without_options_the_drivers_current_host_pool(dev, stream):
    # As cuda.core: the driver's current pool of pinned host memory (CUDA 13), not owned, one
    # pool for every such resource; the GPU reads and writes it.
    a = _pinned_or_skip(dev)
    b = PinnedMemoryResource()
    if not has_cuda_13():  # no such pool (or no way to ask): each resource makes its own
        assert a.is_handle_owned and int(a.handle) != int(b.handle)
        return
    assert not a.is_handle_owned and int(a.handle) == int(b.handle)
    assert a.device_id == -1 and a.numa_id is None and a.is_host_accessible
    buf = a.allocate(4096, stream=stream)
    buf.fill(7, stream=stream)
    stream.sync()
    assert (np.from_dlpack(buf).view(np.uint8) == 7).all()
    buf.close()
    stream.sync()
    a.close()  # the pool is the driver's: it stays
    again = b.allocate(64, stream=stream)
    again.close()
    stream.sync()


@pytest.mark.gpu
def test_attributes_and_cycles(dev, stream):
    mr = _pinned_or_skip(dev, PinnedMemoryResourceOptions(max_size=64 << 20))
    base = mr.attributes.used_mem_current
    for _ in range(1000):
        mr.allocate(4096, stream=stream).close()
    stream.sync()
    assert mr.attributes.used_mem_current == base
    mr.close()


@pytest.mark.gpu
def test_numa_bound_pool(dev, stream):
    numa = dev.properties.host_numa_id
    if numa < 0 or not dev.properties.host_numa_memory_pools_supported:
        pytest.skip("no host NUMA node or no NUMA host pools on this machine")
    mr = PinnedMemoryResource({"numa_id": numa})
    assert mr.numa_id == numa
    buf = mr.allocate(1 << 20, stream=stream)
    buf.fill(1, stream=stream)
    out_mr = NumpyMemoryResource()
    out = out_mr.allocate(1 << 20)
    buf.copy_to(out, stream=stream)
    stream.sync()
    assert (out_mr.array(out) == 1).all()
    buf.close()
    mr.close()
