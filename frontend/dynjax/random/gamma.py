"""Gamma-family samplers: ``gamma``, ``loggamma``, ``beta``, ``dirichlet``, ``chisquare``,
``f``, ``t``, ``generalized_normal`` and ``ball``.

Gamma values come from Marsaglia and Tsang's rejection method ("A simple method for generating
gamma variables", 2000), one element at a time with JAX's key discipline, so the same key,
parameters and dtype give JAX's numbers (to rounding of ``log`` / ``pow`` / ``erf_inv``):

* the key is split into one key per element of the result (``split(key, shape)``, also for
  a scalar result);
* per element: ``key, last = split(key)``; each rejection round does
  ``key, kx, ku = split(key, 3)``, draws ``x = normal(k)`` with ``key, k = split(kx)`` until
  ``v = 1 + c x > 0``, then ``u = uniform(ku)``, and accepts when ``u < 1 - 0.0331 x^4`` or
  ``log u < x^2/2 + d (1 - v^3 + log v^3)`` (``d = a - 1/3``, ``c = 1 / (3 sqrt d)``);
* ``a < 1`` is boosted to ``a + 1`` and the value multiplied by ``(1 - uniform(last))^(1/a)``
  (in log space, ``loggamma``: plus ``-exponential(last) / a``).

The per-element loops are ``lax.while_loop`` under ``vmap``, so shapes may be dynamic.

Derivatives with respect to ``a`` are JAX's implicit reparameterization gradient: a sample
``x`` moves with ``a`` as the quantile ``P(a, x)`` is held, ``dx/da = -(dP/da) / (dP/dx) =
lax.random_gamma_grad(a, x)``; in log space ``d log x / da = random_gamma_grad(a, x) / x``
(``x = exp(log x)``, the smallest normal number where that underflows to 0). So ``beta``,
``dirichlet``, ``chisquare``, ``f``, ``t`` and ``generalized_normal``, built on these, are
differentiable in their parameters too.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core.avals import finfo
from ..core.trace import Tracer
from ..lax.special import random_gamma_grad
from ..transforms.batching import vmap
from ..transforms.custom import custom_jvp
from .keys import canonical_shape, check_key, split
from .samplers import _as, _bcast, _check_param_shape, _float_dtype, _shape_of, _uniform, normal
from .samplers import exponential as _exponential

__all__ = ["gamma", "loggamma", "beta", "dirichlet", "chisquare", "f", "t", "generalized_normal",
           "ball"]


def _c(v, dtype):
    return np.asarray(v, dtype)


def _split3(key):
    ks = split(key, 3)
    return ks[0], ks[1], ks[2]


def _gamma_one(key, alpha, log_space, dtype):
    """One Gamma(alpha) value (or its log) from one key."""
    one, zero = _c(1, dtype), _c(0, dtype)
    boost = lax.ge(alpha, one)
    a = lax.select(boost, alpha, lax.add(alpha, one))
    d = lax.sub(a, _c(1.0 / 3.0, dtype))
    c = lax.div(_c(1.0 / 3.0, dtype), lax.sqrt(d))

    def positive_v(state):
        k, _, _ = state
        ks = split(k, 2)
        x = normal(ks[1], (), dtype)
        return ks[0], x, lax.add(one, lax.mul(x, c))

    def reject(state):
        _, x2, v3, u = state
        squeeze = lax.ge(u, lax.sub(one, lax.mul(_c(0.0331, dtype), lax.mul(x2, x2))))
        full = lax.ge(lax.log(u), lax.add(lax.mul(x2, _c(0.5, dtype)),
                                           lax.mul(d, lax.add(lax.sub(one, v3), lax.log(v3)))))
        return lax.bitwise_and(squeeze, full)

    def round_(state):
        k, kx, ku = _split3(state[0])
        _, x, v = lax.while_loop(lambda s: lax.le(s[2], zero), positive_v, (kx, zero, _c(-1, dtype)))
        u = _uniform(ku, (), dtype, 0.0, 1.0)
        return k, lax.mul(x, x), lax.mul(lax.mul(v, v), v), u

    ks = split(key, 2)
    _, _, v3, _ = lax.while_loop(reject, round_, (ks[0], zero, one, _c(2, dtype)))
    if log_space:
        e = lax.neg(_exponential(ks[1], (), dtype))
        log_boost = lax.select(lax.bitwise_or(boost, lax.eq(e, zero)), zero,
                               lax.mul(e, lax.div(one, alpha)))
        return lax.add(lax.add(lax.log(d), lax.log(v3)), log_boost)
    u = lax.sub(one, _uniform(ks[1], (), dtype, 0.0, 1.0))
    return lax.mul(lax.mul(d, v3), lax.select(boost, one, lax.pow(u, lax.div(one, alpha))))


def _sample_gamma(keys, a, log_space, dtype):
    """One Gamma(a) value (or its log) per element of the broadcast ``a``, one key each."""
    fn = lambda k, al: _gamma_one(k, al, log_space, dtype)  # noqa: E731
    for _ in _shape_of(a):
        fn = vmap(fn)
    return fn(keys, a)


def _make_sampler(log_space, dtype):
    """``_sample_gamma`` with JAX's implicit reparameterization derivative in ``a``."""
    @custom_jvp
    def sample(keys, a):
        return _sample_gamma(keys, a, log_space, dtype)

    @sample.defjvp
    def sample_jvp(primals, tangents):
        (keys, a), (_, ta) = primals, tangents
        out = sample(keys, a)
        if log_space:
            x = lax.exp(out)
            x = lax.select(lax.eq(x, _c(0, dtype)), lax.full_like(x, float(finfo(dtype).tiny)), x)
            slope = lax.div(random_gamma_grad(a, x), x)
        else:
            slope = random_gamma_grad(a, out)
        return out, lax.mul(ta, slope)
    return sample


_SAMPLERS = {}


def _gamma(name, key, a, shape, dtype, log_space):
    a = _as(a, dtype)
    if shape is None:
        shape = _shape_of(a)
    else:
        shape = canonical_shape(name, shape)
        _check_param_shape(name, shape, a)
    a = _bcast(a, shape)
    keys = split(key, shape)     # shape (): split(key, 1)[0], as JAX
    k = (bool(log_space), np.dtype(dtype).name)
    if k not in _SAMPLERS:
        _SAMPLERS[k] = _make_sampler(log_space, dtype)
    return _SAMPLERS[k](keys, a)


def gamma(key, a, shape=None, dtype=None):
    """Gamma(a) values (unit scale); ``shape`` defaults to ``a``'s shape."""
    key = check_key("gamma", key)
    dtype = _float_dtype("gamma", dtype)
    return _gamma("gamma", key, a, shape, dtype, False)


def loggamma(key, a, shape=None, dtype=None):
    """The logarithm of Gamma(a) values, computed in log space (accurate for small ``a``)."""
    key = check_key("loggamma", key)
    dtype = _float_dtype("loggamma", dtype)
    return _gamma("loggamma", key, a, shape, dtype, True)


def _param_shape(name, shape, *params):
    if shape is None:
        return tuple(jnp.broadcast_shapes(*(_shape_of(p) for p in params)))
    shape = canonical_shape(name, shape)
    _check_param_shape(name, shape, *params)
    return shape


def beta(key, a, b, shape=None, dtype=None):
    """Beta(a, b) values: ``Ga / (Ga + Gb)`` from two log-gamma draws (keys ``split(key)``)."""
    key = check_key("beta", key)
    dtype = _float_dtype("beta", dtype)
    a, b = _as(a, dtype), _as(b, dtype)
    shape = _param_shape("beta", shape, a, b)
    ka, kb = split(key, 2)
    la = loggamma(ka, _bcast(a, shape), shape, dtype)
    lb = loggamma(kb, _bcast(b, shape), shape, dtype)
    m = lax.max(la, lb)
    ga, gb = lax.exp(lax.sub(la, m)), lax.exp(lax.sub(lb, m))
    return lax.div(ga, lax.add(ga, gb))


def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet(alpha) values over the last axis of ``alpha``: the softmax of log-gamma draws
    of shape ``shape + alpha.shape[-1:]``."""
    key = check_key("dirichlet", key)
    dtype = _float_dtype("dirichlet", dtype)
    alpha = _as(alpha, dtype)
    al = _shape_of(alpha)
    if len(al) < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {len(al)}")
    if shape is None:
        shape = al[:-1]
    else:
        shape = canonical_shape("dirichlet", shape)
        _check_param_shape("dirichlet", shape, np.zeros(al[:-1]) if all(isinstance(d, int) for d in al[:-1])
                           else alpha[..., 0])
    lg = loggamma(key, alpha, tuple(shape) + (al[-1],), dtype)
    m = jnp.max(lg, axis=-1, keepdims=True)
    e = jnp.exp(lg - lax.stop_gradient(m))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def chisquare(key, df, shape=None, dtype=None):
    """Chi-square values with ``df`` degrees of freedom: ``2 exp(loggamma(df / 2))``."""
    key = check_key("chisquare", key)
    dtype = _float_dtype("chisquare", dtype)
    half = lax.div(_as(df, dtype), _c(2, dtype))
    return lax.mul(lax.exp(loggamma(key, half, shape, dtype)), _c(2, dtype))


def f(key, dfnum, dfden, shape=None, dtype=None):
    """F-distribution values ``(X1 / dfnum) / (X2 / dfden)`` from two chi-square draws."""
    key = check_key("f", key)
    dtype = _float_dtype("f", dtype)
    dfnum, dfden = _as(dfnum, dtype), _as(dfden, dtype)
    shape = _param_shape("f", shape, dfnum, dfden)
    k_den, k_num = split(key, 2)
    num = lax.div(chisquare(k_num, dfnum, shape, dtype), _bcast(dfnum, shape))
    den = lax.div(chisquare(k_den, dfden, shape, dtype), _bcast(dfden, shape))
    return lax.div(num, den)


def t(key, df, shape=None, dtype=None):
    """Student's t values: ``normal * sqrt((df / 2) / gamma(df / 2))``."""
    key = check_key("t", key)
    dtype = _float_dtype("t", dtype)
    df = _as(df, dtype)
    shape = _param_shape("t", shape, df)
    k_n, k_g = split(key, 2)
    n = normal(k_n, shape, dtype)
    two = _c(2, dtype)
    half = lax.div(df, two)
    g = gamma(k_g, half, shape, dtype)
    return lax.mul(n, lax.sqrt(lax.div(_bcast(half, shape), g)))


def _p_power(p, dtype):
    """``1 / p`` for a Python / numpy ``p`` (JAX's weakly typed ``1 / p``)."""
    if isinstance(p, Tracer):
        return lax.div(np.asarray(1, dtype), _as(p, dtype))
    return _as(np.divide(1.0, np.asarray(p)), dtype)


def generalized_normal(key, p, shape=(), dtype=None):
    """Generalized normal values (density proportional to ``exp(-|x|^p)``):
    ``rademacher * gamma(1/p) ** (1/p)`` (keys ``split(key)``)."""
    from .transforms import rademacher
    key = check_key("generalized_normal", key)
    dtype = _float_dtype("generalized_normal", dtype)
    shape = canonical_shape("generalized_normal", shape)
    k1, k2 = split(key, 2)
    inv = _p_power(p, dtype)
    g = gamma(k1, _bcast(inv, shape), shape, dtype)
    r = rademacher(k2, shape, dtype)
    return lax.mul(r, lax.pow(g, _bcast(inv, shape)))


def ball(key, d, p=2, shape=(), dtype=None):
    """Points uniformly distributed in the unit ``p``-norm ball of dimension ``d`` (Barthe et
    al.: generalized normals divided by ``(sum |g|^p + exponential) ** (1/p)``)."""
    key = check_key("ball", key)
    dtype = _float_dtype("ball", dtype)
    shape = canonical_shape("ball", shape)
    if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 0:
        raise TypeError(f"ball: d must be a non-negative Python int, got {d!r}")
    k1, k2 = split(key, 2)
    g = generalized_normal(k1, p, tuple(shape) + (int(d),), dtype)
    e = _exponential(k2, shape, dtype)
    pp = p if isinstance(p, Tracer) else np.asarray(p, dtype)
    norm = jnp.sum(jnp.abs(g) ** pp, axis=-1) + e
    return g / (norm ** _p_power(p, dtype))[..., None]
