"""Memory pools and their buffers shared between processes (cuda_core/_memory/_ipc.pyx,
_ipc_table.pyx, the IPC members of _mempool.pyx): ISSUE15 §5.2 items 1-8, for a
DeviceMemoryResource and a PinnedMemoryResource pool (GPU).

Children are spawned through tests/helpers/ipc.py (timeouts; a crash or a hang fails the test)
and run the entry points of tests/helpers/ipc_pool.py. Every child closes its imports and
synchronizes before it reports, and the parent frees its buffers only after the report: the
driver's ordering rule (importers free first).

A process may also map its own device pool (``from_allocation_handle`` on its own handle): the
driver gives it another pool handle, and imports alias the memory at another address (probe P1,
driver 580). The single-process tests use that, for device pools only: the probe measured no
host pool that way (a host allocation is already mapped in its own process).
"""

import gc
import os
import pickle
import uuid
from multiprocessing import reduction

import pytest

from helpers import ipc_pool
from helpers.ipc import SPAWN, Children, assert_fds_back, conn_recv, open_fds, prime
from helpers.ipc_pool import KINDS, filled, holds, make_ipc_mr, map_pool

from cuda_core import (Buffer, Device, DeviceMemoryResource, ManagedMemoryResource,
                       PinnedMemoryResource)
from cuda_core._memory._ipc_base import IPCAllocationHandle, IPCBufferDescriptor

SIZE = 64 * 1024


@pytest.fixture(params=KINDS)
def kind(request):
    return request.param


@pytest.fixture
def ipc_mr(dev, kind):
    mr = make_ipc_mr(kind)
    yield mr
    mr.close()


@pytest.fixture
def device_mr(dev):
    """An IPC-enabled device pool: for the tests that map it into this same process."""
    mr = make_ipc_mr("device")
    yield mr
    mr.close()


# -- 1. the exporter's properties -------------------------------------------------------------


@pytest.mark.gpu
def test_exporter_properties(ipc_mr, kind, stream):
    mr = ipc_mr
    assert mr.is_ipc_enabled and not mr.is_mapped and mr.is_handle_owned
    u = mr.uuid
    assert isinstance(u, uuid.UUID) and mr.uuid is u and f"uuid {u.hex[:8]}" in repr(mr)
    h = mr.allocation_handle
    assert type(h) is IPCAllocationHandle and mr.allocation_handle is h  # cached
    assert int(h) == h.handle >= 0 and h.uuid == u and os.fstat(h.handle)
    h.close()  # the user closed the cached handle: the next access exports a new one
    h2 = mr.allocation_handle
    assert h2 is not h and not h2.is_closed and h2.uuid == u and mr.allocation_handle is h2
    buf = filled(mr, SIZE, 1, stream)
    d = buf.ipc_descriptor
    assert type(d) is IPCBufferDescriptor and buf.ipc_descriptor is d and d.size == SIZE
    assert not buf.is_mapped
    with pytest.raises(ValueError, match="import into the mapped resource"):
        Buffer.from_ipc_descriptor(mr, d, stream=stream)  # the exporter's own resource
    with pytest.raises(RuntimeError, match="only a mapped resource"):
        mr.register(u)
    empty = mr.allocate(0, stream=stream)
    with pytest.raises(ValueError, match="empty"):
        empty.ipc_descriptor
    buf.close()
    stream.sync()
    mr.close()
    assert h2.is_closed  # the resource owned it
    with pytest.raises(RuntimeError, match="closed"):
        mr.allocation_handle


@pytest.mark.gpu
def test_resources_that_are_not_ipc_enabled(dev, kind, stream):
    plain = DeviceMemoryResource(dev, {}) if kind == "device" else PinnedMemoryResource()
    name = type(plain).__name__
    assert not plain.is_ipc_enabled and plain.uuid is None and not plain.is_mapped
    with pytest.raises(RuntimeError, match=rf"{name}.allocation_handle: this {name} is not "
                                           rf"IPC-enabled; create it with {name}Options"):
        plain.allocation_handle
    buf = plain.allocate(64, stream=stream)
    with pytest.raises(RuntimeError, match="not IPC-enabled"):
        buf.ipc_descriptor
    with pytest.raises(RuntimeError, match="only buffers of an IPC-enabled memory resource"):
        pickle.dumps(buf)
    with pytest.raises(TypeError, match="only an IPC-enabled resource can be pickled"):
        pickle.dumps(plain)
    buf.close()
    stream.sync()
    plain.close()
    if kind == "device" and dev.properties.managed_memory \
            and dev.properties.concurrent_managed_access:
        managed = ManagedMemoryResource()
        assert not managed.is_ipc_enabled and managed.uuid is None
        with pytest.raises(RuntimeError, match="not IPC-enabled"):
            managed.allocation_handle


# -- mapping a pool in the same process (P1: another pool handle, aliased memory) -------------


@pytest.mark.gpu
def test_mapping_in_one_process(device_mr, stream):
    mr, kind = device_mr, "device"
    mmr = map_pool(kind, mr.allocation_handle)
    assert type(mmr) is type(mr) and mmr is not mr
    assert mmr.is_mapped and mmr.is_ipc_enabled and mmr.is_handle_owned
    assert mmr.uuid == mr.uuid and "mapped pool" in repr(mmr)
    assert mmr.device_id == (0 if kind == "device" else -1)
    assert mmr.allocation_handle.handle != mr.allocation_handle.handle  # its own duplicate
    with pytest.raises(TypeError, match=r"allocate\(\): this resource is mapped from another "
                                        r"process and can only import buffers"):
        mmr.allocate(64, stream=stream)
    # Not registered: a second mapping is another resource over the driver's same pool (P2).
    other = map_pool(kind, mr.allocation_handle)
    assert other is not mmr and int(other.handle) == int(mmr.handle)
    assert mmr._ipc_stats() == (2, 0, 0, 2, False)

    buf = filled(mr, SIZE, 0x5A, stream)
    imp = Buffer.from_ipc_descriptor(mmr, buf.ipc_descriptor, stream=stream)
    assert imp.is_mapped and imp.memory_resource is mmr and imp.size == SIZE
    assert imp.handle != buf.handle  # an alias of the same memory
    assert imp.ipc_descriptor is buf.ipc_descriptor  # passed on as it came
    assert imp.device_id == mr.device_id
    assert holds(imp, 0x5A, stream)
    imp.fill(0x11, stream=stream)
    stream.sync()
    assert holds(buf, 0x11, stream)
    with pytest.raises(TypeError, match="mapped from another process"):
        imp.copy_to(stream=stream)  # needs a dst: a mapped resource cannot allocate

    # The same allocation imported again, through the other resource of the same pool: one
    # mapping, two references (nvbug 5570902: the driver maps it once per process).
    dup = Buffer.from_ipc_descriptor(other, buf.ipc_descriptor, stream=stream)
    assert dup == imp and dup is not imp
    assert mmr._ipc_stats() == (2, 1, 2, 2, False)
    imp.close()
    stream.sync()
    assert holds(dup, 0x11, stream)  # still mapped
    dup.close()
    stream.sync()
    assert mmr._ipc_stats() == (2, 0, 0, 2, False)
    with pytest.raises(ValueError, match="is not a buffer imported through this resource"):
        mmr.deallocate(buf.handle, SIZE, stream=stream)

    # A forged size is refused after the import, which is released again.
    payload = buf.ipc_descriptor.__reduce__()[1][0]
    forged = IPCBufferDescriptor._init(payload, 1 << 40)
    with pytest.raises(ValueError, match=r"states 1099511627776 bytes but the exported "
                                         r"allocation has \d+"):
        Buffer.from_ipc_descriptor(mmr, forged, stream=stream)
    assert mmr._ipc_stats() == (2, 0, 0, 2, False)
    again = Buffer.from_ipc_descriptor(mmr, buf.ipc_descriptor, stream=stream)
    assert holds(again, 0x11, stream)
    again.close()
    stream.sync()
    other.close()
    mmr.close()
    assert mmr._ipc_stats() == (0, 0, 0, 2, True)  # the imported pool is destroyed
    buf.close()
    stream.sync()


# -- 7. closing: the exporter's resource, a mapped resource -----------------------------------


@pytest.mark.gpu
def test_closing_the_exporting_resource(device_mr, stream):
    mr, kind = device_mr, "device"
    buf = filled(mr, SIZE, 0x42, stream)
    mmr = map_pool(kind, mr.allocation_handle)
    assert mmr.register(mr.uuid) is mmr
    d = buf.ipc_descriptor
    imp = Buffer.from_ipc_descriptor(mmr, d, stream=stream)
    mr.close()
    with pytest.raises(RuntimeError, match="closed"):
        reduction.ForkingPickler.dumps((mr, buf))  # the closed resource has no handle to send
    copied = pickle.loads(pickle.dumps(buf))  # plain pickle: the resource from the registry
    assert copied == imp and copied.memory_resource is mmr
    assert holds(imp, 0x42, stream)
    # A mapped resource closed while its buffers are open: they keep working; it leaves the
    # registry, and the pool goes once its last buffer does.
    mmr.close()
    with pytest.raises(RuntimeError, match=f"no mapped memory resource with uuid {mr.uuid}"):
        type(mr).from_registry(mr.uuid)
    assert mmr._ipc_stats() == (0, 1, 2, 1, False)  # imp and the unpickled copy
    with pytest.raises(RuntimeError, match="closed"):
        Buffer.from_ipc_descriptor(mmr, d, stream=stream)
    imp.fill(0x43, stream=stream)
    stream.sync()
    assert holds(buf, 0x43, stream)
    imp.close()
    copied.close(stream)  # unpickled with the default stream: ordered on ours instead
    stream.sync()
    assert mmr._ipc_stats() == (0, 0, 0, 1, True)
    buf.close()
    stream.sync()


@pytest.mark.gpu
def test_export_after_the_resource_closed(device_mr, stream):
    # The pool of a closed resource lives on while buffers of it are allocated: exporting a
    # buffer needs only its pointer.
    mr, kind = device_mr, "device"
    buf = filled(mr, SIZE, 0x24, stream)
    mmr = map_pool(kind, mr.allocation_handle)
    mr.close()
    d = buf.ipc_descriptor
    assert d.size == SIZE and buf.ipc_descriptor is d
    imp = Buffer.from_ipc_descriptor(mmr, d, stream=stream)
    assert holds(imp, 0x24, stream)
    imp.close()
    stream.sync()
    mmr.close()
    buf.close()
    stream.sync()


@pytest.mark.gpu
def test_mapping_and_closing_leaves_no_descriptor(device_mr, stream):
    mr, kind = device_mr, "device"
    handle = mr.allocation_handle
    buf = filled(mr, SIZE, 7, stream)
    for _ in range(3):  # warm up: the driver opens what it keeps
        map_pool(kind, handle).close()
    gc.collect()
    before = open_fds()
    for _ in range(200):
        mmr = map_pool(kind, handle)
        imp = Buffer.from_ipc_descriptor(mmr, buf.ipc_descriptor, stream=stream)
        imp.close()
        mmr.close()
    stream.sync()
    gc.collect()
    assert_fds_back(before, open_fds())
    buf.close()
    stream.sync()


# -- 8. peer access of a mapped resource ------------------------------------------------------


@pytest.mark.gpu
def test_mapped_resource_peer_access(device_mr):
    # A fresh import grants no peer (access is per process); the owner rule holds. (A mapped
    # host pool's grants are checked in a child: test_descriptor_by_hand.)
    mmr = map_pool("device", device_mr.allocation_handle)
    assert set(mmr.peer_accessible_by) == set()
    mmr.peer_accessible_by = [0]
    mmr.peer_accessible_by.add(Device(0))
    assert set(mmr.peer_accessible_by) == set() and 0 not in mmr.peer_accessible_by
    mmr.close()


# -- 2. the allocation handle by hand ---------------------------------------------------------


@pytest.mark.gpu
def test_allocation_handle_by_hand(ipc_mr, kind, stream):
    mr = ipc_mr
    buf = filled(mr, SIZE, 0x5A, stream)
    parent, child_end = SPAWN.Pipe()
    with Children() as children:
        child = children.run(ipc_pool.child_handle_by_hand, child_end, kind)
        parent.send(mr.allocation_handle)
        assert conn_recv(parent, child.proc) == "fd please"
        reduction.send_handle(parent, mr.allocation_handle.handle, child.proc.pid)
        parent.send(buf.ipc_descriptor)
        out = child.value()
    assert out["type"] == "IPCAllocationHandle" and out["uuid"] == str(mr.uuid)
    assert out["mapped"] and out["mr_uuid"] == str(mr.uuid)
    assert out["device_id"] == mr.device_id
    assert "this resource is mapped from another process" in out["allocate"]
    assert out["handle_kept"] and out["registered_self"] and out["from_registry"]
    assert out["again"]
    assert f"this resource's uuid is {mr.uuid}" in out["other_uuid"]
    assert out["bare_uuid"] is None and out["bare_is_new"]
    if kind == "device":  # P2: two imports of one pool give one driver handle (device pools)
        assert out["same_driver_pool"]
    assert out["fd_open_after_import"] and out["fd_open_after_close"] and out["bare_register"]
    assert out["data"]
    assert "no mapped memory resource with uuid" in out["registry_after_close"]
    assert not mr.allocation_handle.is_closed  # sending never took the parent's
    buf.close()
    stream.sync()


# -- 3. a descriptor by hand --------------------------------------------------------------------


@pytest.mark.gpu
def test_descriptor_by_hand(ipc_mr, kind, stream):
    mr = ipc_mr
    size = SIZE + 4096 + 3  # not a round size
    buf = filled(mr, size, 0xA5, stream)
    parent, child_end = SPAWN.Pipe()
    with Children() as children:
        child = children.run(ipc_pool.child_descriptor_by_hand, child_end, kind, size)
        parent.send((mr.allocation_handle, buf.ipc_descriptor))
        out = child.value()
    assert out["desc_size"] == size
    assert out["imported"] == (True, True, size, mr.device_id, True)
    assert out["read"]
    assert f"states {1 << 40} bytes but the exported allocation has" in out["forged"]
    assert out["again_equal"] and out["stats_two_refs"] == (1, 1, 2, 1, False)
    assert "mapped from another process" in out["copy_to"]
    assert "stream is required" in out["no_stream"]
    assert "import into the mapped resource" in out["into_exporter"]
    if kind == "device":
        assert out["peers"] == []
    else:  # the mapped host pool granted the devices access (the driver grants none, P5)
        assert 0 in out["peers"]
    assert out["after_close_reads"] and out["stats_closed"] == (0, 1, 2, 1, False)
    assert f"no mapped memory resource with uuid {mr.uuid}" in out["registry_after_close"]
    assert out["stats_after"] == (0, 0, 0, 1, True)
    assert holds(buf, 0x3C, stream)  # the child's writes
    buf.close()
    stream.sync()


# -- 4. multiprocessing carries resources and buffers --------------------------------------------


def _expected(mr, buf):
    return {"is_mapped": True, "mr_mapped": True, "mr_type": type(mr).__name__,
            "uuid": str(mr.uuid), "device_id": mr.device_id, "size": buf.size, "data": True}


@pytest.mark.gpu
def test_process_arguments(ipc_mr, stream):
    mr = ipc_mr
    buf = filled(mr, SIZE, 0x66, stream)
    with Children() as children:
        out = children.run(ipc_pool.child_process_args, mr, buf, 0x66).value()
    assert out.pop("same_mr") and out.pop("registered")
    assert out == _expected(mr, buf)
    buf.close()
    stream.sync()


@pytest.mark.gpu
def test_queue_paths(ipc_mr, stream):
    mr = ipc_mr
    first = filled(mr, SIZE, 0x11, stream)
    second = filled(mr, 2 * SIZE, 0x22, stream)
    early = pickle.dumps(first)  # plain pickle: names the resource by uuid only
    q = SPAWN.Queue()
    with Children() as children:
        child = children.run(ipc_pool.child_queue_paths, q, (0x11, 0x22))
        q.put(early)
        q.put(first)
        q.put(mr)
        q.put(second)
        q.put(pickle.dumps(first))
        out = child.value()
    q.close()
    q.join_thread()
    assert f"no mapped memory resource with uuid {mr.uuid}" in out["early"]
    assert out["no_context_after_unpickle"]  # unpickling left the thread's context alone
    assert out["alone"] == _expected(mr, first)
    assert out["mr_is_alones"] and out["second_mr"] and out["late_equal"]
    assert out["second"] == _expected(mr, second)
    assert out["stats"] == (1, 2, 3, 1, False)
    assert out["stats_after"] == (1, 0, 0, 1, False)
    first.close()
    second.close()
    stream.sync()


# -- 5. duplicate imports, and from threads ------------------------------------------------------


@pytest.mark.gpu
def test_duplicate_imports_in_a_child(ipc_mr, stream):
    mr = ipc_mr
    buf = filled(mr, SIZE, 0x77, stream)
    q = SPAWN.Queue()
    with Children() as children:
        child = children.run(ipc_pool.child_duplicates, q, 0x77, 8, 200)
        q.put((mr, buf.ipc_descriptor))
        out = child.value()
    q.close()
    q.join_thread()
    assert out["equal"] and out["other_still_reads"] and out["third_reads"]
    assert out["hung"] == 0 and out["errors"] == [] and out["bad_reads"] == []
    assert out["stats"] == (1, 0, 0, 1, False)
    assert holds(buf, 0x77, stream)
    buf.close()
    stream.sync()


# -- 6. passed on: A -> B -> C --------------------------------------------------------------------


@pytest.mark.gpu
def test_reexport_chain(ipc_mr, stream):
    mr = ipc_mr
    buf = filled(mr, SIZE, 0x01, stream)
    to_b, to_c = SPAWN.Queue(), SPAWN.Queue()
    done = SPAWN.Event()
    with Children() as children:
        b = children.run(ipc_pool.child_chain_middle, to_b, to_c, done)
        c = children.run(ipc_pool.child_chain_last, to_c, done, 0xC3)
        to_b.put(buf)
        out_c = c.value()
        out_b = b.value()
    to_b.close()
    to_b.join_thread()
    assert out_b == {"mapped": True, "c_done": True}
    assert out_c == {"mapped": True, "mr_mapped": True}
    assert holds(buf, 0xC3, stream)
    buf.close()
    stream.sync()


@pytest.mark.gpu
def test_multiprocessing_leaves_no_descriptor_behind(ipc_mr, stream):
    prime()
    mr = ipc_mr
    bufs = [filled(mr, SIZE, i, stream) for i in range(1, 4)]
    assert not mr.allocation_handle.is_closed  # exported (and kept) before the baseline
    gc.collect()
    before = open_fds()
    q = SPAWN.Queue()
    with Children() as children:
        child = children.run(ipc_pool.child_queue_paths, q, (1, 2))
        q.put(pickle.dumps(bufs[0]))
        q.put(bufs[0])
        q.put(mr)
        q.put(bufs[1])
        q.put(pickle.dumps(bufs[0]))
        out = child.value()
    for used in (q, child.queue):
        used.close()
        used.join_thread()
    del q, child, used
    gc.collect()
    assert out["stats_after"] == (1, 0, 0, 1, False)
    assert_fds_back(before, open_fds())
    for b in bufs:
        b.close()
    stream.sync()
