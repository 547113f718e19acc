# cython: boundscheck=True, wraparound=True
"""Kernel parameter types, read from a C++ kernel's mangled name.

The driver reports each parameter's offset and size, never its type: a Python ``float`` (8
bytes) passed for a pointer parameter fits the size and becomes a wild address. A C++ kernel
that is not ``extern "C"`` carries its parameter types in its symbol (Itanium C++ ABI
mangling, as NVCC and NVRTC write it). The C++ runtime's own demangler,
``abi::__cxa_demangle``, turns the symbol into C++ text; its parameter list is split at the
top-level commas, and each declared type is classified as a pointer, an integer, a
floating-point type, or unknown (structs, enums, ``__half``, vector types, class templates,
typedef names that the mangling kept). A parameter's class is a mask of the argument kinds it
accepts (``ACCEPTS_*`` in the ``.pxd``), which the param holder compares with the kind of each
argument it packs.

Everything here runs once per kernel, when its parameter layout is first read, and refuses to
guess: a name that is not mangled (``extern "C"``), one the demangler rejects, a parameter
list whose brackets do not balance, or one whose count differs from the driver's (numba-cuda
mangles one ``Array<...>`` parameter that its compiler flattens into several) means "types
unknown", and the launch then checks sizes only.
"""

from libc.stdlib cimport free
from libc.string cimport strlen, strncmp

__all__ = []


cdef extern from "<cxxabi.h>" namespace "abi" nogil:
    # Returns a malloc'ed NUL-terminated string (freed by the caller), or NULL with ``status``
    # set when the name is not a valid mangled name (-2) or memory ran out (-1).
    char* __cxa_demangle(const char* mangled_name, char* output_buffer, size_t* length,
                         int* status) noexcept


# The built-in types as the demangler spells them. cv-qualifiers are dropped before the look-up;
# typedefs (size_t, int64_t, cudaGraphConditionalHandle) are mangled as their underlying types.
cdef frozenset _INTEGER_TYPES = frozenset({
    "bool", "char", "signed char", "unsigned char", "wchar_t", "char8_t", "char16_t",
    "char32_t", "short", "unsigned short", "int", "unsigned int", "long", "unsigned long",
    "long long", "unsigned long long", "__int128", "unsigned __int128"})
cdef frozenset _UNSIGNED_TYPES = frozenset({
    "unsigned char", "char8_t", "char16_t", "char32_t", "unsigned short", "unsigned int",
    "unsigned long", "unsigned long long", "unsigned __int128"})
cdef frozenset _FLOAT_TYPES = frozenset({
    "float", "double", "long double", "__float128", "_Float16", "__bf16"})
cdef frozenset _QUALIFIERS = frozenset({"const", "volatile", "restrict"})
cdef dict _OPENER = {")": "(", "]": "[", "}": "{"}
cdef dict _WORDS = {ACCEPTS_POINTER: "a pointer", ACCEPTS_INTEGER: "an integer",
                    ACCEPTS_FLOAT: "a floating-point type"}


cdef str _demangle(const char* symbol):
    cdef int status = 0
    cdef char* text = __cxa_demangle(symbol, NULL, NULL, &status)
    if text == NULL:
        return None
    try:
        return text[:strlen(text)].decode("utf-8", "replace")
    finally:
        free(text)


cdef list _split_top_level(str text, bint collapse):
    """``text`` split at its top-level commas or, with ``collapse``, one string in which every
    top-level ``<...>`` is emptied to ``<>``. None when the brackets do not balance.

    ``(``, ``[`` and ``{`` always nest. ``<`` and ``>`` nest only outside them: the demangler
    parenthesizes template-argument expressions (``k<((1)>(2))>``, ``k<(char)3>``), so a
    ``<`` or ``>`` inside parentheses is an operator, not a bracket.
    """
    cdef list stack = []
    cdef list parts = []
    cdef Py_ssize_t start = 0, j
    for j in range(len(text)):
        c = text[j]
        if c == "(" or c == "[" or c == "{":
            stack.append(c)
        elif c == ")" or c == "]" or c == "}":
            if not stack or stack[len(stack) - 1] != _OPENER[c]:
                return None
            stack.pop()
        elif c == "<":
            if not stack:
                if collapse:
                    parts.append(text[start:j + 1])
                stack.append(c)
            elif stack[len(stack) - 1] == "<":
                stack.append(c)
        elif c == ">":
            if not stack:
                return None
            if stack[len(stack) - 1] == "<":
                stack.pop()
                if not stack and collapse:
                    start = j
        elif c == "," and not stack and not collapse:
            parts.append(text[start:j])
            start = j + 1
    if stack:
        return None
    parts.append(text[start:])
    if collapse:
        return ["".join(parts)]
    return parts


cdef tuple _parameter_list(str demangled):
    """The declared parameter types of a demangled function name, or None."""
    cdef Py_ssize_t depth = 0
    cdef Py_ssize_t j
    text = demangled.rstrip()
    if not text.endswith(")"):
        return None  # not a function, or a member function with qualifiers: no kernel
    # The list's own parentheses: scanning back from the end, the '(' that balances the final
    # ')'. The types inside balance their parentheses; the name before may have more of them
    # ("(anonymous namespace)::k", "k<(char)3>").
    j = len(text) - 1
    while j >= 0:
        if text[j] == ")":
            depth += 1
        elif text[j] == "(":
            depth -= 1
            if depth == 0:
                break
        j -= 1
    if j <= 0:
        return None
    inner = text[j + 1:len(text) - 1].strip()
    if not inner or inner == "void":
        return ()
    parts = _split_top_level(inner, False)
    if parts is None:
        return None
    params = tuple([p.strip() for p in parts])
    if "" in params or "..." in params:
        return None
    return params


cdef int _accepts(str ctype) except -1:
    """The table byte of a declared parameter type: its ACCEPTS_* mask, with PARAM_UNSIGNED
    or PARAM_BOOL for an unsigned or bool integer type."""
    collapsed = _split_top_level(ctype.strip(), True)
    if collapsed is None:
        return ACCEPTS_ANY
    base = " ".join([w for w in (<str>collapsed[0]).split() if w not in _QUALIFIERS])
    if base == "decltype(nullptr)" or base == "std::nullptr_t":
        return ACCEPTS_POINTER
    if base.endswith("::*"):
        return ACCEPTS_ANY  # a pointer to a data member is an offset, not an address
    if base.endswith("*") or base.endswith("&"):
        return ACCEPTS_POINTER
    # A pointer to a function or to an array: "void (*)(int)", "int (*) [3]". A pointer to a
    # member function, "void (S::*)(int)", is two words wide and stays unknown.
    opening = base.find("(")
    if opening >= 0:
        group = base[opening + 1:base.find(")", opening)].strip()
        if group and (group[0] == "*" or group[0] == "&") and "::" not in group:
            return ACCEPTS_POINTER
        return ACCEPTS_ANY
    if base in _FLOAT_TYPES:
        return ACCEPTS_FLOAT
    if base in _INTEGER_TYPES:
        if base == "bool":
            return ACCEPTS_INTEGER | PARAM_BOOL
        return ACCEPTS_INTEGER | (PARAM_UNSIGNED if base in _UNSIGNED_TYPES else 0)
    return ACCEPTS_ANY


cdef bytes make_table(object declared):
    """The parameter-type table for the declared types ``declared`` (a sequence of str), or None
    when none of them has a known kind: a launch then skips the check entirely."""
    cdef bytearray masks = bytearray()
    cdef list names = []
    cdef bint known = False
    cdef int mask
    for ctype in declared:
        if not isinstance(ctype, str):
            raise TypeError(f"a declared parameter type must be a str, not "
                            f"{type(ctype).__name__}")
        mask = _accepts(ctype)
        known = known or (mask & ACCEPTS_BITS) != ACCEPTS_ANY
        masks.append(mask)
        name = (<str>ctype).encode("utf-8")
        if b"\0" in name:
            raise ValueError(f"a declared parameter type must not contain NUL: {ctype!r}")
        names.append(name + b"\0")
    if not known:
        return None
    return bytes(masks) + b"".join(names)


cdef bytes param_table(const char* symbol, Py_ssize_t count):
    """The parameter-type table of the kernel whose symbol is ``symbol`` and which the driver
    says has ``count`` parameters; None when the types cannot be known or none is checked."""
    if symbol == NULL or strncmp(symbol, "_Z", 2) != 0:
        return None  # extern "C", or a name no C++ compiler mangled
    text = _demangle(symbol)
    if text is None:
        return None
    params = _parameter_list(text)
    if params is None or len(params) != count:
        return None
    return make_table(params)


cdef str table_type(const unsigned char* table, Py_ssize_t count, Py_ssize_t i):
    """The declared type of parameter ``i`` in a table of ``count`` parameters."""
    cdef const char* p = <const char*>table + count
    cdef Py_ssize_t k
    for k in range(i):
        p += strlen(p) + 1
    return p[:strlen(p)].decode("utf-8", "replace")


cdef tuple table_types(const unsigned char* table, Py_ssize_t count):
    return tuple([table_type(table, count, i) for i in range(count)])


cdef str accepts_words(int mask):
    """How an error message names what a parameter is: "a pointer", "an integer", ..."""
    return _WORDS.get(mask & ACCEPTS_BITS, "an unknown type")


# -- test hooks: the same functions a kernel's first launch runs --------------------------------

def _demangled_parameters(symbol):
    """The declared parameter types in the mangled name ``symbol`` (str or bytes), as the
    demangler spells them, whatever the count; None when they cannot be known."""
    cdef bytes raw = symbol.encode() if isinstance(symbol, str) else bytes(symbol)
    if strncmp(raw, "_Z", 2) != 0:
        return None
    text = _demangle(raw)
    return None if text is None else _parameter_list(text)


def _checked_parameters(symbol, count):
    """The declared types a kernel with symbol ``symbol`` and ``count`` driver-reported
    parameters is checked against (as ``Kernel._param_types`` reports them), or None."""
    cdef bytes raw = symbol.encode() if isinstance(symbol, str) else bytes(symbol)
    cdef Py_ssize_t n = count
    table = param_table(raw, n)
    return None if table is None else table_types(<const unsigned char*><const char*>table, n)


def _declared_kind(ctype):
    """What the declared C++ type ``ctype`` is taken as: "a pointer", "an integer",
    "a floating-point type", or None (unknown: any argument of the right size)."""
    cdef int mask = _accepts(ctype) & ACCEPTS_BITS
    return None if mask == ACCEPTS_ANY else accepts_words(mask)
