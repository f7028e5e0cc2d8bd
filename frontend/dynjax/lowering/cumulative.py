"""Lowering of the ``cummax`` / ``cummin`` primitives (``dynjax.lax.cumulative``).

They reuse the scans of ``lowering/reductions.py`` (``_cumsum_value``): on a static axis a
``stablehlo.reduce_window`` over the whole axis padded low, on a dynamic axis the two-level
blocked scan with a doubling loop over the block totals, with ``stablehlo.maximum`` /
``stablehlo.minimum`` as the combining operation. Every padding holds the operation's identity:
``-inf`` / ``+inf`` for floats, the dtype's minimum / maximum for integers.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir.dialects import stablehlo as hlo

from ..core.avals import is_float_dtype
from ..lax.cumulative import cummax_p, cummin_p
from . import reductions
from .core import register_lowering


def _lowest(dtype):
    dtype = np.dtype(dtype)
    return -np.inf if is_float_dtype(dtype) else np.iinfo(dtype).min


def _highest(dtype):
    dtype = np.dtype(dtype)
    return np.inf if is_float_dtype(dtype) else np.iinfo(dtype).max


# the combining operations of the scans, with their identities
reductions._SCAN_OPS.setdefault("max", (hlo.MaxOp, _lowest))
reductions._SCAN_OPS.setdefault("min", (hlo.MinOp, _highest))


def _extremum(op):
    def rule(ctx, eqn, x, *, axis, reverse=False):
        return reductions._cumsum_value(ctx, x, eqn.invars[0].aval, axis, reverse, op)
    return rule


register_lowering(cummax_p)(_extremum("max"))
register_lowering(cummin_p)(_extremum("min"))
