"""The ``sharding_constraint`` primitive: a value laid out over devices as a sharding says.

``sharding_constraint[tiles, devices, replicas] x`` is ``x``; in a program partitioned over
devices it tells XLA's partitioner how to lay ``x`` out there (``tiles`` pieces per
dimension, ``devices`` the positions, among the program's devices, holding the pieces in
order, each piece on ``replicas`` devices). It lowers to Shardy's
``sdy.sharding_constraint`` in a partitioned program (``lowering/sharding.py``), to nothing
in a one-device program.
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


