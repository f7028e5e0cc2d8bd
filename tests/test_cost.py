"""The cost model (``dynjax.cost_analysis``, ``QJIT.cost``): formulas in the dynamic dims
against hand counts at several sizes, loops whose body's cost varies between iterations,
while loops, and XLA's own cost analysis of the specialized executable."""
import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import for_loop, lax
from dynjax.cost_model import cost_rules
from dynjax.runtime import xla_cost_analysis

SIZES = [0, 1, 3, 17]
MM_AXES = ({0: "n", 1: "k"}, {0: "k", 1: "m"}, {0: "n", 1: "m"})


def _line(fn, marker):
    """The source line of ``fn`` that contains ``marker`` (labels name loops by line)."""
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, ln in enumerate(lines) if marker in ln)


# ----------------------------------------------------------------------------------------------
# straight-line programs
# ----------------------------------------------------------------------------------------------
def test_elementwise():
    c = dynjax.cost_analysis(lambda x, y: jnp.sin(x) * y + 1.0, np.ones((2, 3)), np.ones((2, 3)),
                             abstracted_axes=({0: "n", 1: "m"}, {0: "n", 1: "m"}))
    assert c.formulas() == {"flops": "2*n*m", "transcendentals": "n*m",
                            "bytes_read": "32*n*m", "bytes_written": "24*n*m"}
    for n in SIZES:
        for m in (0, 5):
            # sin reads x, writes t; mul reads t and y, writes u; add reads u (1.0 is a literal), writes
            assert c.at(n=n, m=m) == {"flops": 2 * n * m, "transcendentals": n * m,
                                      "bytes_read": 8 * 4 * n * m, "bytes_written": 8 * 3 * n * m}


def test_matmul_plus_add():
    c = dynjax.cost_analysis(lambda x, y, z: x @ y + z, np.ones((2, 3)), np.ones((3, 4)),
                             np.ones((2, 4)), abstracted_axes=MM_AXES)
    assert c.formulas()["flops"] == "2*n*k*m + n*m"
    assert str(c).splitlines()[0] == "flops: 2*n*k*m + n*m"
    for n, k, m in [(0, 2, 3), (1, 1, 1), (4, 5, 6), (30, 1, 7)]:
        at = c.at(n=n, k=k, m=m)
        assert at["flops"] == 2 * n * m * k + n * m
        assert at["bytes_read"] == 8 * (n * k + k * m + 2 * n * m)
        assert at["bytes_written"] == 8 * 2 * n * m
        assert c.evaluate(n=n, k=k, m=m) == at


@pytest.mark.parametrize("fn, flops, written", [
    (lambda x: jnp.sum(x, axis=1), lambda n, m: n * m, lambda n, m: 8 * n),
    (lambda x: jnp.max(x), lambda n, m: n * m, lambda n, m: 8),
    (lambda x: jnp.argmin(x, axis=0), lambda n, m: n * m, lambda n, m: 8 * m),
    (lambda x: jnp.cumsum(x, axis=0), lambda n, m: n * m, lambda n, m: 8 * n * m),
    # the sum, the conversion of n to f64, one division per output
    (lambda x: jnp.mean(x, axis=0), lambda n, m: n * m + 1 + m, lambda n, m: 8 * (m + 1 + m)),
])
def test_reductions_cost_one_flop_per_input_element(fn, flops, written):
    c = dynjax.cost_analysis(fn, np.ones((2, 3)), abstracted_axes=({0: "n", 1: "m"},))
    for n in SIZES:
        for m in (1, 4):
            at = c.at(n=n, m=m)
            assert at["flops"] == flops(n, m) and at["bytes_written"] == written(n, m)
            assert at["transcendentals"] == 0


def test_every_primitive_has_a_cost_rule():
    from dynjax.core.primitive import abstract_eval_rules, impl_rules
    internal = {"custom_lin"}   # only in linearized programs, never run
    # dynjax's own (tests define primitives of their own through dynjax.extend, in any order
    # when the suite runs in several processes)
    own = [p for p in abstract_eval_rules
           if getattr(impl_rules.get(p), "__module__", "").startswith("dynjax.")]
    assert len(own) >= 110
    missing = [p.name for p in own if p not in cost_rules and p.name not in internal]
    assert missing == []


# ----------------------------------------------------------------------------------------------
# loops and conditionals
# ----------------------------------------------------------------------------------------------
def test_for_loop_static_and_traced_trip_counts():
    def static(x):
        return for_loop(0, 10, 1)(lambda i, a: jnp.exp(a) + a)(x)
    c = dynjax.cost_analysis(static, np.ones(3), abstracted_axes=({0: "n"},))
    assert c.formulas()["flops"] == "10*n" and c.formulas()["transcendentals"] == "10*n"

    def traced(x, k):
        return for_loop(0, k, 1)(lambda i, a: jnp.exp(a) + a)(x)
    c = dynjax.cost_analysis(traced, np.ones(3), 4, abstracted_axes=({0: "n"}, ()))
    assert c.formulas()["flops"] == "n*max(k, 0)"
    for n in SIZES:
        for k in (-2, 0, 1, 6):
            assert c.at(n=n, k=k)["flops"] == n * max(k, 0)
            assert c.at(n=n, k=k)["bytes_read"] == 8 * 3 * n * max(k, 0)

    def strided(x, k):   # range(k, 0, -2) has (k + 1) // 2 elements for k >= 0
        return for_loop(k, 0, -2)(lambda i, a: a * 2.0)(x)
    c = dynjax.cost_analysis(strided, np.ones(3), 4, abstracted_axes=({0: "n"}, ()))
    for k in (-3, 0, 1, 4, 7):
        assert c.at(n=5, k=k)["flops"] == 5 * len(range(k, 0, -2))

    def traced_step(x, k, s):   # the sign of s is unknown: at() counts range(0, k, s)
        return for_loop(0, k, s)(lambda i, a: a * 2.0)(x)
    c = dynjax.cost_analysis(traced_step, np.ones(3), 4, 1, abstracted_axes=({0: "n"}, (), ()))
    for k, s in [(10, 3), (10, -1), (-10, -4), (0, 2)]:
        assert c.at(n=2, k=k, s=s)["flops"] == 2 * len(range(0, k, s))


def test_nested_loops():
    def nested(x, k):
        def outer(i, c):
            return lax.fori_loop(0, 3, lambda j, d: d * 2.0 + 1.0, c)
        return lax.fori_loop(0, k, outer, x)
    c = dynjax.cost_analysis(nested, np.ones(3), 2, abstracted_axes=({0: "n"}, ()))
    assert c.formulas()["flops"] == "6*n*max(k, 0)"
    for n in SIZES:
        assert c.at(n=n, k=4)["flops"] == 4 * 3 * 2 * n

    def triangular(x, k):   # the inner trip count is the outer index: k*(k-1)/2 inner trips
        def outer(i, c):
            return lax.fori_loop(0, i, lambda j, d: d * 2.0, c)
        return lax.fori_loop(0, k, outer, x)
    c = dynjax.cost_analysis(triangular, np.ones(3), 2, abstracted_axes=({0: "n"}, ()))
    assert c.formulas()["flops"] == f"sum(for_loop@line{_line(triangular, 'fori_loop(0, k')})"
    assert "changes between iterations" in str(c)
    for n in SIZES:
        for k in (0, 1, 5, 9):
            at = c.at(n=n, k=k)
            assert at["flops"] == n * k * (k - 1) // 2
            assert at["bytes_written"] == 8 * n * k * (k - 1) // 2
            assert at["transcendentals"] == 0


def test_loop_whose_carried_array_grows():
    def grow(x):
        @for_loop(0, 4, 1)
        def loop(i, a):
            return jnp.concatenate([a, a]) * 2.0
        return jnp.sum(loop(x))
    c = dynjax.cost_analysis(grow, np.ones(3), abstracted_axes=({0: "n"},))
    for n in SIZES:
        # iteration t multiplies 2^(t+1) n elements (plus one size addition), the sum reads 16 n
        assert c.at(n=n)["flops"] == sum(2 ** (t + 1) * n + 1 for t in range(4)) + 16 * n


def test_scan_trip_count_is_its_length():
    def scanned(xs, w):
        return lax.scan(lambda c, x: (jnp.tanh(c @ w) + x, jnp.sum(c)), xs[0], xs)
    c = dynjax.cost_analysis(scanned, np.ones((5, 3)), np.ones((3, 3)),
                             abstracted_axes=({0: "t", 1: "k"}, {0: "k", 1: "k"}))
    for t in SIZES:
        for k in (1, 4):
            at = c.at(t=t, k=k)
            assert at["flops"] == t * (2 * k * k + k + k)   # matmul, add, sum
            assert at["transcendentals"] == t * k


def test_cond_takes_the_maximum_of_each_count():
    def branches(x, y):
        return lax.cond(x[0] > 0, lambda a, b: jnp.sin(a) * 3.0, lambda a, b: a * jnp.sum(b), x, y)
    c = dynjax.cost_analysis(branches, np.ones(4), np.ones(5), abstracted_axes=({0: "n"}, {0: "m"}))
    for n in (1, 2, 7):
        for m in SIZES:
            at = c.at(n=n, m=m)
            # slice + squeeze x[0] (free), the comparison and the index conversion: 2
            assert at["flops"] == 2 + max(n, m + n)
            assert at["transcendentals"] == n


def test_while_loop_trip_counts():
    def counted(x, k):
        def body(c):
            i, a = c
            return i + 1, jnp.sin(a)
        return lax.while_loop(lambda c: c[0] < k, body, (0, x))
    c = dynjax.cost_analysis(counted, np.ones(3), 5, abstracted_axes=({0: "n"}, ()))
    label = f"trips(while_loop@line{_line(counted, 'lax.while_loop')})"
    assert c.formulas()["transcendentals"] == f"n*{label}"
    for n in SIZES:
        for k in (-1, 0, 6):
            trips = max(k, 0)   # found by running the loop's integer arithmetic
            assert c.at(n=n, k=k) == c.at(n=n, k=k, **{label: trips})
            assert c.at(n=n, k=k)["transcendentals"] == n * trips
            assert c.at(n=n, k=k)["flops"] == 2 * trips + 1

    def data_dependent(x):
        return lax.while_loop(lambda a: jnp.sum(a) < 100.0, lambda a: a * 2.0, x)
    c = dynjax.cost_analysis(data_dependent, np.ones(3), abstracted_axes=({0: "n"},))
    label = f"trips(while_loop@line{_line(data_dependent, 'lax.while_loop')})"
    with pytest.raises(KeyError, match="depends on array data"):
        c.at(n=3)
    # per test: the sum (n) and the comparison; per iteration the multiply (n)
    assert c.at(n=3, **{label: 4})["flops"] == 5 * (3 + 1) + 4 * 3

    def doubling(x):
        return lax.while_loop(lambda a: a.shape[0] < 100, lambda a: jnp.concatenate([a, a]) + 1.0, x)
    c = dynjax.cost_analysis(doubling, np.ones(3), abstracted_axes=({0: "n"},))
    for n in (1, 3, 50, 100):
        sizes, m = [], n
        while m < 100:
            m *= 2
            sizes.append(m)
        assert c.at(n=n)["flops"] == sum(sizes) + len(sizes) + (len(sizes) + 1)


# ----------------------------------------------------------------------------------------------
# qjit functions
# ----------------------------------------------------------------------------------------------
def test_seed_overview_circuit():
    @dynjax.qjit
    def circuit(sz: int):
        a0 = jnp.ones([sz], dtype=float)

        @for_loop(0, 10, 1)
        def loop(i, a):
            return a + a0
        return a0 + loop(a0)
    c = circuit.cost(5)
    assert c.formulas()["flops"] == "11*sz"
    assert dynjax.cost_analysis(circuit, 5).formulas() == c.formulas()
    for sz in SIZES:
        at = c.at(sz=sz)
        assert at["flops"] == 11 * sz
        # ones writes sz; 11 adds each read 2 sz and write sz
        assert at["bytes_written"] == 8 * (sz + 11 * sz)
        assert at["bytes_read"] == 8 * (1 + 22 * sz)   # + the i64 size operand of ones
        np.testing.assert_allclose(circuit(sz), np.full(sz, 12.0))


def test_qjit_cost_uses_its_own_axes_and_static_args():
    @dynjax.qjit(abstracted_axes=({0: "rows"},), static_argnums=(1,))
    def power(x, p):
        return x ** p
    assert power.cost(np.ones(4), 3).formulas()["flops"] == "2*rows"
    assert power.cost(np.ones(4), 5).formulas()["flops"] == "4*rows"
    assert dynjax.cost_analysis(power, np.ones(4), 5).at(rows=10)["flops"] == 40


# ----------------------------------------------------------------------------------------------
# against XLA's cost analysis of the specialized executable
# ----------------------------------------------------------------------------------------------
def _xla(f, *args):
    f(*args)
    segments = f._entry().program.segments()
    assert len(segments) == 1
    out = xla_cost_analysis(segments[0].last_executable)
    if "flops" not in out:
        pytest.skip(f"this jaxlib reports no flops: {out}")
    return out


@pytest.mark.parametrize("name, fn, sizes, axes", [
    ("matmul+add", lambda x, y, z: x @ y + z, [dict(n=40, k=50, m=60), dict(n=7, k=90, m=33)], MM_AXES),
    ("tanh(matmul)", lambda x, y: jnp.tanh(x @ y), [dict(n=40, k=50, m=60), dict(n=64, k=8, m=9)],
     MM_AXES[:2]),
    ("mlp", lambda x, w1, w2: jnp.sum(jnp.tanh(x @ w1) @ w2), [dict(n=40, k=50, m=60), dict(n=100, k=30, m=20)],
     MM_AXES[:2] + ({0: "m"},)),
    ("batched", dynjax.vmap(lambda x, y: x @ y), [dict(b=5, n=40, k=50, m=60), dict(b=2, n=9, k=70, m=11)],
     ({0: "b", 1: "n", 2: "k"}, {0: "b", 1: "k", 2: "m"})),
])
@pytest.mark.usefixtures("exact_tier")   # XLA's analysis of the exact-size executable
def test_flops_agree_with_xla_on_matmul_programs(name, fn, sizes, axes):
    f = dynjax.qjit(fn, abstracted_axes=axes)
    extra = {("mlp", 2): 3}   # the static last axis of w2
    for sz in sizes:
        args = []
        for j, ax in enumerate(axes):
            rank = 3 if name == "batched" else 2
            shape = [sz[ax[i]] if i in ax else extra[(name, j)] for i in range(rank)]
            args.append(np.ones(shape))
        xla = _xla(f, *args)
        at = f.cost(*args).at(**sz)
        # XLA splits large reductions into two stages and counts the extra adds: within 1%
        assert at["flops"] == pytest.approx(xla["flops"], rel=0.01), name
        assert at["transcendentals"] == int(xla.get("transcendentals", 0)), name


@pytest.mark.usefixtures("exact_tier")
def test_xla_counts_a_loop_body_once():
    """XLA's analysis of a while loop counts one iteration (plus the counter): ours is the
    body's cost times the trip count."""
    def loop_mm(x, w):
        return for_loop(0, 10, 1)(lambda i, a: jnp.tanh(a @ w))(x)
    f = dynjax.qjit(loop_mm, abstracted_axes=({0: "n", 1: "k"}, {0: "k", 1: "k"}))
    n, k = 40, 50
    xla = _xla(f, np.ones((n, k)), np.ones((k, k)))
    at = f.cost(np.ones((n, k)), np.ones((k, k))).at(n=n, k=k)
    assert at["flops"] == 10 * 2 * n * k * k
    assert at["flops"] / 10 == pytest.approx(xla["flops"], rel=0.01)
    assert at["transcendentals"] / 10 == xla["transcendentals"]


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


def test_a_program_with_debug_print_has_a_cost():
    """debug_callback costs nothing; its rule was shadowed by a helper of the same name."""
    def f(x):
        dynjax.debug.print("{}", x)
        return x * 2.0
    cost = dynjax.qjit(f).cost(np.ones(3))
    assert int(cost["flops"]) == 3
