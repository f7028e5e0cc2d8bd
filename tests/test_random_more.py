"""dynjax.random's further distributions against jax 0.10.2 (x64 on, dynjax's defaults):
cauchy, pareto, rademacher, maxwell, double_sided_maxwell, weibull_min, geometric,
lognormal, rayleigh, wald, triangular, multivariate_normal, gamma, loggamma, beta, dirichlet,
chisquare, f, t, generalized_normal, ball, poisson, binomial, multinomial.

Same key, parameters and dtype give JAX's numbers: integer results exactly, floats compiled
(exact tier) and eagerly to a few ulps / epsilons (numpy's transcendental functions eagerly;
the Cholesky / eigh / SVD factors of multivariate_normal come from LAPACK). Also: dynamic
sizes from one trace, vmap over keys and over parameters, grad of reparameterized samples,
sample moments of 10^4 draws, and errors.
"""
from __future__ import annotations

import numpy as np
import pytest

import jax
jax.config.update("jax_enable_x64", True)
import jax.random as jr  # noqa: E402

import dynjax  # noqa: E402
from dynjax import random  # noqa: E402


def close(got, expected, eps_count=64):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape, \
        (got.dtype, got.shape, expected.dtype, expected.shape)
    if got.dtype.kind in "iub":
        np.testing.assert_array_equal(got, expected)
        return
    eps = float(np.finfo(got.dtype).eps)
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64),
                               rtol=eps_count * eps, atol=eps_count * eps)


@pytest.fixture
def exact_tier(monkeypatch):
    monkeypatch.setenv("DYNJAX_TIERS", "exact")


A = np.array([0.3, 1.0, 2.5, 7.0])
B = np.array([2.0, 0.7, 4.0, 1.5])


def _cases(dt):
    """(name, dynjax call, jax call) on the raw key ``kd`` / JAX key ``k``."""
    a, b = A.astype(dt), B.astype(dt)
    m = np.array([1.0, -2.0, 0.5], dt)
    r = np.random.default_rng(0).normal(size=(3, 3))
    cov = (r @ r.T + np.eye(3)).astype(dt)
    return [
        ("cauchy", lambda R, k: R.cauchy(k, (2, 3), dt)),
        ("pareto", lambda R, k: R.pareto(k, b, (2, 4), dt)),
        ("rademacher", lambda R, k: R.rademacher(k, (7,), np.int32)),
        ("maxwell", lambda R, k: R.maxwell(k, (5,), dt)),
        ("double_sided_maxwell", lambda R, k: R.double_sided_maxwell(k, dt(1.0), b, (2,), dt)),
        ("weibull_min", lambda R, k: R.weibull_min(k, 2.0, 1.5, (6,), dt)),
        ("geometric", lambda R, k: R.geometric(k, np.array([0.1, 0.5, 0.9], dt), (2, 3))),
        ("mvn_cholesky", lambda R, k: R.multivariate_normal(k, m, cov, (4,), dt)),
        ("mvn_eigh", lambda R, k: R.multivariate_normal(k, m, cov, None, dt, method="eigh")),
        ("mvn_svd", lambda R, k: R.multivariate_normal(k, m, cov, (2, 1), dt, method="svd")),
        ("gamma", lambda R, k: R.gamma(k, a, (2, 4), dt)),
        ("beta", lambda R, k: R.beta(k, a, b, None, dt)),   # loggamma inside (JAX's compiles of
        # the gamma family dominate the run time, so loggamma, chisquare and generalized_normal
        # are checked through beta / dirichlet, f and ball)
        ("dirichlet", lambda R, k: R.dirichlet(k, a, (3,), dt)),
        ("f", lambda R, k: R.f(k, a, b, None, dt)),   # two chisquare draws
        ("t", lambda R, k: R.t(k, b, None, dt)),
        ("poisson", lambda R, k: R.poisson(k, np.array([0.0, 0.5, 3.0, 9.9, 10.0, 50.0, 1e3]))),
        ("poisson_i16", lambda R, k: R.poisson(k, 4.0, (3, 4), np.int16)),
        ("lognormal", lambda R, k: R.lognormal(k, b, (2, 4), dt)),
        ("rayleigh", lambda R, k: R.rayleigh(k, b, None, dt)),
        ("wald", lambda R, k: R.wald(k, b, (3, 4), dt)),
        ("triangular", lambda R, k: R.triangular(k, dt(0), a, dt(8), None, dt)),
        ("ball", lambda R, k: R.ball(k, 3, 1.5, (2,), dt)),   # generalized_normal inside
    ]


_F32_CASES = {"cauchy", "pareto", "rademacher", "maxwell", "double_sided_maxwell", "weibull_min",
              "geometric", "mvn_cholesky", "gamma", "poisson_i16", "lognormal", "rayleigh", "wald",
              "triangular"}


@pytest.mark.parametrize("dt", (np.float32, np.float64), ids=("f32", "f64"))
def test_against_jax_eager_and_compiled(dt, exact_tier):
    k = jr.PRNGKey(3)
    kd = np.asarray(k)
    cases = _cases(dt)
    if dt == np.float32:   # JAX's compiles dominate the run time: the gamma family in float64 only
        cases = [c for c in cases if c[0] in _F32_CASES]
    compiled = dynjax.qjit(lambda key: [fn(random, key) for _, fn in cases])(kd)
    expected_all = jax.jit(lambda key: [fn(jr, key) for _, fn in cases])(k)   # one compile
    for (name, fn), got_c, expected in zip(cases, compiled, expected_all):
        tol = 2000 if name.startswith("mvn") else 64   # LAPACK factors vs XLA's
        close(fn(random, kd), expected, tol)
        close(got_c, expected, tol)


def test_dynamic_sizes_one_trace(exact_tier):
    k = jr.PRNGKey(7)
    kd = np.asarray(k)

    @dynjax.qjit
    def f(key, n):
        return (random.gamma(key, 2.0, (n,)), random.poisson(key, 3.0, (n, 2)),
                random.cauchy(key, (n,)), random.geometric(key, 0.25, (n,)),
                random.beta(key, 0.5, 2.0, (n,)))

    # every element's draws depend on its own counters only, so JAX's values at n are the first
    # n of JAX's values at 5 (one JAX compile)
    full = jax.jit(lambda k: (jr.gamma(k, 2.0, (5,)), jr.poisson(k, 3.0, (5, 2)), jr.cauchy(k, (5,)),
                              jr.geometric(k, 0.25, (5,)), jr.beta(k, 0.5, 2.0, (5,))))(k)
    for n in (0, 1, 5):
        got = f(kd, n)
        for g, e in zip(got, full):
            close(g, np.asarray(e)[:n], 16)
    assert f.cache_info()["traces"] == 1


def test_abstracted_axes_parameters(exact_tier):
    """Parameters whose length is a dynamic dim: one trace; JAX's values at n = 3 (one JAX
    compile) and the eager static-shape values (checked against JAX above) at n = 1, 3."""
    k = jr.PRNGKey(3)
    kd = np.asarray(k)

    def fns(R, key, m, c):
        return (R.multivariate_normal(key, m, c), R.dirichlet(key, m * 0 + 1.5), R.gamma(key, m + 1.0),
                R.pareto(key, m + 1.0), R.poisson(key, m + 2.0), R.beta(key, m + 1.0, 2.0))

    f = dynjax.qjit(lambda key, m, c: fns(random, key, m, c),
                    abstracted_axes=(None, {0: "n"}, {0: "n", 1: "n"}))
    for n in (1, 3):
        m = np.arange(n) * 1.0
        r = np.random.default_rng(n).normal(size=(n, n))
        c = r @ r.T + np.eye(n)
        got = f(kd, m, c)
        for g, e in zip(got, fns(random, kd, m, c)):
            close(g, np.asarray(e), 64)
        if n == 3:
            for g, e in zip(got, jax.jit(lambda key: fns(jr, key, m, c))(k)):
                close(g, np.asarray(e), 64)
    assert f.cache_info()["traces"] == 1


def test_binomial(exact_tier):
    """Inversion (n q <= 10) and BTRS, p on both sides of 1/2, invalid and infinite n; eager,
    compiled at dynamic sizes (one trace), against JAX."""
    k = jr.PRNGKey(3)
    kd = np.asarray(k)
    n = np.array([5.0, 20.0, 100.0, 1000.0, 7.0, 50.0, 0.0, np.inf, -1.0, 30.0, 12.5])
    p = np.array([0.3, 0.5, 0.2, 0.7, 0.9, 0.01, 0.5, 0.4, 0.5, np.nan, 0.6])
    expected = jr.binomial(k, n, p)
    np.testing.assert_array_equal(random.binomial(kd, n, p), expected)
    f = dynjax.qjit(lambda key, m: random.binomial(key, 20.0, 0.35, (m, 2), np.float32))
    full = jr.binomial(k, 20.0, 0.35, (4, 2), np.float32)
    # inversion (n q = 7): an element's count stops growing once its waiting times pass n,
    # so JAX's values at m are the first m of JAX's at 4 (BTRS keeps overwriting accepted
    # elements while others are still rejected, so its values depend on the whole array)
    for m in (0, 1, 4):
        np.testing.assert_array_equal(f(kd, m), np.asarray(full)[:m])
    np.testing.assert_array_equal(dynjax.qjit(lambda key: random.binomial(key, n, p))(kd), expected)
    assert f.cache_info()["traces"] == 1
    x = np.asarray(random.binomial(kd, 30.0, 0.4, (10_000,)))
    assert abs(x.mean() - 12.0) < 5 * np.sqrt(7.2 / 10_000) and abs(x.var() - 7.2) < 0.72
    with pytest.raises(ValueError, match="float dtype"):
        random.binomial(kd, 3, 0.5, dtype=np.int32)


def test_multinomial(exact_tier):
    """A scan of binomials over the categories: eager, and compiled with the number of
    categories a dynamic dim (one trace), against JAX."""
    k = jr.PRNGKey(0)
    kd = np.asarray(k)
    p3, p2 = np.array([0.2, 0.3, 0.5]), np.array([[0.1, 0.9], [0.5, 0.5]])
    e3, e2, e1 = jax.jit(lambda key: (jr.multinomial(key, 50.0, p3),
                                      jr.multinomial(key, np.array([5.0, 100.0]), p2),
                                      jr.multinomial(key, 100.0, p2[1])))(k)
    np.testing.assert_array_equal(random.multinomial(kd, 50.0, p3), e3)
    got = random.multinomial(kd, np.array([5.0, 100.0]), p2, dtype=np.float32)
    np.testing.assert_array_equal(got, np.asarray(e2, np.float32))
    f = dynjax.qjit(lambda key, n, p: random.multinomial(key, n, p), abstracted_axes=(None, None, {0: "c"}))
    np.testing.assert_array_equal(f(kd, 50.0, p3), e3)
    np.testing.assert_array_equal(f(kd, 100.0, p2[1]), e1)
    assert f.cache_info()["traces"] == 1
    with pytest.raises(ValueError, match="at least one dimension"):
        random.multinomial(kd, 3.0, 0.5)


def test_vmap():
    k = jr.PRNGKey(1)
    kd = np.asarray(k)
    ks, jks = random.split(kd, 3), jr.split(k, 3)
    lam = np.array([3.0, 30.0])

    def fns(R, vmap, key, keys):
        return (vmap(lambda kk: R.gamma(kk, A))(keys), vmap(lambda kk: R.poisson(kk, lam))(keys),
                vmap(lambda kk: R.pareto(kk, 2.0, (2,)))(keys),
                # over a parameter with one key: every element uses the same key, as in JAX
                vmap(lambda a: R.gamma(key, a))(A))

    expected = jax.jit(lambda key, keys: fns(jr, jax.vmap, key, keys))(k, jks)   # one compile
    for g, e in zip(fns(random, dynjax.vmap, kd, ks), expected):
        close(g, e)


def test_grad():
    kd = np.asarray(jr.PRNGKey(2))
    m = np.array([0.5, -1.0])
    c = np.array([[2.0, 0.3], [0.3, 1.0]])
    g = dynjax.grad(lambda m: random.multivariate_normal(kd, m, c).sum())(m)
    np.testing.assert_allclose(np.asarray(g), np.ones(2))
    gs = dynjax.grad(lambda s: random.double_sided_maxwell(kd, 0.0, s, (3,)).sum())(2.0)
    np.testing.assert_allclose(gs, np.asarray(random.double_sided_maxwell(kd, 0.0, 1.0, (3,))).sum(), rtol=1e-12)
    gw = dynjax.grad(lambda s: random.weibull_min(kd, s, 1.5, (4,)).sum())(3.0)
    np.testing.assert_allclose(gw, np.asarray(random.weibull_min(kd, 1.0, 1.5, (4,))).sum(), rtol=1e-12)
    # the gamma family in its shape parameter: JAX's implicit reparameterization gradient
    a = np.array([0.2, 1.0, 2.5, 40.0])
    for name in ("gamma", "loggamma"):
        g = dynjax.grad(lambda a: getattr(random, name)(kd, a).sum())(a)
        jg = jax.grad(lambda a: getattr(jr, name)(jr.PRNGKey(2), a).sum())(a)
        np.testing.assert_allclose(g, np.asarray(jg), rtol=1e-12)
    g = dynjax.grad(lambda b: random.beta(kd, 1.5, b, (3,)).sum())(2.0)
    jg = jax.grad(lambda b: jr.beta(jr.PRNGKey(2), 1.5, b, (3,)).sum())(2.0)
    np.testing.assert_allclose(g, np.asarray(jg), rtol=1e-12)


def test_moments():
    """10^4 draws: sample mean and variance within 5 standard errors (seeds fixed)."""
    n = 10_000
    kd = np.asarray(jr.PRNGKey(11))
    cases = [  # (samples, mean, variance)
        (random.gamma(kd, 2.5, (n,)), 2.5, 2.5),
        (random.gamma(kd, 0.4, (n,)), 0.4, 0.4),
        (random.beta(kd, 2.0, 3.0, (n,)), 0.4, 6 / 150),
        (random.poisson(kd, 4.0, (n,)), 4.0, 4.0),
        (random.poisson(kd, 40.0, (n,)), 40.0, 40.0),
        (random.chisquare(kd, 3.0, (n,)), 3.0, 6.0),
        (random.geometric(kd, 0.3, (n,)), 1 / 0.3, 0.7 / 0.09),
        (random.maxwell(kd, (n,)), 2 * np.sqrt(2 / np.pi), 3 - 8 / np.pi),
        (random.rademacher(kd, (n,)), 0.0, 1.0),
        (random.wald(kd, 2.0, (n,)), 2.0, 8.0),
        (random.triangular(kd, 0.0, 1.0, 3.0, (n,)), 4 / 3, (9 - 3 + 1 - 0) / 18 - 0 / 18),
    ]
    for x, mean, var in cases:
        x = np.asarray(x, np.float64)
        assert abs(x.mean() - mean) < 5 * np.sqrt(var / n), (x.mean(), mean)
        assert abs(x.var() - var) < 0.1 * var, (x.var(), var)
    d = np.asarray(random.dirichlet(kd, np.array([1.0, 2.0, 3.0]), (n,)))
    np.testing.assert_allclose(d.sum(-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(d.mean(0), [1 / 6, 2 / 6, 3 / 6], atol=0.01)
    x = np.asarray(random.ball(kd, 3, 2, (n,)))
    r = np.linalg.norm(x, axis=-1)
    assert r.max() <= 1.0 and abs(np.mean(r ** 3) - 0.5) < 0.02   # uniform in the ball: r^3 ~ U(0, 1)


def test_errors():
    kd = np.asarray(jr.PRNGKey(0))
    with pytest.raises(ValueError, match="mean.ndim"):
        random.multivariate_normal(kd, 0.0, np.eye(2))
    with pytest.raises(ValueError, match="cov.shape"):
        random.multivariate_normal(kd, np.zeros(3), np.eye(2))
    with pytest.raises(ValueError, match="method"):
        random.multivariate_normal(kd, np.zeros(2), np.eye(2), method="qr")
    with pytest.raises(ValueError, match="alpha.ndim"):
        random.dirichlet(kd, 1.0)
    with pytest.raises(ValueError, match="float dtype"):
        random.gamma(kd, 1.0, dtype=np.int32)
    with pytest.raises(TypeError, match="integer dtype"):
        random.poisson(kd, 1.0, dtype=np.float32)
    with pytest.raises(ValueError, match="broadcast"):
        random.pareto(kd, np.ones(3), (4,))
    with pytest.raises(TypeError, match="key"):
        random.cauchy(np.zeros(2, np.float32))
