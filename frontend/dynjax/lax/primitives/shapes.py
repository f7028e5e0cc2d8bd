"""Shape primitives: broadcast_in_dim, iota, reshape, transpose, squeeze, rev
(part of the primitive catalogue, ``lax/primitives/``)."""
from __future__ import annotations

import numpy as np

from ...core.avals import canonical_dtype
from ...core.primitive import impl_view_rules
from ..base import (aval, check_dim_operands, concrete_shape, define, describe_shapes,
                    dims_from_operands, result_aval, same_dim)
from .elementwise import _arr


# ----------------------------------------------------------------------------------------------
# Shapes: broadcast, iota, reshape, transpose, squeeze
# ----------------------------------------------------------------------------------------------


def _broadcast_in_dim_view(x, *dyn_shape, shape, broadcast_dimensions):
    """The broadcast as a read-only view of ``x`` (``impl_view_rules``)."""
    x = _arr(x)
    out_shape = concrete_shape(shape, dyn_shape)
    expanded = [1] * len(out_shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded), out_shape)


def _broadcast_in_dim_impl(x, *dyn_shape, shape, broadcast_dimensions):
    return np.array(_broadcast_in_dim_view(x, *dyn_shape, shape=shape, broadcast_dimensions=broadcast_dimensions))


def _broadcast_in_dim_abstract(x, *dyn_shape, shape, broadcast_dimensions):
    a = aval(x)
    check_dim_operands("broadcast_in_dim", dyn_shape)
    out_shape = dims_from_operands(shape, dyn_shape)
    if len(broadcast_dimensions) != a.ndim:
        raise TypeError(f"broadcast_in_dim: operand rank {a.ndim} does not match "
                        f"broadcast_dimensions {broadcast_dimensions}")
    for i, d in enumerate(broadcast_dimensions):
        if not 0 <= d < len(out_shape):
            raise TypeError(f"broadcast_in_dim: broadcast dimension {d} out of range")
        src = a.shape[i]
        if not (isinstance(src, int) and src == 1) and not same_dim(src, out_shape[d]):
            raise TypeError(f"broadcast_in_dim: cannot broadcast {describe_shapes(a)} to "
                            f"{describe_shapes(result_aval(out_shape, a.dtype))}")
    for d in out_shape:
        if isinstance(d, int) and d < 0:
            raise TypeError(f"broadcast_in_dim: negative dimension {d}")
    return result_aval(out_shape, a.dtype, a.weak_type)


broadcast_in_dim_p = define("broadcast_in_dim", _broadcast_in_dim_impl, _broadcast_in_dim_abstract)
impl_view_rules[broadcast_in_dim_p] = _broadcast_in_dim_view


def _iota_impl(*dyn_shape, dtype, shape, dimension):
    out_shape = concrete_shape(shape, dyn_shape)
    idx = np.arange(out_shape[dimension], dtype=dtype)
    expanded = [1] * len(out_shape)
    expanded[dimension] = out_shape[dimension]
    return np.array(np.broadcast_to(idx.reshape(expanded), out_shape))


def _iota_abstract(*dyn_shape, dtype, shape, dimension):
    check_dim_operands("iota", dyn_shape)
    return result_aval(dims_from_operands(shape, dyn_shape), canonical_dtype(dtype))


iota_p = define("iota", _iota_impl, _iota_abstract)


def _reshape_impl(x, *dyn_shape, new_sizes, dimensions=None):
    x = _arr(x)
    if dimensions is not None:   # read the elements in this axis order (XLA's reshape)
        x = np.transpose(x, tuple(dimensions))
    out = concrete_shape(new_sizes, dyn_shape)
    if int(np.prod(out)) != x.size:
        raise ValueError(f"cannot reshape an array of shape {x.shape} (size {x.size}) into shape {out}")
    return x.reshape(out)


def _reshape_abstract(x, *dyn_shape, new_sizes, dimensions=None):
    a = aval(x)
    check_dim_operands("reshape", dyn_shape)
    out = dims_from_operands(new_sizes, dyn_shape)
    # Sizes must be provably equal: equal products of static dims and the same multiset of dims.
    def split(shape):
        static, sym = 1, []
        for d in shape:
            if isinstance(d, int):
                static *= d
            else:
                sym.append(d)
        return static, sym
    s_in, y_in = split(a.shape)
    s_out, y_out = split(out)
    ok = s_in == s_out and len(y_in) == len(y_out) and all(
        any(d is e for e in y_out) for d in y_in) and all(any(d is e for e in y_in) for d in y_out)
    if not ok and s_in == 0 and s_out == 0:
        ok = True
    provably_different = (not y_in and not y_out) or (
        s_in != s_out and sorted(map(id, y_in)) == sorted(map(id, y_out)))
    if not ok and provably_different:
        raise TypeError(f"reshape: cannot reshape {describe_shapes(a)} into shape "
                        f"{describe_shapes(result_aval(out, a.dtype))}: the sizes differ")
    # Sizes the tracer cannot decide (e.g. n*3 vs a traced product) are checked at run time.
    return result_aval(out, a.dtype, a.weak_type)


reshape_p = define("reshape", _reshape_impl, _reshape_abstract)


def _transpose_abstract(x, *, permutation):
    a = aval(x)
    if sorted(permutation) != list(range(a.ndim)):
        raise TypeError(f"transpose: permutation {permutation} is not a permutation of the {a.ndim} axes")
    return result_aval(tuple(a.shape[p] for p in permutation), a.dtype, a.weak_type)


transpose_p = define("transpose", lambda x, *, permutation: np.array(np.transpose(_arr(x), permutation), order="C"),
                     _transpose_abstract)


def _squeeze_abstract(x, *, dimensions):
    a = aval(x)
    for d in dimensions:
        if not 0 <= d < a.ndim:
            raise TypeError(f"squeeze: axis {d} out of range for {describe_shapes(a)}")
        if not (isinstance(a.shape[d], int) and a.shape[d] == 1):
            raise TypeError(f"squeeze: axis {d} of {describe_shapes(a)} does not have size 1")
    return result_aval(tuple(s for i, s in enumerate(a.shape) if i not in dimensions), a.dtype, a.weak_type)


squeeze_p = define("squeeze", lambda x, *, dimensions: np.squeeze(_arr(x), tuple(dimensions)), _squeeze_abstract)

def _rev_abstract(x, *, dimensions):
    a = aval(x)
    for d in dimensions:
        if not 0 <= d < a.ndim:
            raise TypeError(f"rev: axis {d} out of range for {describe_shapes(a)}")
    return result_aval(a.shape, a.dtype, a.weak_type)


rev_p = define("rev", lambda x, *, dimensions: np.array(np.flip(_arr(x), tuple(dimensions))), _rev_abstract)
