"""Probe only (issue 28, point 1): with this folder first on PYTHONPATH, every Python process,
the spawned ones included, opens an Event it unpickles from multiprocessing in its current
context (Event.from_ipc_descriptor), instead of in the exporting device's primary context, so
that examples/multi_gpu_allreduce.py can be run under that rule before the package adopts it."""
import cuda_core._event as _event

_original = _event._rebuild_event


def _rebuild_event(device_uuid, desc):
    from cuda.bindings import driver

    err, ctx = driver.cuCtxGetCurrent()
    if int(ctx) == 0:
        return _original(device_uuid, desc)
    return _event.Event.from_ipc_descriptor(desc)


_rebuild_event.__module__ = "cuda_core._event"
_event._rebuild_event = _rebuild_event
