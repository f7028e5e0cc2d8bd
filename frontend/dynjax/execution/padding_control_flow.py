"""The padding rules of control flow (``execution/padding.py``'s interpretation, continued).

A loop or a cond whose carried (or returned) shapes stay fixed becomes the same construct in
the padded program, its nested programs interpreted by the padding rules; a function with
custom derivative rules (or a custom vmap rule) pads its primal body, a
``custom_linear_solve`` its solve program; a loop whose carried sizes change runs on device
within a capacity per carried size (``_resizing_loop``, for ``padded_runs.CapacityProgram``).
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.jaxpr import Jaxpr, Literal
from .padding import Context, NotPaddable, _i64, _resize_axis, interpret, lax_shape, padding_rules


# --- control flow ---------------------------------------------------------------------------
# A loop or a cond whose carried (or returned) shapes stay fixed becomes the same construct in
# the padded program, its nested programs interpreted by these rules: invars that hold an
# operand's value for the whole execution (constants, sizes passed through) keep its interval.
# Loops whose carried sizes change (``nimplicit``) run within capacities (``_resizing_loop``).
def _nested(ctx, eqn, k, jaxpr, args, pairs):
    """Interpret nested program ``k`` of ``eqn`` on ``args`` in a context of its own."""
    return interpret(subcontext(ctx, eqn, jaxpr, pairs[k]), jaxpr, [], args)


def subcontext(ctx, eqn, jaxpr, pairs) -> Context:
    """The context of a program nested in ``eqn``: the intervals of its integer inputs
    (``pairs``: input index, operand index) and whether resizing loops are running."""
    sub = Context()
    sub.running = ctx.running
    for invar_index, operand_index in pairs:
        lo_hi = ctx.interval(eqn.invars[operand_index])
        if lo_hi != (None, None):
            sub.intervals[id(jaxpr.invars[invar_index])] = lo_hi
    return sub


def _fixed_carries(eqn):
    p = eqn.params
    if p.get("nimplicit") or not p.get("preserve_dimensions", True) or p.get("apply_reverse_transform"):
        raise NotPaddable(f"{eqn.primitive} whose carried sizes change")


def _gated_upper(ctx, lower, upper):
    """A loop's upper bound, moved to its lower one (no iteration) once a resizing loop before
    it has stopped early: its operands are unfinished values, on which it might not end."""
    if ctx.running is None:
        return upper
    return lax.select(ctx.running, _i64(upper), _i64(lower))


def _for_loop(ctx, eqn, *ops):
    from ..control_flow.binders import bind_for_loop
    from ..control_flow.primitives import fixed_inputs
    if eqn.params.get("nimplicit"):
        return _resizing_loop(ctx, eqn, *ops)
    _fixed_carries(eqn)
    p = eqn.params
    nc, body = p["body_nconsts"], p["body_jaxpr"]
    consts, (lower, upper, step), carries = ops[:nc], ops[nc:nc + 3], list(ops[nc + 4:])
    if ctx.running is not None:
        lower, upper = _i64(lower), _gated_upper(ctx, lower, upper)
    pairs = fixed_inputs(eqn)

    def step_fn(i, carry):
        return list(_nested(ctx, eqn, 0, body, [*consts, i, *carry], pairs))
    return bind_for_loop(step_fn, lower, upper, step, carries, True)


def _while_loop(ctx, eqn, *ops):
    from ..control_flow.binders import bind_while_loop
    from ..control_flow.primitives import fixed_inputs
    if eqn.params.get("nimplicit"):
        return _resizing_loop(ctx, eqn, *ops)
    _fixed_carries(eqn)
    p = eqn.params
    cc, bc = p["cond_nconsts"], p["body_nconsts"]
    cconsts, bconsts, carries = ops[:cc], ops[cc:cc + bc], list(ops[cc + bc:])
    pairs = fixed_inputs(eqn)

    def cond_fn(carry):
        keep = _nested(ctx, eqn, 0, p["cond_jaxpr"], [*cconsts, *carry], pairs)[0]
        return keep if ctx.running is None else lax.bitwise_and(keep, ctx.running)

    def body_fn(carry):
        return list(_nested(ctx, eqn, 1, p["body_jaxpr"], [*bconsts, *carry], pairs))
    return bind_while_loop(cond_fn, body_fn, carries, True)


def _cond(ctx, eqn, index, *ops):
    from ..control_flow.binders import bind_cond
    from ..control_flow.primitives import fixed_inputs
    produced = {id(v) for v in eqn.outvars}
    if any(id(d) in produced for v in eqn.outvars for d in v.aval.shape if not isinstance(d, int)):
        raise NotPaddable("cond whose branches return different sizes")
    pairs = fixed_inputs(eqn)
    branches = [lambda *args, k=k, b=b: _nested(ctx, eqn, k, b, list(args), pairs)
                for k, b in enumerate(eqn.params["branches"])]
    return list(bind_cond(index, branches, list(ops)))


def _scan(ctx, eqn, *ops):
    """A ``for_loop`` over the logical length: row ``t`` of each scanned input is read with a
    dynamic slice, and row ``t`` of each stacked output written into a padded buffer."""
    from ..control_flow.binders import bind_for_loop
    from ..control_flow.primitives import fixed_inputs
    _fixed_carries(eqn)
    p = eqn.params
    nc, ncarry, body = p["num_consts"], p["num_carry"], p["jaxpr"]
    consts, length = ops[:nc], ops[nc]
    carries, xs = list(ops[nc + 1:nc + 1 + ncarry]), list(ops[nc + 1 + ncarry:])
    ys = [lax.broadcast_in_dim(np.zeros((), v.aval.dtype), ctx.padded_shape(v.aval), ())
          for v in eqn.outvars[ncarry:]]
    pairs = fixed_inputs(eqn)
    n = _gated_upper(ctx, np.int64(0), _i64(length))

    def step_fn(i, state):
        carry, ys_ = state[:ncarry], state[ncarry:]
        t = lax.sub(lax.sub(n, np.int64(1)), i) if p["reverse"] else i
        x_rows = [lax.squeeze(lax.api.dynamic_slice(x, [t] + [np.int64(0)] * (len(lax_shape(x)) - 1),
                                                (1,) + tuple(lax_shape(x)[1:])), (0,)) for x in xs]
        outs = _nested(ctx, eqn, 0, body, [*consts, *carry, *x_rows], pairs)
        new_ys = [lax.api.dynamic_update_slice(y, lax.broadcast_in_dim(o, (1,) + tuple(lax_shape(o)),
                                                                   tuple(range(1, len(lax_shape(o)) + 1))),
                                           [t] + [np.int64(0)] * len(lax_shape(o)))
                  for y, o in zip(ys_, outs[ncarry:])]
        return list(outs[:ncarry]) + new_ys
    return bind_for_loop(step_fn, np.int64(0), n, np.int64(1), carries + ys, True)


def _custom_call(ctx, eqn, *ops):
    """A ``custom_jvp`` / ``custom_vjp`` function runs its primal body (its derivative rules
    took effect at trace time): pad the body, whose inputs are the equation's operands."""
    body = eqn.params["call_jaxpr"]
    return _nested(ctx, eqn, 0, body, list(ops), [[(k, k) for k in range(len(body.invars))]])


def _custom_linear_solve(ctx, eqn, *ops):
    """``custom_linear_solve`` runs its solve program (its other programs only serve the
    derivative rules, at trace time): pad it, on its constants and the vector."""
    from ..control_flow.linear_solve import solve_operand_indices
    solve = eqn.params["jaxprs"][2]
    idx = solve_operand_indices(eqn.params["const_lengths"], len(eqn.invars))
    return _nested(ctx, eqn, 0, solve, [ops[o] for o in idx], [list(enumerate(idx))])


def _control_flow_rules():
    from ..control_flow.primitives import cond_p, for_loop_p, scan_p, while_loop_p
    padding_rules[for_loop_p] = _for_loop
    padding_rules[while_loop_p] = _while_loop
    padding_rules[cond_p] = _cond
    padding_rules[scan_p] = _scan
    from ..transforms.custom import custom_jvp_call_p, custom_vjp_call_p
    padding_rules[custom_jvp_call_p] = _custom_call
    padding_rules[custom_vjp_call_p] = _custom_call
    from ..transforms.custom_vmap import custom_vmap_call_p
    padding_rules[custom_vmap_call_p] = _custom_call
    from ..control_flow.linear_solve import custom_linear_solve_p
    padding_rules[custom_linear_solve_p] = _custom_linear_solve


_control_flow_rules()


# --- loops whose carried sizes change: run on device within capacities ---------------------
def _invariant_lows(context, sizes_only: Jaxpr, lows):
    """The lower ends of a resizing loop's carried sizes that hold at every iteration, by
    induction: the initial sizes are at least ``lows``, and if the body, given carried sizes
    within their lower ends and the capacities (``context()``), makes sizes at least as large,
    every iteration's are. A size whose end the body's intervals do not keep goes down to 0,
    and the others are checked again under that weaker hypothesis. Each end that holds spares
    the body the arithmetic and selects of sizes that could be 0 (``a[:1]`` of a carried
    array that starts with one element and only grows is one element wide)."""
    from ..core.avals import ShapedArray
    from ..tracing import trace_flat
    lows = list(lows)
    while any(lows):
        sub = context()
        in_type = [(ShapedArray(sub.padded_shape(v.aval), v.aval.dtype), True) for v in sizes_only.invars]
        trace_flat(lambda *args: (interpret(sub, sizes_only, [], args), None), in_type)
        kept = [lo if lo == 0 or (sub.interval(v)[0] is not None and sub.interval(v)[0] >= lo) else 0
                for v, lo in zip(sizes_only.outvars, lows)]
        if kept == lows:
            break
        lows = kept
    return lows


def _resizing_loop(ctx, eqn, *ops):
    """A ``for_loop`` / ``while_loop`` whose carried sizes change, run on device within a
    capacity per carried size (``ctx.capacities[id(eqn)]``, set by
    ``padded_runs.CapacityProgram`` for the loops at the top level of a program; elsewhere
    such a loop is not paddable).

    The carried arrays live in buffers of the capacities. The loop's condition also asks
    whether the next iteration's sizes fit, so that the body may assume they do: its arrays
    keep their buffers and are updated in place. When an iteration would not fit, the loop
    stops and ``ctx.running`` turns false, so that no loop after it runs on its unfinished
    values; the program reports the loop (``ctx.reports``), and the host runs it again with
    larger capacities."""
    from ..control_flow.binders import bind_while_loop
    from ..control_flow.primitives import fixed_inputs, for_loop_p
    from ..core.staging import live_equations
    requested = ctx.capacities.get(id(eqn))
    if requested is None:
        raise NotPaddable(f"{eqn.primitive} whose carried sizes change, inside other control flow")
    p = eqn.params
    ni = p["nimplicit"]
    indexed = eqn.primitive is for_loop_p
    if indexed:
        if p.get("apply_reverse_transform"):
            raise NotPaddable("a reversed for_loop")
        nc = p["body_nconsts"]
        first_dim = nc + 4                # operands: consts, lower, upper, step, i0, dims, carries
        body, cond = p["body_jaxpr"], None
        body_pairs, body_dims0 = fixed_inputs(eqn)[0], nc + 1   # body: consts, i, dims, carries
    else:
        cc, nc = p["cond_nconsts"], p["body_nconsts"]
        first_dim = cc + nc                # operands: cond consts, body consts, dims, carries
        body, cond = p["body_jaxpr"], p["cond_jaxpr"]
        cond_pairs, body_pairs = fixed_inputs(eqn)
        body_dims0 = nc
    first_carry = first_dim + ni
    # a capacity holds at least the initial sizes' bound: the initial buffers fit
    caps = []
    for k in range(ni):
        hi = ctx.interval(eqn.invars[first_dim + k])[1]
        if hi is None:
            raise NotPaddable(f"no bound for the initial size {k} of a resizing loop")
        caps.append(max(int(requested[k]), int(hi)))
    # the carried sizes' lower ends: the initial sizes', while the body keeps them (checked
    # below); 0 otherwise
    lows = []
    for k in range(ni):
        lo = ctx.interval(eqn.invars[first_dim + k])[0]
        lows.append(max(int(lo), 0) if lo is not None else 0)

    def context(jx, pairs, dims_at, clip=None):
        """A context for a nested program: the intervals its fixed inputs have outside, the
        carried sizes within their lower ends and the capacities."""
        sub = Context(clip)
        sub.running = ctx.running
        for invar_index, operand_index in pairs:
            lo_hi = ctx.interval(eqn.invars[operand_index])
            if lo_hi != (None, None):
                sub.intervals[id(jx.invars[invar_index])] = lo_hi
        for k in range(ni):
            sub.intervals[id(jx.invars[dims_at + k])] = (lows[k], caps[k])
        return sub

    dim_outs = body.outvars[:ni]
    sizes_only = Jaxpr([], list(body.invars), live_equations(body.eqns, dim_outs), list(dim_outs))
    if any(lows):
        lows = _invariant_lows(lambda: context(body, body_pairs, body_dims0), sizes_only, lows)
    carry_invars = body.invars[body_dims0 + ni:]
    carry_shapes = [context(body, body_pairs, body_dims0).padded_shape(v.aval) for v in carry_invars]
    clip = {id(v): c for v, c in zip(dim_outs, caps) if not isinstance(v, Literal)}
    consts = ops[:nc] if indexed else ops[cc:cc + nc]

    def body_args(i, dims, carries):
        return list(consts) + ([i] if indexed else []) + list(dims) + list(carries)

    def next_sizes(i, dims, carries):
        """The carried sizes the next iteration makes (only the equations they need), and
        whether they fit."""
        sub = context(body, body_pairs, body_dims0)
        new_dims = [_i64(d) for d in interpret(sub, sizes_only, [], body_args(i, dims, carries))]
        fits = None
        for d, c in zip(new_dims, caps):
            fit = lax.le(d, np.int64(c))
            fits = fit if fits is None else lax.bitwise_and(fits, fit)
        return (np.bool_(True) if fits is None else fits), new_dims

    def run_body(i, dims, carries):
        """The next iteration's carried values, knowing that their sizes fit: the sizes'
        bounds are the capacities, so the arrays stay in their buffers."""
        outs = interpret(context(body, body_pairs, body_dims0, clip), body, [], body_args(i, dims, carries))
        resized = []
        for x, shape in zip(outs[ni:], carry_shapes):
            for ax, length in enumerate(shape):
                x = _resize_axis(x, ax, length)
            resized.append(x)
        return [_i64(d) for d in outs[:ni]], resized

    def gated(pred):
        return pred if ctx.running is None else lax.bitwise_and(pred, ctx.running)

    dims0 = [_i64(d) for d in ops[first_dim:first_carry]]
    carries0 = []
    for x, shape in zip(ops[first_carry:], carry_shapes):
        for ax, length in enumerate(shape):
            x = _resize_axis(x, ax, length)
        carries0.append(x)
    if indexed:
        lower, upper, step, i0 = (_i64(v) for v in ops[nc:nc + 4])

        def ahead(i):
            if isinstance(step, np.integer):   # a constant step: its direction is known
                return lax.lt(i, upper) if step > 0 else lax.gt(i, upper)
            return lax.select(lax.gt(step, np.int64(0)), lax.lt(i, upper), lax.gt(i, upper))

        def keep_going(st):
            i, dims, carries = st[0], st[1:1 + ni], st[1 + ni:]
            return gated(lax.bitwise_and(ahead(i), next_sizes(i, dims, carries)[0]))

        def step_fn(st):
            i, dims, carries = st[0], st[1:1 + ni], st[1 + ni:]
            new_dims, new_carries = run_body(i, dims, carries)
            return [lax.add(i, step)] + new_dims + new_carries
        out = bind_while_loop(keep_going, step_fn, [i0] + dims0 + carries0, True)
        i, dims, carries = out[0], out[1:1 + ni], out[1 + ni:]
        over = ahead(i)
    else:
        cconsts = ops[:cc]

        def wanted(dims, carries):
            sub = context(cond, cond_pairs, cc)
            return interpret(sub, cond, [], list(cconsts) + list(dims) + list(carries))[0]

        def keep_going(st):
            dims, carries = st[:ni], st[ni:]
            return gated(lax.bitwise_and(wanted(dims, carries), next_sizes(None, dims, carries)[0]))

        def step_fn(st):
            new_dims, new_carries = run_body(None, st[:ni], st[ni:])
            return new_dims + new_carries
        out = bind_while_loop(keep_going, step_fn, dims0 + carries0, True)
        i, dims, carries = None, out[:ni], out[ni:]
        over = wanted(dims, carries)
    over = gated(over)   # a loop after one that stopped early did not run: not its fault
    needed = next_sizes(i, dims, carries)[1]
    ctx.reports.append((over, needed, tuple(caps), list(dims)))
    ctx.running = lax.bitwise_not(over) if ctx.running is None else lax.bitwise_and(ctx.running,
                                                                                  lax.bitwise_not(over))
    for v, c in zip(eqn.outvars[:ni], caps):   # the results' sizes lie within the capacities
        ctx.clip[id(v)] = c
    return list(dims) + list(carries)
