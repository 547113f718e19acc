"""Program cache: compiled ObjectCode kept in memory or on disk, keyed by what produced it.

The pieces:

* :func:`make_program_cache_key` turns the inputs of ``Program(...).compile(...)`` (source,
  code type, options, target, name expressions, compiler version) into a 32-byte SHA-256 key;
* :class:`ProgramCacheResource` is the mapping-like interface ``Program.compile(cache=...)``
  uses: ``cache.get(key)`` and ``cache[key] = object_code``;
* :class:`InMemoryProgramCache` (a thread-safe LRU) and :class:`FileStreamProgramCache` (one
  atomically written file per entry, safe across processes) implement it.

Both caches hold *records*: a small, versioned, self-describing binary encoding of an
ObjectCode's public surface (``code``, ``code_type``, ``name``, ``symbol_mapping``), so an
entry comes back with its symbol mapping (template instantiations stay findable by name).

Layout of a record (all integers little-endian)::

    offset  size  field
    0       8     magic b"CCPCACHE"
    8       2     format version (currently 1)
    10      2     flags (0; reserved)
    12      4     metadata length M
    16      8     code length C
    24      4     CRC-32 of metadata + code
    28      M     metadata: UTF-8 JSON {"code_type": str, "name": str, "symbol_mapping": {str: str}}
    28+M    C     the code (cubin, PTX, LTO-IR, ... bytes)

A record whose magic, lengths, checksum or metadata do not check out is *damaged*: reading it is
a miss, and the file cache deletes it. A record with the right magic but another format version
is *foreign* (written by another version of this package): reading it is a miss, and it is left
alone until a store overwrites it.

Nothing here is imported from cuda_core at module level; the ObjectCode class is looked up when
an entry is read back (:func:`_object_code_class`), so importing this module is cheap and makes
no driver or compiler call.
"""

from __future__ import annotations

import abc
import collections
import dataclasses
import enum
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
from typing import Any, NamedTuple

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
    """The class a cache entry is rebuilt as: ``cuda_core.ObjectCode``, imported at call time.

    Values are stored through the public surface of ObjectCode (``code``, ``code_type``,
    ``name``, ``symbol_mapping``) and rebuilt with
    ``ObjectCode.from_<code_type>(code, name=..., symbol_mapping=...)``. This function is the
    only place the cache learns that class; the tests replace it with a stand-in.
    """
    from cuda_core import ObjectCode

    return ObjectCode


# ---------------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------------

_MAGIC = b"CCPCACHE"
_FORMAT_VERSION = 1
_HEADER = struct.Struct("<8sHHIQI")
_CODE_TYPES = ("cubin", "ptx", "ltoir", "fatbin", "object", "library")


class _Entry(NamedTuple):
    """The public surface of one ObjectCode, plus the size of its record."""

    code: bytes
    code_type: str
    name: str
    symbol_mapping: tuple[tuple[str, str], ...]  # insertion order kept
    size: int  # bytes of the encoded record: what counts against max_size_bytes


class _UnreadableRecord(Exception):
    """A record that cannot be decoded; ``damaged`` is False only for a foreign version."""

    def __init__(self, why: str, damaged: bool = True):
        super().__init__(why)
        self.damaged = damaged


def _key_bytes(key: Any) -> bytes:
    if type(key) is bytes:
        return key
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, bytes):
        return bytes(key)
    raise TypeError(f"program cache key must be bytes or str, not {type(key).__name__}")


def _metadata_bytes(code_type: str, name: str, symbol_mapping) -> bytes:
    meta = {"code_type": code_type, "name": name, "symbol_mapping": dict(symbol_mapping)}
    return json.dumps(meta, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def _entry_from_value(value: Any) -> tuple[_Entry, bytes]:
    """Check a value being stored; returns the entry and its metadata bytes."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        # Raw bytes are taken to be a cubin with neither name nor symbol mapping.
        code, code_type, name, mapping = bytes(value), "cubin", "", ()
    else:
        cls = _object_code_class()
        if not isinstance(value, cls):
            raise TypeError(f"a program cache stores {cls.__name__} or bytes values, "
                            f"not {type(value).__name__}")
        code = value.code
        if isinstance(code, str):
            raise TypeError(f"cannot cache an {cls.__name__} whose code is a file path "
                            f"({code!r}); load the file's bytes instead")
        if not isinstance(code, (bytes, bytearray, memoryview)):
            raise TypeError(f"{cls.__name__}.code must be bytes to be cached, "
                            f"not {type(code).__name__}")
        code = bytes(code)
        code_type = value.code_type
        if code_type not in _CODE_TYPES:
            raise ValueError(f"cannot cache an {cls.__name__} of code_type {code_type!r}; "
                             f"expected one of {', '.join(_CODE_TYPES)}")
        name = value.name
        if name is None:
            name = ""
        if not isinstance(name, str):
            raise TypeError(f"{cls.__name__}.name must be a str to be cached, "
                            f"not {type(name).__name__}")
        raw_mapping = value.symbol_mapping
        if raw_mapping is None:
            raw_mapping = {}
        if not isinstance(raw_mapping, Mapping):
            raise TypeError(f"{cls.__name__}.symbol_mapping must be a dict to be cached, "
                            f"not {type(raw_mapping).__name__}")
        mapping = tuple(raw_mapping.items())
        for expr, lowered in mapping:
            if not isinstance(expr, str) or not isinstance(lowered, str):
                raise TypeError(f"{cls.__name__}.symbol_mapping must map str to str to be "
                                f"cached; found {type(expr).__name__} -> "
                                f"{type(lowered).__name__}")
    meta = _metadata_bytes(code_type, name, mapping)
    return _Entry(code, code_type, name, mapping, _HEADER.size + len(meta) + len(code)), meta


def _encode_record(entry: _Entry, meta: bytes) -> bytes:
    crc = zlib.crc32(entry.code, zlib.crc32(meta))
    header = _HEADER.pack(_MAGIC, _FORMAT_VERSION, 0, len(meta), len(entry.code), crc)
    return b"".join((header, meta, entry.code))


def _decode_record(data: bytes) -> _Entry:
    """Decode a record; raises _UnreadableRecord for anything that does not check out."""
    if len(data) < _HEADER.size:
        raise _UnreadableRecord(f"truncated header ({len(data)} bytes)")
    magic, version, flags, meta_len, code_len, crc = _HEADER.unpack_from(data)
    if magic != _MAGIC:
        raise _UnreadableRecord("bad magic")
    if version != _FORMAT_VERSION:
        raise _UnreadableRecord(f"record format version {version}", damaged=False)
    if flags != 0:
        raise _UnreadableRecord(f"unknown flags {flags:#x}")
    if len(data) != _HEADER.size + meta_len + code_len:
        raise _UnreadableRecord(f"length {len(data)} does not match the header")
    view = memoryview(data)
    meta = view[_HEADER.size:_HEADER.size + meta_len]
    code = view[_HEADER.size + meta_len:]
    if zlib.crc32(code, zlib.crc32(meta)) != crc:
        raise _UnreadableRecord("checksum mismatch")
    try:
        info = json.loads(bytes(meta).decode("ascii"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _UnreadableRecord(f"bad metadata: {exc}") from None
    if not isinstance(info, dict) or set(info) != {"code_type", "name", "symbol_mapping"}:
        raise _UnreadableRecord("bad metadata fields")
    code_type, name, mapping = info["code_type"], info["name"], info["symbol_mapping"]
    if (code_type not in _CODE_TYPES or not isinstance(name, str)
            or not isinstance(mapping, dict)
            or not all(isinstance(v, str) for v in mapping.values())):
        raise _UnreadableRecord("bad metadata values")
    return _Entry(bytes(code), code_type, name, tuple(mapping.items()), len(data))


def _build_object_code(entry: _Entry):
    cls = _object_code_class()
    factory = getattr(cls, "from_" + entry.code_type)
    return factory(entry.code, name=entry.name, symbol_mapping=dict(entry.symbol_mapping))


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
    """A store of compiled programs: keys are bytes or str, values are ObjectCode.

    This is what ``Program.compile(..., cache=...)`` accepts. A subclass implements
    ``__getitem__``, ``__setitem__``, ``__delitem__``, ``__len__`` and ``clear``; ``get``,
    ``update``, ``__contains__``, ``close`` and the context-manager protocol are provided.

    Keys are ``bytes`` or ``str`` (a str is encoded as UTF-8, so ``"k"`` and ``b"k"`` name the
    same entry); any other key type is a TypeError naming the type. Use
    :func:`make_program_cache_key` to build keys. Values stored are an ``ObjectCode`` or
    ``bytes`` (taken as a cubin with no name and no symbol mapping); reading always gives an
    ``ObjectCode``, a new one each time.

    A cache is a context manager: leaving the ``with`` block calls :meth:`close`.
    """

    __slots__ = ()

    @abc.abstractmethod
    def __getitem__(self, key: bytes | str):
        """The ObjectCode stored under ``key``; KeyError if there is none (or it is unreadable)."""

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
        """The ObjectCode under ``key``, or ``default`` on a miss.

        A key of the wrong type is still a TypeError, not a miss.
        """
        try:
            return self[key]
        except KeyError:
            return default

    def update(self, mapping_or_iterable: Mapping | Iterable = ()) -> None:
        """Store every entry of a mapping, or of an iterable of ``(key, value)`` pairs."""
        if isinstance(mapping_or_iterable, Mapping) or hasattr(mapping_or_iterable, "keys"):
            for key in mapping_or_iterable.keys():
                self[key] = mapping_or_iterable[key]
            return
        try:
            items = iter(mapping_or_iterable)
        except TypeError:
            raise TypeError(f"update() takes a mapping or an iterable of (key, value) pairs, "
                            f"not {type(mapping_or_iterable).__name__}") from None
        for i, item in enumerate(items):
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
        The most bytes the entries may take together; None (the default) means no limit. An
        entry's size is the size of its serialized record: the code plus a small header and
        its name and symbol mapping (the same bytes :class:`FileStreamProgramCache` writes to a
        file). Storing an entry evicts least-recently-used entries until the total fits; an
        entry larger than the whole limit is not stored (and any earlier entry under its key is
        dropped).

    Notes
    -----
    Reading an entry (``cache[key]`` or ``get``) makes it the most recently used; ``in`` does
    not. All operations hold one lock, so the cache can be shared between threads; the
    ObjectCode is built outside it. ``close()`` drops every entry; any later use is a
    RuntimeError. ``close()`` may be called more than once.
    """

    __slots__ = ("_max", "_entries", "_size", "_lock", "_closed")

    def __init__(self, *, max_size_bytes: int | None = None):
        self._max = _check_max_size(max_size_bytes)
        self._entries: collections.OrderedDict[bytes, _Entry] = collections.OrderedDict()
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

    def _check_open(self) -> None:
        # Called with the lock held.
        if self._closed:
            raise RuntimeError("this InMemoryProgramCache is closed")

    def __getitem__(self, key):
        k = _key_bytes(key)
        with self._lock:
            self._check_open()
            try:
                entry = self._entries[k]
            except KeyError:
                raise KeyError(key) from None
            self._entries.move_to_end(k)
        return _build_object_code(entry)

    def __setitem__(self, key, value) -> None:
        k = _key_bytes(key)
        entry, _ = _entry_from_value(value)
        with self._lock:
            self._check_open()
            old = self._entries.pop(k, None)
            if old is not None:
                self._size -= old.size
            if self._max is not None and entry.size > self._max:
                return
            self._entries[k] = entry
            self._size += entry.size
            if self._max is not None:
                while self._size > self._max:
                    _, evicted = self._entries.popitem(last=False)
                    self._size -= evicted.size

    def __delitem__(self, key) -> None:
        k = _key_bytes(key)
        with self._lock:
            self._check_open()
            try:
                entry = self._entries.pop(k)
            except KeyError:
                raise KeyError(key) from None
            self._size -= entry.size

    def __contains__(self, key) -> bool:
        k = _key_bytes(key)
        with self._lock:
            self._check_open()
            return k in self._entries

    def __len__(self) -> int:
        with self._lock:
            self._check_open()
            return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._check_open()
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
        The most bytes the entry files may take together; None (the default) means no limit.
        After each store this process deletes the least-recently-used files until the total
        fits; a single entry larger than the limit is not stored (and any earlier entry under
        its key is removed).

    Notes
    -----
    * Each entry is a file named by the SHA-256 hex digest of its key, holding one record (see
      the module docstring). It is written to a temporary file in the same directory, flushed
      with ``fsync`` and renamed over the final name (``os.replace``), so a reader sees either
      the old complete file or the new complete one, never a partial one. When several
      processes store under one key at once, the last rename wins.
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

    __slots__ = ("_path", "_max", "_closed")

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

    def _entry_path(self, key) -> str:
        return os.path.join(self._path, hashlib.sha256(_key_bytes(key)).hexdigest())

    def _read(self, path: str) -> tuple[bytes, os.stat_result] | None:
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                return f.read(), st
        except FileNotFoundError:
            return None

    def _load(self, path: str) -> _Entry | None:
        """The entry in ``path``, or None on a miss; deletes a damaged file."""
        got = self._read(path)
        if got is None:
            return None
        data, st = got
        try:
            return _decode_record(data)
        except _UnreadableRecord as exc:
            if exc.damaged:
                self._unlink_if_same(path, st)
            return None

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

    @staticmethod
    def _touch(path: str) -> None:
        t = time.time_ns()
        try:
            os.utime(path, ns=(t, t))
        except OSError:
            pass

    def __getitem__(self, key):
        self._check_open()
        path = self._entry_path(key)
        entry = self._load(path)
        if entry is None:
            raise KeyError(key)
        self._touch(path)
        return _build_object_code(entry)

    def __contains__(self, key) -> bool:
        self._check_open()
        return self._load(self._entry_path(key)) is not None

    def __setitem__(self, key, value) -> None:
        self._check_open()
        path = self._entry_path(key)
        entry, meta = _entry_from_value(value)
        if self._max is not None and entry.size > self._max:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            return
        self._write_atomic(path, _encode_record(entry, meta))
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
        found = []
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
        found = self._scan()
        total = sum(size for _, _, size, _ in found)
        if total <= self._max:
            return
        found.sort(key=lambda e: (e[0], e[1]))
        for _, name, size, st in found:
            if total <= self._max:
                break
            if name == protect:
                continue
            if self._unlink_if_same(os.path.join(self._path, name), st):
                total -= size

    def __delitem__(self, key) -> None:
        self._check_open()
        try:
            os.unlink(self._entry_path(key))
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

_KEY_FORMAT = b"cuda_core.program_cache.key/1"
_BACKENDS = {"c++": "nvrtc", "nvvm": "nvvm", "ptx": "nvjitlink"}
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
            from cuda.bindings import nvjitlink

            version = ".".join(map(str, nvjitlink.version()))
            return f"nvjitlink {version} " + _lib_identity("nvJitLink")
    except Exception:
        return f"{backend} unknown"
    raise AssertionError(backend)


def _encode_canonical(obj: Any, where: str, out: list[bytes]) -> None:
    """Append an unambiguous, deterministic encoding of a plain value to ``out``."""
    if obj is None:
        out.append(b"N")
    elif obj is True or obj is False:
        out.append(b"T" if obj else b"F")
    elif isinstance(obj, enum.Enum):
        name = f"{type(obj).__module__}.{type(obj).__qualname__}.{obj.name}".encode()
        out.append(b"e%d:" % len(name) + name)
    elif isinstance(obj, int):
        out.append(b"i%d;" % obj)
    elif isinstance(obj, float):
        text = obj.hex().encode()
        out.append(b"f%d:" % len(text) + text)
    elif isinstance(obj, str):
        data = obj.encode("utf-8", "surrogatepass")
        out.append(b"s%d:" % len(data) + data)
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        data = bytes(obj)
        out.append(b"b%d:" % len(data) + data)
    elif isinstance(obj, os.PathLike):
        _encode_canonical(os.fspath(obj), where, out)
    elif isinstance(obj, (list, tuple)):
        # A list and a tuple of the same items mean the same option value.
        out.append(b"l%d:" % len(obj))
        for i, item in enumerate(obj):
            _encode_canonical(item, f"{where}[{i}]", out)
    elif isinstance(obj, (set, frozenset)):
        parts = []
        for item in obj:
            sub: list[bytes] = []
            _encode_canonical(item, f"{where} item", sub)
            parts.append(b"".join(sub))
        out.append(b"u%d:" % len(parts))
        out.extend(sorted(parts))
    elif isinstance(obj, Mapping):
        pairs = []
        for k, v in obj.items():
            sub = []
            _encode_canonical(k, f"{where} key", sub)
            key_enc = b"".join(sub)
            sub = []
            _encode_canonical(v, f"{where}[{k!r}]", sub)
            pairs.append((key_enc, b"".join(sub)))
        out.append(b"d%d:" % len(pairs))
        for key_enc, val_enc in sorted(pairs):
            out.append(key_enc)
            out.append(val_enc)
    else:
        raise TypeError(f"make_program_cache_key: {where} has a value of type "
                        f"{type(obj).__name__}, which has no stable encoding for a cache key")


def _canonical(obj: Any, where: str) -> bytes:
    out: list[bytes] = []
    _encode_canonical(obj, where, out)
    return b"".join(out)


# ProgramOptions fields through which the compiler reads files (headers, precompiled headers).
_FILE_READING_OPTIONS = ("include_path", "pre_include", "pch", "create_pch", "use_pch",
                         "pch_dir")


def _options_encoding(options: Any, backend: str, target_type: str) -> bytes:
    if options is None:
        return b"none"
    is_dataclass = dataclasses.is_dataclass(options) and not isinstance(options, type)
    as_bytes = getattr(options, "as_bytes", None)
    if not callable(as_bytes) and not is_dataclass:
        raise TypeError(f"options must be a ProgramOptions (an object with "
                        f"as_bytes(backend, target_type)), a dataclass instance or None, "
                        f"not {type(options).__name__}")
    parts = [type(options).__qualname__.encode()]
    if callable(as_bytes):
        # The flags the compiler will see, with defaults resolved (e.g. the arch).
        parts.append(b"flags")
        parts.append(_canonical(list(as_bytes(backend, target_type)), "options.as_bytes()"))
    if is_dataclass:
        # Every field too: some (the program name, NVVM's extra sources and libdevice) change
        # the result without being rendered as a flag.
        # None means "not given" for every options field: only the given ones are encoded,
        # which keeps the key cheap for the usual handful of set fields out of dozens.
        parts.append(b"fields")
        given = {}
        for field in dataclasses.fields(options):
            value = getattr(options, field.name)
            if value is not None:
                given[field.name] = value
        parts.append(_canonical(given, "options"))
    return b"\0".join(parts)


def make_program_cache_key(*, code: str | bytes, code_type: str, options: Any,
                           target_type: str, name_expressions: Iterable[str] = (),
                           extra_digest: bytes | None = None) -> bytes:
    """A 32-byte key naming the result of ``Program(code, code_type, options).compile(...)``.

    The key is the SHA-256 digest of an unambiguous encoding of: a key-format version; the
    source (a str and bytes with the same text give different keys); ``code_type``;
    ``target_type``; the options; the name expressions, in order; the version of the compiler
    that serves ``code_type`` (NVRTC for ``"c++"``, libNVVM for ``"nvvm"``, nvJitLink for
    ``"ptx"``), together with the file name and size of its library, or ``"unknown"`` where it
    cannot be learned; and ``extra_digest``. Equal inputs give equal keys, in any process.

    Parameters
    ----------
    code : str or bytes
        The program source (C++, PTX, or NVVM IR / bitcode), as given to ``Program``.
    code_type : str
        ``"c++"``, ``"ptx"`` or ``"nvvm"`` (compared case-insensitively).
    options : ProgramOptions, dataclass instance or None
        An object with ``as_bytes(backend, target_type)`` contributes the flags it renders for
        the backend (``"nvrtc"``, ``"nvvm"`` or ``"nvjitlink"``). A dataclass instance also
        contributes all its fields (the program name, for instance, is no flag but ends up in
        the result). Field values must be plain data: None, bool, int, float, str, bytes,
        enums, paths, and lists, tuples, sets or dicts of those.
    target_type : str
        ``"ptx"``, ``"cubin"`` or ``"ltoir"``, as allowed for ``code_type``: C++ gives any of
        the three, NVVM ``"ptx"`` or ``"ltoir"``, PTX ``"cubin"`` or ``"ptx"``.
    name_expressions : sequence of str
        The name expressions passed to ``compile`` (their order matters).
    extra_digest : bytes or None
        Anything else the result depends on, e.g. a digest of the headers the source includes.

    Returns
    -------
    bytes
        32 bytes.

    Raises
    ------
    TypeError
        A parameter of the wrong type (naming it), or an options field with no stable encoding.
    ValueError
        An unknown ``code_type``, or a ``target_type`` the code type cannot produce.

    Notes
    -----
    Header files are **not** hashed. Options that make the compiler read files
    (``include_path``, ``pre_include`` and the precompiled-header options) are refused with a
    ValueError unless ``extra_digest`` is given: hash the headers yourself and pass that
    digest, so that editing a header changes the key. Headers the compiler ships (NVRTC's
    built-in ones) are covered by the compiler identity. Anything else outside the inputs
    above (for instance a different GPU driver when PTX input is linked by the driver instead
    of nvJitLink) is not in the key either.
    """
    if isinstance(code, str):
        code_enc = b"str\0" + code.encode("utf-8", "surrogatepass")
    elif isinstance(code, (bytes, bytearray)):
        code_enc = b"bytes\0" + bytes(code)
    else:
        raise TypeError(f"code must be a str or bytes, not {type(code).__name__} "
                        f"(read a file's contents and pass them)")
    if not isinstance(code_type, str):
        raise TypeError(f"code_type must be a str, not {type(code_type).__name__}")
    ct = code_type.lower()
    if ct not in _BACKENDS:
        raise ValueError(f"code_type must be one of 'c++', 'ptx', 'nvvm', got {code_type!r}")
    if not isinstance(target_type, str):
        raise TypeError(f"target_type must be a str, not {type(target_type).__name__}")
    tt = target_type.lower()
    if tt not in _TARGETS[ct]:
        raise ValueError(f"target_type {target_type!r} is not supported for code_type "
                         f"{ct!r}; expected one of {', '.join(map(repr, _TARGETS[ct]))}")
    if name_expressions is None:
        name_expressions = ()
    if isinstance(name_expressions, (str, bytes, bytearray)) or not isinstance(
            name_expressions, Iterable):
        raise TypeError(f"name_expressions must be a sequence of str, "
                        f"not {type(name_expressions).__name__}")
    names = tuple(name_expressions)
    for i, expr in enumerate(names):
        if not isinstance(expr, str):
            raise TypeError(f"name_expressions[{i}] must be a str, not {type(expr).__name__}")
    if extra_digest is not None and not isinstance(extra_digest, (bytes, bytearray)):
        raise TypeError(f"extra_digest must be bytes or None, not {type(extra_digest).__name__}")
    if extra_digest is None:
        # Refuse rather than risk a stale hit: these options make the compiler read files
        # whose contents the key cannot see.
        for field in _FILE_READING_OPTIONS:
            if getattr(options, field, None) not in (None, False, "", (), []):
                raise ValueError(
                    f"options.{field} makes the compiler read files that the cache key cannot "
                    f"see: hash their contents and pass the digest as extra_digest")

    backend = _BACKENDS[ct]
    fields = (
        (b"format", _KEY_FORMAT),
        (b"code", code_enc),
        (b"code_type", ct.encode()),
        (b"target_type", tt.encode()),
        (b"options", _options_encoding(options, backend, tt)),
        (b"name_expressions", _canonical(list(names), "name_expressions")),
        (b"compiler", _compiler_identity(backend).encode()),
        (b"extra_digest", b"none" if extra_digest is None else b"bytes\0" + bytes(extra_digest)),
    )
    h = hashlib.sha256()
    for tag, value in fields:
        h.update(struct.pack("<Q", len(tag)) + tag + struct.pack("<Q", len(value)) + value)
    return h.digest()
