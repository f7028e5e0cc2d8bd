"""The padding rules of ``shard_map`` and of the collectives in its per-device body
(``execution/padding.py``'s interpretation, continued).

A padded array holds its logical elements first along each dynamic axis, then garbage. A
``shard_map`` whose split dimension is dynamic cuts ``n`` rows into ``t`` blocks of
``B = ceil(n / t)`` rows, the last ones shorter or empty (``b_k = clamp(n - k*B, 0, B)``
rows on device ``k``: 13 over 4 are 4, 4, 4, 1), as XLA tiles an unevenly split dimension.
So the padded program lays such an array out *per device* first: block ``k`` of the
``t * Bb`` padded rows holds device ``k``'s rows ``k*B ..`` then padding (``Bb``, the bound of
the longest block, is ``ceil(bound(n) / t)``: ``padding.bound_hint_rules`` raise the block
length operand's bound to it). The per-device body is the padding interpretation of the
body, bound as a ``shard_map`` again (a partitioned program still lowers it as the
per-device program), with one more operand per block length: the int64 vector of the ``t``
lengths ``b_k``, split over the same mesh axes, so each device (or, in the whole-array
program, each member of the vmaps) reads its own length and the body's reductions mask
beyond it. Its results, per-device padded, are gathered back into logical-first order.
When ``t`` divides ``n`` every ``b_k`` is ``n / t``: today's layout and values.

The collectives combine the blocks of the devices position by position: ``psum pmax pmin
ppermute axis_index`` and the others along static axes stay as they are (values whose
shape involves a block length that differs between the devices a collective combines are
refused on the host, ``uneven_blocks.py``). Along a dynamic axis, an ``all_gather`` (tiled)
is compacted afterwards, a ``psum_scatter`` lays its operand out per device first, an
``all_to_all`` both. A body the rules cannot pad makes the shard_map pad its whole-array
program instead (same values, no per-device program; only for blocks of one length).
"""
from __future__ import annotations

from typing import Any, List

import numpy as np

from .. import lax
from ..core.avals import int64
from ..core.jaxpr import Var
from ..lax.collectives import (all_gather_p, all_to_all_p, axis_index_p, pmax_p, pmin_p, ppermute_p,
                               psum_p, psum_scatter_p)
from .padding import Context, NotPaddable, _i64, _same, interpret, lax_shape, padding_rules
from .padding_control_flow import _nested
from ..parallel.sharding import block_count


def _take(x, axis: int, src):
    """``x`` at positions ``src`` (an int64 vector) along ``axis``."""
    from .. import numpy as jnp
    return jnp.take(x, src, axis=axis, mode="clip")


def _spread(x, axis: int, t: int, b, bb: int):
    """Logical-first rows laid out per device: ``t`` blocks of ``bb``, block ``k`` starting
    with rows ``k*b .. k*b + b`` (those beyond the logical ones are padding)."""
    idx = lax.iota(int64, t * bb)
    k, j = lax.div(idx, np.int64(bb)), lax.rem(idx, np.int64(bb))
    src = lax.add(lax.mul(k, lax.broadcast_in_dim(_i64(b), (t * bb,), ())), j)
    return _take(x, axis, src)


def _compact(y, axis: int, b, bb: int, length: int):
    """The inverse of ``_spread``: ``length`` rows, logical ones first."""
    idx = lax.iota(int64, length)
    b1 = lax.max(_i64(b), np.int64(1))
    b1 = lax.broadcast_in_dim(b1, (length,), ())
    src = lax.add(lax.mul(lax.div(idx, b1), np.int64(bb)), lax.rem(idx, b1))
    return _take(y, axis, src)


def _ceil_div(n, t: int):
    """``ceil(n / t)`` of a logical size (an int or a traced i64 scalar)."""
    return lax.div(lax.add(_i64(n), np.int64(t - 1)), np.int64(t))


def dynamic_splits(eqn):
    """Per body input ``m`` and dim ``d`` of it that is a dynamic dimension split in ``t > 1``
    blocks: ``(m, d, t, names, whole, at, length)``, ``whole`` the dim split (of the operand),
    ``at`` the body input that is the block length and ``length`` the operand giving it (both
    None when the block length is not an input of the body)."""
    p = eqn.params
    body, mesh = p["body"], p["mesh"]
    positions = {id(v): m for m, v in enumerate(body.invars)}
    out = []
    for m, (i, spec) in enumerate(zip(p["body_inputs"], p["in_specs"])):
        for d, (whole, block) in enumerate(zip(eqn.invars[i].aval.shape, body.invars[m].aval.shape)):
            t = block_count(spec, d, mesh)
            if t == 1 or isinstance(whole, int):
                continue
            at = positions.get(id(block)) if isinstance(block, Var) else None
            length = eqn.invars[p["body_inputs"][at]] if at is not None else None
            out.append((m, d, t, spec._names(d), whole, at, length))
    return out


def length_hints(eqn):
    """``bound_hint_rules`` of ``shard_map``: a block length operand is bounded by the longest
    block, ``ceil(bound(n) / t)``."""
    return [(length, lambda ctx, whole=whole, t=t: -(-ctx.bound(whole) // t))
            for _, _, t, _, whole, _, length in dynamic_splits(eqn) if length is not None]


def pad_shard_map(ctx: Context, eqn, *ops):
    """The padding rule of ``shard_map``: the same equation when every shape is static; else
    a per-device padded one (see the module docstring), or, when its body cannot be
    padded per device, its whole-array program padded."""
    static = all(isinstance(d, int) for a in eqn.invars for d in a.aval.shape) and \
        all(isinstance(d, int) for v in eqn.outvars for d in v.aval.shape)
    if static:
        return eqn.primitive.bind(*ops, **eqn.params)
    try:
        return _per_device(ctx, eqn, ops)
    except NotPaddable as e:
        per_device = e
    whole = eqn.params["jaxpr"]
    try:
        return _nested(ctx, eqn, 0, whole, list(ops), [[(k, k) for k in range(len(whole.invars))]])
    except NotPaddable:   # the body's reason says more than the whole-array program's reshapes
        raise NotPaddable(f"the shard_map's body: {per_device}") from None


def _device_lengths(n, t: int):
    """The ``t`` block lengths of ``n`` rows cut in blocks of ``ceil(n / t)`` (the last ones
    shorter or empty), an int64 vector."""
    big = _ceil_div(n, t)
    k = lax.iota(int64, t)
    rest = lax.sub(lax.broadcast_in_dim(_i64(n), (t,), ()), lax.mul(k, lax.broadcast_in_dim(big, (t,), ())))
    return lax.max(lax.min(rest, lax.broadcast_in_dim(big, (t,), ())), lax.broadcast_in_dim(np.int64(0), (t,), ()))


def _per_device(ctx: Context, eqn, ops) -> List[Any]:
    from ..parallel.shard_map import bind_shard_map
    from ..parallel.sharding import PartitionSpec
    p = eqn.params
    body, mesh = p["body"], p["mesh"]
    leaves = [ops[i] for i in p["body_inputs"]]
    lengths = {}      # body input m of a block length -> (its split's mesh axes, its lengths vector)
    bounds = {}       # body input m of a block length -> the bound of the longest block
    for m, d, t, names, whole, at, length in dynamic_splits(eqn):
        if length is None:
            raise NotPaddable("a shard_map block length that is not an input of its body")
        bb = ctx.bound(length)
        if bb * t < ctx.bound(whole):
            raise NotPaddable("a shard_map block length bounded below its longest block")
        leaves[m] = _spread(leaves[m], d, t, _ceil_div(ctx.size(whole), t), bb)
        if at not in lengths:
            lengths[at] = (names, _device_lengths(ctx.size(whole), t))
            bounds[at] = bb
    sub = Context()
    sub.running = ctx.running
    for m, i in enumerate(p["body_inputs"]):
        lo_hi = ctx.interval(eqn.invars[i])
        if lo_hi != (None, None):
            sub.intervals[id(body.invars[m])] = lo_hi
    for at, bb in bounds.items():
        sub.intervals[id(body.invars[at])] = (0, bb)
    at_length = list(lengths)
    nleaf = len(leaves)

    def padded_body(*xs):
        vals = list(xs[:nleaf])
        for at, own in zip(at_length, xs[nleaf:]):     # this device's block length
            vals[at] = lax.convert_element_type(lax.reshape(own, ()), body.invars[at].aval.dtype)
        return interpret(sub, body, [], vals)
    specs = list(p["in_specs"]) + [PartitionSpec(names) for names, _ in lengths.values()]
    outs = bind_shard_map(padded_body, leaves + [vec for _, vec in lengths.values()], specs, mesh, p["mapped"],
                          lambda _: list(p["out_specs"]), check_replication=not lengths)
    results = []
    for y, w, spec in zip(outs, eqn.outvars, p["out_specs"]):
        for d, whole in enumerate(w.aval.shape):     # t blocks of the bound bb, b logical rows each
            t = block_count(spec, d, mesh)
            if t > 1 and not isinstance(whole, int):
                y = _compact(y, d, _ceil_div(ctx.size(whole), t), lax_shape(y)[d] // t, ctx.bound(whole))
        results.append(y)
    return results


def _gather_rule(ctx: Context, eqn, x):
    p = eqn.params
    dim = eqn.invars[0].aval.shape[p["axis"]] if p["tiled"] else 0
    out = _same(ctx, eqn, x)
    if isinstance(dim, int):
        return out
    bb = lax_shape(x)[p["axis"]]
    return _compact(out, p["axis"], ctx.size(dim), bb, ctx.bound(eqn.outvars[0].aval.shape[p["axis"]]))


def _scatter_rule(ctx: Context, eqn, x):
    """Along a dynamic axis: the operand laid out per device first (block ``k`` of the
    result's bound holding the ``b`` logical rows device ``k`` keeps), then scattered."""
    d = eqn.params["scatter_dimension"]
    out = eqn.outvars[0].aval.shape[d]
    if isinstance(eqn.invars[0].aval.shape[d], int):
        return _same(ctx, eqn, x)
    x = _spread(x, d, eqn.params["axis_size"], ctx.size(out), ctx.bound(out))
    return _same(ctx, eqn, x)


def _all_to_all_rule(ctx: Context, eqn, x):
    """A dynamic split axis laid out per device first (chunk ``j``, for device ``j``, holds
    its logical rows first), a dynamic concat axis compacted after (each device receives
    padded chunks)."""
    p = eqn.params
    s, c, n = p["split_axis"], p["concat_axis"], p["axis_size"]
    shape, out = eqn.invars[0].aval.shape, eqn.outvars[0].aval.shape
    if isinstance(shape[s], int) and isinstance(shape[c], int):
        return _same(ctx, eqn, x)
    if s == c:      # chunks of the same axis exchanged: b = length / n rows each
        b = lax.div(_i64(ctx.size(shape[s])), np.int64(n))
        bb = -(-lax_shape(x)[s] // n)
        y = _same(ctx, eqn, _spread(x, s, n, b, bb))
        return _compact(y, s, b, bb, ctx.bound(out[s]))
    if not isinstance(shape[s], int):
        x = _spread(x, s, n, ctx.size(out[s]), ctx.bound(out[s]))
    y = _same(ctx, eqn, x)
    if isinstance(shape[c], int):
        return y
    return _compact(y, c, ctx.size(shape[c]), lax_shape(x)[c], ctx.bound(out[c]))


for _p in (psum_p, pmax_p, pmin_p, ppermute_p, axis_index_p):
    padding_rules[_p] = _same
padding_rules[all_gather_p] = _gather_rule
padding_rules[psum_scatter_p] = _scatter_rule
padding_rules[all_to_all_p] = _all_to_all_rule
