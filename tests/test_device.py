"""Device, Context and System."""

import pickle
import re
import threading
import weakref

import cuda.bindings
import numpy as np
import pytest

import cuda_core
from cuda_core import (CUDAError, ComputeCapability, Context, Device, DeviceProperties, Stream,
                       System)
from helpers import cu_ctx_create, run_python


# -- CPU: argument checks that need no driver --------------------------------------------------

@pytest.mark.parametrize("bad", ["0", 1.0, np.True_, [0], object()])
def test_device_id_type_is_checked(bad):
    with pytest.raises(TypeError, match="device_id must be an int, a Device or None"):
        Device(bad)


def test_negative_device_id():
    with pytest.raises(ValueError, match="device_id must be >= 0, got -1"):
        Device(-1)


@pytest.mark.parametrize("cls", [Context, DeviceProperties])
def test_not_constructible(cls):
    with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
        cls()


def test_compute_capability_compares_with_tuples():
    cc = ComputeCapability(9, 0)
    assert cc == (9, 0) and cc > (8, 9) and cc < (10, 0)
    assert (cc.major, cc.minor) == (9, 0)


def test_compute_capability_pickles():
    # namedtuple() named the caller's module, which for a Cython module was importlib's.
    cc = ComputeCapability(9, 0)
    assert ComputeCapability.__module__ == "cuda_core._device"
    assert pickle.loads(pickle.dumps(cc)) == cc


# -- GPU ---------------------------------------------------------------------------------------



@pytest.mark.gpu
def test_singleton_per_ordinal():
    dev = Device(0)
    assert Device(0) is dev
    assert Device(dev) is dev
    assert Device(cuda_core.system.get_num_devices() - 1) is Device.get_all_devices()[-1]
    import numpy as np
    assert Device(np.int64(0)) is dev


@pytest.mark.gpu
def test_out_of_range():
    n = System().num_devices
    with pytest.raises(ValueError, match=f"device_id {n} is out of range: this machine has {n}"):
        Device(n)


@pytest.mark.gpu
def test_default_device_is_current_or_zero():
    # In a fresh thread nothing is current: Device() is device 0.
    seen = []
    t = threading.Thread(target=lambda: seen.append(Device().device_id))
    t.start()
    t.join()
    assert seen == [0]
    last = Device(System().num_devices - 1)
    last.set_current()
    assert Device() is last
    Device(0).set_current()
    assert Device() is Device(0)


@pytest.mark.gpu
def test_per_thread_singletons_are_distinct_objects_but_equal():
    dev = Device(0)
    other = []
    t = threading.Thread(target=lambda: other.append(Device(0)))
    t.start()
    t.join()
    assert other[0] is not dev
    assert other[0] == dev and hash(other[0]) == hash(dev)


@pytest.mark.gpu
def test_identity_and_protocols(dev):
    assert dev.device_id == 0 and int(dev) == 0
    assert isinstance(dev.name, str) and dev.name
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", dev.uuid)
    assert re.fullmatch(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]",
                        dev.pci_bus_id)
    cc = dev.compute_capability
    assert isinstance(cc, ComputeCapability) and cc >= (5, 0)
    assert dev.arch == f"{cc.major}{cc.minor}"
    assert repr(dev).startswith("<Device 0 (")
    assert pickle.loads(pickle.dumps(dev)) is dev
    assert weakref.ref(dev)() is dev
    assert dev in {Device(0)}


@pytest.mark.gpu
def test_properties_every_attribute(dev):
    from cuda.bindings import driver

    props = dev.properties
    assert props is dev.properties
    names = [n for n, v in vars(DeviceProperties).items() if isinstance(v, property)
             or type(v).__name__ == "getset_descriptor"]
    assert len(names) >= 140
    driver_minor = cuda_core.system.get_user_mode_driver_version()
    unsupported = []
    for name in names:
        try:
            value = getattr(props, name)
        except CUDAError as exc:
            # Attributes newer than the installed driver are refused by it.
            assert exc.name == "CUDA_ERROR_INVALID_VALUE", (name, exc)
            unsupported.append(name)
            continue
        assert type(value) in (int, bool), (name, value)
        attr = getattr(driver.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_" + name.upper(), None)
        if attr is None:
            # cuda-bindings 12.x has no name for an attribute CUDA 13 added (ours asks the
            # driver by its number); the CUDA 13 build checks these against the bindings.
            assert int(cuda.bindings.__version__.split(".")[0]) < 13, name
            continue
        _, raw = driver.cuDeviceGetAttribute(attr, 0)
        assert value == raw, name
    assert len(unsupported) < 20, (driver_minor, unsupported)
    assert props.max_threads_per_block >= 1024 and props.warp_size == 32
    assert props.compute_capability_major == dev.compute_capability.major
    assert type(props.cooperative_launch) is bool and type(props.managed_memory) is bool


@pytest.mark.gpu
def test_needs_set_current_first():
    failures = []

    def fresh_thread():
        # Nothing is current on a new thread; every context-needing call says what to do.
        dev = Device(0)
        for use in (lambda: dev.create_stream(), lambda: dev.create_event(),
                    lambda: dev.sync(), lambda: dev.context, lambda: dev.default_stream):
            try:
                use()
                failures.append("no error")
            except CUDAError as exc:
                if "call Device(0).set_current() first" not in str(exc):
                    failures.append(str(exc))

    t = threading.Thread(target=fresh_thread)
    t.start()
    t.join()
    assert failures == []


@pytest.mark.gpu
def test_set_current_and_context(dev):
    ctx = dev.context
    assert isinstance(ctx, Context) and ctx.device is dev
    assert ctx.is_primary and not ctx.is_green and not ctx.is_closed
    assert ctx == dev.context and hash(ctx) == hash(dev.context)
    assert int(ctx.handle) != 0
    assert dev.set_current() is None
    previous = dev.set_current(ctx)
    assert previous == ctx
    with pytest.raises(TypeError, match="ctx must be a Context"):
        dev.set_current(42)
    ctx.close()  # a primary context stays usable
    assert not ctx.is_closed and dev.create_stream() is not None


@pytest.mark.gpu
def test_set_current_with_a_context_of_another_device_delegates_to_it():
    # As cuda.core 1.3: Device(0).set_current(a context of device 1) makes it current, as
    # Device(1).set_current(ctx) would, and returns the context that was current before.
    if System().num_devices < 2:
        pytest.skip("needs two GPUs")
    Device(1).set_current()
    ctx1 = Device(1).context
    Device(0).set_current()
    previous = Device(0).set_current(ctx1)
    assert previous == Device(0).context
    assert Device() is Device(1)
    Device(0).set_current()
    assert Device() is Device(0)


@pytest.mark.gpu
def test_objects_land_in_the_devices_context_while_another_of_its_contexts_is_current(dev):
    # As cuda.core 1.3 ("Device methods act on that device's bound context"), seen on one GPU:
    # while other code has made another context of the same device current (cuCtxCreate),
    # Device.create_stream, create_event, allocate and sync use the device's primary context,
    # and leave the other context current.
    from cuda.bindings import driver

    ctx = cu_ctx_create(int(dev.device_id))
    try:
        primary = int(dev.context.handle)
        s = dev.create_stream()
        e = dev.create_event()
        assert s.context.is_primary and int(s.context.handle) == primary
        assert int(e.context.handle) == primary
        buf = dev.allocate(64, stream=s)
        s.record(e)
        dev.sync()
        err, current = driver.cuCtxGetCurrent()
        assert err == driver.CUresult.CUDA_SUCCESS and int(current) == int(ctx)
        buf.close(s)
        s.close()
        e.close()
    finally:
        driver.cuCtxDestroy(ctx)
        dev.set_current()


@pytest.mark.gpu
def test_objects_land_on_their_device_even_when_another_is_current():
    if System().num_devices < 2:
        pytest.skip("needs two GPUs")
    d0, d1 = Device(0), Device(1)
    d0.set_current()
    d1.set_current()
    s = d0.create_stream()
    e = d0.create_event()
    assert s.device is d0 and e.device is d0
    assert Device() is d1  # the current context was restored
    d0.default_stream.sync()
    d0.sync()
    s.close()
    d0.set_current()


@pytest.mark.gpu
def test_sync_and_peer(dev):
    dev.sync()
    assert dev.can_access_peer(dev) and dev.can_access_peer(0)
    for other in Device.get_all_devices()[1:]:
        assert isinstance(dev.can_access_peer(other), bool)


@pytest.mark.gpu
def test_default_stream(dev):
    s = dev.default_stream
    assert isinstance(s, Stream) and s is dev.default_stream
    assert s == cuda_core.LEGACY_DEFAULT_STREAM
    s.sync()
    assert s.device is dev


@pytest.mark.gpu
def test_default_stream_per_thread_env():
    code = (
        "import cuda_core\n"
        "d = cuda_core.Device(0); d.set_current()\n"
        "print(d.default_stream == cuda_core.PER_THREAD_DEFAULT_STREAM)\n"
    )
    result = run_python(code, env={"CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM": "1"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


@pytest.mark.gpu
def test_system():
    from cuda.bindings import driver

    system = System()
    assert system is System()
    _, version = driver.cuDriverGetVersion()
    assert system.driver_version == (version // 1000, (version % 1000) // 10)
    assert system.num_devices == driver.cuDeviceGetCount()[1] >= 1
    assert system.devices == Device.get_all_devices()
    assert all(d is Device(i) for i, d in enumerate(system.devices))
    assert cuda_core.system.get_num_devices() == system.num_devices
