"""cuda-cccl 1.2.1 (cuda.compute) as a client of cuda.core: the same scenarios on NVIDIA's
cuda.core (the control) and on cuda_core in compat mode, compared.

cuda-cccl ships no tests in its wheel, so the scenarios are written here from cuda.compute's
documented API: each runs one algorithm on CuPy arrays with a built-in operator (``OpKind``)
and checks the result against NumPy. cuda.compute reaches cuda.core for its devices, its
compiles (``Program``) and its temporary storage (``Device.allocate``,
``cuda.core._utils.cuda_utils.handle_return``), so each scenario goes through the package
under test. Each scenario runs in a child process of its own (a crash is that scenario's
failure), first on the control, then on ours; a guard in each child checks that ``cuda.core``
is the package it should be. The last line:

    CCCL ours passes X of Y that control passes

Then one call is timed on each side: ``reduce_into`` over 1M int32 (median per call of 7
rounds of 100 calls, each call synchronized).

On the GPU machine, after ``bash tools/gpu/cccl/fetch.sh`` here (carry ``.gpu``):
    bash .gpu/on-gpu.sh python3 tools/gpu/cccl/client.py
"""

import json
import os
import subprocess
import sys

import numpy as np

SITE = "/tmp/cccl_site"


def _reduce(cc, cp):
    d_in = cp.arange(1, 100001, dtype=np.int64)
    d_out = cp.empty(1, dtype=np.int64)
    cc.reduce_into(d_in=d_in, d_out=d_out, op=cc.OpKind.PLUS, num_items=len(d_in),
                   h_init=np.array([5], dtype=np.int64))
    return int(d_out.get()[0]) == 5 + 100000 * 100001 // 2


def _reduce_max(cc, cp):
    h = np.random.default_rng(1).integers(-1000, 1000, 4097).astype(np.int32)
    d_out = cp.empty(1, dtype=np.int32)
    cc.reduce_into(d_in=cp.asarray(h), d_out=d_out, op=cc.OpKind.MAXIMUM, num_items=len(h),
                   h_init=np.array([np.iinfo(np.int32).min], dtype=np.int32))
    return int(d_out.get()[0]) == int(h.max())


def _scans(cc, cp):
    h = np.arange(1, 1001, dtype=np.int32)
    d_in, d_inc, d_exc = cp.asarray(h), cp.empty(1000, np.int32), cp.empty(1000, np.int32)
    init = np.array([0], dtype=np.int32)
    cc.inclusive_scan(d_in=d_in, d_out=d_inc, op=cc.OpKind.PLUS, init_value=init, num_items=1000)
    cc.exclusive_scan(d_in=d_in, d_out=d_exc, op=cc.OpKind.PLUS, init_value=init, num_items=1000)
    inc = np.cumsum(h, dtype=np.int32)
    return (np.array_equal(d_inc.get(), inc)
            and np.array_equal(d_exc.get(), np.concatenate(([0], inc[:-1]))))


def _radix_sort(cc, cp):
    rng = np.random.default_rng(2)
    keys = rng.integers(0, 1 << 30, 10000).astype(np.uint32)
    vals = np.arange(10000, dtype=np.int32)
    d_k, d_v = cp.asarray(keys), cp.asarray(vals)
    o_k, o_v = cp.empty_like(d_k), cp.empty_like(d_v)
    cc.radix_sort(d_in_keys=d_k, d_out_keys=o_k, d_in_values=d_v, d_out_values=o_v,
                  num_items=10000, order=cc.SortOrder.ASCENDING)
    order = np.argsort(keys, kind="stable")
    return np.array_equal(o_k.get(), keys[order]) and np.array_equal(o_v.get(), vals[order])


def _radix_sort_descending(cc, cp):
    keys = np.random.default_rng(3).standard_normal(5000).astype(np.float32)
    d_k, o_k = cp.asarray(keys), cp.empty(5000, np.float32)
    cc.radix_sort(d_in_keys=d_k, d_out_keys=o_k, num_items=5000,
                  order=cc.SortOrder.DESCENDING)
    return np.array_equal(o_k.get(), np.sort(keys)[::-1])


def _merge_sort(cc, cp):
    keys = np.random.default_rng(4).integers(-500, 500, 3000).astype(np.int64)
    d_k, o_k = cp.asarray(keys), cp.empty(3000, np.int64)
    cc.merge_sort(d_in_keys=d_k, d_in_values=None, d_out_keys=o_k, d_out_values=None,
                  op=cc.OpKind.LESS, num_items=3000)
    return np.array_equal(o_k.get(), np.sort(keys))


def _transforms(cc, cp):
    a = np.arange(2048, dtype=np.float32)
    b = np.full(2048, 2.0, dtype=np.float32)
    d_a, d_b = cp.asarray(a), cp.asarray(b)
    d_neg, d_mul = cp.empty_like(d_a), cp.empty_like(d_a)
    cc.unary_transform(d_in=d_a, d_out=d_neg, op=cc.OpKind.NEGATE, num_items=2048)
    cc.binary_transform(d_in1=d_a, d_in2=d_b, d_out=d_mul, op=cc.OpKind.MULTIPLIES,
                        num_items=2048)
    return np.array_equal(d_neg.get(), -a) and np.array_equal(d_mul.get(), a * b)


def _counting_iterator(cc, cp):
    d_out = cp.empty(1, dtype=np.int64)
    it = cc.CountingIterator(np.int64(10))
    cc.reduce_into(d_in=it, d_out=d_out, op=cc.OpKind.PLUS, num_items=100,
                   h_init=np.array([0], dtype=np.int64))
    return int(d_out.get()[0]) == sum(range(10, 110))


def _on_a_stream(cc, cp):
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        d_in = cp.ones(1 << 16, dtype=np.int32)
        d_out = cp.empty(1, dtype=np.int32)
    cc.reduce_into(d_in=d_in, d_out=d_out, op=cc.OpKind.PLUS, num_items=1 << 16,
                   h_init=np.array([0], dtype=np.int32), stream=stream)
    stream.synchronize()
    return int(d_out.get()[0]) == 1 << 16


def _preconfigured_reducer(cc, cp):
    d_in = cp.arange(1000, dtype=np.int32)
    d_out = cp.empty(1, dtype=np.int32)
    init = np.array([0], dtype=np.int32)
    reducer = cc.make_reduce_into(d_in=d_in, d_out=d_out, op=cc.OpKind.PLUS, h_init=init)
    call = dict(d_in=d_in, d_out=d_out, num_items=1000, op=cc.OpKind.PLUS, h_init=init)
    size = reducer(temp_storage=None, **call)  # the scratch size it needs
    reducer(temp_storage=cp.empty(size, dtype=np.uint8), **call)
    return int(d_out.get()[0]) == sum(range(1000))


SCENARIOS = {f.__name__[1:]: f for f in (
    _reduce, _reduce_max, _scans, _radix_sort, _radix_sort_descending, _merge_sort,
    _transforms, _counting_iterator, _on_a_stream, _preconfigured_reducer)}


def _guard(side):
    """cuda.core is NVIDIA's package on the control side, cuda_core's compat module on ours."""
    import cuda.core

    ours = getattr(cuda.core, "__cuda_core_cy_version__", None) is not None
    if ours != (side == "ours"):
        raise SystemExit(f"guard: on the {side} side cuda.core is "
                         f"{'cuda_core' if ours else 'NVIDIA cuda.core'}")


def _child(side, name):
    _guard(side)
    import cupy as cp

    import cuda.compute as cc

    if name == "time":
        import time

        d_in = cp.arange(1 << 20, dtype=np.int32)
        d_out = cp.empty(1, dtype=np.int32)
        call = dict(d_in=d_in, d_out=d_out, op=cc.OpKind.PLUS, num_items=1 << 20,
                    h_init=np.array([0], dtype=np.int32))
        for _ in range(10):
            cc.reduce_into(**call)
        cp.cuda.Device().synchronize()
        rounds = []
        for _ in range(7):
            t0 = time.perf_counter()
            for _ in range(100):
                cc.reduce_into(**call)
                cp.cuda.Device().synchronize()
            rounds.append((time.perf_counter() - t0) / 100 * 1e6)
        print("RESULT", json.dumps(sorted(rounds)[3]))
        return
    print("RESULT", json.dumps(bool(SCENARIOS[name](cc, cp))))


def _run(side, name):
    env = dict(os.environ, CUDA_CORE_COMPAT="1" if side == "ours" else "0",
               PYTHONPATH=os.pathsep.join(filter(None, [SITE, os.environ.get("PYTHONPATH")])))
    try:
        p = subprocess.run([sys.executable, __file__, "--child", side, name], env=env,
                           capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "hung (300 s)"
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    if p.returncode < 0:
        return f"killed by signal {-p.returncode}"
    tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
    return f"rc={p.returncode}: {tail[:300]}"


def main():
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], sys.argv[3])
        return
    wheels = [w for w in os.listdir(".gpu/cccl") if w.endswith(".whl")]
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                    "--target", SITE] + [os.path.join(".gpu/cccl", w) for w in wheels],
                   check=True)
    results = {side: {name: _run(side, name) for name in SCENARIOS}
               for side in ("control", "ours")}
    for name in SCENARIOS:
        print(f"{name}: control {results['control'][name]}; ours {results['ours'][name]}")
    passed = [n for n in SCENARIOS if results["control"][n] is True]
    both = [n for n in passed if results["ours"][n] is True]
    times = {side: _run(side, "time") for side in ("control", "ours")}
    print(f"reduce_into over 1M int32, median per synchronized call: control {times['control']} "
          f"us, ours {times['ours']} us")
    print(f"CCCL ours passes {len(both)} of {len(passed)} that control passes")


if __name__ == "__main__":
    main()
