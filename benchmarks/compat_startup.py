"""What the compat start-up hook (``cuda_core_compat.pth``) costs every interpreter start.

    python benchmarks/compat_startup.py [--starts N] [--calls N]

Python's ``site`` reads every ``.pth`` file of ``site-packages`` at start-up and runs its
``import`` lines. Ours is one line that reads ``CUDA_CORE_COMPAT`` and, unless it is ``1``, does
nothing more (docs/compat.rst). Two measurements, no GPU needed:

* **in process**: ``site.addpackage()`` on the installed hook, the very call ``site`` makes for
  it at start-up, timed over many calls (the variable unset): the hook's whole cost;
* **for scale**: the median time of a whole ``python -c pass`` start, hook included (a
  comparison of whole starts with and without the hook is lost in the noise of a process
  start: it needs the hook removed from the installation, which this script does not do).

Target (issue 29): under 1 ms per start; otherwise the hook would be installed on request only.
"""

from __future__ import annotations

import argparse
import os
import site
import statistics
import subprocess
import sys
import sysconfig
import time

HOOK = "cuda_core_compat.pth"


def installed_hook() -> str:
    path = os.path.join(sysconfig.get_paths()["purelib"], HOOK)
    if not os.path.exists(path):
        sys.exit(f"compat_startup: no {HOOK} in {os.path.dirname(path)}: install cuda_core")
    return path


def in_process(path: str, calls: int) -> float:
    """Seconds per ``site.addpackage`` of the hook (what one start pays for it)."""
    folder, name = os.path.split(path)
    env = os.environ.pop("CUDA_CORE_COMPAT", None)
    try:
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(calls):
                site.addpackage(folder, name, set())
            best = min(best, (time.perf_counter() - start) / calls)
        return best
    finally:
        if env is not None:
            os.environ["CUDA_CORE_COMPAT"] = env


def python_start(starts: int) -> float:
    """Median seconds of a whole ``python -c pass`` (with the hook), for scale."""
    env = {k: v for k, v in os.environ.items() if k != "CUDA_CORE_COMPAT"}
    times = []
    for _ in range(starts):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=50)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    path = installed_hook()
    per_call = in_process(path, args.calls)
    whole = python_start(args.starts)
    print(f"{HOOK} ({path})")
    print(f"  site.addpackage of the hook: {per_call * 1e6:.1f} us per start (best of 5 x "
          f"{args.calls} calls)")
    print(f"  a whole python -c pass: {whole * 1e3:.2f} ms (median of {args.starts} starts)")
    print(f"  target: under 1 ms per start: {'met' if per_call < 1e-3 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
