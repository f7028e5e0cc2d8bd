"""lax-style control flow: ``cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan``."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..core.avals import bool_, int64
from ..core.errors import api_boundary
from ..core.trace import Tracer, typeof
from .. import lax
from .binders import bind_cond, bind_for_loop, bind_scan, bind_while_loop


def _index_from_pred(pred):
    a = typeof(pred)
    if a.shape != ():
        raise TypeError(f"cond: the predicate must be a scalar, got {a.str_short()}")
    if a.dtype != bool_:
        raise TypeError(f"cond: the predicate must be a boolean, got {a.str_short()}")
    return lax.convert_element_type(pred, int64)


@api_boundary
def cond(pred, true_fun: Callable, false_fun: Callable, *operands):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``."""
    return bind_cond(_index_from_pred(pred), [false_fun, true_fun], operands)


@api_boundary
def switch(index, branches: Sequence[Callable], *operands):
    """``branches[clamp(index, 0, len(branches) - 1)](*operands)``."""
    a = typeof(index)
    if a.shape != () or not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"switch: the index must be an integer scalar, got {a.str_short()}")
    if not branches:
        raise ValueError("switch needs at least one branch")
    idx = lax.convert_element_type(index, int64) if isinstance(index, Tracer) else np.int64(index)
    return bind_cond(idx, list(branches), operands)


@api_boundary
def while_loop(cond_fun: Callable, body_fun: Callable, init_val, allow_array_resizing: bool = False):
    """``while cond_fun(val): val = body_fun(val)``."""
    def cond_checked(v):
        p = cond_fun(v)
        a = typeof(p)
        if a.shape != () or a.dtype != bool_:
            raise TypeError(f"while_loop: cond_fun must return a boolean scalar, got {a.str_short()}")
        return p
    return bind_while_loop(cond_checked, body_fun, init_val, not allow_array_resizing)


@api_boundary
def fori_loop(lower, upper, body_fun: Callable, init_val, allow_array_resizing: bool = False):
    """``for i in range(lower, upper): val = body_fun(i, val)``."""
    return bind_for_loop(body_fun, lower, upper, 1, init_val, not allow_array_resizing)


@api_boundary
def scan(f: Callable, init, xs=None, length=None, reverse: bool = False):
    """``carry, y = f(carry, x)`` for each ``x`` along the leading axis of ``xs``; returns
    ``(carry, ys)`` with the ``y`` stacked. The length may be a dynamic dimension."""
    return bind_scan(f, init, () if xs is None else xs, length, reverse)
