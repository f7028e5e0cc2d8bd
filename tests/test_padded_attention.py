"""Padded attention without masks (``execution/padding_softmax.py``).

``softmax(q @ k.T * c) @ v`` over the keys' axis runs padded with its score padding set to
``-inf`` by the product itself and no mask on the score matrix. Checked: the padded program
against numpy (JAX's definitions) and against the exact program, at sizes 0, 1 and across
buckets, with queries and keys of different lengths (an empty key axis included), on rows
of every kind the argument in the module's docstring distinguishes: finite; holding ``-inf``
scores beside finite ones; holding ``+inf``, NaN, or only ``-inf`` scores; infinities and NaNs
in the keys and values; overflowing scores; float32; batched heads (``vmap``); other scalings
(a negative one keeps the masks); a softmax over the queries' axis; derivatives. And that the
rewrite happens: no boolean mask of the score matrix's shape in the module.
"""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax.execution.padding import bucket


@pytest.fixture(autouse=True)
def padded_tier(monkeypatch):
    monkeypatch.setenv("DYNJAX_TIERS", "padded")


def _softmax_ref(s, axis):
    """JAX's softmax in numpy: ``exp(s - max) / sum``; an empty axis gives an empty result."""
    with np.errstate(all="ignore"):
        if s.shape[axis] == 0:
            return np.exp(s)
        m = np.max(np.where(np.isnan(s), -np.inf, s), axis=axis, keepdims=True)   # (a NaN reaches the sum anyway)
        e = np.exp(s - m)
        return e / np.sum(e, axis=axis, keepdims=True)


def _attention_ref(q, k, v, scale=0.125):
    with np.errstate(all="ignore"):
        p = _softmax_ref(q @ k.T * scale, axis=1)
        if k.shape[0] == 0:
            return np.zeros((q.shape[0], v.shape[1]), q.dtype)
        return p @ v


def _attention(scale_form="div"):
    def f(q, k, v):
        s = q @ k.T
        s = {"div": lambda: s / 8.0, "mul": lambda: s * 0.125, "rmul": lambda: 0.125 * s,
             "neg": lambda: s * -0.125, "none": lambda: s}[scale_form]()
        return dynjax.nn.softmax(s, axis=1) @ v
    return dynjax.qjit(f, abstracted_axes=({0: "m"}, {0: "n"}, {0: "n"}))


def _same(got, want, rtol=1e-12, atol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def _score_masks(f, m, n):
    """The boolean masks of the score matrix's shape in the module of the latest call, which
    had ``m`` queries and ``n`` keys."""
    return re.findall(rf"tensor<{bucket(m)}x{bucket(n)}xi1>", f.mlir_specialized)


def _rows(rng, n, d=8):
    return rng.standard_normal((n, d))


def test_matches_numpy_at_every_size_and_has_no_score_mask():
    rng = np.random.default_rng(0)
    f = _attention()
    for m, n in [(0, 0), (1, 1), (2, 2), (5, 5), (16, 16), (17, 17), (40, 100), (100, 33), (3, 0), (0, 3), (20, 1)]:
        q, k, v = _rows(rng, m), _rows(rng, n), _rows(rng, n, 5)
        _same(f(q, k, v), _attention_ref(q, k, v, 0.125))
        assert _score_masks(f, m, n) == []
    assert f.cache_info()["padded_runs"] >= 11


def test_the_exact_program_agrees():
    rng = np.random.default_rng(1)
    f = _attention()
    q, k, v = _rows(rng, 30), _rows(rng, 45), _rows(rng, 45, 3)
    padded = f(q, k, v)
    os.environ["DYNJAX_TIERS"] = "exact"
    try:
        g = _attention()
        exact = g(q, k, v)
    finally:
        os.environ["DYNJAX_TIERS"] = "padded"
    _same(padded, exact, rtol=1e-13)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rows_with_infinities_and_nans(dtype):
    """Query rows that make every score of the row an infinity or a NaN (the row is NaN in
    both programs), rows with ``-inf`` scores beside finite ones, keys and values with
    infinities and NaNs, and scores that overflow."""
    rng = np.random.default_rng(2)
    m, n, d = 12, 21, 4
    q, k, v = rng.standard_normal((m, d)), rng.standard_normal((n, d)), rng.standard_normal((n, 3))
    k[:, 0] = np.abs(k[:, 0]) + 0.5          # every key's first component positive
    q[:, 2] = np.abs(q[:, 2]) + 0.1          # and every query's third
    q[0] = [np.inf, 0.0, 0.0, 0.0]           # scores +inf (or NaN where a key's component is 0)
    q[1] = [-np.inf, 0.0, 0.0, 0.0]          # all scores -inf: a NaN row
    q[2, 1] = np.nan                         # a NaN query: a NaN row
    big = 1e300 if dtype == np.float64 else 1e30
    q[3] = [big, big, 0.0, 0.0]              # overflowing scores
    k[4, 2] = -np.inf                        # key 4: -inf beside finite scores in rows with q[:, 2] > 0
    q[5, 2] = 2.0
    q[6, 2] = -2.0                           # key 4: +inf in this row
    v[8, 1] = np.inf                         # an infinite value
    f = _attention()
    tol = 1e-12 if dtype == np.float64 else 2e-5

    def check(q, k, v):
        q, k, v = q.astype(dtype), k.astype(dtype), v.astype(dtype)
        got = f(q, k, v)
        want = _attention_ref(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64))
        _same(got, want.astype(dtype), rtol=tol, atol=tol)
        return got
    got = check(q, k, v)
    assert np.isnan(got[[0, 1, 2, 6]]).all() and np.isfinite(got[[4, 5, 7, 8, 9, 10, 11]][:, [0, 2]]).all()
    k2, v2 = k.copy(), v.copy()
    k2[7, 3] = np.nan                        # key 7: a NaN score in every row
    v2[9, 2] = np.nan                        # a NaN value
    check(q, k2, v2)
    assert _score_masks(f, m, n) == []


def test_an_empty_key_axis_gives_zeros_and_an_empty_query_axis_nothing():
    f = _attention()
    q = np.ones((4, 8))
    empty = np.zeros((0, 8))
    _same(f(q, empty, np.zeros((0, 2))), np.zeros((4, 2)))
    assert f(empty, np.ones((3, 8)), np.ones((3, 2))).shape == (0, 2)


@pytest.mark.parametrize("form", ["mul", "rmul", "none", "neg"])
def test_other_scalings(form):
    rng = np.random.default_rng(3)
    f = _attention(form)
    scale = {"mul": 0.125, "rmul": 0.125, "none": 1.0, "neg": -0.125}[form]
    for m, n in [(18, 0), (1, 30), (7, 9)]:
        q, k, v = _rows(rng, m), _rows(rng, n), _rows(rng, n, 2)
        q[0, 0] = np.inf if m > 1 else q[0, 0]
        _same(f(q, k, v), _attention_ref(q, k, v, scale))
    # a negative scaling turns the padding's -inf into +inf: the masks stay
    assert (_score_masks(f, 7, 9) == []) == (form != "neg")


def test_batched_heads_and_the_other_axis():
    rng = np.random.default_rng(4)

    def heads(q, k, v):
        return dynjax.vmap(lambda a, b, c: dynjax.nn.softmax(a @ b.T / 8.0, axis=1) @ c)(q, k, v)
    f = dynjax.qjit(heads, abstracted_axes=({1: "n"}, {1: "n"}, {1: "n"}))
    for n in (1, 6, 19):
        q, k, v = rng.standard_normal((3, n, 4)), rng.standard_normal((3, n, 4)), rng.standard_normal((3, n, 2))
        q[1, 0, 0] = np.nan
        want = np.stack([_attention_ref(q[h], k[h], v[h]) for h in range(3)])
        _same(f(q, k, v), want)

    # the softmax over the queries' axis: the scores' axis 0 comes from the first operand
    g = dynjax.qjit(lambda q, k, v: v.T @ dynjax.nn.softmax(q @ k.T / 8.0, axis=0),
                    abstracted_axes=({0: "n"}, {0: "m"}, {0: "n"}))
    for n, m in [(5, 3), (17, 1), (0, 4)]:
        q, k, v = _rows(rng, n), _rows(rng, m), _rows(rng, n, 2)
        with np.errstate(all="ignore"):
            want = v.T @ _softmax_ref(q @ k.T / 8.0, axis=0) if n else np.zeros((2, m))
        _same(g(q, k, v), want)


def test_derivatives_agree_with_the_exact_program():
    rng = np.random.default_rng(5)

    def loss(q, k, v):
        return jnp.sum(dynjax.nn.softmax(q @ k.T / 8.0, axis=1) @ v)
    f = dynjax.qjit(dynjax.grad(loss, argnums=(0, 1, 2)), abstracted_axes=({0: "n"}, {0: "n"}, {0: "n"}))
    q, k, v = _rows(rng, 11), _rows(rng, 11), _rows(rng, 11, 3)
    padded = f(q, k, v)
    os.environ["DYNJAX_TIERS"] = "exact"
    try:
        exact = dynjax.qjit(dynjax.grad(loss, argnums=(0, 1, 2)))(q, k, v)
    finally:
        os.environ["DYNJAX_TIERS"] = "padded"
    for a, b in zip(padded, exact):
        _same(a, b, rtol=1e-11, atol=1e-12)
    # against central differences of numpy's attention, in one direction
    dq = rng.standard_normal(q.shape)
    eps = 1e-6
    fd = (np.sum(_attention_ref(q + eps * dq, k, v)) - np.sum(_attention_ref(q - eps * dq, k, v))) / (2 * eps)
    assert np.sum(padded[0] * dq) == pytest.approx(fd, rel=1e-6, abs=1e-9)


def test_a_softmax_of_an_input_keeps_its_masks():
    """Without the product before it, the padding of the softmax's operand is unknown."""
    f = dynjax.qjit(lambda s, v: dynjax.nn.softmax(s, axis=1) @ v, abstracted_axes=({0: "n", 1: "n"}, {0: "n"}))
    rng = np.random.default_rng(6)
    s, v = rng.standard_normal((9, 9)), rng.standard_normal((9, 2))
    _same(f(s, v), _softmax_ref(s, 1) @ v)
    assert _score_masks(f, 9, 9) != []


def test_keys_and_values_whose_padding_is_not_zero():
    """Keys and values computed in the program (``1 / k``: the padding of a zero-padded
    input becomes ``inf``): the product and the weighted sum set their padding to 0 first."""
    f = dynjax.qjit(lambda q, k, v: dynjax.nn.softmax(q @ (1.0 / k).T / 8.0, axis=1) @ (1.0 / v),
                    abstracted_axes=({0: "n"}, {0: "n"}, {0: "n"}))
    rng = np.random.default_rng(7)
    for n in (1, 5, 20):
        q, k, v = _rows(rng, n), _rows(rng, n) + 3.0, _rows(rng, n, 2) + 3.0
        _same(f(q, k, v), _attention_ref(q, 1.0 / k, 1.0 / v))
        assert _score_masks(f, n, n) == []


def test_softmaxes_over_both_axes_of_one_product_keep_their_masks():
    def both(q, k):
        s = q @ k.T   # one product, two softmaxes over different axes: one augmentation cannot serve both
        return dynjax.nn.softmax(s, axis=1), dynjax.nn.softmax(s, axis=0), dynjax.nn.softmax(s / 8.0, axis=1)
    f = dynjax.qjit(both, abstracted_axes=({0: "m"}, {0: "n"}))
    rng = np.random.default_rng(9)
    for m, n in [(3, 5), (17, 2), (1, 1)]:
        q, k = _rows(rng, m), _rows(rng, n)
        got = f(q, k)
        s = q @ k.T
        for g, w in zip(got, (_softmax_ref(s, 1), _softmax_ref(s, 0), _softmax_ref(s / 8.0, 1))):
            _same(g, w)


def test_nn_dot_product_attention():
    """``nn.dot_product_attention`` transposes, scales and converts its scores to float32
    before the softmax, and converts the weights back: the same rewrite, checked against the
    exact program and numpy, heads and batches included."""
    def attend(q, k, v):
        return dynjax.nn.dot_product_attention(q, k, v)
    f = dynjax.qjit(attend, abstracted_axes=({1: "t"}, {1: "s"}, {1: "s"}))
    rng = np.random.default_rng(10)
    for t, s in [(5, 7), (19, 19), (1, 33), (4, 0)]:
        q, k, v = rng.standard_normal((2, t, 3, 4)), rng.standard_normal((2, s, 3, 4)), rng.standard_normal((2, s, 3, 4))
        if t > 2:
            q[1, 2, 0, 1] = np.inf   # that row is NaN in both programs
        got = f(q, k, v)
        os.environ["DYNJAX_TIERS"] = "exact"
        try:
            exact = dynjax.qjit(attend)(q, k, v)
        finally:
            os.environ["DYNJAX_TIERS"] = "padded"
        _same(got, exact, rtol=1e-6, atol=1e-7)
        with np.errstate(all="ignore"):
            logits = (np.einsum("btnh,bsnh->bnts", q, k) / 2.0).astype(np.float32)
            want = np.einsum("bnts,bsnh->btnh", _softmax_ref(logits, 3).astype(np.float64), v) if s else np.zeros_like(q)
        _same(got, want, rtol=1e-5, atol=1e-6)
        assert not re.findall(rf"tensor<2x3x1x{bucket(t)}x{bucket(s)}xi1>", f.mlir_specialized)
