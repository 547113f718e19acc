"""Issue 28, point 1: a process waits on an IPC event exported by a process on the other GPU
(examples/multi_gpu_allreduce.py's IPC part died there with SIGSEGV inside cuStreamWaitEvent).
Which importer setups the driver survives, each importer a fresh process on device 0, the
event exported from device 1:

* V1: opened with device 0's context current (Event.from_ipc_descriptor); a device-0 stream
      waits.
* V2: opened in device 1's primary context, retained but never made current by the user (what
      unpickling an Event did: _event._rebuild_event); a device-0 stream waits.
* V3: as V2, with device 1 made current once before (Device(1).set_current()).
* V4: as V2, then cuCtxEnablePeerAccess from device 0's context to device 1's before the wait.
* V5: as V2, then the event synchronized (cuEventSynchronize) instead of a stream wait.
* V6: V2 through the raw driver calls only (cuda.bindings): no package involved.

The exporter (its own process) records the event on a stream of device 1 and keeps it alive
while the importers run. Each line: the variant, the importer's exit code (-11 is SIGSEGV) and
what it printed.

Run on a two-GPU machine:  bash .gpu/on-gpu.sh python3 tools/gpu/probe_ipc_event_devices.py
"""

import importlib
import os
import pickle
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _ipc_probe beside it

from _ipc_probe import device_1_ipc_event, main, run_importer

VARIANTS = ("V1", "V2", "V3", "V4", "V5", "V6")


def _ok(result):
    err = result[0]
    assert err == 0 or getattr(err, "value", 1) == 0, result
    return result[1] if len(result) == 2 else result[1:]


def importer(pkg, variant, path):
    from cuda.bindings import driver

    m = importlib.import_module(pkg)
    with open(path, "rb") as f:
        raw = f.read()
    _ok(driver.cuInit(0) + (None,))
    dev0, dev1 = _ok(driver.cuDeviceGet(0)), _ok(driver.cuDeviceGet(1))
    if variant == "V6":
        ctx0 = _ok(driver.cuDevicePrimaryCtxRetain(dev0))
        ctx1 = _ok(driver.cuDevicePrimaryCtxRetain(dev1))
        _ok(driver.cuCtxSetCurrent(ctx0) + (None,))
        s = _ok(driver.cuStreamCreate(1))
        handle = driver.CUipcEventHandle()
        handle.reserved = raw
        _ok(driver.cuCtxPushCurrent(ctx1) + (None,))
        ev = _ok(driver.cuIpcOpenEventHandle(handle))
        _ok(driver.cuCtxPopCurrent())
        print("opened in ctx1", flush=True)
        (err,) = driver.cuStreamWaitEvent(s, ev, 0)
        print("waited", err.name, flush=True)
        (err,) = driver.cuStreamSynchronize(s)
        print("synced", err.name, flush=True)
        return
    desc, uuid1 = pickle.loads(raw)
    d0, d1 = m.Device(0), m.Device(1)
    if variant == "V3":
        d1.set_current()
        d1.create_stream()
    d0.set_current()
    s0 = d0.create_stream()
    if variant == "V1":
        ev = m.Event.from_ipc_descriptor(desc)
    else:
        from cuda_core._event import _rebuild_event

        ev = _rebuild_event(uuid1, desc)
    print(f"opened, event device {ev.device.device_id}", flush=True)
    if variant == "V4":
        ctx1 = _ok(driver.cuDevicePrimaryCtxRetain(dev1))
        (err,) = driver.cuCtxEnablePeerAccess(ctx1, 0)
        print("peer access", err.name, flush=True)
    if variant == "V5":
        ev.sync()
        print("synced the event", flush=True)
    else:
        s0.wait(ev)
        print("waited", flush=True)
        s0.sync()
        print("synced", flush=True)


def exporter(pkg):
    ev = device_1_ipc_event(importlib.import_module(pkg))
    desc = ev.ipc_descriptor
    raw_path = tempfile.mktemp()
    from cuda_core._memory._ipc_base import device_uuid

    with open(raw_path, "wb") as f:
        f.write(pickle.dumps((desc, device_uuid(1))))
    for variant in VARIANTS:
        path = raw_path
        if variant == "V6":  # the driver's 64 bytes alone
            path = raw_path + ".raw"
            with open(path, "wb") as f:
                f.write(desc.__reduce__()[1][0])
        run_importer(__file__, "IPCEV", pkg, variant, path, 60)
    ev.close()


if __name__ == "__main__":
    main(__file__, importer, exporter, ("cuda_core",), 400)
