import os
import sys

import pytest

# Test the installed package, never the source tree: ``python -m pytest`` from the repository
# root puts the root on sys.path, where ``cuda_core/`` holds sources without compiled modules.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

from helpers import gpu_probe  # noqa: E402


# NVLink multicast stays off in every process a test starts (children inherit os.environ): the
# lent multi-GPU machines must not have it used, and cuda_core never calls cuMulticast*.
NO_MULTICAST_ENV = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


def pytest_configure(config):
    os.environ.update(NO_MULTICAST_ENV)
    # A CUDAWarning fails the test that caused it. The filter is added here rather than in
    # pyproject.toml: pytest resolves the class by importing cuda_core, and it applies the ini
    # file's filters once before this file has run, when ``python -m pytest`` from the
    # repository root would import the uncompiled sources.
    config.addinivalue_line("filterwarnings", "error::cuda_core.CUDAWarning")
    # NVIDIA's cuda.core 1.2.0 (the GPU machine's control) raises in Program.__dealloc__ when a
    # Program it made is collected (AttributeError in _cleanup_debug_source): its bug, reported
    # at whatever test of ours runs the collection. Only that one is let through.
    config.addinivalue_line(
        "filterwarnings", r"ignore:Exception ignored in. 'cuda\.core\._program\.Program\."
        r"__dealloc__':pytest.PytestUnraisableExceptionWarning")


# Fixtures that build a C++ extension at test time (helpers.cython_build): their tests are
# marked "compiler", which the run of the installed wheel without a compiler deselects.
_BUILDS = ("downstream", "all_pxds")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if any(name in getattr(item, "fixturenames", ()) for name in _BUILDS):
            item.add_marker(pytest.mark.compiler)
    available, reason = gpu_probe()
    if available:
        return
    skip = pytest.mark.skip(reason=f"needs a GPU: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def dev():
    """Device 0 with its primary context current on the calling thread."""
    from cuda_core import Device

    device = Device(0)
    device.set_current()
    return device


@pytest.fixture
def stream(dev):
    s = dev.create_stream()
    yield s
    s.close()


@pytest.fixture(scope="session")
def downstream(tmp_path_factory):
    """tests/helpers/downstream.pyx, a Cython module that cimports the installed cuda_core's
    .pxd files, built once per session: the directory that holds it (helpers.cython_build's
    run_downstream calls it in a subprocess)."""
    from helpers.cython_build import build_downstream

    return build_downstream(tmp_path_factory.mktemp("downstream"))
