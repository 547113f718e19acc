"""The driver's own linker (``cuLink*``): the fallback of :class:`cuda_core.Linker` where
nvJitLink cannot be loaded. Private; :mod:`cuda_core._linker` turns LinkerOptions into the
``(CUjit_option, value)`` pairs this takes.
"""

import os

from libc.stdlib cimport free, malloc
from libc.string cimport memset

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUDA_SUCCESS, CUjit_option, CUjitInputType, CUlinkState, CUresult

from cuda_core._driver cimport ensure_driver
from cuda_core._errors cimport check_call, make_driver_error
from cuda_core._resource cimport Resource

from cuda_core import _ptx
from cuda_core._errors import NVRTCError

__all__ = ["DriverLinker", "JIT_OPTIONS", "INPUT_TYPES"]

cdef enum:
    LOG_BYTES = 65536
    FIXED_OPTIONS = 4


# The CUjit_option values _linker.py may pass (name -> value), and the inputs the driver links.
JIT_OPTIONS = {
    "target": <int>cydriver.CU_JIT_TARGET,
    "max_registers": <int>cydriver.CU_JIT_MAX_REGISTERS,
    "log_verbose": <int>cydriver.CU_JIT_LOG_VERBOSE,
    "optimization_level": <int>cydriver.CU_JIT_OPTIMIZATION_LEVEL,
    "generate_debug_info": <int>cydriver.CU_JIT_GENERATE_DEBUG_INFO,
    "generate_line_info": <int>cydriver.CU_JIT_GENERATE_LINE_INFO,
}
INPUT_TYPES = {
    "cubin": <int>cydriver.CU_JIT_INPUT_CUBIN,
    "ptx": <int>cydriver.CU_JIT_INPUT_PTX,
    "fatbin": <int>cydriver.CU_JIT_INPUT_FATBINARY,
    "object": <int>cydriver.CU_JIT_INPUT_OBJECT,
    "library": <int>cydriver.CU_JIT_INPUT_LIBRARY,
}


cdef class DriverLinker(Resource):
    """One ``CUlinkState`` with its info and error log buffers (which the driver writes until
    ``cuLinkDestroy``, so they live as long as the state). ``close()`` destroys the state and
    raises if that fails; an unclosed linker is destroyed when collected."""

    cdef CUlinkState _state
    cdef char* _info_log
    cdef char* _error_log
    cdef CUjit_option* _opts
    cdef void** _vals
    cdef list _keep  # input images, alive until the state is destroyed

    def __init__(self, list options):
        """``options``: ``(CUjit_option, int value)`` pairs (see JIT_OPTIONS).

        .. note:: Calls ``cuLinkCreate``; needs a current context.
        """
        cdef unsigned int n = FIXED_OPTIONS + len(options)
        cdef unsigned int i
        cdef CUresult err
        if self._info_log != NULL:
            raise RuntimeError("DriverLinker.__init__ runs once")
        ensure_driver()
        self._keep = []
        self._info_log = <char*>malloc(LOG_BYTES)
        self._error_log = <char*>malloc(LOG_BYTES)
        self._opts = <CUjit_option*>malloc(n * sizeof(CUjit_option))
        self._vals = <void**>malloc(n * sizeof(void*))
        if (self._info_log == NULL or self._error_log == NULL or self._opts == NULL
                or self._vals == NULL):
            raise MemoryError()
        memset(self._info_log, 0, LOG_BYTES)
        memset(self._error_log, 0, LOG_BYTES)
        self._opts[0] = cydriver.CU_JIT_INFO_LOG_BUFFER
        self._vals[0] = <void*>self._info_log
        self._opts[1] = cydriver.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES
        self._vals[1] = <void*><size_t>LOG_BYTES
        self._opts[2] = cydriver.CU_JIT_ERROR_LOG_BUFFER
        self._vals[2] = <void*>self._error_log
        self._opts[3] = cydriver.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
        self._vals[3] = <void*><size_t>LOG_BYTES
        i = FIXED_OPTIONS
        for key, value in options:
            self._opts[i] = <CUjit_option><int>key
            self._vals[i] = <void*><size_t>value
            i += 1
        err = cydriver.cuLinkCreate(n, self._opts, self._vals, &self._state)
        if err != CUDA_SUCCESS:
            self._state = NULL
            raise make_driver_error(err, "cuLinkCreate")

    def __dealloc__(self):
        # Plain C memory only: the state itself is destroyed by close() or the finalizer,
        # which run before this.
        free(self._info_log)
        free(self._error_log)
        free(self._opts)
        free(self._vals)

    cdef int _release(self) except -1:
        if self._state == NULL:
            return 0
        # On failure the state keeps its address, for the cleanup warning.
        check_call(cydriver.cuLinkDestroy(self._state), "cuLinkDestroy")
        self._state = NULL
        self._keep = []  # the state that could read them is gone
        return 0

    cdef size_t _address(self) noexcept:
        return <size_t>self._state

    @property
    def handle(self):
        """The ``CUlinkState`` address (0 once closed)."""
        return <size_t>self._state

    cdef _fail(self, CUresult err, str what):
        base = make_driver_error(err)
        log = self.error_log()
        text = str(base)
        if err == cydriver.CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
            text = _ptx.unsupported_message("a PTX input", None, _ptx.driver_version())
        raise NVRTCError(f"{what} failed: {text}" + (f"\n{log}" if log else ""),
                         base.code, base.name, base.explanation, log)

    def add(self, object code, str code_type, str name, bint is_path):
        """Add one input (an image as bytes, or a file path).

        .. note:: Calls ``cuLinkAddData`` or ``cuLinkAddFile``.
        """
        cdef CUresult err
        cdef CUjitInputType kind
        cdef const char* c_data
        cdef bytes data
        self._check_open()
        if code_type not in INPUT_TYPES:
            raise ValueError(f"the driver linker cannot link {code_type!r} inputs (it takes "
                             f"{', '.join(INPUT_TYPES)}); LTO IR needs nvJitLink")
        kind = <CUjitInputType><int>INPUT_TYPES[code_type]
        c_name = name.encode() or b"<input>"
        if is_path:
            path = os.fsencode(code)
            err = cydriver.cuLinkAddFile(self._state, kind, <const char*>path, 0, NULL, NULL)
        else:
            data = <bytes>code
            self._keep.append(data)
            c_data = data
            err = cydriver.cuLinkAddData(self._state, kind, <void*>c_data, len(data), c_name, 0,
                                         NULL, NULL)
        if err != CUDA_SUCCESS:
            self._fail(err, f"adding {name or code_type!r} to the driver linker")

    def complete(self):
        """Link; the cubin as bytes.

        .. note:: Calls ``cuLinkComplete``.
        """
        cdef void* cubin = NULL
        cdef size_t size = 0
        cdef CUresult err
        self._check_open()
        with nogil:
            err = cydriver.cuLinkComplete(self._state, &cubin, &size)
        if err != CUDA_SUCCESS:
            self._fail(err, "linking with the driver linker (cuLinkComplete)")
        return (<char*>cubin)[:size]  # owned by the state: copy before it is destroyed

    def info_log(self):
        return self._info_log[:LOG_BYTES].split(b"\0", 1)[0].decode(errors="replace")

    def error_log(self):
        return self._error_log[:LOG_BYTES].split(b"\0", 1)[0].decode(errors="replace")
