"""Batched memory operations and copy options (cuda_core/_memory/_batch.pyx, _copy.pyx,
_copy_options.py): utils.copy_batch, prefetch_batch, discard_batch, discard_prefetch_batch,
CopyOptions, and the options of Buffer.copy_to/copy_from."""

import ctypes
import dataclasses
import os

import numpy as np
import pytest

import cuda_core.utils as utils
from cuda_core import (Buffer, Host, LEGACY_DEFAULT_STREAM, LegacyPinnedMemoryResource,
                       ManagedMemoryResource, PER_THREAD_DEFAULT_STREAM)
from cuda_core.system import get_user_mode_driver_version
from cuda_core.utils import (CopyOptions, MemcpyOverlapMode, MemcpySrcAccessOrder, copy_batch,
                             discard_batch, discard_prefetch_batch, prefetch_batch)
from helpers import has_cuda_13
from helpers.memory import NumpyMemoryResource

# CPU tests use views of made-up addresses: every check must refuse them before any driver
# call (without a driver, a driver call would raise CUDAError, not the error asserted).
PTS = PER_THREAD_DEFAULT_STREAM


def _views(*sizes, base=0x10000):
    return [Buffer.from_handle(base + 0x1000 * i, n) for i, n in enumerate(sizes)]


# -- CopyOptions and the enums -----------------------------------------------------------------

def test_names_exported():
    for name in ("CopyOptions", "MemcpySrcAccessOrder", "MemcpyOverlapMode", "copy_batch",
                 "prefetch_batch", "discard_batch", "discard_prefetch_batch"):
        assert name in utils.__all__ and hasattr(utils, name)


def test_enum_values():
    assert [m.value for m in MemcpySrcAccessOrder] == ["stream", "during_api_call", "any"]
    assert [m.value for m in MemcpyOverlapMode] == ["default", "prefer_overlap_with_compute"]
    assert MemcpySrcAccessOrder.ANY == "any" and isinstance(MemcpyOverlapMode.DEFAULT, str)


def test_copy_options_defaults():
    o = CopyOptions()
    assert o.src_access_order is MemcpySrcAccessOrder.STREAM
    assert o.overlap_mode is MemcpyOverlapMode.DEFAULT
    assert o.src_location_hint is None and o.dst_location_hint is None


def test_copy_options_strings_become_members():
    o = CopyOptions("during_api_call", Host(), Host(numa_id=0), "prefer_overlap_with_compute")
    assert o.src_access_order is MemcpySrcAccessOrder.DURING_API_CALL
    assert o.overlap_mode is MemcpyOverlapMode.PREFER_OVERLAP_WITH_COMPUTE
    assert o.src_location_hint is Host() and o.dst_location_hint == Host(numa_id=0)
    assert o == CopyOptions(MemcpySrcAccessOrder.DURING_API_CALL, Host(), Host(numa_id=0),
                            MemcpyOverlapMode.PREFER_OVERLAP_WITH_COMPUTE)
    assert hash(o) == hash(CopyOptions("during_api_call", Host(), Host(numa_id=0),
                                       "prefer_overlap_with_compute"))


def test_copy_options_frozen():
    o = CopyOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.src_access_order = "any"


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"src_access_order": "sometimes"}, ValueError,
     "CopyOptions.src_access_order must be one of 'stream', 'during_api_call', 'any', "
     "got 'sometimes'"),
    ({"src_access_order": 1}, TypeError, "CopyOptions.src_access_order must be one of .*not int"),
    ({"overlap_mode": "always"}, ValueError, "CopyOptions.overlap_mode must be one of"),
    ({"overlap_mode": None}, ValueError, "CopyOptions.overlap_mode must be one of"),
    ({"src_location_hint": 0}, TypeError,
     "CopyOptions.src_location_hint must be a Device, a Host or None, not int"),
    ({"dst_location_hint": "host"}, TypeError,
     "CopyOptions.dst_location_hint must be a Device, a Host or None, not str"),
])
def test_copy_options_checked(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        CopyOptions(**kwargs)


# -- copy_batch: argument checks -----------------------------------------------------------------

def test_copy_batch_refuses_legacy_stream():
    a, b = _views(8, 8)
    with pytest.raises(TypeError, match=r"copy_batch\(\): the legacy default stream"):
        copy_batch(LEGACY_DEFAULT_STREAM, [a], [b])


def test_copy_batch_stream_required():
    a, b = _views(8, 8)
    with pytest.raises(TypeError, match="stream is required"):
        copy_batch(None, [a], [b])
    with pytest.raises(TypeError):
        copy_batch(3, [a], [b])


def test_copy_batch_refuses_single_buffer():
    a, b = _views(8, 8)
    with pytest.raises(TypeError, match="srcs must be a sequence of Buffers .*not a single "
                                        "Buffer"):
        copy_batch(PTS, a, [b])
    with pytest.raises(TypeError, match="dsts must be a sequence of Buffers .*not a single "
                                        "Buffer"):
        copy_batch(PTS, [a], b)


@pytest.mark.parametrize("bad", [b"ab", "ab", 7, {1: 2}, iter([])])
def test_copy_batch_refuses_non_sequences(bad):
    (a,) = _views(8)
    with pytest.raises(TypeError, match="srcs must be a sequence of Buffers"):
        copy_batch(PTS, bad, [a])


def test_copy_batch_elements_checked():
    a, b = _views(8, 8)
    with pytest.raises(TypeError, match=r"srcs\[1\] must be a Buffer, not bytearray"):
        copy_batch(PTS, [a, bytearray(8)], [b, b])
    with pytest.raises(TypeError, match=r"dsts\[0\] must be a Buffer, not int"):
        copy_batch(PTS, (a,), (0x1000,))
    c = Buffer.from_handle(0x9000, 8)
    c.close()
    with pytest.raises(RuntimeError, match=r"dsts\[0\] is a closed Buffer"):
        copy_batch(PTS, [a], [c])


def test_copy_batch_lengths_and_sizes():
    a, b, c = _views(8, 8, 4)
    with pytest.raises(ValueError, match="srcs has 2 buffers but dsts has 1"):
        copy_batch(PTS, [a, b], [c])
    with pytest.raises(ValueError, match=r"size mismatch at index 1: srcs\[1\] has 8 bytes "
                                         r"but dsts\[1\] has 4 bytes"):
        copy_batch(PTS, [a, b], [b, c])


def test_copy_batch_options_checked():
    a, b = _views(8, 8)
    with pytest.raises(TypeError, match="options must be a CopyOptions, a sequence of them"):
        copy_batch(PTS, [a], [b], options={"src_access_order": "any"})
    with pytest.raises(TypeError, match="options must be a CopyOptions, a sequence of them"):
        copy_batch(PTS, [a], [b], options="any")
    with pytest.raises(ValueError, match="options has 2 entries but there are 1 copies"):
        copy_batch(PTS, [a], [b], options=[CopyOptions(), CopyOptions()])
    with pytest.raises(TypeError, match=r"options\[0\] must be a CopyOptions, not NoneType"):
        copy_batch(PTS, [a], [b], options=[None])
    with pytest.raises(TypeError):
        copy_batch(PTS, [a], [b], CopyOptions())  # options is keyword-only


def test_copy_batch_nothing_to_copy_makes_no_driver_call():
    # Without a driver, any driver call would raise: an empty batch and a batch of zero-byte
    # copies return quietly (after the checks, which still apply).
    copy_batch(PTS, [], [])
    copy_batch(PTS, (), (), options=[])
    z1, z2 = _views(0, 0)
    copy_batch(PTS, [z1], [z2], options=CopyOptions("any"))
    with pytest.raises(ValueError, match="srcs has 0 buffers but dsts has 1"):
        copy_batch(PTS, [], [z2])


# -- Buffer.copy_to / copy_from options: argument checks -------------------------------------

def test_copy_to_options_type_checked():
    a, b = _views(8, 8)
    with pytest.raises(TypeError, match=r"Buffer.copy_to\(\): options must be a CopyOptions "
                                        r"or None, not dict"):
        a.copy_to(b, stream=PTS, options={})
    with pytest.raises(TypeError, match=r"Buffer.copy_from\(\): options must be a CopyOptions "
                                        r"or None, not str"):
        a.copy_from(b, stream=PTS, options="stream")


def test_copy_to_options_refuse_legacy_stream():
    a, b = _views(8, 8)
    with pytest.raises(TypeError, match=r"Buffer.copy_to\(\): the legacy default stream"):
        a.copy_to(b, stream=LEGACY_DEFAULT_STREAM, options=CopyOptions())
    with pytest.raises(TypeError, match=r"Buffer.copy_from\(\): the legacy default stream"):
        a.copy_from(b, stream=LEGACY_DEFAULT_STREAM, options=CopyOptions("any"))


def test_copy_to_options_checked_before_allocating():
    # dst=None allocates from the resource: a bad options must be refused first.
    mr = NumpyMemoryResource()
    src = mr.allocate(16)
    with pytest.raises(TypeError, match="options must be a CopyOptions"):
        src.copy_to(stream=PTS, options=1)
    with pytest.raises(TypeError, match="the legacy default stream"):
        src.copy_to(stream=LEGACY_DEFAULT_STREAM, options=CopyOptions())
    assert len(mr.live) == 1  # nothing allocated


# -- prefetch/discard batches: argument checks -------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda s, bufs: prefetch_batch(s, bufs, Host()),
    lambda s, bufs: discard_batch(s, bufs),
    lambda s, bufs: discard_prefetch_batch(s, bufs, Host()),
])
def test_managed_batches_argument_checks(call):
    a, b = _views(64, 64)
    with pytest.raises(TypeError, match="the legacy default stream"):
        call(LEGACY_DEFAULT_STREAM, [a, b])
    with pytest.raises(TypeError, match="stream is required"):
        call(None, [a, b])
    with pytest.raises(TypeError, match="buffers must be a sequence of Buffers .*single Buffer"):
        call(PTS, a)
    with pytest.raises(TypeError, match=r"buffers\[1\] must be a Buffer, not int"):
        call(PTS, [a, 5])
    c = Buffer.from_handle(0x9000, 8)
    c.close()
    with pytest.raises(RuntimeError, match=r"buffers\[0\] is a closed Buffer"):
        call(PTS, [c])
    # Nothing to do: no driver call.
    call(PTS, [])
    call(PTS, _views(0, 0))


@pytest.mark.parametrize("fn", [prefetch_batch, discard_prefetch_batch])
def test_locations_checked(fn):
    a, b = _views(64, 64)
    with pytest.raises(TypeError, match="location must be a Device, a device ordinal .*not str"):
        fn(PTS, [a, b], "gpu")
    with pytest.raises(ValueError, match="locations has 1 entries but buffers has 2"):
        fn(PTS, [a, b], [Host()])
    with pytest.raises(TypeError, match=r"locations\[1\]: location must be a Device.*"
                                        r"not NoneType"):
        fn(PTS, [a, b], (Host(), None))
    with pytest.raises(TypeError):
        fn(PTS, [a, b])  # locations is required


# -- GPU ---------------------------------------------------------------------------------------

def _host_bytes(buf):
    """A copy of the bytes of host-accessible ``buf`` (pinned, managed or pageable)."""
    return np.ctypeslib.as_array((ctypes.c_uint8 * buf.size).from_address(buf.handle)).copy()


def _write_host(buf, data):
    np.ctypeslib.as_array((ctypes.c_uint8 * buf.size).from_address(buf.handle))[:] = data


def _device_bytes(buf, stream):
    out_mr = NumpyMemoryResource()
    out = out_mr.allocate(buf.size)
    buf.copy_to(out, stream=stream)
    stream.sync()
    return out_mr.array(out).copy()


def _data(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


@pytest.mark.gpu
def test_copy_batch_between_memory_kinds(dev, stream):
    pinned_mr = LegacyPinnedMemoryResource()
    managed_mr = ManagedMemoryResource()
    sizes = [1 << 20, 777, 65537, 3, 4099]
    data = [_data(n, i) for i, n in enumerate(sizes)]
    # Sources, filled and settled before the batch.
    p_src = pinned_mr.allocate(sizes[0])
    _write_host(p_src, data[0])
    m_src = managed_mr.allocate(sizes[1], stream=stream)
    d_src = dev.allocate(sizes[2], stream=stream)
    d_src2 = dev.allocate(sizes[3], stream=stream)
    p_src2 = pinned_mr.allocate(sizes[4])
    _write_host(p_src2, data[4])
    stream.sync()
    _write_host(m_src, data[1])
    staging = [_pinned_with(pinned_mr, data[2]), _pinned_with(pinned_mr, data[3])]
    d_src.copy_from(staging[0], stream=stream)
    d_src2.copy_from(staging[1], stream=stream)
    stream.sync()
    # managed <- pinned, pinned <- managed, pinned <- device, device <- device,
    # device <- pinned; and a zero-byte pair, left out of the batch.
    m_a = managed_mr.allocate(sizes[0], stream=stream)
    p_a = pinned_mr.allocate(sizes[1])
    p_b = pinned_mr.allocate(sizes[2])
    d_b = dev.allocate(sizes[3], stream=stream)
    d_c = dev.allocate(sizes[4], stream=stream)
    stream.sync()
    z_src, z_dst = Buffer.from_handle(0, 0), Buffer.from_handle(0, 0)
    copy_batch(stream, [p_src, m_src, z_src, d_src, d_src2, p_src2],
               [m_a, p_a, z_dst, p_b, d_b, d_c])
    stream.sync()
    np.testing.assert_array_equal(_host_bytes(m_a), data[0])
    np.testing.assert_array_equal(_host_bytes(p_a), data[1])
    np.testing.assert_array_equal(_host_bytes(p_b), data[2])
    np.testing.assert_array_equal(_device_bytes(d_b, stream), data[3])
    np.testing.assert_array_equal(_device_bytes(d_c, stream), data[4])
    for b in (m_a, d_b, d_c, d_src, d_src2, m_src):
        b.close()
    stream.sync()


@pytest.mark.gpu
def test_copy_batch_pageable_host(dev, stream):
    # Plain host memory: a NumPy array (through a Python memory resource) and a bytearray.
    host_mr = NumpyMemoryResource()
    n = 65536 + 5
    data = [_data(n, 20), _data(n, 21)]
    h_src = host_mr.allocate(n)
    host_mr.array(h_src)[:] = data[0]
    ba = bytearray(data[1].tobytes())
    ba_src = Buffer.from_handle(ctypes.addressof((ctypes.c_char * n).from_buffer(ba)), n,
                                owner=ba)
    d = [dev.allocate(n, stream=stream) for _ in range(2)]
    stream.sync()
    copy_batch(stream, [h_src, ba_src], d)
    h_out = host_mr.allocate(n)
    ba_out = bytearray(n)
    ba_dst = Buffer.from_handle(ctypes.addressof((ctypes.c_char * n).from_buffer(ba_out)), n,
                                owner=ba_out)
    copy_batch(stream, d, [h_out, ba_dst])
    stream.sync()
    np.testing.assert_array_equal(host_mr.array(h_out), data[0])
    assert bytes(ba_out) == bytes(ba)
    for b in d:
        b.close()
    stream.sync()


def _pinned_with(pinned_mr, data):
    buf = pinned_mr.allocate(len(data))
    _write_host(buf, data)
    return buf


@pytest.mark.gpu
def test_copy_batch_with_options(dev, stream):
    pinned_mr = LegacyPinnedMemoryResource()
    managed_mr = ManagedMemoryResource()
    n = 8192
    data = [_data(n, 10 + i) for i in range(4)]
    srcs = [pinned_mr.allocate(n) for _ in range(4)]
    for s, d in zip(srcs, data):
        _write_host(s, d)
    dsts = [dev.allocate(n, stream=stream), managed_mr.allocate(n, stream=stream),
            dev.allocate(n, stream=stream), managed_mr.allocate(n, stream=stream)]
    stream.sync()  # nothing queued before the batch uses the sources
    options = [CopyOptions(), CopyOptions("any", dst_location_hint=dev),
               CopyOptions(overlap_mode="prefer_overlap_with_compute"),
               CopyOptions(MemcpySrcAccessOrder.DURING_API_CALL, dst_location_hint=Host())]
    copy_batch(stream, srcs, dsts, options=options)
    stream.sync()
    np.testing.assert_array_equal(_device_bytes(dsts[0], stream), data[0])
    np.testing.assert_array_equal(_host_bytes(dsts[1]), data[1])
    np.testing.assert_array_equal(_device_bytes(dsts[2], stream), data[2])
    np.testing.assert_array_equal(_host_bytes(dsts[3]), data[3])
    # One options for every copy, on the per-thread default stream (accepted: only the legacy
    # one is refused).
    outs = [pinned_mr.allocate(n) for _ in range(2)]
    copy_batch(PER_THREAD_DEFAULT_STREAM, [dsts[0], dsts[2]], outs, options=CopyOptions("stream"))
    PER_THREAD_DEFAULT_STREAM.sync()
    np.testing.assert_array_equal(_host_bytes(outs[0]), data[0])
    np.testing.assert_array_equal(_host_bytes(outs[1]), data[2])
    for b in dsts:
        b.close()
    stream.sync()


@pytest.mark.gpu
def test_copy_batch_refuses_capture(dev):
    a = dev.allocate(64, stream=dev.default_stream)
    b = dev.allocate(64, stream=dev.default_stream)
    dev.sync()
    gb = dev.create_graph_builder().begin_building()
    try:
        with pytest.raises(TypeError, match="a GraphBuilder is not accepted"):
            copy_batch(gb, [a], [b])
        with pytest.raises(TypeError, match="the stream is capturing a graph"):
            copy_batch(gb.stream, [a], [b])
        with pytest.raises(TypeError, match=r"Buffer.copy_to\(\): the stream is capturing"):
            a.copy_to(b, stream=gb.stream, options=CopyOptions())
    finally:
        gb.end_building()
        gb.close()
    a.close()
    b.close()
    dev.sync()


@pytest.mark.gpu
def test_copy_batch_device_default_stream(dev):
    # Device.default_stream is the legacy default stream unless the per-thread one is selected.
    pinned_mr = LegacyPinnedMemoryResource()
    src, dst = pinned_mr.allocate(256), pinned_mr.allocate(256)
    data = _data(256, 5)
    _write_host(src, data)
    s = dev.default_stream
    if os.environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM") == "1":
        copy_batch(s, [src], [dst])
        s.sync()
        np.testing.assert_array_equal(_host_bytes(dst), data)
    else:
        with pytest.raises(TypeError, match="the legacy default stream"):
            copy_batch(s, [src], [dst])
        with pytest.raises(TypeError, match="the legacy default stream"):
            src.copy_to(dst, stream=s, options=CopyOptions())
        src.copy_to(dst, stream=s)  # without options the legacy stream is fine
        s.sync()
        np.testing.assert_array_equal(_host_bytes(dst), data)


@pytest.mark.gpu
def test_copy_to_copy_from_options(dev, stream):
    pinned_mr = LegacyPinnedMemoryResource()
    n = 4096
    data = _data(n, 99)
    src = pinned_mr.allocate(n)
    _write_host(src, data)
    during = CopyOptions("during_api_call")
    if get_user_mode_driver_version() >= (13, 2):
        d = dev.allocate(n, stream=stream)
        stream.sync()
        src.copy_to(d, stream=stream, options=during)
        back = pinned_mr.allocate(n)
        back.copy_from(d, stream=stream, options=CopyOptions("stream", src_location_hint=dev,
                                                             dst_location_hint=Host()))
        stream.sync()
        np.testing.assert_array_equal(_host_bytes(back), data)
        new = src.copy_to(stream=stream, options=CopyOptions("any"))
        stream.sync()
        np.testing.assert_array_equal(_host_bytes(new), data)
    else:
        # This driver has no cuMemcpyWithAttributesAsync: a guarantee a plain copy cannot give
        # is refused, and nothing is copied; hints fall back to the plain copy.
        d = pinned_mr.allocate(n)
        _write_host(d, np.full(n, 0xAB, np.uint8))
        with pytest.raises(NotImplementedError, match=r"Buffer.copy_to\(\): src_access_order="
                                                      r"'during_api_call' needs a CUDA 13.2 "
                                                      r"driver \(this driver is CUDA 13\."):
            src.copy_to(d, stream=stream, options=during)
        with pytest.raises(RuntimeError, match="needs a CUDA 13.2 driver"):
            d.copy_from(src, stream=stream, options=during)
        stream.sync()
        assert (_host_bytes(d) == 0xAB).all()
        src.copy_to(d, stream=stream, options=CopyOptions("any", dst_location_hint=dev))
        stream.sync()
        np.testing.assert_array_equal(_host_bytes(d), data)
        d.fill(0, stream=stream)
        d.copy_from(src, stream=stream,
                    options=CopyOptions(overlap_mode="prefer_overlap_with_compute"))
        stream.sync()
        np.testing.assert_array_equal(_host_bytes(d), data)


@pytest.mark.gpu
def test_prefetch_and_discard_batches(dev, stream):
    mr = ManagedMemoryResource()
    sizes = [1 << 21, 65536, 1 << 20]  # whole pages: discards act on pages
    bufs = [mr.allocate(n, stream=stream) for n in sizes]
    if not has_cuda_13():
        with pytest.raises(NotImplementedError,
                           match="needs a CUDA 13.0 driver|built for CUDA 12"):
            prefetch_batch(stream, bufs, dev)
        pytest.skip("the batches need a CUDA 13 driver and build (the refusal was checked)")
    for i, b in enumerate(bufs):
        b.fill(i + 1, stream=stream)
    # Prefetching moves the pages, never their contents.
    prefetch_batch(stream, bufs, dev)
    prefetch_batch(stream, bufs, [Host(), dev, dev.device_id])
    stream.sync()
    for i, b in enumerate(bufs):
        assert (_host_bytes(b) == i + 1).all()
    # Discarded contents are undefined; the memory is usable once written again.
    discard_batch(stream, bufs)
    for b in bufs:
        b.fill(7, stream=stream)
    stream.sync()
    for b in bufs:
        assert (_host_bytes(b) == 7).all()
    discard_prefetch_batch(stream, bufs, dev)
    discard_prefetch_batch(stream, bufs, [dev, Host(), dev])
    for b in bufs:
        b.fill(9, stream=stream)
    stream.sync()
    for b in bufs:
        assert (_host_bytes(b) == 9).all()
    for b in bufs:
        b.close()
    stream.sync()
