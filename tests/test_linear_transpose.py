"""dynjax.linear_transpose: the transpose of linear functions against their matrices in numpy
(A.T @ ct), eagerly, compiled and on dynamic sizes (0 and 1 included), composed with jvp /
grad / vmap / qjit, and JAX's errors."""
import itertools

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import lax

from helpers import check_three_ways


def matrix_of(f_np, n):
    """The matrix of a linear numpy function of f64[n] (its columns: f of the unit vectors)."""
    return np.stack([f_np(np.eye(n)[i]) for i in range(n)], axis=1).reshape(-1, n)


LINEAR = {   # name: (dynjax function, numpy function), both of x: f64[n]
    "cumsum-scale": (lambda x: jnp.cumsum(x) * 2.0 - x[::-1], lambda x: np.cumsum(x) * 2.0 - x[::-1]),
    "slice-pad": (lambda x: jnp.concatenate([x[1:], x[:1] * 3.0]), lambda x: np.concatenate([x[1:], x[:1] * 3.0])),
    "outer-sum": (lambda x: jnp.sum(x) * jnp.ones_like(x) + jnp.roll(x, 1),
                  lambda x: np.sum(x) * np.ones_like(x) + np.roll(x, 1)),
}


@pytest.mark.parametrize("name", sorted(LINEAR))
def test_transpose_matches_matrix_transpose(name):
    f, f_np = LINEAR[name]

    def transposed(x, ct):
        return dynjax.linear_transpose(f, x)(ct)[0]

    def transposed_np(x, ct):
        n = x.shape[0]
        return matrix_of(f_np, n).T @ ct if n else np.zeros(0)

    def make(n):
        return np.linspace(0.0, 1.0, n), np.cos(np.arange(n) + 0.5)
    check_three_ways(transposed, transposed_np, make, [0, 1, 4], abstracted_axes=({0: "n"}, {0: "n"}),
                     rtol=1e-12, atol=1e-14)
    g = dynjax.qjit(transposed, abstracted_axes=({0: "n"}, {0: "n"}))
    for n in (1, 5):
        np.testing.assert_allclose(g(*make(n)), transposed_np(*make(n)), rtol=1e-12, atol=1e-14)


def test_pytrees_closures_and_unused_inputs():
    A = np.arange(6.0).reshape(2, 3)
    t = dynjax.linear_transpose(lambda d: {"y": A @ d["x"], "z": 2.0 * d["x"][:2]}, {"x": np.zeros(3), "w": 1.0})
    (ct,) = t({"y": np.array([1.0, -1.0]), "z": np.array([0.5, 0.25])})
    np.testing.assert_allclose(ct["x"], A.T @ [1.0, -1.0] + [1.0, 0.5, 0.0])
    np.testing.assert_array_equal(ct["w"], 0.0)                   # the output does not use w
    # ShapeDtypeStruct primals, several inputs, an affine function (its linear part, as JAX)
    t2 = dynjax.linear_transpose(lambda x, y: x + 2.0 * y + 1.0, dynjax.ShapeDtypeStruct((2,), np.float64),
                                 np.zeros(2))
    a, b = t2(np.array([1.0, 3.0]))
    np.testing.assert_allclose(a, [1.0, 3.0])
    np.testing.assert_allclose(b, [2.0, 6.0])
    # integer -> integer
    (c,) = dynjax.linear_transpose(lambda x: 3 * x, np.int64(1))(np.int64(2))
    assert c == 6 and np.asarray(c).dtype == np.int64


def test_composes_with_grad_jvp_vmap():
    """The transpose of v -> sin(x) * cumsum(v) at ct = x, differentiated in x."""
    def g(x):
        (r,) = dynjax.linear_transpose(lambda v: jnp.sin(x) * jnp.cumsum(v), x)(x)
        return r

    def g_np(x):
        return np.cumsum((np.sin(x) * x)[::-1])[::-1]
    x = np.array([0.3, -1.2, 0.8, 2.0])
    np.testing.assert_allclose(g(x), g_np(x), rtol=1e-12)
    eps = 1e-6
    fd = np.stack([(g_np(x + eps * e) - g_np(x - eps * e)) / (2 * eps) for e in np.eye(4)], axis=1)
    np.testing.assert_allclose(dynjax.jacrev(g)(x), fd, rtol=1e-6)
    np.testing.assert_allclose(dynjax.jacfwd(g)(x), fd, rtol=1e-6)
    np.testing.assert_allclose(dynjax.qjit(dynjax.jacrev(g), abstracted_axes=({0: "n"},))(x), fd, rtol=1e-6)
    xs = np.stack([x, 2 * x])
    np.testing.assert_allclose(dynjax.vmap(g)(xs), np.stack([g_np(x), g_np(2 * x)]), rtol=1e-12)
    # transposing twice gives the function back
    f = LINEAR["slice-pad"][0]
    tt = dynjax.linear_transpose(lambda c: dynjax.linear_transpose(f, x)(c)[0], x)
    np.testing.assert_allclose(tt(x)[0], f(x), rtol=1e-12)


def test_errors():
    # a function that is not linear: JAX's NotImplementedError when the transpose is called
    t_sin = dynjax.linear_transpose(jnp.sin, 1.0)
    with pytest.raises(NotImplementedError, match="'sin' not implemented"):
        t_sin(1.0)
    with pytest.raises(NotImplementedError, match="not linear"):
        dynjax.linear_transpose(lambda x: x * x, 1.0)(1.0)
    with pytest.raises(NotImplementedError, match="not linear"):
        dynjax.linear_transpose(lambda x: 1.0 / x, 1.0)(1.0)
    with pytest.raises(NotImplementedError, match="not linear"):
        dynjax.linear_transpose(lambda x: x @ x, np.ones(2))(1.0)
    with pytest.raises(TypeError, match=r"integer -> integer functions"):
        dynjax.linear_transpose(lambda x: x.astype(np.float64), np.int64(1))
    t = dynjax.linear_transpose(lambda x: 2.0 * x, 1.0)
    with pytest.raises(TypeError, match="cotangent type does not match"):
        t(np.float32(1.0))
    with pytest.raises(TypeError, match="cotangent type does not match"):
        t(np.ones(3))
    with pytest.raises(TypeError, match="cotangent tree does not match"):
        t((1.0,))
    with pytest.raises(TypeError, match="first argument must be a function"):
        dynjax.linear_transpose(3, 1.0)
    with pytest.raises(TypeError, match="primal 0"):
        dynjax.linear_transpose(lambda x: x, "a")
    with pytest.raises(NotImplementedError, match="reduce_axes"):
        dynjax.linear_transpose(lambda x: x, 1.0, reduce_axes=("i",))


def test_against_jax():
    import jax
    jax.config.update("jax_enable_x64", True)
    x = np.array([0.5, -1.0, 2.0])
    for np_, lt, lax_ in ((jnp, dynjax.linear_transpose, lax), (jax.numpy, jax.linear_transpose, jax.lax)):
        f = (lambda np_: lambda v: np_.cumsum(v)[::-1] * np_.cos(x) + np_.sum(v))(np_)
        r = lt(f, x)(x)[0]
        if np_ is jnp:
            ours = r
        else:
            np.testing.assert_allclose(ours, r, rtol=1e-12)


def test_complex_is_the_transpose_not_the_adjoint():
    (c,) = dynjax.linear_transpose(lambda x: (1 + 2j) * x, np.complex128(1))(np.complex128(1))
    np.testing.assert_allclose(c, 1 + 2j)       # as JAX: no conjugate


# ----------------------------------------------------------------------------------------------
# Every order of jvp / vjp / vmap / qjit (pairs) around a transpose that depends on p
# ----------------------------------------------------------------------------------------------
def h(p):
    """The transpose of v -> sin(p) * cumsum(v), applied to cos(p)."""
    return dynjax.linear_transpose(lambda v: jnp.sin(p) * jnp.cumsum(v), p)(jnp.cos(p))[0]


def h_ref(p):
    """The same, written out: a reversed cumulative sum of sin(p) * cos(p)."""
    return jnp.flip(jnp.cumsum(jnp.flip(jnp.sin(p) * jnp.cos(p))))


def t_jvp(f):
    return lambda p: dynjax.jvp(f, (p,), (jnp.cos(3.0 * p),))[1]


def t_vjp(f):
    return lambda p: dynjax.vjp(f, p)[1](jnp.sin(2.0 * p) + 0.5)[0]


def t_vmap(f):
    return lambda p: jnp.sum(dynjax.vmap(f)(jnp.stack([p, 0.5 * p - 0.1])), axis=0)


def t_qjit(f):
    return dynjax.qjit(f, abstracted_axes=({0: "n"},))


TRANSFORMS = {"jvp": t_jvp, "vjp": t_vjp, "vmap": t_vmap, "qjit": t_qjit}
ORDERS = [o for k in (1, 2) for o in itertools.product(TRANSFORMS, repeat=k) if o != ("qjit", "qjit")]


@pytest.mark.parametrize("order", ORDERS, ids=["-".join(o) for o in ORDERS])
def test_composed_transformations(order):
    ours, ref = h, h_ref
    for name in order:
        ours, ref = TRANSFORMS[name](ours), TRANSFORMS[name](ref)
    for n in (0, 1, 4):
        p = np.linspace(-0.8, 1.1, n)
        np.testing.assert_allclose(ours(p), ref(p), rtol=1e-12, atol=1e-14, err_msg=str(order))
    # and the reference against numpy, for the untransformed function
    p = np.linspace(-0.8, 1.1, 4)
    np.testing.assert_allclose(h(p), np.cumsum((np.sin(p) * np.cos(p))[::-1])[::-1], rtol=1e-12)
