"""Graphs: record work on a stream once (GraphBuilder) or build it node by node
(GraphDefinition), then replay it with one launch (Graph)."""

from cuda_core.graph._builder import GraphBuilder
from cuda_core.graph._condition import GraphCondition
from cuda_core.graph._definition import (EmptyNode, GraphDefinition, GraphNode, KernelNode,
                                         MemcpyNode, MemsetNode)
from cuda_core.graph._graph import Graph
from cuda_core.graph._graph_options import GraphCompleteOptions, GraphDebugPrintOptions

__all__ = ["Graph", "GraphBuilder", "GraphCompleteOptions", "GraphDebugPrintOptions",
           "GraphCondition", "GraphDefinition", "GraphNode", "EmptyNode", "KernelNode",
           "MemsetNode", "MemcpyNode"]
