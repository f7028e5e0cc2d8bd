"""Cost rule of ``optimization_barrier`` (``dynjax.lax.barrier``): free (it computes nothing)."""
from __future__ import annotations

from ..lax.barrier import optimization_barrier_p
from . import Cost, cost_rules

cost_rules[optimization_barrier_p] = lambda eqn, sz: Cost.zero()
