"""The compilers' handles on the one lifecycle (private): an NVRTC program, a libNVVM program
and an nvJitLink handle, each owned by a :class:`~cuda_core._resource.Resource`.

``Program`` and ``Linker`` hold one. It is destroyed exactly once: at ``close()``, which raises
an :class:`NVRTCError` naming the failed call (``nvrtcDestroyProgram``, ``nvvmDestroyProgram``,
``nvJitLinkDestroy``), or when the owner is collected, where that failure becomes a
:class:`CUDAWarning` (nothing once the interpreter is finalizing).

The libraries are reached through ``cuda.bindings``' Python modules, imported when a handle is
destroyed: ``Program`` and ``Linker`` made the handle through them, so they are loaded by then.
"""

from cuda_core._resource cimport Resource

from cuda_core._errors import NVRTCError

__all__ = ["NvrtcProgram", "NvvmProgram", "NvJitLinkHandle"]


cdef class _CompilerHandle(Resource):
    """A compiler handle as ``cuda.bindings`` gives it, and its address for messages."""

    cdef object _handle
    # Taken at construction: nvrtcDestroyProgram zeroes the nvrtcProgram it is given.
    cdef size_t _addr

    def __init__(self, handle):
        if self._handle is not None:
            raise RuntimeError(f"this {type(self).__name__} already owns a handle")
        self._addr = int(handle)
        self._handle = handle

    cdef size_t _address(self) noexcept:
        return self._addr

    @property
    def handle(self):
        """The handle as ``cuda.bindings`` takes it."""
        self._check_open()
        return self._handle

    def __repr__(self):
        state = " closed" if self._closed else ""
        return f"<{type(self).__name__} 0x{self._addr:x}{state}>"


cdef object _destroy_error(str call, object status, str name):
    return NVRTCError(f"{call} failed: {name}", int(status), name, None)


cdef int _destroy(object destroy, object error_type, object handle, str call) except -1:
    """``destroy(handle)``, a ``cuda.bindings`` function that raises ``error_type`` (with a
    ``status``) on failure, as an NVRTCError naming ``call``."""
    try:
        destroy(handle)
    except error_type as exc:
        raise _destroy_error(call, exc.status, str(exc)) from None
    return 0


cdef class NvrtcProgram(_CompilerHandle):
    """Owns an ``nvrtcProgram`` (``nvrtcCreateProgram``); destroys it with
    ``nvrtcDestroyProgram``."""

    cdef int _release(self) except -1:
        if self._handle is None:
            return 0
        from cuda.bindings import nvrtc

        (err,) = nvrtc.nvrtcDestroyProgram(self._handle)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise _destroy_error("nvrtcDestroyProgram", err, err.name)
        return 0


cdef class NvvmProgram(_CompilerHandle):
    """Owns an ``nvvmProgram`` (an int, from ``nvvmCreateProgram``); destroys it with
    ``nvvmDestroyProgram``."""

    cdef int _release(self) except -1:
        if self._handle is not None:
            from cuda.bindings import nvvm

            _destroy(nvvm.destroy_program, nvvm.nvvmError, self._handle, "nvvmDestroyProgram")
        return 0


cdef class NvJitLinkHandle(_CompilerHandle):
    """Owns an ``nvJitLinkHandle`` (an int, from ``nvJitLinkCreate``); destroys it with
    ``nvJitLinkDestroy``."""

    cdef int _release(self) except -1:
        if self._handle is not None:
            from cuda.bindings import nvjitlink

            _destroy(nvjitlink.destroy, nvjitlink.nvJitLinkError, self._handle,
                     "nvJitLinkDestroy")
        return 0
