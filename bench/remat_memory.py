"""Peak memory of ``grad`` through a long chain of steps, with and without ``checkpoint`` on
the step.

    python bench/remat_memory.py [--program scan|unrolled|mlp] [--steps N] [--n 100000] [--variants ...]

Programs (loss: ``sum`` of the final carry; gradient with respect to the initial carry):

* ``scan`` (default, 1000 steps): ``c -> c + 1e-3 * (sin(c) * c + cos(c))`` over ``n``
  float64 elements, in ``lax.scan``;
* ``unrolled`` (200 steps): the same step called in a Python loop (one long straight line
  of equations);
* ``mlp`` (100 steps, unrolled): a residual block ``c -> c + 0.1 * tanh(c @ W1) @ W2`` on
  ``c`` of shape ``(n / 100, 100)``, the hidden layer 4x wider: the step's intermediates
  are 8x its carry, which is where rematerialization pays off.

Variants: dynjax compiled (``qjit(grad(loss))``, abstracted axis), dynjax eager
(``grad(loss)``), and ``jax.jit(jax.grad(loss))``, each with and without ``checkpoint`` /
``jax.checkpoint`` on the step.

Each variant runs in a fresh subprocess, which reports ``ru_maxrss`` (the peak resident set
size) minus its value after the imports and the input (so the delta includes the compile and
the run), plus, for the compiled variants, XLA's buffer assignment of the executable
(``temp``: what a run allocates besides its arguments and outputs, i.e. the stored residuals).
Every variant's gradient is checked against a numpy gradient written by hand (max abs error
relative to the max abs gradient). Prints one markdown table.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

VARIANTS = ("dynjax-qjit", "dynjax-qjit-checkpoint", "dynjax-eager", "dynjax-eager-checkpoint",
            "jax-jit", "jax-jit-checkpoint")


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0   # KiB on Linux


def weights(n: int):
    """The mlp program's carry shape and weights: ``c`` is ``(n // 100, 100)``, the hidden
    layer 4x wider."""
    import numpy as np
    rng = np.random.default_rng(0)
    d = 100
    return (n // d, d), rng.normal(size=(d, 4 * d)) / np.sqrt(d), rng.normal(size=(4 * d, d)) / np.sqrt(4 * d)


def numpy_grad(c0, steps, program):
    """The gradient by hand, in numpy."""
    import numpy as np
    if program != "mlp":   # the product of one step's derivatives, carried forwards
        c, g = c0.copy(), np.ones_like(c0)
        for _ in range(steps):
            g = g * (1.0 + 1e-3 * np.cos(c) * c)
            c = c + 1e-3 * (np.sin(c) * c + np.cos(c))
        return g
    _, w1, w2 = weights(c0.size)
    c, hs = c0, []
    for _ in range(steps):
        h = np.tanh(c @ w1)
        hs.append(h)
        c = c + 0.1 * h @ w2
    g = np.ones_like(c0)
    for h in reversed(hs):
        g = g + ((0.1 * g @ w2.T) * (1.0 - h * h)) @ w1.T
    return g


def make_loss(np_, scan, checkpoint, program, steps, n):
    """The loss of ``program`` written with ``np_`` / ``scan`` (dynjax's or jax's), the step
    wrapped in ``checkpoint`` if given."""
    if program == "mlp":
        _, w1, w2 = weights(n)

        def step(c, _):
            return c + 0.1 * np_.tanh(c @ w1) @ w2, None
    else:
        def step(c, _):
            return c + 1e-3 * (np_.sin(c) * c + np_.cos(c)), None
    if checkpoint is not None:
        step = checkpoint(step)

    def loss(c):
        if program == "scan":
            c = scan(step, c, None, length=steps)[0]
        else:
            for _ in range(steps):
                c = step(c, None)[0]
        return np_.sum(c)
    return loss


def run_variant(name: str, steps: int, n: int, program: str) -> dict:
    """In this (fresh) process: build the variant, measure one call."""
    os.environ["DYNJAX_DISABLE_DISK_CACHE"] = "1"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    shape = weights(n)[0] if program == "mlp" else (n,)
    c0 = np.linspace(-1.0, 1.0, int(np.prod(shape))).reshape(shape)
    ck = name.endswith("checkpoint")
    xla = {}
    if name.startswith("dynjax"):
        import dynjax
        import dynjax.numpy as jnp
        from dynjax import lax
        fn = dynjax.grad(make_loss(jnp, lax.scan, dynjax.checkpoint if ck else None, program, steps, n))
        if "qjit" in name:
            fn = dynjax.qjit(fn, abstracted_axes=({0: "n"},))
        base = maxrss_mb()
        t0 = time.perf_counter()
        g = fn(c0)
        seconds = time.perf_counter() - t0
        peak = maxrss_mb()
        if "qjit" in name:
            from dynjax import runtime
            exes = [s.last_executable for s in fn._entry().program.segments() if s.last_executable]
            for exe in exes:
                for k, v in runtime.xla_memory_analysis(exe).items():
                    xla[k] = xla.get(k, 0) + v
    else:
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jjnp
        fn = jax.jit(jax.grad(make_loss(jjnp, jax.lax.scan, jax.checkpoint if ck else None, program, steps, n)))
        base = maxrss_mb()
        t0 = time.perf_counter()
        g = np.asarray(fn(c0).block_until_ready())
        seconds = time.perf_counter() - t0
        peak = maxrss_mb()
        st = fn.lower(c0).compile().memory_analysis()
        if st is not None:
            xla = {k: int(getattr(st, f"{k}_size_in_bytes")) for k in ("argument", "output", "alias", "temp")}
    want = numpy_grad(c0, steps, program)
    err = float(np.max(np.abs(g - want)) / np.max(np.abs(want)))
    return {"variant": name, "peak_delta_mb": peak - base, "seconds": seconds, "xla": xla,
            "max_rel_err_vs_numpy": err}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--program", choices=("scan", "unrolled", "mlp"), default="scan")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS))
    ap.add_argument("--one", help=argparse.SUPPRESS)   # run one variant in this process
    args = ap.parse_args()
    if args.steps is None:
        args.steps = {"scan": 1000, "unrolled": 200, "mlp": 100}[args.program]
    if args.one:
        print(json.dumps(run_variant(args.one, args.steps, args.n, args.program)))
        return
    rows = []
    for v in args.variants:
        out = subprocess.run([sys.executable, __file__, "--one", v, "--steps", str(args.steps), "--n", str(args.n),
                              "--program", args.program],
                             capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{v}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
            continue
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    carries = args.steps * args.n * 8 / 2**20
    print(f"grad of a {args.steps}-step {args.program} chain over {args.n} float64 elements "
          f"(one carry per step: {carries:.0f} MiB)\n")
    print("| variant | peak RSS - baseline (MiB) | XLA temp buffers (MiB) | first call (s) | max rel. err vs numpy |")
    print("|---|---|---|---|---|")
    for r in rows:
        temp = r["xla"].get("temp")
        temp_s = f"{temp / 2**20:.0f}" if temp is not None else "-"
        print(f"| {r['variant']} | {r['peak_delta_mb']:.0f} | {temp_s} | {r['seconds']:.2f} | "
              f"{r['max_rel_err_vs_numpy']:.1e} |")


if __name__ == "__main__":
    main()
