"""Options of the memory resources (cuda_core/_memory/_mr_options.py): pure checks, no GPU."""

import dataclasses

import numpy as np
import pytest

from cuda_core import (DeviceMemoryResourceOptions, ManagedMemoryResourceOptions,
                       PinnedMemoryResourceOptions, VirtualMemoryResourceOptions)
from cuda_core._checks import SizeOverflowError
from cuda_core._errors import InvalidValueError
from cuda_core._options import check_or_create_options
from cuda_core.typing import (ManagedMemoryLocationType, VirtualMemoryAccessType,
                              VirtualMemoryAllocationType, VirtualMemoryGranularityType,
                              VirtualMemoryHandleType, VirtualMemoryLocationType)


def test_device_options_defaults_and_coercion():
    assert DeviceMemoryResourceOptions() == DeviceMemoryResourceOptions(False, 0)
    opts = check_or_create_options(DeviceMemoryResourceOptions,
                                   {"ipc_enabled": True, "max_size": 1 << 30}, "options")
    assert opts.ipc_enabled is True and opts.max_size == 1 << 30
    assert check_or_create_options(DeviceMemoryResourceOptions, None, "o") == \
        DeviceMemoryResourceOptions()
    with pytest.raises(TypeError, match="unknown field\\(s\\) 'maxsize'"):
        check_or_create_options(DeviceMemoryResourceOptions, {"maxsize": 1}, "options")
    with pytest.raises(TypeError, match="must be a DeviceMemoryResourceOptions, a dict or None"):
        check_or_create_options(DeviceMemoryResourceOptions, 5, "options")


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"ipc_enabled": "no"}, TypeError, "DeviceMemoryResourceOptions.ipc_enabled must be a bool"),
    ({"max_size": -1}, ValueError, "DeviceMemoryResourceOptions.max_size must be >= 0"),
    ({"max_size": 1.5}, TypeError, "DeviceMemoryResourceOptions.max_size must be an int"),
    ({"max_size": np.True_}, TypeError, "max_size must be an int"),
    ({"max_size": 1 << 64}, ValueError, "does not fit in 64 bits"),
])
def test_device_options_checked(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        DeviceMemoryResourceOptions(**kwargs)


def test_pinned_options():
    opts = PinnedMemoryResourceOptions(numa_id=1, max_size=4096)
    assert (opts.ipc_enabled, opts.max_size, opts.numa_id) == (False, 4096, 1)
    assert PinnedMemoryResourceOptions().numa_id is None
    with pytest.raises(ValueError, match="PinnedMemoryResourceOptions.numa_id must be >= 0"):
        PinnedMemoryResourceOptions(numa_id=-1)
    with pytest.raises(TypeError, match="PinnedMemoryResourceOptions.numa_id must be an int or "
                                        "None"):
        PinnedMemoryResourceOptions(numa_id="0")
    with pytest.raises(TypeError, match="ipc_enabled must be a bool"):
        PinnedMemoryResourceOptions(ipc_enabled="no")


def test_managed_options_infer_the_location_type():
    assert ManagedMemoryResourceOptions().preferred_location_type is None
    dev = ManagedMemoryResourceOptions(preferred_location=0)
    assert dev.preferred_location_type == "device"
    assert dev.preferred_location_type is ManagedMemoryLocationType.DEVICE
    host = ManagedMemoryResourceOptions(preferred_location=-1)
    assert host.preferred_location_type == "host"
    assert ManagedMemoryResourceOptions(preferred_location_type="host").preferred_location is None
    numa = ManagedMemoryResourceOptions(preferred_location=2, preferred_location_type="host_numa")
    assert numa.preferred_location_type is ManagedMemoryLocationType.HOST_NUMA


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"preferred_location_type": "device"}, ValueError, "must be a device ordinal"),
    ({"preferred_location": -1, "preferred_location_type": "device"}, ValueError,
     "must be a device ordinal"),
    ({"preferred_location": 0, "preferred_location_type": "host"}, ValueError,
     "must be None or -1"),
    ({"preferred_location_type": "host_numa"}, ValueError, "must be a host NUMA node id"),
    ({"preferred_location_type": "gpu"}, ValueError,
     "preferred_location_type must be one of 'device', 'host', 'host_numa', None, got 'gpu'"),
    ({"preferred_location_type": 1}, TypeError, "must be one of"),
    ({"preferred_location": -2}, ValueError, "preferred_location must be >= -1"),
    ({"preferred_location": "0"}, TypeError, "preferred_location must be an int or None"),
])
def test_managed_options_checked(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        ManagedMemoryResourceOptions(**kwargs)


def test_vmm_options_defaults():
    opts = VirtualMemoryResourceOptions()
    assert opts.allocation_type == "pinned" and opts.location_type == "device"
    assert opts.handle_type == "posix_fd" and opts.granularity == "recommended"
    assert opts.gpu_direct_rdma is False and opts.addr_hint == 0 and opts.addr_align is None
    assert opts.peers == () and opts.self_access == "rw" and opts.peer_access == "rw"
    assert isinstance(opts.location_type, VirtualMemoryLocationType)
    assert isinstance(opts.handle_type, VirtualMemoryHandleType)
    assert isinstance(opts.granularity, VirtualMemoryGranularityType)
    assert isinstance(opts.allocation_type, VirtualMemoryAllocationType)
    assert isinstance(opts.self_access, VirtualMemoryAccessType)


def test_vmm_options_normalize():
    opts = VirtualMemoryResourceOptions(
        location_type=VirtualMemoryLocationType.HOST_NUMA, handle_type=None,
        granularity="minimum", peers=[1, 2, 1], self_access="r", peer_access=None,
        addr_align=1 << 21)
    assert opts.location_type == "host_numa" and opts.handle_type is None
    assert opts.peers == (1, 2)
    assert opts.self_access == "r" and opts.peer_access is None
    # 0 is the driver's default alignment, as None.
    assert VirtualMemoryResourceOptions(addr_align=0).addr_align == 0
    assert str(opts.granularity) == "minimum"
    assert dataclasses.replace(opts, addr_hint=0x1000).addr_hint == 0x1000


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"allocation_type": "paged"}, ValueError, "allocation_type must be one of 'pinned', "
                                               "'managed', got 'paged'"),
    ({"location_type": "gpu"}, ValueError, "location_type must be one of"),
    ({"handle_type": "dmabuf"}, ValueError, "handle_type must be one of 'posix_fd', "
                                            "'win32_kmt', 'fabric', None"),
    ({"granularity": None}, ValueError, "granularity must be one of"),
    ({"gpu_direct_rdma": "false"}, TypeError, "gpu_direct_rdma must be a bool"),
    ({"addr_hint": -4096}, ValueError, "addr_hint must be >= 0"),
    ({"addr_align": 3000}, InvalidValueError, "addr_align must be a power of two, got 3000"),
    ({"addr_align": -1}, SizeOverflowError, "addr_align must be >= 0"),
    ({"peers": 1}, TypeError, "peers must be an iterable of devices"),
    ({"peers": [-1]}, InvalidValueError, "peers\\[0\\] must be >= 0, got -1"),
    ({"peers": [0, np.True_]}, TypeError, "peers\\[1\\] must be an int, not numpy.bool"),
    ({"self_access": "w"}, ValueError, "self_access must be one of 'rw', 'r', None"),
])
def test_vmm_options_checked(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        VirtualMemoryResourceOptions(**kwargs)
