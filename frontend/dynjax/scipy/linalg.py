"""``dynjax.scipy.linalg``: ``solve_triangular``, ``cho_factor`` / ``cho_solve``, ``lu`` /
``lu_factor`` / ``lu_solve`` and ``expm`` (``jax.scipy.linalg``'s names and signatures), built
on ``dynjax.numpy.linalg``.

* ``solve_triangular`` reads only the triangle named by ``lower`` (the other is masked to
  zero, the diagonal to one with ``unit_diagonal``) and solves with the general ``solve``
  kernel (LAPACK ``getrf``: pivoting changes nothing on a triangular matrix but the work,
  ``O(n**3)`` where a triangular solve is ``O(n**2 k)``; dynjax has no triangular-solve
  primitive yet).
* ``lu`` / ``lu_factor``: Doolittle elimination with partial pivoting written as a
  ``fori_loop`` over the columns with masked whole-matrix updates (``O(n**3)`` per matrix;
  the LAPACK ``getrf`` kernel that ``solve`` uses internally is not exposed as a
  primitive). Works at dynamic sizes; derivatives go through the loop.
* ``expm``: scaling and squaring with the degree-13 Pade approximant (Higham 2005), the
  number of squarings ``s`` from the 1-norm (at most ``max_squarings``): a ``fori_loop`` of
  ``max_squarings`` steps that square while the step is below ``s`` (a bounded loop, so that
  ``grad`` works, and under ``vmap`` each matrix of a stack squares its own number of times;
  the price is ``max_squarings`` matrix products whatever ``s``).
"""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core.avals import is_complex_dtype, is_inexact_dtype
from ..core.trace import typeof
from .special import _quiet

__all__ = ["solve_triangular", "cho_factor", "cho_solve", "lu", "lu_factor", "lu_solve", "expm"]


def _as_inexact(a, name):
    a = jnp.asarray(a) if not hasattr(a, "aval") else a
    dt = typeof(a).dtype
    if not is_inexact_dtype(dt):
        a = jnp.asarray(a, dtype=np.float64)
    return a


def _square(a, name, what="a"):
    av = typeof(a)
    if av.ndim < 2:
        raise ValueError(f"{name}: {what} must be a (stack of) square matrices, got shape {tuple(av.shape)}")
    m, n = av.shape[-2:]
    if isinstance(m, int) and isinstance(n, int) and m != n:
        raise ValueError(f"{name}: {what} must be square, got shape {tuple(av.shape)}")
    return av


def _mT(x):
    return jnp.swapaxes(x, -1, -2)


def _eye_like(a):
    av = typeof(a)
    return jnp.broadcast_to(jnp.eye(av.shape[-1], dtype=av.dtype), tuple(av.shape))


def _tri_mask(a, lower, k=0):
    """Bool mask of the lower (``lower``) or upper triangle of ``a``'s matrices, diagonal
    included (``k = 0``) or not (``k = -1`` / ``1``)."""
    av = typeof(a)
    n = av.shape[-1]
    rows = lax.broadcasted_iota(np.int64, (n, n), 0)
    cols = lax.broadcasted_iota(np.int64, (n, n), 1)
    return (cols <= rows + k) if lower else (cols >= rows + k)


@_quiet
def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     debug=None, check_finite=True):
    """``x`` with ``op(a) @ x = b``: ``op`` is the identity (``trans=0`` / ``'N'``), the
    transpose (``1`` / ``'T'``) or the conjugate transpose (``2`` / ``'C'``); only the
    ``lower`` (or upper) triangle of ``a`` is read. ``b`` is ``(..., n)`` or ``(..., n, k)``."""
    modes = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}
    if isinstance(trans, bool) or trans not in modes:
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    mode = modes[trans]
    a, b = _as_inexact(a, "a"), _as_inexact(b, "b")
    dt = jnp.result_type(a, b)
    a, b = jnp.asarray(a, dtype=dt), jnp.asarray(b, dtype=dt)
    _square(a, "solve_triangular")
    t = jnp.where(_tri_mask(a, lower), a, np.zeros((), dt))
    if unit_diagonal:
        n = typeof(a).shape[-1]
        t = jnp.where(jnp.eye(n, dtype=np.bool_), np.ones((), dt), t)
    if mode >= 1:
        t = _mT(t)
        if mode == 2 and is_complex_dtype(dt):
            t = jnp.conj(t)
    return jnp.linalg.solve(t, b)


@_quiet
def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """``(c, lower)``: the Cholesky factor of ``a`` (``L`` with ``a = L L^H`` when ``lower``,
    else ``U = L^H``), the other triangle zero. Not positive definite: NaNs."""
    a = _as_inexact(a, "a")
    _square(a, "cho_factor")
    return jnp.linalg.cholesky(a, upper=not lower), lower


@_quiet
def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """``x`` with ``a @ x = b``, from ``cho_factor(a)``'s ``(c, lower)``."""
    try:
        c, lower = c_and_lower
    except (TypeError, ValueError):
        raise TypeError("cho_solve: c_and_lower must be the pair (c, lower) from cho_factor") from None
    if lower:
        y = solve_triangular(c, b, lower=True)
        return solve_triangular(c, y, trans=2, lower=True)
    y = solve_triangular(c, b, trans=2, lower=False)
    return solve_triangular(c, y, lower=False)


# ----------------------------------------------------------------------------------------------
# LU with partial pivoting
# ----------------------------------------------------------------------------------------------
def _lu_one(a):
    """``(lu, perm)`` of one square matrix: ``a[perm] = L @ U`` (``L`` unit lower, stored below
    the diagonal of ``lu``, ``U`` on and above it)."""
    av = typeof(a)
    n = av.shape[-1]
    dt = av.dtype
    rows = lax.broadcasted_iota(np.int64, (n,), 0)
    perm0 = lax.broadcasted_iota(np.int64, (n,), 0)

    def step(k, carry):
        m, perm = carry
        col = jnp.abs(jnp.take(m, k, axis=1))
        col = jnp.where(rows >= k, col, -np.ones((), col.dtype))
        p = jnp.argmax(col)
        # swap rows k and p of m and of perm
        rk, rp = jnp.take(m, k, axis=0), jnp.take(m, p, axis=0)
        is_k, is_p = (rows == k)[:, None], (rows == p)[:, None]
        m = jnp.where(is_k, rp[None, :], jnp.where(is_p, rk[None, :], m))
        pk, pp = jnp.take(perm, k), jnp.take(perm, p)
        perm = jnp.where(rows == k, pp, jnp.where(rows == p, pk, perm))
        pivot = jnp.take(jnp.take(m, k, axis=0), k)
        safe = jnp.where(pivot == np.zeros((), dt), np.ones((), dt), pivot)
        below = rows > k
        factors = jnp.where(below, jnp.take(m, k, axis=1) / safe, np.zeros((), dt))
        factors = jnp.where(pivot == np.zeros((), dt), np.zeros((), dt), factors)
        urow = jnp.where(rows > k, jnp.take(m, k, axis=0), np.zeros((), dt))
        m = m - factors[:, None] * urow[None, :]
        # store the multipliers in column k below the diagonal
        colk = (rows == k)[None, :] & below[:, None]
        m = jnp.where(colk, factors[:, None], m)
        return m, perm

    return lax.fori_loop(0, n, step, (a, perm0))


def _lu_batched(a):
    av = typeof(a)
    if av.ndim == 2:
        return _lu_one(a)
    from ..transforms.batching import vmap
    f = _lu_one
    for _ in range(av.ndim - 2):
        f = vmap(f)
    return f(a)


@_quiet
def lu_factor(a, overwrite_a=False, check_finite=True):
    """``(lu, piv)``: the LU factorization of square ``a`` with partial pivoting, LAPACK style
    (``piv[i]``: the row swapped with row ``i`` at step ``i``, int32)."""
    a = _as_inexact(a, "a")
    _square(a, "lu_factor")
    m, perm = _lu_batched(a)
    return m, _perm_to_pivots(perm)


def _perm_to_pivots(perm):
    """LAPACK's sequential swaps from a permutation (``a[perm] = L U``)."""
    pv = typeof(perm)
    n = pv.shape[-1]
    idx = lax.broadcasted_iota(np.int64, (n,), 0)

    def one(p):
        def step(i, carry):
            cur, pos, piv = carry    # cur: the row order so far; pos[r]: where row r sits now
            target = jnp.take(p, i)
            j = jnp.take(pos, target)
            piv = jnp.where(idx == i, j, piv)
            ci = jnp.take(cur, i)
            cur = jnp.where(idx == i, target, jnp.where(idx == j, ci, cur))
            pos = jnp.where(idx == target, i, jnp.where(idx == ci, j, pos))
            return cur, pos, piv
        _, _, piv = lax.fori_loop(0, n, step, (idx, idx, idx))
        return piv.astype(np.int32)
    f = one
    for _ in range(pv.ndim - 1):
        from ..transforms.batching import vmap
        f = vmap(f)
    return f(perm)


@_quiet
def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
    """``(p, l, u)`` with ``a = p @ l @ u`` (``p`` a permutation matrix, ``l`` unit lower
    triangular, ``u`` upper triangular); ``(p @ l, u)`` with ``permute_l=True``."""
    a = _as_inexact(a, "a")
    av = _square(a, "lu")
    m, perm = _lu_batched(a)
    dt = av.dtype
    n = av.shape[-1]
    low = jnp.where(_tri_mask(m, True, -1), m, np.zeros((), dt)) + _eye_like(m)
    up = jnp.where(_tri_mask(m, False), m, np.zeros((), dt))
    # p[perm[i], i] = 1: a = p @ l @ u
    cols = lax.broadcasted_iota(np.int64, (n,), 0)
    p = (perm[..., None, :] == cols[:, None]).astype(dt)
    if permute_l:
        return jnp.matmul(p, low), up
    return p, low, up


@_quiet
def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """``x`` with ``a @ x = b`` (``trans=1``: ``a^T x = b``; ``2``: ``a^H x = b``), from
    ``lu_factor(a)``'s ``(lu, piv)``."""
    lu_, piv = lu_and_piv
    n = typeof(lu_).shape[-1]
    idx = lax.broadcasted_iota(np.int64, (n,), 0)

    def perm_of(pv):
        def step(i, perm):
            j = jnp.take(pv, i).astype(np.int64)
            pi, pj = jnp.take(perm, i), jnp.take(perm, j)
            return jnp.where(idx == i, pj, jnp.where(idx == j, pi, perm))
        return lax.fori_loop(0, n, step, idx)
    perm = perm_of(piv)
    b = _as_inexact(b, "b")
    vector = typeof(b).ndim == 1
    if vector:
        b = b[:, None]
    if trans == 0:
        y = solve_triangular(lu_, jnp.take(b, perm, axis=0), lower=True, unit_diagonal=True)
        x = solve_triangular(lu_, y, lower=False)
    else:
        mode = 1 if trans in (1, "T") else 2
        y = solve_triangular(lu_, b, trans=mode, lower=False)
        z = solve_triangular(lu_, y, trans=mode, lower=True, unit_diagonal=True)
        inv = jnp.argsort(perm)
        x = jnp.take(z, inv, axis=0)
    return x[:, 0] if vector else x


# ----------------------------------------------------------------------------------------------
# expm
# ----------------------------------------------------------------------------------------------
_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
           129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
           40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152


@_quiet
def expm(A, *, upper_triangular=False, max_squarings=16):
    """The matrix exponential of (a stack of) square matrices: scaling and squaring with the
    degree-13 Pade approximant; at most ``max_squarings`` squarings (a matrix whose 1-norm
    needs more gives an inaccurate result, as in JAX)."""
    a = _as_inexact(A, "A")
    av = _square(a, "expm", "A")
    if av.ndim > 2:
        from ..transforms.batching import vmap
        f = lambda m: expm(m, upper_triangular=upper_triangular, max_squarings=max_squarings)
        for _ in range(av.ndim - 3):
            f = vmap(f)
        return vmap(f)(a)
    dt = av.dtype
    norm1 = jnp.max(jnp.sum(jnp.abs(a), axis=0))
    ratio = norm1 / np.asarray(_THETA13, dtype=norm1.dtype)
    s = jnp.ceil(jnp.log2(jnp.maximum(ratio, np.ones((), norm1.dtype))))
    s = jnp.minimum(s, np.asarray(max_squarings, s.dtype))
    s = jnp.where(jnp.isfinite(s), s, np.zeros((), s.dtype)).astype(np.int64)
    scale = jnp.exp2(-s.astype(norm1.dtype)).astype(dt)
    x = a * scale
    ident = jnp.eye(av.shape[-1], dtype=dt)
    b = [np.asarray(c, dtype=dt) for c in _PADE13]
    x2 = x @ x
    x4 = x2 @ x2
    x6 = x4 @ x2
    u = x @ (x6 @ (b[13] * x6 + b[11] * x4 + b[9] * x2) + b[7] * x6 + b[5] * x4 + b[3] * x2 + b[1] * ident)
    v = x6 @ (b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 + b[2] * x2 + b[0] * ident
    r = jnp.linalg.solve(v - u, v + u)
    # max_squarings steps that square while i < s: a fixed count, so that grad (which needs a
    # bounded loop) and vmap (where s differs per matrix) both work
    return lax.fori_loop(0, int(max_squarings), lambda i, m: jnp.where(i < s, m @ m, m), r)
