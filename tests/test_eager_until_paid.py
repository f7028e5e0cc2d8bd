"""The rent-or-buy rule of the automatic tiers (``execution.tiers``, ``DYNJAX_EAGER_UNTIL_PAID``):
a cheap program's new sizes run eagerly, with nothing compiled for them, until their eager
runs have taken as long as a compile; then the bucket of the size being served is queued. The
price of a compile is pinned by the ``eager_until_paid`` fixture, so that which tier serves a
call does not depend on the machine's speed; every result is checked against the exact tier
and numpy."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import dynjax.numpy as jnp
from dynjax import for_loop, qjit, runtime
from dynjax.execution import tiers
from dynjax.execution.padding import bucket
from dynjax.execution.program import Segment

pytestmark = pytest.mark.usefixtures("compile_ahead")


@pytest.fixture
def auto(monkeypatch):
    monkeypatch.setenv("DYNJAX_TIERS", "auto")


def _affine(x):
    return x * 0.5 + 1.0   # exact in any evaluation: the eager and compiled results agree bit for bit


def _segment(f) -> Segment:
    return f._last.program.single


def _exact(fn, *args, axes=({0: "n"},)):
    """What the exact tier computes (the policy is read at every call)."""
    g = qjit(fn, abstracted_axes=axes)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DYNJAX_TIERS", "exact")
        return g(*args)


def bucket_of(n):
    return (bucket(n),)


def test_cheap_sizes_compile_nothing_until_their_eager_runs_cost_a_compile(auto, eager_until_paid):
    eager_until_paid(1e9)   # a compile costs more than any eager run here
    f = qjit(_affine, abstracted_axes=({0: "n"},))
    sizes = [5, 0, 1, 40, 100, 300, 700, 2000]
    outs = [f(np.arange(n, dtype=float)) for n in sizes]
    tiers.wait_for_background()
    info = f.cache_info()
    # the first size compiles its exact executable and nothing ahead (the program is cheap)
    assert info["compilations"] == 1 and info["exact_runs"] == 1, info
    assert info["eager_runs"] == len(sizes) - 1, info
    assert info["background_compilations"] == 0 and info["padded_compilations"] == 0, info
    assert _segment(f).eager_seconds > 0
    for n, got in zip(sizes, outs):
        x = np.arange(n, dtype=float)
        np.testing.assert_array_equal(got, x * 0.5 + 1.0)
        np.testing.assert_array_equal(got, _exact(_affine, x))

    eager_until_paid(0.0)   # now the eager runs have paid for one: the next size queues its bucket
    x = np.arange(1500, dtype=float)
    np.testing.assert_array_equal(f(x), x * 0.5 + 1.0)
    tiers.wait_for_background()
    info = f.cache_info()
    assert info["background_compilations"] == 2, info   # its bucket and the next one up
    assert info["padded_compilations"] == 2 and bucket_of(1500) in _segment(f).padded, info
    assert _segment(f).eager_seconds == 0.0, "the rent starts again"
    eager_until_paid(1e9)
    y = np.arange(1450, dtype=float)   # the same bucket: runs padded, compiles nothing
    np.testing.assert_array_equal(f(y), y * 0.5 + 1.0)
    info2 = f.cache_info()
    assert info2["padded_runs"] == info["padded_runs"] + 1, info2
    assert info2["background_compilations"] == info["background_compilations"], info2


def test_a_compiled_bucket_serves_a_cheap_size_only_up_to_twice_its_own(auto, eager_until_paid):
    """A cheap size that a compiled bucket holds runs padded there when that bucket has at most
    twice the elements of its own (nothing compiled ahead for it); in a larger one, eagerly."""
    f = qjit(_affine, abstracted_axes=({0: "n"},))
    f(np.ones(3))
    eager_until_paid(0.0)
    f(np.ones(1000))           # queues the bucket 1024 (and the next one up)
    tiers.wait_for_background()
    assert bucket_of(1000) in _segment(f).padded
    eager_until_paid(1e9)
    before = f.cache_info()
    x = np.arange(300, dtype=float)   # bucket 512: 1024 is twice as large
    np.testing.assert_array_equal(f(x), x * 0.5 + 1.0)
    mid = f.cache_info()
    assert mid["padded_runs"] == before["padded_runs"] + 1 and mid["eager_runs"] == before["eager_runs"], mid
    y = np.arange(200, dtype=float)   # bucket 256: 1024 is four times as large
    np.testing.assert_array_equal(f(y), y * 0.5 + 1.0)
    after = f.cache_info()
    assert after["eager_runs"] == mid["eager_runs"] + 1 and after["padded_runs"] == mid["padded_runs"], after
    tiers.wait_for_background()
    assert f.cache_info()["background_compilations"] == before["background_compilations"]


def _gram(x):
    return (x[:, None] * x[None, :]).sum(axis=1)   # n x n products: quadratic in n


@pytest.mark.parametrize("compiled, size, served", [
    (1000, 300, "eager_runs"),     # buckets 1024 and 1280: 1024 has twice 512's elements, four times its cost
    (1300, 1100, "padded_runs"),   # buckets 1536 and 1792: 1536 costs 1.44 times 1280's
])
def test_a_compiled_bucket_serves_a_cheap_size_only_up_to_twice_its_cost(auto, eager_until_paid, compiled,
                                                                         size, served):
    """The limit is on cost, not elements: a program quadratic in its size costs four times
    as much in a bucket twice as large, which does not serve it (it runs eagerly)."""
    f = qjit(_gram, abstracted_axes=({0: "n"},))
    f(np.ones(3))
    eager_until_paid(0.0)
    f(np.ones(compiled))       # queues the bucket of this size (and the next one up)
    tiers.wait_for_background()
    assert bucket_of(compiled) in _segment(f).padded and bucket_of(size) not in _segment(f).padded
    eager_until_paid(1e9)
    before = f.cache_info()
    x = np.linspace(0.5, 1.5, size)
    np.testing.assert_allclose(f(x), _gram(x), rtol=1e-12)
    after = f.cache_info()
    other = "padded_runs" if served == "eager_runs" else "eager_runs"
    assert after[served] == before[served] + 1 and after[other] == before[other], after
    tiers.wait_for_background()
    assert f.cache_info()["background_compilations"] == before["background_compilations"]


def test_a_long_eager_run_queues_its_bucket_and_gives_way_to_it(auto, eager_until_paid, monkeypatch):
    """300 000 loop steps by the numpy impls would take seconds: once the run has taken a
    compile's time (pinned at 20 ms) its bucket is queued, and the run is abandoned for the
    bucket as soon as that is compiled."""
    tried = []
    run_eagerly = Segment._run_eagerly
    monkeypatch.setattr(Segment, "_run_eagerly", lambda self, *a: tried.append(run_eagerly(self, *a)))
    eager_until_paid(0.02)
    fn = lambda x, k: for_loop(0, k, 1)(lambda i, a: a * 0.5 + i)(x)  # noqa: E731
    f = qjit(fn, abstracted_axes=({0: "n"}, None))
    f(np.ones(3), 4)
    x = np.arange(40.0)
    got = f(x, 300000)
    info = f.cache_info()
    assert tried == [None] and info["eager_runs"] == 0 and info["padded_runs"] == 1, info
    np.testing.assert_array_equal(got, _exact(fn, x, 300000, axes=({0: "n"}, None)))


def test_heavy_sizes_are_not_served_eagerly(auto, eager_until_paid):
    """Above ``tiers.EAGER_MAX_FLOPS`` the rule does not apply: the size compiles (its exact
    executable, its bucket queued after it), whatever the price of a compile."""
    eager_until_paid(1e9)
    fn = lambda x, k: for_loop(0, k, 1)(lambda i, a: a * 0.5 + i)(x)  # noqa: E731
    f = qjit(fn, abstracted_axes=({0: "n"}, None))
    f(np.ones(3), 4)
    heavy = np.arange(400.0)   # 2 * 400 * 10**5 = 8e7 FLOPs
    got = f(heavy, 10**5)
    tiers.wait_for_background()
    info = f.cache_info()
    assert info["eager_runs"] == 0 and info["compilations"] == 2 and info["padded_compilations"] >= 1, info
    np.testing.assert_array_equal(got, _exact(fn, heavy, 10**5, axes=({0: "n"}, None)))


def test_background_compiles_step_aside_for_a_call_served_on_the_host(auto, eager_until_paid, monkeypatch):
    """An eager run is host work that the compile thread's Python (padding, lowering) would
    hold the GIL from for its switch interval at each numpy call: it counts as an active run
    (``runtime.active_runs``), which background work waits for (``core.cooperative``), as
    does a padded run's padding and cutting; a call waiting for a compile does not."""
    from dynjax.core import interpret
    from dynjax.execution.padded_runs import PaddedRun
    seen = {"eager": [], "padded": []}
    evaluate, pad = interpret.eval_jaxpr, PaddedRun.inputs

    def eval_spy(*a):
        seen["eager"].append(runtime.active_runs())
        return evaluate(*a)

    def pad_spy(self, args):
        seen["padded"].append(runtime.active_runs())
        return pad(self, args)
    monkeypatch.setattr(interpret, "eval_jaxpr", eval_spy)
    monkeypatch.setattr(PaddedRun, "inputs", pad_spy)
    eager_until_paid(1e9)
    f = qjit(_affine, abstracted_axes=({0: "n"},))
    f(np.ones(3))
    results = []
    threads = [threading.Thread(target=lambda n=n: results.append(f(np.ones(n)))) for n in (50, 60)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen["eager"]) == 2 and min(seen["eager"]) >= 1, seen
    assert sorted(r.shape[0] for r in results) == [50, 60] and all((r == 1.5).all() for r in results)
    eager_until_paid(0.0)
    f(np.ones(100))            # queues the bucket 128 (and 256)
    tiers.wait_for_background()
    f(np.ones(90))             # runs in it
    assert seen["padded"] and min(seen["padded"]) >= 1, seen
    assert runtime.active_runs() == 0


def test_the_rule_can_be_turned_off(auto, eager_until_paid, monkeypatch):
    """``DYNJAX_EAGER_UNTIL_PAID=0``: a cheap size's bucket is queued at its first call, and
    the first size's bucket is compiled ahead."""
    eager_until_paid(1e9)
    monkeypatch.setenv("DYNJAX_EAGER_UNTIL_PAID", "0")
    f = qjit(_affine, abstracted_axes=({0: "n"},))
    f(np.ones(3))
    x = np.arange(700, dtype=float)
    np.testing.assert_array_equal(f(x), x * 0.5 + 1.0)
    tiers.wait_for_background()
    info = f.cache_info()
    assert info["background_compilations"] >= 3 and bucket_of(700) in _segment(f).padded, info


def test_after_the_host_tier_a_cheap_size_is_rented_not_compiled(auto, eager_until_paid, monkeypatch):
    # The host tier served the first sizes (small arrays): the first size above its limit is
    # not the program's first size, so it is not compiled on the call path (a 0.1-0.2 s
    # stall for a program whose numpy run takes microseconds): it runs eagerly, as every cheap
    # new size does until its eager runs have cost a compile.
    monkeypatch.setenv("DYNJAX_HOST_TIER", "auto")
    eager_until_paid(1e9)
    f = qjit(lambda x: (x * x).sum(), abstracted_axes=({0: "n"},))
    sizes = [148, 57, 26780, 26600, 24350, 19990]
    outs = [f(np.linspace(-1, 1, n)) for n in sizes]
    tiers.wait_for_background()
    info = f.cache_info()
    assert info["host_runs"] == 2 and info["eager_runs"] == 4, info
    assert info["compilations"] == 0 and info["padded_compilations"] == 0, info
    for n, got in zip(sizes, outs):
        x = np.linspace(-1, 1, n)
        np.testing.assert_allclose(got, (x * x).sum(), rtol=1e-13)
        np.testing.assert_allclose(got, _exact(lambda x: (x * x).sum(), x), rtol=1e-13)


def test_a_program_the_host_tier_declines_still_compiles_at_its_first_size(auto, eager_until_paid, monkeypatch):
    # A small loop over an array's values is not a host program (its loop would not fold to
    # a constant): the host tier declines the size, and the size is the program's first:
    # it compiles its exact executable, and every later call at that size runs it.
    monkeypatch.setenv("DYNJAX_HOST_TIER", "auto")
    eager_until_paid(1e9)
    fn = lambda x: for_loop(0, 10, 1)(lambda i, a: a * 0.5 + a.sum() * 1e-3)(x)  # noqa: E731
    f = qjit(fn, abstracted_axes=({0: "n"},))
    x = np.linspace(0.0, 1.0, 557)
    outs = [f(x) for _ in range(3)]
    info = f.cache_info()
    assert info["host_runs"] == 0 and info["eager_runs"] == 0, info
    assert info["compilations"] == 1 and info["exact_runs"] == 3, info
    want = x
    for _ in range(10):
        want = want * 0.5 + want.sum() * 1e-3
    for got in outs:
        np.testing.assert_allclose(got, want, rtol=1e-13)


def test_an_eager_run_beside_a_background_job_computes_products_in_row_blocks(auto, eager_until_paid, monkeypatch):
    """The eager tier turns ``core.cooperative.row_blocks`` on for its evaluation exactly when
    a background job (a compile) is running, and restores it after (``cooperative.matmul``:
    numpy's products then keep to one BLAS thread each)."""
    from dynjax.core import cooperative, interpret
    seen = []
    evaluate = interpret.eval_jaxpr

    def eval_spy(*a):
        now = cooperative.row_blocks(False)   # (read, then restore)
        cooperative.row_blocks(now)
        seen.append(now)
        return evaluate(*a)
    monkeypatch.setattr(interpret, "eval_jaxpr", eval_spy)
    busy = [False]
    monkeypatch.setattr(tiers, "background_busy", lambda: busy[0])
    monkeypatch.setenv("DYNJAX_HOST_TIER", "off")   # (these sizes would run on the host tier)
    eager_until_paid(1e9)
    w = np.random.default_rng(1).standard_normal((8, 8))
    f = qjit(lambda x: jnp.tanh(x @ w), abstracted_axes=({0: "n"},))
    f(np.ones((3, 8)))
    for n, now in ((50, True), (60, False), (70, True)):
        busy[0] = now
        x = np.random.default_rng(n).standard_normal((n, 8))
        np.testing.assert_allclose(f(x), np.tanh(x @ w), rtol=1e-13)
        assert seen[-1] is now, (n, seen)
    assert f.cache_info()["eager_runs"] == 3 and cooperative.row_blocks(False) is False
