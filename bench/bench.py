"""dynjax beside jax.jit and numpy: first call, second call, steady state, new size.

    pip install -e ".[bench]" && python bench/bench.py [--quick]

Prints one markdown table (plus footnotes). Times are wall-clock, measured with
``time.perf_counter_ns``; steady state is the median of repeated calls after warm-up, in 5
rounds of dynjax and jax calls alternating call by call (which one goes first changing at
every turn) and then numpy's, so that a change in machine load or in the allocator's state
affects them alike. Runs in ~3 min on 2 cores (``--quick``: ~1 min).

* dynjax runs with its on-disk executable cache off (``DYNJAX_DISABLE_DISK_CACHE=1``) and
  jax with its persistent compilation cache off, so first calls really trace and compile.
* "first call" = median over 3 freshly created functions of: creating the jitted function (``@qjit`` / ``jax.jit``; annotated ``@qjit``
  functions trace at decoration, so decoration is included) + the first call: trace,
  lower, compile, run. It is measured in a warm process: both frameworks first run a small
  warm-up program (XLA client creation, LLVM initialisation, lazy imports are excluded).
* "new size" = the first call with a different input size on the already-called function
  (dynjax: specialize + compile, no retrace with ``abstracted_axes``; jax: retrace + compile),
  "2nd" = the call right after the first one (same arguments); both also medians of 3.
* Every jax call is followed by ``block_until_ready`` (jax dispatches asynchronously; dynjax
  returns host numpy arrays). All inputs are host numpy arrays for all three.
* numpy runs the same computation eagerly (Python loop for the for_loops): steady state only.
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

os.environ["DYNJAX_DISABLE_DISK_CACHE"] = "1"
os.environ.setdefault("JAX_ENABLE_COMPILATION_CACHE", "false")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

import dynjax.numpy as dnp  # noqa: E402
from dynjax import for_loop, grad, qjit, vmap  # noqa: E402
from dynjax import lax as lax_dj  # noqa: E402
from dynjax.execution import tiers  # noqa: E402

try:
    import jax  # noqa: E402
    import jax.numpy as jjnp  # noqa: E402
    from jax import lax  # noqa: E402
except ImportError:  # pragma: no cover
    sys.exit('bench.py needs jax: pip install -e ".[bench]"')

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_enable_compilation_cache", False)

pc = time.perf_counter_ns

# The Catalyst numbers on this kind of machine: (Catalyst, jax.jit), seconds.
CATALYST = {
    "scalar": (137e-6, 4.4e-6),
    "axpy": (483e-3, 17e-3),
    "matmul": (4.1, 26e-3),
}


# ---------------------------------------------------------------------------------------
# measurement helpers

def once(f, *args):
    t = pc()
    out = f(*args)
    return (pc() - t) * 1e-9, out


def samples(f, args, reps):
    gc.collect()
    ts = []
    for _ in range(reps):
        t = pc()
        f(*args)
        ts.append(pc() - t)
    return ts


def alternating(f, g, args, reps):
    """``reps`` timed calls of ``f`` and of ``g``, one of each in turn, which one goes first
    changing at every turn: the machine's load, the allocator's state (a 32 MB result freed
    and allocated again takes page faults on some calls and not on others) and the caches
    treat both alike, where blocks of calls of one then the other could differ by 2x."""
    gc.collect()
    tf, tg = [], []
    for k in range(reps):
        for fun, ts in ((f, tf), (g, tg)) if k % 2 == 0 else ((g, tg), (f, tf)):
            t = pc()
            fun(*args)
            ts.append(pc() - t)
    return tf, tg


def block(f):
    def g(*args):
        return jax.block_until_ready(f(*args))
    return g


def fmt(t):
    if t is None:
        return "—"
    if t < 1e-3:
        return f"{t * 1e6:.1f} µs"
    if t < 1:
        return f"{t * 1e3:.1f} ms"
    return f"{t:.2f} s"


def ratio(a, b):
    return None if a is None or b is None else a / b


def fmt_ratio(r):
    return "—" if r is None else f"{r:.2f}x"


# ---------------------------------------------------------------------------------------
# workloads. Each maker returns a *fresh* function (no cache shared with earlier runs).

def dj_scalar():
    @qjit
    def f(x):
        return x + 1.0
    return f


def jx_scalar():
    return block(jax.jit(lambda x: x + 1.0))


def np_scalar(x):
    return x + 1.0


def dj_circuit():
    @qjit
    def circuit(sz: int):
        a0 = dnp.ones([sz], dtype=float)

        @for_loop(0, 10, 1)
        def loop(i, a):
            return a + a0
        a2 = loop(a0)
        return a0 + a2
    return circuit


def jx_circuit():
    def circuit(sz):
        a0 = jjnp.ones([sz], dtype=float)
        a2 = lax.fori_loop(0, 10, lambda i, a: a + a0, a0)
        return a0 + a2
    return block(jax.jit(circuit, static_argnums=0))


def np_circuit(sz):
    a0 = np.ones([sz], dtype=float)
    a = a0
    for _ in range(10):
        a = a + a0
    return a0 + a


def dj_sumsin():
    @qjit(abstracted_axes={0: "n"})
    def f(x):
        return dnp.sum(dnp.sin(x) * 2)
    return f


def jx_sumsin():
    return block(jax.jit(lambda x: jjnp.sum(jjnp.sin(x) * 2)))


def np_sumsin(x):
    return np.sum(np.sin(x) * 2)


def dj_mask():
    @qjit(abstracted_axes={0: "n"})
    def f(x):
        return dnp.sum(x[x > 0] ** 2)
    return f


def jx_mask():
    # jax.jit cannot compile x[x > 0] (its size comes from the data): the same sum, masked
    return block(jax.jit(lambda x: jjnp.sum(jjnp.where(x > 0, x, 0.0) ** 2)))


def np_mask(x):
    return np.sum(x[x > 0] ** 2)


def dj_scatter_add():
    @qjit(abstracted_axes=({0: "n"}, {0: "k"}))
    def f(x, i):
        return x.at[i].add(1.0)
    return f


def jx_scatter_add():
    return block(jax.jit(lambda x, i: x.at[i].add(1.0)))


def np_scatter_add(x, i):
    y = x.copy()
    np.add.at(y, i, 1.0)
    return y


def dj_axpy():
    @qjit(abstracted_axes=({0: "n"}, {0: "n"}, {0: "n"}))
    def f(a, b, c):
        @for_loop(0, 1000, 1)
        def loop(i, a):
            return a + b * c
        return loop(a)
    return f


def jx_axpy():
    def f(a, b, c):
        return lax.fori_loop(0, 1000, lambda i, a: a + b * c, a)
    return block(jax.jit(f))


def np_axpy(a, b, c):
    for _ in range(1000):
        a = a + b * c
    return a


def dj_matmul():
    @qjit(abstracted_axes=({0: "n"}, None))
    def f(x, B):
        @for_loop(0, 10, 1)
        def loop(i, x):
            return x @ B
        return loop(x)
    return f


def jx_matmul():
    def f(x, B):
        return lax.fori_loop(0, 10, lambda i, x: x @ B, x)
    return block(jax.jit(f))


def np_matmul(x, B):
    for _ in range(10):
        x = x @ B
    return x


def dj_grad_loop():
    def loss(c, b):
        @for_loop(0, 1000, 1)
        def loop(i, c):
            return c + 1e-3 * dnp.sin(c) * b
        return dnp.sum(loop(c))
    return qjit(grad(loss), abstracted_axes=({0: "n"}, {0: "n"}))


def jx_grad_loop():
    def loss(c, b):
        return jjnp.sum(lax.fori_loop(0, 1000, lambda i, c: c + 1e-3 * jjnp.sin(c) * b, c))
    return block(jax.jit(jax.grad(loss)))


def np_grad_loop(c, b):
    """The adjoint by hand: store every iterate, then run the derivative backwards."""
    cs = np.empty((1000,) + c.shape)
    for k in range(1000):
        cs[k] = c
        c = c + 1e-3 * np.sin(c) * b
    g = np.ones_like(c)
    for k in reversed(range(1000)):
        g = g * (1 + 1e-3 * np.cos(cs[k]) * b)
    return g


def dj_vmap_matmul():
    def f(x, W):
        return dnp.tanh(x @ W)
    return qjit(vmap(f, in_axes=(0, None)), abstracted_axes=({0: "b"}, None))


def jx_vmap_matmul():
    def f(x, W):
        return jjnp.tanh(x @ W)
    return block(jax.jit(jax.vmap(f, in_axes=(0, None))))


def np_vmap_matmul(X, W):
    return np.tanh(X @ W)


# ---------------------------------------------------------------------------------------

def dj_rowmatmul():
    W = np.linspace(-1, 1, 64 * 64).reshape(64, 64) / 64

    @qjit(abstracted_axes={0: "n"})
    def f(x):
        return dnp.tanh(x @ W)
    return f


def jx_rowmatmul():
    W = np.linspace(-1, 1, 64 * 64).reshape(64, 64) / 64
    return block(jax.jit(lambda x: jjnp.tanh(x @ W)))


def np_rowmatmul(x):
    return np.tanh(x @ (np.linspace(-1, 1, 64 * 64).reshape(64, 64) / 64))


def dj_loop_norm():
    @qjit(abstracted_axes={0: "n"})
    def f(x):
        return for_loop(0, 10, 1)(lambda i, a: a * 0.5 + dnp.sum(a) * 1e-3)(x)
    return f


def jx_loop_norm():
    return block(jax.jit(lambda x: lax.fori_loop(0, 10, lambda i, a: a * 0.5 + jjnp.sum(a) * 1e-3, x)))


def np_loop_norm(x):
    for _ in range(10):
        x = x * 0.5 + np.sum(x) * 1e-3
    return x


def dj_append():
    @qjit
    def f(n: int):
        return for_loop(0, n, 1, allow_array_resizing=True)(
            lambda i, a: dnp.concatenate([a, a[:1] + i]))(dnp.ones(1))
    return f


def jx_append():
    # the static-shape version: a buffer of the final size, one element written per step
    def f(n):
        buf = jjnp.zeros(1001).at[0].set(1.0)
        return lax.fori_loop(0, n, lambda i, b: b.at[i + 1].set(b[0] + i), buf)
    return block(jax.jit(f))


def np_append(n):
    a = np.ones(1)
    for i in range(n):
        a = np.concatenate([a, a[:1] + i])
    return a


def dj_doubling():
    @qjit(abstracted_axes={0: "n"})
    def f(x):
        return lax_dj.while_loop(lambda c: c[1] < 10, lambda c: (dnp.concatenate([c[0], c[0] * 0.5]), c[1] + 1),
                                 (x, 0), allow_array_resizing=True)[0]
    return f


def jx_doubling():
    # padded to the final size 3 * 2**10, the logical length carried
    def f(x):
        m = 3 * 2 ** 10
        idx = jjnp.arange(m)
        buf = jjnp.zeros(m).at[:3].set(x)

        def body(c):
            b, n, k = c
            shifted = jjnp.roll(b, n) * 0.5
            return jjnp.where(idx < n, b, jjnp.where(idx < 2 * n, shifted, 0.0)), 2 * n, k + 1
        return lax.while_loop(lambda c: c[2] < 10, body, (buf, 3, 0))[0]
    return block(jax.jit(f))


def np_doubling(x):
    for _ in range(10):
        x = np.concatenate([x, x * 0.5])
    return x


def warm_up():
    """Pay the once-per-process costs (XLA clients, LLVM, lazy imports) outside the table."""
    x = np.arange(3.0)

    @qjit(abstracted_axes={0: "n"})
    def d(x):
        @for_loop(0, 2, 1)
        def loop(i, a):
            return a * 2.0 + dnp.sin(a)
        return dnp.sum(loop(x)) + dnp.sum(dnp.ones((3, 3)) @ dnp.ones((3, 3)))

    def j(x):
        y = lax.fori_loop(0, 2, lambda i, a: a * 2.0 + jjnp.sin(a), x)
        return jjnp.sum(y) + jjnp.sum(jjnp.ones((3, 3)) @ jjnp.ones((3, 3)))
    d(x)
    d(x[:2])
    jax.block_until_ready(jax.jit(j)(x))


def first_calls(make, args, new_args):
    """(first call incl. creating the function, second call, first call at the new size)."""
    gc.collect()
    t0 = pc()
    f = make()
    t_make = (pc() - t0) * 1e-9
    t1, out = once(f, *args)
    t2, _ = once(f, *args)
    t3 = once(f, *new_args)[0] if new_args is not None else None
    return f, out, (t_make + t1, t2, t3)


def run_row(name, make_dj, make_jx, np_fun, args, new_args, reps, warm, np_reps, check=True,
            rounds=5, trials=3):
    row = {"name": name}
    # first / second / new-size calls: median over `trials` freshly created functions,
    # alternating dynjax and jax.jit
    tj, tx = [], []
    for _ in range(trials):
        f, out_d, t = first_calls(make_dj, args, new_args)
        tj.append(t)
        g, out_j, t = first_calls(make_jx, args, new_args)
        tx.append(t)
    for pre, ts in (("dj", tj), ("jx", tx)):
        for k, col in enumerate(("first", "second", "new")):
            v = [t[k] for t in ts]
            row[f"{pre}_{col}"] = None if v[0] is None else statistics.median(v)
    tiers.wait_for_background()   # a repeated size's exact executable, compiled in the background
    # steady state (on the last trial's functions): dynjax and jax alternating call by call,
    # then numpy, in rounds (so that a change of machine load hits all three), median over
    # all repetitions of all rounds
    per = max(1, reps // rounds)
    np_per = max(1, np_reps // rounds)
    ts = {"dj": [], "jx": [], "np": []}
    for fun, a, w in ((f, args, warm), (g, args, warm), (np_fun, args, min(warm, 3))):
        for _ in range(w):
            fun(*a)
    for _ in range(rounds):
        tf, tg = alternating(f, g, args, per)
        ts["dj"] += tf
        ts["jx"] += tg
        ts["np"] += samples(np_fun, args, np_per)
    for k, v in ts.items():
        row[k + "_steady"] = statistics.median(v) * 1e-9
    row["dj_cache"] = f.cache_info()
    if check:
        ref = np_fun(*args)
        for label, out in (("dynjax", out_d), ("jax", out_j)):
            if not np.allclose(np.asarray(out), ref, rtol=1e-9, atol=1e-9):
                print(f"WARNING: {name}: {label} result differs from numpy", file=sys.stderr)
    return row


def new_sizes_row(name, make_dj, make_jx, np_fun, make_arg, sizes, key):
    """First calls at many new sizes of one already-called function: the total, for dynjax
    (size buckets: no compile for a size whose bucket is compiled) and jax.jit (a retrace and
    a compile per size); the steady state at one size."""
    f, g = make_dj(), make_jx()
    x0 = make_arg(sizes[0])
    t_first = [once(f, x0)[0], once(g, x0)[0]]
    td, tj, worst = 0.0, 0.0, 0.0
    for n in sizes[1:]:
        x = make_arg(n)
        t, out_d = once(f, x)
        td, worst = td + t, max(worst, t)
        t, out_j = once(g, x)
        tj += t
        if not np.allclose(np.asarray(out_d), np.asarray(out_j), rtol=1e-9, atol=1e-9):
            print(f"WARNING: {name}: dynjax and jax differ at size {n}", file=sys.stderr)
    for _ in range(3):
        f(x0)
    tiers.wait_for_background()
    ts = {"dj": [], "jx": [], "np": []}
    for _ in range(5):
        tf, tg = alternating(f, g, (x0,), 200)
        ts["dj"] += tf
        ts["jx"] += tg
        ts["np"] += samples(np_fun, (x0,), 200)
    row = {"name": name, "key": key, "dj_first": t_first[0], "jx_first": t_first[1], "dj_second": None,
           "jx_second": None, "dj_new": td, "jx_new": tj, "dj_new_worst": worst, "dj_cache": f.cache_info()}
    for k, v in ts.items():
        row[k + "_steady"] = statistics.median(v) * 1e-9
    return row


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="fewer repetitions (smoke test)")
    ns = p.parse_args()
    q = 0.2 if ns.quick else 1.0

    def n(k):
        return max(3, int(k * q))

    rng = np.random.default_rng(0)
    warm_up()
    rows = []

    # 1. dispatch overhead: scalar add on a numpy float64 0-d array
    x = np.array(1.5)  # 0-d float64
    rows.append(run_row("1. scalar `x + 1.0` (0-d f64)", dj_scalar, jx_scalar, np_scalar,
                        (x,), None, n(50000), 2000, n(50000)))
    rows[-1]["key"] = "scalar"
    # 1b. the same, on a numpy float64 scalar (np.generic): a different dynjax path
    rows.append(run_row("1b. scalar `x + 1.0` (np.float64)", dj_scalar, jx_scalar, np_scalar,
                        (np.float64(1.5),), None, n(50000), 2000, n(50000)))
    rows[-1]["key"] = "dispatch"
    # 1c-1e. dispatch with Python scalars and a small array (issue 13's target 4)
    for label, arg in (("1c. scalar `x + 1.0` (Python float)", 1.5), ("1d. scalar `x + 1.0` (Python int)", 3),
                       ("1e. `x + 1.0`, np.ones(10)", np.ones(10))):
        rows.append(run_row(label, dj_scalar, jx_scalar, np_scalar, (arg,), None, n(50000), 2000, n(50000)))
        rows[-1]["key"] = "dispatch"
    # 2. the seed's overview program
    rows.append(run_row("2. overview `circuit(5)` (new: 6)", dj_circuit, jx_circuit, np_circuit,
                        (5,), (6,), n(30000), 1000, n(30000)))
    # 3. sum(sin(x) * 2), dynamic length 10 (new: 11)
    rows.append(run_row("3. `sum(sin(x)*2)`, n=10 (new: 11)", dj_sumsin, jx_sumsin, np_sumsin,
                        (np.arange(10.0),), (np.arange(11.0),), n(30000), 1000, n(30000)))
    # 4. for_loop 1000 x (a + b * c), 1e5 f64 (new: 1e5 + 1)
    m = 100_000
    abc = tuple(rng.standard_normal(m) * 1e-3 for _ in range(3))
    abc2 = tuple(rng.standard_normal(m + 1) * 1e-3 for _ in range(3))
    rows.append(run_row("4. for_loop 1000 × `a + b*c`, 1e5 f64 (new: 1e5+1)", dj_axpy, jx_axpy,
                        np_axpy, abc, abc2, n(60), 3, n(15)))
    rows[-1]["key"] = "axpy"
    # 5. for_loop 10 x (x @ B), 512x512 f64 (new: x 513x512)
    B = rng.standard_normal((512, 512)) / np.sqrt(512)
    X = rng.standard_normal((512, 512))
    X2 = rng.standard_normal((513, 512))
    rows.append(run_row("5. for_loop 10 × `x @ B`, 512×512 f64 (new: 513×512)", dj_matmul,
                        jx_matmul, np_matmul, (X, B), (X2, B), n(100), 3, n(30)))
    rows[-1]["key"] = "matmul"
    # 6. grad of a 1000-step for_loop, 1e5 f64 (new: 1e5 + 1)
    cb = (rng.standard_normal(m), rng.standard_normal(m))
    cb2 = (rng.standard_normal(m + 1), rng.standard_normal(m + 1))
    rows.append(run_row("6. `grad` of for_loop 1000 × `c + 1e-3*sin(c)*b`, 1e5 f64 (new: 1e5+1)",
                        dj_grad_loop, jx_grad_loop, np_grad_loop, cb, cb2, n(20), 2, n(3)))
    rows[-1]["key"] = "grad"
    # 7. vmap of a per-example 64x64 matmul + tanh over a batch of 1000 (new: 1001)
    W = rng.standard_normal((64, 64)) / 8
    Xb = rng.standard_normal((1000, 64, 64))
    Xb2 = rng.standard_normal((1001, 64, 64))
    rows.append(run_row("7. `vmap` of `tanh(x @ W)`, 1000 × 64×64 f64 (new: 1001)", dj_vmap_matmul,
                        jx_vmap_matmul, np_vmap_matmul, (Xb, W), (Xb2, W), n(200), 5, n(50)))
    rows[-1]["key"] = "vmap"
    # 8. a boolean mask: the kept count is known only at run time (jax: where, static shape)
    xm = rng.standard_normal(1_000_000)
    rows.append(run_row("8. `sum(x[x > 0]**2)`, 1e6 f64 (jax: `where`; new: 1e6+1)", dj_mask, jx_mask,
                        np_mask, (xm,), (rng.standard_normal(1_000_001),), n(60), 3, n(60)))
    rows[-1]["key"] = "mask"
    # 9. scatter-add with repeated indices
    ii = rng.integers(0, 1_000_000, size=100_000)
    rows.append(run_row("9. `x.at[i].add(1.0)`, 1e6 f64, 1e5 indices (new: 1e5+1)", dj_scatter_add,
                        jx_scatter_add, np_scatter_add, (xm, ii),
                        (xm, rng.integers(0, 1_000_000, size=100_001)), n(100), 3, n(100)))

    # 10-12. new sizes: 50 distinct sizes in 1..1000 after a first call (issue 13's target 1)
    sizes = [int(v) for v in rng.choice(np.arange(1, 1001), 51, replace=False)]
    rows.append(new_sizes_row("10. `sum(sin(x)*2)` at 50 new sizes in 1..1000 (new: total)", dj_sumsin,
                              jx_sumsin, np_sumsin, lambda k: rng.standard_normal(k), sizes, "newsizes"))
    rows.append(new_sizes_row("11. `tanh(x @ W)`, x n×64, at 50 new n in 1..1000 (new: total)", dj_rowmatmul,
                              jx_rowmatmul, np_rowmatmul, lambda k: rng.standard_normal((k, 64)), sizes, "newsizes"))
    rows.append(new_sizes_row("12. for_loop 10 × `a*0.5 + sum(a)*1e-3` at 50 new sizes (new: total)", dj_loop_norm,
                              jx_loop_norm, np_loop_norm, lambda k: rng.standard_normal(k), sizes, "newsizes"))
    # 13-14. loops whose carried arrays grow (issue 13's target 3); jax: padded to the final size
    rows.append(run_row("13. for_loop appending 1 element × 1000 (jax: padded buffer)", dj_append, jx_append,
                        np_append, (1000,), None, n(300), 5, n(30)))
    rows[-1]["key"] = "append"
    rows.append(run_row("14. while_loop doubling × 10, from 3 elements (jax: padded)", dj_doubling, jx_doubling,
                        np_doubling, (np.arange(3.0),), None, n(1000), 5, n(300)))
    rows[-1]["key"] = "doubling"

    print_table(rows)


# the targets per row key: (label, test(row, steady ratio, first ratio, new-size ratio))
TARGETS = {
    "scalar": [("steady ≤2x", lambda r, rs, rf, rn: rs <= 2.0)],
    "dispatch": [("steady ≤1.2x", lambda r, rs, rf, rn: rs <= 1.2)],   # issue 13
    "axpy": [("steady ≤1.2x", lambda r, rs, rf, rn: rs <= 1.2)],
    "matmul": [("steady ≤1.2x", lambda r, rs, rf, rn: rs <= 1.2)],
    "vmap": [("steady ≤1.2x", lambda r, rs, rf, rn: rs <= 1.2)],
    "grad": [("steady ≤1.5x", lambda r, rs, rf, rn: rs <= 1.5)],
    # issue 13: a new size without a compile; growing loops on device
    "newsizes": [("new sizes ≤0.2x", lambda r, rs, rf, rn: rn <= 0.2)],
    "append": [("first ≤1 s", lambda r, rs, rf, rn: r["dj_first"] <= 1.0),
               ("steady ≤3x", lambda r, rs, rf, rn: rs <= 3.0)],
    "doubling": [("steady ≤1.5x", lambda r, rs, rf, rn: rs <= 1.5)],
    # issue 22: a mask selection feeding a sum runs as the masked (where) form
    "mask": [("steady ≤1.5x", lambda r, rs, rf, rn: rs <= 1.5)],
}
NO_FIRST_CALL_TARGET = {"newsizes", "append", "doubling"}


def print_table(rows):
    head = ["workload", "dynjax first", "jax first", "dynjax 2nd", "jax 2nd",
            "dynjax steady", "jax steady", "numpy steady", "dynjax new size", "jax new size",
            "steady dynjax/jax", "first dynjax/jax", "new-size dynjax/jax",
            "Catalyst (jax) ref.¹", "targets²"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] + ["---:"] * (len(head) - 2) + ["---"]) + "|")
    all_met = True
    for r in rows:
        rs = ratio(r["dj_steady"], r["jx_steady"])
        rf = ratio(r["dj_first"], r["jx_first"])
        rn = ratio(r["dj_new"], r["jx_new"])
        key = r.get("key")
        targets = []
        for label, test in TARGETS.get(key, []):
            ok = test(r, rs, rf, rn)
            targets.append(f"{label}: {'met' if ok else 'NOT met'}")
            all_met &= ok
        if key == "newsizes":
            targets[-1] += f" (slowest new size {fmt(r['dj_new_worst'])})"
        if key == "mask":   # jax compiles another program (where): its first call is a reference
            targets.append("first: reference only³")
        elif key not in NO_FIRST_CALL_TARGET:
            ok = rf <= 2.0
            targets.append(f"first ≤2x: {'met' if ok else 'NOT met'}")
            all_met &= ok
        ref = CATALYST.get(key)
        ref_s = f"{fmt(ref[0])} ({fmt(ref[1])})" if ref else "—"
        cells = [r["name"], fmt(r["dj_first"]), fmt(r["jx_first"]), fmt(r["dj_second"]),
                 fmt(r["jx_second"]), fmt(r["dj_steady"]), fmt(r["jx_steady"]), fmt(r["np_steady"]),
                 fmt(r["dj_new"]), fmt(r["jx_new"]), fmt_ratio(rs), fmt_ratio(rf), fmt_ratio(rn),
                 ref_s, "; ".join(targets)]
        print("| " + " | ".join(cells) + " |")
    print()
    print("¹ The issue's numbers for Catalyst `@qjit` on this kind of machine, with its jax.jit "
          "number in parentheses (steady state per call).\n")
    print("² Targets: steady-state dispatch (row 1) within 2x of jax.jit, with numpy or Python "
          "scalars and small arrays (rows 1b-1e) within 1.2x; rows 4 and 5 steady state within 1.2x "
          "of jax.jit; every first call within 2x of jax.jit's; 50 new sizes in at most 0.2x of "
          "jax.jit's time (rows 10-12); the growing loops' first call within 1 s and steady state "
          "within 3x (row 13) and 1.5x (row 14) of a padded jax.jit version; row 8 steady state within "
          "1.5x of jax.jit's `where` form. "
          f"All targets met: {'yes' if all_met else 'NO'}.\n")
    print("⁴ Rows 10-12: a first call at one size, then the first calls at 50 other sizes; the new-size "
          "columns are their total (dynjax: padded size buckets, the next bucket compiled ahead in the "
          "background; jax.jit: a retrace and a compile per size); steady state at the first size once its "
          "exact executable is compiled. Rows 13-14: loops whose carried arrays grow run on device within "
          "capacities that grow fourfold; jax.jit runs a hand-padded static-shape version.\n")
    print("³ jax.jit cannot compile `x[x > 0]` (a size that comes from the data); its column "
          "times the static-shape rewrite `sum(where(x > 0, x, 0)**2)`. dynjax traces the "
          "selection (a data-dependent size) and, since its values only feed a sum, runs it as that "
          "same masked sum: one executable with no scatter or gather "
          "(`execution/masked_reductions.py`).\n")
    caches = "; ".join(f"{r['name'].split('.')[0]}: traces {r['dj_cache']['traces']}, "
                       f"compilations {r['dj_cache']['compilations']} exact + "
                       f"{r['dj_cache']['padded_compilations']} padded, "
                       f"host steps {r['dj_cache']['host_steps']}" for r in rows)
    print(f"dynjax cache_info after each row — {caches}.\n")
    import jaxlib
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, jaxlib {jaxlib.__version__}, "
          f"jax {jax.__version__}, {os.cpu_count()} CPUs, load average at the end "
          f"{os.getloadavg()[0]:.2f}.")


if __name__ == "__main__":
    main()
