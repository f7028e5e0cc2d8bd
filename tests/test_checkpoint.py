"""``checkpoint`` / ``remat``, ``checkpoint_name`` and ``checkpoint_policies`` (issue 23).

A checkpointed function computes exactly what the function computes, and so do its
derivatives; what changes is what linearizing stores. The oracles:

* the same program without ``checkpoint`` (values and derivatives must be equal, bit for
  bit where the same operations run in the same order);
* finite differences of a numpy function;
* the residuals of the linearized program (``linearize_flat(...).consts``): counted, and
  compared by value with what the policy says is saved;
* jax's ``jax.checkpoint`` on the same program, where jax is installed.

Every order of ``jvp`` / ``vjp`` / ``grad`` / ``vmap`` / ``qjit`` around and inside a
checkpoint is generated below, at dynamic sizes (0 and 1 included) under ``qjit``.
"""
import itertools

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import checkpoint_policies as cp
from dynjax import grad, jvp, lax, qjit, vjp, vmap
from dynjax.ad_checkpoint import checkpoint_name
from dynjax.transforms.partial_eval import linearize_flat
from helpers import fd_grad

POLICIES = {
    "none": None,
    "nothing": cp.nothing_saveable,
    "everything": cp.everything_saveable,
    "dots": cp.dots_saveable,
    "dots_no_batch": cp.dots_with_no_batch_dims_saveable,
    "only_a": cp.save_only_these_names("a"),
    "any_but_a": cp.save_any_names_but_these("a"),
    "except_a": cp.save_anything_except_these_names("a"),
    "both": cp.save_from_both_policies(cp.dots_saveable, cp.save_only_these_names("b")),
    "user": lambda prim, *avals, **params: prim.name == "sin",
}


def block(x, w):
    """A block with a matrix product and two named values."""
    a = checkpoint_name(jnp.sin(x @ w), "a")
    b = checkpoint_name(jnp.cos(a) * x, "b")
    return jnp.tanh(b) + a * x


def np_block(x, w):
    a = np.sin(x @ w)
    b = np.cos(a) * x
    return np.tanh(b) + a * x


def loss(f):
    return lambda x, w: jnp.sum(f(x, w) ** 2)


def data(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=n), rng.normal(size=(n, n)) / max(n, 1)


DYN2 = ({0: "n"}, {0: "n", 1: "n"})


# ----------------------------------------------------------------------------------------------
# Values and gradients, every policy, eager and compiled at dynamic sizes
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy", list(POLICIES), ids=list(POLICIES))
def test_values_and_gradients_equal_the_plain_program(policy):
    ck = dynjax.checkpoint(block, policy=POLICIES[policy])
    g_plain = qjit(grad(loss(block), argnums=(0, 1)), abstracted_axes=DYN2)
    g_ck = qjit(grad(loss(ck), argnums=(0, 1)), abstracted_axes=DYN2)
    for n in (0, 1, 4):
        x, w = data(n)
        np.testing.assert_array_equal(ck(x, w), block(x, w))
        np.testing.assert_allclose(ck(x, w), np_block(x, w), rtol=1e-13, atol=1e-15)
        eager = grad(loss(ck), argnums=(0, 1))(x, w)
        for got, want in zip(eager, grad(loss(block), argnums=(0, 1))(x, w)):
            np.testing.assert_array_equal(got, want)
        for got, want in zip(g_ck(x, w), g_plain(x, w)):
            np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)
        if n:
            np_loss = lambda x_: np.sum(np_block(x_, w) ** 2)
            np.testing.assert_allclose(eager[0], fd_grad(np_loss, x), rtol=1e-5, atol=1e-7)
    assert g_ck.cache_info()["traces"] == 1


def test_padded_executables(monkeypatch):
    """A checkpoint (and the checkpoints of its backward pass) pad like their jaxprs: the
    padded bucket executables give the exact executables' values."""
    monkeypatch.setenv("DYNJAX_TIERS", "padded")
    monkeypatch.setenv("DYNJAX_SYNC_COMPILE", "1")
    ck = dynjax.checkpoint(block, policy=cp.dots_saveable)
    g = qjit(grad(loss(ck), argnums=(0, 1)), abstracted_axes=DYN2)
    for n in (2, 5):
        x, w = data(n, seed=n)
        for got, want in zip(g(x, w), grad(loss(block), argnums=(0, 1))(x, w)):
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    assert g.cache_info()["padded_runs"] >= 1


def test_static_argnums_and_pytrees():
    def f(p, k, scale):
        return {"y": jnp.sin(p["x"]) ** k * scale, "z": p["w"] * 2.0}
    ck = dynjax.checkpoint(f, static_argnums=(1,))
    x = np.linspace(-1.0, 1.0, 5)
    p = {"x": x, "w": np.float64(3.0)}
    out = ck(p, 3, 0.5)
    np.testing.assert_allclose(out["y"], np.sin(x) ** 3 * 0.5, rtol=1e-15)
    g = grad(lambda x: jnp.sum(ck({"x": x, "w": 1.0}, 3, 0.5)["y"]))(x)
    np.testing.assert_allclose(g, 1.5 * np.sin(x) ** 2 * np.cos(x), rtol=1e-13)
    # a negative index and a keyword argument
    ck2 = dynjax.checkpoint(lambda k, x, s=1.0: jnp.sin(x) ** k * s, static_argnums=-2)
    assert ck2.__name__ == "<lambda>"
    np.testing.assert_allclose(grad(lambda x: ck2(2, x, s=3.0))(0.4), 6 * np.sin(0.4) * np.cos(0.4))
    assert dynjax.remat is dynjax.checkpoint is dynjax.ad_checkpoint.checkpoint
    assert dynjax.checkpoint_policies is dynjax.ad_checkpoint.checkpoint_policies
    assert cp.checkpoint_dots is cp.dots_saveable


# ----------------------------------------------------------------------------------------------
# What is stored: the residuals of the linearized program
# ----------------------------------------------------------------------------------------------
def _residuals(f, *args):
    return [np.asarray(r) for r in linearize_flat(f, list(args)).consts]


def _holds(residuals, value):
    return any(r.shape == value.shape and np.array_equal(r, value) for r in residuals)


def test_nothing_saveable_stores_only_the_inputs():
    f = lambda x: jnp.sin(jnp.sin(x)) * x
    x = np.linspace(0.1, 1.0, 6)
    plain = _residuals(f, x)
    # sin(x) is recomputed, cos(x), cos(sin(x)), sin(sin(x)) and x are stored
    assert len(plain) == 4
    for policy in (None, cp.nothing_saveable):
        ck = _residuals(dynjax.checkpoint(f, policy=policy), x)
        assert len(ck) == 1 and np.array_equal(ck[0], x)
    every = _residuals(dynjax.checkpoint(f, policy=cp.everything_saveable), x)
    assert len(every) == len(plain)


def test_the_backward_pass_is_rematerialized_too():
    """The linear part is a checkpoint whose transpose is one as well, so differentiating a
    gradient (grad of grad) recomputes the inner backward pass instead of storing it."""
    f = lambda x: jnp.sin(jnp.sin(x)) * x
    x = np.linspace(0.1, 1.0, 6)
    inner = lambda fn: grad(lambda v: jnp.sum(fn(v)))
    plain, ck = _residuals(inner(f), x), _residuals(inner(dynjax.checkpoint(f)), x)
    assert len(plain) == 7 and len(ck) == 2
    assert _holds(ck, x)
    outer = lambda fn: grad(lambda v: jnp.sum(inner(fn)(v)))
    np.testing.assert_array_equal(outer(dynjax.checkpoint(f))(x), outer(f)(x))


def test_saved_residuals_says_where_each_residual_comes_from(capsys):
    from dynjax.ad_checkpoint import print_saved_residuals, saved_residuals
    f = lambda x: jnp.sin(jnp.sin(x)) * x
    x = np.linspace(0.1, 1.0, 6)
    plain = [what for _, what in saved_residuals(f, x)]
    assert sorted(plain) == ["from the argument args[0]", "output of cos", "output of cos", "output of sin"]
    assert [what for _, what in saved_residuals(dynjax.checkpoint(f), x)] == ["from the argument args[0]"]
    res = saved_residuals(dynjax.checkpoint(block, policy=cp.dots_saveable), x, w=np.eye(6))
    assert sorted(what for _, what in res) == ["from the argument args[0]", "from the argument kwargs['w']",
                                               "output of dot_general"]
    print_saved_residuals(dynjax.checkpoint(f), x)
    assert capsys.readouterr().out == "f64[6] from the argument args[0]\n"


def test_dots_saveable_stores_the_dot_results():
    x, w = data(4, seed=3)
    dot = x @ w
    assert not _holds(_residuals(dynjax.checkpoint(block), x, w), dot)
    for policy in (cp.dots_saveable, cp.checkpoint_dots, cp.dots_with_no_batch_dims_saveable):
        res = _residuals(dynjax.checkpoint(block, policy=policy), x, w)
        assert _holds(res, dot)
        assert not _holds(res, np.sin(dot))   # the rest is recomputed
    # a batched matmul (batch dims) is not saved by dots_with_no_batch_dims_saveable
    xb, wb = np.ones((2, 3, 3)), np.ones((2, 3, 3)) * 0.5
    bmm = lambda a, b: jnp.sum(jnp.sin(jnp.matmul(a, b)))
    prod = np.matmul(xb, wb)
    assert _holds(_residuals(dynjax.checkpoint(bmm, policy=cp.dots_saveable), xb, wb), prod)
    assert not _holds(_residuals(dynjax.checkpoint(bmm, policy=cp.dots_with_no_batch_dims_saveable), xb, wb), prod)


def test_name_policies_store_the_named_values():
    x, w = data(4, seed=4)
    a = np.sin(x @ w)
    b = np.cos(a) * x
    res = _residuals(dynjax.checkpoint(block, policy=cp.save_only_these_names("a")), x, w)
    assert _holds(res, a) and not _holds(res, b)
    res = _residuals(dynjax.checkpoint(block, policy=cp.save_any_names_but_these("a")), x, w)
    assert _holds(res, b) and not _holds(res, a)
    res = _residuals(dynjax.checkpoint(block, policy=cp.save_only_these_names("a", "b")), x, w)
    assert _holds(res, a) and _holds(res, b)
    res = _residuals(dynjax.checkpoint(block, policy=cp.save_from_both_policies(
        cp.save_only_these_names("b"), cp.dots_saveable)), x, w)
    assert _holds(res, b) and _holds(res, x @ w)
    # fewer residuals than saving everything, more than saving nothing
    n_only = len(_residuals(dynjax.checkpoint(block, policy=cp.save_only_these_names("a")), x, w))
    assert len(_residuals(dynjax.checkpoint(block), x, w)) < n_only < len(_residuals(block, x, w))


def test_prevent_cse_keeps_the_recomputation_apart():
    f = lambda x: jnp.sum(jnp.sin(x) * x)
    vg = lambda g: qjit(dynjax.value_and_grad(g), abstracted_axes=({0: "n"},))
    x = np.linspace(0.0, 1.0, 5)
    for prevent_cse in (True, False):
        h = vg(dynjax.checkpoint(f, prevent_cse=prevent_cse))
        v, g = h(x)
        np.testing.assert_allclose(g, np.sin(x) + x * np.cos(x), rtol=1e-14)
        np.testing.assert_allclose(v, np.sum(np.sin(x) * x), rtol=1e-14)
        # the forward sin, and the recomputed one (behind a barrier with prevent_cse)
        text = str(h.jaxpr)
        assert text.count("= sin ") == 2
        assert text.count("optimization_barrier") == (1 if prevent_cse else 0)
    plain = vg(f)
    np.testing.assert_allclose(plain(x)[1], np.sin(x) + x * np.cos(x), rtol=1e-14)
    assert str(plain.jaxpr).count("= sin ") == 1


# ----------------------------------------------------------------------------------------------
# Loops
# ----------------------------------------------------------------------------------------------
def _step(c, x):
    return jnp.sin(c) * c + jnp.cos(c) * x, c * x


def _scan_loss(step):
    def f(c0, xs):
        c, ys = lax.scan(step, c0, xs)
        return jnp.sum(c) + jnp.sum(ys)
    return f


def _np_scan_loss(c0, xs):
    c, total = c0, 0.0
    for x in xs:
        c, y = np.sin(c) * c + np.cos(c) * x, c * x
        total += np.sum(y)
    return np.sum(c) + total


@pytest.mark.parametrize("policy", ["none", "dots", "everything"])
def test_scan_of_a_checkpointed_step(policy):
    ck = dynjax.checkpoint(_step, policy=POLICIES[policy])
    g_plain = qjit(grad(_scan_loss(_step), argnums=(0, 1)), abstracted_axes=({0: "n"}, {1: "n"}))
    g_ck = qjit(grad(_scan_loss(ck), argnums=(0, 1)), abstracted_axes=({0: "n"}, {1: "n"}))
    for n in (0, 1, 3):
        c0, xs = np.linspace(0.1, 0.9, n), np.linspace(-1.0, 1.0, 4 * n).reshape(4, n)
        eager = grad(_scan_loss(ck), argnums=(0, 1))(c0, xs)
        for got, want in zip(eager, grad(_scan_loss(_step), argnums=(0, 1))(c0, xs)):
            np.testing.assert_array_equal(got, want)
        for got, want in zip(g_ck(c0, xs), g_plain(c0, xs)):
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
        if n:
            np.testing.assert_allclose(eager[0], fd_grad(lambda c: _np_scan_loss(c, xs), c0), rtol=1e-5, atol=1e-7)


def test_fori_loop_and_for_loop_of_a_checkpointed_body():
    body = lambda c: jnp.sin(c) * c + 0.5
    ck = dynjax.checkpoint(body)

    def fori(b):
        return lambda x: jnp.sum(lax.fori_loop(0, 3, lambda i, c: b(c), x))

    def catalyst(b):
        def f(x):
            @dynjax.for_loop(0, 3, 1)
            def loop(i, c):
                return b(c)
            return jnp.sum(loop(x))
        return f
    for make in (fori, catalyst):
        q_plain = qjit(grad(make(body)), abstracted_axes=({0: "n"},))
        q_ck = qjit(grad(make(ck)), abstracted_axes=({0: "n"},))
        for n in (0, 1, 4):
            x = np.linspace(0.2, 1.2, n)
            np.testing.assert_array_equal(grad(make(ck))(x), grad(make(body))(x))
            np.testing.assert_allclose(q_ck(x), q_plain(x), rtol=1e-13, atol=1e-15)
            np.testing.assert_allclose(q_ck(x), grad(make(body))(x), rtol=1e-13, atol=1e-15)


def test_checkpoint_around_a_loop_and_nested_checkpoints():
    def f(x):
        inner = dynjax.checkpoint(lambda c: jnp.cos(c) * c)
        return jnp.sum(lax.fori_loop(0, 2, lambda i, c: inner(jnp.sin(c)), x) * x)
    outer = dynjax.checkpoint(f, policy=cp.dots_saveable)
    x = np.linspace(-1.0, 1.0, 5)
    np.testing.assert_array_equal(grad(outer)(x), grad(f)(x))
    np.testing.assert_allclose(qjit(grad(outer))(x), qjit(grad(f))(x), rtol=1e-13)
    np.testing.assert_allclose(grad(grad(lambda s: outer(x * s)))(0.7), grad(grad(lambda s: f(x * s)))(0.7),
                               rtol=1e-13)


def test_cond_inside_and_while_loop_in_reverse_mode():
    f = lambda x: lax.cond(jnp.sum(x) > 0, lambda v: jnp.sin(v) * v, lambda v: jnp.cos(v), x)
    ck = dynjax.checkpoint(f)
    total = lambda g: (lambda v: jnp.sum(g(v)))
    q = qjit(grad(total(ck)), abstracted_axes=({0: "n"},))
    for x in (np.linspace(-1.0, 2.0, 4), np.linspace(-2.0, 0.5, 3), np.array([-0.5])):
        np.testing.assert_array_equal(grad(total(ck))(x), grad(total(f))(x))
        want = np.sin(x) + x * np.cos(x) if np.sum(x) > 0 else -np.sin(x)
        np.testing.assert_allclose(q(x), want, rtol=1e-13, atol=1e-15)
    w = dynjax.checkpoint(lambda v: lax.while_loop(lambda c: jnp.sum(c) < 10.0, lambda c: c * 2.0, v))
    x = np.array([2.0, 3.0])
    np.testing.assert_array_equal(jvp(w, (x,), (np.ones(2),))[1], np.full(2, 2.0))
    with pytest.raises(TypeError, match="reverse-mode differentiation .* of a while_loop"):
        grad(total(w))(x)


# ----------------------------------------------------------------------------------------------
# Compositions: every order of jvp / vjp / grad / vmap / qjit, with the checkpoint inside
# ----------------------------------------------------------------------------------------------
def base(x):
    """f64[n] -> f64[n], elements coupled through a sum."""
    return jnp.sin(x) * x + jnp.sum(jnp.cos(x)) * x


WRAP = {
    "jvp": lambda f: lambda x: jvp(f, (x,), (jnp.cos(x),))[1],
    "vjp": lambda f: lambda x: vjp(f, x)[1](jnp.sin(x))[0],
    "grad": lambda f: lambda x: grad(lambda y: jnp.sum(f(y) ** 2))(x),
    "vmap": lambda f: lambda x: jnp.sum(vmap(f)(jnp.stack([x, x * 0.5])), axis=0),
    "qjit": lambda f: qjit(f, abstracted_axes=({0: "n"},)),
    "ck": lambda f: dynjax.checkpoint(f),
}

ORDERS = [list(o) for o in itertools.permutations(["jvp", "vjp", "grad", "vmap", "qjit"], 2)]
ORDERS += [["grad", "grad"], ["jvp", "jvp"], ["vjp", "vjp"]]
# the checkpoint innermost, between the two, or outermost
CASES = [o[:k] + ["ck"] + o[k:] for o in ORDERS for k in range(3)]


def _compose(names, f):
    for name in reversed(names):   # names[0] is the outermost
        f = WRAP[name](f)
    return f


@pytest.mark.parametrize("order", CASES, ids=["-".join(c) for c in CASES])
def test_every_order_of_transformations(order):
    with_ck = _compose(order, base)
    without = _compose([n for n in order if n != "ck"], base)
    # under qjit the sizes are symbolic: one trace serves every size
    sizes = (0, 1, 3) if order[0] == "qjit" else (3,)
    for n in sizes:
        x = np.linspace(-0.8, 1.1, n)
        np.testing.assert_allclose(with_ck(x), without(x), rtol=1e-13, atol=1e-14)
    outer = qjit(with_ck, abstracted_axes=({0: "n"},))
    for n in (1, 4):
        x = np.linspace(-0.8, 1.1, n)
        np.testing.assert_allclose(outer(x), without(x), rtol=1e-12, atol=1e-13)


def test_grad_of_grad_and_vmap_of_grad_against_finite_differences():
    f = dynjax.checkpoint(lambda x: jnp.sin(x) ** 3, policy=cp.dots_saveable)
    d1 = grad(f)
    d2 = grad(d1)
    for x in (0.3, -1.2):
        np.testing.assert_allclose(d2(x), fd_grad(lambda v: 3 * np.sin(v) ** 2 * np.cos(v), np.array(x)),
                                   rtol=1e-5)
    xs = np.linspace(-1.0, 1.0, 5)
    np.testing.assert_allclose(qjit(vmap(d1))(xs), 3 * np.sin(xs) ** 2 * np.cos(xs), rtol=1e-13)
    np.testing.assert_allclose(vmap(d2)(xs), 6 * np.sin(xs) * np.cos(xs) ** 2 - 3 * np.sin(xs) ** 3,
                               rtol=1e-12)


def test_jacobians_hessian_and_linearize():
    f = lambda x: jnp.sin(x) * jnp.sum(x ** 2)
    ck = dynjax.checkpoint(f)
    for n in (1, 4):
        x = np.linspace(0.1, 1.0, n)
        for make in (dynjax.jacrev, dynjax.jacfwd, dynjax.hessian):
            want = make(f)(x)
            np.testing.assert_array_equal(make(ck)(x), want)
            np.testing.assert_allclose(qjit(make(ck), abstracted_axes=({0: "n"},))(x), want, rtol=1e-13,
                                       atol=1e-15)
        t = np.cos(x)
        np.testing.assert_array_equal(dynjax.linearize(ck, x)[1](t), dynjax.linearize(f, x)[1](t))
    x = np.linspace(0.1, 1.0, 3)
    jac = 2 * np.outer(np.sin(x), x) + np.diag(np.cos(x) * np.sum(x ** 2))
    np.testing.assert_allclose(dynjax.jacrev(ck)(x), jac, rtol=1e-13)


# ----------------------------------------------------------------------------------------------
# checkpoint_name is the identity under every transformation
# ----------------------------------------------------------------------------------------------
def test_checkpoint_name_is_transparent():
    x = np.linspace(-1.0, 1.0, 4)
    named = lambda v: checkpoint_name(jnp.sin(v), "s") * 2.0
    np.testing.assert_array_equal(named(x), np.sin(x) * 2.0)
    np.testing.assert_array_equal(grad(lambda v: jnp.sum(named(v)))(x), 2.0 * np.cos(x))
    np.testing.assert_array_equal(vmap(named)(np.stack([x, x])), np.stack([np.sin(x) * 2.0] * 2))
    np.testing.assert_array_equal(jvp(named, (x,), (np.ones(4),))[1], 2.0 * np.cos(x))
    np.testing.assert_allclose(qjit(named, abstracted_axes=({0: "n"},))(x), named(x), rtol=1e-14)
    tree = checkpoint_name({"p": x, "q": (np.float64(2.0),)}, "t")
    np.testing.assert_array_equal(tree["p"], x)
    assert float(tree["q"][0]) == 2.0
    assert "name[name='s']" in str(dynjax.make_jaxpr(named)(x))


# ----------------------------------------------------------------------------------------------
# jax's jax.checkpoint on the same program
# ----------------------------------------------------------------------------------------------
def test_matches_jax_checkpoint():
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jjnp
    from jax.ad_checkpoint import checkpoint_name as jname

    def make(np_, lax_, ck, name, policies):
        def step(c, w):
            a = name(np_.sin(c @ w), "a")
            return np_.tanh(a) * c + 0.1, np_.sum(a)
        step = ck(step, policy=policies.save_only_these_names("a"))
        return lambda c, ws: np_.sum(lax_.scan(step, c, ws)[0] ** 2)

    f_dj = make(jnp, lax, dynjax.checkpoint, checkpoint_name, cp)
    f_jx = make(jjnp, jax.lax, jax.checkpoint, jname, jax.checkpoint_policies)
    rng = np.random.default_rng(7)
    c, ws = rng.normal(size=3), rng.normal(size=(4, 3, 3)) / 3
    want = jax.grad(f_jx, argnums=(0, 1))(c, ws)
    for got in (grad(f_dj, argnums=(0, 1))(c, ws), qjit(grad(f_dj, argnums=(0, 1)))(c, ws)):
        for g, e in zip(got, want):
            np.testing.assert_allclose(g, np.asarray(e), rtol=1e-12, atol=1e-14)


# ----------------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------------
def test_errors_name_the_argument():
    with pytest.raises(TypeError, match="checkpoint: the first argument must be a function"):
        dynjax.checkpoint(3)
    with pytest.raises(TypeError, match="policy must be None or a function"):
        dynjax.checkpoint(jnp.sin, policy="dots")
    with pytest.raises(TypeError, match="static_argnums must"):
        dynjax.checkpoint(jnp.sin, static_argnums="0")
    with pytest.raises(ValueError, match="static_argnums entry 2 is out of range for 1"):
        dynjax.checkpoint(jnp.sin, static_argnums=2)(1.0)
    with pytest.raises(TypeError, match="argument leaf 1 is a str.*static_argnums"):
        dynjax.checkpoint(lambda x, s: x)(1.0, "a")
    with pytest.raises(TypeError, match="output 0 of the checkpointed function has a dimension computed"):
        qjit(lambda x: dynjax.checkpoint(lambda v: v[v > 0])(x), abstracted_axes=({0: "n"},))(np.ones(3))
    with pytest.raises(TypeError, match="checkpoint: output leaf 0 is a str, not an array or a scalar$"):
        dynjax.checkpoint(lambda x: "a")(1.0)
    with pytest.raises(TypeError, match="checkpoint_name: a leaf of x is a str"):
        checkpoint_name("s", "a")
    with pytest.raises(TypeError, match="checkpoint_name: name must be hashable"):
        checkpoint_name(1.0, ["a"])
    with pytest.raises(TypeError, match="save_from_both_policies: policy_2"):
        cp.save_from_both_policies(cp.dots_saveable, 1)
