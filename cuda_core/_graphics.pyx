"""OpenGL interop: :class:`GraphicsResource`, an OpenGL buffer or image registered with CUDA.

Who holds whom. A resource holds its registration (``CUgraphicsResource``), given back by
``close()`` or the finalizer, and, while mapped, the :class:`~cuda_core.Buffer` that ``map()``
returned, as cuda.core's does: a mapping lasts until ``unmap()``, the buffer's own ``close()``
or the resource's ``close()``, whether or not the caller kept the buffer. The buffer's memory
resource is the resource's private ``_GraphicsMapping`` (one per resource, made at
registration) whose free is the unmap, ordered on the buffer's deallocation stream (the
mapping stream unless ``close``/``unmap`` names another). The mapping does not refer back to
the resource, so there is no reference cycle: a resource dropped while mapped is finalized,
which unmaps (closing its buffer) and unregisters.

A mapped buffer exported through DLPack unmaps when the last export is released, as any
buffer frees then; a resource closed meanwhile hands its registration to the mapping, which
unregisters it right after that unmap.
"""

cimport cython
from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUdeviceptr, CUgraphicsResource, CUresult, CUstream

from posix.dlfcn cimport RTLD_NOW, dlopen, dlsym

from cuda_core._atomic cimport load_ptr, store_ptr
from cuda_core._context cimport (Context, ContextGuard, current_context, enter_context,
                                 exit_context)
from cuda_core._errors cimport check_call, make_driver_error
from cuda_core._memory._alloc cimport sync_context
from cuda_core._memory._buffer cimport Buffer, new_buffer
from cuda_core._memory._memory_resource cimport _DeviceOnlyMemoryResource, deallocate_checked
from cuda_core._resource cimport Resource
from cuda_core._stream cimport Stream, as_stream, require_stream

from cuda_core._checks import check_int
from cuda_core._errors import CUDAError

__all__ = ["GraphicsResource"]


cdef dict _REGISTER_FLAGS = {
    "none": cydriver.CU_GRAPHICS_REGISTER_FLAGS_NONE,
    "read_only": cydriver.CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY,
    "write_discard": cydriver.CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD,
    "surface_load_store": cydriver.CU_GRAPHICS_REGISTER_FLAGS_SURFACE_LDST,
    "texture_gather": cydriver.CU_GRAPHICS_REGISTER_FLAGS_TEXTURE_GATHER,
}

cdef tuple _IMAGE_ONLY_FLAGS = ("surface_load_store", "texture_gather")

# The image targets cuGraphicsGLRegisterImage accepts (the OpenGL enum values).
cdef dict _IMAGE_TARGETS = {
    0x0DE1: "GL_TEXTURE_2D",
    0x84F5: "GL_TEXTURE_RECTANGLE",
    0x8513: "GL_TEXTURE_CUBE_MAP",
    0x806F: "GL_TEXTURE_3D",
    0x8C1A: "GL_TEXTURE_2D_ARRAY",
    0x8D41: "GL_RENDERBUFFER",
}

cdef object _GL_NAME_MAX = 0xFFFFFFFF


# -- is an OpenGL context current on this thread? ---------------------------------------------
#
# The driver needs the OpenGL context that owns an object current on the calling thread to
# register, map, unmap or unregister it. It refuses a registration or a map without one, with
# an error code that does not say so; an unmap or unregister it refuses may still have done
# part of its work (a second try has crashed in the driver). So unmap and unregister first ask
# EGL and GLX, through the libraries the process has already loaded (never loading one),
# whether any OpenGL context is current here, and refuse before the driver where none is;
# a failed registration or map asks afterwards, to name the cause. A context can only be made
# through one of them (on Linux, for an NVIDIA driver), so "neither is loaded" means "none is
# current".

cdef extern from "<dlfcn.h>" nogil:
    int RTLD_NOLOAD

# dlopen and dlsym at the symbol versions every glibc has had (libdl's, before glibc 2.34 moved
# them into libc), not the GLIBC_2.34 ones a newer glibc's headers bind to: the wheel runs on
# manylinux_2_28 (DESIGN.md, Wheels). CMakeLists.txt links libdl.so.2 for the older glibc.
cdef extern from *:
    """
    #if defined(__GLIBC__) && defined(__x86_64__)
    __asm__(".symver dlopen,dlopen@GLIBC_2.2.5");
    __asm__(".symver dlsym,dlsym@GLIBC_2.2.5");
    #elif defined(__GLIBC__) && defined(__aarch64__)
    __asm__(".symver dlopen,dlopen@GLIBC_2.17");
    __asm__(".symver dlsym,dlsym@GLIBC_2.17");
    #endif
    """

ctypedef void* (*_current_context_fn)() noexcept nogil

# eglGetCurrentContext and glXGetCurrentContext once found (never unset: a loaded library's
# functions stay valid, as the process never unloads what it got through RTLD_NOLOAD).
cdef void* _egl_current = NULL
cdef void* _glx_current = NULL


cdef void* _loaded_symbol(const char* library, const char* symbol) noexcept nogil:
    cdef void* handle = dlopen(library, RTLD_NOW | RTLD_NOLOAD)
    return dlsym(handle, symbol) if handle != NULL else NULL


cdef bint _asks(void** slot, const char* lib1, const char* lib2, const char* symbol) noexcept nogil:
    """Whether the loader function in ``slot`` (found in lib1 or lib2, once) reports a current
    context; False while neither library is loaded."""
    cdef void* fn = load_ptr(slot)
    if fn == NULL:
        fn = _loaded_symbol(lib1, symbol)
        if fn == NULL:
            fn = _loaded_symbol(lib2, symbol)
        if fn == NULL:
            return False
        store_ptr(slot, fn)
    return (<_current_context_fn>fn)() != NULL


cdef bint gl_context_current() noexcept nogil:
    return (_asks(&_egl_current, "libEGL.so.1", "libEGL.so", "eglGetCurrentContext")
            or _asks(&_glx_current, "libGLX.so.0", "libGL.so.1", "glXGetCurrentContext"))


cdef int _require_gl_context(str what) except -1:
    """Refuse, before the driver, a call made without an OpenGL context current here."""
    if not gl_context_current():
        raise make_driver_error(cydriver.CUDA_ERROR_INVALID_GRAPHICS_CONTEXT,
                                f"{what}: no OpenGL context is current on this thread (the one "
                                f"that owns the object must be); nothing was done")
    return 0


cdef unsigned int _register_flags(object flags, bint image, str what) except? 0xFFFFFFFF:
    """``flags`` (None, one name, or a tuple or list of names) as CU_GRAPHICS_REGISTER_FLAGS;
    the surface and gather flags only for an image (the driver refuses them for a buffer)."""
    cdef unsigned int result = 0
    if flags is None:
        return 0
    names = (flags,) if isinstance(flags, str) else flags
    if not isinstance(names, (tuple, list)):
        raise TypeError(f"{what}: flags must be a str, a tuple or list of str, or None, not "
                        f"{type(flags).__name__}")
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{what}: each flag must be a str, not {type(name).__name__}")
        value = _REGISTER_FLAGS.get(name)
        if value is None:
            raise ValueError(f"{what}: unknown flag {name!r}; the flags are "
                             f"{', '.join(map(repr, _REGISTER_FLAGS))}")
        if not image and name in _IMAGE_ONLY_FLAGS:
            raise ValueError(f"{what}: flag {name!r} applies to images (from_gl_image()) only; "
                             f"a buffer takes 'none', 'read_only' or 'write_discard'")
        result |= <unsigned int>value
    return result


cdef int _check_registration(CUresult err, str call, str what) except -1:
    if err == cydriver.CUDA_SUCCESS:
        return 0
    _require_gl_context(what)  # the likeliest cause, named first
    if err == cydriver.CUDA_ERROR_INVALID_VALUE or err == cydriver.CUDA_ERROR_INVALID_HANDLE:
        raise make_driver_error(err, f"{what}: {call} refused the object (is an OpenGL context "
                                     f"current on this thread, on this GPU, and does the name "
                                     f"belong to it?)")
    raise make_driver_error(err, f"{what}: {call}")


cdef GraphicsResource _new_resource(object cls, CUgraphicsResource handle, Context ctx,
                                    Stream stream):
    cdef GraphicsResource res = GraphicsResource.__new__(cls)
    cdef _GraphicsMapping mapping = _GraphicsMapping.__new__(_GraphicsMapping)
    mapping._c_dealloc = True
    mapping._internal = True
    mapping._handle = handle
    mapping._ctx = ctx
    mapping._dev_id = ctx._device_id
    res._mapping = mapping
    res._enter_stream = stream
    return res


cdef int _check_gl_call(CUresult err, str call) except -1:
    """Check a map, unmap or unregister the driver made (with some OpenGL context current)."""
    if err == cydriver.CUDA_ERROR_INVALID_GRAPHICS_CONTEXT:
        raise make_driver_error(err, f"{call}: the OpenGL context current on this thread is not "
                                     f"the one that owns the object")
    return check_call(err, call)


cdef class _GraphicsMapping(_DeviceOnlyMemoryResource):
    """A resource's registration (handle and context) and its mapping state; also the memory
    resource of the buffers map() returns: freeing one unmaps. Not visible to users
    (``Buffer.memory_resource`` reads None for it)."""

    cdef CUgraphicsResource _handle
    cdef Context _ctx
    cdef bint _mapped
    # The resource was closed while an export kept this mapped: unregister after the unmap.
    cdef bint _unregister_after_unmap
    # The stream of an unmap refused for want of an OpenGL context: the unmap done later
    # without a stream of its own is ordered on it.
    cdef Stream _refused_stream

    def allocate(self, size, *, stream=None):
        raise TypeError("a mapped graphics resource's buffer cannot allocate memory")

    def deallocate(self, ptr, size, *, stream=None):
        deallocate_checked(self, ptr, size, stream, "deallocate()")

    cdef int _deallocate_c(self, CUdeviceptr ptr, size_t size, Stream stream) except -1:
        """Unmap on ``stream`` (else the stream of a refused attempt, else the context's NULL
        stream), once; then unregister if the closed resource handed its registration over.
        Without an OpenGL context current, refuse and stay mapped."""
        cdef CUgraphicsResource handle = self._handle
        cdef CUstream cstream
        cdef CUresult err
        cdef bint unregister
        cdef ContextGuard guard
        if stream is None:
            stream = self._refused_stream
        if self._mapped and not gl_context_current():
            self._refused_stream = stream  # still mapped: an unmap on the OpenGL thread uses it
            _require_gl_context("cuGraphicsUnmapResources")
        if stream is not None and stream._closed:
            # Its work may still run: wait for the context, then unmap on the NULL stream.
            sync_context(self._ctx._handle)
            stream = None
        cstream = stream._handle if stream is not None else NULL
        # One unmap, however many threads get here; the resource's close() reads _mapped
        # under the same section, so it never sees False before the unmap is done. The driver
        # call keeps the GIL (releasing the thread state would suspend the section).
        with cython.critical_section(self):
            if not self._mapped:
                return 0
            enter_context(guard, self._ctx._handle)
            err = cydriver.cuGraphicsUnmapResources(1, &handle, cstream)
            exit_context(guard)
            # Failed or not, the driver had its try: unmapped for us (never tried again).
            self._mapped = False
            self._refused_stream = None
            unregister = self._unregister_after_unmap
        try:
            _check_gl_call(err, "cuGraphicsUnmapResources")
        finally:
            if unregister:
                self._unregister()
        return 0

    cdef int _unregister(self) except -1:
        """cuGraphicsUnregisterResource in the registration's context."""
        cdef CUgraphicsResource handle = self._handle
        cdef CUresult err
        cdef ContextGuard guard
        with nogil:
            enter_context(guard, self._ctx._handle)
            err = cydriver.cuGraphicsUnregisterResource(handle)
        return _check_gl_call(err, "cuGraphicsUnregisterResource")


cdef class GraphicsResource(Resource):
    """An OpenGL buffer or image registered for access by CUDA (``CUgraphicsResource``).

    Not constructible directly: use :meth:`from_gl_buffer` or :meth:`from_gl_image`, with the
    OpenGL context that owns the object current on the calling thread, and the CUDA context of
    the same GPU current too (:meth:`Device.set_current`). Map, unmap and close need that
    OpenGL context current as well: where no OpenGL context is current, each raises
    ``CUDA_ERROR_INVALID_GRAPHICS_CONTEXT`` and changes nothing (an unmap or close is refused
    before the driver is called).

    :meth:`map` gives a buffer resource's memory to CUDA as a :class:`~cuda_core.Buffer`;
    closing that buffer, or :meth:`unmap`, gives it back to OpenGL, stream-ordered. OpenGL must
    not use the object while it is mapped. :meth:`close` (or the end of a ``with`` block, or
    garbage collection) unmaps if needed and unregisters the object.

    Examples
    --------
    ::

        res = GraphicsResource.from_gl_buffer(vbo, flags="write_discard")
        with res.map(stream=s) as buf:   # unmapped at the end of the block
            launch(s, config, kernel, buf, n)
        res.close()

        with GraphicsResource.from_gl_buffer(vbo, stream=s) as buf:
            ...                          # mapped on entry; unmapped and unregistered on exit
    """

    # The registration: handle, context, mapped state, and the memory resource of the
    # buffers map() returns (None for a bare __new__); the buffer map() returned last (None
    # before the first map).
    cdef _GraphicsMapping _mapping
    cdef Buffer _buffer
    # The stream ``with`` maps on (from_gl_buffer(stream=...)); None: ``with`` gives the
    # resource itself.
    cdef Stream _enter_stream

    def __init__(self, *args, **kwargs):
        raise RuntimeError("GraphicsResource objects cannot be instantiated directly; use "
                           "GraphicsResource.from_gl_buffer() or "
                           "GraphicsResource.from_gl_image()")

    def __reduce__(self):
        # As cuda.core: a copy would unregister the registration twice; copy.copy,
        # copy.deepcopy and pickle raise TypeError.
        raise TypeError(f"cannot pickle {type(self).__name__!r} object")

    @classmethod
    def from_gl_buffer(cls, gl_buffer, *, flags=None, stream=None):
        """Register an OpenGL buffer object (``GLuint``) for access by CUDA.

        Parameters
        ----------
        gl_buffer : int
            The buffer's name in the current OpenGL context.
        flags : str or sequence of str, optional
            How CUDA will use it: ``"none"``, ``"read_only"`` or ``"write_discard"``
            (``"surface_load_store"`` and ``"texture_gather"`` are for images).
        stream : Stream, optional
            With a stream, ``with GraphicsResource.from_gl_buffer(vbo, stream=s) as buf``
            maps on entry and gives the :class:`~cuda_core.Buffer`; without one, ``with``
            gives the resource. Either way the block's end closes the resource.

        Returns
        -------
        GraphicsResource

        Raises
        ------
        CUDAError
            If the driver refuses the registration (no OpenGL context current, a name that
            is not a buffer of it, an OpenGL context on another GPU), or no CUDA context is
            current.
        ValueError
            For an unknown flag or one for images only, or a ``gl_buffer`` of 0.
        """
        what = "GraphicsResource.from_gl_buffer()"
        cdef unsigned int name = check_int(gl_buffer, f"{what}: gl_buffer", 0, _GL_NAME_MAX)
        cdef unsigned int cflags = _register_flags(flags, False, what)
        cdef Stream s = as_stream(stream, f"{what}: stream") if stream is not None else None
        cdef CUgraphicsResource handle = NULL
        cdef CUresult err
        if name == 0:
            raise ValueError(f"{what}: gl_buffer is 0, which names no OpenGL buffer")
        ctx = current_context(what)
        with nogil:
            err = cydriver.cuGraphicsGLRegisterBuffer(&handle, name, cflags)
        _check_registration(err, "cuGraphicsGLRegisterBuffer", what)
        return _new_resource(cls, handle, ctx, s)

    @classmethod
    def from_gl_image(cls, image, target, *, flags=None):
        """Register an OpenGL texture or renderbuffer for access by CUDA.

        Parameters
        ----------
        image : int
            The texture's or renderbuffer's name (``GLuint``) in the current OpenGL context.
        target : int
            Its OpenGL target: ``GL_TEXTURE_2D``, ``GL_TEXTURE_RECTANGLE``,
            ``GL_TEXTURE_CUBE_MAP``, ``GL_TEXTURE_3D``, ``GL_TEXTURE_2D_ARRAY`` or
            ``GL_RENDERBUFFER`` (the enum's value, e.g. ``0x0DE1``).
        flags : str or sequence of str, optional
            How CUDA will use it: ``"none"``, ``"read_only"``, ``"write_discard"``,
            ``"surface_load_store"``, ``"texture_gather"``; several combine.

        Returns
        -------
        GraphicsResource
            An image maps as a CUDA array, not a pointer: :meth:`map` refuses it.

        Raises
        ------
        CUDAError
            If the driver refuses the registration (see :meth:`from_gl_buffer`; also an image
            format CUDA does not support).
        ValueError
            For an unknown flag or target, or an ``image`` of 0.
        """
        what = "GraphicsResource.from_gl_image()"
        cdef unsigned int name = check_int(image, f"{what}: image", 0, _GL_NAME_MAX)
        cdef unsigned int gl_target = check_int(target, f"{what}: target", 0, _GL_NAME_MAX)
        cdef unsigned int cflags = _register_flags(flags, True, what)
        cdef CUgraphicsResource handle = NULL
        cdef CUresult err
        if name == 0:
            raise ValueError(f"{what}: image is 0, which names no OpenGL texture or "
                             f"renderbuffer")
        if gl_target not in _IMAGE_TARGETS:
            raise ValueError(f"{what}: target 0x{gl_target:x} is not one CUDA can register; "
                             f"the targets are " + ", ".join(
                                 f"{n} (0x{v:04x})" for v, n in _IMAGE_TARGETS.items()))
        ctx = current_context(what)
        with nogil:
            err = cydriver.cuGraphicsGLRegisterImage(&handle, name, gl_target, cflags)
        _check_registration(err, "cuGraphicsGLRegisterImage", what)
        return _new_resource(cls, handle, ctx, None)

    # -- mapping -------------------------------------------------------------------------------

    def map(self, *, stream):
        """Map the resource for CUDA, ordered on ``stream``: OpenGL work issued before this
        call completes before later work on ``stream`` starts.

        Parameters
        ----------
        stream : Stream
            Required.

        Returns
        -------
        Buffer
            The buffer's memory, valid until it is unmapped: closing the buffer (or ``with``
            on it), :meth:`unmap`, :meth:`close`, or the buffer being garbage-collected.
            Its ``memory_resource`` is None.

        Raises
        ------
        RuntimeError
            If the resource is closed or already mapped.
        CUDAError
            If the driver refuses; for an image, ``CUDA_ERROR_NOT_MAPPED_AS_POINTER`` (the
            resource is left unmapped).
        """
        what = "GraphicsResource.map()"
        cdef Stream s = require_stream(stream, what)
        cdef CUgraphicsResource handle
        cdef CUstream cstream = s._handle
        cdef CUdeviceptr ptr = 0
        cdef size_t size = 0
        cdef CUresult err
        cdef CUresult undo = cydriver.CUDA_SUCCESS
        cdef ContextGuard guard
        cdef _GraphicsMapping mapping
        s._check_open()
        # Check and map as one step. The driver calls keep the GIL (releasing the thread state
        # would suspend the section).
        with cython.critical_section(self):
            self._check_registered()
            mapping = self._mapping
            if mapping._mapped:
                raise RuntimeError(f"{what}: the resource is already mapped; unmap() it, or "
                                   f"close the Buffer map() returned, first")
            handle = mapping._handle
            enter_context(guard, mapping._ctx._handle)
            err = cydriver.cuGraphicsMapResources(1, &handle, cstream)
            if err == cydriver.CUDA_SUCCESS:
                err = cydriver.cuGraphicsResourceGetMappedPointer(&ptr, &size, handle)
                if err != cydriver.CUDA_SUCCESS:
                    undo = cydriver.cuGraphicsUnmapResources(1, &handle, cstream)
            exit_context(guard)
            if err == cydriver.CUDA_ERROR_NOT_MAPPED_AS_POINTER:
                raise make_driver_error(err, f"{what}: an OpenGL image maps as a CUDA array, "
                                             f"not as a pointer; only a buffer maps to a "
                                             f"Buffer")
            if err != cydriver.CUDA_SUCCESS:
                _require_gl_context(what)  # the likeliest cause, named first
            _check_gl_call(err, f"{what}: cuGraphicsMapResources")
            check_call(undo, f"{what}: cuGraphicsUnmapResources")
            mapping._mapped = True
            buf = new_buffer(ptr, size, mapping, s)
            self._buffer = buf
        return buf

    def unmap(self, *, stream=None):
        """Give the memory back to OpenGL: closes the :class:`~cuda_core.Buffer` :meth:`map`
        returned, which must not be used afterwards.

        Parameters
        ----------
        stream : Stream, optional
            The stream the unmap is ordered on (CUDA work issued on it before completes
            before later OpenGL work starts); by default the mapping's stream.

        Raises
        ------
        RuntimeError
            If the resource is closed or not mapped.
        """
        what = "GraphicsResource.unmap()"
        cdef Stream s = as_stream(stream, f"{what}: stream") if stream is not None else None
        self._check_registered()
        if s is not None:
            s._check_open()
        if not self._mapping._mapped:
            raise RuntimeError(f"{what}: the resource is not mapped")
        self._unmap(s)

    cdef int _check_registered(self) except -1:
        """Open, and made by a factory (a bare ``__new__`` has no registration)."""
        self._check_open()
        if self._mapping is None:
            raise RuntimeError("this GraphicsResource was never registered; use "
                               "GraphicsResource.from_gl_buffer() or from_gl_image()")
        return 0

    cdef int _unmap(self, Stream stream) except -1:
        """Close the mapped buffer, which unmaps (or, while a DLPack export of it is alive,
        unmaps at the export's end)."""
        cdef _GraphicsMapping mapping = self._mapping
        cdef Buffer buf = self._buffer
        if mapping is None or not mapping._mapped:
            return 0
        if not buf._closed:
            if stream is not None:
                stream._check_open()
                buf._dealloc_stream = stream
            buf._close()
        elif not buf._deferred:
            # Closed without unmapping (its free failed before the unmap): unmap directly.
            mapping._deallocate_c(0, 0, stream)
        return 0

    # -- lifetime ------------------------------------------------------------------------------

    def close(self, stream=None):
        """Unmap (if mapped), then unregister the object from CUDA. Idempotent.

        Parameters
        ----------
        stream : Stream, optional
            The stream the unmap is ordered on, instead of the mapping's.
        """
        cdef Stream s
        if self._closed:
            return
        if self._mapping is not None:
            # Refused before anything is done: the resource stays open, to close on the
            # OpenGL thread.
            _require_gl_context("GraphicsResource.close()")
        if stream is not None and self._mapping is not None and self._mapping._mapped:
            s = as_stream(stream, "GraphicsResource.close(): stream")
            s._check_open()
            self._unmap(s)
        self._close()

    cdef int _release(self) except -1:
        # Under the section map() holds: a map() racing close() either ends first, and its
        # mapping is undone here, or finds the resource closed.
        with cython.critical_section(self):
            return self._unmap_and_unregister()

    cdef int _unmap_and_unregister(self) except -1:
        cdef _GraphicsMapping mapping = self._mapping
        cdef bint handed_over = False
        if mapping is None:
            return 0
        # close() asked already; the finalizer comes here without it (and leaks, warning).
        _require_gl_context("GraphicsResource.close()")
        unmap_error = None
        try:
            self._unmap(None)
        except CUDAError as exc:
            unmap_error = exc  # the driver had its try: unregister below
        with cython.critical_section(mapping):
            # Still mapped: a DLPack export holds the buffer; the mapping unregisters right
            # after its unmap.
            handed_over = mapping._mapped
            mapping._unregister_after_unmap = handed_over
        self._buffer = None
        if not handed_over:
            mapping._unregister()
        if unmap_error is not None:
            raise unmap_error
        return 0

    cdef size_t _address(self) noexcept:
        return 0 if self._mapping is None else <size_t>self._mapping._handle

    def __enter__(self):
        self._check_registered()
        if self._enter_stream is not None:
            return self.map(stream=self._enter_stream)
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- properties ----------------------------------------------------------------------------

    @property
    def handle(self):
        """The ``CUgraphicsResource`` as an int; 0 once closed."""
        return 0 if self._closed else self._address()

    @property
    def resource_handle(self):
        """The same as :attr:`handle`."""
        return self.handle

    @property
    def is_mapped(self):
        """True while mapped: from :meth:`map` until the unmap (a DLPack export of the buffer
        that outlives the buffer's close keeps it mapped until the export is released)."""
        return self._mapping is not None and self._mapping._mapped

    def __repr__(self):
        state = " closed" if self._closed else (" mapped" if self.is_mapped else "")
        return f"<GraphicsResource 0x{self.handle:x}{state}>"
