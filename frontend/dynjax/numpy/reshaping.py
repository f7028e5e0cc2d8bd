"""More shape functions of ``jax.numpy``: stacking (``block column_stack dstack concat``),
axis permutations (``permute_dims matrix_transpose rollaxis unstack``), broadcasting
(``broadcast_arrays broadcast_shapes``), ``resize``, ``diagflat``, ``ediff1d`` and
``trim_zeros`` (whose length depends on the data: a run-time dim).
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.trace import Tracer, typeof
from ..lax.api import canonicalize_dim
from ._promote import promote


def _arr(a):
    from .creation import asarray
    return asarray(a)


def concat(arrays, /, *, axis=0):
    """The array API's ``concatenate``; ``axis=None`` concatenates the flattened arrays."""
    from .shape_ops import concatenate, ravel
    arrays = [_arr(a) for a in arrays]
    if axis is None:
        return concatenate([ravel(a) for a in arrays], 0)
    return concatenate(arrays, axis)


def column_stack(tup):
    """1-d arrays become columns; 2-d arrays are concatenated along axis 1."""
    from .shape_ops import concatenate
    cols = []
    for a in tup:
        a = _arr(a)
        if typeof(a).ndim < 2:
            n = typeof(a).shape[0] if typeof(a).ndim == 1 else 1
            a = lax.broadcast_in_dim(a, (n, 1), (0,) if typeof(a).ndim == 1 else ())
        cols.append(a)
    return concatenate(list(promote(*cols)), 1)


def dstack(tup, dtype=None):
    """Stack along the third axis (arrays are made at least 3-d: ``(n,)`` -> ``(1, n, 1)``)."""
    from .shape_ops import atleast_3d, concatenate
    arrays = [atleast_3d(_arr(a)) for a in tup]
    out = concatenate(list(promote(*arrays)), 2)
    return out.astype(dtype) if dtype is not None else out


def _block_depth(x):
    if isinstance(x, list):
        if not x:
            raise ValueError("block: lists cannot be empty")
        depths = {_block_depth(y) for y in x}
        if len(depths) != 1:
            raise ValueError("block: list depths are mismatched")
        return 1 + depths.pop()
    if isinstance(x, tuple):
        raise TypeError("block: tuples are not allowed, use lists")
    return 0


def block(arrays):
    """Assemble an array from nested lists of blocks: the innermost lists are concatenated
    along the last axis, the next ones along the one before, ..."""
    from .shape_ops import concatenate
    depth = _block_depth(arrays)

    def leaves(x):
        return [a for y in x for a in leaves(y)] if isinstance(x, list) else [_arr(x)]
    ndim = max([depth] + [typeof(a).ndim for a in leaves(arrays)])

    def up(a):
        k = typeof(a).ndim
        return a if k == ndim else lax.broadcast_in_dim(a, (1,) * (ndim - k) + tuple(typeof(a).shape),
                                                        tuple(range(ndim - k, ndim)))

    def build(x, level):
        if not isinstance(x, list):
            return up(_arr(x))
        parts = list(promote(*[build(y, level + 1) for y in x]))
        return concatenate(parts, axis=ndim - depth + level)
    return build(arrays, 0) if depth else _arr(arrays)


def permute_dims(a, /, axes):
    """The array API's ``transpose`` (``axes`` required)."""
    from .shape_ops import transpose
    return transpose(_arr(a), tuple(axes))


def matrix_transpose(x, /):
    """Swap the last two axes (the input must be at least 2-d)."""
    from .shape_ops import swapaxes
    x = _arr(x)
    if typeof(x).ndim < 2:
        raise ValueError(f"matrix_transpose: x must be at least 2-dimensional, got {typeof(x).ndim}-d")
    return swapaxes(x, -1, -2)


def rollaxis(a, axis, start=0):
    """Move ``axis`` to the position before ``start`` (numpy's legacy ``rollaxis``)."""
    from .shape_ops import moveaxis
    a = _arr(a)
    n = typeof(a).ndim
    axis, start = int(axis), int(start)
    if not -n <= axis < n:
        raise ValueError(f"rollaxis: axis {axis} is out of bounds for an array of dimension {n}")
    if not -n <= start <= n:
        raise ValueError(f"rollaxis: start {start} is out of bounds for an array of dimension {n}")
    axis %= n
    start = start % n if start < 0 else start
    if start > axis:
        start -= 1
    return moveaxis(a, axis, start) if axis != start else a


def unstack(x, /, *, axis=0):
    """The slices of ``x`` along ``axis`` as a tuple (the axis must have a static length)."""
    from .selection import take
    x = _arr(x)
    if typeof(x).ndim == 0:
        raise ValueError("unstack needs an array of at least one dimension")
    n = typeof(x).shape[int(axis)]
    if not isinstance(n, int):
        raise TypeError("unstack: the number of results is the length of the axis, which is dynamic here; "
                        "slice it with x[i] (a traced i) or use lax.fori_loop/scan instead")
    return tuple(take(x, np.int64(i), axis=axis) for i in range(n))


def broadcast_arrays(*args):
    """The arguments broadcast to their common shape (dtypes unchanged), as a list."""
    from ._promote import broadcast_arrays as _b
    return list(_b(*[_arr(a) for a in args]))


def broadcast_shapes(*shapes):
    """The common shape that ``shapes`` broadcast to (dims may be traced)."""
    from ._promote import broadcast_shapes as _b
    shapes = [(s,) if isinstance(s, (int, np.integer, Tracer)) else tuple(s) for s in shapes]
    out = _b(*[tuple(int(d) if isinstance(d, np.integer) else d for d in s) for s in shapes])
    return out


def resize(a, new_shape):
    """``a``'s elements repeated cyclically into ``new_shape`` (zeros when ``a`` is empty)."""
    from .creation import arange, zeros
    from .reductions import size as _size
    from .selection import take
    from .shape_ops import ravel, reshape
    a = _arr(a)
    if isinstance(new_shape, (int, np.integer, Tracer)):
        new_shape = (new_shape,)
    shape = tuple(canonicalize_dim(d, "new_shape") for d in new_shape)
    total = 1
    for d in shape:
        total = total * d if isinstance(total, int) and isinstance(d, int) else lax.mul(
            lax.convert_element_type(total, np.int64) if isinstance(total, Tracer) else np.int64(total),
            lax.convert_element_type(d, np.int64) if isinstance(d, Tracer) else np.int64(d))
    flat = ravel(a)
    n = _size(flat)
    if isinstance(n, int) and n == 0:
        return zeros(shape, typeof(a).dtype)
    idx = arange(total, dtype=np.int64)
    if not (isinstance(n, int) and n == 1):
        idx = lax.rem(idx, lax.convert_element_type(n, np.int64) if isinstance(n, Tracer) else np.int64(n))
    return reshape(take(flat, idx, mode="clip"), shape)


def diagflat(v, k=0):
    """The 2-d array with the flattened ``v`` on its ``k``-th diagonal."""
    from .einsum import diag
    from .shape_ops import ravel
    return diag(ravel(_arr(v)), k)


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of the flattened array, with ``to_begin``/``to_end`` (cast to its dtype)
    put before/after."""
    from .shape_ops import concatenate, diff, ravel
    a = ravel(_arr(ary))
    dt = typeof(a).dtype
    if dt == np.bool_:
        raise TypeError("ediff1d: boolean subtract is not supported for bool input (as in numpy)")
    parts = [diff(a)]

    def flat(v):
        v = ravel(_arr(v))
        return v.astype(dt) if isinstance(v, Tracer) else np.asarray(v, dt)
    if to_begin is not None:
        parts.insert(0, flat(to_begin))
    if to_end is not None:
        parts.append(flat(to_end))
    return concatenate(parts, 0) if len(parts) > 1 else parts[0]


def trim_zeros(filt, trim="fb", axis=None):
    """``filt`` without its leading (``"f"``) and/or trailing (``"b"``) zeros. The result's
    length depends on the data (a run-time dim under tracing). 1-d input only."""
    from .creation import asarray
    from .reductions import any as _any, argmax
    from .ufuncs import where
    a = asarray(filt)
    if typeof(a).ndim != 1:
        raise NotImplementedError("trim_zeros: only 1-d input is supported")
    trim = trim.lower()
    if not trim or set(trim) - {"f", "b"}:
        raise ValueError(f"trim_zeros: trim must be a combination of 'f' and 'b', got {trim!r}")
    n = typeof(a).shape[0]
    n64 = lax.convert_element_type(n, np.int64) if isinstance(n, Tracer) else np.int64(n)
    nz = a != 0
    if isinstance(n, int) and n == 0:
        return a
    some = _any(nz)
    start = where(some, argmax(nz), n64) if "f" in trim else np.int64(0)
    if "b" in trim:
        from .shape_ops import flip
        stop = where(some, n64 - argmax(flip(nz)), np.int64(0))
    else:
        stop = n64
    stop = lax.max(stop, start) if isinstance(stop, Tracer) or isinstance(start, Tracer) else max(stop, start)
    if not isinstance(a, Tracer):
        return a[int(start):int(stop)]
    from .indexing import getitem
    return getitem(a, slice(start, stop))
