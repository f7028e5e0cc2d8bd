"""Batching rules of the collectives (``dynjax.lax.collectives``): ``vmap(axis_name=...)``
is where they act.

A rule runs in the trace of a ``vmap``. When that vmap binds the collective's axis name, the
members of the batch are the participants and the rule computes the collective across the
batch axis (``psum``: a sum over it; ``all_gather``: the batch axis becomes an axis of every
member's result; ``ppermute``: a gather of members). Otherwise the collective is for an
outer axis: it is applied again, on the batch as a whole (the batch axis moved first, so
that the axis numbers of the operation shift by one), and the outer vmap handles it.
Unbatched operands reach the rules too (``psum(1, "i")`` is the axis size). A collective over
a tuple of names (recorded in a shard_map's body) is interpreted as its sequence of one-name
collectives (``lax.collectives.expand``).
"""
from __future__ import annotations

import numpy as np

from ...core.primitive import batching_rules
from ...core.trace import typeof
from ...lax import api as lax
from ...lax.collectives import (all_gather_p, all_to_all_p, axis_index_p, bind_one, expand, pmax_p, pmin_p,
                                ppermute_p, psum_p, psum_scatter_p)
from . import to_front


def _registered(prim):
    def wrap(rule):
        def dispatch(size, vals, dims, *, trace, axis_name, **params):
            if isinstance(axis_name, tuple):
                return _expanded(prim, vals, dims, trace, axis_name, params)
            return rule(size, vals, dims, trace=trace, axis_name=axis_name, **params)
        dispatch.needs_trace = True
        batching_rules[prim] = dispatch
        return rule
    return wrap


def _expanded(prim, vals, dims, trace, names, params):
    """A collective over a tuple of names (one trace bound them all when it was recorded: a
    shard_map's body; here nested vmaps bind them) is its sequence of one-name collectives,
    each interpreted by the trace of its name, this one included."""
    from . import BatchTracer
    params = {k: v for k, v in params.items() if k != "axis_size"}
    x = BatchTracer(trace, vals[0], dims[0]) if vals else None
    out = trace.full_raise(expand(prim, x, names, **params))
    return out.val, out.bdim


def _count(trace, dtype):
    n = trace.size
    return np.asarray(n, dtype) if isinstance(n, (int, np.integer)) else lax.convert_element_type(n, dtype)


def _shape(x):
    return tuple(typeof(x).shape)


def _elementwise(prim, reduce):
    @_registered(prim)
    def rule(size, vals, dims, *, trace, axis_name, axis_size, **params):
        (x,), (d,) = vals, dims
        if trace.axis_name != axis_name:
            return bind_one(prim, x, axis_name, **params), d
        if d is not None:
            return reduce(x, d), None
        if prim is psum_p:
            return lax.mul(x, _count(trace, typeof(x).dtype)), None
        return x, None
    return rule


def _sum_over(x, d):
    if typeof(x).dtype == np.bool_:   # lax.psum counts booleans as int32 before binding
        raise TypeError("psum_p does not accept booleans (dtype bool): convert them to a number dtype first")
    return lax.reduce_sum(x, (d,))


_elementwise(psum_p, _sum_over)
_elementwise(pmax_p, lambda x, d: lax.reduce_max(x, (d,)))
_elementwise(pmin_p, lambda x, d: lax.reduce_min(x, (d,)))


def _merge(x, axis):
    """``x`` with axes ``axis`` and ``axis + 1`` merged into one (the first major)."""
    shape = _shape(x)
    new = shape[:axis] + (shape[axis] * shape[axis + 1],) + shape[axis + 2:]
    return lax.reshape(x, new)


def _split(x, axis, n):
    """``x`` with axis ``axis`` split in ``(n, length / n)``."""
    shape = _shape(x)
    new = shape[:axis] + (n, shape[axis] // n) + shape[axis + 1:]
    return lax.reshape(x, new)


@_registered(all_gather_p)
def _all_gather(size, vals, dims, *, trace, axis_name, axis_size, axis, tiled):
    (x,), (d,) = vals, dims
    if trace.axis_name != axis_name:
        if d is None:
            return bind_one(all_gather_p, x, axis_name, axis=axis, tiled=tiled), None
        x = to_front(x, d, size)
        return bind_one(all_gather_p, x, axis_name, axis=axis + 1, tiled=tiled), 0
    x = to_front(x, d, size)                  # members first
    order = list(range(1, typeof(x).ndim))
    order.insert(axis, 0)
    out = lax.transpose(x, tuple(order)) if axis else x   # the member axis at ``axis``
    return (_merge(out, axis) if tiled else out), None


@_registered(psum_scatter_p)
def _psum_scatter(size, vals, dims, *, trace, axis_name, axis_size, scatter_dimension, tiled):
    (x,), (d,) = vals, dims
    s = scatter_dimension
    if trace.axis_name != axis_name:
        if d is None:
            return bind_one(psum_scatter_p, x, axis_name, scatter_dimension=s, tiled=tiled), None
        x = to_front(x, d, size)
        return bind_one(psum_scatter_p, x, axis_name, scatter_dimension=s + 1, tiled=tiled), 0
    total, _ = batching_rules[psum_p](size, [x], [d], trace=trace, axis_name=axis_name, axis_size=axis_size)
    # member k keeps block k of the scatter dimension (element k when not tiled): the block
    # index is the batch axis
    return (_split(total, s, trace.size) if tiled else total), s


@_registered(all_to_all_p)
def _all_to_all(size, vals, dims, *, trace, axis_name, axis_size, split_axis, concat_axis, tiled):
    (x,), (d,) = vals, dims
    s, c = split_axis, concat_axis
    if trace.axis_name != axis_name:
        if d is None:
            return bind_one(all_to_all_p, x, axis_name, split_axis=s, concat_axis=c, tiled=tiled), None
        x = to_front(x, d, size)
        return bind_one(all_to_all_p, x, axis_name, split_axis=s + 1, concat_axis=c + 1, tiled=tiled), 0
    x = to_front(x, d, size)                       # [sender, member dims...]
    if tiled:
        x = _split(x, 1 + s, trace.size)           # [sender, ..., receiver, block, ...]
    nd = typeof(x).ndim
    # receiver first, then sender, then the member dims without the receiver axis
    rest = [i for i in range(1, nd) if i != 1 + s]
    x = lax.transpose(x, tuple([1 + s, 0] + rest))
    # the sender axis goes to ``concat_axis`` of the receiver's value
    nd = typeof(x).ndim
    order = [0] + [i for i in range(2, nd)]
    order.insert(1 + c, 1)
    x = lax.transpose(x, tuple(order))
    return (_merge(x, 1 + c) if tiled else x), 0


@_registered(ppermute_p)
def _ppermute(size, vals, dims, *, trace, axis_name, axis_size, perm):
    (x,), (d,) = vals, dims
    if trace.axis_name != axis_name:
        return bind_one(ppermute_p, x, axis_name, perm=perm), d
    from ...numpy import take
    x = to_front(x, d, size)
    member = lax.iota(np.int64, trace.size)
    n = _shape(member)
    source = _full(n, 0, np.int64)
    receives = _full(n, False, np.bool_)
    for src, dst in perm:
        hit = lax.eq(member, np.int64(dst))
        source = lax.select(hit, _full(n, src, np.int64), source)
        receives = lax.bitwise_or(receives, hit)
    moved = take(x, source, axis=0)
    shape = _shape(moved)
    mask = lax.broadcast_in_dim(receives, shape, (0,))
    return lax.select(mask, moved, _full(shape, 0, typeof(moved).dtype)), 0


def _full(shape, value, dtype):
    return lax.broadcast_in_dim(np.asarray(value, dtype), shape, ())


@_registered(axis_index_p)
def _axis_index(size, vals, dims, *, trace, axis_name, axis_size):
    if trace.axis_name != axis_name:
        return bind_one(axis_index_p, None, axis_name), None
    return lax.iota(np.int32, trace.size), 0
