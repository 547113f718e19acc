"""tools/find_cuda_headers.py: which CUDA headers the build uses, and what it tells the user.

Fake include directories stand in for toolkits and wheels, so this runs in milliseconds and needs
no toolkit; the CMake side only prints what the helper returns.
"""
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

_TOOL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools",
                     "find_cuda_headers.py")
_spec = importlib.util.spec_from_file_location("find_cuda_headers", _TOOL)
fch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fch)

NEEDED = (13, 3)


def make_include(root, version, headers=("cuda.h", "cudaProfiler.h")):
    """A directory shaped like a toolkit's include/; ``version`` is CUDA_VERSION (13030)."""
    inc = root / "include"
    inc.mkdir(parents=True)
    for h in headers:
        text = "/* stand-in */\n"
        if h == "cuda.h" and version is not None:
            text += f"#ifndef CUDA_VERSION\n#define CUDA_VERSION {version}\n#endif\n"
        (inc / h).write_text(text)
    return str(inc)


@pytest.fixture
def wheels(tmp_path):
    return make_include(tmp_path / "wheels", 13030)


def test_version_parsed_from_cuda_h(tmp_path):
    assert fch.cuda_h_version(make_include(tmp_path / "a", 13030)) == (13, 3)
    assert fch.cuda_h_version(make_include(tmp_path / "b", 12090)) == (12, 9)
    assert fch.cuda_h_version(make_include(tmp_path / "c", 13000)) == (13, 0)
    assert fch.cuda_h_version(make_include(tmp_path / "d", None)) is None
    assert fch.cuda_h_version(str(tmp_path / "nowhere")) is None


def test_without_cuda_home_the_wheels_are_used_silently(wheels):
    assert fch.choose(None, wheels, NEEDED) == (wheels, (13, 3), None)


@pytest.mark.parametrize("version", [13030, 13050])
def test_a_toolkit_of_the_minor_or_newer_is_used(tmp_path, wheels, version):
    home = tmp_path / "cuda"
    inc = make_include(home, version)
    assert fch.choose(str(home), wheels, NEEDED) == (inc, (version // 1000, version % 1000 // 10), None)


@pytest.mark.parametrize("version, words", [(13000, "13.0, older than"), (12090, "12.9, not"),
                                            (14000, "14.0, not"), (None, "an unknown version")])
def test_an_older_toolkit_is_passed_over_for_the_wheels_with_a_warning(tmp_path, wheels, version,
                                                                       words):
    home = tmp_path / "cuda"
    make_include(home, version)
    choice = fch.choose(str(home), wheels, NEEDED, "cuda-bindings 13.3.1")
    assert choice.include == wheels and choice.version == (13, 3)
    w = choice.warning
    assert "\n" not in w
    for fact in (f"CUDA_HOME={home}", words, "CUDA 13.3", "cuda-bindings 13.3.1", wheels,
                 "13.3 or newer", "unset CUDA_HOME"):
        assert fact in w


def test_an_older_toolkit_without_wheels_is_an_error_with_the_same_facts(tmp_path):
    home = tmp_path / "cuda"
    make_include(home, 13000)
    with pytest.raises(fch.HeaderError) as e:
        fch.choose(str(home), None, NEEDED)
    msg = str(e.value)
    for fact in (f"CUDA_HOME={home}", "CUDA 13.0", "CUDA 13.3", "nvidia-cuda-runtime==13.3.*",
                 "13.3 or newer", "Unset CUDA_HOME"):
        assert fact in msg


@pytest.mark.parametrize("headers, missing", [((), "include/cuda.h or include/cudaProfiler.h"),
                                              (("cuda.h",), "include/cudaProfiler.h")])
def test_cuda_home_without_the_headers_is_a_one_line_error(tmp_path, wheels, headers, missing):
    home = tmp_path / "cuda"
    make_include(home, 13030, headers)
    with pytest.raises(fch.HeaderError) as e:
        fch.choose(str(home), wheels, NEEDED)
    msg = str(e.value)
    assert "\n" not in msg
    assert f"CUDA_HOME={home} has no {missing};" in msg


def test_no_headers_at_all_is_an_error(tmp_path):
    with pytest.raises(fch.HeaderError, match="CUDA_HOME is not set"):
        fch.choose(None, None, NEEDED)


def test_wheel_headers_older_than_the_bindings_are_an_error(tmp_path):
    old = make_include(tmp_path / "wheels", 13000)
    with pytest.raises(fch.HeaderError, match=r"are CUDA 13\.0, but cuda-bindings 13\.3 needs"):
        fch.choose(None, old, NEEDED)


def test_the_cmake_protocol(tmp_path):
    """What CMakeLists.txt reads: rc 1 and one line on stderr for a CUDA_HOME without headers."""
    env = dict(os.environ, CUDA_HOME=str(tmp_path / "empty"))
    r = subprocess.run([sys.executable, _TOOL], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"cuda_core: CUDA_HOME={tmp_path / 'empty'} has no include/cuda.h")


def test_main_prints_the_include_and_version_and_the_warning_apart(tmp_path, wheels, monkeypatch,
                                                                    capsys):
    home = tmp_path / "cuda"
    make_include(home, 13000)
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.setattr(fch, "wheel_include", lambda: wheels)
    monkeypatch.setattr(fch, "bindings_version", lambda: ((13, 3), "13.3.1"))
    assert fch.main() == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [wheels, "13.3", wheels]  # cudaProfiler.h beside cuda.h
    assert err.startswith(f"cuda_core: CUDA_HOME={home} holds the headers of CUDA 13.0")


def test_the_cuda_12_wheel_layout_a_directory_per_header(tmp_path, monkeypatch):
    """nvidia-cuda-runtime-cu12 and nvidia-cuda-profiler-api-cu12 each have an include/ of their
    own; cuda.h's is the include directory, and cudaProfiler.h is taken from the other."""
    runtime = make_include(tmp_path / "cuda_runtime", 12090, headers=("cuda.h",))
    profiler = make_include(tmp_path / "cuda_profiler_api", None, headers=("cudaProfiler.h",))
    monkeypatch.setattr(fch, "_wheel_includes", lambda: [runtime, profiler])
    assert fch.wheel_include() == runtime
    assert fch.header_include(runtime, "cudaProfiler.h") == profiler
    assert fch.choose(None, runtime, (12, 9)) == (runtime, (12, 9), None)


def test_a_newer_major_toolkit_is_passed_over_for_a_cuda_12_build(tmp_path):
    """The CUDA 12 build (cuda-bindings 12.9) on a machine whose CUDA_HOME is CUDA 13.0 takes the
    12.9 wheel headers, with a warning: a newer major is not "newer"."""
    home = tmp_path / "cuda"
    make_include(home, 13000)
    wheels = make_include(tmp_path / "wheels", 12090)
    choice = fch.choose(str(home), wheels, (12, 9), "cuda-bindings 12.9.4")
    assert choice.include == wheels and choice.version == (12, 9)
    assert "holds the headers of CUDA 13.0, not the CUDA 12.9" in choice.warning


def _cmake():
    here = os.path.join(os.path.dirname(sys.executable), "cmake")
    return here if os.path.isfile(here) else shutil.which("cmake")


@pytest.mark.skipif(_cmake() is None, reason="needs cmake (the build's CMake glue is run alone)")
def test_cmake_prints_the_warning_and_uses_the_wheels(tmp_path, monkeypatch):
    """cmake/cuda_headers.cmake as CMakeLists.txt includes it, run in CMake's script mode."""
    home = tmp_path / "cuda"
    make_include(home, 13000)
    script = os.path.join(os.path.dirname(os.path.dirname(_TOOL)), "cmake", "cuda_headers.cmake")
    r = subprocess.run([_cmake(), f"-DPython_EXECUTABLE={sys.executable}", "-P", script],
                       env=dict(os.environ, CUDA_HOME=str(home)), capture_output=True, text=True,
                       timeout=60)
    wheels = fch.wheel_include()
    if wheels is None:  # no header wheels here: the same facts, as an error
        assert r.returncode != 0 and "CMake Error" in r.stderr
    else:
        assert r.returncode == 0, r.stderr
        assert "CMake Warning" in r.stderr and "unset CUDA_HOME" in " ".join(r.stderr.split())
        assert f"headers from {wheels}" in r.stdout
    assert f"CUDA_HOME={home} holds the headers of CUDA 13.0" in " ".join(r.stderr.split())
