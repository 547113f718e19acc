"""Memory locations: a Device or a :class:`Host`, as the driver's ``CUmemLocation``.

Managed-memory operations (prefetch, preferred location, accessed-by) take a location, and so
will copy hints later. A device is a :class:`Device` or its ordinal; the host is ``Host()``
(any host memory), ``Host(numa_id=n)`` (one NUMA node) or ``Host.numa_current()`` (the node
of the calling thread).
"""

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUmemLocation

from cuda_core._checks cimport check_bool, check_int
from cuda_core._checks import ArgumentTypeError

from cuda_core._device import Device

__all__ = ["Host"]

cdef dict _HOSTS = {}


def _rebuild_host(numa_id, is_numa_current):
    return Host(numa_id, is_numa_current=is_numa_current)


class Host:
    """The host as a memory location; interned: equal arguments give the same object.

    Parameters
    ----------
    numa_id : int, optional
        A host NUMA node; None (the default) means host memory in general.
    is_numa_current : bool, keyword-only
        The NUMA node of the calling thread (see :meth:`numa_current`); excludes ``numa_id``.
    """

    __slots__ = ("_numa_id", "_is_numa_current", "__weakref__")

    def __new__(cls, numa_id=None, *, is_numa_current=False):
        # None is False, as cuda.core reads the flag; one key per location (Host() is Host()).
        is_numa_current = bool(check_bool(is_numa_current, "Host: is_numa_current", True))
        if type(numa_id) is bool:  # cuda.core's refusal (ValueError), not an int here
            raise ValueError(f"Host: numa_id must be a non-negative int, got {numa_id}")
        if numa_id is not None and not hasattr(type(numa_id), "__index__"):
            raise ArgumentTypeError(f"Host: numa_id must be an int or None, not "
                                    f"{type(numa_id).__name__}")  # cuda.core: ValueError
        numa_id = check_int(numa_id, "Host: numa_id", 0, None, True)
        if numa_id is not None and is_numa_current:
            raise ValueError("Host: give numa_id or is_numa_current=True, not both")
        key = (numa_id, is_numa_current)
        host = _HOSTS.get(key)
        if host is None:
            host = object.__new__(cls)
            host._numa_id = numa_id
            host._is_numa_current = is_numa_current
            host = _HOSTS.setdefault(key, host)
        return host

    @classmethod
    def numa_current(cls):
        """The NUMA node of the calling thread, as a location."""
        return cls(is_numa_current=True)

    @property
    def numa_id(self):
        """The NUMA node, or None."""
        return self._numa_id

    @property
    def is_numa_current(self):
        """True for :meth:`numa_current`."""
        return self._is_numa_current

    def __eq__(self, other):
        if not isinstance(other, Host):
            return NotImplemented
        return (self._numa_id, self._is_numa_current) == (other._numa_id,
                                                           other._is_numa_current)

    def __hash__(self):
        return hash((Host, self._numa_id, self._is_numa_current))

    def __reduce__(self):
        return (_rebuild_host, (self._numa_id, self._is_numa_current))

    def __repr__(self):
        if self._is_numa_current:
            return "Host.numa_current()"
        if self._numa_id is None:
            return "Host()"
        return f"Host(numa_id={self._numa_id})"


cdef int as_location(object loc, CUmemLocation* out, str what, bint ordinal=True) except -1:
    """Fill ``out`` from a Device, a device ordinal (where ``ordinal``) or a Host. A wrong type
    raises ``ArgumentTypeError``: cuda.core raises ``ValueError`` for a missing location."""
    if isinstance(loc, Host):
        if loc._is_numa_current:
            out.type = cydriver.CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT
            out.id = 0
        elif loc._numa_id is None:
            out.type = cydriver.CU_MEM_LOCATION_TYPE_HOST
            out.id = 0
        else:
            out.type = cydriver.CU_MEM_LOCATION_TYPE_HOST_NUMA
            out.id = loc._numa_id
        return 0
    if not isinstance(loc, Device) and (not ordinal or isinstance(loc, bool)
                                        or not isinstance(loc, int)):
        expected = ("a Device, a device ordinal (int) or a Host" if ordinal
                    else "a Device or a Host")
        raise ArgumentTypeError(f"{what}: location must be {expected}, not "
                                f"{type(loc).__name__}")
    out.type = cydriver.CU_MEM_LOCATION_TYPE_DEVICE
    out.id = Device(loc).device_id
    return 0


cdef object location_object(int loc_type, int loc_id):
    """The Device or Host for a driver location; None for no location."""
    if loc_type == cydriver.CU_MEM_LOCATION_TYPE_DEVICE:
        return Device(loc_id)
    if loc_type == cydriver.CU_MEM_LOCATION_TYPE_HOST:
        return Host()
    if loc_type == cydriver.CU_MEM_LOCATION_TYPE_HOST_NUMA:
        return Host(loc_id)
    if loc_type == cydriver.CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        return Host.numa_current()
    return None
