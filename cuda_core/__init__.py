"""cuda_core: a Pythonic interface to CUDA whose hot paths are Cython over the CUDA driver.

Importing this package never touches the driver: a machine without a GPU or driver imports it,
and the first use of the GPU there raises one :class:`CUDAError` that names the cause.
"""

# The redundant alias exports it to type checkers; it stays out of __all__, so that
# ``from cuda_core import *`` does not overwrite the importer's own __version__.
from cuda_core._version import __version__ as __version__


def _source_tree_error(exc):
    """The ImportError to raise instead of ``exc`` (the first compiled import failing), or None
    where the package folder is not a source tree: one that holds ``.pyx`` sources and no
    ``_errors`` extension built for this Python. Runs only on that failure."""
    import importlib.machinery
    import os

    folder = os.path.dirname(os.path.abspath(__file__))
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    if (not any(n.endswith(".pyx") for n in names)
            or any(n.startswith("_errors.") and n.endswith(suffixes) for n in names)):
        return None
    return ImportError(
        f"cuda_core is being imported from its source tree at {folder}, which has no compiled "
        f"extensions (No module named {exc.name!r}): its parent folder comes first on sys.path "
        f"(the current directory, or the script's), so it shadows any installed cuda_core. "
        f"Run Python from another directory, or with -P / PYTHONSAFEPATH=1 (Python 3.11+); "
        f"or install in editable mode (pip install -e .) to use the checkout itself.",
        name="cuda_core", path=__file__)


def _bindings_major_error():
    """The ImportError to raise when the installed cuda-bindings is not of the CUDA major this
    build was compiled for (its compiled modules would fail to import, naming a missing or
    changed cydriver function), or None. DESIGN.md, "One build per CUDA major"."""
    try:
        from cuda_core._build_config import CUDA_MAJOR as built
    except ModuleNotFoundError:  # a source tree: _source_tree_error() below says so
        return None
    try:
        import cuda.bindings
    except ImportError:  # none installed: the first compiled import says so
        return None
    have = str(getattr(cuda.bindings, "__version__", ""))
    major = have.partition(".")[0]
    if not major.isdigit() or int(major) == built:
        return None
    return ImportError(
        f"cuda_core {__version__} was built for CUDA {built}, against cuda-bindings {built}.x, "
        f"but cuda-bindings {have} (CUDA {major}) is installed. Install cuda-bindings {built}.x "
        f"(pip install \"cuda-bindings>={'12.9' if built == 12 else f'{built}.3'},<{built + 1}\"), "
        f"or rebuild cuda_core for CUDA {major} (CUDA_CORE_CUDA_MAJOR={major} pip install "
        f"--no-binary cuda-core-cy --force-reinstall cuda-core-cy; from a checkout, "
        f"CUDA_CORE_CUDA_MAJOR={major} pip install .)",
        name="cuda_core", path=__file__)


_mismatch = _bindings_major_error()
if _mismatch is not None:
    raise _mismatch
del _bindings_major_error, _mismatch

try:
    from cuda_core._errors import (CUDAError, CUDALaunchError, CUDAOutOfMemoryError,
                                   CUDAWarning, NVRTCError)
except ModuleNotFoundError as _exc:
    if _exc.name == "cuda_core._errors" and (_error := _source_tree_error(_exc)) is not None:
        raise _error from None  # the missing module is named in the message
    raise
del _source_tree_error
from cuda_core._context import Context
from cuda_core._device import ComputeCapability, Device, DeviceProperties
from cuda_core._event import Event
from cuda_core._graphics import GraphicsResource
from cuda_core._green import DeviceResources, SMResource, WorkqueueResource
from cuda_core._green_options import ContextOptions, SMResourceOptions, WorkqueueResourceOptions
from cuda_core._launch_config import LaunchConfig
from cuda_core._launcher import launch
from cuda_core._linker import Linker, LinkerOptions
from cuda_core._memory import (
    Buffer,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    GraphMemoryResource,
    Host,
    LegacyPinnedMemoryResource,
    ManagedBuffer,
    ManagedMemoryResource,
    ManagedMemoryResourceOptions,
    MemoryResource,
    PinnedMemoryResource,
    PinnedMemoryResourceOptions,
    VirtualMemoryBuffer,
    VirtualMemoryResource,
    VirtualMemoryResourceOptions,
)
from cuda_core._kernel import Kernel
from cuda_core._object_code import ObjectCode
from cuda_core._options import EventOptions, StreamOptions
from cuda_core._program import Program, ProgramOptions
from cuda_core._stream import LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM, Stream
from cuda_core._tensor_map import TensorMapDescriptor, TensorMapDescriptorOptions
from cuda_core.system import System
from cuda_core import checkpoint, graph, system, texture, typing, utils
from cuda_core._completion import fix_tab_completion as _fix_tab_completion


def show_config():
    """Print what cuda_core finds on this machine: the report of ``python -m cuda_core``
    (its installation, Python, the packages it runs on, the CUDA driver, the devices, the
    compiler libraries and the environment variables that matter), as ``cupy.show_config()``
    does for CuPy. Works without a GPU or driver; include its output in bug reports."""
    from cuda_core._diagnostics import report

    print(report())


_fix_tab_completion()  # interactive sessions only; CUDA_CORE_DONT_FIX_TAB_COMPLETION opts out
del _fix_tab_completion

__all__ = [
    "Buffer",
    "CUDAError",
    "CUDALaunchError",
    "CUDAOutOfMemoryError",
    "CUDAWarning",
    "ComputeCapability",
    "Context",
    "ContextOptions",
    "Device",
    "DeviceMemoryResource",
    "DeviceMemoryResourceOptions",
    "DeviceProperties",
    "DeviceResources",
    "Event",
    "EventOptions",
    "GraphMemoryResource",
    "GraphicsResource",
    "Host",
    "Kernel",
    "LEGACY_DEFAULT_STREAM",
    "LaunchConfig",
    "LegacyPinnedMemoryResource",
    "Linker",
    "LinkerOptions",
    "ManagedBuffer",
    "ManagedMemoryResource",
    "ManagedMemoryResourceOptions",
    "MemoryResource",
    "NVRTCError",
    "ObjectCode",
    "PER_THREAD_DEFAULT_STREAM",
    "PinnedMemoryResource",
    "PinnedMemoryResourceOptions",
    "Program",
    "ProgramOptions",
    "SMResource",
    "SMResourceOptions",
    "Stream",
    "StreamOptions",
    "System",
    "TensorMapDescriptor",
    "TensorMapDescriptorOptions",
    "VirtualMemoryBuffer",
    "VirtualMemoryResource",
    "VirtualMemoryResourceOptions",
    "WorkqueueResource",
    "WorkqueueResourceOptions",
    "checkpoint",
    "graph",
    "system",
    "texture",
    "typing",
    "utils",
    "launch",
    "show_config",
]
