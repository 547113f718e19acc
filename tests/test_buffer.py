"""Buffer and the MemoryResource base class (cuda_core/_memory/_buffer.pyx)."""

import ctypes
import gc
import pickle
import weakref

import numpy as np
import pytest

from cuda_core import (Buffer, CUDAWarning, Device, LegacyPinnedMemoryResource,
                       LEGACY_DEFAULT_STREAM, MemoryResource, PER_THREAD_DEFAULT_STREAM)
from helpers import run_python
from helpers.memory import NumpyMemoryResource


# -- construction and argument checks (CPU) ----------------------------------------------------

def test_not_constructible():
    with pytest.raises(RuntimeError, match="Buffer objects cannot be instantiated directly.*"
                                           "from_handle"):
        Buffer()


@pytest.mark.parametrize("make", ["base", "subclass"])
def test_memory_resource_is_abstract(make):
    # As in cuda.core, the base class can be made, and what a subclass leaves out raises a
    # TypeError (also a NotImplementedError).
    class Incomplete(MemoryResource):
        pass

    mr = MemoryResource() if make == "base" else Incomplete()
    name = type(mr).__name__
    with pytest.raises(TypeError, match=f"{name} must implement allocate"):
        mr.allocate(4)
    with pytest.raises(NotImplementedError, match="deallocate"):
        mr.deallocate(1, 4)
    for attr in ("is_device_accessible", "is_host_accessible", "device_id"):
        with pytest.raises(TypeError, match=attr):
            getattr(mr, attr)
    assert mr.is_managed is False


def test_from_handle_mr_and_owner_refused():
    mr = NumpyMemoryResource()
    with pytest.raises(ValueError, match="give mr .* or owner .*, not both"):
        Buffer.from_handle(0x1000, 8, mr=mr, owner=object())


@pytest.mark.parametrize("ptr", ["0x10", 1.5, None, np.True_, [1]])
def test_from_handle_ptr_type(ptr):
    with pytest.raises(TypeError, match="ptr must be an int"):
        Buffer.from_handle(ptr, 8)


@pytest.mark.parametrize("ptr", [-1, 1 << 64])
def test_from_handle_ptr_range(ptr):
    with pytest.raises(ValueError, match="is not a valid address"):
        Buffer.from_handle(ptr, 8)


@pytest.mark.parametrize("size, exc, match", [
    (-1, ValueError, "size must be >= 0, got -1"),
    (1 << 64, ValueError, "does not fit in 64 bits"),
    (2.0, TypeError, "size must be an int, not float"),
    (np.True_, TypeError, "size must be an int, not numpy.bool"),  # Python's bool is an int
    ("8", TypeError, "size must be an int, not str"),
])
def test_from_handle_size_checked(size, exc, match):
    with pytest.raises(exc, match=match):
        Buffer.from_handle(0x1000, size)


def test_from_handle_null_with_size_refused():
    with pytest.raises(ValueError, match="ptr is 0 \\(NULL\\) but size is 16"):
        Buffer.from_handle(0, 16)
    empty = Buffer.from_handle(0, 0)
    assert empty.handle == 0 and empty.size == 0


def test_from_handle_mr_type_checked():
    with pytest.raises(TypeError, match="mr must be a MemoryResource or None, not dict"):
        Buffer.from_handle(0x1000, 8, mr={})


def test_from_handle_accepts_index_and_cudeviceptr():
    from cuda.bindings import driver

    assert Buffer.from_handle(np.uint64(0x2000), np.int32(8)).handle == 0x2000
    assert Buffer.from_handle(driver.CUdeviceptr(0x3000), 4).handle == 0x3000


def test_from_handle_stream_type_checked():
    with pytest.raises(TypeError, match="expected a Stream or an object with __cuda_stream__"):
        Buffer.from_handle(0x1000, 8, stream=5)


# -- ownership: view, owner-kept, owning (CPU, through a pure-Python resource) ---------------

def test_view_never_frees():
    mr = NumpyMemoryResource()
    backing = mr.allocate(32)
    view = Buffer.from_handle(backing.handle, backing.size)
    assert view.memory_resource is None and view.owner is None
    assert view == backing
    view.close()
    assert view.is_closed and not backing.is_closed
    assert mr.calls == []
    backing.close()
    assert len(mr.calls) == 1


def test_owner_kept_alive_until_close_and_never_freed():
    class Owner:
        pass

    owner = Owner()
    ref = weakref.ref(owner)
    buf = Buffer.from_handle(0x1000, 8, owner=owner)
    del owner
    gc.collect()
    assert ref() is not None and buf.owner is ref()
    buf.close()
    gc.collect()
    assert ref() is None


def test_owning_buffer_frees_once_on_close_with_its_stream():
    mr = NumpyMemoryResource()
    buf = mr.allocate(64, stream=LEGACY_DEFAULT_STREAM)
    ptr = buf.handle
    assert buf.memory_resource is mr and buf.size == 64
    assert buf.device_id == -1 and buf.is_host_accessible and not buf.is_device_accessible
    assert not buf.is_managed and not buf.is_mapped
    buf.close()
    buf.close()  # idempotent
    assert mr.calls == [(ptr, 64, LEGACY_DEFAULT_STREAM)]


def test_close_stream_overrides_the_recorded_one():
    mr = NumpyMemoryResource()
    buf = mr.allocate(8, stream=LEGACY_DEFAULT_STREAM)
    buf.close(PER_THREAD_DEFAULT_STREAM)
    assert mr.calls[0][2] is PER_THREAD_DEFAULT_STREAM


def test_set_deallocation_stream():
    mr = NumpyMemoryResource()
    buf = mr.allocate(8)
    buf.set_deallocation_stream(PER_THREAD_DEFAULT_STREAM)
    buf.close()
    assert mr.calls[0][2] is PER_THREAD_DEFAULT_STREAM
    with pytest.raises(TypeError, match="stream is required"):
        mr.allocate(8).set_deallocation_stream(None)


def test_no_stream_known_passes_none():
    mr = NumpyMemoryResource()
    buf = mr.allocate(8)
    buf.close()
    assert mr.calls[0][2] is None


def test_context_manager_closes():
    mr = NumpyMemoryResource()
    with mr.allocate(8) as buf:
        assert not buf.is_closed
    assert buf.is_closed and len(mr.calls) == 1
    with pytest.raises(RuntimeError, match="this Buffer is closed"):
        with buf:
            pass


def test_garbage_collection_frees_once():
    mr = NumpyMemoryResource()
    buf = mr.allocate(16)
    ptr = buf.handle
    ref = weakref.ref(buf)
    del buf
    gc.collect()
    assert ref() is None
    assert mr.calls == [(ptr, 16, None)]


def test_buffer_in_reference_cycle_with_its_resource_is_freed():
    mr = NumpyMemoryResource()
    buf = mr.allocate(16)
    mr.keep = buf  # resource -> buffer -> resource
    ptr = buf.handle
    calls = mr.calls
    del buf, mr
    gc.collect()
    assert calls == [(ptr, 16, None)]


def test_buffer_keeps_its_resource_alive():
    mr = NumpyMemoryResource()
    ref = weakref.ref(mr)
    buf = mr.allocate(8)
    del mr
    gc.collect()
    assert ref() is not None
    buf.close()
    del buf
    gc.collect()
    assert ref() is None


def test_failing_deallocate_in_gc_becomes_a_warning():
    mr = NumpyMemoryResource(fail_deallocate=RuntimeError("boom"))
    buf = mr.allocate(8)
    # The buffer is named by its address, not as "<Buffer closed>": it is marked closed before
    # the free is tried (the cleanup policy of every Resource).
    expected = f"Buffer 0x{buf.handle:x}: cleanup failed: boom"
    with pytest.warns(CUDAWarning, match="cleanup failed: boom") as record:
        del buf
        gc.collect()
    assert len(mr.calls) == 1
    messages = [str(w.message) for w in record]
    assert expected in messages, messages
    assert not any("<Buffer" in m for m in messages), messages


def test_failing_deallocate_in_close_raises_and_leaves_it_closed():
    mr = NumpyMemoryResource(fail_deallocate=ValueError("nope"))
    buf = mr.allocate(8)
    with pytest.raises(ValueError, match="nope"):
        buf.close()
    assert buf.is_closed
    buf.close()  # no second attempt
    del buf
    gc.collect()
    assert len(mr.calls) == 1


def test_closed_buffer_raises():
    mr = NumpyMemoryResource()
    buf = mr.allocate(8)
    other = mr.allocate(8)
    buf.close()
    uses = [lambda: buf.handle, lambda: buf.size, lambda: buf.memory_resource,
            lambda: buf.owner, lambda: buf.device_id, lambda: buf.is_device_accessible,
            lambda: buf.is_host_accessible, lambda: buf.is_managed, lambda: buf.is_mapped,
            lambda: buf.copy_to(other, stream=LEGACY_DEFAULT_STREAM),
            lambda: buf.copy_from(other, stream=LEGACY_DEFAULT_STREAM),
            lambda: other.copy_from(buf, stream=LEGACY_DEFAULT_STREAM),
            lambda: other.copy_to(buf, stream=LEGACY_DEFAULT_STREAM),
            lambda: buf.fill(0, stream=LEGACY_DEFAULT_STREAM),
            lambda: buf.__dlpack__(), lambda: buf.__dlpack_device__(),
            lambda: buf.set_deallocation_stream(LEGACY_DEFAULT_STREAM)]
    for use in uses:
        with pytest.raises(RuntimeError, match="this Buffer is closed"):
            use()
    assert repr(buf) == "<Buffer closed>"


def test_eq_hash_weakref_repr():
    mr = NumpyMemoryResource()
    a = mr.allocate(24)
    same = Buffer.from_handle(a.handle, a.size)
    shorter = Buffer.from_handle(a.handle, 8)
    assert a == same and hash(a) == hash(same)
    assert a != shorter
    assert a != a.handle and a != object()
    assert len({a, same, shorter}) == 2
    assert weakref.ref(a)() is a
    assert repr(a) == f"<Buffer ptr=0x{a.handle:x} size=24 (NumpyMemoryResource)>"
    assert "(view)" in repr(same)


def test_not_picklable():
    # A RuntimeError, as cuda.core 1.2.2 raises: only buffers of IPC-enabled resources pickle.
    buf = NumpyMemoryResource().allocate(8)
    with pytest.raises(RuntimeError, match="only buffers of an IPC-enabled memory resource"):
        pickle.dumps(buf)


def test_from_handle_on_a_subclass_returns_the_subclass():
    class Tagged(Buffer):
        pass

    buf = Tagged.from_handle(0x1000, 4)
    assert type(buf) is Tagged


# -- copy and fill argument checks (CPU: they fail before any driver call) ---------------------

def test_copy_requires_a_stream():
    mr = NumpyMemoryResource()
    a, b = mr.allocate(8), mr.allocate(8)
    with pytest.raises(TypeError, match="stream"):
        a.copy_to(b)
    with pytest.raises(TypeError, match="copy_from\\(\\): stream is required"):
        a.copy_from(b, stream=None)
    with pytest.raises(TypeError, match="fill\\(\\): stream is required"):
        a.fill(0, stream=None)


def test_copy_size_mismatch_names_both_sizes():
    mr = NumpyMemoryResource()
    a, b = mr.allocate(128), mr.allocate(100)
    with pytest.raises(ValueError, match="this buffer has 128 bytes but dst has 100 bytes"):
        a.copy_to(b, stream=LEGACY_DEFAULT_STREAM)
    with pytest.raises(ValueError, match="this buffer has 100 bytes but src has 128 bytes"):
        b.copy_from(a, stream=LEGACY_DEFAULT_STREAM)


def test_copy_argument_types():
    mr = NumpyMemoryResource()
    a = mr.allocate(8)
    with pytest.raises(TypeError, match="dst must be a Buffer or None, not bytearray"):
        a.copy_to(bytearray(8), stream=LEGACY_DEFAULT_STREAM)
    with pytest.raises(TypeError, match="src must be a Buffer, not bytes"):
        a.copy_from(b"12345678", stream=LEGACY_DEFAULT_STREAM)
    view = Buffer.from_handle(a.handle, 8)
    with pytest.raises(ValueError, match="no memory resource to allocate it from"):
        view.copy_to(stream=LEGACY_DEFAULT_STREAM)


@pytest.mark.parametrize("value, exc, match", [
    (256, OverflowError, "value must be in \\[0, 256\\) for a byte fill, got 256"),
    (-1, OverflowError, "got -1"),
    ("a", TypeError, "buffer-protocol object .* not str"),
    (1.0, TypeError, "not float"),
    (np.uint64(1), ValueError, "the pattern must be 1, 2 or 4 bytes, got 8 bytes"),
    (b"abc", ValueError, "got 3 bytes"),
])
def test_fill_value_checked(value, exc, match):
    buf = NumpyMemoryResource().allocate(64)
    with pytest.raises(exc, match=match):
        buf.fill(value, stream=LEGACY_DEFAULT_STREAM)


def test_fill_size_and_alignment_checked():
    mr = NumpyMemoryResource()
    buf = mr.allocate(6)
    with pytest.raises(ValueError, match="the buffer size 6 is not a multiple of the 4-byte "
                                         "pattern"):
        buf.fill(np.float32(1.0), stream=LEGACY_DEFAULT_STREAM)
    big = mr.allocate(64)
    odd = Buffer.from_handle(big.handle + 1, 8)
    with pytest.raises(ValueError, match="is not aligned to the 2-byte pattern"):
        odd.fill(np.uint16(7), stream=LEGACY_DEFAULT_STREAM)


def test_exit_with_live_buffer_is_quiet():
    # A buffer still alive at interpreter exit, owned by a Python resource: no traceback, no
    # warning, exit status 0.
    code = (
        "import sys\n"
        "sys.path.insert(0, %r)\n"
        "from helpers.memory import NumpyMemoryResource\n"
        "mr = NumpyMemoryResource()\n"
        "bufs = [mr.allocate(64) for _ in range(4)]\n"
        "mr.keep = bufs\n"
        "print('ok')\n"
    ) % (__import__("os").path.dirname(__file__),)
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    assert result.stderr == ""


# -- GPU ---------------------------------------------------------------------------------------

def _host_bytes(buf):
    return np.ctypeslib.as_array((ctypes.c_uint8 * buf.size).from_address(buf.handle)).copy()


@pytest.mark.gpu
def test_device_allocate_properties(dev, stream):
    buf = dev.allocate(1000, stream=stream)
    assert buf.size == 1000 and buf.handle != 0
    assert buf.device_id == dev.device_id
    assert buf.is_device_accessible and not buf.is_host_accessible
    assert not buf.is_managed and not buf.is_mapped
    assert buf.memory_resource is dev.memory_resource
    # A view of device memory classifies itself through the driver's pointer attributes.
    view = Buffer.from_handle(buf.handle, buf.size)
    assert view.device_id == dev.device_id
    assert view.is_device_accessible and not view.is_host_accessible and not view.is_managed
    buf.close(stream)
    stream.sync()


@pytest.mark.gpu
def test_device_allocate_requires_stream(dev):
    with pytest.raises(TypeError):
        dev.allocate(16)
    with pytest.raises(TypeError, match="stream is required"):
        dev.allocate(16, stream=None)


_SIZES = [1, 2, 3, 7, 255, 256, 4097, 65537, (1 << 20) + 3, (16 << 20) - 1, 256 << 20]


@pytest.mark.gpu
@pytest.mark.parametrize("size", _SIZES)
def test_copies_are_bit_exact(dev, stream, size):
    # host (pageable, a Python resource) -> device -> device -> pinned host, compared bit for
    # bit with the source.
    rng = np.random.default_rng(size)
    src_data = rng.integers(0, 256, size, dtype=np.uint8)
    host_mr = NumpyMemoryResource()
    host = host_mr.allocate(size)
    host_mr.array(host)[:] = src_data
    pinned = LegacyPinnedMemoryResource().allocate(size)
    d1 = dev.allocate(size, stream=stream)
    d1.copy_from(host, stream=stream)
    d2 = d1.copy_to(stream=stream)  # allocated from d1's resource
    assert d2.size == size and d2.memory_resource is d1.memory_resource
    d2.copy_to(pinned, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(_host_bytes(pinned), src_data)
    # And back: pinned -> device -> pageable host.
    back_mr = NumpyMemoryResource()
    back = back_mr.allocate(size)
    d3 = dev.allocate(size, stream=stream)
    d3.copy_from(pinned, stream=stream)
    d3.copy_to(back, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(back_mr.array(back), src_data)
    for b in (d1, d2, d3):
        b.close(stream)
    pinned.close(stream)
    stream.sync()


@pytest.mark.gpu
@pytest.mark.parametrize("value, dtype", [
    (0xAB, np.uint8), (np.uint8(0x5A), np.uint8), (np.uint16(0xBEEF), np.uint16),
    (np.int16(-2), np.int16), (np.uint32(0xDEADBEEF), np.uint32),
    (np.float32(1.5), np.float32), (b"\x01\x02", np.uint16),
])
def test_fill_every_width(dev, stream, value, dtype):
    n = 4096
    buf = dev.allocate(n, stream=stream)
    buf.fill(0, stream=stream)
    buf.fill(value, stream=stream)
    out_mr = NumpyMemoryResource()
    out = out_mr.allocate(n)
    buf.copy_to(out, stream=stream)
    stream.sync()
    got = out_mr.array(out).view(dtype)
    expected = np.frombuffer(bytes(memoryview(value)) if not isinstance(value, int)
                             else bytes([value]), dtype=dtype)[0]
    assert (got == expected).all()
    buf.close(stream)


@pytest.mark.gpu
def test_copy_on_a_stream_other_than_the_allocating_one(dev):
    # The copy is ordered on the stream given, whichever stream allocated each side.
    s1, s2 = dev.create_stream(), dev.create_stream()
    a = dev.allocate(1 << 20, stream=s1)
    a.fill(7, stream=s1)
    s2.wait(s1)
    b = a.copy_to(stream=s2)
    out_mr = NumpyMemoryResource()
    out = out_mr.allocate(1 << 20)
    b.copy_to(out, stream=s2)
    s2.sync()
    assert (out_mr.array(out) == 7).all()
    a.close(s2)
    b.close(s2)
    s2.sync()
    s1.close()
    s2.close()


@pytest.mark.gpu
def test_closed_device_buffer(dev, stream):
    buf = dev.allocate(256, stream=stream)
    other = dev.allocate(256, stream=stream)
    with buf:
        buf.fill(1, stream=stream)
    assert buf.is_closed
    for use in (lambda: buf.handle, lambda: buf.device_id,
                lambda: buf.copy_to(other, stream=stream),
                lambda: other.copy_from(buf, stream=stream),
                lambda: buf.fill(0, stream=stream), lambda: buf.__dlpack__(stream=-1)):
        with pytest.raises(RuntimeError, match="this Buffer is closed"):
            use()
    buf.close(stream)  # idempotent, frees nothing twice
    other.close(stream)
    stream.sync()


@pytest.mark.gpu
def test_free_after_its_stream_was_closed(dev):
    # The recorded deallocation stream is gone: the free waits for the device first and still
    # happens, without a warning.
    s = dev.create_stream()
    buf = dev.allocate(4096, stream=s)
    buf.fill(1, stream=s)
    s.close()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        buf.close()
    assert buf.is_closed


@pytest.mark.gpu
def test_close_on_closed_stream_refused(dev):
    s = dev.create_stream()
    buf = dev.allocate(64, stream=dev.default_stream)
    s.close()
    with pytest.raises(RuntimeError, match="this Stream is closed"):
        buf.close(s)
    assert not buf.is_closed
    buf.close()


@pytest.mark.gpu
def test_exit_with_live_gpu_buffers_is_quiet():
    # Device, pinned and managed buffers, an owned pool and a DLPack export still alive at
    # exit: no crash, no traceback, no warning.
    code = (
        "from cuda_core import (Device, DeviceMemoryResource, LegacyPinnedMemoryResource,\n"
        "                       ManagedMemoryResource)\n"
        "dev = Device(0)\n"
        "dev.set_current()\n"
        "s = dev.create_stream()\n"
        "a = dev.allocate(1 << 20, stream=s)\n"
        "pool = DeviceMemoryResource(dev, {'max_size': 1 << 26})\n"
        "b = pool.allocate(4096, stream=s)\n"
        "c = LegacyPinnedMemoryResource().allocate(4096)\n"
        "m = ManagedMemoryResource().allocate(4096, stream=s)\n"
        "cap = a.__dlpack__(stream=-1, max_version=(1, 0))\n"
        "a.close()\n"
        "keep = [a, b, c, m, pool, s, cap]\n"
        "print('ok')\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    assert result.stderr == ""


@pytest.mark.gpu
def test_peer_copies_between_two_devices_are_bit_exact():
    devices = Device.get_all_devices()
    if len(devices) < 2:
        pytest.skip("needs two GPUs")
    d0, d1 = devices[0], devices[1]
    d1.set_current()
    s1 = d1.create_stream()
    d0.set_current()
    s0 = d0.create_stream()
    n = (1 << 20) + 7
    data = np.random.default_rng(7).integers(0, 256, n, dtype=np.uint8)
    host_mr = NumpyMemoryResource()
    src_host, out_host = host_mr.allocate(n), host_mr.allocate(n)
    host_mr.array(src_host)[:] = data
    on0 = d0.allocate(n, stream=s0)
    on1 = d1.allocate(n, stream=s1)
    s1.sync()
    on0.copy_from(src_host, stream=s0)
    on0.copy_to(on1, stream=s0)  # device 0 -> device 1, ordered on device 0's stream
    s0.sync()
    on1.copy_to(out_host, stream=s1)
    s1.sync()
    np.testing.assert_array_equal(host_mr.array(out_host), data)
    on0.close(s0)
    on1.close(s1)
    s0.close()
    s1.close()


def test_buffers_and_resources_share_the_resource_lifecycle():
    from cuda_core._resource import Resource

    mr = NumpyMemoryResource()
    buf = mr.allocate(8)
    assert isinstance(buf, Resource) and isinstance(mr, Resource)
    # A resource that owns nothing has nothing to close: close() does not retire it.
    mr.close()
    assert not mr.is_closed
    other = mr.allocate(8)
    buf.close()
    other.close()
    assert buf.is_closed and other.is_closed and len(mr.calls) == 2


# -- the Python buffer protocol (memoryview) -------------------------------------------------------

def test_memoryview_of_host_memory_is_the_bytes_themselves():
    mr = NumpyMemoryResource()
    buf = mr.allocate(8)
    view = memoryview(buf)
    assert (view.nbytes, view.readonly, view.format, view.ndim) == (8, False, "B", 1)
    view[0] = 7
    assert mr.array(buf)[0] == 7  # no copy: the write reached the memory
    assert bytes(np.asarray(buf)[:2]) == b"\x07\x00"
    view.release()
    buf.close()
    assert len(mr.calls) == 1


def test_close_while_a_memoryview_is_alive_defers_the_free():
    mr = NumpyMemoryResource()
    buf = mr.allocate(8)
    view = memoryview(buf)
    buf.close()
    assert buf.is_closed and mr.calls == []  # the view still reads valid memory
    assert view[0] == 0
    view.release()
    assert len(mr.calls) == 1


def test_memoryview_refused_for_memory_the_cpu_cannot_read_and_for_a_closed_buffer():
    device_only = NumpyMemoryResource(device_accessible=True, host_accessible=False, device_id=0)
    buf = device_only.allocate(8)
    with pytest.raises(BufferError, match="not host-accessible"):
        memoryview(buf)
    buf.close()
    host = NumpyMemoryResource().allocate(8)
    host.close()
    with pytest.raises(RuntimeError, match="this Buffer is closed"):
        memoryview(host)


def test_fill_overflow_is_cuda_cores_overflow_error_and_our_value_error():
    buf = NumpyMemoryResource().allocate(8)
    for value in (256, -1):
        with pytest.raises(OverflowError, match=f"got {value}") as info:
            buf.fill(value, stream=LEGACY_DEFAULT_STREAM)
        assert isinstance(info.value, ValueError)


@pytest.mark.gpu
def test_fill_takes_a_bool_as_a_byte(dev):
    buf = LegacyPinnedMemoryResource().allocate(8)
    buf.fill(True, stream=dev.default_stream)  # bool is an int, as for cuda.core
    dev.default_stream.sync()
    assert ctypes.string_at(int(buf.handle), 8) == b"\x01" * 8
    buf.close()
