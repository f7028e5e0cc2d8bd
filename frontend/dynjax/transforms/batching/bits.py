"""Batching rules of the bit-level primitives (``dynjax.lax.bits``): the elementwise ones
batch as every elementwise primitive; ``bitcast_convert_type`` only adds or removes a
trailing axis, so the batch axis goes to the front."""
from __future__ import annotations

from ...core.primitive import batching_rules
from ...lax import bits as B
from . import _elementwise, move_axis

for _p in (B.population_count_p, B.clz_p, B.nextafter_p, B.reduce_precision_p):
    batching_rules[_p] = _elementwise(_p)


def _bitcast_rule(size, vals, dims, *, new_dtype):
    (x,), (d,) = vals, dims
    return B.bitcast_convert_type_p.bind(move_axis(x, d, 0), new_dtype=new_dtype), 0


batching_rules[B.bitcast_convert_type_p] = _bitcast_rule
