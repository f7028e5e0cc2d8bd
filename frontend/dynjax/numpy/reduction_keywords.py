"""JAX's signatures for the reductions of ``reductions.py``: ``out`` in its position
(refused: arrays are immutable), ``where=`` masks, ``initial=`` for ``sum``/``prod``,
``promote_integers`` and ``correction`` (the array API's ``ddof``).

These wrappers are what ``jnp.sum`` etc. (and the methods ``x.sum()``) are; dynjax's own
modules call ``reductions.py`` directly with its shorter signatures.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import bool_, float64, is_inexact_dtype
from ..core.trace import Tracer, typeof
from . import reductions as R


def _no_out(name, out):
    if out is not None:
        raise NotImplementedError(f"{name}: the out argument is not supported (arrays are immutable)")


def _arr(a):
    from .creation import asarray
    return asarray(a)


def _mask(where, shape, name):
    from ._promote import broadcast_to_shape
    m = _arr(where)
    if typeof(m).dtype != bool_:
        raise TypeError(f"{name}: where must be a boolean array, got {typeof(m).str_short()}")
    return broadcast_to_shape(m, shape)


def _fill(x, mask, value):
    v = lax.broadcast_in_dim(np.asarray(value, typeof(x).dtype)[()], typeof(x).shape, ())
    return lax.select(mask, x, v)


def _with_initial(r, initial, combine):
    if initial is None:
        return r
    init = _arr(initial)
    init = init.astype(typeof(r).dtype) if isinstance(init, Tracer) else np.asarray(init, typeof(r).dtype)[()]
    return combine(r, init)


def _monoid(name, reduce, combine, identity, a, axis, dtype, out, keepdims, initial, where,
            promote_integers):
    """``sum`` / ``prod``: ``where`` fills masked elements with the ``identity``, integers
    keep their dtype unless ``promote_integers``, ``initial`` is ``combine``d in."""
    _no_out(name, out)
    a = _arr(a)
    if where is not None:
        a = _fill(a, _mask(where, typeof(a).shape, name), identity)
    if dtype is None and not promote_integers and not is_inexact_dtype(typeof(a).dtype) \
            and typeof(a).dtype != bool_:
        dtype = typeof(a).dtype
    return _with_initial(reduce(a, axis, dtype, keepdims=keepdims), initial, combine)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None, promote_integers=True):
    """The sum over ``axis``; ``where`` masks elements out, ``initial`` is added."""
    from .ufuncs import add
    return _monoid("sum", R.sum, add, 0, a, axis, dtype, out, keepdims, initial, where, promote_integers)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None, promote_integers=True):
    """The product over ``axis``; ``where`` masks elements out, ``initial`` multiplies in."""
    from .ufuncs import multiply
    return _monoid("prod", R.prod, multiply, 1, a, axis, dtype, out, keepdims, initial, where,
                   promote_integers)


def _masked_mean(a, mask, axis, dtype, keepdims):
    """``sum(a[mask]) / count(mask)`` over ``axis`` (NaN where nothing is selected)."""
    from .ufuncs import true_divide
    dt = typeof(a).dtype
    out_dtype = np.dtype(dtype) if dtype is not None else (dt if is_inexact_dtype(dt) else float64)
    xs = lax.convert_element_type(a, out_dtype) if dt != out_dtype else a
    total = R.sum(_fill(xs, mask, 0), axis, keepdims=keepdims)
    real = np.empty((), out_dtype).real.dtype
    n = R.sum(lax.convert_element_type(mask, real), axis, keepdims=keepdims)
    return true_divide(total, n)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """The mean over ``axis`` of the elements ``where`` selects."""
    _no_out("mean", out)
    a = _arr(a)
    if where is None:
        return R.mean(a, axis, dtype, keepdims=keepdims)
    return _masked_mean(a, _mask(where, typeof(a).shape, "mean"), axis, dtype, keepdims)


def _ddof(ddof, correction, name):
    if correction is not None:
        if ddof != 0:
            raise ValueError(f"{name}: ddof and correction can't be provided simultaneously")
        return correction
    return ddof


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    """The variance over ``axis`` of the elements ``where`` selects, divided by
    ``count - ddof`` (``correction`` is the array API's name for ``ddof``)."""
    from .ufuncs import conj, multiply, real, true_divide
    _no_out("var", out)
    ddof = _ddof(ddof, correction, "var")
    a = _arr(a)
    if where is None:
        return R.var(a, axis, dtype, ddof=ddof, keepdims=keepdims)
    mask = _mask(where, typeof(a).shape, "var")
    dt = typeof(a).dtype
    work = np.dtype(dtype) if dtype is not None else (dt if is_inexact_dtype(dt) else float64)
    xs = lax.convert_element_type(a, work) if dt != work else a
    centered = xs - _masked_mean(xs, mask, axis, None, True)
    sq = real(multiply(centered, conj(centered)))
    total = R.sum(_fill(sq, mask, 0), axis, keepdims=keepdims)
    rdt = typeof(total).dtype
    n = R.sum(lax.convert_element_type(mask, rdt), axis, keepdims=keepdims)
    d = lax.max(n - np.asarray(ddof, rdt)[()], np.asarray(0, rdt)[()]) if isinstance(n, Tracer) \
        else np.maximum(n - ddof, 0).astype(rdt)
    return true_divide(total, d)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    """``sqrt(var(...))``."""
    from .ufuncs import sqrt
    return sqrt(var(a, axis, dtype, out, ddof, keepdims, where=where, correction=correction))


def _truth(name, a, axis, out, keepdims, where, unselected):
    """``any`` / ``all``: the elements ``where`` leaves out count as ``unselected``."""
    _no_out(name, out)
    a = _arr(a)
    if where is not None:
        t = a if typeof(a).dtype == bool_ else a != 0
        a = _fill(t, _mask(where, typeof(a).shape, name), unselected)
    return getattr(R, name)(a, axis, keepdims=keepdims)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    """Whether some element ``where`` selects along ``axis`` is true."""
    return _truth("any", a, axis, out, keepdims, where, False)


def all(a, axis=None, out=None, keepdims=False, *, where=None):
    """Whether every element ``where`` selects along ``axis`` is true."""
    return _truth("all", a, axis, out, keepdims, where, True)


def _arg(name):
    base = getattr(R, name)

    def fn(a, axis=None, out=None, keepdims=None):
        _no_out(name, out)
        return base(a, axis, keepdims=bool(keepdims))
    fn.__name__ = name
    fn.__doc__ = base.__doc__
    return fn


argmax = _arg("argmax")
argmin = _arg("argmin")


def _cumulative(name):
    base = getattr(R, name)

    def fn(a, axis=None, dtype=None, out=None):
        _no_out(name, out)
        return base(a, axis, dtype)
    fn.__name__ = name
    fn.__doc__ = f"numpy's ``{name}`` along ``axis`` (the flattened array when None)."
    return fn


cumsum = _cumulative("cumsum")
cumprod = _cumulative("cumprod")
nancumsum = _cumulative("nancumsum")
nancumprod = _cumulative("nancumprod")


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``sum`` treating NaNs as zero."""
    return sum(R._without_nans(_arr(a), 0), axis, dtype, out, keepdims, initial, where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """``mean`` of the elements that are not NaN (and that ``where`` selects)."""
    from .ufuncs import isnan, logical_not
    _no_out("nanmean", out)
    a = _arr(a)
    if where is None:
        return R.nanmean(a, axis, dtype, keepdims=keepdims)
    mask = _mask(where, typeof(a).shape, "nanmean")
    if is_inexact_dtype(typeof(a).dtype):
        mask = lax.bitwise_and(mask, logical_not(isnan(a)))
    return _masked_mean(a, mask, axis, dtype, keepdims)
