"""JVP rule of ``pure_callback`` (``dynjax.lax.callbacks``): not differentiable, as in JAX.

A call whose operands all have zero tangents (values that do not depend on the
differentiated inputs) runs unchanged with zero tangents; differentiating through the
callback is a ``ValueError`` pointing at ``custom_jvp``, which gives the callback a
derivative of the user's choosing."""
from __future__ import annotations

from ...core.primitive import jvp_rules
from ...lax.callbacks import pure_callback_p
from . import Zero, _zero_like


def _pure_callback_jvp(primals, tangents, **params):
    if any(not isinstance(t, Zero) for t in tangents):
        raise ValueError("Pure callbacks do not support JVP. Please use `dynjax.custom_jvp` to use "
                         "callbacks while taking gradients.")
    outs = pure_callback_p.bind(*primals, **params)
    return outs, [_zero_like(o) for o in outs]


jvp_rules[pure_callback_p] = _pure_callback_jvp
