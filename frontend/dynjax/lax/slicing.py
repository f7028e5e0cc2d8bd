"""JAX's general ``gather`` and ``scatter`` (``GatherDimensionNumbers``,
``ScatterDimensionNumbers``, ``GatherScatterMode``), written on dynjax's ``gather`` /
``scatter`` primitives.

dynjax's primitives index whole axes with one row of indices per element (``gather[axes] x
rows``: ``rows`` of shape ``B + (k,)`` give the result ``B`` + the other axes of ``x``). JAX's
form takes a *slice* of ``slice_sizes`` at each start index. The translation gives every
operand axis that is indexed, batched, or sliced to less than its whole size one column of
the rows: the (clamped) start plus an ``iota`` over the window for indexed axes, the batch
position for batching axes, an ``iota`` for partial windows; axes taken whole stay whole. The
primitives' result (``B`` + window + whole axes) is then squeezed (collapsed axes) and
transposed into JAX's layout (``offset_dims``). Scatter does the reverse to the updates.
Derivatives and batching come from the primitives' rules.

Modes: ``clip`` clamps each start so the slice fits; ``fill`` (``FILL_OR_DROP``, the
default) makes gathers of a slice that does not fit return ``fill_value`` and drops such
scatter windows; ``promise_in_bounds`` clamps gathers and drops out-of-range scatter
elements. dynjax's own call forms stay available: ``gather(x, rows, axes)`` and
``scatter(x, rows, updates, axes, kind)`` (an ``axes`` tuple of ints in place of dimension
numbers).
"""
from __future__ import annotations

import enum
from typing import Callable, NamedTuple, Sequence

import numpy as np

from ..core.avals import bool_, int64, is_integer_dtype, same_dim
from ..core.trace import typeof
from . import api
from . import primitives as P
from .base import dim_str

__all__ = ["GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode", "gather",
           "scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max",
           "scatter_apply"]


class GatherDimensionNumbers(NamedTuple):
    """How ``gather`` maps indices to slices (``jax.lax.GatherDimensionNumbers``)."""
    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
    """How ``scatter`` maps indices and updates to windows (``jax.lax.ScatterDimensionNumbers``)."""
    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()


class GatherScatterMode(enum.Enum):
    """Out-of-bounds behaviour of ``gather`` / ``scatter``."""
    CLIP = 0
    FILL_OR_DROP = 1
    PROMISE_IN_BOUNDS = 2
    ONE_HOT = 3

    @staticmethod
    def from_any(s):
        if isinstance(s, GatherScatterMode):
            return s
        if s is None:
            return GatherScatterMode.FILL_OR_DROP
        names = {"clip": GatherScatterMode.CLIP, "fill": GatherScatterMode.FILL_OR_DROP,
                 "drop": GatherScatterMode.FILL_OR_DROP,
                 "promise_in_bounds": GatherScatterMode.PROMISE_IN_BOUNDS,
                 "one_hot": GatherScatterMode.ONE_HOT}
        if isinstance(s, str) and s in names:
            return names[s]
        raise ValueError(f"Unknown gather mode {s!r}")


def _ints(name, v):
    try:
        return tuple(int(d) for d in v)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of ints, got {v!r}") from None


def _check_dims(op, name, dims, rank, sorted_=True):
    for d in dims:
        if not 0 <= d < rank:
            raise TypeError(f"{op}: {name} {dims} has an entry out of range for rank {rank}")
    if len(set(dims)) != len(dims):
        raise TypeError(f"{op}: {name} {dims} has repeated entries")
    if sorted_ and list(dims) != sorted(dims):
        raise TypeError(f"{op}: {name} {dims} must be sorted")


def _check_indices(op, ia):
    if not is_integer_dtype(ia.dtype):
        raise TypeError(f"{op}: indices must have an integer type, got {ia.str_short()}")
    if ia.ndim < 1:
        raise TypeError(f"{op}: indices must have at least one axis (the index vector), got a scalar")
    if not isinstance(ia.shape[-1], int):
        raise TypeError(f"{op}: the index vector axis (the last) must have a static size, got "
                        f"{ia.str_short()}")


def _column(indices, p):
    """Column ``p`` of the last axis of ``indices``, as int64 of shape ``indices.shape[:-1]``."""
    ia = typeof(indices)
    nb = ia.ndim - 1
    starts = [0] * ia.ndim
    starts[-1] = p
    limits = [d if isinstance(d, int) else None for d in ia.shape]
    limits[-1] = p + 1
    col = api.squeeze(api.slice(indices, starts, limits), (nb,))
    return api.convert_element_type(col, int64)


def _as_i64(d):
    return np.int64(d) if isinstance(d, int) else api.convert_element_type(d, int64)


def _rows(op, operand_shape, indices, index_map, obatch, ibatch, windows, mode):
    """The index rows (shape ``B + W + (len(ix),)``), the indexed axes ``ix``, and whether each
    member of the batch ``B`` has its slice in bounds (None when not needed)."""
    ia = typeof(indices)
    batch = tuple(ia.shape[:-1])
    nb = len(batch)
    r = len(operand_shape)
    ix = [d for d in range(r) if d in index_map or d in obatch or not same_dim(windows[d], operand_shape[d])]
    full_shape = batch + tuple(windows[d] for d in ix)
    cols, ok = [], None
    for j, d in enumerate(ix):
        if d in index_map:
            s = _column(indices, index_map.index(d))
            hi = P.sub_p.bind(_as_i64(operand_shape[d]), _as_i64(windows[d]))
            if mode == GatherScatterMode.FILL_OR_DROP:
                fits = P.and_p.bind(P.ge_p.bind(s, np.int64(0)), P.le_p.bind(s, hi))
                ok = fits if ok is None else P.and_p.bind(ok, fits)
            if mode != GatherScatterMode.PROMISE_IN_BOUNDS or op == "gather":
                s = P.max_p.bind(P.min_p.bind(s, hi), np.int64(0))
            start = api.broadcast_in_dim(s, full_shape, tuple(range(nb)))
            col = P.add_p.bind(start, api.broadcasted_iota(int64, full_shape, nb + j))
        elif d in obatch:
            col = api.broadcasted_iota(int64, full_shape, ibatch[obatch.index(d)])
        else:
            col = api.broadcasted_iota(int64, full_shape, nb + j)
        cols.append(api.broadcast_in_dim(col, full_shape + (1,), tuple(range(len(full_shape)))))
    if not cols:
        rows = api.broadcast_in_dim(np.zeros((), np.int64), full_shape + (0,), ())
    else:
        rows = cols[0] if len(cols) == 1 else api.concatenate(cols, len(full_shape))
    return rows, ix, ok


def _fill_value(dtype, fill_value):
    if fill_value is not None:
        return np.asarray(fill_value).astype(dtype)
    dt = np.dtype(dtype)
    if dt == bool_:
        return np.asarray(True)
    if dt.kind in "fc" or dt.name == "bfloat16":
        return np.asarray(np.nan).astype(dt)
    info = np.iinfo(dt)
    return np.asarray(info.min if dt.kind == "i" else info.max, dt)


def _check_batching(op, a, ia, obatch, ibatch, windows=None):
    if len(obatch) != len(ibatch):
        raise TypeError(f"{op}: operand_batching_dims {obatch} and the indices' batching dims "
                        f"{ibatch} must have the same length")
    _check_dims(op, "operand_batching_dims", obatch, a.ndim)
    _check_dims(op, "the indices' batching dims", ibatch, ia.ndim - 1, sorted_=False)
    for d, i in zip(obatch, ibatch):
        if not same_dim(a.shape[d], ia.shape[i]):
            raise TypeError(f"{op}: batching axis {d} of the operand (size {dim_str(a.shape[d])}) and "
                            f"axis {i} of the indices (size {dim_str(ia.shape[i])}) differ")


def gather(operand, start_indices, dimension_numbers=None, slice_sizes=None, *,
           indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None):
    """XLA's gather with JAX's signature (``jax.lax.gather``); ``gather(x, rows, axes)`` with
    an ``axes`` tuple of ints is dynjax's own form (``lax/api.py``)."""
    if not isinstance(dimension_numbers, GatherDimensionNumbers):
        if slice_sizes is None and isinstance(dimension_numbers, (tuple, list)):
            return api.gather(operand, start_indices, dimension_numbers)
        raise TypeError(f"gather: dimension_numbers must be a GatherDimensionNumbers, got "
                        f"{type(dimension_numbers).__name__}")
    # JAX's gather clamps by default (scatter drops)
    mode = GatherScatterMode.CLIP if mode is None else GatherScatterMode.from_any(mode)
    a, ia = typeof(operand), typeof(start_indices)
    _check_indices("gather", ia)
    dn = dimension_numbers
    offset, collapsed, index_map = (_ints("offset_dims", dn.offset_dims),
                                    _ints("collapsed_slice_dims", dn.collapsed_slice_dims),
                                    _ints("start_index_map", dn.start_index_map))
    obatch, ibatch = _ints("operand_batching_dims", dn.operand_batching_dims), \
        _ints("start_indices_batching_dims", dn.start_indices_batching_dims)
    if slice_sizes is None:
        raise TypeError("gather: slice_sizes is required")
    sizes = tuple(api.canonicalize_dim(s, "slice size") for s in api.shape_entries(slice_sizes))
    if len(sizes) != a.ndim:
        raise TypeError(f"gather: slice_sizes must have one entry per operand axis ({a.ndim}), got "
                        f"{len(sizes)}")
    if len(index_map) != ia.shape[-1]:
        raise TypeError(f"Gather op has {len(index_map)} elements in start_index_map and the bound "
                        f"of the index vector dimension of start_indices is {ia.shape[-1]}. These two "
                        "numbers must be equal.")
    _check_dims("gather", "start_index_map", index_map, a.ndim, sorted_=False)
    _check_dims("gather", "collapsed_slice_dims", collapsed, a.ndim)
    _check_batching("gather", a, ia, obatch, ibatch)
    for d in collapsed + obatch:
        if not (isinstance(sizes[d], int) and sizes[d] == 1):
            raise TypeError(f"Gather op can only collapse slice dims with bound 1, but bound is "
                            f"{dim_str(sizes[d])} for index {d} at position {d}.")
    if set(collapsed) & set(obatch):
        raise TypeError(f"gather: collapsed_slice_dims {collapsed} and operand_batching_dims "
                        f"{obatch} must be disjoint")
    for d, (s, n) in enumerate(zip(sizes, a.shape)):
        if d not in obatch and isinstance(s, int) and isinstance(n, int) and s > n:
            raise TypeError(f"Slice size at index {d} in gather op is out of range, must be within "
                            f"[0, {n} + 1), got {s}.")
    nb = ia.ndim - 1
    out_rank = nb + a.ndim - len(collapsed) - len(obatch)
    if len(offset) != a.ndim - len(collapsed) - len(obatch):
        raise TypeError(f"gather: offset_dims {offset} must have one entry per operand axis that is "
                        f"neither collapsed nor batched ({a.ndim - len(collapsed) - len(obatch)})")
    _check_dims("gather", "offset_dims", offset, out_rank)

    rows, ix, ok = _rows("gather", a.shape, start_indices, index_map, obatch, ibatch, sizes, mode)
    g = api.gather(operand, rows, ix)
    drop = [nb + j for j, d in enumerate(ix) if d in collapsed or d in obatch]
    if drop:
        g = api.squeeze(g, drop)
    rest = [d for d in range(a.ndim) if d not in ix]
    kept = [d for d in ix if d not in collapsed and d not in obatch]
    axis_of = {d: nb + k for k, d in enumerate(kept + rest)}
    od = sorted(kept + rest)
    perm, bi = [], iter(range(nb))
    for o in range(out_rank):
        perm.append(axis_of[od[offset.index(o)]] if o in offset else next(bi))
    out = api.transpose(g, perm) if perm != list(range(out_rank)) else g
    if ok is not None:
        oa = typeof(out)
        batch_pos = [o for o in range(out_rank) if o not in offset]
        okb = api.broadcast_in_dim(ok, oa.shape, batch_pos)
        fill = api.broadcast_in_dim(_fill_value(a.dtype, fill_value), oa.shape, ())
        out = P.select_n_p.bind(okb, fill, out)
    return out


def _scatter(kind, operand, scatter_indices, updates, dimension_numbers, mode):
    mode = GatherScatterMode.from_any(mode)
    a, ia, ua = typeof(operand), typeof(scatter_indices), typeof(updates)
    op = "scatter" if kind == "set" else f"scatter_{kind}"
    if not isinstance(dimension_numbers, ScatterDimensionNumbers):
        raise TypeError(f"{op}: dimension_numbers must be a ScatterDimensionNumbers, got "
                        f"{type(dimension_numbers).__name__}")
    _check_indices(op, ia)
    if ua.dtype != a.dtype:
        raise TypeError(f"{op}: the updates' dtype {ua.dtype.name} differs from the operand's "
                        f"{a.dtype.name}")
    dn = dimension_numbers
    uwin, inserted, index_map = (_ints("update_window_dims", dn.update_window_dims),
                                 _ints("inserted_window_dims", dn.inserted_window_dims),
                                 _ints("scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims))
    obatch, ibatch = _ints("operand_batching_dims", dn.operand_batching_dims), \
        _ints("scatter_indices_batching_dims", dn.scatter_indices_batching_dims)
    if len(index_map) != ia.shape[-1]:
        raise TypeError(f"Scatter op has {len(index_map)} elements in scatter_dims_to_operand_dims and "
                        f"the bound of the index vector dimension of scatter_indices is {ia.shape[-1]}. "
                        "These two numbers must be equal.")
    _check_dims(op, "scatter_dims_to_operand_dims", index_map, a.ndim, sorted_=False)
    _check_dims(op, "inserted_window_dims", inserted, a.ndim)
    _check_dims(op, "update_window_dims", uwin, ua.ndim)
    _check_batching(op, a, ia, obatch, ibatch)
    wdims = [d for d in range(a.ndim) if d not in inserted and d not in obatch]
    if len(uwin) != len(wdims):
        raise TypeError(f"{op}: update_window_dims {uwin} must have one entry per operand axis that "
                        f"is neither inserted nor batched ({len(wdims)})")
    nb = ia.ndim - 1
    scatter_pos = [i for i in range(ua.ndim) if i not in uwin]
    batch = tuple(ia.shape[:-1])
    if len(scatter_pos) != nb or not all(same_dim(ua.shape[i], b) for i, b in zip(scatter_pos, batch)):
        raise TypeError(f"{op}: the updates' scatter axes {[dim_str(ua.shape[i]) for i in scatter_pos]} "
                        f"must match the indices' batch axes {[dim_str(b) for b in batch]}")
    windows = [1] * a.ndim
    for k, d in enumerate(wdims):
        windows[d] = ua.shape[uwin[k]]
        w, n = windows[d], a.shape[d]
        if isinstance(w, int) and isinstance(n, int) and w > n:
            raise TypeError(f"{op}: the update window of size {w} exceeds axis {d} of the operand "
                            f"(size {n})")
    rows, ix, ok = _rows(op, a.shape, scatter_indices, index_map, obatch, ibatch, windows, mode)
    if ok is not None:
        rs = typeof(rows).shape
        okb = api.broadcast_in_dim(ok, rs, tuple(range(nb)))
        rows = P.select_n_p.bind(okb, api.broadcast_in_dim(np.int64(-1), rs, ()), rows)
    # updates: scatter axes first, then every operand axis in order (size 1 where inserted or
    # batched), then the indexed ones before the whole ones
    u = api.transpose(updates, scatter_pos + list(uwin))
    full = batch + tuple(windows)
    u = api.broadcast_in_dim(u, full, tuple(range(nb)) + tuple(nb + d for d in wdims))
    rest = [d for d in range(a.ndim) if d not in ix]
    order = list(range(nb)) + [nb + d for d in ix] + [nb + d for d in rest]
    if order != list(range(len(order))):
        u = api.transpose(u, order)
    return api.scatter(operand, rows, u, ix, kind)


def scatter(operand, scatter_indices, updates, dimension_numbers, *args, indices_are_sorted=False,
            unique_indices=False, mode=None):
    """XLA's scatter (the updates replace the operand's elements) with JAX's signature;
    ``scatter(x, rows, updates, axes, kind)`` with an ``axes`` tuple of ints is dynjax's own
    form (``lax/api.py``)."""
    if not isinstance(dimension_numbers, ScatterDimensionNumbers) and isinstance(dimension_numbers, (tuple, list)):
        return api.scatter(operand, scatter_indices, updates, dimension_numbers, *args)
    if args:
        raise TypeError("scatter takes 4 positional arguments")
    return _scatter("set", operand, scatter_indices, updates, dimension_numbers, mode)


def _combining(kind, doc):
    def fn(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
           unique_indices=False, mode=None):
        return _scatter(kind, operand, scatter_indices, updates, dimension_numbers, mode)
    fn.__name__ = f"scatter_{kind}"
    fn.__doc__ = doc
    return fn


scatter_add = _combining("add", "XLA's scatter adding the updates into the operand (JAX's signature).")
scatter_mul = _combining("mul", "XLA's scatter multiplying the operand by the updates (JAX's signature).")
scatter_min = _combining("min", "XLA's scatter keeping the minimum of operand and updates (JAX's signature).")
scatter_max = _combining("max", "XLA's scatter keeping the maximum of operand and updates (JAX's signature).")


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
                unique_indices=False, mode=None):
    """XLA's scatter subtracting the updates from the operand (JAX's signature)."""
    return _scatter("add", operand, scatter_indices, P.neg_p.bind(updates), dimension_numbers, mode)


def scatter_apply(operand, scatter_indices, func: Callable, dimension_numbers, *,
                  update_shape: Sequence = (), indices_are_sorted=False, unique_indices=False,
                  mode=None):
    """``operand`` with ``func`` applied to the elements the scatter addresses (once each)."""
    a = typeof(operand)
    marks = api.broadcast_in_dim(np.asarray(True), tuple(update_shape), ())
    hit = _scatter("set", api.broadcast_in_dim(np.asarray(False), a.shape, ()), scatter_indices,
                   marks, dimension_numbers, mode)
    return P.select_n_p.bind(hit, operand, func(operand))
