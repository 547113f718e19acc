"""Lifetime stress (issue 26, point 5): random programs that create, use, drop, close, collect and
hand objects to threads, in any order, each run in its own interpreter (tests/helpers/lifetime.py)
with a final "launch and sync what remains". A program must exit 0: a signal or another status
is a crash, running past the timeout a hang, status 3 garbage (a wrong value read back, or an
object freed while another live object promises to keep it).

Environment:

* ``CUDA_CORE_STRESS_CPU``: CPU programs (default 25).
* ``CUDA_CORE_STRESS_PROGRAMS``: GPU programs (default 48; rounded up to a multiple of the jobs).
* ``CUDA_CORE_STRESS_JOBS``: GPU programs run at once (default ``min(8, os.cpu_count())``).
* ``CUDA_CORE_STRESS_SEED``: the hypothesis seed, to replay a run, or ``random`` for new
  programs (default: a fixed seed, so that CI runs the same programs each time).
* ``CUDA_CORE_STRESS_SHRINK=1``: let hypothesis shrink a failure (slow: every attempt is a new
  interpreter, and a hang costs a timeout). By default a failing program is instead reduced
  by removing operations one at a time, for at most ``CUDA_CORE_STRESS_REDUCE_S`` seconds
  (default 60; 0: no reduction; never for a hang).
* ``CUDA_CORE_STRESS_REPORT``: a file the GPU summary line, and each failing program as it is
  found, are appended to.

A failure names each failing program, its exit status or signal, the last 40 lines of its output
and a command that replays it, then the reduced program and its replay command.
"""

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from helpers import SLOWDOWN
from helpers.lifetime import cpu_programs, gpu_programs

INTERPRETER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers", "lifetime.py")
TIMEOUT = int(60 * SLOWDOWN)  # seconds per program; past it, the program hangs
TAIL = 40
REDUCE_S = float(os.environ.get("CUDA_CORE_STRESS_REDUCE_S", "60"))
# Hypothesis' shrinking runs an interpreter per attempt (minutes for one failure): off unless
# asked for; reduce() does a bounded job instead.
PHASES = [Phase.explicit, Phase.reuse, Phase.generate]
if os.environ.get("CUDA_CORE_STRESS_SHRINK") == "1":
    PHASES.append(Phase.shrink)


def _seed():
    """The hypothesis seed: ``CUDA_CORE_STRESS_SEED`` (an integer, or ``random`` for a fresh
    one), else a fixed one, so that CI runs the same programs every time. Printed with every
    failure and summary, so that any run can be replayed."""
    value = os.environ.get("CUDA_CORE_STRESS_SEED", "")
    if value == "random":
        return random.SystemRandom().randrange(2**32)
    return int(value) if value else 26


CPU_SEED = _seed()


class Outcome:
    """How one program ended: ``category`` is ok, crashed, hung or garbage."""

    def __init__(self, program, returncode, output):
        self.program = program
        self.returncode = returncode  # None: killed at the timeout
        self.output = output
        if returncode is None:
            self.category = "hung"
        elif returncode == 0:
            self.category = "ok"
        elif returncode == 3:
            self.category = "garbage"
        else:
            self.category = "crashed"

    @property
    def signature(self):
        """What a reduction must keep: the category, the exit status or signal, and for an
        uncaught Python exception its class (the last line of the traceback)."""
        last = ""
        if self.returncode == 1:
            lines = self.output.strip().splitlines()
            last = lines[-1].split(":")[0] if lines else ""
        return self.category, self.returncode, last

    @property
    def status(self):
        if self.returncode is None:
            return f"no exit within {TIMEOUT} s (killed)"
        if self.returncode < 0:
            try:
                name = signal.Signals(-self.returncode).name
            except ValueError:
                name = f"signal {-self.returncode}"
            return f"killed by {name}"
        return f"exit status {self.returncode}"

    def report(self, folder, seed_value, reduced=None):
        """The failure message: program, status, output tail and a replay command (the
        program is written to a file under ``folder`` for it); then ``reduced``, a shorter
        program that fails the same way, if any."""
        tail = "\n".join(self.output.splitlines()[-TAIL:])
        text = (f"lifetime program {self.category}: {self.status} (hypothesis seed "
                f"{seed_value})\n"
                f"program: {json.dumps(self.program)}\n"
                f"replay: {replay_command(self.program, folder)}\n"
                f"last {TAIL} lines of output:\n{tail}")
        if reduced is not None:
            text += (f"\nreduced to {len(reduced)} of {len(self.program)} operations, failing "
                     f"the same way: {json.dumps(reduced)}\n"
                     f"replay: {replay_command(reduced, folder)}")
        return text


def replay_command(program, folder):
    """A shell command that runs ``program`` again (written to a file under ``folder``)."""
    text = json.dumps(program)
    path = os.path.join(folder, f"program-{hashlib.sha256(text.encode()).hexdigest()[:12]}.json")
    with open(path, "w") as f:
        f.write(text)
    return f"{sys.executable} {INTERPRETER} < {path}"


def run_program(program, workdir, cache):
    """Run one program in a fresh interpreter, from ``workdir`` (outside the source tree, so
    that its ``cuda_core/`` cannot shadow the installed package; the interpreter writes
    nothing there); ``cache`` is the folder of the interpreter's compiled-kernel cache."""
    env = dict(os.environ)
    # The interpreter dumps every thread's stack shortly before the timeout: a hang's report
    # then shows where it sits.
    env["CUDA_CORE_LIFETIME_WATCHDOG"] = str(TIMEOUT - 5)
    env["CUDA_CORE_LIFETIME_CACHE"] = str(cache)
    env["PYTHONUNBUFFERED"] = "1"
    try:
        done = subprocess.run([sys.executable, INTERPRETER], input=json.dumps(program),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              cwd=str(workdir), env=env, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as exc:  # run() killed the process
        output = exc.stdout or b""
        if isinstance(output, bytes):
            output = output.decode(errors="replace")
        return Outcome(program, None, output)
    return Outcome(program, done.returncode, done.stdout)


_REDUCED = {}  # program JSON -> its reduction: hypothesis replays a failure once more


def reduce(outcome, workdir, cache, budget):
    """A shorter program that fails as ``outcome`` did (same signature), or None: operations
    are removed one at a time, last first, in passes while one helps, for ``budget`` seconds
    (each attempt is a new interpreter). Not for a hang, where an attempt may cost the whole
    timeout."""
    key = json.dumps(outcome.program)
    if key in _REDUCED:
        return _REDUCED[key]
    if outcome.category in ("ok", "hung") or budget <= 0:
        return None
    deadline = time.monotonic() + budget
    program = list(outcome.program)
    progress = True
    while progress and time.monotonic() < deadline:
        progress = False
        for i in range(len(program) - 1, -1, -1):
            if time.monotonic() >= deadline:
                break
            candidate = program[:i] + program[i + 1:]
            if run_program(candidate, workdir, cache).signature == outcome.signature:
                program, progress = candidate, True
    reduced = program if len(program) < len(outcome.program) else None
    _REDUCED[key] = reduced
    return reduced


@settings(max_examples=int(os.environ.get("CUDA_CORE_STRESS_CPU", "25")), deadline=None,
          derandomize=False, database=None, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@seed(CPU_SEED)
@given(program=cpu_programs())
def test_cpu_lifetime_programs(tmp_path_factory, program):
    """Programs of compilation, ObjectCode, Linker, and Buffer / StridedMemoryView over NumPy
    arrays: no GPU or driver needed."""
    workdir = tmp_path_factory.mktemp("lifetime-cpu")
    cache = tmp_path_factory.getbasetemp()
    outcome = run_program(program, workdir, cache)
    if outcome.category != "ok":
        reduced = reduce(outcome, workdir, cache, REDUCE_S)
        pytest.fail(outcome.report(str(workdir), CPU_SEED, reduced), pytrace=False)


def _env_int(name, default):
    value = os.environ.get(name)
    return int(value) if value else default


@pytest.mark.gpu
def test_gpu_lifetime_programs(tmp_path_factory):
    """GPU programs over streams, events, every memory resource, buffers and views, kernels,
    graph definitions and builders, executable graphs and driver clones, run ``jobs`` at a
    time: each hypothesis example is a batch of ``jobs`` programs."""
    jobs = max(1, _env_int("CUDA_CORE_STRESS_JOBS", min(8, os.cpu_count() or 1)))
    wanted = max(1, _env_int("CUDA_CORE_STRESS_PROGRAMS", 48))
    jobs = min(jobs, wanted)
    examples = -(-wanted // jobs)
    seed_value = _seed()
    cache = tmp_path_factory.mktemp("lifetime-cache")
    workdir = tmp_path_factory.mktemp("lifetime-gpu")
    # Each batch's outcomes, by its JSON: hypothesis runs a failing batch once more at the
    # end, which then neither runs nor counts again (nor turns "flaky" when a race does not
    # repeat).
    batches = {}

    def run_one(program):
        return run_program(program, workdir, cache)

    @settings(max_examples=examples, deadline=None, derandomize=False, database=None,
              phases=PHASES,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @seed(seed_value)
    @given(batch=st.lists(gpu_programs(), min_size=jobs, max_size=jobs, unique_by=json.dumps))
    def run_batch(batch):
        key = json.dumps(batch)
        if key not in batches:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                batches[key] = list(pool.map(run_one, batch))
        outcomes = batches[key]
        failed = [o for o in outcomes if o.category != "ok"]
        if failed:
            folder = tmp_path_factory.mktemp("lifetime-failed")
            # Each failure as it ran, before the reduction: a run stopped at its deadline
            # (SIGINT) during the reduction still leaves the program in its log and report.
            found = "\n\n".join(o.report(str(folder), seed_value) for o in failed)
            print(found, flush=True)
            report = os.environ.get("CUDA_CORE_STRESS_REPORT")
            if report:
                with open(report, "a") as f:
                    f.write(found + "\n")
            # One reduction budget for the batch, shared in turn.
            deadline = time.monotonic() + REDUCE_S
            reports = []
            for o in failed:
                reduced = reduce(o, folder, cache, deadline - time.monotonic())
                reports.append(o.report(str(folder), seed_value, reduced))
            pytest.fail(f"{len(failed)} of {len(outcomes)} lifetime programs failed\n\n"
                        + "\n\n".join(reports), pytrace=False)

    try:
        run_batch()
    finally:
        ran = [o.category for outcomes in batches.values() for o in outcomes]
        counts = {c: ran.count(c) for c in ("crashed", "hung", "garbage")}
        line = (f"LIFETIME STRESS: {len(ran)} programs, {counts['crashed']} crashed, "
                f"{counts['hung']} hung, {counts['garbage']} garbage (seed {seed_value})")
        print(line)
        report = os.environ.get("CUDA_CORE_STRESS_REPORT")
        if report:
            with open(report, "a") as f:
                f.write(line + "\n")
