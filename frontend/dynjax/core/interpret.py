"""``eval_jaxpr``: run a jaxpr by binding each equation on the current interpreter.

Outside any trace this evaluates eagerly with the numpy impls; under a staging trace it
re-stages the equations (which is how nested ``qjit`` calls are inlined).

``interruptible(stop)`` lets a caller abandon an evaluation: until it exits, every
evaluation on that thread (loop bodies included) checks ``stop()`` before each equation and
raises ``Interrupted`` once it is true.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable

from .jaxpr import ClosedJaxpr, Literal


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
    for eqn in jaxpr.eqns:
        if stop is not None and stop():
            raise Interrupted()
        outs = eqn.primitive.bind(*[read(a) for a in eqn.invars], **eqn.params)
        if not eqn.primitive.multiple_results:
            outs = [outs]
        for v, x in zip(eqn.outvars, outs):
            env[id(v)] = x
    return [read(a) for a in jaxpr.outvars]
