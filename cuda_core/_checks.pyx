"""Argument checks shared by every module (Python callers use the ``cpdef`` ones).

One argument order throughout: the value, then ``what`` (the argument as the message names
it), then the bounds. A check raises ``ArgumentTypeError`` (a ``TypeError`` that is also the
``ValueError`` cuda.core raises for many of these) for a value of the wrong type, and
``ValueError`` for one out of range, and the message starts with ``what``.
"""

from cuda.bindings.cydriver cimport CUdeviceptr

import builtins

from cuda.bindings import driver as _driver_py

from cuda_core._errors import InvalidValueError

__all__ = []


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong type where cuda.core raises ``ValueError`` for it: a
    ``TypeError``, as ours are, and a ``ValueError``, so that cuda.core's ``except`` holds."""


class ProtocolMissingError(BufferError, AttributeError):
    """An object without the protocol a view is asked to read (``__dlpack__``,
    ``__array_interface__``, ``__cuda_array_interface__``): a ``BufferError``, as ours are, and
    the ``AttributeError`` cuda.core lets through, so that either ``except`` holds."""


class SizeOverflowError(OverflowError, ValueError):
    """An int outside what its C field holds (a byte count outside [0, 2**64), a launch
    dimension or shared-memory size past 32 bits): a ``ValueError``, as ours are, and an
    ``OverflowError``, the class of cuda.core's conversion to the C type, so that either
    ``except`` holds."""


cdef object _U64_END = 1 << 64


cdef str type_name(object value):
    """The type's name, qualified by its module where it would read as a builtin's (NumPy's bool
    is not ``bool``)."""
    t = type(value)
    if t.__module__ == "builtins" or not hasattr(builtins, t.__name__):
        return t.__name__
    return f"{t.__module__}.{t.__name__}"


cdef inline bint _is_bool(object value):
    # NumPy's bool is not a subclass of bool, and some NumPy builds still give it __index__.
    return isinstance(value, bool) or (type(value).__module__ == "numpy"
                                       and type(value).__name__ in ("bool", "bool_"))


cdef inline object _as_int(object value, str what, str expected):
    # operator.index's rule (the type's __index__, whose result must be an int). Python's bool
    # is an int, as cuda.core takes it; NumPy's bool is refused (it is not an int there).
    if type(value) is int:
        return value
    if type(value) is bool:
        return int(value)
    if _is_bool(value) or not hasattr(type(value), "__index__"):
        raise ArgumentTypeError(f"{what} must be {expected}, not {type_name(value)}")
    result = type(value).__index__(value)
    if not isinstance(result, int):
        raise ArgumentTypeError(f"{what} must be {expected}: {type_name(value)}.__index__ "
                                f"returned {type_name(result)}")
    return int(result)


# The spellings of "false" that distutils' strtobool knew: each is a true str, so cuda.core
# would switch the flag on where the caller wrote it off.
_FALSE_WORDS = frozenset(("n", "no", "f", "false", "off", "0"))


cpdef object check_bool(object value, str what, bint allow_none=False):
    """A flag: a bool (NumPy's too), an int or a str, as cuda.core takes them (by truth value),
    and None when ``allow_none``. Refused: a str that spells false ("no", "False", "0", ...:
    cuda.core would switch the flag on) and anything else (a float)."""
    if type(value) is bool or (allow_none and value is None):
        return value
    if _is_bool(value):
        return bool(value)
    if hasattr(type(value), "__index__"):  # an int, by its truth value
        return bool(_as_int(value, what, "a bool or an int"))
    if isinstance(value, str):
        if value.strip().lower() in _FALSE_WORDS:
            raise ArgumentTypeError(
                f"{what} must be a bool{' or None' if allow_none else ''}, not the str "
                f"{value!r}: a non-empty str is true, so it would switch the option on; pass "
                f"False")
        return bool(value)
    raise ArgumentTypeError(f"{what} must be a bool{' or None' if allow_none else ''}, not "
                            f"{type_name(value)}")


cpdef object check_int(object value, str what, object minimum=None, object maximum=None,
                       bint allow_none=False, object error=None):
    """``value`` as an int in [minimum, maximum] (a bound of None is open); None passes
    through when ``allow_none``. ``error``, where given, is the class of the out-of-range
    error (a subclass of ValueError). Without it, a value outside the C type the bounds are
    (below 0 where ``minimum`` is not, past a ``maximum`` of 2**k - 1) raises
    ``SizeOverflowError``, an ``OverflowError`` as cuda.core's conversion to that type."""
    if value is None and allow_none:
        return None
    value = _as_int(value, what, "an int or None" if allow_none else "an int")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        if maximum is None:
            bound = f">= {minimum}"
        elif minimum is None:
            bound = f"<= {maximum}"
        else:
            bound = f"between {minimum} and {maximum}"
        if error is None and ((value < 0 and minimum is not None and minimum >= 0) or (
                maximum is not None and value > maximum and (maximum + 1) & maximum == 0)):
            error = SizeOverflowError
        raise (ValueError if error is None else error)(f"{what} must be {bound}, got {value}")
    return value


cdef int check_driver_int(object value, str what, int minimum) except? -1:
    """An int the driver takes as a C ``int`` with a lower bound it checks itself, where cuda.core
    passes the value on: below ``minimum``, the driver's refusal as cuda.core reports it
    (``InvalidValueError``, a ``CUDAError`` and a ``ValueError``), raised before the call; past
    the C ``int``, ``SizeOverflowError`` (cuda.core's conversion raises ``OverflowError``)."""
    value = _as_int(value, what, "an int")
    if minimum <= value <= 0x7FFFFFFF:
        return value
    error = SizeOverflowError if value > 0x7FFFFFFF else InvalidValueError
    raise error(f"{what} must be between {minimum} and 2147483647, got {value}")


cpdef object check_choice(object value, str what, tuple allowed, bint allow_none=False):
    """``value`` as an int that is one of ``allowed``."""
    if value is None and allow_none:
        return None
    value = _as_int(value, what, "an int or None" if allow_none else "an int")
    if value not in allowed:
        raise ValueError(f"{what} must be one of {', '.join(map(str, allowed))}, got {value}")
    return value


cpdef object check_enum(object value, str what, object enum_cls, bint allow_none=False,
                        bint casefold=False, object error=None, object type_error=None):
    """``value``, a string naming a member of the string enum ``enum_cls``, as that member.

    ``enum_cls`` may instead be a tuple of the allowed strings (options whose values are plain
    strings): ``value``, a str (a StrEnum member is one), is then returned as the allowed
    string it names, and a value of another type is "``what`` must be a str". ``casefold``
    matches ignoring case (the member, or the allowed string, as spelled there is returned);
    ``error`` and ``type_error`` replace ``ValueError`` and ``ArgumentTypeError``.
    """
    if value is None and allow_none:
        return None
    cdef bint plain = type(enum_cls) is tuple
    if isinstance(value, str):
        text = str.__str__(value) if plain else value
        if plain and text in enum_cls:
            return text
        if not plain:
            try:
                return enum_cls(value)
            except ValueError:
                pass
        if casefold:
            folded = text.lower()
            for choice in enum_cls:
                if (choice if plain else choice.value).lower() == folded:
                    return choice
    if plain:
        if not isinstance(value, str):
            raise (type_error or ArgumentTypeError)(
                f"{what} must be a str, not {type(value).__name__}")
        words = ", ".join(map(repr, enum_cls))
    else:
        words = ", ".join([repr(m.value) for m in enum_cls]) + (", None" if allow_none else "")
        if value is not None and not isinstance(value, str):
            raise (type_error or ArgumentTypeError)(
                f"{what} must be one of {words}, not {type_name(value)}")
    raise (error or ValueError)(f"{what} must be one of {words}, got {value!r}")


cpdef size_t check_size(object value, str what) except? 0:
    """A byte count: an int in [0, 2**64)."""
    value = _as_int(value, what, "an int")
    if value < 0:
        raise SizeOverflowError(f"{what} must be >= 0, got {value}")
    if value >= _U64_END:
        raise SizeOverflowError(f"{what} {value} does not fit in 64 bits")
    return <size_t>value


cdef CUdeviceptr check_address(object value, str what) except? 0:
    """An address: an int in [0, 2**64), or a ``cuda.bindings.driver.CUdeviceptr``."""
    if isinstance(value, _driver_py.CUdeviceptr):
        value = int(value)
    elif type(value) is not int:
        expected = "an int (an address) or a cuda.bindings.driver.CUdeviceptr"
        if type(value).__module__.startswith("cuda.bindings"):
            # Its other handles (CUstream, CUevent, ...) have __index__ but are not addresses.
            raise ArgumentTypeError(f"{what} must be {expected}, not {type_name(value)}")
        value = _as_int(value, what, expected)
    if value < 0 or value >= _U64_END:
        raise SizeOverflowError(f"{what}={value} is not a valid address")
    return <CUdeviceptr>value


cdef int check_ordinal(object value, str what) except -1:
    """A device ordinal's type and sign (the device count is the caller's check: it needs the
    driver)."""
    value = _as_int(value, what, "an int, a Device or None")
    if value < 0:
        raise ValueError(f"{what} must be >= 0, got {value}")
    if value > 0x7FFFFFFF:  # past the C int: an OverflowError too, as cuda.core's conversion
        raise SizeOverflowError(f"{what} {value} is out of range")
    return value
