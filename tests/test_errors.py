"""Error types: fields, hierarchy, pickling; the cleanup-warning policy (CPU); the hint a forked
child gets (GPU)."""

import pickle

import pytest

from cuda_core import CUDAError, CUDAOutOfMemoryError, CUDAWarning, Device, NVRTCError
from helpers import gpu_probe, run_python
from helpers.cython_build import run_downstream


def test_cuda_error_fields_and_pickle():
    err = CUDAError("CUDA_ERROR_INVALID_VALUE: invalid argument", 1,
                    "CUDA_ERROR_INVALID_VALUE", "invalid argument")
    assert str(err) == "CUDA_ERROR_INVALID_VALUE: invalid argument"
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is CUDAError
    assert (back.code, back.name, back.explanation, str(back)) == (
        1, "CUDA_ERROR_INVALID_VALUE", "invalid argument", str(err))


def test_out_of_memory_is_a_memory_error():
    err = CUDAOutOfMemoryError("out of memory", 2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory")
    assert isinstance(err, CUDAError) and isinstance(err, MemoryError)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is CUDAOutOfMemoryError and back.code == 2


def test_nvrtc_error_carries_the_log():
    err = NVRTCError("compilation failed", 6, "NVRTC_ERROR_COMPILATION", None,
                     log='kernel.cu(3): error: identifier "oops" is undefined')
    assert isinstance(err, CUDAError)
    back = pickle.loads(pickle.dumps(err))
    assert back.log == err.log and str(back) == "compilation failed"


@pytest.mark.skipif(not gpu_probe()[1].startswith("no NVIDIA driver"),
                    reason="checks the error where no driver library can be loaded")
def test_no_driver_is_the_runtime_error_cuda_core_lets_through():
    # cuda.core lets cuda.pathfinder's DynamicLibNotFoundError (a RuntimeError) through where no
    # driver can be loaded; code that tells "no GPU here" by it must work on ours.
    from cuda.pathfinder import DynamicLibNotFoundError

    with pytest.raises(RuntimeError, match="CUDA driver not found") as info:
        Device(0)
    err = info.value
    assert isinstance(err, CUDAError) and isinstance(err, DynamicLibNotFoundError)
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is type(err) and str(again) == str(err)


def test_the_cleanup_warning_policy(downstream):
    # _resource.warn_release_failed, what every finalizer does with a release that failed,
    # called through its C signature by a module built against the installed .pxd files.
    assert issubclass(CUDAWarning, RuntimeWarning)
    result = run_downstream(downstream, """
        import warnings
        from cuda_core import CUDAError, CUDAWarning, NVRTCError

        def warned(*args):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                downstream.release_failed(*args)
            return [[issubclass(w.category, CUDAWarning), str(w.message)] for w in caught]

        illegal = CUDAError("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access", 700,
                            "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access")
        gone = CUDAError("CUDA_ERROR_DEINITIALIZED: driver shutting down", 4,
                         "CUDA_ERROR_DEINITIALIZED", "driver shutting down")
        # NVRTC's status 4 is NVRTC_ERROR_INVALID_PROGRAM, not a deinitialized driver.
        nvrtc = NVRTCError("NVRTC_ERROR_INVALID_PROGRAM: invalid program", 4,
                           "NVRTC_ERROR_INVALID_PROGRAM", "invalid program")
        # A filter that makes the warning an error: nothing raises, the hook gets it.
        unraisable = []
        sys.unraisablehook = lambda u: unraisable.append(type(u.exc_value).__name__)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            downstream.release_failed("Stream", 0x10, illegal)
        sys.unraisablehook = sys.__unraisablehook__
        result = {
            "unraisable": unraisable,
            "driver": warned("Stream", 0x7F0010, illegal),
            "other": warned("Program", 0, RuntimeError("nvrtcDestroyProgram: bad program")),
            "deinitialized": warned("Event", 0x20, gone),
            "compiler": warned("Program", 0x30, nvrtc),
        }
    """)
    assert result == {
        "unraisable": ["CUDAWarning"],
        "driver": [[True, "Stream 0x7f0010: cleanup failed: "
                          "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access"]],
        "other": [[True, "Program: cleanup failed: nvrtcDestroyProgram: bad program"]],
        "deinitialized": [],
        "compiler": [[True, "Program 0x30: cleanup failed: "
                            "NVRTC_ERROR_INVALID_PROGRAM: invalid program"]],
    }


_FORKED_CHILD = r"""
import os
import cuda_core

cuda_core.Device(0).set_current()  # the driver is initialized here
stream = cuda_core.Device(0).create_stream()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    try:
        cuda_core.Device(0).set_current()
        cuda_core.Device(0).create_stream()
        report = "no error"
    except cuda_core.CUDAError as exc:
        report = f"CUDAError: {exc}"
    except BaseException as exc:
        report = f"{type(exc).__name__}: {exc}"
    os.write(w, report.encode())
    os._exit(0)
os.close(w)
report = b""
while chunk := os.read(r, 4096):
    report += chunk
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
print(report.decode())
"""


@pytest.mark.gpu
def test_a_forked_child_is_told_to_use_spawn():
    # CUDA cannot be used in a child forked after cuInit; its first error says so. The fork
    # runs in a separate interpreter (a process that forked while using CUDA stays usable).
    result = run_python(_FORKED_CHILD, timeout=120)
    assert result.returncode == 0, result.stderr
    code, report = result.stdout.split("\n", 1)
    assert code == "0"
    assert report.startswith("CUDAError: "), report
    assert "forked from one that had initialized CUDA" in report and "'spawn'" in report
