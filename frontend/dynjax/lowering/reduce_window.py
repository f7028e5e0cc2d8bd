"""Lowering of the ``reduce_window`` primitive (``dynjax.lax.reduce_window``).

The operand is dilated and padded with the monoid's identity by one ``stablehlo.dynamic_pad``
(interior padding ``base_dilation - 1``; pad amounts may be dim values; refinement folds it
into ``stablehlo.pad``), then one ``stablehlo.reduce_window`` with the static window, strides
and window dilation reduces it; its result has ``?`` for dynamic dims and refines at
specialization as the scans' ``reduce_window`` does.

On a dynamic axis the padded length may be shorter than the window (a result of size 0): the
high padding then grows by ``max(window - padded, 0)`` so that the op's shape is valid for
every size, and the result is cut to the primitive's size with a ``real_dynamic_slice``. A
static result with an empty axis is a constant.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from ..lax.reduce_window import identity_of, reduce_window_p
from .context import is_static, tensor_type
from .core import register_lowering

_I64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)

_OPS = {"sum": (hlo.AddOp, hlo.OrOp), "prod": (hlo.MulOp, hlo.AndOp), "max": (hlo.MaxOp, hlo.MaxOp),
        "min": (hlo.MinOp, hlo.MinOp)}


def _scalar_type(x):
    return ir.RankedTensorType.get([], ir.RankedTensorType(x.type).element_type)


@register_lowering(reduce_window_p)
def _reduce_window(ctx, eqn, x, *dyn, kind, window_dimensions, window_strides, padding, base_dilation,
                   window_dilation, out_shape):
    a, out = eqn.invars[0].aval, eqn.outvars[0].aval
    r = a.ndim
    if is_static(out.shape) and 0 in out.shape:
        return ctx.full(identity_of(kind, a.dtype), a.dtype, out.shape)
    npad = sum(v is None for pair in padding for v in pair)
    pad_atoms = iter(eqn.invars[1:1 + npad])
    pads = [[v if v is not None else next(pad_atoms) for v in pair] for pair in padding]
    ident = ctx.constant(identity_of(kind, a.dtype), a.dtype)
    i64 = lambda v: ctx.constant(v, _I64)  # noqa: E731
    dims = ctx.dim_values(x, a)
    dynamic = [not isinstance(d, (int, np.integer)) or not isinstance(out.shape[k], (int, np.integer))
               or any(not isinstance(p, (int, np.integer)) for p in pads[k]) for k, d in enumerate(dims)]
    highs = []
    for k in range(r):
        lo, hi = pads[k]
        if not dynamic[k]:
            highs.append(hi)
            continue
        # padded = dilated + lo + hi; grow hi so that the window always fits
        n = ctx.dim_value(dims[k])
        d = base_dilation[k]
        dilated = n if d == 1 else hlo.AddOp(
            hlo.MulOp(hlo.MaxOp(hlo.SubtractOp(n, i64(1)).result, i64(0)).result, i64(d - 1)).result, n).result
        padded = hlo.AddOp(hlo.AddOp(dilated, ctx.dim_value(lo)).result, ctx.dim_value(hi)).result
        window = (window_dimensions[k] - 1) * window_dilation[k] + 1
        extra = hlo.MaxOp(hlo.SubtractOp(i64(window), padded).result, i64(0)).result
        highs.append(hlo.AddOp(ctx.dim_value(hi), extra).result)
    lows = [p[0] for p in pads]
    needs_pad = any(dynamic) or any(v != 0 for v in lows + highs) or any(d != 1 for d in base_dilation)
    et = ir.RankedTensorType(x.type).element_type
    if needs_pad:
        padded_t = ir.RankedTensorType.get(
            [ir.ShapedType.get_dynamic_size() if dynamic[k] else
             max((dims[k] - 1) * base_dilation[k] + 1, 0) + lows[k] + highs[k] if dims[k] else lows[k] + highs[k]
             for k in range(r)], et)
        x = hlo.DynamicPadOp(padded_t, x, ident, ctx.shape_tensor(lows), ctx.shape_tensor(highs),
                             ctx.shape_tensor([d - 1 for d in base_dilation])).result
    rw_shape = [None if dynamic[k] else out.shape[k] for k in range(r)]
    rw_t = tensor_type(rw_shape, a.dtype)
    rw = hlo.ReduceWindowOp([rw_t], [x], [ident], list(window_dimensions),
                            window_strides=list(window_strides), window_dilations=list(window_dilation))
    st = _scalar_type(x)
    block = rw.body.blocks.append(st, st)
    op = _OPS[kind][1 if a.dtype == _BOOL else 0]
    with ir.InsertionPoint(block):
        hlo.ReturnOp([op(block.arguments[0], block.arguments[1]).result])
    res = rw.results[0]
    if not any(dynamic):
        return res
    zeros = ctx.shape_tensor([0] * r)
    return hlo.RealDynamicSliceOp(ctx.ir_type(out), res, zeros, ctx.shape_tensor(list(out.shape)),
                                  ctx.shape_tensor([1] * r)).result

