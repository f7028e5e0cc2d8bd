"""The cost model: FLOPs, transcendental operations and bytes of a program as formulas in its
dynamic dims.

``cost_analysis(f, *args, abstracted_axes=...)`` traces ``f`` (as ``make_jaxpr`` does) and
adds up one ``Cost`` per equation, each a set of symbolic expressions
(``core/symbolic.py``) over the program's size variables: a matmul of ``f64[n,k]`` by
``f64[k,m]`` costs ``2*n*m*k`` FLOPs. Loops multiply their body's cost by their trip count
(a formula in the bounds when they are traced), ``cond`` takes the most expensive branch
(the maximum of the branches' formulas), a ``while_loop``'s unknown trip count is a fresh
variable named after the loop's line. ``Cost.at(n=..., m=...)`` evaluates the formulas.

Conventions (one rule per primitive in ``cost_rules``; ``dynjax.extend.def_cost`` adds one
for a user-defined primitive):

* arithmetic, comparisons, selects, conversions: 1 FLOP per result element;
  ``integer_pow`` with exponent y: ``|y| - 1`` multiplications per element (at least 1);
* transcendental functions (exp, log, sin, tanh, sqrt, rsqrt, pow, atan2, logistic ...):
  1 transcendental per result element, no FLOPs (XLA's convention);
* ``dot_general``: 2 FLOPs per multiply-add, ``2 * batch * rows * cols * contracted``;
* reductions and cumsum: 1 FLOP per input element;
* data movement (broadcast, reshape, transpose, slicing, padding, concatenation, sort,
  iota): no FLOPs;
* bytes: every equation reads its array operands and writes its results (element count
  times item size). Loops and conditionals count their bodies' bytes instead of their own
  operands. This is an upper bound of memory traffic: XLA fuses elementwise chains and
  reads each buffer once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Optional

import numpy as np

from .core.jaxpr import Jaxpr, Literal, Var
from .core.primitive import Primitive
from .core.symbolic import Expr, Symbol, max0, maximum, to_str
from .lax import primitives as P

__all__ = ["Cost", "cost_analysis", "jaxpr_cost", "cost_rules"]


@dataclass(frozen=True)
class Cost:
    """Symbolic costs; add them with ``+``, scale with ``*`` by an expression.
    ``definitions`` maps the symbols that stand for non-polynomial sizes (a trip count
    ``max(k, 0)``) to their formulas."""
    flops: Expr
    transcendentals: Expr
    bytes_read: Expr
    bytes_written: Expr
    definitions: tuple = ()

    @staticmethod
    def zero() -> "Cost":
        z = Expr.const(0)
        return Cost(z, z, z, z)

    def __add__(self, other: "Cost") -> "Cost":
        return Cost(self.flops + other.flops, self.transcendentals + other.transcendentals,
                    self.bytes_read + other.bytes_read, self.bytes_written + other.bytes_written,
                    self.definitions)

    def __mul__(self, k) -> "Cost":
        return Cost(self.flops * k, self.transcendentals * k, self.bytes_read * k, self.bytes_written * k,
                    self.definitions)

    def max(self, other: "Cost") -> "Cost":
        return Cost(maximum(self.flops, other.flops), maximum(self.transcendentals, other.transcendentals),
                    maximum(self.bytes_read, other.bytes_read), maximum(self.bytes_written, other.bytes_written),
                    self.definitions)

    def formulas(self) -> Dict[str, str]:
        return {"flops": to_str(self.flops), "transcendentals": to_str(self.transcendentals),
                "bytes_read": to_str(self.bytes_read), "bytes_written": to_str(self.bytes_written)}

    def __str__(self):
        return "\n".join(f"{k}: {v}" for k, v in self.formulas().items())

    def at(self, **sizes) -> Dict[str, int]:
        """The costs for the given sizes (``n=1000``), by the names of the size variables."""
        sizes = dict(sizes)
        for sym, value in self.definitions:   # in definition order: later ones may use earlier
            sizes[sym.name] = evaluate(value, sizes)
        return {k: evaluate(getattr(self, k), sizes) for k in
                ("flops", "transcendentals", "bytes_read", "bytes_written")}


def evaluate(e: Expr, sizes: Dict[str, int]) -> int:
    """The value of ``e`` for the named sizes (a KeyError names a missing size)."""
    total = 0
    for mono, c in e.terms:
        v = c
        for atom, p in mono:
            v *= _atom_value(atom, sizes) ** p
        total += v
    return total


def _atom_value(atom, sizes) -> int:
    if isinstance(atom, Symbol):
        if atom.name not in sizes:
            raise KeyError(f"cost: no value given for the size {atom.name!r} (pass {atom.name}=...)")
        return int(sizes[atom.name])
    op, x, *rest = atom
    if op == "floordiv":
        return evaluate(x, sizes) // rest[0]
    return max(evaluate(x, sizes), 0)


# ----------------------------------------------------------------------------------------------
# Sizes of jaxpr values
# ----------------------------------------------------------------------------------------------
class _Sizes:
    """Symbolic values of a jaxpr's integer scalars: the expression tracing recorded, or a
    fresh variable named after the jaxpr variable."""

    def __init__(self, renamed: Optional[Dict[Symbol, Symbol]] = None):
        self.fresh: Dict[int, Expr] = {}
        self.definitions: Dict[Symbol, Expr] = {}
        self.renamed = renamed or {}

    def define(self, e: Expr) -> Expr:
        """``e`` itself when it is a polynomial; else a symbol named by its formula
        (``max(k, 0)``) standing for it, so that products stay readable: ``n*max(k, 0)``."""
        if all(isinstance(a, Symbol) for m, _ in e.terms for a, _ in m):
            return e
        name = to_str(e)
        for sym, value in self.definitions.items():
            if value == e:
                return Expr.symbol(sym)
        sym = Symbol(name)
        self.definitions[sym] = e
        return Expr.symbol(sym)

    def value(self, a) -> Expr:
        if isinstance(a, Literal):
            return Expr.const(int(a.val))
        if isinstance(a, (int, np.integer)):
            return Expr.const(int(a))
        sym = getattr(a, "sym", None)
        if sym is not None:
            return _renamed(sym, self.renamed) if self.renamed else sym
        e = self.fresh.get(id(a))
        if e is None:
            e = self.fresh[id(a)] = Expr.symbol(Symbol(f"v{len(self.fresh)}"))
        return e

    def elements(self, aval) -> Expr:
        n = Expr.const(1)
        for d in aval.shape:
            n = n * self.value(d)
        return n

    def nbytes(self, aval) -> Expr:
        return self.elements(aval) * int(np.dtype(aval.dtype).itemsize)


# ----------------------------------------------------------------------------------------------
# Rules
# ----------------------------------------------------------------------------------------------
#: ``rule(eqn, sizes) -> Cost`` of one equation, *without* its bytes (added uniformly)
#: except for primitives with nested programs, which return their whole cost.
cost_rules: Dict[Primitive, Callable] = {}
_WHOLE = set()   # primitives whose rule includes the bytes (loops, conditionals, calls)


def _per_element(flops=0, trans=0):
    def rule(eqn, sz):
        n = sz.elements(eqn.outvars[0].aval)
        z = Expr.const(0)
        return Cost(n * flops, n * trans, z, z)
    return rule


for _name in ("neg sign floor ceil round is_finite not abs real imag conj add sub mul div rem max "
              "min and or xor eq ne lt le gt ge select_n convert_element_type complex").split():
    cost_rules[getattr(P, f"{_name}_p")] = _per_element(flops=1)
for _name in ("exp log log1p expm1 tanh logistic sin cos tan asin acos atan sinh cosh sqrt rsqrt "
              "cbrt pow atan2").split():
    cost_rules[getattr(P, f"{_name}_p")] = _per_element(trans=1)


def _integer_pow_cost(eqn, sz):
    return _per_element(flops=max(abs(int(eqn.params["y"])) - 1, 1))(eqn, sz)


def _reduction_cost(eqn, sz):
    z = Expr.const(0)
    return Cost(sz.elements(eqn.invars[0].aval), z, z, z)


def _dot_general_cost(eqn, sz):
    x = eqn.invars[0].aval
    (lc, _), _ = eqn.params["dimension_numbers"]
    contracted = Expr.const(1)
    for i in lc:
        contracted = contracted * sz.value(x.shape[i])
    z = Expr.const(0)
    return Cost(sz.elements(eqn.outvars[0].aval) * contracted * 2, z, z, z)


def _free(eqn, sz):
    return Cost.zero()


cost_rules[P.integer_pow_p] = _integer_pow_cost
for _p in (P.reduce_sum_p, P.reduce_prod_p, P.reduce_max_p, P.reduce_min_p, P.argmax_p, P.argmin_p,
           P.cumsum_p):
    cost_rules[_p] = _reduction_cost
cost_rules[P.dot_general_p] = _dot_general_cost
for _p in (P.broadcast_in_dim_p, P.iota_p, P.reshape_p, P.transpose_p, P.squeeze_p, P.rev_p, P.sort_p,
           P.slice_p, P.dynamic_slice_p, P.dynamic_update_slice_p, P.concatenate_p, P.pad_p):
    cost_rules[_p] = _free


def _trip_count(lower, upper, step, sz, label) -> Expr:
    lo, hi, st = sz.value(lower), sz.value(upper), sz.value(step)
    s = st.as_const()
    if s is None or s == 0:
        return Expr.symbol(Symbol(f"trips({label})"))
    if s > 0:
        trips = max0(hi - lo + (s - 1)).floordiv(s)
    else:
        trips = max0(lo - hi + (-s - 1)).floordiv(-s)
    return sz.define(trips)


def _label(eqn) -> str:
    info = eqn.source_info
    return f"{eqn.primitive.name}@line{info[1]}" if info else eqn.primitive.name


def _for_loop_cost(eqn, sz):
    p = eqn.params
    nc = p["body_nconsts"]
    lower, upper, step = eqn.invars[nc:nc + 3]
    return jaxpr_cost(p["body_jaxpr"], sz) * _trip_count(lower, upper, step, sz, _label(eqn))


def _while_cost(eqn, sz):
    p = eqn.params
    trips = Expr.symbol(Symbol(f"trips({_label(eqn)})"))
    per_iteration = jaxpr_cost(p["cond_jaxpr"], sz) + jaxpr_cost(p["body_jaxpr"], sz)
    return per_iteration * trips + jaxpr_cost(p["cond_jaxpr"], sz)


def _scan_cost(eqn, sz):
    p = eqn.params
    return jaxpr_cost(p["jaxpr"], sz) * sz.value(eqn.invars[p["num_consts"]])


def _cond_cost(eqn, sz):
    costs = [jaxpr_cost(br, sz) for br in eqn.params["branches"]]
    out = costs[0]
    for c in costs[1:]:
        out = out.max(c)
    return out


def _call_cost(eqn, sz):
    return jaxpr_cost(eqn.params["call_jaxpr"], sz)


def _register_nested():
    from .control_flow.primitives import cond_p, for_loop_p, scan_p, while_loop_p
    from .lax.effects import debug_callback_p
    from .transforms.custom import custom_jvp_call_p, custom_vjp_call_p
    for prim, rule in ((for_loop_p, _for_loop_cost), (while_loop_p, _while_cost), (scan_p, _scan_cost),
                       (cond_p, _cond_cost), (custom_jvp_call_p, _call_cost), (custom_vjp_call_p, _call_cost)):
        cost_rules[prim] = rule
        _WHOLE.add(prim)
    cost_rules[debug_callback_p] = _free
    _WHOLE.add(debug_callback_p)


_register_nested()


# ----------------------------------------------------------------------------------------------
# Programs
# ----------------------------------------------------------------------------------------------
def jaxpr_cost(jaxpr: Jaxpr, sizes: Optional[_Sizes] = None, names: Optional[Dict[Symbol, str]] = None) -> Cost:
    """The cost of running ``jaxpr`` once. ``names`` renames size symbols in the formulas."""
    if sizes is None:
        sz = _Sizes({s: Symbol(n) for s, n in (names or {}).items()})
        c = jaxpr_cost(jaxpr, sz)
        return Cost(c.flops, c.transcendentals, c.bytes_read, c.bytes_written, tuple(sz.definitions.items()))
    sz = sizes
    total = Cost.zero()
    for eqn in jaxpr.eqns:
        rule = cost_rules.get(eqn.primitive)
        if rule is None:
            raise NotImplementedError(f"cost: primitive '{eqn.primitive.name}' has no cost rule "
                                      "(register one with dynjax.extend.def_cost)")
        c = rule(eqn, sz)
        if eqn.primitive not in _WHOLE:
            read = Expr.const(0)
            for a in eqn.invars:
                if isinstance(a, Var):
                    read = read + sz.nbytes(a.aval)
            written = Expr.const(0)
            for v in eqn.outvars:
                written = written + sz.nbytes(v.aval)
            c = c + Cost(Expr.const(0), Expr.const(0), read, written)
        total = total + c
    return total


def parameter_names(jaxpr: Jaxpr, fun: Callable, args, static_argnums=()) -> Dict[Symbol, str]:
    """The parameter names of integer scalar arguments, for their size symbols (so that a
    formula reads ``k`` rather than ``d0``)."""
    import inspect
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        return {}
    explicit = [v for v, e in zip(jaxpr.invars, jaxpr.in_explicit) if e]
    names: Dict[Symbol, str] = {}
    k = 0
    for i, a in enumerate(args):
        if i in static_argnums:
            continue
        if isinstance(a, (list, tuple, dict)) or k >= len(explicit):
            break   # pytree arguments: leave the rest alone
        sym = getattr(explicit[k], "sym", None)
        if sym is not None and i < len(params) and np.ndim(a) == 0 \
                and np.issubdtype(np.asarray(a).dtype, np.integer):
            for m, _ in sym.terms:
                for atom, _ in m:
                    if isinstance(atom, Symbol):
                        names[atom] = params[i]
        k += 1
    return names


def _renamed(e: Expr, symbols: Dict[Symbol, Symbol]) -> Expr:
    out = Expr.const(0)
    for m, c in e.terms:
        t = Expr.const(c)
        for atom, p in m:
            if isinstance(atom, Symbol):
                f = Expr.symbol(symbols.get(atom, atom))
            elif atom[0] == "floordiv":
                f = _renamed(atom[1], symbols).floordiv(atom[2])
            else:
                f = max0(_renamed(atom[1], symbols))
            for _ in range(p):
                t = t * f
        out = out + t
    return out


def cost_analysis(fun: Callable, *args, abstracted_axes=None, static_argnums=()) -> Cost:
    """The cost of ``fun`` for arguments like ``args``, as formulas in the dynamic dims named
    in ``abstracted_axes`` (``Cost.at(n=...)`` evaluates them). A ``qjit`` function uses its
    own ``abstracted_axes`` and static arguments (or call ``f.cost(*args)``)."""
    from .qjit import QJIT
    from .tracing import make_jaxpr
    if isinstance(fun, QJIT):
        return fun.cost(*args)
    closed = make_jaxpr(fun, static_argnums=static_argnums, abstracted_axes=abstracted_axes)(*args)
    return jaxpr_cost(closed.jaxpr, names=parameter_names(closed.jaxpr, fun, args, static_argnums))
