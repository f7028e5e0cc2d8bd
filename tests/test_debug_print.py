"""dynjax.debug.print / debug.callback: run-time values, in program order, eagerly and
compiled with dynamic sizes, inside loops and conditionals, under grad and vmap, and from
threads. The expected text is built from numpy's own formatting of the reference values."""
import threading

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
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
    threads = [threading.Thread(target=work, args=(k,)) for k in range(1, 6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = sorted(lines_of(capsys))
    want = sorted(f"n={np.int64(n)} sum={np.float64(n)}" for k in range(1, 6) for n in (k, k + 1))
    assert got == want


def test_errors():
    with pytest.raises(TypeError, match="format must be a str"):
        dynjax.debug.print(3)
    with pytest.raises(TypeError, match="must be a function"):
        dynjax.debug.callback(3, 1.0)
