"""A memory resource written in pure Python, over NumPy host memory: the kind of resource a
user writes, and a way to exercise Buffer ownership without a GPU; and what the
virtual-memory tests ask of the driver directly."""

import numpy as np

from cuda_core import Buffer, MemoryResource


class NumpyMemoryResource(MemoryResource):
    """Allocates NumPy arrays and hands out their addresses.

    ``device_accessible``/``host_accessible`` choose what the resource claims, so that one
    class can stand for plain host memory (the default), pinned-like memory, or (never
    dereferenced) device memory in CPU-only tests. ``calls`` records every deallocate.
    """

    def __init__(self, *, device_accessible=False, host_accessible=True, device_id=-1,
                 managed=False, fail_deallocate=None):
        self.live = {}
        self.calls = []
        self._device_accessible = device_accessible
        self._host_accessible = host_accessible
        self._device_id = device_id
        self._managed = managed
        self.fail_deallocate = fail_deallocate

    def allocate(self, size, *, stream=None):
        array = np.zeros(max(size, 1), dtype=np.uint8)
        ptr = array.ctypes.data
        self.live[ptr] = array
        return Buffer.from_handle(ptr, size, mr=self, stream=stream)

    def deallocate(self, ptr, size, *, stream=None):
        self.calls.append((ptr, size, stream))
        if self.fail_deallocate is not None:
            raise self.fail_deallocate
        del self.live[ptr]

    def array(self, buf):
        """The NumPy array behind ``buf``."""
        return self.live[buf.handle][:buf.size]

    @property
    def is_device_accessible(self):
        return self._device_accessible

    @property
    def is_host_accessible(self):
        return self._host_accessible

    @property
    def is_managed(self):
        return self._managed

    @property
    def device_id(self):
        return self._device_id


def vmm_minimum_granularity(dev):
    """The driver's minimum allocation granularity of device memory on ``dev`` with a POSIX
    file-descriptor handle type (what VirtualMemoryResource asks for by default)."""
    from cuda.bindings import driver

    prop = driver.CUmemAllocationProp()
    prop.type = driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = dev.device_id
    prop.requestedHandleTypes = (
        driver.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    err, gran = driver.cuMemGetAllocationGranularity(
        prop, driver.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM)
    assert err == driver.CUresult.CUDA_SUCCESS
    return gran


def device_bytes_of_this_process(dev):
    """The device memory this process holds on ``dev``: NVML's count for it where NVML lists
    this process (it does not inside a container with its own PID namespace), else the
    device's used memory where NVML lists no other process on it; None where neither tells
    (other processes share the GPU), so that a leak check never reads their memory as ours."""
    import os

    from cuda.bindings import driver

    processes = dev.to_system_device().compute_running_processes
    for process in processes:
        if process.pid == os.getpid() and process.used_gpu_memory is not None:
            return process.used_gpu_memory
    if len(processes) <= 1:  # only this process, under a PID NVML does not know
        err, free, total = driver.cuMemGetInfo()
        assert err == driver.CUresult.CUDA_SUCCESS, err
        return total - free
    return None

