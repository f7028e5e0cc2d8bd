"""Which values must be known on the host before a jaxpr can become a static XLA program.

XLA compiles static shapes only, so every dimension must be a constant after
specialization. A scalar is *foldable* when its value is fixed by what specialization
bakes in: literals, the program's integer inputs (their values are baked), and
scalar arithmetic on foldable values. Dims that are not foldable (computed from array
data, or changing from one loop iteration to the next) need the host: the program is
cut there (``segments``) or the control flow is driven from the host.

The same analysis finds the *needed* integer inputs: those whose values flow into a
dimension (or a loop step, which is checked on the host), so that the executable cache
keys on their values and on nothing else.
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Set

import numpy as np

from ..core.jaxpr import Jaxpr, Literal, Var
from ..core.primitive import effectful_primitives, host_primitives
from ..control_flow.primitives import fixed_inputs as _control_flow_fixed_inputs
from ..control_flow.primitives import passthrough_results
from ..lax import primitives as P

# scalar operations that shape refinement folds when their operands are constants
_FOLDABLE = {P.add_p, P.sub_p, P.mul_p, P.div_p, P.rem_p, P.max_p, P.min_p, P.neg_p, P.abs_p,
             P.sign_p, P.convert_element_type_p, P.select_n_p, P.eq_p, P.ne_p, P.lt_p, P.le_p,
             P.gt_p, P.ge_p, P.and_p, P.or_p, P.not_p, P.floor_p, P.ceil_p, P.integer_pow_p}


def is_scalar(v) -> bool:
    return v.aval.shape == ()


def is_int_scalar(v) -> bool:
    """An integer scalar: a size, an index, a loop bound."""
    return v.aval.shape == () and np.issubdtype(v.aval.dtype, np.integer)


def dims_of(aval) -> List[Var]:
    return [d for d in aval.shape if isinstance(d, Var)]


#: Call-like primitives (``custom_jvp_call``, ``custom_vjp_call``): their one nested jaxpr
#: takes the equation's operands, in order, as its inputs.
call_primitives: Set = set()

#: Other primitives with nested programs (``custom_linear_solve``): ``rule(eqn)`` gives what
#: ``fixed_inputs`` returns for them.
fixed_input_rules: Dict = {}


def fixed_inputs(eqn):
    """For each nested jaxpr of ``eqn``: ``[(invar index, operand index)]`` for the invars that
    keep one operand's value during the whole execution (see ``control_flow.primitives``)."""
    if eqn.primitive in call_primitives:
        return [[(k, k) for k in range(len(eqn.invars))]]
    if eqn.primitive in fixed_input_rules:
        return fixed_input_rules[eqn.primitive](eqn)
    return _control_flow_fixed_inputs(eqn)


def nested_jaxprs(eqn) -> List[Jaxpr]:
    out = []
    for p in eqn.params.values():
        for x in (p if isinstance(p, tuple) else (p,)):
            if isinstance(x, Jaxpr):
                out.append(x)
    return out


def host_checked_operands(eqn) -> List:
    """Operands whose concrete value the host checks before running (a for_loop step)."""
    from ..control_flow.primitives import for_loop_p
    if eqn.primitive is for_loop_p:
        return [eqn.invars[eqn.params["body_nconsts"] + 2]]
    return []


def eqn_dim_uses(eqn) -> List:
    """Atoms used as dimensions by an equation: in its result types and its operands'
    types, plus dims its nested programs take from its constant operands."""
    uses = []
    for v in eqn.outvars:
        uses += dims_of(v.aval)
    uses += host_checked_operands(eqn)
    return uses


def foldable_vars(jaxpr: Jaxpr, foldable_inputs: Iterable[Var]) -> Set[int]:
    """ids of the jaxpr's scalar vars that specialization can fold, given foldable inputs."""
    ok: Set[int] = {id(v) for v in foldable_inputs}
    for eqn in jaxpr.eqns:
        if eqn.primitive in _FOLDABLE and all(is_scalar(v) for v in eqn.outvars) and all(
                isinstance(a, Literal) or id(a) in ok for a in eqn.invars):
            ok.update(id(v) for v in eqn.outvars)
        for k, j in passthrough_results(eqn):
            a = eqn.invars[j]
            if isinstance(a, Literal) or id(a) in ok:
                ok.add(id(eqn.outvars[k]))
    return ok


def statically_compilable(eqn, foldable: Set[int]) -> bool:
    """Can ``eqn`` be part of one static XLA program when ``foldable`` are constants?

    Its result dims must be foldable (``OutDBIdx`` results of control flow are not), and
    every dim inside its nested programs must be foldable there too, where a nested
    program's constant inputs inherit foldability from the operands and everything else
    (loop-carried values, the loop index) varies at run time.
    """
    if eqn.primitive in effectful_primitives or eqn.primitive in host_primitives:
        return False   # a host callback runs on the host, in program order
    for d in eqn_dim_uses(eqn):
        if isinstance(d, Var) and id(d) not in foldable:
            return False
    subs = nested_jaxprs(eqn)
    if not subs:
        return True
    for sub, pairs in zip(subs, fixed_inputs(eqn)):
        inputs = []
        for k, j in pairs:
            a = eqn.invars[j]
            if isinstance(a, Literal) or id(a) in foldable:
                inputs.append(sub.invars[k])
        inner = foldable_vars(sub, inputs)
        for v in sub.invars:
            if any(id(d) not in inner for d in dims_of(v.aval)):
                return False
        for e in sub.eqns:
            if not statically_compilable(e, inner):
                return False
        for v in sub.outvars:
            if isinstance(v, Var) and any(id(d) not in inner for d in dims_of(v.aval)):
                return False
    return True


def needed_vars(jaxpr: Jaxpr) -> Set[int]:
    """ids of vars whose values flow into a dimension or a host-checked operand."""
    need: Set[int] = set()
    for v in list(jaxpr.invars) + list(jaxpr.outvars):
        if isinstance(v, Var):
            need.update(id(d) for d in dims_of(v.aval))
    for eqn in jaxpr.eqns:
        need.update(id(d) for d in eqn_dim_uses(eqn) if isinstance(d, Var))
        for v in eqn.invars:
            if isinstance(v, Var):
                need.update(id(d) for d in dims_of(v.aval))
        for sub, pairs in zip(nested_jaxprs(eqn), fixed_inputs(eqn)):
            inner = needed_vars(sub)
            for k, j in pairs:
                if id(sub.invars[k]) in inner and isinstance(eqn.invars[j], Var):
                    need.add(id(eqn.invars[j]))
    for eqn in reversed(jaxpr.eqns):
        if eqn.primitive in _FOLDABLE and any(id(v) in need for v in eqn.outvars):
            need.update(id(a) for a in eqn.invars if isinstance(a, Var))
    return need
