"""``custom_jvp`` / ``custom_vjp`` composed with ``vmap`` in every order (issue 20, item 1).

A derivative taken of a ``vmap`` must use the custom rule, as ``vmap`` of a derivative does:
the batched call keeps a batched rule. The oracles are

* the custom rule's own mathematics: ``sin`` with a rule of ``2 cos(x) t``, which
  deliberately differs from the true derivative (differentiating the body would give
  ``cos``);
* finite differences of a numpy function, for rules that are the true derivative.

Every order of ``jvp`` / ``vjp`` / ``grad`` / ``vmap`` / ``qjit`` is checked, with loops and
conditionals inside or outside the ``vmap``, nested ``vmap``, dynamic batch sizes, shared
(unbatched) arguments, traced ``nondiff_argnums`` values and ``bwd`` returning ``None``.
"""
import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import grad, jacfwd, jacrev, jvp, lax, linearize, qjit, vjp, vmap
from helpers import fd_grad

XS = np.array([0.3, 1.1, 2.0, -0.7])
TS = np.array([1.0, -2.0, 0.5, 3.0])


def rule(x):
    """The derivative the custom rules claim for ``sin``: twice the true one."""
    return 2 * np.cos(x)


@dynjax.custom_jvp
def sin_j(x):
    return jnp.sin(x)


@sin_j.defjvp
def _sin_j_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return sin_j(x), 2.0 * jnp.cos(x) * t


@dynjax.custom_vjp
def sin_v(x):
    return jnp.sin(x)


sin_v.defvjp(lambda x: (sin_v(x), x), lambda x, ct: (2.0 * jnp.cos(x) * ct,))

BOTH = [pytest.param(sin_j, id="custom_jvp"), pytest.param(sin_v, id="custom_vjp")]


def close(got, want):
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


# ==============================================================================================
# Reverse mode (both primitives), every order with vmap, loops and conditionals
# ==============================================================================================
def _scan_member(F):
    return lambda x: lax.scan(lambda c, y: (c + F(y), 0.0), 0.0, x[None])[0]


REVERSE = {
    "grad(vmap-sum)": lambda F: grad(lambda x: vmap(F)(x).sum())(XS),
    "vmap(grad)": lambda F: vmap(grad(F))(XS),
    "qjit(grad(vmap))": lambda F: qjit(grad(lambda x: vmap(F)(x).sum()), abstracted_axes={0: "b"})(XS),
    "qjit(vmap(grad))": lambda F: qjit(vmap(grad(F)), abstracted_axes={0: "b"})(XS),
    "vmap(qjit(grad))": lambda F: vmap(qjit(grad(F)))(XS),
    "grad(qjit(vmap))": lambda F: grad(lambda x: qjit(vmap(F))(x).sum())(XS),
    "grad(vmap(vmap))": lambda F: grad(lambda x: vmap(vmap(F))(x.reshape(2, 2)).sum())(XS),
    "vjp(vmap)": lambda F: vjp(vmap(F), XS)[1](np.ones(4))[0],
    "vmap(vjp)": lambda F: vmap(lambda x: vjp(F, x)[1](1.0)[0])(XS),
    "diag(jacrev(vmap))": lambda F: np.diag(np.asarray(jacrev(vmap(F))(XS))),
    "grad(scan(vmap))": lambda F: grad(
        lambda x: lax.scan(lambda c, y: (c + vmap(F)(y).sum(), 0.0), 0.0, x[None])[0])(XS),
    "grad(vmap(scan))": lambda F: grad(lambda x: vmap(_scan_member(F))(x).sum())(XS),
    "vmap(grad(scan))": lambda F: vmap(grad(_scan_member(F)))(XS),
    "grad(fori(vmap))": lambda F: grad(
        lambda x: lax.fori_loop(0, 1, lambda i, c: c + vmap(F)(x).sum(), 0.0))(XS),
    "grad(vmap(fori))": lambda F: grad(
        lambda x: vmap(lambda y: lax.fori_loop(0, 1, lambda i, c: c + F(y), 0.0))(x).sum())(XS),
    "grad(for_loop(vmap))": lambda F: grad(
        lambda x: dynjax.for_loop(0, 1, 1)(lambda i, c: c + vmap(F)(x).sum())(0.0))(XS),
    "grad(cond(vmap))": lambda F: grad(
        lambda x: lax.cond(x[0] > -5.0, lambda y: vmap(F)(y).sum(), lambda y: y.sum(), x))(XS),
    "grad(vmap(cond))": lambda F: grad(
        lambda x: vmap(lambda y: lax.cond(y > -5.0, F, lambda z: z, y))(x).sum())(XS),
    "vmap(grad(cond))": lambda F: vmap(grad(lambda y: lax.cond(y > -5.0, F, lambda z: z, y)))(XS),
    "qjit(grad(scan(vmap)))": lambda F: qjit(grad(
        lambda x: lax.scan(lambda c, y: (c + vmap(F)(y).sum(), 0.0), 0.0, x[None])[0]),
        abstracted_axes={0: "b"})(XS),
    "qjit(grad(vmap(scan)))": lambda F: qjit(grad(lambda x: vmap(_scan_member(F))(x).sum()),
                                             abstracted_axes={0: "b"})(XS),
    "qjit(vmap(grad(fori)))": lambda F: qjit(vmap(grad(
        lambda y: lax.fori_loop(0, 2, lambda i, c: c + F(y), 0.0))), abstracted_axes={0: "b"})(XS) / 2,
}


@pytest.mark.parametrize("F", BOTH)
@pytest.mark.parametrize("order", sorted(REVERSE))
def test_reverse_mode_uses_the_rule(F, order):
    close(REVERSE[order](F), rule(XS))


# ==============================================================================================
# Forward mode (custom_jvp), every order with vmap
# ==============================================================================================
FORWARD = {
    "jvp(vmap)": lambda: jvp(vmap(sin_j), (XS,), (TS,))[1],
    "vmap(jvp)": lambda: vmap(lambda x, t: jvp(sin_j, (x,), (t,))[1])(XS, TS),
    "jvp(vmap(vmap))": lambda: jvp(vmap(vmap(sin_j)), (XS.reshape(2, 2),), (TS.reshape(2, 2),))[1].ravel(),
    "vmap(vmap(jvp))": lambda: vmap(vmap(lambda x, t: jvp(sin_j, (x,), (t,))[1]))(
        XS.reshape(2, 2), TS.reshape(2, 2)).ravel(),
    "qjit(jvp(vmap))": lambda: qjit(lambda x, t: jvp(vmap(sin_j), (x,), (t,))[1],
                                    abstracted_axes={0: "b"})(XS, TS),
    "jvp(qjit(vmap))": lambda: jvp(qjit(vmap(sin_j)), (XS,), (TS,))[1],
    "vmap(qjit(jvp))": lambda: vmap(qjit(lambda x, t: jvp(sin_j, (x,), (t,))[1]))(XS, TS),
    "linearize(vmap)": lambda: linearize(vmap(sin_j), XS)[1](TS),
    "jacfwd(vmap)@t": lambda: np.asarray(jacfwd(vmap(sin_j))(XS)) @ TS,
    "jvp(scan(vmap))": lambda: jvp(lambda x: lax.scan(lambda c, y: (c + vmap(sin_j)(y), 0.0),
                                                      jnp.zeros(4), x[None])[0], (XS,), (TS,))[1],
    "jvp(vmap(scan))": lambda: jvp(vmap(_scan_member(sin_j)), (XS,), (TS,))[1],
    "vmap(jvp(scan))": lambda: vmap(lambda x, t: jvp(_scan_member(sin_j), (x,), (t,))[1])(XS, TS),
    "jvp(fori(vmap))": lambda: jvp(lambda x: lax.fori_loop(0, 1, lambda i, c: c + vmap(sin_j)(x),
                                                           jnp.zeros(4)), (XS,), (TS,))[1],
    "jvp(vmap(fori))": lambda: jvp(vmap(lambda y: lax.fori_loop(0, 1, lambda i, c: c + sin_j(y), 0.0)),
                                   (XS,), (TS,))[1],
    "jvp(cond(vmap))": lambda: jvp(lambda x: lax.cond(x[0] > -5.0, vmap(sin_j), lambda y: y, x),
                                   (XS,), (TS,))[1],
    "jvp(vmap(cond))": lambda: jvp(vmap(lambda y: lax.cond(y > -5.0, sin_j, lambda z: z, y)),
                                   (XS,), (TS,))[1],
    "vmap(jvp(cond))": lambda: vmap(lambda x, t: jvp(lambda y: lax.cond(y > -5.0, sin_j, lambda z: z, y),
                                                     (x,), (t,))[1])(XS, TS),
    "qjit(jvp(scan(vmap)))": lambda: qjit(lambda x, t: jvp(
        lambda x: lax.scan(lambda c, y: (c + vmap(sin_j)(y), 0.0), jnp.zeros_like(x), x[None])[0],
        (x,), (t,))[1], abstracted_axes={0: "b"})(XS, TS),
}


@pytest.mark.parametrize("order", sorted(FORWARD))
def test_forward_mode_uses_the_rule(order):
    close(FORWARD[order](), rule(XS) * TS)


def test_second_derivative_differentiates_the_batched_rule():
    # d/dx of the rule's 2 cos(x): -2 sin(x), whether the vmap is inside or outside
    close(grad(lambda x: grad(lambda y: vmap(sin_j)(y).sum())(x).sum())(XS), -2 * np.sin(XS))
    close(vmap(grad(grad(sin_j)))(XS), -2 * np.sin(XS))
    close(jvp(lambda x: jvp(vmap(sin_j), (x,), (TS,))[1], (XS,), (np.ones(4),))[1], -2 * np.sin(XS) * TS)


def test_vmap_of_custom_function_keeps_the_call():
    # the batched program is still one custom_jvp_call, whose rule is the batched rule
    text = str(dynjax.make_jaxpr(vmap(sin_j), abstracted_axes={0: "b"})(XS))
    assert "custom_jvp_call" in text and "batched" in text and "sin" in text
    text = str(dynjax.make_jaxpr(vmap(sin_v))(XS))
    assert "custom_vjp_call" in text
    close(vmap(sin_j)(XS), np.sin(XS))
    close(qjit(vmap(sin_v), abstracted_axes={0: "b"})(XS), np.sin(XS))


# ==============================================================================================
# Rules that are the true derivative: finite differences
# ==============================================================================================
@dynjax.custom_jvp
def softplus_j(x, w):
    return jnp.log1p(jnp.exp(x * w))


@softplus_j.defjvp
def _softplus_jvp(primals, tangents):
    (x, w), (tx, tw) = primals, tangents
    s = 1.0 / (1.0 + jnp.exp(-x * w))
    return softplus_j(x, w), s * (tx * w + x * tw)


@dynjax.custom_vjp
def softplus_v(x, w):
    return jnp.log1p(jnp.exp(x * w))


def _softplus_fwd(x, w):
    return softplus_v(x, w), (x, w)


def _softplus_bwd(res, ct):
    x, w = res
    s = 1.0 / (1.0 + jnp.exp(-x * w))
    return s * w * ct, s * x * ct


softplus_v.defvjp(_softplus_fwd, _softplus_bwd)
SOFTPLUS = [pytest.param(softplus_j, id="custom_jvp"), pytest.param(softplus_v, id="custom_vjp")]
W = 0.8


def _np_loss(x, w):
    return np.sum(np.log1p(np.exp(x * w)))


@pytest.mark.parametrize("F", SOFTPLUS)
def test_true_rule_against_finite_differences(F):
    shared = vmap(F, in_axes=(0, None))
    gx, gw = grad(lambda x, w: shared(x, w).sum(), argnums=(0, 1))(XS, W)
    np.testing.assert_allclose(gx, fd_grad(lambda x: _np_loss(x, W), XS), rtol=1e-8)
    np.testing.assert_allclose(gw, fd_grad(lambda w: _np_loss(XS, w), W), rtol=1e-8)
    # the weight shared by the batch: its cotangent is the sum over the members
    g = qjit(grad(lambda w, x: shared(x, w).sum()), abstracted_axes=(None, {0: "b"}))
    for n in (1, 4, 7):
        x = np.linspace(-1, 2, n)
        np.testing.assert_allclose(g(W, x), fd_grad(lambda w: _np_loss(x, w), W), rtol=1e-8)
    assert g.traces == 1
    per_member = vmap(grad(F, argnums=1), in_axes=(0, None))(XS, W)
    np.testing.assert_allclose(per_member, [fd_grad(lambda w: _np_loss(x, w), W) for x in XS], rtol=1e-8)


def test_true_rule_forward_against_finite_differences():
    eps = 1e-6
    want = (np.log1p(np.exp((XS + eps * TS) * W)) - np.log1p(np.exp((XS - eps * TS) * W))) / (2 * eps)
    got = jvp(lambda x: vmap(softplus_j, in_axes=(0, None))(x, W), (XS,), (TS,))[1]
    np.testing.assert_allclose(got, want, rtol=1e-8)
    got = jvp(lambda w: vmap(softplus_j, in_axes=(0, None))(XS, w), (W,), (1.0,))[1]
    want = (np.log1p(np.exp(XS * (W + eps))) - np.log1p(np.exp(XS * (W - eps)))) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-8)


# ==============================================================================================
# Shared (unbatched) arguments: the member cotangents are summed
# ==============================================================================================
@dynjax.custom_jvp
def scaled_j(w, x):
    return jnp.sin(w * x)


@scaled_j.defjvp
def _scaled_jvp(primals, tangents):
    (w, x), (tw, tx) = primals, tangents
    return scaled_j(w, x), 2.0 * jnp.cos(w * x) * (x * tw + w * tx)


@dynjax.custom_vjp
def scaled_v(w, x):
    return jnp.sin(w * x)


scaled_v.defvjp(lambda w, x: (scaled_v(w, x), (w, x)),
                lambda r, ct: (2.0 * jnp.cos(r[0] * r[1]) * r[1] * ct, 2.0 * jnp.cos(r[0] * r[1]) * r[0] * ct))


@pytest.mark.parametrize("F", [pytest.param(scaled_j, id="custom_jvp"), pytest.param(scaled_v, id="custom_vjp")])
def test_shared_argument(F):
    w = 0.7
    dw = 2 * np.cos(w * XS) * XS
    shared = vmap(F, in_axes=(None, 0))
    close(grad(lambda w: shared(w, XS).sum())(w), dw.sum())
    close(grad(lambda x: shared(w, x).sum())(XS), 2 * np.cos(w * XS) * w)
    close(jacrev(lambda w: shared(w, XS))(w), dw)
    close(vmap(grad(F), in_axes=(None, 0))(w, XS), dw)
    close(qjit(grad(lambda w, x: shared(w, x).sum()), abstracted_axes=(None, {0: "b"}))(w, XS), dw.sum())
    if F is scaled_j:
        close(jvp(lambda w: shared(w, XS), (w,), (1.0,))[1], dw)


# ==============================================================================================
# Traced nondiff_argnums values under vmap
# ==============================================================================================
CS = np.array([1.0, 2.0, -3.0, 0.5])
scale_j = dynjax.custom_jvp(lambda c, x: c * jnp.sin(x), nondiff_argnums=(0,))
scale_j.defjvp(lambda c, p, t: (scale_j(c, p[0]), c * 2.0 * jnp.cos(p[0]) * t[0]))
scale_v = dynjax.custom_vjp(lambda c, x: c * jnp.sin(x), nondiff_argnums=(0,))
scale_v.defvjp(lambda c, x: (scale_v(c, x), x), lambda c, x, ct: (c * 2.0 * jnp.cos(x) * ct,))


@pytest.mark.parametrize("F", [pytest.param(scale_j, id="custom_jvp"), pytest.param(scale_v, id="custom_vjp")])
def test_batched_nondiff_argument(F):
    want = CS * rule(XS)
    close(grad(lambda x: vmap(F)(CS, x).sum())(XS), want)
    close(vmap(lambda c, x: grad(lambda y: F(c, y))(x))(CS, XS), want)
    close(qjit(grad(lambda x, c: vmap(F)(c, x).sum()), abstracted_axes={0: "b"})(XS, CS), want)
    close(grad(lambda x: lax.scan(lambda k, y: (k + vmap(F)(CS, y).sum(), 0.0), 0.0, x[None])[0])(XS), want)
    close(grad(lambda x: vmap(lambda c, y: lax.fori_loop(0, 1, lambda i, k: k + F(c, y), 0.0))(CS, x).sum())(XS),
          want)
    # a nondiff value shared by the batch
    close(grad(lambda x: vmap(F, in_axes=(None, 0))(2.5, x).sum())(XS), 2.5 * rule(XS))
    if F is scale_j:
        close(jvp(lambda x: vmap(F)(CS, x), (XS,), (TS,))[1], want * TS)
        close(vmap(lambda c, x, t: jvp(lambda y: F(c, y), (x,), (t,))[1])(CS, XS, TS), want * TS)


@pytest.mark.parametrize("F", [pytest.param(scale_j, id="custom_jvp"), pytest.param(scale_v, id="custom_vjp")])
def test_differentiating_a_nondiff_argument_is_a_type_error(F):
    with pytest.raises(TypeError, match="nondiff_argnums"):
        grad(lambda c: vmap(F)(c, XS).sum())(CS)


# ==============================================================================================
# bwd returning None under vmap
# ==============================================================================================
times_v = dynjax.custom_vjp(lambda x, y: jnp.sin(x) * y)
times_v.defvjp(lambda x, y: (times_v(x, y), (x, y)), lambda r, ct: (2.0 * jnp.cos(r[0]) * r[1] * ct, None))
YS = np.array([1.5, 2.0, 2.5, -1.0])


def test_bwd_none_is_a_zero_cotangent_under_vmap():
    gx, gy = grad(lambda x, y: vmap(times_v)(x, y).sum(), argnums=(0, 1))(XS, YS)
    close(gx, rule(XS) * YS)
    close(gy, np.zeros(4))
    close(grad(lambda y: vmap(times_v, in_axes=(0, None))(XS, y).sum())(2.0), 0.0)
    close(vmap(grad(times_v, argnums=1))(XS, YS), np.zeros(4))
    g = qjit(grad(lambda x, y: vmap(times_v)(x, y).sum(), argnums=(0, 1)), abstracted_axes={0: "b"})
    for n in (0, 3):
        gx, gy = g(XS[:n], YS[:n])
        close(gx, rule(XS[:n]) * YS[:n])
        close(gy, np.zeros(n))


# ==============================================================================================
# A rule closing over a value of the vmap (the vmap still runs when the rule is called)
# ==============================================================================================
def _with_closure(x, c):
    @dynjax.custom_jvp
    def k(y):
        return jnp.sin(y) * c

    @k.defjvp
    def _k_jvp(primals, tangents):
        return k(primals[0]), 2.0 * jnp.cos(primals[0]) * c * tangents[0]
    return k(x)


def test_rule_closing_over_a_batched_value():
    want = rule(XS) * CS
    close(jvp(lambda x: vmap(_with_closure)(x, CS), (XS,), (TS,))[1], want * TS)
    close(grad(lambda x: vmap(_with_closure)(x, CS).sum())(XS), want)
    close(vmap(grad(_with_closure))(XS, CS), want)


# ==============================================================================================
# Dynamic batch sizes and member sizes
# ==============================================================================================
@pytest.mark.parametrize("F", BOTH)
def test_dynamic_batch_and_member_sizes(F):
    g = qjit(grad(lambda x: vmap(F)(x).sum()), abstracted_axes={0: "b", 1: "n"})
    for shape in ((2, 3), (4, 1), (0, 2), (3, 0)):
        x = np.linspace(-2, 2, int(np.prod(shape))).reshape(shape)
        close(g(x), rule(x))
    assert g.traces == 1
    # the batch runs inside a loop body whose scanned axis and member axis are dynamic
    h = qjit(grad(lambda x: lax.scan(lambda c, row: (c + vmap(F)(row).sum(), 0.0), 0.0, x)[0]),
             abstracted_axes={0: "m", 1: "b"})
    for shape in ((2, 3), (1, 5)):
        x = np.linspace(-2, 2, int(np.prod(shape))).reshape(shape)
        close(h(x), rule(x))
    assert h.traces == 1


def test_dynamic_sizes_forward_mode():
    f = qjit(lambda x, t: jvp(vmap(vmap(sin_j)), (x,), (t,))[1], abstracted_axes={0: "b", 1: "n"})
    for shape in ((2, 3), (5, 2)):
        x = np.linspace(-2, 2, int(np.prod(shape))).reshape(shape)
        close(f(x, np.ones(shape)), rule(x))
    assert f.traces == 1
    # an int argument as the member size
    g = qjit(lambda n, x: grad(lambda y: vmap(lambda z: sin_v(z) * jnp.ones(n))(y).sum())(x))
    close(g(3, XS), 3 * rule(XS))
    close(g(5, XS), 5 * rule(XS))


# ==============================================================================================
# Pytrees, integer outputs, an output that does not depend on the batch
# ==============================================================================================
@dynjax.custom_jvp
def tree_fun(d):
    return {"a": jnp.sin(d["x"]), "n": jnp.sum(d["i"])}


@tree_fun.defjvp
def _tree_fun_jvp(primals, tangents):
    (d,), (t,) = primals, tangents
    return tree_fun(d), {"a": 2.0 * jnp.cos(d["x"]) * t["x"], "n": jnp.zeros((), jnp.int64)}


def test_pytree_arguments_and_integer_outputs():
    ints = np.arange(4)
    close(jvp(lambda x: vmap(tree_fun)({"x": x, "i": ints})["a"], (XS,), (TS,))[1], rule(XS) * TS)
    close(grad(lambda x: vmap(tree_fun)({"x": x, "i": ints})["a"].sum())(XS), rule(XS))
    out = vmap(tree_fun)({"x": XS, "i": ints})
    np.testing.assert_array_equal(out["n"], ints)


@dynjax.custom_jvp
def ignores_x(x, y):
    return jnp.sin(y) + 0.0 * jnp.sum(x)


@ignores_x.defjvp
def _ignores_x_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return ignores_x(x, y), 2.0 * jnp.cos(y) * ty + 0.0 * jnp.sum(tx)


def test_output_shared_by_the_batch():
    x = np.ones((2, 3))
    got = jvp(lambda y: vmap(ignores_x, in_axes=(0, None))(x, y), (XS,), (TS,))[1]
    close(got, np.broadcast_to(rule(XS) * TS, (2, 4)))


def test_forward_mode_of_batched_custom_vjp_is_a_type_error():
    with pytest.raises(TypeError, match="forward-mode"):
        jvp(vmap(sin_v), (XS,), (TS,))
    with pytest.raises(TypeError, match="forward-mode"):
        vmap(lambda x: jvp(sin_v, (x,), (1.0,)))(XS)
    with pytest.raises(TypeError, match="forward-mode"):
        vmap(lambda x: linearize(sin_v, x)[1](1.0))(XS)


@pytest.mark.parametrize("F", BOTH)
def test_vmap_of_the_vjp_function(F):
    # a batch of cotangents through one linearization: the rows of the (diagonal) Jacobian
    _, f_vjp = vjp(F, XS)
    close(vmap(f_vjp)(np.eye(4))[0], np.diag(rule(XS)))
    _, f_vjp = vjp(vmap(F), XS)
    close(vmap(f_vjp)(np.eye(4))[0], np.diag(rule(XS)))
