# Internal: the copy and fill routines are reached only from Cython (Buffer's methods).
