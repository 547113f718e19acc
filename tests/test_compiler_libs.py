"""The compiler libraries (NVRTC, nvJitLink, libNVVM) as a plain install meets them: one clear
error naming the pip package where one is missing, and a warning for a libNVVM loaded from
outside its wheel (CPU)."""

import textwrap
import warnings

import pytest

from helpers import has_gpu, run_python

from cuda_core import CUDAError, CUDAWarning
from cuda_core import _compiler_libs as libs

# A fresh interpreter where cuda.pathfinder finds none of the libraries named in HIDDEN, as
# after a plain install without the cu13 extra (and no CUDA toolkit).
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
        "CUDAError None NVRTC not found: the NVRTC library (libnvrtc.so.13) could not be loaded "
        "(Failure finding 'nvrtc': hidden by the test); it comes from the pip package "
        "nvidia-cuda-nvrtc: install it with `pip install \"cuda-core-cy[cu13]\"` (all three "
        "compilers) or `pip install \"nvidia-cuda-nvrtc==13.*\"`")


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
                          "the pip package nvidia-nvvm: ")
    assert '"cuda-core-cy[cu13]"' in out


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
        "nvJitLink not found: the nvJitLink library (libnvJitLink.so.13) could not be loaded "
        "(Failure finding 'nvJitLink': hidden by the test); it comes from the pip package "
        "nvidia-nvjitlink: install it with `pip install \"cuda-core-cy[cu13]\"` (all three "
        "compilers) or `pip install \"nvidia-nvjitlink==13.*\"`. The fallback, the CUDA "
        "driver's own linker, cannot be used either: CUDA driver not found: ")


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
    assert "nvidia-nvjitlink" in out


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


def fake_nvvm(tmp_path, release=b"12.4"):
    path = tmp_path / "libnvvm.so.4"
    path.write_bytes(b"\0ELF..." + b"Cuda compilation tools, release " + release
                     + b", V" + release + b".99\0rest")
    return str(path)


def test_toolkit_version_reads_the_banner(tmp_path):
    assert libs.toolkit_version(fake_nvvm(tmp_path)) == (12, 4)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert libs.toolkit_version(str(empty)) is None
    assert libs.toolkit_version(str(tmp_path / "missing")) is None


def test_nvvm_from_a_system_toolkit_warns_once(tmp_path, monkeypatch, fresh_loads):
    import cuda.pathfinder

    path = fake_nvvm(tmp_path)
    monkeypatch.setattr(cuda.pathfinder, "load_nvidia_dynamic_lib",
                        lambda name: FakeLoaded(path, "system-search"))
    with pytest.warns(CUDAWarning) as record:
        libs.load("nvvm")
    assert len(record) == 1
    assert str(record[0].message) == (
        f"libNVVM was loaded from {path} (CUDA 12.4, found via system-search), not from the "
        f"nvidia-nvvm wheel: cuda_core expects libNVVM of CUDA 13.x from that wheel; to use the "
        f"wheel's, install it with `pip install \"cuda-core-cy[cu13]\"` (all three compilers) "
        f"or `pip install \"nvidia-nvvm==13.*\"`")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        libs.load("nvvm")


@pytest.mark.parametrize("via", ["CUDA_PATH", "CUDA_HOME", "system-search"])
@pytest.mark.parametrize("release", [b"13.0", b"13.3"])
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
    # They are looked up by the soname of our major (libnvrtc.so.13, libnvJitLink.so.13): a
    # toolkit's library found so is of our major, and is used as it is.
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

    path = fake_nvvm(tmp_path)  # CUDA 12.4: warns
    monkeypatch.setattr(cuda.pathfinder, "load_nvidia_dynamic_lib",
                        lambda name: FakeLoaded(path, "CUDA_PATH"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(CUDAWarning, match=r"^libNVVM was loaded from .*CUDA 12\.4") as info:
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
                        lambda name: FakeLoaded("/x/libnvJitLink.so.13", "site-packages"))
    assert libs.load("nvJitLink").abs_path == "/x/libnvJitLink.so.13"


def test_the_warning_points_at_the_callers_line(tmp_path, monkeypatch, fresh_loads):
    import cuda.pathfinder

    path = fake_nvvm(tmp_path)
    monkeypatch.setattr(cuda.pathfinder, "load_nvidia_dynamic_lib",
                        lambda name: FakeLoaded(path, "CUDA_PATH"))
    with pytest.warns(CUDAWarning) as record:
        libs.nvvm()
    assert record[0].filename == __file__
