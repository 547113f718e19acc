"""Microbenchmarks: :func:`benchmark`, with the interface of CuPy's ``cupyx.profiler.benchmark``,
and its :class:`BenchmarkResult`.

The arguments are checked here, all before the driver is used; the timed loop is Cython
(``utils/_benchmark_loop.pyx``), which allocates nothing while it times.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy
import numpy.typing as npt

from cuda_core._checks import ArgumentTypeError, check_int
from cuda_core.utils import _benchmark_loop

__all__ = ["BenchmarkResult", "benchmark"]

_FloatArray = npt.NDArray[numpy.float64]
_FloatArrays = tuple[_FloatArray, _FloatArray]

# The summary statistics of to_dict(), each a function of a 1-D array of times.
_STATS: tuple[tuple[str, Callable[[_FloatArray], Any]], ...] = (
    ("mean", numpy.mean), ("std", numpy.std), ("min", numpy.min), ("max", numpy.max),
    ("median", numpy.median))


def _type_name(value: Any) -> str:
    return type(value).__name__


def _times(value: Any, what: str, ndim: int) -> _FloatArray:
    """``value`` as a new, read-only float64 array of ``ndim`` dimensions."""
    try:
        array = numpy.array(value, dtype=numpy.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise ArgumentTypeError(f"{what} must be an array of times in seconds: {exc}") from None
    if array.ndim != ndim:
        raise ValueError(f"{what} must be {ndim}-D, got an array of shape {array.shape}")
    array.flags.writeable = False
    return array


class BenchmarkResult:
    """The times of one :func:`benchmark` run: per repeat, the CPU time of the call and the GPU
    time between the events recorded around it on each device's stream.

    :func:`benchmark` returns one; it can also be built from arrays (from a saved
    :meth:`to_dict`, for instance). Printing it gives one line, the name padded to 20
    characters and then, for the CPU and each GPU, the mean +/- standard deviation and the
    minimum and maximum in microseconds (one line, shown here on two)::

        add                 :    CPU:    44.407 us +/-  2.428 (min:    42.516 / max:    53.098) us
            GPU-0:    50.123 us +/-  2.500 (min:    48.000 / max:    60.000) us

    Parameters
    ----------
    name : str
        What was timed.
    cpu_times : array_like
        CPU time of each repeat, in seconds (1-D, at least one).
    gpu_times : array_like
        GPU time of each repeat on each device, in seconds: shape (number of devices, number of
        repeats).
    devices : sequence of int, optional
        The device id of each row of ``gpu_times`` (default ``0, 1, ...``).

    Raises
    ------
    TypeError
        If ``name`` is not a str, or the times are not arrays of numbers.
    ValueError
        If the shapes disagree, there is no repeat, or ``devices`` does not give one id per row.
    """

    __slots__ = ("_name", "_cpu", "_gpu", "_devices")

    def __init__(self, name: str, cpu_times: npt.ArrayLike, gpu_times: npt.ArrayLike,
                 devices: Sequence[int] | None = None) -> None:
        if not isinstance(name, str):
            raise TypeError(f"BenchmarkResult: name must be a str, not {_type_name(name)}")
        cpu = _times(cpu_times, "BenchmarkResult: cpu_times", 1)
        gpu = _times(gpu_times, "BenchmarkResult: gpu_times", 2)
        if cpu.shape[0] == 0:
            raise ValueError("BenchmarkResult: cpu_times must hold at least one repeat")
        if gpu.shape[1] != cpu.shape[0]:
            raise ValueError(f"BenchmarkResult: gpu_times must have one column per repeat "
                             f"({cpu.shape[0]}), got shape {gpu.shape}")
        if devices is None:
            ids = tuple(range(gpu.shape[0]))
        else:
            if isinstance(devices, (str, bytes)) or not isinstance(devices, Sequence):
                raise TypeError(f"BenchmarkResult: devices must be a sequence of device ids or "
                                f"None, not {_type_name(devices)}")
            ids = tuple(check_int(d, f"BenchmarkResult: devices[{i}]", 0)
                        for i, d in enumerate(devices))
            if len(ids) != gpu.shape[0]:
                raise ValueError(f"BenchmarkResult: devices must give one id per row of "
                                 f"gpu_times ({gpu.shape[0]}), got {len(ids)}")
        self._name = name
        self._cpu = cpu
        self._gpu = gpu
        self._devices = ids

    @property
    def name(self) -> str:
        """What was timed (by default the function's ``__name__``)."""
        return self._name

    @property
    def cpu_times(self) -> _FloatArray:
        """CPU time of each repeat, in seconds: a read-only 1-D float64 array."""
        return self._cpu

    @property
    def gpu_times(self) -> _FloatArray:
        """GPU time of each repeat on each device, in seconds: a read-only float64 array of
        shape (number of devices, number of repeats)."""
        return self._gpu

    @property
    def devices(self) -> tuple[int, ...]:
        """The device id of each row of :attr:`gpu_times`."""
        return self._devices

    @property
    def n_repeat(self) -> int:
        """The number of repeats timed: ``n_repeat``, or fewer where ``max_duration`` ended
        the run early."""
        return int(self._cpu.shape[0])

    def percentile(self, q: npt.ArrayLike) -> _FloatArrays:
        """The ``q``-th percentiles of the CPU and GPU times, in seconds:
        ``cpu, gpu = result.percentile([50, 90, 99])``.

        Parameters
        ----------
        q : float or sequence of float
            Percentiles between 0 and 100 (50 is the median), as ``numpy.percentile``
            takes them.

        Returns
        -------
        tuple of numpy.ndarray
            ``(cpu, gpu)``: ``cpu`` has the shape of ``q`` (a 0-d array for a number:
            ``float(cpu)`` is the value), ``gpu`` the shape ``(number of devices,) + shape of
            q``, so that ``gpu[i]`` is device ``devices[i]``'s.

        Raises
        ------
        TypeError
            If ``q`` is not a number or a sequence of numbers.
        ValueError
            If a percentile is outside [0, 100] (or NaN).
        """
        try:
            if q is None:  # numpy would read it as NaN
                raise TypeError("got None")
            qs = numpy.array(q, dtype=numpy.float64)
        except (TypeError, ValueError) as exc:
            raise ArgumentTypeError(f"percentile(): q must be a number or a sequence of "
                                    f"numbers: {exc}") from None
        if not numpy.all((qs >= 0) & (qs <= 100)):  # NaN fails both
            raise ValueError(f"percentile(): q must be between 0 and 100, got {q!r}")
        cpu = numpy.asarray(numpy.percentile(self._cpu, qs), dtype=numpy.float64)
        # numpy puts the percentiles' axes first; the devices come first here, as in gpu_times.
        gpu = numpy.moveaxis(numpy.percentile(self._gpu, qs, axis=1), -1, 0)
        return cpu, numpy.ascontiguousarray(gpu, dtype=numpy.float64)

    def to_dict(self) -> dict[str, Any]:
        """The result in plain Python types (for JSON): ``name``, ``n_repeat``, ``devices``
        (list of ids), ``cpu_times`` (list of seconds), ``gpu_times`` (one such list per device),
        and the summary statistics in seconds, ``cpu`` (a dict of ``mean``, ``std``, ``min``,
        ``max``, ``median``) and ``gpu`` (one such dict per device, with its ``device`` id).

        ``BenchmarkResult(d["name"], d["cpu_times"], d["gpu_times"], d["devices"])`` builds the
        result again."""
        return {
            "name": self._name,
            "n_repeat": self.n_repeat,
            "devices": list(self._devices),
            "cpu_times": self._cpu.tolist(),
            "gpu_times": self._gpu.tolist(),
            "cpu": _summary(self._cpu),
            "gpu": [{"device": d, **_summary(row)} for d, row in zip(self._devices, self._gpu)],
        }

    def __str__(self) -> str:
        items = [_item("CPU", self._cpu)]
        items += [_item(f"GPU-{d}", row) for d, row in zip(self._devices, self._gpu)]
        return f"{self._name:<20}:" + "".join(items)

    __repr__ = __str__  # what an interactive session shows, as CuPy's result does


def _summary(times: _FloatArray) -> dict[str, float]:
    return {key: float(fn(times)) for key, fn in _STATS}


def _item(label: str, times: _FloatArray) -> str:
    us = times * 1e6
    return (f"    {label}: {us.mean():9.3f} us +/- {us.std():6.3f} "
            f"(min: {us.min():9.3f} / max: {us.max():9.3f}) us")


def _name_of(func: Callable[..., Any]) -> str:
    name = getattr(func, "__name__", None)
    return name if isinstance(name, str) else type(func).__name__


def benchmark(func: Callable[..., Any], args: Sequence[Any] = (),
              kwargs: Mapping[str, Any] = {},  # never changed: copied into a new dict
              n_repeat: int = 10000, *, name: str | None = None, n_warmup: int = 10,
              max_duration: float = float("inf"), devices: Sequence[int] | None = None,
              stream: Any = None) -> BenchmarkResult:
    """Time ``func(*args, **kwargs)`` on the CPU and on the GPU, CuPy's
    ``cupyx.profiler.benchmark`` with one more argument, ``stream``.

    ``func`` is called ``n_warmup`` times untimed, then up to ``n_repeat`` times timed. Each
    timed call gets its CPU time from the monotonic clock read just before and just after it
    (``time.perf_counter``'s), and its GPU time from a pair of events recorded on each timed
    stream before and after it; the end event is waited for after every call, so each GPU time
    is that call's work alone. The run stops early once ``max_duration`` seconds have passed
    since the first timed call. Nothing is allocated while timing: the arrays and the events are
    made first, and the events are destroyed on every path. Whatever ``func`` raises
    propagates, once the events are destroyed.

    Example::

        from cuda_core.utils import benchmark

        result = benchmark(launch, (stream, config, kernel, buf, n), n_repeat=1000,
                           stream=stream)
        print(result)                       # mean +/- std (min / max), CPU and GPU
        cpu_p99, gpu_p99 = result.percentile(99)

    .. note:: Calls ``cuEventCreate``, then per repeat ``cuEventRecord`` twice,
       ``cuEventSynchronize`` and ``cuEventElapsedTime`` on each stream, and finally
       ``cuEventDestroy``.

    Parameters
    ----------
    func : callable
        What to time.
    args : tuple or sequence, optional
        Positional arguments of ``func``.
    kwargs : mapping, optional
        Keyword arguments of ``func`` (str keys).
    n_repeat : int, optional
        The most timed calls, at least 1 (default 10000).
    name : str, optional
        The result's name (default ``func.__name__``).
    n_warmup : int, optional
        Untimed calls first, 0 or more (default 10).
    max_duration : float, optional
        Stop once this many seconds have passed (a positive number, default ``inf``).
    devices : tuple of int, optional
        The devices whose default stream (``Device.default_stream``, in the device's primary
        context) the events are recorded on. None (the default): the current device, on the
        default stream of the context current on this thread, or of device 0's primary context
        where none is current (``Device()``'s rule).
    stream : Stream or object with ``__cuda_stream__``, optional
        The stream to record the events on instead: pass the stream ``func`` queues its work
        on (the default streams see the work of other streams only where those are blocking
        streams). ``devices`` must then be None or name the stream's device.

    Returns
    -------
    BenchmarkResult
        ``cpu_times`` has one time per timed call, ``gpu_times`` one row per device.

    Raises
    ------
    TypeError
        If ``func`` is not callable, or an argument has the wrong type.
    ValueError
        If ``n_repeat`` < 1, ``n_warmup`` < 0, ``max_duration`` is not positive, ``devices`` is
        empty, repeats an id or names a device this machine lacks, or does not match ``stream``.
    CUDAError
        If there is no driver or no GPU (the message names which), or a driver call fails.
    RuntimeError
        If ``stream`` is closed or capturing a graph.
    """
    if not callable(func):
        raise TypeError(f"benchmark(): func must be callable, not {_type_name(func)}")
    if args is None:
        args = ()
    elif type(args) is not tuple:
        if isinstance(args, (str, bytes, bytearray)) or not isinstance(args, Sequence):
            raise TypeError(f"benchmark(): args must be a tuple (or another sequence) of "
                            f"func's positional arguments, not {_type_name(args)}")
        args = tuple(args)
    if kwargs is None:
        kwargs = {}
    elif not isinstance(kwargs, Mapping):
        raise TypeError(f"benchmark(): kwargs must be a mapping of func's keyword arguments, "
                        f"not {_type_name(kwargs)}")
    kw = dict(kwargs)
    for key in kw:
        if not isinstance(key, str):
            raise TypeError(f"benchmark(): kwargs keys must be str, got {key!r}")
    repeats = check_int(n_repeat, "benchmark(): n_repeat", 1, sys.maxsize)
    warmups = check_int(n_warmup, "benchmark(): n_warmup", 0, sys.maxsize)
    if isinstance(max_duration, bool) or not isinstance(max_duration, numbers.Real):
        raise TypeError(f"benchmark(): max_duration must be a number of seconds, not "
                        f"{_type_name(max_duration)}")
    duration = float(max_duration)
    if math.isnan(duration) or duration <= 0:
        raise ValueError(f"benchmark(): max_duration must be > 0 (seconds; float('inf') for no "
                         f"limit), got {max_duration!r}")
    if name is None:
        name = _name_of(func)
    elif not isinstance(name, str):
        raise TypeError(f"benchmark(): name must be a str or None, not {_type_name(name)}")
    ids: tuple[int, ...] | None = None
    if devices is not None:
        if isinstance(devices, (str, bytes)) or not isinstance(devices, Sequence):
            raise TypeError(f"benchmark(): devices must be a tuple of device ids or None, not "
                            f"{_type_name(devices)}")
        ids = tuple(check_int(d, f"benchmark(): devices[{i}]", 0, 0x7FFFFFFF)
                    for i, d in enumerate(devices))
        if not ids:
            raise ValueError("benchmark(): devices must name at least one device (or be None "
                             "for the current one)")
        if len(set(ids)) != len(ids):
            raise ValueError(f"benchmark(): devices names a device twice: {ids}")
    if stream is not None and not hasattr(type(stream), "__cuda_stream__"):
        raise TypeError(f"benchmark(): stream must be a Stream, an object with "
                        f"__cuda_stream__, or None, not {_type_name(stream)}")
    cpu, gpu, timed = _benchmark_loop.run(func, args, kw, repeats, warmups, duration, ids,
                                          stream)
    return BenchmarkResult(name, cpu, gpu, timed)
