"""Samplers on top of ``random_bits``: JAX's algorithms, so that the same key, shape and dtype
give JAX's numbers (bit for bit compiled; see ``doc/random.md`` for the eager transcendental
functions). Defaults follow JAX with ``jax_enable_x64`` (dynjax's default float is float64,
its default int int64)."""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core.avals import canonical_dtype, finfo
from ..core.trace import Tracer, typeof
from .keys import canonical_shape, check_key, random_bits, split

__all__ = ["uniform", "normal", "randint", "bernoulli", "gumbel", "categorical", "exponential",
           "laplace", "logistic", "truncated_normal", "orthogonal"]

_UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
         64: np.dtype(np.uint64)}


def _dtype_of(x):
    return np.dtype(typeof(x).dtype)


def _shape_of(x):
    return tuple(typeof(x).shape)


def _float_dtype(name, dtype):
    dt = canonical_dtype(float if dtype is None else dtype)
    if dt.kind != "f" and dt != np.dtype(jnp.bfloat16):
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dt}")
    return dt


def _as(x, dtype):
    """``x`` (a Python / numpy value or a tracer) converted to ``dtype``."""
    if isinstance(x, Tracer):
        return lax.convert_element_type(x, dtype)
    return np.asarray(x).astype(dtype)


def _check_param_shape(name, shape, *params):
    """JAX's rule: the parameters broadcast to ``shape`` and the result is ``shape``."""
    for p in params:
        ps = _shape_of(p)
        if len(ps) > len(shape) or any(
                not (isinstance(a, int) and a == 1) and not (a is b or (isinstance(a, int) and isinstance(b, int) and a == b))
                for a, b in zip(ps[::-1], shape[::-1])):
            raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                             f"argument, and the result of broadcasting the shapes must equal the "
                             f"shape argument, but got {ps} for shape argument {shape}.")


def _bcast(x, shape):
    """A scalar or array parameter broadcast to ``shape``."""
    xs = _shape_of(x)
    if xs == tuple(shape):
        return x
    nd = len(shape)
    return jnp.broadcast_to(x, shape) if xs else lax.broadcast_in_dim(x, shape, ()) if nd else x


# ----------------------------------------------------------------------------------------------
def _uniform(key, shape, dtype, minval, maxval):
    info = finfo(dtype)
    nbits, nmant = info.bits, info.nmant
    rng_bits = 8 if nmant < 8 else nbits
    bits = random_bits(key, rng_bits, shape)
    if rng_bits != nbits:
        bits = lax.convert_element_type(bits, _UINT[nbits])
    mant = lax.shift_right(bits, np.asarray(rng_bits - nmant, _UINT[nbits]))
    # m * 2**-nmant is exactly JAX's bitcast(m | bits(1.0)) - 1.0 (no rounding in either)
    floats = lax.mul(lax.convert_element_type(mant, dtype), np.asarray(2.0 ** -nmant, dtype))
    minval = _as(minval, dtype)
    maxval = _as(maxval, dtype)
    _check_param_shape("uniform", shape, minval, maxval)
    lo, hi = _bcast(minval, shape), _bcast(maxval, shape)
    return lax.max(lo, lax.add(lax.mul(floats, lax.sub(hi, lo)), lo))


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform floats in ``[minval, maxval)``."""
    key = check_key("uniform", key)
    dtype = _float_dtype("uniform", dtype)
    shape = canonical_shape("uniform", shape)
    return _uniform(key, shape, dtype, minval, maxval)


def _normal_real(key, shape, dtype):
    lo = np.nextafter(np.asarray(-1.0, dtype), np.asarray(0.0, dtype))
    u = _uniform(key, shape, dtype, lo, np.asarray(1.0, dtype))
    return lax.mul(np.asarray(np.sqrt(2), dtype), lax.erf_inv(u))


def normal(key, shape=(), dtype=None):
    """Standard normal values (complex dtypes: independent real and imaginary parts of
    variance 1/2 each)."""
    key = check_key("normal", key)
    dt = canonical_dtype(float if dtype is None else dtype)
    shape = canonical_shape("normal", shape)
    if dt.kind == "c":
        real = np.dtype(np.float32 if dt == np.complex64 else np.float64)
        k_re, k_im = _two(key)
        re = _normal_real(k_re, shape, real)
        im = _normal_real(k_im, shape, real)
        sqrt2 = np.asarray(np.sqrt(2), real)
        return lax.complex(lax.div(re, sqrt2), lax.div(im, sqrt2))
    if dt.kind != "f" and dt != np.dtype(jnp.bfloat16):
        raise ValueError(f"dtype argument to `normal` must be a float or complex dtype, got {dt}")
    return _normal_real(key, shape, dt)


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Normal values truncated to ``(lower, upper)`` (inverse-CDF sampling, clamped into the
    open interval)."""
    key = check_key("truncated_normal", key)
    dtype = _float_dtype("truncated_normal", dtype)
    lower, upper = _as(lower, dtype), _as(upper, dtype)
    if shape is None:
        shape = tuple(np.broadcast_shapes(_shape_of(lower), _shape_of(upper)))
    shape = canonical_shape("truncated_normal", shape)
    _check_param_shape("truncated_normal", shape, lower, upper)
    sqrt2 = np.asarray(np.sqrt(2), dtype)
    a = lax.erf(lax.div(lower, sqrt2))
    b = lax.erf(lax.div(upper, sqrt2))
    u = _uniform(key, shape, dtype, a, b)
    out = lax.mul(sqrt2, lax.erf_inv(u))
    lo = lax.nextafter(lower, lax.broadcast_in_dim(np.asarray(np.inf, dtype), _shape_of(lower), ()) if _shape_of(lower) else np.asarray(np.inf, dtype))
    hi = lax.nextafter(upper, lax.broadcast_in_dim(np.asarray(-np.inf, dtype), _shape_of(upper), ()) if _shape_of(upper) else np.asarray(-np.inf, dtype))
    return jnp.clip(out, lo, hi)


def _two(key):
    keys = split(key, 2)
    return keys[0], keys[1]


# ----------------------------------------------------------------------------------------------
def _clip_convert(val, dtype):
    """``val`` (integer) converted to ``dtype`` with clipping instead of wrapping."""
    vd = _dtype_of(val)
    lo = max(int(np.iinfo(dtype).min), int(np.iinfo(vd).min))
    hi = min(int(np.iinfo(dtype).max), int(np.iinfo(vd).max))
    shape = _shape_of(val)
    full = (lambda c: lax.broadcast_in_dim(np.asarray(c, vd), shape, ())) if shape else (lambda c: np.asarray(c, vd))
    return lax.convert_element_type(lax.min(lax.max(val, full(lo)), full(hi)), dtype)


def _xla_rem(a, b):
    """Unsigned remainder with XLA's ``x % 0 == x``."""
    zero = lax.eq(b, np.zeros((), _dtype_of(b)))
    safe = lax.select(zero, lax.broadcast_in_dim(np.ones((), _dtype_of(b)), _shape_of(b), ()), b)
    return lax.select(zero, a, lax.rem(a, safe))


def _int_param(x):
    if isinstance(x, Tracer):
        a = typeof(x)
        return x if np.issubdtype(a.dtype, np.integer) else lax.convert_element_type(x, np.int64)
    arr = np.asarray(x)
    if isinstance(x, (bool, np.bool_)) or arr.dtype == np.bool_:
        return arr.astype(np.int64)
    if np.issubdtype(arr.dtype, np.integer):
        if isinstance(x, int):
            return np.asarray(x, np.int64) if -2 ** 63 <= x < 2 ** 63 else np.asarray(x, np.uint64)
        return arr
    return arr.astype(np.int64)


def _randint(key, shape, minval, maxval, dtype):
    minval, maxval = _int_param(minval), _int_param(maxval)
    _check_param_shape("randint", shape, minval, maxval)
    dmax = _clip_convert(np.asarray(np.iinfo(dtype).max, dtype), _dtype_of(maxval))
    out_of_range = lax.gt(maxval, dmax)
    minval = _bcast(_clip_convert(minval, dtype), shape)
    maxval = _bcast(_clip_convert(maxval, dtype), shape)
    out_of_range = _bcast(out_of_range, shape)
    nbits = np.dtype(dtype).itemsize * 8
    udt = _UINT[nbits]
    k1, k2 = _two(key)
    higher, lower = random_bits(k1, nbits, shape), random_bits(k2, nbits, shape)
    span = lax.convert_element_type(lax.sub(maxval, minval), udt)
    ones = lax.broadcast_in_dim(np.ones((), udt), shape, ()) if shape else np.ones((), udt)
    empty = lax.le(maxval, minval)
    span = lax.select(empty, ones, span)
    span = lax.select(lax.bitwise_and(out_of_range, lax.bitwise_not(empty)), lax.add(span, ones), span)
    mult = _xla_rem(lax.broadcast_in_dim(np.asarray(2 ** (nbits // 2), udt), shape, ()) if shape
                    else np.asarray(2 ** (nbits // 2), udt), span)
    mult = _xla_rem(lax.mul(mult, mult), span)
    offset = lax.add(lax.mul(_xla_rem(higher, span), mult), _xla_rem(lower, span))
    offset = _xla_rem(offset, span)
    return lax.add(minval, lax.convert_element_type(offset, dtype))


def randint(key, shape, minval, maxval, dtype=None):
    """Uniform integers in ``[minval, maxval)`` (``minval`` everywhere ``maxval <= minval``)."""
    key = check_key("randint", key)
    dtype = canonical_dtype(int if dtype is None else dtype)
    if dtype.kind not in "iu":
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
    shape = canonical_shape("randint", shape)
    info = np.iinfo(dtype)
    if info.bits < 32:
        i32 = np.dtype(np.int32)

        def narrow(v, hi):
            v = _int_param(v)
            v = lax.convert_element_type(v, i32) if isinstance(v, Tracer) else np.asarray(v).astype(i32)
            vs = _shape_of(v)
            full = (lambda c: lax.broadcast_in_dim(np.asarray(c, i32), vs, ())) if vs else (lambda c: np.asarray(c, i32))
            return lax.min(lax.max(v, full(int(info.min))), full(hi))
        minval = narrow(minval, int(info.max))
        maxval = narrow(maxval, int(info.max) + 1)
        return lax.convert_element_type(_randint(key, shape, minval, maxval, i32), dtype)
    return _randint(key, shape, minval, maxval, dtype)


# ----------------------------------------------------------------------------------------------
def bernoulli(key, p=0.5, shape=None, mode="low"):
    """Booleans that are True with probability ``p``."""
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    key = check_key("bernoulli", key)
    p = p if isinstance(p, Tracer) else np.asarray(p)
    dtype = _dtype_of(p)
    if dtype.kind != "f" and dtype != np.dtype(jnp.bfloat16):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
    shape = _shape_of(p) if shape is None else canonical_shape("bernoulli", shape)
    if mode == "high":
        u = _uniform(key, (2,) + tuple(shape), dtype, 0.0, 1.0)
        u1, u2 = u[0], u[1]
        u2 = lax.mul(u2, np.asarray(2.0 ** -finfo(dtype).nmant, dtype))
        return lax.lt(u2, lax.sub(_bcast(p, shape), u1))
    return lax.lt(_uniform(key, shape, dtype, 0.0, 1.0), _bcast(p, shape))


def gumbel(key, shape=(), dtype=None, mode=None):
    """Standard Gumbel values (``mode='low'``, JAX's default; ``'high'`` uses two uniforms)."""
    key = check_key("gumbel", key)
    dtype = _float_dtype("gumbel", dtype)
    shape = canonical_shape("gumbel", shape)
    mode = "low" if mode is None else mode
    if mode not in ("high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    info = finfo(dtype)
    if mode == "high":
        u = _uniform(key, (2,) + tuple(shape), dtype, 0.0, 1.0)
        high, low = u[0], u[1]
        small = lax.add(lax.add(high, lax.mul(np.asarray(2.0 ** -info.nmant, dtype), low)),
                        np.asarray(info.tiny, dtype))
        x = lax.select(lax.ge(high, np.asarray(0.5, dtype)), high, small)
        return lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(x)))))
    u = _uniform(key, shape, dtype, np.asarray(info.tiny, dtype), np.asarray(1.0, dtype))
    return lax.neg(lax.log(lax.neg(lax.log(u))))


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    """Indices drawn from the categorical distributions of ``logits`` along ``axis`` (the
    Gumbel-max trick; without replacement, the Gumbel top-k trick)."""
    key = check_key("categorical", key)
    logits = jnp.asarray(logits)
    ls = _shape_of(logits)
    if not ls:
        raise ValueError("categorical: logits must have at least one dimension")
    axis = axis % len(ls) if -len(ls) <= axis < len(ls) else None
    if axis is None:
        raise ValueError(f"categorical: axis out of range for logits of shape {ls}")
    batch = ls[:axis] + ls[axis + 1:]
    shape = batch if shape is None else canonical_shape("categorical", shape)
    if len(shape) < len(batch):
        raise ValueError(f"categorical: shape {shape} must end with the batch shape {batch}")
    prefix = tuple(shape[:len(shape) - len(batch)])
    dtype = _dtype_of(logits)
    if replace:
        gshape = prefix + tuple(shape[len(prefix):len(prefix) + axis]) + (ls[axis],) + tuple(shape[len(prefix) + axis:])
        g = gumbel(key, gshape, dtype, mode=mode)
        lg = logits
        if prefix:
            lg = lax.broadcast_in_dim(logits, gshape, tuple(range(len(prefix), len(gshape))))
        return jnp.argmax(lax.add(g, lg), axis=len(prefix) + axis)
    k = math.prod(prefix)
    if isinstance(ls[axis], int) and k > ls[axis]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of "
                         f"categories ({ls[axis]}).")
    scores = lax.add(logits, gumbel(key, ls, dtype, mode=mode))
    idx = _top_k_indices(jnp.moveaxis(scores, axis, -1), k)     # batch + (k,)
    return lax.convert_element_type(jnp.moveaxis(idx, -1, 0).reshape(shape), np.int32)  # lax.top_k's int32


def _top_k_indices(x, k):
    """The indices of the ``k`` largest values along the last axis, largest first, the lower
    index first among equals (``lax.top_k``)."""
    shape = _shape_of(x)
    iota = lax.broadcasted_iota(np.int64, shape, len(shape) - 1)
    # sort by descending value, then ascending index: keys (-x, iota)
    _, _, idx = lax.sort((lax.neg(x), iota, iota), dimension=len(shape) - 1, num_keys=2)
    if isinstance(k, int) and isinstance(shape[-1], int) and k == shape[-1]:
        return idx
    return jnp.take(idx, lax.iota(np.int64, k), axis=len(shape) - 1)


def exponential(key, shape=(), dtype=None):
    """Standard exponential values: ``-log1p(-u)``."""
    key = check_key("exponential", key)
    dtype = _float_dtype("exponential", dtype)
    shape = canonical_shape("exponential", shape)
    u = _uniform(key, shape, dtype, 0.0, 1.0)
    return lax.neg(lax.log1p(lax.neg(u)))


def laplace(key, shape=(), dtype=None):
    """Standard Laplace values."""
    key = check_key("laplace", key)
    dtype = _float_dtype("laplace", dtype)
    shape = canonical_shape("laplace", shape)
    u = _uniform(key, shape, dtype, np.asarray(-1.0 + finfo(dtype).epsneg, dtype), 1.0)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def logistic(key, shape=(), dtype=None):
    """Standard logistic values: ``log(u) - log1p(-u)``."""
    key = check_key("logistic", key)
    dtype = _float_dtype("logistic", dtype)
    shape = canonical_shape("logistic", shape)
    x = _uniform(key, shape, dtype, np.asarray(finfo(dtype).tiny, dtype), 1.0)
    return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


def orthogonal(key, n, shape=(), dtype=None, m=None):
    """Matrices with orthonormal columns (or rows when ``n < m``), uniformly distributed: the
    Q of a QR decomposition of normal values, its columns' signs fixed by R's diagonal (JAX's
    algorithm; Q comes from LAPACK, so it agrees with JAX to rounding, not bit for bit)."""
    key = check_key("orthogonal", key)
    dtype = _float_dtype("orthogonal", dtype)
    m = n if m is None else m
    shape = canonical_shape("orthogonal", shape)
    if not isinstance(n, int) or not isinstance(m, int):
        raise TypeError("orthogonal: n and m must be Python ints")
    z = normal(key, tuple(shape) + (max(n, m), min(n, m)), dtype)
    q, r = jnp.linalg.qr(z)
    d = jnp.diagonal(r, axis1=-2, axis2=-1)
    x = q * jnp.expand_dims(jnp.sign(d), -2)
    return jnp.swapaxes(x, -1, -2) if n < m else x
