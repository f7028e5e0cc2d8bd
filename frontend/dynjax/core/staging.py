"""The jaxpr-building trace: staging Python into a typed jaxpr with dynamic dims.

Each ``JaxprTrace`` owns a scope (a jaxpr under construction). Its tracers carry avals
whose dynamic dims are other tracers of the same trace, and each tracer stands for one
jaxpr variable (or an inline literal). Nested scopes (loop bodies, branches) are
traces whose ``parent`` is the enclosing staging trace; a tracer of an enclosing scope
used inside is *captured*: its dims are captured first, then the value itself, and
both become leading inputs of the nested jaxpr (the constants of the seed's algorithm).
Numpy arrays met while tracing become constvars of the outermost jaxpr.
"""
from __future__ import annotations

import os
import sys
from typing import Dict, List, Optional, Sequence

import numpy as np

from .avals import OutDBIdx, aval_of_value, make_aval
from .jaxpr import Jaxpr, JaxprEqn, Literal, Var
from .primitive import abstract_eval_rules
from .trace import Trace, Tracer, new_trace, next_level

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_frame():
    """(filename, lineno) of the innermost stack frame outside dynjax, or None."""
    f = sys._getframe(1)
    while f is not None:
        if not f.f_code.co_filename.startswith(_PACKAGE_DIR):
            return (f.f_code.co_filename, f.f_lineno)
        f = f.f_back
    return None


class StagingTracer(Tracer):
    """A tracer of a ``JaxprTrace``: stands for a jaxpr variable or a literal."""
    __slots__ = ("literal",)

    def __init__(self, trace, aval, literal=None):
        super().__init__(trace, aval)
        self.literal = literal  # the Literal when this tracer is an inline constant

    def as_dim(self):
        if self.literal is not None:
            return int(self.literal.val)
        return self


class JaxprTrace(Trace):
    """Records every primitive application as an equation of a jaxpr."""

    def __init__(self, level: int, parent: Optional["JaxprTrace"] = None):
        super().__init__(level)
        self.parent = parent
        self.eqns: List[JaxprEqn] = []
        self.atoms: Dict[int, object] = {}      # id(tracer) -> Var | Literal
        self.keepalive: List[Tracer] = []       # ids must stay unique while we record
        self.invars: List[Var] = []
        self.constvars: List[Var] = []          # outermost scope only: numpy constants
        self.constvals: List[np.ndarray] = []
        self._const_ids: Dict[int, Tracer] = {}
        self.captured: List[tuple] = []         # (outer tracer, inner tracer), in capture order
        self._captured_ids: Dict[int, Tracer] = {}
        self.known_dims: set = set()            # ids of tracers used as a dimension somewhere
        self._memo: Dict[object, Tracer] = {}   # see ``memoized``

    # --- creating tracers ---------------------------------------------------------------------
    def _var_aval(self, aval):
        return aval.update(shape=tuple(self.atoms[id(d)] if isinstance(d, Tracer) else d
                                       for d in aval.shape))

    def _new_tracer(self, aval) -> StagingTracer:
        for d in aval.shape:
            if isinstance(d, Tracer) and d._trace is not self:
                raise AssertionError("a dimension tracer belongs to another scope")
        t = StagingTracer(self, aval)
        self.known_dims.update(id(d) for d in aval.shape if isinstance(d, Tracer))
        self.atoms[id(t)] = Var(self._var_aval(aval))
        self.keepalive.append(t)
        return t

    def new_arg(self, aval) -> StagingTracer:
        t = self._new_tracer(aval)
        self.invars.append(self.atoms[id(t)])
        return t

    def literal_tracer(self, val, aval=None) -> StagingTracer:
        lit = Literal(val, aval)
        t = StagingTracer(self, lit.aval, literal=lit)
        self.atoms[id(t)] = lit
        self.keepalive.append(t)
        return t

    def pure(self, val):
        if isinstance(val, (bool, int, float, np.bool_, np.integer, np.floating)):
            return self.literal_tracer(val)
        arr = np.asarray(val) if not isinstance(val, np.ndarray) else val
        if arr.dtype == object:
            raise TypeError(f"cannot use a value of type {type(val).__name__} in a traced computation")
        if arr.ndim == 0:
            aval = aval_of_value(arr)
            return self.literal_tracer(arr.astype(aval.dtype)[()], aval)
        if self.parent is not None:
            return self.lift(self.parent.pure(arr))
        key = id(val)
        if key in self._const_ids:
            return self._const_ids[key]
        aval = aval_of_value(arr)
        t = self._new_tracer(aval)
        self.constvars.append(self.atoms[id(t)])
        self.constvals.append(np.asarray(arr, dtype=aval.dtype))
        self._const_ids[key] = t
        self.keepalive.append(val)
        return t

    def lift(self, outer: Tracer) -> Tracer:
        """Capture a tracer of an enclosing scope (its dims first)."""
        key = id(outer)
        if key in self._captured_ids:
            return self._captured_ids[key]
        if self.parent is None:
            from .trace import EscapedTracerError
            raise EscapedTracerError(outer)
        if outer._trace is not self.parent:
            outer = self.parent.full_raise(outer)
            if id(outer) in self._captured_ids:
                return self._captured_ids[id(outer)]
        if isinstance(outer, StagingTracer) and outer.literal is not None:
            inner = self.literal_tracer(outer.literal.val, outer.literal.aval)
        else:
            shape = tuple(self.lift(d) if isinstance(d, Tracer) else d for d in outer.aval.shape)
            inner = self._new_tracer(outer.aval.update(shape=shape))
            self.captured.append((outer, inner))
        self._captured_ids[key] = inner
        self._captured_ids[id(outer)] = inner
        return inner

    def memoized(self, key, make):
        """A tracer of this scope computed once for ``key`` and reused afterwards (keys hold
        ids of tracers of this scope, which stay unique while it records)."""
        t = self._memo.get(key)
        if t is None:
            t = self._memo[key] = make()
        return t

    # --- recording ----------------------------------------------------------------------------
    def process_primitive(self, primitive, tracers, params):
        rule = abstract_eval_rules.get(primitive)
        if rule is None:
            raise NotImplementedError(f"primitive {primitive.name} has no abstract evaluation rule")
        out = rule(*tracers, **params)
        out_avals = list(out) if primitive.multiple_results else [out]
        outs: List[StagingTracer] = []
        for aval in out_avals:
            shape = tuple(outs[d.val] if isinstance(d, OutDBIdx) else d for d in aval.shape)
            outs.append(self._new_tracer(make_aval(shape, aval.dtype, aval.weak_type)))
        self.eqns.append(JaxprEqn(primitive, [self.atoms[id(t)] for t in tracers],
                                  [self.atoms[id(t)] for t in outs], params, user_frame()))
        return outs if primitive.multiple_results else outs[0]

    def atom(self, t: Tracer):
        return self.atoms[id(self.full_raise(t))]

    def to_jaxpr(self, in_tracers: Sequence[Tracer], out_vals: Sequence, in_explicit=None,
                 out_explicit=None) -> Jaxpr:
        """The jaxpr of the outermost scope: numpy constants stay constvars."""
        if self.captured:
            raise AssertionError("the outermost scope cannot capture values")
        outvars = [self.atom(o) for o in out_vals]
        invars = [self.atoms[id(t)] for t in in_tracers]
        return Jaxpr(self.constvars, invars, self.eqns, outvars, in_explicit, out_explicit)

    def close(self, in_tracers: Sequence[Tracer], out_vals: Sequence, in_explicit=None,
              out_explicit=None):
        """The jaxpr of a nested scope in closed, constant-free form.

        Returns ``(jaxpr, const_operands)``: numpy constants and captured outer values
        become the leading invars of the jaxpr (implicit), and ``const_operands`` are
        the values to pass for them in the enclosing scope (numpy arrays and tracers).
        """
        outvars = [self.atom(o) for o in out_vals]
        cap_vars = [self.atoms[id(inner)] for _, inner in self.captured]
        lead = self.constvars + cap_vars
        invars = lead + [self.atoms[id(t)] for t in in_tracers]
        if in_explicit is None:
            in_explicit = (True,) * len(in_tracers)
        in_explicit = (False,) * len(lead) + tuple(in_explicit)
        consts = list(self.constvals) + [outer for outer, _ in self.captured]
        return Jaxpr([], invars, self.eqns, outvars, in_explicit, out_explicit), consts

def is_known_dim(x) -> bool:
    """Whether ``x`` is a traced integer already used as an array dimension (hence >= 0)."""
    trace = getattr(x, "_trace", None)
    return isinstance(trace, JaxprTrace) and id(x) in trace.known_dims


def new_jaxpr_trace(parent: Optional[JaxprTrace] = None):
    """Context manager opening a staging scope (nested in ``parent`` when given)."""
    return new_trace(JaxprTrace(next_level(), parent), dynamic=True)
