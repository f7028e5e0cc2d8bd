"""User-facing error plumbing: tracebacks that end at the user's line.

Errors raised while tracing come from deep inside dynjax. ``api_boundary`` wraps the
public entry points; when an exception escapes, the dynjax-internal frames are removed
from its traceback so that the last frame shown is the user's own line: the line of the
traced function that failed, or, for an error about the call itself (a bad argument to
``grad(f, argnums=5)(x)``), the user's line that made the call. The frame re-raising the
error (the boundary itself) stays in the middle of the traceback: Python adds it. Set
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


def filter_traceback(tb, caller=None):
    """``tb`` without dynjax's frames. When none is left, ``caller`` (a frame: the user's
    frame that called into dynjax) is the traceback, so that it still ends at a user's line;
    the same frame at the same line twice in a row (a caller added by an inner boundary and
    found again by an outer one) is kept once."""
    kept = []
    while tb is not None:
        if not _is_internal(tb) and not (kept and kept[-1].tb_frame is tb.tb_frame
                                         and kept[-1].tb_lineno == tb.tb_lineno):
            kept.append(tb)
        tb = tb.tb_next
    if not kept and caller is not None:
        return types.TracebackType(None, caller, caller.f_lasti, caller.f_lineno)
    new = None
    for t in reversed(kept):
        new = types.TracebackType(new, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return new


def user_error(e: BaseException) -> BaseException:
    """``e`` with dynjax's own frames removed from its traceback (re-raise it at the entry
    point: the traceback then shows the user's call, that entry frame, and the user's frames
    inside it, e.g. the traced function's line)."""
    if not filtering():
        return e
    return e.with_traceback(filter_traceback(e.__traceback__, _user_caller()))


def filtering() -> bool:
    """Whether tracebacks are filtered (``$DYNJAX_TRACEBACK_FILTERING``, ``on`` by default)."""
    return os.environ.get("DYNJAX_TRACEBACK_FILTERING", "on").strip().lower() not in ("off", "0", "false", "no")


def _user_caller():
    """The innermost frame on the stack outside dynjax (None when there is none)."""
    import sys
    f = sys._getframe(1)
    while f is not None and in_package(f.f_code.co_filename):
        f = f.f_back
    return f


def user_line(tb):
    """``(filename, lineno, function)`` of the innermost frame of ``tb`` outside dynjax (the
    user's line that failed), or None."""
    found = None
    while tb is not None:
        if not _is_internal(tb):
            code = tb.tb_frame.f_code
            found = (code.co_filename, tb.tb_lineno, code.co_name)
        tb = tb.tb_next
    return found


def name_user_line(e: BaseException, context: str) -> None:
    """Start ``e``'s message with the user's line that failed and ``context``:
    ``model.py:12 (in step, <context>): ...`` (an error raised where the traceback does not
    start at the user's code, e.g. at a decoration)."""
    where = user_line(e.__traceback__)
    if where is not None:
        prefix_message(e, f"{where[0]}:{where[1]} (in {where[2]}, {context}): ")


def prefix_message(e: BaseException, prefix: str) -> bool:
    """Put ``prefix`` before ``e``'s message, when its message is its first argument (an
    exception that formats itself otherwise is left alone); whether it was done."""
    args = getattr(e, "args", ())
    if not args or not isinstance(args[0], str) or str(e) != args[0]:
        return False
    e.args = (prefix + args[0],) + tuple(args[1:])
    return True


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
