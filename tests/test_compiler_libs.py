"""The compiler libraries (NVRTC, nvJitLink, libNVVM) as a plain install meets them: one clear
error naming the pip package where one is missing, and a warning for a libNVVM loaded from
outside its wheel (CPU)."""

import textwrap
import warnings

import pytest

from helpers import has_gpu, run_python

from cuda_core import CUDAError, CUDAWarning
from cuda_core import _compiler_libs as libs
from cuda_core._build_config import CUDA_MAJOR

# What each CUDA major's build loads, and from which pip packages: spelled out here rather than
# read back from _compiler_libs, so that a wrong name there fails test_names_of_the_builds_major.
# The other tests build their expected messages from libs.COMPILERS, checked so.
EXPECTED = {
    13: {"extra": "cu13",
         "nvrtc": ("nvidia-cuda-nvrtc", "libnvrtc.so.13"),
         "nvJitLink": ("nvidia-nvjitlink", "libnvJitLink.so.13"),
         "nvvm": ("nvidia-nvvm", "libnvvm.so.4")},
    12: {"extra": "cu12",
         "nvrtc": ("nvidia-cuda-nvrtc-cu12", "libnvrtc.so.12"),
         "nvJitLink": ("nvidia-nvjitlink-cu12", "libnvJitLink.so.12"),
         "nvvm": ("nvidia-cuda-nvcc-cu12", "libnvvm.so.4")},
}[CUDA_MAJOR]
EXTRA = EXPECTED["extra"]


def package(name):
    return libs.COMPILERS[name].package


def soname(name):
    return libs.COMPILERS[name].soname


def test_names_of_the_builds_major():
    assert libs.CUDA_MAJOR == CUDA_MAJOR and libs.EXTRA == EXTRA
    assert set(libs.COMPILERS) == {"nvrtc", "nvJitLink", "nvvm"}
    for name, c in libs.COMPILERS.items():
        assert (c.package, c.soname) == EXPECTED[name]


# A fresh interpreter where cuda.pathfinder finds none of the libraries named in HIDDEN, as
# after a plain install without the compilers' extra (and no CUDA toolkit).
HIDE = """
import cuda.pathfinder as pf
real = pf.load_nvidia_dynamic_lib
def load(name):
    if name in HIDDEN:
        raise pf.DynamicLibNotFoundError(f"Failure finding {name!r}: hidden by the test")
    return real(name)
pf.load_nvidia_dynamic_lib = load
"""


def run_hidden(hidden, code):
    result = run_python(f"HIDDEN = {hidden!r}\n" + HIDE + textwrap.dedent(code))
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_missing_nvrtc_is_one_error_naming_its_package():
    out = run_hidden(("nvrtc",), """
        from cuda_core import CUDAError, Program
        try:
            Program("__global__ void k() {}", "c++", {"arch": "sm_90"}).compile("ptx")
        except CUDAError as exc:
            print(type(exc).__name__, exc.code, exc)
    """)
    assert out == (
        f"CUDAError None NVRTC not found: the NVRTC library ({soname('nvrtc')}) could not be "
        "loaded (Failure finding 'nvrtc': hidden by the test); it comes from the pip package "
        f"{package('nvrtc')}: install it with `pip install \"cuda-core-cy[{EXTRA}]\"` (all "
        f"three compilers) or `pip install \"{package('nvrtc')}=={CUDA_MAJOR}.*\"`")


def test_missing_nvvm_is_one_error_naming_its_package():
    out = run_hidden(("nvvm",), """
        from cuda_core import CUDAError, Program
        try:
            Program("target triple = \\"nvptx64-nvidia-cuda\\"", "nvvm",
                    {"arch": "sm_90"}).compile("ptx")
        except CUDAError as exc:
            print(exc)
    """)
    assert out.startswith("libNVVM not found: the libNVVM library (libnvvm.so.4) could not be "
                          "loaded (Failure finding 'nvvm': hidden by the test); it comes from "
                          f"the pip package {package('nvvm')}: ")
    assert f'"cuda-core-cy[{EXTRA}]"' in out


@pytest.mark.skipif(has_gpu(), reason="a driver is present: the driver's linker takes over")
def test_link_without_nvjitlink_or_driver_names_nvjitlink_first():
    out = run_hidden(("nvJitLink",), """
        from cuda_core import CUDAError, Linker, Program
        ptx = Program("extern \\"C\\" __global__ void k() {}", "c++",
                      {"arch": "sm_90"}).compile("ptx")
        try:
            Linker(ptx, options={"arch": "sm_90"})
        except CUDAError as exc:
            print(exc)
    """)
    assert out.startswith(
        f"nvJitLink not found: the nvJitLink library ({soname('nvJitLink')}) could not be "
        "loaded (Failure finding 'nvJitLink': hidden by the test); it comes from the pip "
        f"package {package('nvJitLink')}: install it with `pip install "
        f"\"cuda-core-cy[{EXTRA}]\"` (all three compilers) or `pip install "
        f"\"{package('nvJitLink')}=={CUDA_MAJOR}.*\"`. The fallback, the CUDA driver's own "
        "linker, cannot be used either: CUDA driver not found: ")


def test_lto_without_nvjitlink_names_its_package():
    out = run_hidden(("nvJitLink",), """
        from cuda_core import Linker, ObjectCode
        try:
            Linker(ObjectCode.from_ltoir(b"x"), options={"arch": "sm_90"})
        except ValueError as exc:
            print(exc)
    """)
    assert out.startswith("Linker: input 0 is LTO IR, which only nvJitLink can link: nvJitLink "
                          "not found: ")
    assert package("nvJitLink") in out


# -- libNVVM outside its wheel ------------------------------------------------------------------

class FakeLoaded:
    def __init__(self, path, found_via):
        self.abs_path = path
        self.found_via = found_via


@pytest.fixture
def fresh_loads():
    libs._load_once.cache_clear()
    libs._origin_checked.cache_clear()
    yield
    libs._load_once.cache_clear()
    libs._origin_checked.cache_clear()


# A libNVVM release of a major other than the build's, older and newer: each warns.
OTHER_RELEASES = [f"{CUDA_MAJOR - 1}.4".encode(), f"{CUDA_MAJOR + 1}.0".encode()]


def fake_nvvm(tmp_path, release=OTHER_RELEASES[0]):
    path = tmp_path / "libnvvm.so.4"
    path.write_bytes(b"\0ELF..." + b"Cuda compilation tools, release " + release
                     + b", V" + release + b".99\0rest")
    return str(path)


def test_toolkit_version_reads_the_banner(tmp_path):
    assert libs.toolkit_version(fake_nvvm(tmp_path, b"12.4")) == (12, 4)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert libs.toolkit_version(str(empty)) is None
    assert libs.toolkit_version(str(tmp_path / "missing")) is None


@pytest.mark.parametrize("release", OTHER_RELEASES)
def test_nvvm_from_a_system_toolkit_warns_once(tmp_path, monkeypatch, fresh_loads, release):
    import cuda.pathfinder

    path = fake_nvvm(tmp_path, release)
    monkeypatch.setattr(cuda.pathfinder, "load_nvidia_dynamic_lib",
                        lambda name: FakeLoaded(path, "system-search"))
    with pytest.warns(CUDAWarning) as record:
        libs.load("nvvm")
    assert len(record) == 1
    assert str(record[0].message) == (
        f"libNVVM was loaded from {path} (CUDA {release.decode()}, found via system-search), "
        f"not from the {package('nvvm')} wheel: cuda_core expects libNVVM of CUDA "
        f"{CUDA_MAJOR}.x from that wheel; to use the wheel's, install it with `pip install "
        f"\"cuda-core-cy[{EXTRA}]\"` (all three compilers) or `pip install "
        f"\"{package('nvvm')}=={CUDA_MAJOR}.*\"`")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        libs.load("nvvm")


@pytest.mark.parametrize("via", ["CUDA_PATH", "CUDA_HOME", "system-search"])
@pytest.mark.parametrize("release", [f"{CUDA_MAJOR}.0".encode(), f"{CUDA_MAJOR}.3".encode()])
def test_nvvm_from_a_toolkit_of_our_major_does_not_warn(tmp_path, monkeypatch, fresh_loads,
                                                         via, release):
    import cuda.pathfinder

    path = fake_nvvm(tmp_path, release)
    monkeypatch.setattr(cuda.pathfinder, "load_nvidia_dynamic_lib",
                        lambda name: FakeLoaded(path, via))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert libs.load("nvvm").abs_path == path


@pytest.mark.parametrize("via", ["CUDA_PATH", "CUDA_HOME", "system-search"])
@pytest.mark.parametrize("name", ["nvrtc", "nvJitLink"])
def test_nvrtc_and_nvjitlink_of_a_toolkit_do_not_warn(tmp_path, monkeypatch, fresh_loads, via,
                                                      name):
    # They are looked up by the soname of our major (libnvrtc.so.13, libnvJitLink.so.13 on the
    # CUDA 13 build): a toolkit's library found so is of our major, and is used as it is.
    import cuda.pathfinder

    path = str(tmp_path / libs.COMPILERS[name].soname)
    monkeypatch.setattr(cuda.pathfinder, "load_nvidia_dynamic_lib",
                        lambda lib: FakeLoaded(path, via))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert libs.load(name).abs_path == path


def test_the_warning_as_an_error_is_the_warning_not_a_missing_library(tmp_path, monkeypatch,
                                                                       fresh_loads):
    import cuda.pathfinder

    path = fake_nvvm(tmp_path)  # of another major: warns
    monkeypatch.setattr(cuda.pathfinder, "load_nvidia_dynamic_lib",
                        lambda name: FakeLoaded(path, "CUDA_PATH"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        other = rf"CUDA {CUDA_MAJOR - 1}\.4, "
        with pytest.raises(CUDAWarning, match=rf"^libNVVM was loaded from .*{other}") as info:
            libs.load("nvvm")
        assert not isinstance(info.value, CUDAError)
        assert "not found" not in str(info.value)
        with pytest.raises(CUDAWarning):  # not remembered as given: raised again
            libs.nvvm()
    with pytest.warns(CUDAWarning):  # and given once, where it is a warning
        libs.load("nvvm")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        libs.load("nvvm")


@pytest.mark.parametrize("via", ["site-packages", "conda"])
def test_nvvm_from_a_package_does_not_warn(tmp_path, monkeypatch, fresh_loads, via):
    import cuda.pathfinder

    path = fake_nvvm(tmp_path)
    monkeypatch.setattr(cuda.pathfinder, "load_nvidia_dynamic_lib",
                        lambda name: FakeLoaded(path, via))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert libs.load("nvvm").abs_path == path


def test_a_failed_load_is_tried_again(monkeypatch, fresh_loads):
    import cuda.pathfinder

    def missing(name):
        raise cuda.pathfinder.DynamicLibNotFoundError("gone")

    monkeypatch.setattr(cuda.pathfinder, "load_nvidia_dynamic_lib", missing)
    with pytest.raises(CUDAError, match=r"^nvJitLink not found: .*\(gone\)"):
        libs.load("nvJitLink")
    monkeypatch.setattr(cuda.pathfinder, "load_nvidia_dynamic_lib",
                        lambda name: FakeLoaded(f"/x/{soname('nvJitLink')}", "site-packages"))
    assert libs.load("nvJitLink").abs_path == f"/x/{soname('nvJitLink')}"


def test_the_warning_points_at_the_callers_line(tmp_path, monkeypatch, fresh_loads):
    import cuda.pathfinder

    path = fake_nvvm(tmp_path)
    monkeypatch.setattr(cuda.pathfinder, "load_nvidia_dynamic_lib",
                        lambda name: FakeLoaded(path, "CUDA_PATH"))
    with pytest.warns(CUDAWarning) as record:
        libs.nvvm()
    assert record[0].filename == __file__
