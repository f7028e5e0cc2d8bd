"""Numerical calculus and vector products: ``gradient trapezoid unwrap cross vecdot matvec
vecmat``, bit packing (``packbits unpackbits``) and whole-array comparisons
(``array_equal array_equiv``).

All of them take dynamic lengths: ``gradient`` builds its edges and interior from slices
of the (possibly dynamic) axis, ``packbits`` gathers eight bits per output byte.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import int64, is_inexact_dtype, same_dim
from ..core.trace import Tracer, typeof


def _arr(a):
    from .creation import asarray
    return asarray(a)


def _axis(axis, ndim, name):
    axis = int(axis)
    if not -ndim <= axis < max(ndim, 1):
        raise ValueError(f"{name}: axis {axis} is out of bounds for an array of dimension {ndim}")
    return axis % max(ndim, 1)


def _sl(x, axis, start, stop):
    from .indexing import getitem
    idx = [slice(None)] * typeof(x).ndim
    idx[axis] = slice(start, stop)
    return getitem(x, tuple(idx))


def _along(v, axis, ndim):
    """A 1-d ``v`` shaped to broadcast along ``axis`` of an ``ndim``-d array."""
    shape = [1] * ndim
    shape[axis] = typeof(v).shape[0]
    return lax.broadcast_in_dim(v, tuple(shape), (axis,))


# --- gradient, trapezoid, unwrap ---------------------------------------------------------------------------
def _win(x, axis, start, size):
    """``size`` elements of ``x`` along ``axis`` from ``start`` (ints or traced): windows that
    share a size object share their dim, so they combine elementwise."""
    shape = list(typeof(x).shape)
    shape[axis] = size
    starts = [0] * len(shape)
    starts[axis] = start
    return lax.api.dynamic_slice(x, starts, shape)


def _minus(n, k):
    return n - k if isinstance(n, int) else lax.sub(n, np.int64(k))


def _gradient_1(f, h, axis):
    from .shape_ops import concatenate, diff
    from .ufuncs import _to_float
    if typeof(f).dtype == np.bool_:
        raise TypeError("gradient: boolean subtract is not supported for bool input (as in numpy)")
    f = _to_float(f)
    nd = typeof(f).ndim
    n = typeof(f).shape[axis]
    if isinstance(n, int) and n < 2:
        raise ValueError("gradient: each dimension must have at least two samples")
    inner = _minus(n, 2)
    h = _arr(h)
    if typeof(h).ndim == 0:   # a scalar spacing takes f's dtype (JAX's weak scalar)
        h = h.astype(typeof(f).dtype) if isinstance(h, Tracer) else np.asarray(h, typeof(f).dtype)[()]
    head = _win(f, axis, 1, 1) - _win(f, axis, 0, 1)
    tail = _win(f, axis, _minus(n, 1), 1) - _win(f, axis, inner, 1)
    f0, f1, f2 = _win(f, axis, 0, inner), _win(f, axis, 1, inner), _win(f, axis, 2, inner)
    if typeof(h).ndim == 0:
        return concatenate([head / h, (f2 - f0) / (h + h), tail / h], axis)
    if typeof(h).ndim != 1:
        raise ValueError("gradient: spacing must be a scalar or a 1-d array of coordinates")
    dx = diff(h.astype(typeof(f).dtype) if isinstance(h, Tracer) else np.asarray(h, typeof(f).dtype))
    hs = _along(_win(dx, 0, 0, inner), axis, nd)
    hd = _along(_win(dx, 0, 1, inner), axis, nd)
    mid = (hs * hs * f2 + (hd * hd - hs * hs) * f1 - hd * hd * f0) / (hs * hd * (hd + hs))
    first = head / _along(_win(dx, 0, 0, 1), axis, nd)
    last = tail / _along(_win(dx, 0, _minus(n, 2), 1), axis, nd)
    return concatenate([first, mid, last], axis)


def gradient(f, *varargs, axis=None, edge_order=None):
    """numpy's ``gradient``: second-order central differences inside, first-order ones at
    the edges; ``varargs`` give one spacing (scalar) or coordinate array per axis, or one
    for all. A list of arrays for several axes, one array for one. ``edge_order`` is not
    supported, as in JAX."""
    if edge_order is not None:
        raise NotImplementedError("gradient: the edge_order argument is not supported")
    f = _arr(f)
    nd = typeof(f).ndim
    axes = list(range(nd)) if axis is None else (
        [_axis(axis, nd, "gradient")] if isinstance(axis, (int, np.integer)) else [_axis(a, nd, "gradient")
                                                                                  for a in axis])
    if not varargs:
        hs = [1.0] * len(axes)
    elif len(varargs) == 1 and typeof(_arr(varargs[0])).ndim == 0:
        hs = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        hs = list(varargs)
    else:
        raise TypeError(f"gradient: {len(varargs)} spacings for {len(axes)} axes")
    out = [_gradient_1(f, h, ax) for h, ax in zip(hs, axes)]
    return out[0] if len(out) == 1 else out


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The integral of ``y`` along ``axis`` by the trapezoidal rule, at coordinates ``x``
    (a 1-d array, or one of ``y``'s shape) or with spacing ``dx``."""
    from .reductions import sum as _sum
    from .shape_ops import diff
    from .ufuncs import _to_float
    y = _to_float(_arr(y))
    nd = typeof(y).ndim
    axis = _axis(axis, nd, "trapezoid")
    if x is None:
        d = dx
    else:
        x = _arr(x)
        d = diff(x, axis=-1 if typeof(x).ndim == 1 else axis)
        if typeof(x).ndim == 1:
            d = _along(d, axis, nd)
    n = typeof(y).shape[axis]
    if isinstance(n, int) and n == 0:
        return _sum(y, axis=axis)
    m = _minus(n, 1) if isinstance(n, int) else lax.max(_minus(n, 1), np.int64(0))
    half = np.asarray(0.5, typeof(y).dtype)[()]
    avg = (_win(y, axis, 1 if not isinstance(n, int) or n > 1 else 0, m) + _win(y, axis, 0, m)) * half
    from .ufuncs import multiply
    return _sum(multiply(avg, d), axis=axis)


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    """``p`` with jumps larger than ``discont`` (``period / 2`` by default) along ``axis``
    replaced by their complement modulo ``period``."""
    from .reductions import cumsum
    from .shape_ops import concatenate, diff
    from .ufuncs import _to_float, abs as _abs, mod, where
    p = _to_float(_arr(p))
    nd = typeof(p).ndim
    axis = _axis(axis, nd, "unwrap")
    dt = typeof(p).dtype
    period = np.asarray(period, dt)[()] if not isinstance(period, Tracer) else period
    half = period / 2
    discont = half if discont is None else discont
    dd = diff(p, axis=axis)
    ddmod = mod(dd + half, period) - half
    ddmod = where((ddmod == -half) & (dd > 0), half, ddmod)
    correct = where(_abs(dd) < discont, np.asarray(0, dt)[()], ddmod - dd)
    return concatenate([_sl(p, axis, 0, 1), _sl(p, axis, 1, None) + cumsum(correct, axis=axis)], axis)


# --- vector products ------------------------------------------------------------------------------------
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 2- or 3-vectors along ``axisa``/``axisb`` (a 2-vector has z = 0;
    two 2-vectors give the z component alone); the result's vector axis is ``axisc``."""
    from .shape_ops import moveaxis, stack
    from ._promote import promote_and_broadcast
    a, b = _arr(a), _arr(b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a = moveaxis(a, _axis(axisa, typeof(a).ndim, "cross"), -1)
    b = moveaxis(b, _axis(axisb, typeof(b).ndim, "cross"), -1)
    na, nb = typeof(a).shape[-1], typeof(b).shape[-1]
    if not isinstance(na, int) or not isinstance(nb, int):
        raise TypeError("cross: the vector axes must have a static length (2 or 3), not a dynamic one")
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("cross: incompatible dimensions for cross product (dimension must be 2 or 3)")
    a0, a1 = a[..., 0], a[..., 1]
    b0, b1 = b[..., 0], b[..., 1]
    a0, a1, b0, b1 = promote_and_broadcast(a0, a1, b0, b1)
    z = a0 * b1 - a1 * b0
    if na == 2 and nb == 2:
        return z
    a2 = a[..., 2] if na == 3 else None
    b2 = b[..., 2] if nb == 3 else None
    if a2 is None:
        cx, cy = a1 * b2, -(a0 * b2)
    elif b2 is None:
        cx, cy = -(a2 * b1), a2 * b0
    else:
        cx, cy = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2
    cx, cy, z = promote_and_broadcast(cx, cy, z)
    out = stack([cx, cy, z], axis=-1)
    return moveaxis(out, -1, _axis(axisc, typeof(out).ndim, "cross"))


def _both_bool(x1, x2):
    return typeof(x1).dtype == np.bool_ and typeof(x2).dtype == np.bool_


def _bool_or_sum(v, axis):
    """The sum along ``axis``, or for bools their ``any`` (numpy's and JAX's bool products)."""
    from .reductions import any as _any, sum as _sum
    if typeof(v).dtype == np.bool_:
        return _any(v, axis=axis)
    return _sum(v, axis=axis, dtype=typeof(v).dtype)   # uint8 stays uint8, as numpy's products


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """``sum(conj(x1) * x2, axis)`` with broadcasting (the array API's vector dot product)."""
    from .ufuncs import conj
    x1, x2 = _arr(x1), _arr(x2)
    nd = max(typeof(x1).ndim, typeof(x2).ndim)
    if typeof(x1).ndim == 0 or typeof(x2).ndim == 0:
        raise ValueError("vecdot: the inputs must be at least 1-dimensional")
    ax = axis if axis < 0 else axis - nd
    out = _bool_or_sum(conj(x1) * x2 if not _both_bool(x1, x2) else x1 & x2, ax)
    return out.astype(preferred_element_type) if preferred_element_type is not None else out


def matvec(x1, x2, /):
    """Matrix-vector products over broadcast batch dims: ``(..., m, n) x (..., n) -> (..., m)``."""
    x1, x2 = _arr(x1), _arr(x2)
    if typeof(x1).ndim < 2 or typeof(x2).ndim < 1:
        raise ValueError("matvec: x1 must be at least 2-d and x2 at least 1-d")
    return _bool_or_sum(x1 & x2[..., None, :] if _both_bool(x1, x2) else x1 * x2[..., None, :], -1)


def vecmat(x1, x2, /):
    """Vector-matrix products: ``(..., n) x (..., n, m) -> (..., m)`` (``x1`` conjugated)."""
    from .ufuncs import conj
    x1, x2 = _arr(x1), _arr(x2)
    if typeof(x1).ndim < 1 or typeof(x2).ndim < 2:
        raise ValueError("vecmat: x1 must be at least 1-d and x2 at least 2-d")
    if _both_bool(x1, x2):
        return _bool_or_sum(x1[..., :, None] & x2, -2)
    return _bool_or_sum(conj(x1)[..., :, None] * x2, -2)


# --- bits ------------------------------------------------------------------------------------------------
def _bitorder(bitorder):
    if bitorder not in ("big", "little"):
        raise ValueError(f"bitorder must be 'big' or 'little', got {bitorder!r}")
    w = 1 << np.arange(8)
    return w[::-1] if bitorder == "big" else w


def packbits(a, axis=None, bitorder="big"):
    """Pack the truth values of ``a`` (ints or bools) into uint8, eight per byte along
    ``axis`` (the flattened array by default), the last byte padded with zeros."""
    from .creation import arange
    from .reductions import sum as _sum
    from .selection import take
    from .shape_ops import moveaxis, ravel
    a = _arr(a)
    if not (typeof(a).dtype == np.bool_ or np.issubdtype(typeof(a).dtype, np.integer)):
        raise TypeError(f"packbits needs an integer or boolean array, got {typeof(a).str_short()}")
    w = _bitorder(bitorder).astype(np.int64)
    if axis is None:
        a, axis = ravel(a), 0
    axis = _axis(axis, typeof(a).ndim, "packbits")
    bits = moveaxis(lax.convert_element_type(a != 0, int64), axis, -1)
    n = typeof(bits).shape[-1]
    m = (n + 7) // 8 if isinstance(n, int) else lax.div(lax.add(n, np.int64(7)), np.int64(8))
    idx = arange(m, dtype=np.int64)[:, None] * np.int64(8) + np.arange(8, dtype=np.int64)[None, :]
    picked = take(bits, idx, axis=-1, mode="fill", fill_value=0)
    out = _sum(picked * w, axis=-1).astype(np.uint8)
    return moveaxis(out, -1, axis)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """The bits of the uint8 array ``a`` as a uint8 array of 0/1, along ``axis`` (flattened
    by default); ``count`` keeps that many bits (negative: drops that many from the end)."""
    from .shape_ops import moveaxis, ravel, reshape
    a = _arr(a)
    if typeof(a).dtype != np.uint8:
        raise TypeError(f"unpackbits needs a uint8 array, got {typeof(a).str_short()}")
    w = _bitorder(bitorder)
    shifts = np.asarray(np.log2(w).astype(np.int64), np.uint8)
    if axis is None:
        a, axis = ravel(a), 0
    axis = _axis(axis, typeof(a).ndim, "unpackbits")
    x = moveaxis(a, axis, -1)
    shp = typeof(x).shape
    bits = lax.bitwise_and(lax.shift_right(lax.broadcast_in_dim(x, tuple(shp) + (8,), tuple(range(len(shp)))),
                                           lax.broadcast_in_dim(shifts, tuple(shp) + (8,), (len(shp),))),
                           lax.broadcast_in_dim(np.uint8(1), tuple(shp) + (8,), ()))
    n = shp[-1]
    total = n * 8 if isinstance(n, int) else lax.mul(n, np.int64(8))
    bits = reshape(bits, tuple(shp[:-1]) + (total,))
    if count is not None:
        count = int(count)
        bits = _sl(bits, -1 % typeof(bits).ndim, 0, count)
        if count > 0 and isinstance(total, int) and count > total:
            from .shape_ops import pad
            bits = pad(bits, [(0, 0)] * (typeof(bits).ndim - 1) + [(0, count - total)])
    return moveaxis(bits, -1, axis)


# --- whole-array comparisons ------------------------------------------------------------------------------
def array_equal(a1, a2, equal_nan=False):
    """Whether the two arrays have the same shape and elements (NaNs equal with
    ``equal_nan``). Dynamic dims that are not known to be equal are a TypeError."""
    from .reductions import all as _all
    from .ufuncs import isnan
    a1, a2 = _arr(a1), _arr(a2)
    s1, s2 = typeof(a1).shape, typeof(a2).shape
    if len(s1) != len(s2) or any(isinstance(p, int) and isinstance(q, int) and p != q for p, q in zip(s1, s2)):
        return np.bool_(False)
    if not all(same_dim(p, q) for p, q in zip(s1, s2)):
        raise TypeError("array_equal: the arrays have dynamic dims not known to be equal; give the axes "
                        "the same name in abstracted_axes")
    eq = a1 == a2
    if equal_nan and (is_inexact_dtype(typeof(a1).dtype) or is_inexact_dtype(typeof(a2).dtype)):
        eq = eq | (isnan(a1) & isnan(a2))
    return _all(eq)


def array_equiv(a1, a2):
    """Whether the arrays are equal after broadcasting (False when they do not broadcast)."""
    from .reductions import all as _all
    from ._promote import broadcast_shapes
    a1, a2 = _arr(a1), _arr(a2)
    try:
        broadcast_shapes(typeof(a1).shape, typeof(a2).shape)
    except TypeError:
        if any(not isinstance(d, int) for d in typeof(a1).shape + typeof(a2).shape):
            raise
        return np.bool_(False)
    return _all(a1 == a2)

