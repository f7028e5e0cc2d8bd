"""Cumulative operations (lax.cumsum cumprod cummax cummin cumlogsumexp associative_scan,
jnp.cumulative_sum / cumulative_prod) and windowed reductions (lax.reduce_window, lax.reduce):
against jax on static shapes and numpy-built references on dynamic ones, eagerly and compiled
(one trace over sizes 0, 1, n), under grad (against jax.grad) and vmap, plus the errors."""
from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import lax

jax.config.update("jax_enable_x64", True)

RNG = np.random.default_rng(11)


def close(got, want, rtol=1e-12, atol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def ties(*shape):
    """Data with many ties (small integers as floats), for the extrema's derivatives."""
    return RNG.integers(0, 3, shape).astype(np.float64)


# ----------------------------------------------------------------------------------------------
# cumulative operations: values against jax (static shapes), eager and compiled
# ----------------------------------------------------------------------------------------------
CUM = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]


@pytest.mark.parametrize("name", CUM)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_cumulative_against_jax(name, dtype):
    if name == "cumlogsumexp" and dtype == np.int32:
        pytest.raises(TypeError, lax.cumlogsumexp, np.arange(3, dtype=dtype))
        return
    x = (RNG.standard_normal((4, 5)) * 3).astype(dtype)
    ours, theirs = getattr(lax, name), getattr(jax.lax, name)
    compiled = dynjax.qjit(lambda x: [ours(x, axis, rev) for axis in (0, 1) for rev in (False, True)])
    want = [np.asarray(theirs(x, axis, rev)) for axis in (0, 1) for rev in (False, True)]
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for k, (axis, rev) in enumerate([(a, r) for a in (0, 1) for r in (False, True)]):
        close(ours(x, axis=axis, reverse=rev), want[k], tol, tol)
    for got, w in zip(compiled(x), want):
        close(got, w, tol, tol)


def test_cumulative_dynamic_lengths_one_trace():
    f = dynjax.qjit(lambda x: (lax.cummax(x, 0), lax.cummin(x, 1, reverse=True), lax.cumlogsumexp(x, 0),
                               lax.cumlogsumexp(x, 0, reverse=True)),
                    abstracted_axes=({0: "n"},))
    for n in (0, 1, 7):
        x = RNG.standard_normal((n, 3)) * 10
        got = f(x)
        close(got[0], np.maximum.accumulate(x, 0))
        close(got[1], np.minimum.accumulate(x[:, ::-1], 1)[:, ::-1])
        close(got[2], np.logaddexp.accumulate(x, 0))
        close(got[3], np.logaddexp.accumulate(x[::-1], 0)[::-1])
    assert f.cache_info()["traces"] == 1
    # a dynamic axis longer than the scans' block (128), integers
    g = dynjax.qjit(lambda x: (lax.cummax(x), lax.cummin(x, reverse=True)), abstracted_axes=({0: "n"},))
    x = RNG.integers(-1000, 1000, 300).astype(np.int32)
    mx, mn = g(x)
    np.testing.assert_array_equal(mx, np.maximum.accumulate(x))
    np.testing.assert_array_equal(mn, np.minimum.accumulate(x[::-1])[::-1])


def test_extrema_signed_zeros_and_nans_eager_equals_compiled():
    x = np.array([-0.0, 0.0, -0.0, np.nan, 1.0, -np.inf, 0.0])
    y = np.array([0.0, -0.0, 0.0, -1.0, np.inf, 2.0])
    for fn in (lax.cummax, lax.cummin):
        for v in (x, y):
            for rev in (False, True):
                eager = fn(v, reverse=rev)
                compiled = dynjax.qjit(lambda v: fn(v, reverse=rev))(v)
                want = np.asarray(getattr(jax.lax, fn.__name__)(v, reverse=rev))
                num = ~np.isnan(want)        # (a NaN's sign is not meaningful)
                np.testing.assert_array_equal(eager, want)
                np.testing.assert_array_equal(np.signbit(eager)[num], np.signbit(want)[num])
                np.testing.assert_array_equal(compiled, want)
                np.testing.assert_array_equal(np.signbit(compiled)[num], np.signbit(want)[num])


def test_cumlogsumexp_stable_and_infinities():
    x = np.array([-1000.0, 0.0, 1000.0, -np.inf, 999.0])
    want = np.asarray(jax.lax.cumlogsumexp(x))
    close(lax.cumlogsumexp(x), want)
    close(dynjax.qjit(lax.cumlogsumexp, abstracted_axes=({0: "n"},))(x), want)
    z = np.array([-np.inf, -np.inf, 0.0, np.inf, 1.0, np.inf])
    close(lax.cumlogsumexp(z), np.asarray(jax.lax.cumlogsumexp(z)))
    g = dynjax.grad(lambda x: jnp.sum(lax.cumlogsumexp(x) * np.arange(1.0, 6.0)))
    close(g(x), np.asarray(jax.grad(lambda x: jjnp.sum(jax.lax.cumlogsumexp(x) * np.arange(1.0, 6.0)))(x)))


# ----------------------------------------------------------------------------------------------
# derivatives: against jax.grad, ties included; eager and compiled on a dynamic length
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CUM)
def test_cumulative_grad_against_jax(name):
    ours, theirs = getattr(lax, name), getattr(jax.lax, name)
    x = ties(9, 2) + (0.5 if name in ("cumprod", "cumlogsumexp") else 0.0)
    w = RNG.standard_normal((9, 2))

    def loss(f, sum_):
        return lambda x: sum_((f(x, 0) + f(x, 1, reverse=True) + f(x, 0, reverse=True)) * w)

    want = np.asarray(jax.grad(loss(theirs, jjnp.sum))(x))
    close(dynjax.grad(loss(ours, jnp.sum))(x), want, 1e-10, 1e-10)
    dyn = dynjax.qjit(dynjax.grad(lambda x, w: jnp.sum((ours(x, 0) + ours(x, 1, reverse=True)
                                                        + ours(x, 0, reverse=True)) * w)),
                      abstracted_axes=({0: "n"}, {0: "n"}))
    close(dyn(x, w), want, 1e-10, 1e-10)
    for n in (0, 1, 4):
        xs, ws = x[:n], w[:n]
        close(dyn(xs, ws), np.asarray(jax.grad(lambda v: jjnp.sum(
            (theirs(v, 0) + theirs(v, 1, reverse=True) + theirs(v, 0, reverse=True)) * ws))(xs)), 1e-10, 1e-10)
    assert dyn.cache_info()["traces"] == 1


def test_cummax_ties_follow_jax_tree():
    for n in (3, 8):
        x = np.full(n, 3.0)
        want = np.asarray(jax.jacobian(jax.lax.cummax)(x))
        close(dynjax.jacobian(lax.cummax)(x), want)
        close(dynjax.jacrev(lambda v: lax.cummin(v, reverse=True))(x),
              np.asarray(jax.jacrev(lambda v: jax.lax.cummin(v, reverse=True))(x)))


def test_cumulative_vmap():
    x = RNG.standard_normal((3, 6, 2))
    for name in ("cummax", "cummin", "cumlogsumexp"):
        f = getattr(lax, name)
        for in_axes in (0, 1, 2):
            got = dynjax.vmap(lambda v: f(v, 0, reverse=True), in_axes=in_axes)(x)
            want = jax.vmap(lambda v: getattr(jax.lax, name)(v, 0, reverse=True), in_axes=in_axes)(x)
            close(got, np.asarray(want))
    q = dynjax.qjit(dynjax.vmap(lambda v: lax.cummax(v, 0)), abstracted_axes=({1: "n"},))
    for n in (0, 5):
        close(q(x[:, :n]), np.maximum.accumulate(x[:, :n], 1))


# ----------------------------------------------------------------------------------------------
# associative_scan
# ----------------------------------------------------------------------------------------------
def test_associative_scan_matrix_products_against_jax():
    m = RNG.standard_normal((11, 2, 2))
    for rev in (False, True):
        want = np.asarray(jax.lax.associative_scan(jjnp.matmul, m, reverse=rev))
        close(lax.associative_scan(jnp.matmul, m, reverse=rev), want, 1e-10, 1e-10)
        q = dynjax.qjit(lambda m: lax.associative_scan(jnp.matmul, m, reverse=rev), abstracted_axes=({0: "n"},))
        close(q(m), want, 1e-10, 1e-10)
        for n in (0, 1, 3):
            close(q(m[:n]), np.asarray(jax.lax.associative_scan(jjnp.matmul, m[:n], reverse=rev))
                  if n else m[:0], 1e-10, 1e-10)
    # along another axis
    a = RNG.standard_normal((2, 9, 3))
    close(lax.associative_scan(jnp.add, a, axis=1), np.cumsum(a, 1))
    close(lax.associative_scan(jnp.add, a, axis=-1, reverse=True), np.cumsum(a[..., ::-1], -1)[..., ::-1])


def _affine(e1, e2):
    """Composition of x -> a x + b maps (a linear recurrence), a pytree of two arrays."""
    a1, b1 = e1
    a2, b2 = e2
    return a1 * a2, b1 * a2 + b2


def test_associative_scan_pytree_recurrence_grad_vmap():
    a, b = RNG.uniform(0.5, 1.0, 13), RNG.standard_normal(13)
    want = jax.lax.associative_scan(_affine, (a, b))
    got = lax.associative_scan(_affine, (a, b))
    close(got[0], np.asarray(want[0]), 1e-10, 1e-10)
    close(got[1], np.asarray(want[1]), 1e-10, 1e-10)
    # the recurrence x_t = a_t x_{t-1} + b_t from x = 0, by a loop
    x, ref = 0.0, []
    for t in range(13):
        x = a[t] * x + b[t]
        ref.append(x)
    close(got[1], np.array(ref), 1e-10, 1e-10)
    # dicts too
    d = lax.associative_scan(lambda p, q: {"s": p["s"] + q["s"], "m": jnp.maximum(p["m"], q["m"])},
                             {"s": b, "m": b})
    close(d["s"], np.cumsum(b))
    close(d["m"], np.maximum.accumulate(b))

    def loss(lib, a, b):
        return lib.sum(lib_scan(lib)(_affine, (a, b))[1] ** 2)

    def lib_scan(lib):
        return jax.lax.associative_scan if lib is jjnp else lax.associative_scan

    want_g = jax.grad(lambda a, b: loss(jjnp, a, b), argnums=(0, 1))(a, b)
    g = dynjax.qjit(dynjax.grad(lambda a, b: loss(jnp, a, b), argnums=(0, 1)),
                    abstracted_axes=({0: "n"}, {0: "n"}))
    for got_g, w in zip(g(a, b), want_g):
        close(got_g, np.asarray(w), 1e-9, 1e-9)
    for n in (0, 1, 6):
        want_n = jax.grad(lambda a, b: loss(jjnp, a, b), argnums=(0, 1))(a[:n], b[:n])
        for got_g, w in zip(g(a[:n], b[:n]), want_n):
            close(got_g, np.asarray(w), 1e-9, 1e-9)
    # vmap over a batch of recurrences
    A, B = RNG.uniform(0.5, 1.0, (3, 7)), RNG.standard_normal((3, 7))
    got_v = dynjax.vmap(lambda a, b: lax.associative_scan(_affine, (a, b))[1])(A, B)
    close(got_v, np.asarray(jax.vmap(lambda a, b: jax.lax.associative_scan(_affine, (a, b))[1])(A, B)), 1e-10, 1e-10)


def test_associative_scan_errors():
    with pytest.raises(ValueError, match="same length"):
        lax.associative_scan(jnp.add, (np.zeros(3), np.zeros(4)))
    with pytest.raises(ValueError, match="out of bounds"):
        lax.associative_scan(jnp.add, np.zeros(3), axis=2)
    with pytest.raises(TypeError, match="associative_scan"):
        lax.associative_scan(lambda p, q: p[0], (np.zeros(3), np.zeros(3)))


# ----------------------------------------------------------------------------------------------
# cumulative_sum / cumulative_prod (numpy 2)
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
def test_cumulative_sum_prod_against_jax(name):
    ours, theirs = getattr(jnp, name), getattr(jjnp, name)
    cases = [(np.array([True, False, True]), {}), (np.array([1, 2, 3], np.int8), dict(include_initial=True)),
             (np.array([1, 2, 3], np.uint8), dict(dtype=np.float32, include_initial=True)),
             (RNG.standard_normal((2, 3)), dict(axis=1, include_initial=True)),
             (RNG.standard_normal((2, 3)), dict(axis=-2)), (np.ones((2, 0)), dict(axis=1, include_initial=True))]
    for x, kw in cases:
        close(ours(x, **kw), np.asarray(theirs(x, **kw)))
    f = dynjax.qjit(lambda x: ours(x, axis=0, include_initial=True), abstracted_axes=({0: "n"},))
    for n in (0, 1, 5):
        x = RNG.standard_normal((n, 2))
        close(f(x), np.asarray(theirs(x, axis=0, include_initial=True)))
    x = RNG.standard_normal(4) + 2
    close(dynjax.grad(lambda v: jnp.sum(ours(v, include_initial=True) ** 2))(x),
          np.asarray(jax.grad(lambda v: jjnp.sum(theirs(v, include_initial=True) ** 2))(x)))
    with pytest.raises(ValueError, match="axis"):
        ours(np.ones((2, 3)))
    with pytest.raises(ValueError, match="scalar"):
        ours(np.float64(3.0))


def test_cumulative_errors():
    with pytest.raises(TypeError, match="cummax"):
        lax.cummax(np.array([True, False]))
    with pytest.raises(TypeError, match="cummin"):
        lax.cummin(np.array([1 + 2j]))
    with pytest.raises(ValueError, match="out of bounds"):
        lax.cummax(np.ones(3), axis=1)
    with pytest.raises(TypeError, match="cumlogsumexp"):
        lax.cumlogsumexp(np.arange(3))


def test_cumulative_cost():
    cost = dynjax.qjit(lambda x: lax.cummax(x, 1), abstracted_axes=({0: "n"},)).cost(np.ones((5, 3)))
    assert cost.at(n=7)["flops"] == 21


def test_extrema_in_padded_executables(monkeypatch):
    """A padded bucket executable fills the padding with the identity (-inf / +inf / the
    integer extremes), so reversed running extrema are exact."""
    monkeypatch.setenv("DYNJAX_TIERS", "padded")
    f = dynjax.qjit(lambda x, i: (lax.cummax(x, reverse=True), lax.cummin(x, reverse=True),
                                  lax.cummax(i, reverse=True)), abstracted_axes=({0: "n"}, {0: "n"}))
    for n in (0, 1, 5, 20):
        x = RNG.standard_normal(n) - 10
        i = RNG.integers(-5, 5, n).astype(np.int8)
        mx, mn, mi = f(x, i)
        np.testing.assert_array_equal(mx, np.maximum.accumulate(x[::-1])[::-1])
        np.testing.assert_array_equal(mn, np.minimum.accumulate(x[::-1])[::-1])
        np.testing.assert_array_equal(mi, np.maximum.accumulate(i[::-1])[::-1])
    assert f.cache_info()["padded_runs"] == 4


def test_cumlogsumexp_ties_jacobian():
    x = np.zeros(4)
    for rev in (False, True):
        close(dynjax.jacobian(lambda v: lax.cumlogsumexp(v, reverse=rev))(x),
              np.asarray(jax.jacobian(lambda v: jax.lax.cumlogsumexp(v, reverse=rev))(x)))


# ----------------------------------------------------------------------------------------------
# reduce_window and reduce
# ----------------------------------------------------------------------------------------------
MONOIDS = {"sum": (lax.add, jax.lax.add, 0.0), "prod": (lax.mul, jax.lax.mul, 1.0),
           "max": (lax.max, jax.lax.max, -np.inf), "min": (lax.min, jax.lax.min, np.inf)}
CONFIGS = [((2, 2), (1, 1), "VALID", None, None), ((3, 2), (2, 1), "SAME", None, None),
           ((2, 3), (2, 2), "SAME_LOWER", None, None),
           ((2, 2), (1, 2), ((1, 0), (0, 2)), (2, 1), (1, 2)), ((3, 1), (1, 1), ((-1, 2), (1, 1)), None, (2, 1))]


@pytest.mark.parametrize("kind", list(MONOIDS))
def test_reduce_window_against_jax_eager_and_compiled(kind):
    ours, theirs, init = MONOIDS[kind]
    x = ties(5, 6) + (0.5 if kind == "prod" else 0.0)

    def run(lib_rw, op, v):
        return [lib_rw(v, init, op, *cfg) for cfg in CONFIGS]
    want = [np.asarray(w) for w in run(jax.lax.reduce_window, theirs, x)]
    compiled = dynjax.qjit(lambda v: run(lax.reduce_window, ours, v))
    for got_e, got_c, w in zip(run(lax.reduce_window, ours, x), compiled(x), want):
        close(got_e, w)
        close(got_c, w)
    # a non-identity init is combined once per window (padding and holes do not count)
    for init2 in (2.0, -1.5):
        for cfg in CONFIGS[:4]:
            close(lax.reduce_window(x, init2, ours, *cfg), np.asarray(jax.lax.reduce_window(x, init2, theirs, *cfg)))
    # integers
    xi = RNG.integers(-4, 5, (4, 5)).astype(np.int32)
    for cfg in CONFIGS[:3]:
        ident = {"sum": 0, "prod": 1, "max": np.iinfo(np.int32).min, "min": np.iinfo(np.int32).max}[kind]
        want_i = np.asarray(jax.lax.reduce_window(xi, np.int32(ident), theirs, *cfg))
        close(lax.reduce_window(xi, np.int32(ident), ours, *cfg), want_i)
        close(dynjax.qjit(lambda v: lax.reduce_window(v, np.int32(ident), ours, *cfg))(xi), want_i)


def _reference(kind, x, window, strides, pads, base, wdil):
    """reduce_window by loops over windows (padding and holes skipped), for dynamic shapes."""
    ident = {"sum": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}[kind]
    fn = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[kind]
    n = x.shape[0]
    dil = (n - 1) * base + 1 if n else 0
    padded = dil + pads[0] + pads[1]
    span = (window - 1) * wdil + 1
    m = max(padded - span + strides, 0) // strides
    out = np.full((m,) + x.shape[1:], ident)
    for i in range(m):
        for k in range(window):
            p = i * strides + k * wdil - pads[0]    # a position in the dilated operand
            if 0 <= p < dil and p % base == 0:
                out[i] = fn(out[i], x[p // base])
    return out


@pytest.mark.parametrize("kind", list(MONOIDS))
def test_reduce_window_dynamic_sizes_one_trace(kind):
    ours, _, init = MONOIDS[kind]
    cfgs = [(3, 1, (0, 0), 1, 1), (2, 2, (1, 2), 2, 2), (3, 2, (2, -1), 1, 1)]
    f = dynjax.qjit(lambda x: [lax.reduce_window(x, init, ours, (w, 1), (s, 1), (p, (0, 0)), (b, 1), (d, 1))
                               for w, s, p, b, d in cfgs], abstracted_axes=({0: "n"},))
    same = dynjax.qjit(lambda x: lax.reduce_window(x, init, ours, (3, 2), (2, 1), "SAME"), abstracted_axes=({0: "n"},))
    for n in (0, 1, 2, 7):
        x = RNG.standard_normal((n, 2))
        for got, (w, s, p, b, d) in zip(f(x), cfgs):
            close(got, _reference(kind, x, w, s, p, b, d), 1e-12, 1e-12)
            close(lax.reduce_window(x, init, ours, (w, 1), (s, 1), (p, (0, 0)), (b, 1), (d, 1)),
                  _reference(kind, x, w, s, p, b, d), 1e-12, 1e-12)
        close(same(x), np.asarray(jax.lax.reduce_window(x, init, MONOIDS[kind][1], (3, 2), (2, 1), "SAME")))
    assert f.cache_info()["traces"] == 1 and same.cache_info()["traces"] == 1


def _pools(lib, l):
    """MaxPool, AvgPool (SAME, divided by the window counts) and SumPool, stax style, NHWC."""
    def f(x):
        mx = l.reduce_window(x, -np.inf, l.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
        ones = lib.ones(x.shape[1:3] + (1,))
        counts = l.reduce_window(ones, 0.0, l.add, (2, 2, 1), (1, 1, 1), "SAME")
        avg = l.reduce_window(x, 0.0, l.add, (1, 2, 2, 1), (1, 1, 1, 1), "SAME") / counts
        sm = l.reduce_window(x, 0.0, l.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return lib.sum(mx ** 2) + lib.sum(avg * lib.tanh(avg)) + lib.sum(sm ** 3)
    return f


def test_pooling_grad_against_jax_dynamic_spatial_sizes():
    g = dynjax.qjit(dynjax.grad(_pools(jnp, lax)), abstracted_axes=({1: "h", 2: "w"},))
    for h, w in ((5, 6), (1, 1), (2, 3), (0, 4)):
        x = ties(2, h, w, 2)
        close(g(x), np.asarray(jax.grad(_pools(jjnp, jax.lax))(x)), 1e-10, 1e-10)
    assert g.cache_info()["traces"] == 1
    x = ties(2, 4, 5, 2)
    close(dynjax.grad(_pools(jnp, lax))(x), np.asarray(jax.grad(_pools(jjnp, jax.lax))(x)), 1e-10, 1e-10)


def test_reduce_window_grad_where_jax_has_none_against_finite_differences():
    """Max with window dilation and products: jax.grad refuses them; central differences."""
    x = RNG.standard_normal((6, 5))
    fns = [lambda v: lax.reduce_window(v, -np.inf, lax.max, (2, 2), (1, 1), ((1, 0), (0, 1)), (1, 2), (2, 1)),
           lambda v: lax.reduce_window(v, 1.0, lax.mul, (2, 3), (2, 1), "SAME")]
    for fn in fns:
        W = RNG.standard_normal(np.shape(fn(x)))
        loss = lambda v: jnp.sum(fn(v) * W)  # noqa: E731
        g = dynjax.grad(loss)(x)
        gc = dynjax.qjit(dynjax.grad(loss))(x)
        fd = np.zeros_like(x)
        for idx in np.ndindex(*x.shape):
            e = np.zeros_like(x)
            e[idx] = 1e-6
            fd[idx] = (loss(x + e) - loss(x - e)) / 2e-6
        close(g, fd, 1e-5, 1e-6)
        close(gc, g, 1e-12, 1e-12)


def test_reduce_window_vmap_and_jvp():
    X = RNG.standard_normal((3, 4, 5))
    for axis in (0, 1, 2):
        got = dynjax.vmap(lambda v: lax.reduce_window(v, -np.inf, lax.max, (2, 2), (1, 2), "SAME"), in_axes=axis)(X)
        want = jax.vmap(lambda v: jax.lax.reduce_window(v, -np.inf, jax.lax.max, (2, 2), (1, 2), "SAME"),
                        in_axes=axis)(X)
        close(got, np.asarray(want))
    t = RNG.standard_normal(X.shape)
    f = lambda lib_l: (lambda v: lib_l.reduce_window(v, 0.0, lib_l.add, (2, 1, 3), (1, 1, 2), "SAME"))  # noqa: E731
    p, tan = dynjax.jvp(f(lax), (X,), (t,))
    jp, jtan = jax.jvp(f(jax.lax), (X,), (t,))
    close(p, np.asarray(jp))
    close(tan, np.asarray(jtan))
    q = dynjax.qjit(dynjax.vmap(lambda v: lax.reduce_window(v, 0.0, lax.add, (2,), (1,), "SAME")),
                    abstracted_axes=({1: "n"},))
    for n in (0, 1, 5):
        close(q(X[0, :, :n]), np.asarray(jax.vmap(lambda v: jax.lax.reduce_window(
            v, 0.0, jax.lax.add, (2,), (1,), "SAME"))(X[0, :, :n])))


def test_reduce_against_jax():
    x = RNG.standard_normal((3, 4, 5))
    for kind, (ours, theirs, init) in MONOIDS.items():
        for dims in ((0,), (1, 2), (0, 1, 2)):
            for init2 in (init, 0.5):
                close(lax.reduce(x, init2, ours, dims), np.asarray(jax.lax.reduce(x, init2, theirs, dims)))
    close(lax.reduce(x, 0.0, jnp.add, (1,)), x.sum(1))
    close(lax.reduce(x, -np.inf, jnp.maximum, (2,)), x.max(2))
    f = dynjax.qjit(lambda v: lax.reduce(v, 0.0, lax.add, (0,)), abstracted_axes=({0: "n"},))
    for n in (0, 3):
        close(f(x[:n]), x[:n].sum(0))


def test_reduce_window_errors_and_cost():
    x = np.ones((4, 4))
    with pytest.raises(NotImplementedError, match="lax.add, lax.mul, lax.max and lax.min"):
        lax.reduce_window(x, 0.0, lambda a, b: a + 2 * b, (2, 2), (1, 1), "VALID")
    with pytest.raises(NotImplementedError, match="lax.add"):
        lax.reduce(x, 0.0, lambda a, b: a - b, (0,))
    with pytest.raises(NotImplementedError, match="single operand"):
        lax.reduce_window((x, x), (0.0, 0.0), lax.add, (2, 2), (1, 1), "VALID")
    with pytest.raises(TypeError, match="window_dimensions"):
        lax.reduce_window(x, 0.0, lax.add, (2,), (1, 1), "VALID")
    with pytest.raises(ValueError, match="window_strides"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (0, 1), "VALID")
    with pytest.raises(ValueError, match="padding"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), ((1, 1),))
    with pytest.raises(ValueError, match="negative padding"):
        lax.reduce_window(x, 0.0, lax.add, (1, 1), (1, 1), ((-3, -2), (0, 0)))
    with pytest.raises(RuntimeError, match="padding"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "FULL")
    cost = dynjax.qjit(lambda v: lax.reduce_window(v, 0.0, lax.add, (3,), (1,), "VALID"),
                       abstracted_axes=({0: "n"},)).cost(np.ones(5))
    # 3 additions per result (the rest is the scalar size arithmetic)
    assert cost.at(n=10)["flops"] - cost.at(n=9)["flops"] == 3
