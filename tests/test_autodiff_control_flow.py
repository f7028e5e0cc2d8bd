"""Differentiating loops and conditionals: jvp, grad, jacobians of for_loop, fori_loop, scan
(both directions), cond / switch and while_loop (forward mode), eagerly and compiled with
dynamic sizes, against central finite differences of a numpy reference."""

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import for_loop, lax
from helpers import fd_grad, in_threads


# ----------------------------------------------------------------------------------------------
# Programs and their numpy references
# ----------------------------------------------------------------------------------------------
def loop_prog(x):
    @for_loop(0, 3, 1)
    def body(i, c):
        return jnp.sin(c) * x + 0.1 * i
    return jnp.sum(body(x))


def loop_ref(x):
    c = x
    for i in range(3):
        c = np.sin(c) * x + 0.1 * i
    return c.sum()


def strided_prog(x):
    # a negative step and a trip count that is not a multiple of it
    return jnp.sum(lax.fori_loop(0, 1, lambda i, c: c, x) + for_loop(7, 0, -3)(lambda i, c: c * jnp.cos(c) + i)(x))


def strided_ref(x):
    c = x.copy()
    for i in range(7, 0, -3):
        c = c * np.cos(c) + i
    return np.sum(x + c)


def scan_prog(x):
    def step(c, xi):
        c = c * jnp.cos(xi) + xi
        return c, c * xi
    c, ys = lax.scan(step, jnp.sum(x) * 0.1, x)
    return c + jnp.sum(ys ** 2)


def scan_ref(x):
    c = x.sum() * 0.1
    ys = []
    for xi in x:
        c = c * np.cos(xi) + xi
        ys.append(c * xi)
    return c + np.sum(np.square(ys))


def rscan_prog(x):
    def step(c, xi):
        return jnp.tanh(c + xi), c * xi
    c, ys = lax.scan(step, 0.3, x, reverse=True)
    return c * 2 + jnp.sum(ys * jnp.arange(ys.shape[0]))


def rscan_ref(x):
    c = 0.3
    ys = np.zeros_like(x)
    for t in reversed(range(len(x))):
        ys[t] = c * x[t]
        c = np.tanh(c + x[t])
    return c * 2 + np.sum(ys * np.arange(len(x)))


def cond_prog(x):
    return jnp.sum(lax.cond(jnp.sum(x) > 1.0, lambda a: jnp.sin(a) * a, lambda a: a ** 3, x))


def cond_ref(x):
    return np.sum(np.sin(x) * x if x.sum() > 1.0 else x ** 3)


def switch_prog(x):
    k = jnp.clip(jnp.sum(x).astype(int), 0, 2)
    return jnp.sum(lax.switch(k, [lambda a: a * 2.0, jnp.exp, lambda a: jnp.log1p(a * a)], x))


def switch_ref(x):
    k = int(np.clip(int(np.sum(x)), 0, 2))
    return np.sum([x * 2.0, np.exp(x), np.log1p(x * x)][k])


def nested_prog(x):
    def outer(i, c):
        inner = lax.fori_loop(0, 2, lambda j, d: jnp.sin(d) + x * 0.1, c)
        return lax.cond(i % 2 == 0, lambda a: a * 1.1, lambda a: a - 0.2, inner)
    return jnp.sum(lax.fori_loop(0, 3, outer, x))


def nested_ref(x):
    c = x
    for i in range(3):
        for _ in range(2):
            c = np.sin(c) + x * 0.1
        c = c * 1.1 if i % 2 == 0 else c - 0.2
    return c.sum()


def closure_prog(x):
    # the loop body closes over an array computed from x (a constant of the loop with a tangent)
    w = jnp.cos(x)
    return jnp.sum(lax.fori_loop(0, 4, lambda i, c: c * w + jnp.sin(c), x * 0.5))


def closure_ref(x):
    w = np.cos(x)
    c = x * 0.5
    for _ in range(4):
        c = c * w + np.sin(c)
    return c.sum()


PROGRAMS = {
    "for_loop": (loop_prog, loop_ref),
    "strided": (strided_prog, strided_ref),
    "scan": (scan_prog, scan_ref),
    "reverse_scan": (rscan_prog, rscan_ref),
    "cond": (cond_prog, cond_ref),
    "switch": (switch_prog, switch_ref),
    "nested": (nested_prog, nested_ref),
    "closure": (closure_prog, closure_ref),
}
SIZES = [0, 1, 2, 5]


def inputs(n, scale=1.0):
    return np.linspace(0.1, 0.9, n) * scale


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_grad_eager_against_finite_differences(name):
    prog, ref = PROGRAMS[name]
    for n in SIZES:
        for scale in (0.2, 1.3):   # both branches of the conditionals
            x = inputs(n, scale)
            np.testing.assert_allclose(dynjax.grad(prog)(x), fd_grad(ref, x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_grad_compiled_one_trace_across_sizes(name):
    prog, ref = PROGRAMS[name]
    f = dynjax.qjit(dynjax.grad(prog), abstracted_axes=({0: "n"},))
    for n in SIZES:
        for scale in (0.2, 1.3):
            x = inputs(n, scale)
            got = f(x)
            np.testing.assert_allclose(got, fd_grad(ref, x), rtol=1e-6, atol=1e-8)
            np.testing.assert_allclose(got, dynjax.grad(prog)(x), rtol=1e-12, atol=1e-14)
            assert got.shape == x.shape
    assert f.cache_info()["traces"] == 1


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jvp_matches_grad(name):
    prog, _ = PROGRAMS[name]
    rng = np.random.default_rng(0)
    for n in (1, 4):
        x, t = inputs(n), rng.normal(size=n)
        primal, tangent = dynjax.jvp(prog, (x,), (t,))
        np.testing.assert_allclose(primal, PROGRAMS[name][1](x), rtol=1e-12)
        np.testing.assert_allclose(tangent, np.dot(dynjax.grad(prog)(x), t), rtol=1e-10, atol=1e-12)
        # and the linearized function gives the same tangent without re-running the primal
        y, f_jvp = dynjax.linearize(prog, x)
        np.testing.assert_allclose(f_jvp(t), tangent, rtol=1e-10, atol=1e-12)


def test_while_loop_forward_mode_and_reverse_error():
    def prog(x):
        return jnp.sum(lax.while_loop(lambda s: s[0] < 5, lambda s: (s[0] + 1, s[1] * jnp.sin(s[1]) + 0.1),
                                      (0, x))[1])

    def ref(x):
        y = x
        for _ in range(5):
            y = y * np.sin(y) + 0.1
        return y.sum()
    x = inputs(4)
    t = np.arange(4.0)
    expected = fd_grad(ref, x) @ t
    np.testing.assert_allclose(dynjax.jvp(prog, (x,), (t,))[1], expected, rtol=1e-6)
    compiled = dynjax.qjit(lambda x, t: dynjax.jvp(prog, (x,), (t,))[1], abstracted_axes=({0: "n"}, {0: "n"}))
    np.testing.assert_allclose(compiled(x, t), expected, rtol=1e-6)
    np.testing.assert_allclose(dynjax.jacfwd(prog)(x), fd_grad(ref, x), rtol=1e-6)
    with pytest.raises(TypeError, match="while_loop is not supported.*for_loop or scan"):
        dynjax.grad(prog)(x)


def test_resizing_loop_forward_mode():
    # the carried array grows by one element per iteration: forward mode follows its size
    def prog(x):
        @for_loop(0, 3, 1, allow_array_resizing=True)
        def body(i, a):
            return jnp.concatenate([a, jnp.sin(a[-1:])])
        return jnp.sum(body(x) ** 2)

    def ref(x):
        a = x
        for _ in range(3):
            a = np.concatenate([a, np.sin(a[-1:])])
        return np.sum(a ** 2)
    for n in (1, 3):
        x = inputs(n)
        t = np.ones(n)
        np.testing.assert_allclose(dynjax.jvp(prog, (x,), (t,))[1], fd_grad(ref, x) @ t, rtol=1e-6)
    with pytest.raises(NotImplementedError, match="change size"):
        dynjax.grad(prog)(inputs(2))


def test_dynamic_trip_count_and_int_argument():
    # the number of iterations is an argument; the gradient of a loop that runs 0 times is 1
    def prog(x, k):
        return jnp.sum(lax.fori_loop(0, k, lambda i, c: jnp.sin(c) * 1.5, x))

    def ref(x, k):
        for _ in range(k):
            x = np.sin(x) * 1.5
        return x.sum()
    f = dynjax.qjit(dynjax.grad(prog), abstracted_axes=({0: "n"}, ()))
    for n, k in [(3, 0), (3, 1), (4, 5), (0, 2), (1, 3)]:
        x = inputs(n)
        np.testing.assert_allclose(f(x, k), fd_grad(lambda v: ref(v, k), x), rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(dynjax.grad(prog)(x, k), fd_grad(lambda v: ref(v, k), x), rtol=1e-6,
                                   atol=1e-9)


def test_second_order_through_loops():
    def h(s):
        return lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) * s, s)

    def h_ref(s):
        c = s
        for _ in range(3):
            c = np.sin(c) * s
        return c
    eps = 1e-4
    for s in (0.3, 0.7, 1.2):
        second = (h_ref(s + eps) - 2 * h_ref(s) + h_ref(s - eps)) / eps ** 2
        np.testing.assert_allclose(dynjax.grad(dynjax.grad(h))(s), second, rtol=1e-5)
        np.testing.assert_allclose(dynjax.qjit(dynjax.grad(dynjax.grad(h)))(s), second, rtol=1e-5)


def test_hessian_and_jacobians_of_loops_agree():
    def f(x):
        return lax.fori_loop(0, 2, lambda i, c: jnp.sin(c) * x, x)

    def scalar(x):
        return jnp.sum(f(x) ** 2)
    for n in (0, 1, 4):
        x = inputs(n)
        jr, jf = dynjax.jacrev(f)(x), dynjax.jacfwd(f)(x)
        assert jr.shape == (n, n)
        np.testing.assert_allclose(jr, jf, rtol=1e-10, atol=1e-12)
        cols = np.stack([fd_grad(lambda v, i=i: np.asarray(_f_ref(v))[i], x) for i in range(n)]) if n else jr
        np.testing.assert_allclose(jr, cols, rtol=1e-6, atol=1e-8)
        hess = dynjax.hessian(scalar)(x)
        np.testing.assert_allclose(hess, hess.T, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(hess, dynjax.jacrev(dynjax.grad(scalar))(x), rtol=1e-8, atol=1e-10)
    compiled = dynjax.qjit(dynjax.jacrev(f), abstracted_axes=({0: "n"},))
    for n in (0, 1, 4):
        np.testing.assert_allclose(compiled(inputs(n)), dynjax.jacfwd(f)(inputs(n)), rtol=1e-10, atol=1e-12)
    assert compiled.cache_info()["traces"] == 1


def _f_ref(x):
    c = x
    for _ in range(2):
        c = np.sin(c) * x
    return c


def test_compiled_gradients_from_threads():
    f = dynjax.qjit(dynjax.grad(nested_prog), abstracted_axes=({0: "n"},))

    def work(k):
        for n in (1 + k % 3, 5, 2 + k % 4):
            x = inputs(n)
            np.testing.assert_allclose(f(x), fd_grad(nested_ref, x), rtol=1e-6, atol=1e-8)
    in_threads(work, range(6))
