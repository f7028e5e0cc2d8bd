"""``vmap`` member by member: the fallback when numpy itself needs each member's value.

numpy's indexing of a numpy array or a Python list (``xx[i]``, ``xx[i, :]``, ``lst[i]``)
converts the index with ``__index__`` / ``__array__`` and gives the index object no way to
take over, so a batched index (a ``BatchTracer``) can never become a ``gather`` there. When
the members of that batch are concrete (an eager ``vmap``, or one whose batched arguments
are constants), the conversion raises ``MembersNeeded`` for its ``vmap``, which then calls
the function once per member, on that member's slice of each batched argument, and stacks
the results: exactly numpy's semantics (negative indices, ``IndexError`` out of range).
Batched arguments that are tracers of an enclosing interpreter (``grad``, an outer
``vmap``) are sliced and stacked with dynjax operations, so the fallback composes with
them. Under ``qjit`` a traced index has no concrete members: the conversion raises a
``ConcretizationError`` that says to write ``jnp.getitem(x, i)`` / ``jnp.asarray(x)[i]``.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..core.pytree import tree_flatten
from ..core.trace import _INDEX_HINT, ConcretizationError, Tracer

__all__ = ["MembersNeeded", "members_needed", "run_members"]


class MembersNeeded(ConcretizationError):
    """A concrete member of the batch of ``trace`` is needed (numpy converted a batched
    value); ``vmap`` of ``trace`` catches it and goes member by member."""

    def __init__(self, trace, message: str):
        super().__init__(message)
        self.trace = trace


def members_needed(tracer, what: str) -> ConcretizationError:
    """The error to raise when numpy converts the batched ``tracer``: ``MembersNeeded`` for
    the innermost ``vmap`` whose members are concrete, else a plain ``ConcretizationError``."""
    batch_tracer = type(tracer)
    v = tracer.val
    while isinstance(v, batch_tracer) and v.bdim is None:   # shared by an enclosing vmap
        v = v.val
    if not isinstance(v, Tracer) and isinstance(tracer._trace.size, (int, np.integer)):
        return MembersNeeded(tracer._trace, tracer._concrete_error(what))
    if isinstance(v, batch_tracer):   # an enclosing vmap may be able to go member by member
        return members_needed(v, what)
    return tracer._concrete_error(what, _INDEX_HINT)


def _member(v, d, b):
    """Member ``b`` of the batch ``v`` whose batch axis is ``d`` (``b`` None: zeros of a
    member's type, to learn the result types of an empty batch)."""
    if isinstance(v, Tracer):
        from .. import numpy as jnp
        if b is None:
            shape = v.shape[:d] + v.shape[d + 1:]
            return jnp.zeros(shape, v.dtype)
        return jnp.getitem(v, (slice(None),) * d + (b,))
    v = np.asarray(v)
    if b is None:
        return np.zeros(v.shape[:d] + v.shape[d + 1:], v.dtype)
    return v[(slice(None),) * d + (b,)]


def _stack(column: Sequence[Any], size: int):
    if size == 0:
        c = column[0]
        if isinstance(c, Tracer):
            from .. import numpy as jnp
            return jnp.zeros((0,) + tuple(c.shape), c.dtype)
        c = np.asarray(c)
        return np.zeros((0,) + c.shape, c.dtype)
    if any(isinstance(c, Tracer) for c in column):
        from .. import numpy as jnp
        return jnp.stack(list(column))
    column = [np.asarray(c) for c in column]
    if any(c.shape != column[0].shape for c in column):
        raise ValueError(f"vmap: the members of the batch return results of different shapes "
                         f"({', '.join(sorted({str(c.shape) for c in column}))}): a ragged batch")
    return np.stack(column)


def run_members(fun, size, vals, dims, needed: MembersNeeded):
    """``vmap_flat``'s result computed by calling ``fun`` once per member: ``(out_leaves,
    out_dims, out_tree)``; an output that is the very same object for every member is
    shared (batch axis None), the others are stacked along axis 0."""
    if not isinstance(size, (int, np.integer)):
        raise needed
    size = int(size)
    results = []
    for b in (range(size) if size else [None]):
        args = [v if d is None else _member(v, d, b) for v, d in zip(vals, dims)]
        try:
            out = fun(*args)
        except Exception:
            if b is None:   # the zeros stand-in of an empty batch is not a valid member
                raise needed
            raise
        results.append(tree_flatten(out))
    tree = results[0][1]
    for leaves, t in results[1:]:
        if t != tree:
            raise ValueError(f"vmap: the members of the batch return different structures "
                             f"({tree} and {t})")
    outs, out_dims = [], []
    for k in range(len(results[0][0])):
        column = [leaves[k] for leaves, _ in results]
        if size and all(c is column[0] for c in column):
            outs.append(column[0])
            out_dims.append(None)
        else:
            outs.append(_stack(column, size))
            out_dims.append(0)
    return outs, out_dims, tree
