"""Primitives and the rule tables that interpret them.

A ``Primitive`` is only a name plus a flag saying whether it returns several results.
What a primitive *means* lives in one table per interpretation, keyed by primitive:

* ``impl_rules``           - evaluate on numpy values (eager evaluation);
* ``impl_into_rules``      - optional, for elementwise primitives: the impl written into the
  buffer of an operand that dies at the equation (``core/interpret.py`` reuses an
  intermediate array nobody else holds instead of allocating a new one);
* ``impl_view_rules``      - optional, for data movement (a broadcast): the impl's values as a
  read-only numpy view, which eager evaluation uses where only elementwise equations read
  the result (no copy of a broadcast row per element);
* ``abstract_eval_rules``  - compute output types from input types (tracing, type checking);
* ``lowering_rules``       - emit StableHLO (in ``dynjax.lowering``);
* ``symbolic_rules``       - integer scalar arithmetic on symbolic dimension expressions
  (``core/symbolic.py``; the rules are in ``lax/symbolic_rules.py``), so that equal sizes
  computed twice are recognized as one dim;
* ``jvp_rules``        - forward-mode differentiation (``transforms/jvp/``);
* ``partial_eval_rules`` - splitting a primitive whose operands are partly known when
  linearizing (control flow; ``transforms/partial_eval.py``);
* ``transpose_rules``  - reverse mode: transposing linear primitives (``transforms/transpose.py``);
* ``batching_rules``   - for vmap.

Adding a primitive is a checklist: create it, then register one rule in each table.

Abstract evaluation rules receive the operands themselves (tracers while tracing,
jaxpr atoms while type checking), each with an ``.aval``; ``as_dim(x)`` gives the
value to put into a shape when an operand is used as a dimension. Rules return one
aval (or a list when ``multiple_results``) whose dims are ints, dims taken from the
operands, or ``OutDBIdx(k)`` meaning "the k-th result of this same equation".
"""
from __future__ import annotations

from typing import Callable, Dict, Set


class Primitive:
    """A named operation; see the module docstring for how it is given meaning."""

    def __init__(self, name: str, multiple_results: bool = False):
        self.name = name
        self.multiple_results = multiple_results

    def bind(self, *args, **params):
        return _trace_module().bind(self, *args, **params)

    def __repr__(self):
        return self.name


def _trace_module():
    """``core.trace`` (which imports this module): looked up once, not imported at every bind."""
    global _trace
    if _trace is None:
        from . import trace
        _trace = trace
    return _trace


_trace = None

impl_rules: Dict[Primitive, Callable] = {}
#: ``rule(k, *operands, **params)``: what the impl returns, computed into ``operands[k]`` (a
#: numpy array of the result's shape that only the evaluation holds) and returned; or None
#: when the rule declines (another dtype or shape): the impl then runs as usual. Optional.
impl_into_rules: Dict[Primitive, Callable] = {}
#: ``rule(*operands, **params)``: the impl's values as a view of an operand (read-only), for
#: results that only elementwise equations (those with ``impl_into_rules``) read. Optional.
impl_view_rules: Dict[Primitive, Callable] = {}
abstract_eval_rules: Dict[Primitive, Callable] = {}
symbolic_rules: Dict[Primitive, Callable] = {}
jvp_rules: Dict[Primitive, Callable] = {}
partial_eval_rules: Dict[Primitive, Callable] = {}
transpose_rules: Dict[Primitive, Callable] = {}
batching_rules: Dict[Primitive, Callable] = {}

#: Primitives with an effect (a host callback): never removed as dead code, never compiled
#: into an XLA program (the planner runs them on the host, in program order).
effectful_primitives: Set[Primitive] = set()

#: Primitives that run on the host (a Python callback with results, ``pure_callback``): never
#: compiled into an XLA program (the planner runs their impl between compiled segments), but
#: pure, so dead-code elimination may drop them. Effectful primitives run on the host too.
host_primitives: Set[Primitive] = set()


def as_dim(x):
    """The dimension an operand stands for: an int for known values, else the operand itself."""
    method = getattr(x, "as_dim", None)
    if method is not None:
        return method()
    return int(x)
