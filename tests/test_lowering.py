"""Lowering tests: trace once with dynamic dims, lower, verify, specialize at several sizes
(including 0 and 1), compile with XLA:CPU, run, and compare with numpy and with eval_jaxpr."""
from __future__ import annotations

import numpy as np
import pytest
from jaxlib.mlir import ir

import dynjax
import dynjax.numpy as jnp
from dynjax import lax
from dynjax.core.jaxpr import Var
from dynjax.core.primitive import impl_rules
from dynjax.lax import primitives as P
from dynjax.lowering import (LoweringContext, lower_jaxpr, lower_jaxpr_into, lowering_rules, module_text,
                             register_lowering)
from dynjax.runtime import xla
from mlir_passes.specialize import specialize, static_type_string

RNG = np.random.default_rng(0)


# ------------------------------------------------------------------------------------------------
# harness
# ------------------------------------------------------------------------------------------------

def _expanded_args(jaxpr, explicit):
    """Values for all invars: implicit dims are read off the explicit arguments' shapes."""
    invars = jaxpr.invars
    exp_vars = [v for v, e in zip(invars, jaxpr.in_explicit) if e]
    assert len(exp_vars) == len(explicit), (len(exp_vars), len(explicit))
    vals = {}
    for v, x in zip(exp_vars, explicit):
        vals[id(v)] = x
        for d, n in zip(v.aval.shape, np.shape(x)):
            if isinstance(d, Var):
                assert vals.setdefault(id(d), n) == n
    return [vals[id(v)] for v in invars]


def run_compiled(closed, text, expanded, bake):
    """Specialize ``text`` for the given inputs (baking dims and the ``bake`` positions), run it."""
    jaxpr = closed.jaxpr
    dims, types, runtime = {}, [], []
    for i, (v, x) in enumerate(zip(jaxpr.invars, expanded)):
        if not jaxpr.in_explicit[i] or i in bake:
            dims[i] = int(x)
            types.append(None)
        else:
            x = np.asarray(x, dtype=v.aval.dtype)
            types.append(static_type_string(x.shape, x.dtype))
            runtime.append(x)
    static = specialize(text, types, dims)
    assert "?" not in static
    exe = xla.compile(static)
    return [np.asarray(o) for o in xla.execute(exe, runtime)]


def _close(got, want, rtol):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if np.issubdtype(want.dtype, np.floating):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def check(f, arg_sets, np_f=None, axes=None, bake_explicit=(), rtol=None):
    """Trace ``f`` once at ``arg_sets[0]`` (with ``abstracted_axes=axes``), lower it, and run
    the one lowered module at every argument set. Outputs (explicit and implicit) must match
    ``eval_jaxpr``; explicit outputs must match ``np_f`` when given.
    ``bake_explicit``: positions of explicit arguments (integer sizes) baked in as dims."""
    closed = dynjax.make_jaxpr(f, abstracted_axes=axes)(*arg_sets[0])
    module = lower_jaxpr(closed)
    assert module.operation.verify()
    text = str(module)
    jaxpr = closed.jaxpr
    n_impl = sum(1 for e in jaxpr.in_explicit if not e)
    bake = {n_impl + i for i in bake_explicit}
    for args in arg_sets:
        expanded = _expanded_args(jaxpr, args)
        want = [np.asarray(w) for w in dynjax.eval_jaxpr(jaxpr, closed.consts, *expanded)]
        got = run_compiled(closed, text, expanded, bake)
        assert len(got) == len(want)
        for g, w, v in zip(got, want, jaxpr.outvars):
            w = np.asarray(w, dtype=v.aval.dtype)
            tol = rtol if rtol is not None else (1e-5 if w.dtype == np.float32 else 1e-11)
            _close(g, w, tol)
        if np_f is not None:
            ref = np_f(*args)
            ref = list(ref) if isinstance(ref, (tuple, list)) else [ref]
            outs = [g for g, e in zip(got, jaxpr.out_explicit) if e]
            assert len(outs) == len(ref)
            for g, r in zip(outs, ref):
                r = np.asarray(r)
                tol = rtol if rtol is not None else (1e-5 if r.dtype == np.float32 else 1e-11)
                _close(g, r.astype(g.dtype) if r.dtype != g.dtype else r, tol)
    return text


SIZES = (0, 1, 5)


def vecs(make, sizes=SIZES):
    return [(make(n),) for n in sizes]


def fvec(n, special=False):
    x = RNG.normal(size=n) * 3
    if special and n >= 5:
        x[:5] = [np.nan, np.inf, -np.inf, -0.0, 0.5]
    return x


def ivec(n, lo=-20, hi=20):
    return RNG.integers(lo, hi, size=n)


# ------------------------------------------------------------------------------------------------
# basics: signatures, printing, verification
# ------------------------------------------------------------------------------------------------

def test_ones_from_size_signature():
    closed = dynjax.make_jaxpr(lambda sz: jnp.ones((sz + 1,)))(3)
    text = module_text(closed)
    assert "func.func public @main(%arg0: tensor<i64>) -> (tensor<i64>, tensor<?xf64>)" in text
    assert "stablehlo.dynamic_broadcast_in_dim" in text
    for n in (0, 1, 4):
        out = run_compiled(closed, text, [n], {0})
        assert out[0] == n + 1
        _close(out[1], np.ones(n + 1), 0)


def test_ones_from_size_check():
    check(lambda sz: jnp.ones((sz + 1,)), [(0,), (1,), (4,)], lambda sz: np.ones(sz + 1), bake_explicit=(0,))


def test_consts_and_static():
    c = np.arange(3.0)
    text = check(lambda x: x * c + 1.0, [(np.ones(3),)], lambda x: x * c + 1.0)
    assert "stablehlo.constant dense<[0.000000e+00, 1.000000e+00, 2.000000e+00]>" in text


def test_outputs_that_are_inputs_and_literals():
    def f(x):
        return x, 2.0, x.shape[0]
    closed = dynjax.make_jaxpr(f, abstracted_axes={0: "n"})(np.ones(3))
    text = module_text(closed)
    for n in (0, 2):
        x = fvec(n)
        out = run_compiled(closed, text, [n, x], set())
        np.testing.assert_array_equal(out[-3], x)
        assert out[-2] == 2.0 and out[-1] == n


def test_every_primitive_has_a_rule():
    missing = [p.name for p in vars(P).values() if isinstance(p, type(P.add_p)) and p not in lowering_rules]
    assert not missing, missing


def test_bool_and_array_constants():
    c = np.array([True, False, True])
    d = np.arange(6, dtype=np.int32).reshape(2, 3)
    check(lambda x: (jnp.logical_and(x, c), d + 1), [(np.array([True, True, False]),)],
          lambda x: (np.logical_and(x, c), d + 1))


# ------------------------------------------------------------------------------------------------
# elementwise
# ------------------------------------------------------------------------------------------------

def test_unary_float_ops():
    def f(x):
        return (-x, jnp.sign(x), jnp.floor(x), jnp.ceil(x), lax.round(x), jnp.exp(x), jnp.log(jnp.abs(x)),
                jnp.log1p(jnp.abs(x)), jnp.expm1(x), jnp.sin(x), jnp.cos(x), jnp.tan(x), jnp.tanh(x),
                jnp.sqrt(jnp.abs(x)), jnp.cbrt(x), jnp.abs(x), jnp.isfinite(x), jnp.sinh(x), jnp.cosh(x),
                jnp.arctan(x))

    def g(x):
        with np.errstate(all="ignore"):
            # lax.round rounds half away from zero by default (JAX's RoundingMethod.AWAY_FROM_ZERO)
            away = np.copysign(np.floor(np.abs(x) + 0.5), x)
            return (-x, np.sign(x), np.floor(x), np.ceil(x), away, np.exp(x), np.log(np.abs(x)),
                    np.log1p(np.abs(x)), np.expm1(x), np.sin(x), np.cos(x), np.tan(x), np.tanh(x),
                    np.sqrt(np.abs(x)), np.cbrt(x), np.abs(x), np.isfinite(x), np.sinh(x), np.cosh(x),
                    np.arctan(x))
    check(f, vecs(lambda n: fvec(n, special=True)) + [(np.array([0.5, 1.5, 2.5, -0.5, -2.5]),)], g,
          axes={0: "n"}, rtol=1e-9)


def test_unary_prims_direct():
    def f(x):
        return (lax.asin(x), lax.acos(x), lax.rsqrt(x + 2.0), lax.logistic(x))

    def g(x):
        return np.arcsin(x), np.arccos(x), 1 / np.sqrt(x + 2.0), 1 / (1 + np.exp(-x))
    check(f, vecs(lambda n: RNG.uniform(-1, 1, size=n)), g, axes={0: "n"}, rtol=1e-9)


def test_unary_float32():
    check(lambda x: (jnp.exp(x), -x, jnp.sqrt(jnp.abs(x))),
          vecs(lambda n: fvec(n).astype(np.float32)),
          lambda x: (np.exp(x), -x, np.sqrt(np.abs(x))), axes={0: "n"})


def test_unary_int_and_bool():
    def f(x, b):
        return -x, jnp.abs(x), jnp.sign(x), lax.bitwise_not(x), lax.bitwise_not(b), jnp.logical_not(b)
    sets = [(ivec(n), RNG.integers(0, 2, size=n).astype(bool)) for n in SIZES]
    check(f, sets, lambda x, b: (-x, np.abs(x), np.sign(x), ~x, ~b, ~b), axes={0: "n"})


def test_binary_float():
    def f(x, y):
        return (x + y, x - y, x * y, x / y, lax.rem(x, y), lax.pow(jnp.abs(x), y), lax.max(x, y),
                lax.min(x, y), jnp.arctan2(x, y), x == y, x != y, x < y, x <= y, x > y, x >= y)

    def g(x, y):
        with np.errstate(all="ignore"):
            return (x + y, x - y, x * y, x / y, np.fmod(x, y), np.power(np.abs(x), y), np.maximum(x, y),
                    np.minimum(x, y), np.arctan2(x, y), x == y, x != y, x < y, x <= y, x > y, x >= y)
    sets = [(fvec(n, special=True), fvec(n)) for n in SIZES]
    x = np.array([1.0, np.nan, 2.0, 0.0, -3.0])
    sets.append((x, np.array([1.0, 1.0, np.nan, 0.0, 2.0])))
    check(f, sets, g, axes={0: "n"}, rtol=1e-9)


def test_binary_int():
    def f(x, y):
        return (x + y, x - y, x * y, lax.div(x, y), lax.rem(x, y), lax.api.pow(x, y % 5 - 1), lax.max(x, y),
                lax.min(x, y), x & y, x | y, x ^ y, x == y, x != y, x < y, x <= y, x > y, x >= y)

    def g(x, y):
        with np.errstate(all="ignore"):
            safe = np.where(y == 0, 1, y)
            q = np.where(y == 0, 0, np.trunc(x / safe).astype(x.dtype))
            r = np.where(y == 0, 0, np.fmod(x, safe))
            e = y % 5 - 1
            pw = np.where(e < 0, 0, x ** np.maximum(e, 0))
        return (x + y, x - y, x * y, q, r, pw, np.maximum(x, y), np.minimum(x, y), x & y, x | y, x ^ y,
                x == y, x != y, x < y, x <= y, x > y, x >= y)
    sets = [(ivec(n), ivec(n, -4, 5)) for n in SIZES]
    sets.append((np.array([7, -7, 7, -7, 5, 0]), np.array([2, 2, -2, -2, 0, 0])))
    check(f, sets, g, axes={0: "n"})
    # int32 too
    check(f, [(x.astype(np.int32), y.astype(np.int32)) for x, y in sets], None, axes={0: "n"})


def test_binary_bool():
    def f(a, b):
        return (a & b, a | b, a ^ b, a == b, a != b, a < b, a > b, lax.add(a, b), lax.mul(a, b),
                lax.max(a, b), lax.min(a, b))
    sets = [(RNG.integers(0, 2, size=n).astype(bool), RNG.integers(0, 2, size=n).astype(bool)) for n in SIZES]
    check(f, sets, lambda a, b: (a & b, a | b, a ^ b, a == b, a != b, a < b, a > b, a | b, a & b, a | b, a & b),
          axes={0: "n"})


def test_scalar_operand_broadcasts():
    def f(x, s):
        return lax.add(x, s), lax.mul(s, x), lax.lt(x, s), lax.select_n(lax.gt(s, 0.0), x, x * 2.0)
    sets = [(fvec(n), np.float64(v)) for n, v in [(0, 1.0), (1, -2.0), (5, 0.5)]]
    check(f, sets, lambda x, s: (x + s, s * x, x < s, x * 2.0 if s > 0 else x), axes={0: "n"})


def test_integer_pow():
    def f(x):
        return lax.integer_pow(x, 0), lax.integer_pow(x, 1), lax.integer_pow(x, 3), lax.integer_pow(x, 6), \
            lax.integer_pow(x, -2)
    check(f, vecs(lambda n: RNG.uniform(0.5, 2, size=n)), lambda x: (x ** 0, x, x ** 3, x ** 6, 1 / x ** 2),
          axes={0: "n"}, rtol=1e-12)
    check(lambda x: (lax.integer_pow(x, 2), lax.integer_pow(x, 5)), vecs(lambda n: ivec(n, -5, 5)),
          lambda x: (x ** 2, x ** 5), axes={0: "n"})


def test_select_n():
    def f(p, w, x, y, z):
        return lax.select_n(p, x, y), lax.select_n(w, x, y, z), jnp.where(p, x, 0.0)
    sets = [(RNG.integers(0, 2, size=n).astype(bool), RNG.integers(0, 3, size=n), fvec(n), fvec(n), fvec(n))
            for n in SIZES]
    check(f, sets, lambda p, w, x, y, z: (np.where(p, y, x), np.choose(w, [x, y, z]), np.where(p, x, 0.0)),
          axes={0: "n"})


def test_convert_element_type():
    def f(x, i, b):
        return (x.astype(np.int64), x.astype(np.int32), x.astype(bool), x.astype(np.float32),
                i.astype(np.float64), i.astype(np.int32), i.astype(bool), b.astype(np.int64), b.astype(np.float64))

    def g(x, i, b):
        convert = impl_rules[P.convert_element_type_p]
        return (convert(x, new_dtype=np.int64), convert(x, new_dtype=np.int32), x.astype(bool),
                x.astype(np.float32), i.astype(np.float64), i.astype(np.int32), i.astype(bool),
                b.astype(np.int64), b.astype(np.float64))
    sets = [(fvec(n) * 10, ivec(n), RNG.integers(0, 2, size=n).astype(bool)) for n in SIZES]
    check(f, sets, g, axes={0: "n"})


def test_convert_float_to_int_saturates():
    """NaN -> 0, truncation toward zero, out-of-range values saturate at the integer range."""
    x = np.array([-2.7, 2.7, 1e30, -1e30, np.nan, np.inf, -np.inf, 2.0 ** 63, -(2.0 ** 63), 2.0 ** 31])
    i64, i32 = np.iinfo(np.int64), np.iinfo(np.int32)
    want64 = np.array([-2, 2, i64.max, i64.min, 0, i64.max, i64.min, i64.max, i64.min, 2 ** 31])
    want32 = np.array([-2, 2, i32.max, i32.min, 0, i32.max, i32.min, i32.max, i32.min, i32.max], np.int32)
    closed = dynjax.make_jaxpr(lambda x: (x.astype(np.int64), x.astype(np.int32)), abstracted_axes={0: "n"})(x)
    got = run_compiled(closed, module_text(closed), [len(x), x], set())
    np.testing.assert_array_equal(got[0], want64)
    np.testing.assert_array_equal(got[1], want32)
    # the impl agrees wherever float(int max) is exact (int32)
    np.testing.assert_array_equal(impl_rules[P.convert_element_type_p](x, new_dtype=np.int32), want32)


def test_convert_truncates_like_astype():
    # numpy's astype truncates toward zero
    x = np.array([-2.7, 2.7, -0.5, 0.5])
    check(lambda x: x.astype(np.int64), [(x,)], lambda x: x.astype(np.int64), axes={0: "n"})


# ------------------------------------------------------------------------------------------------
# shapes
# ------------------------------------------------------------------------------------------------

def test_broadcast_iota_reshape_from_sizes():
    def f(n, m):
        a = lax.convert_element_type(lax.broadcasted_iota(np.int64, (n, m), 1), np.float64)
        b = lax.reshape(lax.iota(np.int64, n * m), (n, m))
        c = jnp.full((m,), 2, dtype=np.int32)
        return a, b, c, lax.broadcast_in_dim(lax.iota(np.int64, n), (m, n), (1,))
    check(f, [(0, 2), (1, 0), (3, 4), (1, 1)],
          lambda n, m: (np.zeros((n, m)) + np.arange(m), np.arange(n * m).reshape(n, m), np.full(m, 2, np.int32),
                        np.broadcast_to(np.arange(n), (m, n))),
          bake_explicit=(0, 1))


def test_reshape_transpose_squeeze_rev_dynamic():
    def f(x):
        return (x.reshape(-1), x.T, jnp.expand_dims(x, 1), jnp.squeeze(jnp.expand_dims(x, 0), 0),
                lax.rev(x, (0, 1)), lax.rev(x, (0,)), jnp.transpose(x.reshape((x.shape[0], 3, 2)), (2, 0, 1)))
    sets = [(RNG.normal(size=(n, 6)),) for n in SIZES]
    check(f, sets, lambda x: (x.reshape(-1), x.T, x[:, None], x, x[::-1, ::-1], x[::-1],
                              np.transpose(x.reshape(x.shape[0], 3, 2), (2, 0, 1))), axes={0: "n"})


def test_broadcast_in_dim_dynamic_operand():
    def f(x):
        return jnp.broadcast_to(x, (4, x.shape[0])), x[:, None] * jnp.ones((1, 3)), x[:, None] + x[None, :]
    check(f, vecs(fvec), lambda x: (np.broadcast_to(x, (4, len(x))), x[:, None] * np.ones((1, 3)),
                                    x[:, None] + x[None, :]), axes={0: "n"})


# ------------------------------------------------------------------------------------------------
# reductions, scans, sort
# ------------------------------------------------------------------------------------------------

def test_reductions_float():
    def f(x):
        return (jnp.sum(x, axis=0), jnp.sum(x), jnp.prod(x, axis=1), jnp.max(x, axis=0), jnp.min(x, axis=0),
                lax.reduce_sum(x, ()))

    def g(x):
        mx = np.full(x.shape[1], -np.inf) if x.shape[0] == 0 else np.max(x, axis=0)
        mn = np.full(x.shape[1], np.inf) if x.shape[0] == 0 else np.min(x, axis=0)
        return np.sum(x, axis=0), np.sum(x), np.prod(x, axis=1), mx, mn, x
    sets = [(RNG.normal(size=(n, 3)),) for n in SIZES]
    check(f, sets, g, axes={0: "n"})


def test_reductions_int_bool():
    def f(x, b):
        return (jnp.sum(x, axis=0), jnp.prod(x, axis=0), jnp.max(x, axis=0), jnp.min(x, axis=0),
                jnp.any(b, axis=0), jnp.all(b, axis=0), lax.reduce_max(b, (0,)), lax.reduce_min(b, (0,)))

    def g(x, b):
        i = np.iinfo(np.int64)
        mx = np.full(2, i.min) if len(x) == 0 else x.max(0)
        mn = np.full(2, i.max) if len(x) == 0 else x.min(0)
        return x.sum(0), x.prod(0), mx, mn, b.any(0), b.all(0), b.any(0), b.all(0)
    sets = [(ivec((n, 2), -3, 4), RNG.integers(0, 2, size=(n, 2)).astype(bool)) for n in SIZES]
    check(f, sets, g, axes={0: "n"})


def test_argmax_argmin():
    def f(x, i):
        return jnp.argmax(x, axis=0), jnp.argmin(x, axis=0), jnp.argmax(x, axis=1), jnp.argmin(i, axis=1), \
            jnp.argmax(i, axis=1)
    sets = []
    for n in (1, 4):
        x = RNG.normal(size=(n, 3))
        sets.append((x, RNG.integers(0, 3, size=(n, 3))))
    x = np.array([[1.0, np.nan, 2.0], [3.0, 3.0, np.nan], [3.0, np.nan, -np.inf], [-1.0, 0.0, -np.inf]])
    sets.append((x, np.array([[2, 2, 1], [0, 0, 0], [1, 2, 2], [5, 5, 5]])))
    check(f, sets, lambda x, i: (np.argmax(x, 0), np.argmin(x, 0), np.argmax(x, 1), np.argmin(i, 1), np.argmax(i, 1)),
          axes={0: "n"})


def test_cumsum_dynamic_axis():
    def f(x, i, b):
        return (jnp.cumsum(x), lax.cumsum(x, axis=0, reverse=True), jnp.cumsum(i), lax.cumsum(b, axis=0))
    sets = [(fvec(n), ivec(n), RNG.integers(0, 2, size=n).astype(bool)) for n in (0, 1, 2, 5, 8, 9)]
    x = np.array([1.0, np.inf, 2.0, -1.0])
    sets.append((x, np.array([1, 2, 3, 4]), np.array([False, False, True, False])))
    check(f, sets, lambda x, i, b: (np.cumsum(x), np.cumsum(x[::-1])[::-1], np.cumsum(i),
                                    np.logical_or.accumulate(b) if len(b) else b), axes={0: "n"}, rtol=1e-12)


def test_cumsum_2d():
    def f(x):
        return lax.cumsum(x, axis=0), lax.cumsum(x, axis=1), lax.cumsum(x, axis=1, reverse=True)
    sets = [(RNG.normal(size=(n, 5)),) for n in SIZES]
    g = lambda x: (np.cumsum(x, 0), np.cumsum(x, 1), np.cumsum(x[:, ::-1], 1)[:, ::-1])  # noqa: E731
    check(f, sets, g, axes={0: "n"}, rtol=1e-12)                     # dynamic axis 0, static axis 1
    check(f, [(RNG.normal(size=(4, n)),) for n in SIZES], g, axes={1: "m"}, rtol=1e-12)
    check(f, [(RNG.normal(size=(n, n + 1)),) for n in SIZES], g, axes={0: "n", 1: "m"}, rtol=1e-12)


def test_sort():
    def f(x, i):
        return jnp.sort(x), jnp.argsort(x), jnp.sort(i, axis=0), jnp.argsort(i[:, 0])
    sets = [(fvec(n, special=True), ivec((n, 2), 0, 3)) for n in SIZES]
    sets.append((np.array([3.0, 1.0, 3.0, np.nan, -np.inf, 1.0]), np.array([[1, 0], [1, 1], [0, 2], [1, 0],
                                                                            [0, 1], [1, 0]])))
    check(f, sets, lambda x, i: (np.sort(x), np.argsort(x, kind="stable"), np.sort(i, axis=0),
                                 np.argsort(i[:, 0], kind="stable")), axes={0: "n"})


def test_sort_multiple_keys():
    def f(k1, k2, v):
        return P.sort_p.bind(k1, k2, v, dimension=0, num_keys=2)

    def g(k1, k2, v):
        order = np.lexsort((k2, k1))
        return k1[order], k2[order], v[order]
    sets = [(ivec(n, 0, 3), fvec(n), ivec(n)) for n in (1, 5, 9)]   # the impl fails at n=0
    check(f, sets, g, axes={0: "n"})


# ------------------------------------------------------------------------------------------------
# linear algebra
# ------------------------------------------------------------------------------------------------

def test_dot_general():
    def f(a, b, i):
        return a @ b, jnp.dot(a[:, 0], a[:, 1]), jnp.outer(a[:, 0], a[:, 1]), i @ i.T
    sets = [(RNG.normal(size=(n, 3)), RNG.normal(size=(3, 2)), ivec((n, 3), -3, 3)) for n in SIZES]
    check(f, sets, lambda a, b, i: (a @ b, a[:, 0] @ a[:, 1], np.outer(a[:, 0], a[:, 1]), i @ i.T),
          axes=({0: "n"}, None, {0: "n"}))


def test_dot_general_batch_and_dynamic_contraction():
    sets = [(RNG.normal(size=(2, 3, n)), RNG.normal(size=(2, n, 4))) for n in SIZES]
    check(lambda a, b: jnp.matmul(a, b), sets, lambda a, b: a @ b, axes=({2: "n"}, {1: "n"}))


def test_dot_general_bool_and_preferred():
    def f(a, b):
        return P.dot_general_p.bind(a, b, dimension_numbers=(((1,), (0,)), ((), ())), preferred_element_type=None)
    sets = [(RNG.integers(0, 2, size=(n, 3)).astype(bool), RNG.integers(0, 2, size=(3, 2)).astype(bool))
            for n in SIZES]
    check(f, sets, lambda a, b: (a.astype(int) @ b.astype(int)) != 0, axes=({0: "n"}, None))

    def g(a, b):
        return P.dot_general_p.bind(a, b, dimension_numbers=(((1,), (0,)), ((), ())),
                                    preferred_element_type=np.dtype(np.float64))
    sets = [(ivec((n, 3)), ivec((3, 2))) for n in SIZES]
    check(g, sets, lambda a, b: (a @ b).astype(np.float64), axes=({0: "n"}, None))


# ------------------------------------------------------------------------------------------------
# slicing, concatenation, padding
# ------------------------------------------------------------------------------------------------

def test_static_slices_of_dynamic_arrays():
    def f(x):
        return x[:, 1:3], x[:, ::2], lax.slice(x, (0, 1), (None, 4), (1, 2))
    sets = [(RNG.normal(size=(n, 5)),) for n in SIZES]
    check(f, sets, lambda x: (x[:, 1:3], x[:, ::2], x[:, 1:4:2]), axes={0: "n"})
    check(f, [(RNG.normal(size=(3, 5)),)], lambda x: (x[:, 1:3], x[:, ::2], x[:, 1:4:2]))


def test_dynamic_slice_static_sizes_runtime_starts():
    def f(x, i, j):
        return lax.api.dynamic_slice(x, (i, j), (1, 2))
    sets = [(RNG.normal(size=(n, 4)), np.int64(i), np.int64(j)) for n, i, j in
            [(1, 0, 0), (3, 2, 3), (5, -4, 1), (5, 9, -1)]]
    check(f, sets, lambda x, i, j: impl_rules[P.dynamic_slice_p](x, i, j, slice_sizes=(1, 2)), axes=({0: "n"},))


def test_dynamic_slice_dynamic_sizes():
    def f(x, i, k):
        return lax.api.dynamic_slice(x, (i, 1), (k, 2))
    sets = [(RNG.normal(size=(n, 4)), np.int64(i), k) for n, i, k in
            [(0, 0, 0), (1, 0, 1), (5, 2, 3), (5, 4, 3), (5, -3, 2), (6, 1, 0)]]

    def g(x, i, k):
        return impl_rules[P.dynamic_slice_p](x, i, 1, k, slice_sizes=(None, 2))
    check(f, sets, g, axes=({0: "n"},), bake_explicit=(2,))


def test_dynamic_update_slice():
    def f(x, u, i):
        return lax.api.dynamic_update_slice(x, u, (i, 0))
    sets = [(RNG.normal(size=(n, 3)), RNG.normal(size=(1, 3)), np.int64(i)) for n, i in [(1, 0), (4, 2), (4, 7),
                                                                                          (5, -2)]]
    check(f, sets, lambda x, u, i: impl_rules[P.dynamic_update_slice_p](x, u, i, 0), axes=({0: "n"},))


def test_concatenate():
    def f(x, y):
        return jnp.concatenate([x, y, x]), jnp.concatenate([x[:, None], x[:, None]], axis=1), \
            jnp.concatenate([y, np.array([1.0, 2.0])])
    sets = [(fvec(n), fvec(m)) for n, m in [(0, 0), (1, 3), (4, 0), (2, 5)]]
    check(f, sets, lambda x, y: (np.concatenate([x, y, x]), np.stack([x, x], 1), np.concatenate([y, [1.0, 2.0]])),
          axes=({0: "n"}, {0: "m"}))


def test_pad():
    def f(x):
        return (lax.pad(x, 0.0, ((0, 0, 0), (1, 2, 0))), lax.pad(x, -1.0, ((0, 0, 0), (0, 0, 1))),
                lax.pad(x, 5.0, ((0, 0, 0), (-1, 1, 1))))
    sets = [(RNG.normal(size=(n, 3)),) for n in SIZES]

    def g(x):
        return tuple(impl_rules[P.pad_p](x, v, padding_config=c) for v, c in [
            (0.0, ((0, 0, 0), (1, 2, 0))), (-1.0, ((0, 0, 0), (0, 0, 1))), (5.0, ((0, 0, 0), (-1, 1, 1)))])
    check(f, sets, g, axes={0: "n"})
    check(lambda x: jnp.pad(x, (2, 1)), vecs(fvec), lambda x: np.pad(x, (2, 1)), axes={0: "n"})


# ------------------------------------------------------------------------------------------------
# the API for nested lowering (what control-flow rules use)
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dim_from", ["outer", "dims_from_shapes", "block_arg"])
def test_nested_lowering_inside_a_while_region(dim_from):
    """A body jaxpr lowered inside stablehlo.while with block arguments as its invars."""
    from jaxlib.mlir.dialects import func, stablehlo as hlo
    from dynjax.lowering import get_mlir_context
    body = dynjax.make_jaxpr(lambda i, x: (i + 1, x * 2.0 + jnp.ones(x.shape[0])),
                             abstracted_axes=(None, {0: "n"}))(0, np.ones(3))
    outer = dynjax.make_jaxpr(lambda x: x, abstracted_axes={0: "n"})(np.ones(3))
    ctx_m = get_mlir_context()
    with ctx_m, ir.Location.unknown():
        module = ir.Module.create()
        n_t, x_t, i_t = (LoweringContext.ir_type(v.aval) for v in outer.jaxpr.invars[:1] + outer.jaxpr.invars[1:2] +
                         outer.jaxpr.invars[:1])
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get([n_t, x_t], [x_t]))
            block = fn.add_entry_block()
        with ir.InsertionPoint(block):
            ctx = LoweringContext(module)
            n, x = block.arguments
            zero = ctx.constant(0, np.int64)
            three = ctx.constant(3, np.int64)
            w = hlo.WhileOp([n_t, i_t, x_t], [n, zero, x])
            cb = w.cond.blocks.append(n_t, i_t, x_t)
            with ir.InsertionPoint(cb):
                hlo.ReturnOp([ctx.compare(cb.arguments[1], three, "LT", np.int64)])
            bb = w.body.blocks.append(n_t, i_t, x_t)
            with ir.InsertionPoint(bb):
                # body invars: implicit n, then i, then x:f64[n]. The loop-invariant dim is
                # bound to the OUTER value (a constant after specialization), not the block
                # argument, so shape ops in the body refine.
                dim = n if dim_from == "outer" else bb.arguments[0]
                outs = lower_jaxpr_into(ctx, body, [dim, bb.arguments[1], bb.arguments[2]],
                                        dims_from_shapes=dim_from == "dims_from_shapes")
                # body outvars: (i+1, x*2+1)
                hlo.ReturnOp([bb.arguments[0]] + outs)
            func.ReturnOp([w.results[2]])
        assert module.operation.verify()
        text = str(module)
    if dim_from == "block_arg":
        # a loop-carried dim is not a constant: jnp.ones(n) in the body cannot be refined
        with pytest.raises(ValueError, match="dynamic_broadcast_in_dim"):
            specialize(text, [None, static_type_string((2,), np.float64)], {0: 2})
        return
    for n in (0, 1, 4):
        x = fvec(n)
        static = specialize(text, [None, static_type_string((n,), np.float64)], {0: n})
        out = xla.execute(xla.compile(static), [x])[0]
        _close(np.asarray(out), ((x * 2 + 1) * 2 + 1) * 2 + 1, 1e-12)


def test_register_lowering_custom_rule():
    from dynjax.lax.base import define
    prim = define("my_double", lambda x: x * 2, lambda x: x.aval)

    @register_lowering(prim)
    def _rule(ctx, eqn, x):
        from jaxlib.mlir.dialects import stablehlo as hlo
        return hlo.AddOp(x, x).result
    closed = dynjax.make_jaxpr(lambda x: prim.bind(x), abstracted_axes={0: "n"})(np.ones(2))
    check(lambda x: prim.bind(x), vecs(fvec), lambda x: 2 * x, axes={0: "n"})
    assert "stablehlo.add %arg1, %arg1 : tensor<?xf64>" in module_text(closed)
    del lowering_rules[prim]


def test_missing_rule_is_a_clear_error():
    from dynjax.lax.base import define
    from dynjax.lowering import LoweringError
    prim = define("no_rule_here", lambda x: x, lambda x: x.aval)
    closed = dynjax.make_jaxpr(lambda x: prim.bind(x))(np.ones(2))
    with pytest.raises(LoweringError, match="no lowering rule for primitive 'no_rule_here'"):
        lower_jaxpr(closed)


def test_the_shared_context_is_renewed_and_old_modules_stay_usable(monkeypatch):
    """The lowering's shared MLIR context keeps every constant it made until it is destroyed,
    so ``mlir_passes.context`` builds a new one every ``RECYCLE_AFTER`` lowerings. A module
    lowered in an old context stays printable, and programs lowered across the renewals
    compute the right values."""
    import mlir_passes.context as mctx
    from dynjax.lowering import lower_jaxpr
    monkeypatch.setattr(mctx, "RECYCLE_AFTER", 3)
    monkeypatch.setattr(mctx, "_shared_uses", 0)
    first = mctx.get_context()
    kept = lower_jaxpr(dynjax.make_jaxpr(lambda x: x * 2.0)(np.ones(3)))
    seen = [first]   # (kept alive, so that no two of them share an id)
    for k in range(7):
        c = np.full(4, float(k))
        f = dynjax.qjit(lambda x: x + c)
        np.testing.assert_array_equal(f(np.arange(4.0)), np.arange(4.0) + k)
        seen.append(mctx.get_context())
    assert len({id(ctx) for ctx in seen}) >= 3   # renewed along the way
    assert "stablehlo.multiply" in str(kept)
