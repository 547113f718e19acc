"""Buffer's IPC members for pool resources, and the rebuild functions of pickled resources
and buffers. (Being written: issue 15, piece A.)"""

from cuda_core._memory._buffer cimport Buffer
from cuda_core._memory._ipc_base cimport IPCBufferDescriptor

__all__ = []

cdef vmm_export_fn _vmm_export = NULL
cdef vmm_import_fn _vmm_import = NULL


cdef int register_vmm(vmm_export_fn export, vmm_import_fn import_) except -1:
    """Install the virtual-memory export and import (neither NULL); once only."""
    global _vmm_export, _vmm_import
    if _vmm_export != NULL:
        raise RuntimeError("register_vmm(): the virtual-memory IPC hooks are already registered")
    _vmm_import = import_
    _vmm_export = export
    return 0
