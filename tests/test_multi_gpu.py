"""Two GPUs: copies between devices' pools, peer access (live set, driver's view, kernels across
devices), streams and pools per device from threads, device switching, and IPC across devices.

Every test needs two GPUs and skips with "needs two GPUs" otherwise; those that touch the
other device's memory directly also need peer access both ways ("needs two devices with peer
access"). A kernel never touches memory its device cannot reach in this process: the driver's
access (cuMemPoolGetAccess or cuMemGetAccess, kids.access_flags) is checked first, and the one case that faults
on purpose runs in a child. Nothing here uses NVLink multicast.
"""

import contextlib
import threading
import time

import numpy as np
import pytest

from helpers import StreamGate
from helpers import ipc_children as kids
from helpers.ipc import (CHILD_TIMEOUT, SPAWN, Children, queue_get, require_ipc_events,
                         require_pool_ipc, require_posix_fd_vmm)

from cuda_core import (Device, DeviceMemoryResource, DeviceMemoryResourceOptions, EventOptions,
                       PinnedMemoryResource, System, VirtualMemoryResource,
                       VirtualMemoryResourceOptions)

MiB = 1 << 20
NONE, READWRITE = 0, kids.READWRITE
IPC_EVENT = EventOptions(ipc_enabled=True, timing_enabled=False)
# What a kernel touching unmapped memory of another device ends in: an MMU fault, reported as
# an illegal address (an unspecified launch failure on some drivers).
FAULTED = {"CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED"}


def _pool(device_id, **options):
    return DeviceMemoryResource(device_id, DeviceMemoryResourceOptions(max_size=64 * MiB,
                                                                       **options))


@pytest.fixture
def two():
    """Devices 0 and 1, each made current once on this thread (device 0 last); device 0 is
    current again after the test."""
    if System().num_devices < 2:
        pytest.skip("needs two GPUs")
    d0, d1 = Device(0), Device(1)
    d1.set_current()
    d0.set_current()
    yield d0, d1
    Device(0).set_current()


@pytest.fixture
def peers(two):
    """``two``, when each device can access the other's memory."""
    d0, d1 = two
    if not (d0.can_access_peer(d1) and d1.can_access_peer(d0)):
        pytest.skip("needs two devices with peer access")
    return two


def _flags(ptr, device_id):
    """The access device ``device_id`` has on ``ptr`` (kids.access_flags), device 0 current
    again afterwards."""
    try:
        return kids.access_flags(ptr, device_id)
    finally:
        Device(0).set_current()


def _drain(*queues):
    for q in queues:
        q.close()
        q.join_thread()


def _run_threads(work, args_list, timeout=CHILD_TIMEOUT):
    """Run ``work(*args)`` for each args on its own thread, joined within ``timeout``; fails
    with every exception the threads raised. ``work`` gets an extra first argument, a
    Barrier all threads pass before working, which a failing thread breaks."""
    errors = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(args_list))

    def run(*args):
        try:
            work(barrier, *args)
        except BaseException as exc:  # collected, and reported below with the thread's name
            with lock:
                errors.append(f"{threading.current_thread().name}{args}: {exc!r}")
            barrier.abort()

    threads = [threading.Thread(target=run, args=args, daemon=True) for args in args_list]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout  # one budget for all of them
    for t in threads:
        t.join(max(deadline - time.monotonic(), 0.0))
    stuck = [t.name for t in threads if t.is_alive()]
    assert not stuck, f"threads still running after {timeout} s: {stuck}; errors: {errors}"
    assert errors == []


# -- 1. copies between two devices' pools -----------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("size", [1, MiB + 3])
@pytest.mark.parametrize("peer_access", [False, True], ids=["no-peer-access", "peer-access"])
def test_copies_between_the_pools_of_two_devices(request, two, size, peer_access):
    d0, d1 = request.getfixturevalue("peers") if peer_access else two
    mr0, mr1 = _pool(0), _pool(1)
    if peer_access:
        mr0.peer_accessible_by = {1}
        mr1.peer_accessible_by = {0}
    assert set(mr0.peer_accessible_by) == ({d1} if peer_access else set())
    s0, s1 = d0.create_stream(), d1.create_stream()
    a0, b0, c0 = (mr0.allocate(size, stream=s0) for _ in range(3))
    a1, b1, c1 = (mr1.allocate(size, stream=s1) for _ in range(3))
    kids.write_pattern(a0, 1, s0)
    kids.write_pattern(a1, 2, s1)
    b0.fill(0, stream=s0)
    c0.fill(0, stream=s0)
    b1.fill(0, stream=s1)
    c1.fill(0, stream=s1)
    s0.sync()
    s1.sync()
    a0.copy_to(b1, stream=s0)  # device 0 -> 1, ordered on device 0
    c1.copy_from(a0, stream=s1)  # device 0 -> 1, ordered on device 1
    a1.copy_to(b0, stream=s1)  # device 1 -> 0, ordered on device 1
    c0.copy_from(a1, stream=s0)  # device 1 -> 0, ordered on device 0
    s0.sync()
    s1.sync()
    for name, buf, stream, seed in (("b1", b1, s1, 1), ("c1", c1, s1, 1),
                                    ("b0", b0, s0, 2), ("c0", c0, s0, 2)):
        kids.check_pattern(buf, seed, stream, name)
    for buf, stream in ((a0, s0), (b0, s0), (c0, s0), (a1, s1), (b1, s1), (c1, s1)):
        buf.close(stream)
    s0.sync()
    s1.sync()
    mr0.close()
    mr1.close()
    s0.close()
    s1.close()


# -- 2. peer_accessible_by: live, one driver call per bulk operation, the driver agrees -------

def _set_access_calls():
    """How many times the pools have called cuMemPoolSetAccess (the test hook of _mempool)."""
    from cuda_core._memory import _mempool

    hook = _mempool._set_access_calls
    return hook() if callable(hook) else hook


@pytest.mark.gpu
@pytest.mark.parametrize("which", ["own_pool", "device_pool"])
def test_peer_accessible_by_is_live_and_bulk_operations_make_one_call(peers, which):
    d0, d1 = peers
    s0 = d0.create_stream()
    mr = _pool(0) if which == "own_pool" else d0.memory_resource
    original = set(mr.peer_accessible_by)
    buf = mr.allocate(4096, stream=s0)
    s0.sync()
    try:
        p = mr.peer_accessible_by
        p.clear()

        def check(expected, calls, before):
            made = _set_access_calls() - before
            assert made == calls, f"{made} cuMemPoolSetAccess calls, expected {calls}"
            assert set(p) == expected and set(mr.peer_accessible_by) == expected
            assert len(p) == len(expected) and (d1 in p) == (1 in p) == bool(expected)
            assert 0 not in p and d0 not in p  # the owner is never listed
            want = READWRITE if expected else NONE
            assert _flags(buf.handle, 1) == want, "the driver disagrees with the set"
            assert _flags(buf.handle, 0) == READWRITE  # the owner keeps its access

        check(set(), 0, _set_access_calls())
        # (step, the set afterwards, cuMemPoolSetAccess calls it makes). A single add or
        # discard may call the driver without reading first; a bulk operation or an
        # assignment reads, and calls once, or not at all when nothing changes.
        steps = [
            (lambda: p.add(1), {d1}, 1),
            (lambda: p.discard(d1), set(), 1),
            (lambda: p.add(0), set(), 0),  # the owner is ignored
            (lambda: p.discard(d0), set(), 0),
            (lambda: setattr(mr, "peer_accessible_by", [0, 1]), {d1}, 1),
            (lambda: setattr(mr, "peer_accessible_by", {d1}), {d1}, 0),
            (lambda: setattr(mr, "peer_accessible_by", []), set(), 1),
            (lambda: p.update([0, d1]), {d1}, 1),
            (lambda: p.difference_update([1]), set(), 1),
            (lambda: p.symmetric_difference_update([1]), {d1}, 1),
            (lambda: p.intersection_update([1, 0]), {d1}, 0),
            (lambda: p.intersection_update([0]), set(), 1),
            (lambda: p.update([1]), {d1}, 1),
            (lambda: p.clear(), set(), 1),
            (lambda: p.clear(), set(), 0),
        ]
        for i, (step, expected, calls) in enumerate(steps):
            before = _set_access_calls()
            step()
            try:
                check(expected, calls, before)
            except AssertionError as exc:
                raise AssertionError(f"step {i}: {exc}") from None
        # The in-place operators: one call each, and the name still holds the live set.
        q = mr.peer_accessible_by
        before = _set_access_calls()
        q |= {d1}
        check({d1}, 1, before)
        before = _set_access_calls()
        q -= {1}
        check(set(), 1, before)
        before = _set_access_calls()
        q ^= {d1, d0}
        check({d1}, 1, before)
        before = _set_access_calls()
        q &= {d0}
        check(set(), 1, before)
        assert set(q) == set()
    finally:
        buf.close(s0)
        s0.sync()
        mr.peer_accessible_by = original
        if which == "own_pool":
            mr.close()
        s0.close()
    if which == "device_pool":
        assert set(mr.peer_accessible_by) == original


# -- 3. kernels on one device using another's memory ------------------------------------------

@pytest.mark.gpu
def test_kernel_on_device_1_reads_and_writes_a_device_0_pool_buffer(peers):
    d0, d1 = peers
    s0, s1 = d0.create_stream(), d1.create_stream()
    mr = _pool(0)
    mr.peer_accessible_by = {1}
    n = MiB + 3
    buf = mr.allocate(n, stream=s0)
    kids.write_pattern(buf, 5, s0)
    assert _flags(buf.handle, 1) == READWRITE
    kids.add_one(buf.handle, n, s1, 1)
    s1.sync()
    got = kids.read_bytes(buf, s0)  # read on device 0
    assert kids.mismatch(got, kids.pattern(5, n) + np.uint8(1)) is None
    buf.close(s0)
    s0.sync()
    mr.close()


@pytest.mark.gpu
def test_kernels_on_both_devices_write_a_pinned_pool_buffer(two):
    d0, d1 = two
    if not d0.properties.host_memory_pools_supported:
        pytest.skip("device 0: properties.host_memory_pools_supported is False")
    s0, s1 = d0.create_stream(), d1.create_stream()
    mr = PinnedMemoryResource()
    n = MiB + 3
    buf = mr.allocate(n, stream=s0)
    s0.sync()
    host = np.from_dlpack(buf).view(np.uint8)
    host[:] = kids.pattern(6, n)
    for device_id in (0, 1):
        assert _flags(buf.handle, device_id) == READWRITE, f"device {device_id}"
    kids.add_one(buf.handle, n, s0, 0)
    s0.sync()
    kids.add_one(buf.handle, n, s1, 1)
    s1.sync()
    assert kids.mismatch(host.copy(), kids.pattern(6, n) + np.uint8(2)) is None
    del host
    buf.close(s0)
    s0.sync()
    mr.close()


@pytest.mark.gpu
def test_kernel_on_device_1_uses_a_vmm_buffer_shared_with_it(peers):
    d0, d1 = peers
    if not d0.properties.virtual_memory_management_supported:
        pytest.skip("the device has no virtual memory management")
    s0, s1 = d0.create_stream(), d1.create_stream()
    vmr = VirtualMemoryResource(d0, VirtualMemoryResourceOptions(peers=(1,)))
    n = MiB + 3
    buf = vmr.allocate(n)
    buf.fill(7, stream=s0)
    s0.sync()
    assert _flags(buf.handle, 1) == READWRITE
    kids.add_one(buf.handle, n, s1, 1)
    s1.sync()
    assert (kids.read_bytes(buf, s0) == 8).all()
    # Grown past its mapping: the new memory is shared with device 1 as well.
    big = vmr.modify_allocation(buf, 5 * MiB + 1)
    assert big.size == 5 * MiB + 1
    assert (kids.read_bytes(big, s0, 0, n) == 8).all()  # what was there is kept
    big.fill(9, stream=s0)
    s0.sync()
    for where in (big.handle, big.handle + big.size - 1):
        assert _flags(where, 1) == READWRITE, f"at {where - big.handle} bytes in"
    kids.add_one(big.handle, big.size, s1, 1)
    s1.sync()
    assert (kids.read_bytes(big, s0) == 10).all()
    big.close(s0)
    s0.sync()


@pytest.mark.gpu
def test_kernel_without_peer_access_fails_in_a_child_with_a_clear_error(two):
    with Children() as children:
        got = children.run(kids.child_kernel_without_peer_access, MiB).report()
    # The child exited 0 (Children checked it) after a CUDAError, not a crash.
    assert got[:2] == ("error", "CUDAError"), got
    assert got[3] in FAULTED, got


# -- 4-5. threads: a stream and a pool per device; switching devices ---------------------------

@pytest.mark.gpu
def test_a_stream_and_a_pool_per_device_from_several_threads(two):
    for device_id in (0, 1):
        kids.kernel(device_id, "fill_u32")  # compiled before the threads start

    def work(barrier, device_id, thread):
        dev = Device(device_id)
        dev.set_current()
        s = dev.create_stream()
        mr = _pool(device_id)
        host = kids.pinned(4096)
        words = np.from_dlpack(host).view(np.uint32)
        barrier.wait(CHILD_TIMEOUT)
        for i in range(100):
            value = thread * 1000 + i
            b = mr.allocate(4096, stream=s)
            kids.fill_u32(b.handle, value, 1024, s, device_id)
            b.copy_to(host, stream=s)
            s.sync()
            if not (words == value).all():
                raise AssertionError(f"round {i}: read {int(words[0])}, expected {value}")
            b.close(s)
        s.sync()
        del words
        host.close()
        mr.close()
        s.close()

    _run_threads(work, [(d, d * 4 + t) for d in (0, 1) for t in range(4)])


@pytest.mark.gpu
def test_switching_devices_from_several_threads(two):
    for device_id in (0, 1):
        kids.kernel(device_id, "fill_u32")

    def work(barrier, thread):
        Device(thread % 2).set_current()  # the pinned staging memory needs a context
        host = kids.pinned(64)
        words = np.from_dlpack(host).view(np.uint32)
        barrier.wait(CHILD_TIMEOUT)
        for i in range(200):
            device_id = (i + thread) % 2
            dev = Device(device_id)
            dev.set_current()
            current = Device()
            assert current is dev, f"round {i}: Device() is {current}, expected {dev}"
            s = current.create_stream()
            assert s.device == dev
            b = current.allocate(64, stream=s)
            assert kids.pointer_device(b.handle) == device_id
            value = thread * 100000 + i
            kids.fill_u32(b.handle, value, 16, s, device_id)
            b.copy_to(host, stream=s)
            s.sync()
            if not (words == value).all():
                raise AssertionError(f"round {i} on device {device_id}: read {int(words[0])}, "
                                     f"expected {value}")
            b.close(s)
            s.sync()
            s.close()
        del words
        host.close()

    _run_threads(work, [(t,) for t in range(4)])


# -- 6-7. IPC across devices ------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("owner, peer", [(0, 1), (1, 0)])
def test_ipc_buffer_written_by_a_kernel_on_the_other_device(peers, owner, peer):
    dev = peers[owner]
    require_pool_ipc(dev)
    s = dev.create_stream()
    mr = _pool(owner, ipc_enabled=True)
    n = MiB + 3
    buf = mr.allocate(n, stream=s)
    kids.write_pattern(buf, 11, s)
    q = SPAWN.Queue()
    with Children() as children:
        child = children.run(kids.child_peer_write, q, owner, peer)
        q.put(buf)
        seen, now = child.value()
        _drain(q)
    assert seen == [] and now == [peer]  # an import starts with no peer; the child granted one
    assert set(mr.peer_accessible_by) == set()  # peer access is per process
    assert kids.mismatch(kids.read_bytes(buf, s), kids.pattern(11, n) + np.uint8(1)) is None
    buf.close(s)
    s.sync()
    mr.close()


@pytest.mark.gpu
def test_vmm_buffer_imported_for_a_kernel_on_the_other_device(peers):
    d0, d1 = peers
    if not d0.properties.virtual_memory_management_supported:
        pytest.skip("the device has no virtual memory management")
    require_posix_fd_vmm(d0)
    s0 = d0.create_stream()
    vmr = VirtualMemoryResource(d0, VirtualMemoryResourceOptions(handle_type="posix_fd"))
    n = MiB + 3
    buf = vmr.allocate(n)
    kids.write_pattern(buf, 12, s0)
    q = SPAWN.Queue()
    with Children() as children:
        child = children.run(kids.child_vmm_peer_write, q, 0, 1)
        q.put(buf.ipc_descriptor)
        assert child.value() == n
        _drain(q)
    assert kids.mismatch(kids.read_bytes(buf, s0), kids.pattern(12, n) + np.uint8(1)) is None
    buf.close(s0)
    s0.sync()


@contextlib.contextmanager
def _gated(stream):
    """``stream`` held behind a StreamGate (the gate, yielded) until the block opens it; at the
    end the gate is open, ``stream`` synchronized and the gate freed, whatever happened."""
    gate = StreamGate(stream)
    try:
        yield gate
    finally:
        gate.open()
        stream.sync()
        gate.close()


def _child_released_by(gate, target, sent, *args):
    """Runs ``target(q, acks, go, *args)`` in a child and puts ``sent`` on ``q``. Returns the
    child's first ack, taken while ``gate`` still holds the exporter's stream, and the child's
    value once the gate is open and ``go`` set."""
    q, acks, go = SPAWN.Queue(), SPAWN.Queue(), SPAWN.Event()
    with Children() as children:
        child = children.run(target, q, acks, go, *args)
        q.put(sent)
        got = queue_get(acks, child.proc)
        gate.open()
        go.set()
        result = child.value()
        _drain(q)
    return got, result


@pytest.mark.gpu
def test_ipc_event_orders_a_copy_on_the_other_device(peers):
    d0, d1 = peers
    require_pool_ipc(d0)
    require_ipc_events(d0)
    s0 = d0.create_stream()
    mr = _pool(0, ipc_enabled=True)
    count = 1024
    buf = mr.allocate(4 * count, stream=s0)
    # Zeroed by the kernel the gated stream runs below, so that its first launch (which loads
    # it, CUDA's lazy loading) comes before the gate: loading a kernel may wait for the
    # context's work, the gated stream's included (the test hung there on two H200s).
    kids.fill_u32(buf.handle, 0, count, s0, 0)
    s0.sync()
    with _gated(s0) as gate:  # s0 waits for the host from here on
        kids.fill_u32(buf.handle, 7, count, s0, 0)
        event = s0.record(options=IPC_EVENT)
        got, result = _child_released_by(gate, kids.child_wait_event_across_devices,
                                         (buf, event), 0, 1, 7)
    # The copy was queued on device 1 behind the wait while the event was pending.
    assert got == ("queued", True, True), got
    assert result == {"pending_before_wait": True, "first": 7, "all_equal": True}
    event.close()
    buf.close(s0)
    s0.sync()
    mr.close()


def _device_1_event_waited_on_by_a_child(two, target, as_argument):
    """An IPC event recorded on a gated stream of device 1, its descriptor put on the queue of
    ``target`` (run by :func:`_child_released_by`; the event itself also as the child's
    ``Process`` argument where ``as_argument``): the child's ack and its value. Device 0 is
    current again at the end."""
    d1 = two[1]
    require_ipc_events(d1)
    d1.set_current()
    s1 = d1.create_stream()
    with _gated(s1) as gate:  # s1 waits for the host from here on
        event = s1.record(options=IPC_EVENT)
        extra = (event,) if as_argument else ()
        got, result = _child_released_by(gate, target, event.ipc_descriptor, *extra)
    Device(0).set_current()
    event.close()
    return got, result


@pytest.mark.gpu
def test_a_stream_waits_on_an_event_imported_in_the_other_devices_context(two):
    # Issue 28: examples/multi_gpu_allreduce.py's ranks died in cuStreamWaitEvent here.
    got, facts = _device_1_event_waited_on_by_a_child(
        two, kids.child_wait_on_events_opened_elsewhere, as_argument=True)
    # Both imports were pending, and device 0's stream was held behind them.
    assert got == ("queued", True, True, True), got
    assert facts == {"argument": 1, "descriptor": 1, "done": (True, True, True)}


@pytest.mark.gpu
def test_a_graph_waits_on_an_event_imported_in_the_other_devices_context(two):
    # The graph counterpart of the test above: an event-wait node on device 0's graph, for an
    # event opened in device 1's context. It runs in a child, so that a crash fails this test.
    got, facts = _device_1_event_waited_on_by_a_child(
        two, kids.child_graph_waits_on_an_event_opened_elsewhere, as_argument=False)
    # The event was pending, and device 0's work after the graph was held behind it.
    assert got == ("queued", True, True), got
    assert facts == {"device": 1, "done": (True, True)}
