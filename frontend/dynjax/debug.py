"""``dynjax.debug``: printing and inspecting run-time values inside compiled code.

``debug.print("x = {x}", x=x)`` (JAX's form), ``debug.print(x)`` (Catalyst's: the value
itself) and ``debug.callback(fn, *args)`` work eagerly and inside
``@qjit``, in loop bodies and branches, on arrays of any (dynamic) size. They stage one
``debug_callback`` equation (``lax/effects.py``), which the execution planner runs on the
host in program order: inside a ``for_loop`` once per iteration, inside a ``cond`` only in
the branch taken. A loop or branch containing one is driven from the host (one round trip
per iteration), so remove debug printing from hot loops when measuring speed.
"""
from __future__ import annotations

import threading
from typing import Callable

from .core.trace import is_array_value
from .core.pytree import tree_flatten, tree_unflatten
from .lax.effects import debug_callback_p

__all__ = ["print", "callback"]

_builtin_print = print
# One lock for every debug.print, so that lines printed from several threads (each running
# its own compiled function) never interleave: each line is written whole.
_print_lock = threading.Lock()


def callback(fn: Callable, *args, **kwargs) -> None:
    """Call ``fn(*args, **kwargs)`` with the run-time (numpy) values of the arguments, which
    may be pytrees of arrays. The result of ``fn`` is discarded."""
    if not callable(fn):
        raise TypeError(f"debug.callback: the first argument must be a function, got {type(fn).__name__}")
    leaves, tree = tree_flatten((args, kwargs))
    # Array values (tracers, numpy arrays and scalars of a supported dtype, Python numbers)
    # are operands; anything else (a str, a dtype, an object) is passed through unchanged,
    # so eager and compiled calls see the same arguments.
    dynamic = [is_array_value(x) for x in leaves]
    static = [None if d else x for x, d in zip(leaves, dynamic)]

    def run(*values):
        it = iter(values)
        a, kw = tree_unflatten(tree, [next(it) if d else x for x, d in zip(static, dynamic)])
        fn(*a, **kw)
    run.__qualname__ = getattr(fn, "__qualname__", "callback")
    debug_callback_p.bind(*[x for x, d in zip(leaves, dynamic) if d], callback=run, name=getattr(fn, "__name__", "callback"))


def print(fmt, *args, **kwargs) -> None:   # noqa: A001 (the name users expect)
    """Print run-time values when the program reaches this point.

    ``debug.print("x = {x}", x=x)`` (JAX's form): a format string, filled with
    ``str.format`` from the run-time (numpy) values of the arguments.

    ``debug.print(x)`` (Catalyst's form): a first argument that is not a string is the value
    to print, shown as Python prints it once its arrays are numpy arrays (a scalar as a 0-d
    array, so ``3.0`` and an ``f64[]`` value print alike). It takes no further arguments."""
    if not isinstance(fmt, str):
        if args or kwargs:
            raise TypeError("debug.print: with a value (not a format string) as the first argument, "
                            "no other arguments are accepted; use debug.print(\"{} {}\", x, y) to print "
                            f"several values (got {len(args)} more positional and {sorted(kwargs)} keyword)")
        leaves, tree = tree_flatten(fmt)
        for leaf in leaves:
            if not is_array_value(leaf):
                raise TypeError("debug.print: the first argument must be a format string or an array "
                                f"(or a pytree of arrays), got {type(leaf).__name__}")

        def show_value(*values):
            import numpy as np
            value = tree_unflatten(tree, [np.asarray(v) for v in values])
            text = str(value)
            with _print_lock:
                _builtin_print(text)
        show_value.__name__ = "print"
        callback(show_value, *leaves)
        return

    def show(*a, **kw):
        text = fmt.format(*a, **kw)   # formatted outside the lock (str of large arrays)
        with _print_lock:
            _builtin_print(text)
    show.__name__ = "print"
    callback(show, *args, **kwargs)
