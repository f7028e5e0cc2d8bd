"""Lowering of the bit-level primitives (``dynjax.lax.bits``) to StableHLO / CHLO ops."""
from __future__ import annotations

from jaxlib.mlir.dialects import chlo
from jaxlib.mlir.dialects import stablehlo as hlo

from ..lax import bits as B
from .core import register_lowering
from .rules import _binary


@register_lowering(B.population_count_p)
def _population_count(ctx, eqn, x):
    return hlo.PopulationCountOp(x).result


@register_lowering(B.clz_p)
def _clz(ctx, eqn, x):
    return hlo.ClzOp(x).result


_binary(B.nextafter_p, lambda ctx, eqn, x, y: chlo.NextAfterOp(x, y).result)


@register_lowering(B.reduce_precision_p)
def _reduce_precision(ctx, eqn, x, *, exponent_bits, mantissa_bits):
    return hlo.ReducePrecisionOp(x, exponent_bits, mantissa_bits).result


@register_lowering(B.bitcast_convert_type_p)
def _bitcast_convert_type(ctx, eqn, x, *, new_dtype):
    return hlo.BitcastConvertOp(ctx.ir_type(eqn.outvars[0].aval), x).result
