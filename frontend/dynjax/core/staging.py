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

import contextlib
import math
import sys
import threading
from typing import Dict, List, Optional, Sequence

import numpy as np

from .avals import OutDBIdx, aval_of_value, is_integer_dtype, make_aval
from .errors import in_package
from .jaxpr import Jaxpr, JaxprEqn, Literal, Var
from .primitive import abstract_eval_rules, effectful_primitives, symbolic_rules
from .symbolic import Expr, Symbol, single_symbols
from .trace import Trace, Tracer, new_trace, next_level

class SourceInfo(tuple):
    """``(filename, lineno)`` of an equation's user line, with ``note``: what dynjax made the
    equation for, when that explains an error at run time better than the line alone."""
    note: Optional[str] = None


_notes = threading.local()


@contextlib.contextmanager
def source_note(note: str):
    """The equations staged inside carry ``note`` in their source info (``SourceInfo``)."""
    old = getattr(_notes, "note", None)
    _notes.note = note
    try:
        yield
    finally:
        _notes.note = old


def user_frame():
    """(filename, lineno) of the innermost stack frame outside dynjax, or None; a
    ``SourceInfo`` with a note inside ``source_note``."""
    f = sys._getframe(1)
    while f is not None:
        if not in_package(f.f_code.co_filename):
            note = getattr(_notes, "note", None)
            if note is None:
                return (f.f_code.co_filename, f.f_lineno)
            info = SourceInfo((f.f_code.co_filename, f.f_lineno))
            info.note = note
            return info
        f = f.f_back
    return None


class StagingTracer(Tracer):
    """A tracer of a ``JaxprTrace``: stands for a jaxpr variable or a literal. An integer
    scalar also carries ``sym``, its value as a symbolic expression over the sizes the
    scope takes as inputs (``core/symbolic.py``)."""
    __slots__ = ("literal", "sym")

    def __init__(self, trace, aval, literal=None, sym=None):
        super().__init__(trace, aval)
        self.literal = literal  # the Literal when this tracer is an inline constant
        self.sym = sym

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
        self._recorded: Dict[object, tuple] = {}   # see ``_reuse_key``
        self._by_sym: Dict[tuple, Tracer] = {}  # (dtype, weak, expression) -> its tracer
        self.symbol_names = parent.symbol_names if parent is not None else [0]

    # --- creating tracers ---------------------------------------------------------------------
    def _var_aval(self, aval):
        return aval.update(shape=tuple(self.atoms[id(d)] if isinstance(d, Tracer) else d
                                       for d in aval.shape))

    def _new_tracer(self, aval, sym=None) -> StagingTracer:
        for d in aval.shape:
            if isinstance(d, Tracer) and d._trace is not self:
                raise AssertionError("a dimension tracer belongs to another scope")
        if sym is None and _is_int_scalar(aval):
            sym = Expr.symbol(Symbol(self._symbol_name(), owner=self))   # known only at run time
        t = StagingTracer(self, aval, sym=sym)
        for d in aval.shape:
            if isinstance(d, Tracer):
                self._know_size(d)
        var = Var(self._var_aval(aval))
        var.sym = sym
        self.atoms[id(t)] = var
        self.keepalive.append(t)
        if sym is not None:
            self._by_sym.setdefault(_sym_key(aval, sym), t)
        return t

    def _symbol_name(self) -> str:
        self.symbol_names[0] += 1
        return f"d{self.symbol_names[0] - 1}"

    def _know_size(self, d: Tracer) -> None:
        """``d`` is used as a dimension: a run with ``d < 0`` fails, so from now on ``d >= 0``."""
        self.known_dims.add(id(d))
        sym = getattr(d, "sym", None)
        if sym is not None:
            for s in single_symbols(sym):
                # only for this scope's own symbols: a size used inside a loop body or branch
                # (which may never run) says nothing about an enclosing scope's integer
                if s.owner is self:
                    s.assume_nonnegative()

    def new_arg(self, aval, name: Optional[str] = None, size: bool = False, sym=None) -> StagingTracer:
        """A new input of this scope; an integer scalar is a fresh symbol (named ``name``,
        and known to be >= 0 when it is a ``size``), unless ``sym`` gives its value: an
        expression of enclosing scopes' sizes that the input is known to equal on every
        run (a cond operand, a loop-invariant carried size)."""
        if sym is None and _is_int_scalar(aval):
            sym = Expr.symbol(Symbol(name or self._symbol_name(), lo=0 if size else -math.inf, owner=self))
        t = self._new_tracer(aval, sym)
        self.invars.append(self.atoms[id(t)])
        return t

    def literal_tracer(self, val, aval=None) -> StagingTracer:
        lit = Literal(val, aval)
        sym = Expr.const(int(val)) if _carries_sym(lit.aval) else None
        t = StagingTracer(self, lit.aval, literal=lit, sym=sym)
        self.atoms[id(t)] = lit
        self.keepalive.append(t)
        return t

    def find_sym(self, aval, sym) -> Optional[Tracer]:
        """The tracer already holding the value ``sym`` (of this dtype), in this scope or an
        enclosing one (then captured), or a literal for a constant; None if there is none."""
        c = sym.as_const()
        if c is not None:
            return self.literal_tracer(aval.dtype.type(c), aval)
        for weak in (aval.weak_type, not aval.weak_type):
            scope = self
            while scope is not None:
                t = scope._by_sym.get((aval.dtype, weak, sym))
                if t is not None and scope.active:
                    t = t if scope is self else self.lift(t)
                    # the same value, weakly typed where a strong one is asked for (or the
                    # reverse): keep the requested type, which decides later promotions
                    return t if weak == aval.weak_type else self._retyped(t, aval)
                scope = scope.parent
        return None

    def refine_sym(self, t: StagingTracer, sym) -> None:
        """``t`` (a size a primitive produced as a fresh symbol) is known to equal ``sym``."""
        t.sym = sym
        self.atoms[id(t)].sym = sym
        self._by_sym.setdefault(_sym_key(t.aval, sym), t)

    def _retyped(self, t: StagingTracer, aval) -> StagingTracer:
        from ..lax.primitives import convert_element_type_p
        out = self._new_tracer(aval, t.sym)
        params = dict(new_dtype=aval.dtype, weak_type=aval.weak_type)
        self.eqns.append(JaxprEqn(convert_element_type_p, [self.atoms[id(t)]], [self.atoms[id(out)]], params,
                                  user_frame()))
        return out

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
        owner = outer._trace
        if isinstance(owner, JaxprTrace):
            # (an outermost scope captures an enclosing trace's value as is: make_jaxpr
            # inside a traced function closing over one of its values)
            if self.parent is not None and owner is not self.parent:
                outer = self.parent.full_raise(outer)
                if id(outer) in self._captured_ids:
                    return self._captured_ids[id(outer)]
        elif self.parent is not None and owner.level < self.parent.level:
            # a value of a transformation (jvp) below the enclosing scope: captured there first
            outer = self.parent.full_raise(outer)
            if id(outer) in self._captured_ids:
                return self._captured_ids[id(outer)]
        # else: a value of a transformation between the enclosing scope and this one (a jvp
        # tracer used in a program traced under it): captured here, so that binding the
        # closed program with its constants hands the tracer back to its transformation
        if isinstance(outer, StagingTracer) and outer.literal is not None:
            inner = self.literal_tracer(outer.literal.val, outer.literal.aval)
        elif getattr(outer, "sym", None) is not None and _sym_key(outer.aval, outer.sym) in self._by_sym:
            # a size this scope already holds (an input known to equal it): no second capture
            inner = self._by_sym[_sym_key(outer.aval, outer.sym)]
            self.keepalive.append(outer)
        else:
            shape = tuple(self.lift(d) if isinstance(d, Tracer) else d for d in outer.aval.shape)
            inner = self._new_tracer(outer.aval.update(shape=shape), getattr(outer, "sym", None))
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
        key = self._reuse_key(primitive, tracers, params)
        if key is not None:
            seen = self._recorded.get(key)
            if seen is not None and all(a is b or a.literal is not None for a, b in zip(seen[0], tracers)):
                return seen[1]   # the same pure operation on the same operands: one result
        out = self._record(primitive, tracers, params)
        if key is not None:
            self._recorded[key] = (tuple(tracers), out)
        return out

    @staticmethod
    def _reuse_key(primitive, tracers, params):
        """A key under which a pure equation's results are reused when the same primitive is
        applied again to the same operands with the same params, or None. Reuse is what
        makes two masks ``x > 0`` written twice (and the sizes they select) one value."""
        if primitive in effectful_primitives or any(
                isinstance(v, (Jaxpr, tuple)) and _holds_jaxpr(v) for v in params.values()):
            return None
        ops = tuple(("lit", t.literal.aval.dtype, t.literal.aval.shape, t.literal.aval.weak_type,
                     repr(t.literal.val))
                    if t.literal is not None else id(t) for t in tracers)
        try:
            key = (primitive, ops, tuple(sorted(params.items())))
            hash(key)
        except TypeError:
            return None
        return key

    def _record(self, primitive, tracers, params):
        rule = abstract_eval_rules.get(primitive)
        if rule is None:
            raise NotImplementedError(f"primitive {primitive.name} has no abstract evaluation rule")
        out = rule(*tracers, **params)
        if not primitive.multiple_results and _carries_sym(out):
            sym = self._symbolic(primitive, tracers, params)
            if sym is not None:
                known = self.find_sym(out, sym)
                if known is not None:
                    return known   # an equal size computed before: one variable
                t = self._new_tracer(make_aval((), out.dtype, out.weak_type), sym)
                self.eqns.append(JaxprEqn(primitive, [self.atoms[id(x)] for x in tracers],
                                          [self.atoms[id(t)]], params, user_frame()))
                return t
        out_avals = list(out) if primitive.multiple_results else [out]
        outs: List[StagingTracer] = []
        for aval in out_avals:
            shape = tuple(outs[d.val] if isinstance(d, OutDBIdx) else d for d in aval.shape)
            outs.append(self._new_tracer(make_aval(shape, aval.dtype, aval.weak_type)))
        self.eqns.append(JaxprEqn(primitive, [self.atoms[id(t)] for t in tracers],
                                  [self.atoms[id(t)] for t in outs], params, user_frame()))
        return outs if primitive.multiple_results else outs[0]

    def value_of_constant(self, value: int, dtype) -> StagingTracer:
        """A variable (not a literal) holding the integer ``value``, for a type that must refer
        to a variable (a branch's static size where other branches' sizes differ)."""
        from ..lax.primitives import convert_element_type_p
        lit = self.literal_tracer(np.dtype(dtype).type(value))
        t = self._new_tracer(lit.aval.strip_weak_type(), Expr.const(int(value)))
        params = dict(new_dtype=np.dtype(dtype), weak_type=False)
        self.eqns.append(JaxprEqn(convert_element_type_p, [lit.literal], [self.atoms[id(t)]], params,
                                  user_frame()))
        return t

    @staticmethod
    def _symbolic(primitive, tracers, params):
        """The symbolic value of an integer scalar result, or None."""
        rule = symbolic_rules.get(primitive)
        if rule is None:
            return None
        syms = [getattr(t, "sym", None) for t in tracers]
        if any(s is None for s in syms):
            return None
        return rule([t.aval for t in tracers], *syms, **params)

    def atom(self, t: Tracer):
        return self.atoms[id(self.full_raise(t))]

    def to_jaxpr(self, in_tracers: Sequence[Tracer], out_vals: Sequence, in_explicit=None,
                 out_explicit=None) -> Jaxpr:
        """The jaxpr of the outermost scope. Its constvars are the numpy constants, then the
        values it captured: tracers of an enclosing transformation or trace that the traced
        function closes over (``make_jaxpr`` or ``qjit`` applied under ``jvp`` / ``vmap``),
        which become inputs as in JAX's closure conversion. ``const_values()`` gives the
        values for the constvars."""
        outvars = [self.atom(o) for o in out_vals]
        invars = [self.atoms[id(t)] for t in in_tracers]
        cap_vars = [self.atoms[id(inner)] for _, inner in self.captured]
        return Jaxpr(self.constvars + cap_vars, invars, live_equations(self.eqns, outvars), outvars,
                     in_explicit, out_explicit)

    def const_values(self) -> list:
        """The values of ``to_jaxpr``'s constvars: numpy arrays, then the captured tracers."""
        return list(self.constvals) + [outer for outer, _ in self.captured]

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
        return Jaxpr([], invars, live_equations(self.eqns, outvars), outvars, in_explicit,
                     out_explicit), consts

def has_effect(eqn) -> bool:
    """Whether ``eqn`` is effectful (a debug callback), or holds a nested program (a loop
    body, a branch) that contains one."""
    if eqn.primitive in effectful_primitives:
        return True
    for p in eqn.params.values():
        for sub in (p if isinstance(p, tuple) else (p,)):
            if isinstance(sub, Jaxpr) and any(has_effect(e) for e in sub.eqns):
                return True
    return False


def without_effects(eqn) -> JaxprEqn:
    """``eqn`` with every effectful equation removed from its nested programs (for
    re-evaluating it where its effects already happened: the recomputation of a loop body
    in reverse-mode differentiation)."""
    def strip(jx):
        eqns = [without_effects(e) for e in jx.eqns if e.primitive not in effectful_primitives]
        return Jaxpr(jx.constvars, jx.invars, eqns, jx.outvars, jx.in_explicit, jx.out_explicit)
    params = {}
    for k, p in eqn.params.items():
        if isinstance(p, Jaxpr):
            p = strip(p)
        elif isinstance(p, tuple) and any(isinstance(x, Jaxpr) for x in p):
            p = tuple(strip(x) if isinstance(x, Jaxpr) else x for x in p)
        params[k] = p
    return JaxprEqn(eqn.primitive, eqn.invars, eqn.outvars, params, eqn.source_info)


def live_equations(eqns, outvars):
    """The equations the outputs depend on (through operands or types), in order, and every
    effectful equation (a debug callback). Size arithmetic that symbolic reuse made
    redundant (``n - 1`` computed twice) is dropped; other primitives are pure, so nothing
    else changes."""
    live = set()

    def use(atom):
        if isinstance(atom, Var) and id(atom) not in live:
            live.add(id(atom))
            for d in atom.aval.shape:
                use(d)
    for v in outvars:
        use(v)
    kept = []
    for eqn in reversed(eqns):
        if any(id(v) in live for v in eqn.outvars) or has_effect(eqn):
            kept.append(eqn)
            for v in eqn.outvars:
                use(v)
            for a in eqn.invars:
                use(a)
    kept.reverse()
    return kept


def _is_int_scalar(aval) -> bool:
    return aval.shape == () and is_integer_dtype(aval.dtype)


def _carries_sym(aval) -> bool:
    """Integer scalars carry expressions; bool scalars a decided constant, when known."""
    return aval.shape == () and (is_integer_dtype(aval.dtype) or aval.dtype == np.bool_)


def _sym_key(aval, sym):
    return (aval.dtype, aval.weak_type, sym)


def note_size(x) -> None:
    """``x`` (a traced integer) is used as a size in a shape: a run in which it is negative
    fails its size check, so from now on it is known to be ``>= 0`` (``max(x, 0) == x``).
    Recorded when the value enters a shape, before the operation that uses it compares its
    shape with others (``broadcast_to(arange(m), (n, m))``)."""
    trace = getattr(x, "_trace", None)
    if isinstance(x, StagingTracer) and isinstance(trace, JaxprTrace) and x.literal is None:
        trace._know_size(x)


def is_known_dim(x) -> bool:
    """Whether ``x`` is a traced integer already used as an array dimension (hence >= 0)."""
    trace = getattr(x, "_trace", None)
    return isinstance(trace, JaxprTrace) and id(x) in trace.known_dims


def new_jaxpr_trace(parent: Optional[JaxprTrace] = None):
    """Context manager opening a staging scope (nested in ``parent`` when given)."""
    return new_trace(JaxprTrace(next_level(), parent), dynamic=True)


def _holds_jaxpr(v) -> bool:
    if isinstance(v, Jaxpr):
        return True
    return isinstance(v, tuple) and any(_holds_jaxpr(x) for x in v)
