"""Thread safety and bounded memory of qjit functions.

Many threads call one function at many sizes (arrays with an abstracted axis and int size
arguments), first calls race, eager numpy runs on one thread while another traces, and a
function called at many sizes keeps a bounded number of executables.
"""
import gc
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import dynjax.numpy as jnp
from dynjax import for_loop, qjit, runtime
from dynjax.execution.lru import BoundedCache

THREADS = 8


def _run_threads(work, items, threads=THREADS):
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(work, items))


@pytest.mark.usefixtures("exact_tier")
def test_many_threads_many_sizes_array_and_int_arguments():
    @qjit(abstracted_axes=({0: "n"}, None))
    def f(x, k):
        return jnp.sum(jnp.sin(x) * 2) + jnp.arange(k).sum(), x[: k] * 3

    sizes = [0, 1, 2, 3, 5, 8, 13]
    items = [(n, k) for _ in range(6) for n in sizes for k in range(0, 4)]
    rng = np.random.default_rng(0)
    data = {n: rng.normal(size=n) for n in sizes}

    def work(item):
        n, k = item
        s, head = f(data[n], k)
        np.testing.assert_allclose(s, np.sum(np.sin(data[n]) * 2) + np.arange(k).sum(), rtol=1e-12)
        np.testing.assert_array_equal(head, data[n][:k] * 3)
        return True
    assert all(_run_threads(work, items))
    info = f.cache_info()
    assert info["traces"] == 1 and info["calls"] == len(items)
    # one compilation per distinct (size, k) however many threads asked at once
    assert info["specializations"] == len(sizes) * 4


@pytest.mark.usefixtures("exact_tier")
def test_many_threads_int_size_argument_fast_path():
    f = qjit(lambda n: jnp.arange(n) * 2)
    items = [n % 9 for n in range(300)]

    def work(n):
        for kind in (int, np.int64, np.array):
            np.testing.assert_array_equal(f(kind(n)), np.arange(n) * 2)
        return True
    assert all(_run_threads(work, items))
    # a Python int is weakly typed, numpy integers are not: two traces, each compiled per size
    assert f.cache_info()["traces"] == 2 and f.cache_info()["specializations"] == 18


@pytest.mark.usefixtures("exact_tier")
def test_racing_first_calls_compile_once():
    f = qjit(lambda x: jnp.cumsum(x) * 2, abstracted_axes={0: "n"})
    barrier = threading.Barrier(THREADS)
    x = np.arange(11.0)

    def work(_):
        barrier.wait()
        return f(x)
    for r in _run_threads(work, range(THREADS)):
        np.testing.assert_array_equal(r, np.cumsum(x) * 2)
    info = f.cache_info()
    assert info["traces"] == 1 and info["specializations"] == 1 and info["lowerings"] == 1


def test_eager_calls_on_another_thread_during_a_trace_are_eager():
    inside, release = threading.Event(), threading.Event()

    @qjit
    def slow(n):
        out = jnp.ones(n) * 2
        inside.set()
        release.wait(10)   # keep this thread's trace open while the other thread computes
        return out

    result = {}
    t = threading.Thread(target=lambda: result.setdefault("r", slow(3)))
    t.start()
    assert inside.wait(10)
    eager = jnp.ones(3) + 1            # no trace is active on this thread
    nested = qjit(lambda x: x * 5)(np.ones(2))   # nor is the other thread's trace inlined here
    release.set()
    t.join(10)
    assert type(eager) is np.ndarray and eager.tolist() == [2.0, 2.0, 2.0]
    assert type(nested) is np.ndarray and nested.tolist() == [5.0, 5.0]
    np.testing.assert_array_equal(result["r"], [2.0, 2.0, 2.0])
    assert "mul" in str(slow.jaxpr)


def test_host_driven_loops_under_threads():
    @qjit(abstracted_axes={0: "n"})
    def grow(x, k):
        @for_loop(0, k, 1, allow_array_resizing=True)
        def body(i, a):
            return jnp.concatenate([a, a[-1:] + 1.0])
        return body(x)

    def work(item):
        n, k = item
        x = np.arange(float(n + 1))
        np.testing.assert_array_equal(grow(x, k), np.arange(float(n + 1 + k)))
        return True
    assert all(_run_threads(work, [(n, k) for n in range(4) for k in range(4)] * 3))


# --- bounded memory ------------------------------------------------------------------------------
def _live_executables():
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, runtime.Executable))


@pytest.mark.usefixtures("exact_tier")
def test_executable_caches_are_bounded():
    before = _live_executables()
    f = qjit(lambda x: (x * 2).sum(), abstracted_axes={0: "n"}, cache_size=4)
    for n in range(60):
        assert float(f(np.ones(n))) == 2.0 * n
    seg = f._last.program.single
    assert len(seg.cache) == 4 and seg.cache.evictions == 56
    assert len(f._fast) <= 4
    # evicted executables are freed: at most the segment cache plus the dispatch table
    assert _live_executables() - before <= 8
    # an evicted size still gives the right answer (recompiled)
    assert float(f(np.ones(0))) == 0.0


@pytest.mark.usefixtures("exact_tier")
def test_int_size_caches_are_bounded_and_correct_after_eviction():
    f = qjit(lambda n: jnp.arange(n).sum(), cache_size=3)
    for n in list(range(20)) + list(range(20)):
        assert int(f(n)) == n * (n - 1) // 2
    assert len(f._last.program.single.cache) == 3


def test_cache_size_from_the_environment(monkeypatch):
    monkeypatch.setenv("DYNJAX_CACHE_SIZE", "5")
    f = qjit(lambda x: x + 1)
    assert f.cache_size == 5 and f._fast.maxsize == 5
    monkeypatch.setenv("DYNJAX_CACHE_SIZE", "zero")
    with pytest.raises(ValueError, match="DYNJAX_CACHE_SIZE must be a positive integer"):
        qjit(lambda x: x + 1)
    with pytest.raises(ValueError, match="cache_size must be a positive integer"):
        qjit(lambda x: x, cache_size=0)


def test_bounded_cache_fills_once_and_retries_after_a_failure():
    cache = BoundedCache(2)
    calls = []
    gate = threading.Event()

    def make():
        calls.append(1)
        gate.wait(5)
        return "value"
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(cache.get_or_fill, "k", make) for _ in range(4)]
        gate.set()
        assert [fu.result() for fu in futures] == ["value"] * 4
    assert len(calls) == 1

    attempts = []

    def flaky():
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("first attempt fails")
        return 7
    with pytest.raises(RuntimeError):
        cache.get_or_fill("j", flaky)
    assert cache.get_or_fill("j", flaky) == 7
    cache.put("a", 1)
    cache.get("j")
    cache.put("b", 2)        # evicts the least recently used entry ("a")
    assert "a" not in cache and cache.get("j") == 7 and cache.get("b") == 2
