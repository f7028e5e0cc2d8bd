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
    monkeypatch.delenv("DYNJAX_DISABLE_DISK_CACHE", raising=False)
    exe, hit = rt.compile_cached(_module(2), return_hit=True)
    assert hit is False
    _check(exe, 2)
