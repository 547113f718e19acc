"""TMA tensor maps: ``TensorMapDescriptor``, its options and enums.

A descriptor is the driver's 128-byte ``CUtensorMap``, encoded by ``cuTensorMapEncodeTiled``
from a :class:`~cuda_core.utils.StridedMemoryView`. It lives inside the Python object, at a
64-byte aligned address (the driver requires it, and CPython only aligns objects to 16 bytes),
and the launcher passes those bytes by value to a ``const __grid_constant__ CUtensorMap``
parameter. Every constraint the driver documents for the encoding is checked here first, so
that a mistake is a ``ValueError``/``TypeError`` naming the parameter, not
``CUDA_ERROR_INVALID_VALUE``. Encoding is host-side work: it reads no device memory.
"""

import dataclasses
import enum
from operator import index as _index

import numpy

cimport cython
from cuda.bindings cimport cydriver
from libc.stdint cimport uint32_t, uint64_t, uintptr_t
from libc.string cimport memset

from cuda_core._context cimport ContextGuard, enter_context, primary_context
from cuda_core._driver cimport ensure_driver
from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._memoryview cimport StridedMemoryView
from cuda_core._strided_layout cimport int_tuple
from cuda_core._checks import ArgumentTypeError
from cuda_core._options import check_or_create_options
from cuda_core._tensor_map_enums import (TensorMapDataType, TensorMapIm2ColWideMode,
                                         TensorMapInterleave, TensorMapL2Promotion,
                                         TensorMapOOBFill, TensorMapSwizzle)

__all__ = ["TensorMapDescriptor", "TensorMapDescriptorOptions"]


# Bytes per element of each data type.
cdef dict _TYPE_SIZE = {
    TensorMapDataType.UINT8: 1, TensorMapDataType.UINT16: 2, TensorMapDataType.UINT32: 4,
    TensorMapDataType.INT32: 4, TensorMapDataType.UINT64: 8, TensorMapDataType.INT64: 8,
    TensorMapDataType.FLOAT16: 2, TensorMapDataType.FLOAT32: 4, TensorMapDataType.FLOAT64: 8,
    TensorMapDataType.BFLOAT16: 2, TensorMapDataType.FLOAT32_FTZ: 4,
    TensorMapDataType.TFLOAT32: 4, TensorMapDataType.TFLOAT32_FTZ: 4,
}
cdef frozenset _FLOAT_TYPES = frozenset([
    TensorMapDataType.FLOAT16, TensorMapDataType.FLOAT32, TensorMapDataType.FLOAT64,
    TensorMapDataType.BFLOAT16, TensorMapDataType.FLOAT32_FTZ, TensorMapDataType.TFLOAT32,
    TensorMapDataType.TFLOAT32_FTZ])
# NumPy dtypes with a tensor-map type of their own (by dtype name; bfloat16 is ml_dtypes').
cdef dict _DTYPE_TYPES = {
    "uint8": TensorMapDataType.UINT8, "uint16": TensorMapDataType.UINT16,
    "uint32": TensorMapDataType.UINT32, "int32": TensorMapDataType.INT32,
    "uint64": TensorMapDataType.UINT64, "int64": TensorMapDataType.INT64,
    "float16": TensorMapDataType.FLOAT16, "float32": TensorMapDataType.FLOAT32,
    "float64": TensorMapDataType.FLOAT64, "bfloat16": TensorMapDataType.BFLOAT16,
}
# The swizzle span in bytes: with interleave NONE, the inner box row must fit in it.
cdef dict _SWIZZLE_BYTES = {TensorMapSwizzle.SWIZZLE_32B: 32, TensorMapSwizzle.SWIZZLE_64B: 64,
                            TensorMapSwizzle.SWIZZLE_128B: 128}
cdef object _STRIDE_END = 1 << 40    # global strides must be below 2**40 bytes
cdef object _DIM_END = (1 << 32) + 1  # global dims must be at most 2**32


cdef str _members(object enum_cls):
    """The members of ``enum_cls`` as the error messages name them."""
    return ", ".join([f"{enum_cls.__name__}.{m.name}" for m in enum_cls])


cdef object _int_member(object value, str what, object enum_cls):
    """``value`` as a member of the IntEnum ``enum_cls`` (a member, or its int value)."""
    if isinstance(value, enum_cls):
        return value
    # A member of another enum (TensorMapSwizzle.NONE for interleave) is a mix-up, not an int.
    if isinstance(value, (bool, enum.Enum)) or not isinstance(value, int):
        raise TypeError(f"{what} must be a {enum_cls.__name__} ({_members(enum_cls)}), not "
                        f"{type(value).__name__}")
    try:
        return enum_cls(value)
    except ValueError:  # cuda.core: TypeError (an int that is no member is not the enum)
        raise ArgumentTypeError(f"{what} must be a {enum_cls.__name__} "
                                f"({_members(enum_cls)}), got {value!r}") from None


cdef tuple _int_tuple(object value, str what, int low, int high):
    """``value`` (a sequence of ints) as a tuple, each in [low, high]. A bad value that is not
    a tuple raises ``ArgumentTypeError``: cuda.core refuses every non-tuple with ``TypeError``."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        raise TypeError(f"{what} must be a tuple of ints, not {type(value).__name__}")
    error = ValueError if type(value) is tuple else ArgumentTypeError
    out = []
    for j, item in enumerate(value):
        if isinstance(item, bool):
            raise TypeError(f"{what}[{j}] must be an int, not bool")
        try:
            item = _index(item)
        except TypeError:
            raise TypeError(f"{what}[{j}] must be an int, not {type(item).__name__}") from None
        if not low <= item <= high:
            raise error(f"{what}[{j}] must be in [{low}, {high}], got {item}")
        out.append(item)
    if not 1 <= len(out) <= 5:
        raise error(f"{what} must have 1 to 5 entries (the tensor's rank), got {len(out)}")
    return tuple(out)


cdef object _data_type(object value, str what):
    """A ``data_type`` argument as a TensorMapDataType, or None for None."""
    if value is None or isinstance(value, TensorMapDataType):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return _int_member(value, what, TensorMapDataType)
    try:
        dtype = numpy.dtype(value)
    except TypeError:
        raise TypeError(f"{what} must be a TensorMapDataType or a NumPy dtype, not "
                        f"{type(value).__name__}") from None
    found = _DTYPE_TYPES.get(dtype.name)
    if found is None or dtype.byteorder == ">":
        raise ValueError(f"{what}: dtype {dtype} has no tensor-map type (supported: "
                         f"{', '.join(_DTYPE_TYPES)}; pass a TensorMapDataType of the same "
                         f"size to copy other types as raw bits)")
    return found


@dataclasses.dataclass
class TensorMapDescriptorOptions:
    """Options for :meth:`cuda_core.utils.StridedMemoryView.as_tensor_map`.

    All per-dimension tuples are in the tensor's own (row-major) order, as its ``shape``.

    Attributes
    ----------
    box_dim : tuple of int
        The tile that one TMA copy moves, in elements: one entry per dimension, each in
        [1, 256].
    element_strides : tuple of int, optional
        The traversal stride in each dimension, each in [1, 8]; None means all 1.
    data_type : TensorMapDataType or dtype-like, optional
        The element type; None infers it from the view's dtype. Another type counts the
        view's shape and strides in its own elements, so it may be no larger than the view's
        items.
    interleave : TensorMapInterleave
        Default ``NONE``.
    swizzle : TensorMapSwizzle
        Default ``NONE``.
    l2_promotion : TensorMapL2Promotion
        Default ``NONE``.
    oob_fill : TensorMapOOBFill
        Default ``NONE`` (zeros outside the tensor).
    """

    box_dim: tuple
    element_strides: tuple | None = None
    data_type: object = None
    interleave: TensorMapInterleave = TensorMapInterleave.NONE
    swizzle: TensorMapSwizzle = TensorMapSwizzle.NONE
    l2_promotion: TensorMapL2Promotion = TensorMapL2Promotion.NONE
    oob_fill: TensorMapOOBFill = TensorMapOOBFill.NONE

    def __post_init__(self):
        self.box_dim = _int_tuple(self.box_dim, "TensorMapDescriptorOptions.box_dim", 1, 256)
        if self.element_strides is not None:
            self.element_strides = _int_tuple(
                self.element_strides, "TensorMapDescriptorOptions.element_strides", 1, 8)
            if len(self.element_strides) != len(self.box_dim):
                raise ValueError(
                    f"TensorMapDescriptorOptions.element_strides has "
                    f"{len(self.element_strides)} entries but box_dim has {len(self.box_dim)}")
        self.data_type = _data_type(self.data_type, "TensorMapDescriptorOptions.data_type")
        self.interleave = _int_member(self.interleave, "TensorMapDescriptorOptions.interleave",
                                      TensorMapInterleave)
        self.swizzle = _int_member(self.swizzle, "TensorMapDescriptorOptions.swizzle",
                                   TensorMapSwizzle)
        self.l2_promotion = _int_member(self.l2_promotion,
                                        "TensorMapDescriptorOptions.l2_promotion",
                                        TensorMapL2Promotion)
        self.oob_fill = _int_member(self.oob_fill, "TensorMapDescriptorOptions.oob_fill",
                                    TensorMapOOBFill)


cdef class TensorMapDescriptor:
    """A TMA tensor map (``CUtensorMap``, 128 bytes) for devices of compute capability 9.0
    and up.

    Made by :meth:`cuda_core.utils.StridedMemoryView.as_tensor_map`; not constructible
    directly. Pass it to :func:`~cuda_core.launch` for a ``const __grid_constant__
    CUtensorMap`` kernel parameter: its 128 bytes are copied into the launch. The descriptor
    keeps the view it was made from (and so the memory's owner) alive; as for any kernel
    argument, the memory must stay alive until the kernels that use it have run.
    """

    def __cinit__(self):
        # The 64-byte aligned CUtensorMap inside _raw (CPython aligns objects to 16 bytes).
        self._map = <cydriver.CUtensorMap*>((<uintptr_t>self._raw + 63) & ~(<uintptr_t>63))
        memset(self._raw, 0, sizeof(self._raw))
        self._device_id = -1

    def __init__(self, *args, **kwargs):
        raise RuntimeError("TensorMapDescriptor cannot be instantiated directly: use "
                           "StridedMemoryView.as_tensor_map()")

    @property
    def device(self):
        """The :class:`~cuda_core.Device` of the memory the descriptor maps."""
        if self._device_id < 0:
            return None
        from cuda_core._device import Device
        return Device(self._device_id)

    def replace_address(self, tensor):
        """Point the descriptor at another tensor's memory, keeping every other field.

        Parameters
        ----------
        tensor : StridedMemoryView or object
            A view, or any object ``StridedMemoryView.from_any_interface`` takes (DLPack, CUDA
            Array Interface): device-accessible memory of the same device, 16-byte aligned
            (32 with ``INTERLEAVE_32B``). Its shape, strides and dtype are not compared: the
            descriptor keeps the ones it was made with.

        Raises
        ------
        ValueError
            If the memory is on another device or misaligned.

        Notes
        -----
        Calls ``cuTensorMapReplaceAddress``.
        """
        cdef StridedMemoryView view
        if isinstance(tensor, StridedMemoryView):
            view = <StridedMemoryView>tensor
        else:
            view = StridedMemoryView.from_any_interface(tensor, stream_ptr=-1)
        if not view._device_accessible or view._device_id < 0:
            raise ValueError("replace_address(): tensor must be device memory (a view with "
                             "device_id >= 0)")
        if view._device_id != self._device_id:
            raise ValueError(f"replace_address(): tensor is on device {view._device_id} but "
                             f"the descriptor maps memory of device {self._device_id}")
        cdef uintptr_t align = 32 if self._interleave == TensorMapInterleave.INTERLEAVE_32B \
            else 16
        if <uintptr_t>view._ptr % align:
            raise ValueError(f"replace_address(): the tensor's address {view._ptr:#x} is not "
                             f"{align}-byte aligned")
        cdef ContextGuard guard
        ensure_driver()
        enter_context(guard, primary_context(self._device_id)._handle)
        # Two replacements at once take turns, so that the descriptor ends up with one address
        # and holds that one's view. A launch with the descriptor on another thread meanwhile
        # copies its 128 bytes without a lock (docs/threads.rst: order it yourself).
        with cython.critical_section(self):
            HANDLE_RETURN(cydriver.cuTensorMapReplaceAddress(self._map, <void*>view._ptr))
            old, self._view = self._view, view
        old = None  # the previous view, dropped outside the section

    def __repr__(self):
        return f"<TensorMapDescriptor device={self._device_id} shape={self._shape}>"


def _from_view(StridedMemoryView view, box_dim, options, element_strides, data_type,
               interleave, swizzle, l2_promotion, oob_fill):
    """``StridedMemoryView.as_tensor_map``: every check, then ``cuTensorMapEncodeTiled``."""
    what = "as_tensor_map()"
    if options is not None:
        if box_dim is not None or any(v is not None for v in (
                element_strides, data_type, interleave, swizzle, l2_promotion, oob_fill)):
            raise TypeError(f"{what}: pass either options= or box_dim and the option keywords, "
                            f"not both")
        opts = check_or_create_options(TensorMapDescriptorOptions, options,
                                       f"{what}: options")
    else:
        if box_dim is None:
            raise TypeError(f"{what}: box_dim is required (or pass options=)")
        kwargs = {k: v for k, v in (("interleave", interleave), ("swizzle", swizzle),
                                    ("l2_promotion", l2_promotion), ("oob_fill", oob_fill))
                  if v is not None}
        opts = TensorMapDescriptorOptions(box_dim=box_dim, element_strides=element_strides,
                                          data_type=data_type, **kwargs)

    cdef int rank = view._ndim
    cdef int i, d
    if not 1 <= rank <= 5:
        raise ValueError(f"{what}: the tensor's rank must be 1 to 5, got {rank}")
    box = opts.box_dim
    if len(box) != rank:
        raise ValueError(f"{what}: box_dim has {len(box)} entries for a tensor of rank {rank}")
    strides_e = opts.element_strides if opts.element_strides is not None else (1,) * rank
    if len(strides_e) != rank:
        raise ValueError(f"{what}: element_strides has {len(strides_e)} entries for a tensor "
                         f"of rank {rank}")

    dtype = opts.data_type
    if dtype is None:
        if view._dtype is None:
            raise TypeError(f"{what}: the view has no dtype: pass data_type")
        dtype = _data_type(view._dtype, f"{what}: the view's dtype")
    # The view's shape and strides count data_type elements, as in cuda.core: a smaller type
    # reads within the view's memory; a larger one would read past its end.
    cdef Py_ssize_t esize = _TYPE_SIZE[dtype]
    if esize > view._itemsize:
        raise ValueError(f"{what}: data_type {dtype.name} is {esize} bytes per element but "
                         f"the view's items are {view._itemsize} bytes: counted in "
                         f"{dtype.name} elements, the view's shape and strides would reach "
                         f"past the end of its memory")
    if opts.oob_fill == TensorMapOOBFill.NAN_REQUEST_ZERO_FMA and dtype not in _FLOAT_TYPES:
        raise ValueError(f"{what}: oob_fill NAN_REQUEST_ZERO_FMA needs a floating-point "
                         f"data_type, got {dtype.name}")

    interleave_v = opts.interleave
    swizzle_v = opts.swizzle
    if interleave_v != TensorMapInterleave.NONE and rank < 3:
        raise ValueError(f"{what}: interleave {interleave_v.name} needs a tensor of rank 3 or "
                         f"more, got rank {rank}")
    if interleave_v == TensorMapInterleave.INTERLEAVE_32B \
            and swizzle_v != TensorMapSwizzle.SWIZZLE_32B:
        raise ValueError(f"{what}: interleave INTERLEAVE_32B needs swizzle SWIZZLE_32B, got "
                         f"{swizzle_v.name}")
    cdef uintptr_t align = 32 if interleave_v == TensorMapInterleave.INTERLEAVE_32B else 16
    if <uintptr_t>view._ptr % align:
        raise ValueError(f"{what}: the tensor's address {view._ptr:#x} is not {align}-byte "
                         f"aligned")

    shape = int_tuple(view._shape, rank)
    strides_b = tuple([s * esize for s in int_tuple(view._strides, rank)])  # in bytes
    for i in range(rank):
        if not 1 <= shape[i] < _DIM_END:
            raise ValueError(f"{what}: the tensor's dimension {i} has extent {shape[i]}; each "
                             f"must be in [1, 2**32]")
    if shape[rank - 1] > 1 and strides_b[rank - 1] != esize:
        raise ValueError(f"{what}: the tensor's last dimension must be contiguous (stride "
                         f"{esize} bytes), got {strides_b[rank - 1]} bytes")
    for i in range(rank - 1):
        if strides_b[i] <= 0 or strides_b[i] % align or strides_b[i] >= _STRIDE_END:
            raise ValueError(f"{what}: the tensor's stride {strides_b[i]} bytes in dimension "
                             f"{i} must be a positive multiple of {align} bytes below 2**40")
    if interleave_v == TensorMapInterleave.NONE:
        row = box[rank - 1] * esize
        if row % 16:
            raise ValueError(f"{what}: box_dim[{rank - 1}] * itemsize = {row} bytes must be a "
                             f"multiple of 16 bytes")
        span = _SWIZZLE_BYTES.get(swizzle_v)
        if span is not None and row > span:
            raise ValueError(f"{what}: box_dim[{rank - 1}] * itemsize = {row} bytes exceeds "
                             f"the {swizzle_v.name} span of {span} bytes")

    if not view._device_accessible or view._device_id < 0:
        raise ValueError(f"{what}: the view must be of device memory (device_id >= 0); TMA "
                         f"cannot read host memory")
    cdef int dev_id = view._device_id
    cdef int major = 0
    cdef cydriver.CUdevice device
    ensure_driver()
    HANDLE_RETURN(cydriver.cuDeviceGet(&device, dev_id))
    HANDLE_RETURN(cydriver.cuDeviceGetAttribute(
        &major, cydriver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device))
    if major < 9:
        raise RuntimeError(f"{what}: TMA needs a device of compute capability 9.0 or more; "
                           f"device {dev_id} is {major}.x")

    cdef uint64_t g_dim[5]
    cdef uint64_t g_strides[4]
    cdef uint32_t c_box[5]
    cdef uint32_t c_estr[5]
    # The driver's dimension 0 is the innermost: the reverse of the view's order.
    for d in range(rank):
        i = rank - 1 - d
        g_dim[d] = shape[i]
        c_box[d] = box[i]
        c_estr[d] = strides_e[i]
        if d > 0:
            g_strides[d - 1] = strides_b[i]
    cdef TensorMapDescriptor desc = TensorMapDescriptor.__new__(TensorMapDescriptor)
    cdef cydriver.CUtensorMapDataType c_type = <cydriver.CUtensorMapDataType><int>dtype
    cdef cydriver.CUtensorMapInterleave c_inter = <cydriver.CUtensorMapInterleave><int>interleave_v
    cdef cydriver.CUtensorMapSwizzle c_swz = <cydriver.CUtensorMapSwizzle><int>swizzle_v
    cdef cydriver.CUtensorMapL2promotion c_l2 = \
        <cydriver.CUtensorMapL2promotion><int>opts.l2_promotion
    cdef cydriver.CUtensorMapFloatOOBfill c_oob = \
        <cydriver.CUtensorMapFloatOOBfill><int>opts.oob_fill
    cdef ContextGuard guard
    # The encoding is host-side, but the driver may want a context; the device's primary one.
    enter_context(guard, primary_context(dev_id)._handle)
    HANDLE_RETURN(cydriver.cuTensorMapEncodeTiled(
        desc._map, c_type, <uint32_t>rank, <void*>view._ptr, g_dim, g_strides, c_box, c_estr,
        c_inter, c_swz, c_l2, c_oob))
    desc._device_id = dev_id
    desc._interleave = <int>interleave_v
    desc._shape = shape
    desc._view = view
    return desc
