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
