"""``jax.lax`` functions that need no primitive of their own: written on dynjax's primitives
with JAX's names, signatures, defaults and errors (``clamp``, ``round(rounding_method=)``,
``square``, ``exp2``, ``asinh`` ..., ``expand_dims``, ``full``, ``collapse``, ``dot`` /
``batch_matmul``, ``reduce_and`` / ``reduce_or`` / ``reduce_xor``, ``stop_gradient``, ``map``,
``mulhi``, ``stack``, ``tile``, ``dtype``). The slicing functions (``dynamic_slice``, the
``*_in_dim`` helpers, ``split``) are in ``lax/slicing_functions.py``.

``dynjax.lax`` exports these in place of the thin primitive wrappers of ``lax/api.py`` where
the names coincide (``round``, ``reshape``, ``squeeze`` ...); dynjax's own modules keep
using ``lax/api.py`` (or pass the non-JAX option explicitly).
"""
from __future__ import annotations

import builtins
import enum
from typing import Callable, Optional, Sequence

import numpy as np

from ..core.avals import (bool_, canonical_dtype, int64, is_complex_dtype, is_inexact_dtype,
                          is_integer_dtype)
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


def pow(x, y):
    """``x ** y`` elementwise for an inexact ``x``: as in JAX, ``y`` has ``x``'s dtype or is an
    integer (converted to ``x``'s dtype, as JAX's lowering does); a Python scalar is float64 /
    int64 / complex128. (``dynjax.numpy.power`` also raises integers to integer powers.)"""
    xa, ya = typeof(x), typeof(y)
    if not is_inexact_dtype(xa.dtype) or not (
            is_integer_dtype(ya.dtype) or ya.dtype == xa.dtype):
        raise TypeError("the first argument to pow must have an inexact dtype (float or complex), "
                        "and the second argument must have an inexact or integer dtype, and two "
                        f"inexact dtypes must match, but got {xa.dtype} and {ya.dtype} respectively.")
    if is_integer_dtype(ya.dtype):
        y = api.convert_element_type(y, xa.dtype)
    return P.pow_p.bind(x, y)


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
    from .slicing_functions import slice_in_dim   # (it imports this module)

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


# --- more of jax.lax: integer products, stacking and tiling, dtypes, data types ---------------
def mulhi(x, y, /):
    """The high half of the full-width product of two integers of one dtype: for N-bit
    operands, bits N..2N-1 of the 2N-bit product (signed or unsigned as the dtype)."""
    xa, ya = typeof(x), typeof(y)
    P.check_kinds("mulhi", "integer", xa)
    if xa.dtype != ya.dtype:
        raise TypeError(f"lax.mulhi requires arguments to have the same dtypes, got "
                        f"{xa.dtype.name}, {ya.dtype.name}")
    if xa.ndim and ya.ndim and not shapes_equal(xa.shape, ya.shape):
        raise TypeError(f"lax.mulhi: incompatible shapes {xa.str_short()} and {ya.str_short()}")
    shape = xa.shape if xa.ndim else ya.shape    # a rank-0 operand broadcasts
    x, y = (api.broadcast_in_dim(v, shape, ()) if typeof(v).ndim != len(shape) else v
            for v in (x, y))
    dt = xa.dtype
    bits = 8 * dt.itemsize
    if bits < 64:   # the exact product in the type twice as wide
        wide = np.dtype(f"{dt.kind}{2 * dt.itemsize}")
        prod = P.mul_p.bind(api.convert_element_type(x, wide), api.convert_element_type(y, wide))
        return api.convert_element_type(P.shift_right_p.bind(prod, np.asarray(bits, wide)), dt)
    # 64 bits: schoolbook multiplication of the unsigned 32-bit halves
    u = np.dtype(np.uint64)
    a, b = bitcast_convert_type(x, u), bitcast_convert_type(y, u)
    mask, s32 = np.asarray(0xFFFFFFFF, u), np.asarray(32, u)
    a_lo, a_hi = P.and_p.bind(a, mask), P.shift_right_p.bind(a, s32)
    b_lo, b_hi = P.and_p.bind(b, mask), P.shift_right_p.bind(b, s32)
    ll, lh = P.mul_p.bind(a_lo, b_lo), P.mul_p.bind(a_lo, b_hi)
    hl, hh = P.mul_p.bind(a_hi, b_lo), P.mul_p.bind(a_hi, b_hi)
    mid = P.add_p.bind(P.add_p.bind(P.shift_right_p.bind(ll, s32), P.and_p.bind(lh, mask)),
                       P.and_p.bind(hl, mask))
    hi = P.add_p.bind(P.add_p.bind(hh, P.shift_right_p.bind(lh, s32)),
                      P.add_p.bind(P.shift_right_p.bind(hl, s32), P.shift_right_p.bind(mid, s32)))
    if dt.kind == "i":   # the signed high half: minus b where a < 0, minus a where b < 0
        zero = np.zeros((), u) if not shape else api.broadcast_in_dim(np.zeros((), u), shape, ())
        for neg, other in ((P.lt_p.bind(x, np.zeros((), dt)), b), (P.lt_p.bind(y, np.zeros((), dt)), a)):
            hi = P.sub_p.bind(hi, P.select_n_p.bind(neg, zero, other))
    return bitcast_convert_type(hi, dt)


def stack(operands: Sequence, axis: int = 0):
    """The arrays ``operands`` (one shape) joined along a new axis ``axis``."""
    ops = [_as_array(o) for o in operands]
    if not ops:
        raise ValueError("lax.stack requires at least one operand")
    a = typeof(ops[0])
    axis = _axis(axis, a.ndim + 1)
    for o in ops[1:]:
        b = typeof(o)
        if b.dtype != a.dtype or not shapes_equal(b.shape, a.shape):
            raise TypeError(f"lax.stack requires operands of one shape and dtype, got "
                            f"{a.str_short()} and {b.str_short()}")
    return api.concatenate([expand_dims(o, (axis,)) for o in ops], axis)


def unstack(x, axis: int = 0):
    """The slices of ``x`` along ``axis`` (a static size), as a tuple of arrays without it."""
    from .slicing_functions import index_in_dim   # (it imports this module)
    a = typeof(x)
    axis = _axis(axis, a.ndim)
    n = a.shape[axis]
    if not isinstance(n, int):
        raise TypeError(f"lax.unstack needs a static size along axis {axis}, got {a.str_short()} "
                        "(the number of results must be known when tracing)")
    return tuple(index_in_dim(x, i, axis, keepdims=False) for i in range(n))


def tile(operand, reps: Sequence[int]):
    """``operand`` repeated ``reps[i]`` times along each axis ``i`` (one entry per axis)."""
    a = typeof(operand)
    reps = [api.canonicalize_dim(r, "repetition count") for r in reps]
    if len(reps) != a.ndim:
        raise ValueError(f"lax.tile: reps must have one entry per axis of {a.str_short()}, got "
                         f"{len(reps)}")
    # broadcast to (r0, d0, r1, d1, ...) and merge each pair
    shape, dims = [], []
    for i, (r, d) in enumerate(zip(reps, a.shape)):
        shape += [r, d]
        dims.append(2 * i + 1)
    out = api.broadcast_in_dim(operand, shape, dims)
    return api.reshape(out, [r * d for r, d in zip(reps, a.shape)])


def broadcast_like(arr, like_arr):
    """``arr`` broadcast (numpy's rules) to the shape of ``like_arr``."""
    from ..numpy import broadcast_to
    return broadcast_to(arr, typeof(like_arr).shape)


def index_take(src, idxs, axes: Sequence[int]):
    """``src`` indexed along ``axes`` by the integer arrays ``idxs`` (one per axis, of one
    shape ``(n,)``; indices wrap around: taken modulo the axis size): the result has shape
    ``(n,)`` + the other axes of ``src``, in order."""
    a = typeof(src)
    axes = [int(ax) for ax in axes]
    idxs = [_as_array(i) for i in idxs]
    if len(idxs) != len(axes):
        raise TypeError(f"index_take: {len(idxs)} index arrays for {len(axes)} axes")
    cols = []
    for i, ax in zip(idxs, axes):
        ia = typeof(i)
        if not is_integer_dtype(ia.dtype):
            raise TypeError(f"index_take: indices must be integers, got {ia.str_short()}")
        i = api.convert_element_type(i, int64)
        n = a.shape[ax]
        size = np.int64(n) if isinstance(n, int) else api.convert_element_type(n, int64)
        size = api.broadcast_in_dim(size, typeof(i).shape, ()) if typeof(i).ndim else size
        # Python's modulo of a positive size, as JAX's `indices % max_idx`
        r = P.rem_p.bind(i, size)
        r = P.select_n_p.bind(P.lt_p.bind(r, np.int64(0)), r, P.add_p.bind(r, size))
        cols.append(api.broadcast_in_dim(r, tuple(typeof(r).shape) + (1,), tuple(range(typeof(r).ndim))))
    rows = cols[0] if len(cols) == 1 else api.concatenate(cols, typeof(cols[0]).ndim - 1)
    return api.gather(src, rows, axes)


def _as_array(x):
    if isinstance(x, Tracer) or isinstance(x, np.ndarray):
        return x
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return np.asarray(x, canonical_dtype(typeof(x).dtype))
    return np.asarray(x)


_PY_SCALAR_DTYPES = {bool: bool_, int: int64, float: np.dtype(np.float64),
                     complex: np.dtype(np.complex128)}


def dtype(x):
    """The dtype of a value or type, as dynjax computes with it: Python scalars and their types
    give int64 / float64 / complex128 / bool (JAX's with 64-bit types on), arrays and traced
    values their own dtype; names, numpy types and dtypes are checked to be supported."""
    if x is None:
        raise ValueError(f"Invalid argument to dtype: {x}.")
    if isinstance(x, type):
        if x in _PY_SCALAR_DTYPES:
            return _PY_SCALAR_DTYPES[x]
        if issubclass(x, np.generic):
            return canonical_dtype(x)
    elif type(x) in _PY_SCALAR_DTYPES:
        return _PY_SCALAR_DTYPES[type(x)]
    if isinstance(x, Tracer):
        return typeof(x).dtype
    if isinstance(x, (str, np.dtype)):
        try:
            return canonical_dtype(x)
        except TypeError:
            raise TypeError(f"Value '{x}' with dtype {np.dtype(x)} is not a valid JAX array type. "
                            "Only arrays of numeric types are supported by JAX.") from None
    dt = getattr(x, "dtype", None)
    if not isinstance(dt, np.dtype):
        try:
            dt = np.result_type(x)   # (as JAX: a list is refused)
        except TypeError as err:
            raise TypeError(f"Cannot determine dtype of {x}") from err
    try:
        return canonical_dtype(dt)
    except TypeError:
        raise TypeError(f"Value '{x}' with dtype {dt} is not a valid JAX array type. "
                        "Only arrays of numeric types are supported by JAX.") from None


#: the dimension numbers of ``dot_general``: ``((lhs_contracting, rhs_contracting),
#: (lhs_batch, rhs_batch))``
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]], tuple[Sequence[int], Sequence[int]]]
#: what a ``precision=`` argument takes
PrecisionLike = Optional[builtins.str | Precision | tuple[builtins.str, builtins.str]
                         | tuple[Precision, Precision]]
