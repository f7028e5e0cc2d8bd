"""Background work that steps aside for runs being served.

A run of a compiled program releases the GIL while XLA computes, several times per call
(each input's transfer, the execution, each output's), and needs it back the moment each
step is done. Python work on another thread (a background compile: interpreting the padding
rules, lowering) holds the GIL meanwhile, and the interpreter hands it back only after its
switch interval (5 ms): a 6 ms attention call took 60-70 ms while a bucket was being lowered
beside it (``bench/streams.py``).

So the long Python loops that background work runs (the padding interpreter and the
lowering, one equation at a time) call ``checkpoint()``; on a thread that ``step_aside``
marked, it waits there while runs are in flight (``runtime.xla``'s count), releasing the GIL to
them. Elsewhere it is a thread-local read."""
from __future__ import annotations

import threading
from typing import Callable, Optional

_local = threading.local()


def step_aside(pause: Optional[Callable[[], None]]) -> None:
    """Make ``pause`` what ``checkpoint()`` calls on this thread (None: nothing)."""
    _local.pause = pause


def checkpoint() -> None:
    """A point where background work may wait for the runs being served (see the module)."""
    pause = getattr(_local, "pause", None)
    if pause is not None:
        pause()
