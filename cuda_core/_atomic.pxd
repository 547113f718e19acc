# Atomic loads and stores for the few process-wide C variables that are read without a lock:
# each is written once (or only grows) under a lock and read on hot paths. A plain load racing
# with that write is a data race under free-threaded CPython; these make it well-defined
# (acquire/release: whoever sees the new value also sees what was written before it).
cdef extern from *:
    """
    static inline int cuda_core_load_int(const int* p) {
        return __atomic_load_n(p, __ATOMIC_ACQUIRE);
    }
    static inline void cuda_core_store_int(int* p, int v) {
        __atomic_store_n(p, v, __ATOMIC_RELEASE);
    }
    static inline void* cuda_core_load_ptr(void* const* p) {
        return __atomic_load_n(p, __ATOMIC_ACQUIRE);
    }
    static inline void cuda_core_store_ptr(void** p, void* v) {
        __atomic_store_n(p, v, __ATOMIC_RELEASE);
    }
    """
    int load_int "cuda_core_load_int"(const int* p) noexcept nogil
    void store_int "cuda_core_store_int"(int* p, int v) noexcept nogil
    void* load_ptr "cuda_core_load_ptr"(void* const* p) noexcept nogil
    void store_ptr "cuda_core_store_ptr"(void** p, void* v) noexcept nogil
