"""Symbolic dimension expressions: integer polynomials over a scope's dimension inputs.

A dynamic dim is a jaxpr variable *and* an expression over the scope's size inputs
(implicit dims, int arguments, loop-carried sizes, data-dependent sizes), so that two
sizes computed separately are recognized as equal (``x[1:]`` and ``x[:-1]`` are both
``n - 1``). Expressions are kept in a canonical form, so equality is structural:

* a polynomial with integer coefficients over *atoms*: a sum of ``coeff * monomial``,
  a monomial being a product of atoms with positive powers (``2*n*m + n - 1``);
* atoms are input ``Symbol`` s, or the non-polynomial operations, themselves canonical:
  ``floordiv(e, c)`` and ``mod(e, c)`` by a positive constant (with the multiples of
  ``c`` pulled out: ``(2*n + 3) // 2 == n + 1 + (1 // 2)`` -> ``n + 1``), and
  ``max0(e) = max(e, 0)``, to which ``max``/``min`` reduce (``max(a, b) = a + max0(b - a)``),
  dropped when the sign of ``e`` is decidable.

Decisions use bounds: every symbol has an interval (a size is ``>= 0``; an integer that
was used as a size is known to be ``>= 0`` from then on, since a negative size fails the
program at run time). ``decide_ge`` answers True / False / None (unknown) by interval
arithmetic; ``simplify`` re-canonicalizes an expression under the facts known now (a
``max(n, 0)`` built before ``n`` was known to be a size becomes ``n``).
"""
from __future__ import annotations

import itertools
import math
from typing import Dict, Optional, Tuple

_INF = math.inf
_ids = itertools.count()


class Symbol:
    """A size input of a scope: an opaque integer with bounds ``[lo, hi]``."""
    __slots__ = ("name", "lo", "hi", "id", "owner")

    def __init__(self, name: str, lo=-_INF, hi=_INF, owner=None):
        self.name = name
        self.lo, self.hi = lo, hi
        self.id = next(_ids)
        self.owner = owner   # the scope whose input (or run-time result) this is

    def assume_nonnegative(self):
        """Record that this integer is a size (used as a dimension): ``>= 0``."""
        if self.lo < 0:
            self.lo = 0
            _facts_changed()

    def __repr__(self):
        return self.name


# A monomial: tuple of (atom, power) sorted by atom key; () is the constant monomial.
# An expression: tuple of (monomial, coeff) sorted by monomial key, coeff != 0.


def _atom_key(atom):
    if isinstance(atom, Symbol):
        return (0, atom.id)
    op, *args = atom
    return (1, op, tuple(_expr_key(a) if isinstance(a, Expr) else a for a in args))


def _mono_key(mono):
    return tuple((_atom_key(a), p) for a, p in mono)


def _expr_key(e: "Expr"):
    return e._key


class Expr:
    """A canonical integer polynomial (see the module docstring). Immutable and hashable;
    ``==`` is structural equality of canonical forms."""
    __slots__ = ("terms", "_key", "_hash", "_form")

    def __init__(self, terms: Dict[tuple, int]):
        keyed = sorted(((_mono_key(m), m, c) for m, c in terms.items() if c != 0),
                       key=lambda kmc: kmc[0])
        self.terms = tuple((m, c) for _, m, c in keyed)
        self._key = tuple((k, c) for k, _, c in keyed)   # the canonical form, computed once
        self._hash = hash(self._key)
        self._form = None   # see _decision_key

    @staticmethod
    def _from_keyed(keyed) -> "Expr":
        """The expression of ``(monomial key, monomial, coeff)`` triples already sorted by
        key, with nonzero coefficients: arithmetic on canonical operands knows the keys of
        its terms, so it skips recomputing them (what ``__init__`` spends its time on)."""
        e = Expr.__new__(Expr)
        e.terms = tuple([(m, c) for _, m, c in keyed])
        e._key = tuple([(k, c) for k, _, c in keyed])
        e._hash = hash(e._key)
        e._form = None
        return e

    def _keyed(self):
        """This expression's terms as ``(monomial key, monomial, coeff)`` triples, in order."""
        return [(k, m, c) for (k, c), (m, _) in zip(self._key, self.terms)]

    # --- construction ----------------------------------------------------------------------
    @staticmethod
    def const(c: int) -> "Expr":
        c = int(c)
        e = _CONSTS.get(c)
        if e is None:
            e = Expr._from_keyed([((), (), c)] if c else [])
            if -_INTERNED_CONSTS <= c <= _INTERNED_CONSTS:
                _CONSTS[c] = e
        return e

    @staticmethod
    def atom(a) -> "Expr":
        return Expr({((a, 1),): 1})

    @staticmethod
    def symbol(s: Symbol) -> "Expr":
        return Expr.atom(s)

    def as_const(self) -> Optional[int]:
        if not self.terms:
            return 0
        if len(self.terms) == 1 and self.terms[0][0] == ():
            return self.terms[0][1]
        return None

    # --- conversion to a number: only a closed expression (no free dims) has one ------------
    def _closed_value(self, what: str) -> int:
        c = self.as_const()
        if c is None:
            names = sorted({s.name for s in _free_symbols(self)})
            raise TypeError(f"{what} of the size expression `{to_str(self)}` is not possible: it "
                            f"depends on the free dims {', '.join(names)} (give them values, e.g. "
                            f"Cost.at({names[0]}=...), or trace with static sizes)")
        return c

    def __int__(self):
        return self._closed_value("int()")

    def __index__(self):
        return self._closed_value("using as an index (__index__)")

    def __float__(self):
        return float(self._closed_value("float()"))

    def __eq__(self, other):
        return isinstance(other, Expr) and self._hash == other._hash and self._key == other._key

    def __hash__(self):
        return self._hash

    # --- arithmetic ------------------------------------------------------------------------
    def __add__(self, other):
        other = _lift(other)
        if not other.terms:
            return self
        if not self.terms:
            return other
        sums = {k: [m, c] for k, m, c in self._keyed()}
        for (k, c), (m, _) in zip(other._key, other.terms):
            mc = sums.get(k)
            if mc is None:
                sums[k] = [m, c]
            else:
                mc[1] += c
        return Expr._from_keyed([(k, m, c) for k, (m, c) in sorted(sums.items(), key=_first) if c != 0])

    __radd__ = __add__

    def __neg__(self):
        return Expr._from_keyed([(k, m, -c) for k, m, c in self._keyed()])

    def __sub__(self, other):
        return self + (-_lift(other))

    def __rsub__(self, other):
        return _lift(other) - self

    def __mul__(self, other):
        other = _lift(other)
        k = other.as_const()
        if k is None and self.as_const() is not None:
            self, other, k = other, self, self.as_const()
        if k is not None:   # a constant factor scales the coefficients: same monomials
            if k == 0:
                return Expr.const(0)
            return self if k == 1 else Expr._from_keyed([(mk, m, c * k) for mk, m, c in self._keyed()])
        out: Dict[tuple, int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in other.terms:
                m = _mono_mul(m1, m2)
                out[m] = out.get(m, 0) + c1 * c2
        return Expr(out)

    __rmul__ = __mul__

    def floordiv(self, c: int) -> "Expr":
        """``floor(self / c)`` for a nonzero constant ``c``."""
        c = int(c)
        if c == 0:
            raise ZeroDivisionError("floor division of a size by zero")
        if c < 0:
            return (-self).floordiv(-c)
        q, r = self._split(c)
        rc = r.as_const()
        if rc is not None:
            return q + Expr.const(rc // c)
        lo, hi = bounds(r)
        if lo >= 0 and hi < c:        # 0 <= r < c: floor(r / c) == 0
            return q
        return q + Expr.atom(("floordiv", r, c))

    def mod(self, c: int) -> "Expr":
        """``self mod c`` with the sign of ``c`` (Python's ``%``) for a nonzero constant ``c``."""
        c = int(c)
        if c == 0:
            raise ZeroDivisionError("modulo of a size by zero")
        return self - self.floordiv(c) * c

    def _split(self, c: int) -> Tuple["Expr", "Expr"]:
        """``self == c*q + r`` with every coefficient of ``r`` in ``[0, c)``."""
        q, r = {}, {}
        for m, k in self.terms:
            q[m], r[m] = k // c, k % c
        return Expr(q), Expr(r)

    def __repr__(self):
        return to_str(self)


def _free_symbols(e: Expr, out=None) -> set:
    """The symbols ``e`` mentions, inside ``floordiv`` / ``max0`` atoms too."""
    out = set() if out is None else out
    for m, _ in e.terms:
        for atom, _ in m:
            if isinstance(atom, Symbol):
                out.add(atom)
            else:
                for a in atom[1:]:
                    if isinstance(a, Expr):
                        _free_symbols(a, out)
    return out


def _first(pair):
    return pair[0]


#: the constants ``Expr.const`` keeps one expression of (sizes and counts are mostly small)
_INTERNED_CONSTS = 1 << 16
_CONSTS: Dict[int, Expr] = {}


def _lift(x) -> Expr:
    if isinstance(x, Expr):
        return x
    if isinstance(x, Symbol):
        return Expr.symbol(x)
    return Expr.const(int(x))


def _mono_mul(m1, m2):
    powers: Dict[object, int] = {}
    atoms: Dict[object, object] = {}
    for a, p in m1 + m2:
        k = _atom_key(a)
        powers[k] = powers.get(k, 0) + p
        atoms[k] = a
    return tuple((atoms[k], powers[k]) for k in sorted(powers))


def maximum(a, b) -> Expr:
    """``max(a, b)``, canonically ``a + max0(b - a)`` (the side whose difference has the
    smaller canonical key is the base), so that ``n - min(1, n)`` and ``max(n - 1, 0)`` are
    the same expression; one side alone when it provably dominates."""
    a, b = _lift(a), _lift(b)
    return a + max0(b - a)


def _max0_of_max0(d: Expr) -> Optional[Expr]:
    """``max0(max0(a) + r) == max0(a + r)`` when ``r <= 0`` (if ``a < 0`` both are 0)."""
    for m, k in d.terms:
        if k == 1 and len(m) == 1 and m[0][1] == 1 and not isinstance(m[0][0], Symbol) \
                and m[0][0][0] == "max0":
            r = d - Expr({m: 1})
            if decide_ge(0, r):
                return max0(m[0][0][1] + r)
    return None


def minimum(a, b) -> Expr:
    """``min(a, b) == a + b - max(a, b)``."""
    a, b = _lift(a), _lift(b)
    return a + b - maximum(a, b)


def max0(d) -> Expr:
    """``max(d, 0)``: ``d`` or ``0`` when decidable, else a canonical atom. Of ``d`` and
    ``-d`` the atom keeps the one with the smaller key (``max0(-d) == max0(d) - d``)."""
    d = _lift(d)
    c = d.as_const()
    if c is not None:
        return Expr.const(max(c, 0))
    if decide_ge(d, 0):
        return d
    if decide_ge(0, d):
        return Expr.const(0)
    nested = _max0_of_max0(d)
    if nested is not None:
        return nested
    nested = _max0_of_max0(-d)   # max0(d) == max0(-d) + d
    if nested is not None:
        return nested + d
    if _expr_key(-d) < _expr_key(d):
        return Expr.atom(("max0", -d)) + d
    return Expr.atom(("max0", d))


# --- bounds and decisions -------------------------------------------------------------------
def _imul(x, y):
    if x == 0 or y == 0:
        return 0
    return x * y


def _interval_mul(a, b):
    products = [_imul(x, y) for x in a for y in b]
    return min(products), max(products)


def _interval_pow(iv, p):
    lo, hi = iv
    if p % 2 == 1 or lo >= 0:
        return (lo ** p if lo != -_INF else -_INF if p % 2 else _INF), hi ** p
    if hi <= 0:
        return hi ** p, lo ** p
    return 0, max(lo ** p, hi ** p)


def _atom_bounds(atom):
    if isinstance(atom, Symbol):
        return atom.lo, atom.hi
    op, *args = atom
    if op == "floordiv":
        e, c = args
        lo, hi = bounds(e)
        return (math.floor(lo / c) if lo != -_INF else -_INF), (math.floor(hi / c) if hi != _INF else _INF)
    if op == "max0":
        lo, hi = bounds(args[0])
        return max(lo, 0), max(hi, 0)
    raise AssertionError(op)


def bounds(e: Expr) -> Tuple[float, float]:
    """An interval containing every value of ``e`` (given the symbols' bounds)."""
    lo = hi = 0
    for m, c in e.terms:
        iv = (1, 1)
        for a, p in m:
            iv = _interval_mul(iv, _interval_pow(_atom_bounds(a), p))
        t = _interval_mul(iv, (c, c))
        lo, hi = lo + t[0], hi + t[1]
    return lo, hi


def decide_ge(a, b) -> Optional[bool]:
    """True when ``a >= b`` always holds, False when never, None when it depends.

    A decision is remembered (``_decisions``) under the *form* of ``a - b``: its structure
    with each symbol replaced by its rank among the expression's symbols, and the bounds of
    those symbols. The procedure only compares symbols by their order and reads their bounds,
    so it answers alike any two expressions of one form. Tracing asks the same questions
    again and again (every ``max`` / ``min`` of sizes), and each padded build of a program
    asks those of the build before on fresh symbols; proving one may split on every
    ``max0`` atom it holds."""
    e = _lift(a) - _lift(b)
    c = e.as_const()
    if c is not None:
        return c >= 0
    facts = _facts_version   # (read before the bounds the key holds)
    key = _decision_key(e)
    known = _decisions.get(key, _UNDECIDED)
    if known is not _UNDECIDED:
        return known
    global _proofs
    _proofs += 1
    if _nonnegative(e, (), 4):
        decision = True
    elif _nonnegative(-e - 1, (), 4):
        decision = False
    else:
        decision = None
    if facts == _facts_version:   # not decided under bounds that tightened meanwhile
        if len(_decisions) >= REMEMBERED_DECISIONS:
            _decisions.clear()
        _decisions[key] = decision
    return decision


#: how many decisions ``decide_ge`` remembers (then it forgets them all and starts again)
REMEMBERED_DECISIONS = 1 << 14
_decisions: Dict[tuple, Optional[bool]] = {}
_UNDECIDED = object()
_facts_version = 0
_proofs = 0


def _facts_changed():
    """A symbol's bounds tightened (a decision in progress may have read either bounds)."""
    global _facts_version
    _facts_version += 1


def _decision_key(e: Expr) -> tuple:
    """The form of ``e`` (see ``decide_ge``): its canonical key with symbol ids replaced by
    their ranks (order-preserving, so every comparison of keys comes out alike), and the
    bounds of its symbols by rank."""
    form = e._form
    if form is None:   # computed once per expression (max0 asks about one ``d`` twice)
        symbols = tuple(sorted(_free_symbols(e), key=lambda s: s.id))
        rank = {s.id: r for r, s in enumerate(symbols)}
        form = e._form = (_ranked_expr_key(e._key, rank), symbols)
    ranked, symbols = form
    return ranked, tuple([(s.lo, s.hi) for s in symbols])


def _ranked_expr_key(key, rank):
    return tuple([(tuple([(_ranked_atom_key(a, rank), p) for a, p in mono]), c) for mono, c in key])


def _ranked_atom_key(akey, rank):
    if akey[0] == 0:
        return (0, rank[akey[1]])
    return (1, akey[1], tuple([_ranked_expr_key(x, rank) if isinstance(x, tuple) else x for x in akey[2]]))


def proofs_made() -> int:
    """How many decisions ``decide_ge`` has worked out so far, rather than remembered (tests of
    the memo, and profiles: a padded build that proves anything the build before proved
    does the same work twice)."""
    return _proofs


def _nonnegative(e: Expr, hyps, depth: int) -> bool:
    """Whether ``e >= 0`` provably, given hypotheses ``h >= 0`` for ``h`` in ``hyps``:

    * by interval arithmetic on ``e`` or on ``e - h`` (``e >= h >= 0``);
    * by replacing a linear ``floordiv`` atom by a linear bound (``c*(r // c) >= r - c + 1``
      for a positive coefficient, ``c*(r // c) <= r`` for a negative one);
    * by splitting on a ``max0(d)`` atom: ``d >= 0`` (then it is ``d``) or ``d <= 0`` (then 0).
    """
    if bounds(e)[0] >= 0 or any(bounds(e - h)[0] >= 0 for h in hyps):
        return True
    if depth == 0:
        return False
    for m, k in e.terms:
        if len(m) != 1 or m[0][1] != 1 or isinstance(m[0][0], Symbol) or m[0][0][0] != "floordiv":
            continue
        r, c = m[0][0][1:]
        rest = e - Expr({m: k})
        bound = rest * c + (r - (c - 1)) * k if k > 0 else rest * c + r * k
        if _nonnegative(bound, tuple(h * c for h in hyps), depth - 1):
            return True
    atom = _first_max0(e)
    if atom is not None:
        d = atom[1]
        return (_nonnegative(substitute(e, atom, d), hyps + (d,), depth - 1)
                and _nonnegative(substitute(e, atom, Expr.const(0)), hyps + (-d,), depth - 1))
    return False


def _first_max0(e: Expr):
    for m, _ in e.terms:
        for a, _ in m:
            if not isinstance(a, Symbol) and a[0] == "max0":
                return a
    return None


def substitute(e: Expr, atom, value: Expr) -> Expr:
    """``e`` with every occurrence of ``atom`` (at the top level of its monomials) replaced."""
    key = _atom_key(atom)
    out = Expr.const(0)
    for m, c in e.terms:
        t = Expr.const(c)
        for a, p in m:
            factor = value if _atom_key(a) == key else Expr.atom(a)
            for _ in range(p):
                t = t * factor
        out = out + t
    return out


def decide_eq(a, b) -> Optional[bool]:
    """True when ``a == b`` always (after simplifying under current facts), False when
    provably different, None when it depends on the inputs' values."""
    a, b = simplify(_lift(a)), simplify(_lift(b))
    if a == b:
        return True
    ge, le = decide_ge(a, b), decide_ge(b, a)
    if ge and le:
        return True
    if ge is False or le is False:
        return False
    return None


def simplify(e: Expr) -> Expr:
    """Rebuild ``e`` under the facts known now (max/min/floordiv may simplify further)."""
    out = Expr.const(0)
    for m, c in e.terms:
        t = Expr.const(c)
        for a, p in m:
            sa = _simplify_atom(a)
            for _ in range(p):
                t = t * sa
        out = out + t
    return out


def _simplify_atom(atom) -> Expr:
    if isinstance(atom, Symbol):
        return Expr.symbol(atom)
    op, *args = atom
    if op == "floordiv":
        return simplify(args[0]).floordiv(args[1])
    if op == "max0":
        return max0(simplify(args[0]))
    raise AssertionError(op)


def single_symbols(e: Expr):
    """The symbol ``e`` is, as a one-element list (``[n]`` for ``n``), else ``[]``."""
    if len(e.terms) == 1:
        (m, c), = e.terms
        if c == 1 and len(m) == 1 and m[0][1] == 1 and isinstance(m[0][0], Symbol):
            return [m[0][0]]
    return []


# --- printing -------------------------------------------------------------------------------
def _atom_str(a) -> str:
    if isinstance(a, Symbol):
        return a.name
    op, x, *rest = a
    if op == "floordiv":
        return f"floordiv({to_str(x)}, {rest[0]})"
    return f"max({to_str(x)}, 0)"


def to_str(e: Expr) -> str:
    """``2*n*m + n - 1``: the form error messages and ``str(aval)`` show. ``a + max0(b - a)``
    prints as ``max(a, b)`` and ``a - max0(a - b)`` as ``min(a, b)``."""
    folded = _as_max_or_min(e)
    if folded is not None:
        return folded
    return _poly_str(e)


def _as_max_or_min(e: Expr) -> Optional[str]:
    atoms = [(m, k) for m, k in e.terms if len(m) == 1 and m[0][1] == 1
             and not isinstance(m[0][0], Symbol) and m[0][0][0] == "max0"]
    if len(atoms) != 1 or atoms[0][1] not in (1, -1):
        return None
    (m, k), = atoms
    rest = e - Expr({m: k})
    d = m[0][0][1]
    if rest.as_const() == 0:
        return None   # plain max(d, 0)
    if k == 1:        # rest + max(d, 0) == max(rest, rest + d)
        return f"max({_poly_str(rest)}, {_poly_str(rest + d)})"
    return f"min({_poly_str(rest)}, {_poly_str(rest - d)})"   # rest - max(d, 0)


def _poly_str(e: Expr) -> str:
    if not e.terms:
        return "0"
    parts = []
    for m, c in sorted(e.terms, key=lambda mc: (-sum(p for _, p in mc[0]), _mono_key(mc[0]))):
        body = "*".join(_atom_str(a) + (f"^{p}" if p > 1 else "") for a, p in m)
        if not body:
            text = str(abs(c))
        elif abs(c) == 1:
            text = body
        else:
            text = f"{abs(c)}*{body}"
        parts.append(("-" if c < 0 else "+", text))
    first_sign, first = parts[0]
    out = ("-" if first_sign == "-" else "") + first
    for sign, text in parts[1:]:
        out += f" {sign} {text}"
    return out
