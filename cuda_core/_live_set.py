"""The base of the live sets: a set the driver keeps, read and changed through the driver at
each operation (a pool's peers, ``_memory._peer_access.PeerAccessibleBySetProxy``; a managed
buffer's mappings, ``_memory._managed_mr.AccessedBySetProxy``; a graph node's edges,
``graph._adjacency.AdjacencySetProxy``)."""

from collections.abc import MutableSet

__all__: list[str] = []


class _LiveSet(MutableSet):
    """A set the driver keeps, read and changed through the driver at each operation: there is
    no copy to go stale. ``_owner`` is the object whose set it is; a subclass gives ``_items``
    (the members, from the driver), ``add`` and ``discard``, and may make a bulk operation one
    driver call. The set operators that make a new set (``|``, ``&``, ``-``, ``^``) return a
    plain ``set``: a snapshot, not another view.

    Not constructible directly unless a subclass says otherwise: ``_origin`` names the
    attribute that gives one, and ``_create(owner)`` makes one."""

    __slots__ = ("_owner",)
    _origin = None

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__} cannot be instantiated directly; use "
                           f"{self._origin}")

    @classmethod
    def _create(cls, owner):
        proxy = object.__new__(cls)
        proxy._owner = owner
        return proxy

    @classmethod
    def _from_iterable(cls, iterable):
        return set(iterable)

    def _items(self):
        """The members, from the driver (a list or a set)."""
        raise NotImplementedError

    def __contains__(self, item):
        return item in self._items()

    def __iter__(self):
        return iter(self._items())

    def __len__(self):
        return len(self._items())

    def __repr__(self):
        return f"{{{', '.join(repr(x) for x in self)}}}"
