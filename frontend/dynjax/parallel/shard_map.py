"""``shard_map``: a function written for one device's block of the data, mapped over a mesh.

``shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(a)`` cuts ``a`` into the blocks
the specs give every device of the mesh, runs ``f`` on each block (inside it, the mesh axis
names bind the collectives: ``lax.psum(v, "x")`` sums over the devices along ``x``), and
puts the results back together as ``out_specs`` say (JAX's semantics).

It binds one ``shard_map`` equation (``parallel/shard_map_rules.py``) holding two programs
of one meaning:

* ``body``: ``f`` traced once on *block* shapes, its collectives left as equations over the
  mesh axis names: the per-device program. Inside a program partitioned over the mesh's
  devices (a sharded ``qjit``) it is what is lowered, in a manual-sharding region, its
  collectives lowered to StableHLO's (``lowering/shard_map.py``).
* ``jaxpr``: the same body run as nested ``vmap`` s, one per mesh axis, named after the
  axis (a device is a member of each, its block the members' slices): the whole-array
  program, which gives the values everywhere else (eagerly, on one device) and which the
  transformations other than ``jvp`` work on.

A mesh axis that an output's spec does not name must not vary the output (JAX's replication
check): a ValueError otherwise. A static split dimension must be a multiple of the number of
blocks (JAX's rule). A dynamic one need not: ``n`` rows over ``t`` blocks are blocks of
``ceil(n / t)`` rows, the last ones shorter or empty; the body is traced with one block
length, which the padded program gives each device as its own (``execution/
padding_shard_map.py``; what cannot run that way is a ValueError, ``execution/uneven_blocks.py``).
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, List, Optional, Sequence

from ..core import named_axes
from ..core.errors import api_boundary
from ..core.expansion import trace_nested
from ..core.interpret import eval_jaxpr
from ..core.jaxpr import Var
from ..core.staging import source_note
from ..core.pytree import flatten_up_to, tree_flatten, tree_leaves, tree_structure, tree_unflatten
from ..core.trace import current_trace, typeof
from ..lax import api as lax
from .sharding import Mesh, PartitionSpec, block_count, current_mesh
from .shard_map_rules import shard_map_p


#: what a size error in the whole-array program means (``core.staging.source_note``)
WHOLE_ARRAY_NOTE = ("in the whole-array program of a shard_map (what runs it under vmap, and under grad "
                    "when its function holds a loop or a cond), whose blocks all have one length: a "
                    "dynamic length its blocks do not divide cannot run there")


def _is_spec(s) -> bool:
    return s is None or isinstance(s, PartitionSpec)


def _spec_leaves(specs, value, what) -> List[PartitionSpec]:
    """``specs`` (a pytree prefix of ``value`` with PartitionSpec leaves) per leaf of ``value``."""
    tree = tree_structure(specs, is_leaf=_is_spec)
    entries = tree_leaves(specs, is_leaf=_is_spec)
    try:
        subtrees = flatten_up_to(tree, value)
    except ValueError as e:
        raise ValueError(f"shard_map: {what} does not match the structure of the values: {e}") from None
    out: List[PartitionSpec] = []
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


def block_shape(shape, spec: PartitionSpec, mesh: Mesh, what: str = "in_specs"):
    """The shape of one device's block of an array of ``shape`` split as ``spec`` says (a
    dynamic length gives the dynamic ``length // pieces``)."""
    if len(spec) > len(shape):
        raise ValueError(f"shard_map: {what} {spec} has {len(spec)} entries for a value of rank {len(shape)}")
    out = []
    for d, length in enumerate(shape):
        pieces = block_count(spec, d, mesh)
        if isinstance(length, int) and length % pieces:
            raise ValueError(f"shard_map: dimension {d} of length {length} does not split into "
                             f"{pieces} blocks over mesh axes {spec._names(d)}")
        out.append(length // pieces if pieces > 1 else length)
    return tuple(out)


def _to_blocks(x, spec: PartitionSpec, mesh: Mesh):
    """``x`` with one leading axis per mesh axis its spec splits it over (in mesh order),
    then its block."""
    shape = tuple(typeof(x).shape)
    new_shape: List[Any] = []
    factor_at = {}          # mesh axis -> position of its factor in new_shape
    for d, length in enumerate(shape):
        names = spec._names(d)
        if names:
            for n in names:
                factor_at[n] = len(new_shape)
                new_shape.append(mesh.shape[n])
            new_shape.append(length // block_count(spec, d, mesh))
        else:
            new_shape.append(length)
    if not factor_at:
        return x, ()
    from .. import numpy as jnp
    y = jnp.reshape(x, tuple(new_shape))
    front = [factor_at[n] for n in mesh.axis_names if n in factor_at]
    rest = [i for i in range(len(new_shape)) if i not in front]
    return lax.transpose(y, tuple(front + rest)), tuple(n for n in mesh.axis_names if n in factor_at)


def _from_blocks(y, spec: PartitionSpec, mesh: Mesh, whole_shape):
    """The inverse of ``_to_blocks``: ``y`` has one leading axis per mesh axis ``spec``
    splits (mesh order), then the block; returns the whole array, of ``whole_shape``."""
    names_in_order = [n for n in mesh.axis_names if any(n in spec._names(d) for d in range(len(spec)))]
    if not names_in_order:
        return y
    k = len(names_in_order)
    block = tuple(typeof(y).shape)[k:]
    # for each block dim, its factor axes (in the spec's order, major first), then the block dim
    order: List[int] = []
    for d in range(len(block)):
        for n in spec._names(d):
            order.append(names_in_order.index(n))
        order.append(k + d)
    from .. import numpy as jnp
    return jnp.reshape(lax.transpose(y, tuple(order)), tuple(whole_shape))


def _vmap_interpretation(body, mesh: Mesh, mapped, in_specs, out_specs, consts, leaves, out_shapes,
                         check_replication: bool = True):
    """The whole-array values of ``body`` (a jaxpr taking ``consts`` then one block per leaf)
    run on every block: nested vmaps over the ``mapped`` mesh axes, named after them. A
    result that varies over a mesh axis its spec does not name is a ValueError, or, without
    ``check_replication``, the first device's copy along it."""
    from ..transforms.batching import to_front, vmap_flat
    vals, axes_of = [], []
    for x, spec in zip(leaves, in_specs):
        v, names = _to_blocks(x, spec, mesh)
        vals.append(v)
        axes_of.append(names)

    def level(i, xs, split):
        """Map mesh axis ``mapped[i]`` (and the ones after it) over ``xs``; ``split[k]`` is
        the mesh axes argument ``k`` still has a leading axis for."""
        if i == len(mapped):
            return eval_jaxpr(body, [], *consts, *xs)
        name = mapped[i]
        dims = [0 if split[k] and split[k][0] == name else None for k in range(len(xs))]
        rest = [split[k][1:] if dims[k] == 0 else split[k] for k in range(len(xs))]
        outs, out_dims, _ = vmap_flat(lambda *ys: level(i + 1, ys, rest), mesh.shape[name], list(xs), dims, name)
        placed = []
        for k, (o, d) in enumerate(zip(outs, out_dims)):
            spec = out_specs[k]
            if any(name in spec._names(dd) for dd in range(len(spec))):
                placed.append(to_front(o, d, mesh.shape[name]))
            elif d is not None and not check_replication:
                from ..lax.slicing_functions import index_in_dim
                placed.append(index_in_dim(o, 0, d, keepdims=False))
            elif d is not None:
                raise ValueError(f"shard_map: result {k} varies over the mesh axis {name!r}, but its "
                                 f"out_specs {spec} does not split it (name it in out_specs, or "
                                 f"make the result the same on every device, e.g. with lax.psum)")
            else:
                placed.append(o)
        return placed

    outs = level(0, vals, [tuple(a for a in mapped if a in names) for names in axes_of])
    return [_from_blocks(o, s, mesh, shape) for o, s, shape in zip(outs, out_specs, out_shapes)]


def _outer_dims(jaxpr, inputs):
    """``outer_dim(var, k, d)``: for a dim ``var`` of the body ``jaxpr`` (whose invars take
    ``inputs``: its consts, then the leaves, of which only whole integer scalars can be
    sizes), ``(j, value)``: the position ``j`` of the input it is (else None) and its value
    in the enclosing scope, recomputed there from the body's size arithmetic; a size that
    depends on the data (or on the device) raises a TypeError."""
    from ..lax.collectives import COLLECTIVE_SET
    position = {id(v): j for j, v in enumerate(jaxpr.invars) if not v.aval.shape}
    producer = {id(v): e for e in jaxpr.eqns for v in e.outvars}
    memo = {}

    def value(a):
        if not isinstance(a, Var):
            return a.val
        if id(a) in memo:
            return memo[id(a)]
        if id(a) in position:
            out = inputs[position[id(a)]]
        else:
            e = producer.get(id(a))
            if e is None or e.primitive in COLLECTIVE_SET or any(len(x.aval.shape) for x in e.invars + e.outvars):
                raise LookupError
            outs = e.primitive.bind(*[value(x) for x in e.invars], **e.params)
            outs = outs if e.primitive.multiple_results else [outs]
            for v, o in zip(e.outvars, outs):
                memo[id(v)] = o
            out = memo[id(a)]
        memo[id(a)] = out
        return out

    def outer_dim(dim, k, d):
        try:
            return position.get(id(dim)), value(dim)
        except LookupError:
            raise TypeError(f"shard_map: dimension {d} of result {k} of the mapped function is a size "
                            "that depends on the data; a result may only have static dimensions or "
                            "sizes computed from its inputs' sizes") from None
    return outer_dim


def _same_size(a, b) -> bool:
    if a is b:
        return True
    sa, sb = getattr(a, "sym", None), getattr(b, "sym", None)
    return sa is not None and sb is not None and sa == sb


def _whole_length(block, pieces: int, splits):
    """The length of ``pieces`` blocks of length ``block``: the length an argument was split
    from, when ``block`` is its block, else ``block * pieces``."""
    if pieces == 1:
        return block
    for length, t, b in splits:
        if t == pieces and _same_size(b, block):
            return length
    return block * pieces


def bind_shard_map(fn: Callable, leaves: Sequence[Any], in_specs: Sequence[PartitionSpec], mesh: Mesh,
                   mapped: Sequence[str], out_specs_of: Callable[[List[Any]], List[PartitionSpec]],
                   check_replication: bool = True) -> List[Any]:
    """Trace ``fn`` (flat blocks in, a flat list out) on the blocks of ``leaves`` split as
    ``in_specs`` say, with the ``mapped`` mesh axis names bound to it, and bind one
    ``shard_map`` equation running it; ``out_specs_of(results)`` gives the results' specs.
    Returns the whole results. ``check_replication=False``: ``fn`` is a rewriting of a body
    that passed the replication check (the padded body, whose block lengths are per-device
    values, equal wherever a result depends on them: ``execution/uneven_blocks.py``)."""
    mapped = tuple(mapped)
    for spec in in_specs:
        _check_names(spec, mesh, "in_specs")
    blocks = tuple((typeof(x).update(shape=block_shape(typeof(x).shape, s, mesh), weak_type=False), True)
                   for x, s in zip(leaves, in_specs))
    # (length, pieces, block) of every dynamic dim split: a result's block of that length
    # is put back together as that length (checked to be a multiple of the pieces)
    splits = []
    for x, s, (a, _) in zip(leaves, in_specs, blocks):
        for d, (length, b) in enumerate(zip(typeof(x).shape, a.shape)):
            if not isinstance(length, int) and block_count(s, d, mesh) > 1:
                splits.append((length, block_count(s, d, mesh), b))
    box = {}

    def body_fn(*xs):
        trace = current_trace()
        with contextlib.ExitStack() as stack:
            for name in mapped:
                stack.enter_context(named_axes.binding(name, trace, mesh.shape[name]))
            outs = list(fn(*xs))
        specs = list(out_specs_of(outs))
        for s in specs:
            _check_names(s, mesh, "out_specs")
        box["specs"] = specs
        return outs

    # an integer scalar that is a size outside (a size the body's jvp passes on) keeps its
    # expression inside: the blocks of that size agree with it
    body = trace_nested(body_fn, blocks, lambda r: (list(r), None), expand=False, same_as=list(leaves))
    out_specs = box["specs"]
    nconst = len(body.consts)
    outer_dim = _outer_dims(body.jaxpr, list(body.consts) + list(leaves))
    # the whole results' shapes: a dim that is an input of the body is an operand already; a
    # block dim split over mesh axes, or a size the body computes, is computed here, a new
    # operand of the equation
    extra: List[Any] = []
    shapes = []      # per result: per dim, an int or ("operand", j) / ("extra", j)
    for k, (v, spec) in enumerate(zip(body.jaxpr.outvars, out_specs)):
        if len(spec) > len(v.aval.shape):
            raise ValueError(f"shard_map: out_specs {spec} has {len(spec)} entries for result {k} "
                             f"of rank {len(v.aval.shape)}")
        row = []
        for d, dim in enumerate(v.aval.shape):
            pieces = block_count(spec, d, mesh)
            if isinstance(dim, int):
                row.append(dim * pieces)
                continue
            j, outer = outer_dim(dim, k, d)
            if pieces == 1 and j is not None:
                row.append(("operand", j))
            else:
                extra.append(_whole_length(outer, pieces, splits))
                row.append(("extra", len(extra) - 1))
        shapes.append(row)
    operands = list(body.consts) + list(leaves) + extra
    nleaf = len(leaves)

    def whole_fn(*xs):
        consts, vals, sizes = xs[:nconst], xs[nconst:nconst + nleaf], xs[nconst + nleaf:]
        inputs = list(consts) + list(vals)
        out_shapes = [tuple(d if isinstance(d, int) else (inputs[d[1]] if d[0] == "operand" else sizes[d[1]])
                            for d in row) for row in shapes]
        with source_note(WHOLE_ARRAY_NOTE):
            return _vmap_interpretation(body.jaxpr, mesh, mapped, in_specs, out_specs, consts, vals, out_shapes,
                                        check_replication)

    whole = trace_nested(whole_fn, tuple((typeof(x), True) for x in operands), lambda r: (list(r), None),
                         expand=False, same_as=operands)
    nlead = len(whole.consts)
    all_specs = [PartitionSpec()] * nconst + list(in_specs)
    return list(shard_map_p.bind(*whole.consts, *operands, jaxpr=whole.jaxpr, body=body.jaxpr,
                                 body_inputs=tuple(range(nlead, nlead + nconst + nleaf)),
                                 in_specs=tuple(all_specs), out_specs=tuple(out_specs), mesh=mesh,
                                 mapped=mapped))


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
        mesh = given_mesh if given_mesh is not None else current_mesh()
        if not isinstance(mesh, Mesh):
            raise ValueError("shard_map: give mesh= (a dynjax.sharding.Mesh) or call it inside `with mesh:`")
        mapped = [n for n in mesh.axis_names if not axis_names or n in axis_names]
        leaves, tree = tree_flatten(args)
        specs = _spec_leaves(tuple(in_specs) if isinstance(in_specs, list) else in_specs, args, "in_specs")
        box = {}

        def flat_body(*blocks):
            out = f(*tree_unflatten(tree, list(blocks)))
            out_leaves, box["tree"] = tree_flatten(out)
            box["value"] = out
            return out_leaves
        outs = bind_shard_map(flat_body, leaves, specs, mesh, mapped,
                              lambda _: _spec_leaves(out_specs, box["value"], "out_specs"))
        return tree_unflatten(box["tree"], outs)
    return wrapped
