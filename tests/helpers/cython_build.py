"""Build tests/helpers/downstream.pyx against the INSTALLED cuda_core, as a library building on
it would: Cython finds the ``.pxd`` files in the installed package, the C++ compiler the CUDA
headers in the nvidia-cuda-runtime and nvidia-cuda-profiler-api wheels (test dependencies,
pyproject.toml). The module is then used only in subprocesses (``run_downstream``), so that a
crash in it fails a test instead of ending the run."""

import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import textwrap

import pytest

from helpers import profiler_wheel, run_python, runtime_wheel, wheel_include_dir

MODULE = "downstream"
_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), MODULE + ".pyx")


def installed_root():
    """The directory that holds the installed ``cuda_core`` package (site-packages, or the
    ``--target`` directory of a GPU run)."""
    import cuda_core

    return os.path.dirname(os.path.dirname(os.path.abspath(cuda_core.__file__)))


def _cxx():
    if os.environ.get("CXX"):
        return shlex.split(os.environ["CXX"])
    for name in ("c++", "g++", "clang++"):
        found = shutil.which(name)
        if found:
            return [found]
    pytest.fail("no C++ compiler (c++, g++, clang++ or $CXX): building a Cython module against "
                "cuda_core needs one, as building cuda_core itself does", pytrace=False)


def _run(cmd, cwd, what):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        pytest.fail(f"{what} failed ({shlex.join(cmd)}):\n{(r.stdout + r.stderr)[-6000:]}",
                    pytrace=False)


def build_module(build_dir, name, source):
    """Cython and compile ``source`` (.pyx text) as module ``name`` in ``build_dir``, against
    the installed cuda_core. Returns ``build_dir``."""
    build_dir = str(build_dir)
    pyx = os.path.join(build_dir, name + ".pyx")
    with open(pyx, "w", encoding="utf-8") as f:
        f.write(source)
    cpp = os.path.join(build_dir, name + ".cpp")
    # The installed package first on Cython's include path; cuda.bindings' .pxd files are found
    # on sys.path, as Cython looks for cimported modules there too.
    _run([sys.executable, "-m", "cython", "--cplus", "-3", "-I", installed_root(), "-o", cpp,
          pyx], build_dir, "Cython")
    python_include = sysconfig.get_paths()["include"]
    if not os.path.isfile(os.path.join(python_include, "Python.h")):
        pytest.fail(f"Python.h is not in {python_include}: building a Cython module needs the "
                    f"Python development headers", pytrace=False)
    includes = sorted({wheel_include_dir(runtime_wheel(), "cuda.h"),
                       wheel_include_dir(profiler_wheel(), "cudaProfiler.h")})
    out = os.path.join(build_dir, name + sysconfig.get_config_var("EXT_SUFFIX"))
    cmd = _cxx() + ["-std=c++17", "-shared", "-fPIC", "-O0", "-w", "-I", python_include]
    for inc in includes:
        cmd += ["-I", inc]
    _run(cmd + [cpp, "-o", out], build_dir, "compiling the Cython module")
    return build_dir


def build_downstream(build_dir):
    """downstream.pyx, built in ``build_dir``; returns ``build_dir``."""
    with open(_SOURCE, encoding="utf-8") as f:
        return build_module(build_dir, MODULE, f.read())


def run_downstream(build_dir, code, timeout=120, module=MODULE):
    """Run ``code`` in a fresh interpreter that imports the built ``module`` (``downstream``
    unless told); the code sets ``result`` to something JSON can hold, which is returned. A
    crash, or any output on stderr (a warning included), fails the calling test."""
    script = (f"import sys\nsys.path.insert(0, {str(build_dir)!r})\nimport json\n"
              f"import {module}\n" + textwrap.dedent(code) +
              "\nprint('RESULT ' + json.dumps(result))\n")
    r = run_python(script, timeout=timeout)
    assert r.returncode == 0 and not r.stderr, (
        f"exit status {r.returncode}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}")
    lines = [line for line in r.stdout.splitlines() if line.startswith("RESULT ")]
    assert len(lines) == 1, r.stdout
    return json.loads(lines[0][len("RESULT "):])
