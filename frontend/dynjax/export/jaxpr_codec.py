"""The jaxpr codec of exported programs: ``ClosedJaxpr`` <-> JSON-able data.

What is written, per jaxpr: its variables (each bound once, with its type and, for an
integer scalar, its symbolic size expression), literals, equations (the primitive by
*name*, looked up in this process's primitive catalogue when read; params through the
value codec of ``values.py``; the user's file and line), and which inputs and outputs are
explicit. A dim in a type refers to an earlier variable, so the reader rebuilds the same
``DShapedArray`` types, and with them the same ``in_type`` / ``out_type`` (``DBIdx`` /
``InDBIdx`` / ``OutDBIdx``). Size expressions refer to a table of symbols written once per
blob, recreated in their original order so that canonical forms compare as they did.

Reading checks the result with ``check_jaxpr`` (every equation's types re-derived by its
primitive's abstract evaluation), so a body that is well-formed JSON but not a well-typed
program is refused before it runs.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

from ..core.avals import make_aval
from ..core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from ..core.primitive import abstract_eval_rules
from ..core.symbolic import Expr, Symbol, _atom_key
from .lowering_away import unshippable_error
from .values import Malformed, Unshippable, decode_value, dtype_name, dtype_of, encode_value


class Encoder:
    """Writes jaxprs; one per blob (variable numbers and the symbol table are shared by all
    the jaxprs of a blob). ``fun_name`` names the exported function in errors."""

    def __init__(self, fun_name: str = "the function"):
        self.fun_name = fun_name
        self._vars: Dict[int, int] = {}
        self._symbols: Dict[int, Symbol] = {}

    # --- variables, types, sizes -------------------------------------------------------------
    def _ref(self, v: Var) -> int:
        try:
            return self._vars[id(v)]
        except KeyError:
            raise Malformed(f"variable {v!r} is used before it is bound") from None

    def _dim(self, d):
        if isinstance(d, Var):
            return {"v": self._ref(d)}
        if isinstance(d, Literal):
            return int(d.val)
        return int(d)

    def aval(self, a) -> list:
        return [dtype_name(a.dtype), [self._dim(d) for d in a.shape], bool(a.weak_type)]

    def bind(self, v: Var) -> list:
        aval = self.aval(v.aval)
        k = self._vars[id(v)] = len(self._vars)
        return [k, aval, self.expr(v.sym) if isinstance(v.sym, Expr) else None]

    def expr(self, e: Expr) -> list:
        return [[[[self._atom(a), p] for a, p in mono], c] for mono, c in e.terms]

    def _atom(self, a):
        if isinstance(a, Symbol):
            self._symbols[a.id] = a
            return {"s": a.id}
        op, *args = a
        return {"op": op, "args": [self.expr(x) if isinstance(x, Expr) else int(x) for x in args]}

    def symbols(self) -> list:
        """The symbol table: ``[id, name, lo, hi]`` in creation order (infinite bounds null)."""
        return [[k, s.name, None if s.lo == -math.inf else s.lo, None if s.hi == math.inf else s.hi]
                for k, s in sorted(self._symbols.items())]

    # --- programs ----------------------------------------------------------------------------
    def atom(self, a):
        if isinstance(a, Literal):
            return {"lit": encode_value(a.val, self._nested), "aval": self.aval(a.aval)}
        return self._ref(a)

    def jaxpr(self, j: Jaxpr) -> dict:
        out = {"constvars": [self.bind(v) for v in j.constvars],
               "invars": [self.bind(v) for v in j.invars],
               "in_explicit": [bool(e) for e in j.in_explicit], "eqns": []}
        for eqn in j.eqns:
            entry = {"p": eqn.primitive.name, "in": [self.atom(a) for a in eqn.invars]}
            entry["params"] = {k: self.param(eqn, k, v) for k, v in sorted(eqn.params.items())}
            entry["out"] = [self.bind(v) for v in eqn.outvars]
            src = eqn.source_info
            entry["src"] = [str(src[0]), int(src[1])] if src else None
            out["eqns"].append(entry)
        out["outvars"] = [self.atom(a) for a in j.outvars]
        out["out_explicit"] = [bool(e) for e in j.out_explicit]
        return out

    def param(self, eqn, name, value):
        """One param of an equation; one the format cannot hold (a Python function, a user's
        object) is a ValueError naming the primitive and the user's line."""
        try:
            return encode_value(value, self._nested)
        except Unshippable as e:
            raise unshippable_error(self.fun_name, eqn, f"{e} (param {name})") from None

    def _nested(self, x):
        if isinstance(x, ClosedJaxpr):
            return {"t": "closed_jaxpr", "jaxpr": self.jaxpr(x.jaxpr),
                    "consts": [encode_value(c, self._nested) for c in x.consts]}
        if isinstance(x, Jaxpr):
            return {"t": "jaxpr", "jaxpr": self.jaxpr(x)}
        if isinstance(x, Var):
            return {"t": "var", "v": self._ref(x)}
        return NotImplemented


class Decoder:
    """Reads what ``Encoder`` wrote (``symbols``: its symbol table)."""

    def __init__(self, symbols):
        self._vars: Dict[int, Var] = {}
        self._symbols: Dict[int, Symbol] = {}
        if not isinstance(symbols, list):
            raise Malformed("the symbol table must be a list")
        for row in sorted(symbols, key=lambda r: r[0] if isinstance(r, list) and r else 0):
            if not (isinstance(row, list) and len(row) == 4 and isinstance(row[0], int)
                    and isinstance(row[1], str)
                    and all(b is None or isinstance(b, (int, float)) for b in row[2:])):
                raise Malformed(f"bad symbol {row!r}")
            k, name, lo, hi = row
            self._symbols[k] = Symbol(name, -math.inf if lo is None else lo, math.inf if hi is None else hi)
        self._primitives = {p.name: p for p in abstract_eval_rules}

    def _var(self, k) -> Var:
        if not isinstance(k, int) or k not in self._vars:
            raise Malformed(f"reference to variable {k!r}, which is not bound before it")
        return self._vars[k]

    def _dim(self, d):
        if isinstance(d, dict) and set(d) == {"v"}:
            return self._var(d["v"])
        if isinstance(d, int) and not isinstance(d, bool) and d >= 0:
            return d
        raise Malformed(f"bad dimension {d!r}")

    def aval(self, a):
        if not (isinstance(a, list) and len(a) == 3 and isinstance(a[1], list) and isinstance(a[2], bool)):
            raise Malformed(f"bad type {a!r}")
        return make_aval(tuple(self._dim(d) for d in a[1]), dtype_of(a[0]), a[2])

    def bind(self, b) -> Var:
        if not (isinstance(b, list) and len(b) == 3 and isinstance(b[0], int)):
            raise Malformed(f"bad variable binding {b!r}")
        k, aval, sym = b
        if k in self._vars:
            raise Malformed(f"variable {k} is bound twice")
        v = self._vars[k] = Var(self.aval(aval), None if sym is None else self.expr(sym))
        return v

    def expr(self, e) -> Expr:
        if not isinstance(e, list):
            raise Malformed(f"bad size expression {e!r}")
        terms = {}
        for term in e:
            if not (isinstance(term, list) and len(term) == 2 and isinstance(term[0], list)
                    and isinstance(term[1], int)):
                raise Malformed(f"bad size expression term {term!r}")
            mono = []
            for pair in term[0]:
                if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], int) and pair[1] > 0):
                    raise Malformed(f"bad size expression factor {pair!r}")
                mono.append((self._atom(pair[0]), pair[1]))
            mono.sort(key=lambda ap: _atom_key(ap[0]))
            terms[tuple(mono)] = terms.get(tuple(mono), 0) + term[1]
        return Expr(terms)

    def _atom(self, a):
        if isinstance(a, dict) and set(a) == {"s"}:
            if a["s"] not in self._symbols:
                raise Malformed(f"unknown size symbol {a['s']!r}")
            return self._symbols[a["s"]]
        if isinstance(a, dict) and set(a) == {"op", "args"} and a["op"] in ("floordiv", "mod", "max0") \
                and isinstance(a["args"], list):
            return (a["op"], *[x if isinstance(x, int) else self.expr(x) for x in a["args"]])
        raise Malformed(f"bad size expression atom {a!r}")

    def atom(self, a):
        if isinstance(a, dict) and set(a) == {"lit", "aval"}:
            return Literal(decode_value(a["lit"], self._nested), self.aval(a["aval"]))
        return self._var(a)

    def jaxpr(self, d) -> Jaxpr:
        if not isinstance(d, dict):
            raise Malformed("a jaxpr must be an object")
        constvars = [self.bind(b) for b in _list(d, "constvars")]
        invars = [self.bind(b) for b in _list(d, "invars")]
        eqns = []
        for e in _list(d, "eqns"):
            if not isinstance(e, dict):
                raise Malformed("an equation must be an object")
            name = e.get("p")
            prim = self._primitives.get(name)
            if prim is None:
                raise Malformed(f"the program uses the primitive {name!r}, which this dynjax does not define "
                                "(a newer dynjax, or a user-defined primitive whose module is not imported)")
            ins = [self.atom(a) for a in _list(e, "in")]
            params = e.get("params")
            if not isinstance(params, dict):
                raise Malformed(f"the params of {name} must be an object")
            params = {k: decode_value(v, self._nested) for k, v in params.items()}
            outs = [self.bind(b) for b in _list(e, "out")]
            src = e.get("src")
            if src is not None and not (isinstance(src, list) and len(src) == 2 and isinstance(src[0], str)
                                        and isinstance(src[1], int)):
                raise Malformed(f"bad source location {src!r}")
            eqns.append(JaxprEqn(prim, ins, outs, params, tuple(src) if src else None))
        outvars = [self.atom(a) for a in _list(d, "outvars")]
        in_explicit, out_explicit = _flags(d, "in_explicit", len(invars)), _flags(d, "out_explicit", len(outvars))
        return Jaxpr(constvars, invars, eqns, outvars, in_explicit, out_explicit)

    def _nested(self, d):
        t = d["t"]
        if t == "closed_jaxpr":
            j = self.jaxpr(d["jaxpr"])
            consts = [decode_value(c, self._nested) for c in _list(d, "consts")]
            if len(consts) != len(j.constvars):
                raise Malformed("a closed jaxpr's constants do not match its constvars")
            return ClosedJaxpr(j, consts)
        if t == "jaxpr":
            return self.jaxpr(d["jaxpr"])
        if t == "var":
            return self._var(d["v"])
        raise Malformed(f"unknown value tag {t!r}")


def _list(d: dict, key: str) -> List[Any]:
    x = d.get(key)
    if not isinstance(x, list):
        raise Malformed(f"{key!r} must be a list")
    return x


def _flags(d: dict, key: str, n: int) -> Optional[tuple]:
    x = _list(d, key)
    if len(x) != n or not all(isinstance(b, bool) for b in x):
        raise Malformed(f"{key!r} must be {n} booleans")
    return tuple(x)
