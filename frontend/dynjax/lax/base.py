"""Helpers shared by the primitive definitions: registration and shape checking.

Shape checks compare dims with ``same_dim``: equal ints, or dims whose symbolic
expressions are provably equal. Dims that are not known to be equal are a trace-time
``TypeError`` whose message names both expressions.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..core.avals import ShapedArray, aval_of_value, make_aval, same_dim
from ..core.primitive import Primitive, abstract_eval_rules, as_dim, impl_rules


def define(name: str, impl: Callable, abstract_eval: Callable, multiple_results: bool = False) -> Primitive:
    """Create a primitive and register its eager impl and abstract evaluation rules."""
    p = Primitive(name, multiple_results)
    impl_rules[p] = impl
    abstract_eval_rules[p] = abstract_eval
    return p


def fmt_shape(aval) -> str:
    return aval.str_short(_dim_str)


def _dim_str(d) -> str:
    a = getattr(d, "aval", None)
    if a is not None:
        return "?" if not hasattr(d, "literal") or d.literal is None else str(d.literal.val)
    return str(d)


def shapes_equal(s1, s2) -> bool:
    return len(s1) == len(s2) and all(same_dim(a, b) for a, b in zip(s1, s2))


def check_same_shapes(name: str, *avals) -> None:
    first = avals[0]
    for a in avals[1:]:
        if not shapes_equal(first.shape, a.shape):
            raise TypeError(f"{name}: incompatible shapes {describe_shapes(*avals)}; "
                            + dynamic_hint(first.shape, a.shape))


def dynamic_hint(s1, s2) -> str:
    pairs = [(a, b) for a, b in zip(s1, s2) if not same_dim(a, b)]
    if any(not isinstance(d, int) for pair in pairs for d in pair):
        a, b = pairs[0]
        return (f"the sizes {dim_str(a)} and {dim_str(b)} are not known to be equal (dynjax "
                "compares sizes by their symbolic expressions; give the axes the same name in "
                "abstracted_axes, or assert it with jnp.reshape(y, x.shape), checked at run time)")
    return "the shapes must match"


def dim_str(d) -> str:
    """A dim for messages: an int, or its symbolic expression (``n - 1``)."""
    if isinstance(d, int):
        return str(d)
    lit = getattr(d, "literal", None)
    if lit is not None:
        return str(lit.val)
    sym = getattr(d, "sym", None)
    return str(sym) if sym is not None else "?"


def describe_shapes(*avals) -> str:
    """Shapes for error messages, dynamic dims by their expressions: ``float64[n - 1]``."""
    return " and ".join(f"{a.dtype.name}[{','.join(dim_str(d) for d in a.shape)}]" for a in avals)


def check_dtypes_equal(name: str, *avals) -> None:
    for a in avals[1:]:
        if a.dtype != avals[0].dtype:
            raise TypeError(f"{name}: operands must have the same dtype, got "
                            + ", ".join(x.dtype.name for x in avals))


def dims_from_operands(static_shape, dyn_operands):
    """Fill the ``None`` entries of a static shape param with the dynamic dim operands."""
    dyn = iter(dyn_operands)
    shape = tuple(as_dim(next(dyn)) if d is None else d for d in static_shape)
    rest = list(dyn)
    if rest:
        raise TypeError(f"got {len(rest)} more dynamic dimension operands than None entries in {static_shape}")
    return shape


def check_dim_operands(name: str, dyn_operands) -> None:
    for d in dyn_operands:
        a = d.aval if hasattr(d, "aval") else None
        if a is not None and (a.shape != () or not np.issubdtype(a.dtype, np.integer)):
            raise TypeError(f"{name}: a dimension must be an integer scalar, got {a.str_short()}")


def concrete_shape(static_shape, dyn_operands):
    """The concrete shape for impl rules (dyn operands are numpy integers)."""
    dyn = iter(dyn_operands)
    shape = tuple(int(next(dyn)) if d is None else int(d) for d in static_shape)
    for d in shape:
        if d < 0:
            raise ValueError(f"negative dimension size {d} in shape {shape}")
    return shape


def aval(x) -> ShapedArray:
    """The aval of an operand: tracers and jaxpr atoms carry one; concrete values get one."""
    a = getattr(x, "aval", None)
    if a is not None:
        return a
    return aval_of_value(x)


def result_aval(shape, dtype, weak_type: bool = False) -> ShapedArray:
    return make_aval(shape, dtype, weak_type)
