"""Differentiating ``for_loop``, ``while_loop``, ``scan`` and ``cond``.

Every rule here builds its result with the control-flow *binders*
(``control_flow/binders.py``), giving them a Python body that evaluates the original nested
jaxpr under the transformation. The binders then trace that body like a user's, so dynamic
dims, captured values and loop expansion work exactly as for user code.

* **jvp** (``jvp_rules``): the loop carries (primal, tangent) pairs; the body is the jvp of
  the original body. Which carried tangents are non-zero is found by a fixpoint over the
  body's data flow.
* **partial evaluation** (``partial_eval_rules``): when linearizing, a loop whose operands
  are partly known splits into a *known* ``scan`` computing the primal results and stacking
  the known carries of every iteration, and an *unknown* ``scan`` over those stacks that
  recomputes each iteration's primal values and applies its tangent operations. A ``cond``
  splits into a known ``cond`` and an unknown one that recomputes its branch's primal
  values. ``while_loop`` cannot be split (its trip count is only known at the end): reverse
  mode through it is a clear error, as in JAX.
* **transpose** (``transpose_rules``): a linear ``scan`` becomes a ``scan`` in the opposite
  direction over the transposed body; a linear ``cond`` a ``cond`` over the transposed
  branches.
"""
from __future__ import annotations

from .. import numpy as jnp
from ..control_flow.binders import bind_cond, bind_for_loop, bind_scan, bind_while_loop
from ..control_flow.primitives import (carry_fixpoint, cond_p, dim_positions, for_loop_p, scan_p,
                                       while_loop_p)
from ..core.avals import is_inexact_dtype, same_dim
from ..core.interpret import eval_jaxpr
from ..core.jaxpr import Jaxpr
from ..core.primitive import jvp_rules, partial_eval_rules, transpose_rules
from ..core.trace import typeof
from ..lax import api as lax_api
from .jvp import Zero, instantiate, jvp_flat
from .partial_eval import dependence, dependence_rules, eval_known, eval_split, live_inputs
from .transpose import UndefinedPrimal, backward_pass, is_undefined, zeros


# ----------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------
def _nonzero(t) -> bool:
    return not isinstance(t, Zero)


def _carry_fixpoint(body: Jaxpr, lead_flags, carry_flags, tail_flags, nimplicit: int):
    """Which carried values (and extra outputs) depend on the flagged inputs (tangents)."""
    return carry_fixpoint(body, lead_flags, carry_flags, tail_flags, nimplicit, dependence)


def _like(t, x):
    """The tangent ``t`` with the dims of its primal ``x``. A loop that lets carried sizes
    change (``allow_array_resizing``) gives each carried array its own size variables, so a
    primal and its tangent carry different (but always equal) sizes; the reshape states that
    they are equal (a no-op at run time) so the tangent can be used with the primal."""
    if t is None:
        return None
    ta, xa = typeof(t), typeof(x)
    if all(same_dim(a, b) for a, b in zip(ta.shape, xa.shape)):
        return t
    return lax_api.reshape(t, xa.shape)


def _dims_from(values, positions):
    return [typeof(values[k]).shape[ax] for k, ax in positions]


def _merge(flags, known_values, unknown_values):
    """Interleave: position i takes the next unknown value when ``flags[i]``, else the next known."""
    kn, un = iter(known_values), iter(unknown_values)
    return [next(un) if f else next(kn) for f in flags]


def _invariant_sizes(body: Jaxpr, first_carry: int, nimplicit: int, name: str):
    """Reverse mode stacks the carried values of every iteration, so their sizes must not
    change from one iteration to the next."""
    for k in range(nimplicit):
        if body.outvars[k] is not body.invars[first_carry + k]:
            raise NotImplementedError(
                f"reverse-mode differentiation through a {name} whose carried arrays change size "
                "is not supported (forward mode, dynjax.jvp / jacfwd, is)")


# ----------------------------------------------------------------------------------------------
# jvp
# ----------------------------------------------------------------------------------------------
def _for_loop_jvp(primals, tangents, *, body_jaxpr, body_nconsts, nimplicit, apply_reverse_transform,
                  preserve_dimensions):
    nc, ni = body_nconsts, nimplicit
    consts, (lower, upper, step, _), xs = primals[:nc], primals[nc:nc + 4], primals[nc + 4 + ni:]
    c_t, x_t = tangents[:nc], tangents[nc + 4 + ni:]
    x_nz, _ = _carry_fixpoint(body_jaxpr, [_nonzero(t) for t in c_t] + [False] * (1 + ni),
                              [_nonzero(t) for t in x_t], [], ni)
    x_nz = [nz and is_inexact_dtype(typeof(x).dtype) for nz, x in zip(x_nz, xs)]
    dims_at = dim_positions(body_jaxpr.invars[nc + 1:nc + 1 + ni], [v.aval for v in body_jaxpr.invars[nc + 1 + ni:]])
    init_t = [instantiate(t) if nz else None for t, nz in zip(x_t, x_nz)]

    def body(i, carry):
        x, t = carry
        t = [_like(tt, xx) for tt, xx in zip(t, x)]
        dims = _dims_from(x, dims_at)
        p_out, t_out = jvp_flat(lambda *a: eval_jaxpr(body_jaxpr, [], *a[:nc], i, *dims, *a[nc:])[ni:],
                                list(consts) + list(x),
                                list(c_t) + [tt if nz else Zero(typeof(xx)) for tt, nz, xx in zip(t, x_nz, x)])
        return list(p_out), [instantiate(tt) if nz else None for tt, nz in zip(t_out, x_nz)]

    x_out, t_out = bind_for_loop(body, lower, upper, step, (list(xs), init_t), preserve_dimensions)
    t_out = [_like(tt, xx) for tt, xx in zip(t_out, x_out)]
    dims = _dims_from(x_out, dims_at)
    return dims + list(x_out), [Zero(typeof(d)) for d in dims] + [
        tt if nz else Zero(typeof(xx)) for tt, nz, xx in zip(t_out, x_nz, x_out)]


def _while_loop_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts, nimplicit,
                    preserve_dimensions):
    cc, bc, ni = cond_nconsts, body_nconsts, nimplicit
    cconsts, bconsts, xs = primals[:cc], primals[cc:cc + bc], primals[cc + bc + ni:]
    b_t, x_t = tangents[cc:cc + bc], tangents[cc + bc + ni:]
    x_nz, _ = _carry_fixpoint(body_jaxpr, [_nonzero(t) for t in b_t] + [False] * ni,
                              [_nonzero(t) for t in x_t], [], ni)
    x_nz = [nz and is_inexact_dtype(typeof(x).dtype) for nz, x in zip(x_nz, xs)]
    dims_at = dim_positions(body_jaxpr.invars[bc:bc + ni], [v.aval for v in body_jaxpr.invars[bc + ni:]])
    init_t = [instantiate(t) if nz else None for t, nz in zip(x_t, x_nz)]

    def cond_fun(carry):
        x, _ = carry
        return eval_jaxpr(cond_jaxpr, [], *cconsts, *_dims_from(x, dims_at), *x)[0]

    def body(carry):
        x, t = carry
        t = [_like(tt, xx) for tt, xx in zip(t, x)]
        dims = _dims_from(x, dims_at)
        p_out, t_out = jvp_flat(lambda *a: eval_jaxpr(body_jaxpr, [], *a[:bc], *dims, *a[bc:])[ni:],
                                list(bconsts) + list(x),
                                list(b_t) + [tt if nz else Zero(typeof(xx)) for tt, nz, xx in zip(t, x_nz, x)])
        return list(p_out), [instantiate(tt) if nz else None for tt, nz in zip(t_out, x_nz)]

    x_out, t_out = bind_while_loop(cond_fun, body, (list(xs), init_t), preserve_dimensions)
    t_out = [_like(tt, xx) for tt, xx in zip(t_out, x_out)]
    dims = _dims_from(x_out, dims_at)
    return dims + list(x_out), [Zero(typeof(d)) for d in dims] + [
        tt if nz else Zero(typeof(xx)) for tt, nz, xx in zip(t_out, x_nz, x_out)]


def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, nimplicit, reverse, preserve_dimensions):
    nc, ni = num_consts, nimplicit
    nx = num_carry - ni
    consts, length = primals[:nc], primals[nc]
    carries, xs = primals[nc + 1 + ni:nc + 1 + num_carry], primals[nc + 1 + num_carry:]
    c_t = tangents[:nc]
    x_t, xs_t = tangents[nc + 1 + ni:nc + 1 + num_carry], tangents[nc + 1 + num_carry:]
    x_nz, y_nz = _carry_fixpoint(jaxpr, [_nonzero(t) for t in c_t] + [False] * ni,
                                 [_nonzero(t) for t in x_t], [_nonzero(t) for t in xs_t], ni)
    x_nz = [nz and is_inexact_dtype(typeof(x).dtype) for nz, x in zip(x_nz, carries)]
    y_avals = [v.aval for v in jaxpr.outvars[num_carry:]]
    y_nz = [nz and is_inexact_dtype(a.dtype) for nz, a in zip(y_nz, y_avals)]
    dims_at = dim_positions(jaxpr.invars[nc:nc + ni], [v.aval for v in jaxpr.invars[nc + ni:nc + num_carry]])
    init_t = [instantiate(t) if nz else None for t, nz in zip(x_t, x_nz)]
    xs_nz = [_nonzero(t) for t in xs_t]

    def body(carry, x_slices):
        x, t = carry
        t = [_like(tt, xx) for tt, xx in zip(t, x)]
        sl, sl_t = x_slices
        dims = _dims_from(x, dims_at)
        sl_t_full = iter(sl_t)
        p_out, t_out = jvp_flat(
            lambda *a: eval_jaxpr(jaxpr, [], *a[:nc], *dims, *a[nc:]),
            list(consts) + list(x) + list(sl),
            list(c_t) + [tt if nz else Zero(typeof(xx)) for tt, nz, xx in zip(t, x_nz, x)]
            + [next(sl_t_full) if nz else Zero(typeof(s)) for nz, s in zip(xs_nz, sl)])
        p_out, t_out = p_out[ni:], t_out[ni:]
        new_x, ys = p_out[:nx], p_out[nx:]
        new_t = [instantiate(tt) if nz else None for tt, nz in zip(t_out[:nx], x_nz)]
        ys_t = [instantiate(tt) for tt, nz in zip(t_out[nx:], y_nz) if nz]
        return (list(new_x), new_t), (list(ys), ys_t)

    (x_out, t_out), (ys, ys_t) = bind_scan(body, (list(carries), init_t),
                                           (list(xs), [t for t, nz in zip(xs_t, xs_nz) if nz]),
                                           length, reverse, preserve_dimensions)
    t_out = [_like(tt, xx) for tt, xx in zip(t_out, x_out)]
    dims = _dims_from(x_out, dims_at)
    ys_t = iter(ys_t)
    return (dims + list(x_out) + list(ys),
            [Zero(typeof(d)) for d in dims]
            + [tt if nz else Zero(typeof(xx)) for tt, nz, xx in zip(t_out, x_nz, x_out)]
            + [next(ys_t) if nz else Zero(typeof(y)) for nz, y in zip(y_nz, ys)])


def _implicit_out_positions(branch: Jaxpr):
    nimp = branch.out_explicit.count(False)
    return nimp, dim_positions(branch.outvars[:nimp], [v.aval for v in branch.outvars[nimp:]])


def _cond_jvp(primals, tangents, *, branches):
    index, ops = primals[0], primals[1:]
    op_t = tangents[1:]
    op_nz = [_nonzero(t) for t in op_t]
    nimp, dims_at = _implicit_out_positions(branches[0])
    out_nz = [False] * (len(branches[0].outvars) - nimp)
    for br in branches:
        out_nz = [a or b for a, b in zip(out_nz, dependence(br, op_nz)[nimp:])]
    out_nz = [nz and is_inexact_dtype(v.aval.dtype) for nz, v in zip(out_nz, branches[0].outvars[nimp:])]
    live_t = [t for t in op_t if _nonzero(t)]

    def make(br):
        def branch(ops_, ts_):
            ts_ = iter(ts_)
            full_t = [next(ts_) if nz else Zero(typeof(o)) for nz, o in zip(op_nz, ops_)]
            p_out, t_out = jvp_flat(lambda *a: eval_jaxpr(br, [], *a)[nimp:], list(ops_), full_t)
            return list(p_out), [instantiate(t) for t, nz in zip(t_out, out_nz) if nz]
        return branch

    p_out, t_out = bind_cond(index, [make(br) for br in branches], (list(ops), live_t))
    dims = _dims_from(p_out, dims_at)
    t_out = iter(t_out)
    return (dims + list(p_out), [Zero(typeof(d)) for d in dims]
            + [next(t_out) if nz else Zero(typeof(p)) for nz, p in zip(out_nz, p_out)])


jvp_rules[for_loop_p] = _for_loop_jvp
jvp_rules[while_loop_p] = _while_loop_jvp
jvp_rules[scan_p] = _scan_jvp
jvp_rules[cond_p] = _cond_jvp


# ----------------------------------------------------------------------------------------------
# Partial evaluation (linearize)
# ----------------------------------------------------------------------------------------------
def _trip_count(lower, upper, step):
    """The number of iterations of ``for i in range(lower, upper, step)``: ``max(0,
    ceil((upper - lower) / step))``, for either sign of ``step``."""
    from ..core.trace import Tracer
    if not any(isinstance(v, Tracer) for v in (lower, upper, step)):
        return max(0, -((int(lower) - int(upper)) // int(step)))
    n = jnp.negative(jnp.floor_divide(jnp.subtract(lower, upper), step))
    return jnp.maximum(n, 0)


def _for_loop_pe(eqn, known, flags):
    p = eqn.params
    body, nc, ni = p["body_jaxpr"], p["body_nconsts"], p["nimplicit"]
    c_unk, x_unk = flags[:nc], flags[nc + 4 + ni:]
    x_unk, _ = _carry_fixpoint(body, list(c_unk) + [False] * (1 + ni), x_unk, [], ni)
    _invariant_sizes(body, nc + 1, ni, "for_loop")
    lower, upper, step = known[nc:nc + 3]
    dims = known[nc + 4:nc + 4 + ni]
    consts_k = known[:nc]
    x0 = known[nc + 4 + ni:]
    xk0 = [x for x, u in zip(x0, x_unk) if not u]
    body_flags = list(c_unk) + [False] * (1 + ni) + list(x_unk)
    length = _trip_count(lower, upper, step)

    # what the linear part of an iteration reads: the index, and the known carries it uses
    live = live_inputs(body, [False] * ni + list(x_unk))
    i_live = live[nc]
    xk_live = [lv for lv, u in zip(live[nc + 1 + ni:], x_unk) if not u]

    def known_body(carry, _):
        i, xk = carry
        outs = eval_known(body, list(consts_k) + [i] + list(dims) + _merge(x_unk, xk, [None] * sum(x_unk)),
                          body_flags)[ni:]
        kept = [x for x, lv in zip(xk, xk_live) if lv]
        return (jnp.add(i, step), [o for o, u in zip(outs, x_unk) if not u]), ([i] if i_live else [], kept)

    (_, xk_final), (i_stack, xk_stack) = bind_scan(known_body, (jnp.asarray(lower), xk0), (), length, False)
    known_outs = list(dims) + _merge(x_unk, xk_final, [None] * sum(x_unk))

    def stage(vals):
        consts = vals[:nc]
        xu0 = [v if v is not None else known_v for v, known_v, u in zip(vals[nc + 4 + ni:], x0, x_unk) if u]

        def unknown_body(xu, slices):
            i, kept = slices
            kept = iter(kept)
            xk = [next(kept) if lv else None for lv in xk_live]
            outs = eval_split(body, list(consts) + [i[0] if i_live else None] + list(dims)
                              + _merge(x_unk, xk, xu), body_flags)[ni:]
            return [o for o, u in zip(outs, x_unk) if u], ()

        xu_final, _ = bind_scan(unknown_body, xu0, (i_stack, xk_stack), length, False)
        return [None] * ni + _merge(x_unk, [None] * (len(x_unk) - sum(x_unk)), xu_final)
    return known_outs, stage


def _scan_pe(eqn, known, flags):
    p = eqn.params
    body, nc, ni, ncarry = p["jaxpr"], p["num_consts"], p["nimplicit"], p["num_carry"]
    reverse, nx = p["reverse"], p["num_carry"] - p["nimplicit"]
    c_unk = flags[:nc]
    x_unk, xs_unk = flags[nc + 1 + ni:nc + 1 + ncarry], flags[nc + 1 + ncarry:]
    x_unk, y_unk = _carry_fixpoint(body, list(c_unk) + [False] * ni, x_unk, xs_unk, ni)
    _invariant_sizes(body, nc, ni, "scan")
    consts_k, length, dims = known[:nc], known[nc], known[nc + 1:nc + 1 + ni]
    x0, xs = known[nc + 1 + ni:nc + 1 + ncarry], known[nc + 1 + ncarry:]
    xk0 = [x for x, u in zip(x0, x_unk) if not u]
    xs_k = [x for x, u in zip(xs, xs_unk) if not u]
    body_flags = list(c_unk) + [False] * ni + list(x_unk) + list(xs_unk)

    live = live_inputs(body, [False] * ni + list(x_unk) + list(y_unk))
    xk_live = [lv for lv, u in zip(live[nc + ni:nc + ni + nx], x_unk) if not u]

    def known_body(xk, sl):
        outs = eval_known(body, list(consts_k) + list(dims) + _merge(x_unk, xk, [None] * sum(x_unk))
                          + _merge(xs_unk, sl, [None] * sum(xs_unk)), body_flags)[ni:]
        new_xk = [o for o, u in zip(outs[:nx], x_unk) if not u]
        ys_k = [o for o, u in zip(outs[nx:], y_unk) if not u]
        return new_xk, (ys_k, [x for x, lv in zip(xk, xk_live) if lv])

    xk_final, (ys_k, xk_stack) = bind_scan(known_body, xk0, xs_k, length, reverse)
    known_outs = list(dims) + _merge(x_unk, xk_final, [None] * sum(x_unk)) + \
        _merge(y_unk, ys_k, [None] * sum(y_unk))

    def stage(vals):
        consts = vals[:nc]
        xu0 = [v if v is not None else known_v for v, known_v, u in
               zip(vals[nc + 1 + ni:nc + 1 + ncarry], x0, x_unk) if u]
        xs_all = [v if v is not None else known_v for v, known_v in zip(vals[nc + 1 + ncarry:], xs)]

        def unknown_body(xu, slices):
            kept, sl = slices
            kept = iter(kept)
            xk = [next(kept) if lv else None for lv in xk_live]
            outs = eval_split(body, list(consts) + list(dims) + _merge(x_unk, xk, xu) + list(sl), body_flags)[ni:]
            return [o for o, u in zip(outs[:nx], x_unk) if u], [o for o, u in zip(outs[nx:], y_unk) if u]

        xu_final, ys_u = bind_scan(unknown_body, xu0, (xk_stack, xs_all), length, reverse)
        return ([None] * ni + _merge(x_unk, [None] * (nx - sum(x_unk)), xu_final)
                + _merge(y_unk, [None] * (len(y_unk) - sum(y_unk)), ys_u))
    return known_outs, stage


def _cond_pe(eqn, known, flags):
    branches = eqn.params["branches"]
    index, ops = known[0], known[1:]
    op_unk = flags[1:]
    nimp = branches[0].out_explicit.count(False)
    out_unk = [False] * (len(branches[0].outvars) - nimp)
    for br in branches:
        out_unk = [a or b for a, b in zip(out_unk, dependence(br, op_unk)[nimp:])]
    known_ops = [o for o, u in zip(ops, op_unk) if not u]

    def known_branch(br):
        def run(*kops):
            outs = eval_known(br, _merge(op_unk, kops, [None] * sum(op_unk)), op_unk)
            return [o for o, u in zip(outs[nimp:], out_unk) if not u]
        return run

    k_out = bind_cond(index, [known_branch(br) for br in branches], known_ops)
    nimp_out, dims_at = _implicit_out_positions(branches[0])
    known_explicit = _merge(out_unk, k_out, [None] * sum(out_unk))
    dims = [typeof(known_explicit[k]).shape[ax] if known_explicit[k] is not None else None for k, ax in dims_at]
    if any(d is None for d in dims):
        raise NotImplementedError("reverse-mode differentiation of a cond whose branches return arrays "
                                  "of different sizes is not supported")
    known_outs = dims + known_explicit

    def stage(vals):
        all_ops = [v if v is not None else k for v, k in zip(vals[1:], ops)]

        def unknown_branch(br):
            def run(*ops_):
                outs = eval_split(br, list(ops_), op_unk)
                return [o for o, u in zip(outs[nimp:], out_unk) if u]
            return run
        u_out = bind_cond(vals[0] if vals[0] is not None else index,
                          [unknown_branch(br) for br in branches], all_ops)
        return [None] * nimp + _merge(out_unk, [None] * (len(out_unk) - sum(out_unk)), u_out)
    return known_outs, stage


def _while_loop_pe(eqn, known, flags):
    raise TypeError(
        "reverse-mode differentiation (grad, vjp, jacrev, linearize) of a while_loop is not "
        "supported: its number of iterations is only known when it ends, so the values of "
        "every iteration cannot be stored in advance. Use for_loop or scan with a bounded "
        "number of iterations, or forward mode (jvp, jacfwd)")


def _for_loop_dependence(eqn, flags):
    p = eqn.params
    nc, ni = p["body_nconsts"], p["nimplicit"]
    x, _ = _carry_fixpoint(p["body_jaxpr"], list(flags[:nc]) + [False] * (1 + ni), flags[nc + 4 + ni:], [], ni)
    return [False] * ni + x


def _while_loop_dependence(eqn, flags):
    p = eqn.params
    cc, bc, ni = p["cond_nconsts"], p["body_nconsts"], p["nimplicit"]
    x, _ = _carry_fixpoint(p["body_jaxpr"], list(flags[cc:cc + bc]) + [False] * ni, flags[cc + bc + ni:], [], ni)
    return [False] * ni + x


def _scan_dependence(eqn, flags):
    p = eqn.params
    nc, ni, ncarry = p["num_consts"], p["nimplicit"], p["num_carry"]
    x, y = _carry_fixpoint(p["jaxpr"], list(flags[:nc]) + [False] * ni, flags[nc + 1 + ni:nc + 1 + ncarry],
                           flags[nc + 1 + ncarry:], ni)
    return [False] * ni + x + y


def _cond_dependence(eqn, flags):
    out = [False] * len(eqn.outvars)
    for br in eqn.params["branches"]:
        out = [a or b for a, b in zip(out, dependence(br, flags[1:]))]
    return out


dependence_rules[for_loop_p] = _for_loop_dependence
dependence_rules[while_loop_p] = _while_loop_dependence
dependence_rules[scan_p] = _scan_dependence
dependence_rules[cond_p] = _cond_dependence

partial_eval_rules[for_loop_p] = _for_loop_pe
partial_eval_rules[scan_p] = _scan_pe
partial_eval_rules[cond_p] = _cond_pe
partial_eval_rules[while_loop_p] = _while_loop_pe


# ----------------------------------------------------------------------------------------------
# Transpose
# ----------------------------------------------------------------------------------------------
def _scan_transpose(cts, *operands, jaxpr, num_consts, num_carry, nimplicit, reverse, preserve_dimensions):
    nc, ni, ncarry = num_consts, nimplicit, num_carry
    nx = ncarry - ni
    if ni:
        raise NotImplementedError("transposing a scan whose carried arrays change size")
    consts, length = operands[:nc], operands[nc]
    carries, xs = operands[nc + 1:nc + 1 + ncarry], operands[nc + 1 + ncarry:]
    ct_x, ct_ys = cts[ni:ni + nx], cts[ni + nx:]
    c_lin = [is_undefined(c) for c in consts]
    xs_lin = [is_undefined(x) for x in xs]
    carry_avals = [c.aval if is_undefined(c) else typeof(c) for c in carries]
    ct_x0 = [zeros(a) if c is None else c for c, a in zip(ct_x, carry_avals)]
    acc0 = [zeros(c.aval) for c in consts if is_undefined(c)]
    ys_live = [c is not None for c in ct_ys]
    xs_nonlin = [x for x in xs if not is_undefined(x)]
    slice_avals = [x.aval.update(shape=x.aval.shape[1:]) for x in xs if is_undefined(x)]

    def body(carry, sl):
        ct_carry, acc = carry
        x_nl, ct_y = sl
        x_nl, slice_it = iter(x_nl), iter(slice_avals)
        args = ([UndefinedPrimal(c.aval) if is_undefined(c) else c for c in consts]
                + [UndefinedPrimal(a) for a in carry_avals]
                + [UndefinedPrimal(next(slice_it)) if lin else next(x_nl) for lin in xs_lin])
        ct_y = iter(ct_y)
        out_cts = list(ct_carry) + [next(ct_y) if live else None for live in ys_live]
        in_cts = backward_pass(jaxpr, args, out_cts)
        c_cts = [c for c, lin in zip(in_cts[:nc], c_lin) if lin]
        acc = [a if c is None else jnp.add(a, c) for a, c in zip(acc, c_cts)]
        new_ct = [zeros(a) if c is None else c for c, a in zip(in_cts[nc:nc + nx], carry_avals)]
        x_cts = [zeros(a) if c is None else c
                 for c, a in zip([c for c, lin in zip(in_cts[nc + nx:], xs_lin) if lin], slice_avals)]
        return (new_ct, acc), x_cts

    (ct_init, acc), ct_xs = bind_scan(body, (ct_x0, acc0), (xs_nonlin, [c for c in ct_ys if c is not None]),
                                      length, not reverse, preserve_dimensions)
    acc, ct_xs = iter(acc), iter(ct_xs)
    return ([next(acc) if lin else None for lin in c_lin] + [None]
            + [c if is_undefined(x) else None for c, x in zip(ct_init, carries)]
            + [next(ct_xs) if lin else None for lin in xs_lin])


def _cond_transpose(cts, index, *ops, branches):
    lin = [is_undefined(o) for o in ops]
    nimp = branches[0].out_explicit.count(False)
    ct_out = cts[nimp:]
    live = [c is not None for c in ct_out]
    lin_avals = [o.aval for o in ops if is_undefined(o)]

    def make(br):
        def run(nonlin, cts_):
            nonlin, cts_ = iter(nonlin), iter(cts_)
            args = [UndefinedPrimal(o.aval) if is_undefined(o) else next(nonlin) for o in ops]
            out_cts = [None] * nimp + [next(cts_) if lv else None for lv in live]
            in_cts = backward_pass(br, args, out_cts)
            return [zeros(a) if c is None else c
                    for c, a in zip([c for c, l_ in zip(in_cts, lin) if l_], lin_avals)]
        return run

    res = bind_cond(index, [make(br) for br in branches],
                    ([o for o in ops if not is_undefined(o)], [c for c in ct_out if c is not None]))
    res = iter(res)
    return [None] + [next(res) if l_ else None for l_ in lin]


transpose_rules[scan_p] = _scan_transpose
transpose_rules[cond_p] = _cond_transpose
