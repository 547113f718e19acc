"""A device's attributes: ``DeviceProperties``, one cached read-only property per
``CU_DEVICE_ATTRIBUTE_*`` (generated from ``cuda.h`` by tools/gen_device_properties.py), on
the hand-written cache ``_DeviceAttributes``."""

from cuda.bindings cimport cydriver
from libc.string cimport memset

from cuda_core cimport _cuda_compat
from cuda_core._atomic cimport load_byte, load_int, store_byte, store_int
from cuda_core._checks cimport check_ordinal
from cuda_core._errors cimport HANDLE_RETURN

__all__ = ["DeviceProperties"]


cdef class _DeviceAttributes:
    """Reads device attributes once and caches them; DeviceProperties names each one."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("DeviceProperties cannot be instantiated directly; use "
                           "Device.properties")

    cdef int _value(self, cydriver.CUdevice_attribute attr) except? -2:
        # The value is stored before its flag (release) and read after it (acquire): a thread
        # that sees the flag sees the value. Threads that read one attribute at once both ask
        # the driver and store the same value.
        cdef int value = 0
        if load_byte(&self._have[<int>attr]):
            return load_int(&self._values[<int>attr])
        HANDLE_RETURN(cydriver.cuDeviceGetAttribute(&value, attr, self._dev))
        store_int(&self._values[<int>attr], value)
        store_byte(&self._have[<int>attr], 1)
        return value

    cdef object _get(self, cydriver.CUdevice_attribute attr):
        return self._value(attr)

    cdef object _get_bool(self, cydriver.CUdevice_attribute attr):
        return self._value(attr) != 0

    def __reduce__(self):
        # As cuda.core: copy.copy, copy.deepcopy and pickle give another DeviceProperties of
        # the same device, which reads the driver again. (Cython's own pickle lost the cache's
        # zero bytes, and the copy failed with an IndexError.)
        return (_properties_of, (<int>self._dev,))


cdef DeviceProperties new_properties(int device_id):
    cdef DeviceProperties props = DeviceProperties.__new__(DeviceProperties)
    props._dev = device_id
    memset(props._have, 0, sizeof(props._have))
    return props


def _properties_of(device_id):
    """The DeviceProperties of ``device_id`` that ``DeviceProperties.__reduce__`` gives."""
    return new_properties(check_ordinal(device_id, "DeviceProperties: device_id"))


cdef class DeviceProperties(_DeviceAttributes):
    """Every ``CU_DEVICE_ATTRIBUTE_*`` of one device as a read-only property, read from
    the driver on first access and cached. Not constructible: use
    :attr:`Device.properties`.

    .. note:: Each property calls ``cuDeviceGetAttribute`` once.
    """

    # BEGIN GENERATED DeviceProperties (tools/gen_device_properties.py)
    @property
    def max_threads_per_block(self):
        """Maximum number of threads per block (``CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
    @property
    def max_block_dim_x(self):
        """Maximum block dimension X (``CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)
    @property
    def max_block_dim_y(self):
        """Maximum block dimension Y (``CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)
    @property
    def max_block_dim_z(self):
        """Maximum block dimension Z (``CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)
    @property
    def max_grid_dim_x(self):
        """Maximum grid dimension X (``CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)
    @property
    def max_grid_dim_y(self):
        """Maximum grid dimension Y (``CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)
    @property
    def max_grid_dim_z(self):
        """Maximum grid dimension Z (``CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)
    @property
    def max_shared_memory_per_block(self):
        """Maximum shared memory available per block in bytes (``CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)
    @property
    def shared_memory_per_block(self):
        """Deprecated, use CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK (``CU_DEVICE_ATTRIBUTE_SHARED_MEMORY_PER_BLOCK``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_SHARED_MEMORY_PER_BLOCK)
    @property
    def total_constant_memory(self):
        """Memory available on device for __constant__ variables in a CUDA C kernel in bytes (``CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY)
    @property
    def warp_size(self):
        """Warp size in threads (``CU_DEVICE_ATTRIBUTE_WARP_SIZE``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_WARP_SIZE)
    @property
    def max_pitch(self):
        """Maximum pitch in bytes allowed by memory copies (``CU_DEVICE_ATTRIBUTE_MAX_PITCH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAX_PITCH)
    @property
    def max_registers_per_block(self):
        """Maximum number of 32-bit registers available per block (``CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)
    @property
    def registers_per_block(self):
        """Deprecated, use CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK (``CU_DEVICE_ATTRIBUTE_REGISTERS_PER_BLOCK``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_REGISTERS_PER_BLOCK)
    @property
    def clock_rate(self):
        """Typical clock frequency in kilohertz (``CU_DEVICE_ATTRIBUTE_CLOCK_RATE``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_CLOCK_RATE)
    @property
    def texture_alignment(self):
        """Alignment requirement for textures (``CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT)
    @property
    def gpu_overlap(self):
        """Device can possibly copy memory and execute a kernel concurrently. Deprecated. Use instead CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT. (``CU_DEVICE_ATTRIBUTE_GPU_OVERLAP``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_GPU_OVERLAP)
    @property
    def multiprocessor_count(self):
        """Number of multiprocessors on device (``CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
    @property
    def kernel_exec_timeout(self):
        """Specifies whether there is a run time limit on kernels (``CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT)
    @property
    def integrated(self):
        """Device is integrated with host memory (``CU_DEVICE_ATTRIBUTE_INTEGRATED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_INTEGRATED)
    @property
    def can_map_host_memory(self):
        """Device can map host memory into CUDA address space (``CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)
    @property
    def compute_mode(self):
        """Compute mode (See CUcomputemode for details) (``CU_DEVICE_ATTRIBUTE_COMPUTE_MODE``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_COMPUTE_MODE)
    @property
    def maximum_texture1d_width(self):
        """Maximum 1D texture width (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH)
    @property
    def maximum_texture2d_width(self):
        """Maximum 2D texture width (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH)
    @property
    def maximum_texture2d_height(self):
        """Maximum 2D texture height (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT)
    @property
    def maximum_texture3d_width(self):
        """Maximum 3D texture width (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH)
    @property
    def maximum_texture3d_height(self):
        """Maximum 3D texture height (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT)
    @property
    def maximum_texture3d_depth(self):
        """Maximum 3D texture depth (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH)
    @property
    def maximum_texture2d_layered_width(self):
        """Maximum 2D layered texture width (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH)
    @property
    def maximum_texture2d_layered_height(self):
        """Maximum 2D layered texture height (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT)
    @property
    def maximum_texture2d_layered_layers(self):
        """Maximum layers in a 2D layered texture (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS)
    @property
    def maximum_texture2d_array_width(self):
        """Deprecated, use CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_ARRAY_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_ARRAY_WIDTH)
    @property
    def maximum_texture2d_array_height(self):
        """Deprecated, use CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_ARRAY_HEIGHT``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_ARRAY_HEIGHT)
    @property
    def maximum_texture2d_array_numslices(self):
        """Deprecated, use CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_ARRAY_NUMSLICES``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_ARRAY_NUMSLICES)
    @property
    def surface_alignment(self):
        """Alignment requirement for surfaces (``CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT)
    @property
    def concurrent_kernels(self):
        """Device can possibly execute multiple kernels concurrently (``CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS)
    @property
    def ecc_enabled(self):
        """Device has ECC support enabled (``CU_DEVICE_ATTRIBUTE_ECC_ENABLED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_ECC_ENABLED)
    @property
    def pci_bus_id(self):
        """PCI bus ID of the device (``CU_DEVICE_ATTRIBUTE_PCI_BUS_ID``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)
    @property
    def pci_device_id(self):
        """PCI device ID of the device (``CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)
    @property
    def tcc_driver(self):
        """Device is using TCC driver model (``CU_DEVICE_ATTRIBUTE_TCC_DRIVER``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_TCC_DRIVER)
    @property
    def memory_clock_rate(self):
        """Peak memory clock frequency in kilohertz (``CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)
    @property
    def global_memory_bus_width(self):
        """Global memory bus width in bits (``CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)
    @property
    def l2_cache_size(self):
        """Size of L2 cache in bytes (``CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
    @property
    def max_threads_per_multiprocessor(self):
        """Maximum resident threads per multiprocessor (``CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)
    @property
    def async_engine_count(self):
        """Number of asynchronous engines (``CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT)
    @property
    def unified_addressing(self):
        """Device shares a unified address space with the host (``CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)
    @property
    def maximum_texture1d_layered_width(self):
        """Maximum 1D layered texture width (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH)
    @property
    def maximum_texture1d_layered_layers(self):
        """Maximum layers in a 1D layered texture (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS)
    @property
    def can_tex2d_gather(self):
        """Deprecated, do not use. (``CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER)
    @property
    def maximum_texture2d_gather_width(self):
        """Maximum 2D texture width if CUDA_ARRAY3D_TEXTURE_GATHER is set (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH)
    @property
    def maximum_texture2d_gather_height(self):
        """Maximum 2D texture height if CUDA_ARRAY3D_TEXTURE_GATHER is set (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT)
    @property
    def maximum_texture3d_width_alternate(self):
        """Alternate maximum 3D texture width (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE)
    @property
    def maximum_texture3d_height_alternate(self):
        """Alternate maximum 3D texture height (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE)
    @property
    def maximum_texture3d_depth_alternate(self):
        """Alternate maximum 3D texture depth (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE)
    @property
    def pci_domain_id(self):
        """PCI domain ID of the device (``CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)
    @property
    def texture_pitch_alignment(self):
        """Pitch alignment requirement for textures (``CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT)
    @property
    def maximum_texturecubemap_width(self):
        """Maximum cubemap texture width/height (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH)
    @property
    def maximum_texturecubemap_layered_width(self):
        """Maximum cubemap layered texture width/height (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH)
    @property
    def maximum_texturecubemap_layered_layers(self):
        """Maximum layers in a cubemap layered texture (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS)
    @property
    def maximum_surface1d_width(self):
        """Maximum 1D surface width (``CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH)
    @property
    def maximum_surface2d_width(self):
        """Maximum 2D surface width (``CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH)
    @property
    def maximum_surface2d_height(self):
        """Maximum 2D surface height (``CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT)
    @property
    def maximum_surface3d_width(self):
        """Maximum 3D surface width (``CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH)
    @property
    def maximum_surface3d_height(self):
        """Maximum 3D surface height (``CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT)
    @property
    def maximum_surface3d_depth(self):
        """Maximum 3D surface depth (``CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH)
    @property
    def maximum_surface1d_layered_width(self):
        """Maximum 1D layered surface width (``CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH)
    @property
    def maximum_surface1d_layered_layers(self):
        """Maximum layers in a 1D layered surface (``CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS)
    @property
    def maximum_surface2d_layered_width(self):
        """Maximum 2D layered surface width (``CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH)
    @property
    def maximum_surface2d_layered_height(self):
        """Maximum 2D layered surface height (``CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT)
    @property
    def maximum_surface2d_layered_layers(self):
        """Maximum layers in a 2D layered surface (``CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS)
    @property
    def maximum_surfacecubemap_width(self):
        """Maximum cubemap surface width (``CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH)
    @property
    def maximum_surfacecubemap_layered_width(self):
        """Maximum cubemap layered surface width (``CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH)
    @property
    def maximum_surfacecubemap_layered_layers(self):
        """Maximum layers in a cubemap layered surface (``CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS)
    @property
    def maximum_texture1d_linear_width(self):
        """Deprecated, do not use. Use cudaDeviceGetTexture1DLinearMaxWidth() or cuDeviceGetTexture1DLinearMaxWidth() instead. (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH)
    @property
    def maximum_texture2d_linear_width(self):
        """Maximum 2D linear texture width (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH)
    @property
    def maximum_texture2d_linear_height(self):
        """Maximum 2D linear texture height (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT)
    @property
    def maximum_texture2d_linear_pitch(self):
        """Maximum 2D linear texture pitch in bytes (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH)
    @property
    def maximum_texture2d_mipmapped_width(self):
        """Maximum mipmapped 2D texture width (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH)
    @property
    def maximum_texture2d_mipmapped_height(self):
        """Maximum mipmapped 2D texture height (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT)
    @property
    def compute_capability_major(self):
        """Major compute capability version number (``CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
    @property
    def compute_capability_minor(self):
        """Minor compute capability version number (``CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
    @property
    def maximum_texture1d_mipmapped_width(self):
        """Maximum mipmapped 1D texture width (``CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH)
    @property
    def stream_priorities_supported(self):
        """Device supports stream priorities (``CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED)
    @property
    def global_l1_cache_supported(self):
        """Device supports caching globals in L1 (``CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED)
    @property
    def local_l1_cache_supported(self):
        """Device supports caching locals in L1 (``CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED)
    @property
    def max_shared_memory_per_multiprocessor(self):
        """Maximum shared memory available per multiprocessor in bytes (``CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
    @property
    def max_registers_per_multiprocessor(self):
        """Maximum number of 32-bit registers available per multiprocessor (``CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)
    @property
    def managed_memory(self):
        """Device can allocate managed memory on this system (``CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)
    @property
    def multi_gpu_board(self):
        """Device is on a multi-GPU board (``CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD)
    @property
    def multi_gpu_board_group_id(self):
        """Unique id for a group of devices on the same multi-GPU board (``CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID)
    @property
    def host_native_atomic_supported(self):
        """Link between the device and the host supports all native atomic operations (``CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED)
    @property
    def single_to_double_precision_perf_ratio(self):
        """Ratio of single precision performance (in floating-point operations per second) to double precision performance (``CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO)
    @property
    def pageable_memory_access(self):
        """Device supports coherently accessing pageable memory without calling cudaHostRegister on it (``CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS)
    @property
    def concurrent_managed_access(self):
        """Device can coherently access managed memory concurrently with the CPU (``CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)
    @property
    def compute_preemption_supported(self):
        """Device supports compute preemption. (``CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED)
    @property
    def can_use_host_pointer_for_registered_mem(self):
        """Device can access host registered memory at the same virtual address as the CPU (``CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM)
    @property
    def can_use_stream_mem_ops_v1(self):
        """Deprecated, along with v1 MemOps API, cuStreamBatchMemOp and related APIs are supported. (``CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1)
    @property
    def can_use_64_bit_stream_mem_ops_v1(self):
        """Deprecated, along with v1 MemOps API, 64-bit operations are supported in cuStreamBatchMemOp and related APIs. (``CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1)
    @property
    def can_use_stream_wait_value_nor_v1(self):
        """Deprecated, along with v1 MemOps API, CU_STREAM_WAIT_VALUE_NOR is supported. (``CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1)
    @property
    def cooperative_launch(self):
        """Device supports launching cooperative kernels via cuLaunchCooperativeKernel (``CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)
    @property
    def cooperative_multi_device_launch(self):
        """Deprecated, cuLaunchCooperativeKernelMultiDevice is deprecated. (``CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH)
    @property
    def max_shared_memory_per_block_optin(self):
        """Maximum optin shared memory per block. That is shared memory that is available for dynamic allocation or static allocation (including architecture specific static shared memory) on this device but is not guaranteed to be portable. (``CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
    @property
    def can_flush_remote_writes(self):
        """The CU_STREAM_WAIT_VALUE_FLUSH flag and the CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES MemOp are supported on the device. See \\ref CUDA_MEMOP for additional details. (``CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES)
    @property
    def host_register_supported(self):
        """Device supports host memory registration via cudaHostRegister. (``CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED)
    @property
    def pageable_memory_access_uses_host_page_tables(self):
        """Device accesses pageable memory via the host's page tables. (``CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES)
    @property
    def direct_managed_mem_access_from_host(self):
        """The host can directly access managed memory on the device without migration. (``CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST)
    @property
    def virtual_address_management_supported(self):
        """Deprecated, Use CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED (``CU_DEVICE_ATTRIBUTE_VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED)
    @property
    def virtual_memory_management_supported(self):
        """Device supports virtual memory management APIs like cuMemAddressReserve, cuMemCreate, cuMemMap and related APIs (``CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)
    @property
    def handle_type_posix_file_descriptor_supported(self):
        """Device supports exporting memory to a posix file descriptor with cuMemExportToShareableHandle, if requested via cuMemCreate (``CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)
    @property
    def handle_type_win32_handle_supported(self):
        """Device supports exporting memory to a Win32 NT handle with cuMemExportToShareableHandle, if requested via cuMemCreate (``CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED)
    @property
    def handle_type_win32_kmt_handle_supported(self):
        """Device supports exporting memory to a Win32 KMT handle with cuMemExportToShareableHandle, if requested via cuMemCreate (``CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED)
    @property
    def max_blocks_per_multiprocessor(self):
        """Maximum number of blocks per multiprocessor (``CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)
    @property
    def generic_compression_supported(self):
        """Device supports compression of memory (``CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED)
    @property
    def max_persisting_l2_cache_size(self):
        """Maximum L2 persisting lines capacity setting in bytes. (``CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE)
    @property
    def max_access_policy_window_size(self):
        """Maximum value of CUaccessPolicyWindownum_bytes. (``CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE)
    @property
    def gpu_direct_rdma_with_cuda_vmm_supported(self):
        """Device supports specifying the GPUDirect RDMA flag with cuMemCreate (``CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED)
    @property
    def reserved_shared_memory_per_block(self):
        """Shared memory reserved by CUDA driver per block in bytes (``CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)
    @property
    def sparse_cuda_array_supported(self):
        """Device supports sparse CUDA arrays and sparse CUDA mipmapped arrays (``CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED)
    @property
    def read_only_host_register_supported(self):
        """Device supports using the cuMemHostRegister flag CU_MEMHOSTERGISTER_READ_ONLY to register memory that must be mapped as read-only to the GPU (``CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED)
    @property
    def timeline_semaphore_interop_supported(self):
        """External timeline semaphore interop is supported on the device (``CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED)
    @property
    def memory_pools_supported(self):
        """Device supports using the cuMemAllocAsync and cuMemPool family of APIs (``CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
    @property
    def gpu_direct_rdma_supported(self):
        """Device supports GPUDirect RDMA APIs, like nvidia_p2p_get_pages (see https://docs.nvidia.com/cuda/gpudirect-rdma for more information) (``CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED)
    @property
    def gpu_direct_rdma_flush_writes_options(self):
        """The returned attribute shall be interpreted as a bitmask, where the individual bits are described by the CUflushGPUDirectRDMAWritesOptions enum (``CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS)
    @property
    def gpu_direct_rdma_writes_ordering(self):
        """GPUDirect RDMA writes to the device do not need to be flushed for consumers within the scope indicated by the returned attribute. See CUGPUDirectRDMAWritesOrdering for the numerical values returned here. (``CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING)
    @property
    def mempool_supported_handle_types(self):
        """Handle types supported with mempool based IPC (``CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES)
    @property
    def cluster_launch(self):
        """Indicates device supports cluster launch (``CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)
    @property
    def deferred_mapping_cuda_array_supported(self):
        """Device supports deferred mapping CUDA arrays and CUDA mipmapped arrays (``CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED)
    @property
    def can_use_64_bit_stream_mem_ops(self):
        """64-bit operations are supported in cuStreamBatchMemOp and related MemOp APIs. (``CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS)
    @property
    def can_use_stream_wait_value_nor(self):
        """CU_STREAM_WAIT_VALUE_NOR is supported by MemOp APIs. (``CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR)
    @property
    def dma_buf_supported(self):
        """Device supports buffer sharing with dma_buf mechanism. (``CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)
    @property
    def ipc_event_supported(self):
        """Device supports IPC Events. (``CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED)
    @property
    def mem_sync_domain_count(self):
        """Number of memory domains the device supports. (``CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT)
    @property
    def tensor_map_access_supported(self):
        """Device supports accessing memory using Tensor Map. (``CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED)
    @property
    def handle_type_fabric_supported(self):
        """Device supports exporting memory to a fabric handle with cuMemExportToShareableHandle() or requested with cuMemCreate() (``CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED)
    @property
    def unified_function_pointers(self):
        """Device supports unified function pointers. (``CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS)
    @property
    def numa_config(self):
        """NUMA configuration of a device: value is of type CUdeviceNumaConfig enum (``CU_DEVICE_ATTRIBUTE_NUMA_CONFIG``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_NUMA_CONFIG)
    @property
    def numa_id(self):
        """NUMA node ID of the GPU memory (``CU_DEVICE_ATTRIBUTE_NUMA_ID``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_NUMA_ID)
    @property
    def multicast_supported(self):
        """Device supports switch multicast and reduction operations. (``CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED)
    @property
    def mps_enabled(self):
        """Indicates if contexts created on this device will be shared via MPS (``CU_DEVICE_ATTRIBUTE_MPS_ENABLED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_MPS_ENABLED)
    @property
    def host_numa_id(self):
        """NUMA ID of the host node closest to the device. Returns -1 when system does not support NUMA. (``CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID)
    @property
    def d3d12_cig_supported(self):
        """Device supports CIG with D3D12. (``CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED)
    @property
    def mem_decompress_algorithm_mask(self):
        """The returned valued shall be interpreted as a bitmask, where the individual bits are described by the CUmemDecompressAlgorithm enum. (``CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK)
    @property
    def mem_decompress_maximum_length(self):
        """The returned valued is the maximum length in bytes of a single decompress operation that is allowed. (``CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH)
    @property
    def vulkan_cig_supported(self):
        """Device supports CIG with Vulkan. (``CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED)
    @property
    def gpu_pci_device_id(self):
        """The combined 16-bit PCI device ID and 16-bit PCI vendor ID. (``CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID)
    @property
    def gpu_pci_subsystem_id(self):
        """The combined 16-bit PCI subsystem ID and 16-bit PCI subsystem vendor ID. (``CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID``)."""
        return self._get(cydriver.CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID)
    @property
    def host_numa_virtual_memory_management_supported(self):
        """Device supports HOST_NUMA location with the virtual memory management APIs like cuMemCreate, cuMemMap and related APIs (``CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)
    @property
    def host_numa_memory_pools_supported(self):
        """Device supports HOST_NUMA location with the cuMemAllocAsync and cuMemPool family of APIs (``CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED)
    @property
    def host_numa_multinode_ipc_supported(self):
        """Device supports HOST_NUMA location IPC between nodes in a multi-node system. (``CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED``)."""
        return self._get_bool(cydriver.CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED)
    @property
    def host_memory_pools_supported(self):
        """Device suports HOST location with the cuMemAllocAsync and cuMemPool family of APIs (``CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED``)."""
        return self._get_bool(_cuda_compat.CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED)
    @property
    def host_virtual_memory_management_supported(self):
        """Device supports HOST location with the virtual memory management APIs like cuMemCreate, cuMemMap and related APIs (``CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED``)."""
        return self._get_bool(_cuda_compat.CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)
    @property
    def host_alloc_dma_buf_supported(self):
        """Device supports page-locked host memory buffer sharing with dma_buf mechanism. (``CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED``)."""
        return self._get_bool(_cuda_compat.CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED)
    @property
    def only_partial_host_native_atomic_supported(self):
        """Link between the device and the host supports only some native atomic operations (``CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED``)."""
        return self._get_bool(_cuda_compat.CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED)
    @property
    def atomic_reduction_supported(self):
        """Device supports atomic reduction operations in stream batch memory operations (``CU_DEVICE_ATTRIBUTE_ATOMIC_REDUCTION_SUPPORTED``)."""
        return self._get_bool(_cuda_compat.CU_DEVICE_ATTRIBUTE_ATOMIC_REDUCTION_SUPPORTED)
    @property
    def d3d12_cig_streams_supported(self):
        """Device supports CIG streams with D3D12 (``CU_DEVICE_ATTRIBUTE_D3D12_CIG_STREAMS_SUPPORTED``)."""
        return self._get_bool(_cuda_compat.CU_DEVICE_ATTRIBUTE_D3D12_CIG_STREAMS_SUPPORTED)
    @property
    def dma_buf_mmap_supported(self):
        """Device supports mmap() of dmabuf file descriptors for CUDA device memory allocations (``CU_DEVICE_ATTRIBUTE_DMA_BUF_MMAP_SUPPORTED``)."""
        return self._get_bool(_cuda_compat.CU_DEVICE_ATTRIBUTE_DMA_BUF_MMAP_SUPPORTED)
    @property
    def logical_endpoint_unicast_supported(self):
        """Device supports unicast logical endpoints (``CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_UNICAST_SUPPORTED``)."""
        return self._get_bool(_cuda_compat.CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_UNICAST_SUPPORTED)
    @property
    def logical_endpoint_multicast_supported(self):
        """Device supports multicast logical endpoints (``CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_MULTICAST_SUPPORTED``)."""
        return self._get_bool(_cuda_compat.CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_MULTICAST_SUPPORTED)
    @property
    def logical_endpoint_counted_ops_supported(self):
        """Device supports counted operations via logical endpoints (``CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_COUNTED_OPS_SUPPORTED``)."""
        return self._get_bool(_cuda_compat.CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_COUNTED_OPS_SUPPORTED)
    @property
    def logical_endpoint_unicast_access_on_owner_device_supported(self):
        """Device supports unicast logical endpoint access on the owner device (``CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_UNICAST_ACCESS_ON_OWNER_DEVICE_SUPPORTED``)."""
        return self._get_bool(_cuda_compat.CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_UNICAST_ACCESS_ON_OWNER_DEVICE_SUPPORTED)
    # END GENERATED DeviceProperties
