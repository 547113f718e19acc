"""The floors of the project's benchmark scripts beyond launches (the launch floors,
``launch_loop``, ``python_floor``, ``graph_launch_loop``, ``graph_python_floor`` and
``retain_user_object``, are in ``cuda_core.bench._floor``, which every wheel has):

* the floors of ``graph_explicit.py``: ``graph_build_chain`` (one graph of a chain of kernel
  nodes, kept for a proof), ``graph_build_loop`` (cuGraphCreate, the chain, cuGraphDestroy),
  ``graph_instantiate_loop`` (cuGraphInstantiateWithParams + cuGraphExecDestroy),
  ``kernel_node_set_loop`` (cuGraphKernelNodeSetParams) and ``exec_kernel_node_set_loop``
  (cuGraphExecKernelNodeSetParams), each in a C loop on parameters prepared once;
* the floors of ``ipc.py``, one per side of each exchange: ``ipc_export_floor``
  (cuMemPoolExportPointer), ``ipc_import_floor`` (cuMemPoolImportPointer, one
  cuPointerGetAttributes, cuMemFreeAsync), ``event_export_floor`` (cuEventCreate,
  cuEventRecord, cuIpcGetEventHandle) with ``event_destroy_floor``, ``event_import_floor``
  (cuIpcOpenEventHandle, cuStreamWaitEvent, cuEventDestroy); and what proves their inputs:
  ``ipc_import_read`` and ``event_open``.

Built as ``cuda_core._bench_floor``, beside the package's modules, so that they call the driver
exactly as the package does (through cuda.bindings.cydriver). Only ``benchmarks/`` uses it, and
only a build with ``CUDA_CORE_BENCH=1`` has it (benchmarks/README.md); the user wheel leaves it
out.
"""

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUcontext, CUDA_GRAPH_INSTANTIATE_PARAMS,
                                     CUDA_KERNEL_NODE_PARAMS, CUdeviceptr, CUevent, CUgraph,
                                     CUgraphExec, CUgraphNode, CUipcEventHandle, CUkernel,
                                     CUmemoryPool, CUmemPoolPtrExportData, CUpointer_attribute,
                                     CUresult, CUstream)
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset

from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._clock cimport now_ns
from cuda_core.bench._floor cimport pack

# The launch floors too, for the scripts that take every floor from this module.
from cuda_core.bench._floor import (graph_launch_loop, graph_python_floor, launch_loop,
                                    python_floor, retain_user_object)

__all__ = []


cdef class _PreparedNode:
    """A kernel node's parameters set up once in C, as the package's graph nodes give them:
    the ``CUkernel`` to run in ``ctx`` (``func`` NULL), grid, block, no shared memory, and each
    argument's bytes as kernelParams."""
    cdef CUDA_KERNEL_NODE_PARAMS p
    cdef void** params
    cdef char* storage

    def __cinit__(self, size_t kernel, size_t ctx, tuple grid, tuple block, list arguments):
        memset(&self.p, 0, sizeof(self.p))
        pack(arguments, &self.params, &self.storage)
        self.p.gridDimX, self.p.gridDimY, self.p.gridDimZ = grid
        self.p.blockDimX, self.p.blockDimY, self.p.blockDimZ = block
        self.p.kernelParams = self.params
        self.p.kern = <CUkernel>kernel
        self.p.ctx = <CUcontext>ctx

    def __dealloc__(self):
        free(self.params)
        free(self.storage)


cdef CUresult _add_chain(CUgraph graph, const CUDA_KERNEL_NODE_PARAMS* p, Py_ssize_t nodes,
                         CUgraphNode* out) noexcept nogil:
    """Add ``nodes`` kernel nodes to ``graph``, each depending on the one before; the handles
    go to ``out`` where it is not NULL."""
    cdef CUgraphNode prev = NULL, node = NULL
    cdef CUresult err = cydriver.CUDA_SUCCESS
    cdef Py_ssize_t j
    for j in range(nodes):
        err = cydriver.cuGraphAddKernelNode(&node, graph, &prev if j else NULL,
                                            1 if j else 0, p)
        if err != cydriver.CUDA_SUCCESS:
            break
        if out != NULL:
            out[j] = node
        prev = node
    return err


def graph_build_chain(size_t kernel, size_t ctx, tuple grid, tuple block, list arguments,
                      Py_ssize_t nodes):
    """One graph of ``nodes`` kernel nodes in a chain, as :func:`graph_build_loop` builds it,
    kept: ``(graph, [node, ...])`` as addresses, the nodes in chain order. The caller destroys
    the graph (``cuGraphDestroy``)."""
    cdef _PreparedNode p = _PreparedNode(kernel, ctx, grid, block, arguments)
    cdef CUgraph graph = NULL
    cdef CUgraphNode* handles
    cdef CUresult err
    cdef Py_ssize_t j
    if nodes < 1:
        raise ValueError(f"nodes must be at least 1, not {nodes}")
    handles = <CUgraphNode*>malloc(sizeof(CUgraphNode) * nodes)
    if handles == NULL:
        raise MemoryError()
    try:
        HANDLE_RETURN(cydriver.cuGraphCreate(&graph, 0))
        err = _add_chain(graph, &p.p, nodes, handles)
        if err != cydriver.CUDA_SUCCESS:
            cydriver.cuGraphDestroy(graph)
            HANDLE_RETURN(err)
        return <size_t>graph, [<size_t>handles[j] for j in range(nodes)]
    finally:
        free(handles)


def graph_build_loop(size_t kernel, size_t ctx, tuple grid, tuple block, list arguments,
                     Py_ssize_t nodes, Py_ssize_t count):
    """``count`` times: cuGraphCreate, ``nodes`` × cuGraphAddKernelNode in a chain (the
    parameters prepared once), cuGraphDestroy; return the elapsed nanoseconds."""
    cdef _PreparedNode p = _PreparedNode(kernel, ctx, grid, block, arguments)
    cdef CUgraph graph = NULL
    cdef CUresult err = cydriver.CUDA_SUCCESS, gone
    cdef long long start, stop
    cdef Py_ssize_t i
    with nogil:
        start = now_ns()
        for i in range(count):
            err = cydriver.cuGraphCreate(&graph, 0)
            if err != cydriver.CUDA_SUCCESS:
                break
            err = _add_chain(graph, &p.p, nodes, NULL)
            gone = cydriver.cuGraphDestroy(graph)
            if err == cydriver.CUDA_SUCCESS:
                err = gone
            if err != cydriver.CUDA_SUCCESS:
                break
        stop = now_ns()
    HANDLE_RETURN(err)
    return stop - start


def graph_instantiate_loop(size_t graph, Py_ssize_t count):
    """``count`` times: cuGraphInstantiateWithParams of ``graph`` (no flags, no upload stream)
    in the current context, then cuGraphExecDestroy; return the elapsed nanoseconds."""
    cdef CUDA_GRAPH_INSTANTIATE_PARAMS params
    cdef CUgraphExec gexec = NULL
    cdef CUresult err = cydriver.CUDA_SUCCESS
    cdef long long start, stop
    cdef Py_ssize_t i
    memset(&params, 0, sizeof(params))
    with nogil:
        start = now_ns()
        for i in range(count):
            err = cydriver.cuGraphInstantiateWithParams(&gexec, <CUgraph>graph, &params)
            if err != cydriver.CUDA_SUCCESS:
                break
            err = cydriver.cuGraphExecDestroy(gexec)
            if err != cydriver.CUDA_SUCCESS:
                break
        stop = now_ns()
    HANDLE_RETURN(err)
    return stop - start


def kernel_node_set_loop(size_t node, size_t kernel, size_t ctx, tuple grid, tuple block,
                         list arguments_a, list arguments_b, Py_ssize_t count):
    """``count`` × cuGraphKernelNodeSetParams on a definition's kernel node, the parameters
    with ``arguments_a`` and with ``arguments_b`` (prepared once) in turn, ``a`` first; return
    the elapsed nanoseconds."""
    cdef _PreparedNode a = _PreparedNode(kernel, ctx, grid, block, arguments_a)
    cdef _PreparedNode b = _PreparedNode(kernel, ctx, grid, block, arguments_b)
    cdef CUresult err = cydriver.CUDA_SUCCESS
    cdef long long start, stop
    cdef Py_ssize_t i
    with nogil:
        start = now_ns()
        for i in range(count):
            err = cydriver.cuGraphKernelNodeSetParams(<CUgraphNode>node,
                                                      &b.p if i & 1 else &a.p)
            if err != cydriver.CUDA_SUCCESS:
                break
        stop = now_ns()
    HANDLE_RETURN(err)
    return stop - start


def exec_kernel_node_set_loop(size_t graph_exec, size_t node, size_t kernel, size_t ctx,
                              tuple grid, tuple block, list arguments_a, list arguments_b,
                              Py_ssize_t count):
    """``count`` × cuGraphExecKernelNodeSetParams on the node of an executable graph, the
    parameters with ``arguments_a`` and with ``arguments_b`` (prepared once) in turn, ``a``
    first; return the elapsed nanoseconds."""
    cdef _PreparedNode a = _PreparedNode(kernel, ctx, grid, block, arguments_a)
    cdef _PreparedNode b = _PreparedNode(kernel, ctx, grid, block, arguments_b)
    cdef CUresult err = cydriver.CUDA_SUCCESS
    cdef long long start, stop
    cdef Py_ssize_t i
    with nogil:
        start = now_ns()
        for i in range(count):
            err = cydriver.cuGraphExecKernelNodeSetParams(<CUgraphExec>graph_exec,
                                                          <CUgraphNode>node,
                                                          &b.p if i & 1 else &a.p)
            if err != cydriver.CUDA_SUCCESS:
                break
        stop = now_ns()
    HANDLE_RETURN(err)
    return stop - start


# -- ipc.py: both sides of an IPC exchange --------------------------------------------------------

# One exported pool allocation and one exported event, in bytes.
cdef Py_ssize_t _PTR_EXPORT = sizeof(CUmemPoolPtrExportData)
cdef Py_ssize_t _EVENT_EXPORT = sizeof(CUipcEventHandle)


cdef Py_ssize_t _records(bytes payload, Py_ssize_t size, Py_ssize_t count) except -1:
    """Check that ``payload`` holds ``count`` records of ``size`` bytes."""
    if count < 0:
        raise ValueError(f"count must be >= 0, not {count}")
    if len(payload) != size * count:
        raise ValueError(f"payload has {len(payload)} bytes, not {count} x {size}")
    return count


def ipc_export_floor(list ptrs, Py_ssize_t count):
    """cuMemPoolExportPointer on ``ptrs[0:count]`` (pool allocations), in a C loop.

    Returns ``(ns, payload)``: the elapsed nanoseconds and the ``count`` exported
    ``CUmemPoolPtrExportData`` records back to back (64 bytes each).
    """
    cdef CUdeviceptr* addresses
    cdef CUmemPoolPtrExportData* out
    cdef CUresult err = cydriver.CUDA_SUCCESS
    cdef long long start, stop
    cdef Py_ssize_t i
    if count < 0 or count > len(ptrs):
        raise ValueError(f"count must be between 0 and len(ptrs) = {len(ptrs)}, not {count}")
    addresses = <CUdeviceptr*>malloc(sizeof(CUdeviceptr) * (count + 1))
    out = <CUmemPoolPtrExportData*>malloc(sizeof(CUmemPoolPtrExportData) * (count + 1))
    try:
        if addresses == NULL or out == NULL:
            raise MemoryError()
        for i in range(count):
            addresses[i] = <CUdeviceptr><size_t>ptrs[i]
        with nogil:
            start = now_ns()
            for i in range(count):
                err = cydriver.cuMemPoolExportPointer(&out[i], addresses[i])
                if err != cydriver.CUDA_SUCCESS:
                    break
            stop = now_ns()
        HANDLE_RETURN(err)
        return stop - start, PyBytes_FromStringAndSize(<char*>out, _PTR_EXPORT * count)
    finally:
        free(addresses)
        free(out)


cdef CUresult _import_checked(CUdeviceptr* ptr, CUmemoryPool pool,
                              CUmemPoolPtrExportData* data) noexcept nogil:
    """cuMemPoolImportPointer, then one cuPointerGetAttributes for the range start and size
    and the device (what an import that checks the stated size asks). ``ptr[0]`` stays 0
    unless the import succeeded; the caller frees it then, whatever the attributes gave."""
    cdef CUpointer_attribute attrs[3]
    cdef void* values[3]
    cdef CUdeviceptr range_start = 0
    cdef size_t range_size = 0
    cdef int ordinal = -1
    cdef CUresult err = cydriver.cuMemPoolImportPointer(ptr, pool, data)
    if err != cydriver.CUDA_SUCCESS:
        return err
    attrs[0] = cydriver.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR
    attrs[1] = cydriver.CU_POINTER_ATTRIBUTE_RANGE_SIZE
    attrs[2] = cydriver.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    values[0] = &range_start
    values[1] = &range_size
    values[2] = &ordinal
    return cydriver.cuPointerGetAttributes(3, attrs, values, ptr[0])


def ipc_import_floor(size_t pool, bytes payload, Py_ssize_t count, size_t stream):
    """``count`` times, in a C loop: cuMemPoolImportPointer of the next record of ``payload``
    (from :func:`ipc_export_floor`) into the imported ``pool``, one cuPointerGetAttributes
    (range start, range size, device ordinal), and cuMemFreeAsync on ``stream``. Returns the
    elapsed nanoseconds; the caller synchronizes ``stream`` before the exporter frees."""
    cdef CUmemPoolPtrExportData* data
    cdef CUdeviceptr ptr = 0
    cdef CUresult err = cydriver.CUDA_SUCCESS
    cdef long long start, stop
    cdef Py_ssize_t i
    _records(payload, _PTR_EXPORT, count)
    # A copy: the driver takes the record through a non-const pointer.
    data = <CUmemPoolPtrExportData*>malloc(sizeof(CUmemPoolPtrExportData) * (count + 1))
    if data == NULL:
        raise MemoryError()
    try:
        memcpy(data, PyBytes_AS_STRING(payload), _PTR_EXPORT * count)
        with nogil:
            start = now_ns()
            for i in range(count):
                ptr = 0
                err = _import_checked(&ptr, <CUmemoryPool>pool, &data[i])
                if ptr != 0:
                    if err == cydriver.CUDA_SUCCESS:
                        err = cydriver.cuMemFreeAsync(ptr, <CUstream>stream)
                    else:
                        cydriver.cuMemFreeAsync(ptr, <CUstream>stream)
                if err != cydriver.CUDA_SUCCESS:
                    break
            stop = now_ns()
        HANDLE_RETURN(err)
        return stop - start
    finally:
        free(data)


def ipc_import_read(size_t pool, bytes payload, size_t nbytes, size_t stream):
    """Import the one record of ``payload`` into ``pool`` as :func:`ipc_import_floor` does,
    read its first ``nbytes`` (cuMemcpyDtoH), free it on ``stream`` and synchronize: the proof
    that the floor's pool and records name the exporter's memory. Returns the bytes read."""
    cdef CUmemPoolPtrExportData data
    cdef CUdeviceptr ptr = 0
    cdef CUresult err, gone
    cdef char* into
    _records(payload, _PTR_EXPORT, 1)
    memcpy(&data, PyBytes_AS_STRING(payload), _PTR_EXPORT)
    out = PyBytes_FromStringAndSize(NULL, nbytes)  # new, so still writable
    into = PyBytes_AS_STRING(out)
    with nogil:
        err = _import_checked(&ptr, <CUmemoryPool>pool, &data)
        if err == cydriver.CUDA_SUCCESS:
            err = cydriver.cuMemcpyDtoH(into, ptr, nbytes)
        if ptr != 0:
            gone = cydriver.cuMemFreeAsync(ptr, <CUstream>stream)
            if err == cydriver.CUDA_SUCCESS:
                err = gone
            gone = cydriver.cuStreamSynchronize(<CUstream>stream)
            if err == cydriver.CUDA_SUCCESS:
                err = gone
    HANDLE_RETURN(err)
    return out


def event_export_floor(size_t stream, Py_ssize_t count):
    """``count`` times, in a C loop: cuEventCreate (interprocess, no timing), cuEventRecord on
    ``stream``, cuIpcGetEventHandle. Returns ``(ns, payload, events)``: the elapsed
    nanoseconds, the ``count`` handles back to back (64 bytes each), and the events (ints)
    for :func:`event_destroy_floor`, which the exporter calls once the importer is done."""
    cdef CUevent* events
    cdef CUipcEventHandle* handles
    cdef CUresult err = cydriver.CUDA_SUCCESS
    cdef long long start, stop
    cdef Py_ssize_t i, made = 0
    cdef unsigned int flags = cydriver.CU_EVENT_INTERPROCESS | cydriver.CU_EVENT_DISABLE_TIMING
    if count < 0:
        raise ValueError(f"count must be >= 0, not {count}")
    events = <CUevent*>malloc(sizeof(CUevent) * (count + 1))
    handles = <CUipcEventHandle*>malloc(sizeof(CUipcEventHandle) * (count + 1))
    try:
        if events == NULL or handles == NULL:
            raise MemoryError()
        with nogil:
            start = now_ns()
            for i in range(count):
                err = cydriver.cuEventCreate(&events[i], flags)
                if err != cydriver.CUDA_SUCCESS:
                    break
                made = i + 1
                err = cydriver.cuEventRecord(events[i], <CUstream>stream)
                if err != cydriver.CUDA_SUCCESS:
                    break
                err = cydriver.cuIpcGetEventHandle(&handles[i], events[i])
                if err != cydriver.CUDA_SUCCESS:
                    break
            stop = now_ns()
            if err != cydriver.CUDA_SUCCESS:
                for i in range(made):
                    cydriver.cuEventDestroy(events[i])
        HANDLE_RETURN(err)
        return (stop - start, PyBytes_FromStringAndSize(<char*>handles, _EVENT_EXPORT * count),
                [<size_t>events[i] for i in range(count)])
    finally:
        free(events)
        free(handles)


def event_destroy_floor(list events):
    """cuEventDestroy on each of ``events`` (from :func:`event_export_floor`), in a C loop;
    returns the elapsed nanoseconds. Every event is destroyed, also after a failure."""
    cdef Py_ssize_t n = len(events), i
    cdef CUevent* handles = <CUevent*>malloc(sizeof(CUevent) * (n + 1))
    cdef CUresult err = cydriver.CUDA_SUCCESS, gone
    cdef long long start, stop
    if handles == NULL:
        raise MemoryError()
    try:
        for i in range(n):
            handles[i] = <CUevent><size_t>events[i]
        with nogil:
            start = now_ns()
            for i in range(n):
                gone = cydriver.cuEventDestroy(handles[i])
                if err == cydriver.CUDA_SUCCESS:
                    err = gone
            stop = now_ns()
        HANDLE_RETURN(err)
        return stop - start
    finally:
        free(handles)


def event_import_floor(bytes payload, Py_ssize_t count, size_t stream):
    """``count`` times, in a C loop: cuIpcOpenEventHandle of the next handle of ``payload``
    (from :func:`event_export_floor`, in another process) in the current context,
    cuStreamWaitEvent of ``stream`` on it, cuEventDestroy. Returns the elapsed nanoseconds."""
    cdef CUipcEventHandle* handles
    cdef CUevent event = NULL
    cdef CUresult err = cydriver.CUDA_SUCCESS, gone
    cdef long long start, stop
    cdef Py_ssize_t i
    _records(payload, _EVENT_EXPORT, count)
    handles = <CUipcEventHandle*>malloc(sizeof(CUipcEventHandle) * (count + 1))
    if handles == NULL:
        raise MemoryError()
    try:
        memcpy(handles, PyBytes_AS_STRING(payload), _EVENT_EXPORT * count)
        with nogil:
            start = now_ns()
            for i in range(count):
                err = cydriver.cuIpcOpenEventHandle(&event, handles[i])
                if err != cydriver.CUDA_SUCCESS:
                    break
                err = cydriver.cuStreamWaitEvent(<CUstream>stream, event, 0)
                gone = cydriver.cuEventDestroy(event)
                if err == cydriver.CUDA_SUCCESS:
                    err = gone
                if err != cydriver.CUDA_SUCCESS:
                    break
            stop = now_ns()
        HANDLE_RETURN(err)
        return stop - start
    finally:
        free(handles)


def event_open(bytes payload):
    """cuIpcOpenEventHandle of the one handle in ``payload``, in the current context: the
    event (an int) for a proof that the floor's handles name the exporter's event. The caller
    destroys it (cuEventDestroy)."""
    cdef CUipcEventHandle handle
    cdef CUevent event = NULL
    cdef CUresult err
    _records(payload, _EVENT_EXPORT, 1)
    memcpy(&handle, PyBytes_AS_STRING(payload), _EVENT_EXPORT)
    with nogil:
        err = cydriver.cuIpcOpenEventHandle(&event, handle)
    HANDLE_RETURN(err)
    return <size_t>event
