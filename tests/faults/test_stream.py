"""Background compile work stays bounded (issue 20, item 10).

A stream of calls at random sizes used to queue a compile job per recurring size (611 jobs
queued after 50 000 calls, each holding the caller's arrays) and compile exact executables
that served almost nothing (618 compiles for 148 calls). Now the queue holds at most
``tiers.MAX_QUEUED`` jobs, one per key, without the caller's arrays, and a size gets its exact
executable only once its calls would have paid for the compile (``tiers.worth_exact``).
``bench/background_stream.py`` runs the 50 000-call stream and prints its numbers.
"""
from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

import dynjax.numpy as jnp
from dynjax import qjit
from dynjax.execution import tiers
from dynjax.execution.padding import bucket

# the background queue as a user's process fills it: compiles ahead included
pytestmark = pytest.mark.usefixtures("compile_ahead")


@pytest.fixture(autouse=True)
def auto_policy(monkeypatch):
    monkeypatch.delenv("DYNJAX_TIERS", raising=False)
    monkeypatch.delenv("DYNJAX_SYNC_COMPILE", raising=False)
    monkeypatch.delenv("DYNJAX_EXACT_AFTER", raising=False)
    yield
    tiers.wait_for_background()


class held_compile_thread:
    """Hold the background compile thread up (a job that waits), so that jobs queue."""

    def __enter__(self):
        tiers.wait_for_background()
        self.release, started = threading.Event(), threading.Event()

        def hold():
            started.set()
            self.release.wait()
        tiers.background(hold)
        assert started.wait(60)   # running: the jobs queued from now on wait
        return self

    def __exit__(self, *exc):
        self.release.set()
        tiers.wait_for_background()


def tanh_sum():
    return qjit(lambda x: jnp.sum(jnp.tanh(x) * 2), abstracted_axes={0: "n"})


def test_a_stream_of_random_sizes(monkeypatch):
    """5000 calls at random sizes in 1..5000, each checked against numpy: the queue never
    passes its bound, no size of this small program recurs enough to pay for an exact
    compile, and one padded executable is compiled per bucket at most."""
    f = tanh_sum()
    rng = np.random.default_rng(20)
    base = rng.standard_normal(5000)
    sizes = rng.integers(1, 5001, size=5000)
    longest = 0
    for n in sizes:
        x = base[:n]
        assert f(x) == pytest.approx(np.sum(np.tanh(x) * 2), rel=1e-12, abs=1e-12)
        longest = max(longest, tiers.queued())
    info = f.cache_info()
    print("5000-call stream:", info, "longest queue", longest)
    assert longest <= tiers.MAX_QUEUED
    assert info["exact_compilations"] == 0 and info["specializations"] == 1, info   # the first size
    buckets = {bucket(int(n)) for n in sizes}
    assert info["padded_compilations"] + info["disk_cache_hits"] <= len(buckets) + 2, info
    assert info["padded_runs"] + info["eager_runs"] + info["exact_runs"] == len(sizes), info


def test_the_queue_is_bounded_and_drops_the_least_useful_jobs(monkeypatch):
    """With the compile thread held up and every recurring size asking for its exact
    executable (``DYNJAX_EXACT_AFTER=2``), jobs pile up: the queue keeps at most MAX_QUEUED,
    drops exact compiles first, and the calls keep their values."""
    monkeypatch.setenv("DYNJAX_EXACT_AFTER", "2")
    f = tanh_sum()
    rng = np.random.default_rng(1)
    base = rng.standard_normal(3000)
    f(base[:3])
    with held_compile_thread():
        for n in list(range(20, 3000, 50)) * 2:   # 60 sizes: each recurs (calls_at keeps 64)
            x = base[:n]
            assert f(x) == pytest.approx(np.sum(np.tanh(x) * 2), rel=1e-12, abs=1e-12)
            assert tiers.queued() <= tiers.MAX_QUEUED
        info = f.cache_info()
        assert info["queued_jobs"] == tiers.MAX_QUEUED and info["dropped_jobs"] > 0, info
        queued = list(tiers._queue.jobs.values())
        # the kept jobs are the most useful: every bucket the stream needed comes before exact compiles
        assert sum(j.priority == tiers.EXACT for j in queued) < len(queued)
    info = f.cache_info()
    assert info["queued_jobs"] == 0, info
    for n in range(20, 3000, 230):   # after the queue drained, every size still right
        x = base[:n]
        assert f(x) == pytest.approx(np.sum(np.tanh(x) * 2), rel=1e-12, abs=1e-12)


def test_duplicate_jobs_are_coalesced():
    ran = []
    with held_compile_thread():
        assert tiers.submit(("test", "same"), lambda: ran.append(1), tiers.AHEAD)
        assert not tiers.submit(("test", "same"), lambda: ran.append(2), tiers.AHEAD)
        assert tiers.queued() == 1
    assert ran == [1]


def test_a_full_queue_drops_the_least_useful_job_never_a_needed_bucket():
    ran, dropped = [], []
    with held_compile_thread():
        for k in range(tiers.MAX_QUEUED):   # exact compiles of sizes called k + 2 times
            assert tiers.submit(("test", k), lambda k=k: ran.append(k), tiers.EXACT, useful=k + 2,
                                on_drop=lambda k=k: dropped.append(k))
        # no more useful than the least useful queued job: dropped itself
        assert not tiers.submit(("test", "rare"), lambda: ran.append("rare"), tiers.EXACT, useful=2,
                                on_drop=lambda: dropped.append("rare"))
        assert dropped == ["rare"]
        # a bucket a call needs displaces the least useful job
        assert tiers.submit(("test", "bucket"), lambda: ran.append("bucket"), tiers.NEEDED)
        assert dropped == ["rare", 0] and tiers.queued() == tiers.MAX_QUEUED
        # a more frequent size displaces the next least useful one
        assert tiers.submit(("test", "often"), lambda: ran.append("often"), tiers.EXACT, useful=100,
                            on_drop=lambda: dropped.append("often"))
        assert dropped == ["rare", 0, 1]
    # the most useful first: the needed bucket, then by how often each size was called
    assert ran[:3] == ["bucket", "often", tiers.MAX_QUEUED - 1]
    assert sorted(ran[1:], key=str) == sorted(["often"] + list(range(2, tiers.MAX_QUEUED)), key=str)


def test_queued_jobs_do_not_hold_the_callers_arrays(monkeypatch):
    monkeypatch.setenv("DYNJAX_EXACT_AFTER", "2")
    f = tanh_sum()
    f(np.ones(3))
    tiers.wait_for_background()
    with held_compile_thread():
        x = np.linspace(0, 1, 10)    # bucket 16, compiled after the first size
        for _ in range(2):           # recurs: its exact compile is queued
            assert f(x) == pytest.approx(np.sum(np.tanh(x) * 2), rel=1e-12)
        assert f.cache_info()["queued_jobs"] == 1
        ref = weakref.ref(x)
        del x
        gc.collect()
        assert ref() is None        # the job kept the shape, not the array
    info = f.cache_info()
    assert info["exact_compilations"] == 1, info
    x = np.linspace(0, 1, 10)
    assert f(x) == pytest.approx(np.sum(np.tanh(x) * 2), rel=1e-12)
    assert f.cache_info()["exact_calls_served"] == 1


def test_exact_executables_for_sizes_that_recur_enough(monkeypatch):
    """The payback rule: a size needs EXACT_MIN_CALLS calls, and calls whose savings add up to
    the compile. With a padded run costing 50 ms more than the exact one (as a large program's
    would), a size is promoted at its EXACT_MIN_CALLS-th call, and the exact executable serves
    the calls after it; a size called fewer times is never compiled exactly."""
    monkeypatch.setattr(tiers, "PADDED_OVERHEAD_SECONDS", 0.05)
    monkeypatch.setenv("DYNJAX_SYNC_COMPILE", "1")
    f = tanh_sum()
    f(np.ones(3))
    tiers.wait_for_background()
    x, y = np.linspace(0, 1, 10), np.linspace(0, 1, 11)
    for k in range(tiers.EXACT_MIN_CALLS - 1):
        assert f(x) == pytest.approx(np.sum(np.tanh(x) * 2), rel=1e-12)
        assert f(y) == pytest.approx(np.sum(np.tanh(y) * 2), rel=1e-12)
    assert f.cache_info()["exact_compilations"] == 0
    for k in range(3):
        assert f(x) == pytest.approx(np.sum(np.tanh(x) * 2), rel=1e-12)
    info = f.cache_info()
    assert info["exact_compilations"] == 1 and info["exact_calls_served"] == 3, info


def test_the_rule():
    # too few calls, however slow the padded run
    assert not tiers.worth_exact(tiers.EXACT_MIN_CALLS - 1, 10.0, 1, 0.5, 0.05)
    # a 20 us run with 25% padding saves 15 us a call: 0.05 s takes 3334 calls
    assert not tiers.worth_exact(3333, 3333 * 20e-6, 3333, 0.25, 0.05)
    assert tiers.worth_exact(3334, 3334 * 20e-6, 3334, 0.25, 0.05)
    # a 10 ms run with 20% padding: 25 calls
    assert not tiers.worth_exact(24, 24 * 0.01, 24, 0.2, 0.05)
    assert tiers.worth_exact(25, 25 * 0.01, 25, 0.2, 0.05)
