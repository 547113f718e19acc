"""Differential scenarios without a GPU: the same call on NVIDIA's cuda.core 1.2.2 (the test
extra installs it from PyPI) and on ours, compared by what a user observes (values, exception
classes). See tests/helpers/differential.py for the rules; a difference by design names the
docs/migrating.rst section that says which harm our rule prevents.
"""

import enum
import importlib
import re

import numpy as np
import pytest

from helpers.differential import (Scenario, agree, migrating_sections, outcome,
                                  skip_where_reference_lacks_cuda_13)

from cuda_core import CUDAError, NVRTCError

pytest.importorskip("cuda.core", reason="NVIDIA's cuda-core 1.2.2 (the test extra installs it) "
                                        "is the reference")

FLAGS = "Flags, integers and list options"
ARRAY = np.arange(12, dtype=np.float32).reshape(3, 4)
LAUNCH = "Launch configuration"
COMPILE = "Compilation and the program cache"
SMALLER = "Smaller differences"


def sub(m, name):
    return importlib.import_module(f"{m.__name__}.{name}")


def public_enums(m):
    """Every enum class the package and its public submodules export (Python's, or
    cuda.bindings' FastEnum, which cuda.core re-exports for some): (module, class name,
    [(member name, value)...]), sorted."""
    found = []
    for name in ("", "typing", "graph", "texture", "utils", "system", "system.typing"):
        module = sub(m, name) if name else m
        for attr in dir(module):
            cls = getattr(module, attr)
            if attr.startswith("_") or not isinstance(cls, type) or not (
                    issubclass(cls, enum.Enum) or type(cls).__name__ == "FastEnumMetaclass"):
                continue
            found.append((name, attr, [(e.name, getattr(e, "value", e)) for e in cls]))
    return sorted(found)


def fields(obj, *names):
    return tuple(getattr(obj, n) for n in names)


SCENARIOS = [
    # -- LaunchConfig: its fields can be assigned ------------------------------------------------
    Scenario("LaunchConfig: grid assigned", lambda m: (lambda c: (
        setattr(c, "grid", (4, 2, 1)), setattr(c, "shmem_size", 64),
        fields(c, "grid", "block", "shmem_size"))[-1])(m.LaunchConfig(grid=1, block=32))),
    Scenario("LaunchConfig: assigned configs compare by value", lambda m: (lambda c: (
        setattr(c, "block", (64, 1, 1)), c == m.LaunchConfig(grid=1, block=64))[-1])(
            m.LaunchConfig(grid=1, block=32))),
    # -- StreamOptions / EventOptions ----------------------------------------------------------
    Scenario("StreamOptions()", lambda m: fields(m.StreamOptions(), "nonblocking", "priority")),
    Scenario("StreamOptions(nonblocking=1)",
             lambda m: bool(m.StreamOptions(nonblocking=1).nonblocking)),
    Scenario("StreamOptions(nonblocking=0)",
             lambda m: bool(m.StreamOptions(nonblocking=0).nonblocking)),
    Scenario("StreamOptions(nonblocking=None)",
             lambda m: bool(m.StreamOptions(nonblocking=None).nonblocking)),
    Scenario("StreamOptions(nonblocking=np.True_)",
             lambda m: bool(m.StreamOptions(nonblocking=np.True_).nonblocking)),
    Scenario("StreamOptions(nonblocking='no')", lambda m: m.StreamOptions(nonblocking="no"),
             differs=FLAGS, ours_raises=TypeError),
    Scenario("StreamOptions(priority=True)", lambda m: m.StreamOptions(priority=True).priority),
    Scenario("StreamOptions(priority=-1)", lambda m: m.StreamOptions(priority=-1).priority),
    Scenario("StreamOptions(priority=-1.5)", lambda m: m.StreamOptions(priority=-1.5),
             differs=FLAGS, ours_raises=ValueError),
    Scenario("EventOptions()", lambda m: tuple(bool(v) for v in fields(
        m.EventOptions(), "timing_enabled", "blocking_sync", "ipc_enabled"))),
    Scenario("EventOptions(blocking_sync=None, timing_enabled=None)", lambda m: fields(
        m.EventOptions(blocking_sync=None, timing_enabled=None), "timing_enabled",
        "blocking_sync", "ipc_enabled")),
    Scenario("EventOptions(timing_enabled=True)",
             lambda m: m.EventOptions(timing_enabled=True).timing_enabled),
    Scenario("EventOptions(timing_enabled=1)", lambda m: m.EventOptions(timing_enabled=1)),
    # -- LaunchConfig (the fields that need no device in cuda.core) -----------------------------
    Scenario("LaunchConfig(grid=4, block=32)",
             lambda m: fields(m.LaunchConfig(grid=4, block=32), "grid", "block", "shmem_size")),
    Scenario("LaunchConfig(grid=(2, 3), block=(4, 5, 6))",
             lambda m: fields(m.LaunchConfig(grid=(2, 3), block=(4, 5, 6)), "grid", "block")),
    Scenario("LaunchConfig(grid=True, block=1)",
             lambda m: fields(m.LaunchConfig(grid=True, block=1), "grid")),
    Scenario("LaunchConfig(grid=(2, True), block=1)",
             lambda m: fields(m.LaunchConfig(grid=(2, True), block=1), "grid")),
    Scenario("LaunchConfig(grid=1, block=1, shmem_size=True)",
             lambda m: m.LaunchConfig(grid=1, block=1, shmem_size=True).shmem_size),
    Scenario("LaunchConfig(grid=np.int64(3), block=np.uint8(2))",
             lambda m: fields(m.LaunchConfig(grid=np.int64(3), block=np.uint8(2)), "grid",
                              "block"),
             differs=LAUNCH, ours_raises=None),  # ours takes any __index__ int
    Scenario("LaunchConfig(grid=1.5, block=1)", lambda m: m.LaunchConfig(grid=1.5, block=1)),
    Scenario("LaunchConfig(grid='1', block=1)", lambda m: m.LaunchConfig(grid="1", block=1)),
    Scenario("LaunchConfig(grid=[1, 2], block=1)",
             lambda m: m.LaunchConfig(grid=[1, 2], block=1)),
    Scenario("LaunchConfig(grid=1, block=1.0)", lambda m: m.LaunchConfig(grid=1, block=1.0)),
    Scenario("LaunchConfig(grid=(), block=())",
             lambda m: fields(m.LaunchConfig(grid=(), block=()), "grid", "block")),
    # Past 32 bits: cuda.core builds the config and raises OverflowError at launch; ours
    # raises it (an OverflowError and ValueError) when the config is built.
    Scenario("LaunchConfig(grid=2**32, block=1)", lambda m: m.LaunchConfig(grid=2**32, block=1),
             differs=LAUNCH, ours_raises=OverflowError),
    Scenario("LaunchConfig(grid=1, block=1, shmem_size=-1)",
             lambda m: m.LaunchConfig(grid=1, block=1, shmem_size=-1),
             differs=LAUNCH, ours_raises=CUDAError),
    Scenario("LaunchConfig(grid=1, block=1, shmem_size=2**32)",
             lambda m: m.LaunchConfig(grid=1, block=1, shmem_size=2**32)),
    Scenario("LaunchConfig(grid=1, block=1, shmem_size=1.5)",
             lambda m: m.LaunchConfig(grid=1, block=1, shmem_size=1.5),
             differs=LAUNCH, ours_raises=TypeError),
    # -- memory resource options ---------------------------------------------------------------
    Scenario("DeviceMemoryResourceOptions()", lambda m: fields(
        m.DeviceMemoryResourceOptions(), "ipc_enabled", "max_size")),
    Scenario("DeviceMemoryResourceOptions(ipc_enabled=None)",
             lambda m: bool(m.DeviceMemoryResourceOptions(ipc_enabled=None).ipc_enabled)),
    Scenario("DeviceMemoryResourceOptions(ipc_enabled=1)",
             lambda m: bool(m.DeviceMemoryResourceOptions(ipc_enabled=1).ipc_enabled)),
    Scenario("DeviceMemoryResourceOptions(max_size=True)",
             lambda m: m.DeviceMemoryResourceOptions(max_size=True).max_size),
    Scenario("PinnedMemoryResourceOptions(ipc_enabled=None)",
             lambda m: bool(m.PinnedMemoryResourceOptions(ipc_enabled=None).ipc_enabled)),
    Scenario("DeviceMemoryResourceOptions(max_size=1.5)",
             lambda m: m.DeviceMemoryResourceOptions(max_size=1.5),
             differs=FLAGS, ours_raises=TypeError),
    Scenario("VirtualMemoryResourceOptions(addr_align=3)",
             lambda m: m.VirtualMemoryResourceOptions(addr_align=3),
             differs=SMALLER, ours_raises=CUDAError),
    Scenario("PinnedMemoryResourceOptions(numa_id=True)",
             lambda m: m.PinnedMemoryResourceOptions(numa_id=True).numa_id),
    Scenario("VirtualMemoryResourceOptions(gpu_direct_rdma=None)", lambda m: bool(
        m.VirtualMemoryResourceOptions(gpu_direct_rdma=None).gpu_direct_rdma)),
    Scenario("VirtualMemoryResourceOptions(gpu_direct_rdma=1)", lambda m: bool(
        m.VirtualMemoryResourceOptions(gpu_direct_rdma=1).gpu_direct_rdma)),
    # 1.2.2 added ClocksEventReasons.BOARD_LIMIT and RELIABILITY.
    Scenario("MemoryResource()", lambda m: type(m.MemoryResource()).__name__),
    Scenario("MemoryResource().allocate(8, stream=None)",
             lambda m: m.MemoryResource().allocate(8, stream=None)),
    Scenario("a MemoryResource subclass's device_id, not implemented",
             lambda m: type("Incomplete", (m.MemoryResource,), {})().device_id),
    Scenario("every public enum's members, in order", lambda m: public_enums(m), since=(1, 2, 2)),
    Scenario("typing.VirtualMemoryAccessType members",
             lambda m: tuple((e.name, e.value) for e in sub(m, "typing").VirtualMemoryAccessType)),
    Scenario("Host(is_numa_current=None)", lambda m: (
        m.Host(is_numa_current=None).numa_id, bool(m.Host(is_numa_current=None).is_numa_current))),
    Scenario("Host(is_numa_current=1)",
             lambda m: m.Host(is_numa_current=1) == m.Host.numa_current()),
    Scenario("Host(numa_id=True)", lambda m: m.Host(numa_id=True)),
    Scenario("Host(numa_id=-1)", lambda m: m.Host(numa_id=-1)),
    Scenario("Host(numa_id='0')", lambda m: m.Host(numa_id="0")),
    # -- green contexts ------------------------------------------------------------------------
    Scenario("SMResourceOptions(count=0)", lambda m: m.SMResourceOptions(count=0).count),
    Scenario("SMResourceOptions(count=(0,))",
             lambda m: tuple(m.SMResourceOptions(count=(0,)).count)),
    Scenario("SMResourceOptions(count=8, coscheduled_sm_count=0)", lambda m: m.SMResourceOptions(
        count=8, coscheduled_sm_count=0).coscheduled_sm_count),
    Scenario("SMResourceOptions(count=True)",
             lambda m: m.SMResourceOptions(count=True).count),
    Scenario("SMResourceOptions(backfill=1)",
             lambda m: bool(m.SMResourceOptions(backfill=1).backfill)),
    # -- graphs --------------------------------------------------------------------------------
    Scenario("GraphCompleteOptions(auto_free_on_launch=1)", lambda m: bool(
        sub(m, "graph").GraphCompleteOptions(auto_free_on_launch=1).auto_free_on_launch)),
    Scenario("GraphCompleteOptions(device_launch=None)", lambda m: bool(
        sub(m, "graph").GraphCompleteOptions(device_launch=None).device_launch)),
    Scenario("GraphCompleteOptions(use_node_priority='yes')", lambda m: bool(
        sub(m, "graph").GraphCompleteOptions(use_node_priority="yes").use_node_priority)),
    Scenario("GraphCompleteOptions(use_node_priority='no')",
             lambda m: sub(m, "graph").GraphCompleteOptions(use_node_priority="no"),
             differs=FLAGS, ours_raises=TypeError),
    Scenario("GraphDebugPrintOptions(verbose='x')", lambda m: bool(
        sub(m, "graph").GraphDebugPrintOptions(verbose="x").verbose)),
    Scenario("GraphDebugPrintOptions(verbose=1)", lambda m: bool(
        sub(m, "graph").GraphDebugPrintOptions(verbose=1).verbose)),
    # -- linking -------------------------------------------------------------------------------
    Scenario("LinkerOptions(debug=1)", lambda m: bool(m.LinkerOptions(debug=1).debug)),
    Scenario("LinkerOptions(debug=None)", lambda m: bool(m.LinkerOptions(debug=None).debug)),
    Scenario("LinkerOptions(ptxas_options=[]) constructs",
             lambda m: type(m.LinkerOptions(ptxas_options=[])).__name__),
    Scenario("LinkerOptions(numba_debug=True) warns",
             lambda m: type(m.LinkerOptions(numba_debug=True)).__name__),
    # -- object code ---------------------------------------------------------------------------
    Scenario("ObjectCode.from_cubin(b'abc', name='x')",
             lambda m: fields(m.ObjectCode.from_cubin(b"abc", name="x"), "name", "code_type")),
    Scenario("ObjectCode.from_cubin(b'')", lambda m: m.ObjectCode.from_cubin(b""),
             differs=COMPILE, ours_raises=ValueError),
    Scenario("ObjectCode.from_cubin('/no/such/file.cubin')",
             lambda m: m.ObjectCode.from_cubin("/no/such/file.cubin"),
             differs=COMPILE, ours_raises=FileNotFoundError),
    Scenario("Program(code_type='c')", lambda m: m.Program("int x;", "c", m.ProgramOptions(
        arch="sm_90"))),
    Scenario("Program(code_type='PTX')", lambda m: m.Program(
        ".version 8.0\n.target sm_90\n.address_size 64\n", "PTX",
        m.ProgramOptions(arch="sm_90")).backend),
    Scenario("Linker(PTX that is not PTX)", lambda m: m.Linker(
        m.ObjectCode.from_ptx(b".version 8.0\n.target sm_90\nnot ptx\n"),
        options=m.LinkerOptions(arch="sm_90"))),
    Scenario("Linker(options=LinkerOptions(arch='sm_10'))", lambda m: m.Linker(
        m.ObjectCode.from_ptx(b".version 8.0\n.target sm_90\n.address_size 64\n"),
        options=m.LinkerOptions(arch="sm_10"))),
    Scenario("LinkerOptions(verbose='yes')",
             lambda m: bool(m.LinkerOptions(verbose="yes").verbose)),
    Scenario("LinkerOptions(verbose='False')", lambda m: m.LinkerOptions(verbose="False"),
             differs=FLAGS, ours_raises=TypeError),
    Scenario("LinkerOptions(max_register_count=-1) flags", lambda m: [
        f for f in m.LinkerOptions(arch="sm_90", max_register_count=-1).as_bytes()
        if b"maxrreg" in f]),
    Scenario("LinkerOptions(max_register_count=0) flags", lambda m: [
        f for f in m.LinkerOptions(arch="sm_90", max_register_count=0).as_bytes()
        if b"maxrreg" in f]),
    # Refused when built with the class cuda.core's link raises (nvJitLinkError, ours also an
    # NVRTCError); cuda.core builds them.
    Scenario("LinkerOptions(arch='bogus')", lambda m: m.LinkerOptions(arch="bogus"),
             differs=SMALLER, ours_raises=NVRTCError),
    Scenario("LinkerOptions(optimization_level=5)",
             lambda m: m.LinkerOptions(optimization_level=5),
             differs=SMALLER, ours_raises=NVRTCError),
    # -- program options (the flags cuda.core passes NVRTC) -------------------------------------
    Scenario("ProgramOptions(name='')", lambda m: m.ProgramOptions(arch="sm_90", name="").name),
    Scenario("ProgramOptions(every common C++ field).as_bytes('nvrtc'): the same bytes",
             lambda m: m.ProgramOptions(
                 arch="sm_90", debug=True, lineinfo=True, max_register_count=32, ftz=True,
                 define_macro=["A", ("B", "1")], include_path=["/x"], std="c++17",
                 use_fast_math=True, relocatable_device_code=True,
                 link_time_optimization=True).as_bytes("nvrtc")),
    Scenario("ProgramOptions(diag_suppress='1') flags", lambda m: [
        f for f in m.ProgramOptions(arch="sm_90", diag_suppress="1").as_bytes("nvrtc")
        if b"diag" in f]),
    Scenario("ProgramOptions(diag_suppress='12')",
             lambda m: m.ProgramOptions(arch="sm_90", diag_suppress="12"),
             differs=FLAGS, ours_raises=ValueError),
    Scenario("ProgramOptions(fdevice_time_trace=1) flags", lambda m: [
        f for f in m.ProgramOptions(arch="sm_90", fdevice_time_trace=1).as_bytes("nvrtc")
        if b"trace" in f]),
    Scenario("ProgramOptions(ftz='yes') flags", lambda m: [
        f for f in m.ProgramOptions(arch="sm_90", ftz="yes").as_bytes("nvrtc") if b"ftz" in f]),
    Scenario("ProgramOptions(max_register_count=-1) flags", lambda m: [
        f for f in m.ProgramOptions(arch="sm_90", max_register_count=-1).as_bytes("nvrtc")
        if b"maxrreg" in f]),
    Scenario("ProgramOptions(std='c++99')", lambda m: m.ProgramOptions(std="c++99"),
             differs=SMALLER, ours_raises=NVRTCError),
    # -- system ---------------------------------------------------------------------------------
    Scenario("system.NvlinkInfo.max_links warns", lambda m: sub(m, "system").NvlinkInfo.max_links),
    # -- StridedMemoryView over host arrays (cuda.core's from_array_interface needs a driver) --
    Scenario("StridedMemoryView.from_dlpack(ndarray, stream_ptr=-1)", lambda m: (lambda v: (
        v.shape, v.strides, str(v.dtype), v.device_id, bool(v.is_device_accessible)))(
        sub(m, "utils").StridedMemoryView.from_dlpack(ARRAY, stream_ptr=-1))),
    Scenario("StridedMemoryView.from_dlpack(ndarray.T, stream_ptr=-1)", lambda m: (lambda v: (
        v.shape, v.strides))(sub(m, "utils").StridedMemoryView.from_dlpack(ARRAY.T,
                                                                           stream_ptr=-1))),
    Scenario("StridedMemoryView.from_dlpack(ndarray) (stream_ptr=None)",
             lambda m: sub(m, "utils").StridedMemoryView.from_dlpack(ARRAY)),
    Scenario("StridedMemoryView.from_any_interface(ndarray, -1)",
             lambda m: sub(m, "utils").StridedMemoryView.from_any_interface(ARRAY, -1).shape),
    Scenario("StridedMemoryView(ndarray, -1) warns",
             lambda m: sub(m, "utils").StridedMemoryView(ARRAY, stream_ptr=-1).shape),
    # cuda.core makes an empty view whose every use raises ValueError; ours refuses to make it
    # (a TypeError and ValueError).
    Scenario("StridedMemoryView().shape",
             lambda m: sub(m, "utils").StridedMemoryView().shape),
    Scenario("StridedMemoryView.from_dlpack(ndarray[::2, 1::2], stream_ptr=-1)",
             lambda m: (lambda v: (v.shape, v.strides, v.size))(sub(m, "utils").StridedMemoryView
             .from_dlpack(np.zeros((4, 6), np.float32)[::2, 1::2], stream_ptr=-1))),
    Scenario("StridedMemoryView of a 0-d and an empty array", lambda m: tuple(
        (v.shape, v.strides, v.size) for v in (sub(m, "utils").StridedMemoryView.from_dlpack(
            a, stream_ptr=-1) for a in (np.zeros((), np.int16), np.zeros((0, 3), np.int16))))),
    Scenario("np.from_dlpack(StridedMemoryView of a transposed array)", lambda m: np.from_dlpack(
        sub(m, "utils").StridedMemoryView.from_dlpack(ARRAY.T, stream_ptr=-1)).tolist()),
    Scenario("StridedMemoryView complex64", lambda m: str(sub(m, "utils").StridedMemoryView
             .from_dlpack(np.zeros(3, dtype=np.complex64), stream_ptr=-1).dtype)),
    Scenario("StridedMemoryView.copy_from(None)", lambda m: sub(m, "utils").StridedMemoryView
             .from_dlpack(np.zeros(3), stream_ptr=-1).copy_from(None, None)),
    Scenario("StridedMemoryView.copy_to(blocking='yes')", lambda m: (lambda v: v.copy_to(
        v, None, blocking="yes"))(sub(m, "utils").StridedMemoryView.from_dlpack(
            np.zeros(3), stream_ptr=-1))),
    Scenario("StridedMemoryView.copy_from() between host views", lambda m: (lambda a: (
        sub(m, "utils").StridedMemoryView.from_dlpack(a, stream_ptr=-1).copy_from(
            sub(m, "utils").StridedMemoryView.from_dlpack(ARRAY.T, stream_ptr=-1), None),
        a.tolist())[1])(np.zeros((4, 3), np.float32)),
             differs="Strided memory views", ours_raises=None),
    Scenario("StridedMemoryView.from_dlpack(b'abcd')", lambda m: sub(
        m, "utils").StridedMemoryView.from_dlpack(b"abcd", stream_ptr=-1)),
    Scenario("StridedMemoryView.from_dlpack([1, 2])", lambda m: sub(
        m, "utils").StridedMemoryView.from_dlpack([1, 2], stream_ptr=-1)),
    Scenario("StridedMemoryView.from_any_interface(memoryview)", lambda m: sub(
        m, "utils").StridedMemoryView.from_any_interface(memoryview(bytearray(8)), -1)),
    Scenario("StridedMemoryView's C exchange capsule", lambda m: exchange_capsule(m)),
    Scenario("C exchange: the managed tensor of a strided view",
             lambda m: exchange_tensor(m, ARRAY[:, ::2])),
    Scenario("C exchange: the managed tensor of a read-only view",
             lambda m: exchange_tensor(m, np.frombuffer(bytes(16), np.int32))),
    Scenario("C exchange: a tensor back to a view", lambda m: exchange_round_trip(m)),
    Scenario("C exchange: the current work stream", lambda m: exchange_stream(m)),
    Scenario("C exchange: a tensor of an ndarray", lambda m: exchange_tensor(m, ARRAY, raw=True)),
    # -- program caches ------------------------------------------------------------------------
    Scenario("InMemoryProgramCache() is empty",
             lambda m: len(sub(m, "utils").InMemoryProgramCache())),
    Scenario("InMemoryProgramCache(max_size_bytes=0)",
             lambda m: sub(m, "utils").InMemoryProgramCache(max_size_bytes=0)),
    Scenario("InMemoryProgramCache(max_size_bytes=1.5) keeps one byte", lambda m: (
        lambda c: (c.__setitem__(b"a", b"x"), c.get(b"a"))[1])(
            sub(m, "utils").InMemoryProgramCache(max_size_bytes=1.5))),
    Scenario("InMemoryProgramCache(max_size_bytes=1.5) keeps no two bytes", lambda m: (
        lambda c: (c.__setitem__(b"a", b"xy"), c.get(b"a"))[1])(
            sub(m, "utils").InMemoryProgramCache(max_size_bytes=1.5))),
    Scenario("InMemoryProgramCache().get(missing)",
             lambda m: sub(m, "utils").InMemoryProgramCache().get(b"k")),
    Scenario("InMemoryProgramCache()[missing]",
             lambda m: sub(m, "utils").InMemoryProgramCache()[b"k"]),
    Scenario("make_program_cache_key()", lambda m: sub(m, "utils").make_program_cache_key()),
    # -- buffers -------------------------------------------------------------------------------
    Scenario("Buffer.from_handle(0, size=-1)", lambda m: m.Buffer.from_handle(0, -1)),
    Scenario("Buffer.from_handle(0, size=2**64)", lambda m: m.Buffer.from_handle(0, 2**64)),
    # -- textures ------------------------------------------------------------------------------
    Scenario("OpaqueArrayOptions(shape=(True,))", lambda m: fields(sub(m, "texture")
             .OpaqueArrayOptions(shape=(True,), format="float32", num_channels=1), "shape")),
    Scenario("OpaqueArrayOptions(is_surface_load_store=1)", lambda m: bool(
        sub(m, "texture").OpaqueArrayOptions(shape=(4,), format="float32", num_channels=1,
                                             is_surface_load_store=1).is_surface_load_store)),
    Scenario("TextureObjectOptions(normalized_coords=None)", lambda m: bool(
        sub(m, "texture").TextureObjectOptions(normalized_coords=None).normalized_coords)),
    Scenario("TextureObjectOptions(max_anisotropy=17)", lambda m: sub(
        m, "texture").TextureObjectOptions(max_anisotropy=17).max_anisotropy),
    # -- green contexts: an empty resource list is refused where a context is made ------------
    Scenario("ContextOptions(resources=())", lambda m: m.ContextOptions(resources=()).resources),
]


def _exchange_table(m):
    import test_view_copy as t

    cls = sub(m, "utils").StridedMemoryView
    return t, t.ExchangeAPI.from_address(t._get_pointer(cls.__dlpack_c_exchange_api__,
                                                        b"dlpack_exchange_api"))


def exchange_capsule(m):
    import test_view_copy as t

    cls = sub(m, "utils").StridedMemoryView
    api = _exchange_table(m)[1]
    return (cls.__c_dlpack_exchange_api__ is cls.__dlpack_c_exchange_api__,
            t._get_name(cls.__dlpack_c_exchange_api__), api.header.version.major,
            api.header.version.minor, bool(api.header.prev_api))


def exchange_tensor(m, array, raw=False):
    """What a C consumer reads of a view's managed tensor (not its version's minor number)."""
    import ctypes

    t, api = _exchange_table(m)
    v = array if raw else sub(m, "utils").StridedMemoryView.from_dlpack(array, stream_ptr=-1)
    out = ctypes.POINTER(t.ManagedTensor)()
    rc = t.FROM_PY(api.managed_tensor_from_py_object_no_sync)(v, ctypes.byref(out))
    mt = out.contents
    d = mt.dl_tensor
    got = (rc, mt.version.major, mt.flags, d.device.device_type, d.device.device_id, d.ndim,
           (d.dtype.code, d.dtype.bits, d.dtype.lanes), t._ints(d.shape, d.ndim),
           t._ints(d.strides, d.ndim), d.data == array.ctypes.data, d.byte_offset)
    mt.deleter(out)
    return got


def exchange_round_trip(m):
    import ctypes

    t, api = _exchange_table(m)
    a = np.arange(10, dtype=np.float64)[::3]
    out = ctypes.POINTER(t.ManagedTensor)()
    t.FROM_PY(api.managed_tensor_from_py_object_no_sync)(
        sub(m, "utils").StridedMemoryView.from_dlpack(a, stream_ptr=-1), ctypes.byref(out))
    obj = ctypes.py_object()
    rc = t.TO_PY(api.managed_tensor_to_py_object_no_sync)(out, ctypes.byref(obj))
    w = t.take(obj)
    return (rc, type(w).__name__, w.shape, w.strides, str(w.dtype), w.ptr == a.ctypes.data,
            w.device_id, w.readonly, type(w.exporting_obj).__name__, np.from_dlpack(w).tolist())


def exchange_stream(m):
    import ctypes

    t, api = _exchange_table(m)
    found = []
    for device_type in (1, 2, 13):
        s = ctypes.c_void_p(0x1234)
        found.append((t.STREAM(api.current_work_stream)(device_type, 0, ctypes.byref(s)),
                      s.value))
    return found


def test_scenario_names_are_unique():
    names = [s.name for s in SCENARIOS]
    assert len(names) == len(set(names))
    gpu = [s.name for s in GPU_SCENARIOS]
    assert len(gpu) == len(set(gpu)) and not set(gpu) & set(names)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_same_outcome_as_cuda_core(scenario):
    compare(scenario)


def compare(scenario):
    reference = importlib.import_module("cuda.core").__version__
    release = tuple(int(n) for n in re.findall(r"\d+", reference)[:3])
    if scenario.since and release < scenario.since:
        pytest.skip(f"the cuda.core here is {reference}; the scenario checks "
                    f"{'.'.join(map(str, scenario.since))}, which CI compares against")
    theirs, ours = outcome(scenario, "cuda.core"), outcome(scenario, "cuda_core")
    if theirs.error is not None:
        skip_where_reference_lacks_cuda_13(str(theirs.error))
    if scenario.differs is None:
        assert agree(theirs, ours), f"cuda.core {theirs}; ours {ours}"
        return
    # A declared difference: it is real, it is the one declared, and the docs name it. Ours
    # raises the declared class where cuda.core returns, or (ours_raises None) returns where
    # cuda.core raises.
    assert scenario.differs in migrating_sections(), scenario.differs
    assert not agree(theirs, ours), f"declared different, but both {ours}"
    if scenario.ours_raises is None:
        assert ours.error is None, f"cuda.core {theirs}; ours {ours}"
    else:
        assert isinstance(ours.error, scenario.ours_raises), f"cuda.core {theirs}; ours {ours}"


# -- on the GPU: the same work through each package ---------------------------------------------

KERNELS = r"""
extern "C" __global__ void put(int* p, int v) { *p = v; }
extern "C" __global__ void putf(float* p, float v) { *p = v; }
template <typename T> __global__ void typed_put(T* p, T v) { *p = v; }
template __global__ void typed_put<int>(int*, int);
template __global__ void typed_put<float>(float*, float);
"""
_STATE = {}


def gpu(m):
    """The package's device 0 (current), a stream, pinned memory and the kernels, made once."""
    if m.__name__ not in _STATE:
        dev = m.Device(0)
        dev.set_current()
        code = m.Program(KERNELS, "c++", m.ProgramOptions(arch="sm_" + dev.arch)).compile(
            "cubin", name_expressions=("typed_put<int>", "typed_put<float>"))
        _STATE[m.__name__] = (dev, dev.create_stream(), m.LegacyPinnedMemoryResource(), code)
    return _STATE[m.__name__]


def put(m, kernel_name, value, read="i"):
    """Launch ``kernel_name(p, value)`` on one thread, writing into pinned memory; read back."""
    import ctypes
    import struct

    dev, stream, pinned, code = gpu(m)
    buf = pinned.allocate(8)
    ctypes.memset(int(buf.handle), 0x55, 8)
    m.launch(stream, m.LaunchConfig(grid=1, block=1), code.get_kernel(kernel_name), buf, value)
    stream.sync()
    got = struct.unpack(read, ctypes.string_at(int(buf.handle), 4))[0]
    buf.close()
    return got


def fill_pinned(m, value):
    import ctypes

    dev, stream, pinned, code = gpu(m)
    buf = pinned.allocate(4)
    buf.fill(value, stream=stream)
    stream.sync()
    got = ctypes.string_at(int(buf.handle), 4)
    buf.close()
    return got


def pool_resource(m, name):
    """A pool resource made without options, as a user observes it: who owns the pool, whether
    two such resources share it, and one buffer's bytes written by the GPU."""
    import ctypes

    dev, stream, _, _ = gpu(m)
    a, b = getattr(m, name)(), getattr(m, name)()
    buf = a.allocate(64, stream=stream)
    buf.fill(5, stream=stream)
    stream.sync()
    got = ctypes.string_at(int(buf.handle), 4)
    buf.close()
    stream.sync()
    return a.is_handle_owned, int(a.handle) == int(b.handle), a.device_id, got


def managed_pool_buffer(m, use):
    """``use`` of a buffer of the current managed pool; the driver decides what it allows."""
    dev, stream, _, _ = gpu(m)
    buf = m.ManagedMemoryResource().allocate(1 << 21, stream=stream)
    try:
        stream.sync()
        got = use(buf, dev, stream)
        stream.sync()
        return got
    finally:
        buf.close()
        stream.sync()


def _advise(buf, dev, stream):
    buf.read_mostly = True
    buf.preferred_location = dev
    return buf.read_mostly, buf.preferred_location.device_id


LAUNCH_ARGS = "launch()"
VIEWS = "Strided memory views"


def tensor_map(m, data_type, box):
    """A tiled tensor map of a 16 x 32 float32 device matrix, as ``data_type``."""
    dev, stream, _, _ = gpu(m)
    buf = dev.allocate(16 * 32 * 4, stream=stream)
    stream.sync()
    view = m.utils.StridedMemoryView.from_buffer(buf, (16, 32), dtype=np.dtype(np.float32))
    return type(view.as_tensor_map(box, data_type=data_type)).__name__

GPU_SCENARIOS = [
    Scenario("Device(0) identity", lambda m: (lambda d: (
        d.device_id, d.name, tuple(d.compute_capability), d.arch,
        d.properties.multiprocessor_count))(gpu(m)[0])),
    Scenario("a kernel's argument count", lambda m: gpu(m)[3].get_kernel("put").num_arguments),
    Scenario("launch: a Python int 7 for an int", lambda m: put(m, "put", 7)),
    Scenario("launch: a Python int -5 for an int", lambda m: put(m, "put", -5)),
    Scenario("launch: a Python int 7 for a C++ int", lambda m: put(m, "typed_put<int>", 7)),
    Scenario("launch: np.int32(9) for an int", lambda m: put(m, "put", np.int32(9))),
    # extern "C": the parameter's signedness is not known, so either range of 4 bytes is taken.
    Scenario("launch: 2**31 for an int", lambda m: put(m, "put", 2**31)),
    Scenario("launch: 2**32 for an int", lambda m: put(m, "put", 2**32),
             differs=LAUNCH_ARGS, ours_raises=OverflowError),  # cuda.core: its low bytes
    Scenario("launch: 2**31 for a C++ int", lambda m: put(m, "typed_put<int>", 2**31),
             differs=LAUNCH_ARGS, ours_raises=OverflowError),
    # A double's low 4 bytes are cuda.core's float; ours packs float32 where the type is known.
    Scenario("launch: a Python float 1.5 for a float", lambda m: put(m, "putf", 1.5, "f"),
             differs=LAUNCH_ARGS, ours_raises=TypeError),
    Scenario("launch: a Python float 1.5 for a C++ float",
             lambda m: put(m, "typed_put<float>", 1.5, "f"), differs=LAUNCH_ARGS,
             ours_raises=None),
    Scenario("Buffer.fill(7) of pinned memory", lambda m: fill_pinned(m, 7)),
    Scenario("Buffer.fill(256)", lambda m: fill_pinned(m, 256)),
    Scenario("Buffer.fill(np.uint16(0x0102))", lambda m: fill_pinned(m, np.uint16(0x0102))),
    Scenario("create_condition(default_value=True)", lambda m: type(
        gpu(m)[0].create_graph_builder().begin_building().create_condition(
            default_value=True)).__name__),
    Scenario("a recorded event is done after sync", lambda m: (lambda s: (
        s.sync(), s.record().is_done)[1])(gpu(m)[1])),
    Scenario("allocate(0)", lambda m: gpu(m)[0].allocate(0, stream=gpu(m)[1]).size),
    Scenario("allocate(-1)", lambda m: gpu(m)[0].allocate(-1, stream=gpu(m)[1])),
    Scenario("PinnedMemoryResource(): the driver's current pool",
             lambda m: pool_resource(m, "PinnedMemoryResource"), differs="Memory",
             ours_raises=None),  # cuda.core 1.2.0: CUDA_ERROR_INVALID_VALUE there
    Scenario("ManagedMemoryResource(): the driver's current pool",
             lambda m: pool_resource(m, "ManagedMemoryResource")),
    Scenario("advice on a managed pool's buffer", lambda m: managed_pool_buffer(m, _advise)),
    Scenario("prefetch of a managed pool's buffer", lambda m: managed_pool_buffer(
        m, lambda buf, dev, s: buf.prefetch(dev, stream=s))),
    Scenario("discard of a managed pool's buffer", lambda m: managed_pool_buffer(
        m, lambda buf, dev, s: buf.discard(stream=s))),
    Scenario("as_tensor_map of a float32 view as uint8",
             lambda m: tensor_map(m, np.dtype(np.uint8), (8, 32))),
    Scenario("as_tensor_map of a float32 view as float64",
             lambda m: tensor_map(m, np.dtype(np.float64), (8, 8)), differs=VIEWS,
             ours_raises=ValueError),  # cuda.core: a map of twice the view's bytes
]


@pytest.mark.gpu
@pytest.mark.parametrize("scenario", GPU_SCENARIOS, ids=[s.name for s in GPU_SCENARIOS])
def test_same_outcome_as_cuda_core_on_the_gpu(scenario):
    # The shared setup runs outside the comparison: were it to fail in both packages alike, every
    # scenario would "agree" on that error and test nothing.
    for name in ("cuda.core", "cuda_core"):
        gpu(importlib.import_module(name))
    compare(scenario)
