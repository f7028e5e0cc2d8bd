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
    """numpy's moveaxis: ``source`` and ``destination`` are axes or equal-length sequences."""
    a = _as_array(a)
    nd = typeof(a).ndim
    src = [source] if isinstance(source, (int, np.integer)) else list(source)
    dst = [destination] if isinstance(destination, (int, np.integer)) else list(destination)
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have the same number of elements")
    for ax in src + dst:
        if not -nd <= int(ax) < nd:
            raise ValueError(f"moveaxis: axis {ax} is out of bounds for an array of dimension {nd}")
    src, dst = [int(s) % nd for s in src], [int(d) % nd for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("moveaxis: repeated axis")
    perm = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
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
    return lax.api.dynamic_update_slice(base, a, [int(lo) for lo, _ in pw])


def shape(a):
    return typeof(a).shape


def ndim(a):
    return typeof(a).ndim


def flip(m, axis=None):
    """Reverse the order of elements along ``axis`` (all axes when None); dynamic axes too."""
    m = _as_array(m)
    nd = typeof(m).ndim
    axes = range(nd) if axis is None else (axis if isinstance(axis, (tuple, list)) else (axis,))
    axes = sorted({int(a) % nd for a in axes}) if nd else []
    return lax.rev(m, axes) if axes else m


def fliplr(m):
    return flip(m, 1)


def flipud(m):
    return flip(m, 0)


def roll(a, shift, axis=None):
    """numpy's roll; the shift may be traced and the axis dynamic. Elements leaving one end
    come back at the other: read the doubled axis from ``n - shift mod n``, a slice whose
    length is exactly ``n`` (so the result keeps the input's dim)."""
    a = _as_array(a)
    if axis is None:
        shape = typeof(a).shape
        return reshape(roll(ravel(a), shift, 0), shape)
    if isinstance(axis, (tuple, list)):
        shifts = shift if isinstance(shift, (tuple, list)) else [shift] * len(axis)
        for ax, sh in zip(axis, shifts):
            a = roll(a, sh, ax)
        return a
    av = typeof(a)
    axis = int(axis) % av.ndim
    n = av.shape[axis]
    if isinstance(n, int) and not isinstance(shift, Tracer):
        k = int(shift) % n if n else 0
        if k == 0:
            return a
        starts = [0] * av.ndim
        starts[axis] = n - k
        return lax.slice(lax.concatenate([a, a], axis), starts,
                         [None if i != axis else 2 * n - k for i in range(av.ndim)])
    from .ufuncs import remainder
    k = remainder(lax.convert_element_type(shift, np.int64) if isinstance(shift, Tracer) else int(shift), n)
    start = lax.sub(n, k)
    starts = [start if i == axis else 0 for i in range(av.ndim)]
    return lax.api.dynamic_slice(lax.concatenate([a, a], axis), starts, list(av.shape))


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The ``n``-th discrete difference along ``axis`` (numpy's ``diff``): ``a[1:] - a[:-1]``
    repeated, with sizes ``len - n`` as symbolic dims on dynamic axes."""
    a = _as_array(a)
    nd = typeof(a).ndim
    if nd == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = int(axis) % nd
    n = int(n)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    parts = []
    for extra in (prepend, a, append):
        if extra is None:
            continue
        extra = _as_array(extra)
        if typeof(extra).ndim == 0:
            shape = list(typeof(a).shape)
            shape[axis] = 1
            extra = broadcast_to_shape(promote(extra)[0], tuple(shape))
        parts.append(extra)
    if len(parts) > 1:
        a = concatenate(parts, axis)
    hi = tuple(slice(1, None) if i == axis else slice(None) for i in range(nd))
    lo = tuple(slice(None, -1) if i == axis else slice(None) for i in range(nd))
    for _ in range(n):
        a = lax.ne(a[hi], a[lo]) if typeof(a).dtype == np.bool_ else a[hi] - a[lo]
    return a


def atleast_1d(*arys):
    """Each argument as an array of rank >= 1 (a list when several)."""
    outs = [_atleast(a, 1) for a in arys]
    return outs[0] if len(outs) == 1 else outs


def atleast_2d(*arys):
    """Each argument as an array of rank >= 2: ``x`` becomes ``x[None]``."""
    outs = [_atleast(a, 2) for a in arys]
    return outs[0] if len(outs) == 1 else outs


def atleast_3d(*arys):
    """Each argument as an array of rank >= 3 (numpy's placement: ``(1, n, 1)`` for a vector)."""
    outs = [_atleast(a, 3) for a in arys]
    return outs[0] if len(outs) == 1 else outs


def _atleast(a, k):
    a = _as_array(a)
    nd = typeof(a).ndim
    if nd >= k:
        return a
    if k == 3 and nd == 1:
        return expand_dims(expand_dims(a, 0), 2)
    if k == 3 and nd == 2:
        return expand_dims(a, 2)
    for _ in range(k - nd):
        a = expand_dims(a, 0)
    return a


def _triangle(name, keep):
    def fn(m, k=0):
        from .ufuncs import where
        m = _as_array(m)
        a = typeof(m)
        if a.ndim < 2:
            raise ValueError(f"{name}: the input must have at least 2 dimensions, got {a.ndim}")
        shape = a.shape[-2:]
        rows = lax.broadcasted_iota(np.int64, shape, 0)
        cols = lax.broadcasted_iota(np.int64, shape, 1)
        mask = keep(lax.sub(cols, rows), int(k))
        return where(mask, m, a.dtype.type(0))
    fn.__name__ = name
    fn.__doc__ = f"``{name}``: the elements {'on and below' if name == 'tril' else 'on and above'} the k-th diagonal."
    return fn


tril = _triangle("tril", lambda d, k: lax.le(d, np.int64(k)))
triu = _triangle("triu", lambda d, k: lax.ge(d, np.int64(k)))
