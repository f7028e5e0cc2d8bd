"""dynjax.debug.print / debug.callback: run-time values, in program order, eagerly and
compiled with dynamic sizes, inside loops and conditionals, under grad and vmap, and from
threads. The expected text is built from numpy's own formatting of the reference values."""
import threading

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from helpers import in_threads
from dynjax import lax


def program(x):
    dynjax.debug.print("start {}", x)

    def body(i, c):
        dynjax.debug.print("i={i} c={c}", i=i, c=c)
        return c * 2.0
    y = lax.fori_loop(0, 3, body, x)
    lax.cond(jnp.sum(y) > 3.0, lambda a: dynjax.debug.print("big {}", a),
             lambda a: dynjax.debug.print("small {}", a), y)
    return y + 1.0


def expected(x):
    lines = [f"start {x}"]
    c = x
    for i in range(3):
        lines.append(f"i={np.int64(i)} c={c}")
        c = c * 2.0
    lines.append(("big {}" if c.sum() > 3.0 else "small {}").format(c))
    return lines


def lines_of(capsys):
    return capsys.readouterr().out.splitlines()


def test_eager(capsys):
    x = np.arange(3.0)
    np.testing.assert_array_equal(program(x), x * 8 + 1)
    assert lines_of(capsys) == expected(x)


def test_compiled_at_several_sizes_one_trace(capsys):
    f = dynjax.qjit(program, abstracted_axes=({0: "n"},))
    for n in (3, 1, 0, 5, 3):
        x = np.linspace(0.0, 1.0, n)
        np.testing.assert_array_equal(f(x), x * 8 + 1)
        assert lines_of(capsys) == expected(x), n
    assert f.cache_info()["traces"] == 1


def test_order_with_while_and_scan(capsys):
    def f(x):
        def cond(s):
            return s[0] < 3

        def body(s):
            dynjax.debug.print("w{} {}", s[0], s[1])
            return s[0] + 1, s[1] + 1.0
        _, z = lax.while_loop(cond, body, (0, x))

        def step(c, v):
            dynjax.debug.callback(lambda a, b: print("scan", a, b), c, v)
            return c + v, c
        c, _ = lax.scan(step, 0.0, z)
        dynjax.debug.print("end {c}", c=c)
        return c
    x = np.array([1.0, 2.0])
    want = [f"w{np.int64(k)} {x + k}" for k in range(3)]
    z = x + 3
    c = 0.0
    for v in z:
        want.append(f"scan {np.asarray(c)} {v}")
        c += v
    want.append(f"end {np.asarray(c)}")
    f(x)
    assert lines_of(capsys) == want
    dynjax.qjit(f, abstracted_axes=({0: "n"},))(x)
    assert lines_of(capsys) == want


def test_callback_receives_numpy_arrays_of_the_run_time_size():
    seen = []
    f = dynjax.qjit(lambda x: (dynjax.debug.callback(lambda a, b: seen.append((a, b)), x, {"k": x[1:]}), x * 2)[1],
                    abstracted_axes=({0: "n"},))
    for n in (4, 1, 0):
        x = np.arange(float(n))
        f(x)
        a, b = seen.pop()
        assert isinstance(a, np.ndarray) and a.shape == (n,)
        np.testing.assert_array_equal(a, x)
        np.testing.assert_array_equal(b["k"], x[1:])


def test_under_jvp_grad_and_vmap(capsys):
    x = np.array([0.5, 1.5])
    g = dynjax.grad(lambda v: jnp.sum(program(v) ** 2))(x)
    np.testing.assert_allclose(g, 2 * (x * 8 + 1) * 8)
    assert lines_of(capsys) == expected(x)   # printed once: the primal values
    dynjax.qjit(dynjax.grad(lambda v: jnp.sum(program(v) ** 2)))(x)
    assert lines_of(capsys) == expected(x)
    dynjax.jvp(program, (x,), (np.ones(2),))
    assert lines_of(capsys) == expected(x)
    batch = np.array([[0.5, 1.5], [0.0, 0.1]])
    dynjax.vmap(lambda v: (dynjax.debug.print("{}", v), v)[1])(batch)
    assert lines_of(capsys) == str(batch).splitlines()   # the callback sees the whole batch


def test_recomputation_in_reverse_mode_does_not_print_twice(capsys):
    def f(x):
        def body(i, c):
            c = lax.cond(i > 0, lambda a: (dynjax.debug.print("pos {}", a), a * 2.0)[1], lambda a: a + 1.0, c)
            dynjax.debug.print("i={}", i)
            return jnp.sin(c)
        return jnp.sum(lax.fori_loop(0, 3, body, x))

    def ref(x):
        c, out = x, []
        for i in range(3):
            if i > 0:
                out.append(f"pos {c}")
                c = c * 2.0
            else:
                c = c + 1.0
            out.append(f"i={np.int64(i)}")
            c = np.sin(c)
        return out
    x = np.array([0.0, 1.0])
    dynjax.grad(f)(x)
    assert lines_of(capsys) == ref(x)
    dynjax.qjit(dynjax.grad(f))(x)
    assert lines_of(capsys) == ref(x)


def test_threads_each_print_complete(capsys):
    f = dynjax.qjit(lambda x: (dynjax.debug.print("n={} sum={}", x.shape[0], jnp.sum(x)), x)[1],
                    abstracted_axes=({0: "n"},))
    f(np.ones(2))
    capsys.readouterr()

    def work(k):
        for n in (k, k + 1):
            f(np.ones(n))
    in_threads(work, range(1, 6))
    got = sorted(lines_of(capsys))
    want = sorted(f"n={np.int64(n)} sum={np.float64(n)}" for k in range(1, 6) for n in (k, k + 1))
    assert got == want


def test_errors():
    # a non-string first argument is a value to print (Catalyst's form): it must be an array
    with pytest.raises(TypeError, match="format string or an array"):
        dynjax.debug.print(object())
    with pytest.raises(TypeError, match="must be a function"):
        dynjax.debug.callback(3, 1.0)


# --- sizes, caches, dead code -------------------------------------------------------------------

@pytest.mark.usefixtures("exact_tier")
def test_sizes_0_1_5_one_trace_and_the_caches(capsys):
    def f(x):
        dynjax.debug.print("in {} n={}", x, x.shape[0])
        y = jnp.sin(x) * 2.0
        dynjax.debug.print("out {y}", y=y)
        return y

    g = dynjax.qjit(f, abstracted_axes=({0: "n"},))
    sizes = (0, 1, 5)
    for n in sizes:
        x = np.linspace(-1.0, 1.0, n)
        y = g(x)
        np.testing.assert_allclose(y, np.sin(x) * 2.0)
        assert lines_of(capsys) == [f"in {x} n={np.int64(n)}", f"out {y}"]
    info = g.cache_info()
    assert info["traces"] == 1
    built = info["specializations"]
    for n in sizes + sizes:   # every size again: no new trace, no new executable, prints each call
        x = np.linspace(-1.0, 1.0, n)
        y = g(x)
        assert lines_of(capsys) == [f"in {x} n={np.int64(n)}", f"out {y}"]
    info = g.cache_info()
    assert info["traces"] == 1 and info["specializations"] == built
    assert info["calls"] == 9 and info["host_steps"] == 2 * 9   # two callbacks per call


def test_unused_values_and_loops_that_only_print_are_kept(capsys):
    def f(x):
        dynjax.debug.print("dead {}", x * 3.0)   # nothing uses x * 3.0 but the print

        def body(i, c):
            dynjax.debug.print("loop {}", i)
            return c
        lax.fori_loop(0, 2, body, x)             # result unused: the loop still runs
        return x + 1.0

    g = dynjax.qjit(f, abstracted_axes=({0: "n"},))
    x = np.array([1.0, 2.0])
    want = [f"dead {x * 3.0}", "loop 0", "loop 1"]
    f(x)
    assert lines_of(capsys) == want
    g(x)
    assert lines_of(capsys) == want
    assert "debug_callback" in str(g.jaxpr) and "for_loop" in str(g.jaxpr)


def test_literals_dims_ints_and_non_array_arguments(capsys):
    def f(x, k):
        dynjax.debug.print("no arguments")
        dynjax.debug.print("{} {} {}", 3, 2.5, True)
        dynjax.debug.print("k={k} n={n} s={s} none={z}", k=k, n=x.shape[0], s="text", z=None)
        return x

    want = lambda n, k: ["no arguments", "3 2.5 True",   # noqa: E731
                         f"k={np.int64(k)} n={np.int64(n)} s=text none=None"]
    g = dynjax.qjit(f, abstracted_axes=({0: "n"},))
    for n, k in ((2, 7), (0, -1), (5, 0)):
        g(np.ones(n), k)
        assert lines_of(capsys) == want(n, k)
    f(np.ones(2), 7)
    assert lines_of(capsys) == want(2, 7)
    assert g.cache_info()["traces"] == 1


def test_callback_result_is_discarded_and_errors_propagate():
    f = dynjax.qjit(lambda x: (dynjax.debug.callback(lambda a: a * 100, x), x + 1.0)[1],
                    abstracted_axes=({0: "n"},))
    np.testing.assert_array_equal(f(np.ones(3)), np.full(3, 2.0))
    assert dynjax.debug.callback(lambda a: 5, 1.0) is None
    assert dynjax.debug.print("") is None

    def boom(a):
        raise RuntimeError(f"seen {a.shape}")
    g = dynjax.qjit(lambda x: (dynjax.debug.callback(boom, x), x)[1], abstracted_axes=({0: "n"},))
    with pytest.raises(RuntimeError, match=r"seen \(4,\)"):
        g(np.ones(4))


# --- control flow ---------------------------------------------------------------------------------

def nested(x):
    def outer(i, c):
        def keep_going(s):
            dynjax.debug.print("test i={} j={}", i, s[0])
            return s[0] < i

        def body(s):
            j, v = s
            v = lax.cond(j % 2 == 0, lambda a: (dynjax.debug.print("even j={} {}", j, a), a + 1.0)[1],
                         lambda a: (dynjax.debug.print("odd j={}", j), a * 2.0)[1], v)
            return j + 1, v
        _, c = lax.while_loop(keep_going, body, (0, c))
        return c
    return lax.fori_loop(0, 4, outer, x)


def nested_ref(x):
    out, c = [], x
    for i in range(4):
        j = 0
        while True:
            out.append(f"test i={np.int64(i)} j={np.int64(j)}")
            if not j < i:
                break
            if j % 2 == 0:
                out.append(f"even j={np.int64(j)} {c}")
                c = c + 1.0
            else:
                out.append(f"odd j={np.int64(j)}")
                c = c * 2.0
            j += 1
    return c, out


def test_nested_for_while_cond_in_order(capsys):
    g = dynjax.qjit(nested, abstracted_axes=({0: "n"},))
    for n in (0, 1, 5):
        x = np.arange(float(n))
        want_value, want = nested_ref(x)
        np.testing.assert_array_equal(nested(x), want_value)
        assert lines_of(capsys) == want
        np.testing.assert_array_equal(g(x), want_value)
        assert lines_of(capsys) == want
    assert g.cache_info()["traces"] == 1


def test_cond_prints_only_the_branch_taken(capsys):
    def f(x, k):
        return lax.switch(k, [lambda a: (dynjax.debug.print("zero {}", a), a)[1],
                              lambda a: (dynjax.debug.print("one {}", a.shape[0]), a * 2.0)[1],
                              lambda a: a - 1.0], x)
    g = dynjax.qjit(f, abstracted_axes=({0: "n"},))
    for k, n in ((0, 3), (1, 0), (2, 1), (1, 5), (0, 0)):
        x = np.arange(float(n))
        g(x, k)
        want = [[f"zero {x}"], [f"one {np.int64(n)}"], []][k]
        assert lines_of(capsys) == want
        f(x, k)
        assert lines_of(capsys) == want


def test_print_in_a_loop_whose_carry_changes_size(capsys):
    def grow(x, limit):
        def keep_going(a):
            return a.shape[0] < limit

        def body(a):
            dynjax.debug.print("size {} {}", a.shape[0], a)
            return jnp.concatenate([a, a])
        return lax.while_loop(keep_going, body, x, allow_array_resizing=True)

    def ref(x, limit):
        out = []
        while x.shape[0] < limit:
            out.append(f"size {np.int64(x.shape[0])} {x}")
            x = np.concatenate([x, x])
        return x, out
    g = dynjax.qjit(grow, abstracted_axes=({0: "n"},))
    for n, limit in ((1, 5), (3, 4), (2, 1)):
        x = np.arange(1.0, n + 1)
        want_value, want = ref(x, limit)
        np.testing.assert_array_equal(g(x, limit), want_value)
        assert lines_of(capsys) == want
    assert g.cache_info()["traces"] == 1


# --- autodiff -------------------------------------------------------------------------------------

def test_scan_and_custom_jvp_under_grad(capsys):
    def f(x):
        def step(c, v):
            dynjax.debug.print("c={} v={}", c, v)
            return c * v, c
        c, ys = lax.scan(step, 1.0, x)
        return c + jnp.sum(ys)

    def ref(x):
        out, c = [], 1.0
        for v in x:
            out.append(f"c={np.asarray(c)} v={v}")
            c = c * v
        return out
    x = np.array([1.0, 2.0, 3.0])
    dynjax.grad(f)(x)
    assert lines_of(capsys) == ref(x)
    dynjax.qjit(dynjax.grad(f), abstracted_axes=({0: "n"},))(x)
    assert lines_of(capsys) == ref(x)

    @dynjax.custom_jvp
    def s(x):
        dynjax.debug.print("s {}", x)
        return jnp.sin(x)

    @s.defjvp
    def s_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        dynjax.debug.print("rule {}", x)
        return s(x), jnp.cos(x) * t
    y = np.array([0.5, 1.0])
    for h in (dynjax.grad(lambda v: jnp.sum(s(v))),
              dynjax.qjit(dynjax.grad(lambda v: jnp.sum(s(v))), abstracted_axes=({0: "n"},))):
        np.testing.assert_allclose(h(y), np.cos(y))
        assert lines_of(capsys) == [f"rule {y}", f"s {y}"]
    for h in (s, dynjax.qjit(s, abstracted_axes=({0: "n"},))):
        h(y)
        assert lines_of(capsys) == [f"s {y}"]


def test_threads_each_loop_prints_in_order_and_whole_lines(capsys):
    def f(x, k):
        def body(i, c):
            dynjax.debug.print("thread {} step {} {}", k, i, c)
            return c + 1.0
        return lax.fori_loop(0, 4, body, x)
    g = dynjax.qjit(f, abstracted_axes=({0: "n"},))
    g(np.zeros(1), 0)
    capsys.readouterr()
    threads = [threading.Thread(target=g, args=(np.zeros(k % 3), k)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = lines_of(capsys)
    assert len(lines) == 8 * 4
    for k in range(8):
        mine = [ln for ln in lines if ln.startswith(f"thread {k} ")]
        x = np.zeros(k % 3)
        assert mine == [f"thread {k} step {i} {x + i}" for i in range(4)]
    assert g.cache_info()["traces"] == 1


def test_jvp_inside_qjit_prints_the_primals_at_each_size(capsys):
    g = dynjax.qjit(lambda v, t: dynjax.jvp(program, (v,), (t,)), abstracted_axes=({0: "n"}, {0: "n"}))
    for n in (0, 1, 5):
        x = np.linspace(0.0, 1.0, n)
        y, ty = g(x, np.ones(n))
        np.testing.assert_array_equal(y, x * 8 + 1)
        np.testing.assert_array_equal(ty, np.full(n, 8.0))
        assert lines_of(capsys) == expected(x)
    assert g.cache_info()["traces"] == 1
