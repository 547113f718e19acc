from cuda_core._memory._dlpack_abi cimport DLManagedTensorVersioned, DLTensor

# What the view's module supplies (this module does not cimport the view): a view's tensor,
# borrowed (shape and strides are the view's own arrays), and its read-only flag, or a
# TypeError for an object that is not a view; and a new view that takes over a tensor, whose
# deleter runs even when the view cannot be made.
ctypedef int (*fill_tensor_fn)(object view, DLTensor* out, bint* readonly) except -1
ctypedef object (*wrap_tensor_fn)(DLManagedTensorVersioned* tensor)

# StridedMemoryView's DLPack C exchange table, in a "dlpack_exchange_api" capsule. Called once,
# when the view's module is imported.
cdef object exchange_capsule(fill_tensor_fn fill, wrap_tensor_fn wrap)
