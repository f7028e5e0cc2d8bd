"""Cost rules of the collectives (``dynjax.lax.collectives``). Under ``vmap`` they become
ordinary operations before anything is costed; a collective left in a program costs one
operation per element it combines (``psum``, ``pmax``, ``pmin``, ``psum_scatter``) and none
for the ones that only move data."""
from __future__ import annotations

from ..lax.collectives import (all_gather_p, all_to_all_p, axis_index_p, pmax_p, pmin_p, ppermute_p,
                               psum_p, psum_scatter_p)
from . import Cost, Expr, _reduction_cost, cost_rules


def _moves_only(eqn, sz):
    z = Expr.const(0)
    return Cost(z, z, z, z)


for _p in (psum_p, pmax_p, pmin_p, psum_scatter_p):
    cost_rules[_p] = _reduction_cost
for _p in (all_gather_p, all_to_all_p, ppermute_p, axis_index_p):
    cost_rules[_p] = _moves_only
