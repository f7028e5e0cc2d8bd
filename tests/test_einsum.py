"""``diag``, ``diagonal``, ``trace`` and ``einsum`` against numpy.

Every program runs eagerly (dynjax's own composition of lax rules on numpy arrays) and
compiled with ``qjit`` and abstracted axes: axes that share an einsum letter share an axis
name, so one trace serves every size (0 and 1 included). numpy is the oracle for shapes,
dtypes and values; compiled and eager results agree to rounding (reductions may be summed in
a different order). Where dynjax's promotion lattice differs from numpy's (``i32`` with
``f32`` is ``f32`` here, ``f64`` in numpy; see doc/user_guide.md), numpy computes on the
operands cast to dynjax's result dtype.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dynjax
import dynjax.numpy as jnp
from helpers import examples


def _tol(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "biu":
        return 0.0
    return 1e-4 if dtype in (np.float32, np.complex64) else 1e-10


def assert_close(got, want, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    tol = _tol(want.dtype)
    if tol == 0.0:
        np.testing.assert_array_equal(got, want, err_msg=str(what))
    else:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=str(what))


def _values(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind in "iu":
        return rng.integers(0 if dtype.kind == "u" else -4, 5, size=shape).astype(dtype)
    vals = rng.standard_normal(shape)
    if dtype.kind == "c":
        vals = vals + 1j * rng.standard_normal(shape)
    return vals.astype(dtype)


# ----------------------------------------------------------------------------------------------
# diag, diagonal, trace
# ----------------------------------------------------------------------------------------------
def run_checked(fn, ref, arg_sets, axes):
    """``fn`` eagerly and compiled (one trace for all ``arg_sets``) against numpy's ``ref``."""
    compiled = dynjax.qjit(fn, abstracted_axes=axes)
    for args in arg_sets:
        what = [np.shape(a) for a in args]
        want = ref(*args)
        eager = fn(*args)
        assert isinstance(eager, np.ndarray), type(eager)
        got = compiled(*args)
        assert_close(eager, want, ("eager", what))
        assert_close(got, eager, ("compiled vs eager", what))
    assert compiled.cache_info()["traces"] == 1
    return compiled


MATRIX_SHAPES = [(0, 0), (1, 1), (0, 3), (3, 0), (1, 4), (4, 4), (3, 5), (6, 2)]


@pytest.mark.parametrize("k", [0, 1, 2, -1, -3, 7, -7])
def test_diag_of_a_matrix(k):
    mats = [(np.arange(n * m, dtype=np.float64).reshape(n, m) + 1,) for n, m in MATRIX_SHAPES]
    run_checked(lambda a: jnp.diag(a, k), lambda a: np.diag(a, k), mats, {0: "n", 1: "m"})


@pytest.mark.parametrize("k", [0, 1, 3, -1, -2])
def test_diag_of_a_vector(k):
    vecs = [(np.arange(n, dtype=np.int32) + 1,) for n in (0, 1, 4)]
    run_checked(lambda v: jnp.diag(v, k), lambda v: np.diag(v, k), vecs, {0: "n"})


def test_diag_with_a_traced_offset():
    mats = [(np.arange(n * m, dtype=np.float64).reshape(n, m), k)
            for (n, m), k in zip(MATRIX_SHAPES, [0, 1, -1, 2, 5, -2, 3, -4])]
    run_checked(lambda a, k: jnp.diag(a, k), lambda a, k: np.diag(a, k), mats, ({0: "n", 1: "m"}, None))
    run_checked(lambda a, k: jnp.diagonal(a, k), lambda a, k: np.diagonal(a, k), mats,
                ({0: "n", 1: "m"}, None))
    vecs = [(np.arange(n, dtype=np.float32) + 1, k) for n, k in [(0, 2), (1, 0), (3, -2), (4, 1)]]
    run_checked(lambda v, k: jnp.diag(v, k), lambda v, k: np.diag(v, k), vecs, ({0: "n"}, None))


def test_diag_of_a_square_matrix_keeps_the_dim():
    jx = dynjax.make_jaxpr(jnp.diag, abstracted_axes={0: "n", 1: "n"})(np.ones((3, 3)))
    (out,) = jx.jaxpr.outvars
    assert out.aval.shape[0] is jx.jaxpr.invars[0]        # f64[n]: no new size
    assert len(jx.jaxpr.outvars) == 1


@pytest.mark.parametrize("axes", [(0, 1), (1, 0), (1, 2), (2, 0), (-1, -2), (0, -1), (-3, 1)])
@pytest.mark.parametrize("offset", [0, 1, -1, 3])
def test_diagonal_of_3d(axes, offset):
    shapes = [(0, 2, 3), (1, 1, 1), (2, 3, 4), (4, 3, 2), (3, 3, 3)]
    args = [(_values(s, np.float64, i),) for i, s in enumerate(shapes)]
    run_checked(lambda a: jnp.diagonal(a, offset, *axes), lambda a: np.diagonal(a, offset, *axes),
                args, {0: "a", 1: "b", 2: "c"})


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int32, np.int64, np.float32,
                                   np.float64, np.complex64])
def test_trace_dtypes(dtype):
    args = [(_values((n, m), dtype, n + m),) for n, m in MATRIX_SHAPES]
    for offset in (0, 1, -2):
        run_checked(lambda a: jnp.trace(a, offset), lambda a: np.trace(a, offset), args, {0: "n", 1: "m"})
    if np.dtype(dtype).kind != "c":
        run_checked(lambda a: jnp.trace(a, dtype=np.float32), lambda a: np.trace(a, dtype=np.float32), args,
                    {0: "n", 1: "m"})


@pytest.mark.parametrize("axes", [(0, 1), (2, 0), (-1, 1)])
def test_trace_of_3d(axes):
    args = [(_values(s, np.int16, 3),) for s in [(0, 2, 3), (2, 3, 4), (3, 3, 3)]]
    run_checked(lambda a: jnp.trace(a, 1, *axes), lambda a: np.trace(a, 1, *axes), args,
                {0: "a", 1: "b", 2: "c"})


def test_tracer_methods():
    def fn(a):
        return a.diagonal(1), a.trace(-1), a.diagonal(0, 1, 0)

    compiled = dynjax.qjit(fn, abstracted_axes={0: "n", 1: "m"})
    for n, m in [(0, 2), (3, 4), (5, 5)]:
        a = _values((n, m), np.float64, 1)
        for got, want in zip(compiled(a), (a.diagonal(1), a.trace(-1), a.diagonal(0, 1, 0))):
            assert_close(got, want)


def test_diagonal_errors():
    with pytest.raises(ValueError, match="1- or 2-d"):
        jnp.diag(np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="1- or 2-d"):
        jnp.diag(np.float64(1.0))
    with pytest.raises(ValueError, match="at least two dimensions"):
        jnp.diagonal(np.ones(3))
    with pytest.raises(ValueError, match="cannot be the same"):
        jnp.diagonal(np.ones((2, 3)), 0, 1, -1)
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.diagonal(np.ones((2, 3)), 0, 0, 2)
    with pytest.raises(ValueError, match="at least two dimensions"):
        jnp.trace(np.ones(3))
    with pytest.raises(TypeError, match="offset must be an integer"):
        jnp.diag(np.ones(3), 1.5)


def test_grad_of_trace_and_diag():
    def loss(a):
        return jnp.trace(a, 1) + jnp.sum(jnp.diag(jnp.diag(a, -1)) * 2.0)

    g = dynjax.qjit(dynjax.grad(loss), abstracted_axes={0: "n", 1: "m"})
    for n, m in [(3, 4), (4, 2), (1, 1)]:
        a = _values((n, m), np.float64, 0)
        want = np.eye(n, m, 1) + 2.0 * np.eye(n, m, -1)
        assert_close(g(a), want)
        assert_close(dynjax.grad(loss)(a), want)
    assert g.cache_info()["traces"] == 1


# ----------------------------------------------------------------------------------------------
# einsum
# ----------------------------------------------------------------------------------------------
# (subscripts, ellipsis dims per operand or None, dtypes per operand or None)
# An ellipsis spec is a string per operand: an uppercase letter is a dynamic axis named after
# it (size from the letter sizes below), "1" is a static 1 that broadcasts.
CASES = [
    ("ij,jk->ik", None, None),                        # matmul
    ("bij,bjk->bik", None, None),                     # batched matmul
    ("bij,jk->bik", None, None),
    ("ij->ji", None, None),                           # transpose
    ("ijk->kij", None, None),
    ("ij->", None, None),                             # sum
    ("ij->j", None, None),
    ("ii", None, None),                               # trace (implicit)
    ("ii->", None, None),
    ("ii->i", None, None),                            # diagonal
    ("iij->ij", None, None),
    ("iji->j", None, None),
    ("ii,i->i", None, None),
    ("i,j->ij", None, None),                          # outer
    ("ij,kl->ijkl", None, None),
    ("i,i", None, None),                              # inner (implicit)
    ("i,i->", None, None),
    ("ij,ij->ij", None, None),                        # elementwise
    ("ij,ji->", None, None),                          # trace of a product
    ("...ij,...jk->...ik", ("B1", "C"), None),        # broadcast batch
    ("...ij,...jk->...ik", ("BC", ""), None),
    ("...i,...i->...", ("B", "B"), None),
    ("...ii->...i", ("B",), None),
    ("i...->...", ("BC",), None),
    ("ij,jk,kl->il", None, None),                     # chains
    ("ab,bc,cd,de->ae", None, None),
    ("ij,jk,kl", None, None),
    ("ij,jk", None, None),                            # implicit mode
    ("ba", None, None),
    ("Ab,bC", None, None),
    ("ijk,jl->il", None, None),                       # k only in the first operand
    ("i,i,i->i", None, None),                         # one letter across three operands
    ("i,i,i->", None, None),
    ("i,ij,j->", None, None),
    (",->", None, None),                              # scalars
    (",i->i", None, None),
    ("i,->", None, None),
    ("->", None, None),
    ("ij,jk->ik", None, (np.int32, np.float32)),      # mixed dtypes
    ("ij,j->i", None, (np.float64, np.complex128)),
    ("ij,jk->ik", None, (np.complex64, np.complex64)),
    ("i,i->", None, (np.int8, np.int8)),
    ("ij,jk->ik", None, (np.bool_, np.bool_)),
    ("ii,i", None, (np.int64, np.float32)),
]

LETTER_SIZES = [   # one trace serves every row: 0 and 1 included
    lambda i: 0 if i == 0 else 2,
    lambda i: 1,
    lambda i: 2 + i % 3,
    lambda i: 4 - i % 2,
]


def _case_operands(subscripts, ell, dtypes, sizes_of, seed=0):
    """Operands, their abstracted axes, and numpy's reference subscripts for one case."""
    lhs = subscripts.split("->")[0]
    terms = lhs.split(",")
    letters = sorted({c for c in lhs if c.isalpha()} | {c for e in (ell or ()) for c in e if c.isalpha()})
    size = {c: sizes_of(i) for i, c in enumerate(letters)}
    ops, axes = [], []
    for p, term in enumerate(terms):
        shape, names = [], {}
        before, _, after = term.partition("...")
        for c in before:
            names[len(shape)] = c
            shape.append(size[c])
        if "..." in term:
            for c in ell[p]:
                if c == "1":
                    shape.append(1)
                else:
                    names[len(shape)] = "E" + c
                    shape.append(size[c])
            for c in after:
                names[len(shape)] = c
                shape.append(size[c])
        dtype = dtypes[p] if dtypes else np.float64
        ops.append(_values(tuple(shape), dtype, seed + 31 * p))
        axes.append(names or None)
    return ops, tuple(axes)


def _numpy_einsum(subscripts, *ops):
    """numpy's einsum on the operands cast to dynjax's result dtype (the promotion lattices
    differ for some mixed pairs); ellipsis axes left out of an explicit output are summed,
    which numpy does with ``optimize=True``."""
    dtype = jnp.result_type(*ops)
    ops = [np.asarray(o).astype(dtype) for o in ops]
    summed = "..." in subscripts.split("->")[0] and "->" in subscripts and "..." not in subscripts.split("->")[1]
    return np.asarray(np.einsum(subscripts, *ops, optimize=summed))


@pytest.mark.parametrize("subscripts,ell,dtypes", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_einsum_against_numpy(subscripts, ell, dtypes):
    def fn(*ops):
        return jnp.einsum(subscripts, *ops)

    arg_sets = [_case_operands(subscripts, ell, dtypes, sizes, seed)[0]
                for seed, sizes in enumerate(LETTER_SIZES)]
    axes = _case_operands(subscripts, ell, dtypes, LETTER_SIZES[0])[1]
    compiled = dynjax.qjit(fn, abstracted_axes=axes)
    for ops in arg_sets:
        what = (subscripts, [o.shape for o in ops])
        want = _numpy_einsum(subscripts, *ops)
        eager = np.asarray(fn(*ops))
        assert_close(eager, want, ("eager",) + what)
        assert_close(compiled(*ops), eager, ("compiled vs eager",) + what)
        if dtypes is None or len(set(dtypes)) == 1:     # the lattices agree: numpy's own dtype
            assert eager.dtype == np.einsum(subscripts, *ops, optimize=True).dtype
        for opt in (False, True):
            assert_close(jnp.einsum(subscripts, *ops, optimize=opt), want, (opt,) + what)
    assert compiled.cache_info()["traces"] == 1


def test_mixed_dtypes_follow_the_lattice():
    a, b = np.ones((2, 3), np.int32), np.ones((3, 2), np.float32)
    assert jnp.einsum("ij,jk", a, b).dtype == np.float32                       # numpy: float64
    assert jnp.einsum("ij,jk", a, b.astype(np.complex64)).dtype == np.complex64
    assert jnp.einsum("ij,jk", a, b.astype(np.int8)).dtype == np.int32
    assert jnp.einsum("ij,jk", a, b, preferred_element_type=np.float64).dtype == np.float64


def test_broadcasting_of_static_ones():
    a, b = _values((2, 1), np.float64, 0), _values((3, 4), np.float64, 1)
    assert_close(jnp.einsum("ij,jk", a, b), np.einsum("ij,jk", a, b))
    a, b = _values((1, 3), np.float64, 0), _values((2, 1), np.float64, 1)
    assert_close(jnp.einsum("ij,ij->ij", a, b), np.einsum("ij,ij->ij", a, b))
    # a dynamic axis broadcasts against a static 1
    f = dynjax.qjit(lambda a, b: jnp.einsum("ij,ij->ij", a, b), abstracted_axes=({0: "n"}, {1: "m"}))
    for n, m in [(0, 2), (3, 1), (2, 5)]:
        a, b = _values((n, 1), np.float64, n), _values((1, m), np.float64, m)
        assert_close(f(a, b), np.einsum("ij,ij->ij", a, b))
    assert f.cache_info()["traces"] == 1


def test_sublist_form_and_explicit_paths():
    a, b, c = (_values(s, np.float64, i) for i, s in enumerate([(2, 3), (3, 4), (4, 5)]))
    assert_close(jnp.einsum(a, [0, 1], b, [1, 2], [0, 2]), np.einsum(a, [0, 1], b, [1, 2], [0, 2]))
    bt = b[:, :2]
    assert_close(jnp.einsum(a, [Ellipsis, 1], bt, [1, Ellipsis]), np.einsum(a, [Ellipsis, 1], bt, [1, Ellipsis]))
    assert_close(jnp.einsum(a, [Ellipsis, 1], [1, Ellipsis]), np.einsum(a, [Ellipsis, 1], [1, Ellipsis]))
    path = np.einsum_path("ij,jk,kl->il", a, b, c, optimize="optimal")[0]
    want = np.einsum("ij,jk,kl->il", a, b, c)
    for opt in (path, ["einsum_path", (1, 2), (0, 1)], ["einsum_path", (0, 1, 2)], ("greedy", 1000),
                "optimal", False):
        assert_close(jnp.einsum("ij,jk,kl->il", a, b, c, optimize=opt), want, opt)


def test_one_trace_for_a_chain_under_dynamic_sizes():
    def fn(a, b, c, d):
        return jnp.einsum("ij,jk,kl,lm->im", a, b, c, d)

    f = dynjax.qjit(fn, abstracted_axes=(("i", "j"), ("j", "k"), ("k", "l"), ("l", "m")))
    for s in [(0, 1, 2, 3, 4), (1, 1, 1, 1, 1), (5, 2, 4, 3, 2)]:
        ops = [_values((s[p], s[p + 1]), np.float64, p) for p in range(4)]
        assert_close(f(*ops), np.einsum("ij,jk,kl,lm->im", *ops))
    assert f.cache_info()["traces"] == 1
    jx = dynjax.make_jaxpr(fn, abstracted_axes=(("i", "j"), ("j", "k"), ("k", "l"), ("l", "m")))(
        *[np.ones((2, 2))] * 4)
    assert [e.primitive.name for e in jx.jaxpr.eqns].count("dot_general") == 3


# --- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("subscripts,shapes,match", [
    ("ij,jk", [(2, 3), (4, 5)], "subscript 'j' has size 3"),
    ("ii", [(2, 3)], "subscript 'i' has size 2"),
    ("i,i,i", [(2,), (2,), (3,)], "subscript 'i'"),
    ("...i,...i", [(2, 3), (4, 3)], r"'\.\.\.' axis 0 has size 2"),
    ("ij,jk", [(2, 3)], "fewer operands"),
    ("ij", [(2, 3), (3, 2)], "more operands"),
    ("ijk", [(2, 3)], "operand 0 has 2 dimensions"),
    ("i", [(2, 3)], r"use '\.\.\.'"),
    ("ij...k", [(2, 3)], "more dimensions than operand 0 has"),
    ("i$j", [(2, 3)], r"invalid subscript '\$'"),
    ("i1", [(2, 3)], "invalid subscript '1'"),
    ("i.j", [(2, 3)], r"invalid '\.'"),
    ("......", [(2, 3)], r"invalid '\.'"),
    ("ij->kk", [(2, 3)], "output subscript 'k' does not appear"),
    ("ij->ii", [(2, 3)], "output subscript 'i' appears more than once"),
    ("ij->i->j", [(2, 3)], "at most one '->'"),
    ("ij-j", [(2, 3)], "at most one '->'"),
    ("ij->i.", [(2, 3)], r"invalid '\.'"),
])
def test_einsum_errors(subscripts, shapes, match):
    ops = [np.ones(s) for s in shapes]
    with pytest.raises(ValueError, match=match):
        jnp.einsum(subscripts, *ops)


def test_einsum_error_cases_numpy_also_rejects():
    for subscripts, shapes in [("ij,jk", [(2, 3), (4, 5)]), ("ii", [(2, 3)]), ("ij,jk", [(2, 3)]),
                               ("ij->kk", [(2, 3)]), ("ij->ii", [(2, 3)]), ("i$j", [(2, 3)])]:
        ops = [np.ones(s) for s in shapes]
        with pytest.raises(ValueError):
            np.einsum(subscripts, *ops)


def test_einsum_other_errors():
    with pytest.raises(ValueError, match="no operands"):
        jnp.einsum("ij")
    with pytest.raises(ValueError, match="optimize must be"):
        jnp.einsum("i", np.ones(2), optimize="fastest")
    with pytest.raises(ValueError, match="invalid contraction"):
        jnp.einsum("i,i", np.ones(2), np.ones(2), optimize=["einsum_path", (0, 5)])
    with pytest.raises(ValueError, match="does not reduce"):
        jnp.einsum("i,i,i", np.ones(2), np.ones(2), np.ones(2), optimize=["einsum_path", (0, 1)])
    with pytest.raises(ValueError, match="integer in"):
        jnp.einsum(np.ones(2), [60])


def test_dynamic_sizes_not_known_equal():
    f = dynjax.qjit(lambda a, b: jnp.einsum("ij,jk->ik", a, b), abstracted_axes=({1: "m"}, {0: "p"}))
    with pytest.raises(TypeError, match="subscript 'j' has size m .* but size p .*not known to be equal"):
        f(np.ones((2, 3)), np.ones((3, 2)))
    g = dynjax.qjit(lambda a: jnp.einsum("ii->i", a), abstracted_axes={0: "n", 1: "m"})
    with pytest.raises(TypeError, match="not known to be equal"):
        g(np.ones((3, 3)))
    # a dynamic axis that is 1 at run time does not broadcast: only a static 1 does
    h = dynjax.qjit(lambda a, b: jnp.einsum("i,i->i", a, b), abstracted_axes=({0: "n"}, {0: "m"}))
    with pytest.raises(TypeError, match="not known to be equal"):
        h(np.ones(3), np.ones(1))


# --- gradients --------------------------------------------------------------------------------
def test_grad_of_einsum():
    def loss(a, b):
        return jnp.einsum("ij,jk->", a, b)

    g = dynjax.grad(loss, argnums=(0, 1))
    gq = dynjax.qjit(g, abstracted_axes=({0: "n", 1: "m"}, {0: "m", 1: "k"}))
    for n, m, k in [(3, 4, 5), (1, 2, 1), (0, 3, 2)]:
        a, b = _values((n, m), np.float64, 1), _values((m, k), np.float64, 2)
        # d/da sum_ijk a_ij b_jk = sum_k b_jk (for every i); d/db = sum_i a_ij (for every k)
        want_a = np.broadcast_to(b.sum(axis=1), (n, m))
        want_b = np.broadcast_to(a.sum(axis=0)[:, None], (m, k))
        for ga, gb in (g(a, b), gq(a, b)):
            assert_close(ga, want_a)
            assert_close(gb, want_b)
    assert gq.cache_info()["traces"] == 1


def test_grad_through_a_diagonal_label():
    g = dynjax.qjit(dynjax.grad(lambda a, v: jnp.einsum("ii,i->", a, v)),
                    abstracted_axes=({0: "n", 1: "n"}, {0: "n"}))
    for n in (0, 1, 4):
        a, v = _values((n, n), np.float64, n), _values((n,), np.float64, n + 1)
        assert_close(g(a, v), np.diag(v))
    assert g.cache_info()["traces"] == 1


# --- random subscripts ------------------------------------------------------------------------
@st.composite
def einsum_problems(draw, max_ops=3):
    nops = draw(st.integers(1, max_ops))
    size = {c: draw(st.integers(0, 4)) for c in "abcd"}
    terms, shapes = [], []
    for _ in range(nops):
        term = "".join(draw(st.lists(st.sampled_from("abcd"), min_size=0, max_size=3)))
        shape = []
        for c in term:
            # a letter's axis may be a static 1 that broadcasts (not when repeated in the term)
            one = term.count(c) == 1 and draw(st.integers(0, 5)) == 0
            shape.append(1 if one else size[c])
        terms.append(term)
        shapes.append(tuple(shape))
    used = sorted(set("".join(terms)))
    if draw(st.booleans()):
        out = "".join(draw(st.permutations(used))[:draw(st.integers(0, len(used)))])
        subscripts = ",".join(terms) + "->" + out
    else:
        subscripts = ",".join(terms)
    dtype = draw(st.sampled_from([np.float64, np.int64, np.float32, np.complex128]))
    seed = draw(st.integers(0, 1000))
    ops = [_values(s, dtype, seed + i) for i, s in enumerate(shapes)]
    return subscripts, ops


@settings(max_examples=examples(200))
@given(einsum_problems())
def test_einsum_random_subscripts_eager(problem):
    subscripts, ops = problem
    want = np.einsum(subscripts, *ops)
    assert_close(jnp.einsum(subscripts, *ops), want, (subscripts, [o.shape for o in ops]))
    assert_close(jnp.einsum(subscripts, *ops, optimize=False), want, (subscripts, [o.shape for o in ops]))


@settings(max_examples=examples(30))
@given(einsum_problems())
def test_einsum_random_subscripts_compiled(problem):
    subscripts, ops = problem
    # every axis of a letter is named after it, except the static 1s that broadcast
    terms = subscripts.split("->")[0].split(",")
    axes = tuple({ax: c for ax, c in enumerate(t) if not (o.shape[ax] == 1 and t.count(c) == 1)} or None
                 for t, o in zip(terms, ops))
    f = dynjax.qjit(lambda *xs: jnp.einsum(subscripts, *xs), abstracted_axes=axes)
    assert_close(f(*ops), np.einsum(subscripts, *ops), (subscripts, [o.shape for o in ops]))
