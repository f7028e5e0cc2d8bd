"""``qjit`` and ``make_jaxpr`` applied to a function that closes over a value of an enclosing
transformation (issue 20, item 2).

The closed-over tracer is an input of the inner trace, as in JAX's closure conversion: the
jaxpr takes it as a constvar whose value is the tracer, and a ``qjit`` call evaluates that
jaxpr with the tracer bound, so ``jvp`` / ``vmap`` / ``grad`` transform through it. Results
are compared with jax itself (``jax.jit`` in the same place) and finite differences.
"""
import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import grad, jacfwd, jacrev, jvp, lax, make_jaxpr, qjit, vmap

jax.config.update("jax_enable_x64", True)

XS = np.array([0.3, 1.1, 2.0, -0.7])


def close(got, want):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)


# ==============================================================================================
# qjit inside jvp / vmap / grad, against jax.jit in the same place
# ==============================================================================================
def test_jvp_of_qjit_closing_over_the_primal():
    got = jvp(lambda x: qjit(lambda y: x * y)(2.0), (3.0,), (1.0,))
    want = jax.jvp(lambda x: jax.jit(lambda y: x * y)(2.0), (3.0,), (1.0,))
    close(got[0], want[0])
    close(got[1], want[1])


def test_vmap_of_qjit_closing_over_a_member():
    got = vmap(lambda x: qjit(lambda y: x * y)(2.0))(XS)
    close(got, jax.vmap(lambda x: jax.jit(lambda y: x * y)(2.0))(XS))


def test_grad_of_qjit_closing_over_the_input():
    got = grad(lambda x: qjit(lambda y: jnp.sin(x) * y)(2.0))(1.0)
    close(got, jax.grad(lambda x: jax.jit(lambda y: jjnp.sin(x) * y)(2.0))(1.0))
    eps = 1e-6
    np.testing.assert_allclose(got, (2 * np.sin(1 + eps) - 2 * np.sin(1 - eps)) / (2 * eps), rtol=1e-8)


def _inner(x):
    return qjit(lambda y: jnp.sum(jnp.sin(x) * y) + jnp.prod(y))(np.arange(1.0, 5.0))


def _jax_inner(x):
    return jax.jit(lambda y: jjnp.sum(jjnp.sin(x) * y) + jjnp.prod(y))(np.arange(1.0, 5.0))


@pytest.mark.parametrize("name", ["jvp", "vmap", "grad", "jacfwd", "jacrev", "jvp(vmap)", "vmap(jvp)",
                                  "jvp(jvp)", "vmap(vmap)"])
def test_compositions_against_jax(name):
    t = np.array([1.0, -0.5, 2.0, 0.25])
    cases = {
        "jvp": (lambda: jvp(_inner, (XS,), (t,)), lambda: jax.jvp(_jax_inner, (XS,), (t,))),
        "vmap": (lambda: vmap(_inner)(XS.reshape(4, 1) * np.ones(4)),
                 lambda: jax.vmap(_jax_inner)(XS.reshape(4, 1) * np.ones(4))),
        "grad": (lambda: grad(_inner)(XS), lambda: jax.grad(_jax_inner)(XS)),
        "jacfwd": (lambda: jacfwd(lambda x: qjit(lambda y: jnp.sin(x) * y)(np.ones(4)))(XS),
                   lambda: jax.jacfwd(lambda x: jax.jit(lambda y: jjnp.sin(x) * y)(np.ones(4)))(XS)),
        "jacrev": (lambda: jacrev(lambda x: qjit(lambda y: jnp.sin(x) * y)(np.ones(4)))(XS),
                   lambda: jax.jacrev(lambda x: jax.jit(lambda y: jjnp.sin(x) * y)(np.ones(4)))(XS)),
        "jvp(vmap)": (lambda: jvp(vmap(lambda x: qjit(lambda y: jnp.sin(x) * y)(2.0)), (XS,), (t,)),
                      lambda: jax.jvp(jax.vmap(lambda x: jax.jit(lambda y: jjnp.sin(x) * y)(2.0)), (XS,), (t,))),
        "vmap(jvp)": (lambda: vmap(lambda x, s: jvp(lambda z: qjit(lambda y: jnp.sin(z) * y)(2.0), (x,), (s,)))(XS, t),
                      lambda: jax.vmap(lambda x, s: jax.jvp(lambda z: jax.jit(lambda y: jjnp.sin(z) * y)(2.0),
                                                            (x,), (s,)))(XS, t)),
        "jvp(jvp)": (lambda: jvp(lambda x: jvp(lambda z: qjit(lambda y: jnp.sin(z) * x * y)(2.0), (x,), (1.0,))[1],
                                 (0.4,), (1.0,)),
                     lambda: jax.jvp(lambda x: jax.jvp(lambda z: jax.jit(lambda y: jjnp.sin(z) * x * y)(2.0),
                                                       (x,), (1.0,))[1], (0.4,), (1.0,))),
        "vmap(vmap)": (lambda: vmap(vmap(lambda x: qjit(lambda y: x * y + 1.0)(3.0)))(XS.reshape(2, 2)),
                       lambda: jax.vmap(jax.vmap(lambda x: jax.jit(lambda y: x * y + 1.0)(3.0)))(XS.reshape(2, 2))),
    }
    got, want = cases[name]
    got, want = got(), want()
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        close(g, w)


def test_closure_through_control_flow_in_the_qjit_function():
    def f(x):
        return qjit(lambda n: lax.fori_loop(0, n, lambda i, c: c * x, 1.0))(3)

    def jf(x):
        return jax.jit(lambda n: jax.lax.fori_loop(0, n, lambda i, c: c * x, 1.0))(3)
    close(jvp(f, (2.0,), (1.0,))[1], jax.jvp(jf, (2.0,), (1.0,))[1])   # d x^3 = 3 x^2
    close(vmap(f)(XS), jax.vmap(jf)(XS))
    close(grad(f)(2.0), 12.0)


def test_closure_with_abstracted_axes():
    # the qjit function's own axis is dynamic; the closed-over value is a jvp / vmap tracer
    def f(x):
        g = qjit(lambda y: jnp.sin(x) * y, abstracted_axes={0: "n"})
        return g(np.arange(4.0)), g(np.arange(2.0))

    def jf(x):
        g = jax.jit(lambda y: jjnp.sin(x) * y)
        return g(np.arange(4.0)), g(np.arange(2.0))
    for got, want in zip(jax.tree_util.tree_leaves(jvp(f, (0.5,), (1.0,))),
                         jax.tree_util.tree_leaves(jax.jvp(jf, (0.5,), (1.0,)))):
        close(got, want)
    for got, want in zip(vmap(f)(XS), jax.vmap(jf)(XS)):
        close(got, want)
    # a closed-over array under vmap, a dynamic axis in the inner function
    h = lambda row: qjit(lambda y: jnp.sum(row) * y, abstracted_axes={0: "n"})(np.arange(3.0))
    close(vmap(h)(np.arange(6.0).reshape(2, 3)),
          jax.vmap(lambda row: jax.jit(lambda y: jjnp.sum(row) * y)(np.arange(3.0)))(np.arange(6.0).reshape(2, 3)))


def test_qjit_closure_inside_a_compiled_transformation():
    # under qjit the inner qjit is inlined; with a dynamic batch the answer is still jax's
    f = qjit(lambda xs: vmap(lambda x: qjit(lambda y: jnp.sin(x) * y)(2.0))(xs), abstracted_axes={0: "b"})
    close(f(XS), 2 * np.sin(XS))
    close(f(XS[:2]), 2 * np.sin(XS[:2]))
    g = qjit(grad(lambda x: jnp.sum(qjit(lambda y: jnp.sin(x) * y)(2.0))), abstracted_axes={0: "b"})
    close(g(XS), 2 * np.cos(XS))


def test_qjit_closure_cost_is_a_type_error():
    def f(x):
        g = qjit(lambda y: x * y)
        with pytest.raises(TypeError, match="closes over a value traced"):
            g.cost(2.0)
        return g(2.0)
    close(jvp(f, (3.0,), (1.0,))[1], 2.0)


# ==============================================================================================
# make_jaxpr: the captured value is an input (a constvar), as in jax.make_jaxpr
# ==============================================================================================
def _shapes(jaxpr_vars):
    return [(tuple(v.aval.shape), str(np.dtype(v.aval.dtype))) for v in jaxpr_vars]


@pytest.mark.parametrize("transform", ["jvp", "vmap", "grad"])
def test_make_jaxpr_shows_the_captured_value_as_an_input(transform):
    seen, jseen = [], []

    def f(x):
        closed = make_jaxpr(lambda y: jnp.sin(x) * y)(2.0)
        seen.append(closed)
        # evaluating the jaxpr with its constants is the function itself, under the transformation
        return dynjax.eval_jaxpr(closed.jaxpr, closed.consts, 2.0)[0]

    def jf(x):
        jseen.append(jax.make_jaxpr(lambda y: jjnp.sin(x) * y)(2.0))
        return jjnp.sin(x) * 2.0

    run = {"jvp": lambda g: jvp(g, (0.5,), (1.0,))[1] if g is f else jax.jvp(g, (0.5,), (1.0,))[1],
           "vmap": lambda g: vmap(g)(XS) if g is f else jax.vmap(g)(XS),
           "grad": lambda g: grad(g)(0.5) if g is f else jax.grad(g)(0.5)}[transform]
    close(run(f), run(jf))
    (closed,), (jclosed,) = seen, jseen
    assert _shapes(closed.jaxpr.constvars) == _shapes(jclosed.jaxpr.constvars) == [((), "float64")]
    assert _shapes(closed.jaxpr.invars) == _shapes(jclosed.jaxpr.invars) == [((), "float64")]
    assert len(closed.consts) == 1 and isinstance(closed.consts[0], dynjax.core.trace.Tracer)
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["sin", "mul"]
    text = str(closed)
    assert text.startswith("{ lambda a:f64[]; b:f64[]. let")


def test_make_jaxpr_of_a_capture_with_dynamic_dims():
    seen = []

    def f(x):
        seen.append(make_jaxpr(lambda y: x * jnp.sum(y), abstracted_axes={0: "n"})(np.ones(4)))
        return x
    jvp(f, (3.0,), (1.0,))
    assert str(seen[0]).startswith("{ lambda a:f64[]; b:i64[] c:f64[b]. let")
    # a value of an enclosing qjit trace with a dynamic dim: its dim is captured with it
    seen.clear()

    def g(xs):
        seen.append(make_jaxpr(lambda y: xs * y)(2.0))
        return xs
    qjit(g, abstracted_axes={0: "n"})(np.ones(3))
    closed = seen[0]
    assert str(closed).startswith("{ lambda a:i64[] b:f64[a]; c:f64[]. let")
    assert len(closed.consts) == 2 and closed.jaxpr.out_explicit == (True,)
