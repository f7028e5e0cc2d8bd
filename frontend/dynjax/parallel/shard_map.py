"""``shard_map``: a function written for one device's block of the data, mapped over a mesh.

``shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(a)`` cuts ``a`` into the blocks
the specs give every device of the mesh, runs ``f`` on each block (inside it, the mesh axis
names bind the collectives: ``lax.psum(v, "x")`` sums over the devices along ``x``), and
puts the results back together as ``out_specs`` say (JAX's semantics).

dynjax runs it as nested ``vmap`` s, one per mesh axis, named after the axis: a device is a
member of each, its block the members' slices. That is exactly the per-device program's
meaning, on any number of devices. Under a sharded ``qjit`` (arguments laid out over the
same mesh) XLA's partitioner places the mapped axes, and their reductions become
cross-device collectives. A mesh axis that an output's spec does not name must not vary the
output (JAX's replication check): a ValueError otherwise. A split dimension may be dynamic;
its length must be a multiple of the number of blocks (checked when the sizes are known).
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional

from ..core.errors import api_boundary
from ..core.pytree import flatten_up_to, tree_flatten, tree_leaves, tree_structure, tree_unflatten
from ..core.trace import typeof
from ..lax import api as lax
from .sharding import Mesh, PartitionSpec, current_mesh


def _is_spec(s) -> bool:
    return s is None or isinstance(s, PartitionSpec)


def _spec_leaves(specs, value, what) -> List[Optional[PartitionSpec]]:
    """``specs`` (a pytree prefix of ``value`` with PartitionSpec leaves) per leaf of ``value``."""
    tree = tree_structure(specs, is_leaf=_is_spec)
    entries = tree_leaves(specs, is_leaf=_is_spec)
    try:
        subtrees = flatten_up_to(tree, value)
    except ValueError as e:
        raise ValueError(f"shard_map: {what} does not match the structure of the values: {e}") from None
    out: List[Optional[PartitionSpec]] = []
    for s, sub in zip(entries, subtrees):
        if not _is_spec(s):
            raise TypeError(f"shard_map: {what} leaves must be PartitionSpec or None, got {type(s).__name__}")
        out += [s if s is not None else PartitionSpec()] * len(tree_leaves(sub))
    return out


def _check_names(spec: PartitionSpec, mesh: Mesh, what: str) -> None:
    used = [n for d in range(len(spec)) for n in spec._names(d)]
    for n in used:
        if n not in mesh.axis_names:
            raise ValueError(f"shard_map: {what} {spec} names {n!r}, which is not an axis of {mesh}")
    if len(set(used)) != len(used):
        raise ValueError(f"shard_map: {what} {spec} uses a mesh axis twice")


def _to_blocks(x, spec: PartitionSpec, mesh: Mesh):
    """``x`` with one leading axis per mesh axis its spec splits it over (in mesh order),
    then its block."""
    shape = tuple(typeof(x).shape)
    if len(spec) > len(shape):
        raise ValueError(f"shard_map: in_specs {spec} has {len(spec)} entries for an argument of rank {len(shape)}")
    new_shape: List[Any] = []
    factor_at = {}          # mesh axis -> position of its factor in new_shape
    for d, length in enumerate(shape):
        names = spec._names(d)
        if names:
            pieces = 1
            for n in names:
                pieces *= mesh.shape[n]
            if isinstance(length, int) and length % pieces:
                raise ValueError(f"shard_map: dimension {d} of length {length} does not split into "
                                 f"{pieces} blocks over mesh axes {names}")
            for n in names:
                factor_at[n] = len(new_shape)
                new_shape.append(mesh.shape[n])
            new_shape.append(length // pieces)
        else:
            new_shape.append(length)
    if not factor_at:
        return x, ()
    from .. import numpy as jnp
    y = jnp.reshape(x, tuple(new_shape))
    front = [factor_at[n] for n in mesh.axis_names if n in factor_at]
    rest = [i for i in range(len(new_shape)) if i not in front]
    return lax.transpose(y, tuple(front + rest)), tuple(n for n in mesh.axis_names if n in factor_at)


def _from_blocks(y, spec: PartitionSpec, mesh: Mesh):
    """The inverse of ``_to_blocks``: ``y`` has one leading axis per mesh axis ``spec``
    splits (mesh order), then the block; returns the whole array."""
    names_in_order = [n for n in mesh.axis_names if any(n in spec._names(d) for d in range(len(spec)))]
    if not names_in_order:
        return y
    k = len(names_in_order)
    shape = tuple(typeof(y).shape)
    block = shape[k:]
    if len(spec) > len(block):
        raise ValueError(f"shard_map: out_specs {spec} has {len(spec)} entries for a result of rank {len(block)}")
    # for each block dim, its factor axes (in the spec's order, major first), then the block dim
    order: List[int] = []
    merged: List[Any] = []
    for d, length in enumerate(block):
        names = spec._names(d)
        pieces = 1
        for n in names:
            order.append(names_in_order.index(n))
            pieces *= mesh.shape[n]
        order.append(k + d)
        merged.append(length * pieces if names else length)
    from .. import numpy as jnp
    return jnp.reshape(lax.transpose(y, tuple(order)), tuple(merged))


@api_boundary
def shard_map(f: Optional[Callable] = None, /, *, out_specs, in_specs=None, mesh: Optional[Mesh] = None,
              axis_names=frozenset(), check_vma: bool = True, check_rep: Optional[bool] = None):
    """Map ``f`` over the blocks of its arguments on ``mesh`` (JAX's ``shard_map``; usable as
    a decorator with keywords). ``in_specs`` / ``out_specs`` are PartitionSpecs (pytree
    prefixes of the arguments / results); ``mesh`` defaults to the one entered with
    ``with mesh:``. ``axis_names`` (the mesh axes that are mapped; default all),
    ``check_vma`` / ``check_rep`` are accepted; the replication check always runs."""
    if f is None:
        return lambda g: shard_map(g, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                   axis_names=axis_names, check_vma=check_vma, check_rep=check_rep)
    if not callable(f):
        raise TypeError(f"shard_map: the first argument must be a function, got {type(f).__name__}")
    if in_specs is None:
        raise TypeError("shard_map: in_specs is required")
    given_mesh = mesh

    @api_boundary
    def wrapped(*args):
        from ..transforms.batching import to_front, vmap_flat
        mesh = given_mesh if given_mesh is not None else current_mesh()
        if not isinstance(mesh, Mesh):
            raise ValueError("shard_map: give mesh= (a dynjax.sharding.Mesh) or call it inside `with mesh:`")
        mapped = [n for n in mesh.axis_names if not axis_names or n in axis_names]
        leaves, tree = tree_flatten(args)
        specs = _spec_leaves(tuple(in_specs) if isinstance(in_specs, list) else in_specs, args, "in_specs")
        vals, axes_of = [], []
        for x, spec in zip(leaves, specs):
            _check_names(spec, mesh, "in_specs")
            v, names = _to_blocks(x, spec, mesh)
            vals.append(v)
            axes_of.append(names)
        result = {}

        def level(i, xs, split):
            """Map mesh axis ``mapped[i]`` (and the ones after it) over ``xs``; ``split[k]``
            is the mesh axes argument ``k`` still has a leading axis for."""
            if i == len(mapped):
                out = f(*tree_unflatten(tree, list(xs)))
                out_leaves, out_tree = tree_flatten(out)
                result["tree"] = out_tree
                result["specs"] = _spec_leaves(out_specs, out, "out_specs")
                for s in result["specs"]:
                    _check_names(s, mesh, "out_specs")
                return out_leaves
            name = mapped[i]
            dims = [0 if split[k] and split[k][0] == name else None for k in range(len(xs))]
            rest = [split[k][1:] if dims[k] == 0 else split[k] for k in range(len(xs))]
            outs, out_dims, _ = vmap_flat(lambda *ys: level(i + 1, ys, rest), mesh.shape[name], list(xs), dims,
                                          name)
            placed = []
            for k, (o, d) in enumerate(zip(outs, out_dims)):
                spec = result["specs"][k]
                if any(name in spec._names(dd) for dd in range(len(spec))):
                    placed.append(to_front(o, d, mesh.shape[name]))
                elif d is not None:
                    raise ValueError(f"shard_map: result {k} varies over the mesh axis {name!r}, but its "
                                     f"out_specs {spec} does not split it (name it in out_specs, or "
                                     f"make the result the same on every device, e.g. with lax.psum)")
                else:
                    placed.append(o)
            return placed

        outs = level(0, vals, [tuple(a for a in mapped if a in names) for names in axes_of])
        whole = [_from_blocks(o, s, mesh) for o, s in zip(outs, result["specs"])]
        return tree_unflatten(result["tree"], whole)
    return wrapped
