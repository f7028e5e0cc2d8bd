"""Cost rules of ``cummax`` / ``cummin`` (``dynjax.lax.cumulative``): one comparison per
element, as ``cumsum`` costs one addition per element."""
from __future__ import annotations

from ..lax.cumulative import cummax_p, cummin_p
from . import _reduction_cost, cost_rules

cost_rules[cummax_p] = _reduction_cost
cost_rules[cummin_p] = _reduction_cost
