"""``python -m cuda_core.bench``: the launch cases on this machine's GPU, as a table (or JSON,
or a plot). Exits 1, with one line naming the cause, where there is no GPU or driver."""

from __future__ import annotations

import argparse
import sys

from cuda_core.bench._cases import CLI_CASES, make_cases
from cuda_core.bench._harness import run_cases
from cuda_core.bench._launch import FLOOR, NVIDIA, OURS
from cuda_core.bench._report import (_positive_int, add_arguments, device_meta, print_report,
                                     report_data, run_script, write_json)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m cuda_core.bench",
        description="Time one kernel launch (grid 1, block 1, a kernel that returns at once) "
                    "through cuda_core, the C floor (cuLaunchKernelEx in a C loop), the bare "
                    "cuda.bindings call, and NVIDIA's cuda.core and CuPy where installed: 0 "
                    "arguments, 4 Buffers, 4 ints, a struct by value, 16 arguments and a "
                    "one-node graph replay. Contenders alternate within each round, in one "
                    "process.")
    add_arguments(p, json_stdout=True)
    p.set_defaults(rounds=11)
    p.add_argument("--plot", metavar="FILE.png",
                   help="also draw the median time per launch of each contender and case "
                        "(needs matplotlib: pip install 'cuda-core-cy[plot]')")
    p.add_argument("--max-launches", type=_positive_int, default=1000, metavar="N",
                   help="at most N launches per sample; the stream is synchronized after "
                        "each sample, outside the timing (default: %(default)s)")
    return p


def plot(data: dict, path: str) -> None:
    """A grouped bar chart of ``report_data``'s medians (µs per launch), one group per case."""
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("--plot needs matplotlib: pip install 'cuda-core-cy[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = data["cases"]
    names: list[str] = []
    for case in cases:
        for c in case["contenders"]:
            if c["name"] not in names:
                names.append(c["name"])
    width = 0.8 / max(len(names), 1)
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(cases)), 4.5))
    for i, name in enumerate(names):
        xs, ys = [], []
        for j, case in enumerate(cases):
            c = next((c for c in case["contenders"] if c["name"] == name), None)
            if c is not None and c["median_ns"] is not None:
                xs.append(j + (i - (len(names) - 1) / 2) * width)
                ys.append(c["median_ns"] / 1000)
        ax.bar(xs, ys, width, label=name)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([c["name"] for c in cases], rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("µs per launch (median)")
    ax.set_title(f"{data['title']}: {data['meta'].get('device', '')}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    meta = device_meta("python -m cuda_core.bench",
                       ("cuda-core-cy", "cuda-bindings"),
                       optional=("cuda-core", "cupy-cuda13x", "cupy-cuda12x"))
    if meta is None:
        return 1
    meta["sample"] = (f"at most {args.max_launches} launches (grid 1, block 1), then a stream "
                      f"sync outside the timing")
    report = run_cases(make_cases(args.max_launches, CLI_CASES, extras=False), args,
                       title="cuda_core launch latency (time per launch)",
                       subject=OURS, baseline=NVIDIA, floor=FLOOR, meta=meta,
                       floor_ratio=True)
    if args.json == "-":
        write_json(report, "-")
    else:
        print_report(report)
        if args.json:
            write_json(report, args.json)
            print(f"wrote {args.json}")
    if args.plot:
        plot(report_data(report), args.plot)
        print(f"wrote {args.plot}", file=sys.stderr if args.json == "-" else sys.stdout)
    return 0


if __name__ == "__main__":
    run_script(main, "python -m cuda_core.bench")
