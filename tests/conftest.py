import os
import sys

import pytest

# Test the installed package, never the source tree: ``python -m pytest`` from the repository
# root puts the root on sys.path, where ``cuda_core/`` holds sources without compiled modules.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

from helpers import gpu_probe  # noqa: E402


def pytest_collection_modifyitems(config, items):
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
