"""Gather and scatter: numpy's integer-array indexing, in one normal form
(part of the primitive catalogue, ``lax/primitives/``)."""
from __future__ import annotations

import numpy as np

from ...core.avals import is_float_dtype, is_integer_dtype
from ..base import aval, check_dtypes_equal, define, dim_str, fmt_shape, result_aval, same_dim
from .elementwise import _arr, check_kinds


# ----------------------------------------------------------------------------------------------
# Gather and scatter: numpy's integer-array indexing, in one normal form
# ----------------------------------------------------------------------------------------------
#
# ``gather[axes] x idx``: ``idx`` is an integer array of shape ``B + (k,)`` holding, per row, one
# index into each of the ``k`` axes ``axes`` of ``x``; the result has shape ``B`` followed by
# the axes of ``x`` not in ``axes`` (whole, in order). Indices are clamped into range (XLA's
# gather semantics); an indexed axis of size 0 reads zeros. ``scatter[axes, kind] x idx u``
# writes (``kind="set"``) or combines (``add mul min max``) the rows of ``u`` (shape ``B`` +
# the other axes of ``x``) into a copy of ``x`` at those indices; rows with an index out of
# range are dropped. Everything else numpy and JAX offer (slices, negative indices, modes
# ``fill``/``clip``/``drop``, boolean masks, broadcasting) is built on these two in
# ``dynjax.numpy.indexing``.

def _index_rows(name, a, ia, axes):
    if not is_integer_dtype(ia.dtype) or ia.ndim < 1:
        raise TypeError(f"{name}: indices must be an integer array with a trailing index axis, "
                        f"got {ia.str_short()}")
    if not isinstance(ia.shape[-1], int) or ia.shape[-1] != len(axes):
        raise TypeError(f"{name}: the index rows have {ia.shape[-1]} entries for {len(axes)} axes")
    if len(set(axes)) != len(axes) or not all(0 <= d < a.ndim for d in axes):
        raise TypeError(f"{name}: axes {axes} must be distinct axes of a rank-{a.ndim} operand")
    return tuple(ia.shape[:-1]) + tuple(d for i, d in enumerate(a.shape) if i not in axes)


def _gather_impl(x, idx, *, axes):
    x, idx = _arr(x), _arr(idx)
    k = len(axes)
    batch, rest = idx.shape[:-1], tuple(d for i, d in enumerate(x.shape) if i not in axes)
    xt = np.moveaxis(x, list(axes), list(range(k)))
    if any(d == 0 for d in xt.shape[:k]):
        return np.zeros(batch + rest, x.dtype)
    hi = np.array(xt.shape[:k], dtype=np.int64) - 1
    cl = np.clip(idx.astype(np.int64), 0, hi)
    out = xt[tuple(cl[..., j] for j in range(k))]
    return np.array(np.broadcast_to(out, batch + rest), dtype=x.dtype)


def _gather_abstract(x, idx, *, axes):
    a, ia = aval(x), aval(idx)
    return result_aval(_index_rows("gather", a, ia, axes), a.dtype, a.weak_type)


gather_p = define("gather", _gather_impl, _gather_abstract)

_SCATTER_UFUNCS = {"add": (np.logical_or, np.add), "mul": (np.logical_and, np.multiply),
                   "min": (np.logical_and, np.minimum), "max": (np.logical_or, np.maximum)}


def _scatter_impl(x, idx, updates, *, axes, kind):
    out = np.array(_arr(x))
    idx, u = _arr(idx).astype(np.int64), _arr(updates, out.dtype)
    k = len(axes)
    ot = np.moveaxis(out, list(axes), list(range(k)))          # a view: writes land in ``out``
    sizes = np.array(ot.shape[:k], dtype=np.int64)
    ok = np.all((idx >= 0) & (idx < sizes), axis=-1)            # rows out of range are dropped
    rows, u = idx[ok], u[ok]
    where = tuple(rows[:, j] for j in range(k))
    if kind == "set":
        ot[where] = u                                           # the last of duplicates wins
        return out
    bool_op, op = _SCATTER_UFUNCS[kind]
    (bool_op if out.dtype == np.bool_ else op).at(ot, where, u)
    if kind in ("min", "max") and is_float_dtype(out.dtype):
        # -0.0 < +0.0, as XLA orders them (numpy keeps whichever zero it met first)
        src_neg = np.zeros(ot.shape, bool)
        src_pos = np.zeros(ot.shape, bool)
        x0 = np.moveaxis(_arr(x), list(axes), list(range(k)))
        src_neg |= (x0 == 0) & np.signbit(x0)
        src_pos |= (x0 == 0) & ~np.signbit(x0)
        np.logical_or.at(src_neg, where, (u == 0) & np.signbit(u))
        np.logical_or.at(src_pos, where, (u == 0) & ~np.signbit(u))
        zero = ot == 0
        neg = src_neg if kind == "min" else ~src_pos
        ot[zero] = np.where(neg[zero], -0.0, 0.0).astype(out.dtype)
    return out


def _scatter_abstract(x, idx, updates, *, axes, kind):
    a, ia, ua = aval(x), aval(idx), aval(updates)
    if kind not in ("set", "add", "mul", "min", "max"):
        raise TypeError(f"scatter: unknown kind {kind!r}")
    if kind in ("min", "max"):
        check_kinds(f"scatter_{kind}", "ordered", a)
    check_dtypes_equal("scatter", a, ua)
    want = _index_rows("scatter", a, ia, axes)
    if len(want) != ua.ndim or not all(same_dim(d1, d2) for d1, d2 in zip(want, ua.shape)):
        raise TypeError(f"scatter: updates of shape {fmt_shape(ua)} do not match the indexed "
                        f"shape ({', '.join(dim_str(d) for d in want)})")
    return result_aval(a.shape, a.dtype, a.weak_type)


scatter_p = define("scatter", _scatter_impl, _scatter_abstract)
