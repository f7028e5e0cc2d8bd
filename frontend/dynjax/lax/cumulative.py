"""Cumulative operations: the ``cummax`` / ``cummin`` primitives, ``lax.cummax``,
``lax.cummin``, ``lax.cumlogsumexp`` and ``lax.associative_scan``.

``cummax[axis, reverse] x`` / ``cummin[axis, reverse] x`` are inclusive running extrema along
one axis (``reverse``: from the end), in the operand's dtype, as ``cumsum`` / ``cumprod`` (in
``lax/primitives/reductions.py``) are running sums and products. Floats order ``-0.0`` before ``+0.0`` and
a NaN propagates, as XLA's ``max`` / ``min``. They lower to the scans of ``lowering/rules.py``
with ``max`` / ``min`` combines (``lowering/cumulative.py``).

``associative_scan(fn, elems, reverse=False, axis=0)`` is JAX's: the inclusive scan of an
associative ``fn`` over a pytree of arrays sharing the scanned axis, ``fn`` applied to the
earlier element first (``fn`` need not commute). It evaluates the same combining tree as JAX
(a Brent-Kung scan: an up-sweep that combines pairs at strides 1, 2, 4, ... and a down-sweep
that completes the prefixes), so results agree with JAX's to rounding and the derivatives of
``max`` / ``min`` split ties exactly as JAX's do. The levels run as one ``fori_loop`` over
whole arrays, each step combining every element with the one ``s`` positions before it and
keeping the combined values where a mask selects them, so the scanned axis may be dynamic and
the loop is differentiable (its trip count is ``2 floor(log2 n)``).

``cumlogsumexp`` is the associative scan of a stable ``logaddexp``.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..core.avals import bool_, dtype_category, float64, int64, is_float_dtype
from ..core.pytree import tree_flatten, tree_unflatten
from ..core.trace import Tracer, typeof
from . import api as lax
from .base import aval, define, describe_shapes, result_aval, same_dim

__all__ = ["cummax_p", "cummin_p", "cummax", "cummin", "cumlogsumexp", "associative_scan"]


# ----------------------------------------------------------------------------------------------
# the cummax / cummin primitives
# ----------------------------------------------------------------------------------------------
def _check_real_number(name, a):
    if dtype_category(a.dtype) not in ("signed", "unsigned", "float"):
        raise TypeError(f"{name} needs a real numeric (integer or floating-point) operand, got "
                        f"{a.str_short()}")


def _extremum(name, accumulate, negative_zero_wins):
    """A running extremum; ``negative_zero_wins``: -0.0 is the result when a -0.0 and a +0.0
    tie (cummin), else +0.0 (cummax), whatever their order (numpy keeps the later one)."""
    def scan(x, axis):
        out = accumulate(x, axis=axis)
        if is_float_dtype(x.dtype) and x.size:
            zero = x == 0
            sign = np.signbit(x) if negative_zero_wins else ~np.signbit(x)
            seen = np.logical_or.accumulate(zero & sign, axis=axis)
            out = np.where(out == 0, np.where(seen == negative_zero_wins, -0.0, 0.0).astype(x.dtype), out)
        return out

    def impl(x, *, axis, reverse=False):
        x = np.asarray(x)
        _check_real_number(name, aval(x))
        if not 0 <= axis < x.ndim:
            raise TypeError(f"{name}: axis {axis} out of range for {describe_shapes(aval(x))}")
        with np.errstate(all="ignore"):
            if reverse:
                return np.flip(scan(np.flip(x, axis), axis), axis).astype(x.dtype, copy=True)
            return scan(x, axis).astype(x.dtype, copy=False)

    def abstract(x, *, axis, reverse=False):
        a = aval(x)
        _check_real_number(name, a)
        if not 0 <= axis < a.ndim:
            raise TypeError(f"{name}: axis {axis} out of range for {describe_shapes(a)}")
        return result_aval(a.shape, a.dtype, a.weak_type)
    return define(name, impl, abstract)


cummax_p = _extremum("cummax", np.maximum.accumulate, False)
cummin_p = _extremum("cummin", np.minimum.accumulate, True)


def _axis(name, x, axis):
    nd = typeof(x).ndim
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{name}: axis must be an int, got {axis!r}")
    if not -nd <= axis < nd:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an array of rank {nd}")
    return int(axis) % nd


def _operand(x):
    return x if isinstance(x, Tracer) else np.asarray(x)


def cummax(operand, axis: int = 0, reverse: bool = False):
    """The running maximum along ``axis`` (from the end when ``reverse``)."""
    operand = _operand(operand)
    return cummax_p.bind(operand, axis=_axis("cummax", operand, axis), reverse=bool(reverse))


def cummin(operand, axis: int = 0, reverse: bool = False):
    """The running minimum along ``axis`` (from the end when ``reverse``)."""
    operand = _operand(operand)
    return cummin_p.bind(operand, axis=_axis("cummin", operand, axis), reverse=bool(reverse))


# ----------------------------------------------------------------------------------------------
# associative_scan
# ----------------------------------------------------------------------------------------------
def _levels(n):
    """floor(log2(n)) for n >= 2, else 0: the number of up-sweep levels (traced when ``n`` is)."""
    if not isinstance(n, Tracer):
        return max(int(n).bit_length() - 1, 0)
    m = lax.max(n, np.int64(1))
    f = lax.div(lax.log(lax.convert_element_type(m, float64)), np.float64(np.log(2.0)))
    lvl = lax.convert_element_type(lax.floor(f), int64)
    lvl = lax.max(lvl, np.int64(0))
    # correct a rounding of the logarithm either way: 2**lvl <= m < 2**(lvl + 1)
    one = np.int64(1)
    too_small = lax.ge(m, lax.shift_left(one, lax.add(lvl, one)))
    lvl = lax.add(lvl, lax.convert_element_type(too_small, int64))
    too_big = lax.gt(lax.shift_left(one, lvl), m)
    return lax.sub(lvl, lax.convert_element_type(too_big, int64))


def _shifted(x, axis, n, s):
    """``x`` moved ``s`` places up along ``axis`` (element i holds x[i - s]; the first ``s``
    hold other elements of x, which the masks never keep)."""
    both = lax.concatenate([x, x], axis)
    a = typeof(x)
    starts = [np.int64(0)] * a.ndim
    starts[axis] = lax.sub(n, s) if isinstance(n, Tracer) or isinstance(s, Tracer) else np.int64(n - s)
    return lax.dynamic_slice(both, starts, a.shape)


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
    """The inclusive scan of the associative ``fn`` over ``elems`` (a pytree of arrays with
    the same length along ``axis``): ``out[i] = fn(...fn(fn(x[0], x[1]), x[2])..., x[i])`` up to
    associativity; with ``reverse`` the scan runs from the end (``fn`` takes the later element
    first). ``fn`` takes and returns pytrees of ``elems``' structure and must work elementwise
    on whole arrays (it is called on arrays of the full shape)."""
    leaves, tree = tree_flatten(elems)
    if not leaves:
        raise ValueError("associative_scan: elems holds no arrays")
    leaves = [_operand(x) for x in leaves]
    axes = []
    for x in leaves:
        nd = typeof(x).ndim
        if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
            raise TypeError(f"associative_scan: axis must be an int, got {axis!r}")
        if not -nd <= axis < nd:
            raise ValueError(f"associative_scan: axis {axis} is out of bounds for an array of rank {nd}")
        axes.append(int(axis) % nd)
    n = typeof(leaves[0]).shape[axes[0]]
    for x, ax in zip(leaves, axes):
        if not same_dim(typeof(x).shape[ax], n):
            raise ValueError("associative_scan: the arrays of elems must have the same length along "
                             f"axis {axis}, got {[typeof(v).shape[a] for v, a in zip(leaves, axes)]}")
    if reverse:
        leaves = [lax.rev(x, (ax,)) for x, ax in zip(leaves, axes)]
    if isinstance(n, int) and n < 2:
        out = leaves
    else:
        out = _brent_kung(fn, tree, leaves, axes, n)
    if reverse:
        out = [lax.rev(x, (ax,)) for x, ax in zip(out, axes)]
    return tree_unflatten(tree, out)


def _brent_kung(fn, tree, leaves, axes, n):
    from ..control_flow.lax_api import fori_loop
    levels = _levels(n)
    steps = lax.mul(levels, np.int64(2)) if isinstance(levels, Tracer) else 2 * levels
    one = np.int64(1)

    def body(i, xs):
        up = lax.lt(i, levels)
        down_level = lax.sub(lax.sub(lax.mul(levels, np.int64(2)), one), i)
        level = lax.select(up, i, down_level)
        s = lax.shift_left(one, level)
        shifted = [_shifted(x, ax, n, s) for x, ax in zip(xs, axes)]
        combined, _ = tree_flatten(fn(tree_unflatten(tree, shifted), tree_unflatten(tree, list(xs))))
        if len(combined) != len(xs):
            raise TypeError("associative_scan: fn must return a pytree with the structure of elems")
        two_s = lax.add(s, s)
        p1 = lax.add(lax.iota(int64, n), one)                       # position + 1 along the axis
        r = lax.rem(p1, two_s)
        up_mask = lax.eq(r, np.int64(0))
        down_mask = lax.bitwise_and(lax.eq(r, s), lax.ge(p1, lax.mul(s, np.int64(3))))
        mask1 = lax.select(lax.broadcast_in_dim(up, (n,), ()), up_mask, down_mask)
        out = []
        for x, c, ax in zip(xs, combined, axes):
            ca, xa = typeof(c), typeof(x)
            if ca.dtype != xa.dtype or ca.ndim != xa.ndim:
                raise TypeError(f"associative_scan: fn returned {ca.str_short()} for an element "
                                f"{xa.str_short()}")
            mask = lax.broadcast_in_dim(mask1, xa.shape, (ax,))
            out.append(lax.select(mask, c, x))
        return out
    return list(fori_loop(np.int64(0), steps, body, list(leaves)))


# ----------------------------------------------------------------------------------------------
# cumlogsumexp
# ----------------------------------------------------------------------------------------------
def _logaddexp(a, b):
    """log(exp(a) + exp(b)) = max + log1p(exp(min - max)), stable. ``min - max`` is written with
    ``min`` / ``max`` (whose derivatives split ties evenly) rather than ``-|a - b|``, so that the
    derivative at a tie is 1/2 for each operand; equal infinities (a NaN difference) give
    ``a + b``, the NaN replaced before it reaches a derivative."""
    top = lax.max(a, b)
    diff = lax.sub(lax.min(a, b), top)
    bad = lax.ne(diff, diff)
    zero = lax.broadcast_in_dim(np.zeros((), typeof(a).dtype), typeof(a).shape, ())
    smooth = lax.add(top, lax.log1p(lax.exp(lax.select(bad, zero, diff))))
    return lax.select(bad, lax.add(a, b), smooth)


def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
    """``log(cumsum(exp(operand)))`` along ``axis``, computed stably (an associative scan of
    ``logaddexp``); floating-point operands only."""
    operand = _operand(operand)
    a = typeof(operand)
    if not is_float_dtype(a.dtype) or a.dtype == bool_:
        raise TypeError(f"cumlogsumexp needs a floating-point operand, got {a.str_short()}")
    ax = _axis("cumlogsumexp", operand, axis)
    return associative_scan(_logaddexp, operand, reverse=bool(reverse), axis=ax)
