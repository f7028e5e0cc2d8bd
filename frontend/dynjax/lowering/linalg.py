"""Lowering of the linear-algebra primitives (``dynjax.lax.linalg``) to jaxlib's LAPACK kernels.

Every decomposition is a ``stablehlo.custom_call`` of a typed-FFI target that jaxlib ships for
XLA:CPU (``api_version = 4``, attributes in a dictionary ``backend_config``)::

    %0:2 = stablehlo.custom_call @lapack_dpotrf_ffi(%a, %shape0, %shape1)
             {api_version = 4 : i32, backend_config = {uplo = 76 : ui8},
              indices_of_shape_operands = dense<[1, 2]> : tensor<2xi64>,
              operand_layouts = [...], result_layouts = [...]}
           : (tensor<?x?xf64>, tensor<2xi64>, tensor<0xi64>) -> (tensor<?x?xf64>, tensor<i32>)

* Matrices are column-major for LAPACK: operands and results of the full rank get the layout
  ``(r-2, r-1, r-3, ..., 0)`` (minor to major); XLA inserts the transposes. Leading axes are
  a batch that the kernels loop over.
* **Dynamic shapes.** A result type with ``?`` dims carries its shape as an extra
  ``tensor<Nxi64>`` operand, listed in ``indices_of_shape_operands`` (the convention of
  ``jax.export``). At specialization, jaxlib's ``refine_polymorphic_shapes`` folds those shape
  operands to constants, gives the custom call static result types and drops the extra
  operands, so the module XLA compiles is the plain static call.
* The targets are registered with XLA by ``dynjax.runtime.ensure_lapack_targets`` (the runtime
  calls it before compiling a module that mentions ``lapack_``); this module only emits ops.
* ``info`` results: a failed factorization (not positive definite, no convergence) gives NaNs,
  as in JAX (``NaN + NaN j`` for ``eig``, whose results are complex). An exactly singular
  matrix in ``solve`` divides by zero (infinities / NaNs).
* ``geev`` (``eig``) takes ``compute_left`` / ``compute_right`` attributes (``ui8``, ``'V'`` to
  compute the vectors, ``'N'`` not to) and always has both vector results (``(..., n, n)``,
  complex even for a real operand: jaxlib unpacks LAPACK's conjugate pairs); a real operand
  gives the eigenvalues as two real results ``wr`` and ``wi``, a complex operand as one.
"""
from __future__ import annotations

from typing import List, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from ..core.avals import complex_dtype, is_complex_dtype, real_dtype
from ..lax import linalg as L
from .context import is_static, tensor_type
from .core import register_lowering
from .reductions import reduce

_I32 = np.dtype(np.int32)
_I64 = np.dtype(np.int64)
_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
           np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}


# ----------------------------------------------------------------------------------------------
# the custom call
# ----------------------------------------------------------------------------------------------
def _layout(rank: int, matrix: bool) -> List[int]:
    if matrix and rank >= 2:
        return [rank - 2, rank - 1] + list(range(rank - 3, -1, -1))
    return list(range(rank - 1, -1, -1))


def _layouts_attr(layouts) -> ir.ArrayAttr:
    index = ir.IndexType.get()
    return ir.ArrayAttr.get([ir.DenseIntElementsAttr.get(np.asarray(l, dtype=np.int64), type=index)
                             for l in layouts])


def _u8(c: str) -> ir.Attribute:
    return ir.IntegerAttr.get(ir.IntegerType.get_unsigned(8), ord(c))


def lapack_target(base: str, dtype) -> str:
    """``lapack_<s|d|c|z><base>_ffi`` for a LAPACK routine and an operand dtype."""
    return f"lapack_{_PREFIX[np.dtype(dtype)]}{base}_ffi"


def _rank(v: ir.Value) -> int:
    return ir.RankedTensorType(v.type).rank


def ffi_call(ctx, target: str, operands: Sequence[ir.Value], results, attrs=None) -> List[ir.Value]:
    """Emit a typed-FFI ``custom_call`` of ``target``; ``results`` is a list of ``(dims, dtype)``
    whose dims are ints, dim Vars or ``tensor<i64>`` values. Dynamic result shapes are passed
    as shape operands (``indices_of_shape_operands``)."""
    operands = list(operands)
    top = max(_rank(v) for v in operands)
    op_layouts = [_layout(_rank(v), _rank(v) == top) for v in operands]
    res_types = [tensor_type([d if isinstance(d, (int, np.integer)) else None for d in dims], dt)
                 for dims, dt in results]
    res_layouts = [_layout(len(dims), len(dims) == top) for dims, _ in results]
    dynamic = not all(is_static(dims) for dims, _ in results)
    shape_ops = []
    if dynamic:
        shape_ops = [ctx.shape_tensor(list(dims)) for dims, _ in results]
        op_layouts += [[0]] * len(shape_ops)
    config = ir.DictAttr.get(dict(attrs or {}))
    op = hlo.CustomCallOp(res_types, operands + shape_ops, target,
                          has_side_effect=False, backend_config=config,
                          api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4),
                          operand_layouts=_layouts_attr(op_layouts),
                          result_layouts=_layouts_attr(res_layouts))
    if dynamic:
        idx = np.arange(len(operands), len(operands) + len(shape_ops), dtype=np.int64)
        op.operation.attributes["indices_of_shape_operands"] = ir.DenseIntElementsAttr.get(idx)
    return list(op.results)


# ----------------------------------------------------------------------------------------------
# small helpers on (possibly dynamic) tensors
# ----------------------------------------------------------------------------------------------
def _dims(aval):
    return list(aval.shape)


def _triangle_mask(ctx, dims, lower: bool, strict: bool = False) -> ir.Value:
    """``i >= j`` (lower) / ``i <= j`` (upper) over the last two axes of ``dims``."""
    r = len(dims)
    rows = ctx.iota(_I64, dims, r - 2)
    cols = ctx.iota(_I64, dims, r - 1)
    direction = ("GT" if strict else "GE") if lower else ("LT" if strict else "LE")
    return ctx.compare(rows, cols, direction, _I64)


def _select(ctx, pred, x, y):
    return hlo.SelectOp(pred, x, y).result


def _zeros(ctx, dtype, dims):
    return ctx.full(0, dtype, dims)


def _where_ok(ctx, info, x, dims, dtype, nbatch, nan=np.nan):
    """``x`` where the batch member's ``info == 0``, ``nan`` elsewhere."""
    ok = ctx.compare(info, ctx.broadcast_scalar(ctx.constant(0, _I32), dims[:nbatch]), "EQ", _I32)
    okb = ctx.broadcast(ok, dims, list(range(nbatch)))
    nan = ctx.full(nan, dtype, dims)
    return _select(ctx, okb, x, nan)


def _slice_last2(ctx, x, dims, rows, cols):
    """``x[..., :rows, :cols]`` (``rows`` / ``cols`` dims, possibly dynamic)."""
    r = len(dims)
    starts = [0] * r
    limits = list(dims[:-2]) + [rows, cols]
    out_t = tensor_type([d if isinstance(d, (int, np.integer)) else None for d in limits],
                        _elem_dtype(x))
    if is_static(dims) and is_static(limits):
        return hlo.SliceOp(x, starts, [int(l) for l in limits], [1] * r).result
    return hlo.RealDynamicSliceOp(out_t, x, ctx.shape_tensor(starts), ctx.shape_tensor(limits),
                                  ctx.shape_tensor([1] * r)).result



def _elem_dtype(v: ir.Value):
    et = ir.RankedTensorType(v.type).element_type
    s = str(et)
    return {"f32": np.float32, "f64": np.float64, "complex<f32>": np.complex64,
            "complex<f64>": np.complex128, "i32": np.int32, "i64": np.int64, "i1": np.bool_}[s]


def _reduce_last(ctx, x, dims, kind: str, dtype):
    """Sum or product over the last axis."""
    dt = np.dtype(dtype)
    init = ctx.constant(0 if kind == "sum" else 1, dt)
    combine = hlo.AddOp if kind == "sum" else hlo.MulOp
    out_t = tensor_type([d if isinstance(d, (int, np.integer)) else None for d in dims[:-1]], dt)
    return reduce(ctx, [x], [init], [len(dims) - 1],
                  lambda accs, xs: [combine(accs[0], xs[0]).result], [out_t])[0]


def _diagonal(ctx, x, dims, dtype):
    """The diagonal of square matrices ``(..., n, n) -> (..., n)`` (masked row sums)."""
    mask = ctx.compare(ctx.iota(_I64, dims, len(dims) - 2), ctx.iota(_I64, dims, len(dims) - 1), "EQ", _I64)
    return _reduce_last(ctx, _select(ctx, mask, x, _zeros(ctx, dtype, dims)), dims, "sum", dtype)


def _swap_last2(x):
    r = _rank(x)
    perm = list(range(r - 2)) + [r - 1, r - 2]
    return hlo.TransposeOp(x, perm).result


# ----------------------------------------------------------------------------------------------
# rules
# ----------------------------------------------------------------------------------------------
@register_lowering(L.solve_p)
def _solve_lowering(ctx, eqn, a, b, *, transpose_a=False):
    # A = QR (geqrf), then x = R^-1 (Q^H b): ormqr applies Q^H, trsm solves with R
    av, bv = eqn.invars[0].aval, eqn.invars[1].aval
    dt = av.dtype
    if transpose_a:
        a = _swap_last2(a)
    adims, bdims = _dims(av), _dims(bv)
    qr, tau = ffi_call(ctx, lapack_target("geqrf", dt), [a], [(adims, dt), (adims[:-1], dt)])
    mqr = "unmqr" if is_complex_dtype(dt) else "ormqr"
    c, = ffi_call(ctx, lapack_target(mqr, dt), [qr, tau, b], [(bdims, dt)],
                  {"left": ir.BoolAttr.get(True), "transpose": ir.BoolAttr.get(True)})
    x, = ffi_call(ctx, lapack_target("trsm", dt), [qr, c], [(bdims, dt)],
                  {"side": _u8("L"), "uplo": _u8("U"), "trans_x": _u8("N"), "diag": _u8("N")})
    return x


def _lu_parts(ctx, av, a):
    """getrf: the diagonal of U and the sign of the row permutation."""
    dt = av.dtype
    dims = _dims(av)
    batch = dims[:-2]
    lu, piv, _info = ffi_call(ctx, lapack_target("getrf", dt), [a],
                              [(dims, dt), (dims[:-1], _I32), (batch, _I32)])
    diag = _diagonal(ctx, lu, dims, dt)
    # pivots are 1-based row swaps; the permutation is odd when an odd number of them swap
    vdims = dims[:-1]
    one = ctx.broadcast_scalar(ctx.constant(1, _I32), vdims)
    pos = hlo.AddOp(ctx.iota(_I32, vdims, len(vdims) - 1), one).result
    swapped = ctx.convert(ctx.compare(piv, pos, "NE", _I32), _I32)
    count = _reduce_last(ctx, swapped, vdims, "sum", _I32)
    odd = hlo.AndOp(count, ctx.broadcast_scalar(ctx.constant(1, _I32), batch)).result
    two_odd = hlo.AddOp(odd, odd).result
    sign_i = hlo.SubtractOp(ctx.broadcast_scalar(ctx.constant(1, _I32), batch), two_odd).result
    return diag, ctx.convert(sign_i, dt), vdims, batch


@register_lowering(L.det_p)
def _det_lowering(ctx, eqn, a):
    av = eqn.invars[0].aval
    diag, sign, vdims, _ = _lu_parts(ctx, av, a)
    return hlo.MulOp(sign, _reduce_last(ctx, diag, vdims, "prod", av.dtype)).result


@register_lowering(L.slogdet_p)
def _slogdet_lowering(ctx, eqn, a):
    av = eqn.invars[0].aval
    dt, rdt = av.dtype, real_dtype(av.dtype)
    diag, sign, vdims, batch = _lu_parts(ctx, av, a)
    absd = hlo.AbsOp(diag).result
    logabs = _reduce_last(ctx, hlo.LogOp(absd).result, vdims, "sum", rdt)
    is_zero = ctx.compare(absd, _zeros(ctx, rdt, vdims), "EQ", rdt)
    if is_complex_dtype(dt):
        safe = _select(ctx, is_zero, ctx.full(1, rdt, vdims), absd)
        unit = hlo.DivOp(diag, hlo.ComplexOp(safe, _zeros(ctx, rdt, vdims)).result).result
    else:
        unit = hlo.SignOp(diag).result
    unit = _select(ctx, is_zero, _zeros(ctx, dt, vdims), unit)
    sign = hlo.MulOp(sign, _reduce_last(ctx, unit, vdims, "prod", dt)).result
    return [sign, logabs]


@register_lowering(L.cholesky_p)
def _cholesky_lowering(ctx, eqn, a):
    av = eqn.invars[0].aval
    dt, dims = av.dtype, _dims(av)
    nb = len(dims) - 2
    x, info = ffi_call(ctx, lapack_target("potrf", dt), [a], [(dims, dt), (dims[:nb], _I32)],
                       {"uplo": _u8("L")})
    low = _select(ctx, _triangle_mask(ctx, dims, lower=True), x, _zeros(ctx, dt, dims))
    return _where_ok(ctx, info, low, dims, dt, nb)


@register_lowering(L.qr_p)
def _qr_lowering(ctx, eqn, a, *dyn, full_matrices, k):
    av = eqn.invars[0].aval
    dt, dims = av.dtype, _dims(av)
    *batch, m, n = dims
    kd = dyn[0] if k is None else k
    x, tau = ffi_call(ctx, lapack_target("geqrf", dt), [a], [(dims, dt), (batch + [kd], dt)])
    gqr = "ungqr" if is_complex_dtype(dt) else "orgqr"
    if full_matrices:
        rdims = dims
        r = x
        # orgqr needs the m x m matrix holding the reflectors: pad (or cut) the columns to m
        wide = list(batch) + [m, _add_dims(ctx, n, m)]
        padded = hlo.ConcatenateOp([x, _zeros(ctx, dt, list(batch) + [m, m])], len(dims) - 1).result
        padded = ctx.cast(padded, tensor_type([d if isinstance(d, (int, np.integer)) else None for d in wide], dt))
        qin = _slice_last2(ctx, padded, wide, m, m)
        qdims = list(batch) + [m, m]
    else:
        rdims = list(batch) + [kd, n]
        r = _slice_last2(ctx, x, dims, kd, n)
        qdims = list(batch) + [m, kd]
        qin = _slice_last2(ctx, x, dims, m, kd)
    r = _select(ctx, _triangle_mask(ctx, rdims, lower=False), r, _zeros(ctx, dt, rdims))
    q, = ffi_call(ctx, lapack_target(gqr, dt), [qin, tau], [(qdims, dt)])
    return [q, r]


def _add_dims(ctx, d1, d2):
    if isinstance(d1, (int, np.integer)) and isinstance(d2, (int, np.integer)):
        return int(d1) + int(d2)
    return hlo.AddOp(ctx.dim_value(d1), ctx.dim_value(d2)).result


@register_lowering(L.eigh_p)
def _eigh_lowering(ctx, eqn, a, *, lower=True):
    av = eqn.invars[0].aval
    dt, dims = av.dtype, _dims(av)
    nb = len(dims) - 2
    wdt = real_dtype(dt)
    name = "heevd" if is_complex_dtype(dt) else "syevd"
    v, w, info = ffi_call(ctx, lapack_target(name, dt), [a],
                          [(dims, dt), (dims[:-1], wdt), (dims[:nb], _I32)],
                          {"uplo": _u8("L" if lower else "U"), "mode": _u8("V")})
    return [_where_ok(ctx, info, w, dims[:-1], wdt, nb), _where_ok(ctx, info, v, dims, dt, nb)]


@register_lowering(L.eig_p)
def _eig_lowering(ctx, eqn, a, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
                  enable_eigvec_derivs=False):
    av = eqn.invars[0].aval
    dt, dims = av.dtype, _dims(av)
    nb = len(dims) - 2
    cdt = complex_dtype(dt)
    wdims = dims[:-1]
    wparts = [(wdims, dt)] * (1 if is_complex_dtype(dt) else 2)
    *w, vl, vr, info = ffi_call(
        ctx, lapack_target("geev", dt), [a],
        wparts + [(dims, cdt), (dims, cdt), (dims[:nb], _I32)],
        {"compute_left": _u8("V" if compute_left_eigenvectors else "N"),
         "compute_right": _u8("V" if compute_right_eigenvectors else "N")})
    w = w[0] if len(w) == 1 else hlo.ComplexOp(w[0], w[1]).result
    nan = complex(np.nan, np.nan)
    outs = [_where_ok(ctx, info, w, wdims, cdt, nb, nan)]
    if compute_left_eigenvectors:
        outs.append(_where_ok(ctx, info, vl, dims, cdt, nb, nan))
    if compute_right_eigenvectors:
        outs.append(_where_ok(ctx, info, vr, dims, cdt, nb, nan))
    return outs


@register_lowering(L.svd_p)
def _svd_lowering(ctx, eqn, a, *dyn, full_matrices, compute_uv, k):
    av = eqn.invars[0].aval
    dt, dims = av.dtype, _dims(av)
    *batch, m, n = dims
    batch = list(batch)
    nb = len(batch)
    kd = dyn[0] if k is None else k
    sdt = real_dtype(dt)
    full = full_matrices and compute_uv
    ku, kv = (m, n) if full else (kd, kd)
    mode = "N" if not compute_uv else ("A" if full else "S")
    _x, s, u, vt, info = ffi_call(
        ctx, lapack_target("gesdd", dt), [a],
        [(dims, dt), (batch + [kd], sdt), (batch + [m, ku], dt), (batch + [kv, n], dt), (batch, _I32)],
        {"mode": _u8(mode)})
    s = _where_ok(ctx, info, s, batch + [kd], sdt, nb)
    if not compute_uv:
        return [s]
    udims, vdims = batch + [m, ku], batch + [kv, n]
    u = _where_ok(ctx, info, u, udims, dt, nb)
    vt = _where_ok(ctx, info, vt, vdims, dt, nb)
    if full:
        # LAPACK returns at once for an empty matrix: the full U / V^H are then identities
        kz = ctx.compare(ctx.dim_value(kd), ctx.constant(0, _I64), "EQ", _I64)
        u = _select(ctx, ctx.broadcast(kz, udims, []), _eye(ctx, udims, dt), u)
        vt = _select(ctx, ctx.broadcast(kz, vdims, []), _eye(ctx, vdims, dt), vt)
    return [s, u, vt]


def _eye(ctx, dims, dtype):
    r = len(dims)
    eq = ctx.compare(ctx.iota(_I64, dims, r - 2), ctx.iota(_I64, dims, r - 1), "EQ", _I64)
    return _select(ctx, eq, ctx.full(1, dtype, dims), _zeros(ctx, dtype, dims))
