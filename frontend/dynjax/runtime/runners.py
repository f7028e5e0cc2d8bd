"""Runner threads: where executables whose runs may be long are run, so that the calling
thread can wait on an ``Event`` that Ctrl-C interrupts (``xla._call_interruptibly``).

Runners are reused across calls (starting a thread per call cost 35 us on a quiet machine and
milliseconds on a loaded one); a new one starts only when every runner is busy (long calls
from several threads at once), and at most ``_RunnerPool.MAX_IDLE`` stay idle. At exit the
runs still in flight are waited for (a thread returning from XLA while the interpreter
finalizes would abort the process); after ``fork`` the child starts with no runners.
"""
from __future__ import annotations

import atexit
import os
import queue
import threading
import time


class _Runner:
    """A long-lived helper thread that runs executables for ``_call_interruptibly``: one run
    at a time, handed over through its own queue. Idle runners wait in ``_RUNNERS.idle``."""

    def __init__(self, pool: "_RunnerPool"):
        self.jobs: "queue.SimpleQueue" = queue.SimpleQueue()
        self.pool = pool
        # a daemon: an idle runner must not keep the process alive; at exit, ``_RunnerPool.close``
        # waits for the runs still in flight (a thread returning from XLA while the interpreter
        # finalizes would abort the process)
        self.thread = threading.Thread(target=self._loop, name="dynjax-run", daemon=True)

    def _loop(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            try:
                job()
            finally:
                if not self.pool.give_back(self):
                    return


class _RunnerPool:
    """The runners: reused across calls (starting a thread per call cost 35 us on a quiet
    machine and milliseconds on a loaded one), a new one started only when every runner is
    busy (concurrent long calls from several threads), at most ``MAX_IDLE`` kept idle."""
    MAX_IDLE = 4

    def __init__(self):
        self.lock = threading.Lock()
        self.idle: list = []
        self.all: list = []
        self.busy = 0
        self.closed = False

    def submit(self, job) -> None:
        with self.lock:
            runner = self.idle.pop() if self.idle else None
            self.busy += 1
            if runner is None:
                runner = _Runner(self)
                self.all.append(runner)
                runner.thread.start()
        runner.jobs.put(job)

    def give_back(self, runner: _Runner) -> bool:
        """After a run: keep ``runner`` for the next call (True) or let its thread end."""
        with self.lock:
            self.busy -= 1
            if self.closed or len(self.idle) >= self.MAX_IDLE:
                self.all.remove(runner)
                return False
            self.idle.append(runner)
            return True

    def in_flight(self) -> int:
        """How many runs are going on (abandoned ones included)."""
        return self.busy

    def close(self) -> None:
        """At exit: let every runner finish its run and end."""
        with self.lock:
            self.closed = True
            runners = list(self.all)
            self.idle.clear()
        for r in runners:
            r.jobs.put(None)
        for r in runners:
            r.thread.join()


_RUNNERS = _RunnerPool()
atexit.register(lambda: _RUNNERS.close())


def submit(job) -> None:
    """Run ``job`` (a callable) on an idle runner, or on a new one."""
    _RUNNERS.submit(job)


def runs_in_flight() -> int:
    """How many executable runs are in flight on helper threads (an interrupted call's run goes
    on until XLA finishes it)."""
    return _RUNNERS.in_flight()


def wait_for_runs(timeout: float = 60.0) -> bool:
    """Wait until no run is in flight on a helper thread; False if ``timeout`` passed first."""
    deadline = time.monotonic() + timeout
    while _RUNNERS.in_flight():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _after_fork_in_child() -> None:
    global _RUNNERS
    _RUNNERS = _RunnerPool()   # the parent's runner threads do not exist in the child


os.register_at_fork(after_in_child=_after_fork_in_child)
