"""ObjectCode and Kernel: constructors, pickling, equality (CPU); loading, kernels, attributes,
occupancy and argument layout (GPU)."""

import copy
import ctypes
import gc
import json
import pickle
import types
import weakref

import cloudpickle
import numpy as np
import pytest

from helpers import cuda_include_dir, has_gpu, run_python, skip_if_driver_cannot_jit

from cuda_core import CUDAError, Kernel, ObjectCode, Program, ProgramOptions

FACTORIES = {
    "cubin": ObjectCode.from_cubin,
    "ptx": ObjectCode.from_ptx,
    "ltoir": ObjectCode.from_ltoir,
    "fatbin": ObjectCode.from_fatbin,
    "object": ObjectCode.from_object,
    "library": ObjectCode.from_library,
}


# -- ObjectCode (CPU) ---------------------------------------------------------------------------

def test_not_constructible():
    with pytest.raises(RuntimeError, match="ObjectCode.from_cubin"):
        ObjectCode()
    with pytest.raises(RuntimeError, match="get_kernel"):
        Kernel()


@pytest.mark.parametrize("code_type", sorted(FACTORIES))
def test_factories_from_bytes(code_type):
    obj = FACTORIES[code_type](b"\x01\x02image", name="n", symbol_mapping={"a<int>": "_Z1aIiEvv"})
    assert obj.code_type == code_type
    assert obj.code == b"\x01\x02image"
    assert obj.name == "n"
    assert obj.symbol_mapping == {"a<int>": "_Z1aIiEvv"}


@pytest.mark.parametrize("code_type", sorted(FACTORIES))
def test_factories_from_files(code_type, tmp_path):
    path = tmp_path / f"image.{code_type}"
    path.write_bytes(b"\x7fELF-ish")
    for given in (path, str(path)):
        obj = FACTORIES[code_type](given)
        assert obj.code == str(path) and obj.code_type == code_type


def test_relative_paths_become_absolute(tmp_path, monkeypatch):
    (tmp_path / "k.cubin").write_bytes(b"x")
    monkeypatch.chdir(tmp_path)
    assert ObjectCode.from_cubin("k.cubin").code == str(tmp_path / "k.cubin")


def test_ptx_text_versus_ptx_path(tmp_path):
    text = ".version 8.0\n.target sm_90\n.address_size 64\n"
    assert ObjectCode.from_ptx(text).code == text.encode()
    (tmp_path / "k.ptx").write_text(text)
    assert ObjectCode.from_ptx(str(tmp_path / "k.ptx")).code == str(tmp_path / "k.ptx")
    # Only PTX takes text: a cubin given as a str is always a path.
    with pytest.raises(FileNotFoundError, match="from_cubin"):
        ObjectCode.from_cubin(text)


@pytest.mark.parametrize("module, exc, match", [
    (b"", ValueError, "module is empty"),
    ("", ValueError, "empty path"),
    ("/no/such/file.cubin", FileNotFoundError, "no file at '/no/such/file.cubin'"),
    (123, TypeError, "module must be bytes"),
    (["x"], TypeError, "module must be bytes"),
])
def test_bad_module(module, exc, match):
    with pytest.raises(exc, match=match):
        ObjectCode.from_cubin(module)


def test_bad_name_and_symbol_mapping():
    with pytest.raises(TypeError, match="name must be a str"):
        ObjectCode.from_cubin(b"x", name=3)
    with pytest.raises(TypeError, match="symbol_mapping must be a dict"):
        ObjectCode.from_cubin(b"x", symbol_mapping=[("a", "b")])
    with pytest.raises(TypeError, match="symbol_mapping keys and values"):
        ObjectCode.from_cubin(b"x", symbol_mapping={"a": 3})


def test_bytes_like_inputs_and_bytes_mapping():
    obj = ObjectCode.from_cubin(bytearray(b"abc"), symbol_mapping={b"k<int>": b"_Zk"})
    assert obj.code == b"abc" and isinstance(obj.code, bytes)
    assert obj.symbol_mapping == {"k<int>": "_Zk"}


def test_symbol_mapping_is_a_copy():
    obj = ObjectCode.from_cubin(b"x", symbol_mapping={"a": "b"})
    obj.symbol_mapping["c"] = "d"
    assert obj.symbol_mapping == {"a": "b"}


@pytest.mark.parametrize("dumps, loads", [(pickle.dumps, pickle.loads),
                                          (cloudpickle.dumps, pickle.loads)])
def test_pickle_round_trip(dumps, loads, tmp_path):
    compiled = Program('extern "C" __global__ void k() {}\n'
                       'template <typename T> __global__ void t(T) {}', "c++",
                       {"arch": "sm_90", "name": "prog"}).compile(
        "cubin", name_expressions=["t<int>"])
    (tmp_path / "k.ptx").write_text(".version 8.0\n")
    for obj in (compiled, ObjectCode.from_ptx(str(tmp_path / "k.ptx"))):
        back = loads(dumps(obj))
        assert type(back) is ObjectCode
        assert back is not obj and back != obj  # another library, as in cuda.core
        assert (back.code, back.code_type, back.name, back.symbol_mapping) == \
            (obj.code, obj.code_type, obj.name, obj.symbol_mapping)


def test_eq_and_hash_are_the_objects():
    # As cuda.core's, which compares the library each ObjectCode loads: the same code twice is
    # two libraries (ours needs no driver to say so).
    a = ObjectCode.from_cubin(b"same", name="a")
    b = ObjectCode.from_cubin(b"same", name="a")
    assert a == a and hash(a) == hash(a)
    assert a != b and a != copy.copy(a)
    assert a != b"same"
    assert len({a, b, a}) == 2


def test_weakref():
    obj = ObjectCode.from_cubin(b"x")
    ref = weakref.ref(obj)
    assert ref() is obj
    del obj
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("code_type", ["ltoir", "object", "library"])
def test_unloadable_code_says_to_link(code_type):
    obj = FACTORIES[code_type](b"x")
    for use in (lambda: obj.get_kernel("k"), lambda: obj.handle, lambda: obj.get_module()):
        with pytest.raises(ValueError, match="cannot be loaded: link it"):
            use()


def test_get_kernel_checks_the_name():
    obj = ObjectCode.from_cubin(b"x")
    with pytest.raises(TypeError, match="name must be a str or bytes"):
        obj.get_kernel(3)
    with pytest.raises(ValueError, match="invalid kernel name"):  # C would read "k"
        obj.get_kernel("k\0x")


@pytest.mark.skipif(has_gpu(), reason="checks the error where there is no driver")
def test_loading_without_a_driver_names_the_cause():
    with pytest.raises(CUDAError, match="CUDA driver not found|no CUDA-capable GPU"):
        ObjectCode.from_cubin(b"\x7fELF").get_kernel("k")


def test_repr():
    assert repr(ObjectCode.from_cubin(b"abc", name="n")) == "<ObjectCode 'n' cubin 3 bytes>"


# -- Kernel (CPU) -------------------------------------------------------------------------------

def test_kernel_from_handle_checks():
    with pytest.raises(ValueError, match="NULL"):
        Kernel.from_handle(0)
    with pytest.raises(TypeError, match="handle must be an int"):
        Kernel.from_handle("0x10")
    with pytest.raises(TypeError, match="handle must be an int, not numpy.bool"):
        Kernel.from_handle(np.True_)
    with pytest.raises(ValueError, match="handle"):
        Kernel.from_handle(-5)
    with pytest.raises(TypeError, match="mod must be an ObjectCode"):
        Kernel.from_handle(0x1000, mod=b"x")


def test_kernel_eq_hash_weakref_by_handle():
    from cuda.bindings import driver

    a = Kernel.from_handle(0x1000)
    b = Kernel.from_handle(driver.CUkernel(0x1000), mod=ObjectCode.from_cubin(b"x"))
    c = Kernel.from_handle(0x2000)
    assert a == b and hash(a) == hash(b) and a != c
    assert int(a.handle) == 0x1000 and isinstance(a.handle, driver.CUkernel)
    assert weakref.ref(a)() is a


def test_views_are_not_constructible():
    from cuda_core._kernel_views import KernelAttributes
    from cuda_core._kernel_views import KernelOccupancy

    with pytest.raises(RuntimeError, match="Kernel.attributes"):
        KernelAttributes()
    with pytest.raises(RuntimeError, match="Kernel.occupancy"):
        KernelOccupancy()


# -- GPU ----------------------------------------------------------------------------------------

KERNELS = r"""
#include <cuda_fp16.h>

struct Mixed { char c; double d; int i; };

extern "C" __global__ void many_kinds(float* p, char c, short s, int i, long long ll, float f,
                                      double d, __half h, Mixed m, int* q) {}
extern "C" __global__ void no_args() {}
extern "C" __global__ void twenty(int a0, int a1, int a2, int a3, int a4, int a5, int a6,
                                  int a7, int a8, int a9, int a10, int a11, int a12, int a13,
                                  int a14, int a15, int a16, int a17, int a18, double a19) {}

extern "C" __global__ void uses_shared(float* out) {
    __shared__ float buf[256];
    buf[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = buf[255 - threadIdx.x];
}

__constant__ float coeffs[16];
extern "C" __global__ void uses_const(float* out) { out[threadIdx.x] = coeffs[threadIdx.x % 16]; }

template <typename T> __global__ void fill(T* out, T value) { out[threadIdx.x] = value; }

#if __CUDA_ARCH__ >= 900
extern "C" __global__ void __cluster_dims__(2, 1, 1) clustered(float* out) { out[0] = 1.0f; }
#endif
"""

ATTRIBUTES = {
    "max_threads_per_block": int, "shared_size_bytes": int, "const_size_bytes": int,
    "local_size_bytes": int, "num_regs": int, "ptx_version": int, "binary_version": int,
    "cache_mode_ca": bool, "max_dynamic_shared_size_bytes": int,
    "preferred_shared_memory_carveout": int, "cluster_size_must_be_set": bool,
    "required_cluster_width": int, "required_cluster_height": int,
    "required_cluster_depth": int, "non_portable_cluster_size_allowed": bool,
    "cluster_scheduling_policy_preference": int,
}


@pytest.fixture
def module(dev):
    opts = ProgramOptions(arch="sm_" + dev.arch, include_path=cuda_include_dir(), name="kernels")
    return Program(KERNELS, "c++", opts).compile("cubin", name_expressions=["fill<float>",
                                                                            "fill<int>"])


@pytest.mark.gpu
def test_get_kernel_plain_template_and_bytes(module):
    from cuda.bindings import driver

    k = module.get_kernel("many_kinds")
    assert isinstance(k, Kernel) and isinstance(k.handle, driver.CUkernel)
    assert module.get_kernel(b"many_kinds") == k
    f = module.get_kernel("fill<float>")
    i = module.get_kernel("fill<int>")
    assert f != i and f.num_arguments == i.num_arguments == 2
    assert module.get_kernel(module.symbol_mapping["fill<float>"]) == f
    assert isinstance(module.handle, driver.CUlibrary) and int(module.handle) != 0
    assert isinstance(module.get_module(), driver.CUmodule)


@pytest.mark.gpu
def test_missing_kernel_is_a_cuda_error(module):
    with pytest.raises(CUDAError, match="no kernel 'not_there'") as info:
        module.get_kernel("not_there")
    assert info.value.name == "CUDA_ERROR_NOT_FOUND"


@pytest.mark.gpu
def test_ptx_and_file_images_load(dev, tmp_path):
    arch = "sm_" + dev.arch
    src = 'extern "C" __global__ void k(int* p) { *p = 1; }'
    ptx = Program(src, "c++", {"arch": arch}).compile("ptx")
    skip_if_driver_cannot_jit(ptx.code)
    assert ptx.get_kernel("k").num_arguments == 1
    cubin = Program(src, "c++", {"arch": arch}).compile("cubin")
    (tmp_path / "k.cubin").write_bytes(cubin.code)
    assert ObjectCode.from_cubin(tmp_path / "k.cubin").get_kernel("k").num_arguments == 1
    assert ObjectCode.from_ptx(ptx.code.decode()).get_kernel("k").num_arguments == 1


@pytest.mark.gpu
def test_bad_image_fails_to_load_with_a_cuda_error(dev):
    # No ELF or fatbin magic (so the driver reads no header past the end): taken as PTX text.
    with pytest.raises(CUDAError, match="loading ObjectCode 'junk'"):
        ObjectCode.from_cubin(b"this is not a device image", name="junk").get_kernel("k")


@pytest.mark.gpu
def test_arguments_info_follows_the_c_layout(module):
    class Mixed(ctypes.Structure):
        _fields_ = [("c", ctypes.c_char), ("d", ctypes.c_double), ("i", ctypes.c_int)]

    class Params(ctypes.Structure):  # the kernel's parameters laid out as a C struct
        _fields_ = [("p", ctypes.c_void_p), ("c", ctypes.c_char), ("s", ctypes.c_short),
                    ("i", ctypes.c_int), ("ll", ctypes.c_longlong), ("f", ctypes.c_float),
                    ("d", ctypes.c_double), ("h", ctypes.c_uint16), ("m", Mixed),
                    ("q", ctypes.c_void_p)]

    expected = [(getattr(Params, name).offset, getattr(Params, name).size)
                for name, _ in Params._fields_]
    k = module.get_kernel("many_kinds")
    info = k.arguments_info
    assert k.num_arguments == 10
    assert [(p.offset, p.size) for p in info] == expected
    assert info[8].size == ctypes.sizeof(Mixed) == 24
    assert info[0]._fields == ("offset", "size")


@pytest.mark.gpu
def test_arguments_info_edge_cases(module):
    assert module.get_kernel("no_args").num_arguments == 0
    assert module.get_kernel("no_args").arguments_info == []
    twenty = module.get_kernel("twenty")  # more parameters than are kept inline
    assert twenty.num_arguments == 20
    assert [tuple(p) for p in twenty.arguments_info] == \
        [(4 * n, 4) for n in range(19)] + [(80, 8)]
    assert module.get_kernel("fill<float>").arguments_info == [(0, 8), (8, 4)]


@pytest.mark.gpu
def test_attributes(dev, module):
    k = module.get_kernel("uses_shared")
    attrs = k.attributes
    for name, kind in ATTRIBUTES.items():
        assert type(getattr(attrs, name)) is kind, name
    assert len(ATTRIBUTES) == 16  # every property the reference lists
    assert attrs.shared_size_bytes == 256 * 4
    assert 1 <= attrs.max_threads_per_block <= dev.properties.max_threads_per_block
    assert attrs.num_regs > 0
    assert attrs.binary_version == int(dev.arch)
    assert attrs.ptx_version > 0
    assert attrs.local_size_bytes >= 0
    assert module.get_kernel("uses_const").attributes.const_size_bytes >= 16 * 4
    assert module.get_kernel("no_args").attributes.shared_size_bytes == 0
    assert attrs.required_cluster_width == attrs.required_cluster_height == 0
    # A per-device view reads the same values for the current device.
    for view in (attrs[dev], attrs[dev.device_id]):
        assert view.device_id == dev.device_id
        assert all(getattr(view, n) == getattr(attrs, n) for n in ATTRIBUTES)
    with pytest.raises(ValueError, match="out of range"):
        attrs[10_000]
    with pytest.raises(TypeError):
        attrs["0"]


@pytest.mark.gpu
def test_cluster_attributes(dev, module):
    if dev.compute_capability < (9, 0):
        pytest.skip("clusters need compute capability 9.0")
    attrs = module.get_kernel("clustered").attributes
    assert (attrs.required_cluster_width, attrs.required_cluster_height,
            attrs.required_cluster_depth) == (2, 1, 1)


@pytest.mark.gpu
def test_occupancy(dev, module):
    occ = module.get_kernel("uses_shared").occupancy
    n = occ.max_active_blocks_per_multiprocessor(256, 0)
    assert 1 <= n <= dev.properties.max_blocks_per_multiprocessor
    fewer = occ.max_active_blocks_per_multiprocessor(256, 32 * 1024)
    assert 1 <= fewer <= n
    result = occ.max_potential_block_size(0, 0)
    assert result._fields == ("min_grid_size", "max_block_size")
    assert 32 <= result.max_block_size <= dev.properties.max_threads_per_block
    assert result.min_grid_size >= dev.properties.multiprocessor_count
    limited = occ.max_potential_block_size(0, 128)
    assert limited.max_block_size <= 128
    smem = occ.available_dynamic_shared_memory_per_block(1, 256)
    assert 0 < smem <= dev.properties.max_shared_memory_per_block_optin


@pytest.mark.gpu
def test_occupancy_with_a_block_size_dependent_shared_memory(module):
    occ = module.get_kernel("uses_shared").occupancy
    asked = []

    def smem(block_size):
        asked.append(block_size)
        return 64 * block_size

    result = occ.max_potential_block_size(smem, 0)
    assert asked and result.max_block_size in asked
    with pytest.raises(ZeroDivisionError):
        occ.max_potential_block_size(lambda bs: 1 // 0, 0)
    with pytest.raises(TypeError, match="dynamic_shared_memory_needed"):
        occ.max_potential_block_size("64", 0)
    with pytest.raises(ValueError, match="block_size"):
        occ.max_active_blocks_per_multiprocessor(0, 0)


# A C callback passed as cuda.bindings' CUoccupancyB2DSize, in both spellings of the wrapper,
# against the driver's own answer (libcuda called through ctypes with the same callback). Run in
# a child: reading the wrapper wrongly makes the driver call garbage, which kills the process.
_C_CALLBACK_OCCUPANCY = r"""
import ctypes, json
from cuda.bindings import driver
from cuda_core import Device, Program, ProgramOptions

dev = Device(0)
dev.set_current()
src = 'extern "C" __global__ void k(float* p) { extern __shared__ float s[]; ' \
      's[threadIdx.x] = p[threadIdx.x]; __syncthreads(); p[threadIdx.x] = s[threadIdx.x] * 2; }'
kernel = Program(src, "c++", ProgramOptions(arch="sm_" + dev.arch)).compile("cubin") \
    .get_kernel("k")
asked = []

def per_block(block_size):
    asked.append(block_size)
    return 66 * block_size  # bytes of dynamic shared memory a block of that size needs

B2D = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_int)
callback = B2D(per_block)
address = ctypes.cast(callback, ctypes.c_void_p).value

cuda = ctypes.CDLL("libcuda.so.1")
grid, block = ctypes.c_int(), ctypes.c_int()
err = cuda.cuOccupancyMaxPotentialBlockSize(ctypes.byref(grid), ctypes.byref(block),
                                            ctypes.c_void_p(int(kernel.handle)), callback,
                                            ctypes.c_size_t(0), ctypes.c_int(512))
assert err == 0, err
occ = kernel.occupancy
by_ptr = occ.max_potential_block_size(driver.CUoccupancyB2DSize(_ptr=address), 512)
called = len(asked)
by_value = occ.max_potential_block_size(driver.CUoccupancyB2DSize(address), 512)
print(json.dumps({"driver": [grid.value, block.value], "by_ptr": list(by_ptr),
                  "by_value": list(by_value), "called": called}))
"""


@pytest.mark.gpu
def test_occupancy_with_a_c_callback_matches_the_driver():
    result = run_python(_C_CALLBACK_OCCUPANCY)
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert got["driver"][1] > 0
    assert got["by_ptr"] == got["driver"]
    assert got["by_value"] == got["driver"]
    assert got["called"] > 0  # the driver really called the C function through our call


@pytest.mark.gpu
def test_cluster_occupancy(dev, module):
    if dev.compute_capability < (9, 0):
        pytest.skip("clusters need compute capability 9.0")
    occ = module.get_kernel("uses_shared").occupancy
    stream = dev.create_stream()
    # Any object with grid, block, cluster and shmem_size stands in for a LaunchConfig.
    config = types.SimpleNamespace(grid=(4, 1, 1), block=(256, 1, 1), cluster=(2, 1, 1),
                                   shmem_size=0)
    assert occ.max_potential_cluster_size(config, stream=stream) >= 2
    assert occ.max_active_clusters(config, stream=stream) >= 1
    with pytest.raises(TypeError, match="config must be a LaunchConfig"):
        occ.max_active_clusters(object(), stream=stream)
    with pytest.raises(TypeError, match="stream"):
        occ.max_active_clusters(config, stream=3)
    stream.close()


@pytest.mark.gpu
def test_kernel_keeps_its_library_alive(dev):
    src = 'extern "C" __global__ void k(int* p, int v) { *p = v; }'
    obj = Program(src, "c++", {"arch": "sm_" + dev.arch}).compile("cubin")
    kernel = obj.get_kernel("k")
    ref = weakref.ref(obj)
    del obj
    gc.collect()
    assert ref() is not None  # the kernel holds it
    assert kernel.attributes.num_regs > 0
    copy = Kernel.from_handle(int(kernel.handle))
    assert copy == kernel and hash(copy) == hash(kernel)
    assert copy.num_arguments == 2
    del kernel, copy
    gc.collect()
    assert ref() is None


def test_close_without_a_load_needs_no_gpu():
    obj = ObjectCode.from_ptx(".version 8.0\n.target sm_80\n", name="p",
                              symbol_mapping={"k<int>": "_Z1kIiEvv"})
    assert not obj.is_closed
    obj.close()
    obj.close()  # idempotent
    assert obj.is_closed
    # The data stays readable; anything that would load the code again is refused.
    assert obj.code.startswith(b".version") and obj.name == "p"
    back = pickle.loads(pickle.dumps(obj))
    assert (back.code, back.name, back.symbol_mapping) == (obj.code, obj.name, obj.symbol_mapping)
    for use in (lambda: obj.get_kernel("k"), lambda: obj.handle, lambda: obj.get_module(),
                lambda: Kernel.from_handle(0x1000, obj)):
        with pytest.raises(RuntimeError, match="this ObjectCode is closed"):
            use()


@pytest.mark.gpu
def test_close_refuses_while_a_kernel_lives(dev):
    src = 'extern "C" __global__ void k(int* p, int v) { *p = v; }'
    obj = Program(src, "c++", {"arch": "sm_" + dev.arch}).compile("cubin")
    kernel = obj.get_kernel("k")
    again = Kernel.from_handle(kernel.handle, obj)  # counted too
    with pytest.raises(RuntimeError, match="2 kernels of it still alive"):
        obj.close()
    assert not obj.is_closed and obj.get_kernel("k") == kernel  # still loaded and usable
    del kernel
    gc.collect()
    with pytest.raises(RuntimeError, match="1 kernel of it still alive"):
        obj.close()
    del again
    gc.collect()
    obj.close()
    assert obj.is_closed
    with pytest.raises(RuntimeError, match="closed"):
        obj.get_kernel("k")


@pytest.mark.gpu
def test_unload_at_collection_and_exit_is_quiet():
    code = (
        "import gc, warnings\n"
        "from cuda_core import CUDAWarning, Device, Program\n"
        # 'always', not 'error': a finalizer swallows the exception an 'error' filter makes of
        # its warning, where 'always' prints it, and stderr must stay empty.
        "warnings.simplefilter('always', CUDAWarning)\n"
        "dev = Device(0); dev.set_current()\n"
        "src = 'extern \"C\" __global__ void k(int* p) { *p = 1; }'\n"
        "for _ in range(3):\n"
        "    k = Program(src, 'c++', {'arch': 'sm_' + dev.arch}).compile('cubin').get_kernel('k')\n"
        "    assert k.num_arguments == 1\n"
        "    del k; gc.collect()\n"
        "keep = Program(src, 'c++').compile('cubin').get_kernel('k')\n"
        "print('ok')\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok" and result.stderr == ""


def test_result_namedtuples_pickle():
    from cuda_core._kernel_views import ParamInfo
    from cuda_core._kernel_views import MaxPotentialBlockSizeOccupancyResult

    for value in (ParamInfo(offset=8, size=4), MaxPotentialBlockSizeOccupancyResult(132, 1024)):
        assert pickle.loads(pickle.dumps(value)) == value


_COMPAT_LIBRARY_LIFETIME = """
import gc, json
import cuda_core.compat
cuda_core.compat.install()
from cuda.bindings import driver
from cuda.core import Device, ObjectCode, Program, ProgramOptions
dev = Device(0)
dev.set_current()
ptx = Program('extern "C" __global__ void k() {}', "c++",
              ProgramOptions(arch=f"sm_{dev.arch}")).compile("ptx").code
code = ObjectCode.from_ptx(ptx)
kernel = code.get_kernel("k")
handle = int(code.handle)
del kernel, code
gc.collect()
# As with cuda.core: the library is still loaded, and the client that took its handle unloads
# it (tests/test_crash_sites.py covers both orders, in and out of compat mode).
(err,) = driver.cuLibraryUnload(handle)
print(json.dumps(err == driver.CUresult.CUDA_SUCCESS))
"""


@pytest.mark.gpu
def test_in_compat_mode_a_collected_object_code_leaves_its_library_to_its_client():
    result = run_python(_COMPAT_LIBRARY_LIFETIME)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) is True
