"""``benchmarks/launch_latency.py`` of two builds of cuda_core on one GPU machine, their runs
alternated: before, after, before, after, ... (one process each, since both builds are the
module ``cuda_core``), then per case the median over the runs of cuda_core's ratio to the C
floor and to NVIDIA's cuda.core. The ratios, measured inside each process, are what compares
across processes; the absolute times drift with the machine between runs.

Staged here (each build with ``CUDA_CORE_BENCH=1``, for the C floor): ``.gpu/bench/<name>/``
holding that build's cp312 wheel and a copy of its ``benchmarks/`` folder. On the GPU machine:

    bash .gpu/on-gpu.sh python3 tools/gpu/launch_before_after.py [--pairs 3] [--rounds 11]

Names default to ``before`` and ``after``; ``--json`` writes each run's report to ``$OUT``.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

SUBJECT = "cuda_core"


def ratios(report):
    """case name -> (cuda_core's ratio to the C floor, its ratio to cuda.core), from one
    ``--json`` report; None where a ratio is missing."""
    out = {}
    for case in report["cases"]:
        for c in case["contenders"]:
            if c["name"] == SUBJECT:
                out[case["name"]] = (c.get("ratio_vs_floor"), c.get("ratio_vs_baseline"))
    return out


def summarize(runs):
    """name -> [reports] to case -> name -> (median ratio to the floor, median ratio to
    cuda.core, runs counted)."""
    table = {}
    for name, reports in runs.items():
        per_case = {}
        for report in reports:
            for case, pair in ratios(report).items():
                per_case.setdefault(case, []).append(pair)
        for case, pairs in per_case.items():
            floor = [p[0] for p in pairs if p[0] is not None]
            base = [p[1] for p in pairs if p[1] is not None]
            table.setdefault(case, {})[name] = (
                statistics.median(floor) if floor else None,
                statistics.median(base) if base else None, len(pairs))
    return table


def render(table, names):
    def cell(entry):
        if entry is None:
            return "n/a"
        floor, base, n = entry
        show = lambda r: "n/a" if r is None else f"{r:.2f}"  # noqa: E731
        return f"{show(floor)} / {show(base)} ({n})"

    lines = [f"{'case':46} " + " ".join(f"{n + ' (floor / cuda.core)':30}" for n in names)]
    for case, entries in table.items():
        lines.append(f"{case:46} " + " ".join(f"{cell(entries.get(n)):30}" for n in names))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=["before", "after"])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    root = os.path.join(".gpu", "bench")
    for name in args.names:
        wheels = [w for w in os.listdir(os.path.join(root, name)) if w.endswith(".whl")]
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                        "--target", f"/tmp/bench_{name}"]
                       + [os.path.join(root, name, w) for w in wheels], check=True)
    out = os.environ.get("OUT", "/tmp")
    runs = {name: [] for name in args.names}
    for i in range(args.pairs):
        for name in args.names:
            path = os.path.join(out, f"launch_{name}_{i}.json")
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                filter(None, [f"/tmp/bench_{name}", os.environ.get("PYTHONPATH")])))
            env.pop("PYTHONSAFEPATH", None)  # the script imports its neighbours (_harness)
            p = subprocess.run([sys.executable, "launch_latency.py", "--rounds",
                                str(args.rounds), "--json", path, "-q"],
                               cwd=os.path.join(root, name, "benchmarks"), env=env,
                               capture_output=True, text=True)
            if p.returncode != 0 or not os.path.exists(path):
                print(f"{name} run {i}: rc={p.returncode} {p.stderr.strip()[-300:]}")
                continue
            with open(path) as f:
                runs[name].append(json.load(f))
            print(f"{name} run {i}: done", flush=True)
    print(render(summarize(runs), args.names))


if __name__ == "__main__":
    main()
