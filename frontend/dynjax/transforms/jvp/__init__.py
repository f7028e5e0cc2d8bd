"""Forward-mode automatic differentiation: the JVP interpreter and one rule per primitive.

``jvp(f, primals, tangents)`` pushes a ``JVPTrace`` on the interpreter stack (at the next
level, *not* as the dynamic trace) and calls ``f`` on ``JVPTracer``\\ s, each a pair
``(primal, tangent)``. ``bind`` routes every primitive applied to a ``JVPTracer`` to the
``JVPTrace``, which looks up ``jvp_rules[prim]``:

    rule(primals, tangents, **params) -> (primal_out, tangent_out)

(lists for ``multiple_results`` primitives). A rule computes with ``dynjax.lax`` /
``Primitive.bind`` on the primals and tangents, which are values of the enclosing
interpreter: numpy arrays when ``jvp`` runs eagerly, staging tracers under ``make_jaxpr`` /
``qjit``. The same rule therefore works eagerly and while tracing, and a tangent of
``f64[n]`` is built from the primal's own dim ``n``.

**Symbolic zeros.** A value that does not depend on the differentiated inputs has the tangent
``Zero(aval)``: a marker, never an array. Rules skip the terms it contributes, and
``instantiate`` materializes it (with the primal's possibly dynamic dims) only where an
operation needs an array (``select_n`` of one zero and one non-zero branch, for instance).
When every tangent of an application is zero, the primitive is applied to the primals
alone and no rule runs. Results whose tangent is zero, and integer or bool results, leave the
trace as plain primals (a value with a zero tangent needs no tracer), so dimension
arithmetic stays in the staging trace where sizes are recognized symbolically.

Integer and bool values never carry a non-zero tangent: an integer input of ``jvp`` is passed
as is, and every integer or bool result gets a zero tangent.
"""
from __future__ import annotations

from typing import Any, List

import numpy as np

from ...core.avals import (ShapedArray, float0, is_complex_dtype, is_inexact_dtype, same_dim)
from ...core.errors import api_boundary
from ...core.primitive import Primitive, jvp_rules
from ...core.pytree import TreeDef, tree_flatten, tree_unflatten
from ...core.trace import EscapedTracerError, Trace, Tracer, bind, new_trace, next_level, typeof
from ...lax import api as lax
from ...lax import primitives as P
from ...lax.effects import debug_callback_p

__all__ = ["jvp", "JVPTrace", "JVPTracer", "Zero", "instantiate", "zeros_from_aval", "jvp_rules"]


# ----------------------------------------------------------------------------------------------
# Symbolic zeros
# ----------------------------------------------------------------------------------------------
class Zero:
    """The tangent of a value that does not depend on the differentiated inputs. Only its
    type is known: ``aval`` is the primal's aval (same dtype, same dims)."""
    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"Zero({self.aval.str_short()})"


def zeros_from_aval(aval: ShapedArray):
    """An array of zeros of type ``aval``, in the current (enclosing) interpreter: a numpy
    array eagerly, a ``broadcast_in_dim`` over the same dim tracers when tracing."""
    zero = np.zeros((), aval.dtype)
    if not aval.shape:
        return zero
    return lax.broadcast_in_dim(zero, aval.shape, ())


def instantiate(t):
    """``t`` as an array: a symbolic ``Zero`` becomes an array of zeros of its type."""
    return zeros_from_aval(t.aval) if isinstance(t, Zero) else t


def _zero_like(x) -> Zero:
    return Zero(typeof(x))


# ----------------------------------------------------------------------------------------------
# The interpreter
# ----------------------------------------------------------------------------------------------
class JVPTracer(Tracer):
    """A value under ``jvp``: its ``primal`` and its ``tangent`` (an array or a ``Zero``), both
    values of the enclosing interpreter. Its aval is the primal's."""
    __slots__ = ("primal", "tangent")

    def __init__(self, trace: "JVPTrace", primal, tangent):
        super().__init__(trace, typeof(primal))
        self.primal = primal
        self.tangent = tangent

    def __repr__(self):
        return f"JVPTracer<{self.aval.str_short()}>"


class JVPTrace(Trace):
    """Forward-mode differentiation: applies ``jvp_rules`` to (primal, tangent) pairs."""

    def pure(self, val):
        return JVPTracer(self, val, _zero_like(val))

    def lift(self, tracer):
        return JVPTracer(self, tracer, _zero_like(tracer))

    def process_primitive(self, primitive: Primitive, tracers, params):
        if not self.active:
            mine = next(t for t in tracers if t._trace is self)
            raise EscapedTracerError(mine)
        primals = [t.primal for t in tracers]
        tangents = [t.tangent for t in tracers]
        if all(isinstance(t, Zero) for t in tangents):
            # nothing to differentiate: the application belongs to the enclosing interpreter
            return bind(primitive, *primals, **params)
        rule = jvp_rules.get(primitive)
        if rule is None:
            raise NotImplementedError(
                f"dynjax.jvp: primitive '{primitive.name}' has no differentiation (jvp) rule; "
                "register one with dynjax.extend.def_jvp")
        primal_out, tangent_out = rule(primals, tangents, **params)
        if primitive.multiple_results:
            return [self._box(primitive, p, t) for p, t in zip(primal_out, tangent_out)]
        return self._box(primitive, primal_out, tangent_out)

    def _box(self, primitive, primal, tangent):
        pa = typeof(primal)
        if isinstance(tangent, Zero) or not is_inexact_dtype(pa.dtype):
            return primal
        ta = typeof(tangent)
        if ta.dtype != pa.dtype or len(ta.shape) != len(pa.shape) or not all(
                same_dim(a, b) for a, b in zip(ta.shape, pa.shape)):
            raise AssertionError(f"the jvp rule of {primitive.name} returned a tangent of type "
                                 f"{ta.str_short()} for a primal of type {pa.str_short()}")
        return JVPTracer(self, primal, tangent)


# ----------------------------------------------------------------------------------------------
# Helpers for writing rules (on values of the enclosing interpreter)
# ----------------------------------------------------------------------------------------------
def _const(x, value):
    """``value`` as a 0-d array of ``x``'s dtype (rank-0 operands broadcast in elementwise ops)."""
    return np.array(value, dtype=typeof(x).dtype)


def _to_shape(x, like):
    """``x`` broadcast to the shape of ``like`` when ``x`` is rank 0 and ``like`` is not (the
    one implicit broadcast elementwise primitives allow)."""
    shape = typeof(like).shape
    if typeof(x).ndim == 0 and shape:
        return lax.broadcast_in_dim(x, shape, ())
    return x


def _accumulate(terms, out):
    """The sum of the tangent ``terms`` (``None`` entries are zero) in the shape of ``out``."""
    terms = [t for t in terms if t is not None]
    if not terms:
        return _zero_like(out)
    acc = terms[0]
    for t in terms[1:]:
        acc = P.add_p.bind(acc, t)
    return _to_shape(acc, out)


def _mask(pred, like):
    """``pred`` (bool) as 0/1 in ``like``'s dtype."""
    return lax.convert_element_type(pred, typeof(like).dtype)


def _safe(x, bad):
    """``x`` with the elements where ``bad`` holds replaced by one (to guard a division or a log)."""
    return P.select_n_p.bind(bad, x, _to_shape(_const(x, 1), x))


def _zero_tangents(primitive):
    """The rule of a primitive whose results are not differentiable (piecewise constant, or
    integer / bool valued): the primal result, zero tangents."""
    def rule(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        if primitive.multiple_results:
            return out, [_zero_like(o) for o in out]
        return out, _zero_like(out)
    return rule


def _linear(primitive):
    """The rule of a primitive linear in its first operand (later operands are sizes, indices or
    static data): the tangent goes through the same primitive."""
    def rule(primals, tangents, **params):
        x, *rest = primals
        out = primitive.bind(x, *rest, **params)
        t = tangents[0]
        if isinstance(t, Zero):
            return out, _zero_like(out)
        return out, primitive.bind(t, *rest, **params)
    return rule


def _unary(primitive, tangent_fn):
    """The rule of an elementwise unary primitive: ``tangent_fn(t, x, y)`` with ``y`` the result."""
    def rule(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        y = primitive.bind(x, **params)
        return y, tangent_fn(t, x, y)
    return rule


# ----------------------------------------------------------------------------------------------
# Rules: elementwise
# ----------------------------------------------------------------------------------------------
mul, add, sub, div, neg = (P.mul_p.bind, P.add_p.bind, P.sub_p.bind, P.div_p.bind, P.neg_p.bind)


def _one_minus_square(x):
    return sub(_const(x, 1), mul(x, x))


def _one_plus_square(x):
    return add(_const(x, 1), mul(x, x))


_UNARY = {
    P.neg_p: lambda t, x, y: neg(t),
    P.exp_p: lambda t, x, y: mul(t, y),
    P.log_p: lambda t, x, y: div(t, x),
    P.log1p_p: lambda t, x, y: div(t, add(x, _const(x, 1))),
    P.expm1_p: lambda t, x, y: mul(t, add(y, _const(y, 1))),
    P.sin_p: lambda t, x, y: mul(t, P.cos_p.bind(x)),
    P.cos_p: lambda t, x, y: neg(mul(t, P.sin_p.bind(x))),
    P.tan_p: lambda t, x, y: mul(t, _one_plus_square(y)),
    P.asin_p: lambda t, x, y: mul(t, P.rsqrt_p.bind(_one_minus_square(x))),
    P.acos_p: lambda t, x, y: neg(mul(t, P.rsqrt_p.bind(_one_minus_square(x)))),
    P.atan_p: lambda t, x, y: div(t, _one_plus_square(x)),
    P.sinh_p: lambda t, x, y: mul(t, P.cosh_p.bind(x)),
    P.cosh_p: lambda t, x, y: mul(t, P.sinh_p.bind(x)),
    P.tanh_p: lambda t, x, y: mul(t, _one_minus_square(y)),
    P.sqrt_p: lambda t, x, y: div(t, mul(_const(y, 2), y)),
    P.rsqrt_p: lambda t, x, y: mul(t, mul(_const(y, -0.5), div(y, x))),
    P.cbrt_p: lambda t, x, y: mul(t, mul(_const(y, 1 / 3), P.integer_pow_p.bind(y, y=-2))),
    P.logistic_p: lambda t, x, y: mul(t, mul(y, sub(_const(y, 1), y))),
    P.real_p: lambda t, x, y: P.real_p.bind(t),
    P.imag_p: lambda t, x, y: P.imag_p.bind(t),
    P.conj_p: lambda t, x, y: P.conj_p.bind(t),
}
for _p, _fn in _UNARY.items():
    jvp_rules[_p] = _unary(_p, _fn)


def _abs_tangent(t, x, y):
    if not is_complex_dtype(typeof(x).dtype):
        # +t where x >= 0 (at 0 and -0 too), -t elsewhere (NaN included): JAX's choice
        up = _mask(P.ge_p.bind(x, _const(x, 0)), x)
        return mul(t, sub(add(up, up), _const(x, 1)))
    # d|z| = Re(conj(z) dz) / |z|, and 0 at z = 0
    num = P.real_p.bind(mul(P.conj_p.bind(x), t))
    return div(num, _safe(y, P.eq_p.bind(y, _const(y, 0))))


jvp_rules[P.abs_p] = _unary(P.abs_p, _abs_tangent)


def _integer_pow_rule(primals, tangents, *, y):
    (x,), (t,) = primals, tangents
    out = P.integer_pow_p.bind(x, y=y)
    if y == 0:
        return out, _zero_like(out)
    slope = _const(x, y) if y == 1 else mul(_const(x, y), P.integer_pow_p.bind(x, y=y - 1))
    return out, mul(t, slope)


jvp_rules[P.integer_pow_p] = _integer_pow_rule

# piecewise constant, or integer / bool valued: zero tangents
for _p in (P.sign_p, P.floor_p, P.ceil_p, P.round_p, P.is_finite_p, P.not_p, P.and_p, P.or_p,
           P.shift_left_p, P.shift_right_p,
           P.xor_p, P.eq_p, P.ne_p, P.lt_p, P.le_p, P.gt_p, P.ge_p, P.iota_p, P.argmax_p,
           P.argmin_p):
    jvp_rules[_p] = _zero_tangents(_p)


def _binary(primitive, tangent_fn):
    """The rule of an elementwise binary primitive: ``tangent_fn(tx, ty, x, y, out)`` returns the
    list of terms whose sum is the tangent (``tx`` / ``ty`` are ``None`` when zero)."""
    def rule(primals, tangents, **params):
        (x, y), (tx, ty) = primals, tangents
        out = primitive.bind(x, y, **params)
        if not is_inexact_dtype(typeof(out).dtype):
            return out, _zero_like(out)
        tx = None if isinstance(tx, Zero) else tx
        ty = None if isinstance(ty, Zero) else ty
        return out, _accumulate(tangent_fn(tx, ty, x, y, out), out)
    return rule


def _times(t, factor):
    return None if t is None else mul(t, factor)


def _div_terms(tx, ty, x, y, out):
    return [None if tx is None else div(tx, y),
            None if ty is None else neg(mul(ty, div(out, y)))]


def _pow_terms(tx, ty, x, y, out):
    terms = []
    if tx is not None:
        # y * x ** (y - 1), and 0 where y == 0 (not 0 * inf at x == 0)
        slope = mul(y, P.pow_p.bind(x, sub(y, _const(y, 1))))
        slope = P.select_n_p.bind(P.eq_p.bind(y, _const(y, 0)), slope, _to_shape(_const(out, 0), out))
        terms.append(mul(tx, slope))
    if ty is not None:
        # log(x) * x ** y, and 0 where x == 0
        log_x = P.log_p.bind(_safe(x, P.eq_p.bind(x, _const(x, 0))))
        terms.append(mul(ty, mul(log_x, out)))
    return terms


def _rem_terms(tx, ty, x, y, out):
    # fmod(x, y) = x - trunc(x / y) * y
    terms = [tx]
    if ty is not None:
        q = div(x, y)
        trunc = mul(P.sign_p.bind(q), P.floor_p.bind(P.abs_p.bind(q)))
        terms.append(neg(mul(ty, trunc)))
    return terms


def _extremum_terms(tx, ty, x, y, out):
    # the tangent of the operand equal to the result; half of each where both are (as JAX)
    x_wins, y_wins = _mask(P.eq_p.bind(x, out), out), _mask(P.eq_p.bind(y, out), out)
    half = _const(out, 0.5)
    one = _const(out, 1)
    return [_times(tx, mul(x_wins, sub(one, mul(half, y_wins)))),
            _times(ty, mul(y_wins, sub(one, mul(half, x_wins))))]


def _atan2_terms(tx, ty, x, y, out):
    # atan2(x, y) = atan(x / y): d = (y dx - x dy) / (x^2 + y^2)
    denom = add(mul(x, x), mul(y, y))
    return [_times(tx, div(y, denom)), _times(ty, neg(div(x, denom)))]


_BINARY = {
    P.add_p: lambda tx, ty, x, y, out: [tx, ty],
    P.sub_p: lambda tx, ty, x, y, out: [tx, None if ty is None else neg(ty)],
    P.mul_p: lambda tx, ty, x, y, out: [_times(tx, y), _times(ty, x)],
    P.div_p: _div_terms,
    P.pow_p: _pow_terms,
    P.rem_p: _rem_terms,
    P.max_p: _extremum_terms,
    P.min_p: _extremum_terms,
    P.atan2_p: _atan2_terms,
}
for _p, _fn in _BINARY.items():
    jvp_rules[_p] = _binary(_p, _fn)


def _complex_rule(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    out = P.complex_p.bind(x, y)
    return out, _to_shape(P.complex_p.bind(instantiate(tx), instantiate(ty)), out)


jvp_rules[P.complex_p] = _complex_rule


def _select_n_rule(primals, tangents):
    which, *cases = primals
    out = P.select_n_p.bind(which, *cases)
    if not is_inexact_dtype(typeof(out).dtype):
        return out, _zero_like(out)
    return out, P.select_n_p.bind(which, *[instantiate(t) for t in tangents[1:]])


jvp_rules[P.select_n_p] = _select_n_rule


def _convert_element_type_rule(primals, tangents, *, new_dtype, weak_type=False):
    (x,), (t,) = primals, tangents
    out = P.convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if isinstance(t, Zero) or not is_inexact_dtype(typeof(out).dtype):
        return out, _zero_like(out)
    # complex -> real keeps the real part, as the primal conversion does
    return out, P.convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


jvp_rules[P.convert_element_type_p] = _convert_element_type_rule

# ----------------------------------------------------------------------------------------------
# Rules: shapes, reductions, linear algebra, slicing
# ----------------------------------------------------------------------------------------------
for _p in (P.broadcast_in_dim_p, P.reshape_p, P.transpose_p, P.squeeze_p, P.rev_p,
           P.reduce_sum_p, P.cumsum_p, P.slice_p, P.dynamic_slice_p):
    jvp_rules[_p] = _linear(_p)


def _kept_dims(ndim, axes):
    return tuple(i for i in range(ndim) if i not in axes)


def _reduce_prod_rule(primals, tangents, *, axes):
    (x,), (t,) = primals, tangents
    out = P.reduce_prod_p.bind(x, axes=axes)
    # d prod = sum_i t_i * prod_{j != i} x_j. With p the product of the non-zero elements and
    # z the number of zeros in the reduced group, prod_{j != i} x_j is p / x_i when z == 0,
    # p at the one zero when z == 1 (0 elsewhere), and 0 when z >= 2.
    xa = typeof(x)
    is_zero = P.eq_p.bind(x, _const(x, 0))
    nonzero_prod = P.reduce_prod_p.bind(_safe(x, is_zero), axes=axes)
    zeros = P.reduce_sum_p.bind(_mask(is_zero, x), axes=axes)
    kept = _kept_dims(xa.ndim, axes)
    p = lax.broadcast_in_dim(nonzero_prod, xa.shape, kept)
    z = lax.broadcast_in_dim(zeros, xa.shape, kept)
    no_zero = _mask(P.eq_p.bind(z, _const(z, 0)), x)
    one_zero = _mask(P.eq_p.bind(z, _const(z, 1)), x)
    others = add(mul(no_zero, div(p, _safe(x, is_zero))), mul(one_zero, mul(_mask(is_zero, x), p)))
    return out, P.reduce_sum_p.bind(mul(t, others), axes=axes)


jvp_rules[P.reduce_prod_p] = _reduce_prod_rule


def _cumprod_rule(primals, tangents, *, axis, reverse=False):
    (x,), (t,) = primals, tangents
    out = P.cumprod_p.bind(x, axis=axis, reverse=reverse)
    if not is_inexact_dtype(typeof(out).dtype):
        return out, _zero_like(out)
    # d out_i = sum_{j <= i} t_j prod_{k <= i, k != j} x_k. With p_i the running product of the
    # non-zero elements and z_i the running count of zeros: p_i * sum_{j <= i} t_j / x_j when
    # z_i == 0, p_i * t at the one zero when z_i == 1, and 0 when z_i >= 2 (linear in t).
    scan = lambda v: P.cumsum_p.bind(v, axis=axis, reverse=reverse)
    is_zero = P.eq_p.bind(x, _const(x, 0))
    safe = _safe(x, is_zero)
    p = P.cumprod_p.bind(safe, axis=axis, reverse=reverse)
    z = scan(_mask(is_zero, x))
    no_zero = _mask(P.eq_p.bind(z, _const(z, 0)), x)
    one_zero = _mask(P.eq_p.bind(z, _const(z, 1)), x)
    t = instantiate(t) if isinstance(t, Zero) else t
    none = mul(no_zero, mul(p, scan(div(mul(t, _mask(P.not_p.bind(is_zero), x)), safe))))
    one = mul(one_zero, mul(p, scan(mul(t, _mask(is_zero, x)))))
    return out, add(none, one)


jvp_rules[P.cumprod_p] = _cumprod_rule


def _reduce_extremum(primitive):
    def rule(primals, tangents, *, axes, **params):
        (x,), (t,) = primals, tangents
        out = primitive.bind(x, axes=axes, **params)
        # the mean of the tangents at the positions holding the extremum (ties split evenly)
        xa = typeof(x)
        at_extremum = _mask(P.eq_p.bind(x, lax.broadcast_in_dim(out, xa.shape, _kept_dims(xa.ndim, axes))), x)
        count = P.reduce_sum_p.bind(at_extremum, axes=axes)
        count = P.max_p.bind(count, _const(count, 1))   # an empty group: 0 / 1
        return out, div(P.reduce_sum_p.bind(mul(t, at_extremum), axes=axes), count)
    return rule


jvp_rules[P.reduce_max_p] = _reduce_extremum(P.reduce_max_p)
jvp_rules[P.reduce_min_p] = _reduce_extremum(P.reduce_min_p)


def _dot_general_rule(primals, tangents, **params):
    (x, y), (tx, ty) = primals, tangents
    out = P.dot_general_p.bind(x, y, **params)
    if not is_inexact_dtype(typeof(out).dtype):
        return out, _zero_like(out)
    terms = [None if isinstance(tx, Zero) else P.dot_general_p.bind(tx, y, **params),
             None if isinstance(ty, Zero) else P.dot_general_p.bind(x, ty, **params)]
    return out, _accumulate(terms, out)


jvp_rules[P.dot_general_p] = _dot_general_rule


def _dynamic_update_slice_rule(primals, tangents):
    x, update, *starts = primals
    out = P.dynamic_update_slice_p.bind(x, update, *starts)
    return out, P.dynamic_update_slice_p.bind(instantiate(tangents[0]), instantiate(tangents[1]), *starts)


jvp_rules[P.dynamic_update_slice_p] = _dynamic_update_slice_rule


# gather reads, so it is linear in the operand; the indices are never differentiated
jvp_rules[P.gather_p] = _linear(P.gather_p)


def _scatter_rule(primals, tangents, *, axes, kind):
    x, idx, u = primals
    tx, tu = tangents[0], tangents[2]
    out = P.scatter_p.bind(x, idx, u, axes=axes, kind=kind)
    if not is_inexact_dtype(typeof(out).dtype):
        return out, _zero_like(out)

    def scatter(into, updates, how):
        return P.scatter_p.bind(into, idx, updates, axes=axes, kind=how)

    def gather(v):
        return P.gather_p.bind(v, idx, axes=axes)
    if kind in ("set", "add"):   # linear in the operand and the updates together
        return out, scatter(instantiate(tx), instantiate(tu), kind)
    xa, ua = typeof(x), typeof(u)
    zeros_x = zeros_from_aval(xa)
    if kind == "mul":
        # out = x * M, M the product of the updates landing at each position; the derivative
        # of M by one update is the product of the others, counted without dividing by zero
        # (as reduce_prod's rule does): p the product of the non-zero updates and z the
        # number of zero ones at the position
        ones_x = _to_shape(_const(x, 1), x)
        m = scatter(ones_x, u, "mul")
        is_zero = P.eq_p.bind(u, _const(u, 0))
        p = gather(scatter(ones_x, _safe(u, is_zero), "mul"))
        z = gather(scatter(zeros_x, _mask(is_zero, u), "add"))
        no_zero = _mask(P.eq_p.bind(z, _const(z, 0)), u)
        lone_zero = mul(_mask(P.eq_p.bind(z, _const(z, 1)), u), _mask(is_zero, u))
        others = add(mul(no_zero, div(p, _safe(u, is_zero))), mul(lone_zero, p))
        terms = [None if isinstance(tx, Zero) else mul(tx, m),
                 None if isinstance(tu, Zero) else mul(x, scatter(zeros_x, mul(tu, others), "add"))]
        return out, _accumulate(terms, out)
    # min / max: the mean of the tangents of every source equal to the result (ties split
    # evenly, as reduce_max's rule does); rows out of range are dropped by the scatters
    from_x = _mask(P.eq_p.bind(x, out), x)
    from_u = _mask(P.eq_p.bind(u, gather(out)), u)
    count = add(from_x, scatter(zeros_x, from_u, "add"))
    count = P.max_p.bind(count, _to_shape(_const(count, 1), count))
    num = add(mul(instantiate(tx), from_x), scatter(zeros_x, mul(instantiate(tu), from_u), "add"))
    return out, div(num, count)


jvp_rules[P.scatter_p] = _scatter_rule


def _concatenate_rule(primals, tangents, *, dimension, num_operands):
    xs, sizes = primals[:num_operands], primals[num_operands:]
    out = P.concatenate_p.bind(*xs, *sizes, dimension=dimension, num_operands=num_operands)
    ts = [instantiate(t) for t in tangents[:num_operands]]
    return out, P.concatenate_p.bind(*ts, *sizes, dimension=dimension, num_operands=num_operands)


jvp_rules[P.concatenate_p] = _concatenate_rule


def _pad_rule(primals, tangents, *, padding_config):
    (x, value), (tx, tv) = primals, tangents
    out = P.pad_p.bind(x, value, padding_config=padding_config)
    return out, P.pad_p.bind(instantiate(tx), instantiate(tv), padding_config=padding_config)


jvp_rules[P.pad_p] = _pad_rule


def _sort_rule(primals, tangents, *, dimension, num_keys):
    # The primals are sorted alone (so the primal results never depend on a tangent, which
    # keeps them known when linearizing); the non-zero tangents are sorted along with the
    # keys in a second sort, so they are permuted exactly as the primals (ties included).
    primal_out = P.sort_p.bind(*primals, dimension=dimension, num_keys=num_keys)
    tangent_out: List[Any] = [_zero_like(o) for o in primal_out]
    moving = [i for i, t in enumerate(tangents) if not isinstance(t, Zero)]
    if moving:
        outs = P.sort_p.bind(*primals[:num_keys], *[tangents[i] for i in moving], dimension=dimension,
                             num_keys=num_keys)
        for i, t in zip(moving, outs[num_keys:]):
            tangent_out[i] = t
    return list(primal_out), tangent_out


jvp_rules[P.sort_p] = _sort_rule


def _debug_callback_rule(primals, tangents, **params):
    # the callback sees the primal values; it has no results, so no tangents
    return debug_callback_p.bind(*primals, **params), []


jvp_rules[debug_callback_p] = _debug_callback_rule


# ----------------------------------------------------------------------------------------------
# The user-level function
# ----------------------------------------------------------------------------------------------
def _leaf_names(tree: TreeDef, prefix: str) -> List[str]:
    """A readable path per leaf of ``tree``: ``primals[0]['w'][1]``."""
    names: List[str] = []

    def rec(t: TreeDef, path: str):
        if t.kind == "leaf":
            names.append(path)
        elif t.kind == "dict":
            for k, c in zip(t.aux, t.children):
                rec(c, f"{path}[{k!r}]")
        elif t.kind == "namedtuple":
            for f, c in zip(t.aux._fields, t.children):
                rec(c, f"{path}.{f}")
        else:
            for i, c in enumerate(t.children):
                rec(c, f"{path}[{i}]")
    rec(tree, prefix)
    return names


def _aval_of(x, where: str) -> ShapedArray:
    try:
        return typeof(x)
    except TypeError:
        raise TypeError(f"jvp: {where} is a {type(x).__name__}, not an array or a Python "
                        "scalar") from None


def _same_shape(a: ShapedArray, b: ShapedArray) -> bool:
    return len(a.shape) == len(b.shape) and all(same_dim(p, q) for p, q in zip(a.shape, b.shape))


def _dtype_error(pa, expected, got):
    return TypeError(
        "jvp: primal and tangent arguments to jvp do not match; dtypes must be equal, or in case "
        f"of int/bool primal dtype the tangent dtype must be float0. Got primal dtype {pa} and so "
        f"expected tangent dtype {expected}, but got tangent dtype {got} instead.")


def _check_tangent(primal, tangent, where: str):
    """The tangent to start from for one input leaf, or None for an integer / bool primal (which
    has a zero tangent). JAX's errors name the argument when the pair does not match: a
    ValueError for another shape, a TypeError for another dtype. An integer or bool primal
    takes a float0 tangent (or, as dynjax also accepts, a concrete zero)."""
    pa = _aval_of(primal, f"primals{where}")
    if isinstance(tangent, (np.ndarray, np.generic)) and tangent.dtype == float0:
        if is_inexact_dtype(pa.dtype):
            raise _dtype_error(pa.dtype.name, pa.dtype.name, "float0")
        if len(tangent.shape) != pa.ndim or not all(same_dim(a, b) for a, b in zip(tangent.shape, pa.shape)):
            raise ValueError(f"jvp called with different primal and tangent shapes; got primal shape "
                             f"{pa.str_short()} and tangent shape {tuple(tangent.shape)} "
                             f"(tangents{where})")
        return None
    ta = _aval_of(tangent, f"tangents{where}")
    if not is_inexact_dtype(pa.dtype):
        if isinstance(tangent, Tracer):
            raise _dtype_error(pa.dtype.name, "float0", f"{ta.dtype.name} (a traced value, "
                               f"tangents{where})")
        if (ta.shape and not _same_shape(pa, ta)) or np.any(np.asarray(tangent) != 0):
            raise _dtype_error(pa.dtype.name, "float0", f"{ta.dtype.name} (tangents{where}; a "
                               "concrete zero is also accepted)")
        return None
    if not _same_shape(pa, ta):
        raise ValueError(f"jvp called with different primal and tangent shapes; got primal shape "
                         f"{pa.str_short()} and tangent shape {ta.str_short()} (primals{where}, "
                         f"tangents{where})")
    if ta.dtype != pa.dtype:
        if not isinstance(tangent, Tracer) and isinstance(tangent, (int, float, complex)) \
                and not isinstance(tangent, bool) and np.can_cast(np.asarray(tangent).dtype, pa.dtype, "same_kind"):
            return np.asarray(tangent, dtype=pa.dtype)   # a Python scalar takes the primal's dtype
        raise _dtype_error(pa.dtype.name, pa.dtype.name, f"{ta.dtype.name} (tangents{where})")
    return tangent


def _tangent_out(t):
    """An output tangent as the user sees it: float0 zeros for an integer or bool output (of
    static shape; zeros of its dtype when the shape is dynamic), else an array."""
    if isinstance(t, Zero) and not is_inexact_dtype(t.aval.dtype) and all(
            isinstance(d, int) for d in t.aval.shape):
        return np.zeros(t.aval.shape, float0)
    return instantiate(t)


@api_boundary
def jvp(fun, primals, tangents, has_aux: bool = False):
    """Forward-mode derivative: ``(fun(*primals), J(primals) @ tangents)``.

    ``primals`` and ``tangents`` are tuples (or lists) of the positional arguments of ``fun``,
    pytrees of the same structure whose leaves match in shape and dtype (JAX's TypeError /
    ValueError otherwise). Integer and bool primals are not differentiable: their tangent is a
    ``float0`` array of their shape (a concrete zero is accepted too). Returns the pair
    ``(primal_out, tangent_out)``, two pytrees of ``fun``'s output structure; the tangent of an
    integer or bool output is a ``float0`` array. With ``has_aux``, ``fun`` returns
    ``(output, aux)`` and the result is ``(primal_out, tangent_out, aux)``.

    Works eagerly, under ``make_jaxpr`` / ``qjit`` (also with dynamic shapes: a tangent has the
    dims of its primal) and nested (``jvp`` of a function calling ``jvp``: higher derivatives).
    """
    if not callable(fun):
        raise TypeError(f"jvp: the first argument must be a function, got {type(fun).__name__}")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primal and tangent arguments to jvp must be tuples or lists; found "
                        f"{type(primals).__name__} and {type(tangents).__name__} (write (x,) for a "
                        "single argument)")
    p_leaves, p_tree = tree_flatten(primals)
    t_leaves, t_tree = tree_flatten(tangents)
    if p_tree != t_tree:
        raise TypeError("jvp: primal and tangent arguments to jvp must have the same tree "
                        f"structure; primals have tree structure {p_tree} whereas tangents have "
                        f"tree structure {t_tree}")
    names = _leaf_names(p_tree, "")
    starts = [_check_tangent(p, t, w) for p, t, w in zip(p_leaves, t_leaves, names)]

    out_tree_box: list = []
    aux_box: list = []

    def flat(*xs):
        out = fun(*tree_unflatten(p_tree, xs))   # a tuple or list: the positional arguments
        if not has_aux:
            return out
        if not isinstance(out, tuple) or len(out) != 2:
            raise TypeError("jvp(has_aux=True): the function must return a pair (output, aux), got "
                            f"{type(out).__name__}")
        # aux is not differentiated: its values of this jvp's trace lose their tangents
        mine = {id(x._trace) for x in xs if isinstance(x, JVPTracer)}
        aux_leaves, aux_tree = tree_flatten(out[1])
        aux_box.append((aux_tree, [x.primal if isinstance(x, JVPTracer) and id(x._trace) in mine else x
                                   for x in aux_leaves]))
        return out[0]

    primal_out, tangent_out = jvp_flat(flat, p_leaves,
                                       [Zero(typeof(p)) if t is None else t for p, t in zip(p_leaves, starts)],
                                       out_tree_box)
    out_tree = out_tree_box[0]
    result = (tree_unflatten(out_tree, primal_out), tree_unflatten(out_tree, [_tangent_out(t) for t in tangent_out]))
    if has_aux:
        return result + (tree_unflatten(aux_box[0][0], aux_box[0][1]),)
    return result


def jvp_flat(fun, primals, tangents, out_tree_box=None):
    """The forward-mode core: ``fun`` takes the flat ``primals`` and returns a pytree;
    ``tangents`` are arrays or ``Zero``. Returns ``(primal_leaves, tangent_leaves)`` with
    ``Zero`` for outputs that do not depend on a non-zero tangent (and for integer outputs).
    The output treedef is appended to ``out_tree_box`` when given."""
    with new_trace(JVPTrace(next_level())) as trace:
        ins = [p if isinstance(t, Zero) or not is_inexact_dtype(typeof(p).dtype) else JVPTracer(trace, p, t)
               for p, t in zip(primals, tangents)]
        try:
            out = fun(*ins)
        except EscapedTracerError as e:
            if hasattr(e, "add_note"):
                e.add_note("dynjax.jvp: a value being differentiated was stored in a Python variable "
                           "that outlived the function being differentiated")
            raise
        out_leaves, out_tree = tree_flatten(out)
        outs = []
        for o in out_leaves:
            if isinstance(o, Tracer) and o._trace is trace:
                outs.append((o.primal, o.tangent))
            elif isinstance(o, np.ndarray) and o.dtype == float0:
                outs.append((o, o))   # a float0 value (an integer's gradient): its own tangent
            else:
                _aval_of(o, "an output of the function")
                outs.append((o, _zero_like(o)))
    if out_tree_box is not None:
        out_tree_box.append(out_tree)
    return [p for p, _ in outs], [t for _, t in outs]


# The rules of other primitive families live in modules of this package, one per
# family (as lax/linalg.py and lowering/linalg.py); importing them registers them.
from . import linalg as _linalg  # noqa: E402,F401
from . import special as _special  # noqa: E402,F401
from . import convolution as _convolution  # noqa: E402,F401  (conv_general_dilated and its transposes)
from . import callbacks as _callbacks  # noqa: E402,F401
from . import cumulative as _cumulative  # noqa: E402,F401  (cummax / cummin)
from . import reduce_window as _reduce_window  # noqa: E402,F401  (and its transpose)
from . import fft as _fft  # noqa: E402,F401
from . import bits as _bits  # noqa: E402,F401
from . import prng as _prng  # noqa: E402,F401
from . import barrier as _barrier  # noqa: E402,F401  (optimization_barrier, and its transpose)
from . import collectives as _collectives  # noqa: E402,F401  (psum, all_gather, ...)
from . import sharding as _sharding  # noqa: E402,F401  (sharding_constraint)
