"""Padding rules of slicing and placement: ``rev``, ``dynamic_slice``,
``dynamic_update_slice``, ``concatenate``, ``gather`` and ``scatter`` (see ``padding``).

Each keeps the padded interpretation's invariant, the logical elements first along every
dynamic axis: reversed elements are shifted back to the front, slice starts are clamped with
the logical sizes, an update writes only its logical part, each piece of a concatenation is
placed at its logical offset, gathers clamp into the logical range and scatters drop rows
that are out of range or padding.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..lax import primitives as P
from ..core.avals import int64
from .padding import _i64, _out_shape, _resize_axis, _same, lax_shape, padding_rules


def _rev(ctx, eqn, x):
    """Reversed, the logical elements end the axis: shift them back to its start."""
    a = eqn.invars[0].aval
    x = _same(ctx, eqn, x)
    for ax in eqn.params["dimensions"]:
        d = a.shape[ax]
        if ctx.is_dynamic(d):
            B = ctx.bound(d)
            x = _window(x, ax, lax.sub(np.int64(B), _i64(ctx.size(d))), B)
    return x


def _known_zero(x) -> bool:
    """Whether ``x`` is 0 at trace time (a number, or a tracer staged as an inline literal)."""
    from ..core.trace import Tracer
    if isinstance(x, Tracer):
        lit = getattr(x, "literal", None)
        return lit is not None and int(lit.val) == 0
    return int(x) == 0


def _window(x, axis, start, length):
    """``length`` elements of ``x`` from ``start`` along ``axis``, for any ``start`` in
    ``[0, len]``."""
    nd = len(lax_shape(x))
    starts = [np.int64(0)] * nd
    starts[axis] = start
    shape = list(lax_shape(x))
    shape[axis] = length
    return _read(x, starts, shape, [ax == axis for ax in range(nd)])


padding_rules[P.rev_p] = _rev


# --- slicing and placement ------------------------------------------------------------------
def _clamped_starts(ctx, a, starts, sizes):
    """The start indices XLA would use: clamped into ``[0, n - size]`` (logical sizes)."""
    out = []
    for d, s, size in zip(a.shape, starts, sizes):
        hi = lax.max(lax.sub(_i64(ctx.size(d)), _i64(size)), np.int64(0))
        out.append(lax.min(lax.max(_i64(s), np.int64(0)), hi))
    return out


def _dynamic_slice(ctx, eqn, x, *operands):
    a, out = eqn.invars[0].aval, eqn.outvars[0].aval
    n = a.ndim
    starts = _clamped_starts(ctx, a, operands[:n], [ctx.size(d) for d in out.shape])
    dynamic = [ctx.is_dynamic(a.shape[ax]) or ctx.is_dynamic(out.shape[ax]) for ax in range(n)]
    return _read(x, starts, _out_shape(ctx, eqn), dynamic)


def _read(x, starts, shape, dynamic):
    """The window of static ``shape`` of ``x`` at the (logical) ``starts``, in O(window):
    XLA moves a start back when the window would pass the buffer's end, so along the
    ``dynamic`` axes the window is read from the moved start and shifted back by the
    difference."""
    for ax, length in enumerate(shape):   # a window longer than the buffer: extend it
        if lax_shape(x)[ax] < length:
            x = _resize_axis(x, ax, length)
    moved = [lax.min(_i64(s), np.int64(lax_shape(x)[ax] - shape[ax])) if dynamic[ax] else s
             for ax, s in enumerate(starts)]
    w = lax.api.dynamic_slice(x, moved, tuple(shape))
    # a start moved back along an axis of window length 1 holds no logical element there
    dynamic = [d and shape[ax] > 1 for ax, d in enumerate(dynamic)]
    if not any(dynamic):
        return w
    back = [lax.sub(_i64(s), m) if dynamic[ax] else np.int64(0) for ax, (s, m) in enumerate(zip(starts, moved))]
    if all(_known_zero(b) for b in back):   # the start is known never to move
        return w
    for ax, d in enumerate(dynamic):
        if d:
            w = _resize_axis(w, ax, 2 * shape[ax])
    return lax.api.dynamic_slice(w, back, tuple(shape))


padding_rules[P.dynamic_slice_p] = _dynamic_slice


def _dynamic_update_slice(ctx, eqn, x, update, *starts):
    """Write only the update's logical elements: the window it lands on is read first and
    kept where the update is padding."""
    a, u = eqn.invars[0].aval, eqn.invars[1].aval
    starts = _clamped_starts(ctx, a, starts, [ctx.size(d) for d in u.shape])
    ushape = tuple(lax_shape(update))
    shape = tuple(lax_shape(x))
    grown = x
    for ax in range(a.ndim):
        grown = _resize_axis(grown, ax, shape[ax] + ushape[ax])
    window = lax.api.dynamic_slice(grown, starts, ushape)
    keep = None
    for ax, d in enumerate(u.shape):
        if ctx.is_dynamic(d):
            m = ctx.valid(ushape, ax, ctx.size(d))
            keep = m if keep is None else lax.bitwise_and(keep, m)
    merged = update if keep is None else lax.select(keep, update, window)
    grown = lax.api.dynamic_update_slice(grown, merged, starts)
    return lax.slice(grown, (0,) * a.ndim, shape)


padding_rules[P.dynamic_update_slice_p] = _dynamic_update_slice


def _concatenate(ctx, eqn, *operands):
    """Along a dynamic result axis: each piece written at its logical offset, in order, so
    that the next piece overwrites the previous one's padding."""
    k = eqn.params["num_operands"]
    dim = eqn.params["dimension"]
    xs = operands[:k]
    out = eqn.outvars[0].aval
    if not ctx.is_dynamic(out.shape[dim]):
        return lax.concatenate(list(xs), dim)
    shape = list(_out_shape(ctx, eqn))
    if lax_shape(xs[0])[dim] == shape[dim] and all(lax_shape(x)[dim] <= shape[dim] for x in xs[1:]):
        # the first piece's buffer has room for the result: write the others into it at
        # their offsets (in place: appending to a buffer in a loop costs O(piece))
        buf = xs[0]
        offset = _i64(ctx.size(eqn.invars[0].aval.shape[dim]))
        for x, v in zip(xs[1:], eqn.invars[1:k]):
            m = ctx.size(v.aval.shape[dim])
            buf = _write(ctx, buf, x, dim, offset, m)
            offset = lax.add(offset, _i64(m))
        return buf
    total = sum(lax_shape(x)[dim] for x in xs)
    buf_shape = list(shape)
    buf_shape[dim] = max(total, shape[dim])
    from ..core.trace import typeof
    buf = lax.broadcast_in_dim(np.zeros((), typeof(xs[0]).dtype), tuple(buf_shape), ())
    offset = np.int64(0)
    for x, v in zip(xs, eqn.invars[:k]):
        starts = [np.int64(0)] * len(shape)
        starts[dim] = offset
        buf = lax.api.dynamic_update_slice(buf, x, starts)
        offset = lax.add(_i64(offset), _i64(ctx.size(v.aval.shape[dim])))
    return _resize_axis(buf, dim, shape[dim])


padding_rules[P.concatenate_p] = _concatenate


def _write(ctx, buf, piece, axis, offset, m):
    """``buf`` with the first ``m`` elements of ``piece`` (along ``axis``) written at
    ``offset``, where ``offset + m`` fits the buffer, in O(piece): the write lands at a start
    XLA does not move, the piece shifted to match, the rest of the window kept."""
    P = lax_shape(piece)[axis]
    nd = len(lax_shape(buf))
    start = lax.min(_i64(offset), np.int64(lax_shape(buf)[axis] - P))
    shift = lax.sub(_i64(offset), start)
    starts = [np.int64(0)] * nd
    starts[axis] = start
    window = lax.api.dynamic_slice(buf, starts, tuple(lax_shape(piece)))
    if P == 1:   # a single element: written at its offset unless it is padding
        keep = lax.broadcast_in_dim(lax.gt(_i64(m), np.int64(0)), tuple(lax_shape(piece)), ())
        return lax.api.dynamic_update_slice(buf, lax.select(keep, piece, window), starts)
    from ..core.trace import typeof
    cfg = [(0, 0, 0)] * nd
    cfg[axis] = (P, 0, 0)
    ext = lax.pad(piece, np.zeros((), typeof(piece).dtype), tuple(cfg))   # P free slots to its left
    from_ = [np.int64(0)] * nd
    from_[axis] = lax.sub(np.int64(P), shift)
    moved = lax.api.dynamic_slice(ext, from_, tuple(lax_shape(piece)))
    shape = tuple(lax_shape(piece))
    idx = lax.broadcasted_iota(int64, shape, axis)
    lo = lax.broadcast_in_dim(shift, shape, ())
    hi = lax.broadcast_in_dim(lax.add(shift, _i64(m)), shape, ())
    keep = lax.bitwise_and(lax.ge(idx, lo), lax.lt(idx, hi))
    return lax.api.dynamic_update_slice(buf, lax.select(keep, moved, window), starts)


# --- gather and scatter ---------------------------------------------------------------------
def _column(rows, j):
    shape = tuple(lax_shape(rows))
    return lax.slice(rows, (0,) * (len(shape) - 1) + (j,), shape[:-1] + (j + 1,))


def _gather(ctx, eqn, x, rows):
    """Indices clamped into the logical sizes (the gather itself would clamp into the padded
    ones); an indexed axis that is logically empty reads zeros."""
    a = eqn.invars[0].aval
    axes = eqn.params["axes"]
    rows = lax.convert_element_type(rows, int64)
    cols, nonempty = [], None
    for j, ax in enumerate(axes):
        col = _column(rows, j)
        d = a.shape[ax]
        if ctx.is_dynamic(d):
            n = _i64(ctx.size(d))
            shape = tuple(lax_shape(col))
            hi = lax.broadcast_in_dim(lax.max(lax.sub(n, np.int64(1)), np.int64(0)), shape, ())
            col = lax.min(lax.max(col, lax.broadcast_in_dim(np.int64(0), shape, ())), hi)
            ne = lax.gt(n, np.int64(0))
            nonempty = ne if nonempty is None else lax.bitwise_and(nonempty, ne)
        cols.append(col)
    rows = lax.concatenate(cols, len(lax_shape(rows)) - 1) if len(cols) > 1 else cols[0]
    out = P.gather_p.bind(x, rows, **eqn.params)
    if nonempty is None:
        return out
    shape = tuple(lax_shape(out))
    zero = lax.broadcast_in_dim(np.zeros((), typeof_dtype(out)), shape, ())
    return lax.select(lax.broadcast_in_dim(nonempty, shape, ()), out, zero)


def typeof_dtype(x):
    from ..core.trace import typeof
    return typeof(x).dtype


padding_rules[P.gather_p] = _gather


def _scatter(ctx, eqn, x, rows, updates):
    """Rows out of the logical range, and rows that are padding, get an index past the padded
    axis: scatter drops them."""
    a, ia = eqn.invars[0].aval, eqn.invars[1].aval
    axes = eqn.params["axes"]
    rows = lax.convert_element_type(rows, int64)
    shape = tuple(lax_shape(rows))
    col_shape = shape[:-1] + (1,)
    drop = lax.broadcast_in_dim(np.bool_(False), col_shape, ())
    for j, ax in enumerate(axes):
        col = _column(rows, j)
        n = lax.broadcast_in_dim(_i64(ctx.size(a.shape[ax])), col_shape, ())
        bad = lax.bitwise_or(lax.lt(col, lax.broadcast_in_dim(np.int64(0), col_shape, ())), lax.ge(col, n))
        drop = lax.bitwise_or(drop, bad)
    for ax, d in enumerate(ia.shape[:-1]):   # rows in the padding of the index array
        if ctx.is_dynamic(d):
            drop = lax.bitwise_or(drop, lax.bitwise_not(ctx.valid(col_shape, ax, ctx.size(d))))
    past = max(ctx.bound(a.shape[ax]) for ax in axes) + 1
    far = lax.broadcast_in_dim(np.int64(past), shape, ())
    rows = lax.select(lax.broadcast_in_dim(drop, shape, tuple(range(len(shape)))), far, rows)
    return P.scatter_p.bind(x, rows, updates, **eqn.params)


padding_rules[P.scatter_p] = _scatter
