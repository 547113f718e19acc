"""tools/backend/cuda_core_backend.py: which CUDA major a build is for, and what follows from it
(build requirements, the wheel's run-time requirements and extras). Runs without building."""
import importlib.util
import os
import sys

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location(
    "cuda_core_backend", os.path.join(_ROOT, "tools", "backend", "cuda_core_backend.py"))
backend = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(backend)


def _none():
    return None


def test_the_setting_comes_before_the_environment_and_the_installed_bindings():
    env = {"CUDA_CORE_CUDA_MAJOR": "13"}
    assert backend.choose_major({"cuda-major": "12"}, env, lambda: 13) == 12
    assert backend.choose_major({}, {"CUDA_CORE_CUDA_MAJOR": "12"}, lambda: 13) == 12
    assert backend.choose_major(None, {}, lambda: 12) == 12
    assert backend.choose_major(None, {}, _none) == 13
    # An installed cuda-bindings of a major no build exists for is not followed.
    assert backend.choose_major(None, {}, lambda: 11) == 13


@pytest.mark.parametrize("value", ["11", "14", "cu12", ""])
def test_a_major_other_than_12_or_13_is_refused_by_name(value):
    with pytest.raises(backend.CudaMajorError, match=r"is 12 or 13"):
        backend.choose_major({"cuda-major": value}, {}, _none)


def test_the_build_requirements_pin_the_bindings_and_headers_of_the_major():
    assert backend.build_requires(13) == ["cuda-bindings==13.3.*", "nvidia-cuda-runtime==13.3.*",
                                          "nvidia-cuda-profiler-api==13.3.*"]
    assert backend.build_requires(12) == ["cuda-bindings==12.9.*",
                                          "nvidia-cuda-runtime-cu12==12.9.*",
                                          "nvidia-cuda-profiler-api-cu12==12.9.*"]


@pytest.mark.parametrize("major, bindings, compiler", [
    (13, "cuda-bindings>=13.3,<14", "nvidia-cuda-nvrtc>=13.0,<14"),
    (12, "cuda-bindings>=12.9,<13", "nvidia-cuda-nvrtc-cu12>=12.0,<13"),
])
def test_the_wheel_requires_the_bindings_of_its_major(monkeypatch, major, bindings, compiler):
    monkeypatch.setenv("CUDA_CORE_CUDA_MAJOR", str(major))
    deps = backend.dynamic_metadata("dependencies", {"items": ["{bindings}", "numpy>=2.2"]})
    assert deps == [bindings, "numpy>=2.2"]
    extras = backend.dynamic_metadata("optional-dependencies", {
        "test": ["pytest>=7", "cuda-core-cy[{cu}]", "{test-headers}"], "docs": ["sphinx>=7"]})
    assert extras["test"][:2] == ["pytest>=7", f"cuda-core-cy[cu{major}]"]
    assert extras["docs"] == ["sphinx>=7"]
    # Each compiler extra carries its own major's cuda-bindings: the other major's conflicts
    # with the wheel's requirement, so pip refuses it instead of mixing majors.
    assert extras[f"cu{major}"][:2] == [bindings, compiler]
    other = 25 - major
    assert extras[f"cu{other}"][0].startswith(f"cuda-bindings>={'12.9' if other == 12 else '13.3'}")


def test_a_cuda_12_build_has_a_build_directory_of_its_own(monkeypatch):
    monkeypatch.setattr(backend, "installed_bindings_major", _none)
    monkeypatch.delenv("CUDA_CORE_CUDA_MAJOR", raising=False)
    major, settings = backend._settings({"cuda-major": "12", "build.verbose": "true"})
    assert major == 12 and os.environ["CUDA_CORE_CUDA_MAJOR"] == "12"
    assert settings == {"build.verbose": "true", "build-dir": "build/cu12-{wheel_tag}"}
    major, settings = backend._settings({"cuda-major": "13"})
    assert major == 13 and settings == {}  # pyproject.toml's build-dir


def test_the_installed_bindings_are_read_from_the_interpreter_given(tmp_path):
    # This interpreter's environment: the tests run beside an installed cuda-bindings.
    from importlib import metadata

    have = int(metadata.version("cuda-bindings").split(".")[0])
    assert backend.installed_bindings_major(sys.executable) == have
    assert backend.installed_bindings_major(str(tmp_path / "no-python")) is None
