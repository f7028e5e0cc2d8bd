"""lax.custom_linear_solve and lax.custom_root: values against numpy, derivatives against
closed forms, finite differences and jax, on static and dynamic sizes (0 and 1 included),
and every order of jvp / vjp / vmap / qjit composed over them.

The solvers are while_loops (conjugate gradient, Newton): dynjax cannot reverse-differentiate
a while_loop, so a working gradient also shows the derivative does not go through the
solver's iterations."""
import itertools

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import lax

from helpers import assert_same, check_three_ways, fd_grad


# ----------------------------------------------------------------------------------------------
# The programs
# ----------------------------------------------------------------------------------------------
def cg(matvec, b):
    """Conjugate gradient in a while_loop (to 1e-13 relative residual)."""
    bb = jnp.sum(b * b)

    def cond(c):
        x, r, p, rr, i = c
        return (rr > 1e-26 * bb) & (i < 200)

    def body(c):
        x, r, p, rr, i = c
        ap = matvec(p)
        alpha = rr / jnp.sum(p * ap)
        x = x + alpha * p
        r = r - alpha * ap
        rr_new = jnp.sum(r * r)
        return x, r, r + (rr_new / rr) * p, rr_new, i + 1
    x0 = jnp.zeros_like(b)
    return lax.while_loop(cond, body, (x0, b, b, bb, 0))[0]


def circulant_matvec(p):
    """``x -> (3 + p**2) x + (roll(x, 1) + roll(x, -1)) / 2``: symmetric, positive definite."""
    return lambda x: (3.0 + p * p) * x + 0.5 * (jnp.roll(x, 1) + jnp.roll(x, -1))


def dense(p, np_=jnp):
    n = p.shape[0]
    eye = np_.eye(n)
    return np_.diag(3.0 + p * p) + 0.5 * (np_.roll(eye, 1, axis=0) + np_.roll(eye, -1, axis=0))


def h_solve(p):
    """A function of p (f64[n] -> f64[n]) through a custom_linear_solve whose matrix and
    right-hand side both depend on p."""
    x = lax.custom_linear_solve(circulant_matvec(p), jnp.sin(p) + 1.0, cg, symmetric=True)
    return x * jnp.cos(p)


def h_solve_ref(p):
    """The same function by a dense solve (differentiated by dynjax's linalg rules)."""
    return jnp.linalg.solve(dense(p), jnp.sin(p) + 1.0) * jnp.cos(p)


def h_solve_np(p):
    return np.linalg.solve(dense(p, np), np.sin(p) + 1.0) * np.cos(p)


def newton(f, x0):
    def body(c):
        x, i = c
        fx, dfx = dynjax.jvp(f, (x,), (jnp.ones_like(x),))
        return x - fx / dfx, i + 1
    return lax.while_loop(lambda c: c[1] < 40, body, (x0, 0))[0]


def h_root(p):
    """The elementwise cube root of 2 + p**2 (f64[n] -> f64[n]) by Newton's method."""
    a = 2.0 + p * p
    x = lax.custom_root(lambda x: x ** 3 - a, jnp.ones_like(p), newton, lambda g, y: y / g(jnp.ones_like(y)))
    return x * jnp.sin(p)


def h_root_ref(p):
    return jnp.cbrt(2.0 + p * p) * jnp.sin(p)


def h_root_np(p):
    return np.cbrt(2.0 + p * p) * np.sin(p)


def args(n):
    return (np.linspace(-0.7, 0.9, n),)


AXES = ({0: "n"},)


# ----------------------------------------------------------------------------------------------
# Values and first derivatives
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("h, h_np", [(h_solve, h_solve_np), (h_root, h_root_np)], ids=["solve", "root"])
def test_values_three_ways(h, h_np):
    check_three_ways(h, h_np, args, [0, 1, 4], abstracted_axes=AXES, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("h, h_np", [(h_solve, h_solve_np), (h_root, h_root_np)], ids=["solve", "root"])
def test_grad_against_finite_differences_compiled_dynamic(h, h_np):
    g = dynjax.qjit(dynjax.grad(lambda p: jnp.sum(h(p) ** 2)), abstracted_axes=AXES)
    for n in (1, 3, 5):
        (p,) = args(n)
        want = fd_grad(lambda q: np.sum(h_np(q) ** 2), p)
        np.testing.assert_allclose(g(p), want, rtol=1e-6, atol=1e-8)
    assert g(np.zeros(0)).shape == (0,)


def test_custom_linear_solve_closed_forms():
    """x = A^-1 b; d(w.x)/db = A^-T w, d(w.x)/dA = -outer(A^-T w, x), for a non-symmetric A
    with transpose_solve (dense solves inside the rules)."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(4, 4)) + 4 * np.eye(4)
    b, w = rng.normal(size=4), rng.normal(size=4)

    def loss(A, b):
        x = lax.custom_linear_solve(lambda v: A @ v, b, lambda mv, r: jnp.linalg.solve(A, r),
                                    lambda vm, r: jnp.linalg.solve(A.T, r))
        return jnp.sum(w * x)
    x = np.linalg.solve(A, b)
    lam = np.linalg.solve(A.T, w)
    for f in (dynjax.grad(loss, argnums=(0, 1)), dynjax.qjit(dynjax.grad(loss, argnums=(0, 1)))):
        gA, gb = f(A, b)
        np.testing.assert_allclose(gb, lam, rtol=1e-10)
        np.testing.assert_allclose(gA, -np.outer(lam, x), rtol=1e-10)
    # forward mode: x' = A^-1 (b' - A' x)
    dA, db = rng.normal(size=(4, 4)), rng.normal(size=4)
    _, t = dynjax.jvp(lambda A, b: loss(A, b), (A, b), (dA, db))
    np.testing.assert_allclose(t, w @ np.linalg.solve(A, db - dA @ x), rtol=1e-10)


def test_has_aux_pytree_and_errors():
    A = np.array([[2.0, 1.0], [0.0, 3.0]])

    def solve(mv, b):
        x = jnp.linalg.solve(A, b["u"])
        return {"u": x}, jnp.sum(x)      # aux: a diagnostic

    def f(b):
        return lax.custom_linear_solve(lambda v: {"u": A @ v["u"]}, {"u": b}, solve, has_aux=True)
    (x, aux) = f(np.array([1.0, 2.0]))
    want = np.linalg.solve(A, [1.0, 2.0])
    np.testing.assert_allclose(x["u"], want)
    np.testing.assert_allclose(aux, want.sum())
    # forward mode works without transpose_solve; reverse mode is JAX's TypeError
    _, t = dynjax.jvp(lambda b: f(b)[0]["u"], (np.ones(2),), (np.array([1.0, 0.0]),))
    np.testing.assert_allclose(t, np.linalg.solve(A, [1.0, 0.0]))
    with pytest.raises(TypeError, match="transpose_solve required"):
        dynjax.grad(lambda b: jnp.sum(f(b)[0]["u"]))(np.ones(2))
    # JAX's error types: another structure is a TypeError, another shape a ValueError
    with pytest.raises(TypeError, match=r"matvec\(\) output pytree structure must match b"):
        lax.custom_linear_solve(lambda v: (v, v), np.ones(2), lambda mv, b: b)
    with pytest.raises(TypeError, match=r"solve\(\) output pytree structure must match b"):
        lax.custom_linear_solve(lambda v: v, np.ones(2), lambda mv, b: (b,))
    with pytest.raises(ValueError, match=r"solve\(\) output shapes must match b"):
        lax.custom_linear_solve(lambda v: v, np.ones(2), lambda mv, b: b[:1])
    with pytest.raises(ValueError, match=r"matvec\(\) output shapes must match b"):
        lax.custom_linear_solve(lambda v: v[:1], np.ones(2), lambda mv, b: b)
    with pytest.raises(TypeError, match="solve must be a function"):
        lax.custom_linear_solve(lambda v: v, np.ones(2), None)
    with pytest.raises(TypeError, match=r"solve\(\) output pytree structure must match initial_guess"):
        lax.custom_root(lambda x: x, 1.0, lambda f, x: (x, x), lambda g, y: y)
    with pytest.raises(TypeError, match=r"f\(\) output pytree structure must match initial_guess"):
        lax.custom_root(lambda x: (x, x), 1.0, lambda f, x: x, lambda g, y: y)
    with pytest.raises(TypeError, match="pair"):
        lax.custom_linear_solve(lambda v: v, np.ones(2), lambda mv, b: b, has_aux=True)
    # a float32 solution of a float64 system comes back as float64 (as in JAX)
    x = lax.custom_linear_solve(lambda v: v, np.ones(2), lambda mv, b: b.astype(np.float32))
    assert x.dtype == np.float64


def test_symmetric_and_transpose_solve_roles():
    """As JAX: symmetric without transpose_solve transposes with solve; with transpose_solve
    given, transposing runs it (vecmat = matvec when symmetric)."""
    def grad_of(**kw):
        return dynjax.grad(lambda b: jnp.sum(lax.custom_linear_solve(lambda x: 2.0 * x, b, lambda mv, r: r / 2.0,
                                                                     **kw)))(np.ones(2))
    np.testing.assert_allclose(grad_of(symmetric=True), [0.5, 0.5])
    # a deliberately different transpose_solve shows which program the transpose runs
    np.testing.assert_allclose(grad_of(symmetric=True, transpose_solve=lambda vm, r: r / 4.0), [0.25, 0.25])
    # a transpose_solve that applies vecmat instead of solving reveals vecmat: matvec's transpose
    A = np.array([[2.0, 1.0], [0.0, 3.0]])
    g = dynjax.grad(lambda b: jnp.sum(lax.custom_linear_solve(lambda x: A @ x, b, lambda mv, r: jnp.linalg.solve(A, r),
                                                              lambda vm, r: vm(r))))
    np.testing.assert_allclose(g(np.ones(2)), A.T @ np.ones(2))


def test_stop_gradient_gives_zero_derivatives():
    p = np.array([0.3, -0.2, 0.5])

    def solve_sg(p):   # the matrix is cut from differentiation: only b contributes
        x = lax.custom_linear_solve(circulant_matvec(lax.stop_gradient(p)), jnp.sin(p), cg, symmetric=True)
        return jnp.sum(x)

    def solve_const_rhs(p):   # b cut and matrix cut: zero derivative
        x = lax.custom_linear_solve(circulant_matvec(lax.stop_gradient(p)), lax.stop_gradient(jnp.sin(p)), cg,
                                    symmetric=True)
        return jnp.sum(x)

    def root_sg(p):
        a = lax.stop_gradient(2.0 + p * p)
        return jnp.sum(lax.custom_root(lambda x: x ** 3 - a, jnp.ones_like(p), newton,
                                       lambda g, y: y / g(jnp.ones_like(y))))
    want = np.linalg.solve(dense(p, np), np.ones(3)) * np.cos(p)    # A symmetric
    np.testing.assert_allclose(dynjax.grad(solve_sg)(p), want, rtol=1e-9)
    np.testing.assert_array_equal(dynjax.grad(solve_const_rhs)(p), np.zeros(3))
    np.testing.assert_array_equal(dynjax.grad(root_sg)(p), np.zeros(3))
    # the initial guess gets no derivative either
    g = dynjax.grad(lambda x0: jnp.sum(lax.custom_root(lambda x: x ** 3 - 2.0, x0, newton,
                                                       lambda g, y: y / g(jnp.ones_like(y)))))
    np.testing.assert_array_equal(g(np.ones(2)), np.zeros(2))


# ----------------------------------------------------------------------------------------------
# Every order of jvp / vjp / vmap / qjit (pairs), against the same composition of the
# reference functions (dense solve, closed-form root), at sizes 0, 1 and 3
# ----------------------------------------------------------------------------------------------
def t_jvp(h):
    return lambda p: dynjax.jvp(h, (p,), (jnp.cos(3.0 * p),))[1]


def t_vjp(h):
    return lambda p: dynjax.vjp(h, p)[1](jnp.sin(2.0 * p) + 0.5)[0]


def t_vmap(h):
    return lambda p: jnp.sum(dynjax.vmap(h)(jnp.stack([p, 0.5 * p - 0.1])), axis=0)


def t_qjit(h):
    return dynjax.qjit(h, abstracted_axes=AXES)


TRANSFORMS = {"jvp": t_jvp, "vjp": t_vjp, "vmap": t_vmap, "qjit": t_qjit}
ORDERS = [o for o in itertools.product(TRANSFORMS, repeat=2) if o != ("qjit", "qjit")]


@pytest.mark.parametrize("base", ["solve", "root"])
@pytest.mark.parametrize("order", ORDERS, ids=["-".join(o) for o in ORDERS])
def test_composed_transformations(base, order):
    h, ref = (h_solve, h_solve_ref) if base == "solve" else (h_root, h_root_ref)
    for name in order:      # the last one listed is applied last (outermost)
        h, ref = TRANSFORMS[name](h), TRANSFORMS[name](ref)
    for n in (0, 1, 3):
        (p,) = args(n)
        assert_same(h(p), ref(p), rtol=1e-8, atol=1e-10, where=f"{order} n={n}")


# ----------------------------------------------------------------------------------------------
# Against jax on the same programs
# ----------------------------------------------------------------------------------------------
def test_against_jax():
    import jax
    jax.config.update("jax_enable_x64", True)
    jjnp, jlax = jax.numpy, jax.lax
    rng = np.random.default_rng(1)
    M = rng.normal(size=(3, 3))
    p = rng.normal(size=3)

    def prog(np_, lax_, grad_):
        def loss(p):
            A = M @ M.T + np_.diag(2.0 + p * p)

            def solve(mv, b):
                return np_.linalg.solve(A, b)
            x = lax_.custom_linear_solve(lambda v: A @ v, np_.sin(p), solve, symmetric=True)
            r = lax_.custom_root(lambda y: y ** 3 - (2.0 + x * x), np_.ones_like(x),
                                 lambda f, y0: np_.cbrt(2.0 + x * x),
                                 lambda g, y: y / g(np_.ones_like(y)))
            return np_.sum(r * np_.cos(x))
        return loss
    ours = prog(jnp, lax, dynjax.grad)
    theirs = prog(jjnp, jlax, jax.grad)
    np.testing.assert_allclose(ours(p), theirs(p), rtol=1e-12)
    np.testing.assert_allclose(dynjax.grad(ours)(p), jax.grad(theirs)(p), rtol=1e-10)
    # second order: dynjax's hessian against finite differences of the gradient just checked
    # (jax.hessian takes seconds to compile here)
    g = dynjax.grad(ours)
    fd = np.stack([(g(p + 1e-6 * e) - g(p - 1e-6 * e)) / 2e-6 for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(dynjax.hessian(ours)(p), fd, rtol=1e-5, atol=1e-8)


# ----------------------------------------------------------------------------------------------
# More shapes of use: aux outputs, pytree vectors, batching the matrix alone, a root of a
# function closing over an array of another dynamic size, the cost model
# ----------------------------------------------------------------------------------------------
def test_aux_and_pytree_vector_under_transformations():
    A = np.array([[3.0, 1.0], [1.0, 2.0]])

    def solve(mv, b):     # the pair (u, v) holds one vector of R^3: A on u, 2 on v
        return (jnp.linalg.solve(A, b[0]), b[1] / 2.0), jnp.sum(b[0])

    def f(d, u, v):
        mv = lambda x: (A @ x[0], 2.0 * x[1] + 0.0 * d)     # d only to be closed over
        (xu, xv), aux = lax.custom_linear_solve(mv, (u, v), solve, symmetric=True, has_aux=True)
        return jnp.sum(xu * jnp.arange(1.0, 3.0)) + 3.0 * xv + 0.0 * aux
    u, v = np.array([1.0, -1.0]), np.float64(4.0)
    np.testing.assert_allclose(f(0.0, u, v), np.linalg.solve(A, u) @ [1.0, 2.0] + 6.0)
    gu, gv = dynjax.grad(f, argnums=(1, 2))(0.0, u, v)
    np.testing.assert_allclose(gu, np.linalg.solve(A, [1.0, 2.0]))
    np.testing.assert_allclose(gv, 1.5)
    us = np.stack([u, 2 * u, -u])
    got = dynjax.vmap(f, in_axes=(None, 0, None))(0.0, us, v)
    np.testing.assert_allclose(got, np.linalg.solve(A, us.T).T @ [1.0, 2.0] + 6.0)
    got = dynjax.vmap(dynjax.grad(f, argnums=1), in_axes=(None, 0, None))(0.0, us, v)
    np.testing.assert_allclose(got, np.tile(np.linalg.solve(A, [1.0, 2.0]), (3, 1)))
    _, t = dynjax.jvp(lambda u: f(0.0, u, v), (u,), (np.array([1.0, 0.0]),))
    np.testing.assert_allclose(t, np.linalg.solve(A, [1.0, 0.0]) @ [1.0, 2.0])


def test_vmap_of_the_matrix_alone_compiled_dynamic():
    """Only matvec's closed-over diagonal is batched (b is shared): the batched equation
    broadcasts b; its gradient with respect to the diagonal is batched too."""
    def x_of(d, b):
        return lax.custom_linear_solve(lambda v: d * v, b, lambda mv, r: r / d, lambda vm, r: r / d)
    f = dynjax.qjit(dynjax.vmap(x_of, in_axes=(0, None)), abstracted_axes=({0: "m", 1: "n"}, {0: "n"}))
    g = dynjax.qjit(dynjax.vmap(dynjax.grad(lambda d, b: jnp.sum(x_of(d, b))), in_axes=(0, None)),
                    abstracted_axes=({0: "m", 1: "n"}, {0: "n"}))
    for m, n in ((0, 2), (1, 1), (3, 4)):
        D = 2.0 + np.arange(m * n, dtype=float).reshape(m, n)
        b = np.linspace(1.0, 2.0, n)
        np.testing.assert_allclose(f(D, b), b / D, rtol=1e-12)
        np.testing.assert_allclose(g(D, b), -b / D ** 2, rtol=1e-12)


def test_custom_root_aux_and_closure_of_another_size():
    """f(x) = x * sum(w**2) - s, x: f64[n], w: f64[m] (another dynamic size): the root is
    s / sum(w**2); derivatives by w and s, compiled once for every (n, m)."""
    def solve(f, x0):
        x = newton(f, x0)
        return x, jnp.max(jnp.abs(f(x)))          # aux: the residual

    def root(w, s):
        x, res = lax.custom_root(lambda x: x * jnp.sum(w * w) - s, jnp.ones_like(s), solve,
                                 lambda g, y: y / g(jnp.ones_like(y)), has_aux=True)
        return jnp.sum(x * (jnp.arange(s.shape[0]) + 1.0)), res
    loss = dynjax.qjit(dynjax.value_and_grad(root, argnums=(0, 1), has_aux=True),
                       abstracted_axes=({0: "m"}, {0: "n"}))
    for m, n in ((1, 1), (3, 2), (2, 0)):
        w, s = np.linspace(0.5, 1.5, m), np.linspace(1.0, 2.0, n)
        c, k = np.sum(w * w), np.arange(1.0, n + 1.0)
        (val, res), (gw, gs) = loss(w, s)
        np.testing.assert_allclose(val, np.sum(s * k) / c, rtol=1e-12)
        assert res < 1e-12
        np.testing.assert_allclose(gs, k / c, rtol=1e-12)
        np.testing.assert_allclose(gw, -np.sum(s * k) / c ** 2 * 2 * w, rtol=1e-10, atol=1e-14)


def test_cost_is_the_cost_of_solve():
    def with_solve(b):
        return lax.custom_linear_solve(lambda v: 2.0 * v, b, lambda mv, r: jnp.sin(r) * 0.5, symmetric=True)

    def plain(b):
        return jnp.sin(b) * 0.5
    c = dynjax.cost_analysis(with_solve, np.ones(3), abstracted_axes=({0: "n"},))
    assert c.formulas() == dynjax.cost_analysis(plain, np.ones(3), abstracted_axes=({0: "n"},)).formulas()
    assert c.at(n=10)["transcendentals"] == 10


def test_inside_loops_and_conditionals():
    """A custom_linear_solve in a fori_loop, a scan and a cond: reverse mode splits and
    transposes the loops around it; the same program with a dense solve is the reference."""
    def matrix(d):
        return jnp.diag(d) + 0.1 * jnp.roll(jnp.eye(d.shape[0]), 1, 0)

    def custom_step(d, c):
        return lax.custom_linear_solve(lambda v: d * v + 0.1 * jnp.roll(v, 1), c,
                                       lambda mv, r: jnp.linalg.solve(matrix(d), r),
                                       lambda vm, r: jnp.linalg.solve(matrix(d).T, r))

    def dense_step(d, c):
        return jnp.linalg.solve(matrix(d), c)

    def program(step):
        def f(d, b):
            x = lax.fori_loop(0, 3, lambda i, c: jnp.sin(step(d, c)) + b, b)
            ys = lax.scan(lambda c, k: (c, step(d * k, c)), b, jnp.array([1.0, 2.0]))[1]
            z = lax.cond(jnp.sum(b) > 0, lambda c: step(d, c), lambda c: -c, x)
            return jnp.sum(x ** 2) + jnp.sum(ys) + jnp.sum(z)
        return f
    d, b = np.array([2.0, 3.0, 4.0]), np.array([1.0, 0.5, -0.2])
    want = dynjax.grad(program(dense_step), argnums=(0, 1))(d, b)
    for g in (dynjax.grad(program(custom_step), argnums=(0, 1)),
              dynjax.qjit(dynjax.grad(program(custom_step), argnums=(0, 1)), abstracted_axes=({0: "n"}, {0: "n"}))):
        for got, w in zip(g(d, b), want):
            np.testing.assert_allclose(got, w, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(dynjax.jacfwd(program(custom_step))(d, b), dynjax.jacfwd(program(dense_step))(d, b),
                               rtol=1e-12, atol=1e-14)


def test_custom_root_pytree_guess_and_integer_parameter():
    """A root of a pair (u, v) of a linear system with an integer parameter k (an i64 input
    under qjit): u + v = a, u - v = k a / 10."""
    def newton_pair(f, x0):
        def body(c):
            (u, v), i = c
            J = dynjax.jacfwd(lambda z: jnp.stack(f((z[0], z[1]))))(jnp.stack([u, v]))
            step = jnp.linalg.solve(J, jnp.stack(f((u, v))))
            return (u - step[0], v - step[1]), i + 1
        return lax.while_loop(lambda c: c[1] < 5, body, (x0, 0))[0]

    def tangent_solve(g, y):
        J = dynjax.jacfwd(lambda z: jnp.stack(g((z[0], z[1]))))(jnp.zeros(2))
        s = jnp.linalg.solve(J, jnp.stack(y))
        return s[0], s[1]

    def objective(a, k):
        u, v = lax.custom_root(lambda z: (z[0] + z[1] - a, z[0] - z[1] - k * a / 10), (0.0, 0.0), newton_pair,
                               tangent_solve)
        return 2.0 * u + v
    for k in (0, 3):
        want = (1 + k / 10) + (1 - k / 10) / 2       # d/da of 2 u + v
        np.testing.assert_allclose(objective(1.0, k), want, rtol=1e-12)
        np.testing.assert_allclose(dynjax.grad(objective)(1.0, k), want, rtol=1e-12)
        np.testing.assert_allclose(dynjax.qjit(dynjax.grad(objective))(1.0, k), want, rtol=1e-12)


def test_padded_tier_runs_the_padded_solve(monkeypatch):
    """In a padded bucket executable, custom_linear_solve runs its solve program padded
    (a conjugate gradient whose dot products must ignore the padding)."""
    f = dynjax.qjit(h_solve, abstracted_axes=AXES)
    g = dynjax.qjit(h_solve, abstracted_axes=AXES)
    sizes = (0, 1, 5, 17)
    for n in sizes:
        (p,) = args(n)
        monkeypatch.setenv("DYNJAX_TIERS", "padded")
        got = f(p)
        monkeypatch.setenv("DYNJAX_TIERS", "exact")
        np.testing.assert_allclose(got, g(p), rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(got, h_solve_np(p), rtol=1e-10, atol=1e-13)
    info = f.cache_info()
    assert info["padded_runs"] == len(sizes) and info["exact_runs"] == 0, info
