"""Micro-benchmark of dynjax's XLA call path variants (numpy in -> numpy out).

    python bench/runtime_dispatch.py [--n 20000]      # runtime call-path variants
    python bench/runtime_dispatch.py dispatch [--n 20000] [--rounds 7]
                                                      # qjit against jax.jit per argument kind

Default section: the median per-call time in microseconds for each variant in
``dynjax.runtime.call_variants.call_variants`` on 1-element adds (``x + x`` with one
argument, ``x + y`` with two) and a 1e6-element ``x + y``, plus the time per
specialization and per compile / deserialize.

``dispatch`` section (needs jax): steady-state calls of an already compiled ``qjit``
function beside ``jax.jit`` (x64 on, every jax call followed by ``block_until_ready``),
for Python floats, Python ints, numpy scalars, 0-d arrays and ``np.ones(10)``, with one
argument (``x + 1``) and two (``x + y``). Each round times a batch of ``n / 10`` calls per
kind and framework, interleaved; the table shows the median over rounds of the per-call time, and
whether the call took qjit's dispatch table (``QJIT._fast_plan``).
"""

import argparse
import time

import numpy as np

from dynjax.runtime import xla
from dynjax.runtime.call_variants import call_variants
from mlir_passes import specialize

DYN = """func.func @main(%n: tensor<i64>, %x: tensor<?xf64>, %y: tensor<?xf64>) -> tensor<?xf64> {
  %0 = stablehlo.add %x, %y : tensor<?xf64>
  return %0 : tensor<?xf64>
}"""
DYN1 = """func.func @main(%n: tensor<i64>, %x: tensor<?xf64>) -> tensor<?xf64> {
  %0 = stablehlo.add %x, %x : tensor<?xf64>
  return %0 : tensor<?xf64>
}"""


def median_us(f, args, n):
    for _ in range(min(500, n)):
        f(*args)
    pc = time.perf_counter_ns
    ts = []
    for _ in range(n):
        t = pc()
        f(*args)
        ts.append(pc() - t)
    return float(np.median(ts)) / 1e3


def aligned(n, fill):
    raw = np.empty(n + 8, np.float64)
    off = (-raw.ctypes.data % 64) // 8
    a = raw[off:off + n]
    a[:] = fill
    return a


DISPATCH_KINDS = [   # label, one argument, the second argument of the two-argument case
    ("Python float", 1.5, 2.5),
    ("Python int", 3, 4),
    ("np.float64", np.float64(1.5), np.float64(2.5)),
    ("np.int64", np.int64(3), np.int64(4)),
    ("0-d array", np.array(1.5), np.array(2.5)),
    ("np.ones(10)", np.ones(10), np.ones(10)),
]


def dispatch(calls: int, rounds: int):
    """Steady-state per-call time of qjit beside jax.jit, per argument kind."""
    import os
    os.environ.setdefault("DYNJAX_DISABLE_DISK_CACHE", "1")
    import jax
    jax.config.update("jax_enable_x64", True)
    from dynjax import qjit

    def one(x):
        return x + 1

    def two(x, y):
        return x + y

    cases = []   # (label, dynjax callable, jax callable, args)
    for label, a, b in DISPATCH_KINDS:
        for name, fn, args in (("f(x) = x + 1", one, (a,)), ("f(x, y) = x + y", two, (a, b))):
            d, j = qjit(fn), jax.jit(fn)
            got, want = d(*args), np.asarray(j(*args))
            assert got.dtype == want.dtype and np.array_equal(got, want), (label, name, got, want)
            cases.append((f"{label:13s} {name}", d, j, args))

    def batch_d(f, args):
        pc = time.perf_counter_ns
        t = pc()
        for _ in range(calls):
            f(*args)
        return (pc() - t) / calls / 1e3

    def batch_j(f, args):
        pc = time.perf_counter_ns
        t = pc()
        for _ in range(calls):
            f(*args).block_until_ready()
        return (pc() - t) / calls / 1e3

    times = {c[0]: ([], []) for c in cases}
    for _ in range(rounds):
        for label, d, j, args in cases:
            times[label][0].append(batch_d(d, args))
            times[label][1].append(batch_j(j, args))
    print(f"\ndispatch: {calls} calls x {rounds} rounds, median per call (us)")
    print(f"{'arguments':33s} {'dynjax':>8s} {'jax.jit':>8s} {'ratio':>6s}  fast path")
    for label, d, j, args in cases:
        td, tj = (float(np.median(v)) for v in times[label])
        fast = "yes" if d._fast_plan(args) is not None else "NO"
        print(f"{label:33s} {td:8.2f} {tj:8.2f} {td / tj:5.2f}x  {fast}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("section", nargs="?", default="variants", choices=["variants", "dispatch"])
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=7)
    ns = p.parse_args()
    if ns.section == "dispatch":
        dispatch(max(ns.n // 10, 100), ns.rounds)
        return

    t = time.perf_counter()
    for i in range(50):
        specialize(DYN, [None, f"tensor<{i + 1}xf64>", f"tensor<{i + 1}xf64>"], {0: i + 1})
    print(f"specialize (small module): {(time.perf_counter() - t) / 50 * 1e3:.2f} ms")

    for label, text, nargs, size, n in [
        ("1 elem, x + x (1 arg)", DYN1, 1, 1, ns.n),
        ("1 elem, x + y (2 args)", DYN, 2, 1, ns.n),
        ("1e6 elem, x + y, 64-byte-aligned inputs", DYN, 2, 10**6, max(ns.n // 100, 50)),
        ("1e6 elem, x + y, unaligned inputs", DYN, 2, 10**6, max(ns.n // 100, 50)),
    ]:
        st = specialize(text, [None] + [f"tensor<{size}xf64>"] * nargs, {0: size})
        t = time.perf_counter()
        exe = xla.compile(st)
        tc = time.perf_counter() - t
        blob = xla.serialize(exe)
        t = time.perf_counter()
        xla.deserialize(blob)
        td = time.perf_counter() - t
        if "unaligned" in label:
            args = [np.arange(size + 1, dtype=np.float64)[1:] for _ in range(nargs)]
        else:
            args = [aligned(size, k + 1.0) for k in range(nargs)]
        expect = args[0] + (args[-1] if nargs == 2 else args[0])
        print(f"\n{label}: compile {tc * 1e3:.1f} ms, deserialize {td * 1e3:.2f} ms")
        for name, f in call_variants(exe).items():
            out = f(*args)
            if "device-resident" not in name:
                assert np.array_equal(np.asarray(out[0]), expect), name
            print(f"  {median_us(f, args, n):9.2f} us  {name}")


if __name__ == "__main__":
    main()
