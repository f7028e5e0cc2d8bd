"""More elementwise functions of ``jax.numpy``, written with the ufuncs of ``ufuncs.py`` and lax:
inverse hyperbolic functions, ``fmax``/``fmin``, ``logaddexp``, ``gcd``/``lcm``,
``frexp``/``ldexp``/``modf``, ``nextafter``/``spacing``, ``bitwise_count`` and the array
API's aliases (``acos``, ``pow``, ...).

Every function broadcasts and promotes as JAX does (integers become float64 in the
floating-point functions) and works on dynamic shapes: none of them depends on a size.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import finfo, float64, int32, is_complex_dtype, is_inexact_dtype
from ..core.trace import typeof
from . import ufuncs as uf
from ._promote import asarray_of, broadcast_arrays, promote_and_broadcast, result_dtype


def _f(x):
    """``x`` as an array of an inexact dtype (integers and bools as float64)."""
    return uf._to_float(uf._arraylike(x))


def _dtype(x):
    return typeof(x).dtype


def _const(value, like):
    """``value`` as a scalar of ``like``'s dtype (weak, so it never widens ``like``)."""
    return np.asarray(value, _dtype(like))[()]


# --- array API names for existing functions -------------------------------------------------
acos = uf.arccos
asin = uf.arcsin
atan = uf.arctan
atan2 = uf.arctan2
pow = uf.power
degrees = uf.rad2deg
radians = uf.deg2rad


def positive(x, /):
    """``+x``: the values of ``x`` (numeric types only)."""
    x = uf._arraylike(x)
    if _dtype(x) == np.bool_:
        raise TypeError("positive does not accept a bool array")
    return x


def reciprocal(x, /):
    """``1 / x``; integers are promoted to float64 first, as in JAX."""
    x = _f(x)
    return lax.div(lax.broadcast_in_dim(_const(1, x), typeof(x).shape, ()), x)


def fabs(x, /):
    """The absolute value as a floating-point array; complex input is a TypeError."""
    x = uf._arraylike(x)
    if is_complex_dtype(_dtype(x)):
        raise TypeError("fabs does not support complex-valued inputs; use jnp.abs")
    return uf.abs(_f(x))


def trunc(x):
    """Round toward zero (integers are returned unchanged)."""
    x = uf._arraylike(x)
    if not is_inexact_dtype(_dtype(x)):
        return x
    if is_complex_dtype(_dtype(x)):
        raise TypeError("trunc does not support complex-valued inputs")
    return lax.select(lax.lt(x, lax.broadcast_in_dim(_const(0, x), typeof(x).shape, ())),
                      lax.ceil(x), lax.floor(x))


def float_power(x, y, /):
    """``x ** y`` computed in float64 (complex128 when either is complex)."""
    dtype, _ = result_dtype(x, y)
    target = np.dtype(np.complex128) if is_complex_dtype(dtype) else float64
    return uf.power(asarray_of(x, target), asarray_of(y, target))


def divmod(x1, x2, /):
    """``(floor_divide(x1, x2), remainder(x1, x2))``."""
    return uf.floor_divide(x1, x2), uf.remainder(x1, x2)


# --- inverse hyperbolic functions -------------------------------------------------------------
def _big(x):
    """Where ``|x|`` is so large that ``x * x`` would overflow."""
    return lax.gt(uf.abs(x), _const(np.sqrt(finfo(_dtype(x)).max) / 4, x))


def arcsinh(x, /):
    """Inverse hyperbolic sine, accurate near 0 and for large ``|x|``."""
    x = _f(x)
    if is_complex_dtype(_dtype(x)):
        return uf.log(x + uf.sqrt(x * x + _const(1, x)))
    a = uf.abs(x)
    one = _const(1, a)
    small = uf.log1p(a + a * a / (one + uf.sqrt(a * a + one)))
    large = uf.log(a) + _const(np.log(2), x)
    return uf.copysign(lax.select(_big(x), large, small), x)


def arccosh(x, /):
    """Inverse hyperbolic cosine (NaN below 1)."""
    x = _f(x)
    if is_complex_dtype(_dtype(x)):
        return uf.log(x + uf.sqrt(x + _const(1, x)) * uf.sqrt(x - _const(1, x)))
    t = x - _const(1, x)
    near = uf.log1p(t + uf.sqrt(t) * uf.sqrt(t + _const(2, x)))
    return lax.select(_big(x), uf.log(x) + _const(np.log(2), x), near)


def arctanh(x, /):
    """Inverse hyperbolic tangent (NaN outside [-1, 1], infinite at the ends)."""
    x = _f(x)
    if is_complex_dtype(_dtype(x)):
        return _const(0.5, x) * (uf.log1p(x) - uf.log1p(-x))
    return _const(0.5, x) * uf.log1p(_const(2, x) * x / (_const(1, x) - x))


asinh, acosh, atanh = arcsinh, arccosh, arctanh


# --- classification -----------------------------------------------------------------------------
def isposinf(x, /, out=None):
    """Elementwise ``x == +inf`` (real input)."""
    x = uf._arraylike(x)
    if is_complex_dtype(_dtype(x)):
        raise TypeError("isposinf does not support complex-valued inputs")
    return uf.bitwise_and(uf.isinf(x), uf.greater(x, 0))


def isneginf(x, /, out=None):
    """Elementwise ``x == -inf`` (real input)."""
    x = uf._arraylike(x)
    if is_complex_dtype(_dtype(x)):
        raise TypeError("isneginf does not support complex-valued inputs")
    return uf.bitwise_and(uf.isinf(x), uf.less(x, 0))


def iscomplex(x):
    """Elementwise: a non-zero imaginary part."""
    x = uf._arraylike(x)
    return uf.not_equal(uf.imag(x), 0)


def isreal(x):
    """Elementwise: a zero imaginary part."""
    x = uf._arraylike(x)
    return uf.equal(uf.imag(x), 0)


# --- NaN-ignoring extrema, log-sum-exp ------------------------------------------------------------
def fmax(x1, x2):
    """Elementwise maximum that ignores a NaN when the other operand is a number."""
    x1, x2 = promote_and_broadcast(x1, x2, keep_scalars=True)
    if not is_inexact_dtype(_dtype(x1)):
        return lax.max(x1, x2)
    return uf.where(uf.isnan(x2), x1, uf.where(uf.isnan(x1), x2, lax.max(x1, x2)))


def fmin(x1, x2):
    """Elementwise minimum that ignores a NaN when the other operand is a number."""
    x1, x2 = promote_and_broadcast(x1, x2, keep_scalars=True)
    if not is_inexact_dtype(_dtype(x1)):
        return lax.min(x1, x2)
    return uf.where(uf.isnan(x2), x1, uf.where(uf.isnan(x1), x2, lax.min(x1, x2)))


def _logaddexp(x1, x2, log1p_term):
    x1, x2 = promote_and_broadcast(_f(x1), _f(x2), keep_scalars=True)
    if is_complex_dtype(_dtype(x1)):
        raise TypeError("logaddexp does not support complex-valued inputs")
    hi = lax.max(x1, x2)
    delta = lax.sub(x1, x2)
    out = lax.add(hi, log1p_term(lax.neg(uf.abs(delta))))
    # equal infinities (delta is NaN) give that infinity; a NaN operand gives NaN
    return uf.where(uf.isnan(delta), lax.add(x1, x2), out)


def logaddexp(x1, x2, /):
    """``log(exp(x1) + exp(x2))`` without overflow."""
    return _logaddexp(x1, x2, lambda d: uf.log1p(uf.exp(d)))


def logaddexp2(x1, x2, /):
    """``log2(2**x1 + 2**x2)`` without overflow."""
    return _logaddexp(x1, x2, lambda d: uf.log1p(uf.exp2(d)) * _const(1 / np.log(2), d))


# --- integer functions ------------------------------------------------------------------------------
def _int_pair(name, x1, x2):
    x1, x2 = promote_and_broadcast(x1, x2, keep_scalars=True)
    if not np.issubdtype(_dtype(x1), np.integer):
        raise TypeError(f"{name} needs integer arguments, got {typeof(x1).str_short()}")
    return x1, x2


def gcd(x1, x2):
    """Greatest common divisor of integers (non-negative; ``gcd(0, 0) == 0``)."""
    x1, x2 = _int_pair("gcd", x1, x2)
    a, b = uf.abs(x1), uf.abs(x2)
    shape = typeof(a).shape
    zero = lax.broadcast_in_dim(_const(0, a), shape, ())
    one = lax.broadcast_in_dim(_const(1, a), shape, ())

    def cond(c):
        from .reductions import any as _any
        return _any(lax.ne(c[1], zero))

    def body(c):
        a, b = c
        live = lax.ne(b, zero)
        return lax.select(live, b, a), lax.select(live, lax.rem(a, lax.select(live, b, one)), zero)

    return lax.while_loop(cond, body, (a, b))[0]


def lcm(x1, x2):
    """Least common multiple of integers (non-negative; 0 when either is 0)."""
    x1, x2 = _int_pair("lcm", x1, x2)
    g = gcd(x1, x2)
    zero = lax.eq(g, _const(0, g))
    safe = lax.select(zero, lax.broadcast_in_dim(_const(1, g), typeof(g).shape, ()), g)
    return lax.select(zero, g, lax.mul(lax.div(uf.abs(x1), safe), uf.abs(x2)))   # wraps as numpy's


def bitwise_count(x, /):
    """The number of 1 bits in ``|x|`` as uint8."""
    x = uf._arraylike(x)
    dt = _dtype(x)
    if dt == np.bool_:
        return lax.convert_element_type(x, np.dtype(np.uint8))
    if not np.issubdtype(dt, np.integer):
        raise TypeError(f"bitwise_count needs an integer array, got {typeof(x).str_short()}")
    a = uf.abs(x) if dt.kind == "i" else x
    one = lax.broadcast_in_dim(_const(1, a), typeof(a).shape, ())
    total = lax.bitwise_and(a, one)
    for k in range(1, 8 * dt.itemsize):
        total = lax.add(total, lax.bitwise_and(lax.shift_right(a, lax.broadcast_in_dim(_const(k, a),
                                                                                  typeof(a).shape, ())), one))
    return lax.convert_element_type(total, np.dtype(np.uint8))


# --- floating-point decomposition --------------------------------------------------------------------
def _exp2_int(k, dtype):
    """``2.0 ** k`` (``k`` an int64 array within the exponent range of ``dtype``), exactly:
    a product of the constants ``2 ** ±2**b`` picked by the bits of ``|k|``."""
    shape = typeof(k).shape
    neg = lax.lt(k, np.int64(0))
    m = uf.abs(k)
    out = lax.broadcast_in_dim(np.asarray(1, dtype)[()], shape, ())
    one = out
    for b in range(12):
        bit = lax.ne(lax.bitwise_and(m, lax.broadcast_in_dim(np.int64(1 << b), shape, ())), np.int64(0))
        up = np.asarray(np.ldexp(1.0, 1 << b) if (1 << b) < finfo(dtype).maxexp else np.inf, dtype)[()]
        down = np.asarray(np.ldexp(1.0, -(1 << b)), dtype)[()]
        factor = lax.select(neg, lax.broadcast_in_dim(down, shape, ()), lax.broadcast_in_dim(up, shape, ()))
        out = lax.mul(out, lax.select(bit, factor, one))
    return out


def ldexp(x1, x2, /):
    """``x1 * 2 ** x2`` (``x2`` integer), without overflowing in the power of two."""
    x2 = uf._arraylike(x2)
    if not np.issubdtype(_dtype(x2), np.integer):
        raise TypeError(f"ldexp's second argument must be an integer array, got {typeof(x2).str_short()}")
    x1 = _f(x1)
    if is_complex_dtype(_dtype(x1)):
        raise TypeError("ldexp does not support complex-valued inputs")
    x1, x2 = broadcast_arrays(x1, asarray_of(x2, np.dtype(np.int64)))
    dt = _dtype(x1)
    limit = np.int64(2 * (finfo(dt).maxexp - finfo(dt).minexp + finfo(dt).nmant + 2))
    k = uf.clip(x2, -limit, limit)
    half = lax.div(k, lax.broadcast_in_dim(np.int64(2), typeof(k).shape, ()))
    return lax.mul(lax.mul(x1, _exp2_int(half, dt)), _exp2_int(lax.sub(k, half), dt))


def frexp(x, /):
    """``(mantissa, exponent)`` with ``x == mantissa * 2 ** exponent``, ``0.5 <= |mantissa| < 1``
    (both 0 for 0; the mantissa is ``x`` itself for inf and NaN). The exponent is int32."""
    x = _f(x)
    if is_complex_dtype(_dtype(x)):
        raise TypeError("frexp does not support complex-valued inputs")
    dt = _dtype(x)
    shape = typeof(x).shape
    a = uf.abs(x)
    special = uf.bitwise_or(lax.eq(a, _const(0, a)), uf.bitwise_not(uf.isfinite(a)))
    safe = lax.select(special, lax.broadcast_in_dim(_const(1, a), shape, ()), a)
    e = lax.convert_element_type(lax.floor(uf.log2(safe)), np.dtype(np.int64)) + np.int64(1)
    m = lax.div(safe, _exp2_int(e, dt))
    # log2 may be off by one next to a power of two: move the mantissa into [0.5, 1)
    hi = lax.ge(m, _const(1, m))
    m = lax.select(hi, m * _const(0.5, m), m)
    e = lax.select(hi, e + np.int64(1), e)
    lo = lax.lt(m, _const(0.5, m))
    m = lax.select(lo, m * _const(2, m), m)
    e = lax.select(lo, e - np.int64(1), e)
    mant = lax.select(special, x, uf.copysign(m, x))
    expo = lax.select(special, lax.broadcast_in_dim(np.int64(0), shape, ()), e)
    return mant, lax.convert_element_type(expo, int32)


def modf(x, /, out=None):
    """``(fractional part, integral part)``, both with the sign of ``x``."""
    x = _f(x)
    whole = trunc(x)
    frac = lax.select(uf.isinf(x), lax.broadcast_in_dim(_const(0, x), typeof(x).shape, ()), lax.sub(x, whole))
    return uf.copysign(frac, x), whole


def _ulp_step(x, up):
    """The distance from ``x`` to its neighbour away from zero (``up``) or toward zero."""
    dt = _dtype(x)
    fi = finfo(dt)
    tiny = np.asarray(fi.smallest_subnormal, dt)[()]
    m, e = frexp(x)
    e = lax.convert_element_type(e, np.dtype(np.int64))
    shift = np.int64(fi.nmant + 1)
    at_power = lax.eq(uf.abs(m), _const(0.5, m))
    e_down = lax.select(up, e, lax.select(at_power, e - np.int64(1), e))
    k = uf.maximum(e_down - shift, np.int64(fi.minexp - fi.nmant - 1))
    return uf.maximum(_exp2_int(k, dt), tiny)


def nextafter(x, y, /):
    """The next representable value after ``x`` in the direction of ``y``."""
    x, y = promote_and_broadcast(_f(x), _f(y), keep_scalars=True)
    if is_complex_dtype(_dtype(x)):
        raise TypeError("nextafter does not support complex-valued inputs")
    dt = _dtype(x)
    shape = typeof(x).shape
    zero = lax.broadcast_in_dim(_const(0, x), shape, ())
    toward_pos = lax.gt(y, x)
    away = lax.bitwise_or(lax.bitwise_and(toward_pos, lax.ge(x, zero)),
                          lax.bitwise_and(lax.bitwise_not(toward_pos), lax.le(x, zero)))
    step = _ulp_step(x, away)
    moved = lax.select(toward_pos, lax.add(x, step), lax.sub(x, step))
    tiny = np.asarray(finfo(dt).smallest_subnormal, dt)[()]
    from_zero = lax.select(toward_pos, lax.broadcast_in_dim(tiny, shape, ()),
                           lax.broadcast_in_dim(-tiny, shape, ()))
    moved = lax.select(lax.eq(x, zero), from_zero, moved)
    nan = uf.bitwise_or(uf.isnan(x), uf.isnan(y))
    out = lax.select(lax.eq(x, y), y, moved)
    return lax.select(nan, lax.add(x, y), out)


def spacing(x, /):
    """The distance from ``x`` to the next representable value away from zero (negative for
    negative ``x``)."""
    x = _f(x)
    inf = lax.broadcast_in_dim(_const(np.inf, x), typeof(x).shape, ())
    target = lax.select(lax.lt(x, _const(0, x)), lax.neg(inf), inf)
    out = lax.sub(nextafter(x, target), x)
    return lax.select(uf.isinf(x), lax.broadcast_in_dim(_const(np.nan, x), typeof(x).shape, ()), out)


def i0(x):
    """The modified Bessel function of the first kind of order 0 (real input), by its power
    series for ``|x| <= 20`` and its asymptotic series beyond."""
    x = _f(x)
    if is_complex_dtype(_dtype(x)):
        raise TypeError("i0 does not support complex-valued inputs")
    a = uf.abs(x)
    small = lax.le(a, _const(20, a))
    s = lax.select(small, a, lax.broadcast_in_dim(_const(1, a), typeof(a).shape, ()))
    q = s * s * _const(0.25, s)
    term = lax.broadcast_in_dim(_const(1, s), typeof(s).shape, ())
    total = term
    for k in range(1, 90):
        term = term * q * _const(1.0 / (k * k), s)
        total = total + term
    big = lax.select(small, lax.broadcast_in_dim(_const(40, a), typeof(a).shape, ()), a)
    inv = _const(1, big) / (big * _const(8, big))
    series = lax.broadcast_in_dim(_const(1, big), typeof(big).shape, ())
    c = series
    for k in range(1, 30):
        c = c * inv * _const((2 * k - 1) ** 2 / k, big)
        series = series + c
    asym = uf.exp(big) / uf.sqrt(_const(2 * np.pi, big) * big) * series
    return lax.select(small, total, asym)
