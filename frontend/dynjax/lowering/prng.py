"""Lowering of ``threefry2x32`` (``dynjax.lax.prng``): the 20 Threefry rounds written with
StableHLO ``add``, ``shift_left``, ``shift_right_logical``, ``or`` and ``xor`` on ``uint32``
tensors of the counters' shape (``?`` dims stay ``?``; rank-0 operands and the constants are
broadcast to that shape first)."""
from __future__ import annotations

import numpy as np
from jaxlib.mlir.dialects import stablehlo as hlo

from ..lax import prng as _R
from .core import register_lowering

_U32 = np.dtype(np.uint32)


def _threefry2x32_lowering(ctx, eqn, k1, k2, x1, x2):
    out = eqn.outvars[0].aval
    k1, k2, x1, x2 = (ctx.broadcast_like(v, out) for v in (k1, k2, x1, x2))

    def const(c):
        return ctx.broadcast_like(ctx.constant(int(c), _U32), out)

    def rotl(v, r):
        return hlo.OrOp(hlo.ShiftLeftOp(v, const(r)).result,
                        hlo.ShiftRightLogicalOp(v, const(32 - r)).result).result

    def add(a, b):
        return hlo.AddOp(a, b).result

    def xor(a, b):
        return hlo.XorOp(a, b).result

    return list(_R.threefry_rounds(k1, k2, x1, x2, add=add, xor=xor, rotl=rotl, const=const))


register_lowering(_R.threefry2x32_p, _threefry2x32_lowering)
