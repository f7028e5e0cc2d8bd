"""Index helpers: ``mgrid ogrid r_ c_ s_ index_exp ix_``, the diagonal and triangle index
functions, ``fill_diagonal``, ``ravel_multi_index`` and ``unravel_index``.

Sizes may be traced: ``mgrid[0:n]`` with a traced ``n``, ``diag_indices(n)``,
``tril_indices(n)`` (whose length, a function of ``n``, is then a run-time dim).
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import int64
from ..core.trace import Tracer, typeof
from ..lax.api import canonicalize_dim


def _i64(v):
    if isinstance(v, Tracer):
        return v if typeof(v).dtype == int64 else lax.convert_element_type(v, int64)
    return np.int64(v)


# --- mgrid / ogrid -----------------------------------------------------------------------------------
def _grid_axis(s):
    """One axis of a grid: ``arange(start, stop, step)``, or ``linspace`` for a complex step
    (``0:1:5j`` is 5 points from 0 to 1 inclusive)."""
    from .creation import arange, linspace
    if not isinstance(s, slice):
        raise TypeError(f"mgrid/ogrid take slices, got {type(s).__name__}")
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if isinstance(step, complex):
        return linspace(start, s.stop, int(abs(step)), endpoint=True)
    if any(isinstance(v, Tracer) for v in (start, s.stop)):
        return arange(start, s.stop, step)
    out = np.arange(start, s.stop, step)
    return arange(start, s.stop, step, dtype=np.float64 if out.dtype.kind == "f" else np.int64)


class _Grid:
    def __init__(self, sparse, name):
        self.sparse = sparse
        self.name = name

    def __getitem__(self, key):
        from ._promote import promote
        if isinstance(key, slice):
            return _grid_axis(key)
        axes = promote(*[_grid_axis(s) for s in key])
        nd = len(axes)
        if self.sparse:
            return [lax.broadcast_in_dim(a, tuple(typeof(a).shape[0] if j == i else 1 for j in range(nd)), (i,))
                    for i, a in enumerate(axes)]
        from .shape_ops import stack
        shape = tuple(typeof(a).shape[0] for a in axes)
        if nd == 0:
            return np.zeros((0,), np.int64)
        return stack([lax.broadcast_in_dim(a, shape, (i,)) for i, a in enumerate(axes)])

    def __repr__(self):
        return f"dynjax.numpy.{self.name}"


mgrid = _Grid(False, "mgrid")
mgrid.__doc__ = "``mgrid[0:n, 0:m]``: dense coordinate arrays stacked on a new leading axis."
ogrid = _Grid(True, "ogrid")
ogrid.__doc__ = "``ogrid[0:n, 0:m]``: open (broadcastable) coordinate arrays."


# --- r_ / c_ -------------------------------------------------------------------------------------------
class _Concatenator:
    """``r_[...]``/``c_[...]``: slices become ranges (``a:b:nj`` a linspace), scalars and
    arrays are concatenated along the axis named by a leading ``"axis,ndmin,trans1d"`` string."""

    def __init__(self, axis, ndmin, trans1d, name):
        self.axis, self.ndmin, self.trans1d, self.name = axis, ndmin, trans1d, name

    def __getitem__(self, key):
        from .creation import asarray
        from .shape_ops import concatenate
        from ._promote import promote
        if not isinstance(key, tuple):
            key = (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        items = list(key)
        if items and isinstance(items[0], str):
            spec = items.pop(0)
            if spec in ("r", "c"):
                raise NotImplementedError(f"{self.name}['{spec}', ...] (matrix output) is not supported")
            parts = [int(p) for p in spec.split(",")]
            axis = parts[0]
            if len(parts) > 1:
                ndmin = parts[1]
            if len(parts) > 2:
                trans1d = parts[2]
        arrays = []
        for it in items:
            a = _grid_axis(it) if isinstance(it, slice) else asarray(it)
            if typeof(a).ndim < ndmin:
                k = typeof(a).ndim
                if trans1d not in (-1, 0) and k == 1:
                    raise NotImplementedError(f"{self.name}: only trans1d -1 and 0 are supported")
                # numpy: the array's axes go last (trans1d=-1), or first (trans1d=0, for 1-d items)
                lead = trans1d == 0 and k == 1
                shape = (tuple(typeof(a).shape) + (1,) * (ndmin - k)) if lead else \
                    ((1,) * (ndmin - k) + tuple(typeof(a).shape))
                a = lax.broadcast_in_dim(a, shape, tuple(range(k)) if lead else tuple(range(ndmin - k, ndmin)))
            elif typeof(a).ndim == 0:
                a = lax.broadcast_in_dim(a, (1,), ())
            arrays.append(a)
        if not arrays:
            return np.zeros((0,))
        return concatenate(list(promote(*arrays)), axis=axis)

    def __repr__(self):
        return f"dynjax.numpy.{self.name}"


r_ = _Concatenator(0, 1, -1, "r_")
c_ = _Concatenator(-1, 2, 0, "c_")


class _IndexExpression:
    def __init__(self, maketuple):
        self.maketuple = maketuple

    def __getitem__(self, item):
        if self.maketuple and not isinstance(item, tuple):
            return (item,)
        return item


s_ = _IndexExpression(False)
index_exp = _IndexExpression(True)


def ix_(*args):
    """Open-mesh index arrays: the ``i``-th 1-d argument shaped to broadcast along axis ``i``
    (a bool argument is replaced by its nonzero positions)."""
    from .creation import asarray
    from .selection import nonzero
    out = []
    nd = len(args)
    for i, a in enumerate(args):
        a = asarray(a)
        if typeof(a).ndim != 1:
            raise ValueError("ix_: every argument must be 1-dimensional")
        if typeof(a).dtype == np.bool_:
            a = nonzero(a)[0]
        shape = tuple(typeof(a).shape[0] if j == i else 1 for j in range(nd))
        out.append(lax.broadcast_in_dim(a, shape, (i,)))
    return tuple(out)


# --- diagonals and triangles ---------------------------------------------------------------------------
def diag_indices(n, ndim=2):
    """The indices of the main diagonal of an ``n``-sided ``ndim``-d array (``n`` may be traced)."""
    from .creation import arange
    if int(ndim) < 0:
        raise ValueError("diag_indices: ndim must be non-negative")
    idx = arange(canonicalize_dim(n, "n"), dtype=np.int64)
    return (idx,) * int(ndim)


def diag_indices_from(arr):
    """``diag_indices`` for ``arr``, whose dims must all be equal (at least 2-d)."""
    from ..core.avals import same_dim
    shape = typeof(arr).shape
    if len(shape) < 2:
        raise ValueError("diag_indices_from: the input must be at least 2-d")
    if not all(same_dim(d, shape[0]) for d in shape):
        raise ValueError("diag_indices_from: all dimensions of the input must be of equal length")
    return diag_indices(shape[0], len(shape))


def _triangle_indices(n, k, m, lower):
    from .selection import nonzero
    from .windows import tri
    n = canonicalize_dim(n, "n")
    m = n if m is None else canonicalize_dim(m, "m")
    if lower:
        mask = tri(n, m, k, dtype=bool)
    else:
        mask = lax.bitwise_not(tri(n, m, _sub1(k), dtype=bool))
    return nonzero(mask)


def _sub1(k):
    return lax.sub(_i64(k), np.int64(1)) if isinstance(k, Tracer) else k - 1


def tril_indices(n, k=0, m=None):
    """The row and column indices of the lower triangle of an ``n x m`` array."""
    return _triangle_indices(n, k, m, True)


def triu_indices(n, k=0, m=None):
    """The row and column indices of the upper triangle of an ``n x m`` array."""
    return _triangle_indices(n, k, m, False)


def _matrix_dims(arr, name):
    shape = typeof(arr).shape
    if len(shape) != 2:
        raise ValueError(f"{name}: the input must be 2-d, got {len(shape)}-d")
    return shape


def tril_indices_from(arr, k=0):
    """``tril_indices`` for the shape of the 2-d ``arr``."""
    n, m = _matrix_dims(arr, "tril_indices_from")
    return tril_indices(n, k, m)


def triu_indices_from(arr, k=0):
    """``triu_indices`` for the shape of the 2-d ``arr``."""
    n, m = _matrix_dims(arr, "triu_indices_from")
    return triu_indices(n, k, m)


def mask_indices(n, mask_func, k=0, *, size=None):
    """The indices where ``mask_func(ones((n, n)), k)`` is non-zero (e.g. ``jnp.triu``)."""
    from .creation import ones
    from .selection import nonzero
    n = canonicalize_dim(n, "n")
    return nonzero(mask_func(ones((n, n), np.int64), k), size=size)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """A copy of ``a`` with its main diagonal set to ``val`` (cycled when shorter). As in JAX,
    ``inplace=False`` is required (arrays are immutable) and ``wrap=True`` is not supported."""
    from ..core.avals import same_dim
    from .creation import arange, asarray
    from .indexing import IndexUpdateHelper
    from .reductions import size as _size
    from .selection import take
    from .shape_ops import ravel
    if inplace:
        raise ValueError("fill_diagonal: arrays are immutable, pass inplace=False to get an updated copy")
    if wrap:
        raise NotImplementedError("fill_diagonal(wrap=True) is not implemented; use wrap=False")
    a = asarray(a)
    shape = typeof(a).shape
    if len(shape) < 2:
        raise ValueError("fill_diagonal: the array must be at least 2-d")
    if len(shape) > 2 and not all(same_dim(d, shape[0]) for d in shape):
        raise ValueError("fill_diagonal: all dimensions of the input must be of equal length")
    from .einsum import _min
    n = shape[0]
    for d in shape[1:]:
        n = _min(n, d)
    idx = arange(n, dtype=np.int64)
    v = ravel(asarray(val)).astype(typeof(a).dtype) if isinstance(val, Tracer) else \
        np.asarray(val, typeof(a).dtype).ravel()
    count = _size(v)
    if isinstance(count, int) and count == 0:
        return a
    vals = take(v, lax.rem(idx, _i64(count)) if not (isinstance(count, int) and count == 1) else idx * 0)
    return IndexUpdateHelper(a)[(idx,) * len(shape)].set(vals)


# --- flat <-> multi-dimensional indices ------------------------------------------------------------------
def _strides(dims):
    strides, s = [], 1
    for d in reversed(dims):
        strides.append(s)
        s = s * d if not isinstance(s, Tracer) and not isinstance(d, Tracer) else lax.mul(_i64(s), _i64(d))
    return list(reversed(strides)), s


def ravel_multi_index(multi_index, dims, mode="raise", order="C", *, dtype=None):
    """Flat indices of the coordinate arrays ``multi_index`` into an array of shape ``dims``.
    ``mode``: ``"clip"``, ``"wrap"``, or ``"raise"`` (checked on concrete indices; under
    tracing, ``"raise"`` cannot check and is refused: pick ``"clip"`` or ``"wrap"``)."""
    from .creation import asarray
    from ._promote import broadcast_arrays
    from .reductions import any as _any
    from .ufuncs import clip, mod
    if mode not in ("raise", "clip", "wrap"):
        raise ValueError(f"ravel_multi_index: mode must be 'raise', 'clip' or 'wrap', got {mode!r}")
    if order not in ("C", "F"):
        raise ValueError(f"ravel_multi_index: order must be 'C' or 'F', got {order!r}")
    dims = tuple(canonicalize_dim(d, "dims") for d in dims)
    idx = [asarray(i) for i in multi_index]
    if len(idx) != len(dims):
        raise ValueError(f"ravel_multi_index: {len(idx)} index arrays for {len(dims)} dims")
    for i in idx:
        if not np.issubdtype(typeof(i).dtype, np.integer):
            raise TypeError(f"ravel_multi_index: only integer indices are accepted, got {typeof(i).str_short()}")
    idx = [i.astype(np.int64) if isinstance(i, Tracer) else np.asarray(i, np.int64) for i in idx]
    idx = list(broadcast_arrays(*idx)) if idx else idx
    out_dt = np.dtype(np.int64) if dtype is None else np.dtype(dtype)
    if not idx:
        return np.zeros((), out_dt)
    fixed = []
    for i, d in zip(idx, dims):
        if mode == "clip":
            i = clip(i, 0, lax.sub(_i64(d), np.int64(1)) if isinstance(d, Tracer) else d - 1)
        elif mode == "wrap":
            i = mod(i, _i64(d))
        else:
            if any(isinstance(x, Tracer) for x in idx) or any(isinstance(d2, Tracer) for d2 in dims):
                raise TypeError("ravel_multi_index(mode='raise') cannot check traced indices; "
                                "use mode='clip' or mode='wrap'")
            if bool(_any((i < 0) | (i >= d))):
                raise ValueError("ravel_multi_index: invalid entry in coordinates array")
        fixed.append(i)
    order_dims = dims if order == "C" else dims[::-1]
    order_idx = fixed if order == "C" else fixed[::-1]
    strides, _ = _strides(order_dims)
    out = None
    for i, st in zip(order_idx, strides):
        term = i if (isinstance(st, int) and st == 1) else i * _i64(st)
        out = term if out is None else out + term
    return out.astype(out_dt) if isinstance(out, Tracer) else np.asarray(out, out_dt)


def unravel_index(indices, shape):
    """The coordinate arrays of the flat ``indices`` into an array of ``shape``. As in JAX,
    a negative index counts from the end and out-of-range indices are clipped."""
    from .creation import asarray
    from .ufuncs import clip, where
    idx = asarray(indices)
    if not np.issubdtype(typeof(idx).dtype, np.integer):
        raise TypeError(f"unravel_index: only integer indices are accepted, got {typeof(idx).str_short()}")
    dims = tuple(canonicalize_dim(d, "shape") for d in shape)
    idx = idx.astype(np.int64) if isinstance(idx, Tracer) else np.asarray(idx, np.int64)
    strides, total = _strides(dims)
    total = _i64(total)
    idx = where(idx < 0, idx + total, idx)
    idx = clip(idx, 0, total - np.int64(1))
    out = []
    for j, (st, d) in enumerate(zip(strides, dims)):
        c = idx if (isinstance(st, int) and st == 1) else lax.div(idx, _i64(st))
        if j > 0:
            c = lax.rem(c, _i64(d))
        out.append(c)
    return tuple(out)
