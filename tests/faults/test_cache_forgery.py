"""The disk cache against forged, swapped, truncated and unsafe entries, unsafe directories and
key files, and failing writes (``dynjax.runtime.cache``; issue 20, item 9).

Every call asserts its numeric result: a forged entry must never be executed, and no fault
may hang, crash or fail the call; the cache falls back to compiling (and to memory only).
"""
import errno
import hashlib
import os
import stat
import struct
import threading
import warnings

import numpy as np
import pytest

from dynjax import qjit
from dynjax.runtime import cache

X = np.arange(4.0)
OTHER_UID = 4242
HEADER = struct.Struct("<64s32sQ")   # key, the 32-byte check, the payload's length


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A fresh cache directory and key file (both under ``tmp_path``), the exact tier (one
    executable per program: one entry), and no warning issued yet."""
    monkeypatch.setenv("DYNJAX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DYNJAX_CACHE_KEY_FILE", str(tmp_path / "config" / "dynjax" / "cache-key"))
    monkeypatch.delenv("DYNJAX_DISABLE_DISK_CACHE", raising=False)
    monkeypatch.setenv("DYNJAX_TIERS", "exact")
    monkeypatch.setattr(cache, "_warned", set(), raising=False)
    return tmp_path / "cache"


def _call(c, x=X):
    """A fresh ``qjit`` of ``x * c`` (no in-memory executable: the disk cache is asked), its
    result checked against numpy, and its cache_info."""
    f = qjit(lambda v: v * c)
    r = f(x)
    np.testing.assert_array_equal(r, x * c)
    return f.cache_info()


def _from_disk(info) -> bool:
    assert info["disk_cache_hits"] + info["compilations"] == 1, info
    return info["disk_cache_hits"] == 1


def _entries(d):
    return sorted(p for p in d.iterdir() if p.name.endswith(".xlaexe") and not p.name.startswith(".tmp-"))


def _entry_of(d, c):
    """Compile ``x * c`` into an empty cache directory ``d``: the path of its one entry."""
    before = set(_entries(d)) if d.exists() else set()
    assert not _from_disk(_call(c))
    (new,) = set(_entries(d)) - before
    return new


def _split(blob):
    """An attacker's reading of an entry: magic line, key, the 32-byte check, length, payload."""
    n = blob.index(b"\n") + 1
    key, check, length = HEADER.unpack_from(blob, n)
    return blob[:n], key, check, blob[n + HEADER.size:]


def _forge(blob, *, payload=None, key=None):
    """What an attacker who can write the directory does: change the payload or the key in
    the header, then recompute the plain sha256 that the check field held."""
    magic, k, _, p = _split(blob)
    p = p if payload is None else payload
    k = k if key is None else key
    return magic + HEADER.pack(k, hashlib.sha256(p).digest(), len(p)) + p


def _disk_warnings(record):
    return [w for w in record if issubclass(w.category, RuntimeWarning) and "disk cache" in str(w.message)]


# --- forged, swapped, truncated entries ----------------------------------------------------------

def test_a_patched_constant_is_refused(env):
    path = _entry_of(env, 2.5)
    blob = path.read_bytes()
    magic, key, _, payload = _split(blob)
    two_and_half, three_and_half = struct.pack("<d", 2.5), struct.pack("<d", 3.5)
    assert two_and_half in payload   # the constant is in the executable
    path.write_bytes(_forge(blob, payload=payload.replace(two_and_half, three_and_half)))
    corrupt = cache.cache_stats()["corrupt"]
    assert not _from_disk(_call(2.5))          # refused, recompiled: 2.5 * x, not 3.5 * x
    assert cache.cache_stats()["corrupt"] == corrupt + 1
    assert _from_disk(_call(2.5))              # the good entry replaced it
    assert struct.pack("<d", 3.5) not in path.read_bytes()


def test_another_programs_payload_under_this_key_is_refused(env):
    mine = _entry_of(env, 2.5)
    other = _entry_of(env, 7.0)
    key = _split(mine.read_bytes())[1]
    assert key == mine.name[:64].encode()
    mine.write_bytes(_forge(other.read_bytes(), key=key))
    assert not _from_disk(_call(2.5))
    assert _from_disk(_call(2.5))
    assert _from_disk(_call(7.0))


def test_swapped_entries_are_refused(env):
    a = _entry_of(env, 2.5)
    b = _entry_of(env, 7.0)
    tmp = a.with_name("swap")
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)
    assert not _from_disk(_call(2.5))
    assert not _from_disk(_call(7.0))
    assert _from_disk(_call(2.5)) and _from_disk(_call(7.0))


def test_a_mac_under_the_wrong_key_is_refused(env):
    """Valid entries written with another secret (another user's, or before the key file
    was replaced) are refused, then rewritten under the current secret."""
    import hmac
    path = _entry_of(env, 2.5)
    blob = path.read_bytes()
    magic, key, _, payload = _split(blob)
    body = magic + struct.pack("<64sQ", key, len(payload)) + payload
    wrong = hmac.new(b"\x00" * 32, body, hashlib.sha256).digest()
    path.write_bytes(magic + HEADER.pack(key, wrong, len(payload)) + payload)
    assert not _from_disk(_call(2.5))
    assert _from_disk(_call(2.5))


@pytest.mark.parametrize("keep", ["nothing", "magic", "header", "half", "all_but_one"])
def test_truncated_entries_are_refused(env, keep):
    path = _entry_of(env, 2.5)
    blob = path.read_bytes()
    n = blob.index(b"\n") + 1
    cut = {"nothing": 0, "magic": n, "header": n + HEADER.size, "half": len(blob) // 2, "all_but_one": len(blob) - 1}[keep]
    path.write_bytes(blob[:cut])
    assert not _from_disk(_call(2.5))
    assert path.read_bytes() != blob[:cut] and _from_disk(_call(2.5))


def test_old_format_entries_are_ignored(env):
    """An entry of the previous format (a plain sha256) with a valid checksum is a miss."""
    path = _entry_of(env, 2.5)
    magic, key, _, payload = _split(path.read_bytes())
    old = b"DYNJAX-EXE-CACHE\x00v1\n"
    path.write_bytes(old + HEADER.pack(key, hashlib.sha256(payload).digest(), len(payload)) + payload)
    assert not _from_disk(_call(2.5))
    assert _from_disk(_call(2.5))


# --- entries that are not regular files ----------------------------------------------------------

def _guarded(fn, unblock, timeout=120.0):
    """Run ``fn`` in a thread; if it is still running after ``timeout`` seconds, call
    ``unblock`` (so the thread ends) and fail."""
    out, errors = [], []

    def target():
        try:
            out.append(fn())
        except BaseException as e:  # noqa: BLE001 -- re-raised below
            errors.append(e)
    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        unblock()
        t.join(30)
        pytest.fail(f"the call blocked for more than {timeout} s")
    if errors:
        raise errors[0]
    return out[0]


def _unblock_fifo(path):
    def unblock():
        try:   # a reader blocked in open() returns once a writer opens and closes the pipe
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
    return unblock


def test_a_fifo_in_place_of_an_entry_does_not_block(env):
    path = _entry_of(env, 2.5)
    path.unlink()
    os.mkfifo(path)
    info = _guarded(lambda: _call(2.5), _unblock_fifo(path))
    assert not _from_disk(info)
    assert stat.S_ISREG(os.lstat(path).st_mode)   # replaced by a good entry
    assert _from_disk(_call(2.5))


def test_a_symlinked_entry_is_not_followed(env, tmp_path):
    """A link to a genuine entry placed elsewhere: not read (an attacker could change the
    target), and replaced by an entry of our own; the target is not written through."""
    path = _entry_of(env, 2.5)
    elsewhere = tmp_path / "elsewhere.xlaexe"
    path.rename(elsewhere)
    genuine = elsewhere.read_bytes()
    path.symlink_to(elsewhere)
    assert not _from_disk(_call(2.5))
    assert not path.is_symlink() and stat.S_ISREG(os.lstat(path).st_mode)
    assert elsewhere.read_bytes() == genuine
    assert _from_disk(_call(2.5))


def test_a_directory_in_place_of_an_entry(env):
    path = _entry_of(env, 2.5)
    path.unlink()
    path.mkdir()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert not _from_disk(_call(2.5))
        assert not _from_disk(_call(2.5))
    assert path.is_dir()
    assert len(_disk_warnings(record)) <= 1


# --- the directory and the key file ------------------------------------------------------------

def _give_away(path, monkeypatch):
    """Make ``path`` owned by another user: chown when running as root, else pretend to be
    another user (os.getuid) for the checks."""
    if os.getuid() == 0:
        os.chown(path, OTHER_UID, -1, follow_symlinks=False)
    else:  # pragma: no cover - the sandbox runs as root
        uid = os.getuid() + 1
        monkeypatch.setattr(os, "getuid", lambda: uid)


@pytest.mark.parametrize("how", ["group_writable", "other_writable", "other_owner"])
def test_an_unsafe_directory_is_not_used(env, monkeypatch, how):
    good = _entry_of(env, 2.5)
    if how == "other_owner":
        _give_away(env, monkeypatch)
    else:
        env.chmod(0o770 if how == "group_writable" else 0o703)
    before = sorted(p.name for p in env.iterdir())
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for c in (2.5, 7.0, 2.5):
            info = _call(c)
            assert info["disk_cache_hits"] == 0 and info["compilations"] == 1
    assert len(_disk_warnings(record)) == 1
    assert str(env) in str(_disk_warnings(record)[0].message)
    assert sorted(p.name for p in env.iterdir()) == before   # nothing read, nothing written
    assert good.exists()


def test_dirs_and_key_are_private_whatever_the_umask(tmp_path, monkeypatch):
    d = tmp_path / "a" / "b" / "cache"
    key = tmp_path / "cfg" / "x" / "cache-key"
    monkeypatch.setenv("DYNJAX_CACHE_DIR", str(d))
    monkeypatch.setenv("DYNJAX_CACHE_KEY_FILE", str(key))
    monkeypatch.delenv("DYNJAX_DISABLE_DISK_CACHE", raising=False)
    monkeypatch.setenv("DYNJAX_TIERS", "exact")
    monkeypatch.setattr(cache, "_warned", set(), raising=False)
    old = os.umask(0)
    try:
        assert not _from_disk(_call(2.5))
    finally:
        os.umask(old)
    for p in (tmp_path / "a", tmp_path / "a" / "b", d, tmp_path / "cfg", tmp_path / "cfg" / "x"):
        assert stat.S_IMODE(os.lstat(p).st_mode) == 0o700, p
    assert stat.S_IMODE(os.lstat(key).st_mode) == 0o600
    assert os.lstat(key).st_size == 32
    (entry,) = _entries(d)
    assert stat.S_IMODE(os.lstat(entry).st_mode) == 0o600
    assert key.read_bytes() not in entry.read_bytes()
    assert _from_disk(_call(2.5))


def test_the_key_file_is_created_once_outside_the_cache(env, tmp_path):
    key = tmp_path / "config" / "dynjax" / "cache-key"
    assert not key.exists()
    assert not _from_disk(_call(2.5))
    secret = key.read_bytes()
    assert len(secret) == 32 and not str(key).startswith(str(env))
    assert _from_disk(_call(2.5))
    assert key.read_bytes() == secret     # reused, never rewritten
    # a new secret (the key file deleted): the old entries are refused and rewritten
    key.unlink()
    assert not _from_disk(_call(2.5))
    assert key.read_bytes() != secret
    assert _from_disk(_call(2.5))


@pytest.mark.parametrize("how", ["group_readable", "other_readable", "symlink", "other_owner", "fifo",
                                 "short", "directory"])
def test_an_unsafe_key_file_disables_the_disk_cache(env, tmp_path, monkeypatch, how):
    key = tmp_path / "config" / "dynjax" / "cache-key"
    key.parent.mkdir(parents=True, mode=0o700)
    if how == "symlink":
        target = tmp_path / "real-key"
        target.write_bytes(os.urandom(32))
        target.chmod(0o600)
        key.symlink_to(target)
    elif how == "fifo":
        os.mkfifo(key, 0o600)
    elif how == "directory":
        key.mkdir(mode=0o700)
    else:
        key.write_bytes(os.urandom(16 if how == "short" else 32))
        key.chmod({"group_readable": 0o640, "other_readable": 0o604}.get(how, 0o600))
        if how == "other_owner":
            _give_away(key, monkeypatch)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for c in (2.5, 7.0, 2.5):
            info = _guarded(lambda: _call(c), _unblock_fifo(key))
            assert info["disk_cache_hits"] == 0 and info["compilations"] == 1
    found = _disk_warnings(record)
    assert len(found) == 1 and str(key) in str(found[0].message)
    assert not env.exists() or _entries(env) == []   # memory only


# --- failing writes ----------------------------------------------------------------------------

@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EROFS, errno.EDQUOT])
def test_failing_writes_keep_calls_working(env, monkeypatch, err):
    def fail(*args, **kwargs):
        raise OSError(err, os.strerror(err))
    # ENOSPC / EDQUOT while writing the entry; EROFS already when creating the temp file
    monkeypatch.setattr(cache, "_mkstemp" if err == errno.EROFS else "_os_write", fail, raising=False)
    before = cache.cache_stats()["write_errors"]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for c in (2.5, 7.0, 1.5):
            assert not _from_disk(_call(c))
    assert len(_disk_warnings(record)) == 1
    assert os.strerror(err) in str(_disk_warnings(record)[0].message)
    assert cache.cache_stats()["write_errors"] == before + 3
    assert [p.name for p in env.iterdir()] == []   # no entry, no temp file left behind
    monkeypatch.undo()
    monkeypatch.setenv("DYNJAX_CACHE_DIR", str(env))
    monkeypatch.setenv("DYNJAX_CACHE_KEY_FILE", str(env.parent / "config" / "dynjax" / "cache-key"))
    monkeypatch.setenv("DYNJAX_TIERS", "exact")
    monkeypatch.delenv("DYNJAX_DISABLE_DISK_CACHE", raising=False)
    assert not _from_disk(_call(2.5))   # room again: stored, then a hit
    assert _from_disk(_call(2.5))
