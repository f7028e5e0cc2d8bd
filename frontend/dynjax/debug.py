"""``dynjax.debug``: printing and inspecting run-time values inside compiled code.

``debug.print("x = {x}", x=x)`` and ``debug.callback(fn, *args)`` work eagerly and inside
``@qjit``, in loop bodies and branches, on arrays of any (dynamic) size. They stage one
``debug_callback`` equation (``lax/effects.py``), which the execution planner runs on the
host in program order: inside a ``for_loop`` once per iteration, inside a ``cond`` only in
the branch taken. A loop or branch containing one is driven from the host (one round trip
per iteration), so remove debug printing from hot loops when measuring speed.
"""
from __future__ import annotations

from typing import Callable

from .core.pytree import tree_flatten, tree_unflatten
from .lax.effects import debug_callback_p

__all__ = ["print", "callback"]

_builtin_print = print


def callback(fn: Callable, *args, **kwargs) -> None:
    """Call ``fn(*args, **kwargs)`` with the run-time (numpy) values of the arguments, which
    may be pytrees of arrays. The result of ``fn`` is discarded."""
    if not callable(fn):
        raise TypeError(f"debug.callback: the first argument must be a function, got {type(fn).__name__}")
    leaves, tree = tree_flatten((args, kwargs))

    def run(*values):
        a, kw = tree_unflatten(tree, values)
        fn(*a, **kw)
    run.__qualname__ = getattr(fn, "__qualname__", "callback")
    debug_callback_p.bind(*leaves, callback=run, name=getattr(fn, "__name__", "callback"))


def print(fmt: str, *args, **kwargs) -> None:   # noqa: A001 (the name users expect)
    """Print ``fmt.format(*args, **kwargs)`` with the run-time values of the arguments
    (numpy arrays), when the program reaches this point."""
    if not isinstance(fmt, str):
        raise TypeError(f"debug.print: the format must be a str, got {type(fmt).__name__}")

    def show(*a, **kw):
        _builtin_print(fmt.format(*a, **kw))
    show.__name__ = "print"
    callback(show, *args, **kwargs)
