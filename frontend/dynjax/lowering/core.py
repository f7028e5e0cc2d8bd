"""Jaxpr -> StableHLO: the driver (``lower_jaxpr``, ``lower_jaxpr_into``) and the rule table.

A lowering rule is registered per primitive::

    @register_lowering(some_p)
    def _some_lowering(ctx, eqn, *args, **params):
        ...
        return value            # or a list of values when some_p.multiple_results

``ctx`` is the ``LoweringContext`` of the current scope, ``eqn`` the ``JaxprEqn`` (its
``outvars[i].aval`` give the result types: ``ctx.ir_type(aval)``), ``args`` the
``ir.Value`` s of ``eqn.invars`` and ``params`` is ``eqn.params``. Rules emit at the current
insertion point. A result whose type differs from the declared one only in static vs
``?`` dims is reconciled automatically with an identity ``stablehlo.convert``.
"""
from __future__ import annotations

import os
import threading
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func
from jaxlib.mlir.dialects import stablehlo as hlo

from ..core.cooperative import checkpoint
from ..core.jaxpr import ClosedJaxpr, Jaxpr
from ..core.primitive import Primitive
from .context import LoweringContext, get_mlir_context, ir_type

lowering_rules: Dict[Primitive, Callable] = {}


class LoweringError(Exception):
    """A jaxpr could not be lowered (missing rule, unsupported case)."""


def register_lowering(prim: Primitive, rule: Optional[Callable] = None):
    """Register ``rule`` for ``prim``; usable as a decorator ``@register_lowering(prim)``."""
    if rule is None:
        def deco(r):
            lowering_rules[prim] = r
            return r
        return deco
    lowering_rules[prim] = rule
    return rule


def lower_jaxpr_into(ctx: LoweringContext, jaxpr, args: Sequence[ir.Value],
                     consts: Optional[Sequence] = None, *, dims_from_shapes: bool = False) -> List[ir.Value]:
    """Lower ``jaxpr``'s equations at the current insertion point and return its outputs.

    ``jaxpr`` is a ``Jaxpr`` or ``ClosedJaxpr``; ``args`` are the values of its invars (e.g.
    a region block's arguments); ``consts`` are values for its constvars: ``ir.Value`` s or
    numpy arrays (embedded as ``stablehlo.constant``). For a ``ClosedJaxpr`` they default to
    its consts. The equations are lowered in a fresh child scope of ``ctx``; the caller
    emits the terminator (``func.return`` / ``stablehlo.return``).

    Shapes inside a region only become static at specialization if the dim values they are
    built from do. A loop-carried block argument is never a constant, so for a loop body
    either pass the *outer* value for a loop-invariant dim invar (values defined above a
    ``stablehlo.while``/``if``/``case`` may be used inside it), or set
    ``dims_from_shapes=True``: every invar that is a dim of a later array invar is then
    bound to ``get_dimension_size`` of that array argument, which folds to a constant once
    the array's type is refined.
    """
    if isinstance(jaxpr, ClosedJaxpr):
        if consts is None:
            consts = jaxpr.consts
        jaxpr = jaxpr.jaxpr
    consts = list(consts or [])
    if len(consts) != len(jaxpr.constvars):
        raise LoweringError(f"lower_jaxpr_into: {len(jaxpr.constvars)} constvars but {len(consts)} consts")
    if len(args) != len(jaxpr.invars):
        raise LoweringError(f"lower_jaxpr_into: {len(jaxpr.invars)} invars but {len(args)} arguments")
    sub = ctx.nested()
    for v, c in zip(jaxpr.constvars, consts):
        if not isinstance(c, ir.Value):
            c = sub.constant(np.asarray(c, dtype=v.aval.dtype), v.aval.dtype)
        sub.bind(v, c)
    for v, a in zip(jaxpr.invars, args):
        sub.bind(v, a)
    if dims_from_shapes:
        invar_ids = {id(v) for v in jaxpr.invars}
        done = set()
        for v, a in zip(jaxpr.invars, args):
            for i, d in enumerate(v.aval.shape):
                if not isinstance(d, int) and id(d) in invar_ids and id(d) not in done:
                    done.add(id(d))
                    sub.bind(d, sub.dim_value(hlo.GetDimensionSizeOp(a, i).result))
    for eqn in jaxpr.eqns:
        checkpoint()   # (background work waits here for the runs being served)
        _lower_eqn(sub, eqn)
    return [sub.read(v) for v in jaxpr.outvars]


def _lower_eqn(ctx: LoweringContext, eqn) -> None:
    rule = lowering_rules.get(eqn.primitive)
    if rule is None:
        raise LoweringError(f"no lowering rule for primitive '{eqn.primitive.name}'")
    args = [ctx.read(a) for a in eqn.invars]
    try:
        out = rule(ctx, eqn, *args, **eqn.params)
    except LoweringError:
        raise
    except Exception as e:
        raise LoweringError(f"lowering {eqn.primitive.name} failed: {type(e).__name__}: {e}\n  in: {eqn}") from e
    outs = list(out) if eqn.primitive.multiple_results else [out]
    if len(outs) != len(eqn.outvars):
        raise LoweringError(f"lowering rule for {eqn.primitive.name} returned {len(outs)} values, "
                            f"expected {len(eqn.outvars)}")
    for v, val in zip(eqn.outvars, outs):
        want = ir_type(v.aval)
        if val.type != want:
            got = ir.RankedTensorType(val.type)
            if got.element_type != want.element_type or got.rank != want.rank:
                raise LoweringError(f"lowering rule for {eqn.primitive.name} produced {val.type}, "
                                    f"expected {want}")
            val = ctx.cast(val, want)
        ctx.bind(v, val)


def lower_jaxpr(closed_jaxpr, name: str = "main", *, context: Optional[ir.Context] = None) -> ir.Module:
    """Lower a (closed) jaxpr to a verified module holding one public ``func.func @name``.

    The function's arguments are the jaxpr's invars in order (implicit dimension inputs are
    the leading ``tensor<i64>`` ones), its results are the outvars; dynamic dims are ``?``.
    Constvars are embedded as ``stablehlo.constant``.
    """
    if isinstance(closed_jaxpr, Jaxpr):
        closed_jaxpr = ClosedJaxpr(closed_jaxpr, []) if not closed_jaxpr.constvars else None
        if closed_jaxpr is None:
            raise LoweringError("lower_jaxpr needs a ClosedJaxpr when the jaxpr has constvars")
    jaxpr = closed_jaxpr.jaxpr
    mctx = context if context is not None else get_mlir_context()
    with _shared_context_lock, mctx, ir.Location.unknown(mctx):
        module = ir.Module.create()
        in_types = [ir_type(v.aval) for v in jaxpr.invars]
        out_types = [ir_type(v.aval) for v in jaxpr.outvars]
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp(name, ir.FunctionType.get(in_types, out_types))
            fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
            block = fn.add_entry_block()
        with ir.InsertionPoint(block):
            ctx = LoweringContext(module)
            outs = lower_jaxpr_into(ctx, closed_jaxpr, list(block.arguments))
            outs = [ctx.cast(o, t) for o, t in zip(outs, out_types)]
            func.ReturnOp(outs)
        if not module.operation.verify():  # pragma: no cover - verify() raises on failure
            raise LoweringError("the lowered module does not verify")
    return module


def module_text(closed_jaxpr, name: str = "main", *, debug_info: bool = False) -> str:
    """The lowered module as MLIR text (what ``f.mlir`` prints)."""
    with _shared_context_lock:
        module = lower_jaxpr(closed_jaxpr, name)
        if debug_info:
            return module.operation.get_asm(enable_debug_info=True)
        return str(module)


# The shared MLIR context is not built for concurrent IR construction from several threads.
_shared_context_lock = threading.RLock()


def _after_fork_in_child() -> None:
    """Another thread of the parent may have been lowering at fork time: a free lock (the
    child lowers in a new context, ``mlir_passes.context._after_fork_in_child``)."""
    global _shared_context_lock
    _shared_context_lock = threading.RLock()


os.register_at_fork(after_in_child=_after_fork_in_child)
