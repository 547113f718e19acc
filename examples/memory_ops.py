# ################################################################################################
# memory_ops.py: the memory resources, copies between them, fills, and DLPack views.
#
# Allocates from the device's default resource (device memory), a pinned host resource (a host
# memory pool where the device supports one, else LegacyPinnedMemoryResource), the legacy pinned
# resource and the managed resource; moves data between them with Buffer.copy_from/copy_to,
# fills buffers with 1- and 4-byte patterns, and reads the results without copies through
# DLPack: host-readable memory (pinned, managed) into NumPy, device memory into CuPy where CuPy
# is installed.
#
# Run:  python examples/memory_ops.py
# On a machine without a GPU or driver it prints one line saying why, and exits 0.
# ################################################################################################

import sys

import numpy as np

from cuda_core import (Buffer, CUDAError, Device, Host, LegacyPinnedMemoryResource,
                       ManagedMemoryResource, PinnedMemoryResource)

try:
    import cupy as cp
except ImportError:
    cp = None

DLPACK_DEVICE_TYPES = {1: "kDLCPU", 2: "kDLCUDA", 3: "kDLCUDAHost", 13: "kDLCUDAManaged"}


def as_floats(buf):
    """A NumPy float32 view of a host-readable buffer (its DLPack export is int8 bytes)."""
    return np.from_dlpack(buf).view(np.float32)


def main():
    try:
        dev = Device(0)
        dev.set_current()
    except CUDAError as exc:
        print(f"No GPU: {exc}")
        return 0
    stream = dev.create_stream()

    device_mr = dev.memory_resource  # the device's default: a stream-ordered device pool
    legacy_mr = LegacyPinnedMemoryResource()
    if dev.properties.host_memory_pools_supported:
        pinned_mr = PinnedMemoryResource()
    else:
        print("(no host memory pools on this device or driver: LegacyPinnedMemoryResource "
              "stands in for PinnedMemoryResource)")
        pinned_mr = legacy_mr
    managed_mr = ManagedMemoryResource()
    for name, mr in (("device", device_mr), ("pinned", pinned_mr), ("legacy pinned", legacy_mr),
                     ("managed", managed_mr)):
        print(f"{name + ' memory:':<22}{type(mr).__name__:<28} device-accessible "
              f"{mr.is_device_accessible!s:<6} host-accessible {mr.is_host_accessible!s:<6} "
              f"managed {mr.is_managed}")

    n = 1 << 16
    nbytes = n * np.dtype(np.float32).itemsize
    expected = np.arange(n, dtype=np.float32)

    pinned = pinned_mr.allocate(nbytes, stream=stream)
    device = device_mr.allocate(nbytes, stream=stream)
    managed = managed_mr.allocate(nbytes, stream=stream)
    legacy = legacy_mr.allocate(nbytes)  # the legacy resource is synchronous: no stream
    for name, buf in (("device", device), ("pinned", pinned), ("legacy pinned", legacy),
                      ("managed", managed)):
        dl_type, dl_id = buf.__dlpack_device__()
        print(f"{name + ' buffer:':<22}{buf.size} bytes at {buf.handle:#x}, DLPack device "
              f"{DLPACK_DEVICE_TYPES.get(dl_type, dl_type)} {dl_id}")
    # Pool allocations are stream-ordered: the host may touch them once the stream is there.
    stream.sync()

    # Host -> device -> device -> managed, all queued on one stream.
    as_floats(pinned)[:] = expected
    device.copy_from(pinned, stream=stream)
    device_copy = device.copy_to(stream=stream)  # no dst: a new buffer from device_mr
    managed.prefetch(dev, stream=stream)  # migrate the pages to the GPU before it writes them
    managed.copy_from(device_copy, stream=stream)

    # A 4-byte pattern (a float32) over the first device buffer, then device -> legacy pinned.
    device.fill(np.float32(-1.5), stream=stream)
    device.copy_to(legacy, stream=stream)

    # Device -> plain (pageable) NumPy memory, wrapped in a non-owning Buffer kept by its owner.
    plain = np.empty(n, dtype=np.float32)
    device_copy.copy_to(Buffer.from_handle(plain.ctypes.data, plain.nbytes, owner=plain),
                        stream=stream)

    managed.prefetch(Host(), stream=stream)  # back to the host before NumPy reads it
    stream.sync()
    checks = {
        "pinned -> device -> device -> managed": np.array_equal(as_floats(managed), expected),
        "float32 fill -> legacy pinned": bool((as_floats(legacy) == np.float32(-1.5)).all()),
        "device -> pageable NumPy array": np.array_equal(plain, expected),
    }

    # A 1-byte fill of managed memory, read back byte by byte.
    managed.fill(7, stream=stream)
    stream.sync()
    checks["byte fill of managed memory"] = bool((np.from_dlpack(managed) == 7).all())

    if cp is not None:
        # CuPy's import of device memory is zero-copy and stream-ordered: CuPy's stream waits
        # for the work queued so far on the stream the buffer was allocated on.
        on_gpu = cp.from_dlpack(device_copy).view(cp.float32)
        checks["device -> CuPy through DLPack"] = bool((on_gpu == cp.asarray(expected)).all())
    else:
        print("(CuPy is not installed: the device-memory DLPack view is skipped)")

    for what, ok in checks.items():
        print(f"{what:<40} {'ok' if ok else 'WRONG'}")
    for buf in (pinned, device, device_copy, managed, legacy):
        buf.close(stream)
    stream.sync()
    assert all(checks.values()), "memory_ops: a copy or fill gave the wrong bytes"
    return 0


if __name__ == "__main__":
    sys.exit(main())
