"""Sharing VirtualMemoryResource buffers between processes (cuda_core/_memory/_vmm_ipc.pyx and
the IPC parts of _vmm_mr.pyx). The argument checks of the unpickling helper run everywhere; the
rest needs a GPU whose virtual memory exports POSIX file descriptors, and spawned children
(tests/helpers/ipc.py)."""

import gc
import os
import pickle

import pytest

from helpers.ipc import (SPAWN, Children, open_fds, queue_get, require_pool_ipc,
                         require_posix_fd_vmm)
from helpers.memory import (NumpyMemoryResource, device_bytes_of_this_process,
                            vmm_minimum_granularity)

from cuda_core import (Buffer, CUDAError, Device, DeviceMemoryResource, VirtualMemoryResource,
                       VirtualMemoryResourceOptions)
from cuda_core._memory import _ipc_base, _vmm_ipc
from cuda_core._memory._ipc_base import IPCBufferDescriptor

# -- CPU ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args, match", [
    ((int, "GPU-x", VirtualMemoryResourceOptions(), ()), "cls must be VirtualMemoryResource"),
    ((VirtualMemoryResource, 0, VirtualMemoryResourceOptions(), ()), "device_uuid must be a str"),
    ((VirtualMemoryResource, "GPU-x", VirtualMemoryResourceOptions(), [0]), "peers a tuple"),
    ((VirtualMemoryResource, "GPU-x", {"handle_type": None}, ()), "config must be a "
                                                                    "VirtualMemoryResourceOptions"),
])
def test_rebuild_checks_its_arguments_before_the_driver(args, match):
    with pytest.raises(TypeError, match=match):
        _vmm_ipc._rebuild_vmm_mr(*args)


# -- helpers --------------------------------------------------------------------------------------


def _vmm(dev, **config):
    """An IPC-enabled (posix_fd) VirtualMemoryResource on ``dev`` with ``config``."""
    if not dev.properties.virtual_memory_management_supported:
        pytest.skip(f"device {dev.device_id}: properties.virtual_memory_management_supported "
                    "is False")
    require_posix_fd_vmm(dev)
    return VirtualMemoryResource(dev, {"handle_type": "posix_fd", **config})


def _read(buf, stream):
    """The bytes of ``buf`` (any memory), copied to the host."""
    mr = NumpyMemoryResource()
    out = mr.allocate(buf.size)
    Buffer.from_handle(buf.handle, buf.size).copy_to(out, stream=stream)
    stream.sync()
    return mr.array(out).copy()


def _export_fd(buf):
    """A POSIX file descriptor of ``buf``'s physical memory, exported through cuda.bindings
    (the caller closes it)."""
    from cuda.bindings import driver

    err, handle = driver.cuMemRetainAllocationHandle(buf.handle)
    assert err == driver.CUresult.CUDA_SUCCESS
    try:
        err, fd = driver.cuMemExportToShareableHandle(
            handle, driver.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)
        assert err == driver.CUresult.CUDA_SUCCESS
    finally:
        (err,) = driver.cuMemRelease(handle)
        assert err == driver.CUresult.CUDA_SUCCESS
    return int(fd)


class _Token:
    """Stands for multiprocessing's fd hand-off in a descriptor built here: ``detach()`` gives a
    duplicate of ``fd``, which the descriptor then owns."""

    def __init__(self, fd):
        self.fd = fd

    def detach(self):
        return os.dup(self.fd)


def _forged(fd, size, chunks):
    """A posix_fd descriptor of ``size`` bytes in ``chunks`` over a duplicate of ``fd``: what a
    crafted message could carry."""
    return _ipc_base._fd_descriptor(size, tuple(chunks), tuple(_Token(fd) for _ in chunks))


# -- the resource ---------------------------------------------------------------------------------


@pytest.mark.gpu
def test_ipc_enabled_and_handle_type_checks(dev):
    mr = _vmm(dev)
    assert mr.is_ipc_enabled and "handle_type='posix_fd'" in repr(mr)
    assert VirtualMemoryResource(dev).is_ipc_enabled  # posix_fd is the default, as cuda.core
    plain = VirtualMemoryResource(dev, {"handle_type": None})
    assert not plain.is_ipc_enabled and "handle_type=None" in repr(plain)
    with pytest.raises(ValueError, match="handle_type='win32_kmt' is a Windows handle type"):
        VirtualMemoryResource(dev, {"handle_type": "win32_kmt"})
    if not dev.properties.handle_type_fabric_supported:
        with pytest.raises(RuntimeError, match="handle_type_fabric_supported is False"):
            VirtualMemoryResource(dev, {"handle_type": "fabric"})
    else:
        assert VirtualMemoryResource(dev, {"handle_type": "fabric"}).is_ipc_enabled


@pytest.mark.gpu
def test_resource_pickles_as_a_recipe(dev):
    mr = _vmm(dev, granularity="minimum", peers=(dev.device_id,), peer_access="r")
    for data in (pickle.dumps(mr), pickle.dumps(mr, protocol=2)):
        back = pickle.loads(data)
        assert type(back) is VirtualMemoryResource and back is not mr
        assert back.device_id == mr.device_id and back.config == mr.config
        assert back.is_ipc_enabled and "allocations=0" in repr(back)


# -- descriptors in this process ------------------------------------------------------------------


@pytest.mark.gpu
def test_descriptors_are_fresh_and_own_their_fds(dev, stream):
    mr = _vmm(dev)
    buf = mr.allocate(1 << 20, stream=stream)
    warm = buf.ipc_descriptor  # one export first: whatever the driver opens once is open
    del warm
    gc.collect()
    before = open_fds()
    first, second = buf.ipc_descriptor, buf.ipc_descriptor
    assert first is not second  # not cached: each access exports anew
    assert type(first) is IPCBufferDescriptor and first.size == buf.size
    assert "posix_fd" in repr(first)
    new = sorted(set(open_fds()) - set(before))
    assert len(new) == 2  # one chunk each
    with pytest.raises(TypeError, match="only multiprocessing can send"):
        pickle.dumps(first)
    del first, second
    gc.collect()
    for fd in new:
        with pytest.raises(OSError):
            os.fstat(fd)
    assert sorted(set(open_fds()) - set(before)) == []
    buf.close()


@pytest.mark.gpu
def test_grown_buffer_imports_as_one_range_aliasing_it(dev, stream):
    gran = vmm_minimum_granularity(dev)
    mr = _vmm(dev, granularity="minimum")
    buf = mr.allocate(gran, stream=stream)
    buf.fill(0x11, stream=stream)
    grown = mr.modify_allocation(buf, 3 * gran)
    Buffer.from_handle(grown.handle + gran, 2 * gran).fill(0x22, stream=stream)
    stream.sync()
    warm = grown.ipc_descriptor  # one export first: whatever the driver opens once is open
    del warm
    gc.collect()
    before = open_fds()
    desc = grown.ipc_descriptor
    assert len(set(open_fds()) - set(before)) == 2  # two chunks: two file descriptors
    importer = _vmm(dev)
    imported = Buffer.from_ipc_descriptor(importer, desc, stream=stream)
    assert imported.is_mapped and not grown.is_mapped
    assert imported.size == 3 * gran and imported.handle != grown.handle
    assert imported.memory_resource is importer and "allocations=1" in repr(importer)
    data = _read(imported, stream)
    assert (data[:gran] == 0x11).all() and (data[gran:] == 0x22).all()
    # One memory at two addresses: a write through the import is read through the original.
    imported.fill(0x3C, stream=stream)
    assert (_read(grown, stream) == 0x3C).all()
    with pytest.raises(ValueError, match="an imported buffer cannot be resized"):
        importer.modify_allocation(imported, 4 * gran)
    with pytest.raises(RuntimeError, match="imported from another process"):
        imported.ipc_descriptor
    del desc
    gc.collect()  # the descriptor's fds are not needed by the mapping
    assert (_read(imported, stream) == 0x3C).all()
    imported.close(stream)
    assert "allocations=0" in repr(importer)
    grown.fill(0x4D, stream=stream)
    assert (_read(grown, stream) == 0x4D).all()
    # Importing into the exporting resource itself is allowed: another alias.
    again = Buffer.from_ipc_descriptor(mr, grown.ipc_descriptor, stream=stream)
    assert again.handle != grown.handle and "allocations=2" in repr(mr)
    assert (_read(again, stream) == 0x4D).all()
    again.close(stream)
    grown.close(stream)
    assert "allocations=0" in repr(mr)


@pytest.mark.gpu
def test_not_ipc_enabled(dev, stream):
    gran = vmm_minimum_granularity(dev)
    plain = VirtualMemoryResource(dev, {"handle_type": None})
    buf = plain.allocate(4096, stream=stream)
    with pytest.raises(RuntimeError, match="not IPC-enabled"):
        buf.ipc_descriptor
    mr = _vmm(dev, granularity="minimum")
    shared = mr.allocate(gran, stream=stream)
    with pytest.raises(RuntimeError, match="not IPC-enabled"):
        Buffer.from_ipc_descriptor(plain, shared.ipc_descriptor, stream=stream)
    assert "allocations=1" in repr(plain)
    # Memory added without a handle type cannot be exported.
    grown = mr.modify_allocation(shared, 2 * gran, {"handle_type": None})
    with pytest.raises(RuntimeError, match="chunk 1 .*handle_type=None"):
        grown.ipc_descriptor
    grown.close(stream)
    buf.close(stream)


@pytest.mark.gpu
def test_descriptor_kinds_must_fit_the_resource(dev, stream):
    mr = _vmm(dev)
    pool_desc = IPCBufferDescriptor._init(bytes(64), 4096)
    with pytest.raises(TypeError):
        Buffer.from_ipc_descriptor(mr, pool_desc, stream=stream)
    require_pool_ipc(dev)
    pool = DeviceMemoryResource(dev, {"ipc_enabled": True, "max_size": 64 << 20})
    buf = mr.allocate(4096, stream=stream)
    with pytest.raises(TypeError):
        Buffer.from_ipc_descriptor(pool, buf.ipc_descriptor, stream=stream)
    assert "allocations=1" in repr(mr)
    buf.close(stream)
    pool.close()


@pytest.mark.gpu
def test_forged_chunk_sizes_leave_nothing_behind(dev, stream):
    size = 64 << 20  # a multiple of every granularity: one chunk of exactly this size
    mr = _vmm(dev)
    importer = _vmm(dev)

    def share(value):
        buf = mr.allocate(size, stream=stream)
        buf.fill(value, stream=stream)
        stream.sync()
        return buf, _export_fd(buf)

    # A correct round first, so that whatever the context sets up once is in place before
    # free memory is measured.
    buf, fd = share(0x6A)
    good = Buffer.from_ipc_descriptor(importer, _forged(fd, size, [size]), stream=stream)
    assert (_read(good, stream) == 0x6A).all()
    good.close(stream)
    os.close(fd)
    buf.close(stream)
    gc.collect()
    used_before = device_bytes_of_this_process(dev)
    buf, fd = share(0x6B)
    try:
        with pytest.raises(ValueError, match="not a multiple of the allocation granularity"):
            Buffer.from_ipc_descriptor(importer, _forged(fd, size, [size + 1]), stream=stream)
        assert "allocations=0" in repr(importer)
        # More bytes than the physical memory has: the mapping is refused.
        with pytest.raises((CUDAError, ValueError)):
            Buffer.from_ipc_descriptor(importer, _forged(fd, size, [2 * size]), stream=stream)
        assert "allocations=0" in repr(importer)
        # Each refused import gave everything back: a correct one still works.
        good = Buffer.from_ipc_descriptor(importer, _forged(fd, size, [size]), stream=stream)
        assert (_read(good, stream) == 0x6B).all()
        good.close(stream)
    finally:
        os.close(fd)
    gc.collect()
    buf.close(stream)
    stream.sync()
    # No imported handle outlived its import (one would hold the 64 MiB).
    used_after = device_bytes_of_this_process(dev)
    if used_before is None or used_after is None:
        pytest.skip("every refusal was checked; the device's memory is shared with other "
                    "processes and NVML does not list this one, so what it holds is unknown")
    assert used_after <= used_before + vmm_minimum_granularity(dev)


@pytest.mark.gpu
def test_fabric_handles(dev, stream):
    if not dev.properties.virtual_memory_management_supported:
        pytest.skip("device 0: properties.virtual_memory_management_supported is False")
    if not dev.properties.handle_type_fabric_supported:
        pytest.skip("device 0: properties.handle_type_fabric_supported is False")
    mr = VirtualMemoryResource(dev, {"handle_type": "fabric"})
    try:
        buf = mr.allocate(1 << 20, stream=stream)
    except CUDAError as exc:
        # No IMEX channel for this process: the driver refuses fabric memory.
        if exc.name in ("CUDA_ERROR_NOT_PERMITTED", "CUDA_ERROR_NOT_SUPPORTED"):
            pytest.skip(f"cuMemCreate with fabric handles: {exc.name}")
        raise
    buf.fill(0x5F, stream=stream)
    desc = buf.ipc_descriptor
    assert "fabric" in repr(desc) and desc.size == buf.size
    back = pickle.loads(pickle.dumps(desc))  # fabric handles are bytes: plain pickle works
    imported = Buffer.from_ipc_descriptor(VirtualMemoryResource(dev, {"handle_type": "fabric"}),
                                          back, stream=stream)
    assert imported.is_mapped and (_read(imported, stream) == 0x5F).all()
    imported.close(stream)
    buf.close(stream)


# -- other processes ------------------------------------------------------------------------------


def _import_verify_write(inbox):
    """Child: import a VMM buffer from a (resource, descriptor) message, check it, write a new
    pattern, close it, and check the mapping is gone."""
    from cuda.bindings import driver

    dev = Device(0)
    dev.set_current()
    s = dev.create_stream()
    mr, desc = queue_get(inbox)
    buf = Buffer.from_ipc_descriptor(mr, desc, stream=s)
    facts = {
        "mapped": buf.is_mapped,
        "size": buf.size,
        "resource": buf.memory_resource is mr and mr.is_ipc_enabled,
        "device": buf.device_id,
        "pattern": bool((_read(buf, s) == 0x5A).all()),
    }
    del desc
    gc.collect()  # the mapping does not need the descriptor's file descriptors
    buf.fill(0xC3, stream=s)
    facts["written"] = bool((_read(buf, s) == 0xC3).all())
    addr = buf.handle
    buf.close(s)
    s.sync()
    err, handle = driver.cuMemRetainAllocationHandle(addr)
    if err == driver.CUresult.CUDA_SUCCESS:
        driver.cuMemRelease(handle)
    facts["unmapped"] = err != driver.CUresult.CUDA_SUCCESS
    facts["allocations"] = "allocations=0" in repr(mr)
    return facts


@pytest.mark.gpu
def test_descriptor_round_trip_to_a_child(dev, stream):
    mr = _vmm(dev)
    n = (3 << 20) + 5
    buf = mr.allocate(n, stream=stream)
    buf.fill(0x5A, stream=stream)
    stream.sync()  # the importer must not touch memory the exporter has not finished writing
    desc = buf.ipc_descriptor
    inbox = SPAWN.Queue()
    with Children() as children:
        child = children.run(_import_verify_write, inbox)
        inbox.put((mr, desc))
        facts = child.value()
    assert facts == {"mapped": True, "size": n, "resource": True, "device": dev.device_id,
                     "pattern": True, "written": True, "unmapped": True, "allocations": True}
    assert (_read(buf, stream) == 0xC3).all()
    buf.close(stream)


def _buffers_from_arguments_and_queue(inbox, first):
    """Child: a buffer that came as a Process argument, and one through a Queue."""
    dev = Device(0)
    dev.set_current()
    s = dev.create_stream()
    second = queue_get(inbox)
    out = []
    for buf, value in ((first, 0x21), (second, 0x43)):
        out.append((type(buf) is Buffer, buf.is_mapped,
                    type(buf.memory_resource) is VirtualMemoryResource,
                    bool((_read(buf, s) == value).all())))
        buf.fill(value + 1, stream=s)
        s.sync()
        buf.close(s)
    s.sync()
    return out


@pytest.mark.gpu
def test_buffers_through_multiprocessing(dev, stream):
    mr = _vmm(dev)
    first = mr.allocate(1 << 20, stream=stream)
    second = mr.allocate((1 << 20) + 7, stream=stream)
    first.fill(0x21, stream=stream)
    second.fill(0x43, stream=stream)
    stream.sync()
    inbox = SPAWN.Queue()
    with Children() as children:
        child = children.run(_buffers_from_arguments_and_queue, inbox, first)
        inbox.put(second)
        out = child.value()
    assert out == [(True, True, True, True)] * 2
    assert (_read(first, stream) == 0x22).all() and (_read(second, stream) == 0x44).all()
    first.close(stream)
    second.close(stream)


def _hold_for_a_while(inbox, outbox):
    """Child: import, report the address, and keep the mapping until told to close it."""
    dev = Device(0)
    dev.set_current()
    s = dev.create_stream()
    mr, desc = queue_get(inbox)
    buf = Buffer.from_ipc_descriptor(mr, desc, stream=s)
    outbox.put(buf.handle)
    assert queue_get(inbox) == "close"
    ok = bool((_read(buf, s) == 0x77).all())
    buf.close(s)
    s.sync()
    return ok


@pytest.mark.gpu
def test_exporter_closes_its_buffer_after_the_importer(dev, stream):
    # The driver's ordering rule, followed: the importer closes first, then the exporter.
    mr = _vmm(dev)
    buf = mr.allocate(1 << 20, stream=stream)
    buf.fill(0x77, stream=stream)
    stream.sync()
    inbox, outbox = SPAWN.Queue(), SPAWN.Queue()
    with Children() as children:
        child = children.run(_hold_for_a_while, inbox, outbox)
        inbox.put((mr, buf.ipc_descriptor))
        assert queue_get(outbox, child.proc) != 0
        inbox.put("close")
        assert child.value() is True
    buf.close(stream)
    assert "allocations=0" in repr(mr)
