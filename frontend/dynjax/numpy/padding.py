"""``jnp.pad``: constant, edge, wrap, reflect and symmetric padding, with widths that may be
traced integers (a dynamic pad: the padded dims are then run-time sizes).

Static widths in constant mode are one ``lax.pad``. Otherwise each padded axis is a gather:
output position ``i`` reads input position ``i - before`` mapped back into ``[0, n)`` by the
mode (clipped for ``edge``, modulo ``n`` for ``wrap``, folded for ``reflect`` and
``symmetric``), and ``constant`` replaces the positions outside with the constant.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import int64
from ..core.trace import Tracer, typeof

_MODES = ("constant", "edge", "wrap", "reflect", "symmetric", "empty")


def _width(w, what):
    if isinstance(w, Tracer):
        a = typeof(w)
        if a.ndim != 0 or not np.issubdtype(a.dtype, np.integer):
            raise TypeError(f"pad: {what} must be integer scalars, got {a.str_short()}")
        return w if a.dtype == int64 else lax.convert_element_type(w, int64)
    if isinstance(w, (bool, np.bool_)) or not isinstance(w, (int, np.integer)):
        raise TypeError(f"pad: {what} must be integers, got {type(w).__name__} {w!r}")
    if w < 0:
        raise ValueError(f"pad: {what} must be non-negative, got {w}")
    return int(w)


def _pairs(spec, ndim, what):
    """``spec`` (an int, a pair, one pair per axis; entries may be traced) as ``ndim`` pairs."""
    if isinstance(spec, Tracer):
        if typeof(spec).ndim != 0:
            raise TypeError(f"pad: {what} as a traced array is not supported; pass a tuple of (traced) integers")
        return [(spec, spec)] * ndim
    if isinstance(spec, np.ndarray):
        spec = spec.tolist()
    if not isinstance(spec, (tuple, list)):
        return [(spec, spec)] * ndim
    if all(not isinstance(r, (tuple, list, np.ndarray)) for r in spec):
        rows = [tuple(spec)]
    else:
        rows = [tuple(np.asarray(r).tolist()) if isinstance(r, np.ndarray) else
                tuple(r) if isinstance(r, (tuple, list)) else (r,) for r in spec]
    rows = [(r[0], r[0]) if len(r) == 1 else r for r in rows]
    if any(len(r) != 2 for r in rows):
        raise ValueError(f"pad: {what} must be an int, a pair, or one pair per axis")
    if len(rows) == 1:
        rows = rows * ndim
    if len(rows) != ndim:
        raise ValueError(f"pad: {what} has {len(rows)} entries for an array of {ndim} dimensions")
    return rows


def _plus(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return lax.add(a if isinstance(a, Tracer) else np.int64(a), b if isinstance(b, Tracer) else np.int64(b))


def _source_index(j, n, mode):
    """Input positions for the offsets ``j`` (output position minus the before-width)."""
    from .ufuncs import clip, mod, where
    n64 = n if isinstance(n, Tracer) else np.int64(n)
    if mode == "edge":
        return clip(j, np.int64(0), n64 - np.int64(1))
    if mode == "wrap":
        return mod(j, n64)
    if mode == "reflect":   # period 2n - 2 (a single element repeats)
        period = lax.max(n64 * np.int64(2) - np.int64(2), np.int64(1)) if isinstance(n64, Tracer) \
            else np.int64(max(2 * n - 2, 1))
        k = mod(j, period)
        return where(k >= n64, period - k, k)
    # symmetric: period 2n
    period = n64 * np.int64(2)
    k = mod(j, period)
    return where(k >= n64, period - np.int64(1) - k, k)


def pad(array, pad_width, mode="constant", **kwargs):
    """numpy's ``pad`` in modes ``constant`` (``constant_values``: a scalar, a pair or one
    pair per axis), ``edge``, ``wrap``, ``reflect``, ``symmetric`` and ``empty`` (zeros).
    The widths may be traced integers; padded axes may be dynamic."""
    from .creation import arange, asarray
    from .selection import take
    from ._promote import broadcast_to_shape
    if callable(mode):
        raise NotImplementedError("pad: a callable mode is not supported")
    if mode not in _MODES:
        raise NotImplementedError(f"pad: mode {mode!r} is not supported (supported: {', '.join(_MODES)})")
    allowed = {"constant": {"constant_values"}, "reflect": {"reflect_type"}, "symmetric": {"reflect_type"}}
    extra = set(kwargs) - allowed.get(mode, set())
    if extra:
        raise ValueError(f"pad: unsupported keyword arguments for mode {mode!r}: {sorted(extra)}")
    if kwargs.get("reflect_type", "even") != "even":
        raise NotImplementedError("pad: reflect_type='odd' is not supported")
    a = asarray(array)
    av = typeof(a)
    widths = [(_width(lo, "pad widths"), _width(hi, "pad widths")) for lo, hi in _pairs(pad_width, av.ndim,
                                                                                         "pad_width")]
    cv = kwargs.get("constant_values", 0)
    if mode == "empty":
        mode, cv = "constant", 0
    static = all(isinstance(w, int) for pair in widths for w in pair)
    if mode == "constant" and static and np.ndim(cv) == 0 and not isinstance(cv, Tracer):
        value = np.asarray(cv, dtype=av.dtype)[()]
        if all(isinstance(d, int) for d in av.shape):
            return lax.pad(a, value, [(lo, hi, 0) for lo, hi in widths])
    consts = _pairs(cv, av.ndim, "constant_values") if mode == "constant" else None
    for axis, (lo, hi) in enumerate(widths):
        if isinstance(lo, int) and isinstance(hi, int) and lo == hi == 0:
            continue
        n = typeof(a).shape[axis]
        if mode != "constant" and isinstance(n, int) and n == 0:
            raise ValueError(f"pad: can't extend the empty axis {axis} using modes other than 'constant' or "
                             "'empty'")
        m = _plus(_plus(n, lo), hi)
        j = arange(m, dtype=np.int64) - (lo if isinstance(lo, Tracer) else np.int64(lo))
        if mode == "constant":
            src = j
            out = take(a, src, axis=axis, mode="clip")
            shape = typeof(out).shape
            n64 = n if isinstance(n, Tracer) else np.int64(n)
            before = broadcast_to_shape(_along(j < np.int64(0), axis, len(shape)), shape)
            after = broadcast_to_shape(_along(j >= n64, axis, len(shape)), shape)
            c_lo, c_hi = consts[axis]
            c_lo = _scalar(c_lo, av.dtype)
            c_hi = _scalar(c_hi, av.dtype)
            out = lax.select(before, lax.broadcast_in_dim(c_lo, shape, ()), out)
            a = lax.select(after, lax.broadcast_in_dim(c_hi, shape, ()), out)
        else:
            a = take(a, _source_index(j, n, mode), axis=axis, mode="clip")
    return a


def _along(v, axis, ndim):
    shape = [1] * ndim
    shape[axis] = typeof(v).shape[0]
    return lax.broadcast_in_dim(v, tuple(shape), (axis,))


def _scalar(c, dtype):
    if isinstance(c, Tracer):
        return c.astype(dtype) if typeof(c).dtype != dtype else c
    return np.asarray(c, dtype)[()]
