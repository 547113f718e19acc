"""LaunchConfig: normalisation and pure validation (CPU)."""

import copy
import pickle
import threading
import warnings
import weakref

import numpy as np
import pytest

from cuda_core import CUDAError, LaunchConfig


@pytest.mark.parametrize("given, expected", [
    (1, (1, 1, 1)), ((), (1, 1, 1)), ((4,), (4, 1, 1)), ((2, 3), (2, 3, 1)), ((2, 3, 4), (2, 3, 4)),
    (np.int32(7), (7, 1, 1)), ((np.uint8(2), 3), (2, 3, 1)), (2**32 - 1, (2**32 - 1, 1, 1)),
])
def test_dims_normalised(given, expected):
    cfg = LaunchConfig(grid=given, block=given)
    assert cfg.grid == expected and cfg.block == expected
    assert all(type(v) is int for v in cfg.grid + cfg.block)


def test_defaults():
    cfg = LaunchConfig(grid=1, block=32)
    assert cfg.cluster is None and cfg.shmem_size == 0
    assert cfg.is_cooperative is False and cfg.programmatic_stream_serialization is False


def test_cluster_keeps_grid_in_clusters():
    cfg = LaunchConfig(grid=(4, 2), cluster=2, block=128)
    assert cfg.grid == (4, 2, 1) and cfg.cluster == (2, 1, 1)


@pytest.mark.parametrize("kwargs, exc, msg", [
    ({"block": 1}, ValueError, "LaunchConfig.grid is required"),
    ({"grid": 1}, ValueError, "LaunchConfig.block is required"),
    ({"grid": 0, "block": 1}, ValueError, "LaunchConfig.grid values must be >= 1"),
    ({"grid": 1, "block": (32, 0)}, ValueError, "LaunchConfig.block values must be >= 1"),
    ({"grid": 1, "block": -3}, ValueError, "LaunchConfig.block values must be >= 1"),
    ({"grid": 1.0, "block": 1}, TypeError, "LaunchConfig.grid must be an int .* got float"),
    ({"grid": np.True_, "block": 1}, TypeError, "LaunchConfig.grid must be an int .* got bool"),
    ({"grid": "1", "block": 1}, TypeError, "LaunchConfig.grid must be an int .* got str"),
    ({"grid": [1, 2], "block": 1}, TypeError, "LaunchConfig.grid must be an int .* got list"),
    ({"grid": (1, 2, 3, 4), "block": 1}, ValueError, "tuple of length 4"),
    ({"grid": 2**32, "block": 1}, OverflowError, "LaunchConfig.grid values must fit in 32 bits"),
    ({"grid": 1, "block": 1, "shmem_size": 2**32}, OverflowError,
     "LaunchConfig.shmem_size must be between 0 and 4294967295, got 4294967296"),
    ({"grid": 1, "block": 1, "cluster": 0}, ValueError, "LaunchConfig.cluster values must be"),
    ({"grid": 2**31, "block": 1, "cluster": 2}, ValueError, "more than 2\\*\\*32 - 1 blocks"),
    ({"grid": 1, "block": 1, "shmem_size": -1}, CUDAError, "LaunchConfig.shmem_size must be"),
    ({"grid": 1, "block": 1, "shmem_size": 1.5}, TypeError, "LaunchConfig.shmem_size must be"),
    ({"grid": 1, "block": 1, "is_cooperative": "no"}, TypeError, "LaunchConfig.is_cooperative"),
    ({"grid": 1, "block": 1, "programmatic_stream_serialization": None}, TypeError,
     "LaunchConfig.programmatic_stream_serialization"),
])
def test_validation_names_the_field(kwargs, exc, msg):
    with pytest.raises(exc, match=msg):
        LaunchConfig(**kwargs)


def test_cooperative_launch_is_a_deprecated_spelling():
    with pytest.warns(DeprecationWarning, match="use is_cooperative"):
        cfg = LaunchConfig(grid=1, block=1, cooperative_launch=True)
    assert cfg.is_cooperative
    with pytest.warns(DeprecationWarning):
        assert cfg.cooperative_launch is True
    with pytest.raises(TypeError, match="not both"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        LaunchConfig(grid=1, block=1, is_cooperative=True, cooperative_launch=True)


def test_fields_can_be_assigned_and_are_checked():
    # As in cuda.core, the fields can be assigned; they are checked and normalised as at
    # construction, and a refused value leaves the field as it was.
    cfg = LaunchConfig(grid=2, block=64)
    cfg.grid = (4, 2)
    cfg.block = 32
    cfg.shmem_size = 1024
    cfg.is_cooperative = 1
    cfg.programmatic_stream_serialization = True
    assert (cfg.grid, cfg.block, cfg.shmem_size) == ((4, 2, 1), (32, 1, 1), 1024)
    assert cfg.is_cooperative is True and cfg.programmatic_stream_serialization is True
    assert cfg == LaunchConfig(grid=(4, 2), block=32, shmem_size=1024, is_cooperative=True,
                               programmatic_stream_serialization=True)
    cfg.cluster = 2
    assert cfg.cluster == (2, 1, 1)
    cfg.cluster = None
    assert cfg.cluster is None
    with pytest.raises(ValueError, match=r"LaunchConfig.grid values must be >= 1"):
        cfg.grid = (4, 0)
    with pytest.raises(TypeError, match=r"LaunchConfig.block must be an int"):
        cfg.block = 1.5
    with pytest.raises(OverflowError, match=r"LaunchConfig.shmem_size"):
        cfg.shmem_size = -1
    with pytest.raises(TypeError, match=r"LaunchConfig.is_cooperative"):
        cfg.is_cooperative = 0.5
    cfg.grid = 2**31
    with pytest.raises(ValueError, match="more than 2\\*\\*32 - 1 blocks"):
        cfg.cluster = 2
    assert (cfg.grid, cfg.block, cfg.shmem_size, cfg.cluster) == ((2**31, 1, 1), (32, 1, 1),
                                                                   1024, None)
    with pytest.raises(AttributeError, match="already built"):
        cfg.__init__(grid=5, block=5)


def test_eq_hash_repr_weakref_and_no_pickle():
    a = LaunchConfig(grid=(2, 2), block=64, shmem_size=128)
    b = LaunchConfig(grid=(2, 2, 1), block=(64,), shmem_size=128)
    c = LaunchConfig(grid=(2, 2), block=64, shmem_size=256)
    assert a == b and hash(a) == hash(b) and a != c and a != "config"
    assert repr(a) == ("LaunchConfig(grid=(2, 2, 1), cluster=None, block=(64, 1, 1), "
                       "shmem_size=128, is_cooperative=False, "
                       "programmatic_stream_serialization=False)")
    # cuda.core 1.2.2 refuses to copy or pickle a LaunchConfig (TypeError); so does ours.
    for action in (pickle.dumps, copy.copy, copy.deepcopy):
        with pytest.raises(TypeError, match="cannot pickle 'LaunchConfig'"):
            action(a)
    assert weakref.ref(a)() is a


def test_shared_between_threads():
    cfg = LaunchConfig(grid=(3, 2), cluster=(1, 2), block=(8, 8))
    seen = []
    threads = [threading.Thread(target=lambda: seen.append((cfg.grid, cfg.cluster, cfg.block)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [((3, 2, 1), (1, 2, 1), (8, 8, 1))] * 4


def test_arguments_bind_like_the_signature():
    assert LaunchConfig(4, None, 32) == LaunchConfig(grid=4, block=32)
    assert LaunchConfig((2, 2), 2, 64, 128, False, True) == LaunchConfig(
        grid=(2, 2), cluster=2, block=64, shmem_size=128, programmatic_stream_serialization=True)
    with pytest.raises(TypeError, match="at most 6 positional arguments \\(7 given\\)"):
        LaunchConfig(1, None, 1, 0, False, False, True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'threads'"):
        LaunchConfig(grid=1, threads=1)
    with pytest.raises(TypeError, match="multiple values for argument 'grid'"):
        LaunchConfig(1, grid=1, block=1)


def test_subclasses_construct_through_init():
    class Tagged(LaunchConfig):
        pass

    cfg = Tagged(grid=2, block=8)
    assert type(cfg) is Tagged and cfg.grid == (2, 1, 1) and cfg == LaunchConfig(grid=2, block=8)


def test_deprecation_warning_points_at_the_caller():
    with pytest.warns(DeprecationWarning) as record:
        LaunchConfig(grid=1, block=1, cooperative_launch=False)
    assert record[0].filename == __file__


def test_every_construction_builds_a_new_config():
    # No config is remembered between calls (no process-wide state for threads to race on):
    # the same argument objects give an equal config, never the same one.
    first = LaunchConfig(grid=(4, 2), block=128)
    again = LaunchConfig(grid=(4, 2), block=128)  # the same constant tuple and int objects
    assert again is not first and again == first
    other = LaunchConfig(grid=(4, 2), block=64)
    assert other != first and other.block == (64, 1, 1)


def test_keyword_names_bind_however_they_were_made():
    first = LaunchConfig(grid=1, block=1)
    # Keyword names built at run time are other string objects than the interned ones: they
    # bind the same way.
    assert LaunchConfig(**{"".join(["gr", "id"]): 1, "block": 1}) == first
    with pytest.raises(TypeError, match="unexpected keyword argument 'threads'"):
        LaunchConfig(grid=1, block=1, threads=1)
    with pytest.raises(TypeError, match="multiple values for argument 'grid'"):
        LaunchConfig(1, grid=1, block=1)
    with pytest.raises(ValueError, match="block is required"):
        LaunchConfig(grid=1)


def test_threads_building_configs_at_once_get_their_own():
    # Each thread builds configs from its own argument objects, interleaved with the others;
    # every config must hold exactly what its own call asked for.
    errors = []
    start = threading.Barrier(8)

    def build(t):
        start.wait()
        for i in range(2000):
            grid = (t + 1, i % 7 + 1)
            cfg = LaunchConfig(grid=grid, block=32 * (t + 1), shmem_size=i)
            if (cfg.grid, cfg.block, cfg.shmem_size) != ((t + 1, i % 7 + 1, 1),
                                                           (32 * (t + 1), 1, 1), i):
                errors.append((t, i, cfg))

    threads = [threading.Thread(target=build, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_an_index_object_is_read_at_every_construction():
    class Size:
        def __init__(self, value):
            self.value = value

        def __index__(self):
            return self.value

    size = Size(8)
    assert LaunchConfig(grid=size, block=1).grid == (8, 1, 1)
    size.value = 16  # the same object, another value
    assert LaunchConfig(grid=size, block=1).grid == (16, 1, 1)
    assert LaunchConfig(grid=(size, 2), block=1).grid == (16, 2, 1)
    size.value = 3
    assert LaunchConfig(grid=(size, 2), block=1).grid == (3, 2, 1)


def test_the_deprecated_spelling_warns_at_every_construction():
    for _ in range(2):
        with pytest.warns(DeprecationWarning, match="cooperative_launch"):
            LaunchConfig(grid=1, block=1, cooperative_launch=True)
