"""Many threads on one object (docs/threads.rst): close() racing with itself releases once and
every other caller sees a closed object; exports, node updates and table look-ups racing with
each other stay counted. Run under the GIL here; the same paths are what free-threaded CPython
runs without it."""

import gc
import os

import numpy as np
import pytest

from cuda_core import Buffer
from cuda_core._memory._ipc_base import IPCAllocationHandle
from helpers import race_threads, run_python
from helpers.memory import NumpyMemoryResource

_THREADS = 16


def _race(work, n=_THREADS):
    return race_threads(work, n)


def _close_racing(obj, call, rounds=50):
    """Thread 0 closes ``obj``; the others ``call(i)`` up to ``rounds`` times, until the call
    refuses the closed object (RuntimeError naming it). The exceptions of anything else."""

    def work(i):
        if i == 0:
            obj.close()
            return
        for _ in range(rounds):
            try:
                call(i)
            except RuntimeError as exc:
                assert "closed" in str(exc)
                return

    return _race(work)


class _SlowFreeResource(NumpyMemoryResource):
    """Its deallocate lets other threads run in the middle (sleep(0) gives up the GIL)."""

    def deallocate(self, ptr, size, *, stream=None):
        import time

        time.sleep(0)
        super().deallocate(ptr, size, stream=stream)


def test_racing_close_of_a_buffer_frees_once():
    for _ in range(20):
        mr = _SlowFreeResource()
        buf = mr.allocate(64)
        assert _race(lambda i: buf.close()) == []
        assert buf.is_closed
        assert len(mr.calls) == 1 and mr.live == {}


def test_racing_close_with_a_stream_frees_once():
    from cuda_core import LEGACY_DEFAULT_STREAM

    mr = _SlowFreeResource()
    buf = mr.allocate(64)
    assert _race(lambda i: buf.close(stream=LEGACY_DEFAULT_STREAM)) == []
    assert len(mr.calls) == 1


def test_racing_close_and_finalizer_free_once():
    # close() on many threads while the last reference goes: one free.
    mr = _SlowFreeResource()
    holder = [mr.allocate(64)]

    def work(i):
        b = holder[0] if holder else None
        if i == 0:
            holder.clear()
        if b is not None:
            b.close()

    assert _race(work) == []
    gc.collect()
    assert len(mr.calls) == 1


def test_methods_racing_close_see_a_closed_buffer():
    mr = _SlowFreeResource()
    buf = mr.allocate(64)

    def use(i):
        buf.handle
        buf.is_host_accessible

    assert _close_racing(buf, use) == []
    assert len(mr.calls) == 1


def test_racing_close_of_an_allocation_handle_closes_its_fd_once():
    for _ in range(20):
        fd = os.open(os.devnull, os.O_RDONLY)
        h = IPCAllocationHandle._init(fd)
        assert _race(lambda i: h.close()) == []
        assert h.is_closed
        with pytest.raises(OSError):
            os.fstat(fd)  # closed (and, as nothing reopened it, by exactly that close)
        with pytest.raises(ValueError, match="this IPCAllocationHandle is closed"):
            h.handle


def test_dlpack_exports_from_many_threads_then_one_free():
    mr = NumpyMemoryResource()
    buf = mr.allocate(256)
    arrays = [[] for _ in range(_THREADS)]

    def export(i):
        for _ in range(20):
            arrays[i].append(np.from_dlpack(buf))
            arrays[i].append(memoryview(buf))

    assert _race(export) == []
    assert sum(map(len, arrays)) == _THREADS * 40
    buf.close()
    assert mr.calls == []  # every export still refers to the memory

    def drop(i):
        for item in arrays[i]:
            if isinstance(item, memoryview):
                item.release()
        arrays[i].clear()

    assert _race(drop) == []
    gc.collect()
    assert len(mr.calls) == 1 and mr.live == {}


def test_dlpack_exports_racing_close_count_right():
    # Each export either counted before close() (the free waits for it) or sees the buffer
    # closed: never an export of freed memory, one free in the end.
    for _ in range(10):
        mr = NumpyMemoryResource()
        buf = mr.allocate(64)
        kept = []

        assert _close_racing(buf, lambda i: kept.append(np.from_dlpack(buf)), 20) == []
        assert buf.is_closed
        if kept:
            assert mr.calls == []
            assert all(a.ctypes.data in mr.live for a in kept)
        kept.clear()
        gc.collect()
        assert len(mr.calls) == 1


def test_set_deallocation_stream_racing_close():
    from cuda_core import LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM

    mr = _SlowFreeResource()
    buf = mr.allocate(64)
    streams = (LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM)

    assert _close_racing(buf, lambda i: buf.set_deallocation_stream(streams[i % 2])) == []
    assert len(mr.calls) == 1 and mr.calls[0][2] in streams + (None,)


# -- GPU --------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_buffer_pointer_attributes_from_many_threads(dev):
    # A buffer without a resource classifies its pointer once (cuPointerGetAttributes); every
    # thread reads the same.
    array = np.zeros(64, dtype=np.uint8)
    buf = Buffer.from_handle(array.ctypes.data, 64, owner=array)
    seen = []
    assert _race(lambda i: seen.append((buf.is_host_accessible, buf.device_id))) == []
    assert set(seen) == {(True, -1)}

_CLOSE_RACE = r"""
import threading, sys, warnings
warnings.simplefilter("error")
from cuda_core import Device
dev = Device(0); dev.set_current()
sys.setswitchinterval(1e-6)

def race(obj, n=16):
    barrier = threading.Barrier(n); errors = []
    def run():
        try:
            barrier.wait(); obj.close()
        except BaseException as exc:
            errors.append(repr(exc))
    ts = [threading.Thread(target=run) for _ in range(n)]
    for t in ts: t.start()
    for t in ts: t.join()
    assert errors == [], errors
    assert obj.is_closed

for _ in range(50):
    race(dev.create_stream())
    race(dev.create_event())
    s = dev.create_stream()
    b = s.create_graph_builder().begin_building()
    b.end_building()
    race(b.complete())
    race(b)
    s.close()
    race(dev.memory_resource.allocate(256, stream=dev.default_stream))
dev.sync()
print("ok")
"""


@pytest.mark.gpu
def test_racing_close_of_stream_event_graph_releases_once():
    # A second cuStreamDestroy/cuEventDestroy/cuGraphExecDestroy of one handle fails (or
    # crashes): in a subprocess, under "-W error".
    r = run_python(_CLOSE_RACE)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


@pytest.mark.gpu
def test_primary_table_iterated_while_another_thread_adds(dev):
    from cuda.bindings import driver

    from cuda_core import Device, Stream
    from cuda_core.system import get_num_devices
    from helpers import cu_ctx_create

    n = get_num_devices()
    ctx = cu_ctx_create(0)  # not a primary context: the look-up walks the whole table
    try:
        stream_err, handle = driver.cuStreamCreate(0)
        assert stream_err == driver.CUresult.CUDA_SUCCESS

        def work(i):
            if i % 2:
                d = Device(i % n)
                d.set_current()
            else:
                driver.cuCtxSetCurrent(ctx)
                for _ in range(50):
                    s = Stream.from_handle(int(handle))
                    assert s.context.handle is not None
                    s.close()

        assert _race(work) == []
        driver.cuCtxSetCurrent(ctx)
        driver.cuStreamDestroy(handle)
    finally:
        driver.cuCtxDestroy(ctx)
        dev.set_current()


@pytest.mark.gpu
def test_racing_close_of_a_green_context(dev):
    from cuda_core import ContextOptions, SMResourceOptions

    sm = dev.resources.sm
    parts, _ = sm.split(SMResourceOptions(count=max(1, sm.sm_count // 4)))
    ctx = dev.create_context(ContextOptions(resources=parts[0]))
    s = ctx.create_stream()

    def work(i):
        if i % 2:
            ctx.close()
        else:
            try:
                ctx.resources
            except RuntimeError as exc:
                assert "closed" in str(exc)

    assert _race(work) == []
    assert ctx.is_closed
    s.sync()  # the stream kept its context
    s.close()
