# The element types of views: the NumPy dtype of a DLPack type code or of an array-interface
# type string, through a table filled once at import and only read afterwards.

cdef object dl_dtype(int code, int bits, int lanes)
cdef object typestr_dtype(object typestr, object d, str who, Py_ssize_t* itemsize)
cdef Py_ssize_t table_itemsize(object descr) noexcept
cdef int table_dl_code(object descr, int* code, int* bits) noexcept
