"""The rest of ``jax.lax`` in ``dynjax.lax``: the primitive objects under JAX's names,
``mulhi``, ``optimization_barrier``, ``approx_max_k`` / ``approx_min_k``, ``index_take``,
``dtype``, ``stack`` / ``unstack`` / ``tile`` / ``broadcast_like``, the shape helpers, the data
types, ``ragged_dot`` / ``ragged_dot_general``, ``rng_bit_generator``; JAX's negative start
indices in the public ``dynamic_slice`` family; Python scalars in binary operations.

Every function is compared with jax (eagerly, and compiled at dynamic sizes where sizes can be
dynamic).
"""
from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.lax as jl
import jax.numpy as jjnp

import dynjax
import dynjax.numpy as jnp
from dynjax import lax
from dynjax.lax import api as lax_api

jax.config.update("jax_enable_x64", True)
RNG = np.random.default_rng(0)


def same(got, want, exact=True, tol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# ----------------------------------------------------------------------------------------------
# primitive objects under JAX's names
# ----------------------------------------------------------------------------------------------
EXPORTED = ("erf erfc erf_inv lgamma digamma bessel_i0e bessel_i1e igamma igammac polygamma zeta "
            "igamma_grad_a regularized_incomplete_beta cummax cummin fft conv_general_dilated "
            "optimization_barrier cond while").split()


@pytest.mark.parametrize("name", EXPORTED)
def test_primitive_objects_have_jax_names_and_meaning(name):
    assert hasattr(jl, f"{name}_p")
    p = getattr(lax, f"{name}_p")
    assert isinstance(p, dynjax.extend.Primitive)
    assert p.name == ("while_loop" if name == "while" else name)


def test_primitive_objects_bind_like_the_functions():
    x = np.linspace(0.1, 2.0, 5)
    same(lax.erf_p.bind(x), lax.erf(x))
    same(lax.igamma_p.bind(x, x[::-1].copy()), lax.igamma(x, x[::-1].copy()))
    same(lax.cummax_p.bind(x[::-1].copy(), axis=0, reverse=False), lax.cummax(x[::-1].copy()))
    f = dynjax.qjit(lambda x: lax.zeta_p.bind(x + 1.0, x), abstracted_axes={0: "n"})
    np.testing.assert_allclose(f(x), lax.zeta(x + 1.0, x), rtol=1e-12)


def test_left_out_primitive_names_have_a_reason():
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).parent.parent / "doc" / "gen_support_table.py"
    spec = importlib.util.spec_from_file_location("gen_support_table", path)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    for name in ("scan_p", "gather_p", "scatter_add_p", "reduce_window_sum_p", "top_k_p", "square_p",
                 "rng_bit_generator_p", "shift_right_logical_p", "approx_top_k_p"):
        assert not hasattr(lax, name)
        assert gen._reason("jax.lax", name) != gen._PRIMITIVE, name


# ----------------------------------------------------------------------------------------------
# Python scalars in binary operations: JAX's rule (with 64-bit types), eagerly and traced
# ----------------------------------------------------------------------------------------------
SCALAR_CASES = [
    ("add", lambda m, x: m.add(x, 2.0)), ("mul", lambda m, x: m.mul(2.0, x)),
    ("sub", lambda m, x: m.sub(x, 1)), ("max", lambda m, x: m.max(x, 1)),
    ("lt", lambda m, x: m.lt(x, 1.5)), ("div", lambda m, x: m.div(x, 2)),
    ("pow_int_exponent", lambda m, x: m.pow(x, 2)), ("atan2", lambda m, x: m.atan2(x, 1.0)),
]


@pytest.mark.parametrize("name,fn", SCALAR_CASES)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32"])
def test_python_scalars_in_binary_ops(name, fn, dtype):
    x = np.arange(1, 4).astype(dtype)
    try:
        want = np.asarray(fn(jl, jjnp.asarray(x)))
    except TypeError:
        with pytest.raises(TypeError):
            fn(lax, x)
        with pytest.raises(TypeError):
            dynjax.qjit(lambda x: fn(lax, x))(x)
        return
    same(fn(lax, x), want, exact=False)
    same(dynjax.qjit(lambda x: fn(lax, x), abstracted_axes={0: "n"})(x), want, exact=False)


def test_mixed_dtypes_are_refused_eagerly_as_when_traced():
    x32 = np.ones(3, np.float32)
    for f in (lambda: lax.add(x32, np.ones(3)), lambda: lax.add(x32, 2.0),
              lambda: lax.mul(2, x32), lambda: lax.nextafter(x32, 1.0),
              lambda: lax.complex(x32, 1.0)):
        with pytest.raises(TypeError):
            f()
    with pytest.raises(TypeError):   # shapes must agree (a rank-0 operand broadcasts)
        lax.add(np.ones(3), np.ones((2, 3)))
    same(lax.add(np.ones(3), 2.0), np.full(3, 3.0))


# ----------------------------------------------------------------------------------------------
# dynamic_slice and friends: a negative start counts from the end (once), then clamps
# ----------------------------------------------------------------------------------------------
STARTS = (-25, -11, -10, -9, -3, -1, 0, 2, 7, 8, 9, 12)
SLICE_FUNCS = [
    ("dynamic_slice", lambda m, x, s: m.dynamic_slice(x, (s, 0), (3, 2))),
    ("dynamic_slice_dynamic_size", lambda m, x, s: m.dynamic_slice(x, (s, 1), (x.shape[0] // 2, 1))),
    ("dynamic_slice_no_wrap", lambda m, x, s: m.dynamic_slice(x, (s, 0), (3, 2),
                                                              allow_negative_indices=False)),
    ("dynamic_update_slice", lambda m, x, s: m.dynamic_update_slice(x, -x[:2], (s, 0))),
    ("dynamic_update_slice_flags", lambda m, x, s: m.dynamic_update_slice(
        x, -x[:2, :1], (s, s), allow_negative_indices=(True, False))),
    ("dynamic_slice_in_dim", lambda m, x, s: m.dynamic_slice_in_dim(x, s, 2)),
    ("dynamic_slice_in_dim_axis1", lambda m, x, s: m.dynamic_slice_in_dim(x, s, 1, axis=1)),
    ("dynamic_index_in_dim", lambda m, x, s: m.dynamic_index_in_dim(x, s, keepdims=False)),
    ("dynamic_update_slice_in_dim", lambda m, x, s: m.dynamic_update_slice_in_dim(x, -x[:3], s, 0)),
    ("dynamic_update_index_in_dim", lambda m, x, s: m.dynamic_update_index_in_dim(x, -x[0], s, 0)),
]


@pytest.mark.parametrize("name,fn", SLICE_FUNCS)
def test_negative_starts_follow_jax(name, fn):
    traced = dynjax.qjit(lambda x, s: fn(lax, x, s), abstracted_axes=({0: "n"}, None))
    jax_traced = jax.jit(lambda x, s: fn(jl, x, s))
    for n in (10, 4, 3):
        x = np.arange(2.0 * n).reshape(n, 2)
        for s in STARTS:
            try:
                want = np.asarray(fn(jl, jjnp.asarray(x), s))
            except ValueError:   # a static negative start where negative starts are not allowed
                with pytest.raises(ValueError):
                    fn(lax, x, s)
            else:
                same(fn(lax, x, s), want)                              # eager, static start
                same(fn(lax, x, np.int32(s)), want)                    # a numpy integer start
            same(traced(x, np.int64(s)), jax_traced(x, np.int64(s)))   # traced, dynamic size
        static_start = dynjax.qjit(lambda x: fn(lax, x, 2 - n), abstracted_axes={0: "n"})
        try:
            want = np.asarray(fn(jl, jjnp.asarray(x), 2 - n))
        except ValueError:
            continue
        same(static_start(x), want)


def test_start_indices_as_an_array():
    x = np.arange(20.0).reshape(10, 2)
    for s in (-3, 4, 12):
        starts = np.array([s, 0])
        same(lax.dynamic_slice(x, starts, (3, 2)), jl.dynamic_slice(x, starts, (3, 2)))
        same(lax.dynamic_update_slice(x, np.ones((2, 2)), starts),
             jl.dynamic_update_slice(x, np.ones((2, 2)), starts))
    f = dynjax.qjit(lambda x, s: lax.dynamic_slice(x, jnp.stack([s, s * 0]), (3, 2)))
    same(f(x, -3), jl.dynamic_slice(x, (-3, 0), (3, 2)))


def test_the_primitive_level_functions_still_clamp():
    """dynjax's own modules call lax/api.py's functions, which clamp a negative start to 0."""
    x = np.arange(10.0)
    same(lax_api.dynamic_slice(x, [np.int64(-3)], [4]), x[:4])
    same(lax_api.dynamic_update_slice(x, np.zeros(2), [np.int64(-3)]), np.r_[0.0, 0.0, x[2:]])


# ----------------------------------------------------------------------------------------------
# mulhi
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                                   "uint64"])
def test_mulhi(dtype):
    info = np.iinfo(dtype)
    special = [info.min, info.max, 0, 1, 2, 3, info.max // 3, info.min // 3, -1 if info.min else 7]
    x = np.array(special + list(RNG.integers(info.min, info.max, 23, dtype=dtype, endpoint=True)),
                 dtype)
    y = np.array(list(reversed(special)) + list(RNG.integers(info.min, info.max, 23, dtype=dtype,
                                                             endpoint=True)), dtype)
    want = np.asarray(jl.mulhi(jjnp.asarray(x), jjnp.asarray(y)))
    same(lax.mulhi(x, y), want)
    same(dynjax.qjit(lax.mulhi, abstracted_axes=({0: "n"}, {0: "n"}))(x, y), want)
    same(lax.mulhi(x, y[3]), np.asarray(jl.mulhi(jjnp.asarray(x), y[3])))     # a scalar operand
    with pytest.raises(TypeError):
        lax.mulhi(np.ones(3), np.ones(3))


# ----------------------------------------------------------------------------------------------
# optimization_barrier (a primitive of its own)
# ----------------------------------------------------------------------------------------------
def test_optimization_barrier_is_the_identity_everywhere():
    x = RNG.normal(size=5)
    tree = (x, {"a": np.arange(3), "b": 2.0})
    out = lax.optimization_barrier(tree)
    same(out[0], x)
    same(out[1]["a"], np.arange(3))
    f = dynjax.qjit(lambda x: lax.optimization_barrier((jnp.sin(x), x.shape[0])),
                    abstracted_axes={0: "n"})
    s, n = f(x)
    assert "stablehlo.optimization_barrier" in f.mlir
    same(s, np.sin(x))
    assert int(n) == 5
    assert "optimization_barrier" in str(dynjax.make_jaxpr(lambda x: lax.optimization_barrier(x))(x))


def test_optimization_barrier_derivatives_and_vmap():
    x = RNG.normal(size=4)
    g = dynjax.grad(lambda x: jnp.sum(lax.optimization_barrier(x * x)))(x)
    same(g, jax.grad(lambda x: jjnp.sum(jl.optimization_barrier(x * x)))(x), exact=False)
    jaxpr = str(dynjax.make_jaxpr(dynjax.grad(lambda x: jnp.sum(lax.optimization_barrier(x * x))))(x))
    assert "optimization_barrier" in jaxpr      # the cotangent goes through one too
    _, t = dynjax.jvp(lambda x: lax.optimization_barrier(jnp.sin(x)), (x,), (np.ones(4),))
    same(t, np.cos(x), exact=False)
    v = dynjax.vmap(lambda x: lax.optimization_barrier((x, 2 * x)))(np.arange(6.0).reshape(3, 2))
    same(v[1], 2 * np.arange(6.0).reshape(3, 2))
    gc = dynjax.qjit(dynjax.grad(lambda x: jnp.sum(lax.optimization_barrier(x) ** 3)),
                     abstracted_axes={0: "n"})(x)
    same(gc, 3 * x ** 2, exact=False)


def test_optimization_barrier_lowers_to_stablehlo():
    f = dynjax.qjit(lambda x, y: lax.optimization_barrier((x, y)), abstracted_axes=({0: "n"}, None))
    x = np.arange(3.0)
    a, b = f(x, np.int32(4))
    assert "stablehlo.optimization_barrier" in f.mlir and "?x" in f.mlir
    same(a, x)
    same(b, np.int32(4))


# ----------------------------------------------------------------------------------------------
# approx_max_k / approx_min_k
# ----------------------------------------------------------------------------------------------
def test_approx_top_k_output_size_is_xlas():
    from jax._src.lib import _jax
    from dynjax.lax.sorting import approx_top_k_output_size
    for n in (5, 128, 129, 300, 1024, 1025, 2048, 2049, 3000, 4096, 5000, 10000):
        for rank in (1, 2):
            for k in (1, 2, 5, 50):
                for r in (0.5, 0.8, 0.9, 0.95, 0.99, 1.0):
                    for override in (-1, 2 * n, 8 * n):
                        if k > n:
                            continue
                        want = _jax.approx_top_k_reduction_output_size(n, rank, k, r, False,
                                                                        override)[0]
                        assert approx_top_k_output_size(n, rank, k, r, False, override) == want, \
                            (n, rank, k, r, override)


@pytest.mark.parametrize("fname", ["approx_max_k", "approx_min_k"])
def test_approx_top_k_is_exact_as_jax_on_cpu(fname):
    d, j = getattr(lax, fname), getattr(jl, fname)
    x = np.array([[3.0, 1.0, -0.0, 2.0, 3.0, 0.0, 5.0, -1.0], [1, 2, 3, 4, 5, 6, 7, 8]])
    for kw in (dict(), dict(aggregate_to_topk=False), dict(reduction_dimension=0),
               dict(recall_target=0.5), dict(reduction_dimension=-2, aggregate_to_topk=False)):
        k = 2 if kw.get("reduction_dimension", -1) in (0, -2) else 3
        dv, di = d(x, k, **kw)
        jv, ji = j(jjnp.asarray(x), k, **kw)
        same(dv, jv)
        same(di, ji)
    big = RNG.permutation(6000).astype(np.float32)
    for kw in (dict(aggregate_to_topk=False), dict(aggregate_to_topk=False, recall_target=0.5),
               dict(k=1, aggregate_to_topk=False), dict(reduction_input_size_override=9000,
                                                        aggregate_to_topk=False)):
        k = kw.pop("k", 5)
        dv, di = d(big, k, **kw)
        jv, ji = j(jjnp.asarray(big), k, **kw)
        same(dv, jv)
        same(di, ji)
    with pytest.raises(ValueError):
        d(np.arange(3.0), 4)
    with pytest.raises(ValueError):
        d(np.arange(3), 2)         # integers: JAX refuses them too


def test_approx_top_k_dynamic_sizes_and_grad():
    f = dynjax.qjit(lambda x: lax.approx_max_k(x, 2), abstracted_axes={0: "n"})
    for n in (2, 3, 9):
        x = RNG.normal(size=n)
        v, i = f(x)
        jv, ji = jl.approx_max_k(jjnp.asarray(x), 2)
        same(v, jv)
        same(i, ji)
    x = RNG.normal(size=6)
    g = dynjax.grad(lambda x: jnp.sum(lax.approx_min_k(x, 3)[0] ** 2))(x)
    same(g, jax.grad(lambda x: jjnp.sum(jl.approx_min_k(x, 3)[0] ** 2))(x), exact=False)
    with pytest.raises(NotImplementedError):
        dynjax.qjit(lambda x: lax.approx_max_k(x, 2, aggregate_to_topk=False),
                    abstracted_axes={0: "n"})(x)


# ----------------------------------------------------------------------------------------------
# index_take, dtype, stack / unstack / tile / broadcast_like
# ----------------------------------------------------------------------------------------------
def test_index_take():
    src = np.arange(60.0).reshape(3, 4, 5)
    for idxs, axes in (([np.array([0, -1, 5, 2])], [0]), ([np.array([1, 3]), np.array([-1, 9])], [0, 2]),
                       ([np.array([7, -5, 0])], [2])):
        same(lax.index_take(src, idxs, axes), jl.index_take(jjnp.asarray(src), idxs, axes))
    f = dynjax.qjit(lambda s, i: lax.index_take(s, [i], [0]), abstracted_axes=({0: "n"}, {0: "k"}))
    for n in (1, 3, 6):
        s = RNG.normal(size=(n, 2))
        i = RNG.integers(-9, 9, 4)
        same(f(s, i), jl.index_take(jjnp.asarray(s), [i], [0]))


def test_dtype():
    for v in (2.0, 3, True, 1j, np.float32, np.int8, float, int, bool, complex, "float32", "int16",
              np.dtype("uint8"), np.ones(2, np.float32), np.float16(1), np.bool_(True)):
        assert lax.dtype(v) == jl.dtype(v), v
    for v in ([1, 2], "U5", object):
        with pytest.raises(TypeError):
            jl.dtype(v)
        with pytest.raises(TypeError):
            lax.dtype(v)
    x = np.ones(3, np.int32)
    assert dynjax.qjit(lambda x: jnp.zeros(2, lax.dtype(x)))(x).dtype == np.int32
    with pytest.raises(ValueError):
        lax.dtype(None)


def test_stack_unstack_tile_broadcast_like():
    a, b = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 3))
    for axis in (0, 1, 2, -1):
        same(lax.stack([a, b], axis), jl.stack([a, b], axis))
    for axis in (0, 1, -1):
        for got, want in zip(lax.unstack(a, axis), jl.unstack(a, axis)):
            same(got, want)
    for reps in ((1, 1), (2, 3), (0, 2), (3, 1)):
        same(lax.tile(a, reps), jl.tile(a, reps))
    same(lax.broadcast_like(np.arange(3.0), np.zeros((2, 3))),
         jl.broadcast_like(jjnp.arange(3.0), jjnp.zeros((2, 3))))
    f = dynjax.qjit(lambda x, y, r: (lax.stack([x, y], 1), lax.tile(x, (r, 2)),
                                     lax.broadcast_like(jnp.arange(3.0), x), lax.unstack(x, 1)),
                    abstracted_axes=({0: "n"}, {0: "n"}, None))
    for n in (0, 1, 4):
        x, y = RNG.normal(size=(n, 3)), RNG.normal(size=(n, 3))
        s, t, bl, us = f(x, y, 3)
        same(s, jl.stack([x, y], 1))
        same(t, jl.tile(x, (3, 2)))
        same(bl, np.broadcast_to(np.arange(3.0), x.shape))
        for got, want in zip(us, jl.unstack(x, 1)):
            same(got, want)
    with pytest.raises(TypeError):
        dynjax.qjit(lambda x: lax.unstack(x, 0), abstracted_axes={0: "n"})(a)


# ----------------------------------------------------------------------------------------------
# shape helpers and data types
# ----------------------------------------------------------------------------------------------
def test_shape_helpers_match_jax():
    for lhs, rhs, strides, pads in [((2, 3, 9, 8), (4, 3, 3, 2), (1, 1), "SAME"),
                                    ((2, 3, 9, 8), (4, 3, 3, 2), (2, 3), "VALID"),
                                    ((1, 1, 5), (2, 1, 4), (2,), [(1, 2)]),
                                    ((4, 2, 7, 7), (6, 1, 3, 3), (2, 2), "SAME_LOWER")]:
        assert lax.conv_shape_tuple(lhs, rhs, strides, pads) == jl.conv_shape_tuple(lhs, rhs, strides, pads)
        if len(lhs) == 4:
            assert lax.padtype_to_pads(lhs[2:], rhs[2:], strides, "SAME") == \
                jl.padtype_to_pads(lhs[2:], rhs[2:], strides, "SAME")
    assert lax.conv_shape_tuple((4, 3, 9), (6, 3, 2), (1,), "VALID", batch_group_count=2) == \
        jl.conv_shape_tuple((4, 3, 9), (6, 3, 2), (1,), "VALID", batch_group_count=2)
    dn = ("NHWC", "HWIO", "NHWC")
    for pad in ("SAME", "VALID", [(1, 0), (2, 2)]):
        args = ((2, 9, 8, 3), (3, 2, 3, 5), (2, 1), pad, dn)
        assert lax.conv_general_shape_tuple(*args) == jl.conv_general_shape_tuple(*args)
        targs = ((2, 5, 4, 3), (3, 2, 5, 3), (2, 1), pad, dn)
        assert lax.conv_transpose_shape_tuple(*targs) == jl.conv_transpose_shape_tuple(*targs)
    assert lax.conv_general_permutations(dn) == jl.conv_general_permutations(dn)
    for args in [((9, 8), (3, 2), (1, 1), [(0, 0), (1, 1)]),
                 ((9, 8), (3, 2), (2, 3), [(1, 0), (0, 2)], (2, 1), (1, 2)),
                 ((5,), (7,), (1,), [(0, 0)])]:
        assert lax.reduce_window_shape_tuple(*args) == jl.reduce_window_shape_tuple(*args)


def test_shape_helpers_take_traced_sizes():
    f = dynjax.qjit(lambda x: jnp.zeros(lax.conv_shape_tuple((1, 1, x.shape[0]), (1, 1, 3), (2,), "SAME")),
                    abstracted_axes={0: "n"})
    for n in (1, 4, 7):
        assert f(np.ones(n)).shape == jl.conv_shape_tuple((1, 1, n), (1, 1, 3), (2,), "SAME")


def test_data_types():
    assert [int(a) for a in lax.RandomAlgorithm] == [int(a) for a in jl.RandomAlgorithm]
    assert [a.name for a in lax.RandomAlgorithm] == [a.name for a in jl.RandomAlgorithm]
    assert str(lax.RandomAlgorithm.RNG_PHILOX) == "RNG_PHILOX"
    dn = lax.RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0])
    assert dn.dot_dimension_numbers == (((1,), (1,)), ((), ()))
    assert dn == lax.RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))
    for name in ("DotDimensionNumbers", "ConvGeneralDilatedDimensionNumbers", "PrecisionLike"):
        assert hasattr(lax, name)


# ----------------------------------------------------------------------------------------------
# ragged_dot / ragged_dot_general
# ----------------------------------------------------------------------------------------------
def test_ragged_dot_matches_jax():
    lhs, rhs = RNG.normal(size=(7, 3)), RNG.normal(size=(3, 3, 4))
    for gs in ([2, 0, 4], [2, 1, 2], [0, 0, 7], [7, 0, 0]):
        gs = np.array(gs, np.int32)
        same(lax.ragged_dot(lhs, rhs, gs), jl.ragged_dot(lhs, rhs, gs), exact=False)
    f32 = [a.astype(np.float32) for a in (lhs, rhs)]
    out = lax.ragged_dot(*f32, np.array([3, 3, 1], np.int32), preferred_element_type=np.float64)
    assert out.dtype == np.float64
    with pytest.raises(NotImplementedError):
        lax.ragged_dot(lhs, rhs, np.array([2, 2, 3], np.int32), group_offset=np.array([1]))


def test_ragged_dot_general_modes():
    # 2: the ragged axis is contracting; the result has a leading group axis
    dd = lax.RaggedDotDimensionNumbers((((1,), (0,)), ((), ())), [1], [])
    dj = jl.RaggedDotDimensionNumbers((((1,), (0,)), ((), ())), [1], [])
    a, b, s = RNG.normal(size=(3, 6)), RNG.normal(size=(6, 2)), np.array([1, 3, 2], np.int32)
    same(lax.ragged_dot_general(a, b, s, dd), jl.ragged_dot_general(a, b, s, dj), exact=False)
    # 3: a ragged batch axis is an ordinary dot_general
    dd = lax.RaggedDotDimensionNumbers((((2,), (1,)), ((0,), (0,))), [0], [])
    dj = jl.RaggedDotDimensionNumbers((((2,), (1,)), ((0,), (0,))), [0], [])
    a, b = RNG.normal(size=(3, 4, 5)), RNG.normal(size=(3, 5, 2))
    same(lax.ragged_dot_general(a, b, np.array([1, 2], np.int32), dd),
         jl.ragged_dot_general(a, b, np.array([1, 2], np.int32), dj), exact=False)
    # 1 with a batch axis and per-batch group sizes
    dd = lax.RaggedDotDimensionNumbers((((2,), (1,)), ((0,), (0,))), [1], [2])
    dj = jl.RaggedDotDimensionNumbers((((2,), (1,)), ((0,), (0,))), [1], [2])
    a, b = RNG.normal(size=(2, 5, 3)), RNG.normal(size=(2, 3, 3, 4))
    s = np.array([[1, 2, 2], [3, 0, 1]], np.int32)
    same(lax.ragged_dot_general(a, b, s, dd), jl.ragged_dot_general(a, b, s, dj), exact=False)
    with pytest.raises(TypeError):
        lax.ragged_dot_general(a, b, s, lax.RaggedDotDimensionNumbers((((2,), (1,)), ((0,), (0,))), [1], []))


def test_ragged_dot_dynamic_sizes_traced_group_sizes_and_derivatives():
    rhs = RNG.normal(size=(3, 3, 4))
    f = dynjax.qjit(lax.ragged_dot, abstracted_axes=({0: "m"}, None, None))
    for m in (0, 1, 5, 9):
        lhs = RNG.normal(size=(m, 3))
        gs = np.array([m // 3, m // 2, m - m // 3 - m // 2], np.int32)
        same(f(lhs, rhs, gs), jl.ragged_dot(lhs, rhs, gs), exact=False)
    lhs, gs = RNG.normal(size=(7, 3)), np.array([2, 0, 4], np.int32)

    def loss(mod):
        return lambda a, b: (mod.ragged_dot(a, b, gs) ** 2).sum()
    for got, want in zip(dynjax.grad(loss(lax), argnums=(0, 1))(lhs, rhs),
                         jax.grad(loss(jl), argnums=(0, 1))(lhs, rhs)):
        same(got, want, exact=False)
    t = (RNG.normal(size=lhs.shape), RNG.normal(size=rhs.shape))
    _, got = dynjax.jvp(lambda a, b: lax.ragged_dot(a, b, gs), (lhs, rhs), t)
    _, want = jax.jvp(lambda a, b: jl.ragged_dot(a, b, gs), (lhs, rhs), t)
    same(got, want, exact=False)
    gq = dynjax.qjit(dynjax.grad(lambda a, b, g: (lax.ragged_dot(a, b, g) ** 2).sum()),
                     abstracted_axes=({0: "m"}, None, None))(lhs, rhs, gs)
    same(gq, jax.grad(loss(jl))(lhs, rhs), exact=False)
    xs = np.stack([lhs, 2 * lhs])
    v = dynjax.vmap(lambda a: lax.ragged_dot(a, rhs, gs))(xs)
    same(v, np.stack([jl.ragged_dot(a, rhs, gs) for a in xs]), exact=False)


# ----------------------------------------------------------------------------------------------
# rng_bit_generator: XLA's bit generators, bit for bit
# ----------------------------------------------------------------------------------------------
SHAPES = [(), (1,), (5,), (7,), (2, 3), (3, 3), (3, 5, 2), (0,), (4, 0, 3), (5, 1, 7)]


@pytest.mark.parametrize("algorithm", list(jl.RandomAlgorithm))
@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32", "uint64"])
def test_rng_bit_generator_matches_xla(algorithm, dtype):
    for shape in SHAPES:
        for key_dtype in (np.uint32, np.uint64):
            key = RNG.integers(0, 2 ** 32, 4, dtype=np.uint64).astype(np.uint32)
            if key_dtype == np.uint64:
                key = key.view(np.uint64)
            jk, jb = jl.rng_bit_generator(jjnp.asarray(key), shape, dtype=dtype, algorithm=algorithm)
            dk, db = lax.rng_bit_generator(key, shape, dtype=dtype, algorithm=int(algorithm))
            same(dk, jk)
            same(db, jb)


@pytest.mark.parametrize("algorithm", list(jl.RandomAlgorithm))
def test_rng_bit_generator_compiled_at_dynamic_sizes(algorithm):
    for dtype in ("uint32", "uint64", "uint8"):
        f = dynjax.qjit(lambda k, n, m: lax.rng_bit_generator(k, (n, m), dtype=dtype,
                                                              algorithm=algorithm))
        for n, m in ((0, 0), (1, 1), (5, 1), (2, 3), (3, 3), (3, 4), (5, 7)):
            key = RNG.integers(0, 2 ** 32, 4, dtype=np.uint64).astype(np.uint32)
            jk, jb = jl.rng_bit_generator(jjnp.asarray(key), (n, m), dtype=dtype, algorithm=algorithm)
            dk, db = f(key, n, m)
            same(dk, jk)
            same(db, jb)


def test_rng_bit_generator_under_vmap_is_one_call_per_key():
    """dynjax's vmap gives, for each key, what a call with that key gives (JAX's own batching
    rule instead draws every row from the first key)."""
    keys = RNG.integers(0, 2 ** 32, (3, 4), dtype=np.uint64).astype(np.uint32)
    dk, db = dynjax.vmap(lambda k: lax.rng_bit_generator(k, (5, 2)))(keys)
    for i, key in enumerate(keys):
        jk, jb = jl.rng_bit_generator(jjnp.asarray(key), (5, 2))
        same(dk[i], jk)
        same(db[i], jb)


def test_rng_bit_generator_errors():
    with pytest.raises(TypeError):
        lax.rng_bit_generator(np.zeros(4, np.uint32), (3,), dtype=np.int32)
    with pytest.raises(TypeError):
        lax.rng_bit_generator(np.zeros(2, np.uint32), (3,))
