"""Reverse mode, step 2: transposing a linear jaxpr (``backward_pass``) and the transpose
rule of every linear primitive.

``backward_pass(jaxpr, consts, linear_avals, cts)`` runs a jaxpr whose leading inputs are
*non-linear* (the residuals) and whose other inputs are *linear* backwards: given the
cotangents of its outputs it returns the cotangents of its linear inputs. Equations that
use no linear value (size arithmetic, zeros) are evaluated forwards first; the others are
visited in reverse order and their ``transpose_rules`` applied:

    rule(ct, *operands, **params) -> [ct_operand or None, ...]

where a linear operand is an ``UndefinedPrimal`` (its type, with dims as values of the
current interpreter) and a non-linear operand is its value; ``ct`` is the cotangent of
the result (a list for ``multiple_results`` primitives, ``None`` entries for zeros).
A rule returns ``None`` for non-linear operands and for zero cotangents. Everything is
computed with ``Primitive.bind``, so the same rules run eagerly and under ``qjit``, and
cotangents have the dims of their primals.
"""
from __future__ import annotations

from typing import Any, List, Sequence

import numpy as np

from ..core.avals import ShapedArray
from ..core.jaxpr import Jaxpr, Literal, Var
from ..core.primitive import transpose_rules
from ..core.trace import typeof
from ..lax import api as lax
from ..lax import primitives as P


class UndefinedPrimal:
    """A linear operand of an equation being transposed: only its type is known."""
    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(x) -> bool:
    return isinstance(x, UndefinedPrimal)


def zeros(aval: ShapedArray):
    """Zeros of ``aval`` (dims are values of the current interpreter)."""
    z = np.zeros((), aval.dtype)
    return z if not aval.shape else lax.broadcast_in_dim(z, aval.shape, ())


def add_cotangents(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return P.add_p.bind(a, b)


def backward_pass(jaxpr: Jaxpr, args: Sequence[Any], cts: Sequence[Any]) -> List[Any]:
    """Transpose ``jaxpr`` with respect to its linear inputs: ``args`` holds a value for each
    non-linear input and an ``UndefinedPrimal`` for each linear one; ``cts`` the cotangents
    of the outputs (``None`` = zero). Returns one cotangent per input: ``None`` for the
    non-linear inputs and for zero cotangents."""
    env = {}
    linear = set()
    for v, x in zip(jaxpr.invars, args):
        if is_undefined(x):
            linear.add(id(v))
        else:
            env[id(v)] = x

    def read(a):
        return a.val if isinstance(a, Literal) else env[id(a)]

    def value_aval(v) -> ShapedArray:
        return v.aval.update(shape=tuple(read(d) if isinstance(d, (Var, Literal)) else d
                                         for d in v.aval.shape))

    linear_eqns = []
    for eqn in jaxpr.eqns:
        if any(isinstance(a, Var) and id(a) in linear for a in eqn.invars):
            linear_eqns.append(eqn)
            linear.update(id(v) for v in eqn.outvars)
            continue
        outs = eqn.primitive.bind(*[read(a) for a in eqn.invars], **eqn.params)
        outs = outs if eqn.primitive.multiple_results else [outs]
        for v, x in zip(eqn.outvars, outs):
            env[id(v)] = x

    ct_env = {}

    def put(v, ct):
        if ct is not None and isinstance(v, Var) and id(v) in linear:
            ct_env[id(v)] = add_cotangents(ct_env.get(id(v)), ct)

    for v, ct in zip(jaxpr.outvars, cts):
        put(v, ct)
    for eqn in reversed(linear_eqns):
        outs_ct = [ct_env.pop(id(v), None) for v in eqn.outvars]
        if all(c is None for c in outs_ct):
            continue
        rule = transpose_rules.get(eqn.primitive)
        if rule is None:
            raise NotImplementedError(
                f"reverse-mode differentiation: primitive '{eqn.primitive.name}' has no transpose "
                "rule (register one with dynjax.extend.def_transpose)")
        operands = [UndefinedPrimal(value_aval(a)) if isinstance(a, Var) and id(a) in linear
                    else read(a) for a in eqn.invars]
        ct = outs_ct if eqn.primitive.multiple_results else outs_ct[0]
        in_cts = rule(ct, *operands, **eqn.params)
        if len(in_cts) != len(operands):
            raise AssertionError(f"the transpose rule of {eqn.primitive.name} returned "
                                 f"{len(in_cts)} cotangents for {len(operands)} operands")
        for a, c in zip(eqn.invars, in_cts):
            put(a, c)
    return [ct_env.get(id(v)) if id(v) in linear else None for v in jaxpr.invars]


# ----------------------------------------------------------------------------------------------
# Rules: elementwise
# ----------------------------------------------------------------------------------------------
def unbroadcast(ct, aval: ShapedArray):
    """``ct`` summed down to a rank-0 operand that an elementwise primitive broadcast."""
    if ct is None:
        return None
    if aval.ndim == 0 and typeof(ct).ndim:
        ct = lax.reduce_sum(ct, tuple(range(typeof(ct).ndim)))
    return ct


def _add_t(ct, x, y):
    return [unbroadcast(ct, x.aval) if is_undefined(x) else None,
            unbroadcast(ct, y.aval) if is_undefined(y) else None]


def _sub_t(ct, x, y):
    return [unbroadcast(ct, x.aval) if is_undefined(x) else None,
            unbroadcast(P.neg_p.bind(ct), y.aval) if is_undefined(y) else None]


def _mul_t(ct, x, y):
    if is_undefined(x) and is_undefined(y):
        raise AssertionError("mul of two linear values is not linear")
    if is_undefined(x):
        return [unbroadcast(P.mul_p.bind(ct, y), x.aval), None]
    return [None, unbroadcast(P.mul_p.bind(x, ct), y.aval)]


def _div_t(ct, x, y):
    if is_undefined(y):
        raise AssertionError("division by a linear value is not linear")
    return [unbroadcast(P.div_p.bind(ct, y), x.aval), None]


transpose_rules[P.add_p] = _add_t
transpose_rules[P.sub_p] = _sub_t
transpose_rules[P.mul_p] = _mul_t
transpose_rules[P.div_p] = _div_t
transpose_rules[P.neg_p] = lambda ct, x: [P.neg_p.bind(ct)]
transpose_rules[P.conj_p] = lambda ct, x: [P.conj_p.bind(ct)]


def _real_t(ct, x):
    return [P.complex_p.bind(ct, np.zeros((), typeof(ct).dtype))]


def _imag_t(ct, x):
    return [P.complex_p.bind(np.zeros((), typeof(ct).dtype), P.neg_p.bind(ct))]


def _complex_t(ct, x, y):
    return [unbroadcast(P.real_p.bind(ct), x.aval) if is_undefined(x) else None,
            unbroadcast(P.neg_p.bind(P.imag_p.bind(ct)), y.aval) if is_undefined(y) else None]


transpose_rules[P.real_p] = _real_t
transpose_rules[P.imag_p] = _imag_t
transpose_rules[P.complex_p] = _complex_t


def _convert_t(ct, x, *, new_dtype, weak_type=False):
    return [P.convert_element_type_p.bind(ct, new_dtype=x.aval.dtype, weak_type=x.aval.weak_type)]


transpose_rules[P.convert_element_type_p] = _convert_t


def _select_n_t(ct, which, *cases):
    if is_undefined(which):
        raise AssertionError("select_n with a linear predicate")
    zero = zeros(typeof(ct))
    out = [None]
    for i, c in enumerate(cases):
        if is_undefined(c):
            picks = [ct if j == i else zero for j in range(len(cases))]
            out.append(P.select_n_p.bind(which, *picks))
        else:
            out.append(None)
    return out


transpose_rules[P.select_n_p] = _select_n_t


# ----------------------------------------------------------------------------------------------
# Rules: shapes and reductions
# ----------------------------------------------------------------------------------------------
def _broadcast_in_dim_t(ct, x, *dyn_shape, shape, broadcast_dimensions):
    a = x.aval
    out_shape = typeof(ct).shape
    expanded = [i for i, d in enumerate(broadcast_dimensions)
                if isinstance(a.shape[i], int) and a.shape[i] == 1
                and not (isinstance(out_shape[d], int) and out_shape[d] == 1)]
    new_axes = [d for d in range(len(out_shape)) if d not in broadcast_dimensions]
    axes = tuple(sorted(new_axes + [broadcast_dimensions[i] for i in expanded]))
    r = lax.reduce_sum(ct, axes) if axes else ct
    if expanded:
        r = lax.reshape(r, a.shape)
    return [r] + [None] * len(dyn_shape)


def _reshape_t(ct, x, *dyn_shape, new_sizes, dimensions=None):
    a = x.aval
    if dimensions is None:
        return [lax.reshape(ct, a.shape)] + [None] * len(dyn_shape)
    perm_shape = tuple(a.shape[d] for d in dimensions)
    r = lax.reshape(ct, perm_shape)
    return [lax.transpose(r, tuple(np.argsort(dimensions)))] + [None] * len(dyn_shape)


def _transpose_t(ct, x, *, permutation):
    return [lax.transpose(ct, tuple(int(i) for i in np.argsort(permutation)))]


def _squeeze_t(ct, x, *, dimensions):
    return [lax.reshape(ct, x.aval.shape)]


def _reduce_sum_t(ct, x, *, axes):
    a = x.aval
    kept = tuple(i for i in range(a.ndim) if i not in axes)
    return [lax.broadcast_in_dim(ct, a.shape, kept)]


def _cumsum_t(ct, x, *, axis, reverse=False):
    return [P.cumsum_p.bind(ct, axis=axis, reverse=not reverse)]


transpose_rules[P.broadcast_in_dim_p] = _broadcast_in_dim_t
transpose_rules[P.reshape_p] = _reshape_t
transpose_rules[P.transpose_p] = _transpose_t
transpose_rules[P.squeeze_p] = _squeeze_t
transpose_rules[P.rev_p] = lambda ct, x, *, dimensions: [P.rev_p.bind(ct, dimensions=dimensions)]
transpose_rules[P.reduce_sum_p] = _reduce_sum_t
transpose_rules[P.cumsum_p] = _cumsum_t


# ----------------------------------------------------------------------------------------------
# Rules: slicing, padding, concatenation
# ----------------------------------------------------------------------------------------------
def _slice_t(ct, x, *, start_indices, limit_indices, strides=None):
    a = x.aval
    strides = strides or (1,) * a.ndim
    config = []
    ct_shape = typeof(ct).shape
    for d, s, l, st, k in zip(a.shape, start_indices, limit_indices, strides, ct_shape):
        if not isinstance(d, int):
            config.append((0, 0, 0))   # a dynamic axis is always kept whole
            continue
        # the k kept elements sit at s, s + st, ...; the rest of the axis is zero
        used = s + (k - 1) * st + 1 if k else s
        config.append((s, d - used, st - 1) if k else (d, 0, 0))
    if any(k == 0 for k in ct_shape if isinstance(k, int)):
        return [zeros(a)]
    return [lax.pad(ct, np.zeros((), a.dtype), config)]


def _pad_t(ct, x, pv, *, padding_config):
    # the operand's elements: undo the cropping of negative amounts, then keep the positions
    # the operand was written to
    grow = [(max(-lo, 0), max(-hi, 0), 0) for lo, hi, _ in padding_config]
    t_x = ct
    if any(g != (0, 0, 0) for g in grow):
        t_x = lax.pad(t_x, np.zeros((), typeof(ct).dtype), grow)
    a = x.aval if is_undefined(x) else typeof(x)
    starts, limits, strides = [], [], []
    for d, (lo, hi, interior) in zip(a.shape, padding_config):
        if not isinstance(d, int):
            starts.append(0), limits.append(None), strides.append(1)
            continue
        core = d + max(d - 1, 0) * interior
        starts.append(max(lo, 0))
        limits.append(max(lo, 0) + core)
        strides.append(interior + 1)
    t_x = lax.slice(t_x, starts, limits, strides)
    t_pv = None
    if is_undefined(pv):
        # every other element of the result is the padding value
        everything = lax.reduce_sum(ct, tuple(range(typeof(ct).ndim)))
        t_pv = P.sub_p.bind(everything, lax.reduce_sum(t_x, tuple(range(typeof(t_x).ndim))))
    return [t_x if is_undefined(x) else None, t_pv]


def zeros_like(x):
    return zeros(x.aval if is_undefined(x) else typeof(x))


def _dynamic_slice_t(ct, x, *operands, slice_sizes):
    n = x.aval.ndim
    starts = operands[:n]
    return [lax.dynamic_update_slice(zeros(x.aval), ct, starts)] + [None] * len(operands)


def _dynamic_update_slice_t(ct, x, update, *starts):
    outs = [None, None] + [None] * len(starts)
    if is_undefined(update):
        outs[1] = lax.dynamic_slice(ct, starts, update.aval.shape)
    if is_undefined(x):
        hole = zeros(update.aval if is_undefined(update) else typeof(update))
        outs[0] = lax.dynamic_update_slice(ct, hole, starts)
    return outs


def _concatenate_t(ct, *operands, dimension, num_operands):
    xs = operands[:num_operands]
    outs = []
    offset = 0
    for x in xs:
        a = x.aval if is_undefined(x) else typeof(x)
        size = a.shape[dimension]
        if is_undefined(x):
            starts = [0] * a.ndim
            starts[dimension] = offset
            if all(isinstance(d, int) for d in a.shape) and isinstance(offset, int):
                limits = list(a.shape)
                limits[dimension] = offset + size
                outs.append(lax.slice(ct, starts, limits))
            else:
                outs.append(lax.dynamic_slice(ct, starts, a.shape))
        else:
            outs.append(None)
        offset = size + offset if isinstance(offset, int) and isinstance(size, int) else \
            P.add_p.bind(lax.convert_element_type(offset, np.int64) if not isinstance(offset, int)
                         else np.int64(offset), lax.convert_element_type(size, np.int64)
                         if not isinstance(size, int) else np.int64(size))
    return outs + [None] * (len(operands) - num_operands)


transpose_rules[P.slice_p] = _slice_t
transpose_rules[P.pad_p] = _pad_t
transpose_rules[P.dynamic_slice_p] = _dynamic_slice_t
transpose_rules[P.dynamic_update_slice_p] = _dynamic_update_slice_t
transpose_rules[P.concatenate_p] = _concatenate_t


def _gather_t(ct, x, idx, *, axes):
    # every row read one element (clamped into range); their cotangents add up there
    shape = x.aval.shape
    return [lax.scatter(zeros(x.aval), lax.clamp_rows(idx, shape, axes), ct, axes, "add"), None]


def _member_mask(mask, like):
    """A per-row ``mask`` (shape ``B``) as 0/1 over the rows' elements (the shape of ``like``)."""
    la = typeof(like)
    m = lax.convert_element_type(mask, la.dtype)
    return lax.broadcast_in_dim(m, la.shape, tuple(range(typeof(mask).ndim)))


def _last_writers(idx, shape, axes):
    """For each row of ``idx``: is it in range and the last row to write its position (the one a
    ``set`` keeps)?"""
    from ..numpy.shape_ops import reshape
    ia = typeof(idx)
    rows = ia.shape[:-1]
    n = 1
    for d in rows:
        n = n * d
    flat = reshape(idx, (n, len(axes)))
    ids = lax.broadcasted_iota(np.int64, (n,), 0)
    owners = lax.broadcast_in_dim(np.int64(-1), tuple(shape[a] for a in axes), ())
    owners = lax.scatter(owners, flat, ids, tuple(range(len(axes))), "set")
    won = P.eq_p.bind(lax.gather(owners, flat, tuple(range(len(axes)))), ids)
    won = P.and_p.bind(won, lax.rows_in_bounds(flat, shape, axes))
    return reshape(won, rows)


def _scatter_t(ct, x, idx, u, *, axes, kind):
    if kind not in ("set", "add"):
        raise NotImplementedError(f"transpose of scatter_{kind} (it is not linear)")
    xa = x.aval if is_undefined(x) else typeof(x)
    outs = [None, None, None]
    if is_undefined(x):
        outs[0] = ct if kind == "add" else lax.scatter(ct, idx, zeros(u.aval if is_undefined(u) else typeof(u)),
                                                      axes, "set")
    if is_undefined(u):
        read = lax.gather(ct, idx, axes)
        keep = lax.rows_in_bounds(idx, xa.shape, axes) if kind == "add" else _last_writers(idx, xa.shape, axes)
        outs[2] = P.mul_p.bind(read, _member_mask(keep, read))
    return outs


transpose_rules[P.gather_p] = _gather_t
transpose_rules[P.scatter_p] = _scatter_t


# ----------------------------------------------------------------------------------------------
# Rules: dot_general and sort
# ----------------------------------------------------------------------------------------------
def _kept(ndim, contract, batch):
    return [i for i in range(ndim) if i not in contract and i not in batch]


def _dot_operand_t(ct, other, aval, contract, other_contract, batch, other_batch, ct_kept_first):
    """The cotangent of one dot_general operand (type ``aval``, contracting / batch axes
    ``contract`` / ``batch``) given the other operand. ``ct``'s axes are (batch, kept axes of
    the first operand, kept axes of the second); ``ct_kept_first`` says whether this operand
    is the first."""
    kept = _kept(aval.ndim, contract, batch)
    other_kept = _kept(typeof(other).ndim, other_contract, other_batch)
    nb = len(batch)
    if ct_kept_first:
        ct_other = tuple(range(nb + len(kept), nb + len(kept) + len(other_kept)))
    else:
        ct_other = tuple(range(nb, nb + len(other_kept)))
    # contract ct's axes of the other operand's kept dims with them; batch stays batch
    dims = ((ct_other, tuple(other_kept)), (tuple(range(nb)), tuple(other_batch)))
    dtype = typeof(ct).dtype
    if typeof(other).dtype != dtype:
        other = lax.convert_element_type(other, dtype)
    r = lax.dot_general(ct, other, dims)
    # r's axes: batch, this operand's kept axes, then its contracting axes in the order of
    # the other operand's contracting axes (sorted, as dot_general lists free axes)
    contract_by_other = [c for _, c in sorted(zip(other_contract, contract))]
    order = list(batch) + kept + contract_by_other
    r = lax.transpose(r, tuple(int(i) for i in np.argsort(order)))
    if typeof(r).dtype != aval.dtype:
        r = lax.convert_element_type(r, aval.dtype)
    return r


def _dot_general_t(ct, x, y, *, dimension_numbers, preferred_element_type=None):
    (xc, yc), (xb, yb) = dimension_numbers
    if is_undefined(x) and is_undefined(y):
        raise AssertionError("dot_general of two linear values is not linear")
    if is_undefined(x):
        return [_dot_operand_t(ct, y, x.aval, xc, yc, xb, yb, True), None]
    return [None, _dot_operand_t(ct, x, y.aval, yc, xc, yb, xb, False)]


transpose_rules[P.dot_general_p] = _dot_general_t


def _sort_t(cts, *operands, dimension, num_keys):
    keys = operands[:num_keys]
    if any(is_undefined(k) for k in keys):
        raise AssertionError("sort with linear keys")
    shape = typeof(keys[0]).shape
    iota = lax.broadcasted_iota(np.int64, shape, dimension)
    perm = P.sort_p.bind(*keys, iota, dimension=dimension, num_keys=num_keys)[-1]
    outs: List[Any] = [None] * len(operands)
    moving = [i for i, x in enumerate(operands) if is_undefined(x) and cts[i] is not None]
    if moving:
        # sorting by the permutation puts every element back where it came from
        back = P.sort_p.bind(perm, *[cts[i] for i in moving], dimension=dimension, num_keys=1)
        for i, c in zip(moving, back[1:]):
            outs[i] = c
    return outs


transpose_rules[P.sort_p] = _sort_t


# linear algebra: solve is linear in its right-hand side; the transpose of b -> op(a)^-1 b is
# ct -> op(a)^-T ct (a transpose, not an adjoint, as for dot_general)
from ..lax import linalg as _L  # noqa: E402


def _linalg_solve_t(ct, a, b, *, transpose_a=False):
    if is_undefined(a):
        raise AssertionError("linalg_solve is not linear in its matrix operand")
    if ct is None or not is_undefined(b):
        return [None, None]
    return [None, _L.solve_p.bind(a, ct, transpose_a=not transpose_a)]


transpose_rules[_L.solve_p] = _linalg_solve_t

# the transpose rules of other primitive families live in modules of their own
from . import fft_transpose as _fft_transpose  # noqa: E402,F401
