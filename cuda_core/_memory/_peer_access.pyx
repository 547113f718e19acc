"""Peer access to a device's memory pool: who may read and write it besides its own device.

The live set (``PeerAccessibleBySetProxy``, in ``_mempool``) reads the driver's state at every
use and changes it here. Every change, a bulk one included, is one ``cuMemPoolSetAccess``:
changing access remaps every allocation of the pool, which can take long, and one call lets
the driver do it once. Grants are checked with ``Device.can_access_peer`` before the call;
revocations never are. The pool's own device always has access: it is left out wherever it is
given, and is never a member.
"""

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUmemoryPool, CUresult
from libc.stdlib cimport free, malloc

from cuda_core._driver cimport device_count
from cuda_core._errors cimport HANDLE_RETURN

from cuda_core._device import Device

__all__ = []


cdef extern from *:
    """
    static inline void cuda_core_count_call(long long* counter) {
        __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
    }
    static inline long long cuda_core_read_count(long long* counter) {
        return __atomic_load_n(counter, __ATOMIC_RELAXED);
    }
    """
    void _count_call "cuda_core_count_call"(long long* counter) noexcept nogil
    long long _read_count "cuda_core_read_count"(long long* counter) noexcept nogil

# How many cuMemPoolSetAccess calls apply_peer_access has made in this process (atomic).
cdef long long _set_access_count = 0


def _set_access_calls():
    """Test hook: the number of ``cuMemPoolSetAccess`` calls the peer-access operations have
    made in this process (each operation makes at most one)."""
    return _read_count(&_set_access_count)


cdef object peer_items(object devices):
    if isinstance(devices, Device) or (isinstance(devices, int) and not isinstance(devices, bool)):
        return (devices,)
    return devices


cdef int _peer_ordinal(object device) except -1:
    if isinstance(device, bool) or not isinstance(device, (Device, int)):
        raise TypeError(f"peer_accessible_by: expected Device or int items, not "
                        f"{type(device).__name__}")
    return Device(device).device_id


cdef set peer_set(int owner, object devices):
    if isinstance(devices, (str, bytes)) or not hasattr(type(devices), "__iter__"):
        raise TypeError(f"peer_accessible_by: expected a Device, an int or an iterable of "
                        f"them, not {type(devices).__name__}")
    cdef set out = set()
    for d in devices:
        ordinal = _peer_ordinal(d)
        if ordinal != owner:
            out.add(ordinal)
    return out


cdef int check_can_access(int owner, set ordinals) except -1:
    if owner < 0:  # a host pool: every device that supports host pools was granted access
        return 0
    for ordinal in sorted(ordinals):
        if not Device(ordinal).can_access_peer(owner):
            raise ValueError(f"peer_accessible_by: device {ordinal} cannot access the memory of "
                             f"device {owner} (no peer access between them)")
    return 0


cdef list peer_ordinals(CUmemoryPool pool, int owner):
    cdef cydriver.CUmemLocation loc
    cdef cydriver.CUmemAccess_flags flags
    cdef list out = []
    for i in range(device_count()):
        if i == owner:
            continue
        loc.type = cydriver.CU_MEM_LOCATION_TYPE_DEVICE
        loc.id = i
        flags = cydriver.CU_MEM_ACCESS_FLAGS_PROT_NONE
        HANDLE_RETURN(cydriver.cuMemPoolGetAccess(&flags, pool, &loc))
        if flags == cydriver.CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
            out.append(i)
    return out


cdef list peer_changes(int owner, int op, tuple others):
    cdef list sets = [peer_set(owner, o) for o in others]
    if op == PEER_ADD or op == PEER_SYMMETRIC or op == PEER_REPLACE:
        for s in sets:
            check_can_access(owner, s)
    return sets


cdef int peer_edit(CUmemoryPool pool, int owner, int op, list changes) except -1:
    cdef set current = set(peer_ordinals(pool, owner))
    cdef set add = set()
    cdef set remove = set()
    cdef set kept
    if op == PEER_ADD:
        for s in changes:
            add |= s
        add -= current
    elif op == PEER_REMOVE:
        for s in changes:
            remove |= s
        remove &= current
    elif op == PEER_INTERSECT:
        kept = set(current)
        for s in changes:
            kept &= s
        remove = current - kept
    elif op == PEER_SYMMETRIC:
        add = changes[0] - current
        remove = changes[0] & current
    elif op == PEER_REPLACE:
        add = changes[0] - current
        remove = current - changes[0]
    elif op == PEER_CLEAR:
        remove = current
    else:
        raise ValueError(f"peer_edit(): unknown operation {op}")
    return apply_peer_access(pool, sorted(add), sorted(remove))


cdef int apply_peer_access(CUmemoryPool pool, list add, list remove) except -1:
    cdef cydriver.CUmemAccessDesc stack[16]
    cdef cydriver.CUmemAccessDesc* desc = stack
    cdef Py_ssize_t n_add = len(add)
    cdef Py_ssize_t n = n_add + len(remove)
    cdef Py_ssize_t i = 0
    cdef CUresult err
    if n == 0:
        return 0
    if n > 16:
        desc = <cydriver.CUmemAccessDesc*>malloc(n * sizeof(cydriver.CUmemAccessDesc))
        if desc == NULL:
            raise MemoryError()
    try:
        for ordinal in add + remove:
            desc[i].location.type = cydriver.CU_MEM_LOCATION_TYPE_DEVICE
            desc[i].location.id = ordinal
            desc[i].flags = (cydriver.CU_MEM_ACCESS_FLAGS_PROT_READWRITE if i < n_add
                             else cydriver.CU_MEM_ACCESS_FLAGS_PROT_NONE)
            i += 1
        err = cydriver.cuMemPoolSetAccess(pool, desc, <size_t>n)
        _count_call(&_set_access_count)
        return HANDLE_RETURN(err)
    finally:
        if desc != stack:
            free(desc)
