"""cuda_core.texture: options and enums (CPU), and arrays, textures and surfaces read back
through kernels (GPU)."""

import ctypes
import math

import numpy as np
import pytest

import cuda_core
from cuda_core import (Buffer, Device, LaunchConfig, LegacyPinnedMemoryResource, Program,
                       ProgramOptions, launch)
from cuda_core.texture import (MipmappedArray, MipmappedArrayOptions, OpaqueArray,
                               OpaqueArrayOptions, ResourceDescriptor, SurfaceObject,
                               TextureObject, TextureObjectOptions)
from cuda_core.typing import AddressModeType, ArrayFormatType, FilterModeType, ReadModeType
from helpers import run_python

# -- kernels ---------------------------------------------------------------------------------

SOURCE = r"""
extern "C" __global__ void sample2d(cudaTextureObject_t tex, const float* xs, const float* ys,
                                    float* out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float>(tex, xs[i], ys[i]);
}

extern "C" __global__ void sample2d_lod(cudaTextureObject_t tex, const float* xs,
                                        const float* ys, float level, float* out,
                                        unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2DLod<float>(tex, xs[i], ys[i], level);
}

extern "C" __global__ void fetch1d(cudaTextureObject_t tex, float* out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<float>(tex, (int)i);
}

extern "C" __global__ void sample2d_u8(cudaTextureObject_t tex, const float* xs,
                                       const float* ys, unsigned int* out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<unsigned char>(tex, xs[i], ys[i]);
}

extern "C" __global__ void sample2d_rgba(cudaTextureObject_t tex, const float* xs,
                                         const float* ys, float4* out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float4>(tex, xs[i], ys[i]);
}

extern "C" __global__ void sample3d(cudaTextureObject_t tex, const float* xs, const float* ys,
                                    const float* zs, float* out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex3D<float>(tex, xs[i], ys[i], zs[i]);
}

extern "C" __global__ void surf_fill(cudaSurfaceObject_t surf, unsigned int w, unsigned int h) {
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
    // The x coordinate of a surface access is in bytes.
    if (x < w && y < h)
        surf2Dwrite<float>((float)(y * 1000 + x), surf, (int)(x * sizeof(float)), (int)y);
}
"""
KERNELS = ("sample2d", "sample2d_lod", "fetch1d", "surf_fill", "sample2d_u8", "sample2d_rgba",
           "sample3d")


def test_kernels_compile_with_nvrtc():
    """The GPU tests' kernels compile (NVRTC needs no GPU): the texture and surface functions
    come from NVRTC's built-in headers."""
    obj = Program(SOURCE, "c++", options=ProgramOptions(arch="sm_90", std="c++17")).compile("ptx")
    ptx = bytes(obj.code).decode() if not isinstance(obj.code, str) else obj.code
    for name in KERNELS:
        assert f".entry {name}(" in ptx
    assert "tex.2d" in ptx and "sust" in ptx and "tex.level.2d" in ptx and "tex.3d" in ptx


# -- enums and options (CPU) -----------------------------------------------------------------

def test_enums_are_string_enums():
    assert [m.value for m in ArrayFormatType] == ["uint8", "uint16", "uint32", "int8", "int16",
                                                  "int32", "float16", "float32"]
    assert [m.value for m in AddressModeType] == ["wrap", "clamp", "mirror", "border"]
    assert [m.value for m in FilterModeType] == ["point", "linear"]
    assert [m.value for m in ReadModeType] == ["element_type", "normalized_float"]
    assert AddressModeType.WRAP == "wrap" and isinstance(FilterModeType.LINEAR, str)
    for name in ("ArrayFormatType", "AddressModeType", "FilterModeType", "ReadModeType"):
        assert name in cuda_core.typing.__all__
    assert cuda_core.texture.OpaqueArray is OpaqueArray


@pytest.mark.parametrize("fmt, expected", [
    ("float32", ArrayFormatType.FLOAT32), (ArrayFormatType.UINT8, ArrayFormatType.UINT8),
    (np.float16, ArrayFormatType.FLOAT16), (np.dtype("int16"), ArrayFormatType.INT16),
    (np.uint32, ArrayFormatType.UINT32),
])
def test_opaque_array_options_format(fmt, expected):
    opts = OpaqueArrayOptions((4, 3), fmt, 2)
    assert opts.format is expected
    assert opts.shape == (4, 3) and opts.num_channels == 2
    assert opts.is_surface_load_store is False


def test_opaque_array_options_shape_list_and_numpy_ints():
    assert OpaqueArrayOptions([np.int64(5), 2, 3], "int8", 4).shape == (5, 2, 3)


@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(shape=(), format="float32", num_channels=1), ValueError, "1, 2 or 3 dimensions"),
    (dict(shape=(1, 2, 3, 4), format="float32", num_channels=1), ValueError, "got 4"),
    (dict(shape=(4, 0), format="float32", num_channels=1), ValueError, "shape[1]"),
    (dict(shape=4, format="float32", num_channels=1), TypeError, "shape"),
    (dict(shape=(4.0,), format="float32", num_channels=1), TypeError, "shape[0]"),
    (dict(shape=(np.True_,), format="float32", num_channels=1), TypeError, "shape[0]"),
    (dict(shape=(4,), format="float64", num_channels=1), ValueError, "format"),
    (dict(shape=(4,), format=np.float64, num_channels=1), ValueError, "format"),
    (dict(shape=(4,), format=np.dtype(">f4"), num_channels=1), ValueError, "byte order"),
    (dict(shape=(4,), format=None, num_channels=1), ValueError, "format"),
    (dict(shape=(4,), format=3, num_channels=1), TypeError, "format"),
    (dict(shape=(4,), format="float32", num_channels=3), ValueError, "1, 2 or 4"),
    (dict(shape=(4,), format="float32", num_channels=1.0), TypeError, "num_channels"),
    (dict(shape=(4,), format="float32", num_channels=1, is_surface_load_store="no"),
     TypeError, "is_surface_load_store"),
])
def test_opaque_array_options_errors(kwargs, exc, words):
    with pytest.raises(exc, match="OpaqueArrayOptions") as info:
        OpaqueArrayOptions(**kwargs)
    assert words in str(info.value)


def test_mipmapped_array_options():
    opts = MipmappedArrayOptions((8, 5), "float32", 1, 4, is_surface_load_store=True)
    assert (opts.num_levels, opts.is_surface_load_store) == (4, True)
    with pytest.raises(ValueError, match=r"num_levels must be at most 4"):
        MipmappedArrayOptions((8, 5), "float32", 1, 5)
    with pytest.raises(ValueError, match=r"num_levels must be >= 1"):
        MipmappedArrayOptions((8,), "float32", 1, 0)
    with pytest.raises(ValueError, match="num_channels"):
        MipmappedArrayOptions((8,), "float32", 3, 1)
    assert MipmappedArrayOptions((1,), "uint8", 1, 1).num_levels == 1


def test_texture_object_options_defaults():
    opts = TextureObjectOptions()
    assert opts.address_mode is AddressModeType.CLAMP
    assert opts.filter_mode is FilterModeType.POINT
    assert opts.read_mode is ReadModeType.ELEMENT_TYPE
    assert opts.mipmap_filter_mode is FilterModeType.POINT
    assert (opts.normalized_coords, opts.srgb, opts.disable_trilinear_optimization,
            opts.seamless_cubemap) == (False, False, False, False)
    assert opts.max_anisotropy == 0
    assert (opts.mipmap_level_bias, opts.min_mipmap_level_clamp,
            opts.max_mipmap_level_clamp) == (0.0, 0.0, 0.0)
    assert opts.border_color is None


def test_texture_object_options_strings_and_tuples():
    opts = TextureObjectOptions(address_mode=("wrap", "mirror"), filter_mode="linear",
                                read_mode="normalized_float", border_color=(1, 0.5),
                                max_anisotropy=np.int32(16), mipmap_level_bias=1)
    assert opts.address_mode == (AddressModeType.WRAP, AddressModeType.MIRROR)
    assert opts.filter_mode is FilterModeType.LINEAR
    assert opts.read_mode is ReadModeType.NORMALIZED_FLOAT
    assert opts.border_color == (1.0, 0.5)
    assert opts.max_anisotropy == 16 and opts.mipmap_level_bias == 1.0
    # An unsigned int, as the driver's field and cuda.core take it (the hardware's limit is 16).
    assert TextureObjectOptions(max_anisotropy=17).max_anisotropy == 17
    assert TextureObjectOptions(address_mode="border").address_mode is AddressModeType.BORDER


@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(address_mode=("wrap",) * 4), ValueError, "1 to 3"),
    (dict(address_mode=()), ValueError, "1 to 3"),
    (dict(address_mode="repeat"), ValueError, "address_mode"),
    (dict(address_mode=("wrap", "bad")), ValueError, "address_mode[1]"),
    (dict(filter_mode="cubic"), ValueError, "filter_mode"),
    (dict(read_mode=0), TypeError, "read_mode"),
    (dict(mipmap_filter_mode="nearest"), ValueError, "mipmap_filter_mode"),
    (dict(normalized_coords="no"), TypeError, "normalized_coords"),
    (dict(srgb="no"), TypeError, "srgb"),
    (dict(max_anisotropy=2**32), OverflowError, "max_anisotropy"),
    (dict(max_anisotropy=-1), OverflowError, "max_anisotropy"),
    (dict(mipmap_level_bias=math.nan), ValueError, "mipmap_level_bias"),
    (dict(mipmap_level_bias="1"), TypeError, "mipmap_level_bias"),
    (dict(min_mipmap_level_clamp=2.0, max_mipmap_level_clamp=1.0), ValueError, "must not"),
    (dict(border_color=(1, 2, 3, 4, 5)), ValueError, "1 to 4"),
    (dict(border_color=()), ValueError, "1 to 4"),
    (dict(border_color=1.0), TypeError, "border_color"),
    (dict(border_color=(1.0, math.inf)), ValueError, "border_color[1]"),
])
def test_texture_object_options_errors(kwargs, exc, words):
    with pytest.raises(exc, match="TextureObjectOptions") as info:
        TextureObjectOptions(**kwargs)
    assert words in str(info.value)


@pytest.mark.parametrize("cls", [OpaqueArray, MipmappedArray, ResourceDescriptor,
                                 TextureObject, SurfaceObject])
def test_not_constructible(cls):
    with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
        cls()


def test_resource_descriptor_type_checks():
    with pytest.raises(TypeError, match="from_opaque_array.*OpaqueArray, not str"):
        ResourceDescriptor.from_opaque_array("x")
    with pytest.raises(TypeError, match="from_mipmapped_array.*MipmappedArray"):
        ResourceDescriptor.from_mipmapped_array(None)
    with pytest.raises(TypeError, match="from_linear.*buffer must be a Buffer, not bytearray"):
        ResourceDescriptor.from_linear(bytearray(16), format="float32", num_channels=1)
    with pytest.raises(TypeError, match="from_pitch2d.*buffer must be a Buffer"):
        ResourceDescriptor.from_pitch2d(0, format="float32", num_channels=1, width=1,
                                        height=1, pitch_bytes=4)


# -- GPU -------------------------------------------------------------------------------------

W, H = 8, 4


@pytest.fixture(scope="module")
def kern():
    dev = Device(0)
    dev.set_current()
    opts = ProgramOptions(arch=f"sm_{dev.arch}", std="c++17")
    mod = Program(SOURCE, "c++", options=opts).compile("cubin")
    return {name: mod.get_kernel(name) for name in KERNELS}


def _upload(dev, stream, array):
    """A device Buffer holding ``array``'s bytes."""
    array = np.ascontiguousarray(array)
    staging = LegacyPinnedMemoryResource().allocate(array.nbytes)
    try:
        np.ctypeslib.as_array((ctypes.c_uint8 * array.nbytes).from_address(
            int(staging.handle)))[:] = array.view(np.uint8).ravel()
        buf = dev.allocate(array.nbytes, stream=stream)
        buf.copy_from(staging, stream=stream)
        stream.sync()
        return buf
    finally:
        staging.close()


def _upload_aligned(dev, stream, array, offset=0):
    """A Buffer view holding ``array``'s bytes at an address ``offset`` bytes past a multiple
    of the device's texture alignment (pool allocations need not meet it), and its owner."""
    align = dev.properties.texture_alignment
    array = np.ascontiguousarray(array)
    big = dev.allocate(array.nbytes + 2 * align, stream=stream)
    start = -(-int(big.handle) // align) * align + offset
    view = Buffer.from_handle(start, array.nbytes, owner=big)
    staging = _upload(dev, stream, array)
    view.copy_from(staging, stream=stream)
    stream.sync()
    staging.close()
    return view, big


def _download(buf, stream, dtype=np.float32):
    staging = LegacyPinnedMemoryResource().allocate(buf.size)
    try:
        buf.copy_to(staging, stream=stream)
        stream.sync()
        raw = np.ctypeslib.as_array((ctypes.c_uint8 * buf.size).from_address(
            int(staging.handle)))
        return raw.copy().view(dtype)
    finally:
        staging.close()


def _sample(dev, stream, kern, tex, xs, ys, level=None):
    """tex2D (or tex2DLod at ``level``) of ``tex`` at each (xs[i], ys[i])."""
    xs = np.asarray(xs, np.float32).ravel()
    ys = np.asarray(ys, np.float32).ravel()
    n = xs.size
    bx, by = _upload(dev, stream, xs), _upload(dev, stream, ys)
    out = dev.allocate(n * 4, stream=stream)
    cfg = LaunchConfig(grid=(n + 63) // 64, block=64)
    if level is None:
        launch(stream, cfg, kern["sample2d"], np.uint64(tex.handle), bx, by, out, np.uint32(n))
    else:
        launch(stream, cfg, kern["sample2d_lod"], np.uint64(tex.handle), bx, by,
               np.float32(level), out, np.uint32(n))
    result = _download(out, stream)
    for b in (bx, by, out):
        b.close()
    return result


def _data(w=W, h=H, base=0.0):
    """(h, w) float32 texels, all different: row-major, width fastest."""
    return (base + np.arange(w * h, dtype=np.float32).reshape(h, w) * 3 + 1).astype(np.float32)


def _array(dev, stream, data, **kw):
    h, w = data.shape
    arr = dev.create_opaque_array(OpaqueArrayOptions((w, h), "float32", 1, **kw))
    arr.copy_from(data, stream=stream)
    return arr


@pytest.mark.gpu
def test_opaque_array_properties_and_roundtrip(dev, stream):
    data = _data()
    with dev.create_opaque_array({"shape": (W, H), "format": np.float32,
                                  "num_channels": 1}) as arr:
        assert arr.shape == (W, H) and arr.format is ArrayFormatType.FLOAT32
        assert (arr.num_channels, arr.element_bytes, arr.size_bytes) == (1, 4, W * H * 4)
        assert arr.device == dev and arr.is_surface_load_store is False
        assert int(arr.handle) != 0
        arr.copy_from(data, stream=stream)
        back = np.zeros_like(data)
        arr.copy_to(back, stream=stream)
        np.testing.assert_array_equal(back, data)
        # Through device Buffers too.
        src = _upload(dev, stream, data[::-1].copy())
        dst = dev.allocate(arr.size_bytes, stream=stream)
        arr.copy_from(src, stream=stream)
        arr.copy_to(dst, stream=stream)
        np.testing.assert_array_equal(_download(dst, stream).reshape(H, W), data[::-1])
        src.close()
        dst.close()
    assert arr.is_closed
    with pytest.raises(RuntimeError, match="closed"):
        arr.copy_to(back, stream=stream)


@pytest.mark.gpu
def test_opaque_array_1d_3d_multichannel_roundtrip(dev, stream):
    for shape, fmt, ch, dtype in (((7,), "uint8", 4, np.uint8), ((3, 2, 5), "int16", 2,
                                                                  np.int16)):
        arr = dev.create_opaque_array(OpaqueArrayOptions(shape, fmt, ch))
        n = math.prod(shape) * ch
        data = (np.arange(n) % 100).astype(dtype)
        assert arr.size_bytes == data.nbytes
        arr.copy_from(data, stream=stream)
        back = np.zeros_like(data)
        arr.copy_to(back, stream=stream)
        np.testing.assert_array_equal(back, data)
        arr.close()


@pytest.mark.gpu
def test_opaque_array_copy_argument_errors(dev, stream):
    arr = dev.create_opaque_array(OpaqueArrayOptions((W, H), "float32", 1))
    with pytest.raises(ValueError, match=r"copy_from\(\): src has 64 bytes; the array holds 128"):
        arr.copy_from(np.zeros(16, np.float32), stream=stream)
    with pytest.raises(ValueError, match="C-contiguous"):
        arr.copy_from(np.zeros((2 * H, W), np.float32)[::2], stream=stream)
    with pytest.raises(ValueError, match="writable"):
        arr.copy_to(bytes(arr.size_bytes), stream=stream)
    with pytest.raises(TypeError, match="buffer protocol, not int"):
        arr.copy_to(5, stream=stream)
    with pytest.raises(TypeError, match="stream"):
        arr.copy_from(np.zeros((H, W), np.float32), stream=None)
    small = dev.allocate(16, stream=stream)
    with pytest.raises(ValueError, match="Buffer of 16 bytes"):
        arr.copy_to(small, stream=stream)
    small.close()
    arr.close()


@pytest.mark.gpu
def test_opaque_array_device_limit(dev):
    most = dev.properties.maximum_texture1d_width
    with pytest.raises(ValueError, match="exceeds device 0's 1D texture limit"):
        dev.create_opaque_array(OpaqueArrayOptions((most + 1,), "uint8", 1))
    with pytest.raises(TypeError, match="options is required"):
        dev.create_opaque_array(None)


@pytest.mark.gpu
def test_texture_point_filter_exact(dev, stream, kern):
    data = _data()
    arr = _array(dev, stream, data)
    tex = dev.create_texture_object(resource=ResourceDescriptor.from_opaque_array(arr))
    assert tex.options == TextureObjectOptions()
    assert tex.resource.kind == "array" and tex.resource.source is arr
    assert isinstance(tex.handle, int) and 0 < tex.handle < 2 ** 64
    assert tex.device == dev
    ys, xs = np.mgrid[0:H, 0:W].astype(np.float32)
    # Anywhere inside a texel reads that texel exactly.
    for dx, dy in ((0.5, 0.5), (0.1, 0.9), (0.9, 0.1)):
        got = _sample(dev, stream, kern, tex, xs + dx, ys + dy)
        np.testing.assert_array_equal(got, data.ravel())
    tex.close()
    arr.close()


@pytest.mark.gpu
def test_texture_linear_filter_centers_and_midpoints(dev, stream, kern):
    data = _data()
    arr = _array(dev, stream, data)
    tex = dev.create_texture_object(resource=arr, options={"filter_mode": "linear"})
    ys, xs = np.mgrid[0:H, 0:W].astype(np.float32)
    # At texel centers, linear filtering returns the texel.
    got = _sample(dev, stream, kern, tex, xs + 0.5, ys + 0.5)
    np.testing.assert_allclose(got, data.ravel(), rtol=1e-5)
    # Halfway between horizontal neighbours: their mean.
    hy, hx = np.mgrid[0:H, 0:W - 1].astype(np.float32)
    got = _sample(dev, stream, kern, tex, hx + 1.0, hy + 0.5)
    np.testing.assert_allclose(got, ((data[:, :-1] + data[:, 1:]) / 2).ravel(), rtol=1e-5)
    # At the corner of four texels: the mean of the four.
    qy, qx = np.mgrid[0:H - 1, 0:W - 1].astype(np.float32)
    got = _sample(dev, stream, kern, tex, qx + 1.0, qy + 1.0)
    quad = (data[:-1, :-1] + data[:-1, 1:] + data[1:, :-1] + data[1:, 1:]) / 4
    np.testing.assert_allclose(got, quad.ravel(), rtol=1e-5)
    tex.close()
    arr.close()


@pytest.mark.gpu
def test_texture_clamp_vs_wrap_normalized(dev, stream, kern):
    data = _data()
    arr = _array(dev, stream, data)
    wrap = dev.create_texture_object(resource=arr, options=TextureObjectOptions(
        address_mode="wrap", normalized_coords=True))
    clamp = dev.create_texture_object(resource=arr, options=TextureObjectOptions(
        address_mode=("clamp", "clamp"), normalized_coords=True))
    # Texel columns -3 .. W+2 of row 1, at texel centers, in normalized coordinates.
    cols = np.arange(-3, W + 3)
    u = (cols + 0.5) / W
    v = np.full_like(u, (1 + 0.5) / H)
    got_wrap = _sample(dev, stream, kern, wrap, u, v)
    got_clamp = _sample(dev, stream, kern, clamp, u, v)
    np.testing.assert_array_equal(got_wrap, data[1, cols % W])
    np.testing.assert_array_equal(got_clamp, data[1, np.clip(cols, 0, W - 1)])
    with pytest.raises(RuntimeError, match="still use this array"):
        arr.close()
    wrap.close()
    clamp.close()
    arr.close()
    assert arr.is_closed


@pytest.mark.gpu
def test_texture_argument_errors(dev, stream):
    arr = dev.create_opaque_array(OpaqueArrayOptions((W, H), "uint8", 1))
    with pytest.raises(ValueError, match="needs normalized_coords"):
        dev.create_texture_object(resource=arr, options={"address_mode": "wrap"})
    with pytest.raises(ValueError, match="linear filtering needs a float result"):
        dev.create_texture_object(resource=arr, options={"filter_mode": "linear"})
    with pytest.raises(TypeError, match="resource must be"):
        dev.create_texture_object(resource="array")
    with pytest.raises(ValueError, match="is_surface_load_store=True"):
        dev.create_surface_object(resource=arr)
    # Linear filtering of 8-bit integers read as normalized floats is allowed.
    tex = dev.create_texture_object(resource=arr, options={"filter_mode": "linear",
                                                           "read_mode": "normalized_float"})
    tex.close()
    i32 = dev.create_opaque_array(OpaqueArrayOptions((W,), "int32", 1))
    with pytest.raises(ValueError, match="normalized_float"):
        dev.create_texture_object(resource=i32, options={"read_mode": "normalized_float"})
    i32.close()
    arr.close()
    with pytest.raises(RuntimeError, match="closed"):
        dev.create_texture_object(resource=arr)


@pytest.mark.gpu
def test_surface_write_then_copy_to(dev, stream, kern):
    arr = dev.create_opaque_array(OpaqueArrayOptions((W, H), "float32", 1,
                                                     is_surface_load_store=True))
    assert arr.is_surface_load_store
    surf = dev.create_surface_object(resource=ResourceDescriptor.from_opaque_array(arr))
    assert surf.resource.source is arr and surf.device == dev
    assert isinstance(surf.handle, int) and surf.handle != 0
    launch(stream, LaunchConfig(grid=(1, 1), block=(W, H)), kern["surf_fill"],
           np.uint64(surf.handle), np.uint32(W), np.uint32(H))
    back = np.zeros((H, W), np.float32)
    arr.copy_to(back, stream=stream)
    ys, xs = np.mgrid[0:H, 0:W]
    np.testing.assert_array_equal(back, (ys * 1000 + xs).astype(np.float32))
    with pytest.raises(RuntimeError, match="still use this array"):
        arr.close()
    surf.close()
    assert surf.is_closed
    with pytest.raises(RuntimeError, match="closed"):
        surf.handle
    arr.close()


@pytest.mark.gpu
def test_linear_texture_reads_back(dev, stream, kern):
    n = 100
    data = (np.arange(n, dtype=np.float32) * 0.25 - 7).astype(np.float32)
    buf, owner = _upload_aligned(dev, stream, data)
    rd = ResourceDescriptor.from_linear(buf, format="float32", num_channels=1)
    assert (rd.kind, rd.size_bytes, rd.source) == ("linear", n * 4, buf)
    tex = dev.create_texture_object(resource=rd)
    out = dev.allocate(n * 4, stream=stream)
    launch(stream, LaunchConfig(grid=2, block=64), kern["fetch1d"], np.uint64(tex.handle), out,
           np.uint32(n))
    np.testing.assert_array_equal(_download(out, stream), data)
    # A prefix of the buffer.
    part = dev.create_texture_object(resource=ResourceDescriptor.from_linear(
        buf, format=np.float32, num_channels=1, size_bytes=40))
    out.fill(0, stream=stream)  # so that the first launch's results cannot pass for these
    launch(stream, LaunchConfig(grid=1, block=10), kern["fetch1d"], np.uint64(part.handle),
           out, np.uint32(10))
    got = _download(out, stream)
    np.testing.assert_array_equal(got[:10], data[:10])
    assert not got[10:].any()
    with pytest.raises(ValueError, match="exceeds the buffer's 400 bytes"):
        ResourceDescriptor.from_linear(buf, format="float32", num_channels=1, size_bytes=404)
    with pytest.raises(ValueError, match="multiple of the element size"):
        ResourceDescriptor.from_linear(buf, format="float32", num_channels=2, size_bytes=12)
    with pytest.raises(ValueError, match="only filter_mode='point'"):
        dev.create_texture_object(resource=rd, options={"filter_mode": "linear"})
    for t in (tex, part, out):
        t.close()
    if dev.properties.texture_alignment > 4:
        skewed, skewed_owner = _upload_aligned(dev, stream, data, offset=4)
        with pytest.raises(ValueError, match="texture alignment"):
            dev.create_texture_object(resource=ResourceDescriptor.from_linear(
                skewed, format="float32", num_channels=1))
        skewed.close()
        skewed_owner.close()
    buf.close()
    owner.close()


@pytest.mark.gpu
def test_pitch2d_texture_reads_back(dev, stream, kern):
    w, h = 5, 3
    align = dev.properties.texture_pitch_alignment
    pitch = -(-w * 4 // align) * align
    data = _data(w, h)
    rows = np.zeros((h, pitch // 4), np.float32)
    rows[:, :w] = data
    buf, owner = _upload_aligned(dev, stream, rows)
    rd = ResourceDescriptor.from_pitch2d(buf, format="float32", num_channels=1, width=w,
                                         height=h, pitch_bytes=pitch)
    assert (rd.kind, rd.width, rd.height, rd.pitch_bytes) == ("pitch2d", w, h, pitch)
    tex = dev.create_texture_object(resource=rd)
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    got = _sample(dev, stream, kern, tex, xs + 0.5, ys + 0.5)
    np.testing.assert_array_equal(got, data.ravel())
    tex.close()
    with pytest.raises(ValueError, match="less than a row"):
        ResourceDescriptor.from_pitch2d(buf, format="float32", num_channels=1, width=w,
                                        height=h, pitch_bytes=w * 4 - 4)
    with pytest.raises(ValueError, match="need"):
        ResourceDescriptor.from_pitch2d(buf, format="float32", num_channels=1, width=w,
                                        height=h + 1, pitch_bytes=pitch)
    if align > 4:
        bad = ResourceDescriptor.from_pitch2d(buf, format="float32", num_channels=1, width=1,
                                              height=h, pitch_bytes=pitch - 4)
        with pytest.raises(ValueError, match="pitch alignment"):
            dev.create_texture_object(resource=bad)
    buf.close()
    owner.close()


@pytest.mark.gpu
def test_mipmapped_array_levels(dev, stream, kern):
    opts = MipmappedArrayOptions((W, W), "float32", 1, 4)
    mip = dev.create_mipmapped_array(opts)
    assert (mip.shape, mip.num_levels, mip.num_channels) == ((W, W), 4, 1)
    assert mip.format is ArrayFormatType.FLOAT32 and mip.device == dev
    levels = [mip.get_level(i) for i in range(4)]
    assert [lv.shape for lv in levels] == [(8, 8), (4, 4), (2, 2), (1, 1)]
    assert levels[1].size_bytes == 4 * 4 * 4
    datas = []
    for i, lv in enumerate(levels):
        side = W >> i
        d = _data(side, side, base=1000.0 * i)
        lv.copy_from(d, stream=stream)
        back = np.zeros_like(d)
        lv.copy_to(back, stream=stream)
        np.testing.assert_array_equal(back, d)
        datas.append(d)
    with pytest.raises(ValueError, match="out of range"):
        mip.get_level(4)
    tex = dev.create_texture_object(
        resource=ResourceDescriptor.from_mipmapped_array(mip),
        options=TextureObjectOptions(normalized_coords=True, max_mipmap_level_clamp=3.0))
    for level in (0, 1, 2):
        side = W >> level
        ys, xs = np.mgrid[0:side, 0:side].astype(np.float32)
        got = _sample(dev, stream, kern, tex, (xs + 0.5) / side, (ys + 0.5) / side,
                      level=float(level))
        np.testing.assert_array_equal(got, datas[level].ravel())
    with pytest.raises(RuntimeError, match="still use it"):
        mip.close()
    tex.close()
    with pytest.raises(ValueError, match="mipmapped texture needs normalized_coords"):
        dev.create_texture_object(resource=mip)
    with pytest.raises(ValueError, match="seamless_cubemap needs a cubemap array"):
        dev.create_texture_object(resource=mip, options={"normalized_coords": True,
                                                         "seamless_cubemap": True})
    # A level keeps its parent alive, and refuses every use once the parent is closed.
    lv1 = levels[1]
    del levels
    mip.close()
    with pytest.raises(RuntimeError, match="MipmappedArray that is closed"):
        lv1.copy_to(np.zeros((4, 4), np.float32), stream=stream)
    lv1.close()


@pytest.mark.gpu
def test_surface_over_a_mipmap_level(dev, stream, kern):
    mip = dev.create_mipmapped_array(MipmappedArrayOptions((W, W), "float32", 1, 2,
                                                           is_surface_load_store=True))
    level = mip.get_level(1)
    assert level.shape == (W // 2, W // 2) and level.is_surface_load_store
    surf = dev.create_surface_object(resource=level)
    side = W // 2
    launch(stream, LaunchConfig(grid=(1, 1), block=(side, side)), kern["surf_fill"],
           np.uint64(surf.handle), np.uint32(side), np.uint32(side))
    back = np.zeros((side, side), np.float32)
    level.copy_to(back, stream=stream)
    ys, xs = np.mgrid[0:side, 0:side]
    np.testing.assert_array_equal(back, (ys * 1000 + xs).astype(np.float32))
    # The surface over a level holds the mipmapped array, not the view.
    with pytest.raises(RuntimeError, match="still use it"):
        mip.close()
    surf.close()
    mip.close()


@pytest.mark.gpu
def test_objects_left_open_at_exit_are_silent():
    """Arrays, textures and surfaces still open when the interpreter exits are released (or
    left to the process's end) without a warning or a crash."""
    code = """if True:
        import numpy as np
        from cuda_core import Device
        from cuda_core.texture import OpaqueArrayOptions, MipmappedArrayOptions
        dev = Device(0)
        dev.set_current()
        s = dev.create_stream()
        arr = dev.create_opaque_array(OpaqueArrayOptions((4, 4), "float32", 1,
                                                         is_surface_load_store=True))
        arr.copy_from(np.ones((4, 4), np.float32), stream=s)
        tex = dev.create_texture_object(resource=arr)
        surf = dev.create_surface_object(resource=arr)
        mip = dev.create_mipmapped_array(MipmappedArrayOptions((4, 4), "uint8", 4, 3))
        level = mip.get_level(2)
        mtex = dev.create_texture_object(resource=mip, options={"normalized_coords": True})
        print("ok")
    """
    result = run_python(code, env={"PYTHONWARNINGS": "always"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"
    for word in ("CUDAWarning", "Traceback", "Exception ignored"):
        assert word not in result.stderr, result.stderr


def _run(dev, stream, kern, name, tex, coords, out_dtype, comps=1):
    """Kernel ``name`` (tex, coordinate arrays..., out, n) over the points ``coords``; returns
    ``out`` as ``(n, comps)`` values of ``out_dtype`` (or ``(n,)`` when ``comps`` is 1)."""
    coords = [np.asarray(c, np.float32).ravel() for c in coords]
    n = coords[0].size
    bufs = [_upload(dev, stream, c) for c in coords]
    itemsize = np.dtype(out_dtype).itemsize * comps
    out = dev.allocate(n * itemsize, stream=stream)
    launch(stream, LaunchConfig(grid=(n + 63) // 64, block=64), kern[name],
           np.uint64(tex.handle), *bufs, out, np.uint32(n))
    result = _download(out, stream, out_dtype)
    for b in bufs + [out]:
        b.close()
    return result.reshape(n, comps) if comps > 1 else result


@pytest.mark.gpu
def test_texture_uint8_element_type_reads_integers(dev, stream, kern):
    data = ((np.arange(W * H) * 37 + 5) % 256).astype(np.uint8).reshape(H, W)
    arr = dev.create_opaque_array(OpaqueArrayOptions((W, H), "uint8", 1))
    arr.copy_from(data, stream=stream)
    tex = dev.create_texture_object(resource=arr)  # read_mode="element_type": no promotion
    ys, xs = np.mgrid[0:H, 0:W].astype(np.float32)
    got = _run(dev, stream, kern, "sample2d_u8", tex, (xs + 0.5, ys + 0.5), np.uint32)
    np.testing.assert_array_equal(got, data.ravel().astype(np.uint32))
    tex.close()
    arr.close()


@pytest.mark.gpu
def test_texture_rgba8_normalized_float(dev, stream, kern):
    data = ((np.arange(W * H * 4) * 29 + 3) % 256).astype(np.uint8).reshape(H, W, 4)
    arr = dev.create_opaque_array(OpaqueArrayOptions((W, H), np.uint8, 4))
    assert arr.element_bytes == 4 and arr.size_bytes == data.nbytes
    arr.copy_from(data, stream=stream)
    tex = dev.create_texture_object(resource=arr, options={"read_mode": "normalized_float"})
    ys, xs = np.mgrid[0:H, 0:W].astype(np.float32)
    got = _run(dev, stream, kern, "sample2d_rgba", tex, (xs + 0.5, ys + 0.5), np.float32, 4)
    np.testing.assert_allclose(got, data.reshape(-1, 4) / np.float32(255), rtol=0, atol=1e-6)
    tex.close()
    arr.close()


@pytest.mark.gpu
def test_texture_3d_point(dev, stream, kern):
    w, h, d = 4, 3, 2
    data = (np.arange(w * h * d, dtype=np.float32) * 2 - 9).reshape(d, h, w)
    arr = dev.create_opaque_array(OpaqueArrayOptions((w, h, d), "float32", 1))
    arr.copy_from(data, stream=stream)
    tex = dev.create_texture_object(resource=arr)
    zs, ys, xs = np.mgrid[0:d, 0:h, 0:w].astype(np.float32)
    got = _run(dev, stream, kern, "sample3d", tex, (xs + 0.5, ys + 0.5, zs + 0.5), np.float32)
    np.testing.assert_array_equal(got, data.ravel())
    tex.close()
    arr.close()
