"""Convolutions (``dynjax.lax.conv_general_dilated`` and its wrappers) against JAX.

Every configuration runs eagerly (the numpy impl) and compiled, with the batch and spatial
axes dynamic (one trace serving every size, including 1 and a size smaller than the window,
which gives 0 outputs with ``'VALID'``), and is compared with ``jax.lax`` at the same sizes;
so are ``grad`` with respect to both operands and ``vmap`` over either or both.
"""
import numpy as np
import pytest

import jax
import jax.numpy as jjnp
from jax.example_libraries import stax

import dynjax
import dynjax.numpy as jnp
from dynjax import lax

jax.config.update("jax_enable_x64", True)

# name, lhs shape, rhs shape, strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
# feature_group_count, batch_group_count, abstracted axes of lhs, other lhs shapes to run
CONFIGS = [
    ("1d_valid", (2, 3, 9), (4, 3, 3), (1,), "VALID", None, None, None, 1, 1, {0: "n", 2: "w"},
     [(1, 3, 1), (3, 3, 2), (1, 3, 5)]),
    ("1d_same_strided_nwc", (2, 9, 3), (3, 3, 4), (2,), "SAME", None, None, ("NWC", "WIO", "NWC"), 1, 1,
     {0: "n", 1: "w"}, [(1, 1, 3), (3, 8, 3)]),
    ("2d_nchw_same_lower", (2, 3, 7, 6), (4, 3, 3, 2), (2, 3), "SAME_LOWER", None, (2, 1), None, 1, 1,
     {0: "n", 2: "h", 3: "w"}, [(1, 3, 1, 1), (3, 3, 4, 9)]),
    ("2d_nhwc_explicit_dilated", (2, 7, 6, 3), (3, 2, 3, 4), (2, 1), [(1, -1), (2, 0)], (2, 1), (1, 2),
     ("NHWC", "HWIO", "NHWC"), 1, 1, {0: "n", 1: "h"}, [(1, 1, 6, 3), (3, 5, 6, 3)]),
    ("2d_depthwise", (2, 4, 6, 5), (8, 1, 3, 3), (1, 1), "SAME", None, None, None, 4, 1,
     {2: "h", 3: "w"}, [(2, 4, 1, 2), (2, 4, 9, 4)]),
    ("2d_grouped_chwn", (3, 5, 6, 2), (2, 2, 1, 6), (1, 2), "VALID", None, None,
     ("CHWN", "HWIO", "NHWC"), 3, 1, {1: "h", 3: "n"}, [(3, 2, 6, 1), (3, 7, 6, 3)]),
    ("2d_batch_group", (4, 3, 6, 5), (6, 3, 2, 2), (1, 1), [(0, 1), (1, 0)], None, None, None, 1, 2,
     {2: "h"}, [(4, 3, 1, 5), (4, 3, 8, 5)]),
    ("3d_ndhwc", (2, 5, 4, 6, 2), (2, 2, 3, 2, 3), (1, 2, 1), "SAME", None, (1, 1, 2),
     ("NDHWC", "DHWIO", "NDHWC"), 1, 1, {0: "n", 1: "d"}, [(1, 1, 4, 6, 2), (3, 3, 4, 6, 2)]),
]
IDS = [c[0] for c in CONFIGS]


def _fns(cfg):
    _, _, _, strides, padding, ld, rd, dn, g, b, _, _ = cfg

    def ours(x, w):
        return lax.conv_general_dilated(x, w, strides, padding, ld, rd, dn, g, b)

    def theirs(x, w):
        return jax.lax.conv_general_dilated(x, w, strides, padding, ld, rd, dn, g, b,
                                            precision=jax.lax.Precision.HIGHEST)
    return ours, theirs


def _close(got, want, dtype=np.float64):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_forward_eager_and_compiled(cfg):
    ours, theirs = _fns(cfg)
    lhs, rhs, axes, more = cfg[1], cfg[2], cfg[10], cfg[11]
    rng = np.random.default_rng(0)
    w = rng.standard_normal(rhs)
    static = dynjax.qjit(ours)
    dynamic = dynjax.qjit(ours, abstracted_axes=(axes, None))
    for shape in [lhs] + more:
        x = rng.standard_normal(shape)
        want = theirs(x, w)
        _close(ours(x, w), want)
        _close(dynamic(x, w), want)
    _close(static(x, w), want)
    assert dynamic.cache_info()["traces"] == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtypes(dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 8, 7)).astype(dtype)
    w = rng.standard_normal((4, 3, 3, 3)).astype(dtype)
    f = dynjax.qjit(lambda x, w: lax.conv_general_dilated(x, w, (2, 1), "SAME"),
                    abstracted_axes=({0: "n", 2: "h"}, None))
    want = jax.lax.conv_general_dilated(x, w, (2, 1), "SAME", precision=jax.lax.Precision.HIGHEST)
    _close(lax.conv_general_dilated(x, w, (2, 1), "SAME"), want, dtype)
    _close(f(x, w), want, dtype)
    # integers accumulate exactly; preferred_element_type widens the result
    xi, wi = (rng.integers(-4, 5, s).astype(np.int32) for s in ((2, 3, 5), (2, 3, 2)))
    got = lax.conv_general_dilated(xi, wi, (1,), "VALID", preferred_element_type=np.int64)
    want = jax.lax.conv_general_dilated(xi, wi, (1,), "VALID", preferred_element_type=np.int64)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(dynjax.qjit(lambda a, b: lax.conv_general_dilated(a, b, (1,), "VALID"))(xi, wi),
                                  jax.lax.conv_general_dilated(xi, wi, (1,), "VALID"))


@pytest.mark.parametrize("cfg", [c for c in CONFIGS if c[0] in
                                 ("1d_valid", "2d_nhwc_explicit_dilated", "2d_depthwise",
                                  "2d_grouped_chwn", "2d_batch_group", "3d_ndhwc")],
                         ids=lambda c: c[0])
def test_grad_both_operands(cfg):
    ours, theirs = _fns(cfg)
    lhs, rhs, axes, more = cfg[1], cfg[2], cfg[10], cfg[11]
    rng = np.random.default_rng(2)
    w = rng.standard_normal(rhs)

    def loss(conv):
        return lambda x, w: (conv(x, w) * jnp.sin(conv(x, w))).sum() if conv is ours else \
            (conv(x, w) * jjnp.sin(conv(x, w))).sum()
    g = dynjax.grad(loss(ours), (0, 1))
    reference = jax.jit(jax.grad(loss(theirs), (0, 1)))
    compiled = dynjax.qjit(g, abstracted_axes=(axes, None))
    for shape in [lhs] + more[:2]:
        x = rng.standard_normal(shape)
        want = reference(x, w)
        for got in (g(x, w), compiled(x, w)):
            for a, e in zip(got, want):
                _close(a, e)
    assert compiled.cache_info()["traces"] == 1


def test_second_order_and_jvp():
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 4, 7)), rng.standard_normal((4, 2, 3))
    tx, tw = rng.standard_normal(x.shape), rng.standard_normal(w.shape)

    def f(conv, np_):
        return lambda x, w: np_.sum(conv(x, w, (2,), [(1, 2)], feature_group_count=2) ** 3)
    got = dynjax.jvp(lambda x, w: lax.conv_general_dilated(x, w, (1,), "SAME", rhs_dilation=(2,),
                                                           feature_group_count=2), (x, w), (tx, tw))
    want = jax.jvp(lambda x, w: jax.lax.conv_general_dilated(x, w, (1,), "SAME", rhs_dilation=(2,),
                                                             feature_group_count=2), (x, w), (tx, tw))
    for a, e in zip(got, want):
        _close(a, e)
    # the Hessian-vector product goes through the transposes of the transposes (batch groups)
    hvp = dynjax.grad(lambda w: jnp.vdot(dynjax.grad(f(lax.conv_general_dilated, jnp), 1)(x, w), tw))
    want = jax.grad(lambda w: jjnp.vdot(jax.grad(f(jax.lax.conv_general_dilated, jjnp), 1)(x, w), tw))(w)
    _close(hvp(w), want)
    _close(dynjax.qjit(hvp)(w), want)


@pytest.mark.parametrize("cfg", [c for c in CONFIGS if c[0] in
                                 ("1d_same_strided_nwc", "2d_grouped_chwn", "2d_batch_group")],
                         ids=lambda c: c[0])
def test_vmap(cfg):
    ours, theirs = _fns(cfg)
    rng = np.random.default_rng(4)
    for in_axes in [(0, None), (None, 1), (1, 0)]:
        x = rng.standard_normal(np.insert(cfg[1], in_axes[0], 3) if in_axes[0] is not None else cfg[1])
        w = rng.standard_normal(np.insert(cfg[2], in_axes[1], 3) if in_axes[1] is not None else cfg[2])
        want = jax.vmap(theirs, in_axes)(x, w)
        _close(dynjax.vmap(ours, in_axes)(x, w), want)
        _close(dynjax.qjit(dynjax.vmap(ours, in_axes))(x, w), want)
    # a dynamic batch of both operands (member by member), and an empty batch
    f = dynjax.qjit(dynjax.vmap(ours), abstracted_axes=({0: "b"}, {0: "b"}))
    for b in (2, 0):
        x = rng.standard_normal((b,) + tuple(cfg[1]))
        w = rng.standard_normal((b,) + tuple(cfg[2]))
        want = jax.vmap(theirs)(x, w)
        _close(f(x, w), want)
        _close(dynjax.vmap(ours)(x, w), want)


def test_wrappers():
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((2, 3, 8, 7)), rng.standard_normal((4, 3, 3, 2))
    hi = jax.lax.Precision.HIGHEST
    _close(lax.conv(x, w, (1, 2), "SAME"), jax.lax.conv(x, w, (1, 2), "SAME", precision=hi))
    _close(lax.conv_with_general_padding(x, w, (2, 1), [(1, 1), (0, 2)], (2, 1), (1, 2)),
           jax.lax.conv_with_general_padding(x, w, (2, 1), [(1, 1), (0, 2)], (2, 1), (1, 2), precision=hi))
    xt, wt = rng.standard_normal((2, 5, 6, 3)), rng.standard_normal((3, 2, 3, 4))
    for padding in ("SAME", "VALID", [(1, 2), (0, 1)]):
        for tk in (False, True):
            rhs = wt if not tk else rng.standard_normal((3, 2, 4, 3))
            want = jax.lax.conv_transpose(xt, rhs, (2, 3), padding, transpose_kernel=tk, precision=hi)
            _close(lax.conv_transpose(xt, rhs, (2, 3), padding, transpose_kernel=tk), want)
    want = jax.lax.conv_transpose(xt, wt, (2, 1), "SAME", rhs_dilation=(1, 2), precision=hi)
    f = dynjax.qjit(lambda a, b: lax.conv_transpose(a, b, (2, 1), "SAME", rhs_dilation=(1, 2)),
                    abstracted_axes=({0: "n", 1: "h"}, None))
    _close(f(xt, wt), want)
    xs = rng.standard_normal((3, 4, 6, 3))
    _close(f(xs, wt), jax.lax.conv_transpose(xs, wt, (2, 1), "SAME", rhs_dilation=(1, 2), precision=hi))
    for dn in (None, ("NHWC", "OIHW", "NCHW")):
        xp = x if dn is None else np.moveaxis(x, 1, -1)
        want = jax.lax.conv_general_dilated_patches(xp, (2, 3), (1, 2), "SAME", dimension_numbers=dn,
                                                    precision=hi)
        _close(lax.conv_general_dilated_patches(xp, (2, 3), (1, 2), "SAME", dimension_numbers=dn), want)
    dn = lax.conv_dimension_numbers((1, 5, 6, 3), (3, 2, 3, 4), ("NHWC", "HWIO", "NHWC"))
    assert dn == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    assert tuple(map(tuple, dn)) == tuple(map(tuple, jax.lax.conv_dimension_numbers(
        (1, 5, 6, 3), (3, 2, 3, 4), ("NHWC", "HWIO", "NHWC"))))


def test_cnn_layer_like_stax():
    """A stax-style Conv -> Relu -> mean-pool -> Dense network: parameters from
    ``jax.example_libraries.stax``, the same forward pass and gradient in dynjax, compiled
    once for every batch size and image height."""
    init, apply = stax.serial(stax.Conv(5, (3, 3), padding="SAME", strides=(1, 2)), stax.Relu,
                              stax.Conv(4, (2, 2)), stax.Relu)
    _, params = init(jax.random.PRNGKey(0), (2, 9, 8, 3))
    params = jax.tree.map(np.asarray, params)
    dn = ("NHWC", "HWIO", "NHWC")

    def forward(params, x):
        (w1, b1), _, (w2, b2), _ = params
        h = jnp.maximum(lax.conv_general_dilated(x, w1, (1, 2), "SAME", dimension_numbers=dn) + b1, 0.0)
        h = jnp.maximum(lax.conv_general_dilated(h, w2, (1, 1), "VALID", dimension_numbers=dn) + b2, 0.0)
        return jnp.mean(h, axis=(1, 2))

    def loss(params, x):
        return jnp.sum(forward(params, x) ** 2)

    def jax_loss(params, x):
        return jjnp.sum(jjnp.mean(apply(params, x), axis=(1, 2)) ** 2)
    step = dynjax.qjit(dynjax.value_and_grad(loss), abstracted_axes=(None, {0: "n", 1: "h"}))
    rng = np.random.default_rng(6)
    reference = jax.jit(jax.value_and_grad(jax_loss))
    for shape in [(2, 9, 8, 3), (1, 4, 8, 3)]:
        x = rng.standard_normal(shape)
        _close(forward(params, x), jjnp.mean(apply(params, x), axis=(1, 2)))
        value, grads = step(params, x)
        jv, jg = reference(params, x)
        _close(value, jv)
        for a, e in zip(jax.tree.leaves(grads), jax.tree.leaves(jg)):
            np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-12)
    assert step.cache_info()["traces"] == 1


def test_jaxpr_and_cost_are_symbolic():
    f = lambda x, w: lax.conv_general_dilated(x, w, (2,), "SAME")  # noqa: E731
    closed = dynjax.make_jaxpr(f, abstracted_axes=({2: "w"}, None))(np.ones((2, 3, 9)), np.ones((4, 3, 3)))
    out = closed.jaxpr.outvars[-1].aval
    assert out.shape[:2] == (2, 4) and not isinstance(out.shape[2], int)
    cost = dynjax.cost_model.cost_analysis(f, np.ones((2, 3, 9)), np.ones((4, 3, 3)),
                                           abstracted_axes=({2: "w"}, None))
    for w in (1, 9, 10):
        # 2 FLOPs x (2 x 4 x ceil(w / 2)) outputs x 3 features x 3 taps, plus the size arithmetic
        conv_flops = 2 * 2 * 4 * -(-w // 2) * 3 * 3
        assert conv_flops <= cost.at(w=w)["flops"] <= conv_flops + 20


def test_errors():
    x, w = np.ones((2, 3, 8)), np.ones((4, 3, 3))
    with pytest.raises(TypeError, match="same dtypes"):
        lax.conv_general_dilated(x, w.astype(np.float32), (1,), "VALID")
    with pytest.raises(ValueError, match="feature_group_count must divide"):
        lax.conv_general_dilated(x, w, (1,), "VALID", feature_group_count=2)
    with pytest.raises(ValueError, match="rhs input feature"):
        lax.conv_general_dilated(x, np.ones((4, 2, 3)), (1,), "VALID")
    with pytest.raises(ValueError, match="At most one"):
        lax.conv_general_dilated(np.ones((2, 4, 8)), np.ones((4, 2, 3)), (1,), "VALID",
                                 feature_group_count=2, batch_group_count=2)
    with pytest.raises(RuntimeError, match="Unrecognized padding"):
        lax.conv_general_dilated(x, w, (1,), "FULL")
    with pytest.raises(ValueError, match="String padding is not implemented"):
        lax.conv_general_dilated(x, w, (1,), "SAME", lhs_dilation=(2,))
    with pytest.raises(ValueError, match="padding argument"):
        lax.conv_general_dilated(x, w, (1,), [(1,)])
    with pytest.raises(TypeError, match="dimension_numbers"):
        lax.conv_general_dilated(x, w, (1,), "VALID", dimension_numbers=("NCW", "OIW"))
    with pytest.raises(TypeError, match="ndim to be equal"):
        lax.conv_general_dilated(x, np.ones((4, 3)), (1,), "VALID")
    with pytest.raises(ValueError, match="window_strides"):
        lax.conv_general_dilated(x, w, (1, 1), "VALID")
    with pytest.raises(ValueError, match="Negative padding"):
        lax.conv_general_dilated(x, w, (1,), [(-5, -5)])


def test_numpy_correlate_and_convolve():
    """jnp.correlate / jnp.convolve in every mode against numpy and jax, on dynamic lengths."""
    f = dynjax.qjit(lambda a, v: [fn(a, v, m) for fn in (jnp.correlate, jnp.convolve)
                                  for m in ("full", "same", "valid")],
                    abstracted_axes=({0: "n"}, {0: "m"}))
    rng = np.random.default_rng(7)
    for n, m in [(5, 3), (3, 5), (1, 1), (4, 4)]:
        a, v = rng.standard_normal(n), rng.standard_normal(m)
        want = [fn(a, v, mode) for fn in (np.correlate, np.convolve) for mode in ("full", "same", "valid")]
        for got, e in zip(f(a, v), want):
            np.testing.assert_allclose(got, e, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(jnp.correlate(a, v), jjnp.correlate(a, v), rtol=1e-12)
    a = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    v = rng.standard_normal(2) + 1j * rng.standard_normal(2)
    np.testing.assert_allclose(jnp.correlate(a, v, "full"), np.correlate(a, v, "full"), rtol=1e-12)
    a, v = rng.standard_normal(6), rng.standard_normal(3)
    g = dynjax.grad(lambda a, v: jnp.sum(jnp.correlate(a, v, "same") ** 2), (0, 1))(a, v)
    e = jax.grad(lambda a, v: jjnp.sum(jjnp.correlate(a, v, "same") ** 2), (0, 1))(a, v)
    for x, y in zip(g, e):
        np.testing.assert_allclose(x, y, rtol=1e-12)
    with pytest.raises(ValueError, match="one-dimensional"):
        jnp.correlate(np.ones((2, 2)), np.ones(2))
