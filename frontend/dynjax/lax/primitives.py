"""The primitive catalogue: each primitive with its numpy impl and abstract evaluation.

Primitives are strict: elementwise binary operations need equal shapes and dtypes
(broadcasting and type promotion happen in ``dynjax.numpy``). Operations whose result
shape may be dynamic take the dynamic sizes as trailing scalar operands and record
``None`` in the corresponding entry of their static ``shape``-like param, as in
``broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0 b``.

Lowering rules live in ``dynjax.lowering``; control-flow primitives in
``dynjax.control_flow``.
"""
from __future__ import annotations

import numpy as np

from ..core.avals import (bool_, canonical_dtype, complex_dtype, dtype_category, is_complex_dtype,
                          is_float_dtype, is_inexact_dtype, is_integer_dtype, real_dtype)
from ..core.primitive import as_dim
from .base import (aval, check_dim_operands, check_dtypes_equal, check_same_shapes,
                   concrete_shape, define, describe_shapes, dim_str, dims_from_operands, fmt_shape,
                   result_aval, same_dim, shapes_equal)


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


def _unary(name, fn, kinds="number", real_result=False):
    def impl(x):
        x = _arr(x)
        check_kinds(name, kinds, aval(x))   # eager refuses what tracing refuses
        with np.errstate(all="ignore"):
            return _arr(fn(x), real_dtype(x.dtype) if real_result else x.dtype)
    return define(name, impl, _unary_abstract(name, kinds, real_result))


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


log1p_p = _unary("log1p", _log1p, "inexact")
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


def _binary(name, fn, kinds="number", out_bool=False):
    abstract = _binary_abstract(name, kinds, out_bool)

    def impl(x, y):
        # eager refuses what tracing refuses: operands of two dtypes (a Python scalar is
        # float64 / int64 / complex128 / bool, as in JAX with x64: lax.add(float32_array, 2.0)
        # is a TypeError either way), shapes that differ, dtypes the operation does not take
        abstract(x, y)
        x, y = _arr(x), _arr(y)
        with np.errstate(all="ignore"):
            out = fn(x, y)
        return _arr(out, bool_ if out_bool else x.dtype)
    return define(name, impl, abstract)


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


add_p = _binary("add", lambda x, y: np.logical_or(x, y) if x.dtype == np.bool_ else x + y, "any")
sub_p = _binary("sub", np.subtract)
mul_p = _binary("mul", lambda x, y: np.logical_and(x, y) if x.dtype == np.bool_ else x * y, "any")
div_p = _binary("div", _div)
rem_p = _binary("rem", _rem, "real_number")
pow_p = _binary("pow", _pow)
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

# ----------------------------------------------------------------------------------------------
# Shapes: broadcast, iota, reshape, transpose, squeeze
# ----------------------------------------------------------------------------------------------


def _broadcast_in_dim_impl(x, *dyn_shape, shape, broadcast_dimensions):
    x = _arr(x)
    out_shape = concrete_shape(shape, dyn_shape)
    expanded = [1] * len(out_shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return np.array(np.broadcast_to(x.reshape(expanded), out_shape))


def _broadcast_in_dim_abstract(x, *dyn_shape, shape, broadcast_dimensions):
    a = aval(x)
    check_dim_operands("broadcast_in_dim", dyn_shape)
    out_shape = dims_from_operands(shape, dyn_shape)
    if len(broadcast_dimensions) != a.ndim:
        raise TypeError(f"broadcast_in_dim: operand rank {a.ndim} does not match "
                        f"broadcast_dimensions {broadcast_dimensions}")
    for i, d in enumerate(broadcast_dimensions):
        if not 0 <= d < len(out_shape):
            raise TypeError(f"broadcast_in_dim: broadcast dimension {d} out of range")
        src = a.shape[i]
        if not (isinstance(src, int) and src == 1) and not same_dim(src, out_shape[d]):
            raise TypeError(f"broadcast_in_dim: cannot broadcast {describe_shapes(a)} to "
                            f"{describe_shapes(result_aval(out_shape, a.dtype))}")
    for d in out_shape:
        if isinstance(d, int) and d < 0:
            raise TypeError(f"broadcast_in_dim: negative dimension {d}")
    return result_aval(out_shape, a.dtype, a.weak_type)


broadcast_in_dim_p = define("broadcast_in_dim", _broadcast_in_dim_impl, _broadcast_in_dim_abstract)


def _iota_impl(*dyn_shape, dtype, shape, dimension):
    out_shape = concrete_shape(shape, dyn_shape)
    idx = np.arange(out_shape[dimension], dtype=dtype)
    expanded = [1] * len(out_shape)
    expanded[dimension] = out_shape[dimension]
    return np.array(np.broadcast_to(idx.reshape(expanded), out_shape))


def _iota_abstract(*dyn_shape, dtype, shape, dimension):
    check_dim_operands("iota", dyn_shape)
    return result_aval(dims_from_operands(shape, dyn_shape), canonical_dtype(dtype))


iota_p = define("iota", _iota_impl, _iota_abstract)


def _reshape_impl(x, *dyn_shape, new_sizes, dimensions=None):
    x = _arr(x)
    if dimensions is not None:   # read the elements in this axis order (XLA's reshape)
        x = np.transpose(x, tuple(dimensions))
    out = concrete_shape(new_sizes, dyn_shape)
    if int(np.prod(out)) != x.size:
        raise ValueError(f"cannot reshape an array of shape {x.shape} (size {x.size}) into shape {out}")
    return x.reshape(out)


def _reshape_abstract(x, *dyn_shape, new_sizes, dimensions=None):
    a = aval(x)
    check_dim_operands("reshape", dyn_shape)
    out = dims_from_operands(new_sizes, dyn_shape)
    # Sizes must be provably equal: equal products of static dims and the same multiset of dims.
    def split(shape):
        static, sym = 1, []
        for d in shape:
            if isinstance(d, int):
                static *= d
            else:
                sym.append(d)
        return static, sym
    s_in, y_in = split(a.shape)
    s_out, y_out = split(out)
    ok = s_in == s_out and len(y_in) == len(y_out) and all(
        any(d is e for e in y_out) for d in y_in) and all(any(d is e for e in y_in) for d in y_out)
    if not ok and s_in == 0 and s_out == 0:
        ok = True
    provably_different = (not y_in and not y_out) or (
        s_in != s_out and sorted(map(id, y_in)) == sorted(map(id, y_out)))
    if not ok and provably_different:
        raise TypeError(f"reshape: cannot reshape {describe_shapes(a)} into shape "
                        f"{describe_shapes(result_aval(out, a.dtype))}: the sizes differ")
    # Sizes the tracer cannot decide (e.g. n*3 vs a traced product) are checked at run time.
    return result_aval(out, a.dtype, a.weak_type)


reshape_p = define("reshape", _reshape_impl, _reshape_abstract)


def _transpose_abstract(x, *, permutation):
    a = aval(x)
    if sorted(permutation) != list(range(a.ndim)):
        raise TypeError(f"transpose: permutation {permutation} is not a permutation of the {a.ndim} axes")
    return result_aval(tuple(a.shape[p] for p in permutation), a.dtype, a.weak_type)


transpose_p = define("transpose", lambda x, *, permutation: np.array(np.transpose(_arr(x), permutation), order="C"),
                     _transpose_abstract)


def _squeeze_abstract(x, *, dimensions):
    a = aval(x)
    for d in dimensions:
        if not 0 <= d < a.ndim:
            raise TypeError(f"squeeze: axis {d} out of range for {describe_shapes(a)}")
        if not (isinstance(a.shape[d], int) and a.shape[d] == 1):
            raise TypeError(f"squeeze: axis {d} of {describe_shapes(a)} does not have size 1")
    return result_aval(tuple(s for i, s in enumerate(a.shape) if i not in dimensions), a.dtype, a.weak_type)


squeeze_p = define("squeeze", lambda x, *, dimensions: np.squeeze(_arr(x), tuple(dimensions)), _squeeze_abstract)

def _rev_abstract(x, *, dimensions):
    a = aval(x)
    for d in dimensions:
        if not 0 <= d < a.ndim:
            raise TypeError(f"rev: axis {d} out of range for {describe_shapes(a)}")
    return result_aval(a.shape, a.dtype, a.weak_type)


rev_p = define("rev", lambda x, *, dimensions: np.array(np.flip(_arr(x), tuple(dimensions))), _rev_abstract)

# ----------------------------------------------------------------------------------------------
# Reductions and scans
# ----------------------------------------------------------------------------------------------


def _reduce_abstract(name, kinds="any"):
    def rule(x, *, axes):
        a = aval(x)
        check_kinds(name, kinds, a)
        for ax in axes:
            if not 0 <= ax < a.ndim:
                raise TypeError(f"{name}: axis {ax} out of range for {describe_shapes(a)}")
        return result_aval(tuple(d for i, d in enumerate(a.shape) if i not in axes), a.dtype, a.weak_type)
    return rule


def _reduce(name, fn, identity_ok=True, kinds="any"):
    def impl(x, *, axes):
        x = _arr(x)
        check_kinds(name, kinds, aval(x))
        if not identity_ok and any(x.shape[ax] == 0 for ax in axes):
            # max/min of an empty axis: the identity of the monoid (XLA semantics).
            if is_float_dtype(x.dtype):
                ident = -np.inf if name == "reduce_max" else np.inf
            elif x.dtype == np.bool_:
                ident = name == "reduce_min"
            else:
                info = np.iinfo(x.dtype)
                ident = info.min if name == "reduce_max" else info.max
            shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
            return np.full(shape, ident, dtype=x.dtype)
        return _arr(fn(x, axis=tuple(axes)), x.dtype)
    return define(name, impl, _reduce_abstract(name, kinds))


reduce_sum_p = _reduce("reduce_sum", lambda x, axis: np.sum(x, axis=axis) if x.dtype != np.bool_ else np.any(x, axis=axis))
reduce_prod_p = _reduce("reduce_prod", lambda x, axis: np.prod(x, axis=axis) if x.dtype != np.bool_ else np.all(x, axis=axis))
def _signed_zero_extremum(fn, winner_is_negative):
    """``fn`` (np.max / np.min) where a zero result is the zero that max_p / min_p would pick
    (-0.0 < +0.0) whatever the order of the elements, not whichever zero numpy's kernel keeps."""
    def reduce(x, axis):
        out = fn(x, axis=axis)
        if is_float_dtype(x.dtype):
            pos = np.zeros((), x.dtype)
            neg = -pos
            with np.errstate(invalid="ignore"):
                has = np.any((x == 0) & (np.signbit(x) == winner_is_negative), axis=axis)
            win, lose = (neg, pos) if winner_is_negative else (pos, neg)
            out = np.where(out == 0, np.where(has, win, lose), out)
        return out
    return reduce


reduce_max_p = _reduce("reduce_max", _signed_zero_extremum(np.max, False), identity_ok=False, kinds="ordered")
reduce_min_p = _reduce("reduce_min", _signed_zero_extremum(np.min, True), identity_ok=False, kinds="ordered")


def _argminmax(name, fn):
    def impl(x, *, axes, index_dtype):
        x = _arr(x)
        check_kinds(name, "ordered", aval(x))
        (ax,) = axes
        if x.shape[ax] == 0:
            raise ValueError(f"{name} of an empty axis")
        return _arr(fn(x, axis=ax), index_dtype)

    def abstract(x, *, axes, index_dtype):
        a = aval(x)
        check_kinds(name, "ordered", a)
        if len(axes) != 1 or not 0 <= axes[0] < a.ndim:
            raise TypeError(f"{name}: needs exactly one axis in range, got {axes} for {describe_shapes(a)}")
        return result_aval(tuple(d for i, d in enumerate(a.shape) if i != axes[0]), canonical_dtype(index_dtype))
    return define(name, impl, abstract)


argmax_p = _argminmax("argmax", np.argmax)
argmin_p = _argminmax("argmin", np.argmin)


def _cumulative(name, np_scan):
    """An inclusive scan along one axis (``reverse``: from the end), accumulated in the
    operand's dtype (for bools a running "or" / "and", as numpy computes them)."""
    def impl(x, *, axis, reverse=False):
        x = _arr(x)
        with np.errstate(all="ignore"):
            if reverse:
                return np.flip(np_scan(np.flip(x, axis), axis=axis, dtype=x.dtype), axis)
            return np_scan(x, axis=axis, dtype=x.dtype)

    def abstract(x, *, axis, reverse=False):
        a = aval(x)
        if not 0 <= axis < a.ndim:
            raise TypeError(f"{name}: axis {axis} out of range for {describe_shapes(a)}")
        return result_aval(a.shape, a.dtype, a.weak_type)
    return define(name, impl, abstract)


cumsum_p = _cumulative("cumsum", np.cumsum)
cumprod_p = _cumulative("cumprod", np.cumprod)


def _sort_impl(*operands, dimension, num_keys):
    ops = [_arr(o) for o in operands]
    check_kinds("sort", "ordered", *[aval(o) for o in ops[:num_keys]])
    if ops[0].size == 0:
        return [o.copy() for o in ops]
    # numpy's float order (-0.0 == +0.0, NaNs last); bfloat16 (ml_dtypes) does not sort NaNs
    # last, so narrow floats are ordered through float32, which holds them exactly
    keys = [k.astype(np.float32) if is_float_dtype(k.dtype) and k.dtype.itemsize < 4 else k
            for k in ops[:num_keys]]
    if num_keys == 1:
        k = keys[0]
        order = np.argsort(k, axis=dimension, kind="stable")
    else:
        moved = [np.moveaxis(k, dimension, -1) for k in keys]
        flat = [m.reshape(-1, m.shape[-1]) for m in moved]
        rows = [np.lexsort(tuple(f[r] for f in reversed(flat))) for r in range(flat[0].shape[0])]
        order = np.moveaxis(np.array(rows).reshape(moved[0].shape), -1, dimension)
    return [np.take_along_axis(o, order, axis=dimension) for o in ops]


def _sort_abstract(*operands, dimension, num_keys):
    avs = [aval(o) for o in operands]
    check_kinds("sort", "ordered", *avs[:num_keys])
    check_same_shapes("sort", *avs)
    if not 0 <= dimension < avs[0].ndim:
        raise TypeError(f"sort: dimension {dimension} out of range")
    return [result_aval(a.shape, a.dtype, a.weak_type) for a in avs]


sort_p = define("sort", _sort_impl, _sort_abstract, multiple_results=True)

# ----------------------------------------------------------------------------------------------
# Linear algebra
# ----------------------------------------------------------------------------------------------


def _dot_general_impl(x, y, *, dimension_numbers, preferred_element_type=None):
    x, y = _arr(x), _arr(y)
    if preferred_element_type is not None:
        # the products and their sum are computed in the preferred type (as XLA does), not
        # in the operands' type and converted afterwards
        x, y = x.astype(preferred_element_type), y.astype(preferred_element_type)
    (lc, rc), (lb, rb) = dimension_numbers
    lfree = [i for i in range(x.ndim) if i not in lc and i not in lb]
    rfree = [i for i in range(y.ndim) if i not in rc and i not in rb]
    xt = np.transpose(x, list(lb) + lfree + list(lc))
    yt = np.transpose(y, list(rb) + list(rc) + rfree)
    nb = len(lb)
    bshape = xt.shape[:nb]
    lf = xt.shape[nb:nb + len(lfree)]
    rf = yt.shape[nb + len(rc):]
    k = int(np.prod(xt.shape[nb + len(lfree):], dtype=np.int64))
    xm = xt.reshape(bshape + (int(np.prod(lf, dtype=np.int64)), k))
    ym = yt.reshape(bshape + (k, int(np.prod(rf, dtype=np.int64))))
    out = np.matmul(xm, ym).reshape(bshape + lf + rf)
    dtype = preferred_element_type or x.dtype
    return _arr(out, dtype)


def _dot_general_abstract(x, y, *, dimension_numbers, preferred_element_type=None):
    a, b = aval(x), aval(y)
    (lc, rc), (lb, rb) = dimension_numbers
    check_dtypes_equal("dot_general", a, b)
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError("dot_general: contracting/batch dimension lists differ in length")
    for i, j in list(zip(lc, rc)) + list(zip(lb, rb)):
        if not same_dim(a.shape[i], b.shape[j]):
            raise TypeError(f"dot_general: incompatible contraction or batch dimensions for shapes "
                            f"{describe_shapes(a, b)} (axis {i} of the first vs axis {j} of the second)")
    batch = tuple(a.shape[i] for i in lb)
    lfree = tuple(a.shape[i] for i in range(a.ndim) if i not in lc and i not in lb)
    rfree = tuple(b.shape[i] for i in range(b.ndim) if i not in rc and i not in rb)
    dtype = canonical_dtype(preferred_element_type) if preferred_element_type else a.dtype
    return result_aval(batch + lfree + rfree, dtype, a.weak_type and b.weak_type)


dot_general_p = define("dot_general", _dot_general_impl, _dot_general_abstract)

# ----------------------------------------------------------------------------------------------
# Slicing, concatenation, padding
# ----------------------------------------------------------------------------------------------


def _slice_impl(x, *, start_indices, limit_indices, strides=None):
    x = _arr(x)
    strides = strides or (1,) * x.ndim
    return np.array(x[tuple(slice(s, l, st) for s, l, st in zip(start_indices, limit_indices, strides))])


def _slice_abstract(x, *, start_indices, limit_indices, strides=None):
    a = aval(x)
    strides = strides or (1,) * a.ndim
    if not (len(start_indices) == len(limit_indices) == len(strides) == a.ndim):
        raise TypeError("slice: index lists must have one entry per axis")
    shape = []
    for d, s, l, st in zip(a.shape, start_indices, limit_indices, strides):
        if isinstance(d, int):
            l = d if l is None else l
            if not 0 <= s <= l <= d:
                raise TypeError(f"slice: indices {s}:{l} out of range for axis of size {d}")
            shape.append(max(0, -(-(l - s) // st)))
        else:
            if not (s == 0 and l is None and st == 1):
                raise TypeError("slice: a dynamic axis can only be kept whole by a static slice")
            shape.append(d)
    return result_aval(tuple(shape), a.dtype, a.weak_type)


slice_p = define("slice", _slice_impl, _slice_abstract)


def _dynamic_slice_impl(x, *operands, slice_sizes):
    x = _arr(x)
    n = x.ndim
    starts = [int(s) for s in operands[:n]]
    sizes = concrete_shape(slice_sizes, operands[n:])
    idx = []
    for s, size, dim in zip(starts, sizes, x.shape):
        if size > dim:
            raise ValueError(f"dynamic_slice: slice size {size} exceeds the axis size {dim}")
        s = min(max(s, 0), dim - size)  # clamp so the slice fits, as XLA does
        idx.append(slice(s, s + size))
    return np.array(x[tuple(idx)])


def _dynamic_slice_abstract(x, *operands, slice_sizes):
    a = aval(x)
    n = a.ndim
    if len(operands) < n or len(slice_sizes) != n:
        raise TypeError("dynamic_slice: needs one start index and one size per axis")
    for s in operands[:n]:
        sa = aval(s)
        if sa.shape != () or not is_integer_dtype(sa.dtype):
            raise TypeError(f"dynamic_slice: start indices must be integer scalars, got {sa.str_short()}")
    check_dim_operands("dynamic_slice", operands[n:])
    sizes = dims_from_operands(slice_sizes, operands[n:])
    for size, d in zip(sizes, a.shape):
        if isinstance(size, int) and isinstance(d, int) and size > d:
            raise TypeError(f"dynamic_slice: slice size {size} exceeds the axis size {d}")
    return result_aval(sizes, a.dtype, a.weak_type)


dynamic_slice_p = define("dynamic_slice", _dynamic_slice_impl, _dynamic_slice_abstract)


def _dynamic_update_slice_impl(x, update, *starts):
    x = np.array(_arr(x))
    u = _arr(update, x.dtype)
    idx = []
    for s, size, dim in zip(starts, u.shape, x.shape):
        s = min(max(int(s), 0), dim - size)
        idx.append(slice(s, s + size))
    x[tuple(idx)] = u
    return x


def _dynamic_update_slice_abstract(x, update, *starts):
    a, u = aval(x), aval(update)
    check_dtypes_equal("dynamic_update_slice", a, u)
    if a.ndim != u.ndim or len(starts) != a.ndim:
        raise TypeError("dynamic_update_slice: the update and start indices must match the operand rank")
    return result_aval(a.shape, a.dtype, a.weak_type)


dynamic_update_slice_p = define("dynamic_update_slice", _dynamic_update_slice_impl, _dynamic_update_slice_abstract)


def _concatenate_abstract(*xs, dimension):
    avs = [aval(x) for x in xs]
    if not avs:
        raise TypeError("concatenate needs at least one operand")
    check_dtypes_equal("concatenate", *avs)
    first = avs[0]
    for a in avs[1:]:
        if a.ndim != first.ndim or not all(same_dim(p, q) for i, (p, q) in enumerate(zip(a.shape, first.shape))
                                           if i != dimension):
            raise TypeError(f"concatenate: shapes {describe_shapes(*avs)} differ outside axis {dimension}")
    sizes = [a.shape[dimension] for a in avs]
    if all(isinstance(s, int) for s in sizes):
        size = sum(sizes)
    else:
        raise TypeError("concatenate of dynamic sizes takes the result size as an extra operand")
    shape = list(first.shape)
    shape[dimension] = size
    return result_aval(tuple(shape), first.dtype, all(a.weak_type for a in avs))


class _AvalOnly:
    """Lets an abstract rule be re-used on modified avals."""
    def __init__(self, a):
        self.aval = a


def _concat_abstract_entry(*operands, dimension, num_operands):
    xs = operands[:num_operands]
    avs = [aval(x) for x in xs]
    if all(isinstance(a.shape[dimension], int) for a in avs if 0 <= dimension < a.ndim):
        out = _concatenate_abstract(*xs, dimension=dimension)
        # a size operand is allowed when the sizes became static (a program traced with
        # dynamic sizes, re-evaluated at static ones); it must then agree
        for s in operands[num_operands:]:
            d = as_dim(s)
            if isinstance(d, int) and d != out.shape[dimension]:
                raise TypeError(f"concatenate: the size operand {d} differs from the operands' "
                                f"total size {out.shape[dimension]}")
        return out
    size_ops = operands[num_operands:]
    check_dim_operands("concatenate", size_ops)
    if len(size_ops) != 1:
        raise TypeError("concatenate with dynamic sizes takes the result size as one extra operand")
    zeroed = [_AvalOnly(a.update(shape=tuple(0 if i == dimension else d for i, d in enumerate(a.shape))))
              for a in avs]
    out = _concatenate_abstract(*zeroed, dimension=dimension)
    shape = list(out.shape)
    shape[dimension] = as_dim(size_ops[0])
    return result_aval(tuple(shape), out.dtype, out.weak_type)


def _concat_impl_entry(*operands, dimension, num_operands):
    return np.concatenate([_arr(x) for x in operands[:num_operands]], axis=dimension)


concatenate_p = define("concatenate", _concat_impl_entry, _concat_abstract_entry)


def _pad_impl(x, padding_value, *, padding_config):
    """XLA's pad, axis by axis: ``interior`` values between neighbouring elements, then ``lo`` /
    ``hi`` values at the ends, where a negative amount removes that many elements from that
    end of the interior-padded (and other-end padded) axis."""
    x = _arr(x)
    pv = _arr(padding_value, x.dtype)
    out = x
    for axis, (lo, hi, interior) in enumerate(padding_config):
        n = out.shape[axis]
        core = n + max(n - 1, 0) * interior
        start = max(lo, 0)
        total = start + core + max(hi, 0)
        shape = list(out.shape)
        shape[axis] = total
        buf = np.full(shape, pv, dtype=x.dtype)
        idx = [slice(None)] * out.ndim
        idx[axis] = slice(start, start + core, interior + 1)
        buf[tuple(idx)] = out
        keep = [slice(None)] * out.ndim
        keep[axis] = slice(max(-lo, 0), max(total - max(-hi, 0), max(-lo, 0)))
        out = buf[tuple(keep)]
    return np.array(out)


def _pad_abstract(x, padding_value, *, padding_config):
    a, p = aval(x), aval(padding_value)
    if p.shape != ():
        raise TypeError("pad: the padding value must be a scalar")
    check_dtypes_equal("pad", a, p)
    if len(padding_config) != a.ndim:
        raise TypeError("pad: padding_config needs one (lo, hi, interior) per axis")
    shape = []
    for d, (lo, hi, interior) in zip(a.shape, padding_config):
        if isinstance(d, int):
            shape.append(lo + hi + d + max(d - 1, 0) * interior)
        elif lo == 0 and hi == 0 and interior == 0:
            shape.append(d)
        else:
            raise TypeError("pad: padding a dynamic axis needs dynjax.numpy.pad (which computes the new size)")
    return result_aval(tuple(shape), a.dtype, a.weak_type)


pad_p = define("pad", _pad_impl, _pad_abstract)


# ----------------------------------------------------------------------------------------------
# Gather and scatter: numpy's integer-array indexing, in one normal form
# ----------------------------------------------------------------------------------------------
#
# ``gather[axes] x idx``: ``idx`` is an integer array of shape ``B + (k,)`` holding, per row, one
# index into each of the ``k`` axes ``axes`` of ``x``; the result has shape ``B`` followed by
# the axes of ``x`` not in ``axes`` (whole, in order). Indices are clamped into range (XLA's
# gather semantics); an indexed axis of size 0 reads zeros. ``scatter[axes, kind] x idx u``
# writes (``kind="set"``) or combines (``add mul min max``) the rows of ``u`` (shape ``B`` +
# the other axes of ``x``) into a copy of ``x`` at those indices; rows with an index out of
# range are dropped. Everything else numpy and JAX offer (slices, negative indices, modes
# ``fill``/``clip``/``drop``, boolean masks, broadcasting) is built on these two in
# ``dynjax.numpy.indexing``.

def _index_rows(name, a, ia, axes):
    if not is_integer_dtype(ia.dtype) or ia.ndim < 1:
        raise TypeError(f"{name}: indices must be an integer array with a trailing index axis, "
                        f"got {ia.str_short()}")
    if not isinstance(ia.shape[-1], int) or ia.shape[-1] != len(axes):
        raise TypeError(f"{name}: the index rows have {ia.shape[-1]} entries for {len(axes)} axes")
    if len(set(axes)) != len(axes) or not all(0 <= d < a.ndim for d in axes):
        raise TypeError(f"{name}: axes {axes} must be distinct axes of a rank-{a.ndim} operand")
    return tuple(ia.shape[:-1]) + tuple(d for i, d in enumerate(a.shape) if i not in axes)


def _gather_impl(x, idx, *, axes):
    x, idx = _arr(x), _arr(idx)
    k = len(axes)
    batch, rest = idx.shape[:-1], tuple(d for i, d in enumerate(x.shape) if i not in axes)
    xt = np.moveaxis(x, list(axes), list(range(k)))
    if any(d == 0 for d in xt.shape[:k]):
        return np.zeros(batch + rest, x.dtype)
    hi = np.array(xt.shape[:k], dtype=np.int64) - 1
    cl = np.clip(idx.astype(np.int64), 0, hi)
    out = xt[tuple(cl[..., j] for j in range(k))]
    return np.array(np.broadcast_to(out, batch + rest), dtype=x.dtype)


def _gather_abstract(x, idx, *, axes):
    a, ia = aval(x), aval(idx)
    return result_aval(_index_rows("gather", a, ia, axes), a.dtype, a.weak_type)


gather_p = define("gather", _gather_impl, _gather_abstract)

_SCATTER_UFUNCS = {"add": (np.logical_or, np.add), "mul": (np.logical_and, np.multiply),
                   "min": (np.logical_and, np.minimum), "max": (np.logical_or, np.maximum)}


def _scatter_impl(x, idx, updates, *, axes, kind):
    out = np.array(_arr(x))
    idx, u = _arr(idx).astype(np.int64), _arr(updates, out.dtype)
    k = len(axes)
    ot = np.moveaxis(out, list(axes), list(range(k)))          # a view: writes land in ``out``
    sizes = np.array(ot.shape[:k], dtype=np.int64)
    ok = np.all((idx >= 0) & (idx < sizes), axis=-1)            # rows out of range are dropped
    rows, u = idx[ok], u[ok]
    where = tuple(rows[:, j] for j in range(k))
    if kind == "set":
        ot[where] = u                                           # the last of duplicates wins
        return out
    bool_op, op = _SCATTER_UFUNCS[kind]
    (bool_op if out.dtype == np.bool_ else op).at(ot, where, u)
    if kind in ("min", "max") and is_float_dtype(out.dtype):
        # -0.0 < +0.0, as XLA orders them (numpy keeps whichever zero it met first)
        src_neg = np.zeros(ot.shape, bool)
        src_pos = np.zeros(ot.shape, bool)
        x0 = np.moveaxis(_arr(x), list(axes), list(range(k)))
        src_neg |= (x0 == 0) & np.signbit(x0)
        src_pos |= (x0 == 0) & ~np.signbit(x0)
        np.logical_or.at(src_neg, where, (u == 0) & np.signbit(u))
        np.logical_or.at(src_pos, where, (u == 0) & ~np.signbit(u))
        zero = ot == 0
        neg = src_neg if kind == "min" else ~src_pos
        ot[zero] = np.where(neg[zero], -0.0, 0.0).astype(out.dtype)
    return out


def _scatter_abstract(x, idx, updates, *, axes, kind):
    a, ia, ua = aval(x), aval(idx), aval(updates)
    if kind not in ("set", "add", "mul", "min", "max"):
        raise TypeError(f"scatter: unknown kind {kind!r}")
    if kind in ("min", "max"):
        check_kinds(f"scatter_{kind}", "ordered", a)
    check_dtypes_equal("scatter", a, ua)
    want = _index_rows("scatter", a, ia, axes)
    if len(want) != ua.ndim or not all(same_dim(d1, d2) for d1, d2 in zip(want, ua.shape)):
        raise TypeError(f"scatter: updates of shape {fmt_shape(ua)} do not match the indexed "
                        f"shape ({', '.join(dim_str(d) for d in want)})")
    return result_aval(a.shape, a.dtype, a.weak_type)


scatter_p = define("scatter", _scatter_impl, _scatter_abstract)
