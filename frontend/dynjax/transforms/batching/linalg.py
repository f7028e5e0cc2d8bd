"""Batching rules of the linear-algebra primitives (``dynjax.lax.linalg``)."""
from __future__ import annotations

from ...core.primitive import batching_rules
from ...lax import linalg as _L
from . import _check_unbatched, to_front

# Every linalg primitive treats the leading axes of its matrix operands as a batch, so the
# batch axis goes to the front (an unbatched operand of solve is broadcast); size operands
# (k = min(m, n) of qr / svd) must be the same for every member.


def _linalg_rule(primitive, nmatrices):
    def rule(size, vals, dims, **params):
        _check_unbatched(primitive.name, dims[nmatrices:])
        mats = [to_front(v, d, size) for v, d in zip(vals[:nmatrices], dims[:nmatrices])]
        out = primitive.bind(*mats, *vals[nmatrices:], **params)
        if primitive.multiple_results:
            return list(out), [0] * len(out)
        return out, 0
    return rule


for _p, _nm in ((_L.solve_p, 2), (_L.det_p, 1), (_L.slogdet_p, 1), (_L.cholesky_p, 1),
                (_L.qr_p, 1), (_L.eigh_p, 1), (_L.eig_p, 1), (_L.svd_p, 1)):
    batching_rules[_p] = _linalg_rule(_p, _nm)
