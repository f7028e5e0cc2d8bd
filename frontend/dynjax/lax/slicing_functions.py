"""``jax.lax``'s slicing functions (``dynamic_slice``, ``dynamic_update_slice``,
``slice_in_dim``, ``index_in_dim``, the ``dynamic_*_in_dim`` helpers, ``split``), written on
dynjax's primitives with JAX's names, signatures, defaults and errors: a negative start counts
from the end of its axis where ``allow_negative_indices`` allows it; the primitive then clamps.

``dynjax.lax`` exports these in place of the clamping-only wrappers of ``lax/api.py`` (which
dynjax's own modules call). The general ``gather`` / ``scatter`` are in ``lax/slicing.py``; the
other ``jax.lax`` functions without primitives of their own are in ``lax/derived.py``.
"""
from __future__ import annotations

import builtins
from typing import Sequence

import numpy as np

from ..core.avals import int64, is_integer_dtype
from ..core.trace import Tracer, typeof
from . import api
from . import primitives as P
from .base import dim_str
from .derived import _axis, expand_dims


def _start(s, dim, allow_negative):
    """A start index as int64, with ``dim`` added to a negative one when ``allow_negative``
    (JAX's rule: a static negative start is an error otherwise; an unsigned one is never
    negative)."""
    if not isinstance(s, Tracer):
        s = int(s)
        if not allow_negative and s < 0:
            raise ValueError(f"Index {s} is out of bounds for dimension {dim_str(dim)} if "
                             "allow_negative_indices=False")
        if allow_negative and s < 0:
            if isinstance(dim, int):
                return np.int64(s + dim)
            return P.add_p.bind(api.convert_element_type(dim, int64), np.int64(s))
        return np.int64(s)
    a = typeof(s)
    if a.shape != () or not is_integer_dtype(a.dtype):
        raise TypeError(f"index arguments must be integer scalars, got {a.str_short()}")
    unsigned = a.dtype.kind == "u"
    s = api.convert_element_type(s, int64)
    if not allow_negative or unsigned:
        return s
    d = np.int64(dim) if isinstance(dim, int) else api.convert_element_type(dim, int64)
    return P.select_n_p.bind(P.lt_p.bind(s, np.int64(0)), s, P.add_p.bind(s, d))


def _flags(allow, n):
    return list(allow) if isinstance(allow, (tuple, list)) else [bool(allow)] * n


def _wrapped_starts(name, a, start_indices, allow_negative_indices):
    """JAX's start indices: a sequence of integer scalars or a 1-D integer array, one per axis
    of ``a``; a negative start gets the axis size added once (where allowed). The primitive
    then clamps each start so that the slice fits (``lax/api.py``'s ``dynamic_slice`` /
    ``dynamic_update_slice``, which dynjax's own modules call: they clamp only)."""
    if isinstance(start_indices, (tuple, list)):
        starts = list(start_indices)
    elif isinstance(start_indices, Tracer) or isinstance(start_indices, np.ndarray):
        sa = typeof(start_indices)
        if sa.ndim != 1 or not isinstance(sa.shape[0], int):
            raise TypeError(f"{name}: start_indices must be a sequence or a 1-D array of static "
                            f"length, got {sa.str_short()}")
        starts = [start_indices[i] for i in range(sa.shape[0])]
    else:
        starts = list(start_indices)
    if len(starts) != a.ndim:
        raise ValueError(f"Length of slice indices must match number of operand dimensions "
                         f"({len(starts)} vs {a.str_short()})")
    flags = _flags(allow_negative_indices, a.ndim)
    return [_start(s, d, f) for s, d, f in zip(starts, a.shape, flags)]


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    """The slice of ``slice_sizes`` at ``start_indices`` (a negative start counts from the end
    when ``allow_negative_indices``; starts are then clamped so the slice fits)."""
    a = typeof(operand)
    starts = _wrapped_starts("dynamic_slice", a, start_indices, allow_negative_indices)
    return api.dynamic_slice(operand, starts, slice_sizes)


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    """``operand`` with ``update`` written at ``start_indices`` (negative starts count from the
    end when ``allow_negative_indices``; starts are clamped so the update fits)."""
    a = typeof(operand)
    starts = _wrapped_starts("dynamic_update_slice", a, start_indices, allow_negative_indices)
    return api.dynamic_update_slice(operand, update, starts)


def slice_in_dim(operand, start_index, limit_index, stride: int = 1, axis: int = 0):
    """``operand[start_index:limit_index:stride]`` along ``axis`` (static bounds; negative
    ones count from the end)."""
    a = typeof(operand)
    axis = _axis(axis, a.ndim)
    n = a.shape[axis]
    if not isinstance(n, int):
        if start_index in (None, 0) and limit_index is None and stride == 1:
            return operand
        raise TypeError("slice_in_dim of a dynamic axis needs dynamic_slice_in_dim")
    start, limit, _ = builtins.slice(start_index, limit_index).indices(n)
    starts = [0] * a.ndim
    limits = [d if isinstance(d, int) else None for d in a.shape]
    strides = [1] * a.ndim
    starts[axis], limits[axis], strides[axis] = start, builtins.max(limit, start), int(stride)
    return api.slice(operand, starts, limits, strides)


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    """Element ``index`` of ``axis`` (a negative one counts from the end), the axis kept as
    size 1 when ``keepdims``."""
    a = typeof(operand)
    axis = _axis(axis, a.ndim)
    n = a.shape[axis]
    index = int(index)
    if isinstance(n, int):
        if not -n <= index < n:
            raise IndexError(f"index {index} is out of bounds for axis {axis} with size {n}")
        index %= n
        out = slice_in_dim(operand, index, index + 1, 1, axis)
    else:
        out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else api.squeeze(out, (axis,))


def dynamic_slice_in_dim(operand, start_index, slice_size, axis: int = 0, *,
                         allow_negative_indices=True):
    """``dynamic_slice`` along one axis."""
    a = typeof(operand)
    axis = _axis(axis, a.ndim)
    starts = [0] * a.ndim
    starts[axis] = start_index
    sizes = list(a.shape)
    sizes[axis] = slice_size
    flags = [False] * a.ndim
    flags[axis] = bool(allow_negative_indices)
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=flags)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices=True):
    """Element ``index`` (traced or not) of ``axis``, kept as size 1 when ``keepdims``."""
    a = typeof(operand)
    axis = _axis(axis, a.ndim)
    out = dynamic_slice_in_dim(operand, index, 1, axis, allow_negative_indices=allow_negative_indices)
    return out if keepdims else api.squeeze(out, (axis,))


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int, *,
                                allow_negative_indices=True):
    """``dynamic_update_slice`` along one axis."""
    a = typeof(operand)
    axis = _axis(axis, a.ndim)
    starts = [0] * a.ndim
    starts[axis] = start_index
    flags = [False] * a.ndim
    flags[axis] = bool(allow_negative_indices)
    return dynamic_update_slice(operand, update, starts, allow_negative_indices=flags)


def dynamic_update_index_in_dim(operand, update, index, axis: int, *, allow_negative_indices=True):
    """``operand`` with ``update`` (with or without the size-1 ``axis``) written at ``index``."""
    a, u = typeof(operand), typeof(update)
    axis = _axis(axis, a.ndim)
    if u.ndim == a.ndim - 1:
        update = expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis,
                                       allow_negative_indices=allow_negative_indices)


def split(operand, sizes: Sequence, axis: int = 0):
    """``operand`` cut along ``axis`` into pieces of ``sizes`` (which must add up to the axis)."""
    a = typeof(operand)
    axis = _axis(axis, a.ndim)
    sizes = [api.canonicalize_dim(s, "split size") for s in sizes]
    n = a.shape[axis]
    if all(isinstance(s, int) for s in sizes) and isinstance(n, int) and builtins.sum(sizes) != n:
        raise ValueError(f"Sum of sizes {builtins.sum(sizes)} must be equal to dimension {n} of the "
                         f"operand shape {a.str_short()}")
    out, start = [], 0
    for s in sizes:
        if isinstance(s, int) and isinstance(start, int) and isinstance(n, int):
            out.append(slice_in_dim(operand, start, start + s, 1, axis))
        else:
            out.append(dynamic_slice_in_dim(operand, start, s, axis, allow_negative_indices=False))
        start = start + s
    return out
