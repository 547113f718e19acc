"""Child entry points of the IPC fault and multi-GPU tests (tests/test_ipc_faults.py,
tests/test_multi_gpu.py), and the data helpers both sides use.

Every entry point is a module-level function named ``child_*`` (spawn pickles it by name) whose
first statement is :func:`helpers.ipc.child_setup`: ``faulthandler.enable()`` and
``faulthandler.dump_traceback_later(CHILD_TIMEOUT - 10, exit=True)``, so a child that crashes
prints its stack and one that hangs prints every thread's stack and exits before the parent
gives up on it. Entry points started with ``Children.run`` report their return value or
exception through the harness's Queue (``("ok", value)`` or ``("error", type name, message,
.name)``); intermediate hand-shakes go through the Queues, Pipes, Events and Barriers the test
passes in, and every wait here has a timeout.

Importing this module touches no GPU: cuda_core makes no driver call at import, and everything
else is imported inside the functions that need it.
"""

import contextlib
import gc
import os
import sys
import threading

import numpy as np

from helpers.ipc import CHILD_TIMEOUT, child_setup, open_fds

SLOT = 4096  # bytes each of the concurrent importers writes (test 10 of the fault tests)
_KEEP = []  # what child_exit_without_closing leaves open for interpreter exit to finalize


# -- data helpers (both sides) ----------------------------------------------------------------

def pattern(seed, n):
    """``n`` bytes that differ from one ``seed`` to the next and along the buffer."""
    i = np.arange(n, dtype=np.uint64)
    return ((i * np.uint64(131) + np.uint64(seed * 7 + 1)) & np.uint64(0xFF)).astype(np.uint8)


def pinned(n):
    """``n`` bytes of pinned host memory (LegacyPinnedMemoryResource: no pool needed)."""
    from cuda_core import LegacyPinnedMemoryResource

    return LegacyPinnedMemoryResource().allocate(n)


def _view(buf, offset, n):
    from cuda_core import Buffer

    if offset == 0 and n == buf.size:
        return buf
    return Buffer.from_handle(buf.handle + offset, n)


def write_bytes(buf, data, stream, offset=0):
    """Copy the uint8 array ``data`` into ``buf`` at ``offset`` through pinned host memory, and
    wait for the copy."""
    staging = pinned(len(data))
    try:
        host = np.from_dlpack(staging).view(np.uint8)
        host[:] = data
        del host
        _view(buf, offset, len(data)).copy_from(staging, stream=stream)
        stream.sync()
    finally:
        staging.close()


def write_pattern(buf, seed, stream):
    write_bytes(buf, pattern(seed, buf.size), stream)


def read_bytes(buf, stream, offset=0, n=None):
    """``n`` bytes of ``buf`` from ``offset`` (the rest of it by default), copied into pinned
    host memory on ``stream`` and returned as a new uint8 array."""
    n = buf.size - offset if n is None else n
    staging = pinned(n)
    try:
        _view(buf, offset, n).copy_to(staging, stream=stream)
        stream.sync()
        host = np.from_dlpack(staging).view(np.uint8)
        out = host.copy()
        del host
        return out
    finally:
        staging.close()


def mismatch(got, expected):
    """None when the arrays are equal, else a message naming the first differing index."""
    if got.shape == expected.shape and np.array_equal(got, expected):
        return None
    if got.shape != expected.shape:
        return f"{got.shape[0]} bytes instead of {expected.shape[0]}"
    i = int(np.flatnonzero(got != expected)[0])
    return f"byte {i} is {int(got[i])}, expected {int(expected[i])}"


def check_pattern(buf, seed, stream, what="buffer"):
    """Raise AssertionError unless ``buf`` holds ``pattern(seed, buf.size)``."""
    problem = mismatch(read_bytes(buf, stream), pattern(seed, buf.size))
    if problem is not None:
        raise AssertionError(f"{what}: {problem}")


def new_fds(before, after):
    """The descriptors of ``after`` that ``before`` does not have (see assert_fds_back)."""
    return {fd: target for fd, target in after.items() if before.get(fd) != target}


def counted_fds():
    gc.collect()
    return open_fds()


def outcome(call):
    """``("ok", call())`` or ``("error", type name, message, .name)``, as the harness reports."""
    try:
        return ("ok", call())
    except Exception as exc:
        return ("error", type(exc).__name__, str(exc), getattr(exc, "name", None))


# -- kernels ----------------------------------------------------------------------------------

KERNELS = r"""
extern "C" __global__ void add_one(unsigned char* p, unsigned long long n) {
    unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n; i += step)
        p[i] += 1;
}
extern "C" __global__ void fill_u32(unsigned int* p, unsigned int value, unsigned long long n) {
    unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n; i += step)
        p[i] = value;
}
"""

_modules = {}  # architecture -> ObjectCode, made under _modules_lock
_modules_lock = threading.Lock()


def kernel(device_id, name):
    """Kernel ``name`` of KERNELS compiled (once per process and architecture) for device
    ``device_id``'s architecture."""
    from cuda_core import Device, Program, ProgramOptions

    arch = Device(device_id).arch
    with _modules_lock:
        module = _modules.get(arch)
        if module is None:
            opts = ProgramOptions(arch=f"sm_{arch}", std="c++17")
            module = Program(KERNELS, "c++", options=opts).compile("cubin")
            _modules[arch] = module
    return module.get_kernel(name)


def _config(n):
    from cuda_core import LaunchConfig

    return LaunchConfig(grid=max(1, min((n + 255) // 256, 1024)), block=256)


def add_one(ptr, n, stream, device_id):
    """Launch ``p[i] += 1`` over ``n`` bytes at ``ptr`` on ``stream`` (a stream of device
    ``device_id``)."""
    from cuda_core import launch

    launch(stream, _config(n), kernel(device_id, "add_one"), int(ptr), np.uint64(n))


def fill_u32(ptr, value, count, stream, device_id):
    """Launch ``p[i] = value`` over ``count`` 32-bit words at ``ptr`` on ``stream``."""
    from cuda_core import launch

    launch(stream, _config(count), kernel(device_id, "fill_u32"), int(ptr), np.uint32(value),
           np.uint64(count))


def access_flags(ptr, device_id):
    """The access device ``device_id`` has to the memory at ``ptr``, as the driver keeps it: 0
    none, 1 read, 3 read-write. For a pool's allocation (imported ones too) that is the pool's
    access (``cuMemPoolGetAccess``); for a virtual memory mapping, the mapping's
    (``cuMemGetAccess``). Neither faults, unlike touching memory a device cannot reach.
    (``CU_POINTER_ATTRIBUTE_ACCESS_FLAGS`` is no substitute: on two NVLink-connected H200s,
    driver 580, it gave 3 for every device on every allocation, pools that grant nothing and
    plain cuMemAlloc memory alike, while a kernel of the other device faulted there.) The
    calling thread is left with device ``device_id`` current."""
    import ctypes

    from cuda_core import Device

    class Location(ctypes.Structure):  # CUmemLocation
        _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]

    Device(device_id).set_current()
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuPointerGetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64]
    where = Location(1, device_id)  # CU_MEM_LOCATION_TYPE_DEVICE
    pool = ctypes.c_void_p(0)
    rc = lib.cuPointerGetAttribute(ctypes.byref(pool), 17, ctypes.c_uint64(int(ptr)))
    if rc == 0 and pool.value:  # CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: a pool's allocation
        flags = ctypes.c_int(-1)
        rc = lib.cuMemPoolGetAccess(ctypes.byref(flags), pool, ctypes.byref(where))
        call = "cuMemPoolGetAccess"
    else:
        flags = ctypes.c_ulonglong(1 << 40)
        lib.cuMemGetAccess.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64]
        rc = lib.cuMemGetAccess(ctypes.byref(flags), ctypes.byref(where),
                                ctypes.c_uint64(int(ptr)))
        call = "cuMemGetAccess"
    if rc != 0:
        raise AssertionError(f"{call} failed with CUresult {rc}")
    return int(flags.value)


def pointer_device(ptr):
    """``CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`` of ``ptr``."""
    import ctypes

    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuPointerGetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64]
    value = ctypes.c_int(-1)
    rc = lib.cuPointerGetAttribute(ctypes.byref(value), 9, ctypes.c_uint64(int(ptr)))
    if rc != 0:
        raise AssertionError(f"cuPointerGetAttribute(DEVICE_ORDINAL) failed with CUresult {rc}")
    return value.value


READWRITE = 3


def _setup(device_id=0):
    """Device ``device_id`` current on this thread, and a new stream on it."""
    from cuda_core import Device

    dev = Device(device_id)
    dev.set_current()
    return dev, dev.create_stream()


def _get(q):
    return q.get(timeout=CHILD_TIMEOUT)


def _recv(conn):
    if not conn.poll(CHILD_TIMEOUT):
        raise TimeoutError(f"no message from the parent within {CHILD_TIMEOUT:g} s")
    return conn.recv()


def _wait(event, what):
    if not event.wait(CHILD_TIMEOUT):
        raise TimeoutError(f"the parent did not set {what} in time")


@contextlib.contextmanager
def _breaking(barrier):
    """Break ``barrier`` if the block raises, so that the other processes waiting at it fail
    at once instead of timing out."""
    try:
        yield
    except BaseException:
        barrier.abort()
        raise


def _close_all(bufs, stream):
    for b in bufs:
        b.close(stream)
    stream.sync()


# -- fault tests: hand-off, death, lifetimes --------------------------------------------------

def child_die_while_unpickling(q):
    """Gets one message, whose DieOnUnpickle kills this process midway. Returns (exit code 0)
    only if unpickling finished, which the test reports as a failure."""
    child_setup()
    _setup()
    got = _get(q)
    return f"unpickled {len(got)} items without dying"


def child_verify(q, seeds):
    """Gets a list of Buffers, checks each is an imported buffer holding ``pattern(seed)``,
    closes them and waits for the frees. Returns how many it checked."""
    child_setup()
    _, s = _setup()
    bufs = _get(q)
    if len(bufs) != len(seeds):
        raise AssertionError(f"got {len(bufs)} buffers, expected {len(seeds)}")
    for i, (b, seed) in enumerate(zip(bufs, seeds)):
        if not (b.is_mapped and b.memory_resource.is_mapped):
            raise AssertionError(f"buffer {i} is not an imported (mapped) buffer")
        check_pattern(b, seed, s, f"buffer {i}")
    _close_all(bufs, s)
    return len(bufs)


def child_block_then_get(q, gate):
    """Blocks on ``gate`` before reading ``q``; the test kills it while it waits."""
    child_setup()
    _wait(gate, "the gate")
    return len(_get(q))


def child_import_and_hold(q, acks, seeds):
    """Imports the Buffers it gets, checks them, says ``"ready"``, then waits to be killed
    while holding every import."""
    child_setup()
    _, s = _setup()
    bufs = _get(q)
    for i, (b, seed) in enumerate(zip(bufs, seeds)):
        check_pattern(b, seed, s, f"buffer {i}")
    acks.put("ready")
    threading.Event().wait(CHILD_TIMEOUT)
    return len(bufs)  # not reached: the test kills this process


def child_exit_without_closing(q, acks, stderr_path, seeds):
    """Imports Buffers and IPC events, waits on the events, checks the data, then ends with
    ``sys.exit(0)`` leaving every import open: interpreter exit finalizes them. Its stderr goes
    to ``stderr_path`` for the test to read."""
    child_setup()
    err = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(err, 2)
    os.close(err)
    try:
        dev, s = _setup()
        bufs, events = _get(q)
        for e in events:
            s.wait(e)
        for i, (b, seed) in enumerate(zip(bufs, seeds)):
            check_pattern(b, seed, s, f"buffer {i}")
        if not all(e.is_ipc_enabled for e in events):
            raise AssertionError("an imported event is not IPC-enabled")
        _KEEP.extend([dev, s, bufs, events, bufs[0].memory_resource])
        acks.put(("ok", len(bufs), len(events)))
    except Exception as exc:
        acks.put(("error", type(exc).__name__, str(exc), getattr(exc, "name", None)))
        raise
    sys.stderr.flush()
    sys.exit(0)


def child_hold_then_write(q, acks, go, barrier, half, seeds):
    """Imports the Buffers it gets and checks them, says ``"imported"``, waits for ``go`` (the
    exporter has closed its resource meanwhile), checks them again, waits for the other
    importer at ``barrier``, then writes ``pattern(100 + half)`` into its half of every
    buffer, closes them and waits for the frees."""
    child_setup()
    with _breaking(barrier):
        _, s = _setup()
        bufs = _get(q)
        for i, (b, seed) in enumerate(zip(bufs, seeds)):
            check_pattern(b, seed, s, f"buffer {i} before the exporter closed its resource")
        acks.put("imported")
        _wait(go, "go")
        for i, (b, seed) in enumerate(zip(bufs, seeds)):
            check_pattern(b, seed, s, f"buffer {i} after the exporter closed its resource")
        barrier.wait(CHILD_TIMEOUT)  # both importers have read the original data
        for b in bufs:
            n = b.size // 2
            write_bytes(b, pattern(100 + half, n), s, offset=half * n)
        _close_all(bufs, s)
    return len(bufs)


def child_exporter(q_out, q_ack, seed, size):
    """The exporter of a sacrificial pair: sends one Buffer of its own IPC pool, waits until
    the importer has it, then frees it (the driver's ordering rule broken on purpose) and
    exits."""
    child_setup()
    from cuda_core import DeviceMemoryResource, DeviceMemoryResourceOptions

    dev, s = _setup()
    mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(ipc_enabled=True,
                                                               max_size=64 << 20))
    buf = mr.allocate(size, stream=s)
    write_pattern(buf, seed, s)
    q_out.put(buf)
    got = _get(q_ack)
    if got != "imported":
        raise AssertionError(f"the importer answered {got!r}")
    buf.close(s)
    s.sync()
    mr.close()
    return "freed"


def child_import_after_exporter_died(q_in, q_ack, gone):
    """The importer of the pair: imports the Buffer, acknowledges, waits until the exporter
    has exited, then copies its bytes out. Returns them, or raises what the copy raised."""
    child_setup()
    _, s = _setup()
    buf = _get(q_in)
    q_ack.put("imported")
    _wait(gone, "gone")
    return read_bytes(buf, s).tobytes()


def child_try_imports(mapped, q):
    """Holds the mapped resources it was started with (``mapped``, a list) and tries each job
    it gets: ``("buffer", index into mapped, descriptor)``, ``("event", descriptor)`` or
    ``("devnull_handle",)`` (``from_allocation_handle`` with a descriptor of /dev/null).
    Returns one harness-style outcome per job; whatever imported is closed again. A buffer
    import's "ok" value is its first 16 bytes."""
    child_setup()
    from cuda_core import Buffer, DeviceMemoryResource, Event

    _, s = _setup()
    results = []
    for job in _get(q):
        if job[0] == "buffer":
            mmr = mapped[job[1]]

            def import_buffer(mmr=mmr, desc=job[2]):
                b = Buffer.from_ipc_descriptor(mmr, desc, stream=s)
                try:
                    return read_bytes(b, s, 0, min(16, b.size)).tobytes()
                finally:
                    b.close(s)
                    s.sync()

            results.append(outcome(import_buffer))
        elif job[0] == "event":
            def import_event(desc=job[1]):
                e = Event.from_ipc_descriptor(desc)
                e.close()
                return "imported"

            results.append(outcome(import_event))
        elif job[0] == "devnull_handle":
            fd = os.open(os.devnull, os.O_RDONLY)
            try:
                def import_pool(fd=fd):
                    m = DeviceMemoryResource.from_allocation_handle(0, fd)
                    m.close()
                    return "mapped"

                got = outcome(import_pool)
                os.fstat(fd)  # the caller's descriptor is never taken: still open
            finally:
                os.close(fd)
            results.append(got)
        else:
            raise ValueError(f"unknown job {job[0]!r}")
    return results


def child_export_one(q_out, done, seed, size):
    """An unrelated exporter: its own IPC pool, one Buffer; sends the Buffer's descriptor (not
    the resource) and keeps the Buffer until ``done``."""
    child_setup()
    from cuda_core import DeviceMemoryResource, DeviceMemoryResourceOptions

    dev, s = _setup()
    mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(ipc_enabled=True,
                                                               max_size=64 << 20))
    buf = mr.allocate(size, stream=s)
    write_pattern(buf, seed, s)
    q_out.put(buf.ipc_descriptor)
    _wait(done, "done")
    buf.close(s)
    s.sync()
    mr.close()
    return "closed"


# -- fault tests: file descriptors over many rounds -------------------------------------------

def child_fd_rounds(conn, variant, warm, rounds, resource):
    """The importing side of one fd-count variant, ``warm + rounds`` rounds over ``conn``;
    ``resource`` is the mapped resource it was started with (pool variants) or None.

    Each round: receive, import, check the first byte is ``round & 0xFF``, close, wait, send
    ``("ack", round)``. The descriptor baseline is taken after the ``warm`` rounds. Returns
    ``(before, after)``, this process's descriptors at the baseline and after the last round.
    """
    child_setup()
    from cuda_core import (Buffer, DeviceMemoryResource, Event, VirtualMemoryResource,
                           VirtualMemoryResourceOptions)

    dev, s = _setup()
    vmr = None
    if variant == "vmm":
        vmr = VirtualMemoryResource(dev, VirtualMemoryResourceOptions(handle_type="posix_fd"))
    staging = pinned(1)
    host = np.from_dlpack(staging).view(np.uint8)
    before = None
    try:
        for r in range(warm + rounds):
            # The watchdog, re-armed every round: it stops a round that is stuck, not a thousand
            # rounds that a loaded machine makes slow.
            child_setup()
            if r == warm:
                before = counted_fds()
            kind, number, payload = _recv(conn)
            if number != r:
                raise AssertionError(f"round {r}: got the message of round {number}")
            if kind == "desc":  # a pool or VMM buffer descriptor
                b = Buffer.from_ipc_descriptor(vmr if vmr is not None else resource, payload,
                                               stream=s)
                del payload  # a VMM descriptor's descriptors close here
            elif kind == "buffer":  # a pickled Buffer: its resource is found in the registry
                b = payload
                if b.memory_resource is not resource:
                    raise AssertionError(f"round {r}: the Buffer arrived with another resource "
                                         f"than the one registered for its uuid")
            elif kind == "handle":  # an allocation handle: the registered resource again
                if DeviceMemoryResource.from_allocation_handle(dev, payload) is not resource:
                    raise AssertionError(f"round {r}: from_allocation_handle did not return the "
                                         f"registered resource")
                payload.close()
                conn.send(("ack", r))
                continue
            elif kind in ("event", "event_desc"):
                e = payload if kind == "event" else Event.from_ipc_descriptor(payload)
                s.wait(e)
                e.close()
                s.sync()
                conn.send(("ack", r))
                continue
            else:
                raise ValueError(f"unknown message {kind!r}")
            _view(b, 0, 1).copy_to(staging, stream=s)
            s.sync()
            if int(host[0]) != r & 0xFF:
                raise AssertionError(f"round {r}: first byte {int(host[0])}, expected {r & 0xFF}")
            b.close(s)
            del b
            s.sync()
            conn.send(("ack", r))
        after = counted_fds()
    finally:
        del host
        staging.close()
    return before, after


# -- fault tests: many importers at once ------------------------------------------------------

def child_concurrent_import(mr, q, barrier, index, mode, seed):
    """One of 16 importers of one buffer, all started with its resource ``mr``. ``mode``
    "descriptor": get the descriptor, meet the others at ``barrier``, import. ``mode``
    "buffer": meet at ``barrier``, then get the pickled Buffer (every importer receiving its
    resource's descriptor at once). Then check the whole buffer, meet again (everyone has
    read), write ``index + 1`` into slot ``index``, close and wait for the free."""
    child_setup()
    from cuda_core import Buffer

    with _breaking(barrier):
        _, s = _setup()
        if mode == "descriptor":
            desc = _get(q)
            barrier.wait(CHILD_TIMEOUT)
            b = Buffer.from_ipc_descriptor(mr, desc, stream=s)
        else:
            barrier.wait(CHILD_TIMEOUT)
            b = _get(q)
            if b.memory_resource is not mr:
                raise AssertionError("the Buffer arrived with another resource than the "
                                     "registered one")
        check_pattern(b, seed, s, f"importer {index}")
        barrier.wait(CHILD_TIMEOUT)
        _view(b, index * SLOT, SLOT).fill(index + 1, stream=s)
        s.sync()
        b.close(s)
        s.sync()
    return index


# -- two GPUs ---------------------------------------------------------------------------------

def child_peer_write(q, owner, peer):
    """Gets a Buffer of device ``owner``'s IPC pool (with its resource), checks the imported
    pool grants no peer yet, grants ``peer`` (``peer_accessible_by``), checks the driver agrees
    (access_flags), then adds 1 to every byte with a kernel on ``peer``.
    Closes the import and waits for the free. Returns the peer set it saw before and after."""
    child_setup()
    _, s_owner = _setup(owner)
    _, s_peer = _setup(peer)
    b = _get(q)
    mmr = b.memory_resource
    seen = sorted(d.device_id for d in mmr.peer_accessible_by)
    mmr.peer_accessible_by = {peer}
    now = sorted(d.device_id for d in mmr.peer_accessible_by)
    flags = access_flags(b.handle, peer)
    if flags != READWRITE:
        raise AssertionError(f"device {peer} has access flags {flags} on the imported buffer "
                             f"after peer_accessible_by = {{{peer}}}")
    add_one(b.handle, b.size, s_peer, peer)
    s_peer.sync()
    b.close(s_owner)
    s_owner.sync()
    return seen, now


def child_vmm_peer_write(q, owner, peer):
    """Gets a VMM buffer descriptor of device ``owner``'s memory and imports it into its own
    ``VirtualMemoryResource(owner, peers=(peer,))``; checks ``peer`` has read-write access,
    then adds 1 to every byte with a kernel on ``peer``. Unmaps and returns the size."""
    child_setup()
    from cuda_core import Buffer, VirtualMemoryResource, VirtualMemoryResourceOptions

    _, s_owner = _setup(owner)
    _, s_peer = _setup(peer)
    desc = _get(q)
    vmr = VirtualMemoryResource(owner, VirtualMemoryResourceOptions(handle_type="posix_fd",
                                                                    peers=(peer,)))
    b = Buffer.from_ipc_descriptor(vmr, desc, stream=s_owner)
    del desc
    if not b.is_mapped:
        raise AssertionError("the imported VMM buffer is not mapped")
    for where in (b.handle, b.handle + b.size - 1):
        flags = access_flags(where, peer)
        if flags != READWRITE:
            raise AssertionError(f"device {peer} has access flags {flags} at {where:#x} of the "
                                 f"imported VMM buffer (peers=({peer},))")
    add_one(b.handle, b.size, s_peer, peer)
    s_peer.sync()
    size = b.size
    b.close(s_owner)
    s_owner.sync()
    return size


def child_kernel_without_peer_access(size):
    """A kernel on device 1 touches a device-0 pool buffer that grants device 1 nothing: the
    access faults and poisons this process's context, which is why it runs here. Returns
    the access flags (expected 0) if the sync did not raise; else raises its CUDAError."""
    child_setup()
    from cuda_core import DeviceMemoryResource, DeviceMemoryResourceOptions

    _, s0 = _setup(0)
    _, s1 = _setup(1)
    mr = DeviceMemoryResource(0, DeviceMemoryResourceOptions(max_size=64 << 20))
    b = mr.allocate(size, stream=s0)
    b.fill(0, stream=s0)
    s0.sync()
    flags = access_flags(b.handle, 1)
    if flags != 0:
        raise AssertionError(f"the driver gives device 1 access {flags} to a pool that grants "
                             f"none")
    add_one(b.handle, size, s1, 1)
    s1.sync()
    return flags


def child_wait_event_across_devices(q, acks, go, owner, waiter, value):
    """Gets ``(buffer, event)`` exported on device ``owner``, where the buffer is written only
    after a stream gate the parent holds; grants ``waiter`` access to the imported pool,
    makes a stream of device ``waiter`` wait on the event and copies the buffer into memory of
    ``waiter`` behind that wait, says whether the event was still pending, waits for the
    gate to open (``go`` is set once the parent opened it), syncs and returns the 32-bit words
    it copied (all ``value`` when the wait ordered the copy)."""
    child_setup()
    _, s_owner = _setup(owner)
    dev_w, s_w = _setup(waiter)
    buf, event = _get(q)
    pending_before = not event.is_done
    buf.memory_resource.peer_accessible_by = {waiter}
    local = dev_w.allocate(buf.size, stream=s_w)
    s_w.wait(event)
    local.copy_from(buf, stream=s_w)
    acks.put(("queued", pending_before, not event.is_done))
    _wait(go, "go")
    s_w.sync()
    words = read_bytes(local, s_w).view(np.uint32).copy()
    local.close(s_w)
    s_w.sync()
    event.close()
    buf.close(s_owner)
    s_owner.sync()
    return {"pending_before_wait": pending_before, "first": int(words[0]),
            "all_equal": bool((words == value).all())}


def child_wait_on_events_opened_elsewhere(desc_q, acks, go, ev):
    """Waits, on a stream of device 0, for an IPC event exported on device 1, imported twice in
    device 1's context: once as this child's ``Process`` argument (unpickled before any context
    is current, so in the exporting device's primary context) and once by
    ``Event.from_ipc_descriptor`` with device 1 current. The driver kills a process that makes
    a stream wait on such an event directly (SIGSEGV in cuStreamWaitEvent, two H200s, driver
    580). Reports through ``acks`` whether the event and the waiting stream were still pending
    once the waits were queued, waits for ``go`` (the exporter's gate open), and returns each
    import's device and what was done after the sync."""
    child_setup()
    from cuda_core import Device, Event

    d0, d1 = Device(0), Device(1)
    facts = {"argument": ev.device.device_id}
    d1.set_current()
    other = Event.from_ipc_descriptor(_get(desc_q))
    facts["descriptor"] = other.device.device_id
    d0.set_current()
    s0 = d0.create_stream()
    s0.wait(ev)
    s0.wait(other)
    s0.wait(ev)  # the second wait finds the event's opening in this context
    after = s0.record()
    acks.put(("queued", not ev.is_done, not other.is_done, not after.is_done))
    _wait(go, "go")
    s0.sync()
    facts["done"] = (ev.is_done, other.is_done, after.is_done)
    for e in (ev, other, after):
        e.close()
    return facts


def child_graph_waits_on_an_event_opened_elsewhere(desc_q, acks, go):
    """As :func:`child_wait_on_events_opened_elsewhere`, through a graph: imports an IPC event
    exported on device 1 with device 1 current (so in device 1's context), then launches on a
    stream of device 0 a graph made with device 0 current whose one node waits on that event.
    ``Stream.wait`` reopens such an event in the stream's context, since the driver kills a
    process whose stream waits on it directly; a graph's event-wait node takes the event as it
    is. Reports whether the event and the work queued after the graph were still pending, waits
    for ``go``, and returns what was done after the sync."""
    child_setup()
    from cuda_core import Device, Event
    from cuda_core.graph import GraphDefinition

    d0, d1 = Device(0), Device(1)
    d1.set_current()
    ev = Event.from_ipc_descriptor(_get(desc_q))
    d0.set_current()
    s0 = d0.create_stream()
    definition = GraphDefinition()
    definition.wait(ev)
    graph = definition.instantiate()
    graph.launch(s0)
    after = s0.record()
    acks.put(("queued", not ev.is_done, not after.is_done))
    _wait(go, "go")
    s0.sync()
    facts = {"device": ev.device.device_id, "done": (ev.is_done, after.is_done)}
    graph.close()
    definition.close()
    for e in (ev, after):
        e.close()
    return facts
