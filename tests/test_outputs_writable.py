"""Results are writable numpy arrays of their own, whatever the tier that computed them
(issue 20, item 12): the exact executable (first call and the dispatch table's fast path),
a padded bucket (cut or not), a capacity program, host-driven loops, the eager tier 0, and
eager calls outside ``qjit``. Writing into a result changes no later result, no input and no
constant the program closed over; results share memory with nothing else."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import for_loop, qjit
from dynjax.execution import tiers

# the automatic tier as a user's process runs it: compiles ahead included
pytestmark = pytest.mark.usefixtures("compile_ahead")

W = np.arange(3.0) * 10 + 1          # a small constant closed over
BIG = np.arange(6000.0) * 0.5 + 1    # 48 KB: results this large are views of XLA's buffers


def mixed(x):
    """The input itself, a constant, a computed array, a value returned twice, a scalar."""
    y = x * 2.5 + W[0]
    return x, jnp.asarray(W), y, y, x[::-1] - 1.0, jnp.sum(x)


def mixed_np(x):
    y = x * 2.5 + W[0]
    return x, W, y, y, x[::-1] - 1.0, np.sum(x)


def large(x):
    y = x * 2.0
    return x, jnp.asarray(BIG), y, y, BIG * 3.0 + x[0], x.reshape(-1, 2).T


def large_np(x):
    y = x * 2.0
    return x, BIG, y, y, BIG * 3.0 + x[0], x.reshape(-1, 2).T


def grow(x, n: int):
    """A loop resizing what it carries (a capacity program, or host-driven with the exact
    tier); it returns its input untouched when it runs zero times."""
    out = for_loop(0, n, 1, allow_array_resizing=True)(lambda i, a: jnp.concatenate([a, a[-1:] + W[1]]))(x)
    return out, x, jnp.asarray(W)


def grow_np(x, n):
    out = list(x)
    for _ in range(n):
        out.append(out[-1] + W[1])
    return np.array(out), x, W


def _leaves(out):
    return dynjax.tree_flatten(out)[0]


def _check(f, want_fn, *args):
    """One call: every result is a writable ndarray equal to numpy's; writing into each in turn
    changes neither the results not written yet, nor the arguments, nor the constants; and
    the next call returns the right values again, in memory of its own."""
    kept = [np.copy(a) for a in args]
    constants = (W.copy(), BIG.copy())
    outs = _leaves(f(*args))
    want = _leaves(want_fn(*args))
    assert len(outs) == len(want)
    for o, w in zip(outs, want):
        assert type(o) is np.ndarray, type(o)
        assert o.flags.writeable, (o.shape, o.dtype)
        np.testing.assert_array_equal(o, w)
    for i, o in enumerate(outs):
        o[...] = -7
        assert (o == -7).all()
        for later, w in zip(outs[i + 1:], want[i + 1:]):
            np.testing.assert_array_equal(later, w)
        for a, k in zip(args, kept):
            np.testing.assert_array_equal(a, k)
    np.testing.assert_array_equal(W, constants[0])
    np.testing.assert_array_equal(BIG, constants[1])
    again = _leaves(f(*args))
    for o, w in zip(again, want):
        assert o.flags.writeable
        np.testing.assert_array_equal(o, w)
        assert not any(np.shares_memory(o, p) for p in outs if p.size)
        assert not any(np.shares_memory(o, a) for a in args if isinstance(a, np.ndarray) and a.size)
    return again


@pytest.fixture
def tier(monkeypatch):
    """Set ``DYNJAX_TIERS``; afterwards, wait for the compiles queued in the background (so
    that none writes into the disk cache of a later test)."""
    def set_tier(name):
        monkeypatch.setenv("DYNJAX_TIERS", name)
    yield set_tier
    tiers.wait_for_background()


@pytest.mark.parametrize("fn, want, sizes", [(mixed, mixed_np, [5, 5, 16, 9]), (large, large_np, [6000, 6000, 6002])],
                         ids=["small", "large"])
def test_exact_tier(tier, fn, want, sizes):
    tier("exact")
    f = qjit(fn, abstracted_axes={0: "n"})
    for n in sizes:
        _check(f, want, np.arange(float(n)))
    info = f.cache_info()
    assert info["exact_runs"] == 2 * len(sizes) and info["padded_runs"] == info["eager_runs"] == 0, info


@pytest.mark.parametrize("fn, want, sizes", [(mixed, mixed_np, [5, 16, 5, 33]), (large, large_np, [6000, 6144, 6002])],
                         ids=["small", "large"])
def test_padded_tier(tier, fn, want, sizes):
    tier("padded")
    f = qjit(fn, abstracted_axes={0: "n"})
    for n in sizes:   # cut to the size, and at a bucket's edge (not cut)
        _check(f, want, np.arange(float(n)))
    info = f.cache_info()
    assert info["padded_runs"] == 2 * len(sizes) and info["exact_runs"] == 0, info


def test_auto_tier(tier, monkeypatch):
    tier("auto")
    monkeypatch.setenv("DYNJAX_SYNC_COMPILE", "1")
    f = qjit(mixed, abstracted_axes={0: "n"})
    for n in (5, 9, 9, 9, 20, 5):
        _check(f, mixed_np, np.arange(float(n)))
    tiers.wait_for_background()
    for n in (9, 20, 40):
        _check(f, mixed_np, np.arange(float(n)))
    info = f.cache_info()
    assert info["exact_runs"] > 0 and info["padded_runs"] + info["eager_runs"] > 0, info


def test_eager_tier_zero(tier):
    """The background thread held up: new sizes are evaluated by the numpy impls, whose
    results would otherwise be the input itself, the closed-over constant, or one array
    twice."""
    tier("auto")
    f = qjit(mixed, abstracted_axes={0: "n"})
    release = threading.Event()
    tiers.background(release.wait)
    try:
        _check(f, mixed_np, np.arange(4.0))   # the first size: its exact executable
        for n in (7, 0, 12, 3):
            outs = _leaves(f(np.arange(float(n))))
            for o, w in zip(outs, _leaves(mixed_np(np.arange(float(n))))):
                assert o.flags.writeable
                np.testing.assert_array_equal(o, w)
        x = np.arange(9.0)
        _check(f, mixed_np, x)
        assert f.cache_info()["eager_runs"] >= 5, f.cache_info()
    finally:
        release.set()
    tiers.wait_for_background()


@pytest.mark.parametrize("policy", ["auto", "exact"])
def test_resizing_loops(tier, policy):
    """``auto``: one capacity program; ``exact``: host-driven iterations (host steps), both
    through ``Program.run`` and the dispatch table's plan for a program."""
    tier(policy)
    f = qjit(grow, abstracted_axes=({0: "m"}, None))
    for n in (0, 3, 20, 3):
        _check(f, grow_np, np.arange(4.0), n)
    info = f.cache_info()
    if policy == "auto":
        assert info["padded_runs"] > 0, info
    else:
        assert info["host_steps"] > 0 and info["padded_runs"] == 0, info


def test_the_identity_and_constants_alone(tier):
    """Programs whose only result is an argument or a constant (large and small)."""
    for policy in ("exact", "padded", "auto"):
        tier(policy)
        for fn, want in [(lambda x: x, lambda x: x), (lambda x: jnp.asarray(BIG), lambda x: BIG),
                         (lambda x: jnp.asarray(W), lambda x: W)]:
            f = qjit(fn, abstracted_axes={0: "n"})
            for n in (5, 6000, 5):
                _check(f, want, np.arange(float(n)))


def test_eager_calls_outside_qjit():
    """dynjax.numpy outside qjit returns writable arrays; writing into one changes no later
    result (no cached constant is handed out)."""
    x = np.arange(6.0)
    calls = [lambda: jnp.zeros(3), lambda: jnp.ones((2, 2)), lambda: jnp.full(4, 2.0), lambda: jnp.arange(5),
             lambda: jnp.eye(3), lambda: jnp.broadcast_to(1.5, (2, 3)), lambda: jnp.broadcast_to(W, (2, 3)),
             lambda: jnp.sum(x), lambda: x * 2 + 1, lambda: jnp.sin(x), lambda: jnp.where(x > 2, x, 0.0),
             lambda: jnp.concatenate([x, x]), lambda: jnp.asarray(W) + 0, lambda: jnp.sort(x)[::-1],
             lambda: jnp.linspace(0.0, 1.0, 5), lambda: jnp.pad(x, 1)]
    for call in calls:
        first = call()
        want = np.array(first)
        assert isinstance(first, np.ndarray) and first.flags.writeable, first
        first[...] = -7
        second = call()
        np.testing.assert_array_equal(second, want)
        assert second.flags.writeable
    np.testing.assert_array_equal(x, np.arange(6.0))
    np.testing.assert_array_equal(W, np.arange(3.0) * 10 + 1)
