"""Reverse mode, step 1: linearize a function by partial evaluation of its JVP.

``linearize_flat(fun, primals)`` traces ``jvp(fun)`` into a jaxpr ``J`` whose inputs are the
differentiable primals and their tangents, then partially evaluates ``J`` with the primals
*known* and the tangents *unknown*:

1. every equation that does not depend on a tangent is evaluated now, by the enclosing
   interpreter (numpy eagerly, the caller's staging scope under ``qjit``, an outer ``jvp``
   when differentiating twice). This computes the primal outputs and every value the
   tangent computation needs (``cos(x)`` for ``sin``);
2. the equations that do depend on a tangent are staged into a new *linear* jaxpr, in a
   scope nested in the caller's. Known values they use are captured by that scope, so they
   become the linear jaxpr's leading inputs: the *residuals*, dims included (a residual of
   type ``f64[n]`` brings its ``n``).

A control-flow equation whose operands are partly known has a rule in
``partial_eval_rules``: it splits into a known part, run in step 1, and an unknown part,
staged in step 2 (``transforms/control_flow.py``).

The linear jaxpr maps tangents to output tangents; ``transforms/transpose.py`` runs it
backwards (``vjp``). Tangent types carry the primal's dims: a tangent of ``f64[n]`` is
``f64[n]`` with the same dim.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Sequence

from ..core.avals import is_inexact_dtype
from ..core.expansion import deduce_input_type, parse_input_type, trace_nested
from ..core.jaxpr import Jaxpr, Literal, Var
from ..core.primitive import partial_eval_rules
from ..core.staging import JaxprTrace, new_jaxpr_trace
from ..core.trace import current_trace, typeof
from .jvp import Zero, jvp_flat


@dataclass
class Linearized:
    """The result of ``linearize_flat``.

    ``primal_out``: the outputs of ``fun`` (values of the caller's interpreter).
    ``diff``: the positions of the differentiable (inexact) primals, whose tangents the
    linear jaxpr takes. ``nonzero``: per output, whether its tangent is not identically zero;
    the linear jaxpr returns one tangent per non-zero output. ``jaxpr`` / ``consts``: the
    linear program and its residuals (the values for its leading inputs).
    """
    primal_out: List[Any]
    out_tree: Any
    diff: List[int]
    nonzero: List[bool]
    jaxpr: Jaxpr
    consts: List[Any]

    def apply(self, tangents: Sequence[Any]) -> List[Any]:
        """The output tangents (``Zero`` for the identically-zero ones) for the tangents of
        the differentiable primals."""
        from ..core.interpret import eval_jaxpr
        outs = iter(eval_jaxpr(self.jaxpr, [], *self.consts, *tangents))
        return [next(outs) if nz else Zero(typeof(p)) for p, nz in zip(self.primal_out, self.nonzero)]


def _enclosing_scope():
    t = current_trace()
    return t if isinstance(t, JaxprTrace) else None


def linearize_flat(fun: Callable, primals: Sequence[Any]) -> Linearized:
    """Linearize ``fun`` (taking the flat ``primals``, returning a pytree) at ``primals``.
    Integer and bool primals are not differentiated (the function closes over them)."""
    primals = list(primals)
    diff = [i for i, p in enumerate(primals) if is_inexact_dtype(typeof(p).dtype)]
    _, _, rows = deduce_input_type([primals[i] for i in diff], lambda k, ax, d: False)
    k = len(diff)
    box: list = []

    def jvp_fun(*args):
        full = list(primals)
        tangents = [Zero(typeof(p)) for p in primals]
        for j, i in enumerate(diff):
            full[i], tangents[i] = args[j], args[k + j]
        p_out, t_out = jvp_flat(fun, full, tangents, box)
        box.append([not isinstance(t, Zero) for t in t_out])
        return list(p_out) + [t for t in t_out if not isinstance(t, Zero)]

    prog = trace_nested(jvp_fun, rows + rows, lambda r: (r, None), expand=False)
    out_tree, nonzero = box
    jx = prog.jaxpr
    nc, nout = prog.nconsts, len(nonzero)
    known_in = list(prog.consts) + [primals[i] for i in diff]
    tangent_vars = jx.invars[nc + k:]
    lin_jaxpr, lin_consts, values = partial_eval(jx, known_in, [v.aval for v in tangent_vars],
                                                 rows, jx.outvars[nout:])
    primal_out = [values(v) for v in jx.outvars[:nout]]
    return Linearized(primal_out, out_tree, diff, nonzero, lin_jaxpr, lin_consts)


def partial_eval(jaxpr: Jaxpr, known_in: Sequence[Any], _unknown_avals, unknown_in_type,
                 unknown_outvars: Sequence[Any]):
    """Partially evaluate ``jaxpr``: its first ``len(known_in)`` inputs are known (values of
    the caller's interpreter), the rest unknown with input type ``unknown_in_type``.

    Returns ``(linear_jaxpr, residuals, known)``: the jaxpr computing ``unknown_outvars``
    from the residuals (its leading inputs) and the unknown inputs, the residual values, and
    ``known(var)`` giving the value of a known variable of ``jaxpr``.
    """
    env = {}
    unknown = set()

    def read(a):
        return a.val if isinstance(a, Literal) else env[id(a)]

    nk = len(known_in)
    for v, x in zip(jaxpr.invars[:nk], known_in):
        env[id(v)] = x
    for v in jaxpr.invars[nk:]:
        unknown.add(id(v))

    def is_unknown(a):
        return isinstance(a, Var) and id(a) in unknown

    # Step 1: evaluate what is known; remember how to stage the rest.
    deferred = []
    for eqn in jaxpr.eqns:
        flags = [is_unknown(a) for a in eqn.invars]
        if not any(flags):
            outs = eqn.primitive.bind(*[read(a) for a in eqn.invars], **eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
            for v, x in zip(eqn.outvars, outs):
                env[id(v)] = x
            continue
        rule = partial_eval_rules.get(eqn.primitive)
        if rule is None:
            deferred.append((eqn, None))
            unknown.update(id(v) for v in eqn.outvars)
            continue
        known_vals = [None if f else read(a) for a, f in zip(eqn.invars, flags)]
        known_outs, stage = rule(eqn, known_vals, flags)
        for v, x in zip(eqn.outvars, known_outs):
            if x is None:
                unknown.add(id(v))
            else:
                env[id(v)] = x
        deferred.append((eqn, stage))

    # Step 2: stage the unknown equations into the linear program.
    with new_jaxpr_trace(_enclosing_scope()) as scope:
        in_tracers = parse_input_type(scope, unknown_in_type)
        for v, t in zip(jaxpr.invars[nk:], in_tracers):
            env[id(v)] = t
        for eqn, stage in deferred:
            vals = [read(a) for a in eqn.invars] if stage is None else \
                [read(a) if not is_unknown(a) or id(a) in env else None for a in eqn.invars]
            if stage is None:
                outs = eqn.primitive.bind(*vals, **eqn.params)
                outs = outs if eqn.primitive.multiple_results else [outs]
                pairs = zip(eqn.outvars, outs)
            else:
                pairs = [(v, x) for v, x in zip(eqn.outvars, stage(vals)) if x is not None]
            for v, x in pairs:
                env[id(v)] = x
        outs = [scope.full_raise(read(v)) for v in unknown_outvars]
        lin_jaxpr, residuals = scope.close(in_tracers, outs)
    for v in unknown:
        env.pop(v, None)

    def known(v):
        if is_unknown(v):
            raise AssertionError("a primal output depends on a tangent")
        return read(v)
    return lin_jaxpr, residuals, known
