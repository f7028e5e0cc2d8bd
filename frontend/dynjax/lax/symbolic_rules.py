"""Symbolic evaluation of integer scalar primitives: the dimension arithmetic of a trace.

Each rule takes the operand avals, the operands' symbolic expressions (``core/symbolic.Expr``)
and the primitive's params, and returns the result's expression, or ``None`` when the
result is not a polynomial expression of the operands (an integer result then becomes a
fresh symbol: a size known only at run time). Integer scalars carry expressions; a bool
scalar carries one only when it is decided (the constant 0 or 1): a comparison of sizes
whose answer is provable, which then selects one side of a ``select_n`` statically.

The staging trace uses the result to reuse the variable of an equal expression computed
before (``x[1:]`` and ``x[:-1]`` share one ``n - 1`` dim) or to turn a constant into a
literal. A rule must be exact for every value the operands can take; where that depends
on a sign (truncating division), it answers only when the sign is decidable.
"""
from __future__ import annotations

from ..core.avals import is_integer_dtype
from ..core.primitive import symbolic_rules
from ..core.symbolic import Expr, decide_eq, decide_ge, max0, maximum, minimum
from . import primitives as P


def _register(prim):
    def wrap(rule):
        symbolic_rules[prim] = rule
        return rule
    return wrap


symbolic_rules[P.add_p] = lambda avals, x, y: x + y
symbolic_rules[P.sub_p] = lambda avals, x, y: x - y
symbolic_rules[P.mul_p] = lambda avals, x, y: x * y
symbolic_rules[P.neg_p] = lambda avals, x: -x
symbolic_rules[P.max_p] = lambda avals, x, y: maximum(x, y)
symbolic_rules[P.min_p] = lambda avals, x, y: minimum(x, y)


@_register(P.abs_p)
def _abs(avals, x):
    return max0(x) + max0(-x)


@_register(P.integer_pow_p)
def _integer_pow(avals, x, *, y):
    if y < 0:
        return None
    out = x * 0 + 1
    for _ in range(y):
        out = out * x
    return out


def _positive_constant(e):
    c = e.as_const()
    return c if c is not None and c > 0 else None


def _by_positive_constant(method):
    """Integer division truncates toward zero and the remainder takes the dividend's sign:
    for a dividend >= 0 and a positive constant divisor they are ``floordiv`` and ``mod``."""
    def rule(avals, x, y):
        c = _positive_constant(y)
        if c is None or not decide_ge(x, 0):
            return None
        return getattr(x, method)(c)
    return rule


symbolic_rules[P.div_p] = _by_positive_constant("floordiv")
symbolic_rules[P.rem_p] = _by_positive_constant("mod")


@_register(P.convert_element_type_p)
def _convert(avals, x, *, new_dtype, weak_type=False):
    """Integer to a wider (or equal) integer keeps the value."""
    src = avals[0].dtype
    if not (is_integer_dtype(src) and is_integer_dtype(new_dtype)) or new_dtype.itemsize < src.itemsize:
        return None
    if new_dtype.kind == src.kind or (src.kind == "u" and new_dtype.itemsize > src.itemsize):
        return x
    return x if src.kind == "i" and decide_ge(x, 0) else None   # signed to unsigned: if >= 0


def _decided(answer):
    return None if answer is None else Expr.const(int(answer))


symbolic_rules[P.ge_p] = lambda avals, x, y: _decided(decide_ge(x, y))
symbolic_rules[P.le_p] = lambda avals, x, y: _decided(decide_ge(y, x))
symbolic_rules[P.gt_p] = lambda avals, x, y: _decided(decide_ge(x, y + 1))
symbolic_rules[P.lt_p] = lambda avals, x, y: _decided(decide_ge(y, x + 1))
symbolic_rules[P.eq_p] = lambda avals, x, y: _decided(decide_eq(x, y))
symbolic_rules[P.ne_p] = lambda avals, x, y: _decided(None if decide_eq(x, y) is None else not decide_eq(x, y))


@_register(P.select_n_p)
def _select_n(avals, which, *cases):
    """A decided predicate picks its case."""
    c = which.as_const()
    if c is None or not 0 <= c < len(cases):
        return None
    return cases[c]
