"""``dynjax.numpy.linalg``: numpy's linear algebra on traced (and concrete) arrays.

``norm`` is composed of elementwise operations and reductions (and ``svd`` for the spectral
and nuclear matrix norms). ``solve``, ``inv``, ``det``, ``slogdet``, ``cholesky``, ``qr``,
``eigh`` / ``eigvalsh``, ``eig`` / ``eigvals`` and ``svd`` / ``svdvals`` bind the primitives of
``dynjax.lax.linalg``: eagerly they run ``numpy.linalg``, under ``qjit`` jaxlib's LAPACK
kernels, with dynamic sizes (one trace serves every size, including empty matrices).

Semantics follow numpy 2: leading axes are batch axes (broadcast between the operands of
``solve``), ``b`` of ``solve`` is a vector only when it is 1-D, integer and bool inputs are
promoted to float64, the decompositions return numpy's named tuples (``QRResult``,
``EighResult``, ``EigResult``, ``SVDResult``, ``SlogdetResult``). float16 / bfloat16 are a
TypeError, as in numpy. ``eig`` / ``eigvals`` follow JAX where numpy's results depend on the
data: they are always complex (complex64 for float32, complex128 for float64).

Errors follow JAX instead of raising ``LinAlgError``, eagerly and compiled alike: a matrix that
is not positive definite gives a Cholesky factor of NaNs, a singular matrix in ``solve`` /
``inv`` gives NaNs eagerly and infinities or NaNs compiled, ``det`` of a singular matrix is 0.
Results of LAPACK are not bit-for-bit those of numpy (different algorithms: ``solve`` uses a
QR factorization), but agree to rounding.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core.avals import dtype_category, same_dim
from ..core.trace import typeof
from ..lax import linalg as L
from ._promote import broadcast_shapes, broadcast_to_shape, promote_dtypes
from .shape_ops import _as_array, astype, expand_dims, swapaxes

__all__ = ["norm", "vector_norm", "matrix_norm", "solve", "inv", "det", "slogdet", "cholesky", "qr",
           "eigh", "eigvalsh", "eig", "eigvals", "svd", "svdvals", "LinAlgError", "QRResult",
           "EighResult", "EigResult", "SVDResult", "SlogdetResult"]

LinAlgError = np.linalg.LinAlgError


class QRResult(NamedTuple):
    Q: object
    R: object


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class EigResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


# ----------------------------------------------------------------------------------------------
# argument handling
# ----------------------------------------------------------------------------------------------
def _lapack_dtype(name, dtype, what):
    cat = dtype_category(dtype)
    if cat in ("bool", "signed", "unsigned"):
        return np.dtype(np.float64)
    if np.dtype(dtype) in L.LINALG_DTYPES:
        return np.dtype(dtype)
    raise TypeError(f"{name}: {what} has dtype {np.dtype(dtype).name}, which linalg does not support "
                    "(use float32, float64, complex64 or complex128)")


def _matrix(name, a, what="a", square=True):
    """``a`` as an array of a LAPACK dtype, checked to be a stack of (square) matrices."""
    a = _as_array(a)
    av = typeof(a)
    a = astype(a, _lapack_dtype(name, av.dtype, what))
    _check_matrix_shape(name, typeof(a), what, square)
    return a


def _check_matrix_shape(name, av, what, square):
    if av.ndim < 2:
        raise ValueError(f"{name}: {what} must have at least 2 dimensions, got {av.ndim}-dimensional "
                         f"shape {_shape_str(av.shape)}")
    if square:
        m, n = av.shape[-2:]
        if isinstance(m, int) and isinstance(n, int):
            if m != n:
                raise ValueError(f"{name}: the last two dimensions of {what} must be square, got "
                                 f"shape {_shape_str(av.shape)}")
        elif not same_dim(m, n):
            raise TypeError(f"{name}: the last two dimensions of {what} must be square, but its sizes "
                            f"{_dim_str(m)} and {_dim_str(n)} are not known to be equal (give both axes "
                            "the same name in abstracted_axes)")


def _dim_str(d):
    from ..lax.base import dim_str
    return dim_str(d)


def _shape_str(shape):
    return "(" + ", ".join(_dim_str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


# ----------------------------------------------------------------------------------------------
# solve, inv, det, slogdet
# ----------------------------------------------------------------------------------------------
def solve(a, b):
    """numpy.linalg.solve: ``x`` with ``a @ x == b``.

    ``a`` is ``(..., M, M)``; ``b`` is ``(M,)`` (one right-hand side, broadcast against every
    matrix) or ``(..., M, K)``, whose batch axes broadcast with ``a``'s."""
    a, b = _as_array(a), _as_array(b)
    dt, _ = promote_dtypes(typeof(a), typeof(b))
    dt = _lapack_dtype("solve", dt, "the operands")
    a, b = astype(a, dt), astype(b, dt)
    av, bv = typeof(a), typeof(b)
    _check_matrix_shape("solve", av, "a", True)
    if bv.ndim == 0:
        raise ValueError("solve: b must be at least 1-dimensional, got a scalar")
    vector = bv.ndim == 1
    if vector:
        b = expand_dims(b, -1)
        bv = typeof(b)
    n, rows = av.shape[-1], bv.shape[-2]
    if isinstance(n, int) and isinstance(rows, int) and n != rows:
        raise ValueError(f"solve: b has {rows} rows but a is {n} x {n} "
                         f"(a: {_shape_str(av.shape)}, b: {_shape_str(typeof(b).shape)})")
    if not same_dim(n, rows):
        raise TypeError(f"solve: b has {_dim_str(rows)} rows and a is {_dim_str(n)} x {_dim_str(n)}: the "
                        "sizes are not known to be equal (give the axes the same name in abstracted_axes)")
    batch = broadcast_shapes(tuple(av.shape[:-2]), tuple(bv.shape[:-2]))
    a = broadcast_to_shape(a, tuple(batch) + tuple(av.shape[-2:]))
    b = broadcast_to_shape(b, tuple(batch) + tuple(bv.shape[-2:]))
    x = L.solve(a, b)
    if vector:
        from .shape_ops import squeeze
        x = squeeze(x, axis=-1)
    return x


def inv(a):
    """numpy.linalg.inv: the inverse of each square matrix of ``a`` (``(..., M, M)``)."""
    from .creation import eye
    a = _matrix("inv", a)
    av = typeof(a)
    ident = broadcast_to_shape(eye(av.shape[-1], dtype=av.dtype), tuple(av.shape))
    return L.solve(a, ident)


def det(a):
    """numpy.linalg.det: the determinant of each square matrix of ``a``."""
    return L.det(_matrix("det", a))


def slogdet(a):
    """numpy.linalg.slogdet: ``SlogdetResult(sign, logabsdet)``; ``det = sign * exp(logabsdet)``.
    A singular matrix gives ``(0, -inf)``."""
    return SlogdetResult(*L.slogdet(_matrix("slogdet", a)))


# ----------------------------------------------------------------------------------------------
# decompositions
# ----------------------------------------------------------------------------------------------
def cholesky(a, upper=False):
    """numpy.linalg.cholesky: the lower factor ``L`` with ``a = L @ L^H`` (the upper factor
    ``L^H`` with ``upper=True``). Only the lower triangle of ``a`` is read. A matrix that is not
    positive definite gives NaNs (numpy raises ``LinAlgError``)."""
    from .ufuncs import conj
    low = L.cholesky(_matrix("cholesky", a))
    if upper:
        return conj(swapaxes(low, -1, -2))
    return low


def qr(a, mode="reduced"):
    """numpy.linalg.qr: ``QRResult(Q, R)`` with ``mode='reduced'`` (``Q`` is ``(..., M, K)``,
    ``R`` is ``(..., K, N)``, ``K = min(M, N)``) or ``'complete'`` (``Q`` is ``(..., M, M)``);
    ``mode='r'`` returns ``R`` only."""
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"qr: unrecognized mode {mode!r} (use 'reduced', 'complete' or 'r')")
    if mode == "raw":
        raise NotImplementedError("qr: mode='raw' is not supported (use 'reduced', 'complete' or 'r')")
    a = _matrix("qr", a, square=False)
    q, r = L.qr(a, full_matrices=(mode == "complete"))
    return r if mode == "r" else QRResult(q, r)


def _uplo(name, UPLO):
    if UPLO not in ("L", "U"):
        raise ValueError(f"{name}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO == "L"


def eigh(a, UPLO="L"):
    """numpy.linalg.eigh: ``EighResult(eigenvalues, eigenvectors)`` of Hermitian matrices,
    eigenvalues ascending, eigenvectors in the columns; only the ``UPLO`` triangle is read."""
    lower = _uplo("eigh", UPLO)
    w, v = L.eigh(_matrix("eigh", a), lower=lower)
    return EighResult(w, v)


def eigvalsh(a, UPLO="L"):
    """numpy.linalg.eigvalsh: the ascending eigenvalues of Hermitian matrices."""
    return eigh(a, UPLO).eigenvalues


def eig(a):
    """numpy.linalg.eig: ``EigResult(eigenvalues, eigenvectors)`` of general square matrices,
    the right eigenvectors in the columns (``a @ v[..., :, i] == w[..., i] * v[..., :, i]``),
    each of unit 2-norm with its largest component real, in LAPACK's order. Always complex
    (JAX's rule; numpy returns real arrays when every eigenvalue is real). A failing matrix
    gives NaNs. The eigenvectors have no derivative (as in JAX: use
    ``dynjax.lax.linalg.eig(..., enable_eigvec_derivs=True)``); ``eigvals`` has one."""
    w, v = L.eig(_matrix("eig", a), compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a):
    """numpy.linalg.eigvals: the eigenvalues of general square matrices, complex, in LAPACK's
    order (the order of ``eig``'s)."""
    w, = L.eig(_matrix("eigvals", a), compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    return w


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """numpy.linalg.svd: ``SVDResult(U, S, Vh)`` with ``a = U @ diag(S) @ Vh`` and ``S``
    descending, or ``S`` alone with ``compute_uv=False``. ``hermitian=True`` is accepted and
    computes the general SVD (a valid result; numpy's differs at most in signs)."""
    a = _matrix("svd", a, square=False)
    if not compute_uv:
        return L.svd(a, full_matrices=False, compute_uv=False)[0]
    s, u, vh = L.svd(a, full_matrices=bool(full_matrices), compute_uv=True)
    return SVDResult(u, s, vh)


def svdvals(x):
    """numpy.linalg.svdvals: the singular values, descending."""
    return svd(x, compute_uv=False)


# ----------------------------------------------------------------------------------------------
# norms
# ----------------------------------------------------------------------------------------------
def _float_input(x):
    x = _as_array(x)
    if dtype_category(typeof(x).dtype) in ("bool", "signed", "unsigned"):
        x = astype(x, np.float64)
    return x


def _abs_sq(x):
    from .ufuncs import conj, multiply, real
    if dtype_category(typeof(x).dtype) == "complex":
        return real(multiply(x, conj(x)))
    return multiply(x, x)


def _vector_norm(x, ord, axis):
    from .reductions import amax, amin, sum as sum_
    from .ufuncs import abs as abs_, not_equal, power, sqrt
    if ord is None or ord == 2:
        return sqrt(sum_(_abs_sq(x), axis=axis))
    if isinstance(ord, str):
        raise ValueError(f"norm: invalid norm order {ord!r} for vectors")
    if ord == np.inf:
        return amax(abs_(x), axis=axis)
    if ord == -np.inf:
        return amin(abs_(x), axis=axis)
    if ord == 0:
        rd = typeof(abs_(x)).dtype
        return sum_(astype(not_equal(x, 0), rd), axis=axis)
    if ord == 1:
        return sum_(abs_(x), axis=axis)
    ordf = float(ord)
    a = abs_(x)
    rd = typeof(a).dtype
    return power(sum_(power(a, rd.type(ordf)), axis=axis), rd.type(1.0 / ordf))


def _matrix_norm(x, ord, row_axis, col_axis):
    from .reductions import amax, amin, sum as sum_
    from .ufuncs import abs as abs_, sqrt
    if ord is None or ord in ("fro", "f"):
        return sqrt(sum_(_abs_sq(x), axis=(row_axis, col_axis)))
    if ord in (2, -2, "nuc"):
        from .shape_ops import transpose
        nd = typeof(x).ndim
        rest = [i for i in range(nd) if i not in (row_axis, col_axis)]
        s = svd(transpose(x, rest + [row_axis, col_axis]), compute_uv=False)
        if ord == 2:
            return amax(s, axis=-1)
        if ord == -2:
            return amin(s, axis=-1)
        return sum_(s, axis=-1)
    if ord in (1, -1):
        red = amax if ord == 1 else amin
        c = col_axis - 1 if col_axis > row_axis else col_axis
        return red(sum_(abs_(x), axis=row_axis), axis=c)
    if ord in (np.inf, -np.inf):
        red = amax if ord == np.inf else amin
        r = row_axis - 1 if row_axis > col_axis else row_axis
        return red(sum_(abs_(x), axis=col_axis), axis=r)
    raise ValueError(f"norm: invalid norm order {ord!r} for matrices")


def norm(x, ord=None, axis=None, keepdims=False):
    """numpy.linalg.norm: vector norms (``ord`` None/2, 1, inf, -inf, 0, any p) over one axis,
    matrix norms (None/'fro', 1, -1, 2, -2, inf, -inf, 'nuc') over two axes, and the 2-norm of
    the flattened array when ``axis`` and ``ord`` are None."""
    from .shape_ops import reshape
    x = _float_input(x)
    nd = typeof(x).ndim
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            from .reductions import sum as sum_
            from .ufuncs import sqrt
            out = sqrt(sum_(_abs_sq(x)))
            return reshape(out, (1,) * nd) if keepdims else out
        if nd not in (1, 2):
            raise ValueError(f"norm: improper number of dimensions to norm ({nd}) for ord={ord!r}; "
                             "pass axis")
        axes = tuple(range(nd))
    elif isinstance(axis, (tuple, list)):
        axes = tuple(int(a) for a in axis)
    else:
        axes = (int(axis),)
    for ax in axes:
        if not -nd <= ax < nd:
            raise ValueError(f"norm: axis {ax} is out of bounds for an array of dimension {nd}")
    axes = tuple(ax % nd for ax in axes)
    if len(axes) == 1:
        out = _vector_norm(x, ord, axes[0])
    elif len(axes) == 2:
        if axes[0] == axes[1]:
            raise ValueError("norm: duplicate axes given")
        out = _matrix_norm(x, ord, axes[0], axes[1])
    else:
        raise ValueError(f"norm: improper number of dimensions to norm (axis={axis!r})")
    if keepdims:
        out = expand_dims(out, tuple(sorted(axes)))
    return out


def vector_norm(x, axis=None, keepdims=False, ord=2):
    """numpy.linalg.vector_norm: the ``ord`` vector norm over ``axis`` (all axes by default,
    as one flattened vector)."""
    from .shape_ops import ravel, reshape
    x = _float_input(x)
    nd = typeof(x).ndim
    if axis is None:
        out = _vector_norm(ravel(x), ord, 0)
        return reshape(out, (1,) * nd) if keepdims else out
    return norm(x, ord=ord, axis=axis, keepdims=keepdims) if not isinstance(axis, (tuple, list)) \
        or len(axis) == 1 else _vector_norm_multi(x, ord, axis, keepdims)


def _vector_norm_multi(x, ord, axis, keepdims):
    from .shape_ops import reshape, transpose
    nd = typeof(x).ndim
    axes = sorted(int(a) % nd for a in axis)
    rest = [i for i in range(nd) if i not in axes]
    y = transpose(x, rest + axes)          # the reduced axes last, flattened into one
    y = reshape(y, tuple(typeof(y).shape[:len(rest)]) + (-1,))
    out = _vector_norm(y, ord, len(rest))
    if keepdims:
        out = expand_dims(out, tuple(axes))
    return out


def matrix_norm(x, keepdims=False, ord="fro"):
    """numpy.linalg.matrix_norm: the ``ord`` matrix norm of the last two axes."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


from .linalg_more import (cond, cross, diagonal, lstsq, matmul, matrix_power, matrix_rank,  # noqa: F401,E402
                          matrix_transpose, multi_dot, outer, pinv, tensordot, tensorinv, tensorsolve, trace,
                          vecdot)
