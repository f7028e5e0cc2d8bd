"""Jvp and transpose rules of ``conv_general_dilated`` (``dynjax.lax.convolution``).

A convolution is bilinear: its tangent is ``conv(t_lhs, rhs) + conv(lhs, t_rhs)`` with the
same parameters, and each operand's cotangent is another convolution. Both transposes work
in the canonical layouts (``(N, C, spatial)``, ``(O, I, window)``; the operands are
transposed there and the cotangent back). With ``s`` the stride, ``a`` / ``r`` the lhs /
rhs dilation, ``lo`` the low pad, ``n`` / ``k`` / ``o`` the input / window / output sizes
and ``dil(m, d) = (m - 1) * d + 1``:

* **lhs**: input position ``x`` sits at ``lo + a*x`` of the padded input and meets kernel
  tap ``j`` of output ``y`` where ``s*y + r*j = lo + a*x``. That is a convolution of the
  cotangent, dilated by ``s`` (``lhs_dilation=s``), with the window-reversed kernel
  (``rhs_dilation=r``) at stride ``a``, padded by ``dil(k, r) - 1 - lo`` below and so that
  the padded size is ``dil(n, a) + dil(k, r) - 1`` (which leaves exactly ``n`` outputs).
  The kernel's feature axes swap roles: ``(O, I) -> (I, O)``; with ``G`` feature groups
  (or ``B`` batch groups) the group moves from the kernel's output to its input features,
  and the convolution has ``G`` (``B``) feature groups; batch groups come back as the batch
  axis of the cotangent.
* **rhs**: kernel tap ``j`` of output ``y`` reads position ``s*y + r*j`` of the padded
  input: a convolution of the input (batch and feature axes swapped) with the cotangent as
  the kernel (``rhs_dilation=s``, stride ``r``, input dilation ``a``), padded by ``lo``
  below and to a padded size of ``dil(o, s) + dil(k, r) - 1`` (exactly ``k`` outputs).
  Feature groups become batch groups and batch groups feature groups. A dynamic output
  size that may be 0 (a window larger than the input) is padded to at least 1 with zeros
  first, so that the kernel of this convolution is never empty.
"""
from __future__ import annotations

import numpy as np

from ...core.avals import is_inexact_dtype
from ...core.primitive import jvp_rules, transpose_rules
from ...core.trace import typeof
from ...lax import api as lax
from ...lax import convolution as _C
from ..transpose import is_undefined
from . import Zero, _accumulate, _zero_like


def _conv_rule(primals, tangents, **params):
    lhs, rhs, *dyn = primals
    tl, tr = tangents[0], tangents[1]
    out = _C.conv_general_dilated_p.bind(lhs, rhs, *dyn, **params)
    if not is_inexact_dtype(typeof(out).dtype):
        return out, _zero_like(out)
    terms = [None if isinstance(tl, Zero) else _C.conv_general_dilated_p.bind(tl, rhs, *dyn, **params),
             None if isinstance(tr, Zero) else _C.conv_general_dilated_p.bind(lhs, tr, *dyn, **params)]
    return out, _accumulate(terms, out)


jvp_rules[_C.conv_general_dilated_p] = _conv_rule


# ----------------------------------------------------------------------------------------------
# transposes
# ----------------------------------------------------------------------------------------------
def _pads(padding, dyn):
    """The (lo, hi) pads with the dynamic ones filled in from the operands."""
    it = iter(dyn)
    return [tuple(next(it) if v is None else v for v in pair) for pair in padding]


def _convert(x, dtype):
    return x if typeof(x).dtype == dtype else lax.convert_element_type(x, dtype)


def _at_least_one(g, axes):
    """``g`` with each dynamic axis of ``axes`` padded with zeros to at least 1 element."""
    for ax in axes:
        d = typeof(g).shape[ax]
        if _C._is_int(d):
            continue
        extra = _C._max0(_C._sub(1, d))
        shape = list(typeof(g).shape)
        shape[ax] = extra
        zeros = lax.broadcast_in_dim(np.zeros((), typeof(g).dtype), shape, ())
        g = lax.concatenate([g, zeros], ax)
    return g


def _transpose_lhs(ct, rhs, lhs_aval, *, window_strides, pads, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count):
    dn = dimension_numbers
    nd = lhs_aval.ndim
    nsp = nd - 2
    g = _C.to_canonical(ct, dn.out_spec)                      # (N', O, o...)
    k = _C.to_canonical(_convert(rhs, typeof(ct).dtype), dn.rhs_spec)   # (O, I, k...)
    groups = max(feature_group_count, batch_group_count)
    # (O, I) -> (groups, O/groups, I) -> (groups, I, O/groups) -> (groups * I, O/groups)
    k = _C.split_axis(k, 0, groups)
    k = _C.swap_axes(k, 1, 2)
    k = _C.merge_axes(k, 0)
    k = lax.rev(k, tuple(range(2, nd)))
    lhs_canon = [lhs_aval.shape[i] for i in dn.lhs_spec]
    win = typeof(k).shape[2:]
    osp = typeof(g).shape[2:]
    new_pads = []
    for j in range(nsp):
        rk = _C.dilate_dim(_C._size(win[j]), rhs_dilation[j])
        an = _C.dilate_dim(_C._size(lhs_canon[2 + j]), lhs_dilation[j])
        so = _C.dilate_dim(_C._size(osp[j]), window_strides[j])
        below = _C._sub(_C._sub(rk, 1), pads[j][0])
        above = _C._sub(_C._sub(_C._sub(_C._add(an, rk), 1), so), below)
        new_pads.append((below, above))
    out = _C.bind_conv(g, k, window_strides=tuple(lhs_dilation), pads=new_pads,
                       lhs_dilation=tuple(window_strides), rhs_dilation=tuple(rhs_dilation),
                       dimension_numbers=_C.canonical_dn(nd), feature_group_count=groups,
                       out_spatial=lhs_canon[2:])              # (N', groups * C / groups ...)
    if batch_group_count > 1:
        # (N', B * C) -> (N', B, C) -> (B, N', C) -> (B * N', C)
        out = _C.split_axis(out, 1, batch_group_count)
        out = _C.swap_axes(out, 0, 1)
        out = _C.merge_axes(out, 0)
    return _convert(_C.from_canonical(out, dn.lhs_spec), lhs_aval.dtype)


def _transpose_rhs(ct, lhs, rhs_aval, *, window_strides, pads, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count):
    dn = dimension_numbers
    nd = rhs_aval.ndim
    nsp = nd - 2
    g = _C.to_canonical(ct, dn.out_spec)                      # (N', O, o...)
    if any(_C._is_int(d) and d == 0 for d in typeof(g).shape[2:]):
        return _zeros(rhs_aval)
    g = _at_least_one(g, range(2, nd))
    x = _C.to_canonical(_convert(lhs, typeof(ct).dtype), dn.lhs_spec)   # (N, C, n...)
    rhs_canon = [rhs_aval.shape[i] for i in dn.rhs_spec]
    osp = typeof(g).shape[2:]
    new_pads = []
    for j in range(nsp):
        rk = _C.dilate_dim(_C._size(rhs_canon[2 + j]), rhs_dilation[j])
        an = _C.dilate_dim(_C._size(typeof(x).shape[2 + j]), lhs_dilation[j])
        so = _C.dilate_dim(_C._size(osp[j]), window_strides[j])
        lo = pads[j][0]
        above = _C._sub(_C._sub(_C._sub(_C._add(so, rk), 1), an), lo)
        new_pads.append((lo, above))
    swapped = (1, 0) + tuple(range(2, nd))
    out = _C.bind_conv(x, g, window_strides=tuple(rhs_dilation), pads=new_pads,
                       lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(window_strides),
                       dimension_numbers=_C.ConvDimensionNumbers(swapped, swapped, swapped),
                       feature_group_count=batch_group_count, batch_group_count=feature_group_count,
                       out_spatial=rhs_canon[2:])              # (O, I, k...)
    return _convert(_C.from_canonical(out, dn.rhs_spec), rhs_aval.dtype)


def _zeros(aval):
    return lax.broadcast_in_dim(np.zeros((), aval.dtype), aval.shape, ())


def _conv_t(ct, lhs, rhs, *dyn, window_strides, padding, lhs_dilation, rhs_dilation,
            dimension_numbers, feature_group_count, batch_group_count, precision,
            preferred_element_type, out_shape):
    npad = sum(v is None for pair in padding for v in pair)
    outs = [None] * (2 + len(dyn))
    if ct is None:
        return outs
    params = dict(window_strides=window_strides, pads=_pads(padding, dyn[:npad]),
                  lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                  dimension_numbers=dimension_numbers, feature_group_count=feature_group_count,
                  batch_group_count=batch_group_count)
    if is_undefined(lhs) and is_undefined(rhs):
        raise AssertionError("conv_general_dilated of two linear values is not linear")
    if is_undefined(lhs):
        outs[0] = _transpose_lhs(ct, rhs, lhs.aval, **params)
    else:
        outs[1] = _transpose_rhs(ct, lhs, rhs.aval, **params)
    return outs


transpose_rules[_C.conv_general_dilated_p] = _conv_t
