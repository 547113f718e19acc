"""What the IPC objects need from :mod:`multiprocessing`, kept out of ``import cuda_core``.

Three pieces, each safe to call from any thread (free-threaded CPython included: every flag is
written under a lock, and read without one only where a stale ``False`` just leads to the
locked path):

* the reducers that :class:`multiprocessing.reduction.ForkingPickler` (Queues, Pipes, the
  arguments of ``Process``) uses for the IPC types. The modules that define those types declare
  them with :func:`add_reducer` at their import, which imports nothing; the first path that
  makes an IPC object calls :func:`ensure_reducers`, which imports
  ``multiprocessing.reduction`` (about 11 ms, and it pulls in ``socket``) and registers them.
  Before that, ``ForkingPickler`` falls back to each type's ``__reduce__``;
* the warning given once per process when an IPC object is pickled for a process started, or
  about to be started, with the ``fork`` method (:func:`warn_if_fork`). Every registered
  reducer gives it before it runs;
* the file-descriptor hand-off: :func:`dup_fd` in a reducer, :func:`detach_fd` in the
  matching rebuild function.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from types import FrameType
from typing import Any, Callable, Protocol

__all__: list[str] = []  # private module: nothing here is public API

Reducer = Callable[[Any], tuple[Any, ...]]


class FdToken(Protocol):
    """What :func:`dup_fd` returns: an object the pickle carries; ``detach()`` on the receiving
    side gives the file descriptor that side now owns."""

    def detach(self) -> int: ...


# One lock for the two flags and the reducer table below: none of them is on a hot path.
_lock = threading.Lock()
_declared: dict[type, Reducer] = {}  # every reducer add_reducer was given, in order
_installed = False  # ensure_reducers has registered _declared with ForkingPickler
_fork_warned = False  # warn_if_fork has warned in this process

_FORK_MESSAGE = (
    "cuda_core: an IPC object is being pickled for multiprocessing while the start method is "
    "'fork'. A process forked from one that has used CUDA cannot use CUDA itself, so the "
    "receiver will fail to import the object. Start the processes that receive CUDA objects "
    "from multiprocessing.get_context('spawn'), or call "
    "multiprocessing.set_start_method('spawn') once at start-up."
)


def _guarded(reducer: Reducer) -> Reducer:
    """``reducer`` preceded by the fork warning: what ForkingPickler is given."""

    def reduce(obj: Any) -> tuple[Any, ...]:
        warn_if_fork()
        return reducer(obj)

    reduce.__qualname__ = reduce.__name__ = f"mp_{getattr(reducer, '__name__', 'reduce')}"
    return reduce


def add_reducer(cls: type, reducer: Reducer) -> None:
    """Declare the :mod:`multiprocessing` reducer of ``cls`` (imports nothing).

    Parameters
    ----------
    cls : type
        The exact class (``ForkingPickler`` looks reducers up by ``type(obj)``; a subclass falls
        back to its ``__reduce__``).
    reducer : callable
        ``reducer(obj) -> (rebuild, args)``, as :meth:`object.__reduce__` returns. It need not
        call :func:`warn_if_fork`: the registered wrapper does.

    Raises
    ------
    TypeError
        ``cls`` is not a class or ``reducer`` is not callable.
    ValueError
        ``cls`` already has a different reducer.

    Notes
    -----
    A declaration made after :func:`ensure_reducers` has run is registered at once.
    """
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a class, not {type(cls).__name__}")
    if not callable(reducer):
        raise TypeError(f"reducer must be callable, not {type(reducer).__name__}")
    with _lock:
        known = _declared.get(cls)
        if known is reducer:
            return
        if known is not None:
            raise ValueError(f"cls {cls.__qualname__} already has a multiprocessing reducer")
        _declared[cls] = reducer
        if _installed:
            from multiprocessing.reduction import ForkingPickler

            ForkingPickler.register(cls, _guarded(reducer))


def ensure_reducers() -> None:
    """Register every declared reducer with :class:`multiprocessing.reduction.ForkingPickler`,
    the first time only; later calls cost one flag read.

    Called by every path that makes an object multiprocessing can move (IPC pool creation and
    import, allocation handles, buffer and event descriptors, IPC events, VMM resources with a
    handle type) and by their ``__reduce__``.
    """
    global _installed
    if _installed:
        return
    with _lock:
        if _installed:
            return
        from multiprocessing.reduction import ForkingPickler

        for cls, reducer in _declared.items():
            ForkingPickler.register(cls, _guarded(reducer))
        # Set last: a thread that reads True without the lock finds every reducer registered.
        _installed = True


def _platform_default() -> str:
    """The start method multiprocessing will pick when none was chosen, found without choosing
    one (``get_start_method()`` without ``allow_none`` would fix it for the process)."""
    from multiprocessing import context

    concrete = getattr(getattr(context, "_default_context", None), "_default_context", None)
    name = getattr(concrete, "_name", None)
    if isinstance(name, str):
        return name
    # The rule of CPython 3.10 to 3.14, should the private attributes above ever move.
    if sys.platform in ("win32", "darwin"):
        return "spawn"
    return "forkserver" if sys.version_info >= (3, 14) else "fork"


def _start_method() -> str:
    """The start method of the process an object pickled now is meant for.

    While ``Process.start()`` pickles its arguments, the method of that process (so a
    ``get_context('spawn')`` process is never mistaken for a forked one). Otherwise, as for a
    Queue or a Pipe whose far end is unknown, the method chosen for this process, or the
    platform's default when none was chosen. Never chooses one.
    """
    import multiprocessing
    from multiprocessing import context

    popen = context.get_spawning_popen()
    method = getattr(popen, "method", None)
    if isinstance(method, str):
        return method
    method = multiprocessing.get_start_method(allow_none=True)
    return method if method is not None else _platform_default()


def _stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside cuda_core, multiprocessing and threading,
    counted for a ``warnings.warn`` in :func:`warn_if_fork`; 2 (its caller) when there is none,
    as in a Queue's feeder thread."""
    internal = [os.path.dirname(os.path.abspath(__file__)) + os.sep]
    mp = sys.modules.get("multiprocessing")
    mp_file = getattr(mp, "__file__", None)
    if mp_file:
        internal.append(os.path.dirname(os.path.abspath(mp_file)) + os.sep)
    threading_file = getattr(threading, "__file__", None)
    frame: FrameType | None = sys._getframe(2)  # warn_if_fork's caller
    level = 2
    while frame is not None:
        name = frame.f_code.co_filename
        if name != threading_file and not any(name.startswith(p) for p in internal):
            return level
        frame = frame.f_back
        level += 1
    return 2


def warn_if_fork() -> None:
    """Warn, once per process, when the object being pickled is meant for a process started
    with the ``fork`` method (see :func:`_start_method`).

    The warning is a :class:`UserWarning` attributed to the first caller outside cuda_core and
    multiprocessing. Choosing no start method is never a side effect.
    """
    global _fork_warned
    if _fork_warned or _start_method() != "fork":
        return
    with _lock:
        if _fork_warned:
            return
        _fork_warned = True
    warnings.warn(_FORK_MESSAGE, UserWarning, stacklevel=_stacklevel())


def _reset_fork_warning() -> None:
    """Test hook: let :func:`warn_if_fork` warn again."""
    global _fork_warned
    with _lock:
        _fork_warned = False


def dup_fd(fd: int) -> FdToken:
    """Wrap the open file descriptor ``fd`` for a multiprocessing pickle; call it only inside a
    reducer that :class:`~multiprocessing.reduction.ForkingPickler` runs.

    While ``Process.start()`` pickles its arguments the child inherits ``fd`` itself, which must
    stay open until ``start()`` returns. Otherwise (a Queue, a Pipe) a duplicate is handed to
    multiprocessing's resource sharer, which sends it to the receiver on its ``detach()`` and
    then closes it; a duplicate no receiver asks for stays open until
    ``multiprocessing.resource_sharer.stop()`` or exit.

    Parameters
    ----------
    fd : int
        An open file descriptor; the caller keeps it.

    Returns
    -------
    FdToken
        An object to put in the reduce tuple; the rebuild function passes it to
        :func:`detach_fd`.

    Raises
    ------
    TypeError
        ``fd`` is not an int.
    ValueError
        ``fd`` is negative or not open.
    """
    if type(fd) is not int:
        if isinstance(fd, bool) or not isinstance(fd, int):
            raise TypeError(f"fd must be an int, not {type(fd).__name__}")
        fd = int(fd)
    if fd < 0:
        raise ValueError(f"fd must be a file descriptor (>= 0), not {fd}")
    try:
        os.fstat(fd)
    except OSError as exc:
        raise ValueError(f"fd {fd} is not an open file descriptor ({exc.strerror})") from None
    from multiprocessing.reduction import DupFd

    token: FdToken = DupFd(fd)
    return token


def detach_fd(token: FdToken) -> int:
    """The file descriptor a :func:`dup_fd` token carried, received in this process; the caller
    owns it and must close it (or hand it to an object that will).

    Parameters
    ----------
    token : FdToken
        What :func:`dup_fd` returned in the sending process. Each token can be detached once.

    Returns
    -------
    int
        A file descriptor open in this process.

    Raises
    ------
    TypeError
        ``token`` is not such an object.
    RuntimeError
        The descriptor could not be received (the sending process has exited, or the token was
        already detached).
    """
    detach = getattr(token, "detach", None)
    if not callable(detach):
        raise TypeError(f"token must come from dup_fd, not {type(token).__name__}")
    from multiprocessing import ProcessError

    try:
        fd = detach()
    except (OSError, EOFError, KeyError, ProcessError) as exc:
        # Connecting to the sender's resource sharer fails once that process has gone; a second
        # detach finds the connection closed (EOF); a foreign authkey fails authentication.
        raise RuntimeError(
            "could not receive a file descriptor from the sending process: it may have exited, "
            f"or the descriptor was already received ({type(exc).__name__}: {exc})") from exc
    if type(fd) is not int or fd < 0:
        raise TypeError(f"token must come from dup_fd: detach() gave {fd!r}")
    return fd
