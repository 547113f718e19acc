"""GraphMemoryResource (cuda_core/_memory/_graph_mr.pyx).

Capture is driven through cuda.bindings here, since graph building is not part of this
package yet.
"""

import copy
import pickle

import numpy as np
import pytest

from cuda_core import GraphMemoryResource, LegacyPinnedMemoryResource
from helpers.memory import NumpyMemoryResource


def _check(result):
    from cuda.bindings import driver

    err, *rest = result if isinstance(result, tuple) else (result,)
    assert err == driver.CUresult.CUDA_SUCCESS, err
    return rest[0] if len(rest) == 1 else rest


@pytest.mark.gpu
def test_one_per_device(dev):
    mr = GraphMemoryResource(dev)
    assert GraphMemoryResource(dev.device_id) is mr
    for how in (pickle.dumps, copy.copy, copy.deepcopy):  # as cuda.core
        with pytest.raises(TypeError, match="GraphMemoryResource cannot be pickled or copied"):
            how(mr)
    assert mr.device_id == dev.device_id
    assert mr.is_device_accessible and not mr.is_host_accessible and not mr.is_managed
    mr.close()  # a no-op


@pytest.mark.gpu
def test_refused_outside_capture(dev, stream):
    mr = GraphMemoryResource(dev)
    with pytest.raises(RuntimeError, match="the stream must be capturing a graph, but it is "
                                           "not capturing"):
        mr.allocate(1024, stream=stream)
    with pytest.raises(TypeError, match="stream is required"):
        mr.allocate(1024, stream=None)


@pytest.mark.gpu
def test_allocate_fill_copy_free_inside_a_graph(dev, stream):
    from cuda.bindings import driver

    mr = GraphMemoryResource(dev)
    n = 1 << 20
    out = LegacyPinnedMemoryResource().allocate(n)  # pageable memory cannot be captured
    h = int(stream.handle)
    _check(driver.cuStreamBeginCapture(
        h, driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED))
    try:
        buf = mr.allocate(n, stream=stream)
        assert buf.memory_resource is mr and buf.size == n
        buf.fill(0x77, stream=stream)
        buf.copy_to(out, stream=stream)
        buf.close(stream)  # a free node in the same graph
    finally:
        graph = _check(driver.cuStreamEndCapture(h))
    exe = _check(driver.cuGraphInstantiate(graph, 0))
    mr.attributes.used_mem_high = 0
    _check(driver.cuGraphLaunch(exe, h))
    stream.sync()
    assert (np.from_dlpack(out) == 0x77).all()
    attrs = mr.attributes
    assert attrs.used_mem_high >= n
    assert attrs.reserved_mem_current >= n
    with pytest.raises(ValueError, match="can only be reset, to 0"):
        attrs.reserved_mem_high = 1
    _check(driver.cuGraphExecDestroy(exe))
    _check(driver.cuGraphDestroy(graph))
    mr.trim()


@pytest.mark.gpu
def test_buffer_outliving_the_graph_is_freed_after_launch(dev, stream):
    from cuda.bindings import driver

    mr = GraphMemoryResource(dev)
    h = int(stream.handle)
    _check(driver.cuStreamBeginCapture(
        h, driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED))
    try:
        buf = mr.allocate(4096, stream=stream)
        buf.fill(np.uint32(5), stream=stream)
    finally:
        graph = _check(driver.cuStreamEndCapture(h))
    exe = _check(driver.cuGraphInstantiate(graph, 0))
    _check(driver.cuGraphLaunch(exe, h))
    out_mr = NumpyMemoryResource()
    out = out_mr.allocate(4096)
    buf.copy_to(out, stream=stream)  # the memory exists after the launch
    buf.close(stream)  # freed outside the graph, after it ran
    stream.sync()
    assert (out_mr.array(out).view(np.uint32) == 5).all()
    _check(driver.cuGraphExecDestroy(exe))
    _check(driver.cuGraphDestroy(graph))
