"""ProgramOptions: every field rendered to exact flags, accepted by the real compiler, and
checked at construction (CPU)."""

import dataclasses
import pathlib
import pickle

import numpy as np
import pytest

from cuda_core import NVRTCError, Program, ProgramOptions
from cuda_core._linker import CompilerOptionError, CompilerOptionTypeError
from cuda_core.typing import CompilerBackendType
from helpers import nvrtc_version, skip_before_checked_nvrtc

KERNEL = 'extern "C" __global__ void k(float* a) { a[threadIdx.x] *= 2.0f; }\n'


def field_cases(tmp):
    """field -> (value, the exact NVRTC flags it renders to). One entry per field that NVRTC
    takes; ``tmp`` holds the files and directories the path-valued fields name."""
    inc = tmp / "inc"
    return {
        "arch": ("sm_90", [b"-arch=sm_90"]),
        "relocatable_device_code": (True, [b"--relocatable-device-code=true"]),
        "extensible_whole_program": (True, [b"--extensible-whole-program"]),
        "debug": (True, [b"--device-debug"]),
        "lineinfo": (True, [b"--generate-line-info"]),
        "device_code_optimize": (True, [b"--dopt=on"]),
        "ptxas_options": (["-v", "--warn-on-spills"],
                          [b"--ptxas-options=-v", b"--ptxas-options=--warn-on-spills"]),
        "max_register_count": (32, [b"--maxrregcount=32"]),
        "ftz": (True, [b"--ftz=true"]),
        "prec_sqrt": (False, [b"--prec-sqrt=false"]),
        "prec_div": (False, [b"--prec-div=false"]),
        "fma": (False, [b"--fmad=false"]),
        "use_fast_math": (True, [b"--use_fast_math"]),
        "extra_device_vectorization": (True, [b"--extra-device-vectorization"]),
        "link_time_optimization": (True, [b"--dlink-time-opt"]),
        "gen_opt_lto": (True, [b"--gen-opt-lto"]),
        "define_macro": (["A", ("B", "2"), "C=3"],
                         [b"--define-macro=A", b"--define-macro=B=2", b"--define-macro=C=3"]),
        "undefine_macro": ("D", [b"--undefine-macro=D"]),
        "include_path": (inc, [f"--include-path={inc}".encode()]),
        "use_bundled_headers": (True, None),  # the directory depends on the NVRTC version
        "pre_include": ("pre.h", [b"--pre-include=pre.h"]),
        "no_source_include": (True, [b"--no-source-include"]),
        "std": ("c++20", [b"--std=c++20"]),
        "builtin_move_forward": (False, [b"--builtin-move-forward=false"]),
        "builtin_initializer_list": (False, [b"--builtin-initializer-list=false"]),
        "disable_warnings": (True, [b"--disable-warnings"]),
        "restrict": (True, [b"--restrict"]),
        "device_as_default_execution_space": (True, [b"--device-as-default-execution-space"]),
        "device_int128": (True, [b"--device-int128"]),
        "optimization_info": ("inline", [b"--optimization-info=inline"]),
        "no_display_error_number": (True, [b"--no-display-error-number"]),
        "diag_error": ([20, 177], [b"--diag-error=20,177"]),
        "diag_suppress": (177, [b"--diag-suppress=177"]),
        "diag_warn": ([550], [b"--diag-warn=550"]),
        "brief_diagnostics": (True, [b"--brief-diagnostics=true"]),
        "time": (tmp / "t.csv", [f"--time={tmp / 't.csv'}".encode()]),
        "split_compile": (2, [b"--split-compile=2"]),
        "fdevice_syntax_only": (True, [b"--fdevice-syntax-only"]),
        "minimal": (True, [b"--minimal"]),
        "no_cache": (True, [b"--no-cache"]),
        "fdevice_time_trace": (str(tmp / "trace"),
                               [f"--fdevice-time-trace={tmp / 'trace'}".encode()]),
        "device_float128": (True, [b"--device-float128"]),
        "frandom_seed": ("1234", [b"--frandom-seed=1234"]),
        "ofast_compile": ("min", [b"--Ofast-compile=min"]),
        "pch": (True, [b"--pch"]),
        "create_pch": (str(tmp / "x.pch"), [f"--create-pch={tmp / 'x.pch'}".encode()]),
        "use_pch": (str(tmp / "x.pch"), [f"--use-pch={tmp / 'x.pch'}".encode()]),
        "pch_dir": (str(tmp / "pch"), [f"--pch-dir={tmp / 'pch'}".encode()]),
        "pch_verbose": (True, [b"--pch-verbose=true"]),
        "pch_messages": (False, [b"--pch-messages=false"]),
        "instantiate_templates_in_pch": (True, [b"--instantiate-templates-in-pch=true"]),
        "numba_debug": (True, [b"--numba-debug"]),
    }


NVVM_ONLY = {"extra_sources", "use_libdevice"}


def test_fields_match_the_reference():
    names = [f.name for f in dataclasses.fields(ProgramOptions)]
    assert len(names) == len(set(names)) == 55
    assert names[:2] == ["name", "arch"]
    opts = ProgramOptions()
    assert opts.name == "default_program"
    assert all(getattr(opts, n) is None for n in names[1:])
    assert opts.as_bytes("nvrtc") == []


def test_every_nvrtc_field_has_a_rendering_case(tmp_path):
    names = {f.name for f in dataclasses.fields(ProgramOptions)}
    assert set(field_cases(tmp_path)) == names - {"name"} - NVVM_ONLY


@pytest.mark.parametrize("field", sorted(field_cases(pathlib.Path("/t"))))
def test_nvrtc_rendering(field, tmp_path):
    value, expected = field_cases(tmp_path)[field]
    rendered = ProgramOptions(**{field: value}).as_bytes("nvrtc")
    if field == "use_bundled_headers":
        assert len(rendered) == 1 and rendered[0].startswith(b"--use-bundled-headers=")
        assert b"cuda-python" in rendered[0]
    else:
        assert rendered == expected


@pytest.mark.parametrize("backend", ["nvrtc", "NVRTC", CompilerBackendType.NVRTC])
def test_backend_spellings(backend):
    assert ProgramOptions(arch="sm_80").as_bytes(backend) == [b"-arch=sm_80"]


def test_false_renders_the_negative_form_or_nothing():
    opts = ProgramOptions(relocatable_device_code=False, debug=False, ftz=False,
                          use_fast_math=False, device_code_optimize=True)
    assert opts.as_bytes("nvrtc") == [b"--relocatable-device-code=false", b"--dopt=on",
                                      b"--ftz=false"]


def test_device_code_optimize_false_is_refused_for_nvrtc():
    # NVRTC accepts only --dopt=on (it rejects "off"); False would otherwise be silently lost.
    with pytest.raises(ValueError, match="device_code_optimize=False.*NVRTC"):
        ProgramOptions(device_code_optimize=False).as_bytes("nvrtc")


def test_ltoir_target_adds_dlto_once():
    assert ProgramOptions().as_bytes("nvrtc", "ltoir") == [b"--dlink-time-opt"]
    assert ProgramOptions(link_time_optimization=True).as_bytes("nvrtc", "ltoir") == \
        [b"--dlink-time-opt"]
    assert ProgramOptions().as_bytes("nvrtc", "cubin") == []


def test_define_macro_forms():
    assert ProgramOptions(define_macro="X").as_bytes("nvrtc") == [b"--define-macro=X"]
    assert ProgramOptions(define_macro=("X", "1")).as_bytes("nvrtc") == [b"--define-macro=X=1"]
    assert ProgramOptions(define_macro=[("X", "1"), ("Y", "2")]).as_bytes("nvrtc") == \
        [b"--define-macro=X=1", b"--define-macro=Y=2"]


def test_bundled_headers_go_to_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    (flag,) = ProgramOptions(use_bundled_headers=True).as_bytes("nvrtc")
    major, minor = nvrtc_version()
    expected = tmp_path / "cuda-python" / "nvrtc-bundled-headers" / f"{major}.{minor}"
    assert flag == f"--use-bundled-headers={expected}".encode()


def test_nvvm_rendering():
    opts = ProgramOptions(arch="sm_90", device_code_optimize=False, debug=True, lineinfo=True,
                          ftz=True, prec_sqrt=False, prec_div=True, fma=False, numba_debug=True)
    assert opts.as_bytes("nvvm") == [b"-arch=compute_90", b"-opt=0", b"-g",
                                     b"-generate-line-info", b"-ftz=1", b"-prec-sqrt=0",
                                     b"-prec-div=1", b"-fma=0", b"-numba-debug"]
    assert ProgramOptions(arch="compute_100a").as_bytes("nvvm", "ltoir") == \
        [b"-arch=compute_100a", b"-gen-lto"]
    assert ProgramOptions(link_time_optimization=True).as_bytes("nvvm") == [b"-gen-lto"]


def test_nvjitlink_rendering_for_ptx_input():
    opts = ProgramOptions(arch="sm_90", max_register_count=64, debug=True, lineinfo=True,
                          device_code_optimize=False, ftz=True, prec_div=False, prec_sqrt=True,
                          fma=False, ptxas_options="-v", split_compile=0, no_cache=True)
    assert opts.as_bytes("nvjitlink") == [
        b"-arch=sm_90", b"-maxrregcount=64", b"-O0", b"-g", b"-lineinfo", b"-ftz=true",
        b"-prec-div=false", b"-prec-sqrt=true", b"-fma=false", b"-Xptxas=-v",
        b"-split-compile=0", b"-no-cache"]


@pytest.mark.parametrize("backend, field, value", [
    ("nvvm", "std", "c++17"),
    ("nvvm", "use_fast_math", True),
    ("nvjitlink", "define_macro", "X"),
    ("nvjitlink", "link_time_optimization", True),
    ("nvrtc", "use_libdevice", True),
    ("nvrtc", "extra_sources", [("a", "x")]),
])
def test_field_the_backend_cannot_honour_is_named(backend, field, value):
    with pytest.raises(ValueError, match=f"ProgramOptions.{field} cannot be used with"):
        ProgramOptions(**{field: value}).as_bytes(backend)


def test_unsupported_field_set_to_false_is_harmless():
    assert ProgramOptions(use_fast_math=False).as_bytes("nvvm") == []


@pytest.mark.parametrize("backend, target", [("nvrtc", "fatbin"), ("nvvm", "cubin"),
                                             ("nvjitlink", "ltoir"), ("nvrtc", 1), ("nvvm", "x")])
def test_as_bytes_takes_any_target_as_cuda_core_does(backend, target):
    # Only "ltoir" changes the flags (the LTO flag); cuda.core checks no target.
    opts = ProgramOptions(arch="sm_90")
    assert opts.as_bytes(backend, target) == opts.as_bytes(backend)


@pytest.mark.parametrize("backend, flag", [("nvrtc", b"--dlink-time-opt"), ("nvvm", b"-gen-lto")])
def test_as_bytes_for_ltoir_adds_the_lto_flag(backend, flag):
    assert flag in ProgramOptions(arch="sm_90").as_bytes(backend, "LTOIR")


@pytest.mark.parametrize("backend", ["driver", "gcc"])
def test_as_bytes_rejects_other_backends(backend):
    with pytest.raises(ValueError, match="backend"):
        ProgramOptions().as_bytes(backend)


# -- validation -----------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, exc, match", [
    ({"arch": "90"}, ValueError, r"ProgramOptions.arch must look like.*did you mean 'sm_90'"),
    ({"arch": "sm90"}, ValueError, "ProgramOptions.arch"),
    ({"arch": "gfx90a"}, ValueError, "ProgramOptions.arch"),
    ({"arch": 90}, CompilerOptionTypeError, "ProgramOptions.arch must be a str"),
    ({"std": "c++98"}, CompilerOptionError, "ProgramOptions.std must be one of"),
    ({"std": 17}, CompilerOptionTypeError, "ProgramOptions.std"),
    ({"device_code_optimize": "off"}, TypeError,
     "ProgramOptions.device_code_optimize must be a bool"),
    ({"debug": "no"}, TypeError, "ProgramOptions.debug must be a bool"),
    ({"max_register_count": 32.0}, TypeError, "ProgramOptions.max_register_count must be an int"),
    ({"max_register_count": np.True_}, TypeError, "ProgramOptions.max_register_count"),
    ({"split_compile": -1}, CompilerOptionError, "ProgramOptions.split_compile"),
    ({"ofast_compile": "fast"}, ValueError, "ProgramOptions.ofast_compile must be one of"),
    ({"optimization_info": "all"}, ValueError, "ProgramOptions.optimization_info"),
    ({"diag_error": [1, 2.0]}, CompilerOptionTypeError, "ProgramOptions.diag_error"),
    ({"diag_error": [1, "x"]}, CompilerOptionError, "ProgramOptions.diag_error"),
    ({"diag_suppress": "12"}, ValueError, "character by character"),
    ({"diag_warn": -1}, CompilerOptionError, "ProgramOptions.diag_warn"),
    ({"ptxas_options": ["-v", 3]}, CompilerOptionTypeError, "ProgramOptions.ptxas_options"),
    ({"pre_include": ""}, ValueError, "ProgramOptions.pre_include must not be empty"),
    ({"include_path": 5}, TypeError, "ProgramOptions.include_path"),
    ({"define_macro": ("A", 1)}, TypeError, "ProgramOptions.define_macro"),
    ({"define_macro": [("A", "1", "2")]}, ValueError, "ProgramOptions.define_macro"),
    ({"undefine_macro": "A\0B"}, ValueError, "ProgramOptions.undefine_macro"),
    ({"time": True}, TypeError, "ProgramOptions.time"),
    ({"time": 3.0}, TypeError, "ProgramOptions.time"),
    ({"frandom_seed": 1.5}, TypeError, "ProgramOptions.frandom_seed"),
    ({"pch_dir": ""}, ValueError, "ProgramOptions.pch_dir"),
    ({"name": 3}, TypeError, "ProgramOptions.name"),
    ({"extra_sources": [("a",)]}, TypeError, "ProgramOptions.extra_sources"),
    ({"extra_sources": [("a", 3)]}, TypeError, "ProgramOptions.extra_sources"),
    ({"extra_sources": "x"}, TypeError, "ProgramOptions.extra_sources"),
    ({"use_libdevice": "off"}, TypeError, "ProgramOptions.use_libdevice"),
])
def test_validation_names_the_field(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        ProgramOptions(**kwargs)


def test_an_empty_include_path_is_passed_on_as_cuda_core_does():
    # NVRTC takes --include-path= (no path); the other empty str options it refuses, so they
    # are refused here with its class.
    assert ProgramOptions(include_path="").as_bytes("nvrtc") == [b"--include-path="]
    for field in ("pre_include", "undefine_macro", "define_macro", "time", "pch_dir"):
        with pytest.raises(CompilerOptionError, match=f"ProgramOptions.{field}"):
            ProgramOptions(**{field: ""})


def test_integer_fields_take_numpy_integers():
    # cuda_core._checks: an int field takes any __index__ object, and Python's bool (an int,
    # as for cuda.core), rendered as its number; NumPy's bool is not an int.
    opts = ProgramOptions(arch="sm_90", max_register_count=np.int32(32),
                          split_compile=np.uint8(0), diag_warn=[np.int64(20)])
    assert opts.as_bytes("nvrtc") == [b"-arch=sm_90", b"--maxrregcount=32",
                                      b"--diag-warn=20", b"--split-compile=0"]
    opts = ProgramOptions(arch="sm_90", max_register_count=True, split_compile=False)
    assert opts.as_bytes("nvrtc") == [b"-arch=sm_90", b"--maxrregcount=1",
                                      b"--split-compile=0"]
    with pytest.raises(TypeError, match="ProgramOptions.split_compile must be an int or None, "
                                        "not numpy.bool"):
        ProgramOptions(split_compile=np.False_)


@pytest.mark.parametrize("field", ["ptxas_options", "include_path", "pre_include",
                                   "define_macro", "undefine_macro", "diag_error",
                                   "diag_suppress", "diag_warn", "extra_sources"])
@pytest.mark.parametrize("empty", [[], ()])
def test_an_empty_list_option_means_none(field, empty):
    # As cuda.core reads them: nothing rendered, and no backend refuses what is not there
    # (extra_sources is NVVM's only).
    opts = ProgramOptions(arch="sm_90", **{field: empty})
    assert opts.as_bytes("nvrtc") == [b"-arch=sm_90"]


def test_dict_options_are_accepted_and_unknown_keys_named():
    prog = Program(KERNEL, "c++", {"arch": "sm_90", "std": "c++17"})
    assert prog.compile("ptx").code.startswith(b"//")
    with pytest.raises(TypeError, match="'stdd'"):
        Program(KERNEL, "c++", {"arch": "sm_90", "stdd": "c++17"})


# -- every field accepted by NVRTC in a real compile ---------------------------------------------

def compile_with(tmp_path, field, value, target="cubin"):
    extra = {}
    if field == "numba_debug":
        extra["debug"] = True
    if field == "device_float128":
        extra["arch"] = "sm_100"  # NVRTC allows __float128 from sm_100 on
    if field in ("link_time_optimization", "gen_opt_lto"):
        target = "ltoir"
    if field == "pre_include":
        (tmp_path / "inc").mkdir(exist_ok=True)
        (tmp_path / "inc" / "pre.h").write_text("#define PRE_INCLUDED 1\n")
        extra["include_path"] = tmp_path / "inc"
    if field == "use_pch":
        # A header and a PCH made from it, then a compile that uses it.
        (tmp_path / "h.h").write_text("template <typename T> __device__ T twice(T x) "
                                      "{ return 2 * x; }\n")
        src = '#include "h.h"\n' + KERNEL
        Program(src, "c++", ProgramOptions(arch="sm_90", include_path=tmp_path,
                                           create_pch=value)).compile("cubin")
        prog = Program(src, "c++", ProgramOptions(arch="sm_90", include_path=tmp_path,
                                                  use_pch=value))
        return prog, prog.compile(target)
    opts = {"arch": "sm_90", **extra, field: value}
    prog = Program(KERNEL, "c++", ProgramOptions(**opts))
    return prog, prog.compile(target)


@pytest.mark.parametrize("field", sorted(set(field_cases(pathlib.Path("/t"))) - {"arch"}))
def test_nvrtc_accepts_every_field(field, tmp_path, monkeypatch):
    if field == "use_bundled_headers":
        if nvrtc_version() < (13, 3):
            pytest.skip(f"bundled headers need NVRTC 13.3+, this is {nvrtc_version()}")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if field in ("device_float128", "fdevice_time_trace", "ofast_compile", "use_pch"):
        skip_before_checked_nvrtc(field)
    (tmp_path / "inc").mkdir(exist_ok=True)
    (tmp_path / "pch").mkdir(exist_ok=True)
    value, flags = field_cases(tmp_path)[field]
    try:
        prog, obj = compile_with(tmp_path, field, value)
    except NVRTCError as exc:
        # Every flag was checked against NVRTC 13.3; an older NVRTC may not know a newer one.
        flag = flags[0].split(b"=")[0].decode() if flags else ""
        if nvrtc_version() < (13, 3) and flag and f"unrecognized option {flag}" in exc.log:
            pytest.skip(f"NVRTC {nvrtc_version()} does not know {flag}")
        raise
    assert obj.code
    if field == "time":
        assert (tmp_path / "t.csv").stat().st_size > 0
    if field == "fdevice_time_trace":
        assert (tmp_path / "trace.json").stat().st_size > 0  # NVRTC appends .json
    if field == "create_pch":
        assert prog.pch_status == "created" and (tmp_path / "x.pch").is_file()
    if field == "pch":
        assert prog.pch_status in ("created", "not_attempted")


def test_pch_dir_with_automatic_pch(tmp_path):
    skip_before_checked_nvrtc("pch")
    (tmp_path / "h.h").write_text("template <typename T> __device__ T twice(T x) "
                                  "{ return 2 * x; }\n")
    (tmp_path / "pch").mkdir()
    opts = ProgramOptions(arch="sm_90", pch=True, pch_dir=tmp_path / "pch", include_path=tmp_path)
    prog = Program('#include "h.h"\n' + KERNEL, "c++", opts)
    prog.compile("cubin")
    assert prog.pch_status == "created"
    assert list((tmp_path / "pch").iterdir()), "no PCH written to pch_dir"


def test_define_macro_reaches_the_source():
    src = "#if !defined(A) || B != 2\n#error macros missing\n#endif\n" + KERNEL
    Program(src, "c++", ProgramOptions(arch="sm_90", define_macro=["A", ("B", "2")])).compile(
        "ptx")
    with pytest.raises(Exception, match="macros missing"):
        Program(src, "c++", ProgramOptions(arch="sm_90", define_macro="A")).compile("ptx")


def test_std_values_reach_nvrtc():
    src = "#if __cplusplus < 202002L\n#error not c++20\n#endif\n" + KERNEL
    Program(src, "c++", ProgramOptions(arch="sm_90", std="c++20")).compile("ptx")
    with pytest.raises(Exception, match="not c\\+\\+20"):
        Program(src, "c++", ProgramOptions(arch="sm_90", std="c++17")).compile("ptx")


def test_time_trace_named_by_an_int(tmp_path, monkeypatch):
    # As cuda.core: an int is the file's name, in the working directory.
    skip_before_checked_nvrtc("fdevice_time_trace")
    monkeypatch.chdir(tmp_path)
    Program(KERNEL, "c++", ProgramOptions(arch="sm_90", fdevice_time_trace=1)).compile("cubin")
    assert [p.name for p in tmp_path.iterdir()] and all(p.name.startswith("1")
                                                        for p in tmp_path.iterdir())


@pytest.mark.parametrize("where", ["missing_dir/trace", "."])
def test_time_trace_needs_an_existing_directory(tmp_path, where):
    # NVRTC would abort the process when it cannot open the file; we refuse first.
    target = tmp_path if where == "." else tmp_path / where
    prog = Program(KERNEL, "c++", ProgramOptions(arch="sm_90", fdevice_time_trace=target))
    with pytest.raises(ValueError, match="ProgramOptions.fdevice_time_trace"):
        prog.compile("cubin")


# -- the object itself ----------------------------------------------------------------------------

def test_signature_lists_every_field_with_its_default():
    import inspect

    params = list(inspect.signature(ProgramOptions).parameters.values())
    fields = dataclasses.fields(ProgramOptions)
    assert [p.name for p in params] == [f.name for f in fields]
    assert all(p.default == f.default for p, f in zip(params, fields))
    assert all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params)


def test_positional_and_keyword_arguments():
    opts = ProgramOptions("kernels", "sm_80", True)
    assert (opts.name, opts.arch, opts.relocatable_device_code) == ("kernels", "sm_80", True)
    with pytest.raises(TypeError, match="multiple values for argument 'arch'"):
        ProgramOptions("kernels", "sm_80", arch="sm_90")
    with pytest.raises(TypeError, match="at most 55 positional"):
        ProgramOptions(*([None] * 56))
    with pytest.raises(TypeError, match="unexpected keyword argument 'degub'"):
        ProgramOptions(degub=True)


def test_none_means_the_default():
    assert ProgramOptions(name=None).name == "default_program"
    assert ProgramOptions(debug=None, arch=None) == ProgramOptions()
    assert vars(ProgramOptions(debug=None, std="c++17")) == {"std": "c++17"}


def test_assignment_is_checked():
    opts = ProgramOptions(arch="sm_90")
    opts.debug = True
    opts.define_macro = ["A", ("B", "1")]
    assert opts.as_bytes("nvrtc") == [b"-arch=sm_90", b"--device-debug",
                                      b"--define-macro=A", b"--define-macro=B=1"]
    with pytest.raises(TypeError, match="ProgramOptions.debug must be a bool"):
        opts.debug = "False"
    with pytest.raises(ValueError, match="ProgramOptions.arch must look like"):
        opts.arch = "90"
    with pytest.raises(AttributeError, match="ProgramOptions has no field 'degub'"):
        opts.degub = True
    assert opts.debug is True and opts.arch == "sm_90"  # a refused value changes nothing
    opts.debug = None
    opts.name = None
    assert opts.debug is None and opts.name == "default_program"
    assert vars(opts) == {"arch": "sm_90", "define_macro": ["A", ("B", "1")]}


def test_repr_shows_the_fields_that_are_set():
    assert repr(ProgramOptions(std="c++17", arch="sm_90")) == \
        "ProgramOptions(name='default_program', arch='sm_90', std='c++17')"


def test_dataclass_helpers_copy_and_pickle():
    import copy
    import pickle

    opts = ProgramOptions(arch="sm_90", debug=True, include_path=["/a"])
    assert dataclasses.is_dataclass(opts)
    assert dataclasses.asdict(opts)["debug"] is True and dataclasses.asdict(opts)["std"] is None
    changed = dataclasses.replace(opts, debug=None, std="c++20")
    assert (changed.debug, changed.std, changed.include_path) == (None, "c++20", ["/a"])
    assert copy.copy(opts) == opts and copy.deepcopy(opts) == opts
    assert pickle.loads(pickle.dumps(opts)) == opts
    assert opts != ProgramOptions(arch="sm_90")
    with pytest.raises(TypeError, match="unhashable"):
        hash(opts)


@pytest.mark.parametrize("kwargs, flags", [
    ({"name": ""}, []),
    ({"diag_suppress": "1"}, [b"--diag-suppress=1"]),
    ({"diag_suppress": ["12", 34]}, [b"--diag-suppress=12,34"]),
    ({"fdevice_time_trace": 1}, [b"--fdevice-time-trace=1"]),
    ({"ftz": "yes"}, [b"--ftz=true"]),
    ({"ftz": ""}, [b"--ftz=false"]),
    ({"max_register_count": -1}, [b"--maxrregcount=-1"]),
    ({"max_register_count": 0}, [b"--maxrregcount=0"]),
])
def test_values_cuda_core_takes_are_taken(kwargs, flags):
    # Each is what cuda.core 1.2.2 passes NVRTC for the value (its compile succeeds).
    opts = ProgramOptions(arch="sm_90", **kwargs)
    assert opts.as_bytes("nvrtc")[1:] == flags
    assert ProgramOptions(**kwargs).name == kwargs.get("name", "default_program")


def test_compiler_option_error_is_the_compilers_class():
    from cuda.bindings import nvjitlink

    with pytest.raises(CompilerOptionError) as info:
        ProgramOptions(arch="bogus")
    exc = info.value
    assert isinstance(exc, NVRTCError) and isinstance(exc, nvjitlink.nvJitLinkError)
    assert isinstance(exc, ValueError) and not isinstance(exc, TypeError)
    again = pickle.loads(pickle.dumps(exc))
    assert type(again) is CompilerOptionError and str(again) == str(exc)
    with pytest.raises(CompilerOptionTypeError) as info:
        ProgramOptions(ptxas_options=[1])
    assert isinstance(info.value, TypeError) and isinstance(info.value, CompilerOptionError)
