"""Memory of a process that calls one qjit function at many distinct sizes.

    python bench/memory.py [--sizes 2000] [--cache-size 64]

Each new size compiles one executable (about 0.3-0.5 MB); the in-memory caches are
bounded (``qjit(cache_size=...)``, ``$DYNJAX_CACHE_SIZE``), so the resident set size must
level off instead of growing with the number of sizes. Prints one table: RSS after every
tenth of the calls, and the live executables. The disk cache is disabled for the run.
"""
import argparse
import gc
import os
import resource
import time

os.environ["DYNJAX_DISABLE_DISK_CACHE"] = "1"

import numpy as np  # noqa: E402

import dynjax.numpy as jnp  # noqa: E402
from dynjax import qjit, runtime  # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def live_executables() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, runtime.Executable))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, default=2000)
    ap.add_argument("--cache-size", type=int, default=None)
    args = ap.parse_args()
    f = qjit(lambda x: jnp.sum(jnp.sin(x) * 2), abstracted_axes={0: "n"}, cache_size=args.cache_size)
    f(np.ones(1))
    print(f"cache_size={f.cache_size}  sizes={args.sizes}")
    print(f"{'calls':>6} {'RSS MB':>8} {'live executables':>17} {'s':>6}")
    start = time.perf_counter()
    print(f"{0:>6} {rss_mb():8.1f} {live_executables():>17} {0.0:6.1f}")
    step = max(args.sizes // 10, 1)
    for n in range(1, args.sizes + 1):
        x = np.full(n, 0.5)
        assert abs(float(f(x)) - 2 * n * np.sin(0.5)) < 1e-9 * n
        if n % step == 0:
            print(f"{n:>6} {rss_mb():8.1f} {live_executables():>17} {time.perf_counter() - start:6.1f}")
    print(f.cache_info())


if __name__ == "__main__":
    main()
