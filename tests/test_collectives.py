"""Collectives over named axes (``dynjax.lax.psum`` ... under ``vmap(axis_name=...)``),
against jax on the same programs and against numpy, eagerly and inside ``qjit`` with a
dynamic batch; nested and tuple axis names; jvp and grad through them (JAX's transposes)."""
import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import lax

import jax  # noqa: E402  (a test extra: the comparison oracle)
jax.config.update("jax_enable_x64", True)
jlax = jax.lax

RNG = np.random.default_rng(7)
PERM = [(0, 1), (1, 2), (2, 0)]

# name -> fn(lax_module, x) for one member's x (vmapped over axis "i", 3 members, member shape (3, 2))
PROGRAMS = {
    "psum": lambda L, x: L.psum(x, "i"),
    "psum_const": lambda L, x: L.psum(2.5, "i") + x,
    "psum_int": lambda L, x: L.psum(1, "i") * x,
    "pmean": lambda L, x: L.pmean(x * x, "i"),
    "pmax": lambda L, x: L.pmax(x, "i"),
    "pmin": lambda L, x: L.pmin(x, "i"),
    "all_gather": lambda L, x: L.all_gather(x, "i"),
    "all_gather_axis1": lambda L, x: L.all_gather(x, "i", axis=1),
    "all_gather_tiled": lambda L, x: L.all_gather(x, "i", tiled=True),
    "all_gather_tiled_axis1": lambda L, x: L.all_gather(x, "i", axis=1, tiled=True),
    "psum_scatter": lambda L, x: L.psum_scatter(x, "i"),
    "psum_scatter_dim1_tiled": lambda L, x: L.psum_scatter(L.concatenate([x, x, x], 1), "i",
                                                           scatter_dimension=1, tiled=True),
    "all_to_all": lambda L, x: L.all_to_all(x, "i", 0, 1),
    "all_to_all_tiled": lambda L, x: L.all_to_all(L.concatenate([x, x], 0), "i", 0, 1, tiled=True),
    "ppermute": lambda L, x: L.ppermute(x, "i", PERM),
    "pshuffle": lambda L, x: L.pshuffle(x, "i", [2, 0, 1]),
    "axis_index": lambda L, x: x * L.axis_index("i"),
}


def _run(L, vmap, name, xs):
    return vmap(lambda x: PROGRAMS[name](L, x), axis_name="i")(xs)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_collective_under_vmap_matches_jax(name):
    xs = RNG.standard_normal((3, 3, 2))
    want = np.asarray(_run(jlax, jax.vmap, name, xs))
    got = _run(lax, dynjax.vmap, name, xs)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    compiled = dynjax.qjit(lambda x: _run(lax, dynjax.vmap, name, x))(xs)
    np.testing.assert_allclose(compiled, want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_a_dynamic_batch_is_one_trace(n):
    """Normalizing by the batch's statistics inside qjit: the batch size is abstract."""
    f = dynjax.qjit(lambda x: dynjax.vmap(
        lambda r: (r - lax.pmean(r, "b")) / (lax.pmax(jnp.abs(r), "b") + 1.0) + lax.axis_index("b"),
        axis_name="b")(x), abstracted_axes=({0: "n"},))
    x = RNG.standard_normal((n, 4))
    want = (x - x.mean(0)) / (np.abs(x).max(0) + 1.0) + np.arange(n)[:, None]
    np.testing.assert_allclose(f(x), want, rtol=1e-13)
    for m in (1, 3, 4):
        f(RNG.standard_normal((m, 4)))
    assert f.traces == 1


def test_all_gather_over_two_names():
    """Members ordered i-major (jax's vmap rule refuses a tuple of names here)."""
    xs = RNG.standard_normal((2, 3, 4))
    got = dynjax.vmap(dynjax.vmap(lambda x: lax.all_gather(x, ("i", "j")), axis_name="j"), axis_name="i")(xs)
    want = np.broadcast_to(xs.reshape(6, 4), (2, 3, 6, 4))
    np.testing.assert_array_equal(got, want)
    tiled = dynjax.vmap(dynjax.vmap(lambda x: lax.all_gather(x, ("i", "j"), tiled=True), axis_name="j"),
                        axis_name="i")(xs)
    np.testing.assert_array_equal(tiled, np.broadcast_to(xs.reshape(24), (2, 3, 24)))


def test_psum_scatter_over_two_names():
    """Member (i, j) keeps block i * 3 + j of the sum over both axes (jax's vmap rule
    refuses a tuple of names here)."""
    xs = RNG.standard_normal((2, 3, 6, 2))
    got = dynjax.vmap(dynjax.vmap(lambda x: lax.psum_scatter(x, ("i", "j")), axis_name="j"), axis_name="i")(xs)
    total = xs.sum(axis=(0, 1))
    want = np.stack([np.stack([total[i * 3 + j] for j in range(3)]) for i in range(2)])
    np.testing.assert_allclose(got, want, rtol=1e-13)


@pytest.mark.parametrize("tiled, split, concat, names", [(True, 0, 1, ("i", "j")), (True, 0, 0, ("i", "j")),
                                                          (False, 0, 1, ("j", "i"))])
def test_all_to_all_over_two_names_matches_jax(tiled, split, concat, names):
    """The members are the product of the axes, the first name major (also ("j", "i"))."""
    xs = RNG.standard_normal((2, 3, 12 if tiled else 6, 2))

    def run(L, vmap):
        member = lambda x: L.all_to_all(x, names, split, concat, tiled=tiled)   # noqa: E731
        return vmap(vmap(member, axis_name="j"), axis_name="i")(xs)
    np.testing.assert_array_equal(run(lax, dynjax.vmap), np.asarray(run(jlax, jax.vmap)))


@pytest.mark.parametrize("names", [("i", "j"), ("j", "i")])
def test_ppermute_over_two_names_uses_linear_indices(names):
    """Pairs of linear indices over the names, the first major; members receiving nothing
    get zeros (jax's vmap rule refuses a partial permutation; numpy is the oracle)."""
    xs = RNG.standard_normal((2, 3, 2))
    perm = [(0, 5), (5, 1), (1, 0), (3, 2)]
    got = dynjax.vmap(dynjax.vmap(lambda r: lax.ppermute(r, names, perm), axis_name="j"), axis_name="i")(xs)
    members = xs if names == ("i", "j") else xs.transpose(1, 0, 2)
    flat, want = members.reshape(6, 2), np.zeros((6, 2))
    for src, dst in perm:
        want[dst] = flat[src]
    want = want.reshape(members.shape)
    np.testing.assert_array_equal(got, want if names == ("i", "j") else want.transpose(1, 0, 2))


def test_a_partial_permutation_leaves_zeros():
    """JAX's documented ppermute semantics (its vmap rule asserts a full permutation)."""
    xs = RNG.standard_normal((4, 2))
    got = dynjax.vmap(lambda x: lax.ppermute(x, "i", [(0, 2), (3, 0)]), axis_name="i")(xs)
    np.testing.assert_array_equal(got, np.stack([xs[3], np.zeros(2), xs[0], np.zeros(2)]))


def test_nested_and_tuple_axis_names():
    xs = RNG.standard_normal((2, 3, 4))

    def body(L):
        def inner(x):
            s = L.psum(x, ("i", "j"))
            idx = L.axis_index(("i", "j"))
            return s, idx, L.psum(x, "i") - L.psum(x, "j"), L.all_gather(L.all_gather(x, "j"), "i")
        return inner
    want = jax.vmap(jax.vmap(body(jlax), axis_name="j"), axis_name="i")(xs)
    got = dynjax.vmap(dynjax.vmap(body(lax), axis_name="j"), axis_name="i")(xs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-13)


GRADS = {
    "psum_sq": lambda L, x: L.psum(x * x, "i").sum(),
    "all_gather_weighted": lambda L, x: (L.all_gather(x, "i") * np.arange(6.0).reshape(3, 1, 2)).sum(),
    "psum_scatter": lambda L, x: (L.psum_scatter(x, "i") ** 2).sum(),
    "all_to_all": lambda L, x: (L.all_to_all(x, "i", 0, 1) * np.arange(6.0).reshape(3, 2)[:, :, None]).sum(),
    "ppermute": lambda L, x: (L.ppermute(x, "i", PERM) * (L.axis_index("i") + 1.0)).sum(),
    "pmean_sin": lambda L, x: jnp_or(L).sin(L.pmean(x, "i")).sum(),
}


#: jax 0.10.2's vmap of grad through all_to_all fails inside jax (a cotangent of the wrong
#: shape): checked against finite differences instead
JAX_CANNOT_TRANSPOSE = {"all_to_all"}


def jnp_or(L):
    return jax.numpy if L is jlax else jnp


@pytest.mark.parametrize("name", list(GRADS))
def test_grad_and_jvp_through_collectives_match_jax(name):
    xs = RNG.standard_normal((3, 3, 2))
    ts = RNG.standard_normal((3, 3, 2))
    fn = GRADS[name]
    got = dynjax.vmap(dynjax.grad(lambda x: fn(lax, x)), axis_name="i")(xs)
    if name in JAX_CANNOT_TRANSPOSE:
        # as JAX defines vmap(grad) through collectives (psum transposes to psum): the
        # gradient of the sum of every member's output
        eps, want = 1e-6, np.zeros_like(xs)
        per_member = lambda x: dynjax.vmap(lambda y: fn(lax, y), axis_name="i")(x)  # noqa: E731
        for k in np.ndindex(*xs.shape):
            e = np.zeros_like(xs)
            e[k] = eps
            want[k] = (per_member(xs + e).sum() - per_member(xs - e).sum()) / (2 * eps)
        tol = dict(rtol=1e-6, atol=1e-7)
    else:
        want = np.asarray(jax.vmap(jax.grad(lambda x: fn(jlax, x)), axis_name="i")(xs))
        tol = dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, want, **tol)
    compiled = dynjax.qjit(lambda x: dynjax.vmap(dynjax.grad(lambda y: fn(lax, y)), axis_name="i")(x))(xs)
    np.testing.assert_allclose(compiled, want, **tol)
    # jvp of the vmapped function, and the same by finite differences of the whole program
    whole = lambda L, vm: (lambda x: vm(lambda y: fn(L, y), axis_name="i")(x))  # noqa: E731
    _, dt = dynjax.jvp(whole(lax, dynjax.vmap), (xs,), (ts,))
    if name not in JAX_CANNOT_TRANSPOSE:
        _, jt = jax.jvp(whole(jlax, jax.vmap), (xs,), (ts,))
        np.testing.assert_allclose(dt, np.asarray(jt), rtol=1e-12, atol=1e-12)
    eps = 1e-6
    f = whole(lax, dynjax.vmap)
    fd = (f(xs + eps * ts) - f(xs - eps * ts)) / (2 * eps)
    np.testing.assert_allclose(dt, fd, rtol=1e-6, atol=1e-7)


def test_errors_as_jax():
    with pytest.raises(NameError, match="unbound axis name"):
        lax.psum(1.0, "i")
    with pytest.raises(NameError, match="'k'"):
        dynjax.vmap(lambda x: lax.psum(x, "k"), axis_name="i")(np.ones(3))
    with pytest.raises(NotImplementedError, match="pmax"):
        dynjax.vmap(dynjax.grad(lambda x: lax.pmax(x, "i")), axis_name="i")(np.ones(3))
    with pytest.raises(ValueError, match="perm"):
        dynjax.vmap(lambda x: lax.ppermute(x, "i", [(0, 1), (1, 1)]), axis_name="i")(np.ones(3))
    with pytest.raises(ValueError, match="axis size"):
        dynjax.vmap(lambda x: lax.ppermute(x, "i", [(0, 5)]), axis_name="i")(np.ones(3))
    with pytest.raises(ValueError, match="pshuffle"):
        dynjax.vmap(lambda x: lax.pshuffle(x, "i", [0, 0, 1]), axis_name="i")(np.ones(3))
    with pytest.raises(ValueError, match="psum_scatter"):
        dynjax.vmap(lambda x: lax.psum_scatter(x, "i"), axis_name="i")(np.ones((3, 4)))
    with pytest.raises(ValueError, match="all_to_all: split_axis 0 of length 5"):
        dynjax.vmap(dynjax.vmap(lambda x: lax.all_to_all(x, ("i", "j"), 0, 0, tiled=True), axis_name="j"),
                    axis_name="i")(np.ones((2, 2, 5)))
    assert dynjax.vmap(lambda x: lax.axis_size("i") * x, axis_name="i")(np.ones(4)).tolist() == [4.0] * 4


DYNAMIC = {   # name -> (member function, abstracted axes of the batch)
    "all_gather": (lambda r: lax.all_gather(r, "b").sum(0), ({0: "n"},)),
    "all_gather_tiled": (lambda r: lax.all_gather(r, "b", tiled=True)[:2], ({0: "n"},)),
    "psum": (lambda r: lax.psum(r, "b"), ({0: "n"},)),
    "psum_scatter": (lambda r: lax.psum_scatter(r, "b"), ({0: "n", 1: "n"},)),
    "all_to_all": (lambda r: lax.all_to_all(r, "b", 0, 0), ({0: "n", 1: "n"},)),
    "ppermute": (lambda r: lax.ppermute(r, "b", [(0, 1), (1, 0)]), ({0: "n"},)),
    "axis_index": (lambda r: r * lax.axis_index("b"), ({0: "n"},)),
}


@pytest.mark.parametrize("name", list(DYNAMIC))
def test_every_collective_on_a_dynamic_batch(name):
    """One trace inside qjit for batches of 2, 3 and 5 members, equal to the eager vmap (which
    is checked against jax above); the derivatives of the shape-preserving ones too."""
    member, axes = DYNAMIC[name]
    f = dynjax.qjit(lambda x: dynjax.vmap(member, axis_name="b")(x), abstracted_axes=axes)
    square = len(axes[0]) == 2
    for n in (2, 3, 5):
        x = RNG.standard_normal((n, n if square else 4))
        np.testing.assert_allclose(f(x), dynjax.vmap(member, axis_name="b")(x), rtol=1e-13)
    assert f.traces == 1
    if name in ("psum", "ppermute", "axis_index"):
        loss = lambda r: (member(r) ** 2).sum()  # noqa: E731
        g = dynjax.qjit(lambda x: dynjax.vmap(dynjax.grad(loss), axis_name="b")(x), abstracted_axes=axes)
        for n in (2, 3):
            x = RNG.standard_normal((n, 4))
            np.testing.assert_allclose(g(x), dynjax.vmap(dynjax.grad(loss), axis_name="b")(x), rtol=1e-12)
        assert g.traces == 1


def test_differentiating_a_shape_changing_collective_on_a_dynamic_batch_says_why():
    g = dynjax.qjit(lambda x: dynjax.vmap(dynjax.grad(lambda r: lax.all_gather(r, "b").sum()), axis_name="b")(x),
                    abstracted_axes=({0: "n"},))
    with pytest.raises(NotImplementedError, match="dynamic size"):
        g(np.ones((3, 2)))


INTEGER_PROGRAMS = {   # name -> fn(lax_module, x): the result dtypes of JAX's collectives
    "psum": lambda L, x: L.psum(x, "i"),
    "psum_tuple": lambda L, x: L.psum(x, ("i",)),
    "pmean": lambda L, x: L.pmean(x, "i"),
    "pmax": lambda L, x: L.pmax(x, "i"),
    "pmin": lambda L, x: L.pmin(x, "i"),
    "all_gather": lambda L, x: L.all_gather(x, "i", tiled=True),
    "all_to_all": lambda L, x: L.all_to_all(x, "i", 0, 0, tiled=True),
    "ppermute": lambda L, x: L.ppermute(x, "i", PERM),
}


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int64])
@pytest.mark.parametrize("name", list(INTEGER_PROGRAMS))
def test_boolean_and_integer_operands_as_jax(name, dtype):
    """psum counts booleans (int32), pmean of integers is a float32 (float64 from 64-bit
    integers), the others keep the dtype: eagerly, and compiled with a dynamic batch (jax
    is the oracle, integer overflow included)."""
    xs = (RNG.integers(0, 3, (3, 6)) > 0).astype(dtype) if dtype == np.bool_ else \
        RNG.integers(0, 100, (3, 6)).astype(dtype)
    want = jax.vmap(lambda x: INTEGER_PROGRAMS[name](jlax, x), axis_name="i")(xs)
    f = dynjax.vmap(lambda x: INTEGER_PROGRAMS[name](lax, x), axis_name="i")
    for how, got in (("eager", f(xs)), ("qjit", dynjax.qjit(f, abstracted_axes=({0: "n"},))(xs))):
        assert got.dtype == want.dtype, (how, got.dtype, want.dtype)
        # a mean is correctly rounded here; jax's may be one ulp off (float32)
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-6, err_msg=how)


def test_psum_scatter_of_booleans_is_a_type_error_as_in_jax():
    with pytest.raises(TypeError, match="psum_scatter"):
        dynjax.vmap(lambda x: lax.psum_scatter(x, "i"), axis_name="i")(np.ones((3, 3), bool))
