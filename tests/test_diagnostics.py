"""``python -m cuda_core``: the diagnostic report (CPU, plus one GPU test)."""

import re
import subprocess
import sys
import tempfile

import pytest

from helpers import gpu_probe, has_gpu

from cuda_core import _compiler_libs, _diagnostics

SECTIONS = ("cuda_core:", "Python:", "Packages:", "CUDA driver:", "Devices:",
            "Compiler libraries:", "Environment:")


def run_module(*args):
    # Outside the source tree, whose cuda_core/ would shadow the installed package.
    return subprocess.run([sys.executable, "-m", "cuda_core", *args], capture_output=True,
                          text=True, timeout=120, cwd=tempfile.gettempdir())


def section(text, title):
    """The lines of section ``title`` (without the title)."""
    lines = text.splitlines()
    start = lines.index(title) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("  ")), len(lines))
    return lines[start:end]


def test_command_prints_every_section_and_exits_0():
    result = run_module()
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert [line for line in lines if line and not line.startswith("  ")] == list(SECTIONS)
    assert "Traceback" not in result.stdout
    import cuda_core

    assert f"  version:  {cuda_core.__version__}" in section(result.stdout, "cuda_core:")


def test_the_report_names_the_headers_the_build_used():
    result = run_module()
    assert result.returncode == 0, result.stderr
    built = [line for line in section(result.stdout, "cuda_core:") if line.startswith("  built:")]
    assert len(built) == 1
    assert re.fullmatch(r"  built:\s+with the CUDA \d+\.\d+ headers of (the nvidia-cuda-runtime "
                        r"and nvidia-cuda-profiler-api wheels|CUDA_HOME=.+), against "
                        r"cuda-bindings \d+\.\d+\S*", built[0]), built[0]


def test_build_info_rows(tmp_path):
    (tmp_path / "_build_info.txt").write_text(
        "cuda-headers: 13.3\nheaders-from: the wheels\ncuda-bindings: 13.3.1\n"
        "warning: cuda_core: CUDA_HOME=/x holds CUDA 13.0: passed over\n")
    assert _diagnostics._build_info(str(tmp_path)) == {
        "cuda-headers": "13.3", "headers-from": "the wheels", "cuda-bindings": "13.3.1",
        "warning": "cuda_core: CUDA_HOME=/x holds CUDA 13.0: passed over"}
    assert _diagnostics._build_info(str(tmp_path / "missing")) == {}


def test_show_config_prints_the_report():
    # In a fresh interpreter, outside the source tree, as the command runs.
    code = "import cuda_core; cuda_core.show_config()"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, cwd=tempfile.gettempdir())
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert [line for line in lines if line and not line.startswith("  ")] == list(SECTIONS)


@pytest.mark.skipif(has_gpu(), reason="a driver and GPU are present; see the GPU test")
def test_command_says_there_is_no_gpu():
    result = run_module()
    assert result.returncode == 0, result.stderr
    devices = section(result.stdout, "Devices:")
    assert len(devices) == 1 and devices[0].startswith("  count: none: ")
    assert re.search("CUDA driver not found|no CUDA-capable GPU", devices[0])
    if gpu_probe()[1].startswith("no NVIDIA driver"):
        # The reason in parentheses is cuda-bindings' own wording, which varies by release.
        (driver_line,) = section(result.stdout, "CUDA driver:")
        assert driver_line.startswith("  found: no, libcuda.so.1 cannot be loaded (")
        assert driver_line.endswith("); install an NVIDIA driver to use a GPU")


def test_usage():
    assert run_module("--help").returncode == 0
    result = run_module("--bogus")
    assert result.returncode == 2 and result.stderr.startswith("usage: python -m cuda_core")


def test_a_failing_probe_is_one_line_and_the_rest_still_prints(monkeypatch):
    def broken():
        raise RuntimeError("probe broke\nsecond line")

    monkeypatch.setattr(_diagnostics, "_probe_driver", broken)
    text = _diagnostics.report()
    assert section(text, "CUDA driver:") == ["  error: RuntimeError: probe broke"]
    assert "second line" not in text and "Traceback" not in text
    for title in SECTIONS:
        assert title in text.splitlines()
    assert section(text, "Compiler libraries:")[0].startswith("  NVRTC:")


def test_a_missing_compiler_names_its_pip_package(monkeypatch):
    # The names of the build's CUDA major, which test_compiler_libs checks.
    nvjitlink = _compiler_libs.COMPILERS["nvJitLink"]
    real = _diagnostics._compiler_version

    def version(name):
        if name == "nvJitLink":
            raise RuntimeError(f"{nvjitlink.soname} not found")
        return real(name)

    monkeypatch.setattr(_diagnostics, "_compiler_version", version)
    rows = section(_diagnostics.report(), "Compiler libraries:")
    assert [row.split(":")[0].strip() for row in rows] == ["NVRTC", "nvJitLink", "NVVM"]
    assert rows[1] == (f"  nvJitLink: not found (RuntimeError: {nvjitlink.soname} not found); "
                       f"the pip package {nvjitlink.package} provides it, as does the extra "
                       f"cuda-core-cy[{_compiler_libs.EXTRA}]")


def test_compiler_packages_are_the_builds_extra():
    from importlib import metadata

    def name(requirement):
        return re.split(r"[<>=!~; \[]", requirement, maxsplit=1)[0].lower()

    requires = metadata.requires("cuda-core-cy") or ()
    plain = {name(r) for r in requires if "extra ==" not in r}
    extra = _compiler_libs.EXTRA  # cu13, or cu12 on the CUDA 12 build
    in_extra = {name(r) for r in requires if re.search(rf"""extra == ["']{extra}["']""", r)}
    for _, _, package in _diagnostics._COMPILERS:
        assert package in in_extra and package not in plain


def test_environment_lists_set_and_unset_variables(monkeypatch):
    for name in _diagnostics.ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setenv("CUDA_HOME", "/opt/cuda")
    rows = section(_diagnostics.report(), "Environment:")
    assert rows[0] == "  CUDA_HOME:            /opt/cuda"
    assert rows[1] == "  CUDA_VISIBLE_DEVICES: (set, empty)"
    unset = rows[2].split(":", 1)[1].strip().split(", ")
    assert rows[2].startswith("  unset:") and "CUDA_PATH" in unset and "CUDA_HOME" not in unset
    assert len(rows) == 3


@pytest.mark.gpu
def test_command_lists_device_0_with_its_compute_capability():
    from cuda_core import Device

    cc = Device(0).compute_capability
    result = run_module()
    assert result.returncode == 0, result.stderr
    assert section(result.stdout, "CUDA driver:")[0] == "  found:    yes"
    devices = section(result.stdout, "Devices:")
    device0 = next(row for row in devices if row.lstrip().startswith("0:"))
    assert f"{Device(0).name}, compute capability {cc.major}.{cc.minor}, " in device0
    assert "GiB" in device0
