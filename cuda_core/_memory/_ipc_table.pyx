"""The memory pools imported from other processes, and the table of the pointers imported from
each (see the comment below): the C++ under the mapped memory resources and their buffers.
Nothing here is public."""

from libc.stdint cimport int32_t, intptr_t

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUdeviceptr, CUmemoryPool, CUmemPoolPtrExportData,
                                     CUresult, CUstream, CUDA_SUCCESS)

__all__ = []


# A pool imported from another process is kept once per driver handle (an ImportedPool, shared
# by the mapped resources the driver gave that handle: two imports of one pool in a process
# return the same handle), with the table of the pointers imported from it. The table exists
# because the driver maps one pool allocation once per process (nvbug 5570902): a second
# cuMemPoolImportPointer of it returns the same address, and the first cuMemFreeAsync unmaps it
# for both (for host pools the second import fails with CUDA_ERROR_ALREADY_MAPPED). So an
# allocation is imported once while it is in use; every Buffer imported from it counts a
# reference, and the last one frees it (stream-ordered) and forgets it. An import made after
# that, even while the free is still queued, is a fresh cuMemPoolImportPointer: the driver
# gives back a mapping that outlives the queued free (measured on driver 580).
#
# All of it is C++ under one std::mutex, taken only with the GIL released: no Python object is
# touched, no finalizer can run, and the lock is never waited for while the GIL is held, so
# neither deadlocks with the other. Memory failures are returned as CUDA_ERROR_OUT_OF_MEMORY.
# The driver calls go through _ipc_driver, filled in below with thin wrappers of cydriver's.
cdef extern from *:
    """
    #include <mutex>
    #include <new>
    #include <string>
    #include <unordered_map>
    #include <utility>
    #include <vector>

    #if defined(__GLIBCXX__) && _GLIBCXX_RELEASE >= 11
    // The containers' allocators call this libstdc++ function of GCC 11 (GLIBCXX_3.4.29),
    // newer than manylinux_2_28's libstdc++ (GCC 8). Defined here, hidden, it binds inside
    // this module and the wheel needs no newer libstdc++ (DESIGN.md, Wheels). It does what
    // libstdc++'s does: throw std::bad_array_new_length (CXXABI_1.3.8, GCC 4.9).
    namespace std {
    __attribute__((visibility("hidden"), noreturn)) void __throw_bad_array_new_length() {
        throw std::bad_array_new_length();
    }
    }
    #endif

    struct cuda_core_IpcDriver {
        CUresult (*pool_import)(CUmemoryPool*, int);
        CUresult (*pool_destroy)(CUmemoryPool);
        CUresult (*ptr_import)(CUdeviceptr*, CUmemoryPool, const unsigned char*);
        CUresult (*ptr_range)(CUdeviceptr, CUdeviceptr*, size_t*, int*);
        CUresult (*free_async)(CUdeviceptr, CUstream);
        CUresult (*stream_sync)(CUstream);
    };
    static cuda_core_IpcDriver cuda_core_ipc_driver;

    // One imported allocation: where it ends, the device the driver says it is on, the
    // descriptors (64-byte keys) that name it, and the Buffers using it.
    struct cuda_core_IpcMapping {
        size_t end = 0;
        int ordinal = -1;
        int refs = 0;
        std::vector<std::string> keys;
    };

    struct cuda_core_ImportedPool {
        CUmemoryPool pool = nullptr;
        int attached = 0;  // open mapped resources
        int objects = 0;   // mapped-resource objects pointing here (memory freed at 0 once dead)
        bool dead = false; // the pool is destroyed
        std::unordered_map<CUdeviceptr, cuda_core_IpcMapping> by_ptr;
        std::unordered_map<std::string, CUdeviceptr> by_key;
    };

    // Allocated once and never destroyed: finalizers may release imports while the process
    // exits, after static destructors.
    static std::mutex* cuda_core_ipc_mutex = new std::mutex();
    static std::unordered_map<CUmemoryPool, cuda_core_ImportedPool*>* cuda_core_ipc_pools =
        new std::unordered_map<CUmemoryPool, cuda_core_ImportedPool*>();

    static const size_t cuda_core_ipc_key_size = 64;

    // Forget a mapping and every key that names it.
    static void cuda_core_ipc_erase(cuda_core_ImportedPool* s, CUdeviceptr ptr) {
        auto it = s->by_ptr.find(ptr);
        if (it == s->by_ptr.end()) {
            return;
        }
        for (const std::string& key : it->second.keys) {
            auto k = s->by_key.find(key);
            if (k != s->by_key.end() && k->second == ptr) {
                s->by_key.erase(k);
            }
        }
        s->by_ptr.erase(it);
    }

    // Destroy the pool (no mapping is left); the state stays, dead, for the objects that still
    // point at it, and is deleted here if none does.
    static CUresult cuda_core_ipc_destroy(cuda_core_ImportedPool* s) {
        s->dead = true;
        auto it = cuda_core_ipc_pools->find(s->pool);
        if (it != cuda_core_ipc_pools->end() && it->second == s) {
            cuda_core_ipc_pools->erase(it);
        }
        CUresult err = cuda_core_ipc_driver.pool_destroy(s->pool);
        if (s->objects <= 0) {
            delete s;
        }
        return err;
    }

    static CUresult cuda_core_ipc_pool_import(int fd, cuda_core_ImportedPool** out) {
        try {
            std::lock_guard<std::mutex> guard(*cuda_core_ipc_mutex);
            CUmemoryPool pool = nullptr;
            CUresult err = cuda_core_ipc_driver.pool_import(&pool, fd);
            if (err != CUDA_SUCCESS) {
                return err;
            }
            cuda_core_ImportedPool* s = nullptr;
            auto it = cuda_core_ipc_pools->find(pool);
            if (it != cuda_core_ipc_pools->end()) {
                s = it->second;
            } else {
                s = new (std::nothrow) cuda_core_ImportedPool();
                try {
                    if (!s) {
                        throw std::bad_alloc();
                    }
                    s->pool = pool;
                    cuda_core_ipc_pools->emplace(pool, s);
                } catch (...) {
                    delete s;
                    cuda_core_ipc_driver.pool_destroy(pool);
                    return CUDA_ERROR_OUT_OF_MEMORY;
                }
            }
            s->attached++;
            s->objects++;
            *out = s;
            return CUDA_SUCCESS;
        } catch (...) {
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }

    static CUresult cuda_core_ipc_pool_detach(cuda_core_ImportedPool* s) {
        try {
            std::lock_guard<std::mutex> guard(*cuda_core_ipc_mutex);
            if (s->attached > 0) {
                s->attached--;
            }
            if (s->attached == 0 && s->by_ptr.empty() && !s->dead) {
                return cuda_core_ipc_destroy(s);
            }
            return CUDA_SUCCESS;
        } catch (...) {
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }

    static void cuda_core_ipc_pool_forget(cuda_core_ImportedPool* s) {
        bool free_it = false;
        try {
            std::lock_guard<std::mutex> guard(*cuda_core_ipc_mutex);
            s->objects--;
            free_it = s->objects <= 0 && s->dead;
        } catch (...) {
            return;  // leak it rather than free what another thread may be reading
        }
        if (free_it) {
            delete s;
        }
    }

    // Record a fresh mapping with one reference; false (nothing recorded) when out of memory.
    static bool cuda_core_ipc_insert(cuda_core_ImportedPool* s, const std::string& key,
                                     CUdeviceptr ptr, size_t end, int ordinal) {
        try {
            cuda_core_IpcMapping m;
            m.end = end;
            m.ordinal = ordinal;
            m.refs = 1;
            m.keys.push_back(key);
            s->by_ptr.emplace(ptr, std::move(m));
        } catch (...) {
            return false;
        }
        try {
            s->by_key.emplace(key, ptr);
        } catch (...) {
            s->by_ptr.erase(ptr);
            return false;
        }
        return true;
    }

    static CUresult cuda_core_ipc_import(cuda_core_ImportedPool* s, const unsigned char* raw,
                                         CUdeviceptr* ptr, size_t* end, int* ordinal) {
        try {
            std::string key(reinterpret_cast<const char*>(raw), cuda_core_ipc_key_size);
            std::lock_guard<std::mutex> guard(*cuda_core_ipc_mutex);
            if (s->dead) {
                return CUDA_ERROR_INVALID_HANDLE;
            }
            auto known = s->by_key.find(key);
            CUdeviceptr p = 0;
            if (known != s->by_key.end()) {
                p = known->second;
            } else {
                CUresult err = cuda_core_ipc_driver.ptr_import(&p, s->pool, raw);
                if (err != CUDA_SUCCESS) {
                    return err;
                }
                auto same = s->by_ptr.find(p);
                if (same != s->by_ptr.end()) {
                    // Another descriptor of a mapping in use (the driver takes it for the same
                    // allocation): it names that mapping too, and shares its references.
                    same->second.keys.push_back(key);
                    try {
                        s->by_key.emplace(key, p);
                    } catch (...) {
                        same->second.keys.pop_back();
                        throw;
                    }
                } else {
                    CUdeviceptr start = 0;
                    size_t size = 0;
                    int ord = -1;
                    err = cuda_core_ipc_driver.ptr_range(p, &start, &size, &ord);
                    if (start == 0 || start > p) {
                        start = p;  // not told: an imported pointer starts its allocation
                    }
                    if (err == CUDA_SUCCESS &&
                            !cuda_core_ipc_insert(s, key, p, start + size, ord)) {
                        err = CUDA_ERROR_OUT_OF_MEMORY;
                    }
                    if (err != CUDA_SUCCESS) {
                        // Unmap it again before reporting the failure.
                        cuda_core_ipc_driver.free_async(p, CU_STREAM_LEGACY);
                        cuda_core_ipc_driver.stream_sync(CU_STREAM_LEGACY);
                        return err;
                    }
                    cuda_core_IpcMapping& m = s->by_ptr.at(p);
                    *ptr = p;
                    *end = m.end;
                    *ordinal = m.ordinal;
                    return CUDA_SUCCESS;
                }
            }
            cuda_core_IpcMapping& m = s->by_ptr.at(p);
            m.refs++;
            *ptr = p;
            *end = m.end;
            *ordinal = m.ordinal;
            return CUDA_SUCCESS;
        } catch (...) {
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }

    static CUresult cuda_core_ipc_release(cuda_core_ImportedPool* s, CUdeviceptr ptr,
                                          CUstream stream, int* found) {
        *found = 0;
        try {
            std::lock_guard<std::mutex> guard(*cuda_core_ipc_mutex);
            auto it = s->dead ? s->by_ptr.end() : s->by_ptr.find(ptr);
            if (it == s->by_ptr.end()) {
                return CUDA_SUCCESS;
            }
            *found = 1;
            if (--it->second.refs > 0) {
                return CUDA_SUCCESS;
            }
            CUresult err = cuda_core_ipc_driver.free_async(ptr, stream);
            cuda_core_ipc_erase(s, ptr);
            if (s->by_ptr.empty() && s->attached == 0) {
                CUresult destroyed = cuda_core_ipc_destroy(s);
                if (err == CUDA_SUCCESS) {
                    err = destroyed;
                }
            }
            return err;
        } catch (...) {
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }

    // A stand-in driver for the CPU tests of the tables (cuda_core_ipc_use_fakes): pool handles
    // derived from the fd (two imports of one fd give one pool, as the driver does), pointers
    // from the first 8 bytes of the key (one address per allocation, whatever the other bytes:
    // the driver's behaviour), 0 there meaning a refused key; every call counted.
    static long long cuda_core_ipc_fake_counts[4];  // pool imports, pool destroys, imports, frees

    static void cuda_core_ipc_fake_count(int which) {
        __atomic_fetch_add(&cuda_core_ipc_fake_counts[which], 1, __ATOMIC_RELAXED);
    }
    static CUresult cuda_core_ipc_fake_pool_import(CUmemoryPool* pool, int fd) {
        cuda_core_ipc_fake_count(0);
        *pool = reinterpret_cast<CUmemoryPool>(static_cast<uintptr_t>(0x1000 + fd));
        return CUDA_SUCCESS;
    }
    static CUresult cuda_core_ipc_fake_pool_destroy(CUmemoryPool) {
        cuda_core_ipc_fake_count(1);
        return CUDA_SUCCESS;
    }
    static CUresult cuda_core_ipc_fake_ptr_import(CUdeviceptr* ptr, CUmemoryPool,
                                                  const unsigned char* key) {
        unsigned long long id = 0;
        for (int i = 7; i >= 0; i--) {
            id = (id << 8) | key[i];
        }
        if (id == 0) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        cuda_core_ipc_fake_count(2);
        *ptr = 0x70000000ULL + id * 0x10000ULL;
        return CUDA_SUCCESS;
    }
    static CUresult cuda_core_ipc_fake_ptr_range(CUdeviceptr ptr, CUdeviceptr* start,
                                                 size_t* size, int* ordinal) {
        *start = ptr;
        *size = 0x8000;
        *ordinal = 0;
        return CUDA_SUCCESS;
    }
    static CUresult cuda_core_ipc_fake_free_async(CUdeviceptr, CUstream) {
        cuda_core_ipc_fake_count(3);
        return CUDA_SUCCESS;
    }
    static CUresult cuda_core_ipc_fake_stream_sync(CUstream) {
        return CUDA_SUCCESS;
    }
    static void cuda_core_ipc_use_fakes() {
        cuda_core_ipc_driver.pool_import = cuda_core_ipc_fake_pool_import;
        cuda_core_ipc_driver.pool_destroy = cuda_core_ipc_fake_pool_destroy;
        cuda_core_ipc_driver.ptr_import = cuda_core_ipc_fake_ptr_import;
        cuda_core_ipc_driver.ptr_range = cuda_core_ipc_fake_ptr_range;
        cuda_core_ipc_driver.free_async = cuda_core_ipc_fake_free_async;
        cuda_core_ipc_driver.stream_sync = cuda_core_ipc_fake_stream_sync;
    }
    static long long cuda_core_ipc_fake_count_of(int which) {
        return __atomic_load_n(&cuda_core_ipc_fake_counts[which], __ATOMIC_RELAXED);
    }

    static bool cuda_core_ipc_stats(cuda_core_ImportedPool* s, long long* out) {
        try {
            std::lock_guard<std::mutex> guard(*cuda_core_ipc_mutex);
            long long refs = 0;
            for (const auto& kv : s->by_ptr) {
                refs += kv.second.refs;
            }
            out[0] = s->attached;
            out[1] = static_cast<long long>(s->by_ptr.size());
            out[2] = refs;
            out[3] = s->objects;
            out[4] = s->dead;
            return true;
        } catch (...) {
            return false;
        }
    }
    """
    ctypedef struct _IpcDriver "cuda_core_IpcDriver":
        CUresult (*pool_import)(CUmemoryPool*, int) noexcept nogil
        CUresult (*pool_destroy)(CUmemoryPool) noexcept nogil
        CUresult (*ptr_import)(CUdeviceptr*, CUmemoryPool, const unsigned char*) noexcept nogil
        CUresult (*ptr_range)(CUdeviceptr, CUdeviceptr*, size_t*, int*) noexcept nogil
        CUresult (*free_async)(CUdeviceptr, CUstream) noexcept nogil
        CUresult (*stream_sync)(CUstream) noexcept nogil
    _IpcDriver _ipc_driver "cuda_core_ipc_driver"

    ctypedef struct _PoolState "cuda_core_ImportedPool":
        CUmemoryPool pool

    CUresult _pool_import "cuda_core_ipc_pool_import"(int fd, ImportedPool** out) noexcept nogil
    CUresult _pool_detach "cuda_core_ipc_pool_detach"(ImportedPool* s) noexcept nogil
    void _pool_forget "cuda_core_ipc_pool_forget"(ImportedPool* s) noexcept nogil
    CUresult _pointer_import "cuda_core_ipc_import"(ImportedPool* s, const unsigned char* key,
                                                    CUdeviceptr* ptr, size_t* end,
                                                    int* ordinal) noexcept nogil
    CUresult _pointer_release "cuda_core_ipc_release"(ImportedPool* s, CUdeviceptr ptr,
                                                      CUstream stream, int* found) noexcept nogil
    bint _pool_stats "cuda_core_ipc_stats"(ImportedPool* s, long long* out) noexcept nogil
    void _use_fakes "cuda_core_ipc_use_fakes"() noexcept nogil
    long long _fake_count "cuda_core_ipc_fake_count_of"(int which) noexcept nogil


# The driver calls of the tables: cydriver's, with the arguments the tables do not vary fixed.

cdef CUresult _drv_pool_import(CUmemoryPool* pool, int fd) noexcept nogil:
    return cydriver.cuMemPoolImportFromShareableHandle(
        pool, <void*><intptr_t>fd, cydriver.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)


cdef CUresult _drv_pool_destroy(CUmemoryPool pool) noexcept nogil:
    # No wait for the frees still queued on the pool (the last Buffer's free is
    # stream-ordered): the driver keeps the pool's resources until they have run.
    return cydriver.cuMemPoolDestroy(pool)


cdef CUresult _drv_ptr_import(CUdeviceptr* ptr, CUmemoryPool pool,
                              const unsigned char* key) noexcept nogil:
    return cydriver.cuMemPoolImportPointer(ptr, pool, <CUmemPoolPtrExportData*>key)


cdef CUresult _drv_ptr_range(CUdeviceptr ptr, CUdeviceptr* start, size_t* size,
                             int* ordinal) noexcept nogil:
    cdef cydriver.CUpointer_attribute attrs[3]
    cdef void* data[3]
    cdef unsigned long long values[3]
    cdef CUresult err
    attrs[0] = cydriver.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR
    attrs[1] = cydriver.CU_POINTER_ATTRIBUTE_RANGE_SIZE
    attrs[2] = cydriver.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    # Zeroed 8-byte slots: the driver writes a CUdeviceptr, a size_t and an int.
    values[0] = values[1] = values[2] = 0
    data[0] = &values[0]
    data[1] = &values[1]
    data[2] = &values[2]
    cdef CUdeviceptr base = 0
    cdef size_t extent = 0
    err = cydriver.cuPointerGetAttributes(3, attrs, data, ptr)
    start[0] = <CUdeviceptr>values[0]
    size[0] = <size_t>values[1]
    ordinal[0] = <int32_t>values[2]
    if err == CUDA_SUCCESS and (values[1] == 0 or values[0] > ptr
                                or values[0] + values[1] <= ptr):
        # Seen on the H100 for pointers of a host (pinned) pool: no usable range. Ask the
        # older call; if it cannot tell either, the range is unknown and the stated size
        # cannot be checked (an unbounded range: the import's only refusal is the driver's).
        if (cydriver.cuMemGetAddressRange(&base, &extent, ptr) == CUDA_SUCCESS
                and extent != 0 and base <= ptr and base + extent > ptr):
            start[0] = base
            size[0] = extent
        else:
            start[0] = ptr
            size[0] = <size_t>(<CUdeviceptr>-1 - ptr)
    return err


cdef CUresult _drv_free_async(CUdeviceptr ptr, CUstream stream) noexcept nogil:
    return cydriver.cuMemFreeAsync(ptr, stream)


cdef CUresult _drv_stream_sync(CUstream stream) noexcept nogil:
    return cydriver.cuStreamSynchronize(stream)


_ipc_driver = _IpcDriver(pool_import=_drv_pool_import, pool_destroy=_drv_pool_destroy,
                         ptr_import=_drv_ptr_import, ptr_range=_drv_ptr_range,
                         free_async=_drv_free_async, stream_sync=_drv_stream_sync)


cdef CUresult pool_import(int fd, ImportedPool** state) noexcept nogil:
    return _pool_import(fd, state)


cdef CUmemoryPool pool_handle(ImportedPool* state) noexcept nogil:
    return (<_PoolState*>state).pool


cdef CUresult pool_detach(ImportedPool* state) noexcept nogil:
    return _pool_detach(state)


cdef void pool_forget(ImportedPool* state) noexcept nogil:
    _pool_forget(state)


cdef CUresult pointer_import(ImportedPool* state, const unsigned char* key, CUdeviceptr* ptr,
                             size_t* end, int* ordinal) noexcept nogil:
    return _pointer_import(state, key, ptr, end, ordinal)


cdef CUresult pointer_release(ImportedPool* state, CUdeviceptr ptr, CUstream stream,
                              bint* found) noexcept nogil:
    cdef int hit = 0
    cdef CUresult err = _pointer_release(state, ptr, stream, &hit)
    found[0] = hit != 0
    return err


cdef tuple pool_stats(ImportedPool* state):
    cdef long long out[5]
    cdef bint ok
    with nogil:
        ok = _pool_stats(state, out)
    if not ok:
        raise MemoryError("pool_stats(): the IPC table lock failed")
    return (out[0], out[1], out[2], out[3], bool(out[4]))


# -- test hooks: the tables over a stand-in driver (CPU tests, in a process of their own) -----

def _use_fake_driver():
    """Test hook: replace the driver calls of the tables with the stand-ins above, for the rest
    of the process. Only for a test process of its own (tests/test_ipc_cpu.py runs it in a
    subprocess): the real driver is never used again here."""
    _use_fakes()


def _fake_counts():
    """Test hook: the stand-in driver's calls so far: (pool imports, pool destroys, pointer
    imports, frees)."""
    return tuple(_fake_count(i) for i in range(4))


cdef class _TablePool:
    """Test hook: one attachment to an imported pool, driving the table functions as a mapped
    resource does (the GIL released around each)."""

    cdef ImportedPool* _state

    def __init__(self, int fd):
        cdef CUresult err
        with nogil:
            err = pool_import(fd, &self._state)
        if err != 0:
            raise RuntimeError(f"pool_import: {err}")

    def __dealloc__(self):
        if self._state != NULL:
            pool_forget(self._state)

    def same_pool(self, _TablePool other):
        return self._state == other._state

    def import_(self, bytes key):
        cdef CUdeviceptr ptr = 0
        cdef size_t end = 0
        cdef int ordinal = -1
        cdef CUresult err
        cdef const unsigned char* raw = key
        if len(key) != 64:
            raise ValueError("key must be 64 bytes")
        with nogil:
            err = pointer_import(self._state, raw, &ptr, &end, &ordinal)
        return err, ptr, end, ordinal

    def release(self, CUdeviceptr ptr):
        cdef bint found = False
        cdef CUresult err
        with nogil:
            err = pointer_release(self._state, ptr, <CUstream>0, &found)
        return err, found

    def detach(self):
        cdef CUresult err
        with nogil:
            err = pool_detach(self._state)
        return err

    def stats(self):
        return pool_stats(self._state)
