"""The fast Fourier transform primitive ``fft`` and ``dynjax.lax.fft``.

``fft[fft_type, fft_lengths] x *sizes`` transforms the trailing ``len(fft_lengths)`` axes of
``x`` (every leading axis is a batch axis), as XLA's ``Fft`` op:

* ``FFT`` / ``IFFT``: complex to complex, the same shape; ``IFFT`` divides by the product of
  the lengths (numpy's "backward" normalization);
* ``RFFT``: real to complex, the last axis of length ``n`` becomes ``n // 2 + 1`` (the
  non-negative frequencies);
* ``IRFFT``: complex to real, the last axis holds ``n // 2 + 1`` frequencies and becomes ``n``
  (the input is taken as Hermitian-symmetric along the last axis).

``fft_lengths`` holds ints, and ``None`` where the length is a dynamic dim. A dynamic length of
``FFT`` / ``IFFT`` / ``RFFT`` is the operand's dim itself; the result's new dynamic dim (``n // 2
+ 1`` of ``RFFT``, ``n`` of ``IRFFT``) is the one trailing size operand, computed by the caller
(the catalogue's convention for new sizes). A length of 0 gives an empty result (XLA and JAX;
numpy raises). Dtypes: ``complex64`` / ``complex128`` operands (``float32`` / ``float64`` for
``RFFT``), the result in the same precision.

The numpy impl (``numpy.fft``) is the reference semantics; the lowering
(``dynjax/lowering/fft.py``) emits ``stablehlo.fft`` (a placeholder custom call on dynamic
lengths, which ``mlir_passes`` turns into ``stablehlo.fft`` once the lengths are known).
"""
from __future__ import annotations

import enum
from typing import Sequence

import numpy as np

from ..core.avals import complex_dtype, is_complex_dtype, real_dtype
from ..core.primitive import as_dim
from .base import aval, check_dim_operands, define, describe_shapes, result_aval, same_dim

__all__ = ["FftType", "fft_p", "fft"]


class FftType(enum.IntEnum):
    """The kind of transform (the values of XLA's ``FftType`` and ``jax.lax.FftType``)."""
    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


_COMPLEX = (np.dtype(np.complex64), np.dtype(np.complex128))
_REAL = (np.dtype(np.float32), np.dtype(np.float64))


def _fft_type(fft_type) -> FftType:
    if isinstance(fft_type, FftType):
        return fft_type
    if isinstance(fft_type, str):
        try:
            return FftType[fft_type.upper()]
        except KeyError:
            pass
    elif isinstance(fft_type, (int, np.integer)) and not isinstance(fft_type, bool):
        try:
            return FftType(int(fft_type))
        except ValueError:
            pass
    raise ValueError(f"fft: unknown fft_type {fft_type!r} (FFT, IFFT, RFFT or IRFFT)")


# ----------------------------------------------------------------------------------------------
# abstract evaluation
# ----------------------------------------------------------------------------------------------
def _fft_abstract(x, *sizes, fft_type, fft_lengths):
    t = _fft_type(fft_type)
    a = aval(x)
    k = len(fft_lengths)
    if not 1 <= k <= 3:
        raise TypeError(f"fft: fft_lengths must have 1 to 3 entries, got {tuple(fft_lengths)}")
    if a.ndim < k:
        raise TypeError(f"fft: an operand of rank {a.ndim} for {k} fft lengths: "
                        f"{describe_shapes(a)}")
    want = _REAL if t == FftType.RFFT else _COMPLEX
    if a.dtype not in want:
        kinds = "float32 or float64" if t == FftType.RFFT else "complex64 or complex128"
        raise TypeError(f"fft: {t.name} needs a {kinds} operand, got {a.dtype.name}")
    check_dim_operands("fft", sizes)
    trailing = a.shape[a.ndim - k:]
    new_last = t in (FftType.RFFT, FftType.IRFFT)
    checked = trailing[:-1] if t == FftType.IRFFT else trailing
    for length, d in zip(fft_lengths, checked):
        if length is None:
            continue   # the operand's dim (static when a traced program runs at known sizes)
        if not isinstance(length, (int, np.integer)) or length < 0:
            raise TypeError(f"fft: fft_lengths entries must be non-negative ints or None, got "
                            f"{tuple(fft_lengths)}")
        elif not same_dim(int(length), d):
            raise TypeError(f"fft: fft_lengths {tuple(fft_lengths)} do not match the trailing "
                            f"axes of {describe_shapes(a)}")
    last = fft_lengths[-1]
    if new_last and last is None:
        if len(sizes) != 1:
            raise TypeError(f"fft: {t.name} of a dynamic length takes the new size as one "
                            f"trailing operand, got {len(sizes)}")
        out_last = as_dim(sizes[0])
    else:
        if sizes:
            raise TypeError(f"fft: unexpected size operands for {t.name} with lengths "
                            f"{tuple(fft_lengths)}")
        out_last = None
        if t == FftType.RFFT:
            out_last = int(last) // 2 + 1
        elif t == FftType.IRFFT:
            out_last = int(last)
            d = trailing[-1]
            if isinstance(d, int) and d != int(last) // 2 + 1:
                raise TypeError(f"fft: IRFFT of length {last} needs {int(last) // 2 + 1} "
                                f"frequencies in the last axis, got {describe_shapes(a)}")
    shape = list(a.shape)
    if new_last:
        shape[-1] = out_last
    if t == FftType.RFFT:
        dtype = complex_dtype(a.dtype)
    elif t == FftType.IRFFT:
        dtype = real_dtype(a.dtype)
    else:
        dtype = a.dtype
    return result_aval(tuple(shape), dtype)


# ----------------------------------------------------------------------------------------------
# numpy impl
# ----------------------------------------------------------------------------------------------
def _fft_impl(x, *sizes, fft_type, fft_lengths):
    t = _fft_type(fft_type)
    x = np.asarray(x)
    k = len(fft_lengths)
    axes = tuple(range(x.ndim - k, x.ndim))
    out_aval = _fft_abstract(x, *[np.int64(s) for s in sizes], fft_type=t, fft_lengths=fft_lengths)
    lengths = [x.shape[ax] if length is None else int(length) for ax, length in zip(axes, fft_lengths)]
    if t == FftType.IRFFT:
        lengths[-1] = int(sizes[0]) if fft_lengths[-1] is None else int(fft_lengths[-1])
        if x.shape[-1] != lengths[-1] // 2 + 1:
            raise ValueError(f"fft: IRFFT of length {lengths[-1]} needs {lengths[-1] // 2 + 1} "
                             f"frequencies in the last axis, got {x.shape[-1]}")
    shape = list(x.shape)
    if t == FftType.RFFT:
        shape[-1] = x.shape[-1] // 2 + 1
        if fft_lengths[-1] is None and int(sizes[0]) != shape[-1]:
            raise ValueError(f"fft: the RFFT size operand {int(sizes[0])} is not {shape[-1]}")
    elif t == FftType.IRFFT:
        shape[-1] = lengths[-1]
    dtype = out_aval.dtype
    if 0 in lengths or 0 in x.shape[:x.ndim - k]:
        return np.zeros(shape, dtype)
    if t == FftType.FFT:
        out = np.fft.fftn(x, axes=axes)
    elif t == FftType.IFFT:
        out = np.fft.ifftn(x, axes=axes)
    elif t == FftType.RFFT:
        out = np.fft.rfftn(x, axes=axes)
    else:
        out = np.fft.irfftn(x, s=lengths, axes=axes)
    return np.asarray(out, dtype)


fft_p = define("fft", _fft_impl, _fft_abstract)


# ----------------------------------------------------------------------------------------------
# the lax API
# ----------------------------------------------------------------------------------------------
def fft(x, fft_type, fft_lengths: Sequence):
    """``jax.lax.fft``: the ``fft_type`` transform (``FftType`` or its name) over the trailing
    ``len(fft_lengths)`` axes of ``x``. The lengths are ints or traced sizes (a dynamic axis's
    dim); they must equal the trailing sizes, except the last one of ``IRFFT``, which is the
    output length ``n`` (the input holds ``n // 2 + 1`` frequencies). No promotion: ``x`` is
    complex (real for ``RFFT``)."""
    from . import api
    t = _fft_type(fft_type)
    if isinstance(fft_lengths, (int, np.integer)) or hasattr(fft_lengths, "aval"):
        fft_lengths = (fft_lengths,)
    lengths = [api.canonicalize_dim(d, "fft length") for d in fft_lengths]
    a = aval(x)
    k = len(lengths)
    if a.ndim < k:
        raise TypeError(f"fft: an operand of rank {a.ndim} for {k} fft lengths")
    trailing = a.shape[a.ndim - k:]
    checked = trailing[:-1] if t == FftType.IRFFT else trailing
    for length, d in zip(lengths, checked):
        if not same_dim(length, d):
            raise TypeError(f"fft: fft_lengths must equal the trailing sizes of the operand "
                            f"({describe_shapes(a)}); a length is not known to equal its axis")
    static = [d if isinstance(d, int) else None for d in lengths]
    sizes = ()
    if t == FftType.RFFT and static[-1] is None:
        sizes = (api.add(api.div(lengths[-1], np.int64(2)), np.int64(1)),)
    elif t == FftType.IRFFT:
        n = lengths[-1]
        half = n // 2 + 1 if isinstance(n, int) else api.add(api.div(n, np.int64(2)), np.int64(1))
        if not same_dim(half, trailing[-1]):
            raise TypeError(f"fft: IRFFT of length n needs n // 2 + 1 frequencies in the last axis "
                            f"of {describe_shapes(a)}, which is not known to hold")
        if static[-1] is None:
            sizes = (n,)
    return fft_p.bind(x, *sizes, fft_type=t, fft_lengths=tuple(static))
