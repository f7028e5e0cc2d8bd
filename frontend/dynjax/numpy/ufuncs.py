"""Elementwise functions with numpy broadcasting and promotion."""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import bool_, finfo, float64, is_complex_dtype, is_float_dtype, is_inexact_dtype
from ..core.trace import Tracer, typeof
from ._promote import asarray_of, broadcast_arrays, promote, promote_and_broadcast, result_dtype


def _binary(lax_fn, name):
    def fn(x, y):
        x, y = promote_and_broadcast(x, y, keep_scalars=True)
        return lax_fn(x, y)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}`` with numpy broadcasting and type promotion."
    return fn


add = _binary(lax.add, "add")
subtract = _binary(lax.sub, "subtract")
multiply = _binary(lax.mul, "multiply")
maximum = _binary(lax.max, "maximum")
minimum = _binary(lax.min, "minimum")
equal = _binary(lax.eq, "equal")
not_equal = _binary(lax.ne, "not_equal")
less = _binary(lax.lt, "less")
less_equal = _binary(lax.le, "less_equal")
greater = _binary(lax.gt, "greater")
greater_equal = _binary(lax.ge, "greater_equal")
bitwise_and = _binary(lax.bitwise_and, "bitwise_and")
bitwise_or = _binary(lax.bitwise_or, "bitwise_or")
bitwise_xor = _binary(lax.bitwise_xor, "bitwise_xor")


def _truth(x):
    x = _arraylike(x)
    return x if typeof(x).dtype == bool_ else not_equal(x, 0)


def logical_and(x, y):
    """Elementwise truth-value ``and`` (the result is bool)."""
    return bitwise_and(_truth(x), _truth(y))


def logical_or(x, y):
    """Elementwise truth-value ``or`` (the result is bool)."""
    return bitwise_or(_truth(x), _truth(y))


def logical_xor(x, y):
    """Elementwise truth-value ``xor`` (the result is bool)."""
    return bitwise_xor(_truth(x), _truth(y))


def _to_float(x):
    """``x``, or ``x`` as float64 when it is bool or integer (as JAX promotes integers for
    inexact functions; numpy would pick float16 for int8)."""
    dtype, weak = result_dtype(x)
    if not is_inexact_dtype(dtype):
        return asarray_of(x, float64, weak)
    return x


def true_divide(x, y):
    """``x / y``; integers are divided as float64, as numpy does."""
    dtype, weak = result_dtype(x, y)
    if not is_inexact_dtype(dtype):
        x, y = asarray_of(x, float64, weak), asarray_of(y, float64, weak)
    x, y = promote_and_broadcast(x, y, keep_scalars=True)
    return lax.div(x, y)


divide = true_divide


def _round_down_fix(r, y):
    """Where a truncated remainder ``r`` must be moved toward minus infinity: ``r != 0`` and
    its sign differs from ``y``'s (decided statically when ``y`` is a concrete scalar)."""
    zero = typeof(r).dtype.type(0)
    if not isinstance(y, Tracer) and np.ndim(y) == 0:
        return lax.gt(r, zero) if y < 0 else lax.lt(r, zero)
    return lax.bitwise_and(lax.ne(r, zero), lax.ne(lax.lt(r, zero), lax.lt(y, zero)))


def floor_divide(x, y):
    """``x // y`` rounding toward minus infinity (numpy semantics)."""
    x, y = promote_and_broadcast(x, y, keep_scalars=True)
    dtype = typeof(x).dtype
    if is_float_dtype(dtype):
        return lax.floor(lax.div(x, y))
    if dtype == bool_ or is_complex_dtype(dtype):
        raise TypeError(f"floor_divide does not accept {dtype} operands")
    q = lax.div(x, y)  # rounds toward zero
    return lax.select(_round_down_fix(lax.rem(x, y), y), lax.sub(q, dtype.type(1)), q)


def remainder(x, y):
    """``x % y`` with the sign of ``y`` (numpy semantics)."""
    x, y = promote_and_broadcast(x, y, keep_scalars=True)
    if typeof(x).dtype == bool_:
        raise TypeError("remainder does not accept bool operands")
    r = lax.rem(x, y)
    return lax.select(_round_down_fix(r, y), lax.add(r, y), r)


mod = remainder


def power(x, y):
    """``x ** y``; a static integer exponent becomes ``integer_pow`` (repeated multiplication)."""
    if isinstance(y, (int, np.integer)) and not isinstance(y, (bool, np.bool_)):
        (xp,) = promote(_arraylike(x))
        if y >= 0 or is_inexact_dtype(typeof(xp).dtype):
            return lax.integer_pow(xp, int(y))
    x, y = promote_and_broadcast(x, y, keep_scalars=True)
    return lax.api.pow(x, y)   # the primitive: integers to integer powers too


def arctan2(x, y):
    x, y = promote_and_broadcast(_to_float(x), _to_float(y), keep_scalars=True)
    return lax.atan2(x, y)


def _unary_float(lax_fn, name):
    def fn(x):
        return lax_fn(_to_float(_arraylike(x)))
    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}`` (integers are computed in float64)."
    return fn


def _arraylike(x):
    if isinstance(x, (list, tuple)):
        from .creation import asarray
        return asarray(x)
    return x


sin = _unary_float(lax.sin, "sin")
cos = _unary_float(lax.cos, "cos")
tan = _unary_float(lax.tan, "tan")
arcsin = _unary_float(lax.asin, "arcsin")
arccos = _unary_float(lax.acos, "arccos")
arctan = _unary_float(lax.atan, "arctan")
sinh = _unary_float(lax.sinh, "sinh")
cosh = _unary_float(lax.cosh, "cosh")
tanh = _unary_float(lax.tanh, "tanh")
exp = _unary_float(lax.exp, "exp")
log = _unary_float(lax.log, "log")
log1p = _unary_float(lax.log1p, "log1p")
expm1 = _unary_float(lax.expm1, "expm1")
sqrt = _unary_float(lax.sqrt, "sqrt")
cbrt = _unary_float(lax.cbrt, "cbrt")


def _unary_same(lax_fn, name, float_only=False):
    def fn(x):
        x = _arraylike(x)
        (x,) = promote(x)
        if float_only and not is_inexact_dtype(typeof(x).dtype):
            return x   # floor/ceil of an integer is itself (complex operands are refused by lax)
        return lax_fn(x)
    fn.__name__ = name
    return fn


negative = _unary_same(lax.neg, "negative")
sign = _unary_same(lax.sign, "sign")
floor = _unary_same(lax.floor, "floor", float_only=True)
ceil = _unary_same(lax.ceil, "ceil", float_only=True)
rint = _unary_float(lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), "rint")


def abs(x):
    (x,) = promote(_arraylike(x))
    if typeof(x).dtype == bool_:
        return x
    return lax.abs(x)


absolute = abs


def invert(x):
    (x,) = promote(x)
    return lax.bitwise_not(x)




def logical_not(x):
    """Elementwise truth-value negation (the result is bool)."""
    return invert(_truth(x))


def square(x):
    return power(x, 2)


def isfinite(x):
    x = _arraylike(x)
    (x,) = promote(x)
    dtype = typeof(x).dtype
    if is_complex_dtype(dtype):
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    if not is_float_dtype(dtype):
        from .creation import full_like
        return full_like(x, True, dtype=bool)
    return lax.is_finite(x)


def real(x):
    """The real part (``x`` itself for real numbers)."""
    (x,) = promote(_arraylike(x))
    return lax.real(x) if is_complex_dtype(typeof(x).dtype) else x


def imag(x):
    """The imaginary part (zeros for real numbers)."""
    (x,) = promote(_arraylike(x))
    if is_complex_dtype(typeof(x).dtype):
        return lax.imag(x)
    from .creation import zeros_like
    return zeros_like(x)


def conjugate(x):
    """The complex conjugate (``x`` itself for real numbers)."""
    (x,) = promote(_arraylike(x))
    return lax.conj(x) if is_complex_dtype(typeof(x).dtype) else x


conj = conjugate


def angle(z, deg=False):
    """The argument of complex numbers (0 or pi for real ones), in radians or degrees."""
    z = _to_float(_arraylike(z))
    dtype = typeof(z).dtype
    if is_complex_dtype(dtype):
        re, im = lax.real(z), lax.imag(z)
    else:
        from .creation import zeros_like
        (re,) = promote(z)
        im = zeros_like(re)   # atan2(0, x): 0 or pi by the sign of x, also for infinities
    a = lax.atan2(im, re)
    return multiply(a, 180.0 / np.pi) if deg else a


def iscomplexobj(x):
    """Whether ``x`` has a complex dtype."""
    return is_complex_dtype(typeof(_arraylike(x)).dtype)


def isrealobj(x):
    return not iscomplexobj(x)


def where(condition, x=None, y=None):
    """``x`` where ``condition`` else ``y`` (three-argument form), broadcasting all three."""
    if x is None and y is None:
        from .selection import nonzero
        return nonzero(condition)   # numpy: where(condition) is nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    x, y = promote(x, y)
    cond, x, y = broadcast_arrays(_truth(condition), x, y)
    return lax.select(cond, x, y)


def clip(x, a_min=None, a_max=None, *, min=None, max=None):
    """``minimum(maximum(x, a_min), a_max)``; a bound of None is no bound (numpy 2's ``min=`` /
    ``max=`` are accepted too)."""
    a_min = min if a_min is None else a_min
    a_max = max if a_max is None else a_max
    if a_min is not None:
        x = maximum(x, a_min)
    if a_max is not None:
        x = minimum(x, a_max)
    return x


# --- classification and derived elementwise functions ---------------------------------------
def _classify(name, test):
    """``isnan`` / ``isinf``: ``test`` on float parts (real and imaginary for complex); always
    False for integers and bools, as in numpy."""
    def fn(x):
        x = _arraylike(x)
        (x,) = promote(x)
        dtype = typeof(x).dtype
        if is_complex_dtype(dtype):
            return lax.bitwise_or(test(lax.real(x)), test(lax.imag(x)))
        if not is_float_dtype(dtype):
            from .creation import full_like
            return full_like(x, False, dtype=bool)
        return test(x)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}`` (numpy semantics)."
    return fn


isnan = _classify("isnan", lambda x: lax.ne(x, x))
isinf = _classify("isinf", lambda x: lax.bitwise_and(lax.eq(x, x), lax.bitwise_not(lax.is_finite(x))))


def _scaled(name, inner, outer, real_only=False):
    """``outer(inner(x))`` with ``x`` computed in floating point (integers as float64);
    ``real_only``: complex numbers are refused, as numpy does."""
    def fn(x):
        x = _to_float(_arraylike(x))
        if real_only:
            from ..lax.primitives import check_kinds
            check_kinds(name, "ordered", typeof(x))
        return outer(inner(x), typeof(x).dtype)
    fn.__name__ = name
    return fn


def _times(c):
    return lambda y, dt: lax.mul(y, np.asarray(c, dtype=dt) if not is_complex_dtype(dt) else np.asarray(c).astype(dt))


log2 = _scaled("log2", lax.log, _times(1 / np.log(2)))
log10 = _scaled("log10", lax.log, _times(1 / np.log(10)))
deg2rad = _scaled("deg2rad", lambda x: x, _times(np.pi / 180), real_only=True)
rad2deg = _scaled("rad2deg", lambda x: x, _times(180 / np.pi), real_only=True)


def exp2(x):
    """``2 ** x`` (integers are computed in float64)."""
    x = _to_float(_arraylike(x))
    return lax.api.pow(np.asarray(2, dtype=typeof(x).dtype), x)


# --- rounding, remainders, shifts and other elementwise functions ---------------------------
def around(a, decimals=0):
    """numpy's ``round``: half to even at ``decimals`` digits, computed as numpy does
    (``rint(a * 10**d) / 10**d``, or ``rint(a / 10**-d) * 10**-d`` for ``d < 0``); integers
    are unchanged for ``d >= 0`` and rounded through float64 otherwise; complex numbers part
    by part."""
    (a,) = promote(_arraylike(a))
    decimals = int(decimals)
    dtype = typeof(a).dtype
    if is_complex_dtype(dtype):
        return lax.complex(around(lax.real(a), decimals), around(lax.imag(a), decimals))
    if dtype == bool_:
        if decimals < 0:
            raise TypeError("round: cannot round bool values to negative decimals")
        return rint(a)
    if not is_float_dtype(dtype):
        if decimals >= 0:
            return a
        return lax.convert_element_type(around(lax.convert_element_type(a, float64), decimals), dtype)
    if decimals == 0:
        return lax.round(a, lax.RoundingMethod.TO_NEAREST_EVEN)
    f = 10.0 ** (decimals if decimals >= 0 else -decimals)   # a Python float: weakly typed
    if decimals > 0:
        return true_divide(lax.round(multiply(a, f), lax.RoundingMethod.TO_NEAREST_EVEN), f)
    return multiply(lax.round(true_divide(a, f), lax.RoundingMethod.TO_NEAREST_EVEN), f)


round = around


def fmod(x1, x2):
    """The C remainder ``x1 - trunc(x1 / x2) * x2``: the sign of the dividend; ``x % 0`` is NaN
    for floats and 0 for integers, as numpy gives."""
    x1, x2 = promote_and_broadcast(_arraylike(x1), _arraylike(x2), keep_scalars=True)
    if typeof(x1).dtype == bool_:   # numpy computes bools as int8
        x1, x2 = lax.convert_element_type(x1, np.int8), lax.convert_element_type(x2, np.int8)
    return lax.rem(x1, x2)


def _shift_operands(x1, x2):
    x1, x2 = promote_and_broadcast(_arraylike(x1), _arraylike(x2), keep_scalars=True)
    if typeof(x1).dtype == bool_:   # numpy computes bools as int8
        x1, x2 = lax.convert_element_type(x1, np.int8), lax.convert_element_type(x2, np.int8)
    return x1, x2


def left_shift(x1, x2):
    """``x1 << x2`` for integers. A count outside ``[0, bits)`` (negative, or at least the bit
    width) gives 0, as in XLA (and numpy's kernels)."""
    return lax.shift_left(*_shift_operands(x1, x2))


def right_shift(x1, x2):
    """``x1 >> x2``: arithmetic for signed, logical for unsigned integers. A count outside
    ``[0, bits)`` gives the sign fill: -1 for negative ``x1``, 0 otherwise (XLA's rule)."""
    return lax.shift_right(*_shift_operands(x1, x2))


bitwise_left_shift = left_shift
bitwise_right_shift = right_shift
bitwise_not = invert
bitwise_invert = invert


def _float_pair(name, x, y):
    x, y = promote_and_broadcast(_to_float(_arraylike(x)), _to_float(_arraylike(y)), keep_scalars=True)
    from ..lax.primitives import check_kinds
    check_kinds(name, "float", typeof(x))
    return x, y


def hypot(x1, x2):
    """``sqrt(x1**2 + x2**2)`` without overflow: ``m * sqrt(1 + (s / m)**2)`` with ``m`` the
    larger magnitude; infinite if either is infinite (even beside a NaN), as numpy."""
    x, y = _float_pair("hypot", x1, x2)
    ax, ay = lax.abs(x), lax.abs(y)
    big, small = maximum(ax, ay), minimum(ax, ay)
    dt = typeof(big).dtype
    r = true_divide(small, where(equal(big, 0), dt.type(1), big))
    out = multiply(big, sqrt(add(multiply(r, r), dt.type(1))))
    return where(logical_or(isinf(x), isinf(y)), dt.type(np.inf), out)


def sinc(x):
    """``sin(pi x) / (pi x)``, exactly 1 at 0."""
    x = _to_float(_arraylike(x))
    (x,) = promote(x)
    zero = equal(x, 0)
    y = multiply(np.pi, where(zero, 1.0, x))
    return where(zero, typeof(y).dtype.type(1), true_divide(sin(y), y))


def signbit(x):
    """Whether the sign bit is set: ``x < 0``, and True for -0.0. A NaN counts as positive
    (its sign bit cannot be read without a bitcast; numpy reads it)."""
    (x,) = promote(_arraylike(x))
    dtype = typeof(x).dtype
    from ..lax.primitives import check_kinds
    check_kinds("signbit", "ordered", typeof(x))
    if dtype == bool_ or np.issubdtype(dtype, np.unsignedinteger):
        from .creation import full_like
        return full_like(x, False, dtype=bool)
    neg = less(x, dtype.type(0))
    if not is_float_dtype(dtype):
        return neg
    zero = equal(x, dtype.type(0))
    inv = true_divide(dtype.type(1), where(zero, x, dtype.type(1)))   # -inf for -0.0
    return logical_or(neg, logical_and(zero, less(inv, dtype.type(0))))


def copysign(x1, x2):
    """``x1`` with the sign of ``x2`` (integers are computed in float64). A NaN ``x2`` counts
    as positive (see ``signbit``)."""
    x, y = _float_pair("copysign", x1, x2)
    mag = lax.abs(x)
    if typeof(mag).ndim < typeof(y).ndim:
        mag = broadcast_arrays(mag, y)[0]
    return where(signbit(y), lax.neg(mag), mag)


def heaviside(x1, x2):
    """0 where ``x1 < 0``, ``x2`` where ``x1 == 0``, 1 where ``x1 > 0``, NaN where ``x1`` is NaN."""
    x, h = _float_pair("heaviside", x1, x2)
    dt = typeof(x).dtype
    out = where(less(x, dt.type(0)), dt.type(0), where(greater(x, dt.type(0)), dt.type(1), h))
    return where(isnan(x), dt.type(np.nan), out)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (the dtype's largest
    and smallest finite values by default); complex numbers part by part; integers unchanged."""
    (x,) = promote(_arraylike(x))
    dtype = typeof(x).dtype
    if is_complex_dtype(dtype):
        return lax.complex(nan_to_num(lax.real(x), copy, nan, posinf, neginf),
                           nan_to_num(lax.imag(x), copy, nan, posinf, neginf))
    if not is_float_dtype(dtype):
        return x
    info = finfo(dtype)
    hi = info.max if posinf is None else posinf
    lo = info.min if neginf is None else neginf
    c = lambda v: np.asarray(v).astype(dtype)[()]
    out = where(isnan(x), c(nan), x)
    out = where(equal(x, dtype.type(np.inf)), c(hi), out)
    return where(equal(x, dtype.type(-np.inf)), c(lo), out)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|a - b| <= atol + rtol * |b|`` for finite ``b``, ``a == b`` otherwise (numpy's rule:
    ``b`` is computed as a float); NaNs are equal when ``equal_nan``."""
    a, b = _arraylike(a), _arraylike(b)
    b = _to_float(b)
    diff = abs(subtract(a, b))
    tol = add(atol, multiply(rtol, abs(b)))
    close = logical_and(less_equal(diff, tol), isfinite(b))
    out = logical_or(close, equal(a, b))
    if equal_nan:
        out = logical_or(out, logical_and(isnan(a), isnan(b)))
    return out


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether ``isclose`` holds everywhere: a bool scalar (traced under ``qjit``)."""
    from .reductions import all as _all
    out = _all(isclose(a, b, rtol, atol, equal_nan))
    return bool(out) if not isinstance(out, Tracer) else out
