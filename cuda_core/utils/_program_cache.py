"""Program cache: compiled code kept in memory or on disk, keyed by what produced it.

The pieces:

* :func:`make_program_cache_key` (``_program_cache_key``) turns the inputs of
  ``Program(...).compile(...)`` (source, code type, options, target, name expressions, compiler
  version) into a 32-byte SHA-256 key;
* :class:`ProgramCacheResource` (here) is the mapping-like interface
  ``Program.compile(cache=...)`` uses: ``cache[key]`` / ``cache.get(key)`` give the cached code
  as ``bytes``, and ``cache[key] = object_code`` stores one;
* :class:`InMemoryProgramCache` (``_in_memory_program_cache``: a thread-safe LRU) and
  :class:`FileStreamProgramCache` (``_file_stream_program_cache``: one atomically written file
  per entry, safe across processes) implement it.

Both caches keep, with the code, its code type and symbol mapping (name expression -> lowered
name) when the stored value is an ObjectCode: ``Program.compile(cache=...)`` reads them back
through the private ``_get_record(key)``, so that template instantiations stay findable by name
on a hit. The public reads return the code alone, as cuda.core's do. An entry is a tuple
``(code: bytes, code_type: str, mapping: dict | None)``; ``code_type`` is ``""`` where the value
stored was bytes (unknown), ``mapping`` None where there is none.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping
from typing import Any

from cuda_core._checks import ArgumentTypeError, check_int
from cuda_core._closable import Closable
from cuda_core._object_code import ObjectCode

__all__ = ["ProgramCacheResource"]


def _key_bytes(key: Any) -> bytes:
    if type(key) is bytes:
        return key
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, (bytes, bytearray)):
        return bytes(key)
    raise TypeError(f"program cache key must be bytes or str, not {type(key).__name__}")


def _entry_from_value(value: Any) -> tuple[bytes, str, dict | None]:
    """Check a value being stored; returns the entry. An ObjectCode's code type and symbol
    mapping (str to str) were checked when it was made."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        code = bytes(value)
        if not code:
            raise ValueError("cannot cache empty code")
        return code, "", None
    if not isinstance(value, ObjectCode):
        raise TypeError(f"a program cache stores ObjectCode or bytes values, "
                        f"not {type(value).__name__}")
    image = value.code
    if isinstance(image, str):
        # An ObjectCode made from a file: the entry holds the file's bytes, read now.
        try:
            with open(image, "rb") as f:
                code = f.read()
        except FileNotFoundError:
            raise FileNotFoundError(f"cannot cache an ObjectCode made from the file {image!r}: "
                                    f"it no longer exists") from None
    else:
        code = image
    if not code:
        raise ValueError("cannot cache an ObjectCode whose code is empty")
    return code, value.code_type, value.symbol_mapping or None


class ProgramCacheResource(abc.ABC):
    """A store of compiled programs: keys are bytes or str, values are the compiled code.

    This is what ``Program.compile(..., cache=...)`` accepts. A subclass implements
    ``__getitem__``, ``__setitem__``, ``__delitem__``, ``__len__`` and ``clear``; ``get``,
    ``update``, ``__contains__``, ``close`` and the context-manager protocol are provided.

    Keys are ``bytes``, ``bytearray`` or ``str`` (a str is encoded as UTF-8, so ``"k"`` and
    ``b"k"`` name the same entry); any other key type is a TypeError naming the type. Use
    :func:`make_program_cache_key` to build keys. Values stored are an ``ObjectCode`` (made
    from bytes or from a file, which is read when it is stored) or ``bytes``; reading gives
    the code as ``bytes``.

    A cache is a context manager: leaving the ``with`` block calls :meth:`close`.
    """

    __slots__ = ("__weakref__",)  # weak references, as cuda.core allows

    @abc.abstractmethod
    def __getitem__(self, key: bytes | str) -> bytes:
        """The code stored under ``key``; KeyError if there is none (or it is unreadable)."""

    @abc.abstractmethod
    def __setitem__(self, key: bytes | str, value) -> None:
        """Store ``value`` (an ObjectCode or bytes) under ``key``, replacing any earlier one."""

    @abc.abstractmethod
    def __delitem__(self, key: bytes | str) -> None:
        """Remove the entry under ``key``; KeyError if there is none."""

    @abc.abstractmethod
    def __len__(self) -> int:
        """The number of entries."""

    @abc.abstractmethod
    def clear(self) -> None:
        """Remove every entry."""

    def __contains__(self, key: bytes | str) -> bool:
        try:
            self[key]
        except KeyError:
            return False
        return True

    def get(self, key: bytes | str, default=None):
        """The code under ``key`` (bytes), or ``default`` on a miss.

        A key of the wrong type is still a TypeError, not a miss.
        """
        try:
            return self[key]
        except KeyError:
            return default

    def update(self, items: Mapping | Iterable, /) -> None:
        """Store every entry of a mapping, or of an iterable of ``(key, value)`` pairs, one
        ``self[key] = value`` after the other (an error leaves the earlier ones stored)."""
        if isinstance(items, Mapping) or hasattr(items, "keys"):
            mapping: Any = items  # a Mapping, or anything with keys() and [] (as dict.update)
            for key in mapping.keys():
                self[key] = mapping[key]
            return
        try:
            pairs = iter(items)
        except TypeError:
            raise TypeError(f"update() takes a mapping or an iterable of (key, value) pairs, "
                            f"not {type(items).__name__}") from None
        for i, item in enumerate(pairs):
            try:
                key, value = item
            except (TypeError, ValueError):
                # Also the ValueError of cuda.core's (and dict.update's) unpacking.
                raise ArgumentTypeError(f"update(): element {i} is not a (key, value) pair "
                                        f"({type(item).__name__})") from None
            self[key] = value

    def close(self) -> None:
        """Release what the cache holds. The base class holds nothing; subclasses override."""

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


class _ProgramCache(ProgramCacheResource, Closable):
    """What both caches share: the size limit and the closed flag."""

    __slots__ = ("_max", "_closed")

    def __init__(self, max_size_bytes: int | float | None):
        if isinstance(max_size_bytes, float):
            # A limit compares with sizes as it is, as in cuda.core (1.5 keeps one byte, inf
            # none out); NaN compares with nothing, so it would never evict.
            if not max_size_bytes > 0:
                raise ValueError(f"max_size_bytes must be > 0, got {max_size_bytes!r}")
            self._max: Any = max_size_bytes
        else:
            self._max = check_int(max_size_bytes, "max_size_bytes", 1, allow_none=True)
        self._closed = False

    @property
    def max_size_bytes(self) -> int | float | None:
        """The size limit in bytes (as given: an int or a float), or None."""
        return self._max
