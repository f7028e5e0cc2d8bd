"""``vmap``: vectorizing a function over a batch axis, as an interpreter on the trace stack.

``vmap(f)`` pushes a ``BatchTrace`` (at the next level, like ``jvp``) and calls ``f`` on
``BatchTracer``\\ s. A tracer holds a value of the enclosing interpreter (``val``) and the
position of the batch axis in it (``bdim``, or ``None`` for a value that is the same for
every member of the batch). Its aval is the value's aval without the batch axis: what ``f``
sees is one member. Every primitive has a rule in ``batching_rules``:

    rule(size, vals, dims, **params) -> (out, out_dim)     (lists for multiple results)

where ``size`` is the batch size (an int, or a dim of the enclosing scope when the batch
axis is itself dynamic: one trace serves every batch size). Rules compute with
``dynjax.lax`` on the values, so they run eagerly and under ``qjit`` alike.

Most rules move the batch axis to the front and shift the primitive's axis parameters by
one. Where no vectorized form exists (an index that differs per member, a padding value
that differs per member), ``per_member`` runs the primitive once per member in a ``scan``.
Loops and conditionals batch their bodies with the same binders as user code; a ``cond``
whose predicate differs per member evaluates every branch and selects, and a
``while_loop`` whose predicate does runs until every member is done, members that are done
keeping their values.
"""
from __future__ import annotations

import operator
from typing import Any, List, Sequence

import numpy as np

from ...control_flow.primitives import carry_fixpoint, dim_positions
from ...core import named_axes
from ...core.avals import float0
from ...core.primitive import Primitive, batching_rules
from ...core.pytree import tree_flatten
from ...core.trace import EscapedTracerError, Trace, Tracer, bind, new_trace, next_level, typeof
from ...lax import api as lax
from ...lax import effects as P_effects
from ...lax import primitives as P
from ...lax.base import dims_from_operands
from ...lax.collectives import COLLECTIVE_SET as _COLLECTIVES
from ..members import MembersNeeded, members_needed, run_members

__all__ = ["vmap", "BatchTrace", "BatchTracer", "batching_rules", "move_axis", "to_front", "per_member"]


# ----------------------------------------------------------------------------------------------
# The interpreter
# ----------------------------------------------------------------------------------------------
class BatchTracer(Tracer):
    """A batch of values: ``val`` (a value of the enclosing interpreter) with the batch axis at
    ``bdim`` (None: one value shared by every member). The aval is one member's."""
    __slots__ = ("val", "bdim")

    def __init__(self, trace: "BatchTrace", val, bdim):
        a = typeof(val)
        if bdim is not None:
            a = a.update(shape=a.shape[:bdim] + a.shape[bdim + 1:])
        super().__init__(trace, a)
        self.val = val
        self.bdim = bdim

    def __repr__(self):
        return f"BatchTracer<{self.aval.str_short()}, batch axis {self.bdim}>"

    # numpy's indexing of a numpy array or a list (``x[i]``) converts the index with these and
    # cannot be intercepted: a shared value converts; a batch whose members are concrete has
    # ``vmap`` call the function member by member (``transforms/members.py``)
    def __array__(self, dtype=None, copy=None):
        if self.bdim is None:
            return np.asarray(self.val, dtype)
        raise members_needed(self, "converting a traced value to a numpy array")

    def __index__(self):
        if self.bdim is None:
            return operator.index(self.val)
        raise members_needed(self, "using a traced value as a Python index (x.__index__)")


class BatchTrace(Trace):
    """Vectorization: applies ``batching_rules`` to (value, batch axis) pairs."""

    def __init__(self, level: int, size, axis_name=None):
        super().__init__(level)
        self.size = size
        self.axis_name = axis_name   # the name collectives call this axis (vmap(axis_name=))
        self.spmd = None             # (mesh, axis names) the batch axis is split over (spmd_axis_name)

    def pure(self, val):
        return BatchTracer(self, val, None)

    def lift(self, tracer):
        return BatchTracer(self, tracer, None)

    def process_primitive(self, primitive: Primitive, tracers, params):
        if not self.active:
            raise EscapedTracerError(next(t for t in tracers if t._trace is self))
        vals = [t.val for t in tracers]
        dims = [t.bdim for t in tracers]
        if all(d is None for d in dims) and primitive not in _COLLECTIVES:
            out = bind(primitive, *vals, **params)
            if primitive.multiple_results:
                return [BatchTracer(self, o, None) for o in out]
            return BatchTracer(self, out, None)
        rule = batching_rules.get(primitive)
        if rule is None:
            raise NotImplementedError(f"vmap: primitive '{primitive.name}' has no batching rule "
                                      "(register one with dynjax.extend.def_batching)")
        if getattr(rule, "needs_trace", False):   # the custom-derivative calls keep this trace
            params = dict(params, trace=self)
        out, out_dim = rule(self.size, vals, dims, **params)
        if primitive.multiple_results:
            return [BatchTracer(self, o, d) for o, d in zip(out, out_dim)]
        return BatchTracer(self, out, out_dim)


# ----------------------------------------------------------------------------------------------
# Helpers for rules (on values of the enclosing interpreter)
# ----------------------------------------------------------------------------------------------
def move_axis(x, src: int, dst: int):
    """``x`` with axis ``src`` moved to position ``dst``."""
    nd = typeof(x).ndim
    if src == dst:
        return x
    order = [i for i in range(nd) if i != src]
    order.insert(dst, src)
    return lax.transpose(x, tuple(order))


def to_front(x, d, size):
    """``x`` with its batch axis first; an unbatched value (``d`` None) is broadcast."""
    if d is None:
        shape = typeof(x).shape
        return lax.broadcast_in_dim(x, (size,) + tuple(shape), tuple(range(1, len(shape) + 1)))
    return move_axis(x, d, 0)


def _member_shape(x, d):
    shape = typeof(x).shape
    return shape if d is None else shape[:d] + shape[d + 1:]


def _index(x, b):
    """Member ``b`` of a batch whose axis is first."""
    a = typeof(x)
    starts = [b] + [np.int64(0)] * (a.ndim - 1)
    sl = lax.dynamic_slice(x, starts, (1,) + tuple(a.shape[1:]))
    return lax.reshape(sl, tuple(a.shape[1:]))


def per_member(primitive: Primitive, size, vals, dims, params):
    """The fallback: apply ``primitive`` to each member in turn (a ``scan`` over the batch)
    and stack the results. Correct for every primitive whose result type is the same for
    every member."""
    from ...control_flow.binders import bind_scan
    from ...numpy import concatenate, zeros
    # one spare member at the end, so that taking a member is well-typed even when the
    # batch is empty (the scan then runs no iteration)
    batched = [None if d is None else concatenate([to_front(v, d, size),
                                                   zeros((1,) + tuple(_member_shape(v, d)), typeof(v).dtype)])
               for v, d in zip(vals, dims)]

    def body(b, _):
        args = [v if d is None else _index(bv, b) for v, d, bv in zip(vals, dims, batched)]
        out = primitive.bind(*args, **params)
        return b + 1, list(out) if primitive.multiple_results else [out]
    _, outs = bind_scan(body, np.int64(0), (), size, False)
    if primitive.multiple_results:
        return list(outs), [0] * len(outs)
    return outs[0], 0


# ----------------------------------------------------------------------------------------------
# Rules: elementwise
# ----------------------------------------------------------------------------------------------
def _elementwise(primitive):
    """Elementwise primitives (rank-0 operands broadcast implicitly): batched operands get
    their batch axis first; an operand whose member is rank 0 while the result's is not is
    broadcast to the member shape; an unbatched array gets a batch axis."""
    def rule(size, vals, dims, **params):
        shapes = [_member_shape(v, d) for v, d in zip(vals, dims)]
        out_shape = max(shapes, key=len)
        args = []
        for v, d, s in zip(vals, dims, shapes):
            if d is None:
                args.append(v if not s else to_front(v, None, size))
            else:
                v = move_axis(v, d, 0)
                if not s and out_shape:
                    v = lax.broadcast_in_dim(v, (size,) + tuple(out_shape), (0,))
                args.append(v)
        return primitive.bind(*args, **params), 0
    return rule


_ELEMENTWISE = ("neg sign floor ceil round is_finite exp log log1p expm1 tanh logistic sin cos "
                "tan asin acos atan sinh cosh sqrt rsqrt cbrt abs not real imag conj integer_pow "
                "convert_element_type add sub mul div rem pow max min atan2 complex and or xor eq "
                "ne lt le gt ge select_n shift_left shift_right").split()
for _name in _ELEMENTWISE:
    _p = getattr(P, f"{_name}_p")
    batching_rules[_p] = _elementwise(_p)


def _select_n_rule(size, vals, dims, **params):
    """select_n's cases must share one shape: when every member is rank 0, an unbatched case
    (a literal such as the 0.0 of ``where(x == 0, 0.0, x)`` in a jaxpr being batched) is
    broadcast to the batch like the batched ones."""
    if any(d is not None for d in dims) and all(not _member_shape(v, d) for v, d in zip(vals, dims)):
        vals, dims = list(vals), list(dims)
        for k in range(1, len(vals)):
            if dims[k] is None:
                vals[k], dims[k] = lax.broadcast_in_dim(vals[k], (size,), ()), 0
    return _elementwise(P.select_n_p)(size, vals, dims, **params)


batching_rules[P.select_n_p] = _select_n_rule


# ----------------------------------------------------------------------------------------------
# Rules: shapes
# ----------------------------------------------------------------------------------------------
def _check_unbatched(name, dims, what="a size"):
    if any(d is not None for d in dims):
        raise TypeError(f"vmap: {name} with {what} that differs across the batch (a ragged batch) "
                        "is not supported; a size computed from each member's data (x[x > 0], "
                        "nonzero, unique) differs per member: use jnp.where, or size= where offered")


def _broadcast_in_dim_rule(size, vals, dims, *, shape, broadcast_dimensions):
    x, dyn = vals[0], vals[1:]
    _check_unbatched("broadcast_in_dim", dims[1:])
    out = dims_from_operands(shape, dyn)
    x = move_axis(x, dims[0], 0)
    return lax.broadcast_in_dim(x, (size,) + tuple(out), (0,) + tuple(d + 1 for d in broadcast_dimensions)), 0


def _reshape_rule(size, vals, dims, *, new_sizes, dimensions=None):
    x, dyn = vals[0], vals[1:]
    _check_unbatched("reshape", dims[1:])
    x = move_axis(x, dims[0], 0)
    if dimensions is not None:
        x = lax.transpose(x, (0,) + tuple(d + 1 for d in dimensions))
    return lax.reshape(x, (size,) + tuple(dims_from_operands(new_sizes, dyn))), 0


def _transpose_rule(size, vals, dims, *, permutation):
    x = move_axis(vals[0], dims[0], 0)
    return lax.transpose(x, (0,) + tuple(p + 1 for p in permutation)), 0


def _axes_rule(primitive, key):
    """Primitives with one operand and an axis (or axes) parameter: shift it by one."""
    def rule(size, vals, dims, **params):
        x = move_axis(vals[0], dims[0], 0)
        v = params[key]
        params = dict(params)
        params[key] = tuple(a + 1 for a in v) if isinstance(v, (tuple, list)) else v + 1
        return primitive.bind(x, **params), 0
    return rule


batching_rules[P.broadcast_in_dim_p] = _broadcast_in_dim_rule
batching_rules[P.reshape_p] = _reshape_rule
batching_rules[P.transpose_p] = _transpose_rule
batching_rules[P.squeeze_p] = _axes_rule(P.squeeze_p, "dimensions")
batching_rules[P.rev_p] = _axes_rule(P.rev_p, "dimensions")
for _p in (P.reduce_sum_p, P.reduce_prod_p, P.reduce_max_p, P.reduce_min_p, P.argmax_p, P.argmin_p):
    batching_rules[_p] = _axes_rule(_p, "axes")
batching_rules[P.cumsum_p] = _axes_rule(P.cumsum_p, "axis")
batching_rules[P.cumprod_p] = _axes_rule(P.cumprod_p, "axis")


def _sort_rule(size, vals, dims, *, dimension, num_keys):
    xs = [to_front(v, d, size) for v, d in zip(vals, dims)]
    return list(P.sort_p.bind(*xs, dimension=dimension + 1, num_keys=num_keys)), [0] * len(xs)


batching_rules[P.sort_p] = _sort_rule


# ----------------------------------------------------------------------------------------------
# Rules: dot_general
# ----------------------------------------------------------------------------------------------
def _dot_general_rule(size, vals, dims, *, dimension_numbers, preferred_element_type=None):
    (x, y), (dx, dy) = vals, dims
    (lc, rc), (lb, rb) = dimension_numbers
    sh = lambda axes: tuple(a + 1 for a in axes)
    if dx is not None and dy is not None:
        x, y = move_axis(x, dx, 0), move_axis(y, dy, 0)
        dn = ((sh(lc), sh(rc)), ((0,) + sh(lb), (0,) + sh(rb)))
        out_dim = 0
    elif dx is not None:
        x = move_axis(x, dx, 0)
        dn = ((sh(lc), rc), (sh(lb), rb))
        out_dim = len(lb)   # the batch axis is x's first free axis
    else:
        y = move_axis(y, dy, 0)
        dn = ((lc, sh(rc)), (lb, sh(rb)))
        x_free = typeof(x).ndim - len(lc) - len(lb)
        out_dim = len(lb) + x_free   # y's first free axis
    return P.dot_general_p.bind(x, y, dimension_numbers=dn, preferred_element_type=preferred_element_type), out_dim


batching_rules[P.dot_general_p] = _dot_general_rule


# ----------------------------------------------------------------------------------------------
# Rules: slicing, padding, concatenation
# ----------------------------------------------------------------------------------------------
def _slice_rule(size, vals, dims, *, start_indices, limit_indices, strides=None):
    x = move_axis(vals[0], dims[0], 0)
    strides = strides or (1,) * len(start_indices)
    limit0 = size if isinstance(size, int) else None
    return P.slice_p.bind(x, start_indices=(0,) + tuple(start_indices), limit_indices=(limit0,) + tuple(limit_indices),
                          strides=(1,) + tuple(strides)), 0


def _dynamic_slice_rule(size, vals, dims, *, slice_sizes):
    x = vals[0]
    n = typeof(x).ndim - (1 if dims[0] is not None else 0)
    starts, dyn = vals[1:1 + n], vals[1 + n:]
    if any(d is not None for d in dims[1:]):
        return per_member(P.dynamic_slice_p, size, vals, dims, dict(slice_sizes=slice_sizes))
    x = move_axis(x, dims[0], 0)
    sizes = dims_from_operands(slice_sizes, dyn)
    return lax.dynamic_slice(x, [np.int64(0)] + list(starts), (size,) + tuple(sizes)), 0


def _dynamic_update_slice_rule(size, vals, dims):
    if any(d is not None for d in dims[2:]):
        return per_member(P.dynamic_update_slice_p, size, vals, dims, {})
    x, u = to_front(vals[0], dims[0], size), to_front(vals[1], dims[1], size)
    return lax.dynamic_update_slice(x, u, [np.int64(0)] + list(vals[2:])), 0


def _concatenate_rule(size, vals, dims, *, dimension, num_operands):
    _check_unbatched("concatenate", dims[num_operands:])
    xs = [to_front(v, d, size) for v, d in zip(vals[:num_operands], dims[:num_operands])]
    return lax.concatenate(xs, dimension + 1), 0


def _pad_rule(size, vals, dims, *, padding_config):
    if dims[1] is not None:
        return per_member(P.pad_p, size, vals, dims, dict(padding_config=padding_config))
    x = move_axis(vals[0], dims[0], 0)
    return lax.pad(x, vals[1], ((0, 0, 0),) + tuple(padding_config)), 0


batching_rules[P.slice_p] = _slice_rule
batching_rules[P.dynamic_slice_p] = _dynamic_slice_rule
batching_rules[P.dynamic_update_slice_p] = _dynamic_update_slice_rule
batching_rules[P.concatenate_p] = _concatenate_rule
batching_rules[P.pad_p] = _pad_rule


def _with_member_column(idx, size):
    """Index rows (batch axis first) with the member's own number prepended to each row."""
    ia = typeof(idx)
    member = lax.broadcasted_iota(ia.dtype, tuple(ia.shape[:-1]) + (1,), 0)
    return lax.concatenate([member, idx], ia.ndim - 1)


def _gather_rule(size, vals, dims, *, axes):
    (x, idx), (dx, di) = vals, dims
    shifted = tuple(a + 1 for a in axes)
    if di is None:   # one set of rows for every member: the batch axis is read whole
        return lax.gather(move_axis(x, dx, 0), idx, shifted), typeof(idx).ndim - 1
    idx = move_axis(idx, di, 0)
    if dx is None:
        return lax.gather(x, idx, axes), 0
    return lax.gather(move_axis(x, dx, 0), _with_member_column(idx, size), (0,) + shifted), 0


def _scatter_rule(size, vals, dims, *, axes, kind):
    (x, idx, u), (dx, di, du) = vals, dims
    x = to_front(x, dx, size)
    shifted = tuple(a + 1 for a in axes)
    u = to_front(u, du, size)
    if di is None:   # the same rows for every member: the batch axis is a window of each row
        return lax.scatter(x, idx, move_axis(u, 0, typeof(idx).ndim - 1), shifted, kind), 0
    idx = _with_member_column(move_axis(idx, di, 0), size)
    return lax.scatter(x, idx, u, (0,) + shifted, kind), 0


batching_rules[P.gather_p] = _gather_rule
batching_rules[P.scatter_p] = _scatter_rule


def _debug_callback_rule(size, vals, dims, **params):
    # the callback sees the whole batch (batch axis first) at once
    return P_effects.debug_callback_p.bind(*[v if d is None else move_axis(v, d, 0)
                                             for v, d in zip(vals, dims)], **params), []


batching_rules[P_effects.debug_callback_p] = _debug_callback_rule


def _iota_rule(size, vals, dims, **params):
    _check_unbatched("iota", dims)
    raise AssertionError("unreachable: iota has only size operands")


batching_rules[P.iota_p] = _iota_rule


# ----------------------------------------------------------------------------------------------
# Rules: loops and conditionals (built with the control-flow binders, like user code)
# ----------------------------------------------------------------------------------------------
def _batched_outputs(jaxpr, flags) -> List[bool]:
    """Which outputs of ``jaxpr`` may differ across the batch, given which inputs do
    (conservative for nested programs)."""
    from ...core.jaxpr import Var
    batched = {id(v) for v, f in zip(jaxpr.invars, flags) if f}
    for eqn in jaxpr.eqns:
        if any(isinstance(a, Var) and id(a) in batched for a in eqn.invars):
            batched.update(id(v) for v in eqn.outvars)
    return [isinstance(v, Var) and id(v) in batched for v in jaxpr.outvars]


def _carry_fixpoint(body, lead, carry, tail, nimplicit):
    """Which carried values (and extra outputs) differ across the batch."""
    return carry_fixpoint(body, lead, carry, tail, nimplicit, _batched_outputs)


def _eval_batched(jaxpr, size, vals, batched, want):
    """Evaluate ``jaxpr`` under vmap: ``vals[i]`` has its batch axis first when ``batched[i]``.
    Returns the outputs, with the batch axis first where ``want`` (broadcast if needed)
    and unbatched elsewhere (an error if the output differs across the batch)."""
    from ...core.interpret import eval_jaxpr
    outs, out_dims, _ = vmap_flat(lambda *a: eval_jaxpr(jaxpr, [], *a), size, vals,
                                  [0 if b else None for b in batched])
    res = []
    for o, d, w in zip(outs, out_dims, want):
        if w:
            res.append(to_front(o, d, size))
        elif d is not None:
            raise AssertionError("vmap: an output expected to be the same for every member differs")
        else:
            res.append(o)
    return res


def _member_dims(values, batched, positions):
    return [typeof(values[k]).shape[ax + (1 if batched[k] else 0)] for k, ax in positions]


def _front_all(vals, dims, size, flags):
    return [to_front(v, d, size) if f else v for v, d, f in zip(vals, dims, flags)]


def _for_loop_batch(size, vals, dims, *, body_jaxpr, body_nconsts, nimplicit, apply_reverse_transform,
                    preserve_dimensions):
    from ...control_flow.binders import bind_for_loop
    nc, ni = body_nconsts, nimplicit
    if any(d is not None for d in dims[nc:nc + 4 + ni]):
        raise NotImplementedError("vmap: a for_loop whose bounds or carried sizes differ across the "
                                  "batch is not supported (use a while_loop, whose batched form masks "
                                  "finished members)")
    c_b = [d is not None for d in dims[:nc]]
    x_b, _ = _carry_fixpoint(body_jaxpr, c_b + [False] * (1 + ni), [d is not None for d in dims[nc + 4 + ni:]],
                             [], ni)
    consts = _front_all(vals[:nc], dims[:nc], size, c_b)
    lower, upper, step = vals[nc:nc + 3]
    carries = _front_all(vals[nc + 4 + ni:], dims[nc + 4 + ni:], size, x_b)
    at = dim_positions(body_jaxpr.invars[nc + 1:nc + 1 + ni], [v.aval for v in body_jaxpr.invars[nc + 1 + ni:]])

    def body(i, xs):
        k = _member_dims(xs, x_b, at)
        outs = _eval_batched(body_jaxpr, size, list(consts) + [i] + k + list(xs),
                             c_b + [False] * (1 + ni) + x_b, [False] * ni + x_b)
        return outs[ni:]
    out = bind_for_loop(body, lower, upper, step, carries, preserve_dimensions)
    k = _member_dims(out, x_b, at)
    return k + list(out), [None] * ni + [0 if b else None for b in x_b]


def _scan_batch(size, vals, dims, *, jaxpr, num_consts, num_carry, nimplicit, reverse, preserve_dimensions):
    from ...control_flow.binders import bind_scan
    nc, ni = num_consts, nimplicit
    nx = num_carry - ni
    if any(d is not None for d in dims[nc:nc + 1 + ni]):
        raise NotImplementedError("vmap: a scan whose length or carried sizes differ across the batch "
                                  "is not supported")
    c_b = [d is not None for d in dims[:nc]]
    xs_b = [d is not None for d in dims[nc + 1 + num_carry:]]
    x_b, y_b = _carry_fixpoint(jaxpr, c_b + [False] * ni, [d is not None for d in dims[nc + 1 + ni:nc + 1 + num_carry]],
                               xs_b, ni)
    consts = _front_all(vals[:nc], dims[:nc], size, c_b)
    length = vals[nc]
    carries = _front_all(vals[nc + 1 + ni:nc + 1 + num_carry], dims[nc + 1 + ni:nc + 1 + num_carry], size, x_b)
    # scanned inputs: the scan walks axis 0, so the batch axis goes second
    xs = [move_axis(v, d, 1) if d is not None else v for v, d in zip(vals[nc + 1 + num_carry:], dims[nc + 1 + num_carry:])]
    at = dim_positions(jaxpr.invars[nc:nc + ni], [v.aval for v in jaxpr.invars[nc + ni:nc + ni + nx]])

    def body(carry, sl):
        k = _member_dims(carry, x_b, at)
        outs = _eval_batched(jaxpr, size, list(consts) + k + list(carry) + list(sl),
                             c_b + [False] * ni + x_b + xs_b, [False] * ni + x_b + y_b)[ni:]
        return outs[:nx], outs[nx:]
    out_c, ys = bind_scan(body, carries, xs, length, reverse, preserve_dimensions)
    k = _member_dims(out_c, x_b, at)
    return (k + list(out_c) + list(ys),
            [None] * ni + [0 if b else None for b in x_b] + [1 if b else None for b in y_b])


def _cond_batch(size, vals, dims, *, branches):
    from ...control_flow.binders import bind_cond
    index, ops = vals[0], vals[1:]
    op_b = [d is not None for d in dims[1:]]
    ops = _front_all(ops, dims[1:], size, op_b)
    nimp = branches[0].out_explicit.count(False)
    out_b = [False] * (len(branches[0].outvars) - nimp)
    for br in branches:
        out_b = [a or b for a, b in zip(out_b, _batched_outputs(br, op_b)[nimp:])]
    if dims[0] is None:
        def make(br):
            def run(*ops_):
                return _eval_batched(br, size, list(ops_), op_b, [False] * nimp + out_b)[nimp:]
            return run
        outs = bind_cond(index, [make(br) for br in branches], ops)
        at = dim_positions(branches[0].outvars[:nimp], [v.aval for v in branches[0].outvars[nimp:]])
        k = [typeof(outs[j]).shape[ax + (1 if out_b[j] else 0)] for j, ax in at]
        return k + list(outs), [None] * nimp + [0 if b else None for b in out_b]
    # the predicate differs across the batch: every branch runs, each member selects its own
    if nimp:
        raise NotImplementedError("vmap: a cond whose predicate differs across the batch and whose "
                                  "branches return arrays of different sizes is not supported")
    results = [_eval_batched(br, size, list(ops), op_b, [True] * len(out_b)) for br in branches]
    which = move_axis(index, dims[0], 0)
    # clamped into range, as cond itself does
    which = P.max_p.bind(P.min_p.bind(which, np.int64(len(branches) - 1)), np.int64(0))
    outs = []
    for per_branch in zip(*results):
        shape = typeof(per_branch[0]).shape
        w = lax.broadcast_in_dim(which, shape, (0,)) if len(shape) > 1 else which
        if len(per_branch) == 2:
            w = P.ne_p.bind(w, np.int64(0))
        outs.append(P.select_n_p.bind(w, *per_branch))
    return outs, [0] * len(outs)


def _while_batch(size, vals, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts, nimplicit,
                 preserve_dimensions):
    from ...control_flow.binders import bind_while_loop
    cc, bc, ni = cond_nconsts, body_nconsts, nimplicit
    if any(d is not None for d in dims[cc + bc:cc + bc + ni]):
        raise NotImplementedError("vmap: a while_loop whose carried sizes differ across the batch is "
                                  "not supported")
    cc_b = [d is not None for d in dims[:cc]]
    bc_b = [d is not None for d in dims[cc:cc + bc]]
    x_b, _ = _carry_fixpoint(body_jaxpr, bc_b + [False] * ni, [d is not None for d in dims[cc + bc + ni:]], [], ni)
    pred_b = _batched_outputs(cond_jaxpr, cc_b + [False] * ni + x_b)[0]
    if pred_b:   # members finish at different times: every carry is batched (and masked)
        x_b = [True] * len(x_b)
    cconsts = _front_all(vals[:cc], dims[:cc], size, cc_b)
    bconsts = _front_all(vals[cc:cc + bc], dims[cc:cc + bc], size, bc_b)
    carries = _front_all(vals[cc + bc + ni:], dims[cc + bc + ni:], size, x_b)
    at = dim_positions(body_jaxpr.invars[bc:bc + ni], [v.aval for v in body_jaxpr.invars[bc + ni:]])

    def pred(xs):
        k = _member_dims(xs, x_b, at)
        return _eval_batched(cond_jaxpr, size, list(cconsts) + k + list(xs), cc_b + [False] * ni + x_b,
                             [pred_b])[0]

    def cond_fun(xs):
        p = pred(xs)
        return lax.reduce_max(p, (0,)) if pred_b else p

    def body(xs):
        k = _member_dims(xs, x_b, at)
        new = _eval_batched(body_jaxpr, size, list(bconsts) + k + list(xs), bc_b + [False] * ni + x_b,
                            [False] * ni + x_b)[ni:]
        if not pred_b:
            return new
        running = pred(xs)
        out = []
        for n_, o in zip(new, xs):
            shape = typeof(o).shape
            r = lax.broadcast_in_dim(running, shape, (0,)) if len(shape) > 1 else running
            out.append(lax.select(r, n_, o))
        return out
    out = bind_while_loop(cond_fun, body, carries, preserve_dimensions)
    k = _member_dims(out, x_b, at)
    return k + list(out), [None] * ni + [0 if b else None for b in x_b]


def _register_control_flow():
    from ...control_flow.primitives import cond_p, for_loop_p, scan_p, while_loop_p
    batching_rules[for_loop_p] = _for_loop_batch
    batching_rules[scan_p] = _scan_batch
    batching_rules[cond_p] = _cond_batch
    batching_rules[while_loop_p] = _while_batch


_register_control_flow()


# ----------------------------------------------------------------------------------------------
# The entry point of the interpreter (the user-level ``vmap`` is in ``axes.py``)
# ----------------------------------------------------------------------------------------------
def vmap_flat(fun, size, vals: Sequence[Any], dims: Sequence[Any], axis_name=None, spmd=None):
    """Run ``fun`` on batches: ``vals[i]`` has its batch axis at ``dims[i]`` (None: shared);
    collectives over ``axis_name`` act across the batch; ``spmd`` (a mesh and axis names)
    splits the batch axis of the sharding constraints inside over those mesh axes. Returns
    ``(out_leaves, out_dims, out_tree)``."""
    with new_trace(BatchTrace(next_level(), size, axis_name)) as trace, \
            named_axes.binding(axis_name, trace, size):
        trace.spmd = spmd
        ins = [BatchTracer(trace, v, d) if d is not None else v for v, d in zip(vals, dims)]
        try:
            out = fun(*ins)
        except MembersNeeded as e:
            if e.trace is not trace:
                raise
            needed = e
        else:
            needed = None
            leaves, tree = tree_flatten(out)
            outs, out_dims = [], []
            for o in leaves:
                if isinstance(o, BatchTracer) and o._trace is trace:
                    outs.append(o.val)
                    out_dims.append(o.bdim)
                else:
                    if not (isinstance(o, np.ndarray) and o.dtype == float0):
                        typeof(o)   # an array or a number (a float0 value holds no data)
                    outs.append(o)
                    out_dims.append(None)
    if needed is not None:   # numpy indexing by a batched index: one call per member
        return run_members(fun, size, vals, dims, needed)
    return outs, out_dims, tree


# The rules of other primitive families live in modules of this package, one per
# family (as lax/linalg.py and lowering/linalg.py); importing them registers them.
from . import linalg as _linalg  # noqa: E402,F401
from . import special as _special  # noqa: E402,F401
from . import callbacks as _callbacks  # noqa: E402,F401
from . import convolution as _convolution  # noqa: E402,F401  (conv_general_dilated)
from . import cumulative as _cumulative  # noqa: E402,F401  (cummax / cummin)
from . import reduce_window as _reduce_window  # noqa: E402,F401
from . import fft as _fft  # noqa: E402,F401
from . import bits as _bits  # noqa: E402,F401
from . import prng as _prng  # noqa: E402,F401
from . import barrier as _barrier  # noqa: E402,F401
from . import collectives as _collectives  # noqa: E402,F401  (psum, all_gather, ...: named axes)
from .axes import vmap  # noqa: E402  (the user-level function: in_axes / out_axes, errors)
from . import sharding as _sharding  # noqa: E402,F401  (sharding_constraint)
