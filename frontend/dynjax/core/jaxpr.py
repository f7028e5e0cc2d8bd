"""Jaxprs: the typed, first-order program representation dynjax records.

``Jaxpr`` holds constvars, invars, equations and outvars. Variable types may mention
other variables (``c:f64[b]``), which is how dynamic dimensions are expressed; a
variable may only be mentioned after it is bound. ``in_explicit`` / ``out_explicit``
say which inputs and outputs the user wrote (the others are implicit dimension
values); ``in_type`` / ``out_type`` present the same information with de Bruijn-style
indices (``DBIdx`` / ``InDBIdx`` / ``OutDBIdx``).

This module also holds the pretty printer (the seed's textual form) and the type
checker ``check_jaxpr``.
"""
from __future__ import annotations

import itertools
from typing import Any, Dict, Optional, Sequence

import numpy as np

from .avals import (DBIdx, InDBIdx, OutDBIdx, ShapedArray, aval_of_value, make_aval)
from .primitive import Primitive, abstract_eval_rules

_var_ids = itertools.count()


class Var:
    """A jaxpr variable. Identity is the object; names are chosen when printing. A variable
    recorded by tracing an integer scalar also keeps its symbolic value (``sym``), which
    the type checker uses to compare dims as the tracer did."""
    __slots__ = ("aval", "id", "sym")

    def __init__(self, aval: ShapedArray, sym=None):
        self.aval = aval
        self.id = next(_var_ids)
        self.sym = sym

    def as_dim(self):
        return self

    def __repr__(self):
        return f"Var#{self.id}:" + self.aval.str_short(lambda d: "#" + str(getattr(d, "id", d)))


class Literal:
    """A scalar constant written inline in a jaxpr (``1.0``, ``3``, ``True``)."""
    __slots__ = ("val", "aval")

    def __init__(self, val, aval: Optional[ShapedArray] = None):
        self.val = val
        self.aval = aval if aval is not None else aval_of_value(val)

    def as_dim(self):
        return int(self.val)

    def __repr__(self):
        return format_literal(self.val)


def format_literal(val) -> str:
    if isinstance(val, (bool, np.bool_)):
        return str(bool(val))
    if isinstance(val, (int, np.integer)):
        return str(int(val))
    if isinstance(val, (float, np.floating)):
        return repr(float(val))
    if isinstance(val, np.ndarray) and val.ndim == 0:
        return format_literal(val.item())
    return repr(val)


Atom = Any  # Var | Literal


class JaxprEqn:
    """``outvars = primitive[params] invars``."""
    __slots__ = ("primitive", "invars", "outvars", "params", "source_info")

    def __init__(self, primitive: Primitive, invars, outvars, params, source_info=None):
        self.primitive = primitive
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.params = dict(params)
        self.source_info = source_info

    def __repr__(self):
        return pp_eqn(self, _Namer(), 0)


def at_user_line(eqn: JaxprEqn) -> str:
    """`` (at file:line)`` for an equation recorded with the user's line, else ``""``: the
    suffix of an error message about that equation."""
    return f" (at {eqn.source_info[0]}:{eqn.source_info[1]})" if eqn.source_info else ""


class Jaxpr:
    """A program: ``{ lambda constvars ; invars. let eqns in outvars }``."""

    def __init__(self, constvars, invars, eqns, outvars, in_explicit=None, out_explicit=None):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.eqns = list(eqns)
        self.outvars = list(outvars)
        self.in_explicit = tuple(in_explicit) if in_explicit is not None else (True,) * len(self.invars)
        self.out_explicit = tuple(out_explicit) if out_explicit is not None else (True,) * len(self.outvars)
        assert len(self.in_explicit) == len(self.invars)
        assert len(self.out_explicit) == len(self.outvars)

    @property
    def in_avals(self):
        return [v.aval for v in self.invars]

    @property
    def out_avals(self):
        return [v.aval for v in self.outvars]

    @property
    def in_type(self):
        """``((aval, explicit), ...)`` with input dims written as ``DBIdx``."""
        pos = {id(v): i for i, v in enumerate(self.invars)}

        def dim(d):
            if isinstance(d, int):
                return d
            if id(d) in pos:
                return DBIdx(pos[id(d)])
            raise ValueError(f"input dim {d} is not an input of the jaxpr")
        return tuple((v.aval.update(shape=tuple(dim(d) for d in v.aval.shape)), e)
                     for v, e in zip(self.invars, self.in_explicit))

    @property
    def out_type(self):
        """``((aval, explicit), ...)`` with dims written as ``InDBIdx`` / ``OutDBIdx``."""
        in_pos = {id(v): i for i, v in enumerate(self.invars)}
        out_pos = {}
        for i, v in enumerate(self.outvars):
            if isinstance(v, Var):
                out_pos.setdefault(id(v), i)

        def dim(d):
            if isinstance(d, int):
                return d
            if isinstance(d, Literal):
                return int(d.val)
            if id(d) in out_pos:
                return OutDBIdx(out_pos[id(d)])
            if id(d) in in_pos:
                return InDBIdx(in_pos[id(d)])
            raise ValueError(f"output dim {d} is neither an input nor an output of the jaxpr")
        return tuple((v.aval.update(shape=tuple(dim(d) for d in v.aval.shape)), e)
                     for v, e in zip(self.outvars, self.out_explicit))

    def __str__(self):
        return pp_jaxpr(self, _Namer(), 0)

    __repr__ = __str__

    def pretty_print(self):
        return str(self)


class ClosedJaxpr:
    """A jaxpr together with the values of its constvars."""

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
        assert len(jaxpr.constvars) == len(consts)
        self.jaxpr = jaxpr
        self.consts = list(consts)

    in_type = property(lambda self: self.jaxpr.in_type)
    out_type = property(lambda self: self.jaxpr.out_type)
    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)

    def __str__(self):
        return str(self.jaxpr)

    __repr__ = __str__


# ----------------------------------------------------------------------------------------------
# Pretty printing
# ----------------------------------------------------------------------------------------------

class _Namer:
    """Gives variables the names a, b, ..., z, ba, bb, ... in order of first binding."""

    def __init__(self):
        self.names: Dict[int, str] = {}
        self.counter = itertools.count()

    def bind(self, v) -> str:
        if isinstance(v, Var) and id(v) not in self.names:
            self.names[id(v)] = _encode(next(self.counter))
        return self.name(v)

    def name(self, v) -> str:
        if isinstance(v, Literal):
            return format_literal(v.val)
        if isinstance(v, Var):
            if id(v) not in self.names:  # a free variable: still print something stable
                self.names[id(v)] = _encode(next(self.counter))
            return self.names[id(v)]
        if isinstance(v, int):
            return str(v)
        return repr(v)

    def typed(self, v) -> str:
        name = self.bind(v)
        return f"{name}:{v.aval.str_short(self.name)}"


def _encode(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    s = ""
    while True:
        s = letters[i % 26] + s
        i //= 26
        if i == 0:
            break
    # a..z, then ba, bb, ... (like a base-26 number whose leading 'a' is dropped)
    return s


def pp_jaxpr(jaxpr: Jaxpr, namer: _Namer, indent: int) -> str:
    consts = " ".join(namer.typed(v) for v in jaxpr.constvars)
    args = " ".join(namer.typed(v) for v in jaxpr.invars)
    head = f"{{ lambda {consts}; {args}. let" if consts else f"{{ lambda ; {args}. let"
    lines = [head]
    for eqn in jaxpr.eqns:
        lines.append(pp_eqn(eqn, namer, indent + 4))
    outs = ", ".join(namer.name(v) for v in jaxpr.outvars)
    if len(jaxpr.outvars) == 1:
        outs += ","
    lines.append(" " * (indent + 2) + f"in ({outs}) }}")
    return "\n".join(lines)


def pp_eqn(eqn: JaxprEqn, namer: _Namer, indent: int) -> str:
    lhs = " ".join(namer.typed(v) for v in eqn.outvars)
    pad = " " * indent
    name = eqn.primitive.name
    keys = sorted(eqn.params)
    has_jaxpr = any(_holds_jaxpr(eqn.params[k]) for k in keys)
    if not keys:
        head = name
    elif has_jaxpr:
        inner = " " * (indent + 2)
        plines = [f"{inner}{k}={_pp_param(eqn.params[k], namer, indent + 2)}" for k in keys]
        head = name + "[\n" + "\n".join(plines) + "\n" + pad + "]"
    else:
        head = name + "[" + " ".join(f"{k}={_pp_param(eqn.params[k], namer, indent)}" for k in keys) + "]"
    args = " ".join(namer.name(v) for v in eqn.invars)
    rhs = f"{head} {args}" if args else head
    return f"{pad}{lhs} = {rhs}" if lhs else f"{pad}{rhs}"


def _holds_jaxpr(p) -> bool:
    if isinstance(p, (Jaxpr, ClosedJaxpr)):
        return True
    return isinstance(p, tuple) and any(isinstance(x, (Jaxpr, ClosedJaxpr)) for x in p)


def _pp_param(p, namer: _Namer, indent: int) -> str:
    if isinstance(p, ClosedJaxpr):
        p = p.jaxpr
    if isinstance(p, Jaxpr):
        return pp_jaxpr(p, namer, indent)
    if isinstance(p, tuple) and p and all(isinstance(x, (Jaxpr, ClosedJaxpr)) for x in p):
        inner = " " * (indent + 2)
        parts = [inner + _pp_param(x, namer, indent + 2) for x in p]
        return "(\n" + "\n".join(parts) + "\n" + " " * indent + ")"
    if isinstance(p, np.dtype):
        return p.name
    if isinstance(p, type) and issubclass(p, np.generic):
        return np.dtype(p).name
    if isinstance(p, tuple):
        return "(" + ", ".join(_pp_param(x, namer, indent) for x in p) + ("," if len(p) == 1 else "") + ")"
    if isinstance(p, Var):
        return namer.name(p)
    return repr(p)


# ----------------------------------------------------------------------------------------------
# Type checking
# ----------------------------------------------------------------------------------------------

class JaxprTypeError(TypeError):
    """A jaxpr is ill-typed (a checker finding, not a user error)."""


def check_jaxpr(jaxpr) -> None:
    """Verify that ``jaxpr`` is well typed; raise ``JaxprTypeError`` otherwise.

    Checks that every variable used (as an operand or inside a type) is bound earlier in
    scope, that no variable is bound twice, that each equation's declared output types
    are what its primitive's abstract evaluation gives, and recurses into nested jaxprs.
    """
    if isinstance(jaxpr, ClosedJaxpr):
        jaxpr = jaxpr.jaxpr
    bound: set = set()
    namer = _Namer()

    def where(v):
        return namer.name(v)

    def check_type(v, ctx):
        for d in v.aval.shape:
            if isinstance(d, int):
                if d < 0:
                    raise JaxprTypeError(f"{ctx}: variable {where(v)} has a negative dimension {d}")
                continue
            if not isinstance(d, Var):
                raise JaxprTypeError(f"{ctx}: variable {where(v)} has a dimension {d!r} that is not a variable")
            if id(d) not in bound:
                raise JaxprTypeError(
                    f"{ctx}: the type of {where(v)}:{v.aval.str_short(where)} uses dimension "
                    f"variable {where(d)}, which is not bound before it")
            if d.aval.shape != () or not np.issubdtype(d.aval.dtype, np.integer):
                raise JaxprTypeError(f"{ctx}: dimension variable {where(d)} is not an integer scalar")

    def bind_var(v, ctx):
        if not isinstance(v, Var):
            raise JaxprTypeError(f"{ctx}: expected a variable, got {v!r}")
        if id(v) in bound:
            raise JaxprTypeError(f"{ctx}: variable {where(v)} is bound twice")
        check_type(v, ctx)
        bound.add(id(v))
        namer.bind(v)

    def read(a, ctx):
        if isinstance(a, Literal):
            return
        if not isinstance(a, Var) or id(a) not in bound:
            raise JaxprTypeError(f"{ctx}: variable {where(a)} is used before it is bound")

    for v in jaxpr.constvars:
        bind_var(v, "constvar")
    for v in jaxpr.invars:
        bind_var(v, "invar")
    for i, eqn in enumerate(jaxpr.eqns):
        ctx = f"equation {i} ({eqn.primitive.name})"
        for a in eqn.invars:
            read(a, ctx)
        for p in eqn.params.values():
            for sub in (p if isinstance(p, tuple) else (p,)):
                if isinstance(sub, (Jaxpr, ClosedJaxpr)):
                    check_jaxpr(sub)
        rule = abstract_eval_rules.get(eqn.primitive)
        if rule is None:
            raise JaxprTypeError(f"{ctx}: no abstract evaluation rule for {eqn.primitive.name}")
        try:
            out = rule(*eqn.invars, **eqn.params)
        except TypeError as e:
            raise JaxprTypeError(f"{ctx}: {e}") from e
        outs = list(out) if eqn.primitive.multiple_results else [out]
        if len(outs) != len(eqn.outvars):
            raise JaxprTypeError(f"{ctx}: declares {len(eqn.outvars)} results, the primitive gives {len(outs)}")
        for k, v in enumerate(eqn.outvars):
            bind_var(v, ctx)
        for k, (v, expected) in enumerate(zip(eqn.outvars, outs)):
            shape = tuple(eqn.outvars[d.val] if isinstance(d, OutDBIdx) else d for d in expected.shape)
            expected = make_aval(shape, expected.dtype)
            if not v.aval.same_type(expected):
                raise JaxprTypeError(
                    f"{ctx}: result {k} is declared {v.aval.str_short(where)} but the primitive "
                    f"gives {expected.str_short(where)}")
    for a in jaxpr.outvars:
        read(a, "outvars")
        if isinstance(a, Var):
            for d in a.aval.shape:
                if isinstance(d, Var) and id(d) not in bound:
                    raise JaxprTypeError(f"outvars: dimension {where(d)} of output {where(a)} is not bound")
