"""What tests/test_ipc_memory.py's processes share: making the IPC-enabled pool resources, filling
and reading buffers, and the entry points of its spawned children (importable by name, as
``spawn`` needs). Each child function runs under ``helpers.ipc.Children.run``: what it returns
is reported to the parent, and an exception it raises is reported with its type and message."""

import ctypes
import pickle
import threading

import numpy as np
import pytest

from helpers.ipc import CHILD_TIMEOUT, queue_get, require_pool_ipc

KINDS = ("device", "pinned")
POOL_MAX = 64 << 20


def resource_class(kind):
    from cuda_core import DeviceMemoryResource, PinnedMemoryResource

    return DeviceMemoryResource if kind == "device" else PinnedMemoryResource


def new_ipc_mr(kind, max_size=POOL_MAX):
    """A new IPC-enabled resource of ``kind`` (device 0's pool for a device pool)."""
    options = {"ipc_enabled": True, "max_size": max_size}
    cls = resource_class(kind)
    return cls(0, options) if kind == "device" else cls(options)


def make_ipc_mr(kind):
    """An IPC-enabled resource of ``kind`` on device 0 (made current), or a skip naming the
    missing capability."""
    from cuda_core import Device

    dev = Device(0)
    dev.set_current()
    require_pool_ipc(dev)
    if kind == "pinned" and not dev.properties.host_numa_memory_pools_supported:
        pytest.skip("device 0: properties.host_numa_memory_pools_supported is False")
    return new_ipc_mr(kind)


def map_pool(kind, handle):
    """``from_allocation_handle`` of the ``kind`` resource (device 0's for a device pool)."""
    cls = resource_class(kind)
    return cls.from_allocation_handle(0, handle) if kind == "device" else \
        cls.from_allocation_handle(handle)


def setup():
    """Device 0 current, and a new stream on it."""
    from cuda_core import Device

    dev = Device(0)
    dev.set_current()
    return dev, dev.create_stream()


def host_bytes(buf, stream):
    """The buffer's bytes, copied into page-locked host memory on ``stream`` and read back."""
    from cuda_core import LegacyPinnedMemoryResource

    host = LegacyPinnedMemoryResource().allocate(buf.size)
    try:
        buf.copy_to(host, stream=stream)
        stream.sync()
        return np.ctypeslib.as_array((ctypes.c_uint8 * buf.size).from_address(host.handle)).copy()
    finally:
        host.close()


def holds(buf, value, stream):
    """Whether every byte of ``buf`` is ``value``."""
    return bool((host_bytes(buf, stream) == value).all())


def filled(mr, size, value, stream):
    """A new buffer of ``mr`` filled with ``value``, the fill complete (an importer may read it
    at once)."""
    buf = mr.allocate(size, stream=stream)
    buf.fill(value, stream=stream)
    stream.sync()
    return buf


def no_current_context():
    from cuda.bindings import driver

    err, ctx = driver.cuCtxGetCurrent()
    assert err == driver.CUresult.CUDA_SUCCESS
    return int(ctx) == 0


# -- child entry points ------------------------------------------------------------------------


def child_handle_by_hand(conn, kind):
    """Item 2: the allocation handle by hand (a Pipe), then a bare file descriptor
    (send_handle/recv_handle)."""
    import os
    import uuid
    from multiprocessing import reduction

    from cuda_core import Buffer

    dev, s = setup()
    h = conn.recv()
    out = {"type": type(h).__name__, "uuid": str(h.uuid)}
    mmr = map_pool(kind, h)
    out["mapped"] = mmr.is_mapped and mmr.is_ipc_enabled and mmr.is_handle_owned
    out["mr_uuid"] = str(mmr.uuid)
    out["device_id"] = mmr.device_id
    try:
        mmr.allocate(64, stream=s)
    except TypeError as exc:
        out["allocate"] = str(exc)
    out["handle_kept"] = h.handle != mmr.allocation_handle.handle and not h.is_closed
    h.close()  # ours: the resource keeps its own duplicate
    out["registered_self"] = mmr.register(h.uuid) is mmr
    out["from_registry"] = type(mmr).from_registry(h.uuid) is mmr
    out["again"] = map_pool(kind, mmr.allocation_handle) is mmr  # a registry hit
    try:
        mmr.register(uuid.uuid4())
    except ValueError as exc:
        out["other_uuid"] = str(exc)
    conn.send("fd please")
    fd = reduction.recv_handle(conn)
    bare = map_pool(kind, fd)
    out["bare_uuid"] = bare.uuid
    out["bare_is_new"] = bare is not mmr and bare.is_mapped
    out["same_driver_pool"] = int(bare.handle) == int(mmr.handle)
    out["fd_open_after_import"] = os.fstat(fd) is not None
    out["bare_register"] = bare.register(h.uuid) is mmr  # the registered one is returned
    bare.close()
    out["fd_open_after_close"] = os.fstat(fd) is not None
    os.close(fd)
    desc = conn.recv()
    buf = Buffer.from_ipc_descriptor(mmr, desc, stream=s)
    out["data"] = holds(buf, 0x5A, s)
    buf.close()
    s.sync()
    mmr.close()
    out["registry_after_close"] = None
    try:
        type(mmr).from_registry(h.uuid)
    except RuntimeError as exc:
        out["registry_after_close"] = str(exc)
    return out


def child_descriptor_by_hand(conn, kind, size):
    """Item 3: map the pool, import the descriptor, check the data, write a new pattern; the
    forged size and the wrong ways to import."""
    from cuda_core import Buffer
    from cuda_core._memory._ipc_base import IPCBufferDescriptor

    dev, s = setup()
    handle, desc = conn.recv()
    mmr = map_pool(kind, handle)
    handle.close()
    out = {"desc_size": desc.size}
    buf = Buffer.from_ipc_descriptor(mmr, desc, stream=s)
    out["imported"] = (buf.is_mapped, buf.memory_resource is mmr, buf.size, buf.device_id,
                       buf.ipc_descriptor is desc)
    out["read"] = holds(buf, 0xA5, s)
    buf.fill(0x3C, stream=s)
    s.sync()
    payload = desc.__reduce__()[1][0]
    try:
        Buffer.from_ipc_descriptor(mmr, IPCBufferDescriptor._init(payload, 1 << 40), stream=s)
    except ValueError as exc:
        out["forged"] = str(exc)
    again = Buffer.from_ipc_descriptor(mmr, desc, stream=s)  # the refused import was released
    out["again_equal"] = again == buf and again is not buf
    out["stats_two_refs"] = mmr._ipc_stats()
    try:
        buf.copy_to(stream=s)
    except TypeError as exc:
        out["copy_to"] = str(exc)
    try:
        Buffer.from_ipc_descriptor(mmr, desc, stream=None)
    except TypeError as exc:
        out["no_stream"] = str(exc)
    local = new_ipc_mr(kind, 0)
    try:
        Buffer.from_ipc_descriptor(local, desc, stream=s)
    except ValueError as exc:
        out["into_exporter"] = str(exc)
    local.close()
    # Access is per process: a mapped device pool has no peer yet; a mapped host pool granted
    # the devices access itself.
    out["peers"] = sorted(d.device_id for d in mmr.peer_accessible_by)
    # Closed with two imports open: they keep working, the registry forgets the resource,
    # and the imported pool goes with the last of them.
    assert mmr.register(handle.uuid) is mmr
    mmr.close()
    out["after_close_reads"] = holds(again, 0x3C, s)
    out["stats_closed"] = mmr._ipc_stats()
    try:
        type(mmr).from_registry(handle.uuid)
    except RuntimeError as exc:
        out["registry_after_close"] = str(exc)
    again.close()
    buf.close()
    s.sync()
    out["stats_after"] = mmr._ipc_stats()
    return out


def _describe(buf, stream, value):
    mr = buf.memory_resource
    return {"is_mapped": buf.is_mapped, "mr_mapped": mr.is_mapped, "mr_type": type(mr).__name__,
            "uuid": str(mr.uuid), "device_id": buf.device_id, "size": buf.size,
            "data": holds(buf, value, stream)}


def child_process_args(mr, buf, value):
    """Item 4a: the resource and a buffer as Process arguments (mapped at start)."""
    dev, s = setup()
    out = _describe(buf, s, value)
    out["same_mr"] = buf.memory_resource is mr
    out["registered"] = type(mr).from_registry(mr.uuid) is mr
    buf.close()
    s.sync()
    return out


def child_queue_paths(q, values):
    """Items 4b-4e through one Queue, in this order: a plain pickle of buffer 1 before its
    resource is known here (refused), buffer 1 alone (carries the resource), the resource, buffer
    2, a plain pickle of buffer 1 again (found through the registry)."""
    out = {}
    early = queue_get(q, timeout=CHILD_TIMEOUT)
    try:
        pickle.loads(early)
    except RuntimeError as exc:
        out["early"] = str(exc)
    alone = queue_get(q, timeout=CHILD_TIMEOUT)
    out["no_context_after_unpickle"] = no_current_context()
    dev, s = setup()
    out["alone"] = _describe(alone, s, values[0])
    mr = queue_get(q, timeout=CHILD_TIMEOUT)
    out["mr_is_alones"] = mr is alone.memory_resource
    second = queue_get(q, timeout=CHILD_TIMEOUT)
    out["second"] = _describe(second, s, values[1])
    out["second_mr"] = second.memory_resource is mr
    late = pickle.loads(queue_get(q, timeout=CHILD_TIMEOUT))
    out["late_equal"] = late == alone and late is not alone and late.memory_resource is mr
    out["stats"] = mr._ipc_stats()
    for b in (alone, second, late):
        b.close()
    s.sync()
    out["stats_after"] = mr._ipc_stats()
    return out


def child_duplicates(q, value, threads, rounds):
    """Item 5: one allocation imported twice, then by ``threads`` threads ``rounds`` times each
    (the race of cuda-python #2848)."""
    from cuda_core import Buffer, Device

    mr, desc = queue_get(q, timeout=CHILD_TIMEOUT)
    dev, s = setup()
    out = {}
    a = Buffer.from_ipc_descriptor(mr, desc, stream=s)
    b = Buffer.from_ipc_descriptor(mr, desc, stream=s)
    out["equal"] = a == b and a is not b and a.handle == b.handle
    a.close()
    s.sync()
    out["other_still_reads"] = holds(b, value, s)
    b.close()
    s.sync()
    c = Buffer.from_ipc_descriptor(mr, desc, stream=s)
    out["third_reads"] = holds(c, value, s)
    c.close()
    s.sync()
    errors = []
    bad = []
    start = threading.Barrier(threads)

    def work(index):
        try:
            Device(0).set_current()
            ts = Device(0).create_stream()
            start.wait(60)
            for n in range(rounds):
                buf = Buffer.from_ipc_descriptor(mr, desc, stream=ts)
                if n % 50 == index % 50 and not holds(buf, value, ts):
                    bad.append((index, n))
                buf.close()
            ts.sync()
            ts.close()
        except BaseException as exc:  # reported to the parent below
            errors.append(f"{type(exc).__name__}: {exc}")

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(CHILD_TIMEOUT)
    out["hung"] = sum(w.is_alive() for w in workers)
    out["errors"] = errors[:5]
    out["bad_reads"] = bad[:5]
    out["stats"] = mr._ipc_stats()
    return out


def child_chain_middle(q_in, q_out, done):
    """Item 6, process B: receive the buffer from A, pass it on to C, and keep this process (and
    its resource sharer, which hands C the file descriptor) alive until C is done."""
    dev, s = setup()
    buf = queue_get(q_in, timeout=CHILD_TIMEOUT)
    out = {"mapped": buf.is_mapped}
    q_out.put(buf)
    out["c_done"] = done.wait(CHILD_TIMEOUT - 15)
    buf.close()
    s.sync()
    q_out.close()
    q_out.join_thread()
    return out


def child_chain_last(q_in, done, value):
    """Item 6, process C: receive the buffer from B, write ``value`` into it."""
    dev, s = setup()
    buf = queue_get(q_in, timeout=CHILD_TIMEOUT)
    out = {"mapped": buf.is_mapped, "mr_mapped": buf.memory_resource.is_mapped}
    buf.fill(value, stream=s)
    buf.close()
    s.sync()
    done.set()
    return out
