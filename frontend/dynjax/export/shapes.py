"""Argument specs of ``export``: symbolic dimension names and what they mean for tracing.

``symbolic_shape("n, 3")`` gives ``(n, 3)``, a tuple whose ``n`` is a ``SymbolicDim``; put
in a ``ShapeDtypeStruct`` it makes that axis dynamic. The same name in several places (in
one shape or across arguments) is one dimension: a call whose sizes there differ is a
ValueError. ``None`` in a shape is a fresh dimension of its own. ``arg_leaf_specs`` turns the
arguments of an ``export`` call into what the tracer takes: the leaves (a spec's dynamic
dims set to ``None``) and, per leaf, ``{axis: name}`` (an ``int`` name is a fresh dim).
"""
from __future__ import annotations

import itertools
import re
from typing import Any, Dict, List, Tuple

from ..tracing import ShapeDtypeStruct

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class SymbolicDim:
    """A named dynamic dimension of an exported program's argument (``n`` in ``f64[n,3]``)."""
    __slots__ = ("name",)

    def __init__(self, name: str):
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"a symbolic dimension is named by an identifier, got {name!r}")
        self.name = name

    def __eq__(self, other):
        return isinstance(other, SymbolicDim) and other.name == self.name

    def __hash__(self):
        return hash(("SymbolicDim", self.name))

    def __repr__(self):
        return self.name

    __str__ = __repr__


def symbolic_shape(shape_spec: str) -> Tuple[Any, ...]:
    """The shape ``shape_spec`` writes: comma-separated sizes, each an integer or a dimension
    name (``"n, 3"``, ``"(batch, n, n)"``, ``""`` for a scalar). Names are dynamic dims; the
    same name is the same dim wherever it appears in one export."""
    if not isinstance(shape_spec, str):
        raise TypeError(f"symbolic_shape: expected a string like 'n, 3', got {type(shape_spec).__name__}")
    text = shape_spec.strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    if not text:
        return ()
    parts = [p.strip() for p in text.split(",")]
    if parts and parts[-1] == "":   # "(n,)"
        parts = parts[:-1]
    out = []
    for p in parts:
        if re.fullmatch(r"\d+", p):
            out.append(int(p))
        elif _NAME.match(p):
            out.append(SymbolicDim(p))
        else:
            raise ValueError(f"symbolic_shape({shape_spec!r}): {p!r} is neither a size nor a dimension name "
                             "(dynjax's exported inputs take named dims; sizes computed from them, such "
                             "as 2*n, are results of the program)")
    return tuple(out)


def arg_leaf_specs(leaves: List[Any], base_specs: List[Dict[int, Any]], leaf_where: List[str]):
    """``(trace_leaves, leaf_specs)`` for the flat argument leaves of an export: a
    ``ShapeDtypeStruct`` leaf's ``None`` and ``SymbolicDim`` sizes become dynamic axes
    (``None`` a fresh one), added to ``base_specs`` (the function's own ``abstracted_axes``,
    one ``{axis: name}`` per leaf)."""
    fresh = itertools.count()
    out_leaves, out_specs = [], []
    for leaf, base, where in zip(leaves, base_specs, leaf_where):
        spec = dict(base or {})
        if isinstance(leaf, ShapeDtypeStruct):
            shape = []
            for ax, d in enumerate(leaf.shape):
                if isinstance(d, SymbolicDim):
                    spec[ax] = d.name
                    shape.append(None)
                elif d is None:
                    spec.setdefault(ax, -1 - next(fresh))   # an int name: a dim of its own
                    shape.append(None)
                elif isinstance(d, int):
                    shape.append(d)
                else:
                    raise TypeError(f"{where}: size {d!r} of ShapeDtypeStruct{tuple(leaf.shape)} is not an int, "
                                    "None or a symbolic_shape dimension")
            leaf = ShapeDtypeStruct(tuple(shape), leaf.dtype, weak_type=leaf.weak_type)
        out_leaves.append(leaf)
        out_specs.append(spec)
    return out_leaves, out_specs
