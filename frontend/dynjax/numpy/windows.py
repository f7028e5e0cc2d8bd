"""Window functions (``bartlett blackman hamming hanning kaiser``) and the remaining
creation functions (``geomspace logspace tri fromfunction copy``).

The length ``M`` (or ``N``) may be a traced integer: the window is then a dynamic dim and
one trace serves every length, 0 and 1 included (a one-point window is ``[1.0]``).
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import float64, int64
from ..core.trace import Tracer
from ..lax.api import canonicalize_dim


def _centered(M, name):
    """``(n, denom)``: ``n = 2 * arange(M) - (M - 1)`` (numpy's ``arange(1 - M, M, 2)``) as
    float64 and ``max(M - 1, 1)`` as a float64 scalar."""
    from .creation import arange
    if not isinstance(M, Tracer) and (isinstance(M, (bool, np.bool_)) or not isinstance(M, (int, np.integer))):
        raise TypeError(f"{name}: M must be an integer, got {type(M).__name__} {M!r}")
    M = canonicalize_dim(M, "M") if not (isinstance(M, (int, np.integer)) and M < 0) else 0
    k = arange(M, dtype=float64)
    if isinstance(M, int):
        return 2.0 * k - float(M - 1), float(max(M - 1, 1))
    m1 = lax.convert_element_type(lax.sub(M, np.int64(1)), float64)
    return 2.0 * k - m1, lax.max(m1, np.float64(1.0))


def _cosine_window(name, a0, a1, a2):
    def window(M):
        from .ufuncs import cos
        n, d = _centered(M, name)
        x = np.pi * n / d
        out = a0 + a1 * cos(x)
        return out + a2 * cos(2.0 * x) if a2 else out
    window.__name__ = name
    window.__doc__ = f"numpy's ``{name}`` window of ``M`` points (``M`` may be traced)."
    return window


hanning = _cosine_window("hanning", 0.5, 0.5, 0.0)
hamming = _cosine_window("hamming", 0.54, 0.46, 0.0)
blackman = _cosine_window("blackman", 0.42, 0.5, 0.08)


def bartlett(M):
    """numpy's triangular ``bartlett`` window of ``M`` points (``M`` may be traced)."""
    from .ufuncs import where
    n, d = _centered(M, "bartlett")
    return where(n <= 0, 1.0 + n / d, 1.0 - n / d)


def kaiser(M, beta):
    """numpy's ``kaiser`` window of ``M`` points with shape parameter ``beta``."""
    from .elementwise import i0
    from .ufuncs import sqrt
    n, d = _centered(M, "kaiser")
    r = n / d
    beta = lax.convert_element_type(beta, float64) if isinstance(beta, Tracer) else np.float64(beta)
    return i0(beta * sqrt(1.0 - r * r)) / i0(beta)


def _float_dtype(dtype):
    from ..core.avals import canonical_dtype
    return float64 if dtype is None else canonical_dtype(dtype)


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``base ** linspace(start, stop, num)`` (``num`` may be traced)."""
    from .creation import linspace
    from .ufuncs import power
    if axis != 0:
        raise NotImplementedError("logspace: only axis=0 is supported (scalar start and stop)")
    out = power(base, linspace(start, stop, num, endpoint=endpoint))
    return out.astype(_float_dtype(dtype)) if dtype is not None else out


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``num`` points spaced evenly on a log scale from ``start`` to ``stop`` (same sign,
    non-zero); the end points are exact."""
    from .creation import linspace
    from .ufuncs import abs as _abs, equal, log10, power, sign, where
    if axis != 0:
        raise NotImplementedError("geomspace: only axis=0 is supported (scalar start and stop)")
    if not isinstance(start, Tracer) and not isinstance(stop, Tracer):
        if start == 0 or stop == 0:
            raise ValueError("geomspace: start and stop must be non-zero")
    n = canonicalize_dim(num, "num")
    s = sign(start)
    out = s * power(10.0, linspace(log10(_abs(start)), log10(_abs(stop)), n, endpoint=endpoint))
    idx = lax.iota(int64, n)
    out = where(equal(idx, 0), lax.convert_element_type(start, float64) if isinstance(start, Tracer)
                else np.float64(start), out)
    if endpoint:
        last = lax.sub(n, np.int64(1)) if isinstance(n, Tracer) else n - 1
        out = where(equal(idx, last) & (idx > 0), lax.convert_element_type(stop, float64) if isinstance(stop, Tracer)
                    else np.float64(stop), out)
    return out.astype(_float_dtype(dtype)) if dtype is not None else out


def tri(N, M=None, k=0, dtype=None):
    """Ones at and below the ``k``-th diagonal of an ``N x M`` array (``N``, ``M`` may be traced)."""
    from .creation import _astype
    from .ufuncs import add, greater_equal
    N = canonicalize_dim(N, "N")
    M = N if M is None else canonicalize_dim(M, "M")
    rows = lax.broadcasted_iota(int64, (N, M), 0)
    cols = lax.broadcasted_iota(int64, (N, M), 1)
    mask = greater_equal(add(rows, k) if not (isinstance(k, int) and k == 0) else rows, cols)
    return _astype(mask, _float_dtype(dtype))


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """``function(*coords, **kwargs)`` called once on the coordinate arrays of ``shape``
    (each of ``dtype``; the sizes may be traced)."""
    from ..core.avals import canonical_dtype
    shape = tuple(canonicalize_dim(d, "shape") for d in shape)
    dt = canonical_dtype(dtype)
    coords = [lax.convert_element_type(lax.broadcasted_iota(int64, shape, i), dt) for i in range(len(shape))]
    return function(*coords, **kwargs)


def copy(a, order=None):
    """A copy of ``a`` (arrays are immutable under tracing, so this is ``a`` itself there)."""
    from .creation import array
    return array(a, copy=True)

