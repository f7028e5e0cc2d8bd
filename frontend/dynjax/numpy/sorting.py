"""Sorting: sort and argsort along an axis."""
from __future__ import annotations

from .. import lax
from ..core.avals import int64
from ..core.trace import typeof
from .shape_ops import _as_array, ravel


def sort(a, axis=-1):
    a = _as_array(a)
    if axis is None:
        a, axis = ravel(a), 0
    if typeof(a).ndim == 0:
        return a
    return lax.sort(a, dimension=int(axis) % typeof(a).ndim)


def argsort(a, axis=-1):
    a = _as_array(a)
    if axis is None:
        a, axis = ravel(a), 0
    nd = typeof(a).ndim
    axis = int(axis) % nd
    idx = lax.broadcasted_iota(int64, typeof(a).shape, axis)
    _, perm = lax.sort((a, idx), dimension=axis, num_keys=1)
    return perm
