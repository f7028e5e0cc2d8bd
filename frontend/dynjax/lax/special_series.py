"""The compiled algorithms of ``igamma``, ``igammac``, ``bessel_i0e``, ``igamma_grad_a``,
``random_gamma_grad`` and ``betainc``, in ``dynjax.lax`` terms.

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
* ``igamma_grad_a`` / ``random_gamma_grad``: the same series and continued fraction, with the
  derivatives in ``a`` of their terms carried along (forward mode by hand), see
  ``_igamma_da_parts``.
* ``betainc(a, b, x)``: the continued fraction of the incomplete beta function (see
  ``betainc``).
"""
from __future__ import annotations

import numpy as np

from ..core.avals import finfo
from . import api as L
from .special import digamma, lgamma

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


# ----------------------------------------------------------------------------------------------
# the derivative of P(a, x) in a: the series and the continued fraction differentiated in a
# ----------------------------------------------------------------------------------------------
def _igamma_da_parts(a, x):
    """``(bad, x_zero, series, w)`` for 1-D ``a``, ``x``: ``w`` is ``-(dP/da) / (x**(a-1) e**-x /
    Gamma(a))`` divided by ``x`` (``random_gamma_grad / x``) where ``bad`` / ``x_zero`` do not
    hold. With ``P = pre S`` (series, ``pre = x**a e**-x / Gamma(a)``) and ``Q = pre h``
    (continued fraction), ``dP/da = pre ((log x - digamma(a)) S + dS/da)`` and ``dQ/da = pre
    ((log x - digamma(a)) h + dh/da)``; the derivatives of the terms ride along in the loops."""
    dt = _dtype(x)
    eps, tiny = float(finfo(dt).eps), float(finfo(dt).tiny)
    one, zero = _k(1, dt), _k(0, dt)
    nan = L.bitwise_or(L.ne(a, a), L.ne(x, x))
    bad = L.bitwise_or(nan, L.bitwise_or(L.lt(x, zero), L.bitwise_or(L.le(a, zero), L.eq(a, _k(np.inf, dt)))))
    x_zero = L.eq(x, zero)
    special = L.bitwise_or(bad, L.bitwise_or(x_zero, L.eq(x, _k(np.inf, dt))))
    series = L.lt(x, L.add(a, one))
    a_s = _where(special, one, a)
    x_s = _where(special, one, x)
    x_ser = _where(series, x_s, zero)
    a_cf = _where(series, one, a_s)
    x_cf = _where(series, _k(2, dt), x_s)
    n = x.shape[0]
    done0 = L.broadcast_in_dim(np.bool_(False), (n,), ())

    # the series: t_n = x**n / (a (a+1) ... (a+n)), dt_n/da = t_n * -(1/a + ... + 1/(a+n))
    inv_a = L.div(one, a_s)

    def series_body(s):
        i, done, ap, t, dl, total, dtotal = s
        ap = L.add(ap, one)
        t = L.mul(t, L.div(x_ser, ap))
        dl = L.sub(dl, L.div(one, ap))
        total = L.add(total, t)
        dterm = L.mul(t, dl)
        dtotal = L.add(dtotal, dterm)
        small = L.bitwise_and(L.le(L.abs(t), L.mul(L.abs(total), _k(eps, dt))),
                              L.le(L.abs(dterm), L.mul(L.abs(dtotal), _k(eps, dt))))
        return L.add(i, np.int64(1)), L.bitwise_or(done, small), ap, t, dl, total, dtotal

    init = (np.int64(0), done0, a_s, inv_a, L.neg(inv_a), inv_a, L.neg(L.mul(inv_a, inv_a)))
    *_, s_total, s_dtotal = _loop(series_body, init)

    # the continued fraction of Q (modified Lentz), with the derivatives of b, c, d, h in a
    def fix(v):
        return _where(L.lt(L.abs(v), _k(tiny, dt)), _k(tiny, dt), v)

    b0 = L.sub(L.add(x_cf, one), a_cf)
    c0 = L.broadcast_in_dim(_k(1 / tiny, dt), (n,), ())
    d0 = L.div(one, fix(b0))
    dd0 = L.mul(d0, d0)
    zeros = L.broadcast_in_dim(zero, (n,), ())

    def cf_body(s):
        i, done, b, c, dc, d, dd, h, dh = s
        k = L.convert_element_type(L.add(i, np.int64(1)), dt)
        an = L.neg(L.mul(k, L.sub(k, a_cf)))
        b = L.add(b, _k(2, dt))
        big_d = fix(L.add(L.mul(an, d), b))
        d_big_d = L.sub(L.add(L.mul(k, d), L.mul(an, dd)), one)
        c_new = fix(L.add(b, L.div(an, c)))
        dc = L.sub(L.add(L.div(k, c), L.neg(one)), L.div(L.mul(an, dc), L.mul(c, c)))
        c = c_new
        d = L.div(one, big_d)
        dd = L.neg(L.mul(d_big_d, L.mul(d, d)))
        delta = L.mul(d, c)
        d_delta = L.add(L.mul(dd, c), L.mul(d, dc))
        dh = L.add(L.mul(dh, delta), L.mul(h, d_delta))
        h = L.mul(h, delta)
        small = L.bitwise_and(L.le(L.abs(L.sub(delta, one)), _k(eps, dt)),
                              L.le(L.abs(L.mul(h, d_delta)), L.mul(L.abs(dh), _k(eps, dt))))
        return L.add(i, np.int64(1)), L.bitwise_or(done, small), b, c, dc, d, dd, h, dh

    *_, h, dh = _loop(cf_body, (np.int64(0), done0, b0, c0, zeros, d0, dd0, d0, dd0))
    log_term = L.sub(L.log(x_s), digamma(a_s))
    w_series = L.neg(L.add(L.mul(log_term, s_total), s_dtotal))
    w_cf = L.add(L.mul(log_term, h), dh)
    return bad, x_zero, series, _where(series, w_series, w_cf), x_s, a_s


def random_gamma_grad(a, x):
    """``-(dP/da) / (dP/dx)`` for 1-D float arrays ``a``, ``x`` (0 at ``x = 0``; NaN for
    ``a <= 0``, ``x < 0``, ``x = inf`` and NaN operands, as JAX)."""
    dt = _dtype(x)
    bad, x_zero, _, w, x_s, _ = _igamma_da_parts(a, x)
    out = _where(x_zero, _k(0, dt), L.mul(x_s, w))
    return _where(L.bitwise_or(bad, L.eq(x, _k(np.inf, dt))), _k(np.nan, dt), out)


def igamma_grad_a(a, x):
    """``dP(a, x)/da`` for 1-D float arrays ``a``, ``x`` (0 at ``x = 0``; NaN for ``a <= 0``,
    ``x < 0``, ``x = inf`` and NaN operands, as JAX)."""
    dt = _dtype(x)
    bad, x_zero, _, w, x_s, a_s = _igamma_da_parts(a, x)
    # dP/da = -w x density = -w pre, pre = exp(a log x - x - lgamma(a))
    pre = L.exp(L.sub(L.sub(L.mul(a_s, L.log(x_s)), x_s), lgamma(a_s)))
    out = _where(x_zero, _k(0, dt), L.neg(L.mul(w, pre)))
    return _where(L.bitwise_or(bad, L.eq(x, _k(np.inf, dt))), _k(np.nan, dt), out)


# ----------------------------------------------------------------------------------------------
# the regularized incomplete beta function
# ----------------------------------------------------------------------------------------------
def betainc(a, b, x):
    """``I_x(a, b)`` for 1-D float arrays of one dtype and size: the continued fraction
    (DLMF 8.17.22) by the modified Lentz method, on ``(a, b, x)`` where ``x < (a + 1) / (a + b +
    2)`` and on ``(b, a, 1 - x)`` (then ``1 - I``) elsewhere, where it converges in
    ``O(sqrt(max(a, b)))`` steps; the prefactor ``x**a (1 - x)**b / (a B(a, b))`` is
    ``exp(a log x + b log1p(-x) + lgamma(a + b) - lgamma(a + 1) - lgamma(b))``. Special values
    as scipy: NaN outside ``a, b >= 0``, ``0 <= x <= 1`` and for ``a = b = 0``; ``a = 0`` or
    ``b = inf`` gives 1 for ``x > 0``; ``b = 0`` or ``a = inf`` gives 0 for ``x < 1``."""
    dt = _dtype(x)
    eps, tiny = float(finfo(dt).eps), float(finfo(dt).tiny)
    one, zero, inf = _k(1, dt), _k(0, dt), _k(np.inf, dt)
    a_zero = L.bitwise_or(L.eq(a, zero), L.eq(b, inf))
    b_zero = L.bitwise_or(L.eq(b, zero), L.eq(a, inf))
    x_zero, x_one = L.eq(x, zero), L.eq(x, one)
    nan = L.bitwise_or(L.bitwise_or(L.ne(a, a), L.ne(b, b)), L.ne(x, x))
    bad = L.bitwise_or(L.bitwise_or(L.lt(a, zero), L.lt(b, zero)), L.bitwise_or(L.lt(x, zero), L.gt(x, one)))
    bad = L.bitwise_or(bad, L.bitwise_or(nan, L.bitwise_and(a_zero, b_zero)))
    res_zero = L.bitwise_or(L.bitwise_and(b_zero, L.bitwise_not(x_one)), L.bitwise_and(a_zero, x_zero))
    res_one = L.bitwise_or(L.bitwise_and(a_zero, L.bitwise_not(x_zero)), L.bitwise_and(b_zero, x_one))
    special = L.bitwise_or(bad, L.bitwise_or(res_zero, L.bitwise_or(res_one, L.bitwise_or(x_zero, x_one))))
    flip = L.gt(x, L.div(L.add(a, one), L.add(L.add(a, b), _k(2, dt))))
    # safe operands: (1, 1, 0) stops at once
    aa = _where(special, one, _where(flip, b, a))
    bb = _where(special, one, _where(flip, a, b))
    xx = _where(special, zero, _where(flip, L.sub(one, x), x))
    n = x.shape[0]
    done0 = L.broadcast_in_dim(np.bool_(False), (n,), ())

    def fix(v):
        return _where(L.lt(L.abs(v), _k(tiny, dt)), _k(tiny, dt), v)

    qab, qap, qam = L.add(aa, bb), L.add(aa, one), L.sub(aa, one)
    d0 = L.div(one, fix(L.sub(one, L.div(L.mul(qab, xx), qap))))
    c0 = L.broadcast_in_dim(one, (n,), ())

    def step(coef, c, d):
        d = L.div(one, fix(L.add(one, L.mul(coef, d))))
        c = fix(L.add(one, L.div(coef, c)))
        return c, d, L.mul(c, d)

    def body(s):
        i, done, c, d, h = s
        m = L.convert_element_type(L.add(i, np.int64(1)), dt)
        m2 = L.mul(_k(2, dt), m)
        even = L.div(L.mul(L.mul(m, L.sub(bb, m)), xx), L.mul(L.add(qam, m2), L.add(aa, m2)))
        c, d, delta = step(even, c, d)
        h = L.mul(h, delta)
        odd = L.neg(L.div(L.mul(L.mul(L.add(aa, m), L.add(qab, m)), xx), L.mul(L.add(aa, m2), L.add(qap, m2))))
        c, d, delta = step(odd, c, d)
        h = L.mul(h, delta)
        done = L.bitwise_or(done, L.le(L.abs(L.sub(delta, one)), _k(eps, dt)))
        return L.add(i, np.int64(1)), done, c, d, h

    *_, h = _loop(body, (np.int64(0), done0, c0, d0, d0))
    log_front = L.add(L.add(L.mul(aa, L.log(_where(special, one, xx))), L.mul(bb, L.log1p(L.neg(xx)))),
                      L.sub(L.sub(lgamma(qab), lgamma(qap)), lgamma(bb)))
    val = L.mul(L.exp(log_front), h)
    val = _where(flip, L.sub(one, val), val)
    val = _where(L.bitwise_or(res_zero, x_zero), zero, _where(L.bitwise_or(res_one, x_one), one, val))
    return _where(bad, _k(np.nan, dt), val)
