"""NaN-ignoring reductions (``nanprod nanvar nanstd nanargmax nanargmin``) and covariance
(``cov corrcoef``), written with the reductions of ``reductions.py``.

Along a dynamic axis the number of non-NaN elements is a traced count, so one trace
serves every length; as in JAX, ``nanargmax``/``nanargmin`` of an all-NaN slice give -1.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import float64, int64, is_complex_dtype, is_inexact_dtype
from ..core.trace import Tracer, typeof


def _arr(a):
    from .creation import asarray
    return asarray(a)


def _no(name, **kw):
    for k, v in kw.items():
        if v is not None:
            raise NotImplementedError(f"{name}: the {k} argument is not supported")


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``prod`` treating NaNs as one."""
    from .reductions import _without_nans, prod
    _no("nanprod", out=out, initial=initial, where=where)
    return prod(_without_nans(_arr(a), 1), axis, dtype, keepdims)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """The variance of the elements that are not NaN, divided by ``count - ddof`` (NaN when
    that is not positive); complex input gives a real variance."""
    from .reductions import _without_nans, sum as _sum
    from .ufuncs import conj, isnan, logical_not, multiply, real, true_divide, where as _where
    _no("nanvar", out=out, where=where, mean=mean)
    a = _arr(a)
    dt = typeof(a).dtype
    work = dtype if dtype is not None else (dt if is_inexact_dtype(dt) else float64)
    x = lax.convert_element_type(a, np.dtype(work)) if dt != np.dtype(work) else a
    keep = logical_not(isnan(x))
    kept = _sum(lax.convert_element_type(keep, int64), axis, keepdims=True)
    rdt = np.empty((), work).real.dtype
    kept_f = lax.convert_element_type(kept, rdt) if isinstance(kept, Tracer) else np.asarray(kept, rdt)
    avg = true_divide(_sum(_without_nans(x, 0), axis, keepdims=True), kept_f)
    c = _where(keep, x - avg, np.asarray(0, np.dtype(work))[()])
    sq = real(multiply(c, conj(c)))
    total = _sum(sq, axis, keepdims=keepdims)
    n = _sum(lax.convert_element_type(keep, int64), axis, keepdims=keepdims)
    d = n - np.int64(ddof)
    d_f = lax.convert_element_type(d, rdt) if isinstance(d, Tracer) else np.asarray(d, rdt)
    out_ = true_divide(total, d_f)
    return _where(d <= 0, np.asarray(np.nan, rdt)[()], out_)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """``sqrt(nanvar(...))``."""
    from .ufuncs import sqrt
    return sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where, mean))


def _nanarg(name, fill_sign):
    def fn(a, axis=None, out=None, keepdims=None):
        from .reductions import all as _all, argmax, argmin
        from .ufuncs import isnan, where
        _no(name, out=out)
        a = _arr(a)
        keepdims = bool(keepdims)
        base = argmax if fill_sign < 0 else argmin
        if not is_inexact_dtype(typeof(a).dtype):
            return base(a, axis, keepdims=keepdims)
        if is_complex_dtype(typeof(a).dtype):
            raise TypeError(f"{name} does not support complex-valued inputs, got {typeof(a).str_short()}")
        fill = np.asarray(fill_sign * np.inf, typeof(a).dtype)[()]
        idx = base(where(isnan(a), fill, a), axis, keepdims=keepdims)
        all_nan = _all(isnan(a), axis, keepdims=keepdims)
        return where(all_nan, np.int64(-1), idx)
    fn.__name__ = name
    fn.__doc__ = (f"The index of the {'largest' if fill_sign < 0 else 'smallest'} element ignoring NaNs "
                  "(-1 where every element is NaN, as in JAX).")
    return fn


nanargmax = _nanarg("nanargmax", -1)
nanargmin = _nanarg("nanargmin", 1)


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, dtype=None):
    """The covariance matrix of the variables in the rows of ``m`` (columns with
    ``rowvar=False``), optionally with the ones of ``y``; frequency and analytic weights as
    in numpy. A single variable gives a 0-d result."""
    from .reductions import sum as _sum
    from .shape_ops import atleast_2d, concatenate
    from .ufuncs import _to_float, conj, true_divide
    from ._promote import promote
    X = atleast_2d(_to_float(_arr(m)))
    if typeof(X).ndim > 2:
        raise ValueError("cov: m has more than 2 dimensions")
    if not rowvar and typeof(X).shape[0] != 1:
        X = X.T
    if y is not None:
        Y = atleast_2d(_to_float(_arr(y)))
        if not rowvar and typeof(Y).shape[0] != 1:
            Y = Y.T
        X, Y = promote(X, Y)
        X = concatenate([X, Y], axis=0)
    if dtype is not None:
        X = X.astype(dtype)
    if ddof is None:
        ddof = 0 if bias else 1
    rdt = np.empty((), typeof(X).dtype).real.dtype
    w = None
    if fweights is not None:
        w = _arr(fweights)
        if typeof(w).ndim != 1:
            raise ValueError("cov: fweights must be 1-d")
        if not np.issubdtype(typeof(w).dtype, np.integer):
            raise TypeError("cov: fweights must be integers")
        w = w.astype(rdt) if isinstance(w, Tracer) else np.asarray(w, rdt)
    if aweights is not None:
        aw = _arr(aweights)
        if typeof(aw).ndim != 1:
            raise ValueError("cov: aweights must be 1-d")
        aw = aw.astype(rdt) if isinstance(aw, Tracer) else np.asarray(aw, rdt)
        w = aw if w is None else w * aw
    n = typeof(X).shape[1]
    if w is None:
        avg = X.mean(axis=1) if isinstance(X, Tracer) else np.mean(X, axis=1)
        nf = lax.convert_element_type(n, rdt) if isinstance(n, Tracer) else np.asarray(n, rdt)
        fact = nf - np.asarray(ddof, rdt)
    else:
        w_sum = _sum(w)
        avg = true_divide(_sum(X * w, axis=1), w_sum)
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - np.asarray(ddof, rdt)
        else:
            fact = w_sum - np.asarray(ddof, rdt) * _sum(w * aw) / w_sum
    Xc = X - avg[:, None]
    Xw = Xc if w is None else Xc * w
    c = true_divide(Xc @ conj(Xw).T, fact)
    if typeof(c).shape == (1, 1):
        return c[0, 0]
    return c


def corrcoef(x, y=None, rowvar=True, dtype=None):
    """Pearson correlation coefficients: ``cov`` normalized by the standard deviations (real
    parts clipped to [-1, 1])."""
    from .einsum import diag
    from .ufuncs import clip, imag, iscomplexobj, real, sqrt, true_divide
    c = cov(x, y, rowvar, dtype=dtype)
    if typeof(c).ndim == 0:
        return true_divide(c, c)
    d = diag(c)
    sd = sqrt(real(d))
    c = true_divide(true_divide(c, sd[:, None]), sd[None, :])
    if iscomplexobj(c):
        return lax.complex(clip(real(c), -1, 1), clip(imag(c), -1, 1))
    return clip(c, -1, 1)
