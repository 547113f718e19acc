"""Lazy driver initialization.

``import cuda_core`` never touches the driver. The first operation that needs it (creating a
Device, asking for the device count, wrapping a foreign stream) calls :func:`ensure_driver`,
which runs ``cuInit`` once. Where the driver library is missing or no GPU is visible, that first
use raises one :class:`CUDAError` naming the cause, and so does every later one.
"""

import os
import threading

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUresult, CUDA_SUCCESS

from cuda_core._atomic cimport load_int, store_int
from cuda_core._errors cimport HANDLE_RETURN, make_driver_error, mark_forked_child
from cuda_core._errors import CUDAError, DriverNotFoundError

# Set once, under _init_lock, after cuInit succeeded; read atomically without the lock.
cdef int _driver_ready = 0
_init_lock = threading.Lock()


def _after_fork_in_child():
    # A child forked after cuInit inherits the ready flag but not a usable driver: every call
    # fails. Its errors then say why (make_driver_error adds the hint).
    if load_int(&_driver_ready):
        mark_forked_child()


os.register_at_fork(after_in_child=_after_fork_in_child)


PER_THREAD_VAR = "CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM"


def per_thread_default_stream_requested():
    """Whether CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM asks for the per-thread default
    stream: an integer other than 0. Unset means the legacy one. cuda-bindings reads the
    variable with ``int()`` when it loads the driver and fails there on anything else (empty,
    ``1.0``, ``yes``): that is a ValueError naming the variable here, before the driver is
    loaded."""
    value = os.environ.get(PER_THREAD_VAR)
    if value is None:
        return False
    try:
        return int(value) != 0
    except ValueError:
        raise ValueError(f"{PER_THREAD_VAR} must be an integer (1: the per-thread default "
                         f"stream, 0: the legacy one) or unset, not {value!r} (cuda-bindings "
                         f"reads it with int() when it loads the driver)") from None


cdef bint driver_ready() noexcept nogil:
    return load_int(&_driver_ready) != 0


cdef int ensure_driver() except -1:
    """Initialize the driver on first use; one integer load and compare afterwards."""
    if load_int(&_driver_ready):
        return 0
    return _init_driver()


cdef int _init_driver() except -1:
    global _driver_ready
    cdef CUresult err
    with _init_lock:
        if _driver_ready:
            return 0
        per_thread_default_stream_requested()  # cuda-bindings' own parse would fail obscurely
        try:
            with nogil:
                err = cydriver.cuInit(0)
        except RuntimeError as exc:  # raised by cuda.bindings when libcuda cannot be loaded
            raise DriverNotFoundError(
                "CUDA driver not found: the NVIDIA driver library (libcuda.so.1) could not be "
                f"loaded ({exc}); install an NVIDIA driver to use a GPU") from None
        if err == cydriver.CUDA_ERROR_NO_DEVICE:
            raise CUDAError(
                "no CUDA-capable GPU found: the NVIDIA driver is installed but reports no "
                "device (check the GPU and CUDA_VISIBLE_DEVICES)",
                <int>err, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected")
        if err == cydriver.CUDA_ERROR_STUB_LIBRARY:
            raise CUDAError(
                "CUDA driver not found: the libcuda.so.1 that was loaded is the toolkit's stub, "
                "not a real NVIDIA driver", <int>err, "CUDA_ERROR_STUB_LIBRARY", None)
        if err != CUDA_SUCCESS:
            raise make_driver_error(err, "cuInit failed")
        store_int(&_driver_ready, 1)
    return 0


# The driver's CUDA version (cuDriverGetVersion, e.g. 13000), read once: it cannot change
# while the process runs. Threads that race to fill it store the same value.
cdef int _cuda_version = 0


cdef int cuda_version() except -1:
    """The installed driver's CUDA version as ``cuDriverGetVersion`` gives it (13000 for 13.0);
    one integer load after the first call."""
    cdef int version = load_int(&_cuda_version)
    if version == 0:
        ensure_driver()
        HANDLE_RETURN(cydriver.cuDriverGetVersion(&version))
        store_int(&_cuda_version, version)
    return version


cpdef tuple driver_version():
    """The installed driver's CUDA version as ``(major, minor)``, e.g. ``(13, 0)``."""
    cdef int version = cuda_version()
    return (version // 1000, (version % 1000) // 10)


cpdef int device_count() except -1:
    """The number of CUDA devices visible to this process."""
    cdef int count = 0
    ensure_driver()
    HANDLE_RETURN(cydriver.cuDeviceGetCount(&count))
    return count
