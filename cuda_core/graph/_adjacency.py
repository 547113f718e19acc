"""AdjacencySetProxy: a node's predecessors or successors as a live, mutable set."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cuda_core._live_set import _LiveSet

__all__ = ["AdjacencySetProxy"]


class AdjacencySetProxy(_LiveSet[Any]):
    """The predecessors (``node.pred``) or successors (``node.succ``) of a graph node, read from
    the driver at each use; adding or discarding a node adds or removes the edge.

    Not constructed directly: use :attr:`GraphNode.pred` and :attr:`GraphNode.succ`.

    .. note:: Reads with ``cuGraphNodeGetDependencies`` / ``cuGraphNodeGetDependentNodes``,
       changes with ``cuGraphAddDependencies`` / ``cuGraphRemoveDependencies``.
    """

    __slots__ = ("_succ",)

    def __init__(self, node: Any, succ: bool) -> None:
        self._owner = node
        self._succ = succ

    def _items(self) -> set[Any]:
        return self._owner._adjacent(self._succ)

    def add(self, value: Any) -> None:
        """Add the edge between this node and ``value`` (a no-op when it exists)."""
        self._owner._connect((value,), self._succ)

    def discard(self, value: Any) -> None:
        """Remove the edge between this node and ``value`` (a no-op when there is none)."""
        self._owner._disconnect((value,), self._succ)

    def update(self, *others: Iterable[Any]) -> None:
        """Add the edges to every node of ``others``."""
        for other in others:
            self._owner._connect(tuple(other), self._succ)

    def clear(self) -> None:
        """Remove every edge on this side of the node."""
        self._owner._disconnect(tuple(self._items()), self._succ)

    def __repr__(self) -> str:
        side = "succ" if self._succ else "pred"
        return f"<AdjacencySetProxy {side} of {self._owner!r}: {self._items()!r}>"
