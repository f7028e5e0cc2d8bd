"""Sorting: sort and argsort along an axis, in numpy's order (NaN last; complex numbers by
real part, then imaginary part)."""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import canonical_dtype, int64, is_complex_dtype
from ..core.trace import typeof
from .shape_ops import _as_array, ravel


def _keys(a):
    """The sort keys of ``a``: itself, or its real and imaginary parts for complex numbers."""
    if is_complex_dtype(typeof(a).dtype):
        return [lax.real(a), lax.imag(a)]
    return [a]


def _check_order(name, order):
    if order is not None:
        raise NotImplementedError(f"{name}: the order argument (structured arrays) is not supported")


def _flip(x, axis):
    return lax.rev(x, (axis,))


def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    """A sorted copy of ``a`` along ``axis`` (``None``: the flattened array); stable.
    ``descending`` sorts from largest to smallest (NaN first); ``kind`` is accepted and
    ignored (the sort is always stable), as in JAX."""
    _check_order("sort", order)
    a = _as_array(a)
    if axis is None:
        a, axis = ravel(a), 0
    if typeof(a).ndim == 0:
        return a
    axis = int(axis) % typeof(a).ndim
    keys = _keys(a)
    if len(keys) == 1:
        out = lax.sort(a, dimension=axis)
    else:
        out = lax.sort((*keys, a), dimension=axis, num_keys=len(keys))[-1]
    return _flip(out, axis) if descending else out


def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False, dtype=None):
    """The indices that sort ``a`` along ``axis`` (a stable sort: equal elements keep their
    order, also with ``descending``; ``descending, stable=False`` gives the ascending order
    reversed, as JAX does); ``dtype`` is the index dtype (int64 by default)."""
    _check_order("argsort", order)
    a = _as_array(a)
    if axis is None:
        a, axis = ravel(a), 0
    nd = typeof(a).ndim
    if nd == 0:
        a, axis, nd = lax.broadcast_in_dim(a, (1,), ()), 0, 1
    axis = int(axis) % nd
    if descending and stable:   # equal elements keep their order: sort the reversed array
        a = _flip(a, axis)
    idx = lax.broadcasted_iota(int64, typeof(a).shape, axis)
    keys = _keys(a)
    out = lax.sort((*keys, idx), dimension=axis, num_keys=len(keys))[-1]
    if descending and not stable:   # JAX's order: the ascending one reversed
        out = _flip(out, axis)
    elif descending:
        n = typeof(a).shape[axis]
        last = lax.sub(n, 1) if not isinstance(n, int) else n - 1
        last = lax.convert_element_type(last, int64) if not isinstance(last, int) else np.int64(last)
        out = lax.sub(lax.broadcast_in_dim(last, typeof(out).shape, ()), _flip(out, axis))
    return out if dtype is None else lax.convert_element_type(out, canonical_dtype(dtype))


def lexsort(keys, axis=-1):
    """The indices that sort by several keys: the last key is the primary one (a stable
    sort); ``keys`` is a sequence of arrays of one shape, or a 2-d array whose rows are keys."""
    from .creation import asarray
    from ._promote import broadcast_arrays
    if isinstance(keys, (list, tuple)):
        ks = [asarray(k) for k in keys]
    else:
        arr = asarray(keys)
        if typeof(arr).ndim < 1:
            raise TypeError("lexsort: keys must be a sequence of arrays or an array of at least 1 dimension")
        n = typeof(arr).shape[0]
        if not isinstance(n, int):
            raise TypeError("lexsort: the number of keys (the leading axis) must be static")
        ks = [arr[i] for i in range(n)]
    if not ks:
        raise TypeError("lexsort: need at least one key")
    ks = list(broadcast_arrays(*ks))
    nd = typeof(ks[0]).ndim
    if nd == 0:
        return np.int64(0)
    axis = int(axis) % nd
    idx = lax.broadcasted_iota(int64, typeof(ks[0]).shape, axis)
    ordered = [part for k in reversed(ks) for part in _keys(k)]
    return lax.sort((*ordered, idx), dimension=axis, num_keys=len(ordered))[-1]


def partition(a, kth, axis=-1):
    """``a`` rearranged so that the ``kth`` element is the one a sort would put there, the
    ones before it no greater and the ones after no smaller (here: fully sorted, which
    satisfies that contract)."""
    _check_kth(a, kth, axis)
    return sort(a, axis=axis)


def argpartition(a, kth, axis=-1):
    """Indices that partition ``a`` around its ``kth`` element (here: the sorting ones)."""
    _check_kth(a, kth, axis)
    return argsort(a, axis=axis)


def _check_kth(a, kth, axis):
    import operator
    a = _as_array(a)
    nd = typeof(a).ndim
    if nd == 0:
        raise ValueError("partition: a must be at least 1-dimensional")
    kth = operator.index(kth)
    n = typeof(a).shape[int(axis) % nd]
    if isinstance(n, int) and not -n <= kth < n:
        raise ValueError(f"partition: kth {kth} is out of bounds for an axis of length {n}")


def sort_complex(a):
    """``a`` sorted (by real part, then imaginary part) as a complex array."""
    from ..core.avals import complex_dtype, is_complex_dtype
    a = _as_array(a)
    out = sort(a)
    dt = typeof(out).dtype
    if is_complex_dtype(dt):
        return out
    small = dt.kind in "iu" and dt.itemsize <= 2 or dt.kind in "fV" and dt.itemsize <= 4
    target = complex_dtype(dt) if dt.kind in "fV" and small else (
        np.dtype(np.complex64) if small else np.dtype(np.complex128))
    return lax.convert_element_type(out, target)
