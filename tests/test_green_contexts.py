"""Green contexts and device resources: options and checks (CPU), and on a GPU the SM
partitions themselves, read back from kernels that record the SM each block ran on."""

import textwrap

import numpy as np
import pytest

import cuda_core
from cuda_core import (
    Context,
    ContextOptions,
    DeviceResources,
    SMResource,
    SMResourceOptions,
    WorkqueueResource,
    WorkqueueResourceOptions,
)
from cuda_core.typing import DeviceResourcesType, WorkqueueSharingScopeType

from helpers import run_python


# -- CPU: construction, options ------------------------------------------------------------

@pytest.mark.parametrize("cls", [Context, SMResource, WorkqueueResource, DeviceResources])
def test_not_constructible(cls):
    with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
        cls()


def test_public_names():
    for name in ("ContextOptions", "DeviceResources", "SMResource", "SMResourceOptions",
                 "WorkqueueResource", "WorkqueueResourceOptions"):
        assert name in cuda_core.__all__
        assert getattr(cuda_core, name).__name__ == name
    assert "WorkqueueSharingScopeType" in cuda_core.typing.__all__
    assert "DeviceResourcesType" in cuda_core.typing.__all__
    assert DeviceResourcesType is not None


def test_sm_options_scalars_and_sequences():
    opts = SMResourceOptions(count=8)
    assert opts.count == 8 and opts.backfill is False
    assert opts._groups() == [(8, None, None, False)]
    opts = SMResourceOptions(count=[8, None], coscheduled_sm_count=4, backfill=[True, False])
    assert opts.count == (8, None)
    assert opts.backfill == (True, False)
    assert opts._groups() == [(8, 4, None, True), (0, 4, None, False)]
    assert SMResourceOptions(count=8, backfill=None).backfill is False  # None is False
    assert SMResourceOptions()._groups() == [(0, None, None, False)]
    # 0 is the driver's "unset", as cuda.core passes it (a count of 0 is the driver's choice).
    assert SMResourceOptions(count=0)._groups() == [(0, None, None, False)]
    assert SMResourceOptions(count=(0,), coscheduled_sm_count=0)._groups() == \
        [(0, 0, None, False)]
    assert SMResourceOptions(count=np.int32(16)).count == 16


@pytest.mark.parametrize("kwargs, error, match", [
    ({"count": -1}, ValueError, r"SMResourceOptions\.count must be between 0 and"),
    ({"count": -4}, ValueError, r"SMResourceOptions\.count"),
    ({"count": np.True_}, TypeError, r"SMResourceOptions\.count"),
    ({"count": 2.0}, TypeError, r"SMResourceOptions\.count"),
    ({"count": "8"}, TypeError, r"SMResourceOptions\.count"),
    ({"count": [8, -1]}, ValueError, r"SMResourceOptions\.count\[1\]"),
    ({"count": []}, ValueError, "empty"),
    ({"count": 2**32}, ValueError, r"SMResourceOptions\.count"),
    ({"count": [8, 8], "coscheduled_sm_count": [4]}, ValueError,
     r"coscheduled_sm_count has 1 entries, but count asks for 2 groups"),
    ({"count": 8, "backfill": [True, False]}, ValueError, r"backfill has 2 entries"),
    ({"count": 8, "backfill": "no"}, TypeError, r"SMResourceOptions\.backfill"),
    ({"count": 8, "preferred_coscheduled_sm_count": -1}, ValueError,
     r"preferred_coscheduled_sm_count"),
])
def test_sm_options_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        SMResourceOptions(**kwargs)


def test_workqueue_options():
    opts = WorkqueueResourceOptions(sharing_scope="green_ctx_balanced", concurrency_limit=4)
    assert opts.sharing_scope is WorkqueueSharingScopeType.GREEN_CTX_BALANCED
    assert opts.sharing_scope == "green_ctx_balanced"
    assert opts.concurrency_limit == 4
    assert WorkqueueResourceOptions().sharing_scope is None
    assert [m.value for m in WorkqueueSharingScopeType] == ["device_ctx", "green_ctx_balanced"]
    with pytest.raises(ValueError, match=r"WorkqueueResourceOptions\.sharing_scope"):
        WorkqueueResourceOptions(sharing_scope="shared")
    with pytest.raises(TypeError, match=r"WorkqueueResourceOptions\.sharing_scope"):
        WorkqueueResourceOptions(sharing_scope=1)
    with pytest.raises(ValueError, match=r"WorkqueueResourceOptions\.concurrency_limit"):
        WorkqueueResourceOptions(concurrency_limit=0)
    with pytest.raises(TypeError, match=r"WorkqueueResourceOptions\.concurrency_limit"):
        WorkqueueResourceOptions(concurrency_limit=1.5)


def test_context_options_refused():
    # No resources is refused where a context is made (test_create_context_refusals), as in
    # cuda.core, whose options take it.
    assert ContextOptions(resources=[]).resources == ()
    assert ContextOptions(resources="").resources == ""
    assert ContextOptions(resources=None).resources is None
    with pytest.raises(TypeError, match=r"ContextOptions\.resources\[0\] must be an "
                                        r"SMResource or a WorkqueueResource, not int"):
        ContextOptions(resources=[3])
    with pytest.raises(TypeError, match=r"resources\[0\].*not str"):
        ContextOptions(resources="sm")
    with pytest.raises(TypeError):
        ContextOptions()


# -- GPU -------------------------------------------------------------------------------------

SMID = textwrap.dedent(r"""
    extern "C" __global__ void record_smid(unsigned int* out, long long spin) {
        unsigned int smid;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        long long start = clock64();
        while (clock64() - start < spin) { }
        if (threadIdx.x == 0) out[blockIdx.x] = smid;
    }
""")

SPIN_CYCLES = 200_000  # ~0.1 ms per block: blocks stay resident long enough to spread out


@pytest.fixture(scope="module")
def smid_kernel():
    from cuda_core import Device, Program, ProgramOptions

    dev = Device(0)
    dev.set_current()
    opts = ProgramOptions(arch=f"sm_{dev.arch}")
    return Program(SMID, "c++", options=opts).compile("cubin").get_kernel("record_smid")


def _sm_ids(stream, kernel, blocks):
    """The distinct SM ids that ``blocks`` blocks of ``kernel`` ran on, launched on ``stream``."""
    from cuda.bindings import driver
    from cuda_core import LaunchConfig, launch

    err, ptr = driver.cuMemAlloc(blocks * 4)
    assert err == driver.CUresult.CUDA_SUCCESS, err
    try:
        (err,) = driver.cuMemsetD32(ptr, 0xFFFFFFFF, blocks)
        assert err == driver.CUresult.CUDA_SUCCESS, err
        # The memset is ordered on the legacy stream, which a non-blocking stream does not
        # wait for.
        (err,) = driver.cuCtxSynchronize()
        assert err == driver.CUresult.CUDA_SUCCESS, err
        launch(stream, LaunchConfig(grid=blocks, block=32), kernel, int(ptr),
               np.int64(SPIN_CYCLES))
        stream.sync()
        out = np.empty(blocks, dtype=np.uint32)
        (err,) = driver.cuMemcpyDtoH(out.ctypes.data, ptr, blocks * 4)
        assert err == driver.CUresult.CUDA_SUCCESS, err
    finally:
        driver.cuMemFree(ptr)
    assert (out != 0xFFFFFFFF).all(), "some blocks did not run"
    return set(out.tolist())


def _quarter(sm):
    """A group size that two groups fit in with room to spare (a split keeps each group's
    SMs co-scheduled, so it cannot always use every SM): about a quarter of the SMs, a
    multiple of the alignment."""
    align = max(sm.coscheduled_alignment, 1)
    want = (sm.sm_count // 4) // align * align
    want = max(want, sm.min_partition_size)
    if 2 * want > sm.sm_count:
        pytest.skip(f"the device's {sm.sm_count} SMs do not make two groups of {want}")
    return want


@pytest.fixture
def groups(dev):
    sm = dev.resources.sm
    want = _quarter(sm)
    parts, remainder = sm.split(SMResourceOptions(count=[want, want]))
    return want, parts, remainder


@pytest.mark.gpu
def test_device_sm_resource(dev):
    res = dev.resources
    assert isinstance(res, DeviceResources)
    sm = res.sm
    assert isinstance(sm, SMResource)
    assert sm.sm_count == dev.properties.multiprocessor_count
    assert sm.min_partition_size >= 1
    assert sm.coscheduled_alignment >= 1
    assert isinstance(sm.flags, int)
    assert sm.handle != 0 and sm.handle != dev.resources.sm.handle  # each read is a new copy
    assert f"{sm.sm_count} SMs" in repr(sm)


@pytest.mark.gpu
def test_split_into_two_groups(dev, groups):
    want, parts, remainder = groups
    total = dev.resources.sm.sm_count
    assert len(parts) == 2
    for part in parts:
        assert isinstance(part, SMResource)
        assert part.sm_count >= want
    assert isinstance(remainder, SMResource)
    assert sum(p.sm_count for p in parts) + remainder.sm_count == total


@pytest.mark.gpu
def test_split_refusals(dev):
    sm = dev.resources.sm
    with pytest.raises(ValueError, match=rf"ask for {sm.sm_count + 1} SMs, but this resource "
                                         rf"has {sm.sm_count}"):
        sm.split(SMResourceOptions(count=sm.sm_count + 1))
    with pytest.raises(TypeError, match=r"SMResource\.split\(\): options must be a "
                                        r"SMResourceOptions"):
        sm.split(8)
    with pytest.raises(TypeError, match=r"SMResource\.split\(\): dry_run"):
        sm.split({"count": 8}, dry_run="no")
    with pytest.raises(TypeError, match="unknown field"):
        sm.split({"counts": 8})


@pytest.mark.gpu
def test_split_of_different_counts_needs_cuda_13_1_or_works(dev):
    from cuda_core._driver import driver_version

    sm = dev.resources.sm
    a = max(sm.min_partition_size, sm.coscheduled_alignment)
    b = 2 * a
    if a + b > sm.sm_count:
        pytest.skip("too few SMs")
    if driver_version() < (13, 1):
        with pytest.raises(RuntimeError, match=r"different counts needs a CUDA 13\.1 driver"):
            sm.split(SMResourceOptions(count=[a, b]))
        # Backfill lets the driver relax co-scheduling; a split without it keeps that
        # permission, so an older driver splits as without it, as cuda.core does.
        with_backfill, _ = sm.split(SMResourceOptions(count=a, backfill=True))
        without, _ = sm.split(SMResourceOptions(count=a))
        assert [p.sm_count for p in with_backfill] == [p.sm_count for p in without]
    else:
        parts, _ = sm.split(SMResourceOptions(count=[a, b]))
        assert [p.sm_count >= c for p, c in zip(parts, (a, b))] == [True, True]


@pytest.mark.gpu
@pytest.mark.parametrize("count", [None, 0, (0,)])
def test_split_of_count_zero_is_the_drivers_choice(dev, count):
    # As cuda.core: 0 (or None) goes to the driver, which picks the group's size (discovery on
    # CUDA 13.1; before it, cuDevSmResourceSplitByCount's smallest group).
    sm = dev.resources.sm
    parts, remainder = sm.split(SMResourceOptions(count=count), dry_run=True)
    assert len(parts) == 1
    assert 0 < parts[0].sm_count <= sm.sm_count
    assert parts[0].sm_count + remainder.sm_count == sm.sm_count


@pytest.mark.gpu
def test_dry_run(dev):
    sm = dev.resources.sm
    want = _quarter(sm)
    parts, remainder = sm.split(SMResourceOptions(count=want), dry_run=True)
    assert len(parts) == 1 and parts[0].sm_count >= want
    assert "dry run" in repr(parts[0])
    with pytest.raises(ValueError, match="dry run's result"):
        dev.create_context(ContextOptions(resources=parts[0]))
    with pytest.raises(ValueError, match="dry run's result"):
        parts[0].split(SMResourceOptions(count=want))


@pytest.mark.gpu
def test_create_context_refusals(dev):
    with pytest.raises(TypeError, match=r"create_context\(\): options is required"):
        dev.create_context()
    with pytest.raises(TypeError, match=r"create_context\(\): options must be a ContextOptions"):
        dev.create_context([dev.resources.sm])
    with pytest.raises(ValueError, match=r"create_context\(\): options\.resources is empty"):
        dev.create_context({"resources": []})
    with pytest.raises(ValueError, match=r"create_context\(\): options\.resources is empty"):
        dev.create_context(ContextOptions(resources=""))
    with pytest.raises(ValueError, match=r"create_context\(\): options\.resources is None"):
        dev.create_context(ContextOptions(resources=None))


@pytest.mark.gpu
def test_green_context(dev, groups):
    from cuda.bindings import driver

    want, parts, _ = groups
    err, before = driver.cuCtxGetCurrent()
    ctx = dev.create_context(ContextOptions(resources=[parts[0]]))
    err, after = driver.cuCtxGetCurrent()
    assert int(after) == int(before)  # not made current
    assert ctx.is_green and not ctx.is_primary and not ctx.is_closed
    assert ctx.device == dev
    assert int(ctx.handle) != 0 and ctx != dev.context
    assert "green" in repr(ctx)
    assert ctx.resources.sm.sm_count == parts[0].sm_count
    stream = ctx.create_stream()
    assert stream.context == ctx and stream.context.is_green
    assert stream.device == dev
    assert stream.is_nonblocking
    assert stream.resources.sm.sm_count == parts[0].sm_count
    stream.close()
    ctx.close()
    assert ctx.is_closed
    ctx.close()  # idempotent


@pytest.mark.gpu
def test_primary_context_resources_and_refusals(dev):
    ctx = dev.context
    assert not ctx.is_green
    assert ctx.resources.sm.sm_count == dev.properties.multiprocessor_count
    s = dev.create_stream()
    assert s.resources.sm.sm_count == dev.properties.multiprocessor_count
    s.close()
    with pytest.raises(RuntimeError, match=r"create_stream\(\) is for green contexts only"):
        ctx.create_stream()


@pytest.mark.gpu
def test_green_stream_options(dev, groups):
    from cuda_core import StreamOptions

    _, parts, _ = groups
    ctx = dev.create_context({"resources": parts[0]})
    with pytest.raises(ValueError, match="nonblocking must be True"):
        ctx.create_stream(StreamOptions(nonblocking=False))
    with pytest.raises(ValueError, match=r"StreamOptions\.priority=1000 is outside"):
        ctx.create_stream({"priority": 1000})
    s = ctx.create_stream({"priority": 0})
    assert s.priority == 0
    s.close()
    ctx.close()


@pytest.mark.gpu
def test_green_stream_runs_on_its_partition_only(dev, groups, smid_kernel):
    _, parts, _ = groups
    blocks = 8 * dev.properties.multiprocessor_count
    ctx = dev.create_context(ContextOptions(resources=[parts[0]]))
    stream = ctx.create_stream()
    green_ids = _sm_ids(stream, smid_kernel, blocks)
    stream.close()
    ctx.close()
    assert 1 <= len(green_ids) <= parts[0].sm_count

    full = dev.create_stream()
    full_ids = _sm_ids(full, smid_kernel, blocks)
    full.close()
    assert len(full_ids) > parts[0].sm_count
    assert len(full_ids) <= dev.properties.multiprocessor_count


@pytest.mark.gpu
def test_two_green_contexts_use_disjoint_sms(dev, groups, smid_kernel):
    _, parts, _ = groups
    blocks = 8 * dev.properties.multiprocessor_count
    seen = []
    for part in parts:
        ctx = dev.create_context(ContextOptions(resources=[part]))
        stream = ctx.create_stream()
        ids = _sm_ids(stream, smid_kernel, blocks)
        stream.close()
        ctx.close()
        assert 1 <= len(ids) <= part.sm_count
        seen.append(ids)
    assert seen[0].isdisjoint(seen[1]), sorted(seen[0] & seen[1])


@pytest.mark.gpu
def test_closed_context_refuses_and_its_stream_keeps_working():
    # In a fresh process: a mistake here would destroy the green context under its stream.
    code = textwrap.dedent(f"""
        import numpy as np
        from cuda.bindings import driver
        from cuda_core import Device, LaunchConfig, Program, ProgramOptions, launch
        from cuda_core import SMResourceOptions, ContextOptions

        dev = Device(0)
        dev.set_current()
        sm = dev.resources.sm
        want = max(sm.min_partition_size, sm.coscheduled_alignment)
        (part,), _ = sm.split(SMResourceOptions(count=want))
        ctx = dev.create_context(ContextOptions(resources=[part]))
        stream = ctx.create_stream()
        ctx.close()
        assert ctx.is_closed
        for call in (lambda: ctx.handle, lambda: ctx.resources, lambda: ctx.create_stream(),
                     lambda: dev.set_current(ctx)):
            try:
                call()
            except RuntimeError as exc:
                assert "this Context is closed" in str(exc), exc
            else:
                raise AssertionError("a closed Context was used")
        del ctx
        kernel = Program({SMID!r}, "c++", options=ProgramOptions(arch="sm_" + dev.arch)
                         ).compile("cubin").get_kernel("record_smid")
        err, ptr = driver.cuMemAlloc(4 * 64)
        launch(stream, LaunchConfig(grid=64, block=32), kernel, int(ptr), np.int64(1000))
        stream.sync()
        out = np.empty(64, dtype=np.uint32)
        driver.cuMemcpyDtoH(out.ctypes.data, ptr, 4 * 64)
        assert len(set(out.tolist())) <= part.sm_count
        assert stream.context.is_green and not stream.context.is_closed
        stream.context.close()  # the stream's view: a no-op
        assert stream.resources.sm.sm_count == part.sm_count
        ev = stream.record()
        stream.close()  # the green context goes with the last of its stream and event
        ev.sync()
        del ev
        driver.cuMemFree(ptr)
        print("OK")
    """)
    proc = run_python(code, env={"PYTHONWARNINGS": "error::RuntimeWarning"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "OK"
    assert "Warning" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr


@pytest.mark.gpu
def test_green_context_dropped_without_close_is_released_quietly():
    code = textwrap.dedent("""
        import gc, warnings
        from cuda_core import Device, ContextOptions
        warnings.simplefilter("error")
        from cuda_core import SMResourceOptions
        dev = Device(0)
        dev.set_current()
        sm = dev.resources.sm
        want = max(sm.min_partition_size, sm.coscheduled_alignment)
        (part,), _ = sm.split(SMResourceOptions(count=want))
        for _ in range(20):
            ctx = dev.create_context(ContextOptions(resources=part))
            s = ctx.create_stream()
            del ctx, s
        gc.collect()
        print("OK")
    """)
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "OK"
    assert "Warning" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr


@pytest.mark.gpu
def test_workqueue_resource(dev):
    from cuda_core._driver import driver_version

    if driver_version() < (13, 1):
        with pytest.raises(RuntimeError, match=r"DeviceResources\.workqueue needs a CUDA 13\.1 "
                                               r"driver"):
            dev.resources.workqueue
        return
    wq = dev.resources.workqueue
    assert isinstance(wq, WorkqueueResource)
    assert wq.device == dev
    assert wq.sharing_scope in tuple(WorkqueueSharingScopeType)
    assert wq.concurrency_limit >= 1
    wq.configure(WorkqueueResourceOptions(sharing_scope="green_ctx_balanced",
                                          concurrency_limit=2))
    assert wq.sharing_scope is WorkqueueSharingScopeType.GREEN_CTX_BALANCED
    assert wq.concurrency_limit == 2
    wq.configure({})  # nothing changes
    assert wq.concurrency_limit == 2
    sm = dev.resources.sm
    (part,), _ = sm.split(SMResourceOptions(count=_quarter(sm)))
    ctx = dev.create_context(ContextOptions(resources=[part, wq]))
    assert ctx.is_green
    ctx.close()
