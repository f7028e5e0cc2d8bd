"""``dynjax.lax`` against ``jax.lax``: the functions JAX users call, with JAX's signatures, on
a small table of inputs, eagerly, traced and compiled with a dynamic leading axis (sizes 0, 1
and more, one trace for every size), plus grad and vmap where defined and JAX's error types."""
from __future__ import annotations

import jax
import jax.lax as jl
import jax.numpy as jjnp
import numpy as np
import pytest

import dynjax
from dynjax import lax

from helpers import check_three_ways

jax.config.update("jax_enable_x64", True)
SIZES = (0, 1, 4)
DYN = {0: "n"}
rng = np.random.default_rng(0)


def R(*shape, dtype=np.float64):
    return (rng.standard_normal(shape) * 3).astype(dtype)


def J(f):
    """A jax function as a numpy reference."""
    return lambda *a: jax.tree_util.tree_map(np.asarray, f(*a))


# (name, dynjax fn, jax fn, args for size n); every case runs three ways at SIZES
CASES = [
    ("clamp", lambda x: lax.clamp(-1.0, x, 2.0), lambda x: jl.clamp(-1.0, x, 2.0), lambda n: (R(n, 3),)),
    ("round_afz", lambda x: lax.round(x), lambda x: jl.round(x),
     lambda n: (np.concatenate([np.array([0.5, -0.5, 1.5, -2.5, -0.3, np.inf, np.nan]), R(n)]),)),
    ("round_even", lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
     lambda x: jl.round(x, jl.RoundingMethod.TO_NEAREST_EVEN), lambda n: (np.array([0.5, 1.5, -2.5]) + np.zeros(n)[:, None],)),
    ("square_reciprocal_exp2", lambda x: (lax.square(x), lax.reciprocal(x), lax.exp2(x)),
     lambda x: (jl.square(x), jl.reciprocal(x), jl.exp2(x)), lambda n: (R(n),)),
    ("asinh_atanh", lambda x: (lax.asinh(x), lax.atanh(x / 4)), lambda x: (jl.asinh(x), jl.atanh(x / 4)),
     lambda n: (np.concatenate([np.array([0.0, -0.0, 1e-300, 1e200, -1e200, 4.0, -4.0]), R(n)]),)),
    ("acosh", lambda x: lax.acosh(x), lambda x: jl.acosh(x),
     lambda n: (np.concatenate([np.array([1.0, 1.0 + 1e-12, 2.0, 1e200, 0.5]), np.abs(R(n)) + 1]),)),
    ("expand_squeeze_collapse", lambda x: (lax.expand_dims(x, (0, -1)), lax.squeeze(x[:, :1], (-1,)),
                                           lax.collapse(x, 0), lax.broadcast_to_rank(x, 4)),
     lambda x: (jl.expand_dims(x, (0, -1)), jl.squeeze(x[:, :1], (-1,)), jl.collapse(x, 0),
                jl.broadcast_to_rank(x, 4)), lambda n: (R(n, 3),)),
    ("full", lambda x: (lax.full((x.shape[0], 2), 3.0), lax.full_like(x, 2, np.int32), lax.zeros_like_array(x)),
     lambda x: (jl.full((x.shape[0], 2), 3.0), jl.full_like(x, 2, np.int32), jjnp.zeros_like(x)), lambda n: (R(n, 3),)),
    ("in_dim", lambda x, i: (lax.slice_in_dim(x, 1, 3, axis=1), lax.index_in_dim(x, -1, 1, False),
                             lax.dynamic_slice_in_dim(x, i, 2, 1), lax.dynamic_index_in_dim(x, i, 1),
                             lax.dynamic_update_slice_in_dim(x, x[:, :2] * 0, i, 1),
                             lax.dynamic_update_index_in_dim(x, x[:, 0] * 0 + 7, i, 1)),
     lambda x, i: (jl.slice_in_dim(x, 1, 3, axis=1), jl.index_in_dim(x, -1, 1, False),
                   jl.dynamic_slice_in_dim(x, i, 2, 1), jl.dynamic_index_in_dim(x, i, 1),
                   jl.dynamic_update_slice_in_dim(x, x[:, :2] * 0, i, 1),
                   jl.dynamic_update_index_in_dim(x, x[:, 0] * 0 + 7, i, 1)),
     lambda n: (R(n, 4), np.int32(-1)), ({0: "n"}, {})),
    ("products", lambda a, b, c: (lax.dot(a, b, precision=lax.Precision.HIGHEST), lax.dot(b[:, 0], b[:, 0]),
                                  lax.batch_matmul(c, c), lax.dot_general(a, b, (((1,), (0,)), ((), ())), "highest")),
     lambda a, b, c: (jl.dot(a, b), jl.dot(b[:, 0], b[:, 0]), jl.batch_matmul(c, c),
                      jl.dot_general(a, b, (((1,), (0,)), ((), ())))),
     lambda n: (R(n, 3), R(3, 2), R(n, 2, 2)), ({0: "n"}, {}, {0: "n"})),
    ("sort", lambda x, y: (lax.sort(x), lax.sort((x, y), 0, True, 1), lax.sort_key_val(x, y, dimension=0)),
     lambda x, y: (jl.sort(x), jl.sort((x, y), 0, True, 1), jl.sort_key_val(x, y, dimension=0)),
     lambda n: (np.round(R(n, 3)), R(n, 3))),
    ("top_k", lambda x: lax.top_k(x, 3), lambda x: jl.top_k(x, 3),
     lambda n: (np.concatenate([np.tile([1.0, np.nan, -0.0, 0.0, 1.0], (n, 1)), np.round(R(n, 5))], 1),)),
    ("top_k_int", lambda x: lax.top_k(x, 2, axis=0), lambda x: (
        np.moveaxis(np.asarray(jl.top_k(np.moveaxis(x, 0, -1), 2)[0]), -1, 0),
        np.moveaxis(np.asarray(jl.top_k(np.moveaxis(x, 0, -1), 2)[1]), -1, 0)),
     lambda n: (np.array([[3, 1], [3, 2], [0, 2], [5, 2]], np.int32),), None),
    ("reduce_bitwise", lambda x, b: (lax.reduce_and(x, (0,)), lax.reduce_or(x, (0,)), lax.reduce_xor(x, (-2,)),
                                     lax.reduce_and(b, (0,)), lax.reduce_or(b, (0,)), lax.reduce_xor(b, (0,))),
     lambda x, b: (jl.reduce_and(x, (0,)), jl.reduce_or(x, (0,)), jl.reduce_xor(x, (0,)),
                   jl.reduce_and(b, (0,)), jl.reduce_or(b, (0,)), jl.reduce_xor(b, (0,))),
     lambda n: (rng.integers(-100, 100, (n, 3)).astype(np.int16), rng.random((n, 3)) > 0.5)),
    ("reductions_argminmax", lambda x: (lax.reduce_sum(x, (-1,)), lax.reduce_max(x, (1,)), lax.argmax(x, -1, np.int32),
                                        lax.argmin(x, 1, np.int64)),
     lambda x: (jl.reduce_sum(x, (1,)), jl.reduce_max(x, (1,)), jl.argmax(x, 1, np.int32), jl.argmin(x, 1, np.int64)),
     lambda n: (R(n, 3),)),
    ("bits", lambda x, y: (lax.population_count(x), lax.clz(x), lax.shift_right_logical(x, y),
                           lax.shift_right_arithmetic(x, y), lax.bitcast_convert_type(x, np.uint8),
                           lax.bitcast_convert_type(x, np.float32)),
     lambda x, y: (jl.population_count(x), jl.clz(x), jl.shift_right_logical(x, y), jl.shift_right_arithmetic(x, y),
                   jl.bitcast_convert_type(x, np.uint8), jl.bitcast_convert_type(x, np.float32)),
     lambda n: (np.concatenate([np.array([0, -1, 1, 2**31 - 1, -2**31], np.int32), rng.integers(-2**31, 2**31, n).astype(np.int32)]),
                np.concatenate([np.array([0, 1, 31, 32, -1], np.int32), rng.integers(0, 32, n).astype(np.int32)]))),
    ("nextafter_reduce_precision", lambda x, y: (lax.nextafter(x, y), lax.reduce_precision(x, 5, 10),
                                                 lax.reduce_precision(x, 8, 7), lax.reduce_precision(x.astype(np.float32), 5, 2)),
     lambda x, y: (jl.nextafter(x, y), jl.reduce_precision(x, 5, 10), jl.reduce_precision(x, 8, 7),
                   jl.reduce_precision(x.astype(np.float32), 5, 2)),
     lambda n: (np.concatenate([np.array([0.0, -0.0, 1.0, 1e10, 1e-10, np.inf, np.nan, 65504.0, 1.2345678]), R(n)]),
                np.concatenate([np.array([1.0, -1.0, 2.0, 0.0, 1.0, 0.0, 1.0, 1e6, -5.0]), R(n)]))),
    ("split_reshape", lambda x: (*lax.split(x, (1, 2), axis=1), lax.reshape(x, (3, x.shape[0]), (1, 0))),
     lambda x: (*jl.split(x, (1, 2), axis=1), jl.reshape(x, (3, x.shape[0]), (1, 0))), lambda n: (R(n, 3),)),
    ("map", lambda x: (lax.map(lambda r: r * r.sum(), x), lax.map(lambda r: r * 2, x[:, 0])),
     lambda x: (jl.map(lambda r: r * r.sum(), x), jl.map(lambda r: r * 2, x[:, 0])), lambda n: (R(n, 3),)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_against_jax(case):
    name, f, jf, make, *dyn = case
    check_three_ways(f, J(jf), make, SIZES, abstracted_axes=dyn[0] if dyn else DYN,
                     rtol=1e-14 if name.startswith(("asinh", "acosh")) else 1e-15, atol=0.0)


def test_map_batch_size():
    x = R(7, 3)
    for bs in (1, 2, 3, 7, 9):
        got = lax.map(lambda r: r * r.sum(), x, batch_size=bs)
        np.testing.assert_allclose(got, np.asarray(jl.map(lambda r: r * r.sum(), x, batch_size=bs)), rtol=1e-15)


# --- gather and scatter with dimension numbers -------------------------------------------------
GD = lax.GatherDimensionNumbers
SD = lax.ScatterDimensionNumbers
GATHERS = [
    # rows of a matrix (x[idx]), columns windows, a 2-d point gather, windows clamped / filled
    (GD((1,), (0,), (0,)), (1, 3), np.array([[2], [0], [5], [-1]])),
    (GD((0, 2), (), (1,)), (None, 2), np.array([[0], [2], [1]])),
    (GD((), (0, 1), (0, 1)), (1, 1), np.array([[1, 2], [0, 0], [3, 1]])),
    (GD((1,), (0,), (0,)), (1, 2), np.array([[1], [9]])),
]


@pytest.mark.parametrize("mode", ["clip", "fill", None, "promise_in_bounds"])
@pytest.mark.parametrize("k", range(len(GATHERS)))
def test_gather_against_jax(k, mode):
    dn, sizes, idx = GATHERS[k]
    if mode == "promise_in_bounds":
        idx = np.clip(idx, 0, 1)
    jdn = jl.GatherDimensionNumbers(*dn)

    def sz(x):
        return tuple(x.shape[0] if s is None else s for s in sizes)
    for n in (4, 6):
        x = R(n, 3) if sizes != (None, 2) else R(n, 3)
        f = lambda x: lax.gather(x, idx.astype(np.int32), dn, sz(x), mode=mode)
        want = np.asarray(jl.gather(x, idx.astype(np.int32), jdn, sz(x), mode=mode))
        np.testing.assert_array_equal(f(x), want)
        np.testing.assert_array_equal(dynjax.qjit(f)(x), want)


def test_gather_dynamic_operand_and_batching_dims():
    dn = GD(offset_dims=(1,), collapsed_slice_dims=(1,), start_index_map=(1,),
            operand_batching_dims=(0,), start_indices_batching_dims=(0,))
    jdn = jl.GatherDimensionNumbers(*dn)
    f = dynjax.qjit(lambda x, i: lax.gather(x, i, dn, (1, 1, 2), mode="clip"), abstracted_axes=({0: "n"}, {0: "n"}))
    for n in (0, 1, 5):
        x, i = R(n, 4, 2), rng.integers(0, 4, (n, 1))
        want = np.asarray(jl.gather(x, i, jdn, (1, 1, 2), mode="clip"))
        np.testing.assert_array_equal(f(x, i), want)
        np.testing.assert_array_equal(lax.gather(x, i, dn, (1, 1, 2), mode="clip"), want)


SCATTERS = [
    (SD((1,), (0,), (0,)), np.array([[2], [0], [2], [7]]), (4, 3)),          # rows (x.at[idx])
    (SD((), (0, 1), (0, 1)), np.array([[1, 2], [0, 0], [3, 1]]), (3,)),     # points
    (SD((1,), (0,), (0,)), np.array([[1], [3]]), (2, 2)),                  # partial windows
]


@pytest.mark.parametrize("kind", ["scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max"])
@pytest.mark.parametrize("mode", ["clip", "fill"])
@pytest.mark.parametrize("k", range(len(SCATTERS)))
def test_scatter_against_jax(k, mode, kind):
    dn, idx, ushape = SCATTERS[k]
    jdn = jl.ScatterDimensionNumbers(*dn)
    x, u = R(5, 3), R(*ushape)
    if kind == "scatter" and mode == "clip" and k == 0:
        idx = np.array([[2], [0], [3], [7]])   # unique after clipping: XLA's order is unspecified
    f = lambda x, u: getattr(lax, kind)(x, idx, u, dn, mode=mode)
    want = np.asarray(getattr(jl, kind)(x, idx, u, jdn, mode=mode))
    np.testing.assert_allclose(f(x, u), want, rtol=1e-15)
    np.testing.assert_allclose(dynjax.qjit(f)(x, u), want, rtol=1e-15)


def test_gather_scatter_grad_and_vmap():
    dn = GD((1,), (0,), (0,))
    idx = np.array([[2], [0], [2]])
    jdn = jl.GatherDimensionNumbers(*dn)
    x = R(4, 3)
    g = dynjax.grad(lambda x: (lax.gather(x, idx, dn, (1, 3), mode="clip") ** 2).sum())(x)
    jg = jax.grad(lambda x: (jl.gather(x, idx, jdn, (1, 3), mode="clip") ** 2).sum())(x)
    np.testing.assert_allclose(g, np.asarray(jg), rtol=1e-14)
    sdn = SD((1,), (0,), (0,))
    u = R(3, 3)
    gs = dynjax.grad(lambda u: (lax.scatter_add(x, idx, u, sdn) ** 3).sum())(u)
    jgs = jax.grad(lambda u: (jl.scatter_add(x, idx, u, jl.ScatterDimensionNumbers(*sdn)) ** 3).sum())(u)
    np.testing.assert_allclose(gs, np.asarray(jgs), rtol=1e-14)
    xs = R(2, 4, 3)
    v = dynjax.vmap(lambda x: lax.gather(x, idx, dn, (1, 3), mode="fill"))(xs)
    jv = jax.vmap(lambda x: jl.gather(x, idx, jdn, (1, 3), mode="fill"))(xs)
    np.testing.assert_array_equal(v, np.asarray(jv))


def test_scatter_apply():
    dn = SD((), (0,), (0,))
    x = R(5)
    idx = np.array([[1], [3]])
    got = lax.scatter_apply(x, idx, lambda v: v * 10, dn, update_shape=(2,))
    want = jl.scatter_apply(x, idx, lambda v: v * 10, jl.ScatterDimensionNumbers(*dn), update_shape=(2,))
    np.testing.assert_array_equal(got, np.asarray(want))


# --- derivatives and batching of the rest ------------------------------------------------------
def test_grad_and_vmap():
    x = np.array([0.3, -1.7, 2.5, 0.0])
    for f, jf in [(lax.asinh, jl.asinh), (lambda v: lax.atanh(v / 4), lambda v: jl.atanh(v / 4)),
                  (lambda v: lax.acosh(v * v + 1.5), lambda v: jl.acosh(v * v + 1.5)),
                  (lambda v: lax.clamp(-1.0, v, 1.0), lambda v: jl.clamp(-1.0, v, 1.0)),
                  (lambda v: lax.top_k(v, 2)[0], lambda v: jl.top_k(v, 2)[0]),
                  (lambda v: lax.reduce_precision(v, 8, 7), lambda v: v),
                  (lambda v: v * lax.stop_gradient(v), lambda v: v * jl.stop_gradient(v))]:
        g = dynjax.grad(lambda v: f(v).sum())(x)
        np.testing.assert_allclose(g, np.asarray(jax.grad(lambda v: jf(v).sum())(x)), rtol=1e-13)
        xs = np.stack([x, x[::-1]])
        np.testing.assert_allclose(dynjax.vmap(f)(xs), np.stack([f(m) for m in xs]), rtol=1e-15)
    ints = np.array([[1, -1, 8], [0, 3, 2**30]], np.int32)
    np.testing.assert_array_equal(dynjax.vmap(lax.population_count)(ints), np.asarray(jl.population_count(ints)))
    np.testing.assert_array_equal(dynjax.vmap(lambda v: lax.bitcast_convert_type(v, np.int8))(ints),
                                  np.asarray(jl.bitcast_convert_type(ints, np.int8)))


def test_primitive_names():
    from dynjax.lax import primitives as P
    assert lax.add_p is P.add_p and lax.dot_general_p is P.dot_general_p
    assert lax.reduce_sum_p is P.reduce_sum_p and lax.population_count_p.name == "population_count"
    assert not hasattr(lax, "gather_p")


# --- errors --------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad, err", [
    (lambda: lax.gather(R(4, 3), np.array([[0]]), (0,), (1, 3)), TypeError),   # not dimension numbers
    (lambda: lax.gather(R(4, 3), np.array([[0, 1]]), GD((1,), (0,), (0,)), (1, 3)), TypeError),
    (lambda: lax.gather(R(4, 3), np.array([[0]]), GD((1,), (0,), (0,)), (2, 3)), TypeError),
    (lambda: lax.gather(R(4, 3), np.array([[0.5]]), GD((1,), (0,), (0,)), (1, 3)), TypeError),
    (lambda: lax.gather(R(4, 3), np.array([[0]]), GD((1,), (0,), (0,)), (1, 3), mode="nope"), ValueError),
    (lambda: lax.scatter(R(4, 3), np.array([[0]]), R(1, 3).astype(np.float32), SD((1,), (0,), (0,))), TypeError),
    (lambda: lax.scatter_add(R(4, 3), np.array([[0]]), R(2, 3), SD((1,), (0,), (0,))), TypeError),
    (lambda: lax.clamp(np.float32(0), R(3), 1.0), TypeError),
    (lambda: lax.top_k(R(3), 4), TypeError),
    (lambda: lax.top_k(np.float64(1.0), 1), TypeError),
    (lambda: lax.dot(R(2, 2, 2), R(2)), TypeError),
    (lambda: lax.split(R(4), (1, 2)), ValueError),
    (lambda: lax.bitcast_convert_type(R(3).astype(np.uint8), np.float32), TypeError),
    (lambda: lax.population_count(R(3)), TypeError),
    (lambda: lax.reduce_precision(R(3), 0, 2), ValueError),
    (lambda: lax.full((2,), R(2)), TypeError),
])
def test_errors(bad, err):
    with pytest.raises(err):
        bad()
