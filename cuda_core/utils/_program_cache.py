"""Program cache: compiled code kept in memory or on disk, keyed by what produced it.

The pieces:

* :func:`make_program_cache_key` turns the inputs of ``Program(...).compile(...)`` (source,
  code type, options, target, name expressions, compiler version) into a 32-byte SHA-256 key;
* :class:`ProgramCacheResource` is the mapping-like interface ``Program.compile(cache=...)``
  uses: ``cache[key]`` / ``cache.get(key)`` give the cached code as ``bytes``, and
  ``cache[key] = object_code`` stores one;
* :class:`InMemoryProgramCache` (a thread-safe LRU) and :class:`FileStreamProgramCache` (one
  atomically written file per entry, safe across processes) implement it.

Both caches keep, with the code, its code type and symbol mapping (name expression -> lowered
name) when the stored value is an ObjectCode: ``Program.compile(cache=...)`` reads them back
through the private ``_get_record(key)``, so that template instantiations stay findable by name
on a hit. The public reads return the code alone, as cuda.core's do.

Layout of a file-cache record (all integers little-endian)::

    offset  size  field
    0       8     magic b"CCPCACHE"
    8       2     format version (currently 2)
    10      1     code type: 0 unknown (stored as bytes), 1 cubin, 2 ptx, 3 ltoir, 4 fatbin,
                  5 object, 6 library
    11      1     flags (0; reserved)
    12      4     metadata length M (0 when there is no symbol mapping)
    16      8     code length C
    24      4     CRC-32 of metadata + code
    28      M     metadata: UTF-8 JSON object {name expression: lowered name}
    28+M    C     the code (cubin, PTX, LTO IR, ... bytes)

A record whose magic, lengths, checksum or metadata do not check out is *damaged*: reading it is
a miss, and the file cache deletes it. A record with the right magic but another format version
is *foreign* (written by another version of this package): reading it is a miss, and it is left
alone until a store overwrites it.

Nothing here is imported from cuda_core at module level (``cuda_core._program`` imports this
module), so importing it is cheap and makes no driver or compiler call.
"""

from __future__ import annotations

import abc
import collections
import functools
import hashlib
import json
import os
import re
import struct
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "ProgramCacheResource",
    "InMemoryProgramCache",
    "FileStreamProgramCache",
    "make_program_cache_key",
]


# ---------------------------------------------------------------------------------------------
# The ObjectCode class (the one seam)
# ---------------------------------------------------------------------------------------------

def _object_code_class():
    """The class whose instances a cache stores with their code type and symbol mapping:
    ``cuda_core.ObjectCode``, imported at call time.

    Values are read through the public surface of ObjectCode (``code``, ``code_type``,
    ``symbol_mapping``). This function is the only place the cache learns that class; the
    tests replace it with a stand-in.
    """
    from cuda_core import ObjectCode

    return ObjectCode


# ---------------------------------------------------------------------------------------------
# Entries and records
# ---------------------------------------------------------------------------------------------

_MAGIC = b"CCPCACHE"
_FORMAT_VERSION = 2
_HEADER = struct.Struct("<8sHBBIQI")
_CODE_TYPES = ("cubin", "ptx", "ltoir", "fatbin", "object", "library")
_CODE_TYPE_IDS = {ct: i for i, ct in enumerate(_CODE_TYPES, 1)}
_CODE_TYPE_OF_ID = ("",) + _CODE_TYPES

# An entry is a tuple (code: bytes, code_type: str, mapping: dict | None); code_type is ""
# where the value stored was bytes (unknown), mapping None where there is none.


def _key_bytes(key: Any) -> bytes:
    if type(key) is bytes:
        return key
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, (bytes, bytearray)):
        return bytes(key)
    raise TypeError(f"program cache key must be bytes or str, not {type(key).__name__}")


def _entry_from_value(value: Any) -> tuple[bytes, str, dict | None]:
    """Check a value being stored; returns the entry."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        code = bytes(value)
        if not code:
            raise ValueError("cannot cache empty code")
        return code, "", None
    cls = _object_code_class()
    if not isinstance(value, cls):
        raise TypeError(f"a program cache stores {cls.__name__} or bytes values, "
                        f"not {type(value).__name__}")
    code = value.code
    if isinstance(code, str):
        # An ObjectCode made from a file: the entry holds the file's bytes, read now.
        try:
            with open(code, "rb") as f:
                code = f.read()
        except FileNotFoundError:
            raise FileNotFoundError(f"cannot cache an {cls.__name__} made from the file "
                                    f"{code!r}: it no longer exists") from None
    elif isinstance(code, (bytes, bytearray, memoryview)):
        code = bytes(code)
    else:
        raise TypeError(f"{cls.__name__}.code must be bytes or a file path to be cached, "
                        f"not {type(code).__name__}")
    if not code:
        raise ValueError(f"cannot cache an {cls.__name__} whose code is empty")
    code_type = value.code_type
    if code_type not in _CODE_TYPE_IDS:
        raise ValueError(f"cannot cache an {cls.__name__} of code_type {code_type!r}; "
                         f"expected one of {', '.join(_CODE_TYPES)}")
    raw = value.symbol_mapping
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise TypeError(f"{cls.__name__}.symbol_mapping must be a dict to be cached, "
                        f"not {type(raw).__name__}")
    for expr, lowered in raw.items():
        if not isinstance(expr, str) or not isinstance(lowered, str):
            raise TypeError(f"{cls.__name__}.symbol_mapping must map str to str to be cached; "
                            f"found {type(expr).__name__} -> {type(lowered).__name__}")
    return code, str(code_type), (dict(raw) if raw else None)


def _encode_record(entry: tuple[bytes, str, dict | None]) -> bytes:
    code, code_type, mapping = entry
    meta = b""
    if mapping:
        meta = json.dumps(mapping, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    crc = zlib.crc32(code, zlib.crc32(meta))
    header = _HEADER.pack(_MAGIC, _FORMAT_VERSION, _CODE_TYPE_IDS.get(code_type, 0), 0,
                          len(meta), len(code), crc)
    return b"".join((header, meta, code))


class _UnreadableRecord(Exception):
    """A record that cannot be decoded; ``damaged`` is False only for a foreign version."""

    def __init__(self, why: str, damaged: bool = True):
        super().__init__(why)
        self.damaged = damaged


def _check_header(header: bytes) -> tuple[int, int, int, int]:
    """(code type id, metadata length, code length, crc) of a record's header."""
    if len(header) < _HEADER.size:
        raise _UnreadableRecord(f"truncated header ({len(header)} bytes)")
    magic, version, type_id, flags, meta_len, code_len, crc = _HEADER.unpack(header)
    if magic != _MAGIC:
        raise _UnreadableRecord("bad magic")
    if version != _FORMAT_VERSION:
        raise _UnreadableRecord(f"record format version {version}", damaged=False)
    if flags != 0 or type_id >= len(_CODE_TYPE_OF_ID):
        raise _UnreadableRecord(f"unknown flags {flags:#x} or code type {type_id}")
    return type_id, meta_len, code_len, crc


def _decode_body(type_id: int, meta_len: int, code_len: int, crc: int,
                 body: bytes) -> tuple[bytes, str, dict | None]:
    """The entry of a record whose header was checked, from the bytes after the header."""
    if len(body) != meta_len + code_len:
        raise _UnreadableRecord(f"{len(body)} bytes after the header; the header says "
                                f"{meta_len + code_len}")
    if zlib.crc32(body) != crc:
        raise _UnreadableRecord("checksum mismatch")
    if not meta_len:
        return body, _CODE_TYPE_OF_ID[type_id], None
    try:
        mapping = json.loads(body[:meta_len].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _UnreadableRecord(f"bad metadata: {exc}") from None
    if (not isinstance(mapping, dict)
            or not all(isinstance(v, str) for v in mapping.values())):
        raise _UnreadableRecord("bad metadata values")
    return body[meta_len:], _CODE_TYPE_OF_ID[type_id], mapping or None


def _decode_record(data: bytes) -> tuple[bytes, str, dict | None]:
    """Decode a whole record; raises _UnreadableRecord for anything that does not check out."""
    return _decode_body(*_check_header(data[:_HEADER.size]), data[_HEADER.size:])


def _check_max_size(max_size_bytes: Any) -> int | None:
    if max_size_bytes is None:
        return None
    if type(max_size_bytes) is bool or not isinstance(max_size_bytes, int):
        raise TypeError(f"max_size_bytes must be an int or None, "
                        f"not {type(max_size_bytes).__name__}")
    if max_size_bytes <= 0:
        raise ValueError(f"max_size_bytes must be positive, got {max_size_bytes}")
    return int(max_size_bytes)


# ---------------------------------------------------------------------------------------------
# The interface
# ---------------------------------------------------------------------------------------------

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

    __slots__ = ()

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
                raise TypeError(f"update(): element {i} is not a (key, value) pair "
                                f"({type(item).__name__})") from None
            self[key] = value

    def close(self) -> None:
        """Release what the cache holds. The base class holds nothing; subclasses override."""

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


# ---------------------------------------------------------------------------------------------
# In memory
# ---------------------------------------------------------------------------------------------

class InMemoryProgramCache(ProgramCacheResource):
    """A thread-safe, least-recently-used program cache held in this process's memory.

    Parameters
    ----------
    max_size_bytes : int or None, keyword-only
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

    __slots__ = ("_max", "_entries", "_size", "_lock", "_closed")

    def __init__(self, *, max_size_bytes: int | None = None):
        self._max = _check_max_size(max_size_bytes)
        self._entries: collections.OrderedDict[bytes, tuple] = collections.OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self._closed = False

    @property
    def max_size_bytes(self) -> int | None:
        """The size limit in bytes, or None."""
        return self._max

    @property
    def is_closed(self) -> bool:
        """True once :meth:`close` has been called."""
        return self._closed

    def _closed_error(self) -> RuntimeError:
        return RuntimeError("this InMemoryProgramCache is closed")

    def _get_record(self, key: bytes) -> tuple[bytes, str, dict | None] | None:
        """The entry under ``key`` (bytes), or None; a hit is made the most recently used."""
        with self._lock:
            if self._closed:
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
            if self._closed:
                raise self._closed_error()
            old = self._entries.pop(k, None)
            if old is not None:
                self._size -= len(old[0])
            if self._max is not None and size > self._max:
                return
            self._entries[k] = entry
            self._size += size
            if self._max is not None:
                while self._size > self._max:
                    _, evicted = self._entries.popitem(last=False)
                    self._size -= len(evicted[0])

    def __delitem__(self, key) -> None:
        k = _key_bytes(key)
        with self._lock:
            if self._closed:
                raise self._closed_error()
            try:
                entry = self._entries.pop(k)
            except KeyError:
                raise KeyError(key) from None
            self._size -= len(entry[0])

    def __contains__(self, key) -> bool:
        k = _key_bytes(key)
        with self._lock:
            if self._closed:
                raise self._closed_error()
            return k in self._entries

    def __len__(self) -> int:
        with self._lock:
            if self._closed:
                raise self._closed_error()
            return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            if self._closed:
                raise self._closed_error()
            self._entries.clear()
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


# ---------------------------------------------------------------------------------------------
# On disk
# ---------------------------------------------------------------------------------------------

_ENTRY_NAME = re.compile(r"[0-9a-f]{64}\Z")
_TMP_PREFIX = ".tmp-"
# A temporary file older than this was left by a writer that died between creating and
# renaming it; the next eviction pass or clear() removes it.
_STALE_TMP_NS = 3600 * 10**9
_O_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
# A record body larger than this is read only once the file's size confirms its header.
_LARGE_BODY = 1 << 24
# Refreshing an entry's time through the descriptor already open saves a path lookup.
_UTIME_FD = os.utime in os.supports_fd


def _default_cache_dir() -> str:
    """``$XDG_CACHE_HOME/cuda-python/program-cache`` (``~/.cache`` when unset); on Windows
    ``%LOCALAPPDATA%\\cuda-python\\program-cache``."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(
            os.path.expanduser("~"), "AppData", "Local")
    else:
        base = os.environ.get("XDG_CACHE_HOME", "")
        # The XDG spec says a relative value is invalid and is to be ignored.
        if not os.path.isabs(base):
            base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cuda-python", "program-cache")


def _replace(src: str, dst: str) -> None:
    if sys.platform != "win32":
        os.replace(src, dst)
        return
    # Windows refuses to replace a file another process has open (a reader); retry briefly.
    for delay in (0.001, 0.005, 0.02, 0.1, 0.5):
        try:
            os.replace(src, dst)
            return
        except PermissionError:
            time.sleep(delay)
    os.replace(src, dst)


def _read_exactly(fd: int, n: int) -> bytes:
    """The rest of a file, expected to be ``n`` bytes: one read of ``n + 1`` returns it from a
    regular file (the extra byte, if any, reveals a file longer than its header says)."""
    data = os.read(fd, n + 1)
    if len(data) < n:
        # A short read before the end of the file is rare (a signal); read on to the end.
        parts = [data]
        got = len(data)
        while got <= n:
            chunk = os.read(fd, n + 1 - got)
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
        data = b"".join(parts)
    return data


class FileStreamProgramCache(ProgramCacheResource):
    """A program cache in a directory: one file per entry, safe to share between processes.

    Parameters
    ----------
    path : str, os.PathLike or None
        The directory. None (the default) means ``$XDG_CACHE_HOME/cuda-python/program-cache``
        (``~/.cache/cuda-python/program-cache`` when ``XDG_CACHE_HOME`` is unset or not an
        absolute path), or ``%LOCALAPPDATA%\\cuda-python\\program-cache`` on Windows. The
        directory is created, with mode ``0o700``, the first time an entry is stored.
    max_size_bytes : int or None, keyword-only
        The most bytes the entry files may take together on disk; None (the default) means no
        limit. After each store this process deletes the least-recently-used files until the
        total fits; a single entry larger than the limit is not stored (and any earlier entry
        under its key is removed).

    Notes
    -----
    * Each entry is a file named by the SHA-256 hex digest of its key, holding one record (see
      the module docstring): a 28-byte header with a CRC-32, the symbol mapping if any, and the
      code. It is written to a temporary file in the same directory, flushed with ``fsync``
      and renamed over the final name (``os.replace``), so a reader sees either the old
      complete file or the new complete one, never a partial one. When several processes
      store under one key at once, the last rename wins.
    * Recency is the file's modification time: a store sets it, and so does every hit
      (``os.utime``). Eviction deletes the files with the oldest times first. With several
      writers the limit is enforced by each of them after its own stores, so the total can
      exceed it briefly.
    * Files may vanish at any moment (another process evicting or clearing): that is a miss,
      never an error. A damaged file (truncated, bad checksum) is a miss and is deleted.
    * Storing propagates OSError (disk full, permissions); a hit whose time cannot be updated
      (a read-only cache directory) is still a hit.
    * ``close()`` only marks the object closed (the files stay); any later use is a
      RuntimeError. ``close()`` may be called more than once.
    """

    __slots__ = ("_path", "_prefix", "_max", "_closed")

    def __init__(self, path: str | os.PathLike | None = None, *,
                 max_size_bytes: int | None = None):
        if path is None:
            path = _default_cache_dir()
        elif isinstance(path, (str, os.PathLike)):
            path = os.fspath(path)
            if not isinstance(path, str):
                raise TypeError(f"path must be a str or os.PathLike of str, "
                                f"not {type(path).__name__}")
            if not path:
                raise ValueError("path must not be empty")
        else:
            raise TypeError(f"path must be a str, os.PathLike or None, "
                            f"not {type(path).__name__}")
        self._max = _check_max_size(max_size_bytes)
        path = os.path.abspath(path)
        if os.path.exists(path) and not os.path.isdir(path):
            raise ValueError(f"path {path!r} exists and is not a directory")
        self._path = path
        self._prefix = os.path.join(path, "")  # the directory and a separator: + file name
        self._closed = False

    @property
    def path(self) -> str:
        """The cache directory (absolute)."""
        return self._path

    @property
    def max_size_bytes(self) -> int | None:
        """The size limit in bytes, or None."""
        return self._max

    @property
    def is_closed(self) -> bool:
        """True once :meth:`close` has been called."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this FileStreamProgramCache is closed")

    def _entry_path(self, k: bytes) -> str:
        return self._prefix + hashlib.sha256(k).hexdigest()

    def _load(self, path: str, touch: bool) -> tuple[bytes, str, dict | None] | None:
        """The entry in ``path``, or None on a miss (a damaged file is deleted); ``touch``
        refreshes the time of a hit."""
        try:
            fd = os.open(path, _O_READ)
        except FileNotFoundError:
            return None
        try:
            try:
                fields = _check_header(os.read(fd, _HEADER.size))
                n = fields[1] + fields[2]
                if n > _LARGE_BODY and n + _HEADER.size != os.fstat(fd).st_size:
                    # A damaged header must not make us allocate what it claims.
                    raise _UnreadableRecord(f"the header claims {n} bytes; the file is smaller")
                entry = _decode_body(*fields, _read_exactly(fd, n))
            except _UnreadableRecord as exc:
                if exc.damaged:
                    self._unlink_if_same(path, os.fstat(fd))
                return None
            if touch:
                # An explicit time: the kernel's "now" is coarser than the clock stores use,
                # and would let a hit look older than a store just before it.
                t = time.time_ns()
                try:
                    os.utime(fd if _UTIME_FD else path, ns=(t, t))
                except OSError:
                    pass  # a read-only cache: still a hit
            return entry
        finally:
            os.close(fd)

    @staticmethod
    def _unlink_if_same(path: str, st: os.stat_result) -> bool:
        # Delete ``path`` only if it is still the file described by ``st``: another process may
        # have renamed a fresh entry over it since it was read or listed.
        try:
            now = os.stat(path)
            if (now.st_ino, now.st_dev, now.st_mtime_ns, now.st_size) != (
                    st.st_ino, st.st_dev, st.st_mtime_ns, st.st_size):
                return False
            os.unlink(path)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            return False

    def _get_record(self, key: bytes) -> tuple[bytes, str, dict | None] | None:
        """The entry under ``key`` (bytes), or None; a hit's time is refreshed."""
        if self._closed:
            self._check_open()
        return self._load(self._prefix + hashlib.sha256(key).hexdigest(), True)

    def __getitem__(self, key) -> bytes:
        entry = self._get_record(_key_bytes(key))
        if entry is None:
            raise KeyError(key)
        return entry[0]

    def __contains__(self, key) -> bool:
        k = _key_bytes(key)
        self._check_open()
        return self._load(self._entry_path(k), False) is not None

    def __setitem__(self, key, value) -> None:
        k = _key_bytes(key)
        self._check_open()
        path = self._entry_path(k)
        record = _encode_record(_entry_from_value(value))
        if self._max is not None and len(record) > self._max:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            return
        self._write_atomic(path, record)
        if self._max is not None:
            self._evict(protect=os.path.basename(path))

    def _write_atomic(self, path: str, record: bytes) -> None:
        for attempt in (0, 1):
            os.makedirs(self._path, mode=0o700, exist_ok=True)
            try:
                fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, dir=self._path)
                break
            except FileNotFoundError:
                # Another process removed the directory between makedirs and mkstemp.
                if attempt:
                    raise
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(record)
                f.flush()
                os.fsync(f.fileno())
            t = time.time_ns()
            os.utime(tmp, ns=(t, t))
            _replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def _scan(self) -> list[tuple[int, str, int, os.stat_result]]:
        """(mtime_ns, name, size, stat) of every entry file; removes stale temporary files."""
        found: list[tuple[int, str, int, os.stat_result]] = []
        now = time.time_ns()
        try:
            it = os.scandir(self._path)
        except FileNotFoundError:
            return found
        with it:
            for de in it:
                name = de.name
                if _ENTRY_NAME.match(name):
                    try:
                        st = de.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    found.append((st.st_mtime_ns, name, st.st_size, st))
                elif name.startswith(_TMP_PREFIX):
                    try:
                        if now - de.stat(follow_symlinks=False).st_mtime_ns > _STALE_TMP_NS:
                            os.unlink(de.path)
                    except OSError:
                        pass
        return found

    def _evict(self, protect: str) -> None:
        limit = self._max
        if limit is None:  # unbounded
            return
        found = self._scan()
        total = sum(size for _, _, size, _ in found)
        if total <= limit:
            return
        found.sort(key=lambda e: (e[0], e[1]))
        for _, name, size, st in found:
            if total <= limit:
                break
            if name == protect:
                continue
            if self._unlink_if_same(os.path.join(self._path, name), st):
                total -= size

    def __delitem__(self, key) -> None:
        k = _key_bytes(key)
        self._check_open()
        try:
            os.unlink(self._entry_path(k))
        except FileNotFoundError:
            raise KeyError(key) from None

    def __len__(self) -> int:
        self._check_open()
        try:
            with os.scandir(self._path) as it:
                return sum(1 for de in it if _ENTRY_NAME.match(de.name))
        except FileNotFoundError:
            return 0

    def clear(self) -> None:
        """Delete every entry file (and stale temporary files); the directory stays."""
        self._check_open()
        for _, name, _, _ in self._scan():
            try:
                os.unlink(os.path.join(self._path, name))
            except FileNotFoundError:
                pass

    def close(self) -> None:
        """Mark the cache closed (the files stay); later use raises RuntimeError. Idempotent."""
        self._closed = True

    def __repr__(self) -> str:
        return (f"FileStreamProgramCache({self._path!r}, max_size_bytes={self._max})"
                + (" (closed)" if self._closed else ""))


# ---------------------------------------------------------------------------------------------
# Keys
# ---------------------------------------------------------------------------------------------

# Changed whenever what goes into a key, or how, changes: old entries then simply miss.
_KEY_FORMAT = "cuda_core.program_cache.key/2"
_BACKENDS = {"c++": "nvrtc", "nvvm": "nvvm", "ptx": "nvjitlink"}
_CODE_TYPE_NAMES = {"c++": "c++", "ptx": "ptx", "nvvm": "nvvm"}
_TARGETS = {"c++": ("ptx", "cubin", "ltoir"), "nvvm": ("ptx", "ltoir"), "ptx": ("cubin", "ptx")}


def _lib_identity(libname: str) -> str:
    """File name and size of the compiler library cuda.bindings loads: release numbers alone do
    not tell patch releases apart (and libNVVM's stays at 2.0 across toolkits)."""
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        path = load_nvidia_dynamic_lib(libname).abs_path
        if not path:
            return "lib unknown"
        return f"lib {os.path.basename(path)}:{os.stat(path).st_size}"
    except Exception:  # any failure to locate the library only makes the key less specific
        return "lib unknown"


def _driver_linker_identity() -> str:
    """The driver's version, for PTX linked by the driver's cuLink (no nvJitLink)."""
    try:
        from cuda.bindings import driver

        err, version = driver.cuDriverGetVersion()
        if err != driver.CUresult.CUDA_SUCCESS:
            return "driver linker unknown"
        return f"driver linker {version}"
    except Exception:
        return "driver linker unknown"


@functools.lru_cache(maxsize=None)
def _compiler_identity(backend: str) -> str:
    """A string naming the compiler that serves ``backend``, or containing "unknown"."""
    # Every failure (module or library missing, an error status) yields "unknown" rather than an
    # exception: the key must be computable wherever the source could be compiled.
    try:
        if backend == "nvrtc":
            from cuda.bindings import nvrtc

            err, major, minor = nvrtc.nvrtcVersion()
            if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
                return "nvrtc unknown"
            return f"nvrtc {major}.{minor} " + _lib_identity("nvrtc")
        if backend == "nvvm":
            from cuda.bindings import nvvm

            version = ".".join(map(str, nvvm.version()))
            ir = ".".join(map(str, nvvm.ir_version()))
            return f"nvvm {version} ir {ir} " + _lib_identity("nvvm")
        if backend == "nvjitlink":
            # As Linker.which_backend(): nvJitLink 12.3+, else the driver's linker.
            linker_version: tuple[int, ...] | None
            try:
                from cuda.bindings import nvjitlink

                linker_version = tuple(nvjitlink.version())
            except Exception:
                linker_version = None
            if linker_version is None or linker_version < (12, 3):
                return _driver_linker_identity()
            return f"nvjitlink {'.'.join(map(str, linker_version))} " + _lib_identity("nvJitLink")
    except Exception:
        return f"{backend} unknown"
    raise AssertionError(backend)


def _digest(code: bytes, code_type: str, target: str, arch: str, option_fields: tuple,
            names: tuple, extra_digest: bytes | None) -> bytes:
    """SHA-256 over an unambiguous encoding of the key's inputs (checked and normalized by the
    caller). The head is NUL-separated text: no part holds a NUL (the two tuples are given as
    their repr, which escapes one); the lengths it ends with delimit the bytes after it."""
    head = "\0".join((
        _KEY_FORMAT, code_type, target, arch, _compiler_identity(_BACKENDS[code_type]),
        repr(option_fields) if option_fields else "",
        repr(names) if names else "",
        "-" if extra_digest is None else str(len(extra_digest)),
        str(len(code)),
    )).encode("utf-8", "backslashreplace")
    return hashlib.sha256(b"".join((head, b"\0", extra_digest or b"", code))).digest()


def make_program_cache_key(*, code: str | bytes, code_type: str, options: Any,
                           target_type: str, name_expressions: Iterable[str | bytes] = (),
                           extra_digest: bytes | None = None) -> bytes:
    """A 32-byte key naming the result of ``Program(code, code_type, options).compile(...)``.

    The key is the SHA-256 digest of an unambiguous encoding of: a key-format version; the
    source as UTF-8 bytes (a str and the bytes of its UTF-8 text give one key); ``code_type``
    and ``target_type``; ``options.arch`` (filled in from the current device when unset, as
    ``Program`` does); the other options that are set, each in a normalized form; the name
    expressions; the compiler that serves ``code_type`` (the NVRTC, libNVVM or nvJitLink
    version with the file name and size of its library, or the driver's version where the
    driver links PTX; ``"unknown"`` where it cannot be learned); and ``extra_digest``. Equal
    inputs give equal keys, in any process. ``Program.compile(cache=...)`` uses the same key.

    Parameters
    ----------
    code : str or bytes
        The program source (C++, PTX, or NVVM IR / bitcode), as given to ``Program``.
    code_type : str
        ``"c++"``, ``"ptx"`` or ``"nvvm"`` (compared case-insensitively).
    options : ProgramOptions, dict or None
        As given to ``Program`` (a dict of ProgramOptions fields, or None for the defaults).
        Spellings that reach the compiler as the same flags give the same key: ``"X"`` and
        ``["X"]``, ``("X", "1")`` and ``"X=1"`` for a macro, a ``pathlib.Path`` and its str,
        ``False`` and unset for a flag that is only ever switched on (``debug``), and the
        program name given or left at its default.
    target_type : str
        ``"ptx"``, ``"cubin"`` or ``"ltoir"``, as allowed for ``code_type``: C++ gives any of
        the three, NVVM ``"ptx"`` or ``"ltoir"``, PTX ``"cubin"`` or ``"ptx"``.
    name_expressions : sequence of str or bytes
        The name expressions passed to ``compile``. Their order does not matter; a repeated
        one does, and ``"f"`` and ``b"f"`` give different keys.
    extra_digest : bytes or None
        Anything else the result depends on, e.g. a digest of the headers the source includes.
        ``b""`` and None give different keys.

    Returns
    -------
    bytes
        32 bytes.

    Raises
    ------
    TypeError
        A parameter of the wrong type (naming it).
    ValueError
        An unknown ``code_type``; a ``target_type`` the code type cannot produce; an option
        the backend of the code type cannot honour (as ``Program`` refuses it); an option a
        key cannot stand for (see the notes).
    RuntimeError
        ``options.arch`` is unset and no CUDA context is current to take it from.

    Notes
    -----
    Options with a side effect, which a cache hit would skip, are refused with a ValueError
    whatever ``extra_digest``: ``create_pch`` (writes a precompiled header), ``time`` (writes
    a CSV) and ``fdevice_time_trace`` (writes a trace).

    Header files are **not** hashed. Inputs that make the compiler read files are refused with
    a ValueError unless ``extra_digest`` is given: ``include_path``, ``pre_include``, ``pch``,
    ``use_pch`` and ``pch_dir`` for C++, ``use_libdevice`` for NVVM, and, for C++, a
    ``name`` with a directory part (NVRTC resolves quoted ``#include`` files from it). Hash
    those files yourself and pass the digest, so that editing one changes the key. Headers the
    compiler ships are covered by the compiler identity.
    """
    # cuda_core._program imports this module, so it is loaded by now (the import is a look-up).
    from cuda_core import _program
    if isinstance(code, str):
        pass
    elif isinstance(code, (bytes, bytearray)):
        code = bytes(code)
    else:
        raise TypeError(f"code must be a str or bytes, not {type(code).__name__} "
                        f"(read a file's contents and pass them)")
    if not isinstance(code_type, str):
        raise TypeError(f"code_type must be a str, not {type(code_type).__name__}")
    ct = _CODE_TYPE_NAMES.get(code_type) or _CODE_TYPE_NAMES.get(str.__str__(code_type).lower())
    if ct is None:
        raise ValueError(f"code_type must be one of 'c++', 'ptx', 'nvvm', got {code_type!r}")
    if not isinstance(target_type, str):
        raise TypeError(f"target_type must be a str, not {type(target_type).__name__}")
    tt = str.__str__(target_type)
    if tt not in _TARGETS[ct]:
        tt = tt.lower()
        if tt not in _TARGETS[ct]:
            raise ValueError(f"target_type {target_type!r} is not supported for code_type "
                             f"{ct!r}; expected one of {', '.join(map(repr, _TARGETS[ct]))}")
    opts = options
    if type(opts) is not _program.ProgramOptions:
        if isinstance(opts, dict) or opts is None or isinstance(opts, _program.ProgramOptions):
            opts = _program.check_or_create_options(_program.ProgramOptions, opts,
                                                    "make_program_cache_key(): options")
        else:
            raise TypeError(f"options must be a ProgramOptions, a dict of its fields or None, "
                            f"not {type(opts).__name__}")
    d = opts.__dict__
    if ct == "c++":
        if not _program._NVRTC_INIT_CHECK.isdisjoint(d):
            opts._check_backend("NVRTC")
    elif not d.keys() <= (_program._NVVM_ALLOWED if ct == "nvvm" else _program._PTX_ALLOWED):
        opts._check_backend(_program._BACKEND_OF[ct])
    arch = d.get("arch")
    if arch is None:
        from cuda_core import _compiler_utils

        arch = _compiler_utils.resolve_arch("ProgramOptions", None)
    names: tuple[str | bytes, ...]
    if type(name_expressions) is tuple and not name_expressions:
        names = ()
    else:
        if isinstance(name_expressions, (str, bytes, bytearray)) or not isinstance(
                name_expressions, Iterable):
            raise TypeError(f"name_expressions must be a sequence of str or bytes, "
                            f"not {type(name_expressions).__name__}")
        found: list[str | bytes] = []
        for i, expr in enumerate(name_expressions):
            if isinstance(expr, str):
                found.append(str.__str__(expr))
            elif isinstance(expr, bytes):
                found.append(bytes(expr))
            else:
                raise TypeError(f"name_expressions[{i}] must be a str or bytes, "
                                f"not {type(expr).__name__}")
        names = tuple(found)
    if extra_digest is not None:
        if not isinstance(extra_digest, (bytes, bytearray)):
            raise TypeError(f"extra_digest must be bytes or None, "
                            f"not {type(extra_digest).__name__}")
        extra_digest = bytes(extra_digest)
    return _program._cache_key(code, ct, opts, arch, tt, names, extra_digest)
