"""Program cache (CPU): keys, the in-memory and on-disk caches, damaged records, concurrency.

The behaviour checked here is cuda.core 1.2.2's documented one (``cache[key]`` gives bytes,
``make_program_cache_key`` refuses the same inputs), plus what docs/migrating.rst lists as
deliberately stricter. The values stored are real ObjectCode objects (made from bytes: nothing
is loaded, so no GPU is needed) and bytes.
"""

import hashlib
import multiprocessing
import os
import pathlib
import random
import stat
import struct
import sys
import time
import zlib

import numpy as np
import pytest

from helpers import race_threads, run_python

import cuda_core
from cuda_core import ObjectCode, ProgramOptions, utils
from cuda_core.utils import (
    FileStreamProgramCache,
    InMemoryProgramCache,
    ProgramCacheResource,
    make_program_cache_key,
)
from cuda_core.utils import _file_stream_program_cache, _program_cache_key

CODE_TYPES = ("cubin", "ptx", "ltoir", "fatbin", "object", "library")


def object_code(module, code_type="cubin", *, name="", symbol_mapping=None):
    """A real ObjectCode from bytes (or a file), through the public factory of its code type;
    it loads nothing until a kernel is asked for, so no GPU is needed."""
    factory = getattr(ObjectCode, f"from_{code_type}")
    return factory(module, name=name, symbol_mapping=symbol_mapping)


def code(i):
    """Code of the same size for every i in 0..99."""
    return b"%02d" % i * 50


def obj(i, code_type="cubin"):
    return object_code(code(i), code_type, name=f"prog{i:02d}",
                       symbol_mapping={f"f<{i:02d}>": f"_Z1fILi{i:02d}EEvv"})


def entry_size(kind, tmp_path, value):
    """What one entry counts against max_size_bytes: its code in memory, its file on disk."""
    if kind == "memory":
        return len(value if isinstance(value, bytes) else value.code)
    d = tmp_path / f"measure-{random.getrandbits(32)}"
    cache = FileStreamProgramCache(d)
    cache[b"k"] = value
    (f,) = list(d.iterdir())
    return f.stat().st_size


@pytest.fixture(params=["memory", "file"])
def kind(request):
    return request.param


@pytest.fixture
def make_cache(kind, tmp_path):
    def make(**kwargs):
        if kind == "memory":
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


def test_signatures_are_cuda_cores():
    import inspect

    def shape(fn):
        return [(p.name, p.kind.name, p.default) for p in inspect.signature(fn).parameters.values()]

    empty = inspect.Parameter.empty
    assert shape(make_program_cache_key) == [
        ("code", "KEYWORD_ONLY", empty), ("code_type", "KEYWORD_ONLY", empty),
        ("options", "KEYWORD_ONLY", empty), ("target_type", "KEYWORD_ONLY", empty),
        ("name_expressions", "KEYWORD_ONLY", ()), ("extra_digest", "KEYWORD_ONLY", None)]
    assert shape(InMemoryProgramCache) == [("max_size_bytes", "KEYWORD_ONLY", None)]
    assert shape(FileStreamProgramCache) == [("path", "POSITIONAL_OR_KEYWORD", None),
                                             ("max_size_bytes", "KEYWORD_ONLY", None)]
    assert shape(ProgramCacheResource.get)[1:] == [("key", "POSITIONAL_OR_KEYWORD", empty),
                                                   ("default", "POSITIONAL_OR_KEYWORD", None)]
    assert shape(ProgramCacheResource.update)[1:] == [("items", "POSITIONAL_ONLY", empty)]


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

ARCH = "sm_90"
SRC = 'extern "C" __global__ void k() {}'


def key(**changes):
    args = dict(code=SRC, code_type="c++", options=ProgramOptions(arch=ARCH),
                target_type="cubin")
    args.update(changes)
    return make_program_cache_key(**args)


def opts(**fields):
    return ProgramOptions(arch=ARCH, **fields)


def test_key_is_a_stable_32_byte_digest():
    k = key()
    assert isinstance(k, bytes) and len(k) == 32
    assert key() == k
    assert key(options=opts(std="c++17"), name_expressions=["f<1>"], extra_digest=b"h") == key(
        options=opts(std="c++17"), name_expressions=("f<1>",), extra_digest=b"h")


def test_key_is_the_same_in_another_process():
    kwargs = dict(options=opts(std="c++17", define_macro=["A", ("B", "2")]),
                  name_expressions=("f<int>",), extra_digest=b"x")
    here = key(**kwargs).hex()
    code = (
        "from cuda_core import ProgramOptions\n"
        "from cuda_core.utils import make_program_cache_key\n"
        f"print(make_program_cache_key(code={SRC!r}, code_type='c++', target_type='cubin', "
        f"options=ProgramOptions(arch={ARCH!r}, std='c++17', define_macro=['A', ('B', '2')]), "
        "name_expressions=('f<int>',), extra_digest=b'x').hex())\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == here


@pytest.mark.parametrize("change", [
    dict(code='extern "C" __global__ void k2() {}'),
    dict(code_type="nvvm", target_type="ptx", code="target triple"),
    dict(target_type="ptx"),
    dict(target_type="ltoir"),
    dict(options=opts(std="c++17")),
    dict(options=ProgramOptions(arch="sm_80")),
    dict(options=ProgramOptions(arch="compute_90")),
    dict(options=opts(name="other")),  # no flag, but the result's name
    dict(options=opts(ftz=False)),  # renders --ftz=false: not the compiler's default
    dict(name_expressions=("f<int>",)),
    dict(extra_digest=b""),
    dict(extra_digest=b"headers-v1"),
])
def test_each_ingredient_changes_the_key(change):
    assert key(**change) != key()


@pytest.mark.parametrize("a, b", [
    (dict(options=opts(std="c++17")), dict(options=opts(std="c++20"))),
    (dict(options=opts(ftz=True)), dict(options=opts(ftz=False))),
    (dict(options=opts(include_path=["/a", "/b"])), dict(options=opts(include_path=["/b", "/a"]))),
    (dict(options=opts(define_macro="A")), dict(options=opts(define_macro="B"))),
    (dict(options=opts(max_register_count=32)), dict(options=opts(max_register_count=64))),
    (dict(name_expressions=("f<1>",)), dict(name_expressions=("f<1>", "f<1>"))),
    (dict(name_expressions=("ab",)), dict(name_expressions=("a", "b"))),
    (dict(name_expressions=("f",)), dict(name_expressions=(b"f",))),
    (dict(extra_digest=b"1"), dict(extra_digest=b"2")),
    (dict(code_type="ptx", code=".version 8.0", target_type="cubin"),
     dict(code_type="ptx", code=".version 8.0", target_type="ptx")),
])
def test_different_inputs_give_different_keys(a, b):
    a.setdefault("extra_digest", b"d")
    b.setdefault("extra_digest", b"d")
    assert key(**a) != key(**b)


@pytest.mark.parametrize("a, b", [
    (dict(code=SRC), dict(code=SRC.encode())),  # a str and its UTF-8 bytes
    (dict(code="// \u00e9\n" + SRC), dict(code=("// \u00e9\n" + SRC).encode())),
    (dict(code_type="c++", target_type="cubin"), dict(code_type="C++", target_type="CUBIN")),
    (dict(options=opts()), dict(options={"arch": ARCH})),
    (dict(options=opts()), dict(options=opts(name="default_program"))),
    (dict(options=opts()), dict(options=opts(debug=False, lineinfo=False, use_fast_math=False))),
    (dict(options=opts(std="c++17", debug=True)),
     dict(options=ProgramOptions(debug=True, std="c++17", arch=ARCH))),  # argument order
    (dict(options=opts(define_macro="A")), dict(options=opts(define_macro=["A"]))),
    (dict(options=opts(define_macro=("A", "1"))), dict(options=opts(define_macro="A=1"))),
    (dict(options=opts(define_macro=("A", "1"))), dict(options=opts(define_macro=[("A", "1")]))),
    (dict(options=opts(ptxas_options="-v")), dict(options=opts(ptxas_options=("-v",)))),
    (dict(options=opts(diag_warn=5)), dict(options=opts(diag_warn=[5]))),
    (dict(options=opts(frandom_seed=7)), dict(options=opts(frandom_seed="7"))),
    (dict(options=opts(include_path="/inc"), extra_digest=b"d"),
     dict(options=opts(include_path=pathlib.Path("/inc")), extra_digest=b"d")),
    (dict(name_expressions=("f<1>", "f<2>")), dict(name_expressions=["f<2>", "f<1>"])),
    (dict(name_expressions=()), dict(name_expressions=[])),
    (dict(extra_digest=b"d"), dict(extra_digest=bytearray(b"d"))),
])
def test_equivalent_spellings_give_one_key(a, b):
    assert key(**a) == key(**b)


# A few values per field, among them spellings that render alike and values that differ.
FIELD_VALUES = {
    "relocatable_device_code": [None, True, False],
    "extensible_whole_program": [None, True, False],
    "debug": [None, True, False],
    "lineinfo": [None, True, False],
    "device_code_optimize": [None, True],
    "ptxas_options": [None, "-v", ["-v"], ("-v", "-O2"), ["-O2", "-v"]],
    "max_register_count": [None, 32, 64],
    "ftz": [None, True, False],
    "prec_sqrt": [None, True, False],
    "fma": [None, True, False],
    "use_fast_math": [None, True, False],
    "link_time_optimization": [None, True, False],
    "gen_opt_lto": [None, True, False],
    "define_macro": [None, "A", ["A"], ("A", "1"), "A=1", ["A=1"], ["A", "B"], ["B", "A"]],
    "undefine_macro": [None, "A", ["A"], ["A", "B"]],
    "use_bundled_headers": [None, True, False],
    "std": [None, "c++17", "c++20"],
    "builtin_move_forward": [None, True, False],
    "disable_warnings": [None, True, False],
    "optimization_info": [None, "inline"],
    "diag_error": [None, 5, [5], [5, 6], [6, 5]],
    "brief_diagnostics": [None, True, False],
    "split_compile": [None, 0, 2],
    "minimal": [None, True, False],
    "no_cache": [None, True, False],
    "frandom_seed": [None, 7, "7", "8"],
    "ofast_compile": [None, "0", "max"],
    "pch_verbose": [None, True, False],
    "pch_messages": [None, True, False],
    "instantiate_templates_in_pch": [None, True, False],
    "numba_debug": [None, True, False],
}


@pytest.mark.parametrize("field", sorted(FIELD_VALUES))
def test_key_equality_follows_the_flags_nvrtc_gets(field):
    # Two option values give one key exactly when they render the same NVRTC flags: the key
    # never merges options that compile differently, nor splits ones that compile alike.
    values = FIELD_VALUES[field]
    made = [(v, opts(**{field: v})) for v in values]
    for va, a in made:
        for vb, b in made:
            same_flags = a.as_bytes("nvrtc", "cubin") == b.as_bytes("nvrtc", "cubin")
            same_key = key(options=a) == key(options=b)
            assert same_flags == same_key, (field, va, vb)


@pytest.mark.parametrize("code_type, backend, target, fields", [
    ("nvvm", "nvvm", "ptx", {"debug": [None, True, False], "device_code_optimize":
                             [None, True, False], "ftz": [None, True, False],
                             "numba_debug": [None, True, False]}),
    ("ptx", "nvjitlink", "cubin", {"debug": [None, True, False], "lineinfo": [None, True, False],
                                   "device_code_optimize": [None, True, False],
                                   "no_cache": [None, True, False],
                                   "ptxas_options": [None, "-v", ["-v"]]}),
])
def test_key_equality_follows_the_flags_of_nvvm_and_the_linker(code_type, backend, target,
                                                                 fields):
    for field, values in fields.items():
        made = [opts(**{field: v}) for v in values]
        for a in made:
            for b in made:
                same_flags = a.as_bytes(backend, target) == b.as_bytes(backend, target)
                same_key = (key(code_type=code_type, target_type=target, code="x", options=a)
                            == key(code_type=code_type, target_type=target, code="x",
                                   options=b))
                assert same_flags == same_key, (field, a, b)


def test_nvvm_modules_and_libdevice_are_in_the_key():
    nvvm = dict(code_type="nvvm", target_type="ptx", code="x")
    one = key(**nvvm, options=opts(extra_sources=[("m", b"bitcode 1")]))
    assert one != key(**nvvm, options=opts(extra_sources=[("m", b"bitcode 2")]))
    assert one != key(**nvvm, options=opts(extra_sources=[("n", b"bitcode 1")]))
    assert one == key(**nvvm, options=opts(extra_sources=(("m", bytearray(b"bitcode 1")),)))
    with_lib = key(**nvvm, options=opts(use_libdevice=True), extra_digest=b"libdevice v1")
    assert with_lib != key(**nvvm, options=opts(), extra_digest=b"libdevice v1")


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
    _program_cache_key._compiler_identity.cache_clear()
    try:
        before = key(**kwargs)
        with monkeypatch.context() as m:
            m.setattr(mod, attr, fake)
            _program_cache_key._compiler_identity.cache_clear()
            after = key(**kwargs)
            assert "99.1" in _program_cache_key._compiler_identity(backend)
    finally:
        _program_cache_key._compiler_identity.cache_clear()
    assert before != after
    assert key(**kwargs) == before


def test_ptx_linked_by_the_driver_is_keyed_by_the_driver(monkeypatch):
    # Without nvJitLink the driver's linker assembles PTX: its version goes into the key.
    from cuda.bindings import nvjitlink

    def broken():
        raise RuntimeError("libnvJitLink not found")

    _program_cache_key._compiler_identity.cache_clear()
    try:
        with monkeypatch.context() as m:
            m.setattr(nvjitlink, "version", broken)
            k = key(code_type="ptx", code=".version 8.0")
            assert _program_cache_key._compiler_identity("nvjitlink").startswith("driver linker")
    finally:
        _program_cache_key._compiler_identity.cache_clear()
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
    (dict(code="\ud800"), ValueError, "not valid text"),
    (dict(options=object()), TypeError, "options must be a ProgramOptions.*not object"),
    (dict(options={"stdd": "c++17"}), TypeError, "'stdd'"),
    (dict(options=opts(extra_sources=[("m", b"x")])), ValueError,
     "ProgramOptions.extra_sources cannot be used with C\\+\\+"),
    (dict(code_type="ptx", options=opts(std="c++17")), ValueError,
     "ProgramOptions.std cannot be used with PTX"),
    (dict(name_expressions="f<int>"), TypeError, "name_expressions must be a sequence"),
    (dict(name_expressions=None), TypeError, "name_expressions must be a sequence"),
    (dict(name_expressions=(bytearray(b"f"),)), TypeError,
     r"name_expressions\[0\] must be a str or bytes, not bytearray"),
    (dict(name_expressions=("f", 3)), TypeError, r"name_expressions\[1\] must be a str"),
    (dict(extra_digest="abc"), TypeError, "extra_digest must be bytes or None, not str"),
])
def test_key_argument_errors(change, exc, match):
    with pytest.raises(exc, match=match):
        key(**change)


def test_key_arguments_are_keyword_only():
    with pytest.raises(TypeError):
        make_program_cache_key(SRC, "c++", opts(), "cubin")


def test_key_takes_the_arch_of_the_current_device_or_refuses():
    # A fresh process has no current context (with or without a GPU): as Program does, the key
    # refuses to guess the arch.
    code = (
        "from cuda_core import ProgramOptions\n"
        "from cuda_core.utils import make_program_cache_key\n"
        "try:\n"
        "    make_program_cache_key(code='x', code_type='c++', options=None, "
        "target_type='ptx')\n"
        "except RuntimeError as e:\n"
        "    print('RuntimeError:', e)\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert "ProgramOptions.arch is not set" in result.stdout


@pytest.mark.parametrize("field, value, what", [
    ("create_pch", "a.pch", "a precompiled header"),
    ("time", "t.csv", "a timing CSV"),
    ("fdevice_time_trace", "trace", "a time trace"),
])
def test_options_with_side_effects_are_refused(field, value, what):
    # A hit skips the compile, so the file would not be written: no digest makes it cacheable.
    for digest in (None, b"headers"):
        with pytest.raises(ValueError, match=f"options.{field} makes the compile write {what}"):
            key(options=opts(**{field: value}), extra_digest=digest)


@pytest.mark.parametrize("field, value", [
    ("include_path", "/usr/include/mine"), ("include_path", ["/a", "/b"]),
    ("pre_include", "pre.h"), ("pch", True), ("use_pch", "a.pch"), ("pch_dir", "/tmp/pch"),
])
def test_options_that_read_files_need_an_extra_digest(field, value):
    with pytest.raises(ValueError, match=f"options.{field} makes the compiler read files.*"
                                         f"extra_digest"):
        key(options=opts(**{field: value}))
    one = key(options=opts(**{field: value}), extra_digest=b"headers-v1")
    assert one != key(options=opts(**{field: value}), extra_digest=b"headers-v2")


def test_pch_false_reads_no_file():
    assert key(options=opts(pch=False)) == key()


def test_libdevice_needs_an_extra_digest():
    nvvm = dict(code_type="nvvm", target_type="ptx", code="x")
    with pytest.raises(ValueError, match="options.use_libdevice makes the compiler read files"):
        key(**nvvm, options=opts(use_libdevice=True))
    assert key(**nvvm, options=opts(use_libdevice=False)) == key(**nvvm)
    assert len(key(**nvvm, options=opts(use_libdevice=True), extra_digest=b"d")) == 32


@pytest.mark.parametrize("name", ["src/kernel.cu", "/abs/kernel.cu", "dir\\kernel.cu"])
def test_a_cxx_name_with_a_directory_needs_an_extra_digest(name):
    with pytest.raises(ValueError, match="has a directory part"):
        key(options=opts(name=name))
    assert len(key(options=opts(name=name), extra_digest=b"d")) == 32
    # NVVM and PTX programs do not resolve includes from their name.
    assert len(key(code_type="nvvm", target_type="ptx", code="x", options=opts(name=name))) == 32
    assert len(key(code_type="ptx", code="x", options=opts(name=name))) == 32


# ---------------------------------------------------------------------------------------------
# Both caches: the mapping interface
# ---------------------------------------------------------------------------------------------

def test_hit_miss_and_lookups_return_bytes(make_cache):
    cache = make_cache()
    assert cache.get(b"nope") is None
    assert cache.get(b"nope", "dflt") == "dflt"
    with pytest.raises(KeyError):
        cache[b"nope"]
    assert b"nope" not in cache
    value = object_code(b"\x7fELF\x00binary", "cubin", name="my_prog",
                        symbol_mapping={"add<float>": "_Z3addIfEvPT_"})
    cache[b"k"] = value
    assert b"k" in cache and len(cache) == 1
    got = cache[b"k"]
    assert type(got) is bytes and got == b"\x7fELF\x00binary"
    assert cache.get(b"k") == got and cache.get(b"k", "dflt") == got


@pytest.mark.parametrize("value", [b"raw cubin", bytearray(b"raw cubin"),
                                   memoryview(b"raw cubin")])
def test_bytes_like_values_come_back_as_bytes(make_cache, value):
    cache = make_cache()
    cache[b"k"] = value
    got = cache[b"k"]
    assert type(got) is bytes and got == b"raw cubin"


@pytest.mark.parametrize("code_type", CODE_TYPES)
def test_every_code_type_is_stored(make_cache, code_type):
    cache = make_cache()
    cache["k"] = object_code(bytes(range(256)) * 3, code_type, symbol_mapping={})
    assert cache["k"] == bytes(range(256)) * 3


def test_an_object_code_made_from_a_file_stores_the_files_bytes(make_cache, tmp_path):
    f = tmp_path / "k.cubin"
    f.write_bytes(b"\x7fELF from a file")
    value = ObjectCode.from_cubin(f)
    cache = make_cache()
    cache[b"k"] = value
    f.write_bytes(b"changed later")  # the entry holds what was read when it was stored
    assert cache[b"k"] == b"\x7fELF from a file"
    gone = ObjectCode.from_cubin(str(f))
    f.unlink()
    with pytest.raises(FileNotFoundError, match="no longer exists"):
        cache[b"gone"] = gone
    assert cache.get(b"gone") is None
    f.write_bytes(b"\x7fELF")
    emptied = ObjectCode.from_cubin(f)
    f.write_bytes(b"")  # emptied before it is stored
    with pytest.raises(ValueError, match="cannot cache an ObjectCode whose code is empty"):
        cache[b"emptied"] = emptied
    assert cache.get(b"emptied") is None


def test_real_object_code_values(make_cache):
    ptx = b".version 8.0\n.target sm_90\n.address_size 64\n"
    cache = make_cache()
    cache[b"k"] = ObjectCode.from_ptx(ptx, name="prog", symbol_mapping={"k<int>": "_Z1kIiEvv"})
    assert cache[b"k"] == ptx
    with pytest.raises(TypeError, match="stores ObjectCode or bytes values, not str"):
        cache[b"k"] = "text"


def test_str_bytes_and_bytearray_keys_name_the_same_entry(make_cache):
    cache = make_cache()
    cache["k\u00e9"] = obj(1)
    assert cache["k\u00e9".encode()] == code(1)
    assert cache[bytearray("k\u00e9".encode())] == code(1)
    cache[b"k\xc3\xa9"] = obj(2)
    assert cache["k\u00e9"] == code(2) and len(cache) == 1


@pytest.mark.parametrize("bad_key", [1, None, 1.5, ("a",), memoryview(b"k")])
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
    ("a string", TypeError, "stores ObjectCode or bytes values, not str"),
    (123, TypeError, "not int"),
    (None, TypeError, "not NoneType"),
    (b"", ValueError, "empty code"),
    (bytearray(), ValueError, "empty code"),
    # A stand-in with ObjectCode's attributes is not an ObjectCode.
    (type("Lookalike", (), {"code": b"x", "code_type": "cubin", "symbol_mapping": {}})(),
     TypeError, "stores ObjectCode or bytes values, not Lookalike"),
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
    assert len(cache) == 4 and cache["k0"] == code(7)
    cache.clear()
    assert len(cache) == 0 and cache.get("k1") is None
    cache["k1"] = obj(1)
    assert cache["k1"] == code(1)


def test_update_takes_a_mapping_or_pairs(make_cache):
    cache = make_cache()
    cache.update({"a": obj(1), b"b": obj(2)})
    cache.update([("c", obj(3)), (b"d", b"raw")])
    cache.update((("e", obj(5)),))
    assert len(cache) == 5
    assert cache["b"] == code(2) and cache["d"] == b"raw"
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
                                      (np.True_, TypeError), (0.0, ValueError),
                                      (float("nan"), ValueError)])
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

def test_lru_eviction_by_bytes(make_cache, kind, tmp_path):
    size = entry_size(kind, tmp_path, obj(0))
    assert all(entry_size(kind, tmp_path, obj(i)) == size for i in (1, 42))
    cache = make_cache(max_size_bytes=3 * size)
    for i in range(3):
        cache[f"k{i}"] = obj(i)
    assert len(cache) == 3  # exactly at the limit: nothing evicted
    cache["k0"]  # k0 is now the most recently used; k1 the least
    cache["k3"] = obj(3)
    assert len(cache) == 3
    assert "k1" not in cache
    assert all(cache[f"k{i}"] == code(i) for i in (0, 2, 3))
    # Membership tests do not count as use: after the reads above the order is 0, 2, 3.
    assert "k0" in cache
    cache["k4"] = obj(4)
    cache["k5"] = obj(5)
    assert sorted(k for k in ("k0", "k2", "k3", "k4", "k5") if k in cache) == ["k3", "k4", "k5"]


def test_in_memory_size_counts_the_code():
    # As cuda.core's: the limit is on the sum of the stored code's sizes.
    cache = InMemoryProgramCache(max_size_bytes=10)
    cache[b"a"] = b"12345"
    # The symbol mapping is not counted.
    cache[b"b"] = object_code(b"12345", symbol_mapping={"long": "m" * 99})
    assert len(cache) == 2
    cache[b"c"] = b"1"
    assert cache.get(b"a") is None and len(cache) == 2


def test_one_large_entry_evicts_several_small_ones(make_cache, kind, tmp_path):
    small = entry_size(kind, tmp_path, b"s" * 100)
    header = entry_size(kind, tmp_path, b"s") - 1  # what a file adds to the code
    big_value = b"B" * (3 * small - header)
    assert entry_size(kind, tmp_path, big_value) == 3 * small
    cache = make_cache(max_size_bytes=4 * small)
    for i in range(4):
        cache[f"s{i}"] = b"s" * 100
    cache["big"] = big_value  # takes exactly 3 small entries' room: the 3 oldest go
    assert "big" in cache and "s3" in cache and len(cache) == 2


def test_an_entry_larger_than_the_limit_is_not_stored(make_cache, kind, tmp_path):
    # cuda.core stores it and then evicts every entry, itself included; here only the entry
    # under its key goes.
    size = entry_size(kind, tmp_path, obj(0))
    cache = make_cache(max_size_bytes=2 * size)
    cache["a"] = obj(0)
    cache["b"] = obj(1)
    cache["b"] = object_code(b"x" * (2 * size + 1), "cubin")  # too big: not stored
    assert "b" not in cache  # and the earlier value under that key is gone
    assert cache["a"] == code(0) and len(cache) == 1
    cache["c"] = obj(2)
    assert cache["a"] == code(0) and cache["c"] == code(2)


def test_replacing_a_value_keeps_the_byte_count_right(make_cache, kind, tmp_path):
    size = entry_size(kind, tmp_path, obj(0))
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


def test_in_memory_cache_under_many_threads():
    size = len(code(0))
    capacity = 10
    cache = InMemoryProgramCache(max_size_bytes=capacity * size)
    errors = []

    def hammer(seed):
        # Few keys, so that threads often store and delete the same key at once.
        rng = random.Random(seed)
        try:
            for _ in range(8000):
                i = rng.randrange(4)
                op = rng.random()
                if op < 0.5:
                    cache[f"k{i}"] = obj(i)
                elif op < 0.75:
                    got = cache.get(f"k{i}")
                    if got is not None and got != code(i):
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

    assert race_threads(hammer, 8) == []
    assert errors == []
    for i in range(4):
        if f"k{i}" in cache:
            assert cache[f"k{i}"] == code(i)
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


@pytest.mark.parametrize("value, type_id, mapping", [
    (b"raw bytes", 0, None),
    (object_code(b"ptx text", "ptx"), 2, None),
    (object_code(b"\x7fELF", "cubin", symbol_mapping={"f<\u00e9>": "_Z1f"}), 1,
     {"f<\u00e9>": "_Z1f"}),
])
def test_the_record_is_as_documented(tmp_path, value, type_id, mapping):
    # docs/program_cache.rst: a 28-byte header, the mapping as JSON (if any), the code.
    cache = FileStreamProgramCache(tmp_path)
    cache[b"k"] = value
    data = pathlib.Path(entry_file(cache, b"k")).read_bytes()
    magic, version, tid, flags, meta_len, code_len, crc = struct.unpack_from("<8sHBBIQI", data)
    body = data[28:]
    assert (magic, version, tid, flags) == (b"CCPCACHE", 2, type_id, 0)
    assert len(body) == meta_len + code_len and zlib.crc32(body) == crc
    stored = value if isinstance(value, bytes) else value.code
    assert body[meta_len:] == stored
    if mapping is None:
        assert meta_len == 0
    else:
        import json

        assert json.loads(body[:meta_len].decode()) == mapping


def test_entries_persist_across_instances(tmp_path):
    FileStreamProgramCache(tmp_path)[b"k"] = obj(3)
    again = FileStreamProgramCache(str(tmp_path))
    assert again[b"k"] == code(3) and len(again) == 1


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
    assert _file_stream_program_cache._default_cache_dir() == os.path.join(
        "/fake/AppData/Local", "cuda-python", "program-cache")


def test_disk_eviction_order_follows_use_across_instances(tmp_path):
    size = entry_size("file", tmp_path, obj(0))
    d = tmp_path / "lru"
    writer = FileStreamProgramCache(d, max_size_bytes=3 * size)
    for i in range(3):
        writer[f"k{i}"] = obj(i)
    time.sleep(0.01)  # so that the hit's time is later than the stores' on any file system
    FileStreamProgramCache(d)["k0"]  # a hit through another instance refreshes k0
    writer["k3"] = obj(3)
    assert sorted(os.listdir(d)) == sorted(
        hashlib.sha256(f"k{i}".encode()).hexdigest() for i in (0, 2, 3))


def test_total_file_size_stays_within_the_limit(tmp_path):
    size = entry_size("file", tmp_path, obj(0))
    d = tmp_path / "lim"
    cache = FileStreamProgramCache(d, max_size_bytes=5 * size + size // 2)
    for i in range(40):
        cache[f"k{i}"] = obj(i)
        assert sum(p.stat().st_size for p in d.iterdir()) <= 5 * size + size // 2
    assert len(cache) == 5
    assert all(cache[f"k{i}"] == code(i) for i in range(35, 40))


def test_eviction_tolerates_files_removed_by_someone_else(tmp_path):
    size = entry_size("file", tmp_path, obj(0))
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


def damage_bad_code_type(data):
    b = bytearray(data)
    b[10] = 99
    return bytes(b)


def damage_huge_length(data):
    # A header that claims far more than any file holds: a miss, with nothing allocated.
    return data[:16] + (1 << 60).to_bytes(8, "little") + data[24:]


@pytest.mark.parametrize("damage", [
    lambda d: b"", lambda d: d[:10], damage_truncate, damage_flip_code_byte,
    damage_flip_metadata_byte, damage_bad_magic, damage_extra_bytes, damage_bad_length,
    damage_bad_code_type, damage_huge_length, lambda d: b"garbage" * 50,
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
    assert cache[b"other"] == code(2)
    cache[b"k"] = obj(1)
    assert cache[b"k"] == code(1)


def test_membership_test_also_drops_a_damaged_file(tmp_path):
    cache = FileStreamProgramCache(tmp_path)
    cache[b"k"] = obj(1)
    path = entry_file(cache, b"k")
    with open(path, "r+b") as f:
        f.truncate(20)
    assert b"k" not in cache
    assert not os.path.exists(path)


@pytest.mark.parametrize("version", [1, 3])
def test_a_record_of_another_format_version_is_a_miss_and_is_kept(tmp_path, version):
    cache = FileStreamProgramCache(tmp_path)
    cache[b"k"] = obj(1)
    path = entry_file(cache, b"k")
    with open(path, "r+b") as f:
        f.seek(8)
        f.write(version.to_bytes(2, "little"))
    assert cache.get(b"k") is None
    assert os.path.exists(path)  # written by another version of the package: left alone
    cache[b"k"] = obj(4)  # a store replaces it
    assert cache[b"k"] == code(4)


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
    assert cache[b"k"] == code(1)


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
        assert cache[b"k"] == code(1)


def test_a_hit_refreshes_the_files_time(tmp_path):
    cache = FileStreamProgramCache(tmp_path)
    cache[b"k"] = obj(1)
    path = entry_file(cache, b"k")
    os.utime(path, (1_000_000, 1_000_000))
    assert b"k" in cache and os.stat(path).st_mtime == 1_000_000  # `in` is no use
    cache[b"k"]
    assert os.stat(path).st_mtime > time.time() - 3600


def test_file_cache_close_keeps_the_files(tmp_path):
    cache = FileStreamProgramCache(tmp_path)
    cache[b"k"] = obj(1)
    cache.close()
    with pytest.raises(RuntimeError, match="FileStreamProgramCache is closed"):
        cache.get(b"k")
    assert FileStreamProgramCache(tmp_path)[b"k"] == code(1)


# ---------------------------------------------------------------------------------------------
# Several processes on one directory
# ---------------------------------------------------------------------------------------------

def mp_value(writer, i):
    # Sizes vary with i (so a partial file could not pass for a whole one) and with the writer.
    return object_code(f"{writer}:{i}|".encode() * (20 + 7 * i + writer), "cubin",
                       symbol_mapping={f"f<{i}>": f"_Z{writer}_{i}"})


def mp_keys(writer):
    return range(0, 150) if writer == 0 else range(50, 200)


def mp_check(got, i):
    return any(got == mp_value(w, i).code for w in (0, 1))


def mp_writer(path, writer, barrier, max_size_bytes):
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
            assert got == mp_value(0, i).code
        elif i >= 150:
            assert got == mp_value(1, i).code


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


def test_float_max_size_bytes_compares_as_given():
    # As cuda.core: 1.5 keeps an entry of one byte, not one of two.
    cache = InMemoryProgramCache(max_size_bytes=1.5)
    cache[b"a"] = b"x"
    cache[b"b"] = b"xy"
    assert cache.get(b"a") == b"x" and cache.get(b"b") is None
    assert cache.max_size_bytes == 1.5
