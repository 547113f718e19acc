"""launch(): one kernel launch, at the cost of a C call to cuLaunchKernelEx.

The fast path (a Stream, a LaunchConfig, a Kernel and arguments of the param holder's exact
types) runs no Python-level function: the stream, config and kernel are read through their C
fields, the arguments are packed on the stack (``_kernel_args``), checked against the kernel's
parameter layout (kept on the Kernel in C), and the driver is called with the GIL released.

Device-dependent checks cost nothing on success: the driver refuses a block that is too large,
a cluster on a device without clusters, an oversized cooperative grid or too much dynamic
shared memory, and only then does :func:`_explain_refusal` work out which limit was crossed
and say so, with the limit in the message.
"""

from cuda.bindings cimport cydriver
from cpython.ref cimport PyObject
from cuda.bindings.cydriver cimport (CUcontext, CUdevice, CUfunction, CUlaunchAttribute,
                                     CUlaunchConfig, CUresult, CUstream, CUDA_SUCCESS)

from cuda_core._context cimport ContextGuard, enter_context, exit_context
from cuda_core._errors cimport HANDLE_RETURN, make_driver_error
from cuda_core._fastcall cimport (METH_FASTCALL, METH_KEYWORDS, PyCFunction, PyCFunction_NewEx,
                                   PyMethodDef)
from cuda_core._kernel_args cimport ParamHolder, holder_init, holder_release, pack_args
from cuda_core._launch_config cimport LAUNCH_ATTRS, LaunchConfig, fill_launch_config
from cuda_core._kernel cimport Kernel, kernel_function, kernel_param_layout
from cuda_core._stream cimport (Stream, as_stream, is_default_handle, is_foreign_stream,
                               protocol_stream_handle, wrap_handle)

import sys

from cuda_core._errors import CUDAError, CUDALaunchError


cdef extern from "Python.h":
    PyObject** PySequence_Fast_ITEMS(object sequence)

__all__ = ["launch"]


_LAUNCH_DOC = """launch(stream, config, kernel, *args)
--

Launch ``kernel`` on ``stream`` with ``config`` and the kernel's arguments.

.. note:: Calls ``cuLaunchKernelEx``, with the GIL released.

Parameters
----------
stream : Stream, GraphBuilder, or an object with ``__cuda_stream__``
    Where the launch is queued; a GraphBuilder (or a capturing stream) captures it into a
    graph instead.
config : LaunchConfig
    Grid, block, cluster, dynamic shared memory and launch flags.
kernel : Kernel
    The kernel, from :meth:`ObjectCode.get_kernel`.
*args
    The kernel's arguments, one per parameter: a :class:`Buffer` or any object with
    ``__cuda_array_interface__`` (its device pointer), an ``int`` (pointer-sized, or the width
    of a narrower integer parameter if its value fits), ``bool``, ``float`` (C ``double``, or
    float32 for a declared ``float``), ``complex`` (``complex<double>``), NumPy and ctypes
    scalars of the parameter's exact width, ctypes structures and NumPy structured scalars
    passed by value.

Raises
------
TypeError
    For a wrong argument count, an argument of unsupported type, an argument whose size
    differs from the kernel's parameter (the message names the index, the type, its size and
    the expected size), or, for a C++ kernel whose mangled name gives its parameter types, an
    argument of the wrong kind, such as a ``float`` for a pointer (the message names the
    index, the type and the parameter's declared type).
OverflowError
    For a Python ``int`` packed at a narrower parameter's width whose value does not fit the
    declared type, or a finite ``float`` beyond float32's range for a ``float``
    (``KernelArgumentOverflowError``, also a :class:`ValueError`).
CUDALaunchError
    For a launch configuration the device or kernel cannot run: the driver's refusal (its
    error name, e.g. ``CUDA_ERROR_INVALID_VALUE``, is in the message and in ``name``) with the
    limit that was crossed. It is both a :class:`CUDAError` and a :class:`ValueError`.
CUDAError
    For any other refusal by the driver.
"""


cdef object _launch(object module, PyObject** argv, Py_ssize_t nargs, PyObject* kwnames):
    # The C body of launch(): called by CPython with its arguments as an array (METH_FASTCALL),
    # so no tuple is built for the kernel's arguments; they are borrowed for the call.
    if kwnames != NULL and len(<tuple>kwnames) > 0:
        return _launch_with_keywords(argv, nargs, <tuple>kwnames)
    if nargs < 3:
        raise TypeError(f"launch() takes a stream, a LaunchConfig and a Kernel, then the "
                        f"kernel's arguments ({nargs} positional argument"
                        f"{'s' if nargs != 1 else ''} given)")
    stream = <object>argv[0]
    config = <object>argv[1]
    kernel = <object>argv[2]

    cdef Stream s
    cdef LaunchConfig cfg
    cdef Kernel k
    cdef ParamHolder h
    cdef CUlaunchConfig lc
    cdef CUlaunchAttribute attrs[LAUNCH_ATTRS]
    cdef const size_t* offsets
    cdef const size_t* sizes
    cdef Py_ssize_t n
    cdef CUresult err
    cdef CUcontext ctx = NULL
    cdef CUstream hstream
    cdef CUfunction func
    cdef ContextGuard guard
    cdef bint builder = False

    if type(config) is LaunchConfig or isinstance(config, LaunchConfig):
        cfg = <LaunchConfig>config
    else:
        raise TypeError(f"launch(): config must be a LaunchConfig, not {type(config).__name__}")
    if type(kernel) is Kernel or isinstance(kernel, Kernel):
        k = <Kernel>kernel
    else:
        raise TypeError(f"launch(): kernel must be a Kernel, not {type(kernel).__name__}")
    if type(stream) is Stream:
        s = <Stream>stream
    elif is_foreign_stream(stream):
        s = None
    else:
        s = as_stream(stream, "launch()")
        builder = not isinstance(stream, Stream)  # (neither a Stream nor foreign: a builder)
    if s is not None:
        if s._closed:
            s._check_open()  # raises
        func = kernel_function(k, s._ctx)  # reads the parameter layout on the first launch
        hstream = s._handle
        ctx = s._bind_ctx
    else:
        hstream = protocol_stream_handle(stream, "launch()")
        func = _foreign_stream_function(k, hstream)
    n = kernel_param_layout(k, &offsets, &sizes)
    if nargs - 3 != n:
        raise TypeError(f"launch(): the kernel takes {n} argument{'s' if n != 1 else ''}, "
                        f"{nargs - 3} given")

    fill_launch_config(cfg, hstream, &lc, attrs)

    # The kernel's CUfunction in the stream's (primary) context, or a CUkernel, which launches
    # in the context of its stream: either way the fast path makes no context switch. The
    # default-stream handles resolve against the current context: a device's bound default
    # stream makes its context current.
    # With no context current at all the driver refuses (CUDA_ERROR_INVALID_CONTEXT); the
    # stream's context is then pushed and the launch, which queued nothing, is retried.
    holder_init(&h, n)
    try:
        pack_args(&h, argv + 3, sizes, k._param_accepts)
        with nogil:
            if ctx != NULL:
                enter_context(guard, ctx)  # no push when ctx is already current
            err = cydriver.cuLaunchKernelEx(&lc, func, h.ptrs, NULL)
            if err == cydriver.CUDA_ERROR_INVALID_CONTEXT and not guard.pushed():
                with gil:
                    ctx = _stream_context(s, hstream)
                if ctx != NULL:
                    enter_context(guard, ctx)
                if guard.pushed():
                    err = cydriver.cuLaunchKernelEx(&lc, func, h.ptrs, NULL)
            exit_context(guard)
    finally:
        holder_release(&h)
    if err != CUDA_SUCCESS:
        try:
            if s is None:
                s = wrap_handle(<size_t>hstream, stream)
            _explain_refusal(err, s, cfg, k)
        except CUDALaunchError:
            raise
        except CUDAError:  # a diagnosis query failed too: the launch's own error says more
            raise _refusal(err, None) from None
    if builder:
        # Captured: the graph holds the kernel (its library) and the argument objects.
        stream._hold_captured([kernel] + [<object>argv[i] for i in range(3, nargs)])



cdef object _launch_with_keywords(PyObject** argv, Py_ssize_t nargs, tuple kwnames):
    """launch(...) with stream, config or kernel given by keyword, bound as Python would bind
    ``def launch(stream, config, kernel, *args)``; then the positional path."""
    cdef Py_ssize_t i
    cdef list given = [<object>argv[i] for i in range(nargs)]
    keywords = {kwnames[i]: <object>argv[nargs + i] for i in range(len(kwnames))}
    names = ("stream", "config", "kernel")
    for name in keywords:
        if name not in names:
            raise TypeError(f"launch() got an unexpected keyword argument {name!r}")
    for name in keywords:
        if names.index(name) < nargs:
            raise TypeError(f"launch() got multiple values for argument {name!r}")
    if nargs > 3:
        raise TypeError("launch(): stream, config and kernel come first; give them by position "
                        "when the kernel's arguments follow")
    for name in names[nargs:]:
        if name not in keywords:
            raise TypeError(f"launch() missing required argument {name!r}")
        given.append(keywords[name])
    cdef tuple positional = tuple(given)
    return _launch(None, PySequence_Fast_ITEMS(positional), 3, NULL)


cdef PyMethodDef _launch_def
cdef bytes _launch_doc_bytes = _LAUNCH_DOC.encode()  # kept alive: ml_doc points into it
_launch_def.ml_name = "launch"
_launch_def.ml_meth = <PyCFunction><void*>_launch  # a METH_FASTCALL function, cast as CPython does
_launch_def.ml_flags = METH_FASTCALL | METH_KEYWORDS
_launch_def.ml_doc = _launch_doc_bytes
launch = PyCFunction_NewEx(&_launch_def, sys.modules[__name__], __name__)

def _launch_handle(stream, kernel):
    """The address of the handle ``launch(stream, ..., kernel, ...)`` passes to
    cuLaunchKernelEx: the kernel's CUfunction in the stream's primary context, else its
    CUkernel. Private: for tests and for the C floor of ``benchmarks/launch_latency.py``, which
    must launch exactly what launch() launches."""
    if not isinstance(kernel, Kernel):
        raise TypeError(f"kernel must be a Kernel, not {type(kernel).__name__}")
    if is_foreign_stream(stream):
        return <size_t>_foreign_stream_function(
            <Kernel>kernel, protocol_stream_handle(stream, "_launch_handle()"))
    cdef Stream s = as_stream(stream, "_launch_handle()")
    return <size_t>kernel_function(<Kernel>kernel, s._ctx)


cdef CUfunction _foreign_stream_function(Kernel k, CUstream hstream) except? NULL:
    """The handle launch() passes for ``k`` on the stream a ``__cuda_stream__`` object names.

    The object is asked at each launch and no Stream is made for it, nor is the stream's
    context looked up: ``cuStreamGetCtx`` costs more than the driver's resolving the CUkernel,
    which launches in the context of its stream. The default-stream handles resolve against
    the current context, as the default-stream constants do.
    """
    if is_default_handle(hstream):
        return kernel_function(k, None)
    cdef const size_t* offsets
    cdef const size_t* sizes
    kernel_param_layout(k, &offsets, &sizes)  # read on the first launch
    return <CUfunction>k._handle


cdef CUcontext _stream_context(Stream s, CUstream hstream) noexcept:
    """The context in which a launch the driver refused for want of a current context is
    retried: the Stream's, or for a ``__cuda_stream__`` object (``s`` None) the one the driver
    names for its stream; NULL (no retry) for the unbound default streams."""
    cdef CUcontext ctx = NULL
    if s is not None:
        if s._ctx is not None:
            ctx = s._ctx._handle
    elif not is_default_handle(hstream):
        if cydriver.cuStreamGetCtx(hstream, &ctx) != CUDA_SUCCESS:
            ctx = NULL
    return ctx


cdef int _attr(cydriver.CUdevice_attribute attr, CUdevice dev) except? -1:
    cdef int value = 0
    HANDLE_RETURN(cydriver.cuDeviceGetAttribute(&value, attr, dev))
    return value


cdef int _kernel_attr(Kernel k, cydriver.CUfunction_attribute attr, CUdevice dev) except? -1:
    cdef int value = 0
    cdef CUresult err
    with nogil:  # may load the kernel on dev (DESIGN.md, the calls that wait)
        err = cydriver.cuKernelGetAttribute(&value, attr, k._handle, dev)
    HANDLE_RETURN(err)
    return value


cdef tuple _BLOCK_DIM_LIMITS = (cydriver.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
                                cydriver.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
                                cydriver.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)
cdef tuple _GRID_DIM_LIMITS = (cydriver.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
                               cydriver.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                               cydriver.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)


cdef tuple _over_limit(tuple dims, tuple limits, CUdevice dev):
    """``(i, limit)`` for the first dimension of ``dims`` over the device attribute
    ``limits[i]``; ``(-1, 0)`` when none is."""
    for i in range(3):
        limit = _attr(limits[i], dev)
        if dims[i] > limit:
            return i, limit
    return -1, 0


# The codes with which the driver refuses a launch for its configuration or arguments: a
# refusal with one of these is a CUDALaunchError even where no known limit explains it.
cdef tuple _CONFIG_REFUSALS = (cydriver.CUDA_ERROR_INVALID_VALUE,
                               cydriver.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                               cydriver.CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
                               cydriver.CUDA_ERROR_INVALID_CLUSTER_SIZE)


cdef object _refusal(CUresult err, str why):
    """The error for a refused launch: the driver's code, name and text, with ``why`` (the
    limit crossed) first when it is known. A CUDALaunchError when ``why`` is known or the code
    is one of the configuration refusals, else a CUDAError."""
    driver = make_driver_error(err)
    if why is None and <int>err not in _CONFIG_REFUSALS:
        return make_driver_error(err, "launch(): cuLaunchKernelEx failed")
    if why is None:
        message = f"launch(): cuLaunchKernelEx refused the launch: {driver.args[0]}"
    else:
        message = f"launch(): {why} (cuLaunchKernelEx: {driver.args[0]})"
    return CUDALaunchError(message, driver.code, driver.name, driver.explanation)


cdef int _explain_refusal(CUresult err, Stream s, LaunchConfig cfg, Kernel k) except -1:
    """The driver refused the launch: name the limit that was crossed, or raise its error."""
    cdef CUresult err2
    cdef int nthreads
    cdef CUdevice dev = 0
    cdef int blocks = 0
    cdef ContextGuard guard
    if s._ctx is not None:
        dev = s._ctx._device_id
    else:
        HANDLE_RETURN(cydriver.cuCtxGetDevice(&dev))
    block = cfg.block
    threads = block[0] * block[1] * block[2]
    limit = _attr(cydriver.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev)
    if threads > limit:
        raise _refusal(err, f"LaunchConfig.block={block} has {threads} threads; device "
                             f"{dev} allows at most {limit} per block")
    i, limit = _over_limit(block, _BLOCK_DIM_LIMITS, dev)
    if i >= 0:
        raise _refusal(err, f"LaunchConfig.block={block}: dimension {'xyz'[i]} is "
                             f"{block[i]}; device {dev} allows at most {limit}")
    kernel_limit = _kernel_attr(k, cydriver.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev)
    if threads > kernel_limit:
        raise _refusal(err, f"LaunchConfig.block={block} has {threads} threads; this "
                             f"kernel can run at most {kernel_limit} per block on device {dev} "
                             f"(its register or shared-memory use limits it)")
    grid = (cfg._grid[0] * cfg._cluster[0], cfg._grid[1] * cfg._cluster[1],
            cfg._grid[2] * cfg._cluster[2])
    i, limit = _over_limit(grid, _GRID_DIM_LIMITS, dev)
    if i >= 0:
        raise _refusal(err, f"the grid has {grid[i]} blocks in dimension "
                             f"{'xyz'[i]}; device {dev} allows at most {limit}")
    if cfg._has_cluster:
        major = _attr(cydriver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
        if major < 9:
            minor = _attr(cydriver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
            raise _refusal(err, f"LaunchConfig.cluster needs compute capability 9.0 or "
                                 f"newer; device {dev} is {major}.{minor}")
    if cfg._shmem_size:
        smem_limit = _kernel_attr(k, cydriver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                  dev)
        if cfg._shmem_size > smem_limit:
            optin = _attr(cydriver.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev)
            static = _kernel_attr(k, cydriver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, dev)
            most = optin - static
            if cfg._shmem_size <= most:
                raise _refusal(err,
                    f"LaunchConfig.shmem_size={cfg._shmem_size} bytes exceeds this kernel's "
                    f"dynamic shared memory limit of {smem_limit} bytes on device {dev}. Raise "
                    f"the limit first: kernel.attributes[{dev}].max_dynamic_shared_size_bytes "
                    f"= {cfg._shmem_size} (device {dev} allows up to {most} bytes for this "
                    f"kernel: {optin} opt-in minus {static} static)")
            raise _refusal(err,
                f"LaunchConfig.shmem_size={cfg._shmem_size} bytes is more dynamic shared "
                f"memory than device {dev} can give this kernel: at most {most} bytes per "
                f"block ({optin} opt-in minus {static} static)")
    if cfg._is_cooperative:
        if not _attr(cydriver.CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, dev):
            raise _refusal(err, f"device {dev} does not support cooperative launches")
        if s._ctx is not None:  # the occupancy of a CUkernel is asked in the current context
            enter_context(guard, s._ctx._handle)
        nthreads = threads
        with nogil:  # may load the kernel (DESIGN.md, the calls that wait)
            err2 = cydriver.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &blocks, <CUfunction>k._handle, nthreads, cfg._shmem_size)
        HANDLE_RETURN(err2)
        exit_context(guard)
        sms = _attr(cydriver.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)
        total = grid[0] * grid[1] * grid[2]
        if total > blocks * sms:
            raise _refusal(err,
                f"a cooperative grid must fit on the device at once: {total} blocks "
                f"requested, but at most {blocks * sms} fit on device {dev} ({blocks} per "
                f"multiprocessor x {sms} multiprocessors for this kernel, block and shared "
                f"memory size)")
    raise _refusal(err, None)
