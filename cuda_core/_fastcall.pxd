# CPython's builtin-function machinery, for the few functions that take their arguments as a C
# array (METH_FASTCALL) so that no tuple is built per call: launch() and the benchmark's Python
# floor. Declarations only (Python.h); nothing to build.
from cpython.ref cimport PyObject


cdef extern from "Python.h":
    ctypedef PyObject* (*PyCFunction)(PyObject*, PyObject*)
    ctypedef struct PyMethodDef:
        const char* ml_name
        PyCFunction ml_meth
        int ml_flags
        const char* ml_doc
    # ``self`` is passed to ml_meth as its first argument; ``module`` names the owner.
    object PyCFunction_NewEx(PyMethodDef* ml, object self, object module)
    int METH_FASTCALL
    int METH_KEYWORDS
