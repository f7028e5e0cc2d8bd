"""Autograph: Python ``if`` / ``for`` / ``while`` on traced values, by rewriting the source.

``qjit(autograph=True)`` (or ``convert(fn)`` directly) rewrites the function's ``ast`` so
that each control-flow statement calls a dispatcher deciding at trace time between plain
Python (static values: unrolled loops, ordinary ``if``) and the ``cond`` / ``for_loop`` /
``while_loop`` / ``scan`` primitives (traced values). See doc/control_flow.md#autograph.

``transformer`` does the rewriting, ``analysis`` the static facts it needs (assigned and
live variables), ``dispatch`` the run-time choice.
"""
from __future__ import annotations

import warnings
from typing import Callable

from ..core.errors import user_stacklevel
from . import dispatch
from .dispatch import UNDEFINED, Undefined  # noqa: F401
from .transformer import ConversionError, convert_function

__all__ = ["convert", "converted_source", "ConversionError"]


def convert(fn: Callable) -> Callable:
    """The autograph version of ``fn``: its ``if`` / ``for`` / ``while`` statements (and those of
    the functions defined inside it) work on traced values. Usable as a decorator.

    The result keeps ``fn``'s name, signature, defaults, globals and closure, and called
    eagerly on ordinary values it behaves like ``fn``. When the source cannot be converted
    (a lambda, a function typed at the interactive prompt, a generator, a callable object),
    this warns and returns ``fn`` unchanged."""
    if getattr(fn, "__dynjax_autograph_original__", None) is not None:
        return fn
    try:
        return convert_function(fn, dispatch)
    except ConversionError as e:
        name = getattr(fn, "__qualname__", None) or repr(fn)
        warnings.warn(f"autograph: {name} is not converted, its Python control flow runs as is: {e}",
                      stacklevel=user_stacklevel())
        return fn


def converted_source(fn: Callable) -> str:
    """The rewritten source of a function returned by ``convert`` (for debugging)."""
    src = getattr(fn, "__dynjax_autograph_source__", None)
    if src is None:
        fun = getattr(fn, "fun", None)   # a QJIT object
        src = getattr(fun, "__dynjax_autograph_source__", None)
    if src is None:
        raise ValueError(f"{fn!r} is not an autograph-converted function")
    return src
