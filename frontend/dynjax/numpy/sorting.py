"""Sorting: sort and argsort along an axis, in numpy's order (NaN last; complex numbers by
real part, then imaginary part)."""
from __future__ import annotations

from .. import lax
from ..core.avals import int64, is_complex_dtype
from ..core.trace import typeof
from .shape_ops import _as_array, ravel


def _keys(a):
    """The sort keys of ``a``: itself, or its real and imaginary parts for complex numbers."""
    if is_complex_dtype(typeof(a).dtype):
        return [lax.real(a), lax.imag(a)]
    return [a]


def sort(a, axis=-1):
    """A sorted copy of ``a`` along ``axis`` (``None``: the flattened array); stable."""
    a = _as_array(a)
    if axis is None:
        a, axis = ravel(a), 0
    if typeof(a).ndim == 0:
        return a
    axis = int(axis) % typeof(a).ndim
    keys = _keys(a)
    if len(keys) == 1:
        return lax.sort(a, dimension=axis)
    return lax.sort((*keys, a), dimension=axis, num_keys=len(keys))[-1]


def argsort(a, axis=-1):
    """The indices that sort ``a`` along ``axis`` (a stable sort)."""
    a = _as_array(a)
    if axis is None:
        a, axis = ravel(a), 0
    nd = typeof(a).ndim
    axis = int(axis) % nd
    idx = lax.broadcasted_iota(int64, typeof(a).shape, axis)
    keys = _keys(a)
    return lax.sort((*keys, idx), dimension=axis, num_keys=len(keys))[-1]
