"""Integer scalar arithmetic on sizes in Python ints, as the impl rules compute it.

The host works out sizes at every new size of a padded program: its size checks
(``size_checks``), and the integer equations moved out of the program before and after it
runs (``host_prologue``). The impl rules compute them on numpy scalars, 3-8 us an equation
(an array made for each operand, the primitive bound, the result converted back); the same
arithmetic on Python ints takes 0.2-0.5 us. ``FOLDS`` gives, for the primitives that are
exact in Python, the result where it is the impl rule's (inside the result dtype's range,
no division by zero, no shift beyond the width), and None elsewhere: the caller then runs
the impl rule, which wraps and saturates as XLA does. ``ScalarProgram`` evaluates a jaxpr
of such equations so.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..core.jaxpr import Jaxpr, Literal
from ..core.primitive import impl_rules


def _trunc_div(x: int, y: int) -> Optional[int]:
    if y == 0:
        return None   # (the impl rule's x / 0)
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def _trunc_rem(x: int, y: int) -> Optional[int]:
    if y == 0:
        return None
    r = abs(x) % abs(y)
    return r if x >= 0 else -r


def _convert(v, p) -> Optional[int]:
    kind = np.dtype(p["new_dtype"]).kind
    if kind == "b":
        return int(v[0] != 0)
    return v[0] if kind in "iu" else None   # (the range: checked by the caller)


def _select(v, p) -> Optional[int]:
    which = v[0]
    return v[1 + which] if 0 <= which < len(v) - 1 else None


def _integer_pow(v, p) -> Optional[int]:
    y = p.get("y")
    return v[0] ** y if isinstance(y, int) and 0 <= y <= 64 else None


def _shift_left(v, p) -> Optional[int]:
    return v[0] << v[1] if 0 <= v[1] < 64 else None


#: primitive name -> the result in Python ints of the operands' values (bools as 0 and 1)
#: and the params, before the range check; None where only the impl rule knows
FOLDS: Dict[str, Callable[[List[int], Dict[str, Any]], Optional[int]]] = {
    "add": lambda v, p: v[0] + v[1],
    "sub": lambda v, p: v[0] - v[1],
    "mul": lambda v, p: v[0] * v[1],
    "max": lambda v, p: max(v[0], v[1]),
    "min": lambda v, p: min(v[0], v[1]),
    "neg": lambda v, p: -v[0],
    "abs": lambda v, p: abs(v[0]),
    "sign": lambda v, p: (v[0] > 0) - (v[0] < 0),
    "div": lambda v, p: _trunc_div(v[0], v[1]),
    "rem": lambda v, p: _trunc_rem(v[0], v[1]),
    "eq": lambda v, p: int(v[0] == v[1]),
    "ne": lambda v, p: int(v[0] != v[1]),
    "lt": lambda v, p: int(v[0] < v[1]),
    "le": lambda v, p: int(v[0] <= v[1]),
    "gt": lambda v, p: int(v[0] > v[1]),
    "ge": lambda v, p: int(v[0] >= v[1]),
    "and": lambda v, p: v[0] & v[1],
    "or": lambda v, p: v[0] | v[1],
    "xor": lambda v, p: v[0] ^ v[1],
    "convert_element_type": _convert,
    "select_n": _select,
    "integer_pow": _integer_pow,
    "shift_left": _shift_left,
}

INT64 = (-(1 << 63), (1 << 63) - 1)


def dtype_range(dtype) -> Optional[Tuple[int, int]]:
    """The values an integer or bool dtype holds, or None for another dtype."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return (0, 1)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return (int(info.min), int(info.max))
    return None


def fold(name: str, values: List[int], params: Dict[str, Any], bounds: Tuple[int, int]) -> Optional[int]:
    """The impl rule's result of primitive ``name`` on these integer values as a Python int,
    where it is exact within ``bounds`` (the result dtype's range); else None."""
    rule = FOLDS.get(name)
    if rule is None:
        return None
    out = rule(values, params)
    return out if out is not None and bounds[0] <= out <= bounds[1] else None


class ScalarProgram:
    """A jaxpr of integer and bool scalar equations evaluated on Python ints: each equation
    by ``fold`` where it is exact, else by its impl rule on numpy scalars of its operands'
    dtypes (what ``eval_jaxpr`` would do). ``__call__(constants, inputs)`` returns the
    outputs' values as Python ints (bools as 0 and 1)."""

    def __init__(self, jaxpr: Jaxpr):
        self.jaxpr = jaxpr
        self.steps = []
        for eqn in jaxpr.eqns:
            bounds = dtype_range(eqn.outvars[0].aval.dtype) if len(eqn.outvars) == 1 else None
            name = eqn.primitive.name if bounds is not None and eqn.primitive.name in FOLDS else None
            operands = [(True, _literal(a)) if isinstance(a, Literal) else (False, id(a)) for a in eqn.invars]
            self.steps.append((eqn, name, bounds, operands))

    def __call__(self, consts: Sequence[Any], inputs: Sequence[Any]) -> List[int]:
        jaxpr = self.jaxpr
        env: Dict[int, Any] = {}
        for v, c in zip(jaxpr.constvars, consts):
            env[id(v)] = c
        for v, x in zip(jaxpr.invars, inputs):
            env[id(v)] = int(x)
        for eqn, name, bounds, operands in self.steps:
            values = [x if literal else env[x] for literal, x in operands]
            out = None
            if name is not None and all(type(x) is int for x in values):
                out = fold(name, values, eqn.params, bounds)
            if out is None:   # the impl rule, on numpy scalars of the operands' dtypes
                args = [np.asarray(x, a.aval.dtype) if type(x) is int else x
                        for x, a in zip(values, eqn.invars)]
                results = impl_rules[eqn.primitive](*args, **eqn.params)
                results = results if eqn.primitive.multiple_results else [results]
                for v, r in zip(eqn.outvars, results):
                    r = np.asarray(r)
                    env[id(v)] = int(r) if r.shape == () and r.dtype.kind in "iub" else r
                continue
            env[id(eqn.outvars[0])] = out
        return [_literal(a) if isinstance(a, Literal) else int(env[id(a)]) for a in jaxpr.outvars]


def _literal(a: Literal):
    val = np.asarray(a.val)
    return int(val) if val.shape == () and val.dtype.kind in "iub" else val
