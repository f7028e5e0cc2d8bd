"""Batching rule of ``threefry2x32`` (``dynjax.lax.prng``): elementwise with rank-0 operands
broadcasting, like the other elementwise primitives (a batch of keys against unbatched
counters gives a batch of counter arrays), with two results."""
from __future__ import annotations

from ...core.primitive import batching_rules
from ...lax import prng as _R
from . import _elementwise

_one = _elementwise(_R.threefry2x32_p)


def _threefry_rule(size, vals, dims, **params):
    outs, d = _one(size, vals, dims, **params)
    return list(outs), [d] * len(outs)


batching_rules[_R.threefry2x32_p] = _threefry_rule
