"""Lowering of ``optimization_barrier`` (``dynjax.lax.barrier``) to
``stablehlo.optimization_barrier``."""
from __future__ import annotations

from jaxlib.mlir.dialects import stablehlo as hlo

from ..lax.barrier import optimization_barrier_p
from .core import register_lowering


@register_lowering(optimization_barrier_p)
def _optimization_barrier(ctx, eqn, *xs):
    return list(hlo.OptimizationBarrierOp(list(xs)).results)
