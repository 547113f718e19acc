"""IPC between processes, compared with NVIDIA's cuda.core (issue 28, point 4).

Each scenario of tests/helpers/ipc_scenarios.py (a parent and one spawned child exchanging an
IPC event or a buffer of an IPC-enabled pool) runs twice, each run in a fresh parent process:
on cuda.core and on ours. Both sides' observations must be the same, in the same order; where
both raised, ours must be an instance of cuda.core's class (its name among our class's
bases). A run that crashes, hangs or prints no result fails the test with its output.
"""

import json
import os
import subprocess
import sys

import pytest

from helpers import SLOWDOWN
from helpers.ipc import require_ipc_events, require_pool_ipc
from helpers.ipc_scenarios import SCENARIOS

from cuda_core import Device

TESTS = os.path.dirname(os.path.abspath(__file__))
RUN_S = 150 * SLOWDOWN


@pytest.fixture(scope="module")
def control():
    pytest.importorskip("cuda.core", reason="NVIDIA's cuda.core is the control of these scenarios")


def _run(pkg, name):
    code = ("import sys; sys.path.insert(0, {!r}); from helpers.ipc_scenarios import main; "
            "main({!r}, {!r})").format(TESTS, pkg, name)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=RUN_S)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, (
        f"{pkg}: exit code {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):]), proc.stderr


def _same(theirs, ours):
    """Two facts agree: the same label and value, or both raised and our class has theirs
    among its bases."""
    if theirs[0] != ours[0]:
        return False
    if len(theirs) == 3 and len(ours) == 3 and theirs[1] == ours[1] == "raised":
        return theirs[2][0] in ours[2]
    return theirs == ours


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_same_as_cuda_core(control, name):
    dev = Device(0)
    if "event" in name or "timing" in name:
        require_ipc_events(dev)
    else:
        require_pool_ipc(dev)
        if "pinned" in name and not dev.properties.host_memory_pools_supported:
            pytest.skip("properties.host_memory_pools_supported is False")
    theirs, their_err = _run("cuda.core", name)
    ours, our_err = _run("cuda_core", name)
    shown = (f"cuda.core: {json.dumps(theirs)}\nours:      {json.dumps(ours)}\n"
             f"our stderr:\n{our_err[-3000:]}\ntheir stderr:\n{their_err[-2000:]}")
    assert ours["child exit"] == 0, shown
    for side in ("parent", "child"):
        assert len(theirs[side]) == len(ours[side]), shown
        assert all(_same(t, o) for t, o in zip(theirs[side], ours[side])), shown
    # Each scenario ran to its end on cuda.core: no side stopped early there.
    assert not any(f[-1] in ("stopped", "timeout", "the other side stopped")
                   for side in ("parent", "child") for f in theirs[side]), shown
