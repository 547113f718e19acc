# Internal: the copy and fill routines and the copy attributes are reached only from Cython
# (Buffer's methods and cuda_core._memory._batch).
