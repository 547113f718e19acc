"""IPC benchmark: the host cost of sharing memory and events between two processes.

Each exchange has two sides, and both are timed: this process and one helper process (started
with multiprocessing's ``spawn``, holding both libraries and the floor module) play one side
each. Every contender is self-timed: ``run(n)`` does ``n`` operations in batches of at most
``BATCH`` (64); each side times only its own calls, with ``time.perf_counter_ns()`` around the
whole batch (not around each call), and the helper sends its nanoseconds back with its answer.
What travels between the processes (pickles through a Pipe), the allocations and the
synchronizations are not timed. The contenders, all against the same helper, rounds
alternated:

* ``cuda_core`` -- this package, the subject;
* ``cuda.core`` -- NVIDIA's cuda.core (1.2), the same statements on its own objects;
* ``C floor``   -- the driver calls alone, in C loops (``cuda_core._bench_floor``, built with
                   the package when CUDA_CORE_BENCH=1); its pools, buffers and streams are
                   made with cuda_core, its timed loops call nothing but the driver.

The cases:

1. buffer descriptor export + import. Helper (exporter): ``d = b.ipc_descriptor`` on each of a
   batch of fresh buffers (allocated, untimed, before the batch: both libraries keep a
   buffer's descriptor once made). Here (importer, through the pool mapped once from the
   helper's allocation handle): ``x = Buffer.from_ipc_descriptor(mmr, d, stream=s);
   x.close()`` per descriptor. Untimed: the descriptors' pickles, ``s.sync()`` here, and the
   helper's frees after that (importers free first, as the driver requires). Floor:
   cuMemPoolExportPointer there; cuMemPoolImportPointer, one cuPointerGetAttributes (range
   start, range size, device) and cuMemFreeAsync here.
2. IPC event round trip. Here (exporter): ``e = s.record(options=EventOptions(
   ipc_enabled=True)); d = e.ipc_descriptor`` per event, and ``e.close()`` once the helper
   is done with the batch. Helper (importer): ``ie = Event.from_ipc_descriptor(d);
   s2.wait(ie); ie.close()``. Floor: cuEventCreate (interprocess, no timing), cuEventRecord,
   cuIpcGetEventHandle and later cuEventDestroy here; cuIpcOpenEventHandle,
   cuStreamWaitEvent, cuEventDestroy there.
3. a Buffer sent whole (informational, no target). Helper: ``conn.send(b)`` (multiprocessing
   pickles the pool with its file descriptor, and the descriptor); here: ``b = conn.recv();
   b.close()``, the mapped pool kept alive meanwhile. Dominated by the pipe and the file
   descriptor's transfer (a Unix-socket round trip to the sender per message). Batches of at
   most ``SEND_BATCH`` (16), so that a batch fits the socket's buffer.

Before timing, every contender proves its path once: case 1 imports a buffer the helper filled
with a pattern and reads it back; case 2 records its IPC event behind a gate (the stream waits
on a word of mapped host memory), and the helper checks that the imported event is not done
and that its stream, made to wait on it, is held, then that both complete once the gate opens;
case 3 reads back a buffer received whole. A wrong path shows as ERROR, never as a number.

After the report, "Where the time goes" gives each side's mean per operation for every
contender in cases 1 and 2 (over all timed batches): what each library adds to the driver's
calls, side by side with the floor's.

Targets: ours at most 0.75x cuda.core's time in cases 1 and 2. Each case's floor ratio says
what any library could reach: where the floor alone is above 0.75x cuda.core, the target
cannot be met there, and the report says so.

Run on the GPU machine:  bash .gpu/on-gpu.sh python3 benchmarks/ipc.py [--rounds 41 | --quick]
"""

from __future__ import annotations

import argparse
import importlib
import multiprocessing
import os
import sys
import time
import traceback
from typing import Any, Callable, Iterator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _cuda import bench_floor_module as _bench_floor_module  # noqa: E402
from _cuda import check as _check  # noqa: E402
from _cuda import ctx_sync as _ctx_sync  # noqa: E402
from _cuda import driver as _driver  # noqa: E402
from _cuda import quietly as _quietly  # noqa: E402
from _harness import (Case, Contender, Prepared, Target,  # noqa: E402
                      add_arguments, device_meta, finish, run_cases, run_script)

OURS = "cuda_core"
NVIDIA = "cuda.core"
FLOOR = "C floor"
MODULES = {OURS: "cuda_core", NVIDIA: "cuda.core", FLOOR: "cuda_core"}

RATIO = 0.75          # ours <= 0.75x cuda.core in cases 1 and 2
BATCH = 64            # operations per batch (cases 1 and 2)
SEND_BATCH = 16       # Buffers per batch in case 3
SIZE = 1 << 16        # bytes per buffer
POOL_BYTES = 1 << 28  # each exporting pool's max_size: room for a batch many times over
ANSWER_S = 120.0      # the longest the helper may take to answer
PATTERNS = {OURS: 0x5A, NVIDIA: 0xA5, FLOOR: 0x3C}  # the byte each contender's proofs use


def batches(n: int, size: int) -> Iterator[int]:
    """The batch sizes that make ``n`` operations: ``size`` each, the last one shorter."""
    if n < 0 or size < 1:
        raise ValueError(f"batches({n}, {size}): n must be >= 0 and size >= 1")
    while n > 0:
        k = min(n, size)
        yield k
        n -= k


def _library(name: str):
    return importlib.import_module(MODULES[name])


def _read(ptr: int, nbytes: int) -> bytes:
    """``nbytes`` at device address ``ptr`` (current context), after everything queued."""
    _ctx_sync()
    host = bytearray(nbytes)
    _check(_driver().cuMemcpyDtoH(host, ptr, nbytes), "cuMemcpyDtoH")
    return bytes(host)


def _expect_pattern(what: str, data: bytes, pattern: int) -> None:
    wrong = [i for i, b in enumerate(data) if b != pattern]
    if wrong:
        raise RuntimeError(f"{what}: byte {wrong[0]} is {data[wrong[0]]:#04x}, expected "
                           f"{pattern:#04x} ({len(wrong)} of {len(data)} bytes differ)")


def _not_ready(err) -> bool:
    """True for CUDA_ERROR_NOT_READY, False for CUDA_SUCCESS; raises on anything else."""
    d = _driver()
    if err == d.CUresult.CUDA_SUCCESS:
        return False
    if err == d.CUresult.CUDA_ERROR_NOT_READY:
        return True
    raise RuntimeError(f"query failed: {err!r}")


class _Gate:
    """Holds a stream back until :meth:`open`: the stream waits (cuStreamWaitValue32) on a word
    of mapped host memory that only the host writes."""

    def __init__(self, stream_handle: int):
        import ctypes

        d = _driver()
        self._host = _check(d.cuMemHostAlloc(4, d.CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc")
        self._word = ctypes.c_uint32.from_address(int(self._host))
        self._word.value = 0
        try:
            dptr = _check(d.cuMemHostGetDevicePointer(self._host, 0), "cuMemHostGetDevicePointer")
            _check(d.cuStreamWaitValue32(stream_handle, dptr, 1,
                                         d.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ),
                   "cuStreamWaitValue32")
        except BaseException:
            self._word.value = 1
            d.cuMemFreeHost(self._host)
            raise

    def open(self) -> None:
        self._word.value = 1

    def close(self) -> None:
        self.open()
        _ctx_sync()  # the stream has passed the wait before the word is freed
        _driver().cuMemFreeHost(self._host)


# -- the helper process ----------------------------------------------------------------------

class _Side:
    """One contender's state in the helper: its library's Device(0) made current and a stream
    of its own."""

    def __init__(self, contender: str):
        self.contender = contender
        self.mod = _library(contender)
        self.bf = _bench_floor_module() if contender == FLOOR else None
        self.dev = self.mod.Device(0)
        self.dev.set_current()
        self.s = self.dev.create_stream()

    def close(self) -> None:
        self.s.sync()
        self.s.close()


class _BufferExporter(_Side):
    """Cases 1 and 3, helper side: an IPC-enabled pool; batches of fresh buffers."""

    def __init__(self, contender: str, data_conn: Any):
        super().__init__(contender)
        opts = self.mod.DeviceMemoryResourceOptions(ipc_enabled=True, max_size=POOL_BYTES)
        self.mr = self.mod.DeviceMemoryResource(0, opts)
        self.held: list = []
        self.data_conn = data_conn

    def start(self) -> Any:
        return self.mr.allocation_handle

    def _fresh(self, k: int) -> list:
        self.free()
        bufs = [self.mr.allocate(SIZE, stream=self.s) for _ in range(k)]
        self.s.sync()
        self.held = bufs
        return bufs

    def prove(self) -> Any:
        """One buffer filled with the contender's pattern: its descriptor (floor: its record)."""
        (b,) = self._fresh(1)
        b.fill(PATTERNS[self.contender], stream=self.s)
        self.s.sync()
        if self.bf is not None:
            return self.bf.ipc_export_floor([int(b.handle)], 1)[1]
        return b.ipc_descriptor

    def export(self, k: int) -> tuple[int, Any]:
        bufs = self._fresh(k)
        if self.bf is not None:
            return self.bf.ipc_export_floor([int(b.handle) for b in bufs], k)
        t0 = time.perf_counter_ns()
        descriptors = [b.ipc_descriptor for b in bufs]
        t1 = time.perf_counter_ns()
        return t1 - t0, descriptors

    def send_proof(self) -> None:
        (b,) = self._fresh(1)
        b.fill(PATTERNS[self.contender], stream=self.s)
        self.s.sync()
        self.data_conn.send(b)

    def send(self, k: int) -> int:
        bufs = self._fresh(k)
        send = self.data_conn.send
        t0 = time.perf_counter_ns()
        for b in bufs:
            send(b)
        t1 = time.perf_counter_ns()
        return t1 - t0

    def free(self) -> None:
        """The last batch's buffers; called once the importer has freed its imports."""
        for b in self.held:
            b.close(self.s)
        self.held = []
        self.s.sync()

    def close(self) -> None:
        self.free()
        self.mr.close()
        super().close()


class _EventImporter(_Side):
    """Case 2, helper side: imports events, makes its stream wait on each, closes them."""

    def __init__(self, contender: str, data_conn: Any):
        super().__init__(contender)
        self.proved: Any = None

    def start(self) -> None:
        return None

    def prove(self, descriptor: Any) -> tuple[bool, bool]:
        """Import the gated event and wait on it: (event done?, stream done?), both False."""
        d = _driver()
        if self.bf is not None:
            ev = self.bf.event_open(descriptor)
            self.proved = ev
            done = not _not_ready(d.cuEventQuery(d.CUevent(ev))[0])
            _check(d.cuStreamWaitEvent(d.CUstream(int(self.s.handle)), d.CUevent(ev), 0),
                   "cuStreamWaitEvent")
        else:
            ie = self.proved = self.mod.Event.from_ipc_descriptor(descriptor)
            done = ie.is_done
            self.s.wait(ie)
        held = _not_ready(d.cuStreamQuery(d.CUstream(int(self.s.handle)))[0])
        return done, not held

    def prove_end(self) -> bool:
        """After the gate opened: the stream passes the wait and the event is done."""
        d = _driver()
        self.s.sync()
        if self.bf is not None:
            ev, self.proved = self.proved, None
            try:
                return not _not_ready(d.cuEventQuery(d.CUevent(ev))[0])
            finally:
                _check(d.cuEventDestroy(d.CUevent(ev)), "cuEventDestroy")
        ie, self.proved = self.proved, None
        try:
            return bool(ie.is_done)
        finally:
            ie.close()

    def run(self, descriptors: Any, k: int) -> int:
        if self.bf is not None:
            ns = self.bf.event_import_floor(descriptors, k, int(self.s.handle))
        else:
            from_ipc, wait = self.mod.Event.from_ipc_descriptor, self.s.wait
            t0 = time.perf_counter_ns()
            for d in descriptors:
                ie = from_ipc(d)
                wait(ie)
                ie.close()
            ns = time.perf_counter_ns() - t0
        self.s.sync()
        return ns


_SIDES = {"buffers": _BufferExporter, "events": _EventImporter}


def _helper_main(conn: Any, data_conn: Any) -> None:
    """The helper process: answers ``(command, *args)`` messages with ``("ok", value)`` or
    ``("error", text)`` until ``("quit",)`` or the pipe closes."""
    import faulthandler

    faulthandler.enable()
    sides: dict[int, _Side] = {}
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            break
        command, args = msg[0], msg[1:]
        if command == "quit":
            break
        try:
            if command == "open":
                kind, contender = args
                side = _SIDES[kind](contender, data_conn)
                sides[id(side)] = side
                value: Any = (id(side), side.start())
            elif command == "close":
                sides.pop(args[0]).close()
                value = None
            else:
                value = getattr(sides[args[0]], command)(*args[1:])
            conn.send(("ok", value))
        except Exception as exc:
            traceback.print_exc()
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
    for side in sides.values():
        _quietly(side.close)


class _SideTimes:
    """Each side's share of the timed samples: nanoseconds and operations per contender, case
    and side, summed over every timed batch (warm-ups included), for the report's breakdown of
    where each case's time goes."""

    def __init__(self) -> None:
        self.ns: dict[tuple[str, str, str], int] = {}
        self.ops: dict[tuple[str, str], int] = {}

    def add(self, contender: str, case: str, k: int, **sides: int) -> None:
        for side, ns in sides.items():
            key = (contender, case, side)
            self.ns[key] = self.ns.get(key, 0) + ns
        self.ops[contender, case] = self.ops.get((contender, case), 0) + k

    def lines(self) -> list[str]:
        out = []
        for (contender, case), ops in self.ops.items():
            parts = [f"{side} {self.ns[c, k, side] / ops / 1000:.3f} µs"
                     for (c, k, side) in self.ns if (c, k) == (contender, case)]
            out.append(f"  {case}, {contender}: " + ", ".join(parts))
        return out


class _Helper:
    """This process's end of the helper: started once, shared by every contender."""

    def __init__(self) -> None:
        self.times = _SideTimes()
        ctx = multiprocessing.get_context("spawn")  # a forked child could not use CUDA
        self.conn, child_conn = ctx.Pipe()
        # One way, helper to here: case 3's Buffers, received (and timed) after the helper
        # says it has sent them all.
        self.data, child_data = ctx.Pipe(duplex=False)
        self.proc = ctx.Process(target=_helper_main, args=(child_conn, child_data),
                                name="ipc.py helper", daemon=True)
        self.proc.start()
        child_conn.close()
        child_data.close()

    def call(self, *msg: Any) -> Any:
        try:
            self.conn.send(msg)
            if not self.conn.poll(ANSWER_S):
                raise RuntimeError(f"the helper process did not answer {msg[0]!r} within "
                                   f"{ANSWER_S:g} s")
            status, value = self.conn.recv()
        except (EOFError, OSError):
            self.proc.join(5)
            raise RuntimeError(f"the helper process has ended (exit code {self.proc.exitcode}; "
                               f"its traceback, if any, is on stderr)") from None
        if status != "ok":
            raise RuntimeError(f"in the helper process: {value}")
        return value

    def close(self) -> None:
        try:
            self.conn.send(("quit",))
        except OSError:
            pass
        self.proc.join(30)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()


# -- this process's sides --------------------------------------------------------------------

class _Local:
    """One contender's state here: its library's Device(0) made current, a stream, and its
    side in the helper (``kind``), closed with it."""

    def __init__(self, helper: _Helper, contender: str, kind: str):
        self.helper = helper
        self.contender = contender
        self.mod = _library(contender)
        self.bf = _bench_floor_module() if contender == FLOOR else None
        self.dev = self.mod.Device(0)
        self.dev.set_current()
        self.s = self.dev.create_stream()
        self.st = int(self.s.handle)
        self.remote: int | None = None
        try:
            self.remote, self.started = helper.call("open", kind, contender)
        except BaseException:
            self.s.close()
            raise

    def call(self, command: str, *args: Any) -> Any:
        return self.helper.call(command, self.remote, *args)

    def close(self) -> None:
        try:
            self.s.sync()
            if self.remote is not None:
                self.helper.call("close", self.remote)
        finally:
            self.s.close()


def _buffer_import_setup(helper: _Helper, contender: str) -> Callable[[], Prepared]:
    def setup() -> Prepared:
        loc = _Local(helper, contender, "buffers")
        try:
            handle = loc.started  # kept: cuda.core's mapped resource uses the handle it got
            ours = _library(OURS)
            mmr = (ours if loc.bf is not None else loc.mod).DeviceMemoryResource \
                .from_allocation_handle(0, handle)
            pattern = PATTERNS[contender]
            if loc.bf is not None:
                pool = int(mmr.handle)
                data = loc.bf.ipc_import_read(pool, loc.call("prove"), SIZE, loc.st)
                _expect_pattern("C floor: a buffer imported by ipc_import_read", data, pattern)
            else:
                x = loc.mod.Buffer.from_ipc_descriptor(mmr, loc.call("prove"), stream=loc.s)
                if x.size != SIZE:
                    raise RuntimeError(f"{contender}: the imported buffer has {x.size} bytes, "
                                       f"not {SIZE}")
                _expect_pattern(f"{contender}: Buffer.from_ipc_descriptor", _read(int(x.handle),
                                SIZE), pattern)
                x.close()
            loc.s.sync()
            loc.call("free")
            run = _buffer_import_run(loc, mmr)

            def cleanup() -> None:
                try:
                    loc.close()
                finally:
                    mmr.close()
                    handle.close()
            return Prepared(run, cleanup=cleanup)
        except BaseException:
            _quietly(loc.close)
            raise
    return setup


def _buffer_import_run(loc: _Local, mmr: Any) -> Callable[[int], int]:
    s, call, times = loc.s, loc.call, loc.helper.times
    if loc.bf is not None:
        bf, pool, st = loc.bf, int(mmr.handle), loc.st

        def run_floor(n: int) -> int:
            total = 0
            for k in batches(n, BATCH):
                exported_ns, payload = call("export", k)
                imported_ns = bf.ipc_import_floor(pool, payload, k, st)
                times.add(FLOOR, C_BUFFER, k, export=exported_ns, import_close=imported_ns)
                total += exported_ns + imported_ns
                s.sync()
                call("free")
            return total
        return run_floor

    from_ipc = loc.mod.Buffer.from_ipc_descriptor

    def run(n: int) -> int:
        total = 0
        for k in batches(n, BATCH):
            exported_ns, descriptors = call("export", k)
            t0 = time.perf_counter_ns()
            for d in descriptors:
                x = from_ipc(mmr, d, stream=s)
                x.close()
            t1 = time.perf_counter_ns()
            times.add(loc.contender, C_BUFFER, k, export=exported_ns, import_close=t1 - t0)
            total += exported_ns + (t1 - t0)
            s.sync()  # the imports are freed before the exporter frees (the driver's rule)
            call("free")
        return total
    return run


def _event_export_setup(helper: _Helper, contender: str) -> Callable[[], Prepared]:
    def setup() -> Prepared:
        loc = _Local(helper, contender, "events")
        try:
            gate = _Gate(loc.st)
            try:
                if loc.bf is not None:
                    _, descriptor, events = loc.bf.event_export_floor(loc.st, 1)
                else:
                    e = loc.s.record(options=loc.mod.EventOptions(ipc_enabled=True))
                    descriptor = e.ipc_descriptor
                done, passed = loc.call("prove", descriptor)
                if done or passed:
                    raise RuntimeError(f"{contender}: an imported event recorded behind a "
                                       f"closed gate reads {'done' if done else 'not done'}, "
                                       f"and a stream waiting on it "
                                       f"{'is not held' if passed else 'is held'}")
                gate.open()
                if not loc.call("prove_end"):
                    raise RuntimeError(f"{contender}: the imported event is not done after "
                                       f"the exporter's stream passed it")
                if loc.bf is not None:
                    loc.bf.event_destroy_floor(events)
                else:
                    e.close()
            finally:
                gate.close()
            return Prepared(_event_export_run(loc), cleanup=loc.close)
        except BaseException:
            _quietly(loc.close)
            raise
    return setup


def _event_export_run(loc: _Local) -> Callable[[int], int]:
    call, times = loc.call, loc.helper.times
    if loc.bf is not None:
        bf, st = loc.bf, loc.st

        def run_floor(n: int) -> int:
            total = 0
            for k in batches(n, BATCH):
                exported_ns, payload, events = bf.event_export_floor(st, k)
                imported_ns = call("run", payload, k)
                exported_ns += bf.event_destroy_floor(events)
                times.add(FLOOR, C_EVENT, k, exporter=exported_ns, importer=imported_ns)
                total += exported_ns + imported_ns
            return total
        return run_floor

    record, opts = loc.s.record, loc.mod.EventOptions(ipc_enabled=True)

    def run(n: int) -> int:
        total = 0
        for k in batches(n, BATCH):
            events = [None] * k
            descriptors = [None] * k
            t0 = time.perf_counter_ns()
            for i in range(k):
                e = events[i] = record(options=opts)
                descriptors[i] = e.ipc_descriptor
            t1 = time.perf_counter_ns()
            imported_ns = call("run", descriptors, k)
            t2 = time.perf_counter_ns()
            for e in events:
                e.close()
            t3 = time.perf_counter_ns()
            times.add(loc.contender, C_EVENT, k, exporter=(t1 - t0) + (t3 - t2),
                      importer=imported_ns)
            total += (t1 - t0) + imported_ns + (t3 - t2)
        return total
    return run


def _buffer_receive_setup(helper: _Helper, contender: str) -> Callable[[], Prepared]:
    def setup() -> Prepared:
        loc = _Local(helper, contender, "buffers")
        try:
            loc.call("send_proof")
            b = helper.data.recv()
            _expect_pattern(f"{contender}: a Buffer received whole", _read(int(b.handle), SIZE),
                            PATTERNS[contender])
            # The mapped resource stays alive while buffers of it arrive (as a receiver keeps
            # it), so each message finds it rather than mapping the pool again.
            mapped = b.memory_resource
            b.close()
            _ctx_sync()
            loc.call("free")
            recv = helper.data.recv

            def run(n: int) -> int:
                total = 0
                for k in batches(n, SEND_BATCH):
                    sent_ns = loc.call("send", k)  # all k are in the pipe when it answers
                    t0 = time.perf_counter_ns()
                    for _ in range(k):
                        x = recv()
                        x.close()
                    t1 = time.perf_counter_ns()
                    total += sent_ns + (t1 - t0)
                    _ctx_sync()
                    loc.call("free")
                return total

            def cleanup() -> None:
                loc.close()
                mapped.close()
            return Prepared(run, cleanup=cleanup)
        except BaseException:
            _quietly(loc.close)
            raise
    return setup


# -- cases -----------------------------------------------------------------------------------

C_BUFFER = "#1 buffer descriptor export + import"
C_EVENT = "#2 IPC event round trip"
C_SEND = "#3 Buffer sent whole (informational)"
TARGET_CASES = (C_BUFFER, C_EVENT)


def make_cases(helper: _Helper) -> list[Case]:
    def contenders(setup: Callable[[_Helper, str], Callable[[], Prepared]],
                   with_floor: bool = True) -> list[Contender]:
        out = [Contender(OURS, setup=setup(helper, OURS), self_timed=True),
               Contender(NVIDIA, setup=setup(helper, NVIDIA), self_timed=True,
                         requires=("cuda.core",))]
        if with_floor:
            out.append(Contender(FLOOR, setup=setup(helper, FLOOR), self_timed=True))
        return out

    return [
        Case(C_BUFFER, contenders(_buffer_import_setup),
             note=f"helper: b.ipc_descriptor of fresh {SIZE >> 10} KiB pool buffers; here: "
                  f"Buffer.from_ipc_descriptor(mmr, d, stream=s) + close(); both sides timed, "
                  f"batches of {BATCH}; floor: cuMemPoolExportPointer / cuMemPoolImportPointer "
                  f"+ cuPointerGetAttributes + cuMemFreeAsync"),
        Case(C_EVENT, contenders(_event_export_setup),
             note=f"here: s.record(options=EventOptions(ipc_enabled=True)) + e.ipc_descriptor, "
                  f"e.close() after the helper's batch; helper: Event.from_ipc_descriptor(d) + "
                  f"s2.wait(ie) + ie.close(); batches of {BATCH}; floor: cuEventCreate + "
                  f"cuEventRecord + cuIpcGetEventHandle + cuEventDestroy / cuIpcOpenEventHandle "
                  f"+ cuStreamWaitEvent + cuEventDestroy"),
        Case(C_SEND, contenders(_buffer_receive_setup, with_floor=False),
             note=f"helper: conn.send(b) (the pool's file descriptor and the descriptor); here: "
                  f"conn.recv() + close(), the mapped pool kept alive; batches of {SEND_BATCH}; "
                  f"no target: the pipe and the descriptor's transfer dominate"),
    ]


def add_floor_notes(report: Any) -> None:
    """Adds to the note of each target case where both were measured the floor's ratio to
    cuda.core, and whether the target is within the floor's reach."""
    for case in report.cases:
        if case.name not in TARGET_CASES:
            continue
        floor, nvidia = case.get(FLOOR), case.get(NVIDIA)
        if floor is None or nvidia is None or not floor.ok or not nvidia.ok:
            continue
        ratio = floor.median_ns / nvidia.median_ns
        reach = ("within reach" if ratio <= RATIO else
                 f"out of reach here: the driver calls alone take more than {RATIO:g}x "
                 f"cuda.core's time")
        case.note += (f". C floor / cuda.core = {ratio:.2f}x: the {RATIO:g}x target is "
                      f"{reach}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="ipc.py",
        description=f"Host cost of IPC between two processes, both sides timed: a buffer "
                    f"descriptor exported and imported, an IPC event exported, imported and "
                    f"waited on, and (informational) a Buffer sent whole; cuda_core (ours) "
                    f"against NVIDIA's cuda.core and C loops of the same driver calls. Target: "
                    f"ours <= {RATIO:g}x cuda.core in the first two. Needs a GPU; exits 0 once "
                    f"the report is printed.")
    add_arguments(parser)
    parser.add_argument("--quick", action="store_true",
                        help=f"a smoke run: 3 rounds, 1 warm-up, {BATCH} operations per sample "
                             f"(--rounds, --warmup and --inner still override)")
    argv = sys.argv[1:] if argv is None else argv
    if "--quick" in argv:
        parser.set_defaults(rounds=3, warmup=1, inner=BATCH)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    # Fails here, with the driver's reason, where there is no GPU or no driver.
    meta = device_meta("ipc.py", ("cuda-core-cy", "cuda-core", "cuda-bindings"))
    if meta is None:
        return 1
    missing = ipc_missing(meta_device())
    if missing:
        print(f"ipc.py: cannot run: device 0 lacks {missing}", file=sys.stderr)
        return 1
    meta["buffers"] = f"{SIZE} bytes, from an IPC-enabled pool of max_size {POOL_BYTES}"
    meta["helper"] = "one spawned process, the other side of every exchange"

    helper = _Helper()
    try:
        report = run_cases(make_cases(helper), args, title="cuda_core IPC (time per operation, "
                           "both processes)", subject=OURS, baseline=NVIDIA, floor=FLOOR,
                           target=f"IPC at {RATIO:g}x cuda.core's host time", meta=meta,
                           targets=[Target(OURS, NVIDIA, RATIO, cases=TARGET_CASES)],
                           floor_ratio=True)
    finally:
        helper.close()
    add_floor_notes(report)
    status = finish(report, args)
    print("\nWhere the time goes (each side's mean per operation, all timed batches):")
    print("\n".join(helper.times.lines()))
    return status


def meta_device():
    import cuda_core

    return cuda_core.Device(0)


def ipc_missing(dev: Any) -> str:
    """What ``dev`` lacks for these cases, as its ``properties`` name it ("" when nothing)."""
    props = dev.properties
    missing = []
    if not props.mempool_supported_handle_types & 1:
        missing.append("memory pools shared through POSIX file descriptors "
                       "(properties.mempool_supported_handle_types)")
    if not props.ipc_event_supported:
        missing.append("IPC events (properties.ipc_event_supported)")
    return " and ".join(missing)


if __name__ == "__main__":
    run_script(main, "ipc.py")
