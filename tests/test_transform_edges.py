"""The edges of the differentiation API, as JAX documents them: ``has_aux``, ``argnums`` tuples
and negative positions, ``allow_int`` and float0 tangents / cotangents, ``holomorphic``,
argument validation (JAX's error types), ``linearize`` on dynamic dims, ``make_jaxpr``'s
``return_shape`` / ``static_argnums`` / ``axis_env``, ``eval_shape`` on pytrees, and the trace
cache of ``grad(qjit(f))`` (a qjit function under a transformation is traced once per abstract
signature, not on every call).

Values are checked against closed forms with numpy, eagerly and inside ``qjit`` with dynamic
sizes (0 and 1 included), and against jax (the test extra)."""
import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import float0

import jax  # a test extra: the comparison oracle

jax.config.update("jax_enable_x64", True)



# ----------------------------------------------------------------------------------------------
# One function, every derivative API, every option: a generated test
# ----------------------------------------------------------------------------------------------
def scalar_fn(np_):
    """``sum(sin(x) * y) * k`` with aux ``{'top': max(x)}`` (k is an integer argument)."""
    def f(x, y, k):
        return np_.sum(np_.sin(x) * y) * k, {"top": np_.max(x, initial=-np.inf)}
    return f


def vector_fn(np_):
    def f(x, y, k):
        return np_.sin(x) * y * k, {"top": np_.max(x, initial=-np.inf)}
    return f


def expected_partials(x, y, k, vector):
    """The exact derivatives of scalar_fn / vector_fn with respect to x and y."""
    if vector:
        return np.diag(np.cos(x) * y * k), np.diag(np.sin(x) * k)
    return np.cos(x) * y * k, np.sin(x) * k


VECTOR = {"grad": False, "value_and_grad": False, "jacfwd": True, "jacrev": True}
ALLOW_INT = {"grad", "value_and_grad", "jacrev"}   # JAX's functions with allow_int
ARGNUMS = [0, 1, (0, 1), (-3, -2), (1, 2)]   # position 2 is the integer argument


def apply_transform(mod, name, argnums, has_aux, allow_int, x, y, k):
    """``(derivatives, aux)``, derivatives a tuple per position in argnums (int argnums: one)."""
    base = (vector_fn if VECTOR[name] else scalar_fn)(mod.numpy)
    fun = base if has_aux else (lambda *a: base(*a)[0])
    kw = {"allow_int": True} if allow_int else {}
    res = getattr(mod, name)(fun, argnums=argnums, has_aux=has_aux, **kw)(x, y, k)
    if name == "value_and_grad":
        (value, *aux), g = (res[0], res[1]) if has_aux else ((res[0],), res[1])
        return g, (aux[0] if has_aux else None), value
    return (res[0], res[1], None) if has_aux else (res, None, None)


def check_value(value, x, y, k):
    if value is not None:   # value_and_grad's value
        np.testing.assert_allclose(value, np.sum(np.sin(x) * y) * k, rtol=1e-13)


def check_derivatives(g, aux, name, argnums, has_aux, x, y, k):
    want = expected_partials(x, y, k, VECTOR[name]) + (None,)
    nums = [argnums] if isinstance(argnums, int) else list(argnums)
    gs = [g] if isinstance(argnums, int) else list(g)
    assert len(gs) == len(nums)
    for a, got in zip(nums, gs):
        a = a % 3
        if a == 2 and VECTOR[name]:   # an integer argument's Jacobian block: zeros (as JAX)
            np.testing.assert_array_equal(got, np.zeros(len(x), np.int64))
            assert np.asarray(got).dtype == np.int64
        elif a == 2:   # an integer argument's gradient (allow_int): float0
            assert np.asarray(got).dtype == float0 and np.shape(got) == ()
        else:
            np.testing.assert_allclose(got, want[a], rtol=1e-13, atol=1e-15)
    if has_aux:
        np.testing.assert_allclose(aux["top"], np.max(x, initial=-np.inf))
    else:
        assert aux is None


@pytest.mark.parametrize("has_aux", [False, True])
@pytest.mark.parametrize("argnums", ARGNUMS, ids=str)
@pytest.mark.parametrize("name", sorted(VECTOR))
def test_options_eager(name, argnums, has_aux):
    rng = np.random.default_rng(3)
    x, y, k = rng.normal(size=3), rng.normal(size=3), 2
    with_int = not isinstance(argnums, int) and 2 in argnums
    for allow_int in ([False, True] if name in ALLOW_INT else [False]):
        if with_int and not allow_int:
            with pytest.raises(TypeError, match="int64"):
                apply_transform(dynjax, name, argnums, has_aux, allow_int, x, y, k)
            continue
        g, aux, value = apply_transform(dynjax, name, argnums, has_aux, allow_int, x, y, k)
        check_derivatives(g, aux, name, argnums, has_aux, x, y, k)
        check_value(value, x, y, k)
        if jax is not None:   # the same call with jax: same values, same float0 blocks
            jg, jaux, _ = apply_transform(jax, name, argnums, has_aux, allow_int, x, y, k)
            for a, b in zip(dynjax.tree_util.tree_leaves((g, aux)), jax.tree_util.tree_leaves((jg, jaux))):
                assert np.shape(a) == np.shape(b)
                if np.asarray(b).dtype == jax.dtypes.float0:
                    assert np.asarray(a).dtype == float0
                else:
                    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", sorted(VECTOR))
def test_options_inside_qjit_dynamic(name):
    """has_aux, an argnums tuple with the integer argument (allow_int where JAX has it) and
    float0 results, on a dynamic size: one trace, sizes 0, 1 and 4."""
    argnums = (1, 2) if name in ALLOW_INT else (0, 1)
    allow = name in ALLOW_INT
    f = dynjax.qjit(lambda x, y, k: apply_transform(dynjax, name, argnums, True, allow, x, y, k),
                    abstracted_axes=({0: "n"}, {0: "n"}, None))
    rng = np.random.default_rng(4)
    for n in (0, 1, 4):
        x, y = rng.normal(size=n), rng.normal(size=n)
        g, aux, value = f(x, y, 3)
        check_derivatives(g, aux, name, argnums, True, x, y, 3)
        check_value(value, x, y, 3)
    assert f.cache_info()["traces"] == 1


@pytest.mark.parametrize("has_aux", [False, True])
def test_vjp_and_linearize_options(has_aux):
    rng = np.random.default_rng(5)
    x, y, k = rng.normal(size=4), rng.normal(size=4), 3
    base = vector_fn(jnp)
    fun = base if has_aux else (lambda *a: base(*a)[0])
    res = dynjax.vjp(fun, x, y, k, has_aux=has_aux)
    out, f_vjp = res[0], res[1]
    np.testing.assert_allclose(out, np.sin(x) * y * k, rtol=1e-14)
    ct = rng.normal(size=4)
    cx, cy, ck = f_vjp(ct)
    np.testing.assert_allclose(cx, ct * np.cos(x) * y * k, rtol=1e-13)
    np.testing.assert_allclose(cy, ct * np.sin(x) * k, rtol=1e-13)
    assert ck.dtype == float0 and ck.shape == ()
    res = dynjax.linearize(fun, x, y, k, has_aux=has_aux)
    assert len(res) == (3 if has_aux else 2)
    tx, ty = rng.normal(size=4), rng.normal(size=4)
    np.testing.assert_allclose(res[1](tx, ty, np.zeros((), float0)),
                               (np.cos(x) * y * tx + np.sin(x) * ty) * k, rtol=1e-13)
    if has_aux:
        np.testing.assert_allclose(res[2]["top"], np.max(x))
        np.testing.assert_allclose(dynjax.vjp(fun, x, y, k, has_aux=True)[2]["top"], np.max(x))


def test_jvp_float0_and_has_aux():
    x, k = np.array([0.5, -1.0, 2.0]), np.array([1, 2, 3])
    f = lambda x, k: (x * k, k * 2)   # noqa: E731
    (y, m), (ty, tm) = dynjax.jvp(f, (x, k), (np.ones(3), np.zeros(3, float0)))
    np.testing.assert_allclose(ty, k)
    assert tm.dtype == float0 and tm.shape == (3,)
    np.testing.assert_array_equal(m, k * 2)
    out, t, aux = dynjax.jvp(lambda x: (jnp.sin(x), {"c": jnp.cos(x)}), (x,), (np.ones(3),), has_aux=True)
    np.testing.assert_allclose(t, np.cos(x), rtol=1e-15)
    np.testing.assert_allclose(aux["c"], np.cos(x), rtol=1e-15)
    if jax is not None:
        jy, jt = jax.jvp(f, (x, k), (np.ones(3), np.zeros(3, jax.dtypes.float0)))
        assert jt[1].dtype == jax.dtypes.float0
        np.testing.assert_allclose(ty, jt[0])


def test_float0_results_of_qjit():
    """A float0 tangent inside qjit is part of the result's structure (it holds no data)."""
    f = dynjax.qjit(lambda x, k: dynjax.grad(lambda x, k: jnp.sum(x) * k, argnums=(0, 1),
                                             allow_int=True)(x, k))
    gx, gk = f(np.ones(3), 2)
    np.testing.assert_allclose(gx, [2.0, 2.0, 2.0])
    assert gk.dtype == float0 and gk.shape == ()
    closed = dynjax.make_jaxpr(lambda k: dynjax.jvp(lambda k: k + 1, (k,), (np.zeros(2, float0),)))(np.arange(2))
    assert len(closed.jaxpr.outvars) == 1   # only the primal result is a jaxpr output


def test_float0_through_vmap_and_jvp():
    g = dynjax.grad(lambda x, k: x * k, argnums=(0, 1), allow_int=True)
    gx, gk = dynjax.vmap(g)(np.arange(3.0), np.arange(3))
    np.testing.assert_allclose(gx, [0.0, 1.0, 2.0])
    assert gk.dtype == float0 and gk.shape == (3,)
    (px, pk), (tx, tk) = dynjax.jvp(lambda x: g(x, 2), (1.0,), (1.0,))
    assert (px, tx) == (2.0, 0.0) and pk.dtype == float0 and tk.dtype == float0
    if jax is not None:
        jg = jax.grad(lambda x, k: x * k, argnums=(0, 1), allow_int=True)
        assert jax.vmap(jg)(np.arange(3.0), np.arange(3))[1].shape == (3,)


# ----------------------------------------------------------------------------------------------
# Errors: JAX's types, messages naming the argument
# ----------------------------------------------------------------------------------------------
def _error(call):
    try:
        call()
    except Exception as e:   # noqa: BLE001 - the type is what is compared
        return e
    raise AssertionError("no error raised")


X3 = np.ones(3)
ERROR_CASES = [
    ("jvp_not_tuples", lambda m: m.jvp(m.numpy.sin, X3, X3), TypeError, "tuples or lists"),
    ("jvp_structure", lambda m: m.jvp(lambda a, b: a, (1.0, 2.0), [1.0, 1.0]), TypeError, "same tree structure"),
    ("jvp_shape", lambda m: m.jvp(m.numpy.sin, (X3,), (np.ones(2),)), ValueError, "shape"),
    ("jvp_dtype", lambda m: m.jvp(m.numpy.sin, (X3,), (X3.astype(np.float32),)), TypeError, "float32"),
    ("jvp_int_primal", lambda m: m.jvp(lambda k: k, (np.arange(3),), (X3,)), TypeError, "float0"),
    ("jvp_float0_for_float", lambda m: m.jvp(m.numpy.sin, (X3,), (np.zeros(3, float0 if m is dynjax else jax.dtypes.float0),)),
     TypeError, "float0"),
    ("vjp_ct_shape", lambda m: m.vjp(m.numpy.sin, X3)[1](np.ones(2)), ValueError, "expected f"),
    ("vjp_ct_dtype", lambda m: m.vjp(m.numpy.sin, X3)[1](np.ones(3, np.float32)), ValueError, "32[3]"),
    ("vjp_ct_structure", lambda m: m.vjp(m.numpy.sin, X3)[1]((X3,)), ValueError, "structure"),
    ("linearize_tangent", lambda m: m.linearize(m.numpy.sin, X3)[1](np.ones(2)), ValueError, "tangent"),
    ("grad_int", lambda m: m.grad(lambda k: k * 2.0)(3), TypeError, "allow_int"),
    ("grad_nonscalar", lambda m: m.grad(m.numpy.sin)(X3), TypeError, "calar"),
    ("grad_argnums_range", lambda m: m.grad(lambda a, b: a * b, argnums=(0, 5))(1.0, 2.0), TypeError,
     "at least 6 positional arguments"),
    ("grad_argnums_repeated", lambda m: m.grad(lambda a, b: a * b, argnums=(0, -2))(1.0, 2.0), TypeError, ""),
    ("grad_complex_output", lambda m: m.grad(lambda x: x * 1j)(1.0), TypeError, "holomorphic=True"),
    ("grad_holomorphic_real_input", lambda m: m.grad(lambda x: x, holomorphic=True)(1.0), TypeError,
     "holomorphic=True requires inputs with complex dtype"),
    ("grad_holomorphic_real_output", lambda m: m.grad(lambda z: z.real, holomorphic=True)(1 + 1j), TypeError,
     "holomorphic=True requires outputs with complex dtype"),
    ("jacfwd_holomorphic_real_input", lambda m: m.jacfwd(lambda x: x, holomorphic=True)(X3), TypeError,
     "requires inputs with complex dtype"),
    ("jacrev_holomorphic_real_output", lambda m: m.jacrev(lambda z: z.real, holomorphic=True)(X3 + 0j),
     TypeError, "requires outputs with complex dtype"),
    ("jacfwd_int", lambda m: m.jacfwd(lambda k: k * 2.0)(np.arange(2)), TypeError, "real-valued inputs"),
    ("jacrev_int_output", lambda m: m.jacrev(lambda x: (x > 0).astype(int))(X3), TypeError, "real-valued outputs"),
    ("grad_has_aux_not_pair", lambda m: m.grad(lambda x: x * 2.0, has_aux=True)(1.0), TypeError, ""),
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors_as_jax(case):
    _, call, kind, text = case
    e = _error(lambda: call(dynjax))
    assert type(e) is kind or isinstance(e, kind), (type(e), e)
    assert text in str(e), str(e)
    assert "Internal" not in type(e).__name__
    if jax is not None:   # jax raises the same error type
        assert isinstance(_error(lambda: call(jax)), kind)


def test_errors_name_the_argument():
    with pytest.raises(TypeError, match=r"tangents\[1\]\['w'\]"):
        dynjax.jvp(lambda a, p: a * p["w"], (X3, {"w": X3}), (X3, {"w": X3.astype(np.float32)}))
    with pytest.raises(TypeError, match=r"argument 1"):
        dynjax.grad(lambda a, k: a * k, argnums=(0, 1))(1.0, 2)
    with pytest.raises(ValueError, match=r"tangents\[0\]"):
        dynjax.linearize(jnp.sin, X3)[1](np.ones(2))


# ----------------------------------------------------------------------------------------------
# holomorphic and complex inputs, as JAX
# ----------------------------------------------------------------------------------------------
def test_complex_inputs_match_jax():
    z = np.array([1.0 + 2.0j, -0.5 + 0.25j])
    np.testing.assert_allclose(dynjax.jacfwd(lambda z: z ** 2, holomorphic=True)(z), np.diag(2 * z), rtol=1e-14)
    np.testing.assert_allclose(dynjax.jacrev(lambda z: jnp.exp(z), holomorphic=True)(z), np.diag(np.exp(z)),
                               rtol=1e-14)
    # a real function of complex inputs (no holomorphic): JAX's convention, the conjugate of
    # the Wirtinger gradient times two: grad |z|^2 = 2 conj(z)
    g = dynjax.grad(lambda z: jnp.sum(jnp.abs(z) ** 2))(z)
    np.testing.assert_allclose(g, 2 * np.conj(z), rtol=1e-14)
    if jax is not None:
        for fn in (lambda np_: lambda z: np_.sum(np_.abs(z) ** 2),
                   lambda np_: lambda z: np_.sum(np_.real(z * z) + np_.imag(z) ** 3)):
            np.testing.assert_allclose(dynjax.grad(fn(jnp))(z), jax.grad(fn(jax.numpy))(z), rtol=1e-13)


def test_hessian_has_aux():
    x = np.array([0.5, -1.0, 2.0])
    h, aux = dynjax.hessian(lambda x: (jnp.sum(x ** 3), x * 2), has_aux=True)(x)
    np.testing.assert_allclose(h, np.diag(6 * x), rtol=1e-14)
    np.testing.assert_allclose(aux, x * 2)


# ----------------------------------------------------------------------------------------------
# linearize on dynamic dims
# ----------------------------------------------------------------------------------------------
def test_linearize_inside_qjit_dynamic():
    def f(x, t):
        y, f_jvp = dynjax.linearize(lambda x: jnp.sin(x) * jnp.sum(x), x)
        return y, f_jvp(t), f_jvp(t * 2.0)
    g = dynjax.qjit(f, abstracted_axes={0: "n"})
    rng = np.random.default_rng(6)
    for n in (0, 1, 5):
        x, t = rng.normal(size=n), rng.normal(size=n)
        y, a, b = g(x, t)
        want = np.cos(x) * t * np.sum(x) + np.sin(x) * np.sum(t)
        np.testing.assert_allclose(y, np.sin(x) * np.sum(x), rtol=1e-14)
        np.testing.assert_allclose(a, want, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(b, 2 * want, rtol=1e-12, atol=1e-14)
        for got, eager in zip((y, a, b), f(x, t)):   # compiled == eager
            np.testing.assert_allclose(got, eager, rtol=1e-13, atol=1e-15)
    assert g.cache_info()["traces"] == 1


# ----------------------------------------------------------------------------------------------
# grad(qjit(f)): one trace per abstract signature
# ----------------------------------------------------------------------------------------------
TRANSFORMS = {
    "grad": lambda f: dynjax.grad(lambda x: jnp.sum(f(x))),
    "vmap": lambda f: dynjax.vmap(f),
    "jvp": lambda f: (lambda x: dynjax.jvp(f, (x,), (np.ones_like(x),))[1]),
    "vjp": lambda f: (lambda x: dynjax.vjp(f, x)[1](np.ones_like(x))[0]),
    "jacrev": lambda f: dynjax.jacrev(f),
}
EXPECTED = {
    "grad": lambda x: np.cos(x) * 3.0,
    "vmap": lambda x: np.sin(x) * 3.0,
    "jvp": lambda x: np.cos(x) * 3.0,
    "vjp": lambda x: np.cos(x) * 3.0,
    "jacrev": lambda x: np.diag(np.cos(x) * 3.0),
}


@pytest.mark.parametrize("wrap", ["qjit", "jit"])
@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transformed_qjit_traces_once(name, wrap):
    count = [0]

    def f(x):
        count[0] += 1
        return jnp.sin(x) * 3.0
    jf = getattr(dynjax, wrap)(f)
    g = TRANSFORMS[name](jf)
    for x in (np.linspace(0, 1, 3), np.linspace(1, 2, 3), np.linspace(2, 3, 3)):
        np.testing.assert_allclose(g(x), EXPECTED[name](x), rtol=1e-14)
    assert count[0] == 1   # same shape: the trace is reused
    for x in (np.linspace(0, 1, 5), np.linspace(2, 3, 5)):
        np.testing.assert_allclose(g(x), EXPECTED[name](x), rtol=1e-14)
    # a new shape: one more trace (under vmap, f sees one member, f64[], both times)
    traces = 1 if name == "vmap" else 2
    assert count[0] == traces and jf.cache_info()["inlined_traces"] == traces


def test_qjit_under_grad_inside_qjit_dynamic():
    """A qjit function differentiated inside another qjit program with a dynamic size: its
    trace has the size as a dynamic axis, so one trace serves every size."""
    count = [0]

    @dynjax.qjit
    def inner(x):
        count[0] += 1
        return jnp.sum(jnp.sin(x) * x)

    outer = dynjax.qjit(lambda x: dynjax.grad(inner)(x) * 2.0, abstracted_axes={0: "n"})
    for n in (0, 1, 4, 6):
        x = np.linspace(-1, 1, n)
        np.testing.assert_allclose(outer(x), 2 * (np.cos(x) * x + np.sin(x)), rtol=1e-13, atol=1e-15)
    assert count[0] == 1 and outer.cache_info()["traces"] == 1


def test_inlined_trace_keys_on_abstracted_axes_and_statics():
    count = [0]

    @dynjax.qjit(abstracted_axes={0: "n"}, static_argnums=1)
    def f(x, p):
        count[0] += 1
        return jnp.sum(x ** p)

    g = dynjax.grad(f)
    for n in (2, 3, 7):   # the qjit function's own abstracted axis: one trace for every size
        x = np.linspace(0.5, 1.5, n)
        np.testing.assert_allclose(g(x, 3), 3 * x ** 2, rtol=1e-14)
    assert count[0] == 1
    np.testing.assert_allclose(g(np.ones(2), 2), [2.0, 2.0])   # a new static value: a new trace
    assert count[0] == 2


def test_inlined_trace_keys_on_weak_types():
    """A Python scalar (weakly typed) and an f64 scalar promote differently with an f32: two
    traces, each with its own result dtype (as JAX)."""
    @dynjax.qjit
    def f(x):
        return x * np.float32(2.0)
    weak = dynjax.jvp(f, (1.0,), (1.0,))
    strong = dynjax.jvp(f, (np.float64(1.0),), (np.float64(1.0),))
    assert [np.asarray(v).dtype for v in weak] == [np.float32] * 2
    assert [np.asarray(v).dtype for v in strong] == [np.float64] * 2
    assert f.cache_info()["inlined_traces"] == 2
    if jax is not None:
        assert jax.jvp(lambda x: x * np.float32(2.0), (1.0,), (1.0,))[1].dtype == np.float32


def test_inlined_closure_over_a_transformation_value():
    """A qjit function closing over a value of an enclosing jvp is evaluated under it (not
    cached: the value differs per call)."""
    def outer(s):
        return dynjax.qjit(lambda x: x * s)(np.arange(3.0))
    out, t = dynjax.jvp(outer, (2.0,), (1.0,))
    np.testing.assert_allclose(out, [0.0, 2.0, 4.0])
    np.testing.assert_allclose(t, [0.0, 1.0, 2.0])


def test_python_control_flow_on_concrete_arguments_still_runs_directly():
    """A qjit function that uses a concrete argument of the transformation's call in Python
    (``range(n)``) cannot be traced abstractly: under grad it runs directly, as a Python
    function (and as before)."""
    @dynjax.qjit
    def f(x, n):
        acc = 0.0
        for k in range(1, n + 1):
            acc = acc + x ** k
        return acc
    np.testing.assert_allclose(dynjax.grad(f)(2.0, 3), 1 + 2 * 2.0 + 3 * 4.0)
    np.testing.assert_allclose(dynjax.grad(f)(2.0, 2), 1 + 2 * 2.0)


# ----------------------------------------------------------------------------------------------
# make_jaxpr and eval_shape
# ----------------------------------------------------------------------------------------------
def make_jaxpr_fn(np_):
    def f(x, p, d):
        return {"a": x ** p, "b": (np_.sum(d["w"]), 2.0)}
    return f


def test_make_jaxpr_options():
    f = make_jaxpr_fn(jnp)
    args = (np.ones(3), 2, {"w": np.ones((2, 2), np.float32)})
    closed, shapes = dynjax.make_jaxpr(f, static_argnums=-2, return_shape=True)(*args)
    assert [str(v.aval) for v in closed.jaxpr.invars] == ["f64[3]", "f32[2,2]"]
    assert shapes == {"a": dynjax.ShapeDtypeStruct((3,), np.float64),
                      "b": (dynjax.ShapeDtypeStruct((), np.float32),
                            dynjax.ShapeDtypeStruct((), np.float64, weak_type=True))}
    closed, shapes = dynjax.make_jaxpr(f, static_argnums=(1,), return_shape=True,
                                       abstracted_axes=({0: "n"}, None))(*args)
    assert shapes["a"].shape == (None,)   # a dynamic dim
    assert len(closed.jaxpr.invars) == 3   # n, x, w
    assert str(dynjax.make_jaxpr(lambda x: x * 2, axis_env=[("i", 4)])(1.0)) == \
        str(dynjax.make_jaxpr(lambda x: x * 2)(1.0))
    with pytest.raises(ValueError, match="static_argnums 5"):
        dynjax.make_jaxpr(f, static_argnums=5)(*args)
    with pytest.raises(TypeError, match="axis_env"):
        dynjax.make_jaxpr(f, axis_env=["i"])
    if jax is not None:   # the same result shapes as jax
        jf = make_jaxpr_fn(jax.numpy)
        jshapes = jax.make_jaxpr(jf, static_argnums=1, return_shape=True)(*args)[1]
        for a, b in zip(dynjax.tree_util.tree_leaves(shapes), jax.tree_util.tree_leaves(jshapes)):
            assert a.dtype == b.dtype


def eval_shape_fn(np_):
    def f(x, n, d):
        return {"a": x * n, "b": (d["w"].sum(axis=0), np_.concatenate([x, x]))}
    return f


def test_eval_shape_pytrees_and_specs():
    f = eval_shape_fn(jnp)
    out = dynjax.eval_shape(f, dynjax.ShapeDtypeStruct((None,), np.float32), 2,
                            {"w": dynjax.ShapeDtypeStruct((4, 3), np.float64)})
    assert out["a"] == dynjax.ShapeDtypeStruct((None,), np.float32)
    assert out["b"][0] == dynjax.ShapeDtypeStruct((3,), np.float64)
    assert out["b"][1].shape == (None,)
    import functools
    out = dynjax.eval_shape(functools.partial(f, n=3), np.ones(5), d={"w": np.ones((2, 2))})
    assert out["b"][1] == dynjax.ShapeDtypeStruct((10,), np.float64)
    if jax is not None:
        spec = jax.ShapeDtypeStruct((5,), np.float32)
        mine = dynjax.eval_shape(f, spec, 2.0, {"w": np.ones((2, 2))})
        theirs = jax.eval_shape(eval_shape_fn(jax.numpy), spec, 2.0, {"w": np.ones((2, 2))})
        for a, b in zip(dynjax.tree_util.tree_leaves(mine), jax.tree_util.tree_leaves(theirs)):
            assert a.shape == b.shape and a.dtype == b.dtype


# ----------------------------------------------------------------------------------------------
# The options composed with the transformations, in every order (generated)
# ----------------------------------------------------------------------------------------------
def with_aux(x):
    return jnp.sin(x) * w_like(x), jnp.sum(x)


def w_like(x):
    """A weight vector of x's (possibly dynamic) size."""
    return jnp.cos(jnp.arange(x.shape[0]) * 1.0) + 1.5


def w_np(n):
    return np.cos(np.arange(n) * 1.0) + 1.5


INNER = {   # each: a function of x (f64[n] -> f64[n]) built with an option, and its closed form
    "grad(has_aux, argnums)": (
        lambda x: (lambda g, aux: g[0] * aux)(*dynjax.grad(
            lambda x, w: (jnp.sum(jnp.sin(x) * w), jnp.sum(x)), argnums=(0, -1), has_aux=True)(x, w_like(x))),
        lambda x: np.cos(x) * w_np(len(x)) * np.sum(x)),
    "value_and_grad(has_aux)": (
        lambda x: (lambda va, g: g * va[0] + va[1])(*dynjax.value_and_grad(
            lambda x: (jnp.sum(jnp.sin(x) * w_like(x)), jnp.sum(x)), has_aux=True)(x)),
        lambda x: np.cos(x) * w_np(len(x)) * np.sum(np.sin(x) * w_np(len(x))) + np.sum(x)),
    "jacrev(has_aux)": (
        lambda x: (lambda j, aux: j @ x + aux)(*dynjax.jacrev(with_aux, has_aux=True)(x)),
        lambda x: np.cos(x) * w_np(len(x)) * x + np.sum(x)),
    "jvp(has_aux)": (
        lambda x: (lambda p, t, aux: t * aux)(*dynjax.jvp(with_aux, (x,), (x,), has_aux=True)),
        lambda x: np.cos(x) * w_np(len(x)) * x * np.sum(x)),
    "linearize(has_aux)": (
        lambda x: (lambda y, f_jvp, aux: f_jvp(x) + aux)(*dynjax.linearize(with_aux, x, has_aux=True)),
        lambda x: np.cos(x) * w_np(len(x)) * x + np.sum(x)),
    "vjp(has_aux)": (
        lambda x: (lambda y, f_vjp, aux: f_vjp(x)[0] * aux)(*dynjax.vjp(with_aux, x, has_aux=True)),
        lambda x: x * np.cos(x) * w_np(len(x)) * np.sum(x)),
}


def fd_jacobian(h, x, eps=1e-6):
    cols = [(h(x + eps * e) - h(x - eps * e)) / (2 * eps) for e in np.eye(len(x))]
    return np.stack(cols, axis=-1)


OUTER = ["eager", "qjit", "grad", "jvp", "vjp", "vmap", "qjit(grad)", "vmap(jvp)"]


@pytest.mark.parametrize("outer", OUTER)
@pytest.mark.parametrize("inner", sorted(INNER))
def test_options_compose(inner, outer):
    h, h_np = INNER[inner]
    rng = np.random.default_rng(8)
    x, t = rng.normal(size=3), rng.normal(size=3)
    J = fd_jacobian(h_np, x)
    if outer == "eager":
        np.testing.assert_allclose(h(x), h_np(x), rtol=1e-12)
    elif outer == "qjit":
        f = dynjax.qjit(h, abstracted_axes={0: "n"})
        for n in (0, 1, 3):
            xn = rng.normal(size=n)
            np.testing.assert_allclose(f(xn), h_np(xn), rtol=1e-12, atol=1e-14)
        assert f.cache_info()["traces"] == 1
    elif outer == "grad":
        np.testing.assert_allclose(dynjax.grad(lambda x: jnp.sum(h(x)))(x), J.sum(axis=0), rtol=1e-6, atol=1e-8)
    elif outer == "jvp":
        y, ty = dynjax.jvp(h, (x,), (t,))
        np.testing.assert_allclose(ty, J @ t, rtol=1e-6, atol=1e-8)
    elif outer == "vjp":
        np.testing.assert_allclose(dynjax.vjp(h, x)[1](t)[0], t @ J, rtol=1e-6, atol=1e-8)
    elif outer == "vmap":
        X = rng.normal(size=(2, 3))
        np.testing.assert_allclose(dynjax.vmap(h)(X), np.stack([h_np(r) for r in X]), rtol=1e-12)
    elif outer == "qjit(grad)":
        f = dynjax.qjit(dynjax.grad(lambda x: jnp.sum(h(x))), abstracted_axes={0: "n"})
        np.testing.assert_allclose(f(x), J.sum(axis=0), rtol=1e-6, atol=1e-8)
        x1 = rng.normal(size=1)
        np.testing.assert_allclose(f(x1), fd_jacobian(h_np, x1).sum(axis=0), rtol=1e-6, atol=1e-8)
    elif outer == "vmap(jvp)":
        T = np.stack([t, 2 * t])
        got = dynjax.vmap(lambda t: dynjax.jvp(h, (x,), (t,))[1])(T)
        np.testing.assert_allclose(got, T @ J.T, rtol=1e-6, atol=1e-8)
