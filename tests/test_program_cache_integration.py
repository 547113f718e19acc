"""Program.compile(..., cache=...) with the caches of cuda_core.utils (CPU; GPU at the end)."""

import io

import pytest

from cuda_core import ObjectCode, Program, ProgramOptions
from cuda_core.utils import FileStreamProgramCache, InMemoryProgramCache, make_program_cache_key

ARCH = "sm_90"
SRC = r"""
template <typename T> __global__ void fill(T* out, T v) { out[threadIdx.x] = v; }
extern "C" __global__ void noisy() { int unused_local_w; }
"""


def compile_logged(cache, names=(), **opts):
    logs = io.StringIO()
    obj = Program(SRC, "c++", ProgramOptions(arch=ARCH, **opts)).compile(
        "cubin", name_expressions=names, logs=logs, cache=cache)
    return obj, logs.getvalue()


@pytest.fixture(params=["memory", "file"])
def cache(request, tmp_path):
    if request.param == "memory":
        c = InMemoryProgramCache()
    else:
        c = FileStreamProgramCache(tmp_path / "cache")
    yield c
    c.close()


def test_miss_then_hit(cache):
    first, log1 = compile_logged(cache)
    assert "unused_local_w" in log1  # compiled: NVRTC's warning reached logs
    assert len(cache) == 1
    second, log2 = compile_logged(cache)
    assert log2 == ""  # a hit: nothing compiled, nothing logged
    assert second.code == first.code and second.code_type == "cubin" and second.name == first.name
    assert len(cache) == 1


def test_name_expressions_survive_a_hit(cache):
    first, _ = compile_logged(cache, names=("fill<float>", "fill<int>"))
    second, log = compile_logged(cache, names=("fill<float>", "fill<int>"))
    assert log == ""
    assert second.symbol_mapping == first.symbol_mapping
    assert set(second.symbol_mapping) == {"fill<float>", "fill<int>"}


def test_key_covers_options_targets_and_names(cache):
    compile_logged(cache)
    compile_logged(cache, max_register_count=32)
    compile_logged(cache, names=("fill<float>",))
    Program(SRC, "c++", {"arch": ARCH}).compile("ptx", cache=cache)
    assert len(cache) == 4


def test_key_is_what_compile_uses(cache):
    opts = ProgramOptions(arch=ARCH)
    obj = Program(SRC, "c++", opts).compile("ptx", cache=cache)
    key = make_program_cache_key(code=SRC, code_type="c++", options=opts, target_type="ptx",
                                 name_expressions=())
    assert cache[key] == obj.code  # the cache gives the code as bytes, as cuda.core's does
    assert type(cache.get(key)) is bytes
    named = Program(SRC, "c++", opts).compile("ptx", ("fill<int>",), cache=cache)
    key = make_program_cache_key(code=SRC, code_type="c++", options=opts, target_type="ptx",
                                 name_expressions=["fill<int>"])
    assert cache[key] == named.code


def test_compile_keys_bytes_names_as_make_program_cache_key_does(cache):
    # One normaliser for both: b"fill<int>" keeps its own key (as cuda.core's keys do), and the
    # compile that stored it is found under make_program_cache_key's key for the same input.
    opts = ProgramOptions(arch=ARCH)
    obj = Program(SRC, "c++", opts).compile("ptx", (b"fill<int>",), cache=cache)
    as_bytes = make_program_cache_key(code=SRC, code_type="c++", options=opts,
                                      target_type="ptx", name_expressions=[b"fill<int>"])
    as_str = make_program_cache_key(code=SRC, code_type="c++", options=opts,
                                    target_type="ptx", name_expressions=["fill<int>"])
    assert as_bytes != as_str
    assert cache[as_bytes] == obj.code and as_str not in cache
    assert set(obj.symbol_mapping) == {"fill<int>"}


@pytest.mark.parametrize("code, code_type, names, exc, match", [
    (bytearray(b"x"), "c++", (), TypeError, "code must be a str or bytes, not bytearray"),
    (SRC, "c++", "fill<int>", TypeError, "must be a sequence of str or bytes, not str"),
    (SRC, "c++", ("f", 3), TypeError, r"name_expressions\[1\] must be a str or bytes, not int"),
])
def test_program_and_key_refuse_one_form(code, code_type, names, exc, match):
    # One check of the inputs' form serves both, with one message.
    opts = ProgramOptions(arch=ARCH)
    with pytest.raises(exc, match=match):
        make_program_cache_key(code=code, code_type=code_type, options=opts,
                               target_type="ptx", name_expressions=names)
    with pytest.raises(exc, match=match):
        Program(code, code_type, opts).compile("ptx", names)


@pytest.mark.parametrize("code, code_type, names, match", [
    ("", "ptx", (), "ptx code is empty"),
    ("a\0b", "c++", (), "NUL"),
    (SRC, "c++", ("",), "invalid name expression"),
    (SRC, "c++", (b"\xff",), "is not UTF-8"),
    (".version 8.0", "ptx", ("f",), "C\\+\\+ programs only"),
])
def test_only_a_compile_asks_what_a_compile_needs(code, code_type, names, match):
    # A key compiles nothing and is made for these, as cuda.core's is; Program refuses them.
    opts = ProgramOptions(arch=ARCH)
    target = "ptx" if code_type == "c++" else "cubin"
    key = make_program_cache_key(code=code, code_type=code_type, options=opts,
                                 target_type=target, name_expressions=names)
    assert type(key) is bytes and len(key) == 32
    with pytest.raises(ValueError, match=match):
        Program(code, code_type, opts).compile(target, names)


def test_a_hit_is_a_new_object_code_named_by_the_options(cache):
    first, _ = compile_logged(cache, name="my_prog")
    second, log = compile_logged(cache, name="my_prog")
    assert log == "" and second is not first and second.code == first.code
    assert (second.name, second.code_type, second.code) == ("my_prog", "cubin", first.code)


def test_equivalent_options_share_one_entry(cache):
    compile_logged(cache, define_macro="A", debug=False)
    _, log = compile_logged(cache, define_macro=["A"])
    assert log == "" and len(cache) == 1


def test_an_entry_without_the_names_asked_for_is_compiled_again(cache):
    # An entry stored by hand, without a symbol mapping, under the key of a compile with name
    # expressions: the hit cannot serve get_kernel("fill<float>"), so compile() compiles.
    opts = ProgramOptions(arch=ARCH)
    key = make_program_cache_key(code=SRC, code_type="c++", options=opts,
                                 target_type="cubin", name_expressions=("fill<float>",))
    plain = Program(SRC, "c++", opts).compile("cubin")
    cache[key] = plain
    obj, log = compile_logged(cache, names=("fill<float>",))
    assert "unused_local_w" in log and set(obj.symbol_mapping) == {"fill<float>"}
    again, log = compile_logged(cache, names=("fill<float>",))  # stored with its mapping now
    assert log == "" and set(again.symbol_mapping) == {"fill<float>"}


def test_an_entry_of_another_code_type_is_compiled_again(cache):
    opts = ProgramOptions(arch=ARCH)
    key = make_program_cache_key(code=SRC, code_type="c++", options=opts, target_type="cubin")
    cache[key] = ObjectCode.from_ptx(b"// not a cubin\n")
    obj, log = compile_logged(cache)
    assert obj.code_type == "cubin" and obj.code.startswith(b"\x7fELF")


def test_file_cache_is_shared_between_instances(tmp_path):
    with FileStreamProgramCache(tmp_path / "c") as one:
        first, _ = compile_logged(one, names=("fill<double>",))
    with FileStreamProgramCache(tmp_path / "c") as two:
        second, log = compile_logged(two, names=("fill<double>",))
    assert log == "" and second.code == first.code
    assert second.symbol_mapping == first.symbol_mapping


class BytesOnlyCache(dict):
    """A cache that hands back raw bytes, as caches that store only the image do."""

    def __getitem__(self, key):
        value = super().__getitem__(key)
        return value.code if isinstance(value, ObjectCode) else value


def test_a_cache_returning_bytes():
    cache = BytesOnlyCache()
    first, _ = compile_logged(cache)
    second, log = compile_logged(cache)
    assert log == "" and isinstance(second, ObjectCode) and second.code == first.code
    # With name expressions, bytes lack the symbol mapping: compile again rather than lose it.
    compile_logged(cache, names=("fill<float>",))
    again, log = compile_logged(cache, names=("fill<float>",))
    assert "unused_local_w" in log and set(again.symbol_mapping) == {"fill<float>"}


@pytest.mark.gpu
def test_hit_loads_and_finds_template_kernels(dev, tmp_path):
    arch = "sm_" + dev.arch
    with FileStreamProgramCache(tmp_path / "c") as cache:
        Program(SRC, "c++", {"arch": arch}).compile("cubin", ["fill<float>"], cache=cache)
        hit = Program(SRC, "c++", {"arch": arch}).compile("cubin", ["fill<float>"], cache=cache)
        assert hit.get_kernel("fill<float>").num_arguments == 2


def test_compile_with_cache_refuses_options_that_read_headers(tmp_path):
    cache = InMemoryProgramCache()
    prog = Program(SRC, "c++", ProgramOptions(arch=ARCH, include_path=str(tmp_path)))
    with pytest.raises(ValueError, match="options.include_path makes the compiler read files"):
        prog.compile("ptx", cache=cache)
    prog = Program(SRC, "c++", ProgramOptions(arch=ARCH, name="kernels/fill.cu"))
    with pytest.raises(ValueError, match="has a directory part"):
        prog.compile("ptx", cache=cache)
    assert len(cache) == 0


@pytest.mark.parametrize("field, value", [("create_pch", "x.pch"), ("time", "t.csv"),
                                          ("fdevice_time_trace", "trace")])
def test_compile_with_cache_refuses_options_with_side_effects(tmp_path, field, value):
    cache = InMemoryProgramCache()
    prog = Program(SRC, "c++", ProgramOptions(arch=ARCH, **{field: str(tmp_path / value)}))
    with pytest.raises(ValueError, match=f"options.{field} makes the compile write"):
        prog.compile("ptx", cache=cache)
    assert len(cache) == 0 and list(tmp_path.iterdir()) == []  # nothing compiled


def test_a_closed_program_is_refused_before_the_cache_is_read(cache):
    compile_logged(cache)
    prog = Program(SRC, "c++", ProgramOptions(arch=ARCH))
    prog.close()
    with pytest.raises(RuntimeError, match="closed"):
        prog.compile("cubin", cache=cache)
