"""Batching rule of ``conv_general_dilated`` (``dynjax.lax.convolution``).

The mapped axis folds into an axis of one convolution (operands in the canonical layouts,
``V`` the batch size of ``vmap``):

* only ``lhs`` mapped: into its batch axis, ``(V, N) -> V*N``; with ``B`` batch groups the
  groups stay outermost, ``(V, B, N') -> (B, V, N') -> B*V*N'``;
* only ``rhs`` mapped: into its output features, the ``G`` feature (or ``B`` batch) groups
  outermost, ``(V, G, O_g) -> (G, V, O_g) -> G*V*O_g``, and the result's features back;
* both mapped: into the feature groups, ``V*G`` groups (``lhs`` features ``(V, C)``,
  ``rhs`` output features ``(V, O)``); with batch groups into ``V*B`` batch groups.

Size operands (dynamic pads and output sizes) are the same for every member.
"""
from __future__ import annotations

import numpy as np

from ...core.primitive import batching_rules
from ...core.trace import typeof
from ...lax import api as lax
from ...lax import convolution as _C
from . import _check_unbatched, move_axis, per_member


def _conv_rule(size, vals, dims, *, window_strides, padding, lhs_dilation, rhs_dilation,
               dimension_numbers, feature_group_count, batch_group_count, precision,
               preferred_element_type, out_shape):
    lhs, rhs, *dyn = vals
    ld, rd, *dd = dims
    _check_unbatched("conv_general_dilated", dd)
    params = dict(window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
                  rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
                  feature_group_count=feature_group_count, batch_group_count=batch_group_count,
                  precision=precision, preferred_element_type=preferred_element_type,
                  out_shape=out_shape)
    if ld is None and rd is None:
        return _C.conv_general_dilated_p.bind(lhs, rhs, *dyn, **params), None
    if isinstance(size, int) and size == 0:
        # an empty batch: the member's result shape with a leading 0 (groups of V*G would be 0)
        member = [_member_zeros(v, d) for v, d in ((lhs, ld), (rhs, rd))]
        out = _C.conv_general_dilated_p.bind(*member, *dyn, **params)
        shape = (0,) + tuple(typeof(out).shape)
        return lax.broadcast_in_dim(np.zeros((), typeof(out).dtype), shape, ()), 0
    if ld is not None and rd is not None and not isinstance(size, int):
        # the batch would multiply the (static) group count: one member at a time
        return per_member(_C.conv_general_dilated_p, size, vals, dims, params)
    dn = dimension_numbers
    nd = typeof(lhs).ndim - (ld is not None)
    G, B = feature_group_count, batch_group_count
    npad = sum(v is None for pair in padding for v in pair)
    it = iter(dyn[:npad])
    pads = [tuple(next(it) if v is None else v for v in pair) for pair in padding]
    # every operand in its canonical layout, the mapped axis (if any) in front
    x = _C.to_canonical(move_axis(lhs, ld, 0), (0,) + tuple(i + 1 for i in dn.lhs_spec)) \
        if ld is not None else _C.to_canonical(lhs, dn.lhs_spec)
    k = _C.to_canonical(move_axis(rhs, rd, 0), (0,) + tuple(i + 1 for i in dn.rhs_spec)) \
        if rd is not None else _C.to_canonical(rhs, dn.rhs_spec)
    fg, bg = G, B
    if ld is not None and rd is None:
        if B > 1:     # (V, B*N') -> (B, V, N') -> B*V*N'
            x = _C.split_axis(x, 1, B)
            x = _C.swap_axes(x, 0, 1)
            x = _C.merge_axes(x, 1)
        x = _C.merge_axes(x, 0)
    elif rd is not None and ld is None:
        groups = max(G, B)   # (V, groups*O_g) -> (groups, V, O_g) -> groups*V*O_g
        k = _C.split_axis(k, 1, groups)
        k = _C.swap_axes(k, 0, 1)
        k = _C.merge_axes(k, 1)
        k = _C.merge_axes(k, 0)
    else:
        k = _C.merge_axes(k, 0)                     # (V*O, I)
        if B > 1:
            x = _C.merge_axes(x, 0)                 # (V*N, C): V*B batch groups
            bg = B * size
        else:
            x = _C.swap_axes(x, 0, 1)               # (N, V, C) -> (N, V*C): V*G groups
            x = _C.merge_axes(x, 1)
            fg = G * size
    out = _C.bind_conv(x, k, window_strides=window_strides, pads=pads, lhs_dilation=lhs_dilation,
                       rhs_dilation=rhs_dilation, dimension_numbers=_C.canonical_dn(nd),
                       feature_group_count=fg, batch_group_count=bg, precision=precision,
                       preferred_element_type=preferred_element_type)
    # back to (V, N', O, spatial...)
    if ld is not None and rd is None:
        member_n = _member_batch(lhs, ld, dn)
        inner = member_n if B == 1 else _C._div_nonneg(_C._size(member_n), B)
        out = _C.split_axis(out, 0, size, inner)    # V*N' -> (V, N')
    elif rd is not None and ld is None:
        groups = max(G, B)   # groups*V*O_g -> (groups, V, O_g) -> (V, groups, O_g) -> (V, O)
        out = _C.split_axis(out, 1, groups)
        out = _C.split_axis(out, 2, size, _per_group(rhs, rd, dn, groups))
        out = _C.swap_axes(out, 1, 2)
        out = _C.merge_axes(out, 2)
        out = move_axis(out, 1, 0)
    else:
        out = _C.split_axis(out, 1, size)           # (N', V, O)
        out = move_axis(out, 1, 0)
    # (V, canonical...) -> (V, out layout)
    out = _C.from_canonical(out, (0,) + tuple(i + 1 for i in dn.out_spec))
    return out, 0


def _member_batch(lhs, ld, dn):
    """The batch size of one member of a mapped lhs."""
    shape = list(typeof(lhs).shape)
    del shape[ld]
    return shape[dn.lhs_spec[0]]


def _per_group(rhs, rd, dn, groups):
    """The output features per group of one member of a mapped rhs."""
    shape = list(typeof(rhs).shape)
    del shape[rd]
    return _C._div_nonneg(_C._size(shape[dn.rhs_spec[0]]), groups)


def _member_zeros(v, d):
    """Zeros of one member's shape (the operand itself when it is not mapped)."""
    if d is None:
        return v
    shape = list(typeof(v).shape)
    del shape[d]
    return lax.broadcast_in_dim(np.zeros((), typeof(v).dtype), shape, ())


batching_rules[_C.conv_general_dilated_p] = _conv_rule
