"""Copies and fills of memory ranges, ordered on a stream: the work behind
``Buffer.copy_to``, ``Buffer.copy_from`` and ``Buffer.fill``; the copy attributes
(``CopyOptions`` as ``CUmemcpyAttributes``) that they and ``utils.copy_batch`` share.

Copies with attributes need driver entry points newer than the oldest driver we run on: a
copy whose attributes are only hints falls back to a plain copy there, and one that asks for
a guarantee a plain copy cannot give (``src_access_order="during_api_call"``) is refused with
a ``NotImplementedError`` naming the CUDA version it needs.
"""

import sys

from cuda.bindings cimport cydriver
from cuda_core cimport _cuda_compat
from cuda.bindings.cydriver cimport (CUcontext, CUdeviceptr, CUmemcpyAttributes, CUresult,
                                     CUDA_SUCCESS)
from libc.stdint cimport uint8_t, uint16_t, uint32_t
from libc.string cimport memset

from cuda_core._context cimport ContextGuard, enter_context, exit_context, primary_context
from cuda_core._driver cimport cuda_version, driver_version, ensure_driver
from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._memory._alloc cimport stream_context
from cuda_core._memory._location cimport as_location
from cuda_core._stream cimport Stream, canonical_stream

from cuda_core._memory._copy_options import CopyOptions, MemcpyOverlapMode, MemcpySrcAccessOrder

__all__ = []


cdef CUresult _enqueue(CUdeviceptr dst, CUdeviceptr src, uint32_t pattern, int width,
                       size_t count, Stream s) noexcept:
    """Queue a copy (``width`` 0: ``count`` bytes from ``src``) or a fill (``width`` 1, 2 or 4:
    ``count`` elements of ``pattern``) on ``s``, in its context, the GIL released; returns
    the driver's result."""
    cdef CUcontext ctx = stream_context(s)
    cdef CUresult err
    cdef ContextGuard guard
    with nogil:
        enter_context(guard, ctx)
        if width == 0:
            err = cydriver.cuMemcpyAsync(dst, src, count, s._handle)
        elif width == 1:
            err = cydriver.cuMemsetD8Async(dst, <uint8_t>pattern, count, s._handle)
        elif width == 2:
            err = cydriver.cuMemsetD16Async(dst, <uint16_t>pattern, count, s._handle)
        else:
            err = cydriver.cuMemsetD32Async(dst, pattern, count, s._handle)
        exit_context(guard)
    return err


cdef int copy_bytes(CUdeviceptr dst, CUdeviceptr src, size_t n, Stream s) except -1:
    """Copy ``n`` bytes, in any direction the driver's unified addressing resolves."""
    cdef CUresult err
    if n == 0:
        return 0
    err = _enqueue(dst, src, 0, 0, n, s)
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


class FillValueOverflowError(OverflowError, ValueError):
    """``Buffer.fill()`` given an int outside [0, 256): cuda.core's ``OverflowError``, and a
    ``ValueError``."""


cdef int fill_bytes(CUdeviceptr dst, size_t size, object value, Stream s) except -1:
    """Fill ``[dst, dst + size)`` with ``value`` repeated: an int in [0, 256) (a bool is 0 or
    1, as for cuda.core), or a 1-, 2- or 4-byte buffer-protocol object in the machine's byte
    order (Buffer.fill)."""
    cdef int width
    cdef uint32_t pattern
    if isinstance(value, int):
        if not 0 <= value < 256:
            raise FillValueOverflowError(
                f"Buffer.fill(): value must be in [0, 256) for a byte fill, got {value}; pass "
                f"a 2- or 4-byte object such as np.uint16(v) or np.uint32(v) for a wider "
                f"pattern")
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
    if size == 0:
        return 0
    return HANDLE_RETURN(_enqueue(dst, 0, pattern, width, size // width, s))


# -- copies with attributes ----------------------------------------------------------------------

cdef int check_batch_stream(Stream s, str what) except -1:
    """The copy-attribute and batch entry points refuse the legacy default stream."""
    if canonical_stream(<size_t>s._handle) == <size_t>cydriver.CU_STREAM_LEGACY:
        raise TypeError(f"{what}: the legacy default stream (LEGACY_DEFAULT_STREAM, or a "
                        f"default_stream that is the legacy one) is not accepted here; use "
                        f"PER_THREAD_DEFAULT_STREAM or a stream from Device.create_stream()")
    return 0


cdef int check_not_capturing(Stream s, str what) except -1:
    """A graph has no node for a copy with attributes or a batch: refuse a capturing stream."""
    cdef CUcontext ctx = stream_context(s)
    cdef cydriver.CUstreamCaptureStatus status = cydriver.CU_STREAM_CAPTURE_STATUS_NONE
    cdef CUresult err
    cdef ContextGuard guard
    ensure_driver()  # the first driver call of the process may come here
    with nogil:
        enter_context(guard, ctx)
        err = cydriver.cuStreamIsCapturing(s._handle, &status)
        exit_context(guard)
    HANDLE_RETURN(err)
    if status != cydriver.CU_STREAM_CAPTURE_STATUS_NONE:
        raise TypeError(f"{what}: the stream is capturing a graph, which cannot hold this "
                        f"copy; use GraphDefinition.memcpy(), or a copy without options")
    return 0


cdef int fill_attributes(object options, CUmemcpyAttributes* out, str what) except -1:
    """``out`` from a CopyOptions (None: stream order, no hints)."""
    memset(out, 0, sizeof(CUmemcpyAttributes))  # no location hint: CU_MEM_LOCATION_TYPE_NONE
    out.srcAccessOrder = cydriver.CU_MEMCPY_SRC_ACCESS_ORDER_STREAM
    if options is None:
        return 0
    order = options.src_access_order
    if order == MemcpySrcAccessOrder.DURING_API_CALL:
        out.srcAccessOrder = cydriver.CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL
    elif order == MemcpySrcAccessOrder.ANY:
        out.srcAccessOrder = cydriver.CU_MEMCPY_SRC_ACCESS_ORDER_ANY
    if options.src_location_hint is not None:
        as_location(options.src_location_hint, &out.srcLocHint, what)
    if options.dst_location_hint is not None:
        as_location(options.dst_location_hint, &out.dstLocHint, what)
    if options.overlap_mode == MemcpyOverlapMode.PREFER_OVERLAP_WITH_COMPUTE:
        out.flags = cydriver.CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE
    return 0


cdef str during_api_call_refusal(str what, str needs):
    return (f"{what}: src_access_order='during_api_call' needs {needs} (this driver is CUDA "
            f"{'.'.join(map(str, driver_version()))}): a plain copy reads the source in "
            f"stream order, after the call returns; use 'stream' or 'any', or no options")


cdef bint _attributes_supported() except -1:
    # cuMemcpyWithAttributesAsync came with CUDA 13.2.
    return cuda_version() >= 13020


cdef object check_copy_options(object options, Stream s, str what):
    """Check ``options`` of ``Buffer.copy_to``/``copy_from`` before anything is allocated or
    queued: a CopyOptions or None; not with the legacy stream or a capturing one; and
    ``during_api_call`` only where the driver can honour it."""
    if options is None:
        return None
    if not isinstance(options, CopyOptions):
        raise TypeError(f"{what}: options must be a CopyOptions or None, not "
                        f"{type(options).__name__}")
    check_batch_stream(s, what)
    check_not_capturing(s, what)
    if (options.src_access_order == MemcpySrcAccessOrder.DURING_API_CALL
            and not _attributes_supported()):
        raise NotImplementedError(during_api_call_refusal(what, "a CUDA 13.2 driver"))
    return options


cdef int copy_with_options(CUdeviceptr dst, CUdeviceptr src, size_t n, Stream s,
                           object options, str what) except -1:
    """One copy, with ``options`` already checked by check_copy_options (None: a plain copy).
    Where the driver lacks ``cuMemcpyWithAttributesAsync`` the hints are dropped."""
    cdef CUmemcpyAttributes attrs
    cdef CUcontext ctx
    cdef CUresult err
    cdef ContextGuard guard
    if options is None or not _attributes_supported():
        return copy_bytes(dst, src, n, s)
    fill_attributes(options, &attrs, what)
    if n == 0:
        return 0
    ctx = stream_context(s)
    try:
        with nogil:
            enter_context(guard, ctx)
            err = _cuda_compat.cuMemcpyWithAttributesAsync(dst, src, n, &attrs, s._handle)
            exit_context(guard)
    except RuntimeError:  # the driver lacks the entry point after all
        if attrs.srcAccessOrder == cydriver.CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL:
            raise NotImplementedError(during_api_call_refusal(
                what, "cuMemcpyWithAttributesAsync (a CUDA 13.2 driver)")) from None
        return copy_bytes(dst, src, n, s)
    if (err == cydriver.CUDA_ERROR_INVALID_VALUE
            and attrs.srcAccessOrder != cydriver.CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL):
        # As for a plain copy: another device's pool memory, copied between the two contexts
        # (the hints, which concern managed memory only, do not apply to it).
        err = _copy_between_devices(dst, src, n, s)
    return HANDLE_RETURN(err)
