# Internal: the DLPack capsule builder is reached only from Cython (Buffer.__dlpack__).
