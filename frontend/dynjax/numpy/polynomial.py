"""Polynomials as coefficient arrays, highest power first (numpy's ``poly*`` functions).

The coefficient arrays may have dynamic lengths: sums pad the shorter operand with leading
zeros into an array of the longer length, products are convolutions, ``poly`` and
``polyval`` run one compiled loop over the coefficients, ``polydiv`` one over the quotient.
``roots`` is not offered: it needs the eigenvalues of a general (non-symmetric) matrix.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import is_inexact_dtype
from ..core.trace import typeof
from ._promote import promote
from .einsum import _add, _max, _static, _sub


def _coeffs(p, name, inexact=False):
    from .creation import asarray
    from .ufuncs import _to_float
    p = asarray(p)
    if typeof(p).ndim != 1:
        raise ValueError(f"{name}: the coefficients must be a 1-d array, got {typeof(p).str_short()}")
    return _to_float(p) if inexact else p


def _fori(n, body, init):
    from ..control_flow.lax_api import fori_loop
    return fori_loop(0, n, body, init)


def _left_pad(p, length):
    """``p`` with leading zeros up to ``length``."""
    from .creation import zeros
    n = typeof(p).shape[0]
    if _static(n, length) and n == length:
        return p
    return lax.dynamic_update_slice(zeros(length, typeof(p).dtype), p, [_sub(length, n)])


def polyadd(a1, a2):
    """The sum of two polynomials (the result has the longer length)."""
    a1, a2 = promote(_coeffs(a1, "polyadd"), _coeffs(a2, "polyadd"))
    length = _max(typeof(a1).shape[0], typeof(a2).shape[0])
    return _left_pad(a1, length) + _left_pad(a2, length)


def polysub(a1, a2):
    """The difference of two polynomials (the result has the longer length)."""
    a1, a2 = promote(_coeffs(a1, "polysub"), _coeffs(a2, "polysub"))
    length = _max(typeof(a1).shape[0], typeof(a2).shape[0])
    return _left_pad(a1, length) - _left_pad(a2, length)


def polymul(a1, a2, *, trim_leading_zeros=False):
    """The product of two polynomials: their convolution (length ``n1 + n2 - 1``)."""
    from .linalg_ops import convolve
    if trim_leading_zeros:
        raise NotImplementedError("polymul(trim_leading_zeros=True) gives a data-dependent length; "
                                  "apply jnp.trim_zeros(p, 'f') to the result instead")
    a1, a2 = promote(_coeffs(a1, "polymul"), _coeffs(a2, "polymul"))
    # an empty operand counts as the zero polynomial [0] (numpy's and JAX's convention)
    a1 = _left_pad(a1, _max(typeof(a1).shape[0], 1))
    a2 = _left_pad(a2, _max(typeof(a2).shape[0], 1))
    return convolve(a1, a2)


def polyval(p, x, *, unroll=16):
    """``p`` evaluated at ``x`` by Horner's rule (``x`` of any shape)."""
    from .creation import asarray, zeros_like
    from .indexing import getitem
    p = _coeffs(p, "polyval")
    x = asarray(x)
    p, x = promote(p, x)

    def step(i, acc):
        return acc * x + getitem(p, i)
    return _fori(typeof(p).shape[0], step, zeros_like(x))


def polyder(p, m=1):
    """The ``m``-th derivative's coefficients (length ``max(n - m, 0)``)."""
    from .creation import arange
    from .indexing import getitem
    m = int(m)
    if m < 0:
        raise ValueError("polyder: the order of the derivative m must be non-negative")
    from .ufuncs import multiply
    p = _coeffs(p, "polyder")
    for _ in range(m):
        n = typeof(p).shape[0]
        k = _max(_sub(n, 1), 0)
        # int64 powers, promoted with p as JAX does (uint64 coefficients become float64)
        powers = arange(k, 0, -1, dtype=typeof(p).dtype if is_inexact_dtype(typeof(p).dtype) else np.int64)
        p = multiply(getitem(p, slice(0, k)), powers)
    return p


def polyint(p, m=1, k=None):
    """The ``m``-th antiderivative's coefficients, with integration constants ``k`` (a scalar
    used for every step, or one per step; 0 by default)."""
    from .creation import arange, asarray
    from .shape_ops import concatenate
    from .ufuncs import _to_float
    m = int(m)
    if m < 0:
        raise ValueError("polyint: the order of the antiderivative m must be non-negative")
    p = _to_float(_coeffs(p, "polyint"))
    consts = np.zeros(m) if k is None else k
    consts = asarray(consts)
    if typeof(consts).ndim == 0:
        consts = lax.broadcast_in_dim(consts, (m,), ())
    if typeof(consts).shape[0] != m:
        raise ValueError("polyint: k must be a scalar or have m elements")
    for i in range(m):
        n = typeof(p).shape[0]
        p, c = promote(p, consts[i])
        p = concatenate([p / arange(n, 0, -1, dtype=typeof(p).dtype), lax.broadcast_in_dim(c, (1,), ())])
    return p


def polydiv(u, v, *, trim_leading_zeros=False):
    """``(quotient, remainder)`` of polynomial long division. The quotient has length
    ``max(n - m + 1, 1)``; the remainder has ``u``'s length, leading zeros included (JAX's
    convention; ``trim_leading_zeros`` is not supported, as it needs the data)."""
    from .creation import zeros
    from .indexing import getitem
    from .ufuncs import _to_float
    if trim_leading_zeros:
        raise NotImplementedError("polydiv(trim_leading_zeros=True) gives a data-dependent length; "
                                  "apply jnp.trim_zeros(r, 'f') to the remainder instead")
    u, v = promote(_to_float(_coeffs(u, "polydiv")), _to_float(_coeffs(v, "polydiv")))
    n, m = typeof(u).shape[0], typeof(v).shape[0]
    steps = _max(_add(_sub(n, m), 1), 0)
    lead = getitem(v, 0)

    def step(k, carry):
        q, r = carry
        d = getitem(r, k) / lead
        q = lax.dynamic_update_slice(q, lax.broadcast_in_dim(d, (1,), ()), [k])
        window = lax.dynamic_slice(r, [k], [m])
        return q, lax.dynamic_update_slice(r, window - d * v, [k])

    # r works on u with m zeros appended, so that the window fits even when m > n
    from .shape_ops import concatenate
    padded = concatenate([u, zeros(m, typeof(u).dtype)])
    q, r = _fori(steps, step, (zeros(_max(steps, 1), typeof(u).dtype), padded))
    return q, getitem(r, slice(0, n))


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial whose roots are ``seq_of_zeros`` (1-d)."""
    from .creation import asarray, zeros
    from .indexing import getitem
    from .shape_ops import roll
    from .ufuncs import _to_float
    z = asarray(seq_of_zeros)
    if typeof(z).ndim != 1:
        raise NotImplementedError("poly of a matrix needs its eigenvalues (a general eigensolver); "
                                  "pass the roots as a 1-d array")
    z = _to_float(z)
    n = typeof(z).shape[0]
    if _static(n) and n == 0:
        return np.asarray(1, typeof(z).dtype)[()] + z.sum()   # numpy and JAX: the scalar 1.0
    length = _add(n, 1)
    dtype = typeof(z).dtype
    first = lax.broadcast_in_dim(np.asarray(1, dtype)[()], (1,), ())
    c = lax.dynamic_update_slice(zeros(length, dtype), first, [0])
    from .creation import arange
    tail = lax.ne(arange(length, dtype=np.int64), np.int64(0))

    def step(i, c):   # c[1:] -= z[i] * c[:-1]; c[0] stays 1 (even for an infinite root)
        shifted = lax.select(tail, getitem(z, i) * roll(c, 1), zeros(length, dtype))
        return c - shifted
    return _fori(n, step, c)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix: columns ``x ** (N - 1), ..., x, 1`` (``increasing`` reverses);
    ``N`` defaults to ``len(x)``; powers by repeated multiplication."""
    from .creation import asarray
    from .reductions import cumprod
    from .shape_ops import flip
    x = asarray(x)
    if typeof(x).ndim != 1:
        raise ValueError("vander: x must be a one-dimensional array")
    n = typeof(x).shape[0]
    N = n if N is None else N
    if _static(N) and N < 0:
        raise ValueError("vander: N must be non-negative")
    if typeof(x).dtype == np.bool_:
        x = x.astype(np.int64)
    dtype = typeof(x).dtype
    from .creation import ones
    cols = lax.broadcast_in_dim(x, (n, N), (0,)) if not (_static(N) and N == 0) else ones((n, 0), dtype)
    if _static(N) and N == 0:
        return cols
    from .creation import arange
    first = lax.broadcast_in_dim(lax.eq(arange(N, dtype=np.int64), np.int64(0)), (n, N), (1,))
    powers = cumprod(lax.select(first, ones((n, N), dtype), cols), axis=1)
    return powers if increasing else flip(powers, axis=1)


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """Least-squares polynomial fit of degree ``deg`` (coefficients highest power first; a
    2-d ``y`` fits each column). Solved by the normal equations of the column-scaled
    Vandermonde matrix (fine for the low degrees polynomial fits use; its condition number
    is squared). ``full`` and ``cov`` are not supported."""
    from .creation import asarray
    from .linalg import solve
    from .reductions import sum as _sum
    from .ufuncs import _to_float, sqrt
    if full or cov:
        raise NotImplementedError("polyfit(full=True) and polyfit(cov=True) are not supported")
    deg = int(deg)
    if deg < 0:
        raise ValueError("polyfit: expected deg >= 0")
    x, y = _to_float(asarray(x)), _to_float(asarray(y))
    x, y = promote(x, y)
    if typeof(x).ndim != 1:
        raise TypeError("polyfit: expected a 1-d x")
    if typeof(y).ndim not in (1, 2):
        raise TypeError("polyfit: expected a 1-d or 2-d y")
    A = vander(x, deg + 1)
    rhs = y
    if w is not None:
        w = asarray(w)
        if typeof(w).ndim != 1:
            raise TypeError("polyfit: expected a 1-d w")
        A = A * w[:, None]
        rhs = rhs * (w if typeof(y).ndim == 1 else w[:, None])
    scale = sqrt(_sum(A * A, axis=0))
    scale = lax.select(lax.eq(scale, np.asarray(0, typeof(scale).dtype)[()]),
                       lax.broadcast_in_dim(np.asarray(1, typeof(scale).dtype)[()], typeof(scale).shape, ()),
                       scale)
    As = A / scale
    c = solve(As.T @ As, As.T @ rhs)
    return c / (scale if typeof(c).ndim == 1 else scale[:, None])
