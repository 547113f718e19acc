from cuda.bindings.cydriver cimport CUmemoryPool


# The bulk operations of peer_changes/peer_edit.
cdef enum:
    PEER_ADD = 0         # update, |=
    PEER_REMOVE = 1      # difference_update, -=
    PEER_INTERSECT = 2   # intersection_update, &=
    PEER_SYMMETRIC = 3   # symmetric_difference_update, ^=
    PEER_REPLACE = 4     # mr.peer_accessible_by = devices
    PEER_CLEAR = 5       # clear

# The setter's argument as an iterable: one Device or ordinal, or an iterable of them.
cdef object peer_items(object devices)
# The ordinals of ``devices`` (an iterable of Devices or ordinals), ``owner`` left out.
cdef set peer_set(int owner, object devices)
# Refuse (ValueError) to grant access to a device that cannot access ``owner``'s memory.
cdef int check_can_access(int owner, set ordinals) except -1
# The ordinals of the devices other than ``owner`` with read-write access to ``pool``.
cdef list peer_ordinals(CUmemoryPool pool, int owner)
# The checked arguments of a bulk operation ``op``: one set of ordinals per iterable of
# ``others``, the devices it may grant access to checked with Device.can_access_peer.
cdef list peer_changes(int owner, int op, tuple others)
# Read the pool's peers, work out what ``op`` with ``changes`` (from peer_changes) grants and
# revokes, and apply that in one call (none when nothing changes).
cdef int peer_edit(CUmemoryPool pool, int owner, int op, list changes) except -1
# Read-write access for the ordinals ``add``, none for ``remove``, in one cuMemPoolSetAccess;
# nothing when both are empty.
cdef int apply_peer_access(CUmemoryPool pool, list add, list remove) except -1
