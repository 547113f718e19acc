"""The program cache in a directory: :class:`FileStreamProgramCache`, one file per entry,
safe to share between processes, and the record format of those files.

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
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import sys
import tempfile
import time
import zlib
from typing import Any

from cuda_core.utils._program_cache import _entry_from_value, _key_bytes, _ProgramCache

__all__ = ["FileStreamProgramCache"]

_MAGIC = b"CCPCACHE"
_FORMAT_VERSION = 2
_HEADER = struct.Struct("<8sHBBIQI")
_CODE_TYPES = ("cubin", "ptx", "ltoir", "fatbin", "object", "library")
_CODE_TYPE_IDS = {ct: i for i, ct in enumerate(_CODE_TYPES, 1)}
_CODE_TYPE_OF_ID = ("",) + _CODE_TYPES


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
    """``<user cache root>/program-cache``: ``$XDG_CACHE_HOME/cuda-python/program-cache``
    (``~/.cache`` when unset or relative); on Windows
    ``%LOCALAPPDATA%\\cuda-python\\program-cache``."""
    from cuda_core._program_options import _user_cache_dir

    return os.path.join(_user_cache_dir(), "program-cache")


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


class FileStreamProgramCache(_ProgramCache):
    """A program cache in a directory: one file per entry, safe to share between processes.

    Parameters
    ----------
    path : str, os.PathLike or None
        The directory. None (the default) means ``$XDG_CACHE_HOME/cuda-python/program-cache``
        (``~/.cache/cuda-python/program-cache`` when ``XDG_CACHE_HOME`` is unset or not an
        absolute path), or ``%LOCALAPPDATA%\\cuda-python\\program-cache`` on Windows. The
        directory is created, with mode ``0o700``, the first time an entry is stored.
    max_size_bytes : int, float or None, keyword-only
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

    __slots__ = ("_path", "_prefix")

    def __init__(self, path: str | os.PathLike | None = None, *,
                 max_size_bytes: int | float | None = None):
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
        super().__init__(max_size_bytes)
        path = os.path.abspath(path)
        if os.path.exists(path) and not os.path.isdir(path):
            raise ValueError(f"path {path!r} exists and is not a directory")
        self._path = path
        self._prefix = os.path.join(path, "")  # the directory and a separator: + file name

    @property
    def path(self) -> str:
        """The cache directory (absolute)."""
        return self._path

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
        return (f"<FileStreamProgramCache {self._path!r} max_size_bytes={self._max}"
                + (" (closed)>" if self._closed else ">"))

    # As cuda.core's (whose cache holds a lock): copy.copy shares the directory; pickle and
    # copy.deepcopy raise TypeError.
    def __copy__(self) -> FileStreamProgramCache:
        cls = type(self)
        other = cls.__new__(cls)
        for klass in cls.__mro__:
            for name in getattr(klass, "__slots__", ()):
                if name != "__weakref__" and hasattr(self, name):
                    setattr(other, name, getattr(self, name))
        if hasattr(self, "__dict__"):  # (a subclass's attributes)
            other.__dict__.update(self.__dict__)
        return other

    def __reduce__(self) -> Any:
        raise TypeError(f"cannot pickle {type(self).__name__!r} object")
