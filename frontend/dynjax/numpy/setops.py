"""Set operations on 1-d arrays: ``isin``, ``union1d``, ``intersect1d``, ``setdiff1d``,
``setxor1d``.

The results of all but ``isin`` have a length that depends on the data: it is a traced count
used as a dim (see ``selection.py``), or ``size`` when given, padded with ``fill_value``
(JAX's defaults: the smallest result element for ``union1d``, ``intersect1d`` and
``setxor1d``, 0 for ``setdiff1d``).
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.trace import typeof
from ._promote import promote
from .selection import _i64, count_true, extract, searchsorted, take, unique


def _flat(a):
    from .creation import asarray
    from .shape_ops import ravel
    return ravel(asarray(a))


def _cat(a, b):
    from .shape_ops import concatenate
    a, b = promote(a, b)
    return concatenate([a, b])


def _neighbours_differ(s, shift):
    """``s[i] != s[i + shift]`` (``shift`` is +1 or -1), True where that neighbour is missing."""
    from .creation import arange
    from .shape_ops import roll
    n = typeof(s).shape[0]
    ids = arange(n, dtype=np.int64)
    edge = lax.eq(ids, _i64(n) - np.int64(1)) if shift == 1 else lax.eq(ids, np.int64(0))
    return lax.bitwise_or(edge, lax.ne(s, roll(s, -shift)))


def _select_sized(keep, values, size, fill_value, default):
    """``values[keep]`` (a run-time length), or ``size`` elements padded with ``fill_value``
    (``default`` when None: ``"first"`` for the first kept value, else that value)."""
    if size is None:
        return extract(keep, values)
    out = extract(keep, values, size=size, fill_value=0)
    if fill_value is None:
        if default != "first":
            fill_value = default
        else:
            from .indexing import getitem
            first = getitem(out, 0) if size > 0 else None
            fill_value = first
    if fill_value is None:
        return out
    from .creation import arange
    valid = lax.lt(arange(size, dtype=np.int64), _i64(count_true(keep)))
    fill = lax.broadcast_in_dim(lax.convert_element_type(fill_value, typeof(out).dtype)
                                if not isinstance(fill_value, (int, float, complex, np.generic, np.ndarray))
                                else np.asarray(fill_value, typeof(out).dtype)[()], typeof(out).shape, ())
    return lax.select(valid, out, fill)


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """Elementwise: whether each element of ``element`` occurs in ``test_elements`` (a sort
    of the test elements and a binary search per element)."""
    from .creation import asarray
    from .sorting import sort
    if method not in ("auto", "compare_all", "binary_search", "sort"):
        raise ValueError(f"isin: method must be 'auto', 'compare_all', 'binary_search' or 'sort', got {method!r}")
    e = asarray(element)
    t = _flat(test_elements)
    e, t = promote(e, t)
    s = sort(t)
    m = typeof(s).shape[0]
    if isinstance(m, int) and m == 0:
        found = lax.broadcast_in_dim(np.False_, typeof(e).shape, ())
    else:
        idx = searchsorted(s, e)
        found = lax.bitwise_and(lax.lt(idx, _i64(m)), lax.eq(take(s, idx, mode="fill"), e))
    return lax.bitwise_not(found) if invert else found


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted distinct elements of both arrays."""
    return unique(_cat(_flat(ar1), _flat(ar2)), size=size, fill_value=fill_value)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted distinct elements of ``ar1`` that are not in ``ar2``."""
    a = _flat(ar1) if assume_unique else unique(_flat(ar1))
    if assume_unique:
        from .sorting import sort
        a = sort(a)
    keep = isin(a, ar2, invert=True)
    return _select_sized(keep, a, size, fill_value, 0)


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted elements that are in exactly one of the two arrays."""
    from .sorting import sort
    a, b = _flat(ar1), _flat(ar2)
    if not assume_unique:
        a, b = unique(a), unique(b)
    s = sort(_cat(a, b))
    keep = lax.bitwise_and(_neighbours_differ(s, 1), _neighbours_differ(s, -1))
    return _select_sized(keep, s, size, fill_value, "first")


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None, fill_value=None):
    """The sorted elements common to both arrays; with ``return_indices`` also the index of
    each one's first occurrence in ``ar1`` and in ``ar2`` (index padding with ``size``:
    ``len(ar1)`` and ``len(ar2)``)."""
    from .creation import arange
    a, b = _flat(ar1), _flat(ar2)
    a, b = promote(a, b)
    na, nb = typeof(a).shape[0], typeof(b).shape[0]
    if assume_unique:
        ia, ib = arange(na, dtype=np.int64), arange(nb, dtype=np.int64)
    else:
        a, ia = unique(a, return_index=True)
        b, ib = unique(b, return_index=True)
    vals = _cat(a, b)
    src = _cat(ia, ib)
    ids = arange(typeof(vals).shape[0], dtype=np.int64)
    s, order = lax.sort((vals, ids), num_keys=1)     # stable: ar1's copy comes first
    from .shape_ops import roll
    dup = lax.bitwise_not(_neighbours_differ(s, 1))
    values = _select_sized(dup, s, size, fill_value, "first")
    if not return_indices:
        return values
    srcs = take(src, order)
    first = _select_sized(dup, srcs, size, None if size is None else na, None)
    second = _select_sized(dup, roll(srcs, -1), size, None if size is None else nb, None)
    return values, first, second
