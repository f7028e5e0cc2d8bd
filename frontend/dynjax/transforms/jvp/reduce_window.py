"""Jvp and transpose rules of ``reduce_window`` (``dynjax.lax.reduce_window``).

* ``sum`` is linear: the tangent is the same window sum, and its transpose is again a window
  sum (a correlation with a window of ones, whose flip is itself) of the cotangent, with the
  strides and the base dilation exchanged and the pads of a convolution's input gradient
  (``window - 1 - low`` before, the rest after), sized as the operand: it works on dynamic
  sizes because the interior padding is the primitive's own base dilation (``pad_p`` could
  not pad a dynamic axis with holes).
* ``max`` / ``min``: the tangent at the first position of each window (in row-major window
  order) that attains the extremum, as JAX's ``select_and_gather_add`` picks it. It is built
  from one *offset slice* per window position ``k``: the window-1 ``reduce_window`` with the
  strides of the original and its padding shifted by ``k * window_dilation``, which reads
  element ``k`` of every window (the identity where it falls into padding). Slices of the
  tangent are window sums, so the rule is linear in the tangent and transposes through the
  sum's rule: ``grad`` of max pooling works on dynamic sizes.
* ``prod``: ``sum_k t_k prod_{j != k} x_j`` from the offset slices, with prefix and suffix
  products (no division: zeros are fine).
"""
from __future__ import annotations

import numpy as np

from ...core.avals import is_inexact_dtype
from ...core.primitive import jvp_rules, transpose_rules
from ...core.trace import typeof
from ...lax import api as lax
from ...lax import convolution as _C
from ...lax.reduce_window import bind_reduce_window, reduce_window_p
from ..transpose import is_undefined
from . import Zero, _zero_like


def _pads(padding, dyn_pad):
    it = iter(dyn_pad)
    return [tuple(next(it) if v is None else v for v in pair) for pair in padding]


def _split(padding, dyn):
    npad = sum(v is None for pair in padding for v in pair)
    return dyn[:npad]


def _offset_slice(x, kind, offset, pads, out_dims, *, window_dimensions, window_strides, base_dilation,
                  window_dilation):
    """Element ``offset`` of every window, the identity of ``kind`` where it is padding."""
    new = []
    for k, (lo, hi) in enumerate(pads):
        shift = offset[k] * window_dilation[k]
        window = (window_dimensions[k] - 1) * window_dilation[k] + 1
        new.append((_C._sub(lo, shift), _C._add(_C._sub(hi, window - 1), shift)))
    r = len(pads)
    return bind_reduce_window(x, kind, (1,) * r, window_strides, new, base_dilation, (1,) * r, out_dims)


def _rule(primals, tangents, *, kind, window_dimensions, window_strides, padding, base_dilation,
          window_dilation, out_shape):
    x, *dyn = primals
    params = dict(window_dimensions=window_dimensions, window_strides=window_strides,
                  base_dilation=base_dilation, window_dilation=window_dilation)
    out = reduce_window_p.bind(x, *dyn, kind=kind, padding=padding, out_shape=out_shape, **params)
    t = tangents[0]
    if isinstance(t, Zero) or not is_inexact_dtype(typeof(out).dtype):
        return out, _zero_like(out)
    if kind == "sum":
        return out, reduce_window_p.bind(t, *dyn, kind=kind, padding=padding, out_shape=out_shape, **params)
    pads = _pads(padding, _split(padding, dyn))
    out_dims = list(typeof(out).shape)
    offsets = list(np.ndindex(*window_dimensions))
    if not offsets:   # an empty window: the identity everywhere, a constant
        return out, _zero_like(out)
    vals = lambda o: _offset_slice(x, kind, o, pads, out_dims, **params)      # noqa: E731
    tans = lambda o: _offset_slice(t, "sum", o, pads, out_dims, **params)     # noqa: E731
    if kind in ("max", "min"):
        better = lax.gt if kind == "max" else lax.lt
        best_v, best_t = vals(offsets[0]), tans(offsets[0])
        for o in offsets[1:]:
            v = vals(o)
            wins = better(v, best_v)
            best_v = lax.select(wins, v, best_v)
            best_t = lax.select(wins, tans(o), best_t)
        return out, best_t
    # prod: sum_k t_k * prod_{j < k} x_j * prod_{j > k} x_j
    xs = [vals(o) for o in offsets]
    before = [None] * len(xs)
    acc = None
    for i, v in enumerate(xs):
        before[i] = acc
        acc = v if acc is None else lax.mul(acc, v)
    tangent, acc = None, None
    for i in range(len(xs) - 1, -1, -1):
        others = [f for f in (before[i], acc) if f is not None]
        term = tans(offsets[i])
        for f in others:
            term = lax.mul(term, f)
        tangent = term if tangent is None else lax.add(tangent, term)
        acc = xs[i] if acc is None else lax.mul(xs[i], acc)
    return out, tangent


jvp_rules[reduce_window_p] = _rule


def _transpose(ct, x, *dyn, kind, window_dimensions, window_strides, padding, base_dilation,
               window_dilation, out_shape):
    outs = [None] * (1 + len(dyn))
    if kind != "sum" or not is_undefined(x) or any(is_undefined(d) for d in dyn):
        raise NotImplementedError(f"reduce_window {kind} is not linear: it has no transpose")
    if ct is None or isinstance(ct, Zero):
        return outs
    a = x.aval
    pads = _pads(padding, _split(padding, dyn))
    out_dims = typeof(ct).shape
    new_pads = []
    for k in range(a.ndim):
        dw = _C.dilate_dim(window_dimensions[k], window_dilation[k])
        an = _C.dilate_dim(_C._size(a.shape[k]), base_dilation[k])
        so = _C.dilate_dim(_C._size(out_dims[k]), window_strides[k])
        below = _C._sub(dw - 1, pads[k][0])
        above = _C._sub(_C._sub(_C._add(an, dw - 1), so), below)
        new_pads.append((below, above))
    outs[0] = bind_reduce_window(ct, "sum", window_dimensions, base_dilation, new_pads, window_strides,
                                 window_dilation, [_C._size(d) for d in a.shape])
    return outs


transpose_rules[reduce_window_p] = _transpose
