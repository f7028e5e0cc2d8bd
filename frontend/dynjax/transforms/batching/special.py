"""Batching rules of the special-function primitives (``dynjax.lax.special``): they are
elementwise (a rank-0 operand broadcasts), so they batch as the other elementwise primitives."""
from __future__ import annotations

from ...core.primitive import batching_rules
from ...lax import special as _S
from . import _elementwise

for _p in _S.UNARY + _S.BINARY + _S.TERNARY:
    batching_rules[_p] = _elementwise(_p)
