"""The test helpers that decide whether tests can run at all (CPU)."""

import os
import re
from importlib import metadata

import pytest

import helpers


def test_the_headers_the_kernels_compile_with_are_installed():
    # A test dependency (pyproject.toml's test extra): NVRTC compiles the launch tests' kernels,
    # which use __half, with this directory on its include path.
    include = helpers.cuda_include_dir()
    assert os.path.isfile(os.path.join(include, "cuda_fp16.h"))
    assert os.path.isfile(os.path.join(include, "cuda.h"))


def test_a_missing_header_wheel_fails_rather_than_skips(monkeypatch):
    from cuda_core._build_config import CUDA_MAJOR

    # The headers wheel of the build's CUDA major: CUDA 12's carries a -cu12 suffix.
    wheel = {13: "nvidia-cuda-runtime", 12: "nvidia-cuda-runtime-cu12"}[CUDA_MAJOR]

    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", not_installed)
    with pytest.raises(pytest.fail.Exception, match=rf"^cuda_fp16\.h not found: the "
                                                    rf"{re.escape(wheel)} wheel is not installed"):
        helpers.cuda_include_dir()


def test_a_wheel_without_the_header_fails_rather_than_skips():
    # pytest is installed and ships no CUDA header.
    with pytest.raises(pytest.fail.Exception, match=r"cuda_fp16.h not found in the installed "
                                                    r"pytest .* wheel"):
        helpers.wheel_include_dir("pytest", "cuda_fp16.h")
