from cuda_core._memory._buffer cimport Buffer
from cuda_core._memory._ipc_base cimport IPCBufferDescriptor


# The virtual-memory half of Buffer's IPC members, implemented in _memory._vmm_ipc (which
# cimports this module) and registered once, while it is imported. _ipc's Buffer hooks hand
# these every buffer whose resource is a VirtualMemoryResource, and every descriptor of a
# VMM kind: ``export(buf)`` gives ``buf.ipc_descriptor`` (``buf`` open), ``import_(cls, mr,
# desc, stream)`` the imported buffer (``mr`` a VirtualMemoryResource, the rest unchecked).
ctypedef object (*vmm_export_fn)(Buffer buf)
ctypedef object (*vmm_import_fn)(object cls, object mr, IPCBufferDescriptor desc, object stream)
cdef int register_vmm(vmm_export_fn export, vmm_import_fn import_) except -1
