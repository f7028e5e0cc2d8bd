"""JAX's documented API of custom derivatives, on static and dynamic shapes, eagerly and
under ``qjit``: ``defjvp(..., symbolic_zeros=True)`` and ``SymbolicZero``, ``defjvps``,
``nondiff_argnums`` / ``nondiff_argnames``, keyword arguments, pytrees, methods,
``defvjp(..., symbolic_zeros=True)`` and ``CustomVJPPrimal``, ``bwd`` returning None,
pytree residuals with dynamic dims, ``optimize_remat``, forward mode of a ``custom_vjp``
function, ``custom_gradient`` and ``closure_convert``.

Every rule deliberately differs from the true derivative (a factor), so each expected value
-- computed by hand with numpy -- proves the rule was used.
"""
import functools

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import lax
from dynjax.custom_derivatives import CustomVJPPrimal, SymbolicZero, custom_vjp_primal_tree_values, zero_from_primal

X = np.array([1.0, 2.0, 4.0])
Y = np.array([3.0, 5.0, 7.0])
SIZES = (0, 1, 3)


def close(got, want):
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


def dyn(f):
    """``f`` compiled with a dynamic leading size for every argument."""
    return dynjax.qjit(f, abstracted_axes={0: "n"})


# ==============================================================================================
# custom_jvp with symbolic zeros
# ==============================================================================================
SEEN = []


@dynjax.custom_jvp
def mul(x, y):
    return x * y


def _mul_jvp(primals, tangents):
    """d(xy) claimed as 3 y tx + 5 x ty; records which tangents were symbolic zeros."""
    (x, y), (tx, ty) = primals, tangents
    SEEN.append(tuple(isinstance(t, SymbolicZero) for t in tangents))
    out = jnp.zeros(tx.shape, tx.dtype) if isinstance(tx, SymbolicZero) else 3.0 * y * tx
    if not isinstance(ty, SymbolicZero):
        out = out + 5.0 * x * ty
    return mul(x, y), out


mul.defjvp(_mul_jvp, symbolic_zeros=True)


def _loss(x, y):
    return jnp.sum(mul(x, y))


def test_symbolic_zero_has_jax_attributes():
    z = SymbolicZero.from_primal_value(np.ones((2, 3), np.float32))
    assert (z.shape, z.dtype, z.ndim, z.size) == ((2, 3), np.float32, 2, 6)
    assert z.aval.shape == (2, 3) and "SymbolicZero" in repr(z)
    assert isinstance(zero_from_primal(1.0, symbolic_zeros=True), SymbolicZero)
    close(zero_from_primal(np.ones(3)), np.zeros(3))
    p = CustomVJPPrimal(X, False)
    assert p.value is X and p.perturbed is False
    tree = custom_vjp_primal_tree_values({"a": p, "b": (CustomVJPPrimal(1.0, True), 2.0)})
    assert tree["a"] is X and tree["b"] == (1.0, 2.0)
    assert dynjax.custom_derivatives.custom_jvp is dynjax.custom_jvp


@pytest.mark.parametrize("n", SIZES)
def test_undifferentiated_argument_gets_a_symbolic_zero(n):
    x, y = X[:n], Y[:n]
    SEEN.clear()
    close(dynjax.grad(_loss)(x, y), 3.0 * y)
    close(dynjax.grad(_loss, argnums=1)(x, y), 5.0 * x)
    assert SEEN == [(False, True), (True, False)]
    close(dyn(dynjax.grad(_loss))(x, y), 3.0 * y)
    close(dyn(dynjax.grad(_loss, argnums=1))(x, y), 5.0 * x)
    # explicit tangents are arrays, zeros included (as in JAX)
    SEEN.clear()
    close(dynjax.jvp(mul, (x, y), (np.ones(n), np.zeros(n)))[1], 3.0 * y)
    assert SEEN == [(False, False)]
    close(dynjax.jvp(lambda x: mul(x, y), (x,), (np.ones(n),))[1], 3.0 * y)
    assert SEEN[-1] == (False, True)


def test_symbolic_zero_has_the_dynamic_shape_under_qjit():
    shapes = []

    @dynjax.custom_jvp
    def f(x, y):
        return x + y

    def rule(primals, tangents):
        tx, ty = tangents
        shapes.append(ty.shape)
        return f(*primals), 2.0 * tx + jnp.zeros(ty.shape, ty.dtype)
    f.defjvp(rule, symbolic_zeros=True)
    g = dyn(dynjax.grad(lambda x, y: jnp.sum(f(x, y))))
    for n in SIZES:
        close(g(X[:n], Y[:n]), 2.0 * np.ones(n))
    assert len(shapes) == 1 and not isinstance(shapes[0][0], int)   # one trace, a symbolic dim


def test_rule_may_return_a_symbolic_zero():
    @dynjax.custom_jvp
    def second(x, y):
        return x * y

    second.defjvp(lambda p, t: (second(*p), t[1]), symbolic_zeros=True)
    assert float(dynjax.grad(second)(1.0, 2.0)) == 0.0
    assert float(dynjax.grad(second, argnums=1)(1.0, 2.0)) == 1.0
    close(dyn(dynjax.grad(lambda x, y: jnp.sum(second(x, y))))(X, Y), np.zeros(3))


@pytest.mark.parametrize("wrap", ["vmap(grad)", "grad(vmap)", "jvp(vmap)", "vmap(jvp)"])
def test_symbolic_zeros_under_vmap(wrap):
    SEEN.clear()
    f = {
        "vmap(grad)": lambda: dynjax.vmap(dynjax.grad(mul))(X, Y),
        "grad(vmap)": lambda: dynjax.grad(lambda x: jnp.sum(dynjax.vmap(mul)(x, Y)))(X),
        "jvp(vmap)": lambda: dynjax.jvp(lambda x: dynjax.vmap(mul)(x, Y), (X,), (np.ones(3),))[1],
        "vmap(jvp)": lambda: dynjax.vmap(lambda x, y: dynjax.jvp(lambda a: mul(a, y), (x,), (1.0,))[1])(X, Y),
    }[wrap]
    close(f(), 3.0 * Y)
    assert SEEN and set(SEEN) == {(False, True)}


LOOPS = {
    "scan": lambda x, y: lax.scan(lambda c, xy: (c + mul(*xy), 0.0), 0.0, (x, y))[0],
    "cond": lambda x, y: lax.cond(jnp.sum(x) >= 0, lambda a, b: jnp.sum(mul(a, b)), lambda a, b: jnp.sum(a), x, y),
    "fori_loop": lambda x, y: lax.fori_loop(0, 2, lambda i, c: c + jnp.sum(mul(x, y)), 0.0) / 2,
    "for_loop": lambda x, y: dynjax.for_loop(0, 2, 1)(lambda i, c: c + jnp.sum(mul(x, y)))(0.0) / 2,
    "while_loop": lambda x, y: jnp.sum(lax.while_loop(
        lambda c: c[0] < 2, lambda c: (c[0] + 1, c[1] + mul(x, y)), (0, jnp.zeros_like(x)))[1]) / 2,
}


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_symbolic_zeros_inside_loops_and_branches(loop):
    L = LOOPS[loop]
    SEEN.clear()
    close(dynjax.jvp(lambda x: L(x, Y), (X,), (np.ones(3),))[1], 3.0 * np.sum(Y))
    close(dynjax.vmap(lambda x, y: dynjax.jvp(lambda a: L(a, y), (x,), (np.ones(1),))[1])(
        X[:, None], Y[:, None]), 3.0 * Y)
    fwd = dyn(lambda x, y: dynjax.jvp(lambda a: L(a, y), (x,), (jnp.ones_like(x),))[1])
    for n in SIZES:
        close(fwd(X[:n], Y[:n]), 3.0 * np.sum(Y[:n]))
    assert set(SEEN) == {(False, True)}
    if loop == "while_loop":    # reverse mode of while_loop is dynjax's documented TypeError
        with pytest.raises(TypeError, match="while_loop is not supported"):
            dynjax.grad(L)(X, Y)
        return
    close(dynjax.grad(L)(X, Y), 3.0 * Y)
    close(dynjax.vmap(dynjax.grad(L))(X[:, None], Y[:, None])[:, 0], 3.0 * Y)
    g = dyn(dynjax.grad(L))
    for n in SIZES:
        close(g(X[:n], Y[:n]), 3.0 * Y[:n])
    assert set(SEEN) == {(False, True)}


def test_pytree_arguments_with_symbolic_zeros():
    @dynjax.custom_jvp
    def tf(d):
        return {"s": d["a"] * d["b"], "t": d["a"]}

    def rule(primals, tangents):
        (d,), (td,) = primals, tangents
        assert isinstance(td["b"], SymbolicZero) and not isinstance(td["a"], SymbolicZero)
        return tf(d), {"s": 2.0 * td["a"] * d["b"], "t": td["a"]}
    tf.defjvp(rule, symbolic_zeros=True)
    L = lambda a, b: jnp.sum(tf({"a": a, "b": b})["s"]) + jnp.sum(tf({"a": a, "b": b})["t"])
    close(dynjax.grad(L)(X, Y), 2.0 * Y + 1.0)
    close(dyn(dynjax.grad(L))(X[:1], Y[:1]), 2.0 * Y[:1] + 1.0)


# ==============================================================================================
# defjvps, nondiff arguments, keywords, methods
# ==============================================================================================
@dynjax.custom_jvp
def sin_times(x, y):
    return jnp.sin(x) * y


sin_times.defjvps(lambda x_dot, out, x, y: 2.0 * jnp.cos(x) * x_dot * y,
                  lambda y_dot, out, x, y: 3.0 * jnp.sin(x) * y_dot)


@pytest.mark.parametrize("n", SIZES)
def test_defjvps_sums_the_parts(n):
    x, y = X[:n], Y[:n]
    tx, ty = np.full(n, 0.5), np.full(n, -2.0)
    primal, tangent = dynjax.jvp(sin_times, (x, y), (tx, ty))
    close(primal, np.sin(x) * y)
    close(tangent, 2.0 * np.cos(x) * tx * y + 3.0 * np.sin(x) * ty)
    L = lambda x, y: jnp.sum(sin_times(x, y))
    gx, gy = dyn(dynjax.grad(L, argnums=(0, 1)))(x, y)
    close(gx, 2.0 * np.cos(x) * y)
    close(gy, 3.0 * np.sin(x))


def test_defjvps_none_entry_is_a_zero_part():
    @dynjax.custom_jvp
    def q(x, y):
        return x * y

    q.defjvps(None, lambda y_dot, out, x, y: 10.0 * y_dot)
    assert float(dynjax.jvp(q, (1.0, 2.0), (1.0, 1.0))[1]) == 10.0
    gx, gy = dynjax.grad(q, argnums=(0, 1))(1.0, 2.0)
    assert (float(gx), float(gy)) == (0.0, 10.0)
    with pytest.raises(TypeError, match="nondiff_argnums"):
        dynjax.custom_jvp(lambda k, x: x, nondiff_argnums=(0,)).defjvps(None, None)
    with pytest.raises(TypeError, match="2 positional arguments but 1 JVPs"):
        r = dynjax.custom_jvp(lambda x, y: x * y)
        r.defjvps(lambda t, out, x, y: t)
        dynjax.grad(r)(1.0, 2.0)


@functools.partial(dynjax.custom_jvp, nondiff_argnums=(1,))
def scale_by(x, k):
    return x * k


@scale_by.defjvp
def _scale_by_jvp(k, primals, tangents):
    return scale_by(primals[0], k), 10.0 * k * tangents[0]


@functools.partial(dynjax.custom_jvp, nondiff_argnames=("k",))
def scale_by_name(x, k):
    return x * k


@scale_by_name.defjvp
def _scale_by_name_jvp(k, primals, tangents):
    return scale_by_name(primals[0], k), 10.0 * k * tangents[0]


@pytest.mark.parametrize("F", [scale_by, scale_by_name], ids=["nondiff_argnums", "nondiff_argnames"])
def test_nondiff_array_and_tracer_arguments(F):
    close(dynjax.grad(lambda x: jnp.sum(F(x, Y)))(X), 10.0 * Y)                # a numpy array
    close(dynjax.grad(lambda x: jnp.sum(F(x, k=Y)))(X), 10.0 * Y)              # by keyword
    g = dyn(dynjax.grad(lambda x, k: jnp.sum(F(x, k))))                        # a traced array
    for n in SIZES:
        close(g(X[:n], Y[:n]), 10.0 * Y[:n])
    close(dynjax.vmap(dynjax.grad(F))(X, Y), 10.0 * Y)                         # a batched tracer


def test_keyword_arguments_resolve_to_positions():
    @dynjax.custom_jvp
    def kw(x, y):
        return x * y

    kw.defjvp(lambda p, t: (kw(*p), 100.0 * t[0] + t[1]))
    assert float(dynjax.grad(lambda y: kw(1.0, y=y))(2.0)) == 1.0
    assert float(dynjax.grad(lambda x: kw(y=2.0, x=x))(1.0)) == 100.0

    @dynjax.custom_jvp
    def kwonly(x, *, k):
        return x * k

    kwonly.defjvp(lambda p, t: (kwonly(*p), t[0]))
    with pytest.raises(TypeError, match="could not be resolved to positional-only arguments"):
        kwonly(1.0, k=2.0)
    with pytest.raises(TypeError, match="nondiff_argnames entry 'z'"):
        dynjax.custom_jvp(lambda x: x, nondiff_argnames=("z",))


class Scaled:
    def __init__(self, s):
        self.s = s

    @functools.partial(dynjax.custom_jvp, nondiff_argnums=(0,))
    def apply(self, x):
        return self.s * x

    @apply.defjvp
    def _apply_jvp(self, primals, tangents):
        return self.apply(primals[0]), 100.0 * self.s * tangents[0]


def test_custom_jvp_method_with_partial_decorator():
    m = Scaled(2.0)
    close(m.apply(X), 2.0 * X)
    close(dynjax.grad(lambda x: jnp.sum(m.apply(x)))(X), np.full(3, 200.0))
    close(dyn(dynjax.grad(lambda x: jnp.sum(m.apply(x))))(X[:1]), [200.0])


# ==============================================================================================
# custom_vjp: symbolic zeros, None cotangents, residuals, optimize_remat, forward mode
# ==============================================================================================
LOG = []


@dynjax.custom_vjp
def two_outputs(x, y):
    return x * y, jnp.sin(x)


def _two_fwd(x, y):
    LOG.append(("fwd", type(x).__name__, x.perturbed, y.perturbed))
    return two_outputs(x.value, y.value), (x.value, y.value)


def _two_bwd(res, cts):
    x, y = res
    c0, c1 = cts
    LOG.append(("bwd", isinstance(c0, SymbolicZero), isinstance(c1, SymbolicZero)))
    gx = jnp.zeros_like(x) if isinstance(c0, SymbolicZero) else 3.0 * y * c0
    if not isinstance(c1, SymbolicZero):
        gx = gx + 2.0 * jnp.cos(x) * c1
    return gx, (None if isinstance(c0, SymbolicZero) else 5.0 * x * c0)


two_outputs.defvjp(_two_fwd, _two_bwd, symbolic_zeros=True)


@pytest.mark.parametrize("n", SIZES)
def test_custom_vjp_symbolic_zeros(n):
    x, y = X[:n], Y[:n]
    LOG.clear()
    close(dynjax.grad(lambda x, y: jnp.sum(two_outputs(x, y)[0]))(x, y), 3.0 * y)
    assert LOG == [("fwd", "CustomVJPPrimal", True, False), ("bwd", False, True)]
    LOG.clear()
    close(dynjax.grad(lambda x, y: jnp.sum(two_outputs(x, y)[1]), argnums=(0, 1))(x, y)[1], np.zeros(n))
    assert LOG == [("fwd", "CustomVJPPrimal", True, True), ("bwd", True, False)]
    g = dyn(dynjax.grad(lambda x, y: jnp.sum(two_outputs(x, y)[1])))
    close(g(x, y), 2.0 * np.cos(x))
    close(dynjax.vmap(dynjax.grad(lambda x, y: two_outputs(x, y)[0]))(x, y), 3.0 * y)
    close(dynjax.grad(lambda x: jnp.sum(dynjax.vmap(two_outputs, in_axes=(0, None))(x, 2.0)[1]))(x),
          2.0 * np.cos(x))


def test_bwd_may_return_a_symbolic_zero():
    @dynjax.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (7.0 * g * r[1], SymbolicZero.from_primal_value(r[0])))
    gx, gy = dynjax.grad(f, argnums=(0, 1))(2.0, 3.0)
    assert (float(gx), float(gy)) == (21.0, 0.0)


@dynjax.custom_vjp
def dot_res(x, y):
    return jnp.sum(x * y)


def _dot_fwd(x, y):
    return dot_res(x, y), {"x": x, "pair": (y, jnp.cos(x))}    # a pytree of dynamic-size residuals


def _dot_bwd(res, g):
    y, cos_x = res["pair"]
    return 2.0 * g * y, 3.0 * g * res["x"] + 0.0 * cos_x


dot_res.defvjp(_dot_fwd, _dot_bwd, optimize_remat=True)


def test_pytree_residuals_with_dynamic_dims():
    assert dot_res.optimize_remat is True
    g = dyn(dynjax.grad(dot_res, argnums=(0, 1)))
    for n in SIZES:
        gx, gy = g(X[:n], Y[:n])
        close(gx, 2.0 * Y[:n])
        close(gy, 3.0 * X[:n])


def test_custom_vjp_under_forward_mode_is_jax_type_error():
    msg = r"^can't apply forward-mode autodiff \(jvp\) to a custom_vjp function\.$"
    with pytest.raises(TypeError, match=msg):
        dynjax.jvp(dot_res, (X, Y), (X, Y))
    with pytest.raises(TypeError, match=msg):
        dyn(lambda x, y: dynjax.jvp(dot_res, (x, y), (x, y))[1])(X, Y)
    with pytest.raises(TypeError, match=msg):
        dynjax.jacfwd(dot_res)(X, Y)
    with pytest.raises(TypeError, match=msg):   # forward mode of the linear part too
        dynjax.grad(lambda x: dynjax.jvp(lambda a: dot_res(a, Y), (x,), (x,))[1])(X)


# ==============================================================================================
# custom_gradient and closure_convert
# ==============================================================================================
@dynjax.custom_gradient
def sin_cg(x):
    s = jnp.sin(x)
    return s, lambda g: (2.0 * jnp.cos(x) * g,)        # closes over x: converted into residuals


@dynjax.custom_gradient
def prod_cg(x, y):
    return x * y, lambda g: (3.0 * g * y, 5.0 * g * x)


@pytest.mark.parametrize("n", SIZES)
def test_custom_gradient(n):
    x, y = X[:n], Y[:n]
    close(sin_cg(x), np.sin(x))
    close(dynjax.grad(lambda x: jnp.sum(sin_cg(x)))(x), 2.0 * np.cos(x))
    close(dyn(dynjax.grad(lambda x: jnp.sum(sin_cg(x))))(x), 2.0 * np.cos(x))
    gx, gy = dyn(dynjax.grad(lambda x, y: jnp.sum(prod_cg(x, y)), argnums=(0, 1)))(x, y)
    close(gx, 3.0 * y)
    close(gy, 5.0 * x)
    close(dynjax.vmap(dynjax.grad(sin_cg))(x), 2.0 * np.cos(x))
    close(dynjax.grad(lambda x: jnp.sum(dynjax.vmap(sin_cg)(x)))(x), 2.0 * np.cos(x))
    close(dynjax.vmap(dynjax.grad(dynjax.grad(sin_cg)))(x), -2.0 * np.sin(x))


def test_custom_gradient_single_value_and_errors():
    @dynjax.custom_gradient
    def sq(x):
        return x * x, lambda g: 3.0 * g * x             # a single cotangent, not a tuple

    assert float(dynjax.grad(sq)(2.0)) == 6.0
    with pytest.raises(TypeError, match="can't apply forward-mode"):
        dynjax.jvp(sq, (2.0,), (1.0,))
    with pytest.raises(TypeError, match=r"pair \(value, vjp_fn\)"):
        dynjax.grad(dynjax.custom_gradient(lambda x: x))(1.0)


def test_closure_convert_hoists_traced_floats():
    def outer(x):
        a = jnp.sin(x)
        fn = lambda z: z * a + np.float64(3.0)
        converted, hoisted = dynjax.closure_convert(fn, x)
        assert len(hoisted) == (0 if isinstance(x, float) else 1)
        return converted(x, *hoisted)
    assert outer(1.0) == pytest.approx(np.sin(1.0) + 3.0)
    close(dynjax.grad(outer)(1.0), np.sin(1.0) + np.cos(1.0))
    with pytest.raises(TypeError, match="takes 1 arguments and 0 hoisted"):
        dynjax.closure_convert(lambda z: z, 1.0)[0](1.0, 2.0)


def _apply_twice(fn, x0):
    converted, hoisted = dynjax.closure_convert(fn, x0)
    return _apply_twice_converted(converted, x0, *hoisted)


@functools.partial(dynjax.custom_vjp, nondiff_argnums=(0,))
def _apply_twice_converted(fn, x0, *args):
    return fn(fn(x0, *args), *args)


def _twice_fwd(fn, x0, *args):
    return _apply_twice_converted(fn, x0, *args), (x0, args)


def _twice_bwd(fn, res, g):
    x0, args = res
    _, pullback = dynjax.vjp(lambda x, *a: fn(fn(x, *a), *a), x0, *args)
    cts = pullback(g)
    return (3.0 * cts[0],) + tuple(cts[1:])              # x0's cotangent scaled: the rule ran


_apply_twice_converted.defvjp(_twice_fwd, _twice_bwd)


def test_closure_convert_with_custom_vjp():
    """JAX's documented use: a function argument's closed-over values (here ``w``) become
    arguments of the custom_vjp function, so its rule gives their cotangents."""
    def loss(w, x):
        return jnp.sum(_apply_twice(lambda z: jnp.sin(w * z), x))

    def expected(w, x):
        inner = np.sin(w * x)
        dw = np.sum(np.cos(w * inner) * (inner + w * np.cos(w * x) * x))
        return dw, 3.0 * np.cos(w * inner) * w * w * np.cos(w * x)

    g = dynjax.qjit(dynjax.grad(loss, argnums=(0, 1)), abstracted_axes=({}, {0: "n"}))
    for n in SIZES:
        x = X[:n] / 4
        for got in (dynjax.grad(loss, argnums=(0, 1))(0.7, x), g(0.7, x)):
            close(got[0], expected(0.7, x)[0])
            close(got[1], expected(0.7, x)[1])
    ws = np.array([0.7, 0.2])
    close(dynjax.vmap(dynjax.grad(loss), in_axes=(0, None))(ws, X / 4), [expected(w, X / 4)[0] for w in ws])


def test_bad_input_is_a_clear_type_error():
    with pytest.raises(TypeError, match="custom_gradient: expected a function"):
        dynjax.custom_gradient(3)
    with pytest.raises(TypeError, match="closure_convert: fun must be a function"):
        dynjax.closure_convert(3, 1.0)
    with pytest.raises(TypeError, match="example_args must be arrays"):
        dynjax.closure_convert(lambda s: s, "abc")

    @dynjax.custom_gradient
    def short(x, y):
        return x * y, lambda g: (g,)
    with pytest.raises(TypeError, match=r"one cotangent per differentiable positional argument \(2\)"):
        dynjax.grad(short)(1.0, 2.0)

    @dynjax.custom_jvp
    def bad_tangent(x):
        return x
    bad_tangent.defjvp(lambda p, t: (bad_tangent(*p), "zero"), symbolic_zeros=True)
    with pytest.raises(TypeError, match="tangent output 0 of the rule of bad_tangent is a str"):
        dynjax.grad(bad_tangent)(1.0)


def test_integer_argument_gets_a_symbolic_zero():
    @dynjax.custom_jvp
    def times(x, n):
        return x * n

    def rule(primals, tangents):
        assert isinstance(tangents[1], SymbolicZero) and tangents[1].dtype.kind == "i"
        return times(*primals), 2.0 * tangents[0] * primals[1]
    times.defjvp(rule, symbolic_zeros=True)
    assert float(dynjax.grad(times)(1.5, 3)) == 6.0
    assert float(dynjax.qjit(dynjax.grad(times))(1.5, 3)) == 6.0


# ==============================================================================================
# JAX's tutorial program: implicit differentiation of a fixed point (a while_loop inside the
# custom_vjp function and inside its bwd), on vectors of dynamic size
# ==============================================================================================
@functools.partial(dynjax.custom_vjp, nondiff_argnums=(0,))
def fixed_point(f, a, x_guess):
    def not_converged(carry):
        x_prev, x = carry
        return jnp.max(jnp.abs(x_prev - x), initial=0.0) > 1e-12

    def step(carry):
        return carry[1], f(a, carry[1])
    return lax.while_loop(not_converged, step, (x_guess, f(a, x_guess)))[1]


def _fixed_point_fwd(f, a, x_init):
    x_star = fixed_point(f, a, x_init)
    return x_star, (a, x_star)


def _rev_iter(f, packed, u):
    a, x_star, x_star_bar = packed
    _, vjp_x = dynjax.vjp(lambda x: f(a, x), x_star)
    return x_star_bar + vjp_x(u)[0]


def _fixed_point_rev(f, res, x_star_bar):
    a, x_star = res
    _, vjp_a = dynjax.vjp(lambda a: f(a, x_star), a)
    (a_bar,) = vjp_a(fixed_point(functools.partial(_rev_iter, f), (a, x_star, x_star_bar), x_star_bar))
    return a_bar, jnp.zeros_like(x_star)


fixed_point.defvjp(_fixed_point_fwd, _fixed_point_rev)


def newton_sqrt(a):
    return fixed_point(lambda a, x: 0.5 * (x + a / x), a, a)


def test_fixed_point_from_jax_tutorial():
    assert float(dynjax.grad(newton_sqrt)(2.0)) == pytest.approx(0.5 / np.sqrt(2.0), rel=1e-12)
    assert float(dynjax.grad(dynjax.grad(newton_sqrt))(2.0)) == pytest.approx(-0.25 * 2.0 ** -1.5, rel=1e-9)
    a = np.array([1.0, 4.0, 9.0])
    g = dyn(dynjax.grad(lambda a: jnp.sum(newton_sqrt(a))))
    for n in SIZES:
        np.testing.assert_allclose(np.asarray(g(a[:n])), 0.5 / np.sqrt(a[:n]), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(dynjax.vmap(dynjax.grad(newton_sqrt))(a)), 0.5 / np.sqrt(a), rtol=1e-12)
