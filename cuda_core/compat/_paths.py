"""The private ``cuda.core`` paths that compat mode serves, and what each one holds.

Released libraries built on cuda.core import a few names from its private modules; each path
here was found in one of them, and ``docs/compat.rst`` says which. A served module holds only
the names listed, each cuda_core's own object (or, for ``handle_return``, a function of this
module with cuda.core's contract). Every other private path is a ``ModuleNotFoundError``.
"""

import warnings

# module -> {name: "cuda_core module:attribute"}
PRIVATE = {
    "cuda.core._utils": {},
    "cuda.core._utils.cuda_utils": {
        "CUDAError": "cuda_core:CUDAError",
        "NVRTCError": "cuda_core:NVRTCError",
        # numba-cuda's kernel cache pickles one: the name must resolve both ways.
        "ComputeCapability": "cuda_core:ComputeCapability",
        "handle_return": "cuda_core.compat._paths:handle_return",
    },
    # cuda.stf (cuda-cccl) packs a launch's arguments itself: ParamHolder(args).ptr.
    "cuda.core._kernel_arg_handler": {
        "ParamHolder": "cuda_core._kernel_args:PackedArguments",
    },
    # nvmath-python's tests.
    "cuda.core._context": {
        "Context": "cuda_core:Context",
        "ContextOptions": "cuda_core:ContextOptions",
    },
    "cuda.core._device_resources": {
        name: f"cuda_core:{name}" for name in ("DeviceResources", "SMResource",
                                               "SMResourceOptions", "WorkqueueResource",
                                               "WorkqueueResourceOptions")
    },
    "cuda.core._device": {
        "Device": "cuda_core:Device",
        "DeviceProperties": "cuda_core:DeviceProperties",
    },
}

# Packages among them (their submodules are looked up through the finder).
PACKAGES = frozenset({"cuda.core._utils"})

# The pre-1.0 namespace: cuda.core's public names, with a DeprecationWarning when imported.
EXPERIMENTAL = "cuda.core.experimental"


def resolve(target):
    """The object ``"module:attribute"`` names."""
    import importlib

    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def warn_experimental():
    warnings.warn(f"{EXPERIMENTAL} is deprecated: import the same names from cuda.core "
                  f"(compat mode serves it from cuda_core)", DeprecationWarning, stacklevel=3)


def handle_return(result, handle=None):
    """The values of a ``cuda.bindings`` call's result tuple ``(status, *values)``, as
    cuda.core's helper of this name gives them: None for none, the value for one, a tuple for
    more. A status other than success raises: ``CUDAError`` for the driver's ``CUresult`` (the
    error ours raises for that code) and the runtime's ``cudaError_t``, ``NVRTCError`` for
    NVRTC's ``nvrtcResult``, with the program's log where ``handle`` is its ``nvrtcProgram``.
    """
    from cuda_core import CUDAError, NVRTCError
    from cuda_core._errors import driver_error

    status = result[0]
    if int(status) != 0:
        kind = type(status).__module__.rpartition(".")[2]
        if kind == "driver":
            raise driver_error(status)
        if kind == "nvrtc":
            raise _nvrtc_error(status, handle, NVRTCError)
        if kind == "runtime":
            from cuda.bindings import runtime

            _, text = runtime.cudaGetErrorString(status)
            text = text.decode() if isinstance(text, bytes) else str(text)
            raise CUDAError(f"{status.name}: {text}", int(status), status.name, text)
        raise CUDAError(f"{type(status).__name__} {int(status)}", int(status))
    if len(result) == 1:
        return None
    if len(result) == 2:
        return result[1]
    return result[1:]


def _nvrtc_error(status, handle, cls):
    from cuda.bindings import nvrtc

    log = ""
    if handle is not None:
        err, size = nvrtc.nvrtcGetProgramLogSize(handle)
        if int(err) == 0 and size > 1:
            buffer = b" " * size
            if int(nvrtc.nvrtcGetProgramLog(handle, buffer)[0]) == 0:
                log = buffer.rstrip(b"\0").decode(errors="replace")
    message = status.name + (f"\n{log}" if log else "")
    return cls(message, int(status), status.name, log=log)
