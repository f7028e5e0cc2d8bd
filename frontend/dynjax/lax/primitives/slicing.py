"""Slicing, concatenation and padding: slice, dynamic_slice, dynamic_update_slice, concatenate, pad
(part of the primitive catalogue, ``lax/primitives/``)."""
from __future__ import annotations

import numpy as np

from ...core.avals import is_integer_dtype
from ...core.primitive import as_dim
from ..base import (aval, check_dim_operands, check_dtypes_equal, concrete_shape, define,
                    describe_shapes, dims_from_operands, result_aval, same_dim)
from .elementwise import _arr


# ----------------------------------------------------------------------------------------------
# Slicing, concatenation, padding
# ----------------------------------------------------------------------------------------------


def _slice_impl(x, *, start_indices, limit_indices, strides=None):
    x = _arr(x)
    strides = strides or (1,) * x.ndim
    return np.array(x[tuple(slice(s, l, st) for s, l, st in zip(start_indices, limit_indices, strides))])


def _slice_abstract(x, *, start_indices, limit_indices, strides=None):
    a = aval(x)
    strides = strides or (1,) * a.ndim
    if not (len(start_indices) == len(limit_indices) == len(strides) == a.ndim):
        raise TypeError("slice: index lists must have one entry per axis")
    shape = []
    for d, s, l, st in zip(a.shape, start_indices, limit_indices, strides):
        if isinstance(d, int):
            l = d if l is None else l
            if not 0 <= s <= l <= d:
                raise TypeError(f"slice: indices {s}:{l} out of range for axis of size {d}")
            shape.append(max(0, -(-(l - s) // st)))
        else:
            if not (s == 0 and l is None and st == 1):
                raise TypeError("slice: a dynamic axis can only be kept whole by a static slice")
            shape.append(d)
    return result_aval(tuple(shape), a.dtype, a.weak_type)


slice_p = define("slice", _slice_impl, _slice_abstract)


def _dynamic_slice_impl(x, *operands, slice_sizes):
    x = _arr(x)
    n = x.ndim
    starts = [int(s) for s in operands[:n]]
    sizes = concrete_shape(slice_sizes, operands[n:])
    idx = []
    for s, size, dim in zip(starts, sizes, x.shape):
        if size > dim:
            raise ValueError(f"dynamic_slice: slice size {size} exceeds the axis size {dim}")
        s = min(max(s, 0), dim - size)  # clamp so the slice fits, as XLA does
        idx.append(slice(s, s + size))
    return np.array(x[tuple(idx)])


def _dynamic_slice_abstract(x, *operands, slice_sizes):
    a = aval(x)
    n = a.ndim
    if len(operands) < n or len(slice_sizes) != n:
        raise TypeError("dynamic_slice: needs one start index and one size per axis")
    for s in operands[:n]:
        sa = aval(s)
        if sa.shape != () or not is_integer_dtype(sa.dtype):
            raise TypeError(f"dynamic_slice: start indices must be integer scalars, got {sa.str_short()}")
    check_dim_operands("dynamic_slice", operands[n:])
    sizes = dims_from_operands(slice_sizes, operands[n:])
    for size, d in zip(sizes, a.shape):
        if isinstance(size, int) and isinstance(d, int) and size > d:
            raise TypeError(f"dynamic_slice: slice size {size} exceeds the axis size {d}")
    return result_aval(sizes, a.dtype, a.weak_type)


dynamic_slice_p = define("dynamic_slice", _dynamic_slice_impl, _dynamic_slice_abstract)


def _dynamic_update_slice_impl(x, update, *starts):
    x = np.array(_arr(x))
    u = _arr(update, x.dtype)
    idx = []
    for s, size, dim in zip(starts, u.shape, x.shape):
        s = min(max(int(s), 0), dim - size)
        idx.append(slice(s, s + size))
    x[tuple(idx)] = u
    return x


def _dynamic_update_slice_abstract(x, update, *starts):
    a, u = aval(x), aval(update)
    check_dtypes_equal("dynamic_update_slice", a, u)
    if a.ndim != u.ndim or len(starts) != a.ndim:
        raise TypeError("dynamic_update_slice: the update and start indices must match the operand rank")
    return result_aval(a.shape, a.dtype, a.weak_type)


dynamic_update_slice_p = define("dynamic_update_slice", _dynamic_update_slice_impl, _dynamic_update_slice_abstract)


def _concatenate_abstract(*xs, dimension):
    avs = [aval(x) for x in xs]
    if not avs:
        raise TypeError("concatenate needs at least one operand")
    check_dtypes_equal("concatenate", *avs)
    first = avs[0]
    for a in avs[1:]:
        if a.ndim != first.ndim or not all(same_dim(p, q) for i, (p, q) in enumerate(zip(a.shape, first.shape))
                                           if i != dimension):
            raise TypeError(f"concatenate: shapes {describe_shapes(*avs)} differ outside axis {dimension}")
    sizes = [a.shape[dimension] for a in avs]
    if all(isinstance(s, int) for s in sizes):
        size = sum(sizes)
    else:
        raise TypeError("concatenate of dynamic sizes takes the result size as an extra operand")
    shape = list(first.shape)
    shape[dimension] = size
    return result_aval(tuple(shape), first.dtype, all(a.weak_type for a in avs))


class _AvalOnly:
    """Lets an abstract rule be re-used on modified avals."""
    def __init__(self, a):
        self.aval = a


def _concat_abstract_entry(*operands, dimension, num_operands):
    xs = operands[:num_operands]
    avs = [aval(x) for x in xs]
    if all(isinstance(a.shape[dimension], int) for a in avs if 0 <= dimension < a.ndim):
        out = _concatenate_abstract(*xs, dimension=dimension)
        # a size operand is allowed when the sizes became static (a program traced with
        # dynamic sizes, re-evaluated at static ones); it must then agree
        for s in operands[num_operands:]:
            d = as_dim(s)
            if isinstance(d, int) and d != out.shape[dimension]:
                raise TypeError(f"concatenate: the size operand {d} differs from the operands' "
                                f"total size {out.shape[dimension]}")
        return out
    size_ops = operands[num_operands:]
    check_dim_operands("concatenate", size_ops)
    if len(size_ops) != 1:
        raise TypeError("concatenate with dynamic sizes takes the result size as one extra operand")
    zeroed = [_AvalOnly(a.update(shape=tuple(0 if i == dimension else d for i, d in enumerate(a.shape))))
              for a in avs]
    out = _concatenate_abstract(*zeroed, dimension=dimension)
    shape = list(out.shape)
    shape[dimension] = as_dim(size_ops[0])
    return result_aval(tuple(shape), out.dtype, out.weak_type)


def _concat_impl_entry(*operands, dimension, num_operands):
    return np.concatenate([_arr(x) for x in operands[:num_operands]], axis=dimension)


concatenate_p = define("concatenate", _concat_impl_entry, _concat_abstract_entry)


def _pad_impl(x, padding_value, *, padding_config):
    """XLA's pad, axis by axis: ``interior`` values between neighbouring elements, then ``lo`` /
    ``hi`` values at the ends, where a negative amount removes that many elements from that
    end of the interior-padded (and other-end padded) axis."""
    x = _arr(x)
    pv = _arr(padding_value, x.dtype)
    out = x
    for axis, (lo, hi, interior) in enumerate(padding_config):
        n = out.shape[axis]
        core = n + max(n - 1, 0) * interior
        start = max(lo, 0)
        total = start + core + max(hi, 0)
        shape = list(out.shape)
        shape[axis] = total
        buf = np.full(shape, pv, dtype=x.dtype)
        idx = [slice(None)] * out.ndim
        idx[axis] = slice(start, start + core, interior + 1)
        buf[tuple(idx)] = out
        keep = [slice(None)] * out.ndim
        keep[axis] = slice(max(-lo, 0), max(total - max(-hi, 0), max(-lo, 0)))
        out = buf[tuple(keep)]
    return np.array(out)


def _pad_abstract(x, padding_value, *, padding_config):
    a, p = aval(x), aval(padding_value)
    if p.shape != ():
        raise TypeError("pad: the padding value must be a scalar")
    check_dtypes_equal("pad", a, p)
    if len(padding_config) != a.ndim:
        raise TypeError("pad: padding_config needs one (lo, hi, interior) per axis")
    shape = []
    for d, (lo, hi, interior) in zip(a.shape, padding_config):
        if isinstance(d, int):
            shape.append(lo + hi + d + max(d - 1, 0) * interior)
        elif lo == 0 and hi == 0 and interior == 0:
            shape.append(d)
        else:
            raise TypeError("pad: padding a dynamic axis needs dynjax.numpy.pad (which computes the new size)")
    return result_aval(tuple(shape), a.dtype, a.weak_type)


pad_p = define("pad", _pad_impl, _pad_abstract)
