"""``closure_convert`` and ``custom_gradient`` (JAX's ``jax.closure_convert`` and
``jax.custom_gradient``).

A custom rule cannot see the values a function closes over, so differentiating with
respect to them would be wrong. ``closure_convert(fun, *example_args)`` traces ``fun`` on
arguments of the examples' types and *hoists* the traced floating-point values it closes
over (the ones that may be differentiated): it returns ``(converted, hoisted)`` where
``converted(*args, *hoisted)`` computes ``fun(*args)``. Passing ``hoisted`` as arguments
across a ``custom_vjp`` boundary lets its rules account for them.

``custom_gradient(fun)``: ``fun(*args)`` returns ``(value, vjp_fn)``; the result is a
``custom_vjp`` function whose ``fwd`` calls ``fun`` and closure-converts ``vjp_fn`` (its
hoisted values are the residuals) and whose ``bwd`` calls it on the output's cotangent.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, List, Tuple

from ...core.avals import is_inexact_dtype
from ...core.expansion import trace_nested
from ...core.interpret import eval_jaxpr
from ...core.pytree import register_pytree_node, tree_flatten, tree_unflatten
from ...core.trace import Tracer, leaf_avals, typeof
from .vjp import custom_vjp

__all__ = ["closure_convert", "custom_gradient"]


def _array_leaves(who: str, tree) -> Tuple[List[Any], Any]:
    leaves, treedef = tree_flatten(tree)
    leaf_avals(leaves, lambda k, x: (f"{who}: example_args must be arrays, scalars or pytrees of them, "
                                     f"got a {type(x).__name__}"))
    return leaves, treedef


def closure_convert(fun: Callable, *example_args) -> Tuple[Callable, List[Any]]:
    """``fun`` with the traced floating-point values it closes over made explicit.

    Returns ``(converted, hoisted)``: ``converted(*args, *hoisted)`` equals ``fun(*args)``
    for arguments of the types of ``example_args`` (``fun`` is traced once, on those
    types). ``hoisted`` lists the closed-over values that are tracers of an inexact dtype
    (values that a transformation such as ``grad`` may be differentiating); other
    closed-over values stay inside ``converted``. Outside any transformation nothing is
    hoisted."""
    if not callable(fun):
        raise TypeError(f"closure_convert: fun must be a function, got {type(fun).__name__}")
    leaves, in_tree = _array_leaves("closure_convert", example_args)

    def flat(*xs):
        return fun(*tree_unflatten(in_tree, list(xs)))
    prog = trace_nested(flat, tuple((typeof(x), True) for x in leaves), tree_flatten, expand=False)
    consts = list(prog.consts)
    hoist = [i for i, c in enumerate(consts) if isinstance(c, Tracer) and is_inexact_dtype(typeof(c).dtype)]
    jaxpr, out_tree, nargs = prog.jaxpr, prog.out_tree, len(example_args)

    def converted(*args):
        if len(args) != nargs + len(hoist):
            raise TypeError(f"closure_convert: the converted function takes {nargs} arguments and "
                            f"{len(hoist)} hoisted values, got {len(args)} arguments")
        arg_leaves, tree = tree_flatten(tuple(args[:nargs]))
        if tree != in_tree:
            raise TypeError(f"closure_convert: the arguments have the structure {tree}, but the "
                            f"function was converted for {in_tree}")
        values = list(consts)
        for i, v in zip(hoist, args[nargs:]):
            values[i] = v
        return tree_unflatten(out_tree, eval_jaxpr(jaxpr, [], *values, *arg_leaves))
    converted.__name__ = getattr(fun, "__name__", "converted")
    return converted, [consts[i] for i in hoist]


class _Opaque:
    """A residual that is not an array (the converted ``vjp_fn``): a pytree node with no
    leaves, so it travels in the residuals' structure."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, _Opaque) and other.value is self.value

    def __hash__(self):
        return id(self.value)


register_pytree_node(_Opaque, lambda o: ((), o.value), lambda value, _: _Opaque(value))


def custom_gradient(fun: Callable) -> custom_vjp:
    """A function with a custom gradient, in the style of ``tf.custom_gradient``:
    ``fun(*args)`` returns ``(value, vjp_fn)`` and ``vjp_fn(ct)`` returns the cotangents of
    the positional arguments (a tuple with one per argument; a single value is accepted
    for a one-argument function). ``vjp_fn`` may close over values computed by ``fun``.
    Only reverse mode uses it (``grad``, ``vjp``, ``jacrev``)."""
    if not callable(fun):
        raise TypeError(f"custom_gradient: expected a function, got {type(fun).__name__}")

    def primal(*args):
        return _split_result(fun(*args))[0]
    functools.update_wrapper(primal, fun)
    wrapped = custom_vjp(primal)

    def fwd(*args):
        value, vjp_fn = _split_result(fun(*args))
        converted, hoisted = closure_convert(vjp_fn, value)
        return value, (_Opaque((converted, len(args))), hoisted)

    def bwd(res, ct):
        opaque, hoisted = res
        converted, nargs = opaque.value
        cts = converted(ct, *hoisted)
        if nargs == 1 and not isinstance(cts, (tuple, list)):
            cts = (cts,)
        return tuple(cts) if isinstance(cts, list) else cts
    wrapped.defvjp(fwd, bwd)
    return wrapped


def _split_result(res):
    if not isinstance(res, (tuple, list)) or len(res) != 2 or not callable(res[1]):
        raise TypeError("custom_gradient: the function must return a pair (value, vjp_fn) with "
                        f"vjp_fn a function, got {type(res).__name__}")
    return res
