"""Pool IPC without a GPU: the allocation handle and buffer descriptor objects, their pickles,
the registry of mapped resources, the argument checks made before any driver call, Buffer's IPC
members on buffers that are not shareable, and what ``import cuda_core`` loads (CPU)."""

import copy
import gc
import inspect
import os
import pathlib
import pickle
import re
import threading
import uuid
import warnings
import weakref
from multiprocessing import reduction

import pytest

from helpers import run_python
from helpers.ipc import assert_fds_back, open_fds, prime
from helpers.memory import NumpyMemoryResource

import cuda_core
from cuda_core import (LEGACY_DEFAULT_STREAM, Buffer, DeviceMemoryResource, MemoryResource,
                       PinnedMemoryResource)
from cuda_core._memory import _ipc, _ipc_base, _mempool
from cuda_core._memory._ipc_base import IPCAllocationHandle, IPCBufferDescriptor

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAYLOAD = bytes(range(64))


def _devnull():
    return os.open(os.devnull, os.O_RDONLY)


def _is_open(fd):
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def fp_dumps(obj):
    """``ForkingPickler.dumps(obj)`` (what Queues and Pipes use), without the once-per-process
    warning about the platform's default ``fork`` start method (tests/test_mp_cpu.py tests it)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="cuda_core: an IPC object", category=UserWarning)
        return reduction.ForkingPickler.dumps(obj)


class Reduced:
    """Pickles as ``func(*args)``: a crafted pickle, as a hostile peer could write one."""

    def __init__(self, func, *args):
        self.func = func
        self.args = args

    def __reduce__(self):
        return self.func, self.args


# -- the classes ----------------------------------------------------------------------------


@pytest.mark.parametrize("cls, hint", [(IPCAllocationHandle, "allocation_handle"),
                                       (IPCBufferDescriptor, "Buffer.ipc_descriptor")])
def test_not_constructible(cls, hint):
    with pytest.raises(RuntimeError, match=f"cannot be created directly; use .*{hint}"):
        cls()


def test_refused_construction_closes_no_descriptor():
    # An object that was never given a file descriptor owns none: finalizing it after a refused
    # construction, or after a bare __new__, must not close fd 0. (It once did: the finalizer
    # closed what later became the driver's own descriptor, and the process crashed.)
    code = (
        "import gc, os, warnings\n"
        "warnings.simplefilter('error')\n"
        "from cuda_core._memory._ipc_base import IPCAllocationHandle, IPCBufferDescriptor\n"
        "r, w = os.pipe()\n"
        "os.dup2(r, 0)\n"
        "for cls in (IPCAllocationHandle, IPCBufferDescriptor):\n"
        "    try:\n"
        "        cls()\n"
        "    except RuntimeError:\n"
        "        pass\n"
        "    obj = cls.__new__(cls)\n"
        "    if cls is IPCAllocationHandle:  # a closable resource; the descriptor is data\n"
        "        obj.close()\n"
        "    del obj\n"
        "    obj = cls.__new__(cls)\n"
        "    del obj\n"
        "gc.collect()\n"
        "print(os.fstat(0).st_ino == os.fstat(r).st_ino)\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True"], result.stderr


def test_weakref_able():
    h = IPCAllocationHandle._init(_devnull())
    d = IPCBufferDescriptor._init(PAYLOAD, 8)
    assert weakref.ref(h)() is h and weakref.ref(d)() is d
    h.close()


def test_import_loads_the_ipc_modules_and_no_multiprocessing_socket_or_uuid():
    code = (
        "import sys\n"
        "import cuda_core\n"
        "from cuda_core import Buffer\n"
        "mods = ('cuda_core._memory._ipc', 'cuda_core._memory._ipc_base',\n"
        "        'cuda_core._memory._ipc_table', 'cuda_core._memory._peer_access')\n"
        "print(all(m in sys.modules for m in mods))\n"
        "print(sorted(m for m in ('multiprocessing', 'socket', 'uuid') if m in sys.modules))\n"
        "try:\n"
        "    Buffer.from_handle(0x1000, 8).ipc_descriptor\n"
        "except RuntimeError as exc:\n"
        "    print('not IPC-enabled' in str(exc))\n"
        "print(sorted(m for m in ('multiprocessing', 'socket', 'uuid') if m in sys.modules))\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:4] == ["True", "[]", "True", "[]"]


def test_nothing_calls_multicast():
    # NVLink multicast can take a shared machine's GPUs out of service: never used.
    hits = []
    for folder in ("cuda_core", "examples", "benchmarks"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".pyx", ".pxd", ".pxi", ".py") and path.is_file():
                if re.search(r"\bcuMulticast", path.read_text(encoding="utf-8")):
                    hits.append(str(path.relative_to(ROOT)))
    assert not hits


# -- IPCAllocationHandle ------------------------------------------------------------------


@pytest.mark.parametrize("fd, exc", [(-1, ValueError), (1 << 40, ValueError), (True, TypeError),
                                     ("3", TypeError), (3.0, TypeError), (None, TypeError)])
def test_handle_init_checks_the_descriptor(fd, exc):
    with pytest.raises(exc, match="handle must be a file descriptor"):
        IPCAllocationHandle._init(fd)


def test_handle_init_checks_the_uuid():
    fd = _devnull()
    try:
        with pytest.raises(TypeError, match="uuid must be a uuid.UUID or None, not str"):
            IPCAllocationHandle._init(fd, str(uuid.uuid4()))
        assert _is_open(fd)  # refused before taking it over
    finally:
        os.close(fd)


def test_handle_owns_its_descriptor():
    u = uuid.uuid4()
    fd = _devnull()
    h = IPCAllocationHandle._init(fd, u)
    assert int(h) == h.handle == fd and h.uuid == u and not h.is_closed
    assert repr(h) == f"<IPCAllocationHandle fd={fd} uuid={u}>"
    h.close()
    assert h.is_closed and not _is_open(fd)
    h.close()  # idempotent
    assert repr(h) == "<IPCAllocationHandle closed>"
    # As cuda.core 1.2.2 (int()); ours also for .handle (1.2.2 returns -1 there).
    with pytest.raises(ValueError, match="closed"):
        int(h)
    with pytest.raises(ValueError, match="closed"):
        h.handle
    assert h.uuid == u


def test_handle_finalizer_closes_the_descriptor():
    fd = _devnull()
    h = IPCAllocationHandle._init(fd)
    assert h.uuid is None
    del h
    gc.collect()
    assert not _is_open(fd)


def test_handle_refuses_plain_pickle():
    h = IPCAllocationHandle._init(_devnull())
    with pytest.raises(TypeError, match="only multiprocessing can send"):
        pickle.dumps(h)
    with pytest.raises(TypeError, match="only multiprocessing can send"):
        copy.copy(h)
    h.close()


def test_handle_through_the_multiprocessing_pickler():
    prime()  # the resource sharer's socket and thread exist before the baseline
    gc.collect()
    before = open_fds()
    for _ in range(20):
        u = uuid.uuid4()
        h = IPCAllocationHandle._init(_devnull(), u)
        back = pickle.loads(fp_dumps(h))
        assert type(back) is IPCAllocationHandle and back.uuid == u
        assert back.handle != h.handle and _is_open(back.handle)
        assert os.path.samestat(os.fstat(back.handle), os.fstat(h.handle))
        h.close()
        assert _is_open(back.handle)  # the receiver's own descriptor
        back.close()
    gc.collect()
    assert_fds_back(before, open_fds())


def test_closed_handle_is_not_sent():
    h = IPCAllocationHandle._init(_devnull())
    h.close()
    with pytest.raises(RuntimeError, match="closed"):
        fp_dumps(h)


# -- IPCBufferDescriptor ------------------------------------------------------------------


def test_descriptor_round_trip():
    d = IPCBufferDescriptor._init(PAYLOAD, 1 << 20)
    assert d.size == 1 << 20 and repr(d) == "<IPCBufferDescriptor pool size=1048576>"
    for dumps in (pickle.dumps, fp_dumps):
        back = pickle.loads(dumps(d))
        assert type(back) is IPCBufferDescriptor and back.size == d.size
        assert back.__reduce__()[1] == (PAYLOAD, 1 << 20)
        assert back != d  # identity, as cuda.core
    assert copy.deepcopy(d).__reduce__()[1] == (PAYLOAD, 1 << 20)


@pytest.mark.parametrize("payload, size, exc, text", [
    (PAYLOAD[:63], 8, ValueError, "payload is 64 bytes, not 63"),
    (PAYLOAD + b"x", 8, ValueError, "payload is 64 bytes, not 65"),
    (b"", 8, ValueError, "not 0"),
    (PAYLOAD.decode("latin-1"), 8, TypeError, "payload must be bytes, not str"),
    (bytearray(PAYLOAD), 8, TypeError, "payload must be bytes, not bytearray"),
    (PAYLOAD, 0, ValueError, "size must be between 1 and"),
    (PAYLOAD, -1, ValueError, "size must be between 1 and"),
    (PAYLOAD, 1 << 64, ValueError, "size must be between 1 and"),
    (PAYLOAD, True, TypeError, "size must be an int, not bool"),
    (PAYLOAD, 8.0, TypeError, "size must be an int, not float"),
])
def test_descriptor_init_and_crafted_pickles_are_checked(payload, size, exc, text):
    with pytest.raises(exc, match=text):
        IPCBufferDescriptor._init(payload, size)
    # The pickle a hostile peer would write: refused at loads, before any driver call.
    rebuild = IPCBufferDescriptor._init(PAYLOAD, 8).__reduce__()[0]
    crafted = pickle.dumps(Reduced(rebuild, payload, size))
    with pytest.raises(exc, match=text):
        pickle.loads(crafted)


# -- the registry ---------------------------------------------------------------------------


class Dummy:
    """Stands for a mapped resource in the registry."""


def test_registry_put_get_drop():
    key = uuid.uuid4()
    a, b = Dummy(), Dummy()
    assert _ipc_base._registry_get(key) is None
    assert _ipc_base._registry_put(key, a) is a
    assert _ipc_base._registry_get(key) is a
    assert _ipc_base._registry_put(key, b) is a  # the live one stays
    _ipc_base._registry_drop(key, b)  # not what the key names: nothing happens
    assert _ipc_base._registry_get(key) is a
    _ipc_base._registry_drop(key, a)
    assert _ipc_base._registry_get(key) is None
    assert _ipc_base._registry_put(key, b) is b
    _ipc_base._registry_drop(key, b)


def test_registry_holds_weak_references():
    key = uuid.uuid4()
    a = Dummy()
    size = _ipc_base._registry_size()
    _ipc_base._registry_put(key, a)
    assert _ipc_base._registry_size() == size + 1
    del a
    gc.collect()
    assert _ipc_base._registry_get(key) is None  # and the dead entry is dropped
    assert _ipc_base._registry_size() == size
    b = Dummy()
    assert _ipc_base._registry_put(key, b) is b  # a dead entry does not block a new one
    _ipc_base._registry_drop(key, b)


def test_registry_from_threads():
    keys = [uuid.uuid4() for _ in range(4)]
    errors = []
    start = threading.Barrier(8)

    def hammer(i):
        try:
            start.wait()
            mine = Dummy()
            for n in range(1000):
                key = keys[(i + n) % len(keys)]
                got = _ipc_base._registry_put(key, mine)
                assert isinstance(got, Dummy)  # this thread's, or the one registered before
                seen = _ipc_base._registry_get(key)
                assert seen is None or isinstance(seen, Dummy)
                _ipc_base._registry_drop(key, got)
        except BaseException as exc:  # re-raised in the main thread below
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors
    gc.collect()
    for key in keys:
        assert _ipc_base._registry_get(key) is None


def test_from_registry():
    key = uuid.uuid4()
    with pytest.raises(RuntimeError, match=r"from_registry\(\): no memory resource is registered "
                                           r"under '[0-9a-f-]+': the keys are uuid.UUID, not str"):
        DeviceMemoryResource.from_registry(str(key))
    with pytest.raises(TypeError, match="unhashable"):  # as cuda.core's lookup
        DeviceMemoryResource.from_registry([])
    with pytest.raises(RuntimeError, match=f"no mapped memory resource with uuid {key} in this "
                                           f"process; send the resource through multiprocessing"):
        DeviceMemoryResource.from_registry(key)
    other = Dummy()
    _ipc_base._registry_put(key, other)
    try:
        with pytest.raises(TypeError, match=f"registered under {key} is a Dummy, not a "
                                            f"PinnedMemoryResource"):
            PinnedMemoryResource.from_registry(key)
    finally:
        _ipc_base._registry_drop(key, other)


def test_plain_pickle_of_a_resource_needs_the_registry():
    # A resource pickles as (class, uuid); it unpickles only where that uuid is registered.
    key = uuid.uuid4()
    crafted = pickle.dumps(Reduced(_ipc._mr_from_registry, DeviceMemoryResource, key))
    with pytest.raises(RuntimeError, match=f"no mapped memory resource with uuid {key}"):
        pickle.loads(crafted)


# -- the import tables, over a stand-in driver ------------------------------------------------

_TABLES = r"""
import threading
from cuda_core._memory import _ipc_table as t

t._use_fake_driver()  # this process only: pools and pointers of a stand-in driver


def key(alloc, salt=0):  # the stand-in maps the first 8 bytes to one address per allocation
    return alloc.to_bytes(8, "little") + bytes([salt]) * 56


a, b, other = t._TablePool(5), t._TablePool(5), t._TablePool(6)
assert a.same_pool(b) and not a.same_pool(other)  # one state per driver pool
assert a.stats() == (2, 0, 0, 2, False), a.stats()
assert t._fake_counts() == (3, 0, 0, 0)

err, p1, end, ordinal = a.import_(key(1))
assert err == 0 and end == p1 + 0x8000 and ordinal == 0
assert b.import_(key(1)) == (0, p1, end, 0)  # the same allocation: shared, counted
assert a.stats() == (2, 1, 2, 2, False) and t._fake_counts()[2] == 1
# Another descriptor the driver maps to the same address: the same mapping.
assert a.import_(key(1, salt=9))[1] == p1 and a.stats() == (2, 1, 3, 2, False)
assert a.import_(bytes(64))[0] == 1  # refused (CUDA_ERROR_INVALID_VALUE): nothing recorded
assert a.stats() == (2, 1, 3, 2, False)
assert a.release(p1) == (0, True) and a.release(p1) == (0, True)
assert t._fake_counts()[3] == 0  # still in use: not freed
assert a.release(p1) == (0, True) and t._fake_counts()[3] == 1  # the last reference frees
assert a.release(p1) == (0, False) and a.release(12345) == (0, False)
assert a.import_(key(1))[1] == p1 and t._fake_counts()[2] == 3  # imported afresh
# Both resources detached while a buffer is open: the pool stays until its last release.
assert a.detach() == 0 and b.detach() == 0
assert a.stats() == (0, 1, 1, 2, False) and t._fake_counts()[1] == 0
assert a.release(p1) == (0, True)
assert a.stats() == (0, 0, 0, 2, True) and t._fake_counts()[1] == 1
assert a.import_(key(2))[0] == 400  # CUDA_ERROR_INVALID_HANDLE: the pool is gone
again = t._TablePool(5)  # the same fd after the pool was destroyed: a new state
assert not again.same_pool(a) and again.stats() == (1, 0, 0, 1, False)

_, _, imports, frees = t._fake_counts()
errors = []
start = threading.Barrier(8)


def work(i):
    try:
        start.wait()
        for n in range(2000):
            err, p, _, _ = again.import_(key(1 + (i + n) % 3))
            assert err == 0, err
            err, found = again.release(p)
            assert err == 0 and found, (err, found)
    except BaseException as exc:
        errors.append(repr(exc))


threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
for th in threads:
    th.start()
for th in threads:
    th.join(120)
assert not any(th.is_alive() for th in threads)
assert not errors, errors[:3]
assert again.stats() == (1, 0, 0, 1, False), again.stats()
counts = t._fake_counts()
assert counts[2] - imports == counts[3] - frees > 0, counts  # every import freed once
print("ok")
"""


def test_import_tables_over_a_stand_in_driver():
    # The C++ of _ipc_table (shared pools, counted imports, the last release frees, the pool
    # destroyed once unused, 8 threads at once) driven through its test hook, in a process of
    # its own: the stand-in driver replaces the real one there for good.
    result = run_python(_TABLES)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# -- checks made before any driver call ---------------------------------------------------


@pytest.mark.parametrize("handle, exc", [(True, TypeError), ("3", TypeError), (None, TypeError),
                                         (-1, ValueError), (1 << 40, ValueError)])
def test_from_allocation_handle_checks_the_handle_first(handle, exc):
    with pytest.raises(exc, match=r"from_allocation_handle\(\): alloc_handle must be a file "
                                  r"descriptor"):
        DeviceMemoryResource.from_allocation_handle(0, handle)
    with pytest.raises(exc, match=r"PinnedMemoryResource.from_allocation_handle\(\): "
                                  r"alloc_handle"):
        PinnedMemoryResource.from_allocation_handle(handle)


def test_from_allocation_handle_refuses_a_closed_handle():
    h = IPCAllocationHandle._init(_devnull())
    h.close()
    with pytest.raises(RuntimeError, match="this IPCAllocationHandle is closed"):
        DeviceMemoryResource.from_allocation_handle(0, h)


def test_signatures_are_cuda_cores():
    core = pytest.importorskip("cuda.core")

    def shape(fn):
        return [(p.name, p.kind.name, p.default)
                for p in inspect.signature(fn).parameters.values()]

    assert shape(Buffer.from_ipc_descriptor) == shape(core.Buffer.from_ipc_descriptor)
    assert shape(DeviceMemoryResource.from_allocation_handle) == [
        ("device_id", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty),
        ("alloc_handle", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty)]
    assert shape(DeviceMemoryResource.from_allocation_handle) == shape(
        core.DeviceMemoryResource.from_allocation_handle)
    assert shape(PinnedMemoryResource.from_allocation_handle) == shape(
        core.PinnedMemoryResource.from_allocation_handle)
    for cls, theirs in ((DeviceMemoryResource, core.DeviceMemoryResource),
                        (PinnedMemoryResource, core.PinnedMemoryResource)):
        for name in ("register", "from_registry"):
            assert [p for p in shape(getattr(cls, name)) if p[0] != "self"] == \
                [p for p in shape(getattr(theirs, name)) if p[0] != "self"], name
        for name in ("allocation_handle", "uuid", "is_mapped", "is_ipc_enabled"):
            assert isinstance(inspect.getattr_static(theirs, name), property) or \
                hasattr(theirs, name), name
            assert hasattr(cls, name), name
    for name in ("ipc_descriptor", "is_mapped"):
        assert isinstance(inspect.getattr_static(Buffer, name), type(Buffer.size)), name


def test_from_ipc_descriptor_argument_checks():
    mr = NumpyMemoryResource()
    desc = IPCBufferDescriptor._init(PAYLOAD, 8)
    with pytest.raises(TypeError, match="stream"):  # required
        Buffer.from_ipc_descriptor(mr, desc)
    with pytest.raises(TypeError):  # keyword-only
        Buffer.from_ipc_descriptor(mr, desc, LEGACY_DEFAULT_STREAM)
    with pytest.raises(TypeError, match=r"from_ipc_descriptor\(\): ipc_descriptor must be an "
                                        r"IPCBufferDescriptor, not bytes"):
        Buffer.from_ipc_descriptor(mr, PAYLOAD, stream=LEGACY_DEFAULT_STREAM)
    with pytest.raises(TypeError, match=r"mr must be a DeviceMemoryResource or "
                                        r"PinnedMemoryResource .*not NumpyMemoryResource"):
        Buffer.from_ipc_descriptor(mr, desc, stream=LEGACY_DEFAULT_STREAM)
    assert not mr.calls and not mr.live


# -- Buffer's IPC members on buffers that cannot be shared ------------------------------


def test_view_and_python_resource_buffers_are_not_shareable():
    mr = NumpyMemoryResource()
    buf = mr.allocate(16)
    view = Buffer.from_handle(buf.handle, 16)
    kept = Buffer.from_handle(buf.handle, 16, owner=mr)
    for b in (buf, view, kept):
        with pytest.raises(RuntimeError, match="Buffer.ipc_descriptor: the buffer's memory "
                                               "resource is not IPC-enabled"):
            b.ipc_descriptor
        # As cuda.core 1.2.2: a RuntimeError (also the AttributeError cuda.core raises for a
        # resource without IPC), naming what makes a buffer picklable.
        for how in (pickle.dumps, copy.copy, copy.deepcopy, fp_dumps):
            with pytest.raises(RuntimeError, match="only buffers of an IPC-enabled memory "
                                                   "resource can be pickled .*ipc_enabled=True"
                               ) as info:
                how(b)
            assert isinstance(info.value, AttributeError)
        assert b.is_mapped is False
    assert not buf.is_closed and not mr.calls  # untouched
    buf.close()
    with pytest.raises(RuntimeError, match="this Buffer is closed"):
        buf.ipc_descriptor
    with pytest.raises(RuntimeError, match="this Buffer is closed"):
        pickle.dumps(buf)


def test_a_resource_that_only_claims_ipc_is_refused():
    class Claims(NumpyMemoryResource):
        is_ipc_enabled = True

    buf = Claims().allocate(8)
    with pytest.raises(TypeError, match="not allocated by an IPC-enabled pool or "
                                        "VirtualMemoryResource"):
        buf.ipc_descriptor
    with pytest.raises(RuntimeError, match="only buffers of an IPC-enabled memory resource"):
        pickle.dumps(buf)


def test_resource_is_mapped_is_still_honoured():
    class Mapped(NumpyMemoryResource):
        is_mapped = True

    assert Mapped().allocate(8).is_mapped is True
    assert NumpyMemoryResource().allocate(8).is_mapped is False


@pytest.mark.parametrize("cls", [DeviceMemoryResource, PinnedMemoryResource])
def test_uninitialized_pool_resource(cls):
    # Made without __init__ (no driver needed): not IPC-enabled, so it neither pickles nor
    # shares.
    mr = cls.__new__(cls)
    assert mr.is_ipc_enabled is False and mr.is_mapped is False and mr.uuid is None
    # A RuntimeError, as cuda.core raises, and the TypeError pickle and copy expect.
    for how in (pickle.dumps, copy.copy, copy.deepcopy):
        with pytest.raises(RuntimeError, match=rf"{cls.__name__}.__reduce__: only an "
                           rf"IPC-enabled resource can be pickled \({cls.__name__}Options") as info:
            how(mr)
        assert isinstance(info.value, TypeError)
    with pytest.raises(TypeError, match="only an IPC-enabled resource"):
        fp_dumps(mr)
    with pytest.raises(RuntimeError, match="was not initialized"):
        mr.allocation_handle
    with pytest.raises(TypeError, match=r"register\(\): uuid must be a uuid.UUID, not str"):
        mr.register("x")  # the argument first
    with pytest.raises(RuntimeError, match="was not initialized"):
        mr.register(uuid.uuid4())
    assert mr._ipc_stats() is None


def test_docstrings_carry_the_trust_note():
    doc = inspect.getdoc(Buffer.from_ipc_descriptor)
    for part in ("Parameters", "Returns", "Raises", "Warnings", "trusts the process",
                 "never unpickle"):
        assert part in doc, part
    assert "from_ipc_descriptor" in inspect.getdoc(Buffer.__reduce__)
    assert "trusts the process" in inspect.getdoc(IPCBufferDescriptor) or \
        "Importing a descriptor trusts" in inspect.getdoc(IPCBufferDescriptor)
    assert "trusts the process" in inspect.getdoc(DeviceMemoryResource)
    for member in (DeviceMemoryResource.from_allocation_handle,
                   PinnedMemoryResource.from_allocation_handle, _mempool._MemPool.register,
                   _mempool._MemPool.from_registry):
        doc = inspect.getdoc(member)
        assert "Raises" in doc and "Returns" in doc, member
    for prop in ("allocation_handle", "uuid", "is_mapped"):
        assert inspect.getdoc(getattr(_mempool._MemPool, prop)), prop


def test_set_access_counter_hook():
    assert isinstance(_mempool._set_access_calls(), int)


def test_memory_resource_base_has_no_ipc_members():
    # Only the pool resources grew IPC members: a user's resource is untouched.
    for name in ("allocation_handle", "register", "from_registry", "from_allocation_handle"):
        assert not hasattr(MemoryResource, name), name
    assert cuda_core.DeviceMemoryResource is DeviceMemoryResource
