# ################################################################################################
# cuda_graphs.py: three kernels captured into a CUDA graph, replayed, and timed against launching
# the same kernels one by one.
#
# A GraphBuilder records what is queued on its stream instead of running it. Here it captures
# three element-wise kernels (add, multiply, subtract) that compute out = (x + y) * x - y
# through two temporary vectors. complete() turns the capture into an executable Graph,
# upload() prepares it on the device, and each Graph.launch() then queues all three kernels with
# one call. Events with timing enabled measure many replays of the graph against the three
# kernels launched one by one, on the same stream, with the same arguments.
#
# Run:  python examples/cuda_graphs.py
# On a machine without a GPU or driver it prints one line saying why, and exits 0.
# ################################################################################################

import sys

import numpy as np

from cuda_core import (CUDAError, Device, EventOptions, LaunchConfig, LegacyPinnedMemoryResource,
                       Program, ProgramOptions, launch)

CODE = r"""
#define FOR_EACH(i, n) \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); \
         i += (size_t)gridDim.x * blockDim.x)

extern "C" __global__ void add(const float* a, const float* b, float* out, size_t n) {
    FOR_EACH(i, n) { out[i] = a[i] + b[i]; }
}

extern "C" __global__ void multiply(const float* a, const float* b, float* out, size_t n) {
    FOR_EACH(i, n) { out[i] = a[i] * b[i]; }
}

extern "C" __global__ void subtract(const float* a, const float* b, float* out, size_t n) {
    FOR_EACH(i, n) { out[i] = a[i] - b[i]; }
}
"""


def main():
    try:
        dev = Device(0)
        dev.set_current()
    except CUDAError as exc:
        print(f"No GPU: {exc}")
        return 0
    stream = dev.create_stream()

    module = Program(CODE, "c++", ProgramOptions(arch="sm_" + dev.arch)).compile("cubin")
    add, multiply, subtract = (module.get_kernel(name)
                               for name in ("add", "multiply", "subtract"))

    # Small vectors: each kernel takes a few microseconds, so the cost of queuing it is a visible
    # share of the time, which is what a graph saves.
    n = 1 << 16
    size = np.uint64(n)  # the size_t parameter takes an 8-byte NumPy scalar
    nbytes = n * np.dtype(np.float32).itemsize
    config = LaunchConfig(grid=min((n + 255) // 256, 4 * dev.properties.multiprocessor_count),
                          block=256)

    rng = np.random.default_rng(3)
    pinned = LegacyPinnedMemoryResource()
    h_x, h_y, h_out = (pinned.allocate(nbytes) for _ in range(3))
    x_host = np.from_dlpack(h_x).view(np.float32)
    y_host = np.from_dlpack(h_y).view(np.float32)
    out_host = np.from_dlpack(h_out).view(np.float32)
    x_host[:] = rng.random(n, dtype=np.float32)
    y_host[:] = rng.random(n, dtype=np.float32)
    # Three float32 operations, each rounded, exactly as the three kernels do them (each kernel
    # does one operation, so nothing can be fused into an FMA): the results must be equal.
    expected = (x_host + y_host) * x_host - y_host

    x, y, t, u, out = (dev.allocate(nbytes, stream=stream) for _ in range(5))
    x.copy_from(h_x, stream=stream)
    y.copy_from(h_y, stream=stream)

    def fetch_out():
        out.copy_to(h_out, stream=stream)
        stream.sync()
        return out_host.copy()

    # Capture. The builder captures on a stream of its own; nothing runs yet. out is filled
    # with NaN first (on `stream`), so that a kernel that ran during the capture would show.
    out.fill(0xFF, stream=stream)
    builder = dev.create_graph_builder().begin_building()
    launch(builder, config, add, x, y, t, size)            # t = x + y
    launch(builder, config, multiply, t, x, u, size)       # u = t * x
    launch(builder, config, subtract, u, y, out, size)     # out = u - y
    builder.end_building()
    graph = builder.complete()
    untouched = bool(np.isnan(fetch_out()).all())
    print(f"captured 3 kernels into a graph; out untouched by the capture: {untouched}")

    graph.upload(stream)  # optional: prepares the graph now rather than at its first launch
    replays = 5
    for _ in range(replays):
        graph.launch(stream)
    replay_ok = np.array_equal(fetch_out(), expected)
    print(f"graph launched {replays} times: out[:3] = {out_host[:3]} "
          f"({'ok' if replay_ok else 'WRONG'})")

    # Timing: the GPU time between two events around `iters` repetitions of the same work. A
    # graph launch queues the three kernels with one call, so the GPU waits less for the host.
    timing = EventOptions(timing_enabled=True)
    iters = 500

    def per_iteration_ms(queue_once):
        queue_once()  # warm up (the first launch of a kernel also reads its parameter layout)
        start = stream.record(options=timing)
        for _ in range(iters):
            queue_once()
        end = stream.record(options=timing)
        end.sync()
        return (end - start) / iters

    def one_by_one():
        launch(stream, config, add, x, y, t, size)
        launch(stream, config, multiply, t, x, u, size)
        launch(stream, config, subtract, u, y, out, size)

    out.fill(0xFF, stream=stream)
    graph_ms = per_iteration_ms(lambda: graph.launch(stream))
    graph_ok = np.array_equal(fetch_out(), expected)
    out.fill(0xFF, stream=stream)
    separate_ms = per_iteration_ms(one_by_one)
    separate_ok = np.array_equal(fetch_out(), expected)
    print(f"per iteration, {iters} iterations: graph {graph_ms * 1e3:8.2f} us, "
          f"3 launches {separate_ms * 1e3:8.2f} us (graph / launches = "
          f"{graph_ms / separate_ms:.2f})")

    graph.close()
    builder.close()
    for buf in (x, y, t, u, out):
        buf.close(stream)
    stream.close()
    for buf in (h_x, h_y, h_out):
        buf.close()
    ok = untouched and replay_ok and graph_ok and separate_ok and graph_ms > 0 and separate_ms > 0
    assert ok, "cuda_graphs: a wrong result, or a kernel ran during the capture"
    return 0


if __name__ == "__main__":
    sys.exit(main())
