"""Catalyst's names in dynjax: ``dynjax.switch`` (``@switch(i)`` / ``.branch(k)``), autograph's
``x[i] = v`` (and ``x[i] op= v``) on traced arrays, ``debug.print(x)`` with a value, and
``jnp.max`` / ``jnp.min`` with ``initial=`` and ``where=``.

Every result is checked against plain Python / numpy (and jax where JAX defines the
semantics), eagerly and compiled, with dynamic sizes (abstracted axes, int sizes) served by
one trace.
"""
import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import debug, lax, qjit
from dynjax.autograph import convert, converted_source


def lines_of(capsys):
    return capsys.readouterr().out.splitlines()


# ----------------------------------------------------------------------------------------------
# dynjax.switch
# ----------------------------------------------------------------------------------------------

def switch_program(i, x):
    @dynjax.switch(i)
    def pick(x):                       # the default branch
        return x * 0.0 - 1.0

    @pick.branch(3)
    def _(x):
        return x + 1.0

    @pick.branch(-2)                   # any integer, a size that differs from the others
    def _(x):
        return jnp.concatenate([x, x * 2.0])
    return pick(x)


def switch_reference(i, x):
    if i == 3:
        return x + 1.0
    if i == -2:
        return np.concatenate([x, x * 2.0])
    return x * 0.0 - 1.0


def test_switch_eager_and_compiled_dynamic_sizes_one_trace():
    f = qjit(switch_program, abstracted_axes=(None, {0: "n"}))
    for n in (4, 0, 1):
        x = np.linspace(-1.0, 2.0, n)
        for i in (3, -2, 0, 2, 7, -1):     # not clamped: 7 and -1 run the default
            want = switch_reference(i, x)
            np.testing.assert_array_equal(switch_program(i, x), want)
            np.testing.assert_array_equal(f(i, x), want)
    assert f.cache_info()["traces"] == 1


def test_switch_index_is_an_int_size():
    @qjit
    def f(i, n):
        @dynjax.switch(i)
        def make():
            return jnp.ones(n)

        @make.branch(1)
        def _():
            return jnp.arange(2 * n) * 1.0
        return make()
    for n in (0, 1, 3):
        np.testing.assert_array_equal(f(1, n), np.arange(2 * n) * 1.0)
        np.testing.assert_array_equal(f(0, n), np.ones(n))
        np.testing.assert_array_equal(f(5, n), np.ones(n))
    assert f.cache_info()["traces"] == 1


def test_switch_promotes_branch_dtypes():
    # Catalyst's example: complex, float and int results promote to complex
    def f(i):
        @dynjax.switch(i)
        def s():
            return complex(1, 3)

        @s.branch(2)
        def _():
            return 1.4

        @s.branch(3)
        def _():
            return 2
        return s()
    g = qjit(f)
    for i, want in ((0, complex(1, 3)), (2, complex(1.4)), (3, complex(2))):
        for got in (f(i), g(i)):
            assert np.asarray(got).dtype == np.complex128
            assert complex(got) == want


def test_switch_float32_and_float64_branches_join():
    def f(i, x):
        @dynjax.switch(i)
        def s(x):
            return x.astype(jnp.float32)

        @s.branch(1)
        def _(x):
            return x * 2.0
        return s(x)
    x = np.arange(3.0)
    out = qjit(f)(1, x)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, x * 2.0)
    np.testing.assert_array_equal(qjit(f)(0, x), x)


def test_switch_side_effects_run_only_in_the_taken_branch(capsys):
    def f(i, x):
        @dynjax.switch(i)
        def s():
            debug.print("default {}", x)

        @s.branch(4)
        def _():
            debug.print("four {}", x + 1)
        s()
        return x
    g = qjit(f, abstracted_axes=(None, {0: "n"}))
    for fn in (f, g):
        fn(4, np.arange(2.0))
        fn(1, np.arange(3.0))
        assert lines_of(capsys) == [f"four {np.arange(2.0) + 1}", f"default {np.arange(3.0)}"]


def test_switch_grad_and_vmap():
    def f(x, i):
        @dynjax.switch(i)
        def s(x):
            return jnp.sin(x)

        @s.branch(1)
        def _(x):
            return x ** 3
        return jnp.sum(s(x))
    x = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(dynjax.grad(f)(x, 1), 3 * x ** 2, rtol=1e-12)
    np.testing.assert_allclose(dynjax.grad(f)(x, 0), np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(qjit(dynjax.grad(f))(x, 1), 3 * x ** 2, rtol=1e-12)
    xs = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(dynjax.vmap(f, in_axes=(0, None))(xs, 1), (xs ** 3).sum(1))


def test_lax_switch_stays_jax_clamping():
    branches = [lambda x: x - 1.0, lambda x: x * 10.0]
    for i, want in ((-5, 1.0), (0, 1.0), (1, 20.0), (9, 20.0)):
        assert float(lax.switch(i, branches, 2.0)) == want
        assert float(qjit(lambda i, x: lax.switch(i, branches, x))(i, 2.0)) == want


def test_switch_errors():
    with pytest.raises(TypeError, match="index must be an integer"):
        dynjax.switch(1.5)(lambda: 0)
    with pytest.raises(TypeError, match="index must be an integer"):
        dynjax.switch(True)(lambda: 0)
    s = dynjax.switch(0)(lambda: 0.0)
    s.branch(1)(lambda: 1.0)
    with pytest.raises(ValueError, match="case 1 is already defined"):
        s.branch(1)
    with pytest.raises(TypeError, match="case must be a Python int"):
        s.branch(1.0)

    def bad(i):
        @dynjax.switch(i)
        def s():
            return 1.0

        @s.branch(0)
        def _():
            return (1.0, 2.0)
        return s()
    with pytest.raises(TypeError, match="structure"):
        qjit(bad)(0)


# ----------------------------------------------------------------------------------------------
# autograph: x[i] = v
# ----------------------------------------------------------------------------------------------

def fill(x, n):
    y = jnp.zeros_like(x)
    for i in range(n):
        y[i] = x[i] * 2.0
        y[i] += 1.0
    return y


def fill_reference(x, n):
    y = np.zeros_like(x)
    y[:n] = x[:n] * 2.0 + 1.0
    return y


def test_item_assignment_in_a_traced_for_loop():
    src = converted_source(convert(fill))
    assert "set_item(y, i, x[i] * 2.0)" in src and "'add')" in src
    f = qjit(fill, autograph=True, abstracted_axes=({0: "m"}, None))
    for m, n in ((5, 3), (1, 1), (0, 0), (4, 4)):
        x = np.arange(m, dtype=float) + 0.5
        np.testing.assert_array_equal(convert(fill)(x, n), fill_reference(x, n))
        np.testing.assert_array_equal(f(x, n), fill_reference(x, n))
    assert f.cache_info()["traces"] == 1


def branches(x, p, a, b):
    if p > 0:
        x[a:b] = -1.0
        x[0, ...] *= 10.0
    else:
        x[1, 0] = 7.0
        x[:, 1] -= 2.0
    return x


def test_item_assignment_in_traced_if_branches_slices_and_tuples():
    f = qjit(branches, autograph=True, abstracted_axes=({0: "n"}, None, None, None))
    for n in (3, 2, 5):
        for p in (1, -1):
            x = np.arange(n * 2.0).reshape(n, 2)
            want = branches(x.copy(), p, 1, n)      # plain Python on numpy: the reference
            np.testing.assert_array_equal(f(x, p, 1, n), want)
            got = convert(branches)(x, p, 1, n)     # eager: in place, like Python
            np.testing.assert_array_equal(got, want)
            assert got is x
    assert f.cache_info()["traces"] == 1


def test_item_assignment_in_a_while_loop_and_operators():
    def f(x, k):
        i = 0
        while i < k:
            x[i] -= 1.0
            x[i] /= 2.0
            x[i] **= 2
            x[i] //= 0.25
            x[i] %= 5.0
            i = i + 1
        return x

    def reference(x, k):
        for i in range(k):
            x[i] = (((x[i] - 1.0) / 2.0) ** 2 // 0.25) % 5.0
        return x
    g = qjit(f, autograph=True, abstracted_axes=({0: "n"}, None))
    for n, k in ((6, 4), (1, 1), (0, 0)):
        x = np.linspace(-3.0, 4.0, n)
        np.testing.assert_array_equal(g(x, k), reference(x.copy(), k))
    assert g.cache_info()["traces"] == 1


def test_item_assignment_traced_index_and_value_into_numpy_array():
    def f(i, v):
        x = np.zeros(4)            # a numpy array, updated with traced values: functional
        x[i] = v
        x[i + 1] += v
        return x
    g = qjit(f, autograph=True)
    for i, v in ((0, 2.5), (2, -1.0)):
        np.testing.assert_array_equal(g(i, v), f(i, v))


def test_item_assignment_repeated_indices_accumulate_as_at_add():
    import jax.numpy as jjnp

    def f(x, idx):
        x[idx] += 1.0
        return x
    x, idx = np.zeros(3), np.array([0, 0, 2])
    want = np.asarray(jjnp.asarray(x).at[idx].add(1.0))       # [2, 0, 1] (jax / Catalyst)
    np.testing.assert_array_equal(qjit(f, autograph=True)(x, idx), want)
    np.testing.assert_array_equal(convert(f)(x.copy(), idx), [1.0, 0.0, 1.0])   # numpy, eagerly


def test_traced_if_branches_do_not_share_a_python_container():
    def f(p):
        x = np.zeros(3)
        names = [1.0, 2.0]
        if p > 0:
            x[0] = 1.0
            names[0] = 5.0
        else:
            x[1] = 2.0
        return x, names
    g = qjit(f, autograph=True)
    for p in (1, -1):
        (x, names), (x_ref, names_ref) = g(p), f(p)
        np.testing.assert_array_equal(x, x_ref)
        np.testing.assert_array_equal(np.asarray(names, float), names_ref)


def test_python_lists_keep_python_semantics_and_globals_are_left_alone():
    shared = [0, 0]

    def f(n):
        lst = [0.0, 0.0, 0.0]
        alias = lst
        for i in range(n):           # static n: a Python loop
            lst[i] = i + 10.0
        shared[1] = 9                # a closure variable: still modified in place
        return alias
    assert "set_item(lst" in converted_source(convert(f)) and "shared = " not in converted_source(convert(f))
    assert convert(f)(2) == [10.0, 11.0, 0.0]
    assert shared == [0, 9]


def test_item_assignment_in_a_nested_for_loop_decorator_body():
    def f(x, n):
        @dynjax.for_loop(0, n, 1)
        def body(i, y):              # converted too: y is the nested function's own variable
            y[i] = i * 1.0
            return y
        return body(x)
    g = qjit(f, autograph=True, abstracted_axes=({0: "m"}, None))
    for m, n in ((4, 2), (1, 1), (0, 0)):
        want = np.zeros(m)
        want[:n] = np.arange(n)
        np.testing.assert_array_equal(g(np.zeros(m), n), want)
    assert g.cache_info()["traces"] == 1


def test_item_assignment_to_an_unassigned_name_is_a_name_error():
    def f(p):
        if p > 0:
            y = 1.0
        y[0] = 2.0
        return y
    with pytest.raises(NameError):
        qjit(f, autograph=True)(1)


def test_item_assignment_under_grad():
    def f(x):
        y = jnp.zeros_like(x)
        for i in range(x.shape[0] - 1):
            y[i + 1] = y[i] * x[i] + x[i + 1]
        return jnp.sum(y)
    x = np.array([0.5, -1.0, 2.0, 0.3])
    g = dynjax.grad(convert(f))

    def num(x, h=1e-6):
        out = []
        for k in range(x.size):
            e = np.zeros_like(x)
            e[k] = h
            out.append((f_np(x + e) - f_np(x - e)) / (2 * h))
        return np.array(out)

    def f_np(x):
        y = np.zeros_like(x)
        for i in range(x.size - 1):
            y[i + 1] = y[i] * x[i] + x[i + 1]
        return y.sum()
    np.testing.assert_allclose(qjit(g)(x), num(x), rtol=1e-6)


# ----------------------------------------------------------------------------------------------
# debug.print(x)
# ----------------------------------------------------------------------------------------------

def printing(x, n):
    debug.print(x)
    debug.print(jnp.sum(x))
    debug.print(3)
    debug.print((x, 2.5))
    debug.print("sum={s} n={}", n, s=jnp.sum(x))      # JAX's format form is unchanged

    @dynjax.for_loop(0, n, 1)
    def loop(i, a):
        debug.print(i)
        debug.print(a)
        return a * 2.0
    return loop(x)


def printing_reference(x, n):
    lines = [str(x), str(np.asarray(x.sum())), "3", str((x, np.asarray(2.5))),
             "sum={s} n={}".format(np.asarray(n), s=np.asarray(x.sum()))]
    a = x
    for i in range(n):
        lines += [str(np.asarray(i)), str(a)]
        a = a * 2.0
    return lines


def test_debug_print_value_eager_and_compiled(capsys):
    f = qjit(printing, abstracted_axes=({0: "m"}, None))
    for m, n in ((3, 2), (0, 1), (1, 0)):
        x = np.linspace(0.0, 1.0, m)
        np.testing.assert_array_equal(printing(x, n), x * 2.0 ** n)
        assert lines_of(capsys) == printing_reference(x, n)
        np.testing.assert_array_equal(f(x, n), x * 2.0 ** n)
        assert lines_of(capsys) == printing_reference(x, n)
    assert f.cache_info()["traces"] == 1


def test_debug_print_value_in_autograph_loop(capsys):
    def f(n):
        for i in range(n):
            debug.print(i * i)
    qjit(f, autograph=True)(3)
    assert lines_of(capsys) == ["0", "1", "4"]


def test_debug_print_errors():
    with pytest.raises(TypeError, match="no other arguments"):
        debug.print(np.ones(2), 3)
    with pytest.raises(TypeError, match="format string or an array"):
        debug.print(object())


# ----------------------------------------------------------------------------------------------
# jnp.max / jnp.min with initial= and where=
# ----------------------------------------------------------------------------------------------

CASES = [dict(initial=2.0), dict(axis=1, initial=10.0), dict(axis=0, initial=0.0, where="mask"),
         dict(axis=1, initial=-1.0, where="mask", keepdims=True), dict(initial=-3.0, where="row")]


def _kw(kw, x):
    kw = dict(kw)
    if kw.get("where") == "mask":
        kw["where"] = x > 0.5
    elif kw.get("where") == "row":
        kw["where"] = np.arange(x.shape[1]) % 2 == 0      # broadcast along the rows
    return kw


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_initial_where_against_numpy_and_jax(name):
    import jax
    import jax.numpy as jjnp
    jax.config.update("jax_enable_x64", True)
    x = np.array([[1.0, 5.0, -2.0], [3.0, 0.0, 4.0]])
    for kw in CASES:
        kw = _kw(kw, x)
        want = getattr(np, name)(x, **kw)
        np.testing.assert_array_equal(getattr(jnp, name)(x, **kw), want)
        np.testing.assert_array_equal(getattr(jjnp, name)(x, **kw), want)
    xi = np.array([1, 7, 3], np.int32)
    for got in (getattr(jnp, name)(xi, initial=5.5), getattr(np, name)(xi, initial=5.5)):
        assert np.asarray(got).dtype == np.int32
    assert getattr(jnp, name)(xi, initial=5.5) == getattr(np, name)(xi, initial=5.5)
    # an empty axis is fine with initial
    assert getattr(jnp, name)(np.zeros(0), initial=3.0) == 3.0
    with pytest.raises(ValueError, match="initial"):
        getattr(jnp, name)(x, where=x > 0)
    with pytest.raises(ValueError, match="zero-size"):
        getattr(jnp, name)(np.zeros(0))


def test_max_min_where_compiled_dynamic_one_trace():
    def f(x, m):
        return jnp.max(x, axis=0, initial=-5.0, where=m), jnp.min(x, initial=100.0, where=m)
    g = qjit(f, abstracted_axes=({0: "n"}, {0: "n"}))
    for n in (3, 0, 1):
        x = np.arange(n * 2.0).reshape(n, 2) - 1.0
        m = (np.arange(n * 2).reshape(n, 2) % 3) != 0
        want = (np.max(x, axis=0, initial=-5.0, where=m), np.min(x, initial=100.0, where=m))
        for got in (f(x, m), g(x, m)):
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])
    assert g.cache_info()["traces"] == 1


def test_max_initial_where_grad_and_vmap_against_jax():
    import jax
    import jax.numpy as jjnp
    jax.config.update("jax_enable_x64", True)
    x = np.array([[1.0, 5.0, -2.0], [3.0, 0.0, 4.0]])
    m = x > 0.5

    def loss(np_):
        return lambda x: np_.sum(np_.max(x, axis=1, initial=2.0, where=m)) * np_.sum(np_.min(x, axis=0, initial=1.0))
    np.testing.assert_allclose(dynjax.grad(loss(jnp))(x), jax.grad(loss(jjnp))(x))
    np.testing.assert_allclose(dynjax.vmap(lambda r: jnp.max(r, initial=2.5, where=r < 4.5))(x),
                               [np.max(r, initial=2.5, where=r < 4.5) for r in x])
