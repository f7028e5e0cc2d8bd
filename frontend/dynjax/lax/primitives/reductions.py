"""Reductions and scans: reduce_sum / prod / max / min, argmax / argmin, cumsum / cumprod, sort
(part of the primitive catalogue, ``lax/primitives/``)."""
from __future__ import annotations

import numpy as np

from ...core.avals import canonical_dtype, is_float_dtype
from ..base import aval, check_same_shapes, define, describe_shapes, result_aval
from .elementwise import _arr, check_kinds


# ----------------------------------------------------------------------------------------------
# Reductions and scans
# ----------------------------------------------------------------------------------------------


def _reduce_abstract(name, kinds="any"):
    def rule(x, *, axes, keep_nan=True):
        a = aval(x)
        check_kinds(name, kinds, a)
        for ax in axes:
            if not 0 <= ax < a.ndim:
                raise TypeError(f"{name}: axis {ax} out of range for {describe_shapes(a)}")
        return result_aval(tuple(d for i, d in enumerate(a.shape) if i not in axes), a.dtype, a.weak_type)
    return rule


def _reduce(name, fn, identity_ok=True, kinds="any"):
    # ``keep_nan`` (reduce_max / reduce_min only, bound only when False): see ``lax.api``
    def impl(x, *, axes, keep_nan=True):
        x = _arr(x)
        check_kinds(name, kinds, aval(x))
        if not identity_ok and any(x.shape[ax] == 0 for ax in axes):
            # max/min of an empty axis: the identity of the monoid (XLA semantics).
            if is_float_dtype(x.dtype):
                ident = -np.inf if name == "reduce_max" else np.inf
            elif x.dtype == np.bool_:
                ident = name == "reduce_min"
            else:
                info = np.iinfo(x.dtype)
                ident = info.min if name == "reduce_max" else info.max
            shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
            return np.full(shape, ident, dtype=x.dtype)
        return _arr(fn(x, axis=tuple(axes)), x.dtype)
    return define(name, impl, _reduce_abstract(name, kinds))


reduce_sum_p = _reduce("reduce_sum", lambda x, axis: np.sum(x, axis=axis) if x.dtype != np.bool_ else np.any(x, axis=axis))
reduce_prod_p = _reduce("reduce_prod", lambda x, axis: np.prod(x, axis=axis) if x.dtype != np.bool_ else np.all(x, axis=axis))
def _signed_zero_extremum(fn, winner_is_negative):
    """``fn`` (np.max / np.min) where a zero result is the zero that max_p / min_p would pick
    (-0.0 < +0.0) whatever the order of the elements, not whichever zero numpy's kernel keeps."""
    def reduce(x, axis):
        out = fn(x, axis=axis)
        if is_float_dtype(x.dtype):
            with np.errstate(invalid="ignore"):
                if not np.any(out == 0):   # no zero result (the usual case): nothing to pick
                    return out
            pos = np.zeros((), x.dtype)
            neg = -pos
            with np.errstate(invalid="ignore"):
                has = np.any((x == 0) & (np.signbit(x) == winner_is_negative), axis=axis)
            win, lose = (neg, pos) if winner_is_negative else (pos, neg)
            out = np.where(out == 0, np.where(has, win, lose), out)
        return out
    return reduce


reduce_max_p = _reduce("reduce_max", _signed_zero_extremum(np.max, False), identity_ok=False, kinds="ordered")
reduce_min_p = _reduce("reduce_min", _signed_zero_extremum(np.min, True), identity_ok=False, kinds="ordered")


def _argminmax(name, fn):
    def impl(x, *, axes, index_dtype):
        x = _arr(x)
        check_kinds(name, "ordered", aval(x))
        (ax,) = axes
        if x.shape[ax] == 0:
            raise ValueError(f"{name} of an empty axis")
        return _arr(fn(x, axis=ax), index_dtype)

    def abstract(x, *, axes, index_dtype):
        a = aval(x)
        check_kinds(name, "ordered", a)
        if len(axes) != 1 or not 0 <= axes[0] < a.ndim:
            raise TypeError(f"{name}: needs exactly one axis in range, got {axes} for {describe_shapes(a)}")
        return result_aval(tuple(d for i, d in enumerate(a.shape) if i != axes[0]), canonical_dtype(index_dtype))
    return define(name, impl, abstract)


argmax_p = _argminmax("argmax", np.argmax)
argmin_p = _argminmax("argmin", np.argmin)


def _cumulative(name, np_scan):
    """An inclusive scan along one axis (``reverse``: from the end), accumulated in the
    operand's dtype (for bools a running "or" / "and", as numpy computes them)."""
    def impl(x, *, axis, reverse=False):
        x = _arr(x)
        with np.errstate(all="ignore"):
            if reverse:
                return np.flip(np_scan(np.flip(x, axis), axis=axis, dtype=x.dtype), axis)
            return np_scan(x, axis=axis, dtype=x.dtype)

    def abstract(x, *, axis, reverse=False):
        a = aval(x)
        if not 0 <= axis < a.ndim:
            raise TypeError(f"{name}: axis {axis} out of range for {describe_shapes(a)}")
        return result_aval(a.shape, a.dtype, a.weak_type)
    return define(name, impl, abstract)


cumsum_p = _cumulative("cumsum", np.cumsum)
cumprod_p = _cumulative("cumprod", np.cumprod)


def _sort_impl(*operands, dimension, num_keys):
    ops = [_arr(o) for o in operands]
    check_kinds("sort", "ordered", *[aval(o) for o in ops[:num_keys]])
    if ops[0].size == 0:
        return [o.copy() for o in ops]
    # numpy's float order (-0.0 == +0.0, NaNs last); bfloat16 (ml_dtypes) does not sort NaNs
    # last, so narrow floats are ordered through float32, which holds them exactly
    keys = [k.astype(np.float32) if is_float_dtype(k.dtype) and k.dtype.itemsize < 4 else k
            for k in ops[:num_keys]]
    if num_keys == 1:
        k = keys[0]
        order = np.argsort(k, axis=dimension, kind="stable")
    else:
        moved = [np.moveaxis(k, dimension, -1) for k in keys]
        flat = [m.reshape(-1, m.shape[-1]) for m in moved]
        rows = [np.lexsort(tuple(f[r] for f in reversed(flat))) for r in range(flat[0].shape[0])]
        order = np.moveaxis(np.array(rows).reshape(moved[0].shape), -1, dimension)
    return [np.take_along_axis(o, order, axis=dimension) for o in ops]


def _sort_abstract(*operands, dimension, num_keys):
    avs = [aval(o) for o in operands]
    check_kinds("sort", "ordered", *avs[:num_keys])
    check_same_shapes("sort", *avs)
    if not 0 <= dimension < avs[0].ndim:
        raise TypeError(f"sort: dimension {dimension} out of range")
    return [result_aval(a.shape, a.dtype, a.weak_type) for a in avs]


sort_p = define("sort", _sort_impl, _sort_abstract, multiple_results=True)
