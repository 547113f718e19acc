from cuda_core._memory._dlpack_abi cimport DLManagedTensorVersioned, DLTensor
from cuda_core._memoryview cimport StridedMemoryView
from cuda_core._strided_layout cimport _StridedLayout

# The work behind StridedMemoryView's methods that do not read another library's array (this
# module and _memoryview cimport each other): `from_buffer`, `_layout`, `view()`, `__dlpack__`,
# the two functions of the C exchange table (a _view_exchange.fill_tensor_fn and
# wrap_tensor_fn) and `copy_from`/`copy_to`.
cdef StridedMemoryView of_buffer(type cls, object buffer, object shape, object strides,
                                 object itemsize, object dtype, object is_readonly)
cdef _StridedLayout layout_of(StridedMemoryView v)
cdef StridedMemoryView derive(StridedMemoryView v, object layout, object dtype)
cdef object export_capsule(StridedMemoryView v, object stream, object max_version,
                           object dl_device, object copy)
cdef int fill_exchange(object obj, DLTensor* t, bint* readonly) except -1
cdef object wrap_exchange(DLManagedTensorVersioned* tensor)
cdef int copy_elements(StridedMemoryView dst, StridedMemoryView src, object stream,
                       object allocator, object blocking, str who) except -1
