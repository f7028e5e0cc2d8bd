"""What export does to a program before writing it: calls that hold Python code.

Some equations carry Python functions in their params, which cannot be shipped:

* ``custom_jvp_call`` / ``custom_vjp_call`` / ``custom_vmap_call`` / ``checkpoint`` compute
  exactly their nested program; the Python functions they hold (differentiation and batching
  rules, a rematerialization policy) only matter to transformations. Export replaces each by
  the equations of its nested program (as ``jax.export`` keeps a custom_jvp's primal), so the
  exported program computes the same values and needs none of the user's code.
* ``pure_callback`` / ``debug_callback`` (host primitives) *are* a call into Python at run
  time: ``unshippable_error`` makes the ValueError that names the primitive, the user's
  function and line.

``inline_calls`` rewrites a jaxpr (and every nested one) into a new jaxpr with fresh
variables; the jaxpr it is given is left as it was (the ``qjit`` function keeps using it).
"""
from __future__ import annotations

from typing import Dict, Optional

from ..core.avals import make_aval
from ..core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from ..core.jaxpr import at_user_line as where
from ..core.primitive import effectful_primitives, host_primitives

#: primitive name -> the param holding the nested program whose result is the call's result
INLINED_CALLS = {"custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr",
                 "custom_vmap_call": "call_jaxpr", "checkpoint": "jaxpr"}


def holds_inlined_call(jaxpr: Jaxpr) -> bool:
    """Whether ``jaxpr`` (or a nested jaxpr) has an equation ``inline_calls`` replaces."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in INLINED_CALLS:
            return True
        if any(holds_inlined_call(j) for j in _nested_jaxprs(eqn.params)):
            return True
    return False


def inline_calls(jaxpr: Jaxpr) -> Jaxpr:
    """``jaxpr`` with every call of ``INLINED_CALLS`` replaced by its nested program."""
    env: Dict[int, object] = {}
    constvars = [_fresh(v, env) for v in jaxpr.constvars]
    invars = [_fresh(v, env) for v in jaxpr.invars]
    eqns = []
    _copy_eqns(jaxpr.eqns, env, eqns)
    outvars = [_read(a, env) for a in jaxpr.outvars]
    return Jaxpr(constvars, invars, eqns, outvars, jaxpr.in_explicit, jaxpr.out_explicit)


def _read(a, env):
    return a if isinstance(a, Literal) else env.get(id(a), a)


def _fresh(v: Var, env) -> Var:
    """A new variable for ``v``, its type's dims read through ``env``."""
    shape = []
    for d in v.aval.shape:
        if isinstance(d, int):
            shape.append(d)
            continue
        d = _read(d, env)
        shape.append(int(d.val) if isinstance(d, Literal) else d)
    new = Var(make_aval(tuple(shape), v.aval.dtype, v.aval.weak_type), v.sym)
    env[id(v)] = new
    return new


def _copy_eqns(eqns, env, out):
    for eqn in eqns:
        ins = [_read(a, env) for a in eqn.invars]
        body_param = INLINED_CALLS.get(eqn.primitive.name)
        if body_param is not None:
            body = eqn.params[body_param]
            body = body.jaxpr if isinstance(body, ClosedJaxpr) else body
            if body.constvars:   # nested programs are closed (their captures are operands)
                raise AssertionError(f"{eqn.primitive.name}: a nested jaxpr with constvars")
            for v, a in zip(body.invars, ins):
                env[id(v)] = a
            _copy_eqns(body.eqns, env, out)
            for v, a in zip(eqn.outvars, body.outvars):
                env[id(v)] = _read(a, env)
            continue
        params = {k: _inline_param(p) for k, p in eqn.params.items()}
        outs = [_fresh(v, env) for v in eqn.outvars]
        out.append(JaxprEqn(eqn.primitive, ins, outs, params, eqn.source_info))


def _inline_param(p):
    if isinstance(p, ClosedJaxpr):
        return ClosedJaxpr(inline_calls(p.jaxpr), p.consts) if holds_inlined_call(p.jaxpr) else p
    if isinstance(p, Jaxpr):
        return inline_calls(p) if holds_inlined_call(p) else p
    if isinstance(p, tuple) and any(isinstance(x, (Jaxpr, ClosedJaxpr)) for x in p):
        return tuple(_inline_param(x) for x in p)
    return p


def _nested_jaxprs(params):
    for p in params.values():
        for x in (p if isinstance(p, (tuple, list)) else (p,)):
            if isinstance(x, ClosedJaxpr):
                yield x.jaxpr
            elif isinstance(x, Jaxpr):
                yield x


def find_host_call(jaxpr: Jaxpr) -> Optional[JaxprEqn]:
    """The first equation (in ``jaxpr`` or a nested jaxpr) that calls into Python at run time."""
    for eqn in jaxpr.eqns:
        if eqn.primitive in host_primitives or eqn.primitive in effectful_primitives:
            return eqn
        for j in _nested_jaxprs(eqn.params):
            found = find_host_call(j)
            if found is not None:
                return found
    return None


def unshippable_error(fun_name: str, eqn: JaxprEqn, what: str) -> ValueError:
    """The export-time error for an equation whose params hold ``what`` (a Python function,
    an object of the user's), naming the primitive and the user's line."""
    return ValueError(f"export of {fun_name}: the primitive {eqn.primitive.name}{where(eqn)} holds {what}, "
                      "which cannot be serialized; an exported program must not call back into Python "
                      "(pure_callback, debug.print, debug.callback) or carry other Python objects")


def host_call_error(fun_name: str, eqn: JaxprEqn) -> ValueError:
    """The export-time error for a call into Python (``pure_callback``, ``debug.print`` ...)."""
    callee = eqn.params.get("name") or getattr(eqn.params.get("callback"), "__qualname__", None)
    callee = f" {callee}" if callee else ""
    return ValueError(f"export of {fun_name}: the program calls the Python function{callee} through "
                      f"{eqn.primitive.name}{where(eqn)}; an exported program runs without Python "
                      "source, so it cannot call back into Python (remove the callback, or compute "
                      "it with dynjax.numpy)")
