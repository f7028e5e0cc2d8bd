"""``dynjax.lowering``: jaxpr -> StableHLO with ``?`` dimensions (built with ``jaxlib.mlir``).

Public API:

* ``lower_jaxpr(closed_jaxpr, name="main") -> ir.Module`` and ``module_text(...) -> str``;
* ``lower_jaxpr_into(ctx, jaxpr, args, consts=None) -> [ir.Value]`` to lower a (nested)
  jaxpr at the current insertion point, e.g. inside a ``stablehlo.while`` body block;
* ``LoweringContext`` (the per-scope variable environment plus helpers: ``ir_type``,
  ``read``, ``constant``, ``dim_value``, ``shape_tensor``, ``broadcast``, ``reshape``,
  ``iota``, ``convert``, ``cast``, ``compare``, ``nested``);
* ``lowering_rules`` (primitive -> rule) and ``register_lowering(prim)``; a rule is
  ``rule(ctx, eqn, *args, **params) -> ir.Value | [ir.Value]``.
"""
from .context import (LoweringContext, compare_type, elem_type, get_mlir_context, ir_type,  # noqa: F401
                      tensor_type)
from .core import (LoweringError, lower_jaxpr, lower_jaxpr_into, lowering_rules,  # noqa: F401
                   module_text, register_lowering)
from . import rules  # noqa: F401  (registers the rules of dynjax.lax.primitives)
from . import reductions  # noqa: F401  (registers the reductions' rules)
from .reductions import reduce  # noqa: F401
from . import control_flow  # noqa: F401  (registers for_loop / while_loop / cond / scan)
from . import linalg  # noqa: F401  (registers the LAPACK lowerings of dynjax.lax.linalg)
from . import special  # noqa: F401  (registers the lowerings of dynjax.lax.special)
from . import convolution  # noqa: E402,F401  (registers the lowering of lax.conv_general_dilated)
from . import callbacks as _callbacks_lowering  # noqa: E402,F401  (the pure_callback placeholder)
from . import cumulative as _cumulative_lowering  # noqa: E402,F401  (cummax / cummin scans)
from . import fft as _fft_lowering  # noqa: E402,F401  (registers the stablehlo.fft lowering)
from . import bits  # noqa: F401  (registers the lowerings of dynjax.lax.bits)
from . import prng  # noqa: F401  (registers the threefry2x32 lowering)
from . import barrier  # noqa: F401  (registers the optimization_barrier lowering)
from . import collectives as _collectives  # noqa: F401  (psum, ...: in a shard_map's per-device body)
from . import reduce_window as _reduce_window_lowering  # noqa: E402,F401  (stablehlo.reduce_window)
from . import sharding as _sharding  # noqa: F401  (registers the sharding_constraint lowering)
