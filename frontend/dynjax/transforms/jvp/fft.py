"""Jvp rule of the ``fft`` primitive (``dynjax.lax.fft``): the transform is linear, so the
tangent is the same transform of the tangent (its transpose rules are in
``transforms/fft_transpose.py``)."""
from __future__ import annotations

from ...core.primitive import jvp_rules
from ...lax.fft import fft_p
from . import _linear

jvp_rules[fft_p] = _linear(fft_p)
