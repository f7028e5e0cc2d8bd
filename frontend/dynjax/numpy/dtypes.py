"""The dtype objects of ``jax.numpy``: scalar types that are also constructors, the abstract
classes of numpy's hierarchy, the predicates on them (``issubdtype isdtype can_cast
isscalar iterable dtype``) and ``ndarray`` for ``isinstance`` checks.

``jnp.float32`` is a scalar type as in JAX: ``jnp.float32(3)`` is a 0-d float32 array (an
array of that dtype for an array argument, traced or not), ``np.dtype(jnp.float32)`` is
float32 (numpy reads its ``dtype`` attribute), it compares equal to ``np.float32`` and works
wherever a dtype is expected (``astype``, ``zeros(..., dtype=)``, ``finfo``).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ..core.avals import canonical_dtype
from ..core.trace import Tracer, typeof

# numpy's abstract scalar classes, as JAX re-exports them
generic = np.generic
number = np.number
inexact = np.inexact
floating = np.floating
complexfloating = np.complexfloating
integer = np.integer
signedinteger = np.signedinteger
unsignedinteger = np.unsignedinteger
flexible = np.flexible
character = np.character
object_ = np.object_


class _ScalarMeta(type):
    """The metaclass of dynjax's scalar types: calling one casts to its dtype."""

    def __call__(cls, x=0):
        from .creation import asarray
        return asarray(x, dtype=cls.dtype)

    def __eq__(cls, other):
        return cls is other or cls.dtype.type == other

    def __ne__(cls, other):
        return not cls.__eq__(other)

    def __hash__(cls):
        return hash(cls.dtype.type)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls):
        return f"<class 'dynjax.numpy.{cls.__name__}'>"


def _scalar_type(name, dtype):
    return _ScalarMeta(name, (object,), {"dtype": np.dtype(dtype), "__module__": "dynjax.numpy",
                                          "__doc__": f"The {np.dtype(dtype)} scalar type: "
                                                     f"``{name}(x)`` is ``asarray(x, {np.dtype(dtype)})``."})


_NAMES = {
    "bool_": np.bool_, "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "float16": np.float16, "float32": np.float32, "float64": np.float64,
    "complex64": np.complex64, "complex128": np.complex128,
}
_TYPES = {name: _scalar_type(name, dt) for name, dt in _NAMES.items()}
bool_ = _TYPES["bool_"]
int8, int16, int32, int64 = (_TYPES[f"int{b}"] for b in (8, 16, 32, 64))
uint8, uint16, uint32, uint64 = (_TYPES[f"uint{b}"] for b in (8, 16, 32, 64))
float16, float32, float64 = (_TYPES[f"float{b}"] for b in (16, 32, 64))
complex64, complex128 = _TYPES["complex64"], _TYPES["complex128"]
bfloat16 = _scalar_type("bfloat16", ml_dtypes.bfloat16)
# aliases (JAX's defaults with 64-bit types enabled, which is dynjax's only mode)
int_ = int64
uint = uint64
float_ = float64
double = float64
single = float32
half = float16
complex_ = complex128
cdouble = complex128
csingle = complex64

euler_gamma = 0.5772156649015329


def _scalar_class(x):
    """The numpy scalar class a dtype-like ``x`` stands for (abstract classes pass through)."""
    if isinstance(x, type) and issubclass(x, np.generic):
        return x
    if isinstance(x, _ScalarMeta):
        return x.dtype.type
    if isinstance(x, (Tracer, np.ndarray)) or (not isinstance(x, (type, str, np.dtype)) and hasattr(x, "dtype")):
        return np.dtype(typeof(x).dtype).type
    return canonical_dtype(x).type


def _bfloat16_parent(cls, parent):
    return cls is np.dtype(ml_dtypes.bfloat16).type and parent in (
        np.floating, np.inexact, np.number, np.generic)


def issubdtype(arg1, arg2):
    """Whether ``arg1`` is ``arg2`` or below it in numpy's hierarchy (``issubdtype(jnp.float32,
    jnp.floating)``); bfloat16 counts as a floating type, as in JAX."""
    a = _scalar_class(arg1)
    b = _scalar_class(arg2)
    if _bfloat16_parent(a, b):
        return True
    return bool(np.issubdtype(a, b))


_KINDS = {
    "bool": lambda t: t is np.bool_,
    "signed integer": lambda t: issubclass(t, np.signedinteger),
    "unsigned integer": lambda t: issubclass(t, np.unsignedinteger),
    "integral": lambda t: issubclass(t, np.integer),
    "real floating": lambda t: issubclass(t, np.floating) or _bfloat16_parent(t, np.floating),
    "complex floating": lambda t: issubclass(t, np.complexfloating),
    "numeric": lambda t: t is not np.bool_ and (issubclass(t, np.number) or _bfloat16_parent(t, np.number)),
}


def isdtype(dtype, kind):
    """The array API's ``isdtype``: whether ``dtype`` is of ``kind`` (a dtype, one of
    ``'bool' 'signed integer' 'unsigned integer' 'integral' 'real floating' 'complex
    floating' 'numeric'``, or a tuple of those)."""
    t = _scalar_class(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            if k not in _KINDS:
                raise ValueError(f"isdtype: unrecognized kind {k!r}; expected one of {sorted(_KINDS)}")
            if _KINDS[k](t):
                return True
        elif t is _scalar_class(k):
            return True
    return False


def can_cast(from_, to, casting="safe"):
    """numpy's ``can_cast`` on dtypes (or arrays, by their dtype)."""
    return bool(np.can_cast(np.dtype(_scalar_class(from_)), np.dtype(_scalar_class(to)), casting))


def isscalar(element):
    """True for Python and numpy scalars and for 0-d arrays (traced or not), as in JAX."""
    if isinstance(element, Tracer):
        return typeof(element).ndim == 0
    if isinstance(element, np.ndarray):
        return element.ndim == 0
    return bool(np.isscalar(element))


def iterable(y):
    """Whether ``iter(y)`` works."""
    try:
        iter(y)
    except TypeError:
        return False
    return True


class _DTypeMeta(type):
    def __instancecheck__(cls, instance):
        return isinstance(instance, np.dtype)


class dtype(metaclass=_DTypeMeta):
    """``jnp.dtype(x)``: the numpy dtype of a dtype spec or array (dynjax's supported dtypes
    only); ``isinstance(d, jnp.dtype)`` holds for numpy dtypes."""

    def __new__(cls, obj, align=False, copy=False):
        if isinstance(obj, Tracer):
            return typeof(obj).dtype
        if isinstance(obj, _ScalarMeta):
            return obj.dtype
        return canonical_dtype(obj)



class _ArrayMeta(type):
    def __instancecheck__(cls, instance):
        return isinstance(instance, (np.ndarray, Tracer))


class ndarray(metaclass=_ArrayMeta):
    """For ``isinstance(x, jnp.ndarray)`` (JAX's ``Array``): true for numpy arrays (dynjax's
    eager values) and traced values. Not a constructor: use ``jnp.asarray``."""

    def __new__(cls, *args, **kwargs):
        raise TypeError("jnp.ndarray is for isinstance checks; create arrays with jnp.asarray or jnp.array")
