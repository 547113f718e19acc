"""Compiled code: :class:`ObjectCode`, an image (cubin, PTX, fatbin, LTO IR, object or
library) that is loaded lazily, on first use, as a ``CUlibrary``.

Ownership: a :class:`~cuda_core.Kernel` holds its ObjectCode, which holds the library. The
library is unloaded (``cuLibraryUnload``) by :meth:`ObjectCode.close`, which refuses while a
kernel of it is alive, or when the ObjectCode is collected, so never while a kernel of it is
alive. Nothing points the other way. Each library has one owner: once :attr:`ObjectCode.handle`
or :meth:`ObjectCode.get_module` handed it to other code, that code owns its unload, and the
ObjectCode never unloads it (a second unload would crash in the driver). The library API is
context-independent: one load serves every device and context.
"""

import os
import threading

from cpython.bytes cimport PyBytes_AS_STRING

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUDA_SUCCESS, CUkernel, CUlibrary, CUmodule, CUresult

from cuda_core._atomic cimport load_ptr, store_ptr
from cuda_core._driver cimport ensure_driver
from cuda_core._errors cimport HANDLE_RETURN, check_call, make_driver_error
from cuda_core._kernel cimport Kernel, make_kernel
from cuda_core._resource cimport Resource

from cuda.bindings import driver as _driver_py

from cuda_core import _ptx
from cuda_core._errors import CUDAError

__all__ = ["ObjectCode"]


_CODE_TYPES = ("cubin", "ptx", "ltoir", "fatbin", "object", "library")
_LOADABLE = ("cubin", "ptx", "fatbin")

# Serializes loading, closing and the making of kernels (each rare): a library is loaded once,
# and close() sees every kernel made before it. Re-entrant: a collection that runs while it is
# held may run a finalizer that closes an ObjectCode.
_load_lock = threading.RLock()


cdef extern from *:
    """
    static inline void cuda_core_count_add(Py_ssize_t* counter, Py_ssize_t delta) {
        __atomic_add_fetch(counter, delta, __ATOMIC_ACQ_REL);
    }
    static inline Py_ssize_t cuda_core_count_get(Py_ssize_t* counter) {
        return __atomic_load_n(counter, __ATOMIC_ACQUIRE);
    }
    """
    void _count_add "cuda_core_count_add"(Py_ssize_t* counter, Py_ssize_t delta) noexcept nogil
    Py_ssize_t _count_get "cuda_core_count_get"(Py_ssize_t* counter) noexcept nogil


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
    cdef ObjectCode obj = ObjectCode.__new__(ObjectCode)  # not loaded: _library NULL, zeroed
    obj.code = code
    obj.code_type = code_type
    obj.name = name
    obj._sym_map = sym_map
    obj._is_path = is_path
    return obj


cdef object kernel_of(ObjectCode owner, CUkernel handle):
    with _load_lock:  # close() counts under the same lock
        owner._check_open()
        return make_kernel(handle, owner)


cdef void count_kernel(ObjectCode owner, Py_ssize_t delta) noexcept nogil:
    _count_add(&owner._num_kernels, delta)


cdef ObjectCode _from_module(object module, str code_type, object name, object symbol_mapping,
                             str what):
    if not isinstance(name, str):
        raise TypeError(f"{what}: name must be a str, not {type(name).__name__}")
    code, is_path = _parse_module(module, code_type, what)
    return make_object_code(code, code_type, name, _symbol_mapping(symbol_mapping, what), is_path)


_FACTORY_DOC = """{summary}

Parameters
----------
module : bytes, str or os.PathLike
    {module}
name : str, optional
    A name for messages and ``repr``.
symbol_mapping : dict, optional
    Name expression -> lowered (mangled) name, consulted by :meth:`get_kernel`.
"""


def _factory(str code_type, str summary, str image):
    """The static method ``ObjectCode.from_<code_type>``: the six factories differ only in
    the code type they give (and PTX, whose str may also be the text itself)."""
    cdef str what = f"ObjectCode.from_{code_type}()"

    def factory(module, *, name="", symbol_mapping=None):
        return _from_module(module, code_type, name, symbol_mapping, what)

    if image is None:  # PTX
        module = ("The PTX as bytes; or a str: PTX text when it contains a newline, otherwise "
                  "the path of a file; or a path-like (always a file).")
    else:
        module = f"The {image} image (bytes), or the path of a file holding it."
    factory.__name__ = f"from_{code_type}"
    factory.__qualname__ = f"ObjectCode.from_{code_type}"
    factory.__doc__ = _FACTORY_DOC.format(summary=summary, module=module)
    return staticmethod(factory)


def _reconstruct_object_code(code, code_type, name, symbol_mapping):
    """Unpickle an ObjectCode (see ``ObjectCode.__reduce__``)."""
    ct = _code_type_str(code_type)
    if isinstance(code, bytes):
        return make_object_code(code, ct, name, _symbol_mapping(symbol_mapping, "ObjectCode"),
                                False)
    return _from_module(code, ct, name, symbol_mapping, "ObjectCode")


cdef class ObjectCode(Resource):
    """Compiled device code: a cubin, PTX, fatbin, LTO IR, relocatable object or library.

    Not constructible directly: use :meth:`from_cubin`, :meth:`from_ptx`, :meth:`from_ltoir`,
    :meth:`from_fatbin`, :meth:`from_object`, :meth:`from_library`, or get one from
    :meth:`Program.compile` or :meth:`Linker.link`.

    cubin, PTX and fatbin images are loaded on first use (:meth:`get_kernel`, :attr:`handle`,
    :meth:`get_module`) and unloaded by :meth:`close` or when the object is collected, unless
    :attr:`handle` or :meth:`get_module` handed the library out: then whoever took it owns its
    unload, as with cuda.core, which never unloads one. LTO IR, objects and libraries cannot be
    loaded: pass them to :class:`Linker`.

    ObjectCode pickles (its code, code type, name and symbol mapping), compares equal to
    another of the same ``code_type`` and ``code``, and hashes accordingly.

    .. note:: Loads with ``cuLibraryLoadData`` (``cuLibraryLoadFromFile`` for a file) and
       unloads with ``cuLibraryUnload``.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("ObjectCode objects cannot be instantiated directly; use "
                           "ObjectCode.from_cubin()/from_ptx()/from_ltoir()/from_fatbin()/"
                           "from_object()/from_library(), Program.compile() or Linker.link()")

    cdef int _release(self) except -1:
        cdef CUresult err
        if self._library != NULL and not self._handed_out:
            # On failure the handle stays, for the cleanup warning. Without the GIL: the
            # driver may wait for work of the library, and a host function may need the GIL.
            with nogil:
                err = cydriver.cuLibraryUnload(self._library)
            check_call(err, "cuLibraryUnload")
        self._library = NULL
        return 0

    cdef size_t _address(self) noexcept:
        return <size_t>self._library

    def close(self):
        """Unload the library, if it was loaded and never handed out (:attr:`handle`,
        :meth:`get_module`: whoever took it owns its unload). Idempotent; raises if
        ``cuLibraryUnload`` fails. The code, name and symbol mapping stay readable; loading
        again is refused.

        Raises
        ------
        RuntimeError
            While a :class:`Kernel` of this code is alive: the library stays loaded.

        Notes
        -----
        Calls ``cuLibraryUnload``.
        """
        with _load_lock:
            if self._closed:
                return
            n = _count_get(&self._num_kernels)
            if n:
                raise RuntimeError(f"ObjectCode {self.name!r}: {n} kernel"
                                   f"{'s' if n != 1 else ''} of it still alive; close() "
                                   f"would leave them dangling")
            self._close()

    # -- factories --------------------------------------------------------------------------

    from_cubin = _factory("cubin", "An ObjectCode for a cubin.", "cubin")
    from_ptx = _factory("ptx", "An ObjectCode for PTX.", None)
    from_ltoir = _factory("ltoir", "An ObjectCode for LTO IR (link it with :class:`Linker` to load "
                          "it).", "LTO IR")
    from_fatbin = _factory("fatbin", "An ObjectCode for a fatbin.", "fatbin")
    from_object = _factory("object", "An ObjectCode for a relocatable device object (link it "
                           "with :class:`Linker`).", "object")
    from_library = _factory("library", "An ObjectCode for a device library archive (link it "
                            "with :class:`Linker`).", "library")

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
    def symbol_mapping(self):
        """A copy of the name-expression -> lowered-name mapping (dict of str)."""
        return dict(self._sym_map)

    @property
    def handle(self):
        """The ``cuda.bindings.driver.CUlibrary``; loads the code on first use.

        The library is handed out with it: from then on the code that took the handle owns its
        unload (``cuLibraryUnload``), and this object never unloads it, also at :meth:`close`.

        .. note:: Calls ``cuLibraryLoadData`` the first time.
        """
        self._ensure_loaded()
        with _load_lock:  # as close() decides on the unload
            self._check_open()
            self._handed_out = True
            lib = <size_t>self._library
        return _driver_py.CUlibrary(lib)

    # -- loading ----------------------------------------------------------------------------

    cdef int _ensure_loaded(self) except -1:
        cdef CUlibrary lib = NULL
        cdef CUresult err
        cdef const char* c_data
        self._check_open()
        if load_ptr(<void**>&self._library) != NULL:  # stored (release) under _load_lock below
            return 0
        if self.code_type not in _LOADABLE:
            raise ValueError(
                f"an ObjectCode of code_type {self.code_type!r} cannot be loaded: link it "
                f"first, e.g. Linker(obj, options=LinkerOptions(link_time_optimization=True))"
                f".link('cubin') for LTO IR")
        if self.code_type == "ptx":  # before the driver JIT-compiles PTX too new for it
            _ptx.check_loadable(self.code, f"ObjectCode {self.name!r} (ptx)", CUDAError)
        ensure_driver()
        with _load_lock:
            if self._library != NULL:
                return 0
            self._check_open()  # close() may have run meanwhile
            if self._is_path:
                path = os.fsencode(self.code)
                c_data = path
                with nogil:
                    err = cydriver.cuLibraryLoadFromFile(&lib, c_data, NULL, NULL, 0, NULL,
                                                         NULL, 0)
            else:
                data = <bytes>self.code
                c_data = PyBytes_AS_STRING(data)  # NUL-terminated, as PTX must be
                with nogil:
                    err = cydriver.cuLibraryLoadData(&lib, c_data, NULL, NULL, 0, NULL, NULL, 0)
            if err == cydriver.CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
                base = make_driver_error(err)
                isa = (_ptx.ptx_isa_version(_ptx._head(self.code))
                       if self.code_type == "ptx" else None)
                raise CUDAError(_ptx.unsupported_message(
                    f"ObjectCode {self.name!r} ({self.code_type}): its PTX", isa,
                    _ptx.driver_version()), base.code, base.name, base.explanation)
            if err != CUDA_SUCCESS:
                raise make_driver_error(
                    err, f"loading ObjectCode {self.name!r} ({self.code_type}) failed")
            store_ptr(<void**>&self._library, <void*>lib)
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
        if b"\0" in c_symbol:  # C would read a shorter name: another kernel's
            raise ValueError(f"get_kernel(): invalid kernel name {name!r}")
        self._ensure_loaded()
        with _load_lock:  # not while close() unloads the library
            self._check_open()
            err = cydriver.cuLibraryGetKernel(&kernel, self._library, c_symbol)
            if err == CUDA_SUCCESS:
                return make_kernel(kernel, self)
        if err == cydriver.CUDA_ERROR_NOT_FOUND:
            hint = ("; a C++ kernel is found by its mangled name: declare it extern \"C\" or "
                    "pass its name expression to Program.compile(name_expressions=...)")
            if symbol != key:
                hint = f" (lowered name {symbol!r})"
            raise make_driver_error(err, f"get_kernel(): no kernel {key!r} in ObjectCode "
                                         f"{self.name!r}{hint}")
        # With lazy loading (the driver's default) a bad image is only noticed here.
        raise make_driver_error(err, f"loading ObjectCode {self.name!r} "
                                     f"({self.code_type}) failed in get_kernel({key!r})")

    def get_module(self):
        """The ``cuda.bindings.driver.CUmodule`` of this code in the current context, for
        legacy interoperability. Hands the library out, as :attr:`handle` does.

        .. note:: Calls ``cuLibraryGetModule``; needs a current context.
        """
        cdef CUmodule mod = NULL
        self._ensure_loaded()
        cdef CUresult err
        with _load_lock:  # not while close() unloads the library, which it then no longer does
            self._check_open()
            with nogil:  # loads it in the current context (DESIGN.md, the calls that wait)
                err = cydriver.cuLibraryGetModule(&mod, self._library)
            HANDLE_RETURN(err)
            self._handed_out = True
        return _driver_py.CUmodule(<size_t>mod)

    # -- protocols --------------------------------------------------------------------------

    def __reduce__(self):
        return (_reconstruct_object_code,
                (self.code, self.code_type, self.name, dict(self._sym_map)))

    def __eq__(self, other):
        # As cuda.core's, which compares the library each ObjectCode loads: every ObjectCode
        # loads its own, so two of the same code (a copy, an unpickled one) differ. Ours needs
        # no driver to say so.
        if not isinstance(other, ObjectCode):
            return NotImplemented
        return self is other

    def __hash__(self):
        return object.__hash__(self)

    def __repr__(self):
        if self._is_path:
            what = f"file={self.code!r}"
        else:
            what = f"{len(self.code)} bytes"
        return f"<ObjectCode {self.name!r} {self.code_type} {what}>"


