"""Lifetime stress programs: an interpreter that runs them, and the hypothesis strategies that
write them (issue 26, point 5).

A *program* is a JSON list of operations, each ``[name, arg, arg, ...]``. Every argument is a
small int. Where an operation's schema (the ``@op`` decorator below) names an object kind
(``"buf"``, ``"stream"``, ...), the int names a slot of that kind's table of live objects, taken
modulo the table's length; an operation whose table is empty is skipped. Otherwise the int is a
literal (a size index, a byte, a flag...), also taken modulo its range, so that any list of
ints is a valid program.

Run one program (the JSON on stdin)::

    python tests/helpers/lifetime.py < program.json     # from any directory
    cd tests && python -m helpers.lifetime < program.json

Run as a script, the script's own folder goes first on ``sys.path``, not the current directory,
so the source tree's ``cuda_core/`` (sources without compiled modules) never shadows the
installed package.

The interpreter prints one line per operation (its index, name, arguments and outcome: ``ok``,
``skip (why)`` or the exception's class and message), so that the output of a program that
died shows where. It catches the ordinary Python errors an API may raise on misuse
(``RuntimeError``, ``ValueError``, ``TypeError``, ``BufferError``, ``MemoryError``, ``OSError``,
``CUDAError``) and goes on; nothing else is caught, and a crash (a signal) simply ends the
process, which is what the test looks for. After every operation, the interpreter checks that
what live objects promise to keep alive is alive. After the last one comes the epilogue: the
captures still in progress are ended; every live executable graph, captured graph, definition
and driver-level clone is launched; every stream is synchronized, then the device; every live
kernel writes a distinct value into a live allocation (each gets one, and one more is allocated
here), and each is read back. Then the orphan phase: the interpreter forgets everything but the
executable graphs and clones (and host views), collects, checks again, and launches them once
more, so that they run on what cuda_core keeps for them alone.

Exit status: 0 when nothing was wrong; 3 when something was (a ``GARBAGE ...`` line says
what): a value read back differs from the one a kernel wrote, two live allocations overlap, or
an object that another live object promises to keep alive (a Kernel's ObjectCode, an owning
Buffer's memory resource, a view's owner, what a Graph's nodes use) was freed; 2 for a program
that is not a list of operations. Any other status, or a signal, is a crash.

What the interpreter plays: a careless user of everything cuda_core promises to own (it drops,
closes and collects objects in any order, on any thread), and a careful user of what it does
not promise: raw memory. It keeps the buffers a captured graph or a driver-level clone writes
(device memory is the caller's to keep there, as for ``launch()``), and it does not write
through memory it closed itself (a view whose owner was closed, a graph that uses a closed
buffer or event): the driver cannot refuse such a write, so its fault would be the program's.

Environment: ``CUDA_CORE_LIFETIME_CACHE`` (where the test kernel's cubin is cached, keyed by
architecture; default the temporary directory), ``CUDA_CORE_LIFETIME_WATCHDOG`` (seconds after
which every thread's stack is dumped to stderr, to show where a hang sits).
"""

import ctypes
import faulthandler
import gc
import hashlib
import json
import os
import pickle
import sys
import tempfile
import threading
import warnings
import weakref

# -- the operation registry -----------------------------------------------------------------------

#: The object kinds, each with its table of live objects in a program.
KINDS = ("stream", "event", "mr", "buf", "smv", "code", "kernel", "defn", "node", "builder",
         "graph", "clone", "prog", "linker", "arr", "hbuf", "hsmv")

#: Buffer sizes (the "size" literal indexes this). Sizes repeat, so that copies between
#: buffers of the same size are frequent; 0 and 4 are the edges (nothing, one int).
SIZES = (64, 256, 64, 4, 4096, 0)

#: The memory resources of ``mr_new`` (the "mrkind" literal indexes this).
MR_KINDS = ("default", "device_pool", "pinned", "managed", "legacy_pinned", "vmm")

#: Literal argument kinds and the number of values of each.
LITERALS = {"size": len(SIZES), "byte": 256, "val": 1024, "flag": 2, "mrkind": len(MR_KINDS),
            "target": 3, "arch": 3, "how": 3, "kind": len(KINDS), "slot": 8}

#: How many slots the strategies draw from: a table rarely holds more.
SLOT_RANGE = 8


class Op:
    """One operation: the function that runs it and the kinds of its arguments."""

    __slots__ = ("name", "fn", "schema", "gpu")

    def __init__(self, name, fn, schema, gpu):
        self.name, self.fn, self.schema, self.gpu = name, fn, schema, gpu


OPS = {}


def op(name, *schema, gpu=True):
    """Register ``fn(state, *args)`` as the operation ``name``. Each entry of ``schema`` is an
    object kind of :data:`KINDS` (the argument is a slot; the op is skipped when the table is
    empty), the same followed by ``?`` (None when the table is empty), or a literal kind of
    :data:`LITERALS`. ``gpu=False`` marks the operations that need no GPU or driver."""
    def register(fn):
        for kind in schema:
            assert kind.rstrip("?") in KINDS or kind in LITERALS, (name, kind)
        OPS[name] = Op(name, fn, schema, gpu)
        return fn
    return register


def closing_op(kind, gpu=True):
    """Register ``<kind>_close``: close the object; the program keeps its record."""
    op(f"{kind}_close", kind, gpu=gpu)(lambda state, rec: rec.obj.close())


def dropping_op(kind, gpu=True):
    """Register ``<kind>_drop``: the program's record, and with it its reference, goes."""
    op(f"{kind}_drop", kind, gpu=gpu)(lambda state, rec: state.remove(kind, rec))


class Skip(Exception):
    """An operation that does not apply (an empty table, memory the program freed itself)."""


# -- state ----------------------------------------------------------------------------------------

class Rec:
    """One live object in a table, with what the interpreter knows about it. A record holds
    strong references only to its object and, for captures and clones, to the memory the
    program must keep (``strong``): everything else is weak, so that dropping a record drops
    the program's last reference."""

    def __init__(self, rid, obj, **info):
        self.id = rid
        self.obj = obj
        self.__dict__.update(info)

    def __getattr__(self, name):  # the info fields a record was not given read as None
        return None


class Held:
    """A weak reference to an object that cuda_core promises to keep alive, with its name."""

    __slots__ = ("what", "ref")

    def __init__(self, what, obj):
        self.what = what
        self.ref = weakref.ref(obj)


class Hier:
    """The interpreter's mirror of one graph hierarchy (a GraphDefinition with its bodies and
    child copies, or a capture): per node, what cuda_core promises to hold for it (weak), the
    nodes inside a conditional node's bodies (forgotten with it), and the buffers the program
    itself keeps for captured work (``strong``)."""

    def __init__(self, root):
        self.root = root  # made by GraphDefinition(): closing it closes the store
        self.entries = {}
        self.children = {}
        self.strong = []
        self.closed = False

    def add(self, nid, held, parent=None):
        self.entries[nid] = list(held)
        if parent is not None:
            self.children.setdefault(parent, []).append(nid)

    def remove(self, nid):
        self.entries.pop(nid, None)
        for child in self.children.pop(nid, ()):
            self.remove(child)

    def snapshot(self, under=None):
        """What the nodes use: all of them, or those inside the bodies of node ``under`` (the
        graph of a body's view)."""
        if self.closed:
            return []
        if under is None:
            return [h for held in self.entries.values() for h in held]
        out = []
        for nid in self.children.get(under, ()):
            out += self.entries.get(nid, []) + self.snapshot(under=nid)
        return out


class State:
    """The tables of live objects and what the operations share."""

    def __init__(self):
        self.tables = {kind: [] for kind in KINDS}
        self.next_id = 0
        self.dev = None
        self.cfg = None
        self.cubin = None
        self.calls = []  # host callbacks append here: they must not call CUDA
        # id(child) -> (weakref(child), how it was made, weakref(parent)): views, exports,
        # wraps. Weak both ways, so the interpreter never extends a lifetime.
        self.lineage = {}
        self.thread_garbage = []
        self.made = []  # what the current operation added, for its line

    def add(self, kind, obj, **info):
        self.next_id += 1
        rec = Rec(self.next_id, obj, **info)
        self.tables[kind].append(rec)
        self.made.append(f"{kind}#{rec.id}")
        return rec

    def remove(self, kind, rec):
        table = self.tables[kind]
        for i, other in enumerate(table):
            if other is rec:
                del table[i]
                return

    def link(self, child, how, parent):
        self.lineage[id(child)] = (weakref.ref(child), how, weakref.ref(parent))

    def parent_of(self, obj):
        """``(how, weakref(parent))`` for a view, export or wrap made by the program, else
        None (an allocation, an array)."""
        entry = self.lineage.get(id(obj))
        if entry is None or entry[0]() is not obj:
            return None
        return entry[1], entry[2]


# cuda_core and NumPy are imported by main(), not at module level: the test process imports
# this module for the strategies only.
cc = None
np = None
driver = None
EXPECTED = (RuntimeError, ValueError, TypeError, BufferError, MemoryError, OSError)


def _import_cuda_core():
    global cc, np, driver, EXPECTED
    import numpy
    import cuda_core
    from cuda.bindings import driver as drv

    cc, np, driver = cuda_core, numpy, drv
    EXPECTED = EXPECTED + (cuda_core.CUDAError,)


# -- memory validity ------------------------------------------------------------------------------

def _closed(obj):
    try:
        return bool(obj.is_closed)
    except AttributeError:  # views and arrays are never closed
        return False


def memory_valid(state, obj, exported=False):
    """Whether the memory behind ``obj`` is still allocated, as far as the program knows: an
    open allocation is; a view is while it is open and its owner's memory is; a DLPack export
    keeps its buffer's memory even once the buffer is closed. ``exported``: ``obj`` is the
    buffer of such an export."""
    if _closed(obj) and not exported:
        return False
    lineage = state.parent_of(obj)
    if lineage is None:
        return True
    how, parent_ref = lineage
    parent = parent_ref()
    if parent is None:
        # The child lost its parent while open: an ownership defect that check_lost()
        # reports; the memory is not the program's fault.
        return True
    return memory_valid(state, parent, exported=(how == "dlpack"))


def root_of(state, obj):
    """The allocation (or array) at the end of ``obj``'s lineage, or None when a link is gone."""
    while True:
        lineage = state.parent_of(obj)
        if lineage is None:
            return obj
        obj = lineage[1]()
        if obj is None:
            return None


def span(obj):
    """``(address, bytes)`` of a Buffer or a StridedMemoryView."""
    if isinstance(obj, cc.Buffer):
        return int(obj.handle), obj.size
    itemsize = obj.dtype.itemsize if obj.dtype is not None else 1
    return obj.ptr, obj.size * itemsize


def require_usable(state, *objs):
    """Skip an operation that would write through memory the program freed itself (a view
    whose owner it closed). A closed object itself is passed on: refusing it is cuda_core's
    job."""
    for obj in objs:
        if not _closed(obj) and not memory_valid(state, obj):
            raise Skip("its memory was freed by closing its owner (the program's own fault)")


def require_int_room(*bufs):
    for b in bufs:
        if b.size < 4:
            raise Skip(f"a {b.size}-byte buffer has no room for the kernel's int")


def require_launchable(state, held, strong):
    """Skip launching a graph that would use memory or events the program closed itself."""
    objs = [h.ref() for h in held] + list(strong)
    for obj in objs:
        if obj is None:
            continue
        if isinstance(obj, (cc.Buffer, cc.utils.StridedMemoryView)):
            if not memory_valid(state, obj):
                raise Skip("the graph uses memory the program closed")
        elif isinstance(obj, cc.Event) and obj.is_closed:
            raise Skip("the graph uses an event the program closed")


# -- the objects the operations share -------------------------------------------------------------

KERNEL_SRC = 'extern "C" __global__ void put(int* p, int v) { *p = v; }'


def gpu(state):
    """Device 0, made current on the main thread on first use."""
    if state.dev is None:
        dev = cc.Device(0)
        dev.set_current()
        state.dev = dev
        state.cfg = cc.LaunchConfig(grid=1, block=1)
    return state.dev


def put_cubin(state):
    """The cubin of :data:`KERNEL_SRC` for device 0, compiled once per machine: cached in a
    file keyed by architecture and source, so that thousands of programs do not each run
    NVRTC. Written to a temporary name and renamed, so that parallel programs never read half
    a file."""
    if state.cubin is not None:
        return state.cubin
    arch = gpu(state).arch
    folder = os.environ.get("CUDA_CORE_LIFETIME_CACHE") or tempfile.gettempdir()
    key = hashlib.sha256(f"{arch}\0{KERNEL_SRC}".encode()).hexdigest()[:16]
    path = os.path.join(folder, f"cuda_core_lifetime_put_sm{arch}_{key}.cubin")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        data = b""
    if not data:
        program = cc.Program(KERNEL_SRC, "c++", cc.ProgramOptions(arch="sm_" + arch))
        data = bytes(program.compile("cubin").code)
        program.close()
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    state.cubin = data
    return data


def make_callback(state, target=None):
    """A host callback that only appends to a list (a host function must not call CUDA). With
    ``target`` (the definition it is added to), it also holds it: a reference cycle that only
    the garbage collector breaks."""
    calls = state.calls

    def callback():
        calls.append(target is not None)

    return callback


class DriverCallFailed(RuntimeError):
    """A cuda.bindings call the interpreter makes itself (clones) returned an error."""


def _check(result, what):
    err = result[0]
    if err != driver.CUresult.CUDA_SUCCESS:
        raise DriverCallFailed(f"{what}: {err.name}")
    return result[1] if len(result) > 1 else None


class Clone:
    """A copy of a definition's CUgraph made through the driver (``cuGraphClone`` of
    ``definition.handle``), as another library would make it; owns the copy. ``held``: what
    cuda_core promises to keep alive for it (checked for being closed by the program, never
    held); ``strong``: the memory the program keeps for it."""

    def __init__(self, handle, held, strong):
        self.handle = handle
        self.held = held
        self.strong = strong

    def require_launchable(self, state):
        require_launchable(state, self.held, self.strong)

    def launch(self, stream):
        exe = _check(driver.cuGraphInstantiate(self.handle, 0), "cuGraphInstantiate")
        try:
            _check(driver.cuGraphLaunch(exe, stream.handle), "cuGraphLaunch")
        finally:
            # Safe while the launch runs: the driver frees an executable graph in flight once
            # it completes.
            driver.cuGraphExecDestroy(exe)

    def close(self):
        handle, self.handle = self.handle, None
        if handle is not None and driver is not None:
            driver.cuGraphDestroy(handle)

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the driver module may be half torn down
            pass


# -- GPU operations: streams and events -----------------------------------------------------------

@op("stream_new", "flag")
def stream_new(state, nonblocking):
    s = gpu(state).create_stream(options=cc.StreamOptions(nonblocking=bool(nonblocking)))
    state.add("stream", s)


@op("stream_sync", "stream")
def stream_sync(state, s):
    s.obj.sync()


@op("stream_wait", "stream", "event")
def stream_wait(state, s, e):
    s.obj.wait(e.obj)


@op("stream_wait_stream", "stream", "stream")
def stream_wait_stream(state, s, other):
    s.obj.wait(other.obj)


closing_op("stream")
dropping_op("stream")


@op("event_new")
def event_new(state):
    state.add("event", gpu(state).create_event())


@op("event_record", "stream")
def event_record(state, s):
    state.add("event", s.obj.record())


@op("event_rerecord", "stream", "event")
def event_rerecord(state, s, e):
    s.obj.record(e.obj)


@op("event_sync", "event")
def event_sync(state, e):
    e.obj.sync()


@op("event_query", "event")
def event_query(state, e):
    e.obj.is_done


closing_op("event")
dropping_op("event")


# -- GPU operations: memory resources and buffers -------------------------------------------------

@op("mr_new", "mrkind")
def mr_new(state, kind):
    dev = gpu(state)
    name = MR_KINDS[kind]
    if name == "default":
        mr = dev.memory_resource
    elif name == "device_pool":  # a pool of its own, no IPC
        mr = cc.DeviceMemoryResource(dev, cc.DeviceMemoryResourceOptions())
    elif name == "pinned":
        mr = cc.PinnedMemoryResource()
    elif name == "managed":
        mr = cc.ManagedMemoryResource()
    elif name == "legacy_pinned":
        mr = cc.LegacyPinnedMemoryResource()
    else:
        mr = cc.VirtualMemoryResource(dev)
    state.add("mr", mr, label=name)


closing_op("mr")
dropping_op("mr")


def _add_allocation(state, b, mr, label):
    state.add("buf", b, mr_ref=weakref.ref(mr) if mr is not None else None, label=label)


@op("buf_alloc", "mr", "stream", "size")
def buf_alloc(state, m, s, size):
    b = m.obj.allocate(SIZES[size], stream=s.obj)
    _add_allocation(state, b, m.obj, m.label)


@op("dev_alloc", "stream", "size")
def dev_alloc(state, s, size):
    b = gpu(state).allocate(SIZES[size], stream=s.obj)
    _add_allocation(state, b, b.memory_resource, "device")


@op("buf_fill", "buf", "stream", "byte")
def buf_fill(state, b, s, value):
    require_usable(state, b.obj)
    b.obj.fill(value, stream=s.obj)


@op("buf_copy", "buf", "buf", "stream")
def buf_copy(state, src, dst, s):
    require_usable(state, src.obj, dst.obj)
    src.obj.copy_to(dst.obj, stream=s.obj)


@op("buf_copy_new", "buf", "stream")
def buf_copy_new(state, src, s):
    require_usable(state, src.obj)
    b = src.obj.copy_to(stream=s.obj)
    _add_allocation(state, b, b.memory_resource, src.label)


closing_op("buf")


@op("buf_close_on", "buf", "stream")
def buf_close_on(state, b, s):
    b.obj.close(stream=s.obj)


dropping_op("buf")


@op("buf_view", "buf")
def buf_view(state, b):
    """A view that keeps its owner alive (``from_handle(..., owner=buf)``)."""
    v = cc.Buffer.from_handle(int(b.obj.handle), b.obj.size, owner=b.obj)
    state.link(v, "view", b.obj)
    state.add("buf", v, label=b.label)


@op("buf_dlpack", "buf")
def buf_dlpack(state, b):
    """A StridedMemoryView of the buffer's DLPack export: it keeps the memory even once the
    buffer is closed."""
    require_usable(state, b.obj)
    v = cc.utils.StridedMemoryView.from_dlpack(b.obj, stream_ptr=-1)
    state.link(v, "dlpack", b.obj)
    state.add("smv", v, label=b.label)


@op("buf_smv", "buf")
def buf_smv(state, b):
    """A StridedMemoryView over the buffer itself (``from_buffer``), which holds the Buffer."""
    v = cc.utils.StridedMemoryView.from_buffer(b.obj, (b.obj.size,), dtype=np.uint8)
    state.link(v, "smvbuf", b.obj)
    state.add("smv", v, label=b.label)


@op("smv_view", "smv")
def smv_view(state, v):
    w = v.obj.view()
    state.link(w, "smvview", v.obj)
    state.add("smv", w, label=v.label)


@op("smv_wrap", "smv")
def smv_wrap(state, v):
    """A Buffer over a view's memory that keeps the view alive."""
    require_usable(state, v.obj)
    ptr, size = span(v.obj)
    b = cc.Buffer.from_handle(ptr, size, owner=v.obj)
    state.link(b, "wrap", v.obj)
    state.add("buf", b, label=v.label)


dropping_op("smv")


# -- GPU operations: code and kernels -------------------------------------------------------------

@op("code_load")
def code_load(state):
    state.add("code", cc.ObjectCode.from_cubin(put_cubin(state)))


@op("code_kernel", "code")
def code_kernel(state, c):
    k = c.obj.get_kernel("put")
    state.add("kernel", k, code_ref=weakref.ref(c.obj))


closing_op("code", gpu=False)
dropping_op("code", gpu=False)


dropping_op("kernel")


@op("kernel_launch", "stream", "kernel", "buf", "val")
def kernel_launch(state, s, k, b, v):
    require_usable(state, b.obj)
    require_int_room(b.obj)
    cc.launch(s.obj, state.cfg, k.obj, b.obj, np.int32(v))


@op("kernel_launch_smv", "stream", "kernel", "smv", "val")
def kernel_launch_smv(state, s, k, view, v):
    require_usable(state, view.obj)
    if span(view.obj)[1] < 4:
        raise Skip("the view has no room for the kernel's int")
    cc.launch(s.obj, state.cfg, k.obj, view.obj, np.int32(v))


# -- GPU operations: graph definitions ------------------------------------------------------------

def _add_node(state, defn, node, held):
    """Record a node just added to ``defn`` (a definition record) with what it uses."""
    state.next_id += 1
    nid = state.next_id
    defn.hier.add(nid, held, parent=defn.owner)
    return state.add("node", node, hier=defn.hier, nid=nid, owner=defn.owner)


def _node_parent(node):
    """A node record seen as the definition that new nodes after it go into."""
    return Rec(0, node.obj, hier=node.hier, owner=node.owner)


def _kernel_held(k, b):
    return [Held("Kernel", k.obj), Held("Buffer", b.obj)]


@op("defn_new")
def defn_new(state):
    gpu(state)
    state.add("defn", cc.graph.GraphDefinition(), hier=Hier(root=True), root=True)


@op("defn_kernel", "defn", "kernel", "buf", "val")
def defn_kernel(state, d, k, b, v):
    require_usable(state, b.obj)
    require_int_room(b.obj)
    n = d.obj.launch(state.cfg, k.obj, b.obj, np.int32(v))
    _add_node(state, d, n, _kernel_held(k, b))


@op("node_kernel", "node", "kernel", "buf", "val")
def node_kernel(state, n, k, b, v):
    require_usable(state, b.obj)
    require_int_room(b.obj)
    new = n.obj.launch(state.cfg, k.obj, b.obj, np.int32(v))
    _add_node(state, _node_parent(n), new, _kernel_held(k, b))


@op("defn_memset", "defn", "buf", "byte")
def defn_memset(state, d, b, value):
    require_usable(state, b.obj)
    n = d.obj.memset(b.obj, value, b.obj.size)
    _add_node(state, d, n, [Held("Buffer", b.obj)])


@op("node_memset", "node", "buf", "byte")
def node_memset(state, n, b, value):
    require_usable(state, b.obj)
    new = n.obj.memset(b.obj, value, b.obj.size)
    _add_node(state, _node_parent(n), new, [Held("Buffer", b.obj)])


@op("defn_memcpy", "defn", "buf", "buf")
def defn_memcpy(state, d, dst, src):
    require_usable(state, dst.obj, src.obj)
    n = d.obj.memcpy(dst.obj, src.obj, min(dst.obj.size, src.obj.size))
    _add_node(state, d, n, [Held("Buffer", dst.obj), Held("Buffer", src.obj)])


@op("defn_record", "defn", "event")
def defn_record(state, d, e):
    n = d.obj.record(e.obj)
    _add_node(state, d, n, [Held("Event", e.obj)])


@op("defn_wait", "defn", "event")
def defn_wait(state, d, e):
    n = d.obj.wait(e.obj)
    _add_node(state, d, n, [Held("Event", e.obj)])


@op("defn_callback", "defn", "flag")
def defn_callback(state, d, cyclic):
    fn = make_callback(state, d.obj if cyclic else None)
    n = d.obj.callback(fn)
    _add_node(state, d, n, [Held("callback", fn)])


@op("defn_embed", "defn", "defn")
def defn_embed(state, d, child):
    n = d.obj.embed(child.obj)
    # The copy runs what the child's nodes use, which the parent's store now holds too.
    _add_node(state, d, n, child.hier.snapshot(child.owner))
    d.hier.strong.extend(child.hier.strong)


@op("defn_if", "defn", "kernel", "buf", "val")
def defn_if(state, d, k, b, v):
    """An if node (condition default 1, so it runs) whose body launches the kernel."""
    require_usable(state, b.obj)
    require_int_room(b.obj)
    cond = d.obj.create_condition(default_value=1)
    n = d.obj.if_then(cond)
    node = _add_node(state, d, n, [])
    body = n.then
    body_rec = state.add("defn", body, hier=d.hier, owner=node.nid)
    kn = body.launch(state.cfg, k.obj, b.obj, np.int32(v))
    _add_node(state, body_rec, kn, _kernel_held(k, b))


@op("node_destroy", "node")
def node_destroy(state, n):
    n.obj.destroy()
    n.hier.remove(n.nid)


dropping_op("node")


@op("defn_close", "defn")
def defn_close(state, d):
    d.obj.close()
    if d.root:  # a root's close destroys the whole hierarchy; a view's, the view only
        d.hier.closed = True


dropping_op("defn")


@op("defn_instantiate", "defn")
def defn_instantiate(state, d):
    x = d.obj.instantiate()
    state.add("graph", x, held=d.hier.snapshot(d.owner), strong=list(d.hier.strong))


@op("defn_clone", "defn")
def defn_clone(state, d):
    """A driver-level copy through the handle, as another library would make it."""
    handle = _check(driver.cuGraphClone(driver.CUgraph(int(d.obj.handle))), "cuGraphClone")
    held = d.hier.snapshot(d.owner)
    # The memory is the program's to keep; kernels, events and host calls are cuda_core's.
    strong = [o for o in (h.ref() for h in held) if isinstance(o, cc.Buffer)]
    strong += d.hier.strong
    state.add("clone", Clone(handle, held, strong))


# -- GPU operations: graph builders ---------------------------------------------------------------

@op("builder_new")
def builder_new(state):
    g = gpu(state).create_graph_builder()
    state.add("builder", g, hier=Hier(root=False))
    g.begin_building()


@op("builder_begin", "builder")
def builder_begin(state, g):
    g.obj.begin_building()


@op("builder_launch", "builder", "kernel", "buf", "val")
def builder_launch(state, g, k, b, v):
    require_usable(state, b.obj)
    require_int_room(b.obj)
    cc.launch(g.obj, state.cfg, k.obj, b.obj, np.int32(v))
    g.hier.strong.append(b.obj)  # captured memory is the caller's to keep


@op("builder_fill", "builder", "buf", "byte")
def builder_fill(state, g, b, value):
    require_usable(state, b.obj)
    b.obj.fill(value, stream=g.obj)
    g.hier.strong.append(b.obj)


@op("builder_callback", "builder", "flag")
def builder_callback(state, g, cyclic):
    fn = make_callback(state, g.obj if cyclic else None)
    g.obj.callback(fn)


@op("builder_if", "builder", "kernel", "buf", "val", "flag")
def builder_if(state, g, k, b, v, finish):
    """An if node (condition default 1) whose body builder captures a launch; the body's
    capture is ended here when ``finish``, else left to later operations (or the epilogue)."""
    require_usable(state, b.obj)
    require_int_room(b.obj)
    cond = g.obj.create_condition(1)
    body = g.obj.if_then(cond)
    state.add("builder", body, hier=g.hier, body=True)
    body.begin_building()
    cc.launch(body, state.cfg, k.obj, b.obj, np.int32(v))
    g.hier.strong.append(b.obj)
    if finish:
        body.end_building()


@op("builder_end", "builder")
def builder_end(state, g):
    g.obj.end_building()


@op("builder_complete", "builder")
def builder_complete(state, g):
    x = g.obj.complete()
    # No weak "held" list: what a capture keeps is the package's internal business, and the
    # memory is the program's (strong).
    state.add("graph", x, held=[], strong=list(g.hier.strong))


@op("builder_defn", "builder")
def builder_defn(state, g):
    d = g.obj.graph_definition
    state.add("defn", d, hier=g.hier)


closing_op("builder")
dropping_op("builder")


# -- GPU operations: executable graphs and clones -------------------------------------------------

@op("graph_launch", "graph", "stream")
def graph_launch(state, x, s):
    launch_graph(state, x, s.obj)


@op("graph_upload", "graph", "stream")
def graph_upload(state, x, s):
    x.obj.upload(s.obj)


@op("graph_update", "graph", "defn")
def graph_update(state, x, d):
    x.obj.update(d.obj)
    x.held, x.strong = d.hier.snapshot(d.owner), list(d.hier.strong)


@op("graph_update_builder", "graph", "builder")
def graph_update_builder(state, x, g):
    x.obj.update(g.obj)
    x.held, x.strong = [], list(g.hier.strong)


closing_op("graph")
dropping_op("graph")


@op("clone_launch", "clone", "stream")
def clone_launch(state, c, s):
    launch_clone(state, c, s.obj)


dropping_op("clone")


# -- CPU operations (no GPU or driver needed) -----------------------------------------------------

ARCHS = ("sm_80", "sm_90", "compute_80")
TARGETS = ("ptx", "cubin", "ltoir")


@op("prog_new", "arch", "flag", gpu=False)
def prog_new(state, arch, lto):
    opts = cc.ProgramOptions(arch=ARCHS[arch], link_time_optimization=bool(lto) or None)
    state.add("prog", cc.Program(KERNEL_SRC, "c++", opts))


@op("prog_compile", "prog", "target", gpu=False)
def prog_compile(state, p, target):
    state.add("code", p.obj.compile(TARGETS[target]))


closing_op("prog", gpu=False)
dropping_op("prog", gpu=False)


@op("code_raw", "target", gpu=False)
def code_raw(state, target):
    """An ObjectCode of bytes that are no code at all: nothing is loaded until a kernel is
    asked for."""
    factory = getattr(cc.ObjectCode, "from_" + TARGETS[target])
    state.add("code", factory(b"\x7fELF not really " + bytes([target])))


@op("code_rebuild", "code", "target", gpu=False)
def code_rebuild(state, c, target):
    factory = getattr(cc.ObjectCode, "from_" + TARGETS[target])
    state.add("code", factory(c.obj.code))


@op("code_props", "code", gpu=False)
def code_props(state, c):
    c.obj.code, c.obj.code_type, c.obj.name, c.obj.symbol_mapping, repr(c.obj)


@op("code_pickle", "code", gpu=False)
def code_pickle(state, c):
    state.add("code", pickle.loads(pickle.dumps(c.obj)))


@op("linker_new", "code", "arch", "flag", gpu=False)
def linker_new(state, c, arch, lto):
    opts = cc.LinkerOptions(arch=ARCHS[arch] if arch < 2 else "sm_80",
                            link_time_optimization=bool(lto) or None)
    state.add("linker", cc.Linker(c.obj, options=opts))


@op("linker_link", "linker", "flag", gpu=False)
def linker_link(state, lk, ptx):
    state.add("code", lk.obj.link("ptx" if ptx else "cubin"))


closing_op("linker", gpu=False)
dropping_op("linker", gpu=False)


@op("arr_new", "size", "val", gpu=False)
def arr_new(state, size, v):
    """A host array of distinct int32s; never written again, so its bytes are what every view
    of it must read."""
    a = np.arange(SIZES[size] // 4, dtype=np.int32) + np.int32(v * 4099)
    state.add("arr", a, expected=a.tobytes())


dropping_op("arr", gpu=False)


@op("hbuf_wrap", "arr", gpu=False)
def hbuf_wrap(state, a):
    b = cc.Buffer.from_handle(a.obj.ctypes.data, a.obj.nbytes, owner=a.obj)
    state.link(b, "view", a.obj)
    state.add("hbuf", b, expected=a.expected)


@op("hbuf_rewrap", "hbuf", gpu=False)
def hbuf_rewrap(state, b):
    v = cc.Buffer.from_handle(int(b.obj.handle), b.obj.size, owner=b.obj)
    state.link(v, "view", b.obj)
    state.add("hbuf", v, expected=b.expected)


@op("hbuf_props", "hbuf", gpu=False)
def hbuf_props(state, b):
    b.obj.handle, b.obj.size, b.obj.owner, b.obj.is_closed, repr(b.obj)


closing_op("hbuf", gpu=False)
dropping_op("hbuf", gpu=False)


@op("hsmv_new", "arr", "how", gpu=False)
def hsmv_new(state, a, how):
    smv = cc.utils.StridedMemoryView
    if how == 0:
        v = smv.from_dlpack(a.obj, stream_ptr=-1)
    elif how == 1:
        v = smv.from_array_interface(a.obj)
    else:
        v = smv.from_any_interface(a.obj, stream_ptr=-1)
    state.link(v, "smvarr", a.obj)
    state.add("hsmv", v, expected=a.expected)


@op("hsmv_view", "hsmv", gpu=False)
def hsmv_view(state, v):
    w = v.obj.view()
    state.link(w, "smvview", v.obj)
    state.add("hsmv", w, expected=v.expected)


@op("hsmv_wrap", "hsmv", gpu=False)
def hsmv_wrap(state, v):
    ptr, size = span(v.obj)
    b = cc.Buffer.from_handle(ptr, size, owner=v.obj)
    state.link(b, "wrap", v.obj)
    state.add("hbuf", b, expected=v.expected)


dropping_op("hsmv", gpu=False)


# -- operations on anything -----------------------------------------------------------------------

@op("gc", gpu=False)
def gc_collect(state):
    gc.collect()


@op("drop_all", "kind", gpu=False)
def drop_all(state, kind):
    """Forget every object of one kind at once: what another object promised to keep alive
    is then kept by that promise alone."""
    state.tables[KINDS[kind]].clear()


def _use(state, kind, obj, stream, meta):
    """Use ``obj`` (of table ``kind``, described by the record ``meta``) once, as the thread
    hand-off does."""
    if kind in ("stream", "event"):
        obj.sync()
    elif kind == "buf":
        if stream is None:
            return obj.size
        require_usable(state, obj)
        obj.fill(0x5C, stream=stream)
    elif kind == "kernel":
        return obj.num_arguments
    elif kind == "code":
        kernel = obj.get_kernel("put")
        del kernel  # the Kernel's last reference, on this thread
    elif kind == "mr":
        b = obj.allocate(64, stream=stream)
        del b  # freed on this thread
    elif kind == "defn":
        x = obj.instantiate()
        del x
    elif kind == "graph":
        if stream is None:
            raise Skip("no stream")
        require_launchable(state, meta.held or (), meta.strong or ())
        obj.launch(stream)
    elif kind == "builder":
        return obj.is_building
    elif kind in ("smv", "hsmv"):
        return obj.ptr
    elif kind == "clone":
        if stream is None:
            raise Skip("no stream")
        obj.require_launchable(state)
        obj.launch(stream)
    elif kind == "node":
        return obj.type
    elif kind == "prog":
        return obj.compile("ptx")
    elif kind == "linker":
        return obj.link("cubin")
    elif kind == "arr":
        return int(obj.sum())
    elif kind == "hbuf":
        if meta.expected is not None and not obj.is_closed and memory_valid(state, obj):
            got = ctypes.string_at(int(obj.handle), obj.size) if obj.size else b""
            if got != meta.expected:
                state.thread_garbage.append(f"hbuf#{meta.id} read {got[:16].hex()}..., "
                                            f"expected {meta.expected[:16].hex()}... (thread)")


@op("thread", "kind", "slot", "stream?", "flag", "flag", gpu=False)
def thread(state, kind, slot, stream, drop, set_current):
    """Hand an object to a new thread, which uses it and drops its reference; with ``drop``
    the program's record goes first, so the thread holds the last reference and the object's
    finalizer runs there. ``set_current``: the thread makes device 0 current first (without
    it, the thread has no current context)."""
    name = KINDS[kind]
    table = state.tables[name]
    if not table:
        raise Skip(f"no {name}")
    rec = table[slot % len(table)]
    if drop:
        state.remove(name, rec)
    # What the interpreter knows of the object, without the object.
    meta = Rec(rec.id, None, **{k: v for k, v in vars(rec).items() if k not in ("id", "obj")})
    box = [rec.obj]
    del rec
    s = stream.obj if stream is not None else None
    outcome = []

    def run():
        obj = box.pop()
        try:
            if set_current and state.dev is not None:
                cc.Device(0).set_current()
            _use(state, name, obj, s, meta)
            outcome.append("ok")
        except Skip as exc:
            outcome.append(f"skip ({exc})")
        except EXPECTED as exc:
            outcome.append(describe(exc))
        except BaseException as exc:  # re-raised on the main thread: not an expected error
            outcome.append(exc)
        finally:
            del obj

    t = threading.Thread(target=run, name=f"lifetime-{name}")
    t.start()
    t.join()
    if outcome and isinstance(outcome[0], BaseException):
        raise outcome[0]
    if outcome and outcome[0] != "ok":
        raise ThreadOutcome(outcome[0])


class ThreadOutcome(Exception):
    """What a hand-off thread's use ended with, for the operation's line."""


# -- running a program ----------------------------------------------------------------------------

def describe(exc):
    """An exception as an operation's outcome: its class and the first line of its message."""
    message = str(exc).strip().splitlines()
    first = message[0] if message else ""
    if len(first) > 160:
        first = first[:157] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def resolve(state, schema, args):
    """The operation's arguments: records for slots, normalized ints for literals."""
    out = []
    for i, kind in enumerate(schema):
        raw = args[i] if i < len(args) else 0
        if kind in LITERALS:
            out.append(raw % LITERALS[kind] if kind != "slot" else raw)
            continue
        optional = kind.endswith("?")
        table = state.tables[kind.rstrip("?")]
        if not table:
            if optional:
                out.append(None)
                continue
            raise Skip(f"no {kind}")
        out.append(table[raw % len(table)])
    return out


def check_lost(state):
    """What a live object promised to keep alive but was freed (a lifetime defect), as
    messages: a Kernel's ObjectCode; an open owning Buffer's memory resource; an open view's
    owner, a StridedMemoryView's exporter; what the nodes of an open Graph, or of a live
    definition, use."""
    problems = []
    for rec in state.tables["kernel"]:
        if rec.code_ref is not None and rec.code_ref() is None:
            problems.append(f"kernel#{rec.id} lives but its ObjectCode was freed")
    for kind in ("buf", "hbuf", "smv", "hsmv"):
        for rec in state.tables[kind]:
            if _closed(rec.obj):
                continue
            if rec.mr_ref is not None and rec.mr_ref() is None:
                problems.append(f"{kind}#{rec.id} ({rec.label}) is open but its memory "
                                f"resource was freed")
            lineage = state.parent_of(rec.obj)
            if lineage is not None and lineage[1]() is None:
                problems.append(f"{kind}#{rec.id} ({lineage[0]}) is open but its owner was "
                                f"freed")
    for rec in state.tables["graph"]:
        if rec.obj.is_closed:
            continue
        for h in rec.held or ():
            if h.ref() is None:
                problems.append(f"graph#{rec.id} is open but a {h.what} its nodes use was "
                                f"freed")
    hiers = {id(r.hier): r.hier for kind in ("defn", "node") for r in state.tables[kind]}
    for hier in hiers.values():
        if not hier.root:  # captures: what their store keeps is the package's business
            continue
        for h in hier.snapshot():
            if h.ref() is None:
                problems.append(f"a definition is open but a {h.what} one of its nodes uses "
                                f"was freed")
    return problems


def garbage(lines):
    """Report wrong results and end the process with status 3 at once (no shutdown
    finalizers, so that a crash there cannot hide the report)."""
    for line in lines:
        print(f"GARBAGE {line}", flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(3)


def run(program):
    """Run ``program`` (a list of operations), then the epilogue. Returns 0, or ends the
    process with status 3 on garbage."""
    state = State()
    for index, operation in enumerate(program):
        name, args = operation[0], list(operation[1:])
        opdef = OPS.get(name)
        label = f"{index:3d} {name} {json.dumps(args)}"
        if opdef is None:
            print(f"{label} -> skip (unknown operation)", flush=True)
            continue
        state.made = []
        try:
            resolved = resolve(state, opdef.schema, args)
            opdef.fn(state, *resolved)
            outcome = "ok"
        except Skip as exc:
            outcome = f"skip ({exc})"
        except ThreadOutcome as exc:
            outcome = f"thread: {exc}"
        except EXPECTED as exc:
            outcome = describe(exc)
        resolved = None  # a dropped object's last reference goes with the operation
        if state.made:
            outcome += f" [{' '.join(state.made)}]"
        print(f"{label} -> {outcome}", flush=True)
        problems = check_lost(state) + state.thread_garbage
        if problems:
            garbage(f"after operation {index}: {p}" for p in problems)
    epilogue(state)
    return 0


def step(label, fn):
    """One epilogue step, printed like an operation; returns its result or None."""
    try:
        result = fn()
        outcome = "ok"
    except Skip as exc:
        result, outcome = None, f"skip ({exc})"
    except EXPECTED as exc:
        result, outcome = None, describe(exc)
    print(f"epilogue {label} -> {outcome}", flush=True)
    return result


def epilogue(state):
    """Launch and synchronize what remains, then check what was read back; then the orphan
    phase: forget all but the objects that must now stand alone, and check again."""
    problems = []
    if state.dev is not None:
        problems += gpu_epilogue(state)
    problems += host_check(state) + check_lost(state)
    # Host views must keep their arrays (and each other) alive by themselves.
    for keep in (("hbuf", "hsmv"), ("hbuf",)):
        if problems:
            break
        forget(state, keep)
        problems += check_lost(state) + host_check(state)
    problems += state.thread_garbage
    if problems:
        garbage(problems)
    print(f"epilogue done: {len(state.calls)} host callback runs", flush=True)


def forget(state, keep):
    """Drop every record of the kinds not in ``keep``, then collect."""
    for kind in KINDS:
        if kind not in keep:
            state.tables[kind].clear()
    step(f"forget all but {', '.join(keep)}", gc.collect)


def gpu_epilogue(state):
    end_captures(state)
    es = step("create the epilogue's stream", state.dev.create_stream)
    if es is None:
        print("UNVERIFIED: no stream for the checks", flush=True)
        return []
    made = launch_remaining(state, es)
    if not sync_all(state, es):
        print("UNVERIFIED: the device could not be synchronized; no value is checked",
              flush=True)
        return []
    problems = verify_gpu(state, es)
    del made
    # Orphans: executable graphs and clones must still run once everything else the program
    # held is gone (definitions, builders, kernels, ObjectCodes, buffers, events, streams,
    # memory resources): what they use is then kept by cuda_core's promises alone.
    forget(state, ("graph", "clone", "hbuf", "hsmv"))
    problems += check_lost(state)
    if problems:
        return problems
    for rec in state.tables["graph"]:
        step(f"launch graph#{rec.id} (orphan)", lambda rec=rec: launch_graph(state, rec, es))
    for rec in state.tables["clone"]:
        step(f"launch clone#{rec.id} (orphan)", lambda rec=rec: launch_clone(state, rec, es))
    if not sync_all(state, es):
        print("UNVERIFIED: the device could not be synchronized after the orphans ran",
              flush=True)
    return problems


def end_captures(state):
    """End the captures still in progress (bodies before their parents, the latest body
    first): an open capture makes the synchronizations fail."""
    builders = state.tables["builder"]
    bodies = [r for r in builders if r.body]
    for rec in bodies[::-1] + [r for r in builders if not r.body]:
        step(f"end builder#{rec.id}",
             lambda b=rec.obj: b.end_building() if not b.is_closed and b.is_building else None)


def launch_remaining(state, es):
    """Launch every live executable graph, captured graph, definition and clone, on the
    program's open streams in turn (else ``es``); returns the graphs made here, which must
    live until the work is done."""
    tables = state.tables
    streams = [r.obj for r in tables["stream"] if not r.obj.is_closed] or [es]
    made = []

    def complete_and_launch(state, rec, s):
        x = rec.obj.complete()
        made.append(x)
        require_launchable(state, [], rec.hier.strong)
        x.launch(s)

    def instantiate_and_launch(state, rec, s):
        require_launchable(state, rec.hier.snapshot(rec.owner), rec.hier.strong)
        x = rec.obj.instantiate()
        made.append(x)
        x.launch(s)

    work = ([(f"complete+launch builder#{r.id}", complete_and_launch, r)
             for r in tables["builder"] if not r.body]
            + [(f"launch graph#{r.id}", launch_graph, r) for r in tables["graph"]]
            + [(f"instantiate+launch defn#{r.id}", instantiate_and_launch, r)
               for r in tables["defn"]]
            + [(f"launch clone#{r.id}", launch_clone, r) for r in tables["clone"]])
    for i, (label, fn, rec) in enumerate(work):
        step(label, lambda fn=fn, rec=rec, s=streams[i % len(streams)]: fn(state, rec, s))
    return made


def launch_graph(state, rec, s):
    """Launch the executable graph of record ``rec`` on ``s``, unless it would use memory or
    events the program closed."""
    require_launchable(state, rec.held, rec.strong)
    rec.obj.launch(s)


def launch_clone(state, rec, s):
    """Instantiate and launch the clone of record ``rec`` on ``s``, unless it would use memory
    or events the program closed."""
    rec.obj.require_launchable(state)
    rec.obj.launch(s)


def sync_all(state, es):
    """Synchronize every open stream of the program, ``es``, then the device; True when all
    of it succeeded."""
    ok = True
    for rec in state.tables["stream"]:
        s = rec.obj
        if not s.is_closed:
            ok = step(f"sync stream#{rec.id}", lambda s=s: s.sync() or True) and ok
    ok = step("sync the epilogue's stream", lambda: es.sync() or True) and ok
    return step("Device(0).sync()", lambda: state.dev.sync() or True) and ok


def verify_gpu(state, es):
    """Every live kernel writes a distinct int into a live allocation (an open buffer, or
    memory a live DLPack export keeps), through one of its live handles, and every live
    allocation gets at least one write (from a kernel loaded here when none lives); each is
    read back with cuMemcpy. One more buffer, allocated here after all that came before, is
    among them. Live allocations must not overlap."""
    step("allocate the epilogue's buffer", lambda: _add_allocation(
        state, state.dev.allocate(64, stream=es), state.dev.memory_resource, "epilogue"))
    roots = {}
    for kind in ("buf", "smv"):
        for rec in state.tables[kind]:
            obj = rec.obj
            if _closed(obj) or not memory_valid(state, obj):
                continue
            root = root_of(state, obj)
            if root is None:
                continue
            ptr, size = span(obj)
            if size >= 4 and id(root) not in roots:
                roots[id(root)] = (rec, ptr, size)
    problems = []
    spans = sorted((ptr, size, rec.id, rec) for rec, ptr, size in roots.values())
    for (p1, n1, _, r1), (p2, n2, _, r2) in zip(spans, spans[1:]):
        if p2 < p1 + n1:
            problems.append(f"live allocations overlap: {r1.label}#{r1.id} [{p1:#x}, +{n1}) "
                            f"and {r2.label}#{r2.id} [{p2:#x}, +{n2})")
    targets = list(roots.values())
    kernels = [(r.obj, f"kernel#{r.id}") for r in state.tables["kernel"]]
    if not kernels:
        k = step("load a kernel for the checks",
                 lambda: cc.ObjectCode.from_cubin(put_cubin(state)).get_kernel("put"))
        kernels = [(k, "the checks' kernel")] if k is not None else []
    expected = {}  # by target: the last value written (all writes are ordered on es)
    for i in range(max(len(targets), len(kernels)) if targets and kernels else 0):
        rec, ptr, size = targets[i % len(targets)]
        kernel, name = kernels[i % len(kernels)]
        value = 0x5A5A0000 + i

        def write(rec=rec, kernel=kernel, value=value):
            cc.launch(es, state.cfg, kernel, rec.obj, np.int32(value))
            return True
        if step(f"write {value:#x} into {rec.label}#{rec.id} with {name}", write):
            expected[rec.id] = (rec, ptr, value)
    if not sync_all(state, es):
        print("UNVERIFIED: the device could not be synchronized after the writes", flush=True)
        return problems
    host = np.zeros(1, dtype=np.int32)
    for rec, ptr, value in expected.values():
        host[0] = 0
        (err,) = driver.cuMemcpy(driver.CUdeviceptr(host.ctypes.data), driver.CUdeviceptr(ptr),
                                 4)
        if err != driver.CUresult.CUDA_SUCCESS:
            print(f"UNVERIFIED: reading {rec.label}#{rec.id} back: {err.name}", flush=True)
            continue
        got = int(host[0]) & 0xFFFFFFFF
        if got != value:
            problems.append(f"{rec.label}#{rec.id} at {ptr:#x} holds {got:#x}, a kernel "
                            f"wrote {value:#x}")
    print(f"epilogue checked {len(expected)} allocations", flush=True)
    return problems


def host_check(state):
    """Every open host-memory view made by the program must still read its array's bytes."""
    problems = []
    for kind in ("hbuf", "hsmv"):
        for rec in state.tables[kind]:
            obj = rec.obj
            if rec.expected is None or _closed(obj) or not memory_valid(state, obj):
                continue
            ptr, size = span(obj)
            got = ctypes.string_at(ptr, size) if size else b""
            if got != rec.expected:
                problems.append(f"{kind}#{rec.id} reads {got[:16].hex()}..., its array held "
                                f"{rec.expected[:16].hex()}...")
    return problems


def load_program(text):
    program = json.loads(text)
    if not isinstance(program, list) or not all(
            isinstance(s, list) and s and isinstance(s[0], str)
            and all(type(a) is int for a in s[1:]) for s in program):
        raise ValueError("a program is a JSON list of [name, int, ...] operations")
    return program


def main():
    faulthandler.enable()  # a crash prints every thread's stack after the last op line
    watchdog = os.environ.get("CUDA_CORE_LIFETIME_WATCHDOG")
    if watchdog:
        faulthandler.dump_traceback_later(float(watchdog), exit=False)
    try:
        program = load_program(sys.stdin.read())
    except ValueError as exc:
        print(f"bad program: {exc}", file=sys.stderr)
        return 2
    _import_cuda_core()
    warnings.simplefilter("always", cc.CUDAWarning)
    return run(program)


# -- hypothesis strategies ------------------------------------------------------------------------

def _menu(names, weights):
    """``names`` with each name of ``weights`` repeated that many times, those first:
    sampled_from then draws them more often, and shrinks towards them."""
    heavy = [n for n, w in weights.items() for _ in range(w)]
    return heavy + [n for n in names if n not in weights]


#: A program starts with some of these, in this order, so that each finds what it needs (a
#: kernel its ObjectCode, a node its definition); then it goes on with anything of its menu.
#: Each is taken with the probability 1 - 1/n of its n: what most operations need (a stream,
#: a buffer, a kernel) nearly always (n = 8), others every other time (n = 2).
GPU_SETUP = (("stream_new", 8), ("mr_new", 4), ("buf_alloc", 8), ("dev_alloc", 2),
             ("event_record", 2), ("code_load", 8), ("code_kernel", 8), ("buf_view", 2),
             ("buf_dlpack", 2), ("defn_new", 4), ("defn_kernel", 4), ("defn_memset", 2),
             ("defn_callback", 2), ("defn_if", 2), ("builder_new", 4), ("builder_launch", 4),
             ("builder_callback", 2), ("builder_if", 2), ("defn_instantiate", 2),
             ("builder_end", 2), ("builder_complete", 2))
#: Every GPU operation, plus the shared ones that apply to GPU objects; creators, the thread
#: hand-off and collections are drawn more often.
GPU_MENU = _menu(
    [n for n, o in OPS.items() if o.gpu] + ["code_close", "code_drop", "gc", "thread",
                                            "drop_all"],
    {"thread": 4, "gc": 2, "drop_all": 2, "stream_new": 2, "buf_alloc": 3, "dev_alloc": 2,
     "mr_new": 2, "event_record": 2, "code_load": 2, "code_kernel": 3, "defn_new": 2,
     "defn_kernel": 3, "builder_new": 2, "builder_launch": 3, "defn_instantiate": 2,
     "builder_complete": 2, "defn_clone": 2})

CPU_SETUP = (("arr_new", 8), ("hbuf_wrap", 4), ("hsmv_new", 4), ("hbuf_rewrap", 2),
             ("prog_new", 4), ("prog_compile", 4), ("code_raw", 2), ("linker_new", 2))
#: What works without a GPU or driver.
CPU_MENU = _menu([n for n, o in OPS.items() if not o.gpu],
                 {"thread": 4, "gc": 2, "drop_all": 2, "arr_new": 3, "hbuf_wrap": 3,
                  "hsmv_new": 3, "code_raw": 2})

#: The kinds the "kind" argument of ``thread`` and ``drop_all`` names, in each menu.
GPU_KINDS = ("stream", "event", "buf", "kernel", "code", "mr", "defn", "graph", "builder", "smv",
             "clone", "node")
CPU_KINDS = ("code", "prog", "linker", "arr", "hbuf", "hsmv")


def _programs(menu, setup, kinds, min_size, max_size):
    """Programs of ``min_size`` to ``max_size`` operations: some ``setup`` steps, in order,
    then operations drawn from ``menu``; a "kind" argument names one of ``kinds``."""
    from hypothesis import strategies as st  # here: the interpreter itself needs no hypothesis

    def args(name):
        parts = []
        for kind in OPS[name].schema:
            if kind == "kind":  # only kinds of this menu
                parts.append(st.sampled_from([KINDS.index(k) for k in kinds]))
            elif kind in LITERALS:
                parts.append(st.integers(0, LITERALS[kind] - 1))
            else:
                parts.append(st.integers(0, SLOT_RANGE - 1))
        return st.tuples(st.just(name), *parts).map(list)

    def operations(names, n):
        return st.lists(st.sampled_from(names).flatmap(args), min_size=n, max_size=n)

    def program(chosen):
        first = [name for (name, _), keep in zip(setup, chosen) if keep][:max_size]
        # The body's length is drawn first, so that lengths spread over the whole range
        # instead of crowding at the short end.
        body = st.integers(max(min_size - len(first), 0), max_size - len(first))
        return st.tuples(st.tuples(*map(args, first)), body.flatmap(
            lambda n: operations(menu, n))).map(lambda parts: list(parts[0]) + parts[1])

    # Each setup step is taken or not, in the setup's order; shrinking drops them.
    chosen = st.tuples(*(st.integers(0, n - 1).map(bool) for _, n in setup))
    return chosen.flatmap(program)


def gpu_programs(min_size=5, max_size=40):
    """Programs (lists of ``min_size`` to ``max_size`` operations) over streams, events, every
    memory resource, buffers and views, kernels, graph definitions, builders, executable
    graphs and driver clones, with drops, closes, collections and thread hand-offs."""
    return _programs(GPU_MENU, GPU_SETUP, GPU_KINDS, min_size, max_size)


def cpu_programs(min_size=5, max_size=40):
    """Programs of operations that need no GPU or driver: compilation, ObjectCode, Linker,
    StridedMemoryView and Buffer over NumPy arrays, with drops, closes, collections and
    thread hand-offs."""
    return _programs(CPU_MENU, CPU_SETUP, CPU_KINDS, min_size, max_size)


if __name__ == "__main__":
    sys.exit(main())
