"""Public calls that need a GPU, each given the edge inputs of tests/test_differential_gpu_calls.py
in one argument (``CALLS``), and reads of what the calls make (``READS``, run once each), run
through one package in this child process (issue 27, part 6).

    python gpu_edge_calls.py PACKAGE LABEL...

prints one JSON line per call and input (a read's input is ``"-"``), flushed, so that the lines
printed before a crash survive: ``[label, input, warned, "ok", repr of the value]`` or
``[label, input, warned, "err", [the exception's class and base names], message]``, where
``warned`` lists, for each warning given, its class and base names.
"""

import ctypes
import faulthandler
import importlib
import json
import os
import signal
import subprocess
import sys
import threading
import warnings

import numpy as np

EDGES = {"None": None, "0": 0, "-1": -1, "1": 1, "True": True, "False": False,
         "np.int32(3)": np.int32(3), "np.True_": np.True_, "1.5": 1.5, "''": "", "'x'": "x",
         "()": (), "(1,)": (1,), "[]": [], "b'x'": b"x", "2**64": 2**64, "object()": object()}

# put(int* p, int v): *p = v. PTX, so that no compiler is needed; JIT-compiled for the device.
PTX = """.version 8.0
.target sm_{arch}
.address_size 64
.visible .entry put(.param .u64 p, .param .u32 v) {{
    .reg .b64 %rd<2>;
    .reg .b32 %r<2>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [v];
    cvta.to.global.u64 %rd1, %rd1;
    st.global.u32 [%rd1], %r1;
    ret;
}}
"""


class Env:
    """Device 0 (current), a stream, the kernel, a pinned int and a small device buffer."""

    def __init__(self, m):
        self.m = m
        self.dev = m.Device(0)
        self.dev.set_current()
        self.s = self.dev.create_stream()
        self.code = m.ObjectCode.from_ptx(PTX.format(arch=self.dev.arch).encode())
        self.kernel = self.code.get_kernel("put")
        self.pinned = m.LegacyPinnedMemoryResource().allocate(16, stream=self.s)
        self.buf = self.dev.allocate(64, stream=self.s)
        self.s.sync()

    def read(self, nbytes=4):
        self.s.sync()
        return ctypes.string_at(int(self.pinned.handle), nbytes)

    def launch(self, config=None, *, stream=None, value=7):
        ctypes.memset(int(self.pinned.handle), 0, 4)
        cfg = config if config is not None else self.m.LaunchConfig(grid=1, block=1)
        self.m.launch(self.s if stream is None else stream, cfg, self.kernel, self.pinned, value)
        return self.read()

    def fill(self, value, stream="default"):
        ctypes.memset(int(self.pinned.handle), 0, 4)
        self.pinned.fill(value, stream=self.s if stream == "default" else stream)
        return self.read()

    def builder(self):
        return self.dev.create_graph_builder()

    def capturing(self, body):
        """``body(builder)`` while a builder captures; the capture ends whatever happens (an
        open capture would change what the later calls may do)."""
        b = self.builder().begin_building()
        try:
            return body(b)
        finally:
            if b.is_building:
                b.end_building()

    def ended(self):
        """A builder whose capture of one kernel launch has ended."""
        b = self.builder().begin_building()
        self.m.launch(b, self.m.LaunchConfig(grid=1, block=1), self.kernel, self.pinned, 5)
        return b.end_building()

    def graph(self):
        """An executable graph of one kernel launch, captured."""
        return self.ended().complete()

    def ptx(self):
        return PTX.format(arch=self.dev.arch).encode()

    def textures(self):
        """An opaque array (8 x 8 float32, surface load/store), a mipmapped array of 2 levels,
        a resource descriptor of each source, a texture and a surface object, made once."""
        if getattr(self, "_textures", None) is None:
            t = self.m.texture
            arr = self.dev.create_opaque_array(t.OpaqueArrayOptions(
                shape=(8, 8), format="float32", num_channels=1, is_surface_load_store=True))
            mip = self.dev.create_mipmapped_array(t.MipmappedArrayOptions(
                shape=(8, 8), format="float32", num_channels=1, num_levels=2))
            rd = t.ResourceDescriptor.from_opaque_array(arr)
            self._textures = {
                "array": arr, "mipmapped": mip, "rd_array": rd,
                "rd_mipmapped": t.ResourceDescriptor.from_mipmapped_array(mip),
                "rd_linear": t.ResourceDescriptor.from_linear(self.buf, format="float32",
                                                              num_channels=1),
                "rd_pitch2d": t.ResourceDescriptor.from_pitch2d(
                    self.buf, format="float32", num_channels=1, width=4, height=2,
                    pitch_bytes=32),
                "texture": self.dev.create_texture_object(resource=rd,
                                                          options=t.TextureObjectOptions()),
                "surface": self.dev.create_surface_object(resource=rd)}
        return self._textures

    def managed(self):
        """A ManagedBuffer of 64 bytes from a ManagedMemoryResource, made once."""
        if getattr(self, "_managed", None) is None:
            self._managed = self.m.ManagedMemoryResource().allocate(64, stream=self.s)
            self.s.sync()
        return self._managed

    def view(self):
        """A StridedMemoryView of the device buffer as 4 x 4 int32."""
        return self.m.utils.StridedMemoryView.from_buffer(self.buf, shape=(4, 4),
                                                          dtype=np.dtype(np.int32))

    def definition(self):
        """A GraphDefinition with a node of each kind the reads look at, made once: {name: node},
        and the definition and the event its record and wait nodes use under "def", "event"."""
        if getattr(self, "_nodes", None) is None:
            m, g = self.m, self.m.graph
            d, ev = g.GraphDefinition(), self.dev.create_event()
            first = d.empty()
            kernel = first.launch(m.LaunchConfig(grid=1, block=1), self.kernel, self.pinned, 3)
            memset = kernel.memset(self.buf, np.uint32(1), 4)
            memcpy = memset.memcpy(self.buf, self.pinned, 4)
            record = memcpy.record(ev)
            wait = record.wait(ev)
            callback = wait.callback(lambda: None)
            alloc = callback.allocate(64)
            free = alloc.deallocate(alloc.dptr)
            child = free.embed(g.GraphDefinition())

            def cond():  # a handle of its own for each conditional node, as the driver wants
                return d.create_condition(default_value=0)

            self._nodes = {"def": d, "event": ev, "empty": first, "kernel": kernel,
                           "memset": memset, "memcpy": memcpy, "record": record, "wait": wait,
                           "callback": callback, "alloc": alloc, "free": free, "child": child,
                           "if": child.if_then(cond()), "if_else": child.if_else(cond()),
                           "while": child.while_loop(cond()), "switch": child.switch(cond(), 3)}
        return self._nodes


def _name(obj):
    return type(obj).__name__


# The calls: label -> function of the Env and the edge input x; each returns a plain value.
CALLS = {
    "Device(x)": lambda e, x: e.m.Device(x).device_id,
    "Device.create_stream(x)": lambda e, x: _name(e.dev.create_stream(x)),
    "Device.create_stream(options=x)": lambda e, x: _name(e.dev.create_stream(options=x)),
    "Device.create_event(options=x)": lambda e, x: _name(e.dev.create_event(options=x)),
    "Device.allocate(x, stream)": lambda e, x: e.dev.allocate(x, stream=e.s).size,
    "Device.allocate(16, stream=x)": lambda e, x: e.dev.allocate(16, stream=x).size,
    "Device.create_graph_builder().begin_building(x)":
        lambda e, x: _name(e.builder().begin_building(x).end_building()),
    "GraphBuilder.create_condition(default_value=x)":
        lambda e, x: _name(e.builder().begin_building().create_condition(default_value=x)),
    "Buffer.fill(x, stream)": lambda e, x: e.fill(x),
    "Buffer.fill(1, stream=x)": lambda e, x: e.fill(1, stream=x),
    "Buffer.copy_to(x, stream)": lambda e, x: _name(e.buf.copy_to(x, stream=e.s)),
    "Buffer.copy_from(x, stream)": lambda e, x: _name(e.buf.copy_from(x, stream=e.s)),
    "Buffer.from_handle(ptr, x)": lambda e, x: e.m.Buffer.from_handle(int(e.buf.handle), x).size,
    "Stream.wait(x)": lambda e, x: _name(e.s.wait(x)),
    "Stream.record(x)": lambda e, x: _name(e.s.record(x)),
    "Stream.record(options=x)": lambda e, x: _name(e.s.record(options=x)),
    "Stream.from_handle(x)": lambda e, x: _name(e.m.Stream.from_handle(x)),
    "ObjectCode.get_kernel(x)": lambda e, x: _name(e.code.get_kernel(x)),
    "Kernel.attributes.num_regs(x)": lambda e, x: e.kernel.attributes.num_regs(x) > 0,
    "Kernel.occupancy.max_active_blocks_per_multiprocessor(x, 0)":
        lambda e, x: e.kernel.occupancy.max_active_blocks_per_multiprocessor(x, 0) > 0,
    "launch: LaunchConfig(grid=x, block=1)":
        lambda e, x: e.launch(e.m.LaunchConfig(grid=x, block=1)),
    "launch: LaunchConfig(grid=1, block=x)":
        lambda e, x: e.launch(e.m.LaunchConfig(grid=1, block=x)),
    "launch: LaunchConfig(grid=1, block=1, shmem_size=x)":
        lambda e, x: e.launch(e.m.LaunchConfig(grid=1, block=1, shmem_size=x)),
    "launch(stream, config, kernel, ptr, x)": lambda e, x: e.launch(value=x),
    "DeviceMemoryResource(x)": lambda e, x: e.m.DeviceMemoryResource(x).device_id,
    "DeviceMemoryResource(0, options=x)":
        lambda e, x: _name(e.m.DeviceMemoryResource(0, options=x)),
    "LegacyPinnedMemoryResource().allocate(x)":
        lambda e, x: e.m.LegacyPinnedMemoryResource().allocate(x, stream=e.s).size,
    "utils.StridedMemoryView.from_buffer(buf, shape=x)":
        lambda e, x: e.m.utils.StridedMemoryView.from_buffer(
            e.buf, shape=x, dtype=np.dtype(np.int32)).shape,
}


def _mr_reads(mr):
    return (mr.device_id, mr.is_device_accessible, mr.is_host_accessible, mr.is_managed)


# A process with a CUDA context (device 0's primary one) that waits to be checkpointed.
_CUDA_SLEEPER = """
import ctypes, time
cuda = ctypes.CDLL("libcuda.so.1")
ctx = ctypes.c_void_p()
assert cuda.cuInit(0) == 0 and cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
print("ready", flush=True)
time.sleep(120)
"""


def _checkpoint_cycle(e):
    """The states of another process through lock, checkpoint, restore and unlock. Where a step
    raises, the process is let go (restored, unlocked) before it is killed. The killed process
    is reaped on a thread of its own: in one loaded run (24 workers on two H200s) the wait for
    it outlasted the parent's stall limit (STALL_S), and what is compared is the states."""
    child = subprocess.Popen([sys.executable, "-c", _CUDA_SLEEPER], stdout=subprocess.PIPE,
                             text=True)
    p = None
    try:
        assert child.stdout.readline().strip() == "ready"
        p = e.m.checkpoint.Process(child.pid)
        states = [_kind(p.state)]
        for step in (lambda: p.lock(10000), p.checkpoint, p.restore, p.unlock):
            step()
            states.append(_kind(p.state))
        return states
    except BaseException:
        if p is not None:
            _let_go(p)
        raise
    finally:
        child.kill()
        threading.Thread(target=child.wait, daemon=True).start()


def _let_go(p):
    """Bring a checkpointed or locked process back to running, as far as the driver lets it."""
    try:
        if str(p.state) == "checkpointed":
            p.restore()
        if str(p.state) == "locked":
            p.unlock()
    except Exception:  # cleanup after a failed step: that step's error is the one reported
        pass


def _same_buffer(result, buf):
    """What a call returned, compared with ``buf``: its class and whether it has buf's address
    and size (the reprs differ between the packages)."""
    if result is None:
        return None
    return _name(result), (int(result.handle), result.size) == (int(buf.handle), buf.size)


def _kind(value):
    """An enum member or a plain value, as both packages can be compared by it: a member's
    name, or a str, lowercased (``GraphMemoryType.DEVICE`` and cuda.core's ``"device"``)."""
    value = getattr(value, "name", value)
    return value.lower() if isinstance(value, str) else value


# Reads: label -> function of the Env; each returns a plain value, compared between packages.
READS = {
    "Kernel.num_arguments, Kernel.arguments_info":
        lambda e: (e.kernel.num_arguments, [(p.offset, p.size) for p in e.kernel.arguments_info]),
    "ObjectCode.code, ObjectCode.code_type, ObjectCode.name, ObjectCode.symbol_mapping":
        lambda e: (e.code.code == e.ptx(), e.code.code_type, e.code.name,
                   dict(e.code.symbol_mapping or {})),
    "ObjectCode.get_module()": lambda e: e.code.get_module() is not None,
    "Device.arch, Device.compute_capability, Device.name, Device.pci_bus_id, Device.uuid, "
    "Device.device_id":
        lambda e: (e.dev.arch, tuple(e.dev.compute_capability), e.dev.name, e.dev.pci_bus_id,
                   e.dev.uuid, e.dev.device_id),
    "Device.get_all_devices()": lambda e: [d.device_id for d in e.m.Device.get_all_devices()],
    "Device.default_stream, Device.sync()":
        lambda e: (_name(e.dev.default_stream), e.dev.sync()),
    "Device.set_current()": lambda e: _name(e.dev.set_current()),
    "Device.can_access_peer(0)": lambda e: e.dev.can_access_peer(0),
    "Device.to_system_device(): system.Device.index, system.Device.uuid":
        lambda e: (lambda s: (s.index, s.uuid))(e.dev.to_system_device()),
    "Device.resources: DeviceResources.sm: SMResource.sm_count, SMResource.min_partition_size, "
    "SMResource.coscheduled_alignment, SMResource.flags":
        lambda e: (lambda r: (r.sm_count, r.min_partition_size, r.coscheduled_alignment,
                              int(r.flags)))(e.dev.resources.sm),
    "Device.resources: DeviceResources.workqueue: WorkqueueResource.concurrency_limit, "
    "WorkqueueResource.sharing_scope":
        lambda e: (lambda w: (w.concurrency_limit, _kind(w.sharing_scope)))(
            e.dev.resources.workqueue),
    "Device.context: Context.is_green, Context.create_stream()":
        lambda e: (e.dev.context.is_green, _name(e.dev.context.create_stream())),
    "Stream.device, Stream.context, Stream.is_nonblocking, Stream.priority, Stream.sync()":
        lambda e: (e.s.device.device_id, e.s.context == e.dev.context, e.s.is_nonblocking,
                   e.s.priority, e.s.sync()),
    "Stream.close(), Stream.is_closed":
        lambda e: (lambda s: (s.close(), s.is_closed))(e.dev.create_stream()),
    "Stream.create_graph_builder()": lambda e: _name(e.s.create_graph_builder()),
    "Stream.record(): Event.is_done, Event.is_timing_enabled, Event.is_blocking_sync, "
    "Event.is_ipc_enabled, Event.sync(), Event.device, Event.context":
        lambda e: (lambda ev: (ev.sync(), ev.is_done, ev.is_timing_enabled, ev.is_blocking_sync,
                               ev.is_ipc_enabled, ev.device.device_id,
                               ev.context == e.dev.context))(e.s.record()),
    "Event.close(), Event.is_closed":
        lambda e: (lambda ev: (ev.close(), ev.is_closed))(e.dev.create_event()),
    "Buffer.size, Buffer.device_id, Buffer.is_device_accessible, Buffer.is_host_accessible, "
    "Buffer.is_managed, Buffer.is_mapped, Buffer.memory_resource, Buffer.owner":
        lambda e: (e.buf.size, e.buf.device_id, e.buf.is_device_accessible,
                   e.buf.is_host_accessible, e.buf.is_managed, e.buf.is_mapped,
                   e.buf.memory_resource is e.dev.memory_resource, e.buf.owner),
    "Buffer.close(), Buffer.is_closed":
        lambda e: (lambda b: (b.close(e.s), b.is_closed))(e.dev.allocate(16, stream=e.s)),
    "LegacyPinnedMemoryResource: MemoryResource.device_id, MemoryResource.is_device_accessible, "
    "MemoryResource.is_host_accessible, MemoryResource.is_managed":
        lambda e: _mr_reads(e.m.LegacyPinnedMemoryResource()),
    "MemoryResource.allocate(16, stream), MemoryResource.deallocate(ptr, 16, stream)":
        lambda e: (lambda mr: (lambda b: mr.deallocate(b.handle, 16, e.s))(
            mr.allocate(16, e.s)))(e.m.LegacyPinnedMemoryResource()),
    "Linker.which_backend(), Linker.get_info_log(), Linker.get_error_log(), Linker.close(), "
    "Linker.is_closed":
        lambda e: (lambda lk: (_kind(lk.which_backend()), lk.link("cubin").code_type,
                               type(lk.get_info_log()).__name__,
                               type(lk.get_error_log()).__name__, lk.close(), lk.is_closed))(
            e.m.Linker(e.m.ObjectCode.from_ptx(e.ptx()),
                       options=e.m.LinkerOptions(arch="sm_" + e.dev.arch))),
    "Program.backend, Program.close(), Program.is_closed":
        lambda e: (lambda p: (_kind(p.backend), p.close(), p.is_closed))(
            e.m.Program(e.ptx().decode(), "ptx", e.m.ProgramOptions(arch="sm_" + e.dev.arch))),
    "Graph.upload(stream), Graph.launch(stream), Graph.close(), Graph.is_closed":
        lambda e: (lambda g: (g.upload(e.s), g.launch(e.s), e.read(), g.close(),
                              g.is_closed))(e.graph()),
    "GraphBuilder.is_building, GraphBuilder.stream, GraphBuilder.is_join_required, "
    "GraphBuilder.end_building(), GraphBuilder.graph_definition, GraphBuilder.complete(), "
    "GraphBuilder.close(), GraphBuilder.is_closed":
        lambda e: (lambda b: (b.is_building, _name(b.stream), b.is_join_required,
                              _name(b.end_building()), _name(b.graph_definition),
                              _name(b.complete()), b.close(), b.is_closed))(
            e.builder().begin_building()),
    "Context.resources, Stream.resources":
        lambda e: (_name(e.dev.context.resources), _name(e.s.resources)),
}


def _node(e, name):
    return e.definition()[name]


def _exec(e, name):
    """The executable view of node ``name`` in an instantiation of the definition."""
    return e.definition()["def"].instantiate()[_node(e, name)]


READS.update({
    "GraphDefinition.nodes(), GraphDefinition.edges(), GraphDefinition.is_valid, "
    "GraphNode.type, GraphNode.pred, GraphNode.succ, GraphNode.graph, GraphNode.is_valid":
        lambda e: (len(_node(e, "def").nodes()), len(_node(e, "def").edges()),
                   _node(e, "def").is_valid, _kind(_node(e, "kernel").type),
                   len(_node(e, "kernel").pred), len(_node(e, "kernel").succ),
                   _node(e, "kernel").graph == _node(e, "def"), _node(e, "kernel").is_valid),
    "KernelNode.grid, KernelNode.block, KernelNode.shmem_size, KernelNode.config, "
    "KernelNode.kernel":
        lambda e: (lambda k: (tuple(k.grid), tuple(k.block), k.shmem_size,
                              tuple(k.config.grid), k.kernel == e.kernel))(_node(e, "kernel")),
    "MemsetNode.dptr, MemsetNode.value, MemsetNode.element_size, MemsetNode.width, "
    "MemsetNode.height, MemsetNode.pitch":
        lambda e: (lambda n: (int(n.dptr) == int(e.buf.handle), int(n.value), n.element_size,
                              n.width, n.height, n.pitch))(_node(e, "memset")),
    "MemcpyNode.dst, MemcpyNode.src, MemcpyNode.size":
        lambda e: (lambda n: (int(n.dst) == int(e.buf.handle),
                              int(n.src) == int(e.pinned.handle), n.size))(_node(e, "memcpy")),
    "EventRecordNode.event, EventWaitNode.event":
        lambda e: (_node(e, "record").event == _node(e, "event"),
                   _node(e, "wait").event == _node(e, "event")),
    "AllocNode.bytesize, AllocNode.device_id, AllocNode.dptr, AllocNode.memory_type, "
    "AllocNode.peer_access, FreeNode.dptr":
        lambda e: (lambda a, f: (a.bytesize, a.device_id, int(a.dptr) != 0,
                                 _kind(a.memory_type), list(a.peer_access or ()),
                                 int(f.dptr) == int(a.dptr)))(_node(e, "alloc"), _node(e, "free")),
    "ChildGraphNode.child_graph": lambda e: _name(_node(e, "child").child_graph),
    "IfNode.then, and of the IfNode: ConditionalNode.condition, ConditionalNode.cond_type, "
    "ConditionalNode.branches":
        lambda e: (lambda n: (_name(n.then), _name(n.condition), _kind(n.cond_type),
                              len(n.branches)))(_node(e, "if")),
    "IfElseNode.then, IfElseNode.else_, WhileNode.body, SwitchNode.branches":
        lambda e: (_name(_node(e, "if_else").then), _name(_node(e, "if_else").else_),
                   _name(_node(e, "while").body), len(_node(e, "switch").branches)),
    "GraphDefinition.instantiate(), Graph[KernelNode]: ExecutableKernelNode.is_enabled, "
    "ExecutableKernelNode.disable(), ExecutableKernelNode.enable()":
        lambda e: (lambda x: (x.is_enabled, x.disable(), x.is_enabled, x.enable(),
                              x.is_enabled))(_exec(e, "kernel")),
    "Graph[MemsetNode]: ExecutableMemsetNode.is_enabled, ExecutableMemsetNode.disable(), "
    "ExecutableMemsetNode.enable()":
        lambda e: (lambda x: (x.is_enabled, x.disable(), x.is_enabled, x.enable(),
                              x.is_enabled))(_exec(e, "memset")),
    "Graph[MemcpyNode]: ExecutableMemcpyNode.is_enabled, ExecutableMemcpyNode.disable(), "
    "ExecutableMemcpyNode.enable()":
        lambda e: (lambda x: (x.is_enabled, x.disable(), x.is_enabled, x.enable(),
                              x.is_enabled))(_exec(e, "memcpy")),
    "Graph.update(GraphDefinition)":
        lambda e: (lambda d: d.instantiate().update(d))(_node(e, "def")),
    "GraphNode.destroy(), GraphNode.is_valid":
        lambda e: (lambda n: (n.destroy(), n.is_valid))(
            e.m.graph.GraphDefinition().empty()),
})


def _apart(reads):
    """{label: what ``read()`` returns, or ["err", its exception's class name]} for
    ``{label: read}``: one failure does not hide the rest."""
    out = {}
    for label, read in reads.items():
        try:
            out[label] = read()
        except Exception as exc:  # an outcome compared between the packages
            out[label] = ["err", type(exc).__name__]
    return out


def _attribute(obj, name):
    """Attribute ``name`` of ``obj``, or what it returns for a ``name`` ending in ``()``."""
    value = getattr(obj, name.rstrip("()"))
    return value() if name.endswith("()") else value


def _each(obj, names, plain):
    """{name: ``_attribute(obj, name)`` as ``plain`` makes it comparable}, read apart."""
    return _apart({name: lambda name=name: plain(_attribute(obj, name)) for name in names})


_NODE_BUILDERS = ("empty", "launch", "memset", "memcpy", "record", "wait", "callback", "allocate",
                  "deallocate", "embed", "if_then", "if_else", "while_loop", "switch")
_NVML_VALUES = ("index", "uuid", "uuid_without_prefix", "pci_bus_id", "numa_node_id", "arch",
                "name", "brand", "serial", "module_id", "minor_number", "is_c2c_enabled",
                "is_persistence_mode_enabled", "cuda_compute_capability", "addressing_mode",
                "is_display_connected", "is_display_active", "num_fans",
                "is_auto_boosted_clocks_enabled", "get_device_count()", "get_nvlink_count()",
                "supported_pstates")
# Values that change while the machine runs: their types are compared.
_NVML_TYPES = ("mig", "attributes", "cooler", "inforom", "bar1_memory_info", "memory_info",
               "pci_info", "performance_state", "dynamic_pstates_info", "temperature",
               "utilization", "current_clock_event_reasons", "supported_clock_event_reasons",
               "compute_running_processes", "repair_status", "get_supported_event_types()",
               "get_all_devices()", "get_nvlinks()", "to_cuda_device()")

READS.update({
    "GraphDefinition.empty(), GraphDefinition.create_condition(), and the node each of "
    + ", ".join(f"GraphNode.{n}()" for n in _NODE_BUILDERS[1:]) + " makes":
        lambda e: sorted(_name(n) for k, n in e.definition().items()
                         if k not in ("def", "event")),
    "system.Device: " + ", ".join(f"system.Device.{n}" for n in _NVML_VALUES):
        lambda e: _each(e.dev.to_system_device(), _NVML_VALUES,
                        lambda v: _kind(v) if not isinstance(v, (list, tuple)) else
                        [_kind(i) for i in v]),
    "system.Device (types): " + ", ".join(f"system.Device.{n}" for n in _NVML_TYPES):
        lambda e: _each(e.dev.to_system_device(), _NVML_TYPES, lambda v: type(v).__name__),
    # This child's own CPU affinity, set to the device's CPUs and cleared again.
    "system.Device.set_cpu_affinity(), system.Device.clear_cpu_affinity()":
        lambda e: (lambda d: (d.set_cpu_affinity(), d.clear_cpu_affinity()))(
            e.dev.to_system_device()),
    # Reads of this process's checkpoint state only: locking or checkpointing itself would
    # stop the child.
    "checkpoint.Process.pid, checkpoint.Process.state, checkpoint.Process.restore_thread_id":
        lambda e: (lambda p: (p.pid == os.getpid(), _kind(p.state),
                              type(p.restore_thread_id).__name__))(
            e.m.checkpoint.Process(os.getpid())),
    "checkpoint.Process.lock(), checkpoint.Process.checkpoint(), checkpoint.Process.restore(), "
    "checkpoint.Process.unlock() of another process: its states": _checkpoint_cycle,
    "Device.create_context(ContextOptions(resources=all SMs)), Context.is_closed, "
    "Context.close()":
        lambda e: (lambda c: (c.is_closed, c.close(), c.is_closed))(
            e.dev.create_context(e.m.ContextOptions(resources=[e.dev.resources.sm]))),
    # Not get_num_devices(): ours counts the CUDA devices this process sees, cuda.core 1.2.0
    # NVML's (2 against 1 with CUDA_VISIBLE_DEVICES=0 on two H200s), as docs/system.rst says.
    "system.get_driver_branch(), system.get_kernel_mode_driver_version(), "
    "system.get_nvml_version(), system.get_user_mode_driver_version()":
        lambda e: _each(e.m.system, ("get_driver_branch()", "get_kernel_mode_driver_version()",
                                     "get_nvml_version()", "get_user_mode_driver_version()"),
                        repr),
    "system.get_num_devices(): at least one": lambda e: e.m.system.get_num_devices() >= 1,
    "system.get_topology_common_ancestor(d, d)":
        lambda e: (lambda d: _kind(e.m.system.get_topology_common_ancestor(d, d)))(
            e.dev.to_system_device()),
})


def _tex(e, name):
    return e.textures()[name]


def _plain(v):
    """A value both packages can be compared by: an enum by its name, a Device by its id, a
    sequence item by item, an object by its class's name."""
    if isinstance(v, (list, tuple)):
        return [_plain(i) for i in v]
    if v is None or isinstance(v, (bool, int, float, str, bytes)):
        return v
    if hasattr(v, "name") and hasattr(v, "value"):
        return v.name
    if hasattr(v, "device_id"):
        return ("device", v.device_id)
    return type(v).__name__


_ARRAY = ("shape", "format", "num_channels", "element_bytes", "size_bytes",
          "is_surface_load_store", "device")
_MIPMAPPED = ("shape", "format", "num_channels", "num_levels", "is_surface_load_store", "device")
_DESCRIPTOR = ("kind", "format", "num_channels", "size_bytes", "width", "height", "pitch_bytes",
               "source")
_VIEW = ("shape", "strides", "dtype", "size", "device_id", "is_device_accessible", "readonly")
_MANAGED = ("read_mostly", "preferred_location", "accessed_by", "is_managed",
            "is_host_accessible", "is_device_accessible")
# Each handle's type, and whether int() takes it: what a caller of cuda.bindings passes on.
_HANDLES = {
    "Buffer.handle": lambda e: e.buf.handle, "Stream.handle": lambda e: e.s.handle,
    "Event.handle": lambda e: e.s.record().handle, "Kernel.handle": lambda e: e.kernel.handle,
    "ObjectCode.handle": lambda e: e.code.handle, "Context.handle": lambda e: e.dev.context.handle,
    "Linker.handle": lambda e: e.m.Linker(e.m.ObjectCode.from_ptx(e.ptx()), options=e.m.LinkerOptions(
        arch="sm_" + e.dev.arch)).handle,
    "Program.handle": lambda e: e.m.Program(e.ptx().decode(), "ptx", e.m.ProgramOptions(
        arch="sm_" + e.dev.arch)).handle,
    "Graph.handle": lambda e: e.graph().handle,
    "GraphDefinition.handle": lambda e: e.definition()["def"].handle,
    "GraphNode.handle": lambda e: e.definition()["empty"].handle,
    "GraphCondition.handle": lambda e: e.definition()["if"].condition.handle,
    "SMResource.handle": lambda e: e.dev.resources.sm.handle,
    "WorkqueueResource.handle": lambda e: e.dev.resources.workqueue.handle,
    "DeviceMemoryResource.handle": lambda e: e.dev.memory_resource.handle,
    "OpaqueArray.handle": lambda e: _tex(e, "array").handle,
    "MipmappedArray.handle": lambda e: _tex(e, "mipmapped").handle,
    "TextureObject.handle": lambda e: _tex(e, "texture").handle,
    "SurfaceObject.handle": lambda e: _tex(e, "surface").handle,
}


def _handle_kinds(e):
    return _apart({label: lambda get=get: (lambda h: (type(h).__name__, int(h) != 0))(get(e))
                   for label, get in _HANDLES.items()})


READS.update({
    ", ".join(_HANDLES) + ": their types": _handle_kinds,
    ", ".join(f"OpaqueArray.{n}" for n in _ARRAY):
        lambda e: _each(_tex(e, "array"), _ARRAY, _plain),
    ", ".join(f"MipmappedArray.{n}" for n in _MIPMAPPED) + ", MipmappedArray.get_level()":
        lambda e: (_each(_tex(e, "mipmapped"), _MIPMAPPED, _plain),
                   list(_tex(e, "mipmapped").get_level(1).shape)),
    "ResourceDescriptor.from_opaque_array(), ResourceDescriptor.from_mipmapped_array(), "
    "ResourceDescriptor.from_linear(), ResourceDescriptor.from_pitch2d(): "
    + ", ".join(f"ResourceDescriptor.{n}" for n in _DESCRIPTOR):
        lambda e: {k: _each(_tex(e, k), _DESCRIPTOR, _plain)
                   for k in ("rd_array", "rd_mipmapped", "rd_linear", "rd_pitch2d")},
    "TextureObject.resource, TextureObject.options, TextureObject.device, "
    "SurfaceObject.resource, SurfaceObject.device":
        lambda e: (_each(_tex(e, "texture"), ("resource", "options", "device"), _plain),
                   _each(_tex(e, "surface"), ("resource", "device"), _plain)),
    "OpaqueArray.copy_from(buffer, stream=), OpaqueArray.copy_to(buffer, stream=)":
        lambda e: (lambda a, b: (a.copy_from(b, stream=e.s),
                                 _same_buffer(a.copy_to(b, stream=e.s), b), e.s.sync()))(
            _tex(e, "array"), e.dev.allocate(256, stream=e.s)),
    "TextureObject.close(), TextureObject.is_closed, SurfaceObject.close(), "
    "SurfaceObject.is_closed, OpaqueArray.close(), OpaqueArray.is_closed, MipmappedArray.close(), "
    "MipmappedArray.is_closed":
        lambda e: [(o.close(), o.is_closed) for o in (
            _tex(e, "texture"), _tex(e, "surface"), _tex(e, "array"), _tex(e, "mipmapped"))],
    ", ".join(f"StridedMemoryView.{n}" for n in _VIEW) + ", StridedMemoryView.ptr, "
    "StridedMemoryView.exporting_obj":
        lambda e: (_each(e.view(), _VIEW, lambda v: _plain(v) if not hasattr(v, "itemsize")
                         else str(v)),
                   e.view().ptr == int(e.buf.handle), e.view().exporting_obj is e.buf),
    ", ".join(f"ManagedBuffer.{n}" for n in _MANAGED) + ", ManagedMemoryResource.preferred_location":
        lambda e: (_each(e.managed(), _MANAGED, _plain),
                   _plain(e.managed().memory_resource.preferred_location)),
    "ManagedBuffer.prefetch(Device, stream=), ManagedBuffer.discard_prefetch(Host.numa_current(), "
    "stream=), ManagedBuffer.discard(stream=)":
        lambda e: (e.managed().prefetch(e.dev, stream=e.s),
                   e.managed().discard_prefetch(e.m.Host.numa_current(), stream=e.s),
                   e.managed().discard(stream=e.s), e.s.sync()),
    "utils.discard_prefetch_batch(stream, [ManagedBuffer], [Device])":
        lambda e: (e.m.utils.discard_prefetch_batch(e.s, [e.managed()], [e.dev]), e.s.sync()),
})


def _bodies(b):
    """The builders of a conditional's bodies, each captured empty: what the parent's end
    needs."""
    made = {"if_then": [b.if_then(b.create_condition(0))],
            "if_else": list(b.if_else(b.create_condition(0))),
            "while_loop": [b.while_loop(b.create_condition(0))],
            "switch": list(b.switch(b.create_condition(0), 3))}
    for bodies in made.values():
        for body in bodies:
            body.begin_building()
            body.end_building()
    return {k: [_name(x) for x in v] for k, v in made.items()}


def _fresh(e, kind):
    """A node of ``kind`` in a definition of its own, and that definition."""
    m, d = e.m, e.m.graph.GraphDefinition()
    node = {"kernel": lambda: d.launch(m.LaunchConfig(grid=1, block=1), e.kernel, e.pinned, 3),
            "memset": lambda: d.memset(e.buf, np.uint32(1), 4),
            "memcpy": lambda: d.memcpy(e.buf, e.pinned, 4),
            "record": lambda: d.record(e.dev.create_event()),
            "wait": lambda: d.wait(e.dev.create_event()),
            "child": lambda: d.embed(m.graph.GraphDefinition()),
            "callback": lambda: d.callback(lambda: None)}[kind]()
    return node, d


def _exec_fresh(e, kind):
    node, d = _fresh(e, kind)
    return d.instantiate()[node]


READS.update({
    "GraphBuilder.create_condition(), GraphBuilder.if_then(), GraphBuilder.if_else(), "
    "GraphBuilder.while_loop(), GraphBuilder.switch(): the body builders":
        lambda e: e.capturing(_bodies),
    "GraphBuilder.callback(fn), GraphBuilder.embed(GraphDefinition)":
        lambda e: e.capturing(lambda b: (b.callback(lambda: None),
                                         b.embed(e.m.graph.GraphDefinition()))),
})


def _ipc_types(e):
    """The classes of what IPC-enabled pools, their buffers and an IPC event hand out, each
    read apart (one failure does not hide the rest)."""
    m = e.m
    dmr = m.DeviceMemoryResource(0, options=m.DeviceMemoryResourceOptions(ipc_enabled=True))
    pmr = m.PinnedMemoryResource(options=m.PinnedMemoryResourceOptions(ipc_enabled=True))
    gets = {
        "DeviceMemoryResource.allocation_handle": lambda: dmr.allocation_handle,
        "DeviceMemoryResource.peer_accessible_by": lambda: dmr.peer_accessible_by,
        "Buffer.ipc_descriptor": lambda: dmr.allocate(64, stream=e.s).ipc_descriptor,
        "PinnedMemoryResource.allocation_handle": lambda: pmr.allocation_handle,
        "PinnedMemoryResource.numa_id": lambda: pmr.numa_id,
        "Event.ipc_descriptor": lambda: e.dev.create_event(
            options=m.EventOptions(ipc_enabled=True)).ipc_descriptor,
        # Its own pool, imported in the same process.
        "DeviceMemoryResource.from_allocation_handle":
            lambda: m.DeviceMemoryResource.from_allocation_handle(0, dmr.allocation_handle),
        "PinnedMemoryResource.from_allocation_handle":
            lambda: m.PinnedMemoryResource.from_allocation_handle(pmr.allocation_handle),
    }
    return _apart({label: lambda get=get: type(get()).__name__ for label, get in gets.items()})


READS.update({
    "IPC: DeviceMemoryResource.allocation_handle, DeviceMemoryResource.peer_accessible_by, "
    "Buffer.ipc_descriptor, PinnedMemoryResource.allocation_handle, "
    "PinnedMemoryResource.numa_id, Event.ipc_descriptor, "
    "DeviceMemoryResource.from_allocation_handle(), "
    "PinnedMemoryResource.from_allocation_handle(): their types": _ipc_types,
    "Program.pch_status": lambda e: _plain(e.m.Program(
        'extern "C" __global__ void k() {}', "c++",
        e.m.ProgramOptions(arch="sm_" + e.dev.arch)).pch_status),
    "TensorMapDescriptor.device":
        lambda e: _plain(e.view().as_tensor_map(box_dim=(4, 4)).device),
    "WorkqueueResource.device": lambda e: _plain(e.dev.resources.workqueue.device),
    # Issue 27, part 4: the fallbacks cuda.core makes.
    "SMResource.split(SMResourceOptions()) on this driver":
        lambda e: (lambda groups, rest: (len(groups), _name(rest)))(
            *e.dev.resources.sm.split(e.m.SMResourceOptions())),
    "ManagedMemoryResource().allocate(64), ManagedMemoryResource.attributes":
        lambda e: (lambda mr: (_name(mr.allocate(64, stream=e.s)),  # (the attributes' class
                               type(mr.attributes.release_threshold).__name__))(  # is private)
            e.m.ManagedMemoryResource()),
    "PinnedMemoryResource().allocate(16), Buffer.fill(7, stream=): the bytes":
        lambda e: (lambda b: (b.fill(7, stream=e.s), e.s.sync(),
                              ctypes.string_at(int(b.handle), 4)))(
            e.m.PinnedMemoryResource().allocate(16, stream=e.s)),
    "GraphMemoryResource(Device).allocate(64, stream=GraphBuilder) while capturing":
        lambda e: e.capturing(lambda b: _name(e.m.GraphMemoryResource(e.dev).allocate(
            64, stream=b))),
})


def _split(e, b, count):
    parts = b.split(count)
    try:
        return len(parts)
    finally:
        if len(parts) > 1:
            b.join(*parts)


# Calls of the members the reads do not reach, each given the edge input x (as CALLS).
CALLS.update({
    "Device.can_access_peer(x)": lambda e, x: e.dev.can_access_peer(x),
    "Device.create_opaque_array(x)": lambda e, x: _name(e.dev.create_opaque_array(x)),
    "Device.create_mipmapped_array(x)": lambda e, x: _name(e.dev.create_mipmapped_array(x)),
    "Device.create_texture_object(resource=x)":
        lambda e, x: _name(e.dev.create_texture_object(resource=x)),
    "Device.create_surface_object(resource=x)":
        lambda e, x: _name(e.dev.create_surface_object(resource=x)),
    "Kernel.from_handle(x)": lambda e, x: _name(e.m.Kernel.from_handle(x)),
    "Buffer.set_deallocation_stream(x)":
        lambda e, x: e.dev.allocate(16, stream=e.s).set_deallocation_stream(x),
    "GraphBuilder.split(x)": lambda e, x: e.capturing(lambda b: _split(e, b, x)),
    "GraphBuilder.debug_dot_print(x)":
        lambda e, x: e.capturing(lambda b: b.debug_dot_print(x)),
    "Graph.upload(x)": lambda e, x: e.graph().upload(x),
    "Graph.launch(x)": lambda e, x: e.graph().launch(x),
    "SMResource.split(x)": lambda e, x: len(e.dev.resources.sm.split(x)[0]),
    "utils.copy_batch(stream, x, x)": lambda e, x: e.m.utils.copy_batch(e.s, x, x),
    "utils.prefetch_batch(stream, x, [0])": lambda e, x: e.m.utils.prefetch_batch(e.s, x, [0]),
    "utils.discard_batch(stream, x)": lambda e, x: e.m.utils.discard_batch(e.s, x),
    "system.get_process_name(x)": lambda e, x: type(e.m.system.get_process_name(x)).__name__,
    "GraphDefinition.allocate(x)": lambda e, x: _name(e.m.graph.GraphDefinition().allocate(x)),
    "GraphDefinition.deallocate(x)":
        lambda e, x: _name(e.m.graph.GraphDefinition().deallocate(x)),
    "GraphDefinition.memset(buf, x, 4)":
        lambda e, x: _name(e.m.graph.GraphDefinition().memset(e.buf, x, 4)),
    "GraphDefinition.memcpy(buf, buf, x)":
        lambda e, x: _name(e.m.graph.GraphDefinition().memcpy(e.buf, e.buf, x)),
    "GraphDefinition.launch(config, kernel, ptr, x)":
        lambda e, x: _name(e.m.graph.GraphDefinition().launch(
            e.m.LaunchConfig(grid=1, block=1), e.kernel, e.pinned, x)),
    "GraphDefinition.record(x)": lambda e, x: _name(e.m.graph.GraphDefinition().record(x)),
    "GraphDefinition.wait(x)": lambda e, x: _name(e.m.graph.GraphDefinition().wait(x)),
    "GraphDefinition.callback(x)": lambda e, x: _name(e.m.graph.GraphDefinition().callback(x)),
    "GraphDefinition.embed(x)": lambda e, x: _name(e.m.graph.GraphDefinition().embed(x)),
    "GraphDefinition.join(x)": lambda e, x: _name(e.m.graph.GraphDefinition().join(x)),
    "GraphDefinition.if_then(x)": lambda e, x: _name(e.m.graph.GraphDefinition().if_then(x)),
    "GraphDefinition.if_else(x)": lambda e, x: _name(e.m.graph.GraphDefinition().if_else(x)),
    "GraphDefinition.while_loop(x)":
        lambda e, x: _name(e.m.graph.GraphDefinition().while_loop(x)),
    "GraphDefinition.switch(condition, x)":
        lambda e, x: (lambda d: _name(d.switch(d.create_condition(), x)))(
            e.m.graph.GraphDefinition()),
    "GraphDefinition.instantiate(options=x)":
        lambda e, x: _name(e.m.graph.GraphDefinition().instantiate(options=x)),
    "GraphDefinition.debug_dot_print(x)":
        lambda e, x: e.m.graph.GraphDefinition().debug_dot_print(x),
    "system.get_p2p_status(d, d, x)": lambda e, x: (lambda d: _kind(
        e.m.system.get_p2p_status(d, d, x)))(e.dev.to_system_device()),
    "system.Device.get_clock(x)": lambda e, x: _name(e.dev.to_system_device().get_clock(x)),
    "system.Device.get_fan(x)": lambda e, x: _name(e.dev.to_system_device().get_fan(x)),
    "system.Device.get_field_values(x)":
        lambda e, x: _name(e.dev.to_system_device().get_field_values(x)),
    "system.Device.get_nvlink(x)": lambda e, x: _name(e.dev.to_system_device().get_nvlink(x)),
    "system.Device.get_topology_nearest_gpus(x)":
        lambda e, x: _name(e.dev.to_system_device().get_topology_nearest_gpus(x)),
    "system.Device.get_all_devices_with_cpu_affinity(x)":
        lambda e, x: _name(e.m.system.Device.get_all_devices_with_cpu_affinity(x)),
    "system.Device.get_cpu_affinity(x)":
        lambda e, x: _name(e.dev.to_system_device().get_cpu_affinity(x)),
    "system.Device.get_memory_affinity(x)":
        lambda e, x: _name(e.dev.to_system_device().get_memory_affinity(x)),
    "ManagedBuffer.read_mostly = x": lambda e, x: setattr(e.managed(), "read_mostly", x),
    "ManagedBuffer.preferred_location = x":
        lambda e, x: setattr(e.managed(), "preferred_location", x),
    "ManagedBuffer.accessed_by = x": lambda e, x: setattr(e.managed(), "accessed_by", x),
    "ManagedBuffer.prefetch(x, stream=)": lambda e, x: e.managed().prefetch(x, stream=e.s),
    "StridedMemoryView.as_tensor_map(box_dim=x)":
        lambda e, x: _name(e.view().as_tensor_map(box_dim=x)),
    "StridedMemoryView.from_cuda_array_interface(x)":
        lambda e, x: _name(e.m.utils.StridedMemoryView.from_cuda_array_interface(x)),
    "utils.args_viewable_as_strided_memory(x)":
        lambda e, x: callable(e.m.utils.args_viewable_as_strided_memory(x)(lambda *a: None)),
    "MipmappedArray.get_level(x)": lambda e, x: list(_tex(e, "mipmapped").get_level(x).shape),
    "TensorMapDescriptor.replace_address(x)":
        lambda e, x: e.view().as_tensor_map(box_dim=(4, 4)).replace_address(x),
    "GraphBuilder.callback(x)": lambda e, x: e.capturing(lambda b: b.callback(x)),
    "GraphBuilder.embed(x)": lambda e, x: e.capturing(lambda b: b.embed(x)),
    "GraphBuilder.if_then(x)": lambda e, x: e.capturing(lambda b: _name(b.if_then(x))),
    "GraphBuilder.if_else(x)": lambda e, x: e.capturing(lambda b: len(b.if_else(x))),
    "GraphBuilder.while_loop(x)": lambda e, x: e.capturing(lambda b: _name(b.while_loop(x))),
    "GraphBuilder.switch(condition, x)":
        lambda e, x: e.capturing(lambda b: len(b.switch(b.create_condition(0), x))),
    "GraphBuilder.join(x)": lambda e, x: _name(e.m.graph.GraphBuilder.join(x)),
    "KernelNode.update(config=x)": lambda e, x: _fresh(e, "kernel")[0].update(config=x),
    "MemsetNode.update(value=x)": lambda e, x: _fresh(e, "memset")[0].update(value=x),
    "MemcpyNode.update(size=x)": lambda e, x: _fresh(e, "memcpy")[0].update(size=x),
    "EventRecordNode.update(x)": lambda e, x: _fresh(e, "record")[0].update(x),
    "EventWaitNode.update(x)": lambda e, x: _fresh(e, "wait")[0].update(x),
    "ChildGraphNode.update(x)": lambda e, x: _fresh(e, "child")[0].update(x),
    "ExecutableKernelNode.update(config=x, kernel=, args=)":
        lambda e, x: _exec_fresh(e, "kernel").update(config=x, kernel=e.kernel,
                                                     args=(e.pinned, 3)),
    "ExecutableMemsetNode.update(dst=, value=x, width=4)":
        lambda e, x: _exec_fresh(e, "memset").update(dst=e.buf, value=x, width=4),
    "ExecutableMemcpyNode.update(dst=, src=, size=x)":
        lambda e, x: _exec_fresh(e, "memcpy").update(dst=e.buf, src=e.pinned, size=x),
    "ExecutableEventRecordNode.update(x)": lambda e, x: _exec_fresh(e, "record").update(x),
    "ExecutableEventWaitNode.update(x)": lambda e, x: _exec_fresh(e, "wait").update(x),
    "ExecutableChildGraphNode.update(x)": lambda e, x: _exec_fresh(e, "child").update(x),
    "ExecutableHostCallbackNode.update(x)": lambda e, x: _exec_fresh(e, "callback").update(x),
    "DeviceMemoryResource.from_registry(x)":
        lambda e, x: _name(e.m.DeviceMemoryResource.from_registry(x)),
    "PinnedMemoryResource.from_registry(x)":
        lambda e, x: _name(e.m.PinnedMemoryResource.from_registry(x)),
    "DeviceMemoryResource.register(x)": lambda e, x: _name(e.m.DeviceMemoryResource(
        0, options=e.m.DeviceMemoryResourceOptions(ipc_enabled=True)).register(x)),
    "PinnedMemoryResource.register(x)": lambda e, x: _name(e.m.PinnedMemoryResource(
        options=e.m.PinnedMemoryResourceOptions(ipc_enabled=True)).register(x)),
    "Buffer.from_ipc_descriptor(mr, x, stream=)": lambda e, x: _name(e.m.Buffer.from_ipc_descriptor(
        e.m.DeviceMemoryResource(0, options=e.m.DeviceMemoryResourceOptions(ipc_enabled=True)),
        x, stream=e.s)),
    "WorkqueueResource.configure(x)": lambda e, x: e.dev.resources.workqueue.configure(x),
    "VirtualMemoryResource.modify_allocation(buf, x)":
        lambda e, x: (lambda mr: mr.modify_allocation(mr.allocate(2 << 20, stream=e.s), x).size)(
            e.m.VirtualMemoryResource(0)),
    "HostCallbackNode.update(x)":
        lambda e, x: e.m.graph.GraphDefinition().callback(lambda: None).update(x),
    # The members no other case names (tests/test_differential_coverage.py).
    "graph.GraphNode.join(x)":
        lambda e, x: _name(e.m.graph.GraphDefinition().empty().join(x)),
    "system.Device.register_events(x)":
        lambda e, x: _name(e.dev.to_system_device().register_events(x)),
    "system.register_events(x)": lambda e, x: _name(e.m.system.register_events(x)),
    "system.Device.clear_field_values(x)":
        lambda e, x: e.dev.to_system_device().clear_field_values(x),
    # Options fields ours checks when the options are built and cuda.core stores: here they are
    # used, to see what cuda.core does with each input then (issue 27, part 1's refusals).
    "GraphBuilder.complete(GraphCompleteOptions(upload_stream=x))":
        lambda e, x: _name(e.ended().complete(e.m.graph.GraphCompleteOptions(upload_stream=x))),
    "utils.copy_batch(stream, [a], [b], options=CopyOptions(src_location_hint=x))":
        lambda e, x: e.m.utils.copy_batch(
            e.s, [e.dev.allocate(64, stream=e.s)], [e.dev.allocate(64, stream=e.s)],
            options=e.m.utils.CopyOptions(src_location_hint=x)),
    "Device.create_context(ContextOptions(resources=x))":
        lambda e, x: _name(e.dev.create_context(e.m.ContextOptions(resources=x))),
    "VirtualMemoryResource(0, VirtualMemoryResourceOptions(peers=x)).allocate(2 MiB)":
        lambda e, x: e.m.VirtualMemoryResource(0, e.m.VirtualMemoryResourceOptions(
            peers=x)).allocate(2 << 20, stream=e.s).size,
    "SMResource.split(SMResourceOptions(count=[8], backfill=x))":
        lambda e, x: len(e.dev.resources.sm.split(
            e.m.SMResourceOptions(count=[8], backfill=x))[0]),
    "StridedMemoryView.as_tensor_map(box_dim=(4, 4), element_strides=x)":
        lambda e, x: _name(e.view().as_tensor_map(box_dim=(4, 4), element_strides=x)),
})


def _line(label, name, fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            line = ["ok", repr(fn())]
        except Exception as exc:  # the outcome under test, whatever it is
            line = ["err", [c.__name__ for c in type(exc).__mro__], str(exc)[:300]]
    warned = [[c.__name__ for c in w.category.__mro__] for w in caught]
    print(json.dumps([label, name, warned] + line), flush=True)


def main():
    package, labels = sys.argv[1], sys.argv[2:]
    # A hang's stacks: the parent sends SIGUSR1 before it kills a child that stopped printing.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    m = importlib.import_module(package)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = Env(m)
    for label in labels:
        if label in READS:
            _line(label, "-", lambda: READS[label](env))
            continue
        for name, x in EDGES.items():
            _line(label, name, lambda: CALLS[label](env, x))


if __name__ == "__main__":
    main()
