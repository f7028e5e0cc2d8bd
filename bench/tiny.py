"""Tiny problems: dynjax's host tier beside XLA, jax.jit, numpy and torch (issue 22, target 6).

    pip install -e ".[bench]" && python bench/tiny.py [--rounds 5]

Programs of a few to a thousand elements, called again and again at one size. Per program
and framework: the median time per call (of ``--rounds`` rounds, the frameworks interleaved
in each), and the ratios to numpy. Then the same kinds of programs at a new size at every
call (``--new-sizes`` distinct sizes in 2..300 in a random order, dynjax with the leading
axis abstracted; the frameworks timed in turn, each one first at every third call): the mean
time per call of dynjax, numpy and torch (eager), each size's first call included (the mean;
the median too). Columns: dynjax as a user gets it (the host tier serves
what it times below its budget), dynjax with ``DYNJAX_HOST_TIER=off`` (XLA), ``jax.jit``,
``torch.compile`` (``dynamic=False``; where torch is installed) and numpy. Every result is
checked against numpy. "tier" says which tier dynjax used (host or XLA).
"""
from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time

os.environ.setdefault("DYNJAX_DISABLE_DISK_CACHE", "1")
os.environ.setdefault("JAX_ENABLE_COMPILATION_CACHE", "false")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "frontend"))
import dynjax  # noqa: E402
import dynjax.numpy as dnp  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jjnp  # noqa: E402

jax.config.update("jax_enable_x64", True)

try:
    import torch  # noqa: E402
except ImportError:   # pragma: no cover - optional peer
    torch = None


def _softmax(m, x):
    e = m.exp(x - m.max(x, axis=-1, keepdims=True))
    return e / m.sum(e, axis=-1, keepdims=True)


def _torch_softmax(x):
    return torch.softmax(x, -1)


# name, function of a numpy-like module, arguments, torch function (or None)
PROGRAMS = [
    ("x + 1.0, 0-d", lambda m, x: x + 1.0, [np.array(2.0)], lambda x: x + 1.0),
    ("x + 1.0, 10 elements", lambda m, x: x + 1.0, [np.ones(10)], lambda x: x + 1.0),
    ("sum(sin(x) * 2), 10", lambda m, x: m.sum(m.sin(x) * 2.0), [np.linspace(0, 1, 10)],
     lambda x: torch.sum(torch.sin(x) * 2.0)),
    ("x * 2 + 1 - x * x, 100", lambda m, x: x * 2.0 + 1.0 - x * x, [np.linspace(0, 1, 100)],
     lambda x: x * 2.0 + 1.0 - x * x),
    ("tanh(x @ W1) @ W2, 8x4", lambda m, x, w1, w2: m.tanh(x @ w1) @ w2,
     [np.ones((8, 4)) * 0.1, np.ones((4, 16)) * 0.2, np.ones((16, 2))],
     lambda x, w1, w2: torch.tanh(x @ w1) @ w2),
    ("softmax, 5x3", _softmax, [np.linspace(-1, 1, 15).reshape(5, 3)], _torch_softmax),
    ("softmax, 30x30", _softmax, [np.linspace(-1, 1, 900).reshape(30, 30)], _torch_softmax),
    ("tanh(x), 1000", lambda m, x: m.tanh(x), [np.linspace(-1, 1, 1000)], lambda x: torch.tanh(x)),
]


# name, function of a numpy-like module, arguments at size n, torch function
NEW_SIZES = [
    ("x + 1.0", lambda m, x: x + 1.0, lambda n: [np.linspace(0, 1, n)], lambda x: x + 1.0),
    ("sum(sin(x) * 2)", lambda m, x: m.sum(m.sin(x) * 2.0), lambda n: [np.linspace(0, 1, n)],
     lambda x: torch.sum(torch.sin(x) * 2.0)),
    ("tanh(x @ W1) @ W2, n x 4", lambda m, x, w1, w2: m.tanh(x @ w1) @ w2,
     lambda n: [np.linspace(-1, 1, 4 * n).reshape(n, 4), np.ones((4, 16)) * 0.2, np.ones((16, 2))],
     lambda x, w1, w2: torch.tanh(x @ w1) @ w2),
    ("softmax, n x 3", _softmax, lambda n: [np.linspace(-1, 1, 3 * n).reshape(n, 3)], _torch_softmax),
]


def new_sizes(count: int):
    """The mean time per call at a new size every call (see the module docstring)."""
    sizes = np.random.default_rng(0).permutation(np.arange(2, 301))[:count]
    print(f"\n{count} calls at distinct sizes in 2..300 (the first call at each size; mean, and median"
          " in parentheses: the mean holds dynjax's first call, which traces):\n")
    print("| program | dynjax | numpy | " + ("torch | " if torch is not None else "") + "dynjax / numpy | dynjax runs |")
    print("|---|---:|---:|" + ("---:|" if torch is not None else "") + "---:|---|")
    for name, fn, make, torch_fn in NEW_SIZES:
        inputs = [make(int(n)) for n in sizes]
        nargs = len(inputs[0])
        f = dynjax.qjit(lambda *a, _f=fn: _f(dnp, *a), abstracted_axes=({0: "n"},) + (None,) * (nargs - 1))
        peers = {"dynjax": f, "numpy": functools.partial(fn, np)}
        if torch is not None:
            peers["torch"] = lambda *a, _t=torch_fn: _t(*[torch.from_numpy(x) for x in a])
        times = {k: [] for k in peers}
        order = list(peers.items())
        for k, args in enumerate(inputs):
            want = fn(np, *args)
            # each framework timed first in turn: the first call after the checks below runs
            # on cold caches (0.5-1 us more for a program of a microsecond), and the one after
            # it finds numpy's machinery warm
            for label, g in order[k % len(order):] + order[:k % len(order)]:
                start = time.perf_counter()
                got = g(*args)
                times[label].append(time.perf_counter() - start)
                np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13, atol=1e-14, err_msg=f"{name}: {label}")
        mean = {k: statistics.mean(v) for k, v in times.items()}
        median = {k: statistics.median(v) for k, v in times.items()}
        cell = lambda k: f"{mean[k] * 1e6:.1f} µs ({median[k] * 1e6:.1f} µs)"  # noqa: E731
        info = f.cache_info()
        runs = (f"{info['host_programs']} host programs built, {info['host_reuses']} calls served by one "
                f"of them, {info['compilations'] + info['padded_compilations']} compiles")
        print(f"| {name} | {cell('dynjax')} | {cell('numpy')} | " + (f"{cell('torch')} | " if torch is not None else "")
              + f"{mean['dynjax'] / mean['numpy']:.1f}x ({median['dynjax'] / median['numpy']:.1f}x) | {runs} |")


def _time(fn, args, number):
    start = time.perf_counter()
    for _ in range(number):
        fn(*args)
    return (time.perf_counter() - start) / number


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=2000, help="calls per round and framework")
    parser.add_argument("--new-sizes", type=int, default=200, help="calls at distinct sizes (0: none)")
    opts = parser.parse_args()
    rows = []
    for name, fn, args, torch_fn in PROGRAMS:
        expected = fn(np, *args)
        auto = dynjax.qjit(lambda *a, _f=fn: _f(dnp, *a))
        os.environ["DYNJAX_HOST_TIER"] = "off"
        xla = dynjax.qjit(lambda *a, _f=fn: _f(dnp, *a))
        xla(*args)
        del os.environ["DYNJAX_HOST_TIER"]
        jitted = jax.jit(lambda *a, _f=fn: _f(jjnp, *a))
        peers = {"dynjax": auto, "dynjax XLA": xla,
                 "jax.jit": lambda *a, _j=jitted: _j(*a).block_until_ready(),
                 "numpy": functools.partial(fn, np)}   # (a C-level call layer: ~50 ns)
        if torch is not None and torch_fn is not None:
            compiled = torch.compile(torch_fn, dynamic=False)
            targs = [torch.from_numpy(a) for a in args]
            peers["torch.compile"] = lambda *a, _c=compiled, _t=targs: _c(*_t)
        for label, f in peers.items():
            got = f(*args)
            got = got.numpy() if hasattr(got, "numpy") and not isinstance(got, np.ndarray) else np.asarray(got)
            np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-14, err_msg=f"{name}: {label}")
        times = {label: [] for label in peers}
        for _ in range(opts.rounds):
            for label, f in peers.items():
                times[label].append(_time(f, args, opts.number))
        info = auto.cache_info()
        tier = "host" if info["host_runs"] else "XLA"
        rows.append((name, tier, {k: statistics.median(v) for k, v in times.items()}))
    labels = ["dynjax", "dynjax XLA", "jax.jit"] + (["torch.compile"] if torch is not None else []) + ["numpy"]
    print("| program | dynjax tier | " + " | ".join(labels) + " | dynjax / numpy | dynjax / jax.jit |")
    print("|---|---|" + "---:|" * (len(labels) + 2))
    for name, tier, t in rows:
        cells = [f"{t[k] * 1e6:.2f} µs" if k in t else "—" for k in labels]
        print(f"| {name} | {tier} | " + " | ".join(cells) +
              f" | {t['dynjax'] / t['numpy']:.2f}x | {t['dynjax'] / t['jax.jit']:.2f}x |")
    if opts.new_sizes:
        new_sizes(opts.new_sizes)
    print(f"\npython {sys.version.split()[0]}, numpy {np.__version__}, jax {jax.__version__}"
          + (f", torch {torch.__version__}" if torch is not None else "")
          + f", {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
