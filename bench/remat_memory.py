"""Peak memory of ``grad`` through a long chain of steps, with and without ``checkpoint`` on
the step.

    python bench/remat_memory.py [--program scan|unrolled] [--steps N] [--n 100000] [--variants ...]

The step: ``c -> c + 1e-3 * (sin(c) * c + cos(c))`` over ``n`` float64 elements, ``steps``
times, loss ``sum`` of the final carry, gradient with respect to the initial carry. The
``scan`` program (default: 1000 steps) runs the steps in ``lax.scan``; the ``unrolled`` one
(default: 200 steps) calls the step in a Python loop, so the program is one long straight
line of equations. Variants: dynjax compiled (``qjit(grad(loss))``, abstracted axis), dynjax
eager (``grad(loss)``), and ``jax.jit(jax.grad(loss))``, each with and without
``checkpoint`` / ``jax.checkpoint`` on the step.

Each variant runs in a fresh subprocess, which reports ``ru_maxrss`` (the peak resident set
size) minus its value after the imports and the input (so the delta includes the compile and
the run), plus, for the compiled variants, XLA's buffer assignment of the executable
(``temp``: what a run allocates besides its arguments and outputs, i.e. the stored residuals).
Every variant's gradient is checked against the plain dynjax eager one (and the closed form
of one step's derivative chained by numpy). Prints one markdown table.
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


def numpy_grad(c0, steps):
    """The gradient by hand: the product of one step's derivatives, carried forwards."""
    import numpy as np
    c, g = c0.copy(), np.ones_like(c0)
    for _ in range(steps):
        g = g * (1.0 + 1e-3 * np.cos(c) * c)
        c = c + 1e-3 * (np.sin(c) * c + np.cos(c))
    return g


def chain(step, c, steps, scan, program):
    """``steps`` applications of ``step`` to ``c``: in ``scan``, or unrolled in Python."""
    if program == "scan":
        return scan(step, c, None, length=steps)[0]
    for _ in range(steps):
        c = step(c, None)[0]
    return c


def run_variant(name: str, steps: int, n: int, program: str) -> dict:
    """In this (fresh) process: build the variant, measure one call."""
    os.environ["DYNJAX_DISABLE_DISK_CACHE"] = "1"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    c0 = np.linspace(-1.0, 1.0, n)
    xla = {}
    if name.startswith("dynjax"):
        import dynjax
        import dynjax.numpy as jnp
        from dynjax import lax

        def step(c, _):
            return c + 1e-3 * (jnp.sin(c) * c + jnp.cos(c)), None
        if name.endswith("checkpoint"):
            step = dynjax.checkpoint(step)

        def loss(c):
            return jnp.sum(chain(step, c, steps, lax.scan, program))
        fn = dynjax.grad(loss)
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

        def step(c, _):
            return c + 1e-3 * (jjnp.sin(c) * c + jjnp.cos(c)), None
        if name.endswith("checkpoint"):
            step = jax.checkpoint(step)

        def loss(c):
            return jjnp.sum(chain(step, c, steps, jax.lax.scan, program))
        fn = jax.jit(jax.grad(loss))
        base = maxrss_mb()
        t0 = time.perf_counter()
        g = np.asarray(fn(c0).block_until_ready())
        seconds = time.perf_counter() - t0
        peak = maxrss_mb()
        st = fn.lower(c0).compile().memory_analysis()
        if st is not None:
            xla = {k: int(getattr(st, f"{k}_size_in_bytes")) for k in ("argument", "output", "alias", "temp")}
    err = float(np.max(np.abs(g - numpy_grad(c0, steps)) / np.maximum(np.abs(g), 1e-300)))
    return {"variant": name, "peak_delta_mb": peak - base, "seconds": seconds, "xla": xla,
            "max_rel_err_vs_numpy": err}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--program", choices=("scan", "unrolled"), default="scan")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS))
    ap.add_argument("--one", help=argparse.SUPPRESS)   # run one variant in this process
    args = ap.parse_args()
    if args.steps is None:
        args.steps = 1000 if args.program == "scan" else 200
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
