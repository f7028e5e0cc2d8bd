"""Named axes: which trace binds an axis name.

``vmap(f, axis_name="i")`` gives the axis it maps over a name; inside ``f``, collectives
(``lax.psum(x, "i")``, ``lax.all_gather``, ``lax.axis_index``...) act across that axis: across
the members of the batch. The trace that vectorizes over the axis is the one that interprets
them (its batching rules), so a collective must reach that trace even when its operand is
not one of its values (``psum(3.0, "i")`` is ``3.0 * size``): ``binder(name)`` finds it, and
the collective's operands are raised into it.

The bindings are per thread, innermost last (a name bound twice refers to the inner axis).
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Hashable, List, Optional, Tuple


class _Bindings(threading.local):
    def __init__(self):
        self.stack: List[Tuple[Hashable, Any, Any]] = []   # (name, trace, size)


_bindings = _Bindings()


@contextlib.contextmanager
def binding(name: Optional[Hashable], trace, size):
    """Bind ``name`` to ``trace`` (an axis of ``size`` members) for the block."""
    if name is None:
        yield
        return
    _bindings.stack.append((name, trace, size))
    try:
        yield
    finally:
        _bindings.stack.pop()


def binder(name: Hashable):
    """``(trace, size)`` of the innermost binding of ``name``; NameError when unbound."""
    for n, trace, size in reversed(_bindings.stack):
        if n == name:
            return trace, size
    bound = [n for n, _, _ in _bindings.stack]
    raise NameError(f"unbound axis name: {name!r}. The axis names bound here (by vmap(axis_name=...)) "
                    f"are {bound}" if bound else f"unbound axis name: {name!r}: no vmap(axis_name=...) "
                    "or shard_map binds it here")


def bound_names() -> List[Hashable]:
    return [n for n, _, _ in _bindings.stack]
