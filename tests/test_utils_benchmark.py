"""cuda_core.utils.benchmark and BenchmarkResult: the argument checks, the result's printing,
to_dict and percentiles, and the one CUDAError without a GPU (CPU); the timed runs (GPU)."""

import inspect
import json
import math
import re
import time

import numpy as np
import pytest

from helpers import run_python, skip_where_gpus_cannot_be_hidden
import cuda_core.utils as utils
from cuda_core.utils import BenchmarkResult, benchmark
from cuda_core.utils._benchmark_loop import _live_events


def noop():
    pass


# -- the namespace and the signature -------------------------------------------------------------

def test_public_names():
    assert "benchmark" in utils.__all__ and "BenchmarkResult" in utils.__all__
    assert utils.__all__ == sorted(utils.__all__)


def test_signature_is_cupyx_with_stream():
    params = inspect.signature(benchmark).parameters
    assert list(params) == ["func", "args", "kwargs", "n_repeat", "name", "n_warmup",
                            "max_duration", "devices", "stream"]
    kinds = {name: p.kind for name, p in params.items()}
    assert [n for n, k in kinds.items() if k is inspect.Parameter.KEYWORD_ONLY] == [
        "name", "n_warmup", "max_duration", "devices", "stream"]
    defaults = {name: p.default for name, p in params.items()}
    assert defaults["args"] == () and defaults["kwargs"] == {}
    assert defaults["n_repeat"] == 10000 and defaults["n_warmup"] == 10
    assert defaults["max_duration"] == math.inf
    assert defaults["name"] is None and defaults["devices"] is None and defaults["stream"] is None


# -- argument checks (all before the driver is used, so they hold without a GPU) -----------------

class NoStream:
    pass


@pytest.mark.parametrize("kwargs, error, match", [
    ({"func": 3}, TypeError, r"benchmark\(\): func must be callable, not int"),
    ({"args": 3}, TypeError, r"benchmark\(\): args must be a tuple .* not int"),
    ({"args": "ab"}, TypeError, r"benchmark\(\): args must be a tuple .* not str"),
    ({"kwargs": [("a", 1)]}, TypeError, r"benchmark\(\): kwargs must be a mapping .* not list"),
    ({"kwargs": {1: 2}}, TypeError, r"benchmark\(\): kwargs keys must be str, got 1"),
    ({"n_repeat": 0}, ValueError, r"benchmark\(\): n_repeat must be between 1 and"),
    ({"n_repeat": -1}, ValueError, r"benchmark\(\): n_repeat must be between 1 and"),
    ({"n_repeat": 2.5}, TypeError, r"benchmark\(\): n_repeat must be an int, not float"),
    ({"n_repeat": "10"}, TypeError, r"benchmark\(\): n_repeat must be an int, not str"),
    ({"n_warmup": -1}, ValueError, r"benchmark\(\): n_warmup must be between 0 and"),
    ({"n_warmup": None}, TypeError, r"benchmark\(\): n_warmup must be an int, not NoneType"),
    ({"max_duration": 0}, ValueError, r"benchmark\(\): max_duration must be > 0"),
    ({"max_duration": -1.0}, ValueError, r"benchmark\(\): max_duration must be > 0"),
    ({"max_duration": math.nan}, ValueError, r"benchmark\(\): max_duration must be > 0"),
    ({"max_duration": "1"}, TypeError, r"benchmark\(\): max_duration must be a number .* str"),
    ({"max_duration": True}, TypeError, r"benchmark\(\): max_duration must be a number .* bool"),
    ({"name": 3}, TypeError, r"benchmark\(\): name must be a str or None, not int"),
    ({"devices": 0}, TypeError, r"benchmark\(\): devices must be a tuple .* not int"),
    ({"devices": "0"}, TypeError, r"benchmark\(\): devices must be a tuple .* not str"),
    ({"devices": ()}, ValueError, r"benchmark\(\): devices must name at least one device"),
    ({"devices": (-1,)}, ValueError, r"benchmark\(\): devices\[0\] must be between 0 and"),
    ({"devices": (0, 1.0)}, TypeError, r"benchmark\(\): devices\[1\] must be an int"),
    ({"devices": (0, 0)}, ValueError, r"benchmark\(\): devices names a device twice"),
    ({"stream": 42}, TypeError, r"benchmark\(\): stream must be a Stream, an object with "
                                r"__cuda_stream__, or None, not int"),
    ({"stream": NoStream()}, TypeError, r"benchmark\(\): stream must be a Stream"),
])
def test_bad_arguments_are_refused_naming_them(kwargs, error, match):
    call = {"func": noop, **kwargs}
    with pytest.raises(error, match=match):
        benchmark(**call)


def test_value_errors_are_value_errors_and_type_errors_type_errors():
    # check_int's out-of-range error below 0 is also an OverflowError; both are ValueErrors.
    with pytest.raises(ValueError):
        benchmark(noop, n_repeat=-5)
    with pytest.raises(TypeError):
        benchmark(noop, n_repeat=None)


@skip_where_gpus_cannot_be_hidden
def test_without_a_gpu_it_is_the_one_clear_cuda_error():
    # CUDA_VISIBLE_DEVICES="" hides every GPU where there is a driver; where there is none the
    # driver cannot be loaded. Either way benchmark raises the CUDAError that Device() raises,
    # and func is never called.
    code = (
        "import cuda_core\n"
        "from cuda_core.utils import benchmark\n"
        "calls = []\n"
        "def describe(use):\n"
        "    try:\n"
        "        use()\n"
        "    except cuda_core.CUDAError as e:\n"
        "        return f'{type(e).__name__}: {e}'\n"
        "    return 'no error'\n"
        "print(describe(lambda: cuda_core.Device()))\n"
        "print(describe(lambda: benchmark(calls.append, (1,), n_repeat=3)))\n"
        "print(describe(lambda: benchmark(calls.append, (1,), devices=(0,))))\n"
        "print(describe(lambda: benchmark(calls.append, (1,),\n"
        "                                 stream=cuda_core.LEGACY_DEFAULT_STREAM)))\n"
        "print('calls', len(calls))\n"
        "from cuda_core.utils._benchmark_loop import _live_events\n"
        "print('live', _live_events())\n"
    )
    result = run_python(code, env={"CUDA_VISIBLE_DEVICES": ""})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 6, result.stdout
    assert re.search("CUDA driver not found|no CUDA-capable GPU found", lines[0]), lines[0]
    assert lines[1] == lines[0] and lines[2] == lines[0] and lines[3] == lines[0], lines
    assert lines[4:] == ["calls 0", "live 0"]


# -- BenchmarkResult from arrays -----------------------------------------------------------------

CPU = [44.407e-6, 42.516e-6, 53.098e-6, 37.3e-6]
GPU = [[50.0e-6, 48.0e-6, 60.0e-6, 52.0e-6]]


def _us(values):
    a = np.asarray(values) * 1e6
    return a.mean(), a.std(), a.min(), a.max()


def test_str_prints_mean_std_min_max_in_microseconds():
    r = BenchmarkResult("add", CPU, GPU)
    mean, std, lo, hi = _us(CPU)
    gmean, gstd, glo, ghi = _us(GPU[0])
    expected = (f"{'add':<20}:"
                f"    CPU: {mean:9.3f} us +/- {std:6.3f} (min: {lo:9.3f} / max: {hi:9.3f}) us"
                f"    GPU-0: {gmean:9.3f} us +/- {gstd:6.3f} (min: {glo:9.3f} / max: "
                f"{ghi:9.3f}) us")
    assert str(r) == expected == repr(r)
    # The same words as cupyx's result, whitespace aside.
    assert " ".join(str(r).split()) == (
        "add : CPU: 44.330 us +/- 5.692 (min: 37.300 / max: 53.098) us "
        "GPU-0: 52.500 us +/- 4.555 (min: 48.000 / max: 60.000) us")


def test_str_names_each_device_and_pads_the_name():
    r = BenchmarkResult("x", [1e-6, 3e-6], [[1e-6, 1e-6], [2e-6, 4e-6]], devices=(0, 3))
    text = str(r)
    assert text.startswith("x" + " " * 19 + ":    CPU:     2.000 us +/-  1.000 ")
    assert "    GPU-0:     1.000 us +/-  0.000 (min:     1.000 / max:     1.000) us" in text
    assert text.endswith("    GPU-3:     3.000 us +/-  1.000 (min:     2.000 / max:     "
                         "4.000) us")
    long_name = "a_rather_long_function_name"
    assert str(BenchmarkResult(long_name, [1e-6], [[1e-6]])).startswith(long_name + ":")


def test_attributes_are_float64_arrays_copied_and_read_only():
    cpu = np.array(CPU, dtype=np.float32)
    r = BenchmarkResult("add", cpu, GPU, devices=[2])
    assert r.name == "add" and r.devices == (2,) and r.n_repeat == 4
    assert r.cpu_times.dtype == np.float64 and r.cpu_times.shape == (4,)
    assert r.gpu_times.dtype == np.float64 and r.gpu_times.shape == (1, 4)
    np.testing.assert_allclose(r.cpu_times, CPU, rtol=1e-6)
    cpu[0] = 1.0
    assert r.cpu_times[0] != 1.0
    with pytest.raises(ValueError):
        r.cpu_times[0] = 0.0
    with pytest.raises(ValueError):
        r.gpu_times[0, 0] = 0.0
    with pytest.raises(AttributeError):
        r.name = "other"


@pytest.mark.parametrize("args, error, match", [
    ((3, CPU, GPU), TypeError, "name must be a str, not int"),
    (("f", [[1e-6]], GPU), ValueError, "cpu_times must be 1-D"),
    (("f", CPU, GPU[0]), ValueError, "gpu_times must be 2-D"),
    (("f", [], [[]]), ValueError, "cpu_times must hold at least one repeat"),
    (("f", CPU, [[1e-6]]), ValueError, r"gpu_times must have one column per repeat \(4\)"),
    (("f", ["a"], [[1e-6]]), TypeError, "cpu_times must be an array of times"),
    (("f", CPU, GPU, (0, 1)), ValueError, r"devices must give one id per row of gpu_times"),
    (("f", CPU, GPU, 0), TypeError, "devices must be a sequence of device ids or None"),
    (("f", CPU, GPU, (-1,)), ValueError, r"devices\[0\] must be >= 0"),
])
def test_result_refuses_inconsistent_arrays(args, error, match):
    with pytest.raises(error, match=match):
        BenchmarkResult(*args)


def test_to_dict_is_plain_json_and_builds_the_result_again():
    r = BenchmarkResult("add", CPU, [GPU[0], [1e-6, 2e-6, 3e-6, 4e-6]], devices=(0, 1))
    d = r.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["name"] == "add" and d["n_repeat"] == 4 and d["devices"] == [0, 1]
    assert d["cpu_times"] == CPU and d["gpu_times"][0] == GPU[0]
    assert set(d["cpu"]) == {"mean", "std", "min", "max", "median"}
    assert d["cpu"]["mean"] == pytest.approx(np.mean(CPU))
    assert d["cpu"]["std"] == pytest.approx(np.std(CPU))
    assert d["cpu"]["median"] == pytest.approx(np.median(CPU))
    assert [g["device"] for g in d["gpu"]] == [0, 1]
    assert d["gpu"][1] == pytest.approx({"device": 1, "mean": 2.5e-6, "std": np.std([1, 2, 3, 4])
                                         * 1e-6, "min": 1e-6, "max": 4e-6, "median": 2.5e-6})
    assert all(type(v) is float for v in d["cpu"].values())
    again = BenchmarkResult(d["name"], d["cpu_times"], d["gpu_times"], d["devices"])
    assert str(again) == str(r) and again.to_dict() == d


def test_percentile_shapes_and_values():
    gpu = [GPU[0], [1e-6, 2e-6, 3e-6, 4e-6]]
    r = BenchmarkResult("add", CPU, gpu, devices=(0, 1))
    cpu, g = r.percentile(50)
    assert cpu.shape == () and float(cpu) == pytest.approx(np.median(CPU))
    assert g.shape == (2,) and g[1] == pytest.approx(2.5e-6)
    cpu, g = r.percentile([0, 50, 100])
    assert cpu.shape == (3,) and g.shape == (2, 3)
    np.testing.assert_allclose(cpu, [min(CPU), np.median(CPU), max(CPU)])
    np.testing.assert_allclose(g[0], np.percentile(gpu[0], [0, 50, 100]))
    np.testing.assert_allclose(g[1], [1e-6, 2.5e-6, 4e-6])
    assert cpu.dtype == np.float64 and g.dtype == np.float64


@pytest.mark.parametrize("q, error", [(101, ValueError), (-1, ValueError), (math.nan, ValueError),
                                      ([50, 200], ValueError), ("median", TypeError),
                                      (None, TypeError)])
def test_percentile_refuses_bad_q(q, error):
    r = BenchmarkResult("add", CPU, GPU)
    with pytest.raises(error, match=r"percentile\(\): q must be"):
        r.percentile(q)


# -- GPU ---------------------------------------------------------------------------------------

SPIN_NS = 200_000  # 200 us of GPU time a launch


@pytest.fixture(scope="module")
def spin():
    """A kernel that busy-waits its argument's nanoseconds of the GPU's global timer (the
    suite's shared kernels, tests/graph_kernels.py)."""
    from graph_kernels import _shared_kernels

    return _shared_kernels().spin


def _launch_spin(stream, kernel, ns=SPIN_NS):
    from cuda_core import LaunchConfig, launch

    launch(stream, LaunchConfig(grid=1, block=1), kernel, np.uint64(ns))


@pytest.mark.gpu
def test_times_are_positive_and_shaped(dev):
    calls = []
    r = benchmark(calls.append, (1,), n_repeat=25, n_warmup=3)
    assert len(calls) == 28  # warm-up calls too
    assert r.name == "append" and r.n_repeat == 25 and r.devices == (dev.device_id,)
    assert r.cpu_times.shape == (25,) and r.gpu_times.shape == (1, 25)
    assert r.cpu_times.dtype == np.float64 and r.gpu_times.dtype == np.float64
    assert np.all(r.cpu_times > 0) and np.all(r.gpu_times >= 0)
    assert np.all(r.cpu_times < 1.0) and np.all(r.gpu_times < 1.0)
    assert str(r).startswith("append              :    CPU: ")
    assert _live_events() == 0


@pytest.mark.gpu
def test_args_kwargs_name_and_no_warmup(dev):
    seen = []

    def record(a, b, *, c):
        seen.append((a, b, c))
        return [a]  # a result each call: dropped at once

    r = benchmark(record, [1, 2], {"c": 3}, 4, name="rec", n_warmup=0)
    assert seen == [(1, 2, 3)] * 4
    assert r.name == "rec" and r.n_repeat == 4


@pytest.mark.gpu
def test_a_kernel_shows_gpu_time_on_the_default_stream(dev, spin):
    r = benchmark(_launch_spin, (dev.default_stream, spin), n_repeat=20, n_warmup=2)
    assert r.gpu_times.shape == (1, 20)
    assert r.gpu_times.min() >= SPIN_NS * 1e-9 * 0.9, r
    # The launch is asynchronous: the call returns long before the kernel ends.
    assert np.median(r.cpu_times) < np.median(r.gpu_times[0]), r


@pytest.mark.gpu
def test_stream_times_on_that_stream(dev, stream, spin):
    r = benchmark(_launch_spin, (stream, spin), n_repeat=10, stream=stream)
    assert r.devices == (dev.device_id,) and r.gpu_times.shape == (1, 10)
    assert r.gpu_times.min() >= SPIN_NS * 1e-9 * 0.9, r
    assert np.median(r.cpu_times) < np.median(r.gpu_times[0]), r

    class Foreign:  # another library's stream, by the protocol
        def __cuda_stream__(self):
            return (0, int(stream.handle))

    r = benchmark(_launch_spin, (stream, spin), n_repeat=5, stream=Foreign(),
                  devices=(dev.device_id,))
    assert r.gpu_times.min() >= SPIN_NS * 1e-9 * 0.9, r
    assert _live_events() == 0


@pytest.mark.gpu
def test_stream_and_devices_must_agree(dev, stream):
    other = dev.device_id + 1
    with pytest.raises(ValueError, match=rf"devices=\({other},\) does not match the stream, "
                                         rf"which is on device {dev.device_id}"):
        benchmark(noop, n_repeat=1, stream=stream, devices=(other,))
    with pytest.raises(ValueError, match="does not match the stream"):
        benchmark(noop, n_repeat=1, stream=stream, devices=(dev.device_id, other))
    assert benchmark(noop, n_repeat=1, stream=stream, devices=(dev.device_id,)).n_repeat == 1


@pytest.mark.gpu
def test_closed_stream_is_refused(dev):
    s = dev.create_stream()
    s.close()
    with pytest.raises(RuntimeError):
        benchmark(noop, n_repeat=1, stream=s)
    assert _live_events() == 0


@pytest.mark.gpu
@pytest.mark.parametrize("n_warmup", [0, 2])
def test_func_closing_the_stream_is_refused(dev, n_warmup):
    s = dev.create_stream()
    calls = []

    def close_on_second_call():
        calls.append(None)
        if len(calls) == 2:
            s.close()

    with pytest.raises(RuntimeError, match="func closed the stream being timed"):
        benchmark(close_on_second_call, n_repeat=5, n_warmup=n_warmup, stream=s)
    assert len(calls) == 2 and _live_events() == 0


@pytest.mark.gpu
def test_a_capturing_stream_is_refused(dev):
    gb = dev.create_graph_builder().begin_building()
    try:
        calls = []
        with pytest.raises(RuntimeError, match="is capturing a graph"):
            benchmark(calls.append, (1,), stream=gb)
        assert calls == [] and _live_events() == 0
    finally:
        gb.end_building()
        gb.close()


@pytest.mark.gpu
def test_max_duration_stops_early(dev):
    r = benchmark(time.sleep, (0.02,), n_repeat=1000, n_warmup=0, max_duration=0.1)
    assert 1 <= r.n_repeat <= 6, r.n_repeat
    assert r.cpu_times.shape == (r.n_repeat,) and r.gpu_times.shape == (1, r.n_repeat)
    assert np.all(r.cpu_times >= 0.019)
    # A limit shorter than one call still gives that one call.
    assert benchmark(time.sleep, (0.01,), n_repeat=50, max_duration=1e-6).n_repeat == 1


@pytest.mark.gpu
@pytest.mark.parametrize("fail_at", [0, 2, 7])  # a warm-up call, then timed ones
def test_an_exception_in_func_propagates_and_the_events_are_destroyed(dev, fail_at):
    calls = []

    def flaky():
        calls.append(None)
        if len(calls) > fail_at:
            raise ZeroDivisionError(f"call {len(calls)}")

    assert _live_events() == 0
    with pytest.raises(ZeroDivisionError, match=f"call {fail_at + 1}"):
        benchmark(flaky, n_repeat=10, n_warmup=2)
    assert len(calls) == fail_at + 1
    assert _live_events() == 0
    # Nothing is left behind: the next run works.
    assert benchmark(noop, n_repeat=3).n_repeat == 3
    assert _live_events() == 0


@pytest.mark.gpu
def test_devices_by_id(dev):
    r = benchmark(noop, n_repeat=5, devices=(dev.device_id,))
    assert r.devices == (dev.device_id,) and r.gpu_times.shape == (1, 5)
    r = benchmark(noop, n_repeat=5, devices=[dev])  # a Device is its id
    assert r.devices == (dev.device_id,)


@pytest.mark.gpu
def test_devices_naming_a_missing_device_raises(dev):
    from cuda_core import system

    count = system.get_num_devices()
    calls = []
    with pytest.raises(ValueError, match=rf"device id {count} in devices is out of range: this "
                                         rf"machine has {count} CUDA device"):
        benchmark(calls.append, (1,), devices=(0, count))
    assert calls == [] and _live_events() == 0


@pytest.mark.gpu
def test_every_device(dev):
    from cuda_core import Device, system

    count = system.get_num_devices()
    if count < 2:
        pytest.skip("needs two GPUs")
    r = benchmark(noop, n_repeat=5, devices=tuple(range(count)))
    assert r.devices == tuple(range(count)) and r.gpu_times.shape == (count, 5)
    assert [f"GPU-{i}:" in str(r) for i in range(count)] == [True] * count
    assert Device().device_id == dev.device_id  # the current device is left as it was
