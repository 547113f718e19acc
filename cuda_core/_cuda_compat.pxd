# The one place where the CUDA 12 and CUDA 13 builds differ (DESIGN.md, "One build per CUDA
# major"). Modules take from here, never from cuda.bindings.cydriver, every entry point, constant
# and struct whose declaration differs between cuda-bindings 12.9 and 13.x: the names below are
# the CUDA 13 ones, with the CUDA 13 signatures.
#
# Which definitions they get is chosen when the package is built, by the major of the
# cuda-bindings it is compiled against: tools/cython_module.py puts
# cuda_core/_cuda_compat_cu<major>/ on Cython's include path, and the `include` below reads that
# directory's _shims.pxi.
#
# * _cuda_compat_cu13/_shims.pxi: each shim calls the cydriver function of the same name and
#   signature (inline: the CUDA 13 build calls the driver exactly as before), each constant is
#   cuda.h's.
# * _cuda_compat_cu12/_shims.pxi: an entry point that CUDA 12.9 has under another name (its
#   _v2/_v3 forms with edge data or a CUmemLocation) calls that one; an entry point that only
#   CUDA 13 has raises RuntimeError, as cuda.bindings does for an entry point the driver lacks,
#   so that every caller's existing "this driver has no ..." path applies; a constant that only
#   CUDA 13 names has cuda.h 13's value (a CUDA 12 build on a CUDA 13 driver queries the same
#   device attribute, and an older driver refuses it as it refuses the CUDA 13 build).
#
# This file is not shipped (pyproject.toml, wheel.exclude): no shipped .pxd cimports it.

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (
    CUcontext, CUdevice, CUdevice_attribute, CUdeviceptr, CUdevResource, CUgraph,
    CUgraphEdgeData, CUgraphNode, CUgraphNodeParams, CUmem_advise, CUmemAllocationType,
    CUmemcpyAttributes, CUmemLocation, CUmemLocationType, CUmemoryPool, CUresult, CUstream,
    CUstreamCaptureStatus, CUcheckpointRestoreArgs, CUDA_ERROR_NOT_FOUND, cuuint64_t,
)

cdef extern from "cuda.h":
    # The CUDA version of the headers this build compiled with (13030 for 13.3).
    int BUILD_CUDA_VERSION "CUDA_VERSION"


cdef inline int require_build(int needed, str what) except -1:
    """Refuse ``what``, which needs CUDA ``needed`` (13010 for 13.1), in a build compiled for an
    older CUDA major, whatever the driver: that build lacks the declarations it needs."""
    if needed // 1000 > BUILD_CUDA_VERSION // 1000:
        raise RuntimeError(
            f"{what} needs CUDA {needed // 1000}.{needed % 1000 // 10}: this cuda_core was built "
            f"for CUDA {BUILD_CUDA_VERSION // 1000} (cuda-bindings "
            f"{BUILD_CUDA_VERSION // 1000}.x); install the CUDA {needed // 1000} build with "
            f"cuda-bindings {needed // 1000}.x (docs/install.rst, 'CUDA 12 or 13')")
    return 0


include "_shims.pxi"
