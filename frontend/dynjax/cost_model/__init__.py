"""The cost model: FLOPs, transcendental operations and bytes of a program as formulas in its
dynamic dims.

``cost_analysis(f, *args, abstracted_axes=...)`` traces ``f`` (as ``make_jaxpr`` does) and
adds up one ``Cost`` per equation, each a set of symbolic expressions
(``core/symbolic.py``) over the program's size variables: a matmul of ``f64[n,k]`` by
``f64[k,m]`` costs ``2*n*m*k`` FLOPs. ``Cost.at(n=..., m=...)`` evaluates the formulas.

Loops and conditionals:

* a loop whose body costs the same at every iteration costs trips x body, the trip count a
  formula in the bounds (``max(k, 0)`` for ``for_loop(0, k)``, ``length`` for ``scan``);
* a while loop's trip count is the symbol ``trips(while_loop@lineN)``; ``at()`` takes its
  value by that name, or finds it by running the loop's integer scalar arithmetic when the
  condition reads no array data (``while i < k``, ``while a.shape[0] < 100``);
* a loop whose body's cost changes between iterations (it depends on the index, as in a
  triangular nest, or on sizes the loop carries, as in an array that doubles) has no closed
  formula: it appears as ``sum(for_loop@lineN)`` and ``at()`` sums it iteration by
  iteration from the loop's size arithmetic (exact, in time proportional to the trips);
* ``cond`` takes, count by count, the maximum over its branches.

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

from ..core.jaxpr import Jaxpr, Literal, Var
from ..core.primitive import Primitive
from ..core.symbolic import Expr, Symbol, max0, maximum, single_symbols, to_str
from ..lax import primitives as P

__all__ = ["Cost", "cost_analysis", "cost_in_inputs", "jaxpr_cost", "cost_rules"]


@dataclass(frozen=True)
class Cost:
    """Symbolic costs; add them with ``+``, scale with ``*`` by an expression.

    ``definitions`` is an ordered tuple of ``(symbols, value)`` bindings for the symbols that
    stand for something other than an input size: a trip count ``max(k, 0)`` (``value`` an
    ``Expr``), or the summed cost of a loop whose body's cost changes from one iteration to
    the next (``value`` a ``_LoopSum``, which ``at()`` runs iteration by iteration)."""
    flops: Expr
    transcendentals: Expr
    bytes_read: Expr
    bytes_written: Expr
    definitions: tuple = ()

    @staticmethod
    def zero() -> "Cost":
        z = Expr.const(0)
        return Cost(z, z, z, z)

    def _fields(self):
        return (self.flops, self.transcendentals, self.bytes_read, self.bytes_written)

    def __add__(self, other: "Cost") -> "Cost":
        return Cost(*(a + b for a, b in zip(self._fields(), other._fields())),
                    _merge(self.definitions, other.definitions))

    def __mul__(self, k) -> "Cost":
        return Cost(*(a * k for a in self._fields()), self.definitions)

    def max(self, other: "Cost") -> "Cost":
        return Cost(*(maximum(a, b) for a, b in zip(self._fields(), other._fields())),
                    _merge(self.definitions, other.definitions))

    def formulas(self) -> Dict[str, str]:
        return {k: to_str(v) for k, v in zip(_FIELDS, self._fields())}

    def __str__(self):
        lines = [f"{k}: {v}" for k, v in self.formulas().items()]
        used = _symbols_of(*self._fields())
        for syms, value in self.definitions:
            if isinstance(value, _LoopSum) and any(s in used for s in syms[:4]):
                lines.append(f"  {value.label}: {value.describe()}")
        return "\n".join(lines)

    def at(self, **sizes) -> Dict[str, int]:
        """The costs for the given sizes (``n=1000``), by the names of the size variables:
        the names in ``abstracted_axes``, the parameter names of ``int`` arguments, and
        ``trips(while_loop@lineN)`` for a while loop's trip count (pass it with
        ``**{"trips(while_loop@line7)": 10}``)."""
        env = _Env(sizes)
        env.run(self.definitions)
        return {k: env.eval(v) for k, v in zip(_FIELDS, self._fields())}

    evaluate = at

    # --- read like a dict (as JAX's cost_analysis result): cost["flops"] ------------------------
    def __getitem__(self, name: str):
        """``cost["flops"]``: the count as an ``int`` when it depends on no size (loop trip
        counts included), else its formula (an ``Expr``; ``at()`` evaluates it)."""
        if name not in _FIELDS:
            raise KeyError(f"cost: no count named {name!r} (the counts are {', '.join(_FIELDS)})")
        e = getattr(self, name)
        if not _symbols_of(e):
            return int(e)
        env = _Env({})
        try:   # symbols bound by definitions (a constant trip count) have values
            for syms, value in self.definitions:
                if any(s in _symbols_of(e) for s in syms) or isinstance(value, Expr):
                    env.run(((syms, value),))
            return env.eval(e)
        except KeyError:     # some size has no value: the formula
            return e

    def keys(self):
        return _FIELDS

    def values(self):
        return tuple(self[k] for k in _FIELDS)

    def items(self):
        return tuple((k, self[k]) for k in _FIELDS)

    def get(self, name: str, default=None):
        return self[name] if name in _FIELDS else default

    def __contains__(self, name) -> bool:
        return name in _FIELDS

    def __iter__(self):
        return iter(_FIELDS)

    def __len__(self):
        return len(_FIELDS)


_FIELDS = ("flops", "transcendentals", "bytes_read", "bytes_written")


def _merge(d1: tuple, d2: tuple) -> tuple:
    if not d2:
        return d1
    seen = {id(v) for _, v in d1}
    return d1 + tuple(d for d in d2 if id(d[1]) not in seen)


def _atoms_symbols(e: Expr, out: set):
    for m, _ in e.terms:
        for atom, _ in m:
            if isinstance(atom, Symbol):
                out.add(atom)
            else:
                _atoms_symbols(atom[1], out)
    return out


def _symbols_of(*exprs) -> set:
    out = set()
    for e in exprs:
        _atoms_symbols(e, out)
    return out


class _Env:
    """Values of symbols while evaluating: bound ones (by object), else the user's sizes (by
    name)."""

    def __init__(self, sizes: Dict[str, int], bound=None):
        self.sizes = sizes
        self.bound: Dict[Symbol, int] = dict(bound or {})

    def child(self, bindings) -> "_Env":
        env = _Env(self.sizes, self.bound)
        env.bound.update(bindings)
        return env

    def symbol(self, s: Symbol) -> int:
        if s in self.bound:
            return self.bound[s]
        if s.name not in self.sizes:
            raise KeyError(f"cost: no value given for the size {s.name!r} (pass {s.name}=...)")
        return int(self.sizes[s.name])

    def eval(self, e: Expr) -> int:
        total = 0
        for mono, c in e.terms:
            v = c
            for atom, p in mono:
                v *= self._atom(atom) ** p
            total += v
        return total

    def _atom(self, atom) -> int:
        if isinstance(atom, Symbol):
            return self.symbol(atom)
        op, x, *rest = atom
        if op == "floordiv":
            return self.eval(x) // rest[0]
        return max(self.eval(x), 0)

    def run(self, definitions):
        for syms, value in definitions:
            if isinstance(value, Expr):
                self.bound[syms[0]] = self.eval(value)
            else:
                self.bound.update(zip(syms, value.compute(self)))


def evaluate(e: Expr, sizes: Dict[str, int]) -> int:
    """The value of ``e`` for the named sizes (a KeyError names a missing size)."""
    return _Env(sizes).eval(e)


# ----------------------------------------------------------------------------------------------
# Sizes of jaxpr values
# ----------------------------------------------------------------------------------------------
class _Sizes:
    """Symbolic values of a jaxpr's integer scalars: the expression tracing recorded, or a
    fresh variable named after the jaxpr variable."""

    def __init__(self, renamed: Optional[Dict[Symbol, Symbol]] = None):
        self.fresh: Dict[int, Expr] = {}
        self.defined: Dict[Expr, Symbol] = {}
        self.renamed = renamed or {}

    def define(self, e: Expr):
        """``(e, ())`` when ``e`` is a polynomial; else a symbol named by its formula
        (``max(k, 0)``) standing for it, so that products stay readable (``n*max(k, 0)``),
        and the binding to put in the ``Cost`` that uses it."""
        if all(isinstance(a, Symbol) for m, _ in e.terms for a, _ in m):
            return e, ()
        sym = self.defined.get(e)
        if sym is None:
            sym = self.defined[e] = Symbol(to_str(e))
        return Expr.symbol(sym), (((sym,), e),)

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

    def symbol(self, a) -> Optional[Symbol]:
        """The symbol a jaxpr variable stands for (a scope input), or None."""
        s = single_symbols(self.value(a))
        return s[0] if s else None

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
              "min and or xor eq ne lt le gt ge select_n convert_element_type complex shift_left "
              "shift_right").split():
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
           P.cumsum_p, P.cumprod_p):
    cost_rules[_p] = _reduction_cost
cost_rules[P.dot_general_p] = _dot_general_cost
for _p in (P.broadcast_in_dim_p, P.iota_p, P.reshape_p, P.transpose_p, P.squeeze_p, P.rev_p, P.sort_p,
           P.slice_p, P.dynamic_slice_p, P.dynamic_update_slice_p, P.concatenate_p, P.pad_p):
    cost_rules[_p] = _free


def _scatter_cost(eqn, sz):
    # one combining operation per update element (a set copies only)
    z = Expr.const(0)
    return Cost(z if eqn.params["kind"] == "set" else sz.elements(eqn.invars[2].aval), z, z, z)


cost_rules[P.gather_p] = _free
cost_rules[P.scatter_p] = _scatter_cost


def _label(eqn) -> str:
    info = eqn.source_info
    return f"{eqn.primitive.name}@line{info[1]}" if info else eqn.primitive.name


class _TripCount:
    """The trip count of a ``for_loop`` whose step is traced: ``len(range(lo, hi, step))``."""

    def __init__(self, lower: Expr, upper: Expr, step: Expr):
        self.bounds = (lower, upper, step)

    def free(self) -> set:
        return _symbols_of(*self.bounds)

    def compute(self, env: _Env):
        return [len(_for_range(env, *self.bounds))]


def _for_range(env: _Env, lower: Expr, upper: Expr, step: Expr) -> range:
    lo, hi, st = (env.eval(e) for e in (lower, upper, step))
    if st == 0:
        raise ValueError("cost: for_loop step is zero (the loop would never end)")
    return range(lo, hi, st)


def _trip_count(lower, upper, step, sz, label):
    """``(trips, definitions)``: the number of iterations of ``for_loop(lower, upper, step)``
    as a formula (``max(k, 0)``, ``floordiv(max(k + 1, 0), 2)``), named when it is not a
    polynomial."""
    lo, hi, st = sz.value(lower), sz.value(upper), sz.value(step)
    s = st.as_const()
    if s is None:   # the sign of the step is unknown: a symbol that at() computes
        sym = Symbol(f"trips({label})")
        return Expr.symbol(sym), (((sym,), _TripCount(lo, hi, st)),)
    if s == 0:
        raise ValueError(f"cost: {label} has step 0 (the loop would never end)")
    if s > 0:
        trips = max0(hi - lo + (s - 1)).floordiv(s)
    else:
        trips = max0(lo - hi + (-s - 1)).floordiv(-s)
    return sz.define(trips)


def _free_symbols(value) -> set:
    return _symbols_of(value) if isinstance(value, Expr) else value.free()


def _varies(cost: Cost, local) -> bool:
    """Whether ``cost`` depends on the ``local`` symbols (a loop's index or carried sizes),
    directly or through its definitions: then the loop's cost is not trips x body."""
    varying = {s for s in local if s is not None}
    if not varying:
        return False
    for syms, value in cost.definitions:
        if _free_symbols(value) & varying:
            varying.update(syms)
    return bool(_symbols_of(*cost._fields()) & varying)


class _LoopSum:
    """The summed cost of a loop whose body's cost changes from one iteration to the next (it
    depends on the index, or on sizes the loop carries). There is no closed formula in
    general, so the loop stands in the formulas as ``sum(for_loop@lineN)`` and ``at()`` runs
    the loop's size arithmetic: for each iteration it binds the index and the carried sizes,
    evaluates the body's formulas and computes the next carried sizes from the body's
    results. It also binds the sizes the loop returns (``results``)."""

    def __init__(self, label, iterations, index, k_init, parts, final, bounds):
        self.label = f"sum({label})"
        self.loop = label
        self.iterations = iterations   # env -> iterable of index values
        self.index = index             # the body's index symbol, or None
        self.k_init = k_init           # the carried sizes entering the loop (outer formulas)
        self.parts = parts             # [(cost, carried-size symbols, next sizes or None)]
        self.final = final             # (cost, carried-size symbols) run once more, or None
        self.bounds = bounds           # outer formulas the iteration count depends on

    def describe(self) -> str:
        return (f"the body's cost summed over the iterations of {self.loop} (it changes between "
                "iterations; at() runs the loop's size arithmetic)")

    def free(self) -> set:
        out = _symbols_of(*self.k_init, *self.bounds)
        for cost, _, _ in self.parts + ([self.final + (None,)] if self.final else []):
            out |= _symbols_of(*cost._fields())
            for _, value in cost.definitions:
                out |= _free_symbols(value)
        return out

    def compute(self, env: _Env):
        ks = [env.eval(e) for e in self.k_init]
        total = [0, 0, 0, 0]

        def run(cost, ksyms, idx):
            b = {s: v for s, v in zip(ksyms, ks) if s is not None}
            if self.index is not None and idx is not None:
                b[self.index] = idx
            benv = env.child(b)
            benv.run(cost.definitions)
            for j, f in enumerate(cost._fields()):
                total[j] += benv.eval(f)
            return benv

        for idx in self.iterations(env):
            for cost, ksyms, kouts in self.parts:
                benv = run(cost, ksyms, idx)
                if kouts is not None:
                    ks = [benv.eval(e) for e in kouts]
        if self.final is not None:
            run(*self.final, None)
        return total + ks


def _loop_sum(label, iterations, index, k_init, parts, final, results, bounds, sz) -> Cost:
    loop = _LoopSum(label, iterations, index, k_init, parts, final, bounds)
    sums = tuple(Symbol(loop.label) for _ in _FIELDS)
    res = []
    for j, s in enumerate(results):   # the sizes the loop returns: named after the loop
        named = Symbol(f"size{j or ''}({label})")
        if s is not None:
            sz.renamed[s] = named
        res.append(named)
    res = tuple(res)
    costs = [c for c, _, _ in parts]
    # a count that is 0 in every part (no transcendentals in the body) stays 0
    fields = [Expr.const(0) if all(c._fields()[j].as_const() == 0 for c in costs)
              else Expr.symbol(s) for j, s in enumerate(sums)]
    return Cost(*fields, ((sums + res, loop),))


def _for_loop_cost(eqn, sz):
    p = eqn.params
    nc, k = p["body_nconsts"], p["nimplicit"]
    body = p["body_jaxpr"]
    lower, upper, step = eqn.invars[nc:nc + 3]
    body_cost = jaxpr_cost(body, sz)
    index = sz.symbol(body.invars[nc])
    ksyms = [sz.symbol(v) for v in body.invars[nc + 1:nc + 1 + k]]
    if k == 0 and not _varies(body_cost, [index]):
        trips, defs = _trip_count(lower, upper, step, sz, _label(eqn))
        return Cost(*(body_cost * trips)._fields(), body_cost.definitions + defs)
    bounds = [sz.value(a) for a in (lower, upper, step)]
    return _loop_sum(_label(eqn), lambda env: _for_range(env, *bounds), index,
                     [sz.value(a) for a in eqn.invars[nc + 4:nc + 4 + k]],
                     [(body_cost, ksyms, [sz.value(v) for v in body.outvars[:k]])], None,
                     [sz.symbol(v) for v in eqn.outvars[:k]], bounds, sz)


class _WhileTrips:
    """The trip count of a ``while_loop``: the value the user passes by name
    (``trips(while_loop@line7)``), else found by running the loop's integer scalar arithmetic
    when the condition depends on nothing else (``while i < k``, ``while a.shape[0] < 100``).
    When the condition reads array data, the count must be passed."""

    LIMIT = 10_000_000

    def __init__(self, name, cond_jaxpr, cc, tracked, consts, init, nexts):
        self.name = name
        self.cond_jaxpr, self.cc = cond_jaxpr, cc
        self.tracked = tracked   # [(carry position, cond symbol, body symbol)]
        self.consts = consts     # values of the condition's constants (formulas or None)
        self.init = init         # formulas of the tracked carries entering the loop
        self.nexts = nexts       # formulas of the tracked carries the body returns

    def free(self) -> set:
        return _symbols_of(*[c for c in self.consts if c is not None], *self.init, *self.nexts)

    def _ask(self):
        return KeyError(f"cost: the trip count of a while loop depends on array data; pass "
                        f"**{{{self.name!r}: ...}} to at()")

    def compute(self, env: _Env):
        if self.name in env.sizes:
            return [int(env.sizes[self.name])]
        try:
            state = [env.eval(e) for e in self.init]
        except KeyError:
            raise self._ask() from None
        trips = 0
        while True:
            values = {}
            for j, c in enumerate(self.consts):
                if c is not None:
                    values[id(self.cond_jaxpr.invars[j])] = env.eval(c)
            for (pos, _, _), v in zip(self.tracked, state):
                values[id(self.cond_jaxpr.invars[self.cc + pos])] = v
            go = _eval_scalars(self.cond_jaxpr, values)
            if go is None:
                raise self._ask()
            if not go:
                return [trips]
            trips += 1
            if trips > self.LIMIT:
                raise ValueError(f"cost: {self.name} runs more than {self.LIMIT} iterations")
            benv = env.child({s: v for (_, _, s), v in zip(self.tracked, state) if s is not None})
            state = [benv.eval(e) for e in self.nexts]


def _eval_scalars(jaxpr: Jaxpr, values: dict):
    """The single result of ``jaxpr`` from the known scalar inputs in ``values`` (by id of
    the invar), running the primitives' numpy implementations; None when it depends on an
    unknown input."""
    from ..core.primitive import impl_rules
    unknown = object()
    env = dict(values)

    def read(a):
        if isinstance(a, Literal):
            return a.val
        return env.get(id(a), unknown)

    for eqn in jaxpr.eqns:
        args = [read(a) for a in eqn.invars]
        if any(a is unknown for a in args) or eqn.primitive not in impl_rules:
            continue
        outs = impl_rules[eqn.primitive](*args, **eqn.params)
        outs = outs if eqn.primitive.multiple_results else [outs]
        for v, o in zip(eqn.outvars, outs):
            env[id(v)] = o
    out = read(jaxpr.outvars[0])
    return None if out is unknown else bool(np.asarray(out))


def _while_trips(eqn, sz):
    p = eqn.params
    cc, bc = p["cond_nconsts"], p["body_nconsts"]
    cond_j, body_j = p["cond_jaxpr"], p["body_jaxpr"]
    sym = Symbol(f"trips({_label(eqn)})")
    tracked, init, nexts = [], [], []
    for pos, (v, o) in enumerate(zip(body_j.invars[bc:], body_j.outvars)):
        a = v.aval
        if a.shape == () and np.issubdtype(np.dtype(a.dtype), np.integer) \
                and (isinstance(o, Literal) or getattr(o, "sym", None) is not None):
            tracked.append((pos, sz.symbol(cond_j.invars[cc + pos]), sz.symbol(v)))
            init.append(sz.value(eqn.invars[cc + bc + pos]))
            nexts.append(sz.value(o))
    consts = [sz.value(a) if getattr(a, "sym", None) is not None or isinstance(a, Literal) else None
              for a in eqn.invars[:cc]]
    return sym, ((sym,), _WhileTrips(sym.name, cond_j, cc, tracked, consts, init, nexts))


def _while_cost(eqn, sz):
    p = eqn.params
    cc, bc, k = p["cond_nconsts"], p["body_nconsts"], p["nimplicit"]
    cond_j, body_j = p["cond_jaxpr"], p["body_jaxpr"]
    trips, definition = _while_trips(eqn, sz)
    cond_cost, body_cost = jaxpr_cost(cond_j, sz), jaxpr_cost(body_j, sz)
    if k == 0:
        c = (cond_cost + body_cost) * Expr.symbol(trips) + cond_cost
        return Cost(*c._fields(), (definition,) + c.definitions)
    csyms = [sz.symbol(v) for v in cond_j.invars[cc:cc + k]]
    bsyms = [sz.symbol(v) for v in body_j.invars[bc:bc + k]]
    c = _loop_sum(_label(eqn), lambda env: range(env.symbol(trips)), None,
                  [sz.value(a) for a in eqn.invars[cc + bc:cc + bc + k]],
                  [(cond_cost, csyms, None), (body_cost, bsyms, [sz.value(v) for v in body_j.outvars[:k]])],
                  (cond_cost, csyms), [sz.symbol(v) for v in eqn.outvars[:k]], [Expr.symbol(trips)], sz)
    return Cost(*c._fields(), (definition,) + c.definitions)


def _scan_cost(eqn, sz):
    p = eqn.params
    nc, k = p["num_consts"], p["nimplicit"]
    body = p["jaxpr"]
    length = sz.value(eqn.invars[nc])
    body_cost = jaxpr_cost(body, sz)
    if k == 0:
        return body_cost * length
    return _loop_sum(_label(eqn), lambda env: range(env.eval(length)), None,
                     [sz.value(a) for a in eqn.invars[nc + 1:nc + 1 + k]],
                     [(body_cost, [sz.symbol(v) for v in body.invars[nc:nc + k]],
                       [sz.value(v) for v in body.outvars[:k]])], None,
                     [sz.symbol(v) for v in eqn.outvars[:k]], [length], sz)


def _cond_cost(eqn, sz):
    costs = [jaxpr_cost(br, sz) for br in eqn.params["branches"]]
    out = costs[0]
    for c in costs[1:]:
        out = out.max(c)
    return out


def _call_cost(eqn, sz):
    return jaxpr_cost(eqn.params["call_jaxpr"], sz)


def _register_nested():
    from ..control_flow.primitives import cond_p, for_loop_p, scan_p, while_loop_p
    from ..lax.effects import debug_callback_p
    from ..transforms.custom import custom_jvp_call_p, custom_vjp_call_p
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
        return jaxpr_cost(jaxpr, _Sizes({s: Symbol(n) for s, n in (names or {}).items()}))
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


def cost_in_inputs(jaxpr: Jaxpr, positions) -> "tuple[Cost, list]":
    """The cost of running ``jaxpr`` once, and for each of its integer inputs at
    ``positions`` the name ``Cost.at`` knows its value by (None when the input is not a plain
    size symbol): what the execution tiers ask before evaluating a program eagerly."""
    sz = _Sizes()
    cost = jaxpr_cost(jaxpr, sz)
    names = []
    for i in positions:
        s = sz.symbol(jaxpr.invars[i])
        names.append(None if s is None else s.name)
    return cost, names


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
    from ..qjit import QJIT
    from ..tracing import make_jaxpr
    if isinstance(fun, QJIT):
        return fun.cost(*args)
    closed = make_jaxpr(fun, static_argnums=static_argnums, abstracted_axes=abstracted_axes)(*args)
    return jaxpr_cost(closed.jaxpr, names=parameter_names(closed.jaxpr, fun, args, static_argnums))


# The cost rules of other primitive families live in modules of this package, one per
# family (as lax/linalg.py and lowering/linalg.py); importing them registers them.
from . import linalg as _linalg  # noqa: E402,F401
from . import special as _special  # noqa: E402,F401
from . import prng as _prng  # noqa: E402,F401
from . import bits as _bits  # noqa: E402,F401
from . import fft as _fft  # noqa: E402,F401
from . import callbacks as _callbacks  # noqa: E402,F401
from . import convolution as _convolution  # noqa: E402,F401  (conv_general_dilated)
from . import cumulative as _cumulative  # noqa: E402,F401  (cummax / cummin)
from . import reduce_window as _reduce_window  # noqa: E402,F401
from . import barrier as _barrier  # noqa: E402,F401
from . import prng as _prng  # noqa: E402,F401
from . import collectives as _collectives  # noqa: E402,F401
from . import sharding as _sharding  # noqa: E402,F401
