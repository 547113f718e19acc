"""``python -m cuda_core.bench``, the launch benchmark installed with the package: its cases and
contenders, its output (table, JSON, plot) and its one-line refusal without a GPU (CPU); a short
real run (GPU)."""

import json
import struct
import sys
import types

import pytest

from helpers import run_python

from cuda_core.bench import __main__ as cli
from cuda_core.bench._cases import C_GRAPH, C_STRUCT, CLI_CASES, make_cases
from cuda_core.bench._harness import CaseResult, ContenderResult, Report
from cuda_core.bench._launch import (FLOOR, FLOOR_USER_OBJECT, MARK, NVIDIA, OURS, STRUCT,
                                     STRUCT_TAG, _args, _expected)
from cuda_core.bench._report import report_data

CLI = "import sys\nfrom cuda_core.bench.__main__ import main\nsys.exit(main(%r))\n"


def test_help_names_what_it_times():
    out = run_python(CLI % (["--help"],))
    assert out.returncode == 0, out.stderr
    for words in ("4 Buffers", "4 ints", "struct by value", "16 arguments", "graph replay",
                  "--json", "--plot"):
        assert words in out.stdout


def test_without_a_gpu_it_says_why_in_one_line():
    # No driver here (or, on the GPU machine, no visible device): one line, exit 1.
    code = ("from cuda_core.bench._report import run_script\n"
            "from cuda_core.bench.__main__ import main\n"
            "run_script(main, 'python -m cuda_core.bench')\n")
    out = run_python(code, env={"CUDA_VISIBLE_DEVICES": ""})
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m cuda_core.bench: cannot run: "), \
        out.stderr
    assert out.stdout == ""


def test_the_cases_and_contenders_it_runs():
    cases = make_cases(1000, CLI_CASES, extras=False)
    assert [c.name for c in cases] == list(CLI_CASES)
    assert len(cases) == 6
    for case in cases:
        names = [c.name for c in case.contenders]
        assert names[:2] == [OURS, NVIDIA] and FLOOR in names
        assert "cuda.bindings" in names and "CuPy" in names
        # Only the project's benchmark shows the tuple form and the Python floor.
        assert "cuda.bindings (tuple)" not in names and "Python floor" not in names
        assert case.max_inner == 1000
    graph = next(c for c in cases if c.name == C_GRAPH)
    assert FLOOR_USER_OBJECT in [c.name for c in graph.contenders]
    # benchmarks/launch_latency.py runs every case, the struct among them, with the extras.
    every = [c.name for c in make_cases(1000)]
    assert set(CLI_CASES) <= set(every) and len(every) == 15


def test_the_struct_case_packs_the_bytes_its_kernel_reads():
    from cuda_core._kernel_args import _packed_arguments

    out = 0x1000
    packed = _packed_arguments(*_args(STRUCT, [out], True))
    assert packed[0] == struct.pack("<Q", out)
    assert packed[1] == struct.pack("<QQ", STRUCT_TAG, MARK)
    assert _expected(STRUCT, [out]) == struct.pack("<3Q", out, STRUCT_TAG, MARK)
    assert _packed_arguments(*_args(STRUCT, [out], False))[1] == struct.pack("<QQ", STRUCT_TAG,
                                                                             0)


def _report():
    def result(name, median):
        return ContenderResult(name, "ok", [median, median], median, median, median, median,
                               median)

    cases = [CaseResult(C_STRUCT, 100, [result(OURS, 2500.0),
                                        ContenderResult(NVIDIA, "n/a (cuda.core does not pass "
                                                                "a struct by value)"),
                                        result(FLOOR, 2000.0)])]
    return Report("cuda_core launch latency (time per launch)", NVIDIA, OURS, FLOOR, "", 0.0,
                  3, 1, 5.0, {"device": "GPU (sm_90)"}, cases, floor_ratio=True)


def test_json_alone_goes_to_standard_output(capsys):
    from cuda_core.bench._report import write_json

    write_json(_report(), "-")
    data = json.loads(capsys.readouterr().out)
    assert data == json.loads(json.dumps(report_data(_report())))
    [case] = data["cases"]
    ours, theirs, floor = case["contenders"]
    assert ours["median_ns"] == 2500.0 and ours["ratio_vs_floor"] == 1.25
    assert theirs["status"].startswith("n/a (cuda.core does not pass a struct")
    assert theirs["ratio_vs_floor"] is None and floor["ratio_vs_floor"] == 1.0


def test_plot_draws_one_bar_series_per_contender(monkeypatch, tmp_path):
    # A stand-in for matplotlib (not a dependency of the tests) that records the calls.
    calls = {"bar": [], "saved": None}

    class Axes:
        def bar(self, xs, ys, width, label):
            calls["bar"].append((label, list(ys)))

        def __getattr__(self, name):
            return lambda *a, **k: None

    class Figure:
        def tight_layout(self):
            pass

        def savefig(self, path, dpi):
            calls["saved"] = path

    pyplot = types.SimpleNamespace(subplots=lambda figsize: (Figure(), Axes()),
                                   close=lambda fig: None)
    mpl = types.SimpleNamespace(use=lambda backend: None, pyplot=pyplot)
    monkeypatch.setitem(sys.modules, "matplotlib", mpl)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", pyplot)
    path = str(tmp_path / "launch.png")
    cli.plot(report_data(_report()), path)
    assert calls["saved"] == path
    # A contender that did not run has no bar; the others are in µs.
    assert calls["bar"] == [(OURS, [2.5]), (NVIDIA, []), (FLOOR, [2.0])]


def test_plot_without_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(SystemExit, match=r"cuda-core-cy\[plot\]"):
        cli.plot(report_data(_report()), "unused.png")


@pytest.mark.gpu
def test_a_short_run_on_the_gpu(tmp_path):
    # Every case's launch path is proved (the kernel writes what it received, read back)
    # before it is timed; ours and the C floor run in every case.
    path = tmp_path / "bench.json"
    out = run_python(CLI % (["--rounds", "3", "--warmup", "1", "--sample-ms", "2", "-q",
                             "--json", str(path)],), timeout=600)
    assert out.returncode == 0, out.stderr
    assert "cuda_core launch latency" in out.stdout
    data = json.loads(path.read_text())
    assert [c["name"] for c in data["cases"]] == list(CLI_CASES)
    for case in data["cases"]:
        status = {c["name"]: c["status"] for c in case["contenders"]}
        # Ours, its floor and the bare bindings call run everywhere; the peers run where
        # installed and able (cuda.core 1.2 refuses a struct by value: n/a, with its reason).
        for name in (OURS, FLOOR, "cuda.bindings"):
            assert status[name] == "ok", (case["name"], status)
        for c in case["contenders"]:
            if c["status"] == "ok":
                assert c["median_ns"] > 0
