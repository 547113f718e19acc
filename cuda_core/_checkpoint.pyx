"""Process checkpointing: lock a CUDA process, save its GPU memory to host memory, put it back,
and let the process go on, through the driver's ``cuCheckpointProcess*`` calls (Linux).

The calls are made by a controller (this process) about another process, named by its pid.
Arguments are checked before the driver is touched; the driver is initialized on first use
(the checkpoint calls need ``cuInit`` in the controller). A refusal is a :class:`CUDAError`
whose message starts with the name of the call; a driver without the checkpoint API (older than
CUDA 12.8, r570), or one that answers ``CUDA_ERROR_NOT_SUPPORTED`` or ``CUDA_ERROR_NOT_FOUND``,
gives a ``CheckpointNotSupportedError`` saying so: a :class:`CUDAError` and, as cuda.core raises
there, a ``RuntimeError``.
"""

from libc.string cimport memcpy, memset
from libcpp.vector cimport vector

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUcheckpointLockArgs, CUcheckpointRestoreArgs,
                                     CUprocessState, CUresult)

from cuda_core._cuda_compat cimport CUcheckpointGpuPair, set_restore_pairs

from cuda_core._checks cimport check_int
from cuda_core._driver cimport ensure_driver
from cuda_core._errors cimport check_call, make_driver_error

from collections.abc import Mapping

from cuda_core._errors import CheckpointNotSupportedError

__all__ = ["Process"]

# The largest pid the driver takes (a C int), and lock timeout (an unsigned int, ms).
cdef long long _PID_MAX = 2**31 - 1
cdef long long _TIMEOUT_MAX = 2**32 - 1

_STATE_NAMES = {
    <int>cydriver.CU_PROCESS_STATE_RUNNING: "running",
    <int>cydriver.CU_PROCESS_STATE_LOCKED: "locked",
    <int>cydriver.CU_PROCESS_STATE_CHECKPOINTED: "checkpointed",
    <int>cydriver.CU_PROCESS_STATE_FAILED: "failed",
}

_HEX = frozenset("0123456789abcdefABCDEF")


def _no_entry_point(str call, exc):
    """The error for a driver that lacks ``call`` (cuda-bindings raised ``exc``)."""
    return CheckpointNotSupportedError(
        f"{call}: the installed CUDA driver has no process checkpoint API (it needs a driver "
        f"of CUDA 12.8 or newer, r570+, on Linux) ({exc})")


cdef int _check(CUresult err, str call) except -1:
    """check_call, where the two codes by which the driver says that it cannot checkpoint
    here give a CheckpointNotSupportedError."""
    if err != cydriver.CUDA_ERROR_NOT_SUPPORTED and err != cydriver.CUDA_ERROR_NOT_FOUND:
        return check_call(err, call)
    e = make_driver_error(err, call)
    why = ("the driver does not support process checkpointing here"
           if err == cydriver.CUDA_ERROR_NOT_SUPPORTED
           else "the driver found nothing it can checkpoint under this pid")
    raise CheckpointNotSupportedError(f"{e.args[0]} ({why})", e.code, e.name, e.explanation)


# The driver calls, one code each, made through _call.
cdef enum _Call:
    _GET_STATE
    _GET_RESTORE_THREAD_ID
    _LOCK
    _CHECKPOINT
    _RESTORE
    _UNLOCK

_CALL_NAMES = ("cuCheckpointProcessGetState", "cuCheckpointProcessGetRestoreThreadId",
               "cuCheckpointProcessLock", "cuCheckpointProcessCheckpoint",
               "cuCheckpointProcessRestore", "cuCheckpointProcessUnlock")


cdef int _call(_Call call, int pid, void* arg) except -1:
    """Make one ``cuCheckpointProcess*`` call about ``pid``, with the GIL released: the driver
    initialized first, and a driver without the entry point (cuda-bindings raises
    RuntimeError) or without checkpoint support here a CheckpointNotSupportedError (_check).
    ``arg`` is the call's one pointer: the state or thread id it writes, or its arguments
    (NULL: none)."""
    cdef CUresult err
    ensure_driver()
    try:
        with nogil:
            if call == _GET_STATE:
                err = cydriver.cuCheckpointProcessGetState(pid, <CUprocessState*>arg)
            elif call == _GET_RESTORE_THREAD_ID:
                err = cydriver.cuCheckpointProcessGetRestoreThreadId(pid, <int*>arg)
            elif call == _LOCK:
                err = cydriver.cuCheckpointProcessLock(pid, <CUcheckpointLockArgs*>arg)
            elif call == _CHECKPOINT:
                err = cydriver.cuCheckpointProcessCheckpoint(
                    pid, <cydriver.CUcheckpointCheckpointArgs*>arg)
            elif call == _RESTORE:
                err = cydriver.cuCheckpointProcessRestore(pid, <CUcheckpointRestoreArgs*>arg)
            else:
                err = cydriver.cuCheckpointProcessUnlock(
                    pid, <cydriver.CUcheckpointUnlockArgs*>arg)
    except RuntimeError as exc:
        raise _no_entry_point(_CALL_NAMES[call], exc) from None
    return _check(err, _CALL_NAMES[call])


def _uuid_bytes(value, str what):
    """``value`` (a GPU UUID: a string of 32 hex digits, hyphens anywhere and an optional
    ``GPU-`` prefix, or a ``cuda.bindings.driver.CUuuid``) as its 16 bytes."""
    if isinstance(value, str):
        digits = value[4:] if value.startswith("GPU-") else value
        digits = digits.replace("-", "")
        if len(digits) != 32 or not _HEX.issuperset(digits):
            raise ValueError(f"{what} must be a GPU UUID: 32 hex digits, with optional hyphens "
                             f"and 'GPU-' prefix, got {value!r}")
        return bytes.fromhex(digits)
    if type(value).__name__ == "CUuuid":
        from cuda.bindings import driver

        if isinstance(value, driver.CUuuid):
            raw = bytes(value.bytes)
            if len(raw) == 16:
                return raw
    raise TypeError(f"{what} must be a GPU UUID string or a cuda.bindings.driver.CUuuid, got "
                    f"{type(value).__name__}")


def _gpu_pairs(gpu_mapping):
    """``gpu_mapping`` checked, as a tuple of ``(old, new)`` 16-byte UUIDs (empty for None)."""
    what = "Process.restore(): gpu_mapping"
    if gpu_mapping is None:
        return ()
    if not isinstance(gpu_mapping, Mapping):
        raise TypeError(f"{what} must be a mapping from each checkpointed GPU's UUID to the UUID "
                        f"of the GPU to restore onto, or None, got {type(gpu_mapping).__name__}")
    pairs = []
    seen = set()
    for old, new in gpu_mapping.items():
        old_raw = _uuid_bytes(old, f"{what} key {old!r}")
        new_raw = _uuid_bytes(new, f"{what}[{old!r}]")
        if old_raw in seen:
            raise ValueError(f"{what} names GPU {old_raw.hex()} twice (key {old!r})")
        seen.add(old_raw)
        pairs.append((old_raw, new_raw))
    return tuple(pairs)


cdef class Process:
    """A CUDA process, named by its pid, that this process can lock, checkpoint, restore and
    unlock (Linux).

    The life cycle is ``running`` --:meth:`lock`--> ``locked`` --:meth:`checkpoint`-->
    ``checkpointed`` --:meth:`restore`--> ``locked`` --:meth:`unlock`--> ``running``. While the
    process is locked or checkpointed, its CUDA calls wait. A checkpointed process holds no GPU
    resources: its device memory has been saved to host memory by the driver.

    Creating a Process only checks ``pid``; each member calls the driver.

    Parameters
    ----------
    pid : int
        The process's id, greater than 0.

    Raises
    ------
    TypeError
        ``pid`` is not an int (Python's bool is one; NumPy's is not).
    ValueError
        ``pid`` is not between 1 and 2**31 - 1.
    """

    cdef int _pid

    def __init__(self, pid):
        self._pid = check_int(pid, "Process(): pid", 1, _PID_MAX)

    def __repr__(self):
        return f"<Process pid={self._pid}>"

    @property
    def pid(self):
        """The process's id (int)."""
        return self._pid

    @property
    def state(self):
        """The process's checkpoint state: ``"running"``, ``"locked"``, ``"checkpointed"`` or
        ``"failed"`` (:data:`cuda_core.typing.ProcessStateType`).

        .. note:: ``cuCheckpointProcessGetState``.
        """
        cdef CUprocessState state
        _call(_GET_STATE, self._pid, &state)
        name = _STATE_NAMES.get(<int>state)
        if name is None:
            raise RuntimeError(f"cuCheckpointProcessGetState: unknown process state {<int>state}")
        return name

    @property
    def restore_thread_id(self):
        """The id of the process's thread that a restore runs on (int): a checkpoint tool
        that restores the whole process (CRIU) must restore this thread first.

        .. note:: ``cuCheckpointProcessGetRestoreThreadId``.
        """
        cdef int tid = 0
        _call(_GET_RESTORE_THREAD_ID, self._pid, &tid)
        return tid

    def lock(self, timeout_ms=0):
        """Lock the running process: its CUDA calls wait from now on, and the call returns
        once the work it had submitted has finished.

        .. note:: ``cuCheckpointProcessLock``.

        Parameters
        ----------
        timeout_ms : int, optional
            How long to wait for the process's calls in progress, in milliseconds, from 0 to
            2**32 - 1; 0 (the default) waits without a limit.

        Raises
        ------
        TypeError, ValueError
            ``timeout_ms`` is not an int in that range (checked before the driver).
        CUDAError
            The driver refused (``"cuCheckpointProcessLock: ..."``), also when the timeout
            passed.
        """
        cdef CUcheckpointLockArgs args
        timeout = check_int(timeout_ms, "Process.lock(): timeout_ms", 0, _TIMEOUT_MAX)
        memset(&args, 0, sizeof(args))
        args.timeoutMs = <unsigned int>timeout
        _call(_LOCK, self._pid, &args)

    def checkpoint(self):
        """Save the locked process's GPU memory to host memory and release its GPU
        resources; the process is then ``"checkpointed"``.

        .. note:: ``cuCheckpointProcessCheckpoint``.

        Raises
        ------
        CUDAError
            The driver refused (``"cuCheckpointProcessCheckpoint: ..."``), for instance because
            the process is not locked.
        """
        _call(_CHECKPOINT, self._pid, NULL)  # its arguments hold only reserved fields

    def restore(self, gpu_mapping=None):
        """Put the checkpointed process's GPU memory back; the process is then ``"locked"``
        (call :meth:`unlock` to let it go on).

        .. note:: ``cuCheckpointProcessRestore``.

        Parameters
        ----------
        gpu_mapping : Mapping, optional
            Restore onto other GPUs: a mapping from the UUID of each GPU the process was
            checkpointed on to the UUID of the GPU to restore it onto. A UUID is a string of 32
            hex digits (hyphens anywhere, an optional ``GPU-`` prefix: :attr:`Device.uuid
            <cuda_core.Device.uuid>` and ``nvidia-smi -L`` both fit) or a
            ``cuda.bindings.driver.CUuuid``. The driver wants every GPU the driver sees in the
            mapping, whatever ``CUDA_VISIBLE_DEVICES`` hides, and each new GPU of the same kind
            as its old one. None or an empty mapping restores onto the same GPUs.

        Raises
        ------
        TypeError, ValueError
            ``gpu_mapping`` is not such a mapping, or names one GPU twice (checked before the
            driver).
        CUDAError
            The driver refused (``"cuCheckpointProcessRestore: ..."``).
        """
        cdef CUcheckpointRestoreArgs args
        cdef Py_ssize_t i, n
        pairs = _gpu_pairs(gpu_mapping)
        n = len(pairs)
        cdef vector[CUcheckpointGpuPair] c_pairs = vector[CUcheckpointGpuPair](n)
        for i in range(n):  # n == c_pairs.size()
            old, new = pairs[i]
            memcpy(c_pairs[i].oldUuid.bytes, <const char*>old, 16)
            memcpy(c_pairs[i].newUuid.bytes, <const char*>new, 16)
        memset(&args, 0, sizeof(args))
        ensure_driver()  # before the build's own refusal: without a driver, that is the error
        set_restore_pairs(&args, c_pairs.data(), <unsigned int>n)
        # Without pairs, no arguments: the driver's default, the same GPUs.
        _call(_RESTORE, self._pid, &args if n else NULL)

    def unlock(self):
        """Unlock the locked process: its CUDA calls go on; the process is then ``"running"``.

        .. note:: ``cuCheckpointProcessUnlock``.

        Raises
        ------
        CUDAError
            The driver refused (``"cuCheckpointProcessUnlock: ..."``), for instance because the
            process is checkpointed, not locked.
        """
        _call(_UNLOCK, self._pid, NULL)
