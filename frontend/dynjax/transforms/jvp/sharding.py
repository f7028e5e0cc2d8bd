"""Jvp and transpose rules of ``sharding_constraint`` (``dynjax.lax.sharding``): the identity,
so tangents and cotangents are laid out as the value is."""
from __future__ import annotations

from ...core.primitive import jvp_rules, transpose_rules
from ...lax.sharding import sharding_constraint_p
from . import Zero


def _jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    out = sharding_constraint_p.bind(x, **params)
    return out, (t if isinstance(t, Zero) else sharding_constraint_p.bind(t, **params))


def _transpose(ct, x, **params):
    return [None if ct is None else sharding_constraint_p.bind(ct, **params)]


jvp_rules[sharding_constraint_p] = _jvp
transpose_rules[sharding_constraint_p] = _transpose
