"""``dot_product_attention`` (JAX's ``jax.nn.dot_product_attention``, its ``'xla'``
implementation) and ``scaled_matmul``, on dynamic sizes.

Shapes follow JAX: ``query`` is ``BTNH`` (or ``TNH``), ``key`` / ``value`` ``BSKH`` with ``N``
a multiple of ``K`` (grouped-query attention: query head ``k * G + g`` attends with key head
``k``). The logits are computed in ``promote(query.dtype, float32)``, scaled, biased, masked
(``mask``, ``is_causal``, ``local_window_size``, ``query_seq_lengths`` /
``key_value_seq_lengths``) with JAX's large negative number, and the softmax is computed in
float32 (as JAX does, for every input dtype), then cast to the key's dtype. Batch and sequence
sizes (``B``, ``T``, ``S``) may be dynamic; the sequence lengths are traced values.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core.avals import canonical_dtype, finfo
from ..core.trace import typeof
from .functions import _array, logsumexp, softmax, stop_gradient

__all__ = ["dot_product_attention", "scaled_matmul"]


def _ensure_4d(t):
    t = _array(t)
    missing = 4 - typeof(t).ndim
    return jnp.expand_dims(t, tuple(range(missing))) if missing > 0 else t


def _same(a, b):
    return isinstance(a, int) and isinstance(b, int) and a == b or a is b


def _check(t, shape, dtype, name):
    if t is None:
        return
    a = typeof(t)
    if a.ndim != len(shape):
        raise ValueError(f"{name} ndim should be {len(shape)}, but got {a.ndim}")
    if dtype is not None and a.dtype != dtype:
        raise ValueError(f"{name} dtype should be {dtype}, but got {a.dtype}")
    for want, got in zip(shape, a.shape):
        if isinstance(want, int) and want == -1:
            continue
        if isinstance(want, int) and isinstance(got, int) and want != got:
            raise ValueError(f"{name} shape should be {tuple(shape)}: but got {tuple(a.shape)}")


def _large_negative(dtype):
    big = min(float(finfo(dtype).max), float(finfo(np.float32).max))
    return np.asarray(-0.7 * big, dtype)


def _grouped(t, K, G):
    """A bias or mask ``(tB, tN, tT, tS)`` as ``(tB, K or 1, G or 1, tT, tS)``: per key head
    and group (``tN`` is ``N`` or 1)."""
    if t is None:
        return None
    tB, tN, tT, tS = typeof(t).shape
    if isinstance(tN, int) and tN == 1:
        return jnp.expand_dims(t, 2)
    return jnp.reshape(t, (tB, K, G, tT, tS))


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal: bool = False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual: bool = False):
    """Scaled dot-product attention, ``softmax(Q K^T * scale + bias) V`` per head, with JAX's
    masks; with ``return_residual`` also the logsumexp of the masked logits (``BTN``)."""
    if implementation not in (None, "xla"):
        if implementation == "cudnn":
            raise ValueError("dot_product_attention: implementation='cudnn' needs an NVIDIA GPU "
                             "and cuDNN; dynjax computes on the CPU: use implementation='xla' or None")
        raise ValueError(f"Unsupported implementation option: {implementation}")
    out_shape = typeof(_array(query)).shape
    q, k, v = _ensure_4d(query), _ensure_4d(key), _ensure_4d(value)
    bias = _ensure_4d(bias) if bias is not None else None
    mask = _ensure_4d(mask) if mask is not None else None
    qlen = _array(query_seq_lengths) if query_seq_lengths is not None else None
    kvlen = _array(key_value_seq_lengths) if key_value_seq_lengths is not None else None
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)
    B, S, K, H = typeof(k).shape
    kdt = typeof(k).dtype
    _check(v, [B, S, K, H], kdt, "value")
    _check(q, [B, -1, -1, H], kdt, "query")
    _check(mask, [-1] * 4, np.dtype(bool), "mask")
    _check(bias, [-1] * 4, None, "bias")
    _check(qlen, [B], np.dtype(np.int32), "query_seq_lengths")
    _check(kvlen, [B], np.dtype(np.int32), "key_value_seq_lengths")
    N = typeof(q).shape[2]
    if not isinstance(N, int) or not isinstance(K, int) or N % K != 0:
        raise ValueError(f"The number of query heads must be a multiple of key/value heads, but "
                         f"got {N} vs {K}")
    if not isinstance(H, int):
        raise TypeError("dot_product_attention: the head dimension H must be static")
    G = N // K
    T = typeof(q).shape[1]
    scale_val = (1.0 / np.sqrt(H)) if scale is None else scale

    logits_dtype = jnp.promote_types(typeof(q).dtype, np.float32)
    q5 = jnp.reshape(q, (B, T, K, G, H))
    logits = jnp.einsum("BTKGH,BSKH->BKGTS", q5.astype(logits_dtype), k.astype(logits_dtype))
    logits = logits * jnp.asarray(scale_val, dtype=logits_dtype)
    if bias is not None:
        logits = (logits + _grouped(bias, K, G)).astype(logits_dtype)
    masked = (mask is not None or is_causal or qlen is not None or kvlen is not None
              or local_window_size is not None)
    if masked:
        keep = None

        def both(m):
            return m if keep is None else jnp.logical_and(keep, m)
        if mask is not None:
            keep = both(_grouped(mask, K, G))
        qpos = lax.broadcasted_iota(np.int64, (T, S), 0)
        kpos = lax.broadcasted_iota(np.int64, (T, S), 1)
        if is_causal:
            keep = both((kpos <= qpos)[None, None, None])
        if local_window_size is not None:
            left, right = local_window_size
            window = jnp.logical_and(qpos <= kpos + left, qpos >= kpos - right)
            keep = both(window[None, None, None])
        if qlen is not None or kvlen is not None:
            pad = None
            if qlen is not None:
                pad = lax.broadcasted_iota(np.int32, (T,), 0)[None, :, None] < qlen[:, None, None]
            if kvlen is not None:
                kv = lax.broadcasted_iota(np.int32, (S,), 0)[None, None, :] < kvlen[:, None, None]
                pad = kv if pad is None else jnp.logical_and(pad, kv)
            keep = both(pad[:, None, None])
        logits = jnp.where(keep, logits, _large_negative(logits_dtype))
    logits32 = logits.astype(np.float32)
    probs = softmax(logits32, axis=-1).astype(kdt)
    encoded = jnp.einsum("BKGTS,BSKH->BTKGH", probs, v)
    if qlen is not None:
        valid = lax.broadcasted_iota(np.int32, (T,), 0)[None, :] < qlen[:, None]
        encoded = encoded * valid[:, :, None, None, None].astype(typeof(encoded).dtype)
    encoded = jnp.reshape(encoded, (B, T, N, H))
    out = jnp.reshape(encoded, out_shape)
    if not return_residual:
        return out
    lse = logsumexp(logits32, axis=-1).astype(kdt)                    # (B, K, G, T)
    lse = jnp.reshape(jnp.transpose(lse, (0, 3, 1, 2)), (B, T, N))
    return out, stop_gradient(jnp.reshape(lse, tuple(out_shape[:-1])))


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
    """Block-scaled batched matrix product (``jax.nn.scaled_matmul``'s definition):
    ``einsum('BMK,BNK->BMN', lhs * repeat(lhs_scales, K // K_l), rhs * repeat(rhs_scales,
    K // K_r))`` in ``preferred_element_type``; the last axis is contracted and each scale
    covers a block of ``K // K_scales`` consecutive elements."""
    a, b, sa, sb = (_array(x) for x in (lhs, rhs, lhs_scales, rhs_scales))
    if not all(typeof(x).ndim == 3 for x in (a, b, sa, sb)):
        raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays")
    Ba, Ma, Ka = typeof(a).shape
    Bb, Nb, Kb = typeof(b).shape
    if not (_same(Ka, Kb) and _same(Ba, Bb)):
        raise ValueError("scaled_matmul requires inputs a and b to have matching batch (B) and "
                         f"contract (K) dimensions, but got shapes {typeof(a).shape} and "
                         f"{typeof(b).shape}")
    Bas, Mas, Kas = typeof(sa).shape
    Bbs, Nbs, Kbs = typeof(sb).shape
    if not (_same(Kas, Kbs) and _same(Bas, Bbs)):
        raise ValueError("scaled_matmul requires scales to have matching batch (B) and contract "
                         f"(K) dimensions, but got shapes {typeof(sa).shape} and {typeof(sb).shape}")
    if not (_same(Mas, Ma) and _same(Nbs, Nb)):
        raise ValueError("scaled_matmul requires scales to match non-contract dimensions of "
                         f"inputs, but got shapes a: {typeof(a).shape}, b: {typeof(b).shape}, "
                         f"a_scales: {typeof(sa).shape}, b_scales: {typeof(sb).shape}")
    if not (isinstance(Ka, int) and isinstance(Kas, int)) or Kas == 0 or Ka % Kas:
        raise ValueError(f"scaled_matmul requires the contract dimension {Ka} to be a static "
                         f"multiple of the scales' {Kas}")
    pet = canonical_dtype(preferred_element_type)
    block = Ka // Kas
    a = a.astype(pet) * jnp.repeat(sa.astype(pet), block, axis=-1)
    b = b.astype(pet) * jnp.repeat(sb.astype(pet), block, axis=-1)
    return jnp.einsum("BMK,BNK->BMN", a, b)
