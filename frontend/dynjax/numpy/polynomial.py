"""Polynomials as coefficient arrays, highest power first (numpy's ``poly*`` functions).

The coefficient arrays may have dynamic lengths: sums pad the shorter operand with leading
zeros into an array of the longer length, products are convolutions, ``poly`` and
``polyval`` run one compiled loop over the coefficients, ``polydiv`` one over the quotient.
``roots`` takes the eigenvalues of the companion matrix (``linalg.eigvals``); ``polyfit`` is a
least-squares fit by the SVD (``linalg.lstsq``) of the column-scaled Vandermonde matrix.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import is_inexact_dtype, same_dim
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
    return lax.api.dynamic_update_slice(zeros(length, typeof(p).dtype), p, [_sub(length, n)])


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
        q = lax.api.dynamic_update_slice(q, lax.broadcast_in_dim(d, (1,), ()), [k])
        window = lax.api.dynamic_slice(r, [k], [m])
        return q, lax.api.dynamic_update_slice(r, window - d * v, [k])

    # r works on u with m zeros appended, so that the window fits even when m > n
    from .shape_ops import concatenate
    padded = concatenate([u, zeros(m, typeof(u).dtype)])
    q, r = _fori(steps, step, (zeros(_max(steps, 1), typeof(u).dtype), padded))
    return q, getitem(r, slice(0, n))


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial whose roots are ``seq_of_zeros``: a 1-d array
    of roots, or a non-empty square matrix, whose eigenvalues are taken (complex coefficients
    then, as in JAX)."""
    from .creation import asarray, zeros
    from .indexing import getitem
    from .shape_ops import atleast_1d, roll
    from .ufuncs import _to_float
    z = atleast_1d(asarray(seq_of_zeros))
    shape = typeof(z).shape
    if len(shape) == 2 and same_dim(shape[0], shape[1]) and not (_static(shape[0]) and shape[0] == 0):
        from .linalg import eigvals
        z = eigvals(z)
    if typeof(z).ndim != 1:
        raise ValueError("poly: the input must be a 1-d array or a non-empty square 2-d array, got "
                         f"{typeof(z).str_short()}")
    z = _to_float(z)
    n = typeof(z).shape[0]
    if _static(n) and n == 0:
        return np.asarray(1, typeof(z).dtype)[()] + z.sum()   # numpy and JAX: the scalar 1.0
    length = _add(n, 1)
    dtype = typeof(z).dtype
    first = lax.broadcast_in_dim(np.asarray(1, dtype)[()], (1,), ())
    c = lax.api.dynamic_update_slice(zeros(length, dtype), first, [0])
    from .creation import arange
    tail = lax.ne(arange(length, dtype=np.int64), np.int64(0))

    def step(i, c):   # c[1:] -= z[i] * c[:-1]; c[0] stays 1 (even for an infinite root)
        shifted = lax.select(tail, getitem(z, i) * roll(c, 1), zeros(length, dtype))
        return c - shifted
    return _fori(n, step, c)


def _companion_roots(p):
    """The eigenvalues of the companion matrix of ``p`` (``p[0] != 0``): the ``max(n - 1, 0)``
    roots of the polynomial, complex."""
    from .creation import arange, zeros
    from .indexing import getitem
    from .linalg import eigvals
    from .shape_ops import concatenate
    n = typeof(p).shape[0]
    m = _max(_sub(n, 1), 0)
    dtype = typeof(p).dtype
    # a 1 appended, so that p[0] and p[1:1 + m] are in range when n is 0 (the matrix is then
    # empty and neither is used)
    padded = concatenate([p, np.ones(1, dtype)])
    top = -lax.dynamic_slice(padded, [np.int64(1)], [m]) / getitem(padded, 0)
    idx = arange(m, dtype=np.int64)
    rows = lax.broadcast_in_dim(idx, (m, m), (0,))
    cols = lax.broadcast_in_dim(idx, (m, m), (1,))
    sub = lax.eq(rows, cols + np.int64(1))
    below = lax.select(sub, lax.broadcast_in_dim(np.asarray(1, dtype)[()], (m, m), ()), zeros((m, m), dtype))
    first = lax.eq(rows, np.int64(0))
    return eigvals(lax.select(first, lax.broadcast_in_dim(top, (m, m), (1,)), below))


def roots(p, *, strip_zeros=True):
    """The roots of the polynomial with coefficients ``p`` (highest power first): the
    eigenvalues of its companion matrix, always complex (JAX's rule), in LAPACK's order.

    ``strip_zeros=True`` (numpy's behaviour) drops the leading zeros first: ``n - 1 - k``
    roots for ``k`` leading zeros. Eagerly that is numpy's result; under tracing the length
    depends on the data, so it is a run-time length (JAX refuses this form under ``jit``).
    ``strip_zeros=False`` (JAX's form for traced code) keeps the length ``n - 1`` and gives
    NaN for the roots the leading zeros take away (all NaN for the zero polynomial)."""
    from .creation import arange, asarray
    from .reductions import all as _all, argmin
    from .reshaping import trim_zeros
    from .shape_ops import atleast_1d, roll
    from .ufuncs import _to_float, where
    from .linalg import _lapack_dtype
    from ..core.avals import complex_dtype
    p = atleast_1d(asarray(p))
    if typeof(p).ndim != 1:
        raise ValueError(f"roots: the coefficients must be a 1-d array, got {typeof(p).str_short()}")
    p = _to_float(p)
    dtype = _lapack_dtype("roots", typeof(p).dtype, "p")
    p = p.astype(dtype)
    cdt = complex_dtype(dtype)
    n = typeof(p).shape[0]
    if _static(n) and n < 2:
        return np.zeros(0, cdt)
    if strip_zeros:
        return _companion_roots(trim_zeros(p, "f"))
    n64 = np.int64(n) if _static(n) else lax.convert_element_type(n, np.int64)
    is_zero = p == 0
    # the number of leading zeros (n for the zero polynomial, whose roots are all NaN)
    lead = where(_all(is_zero), n64, argmin(is_zero).astype(np.int64))
    p = where(lead == n64, np.asarray(1, dtype)[()], p)
    # the leading zeros moved to the end give as many exact zero roots (LAPACK's balancing
    # isolates them); those are sorted last and replaced by NaN
    r = _companion_roots(roll(p, -lead))
    r = lax.sort_key_val((r == 0).astype(np.int8), r)[1]
    k = typeof(r).shape[0]
    k64 = np.int64(k) if _static(k) else lax.convert_element_type(k, np.int64)
    return where(arange(k, dtype=np.int64) < k64 - lead, r, np.asarray(complex(np.nan, np.nan), cdt)[()])


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
    2-d ``y`` fits each column), JAX's ``polyfit``: the Vandermonde matrix, weighted by ``w``
    and its columns scaled to unit norm, is solved by ``linalg.lstsq`` (an SVD; singular
    values below ``rcond`` times the largest count as zero, ``rcond`` defaulting to
    ``len(x) * eps``).

    Returns the coefficients; with ``full=True`` ``(p, residuals, rank, singular_values,
    rcond)`` (the residuals always computed, JAX's convention); with ``cov=True`` (and not
    ``full``) ``(p, C)``, ``C`` the covariance of the coefficients scaled by
    ``residuals / (len(x) - deg - 1)`` (``cov="unscaled"``: not scaled), of shape
    ``(deg + 1, deg + 1)`` or ``(deg + 1, deg + 1, K)``."""
    from .creation import asarray
    from .linalg import inv, lstsq
    from .linalg_ops import outer
    from .reductions import sum as _sum
    from .ufuncs import _to_float, sqrt
    from ..core.avals import finfo
    deg = int(deg)
    if deg < 0:
        raise ValueError("polyfit: expected deg >= 0")
    order = deg + 1
    x, y = _to_float(asarray(x)), _to_float(asarray(y))
    x, y = promote(x, y)
    if typeof(x).ndim != 1:
        raise TypeError("polyfit: expected a 1-d x")
    if typeof(y).ndim not in (1, 2):
        raise TypeError("polyfit: expected a 1-d or 2-d y")
    m = typeof(x).shape[0]
    if _static(m) and m == 0:
        raise TypeError("polyfit: expected a non-empty x")
    if not same_dim(m, typeof(y).shape[0]):
        raise TypeError("polyfit: expected x and y to have the same length")
    dtype = typeof(x).dtype
    if rcond is None:
        eps = float(finfo(dtype).eps)
        rcond = m * eps if _static(m) else lax.convert_element_type(m, np.float64) * np.float64(eps)
    rcond = asarray(rcond, dtype=np.float64)
    lhs = vander(x, order)
    rhs = y
    if w is not None:
        w = _to_float(asarray(w))
        if typeof(w).ndim != 1:
            raise TypeError("polyfit: expected a 1-d w")
        if not same_dim(typeof(w).shape[0], typeof(y).shape[0]):
            raise TypeError("polyfit: expected w and y to have the same length")
        lhs = lhs * w[:, None]
        rhs = rhs * (w if typeof(y).ndim == 1 else w[:, None])
    # unit columns (a zero column, from x == 0 everywhere, is left as it is)
    scale = sqrt(_sum(lhs * lhs, axis=0))
    sdt = typeof(scale).dtype
    scale = lax.select(lax.eq(scale, np.asarray(0, sdt)[()]),
                       lax.broadcast_in_dim(np.asarray(1, sdt)[()], typeof(scale).shape, ()), scale)
    lhs = lhs / scale
    c, resids, rank, s = lstsq(lhs, rhs, rcond)
    c = c / (scale if typeof(c).ndim == 1 else scale[:, None])
    if full:
        return c, resids, rank, s, rcond
    if not cov:
        return c
    vbase = inv(lhs.T @ lhs) / outer(scale, scale)
    if cov == "unscaled":
        fac = np.asarray(1.0, typeof(vbase).dtype)
    else:
        if _static(m) and m <= order:
            raise ValueError("polyfit: the number of data points must exceed order to scale the covariance matrix")
        rdt = typeof(resids).dtype
        dof = (m - order) if _static(m) else lax.convert_element_type(lax.sub(m, np.int64(order)), rdt)
        fac = resids / dof
    if typeof(y).ndim == 1:
        return c, vbase * fac
    return c, vbase[:, :, None] * fac
