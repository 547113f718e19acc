"""Issue 28, point 3: what the driver reports, and does, for another device's access to a memory
pool's allocation, on a machine of two GPUs. Each case runs in a fresh child process (a kernel
that faults poisons its context), with device 0 owning the memory and device 1 looking at it:

* cuMemPoolGetAccess for device 1 (the state peer_accessible_by reads);
* CU_POINTER_ATTRIBUTE_ACCESS_FLAGS read with device 1's context current;
* whether a kernel on device 1 reads and writes the memory (its words, or the CUDA error);

for a pool of ours with no grant, the same after granting device 1 and after revoking it, the
device's default pool, and plain cuMemAlloc memory (no peer access enabled between contexts).

Run on the GPU machine:  bash .gpu/on-gpu.sh python3 tools/gpu/probe_peer_access.py
"""

import ctypes
import json
import subprocess
import sys

CASES = ("own pool, no grant", "own pool, granted", "own pool, granted then revoked",
         "default pool, no grant", "cuMemAlloc, no peer access")

KERNEL = r"""
extern "C" __global__ void add_one(unsigned int* p, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) p[i] += 1;
}
"""


def _flags(ptr):
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuPointerGetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64]
    value = ctypes.c_uint(0xFFFF)
    rc = lib.cuPointerGetAttribute(ctypes.byref(value), 16, ctypes.c_uint64(ptr))
    return value.value if rc == 0 else f"CUresult {rc}"


def child(case):
    import numpy as np
    from cuda.bindings import driver

    from cuda_core import (Device, DeviceMemoryResource, DeviceMemoryResourceOptions,
                           LaunchConfig, Program, ProgramOptions, launch)

    d0, d1 = Device(0), Device(1)
    d1.set_current()
    s1 = d1.create_stream()
    k = Program(KERNEL, "c++", ProgramOptions(arch="sm_" + d1.arch)).compile("cubin") \
        .get_kernel("add_one")
    d0.set_current()
    s0 = d0.create_stream()
    n = 1024
    facts = {"can_access_peer": [d1.can_access_peer(d0), d0.can_access_peer(d1)]}
    pool = None
    if case.startswith("own pool"):
        mr = DeviceMemoryResource(0, DeviceMemoryResourceOptions(max_size=64 << 20))
    elif case.startswith("default pool"):
        mr = d0.memory_resource
    else:
        mr = None
    if mr is not None:
        if "granted" in case:
            mr.peer_accessible_by = {1}
        if "revoked" in case:
            mr.peer_accessible_by = set()
        buf = mr.allocate(4 * n, stream=s0)
        ptr = int(buf.handle)
        pool = int(mr.handle)
        facts["peer_accessible_by"] = sorted(d.device_id for d in mr.peer_accessible_by)
    else:
        err, dptr = driver.cuMemAlloc(4 * n)
        assert err == driver.CUresult.CUDA_SUCCESS, err
        ptr = int(dptr)
    driver.cuMemsetD32(ptr, 5, n)
    driver.cuCtxSynchronize()  # the memset is ordered on the legacy stream, not on s0
    if pool is not None:
        loc = driver.CUmemLocation()
        loc.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        loc.id = 1
        err, flags = driver.cuMemPoolGetAccess(driver.CUmemoryPool(pool), loc)
        facts["cuMemPoolGetAccess(dev 1)"] = [err.name, int(flags)]
    d1.set_current()
    facts["ACCESS_FLAGS with dev 1 current"] = _flags(ptr)
    d0.set_current()
    facts["ACCESS_FLAGS with dev 0 current"] = _flags(ptr)
    print("PRE " + json.dumps(facts), flush=True)  # what was seen before the kernel ran
    d1.set_current()
    try:
        launch(s1, LaunchConfig(grid=(n + 255) // 256, block=256), k, ptr, np.uint64(n))
        s1.sync()
        d0.set_current()
        host = np.empty(n, np.uint32)
        err, = driver.cuMemcpyDtoH(host.ctypes.data, ptr, 4 * n)
        facts["kernel on dev 1"] = f"ran; words now {sorted(set(host.tolist()))}"
    except Exception as exc:  # the outcome probed
        facts["kernel on dev 1"] = f"{type(exc).__name__}: {str(exc)[:120]}"
    print("FACTS " + json.dumps(facts), flush=True)


def nvml_identity():
    """Whether NVML devices found twice compare equal, in cuda.core and in ours."""
    import importlib

    for pkg in ("cuda.core", "cuda_core"):
        try:
            system = importlib.import_module(pkg + ".system")
            level = importlib.import_module(pkg + ".system.typing").GpuTopologyLevel.SYSTEM
            all_devices = list(system.Device.get_all_devices())
            near = list(all_devices[0].get_topology_nearest_gpus(level))
            again = system.Device(index=0)
            print(f"NVML {pkg}: nearest {len(near)}, nearest in all: "
                  f"{[d in all_devices for d in near]}, Device(index=0) == first: "
                  f"{again == all_devices[0]}, hash equal: {hash(again) == hash(all_devices[0])}"
                  f", eq defined: {'__eq__' in type(again).__dict__}")
        except Exception as exc:  # reported, the probe goes on
            print(f"NVML {pkg}: {type(exc).__name__}: {exc}")


def discard(pkg, sync_between):
    """tests/test_managed_memory_resource.py::test_discard's sequence on cuMemAllocManaged
    memory, in ``pkg``: fill 1, discard, discard_prefetch to device 0, fill 2, sync; the
    distinct byte values read on the host (a stream sync after the discards where asked)."""
    import importlib

    import numpy as np
    from cuda.bindings import driver

    m = importlib.import_module(pkg)
    dev = m.Device(0)
    dev.set_current()
    s = dev.create_stream()
    n = 1 << 21
    err, ptr = driver.cuMemAllocManaged(n, driver.CUmemAttach_flags.CU_MEM_ATTACH_GLOBAL.value)
    buf = m.ManagedBuffer.from_handle(int(ptr), n)
    buf.fill(1, stream=s)
    buf.discard(stream=s)
    buf.discard_prefetch(dev, stream=s)
    if sync_between:
        s.sync()
    buf.fill(2, stream=s)
    s.sync()
    data = np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(int(ptr)))
    return sorted(set(np.unique(data).tolist()))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--discard":
        print(f"DISCARD {sys.argv[2]} sync between={sys.argv[3]}: bytes "
              f"{discard(sys.argv[2], sys.argv[3] == '1')}")
        return
    nvml_identity()
    for pkg in ("cuda.core", "cuda_core"):
        for between in ("0", "1"):
            p = subprocess.run([sys.executable, __file__, "--discard", pkg, between],
                               capture_output=True, text=True, timeout=120)
            print(p.stdout.strip() or f"DISCARD {pkg} {between}: exit {p.returncode} "
                                       f"{p.stderr[-400:]}")
    for case in CASES:
        p = subprocess.run([sys.executable, __file__, "--child", case], capture_output=True,
                           text=True, timeout=120)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith(("PRE ", "FACTS "))]
        print(f"PEER {case}: exit {p.returncode}: {lines[-1] if lines else p.stderr[-600:]}")


if __name__ == "__main__":
    main()
