# Kernel parameter types, as far as they can be known: the kinds of argument the param holder
# packs, and which kinds each declared parameter type accepts.

cdef enum:
    # What an argument is, as the param holder packs it: one bit each.
    ARG_POINTER = 1           # a Buffer, a __cuda_array_interface__ object, a ctypes pointer
    ARG_INT_OR_POINTER = 2    # a Python int: pointer-sized, serves pointers and integers alike
    ARG_INTEGER = 4           # bool, NumPy integer and bool scalars, ctypes integers
    ARG_FLOAT = 8             # float, NumPy float16/32/64 scalars, ctypes c_float/c_double
    ARG_COMPLEX = 16          # complex, NumPy complex scalars
    ARG_OPAQUE = 32           # ctypes structures/unions/arrays, NumPy void scalars: raw bytes

    # What a parameter accepts, by its declared type: a mask of the kinds above. Signedness is
    # never checked; raw bytes are the caller's word and pass everywhere.
    ACCEPTS_ANY = (ARG_POINTER | ARG_INT_OR_POINTER | ARG_INTEGER | ARG_FLOAT | ARG_COMPLEX
                   | ARG_OPAQUE)
    ACCEPTS_POINTER = ARG_POINTER | ARG_INT_OR_POINTER | ARG_OPAQUE
    ACCEPTS_INTEGER = ARG_INTEGER | ARG_INT_OR_POINTER | ARG_OPAQUE
    ACCEPTS_FLOAT = ARG_FLOAT | ARG_OPAQUE
    ACCEPTS_BITS = 63  # the ACCEPTS_* part of a table byte

    # Beside the mask, in the same byte of a table, for an integer parameter: the range a
    # Python int (or bool) packed at the parameter's width must fall in. Neither: signed.
    PARAM_UNSIGNED = 64       # an unsigned type: 0 to 2**bits - 1
    PARAM_BOOL = 128          # bool: 0 or 1


# A parameter-type table is one bytes object: ``count`` mask bytes (ACCEPTS_*, with PARAM_*
# for integer types), one per parameter, then each parameter's declared C++ type, UTF-8,
# NUL-terminated. A launch reads the masks; only an error message reads the names.
cdef bytes param_table(const char* symbol, Py_ssize_t count)
cdef bytes make_table(object declared)
cdef str table_type(const unsigned char* table, Py_ssize_t count, Py_ssize_t i)
cdef tuple table_types(const unsigned char* table, Py_ssize_t count)
cdef str accepts_words(int mask)
