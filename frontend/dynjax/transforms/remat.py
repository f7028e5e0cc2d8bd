"""Rematerialization: the ``checkpoint`` call primitive and the ``name`` primitive, with all
their rules (the public API is ``dynjax.ad_checkpoint``; see doc/autodiff.md).

* ``checkpoint[jaxpr policy prevent_cse]`` (operands: the values the function closes over,
  its dims included, then its flat arguments; the nested ``jaxpr`` takes them in order).
  Evaluating it -- eagerly, while staging, when lowering (inlined) -- runs the jaxpr: a
  checkpointed function computes exactly what the function computes. Only *linearizing*
  (``linearize``, ``vjp``, ``grad``, ``jacrev``) differs, in its partial-evaluation rule:

  1. the known (primal) half of the call's jvp is evaluated at once, like any equation,
     and the outputs of the equations the ``policy`` calls saveable are kept;
  2. the unknown (tangent) half, together with a *recomputation* of every known value it
     needs from the call's inputs and the saved values, is staged as one ``checkpoint``
     equation of the linear program (linear in the tangents). So the residuals the
     backward pass holds are those inputs and saved values, not every intermediate of the
     function. Its transpose is a ``checkpoint`` of the transposed jaxpr: the recomputation
     runs when the backward pass reaches it, and a second derivative recomputes it again.
     With ``prevent_cse`` the inputs of the recomputation go through one
     ``optimization_barrier`` first, so that XLA's common-subexpression elimination does
     not merge it with the forward computation once inlined (which would keep the forward
     values alive: no memory saved).

  Its jvp is again a ``checkpoint`` (of the jvp of its jaxpr), so the split applies after
  ``jvp`` and under higher orders; under ``vmap`` it batches into a ``checkpoint`` of the
  batched jaxpr.
* ``name[name]`` (``checkpoint_name``): the identity, under every transformation. It only
  labels a value, for the name policies (``save_only_these_names`` ...).

Inside ``scan`` / ``for_loop`` bodies, linearizing already keeps only the carried values of
each iteration and recomputes the rest in the backward scan (transforms/control_flow.py), so
a checkpointed step recomputes there whatever its policy.
"""
from __future__ import annotations

from typing import Any, Callable, List, Sequence

import numpy as np

from ..core.avals import is_inexact_dtype, is_integer_dtype, make_aval
from ..core.expansion import shape_from_operands, trace_nested
from ..core.interpret import eval_jaxpr
from ..core.jaxpr import Jaxpr, Var
from ..core.primitive import (Primitive, abstract_eval_rules, impl_rules, jvp_rules,
                              partial_eval_rules, transpose_rules)
from ..core.staging import live_equations
from ..core.trace import typeof
from ..lax.barrier import optimization_barrier_p
from ..lax.base import aval as aval_of
from ..lowering.core import register_lowering
from .batching import _eval_batched, _front_all, batching_rules
from .jvp import Zero, instantiate, jvp_flat
from .partial_eval import _Split, dependence, dependence_rules, eval_split, live_inputs
from .transpose import backward_pass, is_undefined, zeros

__all__ = ["checkpoint_p", "name_p", "bind_checkpoint"]

checkpoint_p = Primitive("checkpoint", multiple_results=True)
name_p = Primitive("name")


# ----------------------------------------------------------------------------------------------
# Binding a call
# ----------------------------------------------------------------------------------------------
def bind_checkpoint(flat_fun: Callable, args: Sequence[Any], *, policy, prevent_cse: bool) -> List[Any]:
    """Trace ``flat_fun`` (flat arrays in, a flat list of arrays out) on ``args`` in a nested
    scope and bind one ``checkpoint`` equation running it. Returns its results.

    Each input is known to equal its argument (``same_as``): an integer argument that is a
    size keeps its symbolic expression inside, so the arrays of that size agree with it."""
    args = list(args)
    in_type = tuple((typeof(x), True) for x in args)
    prog = trace_nested(flat_fun, in_type, lambda r: (list(r), None), expand=False, same_as=args)
    inputs = {id(v) for v in prog.jaxpr.invars}
    for k, v in enumerate(prog.jaxpr.outvars):   # a clear error now, not at the first use
        if any(isinstance(d, Var) and id(d) not in inputs for d in v.aval.shape):
            raise TypeError(_computed_dim_message(k))
    return list(checkpoint_p.bind(*prog.consts, *args, jaxpr=prog.jaxpr, policy=policy,
                                  prevent_cse=prevent_cse))


def _computed_dim_message(k):
    return (f"checkpoint: output {k} of the checkpointed function has a dimension computed inside "
            "it; its outputs may only have static dimensions or dimensions of its inputs (compute "
            "the size outside and pass an array of that size in, or checkpoint a smaller function)")


# ----------------------------------------------------------------------------------------------
# Evaluating, typing, lowering: run the jaxpr
# ----------------------------------------------------------------------------------------------
def _checkpoint_impl(*operands, jaxpr, policy, prevent_cse):
    return [np.asarray(x) for x in eval_jaxpr(jaxpr, [], *operands)]


def _checkpoint_abstract(*operands, jaxpr, policy, prevent_cse):
    invars = jaxpr.invars
    if len(invars) != len(operands):
        raise TypeError(f"checkpoint: the jaxpr takes {len(invars)} inputs but got {len(operands)} operands")
    for v, x in zip(invars, operands):
        a = aval_of(x)
        if a.dtype != v.aval.dtype or a.ndim != v.aval.ndim:
            raise TypeError(f"checkpoint: operand of type {a.str_short()} for an input of type "
                            f"{v.aval.str_short()}")
    pos = {id(v): i for i, v in enumerate(invars)}
    outs = []
    for k, v in enumerate(jaxpr.outvars):
        shape = shape_from_operands(v.aval, pos, operands, lambda: TypeError(_computed_dim_message(k)))
        outs.append(make_aval(shape, v.aval.dtype, v.aval.weak_type))
    return outs


def _checkpoint_lowering(ctx, eqn, *args, jaxpr, policy, prevent_cse):
    return ctx.lower_jaxpr(jaxpr, list(args))


impl_rules[checkpoint_p] = _checkpoint_impl
abstract_eval_rules[checkpoint_p] = _checkpoint_abstract
register_lowering(checkpoint_p, _checkpoint_lowering)


# ----------------------------------------------------------------------------------------------
# Forward mode: a checkpoint of the jvp
# ----------------------------------------------------------------------------------------------
def _checkpoint_jvp(primals, tangents, *, jaxpr, policy, prevent_cse):
    nz = [not isinstance(t, Zero) for t in tangents]
    out_nz = [d and is_inexact_dtype(v.aval.dtype) for d, v in zip(dependence(jaxpr, nz), jaxpr.outvars)]
    n, nout = len(primals), len(jaxpr.outvars)
    live_t = [t for t in tangents if not isinstance(t, Zero)]

    def jvp_body(*xs):
        ps, ts = list(xs[:n]), iter(xs[n:])
        full = [next(ts) if f else Zero(typeof(p)) for p, f in zip(ps, nz)]
        p_out, t_out = jvp_flat(lambda *a: eval_jaxpr(jaxpr, [], *a), ps, full)
        return list(p_out) + [instantiate(t) for t, f in zip(t_out, out_nz) if f]

    outs = bind_checkpoint(jvp_body, list(primals) + live_t, policy=policy, prevent_cse=prevent_cse)
    p_out, t_iter = outs[:nout], iter(outs[nout:])
    return p_out, [next(t_iter) if f else Zero(typeof(p).strip_weak_type()) for p, f in zip(p_out, out_nz)]


jvp_rules[checkpoint_p] = _checkpoint_jvp
dependence_rules[checkpoint_p] = lambda eqn, flags: dependence(eqn.params["jaxpr"], flags)


# ----------------------------------------------------------------------------------------------
# Partial evaluation (linearize): save what the policy allows, recompute the rest
# ----------------------------------------------------------------------------------------------
def is_saveable(policy, eqn) -> bool:
    """Whether ``policy`` lets the results of ``eqn`` be saved as residuals: JAX's protocol,
    ``policy(primitive, *operand_avals, **params)``. No policy saves nothing."""
    if policy is None:
        return False
    return bool(policy(eqn.primitive, *[a.aval for a in eqn.invars], **eqn.params))


class _Saving(_Split):
    """Step 1 of partial evaluation of a checkpointed jaxpr (the known equations evaluated
    now), remembering the results of the equations the policy calls saveable."""

    def __init__(self, jaxpr: Jaxpr, values: Sequence[Any], flags: Sequence[bool], policy):
        self.policy = policy
        self.saved = {}
        super().__init__(jaxpr, values, flags)

    def _bind(self, eqn, vals):
        outs = _Split._bind(eqn, vals)
        if is_saveable(self.policy, eqn):
            self.saved[id(eqn)] = list(outs)
        return outs


def _needs_no_barrier(x) -> bool:
    """Integer scalars (sizes, indices) keep their identity: a size behind a barrier would be
    a new, unrelated dim."""
    a = typeof(x)
    return a.ndim == 0 and (is_integer_dtype(a.dtype) or a.dtype == np.bool_)


def _barrier(values: List[Any]) -> List[Any]:
    """``values`` (None: not needed) with the arrays among them passed through one
    ``optimization_barrier``."""
    pick = [x is not None and not _needs_no_barrier(x) for x in values]
    if not any(pick):
        return values
    outs = iter(optimization_barrier_p.bind(*[x for x, p in zip(values, pick) if p]))
    return [next(outs) if p else x for x, p in zip(values, pick)]


def _stage_recomputation(jaxpr: Jaxpr, first: _Saving, vals, flags, policy, prevent_cse: bool) -> List[Any]:
    """Step 2, in the linear scope: the unknown outputs of ``jaxpr``, computed from the
    unknown operands, the saved values and a recomputation of the other known values they
    need (from the known operands). ``vals`` holds the operands (known values, or the staged
    values of the unknown ones). Returns every output (None for the known ones).

    The recomputation and the tangent operations are one ``checkpoint`` equation of the
    linear program (linear in the tangents), whose transpose rule runs both when the
    backward pass reaches it: the recomputed values live only while its cotangents are
    computed (eagerly too), and a later differentiation sees a checkpoint again."""
    out_unknown = [first.is_unknown(v) for v in jaxpr.outvars]
    saved_eqns = [e for e in jaxpr.eqns if id(e) in first.saved]
    saved_vars = [v for e in saved_eqns for v in e.outvars]
    saved_vals = [x for e in saved_eqns for x in first.saved[id(e)]]
    outvars = [v for v, u in zip(jaxpr.outvars, out_unknown) if u]
    # the jaxpr with the saved equations cut out: their results become inputs
    rest = [e for e in jaxpr.eqns if id(e) not in first.saved]
    cut = Jaxpr([], saved_vars + list(jaxpr.invars), live_equations(rest, outvars), outvars)
    live = live_inputs(cut, [True] * len(outvars))
    ns = len(saved_vars)
    cut_flags = [False] * ns + list(flags)
    values = list(saved_vals) + list(vals)
    # the call's operands: the known values the recomputation needs, then the unknown ones
    known_at = [i for i, (lv, f) in enumerate(zip(live, cut_flags)) if lv and not f]
    unknown_at = [i for i, f in enumerate(cut_flags) if f]

    def linear_part(*xs):
        ins: List[Any] = [None] * len(cut.invars)
        known = [None] * len(cut.invars)
        for i, x in zip(known_at, xs):
            known[i] = x
        if prevent_cse:
            known = _barrier(known)
        for i in known_at:
            ins[i] = known[i]
        for i, x in zip(unknown_at, xs[len(known_at):]):
            ins[i] = x
        return eval_split(cut, ins, cut_flags)

    outs = iter(bind_checkpoint(linear_part, [values[i] for i in known_at] + [values[i] for i in unknown_at],
                                policy=policy, prevent_cse=prevent_cse))
    return [next(outs) if u else None for u in out_unknown]


def _checkpoint_pe(eqn, known, flags):
    p = eqn.params
    first = _Saving(p["jaxpr"], known, flags, p["policy"])
    known_outs = first.known_outputs()
    # the values not saved are not kept (eagerly: their memory is freed now), nor are the
    # staging closures of nested loops (their stacks): step 2 splits those loops again
    first.env.clear()
    first.deferred.clear()

    def stage(vals):
        return _stage_recomputation(p["jaxpr"], first, vals, flags, p["policy"], p["prevent_cse"])
    return known_outs, stage


partial_eval_rules[checkpoint_p] = _checkpoint_pe


def _checkpoint_transpose(cts, *operands, jaxpr, policy, prevent_cse):
    """A checkpoint used linearly (the linear part staged by ``_stage_recomputation``, or a
    checkpointed linear function): its jaxpr transposed, as a ``checkpoint`` again, so that
    differentiating the backward pass (``grad`` of ``grad``) recomputes it too."""
    linear = [is_undefined(x) for x in operands]
    known = [x for x, lin in zip(operands, linear) if not lin]
    ct_at = [k for k, c in enumerate(cts) if c is not None]

    def transposed(*xs):
        it = iter(xs[:len(known)])
        ops = [x if lin else next(it) for x, lin in zip(operands, linear)]
        full_cts: List[Any] = [None] * len(cts)
        for k, c in zip(ct_at, xs[len(known):]):
            full_cts[k] = c
        res = backward_pass(jaxpr, ops, full_cts)
        return [zeros(x.aval) if r is None else r for x, r, lin in zip(operands, res, linear) if lin]

    outs = iter(bind_checkpoint(transposed, known + [cts[k] for k in ct_at], policy=policy,
                                prevent_cse=prevent_cse))
    return [next(outs) if lin else None for lin in linear]


transpose_rules[checkpoint_p] = _checkpoint_transpose


# ----------------------------------------------------------------------------------------------
# vmap: a checkpoint of the batched jaxpr
# ----------------------------------------------------------------------------------------------
def _checkpoint_batch(size, vals, dims, *, jaxpr, policy, prevent_cse):
    flags = [d is not None for d in dims]
    vals = _front_all(vals, dims, size, flags)
    nout = len(jaxpr.outvars)

    def batched(*xs):
        return _eval_batched(jaxpr, size, list(xs), flags, [True] * nout)
    outs = bind_checkpoint(batched, vals, policy=policy, prevent_cse=prevent_cse)
    return outs, [0] * nout


batching_rules[checkpoint_p] = _checkpoint_batch


# ----------------------------------------------------------------------------------------------
# name: the identity that labels a value
# ----------------------------------------------------------------------------------------------
def _name_impl(x, *, name):
    return np.asarray(x)


def _name_abstract(x, *, name):
    return aval_of(x)


def _name_jvp(primals, tangents, *, name):
    return name_p.bind(primals[0], name=name), tangents[0]


def _name_transpose(ct, x, *, name):
    return [ct]


def _name_batch(size, vals, dims, *, name):
    return name_p.bind(vals[0], name=name), dims[0]


impl_rules[name_p] = _name_impl
abstract_eval_rules[name_p] = _name_abstract
register_lowering(name_p, lambda ctx, eqn, x, *, name: x)
jvp_rules[name_p] = _name_jvp
transpose_rules[name_p] = _name_transpose
batching_rules[name_p] = _name_batch


# ----------------------------------------------------------------------------------------------
# The execution planner, padding and cost
# ----------------------------------------------------------------------------------------------
def _register_with_execution():
    """The nested jaxpr takes the equation's operands in order (the planner checks the dims
    used inside nested programs); padding pads the jaxpr; the cost is the jaxpr's."""
    from ..cost_model import Cost, _WHOLE, cost_rules, jaxpr_cost
    from ..execution import analysis
    from ..execution.padding import _same, padding_rules
    from ..execution.padding_control_flow import _nested
    analysis.call_primitives.add(checkpoint_p)

    def pad_checkpoint(ctx, eqn, *ops):
        body = eqn.params["jaxpr"]
        return _nested(ctx, eqn, 0, body, list(ops), [[(k, k) for k in range(len(body.invars))]])
    padding_rules[checkpoint_p] = pad_checkpoint
    padding_rules[name_p] = _same
    cost_rules[checkpoint_p] = lambda eqn, sz: jaxpr_cost(eqn.params["jaxpr"], sz)
    _WHOLE.add(checkpoint_p)
    cost_rules[name_p] = lambda eqn, sz: Cost.zero()


_register_with_execution()
