"""GraphicsResource (OpenGL interop): argument checks (CPU), and OpenGL buffers and images
registered, mapped, written by kernels and read back through OpenGL (GPU, headless EGL).

The GPU tests need an OpenGL library and an EGL device (``libEGL.so.1``, ``libOpenGL.so.0``
and the NVIDIA EGL vendor library): the GPU machine has them once the GL loaders are carried
(see "Headless machines" in docs/opengl.rst). Without them they skip, naming what is missing.
"""

import gc
import os
import textwrap
import threading
import weakref

import numpy as np
import pytest

from cuda_core import (Buffer, CUDAError, Device, GraphicsResource, LaunchConfig, Program,
                       ProgramOptions, launch)
from helpers import run_python
from helpers.gl import GL_TEXTURE_2D, GLUnavailable, open_context

FLAGS = ("none", "read_only", "write_discard", "surface_load_store", "texture_gather")

SOURCE = r"""
extern "C" __global__ void iota(unsigned int* out, unsigned int n, unsigned int base) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = base + i;
}
"""


# -- CPU: construction and argument checks ---------------------------------------------------

def test_not_constructible():
    with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
        GraphicsResource()


@pytest.mark.parametrize("bad, error, match", [
    (1.0, TypeError, "gl_buffer must be an int"),
    (np.True_, TypeError, "gl_buffer must be an int"),
    ("1", TypeError, "gl_buffer must be an int"),
    (-1, ValueError, "between 0 and 4294967295"),
    (1 << 32, ValueError, "between 0 and 4294967295"),
    (0, ValueError, "gl_buffer is 0"),
])
def test_from_gl_buffer_refuses_bad_names_before_the_driver(bad, error, match):
    with pytest.raises(error, match=match):
        GraphicsResource.from_gl_buffer(bad)


@pytest.mark.parametrize("flags, error, match", [
    ("bogus", ValueError, "unknown flag 'bogus'"),
    (("read_only", "nope"), ValueError, "unknown flag 'nope'"),
    (3, TypeError, "flags must be a str, a tuple or list of str, or None, not int"),
    ({"read_only"}, TypeError, "not set"),
    (["read_only", 1], TypeError, "each flag must be a str, not int"),
])
def test_bad_flags_are_refused(flags, error, match):
    with pytest.raises(error, match=match):
        GraphicsResource.from_gl_buffer(1, flags=flags)
    with pytest.raises(error, match=match):
        GraphicsResource.from_gl_image(1, GL_TEXTURE_2D, flags=flags)


@pytest.mark.parametrize("flag", ["surface_load_store", "texture_gather"])
def test_image_flags_are_refused_for_a_buffer(flag):
    # cuGraphicsGLRegisterBuffer takes none, read_only and write_discard only.
    with pytest.raises(ValueError, match=f"flag '{flag}' applies to images"):
        GraphicsResource.from_gl_buffer(1, flags=("read_only", flag))


def test_from_gl_image_refuses_targets_cuda_cannot_register():
    with pytest.raises(ValueError, match=r"target 0x1234 is not one CUDA can register.*"
                                         r"GL_TEXTURE_2D \(0x0de1\)"):
        GraphicsResource.from_gl_image(1, 0x1234)
    with pytest.raises(ValueError, match="image is 0"):
        GraphicsResource.from_gl_image(0, GL_TEXTURE_2D)
    with pytest.raises(TypeError, match="target must be an int"):
        GraphicsResource.from_gl_image(1, "GL_TEXTURE_2D")


def test_stream_argument_is_checked_at_registration():
    with pytest.raises(TypeError, match=r"from_gl_buffer\(\): stream"):
        GraphicsResource.from_gl_buffer(1, stream=5)


def test_a_bare_object_refuses_use_and_closes_quietly():
    res = GraphicsResource.__new__(GraphicsResource)
    assert res.handle == 0 and res.resource_handle == 0
    assert not res.is_mapped and not res.is_closed
    with pytest.raises(TypeError, match=r"map\(\): stream is required"):
        res.map(stream=None)
    with pytest.raises(RuntimeError, match="never registered"):
        res.unmap()
    with pytest.raises(RuntimeError, match="never registered"):
        with res:
            pass
    res.close()
    assert res.is_closed
    with pytest.raises(RuntimeError, match="is closed"):
        res.unmap()


def test_stub_and_signatures_match_cuda_core():
    import inspect

    import cuda_core

    assert "GraphicsResource" in cuda_core.__all__
    map_sig = inspect.signature(GraphicsResource.map)
    assert map_sig.parameters["stream"].kind is inspect.Parameter.KEYWORD_ONLY
    assert map_sig.parameters["stream"].default is inspect.Parameter.empty
    buf_sig = inspect.signature(GraphicsResource.from_gl_buffer)
    assert list(buf_sig.parameters) == ["gl_buffer", "flags", "stream"]
    img_sig = inspect.signature(GraphicsResource.from_gl_image)
    assert list(img_sig.parameters) == ["image", "target", "flags"]


# -- GPU: a headless OpenGL context ----------------------------------------------------------

@pytest.fixture
def gl(dev):
    """The OpenGL entry points of a current headless context on this thread."""
    try:
        ctx = open_context()
    except GLUnavailable as exc:
        pytest.skip(f"no headless OpenGL on this machine: {exc}")
    assert "NVIDIA" in ctx.vendor, ctx.vendor  # the GL device is the CUDA device's vendor
    yield ctx.gl
    ctx.close()


@pytest.fixture(scope="module")
def iota_kernel():
    dev = Device(0)
    dev.set_current()
    arch = "sm_" + "".join(map(str, dev.compute_capability))
    obj = Program(SOURCE, "c++", options=ProgramOptions(arch=arch)).compile("cubin")
    return obj.get_kernel("iota")


def _write_iota(stream, kernel, buf, base):
    n = buf.size // 4
    launch(stream, LaunchConfig(grid=(n + 127) // 128, block=128), kernel, buf, np.uint32(n),
           np.uint32(base))


def _gl_words(gl, name, nbytes):
    gl.glFinish()
    return np.frombuffer(gl.read_buffer(name, nbytes), dtype=np.uint32)


@pytest.mark.gpu
def test_kernel_writes_a_gl_buffer_that_gl_reads_back(dev, stream, gl, iota_kernel):
    n = 4096
    name = gl.create_buffer(bytes(4 * n))
    res = GraphicsResource.from_gl_buffer(name, flags="write_discard")
    assert res.handle != 0 and res.resource_handle == res.handle
    assert not res.is_mapped
    buf = res.map(stream=stream)
    assert isinstance(buf, Buffer) and res.is_mapped
    assert buf.size == 4 * n and buf.handle != 0
    assert buf.memory_resource is None
    assert buf.is_device_accessible and not buf.is_host_accessible
    assert buf.device_id == dev.device_id
    _write_iota(stream, iota_kernel, buf, 1000)
    res.unmap()
    assert buf.is_closed and not res.is_mapped
    stream.sync()
    np.testing.assert_array_equal(_gl_words(gl, name, 4 * n), np.arange(1000, 1000 + n))
    res.close()
    assert res.is_closed
    res.close()  # idempotent
    gl.delete_buffer(name)


@pytest.mark.gpu
def test_gl_data_is_visible_to_cuda_and_each_map_sees_the_last_write(dev, stream, gl,
                                                                      iota_kernel):
    host = np.arange(256, dtype=np.uint32) * 3
    name = gl.create_buffer(host.tobytes())
    with GraphicsResource.from_gl_buffer(name) as res:
        for base in (0, 7):
            with res.map(stream=stream) as buf:
                out = np.empty_like(host)
                buf.copy_to(Buffer.from_handle(out.ctypes.data, out.nbytes), stream=stream)
                stream.sync()
                expected = host if base == 0 else np.arange(7, 7 + 256, dtype=np.uint32)
                np.testing.assert_array_equal(out, expected)
                _write_iota(stream, iota_kernel, buf, 7)
            assert not res.is_mapped
        stream.sync()
    assert res.is_closed
    np.testing.assert_array_equal(_gl_words(gl, name, host.nbytes), np.arange(7, 263))
    gl.delete_buffer(name)


@pytest.mark.gpu
def test_map_and_unmap_state_errors(dev, stream, gl):
    name = gl.create_buffer(bytes(64))
    res = GraphicsResource.from_gl_buffer(name)
    with pytest.raises(RuntimeError, match="is not mapped"):
        res.unmap()
    with pytest.raises(TypeError, match="stream is required"):
        res.map(stream=None)
    buf = res.map(stream=stream)
    with pytest.raises(RuntimeError, match="already mapped"):
        res.map(stream=stream)
    assert "mapped" in repr(res)
    buf.close()  # closing the buffer unmaps
    assert not res.is_mapped
    with pytest.raises(RuntimeError, match="is not mapped"):
        res.unmap()
    buf2 = res.map(stream=stream)  # maps again after the unmap
    other = dev.create_stream()
    res.unmap(stream=other)  # the unmap ordered on another stream
    assert buf2.is_closed and not res.is_mapped
    other.sync()
    closed = dev.create_stream()
    closed.close()
    res.map(stream=stream)
    with pytest.raises(RuntimeError, match="is closed"):
        res.unmap(stream=closed)
    assert res.is_mapped  # a refused unmap leaves the mapping alone
    res.close()
    assert res.is_closed and not res.is_mapped and "closed" in repr(res)
    with pytest.raises(RuntimeError, match="is closed"):
        res.map(stream=stream)
    with pytest.raises(RuntimeError, match="is closed"):
        res.unmap()
    other.close()
    gl.delete_buffer(name)


@pytest.mark.gpu
def test_close_while_mapped_unmaps_and_closes_the_buffer(dev, stream, gl):
    name = gl.create_buffer(bytes(64))
    res = GraphicsResource.from_gl_buffer(name)
    buf = res.map(stream=stream)
    res.close(stream=stream)
    assert res.is_closed and not res.is_mapped and buf.is_closed
    with pytest.raises(RuntimeError, match="is closed"):
        buf.handle
    gl.delete_buffer(name)


@pytest.mark.gpu
def test_with_a_stream_at_registration_maps_on_entry(dev, stream, gl, iota_kernel):
    name = gl.create_buffer(bytes(4 * 64))
    res = GraphicsResource.from_gl_buffer(name, stream=stream)
    with res as buf:
        assert isinstance(buf, Buffer) and res.is_mapped
        _write_iota(stream, iota_kernel, buf, 5)
    assert res.is_closed and buf.is_closed
    stream.sync()
    np.testing.assert_array_equal(_gl_words(gl, name, 4 * 64), np.arange(5, 69))
    gl.delete_buffer(name)


@pytest.mark.gpu
def test_the_resource_holds_its_mapping_until_unmapped_or_dropped(dev, stream, gl):
    name = gl.create_buffer(bytes(64))
    res = GraphicsResource.from_gl_buffer(name)
    # The mapping lasts whether or not the caller keeps the buffer (as in cuda.core).
    res.map(stream=stream)
    gc.collect()
    assert res.is_mapped
    res.unmap(stream=stream)
    assert not res.is_mapped
    # Dropping a mapped resource unmaps, closing its buffer, and unregisters.
    buf = res.map(stream=stream)
    alive = weakref.ref(res)
    del res
    assert alive() is None  # no reference cycle: gone at once, without the collector
    assert buf.is_closed
    # The buffer name is free again for a new registration.
    again = GraphicsResource.from_gl_buffer(name)
    with again.map(stream=stream) as buf:
        zeros = np.zeros(16, np.uint32)
        buf.copy_from(Buffer.from_handle(zeros.ctypes.data, zeros.nbytes), stream=stream)
        stream.sync()
    again.close()
    gl.delete_buffer(name)


@pytest.mark.gpu
def test_a_dlpack_export_keeps_the_mapping_until_released(dev, stream, gl):
    name = gl.create_buffer(bytes(64))
    res = GraphicsResource.from_gl_buffer(name)
    buf = res.map(stream=stream)
    capsule = buf.__dlpack__(stream=-1)
    res.close()
    # Closed, but the export's consumer may still read the memory: still mapped.
    assert res.is_closed and buf.is_closed and res.is_mapped
    del capsule
    gc.collect()
    assert not res.is_mapped
    gl.delete_buffer(name)


@pytest.mark.gpu
def test_images_register_but_do_not_map_to_a_buffer(dev, stream, gl):
    texels = bytes(range(64))
    tex = gl.create_texture_rgba8(4, 4, texels)
    res = GraphicsResource.from_gl_image(tex, GL_TEXTURE_2D,
                                         flags=("surface_load_store", "read_only"))
    assert res.handle != 0
    with pytest.raises(CUDAError, match="maps as a CUDA array, not as a pointer.*"
                                        "CUDA_ERROR_NOT_MAPPED_AS_POINTER"):
        res.map(stream=stream)
    assert not res.is_mapped
    stream.sync()
    # Left unmapped: OpenGL reads it, and a second registration maps the same way.
    assert gl.read_texture_rgba8(tex, 4, 4) == texels
    with pytest.raises(CUDAError, match="NOT_MAPPED_AS_POINTER"):
        res.map(stream=stream)
    res.close()
    assert res.is_closed
    gl.delete_texture(tex)


@pytest.mark.gpu
@pytest.mark.parametrize("flag", ["none", "read_only", "write_discard"])
def test_every_buffer_flag_registers_a_buffer(dev, gl, flag):
    name = gl.create_buffer(bytes(16))
    GraphicsResource.from_gl_buffer(name, flags=flag).close()
    GraphicsResource.from_gl_buffer(name, flags=[flag]).close()
    gl.delete_buffer(name)


@pytest.mark.gpu
@pytest.mark.parametrize("flag", FLAGS)
def test_every_flag_registers_an_image(dev, gl, flag):
    tex = gl.create_texture_rgba8(2, 2, bytes(16))
    GraphicsResource.from_gl_image(tex, GL_TEXTURE_2D, flags=flag).close()
    gl.delete_texture(tex)


@pytest.mark.gpu
def test_names_the_gl_context_does_not_have_are_refused(dev, gl):
    with pytest.raises(CUDAError, match=r"from_gl_buffer\(\): cuGraphicsGLRegisterBuffer "
                                        r"refused the object \(is an OpenGL context current"):
        GraphicsResource.from_gl_buffer(999_999)
    with pytest.raises(CUDAError, match="cuGraphicsGLRegisterImage refused the object"):
        GraphicsResource.from_gl_image(999_999, GL_TEXTURE_2D)
    # The errors are not sticky: the context still works.
    name = gl.create_buffer(bytes(16))
    GraphicsResource.from_gl_buffer(name).close()
    gl.delete_buffer(name)


@pytest.mark.gpu
def test_a_thread_without_contexts_gets_clear_errors(dev, gl):
    name = gl.create_buffer(bytes(16))
    errors = {}

    def register(set_cuda):
        try:
            if set_cuda:
                dev.set_current()
            GraphicsResource.from_gl_buffer(name)
        except CUDAError as exc:
            errors[set_cuda] = str(exc)

    for set_cuda in (False, True):
        t = threading.Thread(target=register, args=(set_cuda,))
        t.start()
        t.join()
    # No CUDA context current; then a CUDA context but no OpenGL context on that thread.
    assert "no CUDA context is current on this thread" in errors[False]
    assert "no OpenGL context is current on this thread" in errors[True]
    assert "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT" in errors[True]
    gl.delete_buffer(name)


@pytest.mark.gpu
def test_a_thread_without_the_gl_context_is_refused_and_changes_nothing(dev, stream, gl):
    # Map, unmap and unregister need the OpenGL context current on the calling thread (an
    # OpenGL context is current on one thread at a time). Elsewhere each is refused before the
    # driver, says so, and leaves the resource as it was, to be done on the OpenGL thread.
    name = gl.create_buffer(bytes(64))
    res = GraphicsResource.from_gl_buffer(name)
    buf = res.map(stream=stream)
    seen = []

    def elsewhere(*calls):
        def run():
            dev.set_current()
            for call in calls:
                try:
                    call()
                    seen.append("ok")
                except CUDAError as exc:
                    seen.append(str(exc))
        t = threading.Thread(target=run)
        t.start()
        t.join()

    hint = "no OpenGL context is current on this thread (the one that owns the object must be)"
    elsewhere(res.unmap, res.close)
    assert len(seen) == 2 and all(hint in m and "INVALID_GRAPHICS_CONTEXT" in m for m in seen)
    assert res.is_mapped and not res.is_closed and buf.is_closed
    res.unmap()  # here, with the OpenGL context: the unmap happens now
    assert not res.is_mapped
    seen.clear()
    elsewhere(lambda: res.map(stream=stream), res.close)
    assert len(seen) == 2 and all(hint in m for m in seen), seen
    assert not res.is_mapped and not res.is_closed
    zeros = np.zeros(16, np.uint32)
    with res.map(stream=stream) as buf:  # the resource still works here
        buf.copy_from(Buffer.from_handle(zeros.ctypes.data, zeros.nbytes), stream=stream)
        stream.sync()
    res.close()
    assert res.is_closed
    gl.delete_buffer(name)


@pytest.mark.gpu
def test_gl_objects_deleted_or_context_destroyed_under_cuda_do_not_crash():
    # In a child: the outcome of deleting GL objects that CUDA still has registered (and
    # mapped) is the driver's, but the process must neither crash nor hang, and every call
    # must either succeed or raise.
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {tests_dir!r})
        from helpers.gl import open_context, GLUnavailable
        from cuda_core import CUDAError, Device, GraphicsResource
        dev = Device(0)
        dev.set_current()
        s = dev.create_stream()
        try:
            ctx = open_context()
        except GLUnavailable as exc:
            print("SKIP", exc)
            raise SystemExit(0)
        outcomes = []
        def attempt(what, fn):
            try:
                fn()
                outcomes.append(what + ":ok")
            except (CUDAError, RuntimeError) as exc:
                outcomes.append(what + ":" + type(exc).__name__)
        name = ctx.gl.create_buffer(bytes(64))
        mapped = GraphicsResource.from_gl_buffer(name)
        buf = mapped.map(stream=s)
        ctx.gl.delete_buffer(name)
        attempt("fill_after_gl_delete", lambda: (buf.fill(1, stream=s), s.sync()))
        attempt("close_after_gl_delete", mapped.close)
        name2 = ctx.gl.create_buffer(bytes(64))
        registered = GraphicsResource.from_gl_buffer(name2)
        ctx.close()
        attempt("map_after_context_gone", lambda: registered.map(stream=s).close())
        attempt("close_after_context_gone", registered.close)
        del registered  # its finalizer is refused too: a warning, no driver call
        attempt("device_still_works", lambda: (dev.allocate(64, stream=s).close(), s.sync()))
        print(" ".join(outcomes))
    """)
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    if result.stdout.startswith("SKIP"):
        pytest.skip(f"no headless OpenGL on this machine: {result.stdout[5:].strip()}")
    # With the context gone, nothing reaches the driver: each call is refused first.
    assert "map_after_context_gone:CUDAError close_after_context_gone:CUDAError" in result.stdout
    assert "device_still_works:ok" in result.stdout, result.stdout
    assert "GraphicsResource" in result.stderr and "no OpenGL context" in result.stderr
