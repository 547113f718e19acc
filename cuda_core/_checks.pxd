from cuda.bindings.cydriver cimport CUdeviceptr

# Argument checks, one argument order: the value first, then ``what``, the argument's name as
# the message shows it ("StreamOptions.priority", "Buffer.from_handle(): size"). Every message
# starts with ``what``. An int argument takes a Python int or any object with __index__ (NumPy
# integers), never a bool.

# A value's type as a message names it: qualified by its module where the bare name would read
# as a builtin's (NumPy's bool is "numpy.bool", not "bool").
cdef str type_name(object value)

cpdef object check_bool(object value, str what, bint allow_none=*)
cpdef object check_int(object value, str what, object minimum=*, object maximum=*,
                       bint allow_none=*, object error=*)
cpdef object check_choice(object value, str what, tuple allowed, bint allow_none=*)
cpdef object check_enum(object value, str what, object enum_cls, bint allow_none=*,
                        bint casefold=*, object error=*, object type_error=*)
cpdef size_t check_size(object value, str what) except? 0
cdef CUdeviceptr check_address(object value, str what) except? 0
cdef int check_driver_int(object value, str what, int minimum) except? -1
cdef int check_ordinal(object value, str what) except -1
