"""Batching rule of ``pure_callback`` (``dynjax.lax.callbacks``), per its ``vmap_method``.

The batched equation is one ``pure_callback`` whose callback handles the whole batch (batch
axis first) at run time:

* ``"sequential"`` (and ``"sequential_unrolled"``): calls the user's function once per
  member, unbatched operands unchanged, and stacks the results;
* ``"expand_dims"`` (and ``"legacy_vectorized"``): calls it once; batched operands carry the
  batch axis first, unbatched ones a leading axis of size 1; it must return the batch;
* ``"broadcast_all"``: calls it once with every operand broadcast to the batch.

``vmap_method=None`` is JAX's ``NotImplementedError``. A declared result size (a dim operand)
must be the same for every member.
"""
from __future__ import annotations

import numpy as np

from ...core.primitive import batching_rules
from ...core.trace import Tracer, typeof
from ...lax import api as lax
from ...lax.callbacks import VMAP_METHODS, pure_callback_p, result_shapes_of
from . import _check_unbatched, move_axis, to_front


def _sequential(callback, batched, num_args, result_shapes, result_dtypes):
    """A callback over the batch that calls ``callback`` per member and stacks the results.
    Its operands: the original ones (batch axis first where batched), then the dim values."""
    def run(*operands):
        args, dims = operands[:num_args], operands[num_args:]
        n = next(a.shape[0] for a, b in zip(args, batched) if b)
        members = [callback(*[a[i] if b else a for a, b in zip(args, batched)]) for i in range(n)]
        outs = []
        for j, ((shape, d), dtype) in enumerate(zip(result_shapes_of(result_shapes, dims), result_dtypes)):
            it = iter(d)
            member_shape = tuple(int(next(it)) if s is None else s for s in shape)
            outs.append(np.stack([np.asarray(m[j], dtype) for m in members]) if members
                        else np.zeros((0,) + member_shape, dtype))
        return outs
    return run


def _pure_callback_batch(size, vals, dims, *, callback, num_args, result_shapes, result_dtypes,
                         vmap_method, name):
    _check_unbatched("pure_callback", dims[num_args:], "a declared result size")
    if vmap_method not in VMAP_METHODS:
        raise NotImplementedError(
            "vmap is only supported for pure_callback when vmap_method is one of "
            f"{', '.join(repr(m) for m in VMAP_METHODS)}; got vmap_method={vmap_method!r}")
    args, adims, dim_ops = list(vals[:num_args]), dims[:num_args], list(vals[num_args:])
    batched = tuple(d is not None for d in adims)
    if vmap_method == "broadcast_all":
        args = [to_front(v, d, size) for v, d in zip(args, adims)]
    elif vmap_method in ("expand_dims", "legacy_vectorized"):
        args = [move_axis(v, d, 0) if d is not None else
                lax.broadcast_in_dim(v, (1,) + tuple(typeof(v).shape), tuple(range(1, typeof(v).ndim + 1)))
                for v, d in zip(args, adims)]
    else:
        args = [move_axis(v, d, 0) if d is not None else v for v, d in zip(args, adims)]
    if isinstance(size, Tracer):
        lead, size_ops = (None,), [size]
    else:
        lead, size_ops = (int(size),), []
    new_shapes = tuple(lead + tuple(s) for s in result_shapes)
    new_dims = []
    for shape, d in result_shapes_of(result_shapes, dim_ops):
        new_dims += size_ops + list(d)
    if vmap_method in ("sequential", "sequential_unrolled"):
        fn = _sequential(callback, batched, num_args, result_shapes, result_dtypes)
        operands, n_args = args + dim_ops, num_args + len(dim_ops)
    else:
        fn, operands, n_args = callback, args, num_args
    outs = pure_callback_p.bind(*operands, *new_dims, callback=fn, num_args=n_args, result_shapes=new_shapes,
                                result_dtypes=result_dtypes, vmap_method=vmap_method, name=name)
    return list(outs), [0] * len(outs)


batching_rules[pure_callback_p] = _pure_callback_batch
