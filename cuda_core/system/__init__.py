"""The machine and its GPUs: driver versions, and NVML's view of each device.

``get_user_mode_driver_version``, ``get_num_devices`` and :class:`~cuda_core.System` go through
the CUDA driver. Everything else goes through NVML (the NVIDIA Management Library, the
driver's ``libnvidia-ml``, through ``cuda.bindings.nvml``): :class:`Device` (identity, memory,
temperature, clocks, utilization, NVLink, topology, CPU affinity), :func:`get_p2p_status`,
:func:`get_topology_common_ancestor`, and the driver's kernel-mode version, NVML version,
branch and process names.

Nothing is loaded at import: NVML is initialized on the first call that needs it, once per
process, under a lock. Where NVML cannot be used, each such call raises
:class:`LibraryNotFoundError` (also a ``RuntimeError``) that names the cause; NVML's own
failures raise the :class:`NvmlError` subclass of their code. The error classes are
``cuda.bindings.nvml``'s own, as in ``cuda.core`` (:mod:`cuda_core.system.exceptions`), looked
up on first use. The enumerations are in :mod:`cuda_core.system.typing`.
"""

from cuda_core.system import exceptions, typing  # noqa: F401 - the sub-namespaces
# The info classes are reachable here for isinstance checks and docs, but are not in __all__
# (cuda.core does not list them either).
from cuda_core.system._device import (  # noqa: F401
    BAR1MemoryInfo,
    ClockInfo,
    Device,
    MemoryInfo,
    NvlinkInfo,
    PciInfo,
    Temperature,
    Utilization,
    get_p2p_status,
    get_topology_common_ancestor,
)
from cuda_core.system._device_info import (  # noqa: F401
    CoolerInfo,
    DeviceAttributes,
    FanInfo,
    FieldValue,
    FieldValues,
    GpuDynamicPstatesInfo,
    GpuDynamicPstatesUtilization,
    InforomInfo,
    MigInfo,
    ProcessInfo,
    RepairStatus,
)
from cuda_core.system._events import DeviceEvents, EventData  # noqa: F401
from cuda_core.system._system import (
    CUDA_BINDINGS_NVML_IS_COMPATIBLE,
    System,
    get_driver_branch,
    get_kernel_mode_driver_version,
    get_num_devices,
    get_nvml_version,
    get_process_name,
    get_user_mode_driver_version,
)
from cuda_core.system._system_events import (  # noqa: F401
    RegisteredSystemEvents,
    SystemEvent,
    SystemEvents,
    register_events,
)
from cuda_core.system._nvml import lazy_names as _lazy_names
from cuda_core.system.exceptions import __all__ as _exceptions_all

__all__ = [
    "CUDA_BINDINGS_NVML_IS_COMPATIBLE",
    "Device",
    "NvlinkInfo",
    "System",
    "get_driver_branch",
    "get_kernel_mode_driver_version",
    "get_num_devices",
    "get_nvml_version",
    "get_p2p_status",
    "get_process_name",
    "get_topology_common_ancestor",
    "get_user_mode_driver_version",
    "register_events",
    *_exceptions_all,
]

# The error classes are cuda.bindings.nvml's, looked up on first use through exceptions.
__getattr__, __dir__ = _lazy_names(__name__, _exceptions_all,
                                   lambda name: getattr(exceptions, name))
