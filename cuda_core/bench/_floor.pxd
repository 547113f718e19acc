# Each argument's bytes packed as kernelParams (16-byte aligned each, one block; the caller frees
# both, also on failure): shared with cuda_core._bench_floor.
cdef int pack(list arguments, void*** params, char** storage) except -1
