"""The param holder's packing, checked byte for byte through its one test hook (CPU)."""

import ctypes
import enum
import re
import struct

import numpy as np
import pytest

from cuda_core._kernel_args import _packed_arguments as packed
from helpers import assert_no_c_heap_leak


@pytest.mark.parametrize("value, expected", [
    (0, struct.pack("<Q", 0)),
    (0xDEADBEEF12345678, struct.pack("<Q", 0xDEADBEEF12345678)),
    (2**64 - 1, b"\xff" * 8),
    (-1, b"\xff" * 8),
    (-(2**63), struct.pack("<q", -(2**63))),
    (True, b"\x01"),
    (False, b"\x00"),
    (1.5, struct.pack("<d", 1.5)),
    (-0.0, struct.pack("<d", -0.0)),
    (complex(1.25, -2.5), struct.pack("<dd", 1.25, -2.5)),
])
def test_python_scalars(value, expected):
    assert packed(value) == [expected]


NUMPY_CASES = [
    (np.bool_(True), b"\x01"),
    (np.int8(-2), struct.pack("<b", -2)),
    (np.uint8(250), struct.pack("<B", 250)),
    (np.int16(-300), struct.pack("<h", -300)),
    (np.uint16(65000), struct.pack("<H", 65000)),
    (np.int32(-70000), struct.pack("<i", -70000)),
    (np.uint32(4000000000), struct.pack("<I", 4000000000)),
    (np.int64(-(2**40)), struct.pack("<q", -(2**40))),
    (np.uint64(2**64 - 2), struct.pack("<Q", 2**64 - 2)),
    (np.longlong(-5), struct.pack("<q", -5)),
    (np.ulonglong(5), struct.pack("<Q", 5)),
    (np.float16(1.5), struct.pack("<e", 1.5)),
    (np.float16(-65504.0), struct.pack("<e", -65504.0)),
    (np.float32(3.25), struct.pack("<f", 3.25)),
    (np.float64(-1e300), struct.pack("<d", -1e300)),
    (np.complex64(1 - 2j), struct.pack("<ff", 1, -2)),
    (np.complex128(3 + 4j), struct.pack("<dd", 3, 4)),
]


@pytest.mark.parametrize("value, expected", NUMPY_CASES, ids=lambda v: type(v).__name__)
def test_numpy_scalars(value, expected):
    assert packed(value) == [expected]


def test_float16_bits_are_exact():
    values = np.array([0.0, -0.0, 6.1e-5, 5.96e-8, 65504.0, np.inf, -np.inf], dtype=np.float16)
    assert packed(*values) == [v.tobytes() for v in values]
    nan = np.frombuffer(b"\x01\x7e", dtype=np.float16)[0]  # a NaN with a payload
    assert packed(nan) == [b"\x01\x7e"]


@pytest.mark.parametrize("ctype, value, fmt", [
    (ctypes.c_bool, True, "<?"), (ctypes.c_int8, -3, "<b"), (ctypes.c_uint8, 200, "<B"),
    (ctypes.c_int16, -3, "<h"), (ctypes.c_uint16, 60000, "<H"), (ctypes.c_int32, -3, "<i"),
    (ctypes.c_uint32, 3_000_000_000, "<I"), (ctypes.c_int64, -3, "<q"),
    (ctypes.c_uint64, 2**63, "<Q"), (ctypes.c_float, 0.5, "<f"), (ctypes.c_double, 0.1, "<d"),
])
def test_ctypes_scalars(ctype, value, fmt):
    assert packed(ctype(value)) == [struct.pack(fmt, value)]


def test_ctypes_pointer_value():
    buf = ctypes.create_string_buffer(8)
    ptr = ctypes.cast(buf, ctypes.c_void_p)
    assert packed(ptr) == [struct.pack("<Q", ctypes.addressof(buf))]


class Pair(ctypes.Structure):
    _fields_ = [("tag", ctypes.c_char), ("value", ctypes.c_double), ("n", ctypes.c_int16)]


def test_struct_by_value_keeps_c_alignment():
    # char at 0, double aligned to 8, short at 16, padded to 24: the C layout of the kernel's
    # struct, as ctypes lays it out.
    raw = packed(Pair(b"q", 2.5, -7))[0]
    assert len(raw) == ctypes.sizeof(Pair) == 24
    assert raw[0:1] == b"q" and raw[8:16] == struct.pack("<d", 2.5)
    assert raw[16:18] == struct.pack("<h", -7)


def test_numpy_structured_scalar_by_value():
    dt = np.dtype([("tag", "i1"), ("value", "f8"), ("n", "i2")], align=True)
    record = np.array([(5, 2.5, -7)], dtype=dt)[0]
    raw = packed(record)[0]
    assert len(raw) == dt.itemsize == 24
    assert raw[0] == 5 and raw[8:16] == struct.pack("<d", 2.5) and raw[16:18] == b"\xf9\xff"


def test_ctypes_array_by_value():
    arr = (ctypes.c_float * 3)(1, 2, 3)
    assert packed(arr) == [struct.pack("<3f", 1, 2, 3)]


def test_subclasses_take_the_isinstance_path():
    class Flag(enum.IntEnum):
        ON = 7

    class MyFloat(float):
        pass

    assert packed(Flag.ON, MyFloat(2.0)) == [struct.pack("<Q", 7), struct.pack("<d", 2.0)]


def test_cuda_array_interface_gives_the_device_pointer():
    class DeviceArray:
        __cuda_array_interface__ = {"data": (0x7F0000001000, False), "shape": (4,),
                                    "typestr": "<f4", "version": 3}

    assert packed(DeviceArray()) == [struct.pack("<Q", 0x7F0000001000)]


@pytest.mark.parametrize("pointer", [np.uint64(2**63 + 4096), np.int64(4096)])
def test_a_cuda_array_interface_pointer_may_be_a_numpy_integer(pointer):
    class DeviceArray:
        __cuda_array_interface__ = {"data": (pointer, False), "shape": (4,), "typestr": "<f4",
                                    "version": 3}

    assert packed(DeviceArray()) == [struct.pack("<Q", int(pointer))]


@pytest.mark.parametrize("pointer", [4096.0, None, "0x1000"])
def test_a_cuda_array_interface_pointer_that_is_not_an_integer_is_refused(pointer):
    class DeviceArray:
        __cuda_array_interface__ = {"data": (pointer, False), "shape": (4,), "typestr": "<f4",
                                    "version": 3}

    with pytest.raises(TypeError, match=f"kernel argument 0 \\(DeviceArray\\): the "
                                        f"__cuda_array_interface__ 'data' pointer must be an "
                                        f"int, not {type(pointer).__name__}"):
        packed(DeviceArray())


# The heap block for n arguments: a 16-byte slot, a pointer and a size each.
def heap_block(n):
    return n * (16 + 2 * ctypes.sizeof(ctypes.c_void_p))


def test_many_arguments_use_the_heap_block():
    args = [np.int32(i) for i in range(33)] + [float(i) for i in range(300)]
    out = packed(*args)
    assert out[:33] == [struct.pack("<i", i) for i in range(33)]
    assert out[33:] == [struct.pack("<d", i) for i in range(300)]
    # The block is released after every call (test hook and launch share holder_release).
    assert_no_c_heap_leak(lambda: packed(*args), 300, heap_block(len(args)))


@pytest.mark.parametrize("bad, exc, msg", [
    (2**64, ValueError, "kernel argument 1: int 18446744073709551616 does not fit"),
    (-(2**63) - 1, ValueError, "does not fit in a pointer-sized"),
    ("text", TypeError, "kernel argument 1 has unsupported type builtins.str"),
    (None, TypeError, "kernel argument 1 has unsupported type builtins.NoneType"),
    (np.zeros(4, np.float32), TypeError, "kernel argument 1 is a host NumPy array"),
    ([1, 2], TypeError, "unsupported type builtins.list"),
])
def test_bad_arguments_name_the_index(bad, exc, msg):
    with pytest.raises(exc, match=msg):
        packed(np.int32(0), bad)


def test_failure_in_the_heap_path_raises_cleanly():
    args = [np.int32(1)] * 400 + [object()]
    with pytest.raises(TypeError, match="kernel argument 400"):
        packed(*args)

    def fail():
        try:
            packed(*args)
        except TypeError:
            pass

    # The heap block is released on the error path too.
    assert_no_c_heap_leak(fail, 300, heap_block(len(args)))


def test_buffer_gives_its_pointer_and_a_closed_one_is_refused():
    from cuda_core import Buffer

    view = Buffer.from_handle(0x7F00DEAD0000, 64)
    assert packed(view) == [struct.pack("<Q", 0x7F00DEAD0000)]
    view.close()
    with pytest.raises(ValueError, match="kernel argument 0 is a closed Buffer"):
        packed(view)


def test_buffer_subclass_takes_the_isinstance_path():
    from cuda_core import ManagedBuffer

    view = ManagedBuffer.from_handle(0x1000, 16)
    assert packed(np.int32(1), view) == [struct.pack("<i", 1), struct.pack("<Q", 0x1000)]


# -- declared parameter types: argument kinds checked against them ------------------------------
# A C++ kernel's mangled name gives its parameter types (cuda_core._param_types); the packer
# then refuses an argument of the wrong kind. Here the declared types are given directly
# (``declared=``), as a kernel's first launch would find them.

from cuda_core._param_types import (_checked_parameters, _declared_kind,  # noqa: E402
                                    _demangled_parameters)


class _DeviceArray:
    __cuda_array_interface__ = {"data": (0x7F0000002000, False), "shape": (4,),
                                "typestr": "<f4", "version": 3}


class _Flag(enum.IntEnum):
    ON = 3


class _MyFloat(float):
    pass


def _kind_cases():
    """(argument, its kind) for every kind the packer tells apart, fast path and slow path."""
    from cuda_core import Buffer

    record = np.array([(1, 2.0)], dtype=[("a", "i4"), ("b", "f8")])[0]
    return [
        (Buffer.from_handle(0x7F00DEAD0000, 64), "pointer"),
        (_DeviceArray(), "pointer"),
        (ctypes.c_void_p(0x1000), "pointer"),
        (ctypes.pointer(ctypes.c_int(1)), "pointer"),
        (0x1000, "int"),
        (_Flag.ON, "int"),
        (True, "integer"),
        (np.int32(-1), "integer"),
        (np.uint64(2), "integer"),
        (np.int8(1), "integer"),
        (np.bool_(True), "integer"),
        (ctypes.c_int32(5), "integer"),
        (ctypes.c_uint64(5), "int"),  # pointer-sized: an address, as FFI code holds one
        (ctypes.c_int64(-5), "int"),
        (ctypes.c_uint16(5), "integer"),
        (ctypes.c_bool(True), "integer"),
        (ctypes.c_char(b"x"), "integer"),
        (1.5, "float"),
        (_MyFloat(2.5), "float"),
        (np.float16(1), "float"),
        (np.float32(1), "float"),
        (np.float64(1), "float"),
        (np.longdouble(1), "float"),
        (ctypes.c_float(1), "float"),
        (ctypes.c_double(1), "float"),
        (complex(1, 2), "complex"),
        (np.complex64(1j), "complex"),
        (np.complex128(1j), "complex"),
        (Pair(b"q", 2.5, -7), "opaque"),
        ((ctypes.c_float * 2)(1, 2), "opaque"),
        (record, "opaque"),
    ]


# What each class of declared parameter accepts (signedness is never checked).
_ACCEPTS = {
    "unsigned int*": {"pointer", "int", "opaque"},
    "long long": {"integer", "int", "opaque"},
    "double": {"float", "opaque"},
    "Vec3<float>": {"pointer", "int", "integer", "float", "complex", "opaque"},  # unknown
}


@pytest.mark.parametrize("declared", sorted(_ACCEPTS))
def test_each_argument_kind_against_each_declared_kind(declared):
    cases = _kind_cases()
    assert {kind for _, kind in cases} == _ACCEPTS["Vec3<float>"]  # every kind is covered
    for arg, kind in cases:
        # Padding: the argument under test is not the first, so the index must be right.
        args, types = (np.int32(0), arg), ["int", declared]
        if kind in _ACCEPTS[declared]:
            assert packed(*args, declared=types) == packed(*args), (arg, declared)
        else:
            with pytest.raises(TypeError) as info:
                packed(*args, declared=types)
            assert str(info.value).startswith(
                f"kernel argument 1: {type(arg).__name__} given for parameter 1 declared "
                f"'{declared}' ({_declared_kind(declared)}); pass "), (arg, declared)


def test_the_issue_case_names_index_type_and_declared_type():
    # k(unsigned* p, float x, long long n) given 1.5 for p: same size (8 bytes), wrong kind.
    with pytest.raises(TypeError, match=r"^kernel argument 0: float given for parameter 0 "
                                        r"declared 'unsigned int\*' \(a pointer\); pass a "
                                        r"Buffer, a device array .* or the device address as "
                                        r"a Python int$"):
        packed(1.5, np.uint32(12345), np.int64(0),
               declared=["unsigned int*", "float", "long long"], sizes=[8, 4, 8])
    good = packed(0x1000, np.float32(2), np.int64(3),
                  declared=["unsigned int*", "float", "long long"], sizes=[8, 4, 8])
    assert good == [struct.pack("<Q", 0x1000), struct.pack("<f", 2), struct.pack("<q", 3)]


@pytest.mark.parametrize("arg, declared, size, hint", [
    (np.float64(1), "int", 4, r"an integer\); pass a Python int or bool, or an integer of 4 "
                              r"bytes, e\.g\. numpy\.int32"),
    (1.5, "unsigned short", 2, r"an integer of 2 bytes, e\.g\. numpy\.uint16\(x\)$"),
    (2.0, "unsigned long long", 8, r"an integer of 8 bytes, e\.g\. numpy\.uint64\(x\)$"),
    (0.5, "bool", 1, r"pass a bool, 0 or 1$"),
    (np.int32(1), "float", 4, r"a floating-point type\); pass a float or numpy\.float32\(x\)$"),
    (7, "double", 8, r"pass a float or numpy\.float64\(x\)$"),
    (np.int16(1), "_Float16", 2, r"pass numpy\.float16\(x\)$"),
    (np.uint64(0x1000), "float*", 8, r"as a Python int, e\.g\. int\(x\)$"),
    (np.int32(1), "int*", 8, r"a pointer\); pass a Buffer"),
])
def test_a_kind_mismatch_wins_over_a_size_mismatch_and_hints_the_fix(arg, declared, size, hint):
    # Most of these are also the wrong size; the kind says more, so it is what is reported.
    with pytest.raises(TypeError, match=f"kernel argument 0: {type(arg).__name__} given for "
                                        f"parameter 0 declared '{re.escape(declared)}' .*{hint}"):
        packed(arg, declared=[declared], sizes=[size])


def test_sizes_are_still_checked_where_the_kind_is_right():
    # A NumPy scalar says its width: another width is a mistake, not a value to convert.
    with pytest.raises(TypeError, match=r"kernel argument 0: int64 packs to 8 bytes but the "
                                        r"kernel's parameter 0 is 4 bytes"):
        packed(np.int64(5), declared=["int"], sizes=[4])
    with pytest.raises(TypeError, match="kernel argument 0: float16 packs to 2 bytes"):
        packed(np.float16(1), declared=["float"], sizes=[4])
    # A Python float for a 4-byte parameter of unknown type: it may be an int.
    with pytest.raises(TypeError, match=r"kernel argument 0: float packs to 8 bytes but the "
                                        r"kernel's parameter 0 is 4 bytes.*extern \"C\".*"
                                        r"numpy\.float32"):
        packed(1.5, sizes=[4])


# -- a Python int, bool or float packed at the parameter's width (issue 27, part 1) --------------

@pytest.mark.parametrize("arg, declared, size, expected", [
    (5, "int", 4, struct.pack("<i", 5)),
    (-5, "int", 4, struct.pack("<i", -5)),
    (2**31 - 1, "int", 4, struct.pack("<i", 2**31 - 1)),
    (-(2**31), "int", 4, struct.pack("<i", -(2**31))),
    (2**32 - 1, "unsigned int", 4, struct.pack("<I", 2**32 - 1)),
    (-3, "short", 2, struct.pack("<h", -3)),
    (65535, "unsigned short", 2, struct.pack("<H", 65535)),
    (-128, "signed char", 1, struct.pack("<b", -128)),
    (255, "unsigned char", 1, struct.pack("<B", 255)),
    (1, "bool", 1, b"\x01"),
    (0, "bool", 1, b"\x00"),
    (True, "int", 4, struct.pack("<i", 1)),
    (False, "unsigned short", 2, b"\x00\x00"),
    (True, "long long", 8, struct.pack("<q", 1)),
    (1.5, "float", 4, struct.pack("<f", 1.5)),
    (-0.1, "float", 4, struct.pack("<f", -0.1)),
    (float("inf"), "float", 4, struct.pack("<f", float("inf"))),
])
def test_a_python_scalar_is_packed_at_the_declared_width(arg, declared, size, expected):
    assert packed(arg, declared=[declared], sizes=[size]) == [expected]


@pytest.mark.parametrize("arg, size, expected", [
    (5, 4, struct.pack("<i", 5)),
    (-1, 4, struct.pack("<i", -1)),
    (2**32 - 1, 4, struct.pack("<I", 2**32 - 1)),  # either signedness: the same bytes
    (-(2**15), 2, struct.pack("<h", -(2**15))),
    (255, 1, b"\xff"),
    (True, 4, struct.pack("<i", 1)),
])
def test_without_declared_types_an_int_takes_either_signedness(arg, size, expected):
    assert packed(arg, sizes=[size]) == [expected]
    # No parameter of a known kind: no type table, as for extern "C".
    assert packed(arg, declared=["MyEnum"], sizes=[size]) == [expected]


def test_an_int_for_a_declared_type_of_unknown_kind_is_still_a_size_mismatch():
    # A C++ kernel's __half (or struct, or enum) beside known parameters: the int's narrow bits
    # could be garbage there (1 is a denormal half), so the size check speaks, as before.
    with pytest.raises(TypeError, match=r"kernel argument 1: int packs to 8 bytes but the "
                                        r"kernel's parameter 1 is 2 bytes"):
        packed(0x1000, 1, declared=["float*", "__half"], sizes=[8, 2])
    assert packed(0x1000, np.float16(1), declared=["float*", "__half"], sizes=[8, 2])[1] == \
        struct.pack("<e", 1)


@pytest.mark.parametrize("arg, declared, size, match", [
    (2**31, "int", 4, r"int 2147483648 does not fit parameter 0 \(4 bytes, declared 'int'\), "
                      r"which takes -2147483648 to 2147483647"),
    (-1, "unsigned int", 4, r"int -1 does not fit parameter 0 \(4 bytes, declared "
                            r"'unsigned int'\), which takes 0 to 4294967295"),
    (2**64, "short", 2, r"int 18446744073709551616 does not fit in a pointer-sized"),
    (2, "bool", 1, r"int 2 does not fit parameter 0 \(1 byte, declared 'bool'\), which takes "
                   r"0 to 1"),
    (128, "char", 1, r"int 128 .*, which takes -128 to 127"),
    (2**32, None, 4, r"int 4294967296 does not fit parameter 0 \(4 bytes, type not known, so "
                     r"either signedness\), which takes -2147483648 to 4294967295"),
    (-(2**31) - 1, None, 4, r"int -2147483649 .*, which takes -2147483648 to 4294967295"),
    (1e39, "float", 4, r"float 1e\+39 does not fit parameter 0 \(4 bytes, declared 'float'\)"),
])
def test_a_value_that_does_not_fit_is_an_overflow_and_a_value_error(arg, declared, size, match):
    from cuda_core._kernel_args import KernelArgumentOverflowError

    assert issubclass(KernelArgumentOverflowError, OverflowError)
    assert issubclass(KernelArgumentOverflowError, ValueError)
    with pytest.raises(KernelArgumentOverflowError, match=r"kernel argument 0: " + match):
        packed(arg, declared=None if declared is None else [declared], sizes=[size])


def test_an_int_enum_member_is_packed_as_its_value():
    import enum

    class Mode(enum.IntEnum):
        FAST = 3

    assert packed(Mode.FAST, declared=["int"], sizes=[4]) == [struct.pack("<i", 3)]
    assert packed(Mode.FAST, sizes=[2]) == [struct.pack("<h", 3)]


def test_narrow_packing_sits_beside_the_other_arguments():
    assert packed(0x1000, 7, 2.5, True, np.int32(-1),
                  declared=["float*", "unsigned char", "float", "int", "int"],
                  sizes=[8, 1, 4, 4, 4]) == [struct.pack("<Q", 0x1000), b"\x07",
                                             struct.pack("<f", 2.5), struct.pack("<i", 1),
                                             struct.pack("<i", -1)]


def test_signedness_differences_are_accepted():
    assert packed(np.int32(-1), np.uint32(7), np.int8(-2), np.uint64(9),
                  declared=["unsigned int", "int", "unsigned char", "long"],
                  sizes=[4, 4, 1, 8]) == [b"\xff\xff\xff\xff", struct.pack("<I", 7), b"\xfe",
                                          struct.pack("<Q", 9)]


def test_unknown_declared_types_check_nothing():
    # No parameter of a known kind: no table at all, the size-only path.
    args = (1.5, np.int32(1), complex(1, 1))
    assert packed(*args, declared=["S", "__half", "float2"]) == packed(*args)


def test_declared_types_in_the_heap_path():
    n = 40  # beyond the inline argument arrays
    types = ["int"] * (n - 1) + ["float const*"]
    args = [np.int32(i) for i in range(n - 1)]
    assert len(packed(*args, 0x1000, declared=types)) == n
    with pytest.raises(TypeError, match=f"kernel argument {n - 1}: float given for parameter "
                                        f"{n - 1} declared 'float const\\*'"):
        packed(*args, 2.5, declared=types)

    def fail():
        try:
            packed(*args, 2.5, declared=types)
        except TypeError:
            pass

    # The heap block is released on the error path too.
    assert_no_c_heap_leak(fail, 300, heap_block(n))


def test_declared_and_sizes_must_match_the_arguments():
    with pytest.raises(ValueError, match="declared has 1 types for 2 arguments"):
        packed(1, 2, declared=["int*"])
    with pytest.raises(ValueError, match="sizes has 3 entries for 2 arguments"):
        packed(1, 2, sizes=[8, 8, 8])
    with pytest.raises(TypeError, match="must be a str, not int"):
        packed(1, declared=[4])


# -- the demangler: declared types from mangled names -------------------------------------------

@pytest.mark.parametrize("symbol, params", [
    ("_Z1kPjfx", ("unsigned int*", "float", "long long")),
    ("_Z1kIfEvPjT_x", ("unsigned int*", "float", "long long")),  # k<float>, with return type
    ("_Z1cILc3EEvPi", ("int*",)),                                # c<(char)3>: parens in <>
    ("_Z1kIXgtLi1ELi2EEEvPif", ("int*", "float")),               # k<((1)>(2))>: '>' in parens
    ("_Z1kPFviEPA3_iDnPrKfPVKi", ("void (*)(int)", "int (*) [3]", "decltype(nullptr)",
                                  "float const restrict*", "int const volatile*")),
    ("_ZN2ns1kEPiRiOi", ("int*", "int&", "int&&")),
    ("_ZN12_GLOBAL__N_11kEPi", ("int*",)),                       # (anonymous namespace)::k
    ("_Z1kIZ4mainEUliE_EvT_Pi", ("main::{lambda(int)#1}", "int*")),
    ("_Z1kI3FooIPFviEEEvT_d", ("Foo<void (*)(int)>", "double")),
    ("_Z1kIJifEEvDpT_", ("int", "float")),                       # a parameter pack, expanded
    ("_Z1knoe", ("__int128", "unsigned __int128", "long double")),
    ("_Z1kv", ()),
    (b"_Z5plainPKfdb6__half", ("float const*", "double", "bool", "__half")),
])
def test_demangled_parameter_lists(symbol, params):
    assert _demangled_parameters(symbol) == params


@pytest.mark.parametrize("symbol", [
    "saxpy",        # extern "C": not mangled
    "_Zgarbage",    # the demangler refuses it
    "_Z1",
    "",
    "_Z1kz",        # variadic: no fixed count
    "_ZNK1S1kEi",   # a const member function: no kernel
    "_ZN1S1xE",     # a variable
])
def test_names_without_a_parameter_list_give_none(symbol):
    assert _demangled_parameters(symbol) is None
    assert _checked_parameters(symbol, 1) is None


@pytest.mark.parametrize("ctype, kind", [
    ("int*", "a pointer"), ("float const*", "a pointer"), ("char**", "a pointer"),
    ("int const volatile*", "a pointer"), ("float const restrict*", "a pointer"),
    ("int&", "a pointer"), ("int&&", "a pointer"), ("void (*)(int)", "a pointer"),
    ("int* (*)()", "a pointer"), ("int (*) [3]", "a pointer"), ("decltype(nullptr)", "a pointer"),
    ("std::nullptr_t", "a pointer"), ("Foo<int>::type*", "a pointer"),
    ("(anonymous namespace)::S*", "a pointer"),
    ("bool", "an integer"), ("char", "an integer"), ("signed char", "an integer"),
    ("unsigned char", "an integer"), ("wchar_t", "an integer"), ("char8_t", "an integer"),
    ("char16_t", "an integer"), ("char32_t", "an integer"), ("short", "an integer"),
    ("unsigned short", "an integer"), ("int", "an integer"), ("unsigned int", "an integer"),
    ("long", "an integer"), ("unsigned long", "an integer"), ("long long", "an integer"),
    ("unsigned long long", "an integer"), ("__int128", "an integer"),
    ("unsigned __int128", "an integer"), ("int const", "an integer"),
    ("volatile unsigned int", "an integer"),
    ("float", "a floating-point type"), ("double", "a floating-point type"),
    ("long double", "a floating-point type"), ("double const", "a floating-point type"),
    ("S", None), ("__half", None), ("__nv_bfloat16", None), ("float2", None),
    ("CUtensorMap_st", None), ("Color", None), ("Vec<float, 3>", None),
    ("Foo<void (*)(int)>", None), ("Foo<int>::type", None), ("main::{lambda(int)#1}", None),
    ("float _Complex", None), ("void (S::*)(int)", None), ("int S::*", None),
    ("Array<float, 1, C, mutable, aligned>", None), ("decltype ((float)() + 1)", None),
])
def test_declared_kinds(ctype, kind):
    assert _declared_kind(ctype) == kind


def test_types_apply_only_when_the_counts_match():
    # numba-cuda style: one Array<...> parameter in the name, flattened into several (here 7)
    # by the compiler. A count that differs from the driver's means unknown, never a refusal.
    numba_like = "_ZN6cudapy8__main__3addB2v1E5ArrayIfLi1E1C7mutable7alignedEf"
    assert _demangled_parameters(numba_like) == ("Array<float, 1, C, mutable, aligned>", "float")
    assert _checked_parameters(numba_like, 8) is None
    assert _checked_parameters(numba_like, 2) == ("Array<float, 1, C, mutable, aligned>", "float")
    assert _checked_parameters("_Z1kPjfx", 3) == ("unsigned int*", "float", "long long")
    assert _checked_parameters("_Z1kPjfx", 4) is None
    assert _checked_parameters("_Z1kPjfx", 2) is None
    # Parameters all of unknown kinds: nothing to check.
    assert _checked_parameters("_Z1k6__half6float2", 2) is None


_NVRTC_SOURCE = r"""
#include <cuda_fp16.h>
struct S { int a; double b; };
template <class T> __global__ void k(unsigned* p, T x, long long n) {}
template <char C> __global__ void c(int* p, float f) {}
namespace { __global__ void anon(float* f, S s, void (*fp)(int), size_t n) {} }
__global__ void plain(const float* __restrict__ x, double d, bool b, __half h) {}
__global__ void nul(decltype(nullptr) z, int (*a)[3], const volatile int* cv, char c) {}
extern "C" __global__ void ec(int* p, float f) {}
"""

_NVRTC_EXPECTED = {
    "k<float>": ("unsigned int*", "float", "long long"),
    "k<int>": ("unsigned int*", "int", "long long"),
    "k<const int*>": ("unsigned int*", "int const*", "long long"),
    "k<S>": ("unsigned int*", "S", "long long"),
    "k<__half>": ("unsigned int*", "__half", "long long"),
    "c<3>": ("int*", "float"),
    "anon": ("float*", "S", "void (*)(int)", "unsigned long"),
    "plain": ("float const*", "double", "bool", "__half"),
    "nul": ("decltype(nullptr)", "int (*) [3]", "int const volatile*", "char"),
    "ec": None,
}


def _ptx_param_counts(ptx):
    """The parameter count of each .entry in PTX text: what the driver will report."""
    counts = {}
    for name, params in re.findall(r"\.entry\s+(\S+)\s*\(([^)]*)\)", ptx):
        counts[name] = params.count(".param")
    return counts


def test_names_that_nvrtc_lowers_demangle_to_their_declared_types():
    from helpers import cuda_include_dir
    from cuda_core import Program, ProgramOptions

    opts = ProgramOptions(arch="sm_80", include_path=cuda_include_dir())
    obj = Program(_NVRTC_SOURCE, "c++", opts).compile("ptx", name_expressions=list(_NVRTC_EXPECTED))
    counts = _ptx_param_counts(bytes(obj.code).decode())
    for name, expected in _NVRTC_EXPECTED.items():
        symbol = obj.symbol_mapping[name]
        assert symbol in counts, (name, symbol)
        assert _demangled_parameters(symbol) == expected, name
        if expected is not None:
            assert counts[symbol] == len(expected), name  # the driver's count will match
            assert _checked_parameters(symbol, counts[symbol]) == expected, name
        else:
            assert _checked_parameters(symbol, counts[symbol]) is None
