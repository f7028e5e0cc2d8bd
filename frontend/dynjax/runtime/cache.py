"""On-disk cache of compiled XLA executables.

Location: ``$DYNJAX_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/dynjax``, else
``~/.cache/dynjax``.  ``DYNJAX_DISABLE_DISK_CACHE=1`` turns the cache off
(both are read on every call, so tests can monkeypatch them).

Key: sha256 over (entry format, jaxlib version, dynjax version, backend
fingerprint -- platform and CPU features --, compile options, static module).
Each entry ``<key>.xlaexe`` is::

    MAGIC | key (64 ascii hex) | sha256(payload) (32 bytes) | len(payload) (u64 LE) | payload

It is written to a temporary file in the same directory and renamed into
place, so readers never see a partial entry.  On read, magic, key, length and
checksum are all validated *before* the payload is handed to XLA (loading a
garbage executable may crash the process); an entry that fails any check, or
that XLA refuses, is deleted and the module recompiled.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
import threading
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
]

_FORMAT = "dynjax-exe-cache-v1"
_MAGIC = b"DYNJAX-EXE-CACHE\x00v1\n"
_HEADER = struct.Struct("<64s32sQ")
_SUFFIX = ".xlaexe"

_stats_lock = threading.Lock()
_stats = {"hits": 0, "misses": 0, "corrupt": 0, "write_errors": 0, "disabled": 0}
_tls = threading.local()


def disk_cache_enabled() -> bool:
    v = os.environ.get("DYNJAX_DISABLE_DISK_CACHE", "").strip().lower()
    return v in ("", "0", "false", "no", "off")


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
    """Counters since start (or :func:`reset_cache_stats`): hits, misses, corrupt, write_errors, disabled."""
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
        return xla.deserialize(bytes(payload))
    except Exception:
        _count("corrupt")
        _unlink(path)
        return None


def _store(directory: Path, path: Path, key: str, exe) -> None:
    try:
        payload = xla.serialize(exe)
        directory.mkdir(parents=True, exist_ok=True)
        header = _MAGIC + _HEADER.pack(key.encode(), hashlib.sha256(payload).digest(), len(payload))
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=_SUFFIX)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(header)
                f.write(payload)
            os.replace(tmp, path)
        except BaseException:
            _unlink(Path(tmp))
            raise
    except Exception:
        _count("write_errors")


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
    if d.is_dir():
        for p in d.iterdir():
            if p.suffix == _SUFFIX and p.is_file():
                _unlink(p)
                n += 1
    return n
