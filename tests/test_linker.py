"""Linker and LinkerOptions: option rendering and checks, nvJitLink links including LTO (CPU);
the driver-linker fallback and loading the output (GPU)."""

import dataclasses
import pickle
import re
import warnings

import pytest

import cuda_core._linker as linker_module
from helpers import skip_if_driver_cannot_jit
from cuda_core import Linker, LinkerOptions, NVRTCError, ObjectCode, Program, ProgramOptions
from cuda_core._linker import CompilerOptionError, CompilerOptionTypeError
from cuda_core.typing import CompilerBackendType

ARCH = "sm_90"

CALLER = r"""
extern __device__ float lto_helper(float x);
extern "C" __global__ void apply(float* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = lto_helper(a[i]);
}
"""
CALLEE = r"""
__device__ float lto_helper(float x) { return 3.0f * x + 1.0f; }
"""


def lto_objects(arch=ARCH):
    opts = ProgramOptions(arch=arch, relocatable_device_code=True, link_time_optimization=True)
    caller = Program(CALLER, "c++", opts).compile("ltoir")
    callee = Program(CALLEE, "c++", dataclasses.replace(opts, name="callee")).compile("ltoir")
    return caller, callee


# -- LinkerOptions ------------------------------------------------------------------------------

RENDERING = {
    "arch": ("sm_80", [b"-arch=sm_80"]),
    "max_register_count": (64, [b"-maxrregcount=64"]),
    "time": (True, [b"-time"]),
    "verbose": (True, [b"-verbose"]),
    "link_time_optimization": (True, [b"-lto"]),
    "optimization_level": (0, [b"-O0"]),
    "debug": (True, [b"-g"]),
    "lineinfo": (True, [b"-lineinfo"]),
    "ftz": (True, [b"-ftz=true"]),
    "prec_div": (False, [b"-prec-div=false"]),
    "prec_sqrt": (True, [b"-prec-sqrt=true"]),
    "fma": (False, [b"-fma=false"]),
    "kernels_used": (["a", "b"], [b"-kernels-used=a", b"-kernels-used=b"]),
    "variables_used": ("v", [b"-variables-used=v"]),
    "optimize_unused_variables": (True, [b"-optimize-unused-variables"]),
    "ptxas_options": (["-v", "-O2"], [b"-Xptxas=-v", b"-Xptxas=-O2"]),
    "split_compile": (0, [b"-split-compile=0"]),
    "split_compile_extended": (4, [b"-split-compile-extended=4"]),
    "no_cache": (True, [b"-no-cache"]),
}


def test_fields_match_the_reference():
    names = [f.name for f in dataclasses.fields(LinkerOptions)]
    assert len(names) == 22
    assert LinkerOptions().name == "<default linker>"
    assert set(RENDERING) == set(names) - {"name", "ptx", "numba_debug"}


@pytest.mark.parametrize("field", sorted(RENDERING))
def test_rendering(field):
    value, expected = RENDERING[field]
    assert LinkerOptions(**{field: value}).as_bytes("nvjitlink") == expected


def test_ptx_rendering_and_backend_spellings():
    opts = LinkerOptions(link_time_optimization=True, ptx=True)
    assert opts.as_bytes() == [b"-lto", b"-ptx"]
    assert opts.as_bytes("nvJitLink") == opts.as_bytes(CompilerBackendType.NVJITLINK)


def test_as_bytes_driver_is_refused():
    with pytest.raises(ValueError, match="driver's linker takes CUjit_option"):
        LinkerOptions().as_bytes("driver")


def test_numba_debug_is_a_deprecated_no_op():
    with pytest.warns(DeprecationWarning, match="numba_debug"):
        opts = LinkerOptions(numba_debug=True)
    assert opts.as_bytes() == []


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"arch": "90"}, CompilerOptionError, "LinkerOptions.arch"),
    ({"arch": 90}, CompilerOptionTypeError, "LinkerOptions.arch"),
    ({"max_register_count": 1.5}, TypeError, "LinkerOptions.max_register_count"),
    ({"optimization_level": 2}, CompilerOptionError,
     "LinkerOptions.optimization_level must be one of 0, 3"),
    ({"optimization_level": "3"}, CompilerOptionTypeError, "LinkerOptions.optimization_level"),
    ({"verbose": "no"}, TypeError, "LinkerOptions.verbose must be a bool"),
    ({"kernels_used": [1]}, TypeError, "LinkerOptions.kernels_used"),
    ({"ptxas_options": ""}, ValueError, "LinkerOptions.ptxas_options"),
    ({"split_compile": -1}, CompilerOptionError, "LinkerOptions.split_compile"),
    ({"ptxas_options": [1]}, CompilerOptionTypeError, "LinkerOptions.ptxas_options"),
    ({"split_compile_extended": 1.0}, TypeError, "LinkerOptions.split_compile_extended"),
    ({"ptx": True}, ValueError, "LinkerOptions.ptx=True needs link_time_optimization=True"),
    ({"name": 5}, TypeError, "LinkerOptions.name"),
])
def test_validation_names_the_field(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        LinkerOptions(**kwargs)


def test_integer_fields_take_numpy_integers_and_keep_ints():
    import numpy as np

    opts = LinkerOptions(max_register_count=np.int64(64), optimization_level=np.int8(3),
                         split_compile=np.uint16(2))
    assert (opts.max_register_count, opts.optimization_level, opts.split_compile) == (64, 3, 2)
    assert type(opts.max_register_count) is int and type(opts.optimization_level) is int
    assert opts.as_bytes() == [b"-maxrregcount=64", b"-O3", b"-split-compile=2"]


# -- Linker with nvJitLink ----------------------------------------------------------------------

def test_which_backend_is_nvjitlink_here():
    assert Linker.which_backend() == CompilerBackendType.NVJITLINK
    assert Linker.which_backend() == "nvJitLink"


def test_lto_link_to_cubin():
    caller, callee = lto_objects()
    linker = Linker(caller, callee, options=LinkerOptions(arch=ARCH, link_time_optimization=True,
                                                          name="fused"))
    out = linker.link("cubin")
    assert out.code_type == "cubin" and out.code.startswith(b"\x7fELF")
    assert out.name == "fused"
    assert linker.link("cubin") is out  # linking again returns the same output
    assert isinstance(linker.get_error_log(), str) and linker.get_error_log() == ""


def test_lto_link_to_ptx_inlines_the_callee():
    caller, callee = lto_objects()
    linker = Linker(caller, callee, options=LinkerOptions(arch=ARCH, link_time_optimization=True,
                                                          ptx=True))
    out = linker.link("ptx")
    assert out.code_type == "ptx"
    assert re.search(rb"\.entry\s+apply", out.code)
    # After LTO the helper is inlined: no call and no declaration of it remain.
    assert b"lto_helper" not in out.code and b"call" not in out.code
    assert b"fma.rn.f32" in out.code or b"mul" in out.code


def test_link_target_must_match_the_ptx_option():
    caller, callee = lto_objects()
    cubin_linker = Linker(caller, callee, options={"arch": ARCH, "link_time_optimization": True})
    with pytest.raises(ValueError, match="ptx=True"):
        cubin_linker.link("ptx")
    ptx_linker = Linker(caller, callee, options={"arch": ARCH, "link_time_optimization": True,
                                                 "ptx": True})
    with pytest.raises(ValueError, match="call link\\('ptx'\\)"):
        ptx_linker.link("cubin")
    with pytest.raises(ValueError, match="'cubin', 'ptx'"):
        ptx_linker.link("fatbin")


def test_unresolved_symbol_raises_with_the_log():
    caller, _ = lto_objects()
    linker = Linker(caller, options=LinkerOptions(arch=ARCH, link_time_optimization=True))
    with pytest.raises(NVRTCError) as info:
        linker.link("cubin")
    assert "lto_helper" in info.value.log and "lto_helper" in str(info.value)
    assert "lto_helper" in linker.get_error_log()


def test_ptx_inputs_link_and_info_log_is_kept():
    ptx = Program(CALLEE + CALLER.replace("extern __device__ float lto_helper(float x);", ""),
                  "c++", {"arch": ARCH}).compile("ptx")
    linker = Linker(ptx, options=LinkerOptions(arch=ARCH, verbose=True))
    out = linker.link("cubin")
    assert out.code.startswith(b"\x7fELF")
    assert "apply" in linker.get_info_log()
    linker.close()
    assert "apply" in linker.get_info_log()  # still readable after close


def test_rdc_cubins_link():
    opts = ProgramOptions(arch=ARCH, relocatable_device_code=True)
    caller = Program(CALLER, "c++", opts).compile("cubin")
    callee = Program(CALLEE, "c++", opts).compile("cubin")
    out = Linker(caller, callee, options={"arch": ARCH}).link("cubin")
    assert out.code.startswith(b"\x7fELF")


def test_file_inputs(tmp_path):
    caller, callee = lto_objects()
    (tmp_path / "caller.ltoir").write_bytes(caller.code)
    (tmp_path / "callee.ltoir").write_bytes(callee.code)
    out = Linker(ObjectCode.from_ltoir(tmp_path / "caller.ltoir"),
                 ObjectCode.from_ltoir(str(tmp_path / "callee.ltoir")),
                 options={"arch": ARCH, "link_time_optimization": True}).link("cubin")
    assert out.code.startswith(b"\x7fELF")


def test_bad_input_is_reported_at_construction():
    with pytest.raises(NVRTCError, match="input 0"):
        Linker(ObjectCode.from_ptx(b".version 8.0\n.target sm_90\nnot ptx\n"),
               options={"arch": ARCH})


def test_nvjitlink_failures_are_cuda_bindings_class_too():
    # cuda.core lets nvJitLink's own exception through: code written for it catches that.
    from cuda.bindings import nvjitlink

    caller, _ = lto_objects()
    linker = Linker(caller, options=LinkerOptions(arch=ARCH, link_time_optimization=True))
    with pytest.raises(nvjitlink.nvJitLinkError) as info:
        linker.link("cubin")
    err = info.value
    assert isinstance(err, NVRTCError) and type(err) is linker_module.NvJitLinkError
    assert err.status == err.code and err.status > 0  # nvJitLink's nvJitLinkResult
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is type(err) and str(again) == str(err) and again.log == err.log
    with pytest.raises(nvjitlink.nvJitLinkError, match="input 0"):
        Linker(ObjectCode.from_ptx(b".version 8.0\n.target sm_90\nnot ptx\n"),
               options={"arch": ARCH})
    # LTO IR without link_time_optimization: each major words the refusal its own way.
    from cuda_core._build_config import CUDA_MAJOR

    # compute_10 is refused when the link is created by nvJitLink 13 and 12.9 (sm_10 only by
    # nvJitLink 13); nvJitLink 12.6 takes it and fails on the input.
    with pytest.raises(nvjitlink.nvJitLinkError, match=r"^nvJitLink rejected the options"
                       if CUDA_MAJOR >= 13 else r"^nvJitLink rejected (the options|input 0)"):
        Linker(caller, options=LinkerOptions(arch="compute_10"))

    refusal = {13: r"ERROR_LTO_NOT_ENABLED \(\d+\)\nERROR 1: LTO-IR input cannot be used "
                   r"without LTO enabled \(-lto\)",
               12: r"ERROR_INTERNAL \(\d+\)\nERROR 1: TODO: nvvm input without LTO"}[CUDA_MAJOR]
    with pytest.raises(nvjitlink.nvJitLinkError,
                       match=rf"^nvJitLink rejected input 0 \('default_program', ltoir\): "
                             rf"{refusal}"):
        Linker(caller, options=LinkerOptions(arch=ARCH))


def test_no_inputs_and_wrong_inputs():
    with pytest.raises(ValueError, match="at least one ObjectCode"):
        Linker(options={"arch": ARCH})
    with pytest.raises(TypeError, match="input 1 must be an ObjectCode, not bytes"):
        caller, _ = lto_objects()
        Linker(caller, b"\x7fELF", options={"arch": ARCH})


def test_close_handle_and_closed_use():
    caller, callee = lto_objects()
    linker = Linker(caller, callee, options={"arch": ARCH, "link_time_optimization": True})
    assert isinstance(linker.handle, int) and linker.handle != 0
    assert not linker.is_closed
    linker.close()
    linker.close()
    assert linker.is_closed
    with pytest.raises(RuntimeError, match="closed"):
        linker.handle
    with pytest.raises(RuntimeError, match="closed"):
        linker.link("cubin")


def test_driver_fallback_refuses_what_it_cannot_do(monkeypatch):
    monkeypatch.setattr(linker_module, "_nvjitlink_available", lambda: False)
    assert Linker.which_backend() == CompilerBackendType.DRIVER
    caller, callee = lto_objects()
    with pytest.raises(ValueError, match="LTO IR, which only nvJitLink can link"):
        Linker(caller, callee, options={"arch": ARCH})
    ptx = Program(CALLEE, "c++", {"arch": ARCH}).compile("ptx")
    with pytest.raises(ValueError, match="LinkerOptions.link_time_optimization, "
                                         "LinkerOptions.ptxas_options"):
        Linker(ptx, options={"arch": ARCH, "link_time_optimization": True,
                             "ptxas_options": "-v"})


# -- GPU ----------------------------------------------------------------------------------------

@pytest.mark.gpu
def test_lto_output_loads_and_runs_the_query(dev):
    arch = "sm_" + dev.arch
    caller, callee = lto_objects(arch)
    out = Linker(caller, callee, options={"arch": arch, "link_time_optimization": True}).link(
        "cubin")
    kernel = out.get_kernel("apply")
    assert kernel.num_arguments == 2
    assert kernel.attributes.binary_version == int(dev.arch)


@pytest.mark.gpu
def test_linker_arch_defaults_to_the_current_device(dev):
    ptx = Program(CALLEE + CALLER.replace("extern __device__ float lto_helper(float x);", ""),
                  "c++").compile("ptx")
    kernel = Linker(ptx).link("cubin").get_kernel("apply")
    assert kernel.attributes.binary_version == int(dev.arch)


@pytest.mark.gpu
def test_driver_fallback_links_ptx(dev, monkeypatch):
    monkeypatch.setattr(linker_module, "_nvjitlink_available", lambda: False)
    arch = "sm_" + dev.arch
    opts = ProgramOptions(arch=arch, relocatable_device_code=True)
    caller = Program(CALLER, "c++", opts).compile("ptx")
    callee = Program(CALLEE, "c++", opts).compile("ptx")
    skip_if_driver_cannot_jit(caller.code)  # the driver's linker JIT-compiles the PTX
    linker = Linker(caller, callee, options={"arch": arch, "verbose": True})
    assert linker.which_backend() == "driver"
    out = linker.link("cubin")
    assert out.code.startswith(b"\x7fELF")
    assert out.get_kernel("apply").num_arguments == 2
    assert isinstance(linker.get_info_log(), str)
    from cuda_core._resource import Resource

    assert isinstance(linker._driver, Resource)  # one lifecycle: close() raises on failure
    linker.close()
    assert linker.is_closed and linker._driver.is_closed and linker._driver.handle == 0
    linker.close()  # idempotent


@pytest.mark.gpu
def test_driver_fallback_reports_unresolved_symbols(dev, monkeypatch):
    monkeypatch.setattr(linker_module, "_nvjitlink_available", lambda: False)
    arch = "sm_" + dev.arch
    caller = Program(CALLER, "c++", {"arch": arch, "relocatable_device_code": True}).compile(
        "ptx")
    skip_if_driver_cannot_jit(caller.code)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(NVRTCError) as info:  # at cuLinkAddData or at cuLinkComplete
            Linker(caller, options={"arch": arch}).link("cubin")
    assert "lto_helper" in info.value.log


@pytest.mark.parametrize("count", [0, -1])
def test_max_register_count_of_no_limit(count):
    # cuda.core passes it to nvJitLink, which links; the driver's linker gets no limit.
    opts = LinkerOptions(arch="sm_90", max_register_count=count)
    assert opts.as_bytes() == [b"-arch=sm_90", f"-maxrregcount={count}".encode()]
    assert [v for _, v in opts._driver_options()] == [90]
