"""``permutation``, ``shuffle`` and ``choice``: JAX's sort-based shuffle (each round sorts by
fresh 32-bit random keys; the number of rounds, ``ceil(3 ln(n) / ln(2**32 - 1))``, is 1 up to
1625 elements, 2 up to 2642245, 3 beyond), and ``choice`` with or without replacement and
with probabilities ``p``. A dynamic length runs the rounds in a loop whose trip count is
computed from the length, so every length gets exactly JAX's permutation."""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core.trace import Tracer, typeof
from .keys import canonical_shape, check_key, random_bits, split
from .samplers import _shape_of, _top_k_indices, gumbel, randint, uniform

__all__ = ["permutation", "shuffle", "choice"]

_U32MAX = np.iinfo(np.uint32).max


def _rounds(size: int) -> int:
    return int(np.ceil(3 * np.log(max(1, size)) / np.log(_U32MAX)))


def _round_limits():
    """The largest sizes that need 1 and 2 rounds (found from the formula itself)."""
    out = []
    for r in (1, 2):
        lo, hi = 1, 2 ** 40
        while lo < hi:                      # the largest size with _rounds(size) <= r
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if _rounds(mid) <= r else (lo, mid - 1)
        out.append(lo)
    return tuple(out)


_LIMITS = _round_limits()


def _one_round(key, x, axis):
    keys = split(key, 2)
    key, sub = keys[0], keys[1]
    sort_keys = random_bits(sub, 32, _shape_of(x))
    _, x = lax.sort((sort_keys, x), dimension=axis, num_keys=1)
    return key, x


def _size(shape):
    size = 1
    for d in shape:
        size = size * d if isinstance(d, int) and isinstance(size, int) else lax.mul(
            np.int64(size) if isinstance(size, int) else size, np.int64(d) if isinstance(d, int) else d)
    return size


def _shuffle(key, x, axis):
    size = _size(_shape_of(x))
    if isinstance(size, int):
        for _ in range(_rounds(size)):
            key, x = _one_round(key, x, axis)
        return x
    one, two = _LIMITS
    i64 = np.int64
    n_rounds = lax.add(lax.add(lax.convert_element_type(lax.gt(size, i64(1)), i64),
                               lax.convert_element_type(lax.gt(size, i64(one)), i64)),
                       lax.convert_element_type(lax.gt(size, i64(two)), i64))

    def body(i, carry):
        k, v = carry
        return _one_round(k, v, axis)
    _, x = lax.fori_loop(0, n_rounds, body, (key, x))
    return x


def _axis(axis, ndim, name):
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise ValueError(f"{name}: axis {axis} is out of bounds for an array of dimension {ndim}")
    return axis % max(ndim, 1)


def permutation(key, x, axis=0, independent=False):
    """A random permutation of ``range(x)`` (an integer ``x``, possibly a traced size) or of
    the elements of ``x`` along ``axis`` (``independent=True``: each 1-D slice separately)."""
    key = check_key("permutation", key)
    if not isinstance(x, Tracer):
        x = np.asarray(x)
    a = typeof(x)
    if a.ndim == 0:
        if not np.issubdtype(a.dtype, np.integer):
            raise TypeError("x must be an integer or at least 1-dimensional")
        n = canonical_shape("permutation", (x,))[0]
        return _shuffle(key, lax.iota(np.int64, n), 0)
    axis = _axis(axis, a.ndim, "permutation")
    if independent or a.ndim == 1:
        return _shuffle(key, x, axis)
    ind = _shuffle(key, lax.iota(np.int64, a.shape[axis]), 0)
    return jnp.take(x, ind, axis=axis)


def shuffle(key, x, axis=0):
    """``permutation(key, x, axis, independent=True)`` (JAX's deprecated ``shuffle``)."""
    return permutation(key, x, axis=axis, independent=True)


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """Samples from ``range(a)`` (an integer) or from ``a`` along ``axis``: uniformly, or with
    probabilities ``p``; with or without replacement."""
    key = check_key("choice", key)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"shape argument of random.choice must be a sequence, got {shape}")
    shape = canonical_shape("choice", shape)
    arr = a if isinstance(a, Tracer) else np.asarray(a)
    av = typeof(arr)
    if av.ndim == 0:
        n_inputs = canonical_shape("choice", (a,))[0]
    else:
        axis = _axis(axis, av.ndim, "choice")
        n_inputs = av.shape[axis]
    n_draws = _size(shape)
    if isinstance(n_draws, int) and n_draws == 0:
        return jnp.zeros(shape, dtype=av.dtype)
    if isinstance(n_inputs, int) and n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if (not replace and isinstance(n_draws, int) and isinstance(n_inputs, int)
            and n_draws > n_inputs):
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population "
                         f"(size {n_inputs}) when 'replace=False'")
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            result = ind if av.ndim == 0 else jnp.take(arr, ind, axis=axis)
        else:
            perm = permutation(key, n_inputs if av.ndim == 0 else arr, axis)
            result = jnp.take(perm, lax.iota(np.int64, n_draws), axis=0 if av.ndim == 0 else axis)
    else:
        p_arr = jnp.asarray(p)
        if not np.issubdtype(typeof(p_arr).dtype, np.inexact):
            p_arr = p_arr.astype(float)
        ps = _shape_of(p_arr)
        if len(ps) != 1 or not (ps[0] is n_inputs or ps[0] == n_inputs):
            raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                             f"p has shape {ps} and a.shape[axis] is {n_inputs}.")
        if replace:
            p_cuml = jnp.cumsum(p_arr)
            dt = typeof(p_cuml).dtype
            r = p_cuml[-1] * (1 - uniform(key, shape, dtype=dt))
            ind = jnp.searchsorted(p_cuml, r).astype(np.int64)
        else:
            g = gumbel(key, ps, dtype=typeof(p_arr).dtype, mode=mode) + jnp.log(p_arr)
            ind = _top_k_indices(g, n_draws)
        result = ind if av.ndim == 0 else jnp.take(arr, ind, axis=axis)
    if av.ndim == 0:
        return jnp.reshape(result, shape)
    return jnp.reshape(result, tuple(av.shape[:axis]) + tuple(shape) + tuple(av.shape[axis + 1:]))

