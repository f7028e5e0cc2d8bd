"""Compiles you can watch: each trace, lowering and XLA compile timed, logged and reported.

Every place that traces a function, lowers a jaxpr to StableHLO or compiles a module with
XLA runs inside ``with compile_log.step(kind, stats, ...)``. A step

* adds its duration to the function's ``Stats`` (``trace_seconds``, ``lowering_seconds``,
  ``compile_seconds``; ``explain(f)`` reports them);
* logs one line to the ``dynjax.compile`` logger when it ends (``DYNJAX_LOG=compile``):
  which function, what was done (and for which signature or size bucket, on which thread),
  how long it took, the program's size (equations, StableHLO ops) and why it happened;
* arms the *progress line*: a step still running after ``DYNJAX_SLOW_COMPILE_SECONDS``
  (default 5) prints, once, to stderr what it is waiting for, and when it ends how long it
  took. Fast steps print nothing. ``DYNJAX_LOG=none`` silences it.

The progress line is printed by one daemon thread (``_Watcher``) that sleeps until the
earliest deadline of the steps running; a step that ends first only removes itself, so
fast compiles cost a lock and a list operation, and no thread is started until a step runs.
After ``fork()`` the child gets a fresh watcher (the parent's thread is not in the child).
Nothing here is on the path of a call that hits a cache.
"""
from __future__ import annotations

import os
import re
import sys
import threading
import time
from typing import Callable, List, Optional

from . import explain

log = explain.compile_log

#: a step running longer than this prints the progress line (``$DYNJAX_SLOW_COMPILE_SECONDS``)
DEFAULT_SLOW_SECONDS = 5.0

_KINDS = {"trace": "trace_seconds", "lower": "lowering_seconds", "compile": "compile_seconds"}
_stats_lock = threading.Lock()


def slow_seconds() -> Optional[float]:
    """The progress-line threshold in seconds, or None when the line is off (``DYNJAX_LOG``
    holds ``none``, or the threshold is negative)."""
    if explain.silenced():
        return None
    raw = os.environ.get("DYNJAX_SLOW_COMPILE_SECONDS", "").strip()
    if not raw:
        return DEFAULT_SLOW_SECONDS
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"DYNJAX_SLOW_COMPILE_SECONDS must be a number of seconds, got {raw!r}") from None
    return None if value < 0 else value


# --- program sizes --------------------------------------------------------------------------
def count_equations(jaxpr) -> int:
    """The equations of ``jaxpr`` and, recursively, of the jaxprs nested in them (loop
    bodies, branches, called programs)."""
    from .analysis import nested_jaxprs
    total, todo = 0, [jaxpr]
    while todo:
        j = todo.pop()
        total += len(j.eqns)
        for eqn in j.eqns:
            todo.extend(nested_jaxprs(eqn))
    return total


# one operation per line in printed MLIR: an optional ``%results =`` then ``dialect.op``
_OP = re.compile(r'^[ \t]*(?:%[^=\n]*=[ \t]*)?"?(?:stablehlo|chlo|mhlo)\.', re.M)


def count_ops(module_text: str) -> int:
    """The StableHLO (and CHLO) operations in a printed module: one regular-expression pass
    over the text (about 2 ms per MB, far below the compile it describes)."""
    return len(_OP.findall(module_text))


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def equations_text(n: int) -> str:
    return _plural(n, "equation")


def ops_text(n: int) -> str:
    return f"{n:,} StableHLO ops"


def sizes_with_ops(sizes: Optional[Callable[[], str]], text: str) -> Callable[[], str]:
    """A step's ``sizes`` followed by the StableHLO ops of ``text`` (counted when asked)."""
    return lambda: ", ".join(p for p in ((sizes() if sizes else ""), ops_text(count_ops(text))) if p)


def seconds_text(s: float) -> str:
    return f"{s:.3f} s" if s < 10 else f"{s:.1f} s"


# --- steps -------------------------------------------------------------------------------------
_VERBS = {"trace": ("tracing", "traced", "tracing the Python function"),
          "lower": ("lowering", "lowered", "lowering to StableHLO"),
          "compile": ("compiling", "compiled", "waiting for XLA")}


class Step:
    """One trace, lowering or compile in progress (see the module docstring). ``what`` says
    for which signature or sizes; ``sizes`` and ``reason`` are called only when a line is
    printed or logged. Set ``sizes`` again when more is known during the step (the module's
    ops once lowered), ``waiting`` to what the step waits for now (the progress line says
    it), and ``disk_hit = True`` when the compile was served by the disk cache."""
    __slots__ = ("kind", "stats", "what", "reason", "sizes", "start", "deadline", "announced",
                 "background", "disk_hit", "waiting", "finished", "_lock")

    def __init__(self, kind: str, stats, what: str, reason: Optional[Callable[[], Optional[str]]],
                 sizes: Optional[Callable[[], str]]):
        self.kind, self.stats, self.what = kind, stats, what
        self.reason, self.sizes = reason, sizes
        self.disk_hit = False
        self.waiting = _VERBS[kind][2]
        self.announced = self.finished = False
        self.deadline = 0.0
        self.start = 0.0
        self._lock = threading.Lock()   # the progress line and the end line never interleave
        from .tiers import on_worker
        self.background = on_worker()

    def function(self) -> str:
        return getattr(self.stats, "function", None) or "a program"

    def size_text(self) -> str:
        if self.sizes is None:
            return ""
        try:
            return self.sizes()
        except Exception:   # a size is a courtesy: never fail the compile for it
            return ""

    def __enter__(self) -> "Step":
        self.start = time.perf_counter()
        limit = slow_seconds()
        if limit is not None:
            self.deadline = self.start + limit
            _watcher().add(self)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        seconds = time.perf_counter() - self.start
        if self.deadline:
            _watcher().remove(self)
        if self.stats is not None and exc_type is None:
            attr = "disk_load_seconds" if self.disk_hit else _KINDS[self.kind]
            with _stats_lock:
                setattr(self.stats, attr, getattr(self.stats, attr) + seconds)
        with self._lock:
            self.finished = True   # a progress line the watcher was about to print is not printed
            if self.announced:
                verb, verb_done, _ = _VERBS[self.kind]
                _print(f"dynjax: {verb_done} {self.function()} in {seconds_text(seconds)}" if exc_type is None
                       else f"dynjax: {verb} {self.function()} failed after {seconds_text(seconds)}")
        if exc_type is None and explain.on(log):
            log.info(self._log_line(seconds))

    def _log_line(self, seconds: float) -> str:
        verb = "load from disk cache" if self.disk_hit else self.kind
        where = self.what + (", in the background" if self.background else "")
        line = f"{verb} {self.function()}" + (f" [{where}]" if where else "") + f": {seconds_text(seconds)}"
        size = self.size_text()
        if size:
            line += f", {size}"
        reason = None
        if self.reason is not None:
            try:
                reason = self.reason()
            except Exception:
                reason = None
        return line + (f"; reason: {reason}" if reason else "")

    def announce(self, now: float) -> None:
        """The progress line (on the watcher thread), once."""
        with self._lock:
            if self.announced or self.finished:
                return
            self.announced = True
            where = "in the background" if self.background else ""
            detail = ", ".join(p for p in (self.what, where, self.size_text()) if p)
            _print(f"dynjax: {_VERBS[self.kind][0]} {self.function()}" + (f" ({detail})" if detail else "")
                   + f" for {now - self.start:.1f} s; {self.waiting} ...")


def step(kind: str, stats, what: str = "", reason: Optional[Callable[[], Optional[str]]] = None,
         sizes: Optional[Callable[[], str]] = None) -> Step:
    """A context manager timing one ``kind`` step (``trace``, ``lower`` or ``compile``) of the
    function whose ``Stats`` is ``stats`` (see the module docstring)."""
    if kind not in _KINDS:
        raise ValueError(f"unknown step kind {kind!r}")
    return Step(kind, stats, what, reason, sizes)


def _print(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except Exception:   # a closed stderr at exit
        pass


# --- the watcher thread ------------------------------------------------------------------------
class _Watcher:
    """One daemon thread printing the progress line of steps past their deadline."""

    def __init__(self):
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)
        self.steps: List[Step] = []
        self.thread: Optional[threading.Thread] = None

    def add(self, s: Step) -> None:
        with self.lock:
            self.steps.append(s)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="dynjax-compile-watch", daemon=True)
                self.thread.start()
            self.wake.notify()

    def remove(self, s: Step) -> None:
        with self.lock:
            try:
                self.steps.remove(s)
            except ValueError:
                pass

    def _run(self) -> None:
        while True:
            _announce(self._due())

    def _due(self) -> List[Step]:
        """Wait until some steps are past their deadline; return them. While it waits, it
        holds no step: a step keeps what its program's compile closed over."""
        with self.lock:
            while True:
                now = time.perf_counter()
                due = [s for s in self.steps if not s.announced and s.deadline <= now]
                if due:
                    return due
                timeout = min((s.deadline for s in self.steps if not s.announced),
                              default=now + 3600.0) - now
                self.wake.wait(timeout)


def _announce(steps: List[Step]) -> None:
    for s in steps:
        s.announce(time.perf_counter())


_current: Optional[_Watcher] = None
_current_lock = threading.Lock()


def _watcher() -> _Watcher:
    global _current
    w = _current
    if w is None:
        with _current_lock:
            if _current is None:
                _current = _Watcher()
            w = _current
    return w


def _after_fork_in_child() -> None:
    """The parent's watcher thread does not exist in the child, and its lock may be held."""
    global _current, _current_lock
    _current = None
    _current_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)
