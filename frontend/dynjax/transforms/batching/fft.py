"""Batching rule of the ``fft`` primitive (``dynjax.lax.fft``): it transforms the trailing
axes, so the batch axis goes to the front; the size operand (the new length of RFFT / IRFFT
on a dynamic axis) must be the same for every member."""
from __future__ import annotations

from ...core.primitive import batching_rules
from ...lax.fft import fft_p
from . import _check_unbatched, to_front


def _fft_rule(size, vals, dims, **params):
    _check_unbatched("fft", dims[1:])
    return fft_p.bind(to_front(vals[0], dims[0], size), *vals[1:], **params), 0


batching_rules[fft_p] = _fft_rule
