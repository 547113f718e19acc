# ################################################################################################
# jit_lto.py: link-time optimization of separately compiled CUDA C++ at run time.
#
# Compiles two translation units with NVRTC to LTO IR: a device function (a polynomial) and a
# kernel that calls it through an extern declaration. nvJitLink then links and optimizes them
# together into one cubin (it can inline the function across the two units), and the kernel is
# launched from it.
#
# Run:  python examples/jit_lto.py
# On a machine without a GPU or driver it prints one line saying why, and exits 0.
# ################################################################################################

import sys

import numpy as np

from cuda_core import (CUDAError, Device, LaunchConfig, LegacyPinnedMemoryResource, Linker,
                       LinkerOptions, Program, ProgramOptions, launch)

# Unit 1: the device function, compiled on its own.
POLYNOMIAL = r"""
__device__ int polynomial(int x) {
    return (3 * x + 2) * x - 7;  // 3x^2 + 2x - 7
}
"""

# Unit 2: the kernel; it only declares the function, which the link resolves.
KERNEL = r"""
extern __device__ int polynomial(int x);

extern "C" __global__ void apply_polynomial(const int* in, int* out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = polynomial(in[i]);
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
    arch = "sm_" + dev.arch

    # Relocatable device code lets one unit call into another; link_time_optimization makes
    # NVRTC emit LTO IR (NVVM IR for the linker to optimize) instead of machine code.
    pieces = []
    for name, source in (("polynomial", POLYNOMIAL), ("kernel", KERNEL)):
        options = ProgramOptions(name=name, arch=arch, relocatable_device_code=True,
                                 link_time_optimization=True)
        pieces.append(Program(source, "c++", options).compile("ltoir"))
    print("compiled to LTO IR: " + ", ".join(f"{p.name} ({len(p.code)} bytes)" for p in pieces))

    linker = Linker(*pieces, options=LinkerOptions(name="jit_lto", arch=arch,
                                                   link_time_optimization=True))
    cubin = linker.link("cubin")
    print(f"linked with {Linker.which_backend()} into a {len(cubin.code)}-byte "
          f"{cubin.code_type}")
    kernel = cubin.get_kernel("apply_polynomial")

    n = 4096
    values = np.arange(-n // 2, n // 2, dtype=np.int32)
    pinned = LegacyPinnedMemoryResource().allocate(values.nbytes)
    host = np.from_dlpack(pinned).view(np.int32)
    host[:] = values

    d_in = dev.allocate(values.nbytes, stream=stream)
    d_out = dev.allocate(values.nbytes, stream=stream)
    d_in.copy_from(pinned, stream=stream)
    launch(stream, LaunchConfig(grid=(n + 127) // 128, block=128), kernel, d_in, d_out,
           np.uint32(n))
    d_out.copy_to(pinned, stream=stream)
    stream.sync()

    expected = (3 * values + 2) * values - 7
    print(f"polynomial({values[:3]}) = {host[:3]}")
    ok = np.array_equal(host, expected)
    for buf in (d_in, d_out):
        buf.close(stream)
    linker.close()
    stream.close()
    assert ok, "jit_lto: the linked kernel computed the wrong values"
    return 0


if __name__ == "__main__":
    sys.exit(main())
