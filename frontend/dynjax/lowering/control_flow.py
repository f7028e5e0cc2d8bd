"""Lowering of the control-flow primitives to ``stablehlo.while`` and ``stablehlo.case``.

Loop constants are used inside the regions directly (StableHLO regions may refer to values
defined above them), so dims taken from constants refine to constants at specialization;
only the loop state is carried through the while's operands. Carried types come from the body
jaxpr's input types (``?`` wherever a dim is a variable), and values entering or leaving
a region are cast to them; after specialization every type is static again, except for
loops that resize their carried arrays, which the runtime drives from the host.
"""
from __future__ import annotations

from typing import List, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from ..control_flow.primitives import cond_p, for_loop_p, passthrough_results, scan_p, while_loop_p
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
    """A ``stablehlo.while`` that carries the counter and the loop's state; the bound and the
    step are used from above (they do not change). A constant step gives the condition one
    comparison, as jax's ``fori_loop`` has: XLA's CPU runtime runs each op of the condition
    as a step of its own at every iteration (a 10-step loop over 557 elements ran in 37 us
    against jax's 15 with the direction chosen on the device)."""
    nc = body_nconsts
    consts, (lower, upper, step, _), carries = args[:nc], args[nc:nc + 4], args[nc + 4:]
    body_types = [ir_type(v.aval) for v in body_jaxpr.invars]
    carry_types = [_scalar_i64()] + body_types[nc + 1:]
    sign = _constant_sign(step)

    def cond_fn(c, a):
        i = a[0]
        if sign is not None:   # (a zero step counts down, as the select below has it)
            return c.compare(i, upper, "LT" if sign > 0 else "GT")
        up_cond = c.compare(i, upper, "LT")
        down_cond = c.compare(i, upper, "GT")
        positive = c.compare(step, c.constant(0, _I64), "GT")
        return hlo.SelectOp(positive, up_cond, down_cond).result

    def body_fn(c, a):
        i = a[0]
        outs = c.lower_jaxpr(body_jaxpr, list(consts) + [i] + list(a[1:]))
        return [hlo.AddOp(i, step).result] + list(outs)

    res = _while(ctx, carry_types, [lower] + list(carries), cond_fn, body_fn)
    return _passthrough(eqn, res[1:], args)


def _constant_sign(value: ir.Value):
    """-1, 0 or 1: the sign of a scalar ``stablehlo.constant`` (None for any other value)."""
    try:
        op = value.owner
        if op.name != "stablehlo.constant":
            return None
        attr = ir.DenseIntElementsAttr(op.attributes["value"])
        v = int(attr[0]) if len(attr) else int(attr.get_splat_value())
    except Exception:
        return None
    return (v > 0) - (v < 0)


@register_lowering(while_loop_p)
def _while_loop(ctx, eqn, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts, nimplicit,
                preserve_dimensions):
    cc, bc = cond_nconsts, body_nconsts
    cconsts, bconsts, carries = args[:cc], args[cc:cc + bc], args[cc + bc:]
    carry_types = [ir_type(v.aval) for v in body_jaxpr.invars[bc:]]

    def cond_fn(c, a):
        (p,) = c.lower_jaxpr(cond_jaxpr, list(cconsts) + list(a))
        return p

    def body_fn(c, a):
        return c.lower_jaxpr(body_jaxpr, list(bconsts) + list(a))

    return _passthrough(eqn, _while(ctx, carry_types, list(carries), cond_fn, body_fn), args)


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
    # A scan of length 0 never runs its body, but the body's row slices and updates must
    # still be valid ops: give xs and the ys buffers one spare row.
    xs = [_pad_one_row(ctx, x) for x in xs]
    # max(n, 1) rows, not n + 1: at n >= 1 the buffer is exactly the result (no copy of it)
    rows = hlo.MaxOp(ctx.dim_value(length), ctx.constant(1, _I64)).result
    xs_types = [x.type for x in xs]
    ys_init = [ctx.full(0, v.aval.dtype, [rows] + list(v.aval.shape[1:])) for v in ys_vars]
    ys_buf_types = [ir.RankedTensorType(y.type) for y in ys_init]
    carry_types = [_scalar_i64(), _scalar_i64()] + body_types[nc:nc + num_carry] + xs_types + ys_buf_types

    def cond_fn(c, a):
        return c.compare(a[0], a[1], "LT")

    def body_fn(c, a):
        t, n = a[0], a[1]
        cr = a[2:2 + num_carry]
        xs_ = a[2 + num_carry:2 + num_carry + len(xs)]
        ys_ = a[2 + num_carry + len(xs):]
        pos = hlo.SubtractOp(hlo.SubtractOp(n, t).result, c.constant(1, _I64)).result if reverse else t
        slices = [_take_row(c, x, pos) for x in xs_]
        outs = c.lower_jaxpr(jaxpr, list(consts) + list(cr) + slices)
        new_carry, ys_out = outs[:num_carry], outs[num_carry:]
        new_ys = []
        for buf, y in zip(ys_, ys_out):
            dims = list(c.dim_values(y))
            y1 = c.reshape(y, [1] + dims)
            zeros = [c.constant(0, _I64)] * len(dims)
            new_ys.append(hlo.DynamicUpdateSliceOp(buf, y1, [pos] + zeros).result)
        one = c.constant(1, _I64)
        return [hlo.AddOp(t, one).result, n] + list(new_carry) + list(xs_) + new_ys

    res = _while(ctx, carry_types, [ctx.constant(0, _I64), length] + list(carries) + list(xs) + ys_init,
                 cond_fn, body_fn)
    k = 2
    ys = [_leading_rows(ctx, buf, length, v.aval, t)
          for buf, v, t in zip(res[k + num_carry + len(xs):], ys_vars, ys_types)]
    return _passthrough(eqn, res[k:k + num_carry], args) + ys


def _leading_rows(c: LoweringContext, buf: ir.Value, n: ir.Value, aval, result_type) -> ir.Value:
    """``buf[:n]`` (``real_dynamic_slice`` with constant starts, which refines)."""
    rank = len(aval.shape)
    start = c.constant(np.zeros(rank, np.int64), _I64)
    limit = c.shape_tensor([n] + list(c.dim_values(buf))[1:])
    strides = c.constant(np.ones(rank, np.int64), _I64)
    return hlo.RealDynamicSliceOp(result_type, buf, start, limit, strides).result


def _passthrough(eqn, results, operands):
    """Loop results that the body never changes are their initial operands: returning those
    lets later shapes that depend on them refine to constants."""
    results = list(results)
    for k, j in passthrough_results(eqn):
        if k < len(results) and results[k].type == operands[j].type:
            results[k] = operands[j]
    return results


def _pad_one_row(c: LoweringContext, x: ir.Value) -> ir.Value:
    """``x`` with one extra (zero) row when its leading dim may be 0."""
    t = ir.RankedTensorType(x.type)
    if not t.is_dynamic_dim(0) and t.get_dim_size(0) > 0:
        return x
    zero = hlo.ConvertOp(ir.RankedTensorType.get([], t.element_type), c.constant(0, _I32)).result
    rank = t.rank
    return hlo.PadOp(x, zero, [0] * rank, [1] + [0] * (rank - 1), [0] * rank).result


def _take_row(c: LoweringContext, x: ir.Value, pos: ir.Value) -> ir.Value:
    """``x[pos]`` for a run-time ``pos``: a ``dynamic_slice`` of one row (``dynamic_gather``
    when other dims are dynamic, which refines to a static gather), then a reshape."""
    t = ir.RankedTensorType(x.type)
    rank = t.rank
    dims = list(c.dim_values(x))[1:]
    zeros = [c.constant(0, _I64)] * (rank - 1)
    if all(isinstance(d, (int, np.integer)) for d in dims):
        row = hlo.DynamicSliceOp(x, [pos] + zeros, [1] + [int(d) for d in dims]).result
    else:
        dn = hlo.GatherDimensionNumbers.get(offset_dims=list(range(rank)), collapsed_slice_dims=[],
                                            operand_batching_dims=[], start_indices_batching_dims=[],
                                            start_index_map=list(range(rank)), index_vector_dim=0)
        dyn = ir.ShapedType.get_dynamic_size()
        rt = ir.RankedTensorType.get([1] + [int(d) if isinstance(d, (int, np.integer)) else dyn for d in dims],
                                     t.element_type)
        row = hlo.DynamicGatherOp(x, c.shape_tensor([pos] + zeros), c.shape_tensor([1] + dims), dn,
                                  results=[rt]).result
    return c.reshape(row, dims)
