# The monotonic clock in nanoseconds (clock_gettime(CLOCK_MONOTONIC), what time.perf_counter reads
# on Linux), for the timed loops (cuda_core.utils.benchmark's and the benchmark floors) and the
# bounded wait for host calls at exit (graph._host_callback).
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec


cdef inline long long now_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <long long>ts.tv_sec * 1000000000 + ts.tv_nsec
