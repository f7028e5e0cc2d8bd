"""Lowering rules for every primitive of ``dynjax.lax.primitives``.

Each rule reproduces the numpy ``impl`` of its primitive (the reference semantics). Ops
whose shapes depend on dynamic dims use the ``dynamic_*`` forms fed by shape tensors built
from dim values (``dynamic_broadcast_in_dim``, ``dynamic_iota``, ``dynamic_reshape``,
``real_dynamic_slice``, ``dynamic_pad``); all of them become static ops once the dims are
constants (``stablehlo-refine-shapes`` + ``stablehlo-canonicalize-dynamism``, or
``refine_polymorphic_shapes``), which is how a module is specialized for XLA.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo
from jaxlib.mlir.dialects import stablehlo as hlo

from ..core.avals import (finfo, is_complex_dtype, is_float_dtype, is_integer_dtype, is_unsigned_dtype,
                          real_dtype)
from ..core.jaxpr import Literal
from ..lax import primitives as P
from ..lax.effects import debug_callback_p
from .context import LoweringContext, is_static, tensor_type
from .core import register_lowering

_I64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)


def _out(eqn, i=0):
    return eqn.outvars[i].aval


def _in(eqn, i=0):
    return eqn.invars[i].aval


def _scalar_type(value: ir.Value) -> ir.RankedTensorType:
    return ir.RankedTensorType.get([], ir.RankedTensorType(value.type).element_type)


# ----------------------------------------------------------------------------------------------
# Elementwise unary
# ----------------------------------------------------------------------------------------------

def _unary(prim, op: Callable):
    register_lowering(prim, lambda ctx, eqn, x: op(x).result)


for _p, _op in [
    (P.neg_p, hlo.NegOp), (P.sign_p, hlo.SignOp), (P.floor_p, hlo.FloorOp), (P.ceil_p, hlo.CeilOp),
    (P.round_p, hlo.RoundNearestEvenOp), (P.exp_p, hlo.ExpOp), (P.expm1_p, hlo.Expm1Op),
    (P.tan_p, hlo.TanOp), (P.tanh_p, hlo.TanhOp), (P.cbrt_p, hlo.CbrtOp), (P.not_p, hlo.NotOp),
    (P.logistic_p, hlo.LogisticOp), (P.is_finite_p, hlo.IsFiniteOp),
]:
    _unary(_p, _op)


def _is_f32_or_f64(dtype):
    return np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.float64))


def _branch_cut_symmetric(prim, op):
    """A complex function f with f(conj z) = conj(f(z)) whose branch cut lies on the real axis
    (log, sqrt, asin, ...): XLA takes every zero imaginary part as +0.0, i.e. the upper side
    of the cut. Computing f on the upper half plane and conjugating for a negative imaginary
    part (-0.0 included) puts z = x - 0j on the lower side, as numpy (C99 Annex G) does."""
    def rule(ctx, eqn, x):
        dt = _in(eqn).dtype
        if not is_complex_dtype(dt):
            return op(ctx, eqn, x)
        part = real_dtype(dt)
        re, im = hlo.RealOp(x).result, hlo.ImagOp(x).result
        upper = op(ctx, eqn, hlo.ComplexOp(re, hlo.AbsOp(im).result).result)
        conj = hlo.ComplexOp(hlo.RealOp(upper).result, hlo.NegOp(hlo.ImagOp(upper).result).result).result
        return hlo.SelectOp(_signbit(ctx, im, part), conj, upper).result
    register_lowering(prim, rule)


def _signbit(ctx, x, dt):
    """The sign bit of a float (set for -0.0 and negative NaNs)."""
    bits = np.dtype(f"int{8 * np.dtype(dt).itemsize}")
    as_int = hlo.BitcastConvertOp(_tensor_type_like(x, bits), x).result
    zero = ctx.broadcast_scalar_like(ctx.constant(0, bits), as_int)
    return ctx.compare(as_int, zero, "LT", bits)


def _tensor_type_like(x, dtype):
    """The tensor type of ``x`` (same, possibly dynamic, shape) with element type ``dtype``."""
    t = ir.RankedTensorType(x.type)
    dyn = ir.ShapedType.get_dynamic_size()
    return ir.RankedTensorType.get([dyn if t.is_dynamic_dim(i) else t.get_dim_size(i) for i in range(t.rank)],
                                   LoweringContext.elem_type(dtype))


def _log_op(ctx, eqn, x):
    dt = _in(eqn).dtype
    if not is_complex_dtype(dt):
        return hlo.LogOp(x).result
    # log|z| + i arg(z). Near |z| = 1, log|z| is computed as log1p((x - 1)(x + 1) + y^2) / 2
    # (XLA's complex log is up to ~100 ulps off there, normwise)
    part = real_dtype(dt)
    re, im = hlo.RealOp(x).result, hlo.ImagOp(x).result
    mul = lambda a, b: hlo.MulOp(a, b).result
    c = lambda v: ctx.broadcast_scalar_like(ctx.constant(v, part), re)
    t = hlo.AddOp(mul(hlo.SubtractOp(re, c(1)).result, hlo.AddOp(re, c(1)).result), mul(im, im)).result
    near = mul(c(0.5), _real_log1p(ctx, t, part))
    modulus = hlo.AbsOp(x).result
    far = hlo.LogOp(modulus).result
    is_near = hlo.AndOp(ctx.compare(modulus, c(0.5), "GT", part), ctx.compare(modulus, c(2.0), "LT", part)).result
    return hlo.ComplexOp(hlo.SelectOp(is_near, near, far).result, hlo.Atan2Op(im, re).result).result


def _asin_op(ctx, eqn, x):
    out = chlo.AsinOp(x).result
    dt = _in(eqn).dtype
    if not _is_f32_or_f64(dt):
        return out
    # asin(x) rounds to x for |x| < 2**-(p/2 + 1) (p: mantissa bits); chlo.asin goes through
    # x / (1 + sqrt(1 - x^2)), which flush-to-zero turns into 0 for |x| near the smallest
    # normal number
    small = 2.0 ** -(np.finfo(dt).nmant // 2 + 1)
    limit = ctx.broadcast_scalar_like(ctx.constant(small, dt), x)
    return hlo.SelectOp(ctx.compare(hlo.AbsOp(x).result, limit, "LT", dt), x, out).result


_branch_cut_symmetric(P.log_p, _log_op)
_branch_cut_symmetric(P.sqrt_p, lambda ctx, eqn, x: hlo.SqrtOp(x).result)
_branch_cut_symmetric(P.rsqrt_p, lambda ctx, eqn, x: hlo.RsqrtOp(x).result)
_branch_cut_symmetric(P.asin_p, _asin_op)
_branch_cut_symmetric(P.acos_p, lambda ctx, eqn, x: chlo.AcosOp(x).result)
_branch_cut_symmetric(P.atan_p, lambda ctx, eqn, x: chlo.AtanOp(x).result)


def _complex_log1p(ctx, x, dt):
    """log1p(x + iy) = log|1 + z| + i arg(1 + z) with log|1 + z| = log1p(2x + x^2 + y^2) / 2, as
    the impl computes it (numpy's own complex log1p loses every digit for small |z|; XLA's is
    ~100 ulps off, normwise, for |z| around 0.3). Large parts (whose squares would overflow)
    keep XLA's version."""
    part = real_dtype(dt)
    re, im = hlo.RealOp(x).result, hlo.ImagOp(x).result
    mul = lambda a, b: hlo.MulOp(a, b).result
    two = ctx.broadcast_scalar_like(ctx.constant(2, part), re)
    one = ctx.broadcast_scalar_like(ctx.constant(1, part), re)
    half = ctx.broadcast_scalar_like(ctx.constant(0.5, part), re)
    t = hlo.AddOp(mul(two, re), hlo.AddOp(mul(re, re), mul(im, im)).result).result
    small_re = mul(half, _real_log1p(ctx, t, part))
    small = hlo.ComplexOp(small_re, hlo.Atan2Op(im, hlo.AddOp(one, re).result).result).result
    limit = ctx.broadcast_scalar_like(ctx.constant(float(np.sqrt(np.finfo(part).max)) / 4, part), re)
    big = hlo.OrOp(ctx.compare(hlo.AbsOp(re).result, limit, "GT", part),
                   ctx.compare(hlo.AbsOp(im).result, limit, "GT", part)).result
    return hlo.SelectOp(big, hlo.Log1pOp(x).result, small).result


def _log1p_rule(ctx, eqn, x):
    dt = _in(eqn).dtype
    if is_complex_dtype(dt):
        return _complex_log1p(ctx, x, dt)
    return _real_log1p(ctx, x, dt)


def _real_log1p(ctx, x, dt):
    if np.dtype(dt) != np.dtype(np.float64):
        return hlo.Log1pOp(x).result
    # XLA's float64 log1p is up to ~130 ulps off (near x = -0.41). With u = 1 + x rounded,
    # log(u) * (x / (u - 1)) corrects the rounding of 1 + x (Goldberg's method): ~2 ulps.
    one = ctx.broadcast_scalar_like(ctx.constant(1, dt), x)
    inf = ctx.broadcast_scalar_like(ctx.constant(np.inf, dt), x)
    # the barrier keeps XLA from simplifying (1 + x) - 1 to x, which would undo the method
    u = hlo.OptimizationBarrierOp([hlo.AddOp(one, x).result]).results[0]
    r = hlo.MulOp(hlo.LogOp(u).result, hlo.DivOp(x, hlo.SubtractOp(u, one).result).result).result
    # u == 1: |x| is below half an ulp of 1 and log1p(x) rounds to x (-0.0 included);
    # u == inf: x is +inf (1 + max rounds to max)
    exact = hlo.OrOp(ctx.compare(u, one, "EQ", dt), ctx.compare(u, inf, "EQ", dt)).result
    return hlo.SelectOp(exact, x, r).result


_branch_cut_symmetric(P.log1p_p, _log1p_rule)


def _exp_halves(ctx, a, dt):
    """(0.5 * exp(a), 0.5 * exp(-a)) for a >= 0, and exp(a) / 2 computed as (0.5 * h) * h with
    h = exp(a / 2), which stays finite up to log(2 * max) where exp(a) overflows."""
    half = ctx.broadcast_scalar_like(ctx.constant(0.5, dt), a)
    e = hlo.ExpOp(a).result
    up = hlo.MulOp(half, e).result
    down = hlo.DivOp(half, e).result
    h = hlo.ExpOp(hlo.MulOp(half, a).result).result
    inf = ctx.broadcast_scalar_like(ctx.constant(np.inf, dt), a)
    overflow = ctx.compare(e, inf, "EQ", dt)
    up = hlo.SelectOp(overflow, hlo.MulOp(hlo.MulOp(half, h).result, h).result, up).result
    return up, down


def _real_sinh(ctx, x, dt):
    small = chlo.SinhOp(x).result
    if not _is_f32_or_f64(dt):
        return small
    # chlo.sinh computes exp(|x| + log(1/2)) for |x| >= 1: the rounded argument costs up to
    # ~500 ulps (float64) near |x| = 700. exp(|x|) / 2 - exp(-|x|) / 2 is within ~2 ulps there.
    a = hlo.AbsOp(x).result
    up, down = _exp_halves(ctx, a, dt)
    big = hlo.SubtractOp(up, down).result
    zero = ctx.broadcast_scalar_like(ctx.constant(0, dt), x)
    big = hlo.SelectOp(ctx.compare(x, zero, "LT", dt), hlo.NegOp(big).result, big).result
    one = ctx.broadcast_scalar_like(ctx.constant(1, dt), x)
    return hlo.SelectOp(ctx.compare(a, one, "GE", dt), big, small).result


def _real_cosh(ctx, x, dt):
    if not _is_f32_or_f64(dt):
        return chlo.CoshOp(x).result
    # exp(|x|) / 2 + exp(-|x|) / 2 (see _real_sinh: chlo.cosh loses up to ~500 ulps for large |x|)
    up, down = _exp_halves(ctx, hlo.AbsOp(x).result, dt)
    return hlo.AddOp(up, down).result


def _complex_trig(ctx, eqn, z, name):
    """sin, cos, sinh, cosh of x + iy from the real functions of x and y. (XLA's own complex
    versions are off by ~20 ulps for small |y|, ~500 for large, and get the signs of zero
    parts wrong: cos(0j) is 1 - 0j, as numpy computes it.)"""
    part = real_dtype(_in(eqn).dtype)
    x, y = hlo.RealOp(z).result, hlo.ImagOp(z).result
    mul = lambda a, b: hlo.MulOp(a, b).result
    if name == "sin":
        re, im = mul(hlo.SineOp(x).result, _real_cosh(ctx, y, part)), mul(hlo.CosineOp(x).result, _real_sinh(ctx, y, part))
    elif name == "cos":
        re = mul(hlo.CosineOp(x).result, _real_cosh(ctx, y, part))
        im = hlo.NegOp(mul(hlo.SineOp(x).result, _real_sinh(ctx, y, part))).result
    elif name == "sinh":
        re, im = mul(_real_sinh(ctx, x, part), hlo.CosineOp(y).result), mul(_real_cosh(ctx, x, part), hlo.SineOp(y).result)
    else:
        re, im = mul(_real_cosh(ctx, x, part), hlo.CosineOp(y).result), mul(_real_sinh(ctx, x, part), hlo.SineOp(y).result)
    return hlo.ComplexOp(re, im).result


def _trig(prim, name, real_rule):
    def rule(ctx, eqn, x):
        dt = _in(eqn).dtype
        if is_complex_dtype(dt):
            return _complex_trig(ctx, eqn, x, name)
        return real_rule(ctx, x, dt)
    register_lowering(prim, rule)


_trig(P.sin_p, "sin", lambda ctx, x, dt: hlo.SineOp(x).result)
_trig(P.cos_p, "cos", lambda ctx, x, dt: hlo.CosineOp(x).result)
_trig(P.sinh_p, "sinh", _real_sinh)
_trig(P.cosh_p, "cosh", _real_cosh)


@register_lowering(P.abs_p)
def _abs(ctx, eqn, x):
    dt = _in(eqn).dtype
    if is_unsigned_dtype(dt):   # stablehlo.abs takes no unsigned operand
        return x
    out = hlo.AbsOp(x).result
    if is_complex_dtype(dt):
        # |z| is +inf when either part is infinite, even if the other is NaN (hypot, as numpy)
        part = real_dtype(dt)
        inf = ctx.broadcast_scalar_like(ctx.constant(np.inf, part), out)
        re, im = hlo.AbsOp(hlo.RealOp(x).result).result, hlo.AbsOp(hlo.ImagOp(x).result).result
        infinite = hlo.OrOp(ctx.compare(re, inf, "EQ", part), ctx.compare(im, inf, "EQ", part)).result
        out = hlo.SelectOp(infinite, inf, out).result
    return out


@register_lowering(P.sign_p)
def _sign(ctx, eqn, x):
    dt = _in(eqn).dtype
    zero = ctx.broadcast_scalar_like(ctx.constant(0, dt), x)
    if is_unsigned_dtype(dt):   # stablehlo.sign takes no unsigned operand: x != 0 as 0 / 1
        return ctx.convert(ctx.compare(x, zero, "NE", dt), dt)
    out = hlo.SignOp(x).result
    if is_float_dtype(dt) or is_complex_dtype(dt):
        # numpy: the sign of -0.0 is +0.0 (stablehlo.sign keeps -0.0)
        out = hlo.SelectOp(ctx.compare(x, zero, "EQ", dt), zero, out).result
    return out


def _real_part(op):
    def rule(ctx, eqn, x):
        if not is_complex_dtype(_in(eqn).dtype):   # real/imag of a real number: x / zeros
            return x if op is hlo.RealOp else ctx.broadcast_scalar_like(ctx.constant(0, _in(eqn).dtype), x)
        return op(x).result
    return rule


register_lowering(P.real_p, _real_part(hlo.RealOp))
register_lowering(P.imag_p, _real_part(hlo.ImagOp))


@register_lowering(P.conj_p)
def _conj(ctx, eqn, x):
    if not is_complex_dtype(_in(eqn).dtype):
        return x
    return hlo.ComplexOp(hlo.RealOp(x).result, hlo.NegOp(hlo.ImagOp(x).result).result).result


# ----------------------------------------------------------------------------------------------
# Elementwise binary (a rank-0 operand broadcasts against an array)
# ----------------------------------------------------------------------------------------------

def _bcast_args(ctx: LoweringContext, eqn, *args):
    """Broadcast rank-0 operands to the shape of the array operand."""
    ranks = [ir.RankedTensorType(a.type).rank for a in args]
    big = args[ranks.index(max(ranks))]
    return [ctx.broadcast_scalar_like(a, big) for a in args]


def _binary(prim, fn: Callable):
    def rule(ctx, eqn, x, y):
        x, y = _bcast_args(ctx, eqn, x, y)
        return fn(ctx, eqn, x, y)
    register_lowering(prim, rule)


def _simple(op):
    return lambda ctx, eqn, x, y: op(x, y).result


def _by_bool(bool_op, other_op):
    def fn(ctx, eqn, x, y):
        return (bool_op if _in(eqn).dtype == _BOOL else other_op)(x, y).result
    return fn


_binary(P.add_p, _by_bool(hlo.OrOp, hlo.AddOp))
_binary(P.mul_p, _by_bool(hlo.AndOp, hlo.MulOp))
_binary(P.max_p, _by_bool(hlo.OrOp, hlo.MaxOp))
_binary(P.min_p, _by_bool(hlo.AndOp, hlo.MinOp))
_binary(P.sub_p, _simple(hlo.SubtractOp))
_binary(P.atan2_p, _simple(hlo.Atan2Op))
_binary(P.and_p, _simple(hlo.AndOp))
_binary(P.or_p, _simple(hlo.OrOp))
_binary(P.xor_p, _simple(hlo.XorOp))


def _shift(ctx, eqn, x, y):
    """XLA's shifts read the count as unsigned: a count outside [0, bits) gives 0, or the sign
    fill for an arithmetic right shift; the impl computes the same."""
    if eqn.primitive is P.shift_left_p:
        return hlo.ShiftLeftOp(x, y).result
    if is_unsigned_dtype(_in(eqn).dtype):
        return hlo.ShiftRightLogicalOp(x, y).result
    return hlo.ShiftRightArithmeticOp(x, y).result


_binary(P.shift_left_p, _shift)
_binary(P.shift_right_p, _shift)
_binary(P.complex_p, _simple(hlo.ComplexOp))


def _zero_safe(ctx, eqn, x, y, op):
    """``where(y == 0, 0, op(x, where(y == 0, 1, y)))`` for integers (the impl's semantics)."""
    dt = _in(eqn).dtype
    zero = ctx.broadcast_scalar_like(ctx.constant(0, dt), x)
    one = ctx.broadcast_scalar_like(ctx.constant(1, dt), x)
    is_zero = ctx.compare(y, zero, "EQ", dt)
    safe = hlo.SelectOp(is_zero, one, y).result
    return hlo.SelectOp(is_zero, zero, op(x, safe).result).result


def _div(ctx, eqn, x, y):
    if is_integer_dtype(_in(eqn).dtype):
        return _zero_safe(ctx, eqn, x, y, hlo.DivOp)   # stablehlo.divide truncates toward zero
    return hlo.DivOp(x, y).result


@register_lowering(P.div_p)
def _div_rule(ctx, eqn, x, y):
    """``x / y``. A broadcast scalar divisor goes through an optimization barrier: XLA would
    otherwise turn ``x / broadcast(c)`` into ``x * broadcast(1 / c)``, a multiplication by a
    rounded reciprocal, which is not numpy's (nor the eager impl's) correctly rounded
    quotient. The barrier costs one materialized broadcast of the divisor, so it is left out
    where the rewrite is exact: a literal divisor whose reciprocal is exact
    (``_exact_reciprocal``), such as attention's ``/ 8.0``."""
    scalar_divisor = ir.RankedTensorType(y.type).rank == 0
    x, y = _bcast_args(ctx, eqn, x, y)
    if scalar_divisor and not is_integer_dtype(_in(eqn).dtype) and not _exact_reciprocal(eqn):
        y = hlo.OptimizationBarrierOp([y]).results[0]
    return _div(ctx, eqn, x, y)


def _exact_reciprocal(eqn) -> bool:
    """Whether ``eqn``'s divisor is a literal ``±2**k`` of a real float dtype whose reciprocal
    ``±2**-k`` is a normal number of that dtype. Then ``x * (1 / c)`` and ``x / c`` are the
    correctly rounded values of one real number, equal bit for bit for every ``x`` (zeros,
    subnormal results, infinities and NaN included)."""
    divisor = eqn.invars[1]
    dtype = _in(eqn).dtype
    if not isinstance(divisor, Literal) or not is_float_dtype(dtype) or is_complex_dtype(dtype):
        return False
    c = float(np.asarray(divisor.val, np.float64))
    if not np.isfinite(c) or c == 0.0 or np.frexp(c)[0] not in (0.5, -0.5):
        return False
    info = finfo(dtype)
    return float(info.tiny) <= abs(1.0 / c) <= float(info.max) and float(np.asarray(c, dtype)) == c


def _rem(ctx, eqn, x, y):
    if is_integer_dtype(_in(eqn).dtype):
        return _zero_safe(ctx, eqn, x, y, hlo.RemOp)   # C fmod semantics, like np.fmod
    return hlo.RemOp(x, y).result


def _pow(ctx, eqn, x, y):
    dt = _in(eqn).dtype
    if is_integer_dtype(dt):
        return _integer_power(ctx, x, y, dt)
    out = hlo.PowOp(x, y).result
    if is_complex_dtype(dt):
        # XLA computes exp(y * log(x)), NaN for x == 0; numpy: 0 ** 0 is 1, 0 ** y is 0 when
        # Re(y) > 0, NaN otherwise
        part = real_dtype(dt)
        czero = ctx.broadcast_scalar_like(ctx.constant(0, dt), out)
        zero = ctx.broadcast_scalar_like(ctx.constant(0, part), hlo.RealOp(out).result)
        x_zero = ctx.compare(x, czero, "EQ", dt)
        y_zero = ctx.compare(y, czero, "EQ", dt)
        y_pos = ctx.compare(hlo.RealOp(y).result, zero, "GT", part)
        one = ctx.broadcast_scalar_like(ctx.constant(1, dt), out)
        nan = ctx.broadcast_scalar_like(ctx.constant(complex(np.nan, np.nan), dt), out)
        at_zero = hlo.SelectOp(y_zero, one, hlo.SelectOp(y_pos, czero, nan).result).result
        out = hlo.SelectOp(x_zero, at_zero, out).result
    return out


def _integer_power(ctx, x, y, dt):
    """``x ** y`` (wrapping) for integers, 0 for a negative ``y``, as the impl computes it.
    Square-and-multiply over every bit of the exponent: XLA's own integer power only looks at
    the low 6 bits of the exponent (0 ** 64 gives 1 there)."""
    zero = ctx.broadcast_scalar_like(ctx.constant(0, dt), x)
    acc = ctx.broadcast_scalar_like(ctx.constant(1, dt), x)
    base = x
    bits = 8 * dt.itemsize - (0 if is_unsigned_dtype(dt) else 1)   # y >= 0 where it matters
    for i in range(bits):
        mask = ctx.broadcast_scalar_like(ctx.constant(1 << i, dt), y)
        has_bit = ctx.compare(hlo.AndOp(y, mask).result, zero, "NE", dt)
        acc = hlo.SelectOp(has_bit, hlo.MulOp(acc, base).result, acc).result
        if i + 1 < bits:
            base = hlo.MulOp(base, base).result
    if is_unsigned_dtype(dt):
        return acc
    return hlo.SelectOp(ctx.compare(y, zero, "LT", dt), zero, acc).result


_binary(P.rem_p, _rem)
_binary(P.pow_p, _pow)


def _cmp(direction):
    def fn(ctx, eqn, x, y):
        return ctx.compare(x, y, direction, _in(eqn).dtype)
    return fn


for _p, _d in [(P.eq_p, "EQ"), (P.ne_p, "NE"), (P.lt_p, "LT"), (P.le_p, "LE"), (P.gt_p, "GT"), (P.ge_p, "GE")]:
    _binary(_p, _cmp(_d))


@register_lowering(P.integer_pow_p)
def _integer_pow(ctx, eqn, x, *, y):
    a = _in(eqn)
    one = ctx.broadcast_scalar_like(ctx.constant(1, a.dtype), x)
    if y == 0:
        return one
    n = abs(y)
    acc = None
    base = x
    while n:          # square-and-multiply
        if n & 1:
            acc = base if acc is None else hlo.MulOp(acc, base).result
        n >>= 1
        if n:
            base = hlo.MulOp(base, base).result
    if y < 0:
        acc = hlo.DivOp(one, acc).result
    return acc


@register_lowering(P.select_n_p)
def _select_n(ctx, eqn, which, *cases):
    w = _in(eqn)
    if len(cases) == 1:
        return cases[0]
    if w.dtype == _BOOL:
        if len(cases) != 2:
            raise ValueError("select_n with a bool predicate needs exactly two cases")
        return hlo.SelectOp(which, cases[1], cases[0]).result
    # integer predicate: chain of selects, out-of-range indices take the last case
    out = cases[-1]
    for i in range(len(cases) - 2, -1, -1):
        k = ctx.broadcast_scalar_like(ctx.constant(i, w.dtype), which)
        out = hlo.SelectOp(ctx.compare(which, k, "EQ", w.dtype), cases[i], out).result
    return out


@register_lowering(P.convert_element_type_p)
def _convert(ctx, eqn, x, *, new_dtype, weak_type=False):
    src, dst = _in(eqn), _out(eqn)
    if src.dtype == dst.dtype:
        return x
    if is_complex_dtype(src.dtype) and not is_complex_dtype(dst.dtype) and dst.dtype != _BOOL:
        x = hlo.RealOp(x).result   # the real part, as numpy's astype (and the impl) keep
        src = src.update(dtype=real_dtype(src.dtype))
        if src.dtype == dst.dtype:
            return x
    if dst.dtype == _BOOL:        # astype(bool) is x != 0 (NaN -> True)
        zero = ctx.broadcast_scalar_like(ctx.constant(0, src.dtype), x)
        return ctx.compare(x, zero, "NE", src.dtype)
    if is_float_dtype(src.dtype) and is_integer_dtype(dst.dtype):
        # truncate toward zero, NaN -> 0, saturate at the integer range (as the impl does)
        info = np.iinfo(dst.dtype)
        zero = ctx.broadcast_scalar_like(ctx.constant(0, src.dtype), x)
        nan = ctx.compare(x, x, "NE", src.dtype)
        x = hlo.SelectOp(nan, zero, x).result
        lo = ctx.convert(ctx.constant(info.min, dst.dtype), src.dtype)
        hi_exact = float(info.max)
        with np.errstate(over="ignore"):   # float16: 2**31 rounds to inf, which is fine here
            hi = ctx.constant(hi_exact, src.dtype)
            hi_src = float(np.asarray(hi_exact, src.dtype))
        out = ctx.convert(hlo.ClampOp(lo, x, hi).result, dst.dtype)
        if hi_src >= 2.0 ** (8 * dst.dtype.itemsize - 1):
            # float(max) rounds up past the range: map x >= 2**(bits-1) to max explicitly
            big = ctx.broadcast_scalar_like(hi, x)
            too_big = ctx.compare(x, big, "GE", src.dtype)
            out = hlo.SelectOp(too_big, ctx.broadcast_scalar_like(ctx.constant(info.max, dst.dtype), x),
                               out).result
        return out
    return ctx.convert(x, dst.dtype)


# ----------------------------------------------------------------------------------------------
# Shapes
# ----------------------------------------------------------------------------------------------

@register_lowering(P.broadcast_in_dim_p)
def _broadcast_in_dim(ctx, eqn, x, *dyn, shape, broadcast_dimensions):
    return ctx.broadcast(x, _out(eqn).shape, broadcast_dimensions)


@register_lowering(P.iota_p)
def _iota(ctx, eqn, *dyn, dtype, shape, dimension):
    out = _out(eqn)
    return ctx.iota(out.dtype, out.shape, dimension)


@register_lowering(P.reshape_p)
def _reshape(ctx, eqn, x, *dyn, new_sizes, dimensions=None):
    if dimensions is not None and tuple(dimensions) != tuple(range(len(dimensions))):
        x = hlo.TransposeOp(x, list(dimensions)).result
    return ctx.reshape(x, _out(eqn).shape)


@register_lowering(P.transpose_p)
def _transpose(ctx, eqn, x, *, permutation):
    return hlo.TransposeOp(x, list(permutation)).result


@register_lowering(P.squeeze_p)
def _squeeze(ctx, eqn, x, *, dimensions):
    dims = ctx.dim_values(x)     # from the value, so this refines wherever x does
    return ctx.reshape(x, [d for i, d in enumerate(dims) if i not in dimensions])


@register_lowering(P.rev_p)
def _rev(ctx, eqn, x, *, dimensions):
    if not dimensions:
        return x
    return hlo.ReverseOp(x, list(dimensions)).result


# ----------------------------------------------------------------------------------------------
# Linear algebra
# ----------------------------------------------------------------------------------------------

@register_lowering(P.dot_general_p)
def _dot_general(ctx, eqn, x, y, *, dimension_numbers, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    out = _out(eqn)
    in_dt = _in(eqn).dtype
    compute_dt = out.dtype
    if compute_dt == _BOOL:
        compute_dt = np.dtype(np.int32)
    x = ctx.convert(x, compute_dt)
    y = ctx.convert(y, compute_dt)
    dn = hlo.DotDimensionNumbers.get(lhs_batching_dimensions=list(lb), rhs_batching_dimensions=list(rb),
                                     lhs_contracting_dimensions=list(lc), rhs_contracting_dimensions=list(rc))
    res = hlo.DotGeneralOp(tensor_type(out.shape, compute_dt), x, y, dn).result
    if out.dtype == _BOOL:
        zero = ctx.broadcast_scalar_like(ctx.constant(0, compute_dt), res)
        res = ctx.compare(res, zero, "NE", compute_dt)
    del in_dt
    return res


# ----------------------------------------------------------------------------------------------
# Slicing, concatenation, padding
# ----------------------------------------------------------------------------------------------

@register_lowering(P.slice_p)
def _slice(ctx, eqn, x, *, start_indices, limit_indices, strides=None):
    a = _in(eqn)
    strides = tuple(strides or (1,) * a.ndim)
    dims = ctx.dim_values(x)
    limits = [dims[i] if l is None else l for i, l in enumerate(limit_indices)]
    if is_static(a.shape):
        return hlo.SliceOp(x, list(start_indices), [int(l) for l in limits], list(strides)).result
    return hlo.RealDynamicSliceOp(ctx.ir_type(_out(eqn)), x, ctx.shape_tensor(start_indices),
                                  ctx.shape_tensor(limits), ctx.shape_tensor(strides)).result


def _index_values(ctx, values):
    return [ctx.convert(v, _I64) for v in values]


def _pad_to_at_least(ctx, x, dims, sizes, dtype):
    """``x`` padded with zeros at the end of each dynamic axis up to ``max(dim, size)``.

    A static-size slice of a dynamic axis must still be a valid program when the axis is
    shorter at run time, e.g. ``x[i]`` in the body of a loop that never runs because ``x``
    is empty. The padding amount is ``max(size - dim, 0)``: 0 whenever the slice fits, and
    then the pad is folded away at specialization (no copy, same clamping as before)."""
    zero = ctx.constant(0, _I64)
    highs = []
    for d, s in zip(dims, sizes):
        if isinstance(d, int):
            highs.append(max(int(s) - d, 0))
        else:
            gap = hlo.SubtractOp(ctx.constant(int(s), _I64), ctx.dim_value(d)).result
            highs.append(hlo.MaxOp(gap, zero).result)
    et = ir.RankedTensorType(x.type).element_type
    pad_value = ctx.constant(0, dtype)
    lows = ctx.shape_tensor([0] * len(dims))
    t = ir.RankedTensorType.get([ir.ShapedType.get_dynamic_size() if not isinstance(d, int) else max(d, int(s))
                                 for d, s in zip(dims, sizes)], et)
    return hlo.DynamicPadOp(t, x, pad_value, lows, ctx.shape_tensor(highs), lows).result


@register_lowering(P.dynamic_slice_p)
def _dynamic_slice(ctx, eqn, x, *operands, slice_sizes):
    a, out = _in(eqn), _out(eqn)
    n = a.ndim
    starts = _index_values(ctx, operands[:n])
    if is_static(out.shape):
        # stablehlo.dynamic_slice clamps the starts so that the slice fits, like the impl
        if not is_static(a.shape):
            x = _pad_to_at_least(ctx, x, a.shape, out.shape, a.dtype)
        return hlo.DynamicSliceOp(x, starts, [int(s) for s in out.shape]).result
    # Dynamic sizes. real_dynamic_slice only refines when its starts are constants too, and
    # starts are usually run-time values; dynamic_gather takes the sizes as an operand (it
    # becomes a static gather once they are constants), and gather clamps the start so the
    # slice fits, exactly like dynamic_slice and the impl. A static size on a dynamic axis
    # (``A[:, j]``: size 1 of ``?``) may exceed the axis at run time (``A`` of shape (n, 0)
    # in a loop that never runs): that axis is padded as in the static case.
    fits = [int(s) if isinstance(s, int) and not isinstance(d, int) else 0
            for s, d in zip(out.shape, a.shape)]
    if any(fits):
        x = _pad_to_at_least(ctx, x, a.shape, fits, a.dtype)
    start_vec = ctx.shape_tensor(starts)
    dn = hlo.GatherDimensionNumbers.get(offset_dims=list(range(n)), collapsed_slice_dims=[],
                                        operand_batching_dims=[], start_indices_batching_dims=[],
                                        start_index_map=list(range(n)), index_vector_dim=0)
    return hlo.DynamicGatherOp(x, start_vec, ctx.shape_tensor(out.shape), dn,
                               results=[ctx.ir_type(out)]).result


@register_lowering(P.dynamic_update_slice_p)
def _dynamic_update_slice(ctx, eqn, x, update, *starts):
    # stablehlo.dynamic_update_slice clamps the starts, like the impl
    return hlo.DynamicUpdateSliceOp(x, update, _index_values(ctx, starts)).result


@register_lowering(P.concatenate_p)
def _concatenate(ctx, eqn, *operands, dimension, num_operands):
    xs = list(operands[:num_operands])
    if len(xs) == 1:
        return xs[0]
    return hlo.ConcatenateOp(xs, dimension, results=[ctx.ir_type(_out(eqn))]).result


@register_lowering(P.pad_p)
def _pad(ctx, eqn, x, padding_value, *, padding_config):
    lo = [int(c[0]) for c in padding_config]
    hi = [int(c[1]) for c in padding_config]
    interior = [int(c[2]) for c in padding_config]
    return hlo.PadOp(x, padding_value, lo, hi, interior, results=[ctx.ir_type(_out(eqn))]).result


# ----------------------------------------------------------------------------------------------
# Gather and scatter
# ----------------------------------------------------------------------------------------------

@register_lowering(P.gather_p)
def _gather(ctx, eqn, x, idx, *, axes):
    a, out = _in(eqn), _out(eqn)
    nb = _in(eqn, 1).ndim - 1
    # stablehlo.gather clamps each start so the size-1 slice fits, like the impl; an indexed
    # axis that may be empty is padded to one zero so that the clamped read is defined
    if any(not (isinstance(a.shape[d], int) and a.shape[d] >= 1) for d in axes):
        x = _pad_to_at_least(ctx, x, a.shape, [1 if d in axes else 0 for d in range(a.ndim)], a.dtype)
    dn = hlo.GatherDimensionNumbers.get(
        offset_dims=[nb + i for i in range(a.ndim - len(axes))], collapsed_slice_dims=sorted(axes),
        operand_batching_dims=[], start_indices_batching_dims=[], start_index_map=list(axes),
        index_vector_dim=nb)
    sizes = [1 if d in axes else a.shape[d] for d in range(a.ndim)]
    if is_static(sizes):
        return hlo.GatherOp(x, idx, dn, [int(s) for s in sizes], indices_are_sorted=False).result
    return hlo.DynamicGatherOp(x, idx, ctx.shape_tensor(sizes), dn, results=[ctx.ir_type(out)]).result


_SCATTER_COMBINE = {"add": (hlo.OrOp, hlo.AddOp), "mul": (hlo.AndOp, hlo.MulOp),
                    "min": (hlo.AndOp, hlo.MinOp), "max": (hlo.OrOp, hlo.MaxOp)}


@register_lowering(P.scatter_p)
def _scatter(ctx, eqn, x, idx, updates, *, axes, kind):
    a = _in(eqn)
    nb = _in(eqn, 1).ndim - 1
    dn = hlo.ScatterDimensionNumbers.get(
        update_window_dims=[nb + i for i in range(a.ndim - len(axes))], inserted_window_dims=sorted(axes),
        input_batching_dims=[], scatter_indices_batching_dims=[], scattered_dims_to_operand_dims=list(axes),
        index_vector_dim=nb)
    op = hlo.ScatterOp([ctx.ir_type(_out(eqn))], [x], idx, [updates], dn,
                       indices_are_sorted=False, unique_indices=False)
    st = _scalar_type(x)
    block = op.update_computation.blocks.append(st, st)
    old, new = block.arguments
    with ir.InsertionPoint(block):
        if kind == "set":
            hlo.ReturnOp([new])
        else:
            bool_op, num_op = _SCATTER_COMBINE[kind]
            hlo.ReturnOp([(bool_op if a.dtype == _BOOL else num_op)(old, new).result])
    return op.results[0]


# ----------------------------------------------------------------------------------------------
# Effects
# ----------------------------------------------------------------------------------------------

@register_lowering(debug_callback_p)
def _debug_callback(ctx, eqn, *args, callback, name):
    # The planner never compiles an effectful equation (it runs on the host, in program
    # order); this rule only lets ``.mlir`` show the rest of a program that prints.
    return []
