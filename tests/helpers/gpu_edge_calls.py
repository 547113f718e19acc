"""Public calls that need a GPU, each given the edge inputs of tests/test_differential_gpu_calls.py
in one argument, run through one package in this child process (issue 27, part 6).

    python gpu_edge_calls.py PACKAGE LABEL

prints one JSON line per edge input, flushed, so that the lines printed before a crash survive:
``[input, warned, "ok", repr of the value]`` or ``[input, warned, "err", [the exception's class
and base names], message]``, where ``warned`` lists, for each warning given, its class and base
names.
"""

import ctypes
import importlib
import json
import sys
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


def main():
    package, label = sys.argv[1], sys.argv[2]
    m = importlib.import_module(package)
    call = CALLS[label]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = Env(m)
    for name, x in EDGES.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                line = ["ok", repr(call(env, x))]
            except Exception as exc:  # the outcome under test, whatever it is
                line = ["err", [c.__name__ for c in type(exc).__mro__], str(exc)[:300]]
        warned = [[c.__name__ for c in w.category.__mro__] for w in caught]
        print(json.dumps([name, warned] + line), flush=True)


if __name__ == "__main__":
    main()
