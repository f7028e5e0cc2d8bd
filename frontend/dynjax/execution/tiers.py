"""Which tier serves a call: the exact-size executable, the padded one of a size bucket, or,
while that compiles, the numpy impls.

Tier 1 (``padded``): one executable per *bucket* of sizes (``padding.bucket``: powers of two
from 16 to 1024, then eight per doubling), built by ``padding.pad_jaxpr``. The first call at
a new size in a known bucket compiles nothing: the inputs are padded, the bucket's executable
runs, the results are cut.

Tier 2 (``exact``): the executable specialized to the exact sizes (the fastest at steady
state). The first size a program runs at compiles it directly (a program called at one size
never pads; its bucket compiles in the background); a size after sizes the host tier served
is a later size. A later size runs padded; when it
recurs often enough to pay for its compile (``worth_exact``) its exact executable is
compiled on the background thread and serves every later call at that size once it is ready.

Background work (``submit``) is one queue served by one thread, bounded by ``MAX_QUEUED``
jobs: one job per key (a second request for the same bucket or size is coalesced), the most
useful first (a bucket a call is waiting for, then buckets compiled ahead, then exact
executables, by how often their size was called); when the queue is full the least useful
job is dropped (never a bucket a call needs for a job that is less useful). Jobs hold sizes
and shapes, never the caller's arrays.

Tier 0 (``auto`` only): a new size that no compiled bucket holds is evaluated by the numpy
impls if the cost model puts it below ``EAGER_MAX_FLOPS`` (a *cheap* size). Its bucket is
not compiled at once: a compile costs tens of milliseconds of both cores, more than many
eager runs of a cheap program (a 2-layer MLP of 2000 rows: 1 ms in numpy, 0.6-1.2 ms in
XLA), so the segment keeps the time its eager runs have taken, and queues the bucket of the
size being served (and the next one up) once that time reaches the cost of a compile (its
measured exact compiles, ``DEFAULT_COMPILE_SECONDS`` before one): rent until renting has
cost the price of buying. A stream that eager runs serve as fast as XLA would compiles
nothing more; a size that recurs gets its bucket after a compile's time of eager runs. The check runs
before each equation of an eager run (``segment._EagerStop``), so one long run (a loop of
many steps) queues its bucket once it has run for a compile's time. An eager run gives way
to its bucket as soon as that is compiled (``segment.Segment._run_eagerly``). A compiled
bucket whose program costs more than twice the size's own bucket's (the cost model's FLOPs at
both: a program quadratic in its size pays four times as much in a bucket twice as large)
serves it padded only if the size is not cheap; nothing is compiled ahead for cheap sizes. ``DYNJAX_EAGER_UNTIL_PAID=0`` queues a
cheap size's bucket at its first call instead (and runs eagerly while it compiles), as a
heavier size's always is.

A heavier size waits for its bucket, unless the bucket was never queued and compiles ahead
are on: then it compiles its exact executable on the call path (faster to compile than the
padded program) and queues the bucket after it (one compile more than waiting for the
bucket).

Compiles ahead (``AHEAD``: the first size's own bucket and the next one up, queued after the
first call; a new size's bucket when a larger compiled one already serves it) are speculative:
they pay off when the program meets more sizes. ``DYNJAX_COMPILE_AHEAD=0`` turns them off (a
program run at one size compiles once; a new size's bucket then compiles when a call needs
it), for batch jobs and machines where no core is idle, and for the test suite.

``DYNJAX_TIERS`` chooses the policy: ``auto`` (the default, as above), ``exact`` (every
new size compiles its exact executable on the call path, no padding) or ``padded`` (always
tier 1 where the program allows it: for tests). ``DYNJAX_SYNC_COMPILE=1`` compiles tier 2 on
the call path instead of in the background (reproducible benchmarks).
"""
from __future__ import annotations

import os
import threading
import time
import weakref
from typing import Callable, Dict, Hashable, Optional

from ..core import cooperative

POLICIES = ("auto", "exact", "padded")

#: at most this many background jobs wait in the queue (the one running not counted)
MAX_QUEUED = 32

#: job priorities, most useful first: a bucket that a call at a new size needs, a bucket
#: compiled ahead (the next one up, the first size's own), the exact executable of a size
NEEDED, AHEAD, EXACT = 0, 1, 2

#: a size gets its exact executable only after this many calls served padded ...
EXACT_MIN_CALLS = 4
#: ... and once those calls, at what the exact executable would save on each, would have paid
#: for its compile (``worth_exact``). A padded run costs more than the exact one by its padding
#: (the fraction of padded elements, of the measured run time) plus this fixed host cost (the
#: inputs padded and the results cut, and the general call path where the exact executable
#: takes the dispatch table's fast one: ~10 us measured on small programs).
PADDED_OVERHEAD_SECONDS = 10e-6
#: what an exact compile is assumed to cost before this segment has timed one
DEFAULT_COMPILE_SECONDS = 0.05

#: tier 0: a new size that no compiled bucket holds is evaluated by the numpy impls when the
#: cost model puts it below this many FLOPs (a few tens of milliseconds of numpy at most; a
#: 2-layer MLP of 2000 rows, 38 MFLOPs, in 1 ms); heavier programs wait for a compile rather
#: than compete with it for the cores
EAGER_MAX_FLOPS = 5e7

#: an executable whose run the cost model puts above this many FLOPs, or cannot bound (a
#: while loop, a trip count passed at run time), is waited for on a helper thread so that
#: Ctrl-C interrupts it (``runtime.xla._call_interruptibly``: a reused runner thread, a few
#: microseconds per call)
LONG_FLOPS = 1e8


class EnvChoice:
    """A setting read from an environment variable at every call that needs it (so tests can
    switch it), remembering the last text read and its meaning (one tuple: atomic): one of
    ``choices``, after ``aliases``; anything else is a ValueError naming the variable."""

    def __init__(self, name: str, choices, default: str, aliases=None):
        self.name, self.choices, self.default = name, tuple(choices), default
        self.aliases = dict(aliases or {})
        self._last = (default, default)

    def __call__(self) -> str:
        raw = os.environ.get(self.name, self.default)
        last = self._last
        if last[0] == raw:
            return last[1]
        p = raw.strip().lower() or self.default
        p = self.aliases.get(p, p)
        if p not in self.choices:
            raise ValueError(f"{self.name} must be one of {', '.join(self.choices)}, got {p!r}")
        self._last = (raw, p)
        return p


#: the tier policy from ``$DYNJAX_TIERS``
policy = EnvChoice("DYNJAX_TIERS", POLICIES, "auto")


def _switched_on(name: str) -> bool:
    """A setting that is on unless ``$name`` is ``0``/``false``/``no``/``off``."""
    return os.environ.get(name, "").strip().lower() not in ("0", "false", "no", "off")


def compile_ahead() -> bool:
    """Whether speculative bucket compiles are queued (``$DYNJAX_COMPILE_AHEAD``, on unless
    ``0``/``false``/``no``/``off``)."""
    return _switched_on("DYNJAX_COMPILE_AHEAD")


def eager_until_paid() -> bool:
    """Whether a cheap program's new sizes run eagerly until that has cost a compile before
    their bucket is queued (``$DYNJAX_EAGER_UNTIL_PAID``, on unless ``0``/``false``/``no``/``off``;
    see the module)."""
    return _switched_on("DYNJAX_EAGER_UNTIL_PAID")


def synchronous() -> bool:
    """Whether tier 2 compiles on the call path (``$DYNJAX_SYNC_COMPILE``)."""
    return os.environ.get("DYNJAX_SYNC_COMPILE", "").strip().lower() in ("1", "true", "yes", "on")


def worth_exact(calls: int, padded_seconds: float, timed: int, waste: float,
                compile_seconds: float) -> bool:
    """Whether a size served padded ``calls`` times gets its exact executable now.

    The rule: at least ``EXACT_MIN_CALLS`` calls, and ``calls * saving >= compile_seconds``,
    where ``saving`` is what one call would save on the exact executable: the measured mean
    padded run time (``padded_seconds`` over ``timed`` runs) times ``waste`` (the fraction of
    the bucket's elements that are padding) plus ``PADDED_OVERHEAD_SECONDS``. A size that
    has come ``calls`` times is taken to come about as often again, so its compile is paid
    for. A small program (a run of tens of microseconds) thus needs thousands of calls at one
    size; a run of 10 ms with 20% padding about 25. ``$DYNJAX_EXACT_AFTER=n`` replaces the
    rule by "after ``n`` calls" (tests, benchmarks)."""
    fixed = os.environ.get("DYNJAX_EXACT_AFTER", "").strip()
    if fixed:
        return calls >= int(fixed)
    if calls < EXACT_MIN_CALLS:
        return False
    saving = (padded_seconds / max(timed, 1)) * waste + PADDED_OVERHEAD_SECONDS
    return calls * saving >= compile_seconds


def may_run_long(estimate, values: Dict[str, int]) -> bool:
    """Whether a run may take long enough to need Ctrl-C (see ``LONG_FLOPS``): ``estimate``
    is ``cost_model.cost_in_inputs``'s ``(cost, names)`` (False: no estimate, no cost rule),
    ``values`` the sizes known when compiling, by name. A cost that needs more (a while loop's
    trip count, an integer passed at run time) may be long."""
    if estimate is False:
        return False
    try:
        c = estimate[0].at(**values)
    except Exception:
        return True
    return c["flops"] + c["transcendentals"] > LONG_FLOPS


def mark_long(exe, estimate, values: Dict[str, int]) -> None:
    """Make ``exe`` wait for its results interruptibly when its runs may be long."""
    if may_run_long(estimate, values):
        exe.wait_interruptibly = True


# --------------------------------------------------------------------------------------------
# the background queue

class _Job:
    __slots__ = ("key", "fn", "priority", "useful", "seq", "owner", "on_drop", "subject")

    def __init__(self, key, fn, priority, useful, seq, owner, on_drop, subject):
        self.key, self.fn, self.priority, self.useful = key, fn, priority, useful
        self.seq, self.owner, self.on_drop, self.subject = seq, owner, on_drop, subject

    def order(self):
        """Most useful first: priority, then how often its size was called, then age."""
        return (self.priority, -self.useful, self.seq)


class _Queue:
    """Pending jobs by key, one worker thread (started on the first job)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.jobs: Dict[Hashable, _Job] = {}
        self.running: Optional[_Job] = None
        self.thread: Optional[threading.Thread] = None
        self.seq = 0
        self.dropped = 0
        self.closed = False

    def submit(self, key, fn, priority, useful, owner, on_drop, subject) -> bool:
        drop = None
        with self.lock:
            job = self.jobs.get(key)
            if job is not None or (self.running is not None and self.running.key == key):
                if job is not None and (priority, -useful) < (job.priority, -job.useful):
                    job.priority, job.useful = priority, useful
                return False
            self.seq += 1
            job = _Job(key, fn, priority, useful, self.seq, owner, on_drop, subject)
            if len(self.jobs) >= MAX_QUEUED:
                # the least useful job goes (the oldest among equals); a new job that is not
                # a needed bucket and is no more useful than it is dropped itself
                worst = max(self.jobs.values(), key=lambda j: (j.priority, -j.useful, -j.seq))
                if priority != NEEDED and (priority, -useful) >= (worst.priority, -worst.useful):
                    drop = job
                else:
                    drop = self.jobs.pop(worst.key)
                self.dropped += 1
            if drop is not job and not self.closed:
                self.jobs[key] = job
                self.changed.notify_all()
                if self.thread is None:
                    # not a daemon: at exit, a compile in progress finishes (a daemon thread
                    # returning from XLA during finalization would abort the process)
                    self.thread = threading.Thread(target=self._work, name="dynjax-compile")
                    self.thread.start()
                    threading._register_atexit(self.close)
        if drop is not None:
            _dropped(drop)
        return drop is not job

    def _work(self):
        _lower_priority()
        _worker.active = True
        pause = StepAside()
        cooperative.step_aside(pause)
        while True:
            with self.lock:
                while not self.jobs and not self.closed:
                    self.changed.wait()
                if self.closed:
                    return
                job = min(self.jobs.values(), key=_Job.order)
                del self.jobs[job.key]
                self.running = job
            pause.start_job()
            try:
                if job.subject is None:
                    job.fn()
                else:
                    subject = job.subject()
                    if subject is not None:     # else its function is gone: nobody could use it
                        job.fn(subject)
                    subject = None
            except BaseException:   # the padded tier keeps serving; a foreground compile reports
                pass
            finally:
                job.fn = job.subject = None   # what the job holds goes now, not when the next one comes
                with self.lock:
                    self.running = None
                    self.changed.notify_all()

    def close(self):
        """At exit: the jobs not started are dropped, the worker ends after the running one."""
        with self.lock:
            self.closed = True
            self.jobs.clear()
            self.changed.notify_all()

    def wait_idle(self):
        with self.lock:
            while self.jobs or self.running is not None:
                self.changed.wait()

    def queued(self, owner=None) -> int:
        jobs = list(self.jobs.values())
        return len(jobs) if owner is None else sum(1 for j in jobs if j.owner is owner)


def _dropped(job: _Job) -> None:
    if job.on_drop is not None:
        try:
            job.on_drop()
        except Exception:
            pass


_queue = _Queue()
_worker = threading.local()   # ``active`` on the compile thread


def on_worker() -> bool:
    """Whether the calling thread is the background compile thread."""
    return getattr(_worker, "active", False)


def submit(key: Hashable, fn: Callable[..., None], priority: int = NEEDED, useful: int = 0,
           owner=None, on_drop: Optional[Callable[[], None]] = None, subject=None) -> bool:
    """Queue ``fn()`` on the background compile thread under ``key``. With a ``subject`` (the
    segment a compile is for) the queue holds it weakly and runs ``fn(subject)``: a job whose
    subject was collected before its turn (its function is gone) is skipped, so neither the
    queue nor ``fn`` may keep the subject alive; ``key`` then only needs to be unique for the
    subject. False when a job of that
    key is already queued or running (coalesced), or when the queue is full and this job is
    the least useful (dropped: ``on_drop()`` is called, as it is for a queued job that a more
    useful one displaces). ``owner`` (a ``Stats``) counts its jobs in ``queued``. Failures of
    ``fn`` are dropped: the padded tier keeps serving, and a foreground compile would report
    the error."""
    ref = None
    if subject is not None:
        ref = weakref.ref(subject)
        key = (ref, key)     # a weakref compares by its referent while both live, else by itself
    return _queue.submit(key, fn, priority, useful, owner, on_drop, ref)


def background(fn: Callable[[], None]) -> None:
    """Run ``fn()`` on the background compile thread, as a job of its own (tests hold the
    thread up with it)."""
    submit(("job", id(fn), object()), fn)


def background_busy() -> bool:
    """Whether a background job (a compile) is running now."""
    return _queue.running is not None


def queued(owner=None) -> int:
    """How many background jobs are waiting (of ``owner``, when given)."""
    return _queue.queued(owner)


def dropped() -> int:
    """How many background jobs the full queue has dropped in this process."""
    return _queue.dropped


#: how long background work waits at a ``core.cooperative.checkpoint`` for the runs in flight
#: (a run longer than this shares the GIL with it)
MAX_PAUSE = 0.05


class StepAside:
    """The compile thread's pause at a checkpoint (``core.cooperative``): while runs of compiled
    programs are in flight, wait for them (they need the GIL back at each of their steps), at
    most ``MAX_PAUSE`` at a time, and only while the job has waited less than it has worked:
    under runs that never stop (threads serving calls back to back), background work still
    goes at half its speed."""

    def __init__(self):
        from .. import runtime   # (once: the pause runs at every equation the thread handles)
        self._active, self._wait = runtime.active_runs, runtime.wait_until_no_active_run
        self.start_job()

    def start_job(self) -> None:
        self.started = time.perf_counter()
        self.paused = 0.0

    def __call__(self) -> None:
        if not self._active():
            return
        now = time.perf_counter()
        if self.paused > now - self.started - self.paused:
            return
        self._wait(MAX_PAUSE)
        self.paused += time.perf_counter() - now


def _lower_priority():
    """The compile thread's Python work (padding, lowering) yields the cores to the calls
    being served (Linux: a thread's nice value is its own). XLA compiles on a pool of threads
    it starts at the process's first compile, usually from the calling thread, which keep that
    thread's priority: reniced by hand to 19, they let an attention run beside compiles take
    5-7 ms instead of 8-10 ms, but the streams of ``bench/streams.py`` did not get faster (the
    compiles then finished later, and the calls waited for their buckets longer)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    except (AttributeError, OSError):
        pass


def wait_for_background() -> None:
    """Block until every background job submitted so far has finished (tests, benchmarks)."""
    _queue.wait_idle()


def _after_fork_in_child() -> None:
    """fork() keeps only the calling thread: the compile thread and the jobs it had not run are
    gone from the child (their owners hear of them as dropped), and its lock may be held. The
    child starts a new queue, whose thread starts with its first job; the caches drop the
    parent's executables (``lru.BoundedCache`` built with ``executables=True``)."""
    global _queue
    old = _queue
    _queue = _Queue()
    for job in list(old.jobs.values()) + ([old.running] if old.running is not None else []):
        _dropped(job)
    from .lru import _after_fork_in_child as caches_after_fork
    caches_after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)
