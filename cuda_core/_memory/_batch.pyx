"""Batched memory operations (``cuda_core.utils``): many copies, prefetches or discards in one
driver call.

Every argument is checked before the first driver call that queues work: the stream (not the
legacy default stream, which the batch entry points refuse; for copies, not a GraphBuilder
or a capturing stream), the sequences (exact tuples from here on, so their lengths cannot
change), each element's type and open state, equal lengths and sizes, options and
locations. Zero-byte items are left out of the batch; an empty batch makes no driver call.
Equal neighbouring attributes or locations share one entry of the driver's arrays.

The batch entry points came with CUDA 13.0. Where the driver is older, ``copy_batch`` queues
one plain copy per item (refusing ``src_access_order="during_api_call"``, which a plain copy
cannot honour), and the managed-memory operations raise ``NotImplementedError``.
"""

from collections.abc import Sequence

from cuda.bindings cimport cydriver
from cuda_core cimport _cuda_compat
from cuda.bindings.cydriver cimport (CUcontext, CUdeviceptr, CUmemcpyAttributes, CUmemLocation,
                                     CUresult)
from libc.string cimport memcmp, memset
from libcpp.vector cimport vector

from cuda_core._context cimport ContextGuard, enter_context, exit_context
from cuda_core._driver cimport cuda_version, driver_version
from cuda_core._checks import ArgumentTypeError
from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._memory._alloc cimport stream_context
from cuda_core._memory._buffer cimport Buffer
from cuda_core._memory._copy cimport (check_batch_stream, check_not_capturing, copy_bytes,
                                      during_api_call_refusal, fill_attributes)
from cuda_core._memory._location cimport as_location
from cuda_core._stream cimport Stream, is_foreign_stream, require_stream

from cuda_core._memory._copy_options import CopyOptions

__all__ = ["copy_batch", "discard_batch", "discard_prefetch_batch", "prefetch_batch"]


cdef Stream _batch_stream(object stream, str what, bint allow_builder):
    cdef Stream s
    # Neither a Stream nor a foreign stream: a GraphBuilder (None is "foreign", refused below).
    if not allow_builder and not isinstance(stream, Stream) and not is_foreign_stream(stream):
        raise TypeError(f"{what}: a GraphBuilder is not accepted: a batched copy cannot be "
                        f"captured into a graph; use GraphDefinition.memcpy() or "
                        f"Buffer.copy_to() per buffer")
    s = require_stream(stream, what)
    s._check_open()
    check_batch_stream(s, what)
    return s


cdef bint _is_sequence(object obj):
    return (isinstance(obj, Sequence)
            and not isinstance(obj, (str, bytes, bytearray, memoryview)))


cdef tuple _buffers(object obj, str what, str name):
    """``obj``, a sequence of open Buffers, as an exact tuple."""
    cdef tuple items
    cdef Py_ssize_t i
    if isinstance(obj, Buffer):
        raise TypeError(f"{what}: {name} must be a sequence of Buffers (a list or tuple), not "
                        f"a single Buffer; pass [{name[:-1]}]")
    if not _is_sequence(obj):  # cuda.core: ValueError for a str (an empty one is no Buffers)
        raise ArgumentTypeError(f"{what}: {name} must be a sequence of Buffers (a list or "
                                f"tuple), not {type(obj).__name__}")
    items = tuple(obj)
    for i in range(len(items)):
        if not isinstance(items[i], Buffer):
            raise TypeError(f"{what}: {name}[{i}] must be a Buffer, not "
                            f"{type(items[i]).__name__}")
        if (<Buffer>items[i])._closed:
            raise RuntimeError(f"{what}: {name}[{i}] is a closed Buffer")
    return items


cdef tuple _copy_options(object options, Py_ssize_t n, str what):
    """One CopyOptions (or None) per copy."""
    cdef tuple items
    cdef Py_ssize_t i
    if options is None or isinstance(options, CopyOptions):
        return (options,) * n
    if not _is_sequence(options):
        raise TypeError(f"{what}: options must be a CopyOptions, a sequence of them (one per "
                        f"copy) or None, not {type(options).__name__}")
    items = tuple(options)
    if len(items) != n:
        raise ValueError(f"{what}: options has {len(items)} entries but there are {n} copies")
    for i in range(n):
        if not isinstance(items[i], CopyOptions):
            raise TypeError(f"{what}: options[{i}] must be a CopyOptions, not "
                            f"{type(items[i]).__name__}")
    return items


def copy_batch(stream, srcs, dsts, *, options=None):
    """Copy ``srcs[i]`` into ``dsts[i]`` for every ``i``, in one call, ordered on ``stream``.

    The batch as a whole is ordered on the stream; the copies within it run in no particular
    order, so no copy may write what another reads or writes (not checked). Any kind of
    memory works as for :meth:`Buffer.copy_to`, but both sides of a copy must be accessible
    from the stream's device.

    Parameters
    ----------
    stream : Stream
        Any stream but the legacy default stream (``LEGACY_DEFAULT_STREAM``, or a
        ``default_stream`` that is the legacy one: the driver refuses it; use
        ``PER_THREAD_DEFAULT_STREAM``), and not a GraphBuilder or a capturing stream (a graph
        has no batched-copy node).
    srcs, dsts : sequence of Buffer
        The sources and destinations, of equal lengths; ``srcs[i]`` and ``dsts[i]`` have the
        same size.
    options : CopyOptions, sequence of CopyOptions, or None
        One for every copy, or one per copy (same length as ``srcs``); None: stream order, no
        hints.

    Raises
    ------
    TypeError
        A single Buffer instead of a sequence, an element that is not a Buffer, options of
        the wrong type, the legacy default stream, a GraphBuilder or a capturing stream.
    ValueError
        Lengths or sizes that differ (the message names the index).
    RuntimeError
        A closed buffer (the message names it).
    NotImplementedError
        ``src_access_order="during_api_call"`` where the driver is older than CUDA 13.0.

    Notes
    -----
    Calls ``cuMemcpyBatchAsync`` (CUDA 13.0). On an older driver the copies are queued one by
    one with ``cuMemcpyAsync``, and the hints are dropped. An empty batch does nothing.
    """
    cdef str what = "copy_batch()"
    cdef Stream s = _batch_stream(stream, what, False)
    cdef tuple src_items = _buffers(srcs, what, "srcs")
    cdef tuple dst_items = _buffers(dsts, what, "dsts")
    cdef Py_ssize_t n = len(src_items)
    cdef Py_ssize_t i
    cdef size_t k, count
    cdef Buffer sb, db
    cdef tuple opts
    cdef CUmemcpyAttributes attr
    cdef vector[CUdeviceptr] dst_ptrs, src_ptrs
    cdef vector[size_t] sizes, attr_starts
    cdef vector[CUmemcpyAttributes] attrs
    cdef CUcontext ctx
    cdef CUresult err
    cdef ContextGuard guard
    cdef bint batched = False
    if len(dst_items) != n:
        raise ValueError(f"{what}: srcs has {n} buffers but dsts has {len(dst_items)}")
    for i in range(n):
        sb = <Buffer>src_items[i]
        db = <Buffer>dst_items[i]
        if sb._size != db._size:
            raise ValueError(f"{what}: size mismatch at index {i}: srcs[{i}] has {sb._size} "
                             f"bytes but dsts[{i}] has {db._size} bytes")
    opts = _copy_options(options, n, what)
    dst_ptrs.reserve(n)
    src_ptrs.reserve(n)
    sizes.reserve(n)
    for i in range(n):
        sb = <Buffer>src_items[i]
        db = <Buffer>dst_items[i]
        if i == 0 or opts[i] is not opts[i - 1]:  # one options object for all: filled once
            fill_attributes(opts[i], &attr, what)
        if sb._size == 0:
            continue
        if attrs.empty() or memcmp(&attr, &attrs.back(), sizeof(CUmemcpyAttributes)) != 0:
            attr_starts.push_back(sizes.size())
            attrs.push_back(attr)
        dst_ptrs.push_back(db._ptr)
        src_ptrs.push_back(sb._ptr)
        sizes.push_back(sb._size)
    count = sizes.size()
    if count == 0:
        return
    check_not_capturing(s, what)
    if cuda_version() >= 13000:
        ctx = stream_context(s)
        batched = True
        try:
            with nogil:
                enter_context(guard, ctx)
                err = _cuda_compat.cuMemcpyBatchAsync(dst_ptrs.data(), src_ptrs.data(),
                                                  sizes.data(), count, attrs.data(),
                                                  attr_starts.data(), attrs.size(), s._handle)
                exit_context(guard)
        except RuntimeError:  # the driver lacks the entry point
            batched = False
    if batched:
        HANDLE_RETURN(err)
        return
    for k in range(attrs.size()):
        if attrs[k].srcAccessOrder == cydriver.CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL:
            raise NotImplementedError(during_api_call_refusal(
                what, "cuMemcpyBatchAsync (a CUDA 13.0 driver)"))
    for k in range(count):
        copy_bytes(dst_ptrs[k], src_ptrs[k], sizes[k], s)


cdef int _fill_locations(object locations, Py_ssize_t n, vector[CUmemLocation]& out,
                         str what) except -1:
    """One location per buffer: a single Device, ordinal or Host for all, or a sequence."""
    cdef CUmemLocation loc
    cdef tuple items
    cdef Py_ssize_t i
    memset(&loc, 0, sizeof(loc))  # as_location sets type and id; anything else stays zero
    if _is_sequence(locations):
        items = tuple(locations)
        if len(items) != n:
            raise ValueError(f"{what}: locations has {len(items)} entries but buffers has {n}")
        for i in range(n):
            as_location(items[i], &loc, f"{what}: locations[{i}]")
            out.push_back(loc)
        return 0
    as_location(locations, &loc, what)
    for i in range(n):
        out.push_back(loc)
    return 0


cdef _managed_batch(object stream, object buffers, object locations, bint discard,
                    bint prefetch, str what, str entry):
    cdef Stream s = _batch_stream(stream, what, True)
    cdef tuple items = _buffers(buffers, what, "buffers")
    cdef Py_ssize_t n = len(items)
    cdef Py_ssize_t i
    cdef Buffer b
    cdef vector[CUmemLocation] per_buffer, locs
    cdef vector[CUdeviceptr] ptrs
    cdef vector[size_t] sizes, loc_starts
    cdef CUcontext ctx
    cdef CUresult err
    cdef ContextGuard guard
    if prefetch:
        _fill_locations(locations, n, per_buffer, what)
    for i in range(n):
        b = <Buffer>items[i]
        if b._size == 0:
            continue
        if prefetch and (locs.empty() or memcmp(&per_buffer[i], &locs.back(),
                                                sizeof(CUmemLocation)) != 0):
            loc_starts.push_back(sizes.size())
            locs.push_back(per_buffer[i])
        ptrs.push_back(b._ptr)
        sizes.push_back(b._size)
    if sizes.empty():
        return
    if cuda_version() < 13000:
        raise NotImplementedError(f"{what} needs a CUDA 13.0 driver ({entry}); this driver is "
                                  f"CUDA {'.'.join(map(str, driver_version()))}")
    if _cuda_compat.BUILD_CUDA_VERSION < 13000:
        raise NotImplementedError(f"{what} needs CUDA 13.0 ({entry}); this cuda_core was built "
                                  f"for CUDA 12 (cuda-bindings 12.x), which has no {entry}")
    ctx = stream_context(s)
    try:
        with nogil:
            enter_context(guard, ctx)
            if not prefetch:
                err = _cuda_compat.cuMemDiscardBatchAsync(ptrs.data(), sizes.data(), sizes.size(),
                                                      0, s._handle)
            elif discard:
                err = _cuda_compat.cuMemDiscardAndPrefetchBatchAsync(
                    ptrs.data(), sizes.data(), sizes.size(), locs.data(), loc_starts.data(),
                    locs.size(), 0, s._handle)
            else:
                err = _cuda_compat.cuMemPrefetchBatchAsync(
                    ptrs.data(), sizes.data(), sizes.size(), locs.data(), loc_starts.data(),
                    locs.size(), 0, s._handle)
            exit_context(guard)
    except RuntimeError:  # the driver lacks the entry point
        raise NotImplementedError(f"{what} needs a CUDA 13.0 driver: this driver has no "
                                  f"{entry}") from None
    HANDLE_RETURN(err)


def prefetch_batch(stream, buffers, locations):
    """Migrate each managed buffer to its location ahead of use, in one call, ordered on
    ``stream``.

    Parameters
    ----------
    stream : Stream or GraphBuilder
        Any stream but the legacy default stream (the driver refuses it).
    buffers : sequence of Buffer
        Managed memory (the driver refuses other memory with ``CUDA_ERROR_INVALID_VALUE``).
    locations : cuda_core.Device, int, cuda_core.Host, or sequence of them
        One location for every buffer, or one per buffer (same length as ``buffers``).

    Raises
    ------
    TypeError, ValueError
        A bad argument (the message names it and the index).
    NotImplementedError
        Where the driver is older than CUDA 13.0.

    Notes
    -----
    Calls ``cuMemPrefetchBatchAsync``. Every device must support concurrent managed access.
    Zero-byte buffers are skipped; an empty batch does nothing. For one buffer, see
    :meth:`ManagedBuffer.prefetch`.
    """
    _managed_batch(stream, buffers, locations, False, True, "prefetch_batch()",
                   "cuMemPrefetchBatchAsync")


def discard_batch(stream, buffers):
    """Tell the driver the contents of each managed buffer are no longer needed, in one call,
    ordered on ``stream``: the pages can be released without being migrated, and reading them
    gives unspecified values until they are written or prefetched again.

    Parameters
    ----------
    stream : Stream or GraphBuilder
        Any stream but the legacy default stream (the driver refuses it).
    buffers : sequence of Buffer
        Managed memory.

    Raises
    ------
    TypeError
        A bad argument (the message names it and the index).
    NotImplementedError
        Where the driver is older than CUDA 13.0.

    Notes
    -----
    Calls ``cuMemDiscardBatchAsync``. For one buffer, see :meth:`ManagedBuffer.discard`.
    """
    _managed_batch(stream, buffers, None, True, False, "discard_batch()",
                   "cuMemDiscardBatchAsync")


def discard_prefetch_batch(stream, buffers, locations):
    """:func:`discard_batch`, then map fresh pages of each buffer at its location, in one call,
    ordered on ``stream``. Arguments and errors are :func:`prefetch_batch`'s.

    Notes
    -----
    Calls ``cuMemDiscardAndPrefetchBatchAsync``. For one buffer, see
    :meth:`ManagedBuffer.discard_prefetch`.
    """
    _managed_batch(stream, buffers, locations, True, True, "discard_prefetch_batch()",
                   "cuMemDiscardAndPrefetchBatchAsync")
