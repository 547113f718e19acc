"""IPC events: creation rules, IPCEventDescriptor, import in other processes, multiprocessing
(cuda_core/_event.pyx). The descriptor checks and the pickles run everywhere; the rest needs a
GPU with interprocess events, and spawned children (tests/helpers/ipc.py)."""

import ctypes
import pickle
import threading
import warnings
import weakref

import pytest

from helpers import StreamGate
from helpers.ipc import CHILD_TIMEOUT, Children, queue_get, require_ipc_events, SPAWN

from cuda_core import (Buffer, CUDAError, Device, Event, EventOptions,
                       LegacyPinnedMemoryResource, VirtualMemoryResource)
from cuda_core import _event
from cuda_core._event import IPCEventDescriptor

IPC = EventOptions(ipc_enabled=True)
PAYLOAD = bytes(range(64))


def _forking_dumps(obj):
    """``obj`` pickled as multiprocessing pickles it (the fork warning, a process-wide
    once-only UserWarning that depends on the start method, is not what these tests check)."""
    from multiprocessing.reduction import ForkingPickler

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return bytes(ForkingPickler.dumps(obj))


# -- IPCEventDescriptor (CPU) --------------------------------------------------------------------


def test_descriptor_not_constructible_and_weakrefable():
    with pytest.raises(RuntimeError, match="IPCEventDescriptor objects cannot be created directly; "
                                           "use Event.ipc_descriptor"):
        IPCEventDescriptor()
    d = IPCEventDescriptor._init(PAYLOAD, False)
    assert weakref.ref(d)() is d


@pytest.mark.parametrize("reserved, flag, exc, match", [
    (PAYLOAD[:63], False, ValueError, "payload is 64 bytes .*not 63"),
    (PAYLOAD + b"x", False, ValueError, "payload is 64 bytes .*not 65"),
    (b"", True, ValueError, "not 0"),
    ("x" * 64, False, TypeError, "reserved must be bytes, not str"),
    (bytearray(PAYLOAD), False, TypeError, "reserved must be bytes, not bytearray"),
    (None, False, TypeError, "reserved must be bytes, not NoneType"),
    (PAYLOAD, 1, TypeError, "is_blocking_sync must be a bool, not int"),
    (PAYLOAD, None, TypeError, "is_blocking_sync must be a bool, not NoneType"),
])
def test_descriptor_init_checks(reserved, flag, exc, match):
    with pytest.raises(exc, match=match):
        IPCEventDescriptor._init(reserved, flag)


def test_descriptor_eq_hash():
    a = IPCEventDescriptor._init(PAYLOAD, False)
    same = IPCEventDescriptor._init(bytes(PAYLOAD), False)
    blocking = IPCEventDescriptor._init(PAYLOAD, True)
    other = IPCEventDescriptor._init(bytes(64), False)
    assert a == same and hash(a) == hash(same) and a is not same
    assert a != blocking and a != other and a != PAYLOAD and a != 1
    assert len({a, same, blocking, other}) == 3
    assert "blocking_sync=True" in repr(blocking)


@pytest.mark.parametrize("flag", [False, True])
def test_descriptor_pickles(flag):
    d = IPCEventDescriptor._init(PAYLOAD, flag)
    for data in (pickle.dumps(d), pickle.dumps(d, protocol=2), _forking_dumps(d)):
        back = pickle.loads(data)
        assert type(back) is IPCEventDescriptor and back == d and back is not d


class _Crafted:
    """Pickles as a call of IPCEventDescriptor._init with arguments of its choosing: what a
    forged pickle could hold."""

    def __init__(self, *args):
        self.args = args

    def __reduce__(self):
        return IPCEventDescriptor._init, self.args


@pytest.mark.parametrize("args, exc", [
    ((PAYLOAD[:10], False), ValueError),
    ((PAYLOAD * 2, True), ValueError),
    ((list(PAYLOAD), False), TypeError),
    ((PAYLOAD, "yes"), TypeError),
])
def test_crafted_descriptor_pickles_are_refused_at_load(args, exc):
    data = pickle.dumps(_Crafted(*args))
    with pytest.raises(exc):
        pickle.loads(data)


def test_from_ipc_descriptor_checks_its_argument_before_the_driver():
    for bad in (PAYLOAD, None, object()):
        with pytest.raises(TypeError, match="ipc_descriptor must be an IPCEventDescriptor"):
            Event.from_ipc_descriptor(bad)


def test_rebuild_event_checks_its_arguments():
    d = IPCEventDescriptor._init(PAYLOAD, False)
    with pytest.raises(TypeError):
        _event._rebuild_event(None, d)
    with pytest.raises(TypeError):
        _event._rebuild_event("GPU-0", PAYLOAD)
    with pytest.raises(TypeError):
        _event._rebuild_event("GPU-0", None)


# -- creation rules (GPU) -------------------------------------------------------------------------


@pytest.fixture
def ipc_dev(dev):
    require_ipc_events(dev)
    return dev


@pytest.mark.gpu
def test_ipc_events_are_made_by_stream_record(ipc_dev, stream):
    with pytest.raises(TypeError, match=r"IPC-enabled events are created by Stream\.record"):
        ipc_dev.create_event(IPC)
    with pytest.raises(TypeError, match=r"created by Stream\.record"):
        ipc_dev.create_event({"ipc_enabled": True})
    for make in (lambda: stream.record(options={"ipc_enabled": True, "timing_enabled": True}),
                 lambda: ipc_dev.create_event(EventOptions(ipc_enabled=True,
                                                           timing_enabled=True))):
        with pytest.raises(TypeError, match="IPC-enabled events cannot record timing"):
            make()
    e = stream.record(options=IPC)
    assert e.is_ipc_enabled and not e.is_timing_enabled and not e.is_blocking_sync
    assert e.device is ipc_dev and "ipc" in repr(e)
    e.sync()
    assert e.is_done
    with pytest.raises(TypeError, match="an IPC-enabled event is recorded once"):
        stream.record(e)
    with pytest.raises(RuntimeError, match="timing is disabled"):
        e - e
    b = stream.record(options={"ipc_enabled": True, "blocking_sync": True})
    assert b.is_blocking_sync and b.is_ipc_enabled
    # None means False, for each field.
    n = stream.record(options=EventOptions(ipc_enabled=True, timing_enabled=None,
                                           blocking_sync=None))
    assert n.is_ipc_enabled and not n.is_timing_enabled and not n.is_blocking_sync
    plain = stream.record()
    assert not plain.is_ipc_enabled
    with pytest.raises(RuntimeError, match="this event is not IPC-enabled"):
        plain.ipc_descriptor
    stream.record(plain)  # a plain event is still re-recorded
    for ev in (e, b, n, plain):
        ev.close()
    with pytest.raises(RuntimeError, match="this Event is closed"):
        e.ipc_descriptor


@pytest.mark.gpu
def test_descriptor_is_cached_and_pickles(ipc_dev, stream):
    e = stream.record(options=IPC)
    d = e.ipc_descriptor
    assert type(d) is IPCEventDescriptor and e.ipc_descriptor is d
    back = pickle.loads(pickle.dumps(d))
    assert back == d and hash(back) == hash(d)
    assert pickle.loads(_forking_dumps(d)) == d
    b = stream.record(options={"ipc_enabled": True, "blocking_sync": True})
    assert b.ipc_descriptor != d and "blocking_sync=True" in repr(b.ipc_descriptor)
    # Threads asking at once get one descriptor.
    f = stream.record(options=IPC)
    got = []
    threads = [threading.Thread(target=lambda: got.append(f.ipc_descriptor)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and all(g is got[0] for g in got)
    for ev in (e, b, f):
        ev.close()


@pytest.mark.gpu
def test_events_refuse_plain_pickle(ipc_dev, stream):
    e = stream.record(options=IPC)
    with pytest.raises(TypeError, match="Event objects are sent through multiprocessing"):
        pickle.dumps(e)
    plain = stream.record()
    with pytest.raises(TypeError, match="Event objects are sent through multiprocessing"):
        pickle.dumps(plain)
    with pytest.raises(TypeError, match="only IPC-enabled events can be sent"):
        _forking_dumps(plain)
    e.close()
    with pytest.raises(RuntimeError, match="this Event is closed"):
        _forking_dumps(e)
    plain.close()


@pytest.mark.gpu
def test_from_ipc_descriptor_in_the_exporting_process(ipc_dev, stream):
    # The driver refuses to open a handle in the process that exported it (probed on driver
    # 580: CUDA_ERROR_INVALID_CONTEXT).
    e = stream.record(options=IPC)
    with pytest.raises(CUDAError, match="exported by this same process") as info:
        Event.from_ipc_descriptor(e.ipc_descriptor)
    assert info.value.name == "CUDA_ERROR_INVALID_CONTEXT"
    e.sync()  # the exporter's event is untouched
    e.close()


# -- other processes (GPU) ------------------------------------------------------------------------


def _current_context():
    from cuda.bindings import driver

    err, ctx = driver.cuCtxGetCurrent()
    assert err == driver.CUresult.CUDA_SUCCESS
    return int(ctx)


def _open_by_hand(inbox):
    """Child: import descriptors sent as plain-pickled bytes (one of them twice) and report
    what the imported events are."""
    dev = Device(0)
    dev.set_current()
    s = dev.create_stream()
    plain, blocking = (pickle.loads(b) for b in queue_get(inbox))
    first = Event.from_ipc_descriptor(plain)
    second = Event.from_ipc_descriptor(plain)  # the same descriptor again: its own event
    third = Event.from_ipc_descriptor(blocking)
    facts = {
        "flags": (first.is_ipc_enabled, first.is_timing_enabled, first.is_blocking_sync,
                  third.is_blocking_sync),
        "distinct": first != second and int(first.handle) != int(second.handle),
        "descriptor": first.ipc_descriptor is plain and third.ipc_descriptor == blocking,
        "repr": "imported" in repr(first),
        "context": first.context == dev.context,
    }
    first.sync()
    s.wait(first)
    first.close()
    # The other import of the same descriptor still works once the first is closed.
    second.sync()
    s.wait(second)
    s.sync()
    facts["done"] = second.is_done and third.is_done
    for ev in (second, third):
        ev.close()
        ev.close()
    # Without a current context there is nothing to open the event in.
    errors = []

    def no_context():
        try:
            Event.from_ipc_descriptor(plain)
        except RuntimeError as exc:
            errors.append(str(exc))

    t = threading.Thread(target=no_context)
    t.start()
    t.join(CHILD_TIMEOUT)
    facts["no_context"] = errors
    s.close()
    return facts


@pytest.mark.gpu
def test_descriptor_by_hand(ipc_dev, stream):
    e = stream.record(options=IPC)
    b = stream.record(options={"ipc_enabled": True, "blocking_sync": True})
    inbox = SPAWN.Queue()
    with Children() as children:
        child = children.run(_open_by_hand, inbox)
        inbox.put((pickle.dumps(e.ipc_descriptor), pickle.dumps(b.ipc_descriptor)))
        facts = child.value()
    # The exporter keeps its events until the importer is done with them.
    e.close()
    b.close()
    assert facts["flags"] == (True, False, False, True)
    assert facts["distinct"] and facts["descriptor"] and facts["repr"] and facts["context"]
    assert facts["done"]
    assert len(facts["no_context"]) == 1
    assert "no CUDA context is current" in facts["no_context"][0]


def _pinned_read(buf, stream):
    """A page-locked host copy of ``buf`` queued on ``stream`` (asynchronous even while the
    stream waits), and the function that reads it once the copy is done."""
    host = LegacyPinnedMemoryResource().allocate(buf.size)
    buf.copy_to(host, stream=stream)
    return host, lambda: ctypes.string_at(host.handle, host.size)


def _wait_on_exporter(inbox, outbox):
    """Child: import a VMM buffer and an IPC event (multiprocessing), queue a copy of the buffer
    behind the event and report that it is pending; once the exporter lets its stream run,
    report what the copy read."""
    dev = Device(0)
    dev.set_current()
    s = dev.create_stream()
    mr, desc, ev = queue_get(inbox)
    assert type(ev) is Event and ev.is_ipc_enabled and not ev.is_timing_enabled
    buf = Buffer.from_ipc_descriptor(mr, desc, stream=s)
    pending_at_import = not ev.is_done
    s.wait(ev)
    host, read = _pinned_read(buf, s)
    after = s.record()
    outbox.put(("queued", pending_at_import, not after.is_done))
    after.sync()
    data = read()
    ev.sync()
    done = ev.is_done
    buf.close()
    s.sync()
    ev.close()
    host.close()
    return data.count(7), len(data), done


@pytest.mark.gpu
def test_cross_process_ordering(ipc_dev, stream):
    if not ipc_dev.properties.handle_type_posix_file_descriptor_supported:
        pytest.skip("device 0: properties.handle_type_posix_file_descriptor_supported is False")
    mr = VirtualMemoryResource(ipc_dev, {"handle_type": "posix_fd"})
    n = 1 << 20
    buf = mr.allocate(n, stream=stream)
    buf.fill(0, stream=stream)
    stream.sync()
    inbox, outbox = SPAWN.Queue(), SPAWN.Queue()
    gate = StreamGate(stream)  # the stream waits here until the child has queued its copy
    try:
        buf.fill(7, stream=stream)
        e = stream.record(options=IPC)
        assert not e.is_done
        desc = buf.ipc_descriptor
        with Children() as children:
            child = children.run(_wait_on_exporter, inbox, outbox)
            inbox.put((mr, desc, e))
            assert queue_get(outbox, child.proc) == ("queued", True, True)
            gate.open()
            sevens, size, done = child.value()
    finally:
        gate.close()
    stream.sync()
    assert (sevens, size, done) == (n, n, True)
    e.close()
    buf.close()


def _events_from_everywhere(inbox, ev_arg):
    """Child: an event that came as a Process argument, and one through a Queue received on a
    thread with no current context (unpickling must leave that so)."""
    results = {"arg": (type(ev_arg) is Event, ev_arg.is_ipc_enabled)}
    ev_arg.sync()
    results["arg_done"] = ev_arg.is_done
    got = []

    def receive():
        ev = queue_get(inbox)
        got.append((ev, _current_context()))

    t = threading.Thread(target=receive)
    t.start()
    t.join(CHILD_TIMEOUT)
    ev, ctx_after = got[0]
    results["queue"] = (type(ev) is Event, ev.is_ipc_enabled, ev.is_blocking_sync)
    results["context_unchanged"] = ctx_after == 0
    ev.sync()
    results["queue_done"] = ev.is_done
    Device(0).set_current()
    s = Device(0).create_stream()
    s.wait(ev)
    s.sync()
    ev.close()
    ev_arg.close()
    return results


@pytest.mark.gpu
def test_events_through_multiprocessing(ipc_dev, stream):
    arg = stream.record(options=IPC)
    queued = stream.record(options={"ipc_enabled": True, "blocking_sync": True})
    inbox = SPAWN.Queue()
    with Children() as children:
        child = children.run(_events_from_everywhere, inbox, arg)
        inbox.put(queued)
        results = child.value()
    arg.close()
    queued.close()
    assert results == {"arg": (True, True), "arg_done": True, "queue": (True, True, True),
                       "context_unchanged": True, "queue_done": True}


def _import_and_drop(inbox, rounds):
    """Child: import the same descriptor from 8 threads at once, ``rounds`` times each."""
    Device(0).set_current()
    d = queue_get(inbox)
    errors = []
    start = threading.Barrier(8)

    def work():
        try:
            Device(0).set_current()
            start.wait(CHILD_TIMEOUT)
            for _ in range(rounds):
                ev = Event.from_ipc_descriptor(d)
                ev.sync()
                ev.close()
        except Exception as exc:  # collected and reported to the parent
            errors.append(repr(exc))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(CHILD_TIMEOUT)
    return errors, sum(t.is_alive() for t in threads)


@pytest.mark.gpu
def test_imports_from_many_threads(ipc_dev, stream):
    e = stream.record(options=IPC)
    inbox = SPAWN.Queue()
    with Children() as children:
        child = children.run(_import_and_drop, inbox, 200)
        inbox.put(e.ipc_descriptor)
        errors, hung = child.value()
    e.close()
    assert errors == [] and hung == 0
