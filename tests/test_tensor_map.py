"""TMA tensor maps: TensorMapDescriptor, its options and enums, StridedMemoryView.as_tensor_map
and the descriptor as a kernel argument.

The CPU tests cover the options, the enums and every layout check, which as_tensor_map runs
before it looks at the device (on host arrays, which are refused only after them). The GPU
tests need compute capability 9.0: a kernel copies one box with TMA (inline PTX) from global to
shared memory and writes it out.
"""

import dataclasses
import enum

import numpy as np
import pytest

import cuda_core
from cuda_core import (LaunchConfig, Program, ProgramOptions, TensorMapDescriptor,
                       TensorMapDescriptorOptions, launch)
from cuda_core._kernel_args import _packed_arguments
from cuda_core._tensor_map import (TensorMapDataType, TensorMapIm2ColWideMode,
                                   TensorMapInterleave, TensorMapL2Promotion, TensorMapOOBFill,
                                   TensorMapSwizzle)
from cuda_core.utils import StridedMemoryView

from graph_kernels import fetch, put


def aligned(shape, dtype=np.float32, align=64, offset=0):
    """A zeroed host array whose data starts ``offset`` bytes past an ``align``-byte boundary."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.zeros(nbytes + align + offset, np.uint8)
    start = (-raw.ctypes.data) % align + offset
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def view_of(array):
    return StridedMemoryView.from_dlpack(array, stream_ptr=-1)


# -- enums and options -------------------------------------------------------------------------

def test_enums_are_int_enums_with_the_driver_values():
    assert issubclass(TensorMapDataType, enum.IntEnum)
    assert [(m.name, int(m)) for m in TensorMapDataType] == [
        ("UINT8", 0), ("UINT16", 1), ("UINT32", 2), ("INT32", 3), ("UINT64", 4), ("INT64", 5),
        ("FLOAT16", 6), ("FLOAT32", 7), ("FLOAT64", 8), ("BFLOAT16", 9), ("FLOAT32_FTZ", 10),
        ("TFLOAT32", 11), ("TFLOAT32_FTZ", 12)]
    assert [(m.name, int(m)) for m in TensorMapInterleave] == [
        ("NONE", 0), ("INTERLEAVE_16B", 1), ("INTERLEAVE_32B", 2)]
    assert [(m.name, int(m)) for m in TensorMapSwizzle] == [
        ("NONE", 0), ("SWIZZLE_32B", 1), ("SWIZZLE_64B", 2), ("SWIZZLE_128B", 3)]
    assert [(m.name, int(m)) for m in TensorMapL2Promotion] == [
        ("NONE", 0), ("L2_64B", 1), ("L2_128B", 2), ("L2_256B", 3)]
    assert [(m.name, int(m)) for m in TensorMapOOBFill] == [
        ("NONE", 0), ("NAN_REQUEST_ZERO_FMA", 1)]
    assert [(m.name, int(m)) for m in TensorMapIm2ColWideMode] == [("W", 0), ("W128", 1)]


def test_enum_values_match_cuda_bindings():
    from cuda.bindings import driver

    assert int(TensorMapDataType.TFLOAT32_FTZ) == int(
        driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ)
    assert int(TensorMapSwizzle.SWIZZLE_128B) == int(
        driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B)
    assert int(TensorMapL2Promotion.L2_256B) == int(
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B)
    assert int(TensorMapOOBFill.NAN_REQUEST_ZERO_FMA) == int(
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
    assert int(TensorMapInterleave.INTERLEAVE_32B) == int(
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_32B)


def test_exported_at_top_level():
    assert "TensorMapDescriptor" in cuda_core.__all__
    assert "TensorMapDescriptorOptions" in cuda_core.__all__
    assert cuda_core.TensorMapDescriptor is TensorMapDescriptor


def test_descriptor_is_not_constructible():
    with pytest.raises(RuntimeError, match="as_tensor_map"):
        TensorMapDescriptor()


def test_options_defaults_and_normalization():
    opts = TensorMapDescriptorOptions(box_dim=[8, np.int64(16)])
    assert dataclasses.is_dataclass(opts)
    assert opts.box_dim == (8, 16) and type(opts.box_dim[1]) is int
    assert opts.element_strides is None and opts.data_type is None
    assert opts.interleave is TensorMapInterleave.NONE
    assert opts.swizzle is TensorMapSwizzle.NONE
    assert opts.l2_promotion is TensorMapL2Promotion.NONE
    assert opts.oob_fill is TensorMapOOBFill.NONE
    opts = TensorMapDescriptorOptions((4,), element_strides=(2,), data_type=np.float32,
                                      swizzle=2, l2_promotion=TensorMapL2Promotion.L2_128B)
    assert opts.data_type is TensorMapDataType.FLOAT32
    assert opts.swizzle is TensorMapSwizzle.SWIZZLE_64B
    assert opts.element_strides == (2,)
    assert TensorMapDescriptorOptions((4,), data_type="uint16").data_type \
        is TensorMapDataType.UINT16
    assert TensorMapDescriptorOptions((4,), data_type=9).data_type is TensorMapDataType.BFLOAT16


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"box_dim": (0, 8)}, ValueError, r"box_dim\[0\] must be in \[1, 256\], got 0"),
    ({"box_dim": (257,)}, ValueError, r"box_dim\[0\] must be in \[1, 256\]"),
    ({"box_dim": ()}, ValueError, "box_dim must have 1 to 5 entries"),
    ({"box_dim": (1,) * 6}, ValueError, "box_dim must have 1 to 5 entries"),
    ({"box_dim": 8}, TypeError, "box_dim must be a tuple of ints"),
    ({"box_dim": (8.0,)}, TypeError, r"box_dim\[0\] must be an int"),
    ({"box_dim": (True,)}, TypeError, r"box_dim\[0\] must be an int, not bool"),
    ({"box_dim": (8,), "element_strides": (9,)}, ValueError,
     r"element_strides\[0\] must be in \[1, 8\]"),
    ({"box_dim": (8, 8), "element_strides": (1,)}, ValueError,
     "element_strides has 1 entries but box_dim has 2"),
    ({"box_dim": (8,), "data_type": np.complex64}, ValueError, "data_type: dtype complex64"),
    ({"box_dim": (8,), "data_type": 13}, ValueError, "data_type must be a TensorMapDataType"),
    ({"box_dim": (8,), "data_type": object()}, TypeError, "data_type must be a TensorMapDataType"),
    ({"box_dim": (8,), "swizzle": 4}, ValueError, "swizzle must be a TensorMapSwizzle"),
    ({"box_dim": (8,), "swizzle": "128B"}, TypeError, "swizzle must be a TensorMapSwizzle"),
    ({"box_dim": (8,), "interleave": TensorMapSwizzle.NONE}, TypeError,
     "interleave must be a TensorMapInterleave"),
    ({"box_dim": (8,), "l2_promotion": 7}, ValueError, "l2_promotion must be"),
    ({"box_dim": (8,), "oob_fill": 2}, ValueError, "oob_fill must be a TensorMapOOBFill"),
])
def test_options_refuse_bad_values(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        TensorMapDescriptorOptions(**kwargs)


# -- as_tensor_map: the checks made before the device is looked at -----------------------------

def test_as_tensor_map_refuses_host_memory_after_the_checks_pass():
    view = view_of(aligned((16, 32)))
    with pytest.raises(ValueError, match="must be of device memory"):
        view.as_tensor_map((8, 8))
    with pytest.raises(ValueError, match="must be of device memory"):
        view.as_tensor_map(options={"box_dim": (8, 8)})
    with pytest.raises(ValueError, match="must be of device memory"):
        view.as_tensor_map(options=TensorMapDescriptorOptions((8, 8)))


def test_as_tensor_map_argument_forms():
    view = view_of(aligned((16, 32)))
    with pytest.raises(TypeError, match="box_dim is required"):
        view.as_tensor_map()
    with pytest.raises(TypeError, match="either options= or box_dim"):
        view.as_tensor_map((8, 8), options={"box_dim": (8, 8)})
    with pytest.raises(TypeError, match="either options= or box_dim"):
        view.as_tensor_map(options={"box_dim": (8, 8)}, swizzle=TensorMapSwizzle.NONE)
    with pytest.raises(TypeError, match="unknown field"):
        view.as_tensor_map(options={"box_dim": (8, 8), "box": 1})
    with pytest.raises(TypeError, match="options must be a TensorMapDescriptorOptions"):
        view.as_tensor_map(options=[8, 8])
    with pytest.raises(ValueError, match=r"box_dim\[1\] must be in \[1, 256\]"):
        view.as_tensor_map((8, 300))


@pytest.mark.parametrize("make, kwargs, exc, match", [
    (lambda: aligned((2,) * 6), {"box_dim": (1,) * 5}, ValueError, "rank must be 1 to 5, got 6"),
    (lambda: aligned((16, 32)), {"box_dim": (8,)}, ValueError,
     "box_dim has 1 entries for a tensor of rank 2"),
    (lambda: aligned((16, 32)), {"box_dim": (8, 8), "element_strides": (1, 1, 1)},
     ValueError, "element_strides has 3 entries but box_dim has 2"),
    (lambda: aligned((16, 32), offset=4), {"box_dim": (8, 8)}, ValueError,
     "is not 16-byte aligned"),
    (lambda: aligned((16, 32))[:, ::2], {"box_dim": (8, 8)}, ValueError,
     "last dimension must be contiguous"),
    (lambda: aligned((16, 3)), {"box_dim": (8, 4)}, ValueError,
     "stride 12 bytes in dimension 0 must be a positive multiple of 16"),
    (lambda: aligned((16, 32))[::-1], {"box_dim": (8, 8)}, ValueError,
     "stride -128 bytes in dimension 0 must be a positive multiple of 16"),
    (lambda: aligned((16, 32)), {"box_dim": (8, 3)}, ValueError,
     r"box_dim\[1\] \* itemsize = 12 bytes must be a multiple of 16"),
    (lambda: aligned((16, 32)), {"box_dim": (8, 16), "swizzle": TensorMapSwizzle.SWIZZLE_32B},
     ValueError, "64 bytes exceeds the SWIZZLE_32B span of 32 bytes"),
    (lambda: aligned((16, 32), np.int32), {"box_dim": (8, 8),
                                           "oob_fill": TensorMapOOBFill.NAN_REQUEST_ZERO_FMA},
     ValueError, "NAN_REQUEST_ZERO_FMA needs a floating-point data_type, got INT32"),
    (lambda: aligned((16, 32)), {"box_dim": (8, 8),
                                 "interleave": TensorMapInterleave.INTERLEAVE_16B},
     ValueError, "needs a tensor of rank 3 or more"),
    (lambda: aligned((4, 16, 32)), {"box_dim": (2, 8, 8),
                                    "interleave": TensorMapInterleave.INTERLEAVE_32B},
     ValueError, "INTERLEAVE_32B needs swizzle SWIZZLE_32B"),
    (lambda: aligned((16, 32)), {"box_dim": (8, 8), "data_type": np.float64}, ValueError,
     "data_type FLOAT64 is 8 bytes per element but the view's items are 4 bytes: counted "
     "in FLOAT64 elements, the view's shape and strides would reach past the end"),
    (lambda: aligned((16, 32), np.int8), {"box_dim": (8, 16)}, ValueError,
     "dtype int8 has no tensor-map type"),
    (lambda: aligned((16, 32), np.complex64), {"box_dim": (8, 8)}, ValueError,
     "dtype complex64 has no tensor-map type"),
])
def test_as_tensor_map_layout_checks(make, kwargs, exc, match):
    view = view_of(make())
    with pytest.raises(exc, match=match):
        view.as_tensor_map(**kwargs)


@pytest.mark.parametrize("data_type", [TensorMapDataType.UINT8, np.uint16])
def test_as_tensor_map_counts_the_view_in_a_smaller_data_type(data_type):
    # As in cuda.core: the view's shape and strides count data_type elements, which stay inside
    # the view's memory when the type is smaller (refused here only for being host memory).
    view = view_of(aligned((16, 32), np.float32))
    with pytest.raises(ValueError, match="must be of device memory"):
        view.as_tensor_map((8, 16), data_type=data_type)


def test_as_tensor_map_reinterprets_with_a_data_type_of_the_same_size():
    # int8 has no tensor-map type of its own; UINT8 copies the same bits and passes the checks
    # (refused only for being host memory).
    view = view_of(aligned((16, 32), np.int8))
    with pytest.raises(ValueError, match="must be of device memory"):
        view.as_tensor_map((8, 16), data_type=TensorMapDataType.UINT8)


# -- the descriptor as a kernel argument (packing only) -----------------------------------------

def _blank_descriptor():
    # __new__ runs only __cinit__: an all-zero descriptor, enough to test the packing.
    return TensorMapDescriptor.__new__(TensorMapDescriptor)


def test_descriptor_packs_to_its_128_bytes():
    desc = _blank_descriptor()
    assert _packed_arguments(desc) == [bytes(128)]
    assert _packed_arguments(desc, np.int32(5), sizes=[128, 4]) == [
        bytes(128), np.int32(5).tobytes()]
    # Raw bytes to the kind check: any declared type passes it; the size check decides.
    assert _packed_arguments(desc, declared=["CUtensorMap_st"], sizes=[128]) == [bytes(128)]


def test_descriptor_for_a_parameter_of_another_size_is_refused():
    desc = _blank_descriptor()
    with pytest.raises(TypeError, match=r"kernel argument 0: TensorMapDescriptor packs to 128 "
                                        r"bytes but the kernel's parameter 0 is 8 bytes; .*"
                                        r"const __grid_constant__ CUtensorMap"):
        _packed_arguments(desc, sizes=[8])
    with pytest.raises(TypeError, match="packs to 128 bytes but the kernel's parameter 1 is 64"):
        _packed_arguments(np.int32(1), desc, declared=["int", "float*"], sizes=[4, 64])


# -- GPU: a TMA copy of one box ------------------------------------------------------------------

ROWS, COLS = 24, 40         # the global tensor, float32
BOX_ROWS, BOX_COLS = 8, 16  # one box: 64-byte rows

_TMA_SOURCE = r"""
struct alignas(64) TmaMap { unsigned long long opaque[16]; };

extern "C" __global__ void load_tile(const __grid_constant__ TmaMap tmap, float* out, int x,
                                     int y)
{
    __shared__ alignas(128) float tile[BOX_ROWS * BOX_COLS];
    __shared__ alignas(8) unsigned long long bar;
    unsigned bar_addr = (unsigned)__cvta_generic_to_shared(&bar);
    unsigned tile_addr = (unsigned)__cvta_generic_to_shared(tile);
    if (threadIdx.x == 0) {
        unsigned long long state;
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_addr) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;"
                     : "=l"(state) : "r"(bar_addr), "r"((unsigned)sizeof(tile)) : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(tile_addr), "l"((unsigned long long)&tmap), "r"(x), "r"(y),
                        "r"(bar_addr)
                     : "memory");
        unsigned done = 0, parity = 0;
        while (!done) {
            asm volatile("{\n\t.reg .pred p;\n\t"
                         "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                         "selp.u32 %0, 1, 0, p;\n\t}"
                         : "=r"(done) : "r"(bar_addr), "r"(parity) : "memory");
        }
        (void)state;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < BOX_ROWS * BOX_COLS; i += blockDim.x)
        out[i] = tile[i];
}

extern "C" __global__ void takes_pointer(float* p) { if (p) p[0] = 1.0f; }
"""


def _tma_source():
    return f"#define BOX_ROWS {BOX_ROWS}\n#define BOX_COLS {BOX_COLS}\n" + _TMA_SOURCE


def test_tma_kernel_compiles_with_a_64_byte_aligned_128_byte_parameter():
    # NVRTC and ptxas need no GPU: the inline PTX of the GPU tests is checked here too.
    opts = ProgramOptions(arch="sm_90", std="c++17")
    ptx = bytes(Program(_tma_source(), "c++", options=opts).compile("ptx").code).decode()
    assert ".param .align 64 .b8 load_tile_param_0[128]" in ptx
    assert "cp.async.bulk.tensor.2d" in ptx
    assert len(bytes(Program(_tma_source(), "c++", options=opts).compile("cubin").code)) > 0


@pytest.fixture(scope="module")
def tma():
    from cuda_core import Device

    dev = Device(0)
    dev.set_current()
    if dev.compute_capability < (9, 0):
        pytest.skip(f"TMA needs compute capability 9.0; device 0 is {dev.compute_capability}")
    opts = ProgramOptions(arch="sm_90", std="c++17")
    mod = Program(_tma_source(), "c++", options=opts).compile("cubin")
    return mod.get_kernel("load_tile"), mod.get_kernel("takes_pointer")


def _device_matrix(dev, stream, values):
    buf = dev.allocate(values.nbytes, stream=stream)
    stream.sync()
    put(buf, values, stream, dtype=np.float32)
    return buf, StridedMemoryView.from_buffer(buf, values.shape, dtype=np.float32)


def _load(kernel, stream, dev, desc, x, y):
    out = dev.allocate(BOX_ROWS * BOX_COLS * 4, stream=stream)
    try:
        launch(stream, LaunchConfig(grid=1, block=128), kernel, desc, out, np.int32(x),
               np.int32(y))
        stream.sync()
        return fetch(out, stream, dtype=np.float32).reshape(BOX_ROWS, BOX_COLS)
    finally:
        out.close(stream)
        stream.sync()


class _Cai:
    """Four float32 at a device address, through the CUDA Array Interface."""

    def __init__(self, ptr):
        self.__cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (ptr, False),
                                         "strides": None, "version": 3, "stream": None}


def _expected(host, x, y, fill=0.0):
    """The box at column ``x``, row ``y`` of ``host``, ``fill`` outside it."""
    want = np.full((BOX_ROWS, BOX_COLS), fill, np.float32)
    part = host[y:y + BOX_ROWS, x:x + BOX_COLS]
    want[:part.shape[0], :part.shape[1]] = part
    return want


@pytest.mark.gpu
def test_tma_copies_a_box_and_fills_outside_with_zeros(dev, stream, tma):
    load_tile, _ = tma
    host = (np.arange(ROWS * COLS, dtype=np.float32) + 1).reshape(ROWS, COLS)
    buf, view = _device_matrix(dev, stream, host)
    try:
        desc = view.as_tensor_map((BOX_ROWS, BOX_COLS))
        assert isinstance(desc, TensorMapDescriptor)
        assert desc.device == dev
        np.testing.assert_array_equal(_load(load_tile, stream, dev, desc, 16, 8),
                                      host[8:16, 16:32])
        # Past both edges: rows 20..23 and columns 32..39 are in the tensor, the rest is zero.
        got = _load(load_tile, stream, dev, desc, 32, 20)
        np.testing.assert_array_equal(got, _expected(host, 32, 20))
        assert (got[4:, :] == 0).all() and (got[:, 8:] == 0).all() and (got[:4, :8] > 0).all()
    finally:
        buf.close(stream)
        stream.sync()


@pytest.mark.gpu
def test_tma_nan_fill_and_options_object(dev, stream, tma):
    load_tile, _ = tma
    host = (np.arange(ROWS * COLS, dtype=np.float32) + 1).reshape(ROWS, COLS)
    buf, view = _device_matrix(dev, stream, host)
    try:
        opts = TensorMapDescriptorOptions(box_dim=(BOX_ROWS, BOX_COLS), data_type=np.float32,
                                          oob_fill=TensorMapOOBFill.NAN_REQUEST_ZERO_FMA,
                                          l2_promotion=TensorMapL2Promotion.L2_128B)
        desc = view.as_tensor_map(options=opts)
        got = _load(load_tile, stream, dev, desc, 32, 20)
        np.testing.assert_array_equal(got[:4, :8], host[20:24, 32:40])
        assert np.isnan(got[4:, :]).all() and np.isnan(got[:, 8:]).all()
    finally:
        buf.close(stream)
        stream.sync()


@pytest.mark.gpu
def test_tma_replace_address_follows_the_new_tensor(dev, stream, tma):
    load_tile, _ = tma
    first = (np.arange(ROWS * COLS, dtype=np.float32) + 1).reshape(ROWS, COLS)
    second = -first * 3
    buf1, view1 = _device_matrix(dev, stream, first)
    buf2, view2 = _device_matrix(dev, stream, second)
    try:
        desc = view1.as_tensor_map((BOX_ROWS, BOX_COLS))
        np.testing.assert_array_equal(_load(load_tile, stream, dev, desc, 0, 0),
                                      first[:BOX_ROWS, :BOX_COLS])
        desc.replace_address(view2)
        np.testing.assert_array_equal(_load(load_tile, stream, dev, desc, 0, 0),
                                      second[:BOX_ROWS, :BOX_COLS])
        np.testing.assert_array_equal(_load(load_tile, stream, dev, desc, 24, 16),
                                      _expected(second, 24, 16))
        # A misaligned address and host memory are refused before the driver.
        with pytest.raises(ValueError, match="is not 16-byte aligned"):
            desc.replace_address(_Cai(int(buf2.handle) + 4))
        np.testing.assert_array_equal(_load(load_tile, stream, dev, desc, 0, 0),
                                      second[:BOX_ROWS, :BOX_COLS])
        host = StridedMemoryView.from_dlpack(first, stream_ptr=-1)
        with pytest.raises(ValueError, match="must be device memory"):
            desc.replace_address(host)
    finally:
        buf1.close(stream)
        buf2.close(stream)
        stream.sync()


@pytest.mark.gpu
def test_tma_descriptor_refused_by_a_pointer_parameter(dev, stream, tma):
    _, takes_pointer = tma
    host = np.ones((ROWS, COLS), np.float32)
    buf, view = _device_matrix(dev, stream, host)
    try:
        desc = view.as_tensor_map((BOX_ROWS, BOX_COLS))
        with pytest.raises(TypeError, match="TensorMapDescriptor packs to 128 bytes but the "
                                            "kernel's parameter 0 is 8 bytes"):
            launch(stream, LaunchConfig(grid=1, block=1), takes_pointer, desc)
        stream.sync()  # nothing was queued, and the context is fine
    finally:
        buf.close(stream)
        stream.sync()
