"""The MemoryResource base class: what allocates and frees :class:`~cuda_core.Buffer`\\ s.

A resource is a :class:`~cuda_core._resource.Resource`: its ``_release`` gives back whatever it
owns (an owned pool). The built-in resources free through the C method ``_deallocate_c``,
which :class:`Buffer` calls without a Python call (``_c_dealloc``, see ``_memory_resource.pxd``);
a Python subclass is called through its own ``deallocate``. Also here: the base of the
resources whose memory is one device's only, and the checked ``deallocate`` of the built-in
ones.
"""

from cuda.bindings.cydriver cimport CUdeviceptr

from cuda_core._checks cimport check_address, check_size
from cuda_core._resource cimport Resource
from cuda_core._stream cimport Stream, optional_stream

__all__ = ["MemoryResource"]


_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement


def new_subclass_instance(cls):
    """An instance of ``cls``, a Python subclass of a memory resource, made without
    ``__init__`` (pickle then restores its ``__dict__``): what ``__reduce__`` gives."""
    if not (isinstance(cls, type) and issubclass(cls, MemoryResource)
            and cls.__flags__ & _HEAPTYPE):
        raise TypeError(f"{cls!r} is not a Python subclass of MemoryResource")
    return cls.__new__(cls)


class _NotImplementedByResource(NotImplementedError, TypeError):
    """A member a MemoryResource subclass did not implement: a TypeError, as cuda.core raises,
    and the NotImplementedError it is."""


cdef class MemoryResource(Resource):
    """Abstract base class of memory resources: what allocates and frees :class:`Buffer`\\ s.

    Subclass it in Python to plug in any allocator. A subclass implements :meth:`allocate`,
    which returns ``Buffer.from_handle(ptr, size, mr=self, stream=stream)``, and
    :meth:`deallocate`, which frees a pointer it handed out, and the properties
    :attr:`is_device_accessible`, :attr:`is_host_accessible` and :attr:`device_id`
    (:attr:`is_managed` defaults to False). The buffer calls ``deallocate`` exactly once, on
    ``close()`` or when it is garbage-collected; an exception raised there during garbage
    collection becomes a :class:`CUDAWarning`.

    A resource that owns a handle (an owned memory pool) gives it back on :meth:`close` or
    when it is garbage-collected; for the others :meth:`close` does nothing.

    The base class itself can be instantiated, as in cuda.core, but implements none of them:
    each raises a ``TypeError`` that is also a ``NotImplementedError``.
    """

    def __cinit__(self, *args, **kwargs):
        # A resource owns nothing unless it says so (an owned pool closes through _close()):
        # close() on this base class and the synchronous resources does nothing.
        self._non_owning = True

    def allocate(self, size, *, stream=None):
        """Allocate ``size`` bytes and return them as a :class:`Buffer` owned by this resource.

        Parameters
        ----------
        size : int
            Number of bytes.
        stream : Stream, optional
            The stream that orders the allocation (and, by default, the eventual free).

        Returns
        -------
        Buffer
        """
        raise _NotImplementedByResource(f"{type(self).__name__} must implement "
                                        f"allocate(size, *, stream=None)")

    def deallocate(self, ptr, size, *, stream=None):
        """Free memory this resource allocated.

        Parameters
        ----------
        ptr : int
            The address ``allocate`` returned.
        size : int
            The size it was allocated with.
        stream : Stream or None
            The stream that orders the free; None when none is known.
        """
        raise _NotImplementedByResource(f"{type(self).__name__} must implement "
                                        f"deallocate(ptr, size, *, stream=None)")

    @property
    def is_device_accessible(self):
        """True if the GPU can access the memory this resource allocates."""
        raise _NotImplementedByResource(f"{type(self).__name__} must implement the "
                                        f"is_device_accessible property")

    @property
    def is_host_accessible(self):
        """True if the CPU can access the memory this resource allocates."""
        raise _NotImplementedByResource(f"{type(self).__name__} must implement the "
                                        f"is_host_accessible property")

    @property
    def is_managed(self):
        """True if the memory is managed (unified) memory. False unless overridden."""
        return False

    @property
    def device_id(self):
        """The ordinal of the device the memory belongs to; -1 for host memory."""
        raise _NotImplementedByResource(f"{type(self).__name__} must implement the "
                                        f"device_id property")

    def __reduce__(self):
        # As cuda.core: a Python subclass of this class copies and pickles as its __dict__
        # (made again without __init__); a subclass of a built-in resource that holds a
        # handle does not (TypeError), unless that resource says otherwise.
        cls = type(self)
        built_in = next(k for k in cls.__mro__ if not k.__flags__ & _HEAPTYPE)
        if built_in is not MemoryResource:
            raise TypeError(f"cannot pickle {cls.__name__!r} object")
        return (new_subclass_instance, (cls,), getattr(self, "__dict__", None) or None)

    def __setstate__(self, state):
        """Restore a Python subclass's ``__dict__`` (what :meth:`__reduce__` gave)."""
        if state:
            self.__dict__.update(state)

    cdef int _deallocate_c(self, CUdeviceptr ptr, size_t size, Stream stream) except -1:
        self.deallocate(ptr, size, stream=stream)
        return 0


cdef class _DeviceOnlyMemoryResource(MemoryResource):
    """Base of the built-in resources whose memory is one device's and only the device's (not
    public): the synchronous ``cuMemAlloc`` resource and GraphMemoryResource."""

    @property
    def device_id(self):
        """The device whose memory the resource allocates."""
        return self._dev_id

    @property
    def is_device_accessible(self):
        """True: the memory is the device's."""
        return True

    @property
    def is_host_accessible(self):
        """False: the memory is the device's only."""
        return False


cdef int deallocate_checked(MemoryResource mr, object ptr, object size, object stream,
                            str what) except -1:
    """A built-in resource's ``deallocate(ptr, size, *, stream=None)``: the arguments checked,
    then its C free."""
    cdef Stream s = optional_stream(stream, what)
    cdef CUdeviceptr p = check_address(ptr, f"{what}: ptr")
    cdef size_t n = check_size(size, f"{what}: size")
    return mr._deallocate_c(p, n, s)
