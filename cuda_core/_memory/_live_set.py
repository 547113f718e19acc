"""The base of the live sets: a set the driver keeps, read and changed through the driver at
each operation (a pool's peers, ``_peer_access.PeerAccessibleBySetProxy``; a managed buffer's
mappings, ``_managed_mr.AccessedBySetProxy``)."""

from collections.abc import MutableSet

__all__: list[str] = []


class _LiveSet(MutableSet):
    """A set the driver keeps (a pool's peers, a managed buffer's mappings), read and changed
    through the driver at each operation. Not constructible directly: ``_origin`` names the
    attribute that gives one."""

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
        # What the set operators that make a new set (|, &, -, ^) return: a plain set.
        return set(iterable)

    def _items(self):
        """The members, as a list, from the driver."""
        raise NotImplementedError

    def __iter__(self):
        return iter(self._items())

    def __len__(self):
        return len(self._items())

    def __repr__(self):
        return f"{{{', '.join(repr(x) for x in self)}}}"
