"""KernelAttributes: a kernel's attributes on one device (``cuKernelGetAttribute``), the view
:attr:`Kernel.attributes` returns."""

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUkernel

from cuda_core._checks cimport check_int
from cuda_core._context cimport current_ordinal
from cuda_core._driver cimport device_count
from cuda_core._errors cimport HANDLE_RETURN

__all__ = ["KernelAttributes"]


cdef KernelAttributes make_attributes(object kernel, CUkernel handle, int device):
    cdef KernelAttributes attrs = KernelAttributes.__new__(KernelAttributes)
    attrs._kernel = kernel
    attrs._handle = handle
    attrs._device = device
    return attrs


cdef class KernelAttributes:
    """A kernel's attributes on one device: the current device (the one of the context current
    at each read, device 0 when none is) for ``kernel.attributes``, a fixed one for
    ``kernel.attributes[dev]``. Values are read at each access.

    .. note:: Calls ``cuKernelGetAttribute``.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("KernelAttributes cannot be instantiated directly; use "
                           "Kernel.attributes")

    def __getitem__(self, device):
        """The attributes on ``device`` (a Device or an ordinal)."""
        ordinal = check_int(device, "KernelAttributes[device]", 0)
        count = device_count()
        if ordinal >= count:
            raise ValueError(f"KernelAttributes[device]: device {ordinal} is out of range "
                             f"(this machine has {count} devices)")
        return make_attributes(self._kernel, self._handle, ordinal)

    cdef int _set(self, cydriver.CUfunction_attribute attr, object value, str name) except -1:
        cdef int v = check_int(value, f"KernelAttributes.{name}", -1, 0x7FFFFFFF)
        cdef int dev = self._device if self._device >= 0 else current_ordinal()
        HANDLE_RETURN(cydriver.cuKernelSetAttribute(attr, v, self._handle, dev))
        return 0

    cdef int _get(self, cydriver.CUfunction_attribute attr) except? -1:
        cdef int value = 0
        cdef int dev = self._device if self._device >= 0 else current_ordinal()
        HANDLE_RETURN(cydriver.cuKernelGetAttribute(&value, attr, self._handle, dev))
        return value

    @property
    def device_id(self):
        """The ordinal of the device these attributes are read for."""
        return self._device if self._device >= 0 else current_ordinal()

    @property
    def max_threads_per_block(self):
        """int: the most threads per block a launch of this kernel can have."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)

    @property
    def shared_size_bytes(self):
        """int: statically allocated shared memory per block, in bytes."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)

    @property
    def const_size_bytes(self):
        """int: user constant memory the kernel uses, in bytes."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)

    @property
    def local_size_bytes(self):
        """int: local memory per thread, in bytes."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)

    @property
    def num_regs(self):
        """int: registers per thread."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_NUM_REGS)

    @property
    def ptx_version(self):
        """int: the PTX virtual architecture the kernel was compiled for, major*10+minor."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_PTX_VERSION)

    @property
    def binary_version(self):
        """int: the binary architecture the kernel was compiled for, major*10+minor."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_BINARY_VERSION)

    @property
    def cache_mode_ca(self):
        """bool: whether the kernel was compiled with ``-Xptxas --dlcm=ca``."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_CACHE_MODE_CA) != 0

    @property
    def max_dynamic_shared_size_bytes(self):
        """int: the most dynamic shared memory a launch may request, in bytes. Settable, up to
        the device's opt-in limit minus the kernel's static shared memory (raising it above
        48 KiB is how a kernel gets more; ``cuKernelSetAttribute``)."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, value):
        self._set(cydriver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, value,
                  "max_dynamic_shared_size_bytes")

    @property
    def preferred_shared_memory_carveout(self):
        """int: the preferred shared memory carveout, in percent (-1: no preference).
        Settable (``cuKernelSetAttribute``)."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT)

    @preferred_shared_memory_carveout.setter
    def preferred_shared_memory_carveout(self, value):
        self._set(cydriver.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, value,
                  "preferred_shared_memory_carveout")

    @property
    def cluster_size_must_be_set(self):
        """bool: whether a launch must give a cluster size."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET) != 0

    @property
    def required_cluster_width(self):
        """int: the cluster width the kernel was compiled for (0: none)."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH)

    @property
    def required_cluster_height(self):
        """int: the cluster height the kernel was compiled for (0: none)."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT)

    @property
    def required_cluster_depth(self):
        """int: the cluster depth the kernel was compiled for (0: none)."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH)

    @property
    def non_portable_cluster_size_allowed(self):
        """bool: whether the kernel may launch with a non-portable cluster size."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) != 0

    @property
    def cluster_scheduling_policy_preference(self):
        """int: the block scheduling policy (a ``CUclusterSchedulingPolicy`` value)."""
        return self._get(cydriver.CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE)

    def __repr__(self):
        where = "current device" if self._device < 0 else f"device {self._device}"
        return f"<KernelAttributes of {self._kernel!r} on the {where}>"
