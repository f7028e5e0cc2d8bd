"""What the on-disk executable cache adds to a compile that misses it, beside jax's (issue 22).

    pip install -e ".[bench]" && python bench/disk_cache.py [--entries 0,10000,50000] [--runs 3]

A miss compiles and then writes an entry; the cache keeps its directory under a size cap by
scanning it (every entry's size and mtime) on a process's first write and every 32 writes
after. Each measurement runs in a fresh process: the time of its first two compiles of new
programs (the first also starts XLA's compiler), with the cache off and with a cache
directory already holding N entries of other programs (small stand-in files with entry
names: a scan reads their names and sizes, and nothing loads them). jax (its persistent
compilation cache, with every compile stored) runs the same way with N files in its
directory. Printed: per framework and N, the median over ``--runs`` processes of each
compile, and its ratio to the same framework with its cache off.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, os, sys, time
fw, n_first = sys.argv[1], int(sys.argv[2])
import numpy as np
times = []
if fw == "dynjax":
    sys.path.insert(0, sys.argv[3])
    from dynjax import runtime
    from mlir_passes import specialize
    text = '''func.func @main(%x: tensor<?xf64>) -> tensor<?xf64> {
      %s = stablehlo.sine %x : tensor<?xf64>
      %y = stablehlo.multiply %s, %x : tensor<?xf64>
      return %y : tensor<?xf64>
    }'''
    for k in range(2):
        module = specialize(text, [f"tensor<{n_first + k}xf64>"], {})
        t = time.perf_counter()
        runtime.compile_cached(module)
        times.append(time.perf_counter() - t)
else:
    import jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    for k in range(2):
        x = np.ones(n_first + k)
        t = time.perf_counter()
        jax.jit(lambda x: jnp.sin(x) * x).lower(x).compile()
        times.append(time.perf_counter() - t)
print(json.dumps(times))
"""


def fill(directory: str, n: int, suffix: str, size: int = 4096) -> None:
    """``n`` stand-in entries (random names of 64 hex digits, ``size`` bytes each)."""
    os.makedirs(directory, exist_ok=True)
    blob = os.urandom(size)
    for _ in range(n):
        with open(os.path.join(directory, os.urandom(32).hex() + suffix), "wb") as f:
            f.write(blob)


def measure(fw: str, entries, runs: int, frontend: str):
    """{N or "off": [first-compile medians, second-compile medians]}."""
    out = {}
    for n in ["off"] + list(entries):
        samples = []
        for r in range(runs):
            work = tempfile.mkdtemp(prefix="bench-disk-cache-")
            env = dict(os.environ)
            try:
                if fw == "dynjax":
                    env["DYNJAX_CACHE_DIR"] = os.path.join(work, "cache")
                    env["DYNJAX_CACHE_KEY_FILE"] = os.path.join(work, "key", "cache-key")
                    if n == "off":
                        env["DYNJAX_DISABLE_DISK_CACHE"] = "1"
                    else:
                        env.pop("DYNJAX_DISABLE_DISK_CACHE", None)
                        fill(env["DYNJAX_CACHE_DIR"], n, ".xlaexe")
                else:
                    env["JAX_PLATFORMS"] = "cpu"
                    if n == "off":
                        env["JAX_ENABLE_COMPILATION_CACHE"] = "false"
                    else:
                        env["JAX_ENABLE_COMPILATION_CACHE"] = "true"
                        env["JAX_COMPILATION_CACHE_DIR"] = os.path.join(work, "jax")
                        env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
                        env["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
                        fill(env["JAX_COMPILATION_CACHE_DIR"], n, "-cache")
                # a new program in every process: nothing is a hit
                first = 1000 + 7 * r + (0 if n == "off" else n % 997)
                res = subprocess.run([sys.executable, "-c", CHILD, fw, str(first), frontend],
                                     env=env, capture_output=True, text=True, timeout=600)
                if res.returncode != 0:
                    raise RuntimeError(res.stderr[-2000:])
                samples.append(json.loads(res.stdout.strip().splitlines()[-1]))
            finally:
                shutil.rmtree(work, ignore_errors=True)
        out[n] = [statistics.median(s[k] for s in samples) for k in range(2)]
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--entries", default="0,10000,50000", help="comma-separated entry counts")
    p.add_argument("--runs", type=int, default=3, help="processes per measurement")
    ns = p.parse_args()
    entries = [int(v) for v in ns.entries.split(",") if v]
    frontend = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "frontend")
    fws = ["dynjax"] + (["jax"] if importlib.util.find_spec("jax") is not None else [])
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}\n")
    print("| framework | cache | first compile | second compile | first / cache off | second / cache off |")
    print("|---|---|---:|---:|---:|---:|")
    for fw in fws:
        res = measure(fw, entries, ns.runs, frontend)
        off = res["off"]
        for n, (a, b) in res.items():
            label = "off" if n == "off" else f"on, {n:,} entries"
            print(f"| {fw} | {label} | {a * 1e3:.1f} ms | {b * 1e3:.1f} ms | {a / off[0]:.2f}x | {b / off[1]:.2f}x |")
    print(f"\nload average at end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
