"""launch(): argument round trips, layouts, errors, threads, memory, and the fast path."""

import ctypes
import gc
import json
import os
import statistics
import struct
import sys
import threading

import numpy as np
import pytest

from helpers import cu_ctx_create, cuda_include_dir, run_python
from helpers.memory import device_bytes_of_this_process
from cuda_core import (CUDAError, CUDALaunchError, Device, LaunchConfig, LEGACY_DEFAULT_STREAM,
                       PER_THREAD_DEFAULT_STREAM, Program, ProgramOptions, Stream, launch)
from cuda_core._launcher import _launch_handle


# -- CPU ---------------------------------------------------------------------------------------

def test_config_and_kernel_types_are_checked_first():
    with pytest.raises(TypeError, match="config must be a LaunchConfig, not dict"):
        launch(LEGACY_DEFAULT_STREAM, {"grid": 1}, None)
    with pytest.raises(TypeError, match="kernel must be a Kernel, not str"):
        launch(LEGACY_DEFAULT_STREAM, LaunchConfig(grid=1, block=1), "kernel")


# -- GPU helpers -------------------------------------------------------------------------------

from cuda.bindings import driver  # noqa: E402


def _check(result):
    err = result[0]
    assert err == driver.CUresult.CUDA_SUCCESS, err
    return result[1] if len(result) == 2 else result[1:]


class DeviceBytes:
    """Raw device memory through cuda.bindings, so these tests do not depend on Buffer."""

    def __init__(self, size):
        self.size = size
        self.ptr = int(_check(driver.cuMemAlloc(size)))
        _check(driver.cuMemsetD8(self.ptr, 0xAB, size) + (None,))
        # cuMemsetD8 on device memory returns before it is done, ordered on the legacy stream,
        # which a non-blocking stream does not wait for: without this, a kernel's write could
        # land first and the fill over it (seen once: a round trip read back 0xab, on two
        # H200s shared by two test suites).
        _check(driver.cuCtxSynchronize() + (None,))

    def read(self):
        out = np.empty(self.size, dtype=np.uint8)
        _check(driver.cuMemcpyDtoH(out.ctypes.data, self.ptr, self.size) + (None,))
        return out.tobytes()

    def free(self):
        driver.cuMemFree(self.ptr)


def compile_kernels(dev, source, names=(), std="c++17"):
    opts = ProgramOptions(arch=f"sm_{dev.arch}", std=std, include_path=cuda_include_dir())
    return Program(source, "c++", options=opts).compile("cubin", name_expressions=names)


ECHO = r"""
#include <cuda_fp16.h>
struct Mixed { char tag; double value; short n; };
struct Pair64 { double re, im; };
struct Pair32 { float re, im; };
template <typename T> __global__ void echo(T value, T* out) { *out = value; }
template __global__ void echo<Mixed>(Mixed, Mixed*);
"""

# (value, C type, expected bytes)
ECHO_CASES = [
    (np.bool_(True), "bool", b"\x01"),
    (True, "bool", b"\x01"),
    (np.int8(-7), "signed char", struct.pack("<b", -7)),
    (np.uint8(200), "unsigned char", struct.pack("<B", 200)),
    (np.int16(-12345), "short", struct.pack("<h", -12345)),
    (np.uint16(54321), "unsigned short", struct.pack("<H", 54321)),
    (np.int32(-123456789), "int", struct.pack("<i", -123456789)),
    (np.uint32(4000000001), "unsigned int", struct.pack("<I", 4000000001)),
    (np.int64(-(2**50) - 3), "long long", struct.pack("<q", -(2**50) - 3)),
    (np.uint64(2**64 - 5), "unsigned long long", struct.pack("<Q", 2**64 - 5)),
    (np.float16(-3.5), "__half", struct.pack("<e", -3.5)),
    (np.float32(1.1), "float", struct.pack("<f", np.float32(1.1))),
    (np.float64(2.2), "double", struct.pack("<d", 2.2)),
    (np.complex64(1.5 - 2j), "Pair32", struct.pack("<ff", 1.5, -2)),
    (np.complex128(-1.25 + 8j), "Pair64", struct.pack("<dd", -1.25, 8)),
    (complex(3, -4), "Pair64", struct.pack("<dd", 3, -4)),
    (0xFEDCBA9876543210, "unsigned long long", struct.pack("<Q", 0xFEDCBA9876543210)),
    (-2, "long long", struct.pack("<q", -2)),
    (6.02e23, "double", struct.pack("<d", 6.02e23)),
    (ctypes.c_int8(-1), "signed char", b"\xff"),
    (ctypes.c_uint16(65535), "unsigned short", b"\xff\xff"),
    (ctypes.c_int32(-5), "int", struct.pack("<i", -5)),
    (ctypes.c_uint64(2**63 + 1), "unsigned long long", struct.pack("<Q", 2**63 + 1)),
    (ctypes.c_float(0.25), "float", struct.pack("<f", 0.25)),
    (ctypes.c_double(-0.5), "double", struct.pack("<d", -0.5)),
    (ctypes.c_bool(True), "bool", b"\x01"),
    # Python scalars packed at the declared width (issue 27): the value, not its low bytes.
    (5, "int", struct.pack("<i", 5)),
    (-3, "short", struct.pack("<h", -3)),
    (200, "unsigned char", struct.pack("<B", 200)),
    (4000000001, "unsigned int", struct.pack("<I", 4000000001)),
    (1, "bool", b"\x01"),
    (True, "int", struct.pack("<i", 1)),
    (True, "long long", struct.pack("<q", 1)),
    (1.5, "float", struct.pack("<f", 1.5)),
]


class Mixed(ctypes.Structure):
    _fields_ = [("tag", ctypes.c_char), ("value", ctypes.c_double), ("n", ctypes.c_int16)]


@pytest.fixture(scope="module")
def echo_module():
    dev = Device(0)
    dev.set_current()
    names = sorted({f"echo<{ctype}>" for _, ctype, _ in ECHO_CASES} | {"echo<Mixed>"})
    return compile_kernels(dev, ECHO, names)


@pytest.mark.gpu
@pytest.mark.parametrize("value, ctype, expected", ECHO_CASES,
                         ids=[f"{type(v).__name__}-{c}" for v, c, _ in ECHO_CASES])
def test_argument_round_trip_is_bit_exact(dev, stream, echo_module, value, ctype, expected):
    kernel = echo_module.get_kernel(f"echo<{ctype}>")
    out = DeviceBytes(len(expected))
    launch(stream, LaunchConfig(grid=1, block=1), kernel, value, out.ptr)
    stream.sync()
    assert out.read() == expected
    out.free()


@pytest.mark.gpu
def test_struct_by_value(dev, stream, echo_module):
    kernel = echo_module.get_kernel("echo<Mixed>")
    assert [p.size for p in kernel.arguments_info] == [24, 8]
    out = DeviceBytes(24)
    value = Mixed(b"z", -9.75, 31000)
    launch(stream, LaunchConfig(grid=1, block=1), kernel, value, out.ptr)
    stream.sync()
    raw = out.read()
    assert raw[0:1] == b"z" and raw[8:16] == struct.pack("<d", -9.75)
    assert raw[16:18] == struct.pack("<h", 31000)
    dt = np.dtype([("tag", "i1"), ("value", "f8"), ("n", "i2")], align=True)
    record = np.array([(7, 0.125, -2)], dtype=dt)[0]
    launch(stream, LaunchConfig(grid=1, block=1), kernel, record, out.ptr)
    stream.sync()
    assert out.read() == record.tobytes()
    out.free()


def _sum_kernel_source(n):
    params = ", ".join(f"int a{i}" for i in range(n))
    body = " + ".join(f"a{i}" for i in range(n))
    return f'extern "C" __global__ void sum{n}({params}, long long* out) {{ *out = {body}; }}'


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 16, 64, 256])
def test_many_arguments(dev, stream, n):
    mod = compile_kernels(dev, _sum_kernel_source(n))
    kernel = mod.get_kernel(f"sum{n}")
    assert kernel.num_arguments == n + 1
    out = DeviceBytes(8)
    values = [np.int32(i * 7 - 3) for i in range(n)]
    launch(stream, LaunchConfig(grid=1, block=1), kernel, *values, out.ptr)
    stream.sync()
    assert struct.unpack("<q", out.read())[0] == sum(int(v) for v in values)
    out.free()


AXPY = r"""
extern "C" __global__ void axpy(float a, const float* x, float* y, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


@pytest.mark.gpu
def test_cupy_array_arguments(dev, stream):
    cp = pytest.importorskip("cupy")
    kernel = compile_kernels(dev, AXPY).get_kernel("axpy")
    x = cp.arange(1000, dtype=cp.float32)
    y = cp.ones(1000, dtype=cp.float32)
    dev.sync()
    launch(stream, LaunchConfig(grid=4, block=256), kernel, np.float32(2), x, y, np.uint64(1000))
    stream.sync()
    assert cp.allclose(y, 2 * cp.arange(1000, dtype=cp.float32) + 1)


@pytest.mark.gpu
def test_torch_tensor_arguments(dev, stream):
    torch = pytest.importorskip("torch")
    kernel = compile_kernels(dev, AXPY).get_kernel("axpy")
    x = torch.arange(1000, dtype=torch.float32, device="cuda:0")
    y = torch.full((1000,), 3.0, device="cuda:0")
    torch.cuda.synchronize()
    launch(stream, LaunchConfig(grid=4, block=256), kernel, np.float32(-1), x, y, np.uint64(1000))
    stream.sync()
    assert torch.equal(y, 3.0 - torch.arange(1000, dtype=torch.float32, device="cuda:0"))


CLUSTER = r"""
extern "C" __global__ void cluster_shape(unsigned int* out) {
    unsigned int x, y, z, rank;
    asm volatile("mov.u32 %0, %%cluster_nctaid.x;" : "=r"(x));
    asm volatile("mov.u32 %0, %%cluster_nctaid.y;" : "=r"(y));
    asm volatile("mov.u32 %0, %%cluster_nctaid.z;" : "=r"(z));
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 && threadIdx.x == 0) {
        out[0] = x; out[1] = y; out[2] = z;
        out[3] = gridDim.x; out[4] = gridDim.y; out[5] = gridDim.z;
    }
}
"""


@pytest.mark.gpu
def test_cluster_launch_shape_read_back(dev, stream):
    if dev.compute_capability < (9, 0):
        pytest.skip("thread-block clusters need compute capability 9.0")
    kernel = compile_kernels(dev, CLUSTER).get_kernel("cluster_shape")
    out = DeviceBytes(24)
    launch(stream, LaunchConfig(grid=(3, 2), cluster=(2, 2), block=32), kernel, out.ptr)
    stream.sync()
    assert struct.unpack("<6I", out.read()) == (2, 2, 1, 6, 4, 1)
    out.free()


COOP = r"""
extern "C" __global__ void grid_barrier(unsigned int* counter, unsigned int* seen) {
    __shared__ unsigned int value;
    if (threadIdx.x == 0) {
        atomicAdd(counter, 1u);
        // Only a cooperative launch guarantees every block is resident, so this wait ends.
        while ((value = atomicAdd(counter, 0u)) < gridDim.x) { }
        seen[blockIdx.x] = value;
    }
}
"""


@pytest.mark.gpu
def test_cooperative_launch_grid_wide_sync(dev, stream):
    if not dev.properties.cooperative_launch:
        pytest.skip("the device has no cooperative launch")
    kernel = compile_kernels(dev, COOP).get_kernel("grid_barrier")
    blocks = dev.properties.multiprocessor_count * 2
    counter, seen = DeviceBytes(4), DeviceBytes(4 * blocks)
    _check(driver.cuMemsetD8(counter.ptr, 0, 4) + (None,))
    _check(driver.cuCtxSynchronize() + (None,))  # the memset is done (see DeviceBytes)
    launch(stream, LaunchConfig(grid=blocks, block=64, is_cooperative=True), kernel,
           counter.ptr, seen.ptr)
    stream.sync()
    assert np.frombuffer(seen.read(), np.uint32).tolist() == [blocks] * blocks
    per_sm = kernel.occupancy.max_active_blocks_per_multiprocessor(64, 0)
    limit = per_sm * dev.properties.multiprocessor_count
    with pytest.raises(CUDALaunchError, match=f"{limit + 1} blocks requested, but at most "
                                              f"{limit}.*CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"):
        launch(stream, LaunchConfig(grid=limit + 1, block=64, is_cooperative=True), kernel,
               counter.ptr, seen.ptr)
    counter.free()
    seen.free()


@pytest.mark.gpu
def test_errors_name_index_type_and_sizes(dev, stream, echo_module):
    kernel = echo_module.get_kernel("echo<int>")
    out = DeviceBytes(4)
    cfg = LaunchConfig(grid=1, block=1)
    with pytest.raises(TypeError, match="the kernel takes 2 arguments, 1 given"):
        launch(stream, cfg, kernel, np.int32(1))
    with pytest.raises(TypeError, match="the kernel takes 2 arguments, 3 given"):
        launch(stream, cfg, kernel, np.int32(1), out.ptr, out.ptr)
    with pytest.raises(OverflowError, match=r"kernel argument 0: int 2147483648 does not fit "
                                            r"parameter 0 \(4 bytes, declared 'int'\)"):
        launch(stream, cfg, kernel, 2**31, out.ptr)
    # echo<int> is a C++ kernel: its declared types are known, and a wrong kind is named
    # before a wrong size (tests/test_param_types.py has the rest).
    with pytest.raises(TypeError, match=r"kernel argument 0: float64 given for parameter 0 "
                                        r"declared 'int' \(an integer\)"):
        launch(stream, cfg, kernel, np.float64(1), out.ptr)
    with pytest.raises(TypeError, match=r"kernel argument 1: int32 given for parameter 1 "
                                        r"declared 'int\*' \(a pointer\)"):
        launch(stream, cfg, kernel, np.int32(1), np.int32(2))
    with pytest.raises(TypeError, match="kernel argument 0: int16 packs to 2 bytes but the "
                                        "kernel's parameter 0 is 4 bytes"):
        launch(stream, cfg, kernel, np.int16(1), out.ptr)
    with pytest.raises(TypeError, match="kernel argument 1 is a host NumPy array"):
        launch(stream, cfg, kernel, np.int32(1), np.zeros(4, np.int32))
    with pytest.raises(TypeError, match="kernel argument 0 has unsupported type"):
        launch(stream, cfg, kernel, "1", out.ptr)
    out.free()


@pytest.mark.gpu
def test_launch_limits_are_explained(dev, stream, echo_module):
    kernel = echo_module.get_kernel("echo<int>")
    out = DeviceBytes(4)
    args = (np.int32(1), out.ptr)
    limit = dev.properties.max_threads_per_block
    with pytest.raises(ValueError, match=f"has {limit * 2} threads; device 0 allows at most "
                                         f"{limit}"):
        launch(stream, LaunchConfig(grid=1, block=limit * 2), kernel, *args)
    with pytest.raises(ValueError, match="dimension z is 128; device 0 allows at most 64"):
        launch(stream, LaunchConfig(grid=1, block=(1, 1, 128)), kernel, *args)
    with pytest.raises(ValueError, match="blocks in dimension y; device 0 allows at most 65535"):
        launch(stream, LaunchConfig(grid=(1, 70000), block=1), kernel, *args)
    too_much = dev.properties.max_shared_memory_per_block + 1024
    with pytest.raises(ValueError, match=r"shmem_size=.*exceeds this kernel's dynamic shared "
                                         r"memory limit.*Raise the limit first: "
                                         r"kernel.attributes\[0\].max_dynamic_shared_size_bytes"):
        launch(stream, LaunchConfig(grid=1, block=1, shmem_size=too_much), kernel, *args)
    # Following the hint makes the same launch work.
    kernel.attributes.max_dynamic_shared_size_bytes = too_much
    assert kernel.attributes.max_dynamic_shared_size_bytes == too_much
    launch(stream, LaunchConfig(grid=1, block=1, shmem_size=too_much), kernel, *args)
    kernel.attributes.max_dynamic_shared_size_bytes = 0
    with pytest.raises(TypeError, match="max_dynamic_shared_size_bytes must be an int"):
        kernel.attributes.max_dynamic_shared_size_bytes = 1.5
    stream.sync()
    out.free()


BOUNDED = r"""
extern "C" __global__ void __launch_bounds__(64) bounded(int* out) { out[threadIdx.x] = 1; }
"""


@pytest.mark.gpu
def test_launch_refusals_are_cuda_errors_and_value_errors(dev, stream, echo_module):
    """A refusal is one class that code written for cuda.core (which catches CUDAError and
    matches the driver's error name) and code that catches ValueError both handle."""
    out = DeviceBytes(256)
    kernel = echo_module.get_kernel("echo<int>")
    limit = dev.properties.max_threads_per_block
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE") as info:
        launch(stream, LaunchConfig(grid=1, block=limit * 2), kernel, np.int32(1), out.ptr)
    err = info.value
    assert isinstance(err, CUDALaunchError) and isinstance(err, ValueError)
    assert err.name == "CUDA_ERROR_INVALID_VALUE"
    assert err.code == int(driver.CUresult.CUDA_ERROR_INVALID_VALUE)
    assert f"has {limit * 2} threads; device 0 allows at most {limit} per block" in str(err)
    # numba-cuda's own test: a block beyond the kernel's launch bound.
    bounded = compile_kernels(dev, BOUNDED).get_kernel("bounded")
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE") as info:
        launch(stream, LaunchConfig(grid=1, block=128), bounded, out.ptr)
    assert isinstance(info.value, ValueError)
    assert "this kernel can run at most 64 per block on device 0" in str(info.value)
    # The stream still works after refusals: they queue nothing.
    launch(stream, LaunchConfig(grid=1, block=64), bounded, out.ptr)
    stream.sync()
    assert np.frombuffer(out.read(), np.int32)[:64].tolist() == [1] * 64
    out.free()


@pytest.mark.gpu
def test_shared_memory_advice_only_where_it_can_work(dev, stream, echo_module):
    kernel = echo_module.get_kernel("echo<int>")
    out = DeviceBytes(4)
    optin = dev.properties.max_shared_memory_per_block_optin
    static = kernel.attributes.shared_size_bytes
    with pytest.raises(CUDALaunchError) as info:
        launch(stream, LaunchConfig(grid=1, block=1, shmem_size=2**31), kernel, np.int32(1),
               out.ptr)
    message = str(info.value)
    assert "Raise the limit" not in message and "= 2147483648" not in message
    assert (f"more dynamic shared memory than device 0 can give this kernel: at most "
            f"{optin - static} bytes per block") in message
    assert "CUDA_ERROR_INVALID_VALUE" in message
    launch(stream, LaunchConfig(grid=1, block=1), kernel, np.int32(3), out.ptr)
    stream.sync()
    assert out.read() == struct.pack("<i", 3)
    out.free()


# The primary context made current by another library (here cuda.bindings directly), before
# cuda_core ever retained it: a launch on the legacy default stream adopts it and passes the
# kernel's CUfunction of that context.
_FOREIGN_PRIMARY = r"""
import json, struct
import numpy as np
from cuda.bindings import driver

def ok(result):
    assert int(result[0]) == 0, result
    return result[1] if len(result) == 2 else None

ok(driver.cuInit(0))
cudev = ok(driver.cuDeviceGet(0))
ctx = ok(driver.cuDevicePrimaryCtxRetain(cudev))
ok(driver.cuCtxSetCurrent(ctx))
attr = driver.CUdevice_attribute
major = ok(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cudev))
minor = ok(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cudev))

from cuda_core import LEGACY_DEFAULT_STREAM, LaunchConfig, Program, ProgramOptions, launch
from cuda_core._launcher import _launch_handle

src = 'extern "C" __global__ void put(int* p, int v) { *p = v; }'
kernel = Program(src, "c++", ProgramOptions(arch=f"sm_{major}{minor}")).compile("cubin")     .get_kernel("put")
out = ok(driver.cuMemAlloc(4))
launch(LEGACY_DEFAULT_STREAM, LaunchConfig(grid=1, block=1), kernel, int(out), np.int32(77))
ok(driver.cuCtxSynchronize())
host = bytearray(4)
ok(driver.cuMemcpyDtoH(host, out, 4) + (None,))
expected = int(ok(driver.cuKernelGetFunction(driver.CUkernel(int(kernel.handle)))))
print(json.dumps({"value": struct.unpack("<i", bytes(host))[0],
                  "handle": _launch_handle(LEGACY_DEFAULT_STREAM, kernel),
                  "function": expected, "kernel": int(kernel.handle)}))
"""


@pytest.mark.gpu
def test_default_stream_adopts_a_primary_context_made_current_elsewhere():
    result = run_python(_FOREIGN_PRIMARY)
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert got["value"] == 77
    assert got["handle"] == got["function"] != got["kernel"]


class Foreign:
    """Another library's stream: only ``__cuda_stream__``, asked at every use."""

    def __init__(self, address):
        self.address = address
        self.asked = 0

    def __cuda_stream__(self):
        self.asked += 1
        return (0, self.address)


@pytest.mark.gpu
def test_stream_protocol_objects_and_default_streams(dev, stream, echo_module):
    kernel = echo_module.get_kernel("echo<int>")
    function = int(_check(driver.cuKernelGetFunction(kernel.handle)))  # in dev's primary
    out = DeviceBytes(4)
    foreign = Foreign(int(stream.handle))
    launch(foreign, LaunchConfig(grid=1, block=1), kernel, np.int32(11), out.ptr)
    stream.sync()
    assert out.read() == struct.pack("<i", 11)
    assert foreign.asked == 1
    # An object passed to launch() itself is not wrapped in a Stream, and its stream's context
    # is not looked up: the CUkernel launches in it. Its default-stream handles resolve against
    # the current context, as the constants do.
    assert _launch_handle(foreign, kernel) == int(kernel.handle)
    assert _launch_handle(Foreign(0), kernel) == function
    assert _launch_handle(Foreign(2), kernel) == function
    launch(Foreign(0), LaunchConfig(grid=1, block=1), kernel, np.int32(13), out.ptr)
    LEGACY_DEFAULT_STREAM.sync()
    assert out.read() == struct.pack("<i", 13)
    # A refusal names the limit, as on a Stream.
    with pytest.raises(CUDALaunchError, match="CUDA_ERROR_INVALID_VALUE"):
        launch(foreign, LaunchConfig(grid=1, block=4096), kernel, np.int32(1), out.ptr)
    with pytest.raises(TypeError, match=r"launch\(\): Foreign.__cuda_stream__\(\) must return"):
        launch(Foreign("x"), LaunchConfig(grid=1, block=1), kernel, np.int32(1), out.ptr)
    launch(dev.default_stream, LaunchConfig(grid=1, block=1), kernel, np.int32(12), out.ptr)
    dev.default_stream.sync()
    assert out.read() == struct.pack("<i", 12)
    closed = dev.create_stream()
    closed.close()
    with pytest.raises(RuntimeError, match="this Stream is closed"):
        launch(closed, LaunchConfig(grid=1, block=1), kernel, np.int32(1), out.ptr)
    out.free()


@pytest.mark.gpu
def test_launch_runs_in_the_streams_context_with_none_current(dev, stream, echo_module):
    # A thread that never made a context current launches on a stream of device 0: the kernel
    # runs in the stream's context (no context switch needed for a real stream).
    kernel = echo_module.get_kernel("echo<int>")
    out = DeviceBytes(4)
    errors = []

    def other_thread():
        try:
            from cuda.bindings import driver as d
            assert d.cuCtxGetCurrent()[1] is None or int(d.cuCtxGetCurrent()[1]) == 0
            launch(stream, LaunchConfig(grid=1, block=1), kernel, np.int32(77), out.ptr)
            launch(Foreign(int(stream.handle)), LaunchConfig(grid=1, block=1), kernel,
                   np.int32(78), out.ptr)
        except BaseException as exc:
            errors.append(repr(exc))

    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    assert errors == []
    stream.sync()
    assert out.read() == struct.pack("<i", 78)
    out.free()


@pytest.mark.gpu
def test_launch_on_a_stream_of_another_device_than_the_current(echo_module):
    from cuda_core import System

    if System().num_devices < 2:
        pytest.skip("needs two GPUs")
    d0, d1 = Device(0), Device(1)
    d0.set_current()
    s0 = d0.create_stream()
    kernel = echo_module.get_kernel("echo<int>")
    out = DeviceBytes(4)  # on device 0
    d1.set_current()
    launch(s0, LaunchConfig(grid=1, block=1), kernel, np.int32(55), out.ptr)
    s0.sync()
    d0.set_current()
    assert out.read() == struct.pack("<i", 55)
    out.free()
    s0.close()


@pytest.mark.gpu
def test_launch_passes_the_kernels_function_in_the_streams_primary_context(dev, stream,
                                                                         echo_module):
    kernel = echo_module.get_kernel("echo<int>")
    function = int(_check(driver.cuKernelGetFunction(kernel.handle)))  # in dev's primary
    assert function != int(kernel.handle)
    assert _launch_handle(stream, kernel) == function
    # Wrapped streams too. The unbound default streams resolve against the context current
    # when they launch: when that is a primary context, launch() passes the kernel's
    # CUfunction there, not the CUkernel (which the driver would resolve at each launch).
    for s in (dev.default_stream, Stream.from_handle(int(stream.handle)), LEGACY_DEFAULT_STREAM,
              PER_THREAD_DEFAULT_STREAM, Stream.from_handle(0), Stream.from_handle(2)):
        assert _launch_handle(s, kernel) == function, s
    out = DeviceBytes(4)
    for value, s in enumerate((LEGACY_DEFAULT_STREAM, Stream.from_handle(0),
                               PER_THREAD_DEFAULT_STREAM)):
        launch(s, LaunchConfig(grid=1, block=1), kernel, np.int32(5 + value), out.ptr)
        s.sync()
        assert out.read() == struct.pack("<i", 5 + value)
    out.free()


@pytest.mark.gpu
def test_launch_in_a_context_that_is_not_primary(dev, echo_module):
    # A context made by someone else may be destroyed and its address reused: launches there
    # pass the CUkernel, which the driver resolves in the stream's context each time.
    kernel = echo_module.get_kernel("echo<int>")
    ctx = cu_ctx_create(int(dev.device_id))
    try:
        raw = _check(driver.cuStreamCreate(0))
        out = DeviceBytes(4)  # in the new context
        # The legacy default stream of this (current) context: the CUkernel as well.
        assert _launch_handle(LEGACY_DEFAULT_STREAM, kernel) == int(kernel.handle)
        launch(LEGACY_DEFAULT_STREAM, LaunchConfig(grid=1, block=1), kernel, np.int32(65),
               out.ptr)
        LEGACY_DEFAULT_STREAM.sync()
        assert out.read() == struct.pack("<i", 65)
        _check(driver.cuCtxPopCurrent())
        wrapped = Stream.from_handle(int(raw))
        assert not wrapped.context.is_primary
        assert _launch_handle(wrapped, kernel) == int(kernel.handle)
        launch(wrapped, LaunchConfig(grid=1, block=1), kernel, np.int32(66), out.ptr)
        wrapped.sync()
        _check(driver.cuCtxPushCurrent(ctx) + (None,))
        assert out.read() == struct.pack("<i", 66)
        # A __cuda_stream__ object over that stream, launched on while the primary context
        # is current: the CUkernel runs in the stream's context.
        _check(driver.cuCtxPopCurrent())
        launch(Foreign(int(raw)), LaunchConfig(grid=1, block=1), kernel, np.int32(67), out.ptr)
        wrapped.sync()
        _check(driver.cuCtxPushCurrent(ctx) + (None,))
        assert out.read() == struct.pack("<i", 67)
        out.free()
        _check(driver.cuStreamDestroy(raw) + (None,))
    finally:
        driver.cuCtxDestroy(ctx)
        dev.set_current()


@pytest.mark.gpu
def test_one_kernel_launches_on_two_devices(echo_module):
    from cuda_core import System

    if System().num_devices < 2:
        pytest.skip("needs two GPUs")
    kernel = echo_module.get_kernel("echo<int>")
    streams, outs = [], []
    for i in (0, 1):
        d = Device(i)
        d.set_current()
        streams.append(d.create_stream())
        outs.append(DeviceBytes(4))
    Device(0).set_current()
    for round_ in range(3):  # alternating: each device's function stays kept
        for i in (0, 1):
            launch(streams[i], LaunchConfig(grid=1, block=1), kernel, np.int32(10 * i + round_),
                   outs[i].ptr)
    assert len({_launch_handle(s, kernel) for s in streams} | {int(kernel.handle)}) == 3
    for i in (0, 1):
        streams[i].sync()
        Device(i).set_current()
        assert outs[i].read() == struct.pack("<i", 10 * i + 2)
        outs[i].free()
        streams[i].close()
    Device(0).set_current()


@pytest.mark.gpu
def test_four_threads_launch_at_once(echo_module):
    kernel = echo_module.get_kernel("echo<unsigned int>")
    errors, results = [], {}
    barrier = threading.Barrier(4)

    def work(t):
        try:
            dev = Device(0)
            dev.set_current()
            s = dev.create_stream()
            out = DeviceBytes(4)
            cfg = LaunchConfig(grid=1, block=1)
            barrier.wait()
            for i in range(2000):
                launch(s, cfg, kernel, np.uint32(t * 100000 + i), out.ptr)
            s.sync()
            results[t] = struct.unpack("<I", out.read())[0]
            out.free()
            s.close()
        except BaseException as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert results == {t: t * 100000 + 1999 for t in range(4)}


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.gpu
def test_a_million_launches_keep_memory_flat(dev, stream, echo_module):
    kernel = echo_module.get_kernel("echo<float>")
    out = DeviceBytes(4)
    cfg = LaunchConfig(grid=1, block=1)
    value = np.float32(1)
    for i in range(20000):  # warm up every cache
        launch(stream, cfg, kernel, value, out.ptr)
        if i % 1_000 == 0:
            stream.sync()
    stream.sync()
    gc.collect()
    used0 = device_bytes_of_this_process(dev)
    # tools/gpu/memcheck.sh asks for fewer: a million launches under the sanitizer outlast its
    # time on the device; what it checks there is every access, not the memory's flatness (the
    # sanitizer's own host memory grows with each launch it tracks).
    under_sanitizer = os.environ.get("CUDA_CORE_UNDER_SANITIZER") == "1"
    n_blocks = 10
    block = int(os.environ.get("CUDA_CORE_FLAT_LAUNCHES", 1_000_000)) // n_blocks
    blocks0 = sys.getallocatedblocks()
    rss = [_rss_bytes()]
    for _ in range(n_blocks):
        for i in range(block):
            launch(stream, cfg, kernel, value, out.ptr)
            # At most 1,000 launches in flight, as in the warm-up: the driver queues pending
            # work in host memory, and a deep queue grows the RSS by itself.
            if i % 1_000 == 0:
                stream.sync()
        stream.sync()
        rss.append(_rss_bytes())
    gc.collect()
    # A Python object kept per launch: a million blocks more.
    assert sys.getallocatedblocks() - blocks0 < 10_000
    if not under_sanitizer:
        # A leak grows the RSS in every block of 100,000 launches; the driver's own pools grow
        # it in steps, where the GPU falls behind (it is shared by many processes): 15 MB over
        # the million on two H200s shared by 24 pytest workers and their IPC children. So the
        # median step is what is checked: a leak of 3 bytes a launch shows above 256 KiB.
        steps = [b - a for a, b in zip(rss, rss[1:])]
        assert statistics.median(steps) < 256 * 1024, steps
    used1 = device_bytes_of_this_process(dev)
    out.free()
    if used0 is None or used1 is None:
        pytest.skip("the RSS is flat; the device's memory is shared with other processes and "
                    "NVML does not list this one, so this process's device memory is unknown")
    assert abs(used1 - used0) < 4 * 1024 * 1024


FAST = r"""
extern "C" __global__ void fast(float* out, unsigned long long p, double d, float f) {
    *out = f + (float)d + (p ? 1.0f : 0.0f);
}
"""


@pytest.mark.gpu
def test_fast_path_runs_no_python_function(dev, stream):
    kernel = compile_kernels(dev, FAST).get_kernel("fast")
    buf = dev.allocate(4, stream=stream)
    cfg = LaunchConfig(grid=1, block=1)
    value = np.float32(2)
    launch(stream, cfg, kernel, buf, 0, 0.5, value)  # first use reads the kernel's layout
    events = []

    def profiler(frame, event, arg):
        events.append((event, getattr(arg, "__name__", None) if arg is not None else
                       frame.f_code.co_name))

    sys.setprofile(profiler)
    try:
        launch(stream, cfg, kernel, buf, 1, 0.5, value)
        launch(stream, cfg, kernel, buf, 1, 0.25, value)
    finally:
        sys.setprofile(None)
    stream.sync()
    # No Python-level function ran: no "call" event at all (a Python frame starting), and the
    # only C call the interpreter saw, if it reports Cython functions at all, is launch itself.
    assert not [e for e in events if e[0] == "call"]
    assert {e for e in events if e[0] == "c_call"} <= {("c_call", "launch"),
                                                       ("c_call", "setprofile")}
    out = DeviceBytes(4)
    _check(driver.cuMemcpyDtoD(out.ptr, int(buf.handle), 4) + (None,))
    assert out.read() == struct.pack("<f", 3.25)
    out.free()
    buf.close(stream)


@pytest.mark.gpu
def test_buffers_as_arguments(dev, stream):
    kernel = compile_kernels(dev, AXPY).get_kernel("axpy")
    n = 1000
    x = dev.allocate(4 * n, stream=stream)
    y = dev.allocate(4 * n, stream=stream)
    host = np.arange(n, dtype=np.float32)
    _check(driver.cuMemcpyHtoD(int(x.handle), host.ctypes.data, 4 * n) + (None,))
    _check(driver.cuCtxSynchronize() + (None,))  # staged is not landed: see test_graph's write
    y.fill(0, stream=stream)
    launch(stream, LaunchConfig(grid=4, block=256), kernel, np.float32(3), x, y, np.uint64(n))
    stream.sync()
    back = np.empty(n, np.float32)
    _check(driver.cuMemcpyDtoH(back.ctypes.data, int(y.handle), 4 * n) + (None,))
    assert np.array_equal(back, 3 * host)
    x.close(stream)
    with pytest.raises(ValueError, match="kernel argument 1 is a closed Buffer"):
        launch(stream, LaunchConfig(grid=4, block=256), kernel, np.float32(3), x, y,
               np.uint64(n))
    y.close(stream)


def test_stream_config_and_kernel_by_keyword_bind_like_python():
    cfg = LaunchConfig(grid=1, block=1)
    with pytest.raises(TypeError, match="kernel must be a Kernel, not str"):
        launch(stream=LEGACY_DEFAULT_STREAM, config=cfg, kernel="k")
    with pytest.raises(TypeError, match="kernel must be a Kernel, not NoneType"):
        launch(LEGACY_DEFAULT_STREAM, cfg, kernel=None)
    with pytest.raises(TypeError, match="multiple values for argument 'config'"):
        launch(LEGACY_DEFAULT_STREAM, cfg, config=cfg, kernel=None)
    with pytest.raises(TypeError, match="unexpected keyword argument 'grid'"):
        launch(LEGACY_DEFAULT_STREAM, cfg, None, grid=1)
    with pytest.raises(TypeError, match="missing required argument 'kernel'"):
        launch(LEGACY_DEFAULT_STREAM, config=cfg)
    with pytest.raises(TypeError, match="\\(2 positional arguments given\\)"):
        launch(LEGACY_DEFAULT_STREAM, cfg)
