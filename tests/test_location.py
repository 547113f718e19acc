"""Host and memory locations (cuda_core/_memory/_location.pyx)."""

import pickle

import cloudpickle
import pytest

from cuda_core import Host


def test_interned_and_equal():
    assert Host() is Host()
    assert Host(1) is Host(numa_id=1)
    assert Host.numa_current() is Host(is_numa_current=True)
    assert Host() != Host(0) != Host.numa_current()
    assert len({Host(), Host(), Host(2), Host.numa_current()}) == 3
    assert Host(3).numa_id == 3 and not Host(3).is_numa_current
    assert Host().numa_id is None and Host.numa_current().is_numa_current


@pytest.mark.parametrize("host", [Host(), Host(5), Host.numa_current()])
def test_pickles_to_the_same_object(host):
    assert pickle.loads(pickle.dumps(host)) is host
    assert cloudpickle.loads(cloudpickle.dumps(host)) is host


def test_repr():
    assert repr(Host()) == "Host()"
    assert repr(Host(2)) == "Host(numa_id=2)"
    assert repr(Host.numa_current()) == "Host.numa_current()"


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"numa_id": -1}, ValueError, "numa_id must be >= 0"),
    ({"numa_id": "0"}, TypeError, "numa_id must be an int or None"),
    ({"numa_id": 1.0}, TypeError, "not float"),
    ({"numa_id": 1, "is_numa_current": True}, ValueError, "not both"),
    ({"is_numa_current": "no"}, TypeError, "is_numa_current must be a bool"),
])
def test_checked(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        Host(**kwargs)


def test_flags_and_numa_id_as_cuda_core_reads_them():
    # is_numa_current: an int by its truth value, None as False (one object per location);
    # numa_id=True is cuda.core's ValueError, not node 1.
    assert Host(is_numa_current=None) is Host()
    assert Host(is_numa_current=1) is Host.numa_current()
    with pytest.raises(ValueError, match="numa_id must be a non-negative int, got True"):
        Host(numa_id=True)
