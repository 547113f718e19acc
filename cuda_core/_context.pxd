from cuda.bindings.cydriver cimport CUcontext, CUgreenCtx, CUresult, CUstream

from cuda_core._resource cimport HandleKeyedResource


# A Resource that owns only a user's green context (close() drops its hold on the view); every
# other one (primary, another library's, a green context's view) is _non_owning.
cdef class Context(HandleKeyedResource):
    cdef CUcontext _handle
    # The driver's unique ID of the context (cuCtxGetId), 0 if unknown: a primary context
    # reset by other code and retained again keeps its handle but gets a new ID.
    cdef unsigned long long _id
    cdef int _device_id
    cdef bint _is_primary
    # Green contexts (_green.pyx) only: the CUgreenCtx (NULL for every other context); what
    # keeps it alive (the user's Context: the view its children hold; a view: the owner, a
    # Resource whose release is cuGreenCtxDestroy). The view is _non_owning (close() on it is a
    # no-op: streams and events hold it).
    cdef CUgreenCtx _green
    cdef object _keep


cdef Context primary_context(int device_id)
# The device's primary context after another library may have reset it
# (cuDevicePrimaryCtxReset): retained again, as a new Context, when the one known was
# destroyed (Device.set_current).
cdef Context live_primary_context(int device_id)
# Whether ``ctx`` (None: False) is gone: destroyed (cuCtxDestroy, cuDevicePrimaryCtxReset), or
# a primary context reset and retained again since the Context was made. The driver destroyed
# every handle made in it, and none may reach it again.
cdef bint context_gone(Context ctx) noexcept
# Whether the context current on this thread is destroyed (False when none is current).
cdef bint current_context_gone() noexcept
cdef int primary_ordinal(CUcontext handle) noexcept nogil
cdef int adopt_primary(CUcontext handle) except -2
cdef Context context_from_handle(CUcontext handle)
cdef Context current_context(str what=*)
cdef int current_ordinal() except -1

# The conditional bodies being captured (GraphBuilder.begin_building of a body, and the
# streams split() forks off one), each as its context and stream. The driver corrupts a body
# graph whose capture is invalidated: ending the capture that holds it, or destroying its
# graph, then crashed (H200, driver 580.159). A capture is invalidated by the calls the
# driver refuses while it runs, such as synchronizing its context or its stream, so those
# calls check refuse_during_body_capture before they reach the driver.
cdef int body_capture_begins(CUcontext ctx, CUstream stream) except -1
# The capture on ``stream`` ended (or the stream is destroyed): nothing where none is known.
cdef int body_capture_ends(CUstream stream) except -1
# Whether a body is being captured in ``ctx`` or on ``stream`` (NULL: not asked).
cdef bint body_capture_in(CUcontext ctx, CUstream stream) except -1
# Whether any body is being captured now (one atomic load): what a caller checks before it
# spends a driver call on finding the context to ask body_capture_in about.
cdef bint any_body_capture() noexcept
# Raise the CUDAError the driver would give (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), naming
# ``what``, where a body is being captured in ``ctx`` or on ``stream`` (NULL: not asked),
# without invalidating it. Free while no body is being captured (one atomic load).
cdef int refuse_during_body_capture(CUcontext ctx, CUstream stream, str what) except -1


# The scoped context guard: ``enter_context(guard, ctx)`` makes ``ctx`` current on the calling
# thread unless it already is, and the guard pops it again when it goes out of scope (the C
# function returns, on every path, exception or not) or at ``exit_context(guard)``, whichever
# comes first. A NULL ``ctx`` is a no-op (a default stream that is not bound to a device).
# Declare it as a local of the function that needs the context: ``cdef ContextGuard guard``.
# Costs one cuCtxGetCurrent when the context is already current; works without the GIL.
cdef extern from *:
    """
    struct cuda_core_ContextGuard {
        CUresult (*pop)(CUcontext*) = nullptr;
        cuda_core_ContextGuard() = default;
        cuda_core_ContextGuard(const cuda_core_ContextGuard&) = delete;
        cuda_core_ContextGuard& operator=(const cuda_core_ContextGuard&) = delete;
        void exit() {
            if (pop) {
                CUcontext ignored;
                CUresult (*fn)(CUcontext*) = pop;
                pop = nullptr;
                fn(&ignored);
            }
        }
        ~cuda_core_ContextGuard() { exit(); }
        bool pushed() const { return pop != nullptr; }
    };
    """
    cdef cppclass ContextGuard "cuda_core_ContextGuard":
        void exit "exit"() noexcept nogil
        # Whether the guard holds a context it pushed (and will pop).
        bint pushed "pushed"() noexcept nogil

cdef int enter_context(ContextGuard& guard, CUcontext ctx) except -1 nogil

cdef inline void exit_context(ContextGuard& guard) noexcept nogil:
    guard.exit()
