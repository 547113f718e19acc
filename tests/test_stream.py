"""Streams."""

import gc
import weakref

import numpy as np
import pytest

import cuda_core
from cuda_core import (Device, Event, LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM,
                       Stream, StreamOptions)
from cuda_core._checks import ArgumentTypeError
from helpers import StreamGate


def test_not_constructible():
    with pytest.raises(RuntimeError, match="Stream objects cannot be instantiated directly"):
        Stream()


def test_default_stream_constants_need_no_driver():
    assert LEGACY_DEFAULT_STREAM.__cuda_stream__() == (0, 1)
    assert PER_THREAD_DEFAULT_STREAM.__cuda_stream__() == (0, 2)
    assert LEGACY_DEFAULT_STREAM != PER_THREAD_DEFAULT_STREAM
    LEGACY_DEFAULT_STREAM.close()  # a no-op on the default streams
    assert not LEGACY_DEFAULT_STREAM.is_closed


@pytest.mark.parametrize("bad", ["1", 1.5, None, np.True_])
def test_from_handle_type_checked(bad):
    # Also cuda.core's ValueError where it refuses; it takes 1.5 as 1 and NumPy's bool as an int
    # (docs/migrating.rst, "Where an int is taken").
    with pytest.raises(ArgumentTypeError, match="handle must be a stream address"):
        Stream.from_handle(bad)


@pytest.mark.gpu
@pytest.mark.parametrize("handle", [True, np.int64(1), np.uint8(2)])
def test_from_handle_takes_any_int(dev, handle):
    # A bool or a NumPy integer is the address it stands for, as in cuda.core: here 1 or 2, a
    # default stream.
    assert Stream.from_handle(handle).__cuda_stream__() == (0, int(handle))


def test_from_handle_negative():
    # Also cuda.core's OverflowError (its conversion to an address).
    with pytest.raises(OverflowError, match="not a valid stream address"):
        Stream.from_handle(-5)


@pytest.mark.parametrize("address", [3, 0x10, 4095])
def test_from_handle_in_the_first_page_is_refused(address):
    # No stream lives in the first page: asking the driver for its context would read there
    # (a crash). Refused before the driver is loaded, so also without one.
    with pytest.raises(ValueError, match=f"{address:#x} is not a stream"):
        Stream.from_handle(address)


@pytest.mark.gpu
def test_create_and_properties(dev):
    s = dev.create_stream()
    assert isinstance(s, Stream) and not s.is_closed
    assert s.is_nonblocking
    assert s.device is dev and s.context == dev.context
    assert int(s.handle) == s.__cuda_stream__()[1] != 0
    assert s.priority == 0
    assert s.is_done
    s.sync()
    blocking = dev.create_stream(options={"nonblocking": False})
    assert not blocking.is_nonblocking
    s.close()
    blocking.close()


@pytest.mark.gpu
def test_priority(dev):
    from cuda.bindings import driver

    _, least, greatest = driver.cuCtxGetStreamPriorityRange()
    s = dev.create_stream(options=StreamOptions(priority=greatest))
    assert s.priority == greatest
    s.close()
    with pytest.raises(ValueError, match=f"priority={greatest - 1} is outside this device's "
                                         f"range {greatest} \\(highest\\) to {least}"):
        dev.create_stream(options=StreamOptions(priority=greatest - 1))
    with pytest.raises(ValueError, match="outside this device's range"):
        dev.create_stream(options={"priority": least + 1})


@pytest.mark.gpu
def test_close_is_idempotent_and_closed_stream_raises(dev):
    s = dev.create_stream()
    s.close()
    s.close()
    assert s.is_closed
    for use in (lambda: s.handle, lambda: s.sync(), lambda: s.is_done, lambda: s.record(),
                lambda: s.wait(dev.create_event()), lambda: s.device, lambda: s.context,
                lambda: s.priority, lambda: s.is_nonblocking, lambda: s.__cuda_stream__()):
        with pytest.raises(RuntimeError, match="this Stream is closed"):
            use()
    assert repr(s) == "<Stream closed>"


@pytest.mark.gpu
def test_record_and_wait_event(dev):
    s1, s2 = dev.create_stream(), dev.create_stream()
    gate = StreamGate(s1)
    ev = s1.record()
    assert isinstance(ev, Event) and not ev.is_done
    s2.wait(ev)
    assert not s2.is_done  # s2 now waits behind s1's gate
    gate.open()
    s2.sync()
    assert ev.is_done and s1.is_done and s2.is_done
    # Re-recording a given event returns the same object.
    assert s2.record(ev) is ev
    with pytest.raises(ValueError, match="options apply only when a new event is created"):
        s2.record(ev, options={"timing_enabled": True})
    with pytest.raises(TypeError, match="event must be an Event or None, not int"):
        s2.record(5)
    timed = s2.record(options={"timing_enabled": True})
    assert timed.is_timing_enabled
    gate.close()
    s1.close()
    s2.close()


@pytest.mark.gpu
def test_wait_on_stream_and_foreign_object(dev):
    s1, s2 = dev.create_stream(), dev.create_stream()
    gate = StreamGate(s1)
    s2.wait(s1)
    assert not s2.is_done
    gate.open()
    s2.sync()

    class Foreign:
        def __init__(self, stream):
            self.stream = stream

        def __cuda_stream__(self):
            return (0, int(self.stream.handle))

    gate2 = StreamGate(s1)
    s2.wait(Foreign(s1))
    assert not s2.is_done
    gate2.open()
    s2.sync()
    s2.wait(s2)  # waiting on itself is a no-op
    with pytest.raises(TypeError, match="expected a Stream or an object with __cuda_stream__"):
        s2.wait(42)
    gate.close()
    gate2.close()
    s1.close()
    s2.close()


@pytest.mark.gpu
def test_wrap_cuda_stream_object_keeps_it_alive(dev):
    inner = dev.create_stream()

    class Foreign:
        def __cuda_stream__(self):
            return (0, int(inner.handle))

    foreign = Foreign()
    ref = weakref.ref(foreign)
    wrapped = dev.create_stream(foreign)
    del foreign
    gc.collect()
    assert ref() is not None
    assert wrapped == inner and wrapped.device is dev
    wrapped.sync()
    wrapped.close()  # not owned: the stream itself survives
    gc.collect()
    assert ref() is None
    inner.sync()
    inner.close()
    with pytest.raises(ValueError, match="options cannot be given when wrapping"):
        dev.create_stream(Foreign(), options={"priority": 0})


@pytest.mark.gpu
@pytest.mark.parametrize("reply, exc, msg", [
    ((1, 0), ValueError, "unsupported __cuda_stream__ protocol version 1"),
    ((0,), TypeError, "must return \\(version, address\\)"),
    ("nope", TypeError, "must return \\(version, address\\)"),
])
def test_bad_cuda_stream_protocol(dev, reply, exc, msg):
    class Bad:
        def __cuda_stream__(self):
            return reply

    with pytest.raises(exc, match=msg):
        dev.create_stream(Bad())


@pytest.mark.gpu
def test_from_handle(dev):
    owned = dev.create_stream()
    view = Stream.from_handle(int(owned.handle))
    assert view == owned and hash(view) == hash(owned)
    assert view.device is dev and view.context == dev.context
    view.sync()
    view.close()  # does not destroy the stream
    owned.sync()
    assert Stream.from_handle(owned.handle) == owned  # a driver.CUstream works too
    owned.close()
    legacy = Stream.from_handle(0)
    legacy.sync()
    assert legacy.device is dev


@pytest.mark.gpu
def test_default_stream_constants(dev):
    for s in (LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM):
        s.sync()
        assert s.is_done
        assert s.device is dev
        assert s.context == dev.context
        ev = s.record()
        ev.sync()


@pytest.mark.gpu
def test_eq_hash_weakref(dev):
    a, b = dev.create_stream(), dev.create_stream()
    assert a != b and a == a and len({a, b, Stream.from_handle(int(a.handle))}) == 2
    assert weakref.ref(a)() is a
    assert a != "stream"
    a.close()
    b.close()


@pytest.mark.gpu
def test_stream_of_wrong_device_event(dev):
    if cuda_core.System().num_devices < 2:
        pytest.skip("needs two GPUs")
    Device(1).set_current()
    e1 = Device(1).create_event()
    dev.set_current()
    s = dev.create_stream()
    with pytest.raises(ValueError, match="event belongs to device 1 but the stream to device 0"):
        s.record(e1)
    s.close()


@pytest.mark.gpu
def test_from_handle_zero_is_the_legacy_stream(dev):
    s = Stream.from_handle(0)
    assert s == LEGACY_DEFAULT_STREAM and hash(s) == hash(LEGACY_DEFAULT_STREAM)
    # The handle as given, as in cuda.core: numba-cuda pickles int(s.handle) and wants 0 back.
    assert int(s.handle) == 0 and s.__cuda_stream__() == (0, 0)
    assert int(LEGACY_DEFAULT_STREAM.handle) == 1
    s.wait(LEGACY_DEFAULT_STREAM)  # the same stream: nothing to wait for
    s.sync()


@pytest.mark.gpu
def test_cuda_stream_must_be_a_method(dev):
    class Attr:
        __cuda_stream__ = (0, 1)

    with pytest.raises(TypeError, match="__cuda_stream__ must be a method"):
        dev.create_stream(Attr())


@pytest.mark.gpu
def test_wrapped_stream_of_another_device_is_refused():
    if cuda_core.System().num_devices < 2:
        pytest.skip("needs two GPUs")
    Device(1).set_current()
    s1 = Device(1).create_stream()
    Device(0).set_current()
    with pytest.raises(ValueError, match="belongs to device 1, not to device 0"):
        Device(0).create_stream(s1)
    s1.close()


@pytest.mark.gpu
def test_primary_context_of_a_foreign_stream_is_recognised():
    # A stream made by another library in the primary context, wrapped before set_current()
    # on this thread: its context is the device's primary one.
    import threading

    from cuda.bindings import driver

    out = []

    def fresh():
        err, ctx = driver.cuDevicePrimaryCtxRetain(0)
        assert err == driver.CUresult.CUDA_SUCCESS
        driver.cuCtxSetCurrent(ctx)
        err, raw = driver.cuStreamCreate(1)
        assert err == driver.CUresult.CUDA_SUCCESS
        s = Stream.from_handle(int(raw))
        out.append((s.context.is_primary, s.context == Device(0).context))
        driver.cuStreamDestroy(raw)
        driver.cuDevicePrimaryCtxRelease(0)

    t = threading.Thread(target=fresh)
    t.start()
    t.join()
    assert out == [(True, True)]
