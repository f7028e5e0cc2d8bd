"""Batching rules of ``cummax`` / ``cummin`` (``dynjax.lax.cumulative``): the batch axis goes
to the front and the scanned axis moves up by one."""
from __future__ import annotations

from ...core.primitive import batching_rules
from ...lax.cumulative import cummax_p, cummin_p
from . import _axes_rule

batching_rules[cummax_p] = _axes_rule(cummax_p, "axis")
batching_rules[cummin_p] = _axes_rule(cummin_p, "axis")
