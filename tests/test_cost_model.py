"""The cost model: formulas in the dynamic dims against hand counts, evaluated at several
sizes, and against XLA's own cost analysis of the compiled executable."""
import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import for_loop, lax
from dynjax.runtime import xla_cost_analysis

MATMUL_AXES = ({0: "n", 1: "k"}, {0: "k", 1: "m"}, {0: "n", 1: "m"})


def matmul_add(x, y, z):
    return x @ y + z


def test_matmul_plus_add_formula_and_values():
    c = dynjax.cost_analysis(matmul_add, np.ones((2, 3)), np.ones((3, 4)), np.ones((2, 4)),
                             abstracted_axes=MATMUL_AXES)
    assert c.formulas()["flops"] == "2*n*k*m + n*m"
    assert c.formulas()["transcendentals"] == "0"
    for n, k, m in [(0, 3, 4), (1, 1, 1), (10, 20, 30)]:
        got = c.at(n=n, k=k, m=m)
        assert got["flops"] == 2 * n * m * k + n * m
        # the matmul reads x and y and writes n*m; the add reads two n*m arrays, writes one
        assert got["bytes_read"] == 8 * (n * k + k * m + 2 * n * m)
        assert got["bytes_written"] == 8 * (2 * n * m)


def test_flops_agree_with_xla():
    f = dynjax.qjit(matmul_add, abstracted_axes=MATMUL_AXES)
    for n, k, m in [(40, 50, 60), (7, 3, 5)]:
        args = (np.ones((n, k)), np.ones((k, m)), np.ones((n, m)))
        f(*args)
        xla = xla_cost_analysis(f._entry().program.segments()[0].last_executable)
        if "flops" not in xla:
            pytest.fail(f"this jaxlib reports no flops: {xla}")
        assert f.cost(*args).at(n=n, k=k, m=m)["flops"] == int(xla["flops"])


def test_elementwise_transcendental_and_reduction():
    c = dynjax.cost_analysis(lambda x: jnp.sum(jnp.exp(x) * 2.0), np.ones((3, 4)),
                             abstracted_axes=({0: "a", 1: "b"},))
    assert c.formulas()["transcendentals"] == "a*b"
    assert c.formulas()["flops"] == "2*a*b"   # the multiply, then the sum over every element
    assert c.at(a=5, b=7) == {"flops": 70, "transcendentals": 35, "bytes_read": 8 * 35 * 3,
                              "bytes_written": 8 * 35 * 2 + 8}


def test_loops_multiply_by_their_trip_count():
    def static(x):
        @for_loop(0, 10, 1)
        def loop(i, c):
            return jnp.sin(c) * 2.0
        return loop(x)
    c = dynjax.cost_analysis(static, np.ones(3), abstracted_axes=({0: "n"},))
    assert c.formulas()["flops"] == "10*n" and c.formulas()["transcendentals"] == "10*n"

    def traced(x, k):
        return lax.fori_loop(0, k, lambda i, c: jnp.sin(c) * 2.0, x)
    c = dynjax.cost_analysis(traced, np.ones(3), 4, abstracted_axes=({0: "n"}, ()))
    assert c.formulas()["flops"] == "n*max(k, 0)"
    for n, k in [(3, 4), (5, 0), (2, -3)]:
        assert c.at(n=n, k=k)["flops"] == n * max(k, 0)
    # a step that does not divide the range: ceil((9 - 1) / 3) = 3 iterations
    c = dynjax.cost_analysis(lambda x: for_loop(1, 9, 3)(lambda i, c: c * 2.0)(x), np.ones(3),
                             abstracted_axes=({0: "n"},))
    assert c.formulas()["flops"] == "3*n"


def test_nested_loops_scan_and_cond():
    def nested(x, k):
        def outer(i, c):
            return lax.fori_loop(0, 3, lambda j, d: d * 2.0 + 1.0, c)
        return lax.fori_loop(0, k, outer, x)
    c = dynjax.cost_analysis(nested, np.ones(3), 2, abstracted_axes=({0: "n"}, ()))
    assert c.at(n=5, k=4)["flops"] == 4 * 3 * 2 * 5

    def scanned(xs):
        return lax.scan(lambda c, v: (c + v * v, c), 0.0, xs)
    c = dynjax.cost_analysis(scanned, np.ones(6), abstracted_axes=({0: "t"},))
    assert c.formulas()["flops"] == "2*t"

    def branches(x):
        return lax.cond(jnp.sum(x) > 0, lambda a: jnp.sin(a) * 3.0, lambda a: a * a * a * a, x)
    c = dynjax.cost_analysis(branches, np.ones(4), abstracted_axes=({0: "n"},))
    at = c.at(n=10)
    # the sum (10), the comparison and the index conversion (1 each), the costlier branch (3
    # multiplies per element)
    assert at["flops"] == 10 + 1 + 1 + 30
    assert at["transcendentals"] == 10     # from the other branch: each count is its own maximum


def test_the_seed_overview_program():
    @dynjax.qjit
    def circuit(sz: int):
        a0 = jnp.ones([sz], dtype=float)

        @for_loop(0, 10, 1)
        def loop(i, a):
            return a + a0
        return a0 + loop(a0)
    c = circuit.cost(5)
    assert c.formulas()["flops"] == "11*sz"
    assert c.at(sz=7)["flops"] == 77


def test_user_primitive_cost_rule():
    from dynjax import extend as ext
    from dynjax.cost_model import Cost
    from dynjax.core.symbolic import Expr
    p = ext.Primitive("fma_for_cost")
    ext.def_impl(p, lambda x: x * 2 + 1)
    ext.def_abstract_eval(p, lambda x: ext.make_aval(x.aval.shape, x.aval.dtype))
    ext.def_cost(p, lambda eqn, sz: Cost(sz.elements(eqn.outvars[0].aval) * 2, Expr.const(0),
                                         Expr.const(0), Expr.const(0)))
    c = dynjax.cost_analysis(lambda x: p.bind(x), np.ones(3), abstracted_axes=({0: "n"},))
    assert c.formulas()["flops"] == "2*n" and c.at(n=4)["bytes_read"] == 32
    q = ext.Primitive("no_cost_rule")
    ext.def_abstract_eval(q, lambda x: ext.make_aval(x.aval.shape, x.aval.dtype))
    with pytest.raises(NotImplementedError, match="def_cost"):
        dynjax.cost_analysis(lambda x: q.bind(x), np.ones(3))


def test_missing_size_is_named():
    c = dynjax.cost_analysis(lambda x: x * 2.0, np.ones(3), abstracted_axes=({0: "n"},))
    with pytest.raises(KeyError, match="'n'"):
        c.at(m=3)
