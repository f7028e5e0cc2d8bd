"""Thin user-level wrappers that bind the primitives (the ``dynjax.lax`` API).

They split shapes into a static param (``None`` where a dim is dynamic) and trailing
dimension operands, which is the convention every shape-producing primitive follows.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core.avals import canonical_dtype, from_foreign_array, int64, is_foreign_array
from ..core.staging import note_size
from ..core.trace import Tracer, typeof
from . import primitives as P


def canonicalize_dim(d, what="dimension"):
    """An int for a concrete size (checked non-negative), else an i64 scalar tracer, which
    is from now on known to be ``>= 0`` (``core.staging.note_size``)."""
    if isinstance(d, Tracer):
        a = d.aval
        if a.shape != () or not np.issubdtype(a.dtype, np.integer):
            raise TypeError(f"a {what} must be an integer scalar, got a traced {a.str_short()}")
        lit = getattr(d, "literal", None)
        if lit is not None:
            return canonicalize_dim(int(lit.val), what)
        if a.dtype != int64:
            d = _as_int64_dim(d)
        note_size(d)
        return d
    if isinstance(d, (bool, np.bool_)):
        raise TypeError(f"a {what} must be an integer, got {d!r}")
    if is_foreign_array(d):   # a jax.Array scalar (or another __array__ object)
        d = from_foreign_array(d)
        if isinstance(d, Tracer) or (isinstance(d, np.ndarray) and d.ndim == 0
                                     and np.issubdtype(d.dtype, np.integer)):
            return canonicalize_dim(d, what)
    if isinstance(d, (int, np.integer)) or (isinstance(d, np.ndarray) and d.ndim == 0
                                            and np.issubdtype(d.dtype, np.integer)):
        d = int(d)
        if d < 0:
            raise ValueError(f"negative {what} {d}")
        return d
    raise TypeError(f"a {what} must be an integer, got {type(d).__name__} {d!r}")


def shape_entries(shape) -> tuple:
    """The entries of a user's shape: an int or traced size, a sequence of them, a 1-D integer
    numpy array (``np.array([2, 1, 3])``), or a traced 1-D integer array of static length
    (whose elements become sizes). Entries are not checked here (``canonicalize_dim`` does)."""
    if isinstance(shape, (tuple, list)):
        return tuple(shape)
    if is_foreign_array(shape):   # a jax.Array shape: its numpy value
        shape = from_foreign_array(shape)
    if isinstance(shape, np.ndarray) and shape.ndim == 1:
        if not np.issubdtype(shape.dtype, np.integer):
            raise TypeError(f"a shape array must hold integers, got dtype {shape.dtype}")
        return tuple(int(d) for d in shape)
    if isinstance(shape, Tracer) and shape.aval.ndim == 1:
        n = shape.aval.shape[0]
        if not isinstance(n, int):
            raise TypeError("a traced shape array must have a static length, got "
                            f"{shape.aval.str_short()}")
        if not np.issubdtype(shape.aval.dtype, np.integer):
            raise TypeError(f"a shape array must hold integers, got {shape.aval.str_short()}")
        return tuple(shape[i] for i in range(n))
    return (shape,)


def _as_int64_dim(d: Tracer) -> Tracer:
    """``d`` (a narrower integer) as an i64 dim, converted once in the scope that owns ``d``,
    so that every use of the same size is the same dim (``zeros(n) + zeros(n)`` for an int32
    ``n``), also from inside nested scopes."""
    owner = d._trace
    params = dict(new_dtype=int64, weak_type=False)
    memoized = getattr(owner, "memoized", None)
    if memoized is None:
        return P.convert_element_type_p.bind(d, **params)
    return memoized(("as_int64_dim", id(d)),
                    lambda: owner.process_primitive(P.convert_element_type_p, [d], params))


def split_shape(shape: Sequence):
    """``(static_shape_with_None, dynamic_operands)`` for a shape of ints and dim tracers."""
    static, dyn = [], []
    for d in shape:
        d = canonicalize_dim(d)
        if isinstance(d, int):
            static.append(d)
        else:
            static.append(None)
            dyn.append(d)
    return tuple(static), dyn


# --- elementwise -----------------------------------------------------------------------------
def _u(p):
    return lambda x: p.bind(x)


def _b(p):
    return lambda x, y: p.bind(x, y)


neg, sign, floor, ceil, round = map(_u, (P.neg_p, P.sign_p, P.floor_p, P.ceil_p, P.round_p))
exp, log, log1p, expm1 = map(_u, (P.exp_p, P.log_p, P.log1p_p, P.expm1_p))
sin, cos, tan, asin, acos, atan = map(_u, (P.sin_p, P.cos_p, P.tan_p, P.asin_p, P.acos_p, P.atan_p))
sinh, cosh, tanh, sqrt, rsqrt, cbrt = map(_u, (P.sinh_p, P.cosh_p, P.tanh_p, P.sqrt_p, P.rsqrt_p, P.cbrt_p))
abs, bitwise_not, logistic, is_finite = map(_u, (P.abs_p, P.not_p, P.logistic_p, P.is_finite_p))
real, imag, conj = map(_u, (P.real_p, P.imag_p, P.conj_p))
add, sub, mul, div, rem, pow = map(_b, (P.add_p, P.sub_p, P.mul_p, P.div_p, P.rem_p, P.pow_p))
max, min, atan2 = map(_b, (P.max_p, P.min_p, P.atan2_p))
bitwise_and, bitwise_or, bitwise_xor = map(_b, (P.and_p, P.or_p, P.xor_p))
complex = _b(P.complex_p)
eq, ne, lt, le, gt, ge = map(_b, (P.eq_p, P.ne_p, P.lt_p, P.le_p, P.gt_p, P.ge_p))


def integer_pow(x, y: int):
    return P.integer_pow_p.bind(x, y=int(y))


def select_n(which, *cases):
    return P.select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
    return P.select_n_p.bind(pred, on_false, on_true)


def convert_element_type(x, new_dtype, weak_type: bool = False):
    new_dtype = canonical_dtype(new_dtype)
    a = typeof(x)
    if a.dtype == new_dtype and a.weak_type == weak_type and isinstance(x, Tracer):
        return x
    return P.convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)


# --- shapes ----------------------------------------------------------------------------------
def broadcast_in_dim(x, shape, broadcast_dimensions):
    static, dyn = split_shape(shape)
    return P.broadcast_in_dim_p.bind(x, *dyn, shape=static, broadcast_dimensions=tuple(broadcast_dimensions))


def broadcast(x, sizes):
    """Add leading dims ``sizes`` to ``x``."""
    a = typeof(x)
    n = len(sizes)
    return broadcast_in_dim(x, tuple(sizes) + tuple(a.shape), tuple(range(n, n + a.ndim)))


def iota(dtype, size):
    return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype, shape, dimension: int):
    static, dyn = split_shape(shape)
    return P.iota_p.bind(*dyn, dtype=canonical_dtype(dtype), shape=static, dimension=int(dimension))


def reshape(x, new_sizes):
    static, dyn = split_shape(new_sizes)
    return P.reshape_p.bind(x, *dyn, new_sizes=static, dimensions=None)


def transpose(x, permutation):
    return P.transpose_p.bind(x, permutation=tuple(int(p) for p in permutation))


def rev(x, dimensions):
    return P.rev_p.bind(x, dimensions=tuple(sorted(int(d) for d in dimensions)))


def squeeze(x, dimensions):
    return P.squeeze_p.bind(x, dimensions=tuple(sorted(int(d) for d in dimensions)))


# --- reductions ------------------------------------------------------------------------------
def reduce_sum(x, axes):
    return P.reduce_sum_p.bind(x, axes=tuple(axes))


def reduce_prod(x, axes):
    return P.reduce_prod_p.bind(x, axes=tuple(axes))


def reduce_max(x, axes):
    return P.reduce_max_p.bind(x, axes=tuple(axes))


def reduce_max_shift(x, axes):
    """The maximum over ``axes`` as a numerical shift (softmax, logsumexp): a NaN in ``x``
    may be dropped from it (``reduce_max[keep_nan=False]``), for a caller whose own result is
    NaN wherever such a NaN takes part anyway. XLA:CPU then reduces it in its fast library
    kernels, which ignore NaN; a plain ``reduce_max`` carries NaN through (2.3x slower there:
    see ``lowering/reductions.py``)."""
    return P.reduce_max_p.bind(x, axes=tuple(axes), keep_nan=False)


def reduce_min(x, axes):
    return P.reduce_min_p.bind(x, axes=tuple(axes))


def argmax(x, axis: int, index_dtype=int64):
    return P.argmax_p.bind(x, axes=(int(axis),), index_dtype=canonical_dtype(index_dtype))


def argmin(x, axis: int, index_dtype=int64):
    return P.argmin_p.bind(x, axes=(int(axis),), index_dtype=canonical_dtype(index_dtype))


def cumsum(x, axis: int = 0, reverse: bool = False):
    return P.cumsum_p.bind(x, axis=int(axis), reverse=bool(reverse))


def cumprod(x, axis: int = 0, reverse: bool = False):
    return P.cumprod_p.bind(x, axis=int(axis), reverse=bool(reverse))


def shift_left(x, y):
    return P.shift_left_p.bind(x, y)


def shift_right(x, y):
    """Arithmetic for signed, logical for unsigned integers (numpy's ``right_shift``)."""
    return P.shift_right_p.bind(x, y)


def sort(operands, dimension: int = -1, num_keys: int = 1):
    single = not isinstance(operands, (tuple, list))
    ops = [operands] if single else list(operands)
    ndim = typeof(ops[0]).ndim
    dimension = dimension % ndim if ndim else 0
    outs = P.sort_p.bind(*ops, dimension=dimension, num_keys=int(num_keys))
    return outs[0] if single else tuple(outs)


# --- linear algebra --------------------------------------------------------------------------
def dot_general(x, y, dimension_numbers, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    return P.dot_general_p.bind(x, y, dimension_numbers=dn, preferred_element_type=preferred_element_type)


# --- slicing ---------------------------------------------------------------------------------
def slice(x, start_indices, limit_indices, strides=None):
    return P.slice_p.bind(x, start_indices=tuple(start_indices), limit_indices=tuple(limit_indices),
                          strides=None if strides is None else tuple(strides))


def dynamic_slice(x, start_indices, slice_sizes):
    static, dyn = split_shape(slice_sizes)
    starts = [convert_element_type(s, int64) if isinstance(s, Tracer) else np.int64(s) for s in start_indices]
    return P.dynamic_slice_p.bind(x, *starts, *dyn, slice_sizes=static)


def dynamic_update_slice(x, update, start_indices):
    starts = [convert_element_type(s, int64) if isinstance(s, Tracer) else np.int64(s) for s in start_indices]
    return P.dynamic_update_slice_p.bind(x, update, *starts)


def concatenate(operands, dimension: int):
    """Join ``operands`` along ``dimension``; a dynamic result size is passed as an extra operand."""
    ops = list(operands)
    ndim = typeof(ops[0]).ndim
    if not -ndim <= dimension < ndim:
        raise TypeError(f"concatenate: dimension {dimension} out of range for rank {ndim}")
    dimension %= ndim
    sizes = [typeof(o).shape[dimension] for o in ops]
    extra = []
    if not all(isinstance(s, int) for s in sizes):
        total = sizes[0]
        for s in sizes[1:]:
            total = total + s
        extra = [canonicalize_dim(total)]
    return P.concatenate_p.bind(*ops, *extra, dimension=int(dimension), num_operands=len(ops))


def pad(x, padding_value, padding_config):
    return P.pad_p.bind(x, padding_value, padding_config=tuple(tuple(int(v) for v in c) for c in padding_config))


# --- gather and scatter ----------------------------------------------------------------------
def gather(x, indices, axes):
    """Rows of ``indices`` (shape ``B + (len(axes),)``) index ``axes`` of ``x``; the result has
    shape ``B`` + the other axes of ``x``. Indices are clamped into range."""
    return P.gather_p.bind(x, indices, axes=tuple(int(a) for a in axes))


def scatter(x, indices, updates, axes, kind="set"):
    """A copy of ``x`` with the rows of ``updates`` written (``kind="set"``) or combined
    (``"add" "mul" "min" "max"``) at the rows of ``indices``; out-of-range rows are dropped."""
    return P.scatter_p.bind(x, indices, updates, axes=tuple(int(a) for a in axes), kind=kind)


def index_sizes(shape, axes):
    """The sizes of ``axes`` of ``shape`` as an int64 vector (traced when one is dynamic): the
    exclusive upper bounds of index rows into those axes."""
    sizes = [shape[a] for a in axes]
    if all(not isinstance(d, Tracer) for d in sizes):
        return np.array([int(d) for d in sizes], dtype=int64)
    parts = [broadcast_in_dim(convert_element_type(d, int64) if isinstance(d, Tracer) else np.int64(d), (1,), ())
             for d in sizes]
    return concatenate(parts, 0)


def _rows_bound(indices, shape, axes):
    a = typeof(indices)
    return broadcast_in_dim(index_sizes(shape, axes), a.shape, (a.ndim - 1,))


def rows_in_bounds(indices, shape, axes):
    """For each row of ``indices`` (shape ``B + (k,)``): is every entry inside ``axes`` of
    ``shape``? A bool array of shape ``B``."""
    a = typeof(indices)
    ok = P.and_p.bind(P.ge_p.bind(indices, np.zeros((), a.dtype)),
                      P.lt_p.bind(indices, convert_element_type(_rows_bound(indices, shape, axes), a.dtype)))
    return reduce_min(ok, (a.ndim - 1,))


def clamp_rows(indices, shape, axes):
    """``indices`` with each entry clamped into ``[0, size - 1]`` of its axis (an empty axis
    clamps to 0)."""
    a = typeof(indices)
    hi = P.sub_p.bind(convert_element_type(_rows_bound(indices, shape, axes), a.dtype), np.ones((), a.dtype))
    return P.max_p.bind(P.min_p.bind(indices, hi), np.zeros((), a.dtype))
