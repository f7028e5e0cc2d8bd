"""qjit(autograph=True): Python if / for / while on traced values, rewritten from the source.

Every program is checked against a plain Python / numpy reference written here, and run
every way (eager on numpy values, where the converted code runs as Python; traced per size;
traced once with abstracted axes; compiled with qjit).
"""
import os
import traceback
import warnings

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import qjit
from dynjax.autograph import convert, converted_source

from helpers import check_three_ways

HERE = os.path.abspath(__file__)


def primitives(closed):
    """Names of all primitives in a jaxpr, nested jaxprs included."""
    names = []

    def walk(jaxpr):
        for e in jaxpr.eqns:
            names.append(e.primitive.name)
            for v in e.params.values():
                for sub in (v if isinstance(v, (tuple, list)) else [v]):
                    inner = getattr(sub, "jaxpr", sub)
                    if hasattr(inner, "eqns"):
                        walk(inner)
    walk(closed.jaxpr)
    return names


def line_of(fn, text):
    """The file line number of the first line of ``fn``'s source containing ``text``."""
    import inspect
    lines, first = inspect.getsourcelines(fn)
    for k, line in enumerate(lines):
        if text in line:
            return first + k
    raise AssertionError(f"{text!r} not in the source of {fn.__name__}")


def error_of(exc_type, f, *args):
    """Call ``f`` expecting ``exc_type``; returns (message, last traceback frame)."""
    with pytest.raises(exc_type) as info:
        f(*args)
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    return str(info.value), last


# --- 1. for i in range(n) with a traced n (the conformance program) --------------------------------

def accumulate(x, n):
    acc = jnp.zeros_like(x)
    for i in range(n):
        acc = acc + x * i
    return acc


def accumulate_ref(x, n):
    acc = np.zeros_like(x)
    for i in range(n):
        acc = acc + x * i
    return acc


@pytest.mark.parametrize("n", [0, 1, 4])
def test_range_accumulation_every_way(n):
    check_three_ways(convert(accumulate), accumulate_ref, lambda s: (np.linspace(-1.0, 2.0, s), n),
                     [0, 1, 5], abstracted_axes=({0: "n"}, None))


def test_range_accumulation_qjit_one_trace():
    f = qjit(accumulate, autograph=True, abstracted_axes=({0: "n"}, None))
    for size in (0, 1, 5):
        for n in (0, 1, 4):
            x = np.arange(size, dtype=np.float64) + 0.5
            np.testing.assert_allclose(f(x, n), x * (n * (n - 1) / 2), strict=True)
    assert f.cache_info()["traces"] == 1
    assert "for_loop" in primitives(f.jaxpr)
    assert f.__name__ == "accumulate"


@pytest.mark.parametrize("args", [(2, 9, 1), (9, 2, -2), (1, 10, 3), (5, 5, 1)])
def test_range_two_and_three_arguments(args):
    def f(lo, hi, step):
        total = 0
        for i in range(lo, hi, step):
            total = total + i * i
        return jnp.asarray(total)     # eagerly, total is a Python int

    def ref(lo, hi, step):
        return np.int64(sum(i * i for i in range(lo, hi, step)))
    check_three_ways(convert(f), ref, lambda _: args, [0])


def test_range_two_arguments_only():
    @qjit(autograph=True)
    def f(lo, hi):
        s = 0.0
        for k in range(lo, hi):
            s = s + 1.0 / (k + 1)
        return s
    assert np.isclose(f(2, 7), sum(1.0 / (k + 1) for k in range(2, 7)))
    assert f(7, 2) == 0.0


def test_loop_index_after_loop_keeps_python_value():
    @qjit(autograph=True)
    def f(n):
        i = -1
        for i in range(n):
            pass
        return i
    assert f(4) == 3       # the last index, as in Python
    assert f(0) == -1      # an empty loop leaves the old value


# --- 2. while with an if inside: Newton's square root with damping -----------------------------------

def newton_sqrt(a, tol):
    x = a + 1.0
    err = 1.0
    steps = 0
    while err > tol:
        x_new = 0.5 * (x + a / x)
        if x_new < 0.5 * x:     # damp large steps
            x_new = 0.5 * x
        err = abs(x_new - x)
        x = x_new
        steps = steps + 1
    return x, steps


@pytest.mark.parametrize("a", [0.25, 2.0, 1e4])
def test_newton_while_with_if(a):
    f = qjit(newton_sqrt, autograph=True)
    x, steps = f(a, 1e-12)
    x_ref, steps_ref = newton_sqrt(a, 1e-12)     # the plain Python function
    assert np.isclose(x, np.sqrt(a), rtol=1e-12)
    assert np.isclose(x, x_ref, rtol=1e-14) and int(steps) == steps_ref
    names = primitives(f.jaxpr)
    assert "while_loop" in names and "cond" in names


def test_newton_eager_matches_compiled():
    g = convert(newton_sqrt)
    for a in (0.25, 2.0, 1e4):
        xe, se = g(a, 1e-12)            # eager: ordinary values, Python control flow
        xc, sc = qjit(newton_sqrt, autograph=True)(a, 1e-12)
        assert np.isclose(xe, xc, rtol=1e-14) and int(se) == int(sc)


def test_while_counting_python_int_carried():
    @qjit(autograph=True)
    def halvings(x):
        count = 0
        while x > 1:
            x = x / 2
            count += 1
        return count
    for v in (0.5, 1.0, 3.0, 1000.0):
        expected, y = 0, v
        while y > 1:
            y, expected = y / 2, expected + 1
        assert int(halvings(v)) == expected


# --- 3. if / elif / else on a traced scalar ----------------------------------------------------------

def piecewise(x):
    if x < 0:
        y = jnp.zeros(3) - x
    elif x < 1:
        y = jnp.ones(3) * x
    else:
        y = jnp.arange(3.0) + x
    return y


def piecewise_ref(x):
    if x < 0:
        return np.zeros(3) - x
    if x < 1:
        return np.ones(3) * x
    return np.arange(3.0) + x


@pytest.mark.parametrize("x", [-2.0, 0.0, 0.5, 1.0, 3.0])
def test_if_elif_else(x):
    check_three_ways(convert(piecewise), piecewise_ref, lambda _: (x,), [0])


def test_if_elif_else_jaxpr_has_conds():
    f = qjit(piecewise, autograph=True)
    f(1.5)
    assert primitives(f.jaxpr).count("cond") == 2


def test_if_branches_of_different_sizes():
    @qjit(autograph=True)
    def f(p, n):
        if p > 0:
            y = jnp.arange(n)
        else:
            y = jnp.arange(2 * n)
        return y
    np.testing.assert_array_equal(f(1, 3), np.arange(3))
    np.testing.assert_array_equal(f(0, 3), np.arange(6))


def test_if_promotes_python_scalar_to_branch_dtype():
    @qjit(autograph=True)
    def f(x):
        y = 0
        if x > 1:
            y = x * 1.5
        return y
    assert f(2.0) == 3.0 and f(0.0) == 0.0
    assert f(2.0).dtype == np.float64


def test_if_without_else_keeps_old_value():
    @qjit(autograph=True)
    def f(x):
        y = x
        if x < 0:
            y = -x
        return y
    assert f(-3.0) == 3.0 and f(2.0) == 2.0


def test_bool_ops_and_not_on_traced():
    def f(x, y):
        if (x > 0 and y > 0) or not (x < 10):
            z = x + y
        else:
            z = x - y
        return jnp.asarray(z)

    def ref(x, y):
        return np.float64(x + y if (x > 0 and y > 0) or not (x < 10) else x - y)
    for args in [(1.0, 2.0), (-1.0, 2.0), (1.0, -2.0), (11.0, -2.0)]:
        check_three_ways(convert(f), ref, lambda _: args, [0])


def test_conditional_expression_on_traced():
    @qjit(autograph=True)
    def f(x):
        return x * 2.0 if x > 0 else -x
    assert f(3.0) == 6.0 and f(-3.0) == 3.0
    assert "cond" in primitives(f.jaxpr)


def test_temporary_in_one_branch_not_used_after_is_fine():
    @qjit(autograph=True)
    def f(x):
        if x > 0:
            t = x * 2
            y = t + 1
        else:
            y = x
        return y
    assert f(1.0) == 3.0 and f(-1.0) == -1.0


# --- 4. static if and static range stay Python ------------------------------------------------------

def test_static_if_and_range_are_python():
    @qjit(autograph=True, static_argnums=1)
    def f(x, p):
        acc = x
        for _ in range(p - 1):
            acc = acc * x
        if p > 2:
            acc = acc + 1.0
        return jnp.sum(acc)
    x = np.arange(3.0)
    assert f(x, 2) == np.sum(x ** 2)
    assert f(x, 3) == np.sum(x ** 3 + 1.0)
    names = primitives(f.jaxpr)
    assert "cond" not in names and "for_loop" not in names and "while_loop" not in names
    assert names.count("mul") == 2


def test_static_shape_condition_is_python():
    @qjit(autograph=True, abstracted_axes={0: "n"})
    def f(x):
        if x.ndim == 1:
            y = x * 2
        else:
            y = x
        for k in range(3):
            y = y + k
        return y
    np.testing.assert_allclose(f(np.ones(4)), np.ones(4) * 2 + 3, strict=True)
    names = primitives(f.jaxpr)
    assert "cond" not in names and "for_loop" not in names


def test_loop_over_python_list_is_unrolled():
    @qjit(autograph=True)
    def f(x):
        out = 0.0
        for w in [1.0, 2.0, 3.0]:
            out = out + w * x
        return out
    assert f(2.0) == 12.0
    assert "for_loop" not in primitives(f.jaxpr) and "scan" not in primitives(f.jaxpr)


def test_static_break_continue_return_are_python():
    @qjit(autograph=True)
    def f(x):
        for i in range(10):
            if i == 1:
                continue
            if i > 3:
                break
            x = x + i
        while True:
            return x * 2
    assert f(0.0) == 2.0 * (0 + 2 + 3)


# --- 5. for x in array ------------------------------------------------------------------------------

def sum_of_squares(xs):
    total = 0.0
    for x in xs:
        total = total + x * x
    return jnp.asarray(total)     # eagerly, an empty loop leaves the Python float


def test_for_over_array_dynamic_length():
    check_three_ways(convert(sum_of_squares), lambda xs: np.float64(sum(x * x for x in xs)),
                     lambda s: (np.linspace(0.0, 1.0, s),), [0, 1, 5], abstracted_axes={0: "n"})


def test_for_over_array_rows_and_enumerate():
    @qjit(autograph=True, abstracted_axes={0: "n"})
    def f(m):
        acc = jnp.zeros(3)
        for i, row in enumerate(m):
            acc = acc + row * i
        return acc
    for rows in (0, 1, 4):
        m = np.arange(rows * 3, dtype=np.float64).reshape(rows, 3)
        expected = np.zeros(3)
        for i in range(rows):
            expected = expected + m[i] * i
        np.testing.assert_allclose(f(m), expected, strict=True)
    assert "scan" in primitives(f.jaxpr)


def test_len_of_dynamic_axis():
    @qjit(autograph=True, abstracted_axes={0: "n"})
    def f(x):
        s = 0.0
        for i in range(len(x)):
            s = s + x[i] * i
        return s
    for n in (0, 1, 5):
        x = np.arange(n, dtype=np.float64)
        assert f(x) == sum(x[i] * i for i in range(n))


# --- 6. nested loops ---------------------------------------------------------------------------------

def nested(n, m):
    s = 0
    for i in range(n):
        for j in range(m):
            if (i + j) % 2 == 0 and j > 0:
                s = s + i * j
    return jnp.asarray(s)


@pytest.mark.parametrize("n,m", [(0, 3), (3, 0), (3, 4), (5, 2)])
def test_nested_loops_with_if(n, m):
    expected = sum(i * j for i in range(n) for j in range(m) if (i + j) % 2 == 0 and j > 0)
    check_three_ways(convert(nested), lambda *_: np.int64(expected), lambda _: (n, m), [0])


def test_nested_loop_jaxpr():
    f = qjit(nested, autograph=True)
    f(3, 4)
    names = primitives(f.jaxpr)
    assert names.count("for_loop") == 2 and "cond" in names


def test_while_inside_for_with_growing_array():
    @qjit(autograph=True)
    def f(n):
        a = jnp.ones(1)
        for i in range(n):
            while a.shape[0] < 2 * (i + 1):
                a = jnp.concatenate([a, a])
        return a
    for n in (0, 1, 3):
        a = np.ones(1)
        for i in range(n):
            while a.shape[0] < 2 * (i + 1):
                a = np.concatenate([a, a])
        np.testing.assert_array_equal(f(n), a)


def test_nested_function_is_converted():
    @qjit(autograph=True)
    def f(x, n):
        def step(v):
            if v > 10:
                v = v / 2
            return v
        for _ in range(n):
            x = step(x * 3)
        return x
    x, expected = 1.0, 1.0
    for _ in range(5):
        expected = expected * 3
        if expected > 10:
            expected = expected / 2
    assert np.isclose(f(x, 5), expected)


# --- promotion of carried values ---------------------------------------------------------------------

def test_python_int_carried_becomes_float():
    @qjit(autograph=True)
    def f(n):
        acc = 0
        for i in range(n):
            acc = acc + 0.5 * i
        return acc
    out = f(4)
    assert out == 0.5 * (0 + 1 + 2 + 3) and out.dtype == np.float64


def test_float32_array_carried_stays_float32():
    @qjit(autograph=True)
    def f(x, n):
        acc = 0.0
        for _ in range(n):
            acc = acc + x
        return acc
    out = f(np.float32(1.5), 3)
    assert out == np.float32(4.5) and out.dtype == np.float32


# --- 7. errors ------------------------------------------------------------------------------------

def test_break_in_traced_loop_is_an_error():
    def f(n):
        s = 0
        for i in range(n):
            if i > 3:
                break
            s = s + i
        return s
    g = qjit(f, autograph=True)
    msg, last = error_of(NotImplementedError, g, 5)
    assert f"`break` at line {line_of(f, 'break')}" in msg, msg
    assert f"the for loop at line {line_of(f, 'for i')}" in msg, msg
    assert os.path.abspath(last.filename) == HERE and last.lineno == line_of(f, "for i")
    assert convert(f)(5) == 0 + 1 + 2 + 3     # eagerly, the loop is Python: break works


def test_break_in_traced_while_is_an_error():
    @qjit(autograph=True)
    def f(x):
        while x > 1:
            x = x / 2
            if x < 3:
                break
        return x
    msg, last = error_of(NotImplementedError, f, 10.0)
    assert "`break` at line" in msg and "condition is a traced value" in msg, msg
    assert os.path.abspath(last.filename) == HERE and last.lineno == line_of(f, "while x")


def test_return_in_traced_if_is_an_error():
    def f(x):
        if x > 0:
            return x
        return -x
    msg, last = error_of(NotImplementedError, qjit(f, autograph=True), 2.0)
    assert f"`return` at line {line_of(f, 'return x')}" in msg, msg
    assert os.path.abspath(last.filename) == HERE and last.lineno == line_of(f, "if x > 0")
    assert convert(f)(-2.0) == 2.0


def test_return_in_traced_loop_is_an_error():
    @qjit(autograph=True)
    def f(n):
        for i in range(n):
            return i
        return -1
    msg, last = error_of(NotImplementedError, f, 3)
    assert "`return` at line" in msg, msg
    assert os.path.abspath(last.filename) == HERE and last.lineno == line_of(f, "for i")


def test_assignment_in_one_branch_is_an_error():
    def f(x):
        if x > 0:
            y = x
        return y
    msg, last = error_of(NameError, qjit(f, autograph=True), 2.0)
    assert f"`y` is assigned in only one branch of the if at line {line_of(f, 'if x')}" in msg, msg
    assert "give `y` a value before the if" in msg
    assert os.path.abspath(last.filename) == HERE and last.lineno == line_of(f, "if x")


def test_loop_local_used_after_loop_is_an_error():
    def f(n):
        for i in range(n):
            t = i * 2
        return t
    msg, last = error_of(NameError, qjit(f, autograph=True), 2)
    assert "`t` is assigned in the for loop at line" in msg and "value before the loop" in msg, msg
    assert os.path.abspath(last.filename) == HERE and last.lineno == line_of(f, "for i")


def test_rank_change_is_an_error_naming_the_variable():
    @qjit(autograph=True)
    def f(n):
        y = 0.0
        for _ in range(n):
            y = jnp.ones(3) * y
        return y
    msg, last = error_of(TypeError, f, 3)
    assert "`y` enters the for loop at line" in msg and "rank" in msg, msg
    assert os.path.abspath(last.filename) == HERE


def test_error_inside_body_points_at_its_line():
    def f(n):
        acc = jnp.zeros(3)
        for _ in range(n):
            acc = acc + jnp.ones(4)
        return acc
    msg, last = error_of(TypeError, qjit(f, autograph=True), 3)
    assert "float64[3] and float64[4]" in msg, msg
    assert os.path.abspath(last.filename) == HERE and last.lineno == line_of(f, "jnp.ones(4)")


def test_string_carried_in_traced_branch_is_an_error():
    @qjit(autograph=True)
    def f(x):
        mode = "a"
        if x > 0:
            mode = "b"
        return x if mode == "a" else -x
    msg, _ = error_of(TypeError, f, 1.0)
    assert "`mode` is a str" in msg, msg


def test_traced_array_predicate_is_an_error():
    @qjit(autograph=True)
    def f(x):
        if x > 0:
            x = x + 1
        return x
    msg, _ = error_of(TypeError, f, np.ones(3))
    assert "not a scalar" in msg and "bool[3]" in msg, msg


def test_lambda_falls_back_with_a_warning():
    with pytest.warns(UserWarning, match="lambdas are not converted"):
        g = qjit(lambda x: x + 1, autograph=True)
    assert g(1.0) == 2.0


# --- 8. closures and globals -------------------------------------------------------------------------

SCALE = 3.0


def make_scaled_sum(offset):
    weights = np.array([1.0, 2.0, 3.0])

    def f(x, n):
        acc = jnp.zeros(3)
        for i in range(n):
            if i % 2 == 0:
                acc = acc + weights * x + offset
            else:
                acc = acc - SCALE
        return acc
    return f


def test_closures_and_globals():
    f = make_scaled_sum(0.5)
    g = qjit(f, autograph=True)
    for n in (0, 1, 4):
        expected = np.zeros(3)
        for i in range(n):
            expected = expected + np.array([1.0, 2.0, 3.0]) * 2.0 + 0.5 if i % 2 == 0 else expected - 3.0
        np.testing.assert_allclose(g(2.0, n), expected, strict=True)
        np.testing.assert_allclose(convert(f)(2.0, n), expected, strict=True)


def test_closure_cell_is_shared_not_copied():
    state = {"k": 1.0}
    k = 2.0

    def f(x, n):
        for _ in range(n):
            x = x * k
        return x + state["k"]
    g = convert(f)
    assert g(1.0, 3) == 9.0
    k = 3.0   # noqa: F841  (the converted function reads the same cell)
    assert g(1.0, 2) == 10.0


def test_method_source_is_converted():
    class Model:
        def __init__(self, w):
            self.w = w

        def run(self, x, n):
            for _ in range(n):
                if x > 100:
                    x = x - 100
                else:
                    x = x * self.w
            return x
    m = Model(3.0)
    f = qjit(convert(Model.run), static_argnums=0)
    x, expected = 2.0, 2.0
    for _ in range(6):
        expected = expected - 100 if expected > 100 else expected * 3.0
    assert f(m, x, 6) == expected


# --- 9. static arguments --------------------------------------------------------------------------

def test_static_argnums_and_argnames():
    def power_loop(x, p, n):
        y = x
        for _ in range(p - 1):      # static p: unrolled
            y = y * x
        for _ in range(n):          # traced n: a for_loop
            y = y + 1.0
        return y
    f = qjit(power_loop, autograph=True, static_argnums=1)
    assert f(2.0, 3, 4) == 8.0 + 4 and f(2.0, 2, 0) == 4.0
    assert primitives(f.jaxpr).count("for_loop") == 1
    g = qjit(power_loop, autograph=True, static_argnames="p")
    assert g(2.0, p=3, n=1) == 9.0


def test_signature_defaults_and_docstring_are_kept():
    def f(x, n=2, *, scale=1.0):
        """Doc."""
        for _ in range(n):
            x = x * scale
        return x
    g = convert(f)
    import inspect
    assert inspect.signature(g) == inspect.signature(f)
    assert g.__name__ == "f" and g.__doc__ == "Doc."
    assert qjit(f, autograph=True)(3.0, scale=2.0) == 12.0
    assert "ag__.for_stmt" in converted_source(g)


def test_decorators_are_stripped_from_converted_source():
    calls = []

    def deco(fn):
        calls.append(fn.__name__)
        return fn

    @qjit(autograph=True)
    @deco
    def f(x, n):
        for _ in range(n):
            x = x + 1
        return x
    assert f(1.0, 3) == 4.0
    assert calls == ["f"]          # applied once, by Python, not again by autograph
    assert "@" not in converted_source(f)


def test_grad_through_converted_loop():
    def f(x, n):
        y = x
        for _ in range(n):
            y = jnp.sin(y)
        return y
    g = qjit(dynjax.grad(convert(f)))
    x, expected = 0.7, 1.0
    y = x
    for _ in range(3):
        expected *= np.cos(y)
        y = np.sin(y)
    assert np.isclose(g(x, 3), expected)


def test_convert_is_idempotent_and_no_warnings_for_normal_functions():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = convert(accumulate)
    assert convert(g) is g
