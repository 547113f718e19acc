"""Foundation latency benchmark: Device, context, stream and event calls.

Each case is measured four ways in this one process:

* ``cuda_core``     -- this package (``import cuda_core``), the subject;
* ``cuda.core``     -- NVIDIA's cuda.core 1.2 (``from cuda.core import Device``), the baseline;
* ``cuda.bindings`` -- the raw Python bindings (``cuda.bindings.driver``), results unchecked
                       inside the loop (checked once in setup);
* ``C floor``       -- the same driver calls in a C loop (``_floor.c``, built at run time).

Target: none of ours slower than cuda.core's (a median comparison per case). The report
always exits 0 once it ran; it exits 1, with one line, where there is no GPU or driver.

Run on the GPU machine:  bash .gpu/on-gpu.sh python3 benchmarks/foundation.py
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _floor  # noqa: E402
from _harness import (Case, Contender, add_arguments, device_meta, finish,  # noqa: E402
                      run_cases, run_script)

OURS = "cuda_core"
NVIDIA = "cuda.core"
RAW = "cuda.bindings"
FLOOR = "C floor"
TARGET = "none of ours slower than cuda.core's"


# -- helpers ---------------------------------------------------------------------------------

def _check(result, what, ok=(0,)):
    """Unpack a cuda.bindings ``(err, *values)`` tuple, raising on a failure code."""
    err = result[0]
    if int(err) not in ok:
        raise RuntimeError(f"{what} failed: {err!r}")
    values = result[1:]
    return values[0] if len(values) == 1 else values or None


def _nv_device():
    from cuda.core import Device as NvDevice

    dev = NvDevice(0)
    dev.set_current()
    return dev


def _raw():
    from cuda.bindings import driver

    return driver


class _RawContext:
    """The primary context of device 0 through cuda.bindings, retained once, released at
    the end."""

    def __init__(self):
        d = _raw()
        self.dev = _check(d.cuDeviceGet(0), "cuDeviceGet")
        self.ctx = _check(d.cuDevicePrimaryCtxRetain(self.dev), "cuDevicePrimaryCtxRetain")
        _check(d.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")

    def close(self):
        d = _raw()
        _check(d.cuDevicePrimaryCtxRelease(self.dev), "cuDevicePrimaryCtxRelease")


def _raw_stream():
    d = _raw()
    flags = int(d.CUstream_flags.CU_STREAM_NON_BLOCKING)
    return _check(d.cuStreamCreate(flags), "cuStreamCreate")


def _raw_event():
    d = _raw()
    flags = int(d.CUevent_flags.CU_EVENT_DISABLE_TIMING)
    return _check(d.cuEventCreate(flags), "cuEventCreate")


def _closer(*objs):
    def cleanup():
        for o in objs:
            o.close()
    return cleanup


# -- case: Device(0) --------------------------------------------------------------------------

def device_case() -> Case:
    def ours():
        from cuda_core import Device
        Device(0)
        return {"Device": Device}

    def nvidia():
        from cuda.core import Device as NvDevice
        NvDevice(0)
        return {"NvDevice": NvDevice}

    def raw():
        cuDeviceGet = _raw().cuDeviceGet
        _check(cuDeviceGet(0), "cuDeviceGet")
        return {"cuDeviceGet": cuDeviceGet}

    def floor():
        return _floor.timed(_floor.load().floor_device_get, 0)

    return Case("Device(0)", [
        Contender(OURS, setup=ours, stmt="Device(0)"),
        Contender(NVIDIA, setup=nvidia, stmt="NvDevice(0)", requires=("cuda.core",)),
        Contender(RAW, setup=raw, stmt="cuDeviceGet(0)", requires=("cuda.bindings",)),
        Contender(FLOOR, setup=floor, self_timed=True),
    ], note="the singleton already exists; the raw and C rows call cuDeviceGet(0)")


# -- case: set_current() ----------------------------------------------------------------------

def set_current_case() -> Case:
    def ours():
        from cuda_core import Device
        dev = Device(0)
        dev.set_current()
        return {"dev": dev}

    def nvidia():
        return {"dev": _nv_device()}

    def raw():
        rc = _RawContext()
        return {"cuCtxSetCurrent": _raw().cuCtxSetCurrent, "ctx": rc.ctx}, rc.close

    def floor():
        rc = _RawContext()
        return _floor.timed(_floor.load().floor_ctx_set_current, int(rc.ctx)), rc.close

    return Case("set_current()", [
        Contender(OURS, setup=ours, stmt="dev.set_current()"),
        Contender(NVIDIA, setup=nvidia, stmt="dev.set_current()", requires=("cuda.core",)),
        Contender(RAW, setup=raw, stmt="cuCtxSetCurrent(ctx)", requires=("cuda.bindings",)),
        Contender(FLOOR, setup=floor, self_timed=True),
    ], note="the primary context of device 0, already current; raw and C: cuCtxSetCurrent")


# -- case: stream create + close ---------------------------------------------------------------

def stream_case() -> Case:
    def ours():
        from cuda_core import Device
        dev = Device(0)
        dev.set_current()
        dev.create_stream().close()
        return {"dev": dev}

    def nvidia():
        dev = _nv_device()
        dev.create_stream().close()
        return {"dev": dev}

    def raw():
        d = _raw()
        flags = int(d.CUstream_flags.CU_STREAM_NON_BLOCKING)
        _check(d.cuStreamDestroy(_raw_stream()), "cuStreamDestroy")
        return {"cuStreamCreate": d.cuStreamCreate, "cuStreamDestroy": d.cuStreamDestroy,
                "flags": flags}

    def floor():
        flags = int(_raw().CUstream_flags.CU_STREAM_NON_BLOCKING)
        return _floor.timed(_floor.load().floor_stream_create_destroy, flags)

    return Case("stream create + close", [
        Contender(OURS, setup=ours, stmt="dev.create_stream().close()"),
        Contender(NVIDIA, setup=nvidia, stmt="dev.create_stream().close()",
                  requires=("cuda.core",)),
        Contender(RAW, setup=raw, stmt="cuStreamDestroy(cuStreamCreate(flags)[1])",
                  requires=("cuda.bindings",)),
        Contender(FLOOR, setup=floor, self_timed=True),
    ], note="default options (non-blocking, default priority); raw and C: "
            "cuStreamCreate(CU_STREAM_NON_BLOCKING) + cuStreamDestroy")


# -- case: event record + query ----------------------------------------------------------------

def event_case() -> Case:
    def ours():
        from cuda_core import Device
        dev = Device(0)
        dev.set_current()
        s, ev = dev.create_stream(), dev.create_event()
        s.record(ev)
        ev.is_done
        return {"s": s, "ev": ev}, _closer(ev, s)

    def nvidia():
        dev = _nv_device()
        s, ev = dev.create_stream(), dev.create_event()
        s.record(ev)
        ev.is_done
        return {"s": s, "ev": ev}, _closer(ev, s)

    def raw():
        d = _raw()
        st, ev = _raw_stream(), _raw_event()
        _check(d.cuEventRecord(ev, st), "cuEventRecord")
        _check(d.cuEventQuery(ev), "cuEventQuery",
               ok=(0, int(d.CUresult.CUDA_ERROR_NOT_READY)))

        def cleanup():
            _check(d.cuEventDestroy(ev), "cuEventDestroy")
            _check(d.cuStreamDestroy(st), "cuStreamDestroy")

        return {"cuEventRecord": d.cuEventRecord, "cuEventQuery": d.cuEventQuery,
                "st": st, "ev": ev}, cleanup

    def floor():
        d = _raw()
        st, ev = _raw_stream(), _raw_event()

        def cleanup():
            _check(d.cuEventDestroy(ev), "cuEventDestroy")
            _check(d.cuStreamDestroy(st), "cuStreamDestroy")

        return _floor.timed(_floor.load().floor_event_record_query, int(ev), int(st)), cleanup

    return Case("event record + query", [
        Contender(OURS, setup=ours, stmt="s.record(ev)\nev.is_done"),
        Contender(NVIDIA, setup=nvidia, stmt="s.record(ev)\nev.is_done",
                  requires=("cuda.core",)),
        Contender(RAW, setup=raw, stmt="cuEventRecord(ev, st)\ncuEventQuery(ev)",
                  requires=("cuda.bindings",)),
        Contender(FLOOR, setup=floor, self_timed=True),
    ], note="re-recording one event (no timing) on an idle non-blocking stream, then "
            "querying it; raw and C: cuEventRecord + cuEventQuery")


# -- case: stream sync ----------------------------------------------------------------------

def sync_case() -> Case:
    def ours():
        from cuda_core import Device
        dev = Device(0)
        dev.set_current()
        s = dev.create_stream()
        s.sync()
        return {"s": s}, s.close

    def nvidia():
        s = _nv_device().create_stream()
        s.sync()
        return {"s": s}, s.close

    def raw():
        d = _raw()
        st = _raw_stream()
        _check(d.cuStreamSynchronize(st), "cuStreamSynchronize")
        return ({"cuStreamSynchronize": d.cuStreamSynchronize, "st": st},
                lambda: _check(d.cuStreamDestroy(st), "cuStreamDestroy"))

    def floor():
        d = _raw()
        st = _raw_stream()
        return (_floor.timed(_floor.load().floor_stream_sync, int(st)),
                lambda: _check(d.cuStreamDestroy(st), "cuStreamDestroy"))

    return Case("stream sync (idle)", [
        Contender(OURS, setup=ours, stmt="s.sync()"),
        Contender(NVIDIA, setup=nvidia, stmt="s.sync()", requires=("cuda.core",)),
        Contender(RAW, setup=raw, stmt="cuStreamSynchronize(st)", requires=("cuda.bindings",)),
        Contender(FLOOR, setup=floor, self_timed=True),
    ], note="an idle non-blocking stream; raw and C: cuStreamSynchronize")


CASES = [device_case, set_current_case, stream_case, event_case, sync_case]


# -- main ------------------------------------------------------------------------------------

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="foundation.py",
        description="Latency of Device(0), set_current(), stream create + close, event "
                    "record + query and idle stream sync: cuda_core (ours) against NVIDIA's "
                    "cuda.core, the raw cuda.bindings and a C loop of the same driver calls. "
                    f"Target: {TARGET}. Needs a GPU; exits 0 once the report is printed.")
    add_arguments(parser)
    args = parser.parse_args(argv)

    # Fails here, with the driver's reason, where there is no GPU or no driver.
    meta = device_meta("foundation.py", ("cuda-core-cy", "cuda-core", "cuda-bindings"))
    if meta is None:
        return 1

    report = run_cases([make() for make in CASES], args,
                       title="cuda_core foundation latency (time per call)",
                       subject=OURS, baseline=NVIDIA, floor=FLOOR, target=TARGET, meta=meta)
    return finish(report, args)


if __name__ == "__main__":
    run_script(main, "foundation.py")
