from cuda.bindings.cydriver cimport CUdeviceptr

# What a view asks of the driver: the device of a data pointer, and the stream ordering between
# a view's producer and its consumer (the consumer's ``stream_ptr`` argument, and the event that
# makes the consumer's stream wait for the producer's).

cdef object stream_int(object stream_ptr, str who, long long* value)
cdef int pointer_device(CUdeviceptr ptr, str who) except -2
cdef int order_streams(size_t producer, size_t consumer, int device_id) except -1
