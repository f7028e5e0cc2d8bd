"""Micro-benchmark of dynjax's XLA call path variants (numpy in -> numpy out).

    python bench/runtime_dispatch.py [--n 20000]

Prints the median per-call time in microseconds for each variant in
``dynjax.runtime.xla._call_variants`` on 1-element adds (``x + x`` with one
argument, ``x + y`` with two) and a 1e6-element ``x + y``, plus the time per
specialization and per compile / deserialize.
"""

import argparse
import time

import numpy as np

from dynjax.runtime import xla
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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=20000)
    ns = p.parse_args()

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
        for name, f in xla._call_variants(exe).items():
            out = f(*args)
            if "device-resident" not in name:
                assert np.array_equal(np.asarray(out[0]), expect), name
            print(f"  {median_us(f, args, n):9.2f} us  {name}")


if __name__ == "__main__":
    main()
