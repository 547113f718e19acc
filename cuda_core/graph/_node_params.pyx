"""The parameters of a graph node, from the arguments of the builder that adds it.

Every builder of ``GraphDefinition`` and ``GraphNode`` comes here first: the arguments are
checked and translated into the driver's ``CUgraphNodeParams`` before any driver call that
changes the graph, so a bad argument never reaches it. A kernel node's arguments go through the
param holder of :func:`launch` (``_kernel_args``) with the same count, size and kind checks, and
its config through ``fill_launch_config``, the one translation of a LaunchConfig. The kernel,
memset, memcpy and event functions return what the node uses (the kernel and its argument
objects, a memset's or memcpy's Buffers or owners, the event): the definition holds it, and so
does every Graph instantiated from it. The argument checks that node updates share (a node's
event, a switch's branch count, the current context, a child graph's nodes) are here too.
"""

import sys

from cpython.ref cimport PyObject

from libc.string cimport memset as c_memset
from libcpp.vector cimport vector

from cuda.bindings cimport cydriver
from cuda_core cimport _cuda_compat
from cuda.bindings.cydriver cimport (CUcontext, CUdevice, CUdeviceptr, CUgraph,
                                     CUgraphConditionalNodeType, CUgraphNode, CUgraphNodeParams,
                                     CUgraphNodeType, CUlaunchAttribute, CUlaunchConfig,
                                     CUmemAccessDesc)

from cuda_core._checks cimport check_address, check_int, check_ordinal, check_size
from cuda_core._checks import SizeOverflowError
from cuda_core._driver cimport device_count
from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._errors import InvalidValueError
from cuda_core._event cimport Event
from cuda_core._kernel cimport Kernel, kernel_param_layout
from cuda_core._kernel_args cimport ParamHolder, holder_init, pack_args
from cuda_core._launch_config cimport LAUNCH_ATTRS, LaunchConfig, fill_launch_config
from cuda_core._memory._buffer cimport Buffer
from cuda_core.graph._condition cimport GraphCondition

from cuda_core.typing import GraphConditionalType, GraphMemoryType

# (GraphConditionalType.IF: IF is a word of Cython's own; an if/else node is an IF node with
# two bodies.)
cdef dict COND_TYPES = {
    cydriver.CU_GRAPH_COND_TYPE_IF: GraphConditionalType("if"),
    cydriver.CU_GRAPH_COND_TYPE_WHILE: GraphConditionalType("while"),
    cydriver.CU_GRAPH_COND_TYPE_SWITCH: GraphConditionalType("switch"),
}


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


cdef int _ordinal(object device, str what) except -1:
    ordinal = check_ordinal(getattr(device, "device_id", device), what)
    if ordinal >= device_count():
        raise ValueError(f"{what} {ordinal} is out of range: there are {device_count()} "
                         f"devices")
    return ordinal


cdef int alloc_params(CUgraphNodeParams* params, vector[CUmemAccessDesc]& access,
                      object size, object device, object memory_type, object peer_access,
                      str what) except -1:
    cdef CUdevice dev = 0
    cdef size_t nbytes = check_size(size, f"{what}: size")
    if nbytes == 0:
        raise InvalidValueError(f"{what}: size must be at least 1 byte")
    try:
        kind = GraphMemoryType(memory_type)
    except ValueError:
        raise ValueError(f"{what}: memory_type must be one of "
                         f"{[m.value for m in GraphMemoryType]}, not {memory_type!r}") from None
    if device is None:
        current_ctx(what)
        HANDLE_RETURN(cydriver.cuCtxGetDevice(&dev))
    else:
        dev = _ordinal(device, f"{what}: device")
    peers = () if peer_access is None else tuple(peer_access)
    params.type = cydriver.CU_GRAPH_NODE_TYPE_MEM_ALLOC
    params.alloc.bytesize = nbytes
    params.alloc.poolProps.allocType = cydriver.CU_MEM_ALLOCATION_TYPE_PINNED
    params.alloc.poolProps.location.type = cydriver.CU_MEM_LOCATION_TYPE_DEVICE
    params.alloc.poolProps.location.id = dev
    if kind == GraphMemoryType.HOST:
        params.alloc.poolProps.location.type = cydriver.CU_MEM_LOCATION_TYPE_HOST
        params.alloc.poolProps.location.id = 0
    elif kind == GraphMemoryType.MANAGED:
        params.alloc.poolProps.allocType = _cuda_compat.CU_MEM_ALLOCATION_TYPE_MANAGED
    access.resize(len(peers))
    for i, peer in enumerate(peers):
        c_memset(&access[i], 0, sizeof(CUmemAccessDesc))
        access[i].location.type = cydriver.CU_MEM_LOCATION_TYPE_DEVICE
        access[i].location.id = _ordinal(peer, f"{what}: peer_access[{i}]")
        access[i].flags = cydriver.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    params.alloc.accessDescs = access.data()
    params.alloc.accessDescCount = access.size()
    return 0


cdef int free_params(CUgraphNodeParams* params, object dptr, str what) except -1:
    cdef CUdeviceptr ptr = check_address(dptr, f"{what}: dptr")
    if ptr == 0:
        raise InvalidValueError(f"{what}: dptr is a null pointer")
    params.type = cydriver.CU_GRAPH_NODE_TYPE_MEM_FREE
    params.free.dptr = ptr
    return 0


cdef list event_params(CUgraphNodeParams* params, object event, bint record, str what):
    check_event(event, what)
    if record:
        params.type = cydriver.CU_GRAPH_NODE_TYPE_EVENT_RECORD
        params.eventRecord.event = (<Event>event)._handle
    else:
        params.type = cydriver.CU_GRAPH_NODE_TYPE_WAIT_EVENT
        params.eventWait.event = (<Event>event)._handle
    return [event]


cdef int conditional_params(CUgraphNodeParams* params, GraphCondition condition,
                            CUgraphConditionalNodeType kind, unsigned int count) except -1:
    params.type = cydriver.CU_GRAPH_NODE_TYPE_CONDITIONAL
    params.conditional.handle = condition._handle
    params.conditional.type = kind
    params.conditional.size = count
    return 0


# -- the checks node updates share --------------------------------------------------------------

cdef CUcontext current_ctx(str what) except? NULL:
    cdef CUcontext ctx = NULL
    HANDLE_RETURN(cydriver.cuCtxGetCurrent(&ctx))
    if ctx == NULL:
        raise RuntimeError(f"{what}: no CUDA context is current on this thread; call "
                           f"Device(i).set_current() first")
    return ctx


cdef int check_event(object event, str what) except -1:
    if not isinstance(event, Event):
        raise TypeError(f"{what}: event must be an Event, not {type(event).__name__}")
    (<Event>event)._check_open()
    return 0


cdef unsigned int switch_count(object count, str what) except? 0:
    value = check_int(count, f"{what}: count")
    if 1 <= value <= 0xFFFFFFFF:
        return value
    raise (InvalidValueError if value == 0 else SizeOverflowError)(
        f"{what}: count must be between 1 and 4294967295, got {value}")


cdef dict _NOT_IN_CHILD = {
    cydriver.CU_GRAPH_NODE_TYPE_MEM_ALLOC: "an allocation node",
    cydriver.CU_GRAPH_NODE_TYPE_MEM_FREE: "a free node",
    cydriver.CU_GRAPH_NODE_TYPE_CONDITIONAL: "a conditional node",
}


cdef int check_child(CUgraph graph, str what) except -1:
    """Refuse a child graph with nodes the driver does not take in one (at any depth)."""
    cdef size_t count = 0
    cdef vector[CUgraphNode] handles
    cdef CUgraphNodeType kind
    cdef CUgraph inner = NULL
    cdef size_t i
    HANDLE_RETURN(cydriver.cuGraphGetNodes(graph, NULL, &count))
    handles.resize(count)
    if count:
        HANDLE_RETURN(cydriver.cuGraphGetNodes(graph, handles.data(), &count))
    for i in range(min(count, handles.size())):
        HANDLE_RETURN(cydriver.cuGraphNodeGetType(handles[i], &kind))
        if kind in _NOT_IN_CHILD:
            raise ValueError(f"{what}: the child graph has {_NOT_IN_CHILD[kind]}, which a "
                             f"child graph cannot have")
        if kind == cydriver.CU_GRAPH_NODE_TYPE_GRAPH:
            HANDLE_RETURN(cydriver.cuGraphChildGraphNodeGetGraph(handles[i], &inner))
            check_child(inner, what)
    return 0
