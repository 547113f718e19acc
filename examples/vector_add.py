# ################################################################################################
# vector_add.py: add two vectors on the GPU.
#
# Compiles a CUDA C++ kernel with NVRTC, stages NumPy data through pinned (page-locked) host
# memory into device Buffers, launches the kernel on a stream, copies the sum back and checks it.
#
# Run:  python examples/vector_add.py
# On a machine without a GPU or driver it prints one line saying why, and exits 0.
# ################################################################################################

import sys

import numpy as np

from cuda_core import (CUDAError, Device, LaunchConfig, LegacyPinnedMemoryResource, Program,
                       ProgramOptions, launch)

CODE = r"""
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
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

    program = Program(CODE, "c++", ProgramOptions(arch="sm_" + dev.arch))
    kernel = program.compile("cubin").get_kernel("vector_add")

    n = 1 << 20
    nbytes = n * np.dtype(np.float32).itemsize
    rng = np.random.default_rng(42)
    a = rng.random(n, dtype=np.float32)
    b = rng.random(n, dtype=np.float32)

    # Pinned host memory: the copies to and from it are true asynchronous DMA transfers. Its
    # DLPack export is kDLCUDAHost, which NumPy reads and writes in place (an int8 view of the
    # bytes, reinterpreted here as float32).
    pinned = LegacyPinnedMemoryResource()
    h_a, h_b, h_c = (pinned.allocate(nbytes) for _ in range(3))
    np.from_dlpack(h_a).view(np.float32)[:] = a
    np.from_dlpack(h_b).view(np.float32)[:] = b

    d_a, d_b, d_c = (dev.allocate(nbytes, stream=stream) for _ in range(3))
    d_a.copy_from(h_a, stream=stream)
    d_b.copy_from(h_b, stream=stream)

    block = 256
    grid = (n + block - 1) // block
    # Buffers pass as device pointers; the size_t parameter takes a NumPy scalar of its width.
    launch(stream, LaunchConfig(grid=grid, block=block), kernel, d_a, d_b, d_c, np.uint64(n))

    d_c.copy_to(h_c, stream=stream)
    stream.sync()  # the copy into h_c is asynchronous: wait before reading it on the host
    c = np.from_dlpack(h_c).view(np.float32)
    print(f"vector_add on {dev.name} (sm_{dev.arch}): {n} elements, c[:4] = {c[:4]}")

    ok = np.array_equal(c, a + b)  # one IEEE addition per element on either side: exact
    for buf in (d_a, d_b, d_c):
        buf.close(stream)
    stream.close()
    assert ok, "vector_add: the GPU sum differs from NumPy's"
    return 0


if __name__ == "__main__":
    sys.exit(main())
