"""``dynjax.extend``: the public API for user-defined primitives.

A primitive is a name; what it means is one rule per interpretation, registered with the
``def_*`` functions below (each can also be used as a decorator, ``@def_impl(prim)``)::

    from dynjax import extend as ext

    multiply_add_p = ext.Primitive("multiply_add")

    @ext.def_impl(multiply_add_p)            # eager evaluation, on numpy arrays
    def _impl(x, y, z):
        return np.add(np.multiply(x, y), z)

    @ext.def_abstract_eval(multiply_add_p)   # tracing: the result's type
    def _abstract(x, y, z):
        return ext.make_aval(x.aval.shape, x.aval.dtype)

    def multiply_add(x, y, z):
        return multiply_add_p.bind(x, y, z)

Then ``def_lowering`` (``qjit``), ``def_jvp`` (``jvp``, and the first half of ``grad``),
``def_transpose`` (the second half of ``grad``: reverse mode transposes the linear part) and
``def_batching`` (``vmap``). See ``doc/extending.md`` for the full walk-through.

**Dynamic shapes.** An abstract-evaluation rule receives the operands themselves (tracers
while tracing, jaxpr variables while a jaxpr is type-checked), each with an ``.aval`` whose
``shape`` may hold *dimension objects* instead of ints. Put such a dim into a result type as
it is -- ``make_aval((x.aval.shape[0], 3), dtype)`` -- and the result shares the operand's
dynamic size. An integer scalar operand that stands for a size becomes a dim with
``as_dim(n)``. Compare dims with ``same_dim(d1, d2)`` (equal ints, or provably equal
sizes), never with ``==``. Never compute with dims inside a rule (``d + 1``): a new size is a new
operand, computed by the caller with ``dynjax.numpy`` / ``dynjax.lax`` and bound along.
"""
from __future__ import annotations

from typing import Callable, Optional

from .core.avals import ShapedArray, make_aval as _make_aval, same_dim
from .core.primitive import (Primitive, abstract_eval_rules, as_dim, batching_rules, impl_rules,
                             jvp_rules, transpose_rules)
from .lowering.core import register_lowering
from .transforms.jvp import Zero, instantiate
from .transforms.transpose import UndefinedPrimal, is_undefined

__all__ = ["Primitive", "ShapedArray", "make_aval", "as_dim", "same_dim", "def_impl", "def_abstract_eval",
           "def_lowering", "def_jvp", "def_transpose", "def_batching", "UndefinedPrimal",
           "is_undefined", "Zero", "instantiate", "zeros_like_aval", "batch_to_front", "def_cost"]


def _register(table_name: str, table, prim, fn):
    if not isinstance(prim, Primitive):
        raise TypeError(f"{table_name}: the first argument must be a dynjax.extend.Primitive, got "
                        f"{type(prim).__name__}")

    def register(f):
        if not callable(f):
            raise TypeError(f"{table_name}: the rule must be callable, got {type(f).__name__}")
        table[prim] = f
        return f
    return register if fn is None else register(fn)


def make_aval(shape, dtype, weak_type: bool = False) -> ShapedArray:
    """The abstract value (type) ``dtype[shape]`` that abstract-evaluation rules return.

    Each entry of ``shape`` is an int or a dim taken from an operand's type, e.g.
    ``x.aval.shape[0]`` (then the result has the same, possibly dynamic, size as ``x``'s
    first axis), or ``as_dim(n)`` for an integer scalar operand ``n`` that is a size.
    """
    return _make_aval(tuple(shape), dtype, weak_type)


def def_impl(prim: Primitive, fn: Optional[Callable] = None):
    """Register the eager implementation: ``fn(*operands, **params) -> result``.

    Operands are numpy arrays (or numpy / Python scalars) and ``params`` the keyword
    arguments given to ``prim.bind``. Return a numpy array (a list of them when the
    primitive was created with ``multiple_results=True``). This is also the reference
    semantics the other rules must reproduce. Returns ``fn`` (or a decorator without it).
    """
    return _register("def_impl", impl_rules, prim, fn)


def def_abstract_eval(prim: Primitive, fn: Optional[Callable] = None):
    """Register abstract evaluation: ``fn(*operands, **params) -> aval`` (a list of avals
    with ``multiple_results``), used while tracing (``qjit``, ``make_jaxpr``, ``grad``) and
    by ``check_jaxpr``.

    The operands are *not* arrays: each has an ``.aval`` (``.shape``, ``.dtype``). Build the
    result with ``make_aval(shape, dtype)``; a dim may be an operand's dim
    (``x.aval.shape[0]``) -- that is how dynamic sizes flow through a primitive -- or
    ``as_dim(n)`` for a size operand ``n``. Raise ``TypeError`` for operands the primitive
    does not accept: the message reaches the user at the line that called it.
    """
    return _register("def_abstract_eval", abstract_eval_rules, prim, fn)


def def_lowering(prim: Primitive, fn: Optional[Callable] = None):
    """Register the StableHLO lowering used by ``qjit``: ``fn(ctx, eqn, *args, **params)``.

    * ``args`` are the ``jaxlib.mlir.ir.Value`` s of the operands (ranked tensors; a dynamic
      dim is ``?``), ``params`` the equation's params;
    * ``eqn.invars`` / ``eqn.outvars`` are the operand and result variables; their
      ``.aval`` give the types, and ``ctx.ir_type(eqn.outvars[0].aval)`` the MLIR result type;
    * ``ctx`` (a ``LoweringContext``) has helpers that handle dynamic dims:
      ``ctx.constant(value, dtype)``, ``ctx.broadcast(value, dims, broadcast_dimensions)``,
      ``ctx.full(value, dtype, dims)``, ``ctx.reshape``, ``ctx.iota``, ``ctx.convert``,
      ``ctx.dim_value(d)`` (a ``tensor<i64>`` holding dim ``d``), where ``dims`` may hold
      the dims of ``eqn.outvars[k].aval.shape``.

    Emit ops with ``jaxlib.mlir.dialects.stablehlo`` at the current insertion point and return
    the result value (a list with ``multiple_results``). Use the ``dynamic_*`` forms (or the
    ``ctx`` helpers) whenever a dim is dynamic; every module is specialized to static shapes
    before XLA compiles it.
    """
    return _register("def_lowering", _LoweringTable(), prim, fn)


class _LoweringTable:
    """Routes ``table[prim] = rule`` to ``register_lowering`` (which owns the lowering table)."""

    def __setitem__(self, prim, rule):
        register_lowering(prim, rule)


def def_jvp(prim: Primitive, fn: Optional[Callable] = None):
    """Register forward-mode differentiation:
    ``fn(primals, tangents, **params) -> (primal_out, tangent_out)``.

    ``primals`` and ``tangents`` are lists, one entry per operand; a tangent is an array or
    a symbolic ``Zero(aval)`` (use ``instantiate(t)`` to get an array of zeros, or skip its
    term). Compute with ``dynjax.numpy`` / ``dynjax.lax`` / ``Primitive.bind`` -- the rule runs
    eagerly and while tracing. ``tangent_out`` must have ``primal_out``'s type (or be a
    ``Zero``); lists of both with ``multiple_results``.

    For ``grad``, every operation the rule applies to a tangent must be *linear* in it and
    have a transpose rule (``def_transpose``); the usual way is to express the tangent with
    the primitive itself (linear in some operands) or with built-in linear operations.
    """
    return _register("def_jvp", jvp_rules, prim, fn)


def def_transpose(prim: Primitive, fn: Optional[Callable] = None):
    """Register the transpose of a primitive that is linear in some operands (reverse mode):
    ``fn(ct, *operands, **params) -> [cotangent per operand]``.

    A *linear* operand is an ``UndefinedPrimal`` (test with ``is_undefined(x)``; ``x.aval``
    is its type, whose dims are usable values); the others are their values. ``ct`` is the
    cotangent of the result (a list with ``multiple_results``; a zero cotangent may be
    ``None``). Return one entry per operand: the cotangent of each linear operand (with its
    type), ``None`` for non-linear operands or zero cotangents.
    """
    return _register("def_transpose", transpose_rules, prim, fn)


def def_batching(prim: Primitive, fn: Optional[Callable] = None):
    """Register a batching rule (``vmap``): ``fn(size, vals, dims, **params) -> (out, out_dim)``
    (lists of outputs and of dims for a primitive with several results).

    ``vals`` are the operands as batches: ``dims[i]`` is the position of the batch axis in
    ``vals[i]``, or None when the operand is the same for every member. ``size`` is the batch
    size (an int, or a traced size when the batch axis is dynamic). Return the result with
    its batch axis at ``out_dim``. ``batch_to_front(x, d, size)`` moves (or, for None,
    broadcasts) the batch axis to position 0, which is usually the first step of a rule.
    """
    return _register("def_batching", batching_rules, prim, fn)


def batch_to_front(x, d, size):
    """``x`` with its batch axis (at ``d``) moved first; an unbatched value (``d`` None) is
    broadcast to ``size`` members. For batching rules."""
    from .transforms.batching import to_front
    return to_front(x, d, size)


def zeros_like_aval(aval: ShapedArray):
    """An array of zeros of type ``aval`` in the current interpreter (a numpy array eagerly,
    traced with the aval's dynamic dims under ``qjit``): handy in transpose rules for
    ``UndefinedPrimal.aval``."""
    from .transforms.jvp import zeros_from_aval
    return zeros_from_aval(aval)


def def_cost(prim: Primitive, fn: Optional[Callable] = None):
    """Register a cost rule (``dynjax.cost_analysis``): ``fn(eqn, sizes) -> Cost`` with the
    FLOPs and transcendentals of one application (bytes are added from the operand and
    result types). ``sizes.elements(aval)`` is the element count of a type as a formula in
    the dynamic dims; build the result with ``dynjax.cost_model.Cost``."""
    from .cost_model import cost_rules
    return _register("def_cost", cost_rules, prim, fn)
