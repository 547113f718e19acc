"""The param holder's packing, checked byte for byte through its one test hook (CPU)."""

import ctypes
import enum
import struct

import numpy as np
import pytest

from cuda_core._kernel_args import _packed_arguments as packed


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


def test_many_arguments_use_the_heap_block():
    args = [np.int32(i) for i in range(33)] + [float(i) for i in range(300)]
    out = packed(*args)
    assert out[:33] == [struct.pack("<i", i) for i in range(33)]
    assert out[33:] == [struct.pack("<d", i) for i in range(300)]


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
    args = [np.int32(1)] * 40 + [object()]
    for _ in range(1000):  # the heap block is released on the error path too
        with pytest.raises(TypeError, match="kernel argument 40"):
            packed(*args)


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
