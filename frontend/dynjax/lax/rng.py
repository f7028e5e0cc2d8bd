"""``rng_bit_generator``: XLA's ``RngBitGenerator`` (JAX's ``lax.rng_bit_generator``), bit for
bit, written with dynjax's own integer operations so that it runs eagerly, compiled, at
dynamic sizes and under ``vmap`` alike (no primitive of its own).

The key is JAX's: ``uint32[4]`` (or ``uint64[2]``), read as two 64-bit words ``[key,
counter]``. The algorithms are XLA's bit generators (``RngBitGeneratorExpander``):

* ``RNG_THREE_FRY``: Threefry-2x32 (``lax/prng.py``'s primitive) under the key's two 32-bit
  halves of the counters ``counter + i``. For 32-bit (and narrower) results the shape is
  split in halves along its first even axis (else its longest): element ``j`` of that axis
  takes word ``j % 2`` of the hash of counter ``counter + (row-major index with j // 2)``;
  the counter advances by the number of such pairs. 64-bit results take both words of the
  hash of ``counter + row-major index``; the counter advances by the size.
* ``RNG_PHILOX`` and ``RNG_DEFAULT`` (XLA's default on the CPU and GPU): Philox-4x32, 10
  rounds, under the key's halves, on the 128-bit counter ``key * 2**64 + counter`` plus the
  block number; element ``e`` is word ``e % 4`` of block ``e // 4`` (64-bit results: the
  word pair ``e % 2`` of block ``e // 2``); the counter advances by the number of blocks.

Narrower results (``uint8``, ``uint16``) are the low bits of the 32-bit ones. The new key is
returned beside the bits, as in JAX.
"""
from __future__ import annotations

import enum

import numpy as np

from ..core.avals import canonical_dtype
from ..core.trace import Tracer, typeof
from . import api
from . import primitives as P
from .prng import threefry2x32

__all__ = ["RandomAlgorithm", "rng_bit_generator"]

_U32 = np.dtype(np.uint32)
_U64 = np.dtype(np.uint64)
_I64 = np.dtype(np.int64)


class RandomAlgorithm(enum.IntEnum):
    """The algorithm of ``rng_bit_generator``."""
    RNG_DEFAULT = 0
    "The platform's default algorithm (Philox-4x32 on the CPU)."
    RNG_THREE_FRY = 1
    "The Threefry-2x32 PRNG algorithm."
    RNG_PHILOX = 2
    "The Philox-4x32 PRNG algorithm."

    def __str__(self):
        return self.name


# --- uint32 / uint64 helpers (arrays of one shape, or scalars broadcast by the caller) ---------
def _c(v, dt):
    return np.asarray(v, dt)


def _lo32(x64):
    return api.convert_element_type(x64, _U32)


def _hi32(x64):
    return api.convert_element_type(P.shift_right_p.bind(x64, _c(32, _U64)), _U32)


def _join64(lo, hi):
    return P.or_p.bind(api.convert_element_type(lo, _U64),
                       P.shift_left_p.bind(api.convert_element_type(hi, _U64), _c(32, _U64)))


def _bcast(x, shape):
    return api.broadcast_in_dim(x, shape, ()) if typeof(x).ndim == 0 and shape else x


def _select(pred, on_true, on_false):
    return P.select_n_p.bind(pred, on_false, on_true)


# --- sizes as int64 values (ints, or traced scalars) ----------------------------------------------
def _i64(d):
    return _c(d, _I64) if isinstance(d, int) else api.convert_element_type(d, _I64)


def _is_static(*ds):
    return all(isinstance(d, int) for d in ds)


def _row_major_index(shape, dims=None):
    """The row-major position of every element of ``shape`` (uint64), computed with the sizes
    ``dims`` (default ``shape``) and the coordinates of ``shape``."""
    dims = shape if dims is None else dims
    idx, stride = None, None
    for i in reversed(range(len(shape))):
        coord = api.broadcasted_iota(_U64, shape, i)
        term = coord if stride is None else P.mul_p.bind(coord, _bcast(stride, shape))
        idx = term if idx is None else P.add_p.bind(idx, term)
        size = api.convert_element_type(_i64(dims[i]), _U64)
        stride = size if stride is None else P.mul_p.bind(stride, size)
    return idx if idx is not None else _c(0, _U64)


# --- Threefry ---------------------------------------------------------------------------------
def _split_dim(shape):
    """XLA's ``SplitShapeIntoHalves`` axis: the first even axis, else the first longest one
    (an int for static sizes, else an int64 scalar)."""
    if _is_static(*shape):
        for i, d in enumerate(shape):
            if d % 2 == 0:
                return i
        return max(range(len(shape)), key=lambda i: (shape[i], -i))
    dims = [_i64(d) for d in shape]
    best, best_size = _c(0, _I64), dims[0]
    for i in range(1, len(shape)):
        bigger = P.gt_p.bind(dims[i], best_size)
        best = _select(bigger, _c(i, _I64), best)
        best_size = _select(bigger, dims[i], best_size)
    first_even = _c(-1, _I64)
    for i in reversed(range(len(shape))):
        even = P.eq_p.bind(P.rem_p.bind(dims[i], _c(2, _I64)), _c(0, _I64))
        first_even = _select(even, _c(i, _I64), first_even)
    return _select(P.ge_p.bind(first_even, _c(0, _I64)), first_even, best)


def _threefry(key_lo, key_hi, counter, shape, bits):
    """The bits and the new counter of XLA's Threefry bit generator."""
    if bits == 64:
        lin = P.add_p.bind(_bcast(counter, shape), _row_major_index(shape)) if shape else counter
        x0, x1 = threefry2x32(key_lo, key_hi, _lo32(lin), _hi32(lin))
        size = _c(1, _U64)
        for d in shape:
            size = P.mul_p.bind(size, api.convert_element_type(_i64(d), _U64))
        return _join64(x0, x1), P.add_p.bind(counter, size)
    if not shape:   # a scalar: word 0 of the hash of the counter itself
        x0, _ = threefry2x32(key_lo, key_hi, _lo32(counter), _hi32(counter))
        return x0, P.add_p.bind(counter, _c(1, _U64))
    s = _split_dim(shape)
    static_s = isinstance(s, int)
    half, coords, word = [], [], None
    for i, d in enumerate(shape):
        c = api.broadcasted_iota(_U64, shape, i)
        d64 = api.convert_element_type(_i64(d), _U64)
        h = P.div_p.bind(P.add_p.bind(d64, _c(1, _U64)), _c(2, _U64))     # ceil(d / 2)
        hc = P.shift_right_p.bind(c, _c(1, _U64))
        if static_s:
            is_s = i == s
            half.append(h if is_s else d64)
            coords.append(hc if is_s else c)
            if is_s:
                word = P.and_p.bind(c, _c(1, _U64))
        else:
            is_s = P.eq_p.bind(s, _c(i, _I64))
            half.append(_select(is_s, h, d64))
            coords.append(_select(_bcast(is_s, shape), hc, c))
            w = _select(_bcast(is_s, shape), P.and_p.bind(c, _c(1, _U64)),
                        _bcast(_c(0, _U64), shape))
            word = w if word is None else P.or_p.bind(word, w)
    lin, stride = None, None
    for i in reversed(range(len(shape))):
        term = coords[i] if stride is None else P.mul_p.bind(coords[i], _bcast(stride, shape))
        lin = term if lin is None else P.add_p.bind(lin, term)
        stride = half[i] if stride is None else P.mul_p.bind(stride, half[i])
    ctr = P.add_p.bind(_bcast(counter, shape), lin)
    x0, x1 = threefry2x32(key_lo, key_hi, _lo32(ctr), _hi32(ctr))
    out = _select(P.eq_p.bind(word, _bcast(_c(1, _U64), shape)), x1, x0)
    return out, P.add_p.bind(counter, stride)


# --- Philox -----------------------------------------------------------------------------------
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)


def _mul_hi_lo(x, k):
    prod = P.mul_p.bind(api.convert_element_type(x, _U64), _bcast(_c(k, _U64), typeof(x).shape))
    return _hi32(prod), _lo32(prod)


def _philox4x32(words, key):
    """Philox-4x32 with 10 rounds (XLA's), on four uint32 arrays under a pair of uint32 keys."""
    x = list(words)
    k0, k1 = key
    shape = typeof(x[0]).shape
    for _ in range(10):
        hi0, lo0 = _mul_hi_lo(x[0], _PHILOX_M[0])
        hi1, lo1 = _mul_hi_lo(x[2], _PHILOX_M[1])
        x = [P.xor_p.bind(P.xor_p.bind(hi1, x[1]), _bcast(k0, shape)), lo1,
             P.xor_p.bind(P.xor_p.bind(hi0, x[3]), _bcast(k1, shape)), lo0]
        k0 = P.add_p.bind(k0, _c(_PHILOX_W[0], _U32))
        k1 = P.add_p.bind(k1, _c(_PHILOX_W[1], _U32))
    return x


def _philox(key_lo, key_hi, key64, counter, shape, bits):
    """The bits and the new counter of XLA's Philox bit generator (a two-word state: the
    128-bit counter is ``key * 2**64 + counter``, of which the new state keeps the low word)."""
    per_block = 2 if bits == 64 else 4
    e = _row_major_index(shape) if shape else _c(0, _U64)
    block = P.div_p.bind(e, _bcast(_c(per_block, _U64), typeof(e).shape))
    word = P.rem_p.bind(e, _bcast(_c(per_block, _U64), typeof(e).shape))
    lo = P.add_p.bind(_bcast(counter, typeof(e).shape), block)
    carry = P.lt_p.bind(lo, _bcast(counter, typeof(e).shape))
    hi = P.add_p.bind(_bcast(key64, typeof(e).shape),
                      api.convert_element_type(carry, _U64))
    o = _philox4x32([_lo32(lo), _hi32(lo), _lo32(hi), _hi32(hi)], (key_lo, key_hi))
    if bits == 64:
        parts = [_join64(o[0], o[1]), _join64(o[2], o[3])]
    else:
        parts = o
    out = parts[-1]
    for k in reversed(range(len(parts) - 1)):
        out = _select(P.eq_p.bind(word, _bcast(_c(k, _U64), typeof(e).shape)), parts[k], out)
    n = _c(1, _U64)
    for d in shape:
        n = P.mul_p.bind(n, api.convert_element_type(_i64(d), _U64))
    blocks = P.div_p.bind(P.add_p.bind(n, _c(per_block - 1, _U64)), _c(per_block, _U64))
    return out, P.add_p.bind(counter, blocks)


# --- the public function ------------------------------------------------------------------------
def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding=None):
    """``(new_key, bits)``: random unsigned integers of ``shape`` and ``dtype`` (``uint8`` to
    ``uint64``) from XLA's bit generator ``algorithm`` under ``key`` (``uint32[4]`` or
    ``uint64[2]``), exactly the numbers XLA (and so JAX) gives; ``shape`` may hold traced
    sizes."""
    dtype = canonical_dtype(dtype)
    if dtype not in (np.dtype(np.uint8), np.dtype(np.uint16), _U32, _U64):
        raise TypeError(f"rng_bit_generator: unsupported dtype {dtype}")
    algorithm = RandomAlgorithm(int(algorithm))
    entries = api.shape_entries(shape)
    shape = tuple(api.canonicalize_dim(d, "dimension of shape") for d in entries)
    if not isinstance(key, Tracer):
        key = np.asarray(key)
    ka = typeof(key)
    if not ((ka.dtype == _U32 and ka.shape == (4,)) or (ka.dtype == _U64 and ka.shape == (2,))):
        raise TypeError(f"rng_bit_generator: the key must be uint32[4] or uint64[2], got "
                        f"{ka.str_short()}")
    if ka.dtype == _U32:
        words = [api.squeeze(api.slice(key, (i,), (i + 1,)), (0,)) for i in range(4)]
        key64, counter = _join64(words[0], words[1]), _join64(words[2], words[3])
    else:
        key64 = api.squeeze(api.slice(key, (0,), (1,)), (0,))
        counter = api.squeeze(api.slice(key, (1,), (2,)), (0,))
    key_lo, key_hi = _lo32(key64), _hi32(key64)
    bits = 64 if dtype == _U64 else 32
    if algorithm == RandomAlgorithm.RNG_THREE_FRY:
        out, new_counter = _threefry(key_lo, key_hi, counter, shape, bits)
    else:
        out, new_counter = _philox(key_lo, key_hi, key64, counter, shape, bits)
    if typeof(out).dtype != dtype:
        out = api.convert_element_type(out, dtype)
    if ka.dtype == _U32:
        parts = [key_lo, key_hi, _lo32(new_counter), _hi32(new_counter)]
    else:
        parts = [key64, new_counter]
    new_key = api.concatenate([api.broadcast_in_dim(p, (1,), ()) for p in parts], 0)
    return new_key, out
