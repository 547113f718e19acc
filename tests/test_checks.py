"""cuda_core._checks, the argument checks every module uses (CPU).

Each check takes the value, then ``what`` (the argument as the message names it), then its
bounds; it returns the value as the C type needs it, raises ArgumentTypeError (a TypeError that
is also a ValueError, as cuda.core raises for many) for a wrong type and ValueError for a value
out of range, and every message starts with ``what``. A bool is never an
int; an object with ``__index__`` (a NumPy integer) is one. The ``cpdef`` checks are called here
from Python; the ``cdef`` ones (check_size, check_address, check_ordinal,
check_driver_int) exist only in C, so a
Cython module built against the installed ``.pxd`` files (tests/helpers/downstream.pyx) calls
them, in a subprocess, and the ``cpdef`` ones again through their C signatures.
"""

import re

import pytest

from cuda_core._checks import (ArgumentTypeError, SizeOverflowError, check_bool, check_choice,
                              check_int)
from cuda_core._errors import InvalidValueError
from helpers.cython_build import run_downstream


# The helpers the cases name, as source: run here for the cpdef checks, and again in the
# subprocess that calls the cdef checks. Index is an integer-like object (``__index__``), as
# NumPy integers and user types are; BadIndex's ``__index__`` breaks its contract (Python's
# operator.index refuses the result).
_PRELUDE = """
import numpy as np
from cuda.bindings import driver

class Index:
    def __init__(self, value):
        self.value = value
    def __index__(self):
        return self.value

class BadIndex:
    def __index__(self):
        return "7"
"""
_NAMESPACE: dict = {}
exec(_PRELUDE, _NAMESPACE)


def ok(value):
    return ("ok", value)


def refused(exc, message):
    """``message`` is a regular expression for the whole message."""
    return (exc.__name__, message)


def case(func, value, what, expect, extra=""):
    call = f"{func}({value}, {what!r}{', ' + extra if extra else ''})"
    return pytest.param(call, what, expect, id=call)


U64_MAX = 2**64 - 1

# The cpdef checks, called from Python.
PY_CASES = [
    case("check_bool", "True", "O.flag", ok(True)),
    case("check_bool", "False", "O.flag", ok(False)),
    case("check_bool", "None", "O.flag", ok(None), "allow_none=True"),
    case("check_bool", "None", "O.flag", refused(ArgumentTypeError, r"O.flag must be a bool, not NoneType")),
    # An int is a flag by its truth value, as cuda.core takes it.
    case("check_bool", "1", "O.flag", ok(True)),
    case("check_bool", "0", "O.flag", ok(False), "allow_none=True"),
    case("check_bool", "np.int8(2)", "O.flag", ok(True)),
    case("check_bool", "Index(0)", "O.flag", ok(False)),
    case("check_bool", "np.bool_(True)", "O.flag", ok(True)),
    case("check_bool", "1.0", "O.flag", refused(ArgumentTypeError, r"O.flag must be a bool, not float")),
    # A str by its truth value, as cuda.core takes it, unless it spells false.
    case("check_bool", "'yes'", "O.flag", ok(True)),
    case("check_bool", "''", "O.flag", ok(False)),
    case("check_bool", "' Off'", "O.flag", refused(ArgumentTypeError, r"O.flag must be a bool, not the str ' Off'.*")),
    case("check_bool", "'False'", "O.flag", refused(ArgumentTypeError, r"O.flag must be a bool, not the str 'False'.*")),

    case("check_int", "5", "n", ok(5)),
    case("check_int", "-(2**70)", "n", ok(-(2**70))),
    case("check_int", "Index(7)", "n", ok(7)),
    case("check_int", "np.int32(-3)", "n", ok(-3)),
    case("check_int", "np.uint64(2**64 - 1)", "n", ok(U64_MAX)),
    case("check_int", "None", "n", ok(None), "allow_none=True"),
    case("check_int", "True", "n", ok(1)),  # Python's bool is an int; NumPy's is not
    case("check_int", "np.True_", "n", refused(ArgumentTypeError, r"n must be an int, not numpy.bool")),
    case("check_int", "1.0", "n", refused(ArgumentTypeError, r"n must be an int, not float")),
    case("check_int", "np.float32(1)", "n", refused(ArgumentTypeError, r"n must be an int, not float32")),
    case("check_int", "'1'", "n", refused(ArgumentTypeError, r"n must be an int, not str")),
    case("check_int", "None", "n", refused(ArgumentTypeError, r"n must be an int, not NoneType")),
    case("check_int", "'1'", "n", refused(ArgumentTypeError, r"n must be an int or None, not str"),
         "allow_none=True"),
    case("check_int", "False", "n", ok(0), "allow_none=True"),
    case("check_int", "BadIndex()", "n",
         refused(ArgumentTypeError, r"n must be an int: BadIndex.__index__ returned str")),
    # Bounds: inclusive, either one open.
    case("check_int", "0", "S.priority", ok(0), "minimum=0"),
    # Outside the C type the bounds are (below 0 where the minimum is not, past a maximum of
    # 2**k - 1): SizeOverflowError, an OverflowError as cuda.core's conversion and a ValueError.
    case("check_int", "-1", "S.priority",
         refused(SizeOverflowError, r"S.priority must be >= 0, got -1"), "minimum=0"),
    case("check_int", "256", "M.value",
         refused(SizeOverflowError, r"M.value must be between 0 and 255, got 256"),
         "minimum=0, maximum=255"),
    case("check_int", "9", "S.priority", ok(9), "maximum=9"),
    case("check_int", "10", "S.priority", refused(ValueError, r"S.priority must be <= 9, got 10"),
         "maximum=9"),
    case("check_int", "1", "S.priority", ok(1), "minimum=1, maximum=2"),
    case("check_int", "2", "S.priority", ok(2), "minimum=1, maximum=2"),
    case("check_int", "0", "S.priority",
         refused(ValueError, r"S.priority must be between 1 and 2, got 0"), "minimum=1, maximum=2"),
    case("check_int", "3", "S.priority",
         refused(ValueError, r"S.priority must be between 1 and 2, got 3"), "minimum=1, maximum=2"),
    case("check_int", "Index(5)", "S.priority", refused(ValueError, r"S.priority must be <= 4, got 5"),
         "maximum=4"),
    case("check_int", "np.int64(-1)", "S.priority",
         refused(SizeOverflowError, r"S.priority must be >= 0, got -1"), "minimum=0"),
    case("check_int", "None", "S.priority", ok(None), "minimum=0, maximum=1, allow_none=True"),

    case("check_choice", "2", "O.kind", ok(2), "(1, 2, 4)"),
    case("check_choice", "Index(4)", "O.kind", ok(4), "(1, 2, 4)"),
    case("check_choice", "np.uint8(1)", "O.kind", ok(1), "(1, 2, 4)"),
    case("check_choice", "3", "O.kind", refused(ValueError, r"O.kind must be one of 1, 2, 4, got 3"),
         "(1, 2, 4)"),
    case("check_choice", "True", "O.kind", ok(1), "(0, 1)"),
    case("check_choice", "1.0", "O.kind", refused(ArgumentTypeError, r"O.kind must be an int, not float"),
         "(1,)"),
    case("check_choice", "None", "O.kind", refused(ArgumentTypeError, r"O.kind must be an int, not NoneType"),
         "(1,)"),
    case("check_choice", "None", "O.kind", ok(None), "(1,), allow_none=True"),
    case("check_choice", "'a'", "O.kind",
         refused(ArgumentTypeError, r"O.kind must be an int or None, not str"), "(1,), allow_none=True"),
]

# The cdef checks, called from C (downstream.size is check_size, and so on).
C_CASES = [
    case("size", "0", "B.from_handle(): size", ok(0)),
    case("size", "4096", "B.from_handle(): size", ok(4096)),
    case("size", "2**64 - 1", "B.from_handle(): size", ok(U64_MAX)),
    case("size", "np.uint64(2**64 - 1)", "B.from_handle(): size", ok(U64_MAX)),
    case("size", "Index(10)", "B.from_handle(): size", ok(10)),
    case("size", "-1", "B.from_handle(): size",
         refused(SizeOverflowError, r"B.from_handle\(\): size must be >= 0, got -1")),
    case("size", "2**64", "B.from_handle(): size",
         refused(SizeOverflowError,
                 r"B.from_handle\(\): size 18446744073709551616 does not fit in 64 bits")),
    case("size", "Index(-5)", "B.from_handle(): size",
         refused(SizeOverflowError, r"B.from_handle\(\): size must be >= 0, got -5")),
    case("size", "True", "B.from_handle(): size", ok(1)),  # an int, as for cuda.core
    case("size", "np.True_", "B.from_handle(): size",
         refused(ArgumentTypeError, r"B.from_handle\(\): size must be an int, not numpy.bool")),
    case("size", "1.5", "B.from_handle(): size",
         refused(ArgumentTypeError, r"B.from_handle\(\): size must be an int, not float")),
    case("size", "None", "B.from_handle(): size",
         refused(ArgumentTypeError, r"B.from_handle\(\): size must be an int, not NoneType")),
    case("size", "'8'", "B.from_handle(): size",
         refused(ArgumentTypeError, r"B.from_handle\(\): size must be an int, not str")),
    case("size", "BadIndex()", "B.from_handle(): size", refused(
        ArgumentTypeError, r"B.from_handle\(\): size must be an int: BadIndex.__index__ returned str")),

    case("address", "0", "ptr", ok(0)),
    case("address", "0x7F00DEAD0000", "ptr", ok(0x7F00DEAD0000)),
    case("address", "2**64 - 1", "ptr", ok(U64_MAX)),
    case("address", "driver.CUdeviceptr(0x1000)", "ptr", ok(0x1000)),
    case("address", "Index(0x2000)", "ptr", ok(0x2000)),
    case("address", "np.uint64(2**64 - 1)", "ptr", ok(U64_MAX)),
    # SizeOverflowError: a ValueError, and cuda.core's OverflowError (its conversion to size_t).
    case("address", "-1", "ptr", refused(SizeOverflowError, r"ptr=-1 is not a valid address")),
    case("address", "2**64", "ptr",
         refused(SizeOverflowError, r"ptr=18446744073709551616 is not a valid address")),
    case("address", "True", "ptr", ok(1)),
    case("address", "np.True_", "ptr", refused(
        ArgumentTypeError, r"ptr must be an int \(an address\) or a cuda.bindings.driver.CUdeviceptr, "
                   r"not numpy.bool")),
    case("address", "1.0", "ptr", refused(ArgumentTypeError, r"ptr must be an int \(an address\).*not float")),
    case("address", "None", "ptr",
         refused(ArgumentTypeError, r"ptr must be an int \(an address\).*not NoneType")),
    case("address", "'0x10'", "ptr", refused(ArgumentTypeError, r"ptr must be an int \(an address\).*not str")),
    case("address", "BadIndex()", "ptr", refused(
        ArgumentTypeError, r"ptr must be an int \(an address\).*: BadIndex.__index__ returned str")),
    case("address", "driver.CUstream(0x1000)", "ptr",
         refused(ArgumentTypeError, r"ptr must be an int \(an address\).*not CUstream")),

    case("ordinal", "0", "device_id", ok(0)),
    case("ordinal", "3", "device_id", ok(3)),
    case("ordinal", "0x7FFFFFFF", "device_id", ok(0x7FFFFFFF)),
    case("ordinal", "Index(1)", "device_id", ok(1)),
    case("ordinal", "np.int32(2)", "device_id", ok(2)),
    case("ordinal", "-1", "device_id", refused(ValueError, r"device_id must be >= 0, got -1")),
    case("ordinal", "2**31", "device_id",
         refused(SizeOverflowError, r"device_id 2147483648 is out of range")),
    case("ordinal", "2**64", "device_id",
         refused(SizeOverflowError, r"device_id 18446744073709551616 is out of range")),
    case("ordinal", "True", "device_id", ok(1)),
    case("ordinal", "np.True_", "device_id",
         refused(ArgumentTypeError, r"device_id must be an int, a Device or None, not numpy.bool")),
    case("ordinal", "1.0", "device_id", refused(ArgumentTypeError, r"device_id must be an int, .*not float")),
    case("ordinal", "'0'", "device_id", refused(ArgumentTypeError, r"device_id must be an int, .*not str")),
    case("ordinal", "BadIndex()", "device_id", refused(
        ArgumentTypeError, r"device_id must be an int, a Device or None: BadIndex.__index__ returned str")),
    # check_driver_int: below the minimum, the driver's INVALID_VALUE (a CUDAError and a
    # ValueError, as cuda.core reports it); past the C int, an OverflowError too.
    case("driver_int", "1", "block_size", ok(1), "1"),
    case("driver_int", "0x7FFFFFFF", "block_size", ok(0x7FFFFFFF), "1"),
    case("driver_int", "np.int64(32)", "block_size", ok(32), "1"),
    case("driver_int", "True", "block_size", ok(1), "1"),
    case("driver_int", "0", "block_size",
         refused(InvalidValueError, r"block_size must be between 1 and 2147483647, got 0"), "1"),
    case("driver_int", "-1", "block_size",
         refused(InvalidValueError, r"block_size must be between 1 and 2147483647, got -1"), "1"),
    case("driver_int", "2**31", "block_size", refused(
        SizeOverflowError, r"block_size must be between 1 and 2147483647, got 2147483648"), "1"),
    case("driver_int", "2**64", "block_size", refused(
        SizeOverflowError, r"block_size must be between 1 and 2147483647, got \d+"), "1"),
    case("driver_int", "1.0", "block_size",
         refused(ArgumentTypeError, r"block_size must be an int, not float"), "1"),
]


def outcome(call, namespace):
    """What ``call`` did: ("ok", type name, value) or (exception type name, message)."""
    try:
        value = eval(call, namespace)
    except Exception as e:  # the outcome under test, compared below
        return (type(e).__name__, str(e))
    return ("ok", type(value).__name__, value)


def check_outcome(got, what, expect):
    kind, detail = expect
    if kind == "ok":
        # The value comes back as the exact type the C side holds (an int, never a NumPy
        # integer or the __index__ object).
        assert tuple(got) == ("ok", type(detail).__name__, detail)
    else:
        assert got[0] == kind, got
        assert got[1].startswith(what), got
        assert re.fullmatch(detail, got[1]), got


@pytest.mark.parametrize("call, what, expect", PY_CASES)
def test_python_checks(call, what, expect):
    namespace = dict(_NAMESPACE, check_bool=check_bool, check_int=check_int,
                     check_choice=check_choice)
    check_outcome(outcome(call, namespace), what, expect)


def _in_downstream(downstream, calls):
    """The outcomes of ``calls`` (source text), made in one subprocess in which the names
    size/address/ordinal/driver_int/check_int/check_bool/check_choice are downstream's C calls."""
    code = _PRELUDE + f"""
from downstream import size, address, ordinal, driver_int
check_int, check_bool, check_choice = downstream.integer, downstream.flag, downstream.choice

def outcome(call):
    try:
        value = eval(call)
    except Exception as e:
        return (type(e).__name__, str(e))
    return ("ok", type(value).__name__, value)

result = [outcome(call) for call in {list(calls)!r}]
"""
    return dict(zip(calls, run_downstream(downstream, code)))


@pytest.fixture(scope="module")
def c_outcomes(downstream):
    calls = [p.values[0] for p in C_CASES] + [p.values[0] for p in PY_CASES]
    return _in_downstream(downstream, calls)


@pytest.mark.parametrize("call, what, expect", C_CASES)
def test_c_checks(c_outcomes, call, what, expect):
    check_outcome(c_outcomes[call], what, expect)


@pytest.mark.parametrize("call, what, expect", PY_CASES)
def test_python_checks_called_from_c(c_outcomes, call, what, expect):
    # The same cpdef checks through their C entry points, as a Cython caller makes them.
    check_outcome(c_outcomes[call], what, expect)



def test_check_enum_takes_an_enum_or_a_tuple_of_allowed_strings():
    from cuda_core._checks import check_enum
    from cuda_core.typing import SourceCodeType

    assert check_enum("ptx", "what", SourceCodeType) is SourceCodeType.PTX
    assert check_enum("PTX", "what", SourceCodeType, casefold=True) is SourceCodeType.PTX
    with pytest.raises(ValueError, match=r"^what must be one of 'c\+\+', 'ptx', 'nvvm', got 'PTX'$"):
        check_enum("PTX", "what", SourceCodeType)
    # A tuple: the allowed string itself, as spelled there, also for an enum member.
    got = check_enum(SourceCodeType.PTX, "what", ("ptx", "cubin"))
    assert got == "ptx" and type(got) is str
    assert check_enum("CUBIN", "what", ("ptx", "cubin"), casefold=True) == "cubin"
    with pytest.raises(ArgumentTypeError, match=r"^what must be a str, not int$"):
        check_enum(3, "what", ("ptx", "cubin"))
    class Refused(ValueError):
        pass

    with pytest.raises(Refused, match="^what must be one of 'ptx', 'cubin', got 'x'$"):
        check_enum("x", "what", ("ptx", "cubin"), error=Refused)
    assert check_enum(None, "what", ("ptx",), allow_none=True) is None
