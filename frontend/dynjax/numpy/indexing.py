"""Indexing ``x[idx]`` and functional updates ``x.at[idx].set(v)``, numpy's semantics.

Basic indices (integers, slices, ``None``, ``...``) may hold traced integers: slices over
dynamic axes or with traced bounds get a dynamic length (clamped into range, as numpy does
for slices), strided ones (``x[::2]``, ``x[-2::-1]``) the symbolic length
``ceil(span / |step|)``. Static out-of-range integers on static axes raise ``IndexError``;
traced ones are clamped into range (XLA's semantics, as in JAX).

Advanced indices -- integer arrays (``x[idx]``, ``x[:, idx]``, ``x[i, j]`` with broadcasting)
and boolean masks (``x[x > 0]``) -- go through one normal form: the basic parts are applied
first, then one ``gather`` of the index rows, then a transpose to numpy's placement of the
broadcast index axes. A boolean mask becomes the integer rows of its ``True`` elements
(``nonzero``), whose number is known only at run time: a new dynamic dim. Updates
(``x.at[idx].set/add/multiply/divide/power/min/max/apply/get``) build the same normal form
for ``scatter``; out-of-range updates are dropped and out-of-range reads clamped unless a
``mode`` says otherwise (JAX's semantics).
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.avals import int64
from ..core.trace import Tracer, typeof
from ..lax.api import canonicalize_dim


def _is_int_index(i) -> bool:
    if isinstance(i, Tracer):
        return i.aval.shape == () and np.issubdtype(i.aval.dtype, np.integer)
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _expand_index(idx, ndim):
    """The index as a list with one entry per axis (plus ``None`` entries for new axes)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    n_ellipsis = sum(1 for i in idx if i is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_real = sum(_axes_used(i) for i in idx if i is not None and i is not Ellipsis)
    if n_real > ndim:
        raise IndexError(f"too many indices: array is {ndim}-dimensional, but {n_real} were indexed")
    out = []
    for i in idx:
        if _is_mask(i) and typeof(i).ndim != 1:
            out.append(i)   # a mask over several axes: one entry, expanded by the caller
            out.extend([_MASK_CONTINUED] * (typeof(i).ndim - 1))
        elif i is Ellipsis:
            out.extend([slice(None)] * (ndim - n_real))
        else:
            out.append(i)
    if not n_ellipsis:
        out.extend([slice(None)] * (ndim - n_real))
    return out


def _i64(v):
    return lax.convert_element_type(v, int64) if v.aval.dtype != int64 else v


def _bound(v, n, is_start):
    """A slice bound normalized into ``[0, n]`` (numpy slice semantics); static when possible.

    A static non-negative start needs no upper clamp: the slice length is then 0 and
    ``dynamic_slice`` clamps its start into range.
    """
    if v is None:
        return 0 if is_start else n
    if isinstance(v, Tracer):
        v = _i64(v)
        v = lax.select(lax.lt(v, 0), lax.add(v, n), v)
        return lax.min(lax.max(v, 0), n)
    v = int(v)
    if isinstance(n, int):
        return min(max(v + n if v < 0 else v, 0), n)
    if v < 0:
        return lax.max(lax.add(n, v), 0)
    return v if is_start else lax.min(n, v)


def _dynamic_slice_range(it, n):
    """(start, size) of a step-1 slice with traced bounds or over a dynamic axis."""
    if (isinstance(it.start, (int, np.integer)) and it.start < 0 and it.stop is None
            and not isinstance(n, int)):
        # ``x[-k:]``: the size is ``min(n, k)``, which says it is at most ``k`` (the padded
        # tier then keeps the slice k wide instead of the whole buffer)
        size = canonicalize_dim(lax.min(n, -int(it.start)))
        return canonicalize_dim(lax.sub(n, size)), size
    start = _bound(it.start, n, True)
    stop = _bound(it.stop, n, False)
    if isinstance(start, int) and start == 0:
        return 0, canonicalize_dim(stop)
    return start, canonicalize_dim(lax.max(lax.sub(stop, start), 0))


def _strided(x, axis, it, step):
    """``x[..., it, ...]`` on ``axis`` for a slice with step ``!= 1`` whose axis is dynamic or
    whose bounds are traced: numpy's semantics, with the size ``ceil(span / |step|)`` as a
    symbolic dim. A negative step reads the reversed axis with mirrored bounds."""
    n = typeof(x).shape[axis]
    if step < 0:
        x = lax.rev(x, [axis])
        start = 0 if it.start is None else _mirror(it.start, n)
        stop = n if it.stop is None else _mirror(it.stop, n)
        start, span = _span(start, stop)
    else:
        start, span = _dynamic_slice_range(slice(it.start, it.stop), n)
    k = abs(step)
    shape = list(typeof(x).shape)
    shape[axis] = span
    x = _slice(x, typeof(x).shape, [start if i == axis else 0 for i in range(len(shape))], shape)
    count = canonicalize_dim(lax.div(lax.add(span, k - 1), k)) if not isinstance(span, int) \
        else -(-span // k)
    # pad the span to count * k elements, view it as (count, k) and keep the first column
    from .creation import zeros
    from .shape_ops import concatenate, reshape
    pad_shape = list(shape)
    pad_shape[axis] = canonicalize_dim(lax.sub(lax.mul(count, k), span)) if not isinstance(span, int) \
        else count * k - span
    x = concatenate([x, zeros(pad_shape, typeof(x).dtype)], axis=axis)
    split = shape[:axis] + [count, k] + shape[axis + 1:]
    x = reshape(x, split)
    limits = [None if not isinstance(d, int) else d for d in split]
    limits[axis + 1] = 1
    x = lax.slice(x, [0] * len(split), limits)
    return lax.squeeze(x, [axis + 1])


def _mirror(v, n):
    """A bound of a negative-step slice, in the reversed axis: ``n - 1 - clamp(v, -1, n - 1)``
    after numpy's wrap of negative values."""
    if isinstance(v, Tracer):
        v = _i64(v)
        v = lax.select(lax.lt(v, 0), lax.add(v, n), v)
        v = lax.min(lax.max(v, -1), lax.sub(n, 1))
        return lax.sub(lax.sub(n, 1), v)
    v = int(v)
    if isinstance(n, int):
        v = v + n if v < 0 else v
        return n - 1 - min(max(v, -1), n - 1)
    v = lax.add(n, v) if v < 0 else v
    return lax.sub(lax.sub(n, 1), lax.min(lax.max(v, -1), lax.sub(n, 1)))


def _span(start, stop):
    if isinstance(start, int) and isinstance(stop, int):
        return start, max(stop - start, 0)
    return start, canonicalize_dim(lax.max(lax.sub(stop, start), 0))


def getitem(x, idx, mode=None, fill_value=None):
    """``x[idx]`` for a traced or concrete array ``x``; ``mode`` (``"clip"``, the default,
    ``"fill"`` or ``"promise_in_bounds"``) says what out-of-range integer-array indices read."""
    idx = _normalize(idx)
    av = typeof(x)
    items = _expand_index(idx, av.ndim)
    if any(_is_array_index(i) for i in items) or (
            mode is not None and any(_is_int_index(i) for i in items)):
        # with a mode, integers read through the gather too (clamped or filled, never raising)
        return _advanced_getitem(x, items, mode, fill_value)
    x, av = _pad_empty_axes(x, av, items)
    plan = _BasicPlan(av, items)
    out = _slice(x, av.shape, plan.starts, plan.sizes)
    for ax, it, step in plan.strided:
        out = _strided(out, ax, it, step)
    strides = plan.strides
    if any(st < 0 for st in strides):
        out = lax.rev(out, [i for i, st in enumerate(strides) if st < 0])
    if any(abs(st) != 1 for st in strides):
        limits = [d if isinstance(d, int) else None for d in typeof(out).shape]
        out = lax.slice(out, [0] * len(limits), limits, [abs(st) for st in strides])
    if plan.squeeze_axes:
        out = lax.squeeze(out, plan.squeeze_axes)
    if plan.new_axes:
        from .shape_ops import expand_dims
        out = expand_dims(out, plan.new_axes)
    return out


def _is_static_zero(d) -> bool:
    return isinstance(d, int) and d == 0


def _pad_empty_axes(x, av, items):
    """A traced integer index into an axis of static size 0 has no element to clamp to; such
    code only runs in a body that never executes (``A[:, j]`` in ``for_loop(0, k)`` with
    ``A`` of shape ``(n, 0)``), and it reads zeros: the axis gets one zero element, as the
    lowering does for an axis whose size is only known at run time."""
    axis, empty = 0, []
    for it in items:
        if it is None:
            continue
        if isinstance(it, Tracer) and _is_int_index(it) and _is_static_zero(av.shape[axis]):
            empty.append(axis)
        axis += 1
    if not empty:
        return x, av
    from .creation import zeros
    from .shape_ops import concatenate
    for ax in empty:
        shape = list(typeof(x).shape)
        shape[ax] = 1
        x = concatenate([x, zeros(tuple(shape), typeof(x).dtype)], axis=ax)
    return x, typeof(x)


class _BasicPlan:
    """A basic index (integers, slices, ``None``) as the region it reads: per axis a start, a
    size and a step (``strided`` lists the strided slices done after the region is cut), the
    axes integers remove and the positions ``None`` adds."""

    def __init__(self, av, items):
        self.starts, self.sizes, self.strides, self.squeeze_axes, self.new_axes = [], [], [], [], []
        self.strided = []   # (axis, slice, step) of strided slices with traced bounds or dynamic axes
        axis = 0
        for pos, it in enumerate(items):
            if it is None:
                self.new_axes.append(pos - len(self.squeeze_axes))
                continue
            start, size, step = self._axis(av.shape[axis], axis, it)
            self.starts.append(start)
            self.sizes.append(size)
            self.strides.append(step)
            axis += 1

    def _axis(self, n, axis, it):
        if _is_int_index(it):
            if isinstance(it, Tracer):
                i = _i64(it)
                i = lax.select(lax.lt(i, 0), lax.add(i, n), i)
            elif isinstance(n, int):
                i = int(it)
                if not -n <= i < n:
                    raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
                i %= n
            else:
                i = int(it) if int(it) >= 0 else lax.add(n, int(it))
            self.squeeze_axes.append(axis)
            return i, 1, 1
        if not isinstance(it, slice):
            raise IndexError(f"unsupported index {it!r}: only integers, slices, None, ..., and integer "
                             "or boolean arrays are valid indices")
        step = 1 if it.step is None else it.step
        if isinstance(step, Tracer):
            raise IndexError("slice steps must be static integers")
        step = int(step)
        if step == 0:
            raise ValueError("slice step cannot be zero")
        traced = isinstance(it.start, Tracer) or isinstance(it.stop, Tracer)
        if isinstance(n, int) and not traced:
            lo, hi, _ = slice(it.start, it.stop, step).indices(n)
            size = max(0, -(-(hi - lo) // step))
            # negative steps: take the covered span, reverse it, then stride
            start = lo if step > 0 else (lo - (size - 1) * -step if size else 0)
            size = size if abs(step) == 1 else (max(0, (size - 1) * abs(step) + 1))
            return start, size, step
        if step != 1:
            self.strided.append((axis, it, step))   # done after the region is cut
            return 0, n, 1
        start, size = _dynamic_slice_range(it, n)
        return start, size, 1


def _slice(x, shape, starts, sizes):
    """``x[start:start+size, ...]``: nothing, a static ``slice`` or a ``dynamic_slice``."""
    def same(a, b):
        return a is b or (isinstance(a, int) and isinstance(b, int) and a == b)
    if all(same(s, 0) for s in starts) and all(same(z, d) for z, d in zip(sizes, shape)):
        return x
    # a static slice when the bounds are static and every dynamic axis is kept whole
    if all(isinstance(s, int) and (isinstance(d, int) and isinstance(z, int) or same(s, 0) and same(z, d))
           for s, z, d in zip(starts, sizes, shape)):
        limits = [s + z if isinstance(d, int) else None for s, z, d in zip(starts, sizes, shape)]
        return lax.slice(x, starts, limits)
    return lax.api.dynamic_slice(x, starts, sizes)


# ----------------------------------------------------------------------------------------------
# Advanced indices: integer arrays and boolean masks
# ----------------------------------------------------------------------------------------------
class _MaskContinued:
    """Stands for the further axes a multi-axis boolean mask covers in an expanded index."""

    def __repr__(self):
        return "<mask continued>"


_MASK_CONTINUED = _MaskContinued()


def _holds_tracer(seq) -> bool:
    """Whether a nested list/tuple holds a tracer (walked in Python: numpy would ask each
    element for ``__array__``, which a tracer cannot answer)."""
    if isinstance(seq, (list, tuple)):
        return any(_holds_tracer(v) for v in seq)
    return isinstance(seq, Tracer)


def _as_index_array(seq):
    """A list (or nested tuple) inside an index: an array, as numpy reads it."""
    if _holds_tracer(seq):
        from .creation import asarray
        return asarray(seq)
    arr = np.asarray(seq)
    if arr.size == 0 and arr.dtype == np.float64:
        arr = arr.astype(np.int64)   # x[[]] selects nothing
    return arr


def _normalize(idx):
    """The index as a tuple: lists become arrays, 0-d integer arrays integers."""
    if isinstance(idx, list):
        idx = (_as_index_array(idx),)
    elif not isinstance(idx, tuple):
        idx = (idx,)
    out = []
    for i in idx:
        if isinstance(i, (list, tuple)):
            i = _as_index_array(i)
        if isinstance(i, np.ndarray) and i.ndim == 0 and np.issubdtype(i.dtype, np.integer):
            i = int(i)
        out.append(i)
    return tuple(out)


def _is_mask(i) -> bool:
    if isinstance(i, Tracer):
        return i.aval.dtype == np.bool_
    return isinstance(i, (bool, np.bool_)) or (isinstance(i, np.ndarray) and i.dtype == np.bool_)


def _is_array_index(i) -> bool:
    if isinstance(i, _InRange):
        return True
    if isinstance(i, Tracer):
        return i.aval.ndim >= 1 or i.aval.dtype == np.bool_
    if isinstance(i, (bool, np.bool_)):
        return True
    return isinstance(i, np.ndarray) and (i.ndim >= 1 or i.dtype == np.bool_)


def _axes_used(i) -> int:
    return typeof(i).ndim if _is_mask(i) else 1


def _is_whole(i) -> bool:
    """``:``, the whole axis."""
    return isinstance(i, slice) and i.start is None and i.stop is None and i.step in (None, 1)


def _is_advanced(i) -> bool:
    """Among array indices, integers are advanced too (they broadcast with the arrays)."""
    return _is_array_index(i) or _is_int_index(i)


def _with_new_axes(x, items):
    """``None`` entries as size-1 axes of ``x``, indexed whole."""
    new = [k for k, i in enumerate(items) if i is None]
    if not new:
        return x, list(items)
    from .shape_ops import expand_dims
    return expand_dims(x, new), [slice(None) if i is None else i for i in items]


def _masks_to_arrays(x, items):
    """Each boolean mask entry replaced by the integer arrays of its ``True`` positions, one per
    axis it covers (their length is the number of ``True`` elements: known at run time)."""
    from .selection import nonzero
    xa = typeof(x)
    out = list(items)
    for k, i in enumerate(items):
        if not _is_mask(i):
            continue
        ma = typeof(i)
        if ma.ndim == 0:
            raise IndexError("a boolean scalar index (x[True]) is not supported; use x[None] or "
                             "jnp.expand_dims")
        covered = xa.shape[k:k + ma.ndim]
        if isinstance(i, Tracer) and not all(_same_dim(a, b) for a, b in zip(ma.shape, covered)):
            raise IndexError(f"boolean index of shape {ma.str_short()} does not match the indexed "
                             f"axes of {xa.str_short()}")
        if not isinstance(i, Tracer):
            for a, b in zip(ma.shape, covered):
                if isinstance(b, int) and a != b:
                    raise IndexError(f"boolean index of shape {ma.shape} does not match the indexed "
                                     f"axes of {xa.str_short()}")
        out[k:k + ma.ndim] = [_InRange(c) for c in nonzero(i)]
    return out


class _InRange:
    """Positions a mask produced: known to be inside their axis (no negative wrap needed)."""
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array


def _same_dim(a, b):
    from ..core.avals import same_dim
    return same_dim(a, b)


def _int_array(i, n, axis):
    """An advanced index entry as an int64 array with numpy's negative indices resolved once
    (``i + n`` where ``i < 0``); values still out of range are left to the mode."""
    from .creation import asarray
    if isinstance(i, _InRange):
        return i.array
    a = typeof(i)
    if not np.issubdtype(a.dtype, np.integer):
        raise IndexError(f"arrays used as indices must be of integer or boolean type, got {a.str_short()} "
                         f"for axis {axis}")
    if not isinstance(i, Tracer) and isinstance(n, int):
        arr = np.asarray(i, dtype=np.int64)
        return np.where(arr < 0, arr + n, arr)
    i = asarray(i).astype(np.int64) if a.dtype != np.int64 else i
    n = lax.convert_element_type(n, int64) if isinstance(n, Tracer) else np.int64(n)
    return lax.select(lax.lt(i, np.int64(0)), lax.add(i, n), i)


def _index_rows(arrays):
    """Integer arrays broadcast together and stacked into rows: shape ``B + (k,)``."""
    from ._promote import broadcast_arrays
    from .shape_ops import stack
    arrays = broadcast_arrays(*arrays)
    if all(not isinstance(a, Tracer) for a in arrays):
        return np.stack([np.asarray(a) for a in arrays], axis=-1)
    return stack(arrays, axis=-1)


def default_fill_value(dtype):
    """What an out-of-range read gives in ``mode="fill"`` (JAX's convention): NaN for inexact
    types, the most negative value for signed integers, the largest for unsigned, True."""
    from ..core.avals import is_inexact_dtype
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return True
    if is_inexact_dtype(dt):
        return np.nan
    info = np.iinfo(dt)
    return info.min if np.issubdtype(dt, np.signedinteger) else info.max


def _check_mode(mode, allowed):
    if mode is not None and mode not in allowed:
        raise ValueError(f"mode must be one of {', '.join(repr(m) for m in allowed)}, got {mode!r}")


def gather_rows(x, rows, axes, mode=None, fill_value=None):
    """``x`` read at integer ``rows`` (shape ``B + (len(axes),)``, negative indices resolved):
    shape ``B`` + the other axes of ``x``. Out-of-range rows read the nearest element
    (``"clip"``, the default) or ``fill_value`` (``"fill"``)."""
    _check_mode(mode, ("clip", "fill", "promise_in_bounds"))
    out = lax.gather(x, rows, axes)
    if mode != "fill":
        return out
    xa, oa = typeof(x), typeof(out)
    fill = default_fill_value(xa.dtype) if fill_value is None else fill_value
    ok = lax.rows_in_bounds(rows, xa.shape, axes)
    ok = lax.broadcast_in_dim(ok, oa.shape, tuple(range(typeof(ok).ndim)))
    return lax.select(ok, out, lax.broadcast_in_dim(np.asarray(fill, xa.dtype), oa.shape, ()))


def _place(out, nb, axes, ndim):
    """numpy's placement of the broadcast index axes (the first ``nb`` of ``out``): where the
    advanced indices stand when they are adjacent, else first."""
    first = axes[0]
    if list(axes) != list(range(first, first + len(axes))) or first == 0 or nb == 0:
        return out
    rest = ndim - len(axes)
    perm = [nb + j for j in range(first)] + list(range(nb)) + [nb + j for j in range(first, rest)]
    return lax.transpose(out, perm)


def _advanced_getitem(x, items, mode, fill_value):
    x, items = _with_new_axes(x, items)
    items = _masks_to_arrays(x, items)
    # the basic parts first (slices cut the array); the advanced entries index whole axes
    x = getitem(x, tuple(slice(None) if _is_advanced(i) else i for i in items))
    xa = typeof(x)
    axes = [k for k, i in enumerate(items) if _is_advanced(i)]
    rows = _index_rows([_int_array(items[k], xa.shape[k], k) for k in axes])
    out = gather_rows(x, rows, axes, mode, fill_value)
    return _place(out, typeof(rows).ndim - 1, axes, xa.ndim)


# ----------------------------------------------------------------------------------------------
# Functional updates: x.at[idx].set(v) and friends
# ----------------------------------------------------------------------------------------------
class IndexUpdateHelper:
    """``x.at``: ``x.at[idx]`` names the elements an update or a read applies to."""
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, idx):
        return IndexUpdateRef(self.array, idx)

    def __repr__(self):
        return f"_IndexUpdateHelper({self.array!r})"


class IndexUpdateRef:
    """``x.at[idx]``: each method returns a new array (``x`` is never modified).

    ``mode`` for updates: ``"drop"`` (the default; out-of-range updates are skipped),
    ``"clip"`` (clamped into range) or ``"promise_in_bounds"``; for ``get`` as for ``x[idx]``.
    Repeated indices accumulate in ``add``/``multiply``/``min``/``max``; in ``set`` the last
    one wins; ``divide``, ``power`` and ``apply`` read, compute and write once per element,
    as numpy's ``x[idx] /= v`` does."""
    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def get(self, *, mode=None, fill_value=None):
        return getitem(self.array, self.index, mode, fill_value)

    def set(self, values, *, mode=None):
        return update(self.array, self.index, values, "set", mode)

    def add(self, values, *, mode=None):
        return update(self.array, self.index, values, "add", mode)

    def multiply(self, values, *, mode=None):
        return update(self.array, self.index, values, "mul", mode)

    mul = multiply

    def min(self, values, *, mode=None):
        return update(self.array, self.index, values, "min", mode)

    def max(self, values, *, mode=None):
        return update(self.array, self.index, values, "max", mode)

    def divide(self, values, *, mode=None):
        from .ufuncs import true_divide
        return self.apply(lambda old: true_divide(old, values), mode=mode)

    def power(self, values, *, mode=None):
        from .ufuncs import power
        return self.apply(lambda old: power(old, values), mode=mode)

    def apply(self, func, *, mode=None):
        _check_mode(mode, ("drop", "clip", "promise_in_bounds", "fill"))
        read_mode = "clip" if mode in (None, "drop", "fill", "promise_in_bounds") else mode
        return update(self.array, self.index, func(self.get(mode=read_mode)), "set", mode)


def at(x):
    """``dynjax.numpy.at(x)[idx].set(v)``: ``x.at`` for any array, numpy arrays included
    (eager code gets numpy arrays, which have no ``.at``)."""
    from .creation import asarray
    return IndexUpdateHelper(x if isinstance(x, Tracer) else asarray(x))


_COMBINE = {"add": lax.add, "mul": lax.mul, "min": lax.min, "max": lax.max}


def update(x, idx, values, kind, mode=None):
    """A copy of ``x`` with ``values`` written (``kind="set"``) or combined (``"add" "mul" "min"
    "max"``) at ``x[idx]``: the machinery behind ``x.at[idx]``."""
    from ._promote import broadcast_to_shape
    from .creation import asarray
    _check_mode(mode, ("drop", "clip", "promise_in_bounds", "fill"))
    x = asarray(x)
    xa = typeof(x)
    v = asarray(values)
    if typeof(v).dtype != xa.dtype:
        v = v.astype(xa.dtype)
    items = _expand_index(_normalize(idx), xa.ndim)
    if kind in ("min", "max") and np.issubdtype(xa.dtype, np.complexfloating):
        raise TypeError(f"x.at[...].{kind}() needs real values, got {xa.str_short()}")
    mask = items[0] if items and _is_mask(items[0]) else None
    if mask is not None and typeof(v).ndim == 0 and typeof(mask).ndim >= 1 and all(
            i is _MASK_CONTINUED or _is_whole(i) for i in items[1:]):
        return _masked_update(x, mask, v, kind)
    if not any(_is_array_index(i) for i in items) and _static_ints_in_range(xa, items):
        plan = _BasicPlan(xa, items)
        # in place when every integer is known to be in range (a traced one, or one on a
        # dynamic axis, may not be: the scatter drops or clamps it, also on an empty axis)
        if all(st == 1 for st in plan.strides) and not plan.strided and all(
                isinstance(plan.starts[ax], int) and isinstance(xa.shape[ax], int) for ax in plan.squeeze_axes):
            return _region_update(x, plan, v, kind)
    return _scatter_update(x, items, v, kind, mode)


def _static_ints_in_range(xa, items) -> bool:
    """No static integer of the index is out of range of its static axis (an update drops or
    clamps those; reading them is an IndexError)."""
    axis = 0
    for it in items:
        if it is None:
            continue
        n = xa.shape[axis]
        if _is_int_index(it) and not isinstance(it, Tracer) and isinstance(n, int) and not -n <= int(it) < n:
            return False
        axis += 1
    return True


def _combine(old, new, kind):
    return new if kind == "set" else _COMBINE[kind](old, new)


def _masked_update(x, mask, v, kind):
    """``x.at[mask].op(scalar)``: an elementwise select (no data-dependent size)."""
    xa, ma = typeof(x), typeof(mask)
    if not all(_same_dim(a, b) for a, b in zip(ma.shape, xa.shape)) and (
            isinstance(mask, Tracer) or any(isinstance(b, int) and a != b for a, b in zip(ma.shape, xa.shape))):
        raise IndexError(f"boolean index of shape {ma.str_short()} does not match {xa.str_short()}")
    from .creation import asarray
    mask = lax.broadcast_in_dim(asarray(mask), xa.shape, tuple(range(ma.ndim)))
    new = _combine(x, lax.broadcast_in_dim(v, xa.shape, ()), kind)
    return lax.select(mask, new, x)


def _region_update(x, plan, v, kind):
    """A basic index with unit steps and integers in range: read the region, combine, write
    it back in place (``dynamic_update_slice``)."""
    from ._promote import broadcast_to_shape
    from .shape_ops import expand_dims, squeeze
    xa = typeof(x)
    region = _slice(x, xa.shape, plan.starts, plan.sizes)
    ra = typeof(region)
    # the value in the shape x[idx] has, then in the region's (integer axes kept, new axes gone)
    target = [d for k, d in enumerate(ra.shape) if k not in plan.squeeze_axes]
    for p in plan.new_axes:
        target.insert(p, 1)
    v = broadcast_to_shape(v, tuple(target))
    if plan.new_axes:
        v = squeeze(v, tuple(plan.new_axes))
    if plan.squeeze_axes:
        v = expand_dims(v, tuple(plan.squeeze_axes))
    return lax.api.dynamic_update_slice(x, _combine(region, v, kind), plan.starts)


def _scatter_update(x, items, v, kind, mode):
    """The general update: every indexed axis gets integer positions (slices give theirs),
    the advanced ones broadcast together, and one ``scatter`` writes the rows."""
    from ._promote import broadcast_to_shape
    from .creation import arange
    from .shape_ops import squeeze
    new_axes = [k for k, i in enumerate(items) if i is None]
    x, items = _with_new_axes(x, items)
    items = _masks_to_arrays(x, items)
    xa = typeof(x)
    adv = [k for k, i in enumerate(items) if _is_advanced(i)]
    sliced = [k for k, i in enumerate(items) if not _is_advanced(i) and not _is_whole(i)]
    whole = [k for k, i in enumerate(items) if not _is_advanced(i) and _is_whole(i)]
    arrays = [_int_array(items[k], xa.shape[k], k) for k in adv]
    if arrays:
        from ._promote import broadcast_arrays
        arrays = broadcast_arrays(*arrays)
    batch = tuple(typeof(arrays[0]).shape) if arrays else ()
    positions = {k: getitem(arange(xa.shape[k], dtype=np.int64), items[k]) for k in sliced}
    # numpy's shape for x[idx]: the slice axes in order, the broadcast index axes where the
    # advanced entries stand when adjacent, else first
    layout = [("s", k) for k in range(xa.ndim) if k not in adv]
    at = adv[0] if adv and adv == list(range(adv[0], adv[0] + len(adv))) else 0
    at = sum(1 for k in range(at) if k not in adv)
    layout[at:at] = [("b", j) for j in range(len(batch))]
    dims = {("s", k): (typeof(positions[k]).shape[0] if k in positions else xa.shape[k]) for k in sliced + whole}
    dims.update({("b", j): d for j, d in enumerate(batch)})
    v = broadcast_to_shape(v, tuple(dims[key] for key in layout))
    # rows of shape I = batch + one axis per sliced axis; updates as I + the whole axes
    order = [("b", j) for j in range(len(batch))] + [("s", k) for k in sliced] + [("s", k) for k in whole]
    perm = [layout.index(key) for key in order]
    if perm != list(range(len(perm))):
        v = lax.transpose(v, perm)
    ishape = batch + tuple(dims[("s", k)] for k in sliced)
    cols = [lax.broadcast_in_dim(a, ishape, tuple(range(len(batch)))) for a in arrays]
    cols += [lax.broadcast_in_dim(positions[k], ishape, (len(batch) + q,)) for q, k in enumerate(sliced)]
    from .shape_ops import stack
    axes = adv + sliced
    if not axes:   # x.at[...].set(v), x.at[:].add(v): the whole array
        out = _combine(x, v, kind)
    else:
        rows = stack(cols, axis=-1)
        if mode == "clip":
            rows = lax.clamp_rows(rows, xa.shape, axes)
        out = lax.scatter(x, rows, v, axes, kind)
    return squeeze(out, tuple(new_axes)) if new_axes else out
