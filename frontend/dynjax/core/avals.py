"""Abstract values: what the tracer knows about an array without its data.

A ``ShapedArray`` has a fully static shape. A ``DShapedArray`` may have shape
entries that are not integers; what they are depends on where the aval lives:

* in a tracer's aval: dimension tracers (scalar integer tracers of the same trace);
* in a jaxpr variable's type: jaxpr variables (``Var``) bound earlier;
* in an ``in_type``: ``DBIdx(i)``, the i-th entry of the same input type;
* in an ``out_type``: ``InDBIdx(i)`` (the i-th input) or ``OutDBIdx(i)`` (the
  i-th output of the same output type).

Dtypes are numpy dtypes (bfloat16 from ``ml_dtypes``); they print as JAX prints them:
``bool i8 i16 i32 i64 u8 u16 u32 u64 f16 bf16 f32 f64 c64 c128``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import ml_dtypes  # bfloat16 (a dependency of jaxlib)

bool_ = np.dtype("bool")
int8, int16, int32, int64 = (np.dtype(f"int{b}") for b in (8, 16, 32, 64))
uint8, uint16, uint32, uint64 = (np.dtype(f"uint{b}") for b in (8, 16, 32, 64))
float16, float32, float64 = (np.dtype(f"float{b}") for b in (16, 32, 64))
bfloat16 = np.dtype(ml_dtypes.bfloat16)
complex64, complex128 = np.dtype("complex64"), np.dtype("complex128")
#: JAX's ``float0``: the tangent / cotangent type of integer and bool values (no data; not a
#: dtype programs compute with, so not in the catalogue below)
float0 = np.dtype([("float0", np.void, 0)])

# Every dtype dynjax computes with: (dtype, printed name as JAX prints it, category).
_CATALOGUE = (
    (bool_, "bool", "bool"),
    (int8, "i8", "signed"), (int16, "i16", "signed"), (int32, "i32", "signed"), (int64, "i64", "signed"),
    (uint8, "u8", "unsigned"), (uint16, "u16", "unsigned"), (uint32, "u32", "unsigned"),
    (uint64, "u64", "unsigned"),
    (float16, "f16", "float"), (bfloat16, "bf16", "float"), (float32, "f32", "float"),
    (float64, "f64", "float"),
    (complex64, "c64", "complex"), (complex128, "c128", "complex"),
)
SUPPORTED_DTYPES = tuple(d for d, _, _ in _CATALOGUE)
_SHORT_NAMES = {d: n for d, n, _ in _CATALOGUE}
_CATEGORY = {d: c for d, _, c in _CATALOGUE}


def canonical_dtype(dtype: Any) -> np.dtype:
    """Map a user's dtype spec (``float``, ``'int8'``, ``np.complex64``, ``ml_dtypes.bfloat16``
    ...) to a supported numpy dtype. Never narrows or widens: an unsupported dtype (``float128``,
    strings, objects, datetimes) is a TypeError."""
    if dtype is float:
        return float64
    if dtype is int:
        return int64
    if dtype is bool:
        return bool_
    if dtype is complex:
        return complex128
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"dtype {dtype!r} is not understood") from e
    if not dt.isnative:   # big-endian data: the same numbers, converted on the way in
        dt = dt.newbyteorder("=")
    if dt in _CATEGORY:
        return dt
    names = " ".join(str(d) for d in SUPPORTED_DTYPES)
    raise TypeError(f"dtype {dt} is not supported (supported: {names})")


def dtype_short_name(dtype: np.dtype) -> str:
    return _SHORT_NAMES.get(np.dtype(dtype), str(dtype))


def dtype_category(dtype) -> str:
    """``bool``, ``signed``, ``unsigned``, ``float`` (incl. bfloat16) or ``complex``."""
    return _CATEGORY[np.dtype(dtype)]


def is_integer_dtype(dtype) -> bool:
    return _CATEGORY.get(np.dtype(dtype)) in ("signed", "unsigned")


def is_unsigned_dtype(dtype) -> bool:
    return _CATEGORY.get(np.dtype(dtype)) == "unsigned"


def is_float_dtype(dtype) -> bool:
    """Real floating point, bfloat16 included (which numpy's ``issubdtype`` does not know)."""
    return _CATEGORY.get(np.dtype(dtype)) == "float"


def is_complex_dtype(dtype) -> bool:
    return _CATEGORY.get(np.dtype(dtype)) == "complex"


def finfo(dtype):
    """The limits of a floating point dtype (``numpy.finfo``), bfloat16 included."""
    return ml_dtypes.finfo(np.dtype(dtype))


def iinfo(dtype):
    """The limits of an integer dtype (``numpy.iinfo``)."""
    return ml_dtypes.iinfo(np.dtype(dtype))


def is_inexact_dtype(dtype) -> bool:
    """Floating point or complex."""
    return _CATEGORY.get(np.dtype(dtype)) in ("float", "complex")


def complex_dtype(dtype) -> np.dtype:
    """The complex dtype whose parts are ``dtype``: complex64 for float32 (and narrower floats),
    complex128 for float64."""
    dt = np.dtype(dtype)
    if is_complex_dtype(dt):
        return dt
    return complex128 if dt == float64 else complex64


def real_dtype(dtype) -> np.dtype:
    """The dtype of the real (or imaginary) part: float32 for complex64, float64 for complex128."""
    dt = np.dtype(dtype)
    return {complex64: float32, complex128: float64}.get(dt, dt)


@dataclass(frozen=True)
class DBIdx:
    """Reference, inside an in_type, to the input at position ``val`` of that same in_type."""
    val: int

    def __repr__(self):
        return f"DBIdx({self.val})"


@dataclass(frozen=True)
class InDBIdx:
    """Reference, inside an out_type, to the input at position ``val`` of the program."""
    val: int

    def __repr__(self):
        return f"InDBIdx({self.val})"


@dataclass(frozen=True)
class OutDBIdx:
    """Reference, inside an out_type, to the output at position ``val`` of that same out_type."""
    val: int

    def __repr__(self):
        return f"OutDBIdx({self.val})"


INDEX_TYPES = (DBIdx, InDBIdx, OutDBIdx)


def same_dim(d1, d2) -> bool:
    """Two dims are equal when both are the same int, or the very same symbolic object.

    A dim tracer of an enclosing scope and one of a nested scope are compared as seen
    from the nested scope: the outer one stands for its captured copy there.
    """
    if isinstance(d1, int) and isinstance(d2, int):
        return d1 == d2
    if isinstance(d1, INDEX_TYPES) or isinstance(d2, INDEX_TYPES):
        return type(d1) is type(d2) and d1 == d2
    if d1 is d2:
        return True
    s1, s2 = getattr(d1, "sym", None), getattr(d2, "sym", None)
    if s1 is not None and s2 is not None:
        # equal symbolic values (``n - 1`` computed twice, ``max(n, 0)`` once ``n`` is a size)
        from .symbolic import decide_eq
        if decide_eq(s1, s2):
            return True
    t1, t2 = getattr(d1, "_trace", None), getattr(d2, "_trace", None)
    if t1 is None or t2 is None or t1 is t2:
        return False
    inner, inner_dim, outer_dim = (t1, d1, d2) if t1.level > t2.level else (t2, d2, d1)
    if not (inner.active and t1.active and t2.active):
        return False
    return inner.full_raise(outer_dim) is inner_dim


def _dim_label(d) -> str:
    sym = getattr(d, "sym", None)
    return str(sym) if sym is not None else str(d)


def is_static_shape(shape) -> bool:
    return all(isinstance(d, int) for d in shape)


class ShapedArray:
    """An array type with a static shape, e.g. ``f64[3,4]``."""
    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, weak_type: bool = False):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def update(self, shape=None, dtype=None, weak_type=None):
        return make_aval(self.shape if shape is None else shape,
                         self.dtype if dtype is None else dtype,
                         self.weak_type if weak_type is None else weak_type)

    def strip_weak_type(self):
        return self.update(weak_type=False) if self.weak_type else self

    def same_type(self, other) -> bool:
        """Type equality as the type checker sees it (weak types are ignored)."""
        return (isinstance(other, ShapedArray) and self.dtype == other.dtype
                and len(self.shape) == len(other.shape)
                and all(same_dim(a, b) for a, b in zip(self.shape, other.shape)))

    def str_short(self, dim_name=None) -> str:
        """``f64[3,n - 1]``: dynamic dims by their symbolic expression unless ``dim_name`` says
        otherwise (the jaxpr printer names them by variable)."""
        dim_name = dim_name or _dim_label
        dims = ",".join(str(d) if isinstance(d, int) else dim_name(d) for d in self.shape)
        return f"{dtype_short_name(self.dtype)}[{dims}]"

    def __repr__(self):
        return f"{type(self).__name__}({self.str_short()}{', weak' if self.weak_type else ''})"

    def __str__(self):
        return self.str_short()


class DShapedArray(ShapedArray):
    """An array type whose shape may hold symbolic dimensions (see the module docstring)."""
    __slots__ = ()


def make_aval(shape, dtype, weak_type: bool = False) -> ShapedArray:
    """A ShapedArray when every dim is an int, otherwise a DShapedArray."""
    shape = tuple(shape)
    cls = ShapedArray if is_static_shape(shape) else DShapedArray
    return cls(shape, dtype, weak_type)


def scalar_aval(dtype, weak_type: bool = False) -> ShapedArray:
    return ShapedArray((), dtype, weak_type)


def dim_aval() -> ShapedArray:
    """The type of a dimension value: ``i64[]``, weakly typed like the Python int it
    stands for (so ``x_f32 * x.shape[0]`` stays float32, as in numpy)."""
    return ShapedArray((), int64, weak_type=True)


#: types that are never foreign arrays (``core.trace`` adds its ``Tracer``)
not_foreign_types = [np.ndarray, np.generic, bool, int, float, complex, str, type]


def is_foreign_array(x) -> bool:
    """Whether ``x`` is an array of another library (a ``jax.Array``, anything with
    ``__array__`` or ``__jax_array__``): dynjax takes it as the numpy array it converts to."""
    return not isinstance(x, tuple(not_foreign_types)) and (
        hasattr(x, "__jax_array__") or hasattr(x, "__array__"))


def from_foreign_array(x):
    """``x`` (``is_foreign_array``) as a numpy array; ``__jax_array__`` first, as in JAX (it
    may give a dynjax tracer, returned as is)."""
    if hasattr(x, "__jax_array__"):
        x = x.__jax_array__()
        if not is_foreign_array(x):
            return x if not isinstance(x, np.generic) else np.asarray(x)   # a dynjax tracer, a number
    return np.asarray(x)


def aval_of_value(x) -> ShapedArray:
    """The abstract value of a concrete Python or numpy value (or a foreign array)."""
    if isinstance(x, (np.ndarray, np.generic)):
        return ShapedArray(x.shape, canonical_dtype(x.dtype))
    if isinstance(x, bool):
        return ShapedArray((), bool_, weak_type=False)
    if isinstance(x, int):
        return ShapedArray((), int64, weak_type=True)
    if isinstance(x, float):
        return ShapedArray((), float64, weak_type=True)
    if isinstance(x, complex):
        return ShapedArray((), complex128, weak_type=True)
    if is_foreign_array(x):
        y = from_foreign_array(x)
        if isinstance(y, np.ndarray) and y.dtype != object:
            return aval_of_value(y)
        if hasattr(y, "aval"):
            return y.aval
    raise TypeError(f"{type(x).__name__} is not a valid array value")
