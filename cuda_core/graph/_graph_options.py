"""Options for graph instantiation and DOT printing, and the enums graph nodes take."""

from __future__ import annotations

import dataclasses
from typing import Any

from cuda_core._checks import check_bool
from cuda_core._enum import StrEnum as _StrEnum

__all__ = ["GraphCompleteOptions", "GraphDebugPrintOptions"]


class GraphConditionalType(_StrEnum):
    """The kind of a graph's conditional node (``ConditionalNode.cond_type``): an if/else node
    is an ``IF`` node with two bodies."""

    IF = "if"
    WHILE = "while"
    SWITCH = "switch"


class GraphMemoryType(_StrEnum):
    """Where a graph's allocation node puts its memory (``GraphNode.allocate``)."""

    DEVICE = "device"
    HOST = "host"
    MANAGED = "managed"


@dataclasses.dataclass
class GraphCompleteOptions:
    """Options for :meth:`GraphBuilder.complete` (``cuGraphInstantiateWithParams`` flags).

    Attributes
    ----------
    auto_free_on_launch : bool
        Free the graph's own unfreed allocations before each launch
        (``CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH``).
    upload_stream : Stream or an object with ``__cuda_stream__``, optional
        Upload the graph on this stream as part of instantiation, so that the first launch
        does not pay for it (``CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD``).
    device_launch : bool
        Make the graph launchable from the device (``CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH``).
        Cannot be combined with ``auto_free_on_launch``.
    use_node_priority : bool
        Launch each kernel node with its own priority attribute instead of its stream's
        (``CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY``).
    """

    auto_free_on_launch: bool = False
    upload_stream: Any = None
    device_launch: bool = False
    use_node_priority: bool = False

    def __post_init__(self):
        # An int by its truth value, None as False: as cuda.core reads these flags.
        for field in ("auto_free_on_launch", "device_launch", "use_node_priority"):
            setattr(self, field, bool(check_bool(getattr(self, field),
                                                 f"GraphCompleteOptions.{field}", True)))
        if self.device_launch and self.auto_free_on_launch:
            raise ValueError("GraphCompleteOptions: device_launch cannot be combined with "
                             "auto_free_on_launch")
        # upload_stream is kept as given and checked where the graph is completed (a
        # TypeError there), as cuda.core does.


@dataclasses.dataclass
class GraphDebugPrintOptions:
    """What :meth:`GraphBuilder.debug_dot_print` writes beyond the graph's shape: each field
    adds one ``CU_GRAPH_DEBUG_DOT_FLAGS_*`` flag of the same name. All False by default."""

    verbose: bool = False
    runtime_types: bool = False
    kernel_node_params: bool = False
    memcpy_node_params: bool = False
    memset_node_params: bool = False
    host_node_params: bool = False
    event_node_params: bool = False
    ext_semas_signal_node_params: bool = False
    ext_semas_wait_node_params: bool = False
    kernel_node_attributes: bool = False
    handles: bool = False
    mem_alloc_node_params: bool = False
    mem_free_node_params: bool = False
    batch_mem_op_node_params: bool = False
    extra_topo_info: bool = False
    conditional_node_params: bool = False

    def __post_init__(self):
        for field in dataclasses.fields(self):
            setattr(self, field.name, bool(check_bool(
                getattr(self, field.name), f"GraphDebugPrintOptions.{field.name}", True)))

