"""Public calls that need a GPU, each given the edge inputs a user may pass in one argument (None,
0, -1, a bool, NumPy scalars, a float, strs, tuples, lists, bytes, 2**64, an arbitrary object),
on NVIDIA's cuda.core and on ours (issue 27, parts 5 and 6; the CPU half is
tests/test_differential_calls.py).

Reads of what the calls make (``READS``: properties and argument-free methods) are compared once
each. The calls run through each package in a child process (tests/helpers/gpu_edge_calls.py),
all in one where none crashes; after a crash, or a hang (no line for STALL_S seconds), the rest
run in a new one, so that a crash is the outcome of the call that made it. Ours must never
crash or hang. Where cuda.core refuses an input, ours refuses it too, with cuda.core's exception
class or a subclass (except where that class is an accident of its implementation:
``ACCIDENTS``); where both return, they return the same, except where cuda.core's answer is
garbage (``DECLARED``: there ours must give the right one). The inputs after a crash of
cuda.core's child are not compared. Where ours refuses what cuda.core takes, the case is listed
in the report that ``CUDA_CORE_REFUSALS_REPORT`` names (a file), for part 1's rule: each must
prevent a harm that docs/migrating.rst names.
"""

import concurrent.futures
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from helpers import SLOWDOWN
from helpers.differential import LACKS_CUDA_13
from helpers.gpu_edge_calls import CALLS, EDGES, READS

HELPER = os.path.join(os.path.dirname(__file__), "helpers", "gpu_edge_calls.py")

# Where cuda.core's answer is garbage, ours must give the right one, named here:
# (call, input) -> (ours, why cuda.core's differs).
DECLARED = {
    ("launch(stream, config, kernel, ptr, x)", name): (
        repr(value), "cuda.core packs a Python bool as one byte, so the kernel's 4-byte "
                     "parameter reads three bytes of whatever followed it; ours packs the bool at "
                     "the parameter's size")
    for name, value in (("True", b"\x01\0\0\0"), ("False", b"\0\0\0\0"))
}

# Where cuda.core's refusal comes from its implementation rather than a check (its class is
# an accident, not one a program can rely on), ours need not raise that class:
# call -> (the inputs, None for all, why).
_NOT_BOOL = ("None", "1.5", "()", "(1,)", "[]", "b'x'", "object()")
ACCIDENTS = {
    "GraphDefinition.instantiate(options=x)": (
        None, "AttributeError: cuda.core reads .auto_free_on_launch of whatever it is given"),
    "DeviceMemoryResource.register(x)": (None, "AssertionError: an assert in cuda.core"),
    "PinnedMemoryResource.register(x)": (None, "AssertionError: an assert in cuda.core"),
    "GraphDefinition.join(x)": (
        ("None",), "RuntimeError: cuda.core reads None as a node of an invalid definition"),
    "graph.GraphNode.join(x)": (
        ("None",), "RuntimeError: cuda.core reads None as a node of an invalid definition"),
    "ManagedBuffer.read_mostly = x": (
        _NOT_BOOL, "CUDAError: cuda.core hands the driver an advice made of the value"),
    "GraphDefinition.deallocate(x)": (
        ("np.True_", "1.5"), "CUDAError: cuda.core truncates the value to an address"),
    "VirtualMemoryResource.modify_allocation(buf, x)": (
        ("2**64",), "CUDAError: cuda.core rounds the size past 64 bits for the driver"),
    "VirtualMemoryResource(0, VirtualMemoryResourceOptions(peers=x)).allocate(2 MiB)": (
        ("b'x'",), "CUDAError: cuda.core reads the bytes as device ordinals (device 120)"),
}


def _accident(label, name):
    inputs = ACCIDENTS.get(label, ((),))[0]
    return inputs is None or name in inputs


LABELS = list(CALLS) + list(READS)

# One worker of a parallel run builds ``outcomes`` (both packages through every call, tens of
# seconds of GPU work) and runs these tests, rather than every worker building it anew.
pytestmark = pytest.mark.xdist_group("gpu_edge_calls")


# A call that prints nothing for this long hangs: the child is killed, the rest run in a new one.
STALL_S = 30 * SLOWDOWN


def _child(package, labels, cwd):
    """(the JSON lines a child printed for ``labels``, how it ended: 0, its exit status or
    "hung (killed)", the end of its stderr). A child that prints no line for STALL_S seconds
    (the first line: twice that, for the set-up) is killed."""
    lines = queue.Queue()

    def read(stream):
        for line in stream:
            lines.put(line)
        lines.put(None)

    with tempfile.TemporaryFile("w+") as err:  # a file: a pipe that fills would stall the child
        proc = subprocess.Popen([sys.executable, HELPER, package, *labels], stdout=subprocess.PIPE,
                                stderr=err, text=True, cwd=cwd)
        threading.Thread(target=read, args=(proc.stdout,), daemon=True).start()
        out, wait, ended = [], 2 * STALL_S, None
        while True:
            try:
                line = lines.get(timeout=wait)
            except queue.Empty:  # its threads' stacks to stderr first (the child's faulthandler)
                proc.send_signal(signal.SIGUSR1)
                time.sleep(2)
                proc.kill()
                ended = "hung (killed)"
                break
            if line is None:
                break
            out.append(line)
            wait = STALL_S
        status = proc.wait()
        err.seek(0)
        return out, ended or status, err.read()[-4000:]


def run(package):
    """{label: (outcomes by input, warnings by input, how the child running it ended: None where
    it ran to its end)}, for every call and read through ``package``."""
    results, left = {}, list(LABELS)
    while left:
        # In a directory of its own: debug_dot_print(x) writes a file named x.
        with tempfile.TemporaryDirectory() as cwd:
            lines, returncode, stderr = _child(package, left, cwd)
        for line in lines:
            label, name, warned, *rest = json.loads(line)
            outcomes, warnings, _ = results.setdefault(label, ({}, {}, None))
            outcomes[name], warnings[name] = rest, warned
        if returncode == 0:
            break
        # The child died (or hung) in the call after the last one it printed in full.
        inputs = len(EDGES)
        done = [lb for lb in left
                if len(results.get(lb, ({},))[0]) == (1 if lb in READS else inputs)]
        dying = left[len(done)] if len(done) < len(left) else None
        if dying is None:
            break
        outcomes, warnings, _ = results.setdefault(dying, ({}, {}, None))
        at = "-" if dying in READS else next(name for name in EDGES if name not in outcomes)
        results[dying] = (outcomes, warnings,
                          f"input {at}: exit {returncode}: {stderr.strip()}")
        left = left[len(done) + 1:]
    return results


@pytest.fixture(scope="module")
def outcomes():
    pytest.importorskip("cuda.core", reason="NVIDIA's cuda.core is the reference")
    # Both packages at once, each in its own children.
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        ours, theirs = pool.map(run, ("cuda_core", "cuda.core"))
    return {"ours": ours, "theirs": theirs}


@pytest.mark.gpu
@pytest.mark.parametrize("label", LABELS)
def test_a_gpu_call_given_edge_inputs(outcomes, label):
    ours, our_warnings, our_death = outcomes["ours"].get(label, ({}, {}, "never ran"))
    assert our_death is None, f"ours: {our_death}"
    theirs, their_warnings, _ = outcomes["theirs"].get(label, ({}, {}, "never ran"))
    problems, refusals = [], []
    for name in (["-"] if label in READS else EDGES):
        if name not in theirs:
            break  # cuda.core's child died on this input: the rest are not compared
        t, o = theirs[name], ours[name]
        # Each warning cuda.core gives, ours gives: that class or a subclass (its bases' names).
        missed = [w[0] for w in their_warnings[name]
                  if not any(w[0] in mine for mine in our_warnings[name])]
        if missed:
            problems.append(f"{name}: cuda.core warns {missed}; ours does not")
        if t[0] == "err" and LACKS_CUDA_13 in t[2]:
            continue  # cuda.core's CUDA 12 half has no such feature: nothing to compare
        if t[0] == "err":
            their_class = t[1][0]
            # Ours taking what cuda.core refuses is leniency (a valid setting), not a break.
            if o[0] == "err" and their_class not in o[1] and not _accident(label, name):
                problems.append(f"{name}: cuda.core raises {their_class} ({t[2]}); ours "
                                f"{o[1][0]} ({o[2]})")
        elif (label, name) in DECLARED:
            right, why = DECLARED[label, name]
            if o != ["ok", right]:
                problems.append(f"{name}: ours must return {right} ({why}); ours {o}")
        elif o[0] == "ok":
            if t[1] != o[1]:
                problems.append(f"{name}: cuda.core returns {t[1]}; ours {o[1]}")
        else:
            refusals.append({"call": label, "input": name, "theirs": t[1], "ours": o[1][0],
                             "message": o[2]})
    report = os.environ.get("CUDA_CORE_REFUSALS_REPORT")
    if report and refusals:
        with open(report, "a") as f:
            for r in refusals:
                f.write(json.dumps(r) + "\n")
    assert not problems, "\n".join(problems)
