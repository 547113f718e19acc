from cuda.bindings.cydriver cimport CUdeviceptr

# What a view asks of the driver: the device of a data pointer, and the stream ordering between
# a view's producer and its consumer (the consumer's ``stream_ptr`` argument, and the event that
# makes the consumer's stream wait for the producer's).

cdef int pointer_device(CUdeviceptr ptr, str who) except -2
cdef int order_streams(size_t producer, size_t consumer, int device_id) except -1
cdef object stream_int_slow(object stream_ptr, str who, long long* value)


cdef extern from "Python.h":
    # Of an exact int it cannot fail (there is nothing to convert): no test for an exception.
    long long _exact_int_as_ll "PyLong_AsLongLongAndOverflow"(object o, int* overflow) noexcept


cdef inline object stream_int(object stream_ptr, str who, long long* value):
    """``stream_ptr`` as a Python int: -1 or a handle in [0, 2**64). None is ambiguous and
    refused, and so is any other value: a stream handle is made of it. ``value`` receives it
    as a C integer, or -2 for a handle past 2**63 (which no long long holds). Inline for an
    int in [-1, 2**63), the common case; ``stream_int_slow`` does the rest."""
    cdef int overflow = 0
    cdef long long sval
    if type(stream_ptr) is int:
        sval = _exact_int_as_ll(stream_ptr, &overflow)
        if overflow == 0 and sval >= -1:
            value[0] = sval
            return stream_ptr
    return stream_int_slow(stream_ptr, who, value)
