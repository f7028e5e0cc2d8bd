"""Jvp rules of ``cummax`` / ``cummin`` (``dynjax.lax.cumulative``).

As in JAX, the tangent is the one the associative scan of ``max`` / ``min`` gives: each
combine takes the tangent of the operand equal to the result, half of each on a tie. The
tangent is computed by ``associative_scan`` over (value, tangent) pairs, which evaluates JAX's
combining tree, so ties split exactly as in ``jax.grad`` (a run of equal maxima shares the
tangent in the tree's proportions, not evenly). It is linear in the tangent.
"""
from __future__ import annotations

import numpy as np

from ...core.avals import is_inexact_dtype
from ...core.primitive import jvp_rules
from ...core.trace import typeof
from ...lax import api as lax
from ...lax.cumulative import associative_scan, cummax_p, cummin_p
from . import Zero, _zero_like


def _pair_combine(op):
    def combine(a, b):
        (av, at), (bv, bt) = a, b
        out = op(av, bv)
        dt = typeof(out).dtype
        a_wins = lax.convert_element_type(lax.eq(av, out), dt)
        b_wins = lax.convert_element_type(lax.eq(bv, out), dt)
        one, half = np.asarray(1, dt), np.asarray(0.5, dt)
        wa = lax.mul(a_wins, lax.sub(one, lax.mul(half, b_wins)))
        wb = lax.mul(b_wins, lax.sub(one, lax.mul(half, a_wins)))
        return out, lax.add(lax.mul(at, wa), lax.mul(bt, wb))
    return combine


def _rule(prim, op):
    combine = _pair_combine(op)

    def rule(primals, tangents, *, axis, reverse=False):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, axis=axis, reverse=reverse)
        if isinstance(t, Zero) or not is_inexact_dtype(typeof(out).dtype):
            return out, _zero_like(out)
        _, tangent = associative_scan(combine, (x, t), reverse=reverse, axis=axis)
        return out, tangent
    return rule


jvp_rules[cummax_p] = _rule(cummax_p, lax.max)
jvp_rules[cummin_p] = _rule(cummin_p, lax.min)
