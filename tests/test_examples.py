"""The examples run as standalone scripts."""

import os
import subprocess
import sys

import pytest

from helpers import has_gpu

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def run_example(name):
    return subprocess.run([sys.executable, os.path.join(EXAMPLES, name)], capture_output=True,
                          text=True, timeout=300, cwd=os.path.dirname(EXAMPLES))


@pytest.mark.skipif(has_gpu(), reason="the GPU case runs in test_show_device_properties_gpu")
def test_show_device_properties_without_gpu():
    result = run_example("show_device_properties.py")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("No GPU: "), result.stdout
    assert "CUDA driver not found" in lines[0] or "no CUDA-capable GPU" in lines[0]


@pytest.mark.gpu
def test_show_device_properties_gpu():
    result = run_example("show_device_properties.py")
    assert result.returncode == 0, result.stderr
    assert "multiprocessor_count" in result.stdout and "compute capability" in result.stdout
