"""Cost rules of the linear-algebra primitives (``dynjax.lax.linalg``)."""
from __future__ import annotations

from ..core.symbolic import Expr
from ..lax import linalg as _L
from . import Cost, cost_rules

# linear algebra (dynjax.lax.linalg): the leading-order LAPACK flop counts of real matrices
# (a complex flop counts as one), per matrix of the batch; no transcendentals except the
# logarithms of slogdet


def _linalg_cost(flops_of):
    def rule(eqn, sz):
        a = eqn.invars[0].aval
        batch = Expr.const(1)
        for d in a.shape[:-2]:
            batch = batch * sz.value(d)
        m, n = sz.value(a.shape[-2]), sz.value(a.shape[-1])
        flops, trans = flops_of(eqn, sz, m, n)
        return Cost(batch * flops, batch * trans, Expr.const(0), Expr.const(0))
    return rule


def _solve_flops(eqn, sz, m, n):
    k = sz.value(eqn.invars[1].aval.shape[-1])
    # QR (4/3 n^3), applying Q^H (2 n^2 k), the triangular solve (n^2 k)
    return (n * n * n * 4).floordiv(3) + n * n * k * 3, Expr.const(0)


def _lu_flops(eqn, sz, m, n):
    return (n * n * n * 2).floordiv(3) + n, Expr.const(0)


def _slogdet_flops(eqn, sz, m, n):
    return (n * n * n * 2).floordiv(3) + n * 2, n


def _cholesky_flops(eqn, sz, m, n):
    return (n * n * n).floordiv(3), n


def _qr_flops(eqn, sz, m, n):
    # Householder QR 2 m n^2 - 2/3 n^3 (m >= n) plus forming Q, bounded by 4 m^2 n
    return m * n * n * 2 + m * m * n * 2, Expr.const(0)


def _eigh_flops(eqn, sz, m, n):
    return n * n * n * 9, Expr.const(0)


def _eig_flops(eqn, sz, m, n):
    # geev: Hessenberg reduction and the QR algorithm, about 10 n^3 for the eigenvalues alone
    # and 26 n^3 with eigenvectors (accumulating the Schur vectors, back substitution)
    vectors = eqn.params["compute_left_eigenvectors"] or eqn.params["compute_right_eigenvectors"]
    return n * n * n * (26 if vectors else 10), Expr.const(0)


def _svd_flops(eqn, sz, m, n):
    return m * n * n * 4 + n * n * n * 22 if eqn.params["compute_uv"] else m * n * n * 4, Expr.const(0)


cost_rules[_L.solve_p] = _linalg_cost(_solve_flops)
cost_rules[_L.det_p] = _linalg_cost(_lu_flops)
cost_rules[_L.slogdet_p] = _linalg_cost(_slogdet_flops)
cost_rules[_L.cholesky_p] = _linalg_cost(_cholesky_flops)
cost_rules[_L.qr_p] = _linalg_cost(_qr_flops)
cost_rules[_L.eigh_p] = _linalg_cost(_eigh_flops)
cost_rules[_L.eig_p] = _linalg_cost(_eig_flops)
cost_rules[_L.svd_p] = _linalg_cost(_svd_flops)
