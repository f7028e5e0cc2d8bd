"""``jax.lax`` functions that need no primitive of their own: written on dynjax's primitives
with JAX's names, signatures, defaults and errors (``clamp``, ``round(rounding_method=)``,
``square``, ``exp2``, ``asinh`` ..., the ``*_in_dim`` slicing helpers, ``expand_dims``,
``full``, ``collapse``, ``dot`` / ``batch_matmul``, ``sort`` / ``sort_key_val`` / ``top_k``,
``reduce_and`` / ``reduce_or`` / ``reduce_xor``, ``stop_gradient``, ``map``).

``dynjax.lax`` exports these in place of the thin primitive wrappers of ``lax/api.py`` where
the names coincide (``round``, ``sort``, ``dynamic_slice`` ...); dynjax's own modules keep
using ``lax/api.py`` (or pass the non-JAX option explicitly).
"""
from __future__ import annotations

import builtins
import enum
from typing import Callable, Optional, Sequence

import numpy as np

from ..core.avals import (bool_, canonical_dtype, int32, int64, is_complex_dtype,
                          is_float_dtype, is_inexact_dtype, is_integer_dtype)
from ..core.trace import Tracer, typeof
from . import api
from . import primitives as P
from .base import shapes_equal
from .bits import bitcast_convert_type, shift_right_logical


class Precision(enum.Enum):
    """The precision of a product (``dot``, ``dot_general``); on the CPU every value computes
    in the operands' precision, so dynjax accepts and ignores it."""
    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        names = {"default": cls.DEFAULT, "bfloat16": cls.DEFAULT, "fastest": cls.DEFAULT,
                 "high": cls.HIGH, "tensorfloat32": cls.HIGH,
                 "highest": cls.HIGHEST, "float32": cls.HIGHEST}
        return names.get(str(value).lower())


class RoundingMethod(enum.IntEnum):
    """How ``round`` breaks ties: away from zero (JAX's default), or to the even neighbour."""
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def _check_precision(precision):
    items = precision if isinstance(precision, (tuple, list)) else (precision,)
    for p in items:
        if p is not None and not isinstance(p, Precision) and Precision(p) is None:
            raise ValueError(f"precision must be None, a Precision or one of 'default', 'high', "
                             f"'highest', got {p!r}")


def _dtype_of(x):
    return typeof(x).dtype


def _like(value, x):
    """A Python scalar as an array of ``x``'s dtype (a JAX weakly typed scalar); anything
    else unchanged."""
    if isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
        return np.asarray(value).astype(_dtype_of(x))
    return value


# --- elementwise -----------------------------------------------------------------------------
def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):
    """Round to the nearest integer; ties away from zero (default) or to even
    (``RoundingMethod.TO_NEAREST_EVEN``)."""
    rounding_method = RoundingMethod(int(rounding_method))
    if rounding_method == RoundingMethod.TO_NEAREST_EVEN:
        return P.round_p.bind(x)
    a = typeof(x)
    P.check_kinds("round", "float", a)
    # |x| = f + d with f = floor(|x|) and 0 <= d < 1 computed exactly; a tie (d = 0.5) rounds up
    ax = P.abs_p.bind(x)
    f = P.floor_p.bind(ax)
    d = P.sub_p.bind(ax, f)
    half, one = np.asarray(0.5, a.dtype), np.asarray(1, a.dtype)
    up = P.add_p.bind(f, one)
    r = P.select_n_p.bind(P.ge_p.bind(d, half), f, up)
    r = P.select_n_p.bind(P.is_finite_p.bind(ax), ax, r)     # inf stays inf (d is nan there)
    return P.select_n_p.bind(P.lt_p.bind(x, np.zeros((), a.dtype)), r, P.neg_p.bind(r))


def _signed(r, x):
    """``r`` (computed on ``|x|``) with the sign of ``x``; a zero ``x`` (-0.0 too) is kept."""
    a = typeof(x)
    zero = np.zeros((), a.dtype)
    out = P.select_n_p.bind(P.lt_p.bind(x, zero), r, P.neg_p.bind(r))
    return P.select_n_p.bind(P.eq_p.bind(x, zero), out, x)


def clamp(min, x, max):
    """``x`` clamped into ``[min, max]`` elementwise; ``min`` and ``max`` are scalars or have
    ``x``'s shape, and all three have one dtype (Python scalars take ``x``'s)."""
    lo, hi = _like(min, x), _like(max, x)
    dts = [_dtype_of(v) for v in (lo, x, hi)]
    if len(set(dts)) != 1:
        raise TypeError("lax.clamp requires arguments to have the same dtypes, got "
                        + ", ".join(np.dtype(d).name for d in dts))
    xa = typeof(x)
    for name, v in (("min", lo), ("max", hi)):
        va = typeof(v)
        if va.ndim and not shapes_equal(va.shape, xa.shape):
            raise TypeError(f"lax.clamp requires {name} to be a scalar or have the shape of x, "
                            f"got {va.str_short()} and {xa.str_short()}")
    return P.min_p.bind(P.max_p.bind(x, lo), hi)


def square(x):
    """``x * x``."""
    return P.integer_pow_p.bind(x, y=2)


def reciprocal(x):
    """``1 / x`` (inexact types)."""
    return P.integer_pow_p.bind(x, y=-1)


def exp2(x):
    """``2 ** x`` (inexact types)."""
    a = typeof(x)
    P.check_kinds("exp2", "inexact", a)
    return P.pow_p.bind(np.asarray(2, a.dtype), x)


def _real_inverse_hyperbolic(name, value, slope):
    """A custom_jvp function of real floats: ``value(x)`` with derivative ``slope(x)``."""
    from ..transforms.custom import custom_jvp

    def check(x):
        a = typeof(x)
        if is_complex_dtype(a.dtype):
            raise TypeError(f"lax.{name} of complex numbers is not supported, got {a.str_short()}")
        P.check_kinds(name, "float", a)

    fn = custom_jvp(value)

    @fn.defjvp
    def _jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return fn(x), P.mul_p.bind(t, slope(x))

    def public(x):
        check(x)
        return fn(x)
    public.__name__ = name
    public.__doc__ = f"The inverse hyperbolic function ``{name}`` of real floats."
    return public


def _big(dt):
    """Beyond this magnitude x * x overflows: the asymptotic forms are used."""
    return np.asarray(np.sqrt(np.finfo(dt).max) / 4, dt)


def _asinh_value(x):
    dt = _dtype_of(x)
    ax = P.abs_p.bind(x)
    big = _big(dt)
    s = P.min_p.bind(ax, big)   # log1p(a + a^2 / (1 + sqrt(1 + a^2)))
    sq = P.mul_p.bind(s, s)
    one = np.ones((), dt)
    small = P.log1p_p.bind(P.add_p.bind(s, P.div_p.bind(sq, P.add_p.bind(one, P.sqrt_p.bind(P.add_p.bind(one, sq))))))
    large = P.add_p.bind(P.log_p.bind(P.max_p.bind(ax, one)), np.asarray(np.log(2.0), dt))
    return _signed(P.select_n_p.bind(P.gt_p.bind(ax, big), small, large), x)


def _acosh_value(x):
    dt = _dtype_of(x)
    big, one = _big(dt), np.ones((), dt)
    s = P.min_p.bind(x, big)
    t = P.sub_p.bind(s, one)    # exact for x in [1, 2]: log1p(t + sqrt(t (t + 2)))
    small = P.log1p_p.bind(P.add_p.bind(t, P.sqrt_p.bind(P.mul_p.bind(t, P.add_p.bind(t, np.asarray(2, dt))))))
    large = P.add_p.bind(P.log_p.bind(P.max_p.bind(x, one)), np.asarray(np.log(2.0), dt))
    return P.select_n_p.bind(P.gt_p.bind(x, big), small, large)


def _atanh_value(x):
    dt = _dtype_of(x)
    ax = P.abs_p.bind(x)
    one = np.ones((), dt)
    r = P.mul_p.bind(np.asarray(0.5, dt),
                     P.log1p_p.bind(P.div_p.bind(P.add_p.bind(ax, ax), P.sub_p.bind(one, ax))))
    return _signed(r, x)


def _one(x):
    return np.ones((), _dtype_of(x))


asinh = _real_inverse_hyperbolic(
    "asinh", _asinh_value,
    lambda x: P.rsqrt_p.bind(P.add_p.bind(P.mul_p.bind(x, x), _one(x))))
acosh = _real_inverse_hyperbolic(
    "acosh", _acosh_value,
    lambda x: P.div_p.bind(_one(x), P.mul_p.bind(P.sqrt_p.bind(P.sub_p.bind(x, _one(x))),
                                                 P.sqrt_p.bind(P.add_p.bind(x, _one(x))))))
atanh = _real_inverse_hyperbolic(
    "atanh", _atanh_value,
    lambda x: P.div_p.bind(_one(x), P.sub_p.bind(_one(x), P.mul_p.bind(x, x))))


def stop_gradient(x):
    """``x`` (a pytree) with zero derivatives: its inexact leaves are cut from
    differentiation; other leaves are returned unchanged."""
    from ..core.pytree import tree_map
    return tree_map(_stop_leaf, x)


_STOP = None


def _stop_leaf(v):
    global _STOP
    if not is_inexact_dtype(typeof(v).dtype):
        return v
    if _STOP is None:
        from ..transforms.custom import custom_jvp
        from ..transforms.jvp import _zero_like

        ident = custom_jvp(lambda y: P.convert_element_type_p.bind(
            y, new_dtype=typeof(y).dtype, weak_type=typeof(y).weak_type))

        @ident.defjvp
        def _jvp(primals, tangents):
            (y,), _ = primals, tangents
            out = ident(y)
            return out, _zero_like(out)
        _STOP = ident
    return _STOP(v)


# --- creation and shapes ---------------------------------------------------------------------
def full(shape, fill_value, dtype=None, *, sharding=None):
    """An array of ``shape`` filled with the scalar ``fill_value`` (of ``dtype``, by default
    the fill value's)."""
    fa = typeof(fill_value)
    if fa.ndim:
        raise TypeError(f"full must be called with scalar fill_value, got fill_value.shape {fa.shape}")
    if dtype is not None:
        fill_value = api.convert_element_type(fill_value, canonical_dtype(dtype))
    elif not isinstance(fill_value, Tracer):
        fill_value = np.asarray(fill_value, canonical_dtype(fa.dtype))
    shape = api.shape_entries(shape)
    return api.broadcast_in_dim(fill_value, shape, ())


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
    """``full(shape or x.shape, fill_value, dtype or x.dtype)``."""
    a = typeof(x)
    return full(a.shape if shape is None else shape, fill_value, a.dtype if dtype is None else dtype)


def zeros_like_array(x):
    """Zeros of ``x``'s shape and dtype."""
    return full_like(x, 0)


def empty(shape, dtype, *, out_sharding=None):
    """An array of ``shape`` and ``dtype`` (zeros: its contents are unspecified in JAX)."""
    return full(shape, 0, dtype)


def _axis(axis, ndim, what="axis"):
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{what} {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim


def expand_dims(array, dimensions: Sequence[int]):
    """``array`` with size-1 axes inserted at ``dimensions`` (positions in the result; negative
    ones count from its end)."""
    a = typeof(array)
    rank = a.ndim + len(dimensions)
    dims = sorted(_axis(d, rank, "dimension") for d in dimensions)
    if len(set(dims)) != len(dims):
        raise ValueError(f"repeated axis in lax.expand_dims: {tuple(dimensions)}")
    shape, src, keep = [], iter(a.shape), []
    for i in range(rank):
        if i in dims:
            shape.append(1)
        else:
            shape.append(next(src))
            keep.append(i)
    return api.broadcast_in_dim(array, shape, keep)


def squeeze(array, dimensions: Sequence[int]):
    """``array`` without the size-1 axes ``dimensions`` (negative ones count from the end)."""
    a = typeof(array)
    dims = tuple(sorted(_axis(d, a.ndim, "dimension") for d in dimensions))
    return api.squeeze(array, dims)


def broadcast_to_rank(x, rank: int):
    """``x`` with leading size-1 axes added up to rank ``rank``."""
    a = typeof(x)
    if rank < a.ndim:
        raise ValueError(f"broadcast_to_rank: rank {rank} is smaller than the rank of {a.str_short()}")
    return api.broadcast(x, (1,) * (rank - a.ndim))


def collapse(operand, start_dimension: int, stop_dimension: Optional[int] = None):
    """``operand`` with the axes ``[start_dimension, stop_dimension)`` merged into one."""
    a = typeof(operand)
    lo = _axis(start_dimension, a.ndim, "start_dimension") if a.ndim else 0
    hi = a.ndim if stop_dimension is None else int(stop_dimension)
    hi = hi + a.ndim if hi < 0 else hi
    if not lo <= hi <= a.ndim:
        raise ValueError(f"collapse: bad dimensions {start_dimension}:{stop_dimension} for rank {a.ndim}")
    size = 1
    for d in a.shape[lo:hi]:
        size = size * d
    return api.reshape(operand, tuple(a.shape[:lo]) + (size,) + tuple(a.shape[hi:]))


def reshape(operand, new_sizes, dimensions=None, *, out_sharding=None):
    """``operand`` reshaped to ``new_sizes``, its elements read in the axis order
    ``dimensions`` (default: row-major)."""
    if dimensions is not None:
        dims = tuple(int(d) for d in dimensions)
        if sorted(dims) != list(range(typeof(operand).ndim)):
            raise TypeError(f"reshape dimensions must be a permutation of the operand's axes, got {dims}")
        operand = api.transpose(operand, dims)
    return api.reshape(operand, api.shape_entries(new_sizes))


def broadcast_shapes(*shapes):
    """The shape numpy broadcasting gives ``shapes`` (static sizes)."""
    return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))


# --- slicing ---------------------------------------------------------------------------------
def _start(s, dim, allow_negative):
    """A start index as int64, with ``dim`` added to a negative one when ``allow_negative``."""
    if not isinstance(s, Tracer):
        s = int(s)
        if allow_negative and s < 0:
            if isinstance(dim, int):
                return np.int64(s + dim)
            return P.add_p.bind(api.convert_element_type(dim, int64), np.int64(s))
        return np.int64(s)
    a = typeof(s)
    if a.shape != () or not is_integer_dtype(a.dtype):
        raise TypeError(f"index arguments must be integer scalars, got {a.str_short()}")
    s = api.convert_element_type(s, int64)
    if not allow_negative:
        return s
    d = np.int64(dim) if isinstance(dim, int) else api.convert_element_type(dim, int64)
    return P.select_n_p.bind(P.lt_p.bind(s, np.int64(0)), s, P.add_p.bind(s, d))


def _flags(allow, n):
    return list(allow) if isinstance(allow, (tuple, list)) else [bool(allow)] * n


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    """The slice of ``slice_sizes`` at ``start_indices`` (a negative start counts from the end
    when ``allow_negative_indices``; starts are then clamped so the slice fits)."""
    a = typeof(operand)
    starts = list(start_indices) if not (hasattr(start_indices, "shape") and
                                         not isinstance(start_indices, (tuple, list))) else \
        [start_indices[i] for i in range(typeof(start_indices).shape[0])]
    if len(starts) != a.ndim:
        raise TypeError(f"dynamic_slice: needs {a.ndim} start indices for {a.str_short()}, got {len(starts)}")
    flags = _flags(allow_negative_indices, a.ndim)
    starts = [_start(s, d, f) for s, d, f in zip(starts, a.shape, flags)]
    return api.dynamic_slice(operand, starts, slice_sizes)


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    """``operand`` with ``update`` written at ``start_indices`` (negative starts count from the
    end when ``allow_negative_indices``; starts are clamped so the update fits)."""
    a = typeof(operand)
    starts = list(start_indices)
    if len(starts) != a.ndim:
        raise TypeError(f"dynamic_update_slice: needs {a.ndim} start indices for {a.str_short()}, "
                        f"got {len(starts)}")
    flags = _flags(allow_negative_indices, a.ndim)
    starts = [_start(s, d, f) for s, d, f in zip(starts, a.shape, flags)]
    return api.dynamic_update_slice(operand, update, starts)


def slice_in_dim(operand, start_index, limit_index, stride: int = 1, axis: int = 0):
    """``operand[start_index:limit_index:stride]`` along ``axis`` (static bounds; negative
    ones count from the end)."""
    a = typeof(operand)
    axis = _axis(axis, a.ndim)
    n = a.shape[axis]
    if not isinstance(n, int):
        if start_index in (None, 0) and limit_index is None and stride == 1:
            return operand
        raise TypeError("slice_in_dim of a dynamic axis needs dynamic_slice_in_dim")
    start, limit, _ = builtins.slice(start_index, limit_index).indices(n)
    starts = [0] * a.ndim
    limits = [d if isinstance(d, int) else None for d in a.shape]
    strides = [1] * a.ndim
    starts[axis], limits[axis], strides[axis] = start, builtins.max(limit, start), int(stride)
    return api.slice(operand, starts, limits, strides)


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    """Element ``index`` of ``axis`` (a negative one counts from the end), the axis kept as
    size 1 when ``keepdims``."""
    a = typeof(operand)
    axis = _axis(axis, a.ndim)
    n = a.shape[axis]
    index = int(index)
    if isinstance(n, int):
        if not -n <= index < n:
            raise IndexError(f"index {index} is out of bounds for axis {axis} with size {n}")
        index %= n
        out = slice_in_dim(operand, index, index + 1, 1, axis)
    else:
        out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else api.squeeze(out, (axis,))


def dynamic_slice_in_dim(operand, start_index, slice_size, axis: int = 0, *,
                         allow_negative_indices=True):
    """``dynamic_slice`` along one axis."""
    a = typeof(operand)
    axis = _axis(axis, a.ndim)
    starts = [0] * a.ndim
    starts[axis] = start_index
    sizes = list(a.shape)
    sizes[axis] = slice_size
    flags = [False] * a.ndim
    flags[axis] = bool(allow_negative_indices)
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=flags)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices=True):
    """Element ``index`` (traced or not) of ``axis``, kept as size 1 when ``keepdims``."""
    a = typeof(operand)
    axis = _axis(axis, a.ndim)
    out = dynamic_slice_in_dim(operand, index, 1, axis, allow_negative_indices=allow_negative_indices)
    return out if keepdims else api.squeeze(out, (axis,))


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int, *,
                                allow_negative_indices=True):
    """``dynamic_update_slice`` along one axis."""
    a = typeof(operand)
    axis = _axis(axis, a.ndim)
    starts = [0] * a.ndim
    starts[axis] = start_index
    flags = [False] * a.ndim
    flags[axis] = bool(allow_negative_indices)
    return dynamic_update_slice(operand, update, starts, allow_negative_indices=flags)


def dynamic_update_index_in_dim(operand, update, index, axis: int, *, allow_negative_indices=True):
    """``operand`` with ``update`` (with or without the size-1 ``axis``) written at ``index``."""
    a, u = typeof(operand), typeof(update)
    axis = _axis(axis, a.ndim)
    if u.ndim == a.ndim - 1:
        update = expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis,
                                       allow_negative_indices=allow_negative_indices)


def split(operand, sizes: Sequence, axis: int = 0):
    """``operand`` cut along ``axis`` into pieces of ``sizes`` (which must add up to the axis)."""
    a = typeof(operand)
    axis = _axis(axis, a.ndim)
    sizes = [api.canonicalize_dim(s, "split size") for s in sizes]
    n = a.shape[axis]
    if all(isinstance(s, int) for s in sizes) and isinstance(n, int) and builtins.sum(sizes) != n:
        raise ValueError(f"Sum of sizes {builtins.sum(sizes)} must be equal to dimension {n} of the "
                         f"operand shape {a.str_short()}")
    out, start = [], 0
    for s in sizes:
        if isinstance(s, int) and isinstance(start, int) and isinstance(n, int):
            out.append(slice_in_dim(operand, start, start + s, 1, axis))
        else:
            out.append(dynamic_slice_in_dim(operand, start, s, axis, allow_negative_indices=False))
        start = start + s
    return out


# --- products --------------------------------------------------------------------------------
def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *,
                out_sharding=None):
    """The general tensor contraction (see ``jax.lax.dot_general``); ``precision`` is
    accepted and ignored (the CPU computes in the operands' precision)."""
    _check_precision(precision)
    return api.dot_general(lhs, rhs, dimension_numbers, preferred_element_type=(
        None if preferred_element_type is None else canonical_dtype(preferred_element_type)))


def dot(lhs, rhs, *, dimension_numbers=None, precision=None, preferred_element_type=None,
        out_sharding=None):
    """Vector-vector, matrix-vector or matrix-matrix product (``dimension_numbers``: the
    general form, as ``dot_general``)."""
    if dimension_numbers is not None:
        return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)
    a, b = typeof(lhs), typeof(rhs)
    if a.ndim not in (1, 2) or b.ndim not in (1, 2):
        raise TypeError(f"Incompatible shapes for dot: got {a.str_short()} and {b.str_short()}.")
    dn = (((a.ndim - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dn, precision, preferred_element_type)


def batch_matmul(lhs, rhs, precision=None):
    """Batched matrix product: ``lhs[..., i, k] @ rhs[..., k, j]`` with equal leading axes."""
    a, b = typeof(lhs), typeof(rhs)
    if a.ndim < 2 or a.ndim != b.ndim:
        raise ValueError(f"batch_matmul requires arguments of equal rank >= 2, got {a.str_short()} "
                         f"and {b.str_short()}")
    nb = a.ndim - 2
    batch = tuple(range(nb))
    return dot_general(lhs, rhs, (((a.ndim - 1,), (nb,)), (batch, batch)), precision)


# --- sorting ---------------------------------------------------------------------------------
def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort ``operand`` (an array, or a tuple of arrays of one shape sorted by the first
    ``num_keys``) along ``dimension``; the sort is always stable."""
    ops = operand if isinstance(operand, (tuple, list)) else [operand]
    if not 1 <= int(num_keys) <= len(ops):
        raise ValueError(f"sort: num_keys must be between 1 and the number of operands "
                         f"({len(ops)}), got {num_keys}")
    ndim = typeof(ops[0]).ndim
    dimension = _axis(dimension, ndim, "dimension") if ndim else 0
    return api.sort(tuple(operand) if isinstance(operand, (tuple, list)) else operand,
                    dimension=dimension, num_keys=int(num_keys))


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """``keys`` sorted along ``dimension`` and ``values`` permuted alike."""
    k, v = sort((keys, values), dimension, is_stable, 1)
    return k, v


def _descending_order_keys(x):
    """Sort keys that order ``x`` ascending as XLA's total order does (-0.0 before +0.0, NaNs
    last): the value, and for floats a zero-sign key."""
    a = typeof(x)
    if not is_float_dtype(a.dtype):
        return [x]
    zero = np.zeros((), a.dtype)
    neg_zero = P.and_p.bind(P.eq_p.bind(x, zero),
                            P.lt_p.bind(P.div_p.bind(np.ones((), a.dtype), x), zero))
    return [x, P.not_p.bind(neg_zero)]


def top_k(operand, k: int, *, axis: int = -1):
    """The ``k`` largest elements along ``axis`` (descending; NaNs first, +0.0 before -0.0,
    ties in index order) and their int32 indices."""
    a = typeof(operand)
    if a.ndim == 0:
        raise TypeError("top_k operand must have >= 1 dimension, got a scalar")
    P.check_kinds("top_k", "real_number", a)
    k = int(k)
    axis = _axis(axis, a.ndim)
    n = a.shape[axis]
    if k < 0:
        raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
    if isinstance(n, int) and k > n:
        raise TypeError(f"k argument to top_k must be no larger than the operand's axis size {n}, got {k}")
    shape = list(a.shape)
    neg_idx = P.neg_p.bind(api.broadcasted_iota(int64, shape, axis))
    keys = _descending_order_keys(operand)
    outs = api.sort((*keys, neg_idx, operand), dimension=axis, num_keys=len(keys) + 1)
    vals, idx = outs[-1], outs[-2]
    vals, idx = api.rev(vals, (axis,)), P.neg_p.bind(api.rev(idx, (axis,)))
    sizes = list(shape)
    sizes[axis] = k
    zeros = [0] * a.ndim
    if all(isinstance(d, int) for d in shape):
        lim = [d if i != axis else k for i, d in enumerate(shape)]
        vals, idx = api.slice(vals, zeros, lim), api.slice(idx, zeros, lim)
    else:
        vals = api.dynamic_slice(vals, [np.int64(0)] * a.ndim, sizes)
        idx = api.dynamic_slice(idx, [np.int64(0)] * a.ndim, sizes)
    return vals, api.convert_element_type(idx, int32)


# --- reductions ------------------------------------------------------------------------------
def _bitwise_reduce(name, operand, axes, bool_reduce, bit_reduce):
    a = typeof(operand)
    axes = tuple(_axis(ax, a.ndim) for ax in axes)
    if a.dtype == bool_:
        return bool_reduce(operand, axes)
    if not is_integer_dtype(a.dtype):
        raise TypeError(f"{name} needs a bool or integer operand, got {a.str_short()}")
    u = np.dtype(f"u{a.dtype.itemsize}")
    bits_ = bitcast_convert_type(operand, u)
    one = np.ones((), u)
    acc = None
    for b in range(8 * a.dtype.itemsize):
        bit = P.and_p.bind(shift_right_logical(bits_, np.asarray(b, u)), one)
        r = P.shift_left_p.bind(bit_reduce(bit, axes), np.asarray(b, u))
        acc = r if acc is None else P.or_p.bind(acc, r)
    return bitcast_convert_type(acc, a.dtype)


def reduce_and(operand, axes: Sequence[int]):
    """Logical (bool) or bitwise (integers) "and" over ``axes``."""
    return _bitwise_reduce("reduce_and", operand, axes, api.reduce_min, api.reduce_min)


def reduce_or(operand, axes: Sequence[int]):
    """Logical (bool) or bitwise (integers) "or" over ``axes``."""
    return _bitwise_reduce("reduce_or", operand, axes, api.reduce_max, api.reduce_max)


def _parity(bits_, axes):
    return P.and_p.bind(api.reduce_sum(bits_, axes), np.ones((), typeof(bits_).dtype))


def _bool_parity(x, axes):
    ints = api.convert_element_type(x, int64)
    return api.convert_element_type(_parity(ints, axes), bool_)


def reduce_xor(operand, axes: Sequence[int]):
    """Logical (bool) or bitwise (integers) "xor" over ``axes``."""
    return _bitwise_reduce("reduce_xor", operand, axes, _bool_parity, _parity)


def _reduction(name, fn):
    def reduce(operand, axes: Sequence[int], *, out_sharding=None):
        a = typeof(operand)
        return fn(operand, tuple(_axis(ax, a.ndim) for ax in axes))
    reduce.__name__ = name
    reduce.__doc__ = f"``{name}`` over ``axes`` (negative axes count from the end)."
    return reduce


reduce_sum = _reduction("reduce_sum", api.reduce_sum)
reduce_prod = _reduction("reduce_prod", api.reduce_prod)
reduce_max = _reduction("reduce_max", api.reduce_max)
reduce_min = _reduction("reduce_min", api.reduce_min)


def argmax(operand, axis: int, index_dtype=int64):
    """The index of the largest element along ``axis`` (the first of equals; NaN wins)."""
    a = typeof(operand)
    return api.argmax(operand, _axis(axis, a.ndim), index_dtype)


def argmin(operand, axis: int, index_dtype=int64):
    """The index of the smallest element along ``axis`` (the first of equals; NaN wins)."""
    a = typeof(operand)
    return api.argmin(operand, _axis(axis, a.ndim), index_dtype)


# --- control flow built on scan --------------------------------------------------------------
def map(f: Callable, xs, *, batch_size: Optional[int] = None):
    """``[f(x) for x in xs]`` stacked (over the leading axis of every leaf of ``xs``), as a
    ``scan``; with ``batch_size``, ``f`` is applied to ``batch_size`` members at a time by
    ``vmap`` (and the remainder by one more ``vmap``)."""
    from ..control_flow.lax_api import scan
    from ..core.pytree import tree_flatten, tree_map, tree_unflatten

    if batch_size is None:
        return scan(lambda c, x: (c, f(x)), (), xs)[1]
    from ..transforms.batching import vmap
    batch_size = int(batch_size)
    if batch_size < 1:
        raise ValueError(f"lax.map: batch_size must be a positive integer, got {batch_size}")
    leaves, tree = tree_flatten(xs)
    n = typeof(leaves[0]).shape[0]
    if not isinstance(n, int):
        raise TypeError("lax.map with batch_size needs a static leading axis")
    full_batches, rest = divmod(n, batch_size)
    outs = []
    if full_batches:
        main = [api.reshape(api.slice(v, [0] * typeof(v).ndim, [full_batches * batch_size] + list(typeof(v).shape[1:])),
                            (full_batches, batch_size) + tuple(typeof(v).shape[1:])) for v in leaves]
        ys = scan(lambda c, x: (c, vmap(f)(x)), (), tree_unflatten(tree, main))[1]
        outs.append(tree_map(lambda y: api.reshape(y, (full_batches * batch_size,) + tuple(typeof(y).shape[2:])), ys))
    if rest:
        tail = [slice_in_dim(v, full_batches * batch_size, n, 1, 0) for v in leaves]
        outs.append(vmap(f)(tree_unflatten(tree, tail)))
    if len(outs) == 1:
        return outs[0]
    return tree_map(lambda y0, y1: api.concatenate([y0, y1], 0), outs[0], outs[1])

