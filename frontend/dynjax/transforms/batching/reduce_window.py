"""Batching rule of ``reduce_window`` (``dynjax.lax.reduce_window``): the batch axis goes to the
front with a window of 1 (stride 1, no padding, no dilation); the pad and size operands must
be the same for every member."""
from __future__ import annotations

from ...core.primitive import batching_rules
from ...core.trace import Tracer
from ...lax.reduce_window import reduce_window_p
from . import _check_unbatched, to_front


def _rule(size, vals, dims, *, kind, window_dimensions, window_strides, padding, base_dilation,
          window_dilation, out_shape):
    _check_unbatched("reduce_window", dims[1:])
    x = to_front(vals[0], dims[0], size)
    dyn = list(vals[1:])
    npad = sum(v is None for pair in padding for v in pair)
    static = isinstance(size, int) and not isinstance(size, Tracer)
    new_dyn = dyn[:npad] + ([] if static else [size]) + dyn[npad:]
    out = reduce_window_p.bind(
        x, *new_dyn, kind=kind, window_dimensions=(1,) + tuple(window_dimensions),
        window_strides=(1,) + tuple(window_strides), padding=((0, 0),) + tuple(padding),
        base_dilation=(1,) + tuple(base_dilation), window_dilation=(1,) + tuple(window_dilation),
        out_shape=(size if static else None,) + tuple(out_shape))
    return out, 0


batching_rules[reduce_window_p] = _rule
