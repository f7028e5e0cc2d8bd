"""Which tier serves a call: the exact-size executable, the padded one of a size bucket, or,
while that compiles, the numpy impls.

Tier 1 (``padded``): one executable per *bucket* of sizes (``padding.bucket``: powers of two
from 16 to 1024, then eight per doubling), built by ``padding.pad_jaxpr``. The first call at
a new size in a known bucket compiles nothing: the inputs are padded, the bucket's executable
runs, the results are cut.

Tier 2 (``exact``): the executable specialized to the exact sizes (the fastest at steady
state). The first size a program runs at compiles it directly (a program called at one size
never pads; its bucket compiles in the background). A later size runs padded; when it
*recurs* (its second call) its exact executable is compiled on a background thread and
serves every later call at that size once it is ready.

Tier 0 (``auto`` only): a new size whose bucket is still compiling, with no compiled bucket
that holds it, is evaluated by the numpy impls meanwhile, if the cost model puts it below
``EAGER_MAX_FLOPS``; the evaluation gives way to the bucket as soon as it is compiled
(``program.Segment._run_eagerly``).

``DYNJAX_TIERS`` chooses the policy: ``auto`` (the default, as above), ``exact`` (every
new size compiles its exact executable on the call path, no padding) or ``padded`` (always
tier 1 where the program allows it: for tests). ``DYNJAX_SYNC_COMPILE=1`` compiles tier 2 on
the call path instead of in the background (reproducible benchmarks).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

POLICIES = ("auto", "exact", "padded")

#: how many calls at one exact size before its exact executable is compiled
RECUR = 2

#: tier 0: a new size whose bucket is still compiling is evaluated by the numpy impls when the
#: cost model puts it below this many FLOPs (a few tens of milliseconds of numpy at most);
#: heavier programs wait for the compile rather than compete with it for the cores
EAGER_MAX_FLOPS = 3e7


_last = ("auto", "auto")   # the last $DYNJAX_TIERS read and its policy (one tuple: atomic)


def policy() -> str:
    """The tier policy from ``$DYNJAX_TIERS`` (read at every call that may pad, so tests can
    switch it)."""
    global _last
    raw = os.environ.get("DYNJAX_TIERS", "auto")
    last = _last
    if last[0] == raw:
        return last[1]
    p = raw.strip().lower() or "auto"
    if p not in POLICIES:
        raise ValueError(f"DYNJAX_TIERS must be one of {', '.join(POLICIES)}, got {p!r}")
    _last = (raw, p)
    return p


def synchronous() -> bool:
    """Whether tier 2 compiles on the call path (``$DYNJAX_SYNC_COMPILE``)."""
    return os.environ.get("DYNJAX_SYNC_COMPILE", "").strip().lower() in ("1", "true", "yes", "on")


_executor: Optional[ThreadPoolExecutor] = None
_executor_lock = threading.Lock()


def background(fn) -> None:
    """Run ``fn()`` on the one background compile thread (failures are dropped: the padded
    tier keeps serving, and a foreground compile would report the error)."""
    global _executor
    if _executor is None:
        with _executor_lock:
            if _executor is None:
                _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dynjax-compile",
                                               initializer=_lower_priority)
    _executor.submit(_quietly, fn)


def _lower_priority():
    """Background compiles yield the cores to the calls being served (Linux: a thread's nice
    value is its own, and the threads XLA starts from it inherit it)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    except (AttributeError, OSError):
        pass


def _quietly(fn):
    try:
        fn()
    except BaseException:
        pass


def wait_for_background() -> None:
    """Block until every background compile submitted so far has finished (tests, benchmarks)."""
    if _executor is None:
        return
    _executor.submit(lambda: None).result()
