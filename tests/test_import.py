"""Importing the package must never touch the driver (CPU)."""

import pytest

from helpers import has_gpu, run_python

import cuda_core


def test_version_and_typed():
    import importlib.resources

    assert isinstance(cuda_core.__version__, str) and cuda_core.__version__.count(".") >= 2
    assert importlib.resources.files("cuda_core").joinpath("py.typed").is_file()


def test_every_compiled_module_has_a_stub():
    import pathlib

    root = pathlib.Path(cuda_core.__file__).parent
    modules = [p.parent / p.name.split(".")[0] for p in root.rglob("*.so")]
    assert modules, "no compiled modules found"
    assert any(m.parent.name == "_memory" for m in modules)  # sub-packages are covered
    missing = [str(m.relative_to(root)) for m in modules
               if not m.with_name(m.name + ".pyi").is_file()]
    assert not missing


def test_all_names_exist():
    for name in cuda_core.__all__:
        assert hasattr(cuda_core, name), name


def test_import_does_not_load_the_driver():
    code = (
        "import cuda_core, cuda_core.system, cuda_core.typing\n"
        "maps = open('/proc/self/maps').read()\n"
        "assert 'libcuda.so' not in maps, 'libcuda was loaded at import'\n"
        "print('ok')\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


@pytest.mark.skipif(has_gpu(), reason="a driver and GPU are present; see test_no_visible_gpu")
def test_first_gpu_use_without_driver_names_the_cause():
    from cuda_core import CUDAError, Device, System

    for use in (lambda: Device(), lambda: Device(0), lambda: System().num_devices,
                lambda: cuda_core.system.get_user_mode_driver_version(),
                lambda: cuda_core.Stream.from_handle(0),
                lambda: cuda_core.LEGACY_DEFAULT_STREAM.sync(),
                lambda: cuda_core.PER_THREAD_DEFAULT_STREAM.record(),
                lambda: cuda_core.LEGACY_DEFAULT_STREAM.context):
        with pytest.raises(CUDAError, match="CUDA driver not found|no CUDA-capable GPU"):
            use()


@pytest.mark.gpu
def test_no_visible_gpu_names_the_cause():
    # With the driver present but every device hidden, the first use says so.
    code = (
        "import cuda_core\n"
        "try:\n"
        "    cuda_core.Device(0)\n"
        "except cuda_core.CUDAError as e:\n"
        "    print('CUDAError:', e)\n"
    )
    result = run_python(code, env={"CUDA_VISIBLE_DEVICES": ""})
    assert result.returncode == 0, result.stderr
    assert "no CUDA-capable GPU found" in result.stdout
