"""Several threads, and process exit with live objects."""

import threading

import pytest

from cuda_core import Device, EventOptions
from helpers import StreamGate, run_python


@pytest.mark.gpu
def test_two_threads_each_with_device_zero_and_own_streams():
    results, errors = {}, []
    barrier = threading.Barrier(2)

    def work(name):
        try:
            dev = Device(0)
            dev.set_current()
            barrier.wait()
            streams = [dev.create_stream() for _ in range(4)]
            for _ in range(200):
                for s in streams:
                    e = s.record(options=EventOptions(timing_enabled=True))
                    streams[0].wait(e)
            done = streams[0].record()
            done.sync()
            for s in streams:
                s.sync()
                s.close()
            results[name] = (id(dev), dev.device_id, done.is_done)
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert results["a"][1:] == results["b"][1:] == (0, True)
    assert results["a"][0] != results["b"][0]  # one Device object per thread


@pytest.mark.gpu
def test_stream_waits_across_threads(dev):
    s1 = dev.create_stream()
    gate = StreamGate(s1)
    ev = s1.record()
    out = []

    def other():
        d = Device(0)
        d.set_current()
        s2 = d.create_stream()
        s2.wait(ev)
        out.append(s2.is_done)
        gate.open()
        s2.sync()
        out.append(s2.is_done)
        s2.close()

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert out == [False, True]
    gate.close()
    s1.close()


EXIT_SCRIPT = r"""
import threading
import cuda_core
from cuda_core import Device, EventOptions

keep = []
def worker():
    d = Device(0)
    d.set_current()
    s = d.create_stream()
    e = s.record(options=EventOptions(timing_enabled=True))
    keep.extend([d, s, e, d.create_event(), d.default_stream])
    gate.wait()

gate = threading.Event()
threads = [threading.Thread(target=worker, daemon=True) for _ in range(3)]
for t in threads:
    t.start()
main = Device(0)
main.set_current()
keep.extend([main.create_stream(), main.create_event(), main.create_stream()])
cycle = [main.create_stream()]
cycle.append(cycle)  # only the cyclic collector at exit frees this one
while len(keep) < 3 + 5 * 3:
    pass
print("exiting", flush=True)
# Threads stay blocked (daemon) while the interpreter finalizes.
"""


@pytest.mark.gpu
def test_exit_with_live_objects_on_several_threads_is_clean():
    result = run_python(EXIT_SCRIPT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "exiting"
    assert result.stderr == ""
