"""IPC under faults: processes killed mid-hand-off, exporters that go away, descriptors that name
nothing, file descriptors over many rounds, many importers at once.

Every case runs its processes from the ``spawn`` context through tests/helpers/ipc.py, with
timeouts on every wait; the child entry points are in tests/helpers/ipc_children.py. Each case
must end in a clear error or in working code, never in a crash or a hang: a child that crashes
or hangs fails the test with its exit code. A child that is killed on purpose is started with
that exit code expected.
"""

import ast
import inspect
import multiprocessing.resource_sharer
import os
import pickle
import queue
import random
import signal
import time

import pytest

from helpers import run_python
from helpers import ipc_children as kids
from helpers.ipc import (CHILD_TIMEOUT, SPAWN, Children, DieOnUnpickle, PassFd, assert_fds_back,
                         conn_recv, exit_text, prime, queue_get, require_ipc_events,
                         require_pool_ipc, require_posix_fd_vmm)

from cuda_core import (DeviceMemoryResource, DeviceMemoryResourceOptions, EventOptions,
                       VirtualMemoryResource, VirtualMemoryResourceOptions)

MiB = 1 << 20
IPC_EVENT = EventOptions(ipc_enabled=True, timing_enabled=False)



# -- CPU --------------------------------------------------------------------------------------

_TESTS = os.path.dirname(os.path.abspath(__file__))


def _entry_points():
    return {name: fn for name, fn in vars(kids).items()
            if name.startswith("child_") and inspect.isfunction(fn)
            and fn.__module__ == kids.__name__}


def test_children_import_without_touching_the_driver():
    code = (
        "import sys\n"
        f"sys.path.insert(0, {_TESTS!r})\n"
        "import helpers.ipc_children as kids\n"
        "assert 'libcuda.so' not in open('/proc/self/maps').read(), 'libcuda was loaded'\n"
        "print(len([n for n, f in vars(kids).items() if n.startswith('child_')\n"
        "           and getattr(f, '__module__', None) == kids.__name__]))\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == len(_entry_points()) >= 15


def test_every_entry_point_is_spawnable_and_starts_with_child_setup():
    for name, fn in _entry_points().items():
        assert pickle.loads(pickle.dumps(fn)) is fn, name  # spawn sends it by name
        body = ast.parse(inspect.getsource(fn)).body[0].body
        if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        first = body[0]
        assert (isinstance(first, ast.Expr) and isinstance(first.value, ast.Call)
                and getattr(first.value.func, "id", None) == "child_setup"), (
            f"{name} must start with child_setup() (faulthandler and the hang timer)")


def test_data_helpers():
    a = kids.pattern(1, 1000)
    assert a.dtype.name == "uint8" and len(a) == 1000
    assert (a != kids.pattern(2, 1000)).any() and len(set(a.tolist())) > 100
    assert kids.mismatch(a, a.copy()) is None
    b = a.copy()
    b[417] ^= 0xFF
    assert kids.mismatch(b, a) == f"byte 417 is {int(b[417])}, expected {int(a[417])}"
    assert kids.mismatch(a[:10], a) == "10 bytes instead of 1000"
    assert kids.new_fds({3: "pipe:[1]", 4: "x"}, {3: "pipe:[2]", 4: "x", 5: "y"}) == {
        3: "pipe:[2]", 5: "y"}
    assert kids.outcome(lambda: 7) == ("ok", 7)
    assert kids.outcome(lambda: int("x"))[:2] == ("error", "ValueError")


def test_a_descriptor_for_a_killed_child_waits_in_the_resource_sharer():
    # The mechanics test_child_killed_before_receiving relies on, with /dev/null for a pool's
    # descriptor: the sender's duplicate outlives a receiver that died before asking for it,
    # until resource_sharer.stop(); then a new transfer works, and a child whose report queue
    # is dropped leaves no descriptor behind.
    prime()
    fd = os.open(os.devnull, os.O_RDONLY)
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
        q, gate = SPAWN.Queue(), SPAWN.Event()
        before = kids.counted_fds()
        with Children() as children:
            victim = children.start(kids.child_block_then_get, q, gate,
                                    exitcode=-signal.SIGKILL)
            q.put([PassFd(fd)])
            _drain(q)
            victim.kill()
            victim.join(CHILD_TIMEOUT)
            assert victim.exitcode == -signal.SIGKILL, exit_text(victim.exitcode)
        del victim, q
        held = kids.new_fds(before, kids.counted_fds())
        dups = [n for n, what in held.items() if what == target]
        assert len(dups) == 1, held
        multiprocessing.resource_sharer.stop()
        after = kids.counted_fds()
        assert after.get(dups[0]) != target
        assert_fds_back(before, after, slack=0)
        q2 = SPAWN.Queue()
        gate.set()
        with Children() as children:
            child = children.run(kids.child_block_then_get, q2, gate)
            q2.put([PassFd(fd)])
            assert child.value() == 1
            _drain(q2)
        del child, q2
        held = kids.new_fds(before, kids.counted_fds())
        assert [what for what in held.values() if what == target] == [], held
    finally:
        os.close(fd)


# -- GPU helpers ------------------------------------------------------------------------------

@pytest.fixture
def ipc_mr(dev):
    """An IPC-enabled pool on device 0, closed at teardown."""
    require_pool_ipc(dev)
    mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(ipc_enabled=True,
                                                               max_size=64 * MiB))
    yield mr
    mr.close()


def _buffers(mr, stream, seeds, size):
    """One buffer of ``mr`` per seed, holding ``pattern(seed)`` (written and waited for)."""
    bufs = [mr.allocate(size, stream=stream) for _ in seeds]
    for b, seed in zip(bufs, seeds):
        kids.write_pattern(b, seed, stream)
    return bufs


def _close(bufs, stream):
    for b in bufs:
        b.close(stream)
    stream.sync()


def _drain(*queues):
    """Close Queues this process has put into: their feeder threads flush and exit, closing
    both ends of the pipe here."""
    for q in queues:
        q.close()
        q.join_thread()


def _payload(desc):
    """The 64 bytes a pool descriptor pickles with."""
    rebuild, args = desc.__reduce__()
    return args[0]


def _clean_refusal_or_import(got, what):
    """A buffer import whose outcome the driver leaves open (probe P4: a freed descriptor, one
    of another pool): either it imported and read (16 bytes back), or a CUDAError (the import
    refused, or the read of what it mapped failed), or a ValueError (the stated size beyond
    the mapping). Never a crash: the child exited 0."""
    if got[0] == "ok":
        assert isinstance(got[1], bytes) and len(got[1]) == 16, (what, got)
    else:
        assert got[1] in ("CUDAError", "ValueError"), (what, got)


def _values(children, timeout=None):
    """The values the children (Child objects) returned, in order, read as they come: fails
    as soon as one of them raised or ended without reporting, rather than after the others'
    waits time out."""
    deadline = time.monotonic() + (CHILD_TIMEOUT if timeout is None else timeout)
    reports = [None] * len(children)
    while any(r is None for r in reports):
        if time.monotonic() > deadline:
            late = [c.proc.name for c, r in zip(children, reports) if r is None]
            pytest.fail(f"no report within {timeout or CHILD_TIMEOUT:g} s from {late}")
        for i, c in enumerate(children):
            if reports[i] is not None:
                continue
            try:
                reports[i] = c.queue.get(timeout=0.05)
            except queue.Empty:
                if c.proc.exitcode is None:
                    continue
                reports[i] = c.report(timeout=2)  # what it put before exiting, or a failure
            if reports[i][0] != "ok":
                pytest.fail(f"child {c.proc.name} raised {reports[i][1]}: {reports[i][2]}")
    return [r[1] for r in reports]


# -- 1-3: processes killed around a hand-off --------------------------------------------------

@pytest.mark.gpu
def test_child_killed_while_unpickling(dev, stream, ipc_mr):
    prime()
    assert not ipc_mr.allocation_handle.is_closed  # exported once and cached: in the baseline
    size = 64 * 1024
    buf, buf2 = _buffers(ipc_mr, stream, (1, 2), size)
    seeds = list(range(10, 18))
    before = kids.counted_fds()
    q, q2 = SPAWN.Queue(), SPAWN.Queue()
    with Children() as children:
        victim = children.start(kids.child_die_while_unpickling, q, exitcode=-signal.SIGKILL)
        # The receiver imports buf, then dies unpickling the middle item, before buf2.
        q.put((buf, DieOnUnpickle(), buf2))
        victim.join(CHILD_TIMEOUT)
        assert victim.exitcode == -signal.SIGKILL, exit_text(victim.exitcode)
        _drain(q)
        kids.check_pattern(buf, 1, stream, "buf")
        kids.check_pattern(buf2, 2, stream, "buf2")
        _close([buf, buf2], stream)
        # The pool reuses the memory; a new child imports and checks all of it.
        fresh = _buffers(ipc_mr, stream, seeds, size)
        verifier = children.run(kids.child_verify, q2, seeds)
        q2.put(fresh)
        assert verifier.value() == len(seeds)
        _drain(q2)
    _close(fresh, stream)
    del victim, verifier, q, q2
    assert_fds_back(before, kids.counted_fds())


@pytest.mark.gpu
def test_child_killed_before_receiving(dev, stream, ipc_mr):
    prime()
    handle = ipc_mr.allocation_handle
    target = os.readlink(f"/proc/self/fd/{handle.handle}")
    (buf,) = _buffers(ipc_mr, stream, (3,), 4096)
    q, gate = SPAWN.Queue(), SPAWN.Event()
    before = kids.counted_fds()
    with Children() as children:
        victim = children.start(kids.child_block_then_get, q, gate, exitcode=-signal.SIGKILL)
        q.put((ipc_mr, buf))
        _drain(q)  # pickled and in the pipe: multiprocessing's resource sharer holds a dup
        victim.kill()
        victim.join(CHILD_TIMEOUT)
        assert victim.exitcode == -signal.SIGKILL, exit_text(victim.exitcode)
    del victim, q
    # Python's behaviour: the duplicate waits for a receiver that will never ask, until the
    # resource sharer stops (or this process exits).
    held = kids.new_fds(before, kids.counted_fds())
    dups = [fd for fd, what in held.items() if what == target]
    assert len(dups) == 1, f"expected the resource sharer's one duplicate of {target}: {held}"
    multiprocessing.resource_sharer.stop()
    after = kids.counted_fds()
    assert after.get(dups[0]) != target
    assert_fds_back(before, after)
    # Sending works again (the sharer restarts) to a new child.
    q2 = SPAWN.Queue()
    with Children() as children:
        verifier = children.run(kids.child_verify, q2, [3])
        q2.put([buf])
        assert verifier.value() == 1
        _drain(q2)
    _close([buf], stream)


@pytest.mark.gpu
def test_child_killed_holding_imports(dev, stream, ipc_mr):
    size = 2 * MiB  # a multiple of the pool's granularity: used_mem_current counts it exactly
    seeds, seeds2 = list(range(20, 28)), list(range(30, 38))
    bufs = _buffers(ipc_mr, stream, seeds, size)
    q, acks, q2 = SPAWN.Queue(), SPAWN.Queue(), SPAWN.Queue()
    with Children() as children:
        holder = children.start(kids.child_import_and_hold, q, acks, seeds,
                                exitcode=-signal.SIGKILL)
        q.put(bufs)
        assert queue_get(acks, holder) == "ready"
        holder.kill()
        holder.join(CHILD_TIMEOUT)
        assert holder.exitcode == -signal.SIGKILL, exit_text(holder.exitcode)
        _close(bufs, stream)
        bufs2 = _buffers(ipc_mr, stream, seeds2, size)
        assert ipc_mr.attributes.used_mem_current == len(seeds2) * size
        for b, seed in zip(bufs2, seeds2):
            kids.check_pattern(b, seed, stream)
        verifier = children.run(kids.child_verify, q2, seeds2)
        q2.put(bufs2)
        assert verifier.value() == len(seeds2)
        _drain(q, q2)
    _close(bufs2, stream)
    assert ipc_mr.attributes.used_mem_current == 0


# -- 4-6: lifetimes at exit and across processes ----------------------------------------------

@pytest.mark.gpu
def test_child_exits_without_closing_its_imports(dev, stream, ipc_mr, tmp_path):
    require_ipc_events(dev)
    seeds = [40, 41, 42]
    bufs = _buffers(ipc_mr, stream, seeds, 64 * 1024)
    events = [stream.record(options=IPC_EVENT) for _ in range(2)]
    err_path = str(tmp_path / "child.stderr")
    q, acks = SPAWN.Queue(), SPAWN.Queue()
    with Children() as children:
        child = children.start(kids.child_exit_without_closing, q, acks, err_path, seeds)
        q.put((bufs, events))
        got = queue_get(acks, child)
        assert got == ("ok", 3, 2), got
        child.join(CHILD_TIMEOUT)  # interpreter exit finalizes the imports
        assert child.exitcode == 0, exit_text(child.exitcode)
        _drain(q)
    with open(err_path) as f:
        err = f.read()
    assert "cleanup failed" not in err, err
    assert "Exception ignored" not in err and "Traceback" not in err, err
    for e in events:  # the exporter keeps its events until the importer is done
        e.close()
    _close(bufs, stream)


@pytest.mark.gpu
def test_exporter_closes_its_resource_while_children_hold_imports(dev, stream, ipc_mr):
    size = 64 * 1024
    seeds = [50, 51, 52, 53]
    bufs = _buffers(ipc_mr, stream, seeds, size)
    go, barrier, acks = SPAWN.Event(), SPAWN.Barrier(2), SPAWN.Queue()
    queues = [SPAWN.Queue(), SPAWN.Queue()]
    with Children() as children:
        importers = [children.run(kids.child_hold_then_write, queues[half], acks, go, barrier,
                                  half, seeds) for half in (0, 1)]
        for q in queues:
            q.put(bufs)
        procs = [c.proc for c in importers]
        for _ in importers:
            assert queue_get(acks, procs) == "imported"
        ipc_mr.close()  # buffers open here and imported there
        assert ipc_mr.is_closed
        go.set()
        assert _values(importers) == [len(bufs), len(bufs)]
        _drain(*queues)
    half = size // 2
    for i, b in enumerate(bufs):
        got = kids.read_bytes(b, stream)
        for h in (0, 1):
            problem = kids.mismatch(got[h * half:(h + 1) * half], kids.pattern(100 + h, half))
            assert problem is None, f"buffer {i}, half written by importer {h}: {problem}"
    _close(bufs, stream)
    with pytest.raises(RuntimeError, match="closed"):
        ipc_mr.allocate(16, stream=stream)


@pytest.mark.gpu
def test_exporter_dies_while_an_importer_holds(dev):
    require_pool_ipc(dev)
    size = 64 * 1024
    q_ab, q_ba, gone = SPAWN.Queue(), SPAWN.Queue(), SPAWN.Event()
    with Children() as children:
        exporter = children.run(kids.child_exporter, q_ab, q_ba, 60, size)
        importer = children.run(kids.child_import_after_exporter_died, q_ab, q_ba, gone)
        assert exporter.value() == "freed"
        exporter.proc.join(CHILD_TIMEOUT)
        assert exporter.proc.exitcode == 0, exit_text(exporter.proc.exitcode)
        gone.set()
        got = importer.report()
    # Undefined by the driver's rules; any answer but a crash or a hang is acceptable, and
    # the importer exited 0 (Children checked it).
    if got[0] == "ok":
        assert isinstance(got[1], bytes) and len(got[1]) == size
    else:
        assert got[:2] == ("error", "CUDAError"), got


# -- 7-8: descriptors that name nothing this process may map ----------------------------------

@pytest.mark.gpu
def test_stale_descriptor(dev, stream, ipc_mr):
    size = 2 * MiB
    (old,) = _buffers(ipc_mr, stream, (70,), size)
    stale = old.ipc_descriptor
    _close([old], stream)
    (new,) = _buffers(ipc_mr, stream, (71,), size)  # likely the freed slot
    same_bytes = _payload(stale) == _payload(new.ipc_descriptor)
    q = SPAWN.Queue()
    with Children() as children:
        child = children.run(kids.child_try_imports, [ipc_mr], q)
        # The control first: the stale import could leave the child's context unusable.
        q.put([("buffer", 0, new.ipc_descriptor), ("buffer", 0, stale)])
        control, got = child.value()
        _drain(q)
    assert control == ("ok", kids.pattern(71, 16).tobytes())
    if same_bytes:
        # Probe P4 (driver 580): the reused slot is exported with the very same bytes, so
        # nothing can tell the stale descriptor from the new one, which it then maps.
        assert got == ("ok", kids.pattern(71, 16).tobytes())
    else:
        # P4: a freed slot not reused also imports; what it reads is not defined.
        _clean_refusal_or_import(got, "a freed allocation's descriptor")
    _close([new], stream)


@pytest.mark.gpu
def test_unrelated_descriptors_are_refused(dev, stream):
    require_pool_ipc(dev)
    require_ipc_events(dev)
    from cuda_core._event import IPCEventDescriptor
    from cuda_core._memory._ipc_base import IPCBufferDescriptor

    opts = DeviceMemoryResourceOptions(ipc_enabled=True, max_size=64 * MiB)
    pool_p, pool_q = DeviceMemoryResource(dev, opts), DeviceMemoryResource(dev, opts)
    size = 64 * 1024
    (p_buf,) = _buffers(pool_p, stream, (80,), size)
    rng = random.Random(15)
    forged = IPCBufferDescriptor._init(rng.randbytes(64), size)
    forged_event = IPCEventDescriptor._init(rng.randbytes(64), False)
    q_c, done, q_both, q_p = SPAWN.Queue(), SPAWN.Event(), SPAWN.Queue(), SPAWN.Queue()
    with Children() as children:
        third = children.run(kids.child_export_one, q_c, done, 81, size)
        foreign = queue_get(q_c, third.proc)  # a descriptor of a pool of a third process
        both = children.run(kids.child_try_imports, [pool_p, pool_q], q_both)
        only_p = children.run(kids.child_try_imports, [pool_p], q_p)
        # Controls first, and the imports whose outcome the driver leaves open (P4) last: one
        # that maps the wrong memory could leave the child's context unusable for the rest.
        q_both.put([("buffer", 0, p_buf.ipc_descriptor),  # control: into P'
                    ("buffer", 0, forged),
                    ("event", forged_event),
                    ("devnull_handle",),
                    ("buffer", 1, p_buf.ipc_descriptor)])  # P's descriptor into Q'
        q_p.put([("buffer", 0, p_buf.ipc_descriptor),  # control
                 ("buffer", 0, foreign)])
        control, random_bytes, random_event, devnull, other_pool = both.value()
        control_p, from_third = only_p.value()
        done.set()
        assert third.value() == "closed"
        _drain(q_both, q_p)
    expected = ("ok", kids.pattern(80, 16).tobytes())
    assert control == expected and control_p == expected
    # P4: random bytes are refused with CUDA_ERROR_INVALID_VALUE.
    assert random_bytes[:2] == ("error", "CUDAError"), random_bytes
    assert random_bytes[3] == "CUDA_ERROR_INVALID_VALUE", random_bytes
    assert "from_ipc_descriptor" in random_bytes[2], random_bytes
    _clean_refusal_or_import(other_pool, "another pool's descriptor")
    _clean_refusal_or_import(from_third, "a descriptor of a third process's pool")
    assert random_event[:2] == ("error", "CUDAError"), random_event
    assert random_event[3].startswith("CUDA_ERROR_") and "from_ipc_descriptor" in random_event[2]
    assert devnull[:2] == ("error", "CUDAError"), devnull
    assert devnull[2].startswith("DeviceMemoryResource.from_allocation_handle(): alloc_handle:")
    _close([p_buf], stream)
    pool_p.close()
    pool_q.close()


# -- 9: file descriptors over 1,000 rounds ----------------------------------------------------

WARM, ROUNDS = 5, 1000


def _round(variant, r, conn, stream, mr, vmr):
    """The exporting side of round ``r``: send, wait for the acknowledgement, free."""
    if variant == "pool":
        b = mr.allocate(4096, stream=stream)
        b.fill(r & 0xFF, stream=stream)
        stream.sync()
        # Every 10th round the Buffer itself: its resource travels too (one fd each time).
        conn.send(("buffer", r, b) if r % 10 == 0 else ("desc", r, b.ipc_descriptor))
    elif variant == "allocation_handle":
        conn.send(("handle", r, mr.allocation_handle))
        b = None
    elif variant == "event":
        b = stream.record(options=IPC_EVENT)
        conn.send(("event", r, b) if r % 2 == 0 else ("event_desc", r, b.ipc_descriptor))
    else:  # vmm: the descriptor owns fresh fds each time; they close when it is dropped
        b = vmr.allocate(4096)
        b.fill(r & 0xFF, stream=stream)
        stream.sync()
        desc = b.ipc_descriptor
        conn.send(("desc", r, desc))
        del desc
    return b


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["pool", "allocation_handle", "event", "vmm"])
def test_file_descriptors_come_back_over_many_rounds(dev, stream, variant):
    require_pool_ipc(dev)
    mr = vmr = None
    if variant == "event":
        require_ipc_events(dev)
    if variant == "vmm":
        if not dev.properties.virtual_memory_management_supported:
            pytest.skip("the device has no virtual memory management")
        require_posix_fd_vmm(dev)
        vmr = VirtualMemoryResource(dev, VirtualMemoryResourceOptions(handle_type="posix_fd"))
    if variant in ("pool", "allocation_handle"):
        mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(ipc_enabled=True,
                                                                   max_size=64 * MiB))
        assert not mr.allocation_handle.is_closed  # exported once and cached: in the baseline
    prime()
    conn, child_conn = SPAWN.Pipe()
    # Every round waits at most CHILD_TIMEOUT for the child (conn_recv), whose watchdog is
    # re-armed every round: the block's own budget is for the thousand rounds of a loaded machine.
    with Children(timeout=10 * CHILD_TIMEOUT) as children:
        child = children.run(kids.child_fd_rounds, child_conn, variant, WARM, ROUNDS, mr)
        for r in range(WARM + ROUNDS):
            if r == WARM:
                before = kids.counted_fds()
            sent = _round(variant, r, conn, stream, mr, vmr)
            got = conn_recv(conn, child.proc)
            assert got == ("ack", r), got
            # The importer is done with it: free it here.
            if variant == "event":
                sent.close()
            elif sent is not None:
                sent.close(stream)
            del sent
        stream.sync()
        after = kids.counted_fds()
        child_before, child_after = child.value()
    assert_fds_back(before, after)
    assert_fds_back(child_before, child_after)
    conn.close()
    child_conn.close()
    if mr is not None:
        mr.close()


@pytest.mark.gpu
def test_cached_allocation_handle_opens_no_descriptor(dev, ipc_mr):
    h = ipc_mr.allocation_handle
    before = kids.counted_fds()
    for _ in range(1000):
        assert ipc_mr.allocation_handle is h
    assert_fds_back(before, kids.counted_fds())


# -- 10: 16 importers at once -----------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["descriptor", "buffer"])
def test_sixteen_children_import_one_buffer_at_once(dev, stream, ipc_mr, mode):
    n = 16
    (buf,) = _buffers(ipc_mr, stream, (90,), n * kids.SLOT)
    # The importers meet at the barrier before importing ("descriptor": each has its
    # descriptor) or before receiving ("buffer": 16 fd transfers through the resource sharer at
    # once), and again after reading, before writing.
    barrier = SPAWN.Barrier(n)
    queues = [SPAWN.Queue() for _ in range(n)]
    with Children(timeout=180) as children:
        importers = [children.run(kids.child_concurrent_import, ipc_mr, queues[i], barrier, i,
                                  mode, 90) for i in range(n)]
        for q in queues:
            q.put(buf.ipc_descriptor if mode == "descriptor" else buf)
        assert sorted(_values(importers, timeout=180)) == list(range(n))
        _drain(*queues)
    got = kids.read_bytes(buf, stream)
    for i in range(n):
        slot = got[i * kids.SLOT:(i + 1) * kids.SLOT]
        assert (slot == i + 1).all(), f"slot {i} holds {sorted(set(slot.tolist()))[:8]}"
    _close([buf], stream)
