"""numpy 2's ``cumulative_sum`` / ``cumulative_prod`` (JAX's ``jnp.cumulative_sum`` /
``jnp.cumulative_prod``): ``jnp.cumsum`` / ``jnp.cumprod`` with ``include_initial``, and an
axis that may be omitted for 1-D operands only. Built on the scans; no new primitive."""
from __future__ import annotations

import numpy as np

from ..core.avals import bool_
from ..core.trace import typeof
from .. import lax
from .reductions import _prep, cumprod, cumsum

__all__ = ["cumulative_sum", "cumulative_prod"]


def _cumulative(name, scan, identity, x, axis, dtype, include_initial):
    x = _prep(x)
    nd = typeof(x).ndim
    if nd == 0:
        raise ValueError(f"{name}: the input must be non-scalar, got a scalar")
    if axis is None:
        if nd != 1:
            raise ValueError(f"{name}: axis must be given for an input of rank {nd} (it is optional "
                             "for one-dimensional inputs only)")
        axis = 0
    if isinstance(axis, bool) or not hasattr(axis, "__index__"):
        raise TypeError(f"{name}: axis must be an int, got {axis!r}")
    axis = int(axis)
    if not -nd <= axis < nd:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an array of rank {nd}")
    axis %= nd
    out = scan(x, axis=axis, dtype=dtype)
    if not include_initial:
        return out
    a = typeof(out)
    shape = tuple(1 if i == axis else d for i, d in enumerate(a.shape))
    first = lax.broadcast_in_dim(np.asarray(identity, a.dtype), shape, ())
    return lax.concatenate([first, out], axis)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """The running sum along ``axis`` (``include_initial``: a leading 0)."""
    return _cumulative("cumulative_sum", cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """The running product along ``axis`` (``include_initial``: a leading 1); integers keep
    their dtype, as in JAX."""
    return _cumulative("cumulative_prod", _prod_keeping_ints, 1, x, axis, dtype, include_initial)


def _prod_keeping_ints(x, axis, dtype):
    """JAX's ``cumulative_prod`` keeps an integer dtype (only bools become int64), while its
    ``cumulative_sum`` accumulates small integers in 64 bits as ``cumsum`` does."""
    a = typeof(x)
    if dtype is None and a.dtype != bool_ and np.issubdtype(a.dtype, np.integer):
        dtype = a.dtype
    return cumprod(x, axis=axis, dtype=dtype)
