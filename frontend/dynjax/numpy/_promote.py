"""Numpy semantics on top of lax: dtype promotion (with weak Python scalars) and broadcasting.

Python scalars are *weakly typed*: ``x_f32 + 1.0`` stays float32 and ``n_i32 + 1`` stays
int32, as in numpy 2 and JAX. A weak scalar of a higher kind (a float with an int array)
promotes to that kind's default dtype (float64). Strong dtypes promote on JAX's lattice
(``_LATTICE`` below; where it differs from numpy is listed there).

Broadcasting follows numpy: align trailing axes; an axis of static size 1 stretches;
dynamic axes broadcast only against the same dim or a static 1.
"""
from __future__ import annotations

import numpy as np

from ..core import avals as A
from ..core.avals import float64, same_dim
from ..core.trace import Tracer, typeof
from .. import lax
from ..lax.base import describe_shapes, dynamic_hint

# --- the promotion lattice -------------------------------------------------------------------
# JAX's type promotion lattice (its documented design, written out here), with x64 defaults.
# Nodes are dtypes and the three weak kinds of Python scalars: "i*" (int), "f*" (float),
# "c*" (complex). An edge a -> b means "a promotes to b"; two dtypes promote to their least
# upper bound. Where numpy differs, dynjax follows this lattice, which never widens a
# float because of an integer operand: i64 + f32 -> f32 (numpy: f64), i32 + f16 -> f16
# (numpy: f64), bf16 + f16 -> f32. Signed with unsigned of the same width goes up one width
# (i8 + u8 -> i16), and i64 + u64 -> f64, as in numpy.
_LATTICE = {
    A.bool_: ["i*"],
    "i*": [A.uint8, A.int8],
    A.uint8: [A.int16, A.uint16], A.uint16: [A.int32, A.uint32], A.uint32: [A.int64, A.uint64],
    A.uint64: ["f*"],
    A.int8: [A.int16], A.int16: [A.int32], A.int32: [A.int64], A.int64: ["f*"],
    "f*": [A.bfloat16, A.float16, "c*"],
    A.bfloat16: [A.float32], A.float16: [A.float32], A.float32: [A.float64, A.complex64],
    A.float64: [A.complex128],
    "c*": [A.complex64], A.complex64: [A.complex128], A.complex128: [],
}
_WEAK_DEFAULT = {"i*": A.int64, "f*": A.float64, "c*": A.complex128}
_WEAK_PYTHON = {A.int64: int, A.float64: float, A.complex128: complex}


def _upper_sets():
    ups = {}

    def up(n):
        if n not in ups:
            ups[n] = {n}.union(*[up(m) for m in _LATTICE[n]])
        return ups[n]
    for n in _LATTICE:
        up(n)
    return ups


def _join_table():
    ups = _upper_sets()
    table = {}
    for a in _LATTICE:
        for b in _LATTICE:
            common = ups[a] & ups[b]
            least = [n for n in common if common <= ups[n]]
            assert len(least) == 1, (a, b)
            table[a, b] = least[0]
    return table


_JOIN = _join_table()


def _node(aval):
    """The lattice node of an operand: weak Python-scalar kinds stand apart from dtypes."""
    if aval.weak_type:
        cat = A.dtype_category(aval.dtype)
        if cat in ("signed", "unsigned"):
            return "i*"
        if cat == "float":
            return "f*"
        if cat == "complex":
            return "c*"
    return aval.dtype


def promote_dtypes(*avals):
    """``(dtype, weak)``: the promoted dtype of operands with these avals. The result is
    weakly typed only when every operand is (a Python scalar, or derived from ones)."""
    node = _node(avals[0])
    for a in avals[1:]:
        node = _JOIN[node, _node(a)]
    if isinstance(node, str):
        return _WEAK_DEFAULT[node], all(a.weak_type for a in avals)
    return node, False


def promote_types(type1, type2) -> np.dtype:
    """numpy's ``promote_types`` on dynjax's lattice (strong dtypes)."""
    return promote_dtypes(A.ShapedArray((), A.canonical_dtype(type1)),
                          A.ShapedArray((), A.canonical_dtype(type2)))[0]


def result_type(*args) -> np.dtype:
    """The dtype of an operation on ``args`` (arrays, dtypes, or Python scalars, which are weak)."""
    avals = []
    for x in args:
        if isinstance(x, (np.dtype, type, str)) and not isinstance(x, (bool, int, float, complex)) \
                or hasattr(x, "type") and isinstance(x, np.dtype):
            avals.append(A.ShapedArray((), A.canonical_dtype(x)))
        else:
            avals.append(typeof(x))
    return promote_dtypes(*avals)[0]


def result_dtype(*args):
    """The promoted dtype of several operands and whether the result is weakly typed."""
    return promote_dtypes(*[typeof(a) for a in args])


def asarray_of(x, dtype, weak_type=False):
    """``x`` (tracer, numpy value or Python scalar) converted to ``dtype``."""
    if isinstance(x, Tracer):
        # a weakly typed tracer of the right dtype is fine: strong operands win in every operation
        return x if x.aval.dtype == dtype else lax.convert_element_type(x, dtype, weak_type)
    if isinstance(x, (int, float, complex)) and not isinstance(x, bool) and weak_type:
        # a weak result of Python scalars stays a Python scalar (a weakly typed literal)
        return _WEAK_PYTHON.get(dtype, dtype.type)(x)
    arr = np.asarray(x)
    if arr.dtype != dtype:
        arr = arr.astype(dtype)
    return arr[()] if arr.ndim == 0 else arr


def promote(*args):
    """Convert all operands to their common dtype (weak scalars stay literals)."""
    dtype, weak = result_dtype(*args)
    out = []
    for a in args:
        if isinstance(a, (bool, int, float, complex)) and not (weak and type(a) in (int, float, complex)):
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
