"""Jaxprs: printing, types, constant hoisting, pytrees, and the type checker."""
import collections

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax.core.avals import DShapedArray, InDBIdx, OutDBIdx, ShapedArray, DBIdx, float64, int64
from dynjax.core.jaxpr import Jaxpr, JaxprEqn, JaxprTypeError, Literal, Var
from dynjax.lax import primitives as P


def test_seed_example_prints_and_evaluates():
    closed = dynjax.make_jaxpr(lambda sz: jnp.ones((sz + 1,), dtype=float))(3)
    assert str(closed) == (
        "{ lambda ; a:i64[]. let\n"
        "    b:i64[] = add a 1\n"
        "    c:f64[b] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0 b\n"
        "  in (b, c) }")
    dynjax.check_jaxpr(closed)
    for sz in (0, 1, 4):
        n, ones = dynjax.eval_jaxpr(closed.jaxpr, closed.consts, sz)
        assert int(n) == sz + 1
        np.testing.assert_array_equal(ones, np.ones(sz + 1))


def test_in_and_out_types():
    closed = dynjax.make_jaxpr(lambda sz: jnp.ones((sz + 1,), dtype=float))(3)
    (a, ea), = closed.in_type
    assert ea and a.shape == () and a.dtype == int64
    (b, eb), (c, ec) = closed.out_type
    assert (eb, ec) == (False, True)
    assert c.shape == (OutDBIdx(0),)

    closed = dynjax.make_jaxpr(lambda a, b: a + b, abstracted_axes={0: "n"})(np.ones(3), np.ones(3))
    assert [e for _, e in closed.in_type] == [False, True, True]
    assert closed.in_type[1][0].shape == (DBIdx(0),) and closed.in_type[2][0].shape == (DBIdx(0),)
    assert closed.out_type[0][0].shape == (InDBIdx(0),)
    assert str(closed).startswith("{ lambda ; a:i64[] b:f64[a] c:f64[a]. let")


def test_constants_are_hoisted():
    table = np.arange(6.0).reshape(2, 3)

    def f(x):
        return x @ table + 1.5

    closed = dynjax.make_jaxpr(f)(np.ones(2))
    assert len(closed.jaxpr.constvars) == 1
    assert str(closed).startswith("{ lambda a:f64[2,3]; b:f64[2]. let")
    np.testing.assert_array_equal(closed.consts[0], table)
    (out,) = dynjax.eval_jaxpr(closed.jaxpr, closed.consts, np.ones(2))
    np.testing.assert_allclose(out, np.ones(2) @ table + 1.5)


def test_pytrees_in_and_out():
    Pair = collections.namedtuple("Pair", "a b")

    def f(d, p):
        return {"s": d["x"] + p.a, "t": [p.b, None]}

    closed = dynjax.make_jaxpr(f)({"x": np.ones(2)}, Pair(np.ones(2), 3))
    assert len(closed.jaxpr.invars) == 3 and len(closed.jaxpr.outvars) == 2


def test_static_argnums():
    closed = dynjax.make_jaxpr(lambda x, n: x * n, static_argnums=1)(np.ones(2), 3)
    assert len(closed.jaxpr.invars) == 1
    assert "mul a 3.0" in str(closed)


def _var(shape, dtype=float64):
    return Var(DShapedArray(shape, dtype) if any(not isinstance(d, int) for d in shape) else ShapedArray(shape, dtype))


def test_check_jaxpr_rejects_dim_used_before_bound():
    n = _var(())
    n.aval = ShapedArray((), int64)
    x = _var((n,))
    jaxpr = Jaxpr([], [x, n], [], [x])      # x's type mentions n, bound after it
    with pytest.raises(JaxprTypeError, match="not bound before it"):
        dynjax.check_jaxpr(jaxpr)


def test_check_jaxpr_rejects_wrong_output_type():
    n = Var(ShapedArray((), int64))
    x = Var(DShapedArray((n,), float64))
    y = Var(ShapedArray((3,), float64))       # sin of f64[n] is f64[n], not f64[3]
    jaxpr = Jaxpr([], [n, x], [JaxprEqn(P.sin_p, [x], [y], {})], [y])
    with pytest.raises(JaxprTypeError, match="declared f64\\[3\\] but the primitive gives f64\\[a\\]"):
        dynjax.check_jaxpr(jaxpr)


def test_check_jaxpr_rejects_unbound_operand_and_double_binding():
    n = Var(ShapedArray((), int64))
    y = Var(ShapedArray((), int64))
    with pytest.raises(JaxprTypeError, match="used before it is bound"):
        dynjax.check_jaxpr(Jaxpr([], [], [JaxprEqn(P.add_p, [n, Literal(np.int64(1))], [y], {})], [y]))
    with pytest.raises(JaxprTypeError, match="bound twice"):
        dynjax.check_jaxpr(Jaxpr([], [n, n], [], [n]))


def test_check_jaxpr_accepts_well_typed_dynamic_program():
    def f(x, i, j):
        return jnp.concatenate([x[i:j], x]).sum() + jnp.arange(x.shape[0]).sum()
    closed = dynjax.make_jaxpr(f, abstracted_axes=({0: "n"}, None, None))(np.ones(4), 1, 3)
    dynjax.check_jaxpr(closed)
