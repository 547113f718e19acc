"""Public calls that need a GPU, each given the edge inputs a user may pass in one argument (None,
0, -1, a bool, NumPy scalars, a float, strs, tuples, lists, bytes, 2**64, an arbitrary object),
on NVIDIA's cuda.core and on ours (issue 27, parts 5 and 6; the CPU half is
tests/test_differential_calls.py).

Reads of what the calls make (``READS``: properties and argument-free methods) are compared once
each. The calls run through each package in a child process (tests/helpers/gpu_edge_calls.py),
all in one where none crashes; after a crash (or a hang, killed at the timeout), the rest run in
a new one, so that a crash is the outcome of the call that made it. Ours must never crash. Where cuda.core refuses an input, ours
refuses it too, with cuda.core's exception class or a subclass; where both return, they return
the same, except where cuda.core's answer is garbage (``DECLARED``: there ours must give the
right one). The inputs after a crash of cuda.core's child are not compared. Where ours refuses what
cuda.core takes, the case is listed in the report that ``CUDA_CORE_REFUSALS_REPORT`` names (a
file), for part 1's rule: each must prevent a harm that docs/migrating.rst names.
"""

import json
import os
import subprocess
import sys
import tempfile

import pytest

from helpers import SLOWDOWN
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


LABELS = list(CALLS) + list(READS)


def run(package):
    """{label: (outcomes by input, warnings by input, how the child running it ended: None where
    it ran to its end)}, for every call and read through ``package``."""
    results, left = {}, list(LABELS)
    while left:
        # In a directory of its own: debug_dot_print(x) writes a file named x.
        with tempfile.TemporaryDirectory() as cwd:
            try:
                proc = subprocess.run([sys.executable, HELPER, package, *left],
                                      capture_output=True, text=True, timeout=300 * SLOWDOWN,
                                      cwd=cwd)
                stdout, returncode, stderr = proc.stdout, proc.returncode, proc.stderr
            except subprocess.TimeoutExpired as exc:  # a hang: the call in progress made it
                out = exc.stdout or b""
                stdout = out.decode(errors="replace") if isinstance(out, bytes) else out
                returncode, stderr = "none (hung: killed)", ""
        for line in stdout.splitlines():
            label, name, warned, *rest = json.loads(line)
            outcomes, warnings, _ = results.setdefault(label, ({}, {}, None))
            outcomes[name], warnings[name] = rest, warned
        if returncode == 0:
            break
        # The child died in the call after the last one it printed in full.
        inputs = len(EDGES)
        done = [lb for lb in left
                if len(results.get(lb, ({},))[0]) == (1 if lb in READS else inputs)]
        dying = left[len(done)] if len(done) < len(left) else None
        if dying is None:
            break
        outcomes, warnings, _ = results.setdefault(dying, ({}, {}, None))
        results[dying] = (outcomes, warnings, f"exit {returncode}: {stderr.strip()[-1000:]}")
        left = left[len(done) + 1:]
    return results


@pytest.fixture(scope="module")
def outcomes():
    pytest.importorskip("cuda.core", reason="NVIDIA's cuda.core is the reference")
    return {"ours": run("cuda_core"), "theirs": run("cuda.core")}


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
        if t[0] == "err":
            their_class = t[1][0]
            # Ours taking what cuda.core refuses is leniency (a valid setting), not a break.
            if o[0] == "err" and their_class not in o[1]:
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
