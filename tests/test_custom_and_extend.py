"""User-defined primitives (``dynjax.extend``) and user-defined derivatives (``custom_jvp``,
``custom_vjp``): eagerly, under ``qjit`` with dynamic shapes, under ``jvp`` and ``grad``.

Only the public API is used here (``dynjax``, ``dynjax.numpy``, ``dynjax.extend``), plus
jaxlib's StableHLO dialect for the lowering rules.
"""
import numpy as np
import pytest
from jaxlib.mlir.dialects import stablehlo as hlo

import dynjax
import dynjax.numpy as jnp
from dynjax import extend as ext
from helpers import fd_grad

SIZES = (0, 1, 5)


# ==============================================================================================
# The seed's multiply_add walk-through, with the public extension API only
# ==============================================================================================
multiply_add_p = ext.Primitive("multiply_add")


def multiply_add(x, y, z):
    """x * y + z, elementwise, for three arrays of one shape and dtype."""
    return multiply_add_p.bind(x, y, z)


def square_add(a, b):
    return multiply_add(a, a, b)


def _multiply_add_impl(x, y, z):
    return np.add(np.multiply(x, y), z)


def _multiply_add_abstract(x, y, z):
    a = x.aval
    for other in (y.aval, z.aval):
        if other.dtype != a.dtype or other.ndim != a.ndim or not all(
                ext.same_dim(p, q) for p, q in zip(a.shape, other.shape)):
            raise TypeError(f"multiply_add: operands {a.str_short()} and {other.str_short()} differ")
    # the result has x's dims: dynamic ones included (x.aval.shape[0] may be a traced size)
    return ext.make_aval(a.shape, a.dtype)


def _multiply_add_lowering(ctx, eqn, x, y, z):
    return hlo.AddOp(hlo.MulOp(x, y).result, z).result


def _multiply_add_jvp(primals, tangents):
    x, y, z = primals
    tx, ty, tz = (ext.instantiate(t) for t in tangents)
    # d(x y + z) = x ty + (tx y + tz): two multiply_adds, each linear in two of its operands
    return multiply_add(x, y, z), multiply_add(x, ty, multiply_add(tx, y, tz))


def _multiply_add_transpose(ct, x, y, z):
    if ext.is_undefined(x) and ext.is_undefined(y):
        raise ValueError("multiply_add is not linear in x and y together")
    zeros = jnp.zeros_like(ct)
    ct_x = multiply_add(ct, y, zeros) if ext.is_undefined(x) else None
    ct_y = multiply_add(x, ct, zeros) if ext.is_undefined(y) else None
    ct_z = ct if ext.is_undefined(z) else None
    return [ct_x, ct_y, ct_z]


def test_multiply_add_eager():
    assert square_add(2.0, 10.0) == 14.0
    a, b = np.arange(4.0), np.ones(4)
    np.testing.assert_allclose(square_add(a, b), a * a + b)


def test_multiply_add_scalar_walkthrough():
    """The values the seed prints: square_add(2, 10) = 14, its derivative in a is 4."""
    assert dynjax.qjit(square_add)(2.0, 10.0) == 14.0
    assert dynjax.grad(square_add)(2.0, 10.0) == 4.0
    y, t = dynjax.jvp(square_add, (2.0, 10.0), (1.0, 1.0))
    assert (y, t) == (14.0, 5.0)
    assert dynjax.qjit(dynjax.grad(square_add))(2.0, 10.0) == 4.0
    assert dynjax.grad(square_add, argnums=1)(2.0, 10.0) == 1.0


def test_multiply_add_qjit_dynamic_axis():
    f = dynjax.qjit(square_add, abstracted_axes={0: "n"})
    rng = np.random.default_rng(0)
    for n in SIZES:
        a, b = rng.normal(size=n), rng.normal(size=n)
        got = f(a, b)
        assert got.shape == (n,)
        np.testing.assert_allclose(got, a * a + b)
    assert f.cache_info()["traces"] == 1
    jaxpr = f.jaxpr
    dynjax.check_jaxpr(jaxpr.jaxpr)
    assert "multiply_add" in str(jaxpr)
    n = jaxpr.jaxpr.invars[0]
    assert jaxpr.jaxpr.outvars[0].aval.shape == (n,)   # the result shares the input's dim
    assert "tensor<?xf64>" in f.mlir


def test_multiply_add_shape_mismatch_is_a_type_error():
    f = dynjax.qjit(lambda a, b: square_add(a, b), abstracted_axes=({0: "n"}, {0: "m"}))
    with pytest.raises(TypeError, match="multiply_add"):
        f(np.ones(3), np.ones(3))


def test_multiply_add_jvp_and_grad_under_qjit():
    def loss(a, b):
        return jnp.sum(square_add(a, b) * jnp.sin(a))

    def ref(a, b):
        return np.sum((a * a + b) * np.sin(a))

    grad_f = dynjax.qjit(dynjax.grad(loss, argnums=(0, 1)), abstracted_axes={0: "n"})
    jvp_f = dynjax.qjit(lambda a, b, ta, tb: dynjax.jvp(loss, (a, b), (ta, tb)), abstracted_axes={0: "n"})
    rng = np.random.default_rng(1)
    for n in SIZES:
        a, b, ta, tb = (rng.normal(size=n) for _ in range(4))
        ga, gb = grad_f(a, b)
        np.testing.assert_allclose(ga, fd_grad(lambda v: ref(v, b), a), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(gb, np.sin(a), rtol=1e-12)
        # eager agrees with compiled
        ea, eb = dynjax.grad(loss, argnums=(0, 1))(a, b)
        np.testing.assert_allclose(ga, ea, rtol=1e-12, atol=1e-14)
        y, t = jvp_f(a, b, ta, tb)
        np.testing.assert_allclose(y, ref(a, b), rtol=1e-12)
        expected_t = np.sum((2 * a * ta + tb) * np.sin(a) + (a * a + b) * np.cos(a) * ta)
        np.testing.assert_allclose(t, expected_t, rtol=1e-10, atol=1e-12)
    assert grad_f.cache_info()["traces"] == 1
    assert jvp_f.cache_info()["traces"] == 1


def test_multiply_add_second_derivative():
    # d/da (a^2 + b) = 2a, d2/da2 = 2: jvp of the jvp rule, through multiply_add again
    assert dynjax.grad(dynjax.grad(square_add))(3.0, 1.0) == 2.0


def test_missing_rules_name_the_extension_api():
    p = ext.Primitive("half_defined")
    ext.def_impl(p, lambda x: x * 2)
    ext.def_abstract_eval(p, lambda x: ext.make_aval(x.aval.shape, x.aval.dtype))
    assert p.bind(np.ones(2)).tolist() == [2.0, 2.0]
    with pytest.raises(NotImplementedError, match="def_jvp"):
        dynjax.jvp(p.bind, (np.ones(2),), (np.ones(2),))
    with pytest.raises(Exception, match="half_defined"):
        dynjax.qjit(p.bind)(np.ones(2))


# ----------------------------------------------------------------------------------------------
# A primitive whose result has dims of two different operands
# ----------------------------------------------------------------------------------------------
outer_add_p = ext.Primitive("outer_add")


def outer_add(x, y):
    """out[i, j] = x[i] + y[j]"""
    return outer_add_p.bind(x, y)


def _outer_add_impl(x, y):
    return np.add.outer(x, y)


def _outer_add_abstract(x, y):
    if x.aval.ndim != 1 or y.aval.ndim != 1 or x.aval.dtype != y.aval.dtype:
        raise TypeError("outer_add: two vectors of one dtype")
    return ext.make_aval((x.aval.shape[0], y.aval.shape[0]), x.aval.dtype)


def _outer_add_lowering(ctx, eqn, x, y):
    shape = eqn.outvars[0].aval.shape   # dims: ints or the operands' dim variables
    return hlo.AddOp(ctx.broadcast(x, shape, [0]), ctx.broadcast(y, shape, [1])).result


def _outer_add_jvp(primals, tangents):
    tx, ty = (ext.instantiate(t) for t in tangents)
    return outer_add(*primals), outer_add(tx, ty)


def _outer_add_transpose(ct, x, y):
    return [jnp.sum(ct, axis=1) if ext.is_undefined(x) else None,
            jnp.sum(ct, axis=0) if ext.is_undefined(y) else None]


def _multiply_add_batching(size, vals, dims):
    # elementwise: every operand as a batch with the batch axis first
    return multiply_add(*[ext.batch_to_front(v, d, size) for v, d in zip(vals, dims)]), 0


def _register(prim, impl, abstract, lowering, jvp, transpose):
    ext.def_impl(prim, impl)
    ext.def_abstract_eval(prim, abstract)
    ext.def_lowering(prim, lowering)
    ext.def_jvp(prim, jvp)
    ext.def_transpose(prim, transpose)


@pytest.fixture(scope="module", autouse=True)
def _register_primitives():
    """The rules are registered when this module's tests run, not when it is imported:
    test_eager_vs_compiled.py checks that every primitive registered at collection time has
    a case there."""
    _register(multiply_add_p, _multiply_add_impl, _multiply_add_abstract, _multiply_add_lowering,
              _multiply_add_jvp, _multiply_add_transpose)
    ext.def_batching(multiply_add_p, _multiply_add_batching)
    _register(outer_add_p, _outer_add_impl, _outer_add_abstract, _outer_add_lowering, _outer_add_jvp,
              _outer_add_transpose)


def test_outer_add_two_dynamic_dims():
    f = dynjax.qjit(outer_add, abstracted_axes=({0: "n"}, {0: "m"}))
    g = dynjax.qjit(dynjax.grad(lambda x, y: jnp.sum(jnp.sin(outer_add(x, y))), argnums=(0, 1)),
                    abstracted_axes=({0: "n"}, {0: "m"}))
    rng = np.random.default_rng(2)
    for n, m in [(0, 3), (1, 1), (5, 2), (2, 0)]:
        x, y = rng.normal(size=n), rng.normal(size=m)
        np.testing.assert_allclose(f(x, y), np.add.outer(x, y))
        gx, gy = g(x, y)
        c = np.cos(np.add.outer(x, y))
        np.testing.assert_allclose(gx, c.sum(axis=1), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(gy, c.sum(axis=0), rtol=1e-12, atol=1e-14)
    assert f.cache_info()["traces"] == 1
    out = f.jaxpr.jaxpr.outvars[0]
    n, m = f.jaxpr.jaxpr.invars[:2]
    assert out.aval.shape == (n, m)


def test_decorator_style_registration():
    double_p = ext.Primitive("double")

    @ext.def_impl(double_p)
    def _impl(x):
        return 2 * x

    @ext.def_abstract_eval(double_p)
    def _abstract(x):
        return ext.make_aval(x.aval.shape, x.aval.dtype)

    @ext.def_lowering(double_p)
    def _lowering(ctx, eqn, x):
        return hlo.AddOp(x, x).result

    @ext.def_jvp(double_p)
    def _jvp(primals, tangents):
        return double_p.bind(primals[0]), double_p.bind(ext.instantiate(tangents[0]))

    @ext.def_transpose(double_p)
    def _transpose(ct, x):
        return [double_p.bind(ct)]

    assert callable(_impl) and callable(_transpose)   # the decorators return the rule
    f = dynjax.qjit(lambda x: jnp.sum(double_p.bind(x) ** 2), abstracted_axes={0: "n"})
    g = dynjax.qjit(dynjax.grad(lambda x: jnp.sum(double_p.bind(x) ** 2)), abstracted_axes={0: "n"})
    for n in SIZES:
        x = np.linspace(0, 1, n)
        np.testing.assert_allclose(f(x), np.sum(4 * x * x))
        np.testing.assert_allclose(g(x), 8 * x)


def test_def_batching_is_stored_and_decorators_return_the_rule():
    p = ext.Primitive("batched_thing")

    def rule(args, dims):
        return args[0], dims[0]
    assert ext.def_batching(p, rule) is rule
    with pytest.raises(TypeError, match="Primitive"):
        ext.def_impl("not a primitive", rule)


# ==============================================================================================
# custom_jvp
# ==============================================================================================
SCALE = 3.0   # the custom rule is deliberately off by this factor, to see that it is used


@dynjax.custom_jvp
def log1pexp(x):
    return jnp.log1p(jnp.exp(x))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    # the stable derivative sigmoid(x) = 1 - 1 / (1 + e^x), scaled
    return log1pexp(x), SCALE * t * (1.0 - 1.0 / (1.0 + jnp.exp(x)))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def test_custom_jvp_eager():
    x = np.linspace(-3, 3, 7)
    np.testing.assert_allclose(log1pexp(x), np.log1p(np.exp(x)))
    y, t = dynjax.jvp(log1pexp, (x,), (np.ones(7),))
    np.testing.assert_allclose(y, np.log1p(np.exp(x)))
    np.testing.assert_allclose(t, SCALE * sigmoid(x))
    g = dynjax.grad(lambda x: jnp.sum(log1pexp(x)))(x)
    np.testing.assert_allclose(g, SCALE * sigmoid(x))
    assert dynjax.grad(log1pexp)(0.5) == pytest.approx(SCALE * sigmoid(0.5))


def test_custom_jvp_rule_is_stable_where_autodiff_is_not():
    @dynjax.custom_jvp
    def stable(x):
        return jnp.log1p(jnp.exp(x))

    @stable.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return stable(x), t * (1.0 - 1.0 / (1.0 + jnp.exp(x)))
    g = dynjax.grad(lambda x: jnp.sum(stable(x)))(np.array([1000.0]))
    assert g.tolist() == [1.0]   # autodiff of the body would give exp(x) / (1 + exp(x)) = nan


def test_custom_jvp_qjit_dynamic_axis():
    f = dynjax.qjit(log1pexp, abstracted_axes={0: "n"})
    g = dynjax.qjit(dynjax.grad(lambda x: jnp.sum(log1pexp(x) * x)), abstracted_axes={0: "n"})
    h = dynjax.qjit(lambda x, t: dynjax.jvp(log1pexp, (x,), (t,)), abstracted_axes={0: "n"})
    for n in SIZES:
        x = np.linspace(-2, 2, n)
        t = np.cos(np.arange(n))
        np.testing.assert_allclose(f(x), np.log1p(np.exp(x)))
        # d/dx [log1pexp(x) x] = log1pexp'(x) x + log1pexp(x), with the custom (scaled) derivative
        np.testing.assert_allclose(g(x), SCALE * sigmoid(x) * x + np.log1p(np.exp(x)), rtol=1e-12)
        y, ty = h(x, t)
        np.testing.assert_allclose(y, np.log1p(np.exp(x)))
        np.testing.assert_allclose(ty, SCALE * sigmoid(x) * t, rtol=1e-12)
    for c in (f, g, h):
        assert c.cache_info()["traces"] == 1
    dynjax.check_jaxpr(f.jaxpr.jaxpr)
    assert "custom_jvp_call" in str(f.jaxpr)


def test_custom_jvp_second_derivative_differentiates_the_rule():
    # d/dx [SCALE sigmoid(x)] = SCALE sigmoid(x) (1 - sigmoid(x))
    d2 = dynjax.grad(dynjax.grad(log1pexp))(0.3)
    s = sigmoid(0.3)
    assert d2 == pytest.approx(SCALE * s * (1 - s))


def test_custom_jvp_pytrees_kwargs_and_int_arguments():
    @dynjax.custom_jvp
    def f(p, k):
        return {"y": p["a"] * p["b"], "k": k * 2}

    @f.defjvp
    def _(primals, tangents):
        p, k = primals
        tp, tk = tangents
        assert tk.dtype == np.int64   # an integer argument gets an array of zeros
        return f(p, k), {"y": tp["a"] * p["b"] + p["a"] * tp["b"] * 10.0, "k": tk}

    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    out = f({"a": a, "b": b}, k=np.int64(3))
    np.testing.assert_allclose(out["y"], a * b)
    assert out["k"] == 6
    ga, gb = dynjax.grad(lambda a, b: jnp.sum(f({"a": a, "b": b}, 1)["y"]), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, b)
    np.testing.assert_allclose(gb, 10.0 * a)


def test_custom_jvp_nondiff_argnums():
    def apply(fn, x):
        return fn(x)
    app = dynjax.custom_jvp(apply, nondiff_argnums=(0,))

    @app.defjvp
    def _(fn, primals, tangents):
        (x,), (t,) = primals, tangents
        return app(fn, x), 7.0 * t
    assert dynjax.grad(lambda x: app(jnp.sin, x))(0.1) == pytest.approx(7.0)
    assert app(jnp.sin, 0.1) == pytest.approx(np.sin(0.1))


def test_custom_jvp_closing_over_a_differentiated_value_is_an_error():
    def outer(w):
        @dynjax.custom_jvp
        def f(x):
            return x * w

        @f.defjvp
        def _(primals, tangents):
            return f(primals[0]), tangents[0] * w
        return f(2.0)
    with pytest.raises(TypeError, match="closes over a value that is being differentiated"):
        dynjax.grad(outer)(3.0)


def test_custom_jvp_output_size_computed_inside_is_a_type_error():
    @dynjax.custom_jvp
    def drop_first(x):
        return x[1:]
    drop_first.defjvp(lambda p, t: (drop_first(p[0]), t[0][1:]))
    np.testing.assert_allclose(drop_first(np.arange(3.0)), [1.0, 2.0])   # static sizes: fine
    with pytest.raises(TypeError, match="dimension computed inside the function"):
        dynjax.qjit(drop_first, abstracted_axes={0: "n"})(np.arange(3.0))


def test_custom_jvp_without_rule():
    f = dynjax.custom_jvp(lambda x: x)
    with pytest.raises(AttributeError, match="defjvp"):
        f(1.0)


# ==============================================================================================
# custom_vjp
# ==============================================================================================
@dynjax.custom_vjp
def clip_gradient(lo, hi, x):
    return x   # the identity, with a clipped gradient


def _clip_fwd(lo, hi, x):
    return x, (lo, hi)


def _clip_bwd(res, g):
    lo, hi = res
    return (None, None, jnp.clip(g, lo, hi))


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def clipped_loss(x):
    return jnp.sum(clip_gradient(-0.5, 0.5, 3.0 * x) ** 2)


def clipped_grad_ref(x):
    return 3.0 * np.clip(2 * 3.0 * x, -0.5, 0.5)


def test_custom_vjp_eager():
    x = np.linspace(-1, 1, 5)
    np.testing.assert_allclose(clip_gradient(-0.5, 0.5, x), x)
    np.testing.assert_allclose(clipped_loss(x), np.sum(9 * x * x))
    np.testing.assert_allclose(dynjax.grad(clipped_loss)(x), clipped_grad_ref(x))
    y, f_vjp = dynjax.vjp(lambda x: clip_gradient(-0.5, 0.5, x), x)
    np.testing.assert_allclose(f_vjp(np.array([-2.0, -0.1, 0.0, 0.3, 9.0]))[0], [-0.5, -0.1, 0.0, 0.3, 0.5])


def test_custom_vjp_qjit_dynamic_axis():
    f = dynjax.qjit(lambda x: clip_gradient(-0.5, 0.5, x), abstracted_axes={0: "n"})
    g = dynjax.qjit(dynjax.grad(clipped_loss), abstracted_axes={0: "n"})
    for n in SIZES:
        x = np.linspace(-1, 1, n)
        np.testing.assert_allclose(f(x), x)
        np.testing.assert_allclose(g(x), clipped_grad_ref(x), rtol=1e-12)
    assert f.cache_info()["traces"] == 1 and g.cache_info()["traces"] == 1
    assert "custom_vjp_call" in str(f.jaxpr)


@dynjax.custom_vjp
def sin_with_scaled_grad(x):
    return jnp.sin(x)


def _sin_fwd(x):
    return jnp.sin(x), jnp.cos(x)        # a residual with the input's dynamic size


def _sin_bwd(cos_x, g):
    return (SCALE * cos_x * g,)


sin_with_scaled_grad.defvjp(_sin_fwd, _sin_bwd)


def test_custom_vjp_residuals_with_dynamic_dims():
    loss = lambda x, w: jnp.sum(sin_with_scaled_grad(x * w) * w)   # noqa: E731
    g = dynjax.qjit(dynjax.grad(loss, argnums=(0, 1)), abstracted_axes=({0: "n"}, {0: "n"}))
    for n in SIZES:
        x, w = np.linspace(-1, 1, n), np.linspace(0.5, 2, n)
        gx, gw = g(x, w)
        np.testing.assert_allclose(gx, SCALE * np.cos(x * w) * w * w, rtol=1e-12)
        np.testing.assert_allclose(gw, SCALE * np.cos(x * w) * w * x + np.sin(x * w), rtol=1e-12)
        ex, ew = dynjax.grad(loss, argnums=(0, 1))(x, w)
        np.testing.assert_allclose(gx, ex, rtol=1e-12)
        np.testing.assert_allclose(gw, ew, rtol=1e-12)


def test_custom_vjp_jacrev_and_second_derivative():
    x = np.array([0.1, 0.7, -1.2])
    np.testing.assert_allclose(dynjax.jacrev(sin_with_scaled_grad)(x), np.diag(SCALE * np.cos(x)), atol=1e-15)
    # grad of grad: the bwd function is differentiated (d/dx SCALE cos x = -SCALE sin x)
    assert dynjax.grad(dynjax.grad(sin_with_scaled_grad))(0.4) == pytest.approx(-SCALE * np.sin(0.4))


def test_custom_vjp_forward_mode_is_a_type_error():
    x = np.ones(3)
    msg = r"can.t apply forward-mode autodiff \(jvp\) to a custom_vjp function"
    with pytest.raises(TypeError, match=msg):
        dynjax.jvp(clipped_loss, (x,), (x,))
    with pytest.raises(TypeError, match=msg):
        dynjax.qjit(lambda x: dynjax.jvp(clipped_loss, (x,), (x,)))(x)
    # as in JAX, tracing a jvp of it fails already
    with pytest.raises(TypeError, match=msg):
        dynjax.make_jaxpr(lambda x: dynjax.jvp(clipped_loss, (x,), (x,)), abstracted_axes={0: "n"})(x)
    # a jvp inside a linearization that does not differentiate it is caught when evaluated
    with pytest.raises(TypeError, match=msg):
        dynjax.grad(lambda y: y * dynjax.jvp(clipped_loss, (x,), (x,))[1])(2.0)
    with pytest.raises(TypeError, match=msg):
        dynjax.qjit(dynjax.grad(lambda y: y * dynjax.jvp(clipped_loss, (x,), (x,))[1]))(2.0)


def test_custom_vjp_bwd_errors():
    @dynjax.custom_vjp
    def f(x, y):
        return x * y
    f.defvjp(lambda x, y: (x * y, (x, y)), lambda res, g: (g * res[1],))   # one cotangent short
    with pytest.raises(TypeError, match="one cotangent per differentiable positional argument"):
        dynjax.grad(f)(1.0, 2.0)


def test_custom_vjp_nondiff_argnums():
    def scale_by(k, x):
        return x * k
    f = dynjax.custom_vjp(scale_by, nondiff_argnums=(0,))
    f.defvjp(lambda k, x: (x * k, None), lambda k, res, g: (g * k * 100.0,))
    assert f(2.0, 3.0) == 6.0
    assert dynjax.grad(lambda x: f(2.0, x))(3.0) == 200.0


# ==============================================================================================
# The execution planner sees inside the custom function
# ==============================================================================================
def test_integer_used_as_a_size_inside_a_custom_function_keys_the_executable():
    @dynjax.custom_jvp
    def f(x, k):
        return x * jnp.sum(jnp.ones(k))   # k is a size only inside f
    f.defjvp(lambda p, t: (f(*p), t[0] * 2.0))
    g = dynjax.qjit(f)
    for k in (3, 4, 0):
        np.testing.assert_allclose(g(np.ones(2), k), [float(k)] * 2)
    assert g.cache_info()["traces"] == 1


def test_data_dependent_size_inside_a_custom_function_runs_on_the_host():
    @dynjax.custom_jvp
    def f(x, k):
        return x * jnp.sum(jnp.ones(jnp.sum(k)))
    f.defjvp(lambda p, t: (f(*p), t[0] * 2.0))
    g = dynjax.qjit(f)
    np.testing.assert_allclose(g(np.ones(2), np.array([1, 2])), [3.0, 3.0])
    np.testing.assert_allclose(g(np.ones(2), np.array([3, 4])), [7.0, 7.0])
    dg = dynjax.qjit(dynjax.grad(lambda x, k: jnp.sum(f(x, k))))
    np.testing.assert_allclose(dg(np.ones(2), np.array([3, 4])), [2.0, 2.0])


def test_custom_jvp_jacfwd_and_jacrev():
    x = np.array([-1.0, 0.0, 2.0])
    want = np.diag(SCALE * sigmoid(x))
    np.testing.assert_allclose(dynjax.jacfwd(log1pexp)(x), want, rtol=1e-12)
    np.testing.assert_allclose(dynjax.jacrev(log1pexp)(x), want, rtol=1e-12)


def test_multiply_add_vmap():
    rng = np.random.default_rng(7)
    # batched x and z, y shared by every member; eagerly and compiled with a dynamic batch
    # size and a dynamic member size (one trace)
    f = dynjax.vmap(multiply_add, in_axes=(0, None, 0))
    compiled = dynjax.qjit(f, abstracted_axes=({0: "b", 1: "n"}, {0: "n"}, {0: "b", 1: "n"}))
    for b, n in [(0, 3), (1, 1), (5, 4)]:
        x, y, z = rng.normal(size=(b, n)), rng.normal(size=n), rng.normal(size=(b, n))
        expected = np.stack([xi * y + zi for xi, zi in zip(x, z)]) if b else np.zeros((0, n))
        np.testing.assert_array_equal(f(x, y, z), expected)
        np.testing.assert_allclose(compiled(x, y, z), expected, rtol=1e-15)
    assert compiled.cache_info()["traces"] == 1
    # composed with grad: per-member gradients of sum(x * x + y)
    g = dynjax.vmap(dynjax.grad(lambda a, c: jnp.sum(square_add(a, c))))
    a, c = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    np.testing.assert_allclose(g(a, c), 2 * a, rtol=1e-15)
