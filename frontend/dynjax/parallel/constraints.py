"""``with_sharding_constraint``: how a value inside a program is laid out over devices.

In a program partitioned over a mesh (a sharded ``qjit``), the constraint tells XLA's
partitioner to lay the value out as the sharding says; elsewhere it is the identity. The
sharding's mesh must be the program's (its devices in the mesh's order).
"""
from __future__ import annotations

from ..core.pytree import tree_flatten, tree_unflatten
from ..core.trace import typeof
from ..lax.sharding import sharding_constraint_p
from .sharding import NamedSharding, PartitionSpec, current_mesh


def _params(sharding, ndim):
    mesh_ids = [int(i) for i in sharding.mesh.device_ids.reshape(-1)]
    position = {d: k for k, d in enumerate(mesh_ids)}
    lay = sharding.layout(ndim)
    return dict(tiles=lay.tiles, devices=tuple(position[int(d)] for d in lay.grid.reshape(-1)),
                replicas=lay.replicas)


def with_sharding_constraint(x, shardings):
    """``x`` (a pytree) with each leaf laid out by its sharding (a NamedSharding, or a
    PartitionSpec of the mesh entered with ``with mesh:``; a pytree prefix of ``x``)."""
    from ..execution.sharded_runs import prefix_leaves
    leaves, tree = tree_flatten(x)

    def as_named(s):
        if isinstance(s, PartitionSpec):
            mesh = current_mesh()
            if mesh is None:
                raise ValueError("with_sharding_constraint: a bare PartitionSpec needs a mesh "
                                 "(`with mesh:`); give a NamedSharding instead")
            return NamedSharding(mesh, s)
        return s
    specs = prefix_leaves(shardings if not isinstance(shardings, PartitionSpec) else as_named(shardings), x)
    out = []
    for v, s in zip(leaves, specs):
        s = as_named(s)
        if s is None or getattr(s, "mesh", None) is None:
            out.append(v)
            continue
        out.append(sharding_constraint_p.bind(v, **_params(s, typeof(v).ndim)))
    return tree_unflatten(tree, out)
