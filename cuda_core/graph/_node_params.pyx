"""The parameters of a graph node, from the arguments of the builder that adds it.

Every builder of ``GraphDefinition`` and ``GraphNode`` that adds a kernel, memset or memcpy node
comes here first: the arguments are checked and translated into the driver's
``CUgraphNodeParams`` before any driver call, so a bad argument never reaches the graph. A
kernel node's arguments go through the param holder of :func:`launch` (``_kernel_args``) with
the same count, size and kind checks, and its config through ``fill_launch_config``, the one
translation of a LaunchConfig. Each function returns what the node uses (the kernel and its
argument objects, a memset's or memcpy's Buffers or owners): the definition holds it, and so
does every Graph instantiated from it.
"""

import sys

from cpython.ref cimport PyObject

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUdeviceptr, CUgraphNodeParams,
                                     CUlaunchAttribute, CUlaunchConfig)

from cuda_core._checks cimport check_address, check_int, check_size
from cuda_core._errors import InvalidValueError
from cuda_core._kernel cimport Kernel, kernel_param_layout
from cuda_core._kernel_args cimport ParamHolder, holder_init, pack_args
from cuda_core._launch_config cimport LAUNCH_ATTRS, LaunchConfig, fill_launch_config
from cuda_core._memory._buffer cimport Buffer


cdef extern from "Python.h":
    PyObject** PySequence_Fast_ITEMS(object sequence)


cdef list kernel_params(CUgraphNodeParams* params, ParamHolder* holder, object config,
                        object kernel, tuple args, str what):
    cdef CUlaunchConfig lc
    cdef CUlaunchAttribute attrs[LAUNCH_ATTRS]
    cdef const size_t* offsets
    cdef const size_t* sizes
    if not isinstance(config, LaunchConfig):
        raise TypeError(f"{what}: config must be a LaunchConfig, not {type(config).__name__}")
    cdef LaunchConfig cfg = <LaunchConfig>config
    fill_launch_config(cfg, NULL, &lc, attrs)
    if lc.numAttrs:
        # A kernel node's parameters have no launch attributes; refused rather than dropped.
        raise ValueError(f"{what}: a kernel node cannot take a LaunchConfig with a cluster, "
                         f"is_cooperative or programmatic_stream_serialization (as in "
                         f"cuda.core); launch such a kernel with launch() or capture it with "
                         f"a GraphBuilder")
    if not isinstance(kernel, Kernel):
        raise TypeError(f"{what}: kernel must be a Kernel, not {type(kernel).__name__}")
    cdef Kernel k = <Kernel>kernel
    cdef Py_ssize_t n = kernel_param_layout(k, &offsets, &sizes)
    if len(args) != n:
        raise TypeError(f"{what}: the kernel takes {n} argument{'s' if n != 1 else ''}, "
                        f"{len(args)} given")
    holder_init(holder, n)
    pack_args(holder, PySequence_Fast_ITEMS(args), sizes, k._param_accepts)
    params.type = cydriver.CU_GRAPH_NODE_TYPE_KERNEL
    params.kernel.gridDimX = lc.gridDimX
    params.kernel.gridDimY = lc.gridDimY
    params.kernel.gridDimZ = lc.gridDimZ
    params.kernel.blockDimX = lc.blockDimX
    params.kernel.blockDimY = lc.blockDimY
    params.kernel.blockDimZ = lc.blockDimZ
    params.kernel.sharedMemBytes = lc.sharedMemBytes
    params.kernel.kernelParams = holder.ptrs
    params.kernel.kern = k._handle   # func stays NULL: the CUkernel runs in ctx
    return [k, args]


cdef tuple _operand(object obj, object owner, str name, str what):
    """``(address, bytes available or None when not known, object to hold)`` for a memset or
    memcpy operand: a Buffer (held itself, its size known) or a raw address (``owner`` held)."""
    if isinstance(obj, Buffer):
        if owner is not None:
            raise ValueError(f"{what}: {name}_owner is only for a raw address; a Buffer {name} "
                             f"is held by the graph itself")
        (<Buffer>obj)._check_open()
        return (<Buffer>obj)._ptr, (<Buffer>obj)._size, obj
    cdef CUdeviceptr ptr = check_address(obj, f"{what}: {name}")
    if ptr == 0:
        raise InvalidValueError(f"{what}: {name} is a null pointer")
    return ptr, None, owner


cdef int _check_extent(object limit, object extent, str name, str what) except -1:
    if limit is not None and extent > limit:
        raise ValueError(f"{what}: the operation spans {extent} bytes of {name}, a Buffer of "
                         f"{limit} bytes")
    return 0


cdef tuple _memset_value(object value, str what):
    """``(value, element size)`` of a memset's fill value: an int is one byte (a bool is 0 or
    1, as for cuda.core); an object with the buffer protocol of 1, 2 or 4 bytes (a NumPy or
    ctypes scalar) gives its bits."""
    if isinstance(value, int):
        return check_int(value, f"{what}: value (a one-byte fill)", 0, 255), 1
    try:
        view = memoryview(value)
    except TypeError:
        raise TypeError(f"{what}: value must be an int (a byte, 0 to 255) or an object of 1, 2 "
                        f"or 4 bytes with the buffer protocol (such as numpy.uint16(7)), not "
                        f"{type(value).__name__}") from None
    size = view.nbytes
    if size not in (1, 2, 4):
        raise ValueError(f"{what}: value must have 1, 2 or 4 bytes, {type(value).__name__} "
                         f"has {size}")
    return int.from_bytes(view.tobytes(), sys.byteorder), size


cdef list memset_params(CUgraphNodeParams* params, object dst, object value, object width,
                        object height, object pitch, object dst_owner, str what):
    ptr, limit, held = _operand(dst, dst_owner, "dst", what)
    fill, elsize = _memset_value(value, what)
    width = check_int(width, f"{what}: width", 1, 2**64 - 1)
    height = check_int(height, f"{what}: height", 1, 2**64 - 1)
    pitch = check_int(pitch, f"{what}: pitch", 0, 2**64 - 1)
    row = width * elsize
    if height > 1 and pitch < row:
        raise ValueError(f"{what}: pitch ({pitch} bytes) is smaller than a row ({width} "
                         f"elements of {elsize} bytes)")
    if ptr % elsize:
        raise ValueError(f"{what}: dst {ptr:#x} is not aligned to the {elsize}-byte elements")
    _check_extent(limit, row if height == 1 else pitch * (height - 1) + row, "dst", what)
    params.type = cydriver.CU_GRAPH_NODE_TYPE_MEMSET
    params.memset.dst = <CUdeviceptr>ptr
    params.memset.pitch = <size_t>pitch
    params.memset.value = <unsigned int>fill
    params.memset.elementSize = <unsigned int>elsize
    params.memset.width = <size_t>width
    params.memset.height = <size_t>height
    return [held]


cdef list memcpy_params(CUgraphNodeParams* params, object dst, object src, object size,
                        object dst_owner, object src_owner, str what):
    dst_ptr, dst_limit, dst_held = _operand(dst, dst_owner, "dst", what)
    src_ptr, src_limit, src_held = _operand(src, src_owner, "src", what)
    cdef size_t nbytes = check_size(size, f"{what}: size")
    if nbytes == 0:
        raise InvalidValueError(f"{what}: size must be at least 1 byte")
    _check_extent(dst_limit, nbytes, "dst", what)
    _check_extent(src_limit, nbytes, "src", what)
    params.type = cydriver.CU_GRAPH_NODE_TYPE_MEMCPY
    # Unified addressing: the driver tells device from pinned host memory by the address.
    params.memcpy.copyParams.srcMemoryType = cydriver.CU_MEMORYTYPE_UNIFIED
    params.memcpy.copyParams.srcDevice = <CUdeviceptr>src_ptr
    params.memcpy.copyParams.dstMemoryType = cydriver.CU_MEMORYTYPE_UNIFIED
    params.memcpy.copyParams.dstDevice = <CUdeviceptr>dst_ptr
    params.memcpy.copyParams.WidthInBytes = nbytes
    params.memcpy.copyParams.Height = 1
    params.memcpy.copyParams.Depth = 1
    return [dst_held, src_held]
