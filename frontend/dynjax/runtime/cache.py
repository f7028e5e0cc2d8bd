"""On-disk cache of compiled XLA executables.

Environment variables (all read on every call, so tests can monkeypatch them):

``DYNJAX_CACHE_DIR``
    The cache directory.  Unset: ``$XDG_CACHE_HOME/dynjax``, else ``~/.cache/dynjax``.
``DYNJAX_CACHE_KEY_FILE``
    The file holding the secret that authenticates the entries.  Unset:
    ``$XDG_CONFIG_HOME/dynjax/cache-key``, else ``~/.config/dynjax/cache-key``.
``DYNJAX_DISABLE_DISK_CACHE``
    ``1`` (or ``true``, ``yes``, ``on``) turns the cache off: nothing is read or written.
``DYNJAX_DISK_CACHE_MAX_BYTES``
    The size cap of the directory, in bytes, read on every write; a ``K``, ``M`` or ``G``
    suffix multiplies by 1024, 1024**2, 1024**3.  Default :data:`DEFAULT_MAX_BYTES` (1 GiB);
    ``0`` means no cap.  An invalid value warns and uses the default.

Trust model.  An entry is native code that this process will run, so whoever can make
the process load an entry of their choosing can run code as its user.  Anyone who can
write the cache directory (or an entry in it) can plant, replace, truncate or delete
entries; so the cache trusts nothing in the directory and *authenticates* every entry
with HMAC-SHA256 under a per-user secret of 32 random bytes, kept **outside** the cache
directory, in the key file.  A forged entry, another program's entry moved or copied to
this name (the MAC covers the key), an entry written under another secret (another user's,
or before the key file was replaced) or of an older format, are all refused: the module is
compiled again and the entry overwritten (atomically).  What is protected, then, depends
on the key file alone: whoever can read it (this user, root) can forge entries -- they can
run code as this user anyway --; whoever cannot, can make the cache recompile (delete
entries, fill the disk, change mtimes and so the eviction order), never run their code.
Entries are not secret (an entry is a compiled program, and the key is a hash of its
module), and an older valid entry of the same key is the same program, so replaying one is
harmless.  The checks that keep the secret and the directory private:

* The key file is created on first use, with 32 bytes from :mod:`secrets`, mode 0600, in
  a directory made 0700 (whatever the umask), as a temporary file (``O_CREAT|O_EXCL``)
  hard-linked into place, so that concurrent processes agree on one secret and never read
  a partial one.  It is refused -- the disk cache is then not used: memory only, one
  warning -- when it is a symbolic link or not a regular file (it is opened with
  ``O_NOFOLLOW|O_NONBLOCK``, a FIFO cannot block), not owned by this user, readable or
  writable by group or others, not 32 bytes long, or in a directory that is not owned by
  this user or is writable by group or others.  Deleting the key file rotates the secret:
  every entry is then refused once and rewritten.
* The cache directory, and every missing parent, is created 0700 (whatever the umask).
  A directory not owned by this user, or writable by group or others, is refused (memory
  only, one warning).  A symlink to a directory is followed (the target is checked).
* An entry is opened only if it is a regular file (``lstat``, then ``open`` with
  ``O_NOFOLLOW|O_NONBLOCK`` and ``fstat``: a symbolic link, a FIFO, a device or a
  directory in place of an entry is never read, never blocks), is no larger than the cap,
  and is handed to XLA only after its MAC is verified (``hmac.compare_digest``).

What is *not* authenticated: whether an entry exists (deleting one costs a compile), its
mtime (the eviction order), the directory listing, and the module text (not stored: the
entry's name is a hash of it).  A failing write (disk full, quota, read-only directory)
leaves the call working: the executable stays in memory, one warning per directory.

Key: sha256 over (entry format, jaxlib version, dynjax version, backend
fingerprint -- platform and CPU features --, compile options, static module).
Each entry ``<key>.xlaexe`` is::

    MAGIC | key (64 ascii hex) | mac (32 bytes) | len(payload) (u64 LE) | payload

with ``mac = HMAC-SHA256(secret, MAGIC | key | len(payload) | payload)``: the whole entry
but the mac itself.  ``MAGIC`` names the format version (v2: the mac; v1 held a plain
sha256, which anyone could recompute); entries of another version are refused.

It is written to a temporary file in the same directory and renamed into
place, so readers never see a partial entry.  On read, magic, key, length and
MAC are all validated *before* the payload is handed to XLA (loading a
garbage executable may crash the process); an entry that fails any check, or
that XLA refuses, is deleted and the module recompiled.

Size cap and eviction (least recently used).  A hit sets the entry's mtime to
now, so mtime orders the entries by their last use.  After a write, when the
directory holds more than the cap, the entries with the oldest mtimes are
deleted until it holds at most 90% of the cap (so a full cache is not
rescanned on every write); the entry just written is never evicted, and an
entry larger than the cap is not stored at all.  Scans and evictions run on a
thread of their own (one per process at most, started when a scan is due and
ended when none is): a compile never waits for a scan of the directory, and
the cap holds again shortly after a write rather than at its return
(:func:`wait_for_eviction` waits for it); a scan spares the entries written
or used after it started (the newest ones).  At exit a process finishes the
scans due (without their pauses, for at most ten seconds), so that processes
that write an entry and exit at once still hold the cap.  Only finished ``<key>.xlaexe``
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

import atexit
import hashlib
import hmac
import os
import re
import secrets
import stat
import struct
import threading
import time
import warnings
from os import write as _os_write          # module attributes: tests make them fail
from pathlib import Path
from tempfile import mkstemp as _mkstemp

from . import compile_options, xla

__all__ = [
    "cache_dir",
    "key_file",
    "disk_cache_enabled",
    "cache_key",
    "compile_cached",
    "last_cache_hit",
    "cache_stats",
    "reset_cache_stats",
    "clear_disk_cache",
    "disk_cache_max_bytes",
    "wait_for_eviction",
    "DEFAULT_MAX_BYTES",
]

_FORMAT = "dynjax-exe-cache-v2"
_MAGIC = b"DYNJAX-EXE-CACHE\x00v2\n"
_HEADER = struct.Struct("<64s32sQ")     # key, mac, length of the payload
_SECRET_BYTES = 32
# opening an entry or the key file: never through a symbolic link, never blocking on a FIFO
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_SUFFIX = ".xlaexe"
_TMP_PREFIX = ".tmp-"
_ENTRY_NAME = re.compile(r"[0-9a-f]{64}" + re.escape(_SUFFIX))

DEFAULT_MAX_BYTES = 1 << 30
"""The default size cap of the disk cache (1 GiB); see ``DYNJAX_DISK_CACHE_MAX_BYTES``."""
_LOW_WATER = 0.9        # eviction goes down to this fraction of the cap
_RESCAN_EVERY = 32      # writes between two scans of a directory, at most
_STALE_TMP_SECONDS = 3600
# a scan reads this many entries at a time, and sleeps this long in between (the CPU and the
# GIL to the compiles and runs beside it: 10,000 entries take ~40 ms of CPU and ~0.25 s)
_SCAN_CHUNK = 256
_SCAN_PAUSE = 0.005
# at exit, the scans due run without their pauses, for at most this many seconds (so that a
# short-lived process that wrote entries still holds the cap: see ``_finish_at_exit``)
_EXIT_WAIT = 10.0
_hurry = threading.Event()   # set at exit: a pause in progress ends at once

_stats_lock = threading.Lock()
_stats = {"hits": 0, "misses": 0, "corrupt": 0, "write_errors": 0, "disabled": 0,
          "evictions": 0, "untrusted": 0}
_tls = threading.local()
_warned: set = set()    # (what, path) already warned about: one warning each per process

# Per directory: [estimated bytes of entries, writes since the last scan] (while a scan of
# it runs: the bytes written meanwhile). Scans wait in ``_scans_due`` for the evictor thread.
_evict_lock = threading.Lock()
_evictor_idle = threading.Condition(_evict_lock)
_dir_state: dict[str, list[int]] = {}
_scans_due: dict[str, tuple[Path, int]] = {}   # directory -> (its path, the cap)
_last_written: dict[str, str] = {}   # directory -> its newest entry, which a scan keeps
_scanning: set[str] = set()
_evictor: threading.Thread | None = None


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


def key_file() -> Path:
    """The file of the secret that authenticates the entries (outside the cache directory)."""
    f = os.environ.get("DYNJAX_CACHE_KEY_FILE")
    if f:
        return Path(f).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME")
    if base and os.path.isabs(base):
        return Path(base) / "dynjax" / "cache-key"
    return Path.home() / ".config" / "dynjax" / "cache-key"


_dynjax_version: str | None = None


def _version() -> str:
    """dynjax's version, part of every key (the package's own attribute: asking the installed
    metadata scanned ``sys.path`` and cost a process's first compile ~40 ms)."""
    global _dynjax_version
    if _dynjax_version is None:
        from dynjax import __version__
        _dynjax_version = __version__
    return _dynjax_version


def cache_key(static_module) -> str:
    """The hex sha256 key for a static module (text or bytecode)."""
    h = hashlib.sha256()
    data = static_module.encode() if isinstance(static_module, str) else bytes(static_module)
    for part in (_FORMAT.encode(), compile_options.jaxlib_version().encode(), _version().encode(),
                 xla.backend_fingerprint().encode(), compile_options.compile_options_id().encode(),
                 b"text" if isinstance(static_module, str) else b"bytecode", data):
        h.update(struct.pack("<Q", len(part)))
        h.update(part)
    return h.hexdigest()


def _count(name: str) -> None:
    with _stats_lock:
        _stats[name] += 1


def cache_stats() -> dict:
    """Counters since start (or :func:`reset_cache_stats`): hits, misses, corrupt (entries
    refused: forged, damaged, not regular files), write_errors, disabled, evictions, and
    untrusted (compiles that did not use the disk: unsafe directory or key file)."""
    with _stats_lock:
        return dict(_stats)


def reset_cache_stats() -> None:
    """Set every counter of :func:`cache_stats` to zero."""
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


def _is_entry_name(name: str) -> bool:
    """A finished entry ``<64 hex>.xlaexe`` (never a temp file being written)."""
    return _ENTRY_NAME.fullmatch(name) is not None


def _scan(directory: Path) -> list[tuple[int, int, str]]:
    """(mtime_ns, size, name) of every finished entry; removes temp files left by crashed writers."""
    out = []
    stale = time.time() - _STALE_TMP_SECONDS
    try:
        it = os.scandir(directory)
    except OSError:
        return out
    with it:
        for k, e in enumerate(it, 1):
            if k % _SCAN_CHUNK == 0:
                _hurry.wait(_SCAN_PAUSE)
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


def _evict(directory: Path, cap: int, keep: str, since_ns: int | None = None) -> int:
    """Scan ``directory`` and, if it holds more than ``cap`` bytes, delete the least recently
    used entries (never ``keep``, nor one written or used from ``since_ns`` on: the scan's
    start) down to the low-water mark.  Return the bytes left."""
    entries = _scan(directory)
    total = sum(size for _, size, _ in entries)
    if total <= cap:
        return total
    target = int(cap * _LOW_WATER)
    entries.sort()
    evicted = 0
    for mtime, size, name in entries:
        if total <= target:
            break
        if name == keep or (since_ns is not None and mtime >= since_ns):
            continue
        _unlink(directory / name)   # another process may have removed it already: fine
        total -= size
        evicted += 1
    if evicted:
        with _stats_lock:
            _stats["evictions"] += evicted
    return total


def _after_write(directory: Path, name: str, size: int, cap: int) -> None:
    """Account for a new entry of ``size`` bytes; when a scan of the directory is due (the
    process's first write to it, an estimate past the cap, every ``_RESCAN_EVERY`` writes),
    hand it to the evictor thread: a write never waits for a scan (10,000 entries: ~40 ms
    of CPU, spread over ~0.25 s: see ``_SCAN_PAUSE``)."""
    global _evictor
    if cap <= 0:
        return
    d = str(directory)
    with _evict_lock:
        _last_written[d] = name
        state = _dir_state.get(d)
        if state is not None:
            state[0] += size
            state[1] += 1
            if d in _scanning or (state[1] < _RESCAN_EVERY and state[0] <= cap):
                return   # (a scan running now counts what it did not see when it ends)
        _scans_due[d] = (directory, cap)
        if _evictor is None:
            thread = threading.Thread(target=_run_evictor, name="dynjax-cache-evictor", daemon=True)
            try:
                thread.start()   # (it waits for the lock until this write has set _evictor)
            except RuntimeError:   # no thread to be had (a process at its limit, or exiting):
                _scans_due.pop(d, None)   # the next write asks again
                _dir_state.pop(d, None)
                return
            _evictor = thread


def _run_evictor() -> None:
    """The evictor thread: run the scans due, one directory at a time, until none is left.
    It runs at the lowest priority (Linux: a thread's nice value is its own), beside the
    compiles and runs it would otherwise slow."""
    global _evictor
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except (AttributeError, OSError):
        pass
    while True:
        with _evict_lock:
            if not _scans_due:
                _evictor = None
                _evictor_idle.notify_all()
                return
            d, (directory, cap) = _scans_due.popitem()
            keep = _last_written.get(d, "")
            _dir_state[d] = [0, 0]   # from now on: what is written while the scan runs
            _scanning.add(d)
        try:
            total = _evict(directory, cap, keep, since_ns=time.time_ns())
        except Exception:   # best effort (the directory removed meanwhile): the next write rescans
            total = None
        with _evict_lock:
            _scanning.discard(d)
            state = _dir_state.get(d)
            if total is None or state is None:
                _dir_state.pop(d, None)
            else:
                state[0] += total   # an entry written during the scan may be counted twice:
                if state[0] > cap:  # then one more scan, which counts it once
                    _scans_due.setdefault(d, (directory, cap))


def _finish_at_exit() -> None:
    """At interpreter exit: let the evictor finish the scans due, without their pauses (a
    process that writes an entry and exits would otherwise never scan, and processes like
    it would grow the directory past its cap), for at most ``_EXIT_WAIT`` seconds."""
    _hurry.set()
    try:
        wait_for_eviction(_EXIT_WAIT)
    except KeyboardInterrupt:   # Ctrl-C at exit: leave the rest to the next process
        pass


atexit.register(_finish_at_exit)


def wait_for_eviction(timeout: float | None = None) -> bool:
    """Block until the evictor thread has run every scan due (tests, benchmarks); False if
    ``timeout`` seconds passed first."""
    with _evictor_idle:
        return _evictor_idle.wait_for(lambda: _evictor is None, timeout)


# --- trust: warnings, private directories, the secret -----------------------------------------

def _warn_once(what: str, path, message: str) -> None:
    """One warning per process for each (kind of problem, path)."""
    token = (what, str(path))
    with _stats_lock:
        if token in _warned:
            return
        _warned.add(token)
    warnings.warn(f"dynjax disk cache: {message}; compiled executables are kept in memory only",
                  RuntimeWarning, stacklevel=2)


def _make_private_dir(path: Path) -> None:
    """Create ``path`` and its missing parents, each with mode 0700 whatever the umask (an
    existing directory is left as it is: the caller checks it)."""
    missing = []
    p = path
    while not os.path.lexists(p) and p != p.parent:
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:   # made by another process meanwhile
            continue
        os.chmod(d, 0o700)        # the umask may have taken bits away (never added any)


def _unsafe_owner_or_mode(st, what: str) -> str | None:
    """Why a file or directory with this ``stat`` is not private to this user, or None."""
    uid = os.getuid()
    if st.st_uid != uid:
        return f"{what} is owned by uid {st.st_uid}, not by this user (uid {uid})"
    if st.st_mode & 0o022:
        return f"{what} is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _check_dir(path: Path, what: str) -> str | None:
    """Why the directory ``path`` cannot be trusted, or None (a symlink is followed)."""
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        return f"{what} {path} is not a directory"
    return _unsafe_owner_or_mode(st, f"{what} {path}")


def _read_all(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes from ``fd``."""
    parts, n = [], 0
    while n < limit:
        b = os.read(fd, min(limit - n, 1 << 24))
        if not b:
            break
        parts.append(b)
        n += len(b)
    return b"".join(parts)


def _write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        view = view[_os_write(fd, view):]


def _create_secret(path: Path) -> None:
    """Write a new secret to ``path``: a temporary file (``O_CREAT|O_EXCL``, 0600) hard-linked
    into place, so that the key file appears whole or not at all, and a key file another
    process created first is kept (FileExistsError)."""
    secret = secrets.token_bytes(_SECRET_BYTES)
    tmp = path.parent / f".tmp-key-{secrets.token_hex(8)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(secret)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.link(tmp, path)
    finally:
        if fd >= 0:
            os.close(fd)
        _unlink(tmp)


def _read_secret(path: Path) -> tuple[bytes | None, str | None]:
    """(the secret, None), or (None, why the key file is refused), or (None, None) when it
    does not exist."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None, None
    if stat.S_ISLNK(st.st_mode):
        return None, f"the key file {path} is a symbolic link"
    if not stat.S_ISREG(st.st_mode):
        return None, f"the key file {path} is not a regular file"
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, f"cannot open the key file {path}: {e.strerror}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, f"the key file {path} is not a regular file"
        why = _unsafe_owner_or_mode(st, f"the key file {path}")
        if why is None and st.st_mode & 0o077:
            why = f"the key file {path} is readable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
        if why is not None:
            return None, why
        secret = _read_all(fd, _SECRET_BYTES + 1)
    finally:
        os.close(fd)
    if len(secret) != _SECRET_BYTES:
        return None, f"the key file {path} does not hold a {_SECRET_BYTES}-byte key"
    return secret, None


def _secret() -> bytes | None:
    """The secret that authenticates the entries (created on first use), or None (after one
    warning) when the key file or its directory cannot be trusted or made."""
    path = key_file()
    try:
        _make_private_dir(path.parent)
        why = _check_dir(path.parent, "the directory of the key file")
        if why is None:
            secret, why = _read_secret(path)
            if secret is None and why is None:
                try:
                    _create_secret(path)
                except FileExistsError:   # another process created it first: use theirs
                    pass
                secret, why = _read_secret(path)
                if secret is None and why is None:
                    why = f"the key file {path} vanished after it was created"
    except OSError as e:
        why = f"cannot create or read the key file {path}: {e.strerror or e}"
    if why is not None:
        _warn_once("key", path, why)
        return None
    return secret


def _mac(secret: bytes, key: bytes, length: int, payload) -> bytes:
    """HMAC-SHA256 of everything an entry holds but the mac: magic, key, length, payload."""
    m = hmac.new(secret, _MAGIC, hashlib.sha256)
    m.update(key)
    m.update(struct.pack("<Q", length))
    m.update(payload)
    return m.digest()


# --- entries ----------------------------------------------------------------------------------

def _refuse(path: Path) -> None:
    """An entry that failed a check: counted, and removed (the directory is ours; a symbolic
    link or a FIFO is removed, not what it points to, and a directory stays)."""
    _count("corrupt")
    _unlink(path)


def _load(path: Path, key: str, secret: bytes):
    """Return the cached executable, or None (deleting any invalid entry). Only a regular
    file is opened (never through a symlink, never blocking), and its MAC is checked before
    the payload reaches XLA."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    cap = disk_cache_max_bytes()
    if not stat.S_ISREG(st.st_mode) or (0 < cap < st.st_size):
        _refuse(path)
        return None
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:   # gone meanwhile, or replaced by a symlink (ELOOP)
        return None
    try:
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode) or (0 < cap < fst.st_size):
            _refuse(path)
            return None
        blob = _read_all(fd, fst.st_size)
        n0 = len(_MAGIC)
        ok = len(blob) >= n0 + _HEADER.size and blob.startswith(_MAGIC)
        if ok:
            k, mac, length = _HEADER.unpack_from(blob, n0)
            payload = memoryview(blob)[n0 + _HEADER.size:]
            ok = (k == key.encode() and length == len(payload)
                  and hmac.compare_digest(mac, _mac(secret, k, length, payload)))
        if not ok:
            _refuse(path)
            return None
        try:
            exe = xla.deserialize(bytes(payload))
        except Exception:
            _refuse(path)
            return None
        now = time.time_ns()
        try:   # a hit: the entry's mtime orders eviction
            os.utime(fd, ns=(now, now))
        except OSError:
            pass
        return exe
    except OSError:
        return None
    finally:
        os.close(fd)


def _store(directory: Path, path: Path, key: str, exe, secret: bytes) -> None:
    try:
        payload = xla.serialize(exe)
        kb = key.encode()
        header = _MAGIC + _HEADER.pack(kb, _mac(secret, kb, len(payload), payload), len(payload))
        size = len(header) + len(payload)
        cap = disk_cache_max_bytes()
        if 0 < cap < size:
            return  # larger than the whole cache: not stored
        fd, tmp = _mkstemp(dir=directory, prefix=_TMP_PREFIX, suffix=_SUFFIX)   # mode 0600
        try:
            try:
                _write_all(fd, header)
                _write_all(fd, payload)
                now = time.time_ns()   # a fine-grained mtime: the newest entry is the last to go
                os.utime(fd, ns=(now, now))
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except BaseException:
            _unlink(Path(tmp))
            raise
    except OSError as e:   # disk full, quota, read-only: the executable stays in memory
        _count("write_errors")
        _warn_once("write", directory, f"cannot write to {directory}: {e.strerror or e}")
        return
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
    from disk, False when it was compiled (and stored, if the directory can be
    written), None when the disk cache is disabled, or refused (an unsafe
    directory or key file: see the module docstring).  :func:`last_cache_hit`
    reports the same value.
    """
    if not disk_cache_enabled():
        _count("disabled")
        _tls.hit = None
        exe = xla.compile(static_module)
        return (exe, None) if return_hit else exe
    directory = cache_dir()
    usable = True
    try:
        _make_private_dir(directory)
    except OSError as e:   # cannot be created: compile, and keep the executable in memory
        _count("write_errors")
        _warn_once("write", directory, f"cannot create {directory}: {e.strerror or e}")
        usable = False
    secret = None
    if usable:
        try:
            why = _check_dir(directory, "the cache directory")
        except OSError as e:
            why = f"cannot inspect the cache directory {directory}: {e.strerror or e}"
        if why is not None:
            _warn_once("directory", directory, why)
        else:
            secret = _secret()
        if secret is None:
            _count("untrusted")
            _tls.hit = None
            exe = xla.compile(static_module)
            return (exe, None) if return_hit else exe
    key = cache_key(static_module)
    path = directory / (key + _SUFFIX)
    exe = _load(path, key, secret) if usable else None
    hit = exe is not None
    if hit:
        _count("hits")
    else:
        _count("misses")
        exe = xla.compile(static_module)
        if usable:
            _store(directory, path, key, exe, secret)
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
