"""The ``pure_callback`` primitive: a Python function on run-time values, with results.

``pure_callback_p.bind(*args, *dims, callback=..., num_args=..., result_shapes=...,
result_dtypes=..., vmap_method=..., name=...)`` calls ``callback(*args)`` (numpy arrays) and
returns its results, checked against the declared shapes (``None`` entries of
``result_shapes`` are filled, in order, by the integer scalar operands ``dims``: a result
size may be a traced int) and cast to the declared dtypes.

The primitive is pure: unlike ``debug_callback`` it is not in ``effectful_primitives``, so
dead-code elimination drops an unused call and the same call on the same operands is
staged once. It is a *host* primitive (``core.primitive.host_primitives``): the execution
planner never compiles it into an XLA program but runs its ``impl`` on the host between
compiled segments, and a loop or branch containing one is driven from the host, as for
``debug_callback`` (``execution/analysis.py: statically_compilable``).
"""
from __future__ import annotations

import numpy as np

from ..core.avals import canonical_dtype
from ..core.primitive import host_primitives
from .base import check_dim_operands, concrete_shape, define, dims_from_operands, result_aval

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized")


def result_shapes_of(result_shapes, dims):
    """Split the dim operands among the results: ``[(static shape, its dim operands)]``."""
    out, pos = [], 0
    for shape in result_shapes:
        k = sum(d is None for d in shape)
        out.append((shape, dims[pos:pos + k]))
        pos += k
    return out


def _pure_callback_impl(*operands, callback, num_args, result_shapes, result_dtypes, vmap_method, name):
    args = [np.asarray(a) for a in operands[:num_args]]
    results = callback(*args)
    if len(results) != len(result_shapes):
        raise RuntimeError(f"pure_callback: {name} returned {len(results)} values, but "
                           f"result_shape_dtypes declares {len(result_shapes)}")
    outs = []
    for i, (r, (shape, dims), dtype) in enumerate(zip(results, result_shapes_of(result_shapes, operands[num_args:]),
                                                    result_dtypes)):
        expected = concrete_shape(shape, dims)
        r = np.asarray(r)
        if r.shape != expected:
            raise RuntimeError(f"pure_callback: incorrect output shape for return value #{i} of {name}: "
                               f"expected {expected}, got {r.shape}")
        if r.dtype != dtype:
            r = r.astype(dtype)
        elif not r.flags.writeable or any(np.may_share_memory(r, a) for a in args):
            r = r.copy()   # results are fresh arrays, never the callback's inputs
        outs.append(r)
    return outs


def _pure_callback_abstract(*operands, callback, num_args, result_shapes, result_dtypes, vmap_method, name):
    dims = operands[num_args:]
    check_dim_operands("pure_callback", dims)
    return [result_aval(dims_from_operands(shape, d), canonical_dtype(dtype))
            for (shape, d), dtype in zip(result_shapes_of(result_shapes, dims), result_dtypes)]


pure_callback_p = define("pure_callback", _pure_callback_impl, _pure_callback_abstract, multiple_results=True)
host_primitives.add(pure_callback_p)
