"""Cost rule of ``threefry2x32`` (``dynjax.lax.prng``): per counter pair, 20 rounds of an add,
a rotation (two shifts and an or) and a xor, plus the key schedule: about 130 integer
operations, counted as flops; no transcendentals."""
from __future__ import annotations

from ..core.symbolic import Expr
from ..lax import prng as _R
from . import Cost, cost_rules

#: integer operations per counter pair: 20 rounds x 5 operations, 5 key injections x 3 adds
#: plus the two initial adds and the parity constant's two xors
THREEFRY_OPS = 20 * 5 + 5 * 3 + 4


def _threefry_cost(eqn, sz):
    n = sz.elements(eqn.outvars[0].aval)
    z = Expr.const(0)
    return Cost(n * THREEFRY_OPS, z, z, z)


cost_rules[_R.threefry2x32_p] = _threefry_cost
