"""The counter-based random-bit generator: the ``threefry2x32`` primitive.

``threefry2x32 k1 k2 x1 x2 -> (y1, y2)`` applies the Threefry-2x32 block cipher (20 rounds, the
key schedule of Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) to each
counter pair ``(x1[i], x2[i])`` under the key ``(k1, k2)``. Every operand is ``uint32``; it is
elementwise, and a rank-0 operand broadcasts against the others (a key is usually two scalars,
the counters two arrays of the result's shape).

* ``impl``: numpy uint32 arithmetic (wrapping adds, rotations, xors): the reference semantics.
* lowering (``dynjax/lowering/prng.py``): the same rounds written with StableHLO ``add``,
  ``shift_left``, ``shift_right_logical``, ``or`` and ``xor`` on (possibly ``?``-shaped) tensors.
* jvp (``transforms/jvp/prng.py``): zero tangents (the results are integers).
* batching (``transforms/batching/prng.py``): elementwise, batch axes to the front.
* cost (``cost_model/prng.py``), padding (``execution/padding.py``: elementwise, nothing to do).

The samplers of ``dynjax.random`` are ordinary ``jnp`` / ``lax`` code on top of it.
"""
from __future__ import annotations

import numpy as np

from .base import aval, check_same_shapes, define, describe_shapes, result_aval

__all__ = ["threefry2x32_p", "threefry2x32", "ROTATIONS", "KS_PARITY", "threefry_rounds"]

#: the rotation distances of the even and odd groups of four rounds
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
#: the key-schedule parity constant of Threefry
KS_PARITY = 0x1BD11BDA


def threefry_rounds(k1, k2, x1, x2, *, add, xor, rotl, const):
    """The 20 rounds and 5 key injections of Threefry-2x32, in terms of the given operations
    (shared by the numpy impl and the StableHLO lowering). ``const(c)`` makes a uint32 constant
    shaped like the counters; ``rotl(v, r)`` rotates left by the Python int ``r``."""
    ks = (k1, k2, xor(xor(k1, k2), const(KS_PARITY)))
    x1 = add(x1, ks[0])
    x2 = add(x2, ks[1])
    for i in range(5):
        for r in ROTATIONS[i % 2]:
            x1 = add(x1, x2)
            x2 = xor(rotl(x2, r), x1)
        x1 = add(x1, ks[(i + 1) % 3])
        x2 = add(add(x2, ks[(i + 2) % 3]), const(i + 1))
    return x1, x2


def _check(name, *operands):
    avs = [aval(o) for o in operands]
    for what, a in zip(("k1", "k2", "x1", "x2"), avs):
        if a.dtype != np.uint32:
            raise TypeError(f"{name}: every operand must be uint32, got {what} of type "
                            f"{describe_shapes(a)}")
    arrays = [a for a in avs if a.ndim]
    if arrays:
        check_same_shapes(name, *arrays)
    return arrays[0].shape if arrays else ()


def _impl(k1, k2, x1, x2):
    ops = [np.asarray(v) for v in (k1, k2, x1, x2)]
    _check("threefry2x32", *ops)
    shape = np.broadcast_shapes(*(o.shape for o in ops))
    k1, k2, x1, x2 = (np.broadcast_to(o, shape).astype(np.uint32) for o in ops)

    def rotl(v, r):
        return (v << np.uint32(r)) | (v >> np.uint32(32 - r))

    with np.errstate(over="ignore"):
        y1, y2 = threefry_rounds(k1, k2, x1, x2, add=np.add, xor=np.bitwise_xor, rotl=rotl,
                                 const=np.uint32)
    return [np.asarray(y1, np.uint32), np.asarray(y2, np.uint32)]


def _abstract(k1, k2, x1, x2):
    shape = _check("threefry2x32", k1, k2, x1, x2)
    return [result_aval(shape, np.uint32), result_aval(shape, np.uint32)]


threefry2x32_p = define("threefry2x32", _impl, _abstract, multiple_results=True)


def threefry2x32(k1, k2, x1, x2):
    """The Threefry-2x32 hash of the counter pairs ``(x1, x2)`` under the key ``(k1, k2)``:
    two uint32 arrays of the counters' shape."""
    return tuple(threefry2x32_p.bind(k1, k2, x1, x2))
