"""Events."""

import weakref

import pytest

from cuda_core import Event, EventOptions
from helpers import StreamGate


def test_not_constructible():
    with pytest.raises(RuntimeError, match="Event objects cannot be instantiated directly"):
        Event()


@pytest.mark.gpu
def test_create_and_flags(dev):
    e = dev.create_event()
    assert not e.is_timing_enabled and not e.is_blocking_sync and not e.is_ipc_enabled
    assert e.is_done  # never recorded
    assert e.device is dev and e.context == dev.context and int(e.handle) != 0
    e.sync()
    e.close()
    t = dev.create_event({"timing_enabled": True, "blocking_sync": True})
    assert t.is_timing_enabled and t.is_blocking_sync
    t.close()
    if dev.properties.ipc_event_supported:
        # IPC events are bound to the record that makes them (as in cuda.core).
        with pytest.raises(TypeError, match=r"created by Stream\.record"):
            dev.create_event(EventOptions(ipc_enabled=True))
        i = dev.default_stream.record(options=EventOptions(ipc_enabled=True))
        assert i.is_ipc_enabled and not i.is_timing_enabled
        i.close()


@pytest.mark.gpu
def test_elapsed_time(dev, stream):
    opts = EventOptions(timing_enabled=True)
    start = stream.record(options=opts)
    end = stream.record(options=opts)
    end.sync()
    ms = end - start
    assert isinstance(ms, float) and 0.0 <= ms < 1000.0


@pytest.mark.gpu
def test_elapsed_time_measures_a_wait(dev, stream):
    import time

    opts = EventOptions(timing_enabled=True)
    start = stream.record(options=opts)
    gate = StreamGate(stream)
    end = stream.record(options=opts)
    time.sleep(0.05)
    gate.open()
    end.sync()
    assert end - start >= 40.0
    gate.close()


@pytest.mark.gpu
def test_elapsed_time_errors(dev, stream):
    timed = EventOptions(timing_enabled=True)
    plain_a, plain_b = stream.record(), stream.record()
    with pytest.raises(RuntimeError, match="timing is disabled on the start and end events"):
        plain_b - plain_a
    t1 = stream.record(options=timed)
    with pytest.raises(RuntimeError, match="timing is disabled on the start event"):
        t1 - plain_a
    never = dev.create_event(timed)
    with pytest.raises(RuntimeError, match="start event was never recorded"):
        t1 - never
    with pytest.raises(RuntimeError, match="end event was never recorded"):
        never - t1
    gate = StreamGate(stream)
    pending = stream.record(options=timed)
    assert not pending.is_done
    with pytest.raises(RuntimeError, match="not finished"):
        pending - t1
    gate.open()
    pending.sync()
    assert pending - t1 >= 0.0
    gate.close()
    with pytest.raises(TypeError):
        t1 - 1.0
    with pytest.raises(TypeError):
        1.0 - t1


@pytest.mark.gpu
def test_close_idempotent_and_closed_use_raises(dev, stream):
    e = dev.create_event()
    e.close()
    e.close()
    assert e.is_closed
    for use in (lambda: e.handle, lambda: e.sync(), lambda: e.is_done, lambda: e.device,
                lambda: e.context, lambda: stream.record(e), lambda: stream.wait(e),
                lambda: e.is_timing_enabled, lambda: e.is_blocking_sync,
                lambda: e.is_ipc_enabled, lambda: e - e):
        with pytest.raises(RuntimeError, match="this Event is closed"):
            use()


@pytest.mark.gpu
def test_eq_hash_weakref(dev):
    a, b = dev.create_event(), dev.create_event()
    assert a == a and a != b and len({a, b}) == 2 and a != 1
    assert weakref.ref(a)() is a
