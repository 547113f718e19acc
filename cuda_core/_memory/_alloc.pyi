# Internal: the shared helpers of the memory modules are reached only from Cython.
