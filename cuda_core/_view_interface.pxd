from cuda_core._memoryview cimport StridedMemoryView

# The interface protocols' readers (this module and _memoryview cimport each other).
# ``obj.<attr>``, which must be a dict (ProtocolMissingError without it, TypeError otherwise).
cdef object interface_dict(object obj, str attr, str who)
# The keys both interfaces share, into ``v``; returns the value of 'stream' (None if absent).
cdef object read_interface(StridedMemoryView v, object d, object obj, str who)
# A view of ``obj``'s CUDA Array Interface, ordered after its stream on ``stream_ptr``'s.
cdef int init_cai(StridedMemoryView v, object obj, object stream_ptr) except -1
