"""The environment variables cuda_core reads (docs/environment.rst): the per-thread default
stream, the tab-completion fix and its opt-out, the user cache root; and the docs page kept in
step with what ``python -m cuda_core`` lists."""

import os
import re
import subprocess
import sys
import tempfile

import pytest

from cuda_core import _diagnostics
from cuda_core._program_options import _user_cache_dir
from cuda_core._stream import _per_thread_requested
from helpers import run_python

DOCS = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "environment.rst")
PTDS = "CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM"
OPT_OUT = "CUDA_CORE_DONT_FIX_TAB_COMPLETION"


# -- CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM ---------------------------------------------------

@pytest.mark.parametrize("value, per_thread", [
    (None, False), ("0", False), ("-0", False), ("00", False), ("1", True), (" 1 ", True),
    ("2", True), ("-1", True), ("10", True), ("01", True),
])
def test_per_thread_values(monkeypatch, value, per_thread):
    # An integer other than 0 asks for the per-thread stream (cuda-bindings parses it with int()).
    if value is None:
        monkeypatch.delenv(PTDS, raising=False)
    else:
        monkeypatch.setenv(PTDS, value)
    assert _per_thread_requested() is per_thread


@pytest.mark.parametrize("value", ["", " ", "0.5", "1.0", "1e3", "true", "yes", "on", "0x1",
                                   "nan", "inf"])
def test_per_thread_value_that_is_no_integer_is_refused(monkeypatch, value):
    # cuda-bindings would fail on these when it loads the driver, with int()'s message.
    monkeypatch.setenv(PTDS, value)
    with pytest.raises(ValueError, match=f"{PTDS} must be an integer .* not {re.escape(repr(value))}"):
        _per_thread_requested()


_DEFAULT_STREAM_CODE = (
    "import cuda_core\n"
    "try:\n"
    "    dev = cuda_core.Device(0)  # a bad value is refused here, before the driver loads\n"
    "    dev.set_current()\n"
    "    s = dev.default_stream\n"
    "except ValueError as e:\n"
    "    print('ValueError:', e)\n"
    "else:\n"
    "    print(int(s.handle), s is dev.default_stream, s.device == dev)\n"
)


@pytest.mark.gpu
@pytest.mark.parametrize("value, expected", [
    (None, "1 True True"),  # CU_STREAM_LEGACY
    ("0", "1 True True"),
    ("1", "2 True True"),  # CU_STREAM_PER_THREAD
    ("2", "2 True True"),
    ("yes", f"ValueError: {PTDS} must be an integer"),
    ("1.0", f"ValueError: {PTDS} must be an integer"),
], ids=["unset", "0", "1", "2", "yes", "1.0"])
def test_device_default_stream_follows_the_variable(value, expected):
    env = dict(os.environ)
    env.pop(PTDS, None)
    if value is not None:
        env[PTDS] = value
    result = subprocess.run([sys.executable, "-c", _DEFAULT_STREAM_CODE], capture_output=True,
                            text=True, env=env, timeout=120, cwd=tempfile.gettempdir())
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(expected), result.stdout


# -- CUDA_CORE_DONT_FIX_TAB_COMPLETION ----------------------------------------------------------

# A closed Buffer (no GPU needed): each of its properties raises RuntimeError when read, which
# the standard completer does not expect from a property it reads.
_COMPLETION_CODE = (
    "import sys\n"
    "{interactive}"
    "import builtins, rlcompleter\n"
    "import cuda_core\n"
    "from cuda_core import Buffer\n"
    "buf = Buffer.from_handle(0x1000, 8)\n"
    "buf.close()\n"
    "completer = rlcompleter.Completer({{'buf': buf}})\n"
    "check = getattr(rlcompleter, 'property', builtins.property)\n"
    "print('fixed:', check is not builtins.property)\n"
    "try:\n"
    "    words = [completer.complete('buf.', i) for i in range(200)]\n"
    "except Exception as e:\n"
    "    print('failed:', type(e).__name__, e)\n"
    "else:\n"
    "    print('words:', ' '.join(w for w in words if w))\n"
    "    print('plain property:', isinstance(property(), check))\n"
    "    print('foreign descriptor:', isinstance(type(1).real, check))\n"
)


def _completion(interactive, opt_out=None, flags=()):
    env = {OPT_OUT: opt_out} if opt_out is not None else {}
    code = _COMPLETION_CODE.format(interactive="sys.ps1 = '>>> '\n" if interactive else "")
    full_env = dict(os.environ)
    full_env.pop(OPT_OUT, None)
    full_env.update(env)
    result = subprocess.run([sys.executable, *flags, "-c", code], capture_output=True,
                            text=True, env=full_env, timeout=120, cwd=tempfile.gettempdir(),
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_tab_completion_lists_properties_without_reading_them():
    lines = _completion(interactive=True)
    assert lines[0] == "fixed: True"
    words = lines[1].split()
    assert words[0] == "words:"
    # Properties are listed, never read (reading one raises on a closed Buffer).
    for name in ("buf.handle", "buf.size", "buf.device_id", "buf.is_closed", "buf.close("):
        assert name in words, lines[1]
    assert lines[2:] == ["plain property: True", "foreign descriptor: False"]


def test_python_dash_i_gets_the_fix():
    # ``python -i`` (sys.flags.inspect) is interactive too; its prompt reads EOF and exits.
    lines = _completion(interactive=False, flags=("-i",))
    assert lines[0] == "fixed: True"
    assert lines[1].startswith("words:") and "buf.handle" in lines[1].split()


@pytest.mark.parametrize("interactive, opt_out", [(True, "1"), (True, "yes"), (False, None)])
def test_no_fix_when_opted_out_or_not_interactive(interactive, opt_out):
    # Any value but "" and "0" opts out, as in cuda.core; without the fix, the completer reads
    # the properties and the closed Buffer's error ends the completion: the problem is real.
    lines = _completion(interactive=interactive, opt_out=opt_out)
    assert lines[0] == "fixed: False"
    assert lines[1].startswith("failed: ") and "AttributeError" not in lines[1], lines


@pytest.mark.parametrize("opt_out", ["", "0"])
def test_empty_or_0_is_no_opt_out(opt_out):
    assert _completion(interactive=True, opt_out=opt_out)[0] == "fixed: True"


def test_no_fix_in_a_script():
    result = run_python("import sys, cuda_core\nprint('rlcompleter' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


# -- XDG_CACHE_HOME / LOCALAPPDATA ----------------------------------------------------------------

@pytest.mark.parametrize("xdg", [None, "", "relative/dir"])
def test_cache_root_falls_back_to_home_cache(monkeypatch, tmp_path, xdg):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    assert _user_cache_dir() == str(tmp_path / "home" / ".cache" / "cuda-python")


def test_cache_root_is_shared_by_every_default_folder(monkeypatch, tmp_path):
    from cuda_core._program_options import _bundled_headers_dir
    from cuda_core.utils import _file_stream_program_cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    root = str(tmp_path / "cuda-python")
    assert _user_cache_dir() == root
    assert _file_stream_program_cache._default_cache_dir() == os.path.join(root, "program-cache")
    assert _bundled_headers_dir().startswith(os.path.join(root, "nvrtc-bundled-headers", ""))
    # A relative value is ignored by both (it used to be taken by the bundled headers only).
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    home_root = str(tmp_path / "home" / ".cache" / "cuda-python")
    assert _bundled_headers_dir().startswith(home_root + os.sep)
    assert _file_stream_program_cache._default_cache_dir().startswith(home_root + os.sep)


@pytest.mark.parametrize("local, expected", [
    ("/fake/AppData/Local", os.path.join("/fake/AppData/Local", "cuda-python")),
    ("", None),
    (None, None),
])
def test_cache_root_on_windows(monkeypatch, tmp_path, local, expected):
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("HOME", str(tmp_path))
    if local is None:
        monkeypatch.delenv("LOCALAPPDATA", raising=False)
    else:
        monkeypatch.setenv("LOCALAPPDATA", local)
    if expected is None:
        expected = os.path.join(str(tmp_path), "AppData", "Local", "cuda-python")
    assert _user_cache_dir() == expected


# -- the docs page and python -m cuda_core ------------------------------------------------------

def _documented():
    with open(DOCS, encoding="utf-8") as f:
        text = f.read()
    names = set()
    for line in text.splitlines():
        # A definition list's term: ``NAME`` or ``NAME``, ``OTHER``, at the start of a line.
        if line.startswith("``"):
            names.update(re.findall(r"``([A-Z][A-Z0-9_]+)``", line))
    return names


def test_docs_page_lists_what_diagnostics_lists():
    documented = _documented()
    assert set(_diagnostics.ENV_VARS) <= documented, set(_diagnostics.ENV_VARS) - documented
    # Documented but not in the report: only build, test and benchmark variables.
    assert documented - set(_diagnostics.ENV_VARS) <= {
        "CUDA_CORE_BENCH", "CUDA_CORE_TEST_CHILD_TIMEOUT", "LOCALAPPDATA", "NCCL_NVLS_ENABLE",
        "NVSHMEM_DISABLE_NVLS", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "CUDA_CORE_TEST_BLOCKING_SYNC",
    }, documented - set(_diagnostics.ENV_VARS)
