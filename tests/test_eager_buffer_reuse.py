"""Eager evaluation writes an elementwise result into the buffer of an intermediate that dies
there (``core/interpret.py``, ``impl_into_rules``): the values are the impl's bit for bit, no
argument, constant, returned value or viewed array is ever written, and a chain of
elementwise operations holds one buffer instead of one per operation."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import lax
from dynjax.core.interpret import eval_jaxpr
from dynjax.core.primitive import impl_into_rules, impl_rules
from helpers import in_threads

_SPECIAL = [0.0, -0.0, 1.0, -1.5, 0.5, 2.0, 1e30, -1e30, np.inf, -np.inf, np.nan, 1e-310, 3.0, -7.25]
_DTYPES = ["float16", "float32", "float64", "complex64", "complex128", "int8", "int32", "int64",
           "uint8", "uint32", "bool"]


def _values(dtype, rng, n=64):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(n) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        edge = np.array([0, 1, 2, info.max, info.min, info.max - 1], dtype=dt)
        return np.concatenate([edge, rng.integers(info.min // 2 if info.min else 0, info.max // 2, n - 6, dtype=dt)])
    with np.errstate(all="ignore"):
        base = np.concatenate([np.array(_SPECIAL), rng.standard_normal(n - len(_SPECIAL)) * 3])
        out = base.astype(dt)
        if dt.kind == "c":
            out = out + 1j * np.roll(base, 3).astype(dt)
    return out


def _same(a, b):
    """Equal values and dtypes, NaNs in the same places, signed zeros alike (by bits)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype.kind in "fc":
        return np.array_equal(a.view(np.uint8), b.view(np.uint8)) or (
            np.array_equal(np.isnan(a), np.isnan(b))
            and np.array_equal(np.where(np.isnan(a), 0, a).view(np.uint8),
                               np.where(np.isnan(b), 0, b).view(np.uint8)))
    return np.array_equal(a, b)


@pytest.mark.parametrize("prim", sorted(impl_into_rules, key=lambda p: p.name), ids=lambda p: p.name)
def test_an_in_place_rule_computes_what_the_impl_computes(prim):
    rng = np.random.default_rng(0)
    unary = prim.name not in {"add", "sub", "mul", "div", "rem", "pow", "atan2", "and", "or", "xor"}
    took = 0
    for dtype in _DTYPES:
        x = _values(dtype, rng)
        y = np.roll(_values(dtype, rng), 5)
        cases = [(x,)] if unary else [(x, y), (x, y[:1].reshape(())), (x[:1].reshape(()), y)]
        for operands in cases:
            try:
                expected = impl_rules[prim](*[o.copy() for o in operands])
            except TypeError:   # a dtype the operation refuses
                continue
            for k in range(len(operands)):
                mine = [o.copy() for o in operands]
                dest = mine[k]
                got = impl_into_rules[prim](k, *mine)
                if got is None:
                    assert all(np.array_equal(m, o, equal_nan=True) for m, o in zip(mine, operands))
                    continue
                assert got is dest, "the result is the operand's buffer"
                assert _same(got, expected), (prim, dtype, k)
                took += 1
    assert took, f"{prim.name}: no dtype computed in place"


def _evaluate_with_peak(closed, x):
    """The one result of evaluating ``closed`` on ``x``, and the peak of the memory numpy
    allocated meanwhile (the evaluation plan made beforehand)."""
    eval_jaxpr(closed.jaxpr, closed.consts, x)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        (out,) = eval_jaxpr(closed.jaxpr, closed.consts, x)
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_chain_of_elementwise_operations_holds_one_buffer():
    x = np.random.default_rng(1).standard_normal(1_000_000)
    closed = dynjax.make_jaxpr(lambda x: jnp.exp(jnp.sin(jnp.cos(x) * 2.0) + 1.0) - 3.0)(x)
    out, peak = _evaluate_with_peak(closed, x)
    assert peak < 1.5 * x.nbytes, f"{peak} bytes at the peak: not one buffer"
    assert _same(out, np.exp(np.sin(np.cos(x) * 2.0) + 1.0) - 3.0)


def test_arguments_constants_and_returned_values_are_never_written():
    rng = np.random.default_rng(2)
    const = rng.standard_normal((50, 3))
    const0 = const.copy()

    def f(x, y):
        a = x.astype(x.dtype)          # (may be the argument itself)
        b = lax.convert_element_type(y, y.dtype)
        c = jnp.reshape(a, (50, 3))    # (a view of the argument)
        kept = jnp.tanh(c)             # returned: never a destination
        d = jnp.sin(b) + const         # const: never a destination
        e = jnp.exp(kept) * d
        return kept, jnp.negative(e), c + 1.0
    x = rng.standard_normal(150)
    y = rng.standard_normal((50, 3))
    x0, y0 = x.copy(), y.copy()
    got_eager = f(x, y)
    got_qjit = dynjax.qjit(f)(x, y)
    assert np.array_equal(x, x0) and np.array_equal(y, y0) and np.array_equal(const, const0)
    c = x.reshape(50, 3)
    kept = np.tanh(c)
    ref = (kept, -(np.exp(kept) * (np.sin(y) + const)), c + 1.0)
    for got in (got_eager, got_qjit):
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g, r, rtol=1e-14)
    closed = dynjax.make_jaxpr(f)(x, y)
    got = eval_jaxpr(closed.jaxpr, closed.consts, x, y)
    assert np.array_equal(x, x0) and np.array_equal(y, y0) and np.array_equal(const, const0)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-14)


def test_a_value_that_is_also_an_argument_or_another_value_is_never_written():
    # stop_gradient, optimization_barrier, checkpoint and cond evaluate to their operand
    # itself: the equation's result is the argument's (or another intermediate's) very
    # array, which its reference count tells apart from an array only the evaluation holds
    def f(x):
        a = jnp.sin(lax.stop_gradient(x))
        b = jnp.exp(lax.optimization_barrier(x))
        c = jnp.cos(dynjax.checkpoint(lambda v: v)(x))
        d = jnp.tanh(lax.cond(True, lambda v: v, lambda v: v * 2.0, x))
        t = jnp.sin(x) * 1.5
        u = lax.optimization_barrier(t)    # the same array as t
        e = jnp.exp(t)                     # t dies here, but u is t and is used below
        return a + b + c + d, e - jnp.cos(u)
    x = np.random.default_rng(6).standard_normal(300)
    x0 = x.copy()
    t = np.sin(x0) * 1.5
    want = (np.sin(x0) + np.exp(x0) + np.cos(x0) + np.tanh(x0), np.exp(t) - np.cos(t))
    closed = dynjax.make_jaxpr(f)(x)
    for got in (eval_jaxpr(closed.jaxpr, closed.consts, x), f(x), dynjax.qjit(f)(x)):
        assert np.array_equal(x, x0)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)


def test_a_view_of_a_dying_array_keeps_its_values():
    # ``t`` dies at ``exp``, but a slice and a transpose of it are used after: the reference
    # that each view holds on its base keeps ``t``'s buffer from being written
    def f(x):
        t = jnp.sin(x)
        head = t[:2]
        flipped = t.T
        u = jnp.exp(t)
        return u + flipped, head * 2.0
    x = np.random.default_rng(3).standard_normal((4, 4))
    closed = dynjax.make_jaxpr(f)(x)
    got = eval_jaxpr(closed.jaxpr, closed.consts, x)
    t = np.sin(x)
    np.testing.assert_allclose(got[0], np.exp(t) + t.T, rtol=1e-14)
    np.testing.assert_allclose(got[1], t[:2] * 2.0, rtol=1e-14)


def test_an_operand_used_twice_and_a_loop_body():
    def f(x):
        s = jnp.cos(x)
        sq = s * s                 # both operands are the dying buffer
        return lax.fori_loop(0, 3, lambda i, c: jnp.tanh(c * 0.5 + 1.0) - 0.25, sq)
    x = np.random.default_rng(4).standard_normal(1000)
    want = np.cos(x) ** 2
    for _ in range(3):
        want = np.tanh(want * 0.5 + 1.0) - 0.25
    x0 = x.copy()
    np.testing.assert_allclose(f(x), want, rtol=1e-14)
    np.testing.assert_allclose(dynjax.qjit(f)(x), want, rtol=1e-14)
    assert np.array_equal(x, x0)


def test_eager_transformations_see_no_in_place_writes():
    # jvp, grad and vmap evaluate jaxprs on tracers: nothing is written in place, and the
    # derivatives match finite differences
    def f(x):
        return jnp.sum(jnp.tanh(jnp.sin(x) * 3.0) ** 2)
    x = np.random.default_rng(5).standard_normal(20)
    g = dynjax.grad(f)(x)
    eps = 1e-6
    fd = np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(20)])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
    closed = dynjax.make_jaxpr(lambda x: jnp.tanh(jnp.sin(x) * 3.0))(x)
    batched = dynjax.vmap(lambda r: eval_jaxpr(closed.jaxpr, closed.consts, r)[0])(np.stack([x, 2 * x]))
    np.testing.assert_allclose(batched, np.tanh(np.sin(np.stack([x, 2 * x])) * 3.0), rtol=1e-14)


def test_threads_evaluating_one_jaxpr_at_once():
    closed = dynjax.make_jaxpr(lambda x: jnp.exp(jnp.sin(x) + 1.0) * 0.5)(np.ones(3))
    results, errors = {}, []

    def work(k):
        x = np.full(200_000, k / 7.0)
        for _ in range(20):
            (out,) = eval_jaxpr(closed.jaxpr, closed.consts, x)
            if not np.array_equal(out, np.exp(np.sin(x) + 1.0) * 0.5):
                errors.append(k)
        results[k] = True
    in_threads(work, range(4))
    assert not errors and len(results) == 4


def test_a_broadcast_read_only_by_elementwise_operations_is_a_view():
    x = np.random.default_rng(7).standard_normal((1000, 1000))

    def f(x):
        shifted = x - jnp.max(x, axis=1, keepdims=True)          # a broadcast of the row maxima
        return shifted / jnp.sum(shifted, axis=1, keepdims=True)

    closed = dynjax.make_jaxpr(f)(x)
    assert "broadcast_in_dim" in str(closed)
    out, peak = _evaluate_with_peak(closed, x)
    assert peak < 1.5 * x.nbytes, f"{peak} bytes at the peak: the broadcasts were materialized"
    shifted = x - x.max(axis=1, keepdims=True)
    assert _same(out, shifted / shifted.sum(axis=1, keepdims=True))
    assert out.flags.writeable and out.base is None


def test_a_broadcast_that_is_returned_or_reduced_is_an_array():
    def f(x):
        b = jnp.broadcast_to(x[:, None], (x.shape[0], 3))
        return b, jnp.sum(b, axis=0), b * 2.0
    x = np.arange(4.0)
    closed = dynjax.make_jaxpr(f)(x)
    for got in (eval_jaxpr(closed.jaxpr, closed.consts, x), f(x), dynjax.qjit(f)(x)):
        b, s, d = got
        np.testing.assert_array_equal(b, np.broadcast_to(x[:, None], (4, 3)))
        np.testing.assert_array_equal(s, np.full(3, 6.0))
        np.testing.assert_array_equal(d, 2 * np.broadcast_to(x[:, None], (4, 3)))
        b[0, 0] = 99.0   # a result the caller owns
        assert x[0] == 0.0
