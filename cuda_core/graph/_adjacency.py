"""AdjacencySetProxy: a node's predecessors or successors as a live, mutable set."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableSet
from typing import Any

__all__ = ["AdjacencySetProxy"]


class AdjacencySetProxy(MutableSet):
    """The predecessors (``node.pred``) or successors (``node.succ``) of a graph node, read from
    the driver at each use; adding or discarding a node adds or removes the edge.

    Not constructed directly: use :attr:`GraphNode.pred` and :attr:`GraphNode.succ`.

    .. note:: Reads with ``cuGraphNodeGetDependencies`` / ``cuGraphNodeGetDependentNodes``,
       changes with ``cuGraphAddDependencies`` / ``cuGraphRemoveDependencies``.
    """

    __slots__ = ("_node", "_succ")

    def __init__(self, node: Any, succ: bool) -> None:
        self._node = node
        self._succ = succ

    @classmethod
    def _from_iterable(cls, it: Iterable[Any]) -> set[Any]:
        # Set operators (|, &, -) give plain sets: a snapshot, not another view.
        return set(it)

    def _current(self) -> set[Any]:
        return self._node._adjacent(self._succ)

    def __contains__(self, x: object) -> bool:
        return x in self._current()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._current())

    def __len__(self) -> int:
        return len(self._current())

    def add(self, value: Any) -> None:
        """Add the edge between this node and ``value`` (a no-op when it exists)."""
        self._node._connect((value,), self._succ)

    def discard(self, value: Any) -> None:
        """Remove the edge between this node and ``value`` (a no-op when there is none)."""
        self._node._disconnect((value,), self._succ)

    def update(self, *others: Iterable[Any]) -> None:
        """Add the edges to every node of ``others``."""
        for other in others:
            self._node._connect(tuple(other), self._succ)

    def clear(self) -> None:
        """Remove every edge on this side of the node."""
        self._node._disconnect(tuple(self._current()), self._succ)

    def __repr__(self) -> str:
        side = "succ" if self._succ else "pred"
        return f"<AdjacencySetProxy {side} of {self._node!r}: {self._current()!r}>"
