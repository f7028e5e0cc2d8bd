"""Array creation: ones, zeros, full, empty, *_like, arange, linspace, eye, array, asarray.

Every size may be a traced integer (a dynamic dim): ``ones(n)``, ``arange(a, b)`` and
``linspace(0, 1, n)`` with traced ``n`` produce arrays of dynamic shape.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import bool_, canonical_dtype, float64, int64, is_float_dtype
from ..core.trace import Tracer, typeof
from ..lax.api import canonicalize_dim


def _shape_arg(shape):
    if isinstance(shape, (list, tuple)):
        return tuple(canonicalize_dim(d, "size") for d in shape)
    return (canonicalize_dim(shape, "size"),)


def _fill_dtype(fill_value, dtype):
    if dtype is not None:
        return canonical_dtype(dtype)
    if isinstance(fill_value, Tracer):
        return fill_value.aval.dtype
    a = typeof(fill_value) if not isinstance(fill_value, (list, tuple)) else typeof(np.asarray(fill_value))
    return a.dtype


def full(shape, fill_value, dtype=None):
    """An array of the given (possibly dynamic) shape filled with ``fill_value``."""
    shape = _shape_arg(shape)
    dtype = _fill_dtype(fill_value, dtype)
    if isinstance(fill_value, Tracer):
        value = lax.convert_element_type(fill_value, dtype)
    else:
        value = np.asarray(fill_value, dtype=dtype)
        value = value[()] if value.ndim == 0 else value
    vshape = typeof(value).shape
    return lax.broadcast_in_dim(value, shape, tuple(range(len(shape) - len(vshape), len(shape))))


def ones(shape, dtype=None):
    return full(shape, 1, float64 if dtype is None else dtype)


def zeros(shape, dtype=None):
    return full(shape, 0, float64 if dtype is None else dtype)


def empty(shape, dtype=None):
    """Like ``zeros``: XLA has no uninitialised memory to offer."""
    return zeros(shape, dtype)


def full_like(a, fill_value, dtype=None, shape=None):
    a = asarray(a)
    av = typeof(a)
    return full(av.shape if shape is None else shape, fill_value, av.dtype if dtype is None else dtype)


def ones_like(a, dtype=None, shape=None):
    return full_like(a, 1, dtype, shape)


def zeros_like(a, dtype=None, shape=None):
    return full_like(a, 0, dtype, shape)


def empty_like(a, dtype=None, shape=None):
    return full_like(a, 0, dtype, shape)


def _is_traced(*xs) -> bool:
    return any(isinstance(x, Tracer) for x in xs)


def arange(start, stop=None, step=None, dtype=None):
    """``arange`` whose bounds may be traced integers (the length is then a dynamic dim)."""
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    if not _is_traced(start, stop, step):
        out_dtype = canonical_dtype(dtype) if dtype is not None else canonical_dtype(
            np.result_type(*[np.asarray(v) for v in (start, stop, step)]))
        n = len(np.arange(start, stop, step))
        idx = lax.iota(int64 if not is_float_dtype(out_dtype) else out_dtype, n)
        if start == 0 and step == 1 and not is_float_dtype(out_dtype):
            return lax.convert_element_type(idx, out_dtype) if out_dtype != int64 else idx
        from .ufuncs import add, multiply
        return _astype(add(multiply(idx, step), start), out_dtype)
    from .ufuncs import add, multiply, subtract, floor_divide, maximum
    for v in (start, stop, step):
        if isinstance(v, Tracer) and is_float_dtype(v.aval.dtype):
            raise TypeError("arange with traced float bounds has a data-dependent length; use linspace")
    if not isinstance(step, Tracer) and step == 0:
        raise ValueError("arange: step must not be zero")
    # length = max(0, ceil((stop - start) / step)) computed with integer arithmetic
    span = subtract(stop, start)
    if isinstance(step, Tracer):
        raise TypeError("arange with a traced step is not supported; use a static step")
    if step > 0:
        n = floor_divide(add(span, step - 1), step)
    else:
        n = floor_divide(add(span, step + 1), step)
    n = maximum(n, 0)
    idx = lax.iota(int64, n)
    out = idx if (isinstance(start, int) and start == 0 and step == 1) else add(multiply(idx, step), start)
    out_dtype = canonical_dtype(dtype) if dtype is not None else int64
    return _astype(out, out_dtype)


def _astype(x, dtype):
    dtype = canonical_dtype(dtype)
    if typeof(x).dtype == dtype:
        return x
    return lax.convert_element_type(x, dtype)


def linspace(start, stop, num=50, endpoint=True, dtype=None):
    """``num`` evenly spaced values; ``num`` may be a traced integer."""
    from .ufuncs import add, multiply, subtract, true_divide, maximum, where, equal
    n = canonicalize_dim(num, "num")
    out_dtype = canonical_dtype(dtype) if dtype is not None else float64
    idx = lax.convert_element_type(lax.iota(int64, n), float64)
    if isinstance(n, int):
        div = (n - 1 if endpoint else n)
        step = true_divide(subtract(stop, start), float(div) if div > 0 else 1.0)
    else:
        div = subtract(n, 1) if endpoint else n
        div = lax.convert_element_type(maximum(div, 1), float64)
        step = true_divide(subtract(stop, start), div)
    out = add(multiply(idx, step), start)
    if endpoint:
        # make the last element exactly ``stop`` (as numpy does)
        last = subtract(n, 1)
        out = where(equal(lax.iota(int64, n), last), lax.convert_element_type(
            full((), stop, float64) if not isinstance(stop, Tracer) else stop, float64), out)
    return _astype(out, out_dtype)


def eye(N, M=None, k=0, dtype=None):
    from .ufuncs import add, equal
    M = N if M is None else M
    rows = lax.broadcasted_iota(int64, (N, M), 0)
    cols = lax.broadcasted_iota(int64, (N, M), 1)
    return _astype(equal(add(rows, k), cols), float64 if dtype is None else dtype)


def identity(n, dtype=None):
    return eye(n, dtype=dtype)


def asarray(a, dtype=None):
    """A traced value as is (cast if asked), nested lists/tuples of tracers stacked."""
    if isinstance(a, Tracer):
        return _astype(a, dtype) if dtype is not None else a
    if isinstance(a, (list, tuple)) and any(_contains_tracer(x) for x in a):
        from .shape_ops import stack
        return stack([asarray(x, dtype) for x in a])
    arr = np.asarray(a)
    if arr.dtype == object:
        raise TypeError(f"cannot convert {type(a).__name__} to an array")
    out_dtype = canonical_dtype(dtype if dtype is not None else arr.dtype)
    if dtype is None and isinstance(a, (bool, int, float)):
        return a  # keep Python scalars weakly typed
    arr = arr.astype(out_dtype, copy=False)
    from ..core.trace import current_trace, _eval_trace
    if current_trace() is _eval_trace:
        return arr
    return current_trace().pure(arr) if arr.ndim else current_trace().pure(arr[()])


def _contains_tracer(x) -> bool:
    if isinstance(x, Tracer):
        return True
    if isinstance(x, (list, tuple)):
        return any(_contains_tracer(y) for y in x)
    return False


def array(a, dtype=None, copy=True):
    out = asarray(a, dtype)
    if isinstance(out, np.ndarray) and copy:
        return out.copy()
    if isinstance(out, (bool, int, float)):
        return np.asarray(out, dtype=canonical_dtype(type(out)))
    return out
