# ################################################################################################
# graph_update.py: change the arguments of an executable graph with Graph.update().
#
# A graph of two kernels computes y1 = 2 * x + 1 (scale, then shift). A second capture of the
# same two kernels, in the same order, with other arguments (another output buffer, other
# scalars) has the same topology, so Graph.update() copies its arguments into the executable
# graph in place, without instantiating it again: the same Graph object now computes
# y2 = 3 * x - 4 and no longer touches y1. A capture of another shape (one kernel instead of
# two) cannot update it: the driver refuses with a CUDAError, and the graph stays as it was.
#
# Run:  python examples/graph_update.py
# On a machine without a GPU or driver it prints one line saying why, and exits 0.
# ################################################################################################

import sys

import numpy as np

from cuda_core import (CUDAError, Device, LaunchConfig, LegacyPinnedMemoryResource, Program,
                       ProgramOptions, launch)

CODE = r"""
extern "C" __global__ void scale(const float* x, float* y, float a, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        y[i] = a * x[i];
    }
}

extern "C" __global__ void shift(float* y, float b, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        y[i] += b;
    }
}
"""


def capture(dev, config, scale, shift, x, y, a, b, n):
    """A finished capture of y = a * x + b, as two kernels."""
    builder = dev.create_graph_builder().begin_building()
    launch(builder, config, scale, x, y, np.float32(a), np.uint64(n))
    launch(builder, config, shift, y, np.float32(b), np.uint64(n))
    return builder.end_building()


def main():
    try:
        dev = Device(0)
        dev.set_current()
    except CUDAError as exc:
        print(f"No GPU: {exc}")
        return 0
    stream = dev.create_stream()

    module = Program(CODE, "c++", ProgramOptions(arch="sm_" + dev.arch)).compile("cubin")
    scale, shift = module.get_kernel("scale"), module.get_kernel("shift")

    n = 1 << 16
    nbytes = n * np.dtype(np.float32).itemsize
    config = LaunchConfig(grid=min((n + 255) // 256, 4 * dev.properties.multiprocessor_count),
                          block=256)

    # Small integers: every product and sum below is exact in float32, so the GPU's results
    # must equal NumPy's exactly.
    pinned = LegacyPinnedMemoryResource()
    h_x, h_y = pinned.allocate(nbytes), pinned.allocate(nbytes)
    x_host = np.from_dlpack(h_x).view(np.float32)
    y_host = np.from_dlpack(h_y).view(np.float32)
    x_host[:] = np.arange(n, dtype=np.float32)
    x = dev.allocate(nbytes, stream=stream)
    x.copy_from(h_x, stream=stream)
    y1, y2 = dev.allocate(nbytes, stream=stream), dev.allocate(nbytes, stream=stream)

    def fetch(buf):
        buf.copy_to(h_y, stream=stream)
        stream.sync()
        return y_host.copy()

    def run_graph(graph):
        """Fill both outputs with NaN, launch the graph once, return (y1, y2)."""
        y1.fill(0xFF, stream=stream)
        y2.fill(0xFF, stream=stream)
        graph.launch(stream)
        return fetch(y1), fetch(y2)

    first = capture(dev, config, scale, shift, x, y1, 2.0, 1.0, n)
    graph = first.complete()
    r1, r2 = run_graph(graph)
    ok_first = np.array_equal(r1, 2 * x_host + 1) and np.isnan(r2).all()

    # Same kernels, same order, other arguments: the same topology.
    second = capture(dev, config, scale, shift, x, y2, 3.0, -4.0, n)
    graph.update(second)
    r1, r2 = run_graph(graph)
    ok_updated = np.array_equal(r2, 3 * x_host - 4) and np.isnan(r1).all()
    print(f"graph updated in place: y2[:4] = {r2[:4]}, y1 no longer written: "
          f"{bool(np.isnan(r1).all())} ({'ok' if ok_first and ok_updated else 'WRONG'})")

    # Another shape cannot update the graph: the driver says why, and the graph is unchanged.
    other = dev.create_graph_builder().begin_building()
    launch(other, config, scale, x, y1, np.float32(5.0), np.uint64(n))
    other.end_building()
    try:
        graph.update(other)
        refused = False
    except CUDAError as exc:
        refused = True
        print(f"update with one kernel instead of two refused: {str(exc).splitlines()[0]}")
    r1, r2 = run_graph(graph)
    ok_kept = refused and np.array_equal(r2, 3 * x_host - 4) and np.isnan(r1).all()

    graph.close()
    for builder in (first, second, other):
        builder.close()
    for buf in (x, y1, y2):
        buf.close(stream)
    stream.close()
    for buf in (h_x, h_y):
        buf.close()
    assert ok_first and ok_updated and ok_kept, \
        "graph_update: a wrong result, or an update of another topology was accepted"
    return 0


if __name__ == "__main__":
    sys.exit(main())
