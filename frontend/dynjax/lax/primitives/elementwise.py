"""Elementwise primitives: unary and binary operations, comparisons, selects, conversions
(part of the primitive catalogue, ``lax/primitives/``)."""
from __future__ import annotations

import numpy as np

from ...core.avals import (bool_, canonical_dtype, complex_dtype, dtype_category, is_complex_dtype,
                           is_float_dtype, is_inexact_dtype, is_integer_dtype, real_dtype)
from ...core.primitive import impl_into_rules
from ..base import (aval, check_dtypes_equal, check_same_shapes, define, describe_shapes,
                    result_aval, shapes_equal)


_NUMPY = (np.ndarray, np.generic)   # numpy values: never weakly typed, unlike Python scalars


def _arr(x, dtype=None):
    return np.asarray(x, dtype=dtype)


# ----------------------------------------------------------------------------------------------
# Elementwise
# ----------------------------------------------------------------------------------------------

# What each elementwise primitive accepts ("kinds"): every refusal is a TypeError naming the
# operation and the dtype, never a silent conversion.
_KINDS = {
    "any": ("bool", "signed", "unsigned", "float", "complex"),
    "ordered": ("bool", "signed", "unsigned", "float"),        # no order on complex numbers
    "number": ("signed", "unsigned", "float", "complex"),
    "real_number": ("signed", "unsigned", "float"),
    "int_or_bool": ("bool", "signed", "unsigned"),
    "float": ("float",),
    "inexact": ("float", "complex"),
}
_KIND_WORDS = {"ordered": "non-complex", "number": "numeric (non-bool)", "real_number": "real numeric",
               "int_or_bool": "integer or bool", "float": "real floating-point",
               "inexact": "floating-point or complex"}


def check_kinds(name, kinds, *avals_):
    """A TypeError naming the operation and dtype when an operand's dtype is not accepted."""
    for a in avals_:
        if dtype_category(a.dtype) not in _KINDS[kinds]:
            raise TypeError(f"{name} needs {_KIND_WORDS[kinds]} operands, got {a.str_short()}")


def _unary_abstract(name, kinds, real_result=False):
    def rule(x):
        a = aval(x)
        check_kinds(name, kinds, a)
        return result_aval(a.shape, real_dtype(a.dtype) if real_result else a.dtype, a.weak_type)
    return rule


#: numpy's own dtypes of numbers and bools (not ml_dtypes' bfloat16 and float8s, whose
#: ufunc loops are not always what the impl's conversions give): the in-place rules' dtypes
_UFUNC_KINDS = frozenset("biufc")


def _unary(name, fn, kinds="number", real_result=False, ufunc=None, into_kinds=None):
    """An elementwise primitive of one operand computed by ``fn``. When ``fn`` (or ``ufunc``,
    for the dtype kinds ``into_kinds``) is a numpy ufunc computing it, eager evaluation may
    compute it in place (``impl_into_rules``)."""
    accepted = set()   # dtypes this operation took eagerly: their checks passed once and for all

    def impl(x):
        x = _arr(x)
        if x.dtype not in accepted:
            check_kinds(name, kinds, aval(x))   # eager refuses what tracing refuses
            accepted.add(x.dtype)
        with np.errstate(all="ignore"):
            return _arr(fn(x), real_dtype(x.dtype) if real_result else x.dtype)
    p = define(name, impl, _unary_abstract(name, kinds, real_result))
    ufunc = fn if ufunc is None and isinstance(fn, np.ufunc) else ufunc
    if ufunc is not None:
        impl_into_rules[p] = _unary_into(ufunc, frozenset(into_kinds or _UFUNC_KINDS)
                                         - (frozenset("c") if real_result else frozenset()))
    return p


def _unary_into(ufunc, kinds):
    return lambda k, x: _ufunc_into(ufunc, kinds, x, x)


def _ufunc_into(ufunc, kinds, dest, *operands):
    """``ufunc(*operands)`` written into ``dest`` (numpy's own dtypes of ``kinds`` only, with
    no conversion), or None."""
    if dest.dtype.kind not in kinds or not dest.dtype.isnative:
        return None
    try:
        with np.errstate(all="ignore"):
            return ufunc(*operands, out=dest, casting="no")
    except TypeError:   # no loop of this dtype to itself: the impl converts
        return None


neg_p = _unary("neg", np.negative)


def _sign(x):
    """numpy's sign; the sign of -0.0 is +0.0 for every float dtype (ml_dtypes' bfloat16 sign
    returns -0.0, numpy's float16/32/64 return +0.0)."""
    out = np.sign(x)
    if is_float_dtype(x.dtype):
        out = np.where(x == 0, np.zeros((), x.dtype), out)
    return out


sign_p = _unary("sign", _sign)
floor_p = _unary("floor", np.floor, "float")
ceil_p = _unary("ceil", np.ceil, "float")
round_p = _unary("round", np.round, "float")
exp_p = _unary("exp", np.exp, "inexact")
log_p = _unary("log", np.log, "inexact")


def _log1p(x):
    if not is_complex_dtype(x.dtype):
        return np.log1p(x)
    # numpy's complex log1p is log(1 + z), which loses every digit for small |z|. Instead:
    # log|1 + z| = log1p(2x + x^2 + y^2) / 2 and arg(1 + z) = atan2(y, 1 + x) (the lowering
    # computes the same), except for parts whose squares overflow.
    re, im = x.real, x.imag
    out = np.empty_like(x)
    out.real = 0.5 * np.log1p(2 * re + (re * re + im * im))
    out.imag = np.arctan2(im, 1 + re)
    limit = np.sqrt(np.finfo(re.dtype).max) / 4
    return np.where((np.abs(re) > limit) | (np.abs(im) > limit), np.log1p(x), out)


log1p_p = _unary("log1p", _log1p, "inexact", ufunc=np.log1p, into_kinds="f")
expm1_p = _unary("expm1", np.expm1, "inexact")
sin_p = _unary("sin", np.sin, "inexact")
cos_p = _unary("cos", np.cos, "inexact")
tan_p = _unary("tan", np.tan, "inexact")
asin_p = _unary("asin", np.arcsin, "inexact")
acos_p = _unary("acos", np.arccos, "inexact")
atan_p = _unary("atan", np.arctan, "inexact")
sinh_p = _unary("sinh", np.sinh, "inexact")
cosh_p = _unary("cosh", np.cosh, "inexact")
tanh_p = _unary("tanh", np.tanh, "inexact")
sqrt_p = _unary("sqrt", np.sqrt, "inexact")
rsqrt_p = _unary("rsqrt", lambda x: 1.0 / np.sqrt(x), "inexact")
cbrt_p = _unary("cbrt", np.cbrt, "float")
abs_p = _unary("abs", np.abs, real_result=True)   # |z| of a complex number is real
real_p = _unary("real", np.real, "any", real_result=True)
imag_p = _unary("imag", np.imag, "any", real_result=True)
conj_p = _unary("conj", np.conj, "any")
not_p = _unary("not", lambda x: np.logical_not(x) if x.dtype == np.bool_ else np.invert(x), "int_or_bool")
logistic_p = _unary("logistic", lambda x: 1.0 / (1.0 + np.exp(-x)), "inexact")


def _is_finite_abstract(x):
    a = aval(x)
    check_kinds("is_finite", "float", a)
    return result_aval(a.shape, bool_)


is_finite_p = define("is_finite", lambda x: np.isfinite(_arr(x)), _is_finite_abstract)


def _binary_abstract(name, kinds, out_bool=False):
    def rule(x, y):
        a, b = aval(x), aval(y)
        check_dtypes_equal(name, a, b)
        if a.ndim and b.ndim:
            check_same_shapes(name, a, b)
        shape = a.shape if a.ndim else b.shape   # a rank-0 operand broadcasts
        check_kinds(name, kinds, a)
        dtype = bool_ if out_bool else a.dtype
        return result_aval(shape, dtype, a.weak_type and b.weak_type and not out_bool)
    return rule


def _binary(name, fn, kinds="number", out_bool=False, ufunc=None, into_kinds=None):
    """An elementwise primitive of two operands computed by ``fn`` (see ``_unary`` for
    ``ufunc`` and ``into_kinds``; never for comparisons, whose results are bools)."""
    abstract = _binary_abstract(name, kinds, out_bool)

    accepted = set()   # dtypes of two numpy operands this operation took eagerly: the checks
    # depend on the dtypes and on equal shapes (or a rank-0 operand), so such operands pass them

    def impl(x, y):
        # eager refuses what tracing refuses: operands of two dtypes (a Python scalar is
        # float64 / int64 / complex128 / bool, as in JAX with x64: lax.add(float32_array, 2.0)
        # is a TypeError either way), shapes that differ, dtypes the operation does not take
        arrays = isinstance(x, _NUMPY) and isinstance(y, _NUMPY) and x.dtype == y.dtype
        if not (arrays and x.dtype in accepted
                and (x.shape == y.shape or not x.shape or not y.shape)):
            abstract(x, y)
            if arrays:
                accepted.add(x.dtype)
        x, y = _arr(x), _arr(y)
        with np.errstate(all="ignore"):
            out = fn(x, y)
        return _arr(out, bool_ if out_bool else x.dtype)
    p = define(name, impl, abstract)
    ufunc = fn if ufunc is None and isinstance(fn, np.ufunc) and not out_bool else ufunc
    if ufunc is not None:
        impl_into_rules[p] = _binary_into(ufunc, frozenset(into_kinds or _UFUNC_KINDS))
    return p


def _binary_into(ufunc, kinds):
    def into(k, x, y):
        x, y = _arr(x), _arr(y)
        dest, other = (x, y) if k == 0 else (y, x)
        if other.dtype != dest.dtype or (other.shape != dest.shape and other.ndim):
            return None
        return _ufunc_into(ufunc, kinds, dest, x, y)
    return into


def _int_div(x, y):
    """Integer division rounding toward zero, as XLA does (numpy's // rounds down); x / 0 is 0
    and, for signed types, MIN / -1 wraps around to MIN."""
    safe = np.where(y == 0, 1, y).astype(x.dtype)
    q = x // safe          # rounds down; numpy wraps MIN // -1 to MIN
    inexact = (x % safe != 0) & ((x < 0) != (safe < 0))
    q = np.where(inexact, q + 1, q)   # a negative quotient that was rounded down
    return np.where(y == 0, 0, q)


def _div(x, y):
    if is_integer_dtype(x.dtype):
        return _int_div(x, y)
    return np.true_divide(x, y)


def _rem(x, y):
    if is_integer_dtype(x.dtype):
        safe = np.where(y == 0, 1, y)
        return np.where(y == 0, 0, np.fmod(x, safe))
    return np.fmod(x, y)


def _pow(x, y):
    if is_integer_dtype(x.dtype):
        return np.where(y < 0, 0, np.power(x, np.maximum(y, 0)))
    return np.power(x, y)


# (numpy's add and multiply of bools are the logical or and and)
add_p = _binary("add", lambda x, y: np.logical_or(x, y) if x.dtype == np.bool_ else x + y, "any",
                ufunc=np.add)
sub_p = _binary("sub", np.subtract)
mul_p = _binary("mul", lambda x, y: np.logical_and(x, y) if x.dtype == np.bool_ else x * y, "any",
                ufunc=np.multiply)
div_p = _binary("div", _div, ufunc=np.true_divide, into_kinds="fc")
rem_p = _binary("rem", _rem, "real_number", ufunc=np.fmod, into_kinds="f")
pow_p = _binary("pow", _pow, ufunc=np.power, into_kinds="fc")
def _max(x, y):
    """numpy's maximum, except that -0.0 < +0.0 whatever the operand order (IEEE 754-2019
    maximum, as XLA computes it); numpy returns whichever zero its SIMD kernel picks."""
    out = np.maximum(x, y)
    if is_float_dtype(x.dtype):
        zeros = (x == 0) & (y == 0)
        out = np.where(zeros, np.where(np.signbit(x), y, x), out)
    return out


def _min(x, y):
    """numpy's minimum, except that -0.0 < +0.0 whatever the operand order (see ``_max``)."""
    out = np.minimum(x, y)
    if is_float_dtype(x.dtype):
        zeros = (x == 0) & (y == 0)
        out = np.where(zeros, np.where(np.signbit(x), x, y), out)
    return out


max_p = _binary("max", _max, "ordered")
min_p = _binary("min", _min, "ordered")
atan2_p = _binary("atan2", np.arctan2, "float")
and_p = _binary("and", np.bitwise_and, "int_or_bool")
or_p = _binary("or", np.bitwise_or, "int_or_bool")
xor_p = _binary("xor", np.bitwise_xor, "int_or_bool")
eq_p = _binary("eq", np.equal, "any", out_bool=True)
ne_p = _binary("ne", np.not_equal, "any", out_bool=True)
lt_p = _binary("lt", np.less, "ordered", out_bool=True)
le_p = _binary("le", np.less_equal, "ordered", out_bool=True)
gt_p = _binary("gt", np.greater, "ordered", out_bool=True)
ge_p = _binary("ge", np.greater_equal, "ordered", out_bool=True)


def _shift(x, y, left):
    """numpy's shifts for counts in ``[0, bits)``; any other count (negative, or ``>= bits``)
    gives what XLA gives, the count read as unsigned: 0 for a left shift and a logical right
    shift, the sign fill (0 or -1) for an arithmetic right shift (signed types). numpy's own
    kernels agree (they compare the count as unsigned too)."""
    bits = 8 * x.dtype.itemsize
    in_range = (y >= 0) & (y < bits)
    safe = np.where(in_range, y, 0).astype(x.dtype)
    if left:
        return np.where(in_range, np.left_shift(x, safe), np.zeros((), x.dtype))
    fill = np.where(x < 0, x.dtype.type(-1), x.dtype.type(0)) if x.dtype.kind == "i" else np.zeros((), x.dtype)
    return np.where(in_range, np.right_shift(x, safe), fill)


_KINDS.setdefault("integer", ("signed", "unsigned"))
_KIND_WORDS.setdefault("integer", "integer")
shift_left_p = _binary("shift_left", lambda x, y: _shift(x, y, True), "integer")
# arithmetic for signed types, logical for unsigned ones (numpy's right_shift)
shift_right_p = _binary("shift_right", lambda x, y: _shift(x, y, False), "integer")


def _integer_pow_impl(x, *, y):
    """``x ** y`` by square-and-multiply in x's dtype, one rounding per multiplication (x ** 3
    is (x * x) * x), then 1 / that for a negative y: the products the lowering emits. numpy's
    ``power`` rounds once, so it may differ in the last bit."""
    x = _arr(x)
    if y == 0:
        return np.ones_like(x)
    acc, base, n = None, x, abs(y)
    with np.errstate(all="ignore"):
        while n:
            if n & 1:
                acc = base if acc is None else _arr(acc * base, x.dtype)
            n >>= 1
            if n:
                base = _arr(base * base, x.dtype)
        if y < 0:
            acc = np.ones((), x.dtype) / acc
    return _arr(acc, x.dtype)


def _integer_pow_abstract(x, *, y):
    a = aval(x)
    if y < 0 and not is_inexact_dtype(a.dtype):
        raise TypeError(f"integer_pow with a negative exponent needs a floating-point operand, got {a.str_short()}")
    return result_aval(a.shape, a.dtype, a.weak_type)


integer_pow_p = define("integer_pow", _integer_pow_impl, _integer_pow_abstract)


def _complex_impl(x, y):
    """The complex number with real part x and imaginary part y, both exactly (``x + 1j * y``
    would turn ``complex(1, inf)`` into ``nan+infj`` and lose the sign of a zero y)."""
    _complex_abstract(x, y)   # eager refuses what tracing refuses
    x, y = _arr(x), _arr(y)
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), complex_dtype(x.dtype))
    out.real = x
    out.imag = y
    return out


def _complex_abstract(x, y):
    a, b = aval(x), aval(y)
    check_dtypes_equal("complex", a, b)
    if a.ndim and b.ndim:
        check_same_shapes("complex", a, b)
    if a.dtype not in (np.float32, np.float64):
        raise TypeError(f"complex needs float32 or float64 parts, got {a.str_short()}")
    return result_aval(a.shape if a.ndim else b.shape, complex_dtype(a.dtype), a.weak_type and b.weak_type)


complex_p = define("complex", _complex_impl, _complex_abstract)   # real + 1j * imag


def _select_n_impl(which, *cases):
    which = _arr(which).astype(np.int64)   # bool or any integer dtype (uint64 included)
    return _arr(np.choose(which, [_arr(c) for c in cases]), _arr(cases[0]).dtype)


def _select_n_abstract(which, *cases):
    w = aval(which)
    cs = [aval(c) for c in cases]
    if not cs:
        raise TypeError("select_n needs at least one case")
    if w.dtype != bool_ and not is_integer_dtype(w.dtype):
        raise TypeError(f"select_n predicate must be bool or integer, got {w.dtype.name}")
    check_dtypes_equal("select_n", *cs)
    check_same_shapes("select_n", *cs)
    if w.shape != () and not shapes_equal(w.shape, cs[0].shape):
        raise TypeError(f"select_n: predicate shape must be scalar or match the cases: {describe_shapes(w, cs[0])}")
    return result_aval(cs[0].shape, cs[0].dtype, all(c.weak_type for c in cs))


select_n_p = define("select_n", _select_n_impl, _select_n_abstract)


def _convert_impl(x, *, new_dtype, weak_type=False):
    x = _arr(x)
    if is_complex_dtype(x.dtype) and not is_complex_dtype(new_dtype) and np.dtype(new_dtype) != bool_:
        x = x.real   # numpy's astype keeps the real part (as does the lowering); to bool: z != 0
    if is_integer_dtype(new_dtype) and is_float_dtype(x.dtype):
        # truncate toward zero, NaN -> 0, saturate at the integer range (as the lowering does)
        info = np.iinfo(new_dtype)
        with np.errstate(all="ignore"):
            hi, lo = x >= float(info.max), x <= float(info.min)
            mid = np.where(hi | lo | np.isnan(x), 0, np.trunc(x)).astype(new_dtype)
        return _arr(np.where(hi, info.max, np.where(lo, info.min, mid)), new_dtype)
    return _arr(x, new_dtype)


def _convert_abstract(x, *, new_dtype, weak_type=False):
    a = aval(x)
    return result_aval(a.shape, canonical_dtype(new_dtype), weak_type)


convert_element_type_p = define("convert_element_type", _convert_impl, _convert_abstract)
