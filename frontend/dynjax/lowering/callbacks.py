"""Lowering of ``pure_callback`` (``dynjax.lax.callbacks``): a placeholder, never compiled.

The execution planner runs a ``pure_callback`` on the host between compiled segments
(``core.primitive.host_primitives``), so no executable ever contains one. This rule only
lets ``f.mlir`` show a whole program that calls back: the call appears as
``stablehlo.custom_call @dynjax_pure_callback`` with the declared result types."""
from __future__ import annotations

import numpy as np
from jaxlib.mlir.dialects import stablehlo as hlo

from ..lax.callbacks import pure_callback_p
from .context import tensor_type
from .core import register_lowering


@register_lowering(pure_callback_p)
def _pure_callback(ctx, eqn, *operands, callback, num_args, result_shapes, result_dtypes, vmap_method, name):
    types = [tensor_type([d if isinstance(d, (int, np.integer)) else None for d in v.aval.shape], v.aval.dtype)
             for v in eqn.outvars]
    op = hlo.CustomCallOp(types, list(operands), "dynjax_pure_callback", has_side_effect=False)
    return list(op.results)
