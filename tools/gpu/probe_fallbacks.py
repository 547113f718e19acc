"""Issue 27, part 4: what NVIDIA's cuda.core does, beside ours, where ours still differs or
where its behaviour is not documented: as_tensor_map(data_type=...) over a view of another item
size, and allocations during stream capture from every memory resource. Prints one line per
case and package; run on the GPU machine (bash .gpu/on-gpu.sh python3 tools/gpu/probe_fallbacks.py).
"""

import importlib
import traceback

import numpy as np


def outcome(fn):
    try:
        return f"ok {fn()!r}"
    except Exception as exc:  # the outcome observed
        return f"{type(exc).__name__}: {str(exc)[:160]}"


def descriptor_bytes(desc):
    """The descriptor's 128 bytes where the object exposes them, else its repr."""
    import ctypes

    for name in ("_get_data_ptr", "ptr", "handle", "_address"):
        attr = getattr(desc, name, None)
        if attr is None:
            continue
        address = attr() if callable(attr) else attr
        try:
            return ctypes.string_at(int(address), 128).hex()[:96]
        except (TypeError, ValueError):
            continue
    return f"(no address; members {[n for n in dir(desc) if not n.startswith('__')]})"


def tensor_maps(m):
    dev = m.Device(0)
    dev.set_current()
    s = dev.create_stream()
    buf = dev.allocate(64 * 256, stream=s)
    s.sync()
    # dtype instances: cuda.core 1.2.0's from_buffer refuses a dtype class (np.uint8) with
    # TypeError (its itemsize is read from the class).
    u8 = m.utils.StridedMemoryView.from_buffer(buf, (64, 256), dtype=np.dtype(np.uint8))
    f32 = m.utils.StridedMemoryView.from_buffer(buf, (64, 64), dtype=np.dtype(np.float32))
    cases = {
        "uint8 view, box (8, 32), no data_type": lambda: u8.as_tensor_map((8, 32)),
        "uint8 view, box (8, 32), data_type float32": lambda: u8.as_tensor_map(
            (8, 32), data_type=np.dtype(np.float32)),
        "uint8 view, box (8, 8), data_type float32": lambda: u8.as_tensor_map(
            (8, 8), data_type=np.dtype(np.float32)),
        "uint8 view, box (8, 16), data_type float16": lambda: u8.as_tensor_map(
            (8, 16), data_type=np.dtype(np.float16)),
        "float32 view, box (8, 8), data_type uint8": lambda: f32.as_tensor_map(
            (8, 8), data_type=np.dtype(np.uint8)),
        "float32 view, box (8, 32), data_type uint8": lambda: f32.as_tensor_map(
            (8, 32), data_type=np.dtype(np.uint8)),
        "float32 view, box (8, 8)": lambda: f32.as_tensor_map((8, 8)),
    }
    for name, make in cases.items():
        def run(make=make):
            desc = make()
            return descriptor_bytes(desc)
        print(f"  tensor map | {name}: {outcome(run)}")


def captures(m):
    dev = m.Device(0)
    dev.set_current()
    resources = {
        "Device.memory_resource": lambda: dev.memory_resource,
        "DeviceMemoryResource(options)": lambda: m.DeviceMemoryResource(
            dev, m.DeviceMemoryResourceOptions()),
        "GraphMemoryResource": lambda: m.GraphMemoryResource(dev),
        "PinnedMemoryResource()": lambda: m.PinnedMemoryResource(),
        "ManagedMemoryResource()": lambda: m.ManagedMemoryResource(),
        "LegacyPinnedMemoryResource": lambda: m.LegacyPinnedMemoryResource(),
    }
    for name, make in resources.items():
        def during_capture(make=make):
            mr = make()
            gb = dev.create_graph_builder().begin_building()
            buf = mr.allocate(1024, stream=gb)
            kind = type(buf).__name__
            buf.close(gb)  # a free in the capture
            gb.end_building()
            g = gb.complete()
            s = dev.create_stream()
            g.launch(s)
            s.sync()
            return kind
        def outside(make=make):
            mr = make()
            s = dev.create_stream()
            buf = mr.allocate(1024, stream=s)
            s.sync()
            return type(buf).__name__
        print(f"  capture | {name}, allocate+free during capture: {outcome(during_capture)}")
        print(f"  capture | {name}, allocate outside capture: {outcome(outside)}")

    def kept_past_capture():
        gb = dev.create_graph_builder().begin_building()
        buf = m.GraphMemoryResource(dev).allocate(1024, stream=gb)
        gb.end_building()
        g = gb.complete()
        s = dev.create_stream()
        g.launch(s)
        s.sync()
        return int(buf.handle) != 0, buf.size
    print(f"  capture | GraphMemoryResource buffer not freed in the capture: "
          f"{outcome(kept_past_capture)}")


for package in ("cuda.core", "cuda_core"):
    m = importlib.import_module(package)
    print(f"{package} {getattr(m, '__version__', '?')}")
    for probe in (tensor_maps, captures):
        try:
            probe(m)
        except Exception:
            traceback.print_exc()
