"""Batching rule of ``optimization_barrier`` (``dynjax.lax.barrier``): the barrier on the
batched values, each keeping its batch axis."""
from __future__ import annotations

from ...core.primitive import batching_rules
from ...lax.barrier import optimization_barrier_p


def _rule(size, vals, dims):
    return list(optimization_barrier_p.bind(*vals)), list(dims)


batching_rules[optimization_barrier_p] = _rule
