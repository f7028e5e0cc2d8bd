"""Windowed reductions: the ``reduce_window`` primitive, ``lax.reduce_window`` and ``lax.reduce``.

``reduce_window[kind, window_dimensions, window_strides, padding, base_dilation,
window_dilation, out_shape] x *sizes`` is XLA's ``ReduceWindow`` of a monoid (``kind``:
``"sum"``, ``"prod"``, ``"max"`` or ``"min"``) whose initial value is the monoid's identity:
``x`` is first dilated (``base_dilation - 1`` holes between neighbours: ``(n - 1) * d + 1``
elements, 0 for an empty axis), then padded (negative amounts crop); holes and padding hold
the identity (0, 1, ``-inf`` / the integer minimum, ``+inf`` / the maximum), so they count as
absent; then every window of ``window_dimensions`` (dilated by ``window_dilation``) at
``window_strides`` is reduced: ``max(padded - window + stride, 0) // stride`` results per axis.

**Dynamic sizes.** Every axis may be dynamic. Pad amounts that depend on a dynamic size
(``'SAME'``, and the transposes) and the result's dynamic sizes are trailing operands, the
catalogue's convention: ``padding`` holds ``None`` for a dynamic amount and ``out_shape``
``None`` for a dynamic size (the pads' operands first)::

    reduce_window[kind=max ... padding=((None, None),) out_shape=(None,)] x lo hi m

``lax.reduce_window(operand, init_value, computation, ...)`` has JAX's signature; it
recognizes ``computation`` among ``lax.add`` / ``lax.mul`` / ``lax.max`` / ``lax.min`` (and
``jnp.add`` / ``multiply`` / ``maximum`` / ``minimum``) and combines ``init_value`` once
into every window (as XLA does: padding and holes are not counted), which costs nothing when it
is the identity. ``lax.reduce`` maps the same computations onto the ``reduce_*`` primitives.
"""
from __future__ import annotations

import operator
from typing import Sequence

import numpy as np

from ..core.avals import bool_, dtype_category, is_float_dtype
from ..core.primitive import as_dim
from ..core.pytree import tree_flatten, tree_unflatten
from ..core.trace import Tracer, typeof
from . import api as _api
from .base import aval, check_dim_operands, define, describe_shapes, result_aval
from .convolution import (_add, _is_int, _size, conv_out_dim, dilate_dim, padtype_to_pads)

__all__ = ["reduce_window_p", "reduce_window", "reduce", "bind_reduce_window", "identity_of",
           "reduce_window_shape_tuple"]

KINDS = ("sum", "prod", "max", "min")


def identity_of(kind: str, dtype):
    """The identity of the monoid ``kind`` in ``dtype`` (a numpy scalar)."""
    dtype = np.dtype(dtype)
    if kind == "sum":
        return dtype.type(0) if dtype != bool_ else np.bool_(False)
    if kind == "prod":
        return dtype.type(1) if dtype != bool_ else np.bool_(True)
    big = kind == "min"
    if dtype == bool_:
        return np.bool_(big)
    if is_float_dtype(dtype):
        return dtype.type(np.inf if big else -np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.max if big else info.min)


# ----------------------------------------------------------------------------------------------
# the primitive
# ----------------------------------------------------------------------------------------------
def _split(padding, out_shape, dyn):
    npad = sum(v is None for pair in padding for v in pair)
    nout = sum(d is None for d in out_shape)
    if len(dyn) != npad + nout:
        raise TypeError(f"reduce_window: expected {npad + nout} dynamic size operands, got {len(dyn)}")
    return dyn[:npad], dyn[npad:]


def _check_params(a, kind, window_dimensions, window_strides, padding, base_dilation, window_dilation,
                  out_shape):
    if kind not in KINDS:
        raise TypeError(f"reduce_window: unknown kind {kind!r}")
    cat = dtype_category(a.dtype)
    if kind in ("max", "min") and cat == "complex":
        raise TypeError(f"reduce_window {kind} needs a non-complex operand, got {a.str_short()}")
    r = a.ndim
    for name, v in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                    ("padding", padding), ("base_dilation", base_dilation),
                    ("window_dilation", window_dilation), ("out_shape", out_shape)):
        if len(v) != r:
            raise TypeError(f"reduce_window: {name} needs {r} entries for {describe_shapes(a)}, got {v}")


def _abstract(x, *dyn, kind, window_dimensions, window_strides, padding, base_dilation,
              window_dilation, out_shape):
    a = aval(x)
    _check_params(a, kind, window_dimensions, window_strides, padding, base_dilation, window_dilation,
                  out_shape)
    dyn_pad, dyn_out = _split(padding, out_shape, dyn)
    check_dim_operands("reduce_window", dyn)
    shape = []
    it = iter(dyn_out)
    for k, d in enumerate(out_shape):
        shape.append(as_dim(next(it)) if d is None else int(d))
    # where everything of an axis is static, its size is checked
    for k in range(a.ndim):
        lo, hi = padding[k]
        n = a.shape[k]
        if _is_int(n) and lo is not None and hi is not None and _is_int(shape[k]):
            padded = max(dilate_dim(n, base_dilation[k]) + lo + hi, 0)   # (cropped away: empty)
            want = conv_out_dim(padded, dilate_dim(window_dimensions[k], window_dilation[k]),
                                window_strides[k])
            if shape[k] != want:
                raise TypeError(f"reduce_window: out_shape {out_shape} disagrees with the computed "
                                f"size {want} of dimension {k}")
    return result_aval(tuple(shape), a.dtype, a.weak_type)


_NP_OPS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def _combine(kind, a, b):
    """numpy's op, with XLA's -0.0 < +0.0 order for max / min."""
    out = _NP_OPS[kind](a, b) if a.dtype != bool_ or kind in ("max", "min") else \
        (np.logical_or(a, b) if kind == "sum" else np.logical_and(a, b))
    if kind in ("max", "min") and is_float_dtype(a.dtype):
        zeros = (a == 0) & (b == 0)
        neg_a = np.signbit(a)
        pick_a = ~neg_a if kind == "max" else neg_a
        out = np.where(zeros, np.where(pick_a, a, b), out)
    return out


def _impl(x, *dyn, kind, window_dimensions, window_strides, padding, base_dilation, window_dilation,
          out_shape):
    x = np.asarray(x)
    a = aval(x)
    _check_params(a, kind, window_dimensions, window_strides, padding, base_dilation, window_dilation,
                  out_shape)
    dyn_pad, _ = _split(padding, out_shape, dyn)
    it = iter(int(v) for v in dyn_pad)
    pads = [tuple(next(it) if v is None else int(v) for v in pair) for pair in padding]
    ident = identity_of(kind, x.dtype)
    # dilate, then pad / crop, with the identity
    for ax, d in enumerate(base_dilation):
        n = x.shape[ax]
        if d > 1 and n > 0:
            shape = list(x.shape)
            shape[ax] = (n - 1) * d + 1
            y = np.full(shape, ident, x.dtype)
            idx = [slice(None)] * x.ndim
            idx[ax] = slice(None, None, d)
            y[tuple(idx)] = x
            x = y
    for ax, (lo, hi) in enumerate(pads):
        n = x.shape[ax]
        if lo + hi + n <= 0:   # cropped away entirely (the offset slices of the jvp rule do this)
            x = np.take(x, np.arange(0), axis=ax)
            continue
        widths = [(0, 0)] * x.ndim
        widths[ax] = (max(lo, 0), max(hi, 0))
        x = np.pad(x, widths, constant_values=ident)
        idx = [slice(None)] * x.ndim
        idx[ax] = slice(max(-lo, 0), x.shape[ax] - max(-hi, 0))
        x = x[tuple(idx)]
    out_dims = [conv_out_dim(x.shape[k], dilate_dim(window_dimensions[k], window_dilation[k]),
                             window_strides[k]) for k in range(x.ndim)]
    out = np.full(out_dims, ident, x.dtype)
    with np.errstate(all="ignore"):
        for offs in np.ndindex(*window_dimensions):
            idx = tuple(slice(o * wd, o * wd + (m - 1) * s + 1, s) if m > 0 else slice(0, 0)
                        for o, wd, s, m in zip(offs, window_dilation, window_strides, out_dims))
            out = _combine(kind, out, x[idx]).astype(x.dtype, copy=False)
    return out


reduce_window_p = define("reduce_window", _impl, _abstract)


def bind_reduce_window(x, kind, window_dimensions, window_strides, pads, base_dilation, window_dilation,
                       out_dims=None):
    """Bind the primitive with explicit ``pads`` (ints or traced sizes); the result sizes are
    computed, or given as ``out_dims`` (the transpose rules know them)."""
    a = typeof(x)
    pads = [(_size(lo), _size(hi)) for lo, hi in pads]
    if out_dims is None:
        out_dims = []
        for k in range(a.ndim):
            padded = _add(_add(dilate_dim(_size(a.shape[k]), base_dilation[k]), pads[k][0]), pads[k][1])
            out_dims.append(conv_out_dim(padded, dilate_dim(window_dimensions[k], window_dilation[k]),
                                         window_strides[k]))
    out_dims = [d if _is_int(d) else _size(d) for d in out_dims]
    out_dims = [d if _is_int(d) or d is a.shape[k] else _api.canonicalize_dim(d)
                for k, d in enumerate(out_dims)]
    static_pads = tuple((lo if _is_int(lo) else None, hi if _is_int(hi) else None) for lo, hi in pads)
    dyn_pads = [v for pair in pads for v in pair if not _is_int(v)]
    return reduce_window_p.bind(
        x, *dyn_pads, *[d for d in out_dims if not _is_int(d)], kind=kind,
        window_dimensions=tuple(int(w) for w in window_dimensions),
        window_strides=tuple(int(s) for s in window_strides), padding=static_pads,
        base_dilation=tuple(int(d) for d in base_dilation),
        window_dilation=tuple(int(d) for d in window_dilation),
        out_shape=tuple(d if _is_int(d) else None for d in out_dims))


# ----------------------------------------------------------------------------------------------
# the API
# ----------------------------------------------------------------------------------------------
def _computations():
    from .. import numpy as jnp
    table = {}
    for kind, fns in (("sum", (_api.add, jnp.add, operator.add)), ("prod", (_api.mul, jnp.multiply, operator.mul)),
                      ("max", (_api.max, jnp.maximum, max)), ("min", (_api.min, jnp.minimum, min))):
        for f in fns:
            table[id(f)] = kind
    try:   # lax.add etc. as exported by dynjax.lax (possibly wrappers of the api functions)
        from .. import lax as _lax
        for name, kind in (("add", "sum"), ("mul", "prod"), ("max", "max"), ("min", "min")):
            table[id(getattr(_lax, name))] = kind
    except ImportError:   # pragma: no cover
        pass
    return table


def _kind_of(name, computation):
    kind = _computations().get(id(computation))
    if kind is None:
        raise NotImplementedError(
            f"{name}: only the computations lax.add, lax.mul, lax.max and lax.min (or jnp.add, "
            f"jnp.multiply, jnp.maximum, jnp.minimum) are supported, got {computation!r}")
    return kind


def _operand(x):
    if isinstance(x, Tracer):
        return x
    from ..numpy import asarray
    return asarray(x)


def _ints(name, v, n, default):
    if v is None:
        return (default,) * n
    v = tuple(v)
    if len(v) != n or not all(_is_int(i) for i in v):
        raise TypeError(f"reduce_window: {name} must be {n} ints, got {v}")
    return tuple(int(i) for i in v)


def _is_identity(kind, init, dtype) -> bool:
    if isinstance(init, Tracer):
        return False
    v = np.asarray(init)
    if v.shape != ():
        return False
    ident = identity_of(kind, dtype)
    try:
        return bool(np.asarray(v, dtype) == ident) and (kind not in ("sum",) or not np.signbit(v)
                                                        or not is_float_dtype(dtype))
    except (TypeError, ValueError, OverflowError):
        return False


def _init_combined(kind, init, out):
    """``computation(init, out)`` elementwise, ``init`` a scalar in ``out``'s dtype."""
    a = typeof(out)
    v = _api.convert_element_type(init, a.dtype) if isinstance(init, Tracer) else np.asarray(init, a.dtype)
    if typeof(v).shape != ():
        raise TypeError(f"reduce_window: init_value must be a scalar, got {typeof(v).str_short()}")
    b = _api.broadcast_in_dim(v, a.shape, ())
    fn = {"sum": _api.add, "prod": _api.mul, "max": _api.max, "min": _api.min}[kind]
    if a.dtype == bool_ and kind in ("sum", "prod"):
        fn = _api.bitwise_or if kind == "sum" else _api.bitwise_and
    return fn(b, out)


def reduce_window(operand, init_value, computation, window_dimensions: Sequence[int],
                  window_strides: Sequence[int] = None, padding="VALID",
                  base_dilation: Sequence[int] = None, window_dilation: Sequence[int] = None):
    """JAX's ``lax.reduce_window`` for the monoid computations ``lax.add`` / ``mul`` / ``max`` /
    ``min``: ``computation`` over every window of ``operand`` (``padding``: ``'VALID'``,
    ``'SAME'``, ``'SAME_LOWER'`` or ``(low, high)`` pairs), starting from ``init_value``; every
    axis may be dynamic."""
    leaves, tree = tree_flatten(operand)
    if len(leaves) != 1 or len(tree_flatten(init_value)[0]) != 1:
        raise NotImplementedError("reduce_window: only a single operand (and a single init_value) is "
                                  "supported, not a pytree of several")
    kind = _kind_of("reduce_window", computation)
    x = _operand(leaves[0])
    init = tree_flatten(init_value)[0][0]
    a = typeof(x)
    r = a.ndim
    window_dimensions = _ints("window_dimensions", window_dimensions, r, None)
    if any(w < 0 for w in window_dimensions):
        raise ValueError(f"reduce_window: window_dimensions must be >= 0, got {window_dimensions}")
    strides = _ints("window_strides", window_strides, r, 1)
    base = _ints("base_dilation", base_dilation, r, 1)
    wdil = _ints("window_dilation", window_dilation, r, 1)
    for name, v in (("window_strides", strides), ("base_dilation", base), ("window_dilation", wdil)):
        if any(i < 1 for i in v):
            raise ValueError(f"reduce_window: {name} must be positive, got {v}")
    if kind in ("max", "min") and dtype_category(a.dtype) == "complex":
        raise TypeError(f"reduce_window: {kind} of complex operands is not supported ({a.str_short()})")
    if isinstance(padding, str):
        dims = [dilate_dim(_size(d), b) for d, b in zip(a.shape, base)]
        windows = [dilate_dim(w, d) for w, d in zip(window_dimensions, wdil)]
        pads = padtype_to_pads(dims, windows, strides, padding)
    else:
        pads = [tuple(p) for p in padding]
        if len(pads) != r or not all(len(p) == 2 for p in pads):
            raise ValueError(f"reduce_window: padding must be 'SAME', 'VALID' or {r} (low, high) "
                             f"pairs, got {padding!r}")
    for k, (lo, hi) in enumerate(pads):
        n = a.shape[k]
        if _is_int(n) and _is_int(lo) and _is_int(hi) and dilate_dim(n, base[k]) + lo + hi < 0:
            raise ValueError(f"reduce_window: negative padding {(lo, hi)} is larger than the size {n} "
                             f"of dimension {k}")
    out = bind_reduce_window(x, kind, window_dimensions, strides, pads, base, wdil)
    if _is_identity(kind, init, a.dtype):
        return tree_unflatten(tree, [out])
    return tree_unflatten(tree, [_init_combined(kind, init, out)])


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
    """The result shape of ``reduce_window``: ``padding`` is one ``(low, high)`` pair per axis
    (sizes may be traced)."""
    shape = tuple(operand_shape)
    windows = tuple(window_dimensions)
    if base_dilation is not None:
        shape = tuple(dilate_dim(n, int(d)) for n, d in zip(shape, base_dilation))
    if window_dilation is not None:
        windows = tuple(dilate_dim(w, int(d)) for w, d in zip(windows, window_dilation))
    padded = [_add(_add(n, lo), hi) for n, (lo, hi) in zip(shape, padding)]
    return tuple(conv_out_dim(p, w, int(st)) for p, w, st in zip(padded, windows, window_strides))


def reduce(operands, init_values, computation, dimensions: Sequence[int]):
    """JAX's ``lax.reduce`` for the monoid computations (``lax.add`` / ``mul`` / ``max`` /
    ``min`` and their jnp forms): ``computation`` over ``dimensions``, starting from
    ``init_values``."""
    leaves, tree = tree_flatten(operands)
    inits = tree_flatten(init_values)[0]
    if len(leaves) != 1 or len(inits) != 1:
        raise NotImplementedError("reduce: only a single operand (and a single init_value) is "
                                  "supported, not a pytree of several")
    kind = _kind_of("reduce", computation)
    x = _operand(leaves[0])
    a = typeof(x)
    dims = tuple(int(d) for d in dimensions)
    if any(not 0 <= d < a.ndim for d in dims) or len(set(dims)) != len(dims):
        raise ValueError(f"reduce: dimensions {tuple(dimensions)} are not distinct axes of an array "
                         f"of rank {a.ndim}")
    if a.dtype == bool_ and kind in ("sum", "prod"):
        from .. import numpy as jnp
        out = (jnp.any if kind == "sum" else jnp.all)(x, axis=dims)
    else:
        fn = {"sum": _api.reduce_sum, "prod": _api.reduce_prod, "max": _api.reduce_max,
              "min": _api.reduce_min}[kind]
        out = fn(x, dims)
    if not _is_identity(kind, inits[0], a.dtype):
        out = _init_combined(kind, inits[0], out)
    return tree_unflatten(tree, [out])
