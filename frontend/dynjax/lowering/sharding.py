"""Lowering of ``sharding_constraint`` (``dynjax.lax.sharding``): in a program partitioned
over several devices, ``sdy.sharding_constraint`` with the layout as a Shardy sharding (the
layout's device grid is a mesh of the module, ``mlir_passes/sdy.py``). Elsewhere the value
passes unannotated: a one-device program (where a sharding means nothing; dynamic shapes
are only found there, a partitioned program being padded to static shapes first)."""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir

from mlir_passes.sdy import ensure_mesh, grid_mesh, sharding_text

from ..lax.sharding import sharding_constraint_p
from .context import ir_type
from .core import register_lowering
from .manual import program_devices


@register_lowering(sharding_constraint_p)
def _sharding_constraint(ctx, eqn, x, *, tiles, devices, replicas):
    if program_devices() is None or not ir.RankedTensorType(x.type).has_static_shape:
        return x
    text, dims = grid_mesh(tiles, np.asarray(devices, np.int64).reshape(tuple(tiles) + (replicas,)))
    sharding = ir.Attribute.parse(sharding_text(ensure_mesh(ctx.module.operation, text), dims))
    op = ir.Operation.create("sdy.sharding_constraint", results=[ir_type(eqn.outvars[0].aval)], operands=[x],
                             attributes={"sharding": sharding})
    return op.results[0]
