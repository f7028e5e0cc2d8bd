"""Samplers that are closed-form transforms of ``uniform`` / ``normal`` / ``exponential`` /
``bernoulli``: ``cauchy``, ``pareto``, ``rademacher``, ``maxwell``, ``double_sided_maxwell``,
``weibull_min``, ``geometric``, ``lognormal``, ``rayleigh``, ``wald``, ``triangular`` and
``multivariate_normal``. Each applies JAX's formula to the
same underlying draw, so the same key, shape and dtype give JAX's numbers (to rounding of the
transcendental functions; see ``doc/random.md``)."""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core.avals import canonical_dtype, finfo, same_dim
from ..core.trace import Tracer, typeof
from .keys import canonical_shape, check_key, split
from .samplers import (_as, _bcast, _check_param_shape, _float_dtype, _shape_of, _uniform,
                       bernoulli, exponential, normal)

__all__ = ["cauchy", "pareto", "rademacher", "maxwell", "double_sided_maxwell", "weibull_min",
           "geometric", "multivariate_normal", "lognormal", "rayleigh", "wald", "triangular"]


def _param_shape(name, shape, *params):
    """JAX's ``_check_broadcast_shapes``: ``shape=None`` means the parameters' broadcast shape;
    otherwise the parameters must broadcast to ``shape``."""
    if shape is None:
        return tuple(jnp.broadcast_shapes(*(_shape_of(p) for p in params)))
    shape = canonical_shape(name, shape)
    _check_param_shape(name, shape, *params)
    return shape


def _array(x):
    return x if isinstance(x, Tracer) else np.asarray(x)


def cauchy(key, shape=(), dtype=None):
    """Standard Cauchy values: ``tan(pi * (u - 1/2))`` with ``u`` uniform in ``[eps, 1)``."""
    key = check_key("cauchy", key)
    dtype = _float_dtype("cauchy", dtype)
    shape = canonical_shape("cauchy", shape)
    u = _uniform(key, shape, dtype, np.asarray(finfo(dtype).eps, dtype), np.asarray(1.0, dtype))
    return lax.tan(lax.mul(np.asarray(np.pi, dtype), lax.sub(u, np.asarray(0.5, dtype))))


def pareto(key, b, shape=None, dtype=None):
    """Pareto values of shape parameter ``b``: ``exp(e / b)`` with ``e`` standard exponential."""
    key = check_key("pareto", key)
    dtype = _float_dtype("pareto", dtype)
    b = _as(b, dtype)
    shape = _param_shape("pareto", shape, b)
    e = exponential(key, shape, dtype)
    return lax.exp(lax.div(e, _bcast(b, shape)))


def rademacher(key, shape=(), dtype=None):
    """-1 or +1 with equal probability (``2 * bernoulli(0.5) - 1``), integer dtype by default."""
    key = check_key("rademacher", key)
    dtype = canonical_dtype(int if dtype is None else dtype)
    shape = canonical_shape("rademacher", shape)
    b = lax.convert_element_type(bernoulli(key, 0.5, shape), dtype)
    return lax.sub(lax.mul(np.asarray(2, dtype), b), np.asarray(1, dtype))


def maxwell(key, shape=(), dtype=None):
    """One-sided Maxwell values: the norm of three independent standard normals."""
    key = check_key("maxwell", key)
    dtype = _float_dtype("maxwell", dtype)
    shape = canonical_shape("maxwell", shape)
    z = normal(key, tuple(shape) + (3,), dtype)
    return jnp.linalg.norm(z, axis=-1)


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Double-sided Maxwell values ``sign * maxwell * scale + loc``; the result's shape is
    ``shape + broadcast(loc, scale).shape`` (``shape`` defaults to the parameters' shape)."""
    key = check_key("double_sided_maxwell", key)
    dtype = _float_dtype("double_sided_maxwell", dtype)
    shape = canonical_shape("double_sided_maxwell", shape)
    loc, scale = _as(loc, dtype), _as(scale, dtype)
    pshape = tuple(jnp.broadcast_shapes(_shape_of(loc), _shape_of(scale)))
    if not shape:
        shape = pshape
    shape = tuple(shape) + pshape
    k_max, k_sign = split(key, 2)
    m = maxwell(k_max, shape, dtype)
    sign = rademacher(k_sign, shape, dtype)
    return lax.add(lax.mul(lax.mul(sign, m), _bcast(scale, shape)), _bcast(loc, shape))


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull values by the inverse CDF: ``(-log1p(-u)) ** (1 / concentration) * scale``."""
    key = check_key("weibull_min", key)
    dtype = _float_dtype("weibull_min", dtype)
    shape = canonical_shape("weibull_min", shape)
    if isinstance(concentration, Tracer):
        inv = lax.div(np.asarray(1.0, dtype), _as(concentration, dtype))
    else:   # a concrete value: 1 / c in its own precision, as JAX's weakly typed 1.0 / c
        inv = _as(np.divide(1.0, np.asarray(concentration)), dtype)
    scale = _as(scale, dtype)
    _check_param_shape("weibull_min", shape, inv, scale)
    u = _uniform(key, shape, dtype, 0.0, 1.0)
    e = lax.neg(lax.log1p(lax.neg(u)))
    return lax.mul(lax.pow(e, _bcast(inv, shape)), _bcast(scale, shape))


def geometric(key, p, shape=None, dtype=None):
    """Geometric values (trials until the first success, >= 1): ``floor(log(u) / log1p(-p)) + 1``
    with ``u`` uniform in the dtype of ``p`` (promoted to float), ``u == 0`` taken as 1."""
    key = check_key("geometric", key)
    dtype = canonical_dtype(int if dtype is None else dtype)
    if dtype.kind not in "iu":
        raise TypeError(f"geometric: dtype must be an integer dtype, got {dtype}")
    p = _array(p)
    pdt = np.dtype(typeof(p).dtype) if isinstance(p, Tracer) else p.dtype
    if pdt.kind not in "f" and pdt != np.dtype(jnp.bfloat16):
        pdt = canonical_dtype(float)
        p = _as(p, pdt)
    shape = _param_shape("geometric", shape, p)
    u = _uniform(key, shape, pdt, 0.0, 1.0)
    zero = lax.eq(u, _bcast(np.asarray(0.0, pdt), shape))
    u = lax.select(zero, _bcast(np.asarray(1.0, pdt), shape), u)
    g = lax.floor(lax.div(lax.log(u), _bcast(lax.log1p(lax.neg(p)), shape)))
    return lax.convert_element_type(lax.add(g, np.asarray(1.0, pdt)), dtype)


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Multivariate normal values ``mean + factor @ z`` with ``z`` standard normal of shape
    ``shape + mean.shape[-1:]`` and ``factor @ factor.T == cov`` from ``method``
    (``'cholesky'``, ``'eigh'`` or ``'svd'``); ``shape`` defaults to the broadcast batch shape
    of ``mean`` and ``cov``."""
    key = check_key("multivariate_normal", key)
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    dtype = _float_dtype("multivariate_normal", dtype)
    mean, cov = _as(mean, dtype), _as(cov, dtype)
    ms, cs = _shape_of(mean), _shape_of(cov)
    if len(ms) < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {len(ms)}")
    if len(cs) < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {len(cs)}")
    n = ms[-1]
    if not all(same_dim(a, n) for a in cs[-2:]):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but "
                         f"got cov.shape == {cs}.")
    if shape is None:
        shape = tuple(jnp.broadcast_shapes(ms[:-1], cs[:-2]))
    else:
        shape = canonical_shape("multivariate_normal", shape)
        for ps in (ms[:-1], cs[:-2]):
            if len(ps) > len(shape) or any(not ((isinstance(a, int) and a == 1) or same_dim(a, b))
                                           for a, b in zip(ps[::-1], shape[::-1])):
                raise ValueError(f"multivariate_normal: the batch shapes of mean and cov must "
                                 f"broadcast to the shape argument {shape}, got {ms[:-1]} and "
                                 f"{cs[:-2]}")
    if method == "svd":
        u, s, _ = jnp.linalg.svd(cov)
        factor = u * jnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = jnp.linalg.eigh(cov)
        factor = v * jnp.sqrt(w[..., None, :])
    else:
        factor = jnp.linalg.cholesky(cov)
    z = normal(key, tuple(shape) + (n,), dtype)
    return mean + jnp.einsum("...ij,...j->...i", factor, z)


def lognormal(key, sigma=np.float32(1), shape=None, dtype=None):
    """Log-normal values ``exp(sigma * normal)``."""
    key = check_key("lognormal", key)
    dtype = _float_dtype("lognormal", dtype)
    sigma = _as(sigma, dtype)
    shape = _param_shape("lognormal", shape, sigma)
    return lax.exp(lax.mul(normal(key, shape, dtype), _bcast(sigma, shape)))


def rayleigh(key, scale, shape=None, dtype=None):
    """Rayleigh values ``scale * sqrt(-2 log u)``."""
    key = check_key("rayleigh", key)
    dtype = _float_dtype("rayleigh", dtype)
    scale = _as(scale, dtype)
    shape = _param_shape("rayleigh", shape, scale)
    u = _uniform(key, shape, dtype, 0.0, 1.0)
    return lax.mul(_bcast(scale, shape), lax.sqrt(lax.mul(lax.log(u), np.asarray(-2, dtype))))


def wald(key, mean, shape=None, dtype=None):
    """Wald (inverse Gaussian, unit shape) values by Michael, Schucany and Haas' method: a
    normal ``v`` (key ``split(key)[0]``) gives a root ``x``; ``x`` is kept when a uniform
    (key ``split(key)[1]``) is at most ``mean / (mean + x)``, else ``mean^2 / x``."""
    key = check_key("wald", key)
    dtype = _float_dtype("wald", dtype)
    mean = _as(mean, dtype)
    shape = _param_shape("wald", shape, mean)
    k1, k2 = split(key, 2)
    mu = _bcast(mean, shape)
    v = normal(k1, shape, dtype)
    z = _uniform(k2, shape, dtype, 0.0, 1.0)
    y = lax.integer_pow(v, 2)
    mu2 = lax.integer_pow(mu, 2)
    c = lambda x: np.asarray(x, dtype)  # noqa: E731
    root = lax.sqrt(lax.add(lax.mul(lax.mul(c(4), mu), y), lax.mul(mu2, lax.integer_pow(y, 2))))
    x = lax.sub(lax.add(mu, lax.div(lax.mul(mu2, y), c(2))), lax.mul(lax.div(mu, c(2)), root))
    return lax.select(lax.le(z, lax.div(mu, lax.add(mu, x))), x, lax.div(mu2, x))


def triangular(key, left, mode, right, shape=None, dtype=None):
    """Triangular values on ``[left, right]`` with peak ``mode`` (inverse CDF)."""
    key = check_key("triangular", key)
    dtype = _float_dtype("triangular", dtype)
    left, mode, right = _as(left, dtype), _as(mode, dtype), _as(right, dtype)
    shape = _param_shape("triangular", shape, left, mode, right)
    lo, md, hi = _bcast(left, shape), _bcast(mode, shape), _bcast(right, shape)
    width = lax.sub(hi, lo)
    u = _uniform(key, shape, dtype, 0.0, 1.0)
    below = lax.add(lo, lax.sqrt(lax.mul(lax.mul(u, width), lax.sub(md, lo))))
    above = lax.sub(hi, lax.sqrt(lax.mul(lax.mul(lax.sub(np.asarray(1, dtype), u), width),
                                         lax.sub(hi, md))))
    return lax.select(lax.lt(u, lax.div(lax.sub(md, lo), width)), below, above)
