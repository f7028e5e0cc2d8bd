"""Catalyst-style control flow: ``@for_loop``, ``@while_loop``, ``@cond`` decorators.

    @for_loop(0, n, 1)
    def loop(i, a):          # body(i, *carried) returns the new carried values
        return a + 1
    a = loop(a0)

Loops take ``allow_array_resizing=False`` (Catalyst's current name) or the seed's
``experimental_preserve_dimensions=True`` (the same switch, inverted): by default the
loop keeps the dimension-sharing pattern of its arguments; with resizing allowed,
every dimension of every carried array is its own loop-carried value.
"""
from __future__ import annotations

from typing import Callable, List, Optional

from ..core.avals import bool_
from ..core.errors import api_boundary
from ..core.trace import Tracer, typeof
from .. import lax
from .binders import bind_cond, bind_for_loop, bind_while_loop


def _preserve(allow_array_resizing: bool, experimental_preserve_dimensions: Optional[bool]) -> bool:
    if experimental_preserve_dimensions is not None:
        if allow_array_resizing and experimental_preserve_dimensions:
            raise ValueError("allow_array_resizing=True contradicts experimental_preserve_dimensions=True")
        return bool(experimental_preserve_dimensions)
    return not allow_array_resizing


def _pack(args):
    return args[0] if len(args) == 1 else tuple(args)


def _unpack(result, nargs):
    if nargs == 0:
        return ()
    if nargs == 1:
        return (result,)
    return tuple(result)


def _body_result(result, nargs, name):
    if nargs == 0:
        if result is not None:
            raise TypeError(f"{name}: the body takes no carried values, so it must return None")
        return ()
    if nargs == 1:
        return result
    if not isinstance(result, (tuple, list)) or len(result) != nargs:
        raise TypeError(f"{name}: the body has {nargs} carried values, so it must return a tuple of {nargs}")
    return tuple(result)


def for_loop(lower_bound, upper_bound, step, allow_array_resizing: bool = False,
             experimental_preserve_dimensions: Optional[bool] = None):
    """Decorator: ``body(i, *args)`` becomes ``loop(*init)`` running ``range(lower, upper, step)``."""
    preserve = _preserve(allow_array_resizing, experimental_preserve_dimensions)

    def decorator(body: Callable):
        @api_boundary
        def loop(*init):
            n = len(init)

            def step_fn(i, carry):
                return _body_result(body(i, *_unpack(carry, n)), n, "for_loop")
            out = bind_for_loop(step_fn, lower_bound, upper_bound, step, _pack(init) if n else (), preserve)
            return None if n == 0 else out
        return loop
    return decorator


def while_loop(cond_fn: Callable, allow_array_resizing: bool = False,
               experimental_preserve_dimensions: Optional[bool] = None):
    """Decorator: ``body(*args)`` becomes ``loop(*init)`` repeating while ``cond_fn(*args)``."""
    preserve = _preserve(allow_array_resizing, experimental_preserve_dimensions)

    def decorator(body: Callable):
        @api_boundary
        def loop(*init):
            n = len(init)

            def cond_wrapped(carry):
                return _as_bool_scalar(cond_fn(*_unpack(carry, n)), "while_loop condition")

            def body_wrapped(carry):
                return _body_result(body(*_unpack(carry, n)), n, "while_loop")
            out = bind_while_loop(cond_wrapped, body_wrapped, _pack(init) if n else (), preserve)
            return None if n == 0 else out
        return loop
    return decorator


def _as_bool_scalar(p, what):
    a = typeof(p)
    if a.shape != ():
        raise TypeError(f"{what} must be a scalar, got an array of type {a.str_short()}")
    if a.dtype != bool_:
        raise TypeError(f"{what} must be a boolean, got {a.str_short()} (compare it, e.g. x > 0)")
    return p


class CondCallable:
    """The object ``@cond(pred)`` returns: add branches with ``.else_if`` / ``.otherwise``,
    then call it (with the branches' arguments, if any)."""

    def __init__(self, pred, true_fn: Callable):
        self.preds = [_as_bool_scalar(pred, "cond predicate")]
        self.branches: List[Callable] = [true_fn]
        self.otherwise_fn: Optional[Callable] = None

    def else_if(self, pred):
        p = _as_bool_scalar(pred, "else_if predicate")

        def decorator(fn):
            self.preds.append(p)
            self.branches.append(fn)
            return self
        return decorator

    def otherwise(self, fn):
        self.otherwise_fn = fn
        return self

    @api_boundary
    def __call__(self, *args):
        otherwise = self.otherwise_fn
        if otherwise is None:
            def otherwise(*a):
                return None
        branches = self.branches + [otherwise]
        # index of the first true predicate, len(preds) when none is true
        index = len(self.preds)
        for k in reversed(range(len(self.preds))):
            index = lax.select(self.preds[k], _i64(k), _i64(index))
        try:
            return bind_cond(index, branches, args)
        except TypeError as e:
            if self.otherwise_fn is None and "structure" in str(e):
                raise TypeError("cond: branches that return values need an .otherwise branch "
                                f"({e})") from None
            raise


def _i64(k):
    import numpy as np
    return k if isinstance(k, Tracer) else np.int64(k)


def cond(pred):
    """Decorator: ``@cond(pred)`` on the true branch; see ``CondCallable``."""
    def decorator(true_fn):
        return CondCallable(pred, true_fn)
    return decorator
