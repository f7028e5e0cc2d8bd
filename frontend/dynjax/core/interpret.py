"""``eval_jaxpr``: run a jaxpr by binding each equation on the current interpreter.

Outside any trace this evaluates eagerly with the numpy impls; under a staging trace it
re-stages the equations (which is how nested ``qjit`` calls are inlined).

``interruptible(stop)`` lets a caller abandon an evaluation: until it exits, every
evaluation on that thread (loop bodies included) checks ``stop()`` before each equation and
raises ``Interrupted`` once it is true.

Eager evaluation reuses buffers: an elementwise equation (one with an ``impl_into_rules``
entry) whose operand is an intermediate array that dies there (computed by an earlier
equation of the same jaxpr, used by no later one nor returned) writes its result into that
array instead of a new one, when nothing else holds the array (its reference count says
only the evaluation does, and it owns its memory: not a view, not an argument, a constant or
a cached value). numpy's own expressions allocate a result per operation; for arrays of a
few hundred kilobytes and more a new allocation is fresh memory from the system, whose page
faults can cost more than the arithmetic (``tanh(x @ W1) @ W2`` at 1,000 x 64: 1.45 ms as
numpy writes it, 0.47 ms with ``tanh`` in place). The values are the impl's, bit for bit: the
same ufunc loop, only the destination differs.

Likewise a broadcast (an equation with an ``impl_view_rules`` entry) that only elementwise
equations read is a read-only view instead of a materialized array (softmax's row maxima
and sums: no copy of ``n x n`` elements each), since an elementwise operation's values do
not depend on how its operands lie in memory.
"""
from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from typing import Callable, Tuple

import numpy as np

from .jaxpr import ClosedJaxpr, Literal, Var
from .primitive import _trace_module, impl_into_rules, impl_view_rules


class Interrupted(Exception):
    """An evaluation abandoned because its ``interruptible`` check said stop."""


_local = threading.local()


@contextmanager
def interruptible(stop: Callable[[], bool]):
    """Evaluations on this thread inside the block raise ``Interrupted`` before the next
    equation once ``stop()`` is true."""
    previous = getattr(_local, "stop", None)
    _local.stop = stop
    try:
        yield
    finally:
        _local.stop = previous


def eval_jaxpr(jaxpr, consts, *args):
    """Evaluate ``jaxpr`` on ``consts`` (its constvars) and expanded ``args`` (implicit
    dimension values first, as in its in_type). Returns the list of expanded outputs."""
    if isinstance(jaxpr, ClosedJaxpr):
        jaxpr = jaxpr.jaxpr
    if len(consts) != len(jaxpr.constvars):
        raise TypeError(f"eval_jaxpr: expected {len(jaxpr.constvars)} consts, got {len(consts)}")
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"eval_jaxpr: expected {len(jaxpr.invars)} arguments (implicit dims included), "
                        f"got {len(args)}")
    env = {}

    def read(a):
        return a.val if isinstance(a, Literal) else env[id(a)]

    for v, x in zip(jaxpr.constvars, consts):
        env[id(v)] = x
    for v, x in zip(jaxpr.invars, args):
        env[id(v)] = x
    stop = getattr(_local, "stop", None)
    plan = _plan(jaxpr) if _COUNTS_HOLDERS and not _trace_module().is_tracing() else None
    for i, eqn in enumerate(jaxpr.eqns):
        if stop is not None and stop():
            raise Interrupted()
        if plan is not None:
            reusable, dead, view = plan[i]
            out = _into(eqn, reusable, env) if reusable else _view(eqn, env) if view else None
            if out is not None:
                env[id(eqn.outvars[0])] = out
                out = None
                for d in dead:   # the operands that die here: their buffers are free to
                    del env[d]   # take over once nothing else holds them
                continue
        outs = eqn.primitive.bind(*[read(a) for a in eqn.invars], **eqn.params)
        if not eqn.primitive.multiple_results:
            env[id(eqn.outvars[0])] = outs
        else:
            for v, x in zip(eqn.outvars, outs):
                env[id(v)] = x
            x = None
        outs = None   # (no reference but the environment's: see _into)
        if plan is not None:
            for d in dead:
                del env[d]
    return [read(a) for a in jaxpr.outvars]


#: whether ``sys.getrefcount`` counts every holder of an object: CPython with its GIL (a
#: free-threaded build defers some counts; other interpreters have none): else no reuse
_COUNTS_HOLDERS = (sys.implementation.name == "cpython"
                   and getattr(sys, "_is_gil_enabled", lambda: True)())

#: a value whose only references are the evaluation's environment, the local name that
#: holds it and ``sys.getrefcount``'s own argument
_ONLY_THE_ENVIRONMENT = 3


def _into(eqn, candidates: Tuple[int, ...], env):
    """The equation's result computed into the buffer of one of its dying operands
    (``candidates``), or None when none may be written (see the module docstring)."""
    for k in candidates:
        x = env[id(eqn.invars[k])]
        if (x.__class__ is np.ndarray and sys.getrefcount(x) == _ONLY_THE_ENVIRONMENT
                and x.base is None and x.flags.writeable):
            x = None
            operands = _numpy_operands(eqn, env)
            return None if operands is None else impl_into_rules[eqn.primitive](k, *operands, **eqn.params)
        x = None
    return None


def _view(eqn, env):
    """The equation's values as a read-only view (``impl_view_rules``), or None when an
    operand is not a numpy value."""
    operands = _numpy_operands(eqn, env)
    return None if operands is None else impl_view_rules[eqn.primitive](*operands, **eqn.params)


def _numpy_operands(eqn, env):
    """The equation's operands, or None unless all are numpy values or Python scalars (not
    the tracers of an eager transformation)."""
    operands = [a.val if isinstance(a, Literal) else env[id(a)] for a in eqn.invars]
    for o in operands:
        if not isinstance(o, _PLAIN):
            return None
    return operands


_PLAIN = (np.ndarray, np.generic, int, float, bool, complex)


def _plan(jaxpr) -> list:
    """Per equation, ``(reusable, dead, view)``: the positions of the operands whose buffers
    it may take over, the ids of the variables that die there (the evaluation forgets them
    after it: an intermediate no longer needed is freed at once, and an array written in
    place is held once), and whether its result may be a view (see the module docstring).
    Computed once per jaxpr."""
    plan = jaxpr.__dict__.get("_eval_plan")
    if plan is not None and len(plan) == len(jaxpr.eqns):
        return plan
    produced = set()
    last_use = {}
    elementwise_uses_only = {}   # var id -> whether every equation reading it is elementwise
    for i, eqn in enumerate(jaxpr.eqns):
        for a in eqn.invars:
            if isinstance(a, Var):
                last_use[id(a)] = i
                elementwise_uses_only[id(a)] = (elementwise_uses_only.get(id(a), True)
                                                and eqn.primitive in impl_into_rules)
    returned = {id(v) for v in jaxpr.outvars if isinstance(v, Var)}
    plan = []
    for i, eqn in enumerate(jaxpr.eqns):
        dying = {id(a) for a in eqn.invars
                 if isinstance(a, Var) and last_use[id(a)] == i and id(a) not in returned}
        reusable = ()
        if eqn.primitive in impl_into_rules and len(eqn.outvars) == 1:
            reusable = tuple(k for k, a in enumerate(eqn.invars)
                             if isinstance(a, Var) and id(a) in dying and id(a) in produced)
        out = eqn.outvars[0] if len(eqn.outvars) == 1 else None
        view = (eqn.primitive in impl_view_rules and out is not None and id(out) not in returned
                and elementwise_uses_only.get(id(out), False))
        plan.append((reusable, tuple(dying), view))
        produced.update(id(v) for v in eqn.outvars)
    jaxpr.__dict__["_eval_plan"] = plan
    return plan
