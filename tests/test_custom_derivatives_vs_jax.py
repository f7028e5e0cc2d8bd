"""The same custom-derivative programs written with dynjax and with jax give the same
values and show their rules the same things (which tangents are symbolic zeros, which
primals are perturbed, which cotangents are zero). Skipped where jax is not installed."""
import numpy as np
import pytest

import dynjax
import dynjax.numpy as dnp
from dynjax.custom_derivatives import SymbolicZero as DZero

import jax  # noqa: E402  (a test extra: the comparison oracle)
jax.config.update("jax_enable_x64", True)
import jax.numpy as jjnp  # noqa: E402
from jax.custom_derivatives import SymbolicZero as JZero  # noqa: E402

X = np.array([0.5, -1.2, 2.0])
Y = np.array([1.5, 0.3, -0.7])


def both(build):
    """``build(api, np_module, SymbolicZero, log)`` -> a function; returns the dynjax and jax
    versions with their logs."""
    dlog, jlog = [], []
    return (build(dynjax, dnp, DZero, dlog), dlog), (build(jax, jjnp, JZero, jlog), jlog)


def _sym_mul(api, m, Zero, log):
    @api.custom_jvp
    def f(x, y):
        return m.sin(x) * y

    def rule(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        log.append(tuple(isinstance(t, Zero) for t in tangents))
        out = m.zeros_like(x) if isinstance(tx, Zero) else 2.0 * m.cos(x) * y * tx
        if not isinstance(ty, Zero):
            out = out + 3.0 * m.sin(x) * ty
        return f(x, y), out
    f.defjvp(rule, symbolic_zeros=True)
    return f


CALLS = {
    "grad_x": lambda api, m, f: api.grad(lambda x, y: m.sum(f(x, y)))(X, Y),
    "grad_y": lambda api, m, f: api.grad(lambda x, y: m.sum(f(x, y)), argnums=1)(X, Y),
    "grad_xy": lambda api, m, f: api.grad(lambda x, y: m.sum(f(x, y)), argnums=(0, 1))(X, Y),
    "jvp_x": lambda api, m, f: api.jvp(lambda x: f(x, Y), (X,), (Y,)),
    "jvp_both": lambda api, m, f: api.jvp(f, (X, Y), (Y, X)),
    "vmap_grad": lambda api, m, f: api.vmap(api.grad(f))(X, Y),
    "jit_grad": lambda api, m, f: (api.qjit if api is dynjax else api.jit)(
        api.grad(lambda x, y: m.sum(f(x, y))))(X, Y),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_custom_jvp_symbolic_zeros_match_jax(call):
    (df, dlog), (jf, jlog) = both(_sym_mul)
    got, want = CALLS[call](dynjax, dnp, df), CALLS[call](jax, jjnp, jf)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-12)
    assert dlog[-1] == jlog[-1]


def _defjvps(api, m, Zero, log):
    @api.custom_jvp
    def f(x, y):
        return m.sin(x) * y
    f.defjvps(lambda tx, out, x, y: 2.0 * m.cos(x) * tx * y, None)
    return f


@pytest.mark.parametrize("call", sorted(CALLS))
def test_defjvps_matches_jax(call):
    (df, _), (jf, _) = both(_defjvps)
    got, want = CALLS[call](dynjax, dnp, df), CALLS[call](jax, jjnp, jf)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-12)


def _sym_vjp(api, m, Zero, log):
    @api.custom_vjp
    def f(x, y):
        return x * y, m.sin(x)

    def fwd(x, y):
        log.append(("fwd", x.perturbed, y.perturbed))
        return f(x.value, y.value), (x.value, y.value)

    def bwd(res, cts):
        x, y = res
        log.append(("bwd",) + tuple(isinstance(c, Zero) for c in cts))
        gx = m.zeros_like(x) if isinstance(cts[0], Zero) else 3.0 * y * cts[0]
        if not isinstance(cts[1], Zero):
            gx = gx + 2.0 * m.cos(x) * cts[1]
        return gx, (None if isinstance(cts[0], Zero) else 5.0 * x * cts[0])
    f.defvjp(fwd, bwd, symbolic_zeros=True)
    return f


VJP_CALLS = {
    "out0_x": lambda api, m, f: api.grad(lambda x, y: m.sum(f(x, y)[0]))(X, Y),
    "out1_xy": lambda api, m, f: api.grad(lambda x, y: m.sum(f(x, y)[1]), argnums=(0, 1))(X, Y),
    "both_y": lambda api, m, f: api.grad(lambda x, y: m.sum(f(x, y)[0] + f(x, y)[1]), argnums=1)(X, Y),
    "vmap": lambda api, m, f: api.vmap(api.grad(lambda x, y: f(x, y)[0] + f(x, y)[1]))(X, Y),
}


@pytest.mark.parametrize("call", sorted(VJP_CALLS))
def test_custom_vjp_symbolic_zeros_match_jax(call):
    (df, dlog), (jf, jlog) = both(_sym_vjp)
    got, want = VJP_CALLS[call](dynjax, dnp, df), VJP_CALLS[call](jax, jjnp, jf)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-12)
    assert dlog == jlog


def test_forward_mode_error_matches_jax():
    def build(api):
        @api.custom_vjp
        def f(x):
            return x
        f.defvjp(lambda x: (x, None), lambda r, g: (g,))
        return f
    errors = []
    for api in (dynjax, jax):
        with pytest.raises(TypeError) as info:
            api.jvp(build(api), (1.0,), (1.0,))
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_custom_gradient_and_closure_convert_match_jax():
    def build(api, m):
        @api.custom_gradient
        def f(x, y):
            s = m.sin(x)
            return s * y, lambda g: (2.0 * m.cos(x) * y * g, 3.0 * s * g)

        def conv(x):
            a = m.sin(x)
            c, hoisted = api.closure_convert(lambda z: z * a, x)
            return c(x, *hoisted), len(hoisted)
        return f, conv
    (df, dconv), (jf, jconv) = build(dynjax, dnp), build(jax, jjnp)
    for g, w in zip(dynjax.grad(lambda x, y: dnp.sum(df(x, y)), argnums=(0, 1))(X, Y),
                    jax.grad(lambda x, y: jjnp.sum(jf(x, y)), argnums=(0, 1))(X, Y)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)
    assert dconv(X)[1] == jconv(X)[1] == 0
    counts = {dynjax: [], jax: []}

    def loss(api, m, conv):
        def f(x):
            out, hoisted = conv(x)
            counts[api].append(hoisted)
            return m.sum(out)
        return f
    np.testing.assert_allclose(np.asarray(dynjax.grad(loss(dynjax, dnp, dconv))(X)),
                               np.asarray(jax.grad(loss(jax, jjnp, jconv))(X)), rtol=1e-12)
    assert counts[dynjax] == counts[jax] == [1]     # the traced sin(x) is hoisted under grad
