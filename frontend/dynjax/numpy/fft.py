"""``dynjax.numpy.fft``: numpy's (and JAX's) discrete Fourier transforms on the ``fft`` primitive.

``fft ifft rfft irfft hfft ihfft`` (one axis), ``fft2 ifft2 rfft2 irfft2`` (two),
``fftn ifftn rfftn irfftn`` (any number), ``fftfreq rfftfreq`` and ``fftshift ifftshift``,
with JAX's signatures and dtype rules: integers and bools become ``float64`` /
``complex128``, ``float32`` gives ``complex64`` (``float16`` too), ``rfft`` of complex data is
a ``ValueError``. ``norm`` is ``"backward"`` (``None``), ``"ortho"`` or ``"forward"``.

Sizes may be dynamic: a transformed axis may be an abstracted axis, ``n`` / ``s`` may be traced
sizes, and ``n=`` with a static int truncates or zero-pads a dynamic axis to ``n``. The
transforms of more than three axes are done three at a time (the transform is separable).
An empty axis gives an empty (zero) result, as in JAX.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import (canonical_dtype, complex_dtype, dtype_category, float32, float64,
                          real_dtype, same_dim)
from ..core.trace import Tracer, typeof
from ..lax.api import canonicalize_dim
from ..lax.fft import FftType
from ..lax.fft import fft as _lax_fft

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = (None, "backward", "ortho", "forward")


# ----------------------------------------------------------------------------------------------
# operands, axes, sizes
# ----------------------------------------------------------------------------------------------
def _jnp():
    from .. import numpy as jnp
    return jnp


def _check_norm(name, norm):
    if norm not in _NORMS:
        raise ValueError(f"{name}: invalid norm value {norm!r}; should be None, \"backward\", "
                         "\"ortho\" or \"forward\"")


def _as_inexact(name, a, real: bool):
    """``a`` as an array of the transform's input dtype, complex (``real=False``) or real, by
    JAX's rules: 64-bit integers give 64-bit floats, narrower integers, bools and 16-bit floats
    32-bit ones; a 16-bit float input of a real transform (``rfft``) is an error, as in JAX."""
    jnp = _jnp()
    a = jnp.asarray(a)
    dt = typeof(a).dtype
    cat = dtype_category(dt)
    if real:
        if cat == "complex":
            raise ValueError(f"{name}: only real valued inputs are supported, got {dt.name}")
        if cat == "float" and dt.itemsize < 4:
            raise ValueError(f"{name}: {dt.name} is not supported (XLA's FFT works in float32 "
                             "or float64; convert the input)")
    wide = dt.itemsize >= 8 if cat != "complex" else dt.itemsize >= 16
    part = float64 if wide else float32
    want = part if real else complex_dtype(part)
    return a if dt == want else lax.convert_element_type(a, want)


def _axes(name, ndim, axes):
    out = []
    for ax in axes:
        if not isinstance(ax, (int, np.integer)) or isinstance(ax, bool):
            raise TypeError(f"{name}: axes must be ints, got {ax!r}")
        if not -ndim <= int(ax) < ndim:
            raise ValueError(f"{name}: axis {int(ax)} is out of bounds for an array of rank {ndim}")
        out.append(int(ax) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axes {tuple(axes)}")
    return out


def _size(name, n, what="n"):
    if isinstance(n, Tracer):
        return canonicalize_dim(n, what)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"{name}: {what} must be an int, got {n!r}")
    if int(n) < 1:
        raise ValueError(f"{name}: invalid number of data points ({int(n)}) specified")
    return int(n)


def _resize(x, axis, n):
    """``x`` with axis ``axis`` truncated or zero-padded to ``n`` (a dim)."""
    shape = typeof(x).shape
    d = shape[axis]
    if same_dim(d, n):
        return x
    ndim = len(shape)
    if isinstance(d, int) and isinstance(n, int):
        if n < d:
            return lax.slice(x, [0] * ndim, [n if i == axis else None for i in range(ndim)])
        widths = [(0, n - d) if i == axis else (0, 0) for i in range(ndim)]
        return _jnp().pad(x, widths)
    # a dynamic size on either side: append n zeros, then take the first n
    jnp = _jnp()
    zshape = tuple(n if i == axis else s for i, s in enumerate(shape))
    ext = jnp.concatenate([x, jnp.zeros(zshape, typeof(x).dtype)], axis)
    return lax.api.dynamic_slice(ext, [0] * ndim, [n if i == axis else s for i, s in enumerate(shape)])


def _move_to_end(x, axes):
    ndim = typeof(x).ndim
    perm = [i for i in range(ndim) if i not in axes] + list(axes)
    if perm == list(range(ndim)):
        return x, None
    return lax.transpose(x, perm), perm


def _move_back(x, perm):
    if perm is None:
        return x
    return lax.transpose(x, [int(i) for i in np.argsort(perm)])


def _points(dims):
    """The product of ``dims`` (ints and traced sizes): an int or a traced i64 scalar."""
    static, dyn = 1, []
    for d in dims:
        if isinstance(d, int):
            static *= d
        else:
            dyn.append(d)
    if not dyn:
        return static
    v = dyn[0]
    for d in dyn[1:]:
        v = lax.mul(v, d)
    return lax.mul(v, np.int64(static)) if static != 1 else v


def _scale(x, points, norm, inverse):
    """Apply ``norm``: the transform computed is unscaled (forward) or divided by ``points``
    (inverse, numpy's "backward")."""
    if norm in (None, "backward"):
        return x
    rdt = real_dtype(typeof(x).dtype)
    if isinstance(points, int):
        p = np.asarray(points, rdt)
        factor = {("ortho", False): 1 / np.sqrt(p) if points else p, ("ortho", True): np.sqrt(p),
                  ("forward", False): 1 / p if points else p, ("forward", True): p}[(norm, inverse)]
        factor = np.asarray(factor, rdt)
    else:
        p = lax.convert_element_type(points, rdt)
        root = lax.sqrt(p)
        factor = {("ortho", False): lax.rsqrt(p), ("ortho", True): root,
                  ("forward", False): lax.div(np.asarray(1, rdt), p), ("forward", True): p}[(norm, inverse)]
    if np.dtype(typeof(x).dtype).kind == "c":
        factor = lax.convert_element_type(factor, typeof(x).dtype)
    return lax.mul(x, factor)


# ----------------------------------------------------------------------------------------------
# the n-dimensional transforms
# ----------------------------------------------------------------------------------------------
def _chunks(axes):
    """Groups of at most three axes (the primitive's limit), the last group last."""
    axes = list(axes)
    out = []
    while axes:
        out.insert(0, axes[-3:])
        axes = axes[:-3]
    return out


def _plan(name, a, s, axes, default_last=None):
    """The transformed axes and their lengths (``s``, or the axis sizes; ``default_last`` for
    the last one of ``irfftn``)."""
    ndim = typeof(a).ndim
    if s is not None:
        s = list(s) if isinstance(s, (tuple, list)) else [s]
    if axes is None:
        if s is None:
            axes = list(range(ndim))
        else:
            axes = list(range(ndim - len(s), ndim))
            if len(s) > ndim:
                raise ValueError(f"{name}: s has {len(s)} entries for an array of rank {ndim}")
    else:
        axes = list(axes) if isinstance(axes, (tuple, list)) else [axes]
    axes = _axes(name, ndim, axes)
    if s is not None and len(s) != len(axes):
        raise ValueError(f"{name}: s and axes must have the same length, got {len(s)} and {len(axes)}")
    shape = typeof(a).shape
    if s is None:
        lengths = [shape[ax] for ax in axes]
        if default_last is not None and axes:
            lengths[-1] = default_last(shape[axes[-1]])
    else:
        what = "n" if name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft") else "s"
        lengths = [_size(name, d, what) for d in s]
    return axes, lengths


def _c2c(name, a, s, axes, norm, inverse):
    _check_norm(name, norm)
    x = _as_inexact(name, a, real=False)
    axes, lengths = _plan(name, x, s, axes)
    if not axes:
        return x
    for ax, n in zip(axes, lengths):
        x = _resize(x, ax, n)
    x, perm = _move_to_end(x, axes)
    k = len(axes)
    t = FftType.IFFT if inverse else FftType.FFT
    ndim = typeof(x).ndim
    for group in _chunks(range(ndim - k, ndim)):
        x, p = _move_to_end(x, group)
        x = _lax_fft(x, t, typeof(x).shape[ndim - len(group):])
        x = _move_back(x, p)
    return _scale(_move_back(x, perm), _points(lengths), norm, inverse)


def _r2c(name, a, s, axes, norm):
    _check_norm(name, norm)
    x = _as_inexact(name, a, real=True)
    axes, lengths = _plan(name, x, s, axes)
    if not axes:
        raise ValueError(f"{name}: needs at least one axis")
    for ax, n in zip(axes, lengths):
        x = _resize(x, ax, n)
    x, perm = _move_to_end(x, axes)
    ndim = typeof(x).ndim
    k = len(axes)
    groups = _chunks(range(ndim - k, ndim))
    last = groups[-1]
    x = _lax_fft(x, FftType.RFFT, typeof(x).shape[ndim - len(last):])
    for group in groups[:-1]:
        x, p = _move_to_end(x, group)
        x = _lax_fft(x, FftType.FFT, typeof(x).shape[ndim - len(group):])
        x = _move_back(x, p)
    return _scale(_move_back(x, perm), _points(lengths), norm, False)


def _half(n):
    return n // 2 + 1 if isinstance(n, int) else lax.add(lax.div(n, np.int64(2)), np.int64(1))


def _default_real_length(m):
    """irfft's default output length ``2 (m - 1)`` for ``m`` frequencies."""
    if isinstance(m, int):
        if m < 1:
            raise ValueError(f"irfft: invalid number of data points ({2 * (m - 1)}) specified")
        return 2 * (m - 1)
    return lax.mul(lax.sub(m, np.int64(1)), np.int64(2))


def _c2r(name, a, s, axes, norm):
    _check_norm(name, norm)
    x = _as_inexact(name, a, real=False)
    axes, lengths = _plan(name, x, s, axes, default_last=_default_real_length)
    if not axes:
        raise ValueError(f"{name}: needs at least one axis")
    for ax, n in zip(axes[:-1], lengths[:-1]):
        x = _resize(x, ax, n)
    n_out = lengths[-1]
    x = _resize(x, axes[-1], _half(n_out))
    x, perm = _move_to_end(x, axes)
    ndim = typeof(x).ndim
    k = len(axes)
    groups = _chunks(range(ndim - k, ndim))
    for group in groups[:-1]:
        x, p = _move_to_end(x, group)
        x = _lax_fft(x, FftType.IFFT, typeof(x).shape[ndim - len(group):])
        x = _move_back(x, p)
    last = groups[-1]
    sizes = list(typeof(x).shape[ndim - len(last):-1]) + [n_out]
    x = _lax_fft(x, FftType.IRFFT, sizes)
    return _scale(_move_back(x, perm), _points(lengths), norm, True)


def _one_axis(n, axis):
    return (None if n is None else [n]), [axis]


# ----------------------------------------------------------------------------------------------
# the public functions
# ----------------------------------------------------------------------------------------------
def fft(a, n=None, axis=-1, norm=None):
    """The one-dimensional discrete Fourier transform along ``axis`` (``n`` points: the axis
    truncated or zero-padded)."""
    return _c2c("fft", a, *_one_axis(n, axis), norm, False)


def ifft(a, n=None, axis=-1, norm=None):
    """The one-dimensional inverse discrete Fourier transform."""
    return _c2c("ifft", a, *_one_axis(n, axis), norm, True)


def rfft(a, n=None, axis=-1, norm=None):
    """The transform of real data: the ``n // 2 + 1`` non-negative frequencies."""
    return _r2c("rfft", a, *_one_axis(n, axis), norm)


def irfft(a, n=None, axis=-1, norm=None):
    """The inverse of ``rfft``: ``n`` real points (default ``2 (m - 1)`` for ``m`` frequencies)."""
    return _c2r("irfft", a, *_one_axis(n, axis), norm)


def _swap(norm):
    return {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}[norm]


def hfft(a, n=None, axis=-1, norm=None):
    """The transform of a Hermitian-symmetric signal given by its first half: real output of
    ``n`` points (default ``2 (m - 1)``)."""
    _check_norm("hfft", norm)
    return _c2r("hfft", _jnp().conj(_as_inexact("hfft", a, real=False)), *_one_axis(n, axis), _swap(norm))


def ihfft(a, n=None, axis=-1, norm=None):
    """The inverse of ``hfft``: the ``n // 2 + 1`` first frequencies of real data's inverse
    transform."""
    _check_norm("ihfft", norm)
    return _jnp().conj(_r2c("ihfft", a, *_one_axis(n, axis), _swap(norm)))


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """The two-dimensional transform (``fftn`` over ``axes``)."""
    return _c2c("fft2", a, s, axes, norm, False)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """The two-dimensional inverse transform."""
    return _c2c("ifft2", a, s, axes, norm, True)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """The two-dimensional transform of real data."""
    return _r2c("rfft2", a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """The inverse of ``rfft2``."""
    return _c2r("irfft2", a, s, axes, norm)


def fftn(a, s=None, axes=None, norm=None):
    """The n-dimensional transform over ``axes`` (all axes, or the last ``len(s)``)."""
    return _c2c("fftn", a, s, axes, norm, False)


def ifftn(a, s=None, axes=None, norm=None):
    """The n-dimensional inverse transform."""
    return _c2c("ifftn", a, s, axes, norm, True)


def rfftn(a, s=None, axes=None, norm=None):
    """The n-dimensional transform of real data (the last axis halved)."""
    return _r2c("rfftn", a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    """The inverse of ``rfftn`` (the last output length defaults to ``2 (m - 1)``)."""
    return _c2r("irfftn", a, s, axes, norm)


# ----------------------------------------------------------------------------------------------
# frequencies and shifts
# ----------------------------------------------------------------------------------------------
def _freq_dtype(dtype):
    if dtype is None:
        return float64
    dt = canonical_dtype(dtype)
    if dtype_category(dt) not in ("float", "complex"):
        raise ValueError(f"fftfreq: dtype must be a floating-point dtype, got {dt.name}")
    return dt


def _freq_scale(k, n, d, dt):
    jnp = _jnp()
    kf = lax.convert_element_type(k, dt)
    nf = np.asarray(n, dt) if isinstance(n, int) else lax.convert_element_type(n, dt)
    return jnp.divide(kf, jnp.multiply(jnp.asarray(d, dt), nf))


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies ``[0, 1, ..., -(n // 2), ..., -1] / (d n)`` (``n`` may be traced)."""
    if device is not None:
        raise NotImplementedError("fftfreq: device= is not supported (dynjax runs on the CPU)")
    dt = _freq_dtype(dtype)
    n = _freq_n("fftfreq", n)
    k = lax.iota(np.int64, n)
    half = (n + 1) // 2 if isinstance(n, int) else lax.div(lax.add(n, np.int64(1)), np.int64(2))
    k = _jnp().where(lax.lt(k, half), k, lax.sub(k, n if not isinstance(n, int) else np.int64(n)))
    return _freq_scale(k, n, d, dt)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of ``rfft``: ``[0, 1, ..., n // 2] / (d n)``."""
    if device is not None:
        raise NotImplementedError("rfftfreq: device= is not supported (dynjax runs on the CPU)")
    dt = _freq_dtype(dtype)
    n = _freq_n("rfftfreq", n)
    k = lax.iota(np.int64, _half(n))
    return _freq_scale(k, n, d, dt)


def _freq_n(name, n):
    if isinstance(n, Tracer):
        return canonicalize_dim(n, "n")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise ValueError(f"{name}: n should be an integer, got {n!r}")
    if int(n) < 0:
        raise ValueError(f"{name}: n must be non-negative, got {int(n)}")
    return int(n)


def _shift(name, x, axes, sign):
    jnp = _jnp()
    x = jnp.asarray(x)
    shape = typeof(x).shape
    if axes is None:
        axes = list(range(len(shape)))
    elif isinstance(axes, (int, np.integer)):
        axes = [axes]
    axes = _axes(name, len(shape), axes)
    for ax in axes:
        d = shape[ax]
        half = d // 2 if isinstance(d, int) else lax.div(d, np.int64(2))
        if sign < 0:
            half = -half if isinstance(half, int) else lax.neg(half)
        x = jnp.roll(x, half, ax)
    return x


def fftshift(x, axes=None):
    """The zero frequency moved to the middle: a roll by ``n // 2`` along each axis."""
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
    """The inverse of ``fftshift``: a roll by ``-(n // 2)``."""
    return _shift("ifftshift", x, axes, -1)
