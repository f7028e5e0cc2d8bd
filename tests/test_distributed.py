"""Two processes with two CPU devices each, as one computation (``dynjax.distributed`` on
XLA's distributed runtime, gloo collectives over TCP on 127.0.0.1): a program sharded over
all four devices gives both processes numpy's result, at batch sizes that do not divide 4, and
so does a shard_map whose psum crosses the processes;
and a process that dies makes the other fail within a bounded time instead of hanging."""
import json
import os
import socket
import subprocess
import sys
import time
import pytest

# two processes with their own runtimes: the slow set (pytest -m 'not slow' skips it)
pytestmark = pytest.mark.slow

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "distributed_worker.py")


def _free_address() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def _start(n, *extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(os.path.dirname(HERE), "frontend"),
                                          os.path.dirname(HERE), env.get("PYTHONPATH", "")])
    address = _free_address()
    return [subprocess.Popen([sys.executable, WORKER, address, str(n), str(k), *extra], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in range(n)]


def _finish(procs, timeout):
    """Each process's (return code, stdout, stderr); kills whatever is still running at the
    deadline (return code None then)."""
    deadline = time.monotonic() + timeout
    out = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            out.append((p.returncode, o, e))
        except subprocess.TimeoutExpired:
            p.kill()
            o, e = p.communicate()
            out.append((None, o, e))
    return out


def test_two_processes_share_a_sharded_program():
    procs = _start(2)
    try:
        results = _finish(procs, 240)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for k, (rc, o, e) in enumerate(results):
        assert rc == 0, f"process {k} ended with {rc}:\n{e[-4000:]}"
        line = [x for x in o.splitlines() if x.startswith("RESULT ")]
        assert line, o
        got = json.loads(line[-1][len("RESULT "):])
        assert got["process_index"] == k and got["process_count"] == 2
        assert len(got["devices"]) == 4 and len(got["local"]) == 2
        assert set(got["local"]) <= set(got["devices"])
        for n in (1, 8, 13):
            assert got[f"matmul_{n}"] and got[f"sum_{n}"], (k, n, got)
        assert got["shard_map_2"] and got["shard_map_10"] and got["psum_all"], (k, got)


def test_a_process_that_dies_makes_the_other_fail_not_hang():
    procs = _start(2, "die")
    start = time.monotonic()
    try:
        results = _finish(procs, 120)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    (rc0, _, err0), (rc1, _, _) = results
    assert rc1 == 3
    assert rc0 is not None and rc0 != 0, "process 0 hung after its peer died"
    assert time.monotonic() - start < 120
    assert "another task died" in err0 or "coordination service" in err0 or "heartbeat" in err0.lower(), err0[-3000:]
