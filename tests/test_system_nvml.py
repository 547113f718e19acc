"""cuda_core.system over NVML: system.Device, the module functions, errors and enumerations."""

import ctypes
import enum
import os
import pickle
import re
import subprocess

import numpy as np
import pytest

import cuda_core
from cuda_core import system
from cuda_core.system import typing as st
from helpers import run_python


def _nvml_loadable():
    # Independent of cuda_core: can the driver's NVML library be loaded at all?
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


NVML_PRESENT = _nvml_loadable()
needs_no_nvml = pytest.mark.skipif(NVML_PRESENT, reason="libnvidia-ml.so.1 is present here; "
                                                        "the NVML-absent path cannot be seen")


# -- CPU: import, errors, enumerations, argument checks -----------------------------------------

def test_import_loads_neither_nvml_bindings_nor_library():
    code = (
        "import sys, cuda_core, cuda_core.system, cuda_core.system.typing\n"
        "assert 'cuda.bindings.nvml' not in sys.modules, 'cuda.bindings.nvml imported'\n"
        "assert 'libnvidia-ml' not in open('/proc/self/maps').read(), 'NVML loaded'\n"
        "print('ok')\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_public_names():
    for name in system.__all__:
        assert hasattr(system, name), name
    for name in ("Device", "NvlinkInfo", "get_p2p_status", "get_topology_common_ancestor",
                 "get_kernel_mode_driver_version", "get_nvml_version", "get_driver_branch",
                 "get_process_name", "get_num_devices", "get_user_mode_driver_version",
                 "CUDA_BINDINGS_NVML_IS_COMPATIBLE", "NvmlError", "NotSupportedError",
                 "LibraryNotFoundError", "NotFoundError"):
        assert name in system.__all__, name
    assert cuda_core.system is system


def test_bindings_compatibility_flag():
    import cuda.bindings

    major, minor, patch = (int(p) for p in cuda.bindings.__version__.split(".")[:3])
    expected = (major, minor, patch) >= (13, 2, 0) or (major == 12 and (minor, patch) >= (9, 6))
    assert system.CUDA_BINDINGS_NVML_IS_COMPATIBLE is expected


def test_error_classes():
    assert issubclass(system.NvmlError, RuntimeError)
    names = [n for n in system.exceptions.__all__ if n != "NvmlError"]
    assert len(names) == 31
    for name in names:
        cls = getattr(system, name)
        assert issubclass(cls, system.NvmlError), name
    # Each class stands for one nvmlReturn_t code; cuda.bindings.nvml has a class of each name.
    from cuda.bindings import nvml

    for name in names:
        assert issubclass(getattr(nvml, name), nvml.NvmlError), name
    assert system.NotSupportedError is not NotImplementedError
    assert system.MemoryError is not MemoryError


def test_error_pickles_with_status():
    err = system.NotSupportedError("device_get_fan_speed failed: Not Supported", 3)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is system.NotSupportedError
    assert back.status == 3 and str(back) == str(err)


def test_errors_from_bindings_are_translated():
    # An error as cuda.bindings.nvml raises it, without calling NVML: its class is found by
    # name where it carries no code.
    from cuda_core.system._nvml import translate

    class NotFoundError(Exception):
        pass

    err = translate(NotFoundError("Not Found"), "device_get_handle_by_uuid")
    assert type(err) is system.NotFoundError
    assert "device_get_handle_by_uuid failed: Not Found" in str(err)

    class Coded(Exception):
        status = 3

    err = translate(Coded("x"), "f")
    assert type(err) is system.NotSupportedError and err.status == 3
    coded = Coded("y")
    coded.status = 12345
    assert type(translate(coded, "f")) is system.NvmlError


_ENUMS = {
    "AddressingMode": 2, "AffinityScope": 2, "ClockId": 2, "ClocksEventReasons": 12,
    "ClockType": 4, "CoolerControl": 2, "CoolerTarget": 4, "EventType": 15,
    "FanControlPolicy": 2, "GpuP2PCapsIndex": 7, "GpuP2PStatus": 7, "GpuTopologyLevel": 6,
    "InforomObject": 4, "SystemEventType": 2, "TemperatureThresholds": 8,
    "ThermalController": 18, "ThermalTarget": 9,
}


@pytest.mark.parametrize("name", sorted(_ENUMS))
def test_string_enums(name):
    cls = getattr(st, name)
    assert issubclass(cls, str) and issubclass(cls, enum.Enum)
    assert len(cls) == _ENUMS[name]
    for member in cls:
        assert member == member.value and cls(member.value) is member


def test_enum_values():
    assert st.ClockType.MEMORY == "memory" and st.ClockType.SM == "sm"
    assert st.GpuP2PStatus.OK == "ok"
    assert st.GpuP2PStatus.GPU_NOT_SUPPORTED == "GPU not supported"
    assert st.GpuTopologyLevel.HOSTBRIDGE == "hostbridge"
    assert st.TemperatureThresholds.SLOWDOWN == "slowdown"
    assert issubclass(st.DeviceArch, enum.IntEnum)
    assert st.DeviceArch.HOPPER == 9 and st.DeviceArch.BLACKWELL == 10
    assert st.DeviceArch.UNKNOWN == 0xFFFFFFFF


def test_field_id_is_cuda_bindings_own_and_loads_on_first_use():
    # FieldId is cuda.bindings.nvml's class, as in cuda.core; importing cuda_core does not
    # import that module (checked in a child: this process may have it already).
    from cuda.bindings import nvml

    assert st.FieldId is nvml.FieldId and "FieldId" in st.__all__ and "FieldId" in dir(st)
    out = run_python("import sys, cuda_core, cuda_core.system.typing as st\n"
                     "print('cuda.bindings.nvml' in sys.modules)\n"
                     "print(st.FieldId.DEV_ECC_CURRENT == 1, 'cuda.bindings.nvml' in sys.modules)")
    assert out.stdout.split() == ["False", "True", "True"], out
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        st.Nope


def test_clock_event_reason_bits():
    # nvml.h: GPU_IDLE 0x1 ... DISPLAY_CLOCK_SETTING 0x100, BOARD_LIMIT 0x200, RELIABILITY 0x400.
    from cuda_core.system._device import _reasons

    R = st.ClocksEventReasons
    assert _reasons(0) == []
    assert _reasons(0x1 | 0x4 | 0x40) == [R.GPU_IDLE, R.SW_POWER_CAP, R.HW_THERMAL_SLOWDOWN]
    assert _reasons(0x100 | 0x200 | 0x400) == [R.DISPLAY_CLOCK_SETTING, R.BOARD_LIMIT,
                                               R.RELIABILITY]
    assert _reasons(1 << 40) == []  # a bit this version does not know


@pytest.mark.parametrize("kwargs", [{}, {"index": 0, "uuid": "GPU-x"},
                                    {"uuid": "GPU-x", "pci_bus_id": "0:1:0.0"},
                                    {"index": 0, "uuid": "x", "pci_bus_id": "y"}])
def test_device_takes_exactly_one_selector(kwargs):
    with pytest.raises(ValueError, match="exactly one of index=, uuid= or pci_bus_id="):
        system.Device(**kwargs)


def test_device_arguments_are_keywords():
    with pytest.raises(TypeError):
        system.Device(0)


@pytest.mark.parametrize("bad", ["0", 1.5, np.True_, [0]])
def test_device_index_type(bad):
    with pytest.raises(TypeError, match="index must be an int"):
        system.Device(index=bad)


def test_device_index_range():
    with pytest.raises(ValueError, match="index must be between 0"):
        system.Device(index=-1)


@pytest.mark.parametrize("what", ["uuid", "pci_bus_id"])
@pytest.mark.parametrize("bad, exc", [(0, TypeError), (["GPU-x"], TypeError), ("", ValueError),
                                      ("GPU-\0", ValueError), (b"\xff", ValueError)])
def test_device_text_arguments(what, bad, exc):
    with pytest.raises(exc, match=what):
        system.Device(**{what: bad})


@pytest.mark.parametrize("bad, exc", [("1", TypeError), (-1, ValueError), (2**32, ValueError),
                                      (None, TypeError)])
def test_process_name_pid_checked(bad, exc):
    with pytest.raises(exc, match="pid"):
        system.get_process_name(bad)


def test_pair_functions_check_their_devices():
    with pytest.raises(TypeError, match="device1 must be a cuda_core.system.Device"):
        system.get_p2p_status(0, 1, "read")
    with pytest.raises(TypeError, match="device1 must be a cuda_core.system.Device"):
        system.get_topology_common_ancestor("a", "b")


def test_enum_arguments_checked_before_nvml():
    # A Device object over no real handle: each check below must fail before NVML is called.
    dev = system.Device._from_handle(0)
    with pytest.raises(ValueError, match="clock_type must be one of"):
        dev.get_clock("shader")
    with pytest.raises(TypeError, match="clock_type must be one of"):
        dev.get_clock(0)
    with pytest.raises(ValueError, match="clock_id must be one of"):
        dev.get_clock("sm").get_current_mhz("boost")
    with pytest.raises(ValueError, match="pstate must be between 0 and 15"):
        dev.get_clock("sm").get_min_max_clock_of_pstate_mhz(16)
    with pytest.raises(ValueError, match="threshold_type must be one of"):
        dev.temperature.get_threshold("hot")
    with pytest.raises(ValueError, match="level must be one of"):
        dev.get_topology_nearest_gpus("rack")
    with pytest.raises(ValueError, match="scope must be one of"):
        dev.get_cpu_affinity("board")
    with pytest.raises(ValueError, match="index must be one of"):
        system.get_p2p_status(dev, dev, "teleport")
    with pytest.raises(TypeError, match="cpu_index must be an int"):
        system.Device.get_all_devices_with_cpu_affinity("0")


def test_nvlink_arguments_checked_before_nvml():
    dev = system.Device._from_handle(0)
    with pytest.raises(TypeError, match="device must be a cuda_core.system.Device"):
        system.NvlinkInfo(object(), 0)
    with pytest.raises(ValueError, match="link must be >= 0, got -1"):
        dev.get_nvlink(-1)
    with pytest.raises(TypeError, match="link must be an int"):
        dev.get_nvlink("0")
    with pytest.warns(DeprecationWarning, match="NvlinkInfo.max_links is deprecated"):
        assert system.NvlinkInfo.max_links == 18  # warns, as cuda.core's does


def test_affinity_masks_unpack():
    # NVML's affinity results are arrays of mask words; the word width is the array's.
    import array

    import numpy as np

    from cuda_core.system._device import _bits

    assert _bits(np.array([0b1011, 0, 1 << 63], dtype=np.uint64)) == [0, 1, 3, 191]
    assert _bits(np.array([0x3, 0x3], dtype=np.uint32)) == [0, 1, 32, 33]
    assert _bits(array.array("L", [0x5])) == [0, 2]
    assert _bits([0, 1]) == [64]
    assert _bits(np.zeros(4, dtype=np.uint64)) == []


@needs_no_nvml
@pytest.mark.parametrize("use", [
    system.get_kernel_mode_driver_version,
    system.get_nvml_version,
    system.get_driver_branch,
    lambda: system.get_process_name(os.getpid()),
    lambda: system.Device(index=0),
    lambda: system.Device(uuid="GPU-12345678-1234-1234-1234-123456789abc"),
    lambda: system.Device(pci_bus_id="0000:01:00.0"),
    system.Device.get_device_count,
    system.Device.get_all_devices,
])
def test_without_nvml_each_call_names_the_cause(use):
    with pytest.raises(system.LibraryNotFoundError, match="NVML .*cannot be loaded") as info:
        use()
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, system.NvmlError)
    assert info.value.status == 12  # NVML_ERROR_LIBRARY_NOT_FOUND


@needs_no_nvml
def test_without_nvml_threads_all_get_the_error():
    import threading

    barrier = threading.Barrier(8)
    errors = []

    def worker():
        barrier.wait()
        try:
            system.get_nvml_version()
        except system.LibraryNotFoundError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 8


# -- GPU: compared with nvidia-smi ----------------------------------------------------------------

_SMI_FIELDS = "index,uuid,name,pci.bus_id,memory.total,driver_version,serial"


def _smi_rows():
    out = subprocess.run(["nvidia-smi", f"--query-gpu={_SMI_FIELDS}",
                          "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    rows = [[field.strip() for field in line.split(",")] for line in out.splitlines()
            if line.strip()]
    assert rows, "nvidia-smi listed no GPU"
    return [dict(zip(_SMI_FIELDS.split(","), row)) for row in rows]


def _bus_id_ints(bus_id):
    domain, bus, rest = bus_id.split(":")
    device, function = rest.split(".")
    return int(domain, 16), int(bus, 16), int(device, 16), int(function, 16)


@pytest.mark.gpu
def test_devices_match_nvidia_smi():
    rows = _smi_rows()
    assert system.Device.get_device_count() == len(rows)
    assert len(system.Device.get_all_devices()) == len(rows)
    for row, dev in zip(rows, system.Device.get_all_devices()):
        assert dev.index == int(row["index"])
        assert dev.uuid == row["uuid"] and dev.uuid.startswith("GPU-")
        assert dev.uuid_without_prefix == row["uuid"][4:]
        assert dev.name == row["name"]
        assert dev.pci_bus_id.upper() == row["pci.bus_id"].upper()
        assert abs(dev.memory_info.total / 2**20 - int(row["memory.total"])) <= 1
        if row["serial"] in ("[N/A]", "N/A", "[Not Supported]"):
            with pytest.raises(system.NotSupportedError):
                dev.serial
        else:
            assert dev.serial == row["serial"]
    kmd = tuple(int(p) for p in rows[0]["driver_version"].split("."))
    assert system.get_kernel_mode_driver_version() == kmd


@pytest.mark.gpu
def test_lookups_agree():
    for dev in system.Device.get_all_devices():
        assert system.Device(index=dev.index) == dev
        assert system.Device(uuid=dev.uuid) == dev
        assert system.Device(uuid=dev.uuid_without_prefix) == dev
        assert system.Device(uuid=dev.uuid.encode()) == dev
        assert system.Device(pci_bus_id=dev.pci_bus_id) == dev
        assert hash(system.Device(index=dev.index)) == hash(dev)
        assert repr(dev) == f"<cuda_core.system.Device index={dev.index} uuid={dev.uuid!r}>"


@pytest.mark.gpu
def test_unknown_device_lookups():
    count = system.Device.get_device_count()
    with pytest.raises(ValueError, match=f"index must be between 0 and {count - 1}"):
        system.Device(index=count)
    with pytest.raises(system.NotFoundError):
        system.Device(uuid="GPU-00000000-0000-0000-0000-000000000000")


@pytest.mark.gpu
def test_versions_and_names():
    kmd = system.get_kernel_mode_driver_version()
    assert len(kmd) in (2, 3) and all(isinstance(p, int) for p in kmd)
    nvml_version = system.get_nvml_version()
    assert all(isinstance(p, int) for p in nvml_version)
    assert kmd[0] in nvml_version
    # The branch is the driver's source branch, not its version: "r582_49" for 580.159.04.
    branch = system.get_driver_branch()
    assert isinstance(branch, str) and re.fullmatch(r"r\d+(_\d+)*", branch), branch


@pytest.mark.gpu
def test_process_name_of_this_process(dev):
    name = system.get_process_name(os.getpid())
    assert isinstance(name, str) and name


@pytest.mark.gpu
def test_memory_info_is_consistent():
    for dev in system.Device.get_all_devices():
        mem = dev.memory_info
        assert isinstance(mem, system.MemoryInfo)
        assert mem.total > 0
        assert 0 <= mem.free <= mem.total and 0 <= mem.used <= mem.total
        assert 0 <= mem.reserved <= mem.total
        # NVML counts reserved memory in used; allow either accounting.
        assert abs(mem.total - (mem.free + mem.used)) <= mem.reserved
        bar1 = dev.bar1_memory_info
        assert bar1.total > 0 and 0 <= bar1.free <= bar1.total and 0 <= bar1.used <= bar1.total


@pytest.mark.gpu
def test_temperature_utilization_clocks_pstate():
    for dev in system.Device.get_all_devices():
        temp = dev.temperature.get_sensor()
        assert 0 < temp < 120
        slowdown = dev.temperature.get_threshold(st.TemperatureThresholds.SLOWDOWN)
        assert 0 < slowdown < 150
        util = dev.utilization
        assert isinstance(util, system.Utilization)
        assert 0 <= util.gpu <= 100 and 0 <= util.memory <= 100
        for clock_type in ("sm", st.ClockType.MEMORY):
            clock = dev.get_clock(clock_type)
            current, highest = clock.get_current_mhz(), clock.get_max_mhz()
            assert 0 < current <= highest
        state = dev.performance_state
        assert state is None or 0 <= state <= 15
        supported = dev.supported_clock_event_reasons
        assert all(isinstance(r, st.ClocksEventReasons) for r in supported)
        assert set(dev.current_clock_event_reasons) <= set(supported)


@pytest.mark.gpu
def test_identity_members():
    for dev in system.Device.get_all_devices():
        assert isinstance(dev.brand, str) and dev.brand
        assert isinstance(dev.arch, st.DeviceArch) and dev.arch != st.DeviceArch.UNKNOWN
        major, minor = dev.cuda_compute_capability
        if major == 9:
            assert dev.arch == st.DeviceArch.HOPPER
        assert os.path.exists(f"/dev/nvidia{dev.minor_number}")
        assert isinstance(dev.is_persistence_mode_enabled, bool)
        assert isinstance(dev.module_id, int)
        try:
            node = dev.numa_node_id
        except system.NotSupportedError:
            pass  # only where the GPU is a NUMA node (Grace Hopper, say)
        else:
            assert isinstance(node, int)
        pci = dev.pci_info
        assert pci.bus_id == dev.pci_bus_id
        assert _bus_id_ints(pci.bus_id)[:3] == (pci.domain, pci.bus, pci.device)
        assert pci.vendor_id == 0x10DE
        assert 1 <= pci.current_link_generation <= pci.max_link_generation
        assert 1 <= pci.current_link_width <= pci.max_link_width


@pytest.mark.gpu
def test_cuda_device_round_trip(dev):
    sysdev = dev.to_system_device()
    assert isinstance(sysdev, system.Device)
    assert sysdev.uuid == "GPU-" + dev.uuid
    assert sysdev.to_cuda_device() is dev
    assert _bus_id_ints(sysdev.pci_bus_id) == _bus_id_ints(dev.pci_bus_id)
    assert sysdev.cuda_compute_capability == tuple(dev.compute_capability)
    for cuda_dev in cuda_core.Device.get_all_devices():
        assert cuda_dev.to_system_device().to_cuda_device() is cuda_dev


@pytest.mark.gpu
def test_nvlinks():
    for dev in system.Device.get_all_devices():
        count = dev.get_nvlink_count()
        assert 0 <= count <= 18  # NVML_NVLINK_MAX_LINKS
        links = dev.get_nvlinks()
        assert len(links) == count and [link.link for link in links] == list(range(count))
        for link in links:
            assert isinstance(link.state, bool)
            if link.state:
                assert link.version >= (1, 0)
        with pytest.raises(ValueError, match="link"):
            dev.get_nvlink(count)


@pytest.mark.gpu
@pytest.mark.parametrize("caps", ["read", "write", "nvlink", "atomics", "pci"])
def test_p2p_status(caps):
    devices = system.Device.get_all_devices()
    pairs = [(a, b) for a in devices for b in devices if a != b] or [(devices[0], devices[0])]
    for a, b in pairs:
        # On a single GPU NVML may answer about the device with itself or refuse; either way
        # the outcome is a GpuP2PStatus or one of cuda_core's NVML errors.
        try:
            status = system.get_p2p_status(a, b, caps)
        except system.NvmlError:
            assert len(devices) == 1
        else:
            assert isinstance(status, st.GpuP2PStatus)


@pytest.mark.gpu
def test_topology():
    devices = system.Device.get_all_devices()
    for a in devices:
        for b in devices:
            try:
                level = system.get_topology_common_ancestor(a, b)
            except system.NvmlError:
                assert a == b  # the only pair NVML may refuse
            else:
                assert isinstance(level, st.GpuTopologyLevel)
        nearest = a.get_topology_nearest_gpus(st.GpuTopologyLevel.SYSTEM)
        assert all(isinstance(d, system.Device) and d in devices for d in nearest)
        assert len(nearest) <= len(devices)


@pytest.mark.gpu
def test_cpu_and_memory_affinity():
    cpus = os.cpu_count()
    for dev in system.Device.get_all_devices():
        affinity = dev.get_cpu_affinity()
        assert affinity == sorted(set(affinity))
        assert all(0 <= cpu < max(cpus, 64) for cpu in affinity)
        assert dev.get_cpu_affinity("socket") == sorted(set(dev.get_cpu_affinity("socket")))
        nodes = dev.get_memory_affinity()
        assert nodes == sorted(set(nodes)) and all(n >= 0 for n in nodes)
        for cpu in affinity[:2]:
            assert dev in system.Device.get_all_devices_with_cpu_affinity(cpu)


@pytest.mark.gpu
def test_first_use_from_many_threads():
    # A fresh process whose first NVML use comes from eight threads at once.
    code = (
        "import threading\n"
        "from cuda_core import system\n"
        "barrier = threading.Barrier(8)\n"
        "results = []\n"
        "def worker():\n"
        "    barrier.wait()\n"
        "    results.append((system.get_kernel_mode_driver_version(),\n"
        "                    system.Device.get_device_count()))\n"
        "threads = [threading.Thread(target=worker) for _ in range(8)]\n"
        "[t.start() for t in threads]\n"
        "[t.join() for t in threads]\n"
        "assert len(results) == 8 and len(set(results)) == 1, results\n"
        "print('ok')\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


@pytest.mark.gpu
def test_set_and_clear_cpu_affinity():
    # In a child process: binding changes the calling thread's CPU affinity.
    code = (
        "import os\n"
        "from cuda_core import system\n"
        "dev = system.Device(index=0)\n"
        "before = os.sched_getaffinity(0)\n"
        "ideal = set(dev.get_cpu_affinity())\n"
        "dev.set_cpu_affinity()\n"
        "bound = os.sched_getaffinity(0)\n"
        "assert bound and bound <= ideal, (bound, ideal)\n"
        "dev.clear_cpu_affinity()\n"
        "cleared = os.sched_getaffinity(0)\n"
        "assert cleared >= before | bound, (cleared, before, bound)\n"
        "print('ok')\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
