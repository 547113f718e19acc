"""Graphs by stream capture: record work on a stream once, replay it with one launch."""

from cuda_core.graph._builder import GraphBuilder
from cuda_core.graph._condition import GraphCondition
from cuda_core.graph._graph import Graph
from cuda_core.graph._graph_options import GraphCompleteOptions, GraphDebugPrintOptions

__all__ = ["Graph", "GraphBuilder", "GraphCompleteOptions", "GraphDebugPrintOptions",
           "GraphCondition"]
