from cuda.bindings.cydriver cimport CUfunction

# Atomic loads and stores for the C state read without a lock: the process-wide variables
# (the driver's ready flag, the primary-context table), each written once (or only grown) under
# a lock, and the fields filled lazily on first use (a Kernel's functions and layout, a
# DeviceProperties' attributes, a Buffer's pointer attributes, an ObjectCode's library). A
# plain load racing with such a write is a data race under free-threaded CPython; these make it
# well-defined (acquire/release: whoever sees the new value also sees what was written before
# it), also on weakly ordered CPUs. On x86 both are plain moves.
cdef extern from *:
    """
    template <typename T> static inline T cuda_core_load_acquire(T* p) {
        return __atomic_load_n(p, __ATOMIC_ACQUIRE);
    }
    template <typename T, typename V> static inline void cuda_core_store_release(T* p, V value) {
        __atomic_store_n(p, static_cast<T>(value), __ATOMIC_RELEASE);
    }
    template <typename T, typename V> static inline T cuda_core_exchange(T* p, V value) {
        return __atomic_exchange_n(p, static_cast<T>(value), __ATOMIC_ACQ_REL);
    }
    """
    int load_int "cuda_core_load_acquire"(int* p) noexcept nogil
    void store_int "cuda_core_store_release"(int* p, int v) noexcept nogil
    # The old value, with ``v`` stored in its place, in one step: a test-and-set that exactly
    # one of several racing threads wins (Resource._close).
    int exchange_int "cuda_core_exchange"(int* p, int v) noexcept nogil
    unsigned char load_byte "cuda_core_load_acquire"(unsigned char* p) noexcept nogil
    void store_byte "cuda_core_store_release"(unsigned char* p, unsigned char v) noexcept nogil
    void* load_ptr "cuda_core_load_acquire"(void** p) noexcept nogil
    void store_ptr "cuda_core_store_release"(void** p, void* v) noexcept nogil
    Py_ssize_t load_count "cuda_core_load_acquire"(Py_ssize_t* p) noexcept nogil
    void store_count "cuda_core_store_release"(Py_ssize_t* p, Py_ssize_t value) noexcept nogil
    CUfunction* load_functions "cuda_core_load_acquire"(CUfunction** p) noexcept nogil
    void store_functions "cuda_core_store_release"(CUfunction** p,
                                                   CUfunction* value) noexcept nogil
    CUfunction load_function "cuda_core_load_acquire"(CUfunction* p) noexcept nogil
    void store_function "cuda_core_store_release"(CUfunction* p, CUfunction value) noexcept nogil
