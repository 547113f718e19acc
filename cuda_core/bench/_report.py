"""The benchmark harness's output and command line: the report as a table, as JSON, the
arguments every benchmark script takes, and the machine's description for the header."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import textwrap
from typing import Callable, Sequence

from cuda_core.bench._harness import ContenderResult, Report

__all__ = [
    "add_arguments",
    "device_meta",
    "finish",
    "format_ns",
    "print_report",
    "report_data",
    "run_script",
    "write_json",
]


# -- output ----------------------------------------------------------------------------------

def _micro() -> str:
    enc = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        "\u00b5".encode(enc)
        return "\u00b5s"
    except (UnicodeEncodeError, LookupError):
        return "us"


def format_ns(ns: float | None, signed: bool = False) -> str:
    if ns is None or ns != ns:
        return "-"
    sign = "+" if signed and ns >= 0 else ""
    if abs(ns) >= 1000:
        return f"{sign}{ns / 1000:.3f} {_micro()}"
    return f"{sign}{ns:.1f} ns"


def print_report(report: Report, file=None) -> None:
    out = file or sys.stdout
    print(f"\n{report.title}", file=out)
    print("=" * len(report.title), file=out)
    for key, value in report.meta.items():
        print(f"  {key}: {value}", file=out)
    method = (f"method: {report.warmup} warm-up + {report.rounds} measured rounds in one "
              f"process; contenders alternate within a round, the order rotating each round; "
              f"per contender the median, interquartile range and minimum of the rounds' time "
              f"per call. The timing loop's own step ({format_ns(report.loop_overhead_ns)}) "
              f"is included in every number.")
    print(textwrap.fill(method, width=96, initial_indent="  ", subsequent_indent="    "),
          file=out)
    print(file=out)

    base = report.baseline
    # (header, right-aligned)
    columns = [("case", False), ("contender", False), ("median", True), ("IQR", True),
               ("min", True), (f"vs {base}" if base else "ratio", True)]
    if report.floor and report.floor_ratio:
        columns.append((f"vs {report.floor}", True))
    if report.floor:
        columns.append((f"over {report.floor}", True))
    # The verdict columns: one per target, or the single "subject <= baseline" one.
    if report.targets:
        tail = [t.label for t in report.targets]
    else:
        tail = [f"target: {report.subject} <= {base}" if report.subject and base
                else "target"]
    columns += [(h, False) for h in tail]
    rows: list[list[str] | _Span | None] = []
    notes: list[str] = []
    for case in report.cases:
        base_res = case.get(base) if base else None
        floor_res = case.get(report.floor) if report.floor else None
        for j, c in enumerate(case.contenders):
            label = case.name if j == 0 else ""
            if report.targets:
                verdicts = [k.text if k.target.subject == c.name else ""
                            for k in case.checks]
                verdicts += [""] * (len(tail) - len(verdicts))
            else:
                verdicts = [case.verdict_text if c.name == report.subject else ""]
            if not c.ok or c.median_ns is None:
                status = c.status if c.status.startswith("n/a") else "ERROR (see notes)"
                # One cell spanning the numeric columns; the verdicts stay in their columns.
                rows.append(_Span(label, c.name, status, verdicts))
                if c.status.startswith("error"):
                    notes.append(f"{case.name} / {c.name}: {c.status}")
            else:
                cells = [label, c.name, format_ns(c.median_ns), format_ns(c.iqr_ns),
                         format_ns(c.min_ns), _ratio(c, base_res)]
                if report.floor and report.floor_ratio:
                    cells.append(_ratio(c, floor_res))
                if report.floor:
                    over = ""
                    if floor_res is not None and floor_res.median_ns is not None and \
                            floor_res.ok and c is not floor_res:
                        over = format_ns(c.median_ns - floor_res.median_ns, signed=True)
                    cells.append(over)
                rows.append(cells + verdicts)
            for w in c.warnings:
                notes.append(f"{case.name} / {c.name}: {w}")
        if case.note:
            notes.append(f"{case.name}: {case.note}")
        rows.append(None)
    _print_table(columns, rows, out, len(tail))
    print("  calls per sample: " + ", ".join(f"{c.name} {c.inner}" for c in report.cases),
          file=out)
    if report.targets:
        print("  a target cell: verdict (ratio of medians, rounds in which the ratio of that "
              "round's two samples met it)", file=out)
    if notes:
        print("\nNotes:", file=out)
        for n in notes:
            print(f"  - {n}", file=out)
    if report.targets:
        print(f"\nTargets{': ' + report.target if report.target else ''}", file=out)
        for t in report.targets:
            where = "" if t.cases is None else f" (cases: {'; '.join(t.cases)})"
            print(textwrap.fill(f"{t.label}{where}: {report.target_verdict(t)}", width=96,
                                initial_indent="  ", subsequent_indent="    "), file=out)
        print(f"  overall: {report.verdict}", file=out)
        if report.tolerance:
            print(f"  (a case passes within a tolerance of {report.tolerance:.0%} on each "
                  f"target's ratio)", file=out)
    elif report.target:
        print(f"\nTarget: {report.target}: {report.verdict}", file=out)
        if report.tolerance:
            print(f"  (a case passes within a tolerance of {report.tolerance:.0%})", file=out)
    print(file=out, flush=True)


def _ratio_of(c: ContenderResult, ref: ContenderResult | None) -> float | None:
    """The ratio of ``c``'s median to ``ref``'s, where both ran."""
    if ref is None or not ref.ok or not ref.median_ns or not c.ok or c.median_ns is None:
        return None
    return c.median_ns / ref.median_ns


def _ratio(c: ContenderResult, ref: ContenderResult | None) -> str:
    r = _ratio_of(c, ref)
    return "-" if r is None else f"{r:.2f}x"


@dataclasses.dataclass
class _Span:
    """A table row whose status text spans the numeric columns."""
    case: str
    contender: str
    text: str
    verdicts: list[str]


def _print_table(columns: list[tuple[str, bool]], rows: list, out, tail: int = 1) -> None:
    """``tail``: the number of verdict columns at the end, left free by a spanning row."""
    widths = [len(h) for h, _ in columns]
    for row in rows:
        cells = ([row.case, row.contender] if isinstance(row, _Span) else row or [])
        for i, cell in enumerate(cells):
            widths[i] = max(widths[i], len(cell))
        if isinstance(row, _Span):
            for i, cell in enumerate(row.verdicts):
                k = len(widths) - tail + i
                widths[k] = max(widths[k], len(cell))

    def fmt(cells):
        return "  ".join(cell.rjust(widths[i]) if columns[i][1] else cell.ljust(widths[i])
                         for i, cell in enumerate(cells)).rstrip()

    spanned = widths[2:len(widths) - tail]
    span = sum(spanned) + 2 * (len(spanned) - 1)
    print(fmt([h for h, _ in columns]), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for row in rows:
        if row is None:
            print(file=out)
        elif isinstance(row, _Span):
            head = row.case.ljust(widths[0]) + "  " + row.contender.ljust(widths[1])
            verdicts = [v.ljust(widths[len(widths) - tail + i])
                        for i, v in enumerate(row.verdicts)]
            text = row.text.ljust(span) if any(row.verdicts) else row.text
            print("  ".join([head, text] + verdicts).rstrip(), file=out)
        else:
            print(fmt(row), file=out)


def report_data(report: Report) -> dict:
    """The report as plain data (what :func:`write_json` writes)."""
    data: dict = {
        "title": report.title,
        "baseline": report.baseline,
        "subject": report.subject,
        "floor": report.floor,
        "target": report.target,
        "verdict": report.verdict,
        "tolerance": report.tolerance,
        "rounds": report.rounds,
        "warmup": report.warmup,
        "loop_overhead_ns": report.loop_overhead_ns,
        "meta": report.meta,
        "cases": [],
    }
    if report.targets:
        data["targets"] = [{"label": t.label, "subject": t.subject, "reference": t.reference,
                            "max_ratio": t.max_ratio,
                            "cases": None if t.cases is None else list(t.cases),
                            "verdict": report.target_verdict(t)} for t in report.targets]
    for case in report.cases:
        base = case.get(report.baseline) if report.baseline else None
        floor = case.get(report.floor) if report.floor else None
        contenders: list[dict] = []
        entry: dict = {"name": case.name, "inner": case.inner, "target": case.target,
                       "verdict": case.verdict, "paired_ratio": case.paired_ratio,
                       "rounds_subject_faster": case.subject_faster,
                       "paired_rounds": case.paired_rounds, "note": case.note,
                       "contenders": contenders}
        if report.targets:
            entry["checks"] = [{"target": k.target.label, "verdict": k.verdict,
                                "ratio": k.ratio, "paired_ratio": k.paired_ratio,
                                "rounds_met": k.rounds_met, "paired_rounds": k.paired_rounds}
                               for k in case.checks]
        for c in case.contenders:
            item: dict = {
                "name": c.name, "status": c.status, "median_ns": c.median_ns,
                "q1_ns": c.q1_ns, "q3_ns": c.q3_ns, "iqr_ns": c.iqr_ns, "min_ns": c.min_ns,
                "max_ns": c.max_ns, "ratio_vs_baseline": _ratio_of(c, base),
                "warnings": c.warnings, "samples_ns": c.samples_ns,
            }
            if floor is not None:
                item["ratio_vs_floor"] = _ratio_of(c, floor)
            contenders.append(item)
        data["cases"].append(entry)
    return data


def write_json(report: Report, path: str) -> None:
    """Write the report as JSON to ``path`` ("-": standard output)."""
    if path == "-":
        json.dump(report_data(report), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    with open(path, "w", encoding="utf-8") as f:
        json.dump(report_data(report), f, indent=2)
        f.write("\n")


# -- command line ----------------------------------------------------------------------------

def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser,
                  json_stdout: bool = False) -> argparse.ArgumentParser:
    """The arguments every benchmark takes; ``json_stdout``: ``--json`` without a path writes
    the JSON to standard output instead of the table."""
    parser.add_argument("--rounds", type=_positive_int, default=21,
                        help="measured rounds; each takes one sample of every contender "
                             "(default: %(default)s)")
    parser.add_argument("--inner", type=_positive_int, default=None,
                        help="calls per sample (default: calibrated per case so that a sample "
                             "of its slowest contender takes about --sample-ms)")
    parser.add_argument("--sample-ms", type=float, default=10.0,
                        help="target duration of one sample when --inner is not given "
                             "(default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=2,
                        help="discarded warm-up rounds (default: %(default)s)")
    parser.add_argument("--tolerance", type=float, default=0.0,
                        help="a case passes when ours <= baseline * (1 + TOLERANCE); with "
                             "several targets, each target's limit is multiplied by "
                             "(1 + TOLERANCE) (default: %(default)s)")
    parser.add_argument("-k", "--filter", action="append", metavar="TEXT",
                        help="run only the cases whose name contains TEXT (repeatable)")
    if json_stdout:
        parser.add_argument("--json", metavar="PATH", nargs="?", const="-",
                            help="write the results as JSON: to PATH beside the table, or "
                                 "alone, to standard output instead of it")
    else:
        parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress lines on stderr")
    return parser


def finish(report: Report, args: argparse.Namespace) -> int:
    """Print the report, write it as JSON when ``--json`` was given; the script's exit code."""
    print_report(report)
    if args.json:
        write_json(report, args.json)
        print(f"wrote {args.json}")
    return 0


def run_script(main: Callable[[], int], name: str) -> None:
    """Run a benchmark script's ``main()``; where there is no driver or GPU, print one line
    naming the cause and exit 1 instead of a traceback."""
    reported: tuple[type[BaseException], ...] = ()  # none where cuda_core does not import:
    try:                                            # main() reports that itself
        from cuda_core import CUDAError
        reported = (CUDAError,)
    except ImportError:
        pass
    try:
        sys.exit(main())
    except reported as exc:
        print(f"{name}: cannot run: {exc}", file=sys.stderr)
        sys.exit(1)


def device_meta(script: str, dists: Sequence[str],
                optional: Sequence[str] = ()) -> dict[str, str] | None:
    """Make device 0 current and describe the machine for the report's header: the device,
    the driver's CUDA version and the versions of ``dists`` (and of ``optional`` ones where
    installed). None, after one line on stderr, when cuda_core does not import; with no GPU or
    driver the CUDAError propagates for :func:`run_script` to report."""
    from importlib import metadata

    try:
        import cuda_core
    except ImportError as exc:
        print(f"{script}: cannot import cuda_core: {exc}", file=sys.stderr)
        return None
    dev = cuda_core.Device(0)
    dev.set_current()
    major, minor = cuda_core.system.get_user_mode_driver_version()
    meta = {"device": f"{dev.name} (sm_{dev.arch})", "driver CUDA version": f"{major}.{minor}"}
    for dist in (*dists, *optional):
        try:
            meta[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            if dist not in optional:
                meta[dist] = "not installed"
    return meta
