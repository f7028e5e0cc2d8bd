"""Functions that apply functions or pick among values: ``vectorize``, ``apply_along_axis``,
``apply_over_axes``, ``piecewise``, ``select``, ``choose``, ``place`` and
``put_along_axis``.

``vectorize`` and ``apply_along_axis`` are ``dynjax.vmap`` over the loop axes, so the
function is traced once whatever the (possibly dynamic) sizes. As in JAX, ``piecewise``
evaluates every piece on the whole input and selects, and the in-place updates
(``place``, ``put_along_axis``, ``fill_diagonal``) need ``inplace=False``.
"""
from __future__ import annotations

import functools
import re

import numpy as np

from .. import lax
from ..core.trace import Tracer, typeof
from ._promote import promote


def _arr(a):
    from .creation import asarray
    return asarray(a)


def _vmap(f, in_axes=0):
    from ..transforms.batching import vmap
    return vmap(f, in_axes=in_axes)


# --- vectorize -------------------------------------------------------------------------------------------
_DIMS = r"\((?:\w+(?:,\s*\w+)*)?\)"
_SIGNATURE = re.compile(rf"^\s*{_DIMS}(?:\s*,\s*{_DIMS})*\s*->\s*{_DIMS}(?:\s*,\s*{_DIMS})*\s*$")


def _parse_signature(signature):
    if not _SIGNATURE.match(signature):
        raise ValueError(f"vectorize: not a valid gufunc signature: {signature!r}")
    ins, outs = signature.split("->")

    def groups(s):
        return [tuple(d.strip() for d in g.split(",") if d.strip()) for g in re.findall(r"\(([^)]*)\)", s)]
    return groups(ins), groups(outs)


class vectorize:
    """``np.vectorize`` for traced functions: ``pyfunc`` is written for one element (or for
    the core dims of ``signature``, e.g. ``"(n),(n)->()"``) and is mapped with ``vmap`` over
    the broadcast loop dims. ``excluded`` names positions or keywords passed through as is."""

    def __init__(self, pyfunc, *, excluded=frozenset(), signature=None):
        self.pyfunc = pyfunc
        self.excluded = set(excluded)
        self.signature = signature
        functools.update_wrapper(self, pyfunc)

    def __call__(self, *args, **kwargs):
        from ._promote import broadcast_shapes, broadcast_to_shape
        excluded_pos = {i for i in self.excluded if isinstance(i, int)}
        kw_fixed = {k: v for k, v in kwargs.items() if k in self.excluded}
        kw_mapped = {k: v for k, v in kwargs.items() if k not in self.excluded}
        names = list(kw_mapped)
        pos = [i for i in range(len(args)) if i not in excluded_pos]
        mapped = [_arr(args[i]) for i in pos] + [_arr(kw_mapped[k]) for k in names]

        def call(*vals):
            full = list(args)
            for i, v in zip(pos, vals[:len(pos)]):
                full[i] = v
            kw = dict(kw_fixed)
            kw.update(zip(names, vals[len(pos):]))
            return self.pyfunc(*full, **kw)

        if self.signature is None:
            cores = [()] * len(mapped)
        else:
            ins, _ = _parse_signature(self.signature)
            if len(ins) != len(mapped):
                raise TypeError(f"vectorize: the signature has {len(ins)} inputs, got {len(mapped)} arguments")
            cores = ins
        loops = []
        for a, core in zip(mapped, cores):
            nd = typeof(a).ndim
            if nd < len(core):
                raise ValueError(f"vectorize: an input has {nd} dims, fewer than its core dims {core}")
            loops.append(tuple(typeof(a).shape[:nd - len(core)]))
        loop_shape = broadcast_shapes(*loops)
        mapped = [broadcast_to_shape(a, tuple(loop_shape) + tuple(typeof(a).shape[typeof(a).ndim - len(c):]))
                  for a, c in zip(mapped, cores)]
        f = call
        for _ in loop_shape:
            f = _vmap(f)
        return f(*mapped)


# --- apply_along_axis / apply_over_axes ---------------------------------------------------------------------
def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """``func1d`` applied to the 1-d slices of ``arr`` along ``axis``; the result's dims
    replace that axis."""
    from .shape_ops import moveaxis, transpose
    arr = _arr(arr)
    nd = typeof(arr).ndim
    if not -nd <= int(axis) < nd:
        raise ValueError(f"apply_along_axis: axis {axis} is out of bounds for an array of dimension {nd}")
    axis = int(axis) % nd
    f = functools.partial(lambda x: func1d(x, *args, **kwargs))
    for _ in range(nd - 1):
        f = _vmap(f)
    out = _arr(f(moveaxis(arr, axis, -1)))
    k = typeof(out).ndim - (nd - 1)
    if k == 0:
        return out
    lead = list(range(nd - 1))
    core = list(range(nd - 1, nd - 1 + k))
    return transpose(out, lead[:axis] + core + lead[axis:])


def apply_over_axes(func, a, axes):
    """``a = func(a, axis)`` for each axis in turn, a dropped axis put back with size 1."""
    from .shape_ops import expand_dims
    a = _arr(a)
    for ax in ([axes] if isinstance(axes, (int, np.integer)) else axes):
        res = _arr(func(a, ax))
        if typeof(res).ndim == typeof(a).ndim - 1:
            res = expand_dims(res, ax)
        elif typeof(res).ndim != typeof(a).ndim:
            raise ValueError("apply_over_axes: func must return an array of the same or one fewer dimensions")
        a = res
    return a


# --- picking among values -------------------------------------------------------------------------------------
def _as_bool(c, shape):
    from ._promote import broadcast_to_shape
    c = _arr(c)
    if typeof(c).dtype != np.bool_:
        raise TypeError(f"conditions must be boolean arrays, got {typeof(c).str_short()}")
    return broadcast_to_shape(c, shape)


def piecewise(x, condlist, funclist, *args, **kw):
    """``funclist[i](x)`` (or the constant ``funclist[i]``) where ``condlist[i]`` holds, later
    conditions winning; one extra function is the value where no condition holds; 0
    elsewhere. The result has ``x``'s dtype."""
    from .creation import zeros
    from .reductions import any as _any
    from .shape_ops import stack
    x = _arr(x)
    shape, dt = typeof(x).shape, typeof(x).dtype
    if isinstance(condlist, (list, tuple)):
        conds = [_as_bool(c, shape) for c in condlist]
    else:
        c = _arr(condlist)
        conds = [_as_bool(c, shape)] if typeof(c).ndim == len(shape) else [_as_bool(ci, shape) for ci in c]
    funcs = list(funclist)
    if len(funcs) == len(conds) + 1:
        other = lax.bitwise_not(_any(stack(conds), axis=0)) if conds else \
            lax.broadcast_in_dim(np.True_, shape, ())
        conds = conds + [other]
    elif len(funcs) != len(conds):
        raise ValueError(f"piecewise: {len(funcs)} functions for {len(conds)} conditions "
                         "(there must be as many, or one more)")
    out = zeros(shape, dt)
    for c, f in zip(conds, funcs):
        v = f(x, *args, **kw) if callable(f) else f
        v = _arr(v)
        v = v.astype(dt) if isinstance(v, Tracer) else np.asarray(v, dt)
        from ._promote import broadcast_to_shape
        out = lax.select(c, broadcast_to_shape(v, shape), out)
    return out


def select(condlist, choicelist, default=0):
    """``choicelist[i]`` where ``condlist[i]`` is the first condition that holds, else
    ``default``."""
    from ._promote import broadcast_shapes, broadcast_to_shape
    if len(condlist) != len(choicelist):
        raise ValueError(f"select: condlist and choicelist must have the same length, got "
                         f"{len(condlist)} and {len(choicelist)}")
    if not condlist:
        raise ValueError("select: condlist must not be empty")
    conds = [_arr(c) for c in condlist]
    for c in conds:
        if typeof(c).dtype != np.bool_:
            raise TypeError(f"select: the conditions must be boolean, got {typeof(c).str_short()}")
    vals = list(promote(*[_arr(v) for v in choicelist], default))
    shape = broadcast_shapes(*[typeof(v).shape for v in vals + conds])
    out = broadcast_to_shape(vals[-1], shape)
    for c, v in reversed(list(zip(conds, vals[:-1]))):
        out = lax.select(broadcast_to_shape(c, shape), broadcast_to_shape(v, shape), out)
    return out


def choose(a, choices, out=None, mode="raise"):
    """``choices[a[i]][i]``, all broadcast together. ``mode``: ``"clip"``, ``"wrap"``, or
    ``"raise"`` (checked on a concrete ``a``; refused under tracing)."""
    from ._promote import broadcast_shapes, broadcast_to_shape
    from .reductions import any as _any
    from .ufuncs import clip, mod
    if out is not None:
        raise NotImplementedError("choose: the out argument is not supported")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"choose: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    a = _arr(a)
    if not np.issubdtype(typeof(a).dtype, np.integer):
        raise TypeError(f"choose: a must be an integer array, got {typeof(a).str_short()}")
    ch = list(promote(*[_arr(c) for c in choices]))
    n = len(ch)
    a = a.astype(np.int64) if isinstance(a, Tracer) else np.asarray(a, np.int64)
    if mode == "clip":
        a = clip(a, 0, n - 1)
    elif mode == "wrap":
        a = mod(a, np.int64(n))
    else:
        if isinstance(a, Tracer):
            raise TypeError("choose(mode='raise') cannot check a traced index array; use mode='clip' or 'wrap'")
        if bool(_any((a < 0) | (a >= n))):
            raise ValueError("choose: invalid entry in choice array")
    shape = broadcast_shapes(typeof(a).shape, *[typeof(c).shape for c in ch])
    a = broadcast_to_shape(a, shape)
    result = broadcast_to_shape(ch[-1], shape)
    for i in range(n - 2, -1, -1):
        result = lax.select(lax.eq(a, lax.broadcast_in_dim(np.int64(i), shape, ())),
                            broadcast_to_shape(ch[i], shape), result)
    return result


def place(arr, mask, vals, *, inplace=True):
    """A copy of ``arr`` whose elements where ``mask`` holds take ``vals`` in order, repeated
    cyclically. ``inplace=False`` is required (arrays are immutable)."""
    from .reductions import cumsum, size as _size
    from .selection import take
    from .shape_ops import ravel
    if inplace:
        raise ValueError("place: arrays are immutable, pass inplace=False to get an updated copy")
    arr = _arr(arr)
    m = _as_bool(mask, typeof(arr).shape)
    v = ravel(_arr(vals))
    v = v.astype(typeof(arr).dtype) if isinstance(v, Tracer) else np.asarray(v, typeof(arr).dtype)
    n = _size(v)
    if isinstance(n, int) and n == 0:
        return arr
    pos = cumsum(m.astype(np.int64) if isinstance(m, Tracer) else np.asarray(m, np.int64)) - np.int64(1)
    pos = lax.rem(lax.max(pos, lax.broadcast_in_dim(np.int64(0), typeof(pos).shape, ())),
                  lax.convert_element_type(n, np.int64) if isinstance(n, Tracer) else np.int64(n))
    from .shape_ops import reshape
    picked = reshape(take(v, ravel(pos), mode="clip"), typeof(arr).shape)
    return lax.select(m, picked, arr)


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
    """A copy of ``arr`` with ``values`` written at ``indices`` along ``axis`` (numpy's
    ``put_along_axis``; ``axis=None`` works on the flattened array). ``inplace=False`` is
    required (arrays are immutable)."""
    from .indexing import IndexUpdateHelper
    from .shape_ops import ravel
    if inplace:
        raise ValueError("put_along_axis: arrays are immutable, pass inplace=False to get an updated copy")
    arr = _arr(arr)
    idx = _arr(indices)
    if not np.issubdtype(typeof(idx).dtype, np.integer):
        raise TypeError(f"put_along_axis: indices must be integers, got {typeof(idx).str_short()}")
    if axis is None:
        flat = ravel(arr)
        return IndexUpdateHelper(flat)[ravel(idx)].set(ravel(_arr(values)), mode=mode)
    nd = typeof(arr).ndim
    if typeof(idx).ndim != nd:
        raise ValueError("put_along_axis: indices and arr must have the same number of dimensions")
    axis = int(axis) % nd
    coords = []
    for i in range(nd):
        if i == axis:
            coords.append(idx)
        else:
            n = typeof(arr).shape[i]
            shp = tuple(n if j == i else 1 for j in range(nd))
            coords.append(lax.broadcasted_iota(np.dtype(np.int64), shp, i))
    return IndexUpdateHelper(arr)[tuple(coords)].set(values, mode=mode)
