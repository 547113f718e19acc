from cuda.bindings.cydriver cimport CUkernel, CUlibrary

from cuda_core._resource cimport Resource


cdef class ObjectCode(Resource):
    # ``code`` is the image itself unless ``_is_path``.
    cdef readonly object code
    """The image as bytes, or, for an ObjectCode made from a file, the file's absolute
    path (str)."""
    cdef readonly str code_type
    """The format: ``"cubin"``, ``"ptx"``, ``"ltoir"``, ``"fatbin"``, ``"object"`` or
    ``"library"``."""
    cdef readonly str name
    """The name given at creation (the program name for compiler output)."""
    cdef dict _sym_map
    cdef bint _is_path
    # NULL until the first get_kernel()/handle/get_module(); unloaded at close() or when the
    # object is collected, unless it was handed out.
    cdef CUlibrary _library
    # Set once ``handle`` or ``get_module()`` gave the library to Python code: from then on its
    # unload belongs to whoever took it (cuda.core never unloads a library, and clients written
    # for it, numba-cuda among them, unload the handle themselves), so this object never does.
    cdef bint _handed_out
    # The Kernels of this code alive now (make_kernel counts one, its __dealloc__ uncounts it):
    # close() refuses while one is, since unloading the library would leave it dangling.
    # Updated atomically (count_kernel); counted up only under the module's load lock.
    cdef Py_ssize_t _num_kernels

    cdef int _ensure_loaded(self) except -1


cdef ObjectCode make_object_code(object code, str code_type, str name, dict sym_map,
                                 bint is_path)
# A Kernel of ``owner``'s loaded library (raises if ``owner`` is closed; a closed ObjectCode
# makes no more kernels).
cdef object kernel_of(ObjectCode owner, CUkernel handle)
cdef void count_kernel(ObjectCode owner, Py_ssize_t delta) noexcept nogil
