"""Graphs: record work on a stream once (GraphBuilder) or build it node by node
(GraphDefinition), then replay it with one launch (Graph)."""

from cuda_core.graph._builder import GraphBuilder
from cuda_core.graph._condition import GraphCondition
from cuda_core.graph._definition import GraphDefinition
from cuda_core.graph._exec_nodes import (ExecutableChildGraphNode, ExecutableEventRecordNode,
                                         ExecutableEventWaitNode, ExecutableGraphNode,
                                         ExecutableHostCallbackNode, ExecutableKernelNode,
                                         ExecutableMemcpyNode, ExecutableMemsetNode)
from cuda_core.graph._graph import Graph
from cuda_core.graph._graph_options import GraphCompleteOptions, GraphDebugPrintOptions
from cuda_core.graph._node_base import GraphNode
from cuda_core.graph._node_types import (AllocNode, ChildGraphNode, ConditionalNode, EmptyNode,
                                         EventRecordNode, EventWaitNode, FreeNode,
                                         HostCallbackNode, IfElseNode, IfNode, KernelNode,
                                         MemcpyNode, MemsetNode, SwitchNode, WhileNode)

__all__ = ["Graph", "GraphBuilder", "GraphCompleteOptions", "GraphDebugPrintOptions",
           "GraphCondition", "GraphDefinition", "GraphNode", "EmptyNode", "KernelNode",
           "AllocNode", "FreeNode", "MemsetNode", "MemcpyNode", "ChildGraphNode",
           "EventRecordNode", "EventWaitNode", "HostCallbackNode", "ConditionalNode", "IfNode",
           "IfElseNode", "WhileNode", "SwitchNode", "ExecutableGraphNode",
           "ExecutableKernelNode", "ExecutableMemsetNode", "ExecutableMemcpyNode",
           "ExecutableChildGraphNode", "ExecutableEventRecordNode", "ExecutableEventWaitNode",
           "ExecutableHostCallbackNode"]
