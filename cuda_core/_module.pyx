"""Compiled code: :class:`ObjectCode` (an image, loaded lazily as a ``CUlibrary``) and
:class:`Kernel` (a ``CUkernel`` of a loaded library).

Ownership: a :class:`Kernel` holds its :class:`ObjectCode`, which holds the library; the
library is unloaded (``cuLibraryUnload``) when the ObjectCode is collected, so never while a
kernel of it is alive (in compat mode it stays loaded, as with cuda.core). Nothing points the other way. The library API is context-independent:
one load serves every device and context.
"""

import operator
import os
import sys
import threading
from collections import namedtuple

from cpython.bytes cimport PyBytes_AS_STRING
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memset
from libcpp.vector cimport vector

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUDA_SUCCESS, CUdevice, CUfunction, CUkernel,
                                     CUlaunchAttribute, CUlaunchConfig, CUlibrary, CUmodule,
                                     CUcontext, CUresult)

from cuda_core._context cimport (Context, adopt_primary, pop_pushed, primary_context,
                                 push_if_needed)
from cuda_core._driver cimport device_count, ensure_driver
from cuda_core._errors cimport HANDLE_RETURN, make_driver_error, warn_cleanup
from cuda_core._param_types cimport param_table, table_types
from cuda_core._stream cimport Stream, as_stream

from cuda.bindings import driver as _driver_py

from cuda_core import _ptx
from cuda_core._errors import CUDAError

__all__ = ["Kernel", "KernelAttributes", "KernelOccupancy", "MaxPotentialBlockSizeOccupancyResult",
           "ObjectCode", "ParamInfo"]


# Whether a collected ObjectCode unloads its library: compat mode turns it off, for good. cuda.core
# 1.2 never unloads a library, and code written for it (numba-cuda) unloads the handle itself,
# which after our unload would be a second one, and a crash in the driver. One atomic flag.
cdef extern from *:
    """
    static int cuda_core_unload_libraries = 1;
    static inline int cuda_core_unload_libraries_get(void) {
        return __atomic_load_n(&cuda_core_unload_libraries, __ATOMIC_RELAXED);
    }
    static inline void cuda_core_unload_libraries_off(void) {
        __atomic_store_n(&cuda_core_unload_libraries, 0, __ATOMIC_RELAXED);
    }
    """
    int _unload_libraries "cuda_core_unload_libraries_get"() noexcept nogil
    void _keep_libraries "cuda_core_unload_libraries_off"() noexcept nogil


def _keep_loaded_libraries():
    """From now on, a collected ObjectCode leaves its library loaded, as cuda.core 1.2 does
    (compat mode calls this)."""
    _keep_libraries()


ParamInfo = namedtuple("ParamInfo", ["offset", "size"], module=__name__)
ParamInfo.__doc__ = "One kernel parameter: its byte ``offset`` in the parameter buffer and ``size``."

MaxPotentialBlockSizeOccupancyResult = namedtuple("MaxPotentialBlockSizeOccupancyResult",
                                                  ["min_grid_size", "max_block_size"],
                                                  module=__name__)
MaxPotentialBlockSizeOccupancyResult.__doc__ = (
    "``min_grid_size``: the smallest grid that reaches the highest occupancy; "
    "``max_block_size``: the largest block size that reaches it.")

_CODE_TYPES = ("cubin", "ptx", "ltoir", "fatbin", "object", "library")
_LOADABLE = ("cubin", "ptx", "fatbin")

_load_lock = threading.Lock()


# -- small argument checkers --------------------------------------------------------------------

cdef str _code_type_str(object code_type):
    if not isinstance(code_type, str):
        raise TypeError(f"code_type must be a str or ObjectCodeFormatType, not "
                        f"{type(code_type).__name__}")
    value = str.__str__(code_type).lower()
    if value not in _CODE_TYPES:
        raise ValueError(f"code_type must be one of {', '.join(map(repr, _CODE_TYPES))}, "
                         f"not {code_type!r}")
    return value


cdef object _int_arg(object value, str what, object low, object high):
    """``value`` as a Python int in [low, high]; TypeError/ValueError naming ``what``."""
    if type(value) is bool:
        raise TypeError(f"{what} must be an int, not bool")
    if not isinstance(value, int):
        try:
            value = operator.index(value)
        except TypeError:
            raise TypeError(f"{what} must be an int, not {type(value).__name__}") from None
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"between {low} and {high}"
        raise ValueError(f"{what} must be {bound}, got {value}")
    return value


cdef dict _symbol_mapping(object symbol_mapping, str what):
    if symbol_mapping is None:
        return {}
    if not hasattr(symbol_mapping, "items"):
        raise TypeError(f"{what}: symbol_mapping must be a dict (name expression -> lowered "
                        f"name) or None, not {type(symbol_mapping).__name__}")
    result = {}
    for key, value in symbol_mapping.items():
        if isinstance(key, bytes):
            key = key.decode()
        if isinstance(value, bytes):
            value = value.decode()
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"{what}: symbol_mapping keys and values must be str or bytes, got "
                            f"{type(key).__name__} -> {type(value).__name__}")
        result[key] = value
    return result


cdef tuple _parse_module(object module, str code_type, str what):
    """``(code, is_path)`` for the ``module`` argument of the ObjectCode factories."""
    if isinstance(module, (bytes, bytearray, memoryview)):
        data = bytes(module)
        if not data:
            raise ValueError(f"{what}: module is empty")
        return data, False
    if isinstance(module, str):
        # A str is a file path, except that PTX text may be given directly: a str holding a
        # newline is PTX text (a PTX module always has several lines; a path never holds one).
        if code_type == "ptx" and "\n" in module:
            if "\0" in module:
                raise ValueError(f"{what}: PTX text must not contain NUL characters")
            return module.encode(), False
        path = module
    elif isinstance(module, os.PathLike):
        path = os.fspath(module)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
    else:
        raise TypeError(f"{what}: module must be bytes (the image) or a str/os.PathLike (a file "
                        f"path), not {type(module).__name__}")
    if not path:
        raise ValueError(f"{what}: module is an empty path")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{what}: no file at {path!r} (bytes are taken as the image "
                                f"itself, a str or path-like as the name of a file)")
    return os.path.abspath(path), True


cdef ObjectCode make_object_code(object code, str code_type, str name, dict sym_map,
                                 bint is_path):
    cdef ObjectCode obj = ObjectCode.__new__(ObjectCode)
    obj._code = code
    obj._code_type = code_type
    obj._name = name
    obj._sym_map = sym_map
    obj._is_path = is_path
    obj._library = NULL
    return obj


cdef ObjectCode _from_module(object module, str code_type, object name, object symbol_mapping,
                             str what):
    if not isinstance(name, str):
        raise TypeError(f"{what}: name must be a str, not {type(name).__name__}")
    code, is_path = _parse_module(module, code_type, what)
    return make_object_code(code, code_type, name, _symbol_mapping(symbol_mapping, what), is_path)


def _reconstruct_object_code(code, code_type, name, symbol_mapping):
    """Unpickle an ObjectCode (see ``ObjectCode.__reduce__``)."""
    ct = _code_type_str(code_type)
    if isinstance(code, bytes):
        return make_object_code(code, ct, name, _symbol_mapping(symbol_mapping, "ObjectCode"),
                                False)
    return _from_module(code, ct, name, symbol_mapping, "ObjectCode")


cdef class ObjectCode:
    """Compiled device code: a cubin, PTX, fatbin, LTO IR, relocatable object or library.

    Not constructible directly: use :meth:`from_cubin`, :meth:`from_ptx`, :meth:`from_ltoir`,
    :meth:`from_fatbin`, :meth:`from_object`, :meth:`from_library`, or get one from
    :meth:`Program.compile` or :meth:`Linker.link`.

    cubin, PTX and fatbin images are loaded on first use (:meth:`get_kernel`, :attr:`handle`,
    :meth:`get_module`) and unloaded when the object is collected. LTO IR, objects and
    libraries cannot be loaded: pass them to :class:`Linker`.

    ObjectCode pickles (its code, code type, name and symbol mapping), compares equal to
    another of the same ``code_type`` and ``code``, and hashes accordingly.

    .. note:: Loads with ``cuLibraryLoadData`` (``cuLibraryLoadFromFile`` for a file) and
       unloads with ``cuLibraryUnload``.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("ObjectCode objects cannot be instantiated directly; use "
                           "ObjectCode.from_cubin()/from_ptx()/from_ltoir()/from_fatbin()/"
                           "from_object()/from_library(), Program.compile() or Linker.link()")

    def __dealloc__(self):
        cdef CUresult err
        cdef CUlibrary lib = self._library
        if lib != NULL:
            self._library = NULL
            if _unload_libraries():
                err = cydriver.cuLibraryUnload(lib)
                warn_cleanup("cuLibraryUnload", err)

    # -- factories --------------------------------------------------------------------------

    @staticmethod
    def from_cubin(module, *, name="", symbol_mapping=None):
        """An ObjectCode for a cubin.

        Parameters
        ----------
        module : bytes, str or os.PathLike
            The cubin image (bytes), or the path of a file holding it.
        name : str, optional
            A name for messages and ``repr``.
        symbol_mapping : dict, optional
            Name expression -> lowered (mangled) name, consulted by :meth:`get_kernel`.
        """
        return _from_module(module, "cubin", name, symbol_mapping, "ObjectCode.from_cubin()")

    @staticmethod
    def from_ptx(module, *, name="", symbol_mapping=None):
        """An ObjectCode for PTX.

        Parameters
        ----------
        module : bytes, str or os.PathLike
            The PTX as bytes; or a str: PTX text when it contains a newline, otherwise the path
            of a file; or a path-like (always a file).
        name : str, optional
        symbol_mapping : dict, optional
        """
        return _from_module(module, "ptx", name, symbol_mapping, "ObjectCode.from_ptx()")

    @staticmethod
    def from_ltoir(module, *, name="", symbol_mapping=None):
        """An ObjectCode for LTO IR (link it with :class:`Linker` to load it).

        Parameters
        ----------
        module : bytes, str or os.PathLike
            The LTO IR image, or the path of a file holding it.
        name : str, optional
        symbol_mapping : dict, optional
        """
        return _from_module(module, "ltoir", name, symbol_mapping, "ObjectCode.from_ltoir()")

    @staticmethod
    def from_fatbin(module, *, name="", symbol_mapping=None):
        """An ObjectCode for a fatbin.

        Parameters
        ----------
        module : bytes, str or os.PathLike
            The fatbin image, or the path of a file holding it.
        name : str, optional
        symbol_mapping : dict, optional
        """
        return _from_module(module, "fatbin", name, symbol_mapping, "ObjectCode.from_fatbin()")

    @staticmethod
    def from_object(module, *, name="", symbol_mapping=None):
        """An ObjectCode for a relocatable device object (link it with :class:`Linker`).

        Parameters
        ----------
        module : bytes, str or os.PathLike
            The object image, or the path of a file holding it.
        name : str, optional
        symbol_mapping : dict, optional
        """
        return _from_module(module, "object", name, symbol_mapping, "ObjectCode.from_object()")

    @staticmethod
    def from_library(module, *, name="", symbol_mapping=None):
        """An ObjectCode for a device library archive (link it with :class:`Linker`).

        Parameters
        ----------
        module : bytes, str or os.PathLike
            The library image, or the path of a file holding it.
        name : str, optional
        symbol_mapping : dict, optional
        """
        return _from_module(module, "library", name, symbol_mapping,
                            "ObjectCode.from_library()")

    @staticmethod
    def _init(module, code_type, *, name="", symbol_mapping=None):
        """Wrap compiler output: ``module`` is the image as bytes (used by Program and Linker)."""
        if not isinstance(module, bytes):
            raise TypeError(f"ObjectCode._init(): module must be bytes, not "
                            f"{type(module).__name__}")
        return make_object_code(module, _code_type_str(code_type), name,
                                _symbol_mapping(symbol_mapping, "ObjectCode._init()"), False)

    # -- properties -------------------------------------------------------------------------

    @property
    def code(self):
        """The image as bytes, or, for an ObjectCode made from a file, the file's absolute
        path (str)."""
        return self._code

    @property
    def code_type(self):
        """The format: ``"cubin"``, ``"ptx"``, ``"ltoir"``, ``"fatbin"``, ``"object"`` or
        ``"library"``."""
        return self._code_type

    @property
    def name(self):
        """The name given at creation (the program name for compiler output)."""
        return self._name

    @property
    def symbol_mapping(self):
        """A copy of the name-expression -> lowered-name mapping (dict of str)."""
        return dict(self._sym_map)

    @property
    def handle(self):
        """The ``cuda.bindings.driver.CUlibrary``; loads the code on first use.

        .. note:: Calls ``cuLibraryLoadData`` the first time.
        """
        self._ensure_loaded()
        return _driver_py.CUlibrary(<size_t>self._library)

    # -- loading ----------------------------------------------------------------------------

    cdef int _ensure_loaded(self) except -1:
        cdef CUlibrary lib = NULL
        cdef CUresult err
        cdef const char* c_data
        if self._library != NULL:
            return 0
        if self._code_type not in _LOADABLE:
            raise ValueError(
                f"an ObjectCode of code_type {self._code_type!r} cannot be loaded: link it "
                f"first, e.g. Linker(obj, options=LinkerOptions(link_time_optimization=True))"
                f".link('cubin') for LTO IR")
        if self._code_type == "ptx":  # before the driver JIT-compiles PTX too new for it
            _ptx.check_loadable(self._code, f"ObjectCode {self._name!r} (ptx)", CUDAError)
        ensure_driver()
        with _load_lock:
            if self._library != NULL:
                return 0
            if self._is_path:
                path = os.fsencode(self._code)
                c_data = path
                with nogil:
                    err = cydriver.cuLibraryLoadFromFile(&lib, c_data, NULL, NULL, 0, NULL,
                                                         NULL, 0)
            else:
                data = <bytes>self._code
                c_data = PyBytes_AS_STRING(data)  # NUL-terminated, as PTX must be
                with nogil:
                    err = cydriver.cuLibraryLoadData(&lib, c_data, NULL, NULL, 0, NULL, NULL, 0)
            if err == cydriver.CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
                base = make_driver_error(err)
                isa = (_ptx.ptx_isa_version(_ptx._head(self._code))
                       if self._code_type == "ptx" else None)
                raise CUDAError(_ptx.unsupported_message(
                    f"ObjectCode {self._name!r} ({self._code_type}): its PTX", isa,
                    _ptx.driver_version()), base.code, base.name, base.explanation)
            if err != CUDA_SUCCESS:
                raise make_driver_error(
                    err, f"loading ObjectCode {self._name!r} ({self._code_type}) failed")
            self._library = lib
        return 0

    def get_kernel(self, name):
        """The kernel called ``name``, loading the code first if needed.

        Parameters
        ----------
        name : str or bytes
            A kernel's name: a name expression given to :meth:`Program.compile` (e.g.
            ``"saxpy<float>"``, looked up in :attr:`symbol_mapping`), or the symbol itself
            (an ``extern "C"`` name or a mangled name).

        Returns
        -------
        Kernel

        Raises
        ------
        CUDAError
            ``CUDA_ERROR_NOT_FOUND`` when the code has no such kernel.

        Notes
        -----
        Calls ``cuLibraryGetKernel``.
        """
        cdef CUkernel kernel = NULL
        cdef CUresult err
        if isinstance(name, bytes):
            key = name.decode()
        elif isinstance(name, str):
            key = name
        else:
            raise TypeError(f"get_kernel(): name must be a str or bytes, not "
                            f"{type(name).__name__}")
        symbol = self._sym_map.get(key, key)
        c_symbol = symbol.encode()
        if b"\0" in c_symbol or not c_symbol:
            raise ValueError(f"get_kernel(): invalid kernel name {name!r}")
        self._ensure_loaded()
        err = cydriver.cuLibraryGetKernel(&kernel, self._library, c_symbol)
        if err == cydriver.CUDA_ERROR_NOT_FOUND:
            hint = ("; a C++ kernel is found by its mangled name: declare it extern \"C\" or "
                    "pass its name expression to Program.compile(name_expressions=...)")
            if symbol != key:
                hint = f" (lowered name {symbol!r})"
            raise make_driver_error(err, f"get_kernel(): no kernel {key!r} in ObjectCode "
                                         f"{self._name!r}{hint}")
        if err != CUDA_SUCCESS:
            # With lazy loading (the driver's default) a bad image is only noticed here.
            raise make_driver_error(err, f"loading ObjectCode {self._name!r} "
                                         f"({self._code_type}) failed in get_kernel({key!r})")
        return make_kernel(kernel, self)

    def get_module(self):
        """The ``cuda.bindings.driver.CUmodule`` of this code in the current context, for
        legacy interoperability.

        .. note:: Calls ``cuLibraryGetModule``; needs a current context.
        """
        cdef CUmodule mod = NULL
        self._ensure_loaded()
        HANDLE_RETURN(cydriver.cuLibraryGetModule(&mod, self._library))
        return _driver_py.CUmodule(<size_t>mod)

    # -- protocols --------------------------------------------------------------------------

    def __reduce__(self):
        return (_reconstruct_object_code,
                (self._code, self._code_type, self._name, dict(self._sym_map)))

    def __eq__(self, other):
        if not isinstance(other, ObjectCode):
            return NotImplemented
        return (self._code_type == (<ObjectCode>other)._code_type
                and self._code == (<ObjectCode>other)._code)

    def __hash__(self):
        return hash((ObjectCode, self._code_type, self._code))

    def __repr__(self):
        if self._is_path:
            what = f"file={self._code!r}"
        else:
            what = f"{len(self._code)} bytes"
        return f"<ObjectCode {self._name!r} {self._code_type} {what}>"


# -- Kernel -------------------------------------------------------------------------------------

cdef Kernel make_kernel(CUkernel handle, ObjectCode owner):
    cdef Kernel k = Kernel.__new__(Kernel)
    k._handle = handle
    k._owner = owner
    k._num_params = -1
    k._param_offsets = NULL
    k._param_sizes = NULL
    k._param_accepts = NULL
    k._functions = NULL
    k._num_functions = 0
    return k


cdef int _current_device() except -1:
    """The device of the context current on this thread, or 0 when none is (as Device())."""
    cdef CUdevice dev = 0
    cdef CUresult err
    ensure_driver()
    err = cydriver.cuCtxGetDevice(&dev)
    if err == cydriver.CUDA_ERROR_INVALID_CONTEXT:
        return 0
    HANDLE_RETURN(err)
    return dev


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
            address = _int_arg(handle, "Kernel.from_handle(): handle", 0, 0xFFFFFFFFFFFFFFFF)
        if address == 0:
            raise ValueError("Kernel.from_handle(): handle is NULL")
        if mod is not None and not isinstance(mod, ObjectCode):
            raise TypeError(f"Kernel.from_handle(): mod must be an ObjectCode or None, not "
                            f"{type(mod).__name__}")
        return make_kernel(<CUkernel><size_t>address, mod)

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
        cdef int pushed = 0
        if self._num_params >= 0:
            return 0
        ensure_driver()
        # The driver reads the parameters in a context (it may load the kernel there first): a
        # thread with none current borrows device 0's primary context, the device Device()
        # means when no context is current.
        HANDLE_RETURN(cydriver.cuCtxGetCurrent(&current))
        if current == NULL:
            pushed = push_if_needed(primary_context(0)._handle)
        try:
            while True:
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
        finally:
            if pushed:
                pop_pushed()
        n = offsets.size()
        if self._num_params >= 0:
            return 0  # another thread finished first while the name was parsed (in Python)
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
        self._num_params = <Py_ssize_t>n
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
        cdef CUfunction func = NULL
        cdef int pushed = 0, count
        cdef bint primary = ctx is not None and ctx._is_primary
        # The driver calls below need the launch's context current; once the layout is read,
        # a launch in a context that is not primary makes none.
        if ctx is not None and (primary or self._num_params < 0):
            pushed = push_if_needed(ctx._handle)
        try:
            self._load_param_info()
            if not primary:
                return <CUfunction>self._handle
            HANDLE_RETURN(cydriver.cuKernelGetFunction(&func, self._handle))
        finally:
            if pushed:
                pop_pushed()
        if self._functions == NULL:
            count = device_count()
            self._functions = <CUfunction*>calloc(count, sizeof(CUfunction))
            if self._functions == NULL:
                raise MemoryError()
            self._num_functions = count
        if ctx._device_id < self._num_functions:
            self._functions[ctx._device_id] = func
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
        return _make_attributes(self, -1)

    @property
    def occupancy(self):
        """:class:`KernelOccupancy`: occupancy queries for this kernel."""
        cdef KernelOccupancy occ = KernelOccupancy.__new__(KernelOccupancy)
        occ._kernel = self
        return occ

    def __eq__(self, other):
        if not isinstance(other, Kernel):
            return NotImplemented
        return self._handle == (<Kernel>other)._handle

    def __hash__(self):
        return hash((Kernel, <size_t>self._handle))

    def __repr__(self):
        owner = "" if self._owner is None else f" of {self._owner._name!r}"
        return f"<Kernel 0x{<size_t>self._handle:x}{owner}>"


# -- KernelAttributes ---------------------------------------------------------------------------

cdef KernelAttributes _make_attributes(Kernel kernel, int device):
    cdef KernelAttributes attrs = KernelAttributes.__new__(KernelAttributes)
    attrs._kernel = kernel
    attrs._device = device
    return attrs


cdef class KernelAttributes:
    """A kernel's attributes on one device: the current device (the one of the context current
    at each read, device 0 when none is) for ``kernel.attributes``, a fixed one for
    ``kernel.attributes[dev]``. Values are read at each access.

    .. note:: Calls ``cuKernelGetAttribute``.
    """

    cdef Kernel _kernel
    cdef int _device  # -1: the current device, resolved at each read

    def __init__(self, *args, **kwargs):
        raise RuntimeError("KernelAttributes cannot be instantiated directly; use "
                           "Kernel.attributes")

    def __getitem__(self, device):
        """The attributes on ``device`` (a Device or an ordinal)."""
        ordinal = _int_arg(device, "KernelAttributes[device]", 0, None)
        count = device_count()
        if ordinal >= count:
            raise ValueError(f"KernelAttributes[device]: device {ordinal} is out of range "
                             f"(this machine has {count} devices)")
        return _make_attributes(self._kernel, ordinal)

    cdef int _set(self, cydriver.CUfunction_attribute attr, object value, str name) except -1:
        cdef int dev = self._device if self._device >= 0 else _current_device()
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"KernelAttributes.{name} must be an int, not "
                            f"{type(value).__name__}")
        if not -1 <= value <= 0x7FFFFFFF:
            raise ValueError(f"KernelAttributes.{name} must be a non-negative int (or -1 for "
                             f"the carveout), got {value}")
        HANDLE_RETURN(cydriver.cuKernelSetAttribute(attr, value, self._kernel._handle, dev))
        return 0

    cdef int _get(self, cydriver.CUfunction_attribute attr) except? -1:
        cdef int value = 0
        cdef int dev = self._device if self._device >= 0 else _current_device()
        HANDLE_RETURN(cydriver.cuKernelGetAttribute(&value, attr, self._kernel._handle, dev))
        return value

    @property
    def device_id(self):
        """The ordinal of the device these attributes are read for."""
        return self._device if self._device >= 0 else _current_device()

    @property
    def max_threads_per_block(self):
        """int: the most threads per block a launch of this kernel can have."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)

    @property
    def shared_size_bytes(self):
        """int: statically allocated shared memory per block, in bytes."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)

    @property
    def const_size_bytes(self):
        """int: user constant memory the kernel uses, in bytes."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)

    @property
    def local_size_bytes(self):
        """int: local memory per thread, in bytes."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)

    @property
    def num_regs(self):
        """int: registers per thread."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_NUM_REGS)

    @property
    def ptx_version(self):
        """int: the PTX virtual architecture the kernel was compiled for, major*10+minor."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_PTX_VERSION)

    @property
    def binary_version(self):
        """int: the binary architecture the kernel was compiled for, major*10+minor."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_BINARY_VERSION)

    @property
    def cache_mode_ca(self):
        """bool: whether the kernel was compiled with ``-Xptxas --dlcm=ca``."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_CACHE_MODE_CA) != 0

    @property
    def max_dynamic_shared_size_bytes(self):
        """int: the most dynamic shared memory a launch may request, in bytes. Settable, up to
        the device's opt-in limit minus the kernel's static shared memory (raising it above
        48 KiB is how a kernel gets more; ``cuKernelSetAttribute``)."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, value):
        self._set(cydriver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, value,
                  "max_dynamic_shared_size_bytes")

    @property
    def preferred_shared_memory_carveout(self):
        """int: the preferred shared memory carveout, in percent (-1: no preference).
        Settable (``cuKernelSetAttribute``)."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT)

    @preferred_shared_memory_carveout.setter
    def preferred_shared_memory_carveout(self, value):
        self._set(cydriver.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, value,
                  "preferred_shared_memory_carveout")

    @property
    def cluster_size_must_be_set(self):
        """bool: whether a launch must give a cluster size."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET) != 0

    @property
    def required_cluster_width(self):
        """int: the cluster width the kernel was compiled for (0: none)."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH)

    @property
    def required_cluster_height(self):
        """int: the cluster height the kernel was compiled for (0: none)."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT)

    @property
    def required_cluster_depth(self):
        """int: the cluster depth the kernel was compiled for (0: none)."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH)

    @property
    def non_portable_cluster_size_allowed(self):
        """bool: whether the kernel may launch with a non-portable cluster size."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) != 0

    @property
    def cluster_scheduling_policy_preference(self):
        """int: the block scheduling policy (a ``CUclusterSchedulingPolicy`` value)."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE)

    def __repr__(self):
        where = "current device" if self._device < 0 else f"device {self._device}"
        return f"<KernelAttributes of {self._kernel!r} on the {where}>"


# -- KernelOccupancy ----------------------------------------------------------------------------

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
        return _int_arg(value, "the dynamic_shared_memory_needed callable's result", 0,
                        0xFFFFFFFFFFFFFFFF)
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


cdef tuple _dim3(object value, str what):
    if type(value) is not bool and isinstance(value, int):
        value = (value,)
    if not isinstance(value, tuple) or not 1 <= len(value) <= 3:
        raise TypeError(f"{what} must be an int or a tuple of 1 to 3 ints, not {value!r}")
    dims = [_int_arg(v, what, 1, 0xFFFFFFFF) for v in value]
    while len(dims) < 3:
        dims.append(1)
    return tuple(dims)


cdef int _fill_launch_config(object config, Stream stream, CUlaunchConfig* out,
                             CUlaunchAttribute* attr, str what) except -1:
    try:
        grid = config.grid
        block = config.block
        cluster = getattr(config, "cluster", None)
        shmem = getattr(config, "shmem_size", None)
    except AttributeError:
        raise TypeError(f"{what}: config must be a LaunchConfig (an object with grid, block, "
                        f"cluster and shmem_size), not {type(config).__name__}") from None
    g = _dim3(grid, f"{what}: config.grid")
    b = _dim3(block, f"{what}: config.block")
    memset(out, 0, sizeof(CUlaunchConfig))
    memset(attr, 0, sizeof(CUlaunchAttribute))
    out.blockDimX, out.blockDimY, out.blockDimZ = b
    out.sharedMemBytes = 0 if shmem is None else _int_arg(shmem, f"{what}: config.shmem_size", 0,
                                                          0xFFFFFFFF)
    out.hStream = stream._handle
    if cluster is None:
        out.gridDimX, out.gridDimY, out.gridDimZ = g
        out.attrs = NULL
        out.numAttrs = 0
    else:
        c = _dim3(cluster, f"{what}: config.cluster")
        # With a cluster, LaunchConfig.grid counts clusters; the driver counts blocks.
        out.gridDimX = g[0] * c[0]
        out.gridDimY = g[1] * c[1]
        out.gridDimZ = g[2] * c[2]
        attr.id = cydriver.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = c
        out.attrs = attr
        out.numAttrs = 1
    return 0


cdef class KernelOccupancy:
    """Occupancy queries for a kernel, answered for the device of the current context (or of
    the stream, for the cluster queries). Needs a current context.

    .. note:: Calls the ``cuOccupancy*`` functions with the ``CUkernel`` cast to a
       ``CUfunction``, as the driver documents for context-less kernels.
    """

    cdef Kernel _kernel

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
        cdef int bs = _int_arg(block_size, "block_size", 1, 0x7FFFFFFF)
        cdef size_t smem = _int_arg(dynamic_shared_memory_size, "dynamic_shared_memory_size", 0,
                                    0xFFFFFFFFFFFFFFFF)
        cdef int n = 0
        cdef CUresult err
        with nogil:
            err = cydriver.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &n, <CUfunction>self._kernel._handle, bs, smem)
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
        cdef int limit = _int_arg(block_size_limit, "block_size_limit", 0, 0x7FFFFFFF)
        cdef size_t smem = 0
        cdef cydriver.CUoccupancyB2DSize fn = NULL
        cdef CUfunction func = <CUfunction>self._kernel._handle
        cdef CUresult err
        need = dynamic_shared_memory_needed
        if isinstance(need, _driver_py.CUoccupancyB2DSize):
            fn = <cydriver.CUoccupancyB2DSize><size_t>_b2d_function_address(need)
            if fn == NULL:
                raise ValueError("dynamic_shared_memory_needed: the CUoccupancyB2DSize is NULL")
        elif type(need) is not bool and isinstance(need, int):
            smem = _int_arg(need, "dynamic_shared_memory_needed", 0, 0xFFFFFFFFFFFFFFFF)
        elif callable(need):
            with _b2d_lock:
                saved = (_b2d_callable, _b2d_error)
                _b2d_callable, _b2d_error = need, None
                try:
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
        cdef int blocks = _int_arg(num_blocks_per_multiprocessor, "num_blocks_per_multiprocessor",
                                   1, 0x7FFFFFFF)
        cdef int bs = _int_arg(block_size, "block_size", 1, 0x7FFFFFFF)
        cdef size_t smem = 0
        cdef CUresult err
        with nogil:
            err = cydriver.cuOccupancyAvailableDynamicSMemPerBlock(
                &smem, <CUfunction>self._kernel._handle, blocks, bs)
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
        cdef CUlaunchConfig cfg
        cdef CUlaunchAttribute attr
        cdef int size = 0
        cdef CUresult err
        cdef Stream s = as_stream(stream, "max_potential_cluster_size(): stream")
        _fill_launch_config(config, s, &cfg, &attr, "max_potential_cluster_size()")
        with nogil:
            err = cydriver.cuOccupancyMaxPotentialClusterSize(
                &size, <CUfunction>self._kernel._handle, &cfg)
        HANDLE_RETURN(err)
        return size

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
        cdef CUlaunchConfig cfg
        cdef CUlaunchAttribute attr
        cdef int count = 0
        cdef CUresult err
        cdef Stream s = as_stream(stream, "max_active_clusters(): stream")
        _fill_launch_config(config, s, &cfg, &attr, "max_active_clusters()")
        with nogil:
            err = cydriver.cuOccupancyMaxActiveClusters(
                &count, <CUfunction>self._kernel._handle, &cfg)
        HANDLE_RETURN(err)
        return count
