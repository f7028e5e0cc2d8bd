"""The compiled algorithms of ``igamma``, ``igammac`` and ``bessel_i0e``, in ``dynjax.lax`` terms.

XLA has no operation for these functions (CHLO has ``lgamma``, ``digamma``, ``erf`` ...,
``bessel_i1e`` but not these), so their lowering rules (``lowering/special.py``) trace the
functions below on a flat array of the operand dtype and lower the traced program in place.
They run eagerly as well (on the numpy impls), which is how ``tests/test_scipy.py`` checks
them against scipy at points that are costly to reach through a compile.

* ``igamma_igammac(a, x)`` gives ``(P(a, x), Q(a, x))``: for ``x < a + 1`` the power series
  ``P = x**a e**-x / Gamma(a) * sum_n x**n / (a (a + 1) ... (a + n))``, for ``x >= a + 1``
  the continued fraction of ``Q`` evaluated by the modified Lentz method, and the other one
  as the complement. Both loops stop when every element has converged (the relative size of
  the last term or correction below the dtype's epsilon) or after ``MAX_ITERATIONS``; each
  converges in ``O(sqrt(a))`` steps near ``x = a``, so results are accurate to rounding
  (times ``a`` in the prefactor ``a log x - x - lgamma(a)``) for ``a`` up to about ``1e5``.
* ``bessel_i0e(x)``: ``exp(-|x|) sum_k (x**2 / 4)**k / (k!)**2`` for ``|x| <= 30`` (positive
  terms, no cancellation), and the asymptotic expansion
  ``(2 pi |x|)**-1/2 sum_k c_k``, ``c_0 = 1``, ``c_{k+1} = c_k (2k + 1)**2 / (8 (k + 1) |x|)``,
  beyond, where its smallest term is below ``e**-60``.
"""
from __future__ import annotations

import numpy as np

from ..core.avals import finfo
from . import api as L
from .special import lgamma

#: the iteration cap of every loop here
MAX_ITERATIONS = 2000


def _dtype(x):
    a = getattr(x, "aval", None)
    return a.dtype if a is not None else np.asarray(x).dtype


def _k(value, dt):
    """``value`` as a rank-0 constant of dtype ``dt`` (rank-0 operands broadcast)."""
    return np.asarray(value, dtype=dt)


def _rank(v):
    a = getattr(v, "aval", None)
    return a.ndim if a is not None else np.ndim(v)


def _where(pred, x, y):
    """``select`` with rank-0 branches broadcast to the predicate's shape."""
    if _rank(pred):
        x = x if _rank(x) else L.broadcast_in_dim(x, pred.shape, ())
        y = y if _rank(y) else L.broadcast_in_dim(y, pred.shape, ())
    return L.select(pred, x, y)


def _any(pred):
    """Whether any element of the 1-D bool ``pred`` holds."""
    return L.gt(L.reduce_max(L.convert_element_type(pred, np.int32), (0,)), np.int32(0))


def _loop(body, state):
    """``while i < MAX_ITERATIONS and not all(done): state = body(state)``, for a
    ``state = (i, done, ...)``."""
    from ..control_flow.lax_api import while_loop

    def cond(s):
        return L.bitwise_and(L.lt(s[0], np.int64(MAX_ITERATIONS)), _any(L.bitwise_not(s[1])))
    return while_loop(cond, body, state)


def igamma_igammac(a, x):
    """``(P(a, x), Q(a, x))`` for 1-D float arrays ``a`` and ``x`` of one dtype and size."""
    dt = _dtype(x)
    eps, tiny = float(finfo(dt).eps), float(finfo(dt).tiny)
    one, zero = _k(1, dt), _k(0, dt)
    nan = L.bitwise_or(L.ne(a, a), L.ne(x, x))
    bad = L.bitwise_or(nan, L.bitwise_or(L.bitwise_or(L.lt(x, zero), L.lt(a, zero)),
                                         L.bitwise_or(L.bitwise_and(L.eq(a, zero), L.eq(x, zero)),
                                                      L.eq(a, _k(np.inf, dt)))))
    x_zero = L.eq(x, zero)                       # P = 0 (a > 0)
    p_one = L.bitwise_or(L.eq(a, zero), L.eq(x, _k(np.inf, dt)))   # P = 1
    special = L.bitwise_or(bad, L.bitwise_or(x_zero, p_one))
    series = L.lt(x, L.add(a, one))
    # safe operands: every element of each loop converges quickly where it is not used
    a_s = _where(special, one, a)
    x_s = _where(special, one, x)
    x_ser = _where(series, x_s, zero)            # x = 0: the series stops at once
    a_cf = _where(series, one, a_s)              # (a, x) = (1, 2): the fraction stops at once
    x_cf = _where(series, _k(2, dt), x_s)
    log_pre = L.sub(L.sub(L.mul(a_s, L.log(x_s)), x_s), lgamma(a_s))
    pre = L.exp(log_pre)

    # the series: term_n = x**n / (a (a+1) ... (a+n)), sum of them
    inv_a = L.div(one, a_s)
    n = x.shape[0]
    done0 = L.broadcast_in_dim(np.bool_(False), (n,), ())

    def series_body(s):
        i, done, ap, term, total = s
        ap = L.add(ap, one)
        term = L.mul(term, L.div(x_ser, ap))
        total = L.add(total, term)
        done = L.bitwise_or(done, L.le(L.abs(term), L.mul(L.abs(total), _k(eps, dt))))
        return L.add(i, np.int64(1)), done, ap, term, total

    *_, s_total = _loop(series_body, (np.int64(0), done0, a_s, inv_a, inv_a))
    p_series = L.mul(pre, s_total)

    # the continued fraction of Q (modified Lentz)
    def fix(v):
        return _where(L.lt(L.abs(v), _k(tiny, dt)), _k(tiny, dt), v)

    b0 = L.sub(L.add(x_cf, one), a_cf)
    c0 = L.broadcast_in_dim(_k(1 / tiny, dt), (n,), ())
    d0 = L.div(one, fix(b0))

    def cf_body(s):
        i, done, b, c, d, h = s
        k = L.convert_element_type(L.add(i, np.int64(1)), dt)
        an = L.neg(L.mul(k, L.sub(k, a_cf)))
        b = L.add(b, _k(2, dt))
        d = fix(L.add(L.mul(an, d), b))
        c = fix(L.add(b, L.div(an, c)))
        d = L.div(one, d)
        delta = L.mul(d, c)
        h = L.mul(h, delta)
        done = L.bitwise_or(done, L.le(L.abs(L.sub(delta, one)), _k(eps, dt)))
        return L.add(i, np.int64(1)), done, b, c, d, h

    *_, h = _loop(cf_body, (np.int64(0), done0, b0, c0, d0, d0))
    q_cf = L.mul(pre, h)

    p = _where(series, p_series, L.sub(one, q_cf))
    q = _where(series, L.sub(one, p_series), q_cf)
    p = _where(x_zero, zero, _where(p_one, one, p))
    q = _where(x_zero, one, _where(p_one, zero, q))
    nanv = _k(np.nan, dt)
    return _where(bad, nanv, p), _where(bad, nanv, q)


def igamma(a, x):
    return igamma_igammac(a, x)[0]


def igammac(a, x):
    return igamma_igammac(a, x)[1]


def bessel_i0e(x):
    """``exp(-|x|) I0(x)`` for a 1-D float array ``x``."""
    dt = _dtype(x)
    eps = float(finfo(dt).eps)
    one, zero = _k(1, dt), _k(0, dt)
    ax = L.abs(x)
    nan = L.ne(x, x)
    large = L.gt(ax, _k(30, dt))
    n = x.shape[0]
    done0 = L.broadcast_in_dim(np.bool_(False), (n,), ())
    # the power series (|x| <= 30; other elements use x = 0, which stops at once)
    q = L.div(L.mul(_where(large, zero, _where(nan, zero, ax)), _where(large, zero, _where(nan, zero, ax))),
              _k(4, dt))

    def series_body(s):
        i, done, term, total = s
        k = L.convert_element_type(L.add(i, np.int64(1)), dt)
        term = L.mul(term, L.div(q, L.mul(k, k)))
        total = L.add(total, term)
        done = L.bitwise_or(done, L.le(term, L.mul(total, _k(eps, dt))))
        return L.add(i, np.int64(1)), done, term, total

    ones = L.broadcast_in_dim(one, (n,), ())
    *_, s_total = _loop(series_body, (np.int64(0), done0, ones, ones))
    small_val = L.mul(L.exp(L.neg(ax)), s_total)
    # the asymptotic expansion (|x| > 30; other elements use x = 1e30, which stops at once)
    xa = _where(large, ax, _k(1e30, dt))

    def asym_body(s):
        i, done, term, total = s
        k = L.convert_element_type(i, dt)
        odd = L.add(L.mul(_k(2, dt), k), one)
        term = L.mul(term, L.div(L.mul(odd, odd), L.mul(L.mul(_k(8, dt), L.add(k, one)), xa)))
        total = L.add(total, term)
        done = L.bitwise_or(done, L.le(term, L.mul(total, _k(eps, dt))))
        return L.add(i, np.int64(1)), done, term, total

    *_, a_total = _loop(asym_body, (np.int64(0), done0, ones, ones))
    large_val = L.mul(L.rsqrt(L.mul(_k(2 * np.pi, dt), xa)), a_total)
    out = _where(large, large_val, small_val)
    out = _where(L.eq(ax, _k(np.inf, dt)), zero, out)
    return _where(nan, x, out)
