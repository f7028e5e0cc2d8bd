"""``dynjax.nn`` against ``jax.nn``: values (special values included), float32 / float64,
eagerly and compiled at static and dynamic sizes (0, 1, n with one trace), derivatives (against
jax and finite differences), ``vmap``, the stable forms (logsumexp of large values, rows of
``-inf``), ``where=`` masks, and argument errors."""
from __future__ import annotations

import jax
import jax.nn as jnn
import numpy as np
import pytest
import scipy.special as sps

import dynjax
import dynjax.nn as nn

jax.config.update("jax_enable_x64", True)

ELEMENTWISE = ("relu relu6 gelu silu swish sigmoid log_sigmoid softplus elu selu celu leaky_relu "
               "hard_tanh hard_sigmoid hard_silu soft_sign squareplus mish sparse_plus "
               "sparse_sigmoid").split()
SPECIAL = np.array([-np.inf, -50.0, -7.0, -6.0, -3.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 3.0, 6.0, 7.0,
                    50.0, 800.0, -800.0, np.inf, np.nan])
RTOL = {np.float64: 1e-13, np.float32: 2e-6}


def close(got, want, rtol, atol=0.0):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def grid(dt, n=41):
    return np.concatenate([SPECIAL, np.linspace(-8, 8, n)]).astype(dt)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_values_against_jax(name, dt):
    x = grid(dt)
    # gelu: JAX's 1 + tanh(z) cancels for negative x (dynjax uses sigmoid(2z)): absolute tolerance
    atol = (1e-13 if dt == np.float64 else 1e-6) if name == "gelu" else 0.0
    close(getattr(nn, name)(x), np.asarray(getattr(jnn, name)(x)), RTOL[dt], atol=atol)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_gelu_exact_and_parameters(dt):
    x = grid(dt)
    close(nn.gelu(x, approximate=False), np.asarray(jnn.gelu(x, approximate=False)), RTOL[dt] * 4, atol=1e-300)
    for alpha in (0.5, 2.0):
        close(nn.elu(x, alpha), np.asarray(jnn.elu(x, alpha)), RTOL[dt])
        close(nn.celu(x, alpha), np.asarray(jnn.celu(x, alpha)), RTOL[dt])
    close(nn.leaky_relu(x, 0.2), np.asarray(jnn.leaky_relu(x, 0.2)), RTOL[dt])


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_integer_inputs_as_jax(name):
    """Integers: promoted to float64, kept (relu, hard_tanh) or refused (sigmoid, silu), as JAX."""
    ints = np.array([-2, 0, 3, 7])
    try:
        want = np.asarray(getattr(jnn, name)(ints))
    except TypeError:
        with pytest.raises(TypeError, match="floating"):
            getattr(nn, name)(ints)
        return
    close(getattr(nn, name)(ints), want, 1e-13)


def test_all_elementwise_compiled_at_dynamic_and_static_sizes():
    fns = [getattr(nn, n) for n in ELEMENTWISE]
    program = lambda x: [f(x) for f in fns] + [nn.gelu(x, approximate=False)]
    dyn = dynjax.qjit(program, abstracted_axes={0: "n"})
    static = dynjax.qjit(program)
    rng = np.random.default_rng(0)
    for n in (0, 1, 7):
        x = np.concatenate([SPECIAL, rng.uniform(-8, 8, n)])[-n:] if n else np.zeros(0)
        eager = program(x)
        for got in (dyn(x), static(x)):
            for g, e in zip(got, eager):
                close(g, e, 1e-13, atol=1e-300)
    assert dyn.cache_info()["traces"] == 1


# the kinks: JAX's choices of the derivative there
KINKS = np.array([-6.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, 2.7, -4.2])


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_derivatives_against_jax(name):
    f, jf = getattr(nn, name), getattr(jnn, name)
    got = dynjax.vmap(dynjax.grad(f))(KINKS)
    want = np.asarray(jax.vmap(jax.grad(jf))(KINKS))
    close(got, want, 1e-12, atol=1e-13 if name == "gelu" else 1e-15)   # gelu: see above


def test_relu_derivative_at_zero_is_zero_compiled():
    g = dynjax.qjit(dynjax.grad(lambda x: dynjax.numpy.sum(nn.relu(x) + nn.relu6(x - 6.0))),
                    abstracted_axes={0: "n"})
    for n in (0, 1, 3):
        x = np.zeros(n)
        close(g(x), np.zeros(n), 0)
    close(g(np.array([-1.0, 0.0, 2.0, 6.0])), np.array([0.0, 0.0, 1.0, 1.0]), 0)


# ----------------------------------------------------------------------------------------------
# softmax, log_softmax, logsumexp
# ----------------------------------------------------------------------------------------------
ROWS = np.array([[1000.0, 1000.0, 999.0], [-np.inf, -np.inf, -np.inf], [1.0, 2.0, 3.0],
                 [-np.inf, 0.0, 1.0], [np.inf, 0.0, 1.0], [-1000.0, -1001.0, -1000.5]])


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_stable_forms_against_scipy_and_jax(dt):
    x = ROWS.astype(dt)
    xs = np.delete(x, 4, axis=0)   # a row holding +inf: scipy's log_softmax differs from JAX's NaNs
    with np.errstate(all="ignore"):
        for axis in (-1, 0, (0, 1), None):
            close(nn.logsumexp(xs, axis=axis), sps.logsumexp(xs, axis=axis).astype(dt), RTOL[dt])
            close(nn.logsumexp(xs, axis=axis, keepdims=True),
                  sps.logsumexp(xs, axis=axis, keepdims=True).astype(dt), RTOL[dt])
            if axis is not None:
                close(nn.softmax(xs, axis=axis), sps.softmax(xs, axis=axis).astype(dt), RTOL[dt], atol=1e-300)
                close(nn.log_softmax(xs, axis=axis), sps.log_softmax(xs, axis=axis).astype(dt), RTOL[dt])
    close(nn.softmax(x), np.asarray(jnn.softmax(x)), RTOL[dt], atol=1e-300)
    close(nn.log_softmax(x), np.asarray(jnn.log_softmax(x)), RTOL[dt])
    close(nn.logsumexp(x, axis=1), np.asarray(jnn.logsumexp(x, axis=1)), RTOL[dt])
    assert nn.logsumexp(np.array([1000.0, 1000.0])) == 1000.0 + np.log(2.0)
    assert nn.logsumexp(np.array([-np.inf, -np.inf])) == -np.inf
    assert np.isnan(nn.softmax(np.array([-np.inf, -np.inf]))).all()   # as JAX
    assert nn.logsumexp(np.zeros((0,))) == -np.inf


def test_where_masks_against_jax():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 5)) * 10
    where = rng.uniform(size=(4, 5)) > 0.4
    where[1] = False   # an all-masked row
    for axis in (-1, 0):
        close(nn.softmax(x, axis=axis, where=where), np.asarray(jnn.softmax(x, axis=axis, where=where)), 1e-13)
        close(nn.log_softmax(x, axis=axis, where=where),
              np.asarray(jnn.log_softmax(x, axis=axis, where=where)), 1e-13)
        close(nn.logsumexp(x, axis=axis, where=where), np.asarray(jnn.logsumexp(x, axis=axis, where=where)), 1e-13)
    close(nn.standardize(x, where=where), np.asarray(jnn.standardize(x, where=where)), 1e-11)


def test_logsumexp_b_and_return_sign():
    a = np.array([[1.0, 2.0, 3.0], [0.5, 0.5, -np.inf]])
    b = np.array([[1.0, -1.0, 0.5], [2.0, -1.0, 3.0]])
    for axis in (None, 1, 0):
        for rs in (False, True):
            got = nn.logsumexp(a, axis=axis, b=b, return_sign=rs)
            want = jnn.logsumexp(a, axis=axis, b=b, return_sign=rs)
            for g, w in zip(got if rs else [got], want if rs else [want]):
                close(g, np.asarray(w), 1e-13)
    # a negative sum without return_sign is NaN; b = 0 drops a term
    assert np.isnan(nn.logsumexp(np.array([0.0, 1.0]), b=np.array([1.0, -1.0])))
    close(nn.logsumexp(np.array([1e308, 0.0]), b=np.array([0.0, 1.0])), np.float64(0.0), 0)


def test_softmax_family_compiled_over_a_dynamic_axis():
    def program(x, w):
        return (nn.softmax(x), nn.log_softmax(x, axis=0), nn.logsumexp(x, axis=1), nn.logsumexp(x),
                nn.softmax(x, where=w), nn.standardize(x), nn.glu(x, axis=1), nn.logsumexp(x, axis=0))
    f = dynjax.qjit(program, abstracted_axes=({0: "n"}, {0: "n"}))
    rng = np.random.default_rng(2)
    for n in (0, 1, 5):
        x = rng.normal(size=(n, 4)) * 5
        w = rng.uniform(size=(n, 4)) > 0.3
        got = f(x, w)
        want = program(x, w)   # eager (checked against jax and scipy above)
        for g, e in zip(got, want):
            close(g, e, 1e-12, atol=1e-15)
    x = rng.normal(size=(5, 4))
    close(f(x, x > 0)[0], np.asarray(jnn.softmax(x)), 1e-13)
    assert f.cache_info()["traces"] == 1


def test_glu_on_a_dynamic_axis():
    f = dynjax.qjit(lambda x: nn.glu(x), abstracted_axes={0: "n"})
    for n in (0, 2, 6):
        x = np.linspace(-2, 2, n)
        close(f(x), np.asarray(jnn.glu(x)), 1e-14)
    with pytest.raises(ValueError, match="even"):
        nn.glu(np.ones(3))


def test_derivatives_of_softmax_family_against_jax_and_finite_differences():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3, 4))
    t = rng.normal(size=(3, 4))
    cases = [
        (lambda x: (nn.softmax(x) * t).sum(), lambda x: (jnn.softmax(x) * t).sum()),
        (lambda x: (nn.log_softmax(x, axis=0) * t).sum(), lambda x: (jnn.log_softmax(x, axis=0) * t).sum()),
        (lambda x: nn.logsumexp(x), lambda x: jnn.logsumexp(x)),
        (lambda x: (nn.logsumexp(x, axis=1, b=np.abs(t[:, :1]) + 0.5) * t[:, 0]).sum(),
         lambda x: (jnn.logsumexp(x, axis=1, b=np.abs(t[:, :1]) + 0.5) * t[:, 0]).sum()),
        (lambda x: (nn.standardize(x) * t).sum(), lambda x: (jnn.standardize(x) * t).sum()),
        (lambda x: (nn.glu(x) * t[:, :2]).sum(), lambda x: (jnn.glu(x) * t[:, :2]).sum()),
    ]
    for f, jf in cases:
        g = dynjax.grad(f)(x)
        close(g, np.asarray(jax.grad(jf)(x)), 1e-10, atol=1e-13)
        eps = 1e-6
        d = rng.normal(size=x.shape)
        fd = (f(x + eps * d) - f(x - eps * d)) / (2 * eps)
        np.testing.assert_allclose(np.sum(g * d), fd, rtol=1e-6, atol=1e-8)
    # logsumexp of equal large values: the gradient is the uniform softmax, no NaN
    close(dynjax.grad(nn.logsumexp)(np.array([1000.0, 1000.0])), np.array([0.5, 0.5]), 1e-15)


def test_vmap_matches_the_loop():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 4, 5))
    for f in (nn.softmax, nn.log_softmax, lambda v: nn.logsumexp(v, axis=0), nn.standardize,
              lambda v: nn.one_hot(jnp_argmax(v), 5)):
        got = dynjax.vmap(f)(x)
        want = np.stack([f(x[i]) for i in range(3)])
        close(got, want, 1e-14)


def jnp_argmax(v):
    return dynjax.numpy.argmax(v, axis=-1)


# ----------------------------------------------------------------------------------------------
# one_hot and standardize
# ----------------------------------------------------------------------------------------------
def test_one_hot_against_jax():
    idx = np.array([[0, 2], [5, -1]])
    for axis in (-1, 0, 1):
        for dtype in (None, np.float32, np.int32, np.bool_):
            got = nn.one_hot(idx, 4, dtype=dtype, axis=axis)
            want = np.asarray(jnn.one_hot(idx, 4, dtype=dtype or np.float64, axis=axis))
            close(got, want, 0)


def test_one_hot_with_a_traced_number_of_classes():
    f = dynjax.qjit(lambda idx, k: nn.one_hot(idx, k), abstracted_axes=({0: "n"}, None))
    for n, k in ((0, 3), (1, 1), (4, 6)):
        idx = np.arange(n) % 5
        close(f(idx, k), np.asarray(jnn.one_hot(idx, k, dtype=np.float64)), 0)
    assert f.cache_info()["traces"] == 1


def test_standardize_options_against_jax():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3, 6)) * 3 + 1
    close(nn.standardize(x, axis=0), np.asarray(jnn.standardize(x, axis=0)), 1e-11)
    close(nn.standardize(x, mean=0.5, variance=2.0), np.asarray(jnn.standardize(x, mean=0.5, variance=2.0)), 1e-14)
    close(nn.standardize(x, algorithm="standard"), np.asarray(jnn.standardize(x)), 1e-11)
    x32 = x.astype(np.float32)
    close(nn.standardize(x32), np.asarray(jnn.standardize(x32)), 1e-5, atol=1e-6)


def test_argument_errors():
    with pytest.raises(ValueError, match="out of bounds"):
        nn.softmax(np.ones((2, 3)), axis=2)
    with pytest.raises(TypeError, match="where"):
        nn.softmax(np.ones(3), where=np.ones(3))
    with pytest.raises(TypeError, match="axis"):
        nn.logsumexp(np.ones(3), axis=1.5)
    with pytest.raises(ValueError, match="algorithm"):
        nn.standardize(np.ones(3), algorithm="slow")
    with pytest.raises(ValueError, match="num_classes|negative"):
        nn.one_hot(np.array([1]), -2)


# --- tanh, log1mexp, logmeanexp ---------------------------------------------------------------
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_tanh_log1mexp_against_jax(dt):
    x = grid(dt)
    close(nn.tanh(x), jnn.tanh(x), RTOL[dt])
    pos = np.concatenate([[0.0, 1e-300, 1e-10, 0.1, np.log(2.0) - 1e-9, np.log(2.0), 0.7, 1.0, 10.0,
                           50.0, 800.0, np.inf], np.linspace(0.01, 8, 23)]).astype(dt)
    close(nn.log1mexp(pos), jnn.log1mexp(pos), RTOL[dt])
    f = dynjax.qjit(nn.log1mexp, abstracted_axes={0: "n"})
    close(f(pos), jnn.log1mexp(pos), RTOL[dt])
    close(nn.log1mexp(np.arange(1, 4)), jnn.log1mexp(np.arange(1, 4)), 1e-13)   # ints: float64
    inner = pos[(pos > 1e-5) & np.isfinite(pos)]
    close(dynjax.vmap(dynjax.grad(nn.log1mexp))(inner), jax.vmap(jax.grad(jnn.log1mexp))(inner),
          RTOL[dt])


def test_logmeanexp_against_jax():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3, 4)) * 10
    w = rng.random((3, 4)) > 0.4
    for kw in (dict(), dict(axis=1), dict(axis=(0, 1)), dict(axis=0, keepdims=True),
               dict(axis=1, where=w), dict(where=w, keepdims=True)):
        close(nn.logmeanexp(x, **kw), jnn.logmeanexp(x, **kw), 1e-13)
    f = dynjax.qjit(lambda x: nn.logmeanexp(x, axis=0), abstracted_axes={0: "n"})
    for n in (1, 5):
        y = rng.normal(size=(n, 3))
        close(f(y), jnn.logmeanexp(y, axis=0), 1e-13)
    close(dynjax.grad(lambda x: nn.logmeanexp(x))(x), jax.grad(lambda x: jnn.logmeanexp(x))(x), 1e-12)


# --- dot_product_attention ----------------------------------------------------------------------
def _attention_inputs(rng, B, T, S, N, K, H, dt=np.float64):
    q = rng.normal(size=(B, T, N, H)).astype(dt)
    k = rng.normal(size=(B, S, K, H)).astype(dt)
    v = rng.normal(size=(B, S, K, H)).astype(dt)
    return q, k, v


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_dot_product_attention_against_jax(dt):
    rng = np.random.default_rng(4)
    B, T, S, N, K, H = 2, 5, 7, 4, 2, 3
    q, k, v = _attention_inputs(rng, B, T, S, N, K, H, dt)
    bias, bias1 = rng.normal(size=(B, N, T, S)).astype(dt), rng.normal(size=(1, 1, T, S)).astype(dt)
    mask, mask1 = rng.random((B, N, T, S)) > 0.3, rng.random((B, 1, T, S)) > 0.3
    ql, kl = np.array([3, 5], np.int32), np.array([7, 2], np.int32)
    tol = 5e-6   # the softmax is computed in float32 for every dtype (as in JAX)
    for kw in (dict(), dict(bias=bias), dict(bias=bias1), dict(mask=mask), dict(mask=mask1),
               dict(is_causal=True), dict(local_window_size=(1, 2)), dict(local_window_size=1),
               dict(query_seq_lengths=ql), dict(key_value_seq_lengths=kl), dict(scale=0.3),
               dict(query_seq_lengths=ql, key_value_seq_lengths=kl, is_causal=True, bias=bias,
                    mask=mask), dict(implementation="xla"),
               dict(return_residual=True), dict(return_residual=True, is_causal=True,
                                                query_seq_lengths=ql)):
        got = nn.dot_product_attention(q, k, v, **kw)
        want = jnn.dot_product_attention(q, k, v, **kw)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            close(g, w, tol, tol)
    # TNH operands, multi-query attention (K = 1)
    q3, k3, v3 = q[0], k[0, :, :1], v[0, :, :1]
    close(nn.dot_product_attention(q3, k3, v3), jnn.dot_product_attention(q3, k3, v3), tol, tol)
    with pytest.raises(ValueError):
        nn.dot_product_attention(q, k, v, implementation="cudnn")
    with pytest.raises(ValueError):
        nn.dot_product_attention(q[:, :, :3], k, v)        # 3 query heads for 2 key heads
    with pytest.raises(ValueError):
        nn.dot_product_attention(q, k, v, query_seq_lengths=ql.astype(np.int64))


@pytest.mark.slow
def test_dot_product_attention_dynamic_sizes_grad_vmap():
    rng = np.random.default_rng(5)
    N, K, H = 4, 2, 3
    f = dynjax.qjit(lambda q, k, v, ql, kl: nn.dot_product_attention(
        q, k, v, is_causal=True, query_seq_lengths=ql, key_value_seq_lengths=kl, return_residual=True),
        abstracted_axes=({0: "b", 1: "t"}, {0: "b", 1: "s"}, {0: "b", 1: "s"}, {0: "b"}, {0: "b"}))
    for B, T, S in ((2, 5, 7), (1, 3, 3), (3, 1, 4), (2, 0, 3)):
        q, k, v = _attention_inputs(rng, B, T, S, N, K, H)
        ql = rng.integers(0, T + 1, B).astype(np.int32)
        kl = rng.integers(1, S + 1, B).astype(np.int32)
        want = jnn.dot_product_attention(q, k, v, is_causal=True, query_seq_lengths=ql,
                                         key_value_seq_lengths=kl, return_residual=True)
        for g, w in zip(f(q, k, v, ql, kl), want):
            close(g, w, 5e-6, 5e-6)
    q, k, v = _attention_inputs(rng, 2, 5, 6, N, K, H)
    bias = rng.normal(size=(2, N, 5, 6))

    def loss(mod):
        return lambda q, k, v, b: mod.dot_product_attention(q, k, v, b, is_causal=True).sum()
    for g, w in zip(dynjax.grad(loss(nn), argnums=(0, 1, 2, 3))(q, k, v, bias),
                    jax.grad(loss(jnn), argnums=(0, 1, 2, 3))(q, k, v, bias)):
        close(g, w, 5e-6, 5e-6)
    gq = dynjax.qjit(dynjax.grad(lambda q, k, v: nn.dot_product_attention(q, k, v, local_window_size=(1, 1)).sum()),
                     abstracted_axes=({1: "t"}, {1: "s"}, {1: "s"}))(q, k, v)
    close(gq, jax.grad(lambda q, k, v: jnn.dot_product_attention(q, k, v, local_window_size=(1, 1)).sum())(q, k, v),
          5e-6, 5e-6)
    close(dynjax.vmap(nn.dot_product_attention)(q, k, v), jax.vmap(jnn.dot_product_attention)(q, k, v),
          5e-6, 5e-6)


def test_scaled_matmul_is_its_documented_formula():
    """JAX computes scaled_matmul only through cuDNN (it has no CPU lowering): dynjax follows its
    documented definition, on every float type it has."""
    rng = np.random.default_rng(6)
    a, b = rng.normal(size=(2, 3, 64)), rng.normal(size=(2, 4, 64))
    sa, sb = rng.random((2, 3, 2)), rng.random((2, 4, 2))
    want = np.einsum("BMK,BNK->BMN", a * np.repeat(sa, 32, axis=-1), b * np.repeat(sb, 32, axis=-1))
    close(nn.scaled_matmul(a, b, sa, sb), want.astype(np.float32), 2e-6, 1e-5)
    close(nn.scaled_matmul(a, b, sa, sb, preferred_element_type=np.float64), want, 1e-12, 1e-12)
    f = dynjax.qjit(lambda a, b, sa, sb: nn.scaled_matmul(a, b, sa, sb, np.float64),
                    abstracted_axes=({1: "m"}, {1: "n"}, {1: "m"}, {1: "n"}))
    close(f(a, b, sa, sb), want, 1e-12, 1e-12)
    with pytest.raises(ValueError):
        nn.scaled_matmul(a, b, sa, rng.random((2, 4, 4)))
