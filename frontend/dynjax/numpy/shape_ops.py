"""Shape manipulation: reshape (with -1), transpose, squeeze, expand_dims, ravel,
concatenate, stack, broadcast_to, astype, pad; all with static or dynamic dims."""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import canonical_dtype, same_dim
from ..core.trace import Tracer, typeof
from ..lax.api import canonicalize_dim, shape_entries
from ..lax.base import describe_shapes
from ._promote import broadcast_to_shape, promote


def _prod(dims):
    """(static product, list of symbolic factors)."""
    s, sym = 1, []
    for d in dims:
        if isinstance(d, int):
            s *= d
        else:
            sym.append(d)
    return s, sym


def _dim_product(static, syms):
    """``static * prod(syms)`` as a dim: an int, or a traced integer (``mul`` equations)."""
    if not syms or static == 0:
        return static
    n = syms[0]
    for d in syms[1:]:
        n = lax.mul(n, d)
    return n if static == 1 else lax.mul(n, static)


def _cancel(xs, ys):
    """Remove the symbolic factors common to ``xs`` and ``ys`` (by identity)."""
    xs, rest = list(xs), []
    for y in ys:
        for j, x in enumerate(xs):
            if x is y:
                del xs[j]
                break
        else:
            rest.append(y)
    return xs, rest


def reshape(a, newshape, order="C"):
    """Reshape; one entry may be -1; entries may be static or traced sizes.

    Sizes that are provably different are a ``TypeError`` at trace time; sizes the tracer
    cannot compare (e.g. ``n * 2`` against another traced integer) are checked at run time.
    """
    if order != "C":
        raise NotImplementedError("only C order reshapes are supported")
    newshape = shape_entries(newshape)
    a = _as_array(a)
    av = typeof(a)
    dims, minus = [], None
    for i, d in enumerate(newshape):
        if not isinstance(d, Tracer) and int(d) == -1:
            if minus is not None:
                raise ValueError("reshape: can only specify one unknown dimension (-1)")
            minus = i
        dims.append(d if minus == i else canonicalize_dim(d, "reshape size"))
    in_static, in_sym = _prod(av.shape)
    out_static, out_sym = _prod(d for i, d in enumerate(dims) if i != minus)
    in_rest, out_rest = _cancel(in_sym, out_sym)
    if minus is not None:
        if not out_rest and out_static and in_static % out_static == 0:
            dims[minus] = _dim_product(in_static // out_static, in_rest)
        elif not in_rest and not out_rest:
            raise TypeError(f"reshape: cannot reshape {describe_shapes(av)} into shape {_fmt_dims(dims)}")
        else:
            total, part = _dim_product(in_static, in_rest), _dim_product(out_static, out_rest)
            dims[minus] = canonicalize_dim(lax.div(total, part))
    elif not in_rest and not out_rest and in_static != out_static:
        raise TypeError(f"reshape: cannot reshape {describe_shapes(av)} into shape {_fmt_dims(dims)}: "
                        "the sizes differ")
    if len(dims) == av.ndim and all(same_dim(p, q) for p, q in zip(dims, av.shape)):
        return a
    return lax.reshape(a, dims)


def _fmt_dims(dims):
    return "(" + ", ".join(str(d) if isinstance(d, int) else "?" for d in dims) + ")"


def _as_array(a):
    if isinstance(a, Tracer):
        return a
    from .creation import asarray
    out = asarray(a)
    if isinstance(out, (bool, int, float)):
        (out,) = promote(out)
    return out


def ravel(a):
    a = _as_array(a)
    if typeof(a).ndim == 1:
        return a
    return reshape(a, (-1,))


def transpose(a, axes=None):
    a = _as_array(a)
    nd = typeof(a).ndim
    perm = tuple(reversed(range(nd))) if axes is None else tuple(int(x) % nd for x in axes)
    if perm == tuple(range(nd)):
        return a
    return lax.transpose(a, perm)


def swapaxes(a, axis1, axis2):
    nd = typeof(a).ndim
    perm = list(range(nd))
    perm[axis1 % nd], perm[axis2 % nd] = perm[axis2 % nd], perm[axis1 % nd]
    return transpose(a, perm)


def moveaxis(a, source, destination):
    nd = typeof(a).ndim
    perm = [i for i in range(nd) if i != source % nd]
    perm.insert(destination % nd, source % nd)
    return transpose(a, perm)


def squeeze(a, axis=None):
    """numpy's squeeze. Without ``axis`` on an array with a dynamic axis the result's rank
    would depend on a run-time size, so that is a TypeError: pass ``axis=``."""
    a = _as_array(a)
    av = typeof(a)
    if axis is None:
        dynamic = [i for i, d in enumerate(av.shape) if not isinstance(d, int)]
        if dynamic:
            raise TypeError(f"squeeze() without axis on {av.str_short()}, whose axis {dynamic[0]} is "
                            "dynamic: whether it is dropped would depend on its size at run time; "
                            "pass axis=... to name the axes to drop")
        axes = [i for i, d in enumerate(av.shape) if d == 1]
    else:
        axes = [int(x) % av.ndim for x in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    if not axes:
        return a
    return lax.squeeze(a, axes)


def expand_dims(a, axis):
    a = _as_array(a)
    av = typeof(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    nd = av.ndim + len(axes)
    axes = sorted(int(x) % nd for x in axes)
    shape = list(av.shape)
    for ax in axes:
        shape.insert(ax, 1)
    keep = [i for i in range(nd) if i not in axes]
    return lax.broadcast_in_dim(a, shape, keep)


def broadcast_to(a, shape):
    a = _as_array(a)
    shape = tuple(canonicalize_dim(d) for d in shape_entries(shape))
    return broadcast_to_shape(a, shape)


def astype(a, dtype):
    a = _as_array(a)
    dtype = canonical_dtype(dtype)
    if typeof(a).dtype == dtype and not typeof(a).weak_type:
        return a
    return lax.convert_element_type(a, dtype)


def concatenate(arrays, axis=0):
    arrays = [_as_array(x) for x in arrays]
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    arrays = promote(*arrays)
    nd = typeof(arrays[0]).ndim
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    for x in arrays:
        if typeof(x).ndim != nd:
            raise ValueError("all the input arrays must have the same number of dimensions, got "
                             + describe_shapes(*[typeof(y) for y in arrays]))
    axis = int(axis) % nd
    if len(arrays) == 1:
        return arrays[0]
    return lax.concatenate(arrays, axis)


def stack(arrays, axis=0):
    arrays = [_as_array(x) for x in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    nd = typeof(arrays[0]).ndim + 1
    axis = int(axis) % nd
    return concatenate([expand_dims(x, axis) for x in arrays], axis)


def hstack(arrays):
    arrays = [_as_array(x) for x in arrays]
    return concatenate(arrays, 0 if typeof(arrays[0]).ndim == 1 else 1)


def vstack(arrays):
    arrays = [_as_array(x) for x in arrays]
    return concatenate([x if typeof(x).ndim >= 2 else reshape(x, (1, -1)) for x in arrays], 0)


def pad(array, pad_width, mode="constant", constant_values=0):
    """Constant padding with static widths; the padded axes may be dynamic."""
    if mode != "constant":
        raise NotImplementedError("only mode='constant' is supported")
    a = _as_array(array)
    av = typeof(a)
    pw = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (av.ndim, 2))
    if (pw < 0).any():
        raise ValueError("pad widths must be non-negative")
    value = np.asarray(constant_values, dtype=av.dtype)[()]
    if all(isinstance(d, int) for d in av.shape):
        return lax.pad(a, value, [(int(lo), int(hi), 0) for lo, hi in pw])
    from .creation import full
    new_shape = [d if lo == hi == 0 else d + int(lo + hi) for d, (lo, hi) in zip(av.shape, pw)]
    base = full(new_shape, value, av.dtype)
    return lax.dynamic_update_slice(base, a, [int(lo) for lo, _ in pw])


def shape(a):
    return typeof(a).shape


def ndim(a):
    return typeof(a).ndim
