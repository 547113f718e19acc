"""Importing the package must never touch the driver, and an import from the source tree says so
(CPU)."""

import os
import subprocess
import sys

import pytest

from helpers import has_gpu, run_python, skip_where_gpus_cannot_be_hidden

import cuda_core


def test_version_and_typed():
    import importlib.resources

    assert isinstance(cuda_core.__version__, str) and cuda_core.__version__.count(".") >= 2
    assert importlib.resources.files("cuda_core").joinpath("py.typed").is_file()


def test_installed_metadata():
    from importlib.metadata import metadata

    meta = metadata("cuda-core-cy")
    assert meta["Version"] == cuda_core.__version__
    assert meta["License-Expression"] == "Apache-2.0"
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert urls["API spec (NVIDIA cuda.core)"].startswith("https://nvidia.github.io/")
    assert "Programming Language :: Python :: 3.12" in meta.get_all("Classifier")


def test_every_compiled_module_has_a_stub():
    import pathlib

    root = pathlib.Path(cuda_core.__file__).parent
    modules = [p.parent / p.name.split(".")[0] for p in root.rglob("*.so")]
    assert modules, "no compiled modules found"
    assert any(m.parent.name == "_memory" for m in modules)  # sub-packages are covered
    missing = [str(m.relative_to(root)) for m in modules
               if not m.with_name(m.name + ".pyi").is_file()]
    assert not missing


@pytest.mark.parametrize("first", ["cuda_core._object_code", "cuda_core._kernel",
                                   "cuda_core._kernel_views"])
def test_the_one_cimport_cycle_imports_either_way(first):
    # _object_code and _kernel cimport each other: each must import first in a fresh process.
    result = run_python(f"import {first}; import cuda_core; "
                        f"print(cuda_core.Kernel.__name__, cuda_core.ObjectCode.__name__)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["Kernel", "ObjectCode"]


@pytest.mark.parametrize("first", ["cuda_core._memoryview", "cuda_core._view_ops",
                                   "cuda_core._view_interface"])
def test_the_view_cimport_cycle_imports_either_way(first):
    # _memoryview cimports _view_ops and _view_interface, and each of them cimports it: each
    # must import first in a fresh process, and the work the two do must then work (CPU: a
    # NumPy array, and an object with only the array interface's dict).
    result = run_python(
        f"import {first}; import numpy; from cuda_core.utils import StridedMemoryView; "
        f"a = numpy.arange(6.0).reshape(2, 3); "
        f"v = StridedMemoryView.from_array_interface(a); "
        f"D = type('D', (), {{'__array_interface__': a.__array_interface__}}); "
        f"d = StridedMemoryView.from_array_interface(D()); "
        f"w = v.view(); c = v.__dlpack__(max_version=(1, 0)); "
        f"print(w.shape, d.shape, v._layout.is_contiguous_c, type(c).__name__, "
        f"type(StridedMemoryView.__dlpack_c_exchange_api__).__name__)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["(2,", "3)", "(2,", "3)", "True", "PyCapsule",
                                     "PyCapsule"]


@pytest.mark.parametrize("first", ["cuda_core.graph._definition", "cuda_core.graph._node_base"])
def test_the_graph_cimport_cycle_imports_either_way(first):
    # graph._definition and graph._node_base cimport each other. cuda_core/graph/__init__.py
    # imports them in one order; here the package is a bare one, so each goes first in turn.
    code = (
        "import importlib.util, os, sys, types\n"
        "root = os.path.dirname(importlib.util.find_spec('cuda_core').origin)\n"
        "package = types.ModuleType('cuda_core.graph')\n"
        "package.__path__ = [os.path.join(root, 'graph')]\n"
        "sys.modules['cuda_core.graph'] = package\n"
        f"import {first}\n"
        "import cuda_core.graph._definition as d, cuda_core.graph._node_base as n\n"
        "print(d.GraphDefinition.__name__, n.GraphNode.__name__)\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["GraphDefinition", "GraphNode"]


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
@skip_where_gpus_cannot_be_hidden
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


def _source_like_tree(root, with_pyx):
    """A folder ``root/cuda_core`` shaped like the source tree: the installed ``__init__.py`` and
    ``_version.py``, no compiled extension, and (``with_pyx``) a ``.pyx`` source."""
    import shutil

    pkg = root / "cuda_core"
    pkg.mkdir()
    installed = os.path.dirname(cuda_core.__file__)
    for name in ("__init__.py", "_version.py"):
        shutil.copy(os.path.join(installed, name), pkg / name)
    if with_pyx:
        (pkg / "_errors.pyx").write_text("# a source, not a compiled module\n")
    return pkg


def _import_in(cwd):
    # `python -c` puts the current directory first on sys.path, unless PYTHONSAFEPATH is set.
    env = dict(os.environ, PYTHONSAFEPATH="", CUDA_CORE_COMPAT="")
    return subprocess.run([sys.executable, "-c", "import cuda_core"], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=120)


def test_import_from_source_tree_names_the_cause(tmp_path):
    pkg = _source_like_tree(tmp_path, with_pyx=True)
    result = _import_in(tmp_path)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith(
        f"ImportError: cuda_core is being imported from its source tree at {pkg}, which has no "
        f"compiled extensions (No module named 'cuda_core._errors')")
    assert "Run Python from another directory" in lines[-1] and "pip install -e" in lines[-1]
    # One error: the ModuleNotFoundError it replaces is neither shown nor chained.
    assert "ModuleNotFoundError" not in result.stderr
    assert "During handling" not in result.stderr and "direct cause" not in result.stderr


def test_missing_extension_outside_a_source_tree_is_not_rewritten(tmp_path):
    # No .pyx beside __init__.py: a broken install, not a source tree; the original error stands.
    _source_like_tree(tmp_path, with_pyx=False)
    result = _import_in(tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "ModuleNotFoundError: No module named 'cuda_core._errors'")


_CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.skipif(not os.path.isfile(os.path.join(_CHECKOUT, "cuda_core", "_errors.pyx"))
                    or any(n.startswith("_errors.") and n.endswith(".so")
                           for n in os.listdir(os.path.join(_CHECKOUT, "cuda_core"))),
                    reason="the tests do not sit in a source checkout without built extensions")
def test_import_in_the_checkout_names_the_cause():
    result = _import_in(_CHECKOUT)
    assert result.returncode == 1
    assert "cuda_core is being imported from its source tree at " in result.stderr
    assert "ModuleNotFoundError" not in result.stderr


def test_normal_import_loads_the_compiled_package():
    code = ("import os, cuda_core, cuda_core._errors as e\n"
            "assert os.path.dirname(e.__file__) == os.path.dirname(cuda_core.__file__)\n"
            "assert not e.__file__.endswith('.py')\n"
            "print('ok')\n")
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_typing_only_re_exports_what_its_modules_define():
    import cuda_core.typing as t
    from cuda_core import _linker, _options, _program_options
    from cuda_core.graph import _graph_options

    assert t.SourceCodeType is _program_options.SourceCodeType
    assert t.PCHStatusType is _program_options.PCHStatusType
    assert t.CompilerBackendType is _linker.CompilerBackendType
    assert t.ObjectCodeFormatType is _linker.ObjectCodeFormatType
    assert t.GraphMemoryType is _graph_options.GraphMemoryType
    assert t.IsStreamType is _options.IsStreamType
    source = open(t.__file__, encoding="utf-8").read()
    assert "\nclass " not in source and "\ndef " not in source
