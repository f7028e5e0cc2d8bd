"""Keys and raw bits: ``PRNGKey`` / ``key``, ``split``, ``fold_in``, ``bits``.

A key is a ``uint32`` array of shape ``(2,)`` (JAX's raw ``PRNGKey`` form); ``key`` returns the
same data (see ``doc/random.md``). Every function here is the threefry2x32 construction of JAX
with ``jax_threefry_partitionable`` on (JAX's default since 0.5): the counter of element ``i``
(row-major position in the result) is the 64-bit integer ``i``, split into a high and a low
32-bit word, hashed under the key; 32-bit results are the xor of the two output words. The
counters come from an iota of the (possibly dynamic) result shape, so a result at size ``n``
is exactly the first ``n`` values of any larger size's, and padded buckets hold the exact
values at every logical position.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import canonical_dtype
from ..core.trace import Tracer, typeof
from ..lax.api import canonicalize_dim, shape_entries
from ..lax.prng import threefry2x32

__all__ = ["PRNGKey", "key", "key_data", "wrap_key_data", "split", "fold_in", "bits",
           "check_key", "random_bits", "canonical_shape", "clone", "key_impl", "key_dtype"]

_U32 = np.dtype(np.uint32)
_U64 = np.dtype(np.uint64)
_UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32, 64: _U64}


def _as_array(x):
    if isinstance(x, Tracer):
        return x
    return np.asarray(x)


def check_key(name: str, key, *, allow_batched: bool = False):
    """The key as a ``uint32[2]`` array; a TypeError naming ``key`` for another dtype or a last
    axis other than 2, and JAX's ValueError for a batch of keys where one is expected."""
    if isinstance(key, (list, tuple)):
        key = np.asarray(key)
    if not isinstance(key, (Tracer, np.ndarray, np.generic)):
        raise TypeError(f"{name}: key must be a uint32 array of shape (2,) (from random.PRNGKey, "
                        f"random.key or random.split), got {type(key).__name__}")
    a = typeof(key) if isinstance(key, Tracer) else np.asarray(key)
    if a.dtype != _U32 or a.ndim == 0 or a.shape[-1] != 2:
        shape = tuple(getattr(a, "shape", ()))
        raise TypeError(f"{name}: key must be a uint32 array of shape (2,) (from random.PRNGKey, "
                        f"random.key or random.split), got {np.dtype(a.dtype).name} array of "
                        f"shape {shape}")
    if a.ndim > 1 and not allow_batched:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{tuple(a.shape[:-1])} != (). Use vmap for batching.")
    return _as_array(key)


def canonical_shape(name: str, shape) -> tuple:
    """A result shape: ints and traced integer sizes (checked), as JAX's ``canonicalize_shape``."""
    if shape is None:
        return ()
    try:
        entries = shape_entries(shape)
    except TypeError as e:
        raise TypeError(f"{name}: {e}") from None
    try:
        return tuple(canonicalize_dim(d, "dimension of shape") for d in entries)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{name}: shape {shape!r}: {e}") from None


def _key_words(key):
    return key[0], key[1]


def _u32(c):
    return np.asarray(c, _U32)


def _counters(shape):
    """The two 32-bit words (high, low) of the row-major position of every element of
    ``shape``: a uint64 iota of the whole shape (dynamic dims included)."""
    if not shape:
        return _u32(0), _u32(0)
    counts = None
    stride = None     # product of the later dims, as a uint64 scalar (int or traced)
    for d in reversed(range(len(shape))):
        term = lax.broadcasted_iota(_U64, shape, d)
        if stride is not None:
            term = lax.mul(term, lax.broadcast_in_dim(stride, shape, ()))
        counts = term if counts is None else lax.add(counts, term)
        size = shape[d]
        size = np.asarray(size, _U64) if isinstance(size, int) else lax.convert_element_type(size, _U64)
        stride = size if stride is None else lax.mul(stride, size)
    hi = lax.convert_element_type(lax.shift_right(counts, np.asarray(32, _U64)), _U32)
    lo = lax.convert_element_type(counts, _U32)
    return hi, lo


def _hash_shape(key, shape):
    k1, k2 = _key_words(key)
    hi, lo = _counters(shape)
    return threefry2x32(k1, k2, hi, lo)


def random_bits(key, bit_width: int, shape):
    """Unsigned integers of ``bit_width`` (8, 16, 32, 64) bits, JAX's ``_random_bits``."""
    b1, b2 = _hash_shape(key, shape)
    if bit_width == 64:
        hi = lax.convert_element_type(b1, _U64)
        lo = lax.convert_element_type(b2, _U64)
        return lax.bitwise_or(lax.shift_left(hi, np.asarray(32, _U64)), lo)
    out = lax.bitwise_xor(b1, b2)
    if bit_width == 32:
        return out
    return lax.convert_element_type(out, _UINT[bit_width])


# ----------------------------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------------------------
def PRNGKey(seed, *, impl=None):
    """A key from an integer seed: ``uint32[2]`` holding the seed's high and low 32-bit words
    (a 64-bit seed, as a Python int is; a seed of 32 bits or fewer gives ``[0, seed]``)."""
    if impl not in (None, "threefry2x32"):
        raise ValueError(f"PRNGKey: only the threefry2x32 implementation is supported, got {impl!r}")
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError(f"PRNGKey: seed must be an integer, got {seed!r}")
    if isinstance(seed, int):
        if not -2 ** 63 <= seed < 2 ** 64:
            raise OverflowError(f"PRNGKey: seed {seed} does not fit in 64 bits")
        seed = np.uint64(seed % 2 ** 64).astype(np.int64) if seed >= 2 ** 63 else np.int64(seed)
    s = seed if isinstance(seed, Tracer) else np.asarray(seed)
    a = typeof(s) if isinstance(s, Tracer) else s
    if a.ndim != 0:
        raise TypeError(f"PRNGKey: seed must be a scalar, got shape {tuple(a.shape)}")
    if not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"PRNGKey: seed must be an integer, got {np.dtype(a.dtype).name}")
    if np.dtype(a.dtype).itemsize == 8:
        u = lax.convert_element_type(s, _U64)
        hi = lax.convert_element_type(lax.shift_right(u, np.asarray(32, _U64)), _U32)
        lo = lax.convert_element_type(u, _U32)
    else:
        hi = _u32(0)
        lo = lax.convert_element_type(s, _U32)
    return lax.concatenate([lax.broadcast(hi, (1,)), lax.broadcast(lo, (1,))], 0)


def key(seed, *, impl=None):
    """A key from an integer seed. JAX returns a typed key array here; dynjax returns the same
    data as ``PRNGKey`` (a ``uint32[2]`` array), which every function of ``dynjax.random``
    accepts, and ``key_data`` / ``wrap_key_data`` convert to and from it (identities)."""
    return PRNGKey(seed, impl=impl)


def key_data(keys):
    """The raw ``uint32[..., 2]`` data of keys (keys are that data already)."""
    return check_key("key_data", keys, allow_batched=True)


def wrap_key_data(key_bits_array, *, impl=None):
    """Keys from raw ``uint32[..., 2]`` data (checked; keys are that data)."""
    if impl not in (None, "threefry2x32"):
        raise ValueError(f"wrap_key_data: only threefry2x32 is supported, got {impl!r}")
    return check_key("wrap_key_data", key_bits_array, allow_batched=True)


def clone(key):
    """``key`` itself: JAX's ``clone`` only matters to its key-reuse checker, which dynjax does
    not have (as in JAX outside that checker, it is the identity)."""
    return key


#: JAX's PRNG implementations (in the order of its messages); dynjax has threefry2x32
_IMPLS = ("philox2x32", "philox4x32", "threefry2x32", "rbg", "unsafe_rbg", "threefry4x32")


def _check_impl(name, impl):
    if impl is None or impl == "threefry2x32":
        return
    if isinstance(impl, str) and impl not in _IMPLS:
        raise ValueError(f'unrecognized PRNG implementation "{impl}". Did you mean one of: '
                         + ", ".join(f'"{i}"' for i in _IMPLS) + "?")
    raise ValueError(f"{name}: only the threefry2x32 implementation is supported, got {impl!r}")


def key_impl(keys):
    """The name of the PRNG implementation of ``keys`` (a key or an array of keys):
    ``'threefry2x32'``, the only one dynjax has (JAX's default)."""
    check_key("key_impl", keys, allow_batched=True)
    return "threefry2x32"


def key_dtype(impl_spec=None):
    """The dtype of dynjax's keys for the implementation ``impl_spec`` (``None`` or
    ``'threefry2x32'``): ``uint32``, since a dynjax key is raw ``uint32[..., 2]`` data (JAX
    returns its typed-key dtype ``key<fry>`` here)."""
    _check_impl("key_dtype", impl_spec)
    return _U32


def split(key, num=2):
    """``num`` new keys (an int or a shape): ``uint32[*shape, 2]``; JAX's fold-like split."""
    key = check_key("split", key)
    shape = canonical_shape("split", tuple(num) if isinstance(num, (tuple, list)) else (num,))
    b1, b2 = _hash_shape(key, shape)
    nd = len(shape)
    return lax.concatenate([lax.broadcast_in_dim(b, tuple(shape) + (1,), tuple(range(nd)))
                            for b in (b1, b2)], nd)


def fold_in(key, data):
    """A new key from ``key`` and a 32-bit integer ``data`` (the hash of the counter pair
    ``(0, data)``)."""
    key = check_key("fold_in", key)
    d = data if isinstance(data, Tracer) else np.asarray(data)
    a = typeof(d) if isinstance(d, Tracer) else d
    if a.ndim != 0:
        raise TypeError(f"fold_in accepts a scalar, but was given an array of shape "
                        f"{tuple(a.shape)} != (). Use vmap for batching.")
    if not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"fold_in: data must be an integer, got {np.dtype(a.dtype).name}")
    if not isinstance(d, Tracer):
        d = np.asarray(int(d) % 2 ** 32, _U32)
    else:
        d = lax.convert_element_type(d, _U32)
    k1, k2 = _key_words(key)
    y1, y2 = threefry2x32(k1, k2, _u32(0), d)
    return lax.concatenate([lax.broadcast(y1, (1,)), lax.broadcast(y2, (1,))], 0)


def bits(key, shape=(), dtype=None):
    """Random unsigned integers of ``dtype`` (default uint64, JAX's default with x64)."""
    key = check_key("bits", key)
    dtype = _U64 if dtype is None else canonical_dtype(dtype)
    if dtype.kind != "u":
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
    shape = canonical_shape("bits", shape)
    return random_bits(key, dtype.itemsize * 8, shape)
