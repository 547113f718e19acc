"""tools/gpu/launch_before_after.py's summary (CPU): per case, the median over alternated runs
of cuda_core's ratios to the C floor and to cuda.core, from the benchmark's ``--json`` reports.
The runs themselves need a GPU (the tool's docstring says how)."""

import importlib.util
import os

_TOOL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools",
                     "gpu", "launch_before_after.py")
_spec = importlib.util.spec_from_file_location("launch_before_after", _TOOL)
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)


def _report(floor, base, graph_floor=None):
    """A report of two cases, as write_json lays it out (the contenders that matter here)."""
    def case(name, ratio_floor, ratio_base):
        return {"name": name, "contenders": [
            {"name": "cuda_core", "ratio_vs_floor": ratio_floor, "ratio_vs_baseline": ratio_base},
            {"name": "cuda.core", "ratio_vs_floor": 1.4, "ratio_vs_baseline": 1.0}]}

    return {"cases": [case("#1 0 args", floor, base), case("#6 graph replay", graph_floor, base)]}


def test_medians_over_the_runs_of_each_build():
    runs = {"before": [_report(1.10, 0.80), _report(1.06, 0.70), _report(1.20, 0.90)],
            "after": [_report(1.05, 0.75, 1.9), _report(1.07, 0.74, 2.0)]}
    table = tool.summarize(runs)
    assert table["#1 0 args"]["before"] == (1.10, 0.80, 3)
    assert table["#1 0 args"]["after"] == (1.06, 0.745, 2)
    # A ratio a run lacks (no floor for the case) is left out of its median, not counted as 0.
    assert table["#6 graph replay"]["before"] == (None, 0.80, 3)
    assert table["#6 graph replay"]["after"] == (1.95, 0.745, 2)


def test_the_table_names_each_build_and_what_is_missing():
    text = tool.render(tool.summarize({"before": [_report(1.1, 0.8)], "after": []}),
                       ["before", "after"])
    lines = text.splitlines()
    assert "before (floor / cuda.core)" in lines[0] and "after (floor / cuda.core)" in lines[0]
    assert "1.10 / 0.80 (1)" in lines[1] and lines[1].rstrip().endswith("n/a")
    assert "n/a / 0.80 (1)" in lines[2]
