"""A small latency micro-benchmark harness (standard library only), shared by
``python -m cuda_core.bench`` and the scripts of the project's ``benchmarks/``; the report's
printing, JSON and command line are in ``_report``.

Vocabulary
----------
case
    One operation measured several ways, e.g. "stream create + close".
contender
    One way of doing it: ``cuda_core`` (ours), ``cuda.core`` (NVIDIA's), ``cuda.bindings``
    (the raw bindings), ``C floor`` (the same driver calls in a C loop). See
    :class:`Contender` for the forms a contender can take.

Method
------
Every contender of a case runs in this one process, on this one thread. Each *sample* times
``inner`` back-to-back calls with :func:`time.perf_counter_ns` (the garbage collector off) and
keeps the time per call. After ``warmup`` discarded rounds, ``rounds`` rounds each take one
sample of every contender; the order rotates from round to round (round-robin), so clock or
thermal drift and cache effects fall on all contenders alike. Reported per contender: the
median time per call, the interquartile range and the minimum of the samples, the ratio of
the median to the baseline contender's median, and the gap to the floor contender.

The target check compares the subject's median with the baseline's: PASS when it is not
larger (times ``1 + tolerance``). Beside the verdict, the rounds are also compared pairwise
(the samples of one round are taken back to back): the median of the per-round ratios and
the number of rounds the subject won, which tell a real gap from noise.

A script may give several :class:`Target` checks instead (subject <= ratio x reference, each
over the cases it names), judged per case and shown one column each.

Asynchronous work (kernel launches) is kept from piling up across samples by a contender's
``after_sample`` hook (see :class:`Prepared`), run outside the timing, and by a case's
``max_inner`` cap on calls per sample.

Statements are compiled into the timing loop, with the names they use bound as local
variables, so a sample adds only the loop's own step (``loop overhead`` in the report, a few
ns) to the operation: no lambda or closure call per iteration.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import importlib.util
import itertools
import keyword
import os
import platform
import statistics
import sys
import textwrap
import time
from typing import Any, Callable, Sequence

__all__ = [
    "Case",
    "Contender",
    "Prepared",
    "Target",
    "Unavailable",
    "Report",
    "run_cases",
]


class Unavailable(Exception):
    """Raised by a contender's setup when it cannot run here; reported as ``n/a (reason)``."""


@dataclasses.dataclass
class Contender:
    """One way of performing a case's operation.

    Give exactly one of:

    ``fn``
        A zero-argument callable, timed as ``fn()``.
    ``setup``
        A zero-argument callable run once before the case's warm-up. What it returns depends
        on the other fields:

        * ``stmt`` is None and ``self_timed`` is False: a zero-argument callable, timed as
          ``fn()``;
        * ``stmt`` is given: a dict of names; ``stmt`` (Python source, one or more
          statements) is timed with those names bound as local variables;
        * ``self_timed`` is True: a function ``run(n) -> int`` that performs the operation
          ``n`` times and returns the nanoseconds it took (a C loop, say).

        It may instead return ``(that, cleanup)``, where ``cleanup()`` runs after the case
        (also when it failed), or a :class:`Prepared`, which can also name an
        ``after_sample()`` hook. It may raise :class:`Unavailable` (or
        ``ModuleNotFoundError``) to be reported as ``n/a``.

    ``requires`` names modules (e.g. ``"cuda.core"``); when one is missing the contender is
    reported as ``n/a (not installed: ...)`` and ``setup`` is never called.
    """

    name: str
    fn: Callable[[], Any] | None = None
    setup: Callable[[], Any] | None = None
    stmt: str | None = None
    self_timed: bool = False
    requires: tuple[str, ...] = ()

    def __post_init__(self):
        if (self.fn is None) == (self.setup is None):
            raise ValueError(f"Contender {self.name!r}: give exactly one of fn and setup")
        if self.fn is not None and (self.stmt is not None or self.self_timed):
            raise ValueError(f"Contender {self.name!r}: stmt and self_timed go with setup")
        if self.stmt is not None and self.self_timed:
            raise ValueError(f"Contender {self.name!r}: stmt and self_timed exclude each other")
        if isinstance(self.requires, str):
            self.requires = (self.requires,)


@dataclasses.dataclass
class Prepared:
    """What a contender's setup may return to attach hooks to its value.

    ``value`` is what the setup would otherwise return (a callable, a dict of names for
    ``stmt``, or ``run(n) -> ns``). ``cleanup()`` runs once after the case, also when it failed.
    ``after_sample()`` runs after every timed sample (calibration and warm-up included),
    outside the timing: e.g. a stream sync, so that work queued asynchronously by one sample
    cannot pile up into the next. An exception from it is the contender's error.
    """

    value: Any
    cleanup: Callable[[], Any] | None = None
    after_sample: Callable[[], Any] | None = None


@dataclasses.dataclass
class Case:
    """An operation and its contenders; ``note`` is printed under the table.

    ``max_inner`` caps the calls per sample (calibrated or given with ``--inner``), e.g. to
    keep a sample of asynchronous launches shorter than the driver's queue.
    """

    name: str
    contenders: Sequence[Contender]
    note: str = ""
    max_inner: int | None = None


@dataclasses.dataclass
class Target:
    """A check per case: ``subject``'s median is at most ``max_ratio`` times ``reference``'s
    (times ``1 + tolerance``), in the cases named by ``cases`` (all cases when None)."""

    subject: str
    reference: str
    max_ratio: float = 1.0
    cases: Sequence[str] | None = None

    @property
    def label(self) -> str:
        return f"{self.subject} <= {self.max_ratio:g}x {self.reference}"

    def applies_to(self, case_name: str) -> bool:
        return self.cases is None or case_name in self.cases


# -- statistics ------------------------------------------------------------------------------

@dataclasses.dataclass
class ContenderResult:
    name: str
    status: str  # "ok", "n/a (...)" or "error: ..."
    samples_ns: list[float] = dataclasses.field(default_factory=list)
    median_ns: float | None = None
    q1_ns: float | None = None
    q3_ns: float | None = None
    min_ns: float | None = None
    max_ns: float | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.median_ns is not None

    @property
    def iqr_ns(self) -> float | None:
        if self.q1_ns is None or self.q3_ns is None:
            return None
        return self.q3_ns - self.q1_ns

    def summarize(self) -> None:
        s = self.samples_ns
        if not s:
            return
        self.median_ns = statistics.median(s)
        self.min_ns = min(s)
        self.max_ns = max(s)
        if len(s) >= 2:
            q = statistics.quantiles(s, n=4, method="inclusive")
            self.q1_ns, self.q3_ns = q[0], q[2]
        else:
            self.q1_ns = self.q3_ns = s[0]


@dataclasses.dataclass
class CaseResult:
    name: str
    inner: int
    contenders: list[ContenderResult]
    note: str = ""
    target: str = ""
    verdict: str = "n/a"  # "PASS", "FAIL" or "n/a (...)"
    # Round by round (the samples of one round are taken back to back): the median of
    # subject/baseline and the number of rounds in which the subject was faster.
    paired_ratio: float | None = None
    subject_faster: int | None = None
    paired_rounds: int | None = None
    # One per Target given to run_cases (those that do not apply to this case included).
    checks: list[Check] = dataclasses.field(default_factory=list)

    @property
    def verdict_text(self) -> str:
        if self.paired_ratio is None:
            return self.verdict
        return (f"{self.verdict} ({self.paired_ratio - 1:+.1%} paired; faster in "
                f"{self.subject_faster}/{self.paired_rounds} rounds)")

    def get(self, name: str) -> ContenderResult | None:
        for c in self.contenders:
            if c.name == name:
                return c
        return None


@dataclasses.dataclass
class Check:
    """The outcome of one :class:`Target` in one case."""

    target: Target
    verdict: str  # "PASS", "FAIL", "n/a (...)" or "-" (the target does not cover this case)
    ratio: float | None = None  # subject's median / reference's median
    # Round by round: the median of subject/reference and the rounds in which the target held.
    paired_ratio: float | None = None
    rounds_met: int | None = None
    paired_rounds: int | None = None

    @property
    def text(self) -> str:
        if self.ratio is None:
            return self.verdict
        rounds = (f", {self.rounds_met}/{self.paired_rounds} rounds"
                  if self.paired_rounds else "")
        return f"{self.verdict} ({self.ratio:.2f}x{rounds})"


@dataclasses.dataclass
class Report:
    title: str
    baseline: str | None
    subject: str | None
    floor: str | None
    target: str
    tolerance: float
    rounds: int
    warmup: int
    loop_overhead_ns: float
    meta: dict[str, Any]
    cases: list[CaseResult]
    targets: list[Target] = dataclasses.field(default_factory=list)
    floor_ratio: bool = False

    def target_verdict(self, target: Target) -> str:
        """PASS or FAIL over the cases the target covers (those that could be compared)."""
        checks = [(c.name, k) for c in self.cases for k in c.checks
                  if k.target is target and k.verdict != "-"]
        judged = [(name, k) for name, k in checks if k.verdict in ("PASS", "FAIL")]
        failed = [name for name, k in judged if k.verdict == "FAIL"]
        if not judged:
            return "n/a (no case could be compared)"
        if failed:
            return f"FAIL ({len(failed)} of {len(judged)} cases: {'; '.join(failed)})"
        unjudged = len(checks) - len(judged)
        extra = f"; {unjudged} not compared" if unjudged else ""
        return f"PASS ({len(judged)} of {len(judged)} cases{extra})"

    @property
    def verdict(self) -> str:
        if self.targets:
            verdicts = [self.target_verdict(t) for t in self.targets]
            if any(v.startswith("FAIL") for v in verdicts):
                return "FAIL"
            if all(v.startswith("n/a") for v in verdicts):
                return "n/a (no case could be compared)"
            return "PASS" if all(v.startswith("PASS") for v in verdicts) else "PASS (partly n/a)"
        judged = [c for c in self.cases if c.verdict in ("PASS", "FAIL")]
        failed = [c.name for c in self.cases if c.verdict == "FAIL"]
        if not judged:
            return "n/a (no case could be compared)"
        if failed:
            return f"FAIL ({len(failed)} of {len(judged)} cases: {', '.join(failed)})"
        unjudged = len(self.cases) - len(judged)
        extra = f"; {unjudged} not compared" if unjudged else ""
        return f"PASS ({len(judged)} of {len(judged)} cases{extra})"


# -- timing ----------------------------------------------------------------------------------

def _compile_loop(stmt: str, names: Sequence[str], label: str) -> Callable[[int, dict], int]:
    """A function ``loop(n, ns) -> ns elapsed`` running ``stmt`` n times, names as locals."""
    for name in names:
        if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_h_"):
            raise ValueError(f"{label}: {name!r} cannot be bound as a local variable")
    body = textwrap.dedent(stmt).strip("\n")
    compile(body, f"<{label}>", "exec")  # a syntax error names the contender
    binds = "".join(f"    {name} = _h_ns[{name!r}]\n" for name in names)
    src = (
        "def _h_loop(_h_n, _h_ns, _h_clock=_h_clock, _h_repeat=_h_repeat):\n"
        f"{binds}"
        "    _h_it = _h_repeat(None, _h_n)\n"
        "    _h_t0 = _h_clock()\n"
        "    for _h_ in _h_it:\n"
        f"{textwrap.indent(body, ' ' * 8)}\n"
        "    _h_t1 = _h_clock()\n"
        "    return _h_t1 - _h_t0\n"
    )
    scope: dict[str, Any] = {"_h_clock": time.perf_counter_ns, "_h_repeat": itertools.repeat}
    exec(compile(src, f"<{label}>", "exec"), scope)
    return scope["_h_loop"]


class _Runner:
    """A prepared contender: ``sample(n)`` returns ns per call."""

    def __init__(self, contender: Contender, result: ContenderResult):
        self.contender = contender
        self.result = result
        self.cleanup: Callable[[], Any] | None = None
        self.after_sample: Callable[[], Any] | None = None
        self._loop: Callable[[int], int] | None = None

    def prepare(self, label: str) -> None:
        c = self.contender
        missing = [m for m in c.requires if not _importable(m)]
        if missing:
            self.result.status = f"n/a (not installed: {', '.join(missing)})"
            return
        try:
            if c.fn is not None:
                made: Any = c.fn
            else:
                assert c.setup is not None  # a Contender has fn or setup (__post_init__)
                made = c.setup()
                if isinstance(made, Prepared):
                    self.cleanup, self.after_sample = made.cleanup, made.after_sample
                    made = made.value
                elif isinstance(made, tuple) and len(made) == 2 and callable(made[1]):
                    made, self.cleanup = made
            if c.self_timed:
                if not callable(made):
                    raise TypeError("a self-timed setup must return run(n) -> ns")
                self._loop = made
            elif c.stmt is not None:
                if not isinstance(made, dict):
                    raise TypeError("a setup with stmt must return a dict of names")
                loop = _compile_loop(c.stmt, list(made), f"{label}: {c.name}")
                self._loop = lambda n, _l=loop, _ns=made: _l(n, _ns)
            else:
                if not callable(made):
                    raise TypeError("setup must return a zero-argument callable")
                loop = _compile_loop("_fn()", ["_fn"], f"{label}: {c.name}")
                self._loop = lambda n, _l=loop, _ns={"_fn": made}: _l(n, _ns)
        except Unavailable as exc:
            self.result.status = f"n/a ({exc})"
        except ModuleNotFoundError as exc:
            self.result.status = f"n/a (not installed: {exc.name})"
        except Exception as exc:  # reported in the table; the other contenders still run
            self.result.status = f"error: {_one_line(exc)}"

    @property
    def active(self) -> bool:
        return self._loop is not None and self.result.status == "ok"

    def time(self, n: int) -> float:
        """ns per call over n calls, the garbage collector off; records failures. The
        contender's ``after_sample`` hook runs afterwards, outside the timing."""
        gc_was_on = gc.isenabled()
        gc.disable()
        loop = self._loop
        assert loop is not None  # only active runners are timed
        try:
            elapsed = loop(n)
        except Exception as exc:
            self.result.status = f"error: {_one_line(exc)}"
            self._loop = None
            return float("nan")
        finally:
            if gc_was_on:
                gc.enable()
        if self.after_sample is not None:
            try:
                self.after_sample()
            except Exception as exc:
                self.result.status = f"error: after the sample: {_one_line(exc)}"
                self._loop = None
                return float("nan")
        if not isinstance(elapsed, int) or elapsed < 0:
            self.result.status = f"error: the timed loop returned {elapsed!r}"
            self._loop = None
            return float("nan")
        return elapsed / n

    def finish(self) -> None:
        if self.cleanup is not None:
            try:
                self.cleanup()
            except Exception as exc:
                self.result.warnings.append(f"cleanup failed: {_one_line(exc)}")
            self.cleanup = None


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _calibrate(runners: Sequence[_Runner], sample_ns: float, limit: int = 1_000_000) -> int:
    """Inner iterations so that a sample of the slowest contender takes about sample_ns;
    no estimating sample runs more than ``limit`` calls."""
    slowest = 0.0
    for r in runners:
        n = 1
        while r.active:
            per_call = r.time(n)
            if per_call * n >= 2_000_000 or n >= limit:  # 2 ms is enough to estimate
                slowest = max(slowest, per_call)
                break
            n = min(n * 10, limit)
    if slowest <= 0:
        return 1000
    return max(1, min(10_000_000, int(sample_ns / slowest)))


def measure_loop_overhead(inner: int = 100_000, rounds: int = 7) -> float:
    """ns per iteration of the timing loop around ``pass``: included in every number."""
    loop = _compile_loop("pass", [], "loop overhead")
    return min(loop(inner, {}) / inner for _ in range(rounds))


def run_case(case: Case, *, rounds: int, inner: int | None, warmup: int, sample_ms: float,
             progress: Callable[[str], None] | None = None) -> CaseResult:
    runners = [_Runner(c, ContenderResult(c.name, "ok")) for c in case.contenders]
    try:
        for r in runners:
            r.prepare(case.name)
        active = [r for r in runners if r.active]
        cap = case.max_inner
        n = inner if inner else _calibrate(active, sample_ms * 1e6,
                                           min(cap, 1_000_000) if cap else 1_000_000)
        if cap:
            n = min(n, cap)
        if progress:
            progress(f"{case.name}: {len(active)} contenders, {warmup} warm-up + {rounds} "
                     f"rounds of {n} calls")
        for i in range(warmup + rounds):
            active = [r for r in runners if r.active]
            if not active:
                break
            k = i % len(active)
            for r in active[k:] + active[:k]:
                per_call = r.time(n)
                if i >= warmup and r.active:
                    r.result.samples_ns.append(per_call)
    finally:
        for r in reversed(runners):
            r.finish()
    for r in runners:
        if r.result.status == "ok":
            r.result.summarize()
            if r.result.median_ns is None:
                r.result.status = "error: no samples"
    return CaseResult(case.name, n if runners else 0, [r.result for r in runners], case.note)


def judge(result: CaseResult, subject: str | None, baseline: str | None,
          tolerance: float) -> None:
    """Sets ``result.verdict``: PASS when the subject's median is at most the baseline's
    (times 1 + tolerance)."""
    if not subject or not baseline:
        return
    result.target = f"{subject} <= {baseline}"
    ours, theirs = result.get(subject), result.get(baseline)
    if ours is None or theirs is None:
        result.verdict = f"n/a (no {subject if ours is None else baseline} row)"
    elif not ours.ok:
        # Our own contender failing is a failure, not a missing peer.
        result.verdict = "FAIL" if ours.status.startswith("error") else "n/a"
    elif not theirs.ok:
        why = "n/a" if theirs.status.startswith("n/a") else "error"
        result.verdict = f"n/a ({baseline} {why})"
    else:
        mine, other = ours.median_ns, theirs.median_ns
        assert mine is not None and other is not None  # both ok
        result.verdict = "PASS" if mine <= other * (1 + tolerance) else "FAIL"
        pairs = list(zip(ours.samples_ns, theirs.samples_ns))
        if pairs and len(ours.samples_ns) == len(theirs.samples_ns):
            result.paired_ratio = statistics.median(a / b for a, b in pairs)
            result.subject_faster = sum(a < b for a, b in pairs)
            result.paired_rounds = len(pairs)


def check(result: CaseResult, target: Target, tolerance: float) -> Check:
    """Judges one target in one case: PASS when the subject's median is at most
    ``target.max_ratio * (1 + tolerance)`` times the reference's."""
    if not target.applies_to(result.name):
        return Check(target, "-")
    ours, theirs = result.get(target.subject), result.get(target.reference)
    if ours is None or theirs is None:
        missing = target.subject if ours is None else target.reference
        return Check(target, f"n/a (no {missing} row)")
    if not ours.ok:
        # The subject failing is a failure, not a missing peer.
        return Check(target, "FAIL" if ours.status.startswith("error") else "n/a")
    if not theirs.ok or not theirs.median_ns:
        why = "n/a" if theirs.status.startswith("n/a") else "error"
        return Check(target, f"n/a ({target.reference} {why})")
    limit = target.max_ratio * (1 + tolerance)
    assert ours.median_ns is not None  # ok
    ratio = ours.median_ns / theirs.median_ns
    out = Check(target, "PASS" if ratio <= limit else "FAIL", ratio)
    pairs = list(zip(ours.samples_ns, theirs.samples_ns))
    if pairs and len(ours.samples_ns) == len(theirs.samples_ns):
        out.paired_ratio = statistics.median(a / b for a, b in pairs)
        out.rounds_met = sum(a <= b * limit for a, b in pairs)
        out.paired_rounds = len(pairs)
    return out


def run_cases(cases: Sequence[Case], args: argparse.Namespace, *, title: str,
              subject: str | None = None, baseline: str | None = None,
              floor: str | None = None, target: str = "",
              meta: dict[str, Any] | None = None, targets: Sequence[Target] = (),
              floor_ratio: bool = False) -> Report:
    """Runs the selected cases (``args`` from :func:`add_arguments`) and judges each one.

    Without ``targets`` each case is judged "subject <= baseline" (times 1 + tolerance). With
    ``targets``, each target is checked in every case instead (see :func:`check`), one column
    each in the table. ``floor_ratio`` adds a column of each median's ratio to the floor's.
    """
    selected = [c for c in cases if not args.filter or any(f.lower() in c.name.lower()
                                                          for f in args.filter)]
    progress = None if args.quiet else (lambda msg: print(f"  {msg}", file=sys.stderr,
                                                            flush=True))
    overhead = measure_loop_overhead()
    results = []
    for i, case in enumerate(selected, 1):
        if progress:
            progress(f"[{i}/{len(selected)}] {case.name}")
        res = run_case(case, rounds=args.rounds, inner=args.inner, warmup=args.warmup,
                       sample_ms=args.sample_ms)
        if targets:
            res.checks = [check(res, t, args.tolerance) for t in targets]
        else:
            judge(res, subject, baseline, args.tolerance)
        results.append(res)
    full_meta = _environment()
    full_meta.update(meta or {})
    return Report(title, baseline, subject, floor, target, args.tolerance, args.rounds,
                  args.warmup, overhead, full_meta, results, list(targets), floor_ratio)


def _environment() -> dict[str, Any]:
    return {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "time": time.strftime("%Y-%m-%d %H:%M:%S %z"),
    }
