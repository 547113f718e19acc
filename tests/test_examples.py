"""The examples run as standalone scripts."""

import os
import subprocess
import sys

import pytest

from helpers import has_gpu, run_python

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")

# Every example but show_device_properties.py, which has tests of its own below.
KERNEL_EXAMPLES = [
    "cuda_graphs.py",
    "graph_update.py",
    "jit_lto.py",
    "memory_ops.py",
    "saxpy.py",
    "stream_events_timing.py",
    "thread_block_cluster.py",
    "vector_add.py",
]
# Examples that use CuPy where it is installed and have a path without it.
CUPY_OPTIONAL = ["memory_ops.py", "saxpy.py"]
# Started in processes of its own and checked line by line in test_multi_gpu_allreduce_gpu.
MULTI_PROCESS_EXAMPLES = ["multi_gpu_allreduce.py"]


def run_example(name, env=None, args=()):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *args],
                          capture_output=True, text=True, timeout=300,
                          cwd=os.path.dirname(EXAMPLES), env=full_env)


def test_every_example_is_tested():
    found = sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".py"))
    assert found == sorted(KERNEL_EXAMPLES + MULTI_PROCESS_EXAMPLES
                           + ["show_device_properties.py"])


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


@pytest.mark.skipif(has_gpu(), reason="a GPU is present: the examples run in test_example_gpu")
@pytest.mark.parametrize("name", KERNEL_EXAMPLES + MULTI_PROCESS_EXAMPLES)
def test_example_without_gpu(name):
    result = run_example(name)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("No GPU: "), result.stdout
    assert "CUDA driver not found" in lines[0] or "no CUDA-capable GPU" in lines[0]


@pytest.mark.gpu
@pytest.mark.parametrize("name", KERNEL_EXAMPLES)
def test_example_gpu(name):
    result = run_example(name)
    assert result.returncode == 0, f"{name} failed:\n{result.stdout}\n{result.stderr}"
    assert "No GPU" not in result.stdout, result.stdout


@pytest.mark.gpu
@pytest.mark.parametrize("name", CUPY_OPTIONAL)
def test_example_gpu_without_cupy(name, tmp_path):
    # A module named cupy that fails to import, first on the path, stands for a machine
    # without CuPy.
    (tmp_path / "cupy.py").write_text('raise ImportError("CuPy hidden by the test")\n')
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p)
    result = run_example(name, env={"PYTHONPATH": path})
    assert result.returncode == 0, f"{name} failed:\n{result.stdout}\n{result.stderr}"
    if name == "saxpy.py":
        assert result.stdout.count(" with Buffers: ") == 2, result.stdout
    else:
        assert "CuPy is not installed" in result.stdout, result.stdout
        assert "-> CuPy" not in result.stdout, result.stdout



def _nccl_reason(backend):
    """Why multi_gpu_allreduce.py must skip its NCCL part here with ``backend`` (its exact
    words), or None when that binding of NCCL imports and has NCCL. Asked in a fresh
    interpreter: importing torch or CuPy here would load them into the test process."""
    if backend == "cupy":
        code = ("import sys\n"
                "try:\n"
                "    from cupy.cuda import nccl\n"
                "except ImportError:\n"
                "    print('missing'); sys.exit(0)\n"
                "print('nccl' if nccl.available else 'no nccl')\n")
        reasons = {"missing": "CuPy is not installed (",
                   "no nccl": "this CuPy has no NCCL (cupy.cuda.nccl.available is False)"}
    else:
        code = ("import sys\n"
                "try:\n"
                "    import torch.distributed as dist\n"
                "except ImportError:\n"
                "    print('missing'); sys.exit(0)\n"
                "print('nccl' if dist.is_available() and dist.is_nccl_available() "
                "else 'no nccl')\n")
        reasons = {"missing": "PyTorch is not installed (",
                   "no nccl": "this PyTorch has no NCCL backend "
                              "(torch.distributed.is_nccl_available() is False)"}
    answer = run_python(code, timeout=120)
    said = (answer.stdout.strip().splitlines() or [""])[-1]
    assert answer.returncode == 0 and said in ("missing", "no nccl", "nccl"), \
        answer.stdout + answer.stderr
    return reasons.get(said)


def _run_allreduce(*args):
    """Run multi_gpu_allreduce.py; its output lines, the GPU count, and the text for errors."""
    ngpu = int(run_python("from cuda_core import system; print(system.get_num_devices())",
                          timeout=60).stdout)
    result = run_example("multi_gpu_allreduce.py", args=args)
    output = f"{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, output
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == "multi_gpu_allreduce: OK", output
    return lines, ngpu, output


def _check_nccl_part(lines, ngpu, output, backend, label):
    reason = _nccl_reason(backend)
    if reason is None:
        world = f"{ngpu} rank" + ("" if ngpu == 1 else "s")
        gpus = f"{ngpu} GPU" + ("" if ngpu == 1 else "s")
        assert f"{label}: {world} x 1048576 floats on {gpus}: OK" in lines, output
    else:  # the example says why, and that is the only case in which Part 1 may be left out
        assert any(line.startswith(f"{label}: skipped: {reason}") for line in lines), output


@pytest.mark.gpu
def test_multi_gpu_allreduce_gpu():
    lines, ngpu, output = _run_allreduce()
    _check_nccl_part(lines, ngpu, output, "torch", "NCCL all-reduce")
    gpus = f"{ngpu} GPU" + ("" if ngpu == 1 else "s")
    ranks = max(2, ngpu)
    assert f"IPC all-reduce: {ranks} ranks x 1048576 floats on {gpus}: OK" in lines, output


@pytest.mark.gpu
def test_multi_gpu_allreduce_cupy_nccl_gpu():
    lines, ngpu, output = _run_allreduce("--backend", "cupy", "--skip-ipc")
    _check_nccl_part(lines, ngpu, output, "cupy", "NCCL all-reduce (cupy.cuda.nccl)")
    assert "IPC all-reduce: skipped: --skip-ipc" in lines, output

def _readme_snippets():
    readme = os.path.join(os.path.dirname(EXAMPLES), "README.md")
    if not os.path.isfile(readme):
        # The GPU harness copies tests/, examples/ and benchmarks/ only; CI has the checkout.
        pytest.skip(f"README.md is not in this test tree ({os.path.dirname(EXAMPLES)})")
    text = open(readme).read()
    return [block.split("\n", 1)[1] for block in text.split("```")[1::2]
            if block.startswith("python\n")]


def test_readme_has_python_snippets():
    assert len(_readme_snippets()) >= 2


@pytest.mark.gpu
@pytest.mark.parametrize("index", range(2))
def test_readme_snippet_runs(index, tmp_path):
    script = tmp_path / f"readme_{index}.py"
    script.write_text(_readme_snippets()[index])
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
