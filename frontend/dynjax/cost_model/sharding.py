"""Cost rule of ``sharding_constraint`` (``dynjax.lax.sharding``): an annotation, no work."""
from __future__ import annotations

from ..lax.sharding import sharding_constraint_p
from .collectives import _moves_only
from . import cost_rules

cost_rules[sharding_constraint_p] = _moves_only
