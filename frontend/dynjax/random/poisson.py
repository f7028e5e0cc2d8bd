"""``poisson``: Poisson values with JAX's algorithms and key discipline, so that the same key,
rates and dtype give JAX's numbers.

``lam`` is broadcast to ``shape`` and converted to float32 (as in JAX). Rates below 10 (and
NaN) use Knuth's method: all elements advance together, each round taking ``key, k =
split(key)`` and one float32 uniform per element, counting while the running sum of ``log u``
stays above ``-lam``. Larger rates use Hörmann's transformed rejection (PTRS, "The
transformed rejection method for generating Poisson random variables", 1993): each round
takes ``key, k0, k1 = split(key, 3)`` and two uniforms per element until every element has
accepted. Both loops also stop after ``iinfo(dtype).max`` rounds. ``lam == 0`` gives 0.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import canonical_dtype
from ..core.trace import Tracer
from .keys import canonical_shape, check_key, split
from .samplers import _bcast, _shape_of, _uniform

__all__ = ["poisson"]

_F32 = np.dtype(np.float32)


def _full(v, dtype, shape):
    return _bcast(np.asarray(v, dtype), shape)


def _any(x, shape):
    return lax.reduce_or(x, tuple(range(len(shape)))) if shape else x


def _knuth(key, lam, shape, dtype, max_iters):
    neg_lam = lax.neg(lam)

    def body(state):
        i, k, key, log_prod = state
        ks = split(key, 2)
        k = lax.select(lax.gt(log_prod, neg_lam), lax.add(k, _full(1, dtype, shape)), k)
        u = _uniform(ks[1], shape, _F32, 0.0, 1.0)
        return lax.add(i, np.int64(1)), k, ks[0], lax.add(log_prod, lax.log(u))

    def cond(state):
        i, _, _, log_prod = state
        return lax.bitwise_and(_any(lax.gt(log_prod, neg_lam), shape), lax.lt(i, max_iters))

    init = (np.int64(0), _full(0, dtype, shape), key, _full(0, _F32, shape))
    k = lax.while_loop(cond, body, init)[1]
    return lax.sub(k, _full(1, dtype, shape))


def _rejection(key, lam, shape, dtype, max_iters):
    c = lambda v: _full(v, _F32, shape)  # noqa: E731
    log_lam = lax.log(lam)
    b = lax.add(c(0.931), lax.mul(c(2.53), lax.sqrt(lam)))
    a = lax.add(c(-0.059), lax.mul(c(0.02483), b))
    inv_alpha = lax.add(c(1.1239), lax.div(c(1.1328), lax.sub(b, c(3.4))))
    v_r = lax.sub(c(0.9277), lax.div(c(3.6224), lax.sub(b, c(2.0))))

    def body(state):
        i, k_out, accepted, key = state
        ks = split(key, 3)
        u = lax.sub(_uniform(ks[1], shape, _F32, 0.0, 1.0), c(0.5))
        v = _uniform(ks[2], shape, _F32, 0.0, 1.0)
        us = lax.sub(c(0.5), lax.abs(u))
        k = lax.floor(lax.add(lax.add(lax.mul(lax.add(lax.div(lax.mul(c(2.0), a), us), b), u), lam),
                              c(0.43)))
        s = lax.log(lax.div(lax.mul(v, inv_alpha), lax.add(lax.div(a, lax.mul(us, us)), b)))
        t = lax.sub(lax.add(lax.neg(lam), lax.mul(k, log_lam)), lax.lgamma(lax.add(k, c(1.0))))
        accept1 = lax.bitwise_and(lax.ge(us, c(0.07)), lax.le(v, v_r))
        reject = lax.bitwise_or(lax.lt(k, c(0.0)), lax.bitwise_and(lax.lt(us, c(0.013)), lax.gt(v, us)))
        accept = lax.bitwise_or(accept1, lax.bitwise_and(lax.bitwise_not(reject), lax.le(s, t)))
        return (lax.add(i, np.int64(1)), lax.select(accept, k, k_out),
                lax.bitwise_or(accepted, accept), ks[0])

    def cond(state):
        i, _, accepted, _ = state
        return lax.bitwise_and(_any(lax.bitwise_not(accepted), shape), lax.lt(i, max_iters))

    init = (np.int64(0), c(-1.0), _full(False, np.bool_, shape), key)
    k = lax.while_loop(cond, body, init)[1]
    return lax.convert_element_type(k, dtype)


def poisson(key, lam, shape=None, dtype=None):
    """Poisson values of rate ``lam`` (integer dtype, int64 by default); ``shape`` defaults to
    ``lam``'s shape."""
    key = check_key("poisson", key)
    dtype = canonical_dtype(int if dtype is None else dtype)
    if dtype.kind not in "iu":
        raise TypeError(f"poisson: dtype must be an integer dtype, got {dtype}")
    lam = lam if isinstance(lam, Tracer) else np.asarray(lam)
    shape = _shape_of(lam) if shape is None else canonical_shape("poisson", shape)
    lam = lax.convert_element_type(_bcast(lam, shape), _F32)
    use_knuth = lax.bitwise_or(lax.ne(lam, lam), lax.lt(lam, _full(10.0, _F32, shape)))
    lam_knuth = lax.select(use_knuth, lam, _full(0.0, _F32, shape))
    lam_rej = lax.select(use_knuth, _full(1e5, _F32, shape), lam)
    max_iters = np.int64(np.iinfo(dtype).max) if np.iinfo(dtype).max < 2 ** 63 else np.int64(2 ** 63 - 1)
    out = lax.select(use_knuth, _knuth(key, lam_knuth, shape, dtype, max_iters),
                     _rejection(key, lam_rej, shape, dtype, max_iters))
    return lax.select(lax.eq(lam, _full(0.0, _F32, shape)), _full(0, dtype, shape), out)
