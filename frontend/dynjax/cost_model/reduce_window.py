"""Cost rule of ``reduce_window`` (``dynjax.lax.reduce_window``): one combining operation per
window element of every result (``prod(window_dimensions)`` per result element)."""
from __future__ import annotations

import numpy as np

from ..core.symbolic import Expr
from ..lax.reduce_window import reduce_window_p
from . import Cost, cost_rules


def _cost(eqn, sz):
    window = int(np.prod(eqn.params["window_dimensions"], dtype=np.int64))
    z = Expr.const(0)
    return Cost(sz.elements(eqn.outvars[0].aval) * window, z, z, z)


cost_rules[reduce_window_p] = _cost
