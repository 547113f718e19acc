"""Kernel parameter types from mangled names: launch() refuses an argument of the wrong kind
before the driver reads it, where the kernel's declared types are known (GPU; the numba-cuda
name check at the top runs on the CPU)."""

import re
import struct
import sys
import threading

import numpy as np
import pytest

from helpers import cuda_include_dir
from cuda_core import Device, Kernel, LaunchConfig, ObjectCode, Program, ProgramOptions, launch
from cuda_core._param_types import _checked_parameters, _demangled_parameters

SOURCE = r"""
template <class T> __global__ void k(unsigned* p, T x, long long n) {
    p[0] = (unsigned)n;
    p[1] = (unsigned)(x * 2);
}
template <class T> __global__ void fill(T* out, T value, size_t n) {
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = value;
}
extern "C" __global__ void k_c(unsigned* p, float x, long long n) {
    p[0] = (unsigned)n;
    p[1] = (unsigned)(x * 2);
}
"""
NAMES = ("k<float>", "k<int>", "fill<double>", "fill<float>", "k_c")
CFG = LaunchConfig(grid=1, block=1)


def _ptx_param_counts(ptx):
    """The parameter count of each .entry in PTX text: what the driver will report."""
    return {name: params.count(".param")
            for name, params in re.findall(r"\.entry\s+(\S+)\s*\(([^)]*)\)", ptx)}


# What numba-cuda 0.30.4 makes of `def add(a, x, n)` typed `void(float32[:], float32, int64)`:
# its symbol names three parameters (one Array<...>, a float, a long long), but the entry takes
# nine, because numba's compiler passes the array as the seven fields of its descriptor
# (meminfo, parent, nitems, itemsize, data, shape[0], strides[0]). The PTX is written out here
# rather than compiled with numba, so that the test needs neither numba nor a numpy it accepts.
NUMBA_ADD = ("_ZN6cudapy8__main__3addB2v1B16cw51cXTLSUwv1sDU"
             "E5ArrayIfLi1E1C7mutable7alignedEfx")
NUMBA_ADD_PARAMS = (".u64", ".u64", ".u64", ".u64", ".u64", ".u64", ".u64", ".f32", ".u64")
NUMBA_ADD_PTX = (".version 7.0\n.target sm_75\n.address_size 64\n\n"
                 f".visible .entry {NUMBA_ADD}(\n"
                 + ",\n".join(f"    .param {t} {NUMBA_ADD}_param_{i}"
                              for i, t in enumerate(NUMBA_ADD_PARAMS))
                 + "\n)\n{\n    ret;\n}\n")


def test_the_numba_cuda_kernel_ptx_is_well_formed():
    assert _ptx_param_counts(NUMBA_ADD_PTX) == {NUMBA_ADD: len(NUMBA_ADD_PARAMS)}


def test_numba_cuda_kernels_flatten_their_arrays_so_their_types_stay_unknown():
    # numba-cuda mangles one Array<...> parameter that its compiler flattens into several:
    # the counts differ, so no type is checked (a refusal there would be a false one).
    declared = _demangled_parameters(NUMBA_ADD)
    assert declared == ("Array<float, 1, C, mutable, aligned>", "float", "long long")
    assert _checked_parameters(NUMBA_ADD, len(NUMBA_ADD_PARAMS)) is None
    # Had the counts agreed, the float and long long would have been checked.
    assert _checked_parameters(NUMBA_ADD, 3) == declared


# -- GPU ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def module():
    dev = Device(0)
    dev.set_current()
    opts = ProgramOptions(arch=f"sm_{dev.arch}", include_path=cuda_include_dir())
    return Program(SOURCE, "c++", opts).compile("cubin", name_expressions=NAMES)


def _read(buf, dtype, count, stream):
    from cuda.bindings import driver

    stream.sync()
    out = np.zeros(count, dtype)
    (err,) = driver.cuMemcpyDtoH(out.ctypes.data, int(buf.handle), out.nbytes)
    assert err == driver.CUresult.CUDA_SUCCESS, err
    return out.tolist()


@pytest.mark.gpu
def test_declared_types_come_from_the_mangled_name(dev, module):
    assert module.get_kernel("k<float>")._param_types == ("unsigned int*", "float", "long long")
    assert module.get_kernel("k<int>")._param_types == ("unsigned int*", "int", "long long")
    assert module.get_kernel("fill<double>")._param_types == ("double*", "double",
                                                              "unsigned long")
    # extern "C": the symbol carries no types; a launch checks sizes only.
    assert module.get_kernel("k_c")._param_types is None
    # Any CUkernel: the driver names it (cuKernelGetName), whoever made the Kernel.
    k = module.get_kernel("k<float>")
    assert Kernel.from_handle(int(k.handle), module)._param_types == k._param_types


@pytest.mark.gpu
def test_declared_types_are_read_without_a_current_context(module):
    # First read of the layout on a thread where no context was ever made current.
    kernel = module.get_kernel("fill<float>")
    seen = []
    t = threading.Thread(target=lambda: seen.append(kernel._param_types))
    t.start()
    t.join()
    assert seen == [("float*", "float", "unsigned long")]


@pytest.mark.gpu
def test_a_float_for_a_pointer_is_refused_and_the_context_stays_healthy(dev, stream, module):
    kernel = module.get_kernel("k<float>")
    buf = dev.allocate(8, stream=stream)
    # The call of the issue: 1.5 (an 8-byte double) for unsigned* p passes the size check, and
    # the driver would read it as an address. It never reaches the driver.
    with pytest.raises(TypeError, match=r"^kernel argument 0: float given for parameter 0 "
                                        r"declared 'unsigned int\*' \(a pointer\); pass a "
                                        r"Buffer"):
        launch(stream, CFG, kernel, 1.5, np.uint32(12345), np.int64(0))
    with pytest.raises(TypeError, match=r"kernel argument 0: uint64 given for parameter 0 "
                                        r"declared 'unsigned int\*'.*e\.g\. int\(x\)"):
        launch(stream, CFG, kernel, np.uint64(int(buf.handle)), np.float32(1), np.int64(0))
    # The context is healthy: a correct launch runs and writes the right result.
    launch(stream, CFG, kernel, buf, np.float32(2.5), np.int64(7))
    assert _read(buf, np.uint32, 2, stream) == [7, 5]
    launch(stream, CFG, kernel, int(buf.handle), np.float32(4), 9)  # an int: a pointer, or n
    assert _read(buf, np.uint32, 2, stream) == [9, 8]
    dev.sync()
    buf.close(stream)


@pytest.mark.gpu
def test_integer_and_floating_point_mismatches_are_refused(dev, stream, module):
    kf, ki = module.get_kernel("k<float>"), module.get_kernel("k<int>")
    buf = dev.allocate(8, stream=stream)
    with pytest.raises(TypeError, match=r"kernel argument 1: int32 given for parameter 1 "
                                        r"declared 'float' \(a floating-point type\); pass "
                                        r"a float or numpy\.float32\(x\)"):
        launch(stream, CFG, kf, buf, np.int32(3), np.int64(0))
    with pytest.raises(TypeError, match=r"kernel argument 1: float32 given for parameter 1 "
                                        r"declared 'int' \(an integer\); pass a Python int or "
                                        r"bool, or an integer of 4 bytes, e\.g\. "
                                        r"numpy\.int32\(x\)"):
        launch(stream, CFG, ki, buf, np.float32(3), np.int64(0))
    with pytest.raises(TypeError, match=r"kernel argument 2: float given for parameter 2 "
                                        r"declared 'long long' \(an integer\)"):
        launch(stream, CFG, ki, buf, np.int32(3), 1.0)
    with pytest.raises(TypeError, match=r"kernel argument 2: Buffer given for parameter 2 "
                                        r"declared 'long long'"):
        launch(stream, CFG, ki, buf, np.int32(3), buf)
    # A kind mismatch is reported even where the sizes differ too (4 bytes for 8 here).
    with pytest.raises(TypeError, match=r"kernel argument 0: int32 given for parameter 0 "
                                        r"declared 'unsigned int\*' \(a pointer\)"):
        launch(stream, CFG, ki, np.int32(0), np.int32(3), np.int64(0))
    launch(stream, CFG, ki, buf, np.int32(21), np.int64(1))
    assert _read(buf, np.uint32, 2, stream) == [1, 42]
    buf.close(stream)


@pytest.mark.gpu
def test_signedness_differences_are_accepted(dev, stream, module):
    kernel = module.get_kernel("k<int>")
    buf = dev.allocate(8, stream=stream)
    launch(stream, CFG, kernel, buf, np.uint32(5), np.uint64(9))
    assert _read(buf, np.uint32, 2, stream) == [9, 10]
    launch(stream, CFG, kernel, buf, np.int32(-1), np.int64(-2))
    assert _read(buf, np.uint32, 2, stream) == [2**32 - 2, 2**32 - 2]
    buf.close(stream)


@pytest.mark.gpu
def test_python_scalars_of_the_right_kind_and_size(dev, stream, module):
    kd, kf = module.get_kernel("fill<double>"), module.get_kernel("fill<float>")
    buf = dev.allocate(32, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=32), kd, buf, 1.5, 4)  # double, and size_t n
    assert _read(buf, np.float64, 4, stream) == [1.5] * 4
    # A Python float for a declared float is float32; a NumPy float64 keeps its width, and the
    # size check speaks.
    launch(stream, LaunchConfig(grid=1, block=32), kf, buf, 1.5, 8)
    assert _read(buf, np.float32, 8, stream) == [1.5] * 8
    with pytest.raises(TypeError, match=r"kernel argument 1: float64 packs to 8 bytes but the "
                                        r"kernel's parameter 1 is 4 bytes"):
        launch(stream, CFG, kf, buf, np.float64(1.5), 4)
    with pytest.raises(TypeError, match=r"kernel argument 1: int given for parameter 1 "
                                        r"declared 'float'"):
        launch(stream, CFG, kf, buf, 4, 4)
    launch(stream, LaunchConfig(grid=1, block=32), kf, buf, np.float32(-0.25), np.uint64(8))
    assert _read(buf, np.float32, 8, stream) == [-0.25] * 8
    buf.close(stream)


@pytest.mark.gpu
def test_extern_c_kernels_get_sizes_checked_only(dev, stream, module):
    # The documented limitation: without a mangled name nothing says p is a pointer, so the
    # issue's call (a float for p) would reach the driver. It is not launched here: it would
    # leave this process's context unusable. Sizes are still checked.
    kernel = module.get_kernel("k_c")
    assert kernel._param_types is None
    buf = dev.allocate(8, stream=stream)
    with pytest.raises(TypeError, match=r"kernel argument 1: float64 packs to 8 bytes but the "
                                        r"kernel's parameter 1 is 4 bytes"):
        launch(stream, CFG, kernel, buf, np.float64(1), np.int64(0))
    launch(stream, CFG, kernel, buf, np.float32(3), np.int64(4))
    assert _read(buf, np.uint32, 2, stream) == [4, 6]
    buf.close(stream)


@pytest.mark.gpu
def test_a_graph_condition_is_an_integer(dev):
    from cuda_core._kernel_args import _packed_arguments

    gb = dev.create_graph_builder().begin_building()
    cond = gb.create_condition()
    expected = [struct.pack("<Q", cond.handle)]
    assert _packed_arguments(cond, declared=["unsigned long long"]) == expected
    with pytest.raises(TypeError, match="GraphCondition given for parameter 0 declared 'int\\*'"):
        _packed_arguments(cond, declared=["int*"])
    gb.end_building()
    gb.close()


@pytest.mark.gpu
def test_the_typed_fast_path_runs_no_python_function(dev, stream, module):
    kernel = module.get_kernel("k<float>")
    buf = dev.allocate(8, stream=stream)
    value, n = np.float32(2), np.int64(3)
    launch(stream, CFG, kernel, buf, value, n)  # first use reads the layout and the types
    assert kernel._param_types is not None
    events = []

    def profiler(frame, event, arg):
        events.append((event, getattr(arg, "__name__", None) if arg is not None else
                       frame.f_code.co_name))

    sys.setprofile(profiler)
    try:
        launch(stream, CFG, kernel, buf, value, n)
        launch(stream, CFG, kernel, buf, value, n)
    finally:
        sys.setprofile(None)
    assert not [e for e in events if e[0] == "call"]
    assert {e for e in events if e[0] == "c_call"} <= {("c_call", "launch"),
                                                       ("c_call", "setprofile")}
    assert _read(buf, np.uint32, 2, stream) == [3, 4]
    buf.close(stream)


@pytest.mark.gpu
def test_a_numba_cuda_kernel_loads_with_its_types_unknown(dev):
    kernel = ObjectCode.from_ptx(NUMBA_ADD_PTX).get_kernel(NUMBA_ADD)
    assert kernel.num_arguments == len(NUMBA_ADD_PARAMS)
    assert kernel._param_types is None
