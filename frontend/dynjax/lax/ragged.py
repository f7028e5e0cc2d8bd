"""``ragged_dot`` and ``ragged_dot_general``: products whose lhs is cut into groups of
run-time sizes along one of its axes (the *ragged* axis), with JAX's three modes:

1. the ragged axis is a non-contracting axis of ``lhs`` (``[m, k] x [g, k, n] -> [m, n]``):
   the rows of group ``j`` are multiplied by ``rhs[j]``;
2. it is a contracting axis (``[m, k] x [k, n] -> [g, m, n]``): one product per group, each
   summing over that group's slice of ``k``;
3. it is a batch axis: an ordinary ``dot_general``.

``group_sizes`` is a traced integer operand (shape ``[g]``, or the lhs axes outside the ragged
one followed by ``g``); ``g`` must be static in modes 1 and 2, the other sizes may be dynamic.
As JAX does on the CPU, the ragged operand is expanded into ``g`` masked copies (an element
belongs to group ``j`` when ``starts[j] <= position < ends[j]``, the ends being the cumulative
sum of the sizes; positions past the last group belong to none and give zeros) and contracted
with ``dot_general``, so ``jvp``, ``grad`` and ``vmap`` come from the primitives used.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from ..core.avals import canonical_dtype, is_integer_dtype
from ..core.trace import typeof
from . import api
from . import primitives as P
from .base import same_dim
from .derived import DotDimensionNumbers, _check_precision, dot_general

__all__ = ["RaggedDotDimensionNumbers", "ragged_dot", "ragged_dot_general"]


@dataclasses.dataclass(frozen=True, init=False)
class RaggedDotDimensionNumbers:
    """The dimension numbers of ``ragged_dot_general``: ``dot_dimension_numbers`` as for
    ``dot_general``, the one ragged axis of ``lhs`` (``lhs_ragged_dimensions``) and the group
    axis of ``rhs`` (``rhs_group_dimensions``: one axis in mode 1, none otherwise)."""
    dot_dimension_numbers: DotDimensionNumbers
    lhs_ragged_dimensions: Sequence[int]
    rhs_group_dimensions: Sequence[int]

    def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
        object.__setattr__(self, "dot_dimension_numbers",
                           tuple(tuple(map(tuple, t)) for t in dot_dimension_numbers))
        object.__setattr__(self, "lhs_ragged_dimensions", tuple(lhs_ragged_dimensions))
        object.__setattr__(self, "rhs_group_dimensions", tuple(rhs_group_dimensions))


_BASIC = RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0])
_NONCONTRACTING, _CONTRACTING, _BATCH = "noncontracting", "contracting", "batch"


def _mode(lhs_rank, dn):
    if len(dn.lhs_ragged_dimensions) != 1:
        raise TypeError("ragged_dot_general expects exactly one lhs ragged dimension.")
    r = dn.lhs_ragged_dimensions[0]
    if not 0 <= r < lhs_rank:
        raise TypeError(f"ragged_dot_general requires lhs ragged dimension numbers to be "
                        f"nonnegative and less than the number of axes of the lhs value, got {r} "
                        f"for lhs of rank {lhs_rank}.")
    (lc, _), (lb, _) = dn.dot_dimension_numbers
    if r in lc:
        return _CONTRACTING, r
    if r in lb:
        return _BATCH, r
    return _NONCONTRACTING, r


def _prefix_dims(mode, rank, ragged, batch, contract):
    """The lhs axes that index ``group_sizes`` before its group axis (JAX's order)."""
    if mode == _NONCONTRACTING:
        return list(batch) + [d for d in range(ragged) if d not in batch and d not in contract]
    if mode == _CONTRACTING:
        return list(batch) + [d for d in contract if d < ragged]
    return [d for d in batch if d < ragged]


def _expand(x, dim, gs, axes):
    """``[g] + x.shape``: copy ``j`` keeps the elements of ``x`` whose position along ``dim``
    lies in group ``j`` (``gs`` has shape ``[x.shape[a] for a in axes] + [g]``), zeros elsewhere."""
    xa, ga = typeof(x), typeof(gs)
    g = ga.shape[-1]
    shape = (g,) + tuple(xa.shape)
    ends = api.cumsum(gs, ga.ndim - 1)
    starts = P.sub_p.bind(ends, gs)
    # group axis first, then the prefix axes in the positions of x's axes
    order = (ga.ndim - 1,) + tuple(range(ga.ndim - 1))
    bdims = (0,) + tuple(1 + a for a in axes)
    ends = api.broadcast_in_dim(api.transpose(ends, order), shape, bdims)
    starts = api.broadcast_in_dim(api.transpose(starts, order), shape, bdims)
    pos = api.broadcasted_iota(ga.dtype, shape, dim + 1)
    mask = P.and_p.bind(P.le_p.bind(starts, pos), P.lt_p.bind(pos, ends))
    xb = api.broadcast_in_dim(x, shape, tuple(range(1, len(shape))))
    zeros = api.broadcast_in_dim(np.zeros((), xa.dtype), shape, ())
    return P.select_n_p.bind(mask, zeros, xb)


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                       preferred_element_type=None, group_offset=None, out_sharding=None):
    """The ragged product of ``lhs`` and ``rhs`` (see the module's docstring and
    ``jax.lax.ragged_dot_general``)."""
    if group_offset is not None:
        raise NotImplementedError("Unimplemented group_offset support.")
    _check_precision(precision)
    dn = ragged_dot_dimension_numbers
    if not isinstance(dn, RaggedDotDimensionNumbers):
        raise TypeError("ragged_dot_general: ragged_dot_dimension_numbers must be a "
                        f"RaggedDotDimensionNumbers, got {type(dn).__name__}")
    la, ra, ga = typeof(lhs), typeof(rhs), typeof(group_sizes)
    if not is_integer_dtype(ga.dtype):
        raise TypeError(f"ragged_dot_general: group_sizes must be integers, got {ga.str_short()}")
    if ga.ndim == 0:
        raise TypeError("expected rank of group_sizes to be >=1.")
    mode, ragged = _mode(la.ndim, dn)
    (lc, rc), (lb, rb) = dn.dot_dimension_numbers
    prefix = _prefix_dims(mode, la.ndim, ragged, lb, lc)
    if ga.ndim != 1:
        want = tuple(la.shape[i] for i in prefix) + (ga.shape[-1],)
        if len(want) != ga.ndim or not all(same_dim(p, q) for p, q in zip(want, ga.shape)):
            raise TypeError(f"expected group_sizes to have shape {want}, got {ga.shape}.")
    g = ga.shape[-1]
    if mode in (_CONTRACTING, _NONCONTRACTING) and not isinstance(g, int):
        raise TypeError("ragged_dot_general requires the group count (last dimension of "
                        "group_sizes) to be static in Mode 1 (non-contracting) and Mode 2 "
                        "(contracting).")
    rgroup = dn.rhs_group_dimensions
    if mode in (_CONTRACTING, _BATCH) and len(rgroup):
        raise TypeError("ragged_dot_general requires zero group dimensions in the rhs when lhs "
                        "ragged dimension is contracting or batch.")
    if mode == _NONCONTRACTING:
        if len(rgroup) != 1:
            raise TypeError("ragged_dot_general requires exactly one rhs group dimension when lhs "
                            "ragged dimension is noncontracting.")
        rg = rgroup[0]
        if not 0 <= rg < ra.ndim:
            raise TypeError(f"ragged_dot_general requires rhs group dimension numbers to be "
                            f"nonnegative and less than the number of axes of the rhs value, got "
                            f"{rg} for rhs of rank {ra.ndim}.")
        if rg in rb or rg in rc:
            raise TypeError("ragged_dot_general requires rhs group dimension numbers to be "
                            "distinct from contracting and batch dimensions.")
        if not same_dim(ra.shape[rg], g):
            raise TypeError(f"expected rhs group dimension size to be {g}, got {ra.shape[rg]}.")
    pet = None if preferred_element_type is None else canonical_dtype(preferred_element_type)
    if ga.ndim == 1 and prefix:
        group_sizes = api.broadcast_in_dim(group_sizes, tuple(la.shape[i] for i in prefix) + (g,),
                                           (len(prefix),))
    incr = lambda dims: [d + 1 for d in dims]   # noqa: E731
    if mode == _NONCONTRACTING:
        return dot_general(_expand(lhs, ragged, group_sizes, prefix), rhs,
                           ((incr(lc) + [0], list(rc) + [rgroup[0]]), (incr(lb), list(rb))),
                           preferred_element_type=pet)
    if mode == _CONTRACTING:
        rragged = rc[list(lc).index(ragged)]
        rprefix = _prefix_dims(mode, ra.ndim, rragged, rb, rc)
        return dot_general(_expand(lhs, ragged, group_sizes, prefix),
                           _expand(rhs, rragged, group_sizes, rprefix),
                           ((incr(lc), incr(rc)), ([0] + incr(lb), [0] + incr(rb))),
                           preferred_element_type=pet)
    return dot_general(lhs, rhs, dn.dot_dimension_numbers, preferred_element_type=pet)


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
    """``lhs`` (``[m, k]``) times ``rhs`` (``[g, k, n]``) where the rows of ``lhs`` come in ``g``
    consecutive groups of ``group_sizes`` rows and group ``j`` is multiplied by ``rhs[j]``;
    rows past the groups give zeros. ``[m, n]``."""
    return ragged_dot_general(lhs, rhs, group_sizes, _BASIC, precision=precision,
                              preferred_element_type=preferred_element_type,
                              group_offset=group_offset)
