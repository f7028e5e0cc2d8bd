"""Lowering rules of the reductions (``reduce_sum`` / ``prod`` / ``max`` / ``min`` / ``and``
/ ``or``, ``argmax`` / ``argmin``, ``cumsum`` / ``cumprod``, ...): ``stablehlo.reduce`` with
the reducer built from rank-0 block arguments, numpy's signed-zero and NaN conventions
(split out of ``rules.py``)."""
from __future__ import annotations

from typing import Callable, List, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from ..core.avals import is_complex_dtype, is_float_dtype, real_dtype
from ..lax import primitives as P
from .context import LoweringContext, tensor_type
from .core import register_lowering
from .manual import program_devices
from .rules import _BOOL, _I64, _in, _out, _scalar_type

# ----------------------------------------------------------------------------------------------
# Reductions
# ----------------------------------------------------------------------------------------------

def reduce(ctx: LoweringContext, operands: Sequence[ir.Value], inits: Sequence[ir.Value], axes: Sequence[int],
           body: Callable, result_types: Sequence[ir.Type]) -> List[ir.Value]:
    """``stablehlo.reduce`` of ``operands`` over ``axes``; ``body(accs, xs) -> values`` builds
    the reducer from the rank-0 block arguments."""
    op = hlo.ReduceOp(list(result_types), list(operands), list(inits), list(axes))
    st = [_scalar_type(x) for x in operands]
    block = op.body.blocks.append(*(st + st))
    n = len(operands)
    with ir.InsertionPoint(block):
        hlo.ReturnOp(list(body(list(block.arguments)[:n], list(block.arguments)[n:])))
    return list(op.results)


def _identity(name, dtype):
    dt = np.dtype(dtype)
    if name == "sum":
        return False if dt == _BOOL else 0
    if name == "prod":
        return True if dt == _BOOL else 1
    if dt == _BOOL:
        return name == "min"
    if is_float_dtype(dt):
        return -np.inf if name == "max" else np.inf
    info = np.iinfo(dt)
    return info.min if name == "max" else info.max


_REDUCERS = {
    "sum": (hlo.OrOp, hlo.AddOp), "prod": (hlo.AndOp, hlo.MulOp),
    "max": (hlo.OrOp, hlo.MaxOp), "min": (hlo.AndOp, hlo.MinOp),
}


def _reduction(prim, name):
    def rule(ctx, eqn, x, *, axes, keep_nan=True):
        a = _in(eqn)
        out = x
        if axes:
            bool_op, op = _REDUCERS[name]
            op = bool_op if a.dtype == _BOOL else op
            init = ctx.constant(_identity(name, a.dtype), a.dtype)
            body = lambda acc, xs: [op(acc[0], xs[0]).result]  # noqa: E731
            # a float max / min that must give NaN when a NaN is reduced (unless the caller
            # said that its result does not depend on it: ``lax.api.reduce_max_shift``)
            keep_nan = keep_nan and name in ("max", "min") and is_float_dtype(a.dtype)
            partitioned = program_devices() is not None
            if keep_nan and not partitioned:
                body = _nan_keeping(op)
            out = reduce(ctx, [x], [init], sorted(axes), body, [ctx.ir_type(_out(eqn))])[0]
            if keep_nan and partitioned:
                out = _nan_where_any(ctx, x, out, sorted(axes), _out(eqn), a.dtype)
        if name == "sum" and (is_float_dtype(a.dtype) or is_complex_dtype(a.dtype)):
            out = _no_negative_zero(ctx, out, a.dtype)
        return out
    register_lowering(prim, rule)


def _nan_keeping(op):
    """The body of a float max / min reduction of a program on one device: ``op``, and NaN
    wherever the running value is NaN. ``stablehlo.maximum`` alone propagates NaN, but
    XLA:CPU hands a reduction whose body is that one operation to YNNPACK, which drops NaN (a
    max over a row of 64 or more holding a NaN came out a number:
    ``tests/test_nan_reductions.py``); with the select, XLA emits the reduction itself."""
    def body(acc, xs):
        a, x = acc[0], xs[0]
        m = op(a, x).result
        return [hlo.SelectOp(hlo.CompareOp(a, a, hlo.ComparisonDirectionAttr.get("NE"),
                                           compare_type=hlo.ComparisonTypeAttr.get("FLOAT")).result, a, m).result]
    return body


def _nan_where_any(ctx, x, out, axes, out_aval, dtype):
    """``out`` (a max / min of ``x`` over ``axes``) with NaN where the reduced elements hold one,
    counted by a sum: for a program partitioned over devices, whose partitioner splits only
    reductions of one known operation (a max beside a sum of NaN counts; ``_nan_keeping``'s
    body is not one it knows)."""
    is_nan = ctx.compare(x, x, "NE", dtype)
    count = reduce(ctx, [hlo.ConvertOp(x.type, is_nan).result], [ctx.constant(0, dtype)], axes,
                   lambda acc, xs: [hlo.AddOp(acc[0], xs[0]).result], [ctx.ir_type(out_aval)])[0]
    zero = ctx.broadcast_scalar_like(ctx.constant(0, dtype), out)
    nan = ctx.broadcast_scalar_like(ctx.constant(np.nan, dtype), out)
    return hlo.SelectOp(ctx.compare(count, zero, "GT", dtype), nan, out).result


def _no_negative_zero(ctx, x, dtype):
    """-0.0 as +0.0 (in both parts of a complex number). numpy's sum starts from +0.0, so a zero
    sum is +0.0 even when every term is -0.0 (also over no axis at all); XLA drops the +0.0
    initial value of a reduction, which keeps the sign of a lone -0.0."""
    if is_complex_dtype(dtype):
        part = real_dtype(dtype)
        return hlo.ComplexOp(_no_negative_zero(ctx, hlo.RealOp(x).result, part),
                             _no_negative_zero(ctx, hlo.ImagOp(x).result, part)).result
    zero = ctx.broadcast_scalar_like(ctx.constant(0.0, dtype), x)
    return hlo.SelectOp(ctx.compare(x, zero, "EQ", dtype), zero, x).result


_reduction(P.reduce_sum_p, "sum")
_reduction(P.reduce_prod_p, "prod")
_reduction(P.reduce_max_p, "max")
_reduction(P.reduce_min_p, "min")


def _argminmax(prim, direction):
    def rule(ctx, eqn, x, *, axes, index_dtype):
        a, out = _in(eqn), _out(eqn)
        (axis,) = axes
        dt = a.dtype
        idt = out.dtype
        idx = ctx.iota(idt, a.shape, axis)
        is_float = is_float_dtype(dt)
        init_v = ctx.constant(_identity("max" if direction == "GT" else "min", dt), dt)
        init_i = ctx.constant(np.iinfo(idt).max, idt)

        def body(acc, xs):
            av, ai = acc
            bv, bi = xs
            better = ctx.compare(bv, av, direction, dt)
            if is_float:   # NaN wins (first NaN), as in numpy
                b_nan = ctx.compare(bv, bv, "NE", dt)
                a_nan = ctx.compare(av, av, "NE", dt)
                better = hlo.OrOp(better, hlo.AndOp(b_nan, hlo.NotOp(a_nan).result).result).result
                tie = hlo.OrOp(ctx.compare(bv, av, "EQ", dt), hlo.AndOp(a_nan, b_nan).result).result
            else:
                tie = ctx.compare(bv, av, "EQ", dt)
            first = ctx.compare(bi, ai, "LT", idt)
            take_b = hlo.OrOp(better, hlo.AndOp(tie, first).result).result
            return [hlo.SelectOp(take_b, bv, av).result, hlo.SelectOp(take_b, bi, ai).result]
        vt = tensor_type(out.shape, dt)
        return reduce(ctx, [x, idx], [init_v, init_i], [axis], body, [vt, ctx.ir_type(out)])[1]
    register_lowering(prim, rule)


_argminmax(P.argmax_p, "GT")
_argminmax(P.argmin_p, "LT")


@register_lowering(P.cumsum_p)
def _cumsum(ctx, eqn, x, *, axis, reverse=False):
    a = _in(eqn)
    if a.dtype == _BOOL:   # cumsum with dtype=bool is a running "or"
        xi = ctx.convert(x, np.int32)
        s = _cumsum_value(ctx, xi, a.update(dtype=np.int32), axis, reverse)
        zero = ctx.broadcast_scalar_like(ctx.constant(0, np.int32), s)
        return ctx.compare(s, zero, "NE", np.int32)
    return _cumsum_value(ctx, x, a, axis, reverse)


@register_lowering(P.cumprod_p)
def _cumprod(ctx, eqn, x, *, axis, reverse=False):
    a = _in(eqn)
    if a.dtype == _BOOL:   # a running "and"
        xi = ctx.convert(x, np.int32)
        s = _cumsum_value(ctx, xi, a.update(dtype=np.int32), axis, reverse, "mul")
        zero = ctx.broadcast_scalar_like(ctx.constant(0, np.int32), s)
        return ctx.compare(s, zero, "NE", np.int32)
    return _cumsum_value(ctx, x, a, axis, reverse, "mul")


def _additive_identity(dtype):
    """The zero that ``x + zero == x`` for every x: -0.0 for floats (+0.0 would turn a -0.0
    into +0.0, while numpy's cumsum starts from the first element), 0 for integers."""
    if is_complex_dtype(dtype):
        return complex(-0.0, -0.0)
    if is_float_dtype(dtype):
        return -0.0
    return 0


# the scans' combining operations: (StableHLO op, identity of the dtype)
_SCAN_OPS = {"add": (hlo.AddOp, _additive_identity), "mul": (hlo.MulOp, lambda dtype: 1)}


def _cumsum_value(ctx, x, a, axis, reverse, op="add"):
    """The inclusive scan of ``x`` along ``axis`` with ``op`` ("add": cumsum, "mul": cumprod)."""
    if reverse:
        x = hlo.ReverseOp(x, [axis]).result
    n = a.shape[axis]
    if isinstance(n, int):
        out = _cumsum_static(ctx, x, a, axis, n, op)
    else:
        out = _cumsum_dynamic(ctx, x, a, axis, op)
    if reverse:
        out = hlo.ReverseOp(out, [axis]).result
    return out


def _cumsum_static(ctx, x, a, axis, n, op="add"):
    """Static axis length: ``reduce_window`` with a window of the whole axis, padded low."""
    if n <= 1:
        return x
    combine, identity = _SCAN_OPS[op]
    r = a.ndim
    window = [1] * r
    window[axis] = n
    padding = np.zeros((r, 2), dtype=np.int64)
    padding[axis, 0] = n - 1
    init = ctx.constant(identity(a.dtype), a.dtype)
    t = ctx.ir_type(a)
    rw = hlo.ReduceWindowOp([t], [x], [init], window, window_strides=[1] * r,
                            padding=ir.DenseIntElementsAttr.get(padding, type=tensor_type((r, 2), _I64)))
    st = _scalar_type(x)
    block = rw.body.blocks.append(st, st)
    with ir.InsertionPoint(block):
        hlo.ReturnOp([combine(block.arguments[0], block.arguments[1]).result])
    return rw.results[0]


_CUMSUM_BLOCK = 128


def _cumsum_dynamic(ctx, x, a, axis, op="add"):
    """Dynamic axis length n: a two-level scan. The axis is padded to m = ceil(n / B) blocks
    of B elements and viewed as (m, B); a ``reduce_window`` with the static window B sums
    within each block (XLA turns it into a fast scan), the doubling scan below runs over the
    m block totals only (ceil(log2 m) steps on n / B values) to give each block's offset, and
    the sum of the two is cut back to n. Every shape refines to static at specialization.
    ``op="mul"``: the same with products (cumprod)."""
    combine, identity = _SCAN_OPS[op]
    B = _CUMSUM_BLOCK
    r = a.ndim
    dims = ctx.dim_values(x)
    n = ctx.dim_value(dims[axis])

    def i64(v):
        return ctx.constant(v, _I64)
    m = hlo.DivOp(hlo.AddOp(n, i64(B - 1)).result, i64(B)).result
    gap = hlo.SubtractOp(hlo.MulOp(m, i64(B)).result, n).result
    et = ir.RankedTensorType(x.type).element_type
    zero = ctx.constant(identity(a.dtype), a.dtype)
    dyn = ir.ShapedType.get_dynamic_size()
    padded_t = ir.RankedTensorType.get([dyn if (i == axis or not isinstance(d, int)) else d
                                        for i, d in enumerate(dims)], et)
    lows = ctx.shape_tensor([0] * r)
    padded = hlo.DynamicPadOp(padded_t, x, zero, lows,
                              ctx.shape_tensor([gap if i == axis else 0 for i in range(r)]), lows).result
    bdims = dims[:axis] + [m, B] + dims[axis + 1:]
    blocks = ctx.reshape(padded, bdims)
    # within each block: a window of B over the block axis, padded low
    window = [1] * (r + 1)
    window[axis + 1] = B
    padding = np.zeros((r + 1, 2), dtype=np.int64)
    padding[axis + 1, 0] = B - 1
    rw = hlo.ReduceWindowOp([blocks.type], [blocks], [zero], window, window_strides=[1] * (r + 1),
                            padding=ir.DenseIntElementsAttr.get(padding, type=tensor_type((r + 1, 2), _I64)))
    st = _scalar_type(x)
    block = rw.body.blocks.append(st, st)
    with ir.InsertionPoint(block):
        hlo.ReturnOp([combine(block.arguments[0], block.arguments[1]).result])
    within = rw.results[0]
    # each block's offset: the exclusive scan of the block totals
    tdims = dims[:axis] + [m] + dims[axis + 1:]
    totals_t = ir.RankedTensorType.get([dyn if not isinstance(d, int) else d for d in tdims], et)
    totals = reduce(ctx, [blocks], [zero], [axis + 1],
                    lambda acc, xs: [combine(acc[0], xs[0]).result], [totals_t])[0]
    # exclusive: the inclusive scan shifted by one block, the identity in front
    inclusive = _cumsum_doubling(ctx, totals, a, axis, op)
    shifted = hlo.DynamicPadOp(totals_t, inclusive, zero, ctx.shape_tensor([int(i == axis) for i in range(r)]),
                               ctx.shape_tensor([0] * r), ctx.shape_tensor([0] * r)).result
    offsets = hlo.RealDynamicSliceOp(totals_t, shifted, ctx.shape_tensor([0] * r), ctx.shape_tensor(tdims),
                                     ctx.shape_tensor([1] * r)).result
    keep = [i for i in range(r + 1) if i != axis + 1]
    summed = combine(within, ctx.broadcast(offsets, bdims, keep)).result
    flat = ctx.reshape(summed, dims[:axis] + [hlo.MulOp(m, i64(B)).result] + dims[axis + 1:])
    return hlo.RealDynamicSliceOp(x.type, flat, ctx.shape_tensor([0] * r), ctx.shape_tensor(dims),
                                  ctx.shape_tensor([1] * r)).result


def _cumsum_doubling(ctx, x, a, axis, op="add"):
    """A Hillis-Steele scan in a ``stablehlo.while`` (ceil(log2 n) steps) over a dynamic axis.
    Step s adds x shifted by s along the axis, taken with an element-wise ``gather``
    (static slice sizes of 1) from x padded with one zero in front. Every carried value
    keeps its shape, so the loop refines to static shapes after specialization."""
    r = a.ndim
    dims = ctx.dim_values(x)          # from the value: refines inside loop bodies too
    n = ctx.dim_value(dims[axis])
    # coordinates: coords[..., j] = index along axis j (axis coordinate filled in per step)
    cdims = dims + [1]
    coords = [ctx.iota(_I64, cdims, j) for j in range(r)]
    pos1 = hlo.AddOp(coords[axis], ctx.broadcast_scalar(ctx.constant(1, _I64), cdims)).result  # i + 1
    shift = ctx.broadcast_scalar(ctx.constant(1, _I64), cdims)
    s0 = ctx.constant(1, _I64)
    go0 = ctx.compare(s0, n, "LT", _I64)
    before = coords[:axis]
    after = coords[axis + 1:]
    # The loop test is a carried flag: a plain `s < n` on carried values trips an XLA check
    # in WhileLoopTripCountAnnotator (it expects a constant bound once it matches the pattern).
    state = [x, shift, s0, n, go0, pos1] + before + after
    types = [v.type for v in state]
    w = hlo.WhileOp(types, state)
    cblock = w.cond.blocks.append(*types)
    with ir.InsertionPoint(cblock):
        hlo.ReturnOp([cblock.arguments[4]])
    bblock = w.body.blocks.append(*types)
    with ir.InsertionPoint(bblock):
        xv, sh, s, nn, _, p1 = list(bblock.arguments)[:6]
        rest = list(bblock.arguments)[6:]
        bef, aft = rest[:len(before)], rest[len(before):]
        zero = ctx.constant(_SCAN_OPS[op][1](a.dtype), a.dtype)
        # one zero (the identity) in front along the axis; one extra row at the end of every other axis so
        # that no operand dim is 0 (a size-1 gather slice must fit even when the array is empty)
        low = [1 if i == axis else 0 for i in range(r)]
        high = [0 if i == axis else 1 for i in range(r)]
        padded = hlo.PadOp(xv, zero, low, high, [0] * r,
                           results=[tensor_type([d + 1 if isinstance(d, int) else None for d in dims],
                                                a.dtype)]).result
        # index into padded: max(i + 1 - s, 0); 0 is the zero in front
        k = hlo.ClampOp(ctx.constant(0, _I64), hlo.SubtractOp(p1, sh).result,
                        ctx.constant(np.iinfo(np.int64).max, _I64)).result
        indices = hlo.ConcatenateOp(bef + [k] + aft, r).result
        dn = hlo.GatherDimensionNumbers.get(offset_dims=[], collapsed_slice_dims=list(range(r)),
                                            operand_batching_dims=[], start_indices_batching_dims=[],
                                            start_index_map=list(range(r)), index_vector_dim=r)
        g = hlo.GatherOp(padded, indices, dn, [1] * r).result
        g = ctx.cast(g, xv.type) if g.type != xv.type else g
        new_x = _SCAN_OPS[op][0](xv, g).result
        s2 = hlo.AddOp(s, s).result
        hlo.ReturnOp([new_x, hlo.AddOp(sh, sh).result, s2, nn, ctx.compare(s2, nn, "LT", _I64), p1] + rest)
    return w.results[0]


def _sort_key_less(ctx, a, b, dt):
    """numpy's sort order: for floats, -0.0 == +0.0 (a stable sort keeps their order) and every
    NaN, whatever its sign, after everything else. (TOTALORDER would put -0.0 before +0.0 and
    a NaN with the sign bit set before -inf.)"""
    lt = ctx.compare(a, b, "LT", dt)
    if not is_float_dtype(dt):
        return lt
    a_num = ctx.compare(a, a, "EQ", dt)
    b_nan = ctx.compare(b, b, "NE", dt)
    return hlo.OrOp(lt, hlo.AndOp(a_num, b_nan).result).result


def _sort_key_equal(ctx, a, b, dt):
    eq = ctx.compare(a, b, "EQ", dt)
    if not is_float_dtype(dt):
        return eq
    both_nan = hlo.AndOp(ctx.compare(a, a, "NE", dt), ctx.compare(b, b, "NE", dt)).result
    return hlo.OrOp(eq, both_nan).result


@register_lowering(P.sort_p)
def _sort(ctx, eqn, *operands, dimension, num_keys):
    avs = [v.aval for v in eqn.invars]
    types = [ctx.ir_type(v.aval) for v in eqn.outvars]
    op = hlo.SortOp(types, list(operands), dimension=dimension, is_stable=True)
    st = [_scalar_type(x) for x in operands]
    block = op.comparator.blocks.append(*[t for s in st for t in (s, s)])
    with ir.InsertionPoint(block):
        args = list(block.arguments)
        # lexicographic "less than" over the keys, each in numpy's order (_sort_key_less)
        result = None
        for k in reversed(range(num_keys)):
            lhs, rhs = args[2 * k], args[2 * k + 1]
            dt = avs[k].dtype
            lt = _sort_key_less(ctx, lhs, rhs, dt)
            if result is None:
                result = lt
            else:
                eq = _sort_key_equal(ctx, lhs, rhs, dt)
                result = hlo.OrOp(lt, hlo.AndOp(eq, result).result).result
        hlo.ReturnOp([result])
    return list(op.results)


