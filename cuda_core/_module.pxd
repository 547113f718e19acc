from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUcontext, CUfunction, CUkernel, CUlibrary

from cuda_core._context cimport Context, primary_ordinal


cdef class ObjectCode:
    # The image (bytes) or, when ``_is_path``, the absolute path of a file holding it.
    cdef object _code
    cdef str _code_type
    cdef str _name
    cdef dict _sym_map
    cdef bint _is_path
    # NULL until the first get_kernel()/handle/get_module(); unloaded in __dealloc__.
    cdef CUlibrary _library
    cdef object __weakref__

    cdef int _ensure_loaded(self) except -1


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
    # Keeps the library loaded while the kernel lives (None for Kernel.from_handle without mod).
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
    if kernel._num_params < 0:
        kernel._load_param_info()
    offsets[0] = kernel._param_offsets
    sizes[0] = kernel._param_sizes
    return kernel._num_params


cdef inline CUfunction kernel_function(Kernel kernel, Context ctx) except? NULL:
    """The handle a launch in ``ctx`` passes to the driver: the kernel's CUfunction kept for a
    primary context (a compare and a load), else ``kernel._launch_function(ctx)``, which looks
    it up and keeps it, or gives the CUkernel for a context that is not primary. ``ctx`` None
    (the unbound default streams, which the driver resolves against the calling thread's
    current context): the CUfunction kept for the current context when it is a primary one,
    for one ``cuCtxGetCurrent`` and a few compares."""
    cdef CUcontext current = NULL
    cdef int ordinal
    if ctx is None:
        if cydriver.cuCtxGetCurrent(&current) == cydriver.CUDA_SUCCESS and current != NULL:
            ordinal = primary_ordinal(current)
            if (0 <= ordinal < kernel._num_functions
                    and kernel._functions[ordinal] != NULL):
                return kernel._functions[ordinal]
        return kernel._current_function(current)
    if (ctx._is_primary and ctx._device_id < kernel._num_functions
            and kernel._functions[ctx._device_id] != NULL):
        return kernel._functions[ctx._device_id]
    return kernel._launch_function(ctx)


cdef Kernel make_kernel(CUkernel handle, ObjectCode owner)
cdef ObjectCode make_object_code(object code, str code_type, str name, dict sym_map,
                                 bint is_path)
