"""dynjax's top-level JAX names against jax: eval_shape, typeof, block_until_ready,
device_put / device_get, jit (and qjit's donate_argnums), pure_callback (eager, compiled at
static and dynamic sizes, in loops and branches, under vmap, not under grad)."""
import json
import math
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import ShapeDtypeStruct as S

jax.config.update("jax_enable_x64", True)


# --- eval_shape, typeof, block_until_ready, device_put / device_get ------------------------------
def test_eval_shape_like_jax():
    def f(x, y):
        return {"a": x @ y, "b": (x.sum(0), x.T)}
    args = (S((3, 4), np.float32), np.ones((4, 5)))
    out = dynjax.eval_shape(f, *args)
    jout = jax.eval_shape(lambda x, y: {"a": x @ y, "b": (x.sum(0), x.T)},
                          jax.ShapeDtypeStruct((3, 4), np.float32), np.ones((4, 5)))
    for a, b in zip(dynjax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(jout)):
        assert isinstance(a, S) and a.shape == b.shape and a.dtype == b.dtype
    # jax.ShapeDtypeStruct arguments are accepted too
    assert dynjax.eval_shape(jnp.sin, jax.ShapeDtypeStruct((2,), np.float32)).shape == (2,)


def test_eval_shape_dynamic_dims():
    x = S((None, 3), np.float64)
    out = dynjax.eval_shape(lambda x: (x[1:], x[x > 0], x.sum(0), jnp.concatenate([x, x])), x)
    assert [o.shape for o in out] == [(None, 3), (None,), (3,), (None, 3)]
    assert dynjax.eval_shape(lambda n: jnp.ones((n, 2), np.int32), 5) == S((None, 2), np.int32)
    with pytest.raises(TypeError):
        dynjax.eval_shape(lambda x: "text", np.ones(2))


def test_shape_dtype_struct_like_jax():
    """JAX's fields and methods; weak types flow as in jax.eval_shape (a weak f64 scalar times an
    f32 array stays f32; strong, it promotes)."""
    s = S((3, 4), np.float32)
    j = jax.ShapeDtypeStruct((3, 4), np.float32)
    assert (s.shape, s.dtype, s.ndim, s.size, s.weak_type, s.sharding) == \
        (j.shape, j.dtype, j.ndim, j.size, j.weak_type, None)
    assert s.update(dtype=np.int32) == S((3, 4), np.int32)
    assert s.update(shape=(2,)).size == 2 and S((None, 2)).size is None
    assert S(5).shape == (5,) and S(np.int64(2)).shape == (2,)
    assert S((), np.float64, weak_type=True) != S((), np.float64)
    for weak_x in (False, True):
        for dtype in (np.float32, np.int32):
            args = [((), np.float64, weak_x), ((4,), dtype, False)]
            got = dynjax.eval_shape(lambda x, y: x * y, *[S(sh, dt, weak_type=w) for sh, dt, w in args])
            want = jax.eval_shape(lambda x, y: x * y,
                                  *[jax.ShapeDtypeStruct(sh, dt, weak_type=w) for sh, dt, w in args])
            assert (got.shape, got.dtype) == (want.shape, want.dtype)
            # dynjax's one difference: a weak scalar of a higher kind than a strong array
            # (f64 weak * i32[4]) gives a strong f64 array (jax: weak), as eager numpy results
            # (which carry no weak flag) do, so eager and compiled agree
            assert got.weak_type == (want.weak_type and dtype is not np.int32)
            # a jax.ShapeDtypeStruct argument keeps its weak type in dynjax too
            foreign = dynjax.eval_shape(lambda x, y: x * y,
                                        *[jax.ShapeDtypeStruct(sh, dt, weak_type=w) for sh, dt, w in args])
            assert foreign.dtype == want.dtype
    out = dynjax.eval_shape(lambda x: x * 2.0, 1.0)
    assert out.weak_type and out.dtype == np.float64
    f = dynjax.qjit(lambda x, y: x * y)
    assert f(np.float64(2.0), np.ones(3, np.float32)).dtype == np.float64
    with pytest.raises(ValueError, match="sizes must be >= 0"):
        S((3, -1))
    with pytest.raises(TypeError, match="shape must be"):
        S((3, "a"))
    with pytest.raises(TypeError, match="unexpected"):
        s.update(colour=1)


def test_typeof_block_device():
    assert str(dynjax.typeof(np.ones((2, 3), np.float32))) == "f32[2,3]"
    tree = {"a": np.ones(2), "b": [1.0]}
    assert dynjax.block_until_ready(tree) is tree
    put = dynjax.device_put({"a": [1.0, 2], "b": jax.numpy.ones(2)})
    assert isinstance(put["a"][0], np.ndarray) and put["a"][1].dtype == np.int64
    np.testing.assert_array_equal(put["b"], np.ones(2))
    assert isinstance(put["b"], np.ndarray)
    got = dynjax.device_get({"a": jax.numpy.arange(3), "b": 2})
    assert isinstance(got["a"], np.ndarray) and got["b"] == 2
    dynjax.device_put(np.ones(2), jax.devices("cpu")[0])
    with pytest.raises(ValueError, match="device"):
        dynjax.device_put(np.ones(2), "gpu")


def test_jit_alias_and_donation():
    f = dynjax.jit(lambda x, n: x * n, static_argnums=1, donate_argnums=0)
    x = np.arange(3.0)
    np.testing.assert_array_equal(f(x, 3), x * 3)
    np.testing.assert_array_equal(x, np.arange(3.0))   # a donated argument stays intact
    assert f.donate_argnums == (0,)

    @dynjax.jit(static_argnames="k", donate_argnames="x", keep_unused=True, inline=True, backend="cpu")
    def g(x, k):
        return x[:k]
    np.testing.assert_array_equal(g(np.arange(4.0), k=2), [0.0, 1.0])
    assert g.donate_argnums == (0,)

    def h(x, n):
        return x
    with pytest.raises(ValueError, match="out of range"):
        dynjax.jit(h, donate_argnums=5)
    with pytest.raises(ValueError, match="not a parameter"):
        dynjax.jit(h, donate_argnames="q")
    with pytest.raises(ValueError, match="static and donated"):
        dynjax.qjit(h, static_argnums=1, donate_argnums=1)
    with pytest.raises(TypeError):
        dynjax.jit(h, donate_argnums="a")
    with pytest.raises(ValueError, match="backend"):
        dynjax.jit(h, backend="gpu")
    with pytest.raises(TypeError, match="in_shardings"):
        dynjax.jit(h, in_shardings=object())
    with pytest.raises(TypeError, match="out_shardings"):
        dynjax.qjit(h, out_shardings=[None, "rows"])


# --- pure_callback -------------------------------------------------------------------------------
def _sort(x):
    return np.sort(x)


def test_pure_callback_eager_like_jax():
    x = np.array([3.0, 1.0, 2.0])
    out = dynjax.pure_callback(_sort, S((3,), np.float64), x)
    jout = jax.pure_callback(_sort, jax.ShapeDtypeStruct((3,), np.float64), x)
    np.testing.assert_array_equal(out, jout)
    # pytrees in and out, keyword arguments, results cast to the declared dtype
    res = dynjax.pure_callback(lambda d, k: {"s": d["a"].sum() * k, "n": 2},
                               {"s": S((), np.float32), "n": S((), np.int32)}, {"a": x}, k=2.0)
    assert res["s"].dtype == np.float32 and res["s"] == 12.0 and res["n"].dtype == np.int32
    with pytest.raises(RuntimeError, match="shape"):
        dynjax.pure_callback(lambda x: x[:2], S((3,), np.float64), x)
    with pytest.raises(ValueError, match="vmap_method"):
        dynjax.pure_callback(_sort, S((3,), np.float64), x, vmap_method="bad")
    with pytest.raises(ValueError, match="unknown size"):
        dynjax.pure_callback(_sort, S((None,), np.float64), x)


def test_pure_callback_compiled_static_and_dynamic():
    calls = []

    def host(x):
        calls.append(x.shape)
        return np.sort(x)[::-1]

    @dynjax.qjit(abstracted_axes={0: "n"})
    def f(x):
        unused = dynjax.pure_callback(host, S(x.shape, x.dtype), x + 1)   # dropped: pure, unused
        del unused
        y = dynjax.pure_callback(host, S(x.shape, x.dtype), x)
        return jnp.cumsum(y) * 2

    for n in (0, 1, 5):
        x = np.random.default_rng(n).normal(size=n)
        calls.clear()
        np.testing.assert_allclose(f(x), np.cumsum(np.sort(x)[::-1]) * 2)
        assert calls == [(n,)]
    assert f.traces == 1

    @dynjax.qjit
    def g(n):   # a result size given by a traced int
        return dynjax.pure_callback(lambda n: np.arange(n) ** 2, S((n,), np.int64), n) + 1
    for n in (0, 1, 4):
        np.testing.assert_array_equal(g(n), np.arange(n) ** 2 + 1)
    assert g.traces == 1
    assert "pure_callback" in g.mlir


def test_pure_callback_in_loop_and_cond():
    @dynjax.qjit
    def f(x, k):
        def body(i, acc):
            return acc + dynjax.pure_callback(lambda a, i: a * i, S(x.shape, x.dtype), x, i)

        acc = dynjax.for_loop(0, k, 1)(body)(jnp.zeros_like(x))
        return dynjax.lax.cond(k > 2, lambda a: dynjax.pure_callback(np.negative, S(a.shape, a.dtype), a),
                               lambda a: a, acc)
    x = np.array([1.0, 2.0])
    for k in (0, 2, 4):
        expected = x * sum(range(k))
        np.testing.assert_allclose(f(x, k), -expected if k > 2 else expected)


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_pure_callback_vmap_like_jax(method):
    seen = []

    def host(a, b):
        seen.append((a.shape, b.shape))
        return a * b + 1

    def f(mod):
        def g(a, b):
            return mod.pure_callback(host, mod.ShapeDtypeStruct(a.shape, a.dtype), a, b, vmap_method=method)
        return g
    a, b = np.arange(6.0).reshape(2, 3), np.array([1.0, 2.0, 3.0])
    out = dynjax.vmap(f(dynjax), in_axes=(0, None))(a, b)
    dyn_seen, seen[:] = list(seen), []
    jout = jax.vmap(f(jax), in_axes=(0, None))(a, b)
    np.testing.assert_array_equal(out, jout)
    assert dyn_seen == seen   # the callback sees the same arguments as in jax
    # compiled, over a dynamic batch
    vf = dynjax.qjit(dynjax.vmap(f(dynjax), in_axes=(0, None)), abstracted_axes=({0: "n"}, None))
    for n in (0, 1, 3):
        a = np.arange(n * 3.0).reshape(n, 3)
        np.testing.assert_array_equal(vf(a, b), a * b + 1)
    with pytest.raises(NotImplementedError, match="vmap_method"):
        dynjax.vmap(lambda a: dynjax.pure_callback(np.sin, S(a.shape, a.dtype), a))(np.ones((2, 2)))


def test_pure_callback_not_differentiable():
    f = lambda x: jnp.sum(dynjax.pure_callback(np.sin, S(x.shape, x.dtype), x))  # noqa: E731
    with pytest.raises(ValueError, match="custom_jvp"):
        dynjax.grad(f)(np.ones(3))
    with pytest.raises(ValueError):
        jax.grad(lambda x: jax.numpy.sum(jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)))(
            np.ones(3))
    # a callback on values that do not depend on the differentiated input is fine
    g = dynjax.grad(lambda x, c: jnp.sum(x * dynjax.pure_callback(np.cos, S(c.shape, c.dtype), c)))
    np.testing.assert_allclose(g(np.ones(3), np.arange(3.0)), np.cos(np.arange(3.0)))

    @dynjax.custom_jvp
    def sin(x):
        return dynjax.pure_callback(np.sin, S(x.shape, x.dtype), x)
    sin.defjvp(lambda p, t: (sin(p[0]), jnp.cos(p[0]) * t[0]))
    np.testing.assert_allclose(dynjax.grad(lambda x: jnp.sum(sin(x)))(np.arange(3.0)), np.cos(np.arange(3.0)))


# --- foreign arrays (jax.Array, __array__, __jax_array__) as dynjax.numpy operands and shapes ---
class _HasArray:
    def __array__(self, dtype=None, copy=None):
        return np.arange(3.0)


class _HasJaxArray:
    def __jax_array__(self):
        return jax.numpy.arange(2.0)


def test_foreign_arrays():
    np.testing.assert_array_equal(jnp.ones(jax.numpy.array([2, 3])), np.ones((2, 3)))
    np.testing.assert_array_equal(jnp.zeros(jax.numpy.int32(3)), np.zeros(3))
    assert jnp.sum(jax.numpy.ones(3)) == 3.0
    np.testing.assert_allclose(jnp.sin(_HasArray()), np.sin(np.arange(3.0)))
    np.testing.assert_allclose(jnp.cos(_HasJaxArray()), np.cos(np.arange(2.0)))
    np.testing.assert_array_equal(jnp.reshape(np.arange(6), jax.numpy.array([2, 3])), np.arange(6).reshape(2, 3))
    out = dynjax.qjit(lambda x: x + jax.numpy.ones(2), abstracted_axes=None)(np.ones(2))
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, [2.0, 2.0])
    np.testing.assert_allclose(dynjax.grad(lambda x: jnp.sum(x * jax.numpy.arange(3.0)))(np.ones(3)),
                               np.arange(3.0))


def test_import_leaves_scipy_for_later():
    """``import dynjax`` does not import scipy (a third of a second of every process start, the
    lit tests' and doc pages' included); eager special functions import it when they run."""
    code = ("import sys, numpy as np, dynjax\n"
            "assert 'scipy' not in sys.modules, sorted(m for m in sys.modules if 'scipy' in m)\n"
            "print(float(dynjax.lax.erf(np.float64(0.5))))\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(root, "frontend"), root]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=env, timeout=300)
    assert abs(float(out.stdout) - math.erf(0.5)) < 1e-15


def test_calls_never_import_jax():
    """dynjax runs on jaxlib alone: compiling and running programs (straight line, a loop that
    resizes an array, a condition, a gradient, bfloat16 in and out, the eager tier), at sizes
    0, 1, 5 and 1000, leaves jax unimported even when it is installed, as in the suite.
    jaxlib's ``unsafe_buffer_pointer`` imported it at a process's first call (0.4 s of its
    latency), and its read of a bfloat16 result at every call."""
    code = """
import sys, json, numpy as np, dynjax, dynjax.numpy as dnp, dynjax.lax as dlax
from test_capacity import grow_while, grow_while_np

line = dynjax.qjit(lambda x: dnp.sin(x) * 2.0 + x.sum())
loop = dynjax.qjit(grow_while, abstracted_axes=({0: "n"},))
branch = dynjax.qjit(lambda x: dlax.cond(x.shape[0] > 3, lambda v: v * 2.0, lambda v: v - 1.0, x))
slope = dynjax.qjit(dynjax.grad(lambda x: dnp.sum(dnp.sin(x) ** 2)))
worst = 0.0
for n in (0, 1, 5, 1000):
    x = np.random.default_rng(n).standard_normal(n)
    worst = max(worst, float(np.max(np.abs(line(x) - (np.sin(x) * 2.0 + x.sum())), initial=0.0)))
    worst = max(worst, float(np.max(np.abs(branch(x) - (x * 2.0 if n > 3 else x - 1.0)), initial=0.0)))
    worst = max(worst, float(np.max(np.abs(slope(x) - 2 * np.sin(x) * np.cos(x)), initial=0.0)))
    if n:
        worst = max(worst, float(np.max(np.abs(loop(x) - grow_while_np(x)))))
half = dynjax.qjit(lambda x: (x.astype(dnp.float32) * 2).astype(dnp.bfloat16))
for n in (0, 1, 5, 1000):   # bfloat16 in and out: neither reaches jaxlib's bfloat16 reads
    x = (np.arange(n) % 50).astype(dnp.bfloat16)
    err = np.abs(half(x).astype(np.float64) - 2.0 * (np.arange(n) % 50))
    worst = max(worst, float(np.max(err, initial=0.0)))
eager = float(dnp.sum(dnp.asarray([1.0, 2.0, 3.0]) ** 2))
print(json.dumps({"jax": sorted(m for m in sys.modules if m == "jax" or m.startswith("jax.")),
                  "worst": worst, "eager": eager}))
"""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(root, "frontend"), root,
                                                       os.path.join(root, "tests")]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=env, timeout=300)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["jax"] == []
    assert got["worst"] < 1e-12
    assert got["eager"] == 14.0
