"""Numpy semantics on top of lax: dtype promotion (with weak Python scalars) and broadcasting.

Python scalars are *weakly typed*: ``x_f32 + 1.0`` stays float32 and ``n_i32 + 1`` stays
int32, as in numpy 2 and JAX. A weak scalar of a higher kind (a float with an int array)
promotes to that kind's default dtype (float64). Two strong dtypes promote as numpy does.

Broadcasting follows numpy: align trailing axes; an axis of static size 1 stretches;
dynamic axes broadcast only against the same dim or a static 1.
"""
from __future__ import annotations

import numpy as np

from ..core.avals import bool_, canonical_dtype, float64, int64, same_dim
from ..core.trace import Tracer, typeof
from .. import lax
from ..lax.base import describe_shapes, dynamic_hint

_KIND_ORDER = {"b": 0, "i": 1, "u": 1, "f": 2}


def _kind(dtype) -> int:
    return _KIND_ORDER[np.dtype(dtype).kind]


def _default_of_kind(k: int):
    return (bool_, int64, float64)[k]


def result_dtype(*args):
    """The promoted dtype of several operands and whether the result is weakly typed."""
    avals = [typeof(a) for a in args]
    strong = [a.dtype for a in avals if not a.weak_type]
    weak = [a.dtype for a in avals if a.weak_type]
    if strong:
        dt = strong[0]
        for d in strong[1:]:
            dt = canonical_dtype(np.promote_types(dt, d))
        if weak:
            wk = max(_kind(d) for d in weak)
            if wk > _kind(dt):
                return _default_of_kind(wk), False
        return dt, False
    wk = max(_kind(d) for d in weak)
    return _default_of_kind(wk), True


def asarray_of(x, dtype, weak_type=False):
    """``x`` (tracer, numpy value or Python scalar) converted to ``dtype``."""
    if isinstance(x, Tracer):
        # a weakly typed tracer of the right dtype is fine: strong operands win in every operation
        return x if x.aval.dtype == dtype else lax.convert_element_type(x, dtype, weak_type)
    if isinstance(x, (bool, int, float)) and weak_type:
        return dtype.type(x) if dtype != float64 or isinstance(x, float) else float(x)
    arr = np.asarray(x)
    if arr.dtype != dtype:
        arr = arr.astype(dtype)
    return arr[()] if arr.ndim == 0 else arr


def promote(*args):
    """Convert all operands to their common dtype (weak scalars stay literals)."""
    dtype, weak = result_dtype(*args)
    out = []
    for a in args:
        if isinstance(a, (bool, int, float)) and not isinstance(a, Tracer):
            out.append(dtype.type(a))
        else:
            out.append(asarray_of(a, dtype, weak))
    return out


def broadcast_shapes(*shapes):
    """The numpy broadcast of several shapes whose entries may be dim tracers."""
    ndim = max((len(s) for s in shapes), default=0)
    result = []
    for axis in range(ndim):
        dims = [s[axis - ndim + len(s)] for s in shapes if axis - ndim + len(s) >= 0]
        chosen = 1
        for d in dims:
            if isinstance(d, int) and d == 1:
                continue
            if isinstance(chosen, int) and chosen == 1:
                chosen = d
            elif not same_dim(chosen, d):
                raise TypeError(f"shapes {_fmt(shapes)} cannot be broadcast together: "
                                + dynamic_hint((chosen,), (d,)))
        result.append(chosen)
    return tuple(result)


def _fmt(shapes):
    from ..core.avals import make_aval
    return describe_shapes(*[make_aval(s, float64) for s in shapes])


def broadcast_to_shape(x, shape):
    a = typeof(x)
    if len(a.shape) == len(shape) and all(same_dim(p, q) for p, q in zip(a.shape, shape)):
        return x
    nlead = len(shape) - a.ndim
    if nlead < 0:
        raise TypeError(f"cannot broadcast an array of rank {a.ndim} to rank {len(shape)}")
    keep = []
    squeeze_axes = []
    for i, d in enumerate(a.shape):
        target = shape[nlead + i]
        if same_dim(d, target):
            keep.append(nlead + i)
        elif isinstance(d, int) and d == 1:
            squeeze_axes.append(i)
        else:
            raise TypeError(f"cannot broadcast shape {_fmt([a.shape])} to {_fmt([shape])}")
    if squeeze_axes:
        x = lax.squeeze(x, squeeze_axes)
    return lax.broadcast_in_dim(x, shape, keep)


def broadcast_arrays(*args, keep_scalars: bool = False):
    """Broadcast to the common shape. With ``keep_scalars`` rank-0 operands are left alone
    (elementwise binary primitives accept a scalar beside an array)."""
    shapes = [typeof(a).shape for a in args]
    shape = broadcast_shapes(*shapes)
    return [a if keep_scalars and typeof(a).ndim == 0 else broadcast_to_shape(a, shape) for a in args]


def promote_and_broadcast(*args, keep_scalars: bool = False):
    return broadcast_arrays(*promote(*args), keep_scalars=keep_scalars)
