"""Copies and fills of memory ranges, ordered on a stream: the work behind
``Buffer.copy_to``, ``Buffer.copy_from`` and ``Buffer.fill``."""

import sys

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUcontext, CUdeviceptr, CUresult, CUDA_SUCCESS
from libc.stdint cimport uint8_t, uint16_t, uint32_t

from cuda_core._context cimport ContextGuard, enter_context, exit_context, primary_context
from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._memory._alloc cimport stream_context
from cuda_core._stream cimport Stream

__all__ = []


cdef int copy_bytes(CUdeviceptr dst, CUdeviceptr src, size_t n, Stream s) except -1:
    """Copy ``n`` bytes, in any direction the driver's unified addressing resolves."""
    cdef CUcontext ctx = stream_context(s)
    cdef CUresult err
    cdef ContextGuard guard
    if n == 0:
        return 0
    with nogil:
        enter_context(guard, ctx)
        err = cydriver.cuMemcpyAsync(dst, src, n, s._handle)
        exit_context(guard)
    if err == cydriver.CUDA_ERROR_INVALID_VALUE:
        err = _copy_between_devices(dst, src, n, s)
    return HANDLE_RETURN(err)


cdef int _device_of(CUdeviceptr ptr) noexcept:
    """The ordinal of the device whose memory ``ptr`` is, or -1 (host, managed, unknown)."""
    cdef unsigned int memory_type = 0
    cdef int ordinal = -1
    try:
        if cydriver.cuPointerGetAttribute(&memory_type, cydriver.CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                          ptr) != CUDA_SUCCESS:
            return -1
        if memory_type != cydriver.CU_MEMORYTYPE_DEVICE:
            return -1
        if cydriver.cuPointerGetAttribute(&ordinal, cydriver.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                          ptr) != CUDA_SUCCESS:
            return -1
    except BaseException:
        return -1
    return ordinal


cdef CUresult _copy_between_devices(CUdeviceptr dst, CUdeviceptr src, size_t n,
                                    Stream s) except *:
    """cuMemcpyAsync refused the copy: memory from one device's stream-ordered pool is mapped
    for that device only (unless the pool grants peer access). Between two devices' memory,
    cuMemcpyPeerAsync takes both contexts and copies anyway; anything else stays refused."""
    cdef int dst_dev = _device_of(dst)
    cdef int src_dev = _device_of(src)
    cdef CUcontext dst_ctx, src_ctx
    cdef CUresult err
    if dst_dev < 0 or src_dev < 0 or dst_dev == src_dev:
        return cydriver.CUDA_ERROR_INVALID_VALUE
    dst_ctx = primary_context(dst_dev)._handle
    src_ctx = primary_context(src_dev)._handle
    with nogil:
        err = cydriver.cuMemcpyPeerAsync(dst, dst_ctx, src, src_ctx, n, s._handle)
    return err


cdef int fill_bytes(CUdeviceptr dst, size_t size, object value, Stream s) except -1:
    """Fill ``[dst, dst + size)`` with ``value`` repeated: an int in [0, 256), or a 1-, 2- or
    4-byte buffer-protocol object in the machine's byte order (Buffer.fill)."""
    cdef int width
    cdef uint32_t pattern
    if isinstance(value, bool):
        raise TypeError("Buffer.fill(): value must be an int in [0, 256) or a 1-, 2- or "
                        "4-byte buffer-protocol object, not bool")
    if isinstance(value, int):
        if not 0 <= value < 256:
            raise ValueError(f"Buffer.fill(): value must be in [0, 256) for a byte fill, "
                             f"got {value}; pass a 2- or 4-byte object such as "
                             f"np.uint16(v) or np.uint32(v) for a wider pattern")
        width = 1
        pattern = value
    else:
        try:
            view = memoryview(value)
        except TypeError:
            raise TypeError(f"Buffer.fill(): value must be an int in [0, 256) or a 1-, 2- "
                            f"or 4-byte buffer-protocol object (e.g. np.uint16(7)), not "
                            f"{type(value).__name__}") from None
        with view:
            width = view.nbytes
            if width not in (1, 2, 4):
                raise ValueError(f"Buffer.fill(): the pattern must be 1, 2 or 4 bytes, "
                                 f"got {width} bytes ({type(value).__name__})")
            pattern = int.from_bytes(view.tobytes(), sys.byteorder)
    if size % width:
        raise ValueError(f"Buffer.fill(): the buffer size {size} is not a multiple "
                         f"of the {width}-byte pattern")
    if dst % width:
        raise ValueError(f"Buffer.fill(): the address 0x{dst:x} is not aligned to "
                         f"the {width}-byte pattern")
    return _memset(dst, pattern, width, size // width, s)


cdef int _memset(CUdeviceptr dst, uint32_t pattern, int width, size_t count, Stream s) except -1:
    cdef CUcontext ctx = stream_context(s)
    cdef CUresult err
    cdef ContextGuard guard
    if count == 0:
        return 0
    with nogil:
        enter_context(guard, ctx)
        if width == 1:
            err = cydriver.cuMemsetD8Async(dst, <uint8_t>pattern, count, s._handle)
        elif width == 2:
            err = cydriver.cuMemsetD16Async(dst, <uint16_t>pattern, count, s._handle)
        else:
            err = cydriver.cuMemsetD32Async(dst, pattern, count, s._handle)
        exit_context(guard)
    return HANDLE_RETURN(err)
