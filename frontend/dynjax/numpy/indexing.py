"""Basic indexing ``x[i]``, ``x[i:j]``, ``x[:, k]``, ``x[..., None]`` with static or traced indices.

Integer indices and slice bounds may be traced integers; slices over dynamic axes get a
dynamic length. Static out-of-range integer indices on static axes raise ``IndexError``;
traced indices are clamped into range (XLA semantics, as in JAX). Advanced indexing
with integer or boolean arrays is not supported (it is reported as such).
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
    if not isinstance(idx, tuple):
        idx = (idx,)
    for i in idx:
        if isinstance(i, Tracer) and not _is_int_index(i):
            raise IndexError(f"indexing with a traced array of type {i.aval.str_short()} is not supported "
                             "(only integer scalars and slices)")
        if isinstance(i, (list, np.ndarray)) and not (isinstance(i, np.ndarray) and i.ndim == 0):
            raise IndexError("advanced indexing with integer or boolean arrays is not supported")
    n_real = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if n_real > ndim:
        raise IndexError(f"too many indices: array is {ndim}-dimensional, but {n_real} were indexed")
    if sum(1 for i in idx if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    out = []
    for i in idx:
        if i is Ellipsis:
            out.extend([slice(None)] * (ndim - n_real))
        else:
            out.append(i)
    if Ellipsis not in idx:
        out.extend([slice(None)] * (ndim - n_real))
    return out


def _clamp(v, lo, hi):
    from .ufuncs import maximum, minimum
    return minimum(maximum(v, lo), hi)


def getitem(x, idx):
    """``x[idx]`` for a traced or concrete array ``x``."""
    from .ufuncs import add, less, subtract, where, maximum
    av = typeof(x)
    items = _expand_index(idx, av.ndim)
    starts, sizes, strides, squeeze_axes, new_axes = [], [], [], [], []
    axis = 0
    out_pos = 0
    for it in items:
        if it is None:
            new_axes.append(out_pos)
            out_pos += 1
            continue
        n = av.shape[axis]
        if _is_int_index(it):
            if isinstance(it, Tracer):
                i = lax.convert_element_type(it, int64) if it.aval.dtype != int64 else it
                i = where(less(i, 0), add(i, n), i)
            else:
                i = int(it)
                if isinstance(n, int):
                    if not -n <= i < n:
                        raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
                    i = i % n
                elif i < 0:
                    i = add(n, i)
            starts.append(i)
            sizes.append(1)
            strides.append(1)
            squeeze_axes.append(axis)
        elif isinstance(it, slice):
            step = 1 if it.step is None else it.step
            if isinstance(step, Tracer):
                raise IndexError("slice steps must be static integers")
            step = int(step)
            if step == 0:
                raise ValueError("slice step cannot be zero")
            start, stop = it.start, it.stop
            if all(not isinstance(v, Tracer) for v in (start, stop)) and isinstance(n, int):
                s0, s1, _ = slice(start, stop, step).indices(n)
                if step > 0:
                    length = max(0, s1 - s0)
                    starts.append(s0)
                    sizes.append(length)
                else:
                    # negative steps: take the covered span, then reverse
                    length = max(0, s0 - s1)
                    starts.append(s1 + 1 if length else 0)
                    sizes.append(length)
                strides.append(step)
            else:
                if step != 1:
                    raise IndexError("slices with traced bounds or over a dynamic axis need step 1")
                if start is None and stop is None:
                    starts.append(0)
                    sizes.append(n)
                else:
                    def norm(v, default):
                        if v is None:
                            return default
                        v = canonicalize_dim(v, "slice bound") if not isinstance(v, Tracer) and v >= 0 else v
                        if isinstance(v, Tracer) or (isinstance(v, int) and v < 0) or not isinstance(n, int):
                            if not isinstance(v, Tracer) and v < 0:
                                return _clamp(add(n, v), 0, n)
                            if isinstance(v, Tracer):
                                v = lax.convert_element_type(v, int64) if v.aval.dtype != int64 else v
                                return _clamp(where(less(v, 0), add(v, n), v), 0, n)
                            return _clamp(v, 0, n) if not isinstance(n, int) else min(v, n)
                        return min(v, n)
                    b = norm(start, 0)
                    e = norm(stop, n)
                    length = maximum(subtract(e, b), 0)
                    starts.append(b)
                    sizes.append(canonicalize_dim(length))
                strides.append(1)
        else:
            raise IndexError(f"unsupported index {it!r}: only integers, slices, None and ... are supported")
        axis += 1
        if not _is_int_index(it):
            out_pos += 1
    out = x
    all_static = all(isinstance(s, int) for s in starts) and all(isinstance(s, int) for s in sizes)
    whole = all(isinstance(s, int) and s == 0 for s in starts) and all(
        (sz is d) or (isinstance(sz, int) and isinstance(d, int) and sz == d) for sz, d in zip(sizes, av.shape))
    if whole:
        pass
    elif all_static and all(isinstance(d, int) for d in av.shape):
        out = lax.slice(out, starts, [s + z for s, z in zip(starts, sizes)])
    else:
        out = lax.dynamic_slice(out, starts, sizes)
    if any(st != 1 for st in strides):
        rev = [i for i, st in enumerate(strides) if st < 0]
        if rev:
            out = lax.rev(out, rev)
        cur = typeof(out).shape
        limits = [d if isinstance(d, int) else None for d in cur]
        out = lax.slice(out, [0] * len(cur), limits, [abs(st) for st in strides])
    if squeeze_axes:
        out = lax.squeeze(out, squeeze_axes)
    if new_axes:
        from .shape_ops import expand_dims
        out = expand_dims(out, new_axes)
    return out
