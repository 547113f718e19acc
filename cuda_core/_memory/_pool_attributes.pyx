"""The live attribute views of memory: ``_MemoryCounters``, the usage counters that a memory
pool and a device's graph memory both keep (``_graph_mr.GraphMemoryAttributes`` is the other
subclass), and :class:`MemoryPoolAttributes`, a pool resource's ``attributes``. Each reads
from, and writes to, the driver at each access: there is no copy to go stale.
"""

cimport cython
from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUmemoryPool, cuuint64_t

from cuda_core._checks cimport check_bool, check_int, check_size
from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._resource cimport Resource

__all__ = ["MemoryPoolAttributes"]


def _counter_property(int which, str doc):
    """A read-only property of :class:`_MemoryCounters`: the counter ``which`` (a
    ``_COUNTER_*`` index), read at each access."""
    def getter(_MemoryCounters self):
        return self._counter(which)

    return property(getter, doc=doc)


def _high_mark_property(int which, str stem):
    """The property ``<stem>_high`` of :class:`_MemoryCounters`: the high mark ``which`` of
    the counter ``<stem>_current``, read at each access; setting it to 0 resets it."""
    cdef str name = f"{stem}_high"

    def getter(_MemoryCounters self):
        return self._counter(which)

    def setter(_MemoryCounters self, value):
        self._reset(which, value, name)

    return property(getter, setter, doc=f"The high mark of ``{stem}_current`` (int); set it "
                                        f"to 0 to reset it.")


@cython.auto_pickle(False)
cdef class _MemoryCounters:
    """The usage counters that a memory pool and a device's graph memory both keep, read from
    the driver at each access; the high marks can only be reset, to 0. A subclass reads and
    resets one counter (a ``_COUNTER_*`` index) in ``_counter``/``_reset_counter``."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__} cannot be instantiated directly; use "
                           f"{self._origin()}")

    cdef str _origin(self):
        return "a memory resource's attributes"

    cdef object _counter(self, int which):
        raise NotImplementedError

    cdef int _reset_counter(self, int which) except -1:
        raise NotImplementedError

    cdef int _reset(self, int which, object value, str name) except -1:
        if check_int(value, name) != 0:
            raise ValueError(f"{name} can only be reset, to 0; got {value}")
        return self._reset_counter(which)

    reserved_mem_current = _counter_property(_COUNTER_RESERVED_CURRENT,
                                             "Bytes of memory reserved now (int).")
    reserved_mem_high = _high_mark_property(_COUNTER_RESERVED_HIGH, "reserved_mem")
    used_mem_current = _counter_property(_COUNTER_USED_CURRENT, "Bytes in use now (int): "
                                         "allocated to buffers from the pool, or to graphs.")
    used_mem_high = _high_mark_property(_COUNTER_USED_HIGH, "used_mem")


# The pool attributes of the counters, in _COUNTER_* order.
cdef cydriver.CUmemPool_attribute[4] _POOL_COUNTERS = [
    cydriver.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, cydriver.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
    cydriver.CU_MEMPOOL_ATTR_USED_MEM_CURRENT, cydriver.CU_MEMPOOL_ATTR_USED_MEM_HIGH]


def _bool_attribute(cydriver.CUmemPool_attribute attr, str name, str doc):
    """A read-write bool property of :class:`MemoryPoolAttributes`: the pool attribute
    ``attr``, read and written at each access; ``name`` is the property's, for messages."""
    def getter(MemoryPoolAttributes self):
        return self._get_bool(attr)

    def setter(MemoryPoolAttributes self, value):
        self._set_bool(attr, value, name)

    return property(getter, setter, doc=doc)


@cython.auto_pickle(False)
cdef class MemoryPoolAttributes(_MemoryCounters):
    """A pool's attributes, read from and written to the driver at each access. Not
    constructible: use ``mr.attributes``.

    .. note:: Reads with ``cuMemPoolGetAttribute``, writes with ``cuMemPoolSetAttribute``.
    """

    # The resource whose pool it is (open, else every access raises), and the pool.
    cdef Resource _mr
    cdef CUmemoryPool _pool

    cdef str _origin(self):
        return "DeviceMemoryResource.attributes"

    cdef object _get_bool(self, cydriver.CUmemPool_attribute attr):
        cdef int value = 0
        self._mr._check_open()
        HANDLE_RETURN(cydriver.cuMemPoolGetAttribute(self._pool, attr, &value))
        return bool(value)

    cdef int _set_bool(self, cydriver.CUmemPool_attribute attr, object value,
                       str name) except -1:
        cdef int v = 1 if check_bool(value, name) else 0
        self._mr._check_open()
        return HANDLE_RETURN(cydriver.cuMemPoolSetAttribute(self._pool, attr, &v))

    cdef object _get_u64(self, cydriver.CUmemPool_attribute attr):
        cdef cuuint64_t value = 0
        self._mr._check_open()
        HANDLE_RETURN(cydriver.cuMemPoolGetAttribute(self._pool, attr, &value))
        return value

    cdef int _set_u64(self, cydriver.CUmemPool_attribute attr, cuuint64_t value) except -1:
        self._mr._check_open()
        return HANDLE_RETURN(cydriver.cuMemPoolSetAttribute(self._pool, attr, &value))

    cdef object _counter(self, int which):
        return self._get_u64(_POOL_COUNTERS[which])

    cdef int _reset_counter(self, int which) except -1:
        return self._set_u64(_POOL_COUNTERS[which], 0)

    reuse_follow_event_dependencies = _bool_attribute(
        cydriver.CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, "reuse_follow_event_dependencies",
        "Reuse memory freed on another stream once an event dependency orders it (bool).")
    reuse_allow_opportunistic = _bool_attribute(
        cydriver.CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, "reuse_allow_opportunistic",
        "Reuse memory whose free has already completed on another stream (bool).")
    reuse_allow_internal_dependencies = _bool_attribute(
        cydriver.CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
        "reuse_allow_internal_dependencies",
        "Let the driver insert dependencies to reuse memory freed on another stream (bool).")

    @property
    def release_threshold(self):
        """Bytes of reserved memory the pool keeps at a synchronization instead of giving them
        back to the OS (int)."""
        return self._get_u64(cydriver.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)

    @release_threshold.setter
    def release_threshold(self, value):
        self._set_u64(cydriver.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                      check_size(value, "release_threshold"))

    def __repr__(self):
        try:
            return (f"<MemoryPoolAttributes used={self.used_mem_current} "
                    f"reserved={self.reserved_mem_current} "
                    f"release_threshold={self.release_threshold}>")
        except Exception:
            return "<MemoryPoolAttributes>"


cdef object new_pool_attributes(Resource mr, CUmemoryPool pool):
    """The attributes of ``pool``, the pool of the resource ``mr`` (kept alive by them; every
    access raises once it is closed)."""
    cdef MemoryPoolAttributes attrs = MemoryPoolAttributes.__new__(MemoryPoolAttributes)
    attrs._mr = mr
    attrs._pool = pool
    return attrs
