"""Transpose rules of the ``fft`` primitive (``dynjax.lax.fft``), imported by
``transforms/transpose.py``.

The transforms are linear maps; their transposes (not adjoints, as for ``dot_general``; JAX's
convention for complex cotangents) are:

* ``FFT`` / ``IFFT``: the DFT matrix is symmetric, so the transpose is the same transform;
* ``RFFT`` (real ``x`` of ``N`` points to the first ``n // 2 + 1`` frequencies): the real part
  of the FFT of the zero-extended cotangent, computed without the zero extension as
  ``N * irfft(conj(ct) * w)``, ``w`` being 1 at the frequencies 0 and ``n / 2`` and 1/2
  elsewhere (irfft doubles the others and reads only the real part of those two);
* ``IRFFT``: ``conj(rfft(ct) * m / N)``, ``m`` being 1 at the frequencies 0 and ``n / 2`` and
  2 elsewhere (every other frequency stands for itself and its mirror image).

``n`` is the last length, ``N`` the product of the lengths; both may be dynamic dims.
"""
from __future__ import annotations

import numpy as np

from ..core.avals import real_dtype
from ..core.primitive import transpose_rules
from ..core.trace import typeof
from ..lax import api as lax
from ..lax.fft import FftType, fft_p
from .transpose import is_undefined


def _points(shape, k, dtype):
    """The product of the trailing ``k`` dims as a scalar of ``dtype`` (traced when dynamic)."""
    static, dyn = 1, []
    for d in shape[len(shape) - k:]:
        if isinstance(d, int):
            static *= d
        else:
            dyn.append(d)
    if not dyn:
        return np.asarray(static, dtype)
    v = dyn[0]
    for d in dyn[1:]:
        v = lax.mul(v, d)
    if static != 1:
        v = lax.mul(v, np.int64(static))
    return lax.convert_element_type(v, dtype)


def _edge_weights(shape, n, inner, outer, dtype):
    """``inner`` at the frequencies 0 and ``n / 2`` of the last axis (``n`` the real length),
    ``outer`` elsewhere, broadcast to ``shape``."""
    k = lax.broadcasted_iota(np.int64, shape, len(shape) - 1)
    two_k = lax.mul(k, np.int64(2))
    nn = np.int64(n) if isinstance(n, int) else n
    edge = lax.bitwise_or(lax.eq(k, np.int64(0)), lax.eq(two_k, lax.broadcast_in_dim(nn, shape, ())
                                                          if shape else nn))
    ones = lax.broadcast_in_dim(np.asarray(inner, dtype), shape, ())
    others = lax.broadcast_in_dim(np.asarray(outer, dtype), shape, ())
    return lax.select(edge, ones, others)


def _fft_t(ct, x, *sizes, fft_type, fft_lengths):
    rest = [None] * len(sizes)
    if ct is None or not is_undefined(x):
        return [None] + rest
    t = FftType(int(fft_type))
    k = len(fft_lengths)
    if t in (FftType.FFT, FftType.IFFT):
        return [fft_p.bind(ct, *sizes, fft_type=t, fft_lengths=fft_lengths)] + rest
    ca = typeof(ct)
    if t == FftType.RFFT:
        xa = x.aval                       # real, N points
        n = xa.shape[-1]
        w = _edge_weights(ca.shape, n, 1.0, 0.5, real_dtype(ca.dtype))
        d = lax.mul(lax.conj(ct), lax.convert_element_type(w, ca.dtype))
        back = fft_p.bind(d, *([] if isinstance(n, int) else [n]), fft_type=FftType.IRFFT,
                          fft_lengths=fft_lengths)
        return [lax.mul(back, _points(xa.shape, k, xa.dtype))] + rest
    # IRFFT: ct is real with the output's shape
    xa = x.aval                           # complex, n // 2 + 1 frequencies
    n = ca.shape[-1]
    f = fft_p.bind(ct, *([] if isinstance(xa.shape[-1], int) else [xa.shape[-1]]),
                   fft_type=FftType.RFFT, fft_lengths=fft_lengths)
    m = _edge_weights(xa.shape, n, 1.0, 2.0, ca.dtype)
    scale = lax.div(lax.convert_element_type(m, xa.dtype),
                    lax.convert_element_type(_points(ca.shape, k, ca.dtype), xa.dtype))
    return [lax.conj(lax.mul(f, scale))] + rest


transpose_rules[fft_p] = _fft_t
