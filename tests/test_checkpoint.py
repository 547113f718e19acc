"""cuda_core.checkpoint: the argument checks (CPU), the error without a driver (CPU, in a
subprocess), and a lock/checkpoint/restore/unlock round trip of a child process that holds
device memory (GPU)."""

import os
import queue
import subprocess
import sys
import tempfile
import threading

import numpy as np
import pytest

import cuda_core
from cuda_core import CUDAError
from cuda_core.checkpoint import Process
from helpers import run_python

UUID = "0123456789abcdef0123456789abcdef"
UUID_HYPHENS = "01234567-89ab-cdef-0123-456789abcdef"


# -- CPU: the module, the type alias, argument checks before any driver call -------------------

def test_module_and_alias():
    assert cuda_core.checkpoint.Process is Process
    assert "checkpoint" in cuda_core.__all__
    from typing import get_args

    from cuda_core.typing import ProcessStateType

    assert get_args(ProcessStateType) == ("running", "locked", "checkpointed", "failed")


def test_import_touches_no_driver():
    code = (
        "import cuda_core.checkpoint\n"
        "p = cuda_core.checkpoint.Process(1)\n"
        "assert p.pid == 1 and repr(p) == '<Process pid=1>'\n"
        "maps = open('/proc/self/maps').read()\n"
        "assert 'libcuda.so' not in maps, 'libcuda was loaded'\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("pid, exc, match", [
    (np.True_, TypeError, r"Process\(\): pid must be an int, not numpy.bool"),
    (1.0, TypeError, r"Process\(\): pid must be an int, not float"),
    ("12", TypeError, r"Process\(\): pid must be an int, not str"),
    (None, TypeError, r"Process\(\): pid must be an int"),
    (0, ValueError, r"Process\(\): pid must be between 1 and 2147483647, got 0"),
    (-5, ValueError, "got -5"),
    (2**31, ValueError, "got 2147483648"),
])
def test_pid_is_checked(pid, exc, match):
    with pytest.raises(exc, match=match):
        Process(pid)


def test_pid_takes_an_index_object():
    import numpy as np

    p = Process(np.int32(42))
    assert p.pid == 42 and type(p.pid) is int


@pytest.mark.parametrize("timeout, exc, match", [
    (np.False_, TypeError, r"Process.lock\(\): timeout_ms must be an int, not numpy.bool"),
    (1.5, TypeError, "not float"),
    (None, TypeError, "timeout_ms must be an int"),
    (-1, ValueError, r"timeout_ms must be between 0 and 4294967295, got -1"),
    (2**32, ValueError, "got 4294967296"),
])
def test_lock_timeout_is_checked_before_the_driver(timeout, exc, match):
    # The checks come first: no driver is needed to get these errors.
    with pytest.raises(exc, match=match):
        Process(1).lock(timeout_ms=timeout)


@pytest.mark.parametrize("mapping, exc, match", [
    ([(UUID, UUID)], TypeError, r"gpu_mapping must be a mapping .* got list"),
    (UUID, TypeError, "got str"),
    ({5: UUID}, TypeError, r"gpu_mapping key 5 must be a GPU UUID string or a "
                           r"cuda.bindings.driver.CUuuid, got int"),
    ({UUID: b"x" * 16}, TypeError, r"gpu_mapping\['0123456789abcdef0123456789abcdef'\] must be "
                                   r"a GPU UUID string .* got bytes"),
    ({"zz" * 16: UUID}, ValueError, "must be a GPU UUID: 32 hex digits"),
    ({UUID[:-1]: UUID}, ValueError, "32 hex digits"),
    ({UUID: UUID + "0"}, ValueError, "32 hex digits"),
    ({"MIG-" + UUID: UUID}, ValueError, "32 hex digits"),
    ({UUID: UUID, UUID.upper(): UUID}, ValueError, f"names GPU {UUID} twice"),
    ({UUID: UUID, "GPU-" + UUID_HYPHENS: UUID}, ValueError, "twice"),
])
def test_gpu_mapping_is_checked_before_the_driver(mapping, exc, match):
    with pytest.raises(exc, match=match):
        Process(1).restore(gpu_mapping=mapping)


def test_gpu_mapping_spellings():
    from cuda.bindings import driver

    from cuda_core._checkpoint import _gpu_pairs

    raw = bytes.fromhex(UUID)
    other = bytes(range(16))
    assert _gpu_pairs(None) == ()
    assert _gpu_pairs({}) == ()
    for spelling in (UUID, UUID.upper(), UUID_HYPHENS, "GPU-" + UUID_HYPHENS, "GPU-" + UUID):
        assert _gpu_pairs({spelling: other.hex()}) == ((raw, other),)
    cu = driver.CUuuid()
    assert _gpu_pairs({cu: UUID}) == ((bytes(16), raw),)
    # A Mapping that is not a dict, in its own order.
    from types import MappingProxyType

    assert _gpu_pairs(MappingProxyType({UUID: UUID, other.hex(): UUID})) == (
        (raw, raw), (other, raw))


def test_missing_entry_point_error_names_the_call():
    from cuda_core._checkpoint import _no_entry_point

    err = _no_entry_point("cuCheckpointProcessLock",
                          RuntimeError('Function "cuCheckpointProcessLock" not found'))
    # A CUDAError, as ours are, and the RuntimeError cuda.core raises there.
    assert isinstance(err, CUDAError) and isinstance(err, RuntimeError)
    assert str(err).startswith("cuCheckpointProcessLock: the installed CUDA driver has no "
                               "process checkpoint API (it needs a driver of CUDA 12.8")


def test_without_a_driver_every_call_is_one_clear_error():
    # CUDA_VISIBLE_DEVICES="" hides every GPU where there is a driver; where there is none the
    # driver cannot be loaded. Either way each member raises the CUDAError naming the cause.
    code = (
        "import os\n"
        "from cuda_core import CUDAError\n"
        "from cuda_core.checkpoint import Process\n"
        "p = Process(os.getpid())\n"
        "for use in (lambda: p.state, lambda: p.restore_thread_id, lambda: p.lock(),\n"
        "            lambda: p.checkpoint(), lambda: p.restore(), lambda: p.unlock(),\n"
        "            lambda: p.restore({'%s': '%s'})):\n"
        "    try:\n"
        "        use()\n"
        "    except CUDAError as e:\n"
        "        print('CUDAError:', str(e).splitlines()[0])\n"
        "    else:\n"
        "        print('no error')\n"
    ) % (UUID, UUID)
    result = run_python(code, env={"CUDA_VISIBLE_DEVICES": ""}, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 7, result.stdout
    for line in lines:
        assert line.startswith("CUDAError: "), line
        assert ("CUDA driver not found" in line) or ("no CUDA-capable GPU found" in line), line


def test_compat_mode_gives_this_module():
    code = (
        "import cuda_core.compat\n"
        "cuda_core.compat.install()\n"
        "import cuda.core.checkpoint, cuda.core.typing, cuda_core.checkpoint\n"
        "from cuda.core.checkpoint import Process\n"
        "assert cuda.core.checkpoint is cuda_core.checkpoint\n"
        "assert Process is cuda_core.checkpoint.Process\n"
        "assert cuda.core.typing.ProcessStateType is cuda_core.typing.ProcessStateType\n"
        "print('ok')\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok\n"


# -- GPU: a child process with device memory, locked, checkpointed, restored, unlocked ---------

N_WORDS = 1 << 18  # 1 MiB of uint32

# The child: makes a context, fills a device buffer with a pattern, clears its host copy, says
# "ready" and waits for one line on stdin (it makes no CUDA call meanwhile: a locked process's
# calls would wait); then reads the buffer back and says whether it is intact.
CHILD = f"""
import ctypes, sys
import numpy as np
from cuda_core import Device, LegacyPinnedMemoryResource
dev = Device(0)
dev.set_current()
stream = dev.create_stream()
n = {N_WORDS}
pinned = LegacyPinnedMemoryResource().allocate(4 * n)
host = np.ctypeslib.as_array((ctypes.c_uint32 * n).from_address(int(pinned.handle)))
expected = ((np.arange(n, dtype=np.uint64) * 2654435761 + 12345) % (1 << 32)).astype(np.uint32)
host[:] = expected
buf = dev.allocate(4 * n, stream=stream)
buf.copy_from(pinned, stream=stream)
stream.sync()
host[:] = 0
print("ready", flush=True)
command = sys.stdin.readline().strip()
buf.copy_to(pinned, stream=stream)
stream.sync()
intact = bool(np.array_equal(host, expected))
print("intact" if intact else "corrupted", flush=True)
sys.exit(0 if intact else 3)
"""


class _Child:
    """The child process, its stdout read line by line by a thread (so every wait has a
    timeout), killed on the way out whatever happened."""

    def __init__(self, code):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, cwd=tempfile.gettempdir())
        self.lines = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def expect(self, word, timeout):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"the child said nothing within {timeout} s (waiting for {word!r})")
        if line != word:
            self.proc.kill()
            _, err = self.proc.communicate(timeout=30)
            pytest.fail(f"the child said {line!r}, not {word!r}; stderr:\n{err}")

    def go_on(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def finish(self, timeout):
        try:
            _, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate(timeout=30)
            pytest.fail(f"the child did not exit within {timeout} s; stderr:\n{err}")
        return self.proc.returncode, err

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate(timeout=30)


def _assert_names(exc, call):
    """``exc`` is the CUDAError of a driver refusal of ``call``."""
    assert isinstance(exc, CUDAError)
    assert str(exc).startswith(f"{call}: CUDA_ERROR_"), str(exc)
    assert exc.code is not None and exc.name.startswith("CUDA_ERROR_")


@pytest.mark.gpu
def test_lock_checkpoint_restore_unlock_round_trip():
    child = _Child(CHILD)
    proc = Process(child.proc.pid)
    refused = None
    call = None
    locked = False  # whether this test's lock() succeeded and no unlock() yet
    try:
        child.expect("ready", timeout=180)

        # Calls in the wrong state are refused, each naming its call, and change nothing.
        for call, use in (("cuCheckpointProcessUnlock", proc.unlock),
                          ("cuCheckpointProcessCheckpoint", proc.checkpoint),
                          ("cuCheckpointProcessRestore", proc.restore)):
            with pytest.raises(CUDAError) as info:
                use()
            _assert_names(info.value, call)

        # The round trip; where the driver refuses checkpointing here (a container, missing
        # permissions), the first refusal is kept and checked below.
        try:
            call = "cuCheckpointProcessGetState"
            assert proc.state == "running"
            call = "cuCheckpointProcessGetRestoreThreadId"
            tid = proc.restore_thread_id
            assert isinstance(tid, int) and tid > 0
            assert os.path.isdir(f"/proc/{child.proc.pid}/task/{tid}"), \
                f"restore thread {tid} is not a thread of the child"
            call = "cuCheckpointProcessLock"
            proc.lock(timeout_ms=60_000)
            locked = True
            call = "cuCheckpointProcessGetState"
            assert proc.state == "locked"
            call = "cuCheckpointProcessCheckpoint"
            proc.checkpoint()
            call = "cuCheckpointProcessGetState"
            assert proc.state == "checkpointed"
            call = "cuCheckpointProcessRestore"
            proc.restore()
            call = "cuCheckpointProcessGetState"
            assert proc.state == "locked"
            call = "cuCheckpointProcessUnlock"
            proc.unlock()
            locked = False
            call = "cuCheckpointProcessGetState"
            assert proc.state == "running"
        except CUDAError as exc:
            refused = exc
            _assert_names(exc, call)

        if refused is not None:
            # Leave the child usable: a refused lock or query left it running; a refused
            # checkpoint left it locked. (A refused restore or unlock after a checkpoint that
            # succeeded is a failure: the child then stays stopped, and the test fails below.)
            try:
                state = proc.state
            except CUDAError as exc:
                _assert_names(exc, "cuCheckpointProcessGetState")
                state = None
            if state == "locked" or (state is None and locked):
                proc.unlock()
                locked = False
                if state is not None:
                    assert proc.state == "running"
            assert state in (None, "running", "locked"), \
                f"after {refused}, the child is {state!r}"

        # The child goes on and finds its device memory intact.
        child.go_on()
        child.expect("intact", timeout=120)
        returncode, err = child.finish(timeout=60)
        assert returncode == 0, err
    finally:
        if locked:
            # A failure above left the child locked: unlock it (best effort) so it can exit.
            try:
                proc.unlock()
            except CUDAError:
                pass
        child.kill()

    if refused is not None:
        # Reported, not skipped: the refusal was checked above, and the child was left usable.
        pytest.xfail(f"the driver refused checkpointing on this machine: {refused}")


@pytest.mark.gpu
def test_a_process_without_cuda_is_a_clear_error():
    # A process that never used CUDA: the driver has nothing to lock or unlock. Each refusal is
    # a CUDAError naming its call, and the process is left alone.
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.readline()"],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        proc = Process(child.pid)
        for call, use in (("cuCheckpointProcessLock", lambda: proc.lock(timeout_ms=5000)),
                          ("cuCheckpointProcessUnlock", proc.unlock)):
            with pytest.raises(CUDAError) as info:
                use()
            _assert_names(info.value, call)
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.wait(timeout=60) == 0
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=30)

