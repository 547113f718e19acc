"""Sharing VirtualMemoryResource buffers between processes.

A VMM buffer is one address range with one or more physical chunks mapped back to back (more
than one after ``modify_allocation`` grew it). Exporting gives each chunk's shareable handle:
a POSIX file descriptor (``handle_type="posix_fd"``), owned by the descriptor, or a 64-byte
fabric handle (``"fabric"``). Importing turns each handle back into an allocation handle,
reserves one range, maps the chunks back to back and grants the importing resource's access;
each step is undone if a later one fails. The imported buffer is an allocation of the
importing resource like any other (released the same way), except that it cannot be resized.

Descriptors are not cached on the buffer (unlike a pool buffer's): each
``Buffer.ipc_descriptor`` exports fresh file descriptors, owned by the descriptor it returns,
so that a live buffer holds no file descriptor and the user's descriptors bound how many are
open. An imported buffer keeps its imported handles, not the descriptor's file descriptors, and
cannot be exported again (only the exporting process can share its memory).

``_memory._ipc`` dispatches here (``register_vmm``, at import): every buffer of a
VirtualMemoryResource, and every descriptor of a VMM kind.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport uintptr_t
from libc.string cimport memcpy
from posix.unistd cimport close as c_close

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUdeviceptr, CUmemAllocationProp, CUmemFabricHandle,
                                     CUmemGenericAllocationHandle, CUresult, CUDA_SUCCESS)

from cuda_core._context cimport ContextGuard, enter_context
from cuda_core._errors cimport HANDLE_RETURN, make_driver_error
from cuda_core._memory._alloc cimport raise_alloc_error
from cuda_core._memory._buffer cimport Buffer, init_buffer
from cuda_core._memory._ipc cimport register_vmm
from cuda_core._memory._ipc_base cimport (KIND_VMM_FABRIC, KIND_VMM_FD, IPCBufferDescriptor,
                                          _FdSet, new_fd_set, new_vmm_descriptor)
from cuda_core._memory._vmm_mr cimport VirtualMemoryResource, _Allocation, _new_allocation
from cuda_core._stream cimport Stream, require_stream

import dataclasses
import sys

from cuda_core._memory._mr_options import VirtualMemoryResourceOptions
from cuda_core._memory._vmm_mr import _Chunk

__all__ = []

_KIND_NAMES = {KIND_VMM_FD: "posix_fd", KIND_VMM_FABRIC: "fabric"}


# -- export ------------------------------------------------------------------------------------

cdef object _export(Buffer buf):
    """``buf.ipc_descriptor`` for a non-empty buffer of a VirtualMemoryResource (``buf`` is
    open; ``_ipc`` refused an empty one)."""
    cdef VirtualMemoryResource mr
    cdef ContextGuard guard
    what = "Buffer.ipc_descriptor"
    if not isinstance(buf._mr, VirtualMemoryResource):  # the dispatcher's job; never guessed
        raise TypeError(f"{what}: the buffer's memory resource is not a VirtualMemoryResource")
    mr = <VirtualMemoryResource>buf._mr
    handle_type = mr._config.handle_type
    if handle_type is None:
        raise RuntimeError(f"{what}: the buffer's memory resource is not IPC-enabled (a "
                           f"VirtualMemoryResource with handle_type=None); create it with "
                           f"VirtualMemoryResourceOptions(handle_type='posix_fd')")
    rec = mr._allocations.get(buf._ptr)
    if rec is None:
        raise ValueError(f"{what}: 0x{buf._ptr:x} is not an allocation of the buffer's "
                         f"VirtualMemoryResource (a buffer from Buffer.from_handle?)")
    if (<_Allocation>rec)._imported:
        # The driver does not hand imported memory on as a shareable handle of this process.
        raise RuntimeError(f"{what}: this buffer was imported from another process; only the "
                           f"exporting process can share it (send the descriptor it was "
                           f"imported from, or export it there again)")
    name = str(handle_type)
    # The chunks that hold the buffer's bytes (a shrunk buffer may have more mapped).
    chunks = [c for c in (<_Allocation>rec).chunks if c.offset < buf._size]
    for i, c in enumerate(chunks):
        chunk_type = c.opts.handle_type
        if chunk_type is None or str(chunk_type) != name:
            raise RuntimeError(
                f"{what}: chunk {i} of the buffer (from byte {c.offset}, {c.size} bytes) was "
                f"added by modify_allocation with handle_type="
                f"{None if chunk_type is None else str(chunk_type)!r}, so it cannot be "
                f"exported as {name!r}; grow IPC buffers with the resource's handle_type")
    enter_context(guard, mr._ctx())
    if name == "posix_fd":
        return _export_fds(buf._size, chunks)
    return _export_fabric(buf._size, chunks)


cdef object _export_fds(size_t size, list chunks):
    cdef int fd
    cdef CUresult err
    cdef _FdSet owned
    fds = []
    try:
        for c in chunks:
            fd = -1
            err = cydriver.cuMemExportToShareableHandle(
                &fd, <CUmemGenericAllocationHandle>c.handle,
                cydriver.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)
            if err != CUDA_SUCCESS:
                raise make_driver_error(err, "Buffer.ipc_descriptor: cuMemExportToShareableHandle")
            fds.append(fd)
        owned = new_fd_set(tuple(fds))
    except BaseException:
        for fd in fds:
            c_close(fd)
        raise
    try:
        desc = new_vmm_descriptor(KIND_VMM_FD, size, tuple(c.size for c in chunks), owned, ())
    except BaseException:
        owned.close()
        raise
    _keep_while_spawning(desc)
    return desc


cdef int _keep_while_spawning(IPCBufferDescriptor desc) except -1:
    """Keep ``desc`` (its file descriptors) alive as long as the process being started, when
    it is made while ``Process.start()`` pickles its arguments (a Buffer argument exports a
    descriptor nobody else holds). The child inherits the file descriptors themselves
    (``pass_fds``), but only once pickling has finished: closed before, they would be missing
    in the child, or be other files by then."""
    context = sys.modules.get("multiprocessing.context")
    if context is None:  # multiprocessing is not even imported: no process is being started
        return 0
    popen = context.get_spawning_popen()
    if popen is None:
        return 0
    kept = getattr(popen, "_cuda_core_kept", None)
    if kept is None:
        kept = popen._cuda_core_kept = []
    kept.append(desc)
    return 0


cdef object _export_fabric(size_t size, list chunks):
    cdef CUmemFabricHandle handle
    cdef CUresult err
    handles = []
    for c in chunks:
        err = cydriver.cuMemExportToShareableHandle(
            &handle, <CUmemGenericAllocationHandle>c.handle, cydriver.CU_MEM_HANDLE_TYPE_FABRIC, 0)
        if err != CUDA_SUCCESS:
            raise make_driver_error(err, "Buffer.ipc_descriptor: cuMemExportToShareableHandle")
        handles.append(PyBytes_FromStringAndSize(<char*>handle.data, sizeof(CUmemFabricHandle)))
    return new_vmm_descriptor(KIND_VMM_FABRIC, size, tuple(c.size for c in chunks), None,
                              tuple(handles))


# -- import ------------------------------------------------------------------------------------

cdef int _host_location(CUmemAllocationProp* prop) noexcept:
    """The access-descriptor location type the CPU needs for memory at ``prop.location``;
    -1 for device memory."""
    if prop.location.type == cydriver.CU_MEM_LOCATION_TYPE_DEVICE:
        return -1
    if prop.location.type == cydriver.CU_MEM_LOCATION_TYPE_HOST:
        return cydriver.CU_MEM_LOCATION_TYPE_HOST
    return cydriver.CU_MEM_LOCATION_TYPE_HOST_NUMA


cdef CUmemGenericAllocationHandle _import_chunk(IPCBufferDescriptor desc, Py_ssize_t i,
                                                str what) except? 0:
    """Chunk ``i``'s shareable handle turned into an allocation handle of this process."""
    cdef CUmemGenericAllocationHandle handle = 0
    cdef CUmemFabricHandle fabric
    cdef CUresult err
    cdef int fd
    cdef bytes data
    if desc._kind == KIND_VMM_FD:
        fd = desc._fds._fds[i]
        err = cydriver.cuMemImportFromShareableHandle(
            &handle, <void*><uintptr_t>fd, cydriver.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    else:
        data = desc._fabric[i]
        memcpy(fabric.data, <const char*>data, sizeof(CUmemFabricHandle))
        err = cydriver.cuMemImportFromShareableHandle(&handle, <void*>&fabric,
                                                      cydriver.CU_MEM_HANDLE_TYPE_FABRIC)
    if err != CUDA_SUCCESS:
        raise make_driver_error(
            err, f"{what}: ipc_descriptor: cuMemImportFromShareableHandle refused chunk {i} "
                 f"(not a handle of a VirtualMemoryResource buffer, or the exporting process "
                 f"freed it?)")
    return handle


cdef object _import(object cls, object mr_obj, IPCBufferDescriptor desc, object stream):
    """``cls.from_ipc_descriptor(mr, desc, stream=stream)`` for a VMM descriptor or a
    VirtualMemoryResource ``mr_obj``: the buffer, or an exception with nothing left mapped."""
    cdef VirtualMemoryResource mr
    cdef Stream s
    cdef CUmemAllocationProp prop
    cdef CUmemGenericAllocationHandle handle
    cdef CUdeviceptr base = 0
    cdef size_t gran = 0, total = 0, offset = 0, size
    cdef CUresult err
    cdef _Allocation rec = None
    cdef Buffer buf
    cdef ContextGuard guard
    what = "Buffer.from_ipc_descriptor()"
    if not isinstance(mr_obj, VirtualMemoryResource):
        raise TypeError(f"{what}: ipc_descriptor describes a VirtualMemoryResource buffer, "
                        f"which imports into a VirtualMemoryResource, not a "
                        f"{type(mr_obj).__name__}")
    mr = <VirtualMemoryResource>mr_obj
    s = require_stream(stream, what)
    s._check_open()
    handle_type = mr._config.handle_type
    if desc._kind not in _KIND_NAMES:
        raise TypeError(f"{what}: ipc_descriptor describes a memory-pool buffer, which imports "
                        f"into the exporter's DeviceMemoryResource or PinnedMemoryResource "
                        f"mapped into this process, not into a VirtualMemoryResource")
    if handle_type is None:
        raise RuntimeError(f"{what}: mr is not IPC-enabled (a VirtualMemoryResource with "
                           f"handle_type=None); import into one made with "
                           f"VirtualMemoryResourceOptions(handle_type="
                           f"{_KIND_NAMES[desc._kind]!r})")
    if str(handle_type) != _KIND_NAMES[desc._kind]:
        raise TypeError(f"{what}: ipc_descriptor carries {_KIND_NAMES[desc._kind]!r} handles "
                        f"but mr has handle_type={str(handle_type)!r}")
    if desc._kind == KIND_VMM_FD and desc._fds._closed:
        raise RuntimeError(f"{what}: ipc_descriptor's file descriptors are closed")
    chunks = desc._chunks
    count = len(chunks)
    handles = []  # imported, not yet owned by rec
    enter_context(guard, mr._ctx())
    try:
        for i in range(count):
            handles.append(_import_chunk(desc, i, what))
        handle = handles[0]
        HANDLE_RETURN(cydriver.cuMemGetAllocationPropertiesFromHandle(&prop, handle))
        HANDLE_RETURN(cydriver.cuMemGetAllocationGranularity(
            &gran, &prop, cydriver.CU_MEM_ALLOC_GRANULARITY_MINIMUM))
        for i in range(count):
            size = chunks[i]
            if size % gran:
                raise ValueError(f"{what}: ipc_descriptor: chunk {i} states {size} bytes, not "
                                 f"a multiple of the allocation granularity ({gran} bytes)")
            total += size
        err = cydriver.cuMemAddressReserve(&base, total, gran, 0, 0)
        if err != CUDA_SUCCESS:
            raise_alloc_error(err, total, what)
        rec = _new_allocation(base, total, gran, mr._dev_id)
        rec._imported = True
        for i in range(count):
            size = chunks[i]
            handle = handles[0]  # chunk i's: those before it were handed to rec
            err = cydriver.cuMemMap(base + offset, size, 0, handle, 0)
            if err != CUDA_SUCCESS:
                raise make_driver_error(
                    err, f"{what}: ipc_descriptor: cuMemMap refused chunk {i} of {size} bytes "
                         f"(does the descriptor state more bytes than the exporter's "
                         f"allocation has?)")
            # From here on the allocation record releases the handle.
            rec.chunks.append(_Chunk(handles.pop(0), offset, size, mr._config))
            offset += size
        rec.mapped = total
        mr._grant_access(base, total, mr._config, _host_location(&prop))
        buf = cls.__new__(cls)
        init_buffer(buf, base, desc._size, mr, s)
        buf._mapped = True
        mr._allocations[base] = rec
    except BaseException:
        if rec is not None:
            rec._waited = True  # nothing has used the mapping
            try:
                rec.close()  # unmaps and releases the mapped chunks, frees the range
            except Exception:
                pass  # the first failure is the one to report
        for h in handles:
            cydriver.cuMemRelease(<CUmemGenericAllocationHandle>h)
        raise
    return buf


def _rebuild_vmm_mr(cls, device_uuid, config, peers):
    """Unpickle a VirtualMemoryResource: a new one of class ``cls`` on the device whose UUID
    is ``device_uuid``, with ``config`` and the peers named by UUID in ``peers``."""
    from cuda_core._memory._ipc_base import device_from_uuid

    if not (isinstance(cls, type) and issubclass(cls, VirtualMemoryResource)):
        raise TypeError(f"cls must be VirtualMemoryResource or a subclass, not {cls!r}")
    if type(device_uuid) is not str or type(peers) is not tuple:
        raise TypeError("device_uuid must be a str and peers a tuple of str")
    if not isinstance(config, VirtualMemoryResourceOptions):
        raise TypeError(f"config must be a VirtualMemoryResourceOptions, not "
                        f"{type(config).__name__}")
    config = dataclasses.replace(config, peers=tuple(device_from_uuid(p) for p in peers))
    return cls(device_from_uuid(device_uuid), config)


register_vmm(_export, _import)
