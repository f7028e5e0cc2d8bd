"""Linear-algebra primitives: solve, det, slogdet, cholesky, qr, eigh, eig, svd.

Each primitive works on a stack of matrices: the last two axes are the matrix, every leading
axis is a batch axis (batching is therefore a transpose of the batch axis to the front). The
operand dtype must be float32, float64, complex64 or complex128 (``dynjax.numpy.linalg``
promotes integers to float64, as numpy does).

* The ``impl`` rules (eager evaluation, the reference semantics) check their operands as
  the abstract evaluation does, then call ``numpy.linalg`` (``eig``: scipy's ``geev``, the
  LAPACK that jaxlib's kernels call, so that eager and compiled eigenvectors agree).
* The lowering rules (``dynjax/lowering/linalg.py``) emit ``stablehlo.custom_call`` s of the
  LAPACK kernels that jaxlib ships for XLA:CPU (``lapack_?getrf_ffi``, ``lapack_?potrf_ffi``,
  ``lapack_?geqrf_ffi`` / ``lapack_?orgqr_ffi`` / ``lapack_?ormqr_ffi`` / ``lapack_?trsm_ffi``,
  ``lapack_?syevd_ffi`` / ``lapack_?heevd_ffi``, ``lapack_?geev_ffi``, ``lapack_?gesdd_ffi``),
  registered by ``dynjax.runtime.ensure_lapack_targets``.
* Failures never raise (JAX's convention, so that compiled code and eager code agree): a
  matrix that is not positive definite gives a Cholesky factor of NaNs, a non-converging
  ``eigh`` / ``eig`` / ``svd`` gives NaNs, and a singular ``solve`` gives NaNs eagerly (where numpy
  raises ``LinAlgError``) and infinities or NaNs compiled (an exactly zero pivot).
  ``det`` of a singular matrix is 0 and ``slogdet`` gives ``(0, -inf)``, as numpy.

``eig`` (a general, non-symmetric matrix) gives complex results whatever the operand (complex64
for float32 / complex64, complex128 for float64 / complex128), as JAX: the eigenvalues in
LAPACK's order and, when asked, left and right eigenvectors in the columns, each of unit
2-norm with its largest component real (LAPACK's ``geev`` normalization).

``qr`` and ``svd`` produce matrices with ``k = min(m, n)`` rows or columns. ``k`` is the static
param ``k`` when it is known, else (``k=None``) a trailing integer operand computed by the
caller (``lax.min`` of the two dims), following the catalogue's convention for new sizes.
"""
from __future__ import annotations

import numpy as np

from ..core.avals import complex_dtype, real_dtype
from ..core.primitive import as_dim
from .base import aval, check_dim_operands, define, describe_shapes, result_aval, same_dim

__all__ = ["solve_p", "det_p", "slogdet_p", "cholesky_p", "qr_p", "eigh_p", "eig_p", "svd_p",
           "LINALG_DTYPES", "solve", "det", "slogdet", "cholesky", "qr", "eigh", "eig", "svd", "min_dim"]

#: the dtypes LAPACK works in
LINALG_DTYPES = tuple(np.dtype(t) for t in ("float32", "float64", "complex64", "complex128"))


# ----------------------------------------------------------------------------------------------
# shape checks
# ----------------------------------------------------------------------------------------------
def _check_matrix(name: str, a, square: bool, what: str = "a"):
    """The aval of ``a``, checked: rank >= 2, a LAPACK dtype, square when asked."""
    av = aval(a)
    if av.dtype not in LINALG_DTYPES:
        raise TypeError(f"{name}: {what} must be float32, float64, complex64 or complex128, "
                        f"got {av.dtype.name}")
    if av.ndim < 2:
        raise TypeError(f"{name}: {what} must have at least 2 dimensions (a stack of matrices), "
                        f"got shape {describe_shapes(av)}")
    if square and not same_dim(av.shape[-1], av.shape[-2]):
        raise TypeError(f"{name}: {what} must be a stack of square matrices, got "
                        f"{describe_shapes(av)} (the last two sizes are not known to be equal; "
                        "give them the same name in abstracted_axes)")
    return av


def _k_dim(name, av, k, dyn):
    """The dim ``min(m, n)`` from the static param or the trailing operand."""
    if k is None:
        if len(dyn) != 1:
            raise TypeError(f"{name}: expected one dynamic size operand for k=None, got {len(dyn)}")
        check_dim_operands(name, dyn)
        return as_dim(dyn[0])
    if dyn:
        raise TypeError(f"{name}: unexpected dynamic size operands with static k={k}")
    m, n = av.shape[-2:]
    if isinstance(m, int) and isinstance(n, int) and k != min(m, n):
        raise TypeError(f"{name}: k={k} but min(m, n) = {min(m, n)}")
    return int(k)


# ----------------------------------------------------------------------------------------------
# eager helpers: numpy.linalg per stack, NaN for a failing matrix (never an exception)
# ----------------------------------------------------------------------------------------------
def _nan_fill(outs):
    return [np.full(o.shape, np.nan, o.dtype) for o in outs]


def _each(fn, a, *others, template):
    """``fn`` on the whole stack; when numpy raises LinAlgError, matrix by matrix, NaNs for
    the failing ones. ``template(*matrices)`` gives the zero-filled results of one matrix."""
    try:
        out = fn(a, *others)
        return list(out) if isinstance(out, tuple) else [out]
    except np.linalg.LinAlgError:
        pass
    batch = a.shape[:-2]
    first = template(*(x[(0,) * (x.ndim - 2)] if x.ndim >= 2 else x for x in (a,) + others))
    results = [np.empty(batch + o.shape, o.dtype) for o in first]
    for idx in np.ndindex(*batch):
        try:
            out = fn(a[idx], *(o[idx] for o in others))
            out = list(out) if isinstance(out, tuple) else [out]
        except np.linalg.LinAlgError:
            out = _nan_fill(first)
        for r, o in zip(results, out):
            r[idx] = o
    return results


# ----------------------------------------------------------------------------------------------
# solve
# ----------------------------------------------------------------------------------------------
def _solve_impl(a, b, *, transpose_a=False):
    _solve_abstract(a, b, transpose_a=transpose_a)
    a, b = np.asarray(a), np.asarray(b)
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    return _each(np.linalg.solve, a, b, template=lambda a1, b1: [np.zeros(b1.shape, b1.dtype)])[0]


def _solve_abstract(a, b, *, transpose_a=False):
    av = _check_matrix("solve", a, True, "a")
    bv = _check_matrix("solve", b, False, "b")
    if av.dtype != bv.dtype:
        raise TypeError(f"solve: a and b must have the same dtype, got {av.dtype.name} and {bv.dtype.name}")
    ok = av.ndim == bv.ndim and all(same_dim(p, q) for p, q in zip(av.shape[:-1], bv.shape[:-1]))
    if not ok:
        raise TypeError(f"solve: b must have a's batch dims and a's rows: a is {describe_shapes(av)}, "
                        f"b is {describe_shapes(bv)}")
    return result_aval(bv.shape, bv.dtype)


solve_p = define("linalg_solve", _solve_impl, _solve_abstract)


# ----------------------------------------------------------------------------------------------
# det, slogdet
# ----------------------------------------------------------------------------------------------
def _det_impl(a):
    _check_matrix("det", a, True)
    a = np.asarray(a)
    return np.asarray(np.linalg.det(a), a.dtype)


def _det_abstract(a):
    av = _check_matrix("det", a, True)
    return result_aval(av.shape[:-2], av.dtype)


det_p = define("linalg_det", _det_impl, _det_abstract)


def _slogdet_impl(a):
    _check_matrix("slogdet", a, True)
    a = np.asarray(a)
    sign, logdet = np.linalg.slogdet(a)
    return [np.asarray(sign, a.dtype), np.asarray(logdet, real_dtype(a.dtype))]


def _slogdet_abstract(a):
    av = _check_matrix("slogdet", a, True)
    return [result_aval(av.shape[:-2], av.dtype), result_aval(av.shape[:-2], real_dtype(av.dtype))]


slogdet_p = define("linalg_slogdet", _slogdet_impl, _slogdet_abstract, multiple_results=True)


# ----------------------------------------------------------------------------------------------
# cholesky (lower factor; only the lower triangle of the operand is read)
# ----------------------------------------------------------------------------------------------
def _cholesky_impl(a):
    _check_matrix("cholesky", a, True)
    a = np.asarray(a)
    return _each(np.linalg.cholesky, a, template=lambda a1: [np.zeros(a1.shape, a1.dtype)])[0]


def _cholesky_abstract(a):
    av = _check_matrix("cholesky", a, True)
    return result_aval(av.shape, av.dtype)


cholesky_p = define("linalg_cholesky", _cholesky_impl, _cholesky_abstract)


# ----------------------------------------------------------------------------------------------
# qr
# ----------------------------------------------------------------------------------------------
def _qr_impl(a, *dyn, full_matrices, k):
    _check_matrix("qr", a, False)
    a = np.asarray(a)
    q, r = np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    return [np.asarray(q, a.dtype), np.asarray(r, a.dtype)]


def _qr_abstract(a, *dyn, full_matrices, k):
    av = _check_matrix("qr", a, False)
    kd = _k_dim("qr", av, k, dyn)
    *batch, m, n = av.shape
    batch = tuple(batch)
    if full_matrices:
        return [result_aval(batch + (m, m), av.dtype), result_aval(batch + (m, n), av.dtype)]
    return [result_aval(batch + (m, kd), av.dtype), result_aval(batch + (kd, n), av.dtype)]


qr_p = define("linalg_qr", _qr_impl, _qr_abstract, multiple_results=True)


# ----------------------------------------------------------------------------------------------
# eigh (ascending eigenvalues, eigenvectors in the columns)
# ----------------------------------------------------------------------------------------------
def _eigh_impl(a, *, lower=True):
    _check_matrix("eigh", a, True)
    a = np.asarray(a)
    n = a.shape[-1]

    def template(a1):
        return [np.zeros((n,), real_dtype(a.dtype)), np.zeros((n, n), a.dtype)]
    return _each(lambda x: tuple(np.linalg.eigh(x, UPLO="L" if lower else "U")), a, template=template)


def _eigh_abstract(a, *, lower=True):
    av = _check_matrix("eigh", a, True)
    return [result_aval(av.shape[:-1], real_dtype(av.dtype)), result_aval(av.shape, av.dtype)]


eigh_p = define("linalg_eigh", _eigh_impl, _eigh_abstract, multiple_results=True)


# ----------------------------------------------------------------------------------------------
# eig (general matrices: complex eigenvalues in LAPACK's order, left / right eigenvectors)
# ----------------------------------------------------------------------------------------------
def _eig_nan(shape, dtype):
    return np.full(shape, complex(np.nan, np.nan), dtype)


def _eig_impl(a, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
              enable_eigvec_derivs=False):
    # scipy's geev rather than numpy.linalg.eig: jaxlib's kernels call scipy's LAPACK, so eager
    # and compiled results agree element by element (numpy's bundled LAPACK may be another
    # version, whose eigenvector phases differ); numpy.linalg also has no left eigenvectors.
    # scipy is a dependency of jaxlib.
    import scipy.linalg
    _check_matrix("eig", a, True)
    a = np.asarray(a)
    cdt = complex_dtype(a.dtype)
    batch, n = a.shape[:-2], a.shape[-1]
    left, right = compute_left_eigenvectors, compute_right_eigenvectors

    def one(x):
        """``[w, vl?, vr?]`` of one matrix; NaNs when LAPACK fails or ``x`` is not finite."""
        try:
            if not np.isfinite(x).all():
                raise np.linalg.LinAlgError("eig: the matrix is not finite")
            if left or right:
                out = scipy.linalg.eig(x, left=left, right=right, check_finite=False)
                outs = list(out) if isinstance(out, tuple) else [out]
            else:
                outs = [scipy.linalg.eigvals(x, check_finite=False)]
            return [np.asarray(o, cdt) for o in outs]
        except np.linalg.LinAlgError:
            return [_eig_nan((n,), cdt)] + [_eig_nan((n, n), cdt)] * (int(left) + int(right))

    shapes = [batch + (n,)] + [batch + (n, n)] * (int(left) + int(right))
    results = [np.empty(s, cdt) for s in shapes]
    for idx in np.ndindex(*batch):
        for r, o in zip(results, one(a[idx])):
            r[idx] = o
    return results


def _eig_abstract(a, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
                  enable_eigvec_derivs=False):
    av = _check_matrix("eig", a, True)
    cdt = complex_dtype(av.dtype)
    count = int(bool(compute_left_eigenvectors)) + int(bool(compute_right_eigenvectors))
    return [result_aval(av.shape[:-1], cdt)] + [result_aval(av.shape, cdt)] * count


eig_p = define("linalg_eig", _eig_impl, _eig_abstract, multiple_results=True)


# ----------------------------------------------------------------------------------------------
# svd (descending singular values)
# ----------------------------------------------------------------------------------------------
def _svd_impl(a, *dyn, full_matrices, compute_uv, k):
    _check_matrix("svd", a, False)
    a = np.asarray(a)
    m, n = a.shape[-2:]
    kk = min(m, n)
    rd = real_dtype(a.dtype)
    if not compute_uv:
        return _each(lambda x: np.linalg.svd(x, compute_uv=False), a,
                     template=lambda a1: [np.zeros((kk,), rd)])
    ku, kv = (m, n) if full_matrices else (kk, kk)

    def run(x):
        u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
        return s, u, vh
    return _each(run, a, template=lambda a1: [np.zeros((kk,), rd), np.zeros((m, ku), a.dtype),
                                              np.zeros((kv, n), a.dtype)])


def _svd_abstract(a, *dyn, full_matrices, compute_uv, k):
    av = _check_matrix("svd", a, False)
    kd = _k_dim("svd", av, k, dyn)
    *batch, m, n = av.shape
    batch = tuple(batch)
    s = result_aval(batch + (kd,), real_dtype(av.dtype))
    if not compute_uv:
        return [s]
    ku, kv = (m, n) if full_matrices else (kd, kd)
    return [s, result_aval(batch + (m, ku), av.dtype), result_aval(batch + (kv, n), av.dtype)]


svd_p = define("linalg_svd", _svd_impl, _svd_abstract, multiple_results=True)


# ----------------------------------------------------------------------------------------------
# thin lax-style wrappers (strict: no promotion, no broadcasting)
# ----------------------------------------------------------------------------------------------
def min_dim(m, n):
    """``min(m, n)`` of two dims: an int, the shared dim, or a traced ``lax.min``."""
    if isinstance(m, int) and isinstance(n, int):
        return min(m, n)
    if same_dim(m, n):
        return m
    from . import api
    return api.min(m, n)


def _k_args(a):
    m, n = aval(a).shape[-2:]
    k = min_dim(m, n)
    return ((), k) if isinstance(k, int) else ((k,), None)


def solve(a, b, transpose_a=False):
    """``x`` with ``a @ x == b`` (``a.T @ x == b`` with ``transpose_a``); ``b`` is
    ``(..., n, k)`` with ``a``'s batch dims."""
    return solve_p.bind(a, b, transpose_a=bool(transpose_a))


def det(a):
    """The determinants of a stack of square matrices."""
    return det_p.bind(a)


def slogdet(a):
    """``(sign, log|det|)`` of a stack of square matrices."""
    return tuple(slogdet_p.bind(a))


def cholesky(a):
    """The lower Cholesky factor (reads the lower triangle of ``a``)."""
    return cholesky_p.bind(a)


def qr(a, full_matrices=False):
    """``(q, r)``: reduced (``k = min(m, n)``) or complete QR decomposition."""
    dyn, k = _k_args(a)
    return tuple(qr_p.bind(a, *dyn, full_matrices=bool(full_matrices), k=k))


def eigh(a, lower=True):
    """``(w, v)``: ascending eigenvalues and eigenvectors of Hermitian matrices."""
    return tuple(eigh_p.bind(a, lower=bool(lower)))


def eig(x, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
        enable_eigvec_derivs=False, implementation=None, use_magma=None):
    """JAX's ``lax.linalg.eig``: ``[w, vl, vr]`` of general square matrices (``vl`` / ``vr``
    only when asked), all complex. ``w`` is in LAPACK's order; ``vl`` / ``vr`` hold the left
    (``vl[..., :, j]^H x = w[j] vl[..., :, j]^H``) and right (``x vr[..., :, j] = w[j]
    vr[..., :, j]``) eigenvectors in their columns, each of unit 2-norm with its largest
    component real. A failing matrix gives NaNs.

    ``enable_eigvec_derivs`` allows the derivative of the eigenvectors (valid for distinct
    eigenvalues, taken under LAPACK's normalization; JAX's rule); without it only the
    eigenvalues-only form (no vectors asked) can be differentiated. ``implementation`` must be
    None or LAPACK's (the only one on the CPU); ``use_magma`` (GPU only in JAX) must not be
    true."""
    if implementation is not None and str(getattr(implementation, "name", implementation)).lower() != "lapack":
        raise ValueError("eig: only the LAPACK implementation is supported on the CPU, got "
                         f"implementation={implementation!r}")
    if use_magma:
        raise ValueError("eig: MAGMA (use_magma=True) is a GPU implementation; dynjax runs LAPACK on the CPU")
    return list(eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                           compute_right_eigenvectors=bool(compute_right_eigenvectors),
                           enable_eigvec_derivs=bool(enable_eigvec_derivs)))


def svd(a, full_matrices=True, compute_uv=True):
    """``(s, u, vh)`` (or ``(s,)`` without ``compute_uv``), singular values descending."""
    dyn, k = _k_args(a)
    return tuple(svd_p.bind(a, *dyn, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv), k=k))
