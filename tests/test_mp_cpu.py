"""cuda_core._mp (lazy multiprocessing reducers, the fork warning, the descriptor hand-off), the
process harness of tests/helpers/ipc.py and the environment every test child inherits (CPU)."""

import gc
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
import warnings
from multiprocessing import context as mp_context
from multiprocessing.reduction import ForkingPickler

import pytest

from helpers import run_python
from helpers.ipc import (SPAWN, Children, DieOnUnpickle, PassFd, assert_fds_back, conn_recv,
                         open_fds, prime, queue_get)

import cuda_core
from cuda_core import _mp

# --- import cost -----------------------------------------------------------------------------


def test_import_loads_no_multiprocessing_socket_or_uuid():
    code = (
        "import sys\n"
        "import cuda_core, cuda_core.system, cuda_core.typing, cuda_core.utils, cuda_core.graph\n"
        "import cuda_core._mp\n"
        "print(sorted(m for m in ('multiprocessing', 'socket', 'uuid') if m in sys.modules))\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# --- reducers --------------------------------------------------------------------------------

_REDUCERS_ON_DEMAND = """
import pickle, sys
import cuda_core, cuda_core._mp as mp

class A:
    pass

reduced = []

def reduce_a(obj):
    reduced.append(obj)
    return A, ()

mp.add_reducer(A, reduce_a)
mp.add_reducer(A, reduce_a)  # the same pair again: nothing changes
try:
    mp.add_reducer(A, lambda obj: (A, ()))
except ValueError as exc:
    print("second reducer:", exc)
print("loaded before:", "multiprocessing" in sys.modules)
pickle.loads(pickle.dumps(A()))  # a plain pickle never uses the reducer
print("plain pickle reduced:", len(reduced))

mp.ensure_reducers()
print("loaded after:", "multiprocessing.reduction" in sys.modules)
from multiprocessing.reduction import ForkingPickler
calls = []
register = ForkingPickler.register.__func__
ForkingPickler.register = classmethod(lambda cls, t, r: (calls.append(t), register(cls, t, r)))
a = A()
assert type(pickle.loads(ForkingPickler.dumps(a))) is A
print("forking pickle reduced:", reduced == [a])
for _ in range(3):
    mp.ensure_reducers()
print("registrations after install:", len(calls))

class B:
    pass

mp.add_reducer(B, lambda obj: (B, ()))  # declared after the install: registered at once
print("late declaration:", calls == [B] and B in ForkingPickler._extra_reducers)
"""


def test_reducers_are_registered_on_demand_and_once():
    result = run_python(_REDUCERS_ON_DEMAND)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("second reducer: cls ") and "already has" in lines[0]
    assert lines[1:] == ["loaded before: False", "plain pickle reduced: 0", "loaded after: True",
                         "forking pickle reduced: True", "registrations after install: 0",
                         "late declaration: True"]


_REDUCERS_RACE = """
import threading
from multiprocessing.reduction import ForkingPickler
import cuda_core._mp as mp

classes = [type(f"C{i}", (), {}) for i in range(4)]
for cls in classes:
    mp.add_reducer(cls, lambda obj, cls=cls: (cls, ()))
calls = []
register = ForkingPickler.register.__func__

def slow_register(cls, t, r):
    calls.append(t)
    threading.Event().wait(0.01)  # widen the window a racing thread would need
    register(cls, t, r)

ForkingPickler.register = classmethod(slow_register)
barrier = threading.Barrier(8)

def install():
    barrier.wait()
    mp.ensure_reducers()

threads = [threading.Thread(target=install) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
# cuda_core's own IPC types are declared too (by the import above): each once, like ours.
print([c for c in calls if c in classes] == classes and len(calls) == len(set(calls)))
"""


def test_concurrent_first_calls_register_each_reducer_once():
    result = run_python(_REDUCERS_RACE)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


def test_add_reducer_checks_its_arguments():
    with pytest.raises(TypeError, match="cls must be a class"):
        _mp.add_reducer("A", lambda obj: ())
    with pytest.raises(TypeError, match="reducer must be callable"):
        _mp.add_reducer(type("A", (), {}), None)


# --- the fork warning ------------------------------------------------------------------------


@pytest.fixture
def fresh_warning():
    _mp._reset_fork_warning()
    yield
    _mp._reset_fork_warning()


@pytest.fixture
def start_method(monkeypatch):
    """Patches multiprocessing.get_start_method to report a chosen method; records the
    allow_none of every call (the real function fixes the method when allow_none is False)."""
    state = {"method": None, "allow_none": []}

    def fake(allow_none=False):
        state["allow_none"].append(allow_none)
        return state["method"]

    monkeypatch.setattr(multiprocessing, "get_start_method", fake)
    return state


def _fork_warnings(record):
    return [w for w in record if "'fork'" in str(w.message)]


def test_fork_warning_once_under_fork(fresh_warning, start_method):
    start_method["method"] = "fork"
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _mp.warn_if_fork()
        _mp.warn_if_fork()
    got = _fork_warnings(record)
    assert len(got) == 1
    assert got[0].category is UserWarning
    assert not issubclass(got[0].category, cuda_core.CUDAWarning)
    assert "get_context('spawn')" in str(got[0].message)
    assert start_method["allow_none"] and all(start_method["allow_none"])


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_no_fork_warning_under_other_methods(fresh_warning, start_method, method):
    start_method["method"] = method
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _mp.warn_if_fork()
    assert not _fork_warnings(record)
    # The check did not use up the one warning: a later pickle for a forked process warns.
    start_method["method"] = "fork"
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _mp.warn_if_fork()
    assert len(_fork_warnings(record)) == 1


def test_reset_fork_warning(fresh_warning, start_method):
    start_method["method"] = "fork"
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _mp.warn_if_fork()
        _mp._reset_fork_warning()
        start_method["method"] = "spawn"
        _mp.warn_if_fork()
        start_method["method"] = "fork"
        _mp.warn_if_fork()
        _mp.warn_if_fork()
    assert len(_fork_warnings(record)) == 2


class _FakePopen:
    def __init__(self, method):
        self.method = method


@pytest.mark.parametrize("popen_method, global_method, warned", [
    ("spawn", "fork", False), ("forkserver", "fork", False), ("fork", "spawn", True)])
def test_the_starting_process_method_wins(fresh_warning, start_method, popen_method,
                                          global_method, warned):
    # While Process.start() pickles its arguments, multiprocessing sets the spawning Popen.
    start_method["method"] = global_method
    mp_context.set_spawning_popen(_FakePopen(popen_method))
    try:
        assert _mp._start_method() == popen_method
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            _mp.warn_if_fork()
    finally:
        mp_context.set_spawning_popen(None)
    assert len(_fork_warnings(record)) == warned


class _WarnOnPickle:
    """Gives the fork check while it is pickled, as an IPC object's reducer does."""

    def __reduce__(self):
        _mp.warn_if_fork()
        return _WarnOnPickle, ()


def test_spawn_context_process_is_not_warned_about(fresh_warning, start_method):
    start_method["method"] = "fork"  # the global method, which get_context('spawn') overrides
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with Children() as children:
            children.start(_exit_quietly, _WarnOnPickle())
    assert not _fork_warnings(record)


class _Probe:
    pass


def _reduce_probe(obj):
    return _Probe, ()


def test_fork_warning_points_at_the_callers_line(fresh_warning, start_method):
    _mp.add_reducer(_Probe, _reduce_probe)
    _mp.ensure_reducers()
    start_method["method"] = "fork"
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        data = ForkingPickler.dumps(_Probe())
    got = _fork_warnings(record)
    assert len(got) == 1
    assert (got[0].filename, got[0].lineno) == (__file__, line)
    assert type(pickle.loads(data)) is _Probe


_NO_SIDE_EFFECT = """
import warnings, multiprocessing
import cuda_core._mp as mp
with warnings.catch_warnings(record=True) as record:
    warnings.simplefilter("always")
    mp.warn_if_fork()
print(multiprocessing.get_start_method(allow_none=True))
print(mp._start_method(), len([w for w in record if "'fork'" in str(w.message)]))
print(multiprocessing.get_start_method())
"""


def test_the_check_never_chooses_the_start_method():
    result = run_python(_NO_SIDE_EFFECT)
    assert result.returncode == 0, result.stderr
    unset, checked, chosen = result.stdout.splitlines()
    assert unset == "None"
    method, count = checked.split()
    # The platform default it reported is the one multiprocessing then picks; and it warned
    # exactly when that default is fork (Linux before Python 3.14).
    assert method == chosen
    assert int(count) == (chosen == "fork")


# --- the descriptor hand-off -----------------------------------------------------------------


def test_dup_fd_checks_its_argument():
    for bad in ("3", 3.0, True, None):
        with pytest.raises(TypeError, match="fd must be an int"):
            _mp.dup_fd(bad)
    with pytest.raises(ValueError, match="fd must be a file descriptor"):
        _mp.dup_fd(-1)
    fd = os.open(os.devnull, os.O_RDONLY)
    os.close(fd)
    with pytest.raises(ValueError, match=f"fd {fd} is not an open file descriptor"):
        _mp.dup_fd(fd)
    with pytest.raises(TypeError, match="token must come from dup_fd"):
        _mp.detach_fd(object())


class _Pipe:
    def __init__(self):
        self.r, self.w = os.pipe()
        self.open = [self.r, self.w]

    def close(self, fd):
        # Closed once only: a later test-side open may reuse the number.
        self.open.remove(fd)
        os.close(fd)


@pytest.fixture
def pipe():
    p = _Pipe()
    yield p
    for fd in list(p.open):
        p.close(fd)


def test_round_trip_in_one_process(pipe):
    r, w = pipe.r, pipe.w
    got = pickle.loads(ForkingPickler.dumps(PassFd(w)))
    try:
        assert type(got) is int and got not in (r, w)
        os.write(got, b"same pipe")
        assert os.read(r, 64) == b"same pipe"
    finally:
        os.close(got)
    os.fstat(w)  # the sender's descriptor is still its own


def _write_fd(fd, data):
    os.write(fd, data)
    os.close(fd)
    return fd


def _write_fd_from_queue(q, data):
    return _write_fd(queue_get(q), data)


def _exit_quietly(*args):
    pass


def test_round_trip_as_a_spawn_argument(pipe):
    r, w = pipe.r, pipe.w
    with Children() as children:
        child = children.run(_write_fd, PassFd(w), b"as an argument")
        pipe.close(w)  # start() has returned: the child holds its own copy
        # The child inherits the descriptor under the same number (pass_fds): no dup, no socket.
        assert child.value() == w
    assert os.read(r, 64) == b"as an argument"
    assert os.read(r, 64) == b""  # every write end is closed


def test_round_trip_through_a_queue(pipe):
    r, w = pipe.r, pipe.w
    q = SPAWN.Queue()
    with Children() as children:
        child = children.run(_write_fd_from_queue, q, b"through a queue")
        q.put(PassFd(w))
        child.value()
    q.close()
    q.join_thread()
    pipe.close(w)
    assert os.read(r, 64) == b"through a queue"
    assert os.read(r, 64) == b""


def _pickle_an_fd():
    fd = os.open(os.devnull, os.O_RDONLY)
    return bytes(ForkingPickler.dumps(PassFd(fd)))


def test_detach_after_the_sender_exited():
    with Children() as children:
        data = children.run(_pickle_an_fd).value()
    with pytest.raises(RuntimeError, match="could not receive a file descriptor"):
        pickle.loads(data)


def test_no_descriptor_leaks_in_one_process(pipe):
    r, w = pipe.r, pipe.w
    prime()
    for _ in range(5):
        os.close(pickle.loads(ForkingPickler.dumps(PassFd(w))))
    gc.collect()
    before = open_fds()
    for _ in range(200):
        os.close(pickle.loads(ForkingPickler.dumps(PassFd(w))))
    gc.collect()
    assert_fds_back(before, open_fds())


def _fd_echo(conn, warmup, rounds):
    def one_round():
        fd = conn.recv()
        os.write(fd, b"x")
        os.close(fd)
        conn.send("ack")

    for _ in range(warmup):
        one_round()
    gc.collect()
    before = open_fds()
    for _ in range(rounds):
        one_round()
    gc.collect()
    after = open_fds()
    return {fd: target for fd, target in after.items() if before.get(fd) != target}


def test_no_descriptor_leaks_across_processes(pipe):
    r, w = pipe.r, pipe.w
    prime()
    parent, child_end = SPAWN.Pipe()
    warmup, rounds = 5, 200

    def one_round():
        parent.send(PassFd(w))
        assert conn_recv(parent, child.proc) == "ack"
        assert os.read(r, 1) == b"x"

    with Children() as children:
        child = children.run(_fd_echo, child_end, warmup, rounds)
        child_end.close()
        for _ in range(warmup):
            one_round()
        gc.collect()
        before = open_fds()
        for _ in range(rounds):
            one_round()
        gc.collect()
        assert_fds_back(before, open_fds())
        assert len(child.value()) <= 4, child.value()
    parent.close()


# --- the harness itself ----------------------------------------------------------------------


def test_assert_fds_back_catches_a_leak():
    before = open_fds()
    leaked = [os.open(os.devnull, os.O_RDONLY) for _ in range(5)]
    try:
        with pytest.raises(pytest.fail.Exception, match="5 file descriptors more"):
            assert_fds_back(before, open_fds())
        assert_fds_back(before, open_fds(), slack=5)
    finally:
        for fd in leaked:
            os.close(fd)
    assert_fds_back(before, open_fds(), slack=0)


def _crash():
    os.kill(os.getpid(), signal.SIGSEGV)


def _sleep(seconds):
    time.sleep(seconds)


def _take_one(q):
    return q.get(timeout=60)


def test_children_fails_on_a_crashed_child():
    with pytest.raises(pytest.fail.Exception, match="SIGSEGV"):
        with Children() as children:
            children.start(_crash)


def test_children_kills_a_hung_child():
    started = time.monotonic()
    with pytest.raises(pytest.fail.Exception, match="did not finish in time and was killed"):
        with Children(timeout=3) as children:
            children.start(_sleep, 60)
    assert time.monotonic() - started < 30


def test_queue_get_does_not_wait_on_a_dead_child():
    q = SPAWN.Queue()
    started = time.monotonic()
    with Children() as children:
        proc = children.start(_crash, exitcode=-signal.SIGSEGV)
        with pytest.raises(pytest.fail.Exception, match="ended without a message: killed by"):
            queue_get(q, proc, timeout=60)
    assert time.monotonic() - started < 30


def test_die_on_unpickle_kills_the_receiver_mid_message():
    q = SPAWN.Queue()
    with Children() as children:
        child = children.run(_take_one, q, exitcode=-signal.SIGKILL)
        q.put(("before", DieOnUnpickle(), "after"))
        with pytest.raises(pytest.fail.Exception, match="SIGKILL"):
            child.report(timeout=60)
    q.close()
    q.join_thread()


# --- the environment of every test process ---------------------------------------------------

_NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                 "NVSHMEM_DISABLE_NVLS": "1"}


def _read_env(names):
    return {name: os.environ.get(name) for name in names}


def test_multicast_is_off_here_and_in_children():
    assert {name: os.environ.get(name) for name in _NO_MULTICAST} == _NO_MULTICAST
    with Children() as children:
        assert children.run(_read_env, list(_NO_MULTICAST)).value() == _NO_MULTICAST
    result = run_python(f"import os; print([os.environ.get(n) for n in {list(_NO_MULTICAST)}])")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == repr(list(_NO_MULTICAST.values()))


def test_threads_share_one_warning(fresh_warning, start_method):
    # The once-per-process flag holds when many threads pickle at the same moment.
    start_method["method"] = "fork"
    barrier = threading.Barrier(8)

    def check():
        barrier.wait()
        _mp.warn_if_fork()

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        threads = [threading.Thread(target=check) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(_fork_warnings(record)) == 1
