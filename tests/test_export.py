"""dynjax.export: programs exported here are loaded and called in a fresh process that never
sees their Python source (tests/export_runner.py), at sizes 0, 1, 5 and 1000, for every
control-flow kind; numpy, in this process, is the oracle. Also: the checks of ``call``'s
arguments, the blob's integrity checks, and programs that cannot be exported."""
import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import cond, for_loop, lax, qjit, while_loop
from dynjax.export import ShapeDtypeStruct, deserialize, export, symbolic_shape

SIZES = (0, 1, 5, 1000)
HERE = os.path.dirname(os.path.abspath(__file__))
F64 = np.float64


def vec(name="n"):
    return ShapeDtypeStruct(symbolic_shape(name), F64)


# --- the programs, each with its numpy oracle and its arguments at size n ----------------------
def straight_line(x):
    return jnp.sin(x) * 2 + jnp.sum(x)


def straight_line_np(x):
    return np.sin(x) * 2 + np.sum(x)


def catalyst_for(x):
    @for_loop(0, 10, 1)
    def loop(i, a):
        return a * 0.5 + x * i
    return loop(x)


def catalyst_for_np(x):
    a = x
    for i in range(10):
        a = a * 0.5 + x * i
    return a


def catalyst_while(x):
    @while_loop(lambda a, k: k < x.shape[0] % 7 + 2)
    def loop(a, k):
        return a * 1.5 - 1.0, k + 1
    return loop(x, 0)[0]


def catalyst_while_np(x):
    a = x
    for _ in range(x.shape[0] % 7 + 2):
        a = a * 1.5 - 1.0
    return a


def catalyst_cond(x):
    @cond(jnp.sum(x) > 0.0)
    def branch():
        return x * 2.0

    @branch.otherwise
    def branch():
        return x - 1.0
    return branch()


def catalyst_cond_np(x):
    return x * 2.0 if np.sum(x) > 0 else x - 1.0


def lax_loops(x, k):
    carry, ys = lax.scan(lambda c, v: (c + v, c * v), 0.0, x)
    f = lax.fori_loop(0, 5, lambda i, a: a + i * x, x)
    s = lax.switch(k, [lambda a: a + 1.0, lambda a: a * 3.0, lambda a: -a], x)
    w = lax.while_loop(lambda a: jnp.sum(jnp.abs(a)) > 1.0, lambda a: a * 0.5, x)
    return carry, ys, f, s, w


def lax_loops_np(x, k):
    c, ys = 0.0, []
    for v in x:
        ys.append(c * v)
        c = c + v
    f = x.copy()
    for i in range(5):
        f = f + i * x
    s = [x + 1.0, x * 3.0, -x][int(k)]
    w = x.copy()
    while np.sum(np.abs(w)) > 1.0:
        w = w * 0.5
    return c, np.array(ys, F64), f, s, w


def resizing_for(x):
    @for_loop(0, 3, 1)
    def loop(i, a):
        return jnp.concatenate([a, a * i])
    return loop(x)


def resizing_for_np(x):
    a = x
    for i in range(3):
        a = np.concatenate([a, a * i])
    return a


def growing_while(x):
    @while_loop(lambda a: a.shape[0] < x.shape[0] + 7)
    def loop(a):
        return jnp.concatenate([a, jnp.ones(1) * a.shape[0]])
    return loop(x)


def growing_while_np(x):
    a = x
    while a.shape[0] < x.shape[0] + 7:
        a = np.concatenate([a, [float(a.shape[0])]])
    return a


def data_dependent(x):
    pos = x[x > 0]
    return pos * 2.0, jnp.sum(pos)


def data_dependent_np(x):
    pos = x[x > 0]
    return pos * 2.0, np.sum(pos)


def size_from_int(n):
    return jnp.arange(n) * 2.0 + jnp.ones(n)


def size_from_int_np(n):
    return np.arange(int(n)) * 2.0 + 1.0


def shared_dims(d, m):
    """A dict in, a dict out, a dim shared by two arguments, and a custom_jvp call (relu)."""
    return {"sum": d["x"] + m @ d["y"], "relu": dynjax.nn.relu(d["x"])}


def shared_dims_np(d, m):
    return {"relu": np.maximum(d["x"], 0), "sum": d["x"] + m @ d["y"]}


def _vector(n, seed=0):
    return np.random.default_rng(seed + n).standard_normal(n)


# name -> (function, specs, oracle, arguments at size n)
CASES = {
    "straight_line": (straight_line, (vec(),), straight_line_np, lambda n: (_vector(n),)),
    "for_loop": (qjit(catalyst_for), (vec(),), catalyst_for_np, lambda n: (_vector(n),)),
    "while_loop": (catalyst_while, (vec(),), catalyst_while_np, lambda n: (_vector(n),)),
    "cond": (catalyst_cond, (vec(),), catalyst_cond_np, lambda n: (_vector(n),)),
    "lax_scan_fori_switch_while": (lax_loops, (vec(), ShapeDtypeStruct((), np.int64)), lax_loops_np,
                                   lambda n: (_vector(n), np.int64(n % 3))),
    "resizing_for_loop": (resizing_for, (vec(),), resizing_for_np, lambda n: (_vector(n),)),
    "growing_while_loop": (growing_while, (vec(),), growing_while_np, lambda n: (_vector(n),)),
    "data_dependent_size": (data_dependent, (vec(),), data_dependent_np, lambda n: (_vector(n),)),
    "size_from_int": (size_from_int, (ShapeDtypeStruct((), np.int64),), size_from_int_np,
                      lambda n: (np.int64(n),)),
    "shared_dims_pytree_custom_jvp": (
        shared_dims, ({"x": vec(), "y": ShapeDtypeStruct(symbolic_shape("m"), F64)},
                      ShapeDtypeStruct(symbolic_shape("n, m"), F64)),
        shared_dims_np, lambda n: ({"x": _vector(n), "y": _vector(3, 7)},
                                   np.arange(3.0 * n).reshape(n, 3) / (n + 1))),
}


def _flat(tree):
    return dynjax.tree_flatten(tree)[0]


def test_round_trips_in_a_fresh_process(tmp_path):
    """Every case exported here, called in one child process at every size."""
    manifest, expected = [], {}
    for name, (fun, specs, oracle, make_args) in CASES.items():
        blob = tmp_path / f"{name}.dynjax"
        blob.write_bytes(export(fun)(*specs).serialize())
        calls = []
        for n in SIZES:
            args = make_args(n)
            flat = _flat(args)
            np.savez(tmp_path / f"{name}_{n}_args.npz", **{f"a{i}": np.asarray(a) for i, a in enumerate(flat)})
            calls.append({"args": str(tmp_path / f"{name}_{n}_args.npz"), "out": str(tmp_path / f"{name}_{n}_out.npz")})
            expected[name, n] = (_flat(oracle(*args)), calls[-1]["out"])
        manifest.append({"blob": str(blob), "calls": calls})
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, os.path.join(HERE, "export_runner.py"), str(path)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for (name, n), (want, out) in expected.items():
        with np.load(out) as data:
            assert "error" not in data.files, f"{name} at size {n}: {data['error']}"
            got = [data[f"r{i}"] for i in range(len(data.files))]
        assert len(got) == len(want), (name, n)
        for g, w in zip(got, want):
            w = np.asarray(w)
            assert g.shape == w.shape, (name, n, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=f"{name} at size {n}")

