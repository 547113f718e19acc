# Internal: the DLPack capsule builder and Buffer.__dlpack__'s checks are reached only from
# Cython (Buffer.__dlpack__, Buffer.__dlpack_device__).
