"""Jvp rules of the linear-algebra primitives (``dynjax.lax.linalg``)."""
from __future__ import annotations

import numpy as np

from ...core.avals import is_complex_dtype, same_dim
from ...core.primitive import jvp_rules
from ...core.trace import typeof
from ...lax import linalg as _L
from . import Zero, _const, _zero_like

# The standard matrix-calculus rules (as in JAX). Tangents are computed with solve / matmul /
# elementwise operations, all linear in the tangents (solve in its right-hand side), so the
# same rules serve grad through the transpose of linalg_solve. Symmetric-input decompositions
# (cholesky, eigh) differentiate the symmetrized tangent (da + da^H) / 2. Derivatives at
# points where they do not exist (a singular matrix for det, repeated eigenvalues for eigh,
# repeated or zero singular values for svd) come out as infinities or NaNs. eig follows JAX:
# the eigenvalues have a derivative (dw = diag(V^-1 da V)); the eigenvectors only with
# enable_eigvec_derivs=True (valid for distinct eigenvalues, under LAPACK's normalization).


def _la():
    from ... import numpy as jnp
    return jnp


def _mT(x):
    return _la().swapaxes(x, -1, -2)


def _H(x):
    jnp = _la()
    return jnp.conj(jnp.swapaxes(x, -1, -2)) if is_complex_dtype(typeof(x).dtype) else jnp.swapaxes(x, -1, -2)


def _eye_like(x):
    """The identity broadcast to the (square) matrix shape of ``x``."""
    jnp = _la()
    av = typeof(x)
    return jnp.broadcast_to(jnp.eye(av.shape[-1], dtype=av.dtype), tuple(av.shape))


def _trace_last2(x):
    jnp = _la()
    return jnp.sum(x * _eye_like(x), axis=(-2, -1))


def _sym(t):
    return (t + _H(t)) * _const(t, 0.5)


def _linalg_solve_rule(primals, tangents, *, transpose_a=False):
    (a, b), (ta, tb) = primals, tangents
    x = _L.solve_p.bind(a, b, transpose_a=transpose_a)
    rhs = None if isinstance(tb, Zero) else tb
    if not isinstance(ta, Zero):
        jnp = _la()
        opa = _mT(ta) if transpose_a else ta
        term = jnp.matmul(opa, x)
        rhs = -term if rhs is None else rhs - term
    if rhs is None:
        return x, _zero_like(x)
    return x, _L.solve_p.bind(a, rhs, transpose_a=transpose_a)


def _linalg_det_rule(primals, tangents):
    (a,), (ta,) = primals, tangents
    y = _L.det_p.bind(a)
    # d det(a) = det(a) tr(a^-1 da)
    return y, y * _trace_last2(_L.solve_p.bind(a, ta))


def _linalg_slogdet_rule(primals, tangents):
    (a,), (ta,) = primals, tangents
    jnp = _la()
    sign, logabs = _L.slogdet_p.bind(a)
    tr = _trace_last2(_L.solve_p.bind(a, ta))
    if is_complex_dtype(typeof(a).dtype):
        # d log det = tr(a^-1 da): its real part moves log|det|, its imaginary part the phase
        dsign = sign * (jnp.imag(tr) * np.array(1j, typeof(a).dtype))
        return [sign, logabs], [dsign, jnp.real(tr)]
    return [sign, logabs], [_zero_like(sign), tr]


def _linalg_cholesky_rule(primals, tangents):
    (a,), (ta,) = primals, tangents
    jnp = _la()
    low = _L.cholesky_p.bind(a)
    sigma = _sym(ta)
    # X = L^-1 sigma L^-H; dL = L phi(X), phi = the lower triangle with half the diagonal
    tmp = _L.solve_p.bind(low, sigma)
    x = _L.solve_p.bind(low, _H(tmp))
    phi = jnp.tril(x, -1) + x * _eye_like(x) * _const(x, 0.5)
    return low, jnp.matmul(low, phi)


def _linalg_eigh_rule(primals, tangents, *, lower=True):
    (a,), (ta,) = primals, tangents
    jnp = _la()
    w, v = _L.eigh_p.bind(a, lower=lower)
    vdag = jnp.matmul(jnp.matmul(_H(v), _sym(ta)), v)
    eye = _eye_like(vdag)
    dw = jnp.real(jnp.sum(vdag * eye, axis=-1))
    # F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it
    diff = jnp.expand_dims(w, -2) - jnp.expand_dims(w, -1)
    real_eye = jnp.real(eye) if is_complex_dtype(typeof(eye).dtype) else eye
    f = (np.array(1, typeof(w).dtype) - real_eye) / (diff + real_eye)
    f = jnp.astype(f, typeof(v).dtype)
    dv = jnp.matmul(v, f * vdag)
    return [w, v], [dw, dv]


_EIGVEC_DERIVS_MSG = (
    "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the input that "
    "cannot be checked (distinct eigenvalues; see the enable_eigvec_derivs argument of "
    "dynjax.lax.linalg.eig, as in JAX). Pass enable_eigvec_derivs=True to dynjax.lax.linalg.eig to "
    "opt in, or differentiate jnp.linalg.eigvals (the eigenvalues alone).")


def _eig_vec_jvp(w, v, da):
    """``(dw, dv)`` of right eigenvectors ``v`` (columns, unit 2-norm, largest component real)
    of a matrix with eigenvalues ``w``, for the (complex) tangent ``da``; JAX's rule."""
    jnp = _la()
    eye = _eye_like(v)
    # F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it
    f = np.array(1, typeof(v).dtype) / (eye + jnp.expand_dims(w, -2) - jnp.expand_dims(w, -1)) - eye
    p = jnp.matmul(_L.solve_p.bind(v, da), v)
    dw = jnp.sum(p * eye, axis=-1)
    u = jnp.matmul(v, f * p)
    # dv_j = u_j + c_j v_j: the unit norm fixes Re c_j, the real largest component Im c_j
    k = jnp.argmax(jnp.abs(v), axis=-2)
    rows = jnp.broadcast_to(jnp.expand_dims(jnp.arange(typeof(v).shape[-2], dtype=np.int64), -1),
                            tuple(typeof(v).shape))
    mask = jnp.astype(jnp.equal(rows, jnp.expand_dims(k, -2)), typeof(v).dtype)
    re = -jnp.real(jnp.sum(jnp.conj(v) * u, axis=-2))
    im = -jnp.imag(jnp.sum(mask * u, axis=-2)) / jnp.real(jnp.sum(mask * v, axis=-2))
    c = jnp.astype(re, typeof(v).dtype) + jnp.astype(im, typeof(v).dtype) * np.array(1j, typeof(v).dtype)
    return dw, u + v * jnp.expand_dims(c, -2)


def _linalg_eig_rule(primals, tangents, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
                     enable_eigvec_derivs=False):
    (a,), (ta,) = primals, tangents
    jnp = _la()
    left, right = compute_left_eigenvectors, compute_right_eigenvectors
    if (left or right) and not enable_eigvec_derivs:
        raise NotImplementedError(_EIGVEC_DERIVS_MSG)
    outs = _L.eig_p.bind(a, compute_left_eigenvectors=left, compute_right_eigenvectors=True,
                         enable_eigvec_derivs=enable_eigvec_derivs)
    w, vr = outs[0], outs[-1]
    da = jnp.astype(ta, typeof(vr).dtype)
    if not (left or right):
        # dw_i = (V^-1 da V)_ii
        return [w], [jnp.sum(_L.solve_p.bind(vr, da) * _mT(vr), axis=-1)]
    dw, dvr = _eig_vec_jvp(w, vr, da)
    primal_out, tangent_out = [w], [dw]
    if left:
        _, dvl = _eig_vec_jvp(jnp.conj(w), outs[1], _H(da))
        primal_out.append(outs[1])
        tangent_out.append(dvl)
    if right:
        primal_out.append(vr)
        tangent_out.append(dvr)
    return primal_out, tangent_out


def _square(av) -> bool:
    return same_dim(av.shape[-1], av.shape[-2])


def _static_mn(av):
    m, n = av.shape[-2:]
    return (m, n) if isinstance(m, int) and isinstance(n, int) else None


def _linalg_qr_rule(primals, tangents, *, full_matrices, k):
    (a, *dyn), (ta, *_) = primals, tangents
    jnp = _la()
    av = typeof(a)
    mn = _static_mn(av)
    tall = _square(av) or (mn is not None and mn[0] >= mn[1] and not full_matrices)
    if not tall:
        raise NotImplementedError(
            "the derivative of qr is implemented for square matrices and for reduced "
            "(mode='reduced') tall matrices (m >= n, known when tracing)")
    q, r = _L.qr_p.bind(a, *dyn, full_matrices=full_matrices, k=k)
    # dx R^-1 through a solve with R^T: (R^-T dx^T)^T
    dx_rinv = _mT(_L.solve_p.bind(r, _mT(ta), transpose_a=True))
    qt_dx_rinv = jnp.matmul(_H(q), dx_rinv)
    low = jnp.tril(qt_dx_rinv, -1)
    do = low - _H(low)
    if is_complex_dtype(av.dtype):
        eye = _eye_like(qt_dx_rinv)
        do = do + eye * (qt_dx_rinv - jnp.astype(jnp.real(qt_dx_rinv), av.dtype))
    dq = jnp.matmul(q, do - qt_dx_rinv) + dx_rinv
    dr = jnp.matmul(qt_dx_rinv - do, r)
    return [q, r], [dq, dr]


def _linalg_svd_rule(primals, tangents, *, full_matrices, compute_uv, k):
    (a, *dyn), (ta, *_) = primals, tangents
    jnp = _la()
    av = typeof(a)
    dt = av.dtype
    square = _square(av)
    if compute_uv and full_matrices and not square:
        raise NotImplementedError("the derivative of svd with full_matrices=True is implemented for "
                                  "square matrices only (use full_matrices=False)")
    s, u, vt = _L.svd_p.bind(a, *dyn, full_matrices=False, compute_uv=True, k=k)
    ut, v = _H(u), _H(vt)
    ds_mat = jnp.matmul(jnp.matmul(ut, ta), v)
    eye_c = _eye_like(ds_mat)
    ds = jnp.real(jnp.sum(ds_mat * eye_c, axis=-1))
    if not compute_uv:
        return [s], [ds]
    sd = jnp.expand_dims(s, -2)
    eye = jnp.real(eye_c) if is_complex_dtype(dt) else eye_c
    one = np.array(1, typeof(s).dtype)
    s_diffs = (sd + _mT(sd)) * (sd - _mT(sd))
    f = jnp.astype(one / (s_diffs + eye) - eye, dt)
    sdc, sdct = jnp.astype(sd, dt), jnp.astype(_mT(sd), dt)
    dss, sds = sdc * ds_mat, sdct * ds_mat
    s_zero = jnp.astype(jnp.equal(s, 0), typeof(s).dtype)
    s_inv = one / (s + s_zero) - s_zero
    s_inv_mat = jnp.astype(jnp.expand_dims(s_inv, -2) * eye, dt)
    dudv_diag = (ds_mat - _H(ds_mat)) * s_inv_mat * np.array(0.5, dt)
    du = jnp.matmul(u, f * (dss + _H(dss)) + dudv_diag)
    dv = jnp.matmul(v, f * (sds + _H(sds)))
    mn = _static_mn(av)
    if not square:
        # the components outside the span of U (m > n) or of V (n > m); each is zero in the
        # other case, so both are added when the sizes are only known at run time
        if mn is None or mn[0] > mn[1]:
            dav = jnp.matmul(ta, v)
            du = du + (dav - jnp.matmul(u, jnp.matmul(ut, dav))) / sdc
        if mn is None or mn[1] > mn[0]:
            dahu = jnp.matmul(_H(ta), u)
            dv = dv + (dahu - jnp.matmul(v, jnp.matmul(vt, dahu))) / sdc
    return [s, u, vt], [ds, du, _H(dv)]


jvp_rules[_L.solve_p] = _linalg_solve_rule
jvp_rules[_L.det_p] = _linalg_det_rule
jvp_rules[_L.slogdet_p] = _linalg_slogdet_rule
jvp_rules[_L.cholesky_p] = _linalg_cholesky_rule
jvp_rules[_L.eigh_p] = _linalg_eigh_rule
jvp_rules[_L.eig_p] = _linalg_eig_rule
jvp_rules[_L.qr_p] = _linalg_qr_rule
jvp_rules[_L.svd_p] = _linalg_svd_rule
