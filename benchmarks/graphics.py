"""OpenGL interop latency benchmark: ``GraphicsResource`` registration, map and unmap.

Each case is measured four ways in this one process:

* ``cuda_core``     -- this package, the subject;
* ``cuda.core``     -- NVIDIA's cuda.core 1.2 (the same calls), the baseline;
* ``cuda.bindings`` -- the raw Python bindings, results unchecked inside the loop;
* ``C floor``       -- the same driver calls in a C loop (``_floor.c``, built at run time).

The OpenGL side is a headless context on the first EGL device, made current on this thread
with ``tests/helpers/gl.py`` (EGL and OpenGL over ctypes), and one 4 KiB buffer object. The
stream is synchronized after every sample, outside the timing.

Target: none of ours slower than cuda.core's. The report always exits 0 once it ran; it exits
1, with one line, where there is no GPU, driver or headless OpenGL.

Run on the GPU machine (with the GL loaders, see docs/opengl.rst):
    bash .gpu/on-gpu.sh python3 benchmarks/graphics.py
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
sys.path.append(os.path.join(os.path.dirname(_HERE), "tests"))  # helpers.gl

import _cuda  # noqa: E402
import _floor  # noqa: E402
from _harness import (Case, Contender, Prepared, add_arguments, device_meta,  # noqa: E402
                      finish, run_cases, run_script)

OURS = "cuda_core"
NVIDIA = "cuda.core"
RAW = "cuda.bindings"
FLOOR = "C floor"
TARGET = "none of ours slower than cuda.core's"
SIZE = 4096

# The GL buffer every case registers (set by main() once the GL context is current).
_gl_buffer = 0


def _stream(module):
    """``module``'s Device(0) made current, and a new stream on it."""
    dev = importlib.import_module(module).Device(0)
    dev.set_current()
    return dev.create_stream()


def _resource(module, s):
    res = importlib.import_module(module).GraphicsResource.from_gl_buffer(_gl_buffer)

    def cleanup():
        res.close()
        s.sync()
        s.close()
    return res, cleanup


def _raw_registration():
    """The driver module, a stream of ours, the GL buffer registered through cuda.bindings, and
    the cleanup that unregisters it and closes the stream."""
    d = _cuda.driver()
    s = _stream(OURS)
    res = _cuda.check(d.cuGraphicsGLRegisterBuffer(_gl_buffer, 0), "cuGraphicsGLRegisterBuffer")

    def cleanup():
        _cuda.check(d.cuGraphicsUnregisterResource(res), "cuGraphicsUnregisterResource")
        s.close()
    return d, s, res, cleanup


def register_case() -> Case:
    def make(module):
        def setup():
            cls = importlib.import_module(module).GraphicsResource
            _stream(module).close()  # the device's context current
            cls.from_gl_buffer(_gl_buffer).close()
            return {"GraphicsResource": cls, "name": _gl_buffer}
        return setup

    def raw():
        d = _cuda.driver()
        _stream(OURS).close()
        res = _cuda.check(d.cuGraphicsGLRegisterBuffer(_gl_buffer, 0),
                          "cuGraphicsGLRegisterBuffer")
        _cuda.check(d.cuGraphicsUnregisterResource(res), "cuGraphicsUnregisterResource")
        return {"register": d.cuGraphicsGLRegisterBuffer,
                "unregister": d.cuGraphicsUnregisterResource, "name": _gl_buffer}

    def floor():
        _stream(OURS).close()
        return _floor.timed(_floor.load().floor_graphics_register, _gl_buffer)

    stmt = "GraphicsResource.from_gl_buffer(name).close()"
    return Case("register + close a GL buffer", [
        Contender(OURS, setup=make(OURS), stmt=stmt),
        Contender(NVIDIA, setup=make(NVIDIA), stmt=stmt, requires=("cuda.core",)),
        Contender(RAW, setup=raw, stmt="unregister(register(name, 0)[1])",
                  requires=("cuda.bindings",)),
        Contender(FLOOR, setup=floor, self_timed=True),
    ], note="cuGraphicsGLRegisterBuffer + cuGraphicsUnregisterResource")


def map_case(stmt, title, note) -> Case:
    def make(module):
        def setup():
            s = _stream(module)
            res, cleanup = _resource(module, s)
            exec(stmt, {}, {"res": res, "s": s})
            return Prepared({"res": res, "s": s}, cleanup, s.sync)
        return setup

    def raw():
        d, s, res, cleanup = _raw_registration()
        st = d.CUstream(int(s.handle))
        return Prepared({"map_": d.cuGraphicsMapResources, "unmap": d.cuGraphicsUnmapResources,
                         "pointer": d.cuGraphicsResourceGetMappedPointer, "r": res, "st": st},
                        cleanup, s.sync)

    def floor():
        _, s, res, cleanup = _raw_registration()
        return Prepared(_floor.timed(_floor.load().floor_graphics_map_unmap, int(res),
                                     int(s.handle)), cleanup, s.sync)

    return Case(title, [
        Contender(OURS, setup=make(OURS), stmt=stmt),
        Contender(NVIDIA, setup=make(NVIDIA), stmt=stmt, requires=("cuda.core",)),
        Contender(RAW, setup=raw, stmt="map_(1, r, st)\npointer(r)\nunmap(1, r, st)",
                  requires=("cuda.bindings",)),
        Contender(FLOOR, setup=floor, self_timed=True),
    ], note=note)


CASES = [
    register_case,
    lambda: map_case("res.map(stream=s)\nres.unmap()", "map + unmap",
                     "map on a created stream, unmap on the mapping stream; raw and C: "
                     "cuGraphicsMapResources + GetMappedPointer + cuGraphicsUnmapResources"),
    lambda: map_case("res.map(stream=s).close()", "map + close the Buffer",
                     "the returned Buffer's close() unmaps"),
]


def main(argv=None) -> int:
    global _gl_buffer
    parser = argparse.ArgumentParser(
        prog="graphics.py",
        description="Latency of GraphicsResource (OpenGL interop): registering a GL buffer, "
                    "mapping and unmapping it; cuda_core (ours) against NVIDIA's cuda.core, "
                    f"the raw cuda.bindings and a C loop. Target: {TARGET}. Needs a GPU and "
                    "headless OpenGL (EGL); exits 0 once the report is printed.")
    add_arguments(parser)
    args = parser.parse_args(argv)

    meta = device_meta("graphics.py", ("cuda-core-cy", "cuda-core", "cuda-bindings"))
    if meta is None:
        return 1
    from helpers.gl import GLUnavailable, open_context

    try:
        gl = open_context()
    except GLUnavailable as exc:
        print(f"graphics.py: no headless OpenGL: {exc}", file=sys.stderr)
        return 1
    meta["opengl"] = f"{gl.vendor} | {gl.renderer}"
    _gl_buffer = gl.gl.create_buffer(bytes(SIZE))
    try:
        report = run_cases([make() for make in CASES], args,
                           title="cuda_core OpenGL interop (time per call)",
                           subject=OURS, baseline=NVIDIA, floor=FLOOR, target=TARGET,
                           meta=meta)
    finally:
        gl.gl.delete_buffer(_gl_buffer)
        gl.close()
    return finish(report, args)


if __name__ == "__main__":
    run_script(main, "graphics.py")
