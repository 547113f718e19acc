from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUcontext, CUfunction, CUkernel

from cuda_core._atomic cimport load_count, load_function, load_functions
from cuda_core._context cimport Context, primary_ordinal
from cuda_core._object_code cimport ObjectCode


# Kernels with at most this many parameters keep their layout inline, without a heap block.
cdef enum:
    KERNEL_INLINE_PARAMS = 16


cdef class Kernel:
    # The fields a launch reads come first, so that they share the object's first cache lines.
    cdef CUkernel _handle
    # The kernel's CUfunction in each device's primary context, by device ordinal (NULL until
    # the first launch there): a launch passes it instead of the CUkernel, which spares the
    # driver its per-launch lookup of the kernel in the stream's context. One heap block of
    # _num_functions entries, made on the first launch in a primary context.
    cdef CUfunction* _functions
    cdef int _num_functions
    # Parameter layout from cuKernelGetParamInfo, read once: -1 until then. The arrays point at
    # the inline storage or at one heap block (freed in __dealloc__).
    cdef Py_ssize_t _num_params
    cdef size_t* _param_sizes
    # The declared parameter types, where the kernel's mangled name tells them and they match
    # the driver's parameter count: a table of _num_params masks (what each parameter accepts)
    # then the type names (_param_types.pxd), pointing into _param_table. NULL when not known
    # (extern "C"): a launch then checks sizes only.
    cdef const unsigned char* _param_accepts
    cdef size_t* _param_offsets
    cdef size_t _inline_sizes[KERNEL_INLINE_PARAMS]
    cdef size_t _inline_offsets[KERNEL_INLINE_PARAMS]
    # Keeps the library loaded while the kernel lives (None for Kernel.from_handle without mod);
    # counted in its _num_kernels while this kernel lives.
    cdef ObjectCode _owner
    cdef bytes _param_table
    cdef object __weakref__

    cdef int _load_param_info(self) except -1
    cdef CUfunction _launch_function(self, Context ctx) except? NULL
    cdef CUfunction _current_function(self, CUcontext current) except? NULL


cdef inline Py_ssize_t kernel_param_layout(Kernel kernel, const size_t** offsets,
                                           const size_t** sizes) except -1:
    """The kernel's parameter count, with ``offsets[0]``/``sizes[0]`` set to its per-parameter
    byte offsets and sizes. After the first call this is a compare and two loads: no Python
    and no driver call, so a launcher can check every launch against it."""
    cdef Py_ssize_t n = load_count(&kernel._num_params)
    if n < 0:
        kernel._load_param_info()
        n = kernel._num_params
    offsets[0] = kernel._param_offsets
    sizes[0] = kernel._param_sizes
    return n


cdef inline CUfunction kernel_function(Kernel kernel, Context ctx) except? NULL:
    """The handle a launch in ``ctx`` passes to the driver: the kernel's CUfunction kept for a
    primary context (a compare and a load), else ``kernel._launch_function(ctx)``, which looks
    it up and keeps it, or gives the CUkernel for a context that is not primary. ``ctx`` None
    (the unbound default streams, which the driver resolves against the calling thread's
    current context): the CUfunction kept for the current context when it is a primary one,
    for one ``cuCtxGetCurrent`` and a few compares."""
    cdef CUcontext current = NULL
    cdef CUfunction* functions = load_functions(&kernel._functions)
    cdef CUfunction func = NULL
    cdef int ordinal
    if ctx is None:
        if cydriver.cuCtxGetCurrent(&current) == cydriver.CUDA_SUCCESS and current != NULL:
            ordinal = primary_ordinal(current)
            if functions != NULL and 0 <= ordinal < kernel._num_functions:
                func = load_function(&functions[ordinal])
                if func != NULL:
                    return func
        return kernel._current_function(current)
    if ctx._is_primary and functions != NULL and ctx._device_id < kernel._num_functions:
        func = load_function(&functions[ctx._device_id])
        if func != NULL:
            return func
    return kernel._launch_function(ctx)


# A new Kernel for ``handle``; counts itself in ``owner`` (if not None), whose caller holds
# _object_code's load lock (see kernel_of).
cdef Kernel make_kernel(CUkernel handle, ObjectCode owner)
