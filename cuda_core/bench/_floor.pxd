cdef extern from "<time.h>" nogil:
    ctypedef struct timespec:
        long tv_sec
        long tv_nsec
    int clock_gettime(int clk, timespec* ts)
    enum: CLOCK_MONOTONIC


# The monotonic clock in ns, and each argument's bytes packed as kernelParams (16-byte aligned
# each, one block; the caller frees both, also on failure): shared with cuda_core._bench_floor.
cdef long long now_ns() noexcept nogil
cdef int pack(list arguments, void*** params, char** storage) except -1
