"""On-disk cache of compiled XLA executables.

Environment variables (all read on every call, so tests can monkeypatch them):

``DYNJAX_CACHE_DIR``
    The cache directory.  Unset: ``$XDG_CACHE_HOME/dynjax``, else ``~/.cache/dynjax``.
``DYNJAX_DISABLE_DISK_CACHE``
    ``1`` (or ``true``, ``yes``, ``on``) turns the cache off: nothing is read or written.
``DYNJAX_DISK_CACHE_MAX_BYTES``
    The size cap of the directory, in bytes, read on every write; a ``K``, ``M`` or ``G``
    suffix multiplies by 1024, 1024**2, 1024**3.  Default :data:`DEFAULT_MAX_BYTES` (1 GiB);
    ``0`` means no cap.  An invalid value warns and uses the default.

Key: sha256 over (entry format, jaxlib version, dynjax version, backend
fingerprint -- platform and CPU features --, compile options, static module).
Each entry ``<key>.xlaexe`` is::

    MAGIC | key (64 ascii hex) | sha256(payload) (32 bytes) | len(payload) (u64 LE) | payload

It is written to a temporary file in the same directory and renamed into
place, so readers never see a partial entry.  On read, magic, key, length and
checksum are all validated *before* the payload is handed to XLA (loading a
garbage executable may crash the process); an entry that fails any check, or
that XLA refuses, is deleted and the module recompiled.

Size cap and eviction (least recently used).  A hit sets the entry's mtime to
now, so mtime orders the entries by their last use.  After a write, when the
directory holds more than the cap, the entries with the oldest mtimes are
deleted until it holds at most 90% of the cap (so a full cache is not
rescanned on every write); the entry just written is never evicted, and an
entry larger than the cap is not stored at all.  Only finished ``<key>.xlaexe``
entries are evicted, never a ``.tmp-*`` file that a writer has not renamed yet
(temp files untouched for an hour are leftovers of a crashed writer and are
removed).  To keep this cheap, hits never scan the directory: each process keeps
a running estimate of the directory's size and rescans only on its first write
to a directory, when the estimate would pass the cap, and every 32 writes
(to notice other processes' entries).  The cap is
therefore approximate while several processes write at once.  Eviction is safe
under concurrency: an entry that disappears (evicted or replaced by another
process or thread) is a miss or is skipped, never an error, and a reader that
already opened an entry reads it whole.
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
import tempfile
import threading
import time
import warnings
from pathlib import Path

from . import xla

__all__ = [
    "cache_dir",
    "disk_cache_enabled",
    "cache_key",
    "compile_cached",
    "last_cache_hit",
    "cache_stats",
    "reset_cache_stats",
    "clear_disk_cache",
    "disk_cache_max_bytes",
    "DEFAULT_MAX_BYTES",
]

_FORMAT = "dynjax-exe-cache-v1"
_MAGIC = b"DYNJAX-EXE-CACHE\x00v1\n"
_HEADER = struct.Struct("<64s32sQ")
_SUFFIX = ".xlaexe"
_TMP_PREFIX = ".tmp-"
_KEY_CHARS = frozenset("0123456789abcdef")

DEFAULT_MAX_BYTES = 1 << 30
"""The default size cap of the disk cache (1 GiB); see ``DYNJAX_DISK_CACHE_MAX_BYTES``."""
_LOW_WATER = 0.9        # eviction goes down to this fraction of the cap
_RESCAN_EVERY = 32      # writes between two scans of a directory, at most
_STALE_TMP_SECONDS = 3600

_stats_lock = threading.Lock()
_stats = {"hits": 0, "misses": 0, "corrupt": 0, "write_errors": 0, "disabled": 0,
          "evictions": 0}
_tls = threading.local()

# Per directory: [estimated bytes of entries, writes since the last scan].
_evict_lock = threading.Lock()
_dir_state: dict[str, list[int]] = {}


def disk_cache_enabled() -> bool:
    v = os.environ.get("DYNJAX_DISABLE_DISK_CACHE", "").strip().lower()
    return v in ("", "0", "false", "no", "off")


_SIZE = re.compile(r"(\d+)\s*([KMG]?)(?:I?B)?", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def disk_cache_max_bytes() -> int:
    """The size cap of the disk cache in bytes (0: no cap), from ``DYNJAX_DISK_CACHE_MAX_BYTES``."""
    raw = os.environ.get("DYNJAX_DISK_CACHE_MAX_BYTES", "").strip()
    if not raw:
        return DEFAULT_MAX_BYTES
    m = _SIZE.fullmatch(raw)
    if m is None:
        warnings.warn(f"DYNJAX_DISK_CACHE_MAX_BYTES={raw!r} is not a size (like 500000000, "
                      f"512M or 2G); using the default, {DEFAULT_MAX_BYTES} bytes",
                      RuntimeWarning, stacklevel=2)
        return DEFAULT_MAX_BYTES
    return int(m.group(1)) * _SIZE_UNITS[m.group(2).upper()]


def cache_dir() -> Path:
    """The directory of the disk cache (not necessarily existing yet)."""
    d = os.environ.get("DYNJAX_CACHE_DIR")
    if d:
        return Path(d).expanduser()
    base = os.environ.get("XDG_CACHE_HOME")
    if base:
        return Path(base).expanduser() / "dynjax"
    return Path.home() / ".cache" / "dynjax"


_dynjax_version: str | None = None


def _version() -> str:
    global _dynjax_version
    if _dynjax_version is None:
        try:
            from importlib.metadata import version

            _dynjax_version = version("dynjax")
        except Exception:
            _dynjax_version = "0+unknown"
    return _dynjax_version


def cache_key(static_module) -> str:
    """The hex sha256 key for a static module (text or bytecode)."""
    h = hashlib.sha256()
    data = static_module.encode() if isinstance(static_module, str) else bytes(static_module)
    for part in (_FORMAT.encode(), xla.jaxlib_version().encode(), _version().encode(),
                 xla.backend_fingerprint().encode(), xla.compile_options_id().encode(),
                 b"text" if isinstance(static_module, str) else b"bytecode", data):
        h.update(struct.pack("<Q", len(part)))
        h.update(part)
    return h.hexdigest()


def _count(name: str) -> None:
    with _stats_lock:
        _stats[name] += 1


def cache_stats() -> dict:
    """Counters since start (or :func:`reset_cache_stats`): hits, misses, corrupt, write_errors, disabled, evictions."""
    with _stats_lock:
        return dict(_stats)


def reset_cache_stats() -> None:
    with _stats_lock:
        for k in _stats:
            _stats[k] = 0


def last_cache_hit() -> bool | None:
    """Whether this thread's last :func:`compile_cached` was served from disk (None: cache disabled)."""
    return getattr(_tls, "hit", None)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def _touch(path: Path) -> None:
    """Mark an entry as used now (its mtime orders eviction); a vanished entry is fine."""
    now = time.time_ns()
    try:
        os.utime(path, ns=(now, now))
    except OSError:
        pass


def _is_entry_name(name: str) -> bool:
    """A finished entry ``<64 hex>.xlaexe`` (never a temp file being written)."""
    stem = name[: -len(_SUFFIX)]
    return name.endswith(_SUFFIX) and len(stem) == 64 and set(stem) <= _KEY_CHARS


def _scan(directory: Path) -> list[tuple[int, int, str]]:
    """(mtime_ns, size, name) of every finished entry; removes temp files left by crashed writers."""
    out = []
    stale = time.time() - _STALE_TMP_SECONDS
    try:
        it = os.scandir(directory)
    except OSError:
        return out
    with it:
        for e in it:
            name = e.name
            try:
                if _is_entry_name(name):
                    st = e.stat(follow_symlinks=False)
                    out.append((st.st_mtime_ns, st.st_size, name))
                elif name.startswith(_TMP_PREFIX) and name.endswith(_SUFFIX):
                    if e.stat(follow_symlinks=False).st_mtime < stale:
                        _unlink(Path(e.path))
            except OSError:  # gone meanwhile
                continue
    return out


def _evict(directory: Path, cap: int, keep: str) -> int:
    """Scan ``directory`` and, if it holds more than ``cap`` bytes, delete the least recently
    used entries (never ``keep``) down to the low-water mark.  Return the bytes left."""
    entries = _scan(directory)
    total = sum(size for _, size, _ in entries)
    if total <= cap:
        return total
    target = int(cap * _LOW_WATER)
    entries.sort()
    evicted = 0
    for _, size, name in entries:
        if total <= target:
            break
        if name == keep:
            continue
        _unlink(directory / name)   # another process may have removed it already: fine
        total -= size
        evicted += 1
    if evicted:
        with _stats_lock:
            _stats["evictions"] += evicted
    return total


def _after_write(directory: Path, name: str, size: int, cap: int) -> None:
    """Account for a new entry of ``size`` bytes; scan and evict when needed."""
    if cap <= 0:
        return
    d = str(directory)
    with _evict_lock:
        state = _dir_state.get(d)
        if state is not None and state[1] < _RESCAN_EVERY and state[0] + size <= cap:
            state[0] += size
            state[1] += 1
            return
        _dir_state[d] = [_evict(directory, cap, keep=name), 0]


def _load(path: Path, key: str):
    """Return the cached executable, or None (deleting any invalid entry)."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except FileNotFoundError:
        return None
    except OSError:
        return None
    n0 = len(_MAGIC)
    ok = len(blob) >= n0 + _HEADER.size and blob.startswith(_MAGIC)
    if ok:
        k, digest, length = _HEADER.unpack_from(blob, n0)
        payload = memoryview(blob)[n0 + _HEADER.size:]
        ok = (k == key.encode() and length == len(payload)
              and hashlib.sha256(payload).digest() == digest)
    if not ok:
        _count("corrupt")
        _unlink(path)
        return None
    try:
        exe = xla.deserialize(bytes(payload))
    except Exception:
        _count("corrupt")
        _unlink(path)
        return None
    _touch(path)
    return exe


def _store(directory: Path, path: Path, key: str, exe) -> None:
    try:
        payload = xla.serialize(exe)
        header = _MAGIC + _HEADER.pack(key.encode(), hashlib.sha256(payload).digest(), len(payload))
        size = len(header) + len(payload)
        cap = disk_cache_max_bytes()
        if 0 < cap < size:
            return  # larger than the whole cache: not stored
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=_TMP_PREFIX, suffix=_SUFFIX)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(header)
                f.write(payload)
            _touch(Path(tmp))  # a fine-grained mtime: the newest entry is the last to go
            os.replace(tmp, path)
        except BaseException:
            _unlink(Path(tmp))
            raise
    except Exception:
        _count("write_errors")
        return
    try:
        _after_write(directory, path.name, size, cap)
    except Exception:  # eviction is best effort; the entry is stored
        pass


def compile_cached(static_module, *, return_hit: bool = False):
    """Compile a static module through the disk cache.

    Returns the :class:`~dynjax.runtime.xla.Executable`, or ``(executable, hit)``
    when ``return_hit=True``.  ``hit`` is True when the executable was loaded
    from disk, False when it was compiled (and stored), None when the disk
    cache is disabled.  :func:`last_cache_hit` reports the same value.
    """
    if not disk_cache_enabled():
        _count("disabled")
        _tls.hit = None
        exe = xla.compile(static_module)
        return (exe, None) if return_hit else exe
    key = cache_key(static_module)
    directory = cache_dir()
    path = directory / (key + _SUFFIX)
    exe = _load(path, key)
    hit = exe is not None
    if hit:
        _count("hits")
    else:
        _count("misses")
        exe = xla.compile(static_module)
        _store(directory, path, key, exe)
    _tls.hit = hit
    return (exe, hit) if return_hit else exe


def clear_disk_cache() -> int:
    """Delete every cache entry (and stray temp files); return how many files were removed."""
    d = cache_dir()
    n = 0
    with _evict_lock:
        _dir_state.pop(str(d), None)
    if d.is_dir():
        for p in d.iterdir():
            if p.suffix == _SUFFIX and p.is_file():
                _unlink(p)
                n += 1
    return n
