"""Cost rules of the bit-level primitives (``dynjax.lax.bits``): one FLOP per result
element (a bitcast is free)."""
from __future__ import annotations

from ..lax import bits as B
from ..core.symbolic import Expr
from . import Cost, _per_element, cost_rules

for _p in (B.population_count_p, B.clz_p, B.nextafter_p, B.reduce_precision_p):
    cost_rules[_p] = _per_element(flops=1)


def _bitcast_cost(eqn, sz):
    z = Expr.const(0)
    return Cost(z, z, z, z)


cost_rules[B.bitcast_convert_type_p] = _bitcast_cost
