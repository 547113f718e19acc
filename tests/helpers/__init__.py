"""Shared test helpers: an independent GPU probe and a way to hold a stream back."""

import ctypes
import functools
import os
import subprocess
import sys
import tempfile
import threading

import pytest

# Under compute-sanitizer (tools/gpu/memcheck.sh sets CUDA_CORE_UNDER_SANITIZER=1) every process
# starts and runs several times slower: the time a test gives a child process stretches by this.
UNDER_SANITIZER = os.environ.get("CUDA_CORE_UNDER_SANITIZER") == "1"
SLOWDOWN = 5.0 if UNDER_SANITIZER else 1.0
# For a test that hides the GPUs from a child process (CUDA_VISIBLE_DEVICES=""): the sanitizer
# shows them to its children all the same (seen under memcheck on an H200).
skip_where_gpus_cannot_be_hidden = pytest.mark.skipif(
    UNDER_SANITIZER, reason="compute-sanitizer shows its child processes the GPU whatever "
                            "CUDA_VISIBLE_DEVICES says (seen under memcheck on an H200)")


@functools.lru_cache(maxsize=None)
def gpu_probe():
    """``(True, "")`` when a CUDA driver and at least one GPU are present, else
    ``(False, reason)``.

    Asks the driver directly through ctypes, not through cuda_core, so that a bug in the package
    can never turn GPU tests into skips.
    """
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return False, f"no NVIDIA driver: libcuda.so.1 cannot be loaded ({exc})"
    rc = lib.cuInit(0)
    if rc == 100:  # CUDA_ERROR_NO_DEVICE
        return False, "the NVIDIA driver reports no GPU (cuInit: CUDA_ERROR_NO_DEVICE)"
    if rc != 0:
        return False, f"cuInit failed with CUresult {rc}"
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return False, "the NVIDIA driver reports no GPU"
    return True, ""


def has_gpu():
    return gpu_probe()[0]


def eventually(predicate, timeout=10.0):
    """Whether ``predicate()`` becomes true within ``timeout`` seconds. For what the driver
    lets go on a thread of its own: a graph's user objects are released after the graph and
    its launches are gone, and the reference they held is dropped by the main thread at its
    next check for pending calls (which a sleep gives it)."""
    import gc
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        gc.collect()
        time.sleep(0.005)
    return True


def run_python(code, env=None, timeout=120):
    """Run ``code`` in a fresh interpreter, outside the source tree (whose ``cuda_core/`` would
    shadow the installed package); returns the CompletedProcess (text output)."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full_env, timeout=timeout * SLOWDOWN, cwd=tempfile.gettempdir())


def race_threads(work, n=16):
    """Run ``work(i)`` for ``i`` in ``range(n)`` on ``n`` threads that start together, with the
    interpreter switching threads as often as it can; returns the exceptions they raised."""
    barrier = threading.Barrier(n)
    errors = []

    def run(i):
        try:
            barrier.wait()
            work(i)
        except BaseException as exc:  # returned to the caller, which asserts on them
            errors.append(exc)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    return errors


class StreamGate:
    """Holds a stream back until ``open()``: the stream waits (cuStreamWaitValue32) on a word
    of mapped host memory that only the host writes. Lets tests see incomplete work without
    any kernel."""

    def __init__(self, stream):
        from cuda.bindings import driver

        self._driver = driver
        err, self._host = driver.cuMemHostAlloc(4, driver.CU_MEMHOSTALLOC_DEVICEMAP)
        assert err == driver.CUresult.CUDA_SUCCESS, err
        self._word = ctypes.c_uint32.from_address(int(self._host))
        self._word.value = 0
        err, self._dptr = driver.cuMemHostGetDevicePointer(self._host, 0)
        assert err == driver.CUresult.CUDA_SUCCESS, err
        (err,) = driver.cuStreamWaitValue32(
            int(stream.handle), self._dptr, 1,
            driver.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ)
        assert err == driver.CUresult.CUDA_SUCCESS, err

    def open(self):
        self._word.value = 1

    def close(self):
        self.open()
        self._driver.cuMemFreeHost(self._host)


def skip_if_driver_cannot_jit(ptx):
    """Skip (with the reason) when ``ptx`` comes from a compiler newer than the driver: its PTX
    ISA is then one the driver cannot JIT (CUDA_ERROR_UNSUPPORTED_PTX_VERSION)."""
    import re


    from cuda_core.system import get_user_mode_driver_version

    found = re.search(rb"Cuda compilation tools, release (\d+)\.(\d+)", bytes(ptx))
    if found is None:
        return
    made_by = (int(found.group(1)), int(found.group(2)))
    driver = get_user_mode_driver_version()
    if made_by > driver:
        pytest.skip(f"PTX from CUDA {made_by[0]}.{made_by[1]} tools cannot be loaded by this "
                    f"driver (CUDA {driver[0]}.{driver[1]})")


def wheel_include_dir(distribution, header):
    """The directory of ``header`` in the installed wheel ``distribution`` (a test dependency,
    pyproject.toml's test extra); fails the test, naming the wheel, when it is missing.

    Found through the wheel's file list, in sys.path order, so that a wheel installed with
    ``pip install --target`` and put first on PYTHONPATH is the one used.
    """
    from importlib import metadata

    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        pytest.fail(f"{header} not found: the {distribution} wheel is not installed; the tests "
                    f"need it (pip install '.[test]')", pytrace=False)
    for f in dist.files or ():
        if f.name == header and f.parent.name == "include":
            path = str(dist.locate_file(f))
            if os.path.isfile(path):
                return os.path.dirname(path)
    pytest.fail(f"{header} not found in the installed {distribution} {dist.version} wheel; the "
                f"tests need the CUDA headers it ships (pip install '.[test]')", pytrace=False)


def cuda_include_dir():
    """The CUDA headers NVRTC compiles the tests' kernels with (cuda_fp16.h): those of the
    nvidia-cuda-runtime wheel of the build's CUDA major (nvidia-cuda-runtime-cu12 for CUDA 12),
    a test dependency, so that no test is skipped for want of them."""
    return wheel_include_dir(runtime_wheel(), "cuda_fp16.h")


def runtime_wheel():
    """The pip name of the CUDA headers wheel of the installed build's CUDA major."""
    from cuda_core._build_config import CUDA_MAJOR

    return "nvidia-cuda-runtime-cu12" if CUDA_MAJOR == 12 else "nvidia-cuda-runtime"


def profiler_wheel():
    """The pip name of the cudaProfiler.h wheel of the installed build's CUDA major."""
    from cuda_core._build_config import CUDA_MAJOR

    return "nvidia-cuda-profiler-api-cu12" if CUDA_MAJOR == 12 else "nvidia-cuda-profiler-api"


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def malloc_in_use():
    """Bytes the C heap (glibc malloc) holds allocated: its arena chunks in use plus its
    mmap-ed blocks. Python's small objects come from pymalloc's own arenas, not from here."""
    libc = ctypes.CDLL(None)
    mallinfo2 = libc.mallinfo2  # glibc 2.33; this package supports Linux (glibc) only
    mallinfo2.restype = _Mallinfo2
    info = mallinfo2()
    return info.uordblks + info.hblkhd


def c_heap_growth(call, rounds):
    """How many bytes of C heap ``rounds`` calls of ``call`` leave allocated (after one call
    to warm caches up)."""
    import gc

    call()
    gc.collect()
    before = malloc_in_use()
    for _ in range(rounds):
        call()
    gc.collect()
    return malloc_in_use() - before


def assert_no_c_heap_leak(call, rounds, leak_per_call):
    """Fail if ``rounds`` calls of ``call`` keep a quarter of what leaking ``leak_per_call``
    bytes each time would keep. First checks, with real malloc'ed blocks of that size left
    allocated, that the measure sees such a leak at all."""
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    held = []
    try:
        seen = c_heap_growth(lambda: held.append(libc.malloc(leak_per_call)), rounds)
    finally:
        for p in held:
            libc.free(p)
    assert seen >= rounds * leak_per_call * 0.9, (
        f"the C heap measure does not see a leak: {rounds} blocks of {leak_per_call} bytes "
        f"showed as {seen} bytes")
    growth = c_heap_growth(call, rounds)
    assert growth < rounds * leak_per_call / 4, (
        f"{rounds} calls left {growth} bytes of C heap allocated (a leak of {leak_per_call} "
        f"bytes a call would be {rounds * leak_per_call})")


def has_cuda_13():
    """True where the driver is CUDA 13 or newer and this build was compiled for CUDA 13: a
    CUDA 12 build has no CUDA 13 entry points (batches, discards, the drivers' current pools),
    whatever the driver."""
    from cuda_core._build_config import CUDA_MAJOR
    from cuda_core.system import get_user_mode_driver_version

    return CUDA_MAJOR >= 13 and get_user_mode_driver_version() >= (13, 0)


def cu_ctx_create(device):
    """A new (not primary) context on ``device`` through cuda.bindings, current on return:
    CUDA 13's bindings take the creation parameters first, CUDA 12's do not."""
    import cuda.bindings
    from cuda.bindings import driver

    if int(cuda.bindings.__version__.split(".")[0]) >= 13:
        err, ctx = driver.cuCtxCreate(None, 0, device)
    else:
        err, ctx = driver.cuCtxCreate(0, device)
    assert err == driver.CUresult.CUDA_SUCCESS, err
    return ctx


def nvrtc_version():
    """The (major, minor) of the NVRTC the compiler tests use: the one Program loads."""
    from cuda_core._compiler_utils import nvrtc_version as of_the_package

    return of_the_package()


# The oldest NVRTC the compiler tests were checked with: 12.9 (CI's CUDA 12 build). NVRTC 12.6
# (the GPU machine's CUDA 12 run) has no precompiled headers, no sm_100, no -Ofast-compile=min,
# and its -fdevice-time-trace fails in ptxas ("could not be opened", for the trace's file).
CHECKED_NVRTC = (12, 9)


def skip_before_checked_nvrtc(what):
    """Skip a test of ``what`` on an NVRTC older than :data:`CHECKED_NVRTC`."""
    import pytest

    if nvrtc_version() < CHECKED_NVRTC:
        pytest.skip(f"{what}: NVRTC {nvrtc_version()} is older than the "
                    f"{CHECKED_NVRTC} the test was checked with")
