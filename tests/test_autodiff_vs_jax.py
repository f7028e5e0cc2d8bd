"""Gradients and jacobians against jax (the optional ``bench`` extra) at static shapes:
the same programs written with dynjax and with jax must give the same derivatives. Skipped
where jax is not installed (the default test install has no jax)."""
import numpy as np
import pytest

import dynjax
import dynjax.numpy as dnp
from dynjax import lax as dlax

import jax  # noqa: E402  (a test extra: the comparison oracle)
jax.config.update("jax_enable_x64", True)
import jax.numpy as jjnp  # noqa: E402
from jax import lax as jlax  # noqa: E402


def program(np_, lax_):
    """One program per numpy-like module: elementwise math, reductions, matmul, slicing,
    concatenate, sort, cumsum, a loop, a scan and a cond."""
    def f(x, w):
        y = np_.tanh(x) * w + np_.exp(-x * x) - np_.log1p(x * x)
        y = y + np_.cumsum(y) * 0.1 + np_.sort(y)[::-1] * 0.2
        z = np_.concatenate([y[1:], y[:1] * 3.0])
        m = np_.outer(z, w) @ np_.sin(w)
        m = m + np_.max(z) - np_.min(y) + np_.prod(np_.cos(y[:3]))
        m = lax_.fori_loop(0, 4, lambda i, c: np_.sin(c) * w + c * 0.5, m)
        carry, ys = lax_.scan(lambda c, v: (c * np_.cos(v) + v, c * v), 0.3, m)
        m = lax_.cond(np_.sum(m) > 0, lambda a: a * 2.0, lambda a: a ** 2, m)
        return np_.sum(m * ys) + carry
    return f


F_DJ = program(dnp, dlax)
F_JX = program(jjnp, jlax)


@pytest.mark.parametrize("n", [1, 2, 7])
def test_grad_matches_jax(n):
    rng = np.random.default_rng(n)
    x, w = rng.normal(size=n), rng.normal(size=n)
    expected = jax.grad(F_JX, argnums=(0, 1))(x, w)
    for got in (dynjax.grad(F_DJ, argnums=(0, 1))(x, w),
                dynjax.qjit(dynjax.grad(F_DJ, argnums=(0, 1)), abstracted_axes=({0: "n"}, {0: "n"}))(x, w)):
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, np.asarray(e), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n", [1, 4])
def test_jacobians_and_hessian_match_jax(n):
    rng = np.random.default_rng(10 + n)
    x, w = rng.normal(size=n), rng.normal(size=n)
    vec_dj = lambda x: dnp.sin(x) * dnp.sum(x * w) + dnp.cumsum(x) ** 2
    vec_jx = lambda x: jjnp.sin(x) * jjnp.sum(x * w) + jjnp.cumsum(x) ** 2
    np.testing.assert_allclose(dynjax.jacrev(vec_dj)(x), np.asarray(jax.jacrev(vec_jx)(x)), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dynjax.jacfwd(vec_dj)(x), np.asarray(jax.jacfwd(vec_jx)(x)), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dynjax.hessian(lambda x: F_DJ(x, w))(x),
                               np.asarray(jax.hessian(lambda x: F_JX(x, w))(x)), rtol=1e-8, atol=1e-10)


def test_jvp_and_vjp_match_jax():
    rng = np.random.default_rng(3)
    x, w, t = rng.normal(size=5), rng.normal(size=5), rng.normal(size=5)
    _, tan_dj = dynjax.jvp(lambda x: F_DJ(x, w), (x,), (t,))
    _, tan_jx = jax.jvp(lambda x: F_JX(x, w), (x,), (t,))
    np.testing.assert_allclose(tan_dj, np.asarray(tan_jx), rtol=1e-10)
    vec_dj = lambda x: dnp.sort(x * w) + dnp.maximum(x, 0.1)
    vec_jx = lambda x: jjnp.sort(x * w) + jjnp.maximum(x, 0.1)
    ct = rng.normal(size=5)
    np.testing.assert_allclose(dynjax.vjp(vec_dj, x)[1](ct)[0], np.asarray(jax.vjp(vec_jx, x)[1](ct)[0]),
                               rtol=1e-12)
