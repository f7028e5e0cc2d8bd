"""Lowering of the collectives (``dynjax.lax.collectives``).

A collective is interpreted by the ``vmap`` that binds its axis name before anything is
lowered (it becomes sums, transposes and gathers over the batch axis), so a program that
reaches the lowering with one left has lost its axis: the rule says so, naming the axis.
Collectives across devices (StableHLO ``all_reduce``, ``all_gather``... in a per-device
program) belong to ``shard_map``, which dynjax does not offer yet.
"""
from __future__ import annotations

from ..lax.collectives import COLLECTIVES
from .core import LoweringError, register_lowering


def _rule(ctx, eqn, *args):
    raise LoweringError(f"{eqn.primitive.name} over the axis {eqn.params['axis_name']!r} outside the vmap "
                        "that binds it: collectives compile only as part of vmap(axis_name=...)")


for _p in COLLECTIVES:
    register_lowering(_p)(_rule)
