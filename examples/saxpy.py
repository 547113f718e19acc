# ################################################################################################
# saxpy.py: out = a * x + y, one templated kernel instantiated for float and double.
#
# Compiles a C++ template with NVRTC, asking for the instantiations saxpy<float> and
# saxpy<double> through name expressions, and looks each one up by that name. The scalar a is
# passed as a NumPy scalar of the kernel's exact width (np.float32 / np.float64). The arrays are
# CuPy arrays where CuPy is installed (any object with __cuda_array_interface__ passes as its
# device pointer), otherwise device Buffers.
#
# Run:  python examples/saxpy.py
# On a machine without a GPU or driver it prints one line saying why, and exits 0.
# ################################################################################################

import sys

import numpy as np

from cuda_core import (Buffer, CUDAError, Device, LaunchConfig, Program, ProgramOptions,
                       launch)

try:
    import cupy as cp
except ImportError:
    cp = None

CODE = r"""
template <typename T>
__global__ void saxpy(const T a, const T* x, const T* y, T* out, size_t n) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = a * x[i] + y[i];
    }
}
"""


def run_with_cupy(stream, config, kernel, a, x, y):
    d_x, d_y = cp.asarray(x), cp.asarray(y)
    d_out = cp.empty_like(d_x)
    # CuPy filled d_x and d_y on its own stream; our stream must not start before that.
    cp.cuda.get_current_stream().synchronize()
    launch(stream, config, kernel, a, d_x, d_y, d_out, np.uint64(x.size))
    stream.sync()
    return cp.asnumpy(d_out)


def run_with_buffers(dev, stream, config, kernel, a, x, y):
    def host_view(arr):  # a Buffer over the array's own host memory, kept alive by the Buffer
        return Buffer.from_handle(arr.ctypes.data, arr.nbytes, owner=arr)

    out = np.empty_like(x)
    d_x, d_y, d_out = (dev.allocate(x.nbytes, stream=stream) for _ in range(3))
    d_x.copy_from(host_view(x), stream=stream)
    d_y.copy_from(host_view(y), stream=stream)
    launch(stream, config, kernel, a, d_x, d_y, d_out, np.uint64(x.size))
    d_out.copy_to(host_view(out), stream=stream)
    stream.sync()
    for buf in (d_x, d_y, d_out):
        buf.close(stream)
    return out


def main():
    try:
        dev = Device(0)
        dev.set_current()
    except CUDAError as exc:
        print(f"No GPU: {exc}")
        return 0
    stream = dev.create_stream()

    names = {np.float32: "saxpy<float>", np.float64: "saxpy<double>"}
    program = Program(CODE, "c++", ProgramOptions(arch="sm_" + dev.arch))
    module = program.compile("cubin", name_expressions=tuple(names.values()))

    n = 1 << 20
    block = 256
    grid = min((n + block - 1) // block, 8 * dev.properties.multiprocessor_count)
    config = LaunchConfig(grid=grid, block=block)
    rng = np.random.default_rng(1)
    arrays = "CuPy arrays" if cp is not None else "Buffers"

    ok = True
    for dtype, name in names.items():
        kernel = module.get_kernel(name)  # the name expression, not the mangled symbol
        a = dtype(2.5)
        x = rng.random(n).astype(dtype)
        y = rng.random(n).astype(dtype)
        if cp is not None:
            out = run_with_cupy(stream, config, kernel, a, x, y)
        else:
            out = run_with_buffers(dev, stream, config, kernel, a, x, y)
        # The GPU may fuse a * x + y into one FMA, so compare with a tolerance of the type.
        close = np.allclose(out, a * x + y, rtol=4 * np.finfo(dtype).eps, atol=0)
        print(f"{name} with {arrays}: out[:3] = {out[:3]} ({'ok' if close else 'WRONG'})")
        ok = ok and close

    stream.close()
    assert ok, "saxpy: the GPU result differs from NumPy's"
    return 0


if __name__ == "__main__":
    sys.exit(main())
