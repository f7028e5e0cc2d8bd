"""Basic indexing ``x[i]``, ``x[i:j]``, ``x[:, k]``, ``x[..., None]`` with static or traced indices.

Integer indices and slice bounds may be traced integers; slices over dynamic axes or with
traced bounds get a dynamic length (clamped into range, as numpy does for slices), strided
ones (``x[::2]``, ``x[-2::-1]``) the symbolic length ``ceil(span / |step|)``.
Static out-of-range integer indices on static axes raise ``IndexError``; traced integer
indices are clamped into range (XLA semantics, as in JAX). Advanced indexing with integer or boolean arrays is not supported.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import int64
from ..core.trace import Tracer, typeof
from ..lax.api import canonicalize_dim


def _is_int_index(i) -> bool:
    if isinstance(i, Tracer):
        return i.aval.shape == () and np.issubdtype(i.aval.dtype, np.integer)
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _expand_index(idx, ndim):
    """The index as a list with one entry per axis (plus ``None`` entries for new axes)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    for i in idx:
        if isinstance(i, Tracer) and not _is_int_index(i):
            raise IndexError(f"indexing with a traced array of type {i.aval.str_short()} is not supported "
                             "(only integer scalars and slices)")
        if isinstance(i, (list, np.ndarray, bool, np.bool_)) and not (isinstance(i, np.ndarray) and i.ndim == 0):
            raise IndexError("advanced indexing with integer or boolean arrays is not supported")
    n_ellipsis = sum(1 for i in idx if i is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_real = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if n_real > ndim:
        raise IndexError(f"too many indices: array is {ndim}-dimensional, but {n_real} were indexed")
    out = []
    for i in idx:
        if i is Ellipsis:
            out.extend([slice(None)] * (ndim - n_real))
        else:
            out.append(i)
    if not n_ellipsis:
        out.extend([slice(None)] * (ndim - n_real))
    return out


def _i64(v):
    return lax.convert_element_type(v, int64) if v.aval.dtype != int64 else v


def _bound(v, n, is_start):
    """A slice bound normalized into ``[0, n]`` (numpy slice semantics); static when possible.

    A static non-negative start needs no upper clamp: the slice length is then 0 and
    ``dynamic_slice`` clamps its start into range.
    """
    if v is None:
        return 0 if is_start else n
    if isinstance(v, Tracer):
        v = _i64(v)
        v = lax.select(lax.lt(v, 0), lax.add(v, n), v)
        return lax.min(lax.max(v, 0), n)
    v = int(v)
    if isinstance(n, int):
        return min(max(v + n if v < 0 else v, 0), n)
    if v < 0:
        return lax.max(lax.add(n, v), 0)
    return v if is_start else lax.min(n, v)


def _dynamic_slice_range(it, n):
    """(start, size) of a step-1 slice with traced bounds or over a dynamic axis."""
    start = _bound(it.start, n, True)
    stop = _bound(it.stop, n, False)
    if isinstance(start, int) and start == 0:
        return 0, canonicalize_dim(stop)
    return start, canonicalize_dim(lax.max(lax.sub(stop, start), 0))


def _strided(x, axis, it, step):
    """``x[..., it, ...]`` on ``axis`` for a slice with step ``!= 1`` whose axis is dynamic or
    whose bounds are traced: numpy's semantics, with the size ``ceil(span / |step|)`` as a
    symbolic dim. A negative step reads the reversed axis with mirrored bounds."""
    n = typeof(x).shape[axis]
    if step < 0:
        x = lax.rev(x, [axis])
        start = 0 if it.start is None else _mirror(it.start, n)
        stop = n if it.stop is None else _mirror(it.stop, n)
        start, span = _span(start, stop)
    else:
        start, span = _dynamic_slice_range(slice(it.start, it.stop), n)
    k = abs(step)
    shape = list(typeof(x).shape)
    shape[axis] = span
    x = _slice(x, typeof(x).shape, [start if i == axis else 0 for i in range(len(shape))], shape)
    count = canonicalize_dim(lax.div(lax.add(span, k - 1), k)) if not isinstance(span, int) \
        else -(-span // k)
    # pad the span to count * k elements, view it as (count, k) and keep the first column
    from .creation import zeros
    from .shape_ops import concatenate, reshape
    pad_shape = list(shape)
    pad_shape[axis] = canonicalize_dim(lax.sub(lax.mul(count, k), span)) if not isinstance(span, int) \
        else count * k - span
    x = concatenate([x, zeros(pad_shape, typeof(x).dtype)], axis=axis)
    split = shape[:axis] + [count, k] + shape[axis + 1:]
    x = reshape(x, split)
    limits = [None if not isinstance(d, int) else d for d in split]
    limits[axis + 1] = 1
    x = lax.slice(x, [0] * len(split), limits)
    return lax.squeeze(x, [axis + 1])


def _mirror(v, n):
    """A bound of a negative-step slice, in the reversed axis: ``n - 1 - clamp(v, -1, n - 1)``
    after numpy's wrap of negative values."""
    if isinstance(v, Tracer):
        v = _i64(v)
        v = lax.select(lax.lt(v, 0), lax.add(v, n), v)
        v = lax.min(lax.max(v, -1), lax.sub(n, 1))
        return lax.sub(lax.sub(n, 1), v)
    v = int(v)
    if isinstance(n, int):
        v = v + n if v < 0 else v
        return n - 1 - min(max(v, -1), n - 1)
    v = lax.add(n, v) if v < 0 else v
    return lax.sub(lax.sub(n, 1), lax.min(lax.max(v, -1), lax.sub(n, 1)))


def _span(start, stop):
    if isinstance(start, int) and isinstance(stop, int):
        return start, max(stop - start, 0)
    return start, canonicalize_dim(lax.max(lax.sub(stop, start), 0))


def getitem(x, idx):
    """``x[idx]`` for a traced or concrete array ``x``."""
    av = typeof(x)
    items = _expand_index(idx, av.ndim)
    starts, sizes, strides, squeeze_axes, new_axes = [], [], [], [], []
    strided = []   # (axis, slice, step) of strided slices with traced bounds or dynamic axes
    axis = 0
    for pos, it in enumerate(items):
        if it is None:
            new_axes.append(pos - len(squeeze_axes))
            continue
        n = av.shape[axis]
        step = 1
        if _is_int_index(it):
            if isinstance(it, Tracer):
                i = _i64(it)
                i = lax.select(lax.lt(i, 0), lax.add(i, n), i)
            elif isinstance(n, int):
                i = int(it)
                if not -n <= i < n:
                    raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
                i %= n
            else:
                i = int(it) if int(it) >= 0 else lax.add(n, int(it))
            start, size = i, 1
            squeeze_axes.append(axis)
        elif isinstance(it, slice):
            step = 1 if it.step is None else it.step
            if isinstance(step, Tracer):
                raise IndexError("slice steps must be static integers")
            step = int(step)
            if step == 0:
                raise ValueError("slice step cannot be zero")
            traced = isinstance(it.start, Tracer) or isinstance(it.stop, Tracer)
            if isinstance(n, int) and not traced:
                lo, hi, _ = slice(it.start, it.stop, step).indices(n)
                size = max(0, -(-(hi - lo) // step))
                # negative steps: take the covered span, reverse it, then stride
                start = lo if step > 0 else (lo - (size - 1) * -step if size else 0)
                size = size if abs(step) == 1 else (max(0, (size - 1) * abs(step) + 1))
            elif step != 1:
                strided.append((axis, it, step))   # done after the basic indexing, below
                start, size = 0, n
                step = 1
            else:
                start, size = _dynamic_slice_range(it, n)
        else:
            raise IndexError(f"unsupported index {it!r}: only integers, slices, None and ... are supported")
        starts.append(start)
        sizes.append(size)
        strides.append(step)
        axis += 1
    out = _slice(x, av.shape, starts, sizes)
    for ax, it, step in strided:
        out = _strided(out, ax, it, step)
    if any(st < 0 for st in strides):
        out = lax.rev(out, [i for i, st in enumerate(strides) if st < 0])
    if any(abs(st) != 1 for st in strides):
        limits = [d if isinstance(d, int) else None for d in typeof(out).shape]
        out = lax.slice(out, [0] * len(limits), limits, [abs(st) for st in strides])
    if squeeze_axes:
        out = lax.squeeze(out, squeeze_axes)
    if new_axes:
        from .shape_ops import expand_dims
        out = expand_dims(out, new_axes)
    return out


def _slice(x, shape, starts, sizes):
    """``x[start:start+size, ...]``: nothing, a static ``slice`` or a ``dynamic_slice``."""
    def same(a, b):
        return a is b or (isinstance(a, int) and isinstance(b, int) and a == b)
    if all(same(s, 0) for s in starts) and all(same(z, d) for z, d in zip(sizes, shape)):
        return x
    # a static slice when the bounds are static and every dynamic axis is kept whole
    if all(isinstance(s, int) and (isinstance(d, int) and isinstance(z, int) or same(s, 0) and same(z, d))
           for s, z, d in zip(starts, sizes, shape)):
        limits = [s + z if isinstance(d, int) else None for s, z, d in zip(starts, sizes, shape)]
        return lax.slice(x, starts, limits)
    return lax.dynamic_slice(x, starts, sizes)
