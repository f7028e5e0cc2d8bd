"""Collectives over named axes: ``psum pmean pmax pmin all_gather psum_scatter all_to_all
ppermute pshuffle axis_index axis_size`` (JAX's ``jax.lax`` names and signatures).

Inside ``vmap(f, axis_name="i")`` the members of the batch are the participants: ``psum(x,
"i")`` gives every member the sum of all members' ``x``. Each collective is a primitive over
axis name (``psum_p[axis_name=i]``) or over a tuple of names bound by one trace (a
shard_map's body: ``psum_p[axis_name=(x, y)]``, lowered as one collective over the product
of the devices). A tuple's members are the product of the axes, the first name major (a
gather over ``("i", "j")`` orders members ``i``-major); names bound by different traces
(nested vmaps) bind one collective per name, the same meaning (``expand``). The trace that
binds the name interprets it (``transforms/batching/collectives.py``): the API
raises the operands into that trace (``core.named_axes``), so that a collective of a value
the axis does not vary (``psum(1, "i")``, the axis size) still reaches it. Reaching the
evaluator instead means no axis binds the name: a ``NameError``, as in JAX.

Their derivatives are JAX's: the linear ones transpose into each other (``psum`` into
``psum``, ``all_gather`` into ``psum_scatter``, ``all_to_all`` into the reverse
``all_to_all``, ``ppermute`` into the inverse permutation), ``pmax`` / ``pmin`` have none.
"""
from __future__ import annotations

from typing import Any, Hashable, Sequence, Tuple

import numpy as np

from ..core import named_axes
from ..core.pytree import tree_flatten, tree_unflatten
from ..core.trace import named_axis_binders
from .base import aval, define, result_aval

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "all_to_all", "ppermute",
           "pshuffle", "axis_index", "axis_size", "psum_p", "pmax_p", "pmin_p", "all_gather_p",
           "psum_scatter_p", "all_to_all_p", "ppermute_p", "axis_index_p"]


def _unbound(*args, axis_name, **params):
    raise NameError(f"unbound axis name: {axis_name!r}: no vmap(axis_name=...) binds it here")


def _same(x, **params):
    return aval(x)


def _no_bool(who):
    def check(x, **params):
        a = aval(x)
        if np.dtype(a.dtype) == np.bool_:
            raise TypeError(f"{who} does not accept booleans (dtype bool): convert them to a "
                            "number dtype first (lax.psum counts booleans as int32)")
        return a
    return check


def _static_size(axis_size, who):
    if not isinstance(axis_size, (int, np.integer)):
        raise NotImplementedError(f"{who} over an axis of dynamic size, differentiated: its result "
                                  "shape would depend on the batch size")
    return int(axis_size)


def _gather_aval(x, *, axis_name, axis_size, axis, tiled):
    a = aval(x)
    n = _static_size(axis_size, "all_gather")
    shape = list(a.shape)
    if tiled:
        shape[axis] = shape[axis] * n
    else:
        shape.insert(axis, n)
    return result_aval(tuple(shape), a.dtype, a.weak_type)


def _scatter_aval(x, *, axis_name, axis_size, scatter_dimension, tiled):
    a = _no_bool("psum_scatter")(x)
    n = _static_size(axis_size, "psum_scatter")
    shape = list(a.shape)
    if tiled:
        shape[scatter_dimension] = shape[scatter_dimension] // n
    else:
        del shape[scatter_dimension]
    return result_aval(tuple(shape), a.dtype, a.weak_type)


def _all_to_all_aval(x, *, axis_name, axis_size, split_axis, concat_axis, tiled):
    a = aval(x)
    n = _static_size(axis_size, "all_to_all")
    shape = list(a.shape)
    if tiled:
        shape[split_axis] = shape[split_axis] // n
        shape[concat_axis] = shape[concat_axis] * n
    else:
        del shape[split_axis]
        shape.insert(concat_axis, n)
    return result_aval(tuple(shape), a.dtype, a.weak_type)


def _index_aval(*, axis_name, axis_size):
    return result_aval((), np.dtype(np.int32))


psum_p = define("psum", _unbound, _no_bool("psum_p"))
pmax_p = define("pmax", _unbound, _same)
pmin_p = define("pmin", _unbound, _same)
all_gather_p = define("all_gather", _unbound, _gather_aval)
psum_scatter_p = define("psum_scatter", _unbound, _scatter_aval)
all_to_all_p = define("all_to_all", _unbound, _all_to_all_aval)
ppermute_p = define("ppermute", _unbound, _same)
axis_index_p = define("axis_index", _unbound, _index_aval)

#: the primitives whose batching rule runs even on values the axis does not vary
COLLECTIVES = (psum_p, pmax_p, pmin_p, all_gather_p, psum_scatter_p, all_to_all_p, ppermute_p, axis_index_p)
COLLECTIVE_SET = frozenset(COLLECTIVES)


def _binder_of(params):
    """The trace that interprets a collective: the one binding its axis name (the innermost
    of them, for a tuple of names)."""
    name = params["axis_name"]
    if isinstance(name, tuple):
        return max((named_axes.binder(n)[0] for n in name), key=lambda t: t.level)
    return named_axes.binder(name)[0]


for _p in COLLECTIVES:
    named_axis_binders[_p] = _binder_of


# ----------------------------------------------------------------------------------------------
# binding
# ----------------------------------------------------------------------------------------------
def _names(axis_name) -> Tuple[Hashable, ...]:
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    if not names:
        raise ValueError("a collective needs at least one axis name")
    return names


def _no_groups(axis_index_groups, who):
    if axis_index_groups is not None:
        raise NotImplementedError(f"{who}: axis_index_groups is not supported")


def bind_one(prim, x, axis_name, **params):
    """Apply collective ``prim`` over one axis name, or over a tuple of names as one
    collective whose members are their product, the first name major (``bind`` interprets
    it in the trace that binds the name, or raises NameError when none does)."""
    size = _size_of(axis_name if isinstance(axis_name, tuple) else (axis_name,))
    size = int(size) if isinstance(size, (int, np.integer)) else None
    return prim.bind(*([] if x is None else [x]), axis_name=axis_name, axis_size=size, **params)


def _as_one(names) -> bool:
    """Whether a collective over ``names`` binds as one primitive over the tuple: several
    names bound by one trace (a shard_map's body, which lowers it as one collective over the
    product of their devices). Names bound by different traces (nested vmaps) bind one
    collective per name, each interpreted by its own trace."""
    if len(names) < 2:
        return False
    traces = {id(named_axes.binder(n)[0]) for n in names}
    return len(traces) == 1


def collective(prim, x, names, **params):
    """``prim`` over the axis names ``names`` (a tuple): one primitive over the tuple when one
    trace binds them all, else its expansion into one primitive per name."""
    if _as_one(names):
        return bind_one(prim, x, tuple(names), **params)
    return expand(prim, x, tuple(names), **params)


def expand(prim, x, names, **params):
    """A collective over the tuple ``names`` as a sequence of collectives over one name each
    (the meaning of the tuple: the members are the product of the axes, the first name
    major). The interpretation of a tuple-name primitive by the trace of one of its names."""
    from . import api as lax
    if len(names) == 1:
        return bind_one(prim, x, names[0], **params)
    if prim in (psum_p, pmax_p, pmin_p):
        for n in reversed(names):
            x = bind_one(prim, x, n)
        return x
    if prim is all_gather_p:
        # the last name varies fastest: gather over it first, then tile the others around it
        x = bind_one(all_gather_p, x, names[-1], axis=params["axis"], tiled=params["tiled"])
        for n in reversed(names[:-1]):
            x = bind_one(all_gather_p, x, n, axis=params["axis"], tiled=True)
        return x
    if prim is psum_scatter_p:
        # the first name is the major one: scatter over it first, in blocks; the last one
        # removes the dimension unless tiled
        for k, n in enumerate(names):
            x = bind_one(psum_scatter_p, x, n, scatter_dimension=params["scatter_dimension"],
                         tiled=params["tiled"] or k < len(names) - 1)
        return x
    if prim is all_to_all_p:
        return _all_to_all_expanded(x, names, **params)
    if prim is ppermute_p:
        return _ppermute_expanded(x, names, params["perm"])
    if prim is axis_index_p:
        index = None
        for n in names:
            size = named_axes.binder(n)[1]
            mine = bind_one(axis_index_p, None, n)
            if index is None:
                index = mine
            else:
                width = lax.convert_element_type(size, np.int32) if not isinstance(size, (int, np.integer)) \
                    else np.int32(size)
                index = lax.add(lax.mul(index, width), mine)
        return index
    raise NotImplementedError(f"{prim.name} over several axis names")


def _ppermute_expanded(x, names, perm):
    """ppermute over several names: every member's value gathered over them, each member
    then takes its source's (zeros when it receives nothing)."""
    from . import api as lax
    total = int(np.prod([_static_size(named_axes.binder(n)[1], "ppermute over several axis names")
                         for n in names]))
    source, receives = np.zeros(total, np.int32), np.zeros(total, bool)
    for src, dst in perm:
        source[dst], receives[dst] = src, True
    everyone = expand(all_gather_p, x, names, axis=0, tiled=False)      # (members, ...)
    me = expand(axis_index_p, None, names)
    pick = lax.dynamic_slice(source, (me,), (1,))
    shape = tuple(aval(everyone).shape[1:])
    mine = lax.reshape(lax.dynamic_slice(everyone, (lax.reshape(pick, ()),) + (np.int32(0),) * len(shape),
                                         (1,) + shape), shape)
    gets = lax.broadcast_in_dim(lax.reshape(lax.dynamic_slice(receives, (me,), (1,)), ()), shape, ())
    return lax.select(gets, mine, lax.broadcast_in_dim(np.zeros((), aval(x).dtype), shape, ()))


def _all_to_all_expanded(x, names, *, split_axis, concat_axis, tiled):
    """all_to_all over several names: the split axis cut into one axis per name (then the
    block), each exchanged in place over its name (afterwards it indexes the sender's
    coordinate along that name), the sender axes then merged into the concat axis."""
    from . import api as lax
    sizes = [_static_size(named_axes.binder(n)[1], "all_to_all over several axis names") for n in names]
    total, k = int(np.prod(sizes)), len(names)
    s, c = split_axis, (concat_axis if tiled else split_axis)
    shape = list(aval(x).shape)
    block = shape[s] // total
    x = lax.reshape(x, tuple(shape[:s] + sizes + [block] + shape[s + 1:]))
    for i, n in enumerate(names):
        x = bind_one(all_to_all_p, x, n, split_axis=s + i, concat_axis=s + i, tiled=False)
    reduced = shape[:s] + [block] + shape[s + 1:]
    if c != s:
        # the sender axes just before the concat axis
        at = [r if r < s else (s + k if r == s else r + k) for r in range(len(shape))]
        order = []
        for r in range(len(shape)):
            if r == c:
                order += list(range(s, s + k))
            order.append(at[r])
        x = lax.transpose(x, tuple(order))
    reduced[c] = reduced[c] * total
    x = lax.reshape(x, tuple(reduced))
    if not tiled:   # the exchanged axis (blocks of one) moves to concat_axis
        order = [a for a in range(len(shape)) if a != s]
        order.insert(concat_axis, s)
        x = lax.transpose(x, tuple(order)) if order != list(range(len(shape))) else x
    return x


def _leafwise(fn, x):
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [fn(v) for v in leaves])


def _size_of(names) -> Any:
    total = 1
    for n in names:
        size = named_axes.binder(n)[1]
        total = total * size if isinstance(size, (int, np.integer)) else size * total
    return total


def _int32_if_bool(v):
    """Booleans are summed as ``int32`` (JAX's ``psum``: a count of the true members)."""
    from . import api as lax
    return lax.convert_element_type(v, np.int32) if np.dtype(aval(v).dtype) == np.bool_ else v


def psum(x, axis_name, *, axis_index_groups=None):
    """The sum over the named axis (or axes) of every leaf of ``x`` (booleans are counted:
    an ``int32`` result, as in JAX)."""
    _no_groups(axis_index_groups, "psum")
    names = _names(axis_name)

    return _leafwise(lambda v: collective(psum_p, _int32_if_bool(v), names), x)


def pmean(x, axis_name, *, axis_index_groups=None):
    """The mean over the named axis (or axes) of every leaf of ``x``."""
    from . import api as lax
    _no_groups(axis_index_groups, "pmean")
    names = _names(axis_name)
    size = _size_of(names)

    def one(v):
        s = psum(v, names)
        dt = _mean_dtype(aval(s).dtype)
        return lax.div(lax.convert_element_type(s, dt), lax.convert_element_type(size, dt))
    return _leafwise(one, x)


def _mean_dtype(dtype) -> np.dtype:
    """The dtype of a mean of ``dtype`` values (JAX's ``pmean``): a float or complex dtype
    is kept; integers of 64 bits give ``float64``, narrower ones (and booleans) ``float32``."""
    from ..core.avals import is_inexact_dtype
    dt = np.dtype(dtype)
    if is_inexact_dtype(dt):
        return dt
    return np.dtype(np.float64 if dt.itemsize == 8 else np.float32)


def pmax(x, axis_name, *, axis_index_groups=None):
    """The maximum over the named axis (or axes) of every leaf of ``x``."""
    _no_groups(axis_index_groups, "pmax")
    names = _names(axis_name)
    return _leafwise(lambda v: _over(pmax_p, v, names), x)


def pmin(x, axis_name, *, axis_index_groups=None):
    """The minimum over the named axis (or axes) of every leaf of ``x``."""
    _no_groups(axis_index_groups, "pmin")
    names = _names(axis_name)
    return _leafwise(lambda v: _over(pmin_p, v, names), x)


def _over(prim, v, names):
    return collective(prim, v, names)


def _axis(axis, ndim, who, what="axis"):
    if not isinstance(axis, (int, np.integer)) or not -ndim <= axis < ndim:
        raise ValueError(f"{who}: {what}={axis!r} is out of range for rank {ndim}")
    return int(axis) % ndim


def all_gather(x, axis_name, *, axis_index_groups=None, axis: int = 0, tiled: bool = False):
    """Every member's ``x``, stacked along ``axis`` in member order (concatenated when
    ``tiled``); the same array for every member."""
    _no_groups(axis_index_groups, "all_gather")
    names = _names(axis_name)

    def one(v):
        nd = len(aval(v).shape)
        ax = _axis(axis, nd + (0 if tiled else 1), "all_gather")
        return collective(all_gather_p, v, names, axis=ax, tiled=bool(tiled))
    return _leafwise(one, x)


def psum_scatter(x, axis_name, *, scatter_dimension: int = 0, axis_index_groups=None, tiled: bool = False):
    """The sum over the named axis, of which member ``k`` keeps block ``k`` along
    ``scatter_dimension`` (that dimension's length must be the axis size, or a multiple of
    it when ``tiled``)."""
    _no_groups(axis_index_groups, "psum_scatter")
    names = _names(axis_name)

    def one(v):
        nd = len(aval(v).shape)
        d = _axis(scatter_dimension, nd, "psum_scatter", "scatter_dimension")
        if np.dtype(aval(v).dtype) == np.bool_:
            raise TypeError("psum_scatter does not accept booleans (dtype bool): convert them to a "
                            "number dtype first")
        length = aval(v).shape[d]
        total = _size_of(names)
        if isinstance(length, int) and isinstance(total, (int, np.integer)) and (
                (not tiled and length != total) or (tiled and length % total)):
            raise ValueError(f"psum_scatter: dimension {d} of length {length} "
                             f"{'is not a multiple of' if tiled else 'must equal'} the axis size {total}")
        return collective(psum_scatter_p, v, names, scatter_dimension=d, tiled=bool(tiled))
    return _leafwise(one, x)


def all_to_all(x, axis_name, split_axis: int, concat_axis: int, *, axis_index_groups=None, tiled: bool = False):
    """Member ``k`` splits ``x`` along ``split_axis`` into one block per member and sends
    block ``j`` to member ``j``, which concatenates what it receives along ``concat_axis`` in
    member order (without ``tiled``, the split axis, of length the axis size, is removed and
    a new axis of that length is inserted at ``concat_axis``)."""
    _no_groups(axis_index_groups, "all_to_all")
    names = _names(axis_name)

    def one(v):
        nd = len(aval(v).shape)
        s = _axis(split_axis, nd, "all_to_all", "split_axis")
        c = _axis(concat_axis, nd, "all_to_all", "concat_axis")
        length, total = aval(v).shape[s], _size_of(names)
        if isinstance(length, int) and isinstance(total, (int, np.integer)) and (
                (not tiled and length != total) or (tiled and length % total)):
            raise ValueError(f"all_to_all: split_axis {s} of length {length} "
                             f"{'is not a multiple of' if tiled else 'must equal'} the axis size {total}")
        return collective(all_to_all_p, v, names, split_axis=s, concat_axis=c, tiled=bool(tiled))
    return _leafwise(one, x)


def _check_perm(perm, who) -> Tuple[Tuple[int, int], ...]:
    pairs = tuple((int(s), int(d)) for s, d in perm)
    srcs, dsts = [s for s, _ in pairs], [d for _, d in pairs]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(f"{who}: perm sources and destinations must be unique, got {list(pairs)}")
    if any(i < 0 for i in srcs + dsts):
        raise ValueError(f"{who}: perm indices must be nonnegative, got {list(pairs)}")
    return pairs


def ppermute(x, axis_name, perm: Sequence[Tuple[int, int]]):
    """Member ``d`` receives the ``x`` of member ``s`` for every pair ``(s, d)`` of ``perm``;
    a member that receives nothing gets zeros (over a tuple of names, members are numbered
    by their linear index, the first name major)."""
    names = _names(axis_name)
    pairs = _check_perm(perm, "ppermute")
    size = _size_of(names)
    if isinstance(size, (int, np.integer)) and any(i >= size for p in pairs for i in p):
        raise ValueError(f"ppermute: perm {list(pairs)} names a member beyond the axis size {int(size)}")
    return _leafwise(lambda v: collective(ppermute_p, v, names, perm=pairs), x)


def pshuffle(x, axis_name, perm: Sequence[int]):
    """Member ``k`` receives the ``x`` of member ``perm[k]`` (``perm`` a permutation)."""
    perm = [int(p) for p in perm]
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"pshuffle: perm must be a permutation of 0..{len(perm) - 1}, got {perm}")
    return ppermute(x, axis_name, [(src, dst) for dst, src in enumerate(perm)])


def axis_size(axis_name):
    """The number of members along the named axis (the product, for a tuple of names)."""
    return _size_of(_names(axis_name))


def axis_index(axis_name):
    """This member's index along the named axis (``int32``; for a tuple of names, the index
    in their product, the first name major)."""
    return collective(axis_index_p, None, _names(axis_name))
