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

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Sequence

from ..core.avals import is_inexact_dtype
from ..core.expansion import deduce_input_type, parse_input_type, trace_nested
from ..core.jaxpr import Jaxpr, Literal, Var
from ..core.primitive import partial_eval_rules
from ..core.staging import JaxprTrace, has_effect, new_jaxpr_trace, without_effects
from ..core.trace import current_trace, typeof
from ..core.pytree import tree_flatten, tree_unflatten
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
    aux: Any = None

    def apply(self, tangents: Sequence[Any]) -> List[Any]:
        """The output tangents (``Zero`` for the identically-zero ones) for the tangents of
        the differentiable primals."""
        from ..core.interpret import eval_jaxpr
        outs = iter(eval_jaxpr(self.jaxpr, [], *self.consts, *tangents))
        return [next(outs) if nz else Zero(typeof(p)) for p, nz in zip(self.primal_out, self.nonzero)]

    def transpose(self, cts: Sequence[Any]) -> List[Any]:
        """The cotangents of the differentiable primals (``None`` for zero ones) for the
        cotangents of the non-zero outputs."""
        from .transpose import UndefinedPrimal, backward_pass
        nres = len(self.consts)
        args = list(self.consts) + [UndefinedPrimal(v.aval) for v in self.jaxpr.invars[nres:]]
        return backward_pass(self.jaxpr, args, cts)[nres:]


def _enclosing_scope():
    t = current_trace()
    return t if isinstance(t, JaxprTrace) else None


_linearizing = [0]


@contextmanager
def linearization():
    """Marks a region whose jvp results are partially evaluated and transposed (reverse
    mode). ``linearize_flat`` runs in one; code that linearizes with ``jvp_flat`` by other
    means (a rule re-linearizing a body in its transpose) must enter one too, or a
    ``custom_vjp`` function in it raises the forward-mode TypeError."""
    _linearizing[0] += 1
    try:
        yield
    finally:
        _linearizing[0] -= 1


def linearizing() -> bool:
    """Whether a ``linearization()`` region is running: a jvp rule that only makes sense
    when its result is transposed (``custom_vjp``'s) checks it."""
    return _linearizing[0] > 0


def linearize_flat(fun: Callable, primals: Sequence[Any], has_aux: bool = False) -> Linearized:
    """Linearize ``fun`` (taking the flat ``primals``, returning a pytree) at ``primals``.
    Integer and bool primals are not differentiated (the function closes over them). With
    ``has_aux``, ``fun`` returns ``(output, aux)``; ``aux`` is not differentiated and is
    returned as ``Linearized.aux``."""
    with linearization():
        return _linearize_flat(fun, primals, has_aux)


def _linearize_flat(fun, primals, has_aux):
    from .jvp import JVPTracer
    primals = list(primals)
    diff = [i for i, p in enumerate(primals) if is_inexact_dtype(typeof(p).dtype)]
    _, _, rows = deduce_input_type([primals[i] for i in diff], lambda k, ax, d: False)
    k = len(diff)
    box: list = []
    aux_box: list = []

    def with_aux(*xs):
        out = fun(*xs)
        if not has_aux:
            return out
        out, aux = out
        leaves, tree = tree_flatten(aux)
        aux_box.append((tree, [x.primal if isinstance(x, JVPTracer) else x for x in leaves]))
        return out

    def jvp_fun(*args):
        full = list(primals)
        tangents = [Zero(typeof(p)) for p in primals]
        for j, i in enumerate(diff):
            full[i], tangents[i] = args[j], args[k + j]
        p_out, t_out = jvp_flat(with_aux, full, tangents, box)
        box.append([not isinstance(t, Zero) for t in t_out])
        aux_leaves = aux_box[0][1] if has_aux else []
        return list(p_out) + list(aux_leaves) + [t for t in t_out if not isinstance(t, Zero)]

    prog = trace_nested(jvp_fun, rows + rows, lambda r: (r, None), expand=False)
    out_tree, nonzero = box
    jx = prog.jaxpr
    nout = len(nonzero)
    naux = len(aux_box[0][1]) if has_aux else 0
    known_in = list(prog.consts) + [primals[i] for i in diff]
    lin_jaxpr, lin_consts, values = partial_eval(jx, known_in, rows, jx.outvars[nout + naux:])
    primal_out = [values(v) for v in jx.outvars[:nout]]
    lin = Linearized(primal_out, out_tree, diff, nonzero, lin_jaxpr, lin_consts)
    if has_aux:
        lin.aux = tree_unflatten(aux_box[0][0], [values(v) for v in jx.outvars[nout:nout + naux]])
    return lin


#: For primitives with nested programs (control flow): ``rule(eqn, in_flags) -> out_flags``,
#: which results depend on the flagged operands, more precisely than "all of them".
dependence_rules: Dict[Any, Callable] = {}


def dependence(jaxpr: Jaxpr, flags: Sequence[bool]) -> List[bool]:
    """Which outputs of ``jaxpr`` may depend on the inputs flagged (a conservative forward
    data-flow pass: an equation's results depend if any operand does; integer and bool
    results never carry a tangent)."""
    dep = {id(v) for v, f in zip(jaxpr.invars, flags) if f}
    for eqn in jaxpr.eqns:
        in_flags = [isinstance(a, Var) and id(a) in dep for a in eqn.invars]
        if not any(in_flags):
            continue
        rule = dependence_rules.get(eqn.primitive)
        out_flags = rule(eqn, in_flags) if rule is not None else [True] * len(eqn.outvars)
        dep.update(id(v) for v, f in zip(eqn.outvars, out_flags) if f and is_inexact_dtype(v.aval.dtype))
    return [isinstance(v, Var) and id(v) in dep for v in jaxpr.outvars]


class _Split:
    """Step 1 of partial evaluation over one jaxpr: the known values, the unknown variables
    and the equations left to stage (with their control-flow staging closures)."""

    def __init__(self, jaxpr: Jaxpr, values: Sequence[Any], flags: Sequence[bool], effects: bool = True):
        self.jaxpr = jaxpr
        self.env = {}
        self.unknown = set()
        for v, x, f in zip(jaxpr.invars, values, flags):
            if f:
                self.unknown.add(id(v))
            else:
                self.env[id(v)] = x
        self.deferred = []
        for eqn in jaxpr.eqns:
            flags_ = [self.is_unknown(a) for a in eqn.invars]
            if not effects and has_effect(eqn):
                # recomputing: the effects already happened in the known part
                if not eqn.outvars:
                    continue
                eqn = without_effects(eqn)
            if not any(flags_):
                vals = [self.get(a) for a in eqn.invars]
                if any(x is None for x in vals):
                    continue   # uses an input left out because nothing needed it: not needed either
                self._store(eqn.outvars, self._bind(eqn, vals))
                continue
            rule = partial_eval_rules.get(eqn.primitive)
            if rule is None:
                self.deferred.append((eqn, None))
                self.unknown.update(id(v) for v in eqn.outvars)
                continue
            known_outs, stage = rule(eqn, [None if f else self.read(a) for a, f in zip(eqn.invars, flags_)],
                                     flags_)
            for v, x in zip(eqn.outvars, known_outs):
                if x is None:
                    self.unknown.add(id(v))
                else:
                    self.env[id(v)] = x
            self.deferred.append((eqn, stage))

    def is_unknown(self, a) -> bool:
        return isinstance(a, Var) and id(a) in self.unknown

    def read(self, a):
        return a.val if isinstance(a, Literal) else self.env[id(a)]

    def get(self, a):
        """The value of ``a`` if it has one yet, else None."""
        if isinstance(a, Literal):
            return a.val
        return self.env.get(id(a))

    @staticmethod
    def _bind(eqn, vals):
        outs = eqn.primitive.bind(*vals, **eqn.params)
        return outs if eqn.primitive.multiple_results else [outs]

    def _store(self, outvars, outs):
        for v, x in zip(outvars, outs):
            if x is not None:
                self.env[id(v)] = x

    def known_outputs(self) -> List[Any]:
        return [None if self.is_unknown(v) else self.read(v) for v in self.jaxpr.outvars]

    def stage(self, unknown_values: Sequence[Any]) -> List[Any]:
        """Step 2, in the current scope: give the unknown inputs their values and evaluate the
        deferred equations. Returns every output."""
        for v, x in zip([v for v in self.jaxpr.invars if id(v) in self.unknown], unknown_values):
            self.env[id(v)] = x
        for eqn, stage in self.deferred:
            if stage is None:
                self._store(eqn.outvars, self._bind(eqn, [self.read(a) for a in eqn.invars]))
            else:
                self._store(eqn.outvars, stage([self.get(a) for a in eqn.invars]))
        return [self.get(v) for v in self.jaxpr.outvars]   # None: a known output nothing needed


def live_inputs(jaxpr: Jaxpr, wanted: Sequence[bool]) -> List[bool]:
    """Which inputs of ``jaxpr`` the ``wanted`` outputs use (directly, through equations, or
    in a type)."""
    live = set()

    def use(a):
        if isinstance(a, Var) and id(a) not in live:
            live.add(id(a))
            for d in a.aval.shape:
                use(d)
    for v, w in zip(jaxpr.outvars, wanted):
        if w:
            use(v)
    for eqn in reversed(jaxpr.eqns):
        if any(id(v) in live for v in eqn.outvars):
            for a in eqn.invars:
                use(a)
            for v in eqn.outvars:
                use(v)
    return [id(v) in live for v in jaxpr.invars]


def eval_known(jaxpr: Jaxpr, values: Sequence[Any], flags: Sequence[bool]) -> List[Any]:
    """The outputs of ``jaxpr`` that do not depend on the flagged (unknown) inputs, evaluated
    now (``None`` for the others). Control-flow equations evaluate their known part."""
    return _Split(jaxpr, values, flags).known_outputs()


def eval_split(jaxpr: Jaxpr, values: Sequence[Any], flags: Sequence[bool]) -> List[Any]:
    """Evaluate ``jaxpr`` in the current scope with control-flow equations split into their
    known and unknown parts (as linearizing does): used for the body of a loop whose linear
    part is being staged, so nested loops are split too."""
    split = _Split(jaxpr, values, flags, effects=False)
    return split.stage([x for x, f in zip(values, flags) if f])


def partial_eval(jaxpr: Jaxpr, known_in: Sequence[Any], unknown_in_type, unknown_outvars: Sequence[Any]):
    """Partially evaluate ``jaxpr``: its first ``len(known_in)`` inputs are known (values of
    the caller's interpreter), the rest unknown with input type ``unknown_in_type``.

    Returns ``(linear_jaxpr, residuals, known)``: the jaxpr computing ``unknown_outvars``
    from the residuals (its leading inputs) and the unknown inputs, the residual values, and
    ``known(var)`` giving the value of a known variable of ``jaxpr``.
    """
    nk = len(known_in)
    flags = [False] * nk + [True] * (len(jaxpr.invars) - nk)
    split = _Split(jaxpr, list(known_in) + [None] * (len(jaxpr.invars) - nk), flags)
    known_env = dict(split.env)
    with new_jaxpr_trace(_enclosing_scope()) as scope:
        in_tracers = parse_input_type(scope, unknown_in_type)
        split.stage(in_tracers)
        outs = [scope.full_raise(split.read(v)) for v in unknown_outvars]
        lin_jaxpr, residuals = scope.close(in_tracers, outs)

    def known(v):
        if isinstance(v, Literal):
            return v.val
        if id(v) not in known_env:
            raise AssertionError("a primal output depends on a tangent")
        return known_env[id(v)]
    return lin_jaxpr, residuals, known
