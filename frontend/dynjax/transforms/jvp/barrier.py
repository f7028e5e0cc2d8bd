"""Jvp and transpose rules of ``optimization_barrier`` (``dynjax.lax.barrier``): the identity,
so the tangents go through a barrier of their own (symbolic zeros stay zeros), and so do the
cotangents: ``grad`` keeps the barrier in the backward program as JAX does."""
from __future__ import annotations

from ...core.primitive import jvp_rules, transpose_rules
from ...lax.barrier import optimization_barrier_p
from . import Zero


def _through_barrier(values, is_zero):
    """``values`` with the non-zero ones passed through one barrier together."""
    live = [v for v in values if not is_zero(v)]
    if not live:
        return list(values)
    outs = iter(optimization_barrier_p.bind(*live))
    return [v if is_zero(v) else next(outs) for v in values]


def _jvp(primals, tangents):
    out = optimization_barrier_p.bind(*primals)
    return out, _through_barrier(tangents, lambda t: isinstance(t, Zero))


def _transpose(cts, *operands):
    return _through_barrier(cts, lambda c: c is None)


jvp_rules[optimization_barrier_p] = _jvp
transpose_rules[optimization_barrier_p] = _transpose
