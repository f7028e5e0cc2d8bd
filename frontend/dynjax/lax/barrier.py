"""``optimization_barrier``: the identity on any number of arrays, which XLA may not optimize
across (no fusion, no common-subexpression elimination and no reordering through it).

``optimization_barrier[] x1 ... xn`` returns its operands unchanged (same avals, dynamic dims
included). Eagerly it is the identity; compiled it is ``stablehlo.optimization_barrier``.
Its rules treat it as the identity that it is: the tangents (and cotangents, and batched
values) go through a barrier of their own, as in JAX. Rules: ``lowering/barrier.py``,
``transforms/jvp/barrier.py`` (jvp and transpose), ``transforms/batching/barrier.py``,
``cost_model/barrier.py``; padding: ``execution/padding.py`` (nothing to do).
"""
from __future__ import annotations

import numpy as np

from ..core.pytree import tree_flatten, tree_unflatten
from .base import aval, define

__all__ = ["optimization_barrier_p", "optimization_barrier"]


def _impl(*xs):
    return [np.asarray(x) for x in xs]


def _abstract(*xs):
    return [aval(x) for x in xs]


optimization_barrier_p = define("optimization_barrier", _impl, _abstract, multiple_results=True)


def optimization_barrier(operand, /):
    """``operand`` (a pytree of arrays) unchanged, with a barrier that keeps the compiler from
    moving, fusing or merging operations across it (see ``jax.lax.optimization_barrier``)."""
    leaves, tree = tree_flatten(operand)
    if not leaves:
        return operand
    return tree_unflatten(tree, list(optimization_barrier_p.bind(*leaves)))
