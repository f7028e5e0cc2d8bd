"""The rest of ``jax.numpy.linalg``, written with the decompositions of ``linalg.py``: the
array API's aliases (``cross diagonal matmul matrix_transpose outer tensordot trace vecdot``),
``matrix_power multi_dot``, and the SVD-based ``pinv matrix_rank lstsq cond`` with
``tensorinv tensorsolve``. Matrix sizes may be dynamic (``min(m, n)`` singular values).
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import finfo
from ..core.trace import Tracer, typeof


def _arr(a):
    from .creation import asarray
    return asarray(a)


def _float(x):
    from .ufuncs import _to_float
    return _to_float(_arr(x))


# --- array API aliases -----------------------------------------------------------------------------
def cross(x1, x2, /, *, axis=-1):
    """The cross product of 3-vectors along ``axis`` (the array API's form)."""
    from .calculus import cross as _cross
    x1, x2 = _arr(x1), _arr(x2)
    for x in (x1, x2):
        if typeof(x).shape[axis] != 3:
            raise ValueError("linalg.cross: both inputs must have 3 elements along the axis")
    return _cross(x1, x2, axis=axis)


def diagonal(x, /, *, offset=0):
    """The ``offset`` diagonal of the last two axes."""
    from .einsum import diagonal as _diagonal
    return _diagonal(_arr(x), offset, -2, -1)


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    """``x1 @ x2``."""
    from .linalg_ops import matmul as _matmul
    out = _matmul(x1, x2)
    return out.astype(preferred_element_type) if preferred_element_type is not None else out


def matrix_transpose(x, /):
    """Swap the last two axes."""
    from .reshaping import matrix_transpose as _mt
    return _mt(x)


def outer(x1, x2, /):
    """The outer product of two 1-d arrays."""
    from .linalg_ops import outer as _outer
    x1, x2 = _arr(x1), _arr(x2)
    if typeof(x1).ndim != 1 or typeof(x2).ndim != 1:
        raise ValueError("linalg.outer: the inputs must be 1-dimensional")
    return _outer(x1, x2)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None, out_sharding=None):
    """``jnp.tensordot`` with the array API's keyword ``axes``."""
    from .linalg_ops import tensordot as _td
    out = _td(x1, x2, axes)
    return out.astype(preferred_element_type) if preferred_element_type is not None else out


def trace(x, /, *, offset=0, dtype=None):
    """The sum of the ``offset`` diagonal of the last two axes."""
    from .einsum import trace as _trace
    return _trace(_arr(x), offset, -2, -1, dtype)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """``sum(conj(x1) * x2, axis)``."""
    from .calculus import vecdot as _vecdot
    return _vecdot(x1, x2, axis=axis, preferred_element_type=preferred_element_type)


# --- products ---------------------------------------------------------------------------------------
def matrix_power(a, n):
    """``a`` multiplied by itself ``n`` times (``n`` a static int; negative: of the inverse;
    0: the identity), by repeated squaring."""
    import operator
    from .creation import eye
    from .linalg import inv
    from .linalg_ops import matmul as _matmul
    a = _arr(a)
    n = operator.index(n)
    shape = typeof(a).shape
    if len(shape) < 2:
        raise ValueError("matrix_power: a must be at least 2-dimensional")
    if n == 0:
        ident = eye(shape[-1], dtype=typeof(a).dtype)
        return lax.broadcast_in_dim(ident, tuple(shape), (len(shape) - 2, len(shape) - 1))
    if n < 0:
        a, n = inv(a), -n
    result = None
    base = a
    while n:
        if n & 1:
            result = base if result is None else _matmul(result, base)
        n >>= 1
        if n:
            base = _matmul(base, base)
    return result


def multi_dot(arrays, *, precision=None):
    """The product of a chain of matrices (the first may be a row vector, the last a column
    vector), multiplied left to right."""
    from .linalg_ops import matmul as _matmul
    arrays = [_arr(a) for a in arrays]
    if len(arrays) < 2:
        raise ValueError("multi_dot: expecting at least two arrays")
    for i, a in enumerate(arrays):
        nd = typeof(a).ndim
        if nd != 2 and not (nd == 1 and i in (0, len(arrays) - 1)):
            raise ValueError("multi_dot: the inner arrays must be 2-d; the first and last 1-d or 2-d")
    out = arrays[0]
    for a in arrays[1:]:
        out = _matmul(out, a)
    return out


# --- SVD-based ----------------------------------------------------------------------------------------
def _max_dim_f(shape, dtype):
    m, n = shape[-2], shape[-1]
    if isinstance(m, int) and isinstance(n, int):
        return np.asarray(max(m, n), dtype)[()]
    return lax.convert_element_type(lax.max(m if isinstance(m, Tracer) else np.int64(m),
                                            n if isinstance(n, Tracer) else np.int64(n)), dtype)


def _rtol(rtol, shape, rdt):
    if rtol is not None:
        return _arr(rtol)
    return _max_dim_f(shape, rdt) * np.asarray(finfo(rdt).eps, rdt)[()]


def _svd_parts(a, name):
    from .linalg import svd
    a = _float(a)
    if typeof(a).ndim < 2:
        raise ValueError(f"{name}: the input must be at least 2-dimensional")
    u, s, vh = svd(a, full_matrices=False)
    return a, u, s, vh


def pinv(a, rtol=None, hermitian=False, *, rcond=None):
    """The Moore-Penrose pseudo-inverse, from the SVD; singular values at most
    ``rtol * max(s)`` (default ``max(m, n) * eps``) count as zero."""
    from .reductions import max as _max
    from .ufuncs import conj, where
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: pass rtol or rcond, not both")
        rtol = rcond
    a, u, s, vh = _svd_parts(a, "pinv")
    rdt = typeof(s).dtype
    k = typeof(s).shape[-1]
    if isinstance(k, int) and k == 0:
        from .shape_ops import swapaxes
        return swapaxes(a, -1, -2)
    cutoff = _rtol(rtol, typeof(a).shape, rdt)
    cutoff = (cutoff[..., None] if typeof(cutoff).ndim else cutoff) * _max(s, axis=-1, keepdims=True)
    s_inv = where(s > cutoff, np.asarray(1, rdt)[()] / where(s > cutoff, s, np.asarray(1, rdt)[()]),
                  np.asarray(0, rdt)[()])
    vs = conj(vh).swapaxes(-1, -2) if isinstance(vh, Tracer) else np.conj(vh).swapaxes(-1, -2)
    uh = conj(u).swapaxes(-1, -2) if isinstance(u, Tracer) else np.conj(u).swapaxes(-1, -2)
    from .linalg_ops import matmul as _matmul
    return _matmul(vs * s_inv[..., None, :], uh)


def matrix_rank(M, rtol=None, *, hermitian=False, tol=None):
    """The number of singular values above ``tol`` (default ``max(s) * max(m, n) * eps``, or
    ``rtol * max(s)``)."""
    from .linalg import svdvals
    from .reductions import any as _any, max as _max, sum as _sum
    M = _float(M)
    if typeof(M).ndim < 2:
        return _any(M != 0).astype(np.int64)
    s = svdvals(M)
    rdt = typeof(s).dtype
    k = typeof(s).shape[-1]
    if isinstance(k, int) and k == 0:
        return np.zeros(typeof(M).shape[:-2], np.int64)
    if tol is None:
        tol = _rtol(rtol, typeof(M).shape, rdt) * _max(s, axis=-1)
    tol = _arr(tol)
    tol = tol[..., None] if typeof(tol).ndim else tol
    return _sum((s > tol).astype(np.int64), axis=-1)


def lstsq(a, b, rcond=None, *, numpy_resid=False):
    """The least-squares solution of ``a @ x = b`` from the SVD: ``(x, residuals, rank, s)``.
    Residuals are the squared norms of ``b - a @ x`` per column (always computed, JAX's
    default; ``numpy_resid=True``, numpy's empty residuals, is not supported)."""
    from .reductions import max as _max, sum as _sum
    from .ufuncs import abs as _abs, conj, where
    from .linalg_ops import matmul as _matmul
    from ._promote import promote
    if numpy_resid:
        raise NotImplementedError("lstsq(numpy_resid=True) is not supported: its shape depends on the rank")
    a, b = promote(_float(a), _float(b))
    if typeof(a).ndim != 2:
        raise TypeError("lstsq: a must be a 2-d array")
    vector = typeof(b).ndim == 1
    if vector:
        b = b[:, None]
    if typeof(b).ndim != 2:
        raise TypeError("lstsq: b must be a 1-d or 2-d array")
    a, u, s, vh = _svd_parts(a, "lstsq")
    rdt = typeof(s).dtype
    k = typeof(s).shape[-1]
    cutoff = None if isinstance(k, int) and k == 0 else _rtol(rcond, typeof(a).shape, rdt) * _max(s)
    if cutoff is None:
        x = _matmul(conj(vh).T if isinstance(vh, Tracer) else np.conj(vh).T, _matmul(conj(u).T, b))
        rank = np.int64(0)
    else:
        keep = s > cutoff
        s_inv = where(keep, np.asarray(1, rdt)[()] / where(keep, s, np.asarray(1, rdt)[()]), np.asarray(0, rdt)[()])
        x = _matmul(conj(vh).T * s_inv[None, :], _matmul(conj(u).T, b))
        rank = _sum(keep.astype(np.int64))
    resid = _sum(_abs(b - _matmul(a, x)) ** 2, axis=0)
    if vector:   # JAX: x is 1-d, the residuals keep their one entry
        x = x[:, 0]
    return x, resid, rank, s


def cond(x, p=None):
    """The condition number of ``x`` in the norm ``p`` (None/2: the ratio of the extreme
    singular values; -2 its inverse; others ``norm(x, p) * norm(inv(x), p)``)."""
    from .linalg import inv, norm, svdvals
    from .reductions import max as _max, min as _min
    x = _float(x)
    if typeof(x).ndim < 2:
        raise ValueError("cond: x must be at least 2-dimensional")
    if p in (None, 2, -2):
        s = svdvals(x)
        hi, lo = _max(s, axis=-1), _min(s, axis=-1)
        return hi / lo if p in (None, 2) else lo / hi
    return norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))


# --- tensors ----------------------------------------------------------------------------------------------
def _prod(dims):
    out = 1
    for d in dims:
        out = out * d if isinstance(out, int) and isinstance(d, int) else lax.mul(
            out if isinstance(out, Tracer) else np.int64(out), d if isinstance(d, Tracer) else np.int64(d))
    return out


def tensorinv(a, ind=2):
    """The inverse of ``a`` seen as a matrix from its first ``ind`` axes to the rest."""
    from .linalg import inv
    from .shape_ops import reshape
    a = _float(a)
    shape = typeof(a).shape
    ind = int(ind)
    if ind <= 0:
        raise ValueError("tensorinv: ind must be a positive integer")
    rows, cols = _prod(shape[:ind]), _prod(shape[ind:])
    return reshape(inv(reshape(a, (rows, cols))), tuple(shape[ind:]) + tuple(shape[:ind]))


def tensorsolve(a, b, axes=None):
    """The ``x`` with ``tensordot(a, x, x.ndim) == b``."""
    from .linalg import solve
    from .shape_ops import reshape, transpose
    from ._promote import promote
    a, b = promote(_float(a), _float(b))
    if axes is not None:
        nd = typeof(a).ndim
        moved = [int(x) % nd for x in axes]
        a = transpose(a, [i for i in range(nd) if i not in moved] + moved)
    shape = typeof(a).shape
    nb = typeof(b).ndim
    x_shape = tuple(shape[nb:])
    rows, cols = _prod(shape[:nb]), _prod(x_shape)
    x = solve(reshape(a, (rows, cols)), reshape(b, (rows,)))
    return reshape(x, x_shape)

