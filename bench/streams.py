"""Streams of sizes: 50 calls at distinct sizes in 1..2000, dynjax beside its peers (issue 22).

    pip install -e ".[bench]" && python bench/streams.py [--calls 50] [--top 2000] [--only NAME] [--alone]
    pip install torch==2.13.0   # optional: adds the torch.compile(dynamic=True) column

Five streams, the same sizes and the same arrays for every framework, in one process, the
frameworks interleaved call by call (call k of every framework runs before call k+1 of any;
``--alone``: each framework's whole stream in turn):

* ``mlp``       ``tanh(x @ W1) @ W2``, x ``(n, 64)``
* ``attention`` ``softmax(q k^T / 8) v``, q k v ``(n, 64)``
* ``lstsq``     the gradient of ``0.5 |A w - b|^2`` in ``w``, A ``(n, 32)``
* ``grow``      a while loop appending one element per step until ``0.9 n + 1`` elements
* ``mask``      ``sum(x[x > 0] ** 2)``

Peers: ``jax.jit`` (a retrace and compile per new size; for ``mask`` the ``where`` form, for
``grow`` a fixed buffer of the largest size), ``jax.jit`` with the inputs padded by hand to the
next power of two plus a mask, ``torch.compile(dynamic=True)`` where torch is installed (its
OpenMP threads passive when interleaved, ``OMP_WAIT_POLICY=PASSIVE``, as by default alone),
and numpy. Printed per stream and framework: the total, the first call, calls 2..N, the sum of
their sizes' steady-state times (the best of ``STEADY_ROUNDS`` calls at each size after the
stream) and the time the calls took above those (compiles, waits, calls beside background
work), the p90 and max of calls 6..N (seconds), the largest ratio of a call 6..N to the
steady-state time at its size, and dynjax's compile counts. Every result is checked against numpy.

``--compile`` adds the compile-time scaling: K = 10, 100, 300 chained elementwise steps, the
time XLA takes to compile dynjax's specialized module against jax's module of the same program
(both compiled by the same XLA client, medians of 3), and the op counts of both modules.
"""
from __future__ import annotations

import argparse
import atexit
import collections
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

os.environ.setdefault("DYNJAX_DISABLE_DISK_CACHE", "1")
os.environ.setdefault("JAX_ENABLE_COMPILATION_CACHE", "false")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# Interleaved, torch's OpenMP threads sleep when idle instead of spinning, as in the issue's
# measurements: spinning, they took the cores from the calls of the frameworks interleaved
# with torch's, and its own calls took 1.6-6x as long (MLP calls 2..50: 0.41 s against 0.10
# s). Alone, they spin as by default: torch's best there (MLP calls 2..50: 0.034 s against
# 0.075 s sleeping).
if "--alone" not in sys.argv[1:]:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# torch.compile's on-disk caches (inductor's FX graphs and kernels) start empty in every run,
# as dynjax's and jax's do above (the caches of earlier runs had turned torch's first calls'
# 2-11 s into 0.1-4.5 s)
if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="streams-inductor-")
    atexit.register(shutil.rmtree, os.environ["TORCHINDUCTOR_CACHE_DIR"], True)

import numpy as np  # noqa: E402

import dynjax  # noqa: E402
import dynjax.numpy as dnp  # noqa: E402
from dynjax import lax as dlax  # noqa: E402
from dynjax.execution import tiers  # noqa: E402

try:
    import jax  # noqa: E402
    import jax.numpy as jjnp  # noqa: E402
    from jax import lax as jlax  # noqa: E402
except ImportError:  # pragma: no cover
    sys.exit('streams.py needs jax: pip install -e ".[bench]"')
try:
    import torch  # noqa: E402
    torch.set_num_threads(os.cpu_count() or 1)
except ImportError:  # pragma: no cover
    torch = None

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_enable_compilation_cache", False)
pc = time.perf_counter


def pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


# ----------------------------------------------------------------------------------------------
# the streams: each gives make_inputs(rng, n) and one callable per framework (or None)
W1 = np.random.default_rng(1).standard_normal((64, 128)) / 8
W2 = np.random.default_rng(2).standard_normal((128, 10)) / 11


def mlp_inputs(rng, n):
    return (rng.standard_normal((n, 64)),)


def mlp_np(x):
    return np.tanh(x @ W1) @ W2


def mlp_frameworks():
    dj = dynjax.qjit(lambda x: dnp.tanh(x @ W1) @ W2, abstracted_axes=({0: "n"},))
    jj = jax.jit(lambda x: jjnp.tanh(x @ W1) @ W2)

    def padded(x):
        n = x.shape[0]
        xp = np.zeros((pow2(n), 64))
        xp[:n] = x
        return np.asarray(jj(xp))[:n]
    out = {"dynjax": dj, "jax.jit": lambda x: np.asarray(jj(x)), "jax padded": padded}
    if torch is not None:
        t1, t2 = torch.from_numpy(W1), torch.from_numpy(W2)
        tc = torch.compile(lambda x: torch.tanh(x @ t1) @ t2, dynamic=True)
        out["torch.compile"] = lambda x: tc(torch.from_numpy(x)).numpy()
    return out


def attention_inputs(rng, n):
    return tuple(rng.standard_normal((n, 64)) for _ in range(3))


def attention_np(q, k, v):
    s = q @ k.T / 8.0
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v


def attention_frameworks():
    def dj_f(q, k, v):
        return dynjax.nn.softmax(q @ k.T / 8.0, axis=1) @ v
    dj = dynjax.qjit(dj_f, abstracted_axes=({0: "n"}, {0: "n"}, {0: "n"}))
    jj = jax.jit(lambda q, k, v: jax.nn.softmax(q @ k.T / 8.0, axis=1) @ v)

    @jax.jit
    def jj_masked(q, k, v, n):
        s = q @ k.T / 8.0
        s = jjnp.where(jjnp.arange(s.shape[1])[None, :] < n, s, -jjnp.inf)
        return jax.nn.softmax(s, axis=1) @ v

    def padded(q, k, v):
        n = q.shape[0]
        p = pow2(n)
        pad = lambda a: np.concatenate([a, np.zeros((p - n, 64))])  # noqa: E731
        return np.asarray(jj_masked(pad(q), pad(k), pad(v), n))[:n]
    out = {"dynjax": dj, "jax.jit": lambda *a: np.asarray(jj(*a)), "jax padded": padded}
    if torch is not None:
        tc = torch.compile(lambda q, k, v: torch.softmax(q @ k.T / 8.0, dim=1) @ v, dynamic=True)
        out["torch.compile"] = lambda *a: tc(*map(torch.from_numpy, a)).numpy()
    return out


W0 = np.random.default_rng(3).standard_normal(32)


def lstsq_inputs(rng, n):
    return rng.standard_normal((n, 32)), rng.standard_normal(n)


def lstsq_np(a, b):
    return a.T @ (a @ W0 - b)


def lstsq_frameworks():
    dj = dynjax.qjit(dynjax.grad(lambda w, a, b: 0.5 * dnp.sum((a @ w - b) ** 2)),
                     abstracted_axes=(None, {0: "n"}, {0: "n"}))
    jj = jax.jit(jax.grad(lambda w, a, b: 0.5 * jjnp.sum((a @ w - b) ** 2)))

    def padded(a, b):
        n = a.shape[0]
        ap, bp = np.zeros((pow2(n), 32)), np.zeros(pow2(n))
        ap[:n], bp[:n] = a, b
        return np.asarray(jj(W0, ap, bp))
    out = {"dynjax": lambda a, b: dj(W0, a, b), "jax.jit": lambda a, b: np.asarray(jj(W0, a, b)),
           "jax padded": padded}
    if torch is not None:
        def tf(w, a, b):
            return a.T @ (a @ w - b)   # the gradient written out (torch.compile and autograd)
        tc = torch.compile(tf, dynamic=True)
        tw = torch.from_numpy(W0)
        out["torch.compile"] = lambda a, b: tc(tw, torch.from_numpy(a), torch.from_numpy(b)).numpy()
    return out


def grow_inputs(rng, n):
    return (rng.standard_normal(n),)


def grow_np(x):
    m = (9 * x.shape[0]) // 10 + 1
    a = x[:1]
    while a.shape[0] < m:
        a = np.concatenate([a, a[-1:] * 0.5 + x[a.shape[0]]])
    return a


def grow_frameworks():
    def dj_f(x):
        m = (9 * x.shape[0]) // 10 + 1
        return dlax.while_loop(lambda a: a.shape[0] < m,
                               lambda a: dnp.concatenate([a, a[-1:] * 0.5 + x[a.shape[0]]]),
                               x[:1], allow_array_resizing=True)
    dj = dynjax.qjit(dj_f, abstracted_axes=({0: "n"},))

    def fill(x, buf, m):
        def body(i, b):
            return b.at[i].set(b[i - 1] * 0.5 + x[i])
        return jlax.fori_loop(1, m, body, buf.at[0].set(x[0]))

    jj = jax.jit(lambda x: fill(x, jjnp.zeros_like(x), (9 * x.shape[0]) // 10 + 1))
    jj_masked = jax.jit(fill)

    def padded(x):
        n = x.shape[0]
        m = (9 * n) // 10 + 1
        xp = np.zeros(pow2(n))
        xp[:n] = x
        return np.asarray(jj_masked(xp, np.zeros(pow2(n)), m))[:m]
    out = {"dynjax": dj, "jax.jit": lambda x: np.asarray(jj(x))[:(9 * x.shape[0]) // 10 + 1],
           "jax padded": padded}
    if torch is not None:
        def tf(x, m: int):
            buf = torch.zeros(m, dtype=x.dtype)
            buf[0] = x[0]
            for i in range(1, m):     # dynamo unrolls Python loops; run it eagerly instead
                buf[i] = buf[i - 1] * 0.5 + x[i]
            return buf
        out["torch (eager)"] = lambda x: tf(torch.from_numpy(x), (9 * x.shape[0]) // 10 + 1).numpy()
    return out


def mask_inputs(rng, n):
    return (rng.standard_normal(n),)


def mask_np(x):
    return np.sum(x[x > 0] ** 2)


def mask_frameworks():
    dj = dynjax.qjit(lambda x: dnp.sum(x[x > 0] ** 2), abstracted_axes=({0: "n"},))
    jj = jax.jit(lambda x: jjnp.sum(jjnp.where(x > 0, x, 0.0) ** 2))

    def padded(x):
        xp = np.zeros(pow2(x.shape[0]))
        xp[:x.shape[0]] = x
        return float(jj(xp))
    out = {"dynjax": dj, "jax.jit (where)": lambda x: float(jj(x)), "jax padded": padded}
    if torch is not None:
        tc = torch.compile(lambda x: (x[x > 0] ** 2).sum(), dynamic=True)
        out["torch.compile"] = lambda x: float(tc(torch.from_numpy(x)))
    return out


STREAMS = {
    "mlp": (mlp_inputs, mlp_np, mlp_frameworks),
    "attention": (attention_inputs, attention_np, attention_frameworks),
    "lstsq": (lstsq_inputs, lstsq_np, lstsq_frameworks),
    "grow": (grow_inputs, grow_np, grow_frameworks),
    "mask": (mask_inputs, mask_np, mask_frameworks),
}


# ----------------------------------------------------------------------------------------------
# measurement
def run_stream(name, calls, top, seed=0, alone=False):
    """The stream's calls for every framework: interleaved call by call (call k of every
    framework before call k + 1 of any), or with ``alone`` each framework's whole stream in
    turn (dynjax's background compiles then overlap only its own calls, and nothing else's
    worker threads -- OpenBLAS's spin for ~0.1 s after numpy's matrix products -- are awake
    beside a call)."""
    make_inputs, np_f, frameworks = STREAMS[name]
    rng = np.random.default_rng(seed)
    sizes = rng.choice(np.arange(1, top + 1), size=calls, replace=False)
    inputs = [make_inputs(rng, int(n)) for n in sizes]
    wants = [np_f(*args) for args in inputs]
    fws = frameworks()
    fws["numpy"] = np_f
    times = {k: [] for k in fws}

    def call(fw, k):
        t = pc()
        got = fws[fw](*inputs[k])
        times[fw].append(pc() - t)
        np.testing.assert_allclose(np.asarray(got), wants[k], rtol=1e-7, atol=1e-9,
                                   err_msg=f"{name} / {fw} at n = {sizes[k]}")
    if alone:
        for fw in fws:
            for k in range(len(inputs)):
                call(fw, k)
            if fw == "dynjax":
                tiers.wait_for_background()
    else:
        for k in range(len(inputs)):
            for fw in fws:
                call(fw, k)
    info = fws["dynjax"].cache_info() if hasattr(fws["dynjax"], "cache_info") else {}
    tiers.wait_for_background()
    # each size's steady-state time: the stream's sizes again, STEADY_ROUNDS times, the best
    # of each framework's calls at a size (dynjax's exact executable of a size that recurs)
    # (``alone``: each framework's rounds in turn, as its stream ran)
    steady = {k: [np.inf] * len(inputs) for k in fws}
    for group in ([[fw] for fw in fws] if alone else [list(fws)]):
        for _ in range(STEADY_ROUNDS):
            for k in range(len(inputs)):
                for fw in group:
                    t = pc()
                    fws[fw](*inputs[k])
                    steady[fw][k] = min(steady[fw][k], pc() - t)
            tiers.wait_for_background()
    return sizes, times, info, steady


#: how many times each size runs again for its steady-state time
STEADY_ROUNDS = 4


def summarize(times, steady):
    ts = np.asarray(times)
    skip = 5 if len(ts) > 5 else 0
    rest = ts[skip:]
    slowdown = rest / np.asarray(steady)[skip:]
    st = np.asarray(steady)
    return {"total": ts.sum(), "first": ts[0], "2..N": ts[1:].sum(), "steady 2..N": st[1:].sum(),
            "above steady 2..N": (ts[1:] - st[1:]).sum(),
            "p90 6..N": float(np.percentile(rest, 90)), "max 6..N": rest.max(),
            "worst / steady": slowdown.max(), "worst at": skip + int(np.argmax(slowdown))}


def fmt(s: float) -> str:
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def print_stream(name, sizes, times, info, steady):
    print(f"\n### {name} ({len(sizes)} sizes in {sizes.min()}..{sizes.max()})\n")
    print("| framework | total | first | calls 2..N | their steady times | above them | p90 6..N | max 6..N | worst 6..N / steady at its size | total / jax padded |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = {fw: summarize(ts, steady[fw]) for fw, ts in times.items()}
    ref = rows.get("jax padded", {}).get("total")
    for fw, r in rows.items():
        ratio = f"{r['total'] / ref:.2f}x" if ref else "—"
        k = r["worst at"]
        print(f"| {fw} | {fmt(r['total'])} | {fmt(r['first'])} | {fmt(r['2..N'])} | "
              f"{fmt(r['steady 2..N'])} | {fmt(r['above steady 2..N'])} | {fmt(r['p90 6..N'])} | {fmt(r['max 6..N'])} | {r['worst / steady']:.1f}x "
              f"(call {k + 1}, n = {sizes[k]}: {fmt(times[fw][k])} / {fmt(steady[fw][k])}) | {ratio} |")
    keys = ("traces", "compilations", "padded_compilations", "background_compilations",
            "exact_runs", "padded_runs", "eager_runs", "host_steps")
    print("\ndynjax: " + ", ".join(f"{k} {info[k]}" for k in keys if k in info))


# ----------------------------------------------------------------------------------------------
# compile time of the module, dynjax against jax
def op_counts(text: str) -> collections.Counter:
    return collections.Counter(re.findall(r"= (?:\"?)(stablehlo\.[a-z_]+|func\.call|call)", text))


def compile_scaling(ks=(10, 100, 300), n=1000):
    from dynjax.runtime import xla as dxla

    def chain(np_mod, k):
        def f(x):
            for _ in range(k):
                x = np_mod.sin(x) * 1.0001 + np_mod.cos(x) * 0.5
            return x
        return f
    print("\n### compile time: XLA on dynjax's specialized module vs jax's module\n")
    print("| K | dynjax module | jax module | ratio | dynjax ops | jax ops |")
    print("|---:|---:|---:|---:|---|---|")
    x = np.linspace(0, 1, n)
    for k in ks:
        os.environ["DYNJAX_TIERS"] = "exact"
        f = dynjax.qjit(chain(dnp, k), abstracted_axes=({0: "n"},))
        f(x)
        dj_text = f.mlir_specialized
        jx_text = jax.jit(chain(jjnp, k)).lower(x).as_text()
        td, tj = [], []
        for _ in range(3):
            t = pc()
            dxla.compile(dj_text)
            td.append(pc() - t)
            t = pc()
            dxla.compile(jx_text)
            tj.append(pc() - t)
        d, j = statistics.median(td), statistics.median(tj)
        dc, jc = op_counts(dj_text), op_counts(jx_text)
        short = lambda c: ", ".join(f"{o.split('.')[-1]} {m}" for o, m in c.most_common(6))  # noqa: E731
        print(f"| {k} | {fmt(d)} | {fmt(j)} | {d / j:.2f}x | {short(dc)} | {short(jc)} |")
    os.environ.pop("DYNJAX_TIERS", None)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--top", type=int, default=2000)
    ap.add_argument("--only", action="append", choices=sorted(STREAMS))
    ap.add_argument("--compile", action="store_true", help="also the compile-time scaling")
    ap.add_argument("--alone", action="store_true",
                    help="each framework's whole stream in turn, not interleaved call by call")
    args = ap.parse_args(argv)
    with open("/proc/loadavg") as fh:
        print("load average at start:", " ".join(fh.read().split()[:3]))
    if args.alone:
        print("each framework's stream alone, one framework after another")
    for name in args.only or STREAMS:
        sizes, times, info, steady = run_stream(name, args.calls, args.top, alone=args.alone)
        print_stream(name, sizes, times, info, steady)
    if args.compile:
        compile_scaling()
    with open("/proc/loadavg") as fh:
        print("\nload average at end:", " ".join(fh.read().split()[:3]))


if __name__ == "__main__":
    main()
