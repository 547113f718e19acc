from cuda_core._atomic cimport exchange_int, load_int


cdef class Resource:
    # Set once, by close() or the finalizer, before the handle is released: a failed release
    # is never retried (a leak is preferred to a double free). Set by an atomic exchange
    # (_closing), so that of several threads closing one object at once exactly one releases.
    cdef bint _closed
    # Non-owning: the object holds nothing that close() could give back (a device's primary
    # context, a memory resource that owns no pool), so close() is a no-op and the object never
    # reads as closed. Set once, when the object is made. A subclass that does own something
    # under such a base releases it through _close() (an owned memory pool).
    cdef bint _non_owning
    cdef object __weakref__

    # Give the handle back. Called at most once, with _closed already set. It may read every
    # field (the finalizer runs before any reference cycle is cleared) and raises on failure,
    # with an error that names the failed call.
    cdef int _release(self) except -1
    # The handle's address, for the cleanup warning; 0 when there is none.
    cdef size_t _address(self) noexcept
    # True when the CUDA context the handle was made in is gone (see _context.context_gone):
    # the driver destroyed the handle with it, so it is not released (a release would pass a
    # dangling handle to the driver). False by default: a handle that no context owns.
    cdef bint _orphaned(self) noexcept

    # Mark the object closed; True for the one caller that did (it releases the handle), False
    # for every other, also one racing on another thread (free-threaded CPython). The load
    # first keeps a close() of a closed object a read; the exchange decides a race.
    cdef inline bint _closing(self) noexcept:
        return not load_int(<int*>&self._closed) and not exchange_int(<int*>&self._closed, 1)

    # close() without a Python call: what the subclasses' close() methods end with.
    cdef inline int _close(self) except -1:
        if not self._closing():
            return 0
        return self._close_claimed()

    # The rest of _close, for a close() that has won _closing() itself (to do more around it).
    cdef inline int _close_claimed(self) except -1:
        if self._orphaned():
            return warn_orphaned(self, False)
        return self._release()

    # The liveness check, the one every class uses: RuntimeError("this X is closed"). A check
    # that asks more (a stream's context, a view's graph) has a name of its own and calls this
    # first.
    cdef inline int _check_open(self) except -1:
        if self._closed:
            return raise_closed(self)
        return 0


# A Resource equal to another of its own class that holds the same handle (_address), and
# hashed by the class and the handle (Context, Event).
cdef class HandleKeyedResource(Resource):
    pass


cdef int raise_closed(Resource obj) except -1
cdef void warn_release_failed(str what, size_t address, object error) noexcept
# The CUDAWarning for a handle not released because its context is gone (_orphaned): raised
# as any warning from close(), through sys.unraisablehook from a finalizer; nothing at exit.
cdef int warn_orphaned(Resource obj, bint finalizer) except -1
