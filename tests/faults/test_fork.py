"""dynjax in child processes (issue 20, item 8).

After fork the child has only the forking thread: the parent's XLA client (its thread pools),
XLA's compiler (its slow-compilation alarm thread) and dynjax's background compile thread are
gone, and locks other threads held stay held. A child used to hang on its first compile or
disk-cache load. Now the child makes a new client, drops the parent's executables from every
cache, compiles in a compile server process when the parent had compiled, and starts its own
compile thread (``runtime.xla._after_fork_in_child``, ``execution.tiers._after_fork_in_child``).

Every child runs a program the parent compiled, at a new size and at the parent's size, and a
program the parent never saw; its values are checked against numpy. Every wait for a child
has a timeout, so that a regression fails instead of hanging.
"""
from __future__ import annotations

import faulthandler
import multiprocessing
import os
import pickle
import signal
import threading
import time

import numpy as np
import pytest

import dynjax.numpy as jnp
from dynjax import qjit, runtime
from dynjax.execution import tiers

#: seconds a child may take (imports, compiles in a busy machine); a hang takes forever
CHILD_TIMEOUT = 180


@qjit(abstracted_axes={0: "n"})
def parents_program(x):
    return jnp.sum(jnp.tanh(x) * 2)


def _want_parents(n):
    return float(np.sum(np.tanh(np.linspace(0, 1, n)) * 2))


def _want_new(n):
    x = np.linspace(0, 1, n)
    return (np.cumsum(x) * 3 - x).tolist()


def child_work(sizes=(5, 7, 3000, 40)) -> dict:
    """What every child runs: the parent's program at the parent's size and new ones, a
    brand-new program, then (after the background compiles) the same sizes again."""
    new = qjit(lambda x: jnp.cumsum(x) * 3 - x, abstracted_axes={0: "n"})
    out = {"pid": os.getpid(), "parents": {}, "new": {}, "again": {}}
    for n in sizes:
        x = np.linspace(0, 1, n)
        out["parents"][n] = float(parents_program(x))
        out["new"][n] = new(x).tolist()
    tiers.wait_for_background()   # the child's own compile thread
    for n in sizes:
        out["again"][n] = float(parents_program(np.linspace(0, 1, n)))
    info = new.cache_info()
    out["new_compiled"] = info["compilations"] + info["padded_compilations"] + info["disk_cache_hits"]
    return out


def _child_entry(queue):
    # a child that does not exit is asked for every thread's stack before it is killed
    # (``_run_in``): the dump goes to its stderr, which the failing test's report shows
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        queue.put(("ok", child_work()))
    except BaseException as e:   # reported to the parent, which fails the test with it
        queue.put(("error", repr(e)))


def _check(result, sizes=(5, 7, 3000, 40)):
    assert result["pid"] != os.getpid()
    for n in sizes:
        assert result["parents"][n] == pytest.approx(_want_parents(n), rel=1e-12)
        assert result["again"][n] == pytest.approx(_want_parents(n), rel=1e-12)
        np.testing.assert_allclose(result["new"][n], _want_new(n), rtol=1e-12)
    assert result["new_compiled"] >= 1


def _run_in(context: str):
    ctx = multiprocessing.get_context(context)
    queue = ctx.Queue()
    proc = ctx.Process(target=_child_entry, args=(queue,))
    proc.start()
    try:
        status, result = queue.get(timeout=CHILD_TIMEOUT)
    except Exception:
        status, result = "timeout", f"the {context} child did not answer in {CHILD_TIMEOUT} s"
    finally:
        proc.join(30)
        if proc.is_alive():
            os.kill(proc.pid, signal.SIGUSR1)
            time.sleep(2)
            proc.kill()
            proc.join(10)
    assert status == "ok", result
    assert proc.exitcode == 0
    return result


@pytest.fixture
def parent_compiled(tmp_path, monkeypatch):
    """The parent has compiled (exact and padded executables, background compiles done)."""
    monkeypatch.setenv("DYNJAX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("DYNJAX_TIERS", raising=False)
    monkeypatch.delenv("DYNJAX_DISABLE_DISK_CACHE", raising=False)   # on, as in a user's process
    for n in (5, 5, 9):
        assert float(parents_program(np.linspace(0, 1, n))) == pytest.approx(_want_parents(n), rel=1e-12)
    tiers.wait_for_background()


@pytest.mark.parametrize("disk_cache", ["on", "off"])
@pytest.mark.parametrize("context", ["fork", "forkserver", "spawn"])
def test_children_of_every_start_method_compile_and_run(context, disk_cache, parent_compiled, monkeypatch):
    if disk_cache == "off":   # every compile in a forked child goes to the compile server
        monkeypatch.setenv("DYNJAX_DISABLE_DISK_CACHE", "1")
    _check(_run_in(context))
    # the parent still works, with its own executables
    assert float(parents_program(np.linspace(0, 1, 33))) == pytest.approx(_want_parents(33), rel=1e-12)


def _raw_fork(work) -> object:
    """Run ``work()`` in a child made by os.fork(); its pickled result comes back on a pipe."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child
        try:
            os.close(read)
            try:
                payload = pickle.dumps(("ok", work()))
            except BaseException as e:
                payload = pickle.dumps(("error", repr(e)))
            with os.fdopen(write, "wb") as f:
                f.write(payload)
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    done = threading.Event()

    def reader():
        with os.fdopen(read, "rb") as f:
            chunks.append(f.read())
        done.set()
    threading.Thread(target=reader, daemon=True).start()
    finished = done.wait(CHILD_TIMEOUT)
    if not finished:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and os.waitpid(pid, os.WNOHANG) == (0, 0):
        time.sleep(0.05)
    assert finished, f"the forked child did not answer in {CHILD_TIMEOUT} s"
    status, result = pickle.loads(chunks[0])
    assert status == "ok", result
    return result


def test_a_raw_fork_child_compiles_and_runs(parent_compiled, monkeypatch):
    monkeypatch.setenv("DYNJAX_DISABLE_DISK_CACHE", "1")
    _check(_raw_fork(child_work))


def test_a_fork_while_the_compile_thread_is_busy(parent_compiled, monkeypatch):
    """At fork time the parent's compile thread runs a job and others wait in its queue: the
    child has neither, starts its own thread, and its calls do not wait for the parent's jobs."""
    monkeypatch.setenv("DYNJAX_DISABLE_DISK_CACHE", "1")
    release = threading.Event()
    tiers.background(release.wait)
    try:
        for n in (100, 300, 700):   # their buckets wait behind the held job
            assert float(parents_program(np.linspace(0, 1, n))) == pytest.approx(_want_parents(n), rel=1e-12)
        assert tiers.queued() >= 1
        result = _raw_fork(lambda: (tiers.queued(), child_work((100, 300, 700, 5))))
    finally:
        release.set()
    queued_in_child, work = result
    assert queued_in_child == 0
    _check(work, (100, 300, 700, 5))
    tiers.wait_for_background()


def test_the_parents_executables_raise_in_a_child_instead_of_hanging(parent_compiled):
    from mlir_passes import specialize
    module = specialize("""func.func @main(%x: tensor<?xf64>) -> tensor<?xf64> {
      %y = stablehlo.add %x, %x : tensor<?xf64>
      return %y : tensor<?xf64>
    }""", ["tensor<4xf64>"], {})
    exe = runtime.compile(module)
    np.testing.assert_array_equal(exe(np.arange(4.0))[0], [0.0, 2.0, 4.0, 6.0])

    def work():
        try:
            exe(np.arange(4.0))
        except runtime.StaleExecutableError as e:
            stale = str(e)
        else:
            stale = None
        again = runtime.compile(module)   # compiled in the child (through the compile server)
        return stale, again(np.arange(4.0))[0].tolist()
    stale, again = _raw_fork(work)
    assert stale is not None and "fork" in stale
    assert again == [0.0, 2.0, 4.0, 6.0]
    np.testing.assert_array_equal(exe(np.arange(4.0))[0], [0.0, 2.0, 4.0, 6.0])   # the parent's still works


def test_a_child_of_a_child_compiles(parent_compiled, monkeypatch):
    monkeypatch.setenv("DYNJAX_DISABLE_DISK_CACHE", "1")

    def grandchild():
        return _raw_fork(lambda: child_work((5, 6, 50, 3000)))
    _check(_raw_fork(grandchild), (5, 6, 50, 3000))


def test_the_parent_loads_what_a_child_compiled_into_the_disk_cache(parent_compiled, monkeypatch):
    """A forked child's compiles come from the compile server and go into the shared disk
    cache. The entry must be the server's own serialized executable: re-serializing the
    child's deserialized copy dropped XLA's compiled functions, and the parent, loading it,
    failed with "Function broadcast_multiply_fusion not found"."""
    monkeypatch.setenv("DYNJAX_TIERS", "exact")
    new = qjit(lambda x: jnp.where(x > 0.5, x, -x) * 3, abstracted_axes={0: "n"})
    x = np.linspace(0, 1, 41)
    want = np.where(x > 0.5, x, -x) * 3
    got = _raw_fork(lambda: new(x).tolist())
    np.testing.assert_allclose(got, want, rtol=1e-15)
    np.testing.assert_allclose(new(x), want, rtol=1e-15)
    assert new.cache_info()["disk_cache_hits"] == 1    # the child's entry, loaded and run here


def test_a_fork_while_the_cache_evictor_scans(parent_compiled, tmp_path, monkeypatch):
    """At fork time the parent's disk-cache evictor is inside a scan: the child starts with no
    evictor (its writes do not wait for the parent's, which is not in the child), its writes
    queue scans of their own, and its cap holds once its evictor has run them."""
    from dynjax.runtime import cache
    from mlir_passes import specialize

    def module(n):
        return specialize("""func.func @main(%x: tensor<?xf64>) -> tensor<?xf64> {
          %y = stablehlo.multiply %x, %x : tensor<?xf64>
          return %y : tensor<?xf64>
        }""", [f"tensor<{n}xf64>"], {})

    def entries():
        return [p for p in cache.cache_dir().iterdir() if p.suffix == ".xlaexe"]

    # the entries fill the cap, and the process forgets what it knew of the directory (as a
    # new process would): its next write queues a scan, held here
    monkeypatch.setenv("DYNJAX_DISK_CACHE_MAX_BYTES", "0")
    runtime.compile_cached(module(19))
    monkeypatch.setenv("DYNJAX_DISK_CACHE_MAX_BYTES", str(sum(p.stat().st_size for p in entries())))
    assert cache.wait_for_eviction(60)
    with cache._evict_lock:
        cache._dir_state.pop(str(cache.cache_dir()), None)
    real_scan = cache._scan
    release, scanning = threading.Event(), threading.Event()

    def held_scan(directory):
        scanning.set()
        release.wait(CHILD_TIMEOUT)
        return real_scan(directory)

    def child():
        cache._scan = real_scan
        before = cache.cache_stats()["evictions"]
        for n in (21, 22):
            x = np.linspace(0, 1, n)
            np.testing.assert_array_equal(runtime.compile_cached(module(n))(x)[0], x * x)
        idle = cache.wait_for_eviction(30)
        return idle, cache.cache_stats()["evictions"] - before, sum(p.stat().st_size for p in entries())

    monkeypatch.setattr(cache, "_scan", held_scan)
    try:
        runtime.compile_cached(module(20))
        assert scanning.wait(60)
        idle, evicted, size = _raw_fork(child)
    finally:
        release.set()
    assert idle and evicted >= 1 and size <= cache.disk_cache_max_bytes()
    assert cache.wait_for_eviction(CHILD_TIMEOUT)


def test_a_child_takes_no_executable_of_the_parent_from_the_dispatch_memo(monkeypatch):
    """A call with one array keeps its plan, which may hold the executable itself, in the
    dispatch table's memo: the child empties it with the table, and compiles its own."""
    monkeypatch.setenv("DYNJAX_TIERS", "exact")   # (a plan holding the executable)
    monkeypatch.setenv("DYNJAX_DISABLE_DISK_CACHE", "1")
    f = qjit(lambda x: jnp.tanh(x) * 2)
    x = np.linspace(0, 1, 7)
    for _ in range(2):
        np.testing.assert_allclose(f(x), np.tanh(x) * 2, rtol=1e-15)
    assert f._fast.memo[0] == (7,) and isinstance(f._fast.memo[2][1], runtime.Executable)
    np.testing.assert_allclose(_raw_fork(lambda: f(x).tolist()), np.tanh(x) * 2, rtol=1e-15)


def test_a_fork_while_another_thread_makes_a_host_server(parent_compiled, monkeypatch):
    """At fork time another thread of the parent holds the lock under which a segment makes
    the server of the sizes its host programs admit (``segment_host._MAKING_SERVERS``): the
    child has a free one, builds host programs and serves new small sizes."""
    from dynjax.execution import segment_host
    monkeypatch.setenv("DYNJAX_DISABLE_DISK_CACHE", "1")
    monkeypatch.setenv("DYNJAX_HOST_TIER", "auto")   # (the suite's default is off)
    release, held = threading.Event(), threading.Event()

    def hold():
        with segment_host._MAKING_SERVERS:
            held.set()
            release.wait(CHILD_TIMEOUT)
    holder = threading.Thread(target=hold)
    holder.start()
    sizes = (9, 5, 7, 6)

    def child():
        g = qjit(lambda x: x * 3.0 - 1.0, abstracted_axes={0: "n"})
        values = [g(np.linspace(0, 1, n)).tolist() for n in sizes]
        info = g.cache_info()
        return values, (info["host_programs"], info["host_reuses"])
    try:
        assert held.wait(10)
        values, counts = _raw_fork(child)
    finally:
        release.set()
        holder.join()
    for n, got in zip(sizes, values):
        np.testing.assert_allclose(got, np.linspace(0, 1, n) * 3.0 - 1.0, rtol=1e-15)
    assert counts == (1, 3)   # one build, the other sizes served by it
