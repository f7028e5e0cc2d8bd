"""Order statistics and weighted means: median, quantile, percentile (and their NaN-ignoring
forms), average.

The order statistics sort along the reduced axis and read the sorted values at positions
computed from the number of elements, so they work on dynamic axes: the count is a traced
integer, and for the ``nan*`` forms it is counted per row (NaNs sort last, so the first
``count`` sorted values are the valid ones). Results follow numpy's formulas bit for bit:
the median is the mean of the middle two values, ``quantile(method="linear")`` interpolates
as numpy's ``_lerp`` does (from the nearer end).
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import bool_, float32, float64, int64, is_complex_dtype, is_float_dtype, same_dim
from ..core.trace import Tracer, typeof
from ._promote import promote, result_dtype
from .reductions import _axes, _prep

_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _reduced_last(x, axis):
    """``x`` with the reduced axes merged into one last axis; the kept axes' shape; the axes."""
    from .shape_ops import reshape
    a = typeof(x)
    axes = _axes(x, axis)
    kept = [i for i in range(a.ndim) if i not in axes]
    moved = lax.transpose(x, tuple(kept) + tuple(axes)) if kept and axes else x
    shape = tuple(a.shape[i] for i in kept)
    if len(axes) != 1:
        moved = reshape(moved, shape + (-1,))
    return moved, shape, axes


def _check_real(name, x):
    a = typeof(x)
    if is_complex_dtype(a.dtype):
        raise TypeError(f"{name}: complex values have no order (got {a.str_short()})")
    if a.dtype == bool_:
        raise TypeError(f"{name}: bool values cannot be interpolated (got {a.str_short()}); "
                        "convert them to a number type first")


def _valid_count(s, ignore_nans):
    """How many sorted values along the last axis count, per row (the kept shape): all of
    them, or those that are not NaN."""
    from .reductions import sum as _sum
    from .ufuncs import isnan, logical_not
    sh = tuple(typeof(s).shape)
    if ignore_nans and is_float_dtype(typeof(s).dtype):
        return _sum(lax.convert_element_type(logical_not(isnan(s)), int64), axis=-1)
    return lax.broadcast_in_dim(_as_i64(sh[-1]), sh[:-1], ())


def _as_i64(n):
    return lax.convert_element_type(n, int64) if isinstance(n, Tracer) else np.int64(n)


def _read(s, idx):
    """``s[..., idx]`` row by row; ``idx`` has the kept shape plus a last axis of positions
    (negative positions of empty rows read the first value, which is then replaced)."""
    from .selection import take_along_axis
    from .ufuncs import maximum
    return take_along_axis(s, maximum(idx, np.int64(0)), axis=-1, mode="clip")


def _column(v):
    """A row-shaped value with a last axis of one position."""
    sh = tuple(typeof(v).shape)
    return lax.broadcast_in_dim(v, sh + (1,), tuple(range(len(sh))))


def _nan_rows(s, m, ignore_nans):
    """The rows whose statistic is NaN: those with no valid value, and (NaNs not ignored)
    those holding a NaN, whose last sorted value is NaN (NaNs sort last)."""
    from .ufuncs import equal, isnan, logical_or, subtract
    bad = equal(m, np.int64(0))
    if not ignore_nans:
        n = typeof(s).shape[-1]
        last = _read(s, _column(subtract(lax.broadcast_in_dim(_as_i64(n), typeof(m).shape, ()), np.int64(1))))
        bad = logical_or(bad, isnan(last[..., 0]))
    return bad


def _to_nan(out, bad):
    """``out`` with NaN where ``bad`` (its trailing axes), for float results."""
    from .ufuncs import where
    oa = typeof(out)
    if not is_float_dtype(oa.dtype):
        return out
    k = oa.ndim - typeof(bad).ndim
    bad = lax.broadcast_in_dim(bad, tuple(oa.shape), tuple(range(k, oa.ndim)))
    return where(bad, oa.dtype.type(np.nan), out)


def _finish(out, kept_shape, axes, ndim, keepdims, q_ndim=0):
    """With ``keepdims``, the reduced axes come back with size 1 (after the quantile axes)."""
    if not keepdims:
        return out
    from .shape_ops import reshape
    it = iter(kept_shape)
    full = [1 if i in axes else next(it) for i in range(ndim)]
    return reshape(out, tuple(typeof(out).shape[:q_ndim]) + tuple(full))


def _median(a, axis, keepdims, ignore_nans, name):
    from .sorting import sort
    from .ufuncs import add, equal, true_divide, where
    a = _prep(a)
    _check_real(name, a)
    nd = typeof(a).ndim
    x, shape, axes = _reduced_last(a, axis)
    dtype = typeof(x).dtype
    out_dtype = dtype if is_float_dtype(dtype) else float64
    work = float32 if out_dtype.itemsize < 4 else out_dtype   # numpy's mean of 16-bit floats
    s = sort(x, axis=-1)
    m = _valid_count(s, ignore_nans)
    lo = _column(lax.div(lax.sub(m, np.int64(1)), np.int64(2)))
    hi = _column(lax.div(m, np.int64(2)))
    a_lo = lax.convert_element_type(_read(s, lo)[..., 0], work)
    a_hi = lax.convert_element_type(_read(s, hi)[..., 0], work)
    mid = true_divide(add(a_lo, a_hi), work.type(2))   # the mean of the middle two, as numpy
    out = lax.convert_element_type(where(equal(lo[..., 0], hi[..., 0]), a_lo, mid), out_dtype)
    out = _to_nan(out, _nan_rows(s, m, ignore_nans))
    return _finish(out, shape, axes, nd, keepdims)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median along ``axis``: the middle value, or the mean of the middle two; NaN if the
    values hold a NaN, and for an empty axis (where numpy also warns)."""
    _no_out("median", out)
    return _median(a, axis, keepdims, False, "median")


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """``median`` of the values that are not NaN (NaN where there is none)."""
    _no_out("nanmedian", out)
    return _median(a, axis, keepdims, True, "nanmedian")


def _no_out(name, out):
    if out is not None:
        raise TypeError(f"{name}: dynjax arrays are immutable, the out= argument is not supported")


def _quantile(a, q, axis, method, keepdims, ignore_nans, name, scale=1):
    from .creation import asarray
    from .shape_ops import moveaxis, reshape
    from .sorting import sort
    from .ufuncs import (add, ceil, floor, greater_equal, minimum, multiply, not_equal, rint, subtract,
                         true_divide, where)
    if method not in _METHODS:
        raise ValueError(f"{name}: method {method!r} is not supported; use one of {', '.join(_METHODS)}")
    a = _prep(a)
    _check_real(name, a)
    weak_q = type(q) in (int, float)
    q = asarray(q)
    qa = typeof(q)
    if not (is_float_dtype(qa.dtype) or np.issubdtype(qa.dtype, np.integer)) or qa.dtype == bool_:
        raise TypeError(f"{name}: q must be real numbers, got {qa.str_short()}")
    if not isinstance(q, Tracer):
        qv = np.asarray(q)
        if qv.size and (np.any(qv < 0) or np.any(qv > scale) or np.any(np.isnan(qv))):
            what = "quantiles" if scale == 1 else "percentiles"
            raise ValueError(f"{name}: {what} must be in the range [0, {scale}]")
    if not is_float_dtype(qa.dtype):
        q = lax.convert_element_type(q, float64)
    if scale != 1:
        q = true_divide(q, typeof(q).dtype.type(scale))
    nd = typeof(a).ndim
    x, shape, axes = _reduced_last(a, axis)
    dtype = typeof(x).dtype
    discrete = method in ("lower", "higher", "nearest")
    # a Python number q is weakly typed (float32 values give float32 quantiles), an array
    # of q promotes with the values
    base = x if is_float_dtype(dtype) else lax.convert_element_type(x, float64)
    out_dtype = dtype if discrete else (typeof(base).dtype if weak_q else result_dtype(base, q)[0])
    s = sort(x, axis=-1)
    m_rows = _valid_count(s, ignore_nans)
    q_shape = tuple(typeof(q).shape)
    q_flat = q if len(q_shape) == 1 else reshape(q, (-1,))
    k = typeof(q_flat).shape[0]
    r = len(shape)
    # g[..., j] = q_j * (m - 1), the kept shape then one position per quantile
    last = lax.convert_element_type(subtract(m_rows, np.int64(1)), typeof(q_flat).dtype)
    g = multiply(lax.broadcast_in_dim(q_flat, shape + (k,), (r,)),
                 lax.broadcast_in_dim(last, shape + (k,), tuple(range(r))))
    top = lax.broadcast_in_dim(subtract(m_rows, np.int64(1)), shape + (k,), tuple(range(r)))
    if method == "nearest":
        below = above = lax.convert_element_type(rint(g), int64)   # half to even, as numpy
    elif method == "lower":
        below = above = lax.convert_element_type(floor(g), int64)
    elif method == "higher":
        below = above = lax.convert_element_type(ceil(g), int64)
    else:
        below = lax.convert_element_type(floor(g), int64)
        above = minimum(add(below, np.int64(1)), top)
    v_lo = _read(s, minimum(below, top))
    if discrete:
        out = v_lo
    else:
        v_hi = _read(s, above)
        v_lo = lax.convert_element_type(v_lo, out_dtype)
        v_hi = lax.convert_element_type(v_hi, out_dtype)
        if method == "midpoint":
            frac = where(not_equal(floor(g), ceil(g)), 0.5, 0.0)
        else:
            frac = subtract(g, floor(g))
        t = lax.convert_element_type(frac, out_dtype)
        d = subtract(v_hi, v_lo)
        out = where(greater_equal(t, out_dtype.type(0.5)),
                    subtract(v_hi, multiply(d, subtract(out_dtype.type(1), t))),
                    add(v_lo, multiply(d, t)))
    out = moveaxis(out, -1, 0)                        # the quantiles first, as numpy
    out = _to_nan(out, _nan_rows(s, m_rows, ignore_nans))
    if len(q_shape) != 1:
        out = reshape(out, q_shape + tuple(shape))
    return _finish(out, shape, axes, nd, keepdims, len(q_shape))


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """The ``q``-th quantiles (``q`` in [0, 1], a number or an array, possibly traced) along
    ``axis``, with numpy's ``method`` among linear, lower, higher, nearest and midpoint. The
    quantile axes come first. NaN if the values hold a NaN or are empty (numpy raises)."""
    _no_out("quantile", out)
    return _quantile(a, q, axis, method, keepdims, False, "quantile")


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """``quantile`` of the values that are not NaN, counted per row."""
    _no_out("nanquantile", out)
    return _quantile(a, q, axis, method, keepdims, True, "nanquantile")


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """``quantile(a, q / 100)``: ``q`` in percent."""
    _no_out("percentile", out)
    return _quantile(a, q, axis, method, keepdims, False, "percentile", 100)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """``nanquantile(a, q / 100)``."""
    _no_out("nanpercentile", out)
    return _quantile(a, q, axis, method, keepdims, True, "nanpercentile", 100)


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """The mean of ``a`` along ``axis``, weighted by ``weights`` (the shape of ``a``, or 1-D
    along a single ``axis``): ``sum(a * w) / sum(w)``. ``returned``: also the sum of the
    weights, broadcast to the result's shape. A zero weight sum gives inf or NaN (numpy
    raises ZeroDivisionError, which a traced sum cannot)."""
    from .creation import asarray
    from .reductions import mean, sum as _sum
    from .ufuncs import multiply, true_divide
    a = _prep(a)
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        if not returned:
            return avg
        from .reductions import count
        n = count(a, _axes(a, axis))
        scl = lax.convert_element_type(n, typeof(avg).dtype) if isinstance(n, Tracer) else \
            np.asarray(n, typeof(avg).dtype)
        return avg, lax.broadcast_in_dim(scl, typeof(avg).shape, ())
    w = asarray(weights)
    aa, wa = typeof(a), typeof(w)
    base = a if not (aa.dtype == bool_ or np.issubdtype(aa.dtype, np.integer)) else \
        lax.convert_element_type(a, float64)
    out_dtype = result_dtype(base, w)[0]
    if not (wa.ndim == aa.ndim and all(same_dim(d, e) for d, e in zip(wa.shape, aa.shape))):
        if axis is None:
            raise TypeError("average: axis must be given when the shapes of a and weights differ")
        axes = _axes(a, axis)
        if wa.ndim != len(axes):
            raise TypeError("average: 1-D weights expected when the shapes of a and weights differ")
        if wa.ndim == 1 and not same_dim(wa.shape[0], aa.shape[axes[0]]):
            raise ValueError(f"average: the length of weights ({wa.shape[0]}) differs from the "
                             f"length of a along axis {axes[0]} ({aa.shape[axes[0]]})")
        w = lax.broadcast_in_dim(w, tuple(aa.shape), tuple(axes))
    (w,) = promote(lax.convert_element_type(w, out_dtype))
    scl = _sum(w, axis, keepdims=keepdims)
    avg = true_divide(_sum(multiply(lax.convert_element_type(a, out_dtype), w), axis, keepdims=keepdims), scl)
    if returned:
        if typeof(scl).ndim != typeof(avg).ndim:
            scl = lax.broadcast_in_dim(scl, typeof(avg).shape, ())
        return avg, scl
    return avg
