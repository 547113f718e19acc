"""ManagedMemoryResource and ManagedBuffer: managed (unified) memory, which the driver
migrates between the host and the devices on demand, with advice and prefetch.

The resource allocates from a managed memory pool (CUDA 13: ``cuMemPoolCreate`` with
``CU_MEM_ALLOCATION_TYPE_MANAGED``, or the current managed pool) and falls back to one
``cuMemAllocManaged`` per allocation where managed pools are not supported, or where the driver
refuses memory advice on pool memory (CUDA 13.0 drivers do), since ManagedBuffer's
``read_mostly``, ``preferred_location`` and ``accessed_by`` are memory advice.
"""

import warnings

cimport cython
from cuda.bindings cimport cydriver
from cuda_core cimport _cuda_compat
from cuda.bindings.cydriver cimport (CUcontext, CUdeviceptr, CUmemLocation, CUmemoryPool,
                                     CUresult, CUstream, CUDA_SUCCESS)
from libc.stdint cimport int32_t
from libc.string cimport memset

from cuda_core._checks cimport check_bool, check_size
from cuda_core._context cimport ContextGuard, enter_context, exit_context
from cuda_core._driver cimport device_count, driver_version
from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._memory._alloc cimport current_or_primary, free_after, stream_context
from cuda_core._memory._buffer cimport Buffer, init_buffer
from cuda_core._memory._location cimport as_location, location_object
from cuda_core._memory._mempool cimport _MemPool, create_pool, raise_release_threshold
from cuda_core._stream cimport Stream, require_stream

from cuda_core._device import Device
from cuda_core._errors import CUDAError, CUDAWarning
from cuda_core._live_set import _LiveSet
from cuda_core._memory._location import Host
from cuda_core._memory._mr_options import ManagedMemoryLocationType, ManagedMemoryResourceOptions
from cuda_core._options import check_or_create_options

__all__ = ["AccessedBySetProxy", "ManagedBuffer", "ManagedMemoryResource",
           "ManagedMemoryResourceOptions"]


@cython.auto_pickle(False)
cdef class ManagedBuffer(Buffer):
    """A :class:`Buffer` of managed memory, with the driver's advice and prefetch API.

    Returned by :meth:`ManagedMemoryResource.allocate`; ``ManagedBuffer.from_handle`` wraps an
    existing managed allocation. Locations are a :class:`Device` or a :class:`Host`, as in
    cuda.core (an int is refused with ``TypeError``).

    Example::

        buf = mr.allocate(size, stream=stream)
        buf.read_mostly = True
        buf.preferred_location = Device(0)
        buf.accessed_by.add(Host())
        buf.prefetch(Device(0), stream=stream)
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("ManagedBuffer objects cannot be instantiated directly; use "
                           "ManagedMemoryResource.allocate() or ManagedBuffer.from_handle()")

    cdef int _device_hint(self):
        cdef object mr = self._mr
        if isinstance(mr, ManagedMemoryResource):
            return (<ManagedMemoryResource>mr)._dev_id
        return -1

    cdef int _advise(self, cydriver.CUmem_advise advice, object location, str what) except -1:
        cdef CUmemLocation loc
        cdef CUcontext ctx
        cdef CUresult err
        cdef ContextGuard guard
        self._check_open()
        memset(&loc, 0, sizeof(loc))
        if location is not None:
            as_location(location, &loc, what, False)
        else:
            loc.type = cydriver.CU_MEM_LOCATION_TYPE_DEVICE  # ignored by the unset advices
        if self._size == 0:
            return 0
        ctx = current_or_primary(self._device_hint())
        with nogil:
            enter_context(guard, ctx)
            err = _cuda_compat.cuMemAdvise(self._ptr, self._size, advice, loc)
            exit_context(guard)
        return HANDLE_RETURN(err)

    cdef int _range_attribute(self, cydriver.CUmem_range_attribute attr, void* data,
                              size_t nbytes) except -1:
        cdef CUcontext ctx
        cdef CUresult err
        cdef ContextGuard guard
        self._check_open()
        ctx = current_or_primary(self._device_hint())
        with nogil:
            enter_context(guard, ctx)
            err = cydriver.cuMemRangeGetAttribute(data, nbytes, attr, self._ptr, self._size)
            exit_context(guard)
        return HANDLE_RETURN(err)

    cdef object _range_location(self, cydriver.CUmem_range_attribute type_attr,
                                cydriver.CUmem_range_attribute id_attr):
        """The Device or Host (or None) a pair of location range attributes names."""
        cdef int32_t loc_type = 0
        cdef int32_t loc_id = 0
        if self._size == 0:
            self._check_open()
            return None
        self._range_attribute(type_attr, &loc_type, 4)
        self._range_attribute(id_attr, &loc_id, 4)
        return location_object(loc_type, loc_id)

    def prefetch(self, location, *, stream):
        """Migrate the memory to ``location`` ahead of use, ordered on ``stream``.

        Parameters
        ----------
        location : Device or Host
        stream : Stream
            Keyword-only, required.

        Notes
        -----
        Calls ``cuMemPrefetchAsync``.
        """
        cdef Stream s = require_stream(stream, "ManagedBuffer.prefetch()")
        cdef CUmemLocation loc
        cdef CUcontext ctx
        cdef CUresult err
        cdef ContextGuard guard
        self._check_open()
        s._check_open()
        as_location(location, &loc, "ManagedBuffer.prefetch()", False)
        if self._size == 0:
            return
        ctx = stream_context(s)
        with nogil:
            enter_context(guard, ctx)
            err = _cuda_compat.cuMemPrefetchAsync(self._ptr, self._size, loc, 0, s._handle)
            exit_context(guard)
        HANDLE_RETURN(err)

    def discard(self, *, stream):
        """Tell the driver the contents are no longer needed, ordered on ``stream``: the pages
        can be released without being migrated; reading them afterwards gives unspecified
        values until they are written again. Needs a CUDA 13 driver.

        .. note:: Calls ``cuMemDiscardBatchAsync``.
        """
        self._discard(None, stream, "ManagedBuffer.discard()")

    def discard_prefetch(self, location, *, stream):
        """:meth:`discard` the contents, then map fresh pages at ``location``, ordered on
        ``stream``. Needs a CUDA 13 driver.

        .. note:: Calls ``cuMemDiscardAndPrefetchBatchAsync``.
        """
        self._discard(location, stream, "ManagedBuffer.discard_prefetch()")

    def _discard(self, location, stream, str what):
        cdef Stream s = require_stream(stream, what)
        cdef CUmemLocation loc
        cdef CUdeviceptr ptr = self._ptr
        cdef size_t size = self._size
        cdef size_t index = 0
        cdef CUcontext ctx
        cdef CUresult err
        cdef ContextGuard guard
        self._check_open()
        s._check_open()
        if location is not None:
            as_location(location, &loc, what, False)
        if size == 0:
            return
        ctx = stream_context(s)
        try:
            with nogil:
                enter_context(guard, ctx)
                if location is None:
                    err = _cuda_compat.cuMemDiscardBatchAsync(&ptr, &size, 1, 0, s._handle)
                else:
                    err = _cuda_compat.cuMemDiscardAndPrefetchBatchAsync(
                        &ptr, &size, 1, &loc, &index, 1, 0, s._handle)
                exit_context(guard)
        except RuntimeError as exc:  # the driver lacks the entry point
            raise RuntimeError(f"{what} needs a CUDA 13 driver: {exc}") from None
        HANDLE_RETURN(err)

    @property
    def read_mostly(self):
        """True if the driver keeps read-only copies where the memory is read (bool; set to
        change it).

        .. note:: ``cuMemRangeGetAttribute`` / ``cuMemAdvise`` with ``*_READ_MOSTLY``.
        """
        cdef int32_t value = 0
        if self._size == 0:
            self._check_open()
            return False
        self._range_attribute(cydriver.CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, &value, 4)
        return value != 0

    @read_mostly.setter
    def read_mostly(self, value):
        check_bool(value, "ManagedBuffer.read_mostly")
        self._advise(cydriver.CU_MEM_ADVISE_SET_READ_MOSTLY if value
                     else cydriver.CU_MEM_ADVISE_UNSET_READ_MOSTLY, None,
                     "ManagedBuffer.read_mostly")

    @property
    def preferred_location(self):
        """Where the memory prefers to live: a :class:`Device`, a :class:`Host`, or None.
        Settable (None removes the preference).

        .. note:: ``cuMemRangeGetAttribute`` / ``cuMemAdvise`` with ``*_PREFERRED_LOCATION``.
        """
        return self._range_location(cydriver.CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE,
                                    cydriver.CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID)

    @preferred_location.setter
    def preferred_location(self, location):
        if location is None:
            self._advise(cydriver.CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, None,
                         "ManagedBuffer.preferred_location")
        else:
            self._advise(cydriver.CU_MEM_ADVISE_SET_PREFERRED_LOCATION, location,
                         "ManagedBuffer.preferred_location")

    @property
    def last_prefetch_location(self):
        """Where the latest prefetch of the memory asked it to go: a :class:`Device` or a
        :class:`Host`; None where a page was never prefetched, or its pages were prefetched to
        different places. The destination asked for, not where the pages are now, nor whether
        the asynchronous prefetch has completed. Read-only (cuda.core 1.3).

        .. note:: ``cuMemRangeGetAttribute`` with ``*_LAST_PREFETCH_LOCATION_TYPE`` and
           ``*_ID``.
        """
        return self._range_location(cydriver.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE,
                                    cydriver.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID)

    @property
    def accessed_by(self):
        """The locations that keep a mapping of the memory: a live, mutable set of
        :class:`Device` and :class:`Host` (assign an iterable to replace it).

        .. note:: ``cuMemRangeGetAttribute`` / ``cuMemAdvise`` with ``*_ACCESSED_BY``.
        """
        self._check_open()
        return AccessedBySetProxy._create(self)

    @accessed_by.setter
    def accessed_by(self, locations):
        self._check_open()
        if isinstance(locations, (Device, Host)):
            locations = (locations,)
        elif not hasattr(type(locations), "__iter__"):  # a str is iterated too, as in cuda.core:
            raise TypeError(f"ManagedBuffer.accessed_by: expected a Device, a Host or an "
                            f"iterable of them, not {type(locations).__name__}")  # "" is none
        wanted = {_normalize_location(loc) for loc in locations}
        current = set(self._accessed_by_list())
        for loc in current - wanted:
            self._advise(cydriver.CU_MEM_ADVISE_UNSET_ACCESSED_BY, loc,
                         "ManagedBuffer.accessed_by")
        for loc in wanted - current:
            self._advise(cydriver.CU_MEM_ADVISE_SET_ACCESSED_BY, loc,
                         "ManagedBuffer.accessed_by")

    def _accessed_by_list(self):
        cdef int32_t ids[65]
        cdef int n = min(device_count(), 64) + 1
        if self._size == 0:
            return []
        for i in range(n):
            ids[i] = cydriver.CU_DEVICE_INVALID
        self._range_attribute(cydriver.CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, ids, 4 * n)
        out = []
        for i in range(n):
            if ids[i] == cydriver.CU_DEVICE_CPU:
                out.append(Host())
            elif ids[i] >= 0:
                out.append(Device(ids[i]))
        return out

    def _set_accessed_by(self, location, bint enable):
        self._advise(cydriver.CU_MEM_ADVISE_SET_ACCESSED_BY if enable
                     else cydriver.CU_MEM_ADVISE_UNSET_ACCESSED_BY, location,
                     "ManagedBuffer.accessed_by")


def _normalize_location(loc):
    if isinstance(loc, (Device, Host)):
        return loc
    raise TypeError(f"ManagedBuffer.accessed_by: expected Device or Host items, not "
                    f"{type(loc).__name__}")


class AccessedBySetProxy(_LiveSet):
    """The locations that keep a mapping of a managed buffer: a live, mutable set of
    :class:`~cuda_core.Device` and :class:`Host`. Not constructible: use ``buf.accessed_by``."""

    __slots__ = ()
    _origin = "ManagedBuffer.accessed_by"

    def _items(self):
        return self._owner._accessed_by_list()

    def __contains__(self, location):
        try:
            loc = _normalize_location(location)
        except TypeError:
            return False
        return loc in self._items()

    def add(self, location):
        """Keep a mapping of the memory at ``location`` (a Device or a Host)."""
        self._owner._set_accessed_by(_normalize_location(location), True)

    def discard(self, location):
        """Stop keeping a mapping at ``location``."""
        self._owner._set_accessed_by(_normalize_location(location), False)


@cython.auto_pickle(False)
cdef class ManagedMemoryResource(_MemPool):
    """Managed (unified) memory: one address, valid on the host and on every device, migrated
    by the driver. :meth:`allocate` returns :class:`ManagedBuffer`.

    Parameters
    ----------
    options : ManagedMemoryResourceOptions or dict, optional
        None uses the current managed memory pool (not owned). Options create an owned pool
        whose allocations prefer ``preferred_location``.

    Notes
    -----
    Managed memory pools need a CUDA 13 driver. Where they are not available, the resource
    allocates each buffer with ``cuMemAllocManaged`` (synchronous; the preferred location is
    then applied as advice), and :attr:`uses_pool` is False. A CUDA 13.0 driver refuses memory
    advice on pool memory (``CUDA_ERROR_NOT_SUPPORTED``, a :class:`CUDAError` from
    :class:`ManagedBuffer`'s advice properties, as in cuda.core). Where the device lacks
    concurrent managed access, a :class:`CUDAWarning` says that the host must not touch
    managed memory while the GPU runs.

    .. note:: Calls ``cuMemGetMemPool`` or ``cuMemPoolCreate`` (``CU_MEM_ALLOCATION_TYPE_MANAGED``).
    """

    cdef bint _fallback
    cdef CUmemLocation _preferred

    def __init__(self, options=None):
        cdef CUmemoryPool pool = NULL
        cdef CUmemLocation loc
        cdef CUresult err
        if self._inited:
            raise RuntimeError("ManagedMemoryResource is already initialized")
        opts = check_or_create_options(ManagedMemoryResourceOptions, options,
                                       "ManagedMemoryResource options")
        dev = Device()
        if not dev.properties.managed_memory:
            raise RuntimeError(f"device {dev.device_id} does not support managed memory "
                               f"(properties.managed_memory is False)")
        if not dev.properties.concurrent_managed_access:
            warnings.warn(f"device {dev.device_id} has no concurrent managed access: the host "
                          f"must not touch managed memory while work runs on the device",
                          CUDAWarning, stacklevel=2)
        memset(&loc, 0, sizeof(loc))
        kind = opts.preferred_location_type
        dev_id = -1
        if kind == ManagedMemoryLocationType.DEVICE:
            loc.type = cydriver.CU_MEM_LOCATION_TYPE_DEVICE
            loc.id = Device(opts.preferred_location).device_id
            dev_id = loc.id
        elif kind == ManagedMemoryLocationType.HOST:
            loc.type = cydriver.CU_MEM_LOCATION_TYPE_HOST
        elif kind == ManagedMemoryLocationType.HOST_NUMA:
            loc.type = cydriver.CU_MEM_LOCATION_TYPE_HOST_NUMA
            loc.id = opts.preferred_location
        else:
            loc.type = _cuda_compat.CU_MEM_LOCATION_TYPE_NONE
        self._preferred = loc
        owned = options is not None
        err = cydriver.CUDA_ERROR_NOT_SUPPORTED
        if driver_version() >= (13, 0):
            try:
                if owned:
                    err = create_pool(&pool, _cuda_compat.CU_MEM_ALLOCATION_TYPE_MANAGED,
                                      loc.type, loc.id, False, 0)
                else:
                    err = _cuda_compat.cuMemGetMemPool(&pool, &loc,
                                                   _cuda_compat.CU_MEM_ALLOCATION_TYPE_MANAGED)
            except RuntimeError:  # the driver lacks the entry point: no managed pools
                err = cydriver.CUDA_ERROR_NOT_SUPPORTED
        if err == cydriver.CUDA_ERROR_NOT_SUPPORTED:
            self._fallback = True
            self._setup(NULL, dev_id, False, False, "ManagedMemoryResource.allocate()")
        else:
            HANDLE_RETURN(err)
            self._setup(pool, dev_id, owned, False, "ManagedMemoryResource.allocate()")
            try:
                raise_release_threshold(pool)
            except CUDAError:  # a tuning, not a requirement: managed pools may not take it
                pass
        self._host_access = True
        self._c_dealloc = type(self) is ManagedMemoryResource

    @property
    def uses_pool(self):
        """True when allocations come from a managed memory pool; False on the
        ``cuMemAllocManaged`` fallback."""
        return not self._fallback

    @property
    def preferred_location(self):
        """The preferred location of the allocations (a Device or a Host), or None."""
        return location_object(self._preferred.type, self._preferred.id)

    @property
    def is_managed(self):
        """True."""
        return True

    @property
    def handle(self):
        """The managed pool (``cuda.bindings.driver.CUmemoryPool``); RuntimeError on the
        ``cuMemAllocManaged`` fallback, which has none."""
        if self._fallback:
            raise RuntimeError("this ManagedMemoryResource has no pool: it uses "
                               "cuMemAllocManaged (managed pools are unsupported here, or "
                               "refuse memory advice)")
        return _MemPool.handle.__get__(self)

    @property
    def attributes(self):
        """The pool's attributes (see :class:`MemoryPoolAttributes`); RuntimeError on the
        ``cuMemAllocManaged`` fallback."""
        if self._fallback:
            raise RuntimeError("this ManagedMemoryResource has no pool (cuMemAllocManaged "
                               "fallback): it has no pool attributes")
        return _MemPool.attributes.__get__(self)

    @property
    def peer_accessible_by(self):
        """Not applicable: managed memory is accessible from every device."""
        raise AttributeError("ManagedMemoryResource has no peer_accessible_by: managed memory "
                             "is accessible from every device; see ManagedBuffer.accessed_by")

    def allocate(self, size, *, stream):
        """Allocate ``size`` bytes of managed memory, ordered on ``stream``.

        Returns
        -------
        ManagedBuffer

        Notes
        -----
        Calls ``cuMemAllocFromPoolAsync``, or ``cuMemAllocManaged`` on the fallback.
        """
        cdef size_t n = check_size(size, self._what_size)
        cdef Stream s = require_stream(stream, self._what)
        cdef CUdeviceptr ptr = self._alloc_ptr(n, s)
        cdef ManagedBuffer buf = ManagedBuffer.__new__(ManagedBuffer)
        init_buffer(buf, ptr, n, self, s)
        return buf

    cdef CUresult _driver_alloc(self, CUdeviceptr* ptr, size_t n, CUstream s) noexcept nogil:
        cdef CUresult err
        if not self._fallback:
            return _MemPool._driver_alloc(self, ptr, n, s)
        # One cuMemAllocManaged per buffer (synchronous), its preferred location as advice.
        err = cydriver.cuMemAllocManaged(ptr, n, cydriver.CU_MEM_ATTACH_GLOBAL)
        if err == CUDA_SUCCESS and self._preferred.type != _cuda_compat.CU_MEM_LOCATION_TYPE_NONE:
            err = _cuda_compat.cuMemAdvise(ptr[0], n, cydriver.CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
                                       self._preferred)
            if err != CUDA_SUCCESS:
                cydriver.cuMemFree(ptr[0])
        return err

    cdef int _deallocate_c(self, CUdeviceptr ptr, size_t size, Stream stream) except -1:
        if not self._fallback:
            return _MemPool._deallocate_c(self, ptr, size, stream)
        if ptr == 0:
            return 0
        return free_after(ptr, stream, current_or_primary(self._dev_id), False)
