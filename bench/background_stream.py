"""A stream of calls at random sizes: what the background compile queue does with it.

    python bench/background_stream.py [calls] [max size]

Calls ``sum(tanh(x) * 2)`` (x of abstracted size) at ``calls`` random sizes in 1..max size
(default 50 000 calls, sizes up to 5000), checks every value against numpy, and prints the
queue length at the end, the compile counts, the calls served by exact executables made
for recurring sizes, the total time and the growth of the resident set (issue 20, item 10).
"""
import resource
import sys
import time

import numpy as np

import dynjax.numpy as jnp
from dynjax import qjit
from dynjax.execution import tiers


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(calls: int = 50_000, top: int = 5000) -> dict:
    f = qjit(lambda x: jnp.sum(jnp.tanh(x) * 2), abstracted_axes={0: "n"})
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, top + 1, size=calls)
    base = rng.standard_normal(top)
    f(base[:1])
    rss0 = rss_mb()
    start = time.perf_counter()
    longest_queue = 0
    for k, n in enumerate(sizes):
        x = base[:n]
        got = f(x)
        want = np.sum(np.tanh(x) * 2)
        if not abs(got - want) <= 1e-9 * max(1.0, abs(want)):
            raise AssertionError(f"call {k}: n={n}: {got} != {want}")
        if k % 1000 == 0:
            longest_queue = max(longest_queue, tiers.queued())
    elapsed = time.perf_counter() - start
    info = f.cache_info()
    drain = time.perf_counter()
    tiers.wait_for_background()
    drain = time.perf_counter() - drain
    out = {"calls": calls, "seconds": round(elapsed, 2), "queue_at_end": info["queued_jobs"],
           "longest_queue_seen": longest_queue, "drain_seconds": round(drain, 3),
           "rss_growth_mb": round(rss_mb() - rss0, 1), **info}
    return out


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    for k, v in main(*args).items():
        print(f"{k}: {v}")
