"""The program cache held in this process's memory: :class:`InMemoryProgramCache`."""

from __future__ import annotations

import collections
import threading

from cuda_core.utils._program_cache import _entry_from_value, _key_bytes, _ProgramCache

__all__ = ["InMemoryProgramCache"]


class InMemoryProgramCache(_ProgramCache):
    """A thread-safe, least-recently-used program cache held in this process's memory.

    Parameters
    ----------
    max_size_bytes : int, float or None, keyword-only
        The most bytes of code the entries may hold together; None (the default) means no
        limit. Storing an entry evicts least-recently-used entries until the total fits; an
        entry larger than the whole limit is not stored (any earlier entry under its key is
        dropped, the others stay).

    Notes
    -----
    Reading an entry (``cache[key]``, ``get``, or a hit of ``Program.compile``) makes it the
    most recently used; ``in`` does not. All operations hold one lock, so the cache can be
    shared between threads. ``close()`` drops every entry; any later use is a RuntimeError.
    ``close()`` may be called more than once.
    """

    __slots__ = ("_entries", "_size", "_lock")

    def __init__(self, *, max_size_bytes: int | float | None = None):
        super().__init__(max_size_bytes)
        self._entries: collections.OrderedDict[bytes, tuple] = collections.OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def _open_entries(self) -> collections.OrderedDict[bytes, tuple]:
        """The entries, for a method that holds the lock; RuntimeError once closed."""
        if self._closed:
            raise self._closed_error()
        return self._entries

    def _get_record(self, key: bytes) -> tuple[bytes, str, dict | None] | None:
        """The entry under ``key`` (bytes), or None; a hit is made the most recently used."""
        with self._lock:
            if self._closed:  # _open_entries() inline: the look-up of every hit
                raise self._closed_error()
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def __getitem__(self, key) -> bytes:
        entry = self._get_record(_key_bytes(key))
        if entry is None:
            raise KeyError(key)
        return entry[0]

    def __setitem__(self, key, value) -> None:
        k = _key_bytes(key)
        entry = _entry_from_value(value)
        size = len(entry[0])
        with self._lock:
            entries = self._open_entries()
            old = entries.pop(k, None)
            if old is not None:
                self._size -= len(old[0])
            if self._max is not None and size > self._max:
                return
            entries[k] = entry
            self._size += size
            if self._max is not None:
                while self._size > self._max:
                    _, evicted = entries.popitem(last=False)
                    self._size -= len(evicted[0])

    def __delitem__(self, key) -> None:
        k = _key_bytes(key)
        with self._lock:
            try:
                entry = self._open_entries().pop(k)
            except KeyError:
                raise KeyError(key) from None
            self._size -= len(entry[0])

    def __contains__(self, key) -> bool:
        k = _key_bytes(key)
        with self._lock:
            return k in self._open_entries()

    def __len__(self) -> int:
        with self._lock:
            return len(self._open_entries())

    def clear(self) -> None:
        with self._lock:
            self._open_entries().clear()
            self._size = 0

    def close(self) -> None:
        """Drop every entry; later use raises RuntimeError. Idempotent."""
        with self._lock:
            self._closed = True
            self._entries.clear()
            self._size = 0

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._entries)} entries, {self._size} bytes"
        return f"<InMemoryProgramCache max_size_bytes={self._max} ({state})>"
