"""What the ablation scripts share (view_ablation.py, cai_ablation.py): device 0 current with a
stream of ours, and the timing loop: each statement compiled into a loop of its own, rounds
alternated with the order rotating, the minimum over rounds of the time per call, with the
collector on and off."""
import gc
import time


def device_stream():
    """``(device, stream, stream address)``: device 0 made current and a new stream on it."""
    import cuda_core

    dev = cuda_core.Device(0)
    dev.set_current()
    stream = dev.create_stream()
    return dev, stream, int(stream.handle)


def loops(stmts, namespace):
    """``{name: run(n)}``: ``run`` executes the statement ``n`` times in ``namespace``."""
    runs = {}
    for name, stmt in stmts.items():
        ns = dict(namespace)
        exec(f"def run(n):\n    for _ in range(n):\n        {stmt}\n", ns)
        runs[name] = ns["run"]
    return runs


def best_times(runs, n, rounds):
    """``(best, best_nogc)``: per name, the least ns per call over ``rounds`` rounds of ``n``
    calls, with the collector on and with it off."""
    best = {k: float("inf") for k in runs}
    best_nogc = dict(best)
    items = list(runs.items())
    for r in range(rounds):
        for k, fn in items[r % len(items):] + items[:r % len(items)]:
            t = time.perf_counter()
            fn(n)
            best[k] = min(best[k], (time.perf_counter() - t) / n * 1e9)
            gc.disable()
            t = time.perf_counter()
            fn(n)
            best_nogc[k] = min(best_nogc[k], (time.perf_counter() - t) / n * 1e9)
            gc.enable()
    return best, best_nogc
