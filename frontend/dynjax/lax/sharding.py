"""The ``sharding_constraint`` primitive: a value laid out over devices as a sharding says.

``sharding_constraint[tiles, devices, replicas] x`` is ``x``; in a program partitioned over
devices it tells XLA's partitioner how to lay ``x`` out there (``tiles`` pieces per
dimension, ``devices`` the positions, among the program's devices, holding the pieces in
order, each piece on ``replicas`` devices). It lowers to the ``stablehlo.custom_call
@Sharding`` that carries XLA's sharding annotation (which a one-device program ignores).
``dynjax.with_sharding_constraint`` (``parallel/constraints.py``) binds it.
"""
from __future__ import annotations

import numpy as np

from .base import aval, define


def _impl(x, *, tiles, devices, replicas):
    return np.array(x, copy=True)   # a result of its own, as every eager result


def _abstract(x, *, tiles, devices, replicas):
    a = aval(x)
    if len(tiles) != len(a.shape):
        raise ValueError(f"with_sharding_constraint: a sharding for rank {len(tiles)} on a value of rank "
                         f"{len(a.shape)}")
    return a


sharding_constraint_p = define("sharding_constraint", _impl, _abstract)


def hlo_sharding(tiles, devices, replicas) -> str:
    """XLA's HloSharding text of a ``sharding_constraint``'s params."""
    if all(t == 1 for t in tiles):
        return "{replicated}"
    dims = list(tiles) + ([replicas] if replicas > 1 else [])
    last = " last_tile_dim_replicate" if replicas > 1 else ""
    return "{devices=[" + ",".join(map(str, dims)) + "]" + ",".join(map(str, devices)) + last + "}"
