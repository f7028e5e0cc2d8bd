"""Background work steps aside for runs being served (``core.cooperative``).

A run releases the GIL to XLA at each of its steps and needs it back at once; Python work on
the compile thread (padding, lowering) would keep it for the interpreter's switch interval.
These tests check the mechanism, not timings: runs count as in flight while XLA runs them,
the compile thread waits at its checkpoints while one is, and any other thread never waits."""
import threading
import time

import numpy as np

import dynjax
import dynjax.numpy as dnp
from dynjax import runtime
from dynjax.core import cooperative
from dynjax.execution import tiers


def test_a_run_is_in_flight_while_xla_runs_it(monkeypatch):
    seen = []
    for name in ("_host_outputs", "_outputs"):     # a run's outputs, as XLA finishes it
        def outputs(exe, outs, _original=getattr(runtime.xla, name)):
            seen.append(runtime.active_runs())
            return _original(exe, outs)
        monkeypatch.setattr(runtime.xla, name, outputs)
    f = dynjax.qjit(lambda x: x * 2)
    assert runtime.active_runs() == 0
    for n in (3, 3):
        np.testing.assert_array_equal(f(np.arange(float(n))), np.arange(float(n)) * 2)
    assert seen == [1, 1]
    assert runtime.active_runs() == 0    # the run is over when the call returns


def _run_in_flight_for(seconds, started):
    runtime.xla._flight_append(None)      # as Executable.call_exact counts a run
    try:
        started.set()
        time.sleep(seconds)
    finally:
        runtime.xla._flight_pop()
    return time.perf_counter()


def _checkpoints_beside_a_run(run_seconds, checkpoints=3):
    """A run in flight for ``run_seconds`` on one thread, a background job going through
    ``checkpoints`` checkpoints on another: when the run ended, and when the job went on."""
    started, ended, resumed = threading.Event(), [], []
    pause = tiers.StepAside()

    def background():
        cooperative.step_aside(pause)
        started.wait()
        pause.start_job()
        for _ in range(checkpoints):
            cooperative.checkpoint()
        resumed.append(time.perf_counter())
    runner = threading.Thread(target=lambda: ended.append(_run_in_flight_for(run_seconds, started)))
    worker = threading.Thread(target=background)
    runner.start()
    worker.start()
    worker.join()
    runner.join()
    return ended[0], resumed[0]


def test_the_compile_thread_waits_at_checkpoints_while_a_run_is_in_flight(monkeypatch):
    monkeypatch.setattr(tiers, "MAX_PAUSE", 30.0)
    ended, resumed = _checkpoints_beside_a_run(0.3)
    assert resumed >= ended


def test_a_checkpoint_waits_at_most_max_pause(monkeypatch):
    """A run longer than MAX_PAUSE shares the GIL: the background work goes on meanwhile."""
    monkeypatch.setattr(tiers, "MAX_PAUSE", 0.01)
    ended, resumed = _checkpoints_beside_a_run(3.0)
    assert resumed < ended - 1.0


def test_background_work_waits_less_than_it_works(monkeypatch):
    """Under a run that never ends, each checkpoint waits only while the job has waited less
    than it has worked: background work goes on at half its speed at least."""
    monkeypatch.setattr(tiers, "MAX_PAUSE", 0.02)
    started = threading.Event()
    runner = threading.Thread(target=_run_in_flight_for, args=(1.5, started))
    pause = tiers.StepAside()
    waits = []

    def background():
        cooperative.step_aside(pause)
        started.wait()
        pause.start_job()
        for _ in range(40):
            before = pause.paused
            cooperative.checkpoint()
            waits.append(pause.paused > before)
            t = time.perf_counter()
            while time.perf_counter() - t < 0.005:   # an equation's work
                pass
    worker = threading.Thread(target=background)
    runner.start()
    worker.start()
    worker.join()
    runner.join()
    worked = time.perf_counter() - pause.started - pause.paused
    assert any(waits) and not all(waits)
    assert pause.paused <= worked + tiers.MAX_PAUSE


def test_other_threads_never_wait():
    started = threading.Event()
    runner = threading.Thread(target=_run_in_flight_for, args=(0.5, started))
    runner.start()
    started.wait()
    t = time.perf_counter()
    for _ in range(100):
        cooperative.checkpoint()            # this thread did not step aside
    waited = time.perf_counter() - t
    runner.join()
    assert waited < 0.25 and runtime.active_runs() == 0


def test_background_compiles_still_finish_while_runs_go_on(compile_ahead):
    """Checkpoints wait for runs, never forever: a bucket compiled in the background while
    another thread keeps calling finishes, and serves its sizes."""
    f = dynjax.qjit(lambda x: dnp.sum(dnp.sin(x) * 2.0), abstracted_axes=({0: "n"},))
    g = dynjax.qjit(lambda x: dnp.cos(x) + 1.0, abstracted_axes=({0: "n"},))
    stop = threading.Event()

    def calls():
        x = np.linspace(0, 1, 50)
        while not stop.is_set():
            g(x)
    caller = threading.Thread(target=calls)
    caller.start()
    try:
        for n in (100, 300, 40):
            x = np.linspace(0, 1, n)
            np.testing.assert_allclose(f(x), np.sum(np.sin(x) * 2.0), rtol=1e-12)
        tiers.wait_for_background()
    finally:
        stop.set()
        caller.join()
    assert f.cache_info()["background_compilations"] >= 1
    x = np.linspace(0, 1, 300)
    np.testing.assert_allclose(f(x), np.sum(np.sin(x) * 2.0), rtol=1e-12)


# --- matrix products beside background work (cooperative.matmul, row_blocks) ----------------

def test_matmul_in_row_blocks_is_numpys_product_of_each_block():
    """With ``row_blocks`` on, a floating-point product of at least ``ONE_THREAD_WORK``
    multiply-adds is computed block of rows by block of rows, each block below it: exactly
    np.matmul of each block, close to the whole product. Smaller products, other dtypes,
    batched operands and rows wider than a block are np.matmul's as they are; off, all are."""
    rng = np.random.default_rng(0)
    limit = cooperative.ONE_THREAD_WORK
    cases = [((178, 64), (64, 178)), ((999, 32), (32, 41)), ((33, 64), (64, 64)), ((2, 300), (300, 600)),
             ((5, 600), (600, 600)), ((1000, 1), (1, 1))]
    for dtype in (np.float64, np.float32, np.complex128, np.int64):
        for xs, ys in cases:
            x = (rng.standard_normal(xs) * 4).astype(dtype)
            y = (rng.standard_normal(ys) * 4).astype(dtype)
            whole = np.matmul(x, y)
            before = cooperative.row_blocks(True)
            try:
                got = cooperative.matmul(x, y)
            finally:
                cooperative.row_blocks(before)
            (m, k), n = xs, ys[1]
            blocked = np.dtype(dtype).kind in "fc" and m * n * k >= limit and n * k < limit
            assert got.shape == whole.shape and got.dtype == whole.dtype
            if not blocked:
                np.testing.assert_array_equal(got, whole)
                continue
            rows = (limit - 1) // (n * k)
            for start in range(0, m, rows):
                assert (min(start + rows, m) - start) * n * k < limit
                np.testing.assert_array_equal(got[start:start + rows], np.matmul(x[start:start + rows], y))
            np.testing.assert_allclose(got, whole, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                       atol=1e-3 if dtype == np.float32 else 1e-10)
    assert cooperative.row_blocks(False) is False   # (off by default, and left off)


def test_the_matrix_product_rule_goes_through_cooperative_matmul(monkeypatch):
    """``dot_general``'s impl rule (the eager tier's) computes its matrix products with
    ``cooperative.matmul``: the plain product and the transposed or batched general forms."""
    from dynjax.lax.primitives.contractions import _dot_general_impl
    calls = []
    real = cooperative.matmul
    monkeypatch.setattr(cooperative, "matmul", lambda x, y: calls.append((x.shape, y.shape)) or real(x, y))
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((7, 5)), rng.standard_normal((5, 3))
    np.testing.assert_allclose(_dot_general_impl(x, y, dimension_numbers=(((1,), (0,)), ((), ()))), x @ y, rtol=1e-14)
    np.testing.assert_allclose(_dot_general_impl(x, x, dimension_numbers=(((0,), (0,)), ((), ()))), x.T @ x, rtol=1e-14)
    b = rng.standard_normal((2, 7, 5))
    np.testing.assert_allclose(_dot_general_impl(b, b, dimension_numbers=(((2,), (2,)), ((0,), (0,)))),
                               np.einsum("bik,bjk->bij", b, b), rtol=1e-13)
    assert calls == [((7, 5), (5, 3)), ((5, 7), (7, 5)), ((2, 7, 5), (2, 5, 7))]
