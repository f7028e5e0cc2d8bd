"""Control flow with dynamic shapes: the seed's examples, nesting, resizing, lax-style API.

Every program is checked against a plain Python/numpy reference, every way
(eager, static trace, dynamic trace, and compiled with qjit when registered).
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dynjax
import dynjax.numpy as jnp
from dynjax import cond, for_loop, lax, while_loop

from helpers import check_three_ways, run_jaxpr, examples


def ones(n):
    return np.ones(n, dtype=np.float64)


# --- the seed's programs ------------------------------------------------------------------------

def overview(sz):
    a0 = jnp.ones([sz], dtype=float)

    @for_loop(0, 10, 1)
    def loop(i, a):
        return a + a0

    a2 = loop(a0)
    return a0 + a2


def test_overview_program():
    check_three_ways(overview, lambda sz: np.full(sz, 12.0), lambda n: (n,), [0, 1, 5, 9])


def test_overview_jaxpr_shape():
    closed = dynjax.make_jaxpr(overview)(5)
    dynjax.check_jaxpr(closed)
    (eqn,) = [e for e in closed.eqns if e.primitive.name == "for_loop"]
    assert eqn.params["body_nconsts"] == 2 and eqn.params["nimplicit"] == 0
    assert eqn.params["preserve_dimensions"] is True


def shared_dims(sz):
    a0 = jnp.ones([sz], dtype=float)

    @for_loop(0, 10, 1)
    def loop(i, a, a_):
        b = jnp.ones([sz + 1], dtype=float)
        return b, b
    return loop(a0, a0)


def test_loop_keeps_shared_dimension():
    check_three_ways(shared_dims, lambda sz: (ones(sz + 1), ones(sz + 1)), lambda n: (n,), [0, 1, 4])
    closed = dynjax.make_jaxpr(shared_dims)(3)
    (eqn,) = closed.eqns[1:]
    assert eqn.params["nimplicit"] == 1


def test_loop_zero_iterations_keeps_initial_values():
    def f(sz, n):
        a0 = jnp.arange(sz) * 1.0

        @for_loop(0, n, 1)
        def loop(i, a):
            return jnp.ones([sz + 1], dtype=float)
        return loop(a0)
    check_three_ways(f, lambda sz, n: np.arange(sz) * 1.0 if n <= 0 else ones(sz + 1),
                     lambda k: (k, k % 2), [0, 1, 2, 3])


def test_loop_breaking_shared_dims_is_an_error():
    def f(sz):
        a0 = jnp.ones([sz], dtype=float)

        @for_loop(0, 10, 1)
        def loop(i, a, a_):
            b = jnp.ones([sz + 1], dtype=float)
            return a, b
        return loop(a0, a0)
    with pytest.raises(TypeError, match="not the same any more"):
        dynjax.make_jaxpr(f)(5)


def resizing(sz):
    a0 = jnp.ones([sz], dtype=float)

    @for_loop(0, 10, 1, experimental_preserve_dimensions=False)
    def loop(i, a, b, b_):
        return a, b, b_

    b0 = jnp.ones([sz + 1], dtype=float)
    return loop(a0, b0, b0)


def test_resizing_mode_keeps_unchanged_dims():
    # sizes the body returns unchanged stay the outer sizes (issue 20, item 6)
    check_three_ways(resizing, lambda sz: (ones(sz), ones(sz + 1), ones(sz + 1)), lambda n: (n,), [0, 3])
    closed = dynjax.make_jaxpr(resizing)(3)
    loop = [e for e in closed.eqns if e.primitive.name == "for_loop"][0]
    assert loop.params["nimplicit"] == 0


def test_resizing_mode_forbids_mixing_diverging_dims():
    def f(sz):
        a0 = jnp.ones([sz], dtype=float)

        @for_loop(0, 10, 1, allow_array_resizing=True)
        def loop(i, a, b, b_):
            return a, jnp.concatenate([b + b_, b]), jnp.concatenate([b_, b_, b_])
        b0 = jnp.ones([sz + 1], dtype=float)
        return loop(a0, b0, b0)
    # b and b_ are first assumed to keep one size; they diverge, so they are split, and
    # then b + b_ mixes two unrelated sizes
    with pytest.raises(TypeError, match="cannot be broadcast together"):
        dynjax.make_jaxpr(f)(5)


def index_dims(sz):
    a0 = jnp.ones([sz], dtype=float)

    @for_loop(0, 10, 1)
    def loop(i, a):
        return jnp.ones([i], dtype=float) * i
    return loop(a0)


def test_for_loop_index_as_dimension():
    check_three_ways(index_dims, lambda sz: np.full(9, 9.0), lambda n: (n,), [0, 2])
    closed = dynjax.make_jaxpr(index_dims)(5)
    assert isinstance(closed.out_type[1][0].shape[0], dynjax.OutDBIdx)


def caveat(sz):
    a0 = jnp.ones([sz], dtype=float)

    @for_loop(0, 10, 1)
    def loop(i, a):
        return a + a0
    return loop(a0)


def test_caveat_program_works():
    check_three_ways(caveat, lambda sz: np.full(sz, 11.0), lambda n: (n,), [0, 1, 6])


def test_captured_dim_differs_from_a_resized_argument():
    def f(sz):
        a0 = jnp.ones([sz], dtype=float)

        @for_loop(0, 3, 1)
        def loop(i, a):
            return jnp.concatenate([a + a0, a])
        return loop(a0)
    with pytest.raises(TypeError, match="not known to be equal"):
        dynjax.make_jaxpr(f)(5)


# --- errors --------------------------------------------------------------------------------------

def test_body_structure_and_dtype_errors():
    def wrong_dtype(n):
        @for_loop(0, n, 1)
        def loop(i, x):
            return x > 0
        return loop(1.0)
    with pytest.raises(TypeError, match="enters the loop as float64"):
        dynjax.make_jaxpr(wrong_dtype)(3)

    def wrong_structure(n):
        return lax.fori_loop(0, n, lambda i, c: (c, c), 1.0)
    with pytest.raises(TypeError, match="same structure"):
        dynjax.make_jaxpr(wrong_structure)(3)


def test_cond_branch_mismatch_errors():
    def structure(p):
        return lax.cond(p, lambda: (1.0, 2.0), lambda: 1.0)
    with pytest.raises(TypeError, match="structure"):
        dynjax.make_jaxpr(structure)(True)

    def dtype(p):
        return lax.cond(p, lambda: jnp.ones(3), lambda: jnp.ones(3, dtype=int))
    with pytest.raises(TypeError, match="branch 1"):
        dynjax.make_jaxpr(dtype)(True)


def test_predicate_errors():
    with pytest.raises(TypeError, match="boolean"):
        dynjax.make_jaxpr(lambda x: lax.cond(x, lambda: 1.0, lambda: 2.0))(3)
    with pytest.raises(TypeError, match="scalar"):
        dynjax.make_jaxpr(lambda x: lax.cond(x > 0, lambda: 1.0, lambda: 2.0))(np.ones(3))

    def catalyst_cond(x):
        @cond(x)
        def f():
            return 1.0

        @f.otherwise
        def g():
            return 2.0
        return f()
    with pytest.raises(TypeError, match="boolean"):
        dynjax.make_jaxpr(catalyst_cond)(1.5)


def test_error_points_at_user_line():
    def f(sz):
        a0 = jnp.ones([sz], dtype=float)

        @for_loop(0, 10, 1)
        def loop(i, a, a_):
            return a, jnp.ones([sz + 1])
        return loop(a0, a0)
    with pytest.raises(TypeError) as info:
        dynjax.make_jaxpr(f)(2)
    assert info.traceback[-1].path.name == "test_control_flow.py"


def test_zero_step_is_a_runtime_error():
    def f(n, s):
        @for_loop(0, n, s)
        def loop(i, a):
            return a + i
        return loop(0)
    closed = dynjax.make_jaxpr(f)(3, 1)
    with pytest.raises(ValueError, match="step must not be zero"):
        dynjax.eval_jaxpr(closed, closed.consts, 3, 0)
    with pytest.raises(ValueError, match="step must not be zero"):
        dynjax.make_jaxpr(lambda n: f(n, 0))(3)


def test_negative_step_counts_down():
    def f(lo, hi, s):
        @for_loop(hi, lo, s)
        def loop(i, a):
            return a * 2 + i
        return loop(1)

    def ref(lo, hi, s):
        a = 1
        for i in range(hi, lo, s):
            a = a * 2 + i
        return np.int64(a)
    check_three_ways(f, ref, lambda k: (0, k, -1 - k % 2), [0, 1, 5, 6])


# --- nesting, growth, scan, switch ------------------------------------------------------------------

def nested(x, n):
    """cond inside for_loop inside while_loop, capturing arrays from two enclosing levels."""
    y = x * 2.0

    @while_loop(lambda k, acc: k < n)
    def outer(k, acc):
        @for_loop(0, 3, 1)
        def inner(i, a):
            @cond(i % 2 == 0)
            def even():
                return a + x

            @even.otherwise
            def odd():
                return a - y * 0.5 + k
            return even()
        return k + 1, inner(acc)
    _, out = outer(0, jnp.zeros_like(x))
    return out


def nested_ref(x, n):
    acc = np.zeros_like(x)
    for k in range(max(n, 0)):
        for i in range(3):
            acc = acc + x if i % 2 == 0 else acc - x + k
    return acc


def test_nested_control_flow_captures_two_levels():
    check_three_ways(nested, nested_ref, lambda s: (np.arange(s, dtype=float), s % 4),
                     [0, 1, 3, 7], abstracted_axes=({0: "n"},))


def grow(x, limit):
    @while_loop(lambda a: a.shape[0] < limit)
    def loop(a):
        return jnp.concatenate([a, a])
    return loop(x)


def grow_ref(x, limit):
    while x.shape[0] < limit:
        x = np.concatenate([x, x])
    return x


def test_while_loop_doubles_until_limit():
    check_three_ways(grow, grow_ref, lambda s: (np.arange(1.0, s + 1), 3 * s + 1), [1, 2, 5],
                     abstracted_axes=({0: "n"},))


def scan_fn(xs):
    def f(c, x):
        return c + x, c * x
    return lax.scan(f, 0.0, xs)


def scan_ref(xs):
    c, ys = 0.0, []
    for x in xs:
        ys.append(c * x)
        c = c + x
    return np.float64(c), np.array(ys, dtype=float).reshape(len(xs))


def test_scan_over_dynamic_length():
    check_three_ways(scan_fn, scan_ref, lambda s: (np.arange(s, dtype=float),), [0, 1, 4, 9],
                     abstracted_axes=({0: "n"},))


def test_scan_reverse_and_stacked_arrays():
    def f(xs, w):
        return lax.scan(lambda c, x: (c + x.sum(), x * w), 0.0, xs, reverse=True)

    def ref(xs, w):
        return np.float64(xs.sum()), xs * w
    check_three_ways(f, ref, lambda s: (np.arange(s * 3, dtype=float).reshape(s, 3), np.arange(3.0)),
                     [0, 1, 4], abstracted_axes=({0: "n"}, None))


def switch_fn(i, x):
    return lax.switch(i, [lambda x: x, lambda x: jnp.concatenate([x, x]), lambda x: x[1:]], x)


def switch_ref(i, x):
    i = min(max(i, 0), 2)
    return [x, np.concatenate([x, x]), x[1:]][i]


def test_switch_with_three_output_sizes():
    for i in (-1, 0, 1, 2, 5):
        check_three_ways(switch_fn, switch_ref, lambda s: (i, np.arange(s, dtype=float)), [1, 4],
                         abstracted_axes=(None, {0: "n"}))


def test_cond_else_if_chain():
    def f(x):
        @cond(x < 0)
        def b():
            return -x

        @b.else_if(x < 10)
        def b2():
            return x * 2

        @b.otherwise
        def b3():
            return x + 100
        return b()
    check_three_ways(f, lambda x: np.int64(-x if x < 0 else x * 2 if x < 10 else x + 100),
                     lambda s: (s,), [-3, 0, 9, 10, 50])


def test_lax_while_and_fori():
    def f(n, x):
        y = lax.fori_loop(0, n, lambda i, c: c * 2 + i, x)
        return lax.while_loop(lambda c: c < 1000, lambda c: c * 3, y)

    def ref(n, x):
        y = x
        for i in range(n):
            y = y * 2 + i
        while y < 1000:
            y = y * 3
        return np.int64(y)
    check_three_ways(f, ref, lambda s: (s, s + 1), [0, 1, 5, 12])


@settings(max_examples=examples(15), deadline=None)
@given(trips=st.integers(0, 6), size=st.integers(0, 5), step=st.integers(1, 3))
def test_hypothesis_loops(trips, size, step):
    def f(x, n):
        @for_loop(0, n, step)
        def loop(i, a, s):
            return a * 0.5 + i, s + jnp.sum(a)
        return loop(x, 0.0)

    def ref(x, n):
        a, s = x.copy(), 0.0
        for i in range(0, n, step):
            a, s = a * 0.5 + i, s + a.sum()
        return a, np.float64(s)
    arr = np.linspace(-1, 1, size)
    check_three_ways(f, ref, lambda _: (arr, trips), [size], abstracted_axes=({0: "n"},),
                     rtol=1e-12, atol=1e-12)


def test_eager_control_flow_returns_numpy():
    out = overview(4)
    assert isinstance(out, np.ndarray) and out.tolist() == [12.0] * 4
    assert grow(np.ones(1), 5).shape == (8,)


def test_check_jaxpr_on_nested_programs():
    for f, args, axes in [(nested, (np.ones(3), 2), ({0: "n"},)), (grow, (np.ones(2), 4), ({0: "n"},)),
                          (scan_fn, (np.ones(3),), ({0: "n"},)), (switch_fn, (1, np.ones(3)), (None, {0: "n"}))]:
        closed = dynjax.make_jaxpr(f, abstracted_axes=axes)(*args)
        dynjax.check_jaxpr(closed)
