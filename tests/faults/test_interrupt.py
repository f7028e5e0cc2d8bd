"""Ctrl-C during a long call (issue 20, item 11).

XLA:CPU runs a program inside ``execute_sharded``, on the calling thread, and Python's signal
handlers only run when it returns: a KeyboardInterrupt used to arrive when the loop was done.
Executables whose runs may be long (the cost model cannot bound a while loop, or a trip count
passed at run time) are waited for on a helper thread instead (``runtime.xla.
_call_interruptibly``). Each test runs a program in a subprocess, which sends itself SIGINT
about a second into the call (as Ctrl-C does) and reports how late the KeyboardInterrupt came,
then checks that the process still works: the next call's value, the staging buffers of the
abandoned run returned once it finished.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dynjax.numpy as jnp
from dynjax import lax, qjit

# interrupts of a user's process: its defaults, compiles ahead included (the subprocesses inherit it)
pytestmark = pytest.mark.usefixtures("compile_ahead")

#: the bound on the latency; the issue asks for 0.5 s, and CI machines are busy
LATENCY_BOUND = 1.0

PRELUDE = textwrap.dedent("""
    import json, os, signal, sys, threading, time
    import numpy as np
    import dynjax.numpy as jnp
    from dynjax import for_loop, lax, qjit
    from dynjax.execution import tiers

    # Ctrl-C as a terminal delivers it: the signal unblocked and Python's handler installed.
    # A child inherits its parent's blocked and ignored signals, and the test worker that
    # starts this script may have SIGINT blocked or ignored by something it ran before.
    inherited = {"blocked": signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []),
                 "ignored": signal.getsignal(signal.SIGINT) == signal.SIG_IGN}
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def interrupt_after(seconds):
        sent = []
        def fire():
            time.sleep(seconds)
            sent.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)
        threading.Thread(target=fire, daemon=True).start()
        return sent

    def timed_interrupt(call):
        sent = interrupt_after(1.0)
        start = time.monotonic()
        try:
            call()
        except KeyboardInterrupt:
            caught = time.monotonic()
            return {"latency": caught - sent[0], "ran": caught - start}
        return {"latency": None, "ran": time.monotonic() - start}

    def finish(report):
        report["inherited"] = inherited
        print("REPORT " + json.dumps(report), flush=True)
        os._exit(0)   # the abandoned computation may still be running: do not wait for it
""")

COMPILED = PRELUDE + textwrap.dedent("""
    @qjit
    def count(k):
        return lax.while_loop(lambda c: c[0] < k, lambda c: (c[0] + 1, c[1] * 0.999999 + 1.0),
                              (0, 0.0))[1]

    small = float(count(10))                     # compiled now: the long call only runs
    report = timed_interrupt(lambda: count(10**12))
    report["after"] = float(count(1000))         # the next call works
    report["small"] = small
    exe = count._entry().program.single.last_executable
    report["waits_interruptibly"] = bool(exe.wait_interruptibly)
    from dynjax.runtime import runners
    report["abandoned_runs"] = runners.runs_in_flight()
    finish(report)
""")

EAGER = PRELUDE + textwrap.dedent("""
    f = qjit(lambda x, k: for_loop(0, k, 1)(lambda i, a: a * 0.5 + 1.0)(x), abstracted_axes=({0: "n"}, None))
    f(np.ones(3), 4)                             # the first size: exact
    tiers.wait_for_background()
    release = threading.Event()
    tiers.background(release.wait)               # no bucket arrives: new sizes run eagerly
    report = timed_interrupt(lambda: f(np.ones(40), 3 * 10**5))   # 2.4e7 FLOPs: run eagerly
    report["eager_runs"] = f.cache_info()["eager_runs"]
    release.set()
    report["after"] = f(np.ones(3), 4).tolist()
    finish(report)
""")

HOST = PRELUDE + textwrap.dedent("""
    # the loop index is a size: the host drives the loop, one short executable per iteration
    f = qjit(lambda k: for_loop(0, k, 1)(lambda i, acc: acc + jnp.sum(jnp.ones(i % 3 + 1)))(0.0))
    small = float(f(6))
    report = timed_interrupt(lambda: f(10**8))
    report["host_steps"] = f.cache_info()["host_steps"]
    report["after"] = float(f(7))
    report["small"] = small
    finish(report)
""")


def run_script(script: str, timeout: float = 120) -> dict:
    env = dict(os.environ)
    env.pop("DYNJAX_TIERS", None)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=timeout, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("REPORT ")]
    assert proc.returncode == 0 and lines, proc.stdout + proc.stderr
    return json.loads(lines[-1][len("REPORT "):])


def test_ctrl_c_interrupts_a_long_compiled_loop_and_the_next_call_works():
    report = run_script(COMPILED)
    print("interrupt latency of a compiled loop:", report)
    assert report["waits_interruptibly"] is True
    assert report["latency"] is not None and report["latency"] < LATENCY_BOUND, report
    assert report["small"] == pytest.approx(sum(0.999999 ** j for j in range(10)))
    assert report["after"] == pytest.approx(sum(0.999999 ** j for j in range(1000)))
    # the abandoned run goes on in its helper thread until XLA finishes (it cannot be stopped)
    assert report["abandoned_runs"] == 1


def test_ctrl_c_interrupts_the_eager_tier():
    report = run_script(EAGER)
    print("interrupt latency of an eager run:", report)
    assert report["latency"] is not None and report["latency"] < LATENCY_BOUND, report
    assert report["eager_runs"] == 0   # interrupted, not finished
    assert report["after"] == pytest.approx([1.9375] * 3)


def test_ctrl_c_interrupts_a_host_driven_loop():
    report = run_script(HOST)
    print("interrupt latency of a host-driven loop:", report)
    assert report["latency"] is not None and report["latency"] < LATENCY_BOUND, report
    assert report["host_steps"] >= 2
    assert report["small"] == 1 + 2 + 3 + 1 + 2 + 3
    assert report["after"] == 1 + 2 + 3 + 1 + 2 + 3 + 1


def test_an_abandoned_run_returns_its_stage_and_results_are_discarded():
    """In process: the wait is interrupted (a KeyboardInterrupt raised from a signal handler
    stands in for Ctrl-C), the run finishes on its helper thread and puts its staging buffers
    back; the next calls get their own results."""
    @qjit
    def count(k):
        return lax.while_loop(lambda c: c[0] < k, lambda c: (c[0] + 1, c[1] + 1.0), (0, 0.0))[1]

    assert float(count(5)) == 5.0
    exe = count._entry().program.single.last_executable
    assert exe.wait_interruptibly
    free = len(exe._stages)
    previous = signal.signal(signal.SIGALRM, _raise_interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(KeyboardInterrupt):
            count(3 * 10**8)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert float(count(7)) == 7.0   # while the abandoned run goes on
    from dynjax.runtime import runners
    assert runners.wait_for_runs(120)
    assert len(exe._stages) >= free + 1   # the abandoned run's stage is back in the pool
    assert float(count(9)) == 9.0


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def test_short_programs_keep_the_direct_call_path():
    """A program the cost model bounds below tiers.LONG_FLOPS is called directly: no helper
    thread, so its dispatch cost is unchanged."""
    f = qjit(lambda x: jnp.sum(jnp.tanh(x) * 2), abstracted_axes={0: "n"})
    x = np.linspace(0, 1, 50)
    np.testing.assert_allclose(f(x), np.sum(np.tanh(x) * 2), rtol=1e-12)
    assert not f._entry().program.single.last_executable.wait_interruptibly
