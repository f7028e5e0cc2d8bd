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
them. Elsewhere it is a thread-local read.

The other way round, numpy's matrix products in a call served on the host while a compile
runs in the background keep to one BLAS thread each (``matmul``, ``row_blocks``)."""
from __future__ import annotations

import threading
from typing import Callable, Optional

import numpy as np

_local = threading.local()


def step_aside(pause: Optional[Callable[[], None]]) -> None:
    """Make ``pause`` what ``checkpoint()`` calls on this thread (None: nothing)."""
    _local.pause = pause


def checkpoint() -> None:
    """A point where background work may wait for the runs being served (see the module)."""
    pause = getattr(_local, "pause", None)
    if pause is not None:
        pause()


# --- the other way round: numpy's matrix products beside background work ------------------

#: OpenBLAS (numpy's wheels) computes a product of at most this many multiply-adds (m·n·k) on
#: the calling thread, and a larger one on several threads that wait for each other at every
#: step: beside a compile on two cores those threads lose most of their time (an eager call
#: of 178-row attention took 9-39 ms instead of 1.0-1.6 ms, ``bench/streams.py``)
ONE_THREAD_WORK = 1 << 18


def row_blocks(on: bool):
    """Make ``matmul`` on this thread compute a product in row blocks of at most
    ``ONE_THREAD_WORK`` multiply-adds (``on``) or whole; returns the previous setting."""
    before = getattr(_local, "row_blocks", False)
    _local.row_blocks = on
    return before


def matmul(x, y):
    """``np.matmul``; a floating-point matrix product on a thread that ``row_blocks`` set, in
    row blocks that each run on one BLAS thread (the same products, summed in the same
    order within each block; the last bits may differ from the whole product's)."""
    if getattr(_local, "row_blocks", False) and x.ndim == 2 and y.ndim == 2 and \
            x.dtype == y.dtype and x.dtype.kind in "fc":
        (m, k), n = x.shape, y.shape[1]
        rows = (ONE_THREAD_WORK - 1) // (n * k) if n * k else 0
        if m * n * k >= ONE_THREAD_WORK and rows >= 1:
            out = np.empty((m, n), x.dtype)
            for start in range(0, m, rows):
                np.matmul(x[start:start + rows], y, out=out[start:start + rows])
            return out
    return np.matmul(x, y)
