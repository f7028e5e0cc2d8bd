"""Lowering of the collectives (``dynjax.lax.collectives``) in a per-device program.

Inside the body of a ``shard_map`` lowered as the per-device program of a partitioned
program (``ctx.manual``, see ``lowering/manual.py``), a collective over a mesh axis becomes
StableHLO's: ``psum`` / ``pmax`` / ``pmin`` an ``all_reduce`` (its reduction region adds,
takes the max or the min), ``all_gather`` an ``all_gather``, ``psum_scatter`` a
``reduce_scatter``, ``all_to_all`` an ``all_to_all``, ``ppermute`` a ``collective_permute``
and ``axis_index`` a lookup of ``partition_id`` in the table of the devices' coordinates.
Each runs over the lines of devices along its axis (``replica_groups``; over a tuple of
axes, ONE collective whose groups are the devices differing only in those axes), on its own
channel, with global device ids (partition ids: XLA's convention for SPMD programs).

Anywhere else a collective has lost the axis that binds it (a ``vmap`` interprets its own
before anything is lowered): a LoweringError naming the axis.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from ..lax.collectives import (COLLECTIVES, all_gather_p, all_to_all_p, axis_index_p, pmax_p, pmin_p,
                               ppermute_p, psum_p, psum_scatter_p)
from .core import LoweringError, register_lowering
from .rules import _BOOL, _scalar_type


def _manual(ctx, eqn):
    manual = ctx.manual
    name = eqn.params["axis_name"]
    if manual is None or not manual.binds(name):
        raise LoweringError(f"{eqn.primitive.name} over the axis {name!r} outside the vmap or shard_map "
                            "that binds it: collectives compile only as part of vmap(axis_name=...) or "
                            "of a shard_map over that mesh axis")
    return manual, name


# booleans: pmax is any, pmin all (psum never sees them: lax.psum counts them as int32)
_COMBINE = {psum_p: (hlo.AddOp, hlo.OrOp), pmax_p: (hlo.MaxOp, hlo.OrOp), pmin_p: (hlo.MinOp, hlo.AndOp)}


def _region(op, x, combine):
    st = _scalar_type(x)
    block = op.regions[0].blocks.append(st, st)
    with ir.InsertionPoint(block):
        hlo.ReturnOp([combine(*block.arguments).result])


def _combiner(prim, eqn):
    arith, boolean = _COMBINE[prim]
    return boolean if np.dtype(eqn.invars[0].aval.dtype) == _BOOL else arith


def _reduce_rule(prim):
    def rule(ctx, eqn, x, *, axis_name, axis_size):
        manual, name = _manual(ctx, eqn)
        op = hlo.AllReduceOp([x.type], [x], manual.replica_groups(name), channel_handle=manual.channel(),
                             use_global_device_ids=True)
        _region(op, x, _combiner(prim, eqn))
        return op.results[0]
    register_lowering(prim, rule)


for _p in (psum_p, pmax_p, pmin_p):
    _reduce_rule(_p)


@register_lowering(all_gather_p)
def _all_gather(ctx, eqn, x, *, axis_name, axis_size, axis, tiled):
    manual, name = _manual(ctx, eqn)
    if not tiled:   # a new axis of length one, gathered
        shape = list(eqn.invars[0].aval.shape)
        x = ctx.reshape(x, shape[:axis] + [1] + shape[axis:])
    op = hlo.AllGatherOp([ctx.ir_type(eqn.outvars[0].aval)], [x], axis, manual.replica_groups(name),
                         channel_handle=manual.channel(), use_global_device_ids=True)
    return op.results[0]


@register_lowering(psum_scatter_p)
def _psum_scatter(ctx, eqn, x, *, axis_name, axis_size, scatter_dimension, tiled):
    manual, name = _manual(ctx, eqn)
    d = scatter_dimension
    shape = list(eqn.invars[0].aval.shape)
    block = shape[:d] + [shape[d] // manual.size(name)] + shape[d + 1:]
    op = hlo.ReduceScatterOp(ctx.tensor_type(block, eqn.invars[0].aval.dtype), x, d, manual.replica_groups(name),
                             channel_handle=manual.channel(), use_global_device_ids=True)
    _region(op, x, _combiner(psum_p, eqn))
    out = op.results[0]
    return out if tiled else ctx.reshape(out, list(eqn.outvars[0].aval.shape))


@register_lowering(all_to_all_p)
def _all_to_all(ctx, eqn, x, *, axis_name, axis_size, split_axis, concat_axis, tiled):
    manual, name = _manual(ctx, eqn)
    n = manual.size(name)
    if tiled:
        return hlo.AllToAllOp([x], split_axis, concat_axis, n, manual.replica_groups(name),
                              channel_handle=manual.channel(),
                              results=[ctx.ir_type(eqn.outvars[0].aval)]).results[0]
    # the split axis (of length n) exchanged in place: member k's position j then holds
    # member j's block k; that axis moves to concat_axis
    y = hlo.AllToAllOp([x], split_axis, split_axis, n, manual.replica_groups(name),
                       channel_handle=manual.channel(), results=[x.type]).results[0]
    rank = len(eqn.invars[0].aval.shape)
    order = [a for a in range(rank) if a != split_axis]
    order.insert(concat_axis, split_axis)
    return hlo.TransposeOp(y, order).result if order != list(range(rank)) else y


@register_lowering(ppermute_p)
def _ppermute(ctx, eqn, x, *, axis_name, axis_size, perm):
    manual, name = _manual(ctx, eqn)
    return hlo.CollectivePermuteOp(x, manual.pairs(name, perm), channel_handle=manual.channel(),
                                   results=[x.type]).results[0]


@register_lowering(axis_index_p)
def _axis_index(ctx, eqn, *, axis_name, axis_size):
    manual, name = _manual(ctx, eqn)
    table = ctx.constant(manual.coordinates(name), np.int32)
    pid = hlo.PartitionIdOp().result                      # tensor<ui32>
    pid = ctx.convert(pid, np.int64)
    entry = hlo.DynamicSliceOp(table, [pid], [1]).result
    return ctx.reshape(entry, [])


_HANDLED = {psum_p, pmax_p, pmin_p, all_gather_p, psum_scatter_p, all_to_all_p, ppermute_p, axis_index_p}
assert _HANDLED == set(COLLECTIVES)
