"""jvp rule of ``threefry2x32`` (``dynjax.lax.prng``): its results are integers (random bits),
so their tangents are zero (float0), whatever the operands' tangents; random values built from
them have zero derivative with respect to the key."""
from __future__ import annotations

from ...core.primitive import jvp_rules
from ...lax import prng as _R
from . import _zero_tangents

jvp_rules[_R.threefry2x32_p] = _zero_tangents(_R.threefry2x32_p)
