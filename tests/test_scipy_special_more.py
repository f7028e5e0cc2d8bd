"""The rest of ``dynjax.scipy.special`` (scipy/special_more.py, the betainc / igamma_grad_a /
random_gamma_grad primitives, and the series functions) against scipy and jax: values with
special values, float32 / float64, integer promotion, eager against compiled at static and
dynamic sizes (0, 1, n; one trace), derivatives against jax and finite differences, vmap, and
argument errors."""
from __future__ import annotations

import jax
import jax.scipy.special as js
import numpy as np
import pytest
import scipy.special as sc

import dynjax
from dynjax.scipy import special as S
from helpers import fd_grad

jax.config.update("jax_enable_x64", True)


def close(got, want, rtol, atol=0.0):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def same_specials(got, want):
    """NaN where the other is NaN, the same infinities."""
    got, want = np.asarray(got), np.asarray(want)
    assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
    inf = np.isinf(want) | np.isinf(got)
    assert np.array_equal(got[inf], want[inf]), (got[inf], want[inf])


def against(got, scipy_val, jax_val, rtol, atol=0.0, jax_rtol=None):
    """JAX's special values; the finite values close to scipy's and to JAX's (``jax_rtol``
    where JAX is less accurate)."""
    same_specials(got, jax_val)
    dt = np.asarray(got).dtype
    with np.errstate(over="ignore"):
        scipy_val = np.asarray(scipy_val).astype(dt)
    ok = np.isfinite(np.asarray(got)) & np.isfinite(scipy_val)
    close(np.asarray(got)[ok], scipy_val[ok], rtol, atol)
    close(np.asarray(got)[ok], np.asarray(jax_val)[ok], jax_rtol or rtol, atol)


def three_ways(f, make, sizes=(0, 1, 7), rtol=1e-13, atol=1e-300, axes=None):
    """``f(*make(n))`` eager, compiled at static sizes, and compiled once with a dynamic axis 0
    run at every size: the compiled values close to the eager ones."""
    nargs = len(make(1))
    dyn = dynjax.qjit(f, abstracted_axes=axes or ({0: "n"},) * nargs)
    static = dynjax.qjit(f)
    for n in sizes:
        args = make(n)
        eager = f(*args)
        for got in (dyn(*args), static(*args)):
            for g, e in zip(dynjax.tree_flatten(got)[0], dynjax.tree_flatten(eager)[0]):
                close(g, e, rtol, atol)
    assert dyn.cache_info()["traces"] == 1


X = np.array([-np.inf, -1e300, -171.5, -3.0, -2.5, -1.5, -1.0, -0.5, -0.0, 0.0, 1e-300, 1e-8, 0.5, 1.0,
              1.5, 2.0, 2.5, 10.0, 30.5, 171.5, 200.0, 1e300, np.inf, np.nan])
TOL = {np.float64: 1e-13, np.float32: 3e-6}


# ----------------------------------------------------------------------------------------------
# compositions (scipy/special_more.py)
# ----------------------------------------------------------------------------------------------
UNARY = ["gamma", "gammasgn", "loggamma", "factorial", "entr"]


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("name", UNARY)
def test_unary_compositions(name, dt):
    rng = np.random.default_rng(0)
    with np.errstate(over="ignore"):
        x = np.concatenate([X, rng.uniform(-30, 40, 40)]).astype(dt)
    got = getattr(S, name)(x)
    assert got.dtype == dt
    with np.errstate(all="ignore"):
        want = getattr(sc, name)(x.astype(np.float64))
    # exp(lgamma(x)) (JAX's gamma) carries lgamma's rounding times |lgamma(x)|
    rtol = TOL[dt] * (200 if name in ("gamma", "factorial") else 10)
    # lgamma near its zeros 1 and 2 is accurate in absolute terms (XLA's, which JAX runs)
    atol = 4 * np.finfo(dt).eps if name == "loggamma" else 4 * np.finfo(dt).tiny
    against(got, want, np.asarray(getattr(js, name)(x)), rtol, atol=atol)


BINARY = {
    "beta": (np.array([0.5, 1.0, 2.0, -0.5, -1.5, 0.0, -2.0, 3.0, 1e-3, 50.0, np.inf, np.nan]),
             np.array([0.5, 2.0, 3.5, 2.0, 0.7, 1.0, 0.5, -3.5, 1e3, 60.0, 1.0, 1.0])),
    "poch": (np.array([1.0, 2.5, -1.5, 3.0, 0.5, 10.0, -3.0, 2.0, 0.0, np.nan, 4.0, 1.0]),
             np.array([0.0, 2.0, 3.0, -1.0, 4.5, 0.5, 2.0, -2.0, 2.0, 1.0, np.nan, 30.0])),
    "comb": (np.array([5.0, 10.0, 10.0, 3.0, -1.0, 4.0, 1000.0, 7.5, 0.0, 4.0, np.nan, 60.0]),
             np.array([2.0, 0.0, 10.0, 4.0, 1.0, -1.0, 500.0, 2.0, 0.0, 2.5, 1.0, 30.0])),
    "rel_entr": (np.array([0.0, 0.0, 0.0, 1.0, -1.0, 2.0, 0.5, 1e-300, 3.0, np.inf, np.nan, 1.0]),
                 np.array([0.0, 1.0, -1.0, 0.0, 1.0, 0.5, 2.0, 1.0, 3.0, 1.0, 1.0, np.inf])),
    "kl_div": (np.array([0.0, 0.0, 0.0, 1.0, -1.0, 2.0, 0.5, 1e-300, 3.0, 4.0, np.nan, 1.0]),
               np.array([0.0, 1.0, -1.0, 0.0, 1.0, 0.5, 2.0, 1.0, 3.0, 1e-5, 1.0, 7.0])),
    "boxcox": (np.array([1.0, 2.0, 0.5, 3.0, 0.0, -1.0, 10.0, 1e-10, 2.0, 5.0, np.inf, np.nan]),
               np.array([0.0, 0.5, -1.0, 1e-12, 0.5, 0.5, 2.0, 0.3, -2.5, 3.0, 1.0, 1.0])),
    "boxcox1p": (np.array([0.0, 1.0, -0.5, 1e-10, -1.0, -2.0, 10.0, 1e-3, 2.0, 5.0, np.inf, np.nan]),
                 np.array([0.0, 0.5, -1.0, 1e-12, 0.5, 0.5, 2.0, 0.3, -2.5, 3.0, 1.0, 1.0])),
}


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_compositions(name, dt):
    a, b = (v.astype(dt) for v in BINARY[name])
    got = getattr(S, name)(a, b)
    assert got.dtype == dt
    with np.errstate(all="ignore"):
        want = getattr(sc, name)(a.astype(np.float64), b.astype(np.float64))
    # JAX's compositions through lgamma: 1e-12 relative for comb(1000, 500)
    rtol = {np.float64: 2e-12, np.float32: 2e-5}[dt]
    # JAX's beta goes through its betaln, which loses 1e-9 relative at (50, 60) (scipy's and
    # dynjax's lgamma sum: 4e-14)
    jax_rtol = 1e-8 if name == "beta" and dt == np.float64 else None
    if name == "beta" and dt == np.float32:   # lgamma(1000.001) - lgamma(1000) cancels in float32
        rtol = jax_rtol = 3e-4
    against(got, want, np.asarray(getattr(js, name)(a, b)), rtol, atol=1e-300, jax_rtol=jax_rtol)


def test_multigammaln_softmax_bernoulli():
    a = np.array([[2.0, 3.5], [10.0, 40.0]])
    for d in (1, 2, 5):
        close(S.multigammaln(a + d, d), sc.multigammaln(a + d, d), 1e-13)
        close(S.multigammaln(a + d, d), np.asarray(js.multigammaln(a + d, d)), 1e-13)
    assert S.multigammaln(np.float32(3.0), 2).dtype == np.float32
    assert S.multigammaln(3, 2).dtype == np.float64
    x = np.random.default_rng(1).normal(size=(3, 4)) * 5
    for axis in (None, 0, 1, (0, 1)):
        close(S.softmax(x, axis=axis), sc.softmax(x, axis=axis), 1e-14)
        close(S.log_softmax(x, axis=axis), sc.log_softmax(x, axis=axis), 1e-14, atol=1e-15)
    with pytest.raises(TypeError):
        S.softmax(x, 0)     # axis is keyword-only, as scipy's / JAX's
    # exact rationals rounded; JAX's (a truncated zeta series) is off by 2.5e-6 relative at
    # B_4 already, scipy's by up to 2e-12 below B_120
    exact = [1, -0.5, 1 / 6, 0, -1 / 30, 0, 1 / 42, 0, -1 / 30, 0, 5 / 66]
    for n in (0, 1, 2, 3, 10):
        close(S.bernoulli(n), np.array(exact[:n + 1], float), 1e-16)
        close(S.bernoulli(n), np.asarray(js.bernoulli(n)), 3e-6)
    b = S.bernoulli(300)
    assert b[30] == 8615841276005 / 14322
    assert b[258] > 1e306 and b[260] == -np.inf and b[262] == np.inf and b[299] == 0
    close(b[:120], sc.bernoulli(119), 2e-12, atol=1e-300)


def test_promotion_and_errors():
    assert S.gamma(np.array([3, 4])).dtype == np.float64
    close(S.gamma(np.array([3, 4])), np.array([2.0, 6.0]), 1e-14)
    assert S.beta(np.int32(2), np.float32(3.0)).dtype == np.float32
    assert S.comb(5, 2).dtype == np.float64 and abs(S.comb(5, 2) - 10.0) < 1e-13
    assert abs(S.comb(4, 2, repetition=True) - sc.comb(4, 2, repetition=True)) < 1e-13
    assert S.comb(-1, 0, repetition=True) == 0.0 and S.comb(3, 0, repetition=True) == 1.0
    with pytest.raises(NotImplementedError, match="exact=True"):
        S.factorial(3, exact=True)
    with pytest.raises(ValueError, match="complex"):
        S.beta(1j, 2.0)
    with pytest.raises(NotImplementedError, match="complex"):
        S.gamma(np.array([1j]))
    with pytest.raises(ValueError, match="non-negative"):
        S.bernoulli(-1)
    with pytest.raises(TypeError, match="concrete integer"):
        dynjax.qjit(lambda d: S.multigammaln(3.0, d))(2)


def test_compositions_compiled_at_dynamic_sizes():
    def program(x, y):
        return (S.gamma(x), S.gammasgn(x), S.loggamma(y), S.beta(y, x), S.poch(y, x), S.factorial(x),
                S.comb(y * 10.0, x), S.multigammaln(y + 2.0, 3), S.entr(y), S.rel_entr(y, x), S.kl_div(y, x),
                S.boxcox(y, x), S.boxcox1p(x, y), S.softmax(x), S.log_softmax(y, axis=0))
    rng = np.random.default_rng(2)
    three_ways(program, lambda n: (rng.uniform(-4, 6, n), rng.uniform(0.1, 5, n)), rtol=1e-12)


GRADS = [("gamma", (np.linspace(-2.5, 6, 7),)), ("loggamma", (np.linspace(0.2, 9, 7),)),
         ("factorial", (np.linspace(0.2, 9, 7),)), ("entr", (np.linspace(0.1, 3, 6),)),
         ("beta", (np.linspace(0.3, 4, 5), np.linspace(4, 0.5, 5))),
         ("poch", (np.linspace(0.3, 4, 5), np.linspace(-0.5, 3, 5))),
         ("comb", (np.linspace(5, 9, 5), np.linspace(0.5, 4, 5))),
         ("rel_entr", (np.linspace(0.3, 4, 5), np.linspace(4, 0.5, 5))),
         ("kl_div", (np.linspace(0.3, 4, 5), np.linspace(4, 0.5, 5))),
         ("boxcox", (np.linspace(0.3, 4, 5), np.array([-1.0, 0.0, 0.5, 1.0, 2.0]))),
         ("boxcox1p", (np.linspace(-0.5, 4, 5), np.array([-1.0, 0.0, 0.5, 1.0, 2.0])))]


@pytest.mark.parametrize("name,args", GRADS, ids=[g[0] for g in GRADS])
def test_composition_derivatives_against_jax_and_fd(name, args):
    f, jf = getattr(S, name), getattr(js, name)
    for k in range(len(args)):
        got = dynjax.vmap(dynjax.grad(f, argnums=k))(*args)
        want = np.asarray(jax.vmap(jax.grad(jf, argnums=k))(*args))
        close(got, want, 1e-11, atol=1e-14)
        i = 2
        pick = [a[i] for a in args]

        def one(v, k=k, pick=pick):
            return f(*[v if j == k else p for j, p in enumerate(pick)])
        np.testing.assert_allclose(got[i], fd_grad(one, pick[k]), rtol=1e-6)


def test_composition_vmap_and_softmax_grad():
    a, x = np.linspace(0.5, 3, 12).reshape(3, 4), np.linspace(-1.9, 3, 12).reshape(3, 4)
    close(dynjax.vmap(S.beta)(a, x), sc.beta(a, x), 1e-13)
    close(dynjax.vmap(S.poch, in_axes=(None, 0))(a[0], x), sc.poch(a[0], x), 1e-12)
    close(dynjax.vmap(lambda r: S.softmax(r))(x), sc.softmax(x, axis=1), 1e-14)
    g = dynjax.grad(lambda v: S.log_softmax(v)[1, 2])(x)
    close(g, np.asarray(jax.grad(lambda v: js.log_softmax(v)[1, 2])(x)), 1e-13, atol=1e-15)
