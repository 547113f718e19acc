"""benchmarks/ipc.py: what runs without a GPU (its command line, batching, the helper process's
protocol, the floor notes); the benchmark itself runs on the GPU machine."""

import importlib
import os
import subprocess
import sys
import types

import pytest

from helpers import has_gpu

BENCHMARKS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "benchmarks")
SCRIPT = os.path.join(BENCHMARKS, "ipc.py")

pytestmark = pytest.mark.skipif(not os.path.isfile(SCRIPT),
                                reason=f"benchmarks/ipc.py is not in this test tree ({SCRIPT})")


@pytest.fixture(scope="module")
def ipc():
    # Imported by name from the benchmarks folder, so that a spawned helper (which pickles
    # ipc._helper_main by reference) imports the same module: spawn passes sys.path on.
    sys.path.insert(0, BENCHMARKS)
    try:
        yield importlib.import_module("ipc")
    finally:
        sys.path.remove(BENCHMARKS)
        for name in ("ipc", "_harness", "_cuda"):
            sys.modules.pop(name, None)


def run_script(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=120, cwd=os.path.dirname(BENCHMARKS))


def test_batches(ipc):
    assert list(ipc.batches(0, 64)) == []
    assert list(ipc.batches(1, 64)) == [1]
    assert list(ipc.batches(64, 64)) == [64]
    assert list(ipc.batches(130, 64)) == [64, 64, 2]
    assert sum(ipc.batches(1000, 16)) == 1000
    with pytest.raises(ValueError):
        list(ipc.batches(-1, 64))
    with pytest.raises(ValueError):
        list(ipc.batches(1, 0))


def test_quick_sets_defaults_that_explicit_options_override(ipc):
    plain = ipc.parse_args([])
    assert (plain.rounds, plain.warmup, plain.inner, plain.quick) == (21, 2, None, False)
    quick = ipc.parse_args(["--quick"])
    assert (quick.rounds, quick.warmup, quick.inner) == (3, 1, ipc.BATCH)
    mixed = ipc.parse_args(["--quick", "--rounds", "5", "--inner=7"])
    assert (mixed.rounds, mixed.warmup, mixed.inner) == (5, 1, 7)
    assert ipc.parse_args(["--rounds", "41"]).rounds == 41


def test_help_works_anywhere():
    result = run_script("--help")
    assert result.returncode == 0, result.stderr
    assert "--quick" in result.stdout and "--rounds" in result.stdout


@pytest.mark.skipif(has_gpu(), reason="a GPU is present: the benchmark would run")
def test_without_gpu_one_line_and_exit_1():
    result = run_script("--quick")
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout == "", result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ipc.py: cannot run: "), result.stderr


def test_ipc_missing_names_the_properties(ipc):
    def dev(handle_types, events):
        props = types.SimpleNamespace(mempool_supported_handle_types=handle_types,
                                      ipc_event_supported=events)
        return types.SimpleNamespace(properties=props)

    assert ipc.ipc_missing(dev(0b1001, True)) == ""
    assert "mempool_supported_handle_types" in ipc.ipc_missing(dev(0b1000, True))
    both = ipc.ipc_missing(dev(0, False))
    assert "mempool_supported_handle_types" in both and "ipc_event_supported" in both


def test_floor_notes(ipc):
    def result(name, median):
        return types.SimpleNamespace(name=name, ok=median is not None, median_ns=median)

    def case(name, floor, nvidia):
        rows = {ipc.FLOOR: result(ipc.FLOOR, floor), ipc.NVIDIA: result(ipc.NVIDIA, nvidia)}
        return types.SimpleNamespace(name=name, note="n", get=rows.get)

    reachable = case(ipc.C_BUFFER, 500.0, 1000.0)
    unreachable = case(ipc.C_EVENT, 900.0, 1000.0)
    informational = case(ipc.C_SEND, 100.0, 1000.0)
    unmeasured = case(ipc.C_BUFFER, None, 1000.0)
    ipc.add_floor_notes(types.SimpleNamespace(
        cases=[reachable, unreachable, informational, unmeasured]))
    assert reachable.note == "n. C floor / cuda.core = 0.50x: the 0.75x target is within reach"
    assert unreachable.note.startswith("n. C floor / cuda.core = 0.90x: the 0.75x target is "
                                       "out of reach here")
    assert informational.note == "n" and unmeasured.note == "n"


def test_helper_process_protocol(ipc):
    # The real helper, spawned: an unknown side kind and an unknown id come back as errors
    # naming them (the helper survives both), and quit ends it with exit code 0.
    helper = ipc._Helper()
    try:
        with pytest.raises(RuntimeError, match=r"in the helper process: KeyError: 'no-such-kind'"):
            helper.call("open", "no-such-kind", ipc.OURS)
        with pytest.raises(RuntimeError, match=r"in the helper process: KeyError: 12345"):
            helper.call("close", 12345)
        with pytest.raises(RuntimeError, match=r"in the helper process: KeyError: 12345"):
            helper.call("free", 12345)
    finally:
        helper.close()
    assert helper.proc.exitcode == 0


def test_helper_that_died_is_reported(ipc):
    helper = ipc._Helper()
    try:
        helper.proc.kill()
        helper.proc.join()
        with pytest.raises(RuntimeError, match=r"the helper process has ended \(exit code -9"):
            helper.call("open", "events", ipc.OURS)
    finally:
        helper.close()


def test_side_times_are_means_per_operation(ipc):
    times = ipc._SideTimes()
    times.add("ours", "#1", 64, export=64_000, import_close=128_000)
    times.add("ours", "#1", 36, export=36_000, import_close=72_000)
    times.add("floor", "#1", 10, export=5_000, import_close=20_000)
    assert times.lines() == [
        "  #1, ours: export 1.000 µs, import_close 2.000 µs",
        "  #1, floor: export 0.500 µs, import_close 2.000 µs",
    ]
