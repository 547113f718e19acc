"""The harness of the tests that start processes (IPC, multiprocessing, faults).

Every child is started from the ``spawn`` context (never the global start method, never fork),
nothing a test starts outlives it, and every wait has a timeout: a hung or crashed child fails
the test with its exit code, never hangs the suite. Child entry points must be importable
functions (spawn pickles them by name); wrap them with :meth:`Children.run` to have them report
through a Queue.
"""

import faulthandler
import multiprocessing
import os
import queue as queue_module
import signal
import threading
import time
import traceback

import pytest

from helpers import SLOWDOWN

SPAWN = multiprocessing.get_context("spawn")
CHILD_TIMEOUT = float(os.environ.get("CUDA_CORE_TEST_CHILD_TIMEOUT", "120")) * SLOWDOWN
_GRACE = 5.0  # seconds a child gets to finish once the test body has failed


def exit_text(code):
    """An exit code as a message: a negative code is the signal that ended the process."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name} (exit code {code})"
        except ValueError:
            return f"killed by signal {-code} (exit code {code})"
    return f"exit code {code}"


def child_setup(timeout=None):
    """The first call of every child entry point: a fatal signal prints the child's stack, and a
    child still running ``timeout - 10`` s after it started (``CHILD_TIMEOUT`` by default) prints
    every thread's stack and exits, before the parent gives up on it."""
    budget = CHILD_TIMEOUT if timeout is None else timeout
    faulthandler.enable()
    faulthandler.dump_traceback_later(max(budget - 10.0, 1.0), exit=True)


def run_child(report, func, *args):
    """Child side of :meth:`Children.run`: ``func(*args)`` and its outcome put on ``report``:
    ``("ok", value)`` or ``("error", type name, message, the exception's .name or None)``. An
    exception is reported, and the child still exits 0: the parent decides whether it was
    expected."""
    child_setup()
    try:
        outcome = ("ok", func(*args))
    except Exception as exc:  # reported (the parent asserts on it) and printed, not swallowed
        traceback.print_exc()
        outcome = ("error", type(exc).__name__, str(exc), getattr(exc, "name", None))
    report.put(outcome)
    report.close()
    report.join_thread()


def queue_get(q, proc=None, timeout=None):
    """``q.get()`` that fails the test instead of waiting on a child that cannot answer:
    polled in 1 s slices, it fails as soon as ``proc`` (a Process, or a list of them) has
    exited with nothing left to read, and after ``timeout`` (``CHILD_TIMEOUT``) seconds."""
    procs = [] if proc is None else list(proc) if isinstance(proc, (list, tuple)) else [proc]
    deadline = time.monotonic() + (CHILD_TIMEOUT if timeout is None else timeout)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            pytest.fail(f"no message from the child within {timeout or CHILD_TIMEOUT:g} s")
        try:
            return q.get(timeout=min(1.0, left))
        except queue_module.Empty:
            pass
        dead = [p for p in procs if p.exitcode is not None]
        if dead:
            try:  # what it put just before exiting is already in the pipe
                return q.get(timeout=1.0)
            except queue_module.Empty:
                p = dead[0]
                pytest.fail(f"child {p.name} ended without a message: {exit_text(p.exitcode)}")


def conn_recv(conn, proc=None, timeout=None):
    """``conn.recv()`` on a Pipe end, with the timeout and early failure of :func:`queue_get`."""
    procs = [] if proc is None else list(proc) if isinstance(proc, (list, tuple)) else [proc]
    deadline = time.monotonic() + (CHILD_TIMEOUT if timeout is None else timeout)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            pytest.fail(f"no message from the child within {timeout or CHILD_TIMEOUT:g} s")
        if conn.poll(min(1.0, left)):
            return conn.recv()
        dead = [p for p in procs if p.exitcode is not None]
        if dead and not conn.poll(1.0):
            p = dead[0]
            pytest.fail(f"child {p.name} ended without a message: {exit_text(p.exitcode)}")


class Child:
    """A child started by :meth:`Children.run`: its process and the Queue it reports on."""

    def __init__(self, proc, report):
        self.proc = proc
        self.queue = report

    def report(self, timeout=None):
        """The child's report tuple (see :func:`run_child`)."""
        return queue_get(self.queue, self.proc, timeout)

    def value(self, timeout=None):
        """The value the child's function returned; fails the test if it raised."""
        got = self.report(timeout)
        if got[0] != "ok":
            pytest.fail(f"child {self.proc.name} raised {got[1]}: {got[2]}")
        return got[1]


class Children:
    """Starts spawned children and guarantees none outlives the ``with`` block.

    On exit each child is joined within what is left of one shared budget (``timeout``,
    ``CHILD_TIMEOUT`` by default, counted from entering the block); survivors are killed and
    joined. The test fails if a child had to be killed or ended with an exit code other than the
    one it was started with (``exitcode=0`` by default; ``-signal.SIGKILL`` for a child the test
    kills). When the block itself raised, children get a few seconds and are then killed, and
    the block's exception is the one reported.
    """

    def __init__(self, timeout=None):
        self.timeout = CHILD_TIMEOUT if timeout is None else timeout
        self._procs = []  # (process, expected exit code)

    def __enter__(self):
        self._deadline = time.monotonic() + self.timeout
        return self

    def start(self, target, *args, exitcode=0):
        """Start ``target(*args)`` in a spawned, non-daemon child; returns the Process."""
        proc = SPAWN.Process(target=target, args=args, daemon=False)
        proc.start()
        self._procs.append((proc, exitcode))
        return proc

    def run(self, func, *args, exitcode=0):
        """Start ``func(*args)`` under :func:`run_child`; returns a :class:`Child` whose
        ``report()``/``value()`` give the outcome."""
        report = SPAWN.Queue()
        return Child(self.start(run_child, report, func, *args, exitcode=exitcode), report)

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self._deadline = min(self._deadline, time.monotonic() + _GRACE)
        problems = []
        for proc, expected in self._procs:
            proc.join(max(self._deadline - time.monotonic(), 0.0))
            if proc.exitcode is None:
                proc.kill()
                proc.join(10)
                problems.append(f"{proc.name} did not finish in time and was killed")
            elif proc.exitcode != expected:
                problems.append(f"{proc.name} ended with {exit_text(proc.exitcode)}, "
                                f"expected {exit_text(expected)}")
        for proc, _ in self._procs:
            if proc.exitcode is not None:
                proc.close()
        self._procs.clear()
        if problems and exc_type is None:
            pytest.fail("; ".join(problems))
        return False


def open_fds():
    """This process's open file descriptors: ``{fd: what it points at}``. The descriptor that
    reads the listing is closed by the time its target is read, so it is never included."""
    fds = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            fds[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            pass
    return fds


def assert_fds_back(before, after, slack=4):
    """Fail, listing them, when ``after`` has more than ``slack`` descriptors that ``before``
    does not (new numbers, or numbers now pointing elsewhere). The slack absorbs what a library
    opens once (a device node); a leak of one per round over hundreds of rounds exceeds it."""
    new = {fd: target for fd, target in after.items() if before.get(fd) != target}
    if len(new) > slack:
        shown = ", ".join(f"{fd} -> {target}" for fd, target in sorted(new.items()))
        pytest.fail(f"{len(new)} file descriptors more than before (slack {slack}): {shown}")


def _take_fd(token):
    from cuda_core import _mp

    return _mp.detach_fd(token)


class PassFd:
    """An open descriptor sent through multiprocessing (a Queue, a Pipe, ``Process`` arguments)
    with ``cuda_core._mp``'s hand-off: it unpickles as an ``int`` descriptor the receiver owns."""

    def __init__(self, fd):
        self.fd = fd

    def __reduce__(self):
        from cuda_core import _mp

        return _take_fd, (_mp.dup_fd(self.fd),)


def _close_received_fd(q):
    os.close(queue_get(q, timeout=CHILD_TIMEOUT))


_primed = False
_prime_lock = threading.Lock()


def prime():
    """Create what multiprocessing opens lazily and keeps (the resource tracker's pipe, the
    resource sharer's listening socket, the forkserver if any) with one spawn round trip that
    carries a descriptor through a Queue, so that an fd baseline taken afterwards is stable.
    Once per process."""
    global _primed
    with _prime_lock:
        if _primed:
            return
        q = SPAWN.Queue()
        with Children() as children:
            child = children.run(_close_received_fd, q)
            fd = os.open(os.devnull, os.O_RDONLY)
            try:
                q.put(PassFd(fd))
                assert child.report() == ("ok", None)
            finally:
                os.close(fd)
                q.close()
                q.join_thread()
                child.queue.close()
                child.queue.join_thread()
        _primed = True


def die_now():
    """End this process at once with SIGKILL (no cleanup, no atexit)."""
    os.kill(os.getpid(), signal.SIGKILL)


class DieOnUnpickle:
    """Kills the process that unpickles it, at that point of the message: in
    ``(buf, DieOnUnpickle(), more)`` the receiver dies after rebuilding ``buf`` and before
    ``more``."""

    def __reduce__(self):
        return die_now, ()


# Capability skips for the GPU tests: read through cuda_core's device properties before any
# child starts, each naming the property that is missing.

def require_pool_ipc(device):
    """Skip unless ``device``'s memory pools can be shared through POSIX file descriptors."""
    if not device.properties.memory_pools_supported:
        pytest.skip(f"device {device.device_id}: properties.memory_pools_supported is False")
    if device.properties.mempool_supported_handle_types & 1 == 0:  # POSIX_FILE_DESCRIPTOR
        pytest.skip(f"device {device.device_id}: properties.mempool_supported_handle_types has no "
                    "POSIX file descriptor bit")


def require_ipc_events(device):
    """Skip unless ``device`` supports interprocess events."""
    if not device.properties.ipc_event_supported:
        pytest.skip(f"device {device.device_id}: properties.ipc_event_supported is False")


def require_posix_fd_vmm(device):
    """Skip unless ``device``'s virtual memory allocations export POSIX file descriptors."""
    if not device.properties.handle_type_posix_file_descriptor_supported:
        pytest.skip(f"device {device.device_id}: "
                    "properties.handle_type_posix_file_descriptor_supported is False")
