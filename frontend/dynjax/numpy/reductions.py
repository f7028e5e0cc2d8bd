"""Reductions over axes: sum, mean, max, min, prod, argmax, argmin, cumsum; size."""
from __future__ import annotations

import builtins

import numpy as np

from .. import lax
from ..core.avals import bool_, float64, int64, is_inexact_dtype, is_unsigned_dtype
from ..core.trace import Tracer, typeof
from ._promote import promote


def _axes(x, axis):
    nd = typeof(x).ndim
    if axis is None:
        return tuple(range(nd))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in axes:
        a = int(a)
        if not -nd <= a < nd:
            raise ValueError(f"axis {a} is out of bounds for an array of rank {nd}")
        out.append(a % nd)
    return tuple(sorted(set(out)))


def _keep(x_shape, out, axes, keepdims):
    if not keepdims:
        return out
    shape = tuple(1 if i in axes else d for i, d in enumerate(x_shape))
    return lax.reshape(out, shape) if typeof(out).ndim else lax.broadcast_in_dim(out, shape, ())


def _prep(x):
    if isinstance(x, (list, tuple)):
        from .creation import asarray
        x = asarray(x)
    (x,) = promote(x)
    return x


def _accumulation_dtype(x, dtype):
    """numpy's accumulator: ``dtype`` if given, else int64 for bools and small signed integers,
    uint64 for small unsigned ones."""
    a = typeof(x)
    if dtype is not None:
        return lax.convert_element_type(x, dtype)
    if is_unsigned_dtype(a.dtype) and a.dtype != np.uint64:
        return lax.convert_element_type(x, np.dtype(np.uint64))
    if a.dtype == bool_ or (np.issubdtype(a.dtype, np.integer) and a.dtype.kind == "i" and a.dtype != int64):
        return lax.convert_element_type(x, int64)
    return x


def sum(x, axis=None, dtype=None, keepdims=False):
    x = _prep(x)
    shape = typeof(x).shape
    x = _accumulation_dtype(x, dtype)
    axes = _axes(x, axis)
    return _keep(shape, lax.reduce_sum(x, axes), axes, keepdims)


def prod(x, axis=None, dtype=None, keepdims=False):
    x = _prep(x)
    shape = typeof(x).shape
    x = _accumulation_dtype(x, dtype)
    axes = _axes(x, axis)
    return _keep(shape, lax.reduce_prod(x, axes), axes, keepdims)


def _extremum(lax_fn, name, x, axis, keepdims, out=None, initial=None, where=None):
    if out is not None:
        raise NotImplementedError(f"{name}: the out argument is not supported (arrays are immutable)")
    x = _prep(x)
    shape = typeof(x).shape
    axes = _axes(x, axis)
    if where is not None:
        if initial is None:
            raise ValueError(f"reduction operation {name} does not have an identity, so to use a "
                             "where mask one has to specify 'initial'")
        from ._promote import broadcast_to_shape
        from .creation import asarray
        from .ufuncs import where as select
        mask = asarray(where)
        if typeof(mask).dtype != bool_:
            raise TypeError(f"{name}: where must be a boolean array, got {typeof(mask).str_short()}")
        mask = broadcast_to_shape(mask, shape)
        x = select(mask, x, _lowest_or_highest(typeof(x).dtype, name == "maximum"))
    if initial is None and builtins.any(isinstance(shape[i], int) and shape[i] == 0 for i in axes):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    out = lax_fn(x, axes)
    if initial is not None:
        out = _combine_initial(out, initial, name)
    return _keep(shape, out, axes, keepdims)


def _lowest_or_highest(dtype, lowest):
    """The identity of max (``lowest``) or min: -inf/+inf, the integer limits, False/True."""
    dtype = np.dtype(dtype)
    if dtype == bool_:
        return np.bool_(not lowest)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return dtype.type(info.min if lowest else info.max)
    if np.issubdtype(dtype, np.complexfloating):
        raise TypeError("max/min with where= is not supported for complex arrays")
    return dtype.type(-np.inf if lowest else np.inf)


def _combine_initial(out, initial, name):
    """``maximum(out, initial)`` / ``minimum``: ``initial`` (a scalar) takes ``out``'s dtype."""
    from .creation import asarray
    init = asarray(initial)
    if typeof(init).ndim != 0:
        raise ValueError(f"{name}: initial must be a scalar, got {typeof(init).str_short()}")
    dt = typeof(out).dtype
    if typeof(init).dtype != dt:
        init = lax.convert_element_type(init, dt)
    if typeof(out).ndim:
        init = lax.broadcast_in_dim(init, typeof(out).shape, ())
    return (lax.max if name == "maximum" else lax.min)(out, init)


def max(x, axis=None, out=None, keepdims=False, initial=None, where=None):
    """numpy.max over ``axis``. A dynamic axis that turns out empty gives the dtype's minimum
    (or ``initial``). ``initial`` joins every result; ``where`` (a boolean mask broadcast to
    ``x``) leaves out elements, and needs ``initial``."""
    return _extremum(lax.reduce_max, "maximum", x, axis, keepdims, out, initial, where)


def min(x, axis=None, out=None, keepdims=False, initial=None, where=None):
    """numpy.min over ``axis``. A dynamic axis that turns out empty gives the dtype's maximum
    (or ``initial``). ``initial`` joins every result; ``where`` (a boolean mask broadcast to
    ``x``) leaves out elements, and needs ``initial``."""
    return _extremum(lax.reduce_min, "minimum", x, axis, keepdims, out, initial, where)


amax, amin = max, min


def count(x, axes):
    """The number of elements over ``axes`` (an int, or a traced integer when dynamic)."""
    n = 1
    for i in axes:
        d = typeof(x).shape[i]
        if isinstance(d, int) and d == 1:
            continue
        n = d if isinstance(n, int) and n == 1 else n * d
    return n


def size(x, axis=None):
    a = typeof(x)
    return count(x, range(a.ndim) if axis is None else _axes(x, axis))


def mean(x, axis=None, dtype=None, keepdims=False):
    x = _prep(x)
    a = typeof(x)
    axes = _axes(x, axis)
    out_dtype = dtype if dtype is not None else (a.dtype if is_inexact_dtype(a.dtype) else float64)
    # numpy sums and divides 16-bit floats in float32, rounding the mean once at the end
    work = np.dtype(np.float32) if dtype is None and np.dtype(out_dtype).itemsize == 2 else out_dtype
    s = sum(lax.convert_element_type(x, work) if typeof(x).dtype != work else x, axes,
            keepdims=keepdims)
    n = count(x, axes)
    if isinstance(n, Tracer):
        n = lax.convert_element_type(n, work)
    else:
        n = np.dtype(work).type(n)
    from .ufuncs import true_divide
    out = true_divide(s, n)
    return out if work == out_dtype else lax.convert_element_type(out, out_dtype)


def _arg(lax_fn, name):
    def fn(x, axis=None, keepdims=False):
        x = _prep(x)
        shape = typeof(x).shape
        if axis is None:
            from .shape_ops import ravel
            x, axis = ravel(x), 0
        (ax,) = _axes(x, axis)
        if isinstance(typeof(x).shape[ax], int) and typeof(x).shape[ax] == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence")
        out = lax_fn(x, ax)
        if typeof(x).ndim != len(shape):  # axis=None: every axis was reduced
            return _keep(shape, out, tuple(range(len(shape))), keepdims)
        return _keep(shape, out, (ax,), keepdims)
    fn.__name__ = name
    fn.__doc__ = f"numpy.{name}: the index of the first extremum along ``axis`` (flattened if None)."
    return fn


argmax = _arg(lax.argmax, "argmax")
argmin = _arg(lax.argmin, "argmin")


def cumsum(x, axis=None, dtype=None):
    x = _prep(x)
    if axis is None:
        from .shape_ops import ravel
        x = ravel(x)
        axis = 0
    x = _accumulation_dtype(x, dtype)
    (ax,) = _axes(x, axis)
    return lax.cumsum(x, ax)


def _truth_reduction(lax_fn, x, axis, keepdims):
    from .ufuncs import not_equal
    x = _prep(x)
    b = x if typeof(x).dtype == bool_ else not_equal(x, 0)
    axes = _axes(b, axis)
    return _keep(typeof(b).shape, lax_fn(b, axes), axes, keepdims)


def any(x, axis=None, keepdims=False):
    """numpy.any: whether some element along ``axis`` is true (False for an empty axis)."""
    return _truth_reduction(lax.reduce_max, x, axis, keepdims)


def all(x, axis=None, keepdims=False):
    """numpy.all: whether every element along ``axis`` is true (True for an empty axis)."""
    return _truth_reduction(lax.reduce_min, x, axis, keepdims)


def var(x, axis=None, dtype=None, ddof=0, keepdims=False):
    """The variance ``mean(|x - mean(x)|**2)`` over ``axis``, divided by ``N - ddof`` (numpy
    semantics: a complex input gives a real variance; integers are computed in float64)."""
    from .ufuncs import conj, multiply, real, subtract, true_divide
    x = _prep(x)
    a = typeof(x)
    axes = _axes(x, axis)
    work = dtype if dtype is not None else (a.dtype if is_inexact_dtype(a.dtype) else float64)
    xs = lax.convert_element_type(x, work) if a.dtype != work else x
    centered = subtract(xs, mean(xs, axes, keepdims=True))
    sq = real(multiply(centered, conj(centered)))
    total = sum(sq, axes, keepdims=keepdims)
    n = count(x, axes)
    out_dt = typeof(total).dtype
    if isinstance(n, Tracer):
        d = lax.convert_element_type(lax.max(lax.sub(n, np.int64(ddof)), np.int64(0)), out_dt)
    else:
        d = out_dt.type(builtins.max(n - ddof, 0))
    return true_divide(total, d)


def std(x, axis=None, dtype=None, ddof=0, keepdims=False):
    """The standard deviation, ``sqrt(var(...))``."""
    from .ufuncs import sqrt
    return sqrt(var(x, axis, dtype, ddof, keepdims))


def count_nonzero(x, axis=None, keepdims=False):
    """How many elements are not zero (an int64 count)."""
    from .ufuncs import not_equal
    x = _prep(x)
    nz = not_equal(x, typeof(x).dtype.type(0))
    return sum(lax.convert_element_type(nz, int64), axis, keepdims=keepdims)


def _without_nans(x, fill):
    """``x`` with NaNs replaced by ``fill`` (integers and bools have none)."""
    from .ufuncs import isnan, where
    if not is_inexact_dtype(typeof(x).dtype):
        return x
    return where(isnan(x), fill, x)


def nansum(x, axis=None, dtype=None, keepdims=False):
    """``sum`` treating NaNs as zero."""
    x = _prep(x)
    return sum(_without_nans(x, 0), axis, dtype, keepdims)


def nanmean(x, axis=None, dtype=None, keepdims=False):
    """``mean`` of the elements that are not NaN (NaN where there is none)."""
    from .ufuncs import isnan, logical_not, true_divide
    x = _prep(x)
    a = typeof(x)
    out_dtype = dtype if dtype is not None else (a.dtype if is_inexact_dtype(a.dtype) else float64)
    total = sum(_without_nans(x, 0), axis, out_dtype, keepdims)
    kept = sum(lax.convert_element_type(logical_not(isnan(x)), int64), axis, keepdims=keepdims)
    real = np.empty((), out_dtype).real.dtype
    return true_divide(total, lax.convert_element_type(kept, real) if isinstance(kept, Tracer)
                       else np.asarray(kept, real))


def _nan_extremum(fn, name, fill):
    def reduce(x, axis=None, keepdims=False):
        from .ufuncs import isnan, where
        x = _prep(x)
        if not is_inexact_dtype(typeof(x).dtype):
            return fn(x, axis, keepdims=keepdims)
        out = fn(_without_nans(x, fill), axis, keepdims=keepdims)
        # all NaN: NaN (as numpy, without its warning)
        all_nan = all(isnan(x), axis, keepdims=keepdims)
        return where(all_nan, typeof(out).dtype.type(np.nan), out)
    reduce.__name__ = name
    reduce.__doc__ = f"``{name[3:]}`` ignoring NaNs (NaN where every element is NaN)."
    return reduce


nanmax = _nan_extremum(max, "nanmax", -np.inf)
nanmin = _nan_extremum(min, "nanmin", np.inf)


def cumprod(x, axis=None, dtype=None):
    """The running product along ``axis`` (the flattened array when None), accumulated in
    numpy's dtype (int64 for small signed integers and bools, uint64 for small unsigned)."""
    x = _prep(x)
    if axis is None:
        from .shape_ops import ravel
        x, axis = ravel(x), 0
    x = _accumulation_dtype(x, dtype)
    (ax,) = _axes(x, axis)
    return lax.cumprod(x, ax)


def nancumsum(x, axis=None, dtype=None):
    """``cumsum`` treating NaNs as zero."""
    x = _prep(x)
    return cumsum(_without_nans(x, 0), axis, dtype)


def nancumprod(x, axis=None, dtype=None):
    """``cumprod`` treating NaNs as one."""
    x = _prep(x)
    return cumprod(_without_nans(x, 1), axis, dtype)


def ptp(x, axis=None, keepdims=False):
    """The range ``max - min`` along ``axis``."""
    from .ufuncs import subtract
    x = _prep(x)
    return subtract(max(x, axis, keepdims=keepdims), min(x, axis, keepdims=keepdims))
