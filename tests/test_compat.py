"""Compat mode (CPU): ``import cuda.core`` gives cuda_core, through install(), ``python -m
cuda_core.compat`` and CUDA_CORE_COMPAT=1, whether or not another ``cuda.core`` is installed.
Each case runs in a fresh interpreter: compat mode is per process."""

import ast
import importlib.util
import json
import os
import textwrap

import pytest

import cuda_core
from cuda_core.compat import API_VERSION
from helpers import run_python

# A stand-in for NVIDIA's cuda.core on the path: `cuda` is a namespace package, so its `core`
# joins cuda.bindings' `cuda` exactly as NVIDIA's wheel does.
_FAKE_CORE = "OTHER_CUDA_CORE_MARK = 'the other cuda.core'\n__version__ = '9.9.9'\n"

# What a client sees of `cuda.core` in compat mode, as JSON.
_PROBE = textwrap.dedent("""
    import json, sys
    import cuda.core as core
    import cuda_core
    import cuda.core.utils, cuda.core.graph, cuda.core.typing, cuda.core.system
    from cuda.core._utils.cuda_utils import CUDAError, NVRTCError, ComputeCapability
    from cuda.core import launch, LaunchConfig, Buffer
    out = {
        "device_module": core.Device.__module__,
        "version": core.__version__,
        "ours": core.__cuda_core_cy_version__,
        "cuda_core_version": cuda_core.__version__,
        "same_utils": cuda.core.utils is cuda_core.utils,
        "same_graph": cuda.core.graph is cuda_core.graph,
        "utils_spec": cuda_core.utils.__spec__.name,
        "errors": [CUDAError is cuda_core.CUDAError, NVRTCError is cuda_core.NVRTCError,
                   ComputeCapability is cuda_core.ComputeCapability],
        "launch": launch is cuda_core.launch,
        "mark": getattr(core, "OTHER_CUDA_CORE_MARK", None),
        "other": sorted(n for n, m in sys.modules.items()
                        if getattr(m, "OTHER_CUDA_CORE_MARK", None) is not None),
    }
    for name in ("cuda.core._memory",):
        try:
            __import__(name)
        except ModuleNotFoundError as exc:
            out[name] = str(exc)
    try:
        core.host_launch  # cuda.core's main branch has it; 1.2.2 and cuda_core do not
    except AttributeError as exc:
        out["missing_attr"] = str(exc)
    print(json.dumps(out))
""")


@pytest.fixture
def fake_core(tmp_path):
    """A folder to put first on PYTHONPATH, holding another package named cuda.core."""
    (tmp_path / "cuda" / "core").mkdir(parents=True)
    (tmp_path / "cuda" / "core" / "__init__.py").write_text(_FAKE_CORE)
    return tmp_path


@pytest.fixture
def startup_hook():
    """Skips a test of CUDA_CORE_COMPAT=1 where cuda_core is installed outside any site
    directory (``pip install --target`` put on PYTHONPATH): Python reads .pth files only in
    site directories, so there the start-up hook cannot run. In an ordinary install it does,
    and a hook that is there but did not run fails the test."""
    where = os.path.dirname(os.path.dirname(os.path.abspath(cuda_core.__file__)))
    assert os.path.exists(os.path.join(where, "cuda_core_compat.pth")), \
        f"cuda_core_compat.pth is not installed beside the package, in {where}"
    ran = run_python("import sys; print('cuda_core.compat' in sys.modules)",
                     env={"CUDA_CORE_COMPAT": "1"})
    if ran.stdout.strip() == "True":
        return
    listed = run_python("import site; print(repr(site.getsitepackages() + "
                        "[site.getusersitepackages()]))")
    site_dirs = {os.path.realpath(p) for p in ast.literal_eval(listed.stdout.strip())}
    if os.path.realpath(where) not in site_dirs:
        pytest.skip(f"cuda_core is installed in {where}, not a site directory (pip install "
                    f"--target on PYTHONPATH?): Python reads no .pth file there, so there is "
                    f"no start-up hook to run")


def _env(fake_core, compat):
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(fake_core),
                                                       os.environ.get("PYTHONPATH")]))}
    env["CUDA_CORE_COMPAT"] = compat
    return env


def _json(result):
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _check_probe(got):
    assert got["device_module"] == "cuda_core._device"
    assert got["version"] == API_VERSION == "1.2.2"
    assert got["ours"] == got["cuda_core_version"] == cuda_core.__version__
    assert got["same_utils"] and got["same_graph"]
    assert got["utils_spec"] == "cuda_core.utils"  # cuda_core's module keeps its own spec
    assert got["errors"] == [True, True, True] and got["launch"]
    assert got["mark"] is None and got["other"] == []  # the other cuda.core never imported
    assert "cuda.core's private modules are not provided" in got["cuda.core._memory"]
    assert "has no attribute 'host_launch'" in got["missing_attr"]


def test_without_compat_mode_the_other_cuda_core_is_imported(fake_core):
    got = run_python("import cuda.core, sys\n"
                     "print(cuda.core.OTHER_CUDA_CORE_MARK, 'cuda_core' in sys.modules)",
                     env=_env(fake_core, "0"))
    assert got.returncode == 0, got.stderr
    # The start-up hook does nothing without the variable: not even an import of cuda_core.
    assert got.stdout.split() == ["the", "other", "cuda.core", "False"]


def test_the_environment_variable_turns_it_on_at_start(fake_core, startup_hook):
    _check_probe(_json(run_python(_PROBE, env=_env(fake_core, "1"))))


def test_subprocesses_inherit_it(fake_core, startup_hook):
    child = "import cuda.core; print(cuda.core.Device.__module__)"
    code = (f"import subprocess, sys\n"
            f"print(subprocess.run([sys.executable, '-c', {child!r}], capture_output=True, "
            f"text=True, check=True).stdout.strip())")
    got = run_python(code, env=_env(fake_core, "1"))
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == "cuda_core._device"


def test_install_in_the_running_process(fake_core):
    code = "import cuda_core.compat\ncuda_core.compat.install()\ncuda_core.compat.install()\n"
    _check_probe(_json(run_python(code + _PROBE, env=_env(fake_core, "0"))))


def test_install_after_the_other_cuda_core_was_imported_is_refused(fake_core):
    code = textwrap.dedent("""
        import cuda.core
        import cuda_core.compat
        try:
            cuda_core.compat.install()
        except RuntimeError as exc:
            print(exc)
        print(cuda_core.compat.is_installed())
    """)
    got = run_python(code, env=_env(fake_core, "0"))
    assert got.returncode == 0, got.stderr
    assert "NVIDIA's cuda.core is already imported (cuda.core)" in got.stdout
    assert got.stdout.split()[-1] == "False"


def test_run_a_script(fake_core, tmp_path):
    script = tmp_path / "prog" / "client.py"
    script.parent.mkdir()
    (script.parent / "sibling.py").write_text("VALUE = 7\n")
    script.write_text(textwrap.dedent("""
        import json, os, sys
        import cuda.core
        import sibling  # the script's own folder is on the path, as with `python SCRIPT`
        print(json.dumps([__name__, sys.argv, cuda.core.Device.__module__, sibling.VALUE,
                          os.environ["CUDA_CORE_COMPAT"]]))
        sys.exit(3)
    """))
    run = (f"import runpy, sys\nsys.argv = ['x', {str(script)!r}, 'a', '--b']\n"
           f"runpy.run_module('cuda_core.compat', run_name='__main__')")
    env = _env(fake_core, "0")
    env["PYTHONSAFEPATH"] = ""  # unset (an empty value is), whatever the caller's shell has
    got = run_python(run, env=env)
    assert got.returncode == 3, got.stderr
    name, argv, module, value, flag = json.loads(got.stdout.strip().splitlines()[-1])
    assert (name, argv, module, value, flag) == ("__main__", [str(script), "a", "--b"],
                                                  "cuda_core._device", 7, "1")
    # Under PYTHONSAFEPATH, as `python SCRIPT` does, the script's folder is not on the path.
    env["PYTHONSAFEPATH"] = "1"
    got = run_python(run, env=env)
    assert got.returncode == 1 and "No module named 'sibling'" in got.stderr, got.stderr


def test_run_a_module(fake_core, tmp_path):
    (tmp_path / "client_mod.py").write_text(textwrap.dedent("""
        import json, sys
        import cuda.core
        print(json.dumps([__name__, sys.argv[1:], cuda.core.__version__]))
    """))
    env = _env(fake_core, "0")
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    got = run_python("import runpy, sys\nsys.argv = ['x', '-m', 'client_mod', '1', '-m']\n"
                     "runpy.run_module('cuda_core.compat', run_name='__main__')", env=env)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout.strip().splitlines()[-1]) == ["__main__", ["1", "-m"],
                                                                API_VERSION]


@pytest.mark.parametrize("argv, code, text", [
    ([], 2, "usage: python -m cuda_core.compat SCRIPT"),
    (["-h"], 0, "usage: python -m cuda_core.compat SCRIPT"),
    (["-m"], 2, "-m needs a module name"),
])
def test_the_command_line_without_a_program(argv, code, text):
    got = run_python(f"import sys\nsys.argv = ['x', *{argv!r}]\nimport runpy\n"
                     f"runpy.run_module('cuda_core.compat', run_name='__main__')",
                     env={"CUDA_CORE_COMPAT": "0"})
    assert got.returncode == code, got.stderr
    assert text in got.stdout + got.stderr


def test_nvidias_cuda_core_where_it_is_installed(startup_hook):
    # The same as the stand-in above, with the real package: skipped where it is not installed.
    spec = importlib.util.find_spec("cuda.core")
    if spec is None:
        pytest.skip("NVIDIA's cuda-core is not installed here; the stand-in tests cover the "
                    "mechanism")
    got = run_python(_PROBE.replace('getattr(m, "OTHER_CUDA_CORE_MARK", None) is not None',
                                    'n.startswith("cuda.core.") and n != "cuda.core._utils" '
                                    'and n != "cuda.core._utils.cuda_utils" and '
                                    'not getattr(m, "__name__", "").startswith("cuda_core")'),
                     env={"CUDA_CORE_COMPAT": "1"})
    _check_probe(_json(got))
    plain = run_python("import cuda.core; print(cuda.core.Device.__module__)",
                       env={"CUDA_CORE_COMPAT": "0"})
    assert plain.returncode == 0, plain.stderr
    assert not plain.stdout.strip().startswith("cuda_core")


# -- the private paths, the pre-1.0 namespace and pickles -------------------------------------

def test_each_private_path_holds_cuda_cores_objects(fake_core):
    from cuda_core.compat import _paths

    probe = textwrap.dedent("""
        import importlib, json
        from cuda_core.compat import _paths
        out = {}
        for path, names in _paths.PRIVATE.items():
            module = importlib.import_module(path)
            out[path] = {n: getattr(module, n) is _paths.resolve(t) for n, t in names.items()}
        print(json.dumps(out))
    """)
    got = _json(run_python(probe, env=_env(fake_core, "1")))
    assert got == {path: {n: True for n in names} for path, names in _paths.PRIVATE.items()}
    assert got["cuda.core._kernel_arg_handler"] == {"ParamHolder": True}


def test_the_pre_1_0_namespace_warns_and_holds_the_public_names(fake_core):
    probe = textwrap.dedent("""
        import json, warnings
        import cuda_core
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import cuda.core.experimental as old
            from cuda.core.experimental import Device, launch
            import cuda.core.experimental.utils as old_utils
        print(json.dumps({
            "warned": [(w.category.__name__, str(w.message)) for w in caught],
            "same": [Device is cuda_core.Device, launch is cuda_core.launch,
                     old_utils is cuda_core.utils,
                     old.__version__ == cuda_core.compat.API_VERSION],
        }))
    """)
    got = _json(run_python(probe, env=_env(fake_core, "1")))
    assert got["same"] == [True, True, True, True]
    assert [w[0] for w in got["warned"]] == ["DeprecationWarning"]
    assert "cuda.core.experimental is deprecated" in got["warned"][0][1]


def test_handle_return():
    from cuda.bindings import driver, nvrtc

    from cuda_core import CUDAError, NVRTCError
    from cuda_core.compat._paths import handle_return

    assert handle_return((driver.CUresult.CUDA_SUCCESS,)) is None
    assert handle_return((driver.CUresult.CUDA_SUCCESS, 5)) == 5
    assert handle_return((driver.CUresult.CUDA_SUCCESS, 5, 6)) == (5, 6)
    with pytest.raises(CUDAError) as info:
        handle_return((driver.CUresult.CUDA_ERROR_INVALID_VALUE, None))
    assert info.value.code == int(driver.CUresult.CUDA_ERROR_INVALID_VALUE)
    with pytest.raises(NVRTCError, match="NVRTC_ERROR_INVALID_INPUT"):
        handle_return((nvrtc.nvrtcResult.NVRTC_ERROR_INVALID_INPUT, None))
    # With the program, its log comes along.
    err, prog = nvrtc.nvrtcCreateProgram(b"this is not C++", b"bad.cu", 0, [], [])
    assert int(err) == 0
    status = nvrtc.nvrtcCompileProgram(prog, 0, [])
    with pytest.raises(NVRTCError) as info:
        handle_return(status, handle=prog)
    assert "bad.cu" in info.value.log
    nvrtc.nvrtcDestroyProgram(prog)


def test_param_holder_packs_each_argument_at_its_own_width():
    import ctypes

    import numpy as np

    from cuda_core._kernel_args import PackedArguments

    args = (7, 2.5, np.int16(-3), True)
    holder = PackedArguments(args)
    assert len(holder) == 4
    ptrs = (ctypes.c_void_p * 4).from_address(holder.ptr)
    assert ctypes.c_int64.from_address(ptrs[0]).value == 7  # a Python int: pointer-sized
    assert ctypes.c_double.from_address(ptrs[1]).value == 2.5
    assert ctypes.c_int16.from_address(ptrs[2]).value == -3
    assert ctypes.c_bool.from_address(ptrs[3]).value is True
    assert PackedArguments(()).ptr != 0
    with pytest.raises(TypeError):
        PackedArguments((object(),))


_PICKLE = textwrap.dedent("""
    import pickle, sys
    import cuda_core
    data = pickle.dumps(cuda_core.ComputeCapability(9, 0))
    back = pickle.loads(data)
    print(repr(b"cuda.core._utils.cuda_utils" in data), repr(b"cuda_core._device" in data),
          type(back) is cuda_core.ComputeCapability and back == (9, 0))
""")


def test_compute_capability_pickles_under_cuda_cores_name_in_compat_mode(fake_core):
    assert _last(run_python(_PICKLE, env=_env(fake_core, "1"))) == "True False True"
    assert _last(run_python(_PICKLE, env=_env(fake_core, "0"))) == "False True True"


def test_compute_capability_pickles_cross_between_the_packages(startup_hook):
    spec = importlib.util.find_spec("cuda.core")
    if spec is None:
        pytest.skip("NVIDIA's cuda-core is not installed here; the pickles' names are "
                    "checked by the test above")
    theirs = run_python("import pickle; from cuda.core._utils.cuda_utils import "
                        "ComputeCapability as C; print(pickle.dumps(C(8, 6)).hex())",
                        env={"CUDA_CORE_COMPAT": "0"})
    here = run_python("import pickle, cuda_core; print(pickle.dumps("
                      "cuda_core.ComputeCapability(9, 0)).hex())",
                      env={"CUDA_CORE_COMPAT": "1"})
    load = ("import pickle, sys; x = pickle.loads(bytes.fromhex(sys.argv[1])); "
            "print(type(x).__module__, tuple(x))")
    on_ours = run_python(f"import sys; sys.argv[1:] = [{_last(theirs)!r}]\n{load}",
                         env={"CUDA_CORE_COMPAT": "1"})
    on_theirs = run_python(f"import sys; sys.argv[1:] = [{_last(here)!r}]\n{load}",
                           env={"CUDA_CORE_COMPAT": "0"})
    assert _last(on_ours) == "cuda.core._utils.cuda_utils (8, 6)"
    assert _last(on_theirs) == "cuda.core._utils.cuda_utils (9, 0)"
    # ... and what each loaded is that package's own class.
    check = run_python(f"import pickle, cuda_core; x = pickle.loads(bytes.fromhex("
                       f"{_last(theirs)!r})); print(type(x) is cuda_core.ComputeCapability)",
                       env={"CUDA_CORE_COMPAT": "1"})
    assert _last(check) == "True"


def _last(result):
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1]
