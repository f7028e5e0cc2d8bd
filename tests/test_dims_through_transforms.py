"""Dims that nested programs share with their enclosing scope keep their symbolic
expressions through every transformation (issue 20, items 3 and 6).

* Item 3: partial evaluation, transposition, jvp and batching re-trace nested programs
  (cond branches, loop bodies). A dim of the nested program that is an outer dim (the size
  ``max(n - 1, 0)`` of ``x[1:] - x[:-1]``, captured or passed as an operand) must still
  compare equal to the outer one, whatever path brought it in. Oracles: central finite
  differences of a numpy version of each function, and the installed jax on static shapes.
* Item 6: loops deduce their result dims by a fixpoint over the body, also with
  ``allow_array_resizing=True``: a dim the body returns unchanged stays the outer dim, and
  carried arrays whose dims are equal in every iteration share one dim.
"""
from __future__ import annotations

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import for_loop, grad, jvp, lax, qjit, vjp, vmap, while_loop

import jax  # noqa: E402  (a test extra: the comparison oracle)
jax.config.update("jax_enable_x64", True)
import jax.numpy as jjnp  # noqa: E402
from helpers import fd_grad  # noqa: E402

SIZES = (1, 2, 3, 6)


# ----------------------------------------------------------------------------------------------
# The programs, written once for dynjax and once for jax / numpy (``m``: jnp, ``L``: lax).
# ----------------------------------------------------------------------------------------------
def _slices(m):
    """Ways to make a size that is an expression of ``n`` (empty for small ``n``)."""
    return {
        "diff": lambda x: x[1:] - x[:-1],
        "stride": lambda x: x[::2] * 1.5,
        "concat": lambda x: m.concatenate([x[1:], x[:1] * 2.0]),
    }


def _programs(m, L):
    """Scalar-valued programs that use a derived slice ``v`` inside control flow, both as an
    operand and captured (so operand dims and captured dims meet inside the nested program)."""
    def cond(v, x):
        return L.cond(m.sum(x) > 0, lambda u: m.sum(u * v) + m.sum(m.sin(u)),
                      lambda u: m.sum(m.abs(u) * m.cos(v)), v)

    def switch(v, x):
        k = (m.sum(x) > 1.0).astype(m.int32) + (m.sum(x) > 40.0).astype(m.int32)
        return L.switch(k, [lambda u: m.sum(u * u), lambda u: m.sum(m.sin(u) * v),
                            lambda u: m.sum(u * m.exp(-v * v))], v)

    def fori(v, x):
        out = L.fori_loop(0, 3, lambda i, c: m.sin(c) * v + 0.5 * c, v)
        return m.sum(out * out)

    def scan_carry(v, x):
        c, ys = L.scan(lambda c, _: (m.cos(c) * v + c, m.sum(c * v)), v, None, length=3)
        return m.sum(c) + m.sum(ys)

    def scan_xs(v, x):
        c, ys = L.scan(lambda c, xi: (c * m.cos(xi) + xi, c * xi), m.sum(v), v)
        return c + m.sum(ys * v)

    def cond_in_loop(v, x):
        def body(i, c):
            return L.cond(i % 2 == 0, lambda u: m.sin(u) * v, lambda u: u * u + v, c)
        return m.sum(L.fori_loop(0, 3, body, v))

    return {"cond": cond, "switch": switch, "fori": fori, "scan_carry": scan_carry,
            "scan_xs": scan_xs, "cond_in_loop": cond_in_loop}


def _dynjax_fn(prog, sl):
    s = _slices(jnp)[sl]
    p = _programs(jnp, lax)[prog]
    return lambda x: p(s(x), x)


def _jax_fn(prog, sl):
    s = _slices(jjnp)[sl]
    p = _programs(jjnp, jax.lax)[prog]
    return lambda x: p(s(x), x)


def _arg(n, seed=0):
    rng = np.random.default_rng(seed + n)
    return rng.uniform(0.3, 1.2, n) * np.where(np.arange(n) % 3 == 1, -1.0, 1.0) + np.arange(n) ** 2 * 0.1


PROGS = ["cond", "switch", "fori", "scan_carry", "scan_xs", "cond_in_loop"]
SLICES = ["diff", "stride", "concat"]


# ----------------------------------------------------------------------------------------------
# Item 3: grad / vjp / jvp / vmap(grad) through control flow over derived sizes
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sl", SLICES)
@pytest.mark.parametrize("prog", PROGS)
def test_grad_compiled_against_jax_and_fd(prog, sl):
    f = _dynjax_fn(prog, sl)
    jf = _jax_fn(prog, sl)
    g = qjit(grad(f), abstracted_axes={0: "n"})
    for n in SIZES:
        x = _arg(n)
        got = g(x)
        want = np.asarray(jax.grad(jf)(x))
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(got, fd_grad(lambda y: jf(y), x), rtol=1e-5, atol=1e-6)
    assert g.cache_info()["traces"] == 1


@pytest.mark.parametrize("sl", SLICES)
@pytest.mark.parametrize("prog", PROGS)
def test_grad_eager_and_jvp(prog, sl):
    f = _dynjax_fn(prog, sl)
    jf = _jax_fn(prog, sl)
    for n in (1, 2, 5):
        x = _arg(n, 1)
        t = np.linspace(-1.0, 1.0, n)
        np.testing.assert_allclose(grad(f)(x), np.asarray(jax.grad(jf)(x)), rtol=1e-9, atol=1e-12)
        p, tan = jvp(f, (x,), (t,))
        jp, jt = jax.jvp(jf, (x,), (t,))
        np.testing.assert_allclose(p, float(jp), rtol=1e-12)
        np.testing.assert_allclose(tan, float(jt), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("prog", PROGS)
def test_jvp_and_vjp_compiled(prog):
    f = _dynjax_fn(prog, "diff")
    jf = _jax_fn(prog, "diff")

    def fwd(x, t):
        return jvp(f, (x,), (t,))

    def rev(x, ct):
        out, pull = vjp(f, x)
        return out, pull(ct)[0]

    cf = qjit(fwd, abstracted_axes=({0: "n"}, {0: "n"}))
    cr = qjit(rev, abstracted_axes=({0: "n"}, None))
    for n in SIZES:
        x, t = _arg(n, 2), np.cos(np.arange(n, dtype=float))
        p, tan = cf(x, t)
        jp, jt = jax.jvp(jf, (x,), (t,))
        np.testing.assert_allclose(tan, float(jt), rtol=1e-9, atol=1e-12)
        out, g = cr(x, 2.0)
        np.testing.assert_allclose(out, float(jp), rtol=1e-12)
        np.testing.assert_allclose(g, 2.0 * np.asarray(jax.grad(jf)(x)), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("prog", ["cond", "switch", "fori", "scan_carry"])
def test_vmap_of_grad(prog):
    f = _dynjax_fn(prog, "diff")
    jf = _jax_fn(prog, "diff")
    batched = qjit(vmap(grad(f)), abstracted_axes={1: "n"})
    for n in (1, 2, 4):
        xs = np.stack([_arg(n, s) * (-1.0) ** s for s in range(3)])   # predicates differ per row
        np.testing.assert_allclose(batched(xs), np.asarray(jax.vmap(jax.grad(jf))(xs)),
                                   rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(vmap(grad(f))(xs), np.asarray(jax.vmap(jax.grad(jf))(xs)),
                                   rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kind", ["custom_jvp", "custom_vjp"])
def test_custom_rules_inside_control_flow_over_slice(kind):
    if kind == "custom_jvp":
        @dynjax.custom_jvp
        def h(v):
            return jnp.sum(v * v * v)

        @h.defjvp
        def _(p, t):
            (v,), (dv,) = p, t
            return h(v), jnp.sum(3.0 * v * v * dv)
    else:
        @dynjax.custom_vjp
        def h(v):
            return jnp.sum(v * v * v)
        h.defvjp(lambda v: (h(v), v), lambda v, g: (3.0 * v * v * g,))

    def f(x):
        v = x[1:] - x[:-1]
        c = lax.cond(jnp.sum(x) > 0, lambda u: h(u) + jnp.sum(u * v), lambda u: h(u * v), v)
        return c + lax.fori_loop(0, 2, lambda i, acc: acc + h(jnp.sin(acc) * v), 0.0)

    def np_f(x):
        v = np.diff(x)
        c = np.sum(v ** 3) + np.sum(v * v) if np.sum(x) > 0 else np.sum((v * v) ** 3)
        acc = 0.0
        for _ in range(2):
            acc = acc + np.sum((np.sin(acc) * v) ** 3)
        return c + acc

    g = qjit(grad(f), abstracted_axes={0: "n"})
    for n in SIZES:
        for sign in (1.0, -1.0):
            x = sign * _arg(n, 6)
            np.testing.assert_allclose(g(x), fd_grad(np_f, x), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(grad(f)(x), g(x), rtol=1e-12, atol=1e-14)


def test_issue_example():
    g = qjit(grad(lambda x: lax.cond(jnp.sum(x) > 0, lambda v: jnp.sum(v * v), lambda v: jnp.sum(jnp.abs(v)),
                                     x[1:] - x[:-1])), abstracted_axes={0: "n"})
    for n in (1, 2, 5):
        x = np.arange(float(n)) ** 2
        d = np.diff(x)
        want = np.zeros(n)
        want[1:] += 2 * d
        want[:-1] -= 2 * d
        np.testing.assert_allclose(g(x), want)


def test_while_loop_jvp_over_slice():
    def f(x):
        v = x[1:] - x[:-1]

        def body(c):
            i, a = c
            return i + 1, jnp.sin(a) * v + a
        return jnp.sum(lax.while_loop(lambda c: c[0] < 3, body, (0, v))[1])

    def np_f(x):
        v = np.diff(x)
        a = v
        for _ in range(3):
            a = np.sin(a) * v + a
        return np.sum(a)

    cf = qjit(lambda x, t: jvp(f, (x,), (t,)), abstracted_axes=({0: "n"}, {0: "n"}))
    for n in SIZES:
        x, t = _arg(n, 3), np.linspace(0.5, 1.5, n)
        p, tan = cf(x, t)
        np.testing.assert_allclose(p, np_f(x), rtol=1e-12)
        np.testing.assert_allclose(tan, fd_grad(np_f, x) @ t, rtol=1e-5, atol=1e-7)


def test_grad_of_catalyst_loops_over_slice():
    """Catalyst-style ``for_loop`` and ``cond`` capturing the slice while carrying it."""
    def f(x):
        v = x[1:] - x[:-1]

        @for_loop(0, 3, 1)
        def loop(i, a):
            @dynjax.cond(i > 0)
            def br():
                return a * v
            @br.otherwise
            def _():
                return a + jnp.sin(v)
            return br()
        return jnp.sum(loop(v))

    def np_f(x):
        v = np.diff(x)
        a = v
        for i in range(3):
            a = a * v if i > 0 else a + np.sin(v)
        return np.sum(a)

    g = qjit(grad(f), abstracted_axes={0: "n"})
    for n in SIZES:
        x = _arg(n, 4)
        np.testing.assert_allclose(g(x), fd_grad(np_f, x), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(grad(f)(x), g(x), rtol=1e-12, atol=1e-14)


def test_cond_branch_keeps_operand_size_expression():
    """An integer operand of a cond is the same value in every branch: a branch sees its
    expression, so arrays sized by it combine with captured arrays of the outer size."""
    def f(x):
        v = x[1:] - x[:-1]
        k = v.shape[0]
        return lax.cond(jnp.sum(x) > 0, lambda kk: jnp.sum(jnp.ones(kk) * v),
                        lambda kk: jnp.sum(jnp.arange(kk) * v), k)

    cf = qjit(f, abstracted_axes={0: "n"})
    for n in SIZES:
        x = _arg(n)
        v = np.diff(x)
        want = np.sum(v) if np.sum(x) > 0 else np.sum(np.arange(n - 1) * v)
        np.testing.assert_allclose(cf(x), want, rtol=1e-12)


# ----------------------------------------------------------------------------------------------
# Item 6: loops keep the dims the body does not change, and share the dims that stay equal
# ----------------------------------------------------------------------------------------------
def _loop_dims(closed, name):
    eqn = [e for e in closed.eqns if e.primitive.name == name][0]
    return eqn


def test_resizing_while_loop_keeps_unchanged_dim():
    def g(n):
        a0 = jnp.ones([n])
        b0 = jnp.ones([n])

        @while_loop(lambda a, b, i: i < 3, allow_array_resizing=True)
        def loop(a, b, i):
            return a, jnp.concatenate([b, b]), i + 1
        a2, b2, _ = loop(a0, b0, 0)
        assert a2.shape[0] is a0.shape[0]
        return a0 + a2, b2 * 2.0

    closed = dynjax.make_jaxpr(g)(2)
    assert _loop_dims(closed, "while_loop").params["nimplicit"] == 1   # only b's size is carried
    cg = qjit(g)
    for n in (0, 1, 3):
        for run in (g, cg):
            s, b = run(n)
            np.testing.assert_array_equal(s, np.full(n, 2.0))
            np.testing.assert_array_equal(b, np.full(8 * n, 2.0))


def test_resizing_for_loop_outputs_of_one_value_share_a_dim():
    """Catalyst's test_qjit_forloop_shared_dimensions: both results are the captured array."""
    def f(sz, trips):
        input_a = jnp.ones([sz + 1], dtype=float)
        input_b = jnp.arange(sz + 2, dtype=float)

        @for_loop(0, trips, 1, allow_array_resizing=True)
        def loop(_i, _a, _b):
            return input_a, input_a

        outputs = loop(input_b, input_b)
        assert outputs[0].shape[0] is outputs[1].shape[0]
        return outputs[0] + outputs[1]

    cf = qjit(f)
    for sz, trips in ((3, 10), (3, 0), (0, 1), (0, 0), (5, 2)):
        want = 2 * (np.ones(sz + 1) if trips > 0 else np.arange(sz + 2.0))
        np.testing.assert_array_equal(cf(sz, trips), want)
        np.testing.assert_array_equal(f(sz, trips), want)


def test_resizing_loop_splits_dims_that_diverge():
    """Carried arrays entering with one size are assumed to keep one size; when the body
    makes them differ they are split (and each has its own size afterwards)."""
    def f(n, trips):
        b0 = jnp.arange(n, dtype=float)

        @for_loop(0, trips, 1, allow_array_resizing=True)
        def loop(i, b, c, d):
            return jnp.concatenate([b, b]), jnp.concatenate([c, c, c]), d * 2.0
        b, c, d = loop(b0, b0, b0)
        assert d.shape[0] is b0.shape[0]
        return b, c, d + b0

    closed = dynjax.make_jaxpr(f)(2, 2)
    assert _loop_dims(closed, "for_loop").params["nimplicit"] == 2
    cf = qjit(f)
    for n, trips in ((2, 2), (3, 0), (1, 3), (0, 2)):
        b0 = np.arange(n, dtype=float)
        want = (np.tile(b0, 2 ** trips), np.tile(b0, 3 ** trips), b0 * 2.0 ** trips + b0)
        for run in (f, cf):
            for got, w in zip(run(n, trips), want):
                np.testing.assert_array_equal(got, w)


def test_resizing_loop_swapped_carries():
    """Two carries that trade places: equal sizes stay the outer size (a fixpoint over
    every iteration, not just the first); different sizes become carried sizes."""
    def same(n, trips):
        a0, b0 = jnp.ones([n]), jnp.arange(n, dtype=float)

        @for_loop(0, trips, 1, allow_array_resizing=True)
        def loop(i, a, b):
            return b, a
        a, b = loop(a0, b0)
        return a + b + a0

    def different(n, m, trips):
        a0, b0 = jnp.ones([n]), jnp.arange(m, dtype=float)

        @for_loop(0, trips, 1, allow_array_resizing=True)
        def loop(i, a, b):
            return b, a
        return loop(a0, b0)

    assert _loop_dims(dynjax.make_jaxpr(same)(2, 1), "for_loop").params["nimplicit"] == 0
    assert _loop_dims(dynjax.make_jaxpr(different)(2, 3, 1), "for_loop").params["nimplicit"] == 2
    cs, cd = qjit(same), qjit(different)
    for trips in (0, 1, 2, 3):
        np.testing.assert_array_equal(cs(4, trips), np.ones(4) + np.arange(4.0) + 1.0)
        a, b = cd(2, 3, trips)
        want = (np.ones(2), np.arange(3.0)) if trips % 2 == 0 else (np.arange(3.0), np.ones(2))
        np.testing.assert_array_equal(a, want[0])
        np.testing.assert_array_equal(b, want[1])


def test_resizing_scan_keeps_unchanged_dim():
    from dynjax.control_flow.binders import bind_scan

    def f(x):
        def body(carry, xi):
            a, b = carry
            return (a * xi, jnp.concatenate([b, b[:1]])), jnp.sum(a)
        (a, b), ys = bind_scan(body, (x, x), x, None, False, preserve=False)
        return a + x, b, ys

    closed = dynjax.make_jaxpr(f, abstracted_axes={0: "n"})(np.ones(3))
    assert _loop_dims(closed, "scan").params["nimplicit"] == 1
    for n in (1, 3):
        x = np.arange(1.0, n + 1)
        a, b, ys = f(x)
        want_a = x * np.prod(x)
        np.testing.assert_allclose(a, want_a + x)
        np.testing.assert_allclose(b, np.concatenate([x, np.full(n, x[0])]))
        np.testing.assert_allclose(ys, [np.sum(x * np.prod(x[:k])) for k in range(n)])


def test_preserve_mode_unchanged():
    """Without allow_array_resizing, sharing at input must survive (the seed's error)."""
    def f(n):
        a0 = jnp.ones([n])

        @for_loop(0, 3, 1)
        def loop(i, a, b):
            return a, jnp.concatenate([b, b])
        return loop(a0, a0)
    with pytest.raises(TypeError, match="not the same any more"):
        dynjax.make_jaxpr(f)(2)


def test_grad_through_resizing_loop_that_keeps_sizes():
    """A resizing loop whose body keeps every size carries no size, so reverse mode works."""
    def f(x):
        v = x[1:] - x[:-1]

        @for_loop(0, 3, 1, allow_array_resizing=True)
        def loop(i, a, b):
            return jnp.sin(a) * b, b + 0.5 * a
        a, b = loop(v, v)
        return jnp.sum(a * b)

    def np_f(x):
        a = b = np.diff(x)
        for _ in range(3):
            a, b = np.sin(a) * b, b + 0.5 * a
        return np.sum(a * b)

    g = qjit(grad(f), abstracted_axes={0: "n"})
    for n in SIZES:
        x = _arg(n, 5)
        np.testing.assert_allclose(g(x), fd_grad(np_f, x), rtol=1e-5, atol=1e-7)


def test_broadcast_to_int_sizes():
    """``arange(m)`` has ``max(m, 0)`` elements; the target shape makes ``m`` a size."""
    def f(n, m):
        return jnp.broadcast_to(jnp.arange(m), (n, m)) * 2

    cf = qjit(f)
    closed = dynjax.make_jaxpr(f)(2, 3)
    dynjax.check_jaxpr(closed.jaxpr)
    for n, m in ((2, 3), (1, 0), (0, 4), (3, 1)):
        want = np.broadcast_to(np.arange(m), (n, m)) * 2
        np.testing.assert_array_equal(cf(n, m), want)
        np.testing.assert_array_equal(f(n, m), want)
    with pytest.raises(ValueError):
        cf(2, -1)
