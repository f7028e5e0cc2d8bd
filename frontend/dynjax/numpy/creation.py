"""Array creation: ones, zeros, full, empty, *_like, arange, linspace, eye, array, asarray.

Every size may be a traced integer (a dynamic dim): ``ones(n)``, ``arange(a, b)`` and
``linspace(0, 1, n)`` with traced ``n`` produce arrays of dynamic shape. Size arithmetic
on concrete values is done in Python, so printed jaxprs only hold the traced part.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import canonical_dtype, float64, int64, is_integer_dtype
from ..core.staging import is_known_dim
from ..core.trace import Tracer, current_trace, typeof
from ..lax.api import canonicalize_dim, shape_entries


def _shape_arg(shape):
    return tuple(canonicalize_dim(d, "size") for d in shape_entries(shape))


def _constant(value, dtype):
    """A concrete value as an array of ``dtype``: a numpy array eagerly, a constant when tracing."""
    arr = np.asarray(value, dtype=dtype)
    trace = current_trace()
    if trace.level == 0:
        return arr
    return trace.pure(arr[()] if arr.ndim == 0 else arr)


def full(shape, fill_value, dtype=None):
    """An array of the given (possibly dynamic) shape filled with ``fill_value``."""
    shape = _shape_arg(shape)
    if isinstance(fill_value, Tracer):
        value = _astype(fill_value, dtype) if dtype is not None else fill_value
    else:
        arr = np.asarray(fill_value)
        if arr.dtype == object:
            raise TypeError(f"full: fill_value {fill_value!r} is not a number or an array")
        arr = arr.astype(canonical_dtype(arr.dtype if dtype is None else dtype))
        if not shape and arr.ndim == 0:
            return _constant(arr, arr.dtype)
        value = arr[()] if arr.ndim == 0 else arr
    vshape = typeof(value).shape
    if len(vshape) > len(shape):
        raise ValueError(f"full: fill_value of rank {len(vshape)} does not fit the shape {shape}")
    if not shape:
        return value
    return lax.broadcast_in_dim(value, shape, tuple(range(len(shape) - len(vshape), len(shape))))


def ones(shape, dtype=None):
    """An array of ones (float64 unless ``dtype`` is given)."""
    return full(shape, 1, float64 if dtype is None else dtype)


def zeros(shape, dtype=None):
    """An array of zeros (float64 unless ``dtype`` is given)."""
    return full(shape, 0, float64 if dtype is None else dtype)


def empty(shape, dtype=None):
    """Like ``zeros``: XLA has no uninitialised memory to offer."""
    return zeros(shape, dtype)


def full_like(a, fill_value, dtype=None, shape=None):
    """An array with the shape and dtype of ``a`` (unless overridden) filled with ``fill_value``."""
    av = typeof(asarray(a))
    return full(av.shape if shape is None else shape, fill_value, av.dtype if dtype is None else dtype)


def ones_like(a, dtype=None, shape=None):
    """Ones with the shape and dtype of ``a``."""
    return full_like(a, 1, dtype, shape)


def zeros_like(a, dtype=None, shape=None):
    """Zeros with the shape and dtype of ``a``."""
    return full_like(a, 0, dtype, shape)


def empty_like(a, dtype=None, shape=None):
    """Zeros with the shape and dtype of ``a`` (see ``empty``)."""
    return full_like(a, 0, dtype, shape)


def _astype(x, dtype):
    dtype = canonical_dtype(dtype)
    if typeof(x).dtype == dtype and not typeof(x).weak_type:
        return x
    return lax.convert_element_type(x, dtype)


def _affine(idx, step, start, dtype):
    """``idx * step + start`` in ``dtype``, skipping a multiplication by 1 and an addition of 0."""
    from .ufuncs import add, multiply
    out = _astype(idx, dtype)
    if isinstance(step, Tracer) or step != 1:
        out = multiply(out, step)
    if isinstance(start, Tracer) or start != 0:
        out = add(out, start)
    return _astype(out, dtype)


def _as_i64(v):
    if isinstance(v, Tracer):
        a = v.aval
        if a.shape != () or not is_integer_dtype(a.dtype):
            raise TypeError(f"arange: a traced bound must be an integer scalar, got {a.str_short()} "
                            "(a traced float bound gives a data-dependent length; use linspace)")
        return v if a.dtype == int64 else _astype(v, int64)
    if isinstance(v, (float, np.floating)):
        raise TypeError("arange: mixing traced and float bounds gives a data-dependent length; use linspace")
    return int(v)


def arange(start, stop=None, step=None, dtype=None):
    """``arange`` whose bounds may be traced integers (the length is then a dynamic dim).

    The step must be a static integer when a bound is traced.
    """
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    if isinstance(step, Tracer):
        raise TypeError("arange: a traced step gives a data-dependent length; use a static step")
    if not isinstance(start, Tracer) and not isinstance(stop, Tracer):
        ref = np.arange(start, stop, step)
        out_dtype = canonical_dtype(ref.dtype if dtype is None else dtype)
        return _affine(lax.iota(int64, len(ref)), step, start, out_dtype)
    if not isinstance(step, (int, np.integer)):
        raise TypeError("arange: traced bounds need an integer step (a float step gives a data-dependent "
                        "length; use linspace)")
    step = int(step)
    if step == 0:
        raise ValueError("arange: step must not be zero")
    start, stop = _as_i64(start), _as_i64(stop)
    lo, hi = (start, stop) if step > 0 else (stop, start)
    span = hi if isinstance(lo, int) and lo == 0 else lax.sub(hi, lo)
    # arange(x.shape[0]) has the very dim of x (a dim is never negative); otherwise clamp at 0
    n = span if is_known_dim(span) else lax.max(span, 0)
    if abs(step) != 1:
        n = lax.div(lax.add(n, abs(step) - 1), abs(step))
    out_dtype = int64 if dtype is None else canonical_dtype(dtype)
    return _affine(lax.iota(int64, n), step, start, out_dtype)


def linspace(start, stop, num=50, endpoint=True, dtype=None):
    """``num`` evenly spaced values from ``start`` to ``stop``; ``num`` may be a traced integer."""
    from .ufuncs import equal, subtract, true_divide, where
    n = canonicalize_dim(num, "num")
    out_dtype = float64 if dtype is None else canonical_dtype(dtype)
    idx = lax.iota(int64, n)
    if isinstance(start, Tracer) or isinstance(stop, Tracer):
        delta = subtract(_astype(stop, float64), _astype(start, float64))
    else:
        delta = float(stop) - float(start)
    if isinstance(n, int):
        div = max(n - 1 if endpoint else n, 1)
        step = delta / div if isinstance(delta, float) else true_divide(delta, float(div))
    else:
        div = lax.max(lax.sub(n, 1), 1) if endpoint else lax.max(n, 1)
        step = true_divide(delta, _astype(div, float64))
    out = _affine(idx, step, start, float64)
    if endpoint and not (isinstance(n, int) and n < 2):
        # numpy makes the last element exactly ``stop`` (when there are at least two)
        out = where(equal(idx, div), full((), stop, float64), out)
    if is_integer_dtype(out_dtype):
        out = lax.floor(out)
    return _astype(out, out_dtype)


def eye(N, M=None, k=0, dtype=None):
    """A 2-D array with ones on the ``k``-th diagonal; ``N`` and ``M`` may be traced."""
    from .ufuncs import add, equal
    N = canonicalize_dim(N, "size")
    M = N if M is None else canonicalize_dim(M, "size")
    rows = lax.broadcasted_iota(int64, (N, M), 0)
    cols = lax.broadcasted_iota(int64, (N, M), 1)
    diag = equal(rows if k == 0 else add(rows, int(k)), cols)
    return _astype(diag, float64 if dtype is None else dtype)


def identity(n, dtype=None):
    """The ``n`` x ``n`` identity matrix."""
    return eye(n, dtype=dtype)


def asarray(a, dtype=None):
    """``a`` as an array: tracers are kept (cast if asked), sequences holding tracers are stacked,
    concrete values become numpy arrays (eagerly) or constants (when tracing)."""
    if isinstance(a, Tracer):
        return _astype(a, dtype) if dtype is not None else a
    if isinstance(a, (list, tuple)) and any(_contains_tracer(x) for x in a):
        from .shape_ops import stack
        return stack([asarray(x) for x in a]) if dtype is None else _astype(stack([asarray(x) for x in a]), dtype)
    arr = np.asarray(a)
    if arr.dtype == object:
        raise TypeError(f"cannot convert {type(a).__name__} to an array")
    return _constant(arr, canonical_dtype(arr.dtype if dtype is None else dtype))


def _contains_tracer(x) -> bool:
    if isinstance(x, Tracer):
        return True
    if isinstance(x, (list, tuple)):
        return any(_contains_tracer(y) for y in x)
    return False


def array(a, dtype=None, copy=True):
    """Like ``asarray``; a concrete numpy result is a copy unless ``copy=False``."""
    out = asarray(a, dtype)
    if isinstance(out, np.ndarray) and copy and out is a:
        return out.copy()
    return out
