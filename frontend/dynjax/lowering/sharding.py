"""Lowering of ``sharding_constraint`` (``dynjax.lax.sharding``): ``stablehlo.custom_call
@Sharding`` with XLA's sharding annotation (``mhlo.sharding``). A value of dynamic shape
passes unannotated: only one-device programs have dynamic shapes (a partitioned program is
padded to static shapes first), where a sharding means nothing, and shape refinement does
not see through the custom call."""
from __future__ import annotations

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from ..lax.sharding import hlo_sharding, sharding_constraint_p
from .context import ir_type
from .core import register_lowering


@register_lowering(sharding_constraint_p)
def _sharding_constraint(ctx, eqn, x, *, tiles, devices, replicas):
    if not ir.RankedTensorType(x.type).has_static_shape:
        return x
    op = hlo.CustomCallOp([ir_type(eqn.outvars[0].aval)], [x], "Sharding", has_side_effect=False)
    op.attributes["mhlo.sharding"] = ir.StringAttr.get(hlo_sharding(tiles, devices, replicas))
    return op.results[0]
