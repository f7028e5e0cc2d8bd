"""``dynjax.scipy.special``: ``bessel_jn`` and ``hyp1f1``, written with elementwise
``dynjax.lax`` operations and ``lax.while_loop`` (any shape, dynamic dims included; float64
inside, the result rounded to the operand dtype), with closed-form derivatives.

* ``bessel_jn(z, *, v, n_iter=50)``: ``J_0 .. J_v`` of ``z`` stacked on a new first axis, by
  Miller's backward recurrence ``J_{k-1} = (2k / z) J_k - J_{k+1}`` started at an even order
  ``N >= max(n_iter, v + 2, max|z| + 40 + 8 max|z|**(1/3))`` (so that it is accurate for every
  element, where a fixed ``n_iter`` is not for ``|z|`` above about ``n_iter / 2``), rescaled
  against overflow and normalized by ``J_0 + 2 (J_2 + J_4 + ...) = 1``; ``J_k(-z) = (-1)**k
  J_k(z)``; the Taylor polynomial for ``|z| < 1e-5``; NaN at ``+-inf`` (scipy's and JAX's). Derivative ``J_k' = (J_{k-1} - J_{k+1}) / 2`` (``J_0' = -J_1``).
* ``hyp1f1(a, b, x)``: the confluent hypergeometric series ``sum (a)_k / (b)_k x**k / k!``
  for ``x >= 0`` and Kummer's transformation ``e**x 1F1(b - a, b, -x)`` for ``x < 0`` (so the
  series has positive terms whenever ``0 < a < b``); derivative in ``x`` ``a / b 1F1(a + 1,
  b + 1, x)``, in ``a`` and ``b`` the series differentiated term by term (as JAX has them).
"""
from __future__ import annotations

import operator

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..nn.functions import _quiet
from ..transforms.custom import custom_jvp
from .special_integrals import F64, _k, _narrow, _wide

__all__ = ["bessel_jn", "hyp1f1"]

_SERIES_CAP = 20000


def _until(body, state, cap):
    def cond(s):
        return (s[0] < cap) & jnp.any(~s[1])
    return lax.while_loop(cond, body, state)


# ----------------------------------------------------------------------------------------------
# Bessel functions of the first kind, integer orders 0 .. v
# ----------------------------------------------------------------------------------------------
def _bessel_rows(z, orders, n_iter):
    """``J_0 .. J_{orders - 1}`` of float64 ``z`` on a new first axis."""
    az = jnp.abs(z)
    finite = az < _k(np.inf)
    zs = jnp.where(finite & (az > _k(0)), az, _k(1))
    biggest = jnp.max(jnp.where(finite, az, _k(0)), initial=0.0)
    start = jnp.maximum(_k(max(n_iter, orders + 1)), biggest + _k(40) + _k(8) * jnp.cbrt(biggest))
    start = lax.convert_element_type(jnp.ceil(start / _k(2)), np.int64) * 2
    big, small = _k(1e200), _k(1e-200)
    rows = jnp.zeros((orders,) + tuple(z.shape), F64)
    index = lax.broadcasted_iota(np.int64, (orders,) + tuple(z.shape), 0)

    def body(s):
        k, upper, current, even_sum, rows = s   # current = j_k, upper = j_{k+1}
        rows = jnp.where(index == k, current[None], rows)
        even_sum = even_sum + jnp.where((k % 2 == 0) & (k > 0), current, _k(0))
        lower = _k(2) * lax.convert_element_type(k, F64) / zs * current - upper
        scale = jnp.where(jnp.abs(lower) > big, small, _k(1))
        return (k - 1, current * scale, lower * scale, even_sum * scale, rows * scale[None])

    init = (start, jnp.zeros_like(z), jnp.full_like(z, 1e-30), jnp.zeros_like(z), rows)
    *_, j0, even_sum, rows = lax.while_loop(lambda s: s[0] >= 0, body, init)
    # the loop stops after storing k = 0 (j0 is then j_{-1}); the normalization uses J_0
    norm = rows[0] + _k(2) * even_sum
    rows = rows / norm[None]
    signs = np.array([(-1.0) ** k for k in range(orders)]).reshape((orders,) + (1,) * z.ndim)
    rows = jnp.where((z < _k(0))[None], rows * signs, rows)
    first = np.zeros((orders,) + (1,) * z.ndim)
    first[0] = 1.0
    # |z| < 1e-5: J_k = (z/2)**k / k! (1 - (z/2)**2 / (k + 1)) (the recurrence would overflow)
    half = jnp.where(az < _k(1e-5), z, _k(0)) * _k(0.5)
    taylor = [jnp.ones_like(z)]
    for k in range(1, orders):
        taylor.append(taylor[-1] * half / _k(k))
    taylor = jnp.stack([t * (_k(1) - half * half / _k(k + 1)) for k, t in enumerate(taylor)])
    rows = jnp.where((az < _k(1e-5))[None], taylor, rows)
    rows = jnp.where((az == _k(0))[None], first, rows)
    return jnp.where((~finite)[None], _k(np.nan), rows)   # NaN at +-inf, as scipy and JAX


def _make_bessel(v, n_iter):
    @custom_jvp
    def jn(z):
        return _bessel_rows(z, v + 1, n_iter)

    @jn.defjvp
    def jn_jvp(primals, tangents):
        (z,), (t,) = primals, tangents
        rows = _bessel_rows(z, v + 2, n_iter)
        below = jnp.concatenate([-rows[1:2], rows[:v]], axis=0)
        slope = (below - rows[1:v + 2]) * _k(0.5)
        slope = jnp.concatenate([-rows[1:2], slope[1:]], axis=0)
        return rows[:v + 1], slope * t[None]
    return jn


_BESSEL = {}


@_quiet
def bessel_jn(z, *, v, n_iter=50):
    """Bessel functions of the first kind ``J_0(z) .. J_v(z)`` of integer orders, stacked on a new
    first axis (shape ``(v + 1,) + z.shape``); ``n_iter`` is the least starting order of the
    backward recurrence (a larger one is used where ``|z|`` needs it)."""
    try:
        v, n_iter = operator.index(v), operator.index(n_iter)
    except TypeError:
        raise TypeError("bessel_jn: v and n_iter must be Python ints") from None
    if v < 0:
        raise ValueError(f"bessel_jn: v must be a non-negative integer, got {v}")
    (z,), dt = _wide("bessel_jn", z)
    key = (v, n_iter)
    if key not in _BESSEL:
        _BESSEL[key] = _make_bessel(v, n_iter)
    return _narrow(_BESSEL[key](z), dt)


# ----------------------------------------------------------------------------------------------
# the confluent hypergeometric function
# ----------------------------------------------------------------------------------------------
def _hyp1f1_series(a, b, x, skip):
    """``(F, dF/da, dF/db)`` of ``F = sum t_k``, ``t_k = t_{k-1} r_k``, ``r_k = (a + k - 1) /
    (b + k - 1) x / k``, with the derivatives of the terms carried along (``skip``: elements
    that stop at once)."""
    def body(s):
        i, done, t, ta, tb, f, fa, fb = s
        k = lax.convert_element_type(i, F64)
        at_pole = (b + k) == _k(0)          # only after a terminating polynomial has ended
        bk = jnp.where(at_pole, _k(1), b + k)
        r = jnp.where(at_pole, _k(0), (a + k) / bk * x / (k + _k(1)))
        ra = jnp.where(at_pole, _k(0), x / (bk * (k + _k(1))))
        rb = -r / bk
        t, ta, tb = t * r, ta * r + t * ra, tb * r + t * rb
        f, fa, fb = f + t, fa + ta, fb + tb
        eps = _k(1e-17)
        small = ((jnp.abs(t) <= jnp.abs(f) * eps) & (jnp.abs(ta) <= jnp.abs(fa) * eps)
                 & (jnp.abs(tb) <= jnp.abs(fb) * eps)) | at_pole
        return i + 1, done | small, t, ta, tb, f, fa, fb

    ones, zeros = jnp.ones_like(x), jnp.zeros_like(x)
    state = (np.int64(0), skip, ones, zeros, zeros, ones, zeros, zeros)
    *_, f, fa, fb = _until(body, state, _SERIES_CAP)
    return f, fa, fb


def _hyp1f1_all(a, b, x):
    """``(1F1(a, b, x), d/da, d/db)`` with scipy's special values."""
    nan = (a != a) | (b != b) | (x != x)
    pole = (b <= _k(0)) & (b == jnp.floor(b))
    # a polynomial (a a non-positive integer) ends before the pole when a > b: scipy's values
    terminates = (a <= _k(0)) & (a == jnp.floor(a))
    finite_pole = pole & ~(terminates & (a > b))
    bad = nan | finite_pole | (jnp.abs(x) == _k(np.inf))
    neg = (x < _k(0)) & ~terminates
    aa = jnp.where(bad, _k(1), jnp.where(neg, b - a, a))
    bb = jnp.where(bad, _k(2), b)
    xx = jnp.where(bad, _k(0), jnp.where(neg, -x, x))
    g, ga, gb = _hyp1f1_series(aa, bb, xx, bad)
    ex = jnp.exp(jnp.where(neg, x, _k(0)))
    # Kummer: F(a, b, x) = e^x G(b - a, b, -x): dF/da = -e^x G_a, dF/db = e^x (G_a + G_b)
    f = ex * g
    fa = jnp.where(neg, -ex * ga, ga)
    fb = jnp.where(neg, ex * (ga + gb), gb)
    f = jnp.where(bad, _k(np.nan), f)
    f = jnp.where(finite_pole & ~nan, _k(np.inf), f)
    return f, jnp.where(bad, _k(np.nan), fa), jnp.where(bad, _k(np.nan), fb)


@custom_jvp
def _hyp1f1(a, b, x):
    return _hyp1f1_all(a, b, x)[0]


@_hyp1f1.defjvp
def _hyp1f1_jvp(primals, tangents):
    (a, b, x), (ta, tb, tx) = primals, tangents
    y, ya, yb = _hyp1f1_all(a, b, x)
    return y, tx * a / b * _hyp1f1(a + _k(1), b + _k(1), x) + ta * ya + tb * yb


@_quiet
def hyp1f1(a, b, x):
    """The confluent hypergeometric function ``1F1(a; b; x) = sum (a)_k / (b)_k x**k / k!``
    (real operands; ``inf`` at the poles ``b = 0, -1, ...``, NaN for infinite ``x``, as scipy),
    differentiable in ``a``, ``b``
    (the series differentiated term by term) and ``x``."""
    (a, b, x), dt = _wide("hyp1f1", a, b, x)
    return _narrow(_hyp1f1(a, b, x), dt)
