"""Rearranging arrays: ``rot90 tile repeat append insert delete split array_split hsplit
vsplit dsplit meshgrid indices``, with numpy's semantics over static and dynamic dims.

These functions only move elements around, but several produce sizes that numpy computes
from values: ``repeat`` with an array of counts has ``sum(counts)`` elements, ``delete``
with an index array that may hold duplicates keeps a number of elements known once the
indices are. Here such a size is computed as a traced integer and made a dim with
``canonicalize_dim``, exactly as ``compress`` / ``nonzero`` do (``selection.py``): the rest
of the program uses it like any dynamic size, and the compiled program is cut where it is
first needed. Sizes that follow from other sizes (``n * reps``, ``n + k``, ``n // sections``)
stay symbolic dims and need no cut. Everything is composed of existing lax operations
(broadcast, reshape, slices, cumsum, sort, scatter and gather): no new primitive.

Checks numpy makes on values (negative counts, out-of-range indices, an unequal ``split``)
are made eagerly, and at trace time whenever the values and sizes involved are static.
Where they are traced, the docstrings say what happens instead.
"""
from __future__ import annotations

import operator

import numpy as np

from .. import lax
from ..core.avals import canonical_dtype, int64, same_dim
from ..core.trace import Tracer, typeof
from ..lax.api import canonicalize_dim, shape_entries
from ._promote import broadcast_to_shape
from .shape_ops import _as_array, astype, concatenate, expand_dims, flip, moveaxis, ravel, reshape, transpose

__all__ = ["rot90", "tile", "repeat", "append", "insert", "delete", "split", "array_split", "hsplit",
           "vsplit", "dsplit", "meshgrid", "indices"]


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------
def _axis(axis, ndim):
    """``axis`` normalized into ``[0, ndim)``; numpy's ``AxisError`` (a ValueError and an
    IndexError) when out of range."""
    if isinstance(axis, Tracer):
        raise TypeError("axis must be a static integer, got a traced value")
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim


def _i64(d):
    """A size or index (int or traced integer scalar) as an int64 operand."""
    if isinstance(d, Tracer):
        return d if d.aval.dtype == int64 else lax.convert_element_type(d, int64)
    return np.int64(d)


def _dim_add(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if isinstance(b, int) and b == 0:
        return a
    if isinstance(a, int) and a == 0:
        return b
    return canonicalize_dim(lax.add(_i64(a), _i64(b)))


def _dim_mul(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if isinstance(a, int) and a in (0, 1):
        return 0 if a == 0 else b
    if isinstance(b, int) and b in (0, 1):
        return 0 if b == 0 else a
    return canonicalize_dim(lax.mul(_i64(a), _i64(b)))


def _is_static(x) -> bool:
    if isinstance(x, Tracer):
        return False
    if isinstance(x, (list, tuple)):
        return all(_is_static(v) for v in x)
    return True


def _iota(n):
    return lax.iota(int64, n)


def _take(a, idx, axis):
    """``a`` read along ``axis`` at the int64 positions ``idx`` (1-d, known in range)."""
    from .indexing import _place
    k = typeof(idx).shape[0]
    if not isinstance(idx, Tracer):
        idx = np.asarray(idx, np.int64)
    out = lax.gather(a, lax.broadcast_in_dim(idx, (k, 1), (0,)), (axis,))
    return _place(out, 1, [axis], typeof(a).ndim)


def _along(axis, item, ndim):
    """An index tuple applying ``item`` to ``axis`` only."""
    return tuple(item if i == axis else slice(None) for i in range(ndim))


def _fmt_shape(shape):
    return "(" + ", ".join(str(d) if isinstance(d, int) else "?" for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


def _fit(values, shape, what):
    """``values`` broadcast to ``shape`` as numpy's assignment does (a ValueError when the
    static sizes cannot match)."""
    va = typeof(values)
    if va.ndim > len(shape) and any(not (isinstance(d, int) and d == 1)
                                    for d in va.shape[:va.ndim - len(shape)]):
        raise ValueError(f"could not broadcast input array from shape {_fmt_shape(va.shape)} into "
                         f"shape {_fmt_shape(shape)} ({what})")
    if va.ndim > len(shape):
        values = reshape(values, va.shape[va.ndim - len(shape):])
        va = typeof(values)
    for d, t in zip(va.shape[::-1], tuple(shape)[::-1]):
        if isinstance(d, int) and isinstance(t, int) and d != t and d != 1:
            raise ValueError(f"could not broadcast input array from shape {_fmt_shape(va.shape)} into "
                             f"shape {_fmt_shape(shape)} ({what})")
    return broadcast_to_shape(values, tuple(shape))


# ----------------------------------------------------------------------------------------------
# rot90, tile, repeat, append
# ----------------------------------------------------------------------------------------------
def rot90(m, k=1, axes=(0, 1)):
    """``m`` rotated by 90 degrees ``k`` times in the plane of ``axes``, from the first axis
    towards the second (numpy's ``rot90``): flips and one transpose, so dynamic axes keep their
    dims. ``k`` must be a static integer (odd ``k`` swaps the two axes' sizes)."""
    m = _as_array(m)
    nd = typeof(m).ndim
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    a0, a1 = operator.index(axes[0]), operator.index(axes[1])
    if a0 == a1 or abs(a0 - a1) == nd:
        raise ValueError("Axes must be different.")
    if not (-nd <= a0 < nd and -nd <= a1 < nd):
        raise ValueError(f"Axes={axes} out of range for array of ndim={nd}.")
    if isinstance(k, Tracer):
        raise TypeError("rot90: k must be a static integer (an odd k swaps the sizes of the two axes)")
    k = operator.index(k) % 4
    a0, a1 = a0 % nd, a1 % nd
    if k == 0:
        return m
    if k == 2:
        return flip(m, (a0, a1))
    perm = list(range(nd))
    perm[a0], perm[a1] = a1, a0
    if k == 1:
        return transpose(flip(m, a1), perm)
    return flip(transpose(m, perm), a1)


def _static_count(r, what):
    """A static repetition count as an int (numpy's message for a negative one)."""
    if isinstance(r, (int, np.integer, np.ndarray)) and not isinstance(r, (bool, np.bool_)) \
            and np.ndim(r) == 0 and np.asarray(r).dtype.kind in "iu" and int(r) < 0:
        raise ValueError("negative dimensions are not allowed")
    return canonicalize_dim(r, what)


def tile(A, reps):
    """``A`` repeated ``reps`` times along each axis (numpy's ``tile``): ``reps`` is an int or a
    sequence (static ints or traced integer scalars); the shorter of ``A.shape`` and ``reps`` is
    padded with leading 1s. One broadcast and one reshape; a dynamic axis of size ``n``
    repeated ``r`` times has the dim ``n * r``. A traced negative count is an error at run time
    (a negative size)."""
    A = _as_array(A)
    if isinstance(reps, Tracer) and reps.aval.ndim == 0:
        reps = (reps,)
    elif isinstance(reps, np.ndarray) and reps.ndim == 0:
        reps = (reps,)
    reps = shape_entries(reps)
    reps = [_static_count(r, "tile repetition count") for r in reps]
    nd = typeof(A).ndim
    if nd < len(reps):
        A = expand_dims(A, tuple(range(len(reps) - nd)))
        nd = len(reps)
    reps = [1] * (nd - len(reps)) + reps
    shape = typeof(A).shape
    if all(isinstance(r, int) and r == 1 for r in reps):
        return A
    big, keep, out = [], [], []
    for r, d in zip(reps, shape):
        if not (isinstance(r, int) and r == 1):
            big.append(r)
        keep.append(len(big))
        big.append(d)
        out.append(_dim_mul(r, d))
    return reshape(lax.broadcast_in_dim(A, big, keep), out)


_COUNT_KINDS = "biu"


def _repeat_counts(repeats):
    """``repeats`` as ``(counts, scalar)``: an int64 array or scalar, static (numpy) or traced,
    with numpy's dtype and sign checks (static values only)."""
    if isinstance(repeats, Tracer):
        a = repeats.aval
        if a.dtype.kind not in _COUNT_KINDS or a.dtype == np.uint64:
            raise TypeError(f"Cannot cast array data from dtype('{a.dtype}') to dtype('int64') according "
                            "to the rule 'safe'")
        if a.ndim > 1:
            raise ValueError("object too deep for desired array")
        r = lax.max(_i64(repeats), np.int64(0))     # traced: negative counts count as 0
        return r, a.ndim == 0
    arr = np.asarray(repeats)
    if arr.dtype == object or arr.dtype.kind == "c":
        raise TypeError(f"repeats must be integers, got {repeats!r}")
    if arr.dtype.kind == "f" and not isinstance(repeats, (np.ndarray, np.generic)):
        arr = arr.astype(np.int64)    # numpy reads Python floats with int()
    if arr.dtype.kind not in _COUNT_KINDS or arr.dtype == np.uint64:
        what = "scalar" if arr.ndim == 0 else "array data"
        raise TypeError(f"Cannot cast {what} from dtype('{arr.dtype}') to dtype('int64') according to "
                        "the rule 'safe'")
    if arr.ndim > 1:
        raise ValueError("object too deep for desired array")
    arr = arr.astype(np.int64)
    if arr.ndim == 0 and arr < 0:
        raise ValueError("negative dimensions are not allowed")
    if (arr < 0).any():
        raise ValueError("repeats may not contain negative values.")
    return (int(arr) if arr.ndim == 0 else arr), arr.ndim == 0


def repeat(a, repeats, axis=None):
    """Each element (each slice along ``axis``; of the flattened array when ``axis`` is None)
    repeated ``repeats`` times (numpy's ``repeat``).

    An int count (static or a traced scalar) is a broadcast and a reshape: the axis of size
    ``n`` becomes ``n * repeats``. An array of counts, one per element (or one for all), gives
    ``sum(repeats)`` elements: known when the counts are static, otherwise a run-time size
    (as for ``compress``). Each output position reads the element whose run it falls in (a
    scatter of the runs' starts, then a cumulative sum). Traced negative counts are taken as
    0 (numpy raises; static ones raise here too)."""
    a = _as_array(a)
    if axis is None:
        a, axis = ravel(a), 0
    elif typeof(a).ndim == 0:
        _axis(axis, 1)
        a, axis = ravel(a), 0
    else:
        axis = _axis(axis, typeof(a).ndim)
    aa = typeof(a)
    n = aa.shape[axis]
    counts, scalar = _repeat_counts(repeats)
    if not scalar:
        m = typeof(counts).shape[0]
        if isinstance(m, int) and m == 1:
            counts, scalar = (int(counts[0]) if not isinstance(counts, Tracer) else counts[0]), True
        elif isinstance(m, int) and isinstance(n, int) and m != n:
            raise ValueError(f"operands could not be broadcast together with shape ({n},) ({m},)")
        elif not same_dim(m, n):
            raise TypeError(f"repeat: {typeof(counts).str_short()} counts for an axis of {aa.str_short()} "
                            "whose length is not known to be equal")
    if scalar:
        r = canonicalize_dim(counts, "number of repeats")
        if isinstance(r, int) and r == 1:
            return a
        shape = list(aa.shape)
        big = shape[:axis + 1] + [r] + shape[axis + 1:]
        keep = [i for i in range(len(big)) if i != axis + 1]
        out = shape[:axis] + [_dim_mul(n, r)] + shape[axis + 1:]
        return reshape(lax.broadcast_in_dim(a, big, keep), out)
    from .creation import zeros
    from .reductions import cumsum, sum as _sum
    if isinstance(counts, Tracer):
        total = canonicalize_dim(_sum(counts), "total number of repeats")
    else:
        total = int(counts.sum())
    ends = cumsum(counts)
    starts = lax.sub(ends, counts)
    # one mark at the start of every run (runs of length 0 start where the next one does;
    # those starting at ``total`` are dropped), so the running count of marks - 1 is the source
    rows = lax.broadcast_in_dim(starts, (n, 1), (0,))
    marks = lax.scatter(zeros(total, np.int64), rows, lax.broadcast_in_dim(np.int64(1), (n,), ()),
                        (0,), "add")
    src = lax.sub(cumsum(marks), np.int64(1))
    return _take(a, src, axis)


def append(arr, values, axis=None):
    """``arr`` with ``values`` added at the end (numpy's ``append``): both flattened when
    ``axis`` is None, else concatenated along ``axis`` (the usual dtype promotion)."""
    arr, values = _as_array(arr), _as_array(values)
    if axis is None:
        arr = ravel(arr)
        values = ravel(values)
        axis = 0
    aa, va = typeof(arr), typeof(values)
    if aa.ndim != va.ndim:
        raise ValueError("all the input arrays must have same number of dimensions, but the array at "
                         f"index 0 has {aa.ndim} dimension(s) and the array at index 1 has {va.ndim} "
                         "dimension(s)")
    axis = _axis(axis, aa.ndim)
    for i, (p, q) in enumerate(zip(aa.shape, va.shape)):
        if i != axis and isinstance(p, int) and isinstance(q, int) and p != q:
            raise ValueError("all the input array dimensions except for the concatenation axis must "
                             f"match exactly, but along dimension {i}, the array at index 0 has size {p} "
                             f"and the array at index 1 has size {q}")
    return concatenate([arr, values], axis)


# ----------------------------------------------------------------------------------------------
# insert, delete
# ----------------------------------------------------------------------------------------------
def _index_array(obj, what):
    """A static index argument as a numpy int64 array (numpy's dtype rules), or None for a
    plain integer."""
    arr = np.asarray(obj)
    if arr.dtype == object:
        raise TypeError(f"{what}: obj must be integers, got {obj!r}")
    if arr.size == 0 and not (isinstance(obj, np.ndarray) and arr.dtype.kind not in "biu"):
        return arr.astype(np.int64)    # ``[]``: no index (an empty float ndarray is refused)
    if arr.dtype == np.bool_:
        return arr
    if arr.dtype.kind not in "iu":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    return arr.astype(np.int64)


def _check_traced_index(obj, what):
    a = obj.aval
    if a.dtype.kind not in "biu":
        raise IndexError(f"arrays used as indices must be of integer (or boolean) type, got "
                         f"{a.str_short()} in {what}")


def _normalize_indices(idx, n):
    """Traced (or static) int64 indices with ``i + n`` for negative ``i``."""
    if not isinstance(idx, Tracer) and isinstance(n, int):
        return np.where(idx < 0, idx + n, idx)
    idx = lax.convert_element_type(idx, int64) if isinstance(idx, Tracer) else np.asarray(idx, np.int64)
    shape = typeof(idx).shape
    nn = _i64(n)
    return lax.select(lax.lt(idx, np.int64(0)), lax.add(idx, lax.broadcast_in_dim(nn, shape, ()) if shape else nn),
                      idx)


def _insert_at(arr, idx, vals, axis):
    """``arr`` with the slices of ``vals`` (axis ``axis`` of length ``k``) inserted before the
    positions ``idx`` (int64, 1-d, length ``k``, negatives resolved), numpy's order: stably
    sorted by position, each value shifted by the number inserted before it."""
    aa = typeof(arr)
    n = aa.shape[axis]
    k = typeof(idx).shape[0]
    if isinstance(k, int) and k == 0:
        return arr
    from .creation import zeros
    from .reductions import cumsum
    if isinstance(idx, Tracer) or not isinstance(n, int):   # unchecked: clamp into [0, n]
        idx = lax.max(lax.min(idx if isinstance(idx, Tracer) else np.asarray(idx, np.int64),
                              lax.broadcast_in_dim(_i64(n), (k,), ())), np.int64(0))
    order = _iota(k)
    sidx, perm = lax.sort((idx, order), num_keys=1)
    rows = lax.broadcast_in_dim(perm, (k, 1), (0,))
    pos = lax.scatter(zeros(k, np.int64), rows, lax.add(sidx, order), (0,), "set")  # value j's place
    total = _dim_add(n, k)
    prow = lax.broadcast_in_dim(pos, (k, 1), (0,))
    is_new = lax.scatter(zeros(total, np.bool_), prow, lax.broadcast_in_dim(np.bool_(True), (k,), ()),
                         (0,), "set")
    value_of = lax.scatter(zeros(total, np.int64), prow, order, (0,), "set")
    old = lax.convert_element_type(lax.bitwise_not(is_new), int64)
    orig = lax.sub(cumsum(old), np.int64(1))
    src = lax.select(is_new, lax.add(value_of, lax.broadcast_in_dim(_i64(n), (total,), ())), orig)
    return _take(concatenate([arr, vals], axis), src, axis)


def insert(arr, obj, values, axis=None):
    """``arr`` with ``values`` inserted before the index or indices ``obj`` along ``axis``
    (of the flattened array when None), numpy's ``insert``: ``obj`` an int, a slice or a 1-d
    sequence/array of indices, static or traced; ``values`` is cast to ``arr``'s dtype.

    A single index (an int, or a one-element array) inserts all of ``values`` there as a block;
    several indices insert one slice each, stably ordered by index. The result has ``n + k``
    elements along the axis (a symbolic dim when either is dynamic). Every output position is
    either an inserted slice or an original one: the new positions are scattered into a mask,
    the originals are found by its cumulative sum, and one gather reads both. Traced indices
    (and static ones on a dynamic axis) cannot be range-checked: they are clamped into
    ``[-n, n]``. A boolean ``obj`` inserts before its ``True`` positions (numpy 2). A traced
    index array of dynamic length (or a traced boolean one) always inserts one slice per index
    (numpy's one-element block rule needs the length)."""
    arr = _as_array(arr)
    if axis is None:
        if typeof(arr).ndim != 1:
            arr = ravel(arr)
        axis = 0
    else:
        axis = _axis(axis, typeof(arr).ndim)
    aa = typeof(arr)
    nd, n = aa.ndim, aa.shape[axis]
    vals = _as_array(values)
    vals = astype(vals, aa.dtype)
    if typeof(vals).ndim < nd:
        vals = expand_dims(vals, tuple(range(nd - typeof(vals).ndim)))

    def block(index, scalar):
        v = moveaxis(vals, 0, axis) if scalar and nd > 1 else vals
        num = typeof(v).shape[axis]
        slot = list(aa.shape)
        slot[axis] = num
        v = _fit(v, slot, "insert")
        idx = lax.broadcast_in_dim(_i64(index), (num,), ()) if isinstance(index, Tracer) or \
            not isinstance(num, int) else np.full(num, index, np.int64)
        return _insert_at(arr, idx, v, axis)

    def general(idx):
        k = typeof(idx).shape[0]
        slot = list(aa.shape)
        slot[axis] = k
        return _insert_at(arr, idx, _fit(vals, slot, "insert"), axis)

    if isinstance(obj, slice):
        if isinstance(n, int):
            idx = np.arange(*obj.indices(n), dtype=np.int64)
            return block(int(idx[0]), False) if idx.size == 1 else general(idx)
        from .creation import arange
        return general(arange(n, dtype=np.int64)[obj])
    if isinstance(obj, Tracer):
        _check_traced_index(obj, "insert")
        oa = obj.aval
        if oa.dtype == np.bool_:   # numpy: the positions of the True elements
            if oa.ndim != 1:
                raise ValueError("boolean array argument obj to insert must be one dimensional")
            from .selection import nonzero
            return general(nonzero(obj)[0])
        if oa.ndim > 1:
            raise ValueError("index array argument obj to insert must be one dimensional or scalar")
        index = _normalize_indices(lax.convert_element_type(obj, int64), n)
        if oa.ndim == 0:
            return block(index, True)
        if isinstance(oa.shape[0], int) and oa.shape[0] == 1:
            return block(index[0], False)
        return general(index)
    scalar = isinstance(obj, (int, np.integer)) and not isinstance(obj, (bool, np.bool_))
    if isinstance(obj, (float, np.floating)) or (not scalar and np.ndim(obj) <= 1 and np.size(obj) == 1
                                                and np.asarray(obj).dtype.kind == "f"):
        raise TypeError("slice indices must be integers or None or have an __index__ method")
    idx = _index_array(obj, "insert")
    if idx.dtype == np.bool_:   # numpy: the positions of the True elements
        if idx.ndim != 1:
            raise ValueError("boolean array argument obj to insert must be one dimensional")
        idx = np.flatnonzero(idx).astype(np.int64)
    if idx.ndim > 1:
        raise ValueError("index array argument obj to insert must be one dimensional or scalar")
    if isinstance(n, int):
        bad = (idx < -n) | (idx > n)
        if bad.any():
            shown = obj if idx.size == 1 else int(idx[bad][0])
            raise IndexError(f"index {shown} is out of bounds for axis {axis} with size {n}")
    if idx.size == 1:
        i = int(idx.reshape(()))
        return block((i + n if i < 0 else i) if isinstance(n, int) else _normalize_indices(np.int64(i), n),
                     idx.ndim == 0)
    return general(_normalize_indices(idx, n))


def delete(arr, obj, axis=None):
    """``arr`` without the slices at index or indices ``obj`` along ``axis`` (of the flattened
    array when None), numpy's ``delete``: ``obj`` an int, a slice, an index array (any shape,
    duplicates and negative indices allowed) or a boolean mask of the axis' length.

    Static indices on a static axis give a static result (out-of-range ones are an
    ``IndexError``). A single index on a dynamic axis gives ``n - 1`` elements; a slice gives
    ``n - len(slice)``. Traced index arrays (and static ones on a dynamic axis) may repeat an
    index, so the number kept is a run-time size: a keep-mask is scattered and ``compress``
    selects the slices. Out-of-range traced indices delete nothing; a traced single index is
    clamped into range."""
    from .selection import compress
    arr = _as_array(arr)
    if axis is None:
        if typeof(arr).ndim != 1:
            arr = ravel(arr)
        axis = 0
    else:
        axis = _axis(axis, typeof(arr).ndim)
    aa = typeof(arr)
    n = aa.shape[axis]

    def keep_static(mask):   # a static keep-mask over a static axis: a static selection
        return _take(arr, np.flatnonzero(mask).astype(np.int64), axis)

    def one(i):   # a single (normalized) index on a dynamic axis or traced: n - 1 elements
        length = canonicalize_dim(lax.max(lax.sub(_i64(n), np.int64(1)), np.int64(0)))
        i = lax.max(lax.min(_i64(i), lax.sub(_i64(n), np.int64(1))), np.int64(0))
        p = _iota(length)
        shift = lax.convert_element_type(lax.ge(p, lax.broadcast_in_dim(i, (length,), ())), int64)
        return _take(arr, lax.add(p, shift), axis)

    def by_indices(idx):   # traced keep-mask: the count is known at run time
        from .creation import ones
        idx = ravel(idx) if typeof(idx).ndim != 1 else idx
        k = typeof(idx).shape[0]
        rows = lax.broadcast_in_dim(idx, (k, 1), (0,))
        keep = lax.scatter(ones(n, np.bool_), rows, lax.broadcast_in_dim(np.bool_(False), (k,), ()),
                           (0,), "set")
        return compress(keep, arr, axis)

    if isinstance(obj, slice):
        if isinstance(n, int):
            mask = np.ones(n, np.bool_)
            mask[np.arange(*obj.indices(n), dtype=np.int64)] = False
            return keep_static(mask)
        from .creation import arange, ones
        gone = arange(n, dtype=np.int64)[obj]
        k = typeof(gone).shape[0]
        keep = lax.scatter(ones(n, np.bool_), lax.broadcast_in_dim(gone, (k, 1), (0,)),
                           lax.broadcast_in_dim(np.bool_(False), (k,), ()), (0,), "set")
        return compress(keep, arr, axis, size=canonicalize_dim(lax.sub(_i64(n), _i64(k))))
    if isinstance(obj, Tracer):
        _check_traced_index(obj, "delete")
        oa = obj.aval
        if oa.dtype == np.bool_:
            if oa.ndim != 1 or not same_dim(oa.shape[0], n):
                raise ValueError("boolean array argument obj to delete must be one dimensional and match "
                                 f"the axis length of {n if isinstance(n, int) else typeof(arr).str_short()}")
            return compress(lax.bitwise_not(obj), arr, axis)
        if oa.ndim == 0 or (oa.ndim == 1 and isinstance(oa.shape[0], int) and oa.shape[0] == 1):
            i = _normalize_indices(lax.convert_element_type(ravel(obj)[0] if oa.ndim else obj, int64), n)
            return one(i)
        return by_indices(_normalize_indices(obj, n))
    idx = _index_array(obj, "delete")
    if idx.dtype == np.bool_:
        if idx.ndim != 1 or (isinstance(n, int) and idx.shape[0] != n):
            raise ValueError("boolean array argument obj to delete must be one dimensional and match the "
                             f"axis length of {n if isinstance(n, int) else '?'}")
        if not isinstance(n, int):
            raise TypeError(f"delete: a static boolean mask of length {idx.shape[0]} for the dynamic axis "
                            f"{axis} of {aa.str_short()}: the lengths are not known to be equal")
        return keep_static(~idx)
    if idx.size == 1:
        i = int(idx.reshape(()))
        if isinstance(n, int):
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            mask = np.ones(n, np.bool_)
            mask[i] = False
            return keep_static(mask)
        return one(_normalize_indices(np.int64(i), n))
    flat = idx.reshape(-1)
    if isinstance(n, int):
        bad = (flat < -n) | (flat >= n)
        if bad.any():
            raise IndexError(f"index {int(flat[bad][0])} is out of bounds for axis {axis} with size {n}")
        mask = np.ones(n, np.bool_)
        mask[flat] = False
        return keep_static(mask)
    if flat.size == 0:
        return arr
    return by_indices(_normalize_indices(flat, n))


# ----------------------------------------------------------------------------------------------
# split and friends
# ----------------------------------------------------------------------------------------------
def _sections(indices_or_sections):
    """``(sections, None)`` for a number of pieces, ``(None, points)`` for split points."""
    ios = indices_or_sections
    if isinstance(ios, Tracer):
        if ios.aval.ndim == 0:
            raise TypeError("the number of sections must be static (it is the number of arrays "
                            "returned); traced split points may be given as a 1-d array or list")
        if ios.aval.ndim != 1 or not isinstance(ios.aval.shape[0], int):
            raise TypeError(f"split points must be a 1-d array of static length, got {ios.aval.str_short()}")
        return None, [ios[i] for i in range(ios.aval.shape[0])]
    if isinstance(ios, (list, tuple)) or (isinstance(ios, np.ndarray) and ios.ndim >= 1):
        return None, list(ios)
    return int(ios), None


def _pieces_from_points(ary, points, axis):
    nd = typeof(ary).ndim
    bounds = [0] + list(points) + [None]
    return [ary[_along(axis, slice(lo, hi), nd)] for lo, hi in zip(bounds[:-1], bounds[1:])]


def _split_request(ary, indices_or_sections, axis):
    """The array, the axis, the number of sections, and the pieces when split points are given
    (then there is nothing else to do)."""
    ary = _as_array(ary)
    axis = _axis(axis, typeof(ary).ndim)
    sections, points = _sections(indices_or_sections)
    if points is not None:
        return ary, axis, None, _pieces_from_points(ary, points, axis)
    if sections <= 0:
        raise ValueError("number sections must be larger than 0.")
    return ary, axis, sections, None


def array_split(ary, indices_or_sections, axis=0):
    """``ary`` split along ``axis`` into ``sections`` pieces whose lengths differ by at most
    one (the first ``n % sections`` are one longer), or at the given split points (static or
    traced integers, clamped into range as slice bounds; empty pieces allowed). On a dynamic
    axis the pieces' lengths are symbolic dims (``(n + sections - 1 - i) // sections``)."""
    ary, axis, sections, pieces = _split_request(ary, indices_or_sections, axis)
    if pieces is not None:
        return pieces
    nd = typeof(ary).ndim
    n = typeof(ary).shape[axis]
    if isinstance(n, int):
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        ends = np.cumsum(sizes).tolist()
        return _pieces_from_points(ary, ends[:-1], axis)
    nn = _i64(n)
    each, extra = lax.div(nn, np.int64(sections)), lax.rem(nn, np.int64(sections))
    shape = list(typeof(ary).shape)
    out = []
    for i in range(sections):
        start = lax.add(lax.mul(each, np.int64(i)), lax.min(extra, np.int64(i))) if i else 0
        size = canonicalize_dim(lax.div(lax.add(nn, np.int64(sections - 1 - i)), np.int64(sections)))
        shape[axis] = size
        out.append(lax.api.dynamic_slice(ary, [start if j == axis else 0 for j in range(nd)], list(shape)))
    return out


def split(ary, indices_or_sections, axis=0):
    """``ary`` split along ``axis`` into ``sections`` equal pieces, or at the given split points
    (as ``array_split``). An unequal division is numpy's ``ValueError`` when the length is
    static; on a dynamic axis every piece has ``n // sections`` elements, and a length that
    does not divide is a ``ValueError`` at run time, before the program runs (the pieces are
    cut from a reshape to ``(sections, n // sections)``, whose element count is checked)."""
    ary, axis, sections, pieces = _split_request(ary, indices_or_sections, axis)
    if pieces is not None:
        return pieces
    nd = typeof(ary).ndim
    n = typeof(ary).shape[axis]
    if isinstance(n, int):
        if n % sections:
            raise ValueError("array split does not result in an equal division")
        return array_split(ary, sections, axis)
    if sections == 1:
        return [ary]
    shape = list(typeof(ary).shape)
    each = canonicalize_dim(lax.div(_i64(n), np.int64(sections)))
    parts = reshape(ary, shape[:axis] + [sections, each] + shape[axis + 1:])
    return [lax.squeeze(parts[_along(axis, slice(i, i + 1), nd + 1)], [axis]) for i in range(sections)]


def hsplit(ary, indices_or_sections):
    """``split`` along axis 1 (axis 0 for 1-d arrays)."""
    ary = _as_array(ary)
    if typeof(ary).ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 1 if typeof(ary).ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    """``split`` along axis 0 (arrays of 2 or more dimensions)."""
    ary = _as_array(ary)
    if typeof(ary).ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    """``split`` along axis 2 (arrays of 3 or more dimensions)."""
    ary = _as_array(ary)
    if typeof(ary).ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)


# ----------------------------------------------------------------------------------------------
# meshgrid, indices
# ----------------------------------------------------------------------------------------------
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate arrays from 1-d coordinate vectors (each input is flattened), numpy's
    ``meshgrid``: ``indexing="xy"`` (Cartesian: the first two axes swapped) or ``"ij"``
    (matrix); ``sparse=True`` keeps size-1 axes instead of broadcasting. Returns a tuple; the
    vectors' lengths may be dynamic. ``copy`` has no effect (arrays are immutable)."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    vecs = [ravel(_as_array(x)) for x in xi]
    k = len(vecs)
    place = list(range(k))
    if indexing == "xy" and k > 1:
        place[0], place[1] = 1, 0
    lengths = [None] * k
    for v, p in zip(vecs, place):
        lengths[p] = typeof(v).shape[0]
    out = []
    for v, p in zip(vecs, place):
        shape = [lengths[j] if (j == p or not sparse) else 1 for j in range(k)]
        out.append(lax.broadcast_in_dim(v, shape, (p,)) if k > 1 else v)
    return tuple(out)


def indices(dimensions, dtype=int, sparse=False):
    """The index of every position of a grid of shape ``dimensions`` (static or traced sizes),
    numpy's ``indices``: an array of shape ``(len(dimensions),) + dimensions`` whose ``i``-th
    entry holds the ``i``-th coordinate, or with ``sparse=True`` a tuple of arrays with size-1
    axes except the ``i``-th. ``dtype=bool`` needs sizes of at most 2 (as numpy); a traced size
    cannot be checked and gives ``coordinate != 0``."""
    dims = [canonicalize_dim(d, "dimension") for d in shape_entries(dimensions)]
    dtype = canonical_dtype(dtype)
    if dtype == np.bool_ and any(isinstance(d, int) and d > 2 for d in dims):
        raise TypeError("arange() is only supported for booleans when the result has at most length 2.")
    k = len(dims)
    if sparse:
        return tuple(astype(lax.broadcasted_iota(int64, [d if j == i else 1 for j, d in enumerate(dims)], i), dtype)
                     for i in range(k))
    if k == 0:
        from .creation import zeros
        return zeros((0,), dtype)
    grids = [lax.broadcasted_iota(int64, dims, i) for i in range(k)]
    from .shape_ops import stack
    return astype(stack(grids, 0), dtype)
