"""The compilers' handles on the one lifecycle (CPU): an NVRTC program, a libNVVM program and an
nvJitLink handle are destroyed exactly once, by close() (which raises an error naming the failed
call) or by collection (where the failure is a CUDAWarning naming the handle, and nothing once
the interpreter is finalizing)."""

import gc
import threading

import pytest

from helpers import run_python

from cuda_core import CUDAWarning, Linker, NVRTCError, Program
from cuda_core._compiler_handles import NvJitLinkHandle, NvrtcProgram, NvvmProgram

ARCH = "sm_90"
KERNEL = 'extern "C" __global__ void k(float* a) { a[threadIdx.x] *= 2.0f; }'
# NVRTC warns about the unused variable: a compile with a log.
WARNS = 'extern "C" __global__ void w(float* a) { int unused; a[0] = 1.0f; }'
NVVM_IR = r"""
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define void @f() {
  ret void
}

!nvvmir.version = !{!0}
!0 = !{i32 2, i32 0}
"""


def nvrtc_program():
    from cuda.bindings import nvrtc

    err, prog = nvrtc.nvrtcCreateProgram(KERNEL.encode(), b"k.cu", 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    return prog


def destroy_behind_its_back(prog):
    """Destroy an nvrtcProgram directly. cuda.bindings zeroes the object it is given, so the
    owner's own destroy later fails cleanly (NVRTC_ERROR_INVALID_PROGRAM), with no double free."""
    from cuda.bindings import nvrtc

    assert nvrtc.nvrtcDestroyProgram(prog) == (nvrtc.nvrtcResult.NVRTC_SUCCESS,)
    assert int(prog) == 0


def collect_one_warning(drop):
    """``drop()`` (which lets go of the last reference) under a warnings recorder; the one
    CUDAWarning it raised."""
    with pytest.warns(CUDAWarning) as record:
        drop()
        gc.collect()
    found = [w for w in record if issubclass(w.category, CUDAWarning)]
    assert len(found) == 1, [str(w.message) for w in record]
    return str(found[0].message)


# -- NVRTC --------------------------------------------------------------------------------------

def test_close_destroys_the_nvrtc_program_once():
    prog = nvrtc_program()
    owner = NvrtcProgram(prog)
    assert owner.handle is prog and not owner.is_closed
    owner.close()
    assert owner.is_closed and int(prog) == 0  # nvrtcDestroyProgram ran (it zeroes prog)
    owner.close()  # idempotent: no second destroy, no error
    with pytest.raises(RuntimeError, match="this NvrtcProgram is closed"):
        owner.handle


def test_collecting_the_owner_destroys_the_nvrtc_program():
    prog = nvrtc_program()
    owner = NvrtcProgram(prog)
    del owner
    gc.collect()
    assert int(prog) == 0


def test_a_failed_nvrtc_destroy_at_close_raises_naming_the_call():
    prog = nvrtc_program()
    owner = NvrtcProgram(prog)
    destroy_behind_its_back(prog)
    with pytest.raises(NVRTCError, match="nvrtcDestroyProgram failed: "
                                         "NVRTC_ERROR_INVALID_PROGRAM") as info:
        owner.close()
    assert info.value.name == "NVRTC_ERROR_INVALID_PROGRAM"
    assert owner.is_closed
    owner.close()  # a failed release is never retried


def test_a_failed_nvrtc_destroy_when_collected_warns_naming_call_handle_and_error():
    prog = nvrtc_program()
    address = int(prog)
    owner = NvrtcProgram(prog)
    destroy_behind_its_back(prog)

    def drop():
        nonlocal owner
        owner = None

    message = collect_one_warning(drop)
    assert message.startswith(f"NvrtcProgram 0x{address:x}: cleanup failed")
    assert "nvrtcDestroyProgram failed: NVRTC_ERROR_INVALID_PROGRAM" in message


def test_program_close_and_collection_go_through_the_owner():
    prog = Program(KERNEL, "c++", {"arch": ARCH})
    handle = prog.handle
    prog.close()
    assert prog.is_closed and int(handle) == 0
    prog.close()

    prog = Program(KERNEL, "c++", {"arch": ARCH})
    handle = prog.handle
    del prog
    gc.collect()
    assert int(handle) == 0


def test_program_close_raises_and_collection_warns_when_the_destroy_fails():
    prog = Program(KERNEL, "c++", {"arch": ARCH})
    destroy_behind_its_back(prog.handle)
    with pytest.raises(NVRTCError, match="nvrtcDestroyProgram"):
        prog.close()
    assert prog.is_closed
    prog.close()  # idempotent

    prog = Program(KERNEL, "c++", {"arch": ARCH})
    address = int(prog.handle)
    destroy_behind_its_back(prog.handle)

    def drop():
        nonlocal prog
        prog = None

    message = collect_one_warning(drop)
    assert f"0x{address:x}" in message and "nvrtcDestroyProgram" in message


def test_each_compile_replaces_the_handle_and_destroys_the_last():
    prog = Program(KERNEL, "c++", {"arch": ARCH})
    prog.compile("ptx")
    first = prog.handle
    prog.compile("ptx")  # an NVRTC program compiles once: a new one, the old destroyed
    assert int(first) == 0 and int(prog.handle) != 0
    prog.close()


def test_no_warning_at_interpreter_exit():
    # A control first: collected before exit, the failed destroy warns on stderr; left to the
    # interpreter's finalization, it is silent.
    code = (
        "import gc, sys\n"
        "from cuda.bindings import nvrtc\n"
        "from cuda_core import Program\n"
        f"prog = Program({KERNEL!r}, 'c++', {{'arch': {ARCH!r}}})\n"
        "nvrtc.nvrtcDestroyProgram(prog.handle)\n"
        "if sys.argv[-1] == 'collect':\n"
        "    del prog\n"
        "    gc.collect()\n"
        "print('done')\n"
    )
    for mode, expect_warning in (("collect", True), ("exit", False)):
        result = run_python(f"import sys; sys.argv.append({mode!r})\n" + code,
                            env={"PYTHONWARNINGS": "always"})
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "done"
        assert ("nvrtcDestroyProgram failed" in result.stderr) is expect_warning, result.stderr


def test_logs_are_written_outside_the_programs_lock():
    # The logs object may close the Program from write(): the log is written once the compile
    # has let go of the Program's lock (under it, this would deadlock).
    prog = Program(WARNS, "c++", {"arch": ARCH})

    class ClosingLog:
        text = ""

        def write(self, text):
            self.text += text
            prog.close()

    log = ClosingLog()
    done = []
    worker = threading.Thread(target=lambda: done.append(prog.compile("ptx", logs=log)))
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), "compile() deadlocked writing its log"
    assert done and done[0].code_type == "ptx"
    assert "unused" in log.text and prog.is_closed


def test_close_during_a_compile_on_another_thread_does_not_crash():
    # close() waits for the compile that holds the handle; it never destroys it mid-compile.
    code = (
        "import threading\n"
        "from cuda_core import Program\n"
        "errors = []\n"
        "for i in range(20):\n"
        f"    prog = Program({KERNEL!r} + f'// {{i}}', 'c++', {{'arch': {ARCH!r}}})\n"
        "    def work():\n"
        "        try:\n"
        "            prog.compile('cubin')\n"
        "        except RuntimeError as exc:\n"
        "            assert 'closed' in str(exc), exc\n"
        "    t = threading.Thread(target=work)\n"
        "    t.start()\n"
        "    prog.close()\n"
        "    t.join()\n"
        "    assert prog.is_closed\n"
        "print('ok')\n"
    )
    result = run_python(code)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


# -- libNVVM and nvJitLink: a destroy that fails (monkeypatched), then the real one ------------

def test_nvvm_program_destroy_failure_raises_at_close_and_warns_when_collected(monkeypatch):
    from cuda.bindings import nvvm

    real_destroy = nvvm.destroy_program
    prog = Program(NVVM_IR, "nvvm", {"arch": "compute_90"})
    prog.compile("ptx")
    handles = []

    def failing_destroy(handle):
        handles.append(handle)
        raise nvvm.nvvmError(nvvm.Result.ERROR_INVALID_PROGRAM)

    monkeypatch.setattr(nvvm, "destroy_program", failing_destroy)
    try:
        address = prog.handle
        with pytest.raises(NVRTCError, match="nvvmDestroyProgram failed: "
                                             "ERROR_INVALID_PROGRAM"):
            prog.close()
        assert prog.is_closed and handles == [address]

        owner = NvvmProgram(nvvm.create_program())
        second = owner.handle

        def drop():
            nonlocal owner
            owner = None

        message = collect_one_warning(drop)
        assert message.startswith(f"NvvmProgram 0x{second:x}: cleanup failed")
        assert "nvvmDestroyProgram failed" in message and handles == [address, second]
    finally:
        monkeypatch.undo()
        for handle in handles:
            real_destroy(handle)


def test_nvjitlink_destroy_failure_raises_at_close_and_warns_when_collected(monkeypatch):
    from cuda.bindings import nvjitlink

    assert Linker.which_backend() == "nvJitLink"  # the CPU suite needs nvJitLink 12.3+
    real_destroy = nvjitlink.destroy
    ptx = Program(KERNEL, "c++", {"arch": ARCH}).compile("ptx")
    linker = Linker(ptx, options={"arch": ARCH})
    handles = []

    def failing_destroy(handle):
        handles.append(handle)
        raise nvjitlink.nvJitLinkError(nvjitlink.Result.ERROR_INTERNAL)

    monkeypatch.setattr(nvjitlink, "destroy", failing_destroy)
    try:
        address = linker.handle
        with pytest.raises(NVRTCError, match="nvJitLinkDestroy failed"):
            linker.close()
        assert linker.is_closed and handles == [address]
        linker.close()  # idempotent
        assert handles == [address]

        owner = NvJitLinkHandle(nvjitlink.create(1, [f"-arch={ARCH}"]))
        second = owner.handle

        def drop():
            nonlocal owner
            owner = None

        message = collect_one_warning(drop)
        assert message.startswith(f"NvJitLinkHandle 0x{second:x}: cleanup failed")
        assert "nvJitLinkDestroy failed" in message and handles == [address, second]
    finally:
        monkeypatch.undo()
        for handle in handles:
            real_destroy(handle)


def test_an_owner_takes_one_handle():
    owner = NvrtcProgram(nvrtc_program())
    other = NvrtcProgram(nvrtc_program())
    with pytest.raises(RuntimeError, match="already owns a handle"):
        owner.__init__(other.handle)
    owner.close()
    other.close()
