"""``vmap``'s options as JAX documents them: ``in_axes`` / ``out_axes`` as pytree prefixes with
``None`` leaves, dicts and negative axes, ``axis_size``, ``out_axes=None``, functions returning
constants, ``axis_name`` / ``spmd_axis_name``, and JAX's errors (types and messages naming the
arguments). Each option is checked against numpy (a loop over the batch), eagerly, inside
``qjit`` with a dynamic batch size (0 and 1 included), composed with grad / jvp / vjp in both
orders, and against jax where it is installed (the test extra)."""
import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp

try:
    import jax
    jax.config.update("jax_enable_x64", True)
except ImportError:   # pragma: no cover - jax is a test extra: the comparisons below need it
    jax = None


def members(fun, in_axes, out_axes, args, size):
    """The reference: ``fun`` called once per member with numpy, stacked along out_axes."""
    in_leaves, in_tree = dynjax.tree_util.tree_flatten(args)
    axes = flat_axes(in_axes, args)
    results = []
    for i in range(size):
        member = [np.take(x, i, axis=a) if a is not None else x for x, a in zip(in_leaves, axes)]
        results.append(fun(*dynjax.tree_util.tree_unflatten(in_tree, member)))
    out_leaves_per, out_tree = zip(*[dynjax.tree_util.tree_flatten(r) for r in results]) if results else ((), None)
    if out_tree is None:
        return None
    o_axes = flat_axes(out_axes, results[0])
    stacked = []
    for k, ax in enumerate(o_axes):
        column = [np.asarray(leaves[k]) for leaves in out_leaves_per]
        stacked.append(column[0] if ax is None else np.stack(column, axis=ax))
    return dynjax.tree_util.tree_unflatten(out_tree[0], stacked)


def flat_axes(spec, value):
    """One axis per leaf of ``value`` from the prefix ``spec`` (the reference's own reading)."""
    if spec is None or isinstance(spec, int):
        return [spec] * len(dynjax.tree_util.tree_leaves(value))
    if isinstance(spec, dict):
        return [a for k in sorted(value) for a in flat_axes(spec[k], value[k])]
    return [a for s, v in zip(spec, value) for a in flat_axes(s, v)]


def assert_tree_close(got, want):
    g_leaves, g_tree = dynjax.tree_util.tree_flatten(got)
    w_leaves, w_tree = dynjax.tree_util.tree_flatten(want)
    assert g_tree == w_tree
    for g, w in zip(g_leaves, w_leaves):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-14)


def make_args(n, rng):
    return (rng.normal(size=(3, n)),                               # batched on axis 1 (or -1)
            {"w": rng.normal(size=(n, 2)), "b": rng.normal(size=2)},   # w batched, b shared
            1.5)                                                   # a shared Python scalar


def body(np_):
    def f(x, p, s):
        y = np_.sum(x * s) + p["w"] @ p["b"]
        return {"y": y, "pair": (x * p["w"][0], p["b"] * 2.0)}
    return f


IN_AXES = [(1, {"w": 0, "b": None}, None), (-1, {"w": 0, "b": None}, None)]
OUT_AXES = [0, {"y": 0, "pair": (-1, None)}, {"y": 0, "pair": (1, None)}]


@pytest.mark.parametrize("out_axes", OUT_AXES, ids=str)
@pytest.mark.parametrize("in_axes", IN_AXES, ids=str)
def test_axes_prefixes(in_axes, out_axes):
    rng = np.random.default_rng(1)
    f = body(jnp)
    fn = dynjax.vmap(f, in_axes=in_axes, out_axes=out_axes)
    if out_axes == 0:   # out_axes=0 maps every output; p['b'] * 2 is broadcast over the batch
        ref_axes = {"y": 0, "pair": (0, 0)}
    else:
        ref_axes = out_axes
    for n in (0, 1, 4):
        args = make_args(n, rng)
        want = members(body(np), in_axes, ref_axes, args, n)
        if n == 0:   # no member to call the reference with: the shapes only
            got = fn(*args)
            assert np.shape(got["y"]) == (0,)
            continue
        assert_tree_close(fn(*args), want)
        if jax is not None:
            assert_tree_close(jax.vmap(body(jax.numpy), in_axes=in_axes, out_axes=out_axes)(*args),
                              want)


def test_axes_inside_qjit_dynamic_batch():
    """A dynamic batch size: one trace for every size; compiled == eager == numpy."""
    in_axes, out_axes = IN_AXES[1], OUT_AXES[1]
    fn = dynjax.vmap(body(jnp), in_axes=in_axes, out_axes=out_axes)
    # (a dict argument's leaves in key order: b, w)
    compiled = dynjax.qjit(fn, abstracted_axes=({1: "n"}, (None, {0: "n"}), None))
    rng = np.random.default_rng(2)
    for n in (0, 1, 5):
        args = make_args(n, rng)
        got = compiled(*args)
        assert_tree_close(got, fn(*args))
        if n:
            assert_tree_close(got, members(body(np), in_axes, out_axes, args, n))
    assert compiled.cache_info()["traces"] == 1


def test_axis_size_constants_and_scalars():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(dynjax.vmap(lambda: 1.0, axis_size=4, in_axes=())(), np.ones(4))
    out = dynjax.vmap(lambda x, c: (x.sum() + c, 7), in_axes=(0, None))(x, 2.0)
    np.testing.assert_allclose(out[0], [5.0, 14.0])
    np.testing.assert_array_equal(out[1], [7, 7])   # a Python scalar result, broadcast
    out = dynjax.vmap(lambda c: c * 2.0, in_axes=None, axis_size=3)(np.float64(1.5))
    np.testing.assert_allclose(out, [3.0, 3.0, 3.0])
    c = np.arange(3.0)
    out = dynjax.vmap(lambda x: (x, jnp.sum(c) * 2.0), out_axes=(1, None))(x)   # an unbatched output
    np.testing.assert_array_equal(out[0], x.T)
    assert out[1] == 6.0
    # axis_size under qjit from an int argument: a dynamic batch of constants
    f = dynjax.qjit(lambda n, c: dynjax.vmap(lambda c: c + 1.0, in_axes=None, axis_size=n)(c))
    for n in (0, 1, 3):
        np.testing.assert_allclose(f(n, 2.0), np.full(n, 3.0))
    if jax is not None:
        np.testing.assert_array_equal(jax.vmap(lambda x, c: (x.sum() + c, 7), in_axes=(0, None))(x, 2.0)[1],
                                      [7, 7])


def test_keyword_arguments_are_mapped_on_axis_0():
    x, y = np.arange(3.0), np.arange(6.0).reshape(3, 2)
    out = dynjax.vmap(lambda x, y: x * y.sum())(x, y=y)
    np.testing.assert_allclose(out, x * y.sum(axis=1))


def test_axis_name_and_spmd_axis_name_are_accepted():
    x = np.arange(6.0).reshape(3, 2)
    f = dynjax.vmap(lambda v: v.sum(), axis_name="batch", spmd_axis_name="devices")
    assert f.axis_name == "batch" and f.spmd_axis_name == "devices"
    np.testing.assert_allclose(f(x), x.sum(axis=1))
    with pytest.raises(NotImplementedError, match="sum_match"):
        dynjax.vmap(jnp.sin, sum_match=True)


# ----------------------------------------------------------------------------------------------
# Composition with the differentiation transformations, in both orders (generated)
# ----------------------------------------------------------------------------------------------
def loss(np_):
    def f(x, w):
        return np_.sum(np_.sin(x) * w) + np_.sum(x ** 2) * 0.5
    return f


def expected_grad(x, w):
    return np.cos(x) * w + x


ORDERS = ["vmap(grad)", "grad(sum vmap)", "vmap(jvp)", "jvp(vmap)", "vmap(vjp)", "vjp(vmap)"]


def compose(order, mod):
    """Per-member gradient of loss over rows of x (batched on axis -1, out_axes=1), w shared."""
    f = loss(mod.numpy)
    vm = mod.vmap
    if order == "vmap(grad)":
        return vm(mod.grad(f), in_axes=(-1, None), out_axes=1)
    if order == "grad(sum vmap)":
        return mod.grad(lambda x, w: mod.numpy.sum(vm(f, in_axes=(-1, None))(x, w)))
    if order == "vmap(jvp)":   # the directional derivative along ones, per member
        return vm(lambda x, w: mod.jvp(lambda x: f(x, w), (x,), (mod.numpy.ones_like(x),))[1],
                  in_axes=(-1, None))
    if order == "jvp(vmap)":
        return lambda x, w: mod.jvp(lambda x: vm(f, in_axes=(-1, None))(x, w), (x,),
                                    (mod.numpy.ones_like(x),))[1]
    if order == "vmap(vjp)":
        return vm(lambda x, w: mod.vjp(lambda x: f(x, w), x)[1](1.0)[0], in_axes=(-1, None), out_axes=1)
    if order == "vjp(vmap)":
        def g(x, w):
            out, pull = mod.vjp(lambda x: vm(f, in_axes=(-1, None))(x, w), x)
            return pull(mod.numpy.ones_like(out))[0]
        return g
    raise AssertionError(order)


def expected(order, x, w):
    g = expected_grad(x, w[:, None])   # x: (m, n) with the batch on axis 1
    if order in ("vmap(jvp)", "jvp(vmap)"):
        return g.sum(axis=0)
    return g


@pytest.mark.parametrize("order", ORDERS)
def test_composition_orders(order):
    rng = np.random.default_rng(7)
    fn = compose(order, dynjax)
    compiled = dynjax.qjit(fn, abstracted_axes=({1: "n"}, None))
    w = rng.normal(size=3)
    for n in (0, 1, 4):
        x = rng.normal(size=(3, n))
        want = expected(order, x, w)
        np.testing.assert_allclose(fn(x, w), want, rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(compiled(x, w), want, rtol=1e-13, atol=1e-14)
        if jax is not None and n == 4:
            np.testing.assert_allclose(compose(order, jax)(x, w), want, rtol=1e-13, atol=1e-14)
    assert compiled.cache_info()["traces"] == 1


# ----------------------------------------------------------------------------------------------
# Errors: JAX's types and messages
# ----------------------------------------------------------------------------------------------
X = np.ones((3, 2))
ERRORS = [
    ("sizes", lambda m: m.vmap(lambda a, b: a + b)(np.ones(3), np.ones(2)), ValueError,
     "inconsistent sizes for array axes to be mapped:\n  * one axis had size 3: axis 0 of argument a of type f64[3];\n"
     "  * one axis had size 2: axis 0 of argument b of type f64[2]"),
    ("sizes_most", lambda m: m.vmap(lambda a, b, c: a + b + c)(np.ones(3), np.ones(3), np.ones(2)), ValueError,
     "most axes (2 of them) had size 3, e.g. axis 0 of argument a"),
    ("axis_size", lambda m: m.vmap(lambda a: a, axis_size=4)(X), ValueError, "the `axis_size` argument was 4"),
    ("kwargs_sizes", lambda m: m.vmap(lambda a, b: a + b)(a=np.ones(3), b=np.ones(2)), ValueError,
     "axis 0 of kwargs['b']"),
    ("no_axes", lambda m: m.vmap(lambda a: a, in_axes=None)(X), ValueError,
     "at least one non-None value in in_axes or axis_size must be specified"),
    ("len", lambda m: m.vmap(lambda a, b: a, in_axes=(0, None, 0))(X, X), ValueError,
     "len(in_axes)=3, len(args)=2"),
    ("rank", lambda m: m.vmap(lambda a: a, in_axes=2)(X), ValueError,
     "rank should be at least 3, but is only 2"),
    ("scalar", lambda m: m.vmap(lambda a: a)(1.0), ValueError, "rank should be at least 1, but is only 0"),
    ("spec_type", lambda m: m.vmap(lambda a: a, in_axes=(0.5,))(X), TypeError, "(nested) container"),
    ("spec_top", lambda m: m.vmap(lambda a: a, in_axes=0.5)(X), TypeError, "in_axes must be an int, None"),
    ("spec_dict_top", lambda m: m.vmap(lambda d: d["a"], in_axes={"a": 0})({"a": X}), TypeError,
     "in_axes must be an int, None"),
    ("out_none", lambda m: m.vmap(lambda a: a, out_axes=None)(X), ValueError,
     "got axis spec None but output was batched on axis 0"),
    ("prefix", lambda m: m.vmap(lambda a, b: a, in_axes=(0, {"k": 0}))(X, X), ValueError,
     "in_axes specification must be a tree prefix"),
    ("out_prefix", lambda m: m.vmap(lambda a: {"p": a, "q": a}, out_axes={"p": 0})(X), ValueError,
     "out_axes specification must be a tree prefix"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_as_jax(case):
    _, call, kind, text = case
    with pytest.raises(kind) as info:
        call(dynjax)
    assert text in str(info.value), str(info.value)
    if jax is not None:
        with pytest.raises(kind):
            call(jax)
