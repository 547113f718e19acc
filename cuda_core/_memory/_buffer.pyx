"""Buffers.

A :class:`Buffer` is a pointer, a size, and an answer to "who frees it":

* an **owning** buffer holds the :class:`MemoryResource` that allocated it and frees the memory
  through ``mr.deallocate(ptr, size, stream=...)`` on :meth:`Buffer.close` or when it is
  garbage-collected; the buffer keeps its resource alive;
* an **owner-kept** buffer holds an arbitrary ``owner`` object alive until it is closed, and
  never frees anything;
* a **view** holds neither: the caller keeps the memory alive.

The device pointer lives in the C field ``Buffer._ptr`` (see ``_buffer.pxd``), so Cython code
such as the kernel launcher reads it without a Python call.

Frees are stream-ordered. A buffer remembers the stream that orders its eventual free (the
allocation stream, the ``stream`` given to ``from_handle``, or the one set by
:meth:`Buffer.set_deallocation_stream`); ``close(stream)`` overrides it for that call.

A buffer is a :class:`~cuda_core._resource.Resource`: its ``_release`` is its free (deferred
to the end of the last DLPack export while one is alive). The :class:`MemoryResource` base
class is in ``_memory_resource``, the copies and fills in ``_copy``, the helpers every memory
module shares in ``_alloc``.
"""

cimport cython
from cuda.bindings.cydriver cimport CUdeviceptr
from cpython.buffer cimport PyBuffer_FillInfo
from libc.stdint cimport int32_t

from cuda_core._atomic cimport load_int, store_int
from cuda_core._checks cimport check_address, check_size
from cuda_core._context cimport context_gone, current_context_gone
from cuda_core._resource cimport Resource, warn_release_failed
from cuda_core._stream cimport Stream, as_stream, optional_stream, require_stream
from cuda_core._memory._memory_resource cimport MemoryResource
from cuda_core._memory._alloc cimport (ATTR_DEVICE, ATTR_HOST, ATTR_MANAGED, pointer_kind,
                                       stream_context, sync_context)
from cuda_core._memory._copy cimport check_copy_options, copy_with_options, fill_bytes
from cuda_core._memory._dlpack cimport dlpack_device, export_args, export_target, make_capsule

__all__ = ["Buffer"]


# Buffer's IPC members (see _buffer.pxd): set once, while _memory._ipc is imported (which
# cuda_core._memory is to do before any buffer is used), and only read afterwards.
cdef ipc_export_fn _ipc_export = NULL
cdef ipc_import_fn _ipc_import = NULL
cdef ipc_reduce_fn _ipc_reduce = NULL


cdef int register_ipc(ipc_export_fn export, ipc_import_fn import_,
                      ipc_reduce_fn reduce) except -1:
    """Install the IPC members' implementations, once: a second registration, or a missing
    implementation, is refused (RuntimeError); a member used before it raises one too."""
    global _ipc_export, _ipc_import, _ipc_reduce
    if export == NULL or import_ == NULL or reduce == NULL:
        raise RuntimeError("register_ipc(): export, import_ and reduce are all required")
    if _ipc_export != NULL:
        raise RuntimeError("register_ipc(): Buffer's IPC hooks are already registered")
    _ipc_import = import_
    _ipc_reduce = reduce
    _ipc_export = export
    return 0


cdef Buffer as_buffer(object obj, str what):
    """``obj`` if it is a Buffer, else a TypeError; ``what`` names the argument
    (``"<call>: <name>"``)."""
    if not isinstance(obj, Buffer):
        raise TypeError(f"{what} must be a Buffer, not {type(obj).__name__}")
    return <Buffer>obj


cdef Buffer new_buffer(CUdeviceptr ptr, size_t size, MemoryResource mr, Stream stream):
    """A new owning Buffer (or view when ``mr`` is None); the allocators' fast path."""
    cdef Buffer buf = Buffer.__new__(Buffer)
    init_buffer(buf, ptr, size, mr, stream)
    return buf


cdef int init_buffer(Buffer buf, CUdeviceptr ptr, size_t size, MemoryResource mr,
                     Stream stream) except -1:
    """Fill a freshly created Buffer, or instance of a subclass (e.g. ManagedBuffer)."""
    buf._ptr = ptr
    buf._size = size
    buf._mr = mr
    buf._dealloc_stream = stream
    return 0


cdef class _ExportGuard:
    """One live DLPack export of a Buffer: the capsule's deleter drops the last reference to
    it, and its end tells the buffer that the consumer is done."""

    cdef Buffer _buf

    def __dealloc__(self):
        cdef Buffer buf = self._buf
        if buf is not None:
            self._buf = None
            buf._export_released()


cdef class Buffer(Resource):
    """A range of memory: a pointer, a size, and who frees it. Not constructible directly.

    Buffers come from :meth:`MemoryResource.allocate` (and :meth:`Device.allocate`), or wrap an
    existing allocation with :meth:`Buffer.from_handle`. An owning buffer frees its memory
    through its memory resource on :meth:`close` or when it is garbage-collected, ordered on its
    deallocation stream. ``with buf:`` closes it at the end of the block.

    Buffers compare equal, and hash alike, when they have the same address and size. Every
    method and property of a closed buffer except ``is_closed`` raises ``RuntimeError``.
    Host-accessible memory also offers the Python buffer protocol: ``memoryview(buf)`` is its
    bytes, writable, without a copy (memory the CPU cannot read raises ``BufferError``).
    While a DLPack export or a memoryview of the buffer is alive, its memory stays valid:
    closing the buffer then only marks it closed, and the memory is freed when the last one is
    released.

    A buffer of an IPC-enabled memory resource can be shared with another process, through
    :attr:`ipc_descriptor` or pickling (as ``multiprocessing`` does); unpickling one imports
    memory the sender chose: see the warning of :meth:`from_ipc_descriptor`.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Buffer objects cannot be instantiated directly; use "
                           "MemoryResource.allocate(), Device.allocate() or "
                           "Buffer.from_handle()")

    @classmethod
    def from_handle(cls, ptr, size, mr=None, owner=None, *, stream=None):
        """Wrap an existing allocation in a Buffer.

        Who frees the memory:

        * with ``mr``: the buffer owns the pointer and frees it with
          ``mr.deallocate(ptr, size, stream=...)`` on :meth:`close` or garbage collection,
          ordered on ``stream`` (or the one given to ``close``);
        * with ``owner``: the buffer keeps ``owner`` alive until it is closed, and never frees
          anything (the owner's own lifetime frees the memory);
        * with neither: a non-owning view; the caller keeps the memory alive while the buffer
          is used.

        Parameters
        ----------
        ptr : int or cuda.bindings.driver.CUdeviceptr
            The address.
        size : int
            The size in bytes.
        mr : MemoryResource, optional
            The resource that frees the memory.
        owner : object, optional
            An object that keeps the memory alive.
        stream : Stream, optional
            The stream that orders the eventual free (owning buffers); also the stream DLPack
            consumers are ordered after.

        Returns
        -------
        Buffer

        Raises
        ------
        ValueError
            If both ``mr`` and ``owner`` are given, or ``ptr`` is 0 with a non-zero size.
        TypeError
            If ``mr`` is not a MemoryResource, or ``ptr``/``size`` are not ints.
        """
        cdef CUdeviceptr p = check_address(ptr, "Buffer.from_handle(): ptr")
        cdef size_t n = check_size(size, "Buffer.from_handle(): size")
        cdef Stream s
        cdef Buffer buf
        if mr is not None and owner is not None:
            raise ValueError("Buffer.from_handle(): give mr (the buffer frees the memory "
                             "through it) or owner (the buffer keeps owner alive and frees "
                             "nothing), not both")
        if mr is not None and not isinstance(mr, MemoryResource):
            raise TypeError(f"Buffer.from_handle(): mr must be a MemoryResource or None, not "
                            f"{type(mr).__name__}")
        if p == 0 and n != 0:
            raise ValueError(f"Buffer.from_handle(): ptr is 0 (NULL) but size is {n}")
        if not (isinstance(cls, type) and issubclass(cls, Buffer)):
            raise TypeError("from_handle() must be called on Buffer or a subclass of it")
        s = optional_stream(stream, "Buffer.from_handle()")
        buf = cls.__new__(cls)
        init_buffer(buf, p, n, mr, s)
        buf._owner = owner
        return buf

    # -- identity and attributes -------------------------------------------------------------

    @property
    def handle(self):
        """The address of the memory, as an int."""
        self._check_open()
        return self._ptr

    @property
    def size(self):
        """The size in bytes."""
        self._check_open()
        return self._size

    @property
    def memory_resource(self):
        """The :class:`MemoryResource` that frees this buffer, or None (a view, an owner-kept
        buffer, or a mapped graphics resource's buffer, which unmaps instead)."""
        self._check_open()
        return self._public_mr()

    cdef MemoryResource _public_mr(self):
        """The memory resource users see: None for the package's internal ones."""
        if self._mr is not None and self._mr._internal:
            return None
        return self._mr

    @property
    def owner(self):
        """The object this buffer keeps alive (``from_handle(..., owner=...)``), or None."""
        self._check_open()
        return self._owner

    cdef MemoryResource _open_mr(self):
        """The memory resource, read once (a close() on another thread clears it, and its
        properties may run Python code): None for a buffer without one; RuntimeError once the
        buffer is closed."""
        self._check_open()
        mr = self._mr
        if mr is None:
            self._check_open()  # None because the buffer was closed (and freed) meanwhile
        return mr

    cdef int _query_attributes(self) except -1:
        """Classify a pointer without a memory resource, from the driver's pointer attributes
        (once: _alloc.pointer_kind)."""
        cdef int32_t dev_id = -1
        cdef int flags
        # Published as the _attr_device store, then the _attr_flags one (release): a reader
        # that sees the flags (acquire, _attr_bits) sees the device too. Threads that query at
        # once store the same values.
        if load_int(&self._attr_flags):
            return 0
        flags = pointer_kind(self._ptr, &dev_id)
        store_int(&self._attr_device, dev_id)
        store_int(&self._attr_flags, flags)
        return 0

    cdef int _attr_bits(self) except -1:
        """The ATTR_* flags of a buffer without a memory resource, queried first if needed."""
        self._query_attributes()
        return load_int(&self._attr_flags)

    @property
    def device_id(self):
        """The ordinal of the device the memory belongs to; -1 for host memory.

        From the memory resource, or the driver's pointer attributes for a buffer without one.
        """
        cdef MemoryResource mr = self._open_mr()
        if mr is not None:
            return mr.device_id
        self._attr_bits()
        return load_int(&self._attr_device)

    cdef object _memory_kind(self, str name, int flag):
        """The memory resource's property ``name``, or, for a buffer without one, whether the
        driver's pointer attributes have ``flag`` (an ``ATTR_*``)."""
        cdef MemoryResource mr = self._open_mr()
        if mr is not None:
            return getattr(mr, name)
        return bool(self._attr_bits() & flag)

    @property
    def is_device_accessible(self):
        """True if the GPU can access the memory."""
        return self._memory_kind("is_device_accessible", ATTR_DEVICE)

    @property
    def is_host_accessible(self):
        """True if the CPU can access the memory."""
        return self._memory_kind("is_host_accessible", ATTR_HOST)

    @property
    def is_managed(self):
        """True for managed (unified) memory."""
        return bool(self._memory_kind("is_managed", ATTR_MANAGED))

    @property
    def is_mapped(self):
        """True if the memory was mapped from another process through IPC (imported, or
        unpickled), or the memory resource says so (its ``is_mapped``)."""
        cdef MemoryResource mr = self._open_mr()
        if self._mapped:
            return True
        if mr is not None:
            return bool(getattr(mr, "is_mapped", False))
        return False

    def __eq__(self, other):
        if not isinstance(other, Buffer):
            return NotImplemented
        return self._ptr == (<Buffer>other)._ptr and self._size == (<Buffer>other)._size

    def __hash__(self):
        return hash((Buffer, self._ptr, self._size))

    def __repr__(self):
        if self._closed:
            return f"<{type(self).__name__} closed>"
        who = type(self._mr).__name__ if self._mr is not None else (
            "owner-kept" if self._owner is not None else "view")
        return f"<{type(self).__name__} ptr=0x{self._ptr:x} size={self._size} ({who})>"

    # -- IPC: implemented in _memory._ipc (see register_ipc) ----------------------------------

    @property
    def ipc_descriptor(self):
        """The ``IPCBufferDescriptor`` another process imports this buffer with
        (:meth:`from_ipc_descriptor`).

        A pool buffer's is made once and kept, and an imported pool buffer gives the one it
        was imported from, so that it can be passed on. A ``VirtualMemoryResource`` buffer's
        is made afresh at each access and owns one file descriptor per chunk, closed when it
        is dropped. Importers can use the memory while this buffer is open.

        Raises
        ------
        RuntimeError
            If the buffer's memory resource is not IPC-enabled (or there is none).
        TypeError
            If the resource says it is IPC-enabled but is not one cuda_core can export from.
        ValueError
            If the buffer is empty (nothing to share).
        """
        self._check_open()
        if _ipc_export == NULL:
            raise RuntimeError("cuda_core._memory._ipc is not loaded")
        return _ipc_export(self)

    @classmethod
    def from_ipc_descriptor(cls, mr, ipc_descriptor, *, stream):
        """Import a buffer that another process exported (:attr:`ipc_descriptor`).

        Parameters
        ----------
        mr : MemoryResource
            The resource the memory is imported through: the exporting process's IPC-enabled
            resource as mapped into this one (``from_allocation_handle``, or unpickled), not
            the exporter's own.
        ipc_descriptor : object
            The ``IPCBufferDescriptor``, from the exporting process.
        stream : Stream
            The stream that orders the buffer's eventual release (keyword-only, required).

        Returns
        -------
        Buffer
            An owning buffer of the shared memory (:attr:`is_mapped` is True). Closing it
            unmaps the memory here; the exporter frees it.

        Raises
        ------
        TypeError
            If ``mr`` or ``ipc_descriptor`` is of the wrong kind, or they do not fit together.
        RuntimeError
            If ``mr`` is not IPC-enabled, or is closed.
        ValueError
            If the descriptor states more bytes than the shared allocation has, or names
            another device than ``mr``'s.
        CUDAError
            If the driver does not recognize the descriptor (from another resource, or not a
            descriptor at all). A descriptor of a buffer the exporter has already freed is
            not always refused: the driver may give its bytes to a later allocation of the same
            pool, which the import then maps. Import descriptors of live buffers only.

        Warnings
        --------
        Importing memory trusts the process that exported it. A descriptor (and a pickled
        buffer, which carries one) is the exporter's word: a token naming memory of its choice,
        and a size that decides how far later copies and kernels reach. The token's length,
        that the driver knows it, that the size fits the shared allocation and the device
        matches are checked; the exporter's intent cannot be: it may keep writing to the
        memory, or share it with others too. Import only from processes you trust, over
        channels only they can write to (the ``multiprocessing`` Queues and Pipes of your
        program); never unpickle a buffer or a descriptor read from a file, a socket or a user
        (unpickling runs code anyway: one more reason to keep pickles inside your program).
        """
        if _ipc_import == NULL:
            raise RuntimeError("cuda_core._memory._ipc is not loaded")
        if not (isinstance(cls, type) and issubclass(cls, Buffer)):
            raise TypeError("from_ipc_descriptor() must be called on Buffer or a subclass of it")
        return _ipc_import(cls, mr, ipc_descriptor, stream)

    def __reduce__(self):
        """Pickled as its memory resource and :attr:`ipc_descriptor` (IPC-enabled resources
        only, else a RuntimeError, as cuda.core); unpickling imports it: see
        :meth:`from_ipc_descriptor`."""
        if _ipc_reduce == NULL:  # a TypeError: what pickle and copy expect of the unpicklable
            raise TypeError("Buffer objects cannot be pickled here: pickling shares the buffer "
                            "through IPC, and cuda_core._memory._ipc is not loaded")
        return _ipc_reduce(self)

    # -- lifetime ------------------------------------------------------------------------------

    def __enter__(self):
        self._check_open()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.close()
        return False

    def set_deallocation_stream(self, stream):
        """Order the eventual free of this buffer on ``stream`` instead.

        Parameters
        ----------
        stream : Stream or an object with ``__cuda_stream__``
        """
        cdef Stream s = require_stream(stream, "Buffer.set_deallocation_stream()")
        with cython.critical_section(self):  # (free-threaded: _free swaps it out)
            self._check_open()
            self._dealloc_stream = s

    def close(self, stream=None):
        """Free the memory (owning buffers) or drop the owner (owner-kept buffers). Idempotent.

        The free is ordered on ``stream`` when given, else on the buffer's deallocation stream.
        If a DLPack export of the buffer is still alive, the buffer is marked closed now and
        the memory is freed when the last export is released.

        Parameters
        ----------
        stream : Stream, optional
            The stream that orders the free.

        Notes
        -----
        Calls ``mr.deallocate(ptr, size, stream=...)``; for the pool resources that is
        ``cuMemFreeAsync``.
        """
        cdef Stream s = None
        if self._closed:
            return
        if stream is not None:
            s = as_stream(stream, "Buffer.close()")
            s._check_open()
        if not self._closing():
            return  # closed meanwhile, by another thread
        if s is not None:
            with cython.critical_section(self):
                self._dealloc_stream = s
        self._close_claimed()

    cdef int _release(self) except -1:
        """Close (or finalize): drop the owner, and free the memory unless a DLPack export is
        alive, whose end frees it instead (_export_released)."""
        cdef bint deferred
        # Decided in the section that exports count in: an export on another thread either
        # counted before (the free waits for it) or sees the buffer closed.
        with cython.critical_section(self):
            owner, self._owner = self._owner, None
            deferred = self._deferred = self._exports > 0
        owner = None  # dropped outside the section: its end may run any code
        if deferred:
            return 0
        return self._free()

    cdef size_t _address(self) noexcept:
        return <size_t>self._ptr

    cdef bint _orphaned(self) noexcept:
        # Gone with the context of the stream that orders the free (else the current one).
        with cython.critical_section(self):
            s = self._dealloc_stream
        if self._mr is None:
            return False
        return context_gone(s._ctx) if s is not None and s._ctx is not None else \
            current_context_gone()

    cdef int _free(self) except -1:
        """Give the memory back through the resource (owning buffers), ordered on the
        deallocation stream; the buffer is already closed."""
        cdef MemoryResource mr
        cdef Stream s
        with cython.critical_section(self):  # (free-threaded: set_deallocation_stream)
            mr = self._mr
            s = self._dealloc_stream
            self._dealloc_stream = None
            self._mr = None
        if mr is None:
            return 0
        if s is not None and s._closed:
            # The stream that ordered the free is gone while its work may still run: wait
            # for its context before handing the memory back.
            sync_context(stream_context(s))
            s = None
        if mr._c_dealloc:
            mr._deallocate_c(self._ptr, self._size, s)
        else:
            mr.deallocate(self._ptr, self._size, stream=s)
        return 0

    cdef int _export_acquired(self) except -1:
        """Count one more export, unless the buffer is closed (RuntimeError): checked in the
        section that close() decides in, so a close() on another thread either waits for this
        export or is seen here."""
        with cython.critical_section(self):
            self._check_open()
            self._exports += 1
        return 0

    cdef int _export_released(self) noexcept:
        # With the GIL held: one DLPack export ended. The last one after close() frees, once:
        # the count and the decision share a critical section with close() and the exports.
        cdef bint last
        with cython.critical_section(self):
            self._exports -= 1
            last = self._exports == 0 and self._deferred
            if last:
                self._deferred = False
        if last:
            try:
                self._free()
            except BaseException as exc:
                warn_release_failed(type(self).__name__, <size_t>self._ptr, exc)
        return 0

    # -- copies and fill -----------------------------------------------------------------------

    def copy_to(self, dst=None, *, stream, options=None):
        """Copy this buffer's bytes into ``dst``, asynchronously on ``stream``.

        Any direction works (device, pinned or plain host, managed, another device's memory):
        the driver's unified addressing finds out where each side lives.

        Parameters
        ----------
        dst : Buffer, optional
            The destination, of the same size. When None, a new buffer is allocated from this
            buffer's memory resource (on ``stream``); an imported (IPC) buffer's cannot: pass
            ``dst``.
        stream : Stream
            The stream that orders the copy (keyword-only, required).
        options : utils.CopyOptions, optional
            Copy hints; refused (TypeError) on the legacy default stream or a capturing stream.

        Returns
        -------
        Buffer
            ``dst``, or the new buffer.

        Raises
        ------
        ValueError
            If the sizes differ (the message names both), or ``dst`` is None and this buffer
            has no memory resource.

        Notes
        -----
        Calls ``cuMemcpyAsync`` (with ``options``: ``cuMemcpyWithAttributesAsync``).
        """
        cdef Stream s = require_stream(stream, "Buffer.copy_to()")
        cdef Buffer d
        self._check_open()
        s._check_open()
        options = check_copy_options(options, s, "Buffer.copy_to()")
        if dst is None:
            if self._public_mr() is None:
                raise ValueError("Buffer.copy_to(): dst is None and this buffer has no memory "
                                 "resource to allocate it from; pass dst")
            new = self._mr.allocate(self._size, stream=s)
            if not isinstance(new, Buffer):
                raise TypeError(f"Buffer.copy_to(): {type(self._mr).__name__}.allocate() "
                                f"returned {type(new).__name__}, not a Buffer")
            d = <Buffer>new
        elif isinstance(dst, Buffer):
            d = <Buffer>dst
        else:
            raise TypeError(f"Buffer.copy_to(): dst must be a Buffer or None, not "
                            f"{type(dst).__name__}")
        d._check_open()
        if d._size != self._size:
            raise ValueError(f"Buffer.copy_to(): size mismatch: this buffer has {self._size} "
                             f"bytes but dst has {d._size} bytes")
        copy_with_options(d._ptr, self._ptr, self._size, s, options, "Buffer.copy_to()")
        return d

    def copy_from(self, src, *, stream, options=None):
        """Copy the bytes of ``src`` into this buffer, asynchronously on ``stream``.

        Parameters
        ----------
        src : Buffer
            The source, of the same size.
        stream : Stream
            The stream that orders the copy (keyword-only, required).
        options : utils.CopyOptions, optional
            As for :meth:`copy_to`.

        Raises
        ------
        ValueError
            If the sizes differ (the message names both).

        Notes
        -----
        Calls ``cuMemcpyAsync`` (with ``options``: ``cuMemcpyWithAttributesAsync``).
        """
        cdef Stream s = require_stream(stream, "Buffer.copy_from()")
        cdef Buffer sb
        self._check_open()
        s._check_open()
        sb = as_buffer(src, "Buffer.copy_from(): src")
        sb._check_open()
        if sb._size != self._size:
            raise ValueError(f"Buffer.copy_from(): size mismatch: this buffer has "
                             f"{self._size} bytes but src has {sb._size} bytes")
        options = check_copy_options(options, s, "Buffer.copy_from()")
        copy_with_options(self._ptr, sb._ptr, self._size, s, options, "Buffer.copy_from()")

    def fill(self, value, *, stream):
        """Fill the buffer with a repeated 1-, 2- or 4-byte pattern, asynchronously.

        Parameters
        ----------
        value : int or buffer-protocol object
            An int in [0, 256) fills bytes (a bool is 0 or 1); an object of 1, 2 or 4 bytes
            that supports the buffer protocol (``np.uint8(3)``, ``np.uint16(7)``,
            ``np.float32(1.0)``, ``bytes``) is repeated as is, in the machine's byte order.
        stream : Stream
            The stream that orders the fill (keyword-only, required).

        Raises
        ------
        TypeError
            If ``value`` is neither.
        OverflowError
            If an int is out of range, as in cuda.core (``FillValueOverflowError``, also a
            ``ValueError``).
        ValueError
            If the pattern is not 1, 2 or 4 bytes, the size is not a multiple of the pattern, or
            the address is not aligned to it.

        Notes
        -----
        Calls ``cuMemsetD8Async``, ``cuMemsetD16Async`` or ``cuMemsetD32Async``.
        """
        cdef Stream s = require_stream(stream, "Buffer.fill()")
        self._check_open()
        s._check_open()
        fill_bytes(self._ptr, self._size, value, s)

    # -- DLPack ---------------------------------------------------------------------------------

    def __dlpack_device__(self):
        """``(device_type, device_id)`` of the DLPack export: kDLCUDA (2) for device memory,
        kDLCUDAHost (3) for pinned host memory, kDLCUDAManaged (13) for managed memory, kDLCPU
        (1) for other host memory."""
        self._check_open()
        return self._dl_device()

    cdef tuple _dl_device(self):
        cdef bint dev_acc, host_acc, managed
        cdef int dev_id, flags
        cdef MemoryResource mr = self._open_mr()
        if mr is not None:
            dev_acc = mr.is_device_accessible
            host_acc = mr.is_host_accessible
            managed = mr.is_managed
            dev_id = mr.device_id
        else:
            flags = self._attr_bits()
            dev_acc = flags & ATTR_DEVICE
            host_acc = flags & ATTR_HOST
            managed = flags & ATTR_MANAGED
            dev_id = load_int(&self._attr_device)
        return dlpack_device(dev_acc, host_acc, managed, dev_id)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export the buffer as a DLPack capsule: a 1-D int8 tensor of ``size`` elements.

        The export is zero-copy and keeps the buffer alive; the memory stays valid until the
        consumer releases the tensor, even if the buffer is closed meanwhile.

        Parameters
        ----------
        stream : int or None
            The consumer's stream, per the DLPack protocol, for memory a device can access: the
            consumer's stream waits (through an event) for the work queued so far on this
            buffer's stream (its deallocation stream, see :meth:`set_deallocation_stream`).
            None means the legacy default stream (1), 2 the per-thread default stream, -1 no
            synchronization; 0 is ambiguous and refused. For host memory it must be None or -1.
        max_version : tuple of two ints, optional
            The newest DLPack version the consumer understands. A major version >= 1 gets a
            versioned capsule (``"dltensor_versioned"``); None or an older version gets a
            legacy one (``"dltensor"``).
        dl_device : tuple of two ints, optional
            The device the consumer wants the tensor on; it must be this buffer's
            (:meth:`__dlpack_device__`), or ``(kDLCPU, 0)`` for pinned or managed memory,
            which the host can read in place.
        copy : bool, optional
            ``True`` is refused: the export never copies.

        Raises
        ------
        BufferError
            For ``copy=True``, another ``dl_device``, or a stream that does not apply.
        TypeError
            If ``max_version`` or ``dl_device`` is not a tuple, or holds something other than
            ints; if ``stream`` is not an int or ``copy`` not a bool.
        ValueError
            If ``max_version`` or ``dl_device`` does not hold exactly two items, or
            ``max_version`` holds a negative number.
        """
        cdef int dev_type, dev_id
        cdef bint versioned = False
        self._check_open()
        # Every argument is checked before the buffer's device is asked for.
        want = export_args(stream, max_version, dl_device, copy, &versioned)
        dev_type, dev_id = self._dl_device()
        with cython.critical_section(self):
            dealloc_stream = self._dealloc_stream
        export_target(want, stream, dealloc_stream, &dev_type, &dev_id)
        guard = _ExportGuard.__new__(_ExportGuard)
        self._export_acquired()
        (<_ExportGuard>guard)._buf = self  # its end gives the count back
        return make_capsule(self._ptr, self._size, dev_type, dev_id, guard, versioned)

    def __getbuffer__(self, Py_buffer* view, int flags):
        # memoryview(buf): the bytes of host-accessible memory, writable, without a copy. As a
        # DLPack export does, the view keeps the memory valid: close() meanwhile defers the
        # free to the release of the last view.
        self._check_open()
        if not self.is_host_accessible:
            raise BufferError(f"{type(self).__name__} at {<size_t>self._ptr:#x} is not "
                              f"host-accessible: the Python buffer protocol needs memory the "
                              f"CPU can read (copy it to pinned or managed memory first)")
        PyBuffer_FillInfo(view, self, <void*>self._ptr, <Py_ssize_t>self._size, False, flags)
        self._export_acquired()

    def __releasebuffer__(self, Py_buffer* view):
        self._export_released()
