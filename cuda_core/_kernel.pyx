"""Kernels: :class:`Kernel`, a ``CUkernel`` of a loaded library, ready to launch, with its
parameter layout (read once, kept in C for the launcher) and its ``CUfunction`` in each
device's primary context.

A Kernel holds its :class:`~cuda_core.ObjectCode` (and so the loaded library) and is counted
there while it lives: the library is not unloaded under it.
"""

cimport cython
from libc.stdlib cimport calloc, free, malloc
from libcpp.vector cimport vector

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUDA_SUCCESS, CUcontext, CUfunction, CUkernel, CUresult

from cuda_core._atomic cimport store_count, store_function, store_functions
from cuda_core._checks cimport check_int
from cuda_core._context cimport (Context, ContextGuard, adopt_primary, enter_context,
                                 exit_context, primary_context)
from cuda_core._driver cimport device_count, ensure_driver
from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._kernel_views cimport make_attributes, make_occupancy
from cuda_core._object_code cimport ObjectCode, count_kernel, kernel_of
from cuda_core._param_types cimport param_table, table_types

from cuda.bindings import driver as _driver_py

from cuda_core._kernel_views import ParamInfo

__all__ = ["Kernel"]


cdef Kernel make_kernel(CUkernel handle, ObjectCode owner):
    cdef Kernel k = Kernel.__new__(Kernel)
    k._handle = handle
    k._num_params = -1
    k._param_offsets = NULL
    k._param_sizes = NULL
    k._param_accepts = NULL
    k._functions = NULL
    k._num_functions = 0
    if owner is not None:
        k._owner = owner
        count_kernel(owner, 1)
    return k


@cython.no_gc_clear  # __dealloc__ reads _owner: the collector must not clear it first
cdef class Kernel:
    """A kernel of loaded code (a ``CUkernel``), ready to launch.

    Not constructible directly: use :meth:`ObjectCode.get_kernel` or :meth:`from_handle`. A
    Kernel keeps its :class:`ObjectCode` (and so the loaded library) alive. Kernels compare
    equal, and hash alike, when their handles are equal.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Kernel objects cannot be instantiated directly; use "
                           "ObjectCode.get_kernel() or Kernel.from_handle()")

    def __dealloc__(self):
        if self._param_offsets != NULL and self._param_offsets != self._inline_offsets:
            free(self._param_offsets)
        self._param_offsets = NULL
        self._param_sizes = NULL
        self._param_accepts = NULL  # points into _param_table, which Cython releases
        free(self._functions)
        self._functions = NULL
        if self._owner is not None:
            count_kernel(self._owner, -1)

    @staticmethod
    def from_handle(handle, mod=None):
        """Wrap an existing ``CUkernel``.

        Parameters
        ----------
        handle : int or cuda.bindings.driver.CUkernel
            The kernel's address.
        mod : ObjectCode, optional
            The code the kernel belongs to; the Kernel keeps it (and its library) alive.
            Without it, the caller keeps the library loaded while the Kernel is used.
        """
        if isinstance(handle, _driver_py.CUkernel):
            address = int(handle)
        else:
            address = check_int(handle, "Kernel.from_handle(): handle", 0, 0xFFFFFFFFFFFFFFFF)
        if address == 0:
            raise ValueError("Kernel.from_handle(): handle is NULL")
        if mod is None:
            return make_kernel(<CUkernel><size_t>address, None)
        if not isinstance(mod, ObjectCode):
            raise TypeError(f"Kernel.from_handle(): mod must be an ObjectCode or None, not "
                            f"{type(mod).__name__}")
        return kernel_of(<ObjectCode>mod, <CUkernel><size_t>address)

    @property
    def handle(self):
        """The ``cuda.bindings.driver.CUkernel`` (``int(kernel.handle)`` is its address)."""
        return _driver_py.CUkernel(<size_t>self._handle)

    cdef int _load_param_info(self) except -1:
        cdef vector[size_t] offsets
        cdef vector[size_t] sizes
        cdef size_t index = 0, offset = 0, size = 0, n, i
        cdef CUresult err
        cdef size_t* block
        cdef const char* symbol = NULL
        cdef bytes table = None
        cdef CUcontext current = NULL
        cdef ContextGuard guard
        if load_count(&self._num_params) >= 0:
            return 0
        ensure_driver()
        # The driver reads the parameters in a context (it may load the kernel there first): a
        # thread with none current borrows device 0's primary context, the device Device()
        # means when no context is current.
        HANDLE_RETURN(cydriver.cuCtxGetCurrent(&current))
        if current == NULL:
            enter_context(guard, primary_context(0)._handle)
        while True:
            with nogil:  # the first query may load the kernel (DESIGN.md, the calls that wait)
                err = cydriver.cuKernelGetParamInfo(self._handle, index, &offset, &size)
            if err == cydriver.CUDA_ERROR_INVALID_VALUE:  # past the last parameter
                break
            HANDLE_RETURN(err)
            offsets.push_back(offset)
            sizes.push_back(size)
            index += 1
        # The declared types, from the kernel's symbol: a C++ kernel's mangled name lists
        # them. They only add a check, so a driver that cannot name the kernel leaves them
        # unknown.
        if (cydriver.cuKernelGetName(&symbol, self._handle) == CUDA_SUCCESS
                and symbol != NULL):
            table = param_table(symbol, <Py_ssize_t>offsets.size())
        exit_context(guard)
        n = offsets.size()
        # Published once, whole: another thread may have finished first while the name was
        # parsed (in Python), and its layout may be in use already.
        with cython.critical_section(self):
            if self._num_params >= 0:
                return 0
            if table is not None:
                self._param_table = table
                self._param_accepts = <const unsigned char*><const char*>table
            if n <= KERNEL_INLINE_PARAMS:
                self._param_offsets = self._inline_offsets
                self._param_sizes = self._inline_sizes
            else:
                block = <size_t*>malloc(2 * n * sizeof(size_t))
                if block == NULL:
                    raise MemoryError()
                self._param_offsets = block
                self._param_sizes = block + n
            for i in range(n):
                self._param_offsets[i] = offsets[i]
                self._param_sizes[i] = sizes[i]
            store_count(&self._num_params, <Py_ssize_t>n)
        return 0

    cdef CUfunction _launch_function(self, Context ctx) except? NULL:
        """The handle a launch in ``ctx`` passes to the driver; reads the parameter layout
        on the first call.

        In a primary context (``ctx`` is ours and lives as long as the process), the kernel's
        CUfunction there, looked up once and kept by device ordinal. Otherwise the CUkernel,
        which the driver resolves at each launch: ``ctx`` is None for the default-stream
        constants (the launching thread's current context decides), and a context that is
        not ours could be destroyed and its address reused, which a kept CUfunction could not
        tell.
        """
        cdef CUresult err
        cdef CUfunction func = NULL
        cdef CUfunction* functions
        cdef int count
        cdef ContextGuard guard
        cdef bint primary = ctx is not None and ctx._is_primary
        # The driver calls below need the launch's context current; once the layout is read,
        # a launch in a context that is not primary makes none.
        if ctx is not None and (primary or load_count(&self._num_params) < 0):
            enter_context(guard, ctx._handle)
        self._load_param_info()
        if not primary:
            return <CUfunction>self._handle
        with nogil:  # loads the kernel in ctx when it is not yet (DESIGN.md, the calls that wait)
            err = cydriver.cuKernelGetFunction(&func, self._handle)
        HANDLE_RETURN(err)
        exit_context(guard)
        if load_functions(&self._functions) == NULL:
            count = device_count()
            with cython.critical_section(self):  # one block, however many threads get here
                if self._functions == NULL:
                    functions = <CUfunction*>calloc(count, sizeof(CUfunction))
                    if functions == NULL:
                        raise MemoryError()
                    self._num_functions = count
                    store_functions(&self._functions, functions)
        if ctx._device_id < self._num_functions:
            store_function(&self._functions[ctx._device_id], func)
        return func

    cdef CUfunction _current_function(self, CUcontext current) except? NULL:
        """The slow half of ``kernel_function`` for the unbound default streams: ``current``
        is the calling thread's current context (NULL for none). A primary one, also one made
        active by another library, gets its CUfunction looked up and kept; any other context
        gets the CUkernel, which the driver resolves at each launch."""
        cdef int ordinal = adopt_primary(current)
        if ordinal >= 0:
            return self._launch_function(primary_context(ordinal))
        return self._launch_function(None)

    @property
    def num_arguments(self):
        """The number of parameters of the kernel.

        .. note:: Read once with ``cuKernelGetParamInfo``.
        """
        cdef const size_t* offsets
        cdef const size_t* sizes
        return kernel_param_layout(self, &offsets, &sizes)

    @property
    def arguments_info(self):
        """``list[ParamInfo]``: the byte offset and size of each parameter, in order.

        .. note:: Read once with ``cuKernelGetParamInfo``.
        """
        cdef const size_t* offsets
        cdef const size_t* sizes
        cdef Py_ssize_t n = kernel_param_layout(self, &offsets, &sizes)
        return [ParamInfo(offsets[i], sizes[i]) for i in range(n)]

    @property
    def _param_types(self):
        """The declared parameter types a launch checks arguments against, as the demangler
        spells them (``('unsigned int*', 'float', 'long long')``); None when they are not
        known (an ``extern "C"`` kernel, or a name whose parameter count differs from the
        driver's) or none of them has a checked kind: a launch then checks sizes only."""
        cdef const size_t* offsets
        cdef const size_t* sizes
        cdef Py_ssize_t n = kernel_param_layout(self, &offsets, &sizes)
        if self._param_accepts == NULL:
            return None
        return table_types(self._param_accepts, n)

    @property
    def attributes(self):
        """:class:`KernelAttributes` for the current device; ``attributes[dev]`` for another.

        A new view each time: a view holds its kernel, and caching it on the kernel would make a
        reference cycle that only the garbage collector could free.
        """
        return make_attributes(self, self._handle, -1)

    @property
    def occupancy(self):
        """:class:`KernelOccupancy`: occupancy queries for this kernel."""
        return make_occupancy(self, self._handle)

    def __eq__(self, other):
        if not isinstance(other, Kernel):
            return NotImplemented
        return self._handle == (<Kernel>other)._handle

    def __hash__(self):
        return hash((Kernel, <size_t>self._handle))

    def __repr__(self):
        owner = "" if self._owner is None else f" of {self._owner.name!r}"
        return f"<Kernel 0x{<size_t>self._handle:x}{owner}>"
