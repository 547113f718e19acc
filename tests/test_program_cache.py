"""Program cache (CPU): keys, the in-memory and on-disk caches, damaged records, concurrency.

The caches rebuild entries as ``cuda_core.ObjectCode``; these tests replace that class with
``FakeObjectCode`` through the module's one documented seam, ``_object_code_class``.
"""

import dataclasses
import hashlib
import multiprocessing
import os
import random
import stat
import sys
import threading
import time

import pytest

from helpers import run_python

import cuda_core
from cuda_core import utils
from cuda_core.utils import (
    FileStreamProgramCache,
    InMemoryProgramCache,
    ProgramCacheResource,
    make_program_cache_key,
)
from cuda_core.utils import _program_cache

REAL_OBJECT_CODE_CLASS = _program_cache._object_code_class
CODE_TYPES = ("cubin", "ptx", "ltoir", "fatbin", "object", "library")


class FakeObjectCode:
    """Stands in for cuda_core.ObjectCode: the public surface the cache uses, nothing more."""

    def __init__(self, code, code_type, *, name="", symbol_mapping=None):
        self.code = code
        self.code_type = code_type
        self.name = name
        self.symbol_mapping = symbol_mapping

    def __repr__(self):
        return f"FakeObjectCode({self.code_type}, {self.name!r}, {len(self.code)} bytes)"


def _factory(code_type):
    def make(cls, code, *, name="", symbol_mapping=None):
        return cls(code, code_type, name=name, symbol_mapping=symbol_mapping)
    return classmethod(make)


for _ct in CODE_TYPES:
    setattr(FakeObjectCode, "from_" + _ct, _factory(_ct))


def install_fake_object_code():
    _program_cache._object_code_class = lambda: FakeObjectCode


@pytest.fixture(autouse=True)
def fake_object_code(monkeypatch):
    monkeypatch.setattr(_program_cache, "_object_code_class", lambda: FakeObjectCode)


def obj(i, code_type="cubin"):
    """An object code whose record has the same size for every i in 0..99."""
    return FakeObjectCode(b"%02d" % i * 50, code_type, name=f"prog{i:02d}",
                          symbol_mapping={f"f<{i:02d}>": f"_Z1fILi{i:02d}EEvv"})


def same(a, b):
    return (a.code, a.code_type, a.name, a.symbol_mapping) == (
        b.code, b.code_type, b.name, b.symbol_mapping)


def record_size(tmp_path, value):
    """The bytes one entry takes: the size of the file a FileStreamProgramCache writes."""
    d = tmp_path / f"measure-{random.getrandbits(32)}"
    cache = FileStreamProgramCache(d)
    cache[b"k"] = value
    (f,) = [p for p in d.iterdir()]
    return f.stat().st_size


@pytest.fixture(params=["memory", "file"])
def make_cache(request, tmp_path):
    def make(**kwargs):
        if request.param == "memory":
            return InMemoryProgramCache(**kwargs)
        return FileStreamProgramCache(tmp_path / "cache", **kwargs)
    return make


# ---------------------------------------------------------------------------------------------
# The namespace
# ---------------------------------------------------------------------------------------------

def test_public_names():
    assert set(utils.__all__) >= {"ProgramCacheResource", "InMemoryProgramCache",
                                  "FileStreamProgramCache", "make_program_cache_key"}
    for name in utils.__all__:
        assert hasattr(utils, name), name
    assert cuda_core.utils is utils
    assert issubclass(InMemoryProgramCache, ProgramCacheResource)
    assert issubclass(FileStreamProgramCache, ProgramCacheResource)
    with pytest.raises(TypeError):
        ProgramCacheResource()


def test_import_loads_no_cuda_library():
    code = (
        "import cuda_core.utils\n"
        "maps = open('/proc/self/maps').read()\n"
        "for lib in ('libcuda.so', 'libnvrtc', 'libnvJitLink', 'libnvvm'):\n"
        "    assert lib not in maps, lib + ' was loaded at import'\n"
        "print('ok')\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# ---------------------------------------------------------------------------------------------
# Keys
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Opts:
    """A stand-in for ProgramOptions: a dataclass that renders flags."""

    name: str = "default_program"
    arch: str = "sm_90"
    std: str | None = None
    define_macro: object = None
    calls: list = dataclasses.field(default_factory=list, compare=False)

    def as_bytes(self, backend, target_type=None):
        self.calls.append((backend, target_type))
        flags = [f"-arch={self.arch}".encode()]
        if self.std is not None:
            flags.append(f"-std={self.std}".encode())
        return flags


class FlagsOnly:
    def __init__(self, flags):
        self.flags = flags

    def as_bytes(self, backend, target_type=None):
        return list(self.flags)


@dataclasses.dataclass
class PlainOpts:
    debug: bool = False
    level: int = 3
    paths: tuple = ()


BASE = dict(code='extern "C" __global__ void k() {}', code_type="c++", options=None,
            target_type="cubin", name_expressions=(), extra_digest=None)


def key(**changes):
    return make_program_cache_key(**{**BASE, **changes})


def test_key_is_a_stable_32_byte_digest():
    k = key()
    assert isinstance(k, bytes) and len(k) == 32
    assert key() == k
    assert key(options=Opts(), name_expressions=["f<1>"], extra_digest=b"h") == key(
        options=Opts(), name_expressions=("f<1>",), extra_digest=b"h")


def test_key_is_the_same_in_another_process():
    here = key(options=PlainOpts(paths=("/a", "/b")), name_expressions=("f<int>",),
               extra_digest=b"x").hex()
    code = (
        "import dataclasses\n"
        "from cuda_core.utils import make_program_cache_key\n"
        "@dataclasses.dataclass\n"
        "class PlainOpts:\n"
        "    debug: bool = False\n"
        "    level: int = 3\n"
        "    paths: tuple = ()\n"
        f"print(make_program_cache_key(code={BASE['code']!r}, code_type='c++', "
        "options=PlainOpts(paths=('/a', '/b')), target_type='cubin', "
        "name_expressions=('f<int>',), extra_digest=b'x').hex())\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == here


@pytest.mark.parametrize("change", [
    dict(code='extern "C" __global__ void k2() {}'),
    dict(code=BASE["code"].encode()),  # the same text as bytes
    dict(code_type="nvvm", target_type="ptx", code="target triple"),
    dict(target_type="ptx"),
    dict(target_type="ltoir"),
    dict(options=PlainOpts()),
    dict(options=Opts()),
    dict(options=FlagsOnly([b"-arch=sm_90"])),
    dict(name_expressions=("f<int>",)),
    dict(extra_digest=b""),
    dict(extra_digest=b"headers-v1"),
])
def test_each_ingredient_changes_the_key(change):
    assert key(**change) != key()


@pytest.mark.parametrize("a, b", [
    (dict(options=Opts(std="c++17")), dict(options=Opts(std="c++20"))),
    (dict(options=Opts(arch="sm_80")), dict(options=Opts(arch="sm_90"))),
    # A field that is no flag (the program name) still counts.
    (dict(options=Opts(name="a")), dict(options=Opts(name="b"))),
    (dict(options=PlainOpts(debug=False)), dict(options=PlainOpts(debug=True))),
    (dict(options=PlainOpts(level=0)), dict(options=PlainOpts(level=3))),
    (dict(options=PlainOpts(paths=("/a", "/b"))), dict(options=PlainOpts(paths=("/b", "/a")))),
    (dict(options=FlagsOnly([b"-G"])), dict(options=FlagsOnly([b"-lineinfo"]))),
    (dict(options=FlagsOnly([b"-a", b"-b"])), dict(options=FlagsOnly([b"-a-b"]))),
    (dict(name_expressions=("f<1>", "f<2>")), dict(name_expressions=("f<2>", "f<1>"))),
    (dict(name_expressions=("ab",)), dict(name_expressions=("a", "b"))),
    (dict(extra_digest=b"1"), dict(extra_digest=b"2")),
    (dict(code_type="ptx", code=".version 8.0", target_type="cubin"),
     dict(code_type="ptx", code=".version 8.0", target_type="ptx")),
])
def test_different_values_give_different_keys(a, b):
    assert key(**a) != key(**b)


def test_key_ignores_letter_case_of_code_and_target_type():
    assert key(code_type="C++", target_type="CUBIN") == key()


@pytest.mark.parametrize("code_type, target_type, backend", [
    ("c++", "cubin", "nvrtc"), ("c++", "ltoir", "nvrtc"),
    ("nvvm", "ltoir", "nvvm"), ("ptx", "cubin", "nvjitlink"),
])
def test_options_rendered_for_the_backend_of_the_code_type(code_type, target_type, backend):
    opts = Opts()
    key(code_type=code_type, target_type=target_type, options=opts)
    assert opts.calls == [(backend, target_type)]


@pytest.mark.parametrize("module, attr, fake, backend", [
    ("nvrtc", "nvrtcVersion", None, "nvrtc"),
    ("nvvm", "version", lambda: (99, 1), "nvvm"),
    ("nvjitlink", "version", lambda: (99, 1), "nvjitlink"),
])
def test_the_compiler_version_is_part_of_the_key(monkeypatch, module, attr, fake, backend):
    import importlib

    mod = importlib.import_module(f"cuda.bindings.{module}")
    if fake is None:
        fake = lambda: (mod.nvrtcResult.NVRTC_SUCCESS, 99, 1)  # noqa: E731
    code_type = {"nvrtc": "c++", "nvvm": "nvvm", "nvjitlink": "ptx"}[backend]
    kwargs = dict(code_type=code_type, target_type="ptx", code="src")
    _program_cache._compiler_identity.cache_clear()
    try:
        before = key(**kwargs)
        with monkeypatch.context() as m:
            m.setattr(mod, attr, fake)
            _program_cache._compiler_identity.cache_clear()
            after = key(**kwargs)
    finally:
        _program_cache._compiler_identity.cache_clear()
    assert before != after
    assert key(**kwargs) == before


def test_an_unobtainable_compiler_version_still_gives_a_key(monkeypatch):
    from cuda.bindings import nvjitlink

    def broken():
        raise RuntimeError("libnvJitLink not found")

    _program_cache._compiler_identity.cache_clear()
    try:
        with monkeypatch.context() as m:
            m.setattr(nvjitlink, "version", broken)
            k = key(code_type="ptx", code=".version 8.0")
            assert "unknown" in _program_cache._compiler_identity("nvjitlink")
    finally:
        _program_cache._compiler_identity.cache_clear()
    assert len(k) == 32 and k != key(code_type="ptx", code=".version 8.0")


@pytest.mark.parametrize("change, exc, match", [
    (dict(code_type="cuda"), ValueError, "code_type must be one of"),
    (dict(code_type="nvvm", target_type="cubin"), ValueError, "'cubin' is not supported for "
                                                               "code_type 'nvvm'"),
    (dict(target_type="fatbin"), ValueError, "target_type 'fatbin'"),
    (dict(code_type="ptx", target_type="ltoir"), ValueError, "target_type 'ltoir'"),
    (dict(code_type=None), TypeError, "code_type must be a str, not NoneType"),
    (dict(target_type=1), TypeError, "target_type must be a str, not int"),
    (dict(code=123), TypeError, "code must be a str or bytes, not int"),
    (dict(code=memoryview(b"x")), TypeError, "code must be a str or bytes, not memoryview"),
    (dict(options={"std": "c++17"}), TypeError, "options must be a ProgramOptions.*not dict"),
    (dict(options=object()), TypeError, "not object"),
    (dict(options=PlainOpts(paths=(object(),))), TypeError, r"options\['paths'\]\[0\].*object"),
    (dict(name_expressions="f<int>"), TypeError, "name_expressions must be a sequence of str"),
    (dict(name_expressions=(b"f",)), TypeError, r"name_expressions\[0\] must be a str, not bytes"),
    (dict(extra_digest="abc"), TypeError, "extra_digest must be bytes or None, not str"),
])
def test_key_argument_errors(change, exc, match):
    with pytest.raises(exc, match=match):
        key(**change)


def test_key_arguments_are_keyword_only():
    with pytest.raises(TypeError):
        make_program_cache_key("src", "c++", None, "cubin")


# ---------------------------------------------------------------------------------------------
# Both caches: the mapping interface
# ---------------------------------------------------------------------------------------------

def test_hit_miss_and_symbol_mapping_round_trip(make_cache):
    cache = make_cache()
    assert cache.get(b"nope") is None
    assert cache.get(b"nope", "dflt") == "dflt"
    with pytest.raises(KeyError):
        cache[b"nope"]
    assert b"nope" not in cache
    value = FakeObjectCode(b"\x7fELF\x00binary", "cubin", name="my_prog",
                           symbol_mapping={"add<float>": "_Z3addIfEvPT_", "add<int>":
                                           "_Z3addIiEvPT_", "ns::k": "_ZN2ns1kEv"})
    cache[b"k"] = value
    assert b"k" in cache and len(cache) == 1
    got = cache[b"k"]
    assert isinstance(got, FakeObjectCode) and got is not value
    assert same(got, value)
    assert list(got.symbol_mapping) == ["add<float>", "add<int>", "ns::k"]  # order kept
    assert cache[b"k"] is not got  # a new object each time
    assert same(cache.get(b"k"), value)


@pytest.mark.parametrize("code_type", CODE_TYPES)
def test_every_code_type_round_trips(make_cache, code_type):
    cache = make_cache()
    value = FakeObjectCode(bytes(range(256)) * 3, code_type, name="n\u00e9", symbol_mapping={})
    cache["k"] = value
    got = cache["k"]
    assert got.code_type == code_type and same(got, value)


def test_bytes_value_is_a_cubin_without_name_or_mapping(make_cache):
    cache = make_cache()
    cache[b"k"] = b"\x00\x01cubin bytes"
    got = cache[b"k"]
    assert (got.code, got.code_type, got.name, got.symbol_mapping) == (
        b"\x00\x01cubin bytes", "cubin", "", {})


def test_none_name_and_mapping_are_stored_as_empty(make_cache):
    cache = make_cache()
    cache[b"k"] = FakeObjectCode(b"x", "ptx", name=None, symbol_mapping=None)
    got = cache[b"k"]
    assert (got.name, got.symbol_mapping) == ("", {})


def test_str_and_bytes_keys_name_the_same_entry(make_cache):
    cache = make_cache()
    cache["k\u00e9"] = obj(1)
    assert same(cache["k\u00e9".encode()], obj(1))
    cache[b"k\xc3\xa9"] = obj(2)
    assert same(cache["k\u00e9"], obj(2)) and len(cache) == 1


@pytest.mark.parametrize("bad_key", [1, None, 1.5, ("a",), bytearray(b"k")])
def test_bad_key_type_is_a_type_error_naming_it(make_cache, bad_key):
    cache = make_cache()
    name = type(bad_key).__name__
    match = f"key must be bytes or str, not {name}"
    for use in (lambda: cache[bad_key], lambda: cache.get(bad_key),
                lambda: cache.__setitem__(bad_key, b"x"), lambda: cache.__delitem__(bad_key),
                lambda: bad_key in cache):
        with pytest.raises(TypeError, match=match):
            use()


@pytest.mark.parametrize("value, exc, match", [
    ("a string", TypeError, "stores FakeObjectCode or bytes values, not str"),
    (123, TypeError, "not int"),
    (FakeObjectCode("/tmp/k.cubin", "cubin"), TypeError, "code is a file path"),
    (FakeObjectCode(None, "cubin"), TypeError, "code must be bytes"),
    (FakeObjectCode(b"x", "elf"), ValueError, "code_type 'elf'"),
    (FakeObjectCode(b"x", "cubin", name=3), TypeError, "name must be a str"),
    (FakeObjectCode(b"x", "cubin", symbol_mapping=[("a", "b")]), TypeError,
     "symbol_mapping must be a dict"),
    (FakeObjectCode(b"x", "cubin", symbol_mapping={"a": 1}), TypeError, "map str to str"),
])
def test_bad_values_are_refused_and_store_nothing(make_cache, value, exc, match):
    cache = make_cache()
    with pytest.raises(exc, match=match):
        cache[b"k"] = value
    assert len(cache) == 0 and cache.get(b"k") is None


def test_delete_len_clear(make_cache):
    cache = make_cache()
    for i in range(5):
        cache[f"k{i}"] = obj(i)
    assert len(cache) == 5
    del cache["k2"]
    assert "k2" not in cache and len(cache) == 4
    with pytest.raises(KeyError):
        del cache["k2"]
    cache["k0"] = obj(7)  # replacing does not add an entry
    assert len(cache) == 4 and same(cache["k0"], obj(7))
    cache.clear()
    assert len(cache) == 0 and cache.get("k1") is None
    cache["k1"] = obj(1)
    assert same(cache["k1"], obj(1))


def test_update_takes_a_mapping_or_pairs(make_cache):
    cache = make_cache()
    cache.update({"a": obj(1), b"b": obj(2)})
    cache.update([("c", obj(3)), (b"d", b"raw")])
    cache.update((("e", obj(5)),))
    assert len(cache) == 5
    assert same(cache["b"], obj(2)) and cache["d"].code == b"raw"
    with pytest.raises(TypeError, match="element 1 is not a \\(key, value\\) pair"):
        cache.update([("f", obj(6)), "gh!"])
    with pytest.raises(TypeError, match="mapping or an iterable"):
        cache.update(42)


def test_context_manager_and_close(make_cache):
    with make_cache() as cache:
        cache[b"k"] = obj(1)
        assert not cache.is_closed
    assert cache.is_closed
    cache.close()  # idempotent
    for use in (lambda: cache[b"k"], lambda: cache.get(b"k"), lambda: b"k" in cache,
                lambda: cache.__setitem__(b"k", b"x"), lambda: cache.__delitem__(b"k"),
                lambda: len(cache), cache.clear, lambda: cache.update({b"k": b"x"})):
        with pytest.raises(RuntimeError, match="is closed"):
            use()


@pytest.mark.parametrize("bad, exc", [(0, ValueError), (-1, ValueError), ("10", TypeError),
                                      (True, TypeError), (1.5, TypeError)])
def test_max_size_bytes_is_checked(make_cache, bad, exc):
    with pytest.raises(exc, match="max_size_bytes"):
        make_cache(max_size_bytes=bad)


def test_max_size_bytes_is_keyword_only(tmp_path):
    with pytest.raises(TypeError):
        InMemoryProgramCache(100)
    with pytest.raises(TypeError):
        FileStreamProgramCache(tmp_path, 100)


# ---------------------------------------------------------------------------------------------
# Both caches: LRU by bytes
# ---------------------------------------------------------------------------------------------

def test_lru_eviction_by_bytes(make_cache, tmp_path):
    size = record_size(tmp_path, obj(0))
    assert all(record_size(tmp_path, obj(i)) == size for i in (1, 42))
    cache = make_cache(max_size_bytes=3 * size)
    for i in range(3):
        cache[f"k{i}"] = obj(i)
    assert len(cache) == 3  # exactly at the limit: nothing evicted
    cache["k0"]  # k0 is now the most recently used; k1 the least
    cache["k3"] = obj(3)
    assert len(cache) == 3
    assert "k1" not in cache
    assert all(same(cache[f"k{i}"], obj(i)) for i in (0, 2, 3))
    # Membership tests do not count as use: after the reads above the order is 0, 2, 3.
    assert "k0" in cache
    cache["k4"] = obj(4)
    cache["k5"] = obj(5)
    assert sorted(k for k in ("k0", "k2", "k3", "k4", "k5") if k in cache) == ["k3", "k4", "k5"]


def test_one_large_entry_evicts_several_small_ones(make_cache, tmp_path):
    small = record_size(tmp_path, b"s" * 100)
    big_value = b"B" * (100 + 2 * small)
    cache = make_cache(max_size_bytes=4 * small)
    for i in range(4):
        cache[f"s{i}"] = b"s" * 100
    cache["big"] = big_value  # takes exactly 3 small entries' room: the 3 oldest go
    assert record_size(tmp_path, big_value) == 3 * small
    assert "big" in cache and "s3" in cache and len(cache) == 2


def test_an_entry_larger_than_the_limit_is_not_stored(make_cache, tmp_path):
    size = record_size(tmp_path, obj(0))
    cache = make_cache(max_size_bytes=2 * size)
    cache["a"] = obj(0)
    cache["b"] = obj(1)
    cache["b"] = FakeObjectCode(b"x" * (2 * size), "cubin")  # too big: not stored
    assert "b" not in cache  # and the earlier value under that key is gone
    assert same(cache["a"], obj(0)) and len(cache) == 1
    cache["c"] = obj(2)
    assert same(cache["a"], obj(0)) and same(cache["c"], obj(2))


def test_replacing_a_value_keeps_the_byte_count_right(make_cache, tmp_path):
    size = record_size(tmp_path, obj(0))
    cache = make_cache(max_size_bytes=3 * size)
    for _ in range(20):
        cache["a"] = obj(0)
    cache["b"] = obj(1)
    cache["c"] = obj(2)
    assert len(cache) == 3


# ---------------------------------------------------------------------------------------------
# In memory
# ---------------------------------------------------------------------------------------------

def test_in_memory_close_drops_entries():
    cache = InMemoryProgramCache()
    cache[b"k"] = obj(1)
    cache.close()
    assert "closed" in repr(cache)
    with pytest.raises(RuntimeError, match="InMemoryProgramCache is closed"):
        cache[b"k"]


def test_in_memory_cache_under_many_threads(tmp_path):
    size = record_size(tmp_path, obj(0))
    capacity = 10
    cache = InMemoryProgramCache(max_size_bytes=capacity * size)
    errors = []
    start = threading.Barrier(8)

    def hammer(seed):
        # Few keys, so that threads often store and delete the same key at once.
        rng = random.Random(seed)
        try:
            start.wait()
            for _ in range(8000):
                i = rng.randrange(4)
                op = rng.random()
                if op < 0.5:
                    cache[f"k{i}"] = obj(i)
                elif op < 0.75:
                    got = cache.get(f"k{i}")
                    if got is not None and not same(got, obj(i)):
                        errors.append(f"k{i} held {got!r}")
                elif op < 0.95:
                    try:
                        del cache[f"k{i}"]
                    except KeyError:
                        pass
                elif len(cache) > 4:
                    errors.append(f"{len(cache)} entries")
        except Exception as exc:  # reported below, with the thread's seed
            errors.append(f"seed {seed}: {exc!r}")

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=hammer, args=(s,)) for s in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == []
    for i in range(4):
        if f"k{i}" in cache:
            assert same(cache[f"k{i}"], obj(i))
            del cache[f"k{i}"]
    assert len(cache) == 0
    # The byte count did not drift: exactly `capacity` fresh entries fit, one more evicts one.
    for i in range(capacity):
        cache[f"fresh{i}"] = obj(50 + i)
    assert all(f"fresh{i}" in cache for i in range(capacity))
    cache["fresh_extra"] = obj(99)
    assert len(cache) == capacity and "fresh0" not in cache


# ---------------------------------------------------------------------------------------------
# On disk
# ---------------------------------------------------------------------------------------------

def entry_file(cache, k):
    if isinstance(k, str):
        k = k.encode()
    return os.path.join(cache.path, hashlib.sha256(k).hexdigest())


def test_file_layout_and_lazy_directory(tmp_path):
    d = tmp_path / "a" / "cache"
    cache = FileStreamProgramCache(d)
    assert cache.path == str(d)
    assert cache.get(b"k") is None and len(cache) == 0 and b"k" not in cache
    assert not d.exists()  # nothing created until the first store
    cache[b"k"] = obj(1)
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    assert os.listdir(d) == [hashlib.sha256(b"k").hexdigest()]
    assert stat.S_IMODE(os.stat(entry_file(cache, b"k")).st_mode) == 0o600


def test_entries_persist_across_instances(tmp_path):
    FileStreamProgramCache(tmp_path)[b"k"] = obj(3)
    again = FileStreamProgramCache(str(tmp_path))
    assert same(again[b"k"], obj(3)) and len(again) == 1


def test_path_argument_is_checked(tmp_path):
    f = tmp_path / "file"
    f.write_bytes(b"")
    with pytest.raises(ValueError, match="is not a directory"):
        FileStreamProgramCache(f)
    with pytest.raises(TypeError, match="path must be a str, os.PathLike or None, not int"):
        FileStreamProgramCache(3)
    with pytest.raises(TypeError, match="path must be a str"):
        FileStreamProgramCache(b"/tmp/x")
    with pytest.raises(ValueError, match="must not be empty"):
        FileStreamProgramCache("")


def test_default_path_honours_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    cache = FileStreamProgramCache()
    assert cache.path == str(tmp_path / "xdg" / "cuda-python" / "program-cache")
    cache[b"k"] = b"x"
    assert os.path.isfile(entry_file(cache, b"k"))


@pytest.mark.parametrize("xdg", [None, "", "relative/dir"])
def test_default_path_falls_back_to_home_cache(tmp_path, monkeypatch, xdg):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    cache = FileStreamProgramCache()
    assert cache.path == str(tmp_path / "home" / ".cache" / "cuda-python" / "program-cache")


def test_default_path_on_windows_is_under_localappdata(monkeypatch):
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", "/fake/AppData/Local")
    assert _program_cache._default_cache_dir() == os.path.join(
        "/fake/AppData/Local", "cuda-python", "program-cache")


def test_disk_eviction_order_follows_use_across_instances(tmp_path):
    size = record_size(tmp_path, obj(0))
    d = tmp_path / "lru"
    writer = FileStreamProgramCache(d, max_size_bytes=3 * size)
    for i in range(3):
        writer[f"k{i}"] = obj(i)
    FileStreamProgramCache(d)["k0"]  # a hit through another instance refreshes k0
    writer["k3"] = obj(3)
    assert sorted(os.listdir(d)) == sorted(
        hashlib.sha256(f"k{i}".encode()).hexdigest() for i in (0, 2, 3))


def test_total_file_size_stays_within_the_limit(tmp_path):
    size = record_size(tmp_path, obj(0))
    d = tmp_path / "lim"
    cache = FileStreamProgramCache(d, max_size_bytes=5 * size + size // 2)
    for i in range(40):
        cache[f"k{i}"] = obj(i)
        assert sum(p.stat().st_size for p in d.iterdir()) <= 5 * size + size // 2
    assert len(cache) == 5
    assert all(same(cache[f"k{i}"], obj(i)) for i in range(35, 40))


def test_eviction_tolerates_files_removed_by_someone_else(tmp_path):
    size = record_size(tmp_path, obj(0))
    cache = FileStreamProgramCache(tmp_path / "c", max_size_bytes=3 * size)
    for i in range(3):
        cache[f"k{i}"] = obj(i)
    os.unlink(entry_file(cache, "k0"))
    os.unlink(entry_file(cache, "k1"))
    cache["k3"] = obj(3)
    cache["k4"] = obj(4)
    assert len(cache) == 3 and "k2" in cache


def damage_truncate(data):
    return data[:len(data) // 2]


def damage_flip_code_byte(data):
    b = bytearray(data)
    b[-3] ^= 0x40
    return bytes(b)


def damage_flip_metadata_byte(data):
    b = bytearray(data)
    b[30] ^= 0x01
    return bytes(b)


def damage_bad_magic(data):
    return b"XXXXXXXX" + data[8:]


def damage_extra_bytes(data):
    return data + b"\0"


def damage_bad_length(data):
    b = bytearray(data)
    b[12] += 1  # metadata length
    return bytes(b)


@pytest.mark.parametrize("damage", [
    lambda d: b"", lambda d: d[:10], damage_truncate, damage_flip_code_byte,
    damage_flip_metadata_byte, damage_bad_magic, damage_extra_bytes, damage_bad_length,
    lambda d: b"garbage" * 50,
])
def test_a_damaged_file_is_a_miss_and_is_deleted(tmp_path, damage):
    cache = FileStreamProgramCache(tmp_path)
    cache[b"k"] = obj(1)
    cache[b"other"] = obj(2)
    path = entry_file(cache, b"k")
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(damage(data))
    assert cache.get(b"k") is None
    with pytest.raises(KeyError):
        cache[b"k"]
    assert not os.path.exists(path)
    assert same(cache[b"other"], obj(2))
    cache[b"k"] = obj(1)
    assert same(cache[b"k"], obj(1))


def test_membership_test_also_drops_a_damaged_file(tmp_path):
    cache = FileStreamProgramCache(tmp_path)
    cache[b"k"] = obj(1)
    path = entry_file(cache, b"k")
    with open(path, "r+b") as f:
        f.truncate(20)
    assert b"k" not in cache
    assert not os.path.exists(path)


def test_a_record_of_another_format_version_is_a_miss_and_is_kept(tmp_path):
    cache = FileStreamProgramCache(tmp_path)
    cache[b"k"] = obj(1)
    path = entry_file(cache, b"k")
    with open(path, "r+b") as f:
        f.seek(8)
        f.write((2).to_bytes(2, "little"))
    assert cache.get(b"k") is None
    assert os.path.exists(path)  # written by another version of the package: left alone
    cache[b"k"] = obj(4)  # a store replaces it
    assert same(cache[b"k"], obj(4))


def test_a_failed_write_leaves_the_old_entry_and_no_temporary_file(tmp_path, monkeypatch):
    cache = FileStreamProgramCache(tmp_path)
    cache[b"k"] = obj(1)

    def failing_fsync(fd):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(os, "fsync", failing_fsync)
        with pytest.raises(OSError, match="No space left"):
            cache[b"k"] = obj(2)
    assert os.listdir(tmp_path) == [hashlib.sha256(b"k").hexdigest()]
    assert same(cache[b"k"], obj(1))


def test_temporary_files_are_not_entries_and_stale_ones_are_cleaned(tmp_path):
    cache = FileStreamProgramCache(tmp_path)
    cache[b"k"] = obj(1)
    fresh = tmp_path / ".tmp-fresh"
    stale = tmp_path / ".tmp-stale"
    fresh.write_bytes(b"partial")
    stale.write_bytes(b"partial")
    old = time.time() - 2 * 3600
    os.utime(stale, (old, old))
    (tmp_path / "notes.txt").write_text("not ours")
    assert len(cache) == 1
    cache.clear()
    assert sorted(os.listdir(tmp_path)) == [".tmp-fresh", "notes.txt"]


def test_a_hit_survives_a_failure_to_update_the_time(tmp_path, monkeypatch):
    # As in a read-only cache directory shared by several users.
    cache = FileStreamProgramCache(tmp_path)
    cache[b"k"] = obj(1)

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    with monkeypatch.context() as m:
        m.setattr(os, "utime", refuse)
        assert same(cache[b"k"], obj(1))


def test_file_cache_close_keeps_the_files(tmp_path):
    cache = FileStreamProgramCache(tmp_path)
    cache[b"k"] = obj(1)
    cache.close()
    with pytest.raises(RuntimeError, match="FileStreamProgramCache is closed"):
        cache.get(b"k")
    assert same(FileStreamProgramCache(tmp_path)[b"k"], obj(1))


# ---------------------------------------------------------------------------------------------
# Several processes on one directory
# ---------------------------------------------------------------------------------------------

def mp_value(writer, i):
    # Sizes vary with i (so a partial file could not pass for a whole one) and with the writer.
    return FakeObjectCode(f"{writer}:{i}|".encode() * (20 + 7 * i + writer), "cubin",
                          name=f"w{writer}-{i}", symbol_mapping={f"f<{i}>": f"_Z{writer}_{i}"})


def mp_keys(writer):
    return range(0, 150) if writer == 0 else range(50, 200)


def mp_check(got, i):
    return any(same(got, mp_value(w, i)) for w in (0, 1))


def mp_writer(path, writer, barrier, max_size_bytes):
    install_fake_object_code()
    cache = FileStreamProgramCache(path, max_size_bytes=max_size_bytes)
    rng = random.Random(writer)
    barrier.wait()
    for i in mp_keys(writer):
        cache[f"key{i}"] = mp_value(writer, i)
        j = rng.randrange(200)
        got = cache.get(f"key{j}")
        if got is not None and not mp_check(got, j):
            raise AssertionError(f"key{j} read back as {got!r}")


def run_two_writers(path, max_size_bytes=None):
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=mp_writer, args=(str(path), w, barrier, max_size_bytes))
             for w in (0, 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]


def test_two_processes_write_one_directory(tmp_path):
    d = tmp_path / "shared"
    run_two_writers(d)
    cache = FileStreamProgramCache(d)
    names = os.listdir(d)
    assert not [n for n in names if n.startswith(".tmp-")]
    assert len(names) == 200 and len(cache) == 200
    for i in range(200):
        got = cache[f"key{i}"]
        assert mp_check(got, i), i
        if i < 50:
            assert same(got, mp_value(0, i))
        elif i >= 150:
            assert same(got, mp_value(1, i))


def test_two_processes_evicting_one_directory(tmp_path):
    d = tmp_path / "shared"
    limit = 40_000
    run_two_writers(d, max_size_bytes=limit)
    cache = FileStreamProgramCache(d)
    entries = [n for n in os.listdir(d) if not n.startswith(".tmp-")]
    assert 0 < len(entries) < 200 and len(entries) == len(cache)
    assert sum(os.path.getsize(d / n) for n in entries) <= limit
    hits = 0
    for i in range(200):
        got = cache.get(f"key{i}")
        if got is not None:
            assert mp_check(got, i), i
            hits += 1
    assert hits == len(entries)  # every file left is a complete, valid record


# ---------------------------------------------------------------------------------------------
# With the real ObjectCode (present once Program/ObjectCode are merged)
# ---------------------------------------------------------------------------------------------

@pytest.mark.skipif(not hasattr(cuda_core, "ObjectCode"),
                    reason="cuda_core.ObjectCode is not part of this build")
@pytest.mark.parametrize("kind", ["memory", "file"])
def test_real_object_code_round_trip(monkeypatch, tmp_path, kind):
    monkeypatch.setattr(_program_cache, "_object_code_class", REAL_OBJECT_CODE_CLASS)
    from cuda_core import ObjectCode

    ptx = b".version 8.0\n.target sm_90\n.address_size 64\n"
    value = ObjectCode.from_ptx(ptx, name="prog", symbol_mapping={"k<int>": "_Z1kIiEvv"})
    cache = InMemoryProgramCache() if kind == "memory" else FileStreamProgramCache(tmp_path)
    cache[b"k"] = value
    got = cache[b"k"]
    assert isinstance(got, ObjectCode)
    assert (bytes(got.code), got.code_type, got.name, dict(got.symbol_mapping)) == (
        ptx, "ptx", "prog", {"k<int>": "_Z1kIiEvv"})


@pytest.mark.parametrize("field, value", [
    ("include_path", "/usr/include/mine"), ("pre_include", "pre.h"), ("pch", True),
    ("create_pch", "a.pch"), ("use_pch", "a.pch"), ("pch_dir", "/tmp/pch"),
])
def test_options_that_read_files_need_an_extra_digest(field, value):
    from cuda_core import ProgramOptions

    opts = ProgramOptions(arch="sm_90", **{field: value})
    with pytest.raises(ValueError, match=f"options.{field} makes the compiler read files.*"
                                         f"extra_digest"):
        make_program_cache_key(code="x", code_type="c++", options=opts, target_type="ptx")
    with_digest = make_program_cache_key(code="x", code_type="c++", options=opts,
                                         target_type="ptx", extra_digest=b"headers-v1")
    assert with_digest != make_program_cache_key(code="x", code_type="c++", options=opts,
                                                 target_type="ptx", extra_digest=b"headers-v2")
