"""Size-generic execution (``execution.tiers``, ``execution.padding``): the padded tier (one
executable per size bucket) against numpy and against the exact-size tier, bit for bit, at
sizes 0, 1, the bucket edges (2^k - 1, 2^k, 2^k + 1; 1025 and 1281 where the buckets get finer)
and random sizes; the automatic policy (padded first, exact once a size recurs, in the
background); tier switching under threads; fallbacks; DYNJAX_LOG; and the other test modules re-run with the padded tier forced on."""
from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import for_loop, lax, qjit
from dynjax.execution import tiers
from dynjax.execution.padding import MIN_BUCKET, bucket, next_bucket

# these tests check the tiers as a user's process runs them: compiles ahead included
pytestmark = pytest.mark.usefixtures("compile_ahead")

EDGES = [0, 1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 1025, 1281]


def _ints(rng, shape):
    """Small integers as floats: sums and products of a few are exact in any order, so the
    padded tier (which reduces over a whole bucket) must agree bit for bit."""
    return rng.integers(-3, 4, size=shape).astype(np.float64)


# name, function, arguments for size n, abstracted axes, numpy oracle
@dynjax.custom_jvp
def _twice_plus_sum(x):
    return x * 2 + jnp.sum(x)


_twice_plus_sum.defjvp(lambda p, t: (_twice_plus_sum(p[0]), t[0] * 2 + jnp.sum(t[0])))


@dynjax.custom_vjp
def _reversed_times_3(x):
    return x[::-1] * 3


_reversed_times_3.defvjp(lambda x: (_reversed_times_3(x), None), lambda _, g: (g[::-1] * 3,))


PROGRAMS = [
    ("sum_sin", lambda x: jnp.sum(jnp.round(jnp.sin(x) * 4)), lambda r, n: [_ints(r, n)], {0: "n"},
     lambda x: np.sum(np.round(np.sin(x) * 4))),
    ("diff", lambda x: x[1:] - x[:-1], lambda r, n: [_ints(r, n)], {0: "n"}, lambda x: x[1:] - x[:-1]),
    ("concat_rev", lambda x: jnp.concatenate([x, x[::-1], x[2:]]), lambda r, n: [_ints(r, n)], {0: "n"},
     lambda x: np.concatenate([x, x[::-1], x[2:]])),
    ("pad", lambda x: jnp.pad(x, (2, 3)), lambda r, n: [_ints(r, n)], {0: "n"}, lambda x: np.pad(x, (2, 3))),
    ("sort_desc", lambda x: jnp.sort(x)[::-1], lambda r, n: [_ints(r, n)], {0: "n"}, lambda x: np.sort(x)[::-1]),
    ("cumsum_rev", lambda x: jnp.cumsum(x[::-1]), lambda r, n: [_ints(r, n)], {0: "n"},
     lambda x: np.cumsum(x[::-1])),
    ("reshape_matmul", lambda x: (x.reshape(-1), x.T @ x, x @ x.T), lambda r, n: [_ints(r, (n, 3))], {0: "n"},
     lambda x: (x.reshape(-1), x.T @ x, x @ x.T)),
    ("unit_axes", lambda x: jnp.squeeze(x[:, :, None] * 2.0, 2) + jnp.sum(x[:, None, :], axis=2),
     lambda r, n: [_ints(r, (3, n))], {1: "n"},
     lambda x: np.squeeze(x[:, :, None] * 2.0, 2) + np.sum(x[:, None, :], axis=2)),
    ("mean_var", lambda x: (jnp.mean(x, axis=0), jnp.max(x, axis=0), jnp.argmin(x, axis=0)),
     lambda r, n: [_ints(r, (max(n, 1), 2))], {0: "n"},
     lambda x: (np.mean(x, axis=0), np.max(x, axis=0), np.argmin(x, axis=0))),
    ("gather_scatter", lambda x, i: (x[i], x.at[i].add(1.0)),
     lambda r, n: [_ints(r, n), r.integers(-2 * n - 1, 2 * n + 2, size=5)], ({0: "n"}, None),
     lambda x, i: (np.take(x, np.clip(np.where(i < 0, i + len(x), i), 0, max(len(x) - 1, 0))) if len(x)
                   else np.zeros(5), _np_add_at(x, i))),
    ("int_size", lambda n: jnp.arange(n) * 2 + jnp.ones(n), lambda r, n: [n], None,
     lambda n: np.arange(n) * 2 + np.ones(n)),
    ("for_loop", lambda x: for_loop(0, 5, 1)(lambda i, a: a * 2 - jnp.sum(a) * i)(x),
     lambda r, n: [_ints(r, n)], {0: "n"}, None),
    ("while_scan", lambda x: (lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] + jnp.cumsum(c[0]), c[1] + 1),
                                             (x, 0))[0], lax.scan(lambda c, r: (c + r, c * r), 0.0, x)),
     lambda r, n: [_ints(r, n)], {0: "n"}, None),
    ("cond", lambda x: lax.cond(jnp.sum(x) > 0, lambda v: v * 2, lambda v: v[::-1] + 1, x),
     lambda r, n: [_ints(r, n)], {0: "n"}, lambda x: x * 2 if np.sum(x) > 0 else x[::-1] + 1),
    # functions with custom derivative rules run their primal bodies, padded
    ("conv_same", lambda x: lax.conv_general_dilated(x, _W_CONV, (1,), "SAME", rhs_dilation=(2,)),
     lambda r, n: [_ints(r, (2, 2, n))], {2: "n"}, lambda x: _np_conv1d(x, _W_CONV, 2, (2, 2))),
    ("custom_rules", lambda x: (_twice_plus_sum(x), _reversed_times_3(x[1:]), dynjax.nn.relu(x - 1)),
     lambda r, n: [_ints(r, n)], {0: "n"},
     lambda x: (x * 2 + np.sum(x), x[1:][::-1] * 3, np.maximum(x - 1, 0))),
]


_W_CONV = np.array([[[1.0, -2.0, 3.0], [0.0, 2.0, -1.0]], [[2.0, 1.0, 0.0], [-3.0, 1.0, 1.0]]])


def _np_conv1d(x, w, dilation, pads):
    """A stride-1 convolution of x (N, C, W) with w (O, C, K), its taps ``dilation`` apart,
    after zero-padding W by ``pads``: the oracle, by its definition."""
    xp = np.pad(x, ((0, 0), (0, 0), pads))
    span = (w.shape[2] - 1) * dilation + 1
    out = max(xp.shape[2] - span + 1, 0)
    res = np.zeros((x.shape[0], w.shape[0], out))
    for i in range(out):
        window = xp[:, :, i:i + span:dilation]                     # (N, C, K)
        res[:, :, i] = np.einsum("nck,ock->no", window, w)
    return res


def _np_add_at(x, i):
    out = x.copy()
    n = len(x)
    for k in i:
        k = k + n if k < 0 else k
        if 0 <= k < n:
            out[k] += 1.0
    return out


def _flat(out):
    leaves, _ = dynjax.tree_flatten(out)
    return [np.asarray(v) for v in leaves]


@pytest.fixture
def tier(monkeypatch):
    def set_tier(name):
        monkeypatch.setenv("DYNJAX_TIERS", name)
    return set_tier


@pytest.mark.parametrize("name, fn, make, axes, oracle", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_padded_tier_equals_exact_tier_and_numpy(name, fn, make, axes, oracle, tier):
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    padded = qjit(fn, abstracted_axes=axes)
    exact = qjit(fn, abstracted_axes=axes)
    sizes = EDGES + list(rng.integers(0, 300, size=4))
    for n in sizes:
        args = make(rng, int(n))
        tier("padded")
        got = _flat(padded(*args))
        tier("exact")
        want = _flat(exact(*args))
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, (name, n, g.shape, w.shape)
            np.testing.assert_array_equal(g, w, err_msg=f"{name} at n={n}")
        if oracle is not None:
            for g, o in zip(got, _flat(oracle(*args))):
                np.testing.assert_allclose(g, o, err_msg=f"{name} at n={n} vs numpy")
    info = padded.cache_info()
    assert info["padded_runs"] == len(sizes) and info["exact_runs"] == 0, info
    # one executable per bucket that the sizes met
    buckets = {bucket(int(n)) for n in sizes}
    assert info["padded_compilations"] + info["disk_cache_hits"] <= len(buckets), info


@pytest.mark.parametrize("name, fn, make, axes, oracle", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_new_sizes_run_eagerly_while_their_bucket_compiles(name, fn, make, axes, oracle, tier):
    """With the background thread held up, no bucket is ready: every new size after the first
    is evaluated by the numpy impls (tier 0), equal to the exact tier bit for bit; once the
    buckets are compiled, the same sizes run padded."""
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    auto = qjit(fn, abstracted_axes=axes)
    exact = qjit(fn, abstracted_axes=axes)
    sizes = [5, 0, 1, 16, 17, 64, 65, 1025]
    inputs = [make(rng, n) for n in sizes]
    release = threading.Event()
    tier("auto")
    tiers.background(release.wait)
    try:
        got = [_flat(auto(*args)) for args in inputs]
        first_round = auto.cache_info()
    finally:
        release.set()
    tiers.wait_for_background()
    again = [_flat(auto(*args)) for args in inputs[1:]]
    tier("exact")
    for n, args, g, a in zip(sizes, inputs, got, [None] + again):
        want = _flat(exact(*args))
        for k, w in enumerate(want):
            assert got_shape_dtype(g[k]) == got_shape_dtype(w), (name, n)
            np.testing.assert_array_equal(g[k], w, err_msg=f"{name} at n={n}")
            if a is not None:
                np.testing.assert_array_equal(a[k], w, err_msg=f"{name} at n={n}, padded")
        if oracle is not None:
            for x, o in zip(g, _flat(oracle(*args))):
                np.testing.assert_allclose(x, o, err_msg=f"{name} at n={n} vs numpy")
    assert first_round["exact_runs"] == 1 and first_round["eager_runs"] == len(sizes) - 1, first_round
    info = auto.cache_info()   # then padded (or exact, for a size met a third time)
    assert info["eager_runs"] == len(sizes) - 1 and info["padded_runs"] + info["exact_runs"] == len(sizes), info


def test_an_eager_run_gives_way_once_its_bucket_is_compiled(tier, monkeypatch):
    """300 000 loop iterations by the numpy impls would take seconds: the evaluation is
    abandoned when the bucket's compile (tens of milliseconds) is done, and the bucket runs."""
    from dynjax.execution.program import Segment
    tried = []
    run_eagerly = Segment._run_eagerly
    monkeypatch.setattr(Segment, "_run_eagerly", lambda self, *a: tried.append(run_eagerly(self, *a)))
    tier("auto")
    f = qjit(lambda x, k: for_loop(0, k, 1)(lambda i, a: a * 0.5 + i)(x), abstracted_axes=({0: "n"}, None))
    f(np.ones(3), 4)
    x = np.arange(40.0)
    got = f(x, 300000)
    info = f.cache_info()
    assert info["eager_runs"] == 0 and info["padded_runs"] == 1 and tried == [None], info
    tier("exact")
    np.testing.assert_array_equal(got, qjit(f.fun, abstracted_axes=({0: "n"}, None))(x, 300000))


def test_heavy_programs_do_not_run_eagerly(tier):
    """Above tiers.EAGER_MAX_FLOPS (by the cost model, at the call's sizes) a new size is not
    evaluated by the numpy impls, which would compete with the compile for the cores. When no
    compiled bucket holds it and its bucket was never queued, its exact executable compiles on
    the call path (that module has none of the padded program's masks: XLA compiles it
    faster) and the bucket after it, in the background; a later size of that bucket waits for
    the bucket instead."""
    tier("auto")
    f = qjit(lambda x, k: for_loop(0, k, 1)(lambda i, a: a * 0.5 + i)(x), abstracted_axes=({0: "n"}, None))
    f(np.ones(3), 4)
    light, heavy = np.arange(40.0), np.arange(400.0)   # 2 * 40 * 10**5 = 8e6, 2 * 400 * 10**5 = 8e7 FLOPs
    heavy_too = np.arange(450.0)                        # the same bucket as 400: 512
    release = threading.Event()
    tiers.background(release.wait)
    try:
        got_light = f(light, 10**5)
        assert f.cache_info()["eager_runs"] == 1
    finally:
        release.set()
    got_heavy = f(heavy, 10**5)
    info = f.cache_info()
    assert info["eager_runs"] == 1 and info["exact_runs"] == 2 and info["padded_runs"] == 0, info
    assert info["compilations"] == 2, info
    got_heavy_too = f(heavy_too, 10**5)
    info = f.cache_info()
    assert info["eager_runs"] == 1 and info["exact_runs"] == 2 and info["padded_runs"] == 1, info
    assert info["compilations"] == 2, info
    tiers.wait_for_background()
    assert (512,) in f._last.program.single.padded, "the heavy size's bucket"
    tier("exact")
    g = qjit(f.fun, abstracted_axes=({0: "n"}, None))
    np.testing.assert_array_equal(got_light, g(light, 10**5))
    np.testing.assert_array_equal(got_heavy, g(heavy, 10**5))
    np.testing.assert_array_equal(got_heavy_too, g(heavy_too, 10**5))


def test_without_compiles_ahead_a_heavy_size_compiles_only_its_bucket(tier, monkeypatch):
    """With ``DYNJAX_COMPILE_AHEAD=0`` (batch jobs, busy machines) no compile is added: a
    heavy size past every compiled bucket compiles its bucket on the call path and runs in
    it, as a size whose bucket is queued does."""
    tier("auto")
    monkeypatch.setenv("DYNJAX_COMPILE_AHEAD", "0")
    f = qjit(lambda x, k: for_loop(0, k, 1)(lambda i, a: a * 0.5 + i)(x), abstracted_axes=({0: "n"}, None))
    f(np.ones(3), 4)
    heavy = np.arange(400.0)   # 2 * 400 * 10**5 = 8e7 FLOPs
    got = f(heavy, 10**5)
    info = f.cache_info()
    assert info["exact_runs"] == 1 and info["padded_runs"] == 1 and info["eager_runs"] == 0, info
    assert info["compilations"] == 1 and info["padded_compilations"] == 1, info
    tier("exact")
    np.testing.assert_array_equal(got, qjit(f.fun, abstracted_axes=({0: "n"}, None))(heavy, 10**5))


def got_shape_dtype(x):
    return np.shape(x), np.asarray(x).dtype


def test_zero_padded_inputs_need_no_masks(tier):
    """The host pads a program's array inputs with zeros (``PaddedRun.inputs``), so a product
    contracting an input's padded axis, an integer sum, a float sum (whose lowering makes a
    zero sum +0.0 anyway) and an unsigned max of an input read them unmasked; a value the
    program computes (``2 * x``) is masked first. Results against numpy, -0.0 sums included."""
    f = qjit(lambda x, i: (x.T @ x, jnp.sum(i), jnp.max(i.astype(jnp.uint8)), (2.0 * x).T @ x, jnp.sum(x),
                           jnp.sum(x, axis=0)), abstracted_axes=({0: "n"}, {0: "n"}))
    tier("padded")
    rng = np.random.default_rng(8)
    for n in (0, 1, 5, 16, 17, 40):
        x, i = _ints(rng, (n, 3)), rng.integers(-3, 4, size=n)
        if n == 5:
            x = -np.zeros((n, 3))   # every term -0.0: numpy's sum is +0.0
        got = f(x, i)
        want = (x.T @ x, np.sum(i), np.max(i.astype(np.uint8), initial=0), (2.0 * x).T @ x, np.sum(x), np.sum(x, axis=0))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
            assert np.signbit(g).tolist() == np.signbit(w).tolist()
        b = bucket(n)
        masks = re.findall(rf"stablehlo.select %\S+, %\S+, %\S+ : tensor<(?:{b}x3|3x{b})xi1>", f.mlir_specialized)
        assert len(masks) == 1, (n, masks)   # the one of 2 * x
    assert f.cache_info()["padded_runs"] == 6


def test_buckets():
    """Powers of two up to 1024, then eight steps per doubling: at most 25% padding."""
    assert [bucket(n) for n in (0, 1, 16, 17, 32, 33, 513, 1000, 1024, 1025, 1280, 1281, 100001)] == \
        [MIN_BUCKET, MIN_BUCKET, 16, 32, 32, 64, 1024, 1024, 1024, 1280, 1280, 1536, 114688]
    for n in range(1, 20000):
        b = bucket(n)
        assert b >= n and bucket(b) == b and (b <= 1024 or b <= 1.25 * n), n
        assert next_bucket(b) > b and bucket(next_bucket(b)) == next_bucket(b)


def test_auto_policy_exact_first_then_padded_then_exact_when_a_size_recurs(monkeypatch):
    monkeypatch.delenv("DYNJAX_TIERS", raising=False)
    monkeypatch.setenv("DYNJAX_SYNC_COMPILE", "1")
    monkeypatch.setenv("DYNJAX_EXACT_AFTER", "2")   # not the payback rule (tiers.worth_exact)
    f = qjit(lambda x: x * 2.0 + jnp.sum(x), abstracted_axes={0: "n"})
    x3, x5, x7 = np.arange(3.0), np.arange(5.0), np.arange(7.0)
    np.testing.assert_array_equal(f(x3), x3 * 2 + 3)    # the first size: its exact executable
    info = f.cache_info()
    assert info["exact_runs"] == 1 and info["padded_runs"] == 0
    tiers.wait_for_background()                         # and its bucket, compiled in the background
    np.testing.assert_array_equal(f(x5), x5 * 2 + 10)   # a new size: the bucket of 5
    info = f.cache_info()
    assert info["padded_runs"] == 1
    padded = info["padded_compilations"] + info["disk_cache_hits"]
    np.testing.assert_array_equal(f(x7), x7 * 2 + 21)   # same bucket: no compile at all
    info = f.cache_info()
    assert info["padded_runs"] == 2 and info["padded_compilations"] + info["disk_cache_hits"] == padded
    np.testing.assert_array_equal(f(x5), x5 * 2 + 10)   # 5 recurs: its exact executable
    info = f.cache_info()
    assert info["exact_runs"] == 2 and info["exact_compilations"] == 1 and info["exact_calls_served"] == 1
    np.testing.assert_array_equal(f(x5), x5 * 2 + 10)
    info = f.cache_info()
    assert info["exact_runs"] == 3 and info["exact_calls_served"] == 2, info


def test_auto_policy_compiles_exact_in_the_background(monkeypatch):
    monkeypatch.delenv("DYNJAX_TIERS", raising=False)
    monkeypatch.delenv("DYNJAX_SYNC_COMPILE", raising=False)
    monkeypatch.setenv("DYNJAX_EXACT_AFTER", "2")
    f = qjit(lambda x: jnp.cumsum(x) - x, abstracted_axes={0: "n"})
    np.testing.assert_array_equal(f(np.arange(4.0)), np.cumsum(np.arange(4.0)) - np.arange(4.0))
    x = np.arange(9.0)
    for _ in range(2):
        np.testing.assert_array_equal(f(x), np.cumsum(x) - x)
    # the first size's bucket and the next one up (compiled ahead), the exact executable of 9
    assert f.cache_info()["background_compilations"] == 3
    tiers.wait_for_background()
    np.testing.assert_array_equal(f(x), np.cumsum(x) - x)
    assert f.cache_info()["exact_runs"] == 2


def test_without_compiles_ahead_a_bucket_compiles_only_when_a_call_needs_it(monkeypatch):
    monkeypatch.delenv("DYNJAX_TIERS", raising=False)
    monkeypatch.setenv("DYNJAX_COMPILE_AHEAD", "0")
    monkeypatch.setenv("DYNJAX_EXACT_AFTER", "1000")
    monkeypatch.setenv("DYNJAX_DISABLE_DISK_CACHE", "1")   # every compile is a compile
    f = qjit(lambda x: jnp.cumsum(x) * 2.0, abstracted_axes={0: "n"})
    for n in (4, 4, 4):                              # one size: one exact compile, nothing else
        np.testing.assert_array_equal(f(np.arange(float(n))), np.cumsum(np.arange(float(n))) * 2)
    tiers.wait_for_background()
    info = f.cache_info()
    assert info["background_compilations"] == 0 and info["padded_compilations"] == 0, info
    assert info["exact_runs"] == 3
    x = np.arange(9.0)                               # a new size: its own bucket, and only that one
    np.testing.assert_array_equal(f(x), np.cumsum(x) * 2)
    tiers.wait_for_background()
    np.testing.assert_array_equal(f(np.arange(10.0)), np.cumsum(np.arange(10.0)) * 2)
    info = f.cache_info()
    assert info["background_compilations"] == 1, info
    assert info["padded_compilations"] == 1, info
    assert info["padded_runs"] + info["eager_runs"] == 2 and info["padded_runs"] >= 1, info


def test_queued_compiles_of_a_function_that_is_gone_are_skipped(monkeypatch):
    """A background job holds its program weakly: when the function is collected before the
    job's turn, nothing is compiled for it (the same queue, the function kept, compiles it)."""
    import gc
    monkeypatch.delenv("DYNJAX_TIERS", raising=False)
    monkeypatch.setenv("DYNJAX_COMPILE_AHEAD", "0")
    monkeypatch.setenv("DYNJAX_EXACT_AFTER", "1000")
    monkeypatch.setenv("DYNJAX_DISABLE_DISK_CACHE", "1")   # every compile is a compile

    def program():
        return qjit(lambda x: jnp.cumsum(x) * 3.0, abstracted_axes={0: "n"})
    kept, dropped = program(), program()
    release = threading.Event()
    for f in (kept, dropped):
        f(np.arange(4.0))                            # compiled exact, on the call path
    tiers.background(release.wait)
    try:
        for f in (kept, dropped):                    # a new size: its bucket is queued
            np.testing.assert_array_equal(f(np.arange(9.0)), np.cumsum(np.arange(9.0)) * 3)
        stats = dropped.stats
        assert stats.background_compilations == 1 and kept.stats.background_compilations == 1
        del f, dropped
        gc.collect()
    finally:
        release.set()
    tiers.wait_for_background()
    assert stats.padded_compilations == 0, stats
    info = kept.cache_info()
    assert info["padded_compilations"] == 1, info


def test_a_new_size_of_a_program_that_cannot_run_padded_gets_its_exact_executable(tier, monkeypatch):
    """Auto policy, a new size, its eager run abandoned: the bucket turns out impossible (an
    inverse has no padding rule), and the call compiles its exact executable instead."""
    from dynjax.execution.program import Segment
    monkeypatch.setattr(Segment, "_run_eagerly", lambda self, args, bucket: None)
    tier("auto")
    inv = qjit(lambda a: jnp.linalg.inv(a) * 2.0, abstracted_axes={0: "n", 1: "n"})
    for n in (2, 3, 5):
        a = np.eye(n) * 4.0 + 1.0
        np.testing.assert_allclose(inv(a), np.linalg.inv(a) * 2.0, rtol=1e-14)
    info = inv.cache_info()
    assert info["exact_runs"] == 3 and info["padded_runs"] == 0, info
    assert info["compilations"] + info["disk_cache_hits"] == 3, info


def test_programs_that_cannot_run_padded_use_the_exact_tier(tier):
    tier("padded")
    # LAPACK custom calls have no padding rule
    inv = qjit(lambda a: jnp.linalg.inv(a), abstracted_axes={0: "n", 1: "n"})
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    np.testing.assert_allclose(inv(a), np.linalg.inv(a), rtol=1e-14)
    assert inv.cache_info()["padded_runs"] == 0 and inv.cache_info()["exact_runs"] == 1
    # a resizing loop whose body has no padding rule (an inverse) is driven from the host,
    # one exact executable per carried shape
    grow = qjit(lambda n: for_loop(0, n, 1, allow_array_resizing=True)(
        lambda i, a: jnp.concatenate([a, jnp.linalg.inv(jnp.ones((1, 1)) * (a[0] + 1.0))[0] + i]))(jnp.ones(1)))
    want = [1.0]
    for i in range(4):
        want.append(1.0 / (want[0] + 1.0) + i)
    np.testing.assert_allclose(grow(4), want, rtol=1e-15)
    info = grow.cache_info()
    assert info["host_steps"] == 1 and info["padded_runs"] == 0 and info["exact_runs"] == 5
    # static shapes: nothing to pad
    g = qjit(lambda x: x + 1)
    np.testing.assert_array_equal(g(np.ones(3)), 2 * np.ones(3))
    assert g.cache_info()["padded_runs"] == 0 and g.cache_info()["exact_runs"] == 1


@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 100, 1000])
def test_growing_for_loop_runs_on_device_with_capacities(n, tier):
    """Appending one element per iteration: the whole program runs as one executable whose
    loop capacities grow fourfold (16, 64, 256, 1024: O(log n) compiles), not one host round
    trip per iteration; once they suffice, a call is one run."""
    tier("auto")
    f = qjit(lambda n: for_loop(0, n, 1, allow_array_resizing=True)(
        lambda i, a: jnp.concatenate([a, a[:1] * 2 + i]))(jnp.ones(1)))
    np.testing.assert_array_equal(f(n), np.concatenate([[1.0], 2.0 + np.arange(n)]))
    tiers.wait_for_background()
    info = f.cache_info()
    capacities = 1 + max(0, int(np.ceil(np.log((n + 1) / 16) / np.log(4))))   # 16, 64, 256, 1024
    # the first inputs whose loop ended well inside its last capacity get the capacity they
    # need, compiled ahead in the background (padded_runs._completed)
    tight = bucket(n + 1) != 16 * 4 ** (capacities - 1)
    compiles = info["compilations"] + info["padded_compilations"] + info["disk_cache_hits"]
    assert info["host_steps"] == 0 and compiles == capacities + tight and info["padded_runs"] == 1, info
    np.testing.assert_array_equal(f(n), np.concatenate([[1.0], 2.0 + np.arange(n)]))
    info = f.cache_info()
    assert info["padded_runs"] == 2
    assert info["compilations"] + info["padded_compilations"] + info["disk_cache_hits"] == compiles


def test_growing_loop_at_other_trip_counts_compiles_nothing_new(tier):
    tier("auto")
    f = qjit(lambda n: for_loop(0, n, 1, allow_array_resizing=True)(
        lambda i, a: jnp.concatenate([a, a[:1] - i]))(jnp.ones(1)))
    for n in (1000, 999, 500, 1000, 3, 0, 700):
        np.testing.assert_array_equal(f(n), np.concatenate([[1.0], 1.0 - np.arange(n)]))
    info = f.cache_info()
    # the capacities 16, 64, 256, 1024 of the loop
    assert info["compilations"] + info["padded_compilations"] + info["disk_cache_hits"] <= 4, info


def test_growing_while_loops_and_several_carried_arrays(tier):
    tier("auto")
    # doubling until at least 1000 elements, a step counter carried along
    g = qjit(lambda x: lax.while_loop(lambda c: c[0].shape[0] < 1000,
                                      lambda c: (jnp.concatenate([c[0], c[0] * 2]), c[1] + 1), (x, 0),
                                      allow_array_resizing=True), abstracted_axes={0: "n"})
    for n in (1, 3, 7, 999, 1000):
        x = np.arange(1.0, n + 1)
        want, k = x, 0
        while len(want) < 1000:
            want, k = np.concatenate([want, want * 2]), k + 1
        got, steps = g(x)
        np.testing.assert_array_equal(got, want)
        assert steps == k
    # two arrays growing at different rates, a negative step, sizes read in the body
    h = qjit(lambda n: for_loop(n, 0, -1, allow_array_resizing=True)(
        lambda i, c: (jnp.concatenate([c[0], jnp.full(2, i * 1.0)]),
                      jnp.concatenate([c[1], c[0][-1:] + c[1].shape[0]])))((jnp.zeros(0), jnp.ones(1))))
    for n in (0, 1, 5, 40):
        a, b = np.zeros(0), np.ones(1)
        for i in range(n, 0, -1):
            a, b = np.concatenate([a, [i * 1.0, i * 1.0]]), np.concatenate([b, (a[-1:] if len(a) else a[:0]) + len(b)])
        got_a, got_b = h(n)
        np.testing.assert_array_equal(got_a, a)
        np.testing.assert_array_equal(got_b, b)
    # the exact policy keeps the host-driven loop
    tier("exact")
    e = qjit(lambda n: for_loop(0, n, 1, allow_array_resizing=True)(
        lambda i, a: jnp.concatenate([a, a[:1] + i]))(jnp.ones(1)))
    np.testing.assert_array_equal(e(3), [1.0, 1.0, 2.0, 3.0])
    assert e.cache_info()["padded_runs"] == 0


def test_size_errors_are_still_raised_in_the_padded_tier(tier):
    tier("padded")
    f = qjit(lambda n: jnp.ones(n) * 2)
    np.testing.assert_array_equal(f(3), [2.0, 2.0, 2.0])
    with pytest.raises(ValueError, match="negative"):
        f(-1)


def test_tier_switching_under_threads_gives_identical_results(monkeypatch):
    """Eight threads call at many sizes while sizes recur and their exact executables arrive
    in the background: every value is checked against numpy, and the exact tier serves as well
    as the others (eager while buckets compile, padded)."""
    monkeypatch.delenv("DYNJAX_TIERS", raising=False)
    monkeypatch.delenv("DYNJAX_SYNC_COMPILE", raising=False)
    monkeypatch.setenv("DYNJAX_EXACT_AFTER", "2")
    f = qjit(lambda x: (jnp.cumsum(x[::-1]) * 2, jnp.sum(x * x)), abstracted_axes={0: "n"})
    rng = np.random.default_rng(0)
    sizes = [int(s) for s in rng.integers(0, 70, size=24)] * 3
    inputs = {n: _ints(rng, n) for n in set(sizes)}
    errors = []

    def call(n):
        x = inputs[n]
        a, b = f(x)
        if not (np.array_equal(a, np.cumsum(x[::-1]) * 2) and b == np.sum(x * x)):
            errors.append(n)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(call, sizes))
    tiers.wait_for_background()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(call, sizes))
    assert not errors
    info = f.cache_info()
    assert info["padded_runs"] + info["eager_runs"] > 0 and info["exact_runs"] > 0, info


def test_results_do_not_alias_arguments(tier):
    tier("padded")
    f = qjit(lambda x: x, abstracted_axes={0: "n"})
    x = np.arange(16.0)   # exactly a bucket: passed unpadded
    y = f(x)
    x[:] = -1
    np.testing.assert_array_equal(y, np.arange(16.0))


def test_recompile_log_names_the_reason(caplog, monkeypatch):
    monkeypatch.delenv("DYNJAX_TIERS", raising=False)
    monkeypatch.setenv("DYNJAX_SYNC_COMPILE", "1")
    monkeypatch.setenv("DYNJAX_EXACT_AFTER", "2")
    f = qjit(lambda x, k: jnp.sum(x) * k, abstracted_axes=({0: "n"}, None))
    with caplog.at_level(logging.INFO, logger="dynjax"):
        f(np.ones(3), 2.0)
        f(np.ones(40), 2.0)
        f(np.ones(40), 2.0)
        f(np.ones((2, 2)), 2.0)
        tiers.wait_for_background()   # 40's bucket may compile there (40 runs eagerly meanwhile)
    text = caplog.text
    assert "trace <lambda>: first call" in text
    assert "new size bucket: the size of n (axis 0 of argument 0) = 40 in bucket <= 64" in text
    assert "size recurred, compile its exact executable" in text
    assert "argument 0 (x): rank 1 -> 2" in text


def test_a_program_that_cannot_pad_says_why_once(caplog):
    """The gradient of a strided 'SAME' convolution over a dynamic length has a low padding
    that depends on the length (it would shift the windows of a padded program): every size
    compiles its exact executable, and the tiers log says why, once."""
    w = np.arange(6.0).reshape(1, 2, 3)   # OIW
    f = qjit(dynjax.grad(lambda x: jnp.sum(lax.conv_general_dilated(x, w, (2,), "SAME") ** 2)),
             abstracted_axes={2: "n"})
    with caplog.at_level(logging.INFO, logger="dynjax.tiers"):
        for n in (4, 7, 9):
            x = np.arange(2.0 * n).reshape(1, 2, n) % 3
            y = _np_conv1d(x, w, 1, ((n - 1) // 2 * 2 + 3 - n) // 2 * np.array([1, 1])
                           + np.array([0, ((n - 1) // 2 * 2 + 3 - n) % 2]))[:, :, ::2]
            # d/dx sum(y^2) = 2 * sum over outputs of y * (the window's weights)
            want = np.zeros_like(x)
            lo = ((n - 1) // 2 * 2 + 3 - n) // 2
            for i in range(y.shape[2]):
                for k in range(3):
                    j = 2 * i + k - lo
                    if 0 <= j < n:
                        want[0, :, j] += 2 * y[0, 0, i] * w[0, :, k]
            np.testing.assert_allclose(f(x), want, rtol=1e-12)
        tiers.wait_for_background()
    said = [r.getMessage() for r in caplog.records if "cannot run padded" in r.getMessage()]
    assert len(said) == 1 and "low padding that depends on a dynamic size" in said[0], said
    # 7 and 9 ran eagerly while the bucket was tried; from then on, the exact tier
    runs = f.cache_info()["exact_runs"]
    f(np.ones((1, 2, 11)))
    assert f.cache_info()["padded_runs"] == 0 and f.cache_info()["exact_runs"] == runs + 1


@pytest.mark.parametrize("case", ["valid", "same_dilated", "explicit_strided", "batch_grouped"])
def test_convolution_gradients_pad(case, tier):
    """Convolutions and their transposes (the gradients by the input and by the kernel) run
    padded over a dynamic batch or length: equal to the exact tier and to eager evaluation."""
    rng = np.random.default_rng(7)
    w = rng.integers(-3, 4, (4, 2, 3)).astype(float)
    conv, axes, shape = {
        "valid": (lambda w, x: lax.conv_general_dilated(x, w, (1,), "VALID"), {2: "n"},
                  lambda n: (2, 2, n)),
        "same_dilated": (lambda w, x: lax.conv_general_dilated(x, w, (1,), "SAME", rhs_dilation=(2,)),
                         {2: "n"}, lambda n: (2, 2, n)),
        "explicit_strided": (lambda w, x: lax.conv_general_dilated(x, w, (2,), ((-1, 2),), lhs_dilation=(2,)),
                             {2: "n"}, lambda n: (2, 2, n)),
        "batch_grouped": (lambda w, x: lax.conv_general_dilated(x, w[:, :1], (1,), "SAME",
                                                                feature_group_count=2),
                          {0: "n"}, lambda n: (n, 2, 5)),
    }[case]
    g = dynjax.grad(lambda w, x: jnp.sum(jnp.sin(conv(w, x))), argnums=(0, 1))
    padded, exact = qjit(g, abstracted_axes=(None, axes)), qjit(g, abstracted_axes=(None, axes))
    sizes = (0, 1, 2, 5, 17, 40)
    for n in sizes:
        x = rng.integers(-3, 4, shape(n)).astype(float)
        tier("padded")
        got = padded(w, x)
        tier("exact")
        want = exact(w, x)
        eager = g(w, x)
        for a, b, c in zip(got, want, eager):
            assert a.shape == b.shape == np.shape(c), (case, n)
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=f"{case} at {n}")
            np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12, err_msg=f"{case} at {n}")
    info = padded.cache_info()
    assert info["padded_runs"] == len(sizes) and info["exact_runs"] == 0, info


def test_dynjax_log_environment_variable_prints_to_stderr(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("import numpy as np, dynjax, dynjax.numpy as jnp\n"
                      "f = dynjax.qjit(lambda x: jnp.sum(x), abstracted_axes={0: 'n'})\n"
                      "f(np.ones(3)); f(np.ones(100))\n"
                      "dynjax.execution.tiers.wait_for_background(); f(np.ones(101))\n")
    env = dict(os.environ, DYNJAX_LOG="recompiles,tiers")
    env.pop("DYNJAX_TIERS", None)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "[dynjax.recompiles] trace <lambda>: first call" in proc.stderr
    # 100 arrives while its bucket compiles (numpy serves it, unless the compile wins the race)
    assert re.search(r"\[dynjax.tiers\] (eager tier, while the bucket \[128\] compiles|padded tier): "
                     r"the size of n \(axis 0 of argument 0\) = 100", proc.stderr), proc.stderr
    assert "[dynjax.tiers] padded tier: the size of n (axis 0 of argument 0) = 101" in proc.stderr


def test_bad_policy_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("DYNJAX_TIERS", "fast")
    f = qjit(lambda x: x + 1, abstracted_axes={0: "n"})
    with pytest.raises(ValueError, match="DYNJAX_TIERS must be one of auto, exact, padded"):
        f(np.ones(3))


# compiled-program suites re-run with the padded tier forced on: every primitive against its
# eager result (test_eager_vs_compiled), control flow, indexing (gather / scatter), numpy
# functions with sizes from data, and size arithmetic (kept to ~1 minute; the whole suite
# passes with either tier forced on: `DYNJAX_TIERS=padded pytest tests`, `DYNJAX_TIERS=exact
# pytest tests`, both checked on 2026-11-23)
FORCED = ["tests/test_eager_vs_compiled.py", "tests/test_control_flow.py", "tests/test_indexing.py",
          "tests/test_numpy_functions.py", "tests/test_size_folding.py", "tests/test_symbolic_dims.py"]


@pytest.mark.slow
def test_suites_pass_with_the_padded_tier_forced_on():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, DYNJAX_TIERS="padded")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *FORCED],
                          capture_output=True, text=True, env=env, cwd=root)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def _size_arithmetic(x):
    """Integer arithmetic on a size, of every kind the host prologue takes over: truncating
    division and remainder of negative numbers, division by zero (XLA's -1 and x), shifts,
    comparisons and selects, min / max, conversions."""
    n = x.shape[0]
    d = n - 3                                   # zero at n = 3, negative below
    q = lax.div(jnp.int64(7 * n - 20), jnp.int64(d))
    r = lax.rem(jnp.int64(5 - 4 * n), jnp.int64(d))
    s = lax.shift_right(jnp.int64(-n), jnp.int64(1)) + lax.shift_left(jnp.int64(n), jnp.int64(2))
    m = jnp.where(n % 2 == 0, jnp.minimum(n, 4), jnp.maximum(n, 9)).astype(jnp.int32)
    return x.sum() + (q * 1000 + r * 100 + s * 10 + m).astype(x.dtype)


def test_size_arithmetic_runs_on_the_host_and_agrees_with_the_exact_program(tier):
    """The scalar arithmetic on sizes of a padded program (``execution.host_prologue``) runs on
    the host before the call: the padded module keeps none of it (each scalar op would be a
    kernel for XLA to compile), and its results equal the exact program's bit for bit."""
    padded = qjit(_size_arithmetic, abstracted_axes=({0: "n"},))
    exact = qjit(_size_arithmetic, abstracted_axes=({0: "n"},))
    for n in (0, 1, 2, 3, 4, 7, 40, 41):
        x = np.linspace(0.0, 1.0, n)
        tier("padded")
        got = padded(x)
        tier("exact")
        want = exact(x)
        np.testing.assert_array_equal(got, want, err_msg=f"n={n}")
    text = padded.mlir_specialized
    for op in ("stablehlo.divide", "stablehlo.remainder", "stablehlo.shift_right_arithmetic",
               "stablehlo.shift_left", "stablehlo.maximum", "stablehlo.minimum"):
        assert op not in text, (op, text)
    assert "tensor<i1>, tensor<i64>" not in text, text   # no select on a size either
    assert padded.cache_info()["padded_runs"] == 8
