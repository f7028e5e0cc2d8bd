"""Contractions: dot_general
(part of the primitive catalogue, ``lax/primitives/``)."""
from __future__ import annotations

import numpy as np

from ...core import cooperative
from ...core.avals import canonical_dtype
from ..base import aval, check_dtypes_equal, define, describe_shapes, result_aval, same_dim
from .elementwise import _arr


# ----------------------------------------------------------------------------------------------
# Linear algebra
# ----------------------------------------------------------------------------------------------


def _dot_general_impl(x, y, *, dimension_numbers, preferred_element_type=None):
    x, y = _arr(x), _arr(y)
    if preferred_element_type is not None:
        # the products and their sum are computed in the preferred type (as XLA does), not
        # in the operands' type and converted afterwards
        x, y = x.astype(preferred_element_type), y.astype(preferred_element_type)
    (lc, rc), (lb, rb) = dimension_numbers
    if x.ndim == 2 and y.ndim == 2 and tuple(lc) == (1,) and tuple(rc) == (0,) and not lb:
        # a matrix product (the general path below computes this same np.matmul after
        # transposes and reshapes that are no-ops here: ~12 us of an eager call)
        return _arr(cooperative.matmul(x, y), preferred_element_type or x.dtype)
    lfree = [i for i in range(x.ndim) if i not in lc and i not in lb]
    rfree = [i for i in range(y.ndim) if i not in rc and i not in rb]
    xt = np.transpose(x, list(lb) + lfree + list(lc))
    yt = np.transpose(y, list(rb) + list(rc) + rfree)
    nb = len(lb)
    bshape = xt.shape[:nb]
    lf = xt.shape[nb:nb + len(lfree)]
    rf = yt.shape[nb + len(rc):]
    k = int(np.prod(xt.shape[nb + len(lfree):], dtype=np.int64))
    xm = xt.reshape(bshape + (int(np.prod(lf, dtype=np.int64)), k))
    ym = yt.reshape(bshape + (k, int(np.prod(rf, dtype=np.int64))))
    out = cooperative.matmul(xm, ym)   # (np.matmul, except beside a compile: row blocks)
    if out.shape != bshape + lf + rf:   # (not a view when nothing changes: a fresh array
        out = out.reshape(bshape + lf + rf)   # can take the next elementwise result in place)
    dtype = preferred_element_type or x.dtype
    return _arr(out, dtype)


def _dot_general_abstract(x, y, *, dimension_numbers, preferred_element_type=None):
    a, b = aval(x), aval(y)
    (lc, rc), (lb, rb) = dimension_numbers
    check_dtypes_equal("dot_general", a, b)
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError("dot_general: contracting/batch dimension lists differ in length")
    for i, j in list(zip(lc, rc)) + list(zip(lb, rb)):
        if not same_dim(a.shape[i], b.shape[j]):
            raise TypeError(f"dot_general: incompatible contraction or batch dimensions for shapes "
                            f"{describe_shapes(a, b)} (axis {i} of the first vs axis {j} of the second)")
    batch = tuple(a.shape[i] for i in lb)
    lfree = tuple(a.shape[i] for i in range(a.ndim) if i not in lc and i not in lb)
    rfree = tuple(b.shape[i] for i in range(b.ndim) if i not in rc and i not in rb)
    dtype = canonical_dtype(preferred_element_type) if preferred_element_type else a.dtype
    return result_aval(batch + lfree + rfree, dtype, a.weak_type and b.weak_type)


dot_general_p = define("dot_general", _dot_general_impl, _dot_general_abstract)
