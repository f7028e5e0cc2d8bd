"""Batching rule of ``sharding_constraint`` (``dynjax.lax.sharding``): the batch axis is not
split (one more dimension in one piece)."""
from __future__ import annotations

from ...core.primitive import batching_rules
from ...lax.sharding import sharding_constraint_p


def _rule(size, vals, dims, *, tiles, devices, replicas):
    (x,), (d,) = vals, dims
    tiles = tuple(tiles[:d]) + (1,) + tuple(tiles[d:])
    return sharding_constraint_p.bind(x, tiles=tiles, devices=devices, replicas=replicas), d


batching_rules[sharding_constraint_p] = _rule
