"""vmap of every primitive (the jvp case catalogue) and of every control-flow form, against
a Python loop of per-member calls: eagerly, and compiled with the batch axis abstracted so
that batch sizes 0, 1 and 5 share one trace."""

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import for_loop, lax

import test_jvp as J
from helpers import in_threads

BATCHES = (0, 1, 5)


def per_member(fn, batch_args, b, in_axes):
    """The reference: fn on each member, results stacked (an empty batch: the shapes of one
    member's results with a leading 0, from a member built of zeros)."""
    if b == 0:
        probe = [np.zeros(np.delete(np.shape(a), ax)) if ax is not None else a
                 for a, ax in zip(batch_args, in_axes)]
        outs = J.leaves(fn(*probe))
        return [np.zeros((0,) + np.shape(o), np.asarray(o).dtype) for o in outs]
    per = []
    for i in range(b):
        member = [np.take(a, i, axis=ax) if ax is not None else a for a, ax in zip(batch_args, in_axes)]
        per.append([np.asarray(o) for o in J.leaves(fn(*member))])
    return [np.stack(col) for col in zip(*per)]


def member_samples(case, n, b, rng):
    members = [J.sample(case, n, rng)[0] for _ in range(max(b, 1))]
    return [np.stack([m[k] for m in members])[:b] for k in range(len(members[0]))]


def check(got, want, exact=True, msg=""):
    got = J.leaves(got)
    assert len(got) == len(want), msg
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (msg, g.shape, w.shape, g.dtype, w.dtype)
        if exact:
            np.testing.assert_array_equal(g, w, err_msg=msg)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13, err_msg=msg)


# Products go through BLAS, whose kernels for a batched and an unbatched product may sum in
# different orders (numpy's own matmul of a stack and of its members differ in the last bit
# on some CPUs): those compare to within rounding, everything else bit for bit.
def _bit_exact(case):
    return not case.name.startswith(("dot_general", "conv"))


@pytest.mark.parametrize("case", J.CASES, ids=J.CASE_IDS)
def test_every_case_eager(case):
    rng = np.random.default_rng(1)
    exact = _bit_exact(case)
    for b in BATCHES:
        for n in (0, 1, 3):
            args = member_samples(case, n, b, rng)
            axes = [0] * len(args)
            want = per_member(case.fn, args, b, axes)
            check(dynjax.vmap(case.fn)(*args), want, exact, msg=f"{case.name} b={b} n={n}")
            # the batch axis last, and one argument shared by every member
            moved = [np.moveaxis(a, 0, -1) for a in args]
            check(dynjax.vmap(case.fn, in_axes=-1)(*moved), want, exact, msg=f"{case.name} in_axes=-1")
            if len(args) > 1 and b:
                shared = [args[0][0]] + args[1:]
                axes = [None] + [0] * (len(args) - 1)
                check(dynjax.vmap(case.fn, in_axes=tuple(axes))(*shared), per_member(case.fn, shared, b, axes),
                      exact, msg=f"{case.name} shared first argument")


GROUPS = [J.CASES[i:i + 16] for i in range(0, len(J.CASES), 16)]


@pytest.mark.parametrize("group", range(len(GROUPS)))
def test_compiled_one_trace_across_batch_and_member_sizes(group):
    cases = GROUPS[group]
    counts = [len(case.shapes(3)) for case in cases]
    specs = []
    for case in cases:
        specs += [{0: "b"} if a is None else {0: "b", a + 1: "n"} for a in case.dyn]

    def program(*flat):
        outs, k = [], 0
        for case, m in zip(cases, counts):
            outs.append(dynjax.vmap(case.fn)(*flat[k:k + m]))
            k += m
        return outs
    compiled = dynjax.qjit(program, abstracted_axes=tuple(specs))
    rng = np.random.default_rng(group)
    for b, n in [(0, 3), (1, 1), (5, 0), (5, 3)]:
        args = []
        for case in cases:
            args += member_samples(case, n, b, rng)
        got = compiled(*args)
        k = 0
        for case, m, res in zip(cases, counts, got):
            check(res, per_member(case.fn, args[k:k + m], b, [0] * m), exact=False, msg=f"{case.name} b={b} n={n}")
            k += m
    assert compiled.cache_info()["traces"] == 1


# ----------------------------------------------------------------------------------------------
# Control flow
# ----------------------------------------------------------------------------------------------
def loop_fn(x, w):
    @for_loop(0, 3, 1)
    def body(i, c):
        return jnp.sin(c) * w + i
    return body(x)


def fori_fn(x, w):
    return lax.fori_loop(0, 2, lambda i, c: lax.fori_loop(0, 2, lambda j, d: d * w + 1.0, c) - x, x)


def while_fn(x, w):
    # members stop at different iterations
    def cond(s):
        return s[1] < jnp.sum(jnp.abs(x)) * 2.0

    def body(s):
        return s[0] * 0.5 + w, s[1] + 1.0
    return lax.while_loop(cond, body, (x, 0.0))


def cond_fn(x, w):
    return lax.cond(jnp.sum(x) > 0, lambda a, b: a * b, lambda a, b: a - b, x, w)


def switch_fn(x, w):
    k = jnp.clip(jnp.sum(x).astype(int) + 1, 0, 2)
    return lax.switch(k, [lambda a: a * 2.0, jnp.sin, lambda a: a + w], x)


def shared_cond_fn(x, w):
    # the predicate depends only on w, which is shared: the cond stays a cond
    return lax.cond(jnp.sum(w) > 0, lambda a: a * 2.0, lambda a: -a, x)


def scan_fn(x, w):
    c, ys = lax.scan(lambda c, v: (c * 0.5 + v, c * v + w[0]), 0.0, x)
    return c, ys


def rscan_fn(x, w):
    c, ys = lax.scan(lambda c, v: (jnp.tanh(c + v), c - v), w, x, reverse=True)
    return c, ys


CONTROL = {f.__name__: f for f in (loop_fn, fori_fn, while_fn, cond_fn, switch_fn, shared_cond_fn, scan_fn,
                                   rscan_fn)}


@pytest.mark.parametrize("name", sorted(CONTROL))
@pytest.mark.parametrize("w_axis", [0, None])
def test_control_flow(name, w_axis):
    fn = CONTROL[name]
    rng = np.random.default_rng(3)
    axes = (0, w_axis)
    compiled = dynjax.qjit(dynjax.vmap(fn, in_axes=axes),
                           abstracted_axes=({0: "b", 1: "n"}, {0: "b", 1: "n"} if w_axis == 0 else {0: "n"}))
    for b in BATCHES:
        for n in (1, 4):
            x = rng.uniform(-1, 1, (b, n))
            w = rng.uniform(-1, 1, (b, n) if w_axis == 0 else (n,))
            want = per_member(fn, [x, w], b, axes)
            check(dynjax.vmap(fn, in_axes=axes)(x, w), want, exact=False, msg=f"{name} b={b} n={n}")
            check(compiled(x, w), want, exact=False, msg=f"{name} compiled b={b} n={n}")
    assert compiled.cache_info()["traces"] == 1


# ----------------------------------------------------------------------------------------------
# Composition, axes, errors
# ----------------------------------------------------------------------------------------------
def test_composition_with_autodiff_and_itself():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(5, 3))
    f = lambda x: jnp.sum(jnp.sin(x) * x)
    g = lambda x: np.cos(x) * x + np.sin(x)
    np.testing.assert_allclose(dynjax.vmap(dynjax.grad(f))(X), g(X), rtol=1e-14)
    np.testing.assert_allclose(dynjax.grad(lambda x: jnp.sum(dynjax.vmap(f)(x)))(X), g(X), rtol=1e-14)
    np.testing.assert_allclose(dynjax.vmap(dynjax.vmap(lambda s: s * jnp.sin(s)))(X), X * np.sin(X), rtol=1e-15)
    # a jacobian as vmap of a vjp over the basis
    x = X[0]
    y, f_vjp = dynjax.vjp(lambda v: jnp.sin(v) * v[0], x)
    jac = dynjax.vmap(lambda ct: f_vjp(ct)[0])(np.eye(3))
    np.testing.assert_allclose(jac, dynjax.jacrev(lambda v: jnp.sin(v) * v[0])(x), rtol=1e-14)
    # around a qjit function, and compiled with the batch size dynamic
    q = dynjax.qjit(lambda v: jnp.cumsum(v) * 2.0)
    np.testing.assert_allclose(dynjax.vmap(q)(X), np.cumsum(X, axis=1) * 2.0, rtol=1e-15)
    h = dynjax.qjit(dynjax.vmap(dynjax.grad(f)), abstracted_axes=({0: "b"},))
    for b in BATCHES:
        np.testing.assert_allclose(h(X[:b]), g(X[:b]), rtol=1e-14)
    assert h.cache_info()["traces"] == 1


def test_out_axes_pytrees_and_axis_size():
    X = np.arange(12.0).reshape(3, 4)
    out = dynjax.vmap(lambda x: {"a": x * 2.0, "b": jnp.sum(x)}, out_axes={"a": 1, "b": 0})(X)
    np.testing.assert_array_equal(out["a"], (X * 2.0).T)
    np.testing.assert_array_equal(out["b"], X.sum(axis=1))
    out = dynjax.vmap(lambda x, s: x * s, in_axes=(0, None), out_axes=-1)(X, 3.0)
    np.testing.assert_array_equal(out, (X * 3.0).T)
    const = dynjax.vmap(lambda s: s + 1.0, in_axes=None, axis_size=4)(2.0)
    np.testing.assert_array_equal(const, np.full(4, 3.0))
    shared = dynjax.vmap(lambda x, s: s * 2.0, in_axes=(0, None), out_axes=(None))(X, np.ones(2))
    np.testing.assert_array_equal(shared, np.full(2, 2.0))
    kw = dynjax.vmap(lambda x, y=None: x + y)(X, y=X)
    np.testing.assert_array_equal(kw, 2 * X)


def test_errors():
    X = np.ones((3, 4))
    with pytest.raises(ValueError, match="inconsistent sizes for array axes to be mapped"):   # as JAX
        dynjax.vmap(lambda a, b: a + b)(X, np.ones((2, 4)))
    with pytest.raises(ValueError, match="rank should be at least 3, but is only 2"):
        dynjax.vmap(jnp.sin, in_axes=2)(X)
    with pytest.raises(ValueError, match="got axis spec None but output was batched"):
        dynjax.vmap(jnp.sin, out_axes=None)(X)
    with pytest.raises(ValueError, match="axis_size"):
        dynjax.vmap(jnp.sin, in_axes=None)(X)
    with pytest.raises(TypeError, match="must be a function"):
        dynjax.vmap(3)


def test_threads():
    f = dynjax.qjit(dynjax.vmap(lambda x: jnp.sum(jnp.tanh(x) * x)), abstracted_axes=({0: "b", 1: "n"},))

    def work(k):
        rng = np.random.default_rng(k)
        for b, n in [(k % 4, 3), (5, 1 + k % 3), (0, 2)]:
            x = rng.normal(size=(b, n))
            np.testing.assert_allclose(f(x), np.sum(np.tanh(x) * x, axis=1), rtol=1e-14)
    in_threads(work, range(6))
