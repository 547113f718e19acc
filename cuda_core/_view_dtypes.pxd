# The element types of views: the NumPy dtype of a DLPack type code or of an array-interface
# type string, through a table filled once at import and only read afterwards; and the DLPack
# (code, bits) of a dtype, for the export.

cdef object dl_dtype(int code, int bits, int lanes)
cdef tuple dl_code(object dtype, str who)
cdef object typestr_dtype(object typestr, object d, str who, Py_ssize_t* itemsize)
cdef Py_ssize_t table_itemsize(object descr) noexcept
