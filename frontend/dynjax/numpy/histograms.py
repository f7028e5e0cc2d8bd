"""Multi-dimensional histograms: ``histogram_bin_edges``, ``histogram2d`` and ``histogramdd``,
built on the 1-d ``histogram`` of ``selection.py`` (the same edges, the same rule: the last
bin includes its right edge, values outside are not counted). The number of samples may be
dynamic; the numbers of bins are static.
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import lax
from ..core.trace import typeof
from .selection import histogram, searchsorted


def _arr(a):
    from .creation import asarray
    return asarray(a)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The bin edges ``histogram`` would use for ``a``."""
    return histogram(a, bins, range)[1]


def _bin_index(x, edges):
    """Each value's bin (-1 outside the edges; the right edge counts in the last bin)."""
    last = edges[-1]
    idx = lax.sub(searchsorted(edges, x, side="right"), np.int64(1))
    at_end = lax.eq(x, lax.broadcast_in_dim(last, typeof(x).shape, ()))
    idx = lax.select(at_end, lax.sub(idx, np.int64(1)), idx)
    inside = lax.bitwise_and(lax.ge(x, lax.broadcast_in_dim(edges[0], typeof(x).shape, ())),
                             lax.le(x, lax.broadcast_in_dim(last, typeof(x).shape, ())))
    return idx, inside


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
    """``(H, edges)``: the counts (or weights) of the ``(N, D)`` samples in a ``D``-d grid of
    bins; ``bins`` an int, or one int or edge array per dimension; ``range`` one
    ``(lo, hi)`` (or None) per dimension."""
    from .creation import zeros
    from .reductions import sum as _sum
    from .shape_ops import diff, reshape
    s = _arr(sample)
    if typeof(s).ndim == 1:
        s = s[:, None]
    if typeof(s).ndim != 2:
        raise ValueError("histogramdd: sample must be an (N, D) array")
    N, D = typeof(s).shape
    if not isinstance(D, int):
        raise TypeError("histogramdd: the number of dimensions D must be static")
    per_bins = list(bins) if isinstance(bins, (list, tuple)) else [bins] * D
    ranges = list(range) if range is not None else [None] * D
    if len(per_bins) != D or len(ranges) != D:
        raise ValueError(f"histogramdd: bins and range need one entry per dimension ({D})")
    edges, idx, ok = [], [], None
    for d in builtins.range(D):
        col = s[:, d]
        e = histogram(col, per_bins[d], ranges[d])[1]
        nb = typeof(e).shape[0] - 1
        if not isinstance(nb, int):
            raise TypeError("histogramdd: the numbers of bins must be static")
        i, inside = _bin_index(col.astype(typeof(e).dtype), e)
        edges.append(e)
        idx.append((i, nb))
        ok = inside if ok is None else lax.bitwise_and(ok, inside)
    flat = None
    total = 1
    for i, nb in idx:
        flat = i if flat is None else lax.add(lax.mul(flat, np.int64(nb)), i)
        total *= nb
    flat = lax.select(ok, flat, lax.broadcast_in_dim(np.int64(-1), typeof(flat).shape, ()))
    if weights is None:
        w = lax.broadcast_in_dim(np.int64(1), (N,), ())
    else:
        w = _arr(weights)
    rows = lax.broadcast_in_dim(flat, (N, 1), (0,))
    counts = lax.scatter(zeros(total, typeof(w).dtype), rows, w, (0,), "add")
    H = reshape(counts, tuple(nb for _, nb in idx))
    if density:
        H = H / _sum(H)
        for d, e in enumerate(edges):
            shape = [1] * D
            shape[d] = typeof(e).shape[0] - 1
            H = H / reshape(diff(e), tuple(shape))
    return H, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
    """``(H, xedges, yedges)``: the 2-d histogram of the points ``(x[i], y[i])``."""
    from .shape_ops import stack
    from ._promote import promote
    x, y = promote(_arr(x), _arr(y))
    # numpy's rule: an int, or two entries (one per axis), or else one edge array for both
    if isinstance(bins, (int, np.integer)):
        per = bins
    elif len(bins) == 2:
        per = list(bins)
    else:
        per = [bins, bins]
    H, (ex, ey) = histogramdd(stack([x, y], axis=1), per, range, weights, density)
    return H, ex, ey
