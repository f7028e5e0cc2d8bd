"""Generated: every order of ``jvp`` / ``vjp`` / ``grad`` / ``vmap`` / ``qjit`` (depth 1 and
2, and the depth-3 orders that mix a derivative with ``vmap`` and ``qjit``), and ``checkpoint``
on either side of each and between a derivative and ``vmap`` / ``qjit``, around a
``custom_jvp`` and a ``custom_vjp`` function, with and without symbolic zeros, and a
``custom_gradient`` function (a ``custom_vjp`` whose rule closes over its input).

Each custom function is ``sin`` with a rule that claims the derivative ``2 cos`` --
deliberately not the true one, so a result proves the rule was used. Every wrapper maps an
elementwise function to an elementwise function (``jvp`` / ``vjp`` / ``grad`` give the
elementwise derivative, ``vmap`` maps over the elements, ``qjit`` compiles with a dynamic
leading size), so a composition with ``d`` derivatives must give the ``d``-th derivative of
the rule, computed by hand:

    d = 0: sin(x)    d = 1: 2 cos(x)    d = 2: -2 sin(x)    d = 3: -2 cos(x)

(the rule's own body is differentiated for the higher derivatives). Forward mode of a
``custom_vjp`` function is a TypeError: when the innermost derivative is ``jvp``. Sizes 0,
1 and 3 run through the same composed function (one trace per ``qjit`` for all sizes).

A second generated test puts the custom function in the body of ``lax.scan``, ``lax.cond``,
``lax.fori_loop``, ``for_loop`` and ``lax.while_loop`` (each again an elementwise wrapper)
composed with every transformation in both orders, and with a derivative and ``vmap`` /
``qjit`` at depth 3. Reverse mode through a ``while_loop`` is dynjax's documented TypeError.
"""
import itertools

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import lax
from dynjax.custom_derivatives import CustomVJPPrimal, SymbolicZero

SIZES = (0, 1, 3)
SEEN = {"jvp_tangents": set(), "perturbed": set(), "cts": set()}


# --- the custom functions: sin, with the rule 2 cos ---------------------------------------------
@dynjax.custom_jvp
def sin_j(x):
    return jnp.sin(x)


@sin_j.defjvp
def _sin_j_rule(primals, tangents):
    (x,), (t,) = primals, tangents
    return sin_j(x), 2.0 * jnp.cos(x) * t


@dynjax.custom_vjp
def sin_v(x):
    return jnp.sin(x)


sin_v.defvjp(lambda x: (jnp.sin(x), x), lambda x, ct: (2.0 * jnp.cos(x) * ct,))


# with symbolic zeros: a second argument (a scale, never differentiated here) whose tangent /
# perturbed flag must be the symbolic one
@dynjax.custom_jvp
def scaled_sin_j(x, c):
    return c * jnp.sin(x)


def _scaled_sin_j_rule(primals, tangents):
    (x, c), (tx, tc) = primals, tangents
    SEEN["jvp_tangents"].add((isinstance(tx, SymbolicZero), isinstance(tc, SymbolicZero)))
    if not isinstance(tc, SymbolicZero):
        raise AssertionError("the scale is not differentiated: its tangent must be a SymbolicZero")
    return scaled_sin_j(x, c), 2.0 * c * jnp.cos(x) * tx


scaled_sin_j.defjvp(_scaled_sin_j_rule, symbolic_zeros=True)


@dynjax.custom_vjp
def scaled_sin_v(x, c):
    return c * jnp.sin(x)


def _scaled_sin_v_fwd(x, c):
    assert isinstance(x, CustomVJPPrimal) and isinstance(c, CustomVJPPrimal)
    SEEN["perturbed"].add((x.perturbed, c.perturbed))
    return c.value * jnp.sin(x.value), (x.value, c.value)


def _scaled_sin_v_bwd(res, ct):
    x, c = res
    SEEN["cts"].add(isinstance(ct, SymbolicZero))
    return (2.0 * c * jnp.cos(x) * ct, None)


scaled_sin_v.defvjp(_scaled_sin_v_fwd, _scaled_sin_v_bwd, symbolic_zeros=True)

@dynjax.custom_gradient
def sin_g(x):
    s = jnp.sin(x)                      # the vjp function closes over x (closure-converted)
    return s, lambda ct: (2.0 * jnp.cos(x) * ct,)


FUNCTIONS = {
    "custom_jvp": (sin_j, False),
    "custom_gradient": (sin_g, True),
    "custom_jvp_symbolic": (lambda x: scaled_sin_j(x, 1.0), False),
    "custom_vjp": (sin_v, True),
    "custom_vjp_symbolic": (lambda x: scaled_sin_v(x, 1.0), True),
}


# --- the wrappers: elementwise function -> elementwise function ------------------------------
def _jvp(f):
    return lambda x: dynjax.jvp(f, (x,), (jnp.ones_like(x),))[1]


def _vjp(f):
    def g(x):
        y, pullback = dynjax.vjp(f, x)
        return pullback(jnp.ones_like(y))[0]
    return g


def _grad(f):
    return dynjax.grad(lambda x: jnp.sum(f(x)))


def _vmap(f):
    return dynjax.vmap(f)


def _qjit(f):
    vector = dynjax.qjit(f, abstracted_axes={0: "n"})
    scalar = dynjax.qjit(f)
    return lambda x: (vector if jnp.ndim(x) else scalar)(x)


def _checkpoint(f):
    return dynjax.checkpoint(f)


def _scan(f):
    return lambda x: lax.scan(lambda c, xi: (c, f(xi)), 0.0, x)[1]


def _cond(f):
    return lambda x: lax.cond(jnp.all(x > -10.0), f, lambda z: -z, x)   # the true branch


def _fori(f):
    return lambda x: lax.fori_loop(0, 2, lambda i, c: c + f(x), jnp.zeros_like(x)) / 2.0


def _for_loop(f):
    return lambda x: dynjax.for_loop(0, 2, 1)(lambda i, c: c + f(x))(jnp.zeros_like(x)) / 2.0


def _while(f):
    return lambda x: lax.while_loop(lambda c: c[0] < 1, lambda c: (c[0] + 1, f(x)), (0, jnp.zeros_like(x)))[1]


WRAPPERS = {"jvp": _jvp, "vjp": _vjp, "grad": _grad, "vmap": _vmap, "qjit": _qjit, "checkpoint": _checkpoint,
            "scan": _scan, "cond": _cond, "fori": _fori, "for_loop": _for_loop, "while": _while}
TRANSFORMS = ("grad", "jvp", "qjit", "vjp", "vmap")
LOOPS = ("cond", "for_loop", "fori", "scan", "while")
DERIVATIVES = ("jvp", "vjp", "grad")


def _orders():
    names = TRANSFORMS
    orders = [(a,) for a in names] + list(itertools.product(names, repeat=2))
    # depth 3: one derivative with vmap and qjit in every order, and two derivatives under qjit
    orders += [p for d in DERIVATIVES for p in itertools.permutations((d, "vmap", "qjit"))]
    orders += [("qjit", a, b) for a in DERIVATIVES for b in DERIVATIVES]
    # checkpoint (the identity on values, a recomputation under reverse mode) on either side of
    # every transformation, and between a derivative and vmap / qjit
    orders += [("checkpoint",)] + [p for t in names for p in (("checkpoint", t), (t, "checkpoint"))]
    orders += [p for d in DERIVATIVES for p in itertools.permutations((d, "checkpoint", "vmap"))]
    orders += [("qjit", d, "checkpoint", d2) for d in ("grad", "vjp") for d2 in ("grad", "jvp")]
    return orders


ORDERS = _orders()
# depth 3 with the three kinds of body (a scan, a branch, a while loop; fori_loop and
# for_loop lower like scan) to keep the test fast
LOOP_ORDERS = ([(t, loop) for t in TRANSFORMS for loop in LOOPS] + [(loop, t) for t in TRANSFORMS for loop in LOOPS]
               + [p for d in DERIVATIVES for loop in ("scan", "cond", "while")
                  for p in itertools.permutations((d, loop, "vmap"))]
               + [("qjit", d, loop) for d in DERIVATIVES for loop in ("scan", "cond", "while")])


def expected(order, x):
    """The ``d``-th derivative of the rule (``order`` lists the outermost wrapper first)."""
    d = sum(name in DERIVATIVES for name in order)
    return [np.sin(x), 2 * np.cos(x), -2 * np.sin(x), -2 * np.cos(x)][d]


def compose(order, f):
    for name in reversed(order):   # the innermost wrapper is applied first
        f = WRAPPERS[name](f)
    return f


def _forward_of_custom_vjp(order):
    inner_derivatives = [n for n in reversed(order) if n in DERIVATIVES]
    return bool(inner_derivatives) and inner_derivatives[0] == "jvp"


def _reverse_through_while(order):
    """A ``vjp`` / ``grad`` applied outside a ``while_loop``."""
    return "while" in order and any(n in ("vjp", "grad") for n in order[:order.index("while")])


def _check(order, fname):
    f, is_vjp = FUNCTIONS[fname]
    composed = compose(order, f)
    rng = np.random.default_rng(len(order))
    # one axis per vmap / scan: the outer ones map over (2,)-sized trailing axes
    trailing = (2,) * max(0, order.count("vmap") + order.count("scan") - 1)
    errors = []
    if is_vjp and _forward_of_custom_vjp(order):
        errors.append(r"can't apply forward-mode autodiff \(jvp\) to a custom_vjp")
    if _reverse_through_while(order):
        errors.append("while_loop is not supported")
    for n in SIZES:
        x = rng.uniform(-2.0, 2.0, (n,) + trailing)
        if errors:
            with pytest.raises(TypeError, match="|".join(errors)):
                np.asarray(composed(x))
            continue
        got = np.asarray(composed(x))
        assert got.shape == x.shape
        np.testing.assert_allclose(got, expected(order, x), rtol=1e-12, atol=1e-12)
        # eager evaluation of the same composition (dynjax's own oracle for the compiled one)
        if n and "qjit" in order:
            eager = compose(tuple(o for o in order if o != "qjit"), f)
            np.testing.assert_allclose(np.asarray(eager(x)), got, rtol=1e-12, atol=1e-12)


def _ids(o):
    return "(".join(o) + ")" * (len(o) - 1)


@pytest.mark.parametrize("fname", sorted(FUNCTIONS))
@pytest.mark.parametrize("order", ORDERS, ids=_ids)
def test_every_order_uses_the_rule(order, fname):
    _check(order, fname)


# in loop bodies: the symbolic-zero variants (their plain counterparts take the same paths
# through the loops; tests/test_custom_compositions.py runs those too) and custom_gradient
@pytest.mark.parametrize("fname", ["custom_gradient", "custom_jvp_symbolic", "custom_vjp_symbolic"])
@pytest.mark.parametrize("order", LOOP_ORDERS, ids=_ids)
def test_inside_loops_and_branches_in_every_order(order, fname):
    _check(order, fname)


def test_symbolic_zeros_were_seen():
    """The generated test above ran the symbolic-zero rules (this test runs after it):
    the scale was never perturbed and the output cotangent was never zero."""
    for order in (("grad",), ("jvp",), ("vmap", "grad"), ("grad", "vmap")):
        compose(order, FUNCTIONS["custom_jvp_symbolic"][0])(np.ones(2))
        compose(tuple("vjp" if o == "jvp" else o for o in order), FUNCTIONS["custom_vjp_symbolic"][0])(np.ones(2))
    assert SEEN["jvp_tangents"] == {(False, True)}
    assert SEEN["perturbed"] == {(True, False)}
    assert SEEN["cts"] == {False}
