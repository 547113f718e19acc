"""Devices: per-thread singletons, one per ordinal."""

import threading
from collections import namedtuple

from cpython.ref cimport PyObject
from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUcontext, CUdevice, CUresult, CUDA_SUCCESS, CUuuid

from cuda_core._checks cimport check_ordinal
from cuda_core._context cimport (Context, ContextGuard, primary_context, context_from_handle,
                                 current_ordinal, enter_context, exit_context,
                                 live_primary_context, refuse_during_body_capture)
from cuda_core._device_properties cimport new_properties
from cuda_core._driver cimport ensure_driver, device_count
from cuda_core._errors cimport HANDLE_RETURN, make_driver_error
from cuda_core._event cimport create_event
from cuda_core._stream cimport Stream, as_stream, create_stream, default_stream_for

from cuda_core._device_properties import DeviceProperties  # re-exported, as cuda.core's is
from cuda_core._errors import CUDAError

__all__ = ["Device", "DeviceProperties", "ComputeCapability"]


cdef extern from "Python.h":
    PyObject* PyThreadState_GetDict()
    PyObject* PyDict_GetItem(object d, object key)


ComputeCapability = namedtuple("ComputeCapability", ["major", "minor"], module=__name__)
ComputeCapability.__doc__ = "A compute capability ``(major, minor)``; compares with tuples."


# Devices are per-thread singletons: each thread's state dict holds a list with one slot per
# ordinal, filled on first use. Reading it costs a dict look-up, not a threading.local access.
cdef str _THREAD_KEY = "cuda_core._device.Device[thread]"


cdef list _thread_devices():
    cdef PyObject* state = PyThreadState_GetDict()
    cdef PyObject* found
    if state == NULL:
        raise RuntimeError("Device: no Python thread state")
    found = PyDict_GetItem(<object>state, _THREAD_KEY)
    if found != NULL:
        return <list>found
    ensure_driver()
    devices = [None] * device_count()
    (<dict><object>state)[_THREAD_KEY] = devices
    return devices


cdef int _check_range(int idx, int count) except -1:
    if idx >= count:
        raise ValueError(f"device_id {idx} is out of range: this machine has {count} CUDA "
                         f"device{'s' if count != 1 else ''}"
                         + (f" (valid ids: 0 to {count - 1})" if count else ""))
    return idx


class Device:
    """A CUDA device: a per-thread singleton for each ordinal.

    ``Device(0) is Device(0)`` within a thread; ``Device(dev) is dev``; ``Device()`` is the
    device of the context current on this thread, or device 0 when none is. Constructing one
    initializes the driver but creates no context: call :meth:`set_current` before creating
    streams, events or memory.

    Parameters
    ----------
    device_id : int, Device or None
        The device ordinal.

    Raises
    ------
    ValueError
        If ``device_id`` is negative or not below the number of devices.
    CUDAError
        If there is no driver or no GPU; the message names which.
    """

    __slots__ = ("_id", "_has_inited", "_properties", "_uuid", "_name", "_default_stream",
                 "_memory_resource", "__weakref__")

    def __new__(cls, device_id=None):
        if type(device_id) is Device:
            return device_id
        cdef list devices
        cdef int idx
        if device_id is None:
            devices = _thread_devices()
            idx = current_ordinal()
        elif isinstance(device_id, Device):
            return device_id
        else:
            idx = check_ordinal(device_id, "device_id")
            devices = _thread_devices()
            _check_range(idx, len(devices))
        dev = devices[idx]
        if dev is None:
            dev = object.__new__(Device)
            dev._id = idx
            dev._has_inited = False
            # Each made or read on first use.
            dev._properties = dev._uuid = dev._name = None
            dev._default_stream = dev._memory_resource = None
            devices[idx] = dev
        return dev

    @classmethod
    def get_all_devices(cls):
        """All devices of this machine, as a tuple ordered by ordinal."""
        return tuple(Device(i) for i in range(len(_thread_devices())))

    # -- identity ---------------------------------------------------------------------------

    @property
    def device_id(self):
        """The device ordinal."""
        return self._id

    def __int__(self):
        return self._id

    def __index__(self):
        return self._id

    def __eq__(self, other):
        if not isinstance(other, Device):
            return NotImplemented
        return self._id == other._id

    def __hash__(self):
        return hash((Device, self._id))

    def __repr__(self):
        return f"<Device {self._id} ({self.name})>"

    def __reduce__(self):
        return (Device, (self._id,))

    @property
    def name(self):
        """The device's product name, e.g. ``"NVIDIA H100 80GB HBM3"``."""
        cdef char buf[256]
        if self._name is None:
            HANDLE_RETURN(cydriver.cuDeviceGetName(buf, sizeof(buf), self._id))
            self._name = buf.decode()
        return self._name

    @property
    def uuid(self):
        """The device's UUID as ``xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx``."""
        cdef CUuuid raw
        if self._uuid is None:
            HANDLE_RETURN(cydriver.cuDeviceGetUuid(&raw, self._id))
            h = bytes((<unsigned char*>raw.bytes)[:16]).hex()
            self._uuid = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        return self._uuid

    @property
    def pci_bus_id(self):
        """The PCI bus id as ``domain:bus:device.function``, e.g. ``"0000:1B:00.0"``."""
        cdef char buf[64]
        HANDLE_RETURN(cydriver.cuDeviceGetPCIBusId(buf, sizeof(buf), self._id))
        return buf.decode()

    @property
    def properties(self):
        """:class:`DeviceProperties`: every device attribute, cached."""
        if self._properties is None:
            self._properties = new_properties(self._id)
        return self._properties

    @property
    def compute_capability(self):
        """:class:`ComputeCapability` ``(major, minor)``."""
        props = self.properties
        return ComputeCapability(props.compute_capability_major, props.compute_capability_minor)

    @property
    def arch(self):
        """The compute capability as a string, e.g. ``"90"`` (for ``sm_90``)."""
        major, minor = self.compute_capability
        return f"{major}{minor}"

    def can_access_peer(self, peer):
        """True if this device can access memory of ``peer`` (a Device or an ordinal).

        .. note:: Calls ``cuDeviceCanAccessPeer``.
        """
        cdef int can = 0
        other = Device(peer)
        if other._id == self._id:
            return True
        HANDLE_RETURN(cydriver.cuDeviceCanAccessPeer(&can, self._id, other._id))
        return bool(can)

    def to_system_device(self):
        """The :class:`cuda_core.system.Device` of this device, found by UUID through NVML.

        .. note:: Calls ``cuDeviceGetUuid`` (once per Device) and ``nvmlDeviceGetHandleByUUID``.

        Raises
        ------
        cuda_core.system.LibraryNotFoundError
            NVML cannot be used (see :mod:`cuda_core.system`).
        cuda_core.system.NotFoundError
            NVML has no device of this UUID.
        """
        from cuda_core.system._device import Device as SystemDevice

        return SystemDevice(uuid=self.uuid)

    # -- context ----------------------------------------------------------------------------

    def set_current(self, ctx=None):
        """Make this device's primary context, or ``ctx``, current on the calling thread.

        .. note:: Calls ``cuDevicePrimaryCtxRetain`` (once per process, and again after other
           code reset the primary context with ``cuDevicePrimaryCtxReset``) and
           ``cuCtxSetCurrent``, like ``cudaSetDevice``.

        Parameters
        ----------
        ctx : Context, optional
            A context to make current instead of the primary one. A context of another device
            is made current by that device (``Device(ctx.device.device_id).set_current(ctx)``,
            as cuda.core 1.3 does); this device's own state does not change.

        Returns
        -------
        Context or None
            With ``ctx``, the context that was current before (None if none was); otherwise
            None.
        """
        cdef Context target
        cdef CUcontext previous = NULL
        if ctx is None:
            target = live_primary_context(self._id)
            HANDLE_RETURN(cydriver.cuCtxSetCurrent(target._handle))
            self._has_inited = True
            return None
        if not isinstance(ctx, Context):
            raise TypeError(f"set_current(): ctx must be a Context or None, not "
                            f"{type(ctx).__name__}")
        target = <Context>ctx
        target._check_open()
        if target._device_id != self._id:
            # As cuda.core 1.3: the device the context belongs to makes it current (and marks
            # itself set up on this thread); this one stays as it was.
            return Device(target._device_id).set_current(target)
        HANDLE_RETURN(cydriver.cuCtxGetCurrent(&previous))
        HANDLE_RETURN(cydriver.cuCtxSetCurrent(target._handle))
        self._has_inited = True
        return None if previous == NULL else context_from_handle(previous)

    def _require_context(self):
        """This device's primary context, once set_current() made it current on this thread
        (or another library did)."""
        cdef CUcontext current = NULL
        cdef CUdevice dev = -1
        cdef Context primary
        if self._has_inited:
            return primary_context(self._id)
        HANDLE_RETURN(cydriver.cuCtxGetCurrent(&current))
        if current != NULL:
            HANDLE_RETURN(cydriver.cuCtxGetDevice(&dev))
            if dev == self._id:
                primary = primary_context(self._id)
                if primary._handle == current:
                    self._has_inited = True
                    return primary
        raise CUDAError(
            f"Device({self._id}) is not initialized on this thread: call "
            f"Device({self._id}).set_current() first", <int>cydriver.CUDA_ERROR_INVALID_CONTEXT,
            "CUDA_ERROR_INVALID_CONTEXT", "no context is current")

    @property
    def context(self):
        """The device's primary :class:`Context` (needs :meth:`set_current`)."""
        return self._require_context()

    @property
    def resources(self):
        """:class:`DeviceResources` of this device: its SMs (``.sm``) and workqueue
        configuration (``.workqueue``), for :meth:`create_context`. Needs no current context.

        .. note:: Reads ``cuDeviceGetDevResource`` (CUDA 12.4+) at each attribute access.
        """
        from cuda_core._green import device_resources
        return device_resources(self._id)

    def create_context(self, options=None):
        """Create a green context: a context that runs its work on the SMs (and workqueue
        configuration) given in ``options``. It is not made current; make streams on it with
        :meth:`Context.create_stream`.

        .. note:: Calls ``cuDevResourceGenerateDesc``, ``cuGreenCtxCreate`` (with
           ``CU_GREEN_CTX_DEFAULT_STREAM``) and ``cuCtxFromGreenCtx``; CUDA 12.4+.

        Parameters
        ----------
        options : ContextOptions or dict
            ``resources``: an :class:`SMResource` of this device (from :attr:`resources` or
            :meth:`SMResource.split`), and optionally a :class:`WorkqueueResource`.

        Returns
        -------
        Context
            A green context (``is_green``). ``close()`` releases it once its streams and
            events are gone.

        Raises
        ------
        TypeError
            If ``options`` is missing or not a ContextOptions (or dict of its fields).
        ValueError
            If a resource belongs to another device, is a dry run's result or has no SMs.
        RuntimeError
            If the driver is older than CUDA 12.4 (13.1 for a WorkqueueResource).
        """
        from cuda_core._green import create_green_context
        return create_green_context(self._id, options)

    @property
    def default_stream(self):
        """The device's default :class:`Stream`: the per-thread default stream when the
        environment sets ``CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM=1``, else the legacy
        default stream. Work on it runs on this device even while another device is current.
        """
        if self._default_stream is None:
            self._default_stream = default_stream_for(self._require_context())
        return self._default_stream

    def create_stream(self, obj=None, options=None):
        """Create a new stream on this device, or wrap a foreign one.

        .. note:: Calls ``cuStreamCreateWithPriority``.

        Parameters
        ----------
        obj : object with ``__cuda_stream__``, optional
            A stream of another library to wrap; it is kept alive by the returned Stream and is
            never destroyed by it. ``options`` must then be None.
        options : StreamOptions or dict, optional
            ``nonblocking`` (default True) and ``priority``.

        Returns
        -------
        Stream
        """
        ctx = self._require_context()
        if obj is not None:
            if options is not None:
                raise ValueError("create_stream(): options cannot be given when wrapping an "
                                 "existing stream (obj)")
            wrapped = as_stream(obj, "create_stream()")
            owner = (<Stream>wrapped)._ctx
            if owner is not None and (<Context>owner)._device_id != self._id:
                raise ValueError(f"create_stream(): the wrapped stream belongs to device "
                                 f"{(<Context>owner)._device_id}, not to device {self._id}")
            return wrapped
        return create_stream(ctx, options)

    @property
    def memory_resource(self):
        """The :class:`MemoryResource` that :meth:`allocate` uses; settable.

        Default: a :class:`DeviceMemoryResource` over the device's current memory pool, or,
        on a device without memory pools, a resource of synchronous ``cuMemAlloc`` calls. Like
        every Device attribute, it belongs to this thread's Device object.
        """
        if self._memory_resource is None:
            if self.properties.memory_pools_supported:
                from cuda_core._memory._device_mr import DeviceMemoryResource
                self._memory_resource = DeviceMemoryResource(self._id)
            else:
                from cuda_core._memory._legacy_mr import _SynchronousMemoryResource
                self._memory_resource = _SynchronousMemoryResource(self._id)
        return self._memory_resource

    @memory_resource.setter
    def memory_resource(self, mr):
        from cuda_core._memory._memory_resource import MemoryResource
        if not isinstance(mr, MemoryResource):
            raise TypeError(f"Device.memory_resource must be a MemoryResource, not "
                            f"{type(mr).__name__}")
        self._memory_resource = mr

    def allocate(self, size, *, stream):
        """Allocate ``size`` bytes from :attr:`memory_resource`, ordered on ``stream``.

        Parameters
        ----------
        size : int
            Number of bytes.
        stream : Stream
            Orders the allocation and, by default, the buffer's eventual free (keyword-only,
            required; pass :attr:`default_stream` for the default stream).

        Returns
        -------
        Buffer
        """
        mr = self._memory_resource
        if mr is None:
            mr = self.memory_resource
        return mr.allocate(size, stream=stream)

    def create_graph_builder(self):
        """A :class:`~cuda_core.graph.GraphBuilder` capturing on a new stream of this device;
        the stream is closed with the builder.

        .. note:: Calls ``cuStreamCreateWithPriority``.
        """
        from cuda_core.graph._builder import _builder_on

        return _builder_on(create_stream(self._require_context(), None), True)

    def create_event(self, options=None):
        """Create a new, unrecorded event on this device.

        .. note:: Calls ``cuEventCreate``.

        Parameters
        ----------
        options : EventOptions or dict, optional

        Returns
        -------
        Event

        Raises
        ------
        TypeError
            If ``options`` asks for an IPC-enabled event: those are made by
            ``Stream.record(options=EventOptions(ipc_enabled=True))``, bound to that record
            (as in cuda.core).
        """
        return create_event(self._require_context(), options)

    def create_opaque_array(self, options):
        """Allocate a CUDA array for textures and surfaces.

        .. note:: Calls ``cuArray3DCreate``.

        Parameters
        ----------
        options : ~cuda_core.texture.OpaqueArrayOptions or dict
            Shape, format, channels and surface access; the shape is checked against the
            device's texture (or surface) size limits first.

        Returns
        -------
        ~cuda_core.texture.OpaqueArray
        """
        from cuda_core.texture._array import create_opaque_array
        return create_opaque_array(self._require_context(), options)

    def create_mipmapped_array(self, options):
        """Allocate a CUDA mipmapped array.

        .. note:: Calls ``cuMipmappedArrayCreate``.

        Parameters
        ----------
        options : ~cuda_core.texture.MipmappedArrayOptions or dict

        Returns
        -------
        ~cuda_core.texture.MipmappedArray
        """
        from cuda_core.texture._array import create_mipmapped_array
        return create_mipmapped_array(self._require_context(), options)

    def create_texture_object(self, *, resource, options=None):
        """Create a bindless texture over ``resource``.

        .. note:: Calls ``cuTexObjectCreate``.

        Parameters
        ----------
        resource : ~cuda_core.texture.ResourceDescriptor, OpaqueArray or MipmappedArray
            What the texture reads; it must belong to this device. While the texture is
            open, the array under it refuses ``close()``.
        options : ~cuda_core.texture.TextureObjectOptions or dict, optional
            Sampling state (default: point filtering, clamped, texel coordinates).

        Returns
        -------
        ~cuda_core.texture.TextureObject

        Raises
        ------
        ValueError
            For a combination the driver refuses or mis-reads: linear filtering of integers
            read as integers, ``wrap``/``mirror`` without normalized coordinates, a Buffer
            that misses the device's alignment or size limits.
        """
        from cuda_core.texture._texture import create_texture_object
        return create_texture_object(self._require_context(), resource, options)

    def create_surface_object(self, *, resource):
        """Create a bindless surface over an array allocated with
        ``is_surface_load_store=True``.

        .. note:: Calls ``cuSurfObjectCreate``.

        Parameters
        ----------
        resource : ~cuda_core.texture.ResourceDescriptor or OpaqueArray

        Returns
        -------
        ~cuda_core.texture.SurfaceObject
        """
        from cuda_core.texture._texture import create_surface_object
        return create_surface_object(self._require_context(), resource)

    def sync(self):
        """Block until all work on this device's primary context has completed, GIL released.

        .. note:: Calls ``cuCtxSynchronize``.
        """
        cdef Context ctx = self._require_context()
        cdef CUresult err
        cdef ContextGuard guard
        refuse_during_body_capture(ctx._handle, NULL, "Device.sync()")
        with nogil:
            enter_context(guard, ctx._handle)
            err = cydriver.cuCtxSynchronize()
            exit_context(guard)
        HANDLE_RETURN(err)
