"""Program: C++ through NVRTC, NVVM IR through libNVVM, PTX through the linker (CPU; the GPU
tests at the end load what they compile)."""

import gc
import io
import pathlib
import re
import weakref

import pytest

from helpers import run_python, skip_before_checked_nvrtc, skip_if_driver_cannot_jit

from cuda_core import NVRTCError, ObjectCode, Program, ProgramOptions
from cuda_core.typing import CompilerBackendType, SourceCodeType

ARCH = "sm_90"

SAXPY = r"""
extern "C" __global__ void scale(float* a, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] *= s;
}
template <typename T>
__global__ void saxpy(T a, const T* x, T* y, size_t n) {
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
"""

# A hand-written NVVM IR kernel: y[tid] = x[tid] * s, marked as a kernel by nvvm.annotations.
NVVM_IR = r"""
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define void @nvvm_scale(float* %x, float* %y, float %s) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %idx = zext i32 %tid to i64
  %px = getelementptr float, float* %x, i64 %idx
  %v = load float, float* %px
  %r = fmul float %v, %s
  %py = getelementptr float, float* %y, i64 %idx
  store float %r, float* %py
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

!nvvm.annotations = !{!0}
!0 = !{void (float*, float*, float)* @nvvm_scale, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0}
"""

# The same kernel, calling a helper defined in another module (extra_sources) and libdevice.
NVVM_CALLER = NVVM_IR.replace("%r = fmul float %v, %s",
                              "%h = call float @helper(float %v)\n"
                              "  %q = call float @__nv_sqrtf(float %h)\n"
                              "  %r = fmul float %q, %s").replace(
    "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()",
    "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "declare float @helper(float)\n"
    "declare float @__nv_sqrtf(float)")
NVVM_HELPER = r"""
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define float @helper(float %x) {
  %r = fadd float %x, 1.0
  ret float %r
}
!nvvmir.version = !{!0}
!0 = !{i32 2, i32 0}
"""

ELF_MAGIC = b"\x7fELF"


def ptx_entries(ptx: bytes):
    return set(re.findall(rb"\.entry\s+([A-Za-z0-9_$]+)", ptx))


# -- C++ (NVRTC) --------------------------------------------------------------------------------

@pytest.fixture
def cxx():
    return Program(SAXPY, "c++", ProgramOptions(arch=ARCH))


def test_cxx_to_ptx(cxx):
    obj = cxx.compile("ptx")
    assert isinstance(obj, ObjectCode)
    assert obj.code_type == "ptx" and obj.name == "default_program"
    assert obj.code.startswith(b"//") and b".target sm_90" in obj.code
    assert b"scale" in ptx_entries(obj.code)
    assert not obj.code.endswith(b"\0")


def test_cxx_to_cubin(cxx):
    obj = cxx.compile("cubin")
    assert obj.code_type == "cubin" and obj.code.startswith(ELF_MAGIC)


def test_cxx_to_ltoir(cxx):
    obj = cxx.compile("ltoir")
    assert obj.code_type == "ltoir" and len(obj.code) > 16
    assert not obj.code.startswith(ELF_MAGIC) and not obj.code.startswith(b"//")


def test_enum_and_mixed_case_spellings():
    prog = Program(SAXPY, SourceCodeType.CXX, {"arch": ARCH})
    assert prog.compile("PTX").code_type == "ptx"
    assert Program(SAXPY, "C++", {"arch": ARCH}).backend == CompilerBackendType.NVRTC


def test_name_expressions_fill_symbol_mapping(cxx):
    obj = cxx.compile("ptx", name_expressions=("saxpy<float>", b"saxpy<double>"))
    mapping = obj.symbol_mapping
    assert set(mapping) == {"saxpy<float>", "saxpy<double>"}
    lowered = {name.encode() for name in mapping.values()}
    # Each lowered name is an instantiated kernel of the PTX, and they differ.
    assert lowered <= ptx_entries(obj.code) and len(lowered) == 2
    assert all(name.startswith("_Z") for name in mapping.values())
    # symbol_mapping is a copy.
    mapping.clear()
    assert len(obj.symbol_mapping) == 2


def test_symbol_mapping_survives_cubin_and_recompile(cxx):
    first = cxx.compile("cubin", name_expressions=["saxpy<float>"])
    second = cxx.compile("cubin", name_expressions=["saxpy<int>"])
    assert set(first.symbol_mapping) == {"saxpy<float>"}
    assert set(second.symbol_mapping) == {"saxpy<int>"}


def test_invalid_name_expression_raises(cxx):
    with pytest.raises(NVRTCError, match="no_such_template"):
        cxx.compile("ptx", name_expressions=["no_such_template<int>"])


@pytest.mark.parametrize("names, exc", [("saxpy<float>", TypeError), ([3], TypeError),
                                        ([""], ValueError), (5, TypeError)])
def test_name_expressions_are_checked(cxx, names, exc):
    with pytest.raises(exc, match="name"):
        cxx.compile("ptx", name_expressions=names)


def test_compile_error_carries_the_log():
    prog = Program("__global__ void k() { undeclared_identifier_xyz = 1; }", "c++",
                   ProgramOptions(arch=ARCH, name="broken.cu"))
    with pytest.raises(NVRTCError) as info:
        prog.compile("ptx")
    err = info.value
    assert "undeclared_identifier_xyz" in str(err) and "undeclared_identifier_xyz" in err.log
    assert "broken.cu" in err.log
    assert err.name == "NVRTC_ERROR_COMPILATION"


def test_logs_receive_warnings():
    logs = io.StringIO()
    src = '__global__ void k() { int unused_variable_q; }'
    Program(src, "c++", {"arch": ARCH}).compile("ptx", logs=logs)
    assert "unused_variable_q" in logs.getvalue()
    quiet = io.StringIO()
    Program(SAXPY, "c++", {"arch": ARCH}).compile("ptx", logs=quiet)
    assert quiet.getvalue() == ""


def test_logs_must_have_write(cxx):
    with pytest.raises(TypeError, match="logs must be an object with a write"):
        cxx.compile("ptx", logs=[])


def test_program_name_names_the_output():
    obj = Program(SAXPY, "c++", {"arch": ARCH, "name": "my_kernels"}).compile("ptx")
    assert obj.name == "my_kernels"


@pytest.mark.parametrize("code_type, target, supported", [
    ("c++", "fatbin", "'ptx', 'cubin', 'ltoir'"),
    ("c++", "object", "'ptx', 'cubin', 'ltoir'"),
    ("nvvm", "cubin", "'ptx', 'ltoir'"),
    ("ptx", "ltoir", "'cubin', 'ptx'"),
])
def test_unsupported_target_names_the_supported_ones(code_type, target, supported):
    code = {"c++": SAXPY, "nvvm": NVVM_IR, "ptx": None}[code_type]
    if code is None:
        code = Program(SAXPY, "c++", {"arch": ARCH}).compile("ptx").code
    prog = Program(code, code_type, {"arch": ARCH})
    with pytest.raises(ValueError, match=re.escape(supported)):
        prog.compile(target)


def test_cubin_needs_a_real_arch():
    prog = Program(SAXPY, "c++", {"arch": "compute_90"})
    assert prog.compile("ptx").code_type == "ptx"
    with pytest.raises(ValueError, match="real architecture.*'sm_90'"):
        prog.compile("cubin")


def test_lto_option_needs_ltoir_target():
    prog = Program(SAXPY, "c++", {"arch": ARCH, "link_time_optimization": True})
    with pytest.raises(ValueError, match="link_time_optimization=True makes LTO IR"):
        prog.compile("cubin")
    assert prog.compile("ltoir").code_type == "ltoir"


@pytest.mark.parametrize("code, code_type, exc, match", [
    (pathlib.Path("kernel.cu"), "c++", TypeError, "code is a path"),
    (bytearray(b"x"), "c++", TypeError, "must be a str or bytes"),
    (3, "ptx", TypeError, "must be a str or bytes"),
    ("", "ptx", ValueError, "ptx code is empty"),
    (b"", "nvvm", ValueError, "nvvm code is empty"),
    ("a\0b", "c++", ValueError, "NUL"),
    ("x", "cuda", ValueError, "code_type must be one of"),
    ("x", 3, TypeError, "code_type must be a str"),
])
def test_bad_code_is_refused(code, code_type, exc, match):
    with pytest.raises(exc, match=match):
        Program(code, code_type, {"arch": ARCH})


def test_empty_cxx_source_compiles():
    # An empty translation unit, as cuda.core accepts it (numba-cuda links such files).
    assert Program("", "c++", {"arch": ARCH}).compile("ptx").code_type == "ptx"


def test_bytes_code_is_accepted():
    assert Program(SAXPY.encode(), "c++", {"arch": ARCH}).compile("ptx").code_type == "ptx"


def test_handle_close_and_weakref(cxx):
    from cuda.bindings import nvrtc

    assert isinstance(cxx.handle, nvrtc.nvrtcProgram) and int(cxx.handle) != 0
    assert cxx.backend == "NVRTC" and not cxx.is_closed
    ref = weakref.ref(cxx)
    assert ref() is cxx
    cxx.close()
    cxx.close()  # idempotent
    assert cxx.is_closed
    with pytest.raises(RuntimeError, match="closed"):
        cxx.compile("ptx")
    with pytest.raises(RuntimeError, match="closed"):
        cxx.handle


def test_program_is_collected():
    prog = Program(SAXPY, "c++", {"arch": ARCH})
    prog.compile("ptx")
    ref = weakref.ref(prog)
    del prog
    gc.collect()
    assert ref() is None


def test_arch_is_required_without_a_context():
    # A fresh process has no current context (with or without a GPU).
    code = (
        "from cuda_core import Program, Linker, ObjectCode\n"
        "for make in (lambda: Program('__global__ void k(){}', 'c++'),\n"
        "             lambda: Linker(ObjectCode.from_ptx(b'x'))):\n"
        "    try:\n"
        "        make()\n"
        "    except RuntimeError as e:\n"
        "        print('RuntimeError:', e)\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 2
    assert "ProgramOptions.arch is not set" in lines[0]
    assert "LinkerOptions.arch is not set" in lines[1]


def test_pch_status(tmp_path):
    skip_before_checked_nvrtc("create_pch")
    (tmp_path / "h.h").write_text("template <typename T> __device__ T twice(T x) "
                                  "{ return 2 * x; }\n")
    src = '#include "h.h"\n' + SAXPY
    plain = Program(src, "c++", {"arch": ARCH, "include_path": tmp_path})
    assert plain.pch_status is None
    plain.compile("ptx")
    assert plain.pch_status is None
    made = Program(src, "c++", {"arch": ARCH, "include_path": tmp_path,
                                "create_pch": tmp_path / "h.pch"})
    made.compile("ptx")
    assert made.pch_status == "created" and (tmp_path / "h.pch").is_file()
    used = Program(src, "c++", {"arch": ARCH, "include_path": tmp_path,
                                "use_pch": tmp_path / "h.pch"})
    used.compile("ptx")
    assert used.pch_status == "not_attempted"


# -- NVVM IR (libNVVM) --------------------------------------------------------------------------

def test_nvvm_to_ptx():
    prog = Program(NVVM_IR, "nvvm", {"arch": ARCH})
    assert prog.backend == CompilerBackendType.NVVM
    assert isinstance(prog.handle, int)
    obj = prog.compile("ptx")
    assert obj.code_type == "ptx"
    assert ptx_entries(obj.code) == {b"nvvm_scale"}
    assert b".target sm_90" in obj.code


@pytest.mark.parametrize("wrap", [bytes, bytearray, str])
def test_nvvm_code_kinds(wrap):
    code = NVVM_IR if wrap is str else wrap(NVVM_IR.encode())
    assert Program(code, "nvvm", {"arch": ARCH}).compile("ltoir").code_type == "ltoir"


def test_nvvm_extra_sources_and_libdevice():
    opts = ProgramOptions(arch=ARCH, extra_sources=[("helper.ll", NVVM_HELPER)],
                          use_libdevice=True)
    ptx = Program(NVVM_CALLER, "nvvm", opts).compile("ptx").code
    assert ptx_entries(ptx) == {b"nvvm_scale"}
    # Both calls are resolved: helper from the extra module, __nv_sqrtf from libdevice.
    assert b".extern" not in ptx and b"sqrt.rn.f32" in ptx
    # Without them, each stays an unresolved extern function.
    no_helper = Program(NVVM_CALLER, "nvvm", {"arch": ARCH, "use_libdevice": True})
    assert re.search(rb"\.extern \.func[^;]*helper", no_helper.compile("ptx").code)
    no_libdevice = Program(NVVM_CALLER, "nvvm",
                           {"arch": ARCH, "extra_sources": [("helper.ll", NVVM_HELPER)]})
    assert re.search(rb"\.extern \.func[^;]*__nv_sqrtf", no_libdevice.compile("ptx").code)


def test_nvvm_recompiles():
    prog = Program(NVVM_IR, "nvvm", {"arch": ARCH})
    assert prog.compile("ptx").code_type == "ptx"
    assert prog.compile("ltoir").code_type == "ltoir"


def test_nvvm_error_carries_the_log():
    with pytest.raises(NVRTCError) as info:
        Program("this is not llvm ir", "nvvm", {"arch": ARCH, "name": "bad.ll"}).compile("ptx")
    assert "bad.ll" in info.value.log and info.value.log in str(info.value)


def test_nvvm_refuses_name_expressions_and_cxx_options():
    with pytest.raises(ValueError, match="name_expressions apply to C\\+\\+"):
        Program(NVVM_IR, "nvvm", {"arch": ARCH}).compile("ptx", name_expressions=["x"])
    with pytest.raises(ValueError, match="ProgramOptions.std cannot be used with NVVM"):
        Program(NVVM_IR, "nvvm", {"arch": ARCH, "std": "c++17"})


# -- PTX (the linker) ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ptx_code():
    return Program(SAXPY, "c++", {"arch": ARCH}).compile("ptx").code


def test_ptx_to_cubin(ptx_code):
    prog = Program(ptx_code, "ptx", {"arch": ARCH, "max_register_count": 32})
    assert prog.backend == CompilerBackendType.NVJITLINK
    assert isinstance(prog.handle, int)
    obj = prog.compile("cubin")
    assert obj.code_type == "cubin" and obj.code.startswith(ELF_MAGIC)
    assert obj.name == "default_program"


def test_ptx_str_input(ptx_code):
    assert Program(ptx_code.decode(), "ptx", {"arch": ARCH}).compile("cubin").code_type == "cubin"


def test_ptx_to_ptx_is_the_checked_input(ptx_code):
    obj = Program(ptx_code, "ptx", {"arch": ARCH}).compile("ptx")
    assert obj.code_type == "ptx" and obj.code == ptx_code


def test_ptx_error_carries_the_log():
    bad = b".version 8.0\n.target sm_90\n.address_size 64\nthis is not ptx\n"
    with pytest.raises(NVRTCError) as info:
        Program(bad, "ptx", {"arch": ARCH}).compile("cubin")
    assert "syntax error" in info.value.log or "Parsing error" in info.value.log


def test_ptx_refuses_nvrtc_only_options(ptx_code):
    with pytest.raises(ValueError, match="ProgramOptions.define_macro cannot be used with PTX"):
        Program(ptx_code, "ptx", {"arch": ARCH, "define_macro": "X"})


def test_ptx_logs_receive_the_info_log(ptx_code):
    logs = io.StringIO()
    # no_cache: where nvJitLink finds this PTX in the driver's JIT cache, ptxas does not run and
    # writes no info.
    Program(ptx_code, "ptx", {"arch": ARCH, "ptxas_options": "-v", "no_cache": True}).compile(
        "cubin", logs=logs)
    assert "scale" in logs.getvalue()


# -- loading what was compiled (GPU) ------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("target", ["cubin", "ptx"])
def test_compiled_code_loads(dev, target):
    prog = Program(SAXPY, "c++", {"arch": "sm_" + dev.arch})
    obj = prog.compile(target, name_expressions=["saxpy<float>"])
    if target == "ptx":
        skip_if_driver_cannot_jit(obj.code)
    assert obj.get_kernel("scale").num_arguments == 3
    assert obj.get_kernel("saxpy<float>").num_arguments == 4


@pytest.mark.gpu
def test_program_arch_defaults_to_the_current_device(dev):
    prog = Program(SAXPY, "c++")
    assert prog.compile("ptx").code.count(f".target sm_{dev.arch}".encode()) == 1


@pytest.mark.gpu
def test_nvvm_and_ptx_programs_load(dev):
    arch = "sm_" + dev.arch
    ptx = Program(SAXPY, "c++", {"arch": arch}).compile("ptx").code
    cubin = Program(ptx, "ptx", {"arch": arch}).compile("cubin")  # assembled by nvJitLink
    assert cubin.get_kernel("scale").num_arguments == 3
    nvvm_obj = Program(NVVM_IR, "nvvm", {"arch": arch}).compile("ptx")
    skip_if_driver_cannot_jit(nvvm_obj.code)
    assert nvvm_obj.get_kernel("nvvm_scale").num_arguments == 3


# -- construction, state and threads (CPU) ------------------------------------------------------

def test_construction_loads_no_compiler():
    # Program(...) only checks and stores: a program answered by a cache never needs it.
    code = (
        "from cuda_core import Program, ProgramOptions\n"
        "p = Program('__global__ void k() {}', 'c++', ProgramOptions(arch='sm_90'))\n"
        "maps = open('/proc/self/maps').read()\n"
        "assert 'libnvrtc' not in maps, 'NVRTC loaded by Program()'\n"
        "assert p.compile('ptx').code_type == 'ptx'\n"
        "assert 'libnvrtc' in open('/proc/self/maps').read()\n"
        "print('ok')\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_text_that_is_not_valid_unicode_is_refused_at_compile():
    prog = Program("// \ud800\n" + SAXPY, "c++", {"arch": ARCH})
    with pytest.raises(ValueError, match="code is not valid text"):
        prog.compile("ptx")


def test_options_are_read_at_compile():
    opts = ProgramOptions(arch=ARCH)
    prog = Program(SAXPY, "c++", opts)
    opts.arch = "sm_80"
    assert b".target sm_80" in prog.compile("ptx").code


def test_state_before_first_use(cxx):
    assert not cxx.is_closed and cxx.pch_status is None
    assert repr(cxx) == "<Program 'default_program' c++>"
    cxx.close()
    assert cxx.is_closed and repr(cxx) == "<Program 'default_program' c++ closed>"
    with pytest.raises(RuntimeError, match="closed"):
        cxx.compile("ptx")


def test_one_program_compiled_from_several_threads(cxx):
    import threading

    results, errors = [], []
    start = threading.Barrier(4)

    def work():
        try:
            start.wait()
            for _ in range(3):
                results.append(cxx.compile("ptx", name_expressions=["saxpy<float>"]))
        except Exception as exc:  # reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(results) == 12
    assert len({r.code for r in results}) == 1
    assert all(set(r.symbol_mapping) == {"saxpy<float>"} for r in results)
