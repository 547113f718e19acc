/* The floor of the latency benchmarks: the same driver calls in a C loop, no Python.
 *
 * Built at run time by _floor.py with the system C compiler and loaded with ctypes. It needs
 * no CUDA headers: the few driver entry points are declared by hand and found with dlsym in
 * the libcuda.so.1 that cuda.bindings already loaded (the same driver state, the same
 * context current on this thread). Handles come from Python as plain addresses.
 *
 * Each floor_* function performs its operation n times and returns the nanoseconds that took
 * (CLOCK_MONOTONIC, the clock behind time.perf_counter_ns on Linux), or -(CUresult) on the
 * first failure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUevent;
typedef void *CUgraphicsResource;
typedef unsigned long long CUdeviceptr;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_READY 600

static CUresult (*p_cuDeviceGet)(CUdevice *, int);
static CUresult (*p_cuCtxSetCurrent)(CUcontext);
static CUresult (*p_cuStreamCreate)(CUstream *, unsigned int);
static CUresult (*p_cuStreamDestroy)(CUstream);
static CUresult (*p_cuStreamSynchronize)(CUstream);
static CUresult (*p_cuEventRecord)(CUevent, CUstream);
static CUresult (*p_cuEventQuery)(CUevent);
static CUresult (*p_cuGraphicsGLRegisterBuffer)(CUgraphicsResource *, unsigned int, unsigned int);
static CUresult (*p_cuGraphicsUnregisterResource)(CUgraphicsResource);
static CUresult (*p_cuGraphicsMapResources)(unsigned int, CUgraphicsResource *, CUstream);
static CUresult (*p_cuGraphicsUnmapResources)(unsigned int, CUgraphicsResource *, CUstream);
static CUresult (*p_cuGraphicsResourceGetMappedPointer)(CUdeviceptr *, size_t *,
                                                        CUgraphicsResource);

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* 0 on success; otherwise writes the reason into err. The names are the ABI symbols that
 * cuda.h maps the API names to (cuStreamDestroy is cuStreamDestroy_v2 since CUDA 4.0). */
int floor_init(char *err, int len)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(err, len, "cannot load libcuda.so.1: %s", dlerror());
        return -1;
    }
#define LOAD(var, sym)                                                        \
    do {                                                                      \
        *(void **)(&var) = dlsym(lib, sym);                                   \
        if (!var) {                                                           \
            snprintf(err, len, "libcuda.so.1 has no symbol %s", sym);         \
            return -1;                                                        \
        }                                                                     \
    } while (0)
    LOAD(p_cuDeviceGet, "cuDeviceGet");
    LOAD(p_cuCtxSetCurrent, "cuCtxSetCurrent");
    LOAD(p_cuStreamCreate, "cuStreamCreate");
    LOAD(p_cuStreamDestroy, "cuStreamDestroy_v2");
    LOAD(p_cuStreamSynchronize, "cuStreamSynchronize");
    LOAD(p_cuEventRecord, "cuEventRecord");
    LOAD(p_cuEventQuery, "cuEventQuery");
    LOAD(p_cuGraphicsGLRegisterBuffer, "cuGraphicsGLRegisterBuffer");
    LOAD(p_cuGraphicsUnregisterResource, "cuGraphicsUnregisterResource");
    LOAD(p_cuGraphicsMapResources, "cuGraphicsMapResources");
    LOAD(p_cuGraphicsUnmapResources, "cuGraphicsUnmapResources");
    LOAD(p_cuGraphicsResourceGetMappedPointer, "cuGraphicsResourceGetMappedPointer_v2");
#undef LOAD
    return 0;
}

long long floor_device_get(long long n, int ordinal)
{
    CUdevice dev;
    long long t0 = now_ns();
    for (long long i = 0; i < n; i++) {
        CUresult r = p_cuDeviceGet(&dev, ordinal);
        if (r != CUDA_SUCCESS) return -(long long)r;
    }
    return now_ns() - t0;
}

long long floor_ctx_set_current(long long n, CUcontext ctx)
{
    long long t0 = now_ns();
    for (long long i = 0; i < n; i++) {
        CUresult r = p_cuCtxSetCurrent(ctx);
        if (r != CUDA_SUCCESS) return -(long long)r;
    }
    return now_ns() - t0;
}

long long floor_stream_create_destroy(long long n, unsigned int flags)
{
    CUstream s;
    long long t0 = now_ns();
    for (long long i = 0; i < n; i++) {
        CUresult r = p_cuStreamCreate(&s, flags);
        if (r != CUDA_SUCCESS) return -(long long)r;
        r = p_cuStreamDestroy(s);
        if (r != CUDA_SUCCESS) return -(long long)r;
    }
    return now_ns() - t0;
}

long long floor_event_record_query(long long n, CUevent ev, CUstream s)
{
    long long t0 = now_ns();
    for (long long i = 0; i < n; i++) {
        CUresult r = p_cuEventRecord(ev, s);
        if (r != CUDA_SUCCESS) return -(long long)r;
        r = p_cuEventQuery(ev);
        if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY) return -(long long)r;
    }
    return now_ns() - t0;
}

long long floor_stream_sync(long long n, CUstream s)
{
    long long t0 = now_ns();
    for (long long i = 0; i < n; i++) {
        CUresult r = p_cuStreamSynchronize(s);
        if (r != CUDA_SUCCESS) return -(long long)r;
    }
    return now_ns() - t0;
}

/* OpenGL interop (benchmarks/graphics.py): the OpenGL context that owns gl_buffer is current
 * on the calling thread. */
long long floor_graphics_register(long long n, unsigned int gl_buffer)
{
    CUgraphicsResource res;
    long long t0 = now_ns();
    for (long long i = 0; i < n; i++) {
        CUresult r = p_cuGraphicsGLRegisterBuffer(&res, gl_buffer, 0);
        if (r != CUDA_SUCCESS) return -(long long)r;
        r = p_cuGraphicsUnregisterResource(res);
        if (r != CUDA_SUCCESS) return -(long long)r;
    }
    return now_ns() - t0;
}

long long floor_graphics_map_unmap(long long n, CUgraphicsResource res, CUstream s)
{
    CUdeviceptr ptr;
    size_t size;
    long long t0 = now_ns();
    for (long long i = 0; i < n; i++) {
        CUresult r = p_cuGraphicsMapResources(1, &res, s);
        if (r != CUDA_SUCCESS) return -(long long)r;
        r = p_cuGraphicsResourceGetMappedPointer(&ptr, &size, res);
        if (r != CUDA_SUCCESS) return -(long long)r;
        r = p_cuGraphicsUnmapResources(1, &res, s);
        if (r != CUDA_SUCCESS) return -(long long)r;
    }
    return now_ns() - t0;
}
