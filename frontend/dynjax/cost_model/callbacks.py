"""Cost rule of ``pure_callback`` (``dynjax.lax.callbacks``): a host call, priced as free.

The model prices compiled work; the callback runs Python on the host, whose cost the model
cannot see (like ``debug_callback``)."""
from __future__ import annotations

from ..lax.callbacks import pure_callback_p
from . import _WHOLE, Cost, cost_rules


def _host_call_cost(eqn, sz):
    return Cost.zero()


cost_rules[pure_callback_p] = _host_call_cost
_WHOLE.add(pure_callback_p)
