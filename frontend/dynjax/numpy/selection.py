"""Selections whose size depends on the data: ``nonzero``, masks, ``unique`` ...

A boolean mask keeps a number of elements known only at run time. Here that number is
computed as a traced integer (``sum(mask)``) and becomes the dim of the result: the rest
of the program uses it like any other dynamic size (compiled, it is bounded by the mask's
length, so the program runs padded to that bound as one executable; see
``execution/program.py``). With ``size=`` the
result has that static length instead, padded with ``fill_value`` (JAX's convention).
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import int64
from ..core.trace import Tracer, typeof
from ..lax.api import canonicalize_dim


def _flat_positions(flat, length):
    """The positions of the ``True`` elements of the 1-d bool ``flat``, in order, as an int64
    array of ``length`` (later ones are dropped, missing ones are 0)."""
    from .creation import arange, zeros
    from .reductions import cumsum
    ones = flat.astype(np.int64) if isinstance(flat, Tracer) else np.asarray(flat, np.int64)
    pos = cumsum(ones) - 1
    end = lax.convert_element_type(length, int64) if isinstance(length, Tracer) else np.int64(length)
    target = lax.select(flat, pos, lax.broadcast_in_dim(end, typeof(pos).shape, ()))
    ids = arange(typeof(flat).shape[0], dtype=np.int64)
    rows = lax.broadcast_in_dim(target, tuple(typeof(target).shape) + (1,), (0,))
    return lax.scatter(zeros(length, np.int64), rows, ids, (0,), "set")


def _unravel(flat_idx, shape):
    """Flat (row-major) positions as one coordinate array per axis of ``shape``."""
    coords = []
    stride = 1
    strides = []
    for d in reversed(shape[1:]):
        strides.append(stride)
        stride = d * stride if not isinstance(stride, int) or not isinstance(d, int) else stride * d
    strides.append(stride)
    strides.reverse()
    for j, (st, d) in enumerate(zip(strides, shape)):
        c = flat_idx
        if not (isinstance(st, int) and st == 1):
            c = lax.div(c, _i64(st))
        if j > 0:
            c = lax.rem(c, _i64(d))
        coords.append(c)
    return coords


def _i64(d):
    if isinstance(d, Tracer):
        return d if d.aval.dtype == int64 else lax.convert_element_type(d, int64)
    return np.int64(d)


def _truth(a):
    from .creation import asarray
    a = asarray(a)
    return a if typeof(a).dtype == np.bool_ else a != 0


def count_true(mask):
    """The number of ``True`` elements of a bool array as an int64 scalar (traced or not)."""
    from .reductions import sum as _sum
    return _sum(mask.astype(np.int64) if isinstance(mask, Tracer) else np.asarray(mask, np.int64))


def nonzero(a, *, size=None, fill_value=None):
    """The indices of the non-zero elements, one int64 array per axis (numpy's ``nonzero``).

    Their length is the number of non-zero elements, a run-time size; with ``size=`` it is
    ``size`` instead (extra elements dropped, missing ones ``fill_value``, 0 by default; a
    tuple gives one fill value per axis)."""
    from .shape_ops import ravel
    mask = _truth(a)
    ma = typeof(mask)
    if ma.ndim == 0:
        raise ValueError("nonzero of a 0-d array is not allowed; use jnp.atleast_1d(a).nonzero()")
    flat = ravel(mask)
    count = count_true(flat)
    length = canonicalize_dim(count, "number of non-zero elements") if size is None else \
        canonicalize_dim(size, "size")
    coords = _unravel(_flat_positions(flat, length), ma.shape)
    if size is None:
        return tuple(coords)
    fills = fill_value if isinstance(fill_value, (tuple, list)) else [fill_value] * ma.ndim
    if len(fills) != ma.ndim:
        raise ValueError(f"fill_value needs one value per axis ({ma.ndim}), got {len(fills)}")
    from .creation import arange
    valid = lax.lt(arange(length, dtype=np.int64), _i64(count))
    return tuple(c if f is None else lax.select(valid, c, lax.broadcast_in_dim(np.int64(f), typeof(c).shape, ()))
                 for c, f in zip(coords, fills))


def flatnonzero(a, *, size=None, fill_value=None):
    """The indices of the non-zero elements of ``ravel(a)``."""
    from .shape_ops import ravel
    return nonzero(ravel(_truth(a)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """The indices of the non-zero elements as rows: shape ``(count, a.ndim)``."""
    from .creation import asarray
    from .shape_ops import stack
    a = asarray(a)
    if typeof(a).ndim == 0:
        a = lax.broadcast_in_dim(a, (1,), ())
        return stack(nonzero(a, size=size, fill_value=fill_value), axis=1)[:, :0]
    return stack(nonzero(a, size=size, fill_value=fill_value), axis=1)


def compress(condition, a, axis=None, *, size=None, fill_value=0):
    """The slices of ``a`` along ``axis`` where the 1-d ``condition`` holds (numpy's
    ``compress``); a condition shorter than the axis counts as False beyond its end."""
    from .creation import asarray
    from .shape_ops import ravel
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    aa = typeof(a)
    axis = _axis(axis, aa.ndim)
    cond = _truth(condition)
    ca = typeof(cond)
    if ca.ndim != 1:
        raise ValueError(f"condition must be a 1-d array, got {ca.str_short()}")
    n, m = aa.shape[axis], ca.shape[0]
    if isinstance(n, int) and isinstance(m, int):
        if m > n:
            raise IndexError(f"condition of length {m} is longer than axis {axis} of length {n}")
    elif not _same(m, n):
        cond = cond[:n]   # numpy: an error if a True lies beyond the axis; here it is ignored
    idx = nonzero(cond, size=size, fill_value=None)[0]
    out = take(a, idx, axis=axis, mode="clip")
    if size is not None:
        valid = lax.lt(_arange(typeof(idx).shape[0]), _i64(count_true(cond)))
        oa = typeof(out)
        shape_valid = lax.broadcast_in_dim(valid, oa.shape, (axis,))
        out = lax.select(shape_valid, out, lax.broadcast_in_dim(np.asarray(fill_value, oa.dtype), oa.shape, ()))
    return out


def extract(condition, arr, *, size=None, fill_value=0):
    """The elements of ``ravel(arr)`` where ``ravel(condition)`` holds."""
    from .creation import asarray
    from .shape_ops import ravel
    return compress(ravel(_truth(condition)), ravel(asarray(arr)), size=size, fill_value=fill_value)


def _arange(n):
    from .creation import arange
    return arange(n, dtype=np.int64)


def _same(a, b):
    from ..core.avals import same_dim
    return same_dim(a, b)


def _axis(axis, ndim):
    axis = int(axis)
    if not -ndim <= axis < max(ndim, 1):
        raise ValueError(f"axis {axis} is out of bounds for an array of dimension {ndim}")
    return axis % max(ndim, 1)


# ----------------------------------------------------------------------------------------------
# take, take_along_axis, put
# ----------------------------------------------------------------------------------------------
def _prepare_indices(indices, n, axis, mode):
    from .creation import asarray
    from .indexing import _int_array
    from .ufuncs import mod
    idx = asarray(indices)
    if not np.issubdtype(typeof(idx).dtype, np.integer):
        raise TypeError(f"indices must be integers, got {typeof(idx).str_short()}")
    idx = idx.astype(np.int64) if isinstance(idx, Tracer) else np.asarray(idx, np.int64)
    if mode == "wrap":
        return mod(idx, _i64(n))
    if mode == "clip":   # numpy: clipping disables negative indices (-1 reads the first element)
        return idx
    return _int_array(idx, n, axis)


def take(a, indices, axis=None, mode=None, fill_value=None):
    """Elements (or slices along ``axis``) of ``a`` at integer ``indices`` (numpy's ``take``).

    ``mode``: ``"fill"`` (the default, as in JAX: out-of-range indices give ``fill_value``,
    NaN for inexact types), ``"clip"``, ``"wrap"`` or ``"promise_in_bounds"``."""
    from .creation import asarray
    from .indexing import _check_mode, _place, gather_rows
    from .shape_ops import ravel
    _check_mode(mode, ("fill", "clip", "wrap", "promise_in_bounds", "raise"))
    if mode == "raise":
        raise NotImplementedError("take(mode='raise') needs the index values at trace time; use "
                                  "mode='fill', 'clip' or 'wrap'")
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    aa = typeof(a)
    axis = _axis(axis, aa.ndim)
    n = aa.shape[axis]
    idx = _prepare_indices(indices, n, axis, mode)
    rows = lax.broadcast_in_dim(idx, tuple(typeof(idx).shape) + (1,), tuple(range(typeof(idx).ndim)))
    out = gather_rows(a, rows, (axis,), "clip" if mode in ("clip", "wrap", "promise_in_bounds") else "fill",
                      fill_value)
    return _place(out, typeof(idx).ndim, [axis], aa.ndim)


def take_along_axis(arr, indices, axis, mode=None, fill_value=None):
    """``arr`` read along ``axis`` at ``indices`` of the same rank (other axes broadcast), as
    numpy's ``take_along_axis``; ``mode`` as in ``take``."""
    from ._promote import broadcast_shapes, broadcast_to_shape
    from .creation import asarray
    from .indexing import _check_mode, gather_rows
    from .shape_ops import ravel, stack
    _check_mode(mode, ("fill", "clip", "wrap", "promise_in_bounds"))
    arr = asarray(arr)
    idx = asarray(indices)
    if axis is None:
        arr, axis = ravel(arr), 0
    aa, ia = typeof(arr), typeof(idx)
    if ia.ndim != aa.ndim:
        raise ValueError(f"indices must have the rank of arr ({aa.ndim}), got {ia.ndim}")
    axis = _axis(axis, aa.ndim)
    base = list(aa.shape)
    base[axis] = ia.shape[axis]
    shape = broadcast_shapes(tuple(base), tuple(ia.shape))
    idx = broadcast_to_shape(_prepare_indices(idx, aa.shape[axis], axis, mode), shape)
    cols = []
    for j in range(aa.ndim):
        if j == axis:
            cols.append(idx)
        elif isinstance(aa.shape[j], int) and aa.shape[j] == 1:
            cols.append(lax.broadcast_in_dim(np.int64(0), shape, ()))
        else:
            cols.append(lax.broadcasted_iota(np.int64, shape, j))
    if all(not isinstance(c, Tracer) for c in cols):
        rows = np.stack([np.asarray(c) for c in cols], axis=-1)
    else:
        rows = stack(cols, axis=-1)
    return gather_rows(arr, rows, tuple(range(aa.ndim)),
                       "clip" if mode in ("clip", "wrap", "promise_in_bounds") else "fill", fill_value)


def put(a, ind, v, mode=None, *, inplace=True):
    """``a`` with ``ravel(a)[ind] = v`` (numpy's ``put``, functional: pass ``inplace=False``).
    ``v`` is repeated when shorter than ``ind``; ``mode``: ``"drop"`` (default), ``"clip"``,
    ``"wrap"``."""
    from .creation import asarray
    from .indexing import update
    from .shape_ops import ravel, reshape
    if inplace:
        raise ValueError("dynjax arrays are immutable: call put(a, ind, v, inplace=False), which "
                         "returns the updated array")
    a = asarray(a)
    aa = typeof(a)
    flat = ravel(a)
    n = typeof(flat).shape[0]
    if mode not in (None, "drop", "clip", "wrap"):
        raise ValueError(f"mode must be 'drop', 'clip' or 'wrap', got {mode!r}")
    idx = ravel(_prepare_indices(ind, n, 0, "wrap" if mode == "wrap" else None))
    vals = ravel(asarray(v))
    m = typeof(idx).shape[0]
    if not _same(typeof(vals).shape[0], m):
        vals = take(vals, _arange(m), mode="wrap")
    out = update(flat, idx, vals, "set", "clip" if mode == "clip" else None)
    return reshape(out, aa.shape)


# ----------------------------------------------------------------------------------------------
# unique
# ----------------------------------------------------------------------------------------------
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None):
    """The sorted distinct elements of ``ar`` (numpy's ``unique`` over the flattened array),
    optionally with the index of each one's first occurrence, the inverse map and the counts.
    Their number is known at run time (a dynamic dim), or ``size`` (padded with
    ``fill_value``, by default the smallest element; counts of padding are 0)."""
    from .creation import arange, asarray, zeros
    from .reductions import cumsum
    from .shape_ops import ravel, reshape, roll
    from .ufuncs import isnan
    if axis is not None:
        raise NotImplementedError("unique(axis=...) is not supported; it works on the flattened array")
    a = asarray(ar)
    shape = typeof(a).shape
    flat = ravel(a)
    n = typeof(flat).shape[0]
    ids = arange(n, dtype=np.int64)
    s, perm = lax.sort((flat, ids), num_keys=1)      # stable: equal values keep their order
    prev = roll(s, 1)
    first = lax.eq(ids, np.int64(0))
    new = lax.bitwise_or(first, lax.ne(s, prev))
    from ..core.avals import is_inexact_dtype
    if equal_nan and is_inexact_dtype(typeof(s).dtype):   # bfloat16 too
        new = lax.bitwise_and(new, lax.bitwise_not(lax.bitwise_and(
            lax.bitwise_not(first), lax.bitwise_and(isnan(s), isnan(prev)))))
    count = count_true(new)
    length = canonicalize_dim(count, "number of unique elements") if size is None else canonicalize_dim(size, "size")
    starts = _flat_positions(new, length)
    rows = lax.broadcast_in_dim(starts, (length, 1), (0,))
    values = lax.gather(s, rows, (0,))
    if size is not None and fill_value is not None:
        valid = lax.lt(arange(length, dtype=np.int64), _i64(count))
        values = lax.select(valid, values, lax.broadcast_in_dim(np.asarray(fill_value, typeof(values).dtype),
                                                               (length,), ()))
    out = [values]
    if return_index:
        out.append(lax.gather(perm, rows, (0,)))
    group = cumsum(new.astype(np.int64) if isinstance(new, Tracer) else np.asarray(new, np.int64)) - 1
    if return_inverse:
        inverse = lax.scatter(zeros(n, np.int64), lax.broadcast_in_dim(perm, (n, 1), (0,)), group, (0,), "set")
        out.append(reshape(inverse, shape) if len(shape) != 1 else inverse)
    if return_counts:
        grows = lax.broadcast_in_dim(group, (n, 1), (0,))
        out.append(lax.scatter(zeros(length, np.int64), grows, lax.broadcast_in_dim(np.int64(1), (n,), ()),
                               (0,), "add"))
    return out[0] if len(out) == 1 else tuple(out)


def unique_values(x):
    """The sorted distinct elements (the array API's ``unique_values``)."""
    return unique(x)


def unique_counts(x):
    """``(values, counts)`` of the distinct elements."""
    return unique(x, return_counts=True)


def unique_inverse(x):
    """``(values, inverse)``: the distinct elements and, for each element, its value's index."""
    return unique(x, return_inverse=True)


def unique_all(x):
    """``(values, indices, inverse_indices, counts)``."""
    return unique(x, return_index=True, return_inverse=True, return_counts=True)


# ----------------------------------------------------------------------------------------------
# Sorted search and counting
# ----------------------------------------------------------------------------------------------
def _sort_less(a, b):
    """``a < b`` in numpy's sort order (NaN last; complex numbers lexicographically)."""
    from ..core.avals import is_complex_dtype, is_float_dtype
    from .ufuncs import imag, isnan, real
    dt = typeof(a).dtype
    if is_complex_dtype(dt):
        ra, rb, ia, ib = real(a), real(b), imag(a), imag(b)
        return lax.bitwise_or(_sort_less(ra, rb), lax.bitwise_and(lax.eq(ra, rb), _sort_less(ia, ib)))
    if is_float_dtype(dt):
        return lax.bitwise_or(lax.lt(a, b), lax.bitwise_and(isnan(b), lax.bitwise_not(isnan(a))))
    return lax.lt(a, b)


def searchsorted(a, v, side="left", sorter=None, *, method=None):
    """Where the elements of ``v`` would go in the sorted 1-d ``a`` to keep it sorted (numpy's
    ``searchsorted``; a vectorized binary search, ``ceil(log2(len(a) + 1))`` steps)."""
    from ._promote import promote
    from .creation import asarray, full, zeros
    from .reductions import any as _any
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    a = asarray(a)
    if typeof(a).ndim != 1:
        raise ValueError(f"a must be a 1-d array, got {typeof(a).str_short()}")
    if sorter is not None:
        a = take(a, sorter, mode="clip")
    a, v = promote(a, asarray(v))
    n = typeof(a).shape[0]
    vs = typeof(v).shape
    lo, hi = zeros(vs, np.int64), full(vs, _i64(n), np.int64)
    rows_shape = tuple(vs) + (1,)
    keep = tuple(range(len(vs)))

    def cond(state):
        lo, hi = state
        return _any(lax.lt(lo, hi))

    def step(state):
        lo, hi = state
        active = lax.lt(lo, hi)
        mid = lax.div(lax.add(lo, hi), np.int64(2))
        am = lax.gather(a, lax.broadcast_in_dim(mid, rows_shape, keep), (0,))
        right = _sort_less(am, v) if side == "left" else lax.bitwise_not(_sort_less(v, am))
        lo = lax.select(lax.bitwise_and(active, right), lax.add(mid, np.int64(1)), lo)
        hi = lax.select(lax.bitwise_and(active, lax.bitwise_not(right)), mid, hi)
        return lo, hi
    lo, _ = lax.while_loop(cond, step, (lo, hi))
    return lo


def digitize(x, bins, right=False):
    """The index of the bin each element of ``x`` falls in (numpy's ``digitize``); ``bins`` is
    1-d and monotonic, increasing or decreasing (checked eagerly; traced, a non-monotonic
    ``bins`` is read as increasing)."""
    from .creation import asarray
    from .reductions import any as _any, cumsum
    bins = asarray(bins)
    if typeof(bins).ndim != 1:
        raise ValueError("bins must be a 1-d array")
    side = "left" if right else "right"
    n = typeof(bins).shape[0]
    # numpy's rule: the first pair of unequal neighbours says which way the bins go
    later, earlier = bins[1:], bins[:-1]
    unequal = lax.ne(later, earlier)
    first = lax.eq(cumsum(unequal.astype(np.int64) if isinstance(unequal, Tracer)
                          else np.asarray(unequal, np.int64)), np.int64(1))
    first = lax.bitwise_and(first, unequal)
    decreasing = _any(lax.bitwise_and(lax.bitwise_not(lax.lt(earlier, later)), first))
    if not isinstance(bins, Tracer):   # numpy's check, with its NaN comparisons
        b = np.asarray(bins)
        with np.errstate(invalid="ignore"):
            rises, falls = b[:-1] < b[1:], b[:-1] > b[1:]
        if np.any(rises if bool(decreasing) else falls):
            raise ValueError("bins must be monotonically increasing or decreasing")
    up = searchsorted(bins, x, side=side)
    down = lax.sub(_i64(n), searchsorted(lax.rev(bins, [0]), x, side=side))
    return lax.select(lax.broadcast_in_dim(decreasing, typeof(up).shape, ()), down, up)


def bincount(x, weights=None, minlength=0, *, length=None):
    """The number of occurrences of each value in the non-negative integer array ``x`` (or the
    sum of ``weights`` there), numpy's ``bincount``. The result's length is
    ``max(max(x) + 1, minlength)``, a run-time size, unless ``length=`` gives it (larger values
    are then dropped, as in JAX). Traced, negative values are dropped (numpy raises)."""
    from .creation import asarray, zeros
    from .reductions import max as _max
    x = asarray(x)
    xa = typeof(x)
    if xa.ndim != 1:
        raise ValueError(f"x must be a 1-d array, got {xa.str_short()}")
    if not (np.issubdtype(xa.dtype, np.integer) or xa.dtype == np.bool_):
        raise TypeError(f"x must hold integers, got {xa.str_short()}")
    x = x.astype(np.int64) if isinstance(x, Tracer) else np.asarray(x, np.int64)
    if not isinstance(x, Tracer) and x.size and x.min() < 0:
        raise ValueError("x must hold non-negative integers")
    minlength = int(minlength)
    if minlength < 0:
        raise ValueError("minlength must be non-negative")
    if length is None:
        from .shape_ops import concatenate
        top = _max(concatenate([x, np.array([-1], np.int64)])) + 1
        length = canonicalize_dim(lax.max(_i64(top), np.int64(minlength)), "bincount length")
    else:
        length = canonicalize_dim(length, "length")
    n = typeof(x).shape[0]
    if weights is None:
        w, dt = lax.broadcast_in_dim(np.int64(1), (n,), ()), np.int64
    else:
        w = asarray(weights)
        dt = np.complex128 if np.issubdtype(typeof(w).dtype, np.complexfloating) else np.float64
        w = w.astype(dt) if isinstance(w, Tracer) else np.asarray(w, dt)
    rows = lax.broadcast_in_dim(x, (n, 1), (0,))
    return lax.scatter(zeros(length, dt), rows, w, (0,), "add")


def histogram(a, bins=10, range=None, weights=None, density=None):
    """numpy's ``histogram``: ``(counts, edges)``; ``bins`` an int (equal bins over ``range``,
    by default the data's range) or the edges. Values outside the edges are not counted; the
    last bin includes its right edge."""
    from ..core.avals import is_float_dtype
    from .creation import asarray, linspace, zeros
    from .reductions import max as _max, min as _min, sum as _sum
    from .shape_ops import diff, ravel
    a = ravel(asarray(a))
    if typeof(a).dtype.kind == "c":   # numpy compares complex edges lexicographically: refused
        raise TypeError(f"histogram needs real numbers, got {typeof(a).str_short()}")
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        if bins < 1:
            raise ValueError("bins must be a positive integer")
        if range is not None:
            lo, hi = range
            if not isinstance(lo, Tracer) and not isinstance(hi, Tracer) and lo > hi:
                raise ValueError("max must be larger than min in range parameter")
        n = typeof(a).shape[0]
        dt = typeof(a).dtype if is_float_dtype(typeof(a).dtype) else np.dtype(np.float64)
        a = a.astype(dt)
        if range is not None:
            lo, hi = asarray(lo).astype(dt), asarray(hi).astype(dt)
        elif isinstance(n, int) and n == 0:
            lo, hi = np.asarray(0.0, dt), np.asarray(1.0, dt)
        else:   # the data's range; (0, 1) when there is no data
            lo, hi = _min(a).astype(dt), _max(a).astype(dt)
            if not isinstance(lo, Tracer) and not (np.isfinite(lo) and np.isfinite(hi)):
                raise ValueError(f"autodetected range of [{lo}, {hi}] is not finite")
            if not isinstance(n, int):
                empty = lax.eq(_i64(n), np.int64(0))
                lo = lax.select(empty, np.asarray(0.0, dt), lo)
                hi = lax.select(empty, np.asarray(1.0, dt), hi)
        same = lax.eq(lo, hi)
        lo = lax.select(same, lax.sub(lo, np.asarray(0.5, dt)), lo)
        hi = lax.select(same, lax.add(hi, np.asarray(0.5, dt)), hi)
        edges = linspace(lo, hi, int(bins) + 1)
    else:
        edges = asarray(bins)
        if typeof(edges).ndim != 1:
            raise ValueError("bins must be an integer or a 1-d array of edges")
    nb = canonicalize_dim(typeof(edges).shape[0] - 1 if isinstance(typeof(edges).shape[0], int)
                          else lax.sub(typeof(edges).shape[0], np.int64(1)), "number of bins")
    last = edges[-1]
    idx = lax.sub(searchsorted(edges, a, side="right"), np.int64(1))
    idx = lax.select(lax.eq(a, _b(last, typeof(a).shape)), lax.sub(idx, np.int64(1)), idx)
    inside = lax.bitwise_and(lax.ge(a, edges[0]), lax.le(a, last))
    n = typeof(a).shape[0]
    idx = lax.select(inside, idx, lax.broadcast_in_dim(np.int64(-1), (n,), ()))
    if weights is None:
        w = lax.broadcast_in_dim(np.int64(1), (n,), ())
    else:
        w = ravel(asarray(weights))
    rows = lax.broadcast_in_dim(idx, (n, 1), (0,))
    counts = lax.scatter(zeros(nb, typeof(w).dtype), rows, w, (0,), "add")
    if density:
        widths = diff(edges)
        from .ufuncs import true_divide
        counts = true_divide(true_divide(counts, widths), _sum(counts))
    return counts, edges


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of the points ``(xp, fp)`` at ``x`` (numpy's ``interp``;
    ``xp`` increasing, or any order with ``period``)."""
    from .creation import asarray
    from .shape_ops import concatenate
    from .ufuncs import imag, real, remainder
    x, xp, fp = asarray(x), asarray(xp), asarray(fp)
    if typeof(xp).ndim != 1 or typeof(fp).ndim != 1:
        raise ValueError("xp and fp must be 1-d sequences")
    if isinstance(typeof(xp).shape[0], int) and typeof(xp).shape[0] == 0:
        raise ValueError("array of sample points is empty")
    if np.issubdtype(typeof(fp).dtype, np.complexfloating):
        re = interp(x, xp, real(fp), None if left is None else np.real(left),
                    None if right is None else np.real(right), period)
        im = interp(x, xp, imag(fp), None if left is None else np.imag(left),
                    None if right is None else np.imag(right), period)
        return lax.complex(re, im)
    for name, v in (("x", x), ("xp", xp)):
        if typeof(v).dtype.kind == "c":
            raise TypeError(f"interp: {name} must be real, got {typeof(v).str_short()}")
    dt = np.dtype(np.float64)   # numpy interpolates in double precision
    x, xp, fp = (v.astype(dt) if isinstance(v, Tracer) else np.asarray(v, dt) for v in (x, xp, fp))
    if period is not None:
        if period == 0:
            raise ValueError("period must be a non-zero value")
        period = abs(period)
        left = right = None
        x, xp = remainder(x, period), remainder(xp, period)
        xp, fp = lax.sort((xp, fp), num_keys=1)
        xp = concatenate([xp[-1:] - period, xp, xp[0:1] + period])
        fp = concatenate([fp[-1:], fp, fp[0:1]])
    n = typeof(xp).shape[0]
    if isinstance(n, int) and n == 1:   # numpy: one point is its value, whatever x (NaN too)
        shape = typeof(x).shape
        lv = _b(fp[0], shape) if left is None else _b(np.asarray(left, dt), shape)
        rv = _b(fp[0], shape) if right is None else _b(np.asarray(right, dt), shape)
        res = lax.select(lax.lt(x, _b(xp[0], shape)), lv, _b(fp[0], shape))
        return lax.select(lax.gt(x, _b(xp[0], shape)), rv, res)
    j = lax.sub(searchsorted(xp, x, side="right"), np.int64(1))
    hi_j = lax.max(lax.sub(_i64(n), np.int64(2)), np.int64(0))
    j = lax.max(lax.min(j, hi_j), np.int64(0))
    j1 = lax.min(lax.add(j, np.int64(1)), lax.sub(_i64(n), np.int64(1)))
    shape = typeof(x).shape

    def at(v, k):
        return lax.gather(v, lax.broadcast_in_dim(k, tuple(shape) + (1,), tuple(range(len(shape)))), (0,))
    x0, x1, f0, f1 = at(xp, j), at(xp, j1), at(fp, j), at(fp, j1)
    slope = lax.div(lax.sub(f1, f0), lax.sub(x1, x0))
    res = lax.add(lax.mul(slope, lax.sub(x, x0)), f0)
    # numpy's fix-ups: an infinite slope (or 0 * inf) is retried from the right end, then
    # a flat segment gives its value
    from .ufuncs import isnan
    res = lax.select(isnan(res), lax.add(lax.mul(slope, lax.sub(x, x1)), f1), res)
    res = lax.select(lax.bitwise_and(isnan(res), lax.eq(f0, f1)), f0, res)
    res = lax.select(lax.eq(x, x0), f0, res)
    last_x, last_f = xp[-1], fp[-1]
    res = lax.select(lax.eq(x, _b(last_x, shape)), _b(last_f, shape), res)
    lv = _b(fp[0], shape) if left is None else _b(np.asarray(left, dt), shape)
    rv = _b(last_f, shape) if right is None else _b(np.asarray(right, dt), shape)
    res = lax.select(lax.lt(x, _b(xp[0], shape)), lv, res)
    res = lax.select(lax.gt(x, _b(last_x, shape)), rv, res)
    res = lax.select(isnan(x), x, res)
    if not isinstance(n, int):   # one sample point (see above), known at run time
        one = lax.eq(_i64(n), np.int64(1))
        single = lax.select(lax.lt(x, _b(xp[0], shape)), lv,
                            lax.select(lax.gt(x, _b(xp[0], shape)), rv, _b(fp[0], shape)))
        res = lax.select(_b(one, shape), single, res)
    return res


def _b(v, shape):
    """A scalar broadcast to ``shape``."""
    return lax.broadcast_in_dim(v, tuple(shape), ()) if shape else v
