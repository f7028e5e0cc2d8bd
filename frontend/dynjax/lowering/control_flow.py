"""Lowering of the control-flow primitives to ``stablehlo.while`` and ``stablehlo.case``.

Loops carry everything their body needs (constants included) through the while's
operands, so regions only use their block arguments. Carried types come from the body
jaxpr's input types (``?`` wherever a dim is a variable), and values entering or leaving
a region are cast to them; after specialization every type is static again, except for
loops that resize their carried arrays, which the runtime drives from the host.
"""
from __future__ import annotations

from typing import List, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from ..control_flow.primitives import cond_p, for_loop_p, scan_p, while_loop_p
from .context import LoweringContext, ir_type, tensor_type
from .core import register_lowering

_I64 = np.dtype("int64")
_I32 = np.dtype("int32")


def _while(ctx: LoweringContext, carry_types: Sequence[ir.Type], inits: Sequence[ir.Value],
           cond_fn, body_fn) -> List[ir.Value]:
    """Emit ``stablehlo.while``: ``cond_fn(ctx, args) -> i1 value``, ``body_fn(ctx, args) -> values``."""
    inits = [ctx.cast(v, t) for v, t in zip(inits, carry_types)]
    op = hlo.WhileOp(list(carry_types), inits)
    cblock = op.cond.blocks.append(*carry_types)
    with ir.InsertionPoint(cblock):
        hlo.ReturnOp([cond_fn(ctx.nested(), list(cblock.arguments))])
    bblock = op.body.blocks.append(*carry_types)
    with ir.InsertionPoint(bblock):
        outs = body_fn(ctx.nested(), list(bblock.arguments))
        hlo.ReturnOp([ctx.cast(v, t) for v, t in zip(outs, carry_types)])
    return list(op.results)


def _scalar_i64() -> ir.Type:
    return tensor_type((), _I64)


@register_lowering(for_loop_p)
def _for_loop(ctx, eqn, *args, body_jaxpr, body_nconsts, nimplicit, apply_reverse_transform,
              preserve_dimensions):
    nc = body_nconsts
    consts, (lower, upper, step, _), carries = args[:nc], args[nc:nc + 4], args[nc + 4:]
    body_types = [ir_type(v.aval) for v in body_jaxpr.invars]
    carry_types = [_scalar_i64()] * 3 + body_types[:nc] + body_types[nc + 1:]
    def cond_fn(c, a):
        i, up, st = a[:3]
        up_cond = c.compare(i, up, "LT")
        down_cond = c.compare(i, up, "GT")
        positive = c.compare(st, c.constant(0, _I64), "GT")
        return hlo.SelectOp(positive, up_cond, down_cond).result

    def body_fn(c, a):
        i, up, st = a[:3]
        cs, rest = a[3:3 + nc], a[3 + nc:]
        outs = c.lower_jaxpr(body_jaxpr, list(cs) + [i] + list(rest))
        return [hlo.AddOp(i, st).result, up, st] + list(cs) + list(outs)

    res = _while(ctx, carry_types, [lower, upper, step] + list(consts) + list(carries), cond_fn, body_fn)
    return res[3 + nc:]


@register_lowering(while_loop_p)
def _while_loop(ctx, eqn, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts, nimplicit,
                preserve_dimensions):
    cc, bc = cond_nconsts, body_nconsts
    cond_types = [ir_type(v.aval) for v in cond_jaxpr.invars[:cc]]
    body_types = [ir_type(v.aval) for v in body_jaxpr.invars]
    carry_types = cond_types + body_types

    def cond_fn(c, a):
        (p,) = c.lower_jaxpr(cond_jaxpr, list(a[:cc]) + list(a[cc + bc:]))
        return p

    def body_fn(c, a):
        outs = c.lower_jaxpr(body_jaxpr, list(a[cc:]))
        return list(a[:cc + bc]) + list(outs)

    res = _while(ctx, carry_types, list(args), cond_fn, body_fn)
    return res[cc + bc:]


@register_lowering(cond_p)
def _cond(ctx, eqn, index, *operands, branches):
    n = len(branches)
    out_types = [ir_type(v.aval) for v in eqn.outvars]
    if n == 1:
        return ctx.lower_jaxpr(branches[0], list(operands))
    # clamp like the impl (stablehlo.case runs the last branch for any out-of-range index)
    idx = hlo.ClampOp(ctx.constant(0, _I64), index, ctx.constant(n - 1, _I64)).result
    idx = hlo.ConvertOp(tensor_type((), _I32), idx).result
    op = hlo.CaseOp(out_types, idx, n)
    for k, br in enumerate(branches):
        block = op.branches[k].blocks.append()
        with ir.InsertionPoint(block):
            outs = ctx.lower_jaxpr(br, list(operands))
            hlo.ReturnOp([ctx.cast(v, t) for v, t in zip(outs, out_types)])
    return list(op.results)


@register_lowering(scan_p)
def _scan(ctx, eqn, *args, jaxpr, num_consts, num_carry, nimplicit, reverse, preserve_dimensions):
    nc = num_consts
    consts, length, rest = args[:nc], args[nc], args[nc + 1:]
    carries, xs = rest[:num_carry], rest[num_carry:]
    body_types = [ir_type(v.aval) for v in jaxpr.invars]
    ys_vars = eqn.outvars[num_carry:]
    ys_types = [ir_type(v.aval) for v in ys_vars]
    ys_init = [ctx.full(0, v.aval.dtype, v.aval.shape) for v in ys_vars]
    xs_types = [x.type for x in xs]
    carry_types = ([_scalar_i64(), _scalar_i64()] + body_types[:nc] + body_types[nc:nc + num_carry]
                   + xs_types + ys_types)
    x_vars = jaxpr.invars[nc + num_carry:]

    def cond_fn(c, a):
        return c.compare(a[0], a[1], "LT")

    def body_fn(c, a):
        t, n = a[0], a[1]
        cs = a[2:2 + nc]
        cr = a[2 + nc:2 + nc + num_carry]
        xs_ = a[2 + nc + num_carry:2 + nc + num_carry + len(xs)]
        ys_ = a[2 + nc + num_carry + len(xs):]
        pos = hlo.SubtractOp(hlo.SubtractOp(n, t).result, c.constant(1, _I64)).result if reverse else t
        slices = []
        for xv, x in zip(x_vars, xs_):
            rank = ir.RankedTensorType(x.type).rank
            zeros = [c.constant(0, _I64)] * (rank - 1)
            sizes = [1] + list(c.dim_values(x))[1:]
            sl = _dynamic_slice(c, x, [pos] + zeros, sizes)
            slices.append(c.reshape(sl, sizes[1:]))
        outs = c.lower_jaxpr(jaxpr, list(cs) + list(cr) + slices)
        new_carry, ys_out = outs[:num_carry], outs[num_carry:]
        new_ys = []
        for buf, y in zip(ys_, ys_out):
            dims = list(c.dim_values(y))
            y1 = c.reshape(y, [1] + dims)
            zeros = [c.constant(0, _I64)] * len(dims)
            new_ys.append(hlo.DynamicUpdateSliceOp(buf, y1, [pos] + zeros).result)
        one = c.constant(1, _I64)
        return [hlo.AddOp(t, one).result, n] + list(cs) + list(new_carry) + list(xs_) + new_ys

    res = _while(ctx, carry_types, [ctx.constant(0, _I64), length] + list(consts) + list(carries)
                 + list(xs) + ys_init, cond_fn, body_fn)
    k = 2 + nc
    return res[k:k + num_carry] + res[k + num_carry + len(xs):]


def _dynamic_slice(c: LoweringContext, x: ir.Value, starts: Sequence[ir.Value], sizes) -> ir.Value:
    """``stablehlo.dynamic_slice`` when sizes are static, ``real_dynamic_slice`` otherwise."""
    et = ir.RankedTensorType(x.type).element_type
    if all(isinstance(s, (int, np.integer)) for s in sizes):
        t = ir.RankedTensorType.get([int(s) for s in sizes], et)
        return hlo.DynamicSliceOp(t, x, list(starts), [int(s) for s in sizes]).result
    dyn = ir.ShapedType.get_dynamic_size()
    t = ir.RankedTensorType.get([int(s) if isinstance(s, (int, np.integer)) else dyn for s in sizes], et)
    t1 = tensor_type((1,), _I64)
    start_t = hlo.ConcatenateOp([hlo.ReshapeOp(t1, s).result for s in starts], 0).result
    size_t = c.shape_tensor(sizes)
    limit_t = hlo.AddOp(start_t, size_t).result
    ones = c.constant(np.ones(len(sizes), np.int64), _I64)
    return hlo.RealDynamicSliceOp(t, x, start_t, limit_t, ones).result
