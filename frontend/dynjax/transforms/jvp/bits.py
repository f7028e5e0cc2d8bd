"""Jvp rules of the bit-level primitives (``dynjax.lax.bits``).

``population_count``, ``clz`` (integers), ``nextafter`` (piecewise constant) and
``bitcast_convert_type`` (a reinterpretation of bits, not a function of the value) have
zero tangents; ``reduce_precision`` passes its tangent through unchanged (it is the identity
up to rounding: a straight-through derivative).
"""
from __future__ import annotations

from ...core.primitive import jvp_rules
from ...lax import bits as B
from . import Zero, _zero_tangents

for _p in (B.population_count_p, B.clz_p, B.nextafter_p, B.bitcast_convert_type_p):
    jvp_rules[_p] = _zero_tangents(_p)


def _reduce_precision_rule(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    out = B.reduce_precision_p.bind(x, **params)
    return out, (Zero(t.aval) if isinstance(t, Zero) else t)


jvp_rules[B.reduce_precision_p] = _reduce_precision_rule
