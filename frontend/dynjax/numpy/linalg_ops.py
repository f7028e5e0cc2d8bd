"""Products: dot, matmul (``@``), outer, inner, vdot."""
from __future__ import annotations

from .. import lax
from ..core.trace import typeof
from ._promote import broadcast_shapes, broadcast_to_shape, promote
from .shape_ops import _as_array, ravel


def _prep(*xs):
    return promote(*[_as_array(x) for x in xs])


def dot(a, b):
    """numpy.dot: scalar product, matrix product, or sum over the last/second-to-last axes."""
    a, b = _prep(a, b)
    na, nb = typeof(a).ndim, typeof(b).ndim
    if na == 0 or nb == 0:
        from .ufuncs import multiply
        return multiply(a, b)
    rc = 0 if nb == 1 else nb - 2
    return lax.dot_general(a, b, (((na - 1,), (rc,)), ((), ())))


def matmul(a, b):
    """numpy.matmul with broadcasting over leading batch axes."""
    a, b = _prep(a, b)
    na, nb = typeof(a).ndim, typeof(b).ndim
    if na == 0 or nb == 0:
        raise ValueError("matmul: operands must not be scalars (use * instead)")
    if na == 1 and nb == 1:
        return lax.dot_general(a, b, (((0,), (0,)), ((), ())))
    if na == 1:
        return lax.dot_general(a, b, (((0,), (nb - 2,)), ((), ()))) if nb == 2 else _batched(a, b)
    if nb == 1:
        return lax.dot_general(a, b, (((na - 1,), (0,)), ((), ())))
    if na == 2 and nb == 2:
        return lax.dot_general(a, b, (((1,), (0,)), ((), ())))
    return _batched(a, b)


def _batched(a, b):
    from .shape_ops import expand_dims, squeeze
    squeeze_a = typeof(a).ndim == 1
    squeeze_b = typeof(b).ndim == 1
    if squeeze_a:
        a = expand_dims(a, 0)
    if squeeze_b:
        b = expand_dims(b, 1)
    sa, sb = typeof(a).shape, typeof(b).shape
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    a = broadcast_to_shape(a, batch + tuple(sa[-2:]))
    b = broadcast_to_shape(b, batch + tuple(sb[-2:]))
    nbat = len(batch)
    out = lax.dot_general(a, b, (((nbat + 1,), (nbat,)), (tuple(range(nbat)), tuple(range(nbat)))))
    if squeeze_a:
        out = squeeze(out, nbat)
    if squeeze_b:
        out = squeeze(out, typeof(out).ndim - 1)
    return out


def outer(a, b):
    """numpy.outer: ``out[i, j] = a.ravel()[i] * b.ravel()[j]``."""
    a, b = _prep(a, b)
    return lax.dot_general(ravel(a), ravel(b), (((), ()), ((), ())))


def inner(a, b):
    a, b = _prep(a, b)
    na, nb = typeof(a).ndim, typeof(b).ndim
    if na == 0 or nb == 0:
        from .ufuncs import multiply
        return multiply(a, b)
    return lax.dot_general(a, b, (((na - 1,), (nb - 1,)), ((), ())))


def vdot(a, b):
    """numpy's vdot: the dot product of the flattened arrays, conjugating the first."""
    from .ufuncs import conjugate
    return dot(conjugate(ravel(_as_array(a))), ravel(_as_array(b)))


def convolve(a, v, mode="full"):
    """numpy's discrete linear convolution of two 1-D arrays, whose lengths may be dynamic.

    The full result (length ``n + m - 1``) accumulates ``a * v[j]`` at offset ``j`` for each
    ``j`` in one compiled loop; ``same`` (length ``max(n, m)``) and ``valid`` (length
    ``max(n, m) - min(n, m) + 1``) are slices of it, with symbolic sizes."""
    from ..control_flow.lax_api import fori_loop
    from .creation import zeros
    from .indexing import getitem
    a, v = promote(_as_array(a), _as_array(v))
    if typeof(a).ndim != 1 or typeof(v).ndim != 1:
        raise ValueError("convolve: both inputs must be one-dimensional")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")
    n, m = typeof(a).shape[0], typeof(v).shape[0]
    dtype = typeof(a).dtype
    total = n + m - 1 if isinstance(n, int) and isinstance(m, int) else lax.sub(lax.add(n, m), 1)

    def step(j, acc):
        window = lax.api.dynamic_slice(acc, [j], [n])
        return lax.api.dynamic_update_slice(acc, window + a * getitem(v, j), [j])
    full = fori_loop(0, m, step, zeros(total, dtype))
    if mode == "full":
        return full
    short = lax.min(n, m) if not (isinstance(n, int) and isinstance(m, int)) else min(n, m)
    long_ = lax.max(n, m) if not (isinstance(n, int) and isinstance(m, int)) else max(n, m)
    if mode == "same":
        start = lax.div(lax.sub(short, 1), 2) if not isinstance(short, int) else (short - 1) // 2
        return getitem(full, slice(start, lax.add(start, long_) if not isinstance(start, int)
                                   or not isinstance(long_, int) else start + long_))
    start = lax.sub(short, 1) if not isinstance(short, int) else short - 1
    size = lax.add(lax.sub(long_, short), 1) if not isinstance(long_, int) else long_ - short + 1
    return getitem(full, slice(start, lax.add(start, size) if not isinstance(size, int) else start + size))



def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    """numpy's cross-correlation of two 1-D arrays (lengths may be dynamic):
    ``convolve(a, conj(v[::-1]), mode)``; ``mode`` defaults to ``'valid'``."""
    from .ufuncs import conjugate
    del precision
    a, v = promote(_as_array(a), _as_array(v))
    if typeof(a).ndim != 1 or typeof(v).ndim != 1:
        raise ValueError("correlate: both inputs must be one-dimensional")
    out = convolve(a, conjugate(lax.rev(v, (0,))), mode)
    if preferred_element_type is not None:
        out = lax.convert_element_type(out, preferred_element_type)
    return out

def tensordot(a, b, axes=2):
    """Sum products over ``axes``: an int (the last ``axes`` axes of ``a`` with the first of
    ``b``) or a pair of axis sequences."""
    import numbers
    a, b = _prep(a, b)
    na, nb = typeof(a).ndim, typeof(b).ndim
    if isinstance(axes, numbers.Integral):
        if not 0 <= axes <= min(na, nb):
            raise ValueError(f"tensordot: axes={axes} is out of range for ranks {na} and {nb}")
        ca, cb = tuple(range(na - axes, na)), tuple(range(axes))
    else:
        try:
            ca, cb = axes
        except (TypeError, ValueError):
            raise TypeError("tensordot: axes must be an int or a pair of axis sequences") from None
        ca = (ca,) if isinstance(ca, numbers.Integral) else tuple(ca)
        cb = (cb,) if isinstance(cb, numbers.Integral) else tuple(cb)
        if len(ca) != len(cb):
            raise ValueError("tensordot: the two axis sequences must have the same length")
        ca, cb = tuple(int(i) % na for i in ca), tuple(int(i) % nb for i in cb)
    return lax.dot_general(a, b, ((ca, cb), ((), ())))


def kron(a, b):
    """The Kronecker product: block ``(i, j)`` of the result is ``a[i, j] * b``."""
    from .ufuncs import multiply
    from .shape_ops import reshape
    a, b = _prep(a, b)
    nd = max(typeof(a).ndim, typeof(b).ndim)
    a = reshape(a, (1,) * (nd - typeof(a).ndim) + tuple(typeof(a).shape))
    b = reshape(b, (1,) * (nd - typeof(b).ndim) + tuple(typeof(b).shape))
    sa, sb = typeof(a).shape, typeof(b).shape
    # interleave: a's axes at even positions, b's at odd ones, then merge each pair
    ea = reshape(a, tuple(x for d in sa for x in (d, 1)))
    eb = reshape(b, tuple(x for d in sb for x in (1, d)))
    return reshape(multiply(ea, eb), tuple(p * q for p, q in zip(sa, sb)))
