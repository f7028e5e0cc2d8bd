"""Catalyst-style control flow: ``@for_loop``, ``@while_loop``, ``@cond``, ``@switch`` decorators.

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


class SwitchCallable:
    """The object ``@switch(index)`` returns: register cases with ``.branch(k)``, then call it
    (with the branches' arguments, if any).

    Unlike ``lax.switch``, cases are arbitrary integers (in any order, negative ones too), the
    index is not clamped, and an index that matches no case runs the default branch (the
    decorated function). Branch results whose dtypes differ are promoted to their joined
    dtype (``1.4`` in one case and ``2`` in another give ``float``)."""

    def __init__(self, index, default_fn: Callable):
        self.index = _as_int_index(index)
        self.default_fn = default_fn
        self.cases: List[int] = []
        self.branches: List[Callable] = []

    def branch(self, case):
        """Decorator: ``@my_switch.branch(k)`` runs the decorated function when the index is ``k``."""
        import operator
        try:
            k = operator.index(case)
        except TypeError:
            raise TypeError(f"switch: a case must be a Python int, got {type(case).__name__}") from None
        if isinstance(case, bool):
            raise TypeError("switch: a case must be a Python int, got bool")
        if k in self.cases:
            raise ValueError(f"switch: case {k} is already defined")

        def decorator(fn):
            if not callable(fn):
                raise TypeError(f"switch: branch {k} must be a function, got {type(fn).__name__}")
            self.cases.append(k)
            self.branches.append(fn)
            return self
        return decorator

    @api_boundary
    def __call__(self, *args):
        import numpy as np
        i = self.index
        # position of the matching case among the branches; len(cases) (the default) if none
        pos = np.int64(len(self.cases))
        for j in reversed(range(len(self.cases))):
            hit = lax.eq(i, np.int64(self.cases[j]))
            pos = lax.select(hit, np.int64(j), pos)
        branches = self.branches + [self.default_fn]
        return _bind_promoting(pos, branches, args)


def _as_int_index(index):
    import numpy as np
    from ..core.avals import int64
    a = typeof(index)
    if a.shape != () or not np.issubdtype(a.dtype, np.integer) or a.dtype == bool_:
        raise TypeError(f"switch: the index must be an integer scalar, got {a.str_short()}")
    if isinstance(index, Tracer):
        return index if a.dtype == int64 else lax.convert_element_type(index, int64)
    return np.int64(index)


def _bind_promoting(index, branches, args):
    """``bind_cond``, with branch results of different dtypes promoted to the joined dtype:
    the branches are traced once to learn their result types, then again with casts."""
    from ..core import pytree
    seen = {}

    def recording(b, fn, casts=None):
        def run(*a):
            out = fn(*a)
            leaves, tree = pytree.tree_flatten(out)
            if casts is not None:
                leaves = [x if dt is None or typeof(x).dtype == dt else lax.convert_element_type(x, dt)
                          for x, dt in zip(leaves, casts)]
                return pytree.tree_unflatten(tree, leaves)
            seen[b] = (tree, [typeof(x) for x in leaves])
            return out
        return run

    try:
        return bind_cond(index, [recording(b, fn) for b, fn in enumerate(branches)], args)
    except TypeError:
        casts = _joined_dtypes(seen, len(branches))
        if casts is None:
            raise
    return bind_cond(index, [recording(b, fn, casts) for b, fn in enumerate(branches)], args)


def _joined_dtypes(seen, nbranches):
    """The dtypes every branch result is cast to, or None when promotion cannot help (a
    branch failed to trace, or the branches differ in structure or rank)."""
    from ..numpy._promote import promote_dtypes
    if len(seen) != nbranches:
        return None
    trees = [seen[b][0] for b in range(nbranches)]
    if any(t != trees[0] for t in trees[1:]):
        return None
    avals = [seen[b][1] for b in range(nbranches)]
    out = []
    changed = False
    for k in range(len(avals[0])):
        col = [av[k] for av in avals]
        if any(a.ndim != col[0].ndim for a in col):
            return None
        if all(a.dtype == col[0].dtype for a in col):
            out.append(None)
            continue
        out.append(promote_dtypes(*col)[0])
        changed = True
    return out if changed else None


def switch(index):
    """Decorator: ``@switch(i)`` on the default branch; add cases with ``.branch(k)`` and call
    the result. See ``SwitchCallable``; ``dynjax.lax.switch`` is JAX's clamping form."""
    def decorator(default_fn):
        if not callable(default_fn):
            raise TypeError(f"switch: the default branch must be a function, got {type(default_fn).__name__}")
        return SwitchCallable(index, default_fn)
    return decorator
