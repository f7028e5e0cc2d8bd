"""dynjax.custom_batching.custom_vmap / sequential_vmap: the rule runs under vmap (and only
there), in every order with jvp / vmap / qjit, on dynamic sizes; reverse mode is JAX's
documented limitation (an error) and works through custom_vjp; errors; against jax."""
import itertools

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax.custom_batching import custom_vmap, sequential_vmap


SEEN = []   # (axis_size, in_batched) of each call of the rule


@custom_vmap
def f(x, y):
    return jnp.sin(x) * y


@f.def_vmap
def f_rule(axis_size, in_batched, xs, ys):
    """A rule that computes something else (cos), so its use is visible."""
    assert isinstance(in_batched, tuple) and len(in_batched) == 2
    xb, yb = in_batched
    SEEN.append((axis_size, in_batched))
    return jnp.cos(xs) * ys, xb or yb


def plain(x, y):
    return jnp.sin(x) * y


def batched_ref(x, y):
    return jnp.cos(x) * y


X = np.array([0.2, -0.5, 1.1])
Y = np.array([1.5, 0.5, -2.0])


def test_direct_call_and_vmap_use_the_rule():
    np.testing.assert_allclose(f(X[0], Y[0]), np.sin(X[0]) * Y[0])
    np.testing.assert_allclose(dynjax.vmap(f)(X, Y), np.cos(X) * Y)
    assert SEEN[-1] == (3, (True, True))
    np.testing.assert_allclose(dynjax.vmap(f, in_axes=(0, None))(X, 2.0), np.cos(X) * 2.0)
    assert SEEN[-1] == (3, (True, False))
    np.testing.assert_allclose(f(X[1], y=Y[1]), np.sin(X[1]) * Y[1])       # keywords go by position
    np.testing.assert_allclose(dynjax.vmap(lambda x, y: f(x, y=y))(X, Y), np.cos(X) * Y)
    # a member of a vector: f(x) on f64[n], vmapped over rows, on dynamic sizes under qjit
    g = dynjax.qjit(lambda A, y: dynjax.vmap(f, in_axes=(0, None))(A, y), abstracted_axes=({0: "m", 1: "n"}, {0: "n"}))
    for m, n in ((0, 2), (1, 1), (3, 4)):
        A = np.arange(m * n, dtype=float).reshape(m, n) / 7.0
        y = np.linspace(1.0, 2.0, n)
        np.testing.assert_allclose(g(A, y), np.cos(A) * y, rtol=1e-12)
        np.testing.assert_allclose(dynjax.qjit(f, abstracted_axes=({0: "n"}, {0: "n"}))(y, y), np.sin(y) * y)
    # nested vmap: the outer vmap batches the rule itself (the rule uses only batchable ops)
    M = np.arange(6.0).reshape(2, 3) / 5.0
    np.testing.assert_allclose(dynjax.vmap(dynjax.vmap(f))(M, M), np.cos(M) * M, rtol=1e-12)


def t_jvp(h):
    return lambda x, y: dynjax.jvp(h, (x, y), (jnp.ones_like(x), 0.5 * y))[1]


def t_vmap(h):
    return lambda x, y: jnp.sum(dynjax.vmap(h)(jnp.stack([x, 2.0 * x]), jnp.stack([y, y])), axis=0)


def t_qjit(h):
    return dynjax.qjit(h, abstracted_axes=({0: "n"}, {0: "n"}))


TRANSFORMS = {"jvp": t_jvp, "vmap": t_vmap, "qjit": t_qjit}
ORDERS = [o for k in (1, 2, 3) for o in itertools.product(TRANSFORMS, repeat=k) if o.count("qjit") <= 1]


@pytest.mark.parametrize("order", ORDERS, ids=["-".join(o) for o in ORDERS])
def test_orders(order):
    """The rule (cos * y) is the batched form of ``batched_ref``, so a composition in which
    f meets a vmap equals the same composition of ``batched_ref``; without a vmap, of the
    function itself (sin * y). Orders apply first to last (the last is outermost)."""
    ours, ref = f, (batched_ref if "vmap" in order else plain)
    for name in order:
        ours, ref = TRANSFORMS[name](ours), TRANSFORMS[name](ref)
    for n in (0, 1, 3):
        x, y = np.linspace(-1.0, 1.0, n), np.linspace(0.5, 1.5, n)
        np.testing.assert_allclose(ours(x, y), ref(x, y), rtol=1e-12, atol=1e-14, err_msg=str(order))


_jvp_rule = t_jvp(batched_ref)


def test_jvp_before_vmap_uses_the_rule_of_the_jvp():
    """vmap(jvp(f)): the jvp of a custom_vmap function is batched by the jvp of its rule."""
    got = dynjax.vmap(t_jvp(f))(np.stack([X, X]), np.stack([Y, Y]))
    np.testing.assert_allclose(got, np.stack([_jvp_rule(X, Y)] * 2), rtol=1e-12)
    np.testing.assert_allclose(_jvp_rule(X, Y), -np.sin(X) * Y + np.cos(X) * 0.5 * Y, rtol=1e-12)
    got = dynjax.vmap(dynjax.qjit(t_jvp(f)))(np.stack([X, X]), np.stack([Y, Y]))
    np.testing.assert_allclose(got, np.stack([_jvp_rule(X, Y)] * 2), rtol=1e-12)
    # unbatched tangent with a batched primal, and the other way round
    got = dynjax.vmap(lambda x: dynjax.jvp(f, (x, Y[0]), (1.0, 0.0))[1])(X)
    np.testing.assert_allclose(got, -np.sin(X) * Y[0], rtol=1e-12)
    got = dynjax.vmap(lambda t: dynjax.jvp(f, (X[0], Y[0]), (t, 0.0))[1])(Y)
    np.testing.assert_allclose(got, -np.sin(X[0]) * Y[0] * Y, rtol=1e-12)


def test_reverse_mode_is_an_error_and_works_through_custom_vjp():
    with pytest.raises(NotImplementedError, match="reverse-mode"):
        dynjax.grad(f)(0.3, 2.0)

    @custom_vmap
    def g_cv(x, y):
        return jnp.sin(x) * y

    @g_cv.def_vmap
    def g_rule(axis_size, in_batched, xs, ys):
        return jnp.cos(xs) * ys, True
    g = dynjax.custom_vjp(g_cv)

    g.defvjp(lambda x, y: (g(x, y), (x, y)), lambda res, ct: (jnp.cos(res[0]) * res[1] * ct, jnp.sin(res[0]) * ct))
    np.testing.assert_allclose(dynjax.grad(g)(0.3, 2.0), np.cos(0.3) * 2.0)
    np.testing.assert_allclose(dynjax.vmap(g)(X, Y), np.cos(X) * Y)
    np.testing.assert_allclose(dynjax.vmap(dynjax.grad(g))(X, Y), np.cos(X) * Y)
    np.testing.assert_allclose(dynjax.grad(lambda x: jnp.sum(dynjax.vmap(g)(x, Y)))(X), np.cos(X) * Y)


def test_sequential_vmap():
    calls = []

    @sequential_vmap
    def h(x, y):
        calls.append(x.shape)
        return jnp.sum(x) * y
    A = np.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose(dynjax.vmap(h, in_axes=(0, None))(A, 2.0), A.sum(1) * 2.0)
    assert calls[-1] == (2,)          # traced on one member: a loop, not a batched call
    np.testing.assert_allclose(dynjax.vmap(h)(A, np.array([1.0, 2.0, 3.0])), A.sum(1) * [1, 2, 3])
    g = dynjax.qjit(dynjax.vmap(h, in_axes=(0, None)), abstracted_axes=({0: "m", 1: "n"}, {}))
    for m, n in ((0, 2), (1, 3), (4, 1)):
        B = np.ones((m, n))
        np.testing.assert_allclose(g(B, 3.0), B.sum(1) * 3.0)


def test_errors():
    @custom_vmap
    def no_rule(x):
        return x
    with pytest.raises(AttributeError, match="No batching rule defined"):
        no_rule(1.0)

    @custom_vmap
    def bad(x):
        return x * 2.0
    bad.def_vmap(lambda n, b, x: (x, [True]))
    with pytest.raises(TypeError, match="out_batched"):
        dynjax.vmap(bad)(X)
    bad.def_vmap(lambda n, b, x: (x, False))
    with pytest.raises(TypeError, match="out_batched"):
        dynjax.vmap(bad)(X)
    bad.def_vmap(lambda n, b, x: x)
    with pytest.raises(TypeError, match="pair"):
        dynjax.vmap(bad)(X)
    with pytest.raises(TypeError, match="expected a function"):
        custom_vmap(3)

    def closes(y):
        @custom_vmap
        def k(x):
            return x * y
        k.def_vmap(lambda n, b, x: (x * 0.0, True))
        return k(1.0)
    with pytest.raises(ValueError, match="closes over a value batched"):
        dynjax.vmap(closes)(X)


def test_against_jax():
    import jax
    jax.config.update("jax_enable_x64", True)

    @jax.custom_batching.custom_vmap
    def jf(x, y):
        return jax.numpy.sin(x) * y

    @jf.def_vmap
    def jf_rule(axis_size, in_batched, xs, ys):
        return jax.numpy.cos(xs) * ys, in_batched[0] or in_batched[1]
    # (jax 0.10.2 returns (3, 3) arrays for the jvp of jf under vmap, in either order, where
    # the result is f64[3]; test_orders checks those orders against the rule's own jvp)
    np.testing.assert_allclose(dynjax.vmap(f)(X, Y), jax.vmap(jf)(X, Y), rtol=1e-12)
    np.testing.assert_allclose(dynjax.vmap(f, in_axes=(0, None))(X, 2.0), jax.vmap(jf, in_axes=(0, None))(X, 2.0),
                               rtol=1e-12)
    np.testing.assert_allclose(f(X, Y), jf(X, Y), rtol=1e-12)


def test_in_loop_bodies():
    """vmap of a loop whose body calls f: the batched body uses the rule."""
    def g(x, y):
        return dynjax.lax.fori_loop(0, 2, lambda i, c: f(c, y), x)
    got = dynjax.vmap(g)(X, Y)
    want = np.cos(np.cos(X) * Y) * Y
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(dynjax.qjit(dynjax.vmap(g), abstracted_axes=({0: "b"}, {0: "b"}))(X, Y), want,
                               rtol=1e-12)
    np.testing.assert_allclose(g(X[0], Y[0]), np.sin(np.sin(X[0]) * Y[0]) * Y[0], rtol=1e-12)


def test_stop_gradient_in_the_function_and_the_rule():
    @custom_vmap
    def k(x):
        return jax_free_stop(x) * x

    @k.def_vmap
    def k_rule(axis_size, in_batched, xs):
        return jax_free_stop(xs) * xs * 2.0, True
    # d/dx of stop(x) * x is stop(x): x outside vmap, 2 x under it (the rule's)
    np.testing.assert_allclose(dynjax.jvp(k, (3.0,), (1.0,))[1], 3.0)
    np.testing.assert_allclose(dynjax.vmap(lambda x: dynjax.jvp(k, (x,), (1.0,))[1])(X), 2.0 * X)
    np.testing.assert_allclose(dynjax.jvp(dynjax.vmap(k), (X,), (np.ones(3),))[1], 2.0 * X)


def jax_free_stop(x):
    return dynjax.lax.stop_gradient(x)


def test_padded_tier(monkeypatch):
    """A custom_vmap call in a padded bucket executable runs its function padded; under vmap
    the rule's operations are padded like any other."""
    monkeypatch.setenv("DYNJAX_TIERS", "padded")
    direct = dynjax.qjit(lambda x, y: f(x, y) + jnp.sum(x), abstracted_axes=({0: "n"}, {0: "n"}))
    batched = dynjax.qjit(dynjax.vmap(f), abstracted_axes=({0: "n"}, {0: "n"}))
    sizes = (0, 1, 20)
    for n in sizes:
        x, y = np.linspace(-1.0, 1.0, n), np.linspace(0.5, 1.5, n)
        np.testing.assert_allclose(direct(x, y), np.sin(x) * y + np.sum(x), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(batched(x, y), np.cos(x) * y, rtol=1e-12)
    for g in (direct, batched):
        info = g.cache_info()
        assert info["padded_runs"] == len(sizes) and info["exact_runs"] == 0, info
