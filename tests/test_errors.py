"""Error types: fields, hierarchy, pickling (CPU)."""

import pickle
import warnings

import pytest

from cuda_core import CUDAError, CUDAOutOfMemoryError, CUDAWarning, NVRTCError


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


def test_cuda_warning_is_a_runtime_warning():
    assert issubclass(CUDAWarning, RuntimeWarning)
    with pytest.warns(CUDAWarning):
        warnings.warn("x", CUDAWarning)


def test_errors_are_importable_from_the_top_level():
    import cuda_core

    assert cuda_core.CUDAError is CUDAError and cuda_core.NVRTCError is NVRTCError
