"""The on-disk executable cache: hits, corruption, truncation, disabling."""

import numpy as np
import pytest

from dynjax import runtime as rt
from dynjax.runtime import cache
from mlir_passes import specialize

DYN = """func.func @main(%n: tensor<i64>, %x: tensor<?xf64>) -> tensor<?xf64> {
  %c = stablehlo.constant dense<3.0> : tensor<f64>
  %s = stablehlo.reshape %n : (tensor<i64>) -> tensor<1xi64>
  %b = stablehlo.dynamic_broadcast_in_dim %c, %s, dims = [] : (tensor<f64>, tensor<1xi64>) -> tensor<?xf64>
  %y = stablehlo.multiply %x, %b : tensor<?xf64>
  return %y : tensor<?xf64>
}"""


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    monkeypatch.setenv("DYNJAX_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("DYNJAX_CACHE_KEY_FILE", str(tmp_path / "key" / "cache-key"))
    monkeypatch.delenv("DYNJAX_DISABLE_DISK_CACHE", raising=False)
    return tmp_path / "c"


def _module(n):
    return specialize(DYN, [None, f"tensor<{n}xf64>"], {0: n})


def _check(exe, n):
    x = np.arange(float(n))
    (y,) = exe(x)
    np.testing.assert_array_equal(y, 3.0 * x)


def _entries(d):
    return sorted(p for p in d.iterdir() if p.suffix == ".xlaexe")


def test_miss_then_hit(cache_env):
    st = _module(5)
    exe, hit = rt.compile_cached(st, return_hit=True)
    assert hit is False and rt.last_cache_hit() is False
    _check(exe, 5)
    assert len(_entries(cache_env)) == 1
    assert not [p for p in cache_env.iterdir() if p.name.startswith(".tmp-")]
    exe2, hit = rt.compile_cached(st, return_hit=True)
    assert hit is True and rt.last_cache_hit() is True
    _check(exe2, 5)
    # a different module is a different key
    _, hit = rt.compile_cached(_module(6), return_hit=True)
    assert hit is False
    assert len(_entries(cache_env)) == 2


@pytest.mark.parametrize("damage", ["flip_payload", "flip_header", "truncate", "empty", "garbage"])
def test_corrupted_entry_is_recompiled(cache_env, damage):
    st = _module(4)
    rt.compile_cached(st)
    (path,) = _entries(cache_env)
    blob = bytearray(path.read_bytes())
    if damage == "flip_payload":
        for i in range(len(blob) - 200, len(blob) - 100):
            blob[i] ^= 0xFF
    elif damage == "flip_header":
        blob[5] ^= 0x01
    elif damage == "truncate":
        blob = blob[: len(blob) // 2]
    elif damage == "empty":
        blob = bytearray()
    else:
        blob = bytearray(b"\x00garbage" * 100)
    path.write_bytes(bytes(blob))
    before = rt.cache_stats()["corrupt"]
    exe, hit = rt.compile_cached(st, return_hit=True)
    assert hit is False
    assert rt.cache_stats()["corrupt"] == before + 1
    _check(exe, 4)
    # the bad entry was replaced by a good one
    exe, hit = rt.compile_cached(st, return_hit=True)
    assert hit is True
    _check(exe, 4)


def test_stale_entry_with_wrong_key_is_rejected(cache_env):
    a, b = _module(2), _module(3)
    rt.compile_cached(a)
    (pa,) = _entries(cache_env)
    # put a's valid entry under b's name: the header key does not match
    pb = cache_env / (cache.cache_key(b) + ".xlaexe")
    pb.write_bytes(pa.read_bytes())
    exe, hit = rt.compile_cached(b, return_hit=True)
    assert hit is False
    _check(exe, 3)


def test_entries_of_other_xla_flags_are_not_loaded(cache_env, monkeypatch):
    """XLA_FLAGS change what XLA emits (fast math, emitters): an executable compiled under
    other flags is a miss, compiled again, and both entries stay."""
    from dynjax.runtime import compile_options
    st = _module(7)
    rt.compile_cached(st)
    assert "--xla_cpu_enable_fast_math=true" not in compile_options.xla_flags()
    monkeypatch.setattr(compile_options, "_flags_at_start",
                        compile_options.xla_flags() + ("--xla_cpu_enable_fast_math=true",))
    exe, hit = rt.compile_cached(st, return_hit=True)
    assert hit is False
    _check(exe, 7)
    assert len(_entries(cache_env)) == 2
    exe, hit = rt.compile_cached(st, return_hit=True)
    assert hit is True


def test_disable_disk_cache(cache_env, monkeypatch):
    monkeypatch.setenv("DYNJAX_DISABLE_DISK_CACHE", "1")
    assert not rt.disk_cache_enabled()
    exe, hit = rt.compile_cached(_module(3), return_hit=True)
    assert hit is None and rt.last_cache_hit() is None
    _check(exe, 3)
    assert not cache_env.exists()


def test_default_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("DYNJAX_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert rt.cache_dir() == tmp_path / "dynjax"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert rt.cache_dir() == tmp_path / "home" / ".cache" / "dynjax"


def test_unwritable_dir_still_compiles(tmp_path, monkeypatch):
    f = tmp_path / "file"
    f.write_text("x")
    monkeypatch.setenv("DYNJAX_CACHE_DIR", str(f / "sub"))  # cannot be created
    monkeypatch.setenv("DYNJAX_CACHE_KEY_FILE", str(tmp_path / "key" / "cache-key"))
    monkeypatch.delenv("DYNJAX_DISABLE_DISK_CACHE", raising=False)
    with pytest.warns(RuntimeWarning, match="cannot create"):
        exe, hit = rt.compile_cached(_module(2), return_hit=True)
    assert hit is False
    _check(exe, 2)


# --- the size cap and least-recently-used eviction -------------------------------------------

def _measure(tmp_path, monkeypatch, ns):
    """The size of each module's entry, measured in a scratch directory with no cap."""
    d = tmp_path / "measure"
    monkeypatch.setenv("DYNJAX_CACHE_DIR", str(d))
    monkeypatch.setenv("DYNJAX_DISK_CACHE_MAX_BYTES", "0")
    sizes = {}
    for n in ns:
        rt.compile_cached(_module(n))
        sizes[n] = (d / (cache.cache_key(_module(n)) + ".xlaexe")).stat().st_size
    return sizes


def _path(d, n):
    return d / (cache.cache_key(_module(n)) + ".xlaexe")


def _finished(d):
    """The finished entries (not a writer's ``.tmp-*`` file)."""
    return [p for p in _entries(d) if not p.name.startswith(".tmp-")]


def _total(d):
    return sum(p.stat().st_size for p in _finished(d))


def test_max_bytes_env(monkeypatch):
    monkeypatch.delenv("DYNJAX_DISK_CACHE_MAX_BYTES", raising=False)
    assert cache.disk_cache_max_bytes() == cache.DEFAULT_MAX_BYTES == 1 << 30
    for raw, want in [("123456", 123456), ("0", 0), ("512K", 512 * 1024), ("64m", 64 << 20),
                      ("2G", 2 << 30), ("2GiB", 2 << 30), (" 10 MB ", 10 << 20)]:
        monkeypatch.setenv("DYNJAX_DISK_CACHE_MAX_BYTES", raw)
        assert cache.disk_cache_max_bytes() == want, raw
    for raw in ["lots", "-5", "1.5G", "12T"]:
        monkeypatch.setenv("DYNJAX_DISK_CACHE_MAX_BYTES", raw)
        with pytest.warns(RuntimeWarning, match="DYNJAX_DISK_CACHE_MAX_BYTES"):
            assert cache.disk_cache_max_bytes() == cache.DEFAULT_MAX_BYTES


def test_cap_keeps_the_most_recent_entries(cache_env, tmp_path, monkeypatch):
    ns = list(range(20, 34))
    sizes = _measure(tmp_path, monkeypatch, ns)
    cap = 4 * max(sizes.values())
    monkeypatch.setenv("DYNJAX_CACHE_DIR", str(cache_env))
    monkeypatch.setenv("DYNJAX_DISK_CACHE_MAX_BYTES", str(cap))
    before = rt.cache_stats()
    for i, n in enumerate(ns):
        exe, hit = rt.compile_cached(_module(n), return_hit=True)
        assert hit is False
        _check(exe, n)
        assert cache.wait_for_eviction(60)
        assert _total(cache_env) <= cap
        # the entry just written survives, and the survivors are the latest writes
        present = [m for m in ns[: i + 1] if _path(cache_env, m).exists()]
        assert present == ns[i + 1 - len(present): i + 1]
    # eviction goes down to 90% of the cap: at least 3 entries of at most cap/4 remain
    assert 3 <= len(present) <= 4
    assert len(_entries(cache_env)) == len(present)
    after = rt.cache_stats()
    assert after["evictions"] - before["evictions"] == len(ns) - len(present)
    assert after["write_errors"] == before["write_errors"]
    # an evicted module is compiled again, a surviving one is a hit
    assert rt.compile_cached(_module(ns[0]), return_hit=True)[1] is False
    assert rt.compile_cached(_module(ns[-1]), return_hit=True)[1] is True


@pytest.mark.parametrize("use_first", [True, False])
def test_hit_refreshes_recency(cache_env, tmp_path, monkeypatch, use_first):
    a, b, c, d = 40, 41, 42, 43
    sizes = _measure(tmp_path, monkeypatch, [a, b, c, d])
    # a, b and c fit; d overflows, and evicting one entry gets below 90% of the cap (the sizes
    # are alike, and a module's entry can differ by a few bytes from one compilation to the next)
    cap = sum(sizes.values()) - min(sizes.values()) // 2
    monkeypatch.setenv("DYNJAX_CACHE_DIR", str(cache_env))
    monkeypatch.setenv("DYNJAX_DISK_CACHE_MAX_BYTES", str(cap))
    for n in (a, b, c):
        rt.compile_cached(_module(n))
    assert cache.wait_for_eviction(60)
    assert all(_path(cache_env, n).exists() for n in (a, b, c))
    if use_first:
        old = _path(cache_env, a).stat().st_mtime_ns
        exe, hit = rt.compile_cached(_module(a), return_hit=True)
        assert hit is True
        _check(exe, a)
        new = _path(cache_env, a).stat().st_mtime_ns
        assert new > old and new > _path(cache_env, c).stat().st_mtime_ns
    rt.compile_cached(_module(d))
    assert cache.wait_for_eviction(60)
    gone = b if use_first else a
    assert {n for n in (a, b, c, d) if _path(cache_env, n).exists()} == {a, b, c, d} - {gone}
    assert _total(cache_env) <= cap


def test_no_cap_and_oversized_entries(cache_env, monkeypatch):
    monkeypatch.setenv("DYNJAX_DISK_CACHE_MAX_BYTES", "0")  # no cap
    for n in range(50, 56):
        rt.compile_cached(_module(n))
    assert len(_entries(cache_env)) == 6
    rt.clear_disk_cache()
    # an entry larger than the whole cache is not stored (and evicts nothing)
    monkeypatch.setenv("DYNJAX_DISK_CACHE_MAX_BYTES", "1000")
    for _ in range(2):
        exe, hit = rt.compile_cached(_module(56), return_hit=True)
        assert hit is False
        _check(exe, 56)
    assert not cache_env.exists() or _entries(cache_env) == []


def test_eviction_spares_temp_files_being_written(cache_env, tmp_path, monkeypatch):
    import os
    import time

    sizes = _measure(tmp_path, monkeypatch, [60, 61, 62])
    cap = 2 * max(sizes.values())
    monkeypatch.setenv("DYNJAX_CACHE_DIR", str(cache_env))
    monkeypatch.setenv("DYNJAX_DISK_CACHE_MAX_BYTES", str(cap))
    cache_env.mkdir(parents=True)
    # another writer's unfinished entry (bigger than the cap: it must not count or be evicted)
    busy = cache_env / ".tmp-busywriter.xlaexe"
    busy.write_bytes(b"x" * (3 * cap))
    # a temp file a crashed writer left two hours ago
    stale = cache_env / ".tmp-crashed.xlaexe"
    stale.write_bytes(b"y" * 100)
    t = time.time() - 7200
    os.utime(stale, (t, t))
    for n in (60, 61, 62):
        rt.compile_cached(_module(n))
        assert cache.wait_for_eviction(60)
    assert busy.exists() and busy.stat().st_size == 3 * cap
    assert not stale.exists()
    # the finished entries obey the cap by themselves: the newest one is kept
    assert _path(cache_env, 62).exists() and not _path(cache_env, 60).exists()
    assert _total(cache_env) <= cap


def test_entries_vanishing_during_eviction(cache_env, tmp_path, monkeypatch):
    sizes = _measure(tmp_path, monkeypatch, [70, 71, 72, 73])
    monkeypatch.setenv("DYNJAX_CACHE_DIR", str(cache_env))
    monkeypatch.setenv("DYNJAX_DISK_CACHE_MAX_BYTES", str(2 * max(sizes.values())))
    real_scan = cache._scan

    def scan_then_lose_files(directory):
        found = real_scan(directory)
        for p in _entries(directory):  # another process evicts everything meanwhile
            p.unlink()
        return found

    monkeypatch.setattr(cache, "_scan", scan_then_lose_files)
    before = rt.cache_stats()["write_errors"]
    for n in (70, 71, 72, 73):
        exe, hit = rt.compile_cached(_module(n), return_hit=True)
        assert hit is False
        _check(exe, n)
        assert cache.wait_for_eviction(60)
    assert rt.cache_stats()["write_errors"] == before


def test_concurrent_writers_under_a_tiny_cap(cache_env, tmp_path, monkeypatch):
    import random
    import threading

    ns = list(range(80, 88))
    sizes = _measure(tmp_path, monkeypatch, ns)
    cap = int(3.5 * max(sizes.values()))
    monkeypatch.setenv("DYNJAX_CACHE_DIR", str(cache_env))
    monkeypatch.setenv("DYNJAX_DISK_CACHE_MAX_BYTES", str(cap))
    before = rt.cache_stats()
    start = threading.Barrier(8)
    errors, checked = [], []

    def worker(seed):
        try:
            order = list(ns)
            random.Random(seed).shuffle(order)
            start.wait()
            for n in order:
                _check(rt.compile_cached(_module(n)), n)
                checked.append(n)
        except BaseException as e:  # noqa: BLE001 -- reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.wait_for_eviction(60)
    assert errors == []
    assert len(checked) == 8 * len(ns)
    after = rt.cache_stats()
    assert after["write_errors"] == before["write_errors"]
    assert after["corrupt"] == before["corrupt"]
    assert after["evictions"] > before["evictions"]
    assert 1 <= len(_entries(cache_env)) <= 3
    assert _total(cache_env) <= cap
    assert not [p for p in cache_env.iterdir() if p.name.startswith(".tmp-")]


def test_a_write_does_not_wait_for_the_scan(cache_env, tmp_path, monkeypatch):
    """Scans run on the evictor thread: while one is held, writes return (and are not
    evicted by it, being newer than its start); once it runs, the cap holds again."""
    import threading

    sizes = _measure(tmp_path, monkeypatch, [90, 91, 92, 93])
    cap = 2 * max(sizes.values())
    monkeypatch.setenv("DYNJAX_CACHE_DIR", str(cache_env))
    monkeypatch.setenv("DYNJAX_DISK_CACHE_MAX_BYTES", str(cap))
    real_scan = cache._scan
    release, scanning = threading.Event(), threading.Event()

    def held_scan(directory):
        scanning.set()
        assert release.wait(60)
        return real_scan(directory)

    monkeypatch.setattr(cache, "_scan", held_scan)
    try:
        _check(rt.compile_cached(_module(90)), 90)   # the first write: a scan is due
        assert scanning.wait(60)
        for n in (91, 92, 93):                       # return while the scan is held
            _check(rt.compile_cached(_module(n)), n)
        assert len(_finished(cache_env)) == 4 and _total(cache_env) > cap
    finally:
        release.set()
    assert cache.wait_for_eviction(60)
    # the held scan spared what was written after it started; the one it queued then evicted
    # the oldest entries, and the last one written survives
    assert _path(cache_env, 93).exists() and not _path(cache_env, 90).exists()
    assert _total(cache_env) <= cap


def test_a_process_that_exits_right_after_its_writes_still_holds_the_cap(cache_env, tmp_path, monkeypatch):
    """A process's scans run on the evictor thread, which exit would cut short; at exit the
    process finishes them (without their pauses), so that processes that write and exit at
    once do not grow the directory past its cap. The child's scans would take minutes with
    their pauses (one after every entry, of 60 s each)."""
    import os
    import subprocess
    import sys
    import time

    ns = (110, 111, 112, 113)
    sizes = _measure(tmp_path, monkeypatch, ns)
    cap = 2 * max(sizes.values())
    monkeypatch.setenv("DYNJAX_CACHE_DIR", str(cache_env))
    monkeypatch.setenv("DYNJAX_DISK_CACHE_MAX_BYTES", str(cap))
    child = f"""
from dynjax import runtime
from dynjax.runtime import cache
from mlir_passes import specialize
cache._SCAN_CHUNK, cache._SCAN_PAUSE = 1, 60.0
for n in {ns!r}:
    runtime.compile_cached(specialize({DYN!r}, [None, f"tensor<{{n}}xf64>"], {{0: n}}))
print(len([p for p in cache.cache_dir().iterdir() if p.suffix == ".xlaexe"]))
"""
    start = time.monotonic()
    res = subprocess.run([sys.executable, "-c", child], env=dict(os.environ), capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    assert int(res.stdout.split()[-1]) == len(ns)          # nothing evicted before exit
    assert time.monotonic() - start < 60                     # the pauses were skipped
    assert _total(cache_env) <= cap and _path(cache_env, ns[-1]).exists()
    assert not _path(cache_env, ns[0]).exists()


def test_a_write_when_no_thread_can_start(cache_env, tmp_path, monkeypatch):
    """When the evictor thread cannot start (a process at its thread limit, or exiting), the
    write still stores its entry, nothing waits for a thread that does not exist, and the
    next write that can start one holds the cap."""
    import threading

    sizes = _measure(tmp_path, monkeypatch, [120, 121, 122])
    cap = 2 * max(sizes.values())
    monkeypatch.setenv("DYNJAX_CACHE_DIR", str(cache_env))
    monkeypatch.setenv("DYNJAX_DISK_CACHE_MAX_BYTES", str(cap))
    real_start = threading.Thread.start

    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    for n in (120, 121):
        exe, hit = rt.compile_cached(_module(n), return_hit=True)
        assert hit is False
        _check(exe, n)
    assert cache.wait_for_eviction(5)
    assert _path(cache_env, 120).exists() and _path(cache_env, 121).exists()
    monkeypatch.setattr(threading.Thread, "start", real_start)
    _check(rt.compile_cached(_module(122)), 122)
    assert cache.wait_for_eviction(60)
    assert _total(cache_env) <= cap and _path(cache_env, 122).exists()
