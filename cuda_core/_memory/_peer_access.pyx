"""Peer access to a device's memory pool: who may read and write it besides its own device.

The live set (``PeerAccessibleBySetProxy``, below) reads the driver's state at every
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
from cuda_core._live_set import _LiveSet

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


def _in_place(bulk):
    """An in-place set operator (``|=`` ...) made of the bulk method ``bulk``."""
    def operator(self, other):
        bulk(self, other)
        return self

    return operator


class PeerAccessibleBySetProxy(_LiveSet):
    """The devices other than its own that can access a pool's memory: a live, mutable set of
    :class:`~cuda_core.Device`. Not constructible directly: use ``mr.peer_accessible_by``.

    Every read asks the driver (``cuMemPoolGetAccess``); there is no copy to go stale. Items
    are given as Devices or ordinals; the pool's own device is ignored (it always has access,
    and is never a member). Each change is one ``cuMemPoolSetAccess``: the bulk operations
    (``update``, ``difference_update``, ``intersection_update``, ``symmetric_difference_update``,
    ``clear``, ``|=``, ``-=``, ``&=``, ``^=``) compute what to grant and what to revoke and
    make one call (none when nothing changes). Granting is refused (ValueError) for a device
    that cannot access the pool's device (``Device.can_access_peer``); revoking never is. The
    set operators that make a new set (``|``, ``&``, ``-``, ``^``) return a plain ``set``.
    """

    __slots__ = ()
    _origin = "DeviceMemoryResource.peer_accessible_by"

    def _items(self):
        return [Device(i) for i in self._owner._peer_ordinals_with_access()]

    def __contains__(self, device):
        if isinstance(device, bool) or not isinstance(device, (Device, int)):
            return False
        try:
            ordinal = Device(device).device_id
        except ValueError:  # no such device: not a member
            return False
        return ordinal in self._owner._peer_ordinals_with_access()

    def add(self, device):
        """Let ``device`` (a Device or ordinal) read and write the pool's memory."""
        mr = self._owner
        add = peer_set(mr.device_id, (device,))
        check_can_access(mr.device_id, add)
        mr._apply_peer_access(sorted(add), [])

    def discard(self, device):
        """Take away ``device``'s access to the pool's memory (the pool's own device is
        ignored)."""
        mr = self._owner
        mr._apply_peer_access([], sorted(peer_set(mr.device_id, (device,))))

    def update(self, *others):
        """Grant access to every device of ``others``, in one driver call."""
        self._owner._peer_edit(PEER_ADD, others)

    def difference_update(self, *others):
        """Revoke the access of every device of ``others``, in one driver call."""
        self._owner._peer_edit(PEER_REMOVE, others)

    def intersection_update(self, *others):
        """Keep access only for the devices in every one of ``others``, in one driver call."""
        self._owner._peer_edit(PEER_INTERSECT, others)

    def symmetric_difference_update(self, other):
        """Grant access to the devices of ``other`` that lack it and revoke it from those that
        have it, in one driver call."""
        self._owner._peer_edit(PEER_SYMMETRIC, (other,))

    def clear(self):
        """Revoke every peer's access, in one driver call."""
        self._owner._peer_edit(PEER_CLEAR, ())

    # |=, -=, &=, ^=: the bulk operations, one driver call each (MutableSet makes one per item).
    __ior__ = _in_place(update)
    __isub__ = _in_place(difference_update)
    __iand__ = _in_place(intersection_update)
    __ixor__ = _in_place(symmetric_difference_update)
