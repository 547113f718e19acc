"""The views a :class:`~cuda_core.Kernel` hands out: :class:`KernelAttributes` (its attributes on
one device, ``cuKernelGetAttribute``), :class:`KernelOccupancy` (the ``cuOccupancy*`` queries),
and the named tuples they and the Kernel return, :class:`ParamInfo` and
:class:`MaxPotentialBlockSizeOccupancyResult`.

A view holds its kernel (kept alive) and the kernel's ``CUkernel``; it does not cimport the
Kernel class, so that ``_kernel`` can cimport the views' makers.
"""

import sys
import threading
from collections import namedtuple

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUfunction, CUkernel, CUlaunchAttribute, CUlaunchConfig,
                                     CUresult)

from cuda_core._checks cimport check_driver_int, check_int, check_size
from cuda_core._context cimport current_ordinal
from cuda_core._driver cimport device_count
from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._launch_config cimport LAUNCH_ATTRS, as_launch_config, fill_launch_config
from cuda_core._stream cimport Stream, as_stream

from cuda.bindings import driver as _driver_py

__all__ = ["KernelAttributes", "KernelOccupancy", "MaxPotentialBlockSizeOccupancyResult",
           "ParamInfo"]


ParamInfo = namedtuple("ParamInfo", ["offset", "size"], module=__name__)
ParamInfo.__doc__ = "One kernel parameter: its byte ``offset`` in the parameter buffer and ``size``."

MaxPotentialBlockSizeOccupancyResult = namedtuple("MaxPotentialBlockSizeOccupancyResult",
                                                  ["min_grid_size", "max_block_size"],
                                                  module=__name__)
MaxPotentialBlockSizeOccupancyResult.__doc__ = (
    "``min_grid_size``: the smallest grid that reaches the highest occupancy; "
    "``max_block_size``: the largest block size that reaches it.")



# -- KernelAttributes ---------------------------------------------------------------------------

cdef KernelAttributes make_attributes(object kernel, CUkernel handle, int device):
    cdef KernelAttributes attrs = KernelAttributes.__new__(KernelAttributes)
    attrs._kernel = kernel
    attrs._handle = handle
    attrs._device = device
    return attrs


def _attribute(cydriver.CUfunction_attribute attr, str doc, bint is_bool=False,
               str setter_name=None):
    """The property of :class:`KernelAttributes` that reads ``attr`` on the view's device (as a
    bool when ``is_bool``), and sets it when ``setter_name`` (the name its errors give) is given.
    """
    def fget(KernelAttributes self):
        value = self._get(attr)
        return value != 0 if is_bool else value
    if setter_name is None:
        return property(fget, None, None, doc)
    def fset(KernelAttributes self, value):
        self._set(attr, value, setter_name)
    return property(fget, fset, None, doc)


cdef class KernelAttributes:
    """A kernel's attributes on one device: the current device (the one of the context current
    at each read, device 0 when none is) for ``kernel.attributes``, a fixed one for
    ``kernel.attributes[dev]``. Values are read at each access.

    .. note:: Calls ``cuKernelGetAttribute``.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("KernelAttributes cannot be instantiated directly; use "
                           "Kernel.attributes")

    def __getitem__(self, device):
        """The attributes on ``device`` (a Device or an ordinal)."""
        ordinal = check_int(device, "KernelAttributes[device]", 0)
        count = device_count()
        if ordinal >= count:
            raise ValueError(f"KernelAttributes[device]: device {ordinal} is out of range "
                             f"(this machine has {count} devices)")
        return make_attributes(self._kernel, self._handle, ordinal)

    cdef int _set(self, cydriver.CUfunction_attribute attr, object value, str name) except -1:
        cdef int v = check_int(value, f"KernelAttributes.{name}", -1, 0x7FFFFFFF)
        cdef int dev = self._device if self._device >= 0 else current_ordinal()
        cdef CUresult err
        with nogil:  # may load the kernel on dev (DESIGN.md, the calls that wait)
            err = cydriver.cuKernelSetAttribute(attr, v, self._handle, dev)
        HANDLE_RETURN(err)
        return 0

    cdef int _get(self, cydriver.CUfunction_attribute attr) except? -1:
        cdef int value = 0
        cdef int dev = self._device if self._device >= 0 else current_ordinal()
        cdef CUresult err
        with nogil:  # may load the kernel on dev (DESIGN.md, the calls that wait)
            err = cydriver.cuKernelGetAttribute(&value, attr, self._handle, dev)
        HANDLE_RETURN(err)
        return value

    @property
    def device_id(self):
        """The ordinal of the device these attributes are read for."""
        return self._device if self._device >= 0 else current_ordinal()

    max_threads_per_block = _attribute(
        cydriver.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        """int: the most threads per block a launch of this kernel can have.""")
    shared_size_bytes = _attribute(
        cydriver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
        """int: statically allocated shared memory per block, in bytes.""")
    const_size_bytes = _attribute(
        cydriver.CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES,
        """int: user constant memory the kernel uses, in bytes.""")
    local_size_bytes = _attribute(
        cydriver.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
        """int: local memory per thread, in bytes.""")
    num_regs = _attribute(
        cydriver.CU_FUNC_ATTRIBUTE_NUM_REGS,
        """int: registers per thread.""")
    ptx_version = _attribute(
        cydriver.CU_FUNC_ATTRIBUTE_PTX_VERSION,
        """int: the PTX virtual architecture the kernel was compiled for, major*10+minor.""")
    binary_version = _attribute(
        cydriver.CU_FUNC_ATTRIBUTE_BINARY_VERSION,
        """int: the binary architecture the kernel was compiled for, major*10+minor.""")
    cache_mode_ca = _attribute(
        cydriver.CU_FUNC_ATTRIBUTE_CACHE_MODE_CA,
        """bool: whether the kernel was compiled with ``-Xptxas --dlcm=ca``.""", is_bool=True)
    max_dynamic_shared_size_bytes = _attribute(
        cydriver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        """int: the most dynamic shared memory a launch may request, in bytes. Settable, up to
        the device's opt-in limit minus the kernel's static shared memory (raising it above
        48 KiB is how a kernel gets more; ``cuKernelSetAttribute``).""",
        setter_name="max_dynamic_shared_size_bytes")
    preferred_shared_memory_carveout = _attribute(
        cydriver.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
        """int: the preferred shared memory carveout, in percent (-1: no preference).
        Settable (``cuKernelSetAttribute``).""",
        setter_name="preferred_shared_memory_carveout")
    cluster_size_must_be_set = _attribute(
        cydriver.CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET,
        """bool: whether a launch must give a cluster size.""", is_bool=True)
    required_cluster_width = _attribute(
        cydriver.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
        """int: the cluster width the kernel was compiled for (0: none).""")
    required_cluster_height = _attribute(
        cydriver.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
        """int: the cluster height the kernel was compiled for (0: none).""")
    required_cluster_depth = _attribute(
        cydriver.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH,
        """int: the cluster depth the kernel was compiled for (0: none).""")
    non_portable_cluster_size_allowed = _attribute(
        cydriver.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
        """bool: whether the kernel may launch with a non-portable cluster size.""", is_bool=True)
    cluster_scheduling_policy_preference = _attribute(
        cydriver.CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
        """int: the block scheduling policy (a ``CUclusterSchedulingPolicy`` value).""")

    def __repr__(self):
        where = "current device" if self._device < 0 else f"device {self._device}"
        return f"<KernelAttributes of {self._kernel!r} on the {where}>"


# -- KernelOccupancy ----------------------------------------------------------------------------

cdef KernelOccupancy make_occupancy(object kernel, CUkernel handle):
    cdef KernelOccupancy occ = KernelOccupancy.__new__(KernelOccupancy)
    occ._kernel = kernel
    occ._handle = handle
    return occ


# cuOccupancyMaxPotentialBlockSize takes a plain C function (no user data) for a dynamic shared
# memory size that depends on the block size. A Python callable is reached through this
# trampoline; the driver calls it synchronously on the calling thread, and a re-entrant lock
# (saving and restoring the slots) keeps concurrent and nested queries apart.
_b2d_lock = threading.RLock()
cdef object _b2d_callable = None
cdef object _b2d_error = None


cdef size_t _b2d_trampoline(int block_size) noexcept with gil:
    global _b2d_error
    if _b2d_error is not None:
        return 0
    try:
        value = _b2d_callable(block_size)
        return check_size(value, "the dynamic_shared_memory_needed callable's result")
    except BaseException as exc:
        _b2d_error = exc
        return 0


cdef size_t _b2d_function_address(object wrapper) except? 0:
    """The C function a ``cuda.bindings.driver.CUoccupancyB2DSize`` stands for.

    The wrapper is made in one of two ways. ``CUoccupancyB2DSize(_ptr=address)``, the form
    cuda.core documents, wraps the function's own address: ``getPtr()`` returns it, while
    ``int()`` would read the 8 bytes of machine code stored there. ``CUoccupancyB2DSize(address)``
    stores the address in the wrapper's own memory: ``int()`` returns it, while ``getPtr()``
    points into the wrapper. Which one it is shows from where ``getPtr()`` points.
    """
    cdef size_t where = <size_t>wrapper.getPtr()
    cdef size_t start = <size_t>id(wrapper)
    if start <= where < start + <size_t>sys.getsizeof(wrapper):
        return <size_t>int(wrapper)
    return where


cdef class KernelOccupancy:
    """Occupancy queries for a kernel, answered for the device of the current context (or of
    the stream, for the cluster queries). Needs a current context.

    .. note:: Calls the ``cuOccupancy*`` functions with the ``CUkernel`` cast to a
       ``CUfunction``, as the driver documents for context-less kernels.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("KernelOccupancy cannot be instantiated directly; use "
                           "Kernel.occupancy")

    def max_active_blocks_per_multiprocessor(self, block_size, dynamic_shared_memory_size):
        """The most blocks of ``block_size`` threads that can be resident on one
        multiprocessor at once.

        Parameters
        ----------
        block_size : int
        dynamic_shared_memory_size : int
            Dynamic shared memory per block, in bytes (0 for none).

        Returns
        -------
        int

        Notes
        -----
        Calls ``cuOccupancyMaxActiveBlocksPerMultiprocessor``.
        """
        cdef int bs = check_driver_int(block_size, "block_size", 1)
        cdef size_t smem = check_size(dynamic_shared_memory_size, "dynamic_shared_memory_size")
        cdef int n = 0
        cdef CUresult err
        with nogil:
            err = cydriver.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &n, <CUfunction>self._handle, bs, smem)
        HANDLE_RETURN(err)
        return n

    def max_potential_block_size(self, dynamic_shared_memory_needed, block_size_limit):
        """The block size that reaches the highest occupancy, and the smallest grid that does.

        Parameters
        ----------
        dynamic_shared_memory_needed : int, callable or cuda.bindings.driver.CUoccupancyB2DSize
            Dynamic shared memory per block in bytes; or a Python callable taking a block size
            and returning the bytes it needs (called by the driver during the query, on this
            thread; an exception it raises is re-raised here); or a C function
            ``size_t f(int block_size)`` as a ``CUoccupancyB2DSize``, made from its address
            with ``CUoccupancyB2DSize(_ptr=address)`` (as for cuda.core) or
            ``CUoccupancyB2DSize(address)``. The driver calls a C function with the GIL
            released; a ctypes callback takes the GIL itself.
        block_size_limit : int
            The largest block size the kernel is designed for; 0 for no limit.

        Returns
        -------
        MaxPotentialBlockSizeOccupancyResult
            ``(min_grid_size, max_block_size)``.

        Notes
        -----
        Calls ``cuOccupancyMaxPotentialBlockSize``.
        """
        global _b2d_callable, _b2d_error
        cdef int min_grid = 0, block = 0
        cdef int limit = check_int(block_size_limit, "block_size_limit", 0, 0x7FFFFFFF)
        cdef size_t smem = 0
        cdef cydriver.CUoccupancyB2DSize fn = NULL
        cdef CUfunction func = <CUfunction>self._handle
        cdef CUresult err
        need = dynamic_shared_memory_needed
        if isinstance(need, _driver_py.CUoccupancyB2DSize):
            fn = <cydriver.CUoccupancyB2DSize><size_t>_b2d_function_address(need)
            if fn == NULL:
                raise ValueError("dynamic_shared_memory_needed: the CUoccupancyB2DSize is NULL")
        elif isinstance(need, int):  # a bool too, as for cuda.core
            smem = check_size(need, "dynamic_shared_memory_needed")
        elif callable(need):
            with _b2d_lock:
                saved = (_b2d_callable, _b2d_error)
                _b2d_callable, _b2d_error = need, None
                try:
                    with nogil:  # as below; the trampoline takes the GIL for the callable
                        err = cydriver.cuOccupancyMaxPotentialBlockSize(
                            &min_grid, &block, func, _b2d_trampoline, 0, limit)
                    raised = _b2d_error
                finally:
                    _b2d_callable, _b2d_error = saved
            if raised is not None:
                raise raised
            HANDLE_RETURN(err)
            return MaxPotentialBlockSizeOccupancyResult(min_grid, block)
        else:
            raise TypeError(f"dynamic_shared_memory_needed must be an int, a callable or a "
                            f"CUoccupancyB2DSize, not {type(need).__name__}")
        with nogil:
            err = cydriver.cuOccupancyMaxPotentialBlockSize(&min_grid, &block, func, fn, smem,
                                                            limit)
        HANDLE_RETURN(err)
        return MaxPotentialBlockSizeOccupancyResult(min_grid, block)

    def available_dynamic_shared_memory_per_block(self, num_blocks_per_multiprocessor,
                                                  block_size):
        """The dynamic shared memory each block can have, in bytes, with
        ``num_blocks_per_multiprocessor`` blocks of ``block_size`` threads resident per
        multiprocessor.

        .. note:: Calls ``cuOccupancyAvailableDynamicSMemPerBlock``.
        """
        cdef int blocks = check_int(num_blocks_per_multiprocessor,
                                    "num_blocks_per_multiprocessor", 1, 0x7FFFFFFF)
        cdef int bs = check_driver_int(block_size, "block_size", 1)
        cdef size_t smem = 0
        cdef CUresult err
        with nogil:
            err = cydriver.cuOccupancyAvailableDynamicSMemPerBlock(
                &smem, <CUfunction>self._handle, blocks, bs)
        HANDLE_RETURN(err)
        return smem

    def max_potential_cluster_size(self, config, *, stream):
        """The largest cluster size this kernel can launch with under ``config``.

        Parameters
        ----------
        config : LaunchConfig
            Any object with ``grid``, ``block``, ``cluster`` (3-tuples or ints; ``cluster`` may
            be None) and ``shmem_size`` (int or None) attributes. With a cluster, ``grid``
            counts clusters, as in LaunchConfig.
        stream : Stream
            Keyword-only: the stream the kernel would be launched on (a Stream or any
            ``__cuda_stream__`` object); its device answers.

        Returns
        -------
        int

        Notes
        -----
        Calls ``cuOccupancyMaxPotentialClusterSize``; needs compute capability 9.0.
        """
        return self._cluster_query(cydriver.cuOccupancyMaxPotentialClusterSize, config, stream,
                                   "max_potential_cluster_size()")

    def max_active_clusters(self, config, *, stream):
        """The most clusters of ``config.cluster`` that can be resident on the device at once.

        Parameters
        ----------
        config : LaunchConfig
            As for :meth:`max_potential_cluster_size`; ``cluster`` should be set unless the
            kernel was compiled with a required cluster size.
        stream : Stream
            Keyword-only: the stream the kernel would be launched on.

        Returns
        -------
        int

        Notes
        -----
        Calls ``cuOccupancyMaxActiveClusters``; needs compute capability 9.0.
        """
        return self._cluster_query(cydriver.cuOccupancyMaxActiveClusters, config, stream,
                                   "max_active_clusters()")

    cdef int _cluster_query(self, _ClusterQuery query, object config, object stream,
                            str what) except? -1:
        """``query`` (one of the two cluster occupancy functions, which take the same
        arguments) for ``config`` on ``stream``'s device, as the launcher would launch it."""
        cdef CUlaunchConfig cfg
        cdef CUlaunchAttribute attrs[LAUNCH_ATTRS]
        cdef int result = 0
        cdef CUresult err
        cdef Stream s = as_stream(stream, f"{what}: stream")
        fill_launch_config(as_launch_config(config, what), s._handle, &cfg, attrs)
        with nogil:
            err = query(&result, <CUfunction>self._handle, &cfg)
        HANDLE_RETURN(err)
        return result
