"""Launch latency benchmark: the host-side cost of one kernel launch.

Every case launches the same kernels (``SOURCE`` below) with grid 1 and block 1; the kernels
return at once for the timed arguments, so what is measured is the launch call, not GPU work.
The contenders, all in this one process:

* ``cuda_core``             -- this package: ``launch(s, config, kernel, *args)``, the subject;
* ``cuda.core``             -- NVIDIA's cuda.core 1.2, the same call on its own objects;
* ``CuPy``                  -- ``cupy.RawKernel(SOURCE, name)((1,), (1,), args)`` on a CuPy
                               stream of its own;
* ``cuda.bindings``         -- ``driver.cuLaunchKernel`` with a ``void*[]`` of ctypes values
                               packed once in setup (the careful bindings user), result not
                               checked inside the loop (checked once in setup);
* ``cuda.bindings (tuple)`` -- the same with the bindings' documented ``((values), (types))``
                               form, which the bindings pack on every call;
* ``C floor``               -- ``cuLaunchKernelEx`` in a C loop (``cuda_core.bench._floor``,
                               built into every wheel) on our stream, the kernel handle our
                               launch passes (its CUfunction in the stream's context) and the
                               argument bytes our param holder packs: the driver call alone;
* ``Python floor``          -- ``cuda_core.bench._floor.python_floor``: called exactly as
                               ours is (the same statement and argument objects), it
                               releases the GIL around the C floor's prepared
                               cuLaunchKernelEx and does nothing else.
                               It is the least any Python API that releases the GIL can cost,
                               so ours minus it is what our conversions and checks add, and
                               its ratio to cuda.core is the best any such API could reach.

Launches are asynchronous: a sample is at most ``--max-launches`` launches (so the driver's
queue never fills, which would time GPU throughput instead of launch cost), and every
contender synchronizes its stream after each of its samples, outside the timing.

Before timing, every contender launches once with arguments that make the kernel write what it
received (pointers, the integer, the floats) and reads that back: wrong usage shows as ERROR,
never as a fast number that launched nothing. The empty kernel writes nothing, so its path is
proved with the four-argument kernel first.

Cases 7-14 launch on wrapped streams (``Stream.from_handle``, a ``__cuda_stream__`` object, the
default-stream handles and constants, ``Device.default_stream``): ours, cuda.core and both floors
on the same handle, so the floors include what the driver charges for that kind of stream.

Case 13 passes the ``__cuda_stream__`` object to launch() itself, so every launch must call it:
no C loop does, and its Python floor (``python_floor(..., ask_stream=True)``) calls it and
reads the address before launching.

Targets: cuda_core within 1.15x the C floor in cases 1-5, 7-12 and 14, within 1.15x the
asking Python floor in case 13, and at most 0.85x NVIDIA cuda.core's time in every case. The report always exits 0 once it ran; it exits
1, with one line, where there is no GPU or driver.

The cases, contenders and floors are the installed ``cuda_core.bench`` (``python -m
cuda_core.bench`` runs six of these cases, and a struct passed by value); this script runs all
of them against its targets.

Run on the GPU machine:  bash .gpu/on-gpu.sh python3 benchmarks/launch_latency.py
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _harness import Target, add_arguments, device_meta, finish, run_cases, run_script  # noqa: E402

from cuda_core.bench._cases import (ASKING_CASES, C_BUF4, C_NUMBA7, C_WRAPPED,  # noqa: E402
                                    FLOOR_CASES, WRAPPED_CASES, make_cases)
from cuda_core.bench._launch import FLOOR, NVIDIA, OURS, PY_FLOOR  # noqa: E402

FLOOR_RATIO = 1.15   # ours <= 1.15x the floor (the C floor; in case 13 the asking Python floor)
NVIDIA_RATIO = 0.85  # ours <= 0.85x cuda.core (every case)


# -- main ------------------------------------------------------------------------------------

def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="launch_latency.py",
        description="Host-side latency of one kernel launch (0, 4 and 16 arguments, ints for "
                    "pointers, a new LaunchConfig per call, a one-node graph replay): "
                    "cuda_core (ours) against NVIDIA's cuda.core, CuPy, the raw cuda.bindings "
                    "and a C loop of cuLaunchKernelEx. Targets: ours <= "
                    f"{FLOOR_RATIO:g}x the C floor in cases 1-5, 7-12 and 14 (in 13, the "
                    "Python floor that asks the object for its stream) and <= "
                    f"{NVIDIA_RATIO:g}x cuda.core in every case. Needs a GPU; exits 0 once the report is printed.")
    add_arguments(parser)
    parser.add_argument("--max-launches", type=_positive, default=1000, metavar="N",
                        help="at most N launches per sample, --inner included; the stream is "
                             "synchronized after each sample, outside the timing, so the "
                             "driver's launch queue never fills (default: %(default)s)")
    args = parser.parse_args(argv)

    # Fails here, with the driver's reason, where there is no GPU or no driver.
    meta = device_meta("launch_latency.py",
                       ("cuda-core-cy", "cuda-core", "cuda-bindings", "numpy"),
                       optional=("cupy-cuda13x", "cupy-cuda12x"))
    if meta is None:
        return 1
    meta["sample"] = (f"at most {args.max_launches} launches (grid 1, block 1), then a stream "
                      f"sync outside the timing")

    targets = [Target(OURS, FLOOR, FLOOR_RATIO, cases=FLOOR_CASES),
               Target(OURS, PY_FLOOR, FLOOR_RATIO, cases=ASKING_CASES),
               Target(OURS, NVIDIA, NVIDIA_RATIO)]
    report = run_cases(make_cases(args.max_launches), args,
                       title="cuda_core launch latency (time per launch)",
                       subject=OURS, baseline=NVIDIA, floor=FLOOR,
                       target="launches as cheap as a C driver call, and cheaper than "
                              "cuda.core's",
                       meta=meta, targets=targets, floor_ratio=True)
    _note_reach(report)
    _note_wrapped(report)
    return finish(report, args)


def _note_wrapped(report) -> None:
    """For each wrapped-stream case: what ours adds above the C floor on that stream, beside
    what it adds above the C floor on a created stream (case 2). The floor on a stream includes
    what the driver charges for its kind, so equal additions mean the wrapper costs nothing."""
    created = next((c for c in report.cases if c.name == C_BUF4), None)
    base = None
    if created is not None:
        ours, floor = created.get(OURS), created.get(FLOOR)
        if ours is not None and floor is not None and ours.ok and floor.ok:
            base = ours.median_ns - floor.median_ns
    for case in report.cases:
        if case.name not in WRAPPED_CASES:
            continue
        ours, floor = case.get(OURS), case.get(FLOOR)
        if not all(c is not None and c.ok for c in (ours, floor)):
            continue
        extra = ours.median_ns - floor.median_ns
        case.note += f"; cuda_core adds {extra:+.0f} ns above the C floor on this stream"
        if case.name == C_WRAPPED["direct"]:
            case.note += (" (the floor is a created stream's, with the CUfunction: ours calls "
                          "the object's __cuda_stream__() and checks its answer at every "
                          "launch, and passes the CUkernel, which the driver resolves in the "
                          "stream's context)")
            py = case.get(PY_FLOOR)
            if py is not None and py.ok:
                case.note += (f"; the Python floor that asks the object is "
                              f"{py.median_ns - floor.median_ns:+.0f} ns above the C floor, "
                              f"cuda_core {ours.median_ns - py.median_ns:+.0f} ns above it")
        elif base is not None and case.name != C_NUMBA7:
            case.note += f" (case 2, a created stream: {base:+.0f} ns)"


def _note_reach(report) -> None:
    """Add to each case's note how far a Python API could get in this run: the Python floor's
    ratio to cuda.core (no API that releases the GIL around the launch can beat it) and what
    ours adds above the Python floor."""
    for case in report.cases:
        py, core, ours = case.get(PY_FLOOR), case.get(NVIDIA), case.get(OURS)
        if not all(c is not None and c.ok for c in (py, core, ours)):
            continue
        ratio = py.median_ns / core.median_ns
        room = NVIDIA_RATIO * core.median_ns - py.median_ns
        if room < 0:
            reach = f"so no API that releases the GIL could meet {NVIDIA_RATIO:g}x in this run"
        else:
            reach = f"so {NVIDIA_RATIO:g}x leaves {room:.0f} ns above it"
        case.note += (f"; the Python floor is {ratio:.2f}x cuda.core, {reach}; cuda_core is "
                      f"{ours.median_ns - py.median_ns:+.0f} ns above the Python floor")


if __name__ == "__main__":
    run_script(main, "launch_latency.py")
