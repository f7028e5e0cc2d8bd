"""``jax.lax``'s sorting functions on dynjax's sort primitive, with JAX's signatures:
``sort`` (``num_keys``), ``sort_key_val``, ``top_k``, and ``approx_max_k`` / ``approx_min_k``
(exact, as JAX's on the CPU, with the candidate count XLA would give for
``aggregate_to_topk=False``)."""
from __future__ import annotations

import numpy as np

from ..core.avals import int32, int64, is_float_dtype
from ..core.trace import typeof
from . import api
from . import primitives as P
from .derived import _axis


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


# --- approximate top-k (exact here, as JAX's on the CPU) -------------------------------------
_TPU_CHUNK_TILING = 1024   # rank-1 operands
_TPU_LANE_TILING = 128     # rank >= 2


def _log2_floor(v: int) -> int:
    return 0 if v == 0 else v.bit_length() - 1


def _log2_ceil(v: int) -> int:
    return 0 if v == 0 else (v - 1).bit_length()


def approx_top_k_output_size(input_size: int, rank: int, k: int, recall_target: float,
                             aggregate_to_topk: bool, input_size_override: int = -1) -> int:
    """The size of the reduction axis of ``approx_max_k`` / ``approx_min_k``'s results: ``k``
    when aggregating, else XLA's ``ApproxTopKReductionOutputSize`` (a TPU-oriented number of
    candidates that every platform reports)."""
    if aggregate_to_topk:
        return k
    tiling = _TPU_CHUNK_TILING if rank == 1 else _TPU_LANE_TILING
    if input_size <= tiling:
        return input_size
    if input_size_override >= 0 and input_size > input_size_override:
        raise ValueError(f"reduction_input_size_override: {input_size_override} should be greater "
                         f"equals to operands[reduction_dim]: {input_size}")
    logical = input_size_override if input_size_override >= 0 else input_size
    if k == 1:
        return tiling
    recall = float(np.float32(recall_target))     # XLA takes a float
    if not 0.0 < recall <= 1.0:
        raise ValueError("recall_target should range in (0,1]")
    import math
    # the number of windows for the recall (at least the tiling; measured against jaxlib's
    # function, which does not cap it at the input size)
    m = max(int((1.0 - k) / math.log(recall)) if recall < 1.0 else 2 ** 63, tiling)
    log2_reduction = _log2_floor(logical // m)
    if log2_reduction == 0:
        return input_size
    log2_reduction = min(log2_reduction, _log2_ceil(input_size // tiling))
    return -(-(-(-input_size // tiling)) // (1 << log2_reduction)) * tiling


def _approx_top_k(name, is_max_k, operand, k, reduction_dimension, recall_target,
                  reduction_input_size_override, aggregate_to_topk):
    a = typeof(operand)
    k = int(k)
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    if a.ndim == 0:
        raise TypeError(f"approx_top_k operand must have >= 1 dimension, got {a.shape}")
    if not is_float_dtype(a.dtype):
        raise ValueError("operand must be a floating type")
    axis = _axis(reduction_dimension, a.ndim, "reduction_dimension")
    n = a.shape[axis]
    if isinstance(n, int) and n < k:
        raise ValueError(f"k must be smaller than the size of reduction_dim {n}, got {k}")
    if aggregate_to_topk:
        size = k
    elif isinstance(n, int):
        size = approx_top_k_output_size(n, a.ndim, k, recall_target, False,
                                        int(reduction_input_size_override))
    else:
        raise NotImplementedError(
            f"{name} with aggregate_to_topk=False needs a static size along the reduction "
            f"dimension (the number of results depends on it), got {a.str_short()}")
    # a stable sort on the value, +0.0 and -0.0 as equals (XLA's fallback compares with > or <)
    zero = np.zeros((), a.dtype)
    key = P.add_p.bind(P.neg_p.bind(operand) if is_max_k else operand, zero)
    idx = api.broadcasted_iota(int32, a.shape, axis)
    _, vals, idx = api.sort((key, operand, idx), dimension=axis, num_keys=1)
    sizes = list(a.shape)
    sizes[axis] = size
    if all(isinstance(d, int) for d in a.shape):
        lim = [d if i != axis else size for i, d in enumerate(a.shape)]
        zeros = [0] * a.ndim
        return api.slice(vals, zeros, lim), api.slice(idx, zeros, lim)
    starts = [np.int64(0)] * a.ndim
    return api.dynamic_slice(vals, starts, sizes), api.dynamic_slice(idx, starts, sizes)


def approx_max_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """The ``k`` largest values along ``reduction_dimension`` and their int32 indices. As JAX's
    on the CPU, the result is exact (``recall_target`` only matters to TPUs): sorted
    descending, equal values in index order. With ``aggregate_to_topk=False`` the results
    keep as many sorted candidates as XLA's approximate reduction would (at least ``k``)."""
    return _approx_top_k("approx_max_k", True, operand, k, reduction_dimension, recall_target,
                         reduction_input_size_override, aggregate_to_topk)


def approx_min_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """The ``k`` smallest values along ``reduction_dimension`` and their int32 indices (exact,
    as JAX's on the CPU; see ``approx_max_k``)."""
    return _approx_top_k("approx_min_k", False, operand, k, reduction_dimension, recall_target,
                         reduction_input_size_override, aggregate_to_topk)
