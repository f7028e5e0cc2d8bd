"""User-facing error plumbing: tracebacks that end at the user's line.

Errors raised while tracing come from deep inside dynjax. ``api_boundary`` wraps the
public entry points; when an exception escapes, the dynjax-internal frames are removed
from its traceback so that the last frame shown is the user's own line. Set
``DYNJAX_TRACEBACK_FILTERING=off`` to see everything.
"""
from __future__ import annotations

import functools
import os
import types

# The package's own directory, with a trailing separator: a user's file in a sibling folder
# whose name merely starts with "dynjax" is not inside the package.
_PACKAGE_PREFIX = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def in_package(filename: str) -> bool:
    """Whether ``filename`` is one of dynjax's own source files."""
    return filename.startswith(_PACKAGE_PREFIX)


def _is_internal(tb) -> bool:
    return in_package(tb.tb_frame.f_code.co_filename)


def filter_traceback(tb):
    kept = []
    while tb is not None:
        if not _is_internal(tb):
            kept.append(tb)
        tb = tb.tb_next
    new = None
    for t in reversed(kept):
        new = types.TracebackType(new, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return new


def user_error(e: BaseException) -> BaseException:
    """``e`` with dynjax's own frames removed from its traceback (re-raise it at the entry
    point: the traceback then shows the user's call, that entry frame, and the user's frames
    inside it, e.g. the traced function's line)."""
    if os.environ.get("DYNJAX_TRACEBACK_FILTERING", "on") == "off":
        return e
    return e.with_traceback(filter_traceback(e.__traceback__))


def api_boundary(fun):
    """Decorate a public entry point so that errors show the user's frames only."""
    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        try:
            return fun(*args, **kwargs)
        except Exception as e:
            raise user_error(e)
    return wrapper


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` that points at the caller's own code."""
    import sys
    level, f = 1, sys._getframe(1)
    while f is not None and in_package(f.f_code.co_filename):
        level += 1
        f = f.f_back
    return level
