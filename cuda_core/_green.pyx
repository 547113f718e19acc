"""Green contexts and device resources.

A green context runs its work on a partition of the device's SMs. The path is the driver's:
the device's SM resource (``cuDeviceGetDevResource``) is split (``cuDevSmResourceSplit`` on a
CUDA 13.1+ driver, else ``cuDevSmResourceSplitByCount``), a group becomes a descriptor
(``cuDevResourceGenerateDesc``) and a green context (``cuGreenCtxCreate``), and streams are
made on it (``cuGreenCtxStreamCreate``). Resources are plain data: an :class:`SMResource` or a
:class:`WorkqueueResource` holds a copy of the driver's ``CUdevResource`` struct and owns
nothing.

Ownership: one :class:`Resource` (``_GreenCtxOwner``) owns the ``CUgreenCtx``. The user's
:class:`Context` holds a second ``Context`` object for the same handle (the view), and the view
holds the owner. Streams made on the context, and events and buffers made through those
streams, hold the view, so ``Context.close()`` (which drops the user's object's hold on the
view) destroys the green context only once none of them is left: never under a live stream.

Every argument is checked before the first driver call. Entry points newer than the running
driver are refused with a ``RuntimeError`` naming the CUDA version they need, never called.
"""

cimport cython
from cuda.bindings cimport cydriver
from cuda_core cimport _cuda_compat
from cuda_core._cuda_compat cimport CU_DEV_SM_RESOURCE_GROUP_PARAMS
from cuda.bindings.cydriver cimport (
    CUcontext,
    CUdevResource,
    CUdevResourceDesc,
    CUgreenCtx,
    CUresult,
    CUstream,
)
from libcpp.vector cimport vector

from cuda_core._checks cimport check_bool
from cuda_core._context cimport Context, ContextGuard, enter_context, exit_context
from cuda_core._driver cimport driver_version
from cuda_core._errors cimport check_call
from cuda_core._resource cimport Resource
from cuda_core._stream cimport Stream, check_priority, new_owned_stream

from cuda_core._green_options import (
    ContextOptions,
    SMResourceOptions,
    WorkqueueResourceOptions,
    WorkqueueSharingScopeType,
)
from cuda_core._options import StreamOptions, check_or_create_options

__all__ = [
    "ContextOptions",
    "DeviceResources",
    "SMResource",
    "SMResourceOptions",
    "WorkqueueResource",
    "WorkqueueResourceOptions",
]

# The first driver of each entry point used here.
_GREEN = (12, 4)           # cuDeviceGetDevResource, cuDevSmResourceSplitByCount, cuGreenCtx*
_GREEN_STREAM = (12, 5)    # cuGreenCtxStreamCreate
_SPLIT = (13, 1)           # cuDevSmResourceSplit, workqueue resources

_SCOPES = (WorkqueueSharingScopeType.DEVICE_CTX, WorkqueueSharingScopeType.GREEN_CTX_BALANCED)


cdef int _require(tuple needed, str what) except -1:
    """Refuse ``what`` unless the running driver is at least CUDA ``needed``, and this build
    was compiled for its major (a CUDA 12 build has no CUDA 13 entry points)."""
    have = driver_version()
    if have < needed:
        raise RuntimeError(f"{what} needs a CUDA {needed[0]}.{needed[1]} driver or newer; this "
                           f"driver supports CUDA {have[0]}.{have[1]}")
    _cuda_compat.require_build(needed[0] * 1000 + needed[1] * 10, what)
    return 0


cdef class _GreenCtxOwner(Resource):
    """Owns one ``CUgreenCtx``; released (``cuGreenCtxDestroy``) when the last object that
    needs the green context lets it go."""

    cdef CUgreenCtx _handle

    def __init__(self, *args, **kwargs):
        raise RuntimeError("_GreenCtxOwner objects cannot be instantiated directly")

    cdef int _release(self) except -1:
        cdef CUresult err
        if self._handle != NULL:  # an object never given a handle releases nothing
            with nogil:  # as every destroy in a finalizer (DESIGN.md, the calls that wait)
                err = cydriver.cuGreenCtxDestroy(self._handle)
            check_call(err, "cuGreenCtxDestroy")
        return 0

    cdef size_t _address(self) noexcept:
        return <size_t>self._handle


cdef class _DeviceResource:
    """The base of :class:`SMResource` and :class:`WorkqueueResource`: a copy of the driver's
    ``CUdevResource`` of one device; it owns nothing."""

    cdef CUdevResource _res
    cdef int _device_id
    cdef object __weakref__

    @property
    def handle(self):
        """The address of the ``CUdevResource`` struct this object holds (valid while it
        lives)."""
        return <size_t>&self._res


cdef class SMResource(_DeviceResource):
    """A set of SMs: the whole device's (:attr:`DeviceResources.sm`), a green context's, or
    one group of :meth:`split`. Not constructible.

    It holds a copy of the driver's ``CUdevResource`` and owns nothing.
    """

    cdef bint _dry_run

    def __init__(self, *args, **kwargs):
        raise RuntimeError("SMResource objects cannot be instantiated directly; use "
                           "Device.resources.sm or SMResource.split()")

    @property
    def sm_count(self):
        """The number of SMs."""
        return self._res.sm.smCount

    @property
    def min_partition_size(self):
        """The fewest SMs a partition of this resource can have."""
        return _cuda_compat.sm_min_partition_size(&self._res)

    @property
    def coscheduled_alignment(self):
        """The number of SMs guaranteed to be co-scheduled; partition sizes are multiples of
        it (unless backfilled)."""
        return _cuda_compat.sm_coscheduled_alignment(&self._res)

    @property
    def flags(self):
        """The driver's flags of this resource (``CUdevSmResourceGroup_flags``)."""
        return _cuda_compat.sm_flags(&self._res)

    def split(self, options, *, dry_run=False):
        """Split these SMs into disjoint groups and a remainder.

        .. note:: Calls ``cuDevSmResourceSplit`` on a CUDA 13.1+ driver, else
           ``cuDevSmResourceSplitByCount``, which takes only groups of one ``count``: other
           requests then raise ``RuntimeError`` naming CUDA 13.1.

        Parameters
        ----------
        options : SMResourceOptions or dict
            The groups to make.
        dry_run : bool, optional
            Only report what the split would give: the results carry their metadata but
            cannot make a context or be split again.

        Returns
        -------
        tuple[list[SMResource], SMResource]
            The groups, in the order asked, and the SMs left over.

        Raises
        ------
        ValueError
            If the counts add up to more SMs than this resource has, or the driver can make
            fewer groups than asked for.
        """
        opts = check_or_create_options(SMResourceOptions, options, "SMResource.split(): options")
        dry = check_bool(dry_run, "SMResource.split(): dry_run")
        if self._dry_run:
            raise ValueError("SMResource.split(): this resource is a dry run's result, which "
                             "cannot be split")
        groups = opts._groups()
        total = sum([g[0] for g in groups])
        if total > self._res.sm.smCount:
            raise ValueError(f"SMResource.split(): the counts ask for {total} SMs, but this "
                             f"resource has {self._res.sm.smCount}")
        cdef unsigned int n = len(groups)
        cdef unsigned int made = n
        cdef unsigned int i
        cdef vector[CUdevResource] out = vector[CUdevResource](n)  # value-initialized: zeroed
        cdef SMResource remainder = _new_sm(self._device_id)
        cdef SMResource r
        # A CUDA 12 build has no cuDevSmResourceSplit; it splits by count as on an older driver.
        if driver_version() >= _SPLIT and _cuda_compat.BUILD_CUDA_VERSION >= 13000:
            self._split_groups(groups, out.data(), &remainder._res)
        else:
            made = self._split_by_count(groups, out.data(), &remainder._res)
        remainder._dry_run = dry
        results = []
        for i in range(made):  # made <= n == out.size()
            r = _copy_sm(&out[i], self._device_id)
            r._dry_run = dry
            results.append(r)
        return results, remainder

    cdef unsigned int _split_by_count(self, list groups, CUdevResource* out,
                                      CUdevResource* remainder) except? 0:
        """``cuDevSmResourceSplitByCount`` into ``out`` (one slot per group): the number of
        groups made, all that were asked for (else ValueError)."""
        # A count of 0 (or None) goes to the driver as minCount 0, as cuda.core passes it: the
        # driver makes groups of its smallest size. Backfill only permits the driver to relax
        # co-scheduling; a split that keeps it has that permission unused, as in cuda.core.
        for g in groups:
            if g[1] is not None:
                _require(_SPLIT, "SMResource.split() with coscheduled_sm_count")
            if g[2] is not None:
                _require(_SPLIT, "SMResource.split() with preferred_coscheduled_sm_count")
        if len(set([g[0] for g in groups])) != 1:
            _require(_SPLIT, "SMResource.split() with groups of different counts")
        cdef unsigned int wanted = len(groups)
        cdef unsigned int made = wanted
        cdef unsigned int count = groups[0][0]
        check_call(cydriver.cuDevSmResourceSplitByCount(out, &made, &self._res, remainder, 0,
                                                        count),
                   "cuDevSmResourceSplitByCount")
        if made < wanted:
            raise ValueError(
                f"SMResource.split(): only {made} group{'s' if made != 1 else ''} of at least "
                f"{count} SMs fit in this resource's {self._res.sm.smCount} SMs, {wanted} "
                f"were asked for (the driver rounds a count up: min_partition_size="
                f"{self.min_partition_size}, coscheduled_alignment="
                f"{self.coscheduled_alignment})")
        return made

    cdef int _split_groups(self, list groups, CUdevResource* out,
                           CUdevResource* remainder) except -1:
        """``cuDevSmResourceSplit`` into ``out`` (one slot per group)."""
        cdef unsigned int n = len(groups)
        cdef vector[CU_DEV_SM_RESOURCE_GROUP_PARAMS] params = \
            vector[CU_DEV_SM_RESOURCE_GROUP_PARAMS](n)  # value-initialized: zeroed
        cdef unsigned int i
        for i in range(n):
            count, cosched, preferred, backfill = groups[i]
            params[i].smCount = count
            params[i].coscheduledSmCount = cosched or 0
            params[i].preferredCoscheduledSmCount = preferred or 0
            params[i].flags = _cuda_compat.CU_DEV_SM_RESOURCE_GROUP_BACKFILL if backfill else 0
        check_call(_cuda_compat.cuDevSmResourceSplit(out, n, &self._res, remainder, 0,
                                                 params.data()),
                   "cuDevSmResourceSplit")
        return 0

    def __repr__(self):
        dry = " (dry run)" if self._dry_run else ""
        return f"<SMResource of device {self._device_id}: {self._res.sm.smCount} SMs{dry}>"


cdef SMResource _new_sm(int device_id):
    cdef SMResource r = SMResource.__new__(SMResource)  # _res zeroed by the allocation
    r._device_id = device_id
    return r


cdef SMResource _copy_sm(const CUdevResource* res, int device_id):
    cdef SMResource r = SMResource.__new__(SMResource)
    r._res = res[0]
    r._device_id = device_id
    return r


cdef class WorkqueueResource(_DeviceResource):
    """A workqueue configuration (CUDA 13.1+): how a green context shares the device's
    workqueues. Not constructible: use :attr:`DeviceResources.workqueue`. It holds a copy of
    the driver's ``CUdevResource`` and owns nothing; :meth:`configure` edits that copy."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("WorkqueueResource objects cannot be instantiated directly; use "
                           "Device.resources.workqueue")

    @property
    def device(self):
        """The :class:`Device` whose workqueues these are."""
        from cuda_core._device import Device
        return Device(self._device_id)

    @property
    def sharing_scope(self):
        """:class:`~cuda_core.typing.WorkqueueSharingScopeType`: the sharing scope."""
        cdef unsigned int scope = <unsigned int>_cuda_compat.wq_config(&self._res).sharingScope
        return _SCOPES[scope] if scope < 2 else int(scope)

    @property
    def concurrency_limit(self):
        """The expected most stream-ordered workloads running at once."""
        return _cuda_compat.wq_config(&self._res).wqConcurrencyLimit

    def configure(self, options):
        """Change this configuration in place; a field of ``options`` left None is kept.

        Parameters
        ----------
        options : WorkqueueResourceOptions or dict
        """
        opts = check_or_create_options(WorkqueueResourceOptions, options,
                                       "WorkqueueResource.configure(): options")
        if opts.sharing_scope is not None:
            _cuda_compat.wq_config(&self._res).sharingScope = (
                _cuda_compat.CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED
                if opts.sharing_scope == WorkqueueSharingScopeType.GREEN_CTX_BALANCED
                else _cuda_compat.CU_WORKQUEUE_SCOPE_DEVICE_CTX)
        if opts.concurrency_limit is not None:
            _cuda_compat.wq_config(&self._res).wqConcurrencyLimit = opts.concurrency_limit

    def __repr__(self):
        return (f"<WorkqueueResource of device {self._device_id}: "
                f"sharing_scope={self.sharing_scope!s}, "
                f"concurrency_limit={self.concurrency_limit}>")


cdef class DeviceResources:
    """The resources of a device or of a green context: :attr:`sm` and :attr:`workqueue`.
    Not constructible: use :attr:`Device.resources`, :attr:`Context.resources` or
    :attr:`Stream.resources`. Each attribute read asks the driver afresh."""

    cdef int _device_id
    cdef Context _ctx  # a green context (the view), or None for the device's
    cdef object __weakref__

    def __init__(self, *args, **kwargs):
        raise RuntimeError("DeviceResources objects cannot be instantiated directly; use "
                           "Device.resources, Context.resources or Stream.resources")

    def __reduce__(self):
        # As cuda.core (it holds a context): copy.copy, copy.deepcopy and pickle raise
        # TypeError.
        raise TypeError(f"cannot pickle {type(self).__name__!r} object")

    cdef int _get(self, CUdevResource* out, cydriver.CUdevResourceType kind) except -1:
        # Called after _require() (which initialized the driver), with the struct of a new
        # object (zeroed: Cython zeroes an object's C attributes when it allocates it).
        if self._ctx is not None:
            check_call(cydriver.cuGreenCtxGetDevResource(self._ctx._green, out, kind),
                       "cuGreenCtxGetDevResource")
        else:
            check_call(cydriver.cuDeviceGetDevResource(self._device_id, out, kind),
                       "cuDeviceGetDevResource")
        return 0

    @property
    def sm(self):
        """:class:`SMResource`: the SMs (CUDA 12.4+)."""
        _require(_GREEN, "DeviceResources.sm")
        cdef SMResource r = _new_sm(self._device_id)
        self._get(&r._res, cydriver.CU_DEV_RESOURCE_TYPE_SM)
        return r

    @property
    def workqueue(self):
        """:class:`WorkqueueResource`: the workqueue configuration (CUDA 13.1+)."""
        _require(_SPLIT, "DeviceResources.workqueue")
        cdef WorkqueueResource r = WorkqueueResource.__new__(WorkqueueResource)
        r._device_id = self._device_id
        self._get(&r._res, _cuda_compat.CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG)
        return r

    def __repr__(self):
        of = "green context" if self._ctx is not None else "device"
        return f"<DeviceResources of {of} on device {self._device_id}>"


cdef DeviceResources _new_resources(int device_id, Context ctx):
    cdef DeviceResources r = DeviceResources.__new__(DeviceResources)
    r._device_id = device_id
    r._ctx = ctx
    return r


def device_resources(int device_id):
    """``Device.resources``."""
    return _new_resources(device_id, None)


cdef Context _view_of(Context ctx):
    """The object that keeps a green context alive: the view itself, or the user's
    Context's view. Read once into a local by each caller, which then holds it: a close() on
    another thread drops only the Context's own reference; None once it has."""
    if ctx._green_view:
        return ctx
    with cython.critical_section(ctx):  # Context.close() swaps it out in the same section
        view = ctx._keep
    if view is None:
        raise RuntimeError("this Context is closed")
    return <Context>view


def context_resources(Context ctx not None):
    """``Context.resources`` (the caller checked that ``ctx`` is not closed)."""
    if ctx._green == NULL:
        return _new_resources(ctx._device_id, None)
    return _new_resources(ctx._device_id, _view_of(ctx))


def create_green_context(int device_id, options):
    """``Device.create_context``: a green context (not made current)."""
    cdef vector[CUdevResource] res
    cdef CUdevResourceDesc desc = NULL
    cdef CUgreenCtx green = NULL
    cdef CUcontext handle = NULL
    cdef _GreenCtxOwner owner
    cdef Context view
    cdef CUresult err
    if options is None:
        raise TypeError("Device.create_context(): options is required: a ContextOptions whose "
                        "resources name the SMs to use")
    opts = check_or_create_options(ContextOptions, options, "Device.create_context(): options")
    if opts.resources is None:
        raise ValueError("Device.create_context(): options.resources is None: name the SMs "
                         "to use (Device.resources.sm or SMResource.split())")
    items = tuple(opts.resources)  # one snapshot, checked and then used
    if not items:
        raise ValueError("Device.create_context(): options.resources is empty: name the SMs "
                         "to use (Device.resources.sm or SMResource.split())")
    if sum(isinstance(item, WorkqueueResource) for item in items) > 1:
        raise ValueError("Device.create_context(): options.resources holds more than one "
                         "WorkqueueResource")
    for i, item in enumerate(items):
        if not isinstance(item, _DeviceResource):
            # ContextOptions checked its fields when built; a field assigned later is not
            raise TypeError(f"Device.create_context(): resources[{i}] must be an SMResource "
                            f"or a WorkqueueResource, not {type(item).__name__}")
        if (<_DeviceResource>item)._device_id != device_id:
            raise ValueError(f"Device.create_context(): resources[{i}] belongs to device "
                             f"{(<_DeviceResource>item)._device_id}, not to device {device_id}")
        if isinstance(item, SMResource):
            if (<SMResource>item)._dry_run:
                raise ValueError(f"Device.create_context(): resources[{i}] is a dry run's "
                                 f"result (split(..., dry_run=True)); split again without "
                                 f"dry_run")
            if (<SMResource>item)._res.sm.smCount == 0:
                raise ValueError(f"Device.create_context(): resources[{i}] has no SMs")
    _require(_GREEN, "Device.create_context()")
    for item in items:
        if isinstance(item, WorkqueueResource):
            _require(_SPLIT, "a WorkqueueResource in Device.create_context()")
        res.push_back((<_DeviceResource>item)._res)
    check_call(cydriver.cuDevResourceGenerateDesc(&desc, res.data(), <unsigned int>res.size()),
               "cuDevResourceGenerateDesc")
    check_call(cydriver.cuGreenCtxCreate(&green, desc, device_id,
                                         cydriver.CU_GREEN_CTX_DEFAULT_STREAM),
               "cuGreenCtxCreate")
    owner = _GreenCtxOwner.__new__(_GreenCtxOwner)
    owner._handle = green
    err = cydriver.cuCtxFromGreenCtx(&handle, green)
    if err != cydriver.CUDA_SUCCESS:
        owner.close()
        check_call(err, "cuCtxFromGreenCtx")
    view = _green_context(handle, device_id, green, owner)
    view._green_view = True
    return _green_context(handle, device_id, green, view)


cdef Context _green_context(CUcontext handle, int device_id, CUgreenCtx green, object keep):
    cdef Context ctx = Context.__new__(Context)
    ctx._handle = handle
    ctx._device_id = device_id
    ctx._green = green
    ctx._keep = keep
    return ctx


def green_stream(Context ctx not None, options):
    """``Context.create_stream`` (the caller checked that ``ctx`` is green and open)."""
    cdef CUstream handle = NULL
    cdef int prio = 0
    cdef ContextGuard guard
    cdef Context view = _view_of(ctx)
    priority = None
    if options is not None:
        opts = check_or_create_options(StreamOptions, options, "Context.create_stream(): options")
        if not opts.nonblocking:
            raise ValueError("Context.create_stream(): StreamOptions.nonblocking must be True: "
                             "the driver makes only non-blocking streams on a green context")
        priority = opts.priority
    _require(_GREEN_STREAM, "Context.create_stream()")
    if priority is not None:
        enter_context(guard, view._handle)
        check_priority(priority, &prio)
        exit_context(guard)
    check_call(cydriver.cuGreenCtxStreamCreate(&handle, view._green,
                                               cydriver.CU_STREAM_NON_BLOCKING, prio),
               "cuGreenCtxStreamCreate")
    return new_owned_stream(handle, view)
