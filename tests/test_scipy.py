"""The special-function primitives (``dynjax.lax.special``) and ``dynjax.scipy`` (special,
stats, linalg) against scipy and jax: values with special values (infinities, NaN, signed
zeros, poles, large arguments), float32 / float64, eager against compiled at dynamic and static
sizes (0, 1, n; one trace), derivatives against jax and finite differences, vmap, and argument
errors. (The primitives are compared eager-vs-compiled here, with tolerances, rather than bit
for bit in test_eager_vs_compiled.py.)"""
from __future__ import annotations

import jax
import jax.scipy as jsp
import numpy as np
import pytest
import scipy.linalg as sla
import scipy.special as sc
import scipy.stats as ss

import dynjax
import dynjax.numpy as jnp
from dynjax import lax
from dynjax.lax import special_series
from dynjax.scipy import linalg as L
from dynjax.scipy import special as S
from dynjax.scipy import stats

jax.config.update("jax_enable_x64", True)
RTOL = {np.float64: 1e-13, np.float32: 3e-6}


def close(got, want, rtol, atol=0.0):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def same_specials(got, want):
    """NaN where the other is NaN; the same infinities and signed zeros."""
    got, want = np.asarray(got), np.asarray(want)
    assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
    inf = np.isinf(want) | np.isinf(got)
    assert np.array_equal(got[inf], want[inf]), (got[inf], want[inf])
    zero = want == 0
    assert np.array_equal(np.signbit(got[zero]), np.signbit(want[zero])) or not zero.any()


X_SPECIAL = np.array([-np.inf, -1e300, -40.0, -2.0, -1.5, -1.0, -0.5, -0.0, 0.0, 1e-300, 0.5, 1.0, 2.0,
                      2.5, 29.9, 30.1, 40.0, 700.0, 1e300, np.inf, np.nan])
U_SPECIAL = np.array([-1.0, -0.999, -0.5, -0.0, 0.0, 1e-10, 0.3, 0.999999, 1.0, 1.5, -2.0, np.nan])
UNARY = [("erf", sc.erf, X_SPECIAL), ("erfc", sc.erfc, X_SPECIAL), ("erf_inv", sc.erfinv, U_SPECIAL),
         ("lgamma", sc.gammaln, X_SPECIAL), ("digamma", sc.psi, X_SPECIAL),
         ("bessel_i0e", sc.i0e, X_SPECIAL), ("bessel_i1e", sc.i1e, X_SPECIAL)]


def unary_points(special, dt, rng):
    lo, hi = (-0.99, 0.99) if special is U_SPECIAL else (-12.0, 40.0)
    return np.concatenate([special, rng.uniform(lo, hi, 60)]).astype(dt)


# ----------------------------------------------------------------------------------------------
# the primitives: eager (scipy + XLA's special values) against scipy, jax and compiled
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("name,ref,special", UNARY, ids=[u[0] for u in UNARY])
def test_unary_primitives(name, ref, special, dt):
    rng = np.random.default_rng(0)
    x = unary_points(special, dt, rng)
    f = getattr(lax, name)
    eager = f(x)
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64)).astype(dt)
    finite = np.isfinite(want) & np.isfinite(x)
    # lgamma and digamma near their zeros are accurate in absolute terms
    atol = 4 * np.finfo(dt).eps if name in ("lgamma", "digamma") else 0
    close(eager[finite], want[finite], RTOL[dt], atol)
    compiled = dynjax.qjit(f, abstracted_axes={0: "n"})(x)
    same_specials(compiled, eager)
    # XLA's expansions: a few ulps, erf_inv near +-1 a few hundred (4e-13 at 0.999999)
    tol = 1e-12 if dt == np.float64 else 2e-5
    close(compiled, eager, tol, atol=8 * np.finfo(dt).eps)
    jx = np.asarray(getattr(jax.lax, name)(x))
    same_specials(eager, jx)
    close(eager, jx, tol, atol=8 * np.finfo(dt).eps)


BIN_A = np.array([0.0, 0.0, 1.0, -1.0, 2.0, np.inf, 2.0, 2.0, np.nan, 1.0, 0.5, 3.0, 1e-3, 50.0, 500.0, 1.0])
BIN_X = np.array([0.0, 1.0, 0.0, 1.0, -1.0, 1.0, np.inf, 3.0, 1.0, np.nan, 1e-300, 1e3, 1e-3, 49.0, 520.0, 1e-20])
ZETA_X = np.array([1.0, 1.0, 0.0, 0.0, 2.0, 3.0, 2.5, -2.0, -3.0, np.inf, np.inf, 2.0, 2.0, np.nan, 4.0, 1.5])
ZETA_Q = np.array([np.nan, -3.0, -2.0, 0.5, -1.0, -2.0, -1.0, -1.0, -1.0, 1.0, 2.0, np.inf, -1.5, 1.0, -np.inf, 7.0])
PG_M = np.array([0.0, 1.0, 2.0, 3.0, 1.0, 2.0, -1.0, 1.5, np.inf, np.nan, 1.0, 4.0, 0.0, 2.0, 1.0, 5.0])
PG_X = np.array([1.0, 1.0, 2.0, 0.0, -1.0, -2.0, 1.0, 1.0, 1.0, 1.0, np.inf, -1.0, -0.0, 0.3, 40.0, 7.5])
BINARY = [("igamma", sc.gammainc, BIN_A, BIN_X), ("igammac", sc.gammaincc, BIN_A, BIN_X),
          ("zeta", sc.zeta, ZETA_X, ZETA_Q), ("polygamma", None, PG_M, PG_X)]


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("name,ref,xs,ys", BINARY, ids=[b[0] for b in BINARY])
def test_binary_primitives(name, ref, xs, ys, dt):
    rng = np.random.default_rng(1)
    if name == "polygamma":
        rx, ry = rng.integers(0, 4, 40).astype(float), rng.uniform(0.1, 20, 40)
    elif name == "zeta":
        rx, ry = rng.uniform(1.1, 8, 40), rng.uniform(-3.5, 20, 40)
    else:
        rx, ry = rng.uniform(0.05, 30, 40), rng.uniform(0, 40, 40)
    x, y = np.concatenate([xs, rx]).astype(dt), np.concatenate([ys, ry]).astype(dt)
    f = getattr(lax, name)
    eager = f(x, y)
    if ref is not None:
        with np.errstate(all="ignore"):
            want = ref(rx, ry).astype(dt)
        close(eager[len(xs):], want, RTOL[dt] * (1e3 if name.startswith("igamma") else 10), atol=1e-300)
    compiled = dynjax.qjit(f, abstracted_axes=({0: "n"}, {0: "n"}))(x, y)
    same_specials(compiled, eager)
    # float32: the series / continued fraction of igamma accumulate rounding (1e-4 relative)
    tol = 1e-12 if dt == np.float64 else 1e-4 if name.startswith("igamma") else 1e-5
    atol = 2e-6 if dt == np.float32 and name.startswith("igamma") else tol * 1e-3
    close(compiled, eager, tol, atol=atol)
    jx = np.asarray(getattr(jax.lax, name)(x, y))
    same_specials(eager, jx)
    close(eager, jx, tol, atol=atol)


def test_igamma_series_against_scipy_on_a_wide_grid():
    """The algorithm of the compiled igamma, run eagerly: P and Q to 1e-12 relative (Q in its
    tail too) for a up to 1000, both sides of x = a + 1."""
    rng = np.random.default_rng(2)
    a = np.concatenate([rng.uniform(0.01, 5, 300), rng.uniform(5, 1000, 300)])
    x = a * rng.uniform(0.2, 2.0, a.size)
    p, q = special_series.igamma_igammac(a, x)
    ep, eq = sc.gammainc(a, x), sc.gammaincc(a, x)
    big = a > 5
    np.testing.assert_allclose(p[~big], ep[~big], rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(q[~big], eq[~big], rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(p[big], ep[big], rtol=3e-12, atol=1e-300)
    np.testing.assert_allclose(q[big], eq[big], rtol=3e-12, atol=1e-300)
    xi = np.concatenate([rng.uniform(-60, 60, 200), [0.0, 30.0, -30.0, 30.000001, 1e4]])
    np.testing.assert_allclose(special_series.bessel_i0e(xi), sc.i0e(xi), rtol=4e-15)


def test_primitives_at_sizes_and_static_shapes():
    def program(x, a):
        return (lax.erf(x), lax.erfc(x), lax.lgamma(a), lax.digamma(a), lax.bessel_i0e(x),
                lax.bessel_i1e(x), lax.igamma(a, a), lax.igammac(a, x * x), lax.zeta(a + 1.5, a),
                lax.polygamma(np.float64(1.0), a), lax.erf_inv(lax.tanh(x)))
    dyn = dynjax.qjit(program, abstracted_axes=({0: "n"}, {0: "n"}))
    static = dynjax.qjit(program)
    rng = np.random.default_rng(3)
    for n in (0, 1, 6):
        x, a = rng.normal(size=n) * 3, rng.uniform(0.1, 9, n)
        eager = program(x, a)
        for got in (dyn(x, a), static(x, a)):
            for g, e in zip(got, eager):
                close(g, e, 1e-12, atol=1e-15)
    # rank 2, and a rank-0 operand of a binary primitive broadcasting
    x2 = rng.uniform(0.5, 4, (3, 4))
    f2 = dynjax.qjit(lambda x: (lax.igamma(np.float64(2.0), x), lax.zeta(x + 1.0, np.float64(1.0)), lax.lgamma(x)),
                     abstracted_axes={0: "n", 1: "m"})
    for g, e in zip(f2(x2), (sc.gammainc(2.0, x2), sc.zeta(x2 + 1.0, 1.0), sc.gammaln(x2))):
        close(g, e, 1e-12)
    assert dyn.cache_info()["traces"] == 1


def test_16_bit_floats_compute_in_float32():
    x = np.array([0.25, 1.5, 3.0, -2.0], np.float16)
    for f in (lax.erf, lax.lgamma, lax.bessel_i0e, lax.bessel_i1e):
        eager = f(x)
        assert eager.dtype == np.float16
        close(dynjax.qjit(f)(x), eager, 1e-3)
    assert lax.igamma(x, x).dtype == np.float16


PRIM_GRADS = [
    (lax.erf, jax.lax.erf, 2.0), (lax.erfc, jax.lax.erfc, 2.0), (lax.erf_inv, jax.lax.erf_inv, 0.9),
    (lax.lgamma, jax.lax.lgamma, 5.0), (lax.digamma, jax.lax.digamma, 5.0),
    (lax.bessel_i0e, jax.lax.bessel_i0e, 5.0), (lax.bessel_i1e, jax.lax.bessel_i1e, 5.0),
    (lambda x: lax.igamma(np.float64(2.5), x), lambda x: jax.lax.igamma(2.5, x), 5.0),
    (lambda x: lax.igammac(np.float64(0.5), x), lambda x: jax.lax.igammac(0.5, x), 5.0),
    (lambda q: lax.zeta(np.float64(3.0), q), "zeta", 5.0),   # JAX has no derivative in q
    (lambda x: lax.polygamma(np.float64(2.0), x), lambda x: jax.lax.polygamma(2.0, x), 5.0),
]


@pytest.mark.parametrize("k", range(len(PRIM_GRADS)))
def test_primitive_derivatives_against_jax(k):
    f, jf, hi = PRIM_GRADS[k]
    x = np.linspace(0.1, hi, 9) if hi != 0.9 else np.linspace(-0.9, 0.9, 9)
    got = dynjax.vmap(dynjax.grad(f))(x)
    if jf == "zeta":   # d zeta(s, q) / dq = -s zeta(s + 1, q)
        close(got, -3.0 * sc.zeta(4.0, x), 1e-13)
        return
    close(got, np.asarray(jax.vmap(jax.grad(jf))(x)), 1e-11, atol=1e-14)
    if f is lax.bessel_i1e:   # the derivative at 0 is 1/2
        assert dynjax.grad(f)(0.0) == 0.5


def test_derivatives_not_implemented_raise():
    for f in (lambda s: lax.zeta(s, 2.0), lambda m: lax.polygamma(m, 2.0)):
        with pytest.raises(NotImplementedError, match="first operand"):
            dynjax.grad(f)(2.0)


def test_primitive_argument_errors():
    with pytest.raises(TypeError, match="erf needs real floating-point"):
        lax.erf(np.array([1, 2]))
    with pytest.raises(TypeError, match="igamma"):
        lax.igamma(np.ones(2), np.ones(2, np.float32))
    with pytest.raises(TypeError, match="incompatible shapes"):
        lax.zeta(np.ones(2), np.ones(3))
    with pytest.raises(TypeError, match="lgamma needs real floating-point"):
        dynjax.make_jaxpr(lax.lgamma)(np.ones(2, np.complex128))


def test_vmap_of_the_primitives():
    rng = np.random.default_rng(4)
    a, x = rng.uniform(0.5, 5, (3, 4)), rng.uniform(0.1, 6, (3, 4))
    close(dynjax.vmap(lax.igamma)(a, x), sc.gammainc(a, x), 1e-13)
    close(dynjax.vmap(lax.igamma, in_axes=(None, 0))(a[0], x), sc.gammainc(a[0], x), 1e-13)
    close(dynjax.vmap(lax.lgamma, in_axes=1, out_axes=1)(a), sc.gammaln(a), 1e-13)


# ----------------------------------------------------------------------------------------------
# dynjax.scipy.special
# ----------------------------------------------------------------------------------------------
SPECIAL_FNS = ["erf", "erfc", "erfinv", "gammaln", "digamma", "expit", "logit", "ndtr", "ndtri",
               "log_ndtr", "i0e", "i1e", "i0", "i1"]


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("name", SPECIAL_FNS)
def test_scipy_special_unary_against_scipy_and_jax(name, dt):
    rng = np.random.default_rng(5)
    if name in ("erfinv", "logit", "ndtri"):
        x = np.concatenate([[0.0, 1.0, -0.0, 0.5, 1e-300, 1e-20, 1e-8, 1 - 1e-12, np.nan, 1.5, -0.5],
                            rng.uniform(0, 1, 40)])
        if name == "erfinv":
            x = 2 * x - 1
    else:
        x = np.concatenate([[-np.inf, -1e5, -40.0, -20.5, -19.5, -5.0, -0.0, 0.0, 5.0, 7.9, 8.1, 30.0,
                             np.inf, np.nan], rng.uniform(-10, 10, 40)])
    x = x.astype(dt)
    got = getattr(S, name)(x)
    with np.errstate(all="ignore"):
        wide = x.astype(np.float64)
        want = getattr(sc, name)(wide)
        if name == "log_ndtr":   # scipy's log(ndtr(x)) loses the digits of log1p(-ndtr(-x)) for x > 0
            want = np.where(wide > 0, np.log1p(-sc.ndtr(-wide)), want)
        want = want.astype(dt)
    assert got.dtype == dt
    jx = np.asarray(getattr(jsp.special, name)(x))
    same_specials(got, jx)   # JAX's special values (signed zeros of i1e, NaN at the poles)
    tol = {np.float64: 2e-11 if name == "log_ndtr" else 1e-13, np.float32: 5e-6}[dt]
    tiny = float(np.finfo(dt).tiny)   # float32 subnormals: XLA flushes them
    ok = np.isfinite(want) & np.isfinite(got)
    atol = 4 * np.finfo(dt).eps if name in ("gammaln", "digamma") else tiny
    close(got[ok], want[ok], tol, atol=atol)
    # against JAX: its erf_inv near +-1 and (float32) its log(ndtr) above 0 are less accurate
    jtol = {"erfinv": 1e-10, "ndtri": 1e-10, "log_ndtr": 1e-10}.get(name, tol) if dt == np.float64 else 5e-5
    keep = ok & ~((wide > 0) if name == "log_ndtr" else np.zeros(x.shape, bool))
    close(got[keep], jx[keep], jtol, atol=atol)


def test_scipy_special_binary_and_options():
    a = np.array([0.5, 1.0, 2.0, 7.5, 30.0])
    x = np.array([0.1, 1.0, 3.0, 7.0, 25.0])
    close(S.gammainc(a, x), sc.gammainc(a, x), 1e-13)
    close(S.gammaincc(a, x), sc.gammaincc(a, x), 1e-13)
    close(S.betaln(a, x), sc.betaln(a, x), 1e-12)
    close(S.zeta(a + 1.0, x), sc.zeta(a + 1.0, x), 1e-13)
    close(S.zeta(np.array([2.0, 3.0, 1.0])), sc.zeta(np.array([2.0, 3.0, 1.0])), 1e-14)
    close(S.polygamma(np.array([0, 1, 3]), np.array([0.5, 2.0, 7.0])), sc.polygamma([0, 1, 3], [0.5, 2.0, 7.0]), 1e-13)
    # integers promote to float64; scalars broadcast
    assert S.gammaln(np.array([3, 4])).dtype == np.float64
    close(S.gammainc(2, x), sc.gammainc(2.0, x), 1e-13)
    # xlogy / xlog1py: 0 at x == 0 whatever y
    xs, ys = np.array([0.0, 0.0, 2.0, 0.5, 0.0]), np.array([0.0, 3.0, 0.5, 0.0, -1.0])
    close(S.xlogy(xs, ys), sc.xlogy(xs, ys), 1e-15)
    close(S.xlog1py(xs, ys), sc.xlog1py(xs, ys), 1e-15)
    with pytest.raises(ValueError, match="series_order"):
        S.log_ndtr(1.0, series_order=40)


def test_logsumexp_b_return_sign_against_scipy():
    rng = np.random.default_rng(6)
    a, b = rng.normal(size=(3, 4)) * 30, rng.normal(size=(3, 4))
    for axis in (None, 0, 1):
        got = S.logsumexp(a, axis=axis, b=b, return_sign=True)
        want = sc.logsumexp(a, axis=axis, b=b, return_sign=True)
        close(got[0], np.asarray(want[0], np.float64), 1e-13)
        close(got[1], np.asarray(want[1], np.float64), 0)
    close(S.logsumexp(np.array([1000.0, 1000.0])), np.float64(1000 + np.log(2)), 0)


SPECIAL_GRADS = [
    ("ndtr", np.linspace(-30, 8, 9)), ("log_ndtr", np.array([-1e3, -35.0, -20.5, -19.5, -3.0, 0.0, 4.0, 7.9, 8.1, 30.0])),
    ("ndtri", np.array([1e-200, 1e-20, 1e-4, 0.1, 0.5, 0.9, 0.999])), ("logit", np.linspace(0.05, 0.95, 7)),
    ("expit", np.linspace(-30, 30, 7)), ("gammaln", np.linspace(0.2, 9, 7)), ("i0", np.linspace(-5, 5, 6)),
    ("betaln", None), ("xlogy", None), ("xlog1py", None), ("gammainc", None),
]


@pytest.mark.parametrize("name,x", SPECIAL_GRADS, ids=[g[0] for g in SPECIAL_GRADS])
def test_scipy_special_derivatives_against_jax(name, x):
    f, jf = getattr(S, name), getattr(jsp.special, name)
    if x is None:   # binary: the derivative in each operand, at 0 for xlogy's first too
        xs, ys = np.array([0.0, 0.5, 2.0, 3.0]), np.array([0.5, 1.5, 2.0, 4.0])
        if name == "gammainc":
            got = dynjax.vmap(dynjax.grad(lambda y: f(2.0, y)))(ys)
            close(got, np.asarray(jax.vmap(jax.grad(lambda y: jf(2.0, y)))(ys)), 1e-12)
            return
        for argnums in (0, 1):
            got = dynjax.vmap(dynjax.grad(f, argnums=argnums))(xs + (name == "betaln"), ys)
            want = jax.vmap(jax.grad(jf, argnums=argnums))(xs + (name == "betaln"), ys)
            close(got, np.asarray(want), 1e-12, atol=1e-15)
        return
    got = dynjax.vmap(dynjax.grad(f))(x)
    close(got, np.asarray(jax.vmap(jax.grad(jf))(x)), 1e-10, atol=1e-300)


def test_scipy_special_compiled_at_dynamic_sizes():
    def program(x, p):
        return (S.ndtr(x), S.log_ndtr(x), S.ndtri(p), S.logit(p), S.expit(x), S.xlogy(p, x * x),
                S.gammaln(x), S.i0(x), S.logsumexp(x), S.betaln(p + 1.0, p + 2.0), S.zeta(x * x + 1.5))
    f = dynjax.qjit(program, abstracted_axes=({0: "n"}, {0: "n"}))
    rng = np.random.default_rng(7)
    for n in (0, 1, 6):
        x, p = rng.normal(size=n) * 10, rng.uniform(0, 1, n)
        for g, e in zip(f(x, p), program(x, p)):
            close(g, e, 1e-12, atol=1e-300)
    assert f.cache_info()["traces"] == 1


# ----------------------------------------------------------------------------------------------
# dynjax.scipy.stats
# ----------------------------------------------------------------------------------------------
def test_norm_against_scipy():
    rng = np.random.default_rng(8)
    x = np.concatenate([rng.normal(size=20) * 5, [-60.0, 60.0, np.inf, -np.inf]])
    for fn in ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"):
        for loc, scale in ((0, 1), (1.5, 2.0), (np.array([0.5]), np.array([3.0]))):
            got = getattr(stats.norm, fn)(x, loc, scale)
            with np.errstate(all="ignore"):
                want = getattr(ss.norm, fn)(x, loc, scale)
            close(got, want, 2e-11 if "log" in fn else 1e-13, atol=1e-300)
    q = np.array([0.0, 1e-30, 0.01, 0.5, 0.7, 1 - 1e-10, 1.0])
    close(stats.norm.ppf(q, 1.5, 2.0), ss.norm.ppf(q, 1.5, 2.0), 1e-13)
    close(stats.norm.isf(q, 1.5, 2.0), ss.norm.isf(q, 1.5, 2.0), 1e-13)
    x32 = x.astype(np.float32)
    assert stats.norm.logpdf(x32).dtype == np.float32


def test_norm_compiled_and_grad():
    f = dynjax.qjit(lambda x, loc, scale: (stats.norm.logpdf(x, loc, scale), stats.norm.cdf(x, loc, scale),
                                           stats.norm.ppf(stats.norm.cdf(x, loc, scale), loc, scale)),
                    abstracted_axes=({0: "n"}, None, None))
    for n in (0, 1, 5):
        x = np.linspace(-3, 3, n)
        lp, c, back = f(x, 0.5, 1.5)
        close(lp, ss.norm.logpdf(x, 0.5, 1.5), 1e-13)
        close(c, ss.norm.cdf(x, 0.5, 1.5), 1e-13)
        close(back, x, 1e-12, atol=1e-13)
    g = dynjax.grad(lambda loc, scale: jnp.sum(stats.norm.logpdf(np.arange(3.0), loc, scale)), argnums=(0, 1))
    jg = jax.grad(lambda loc, scale: jax.numpy.sum(jsp.stats.norm.logpdf(np.arange(3.0), loc, scale)), argnums=(0, 1))
    for a, b in zip(g(0.3, 1.7), jg(0.3, 1.7)):
        close(a, np.asarray(b), 1e-13)


def test_multivariate_normal_against_scipy_and_jax():
    rng = np.random.default_rng(9)
    k = 4
    a = rng.normal(size=(k, k))
    cov = a @ a.T + k * np.eye(k)
    mean = rng.normal(size=k)
    x = rng.normal(size=(2, 3, k))
    close(stats.multivariate_normal.logpdf(x, mean, cov), ss.multivariate_normal.logpdf(x, mean, cov), 1e-12)
    close(stats.multivariate_normal.logpdf(x[0, 0], mean, cov),
          np.float64(ss.multivariate_normal.logpdf(x[0, 0], mean, cov)), 1e-12)
    close(stats.multivariate_normal.pdf(x[0], mean, cov), ss.multivariate_normal.pdf(x[0], mean, cov), 1e-12)
    g = dynjax.grad(lambda m: jnp.sum(stats.multivariate_normal.logpdf(x[0], m, cov)))(mean)
    jg = jax.grad(lambda m: jax.numpy.sum(jsp.stats.multivariate_normal.logpdf(x[0], m, cov)))(mean)
    close(g, np.asarray(jg), 1e-12)
    # compiled: a dynamic number of rows and a dynamic dimension k
    f = dynjax.qjit(stats.multivariate_normal.logpdf, abstracted_axes=({0: "r", 1: "k"}, {0: "k"}, {0: "k", 1: "k"}))
    for r, kk in ((0, 2), (1, 1), (5, 3)):
        aa = rng.normal(size=(kk, kk))
        c = aa @ aa.T + kk * np.eye(kk)
        m, xx = rng.normal(size=kk), rng.normal(size=(r, kk))
        close(f(xx, m, c), np.asarray(ss.multivariate_normal.logpdf(xx, m, c)).reshape(r), 1e-12)
    assert f.cache_info()["traces"] == 1
    with pytest.raises(NotImplementedError, match="allow_singular"):
        stats.multivariate_normal.logpdf(x, mean, cov, allow_singular=True)


# ----------------------------------------------------------------------------------------------
# dynjax.scipy.linalg
# ----------------------------------------------------------------------------------------------
def test_solve_triangular_against_scipy():
    rng = np.random.default_rng(10)
    a = rng.normal(size=(4, 4)) + 4 * np.eye(4)
    b = rng.normal(size=(4, 2))
    for trans in (0, 1, 2, "N", "T", "C"):
        for lower in (True, False):
            for unit in (True, False):
                got = L.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)
                close(got, sla.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit), 1e-12)
    close(L.solve_triangular(a, b[:, 0], lower=True), sla.solve_triangular(a, b[:, 0], lower=True), 1e-12)
    ac = a + 1j * rng.normal(size=(4, 4))
    close(L.solve_triangular(ac, b.astype(complex), trans="C", lower=True),
          sla.solve_triangular(ac, b.astype(complex), trans="C", lower=True), 1e-12)
    with pytest.raises(ValueError, match="trans"):
        L.solve_triangular(a, b, trans=3)
    with pytest.raises(ValueError, match="square"):
        L.solve_triangular(np.ones((2, 3)), b)


def test_cholesky_factor_and_solve():
    rng = np.random.default_rng(11)
    a = rng.normal(size=(5, 5))
    spd = a @ a.T + 5 * np.eye(5)
    b = rng.normal(size=(5, 3))
    for lower in (True, False):
        c, low = L.cho_factor(spd, lower=lower)
        assert low is lower
        jc, _ = jsp.linalg.cho_factor(spd, lower=lower)
        close(c, np.asarray(jc), 1e-13, atol=1e-15)
        close(L.cho_solve((c, low), b), np.linalg.solve(spd, b), 1e-12)
    f = dynjax.qjit(lambda m, rhs: L.cho_solve(L.cho_factor(m), rhs), abstracted_axes=({0: "n", 1: "n"}, {0: "n"}))
    for n in (0, 1, 4):
        aa = rng.normal(size=(n, n))
        m = aa @ aa.T + (n + 1) * np.eye(n)
        rhs = rng.normal(size=(n, 2))
        close(f(m, rhs), np.linalg.solve(m, rhs) if n else np.zeros((0, 2)), 1e-12, atol=1e-14)
    # the derivative along symmetric directions (dynjax symmetrizes the tangent of cholesky's
    # operand, JAX's gradient is not symmetric: they agree on symmetric perturbations)
    g = dynjax.grad(lambda m: jnp.sum(L.cho_solve(L.cho_factor(m, lower=True), b)))(spd)
    jg = jax.grad(lambda m: jax.numpy.sum(jsp.linalg.cho_solve(jsp.linalg.cho_factor(m, lower=True), b)))(spd)
    d = rng.normal(size=(5, 5))
    d = d + d.T
    np.testing.assert_allclose(np.sum(g * d), np.sum(np.asarray(jg) * d), rtol=1e-10)
    fd = (np.sum(np.linalg.solve(spd + 1e-6 * d, b)) - np.sum(np.linalg.solve(spd - 1e-6 * d, b))) / 2e-6
    np.testing.assert_allclose(np.sum(g * d), fd, rtol=1e-6)


def test_lu_against_scipy():
    rng = np.random.default_rng(12)
    a = rng.normal(size=(5, 5))
    p, l, u = L.lu(a)
    sp, sl, su = sla.lu(a)
    close(p, sp, 0)
    close(l, sl, 1e-13, atol=1e-15)
    close(u, su, 1e-13, atol=1e-15)
    pl, u2 = L.lu(a, permute_l=True)
    close(pl @ u2, a, 1e-13, atol=1e-14)
    lu, piv = L.lu_factor(a)
    slu, spiv = sla.lu_factor(a)
    close(lu, slu, 1e-13, atol=1e-15)
    assert piv.dtype == np.int32 and np.array_equal(piv, spiv)
    b = rng.normal(size=(5, 2))
    for trans in (0, 1, 2):
        close(L.lu_solve((lu, piv), b, trans=trans), sla.lu_solve((slu, spiv), b, trans=trans), 1e-12)
    close(L.lu_solve((lu, piv), b[:, 0]), np.linalg.solve(a, b[:, 0]), 1e-12)
    # a stack, and compiled at dynamic sizes (0, 1, n) with one trace
    stack = rng.normal(size=(2, 3, 3))
    ps, ls, us = L.lu(stack)
    close(ps @ ls @ us, stack, 1e-13, atol=1e-14)
    f = dynjax.qjit(lambda m: L.lu(m), abstracted_axes={0: "n", 1: "n"})
    for n in (0, 1, 4):
        m = rng.normal(size=(n, n))
        got = f(m)
        if n:
            for g, e in zip(got, sla.lu(m)):
                close(g, e, 1e-12, atol=1e-14)
        else:
            assert all(g.shape == (0, 0) for g in got)
    assert f.cache_info()["traces"] == 1


def test_expm_against_scipy_and_jax():
    rng = np.random.default_rng(13)
    for scale in (1e-3, 0.5, 3.0, 40.0):
        a = rng.normal(size=(4, 4)) * scale
        want = sla.expm(a)
        close(L.expm(a), want, 1e-11 * max(1, scale), atol=1e-14 * np.abs(want).max())
    close(L.expm(np.zeros((3, 3))), np.eye(3), 2e-16)
    stack = rng.normal(size=(2, 3, 3))
    close(L.expm(stack), np.stack([sla.expm(m) for m in stack]), 1e-12)
    f = dynjax.qjit(L.expm, abstracted_axes={0: "n", 1: "n"})
    for n in (0, 1, 5):
        m = rng.normal(size=(n, n)) * 2
        close(f(m), sla.expm(m) if n else np.zeros((0, 0)), 1e-11, atol=1e-13)
    assert f.cache_info()["traces"] == 1
    a = rng.normal(size=(3, 3))
    g = dynjax.grad(lambda m: jnp.sum(L.expm(m)))(a)
    jg = jax.grad(lambda m: jax.numpy.sum(jsp.linalg.expm(m)))(a)
    close(g, np.asarray(jg), 1e-10)


def test_padded_tier(monkeypatch):
    """A padded bucket (static shapes, no refinement) holds the special functions, those
    lowered from lax-level series included."""
    monkeypatch.setenv("DYNJAX_TIERS", "padded")
    f = dynjax.qjit(lambda a, x: (lax.igamma(a, x), lax.igammac(a, x), lax.bessel_i0e(x), lax.lgamma(x),
                                  lax.zeta(a + 1.5, x), S.ndtr(x / 7.0)),
                    abstracted_axes=({0: "n"}, {0: "n"}))
    for n in (3, 5, 20):
        a, x = np.linspace(0.5, 4, n), np.linspace(0.1, 6, n)
        got = f(a, x)
        for g, e in zip(got, (sc.gammainc(a, x), sc.gammaincc(a, x), sc.i0e(x), sc.gammaln(x),
                              sc.zeta(a + 1.5, x), sc.ndtr(x / 7.0))):
            close(g, e, 1e-12)
    assert f.cache_info()["padded_runs"] >= 2
