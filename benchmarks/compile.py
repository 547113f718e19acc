"""Compile path: the host cost of the calls around a compilation, and a cold compile against a
program-cache hit, for cuda_core (ours) and NVIDIA's cuda.core 1.2 in one process.

    python benchmarks/compile.py [harness options] [--cold N] [--warm N] [--no-cold]

Part 1, host cost (no GPU needed, nothing is loaded), through the harness (``_harness.py``):
rounds alternate between the two libraries, medians per call. Target: each case at most
0.5x cuda.core's.

* ``InMemoryProgramCache hit`` / ``FileStreamProgramCache hit``:
  ``Program(src, "c++", opts).compile("cubin", cache=cache)`` answered by a warm cache: a new
  Program, the key, the look-up, and the ObjectCode built from the cached bytes. ``opts`` is
  made once (``ProgramOptions(arch=...)``).
* ``make_program_cache_key``: ``make_program_cache_key(code=src, code_type="c++",
  options=opts, target_type="cubin")``, 32 bytes on both sides.
* ``Program(src, "c++", opts)``: construction only (neither library makes the compiler's
  program before it compiles).
* ``ProgramOptions(arch=...)``: construction with one field.
* ``cache.get(key)`` (memory / file), without a target: the look-up alone, bytes on both
  sides.

Part 2, the compiler's own cost (``--cold`` compiles and ``--warm`` hits per library, rounds
alternated), in milliseconds: a cold NVRTC compile (a distinct source each time, so that no
cache can answer) and the warm hits, each followed by ``get_kernel`` where there is a GPU.

The source is a ~50-line 1D stencil kernel (templates, inlining, no headers). The report exits
0 once printed; without cuda.core the host-cost rows show ``n/a``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _harness import Case, Contender, Target, add_arguments, finish, run_cases  # noqa: E402

OURS = "cuda_core"
NVIDIA = "cuda.core"
RATIO = 0.5
DEFAULT_ARCH = "sm_90"

# A ~50-line kernel: a 1D 5-point stencil with a few device helpers, so that NVRTC has some
# real work (templates, inlining) but no headers.
KERNEL = r"""
template <typename T>
__device__ __forceinline__ T clamp_value(T v, T lo, T hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

template <typename T>
__device__ __forceinline__ T load_or(const T* p, long long i, long long n, T fallback) {
    return (i >= 0 && i < n) ? p[i] : fallback;
}

struct StencilCoeffs {
    float c0, c1, c2;
};

__device__ float weighted(const float* in, long long i, long long n, StencilCoeffs k) {
    float centre = load_or(in, i, n, 0.0f);
    float left1 = load_or(in, i - 1, n, centre);
    float right1 = load_or(in, i + 1, n, centre);
    float left2 = load_or(in, i - 2, n, left1);
    float right2 = load_or(in, i + 2, n, right1);
    return k.c0 * centre + k.c1 * (left1 + right1) + k.c2 * (left2 + right2);
}

extern "C" __global__ void stencil5(const float* __restrict__ in, float* __restrict__ out,
                                    long long n, StencilCoeffs k, float lo, float hi,
                                    int iterations) {
    __shared__ float tile[256 + 4];
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    int t = threadIdx.x + 2;
    tile[t] = load_or(in, i, n, 0.0f);
    if (threadIdx.x < 2) {
        tile[t - 2] = load_or(in, i - 2, n, 0.0f);
        tile[t + blockDim.x] = load_or(in, i + blockDim.x, n, 0.0f);
    }
    __syncthreads();
    float acc = 0.0f;
    for (int it = 0; it < iterations; ++it) {
        float v = k.c0 * tile[t] + k.c1 * (tile[t - 1] + tile[t + 1])
                + k.c2 * (tile[t - 2] + tile[t + 2]);
        acc += clamp_value(v, lo, hi) * (1.0f / (it + 1));
    }
    if (i < n) {
        out[i] = acc + 0.0f * weighted(in, i, n, k);
    }
}
"""
KERNEL_NAME = "stencil5"


# -- the two libraries --------------------------------------------------------------------------

class Side:
    """One library's Program, ProgramOptions and cache module."""

    def __init__(self, name: str):
        self.name = name
        if name == OURS:
            import cuda_core as core
            import cuda_core.utils as utils
        else:
            import cuda.core as core
            import cuda.core.utils as utils
        self.core = core
        self.utils = utils
        self.Program = core.Program
        self.ProgramOptions = core.ProgramOptions

    def cache(self, kind: str, tmp_root: str):
        """A new cache of ``kind`` ("memory" or "file") and its cleanup."""
        if kind == "memory":
            cache = self.utils.InMemoryProgramCache()
            return cache, cache.close
        path = tempfile.mkdtemp(prefix=f"compile-bench-{self.name}-", dir=tmp_root)
        cache = self.utils.FileStreamProgramCache(path)

        def cleanup():
            cache.close()
            shutil.rmtree(path, ignore_errors=True)
        return cache, cleanup


def _side(name: str) -> Side:
    return Side(name)


# -- part 1: host cost through the harness -----------------------------------------------------

def _hit_setup(name: str, kind: str, arch: str, tmp_root: str):
    def setup():
        side = _side(name)
        opts = side.ProgramOptions(arch=arch)
        cache, cleanup = side.cache(kind, tmp_root)
        # The miss that fills the cache; both libraries return an ObjectCode on the hit.
        first = side.Program(KERNEL, "c++", opts).compile("cubin", cache=cache)
        hit = side.Program(KERNEL, "c++", opts).compile("cubin", cache=cache)
        if bytes(hit.code) != bytes(first.code) or hit.code_type != "cubin":
            raise RuntimeError(f"{name}: the hit is not the compiled cubin")
        return {"P": side.Program, "src": KERNEL, "opts": opts, "cache": cache}, cleanup
    return setup


def _get_setup(name: str, kind: str, arch: str, tmp_root: str):
    def setup():
        side = _side(name)
        opts = side.ProgramOptions(arch=arch)
        cache, cleanup = side.cache(kind, tmp_root)
        obj = side.Program(KERNEL, "c++", opts).compile("cubin")
        key = side.utils.make_program_cache_key(code=KERNEL, code_type="c++", options=opts,
                                                target_type="cubin")
        cache[key] = obj
        got = cache.get(key)
        if type(got) is not bytes or got != bytes(obj.code):
            raise RuntimeError(f"{name}: cache.get() returned {type(got).__name__}, not the "
                               f"cubin's bytes")
        return {"cache": cache, "key": key}, cleanup
    return setup


def _key_setup(name: str, arch: str):
    def setup():
        side = _side(name)
        opts = side.ProgramOptions(arch=arch)
        key = side.utils.make_program_cache_key
        k = key(code=KERNEL, code_type="c++", options=opts, target_type="cubin")
        if type(k) is not bytes or len(k) != 32:
            raise RuntimeError(f"{name}: the key is not 32 bytes")
        return {"K": key, "src": KERNEL, "opts": opts}
    return setup


def _program_setup(name: str, arch: str):
    def setup():
        side = _side(name)
        return {"P": side.Program, "src": KERNEL, "opts": side.ProgramOptions(arch=arch)}
    return setup


def _options_setup(name: str, arch: str):
    def setup():
        return {"PO": _side(name).ProgramOptions, "arch": arch}
    return setup


HOST_CASES = ("InMemoryProgramCache hit", "FileStreamProgramCache hit", "make_program_cache_key",
              'Program(src, "c++", opts)', "ProgramOptions(arch=...)")


def host_cases(arch: str, tmp_root: str) -> list[Case]:
    def pair(make, stmt):
        return [Contender(OURS, setup=make(OURS), stmt=stmt),
                Contender(NVIDIA, setup=make(NVIDIA), stmt=stmt, requires=("cuda.core",))]

    hit = 'P(src, "c++", opts).compile("cubin", cache=cache)'
    return [
        Case(HOST_CASES[0], pair(lambda n: _hit_setup(n, "memory", arch, tmp_root), hit),
             note="a new Program, the key, the look-up, an ObjectCode from the cached bytes"),
        Case(HOST_CASES[1], pair(lambda n: _hit_setup(n, "file", arch, tmp_root), hit),
             note="as above, the entry read from its file (and its time refreshed)"),
        Case(HOST_CASES[2], pair(lambda n: _key_setup(n, arch),
                                 'K(code=src, code_type="c++", options=opts, '
                                 'target_type="cubin")'),
             note=f"a {len(KERNEL)}-character source, ProgramOptions(arch=...)"),
        Case(HOST_CASES[3], pair(lambda n: _program_setup(n, arch), 'P(src, "c++", opts)'),
             note="construction only: no compiler handle yet on either side"),
        Case(HOST_CASES[4], pair(lambda n: _options_setup(n, arch), "PO(arch=arch)")),
        Case("InMemoryProgramCache.get(key)",
             pair(lambda n: _get_setup(n, "memory", arch, tmp_root), "cache.get(key)"),
             note="the look-up alone; bytes on both sides; no target"),
        Case("FileStreamProgramCache.get(key)",
             pair(lambda n: _get_setup(n, "file", arch, tmp_root), "cache.get(key)"),
             note="the look-up alone; bytes on both sides; no target"),
    ]


# -- part 2: the compiler's cost (milliseconds) --------------------------------------------------

def gpu_arch() -> str | None:
    """``"sm_XY"`` of device 0 with its context made current, or None without a GPU."""
    from cuda_core import CUDAError, Device

    try:
        dev = Device(0)
        dev.set_current()
    except (CUDAError, RuntimeError):
        return None
    return "sm_" + dev.arch


def compile_costs(sides: list[Side], arch: str, load: bool, cold_runs: int, warm_runs: int,
                  tmp_root: str) -> dict[str, dict[str, list[float]]]:
    """Per row, per library: the times in ms. Each round times every library once, the order
    rotating."""
    if load:
        for side in sides:
            if side.name == NVIDIA:
                side.core.Device(0).set_current()
    counter = iter(range(10**9))
    rows: dict[str, dict[str, list[float]]] = {}

    def timed(fn) -> float:
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3

    def cold(side):
        def run():
            # A distinct comment each time, so that no cache can answer.
            src = f"// cold run {next(counter)} of {side.name}\n" + KERNEL
            obj = side.Program(src, "c++", side.ProgramOptions(arch=arch)).compile("cubin")
            if load:
                obj.get_kernel(KERNEL_NAME)
        return run

    def warm(side, cache):
        def run():
            obj = side.Program(KERNEL, "c++", side.ProgramOptions(arch=arch)).compile(
                "cubin", cache=cache)
            if load:
                obj.get_kernel(KERNEL_NAME)
        return run

    suffix = " + load" if load else " (no load)"
    plans = [(f"cold compile{suffix}", cold_runs, {s.name: cold(s) for s in sides})]
    cleanups = []
    for kind, label in (("memory", "warm hit, memory"), ("file", "warm hit, file")):
        fns = {}
        for side in sides:
            cache, cleanup = side.cache(kind, tmp_root)
            cleanups.append(cleanup)
            fns[side.name] = warm(side, cache)
            fns[side.name]()  # the miss that fills the cache
        plans.append((label + suffix, warm_runs, fns))
    try:
        for label, runs, fns in plans:
            names = list(fns)
            for fn in fns.values():
                fn()  # the first compile loads NVRTC; not counted
            times = {n: [] for n in names}
            for r in range(runs):
                k = r % len(names)
                for n in names[k:] + names[:k]:
                    times[n].append(timed(fns[n]))
            rows[label] = times
    finally:
        for cleanup in cleanups:
            cleanup()
    return rows


def print_compile_costs(rows: dict[str, dict[str, list[float]]]) -> None:
    title = "The compiler's cost (ms, medians; rounds alternated)"
    print(f"\n{title}\n{'=' * len(title)}")
    header = f"{'':<32}{OURS:>12}{NVIDIA:>12}{'ours / cuda.core':>20}"
    print(header)
    print("-" * len(header))
    for label, times in rows.items():
        ours = statistics.median(times[OURS])
        theirs = statistics.median(times[NVIDIA]) if NVIDIA in times else None
        ratio = f"{ours / theirs:.2f}x" if theirs else "-"
        fb = f"{theirs:.3f}" if theirs is not None else "n/a"
        print(f"{label:<32}{ours:>12.3f}{fb:>12}{ratio:>20}")
    print()


# -- main ---------------------------------------------------------------------------------------

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="compile.py",
        description="Host cost of the compile path (program-cache hits, make_program_cache_key, "
                    "Program and ProgramOptions construction), cuda_core against NVIDIA's "
                    f"cuda.core; target: each at most {RATIO:g}x cuda.core's. Then a cold "
                    "compile against warm hits, in milliseconds. Runs without a GPU.")
    add_arguments(parser)
    parser.add_argument("--cold", type=int, default=10, help="cold compiles per library")
    parser.add_argument("--warm", type=int, default=200,
                        help="warm hits per cache and library in part 2")
    parser.add_argument("--no-cold", action="store_true",
                        help="only part 1 (the host cost)")
    args = parser.parse_args(argv)

    try:
        import cuda_core  # noqa: F401
    except ImportError as exc:
        print(f"compile.py: cannot import cuda_core: {exc}", file=sys.stderr)
        return 1
    arch = gpu_arch()
    load = arch is not None
    if arch is None:
        arch = DEFAULT_ARCH
    from importlib import metadata

    meta = {"arch": arch + ("" if load else " (no GPU: nothing is loaded)")}
    for dist in ("cuda-core-cy", "cuda-core", "cuda-bindings", "nvidia-cuda-nvrtc"):
        try:
            meta[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            meta[dist] = "not installed"

    tmp_root = tempfile.mkdtemp(prefix="compile-bench-")
    try:
        report = run_cases(host_cases(arch, tmp_root), args,
                           title="Compile path: host cost per call",
                           subject=OURS, baseline=NVIDIA,
                           target=f"each at most {RATIO:g}x cuda.core's",
                           meta=meta,
                           targets=[Target(OURS, NVIDIA, RATIO, cases=HOST_CASES)])
        finish(report, args)
        if not args.no_cold:
            sides = [_side(OURS)]
            try:
                sides.append(_side(NVIDIA))
            except ImportError as exc:
                print(f"cuda.core: n/a ({exc})")
            print_compile_costs(compile_costs(sides, arch, load, args.cold, args.warm,
                                              tmp_root))
    finally:
        shutil.rmtree(tmp_root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
