"""``binomial`` and ``multinomial``: binomial values with JAX's algorithms and key discipline, so that the same
key, parameters and dtype give JAX's numbers.

``n`` and ``p`` are broadcast to ``shape`` in ``p``'s float dtype and ``n`` is floored; the
sampler works with ``q = min(p, 1 - p)`` and reflects the result when ``p >= 1/2``. Where
``n q <= 10`` (or ``n`` is NaN or negative) it counts geometric waiting times (inversion: each
round ``k, key = split(key)`` and one uniform per element, until the waiting times sum past
``n``); elsewhere it uses Hörmann's BTRS transformed rejection ("The generation of binomial
random variates", 1993: each round ``key, k0, k1 = split(key, 3)`` and two uniforms per
element until every element has accepted), with the Stirling-series tail of ``log k!`` (a
table for ``k <= 9``). Invalid parameters give NaN, an infinite ``n`` gives inf. All
elements advance together in one ``while_loop`` per method, so sizes may be dynamic.

``multinomial`` draws the categories in order with a ``scan``: category ``i`` takes
``binomial(keys[i], remaining n, p_i / (p_i + ... + p_last))`` with ``keys = split(key,
categories)``, as JAX does.
"""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core.trace import Tracer, typeof
from .keys import canonical_shape, check_key, split
from .samplers import _bcast, _check_param_shape, _float_dtype, _shape_of, _uniform

__all__ = ["binomial", "multinomial"]

# log(k!) minus its Stirling approximation (k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2
_TAIL = [math.lgamma(k + 1) - (k + 0.5) * math.log(k + 1) + (k + 1) - 0.5 * math.log(2 * math.pi)
         for k in range(10)]


def _stirling_tail(k, dtype):
    """The tail at ``k``: the table for ``k <= 9``; above, the series' first terms evaluated at
    ``k`` clamped to ``[0, 9]`` (as JAX evaluates them)."""
    shape = _shape_of(k)
    c = lambda v: _bcast(np.asarray(v, dtype), shape)  # noqa: E731
    kc = lax.clamp(np.asarray(0.0, dtype), k, np.asarray(9.0, dtype))
    k1 = lax.add(kc, c(1.0))
    sq = lax.mul(k1, k1)
    approx = lax.div(lax.sub(c(1.0 / 12), lax.div(lax.sub(c(1.0 / 360), lax.div(c(1.0 / 1260), sq)), sq)), k1)
    idx = lax.convert_element_type(lax.floor(kc), np.int32)
    table = jnp.take(jnp.asarray(np.asarray(_TAIL, dtype)), idx)
    return lax.select(lax.le(k, c(9.0)), table, approx)


def _any(x, shape):
    return lax.reduce_or(x, tuple(range(len(shape)))) if shape else x


def _inversion(key, count, q, shape, dtype):
    pdt = np.dtype(typeof(q).dtype) if isinstance(q, Tracer) else np.asarray(q).dtype
    c = lambda v: _bcast(np.asarray(v, pdt), shape)  # noqa: E731
    log1mq = lax.log1p(lax.neg(q))

    def body(state):
        i, num, total, key = state
        ks = split(key, 2)
        num = lax.select(lax.le(total, count), lax.add(num, c(1.0)), num)
        u = _uniform(ks[0], shape, pdt, 0.0, 1.0)
        return lax.add(i, np.int64(1)), num, lax.add(total, lax.ceil(lax.div(lax.log(u), log1mq))), ks[1]

    def cond(state):
        return _any(lax.le(state[2], count), shape)

    num = lax.while_loop(cond, body, (np.int64(0), c(0.0), c(0.0), key))[1]
    return lax.convert_element_type(lax.sub(num, c(1.0)), dtype)


def _btrs(key, count, q, shape, dtype):
    pdt = np.dtype(typeof(q).dtype) if isinstance(q, Tracer) else np.asarray(q).dtype
    c = lambda v: _bcast(np.asarray(v, pdt), shape)  # noqa: E731
    one = c(1.0)
    sd = lax.sqrt(lax.mul(lax.mul(count, q), lax.sub(one, q)))
    b = lax.add(c(1.15), lax.mul(c(2.53), sd))
    a = lax.add(lax.add(c(-0.0873), lax.mul(c(0.0248), b)), lax.mul(c(0.01), q))
    mid = lax.add(lax.mul(count, q), c(0.5))
    v_r = lax.sub(c(0.92), lax.div(c(4.2), b))
    r = lax.div(q, lax.sub(one, q))
    alpha = lax.mul(lax.add(c(2.83), lax.div(c(5.1), b)), sd)
    m = lax.floor(lax.mul(lax.add(count, one), q))
    half = c(0.5)
    fixed = lax.add(lax.mul(lax.add(m, half), lax.log(lax.div(lax.add(m, one),
                                                              lax.mul(r, lax.add(lax.sub(count, m), one))))),
                    lax.add(_stirling_tail(m, pdt), _stirling_tail(lax.sub(count, m), pdt)))

    def body(state):
        i, k_out, accepted, key = state
        ks = split(key, 3)
        u = lax.sub(_uniform(ks[1], shape, pdt, 0.0, 1.0), half)
        v = _uniform(ks[2], shape, pdt, 0.0, 1.0)
        us = lax.sub(half, lax.abs(u))
        accept1 = lax.bitwise_and(lax.ge(us, c(0.07)), lax.le(v, v_r))
        k = lax.floor(lax.add(lax.mul(lax.add(lax.div(lax.mul(c(2.0), a), us), b), u), mid))
        reject = lax.bitwise_or(lax.lt(k, c(0.0)), lax.gt(k, count))
        lv = lax.log(lax.div(lax.mul(v, alpha), lax.add(lax.div(a, lax.mul(us, us)), b)))
        cmk1 = lax.add(lax.sub(count, k), one)
        ub = lax.add(lax.add(fixed, lax.mul(lax.add(count, one), lax.log(lax.div(lax.add(lax.sub(count, m), one), cmk1)))),
                     lax.mul(lax.add(k, half), lax.log(lax.div(lax.mul(r, cmk1), lax.add(k, one)))))
        ub = lax.sub(lax.sub(ub, _stirling_tail(k, pdt)), _stirling_tail(lax.sub(count, k), pdt))
        accept = lax.bitwise_or(accept1, lax.bitwise_and(lax.bitwise_not(reject), lax.le(lv, ub)))
        return (lax.add(i, np.int64(1)), lax.select(accept, k, k_out),
                lax.bitwise_or(accepted, accept), ks[0])

    def cond(state):
        return _any(lax.bitwise_not(state[2]), shape)

    init = (np.int64(0), c(-1.0), _bcast(np.asarray(False), shape), key)
    return lax.convert_element_type(lax.while_loop(cond, body, init)[1], dtype)


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(n, p) values as floats (``dtype``, float64 by default); ``shape`` defaults to
    the broadcast shape of ``n`` and ``p``."""
    key = check_key("binomial", key)
    dtype = _float_dtype("binomial", dtype)
    p = p if isinstance(p, Tracer) else np.asarray(p)
    pdt = np.dtype(typeof(p).dtype) if isinstance(p, Tracer) else p.dtype
    if pdt.kind != "f":
        pdt = np.dtype(np.float64)
    p = lax.convert_element_type(p, pdt)
    n = lax.convert_element_type(n if isinstance(n, Tracer) else np.asarray(n), pdt)
    if shape is None:
        shape = tuple(jnp.broadcast_shapes(_shape_of(n), _shape_of(p)))
    else:
        shape = canonical_shape("binomial", shape)
        _check_param_shape("binomial", shape, n, p)
    count, prob = _bcast(n, shape), _bcast(p, shape)
    c = lambda v, dt=pdt: _bcast(np.asarray(v, dt), shape)  # noqa: E731
    p_low = lax.lt(prob, c(0.5))
    q = lax.select(p_low, prob, lax.sub(c(1.0), prob))
    bad_count = lax.bitwise_or(lax.ne(count, count), lax.lt(count, c(0.0)))
    inf_count = lax.eq(lax.abs(count), c(np.inf))
    q_nan = lax.ne(q, q)
    q_neg = lax.lt(q, c(0.0))
    q = lax.select(lax.bitwise_or(q_nan, q_neg), c(0.01), q)
    use_inv = lax.bitwise_or(bad_count, lax.le(lax.mul(count, q), c(10.0)))
    count = lax.floor(count)
    out = lax.select(use_inv,
                     _inversion(key, lax.select(use_inv, count, c(0.0)), q, shape, dtype),
                     _btrs(key, lax.select(use_inv, c(1e4), count), lax.select(use_inv, c(0.5), q),
                           shape, dtype))
    invalid = lax.bitwise_or(lax.bitwise_or(q_neg, q_nan), bad_count)
    out = lax.select(invalid, c(np.nan, dtype), out)
    out = lax.select(lax.bitwise_and(inf_count, lax.bitwise_not(invalid)), c(np.inf, dtype), out)
    keep = lax.bitwise_or(lax.bitwise_or(p_low, bad_count), lax.bitwise_or(q_nan, inf_count))
    return lax.select(keep, out, lax.sub(lax.convert_element_type(count, dtype), out))


def _float_of(x):
    dt = np.dtype(typeof(x).dtype) if isinstance(x, Tracer) else np.asarray(x).dtype
    return dt if dt.kind == "f" else None


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Counts of ``n`` draws over the categories of ``p``'s last axis (floats of ``dtype``,
    float64 by default); ``shape`` (default ``p.shape``) ends with the number of categories and
    ``n`` broadcasts to ``shape[:-1]``."""
    key = check_key("multinomial", key)
    out_dtype = _float_dtype("multinomial", dtype)
    del unroll   # a scheduling hint in JAX
    p = p if isinstance(p, Tracer) else np.asarray(p)
    n = n if isinstance(n, Tracer) else np.asarray(n)
    pdt = _float_of(p) or np.dtype(np.float64)
    ndt = _float_of(n)
    dt = pdt if ndt is None else np.promote_types(pdt, ndt)
    p, n = lax.convert_element_type(p, dt), lax.convert_element_type(n, dt)
    ps = _shape_of(p)
    if len(ps) < 1:
        raise ValueError(f"multinomial: p must have at least one dimension, got shape {ps}")
    shape = ps if shape is None else canonical_shape("multinomial", shape)
    if len(shape) < 1:
        raise ValueError("multinomial: shape must have at least one dimension (the categories)")
    _check_param_shape("multinomial", tuple(shape[:-1]), n)
    _check_param_shape("multinomial", tuple(shape), p)
    n = _bcast(n, tuple(shape[:-1]))
    p = jnp.moveaxis(_bcast(p, tuple(shape)), -1, 0)
    remaining = jnp.flip(jnp.cumsum(jnp.flip(p, 0), axis=0), 0)
    ratios = p / jnp.where(remaining == 0, jnp.ones_like(remaining), remaining)
    keys = split(key, shape[-1])

    def step(rest, ratio_key):
        ratio, k = ratio_key
        count = binomial(k, rest, jnp.clip(ratio, 0, 1), dtype=dt)
        return lax.sub(rest, count), count

    _, counts = lax.scan(step, n, (ratios, keys))
    return lax.convert_element_type(jnp.moveaxis(counts, 0, -1), out_dtype)
