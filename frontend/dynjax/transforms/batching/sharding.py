"""Batching rule of ``sharding_constraint`` (``dynjax.lax.sharding``).

The batch axis is not split (one more dimension in one piece), unless the ``vmap`` has an
``spmd_axis_name`` over the entered mesh (``trace.spmd``): then the batch axis is split over
those mesh axes, each piece of the constraint's layout keeping, for batch piece ``c``, its
devices whose coordinate along those axes is ``c`` (when the devices holding each piece
cover those coordinates evenly; otherwise the batch axis stays whole). A sharding never
changes a value, only where it lives.
"""
from __future__ import annotations

import numpy as np

from ...core.primitive import batching_rules
from ...lax.sharding import sharding_constraint_p


def _split_batch(tiles, devices, replicas, d, spmd):
    """The layout params with a batch axis at ``d`` split over the spmd mesh axes, or None."""
    mesh, names = spmd
    shape = tuple(mesh.devices.shape)
    axes = [mesh.axis_names.index(n) for n in names]
    pieces = int(np.prod([shape[a] for a in axes]))
    if replicas % pieces or len(devices) != int(np.prod(tiles)) * replicas or max(devices) >= mesh.size:
        return None
    coords = np.unravel_index(np.asarray(devices, np.int64), shape)
    member = np.ravel_multi_index(tuple(coords[a] for a in axes), tuple(shape[a] for a in axes))
    grid = np.asarray(devices, np.int64).reshape(tuple(tiles) + (replicas,))
    member = member.reshape(grid.shape)
    per = replicas // pieces
    out = np.zeros(tuple(tiles) + (pieces, per), np.int64)
    for cell in np.ndindex(*tuple(tiles)):
        for c in range(pieces):
            chosen = grid[cell][member[cell] == c]
            if len(chosen) != per:
                return None
            out[cell + (c,)] = chosen
    out = np.moveaxis(out, len(tiles), d)    # the batch pieces at the batch axis
    new_tiles = tuple(tiles[:d]) + (pieces,) + tuple(tiles[d:])
    return dict(tiles=new_tiles, devices=tuple(int(i) for i in out.reshape(-1)), replicas=per)


def _rule(size, vals, dims, *, trace, tiles, devices, replicas):
    (x,), (d,) = vals, dims
    spmd = getattr(trace, "spmd", None)
    params = _split_batch(tiles, devices, replicas, d, spmd) if spmd is not None else None
    if params is None:
        params = dict(tiles=tuple(tiles[:d]) + (1,) + tuple(tiles[d:]), devices=devices, replicas=replicas)
    return sharding_constraint_p.bind(x, **params), d


_rule.needs_trace = True
batching_rules[sharding_constraint_p] = _rule
