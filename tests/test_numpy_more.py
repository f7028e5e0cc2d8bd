"""The rest of jax.numpy (issue 21): elementwise functions, polynomials, set operations,
windows, index helpers. Each is compared with numpy (or jax.numpy where JAX's convention
differs) eagerly and compiled, with a dynamic axis shared across sizes 0, 1 and n (one
trace), and the differentiable ones under grad (vs jax) and vmap (vs a loop)."""
import warnings

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp

import jax  # noqa: E402  (comparisons only)
jax.config.update("jax_enable_x64", True)
import jax.numpy as jjnp  # noqa: E402


def same(got, want, rtol=1e-13, atol=0.0, msg=""):
    got = got if isinstance(got, (tuple, list)) else [got]
    want = want if isinstance(want, (tuple, list)) else [want]
    assert len(got) == len(want), msg
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (msg, g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=msg)


def both(f, np_f, arg_sets, axes=None, rtol=1e-13, atol=0.0, traces=1, compiled=True):
    """``f`` eagerly and under one ``qjit`` (``abstracted_axes=axes``) against ``np_f``."""
    g = dynjax.qjit(f, abstracted_axes=axes)
    for args in arg_sets:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = np_f(*args)
            same(f(*args), want, rtol, atol, msg=f"eager {args}")
            if compiled:
                same(g(*args), want, rtol, atol, msg=f"compiled {args}")
    if axes is not None:
        assert g.cache_info()["traces"] <= traces


X = np.array([-3.5, -1.0, -0.2, 0.5, 0.3, 1.0, 2.0, 7.25, 1e200, np.inf, np.nan, -0.0])
Y = np.array([1.0, 2.0, -0.2, 0.0, -1e-300, 1.0, np.nan, 7.0, 3.0, np.inf, 1.0, 0.0])
D = {0: "n"}


@pytest.mark.parametrize("name", ["arcsinh", "arccosh", "arctanh", "trunc", "fabs", "reciprocal", "spacing",
                                  "isposinf", "isneginf", "degrees", "radians", "positive", "asinh", "acos"])
def test_unary(name):
    np_name = {"asinh": "arcsinh", "acos": "arccos"}.get(name, name)
    x = X[:-1] if name == "spacing" else X   # spacing(0) is subnormal: compiled code flushes it
    both(getattr(jnp, name), getattr(np, np_name), [(x,), (x[:0],), (x[:1],)], ({0: "n"},))
    both(getattr(jnp, name), getattr(np, np_name), [(x[:8].astype(np.float32),)], rtol=1e-6)


def test_unary_integers():
    k = np.array([-3, 0, 2, 5])
    for name in ("trunc", "fabs", "reciprocal", "degrees"):
        same(getattr(jnp, name)(k), getattr(jjnp, name)(k), msg=name)
    same(jnp.iscomplex(np.array([1 + 0j, 1 + 1j, 2])), np.iscomplex(np.array([1 + 0j, 1 + 1j, 2])))
    same(jnp.isreal(np.array([1 + 0j, 1 + 1j, 2])), np.isreal(np.array([1 + 0j, 1 + 1j, 2])))


@pytest.mark.parametrize("name", ["fmax", "fmin", "logaddexp", "logaddexp2", "nextafter", "float_power", "atan2",
                                  "pow", "divmod"])
def test_binary(name):
    np_name = {"atan2": "arctan2", "pow": "power"}.get(name, name)
    both(getattr(jnp, name), getattr(np, np_name), [(X, Y), (X[:0], Y[:0]), (X[:1], Y[:1])], ({0: "n"}, {0: "n"}))


def test_i0():
    x = np.array([-30., -20.5, -1, 0, 0.5, 5, 19.9, 20.1, 50, 300])
    both(jnp.i0, np.i0, [(x,), (x[:1],)], ({0: "n"},), rtol=1e-13)


def test_frexp_ldexp_modf():
    both(jnp.frexp, np.frexp, [(X,), (X[:0],)], ({0: "n"},))
    both(jnp.modf, np.modf, [(X,), (X[:1],)], ({0: "n"},))
    # subnormals stay eager: compiled XLA code flushes them to zero (as JAX's does on CPU)
    z = np.array([1.5, 2.0**-1000, 2.0**-1020, 2.0**1000, 0, 1, 2.0**-1020, 1e300, 1.0, np.inf, np.nan])
    e = np.array([3, -1, 1100, -1100, 0, 5, 2000, -2000, 1010, 2, 1])
    both(jnp.ldexp, np.ldexp, [(z, e), (z[:1], e[:1])], ({0: "n"}, {0: "n"}))
    same(jnp.ldexp(np.array([2.0**-1074, 1.0]), np.array([2000, -1070])),
         np.ldexp(np.array([2.0**-1074, 1.0]), np.array([2000, -1070])))
    same(jnp.spacing(np.array([0.0])), np.spacing(np.array([0.0])))
    with pytest.raises(TypeError, match="integer"):
        jnp.ldexp(1.0, 2.5)


def test_integer_functions():
    a = np.array([12, -18, 0, 7, 0, 100])
    b = np.array([8, 27, 5, 0, 0, -75])
    both(jnp.gcd, np.gcd, [(a, b), (a[:0], b[:0]), (a[:1], b[:1])], ({0: "n"}, {0: "n"}))
    both(jnp.lcm, np.lcm, [(a, b), (a[:1], b[:1])], ({0: "n"}, {0: "n"}))
    for v in (a, a.astype(np.int8), np.array([255, 3], np.uint8), np.array([True, False])):
        both(jnp.bitwise_count, np.bitwise_count, [(v,)])
    with pytest.raises(TypeError, match="integer"):
        jnp.gcd(1.5, 2)


def test_elementwise_grad_and_vmap():
    for name in ("arcsinh", "arctanh", "i0", "trunc"):
        f = getattr(jnp, name)
        jf = getattr(jjnp, name)
        for x0 in (0.3, -0.7):
            np.testing.assert_allclose(dynjax.grad(f)(x0), jax.grad(jf)(x0), rtol=1e-12, err_msg=name)
    np.testing.assert_allclose(dynjax.grad(jnp.arccosh)(1.7), jax.grad(jjnp.arccosh)(1.7), rtol=1e-12)
    for name in ("logaddexp", "logaddexp2", "fmax", "fmin"):
        g = dynjax.grad(getattr(jnp, name), argnums=(0, 1))(0.3, -1.2)
        np.testing.assert_allclose(g, jax.grad(getattr(jjnp, name), argnums=(0, 1))(0.3, -1.2), rtol=1e-12)
    xs = np.array([[0.1, 0.5], [-2.0, 3.0], [1.0, 1.0]])
    same(dynjax.vmap(lambda r: jnp.logaddexp(r[0], r[1]))(xs), np.logaddexp(xs[:, 0], xs[:, 1]))
    same(dynjax.vmap(jnp.frexp)(xs), np.frexp(xs))


# --- polynomials ------------------------------------------------------------------------------------
RNG = np.random.default_rng(0)
PAIRS = [(RNG.normal(size=n), RNG.normal(size=m)) for n, m in [(0, 0), (1, 3), (4, 2), (3, 3)]]
PP = ({0: "n"}, {0: "m"})


@pytest.mark.parametrize("name", ["polyadd", "polysub", "polymul"])
def test_poly_arithmetic(name):
    both(getattr(jnp, name), getattr(np, name), PAIRS, PP)


def test_polyval_poly_der_int_vander():
    x = RNG.normal(size=5)
    sets = [(a,) for a, _ in PAIRS]
    both(lambda p: jnp.polyval(p, x), lambda p: np.polyval(p, x), sets, ({0: "n"},))
    both(jnp.poly, np.poly, sets[1:], ({0: "n"},), atol=1e-14)
    same(jnp.poly(np.zeros(0)), jjnp.poly(jjnp.zeros(0)))
    both(lambda p: jnp.polyder(p, 2), lambda p: np.polyder(p, 2), sets, ({0: "n"},))
    both(lambda p: jnp.polyint(p, 2, k=[1.0, 2.0]), lambda p: np.polyint(p, 2, k=[1.0, 2.0]), sets, ({0: "n"},))
    both(jnp.vander, np.vander, sets, ({0: "n"},))
    both(lambda v: jnp.vander(v, 3, increasing=True), lambda v: np.vander(v, 3, increasing=True), sets, ({0: "n"},))
    same(jnp.polyder(np.array([1, 2, 3])), np.polyder(np.array([1, 2, 3])))
    same(jnp.polyint(np.array([1, 2, 3])), np.polyint(np.array([1, 2, 3])))
    same(jnp.vander(np.array([1, 2, 3])), np.vander(np.array([1, 2, 3])))


def test_polydiv_and_polyfit():
    def np_div(u, v):   # JAX keeps the remainder at u's length (leading zeros)
        q, r = np.polydiv(u, v)
        return q, np.concatenate([np.zeros(len(u) - len(r)), r])
    sets = [(u, v) for u, v in PAIRS if 0 < len(v) <= len(u)]
    both(jnp.polydiv, np_div, sets, PP, rtol=1e-10, atol=1e-12)
    same(jnp.polydiv(np.array([1., 2]), np.array([1., 1, 1])),
         jjnp.polydiv(jjnp.array([1., 2]), jjnp.array([1., 1, 1])))
    x = np.linspace(0, 1, 9)
    y = 1 + 2 * x - 3 * x ** 2 + 0.01 * RNG.normal(size=9)
    w = np.linspace(1, 2, 9)
    both(lambda x, y: jnp.polyfit(x, y, 2), lambda x, y: np.polyfit(x, y, 2), [(x, y), (x[:5], y[:5])],
         ({0: "n"}, {0: "n"}), rtol=1e-9)
    same(jnp.polyfit(x, np.stack([y, 2 * y], 1), 1, w=w), np.polyfit(x, np.stack([y, 2 * y], 1), 1, w=w), rtol=1e-9)


def test_poly_grad_vmap():
    c = np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(dynjax.grad(lambda c: jnp.polyval(c, 1.5))(c), jax.grad(lambda c: jjnp.polyval(c, 1.5))(c),
                               rtol=1e-13)
    np.testing.assert_allclose(dynjax.grad(lambda z: jnp.poly(z).sum())(c), jax.grad(lambda z: jjnp.poly(z).sum())(c),
                               rtol=1e-12)
    xs = np.array([0.5, 1.0, -2.0])
    same(dynjax.vmap(lambda x: jnp.polyval(c, x))(xs), np.polyval(c, xs))


# --- set operations ---------------------------------------------------------------------------------
SETS = [(np.array([5, 1, 3, 3, 7]), np.array([3, 9, 5, 2])), (np.array([], np.int64), np.array([1, 2])),
        (np.array([1.5, np.nan, 2.0, 2.0]), np.array([2.0, np.nan, 0.5])),
        (RNG.integers(0, 6, 9), RNG.integers(0, 6, 4))]


@pytest.mark.parametrize("name", ["union1d", "intersect1d", "setdiff1d", "setxor1d"])
def test_set_operations(name):
    for i, (a, b) in enumerate(SETS):   # compiled: each size is a new count, so fewer cases
        both(getattr(jnp, name), getattr(np, name), [(a, b), (a[:1], b[:0]), (a[:0], b[:1])], PP, traces=3,
             compiled=i == 0)
    a, b = SETS[0]
    for size, kw in ((2, {}), (8, {}), (8, {"fill_value": -1})):
        want = getattr(jjnp, name)(a, b, size=size, **kw)
        both(lambda x, y: getattr(jnp, name)(x, y, size=size, **kw), lambda x, y: want, [(a, b)], PP,
             compiled=size == 8 and not kw)


def test_intersect1d_indices_and_isin():
    for i, (a, b) in enumerate(SETS):
        both(lambda x, y: jnp.intersect1d(x, y, return_indices=True),
             lambda x, y: np.intersect1d(x, y, return_indices=True), [(a, b)], PP, compiled=i == 2)
        both(jnp.isin, np.isin, [(a, b), (a, b[:0])], PP, traces=2, compiled=i < 2)
        same(jnp.isin(a, b, invert=True), np.isin(a, b, invert=True))
    a, b = SETS[0]
    same(jnp.intersect1d(a, b, return_indices=True, size=4), jjnp.intersect1d(a, b, return_indices=True, size=4))
    same(jnp.isin(np.array([[1, 2], [3, 4]]), [4, 1]), np.isin(np.array([[1, 2], [3, 4]]), [4, 1]))


# --- windows and creation -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
def test_windows(name):
    both(getattr(jnp, name), getattr(np, name), [(M,) for M in (0, 1, 2, 5)], rtol=1e-13, atol=1e-15)
    assert dynjax.qjit(getattr(jnp, name)).cache_info()["traces"] == 0


def test_kaiser_and_spaces():
    both(lambda M: jnp.kaiser(M, 5.0), lambda M: np.kaiser(M, 5.0), [(M,) for M in (0, 1, 2, 7)], rtol=1e-12)
    both(lambda n: jnp.logspace(0.5, 2, n, base=2.0), lambda n: np.logspace(0.5, 2, n, base=2.0), [(0,), (1,), (5,)])
    for a, b in [(1, 1000), (-2.0, -50), (3, 0.5)]:
        both(lambda n: jnp.geomspace(a, b, n), lambda n: np.geomspace(a, b, n), [(0,), (1,), (5,)])
        both(lambda n: jnp.geomspace(a, b, n, endpoint=False), lambda n: np.geomspace(a, b, n, endpoint=False), [(4,)])


def test_tri_fromfunction_copy():
    for k in (-1, 0, 2):
        both(lambda n: jnp.tri(n, 3, k), lambda n: np.tri(n, 3, k), [(0,), (1,), (4,)])
        both(lambda n: jnp.tri(n, k=k, dtype=int), lambda n: np.tri(n, k=k, dtype=int), [(3,)])
    both(lambda n: jnp.fromfunction(lambda i, j: i * 10 + j, (n, 3), dtype=int),
         lambda n: np.fromfunction(lambda i, j: i * 10 + j, (n, 3), dtype=int), [(0,), (2,)])
    x = np.arange(3.0)
    c = jnp.copy(x)
    assert c is not x and (c == x).all()


# --- index helpers ----------------------------------------------------------------------------------
def test_grids_and_concatenators():
    same(jnp.mgrid[0:3, 1:5:2], np.mgrid[0:3, 1:5:2])
    same(jnp.mgrid[0:1:5j], np.mgrid[0:1:5j])
    same(jnp.mgrid[0:1.5:0.5], np.mgrid[0:1.5:0.5])
    same(jnp.ogrid[0:2, 0:3], np.ogrid[0:2, 0:3])
    both(lambda n: jnp.mgrid[0:n, 0:3], lambda n: np.mgrid[0:n, 0:3], [(0,), (1,), (4,)])
    same(jnp.r_[1:4, [7, 8], 0], np.r_[1:4, [7, 8], 0])
    same(jnp.c_[np.array([1, 2]), np.array([3, 4])], np.c_[np.array([1, 2]), np.array([3, 4])])
    same(jnp.c_[np.ones((2, 2)), np.array([5, 6])], np.c_[np.ones((2, 2)), np.array([5, 6])])
    same(jnp.r_['0,2', [1, 2], [3, 4]], np.r_['0,2', [1, 2], [3, 4]])
    same(jnp.r_['1', np.ones((2, 2)), np.zeros((2, 1))], np.r_['1', np.ones((2, 2)), np.zeros((2, 1))])
    assert jnp.s_[1:2, ::3] == np.s_[1:2, ::3] and jnp.index_exp[3] == np.index_exp[3]
    args = (np.array([0, 1]), np.array([True, False, True]))
    same(jnp.ix_(*args), np.ix_(*args))


def test_triangle_and_diagonal_indices():
    for k in (-1, 0, 1):
        for m in (None, 2) if k == 0 else (None,):
            for name in ("tril_indices", "triu_indices"):
                both(lambda n: getattr(jnp, name)(n, k, m), lambda n: getattr(np, name)(n, k, m), [(0,), (1,), (4,)])
    both(lambda n: jnp.diag_indices(n, 3), lambda n: np.diag_indices(n, 3), [(0,), (3,)])
    xs = [(np.zeros((n, 3)),) for n in (0, 1, 4)]
    both(lambda x: jnp.tril_indices_from(x, 1), lambda x: np.tril_indices_from(x, 1), xs, ({0: "n"},), traces=2)
    both(lambda x: jnp.triu_indices_from(x), lambda x: np.triu_indices_from(x), xs, ({0: "n"},), traces=2)
    same(jnp.diag_indices_from(np.zeros((3, 3))), np.diag_indices_from(np.zeros((3, 3))))
    same(jnp.mask_indices(3, jnp.triu, 1), np.mask_indices(3, np.triu, 1))


def test_fill_diagonal():
    def want(a):
        a = a.copy()
        np.fill_diagonal(a, [1.0, 2.0])
        return a
    for shape in [(1, 3), (5, 3), (3, 2), (3, 3)]:
        both(lambda a: jnp.fill_diagonal(a, np.array([1.0, 2.0]), inplace=False), want, [(np.zeros(shape),)],
             ({0: "n", 1: "m"},))
    with pytest.raises(ValueError, match="inplace=False"):
        jnp.fill_diagonal(np.zeros((2, 2)), 1.0)


def test_ravel_and_unravel():
    ix = (np.array([0, 2, 1]), np.array([1, 3, 0]))
    same(jnp.ravel_multi_index(ix, (3, 4)), np.ravel_multi_index(ix, (3, 4)))
    same(jnp.ravel_multi_index(ix, (3, 4), order="F"), np.ravel_multi_index(ix, (3, 4), order="F"))
    bad = (np.array([0, 2, 5]), np.array([1, -1, 3]))
    for mode in ("clip", "wrap"):
        both(lambda a, b: jnp.ravel_multi_index((a, b), (3, 4), mode=mode),
             lambda a, b: np.ravel_multi_index((a, b), (3, 4), mode=mode), [bad])
    with pytest.raises(ValueError, match="invalid entry"):
        jnp.ravel_multi_index(bad, (3, 4))
    u = np.array([-1, 5, 12, 7, 0])
    both(lambda u: jnp.unravel_index(u, (3, 4)), lambda u: jjnp.unravel_index(u, (3, 4)), [(u,)])
    x = np.zeros((5, 3))
    both(lambda u, x: jnp.unravel_index(u, x.shape), lambda u, x: np.unravel_index(u, x.shape),
         [(u[:3] % 15, x), (u[:1] % 3, x[:1])], ({0: "k"}, {0: "n"}))


# --- shapes -----------------------------------------------------------------------------------------------
def test_trim_zeros():
    zs = [np.array([0, 0, 1, 2, 0, 3, 0]), np.array([0., 0]), np.array([1, 0]), np.array([5]), np.zeros(0)]
    for t in ("fb", "f", "b"):
        for z in zs:
            same(jnp.trim_zeros(z, t), np.trim_zeros(z, t), msg=t)
        both(lambda z: jnp.trim_zeros(z, t), lambda z: np.trim_zeros(z, t), [(zs[0],), (zs[0][:1],)], D)


def test_stacking():
    a, b = np.arange(6.0).reshape(2, 3), np.ones((2, 2))
    same(jnp.block([[a, b], [np.zeros((1, 5))]]), np.block([[a, b], [np.zeros((1, 5))]]))
    same(jnp.block([np.array([1, 2]), 3]), np.block([np.array([1, 2]), 3]))
    both(lambda a, b: jnp.block([[a, b], [b, a]]), lambda a, b: np.block([[a, b], [b, a]]),
         [(b, 2 * b), (b[:1, :1], b[:1, :1])], ({0: "n", 1: "n"}, {0: "n", 1: "n"}))
    same(jnp.column_stack([np.arange(3), np.ones((3, 2))]), np.column_stack([np.arange(3), np.ones((3, 2))]))
    both(lambda u, v: jnp.column_stack([u, v]), lambda u, v: np.column_stack([u, v]),
         [(np.arange(3.0), np.ones(3)), (np.zeros(0), np.zeros(0))], (D, D))
    same(jnp.dstack([np.arange(3), np.arange(3)]), np.dstack([np.arange(3), np.arange(3)]))
    same(jnp.concat([a, b], axis=1), np.concat([a, b], axis=1))
    same(jnp.concat([a, b], axis=None), np.concat([a, b], axis=None))


def test_axis_permutations_and_broadcasting():
    x = np.zeros((2, 3, 4, 5))
    for ax, st in [(3, 1), (1, 3), (-1, 0), (2, 4), (0, 2)]:
        same(jnp.rollaxis(x, ax, st), np.rollaxis(x, ax, st), msg=str((ax, st)))
    same(jnp.matrix_transpose(x), np.matrix_transpose(x))
    same(jnp.permute_dims(x, (3, 1, 0, 2)), np.permute_dims(x, (3, 1, 0, 2)))
    a = np.arange(6.0).reshape(2, 3)
    same(jnp.unstack(a, axis=1), np.unstack(a, axis=1))
    with pytest.raises(TypeError, match="dynamic"):
        dynjax.make_jaxpr(jnp.unstack, abstracted_axes=D)(a)
    same(jnp.broadcast_arrays(1, np.ones((2, 1)), np.arange(3)), np.broadcast_arrays(1, np.ones((2, 1)), np.arange(3)))
    assert jnp.broadcast_shapes((2, 1), (3,), 1) == np.broadcast_shapes((2, 1), (3,), 1)
    with pytest.raises(ValueError, match="2-dimensional"):
        jnp.matrix_transpose(np.ones(3))


def test_resize_diagflat_ediff1d():
    for shp in [(2, 4), (7,), (0,), (1, 1)]:
        same(jnp.resize(np.array([1, 2, 3]), shp), np.resize(np.array([1, 2, 3]), shp))
    same(jnp.resize(np.zeros(0), 3), jjnp.resize(jjnp.zeros(0), 3))
    both(lambda v, n: jnp.resize(v, (n, 2)), lambda v, n: np.resize(v, (n, 2)),
         [(np.array([1., 2, 3]), 5), (np.array([1., 2, 3]), 0), (np.array([4.0]), 1)], ({0: "m"},))
    same(jnp.diagflat(np.array([[1, 2], [3, 4]]), 1), np.diagflat(np.array([[1, 2], [3, 4]]), 1))
    same(jnp.ediff1d(np.array([1, 4, 9]), to_begin=[0], to_end=np.array([7, 8])),
         np.ediff1d(np.array([1, 4, 9]), to_begin=[0], to_end=np.array([7, 8])))
    both(lambda v: jnp.ediff1d(v, to_end=9.0), lambda v: np.ediff1d(v, to_end=9.0),
         [(np.array([1., 3, 7]),), (np.array([1.]),), (np.zeros(0),)], D)


# --- applying functions, picking values -----------------------------------------------------------------
def test_apply_along_and_over_axes():
    x = np.arange(24.0).reshape(2, 3, 4)
    for ax in (0, 1, 2, -1):
        same(jnp.apply_along_axis(lambda v: v.sum(), ax, x), np.apply_along_axis(lambda v: v.sum(), ax, x))
        same(jnp.apply_along_axis(lambda v: jnp.stack([v.min(), v.max()]), ax, x),
             np.apply_along_axis(lambda v: np.stack([v.min(), v.max()]), ax, x))
    both(lambda x: jnp.apply_along_axis(jnp.cumsum, 1, x), lambda x: np.apply_along_axis(np.cumsum, 1, x),
         [(x,), (x[:1],)], D)
    same(jnp.apply_over_axes(jnp.sum, x, [0, 2]), np.apply_over_axes(np.sum, x, [0, 2]))


def test_piecewise_select_choose():
    v = np.array([-2.0, -0.5, 0.0, 1.0, 3.0])
    fs = [lambda t: -t, lambda t: 2 * t, 7.0]
    both(lambda v: jnp.piecewise(v, [v < 0, v > 0], fs), lambda v: np.piecewise(v, [v < 0, v > 0], fs),
         [(v,), (v[:1],), (v[:0],)], D)
    same(jnp.piecewise(v, [v < 1], [lambda t: t ** 2]), np.piecewise(v, [v < 1], [lambda t: t ** 2]))
    both(lambda v: jnp.select([v < 0, v > 0.5], [v, v * 10], -1.0),
         lambda v: np.select([v < 0, v > 0.5], [v, v * 10], -1.0), [(v,), (v[:0],)], D)
    a = np.array([0, 1, 2, 1])
    chs = [np.array([1, 2, 3, 4]), np.array([10, 20, 30, 40]), 5]
    same(jnp.choose(a, chs), np.choose(a, chs))
    b = np.array([0, 4, -1, 2])
    for mode in ("clip", "wrap"):
        both(lambda b: jnp.choose(b, chs, mode=mode), lambda b: np.choose(b, chs, mode=mode), [(b,)])
    with pytest.raises(ValueError, match="invalid entry"):
        jnp.choose(b, chs)
    g = dynjax.grad(lambda t: jnp.piecewise(t, [t < 0], [lambda s: s ** 2, lambda s: 3 * s]))
    assert g(-2.0) == -4.0 and g(2.0) == 3.0


def test_place_and_put_along_axis():
    arr = np.arange(7.0)
    want = arr.copy()
    np.place(want, arr > 2, [70, 80])
    both(lambda arr: jnp.place(arr, arr > 2, np.array([70., 80]), inplace=False), lambda arr: want, [(arr,)], D)
    with pytest.raises(ValueError, match="inplace=False"):
        jnp.place(arr, arr > 2, 1.0)
    m = np.arange(12.0).reshape(3, 4)
    idx = np.array([[1], [3], [0]])
    want = m.copy()
    np.put_along_axis(want, idx, -5.0, 1)
    both(lambda m, i: jnp.put_along_axis(m, i, -5.0, 1, inplace=False), lambda m, i: want, [(m, idx)], (D, D))
    idx0 = np.array([[2, 0, 1, 1]])
    want = m.copy()
    np.put_along_axis(want, idx0, np.array([[9., 8, 7, 6]]), 0)
    same(jnp.put_along_axis(m, idx0, np.array([[9., 8, 7, 6]]), 0, inplace=False), want)


def test_vectorize():
    vf = jnp.vectorize(lambda a, b: a * b + 1)
    same(vf(np.arange(3.0), np.ones((2, 1))), np.vectorize(lambda a, b: a * b + 1)(np.arange(3.0), np.ones((2, 1))))
    vd = jnp.vectorize(lambda a, b: jnp.dot(a, b), signature="(n),(n)->()")
    A, B = np.arange(12.0).reshape(3, 4), np.ones(4)
    same(vd(A, B), np.vectorize(np.dot, signature="(n),(n)->()")(A, B))
    both(lambda A, B: vd(A, B), lambda A, B: A @ B, [(A, B), (A[:0, :1], B[:1])], ({0: "m", 1: "n"}, {0: "n"}))
    ve = jnp.vectorize(lambda a, p: a ** p, excluded={1})
    same(ve(np.arange(3.0), 2), np.arange(3.0) ** 2)
    with pytest.raises(ValueError, match="signature"):
        jnp.vectorize(lambda a: a, signature="(n->()")(A)


# --- sorting -------------------------------------------------------------------------------------------------
def test_sort_keywords():
    a = np.array([1, 3, 3, 2, np.nan, -1.0])
    for kw in ({"descending": True}, {"stable": True}, {"descending": True, "stable": False}):
        for name in ("sort", "argsort"):
            want = getattr(jjnp, name)(a, **kw)
            both(lambda a: getattr(jnp, name)(a, **kw), lambda a: want, [(a,)], D)
    m = np.array([[3, 1, 1], [0, 5, 5]])
    for ax in (0, 1, None):
        same(jnp.argsort(m, axis=ax, descending=True), jjnp.argsort(m, axis=ax, descending=True))
    same(jnp.argsort(np.array([1, 3]), dtype=np.int32), jjnp.argsort(np.array([1, 3]), dtype=np.int32))
    both(lambda a: jnp.argsort(a, descending=True), lambda a: jjnp.argsort(a, descending=True),
         [(a[:0],), (a[:1],)], D)


def test_lexsort_partition_sort_complex():
    k = (np.array([1, 2, 1, 0, 2]), np.array([0, 0, 1, 0, 0]))
    both(lambda a, b: jnp.lexsort((a, b)), lambda a, b: np.lexsort((a, b)), [k, (k[0][:1], k[1][:1])], (D, D))
    same(jnp.lexsort(np.stack(k)), np.lexsort(np.stack(k)))
    x = np.array([5.0, 1, 4, 2, 3, 2])
    for kth in (0, 2, 5, -1):
        p = jnp.partition(x, kth)
        srt = np.sort(x)
        assert p[kth] == srt[kth] and (p[:kth] <= p[kth]).all() and (p[kth:] >= p[kth]).all()
        i = jnp.argpartition(x, kth)
        assert x[i][kth] == srt[kth] and sorted(i.tolist()) == list(range(6))
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.partition(x, 6)
    for v in (np.array([3, 1]), np.array([1 + 2j, 1 - 1j])):
        same(jnp.sort_complex(v), np.sort_complex(v))
    v = np.array([2.0, 1.0], np.float32)   # numpy widens to complex128, JAX keeps complex64
    same(jnp.sort_complex(v), jjnp.sort_complex(v))


# --- NaN reductions, covariance -------------------------------------------------------------------------
XN = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [4.0, 2.0, -1.0], [0.5, 0.5, np.nan]])


@pytest.mark.parametrize("kw", [{}, {"axis": 0}, {"axis": 1, "keepdims": True}, {"axis": 1, "ddof": 1}])
def test_nanvar_nanstd_nanprod(kw):
    for name in ("nanvar", "nanstd"):
        both(lambda x: getattr(jnp, name)(x, **kw), lambda x: getattr(np, name)(x, **kw), [(XN,), (XN[:1],)], D,
             rtol=1e-12)
    if "ddof" not in kw:
        same(jnp.nanprod(XN, **kw), np.nanprod(XN, **kw))
    z = XN + 1j * XN[::-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # numpy's "degrees of freedom <= 0"
        same(jnp.nanvar(z, **kw), np.nanvar(z, **kw), rtol=1e-12)


def test_nanargmax_nanargmin():
    for ax in (None, 0, 1):
        for name in ("nanargmax", "nanargmin"):   # JAX: -1 for an all-NaN slice (numpy raises)
            want = getattr(jjnp, name)(XN, ax)
            both(lambda x: getattr(jnp, name)(x, ax), lambda x: want, [(XN,)], D)
    same(jnp.nanargmax(np.array([3, 1, 4])), np.int64(2))


def test_cov_corrcoef():
    m = RNG.normal(size=(3, 6))
    y = RNG.normal(size=(6,))
    fw, aw = np.array([1, 2, 1, 3, 1, 1]), RNG.uniform(0.5, 2, 6)
    for kw in ({}, {"bias": True}, {"ddof": 2}):
        both(lambda m: jnp.cov(m, **kw), lambda m: np.cov(m, **kw), [(m,), (m[:, :2],)], ({1: "n"},), rtol=1e-12)
    for kw in ({"fweights": fw}, {"aweights": aw}, {"fweights": fw, "aweights": aw, "ddof": 1}):
        same(jnp.cov(m, **kw), np.cov(m, **kw), rtol=1e-12, msg=str(kw))
    same(jnp.cov(m.T, rowvar=False), np.cov(m.T, rowvar=False), rtol=1e-12)
    same(jnp.cov(m, y), np.cov(m, y), rtol=1e-12)
    same(jnp.cov(y), np.cov(y), rtol=1e-12)
    both(jnp.corrcoef, np.corrcoef, [(m,)], ({1: "n"},), rtol=1e-12)
    same(jnp.corrcoef(m[0], y), np.corrcoef(m[0], y), rtol=1e-12)
    z = m + 1j * RNG.normal(size=m.shape)
    same(jnp.cov(z), np.cov(z), rtol=1e-12)
    same(jnp.corrcoef(z), np.corrcoef(z), rtol=1e-12)
    g = dynjax.grad(lambda v: jnp.cov(v)[0, 1])(m)
    np.testing.assert_allclose(g, jax.grad(lambda v: jjnp.cov(v)[0, 1])(m), rtol=1e-12)


# --- calculus, vector products, bits -------------------------------------------------------------------
def test_gradient():
    f = RNG.normal(size=(5, 4))
    x = np.cumsum(RNG.uniform(0.5, 1.5, 5))
    same(jnp.gradient(f), np.gradient(f), rtol=1e-12)
    same(jnp.gradient(f, 0.5), np.gradient(f, 0.5), rtol=1e-12)
    same(jnp.gradient(f, x, 2.0), np.gradient(f, x, 2.0), rtol=1e-12)
    same(jnp.gradient(f, axis=1), np.gradient(f, axis=1), rtol=1e-12)
    same(jnp.gradient(np.array([1, 4, 9, 16])), np.gradient(np.array([1, 4, 9, 16])))
    both(lambda f, x: jnp.gradient(f, x, axis=0), lambda f, x: np.gradient(f, x, axis=0),
         [(f, x), (f[:2], x[:2]), (f[:3], x[:3])], (D, D), rtol=1e-12)
    with pytest.raises(ValueError, match="two samples"):
        jnp.gradient(np.ones(1))


def test_trapezoid_unwrap():
    f = RNG.normal(size=(5, 4))
    x = np.cumsum(RNG.uniform(0.5, 1.5, 5))
    both(lambda f, x: jnp.trapezoid(f, x, axis=0), lambda f, x: np.trapezoid(f, x, axis=0),
         [(f, x), (f[:1], x[:1]), (f[:0], x[:0])], (D, D), rtol=1e-12)
    same(jnp.trapezoid(f, dx=0.3), np.trapezoid(f, dx=0.3), rtol=1e-12)
    same(jnp.trapezoid(np.array([1, 2, 3])), np.trapezoid(np.array([1, 2, 3])))
    np.testing.assert_allclose(dynjax.grad(lambda y: jnp.trapezoid(y ** 2, x))(f[:, 0]),
                               jax.grad(lambda y: jjnp.trapezoid(y ** 2, x))(f[:, 0]), rtol=1e-12)
    p = np.cumsum(RNG.normal(scale=2.5, size=9))
    both(jnp.unwrap, np.unwrap, [(p,), (p[:1],)], D, rtol=1e-12)
    same(jnp.unwrap(p, period=4.0), np.unwrap(p, period=4.0), rtol=1e-12)
    same(jnp.unwrap(p, discont=4.0), np.unwrap(p, discont=4.0), rtol=1e-12)
    same(jnp.unwrap(np.stack([p, p]), axis=1), np.unwrap(np.stack([p, p]), axis=1), rtol=1e-12)


def test_vector_products():
    a3, b3, a2 = RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3)), RNG.normal(size=(4, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # numpy deprecates 2-vectors
        for u, v in ((a3, b3), (a2, b3), (a3, a2)):
            same(jnp.cross(u, v), np.cross(u, v), rtol=1e-12)
    same(jnp.cross(a2, a2[::-1]), jjnp.cross(a2, a2[::-1]), rtol=1e-12)
    same(jnp.cross(a3.T, b3.T, axisa=0, axisb=0, axisc=0), np.cross(a3.T, b3.T, axisa=0, axisb=0, axisc=0))
    both(jnp.cross, np.cross, [(a3, b3), (a3[:0], b3[:0])], (D, D), rtol=1e-12)
    z = a3 + 1j * b3
    same(jnp.vecdot(z, b3), np.vecdot(z, b3), rtol=1e-12)
    same(jnp.vecdot(a3, b3, axis=0), np.vecdot(a3, b3, axis=0), rtol=1e-12)
    M = RNG.normal(size=(2, 4, 3))
    both(jnp.matvec, np.matvec, [(M, a3[0]), (M[:, :1], a3[0])], ({1: "m"}, None), rtol=1e-12)
    same(jnp.vecmat(z[0], M.transpose(0, 2, 1)), np.vecmat(z[0], M.transpose(0, 2, 1)), rtol=1e-12)


def test_packbits_unpackbits():
    bits = np.array([[1, 0, 1, 1, 0, 0, 0, 0, 1], [0, 1, 1, 1, 1, 1, 1, 1, 1]])
    for ax in (None, 1, 0):
        for bo in ("big", "little"):
            same(jnp.packbits(bits, ax, bo), np.packbits(bits, ax, bo))
            u = np.packbits(bits, ax, bo)
            same(jnp.unpackbits(u, ax, bitorder=bo), np.unpackbits(u, ax, bitorder=bo))
    both(lambda b: jnp.packbits(b, 1), lambda b: np.packbits(b, 1), [(bits,), (bits[:, :0],), (bits[:, :1],)],
         ({1: "n"},))
    u8 = np.array([5, 255], np.uint8)
    for c in (-2, 3, 20, 0):
        same(jnp.unpackbits(u8, count=c), np.unpackbits(u8, count=c), msg=str(c))
    both(jnp.unpackbits, np.unpackbits, [(u8,), (u8[:0],)], D)
    with pytest.raises(TypeError, match="uint8"):
        jnp.unpackbits(np.array([1, 2]))


def test_array_equal_equiv():
    same(jnp.array_equal(np.ones(2), np.ones(3)), np.array_equal(np.ones(2), np.ones(3)))
    same(jnp.array_equal(np.array([1, np.nan]), np.array([1, np.nan]), equal_nan=True), np.bool_(True))
    same(jnp.array_equal(np.array([1, np.nan]), np.array([1, np.nan])), np.bool_(False))
    both(jnp.array_equal, np.array_equal, [(np.arange(3), np.arange(3)), (np.arange(2), np.array([0, 5]))], (D, D))
    same(jnp.array_equiv(np.ones(2), np.ones((3, 2))), np.bool_(True))
    same(jnp.array_equiv(np.ones(2), np.ones((3, 3))), np.bool_(False))


# --- histograms -------------------------------------------------------------------------------------------
def _jax_counts(r, kw):
    """JAX's counts are int64 without weights or density (numpy's are float64)."""
    r = list(r)
    if "weights" not in kw and not kw.get("density"):
        r[0] = r[0].astype(np.int64)
    return r


def test_histograms():
    x, y, w = RNG.normal(size=50), RNG.uniform(size=50), RNG.uniform(size=50)
    same(jnp.histogram_bin_edges(x, 7), np.histogram_bin_edges(x, 7))
    same(jnp.histogram_bin_edges(x, 4, (-1, 1)), np.histogram_bin_edges(x, 4, (-1, 1)))
    for kw in ({}, {"bins": (3, 5)}, {"bins": [np.array([-3, 0, 3.]), 4]}, {"weights": w}, {"density": True},
               {"range": [(-1, 1), None], "bins": 3}):
        same(jnp.histogram2d(x, y, **kw), _jax_counts(np.histogram2d(x, y, **kw), kw), rtol=1e-12, msg=str(kw))
    both(lambda x, y: jnp.histogram2d(x, y, 4), lambda x, y: _jax_counts(np.histogram2d(x, y, 4), {}),
         [(x, y), (x[:1], y[:1])], (D, D))
    s = RNG.normal(size=(40, 3))
    H, edges = jnp.histogramdd(s, (2, 3, 4), density=True)
    Hn, edges_n = np.histogramdd(s, (2, 3, 4), density=True)
    same([H] + edges, [Hn] + edges_n, rtol=1e-12)
    both(lambda s: jnp.histogramdd(s, 3), lambda s: _jax_counts(np.histogramdd(s, 3), {}), [(s,), (s[:2],)], D)


# --- pad with traced widths and every mode -------------------------------------------------------------
@pytest.mark.parametrize("mode", ["constant", "edge", "wrap", "reflect", "symmetric"])
def test_pad_modes_and_traced_widths(mode):
    x = np.arange(12.0).reshape(3, 4)
    for pw in (1, (1, 2), ((0, 2), (3, 1)), ((5, 6), (0, 0))):
        both(lambda x: jnp.pad(x, pw, mode=mode), lambda x: np.pad(x, pw, mode=mode), [(x,), (x[:1],)], D)
    f = dynjax.qjit(lambda x, a, b: jnp.pad(x, ((a, b), (b, 0)), mode=mode), abstracted_axes={0: "n"})
    for a, b in [(0, 0), (2, 1), (4, 3)]:
        for xx in (x, x[:1]):
            same(f(xx, a, b), np.pad(xx, ((a, b), (b, 0)), mode=mode), msg=f"{mode} {a} {b}")
    assert f.cache_info()["traces"] == 1
    g = dynjax.grad(lambda v: (jnp.pad(v, (1, 2), mode=mode) ** 2).sum())(np.arange(4.0))
    np.testing.assert_allclose(g, jax.grad(lambda v: (jjnp.pad(v, (1, 2), mode=mode) ** 2).sum())(np.arange(4.0)))


def test_pad_constant_values_and_errors():
    x = np.arange(12.0).reshape(3, 4)
    same(jnp.pad(x, 1, constant_values=((1, 2), (3, 4))), np.pad(x, 1, constant_values=((1, 2), (3, 4))))
    both(lambda x, a: jnp.pad(x, a, constant_values=-1.0), lambda x, a: np.pad(x, a, constant_values=-1.0),
         [(x, 2), (x, 0)])
    with pytest.raises(ValueError, match="non-negative"):
        jnp.pad(x, -1)
    with pytest.raises(ValueError, match="empty axis"):
        jnp.pad(np.zeros(0), 1, mode="edge")
    with pytest.raises(NotImplementedError, match="linear_ramp"):
        jnp.pad(x, 1, mode="linear_ramp")


# --- methods of traced values ---------------------------------------------------------------------------
def test_tracer_methods():
    x = np.array([[3.0, 1.0, 2.0], [0.5, -1.0, 4.0]])

    def f(x):
        return (x.std(), x.var(axis=0), x.cumsum(), x.cumprod(axis=1), x.clip(0, 2), x.round(), x.argsort(),
                x.trace(), x.dot(x.T), x[0].searchsorted(2.5), x.repeat(2), x[None].squeeze(), x.swapaxes(0, 1),
                x.diagonal(), x.conj(), x.real, x.imag, x.T, x.mT, x.astype(np.float32), x.any(), x.all(axis=1),
                x.take(np.array([0, 4])), x.argpartition(1)[:, 1], divmod(x, 2.0)[0], x.nbytes, x.itemsize,
                x.copy(), x.compress(np.array([True, False, True]), axis=1))
    same(dynjax.qjit(f)(x), f(x))
    same(dynjax.qjit(lambda x: (x.sort(axis=0), x.ptp(), round(x), x.partition(1)[:, 1], x.nonzero(size=3)[0]))(x),
         (np.sort(x, axis=0), np.ptp(x), np.round(x), np.sort(x)[:, 1], np.array([0, 0, 0])))


def test_tracer_method_errors():
    seen = {}

    def g(x):
        for name, fn in (("item", lambda: x.item()), ("tolist", lambda: x.tolist()), ("unique", lambda: x.unique()),
                         ("fill", lambda: x.fill(2)), ("foo", lambda: x.foo)):
            with pytest.raises(Exception) as e:
                fn()
            seen[name] = e.value
        return x
    dynjax.make_jaxpr(g)(np.ones(3))
    from dynjax.core.trace import ConcretizationError
    assert isinstance(seen["item"], ConcretizationError) and "traced" in str(seen["item"])
    assert "traced" in str(seen["tolist"])
    assert isinstance(seen["unique"], AttributeError) and "jnp.unique" in str(seen["unique"])
    assert isinstance(seen["fill"], AttributeError) and "full_like" in str(seen["fill"])
    assert isinstance(seen["foo"], AttributeError)


# --- dtype objects ------------------------------------------------------------------------------------------
def test_scalar_types_and_predicates():
    for name in ("float32", "int8", "uint16", "complex64", "bool_", "float16", "bfloat16", "double", "single",
                 "int_", "cdouble", "csingle"):
        t, jt = getattr(jnp, name), getattr(jjnp, name)
        same(t(3), np.asarray(jt(3)), msg=name)
        assert np.dtype(t) == np.dtype(jt) and t == np.dtype(jt).type
    same(dynjax.qjit(lambda v: jnp.float32(v) * 2)(np.arange(3)), np.arange(3, dtype=np.float32) * 2)
    assert np.zeros(2, jnp.float32).dtype == np.float32 and jnp.finfo(jnp.float32).eps == np.finfo(np.float32).eps
    for a, b in [(jnp.float32, jnp.floating), (jnp.bfloat16, jnp.inexact), (jnp.int8, jnp.floating),
                 (jnp.uint8, jnp.signedinteger), (jnp.complex64, jnp.number), (float, jnp.floating), ("i4", jnp.integer),
                 (jnp.bool_, jnp.integer), (np.float64, jnp.float64)]:
        assert jnp.issubdtype(a, b) == jjnp.issubdtype(a if not isinstance(a, type) or a in (float,)
                                                         else getattr(jjnp, a.__name__, a), b), (a, b)
    for d in (jnp.float32, jnp.int8, jnp.uint8, jnp.bool_, jnp.complex64, jnp.bfloat16):
        for kind in ("bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating",
                     "numeric", ("integral", "bool"), jnp.float32):
            assert jnp.isdtype(d, kind) == jjnp.isdtype(np.dtype(d), kind if kind is not jnp.float32 else jjnp.float32)
    for a, b in [(jnp.int32, jnp.float32), (jnp.int8, jnp.int16), (jnp.float64, jnp.float32)]:
        assert jnp.can_cast(a, b) == jjnp.can_cast(np.dtype(a), np.dtype(b))
    assert jnp.isscalar(3) and jnp.isscalar(np.array(1.0)) and not jnp.isscalar(np.ones(2))
    assert jnp.iterable([1]) and not jnp.iterable(3)
    assert jnp.dtype("float32") == np.float32 and isinstance(np.dtype("f4"), jnp.dtype)
    assert jnp.euler_gamma == jjnp.euler_gamma
    with pytest.raises(ValueError, match="unrecognized kind"):
        jnp.isdtype(jnp.float32, "floats")


# --- jnp.linalg: the array API aliases and the SVD-based functions ----------------------------------------
def test_linalg_matrix_power_multi_dot():
    S, B = RNG.normal(size=(3, 3)), RNG.normal(size=(2, 3, 3))
    for n in (0, 1, 2, 5, -3):
        same(jnp.linalg.matrix_power(S, n), np.linalg.matrix_power(S, n), rtol=1e-10)
        same(jnp.linalg.matrix_power(B, n), np.linalg.matrix_power(B, n), rtol=1e-10)
    both(lambda s: jnp.linalg.matrix_power(s, 3), lambda s: np.linalg.matrix_power(s, 3),
         [(S,), (S[:1, :1],), (S[:0, :0],)], ({0: "n", 1: "n"},), rtol=1e-12)
    v, A = RNG.normal(size=3), RNG.normal(size=(4, 3))
    same(jnp.linalg.multi_dot([v, S, S, A.T]), np.linalg.multi_dot([v, S, S, A.T]), rtol=1e-12)


def test_linalg_pinv_rank_lstsq_cond():
    A, S, B = RNG.normal(size=(4, 3)), RNG.normal(size=(3, 3)), RNG.normal(size=(2, 3, 3))
    for M in (A, A.T, S, B, np.zeros((3, 2)), np.diag([1.0, 1e-20, 2.0])):
        same(jnp.linalg.pinv(M), np.linalg.pinv(M), rtol=1e-10, atol=1e-12)
        same(jnp.linalg.matrix_rank(M), np.linalg.matrix_rank(M))
    both(jnp.linalg.pinv, np.linalg.pinv, [(A,), (A[:2],), (A[:1, :1],)], ({0: "m", 1: "n"},), rtol=1e-10, atol=1e-12)
    both(jnp.linalg.matrix_rank, np.linalg.matrix_rank, [(A,), (A[:2],)], ({0: "m", 1: "n"},))
    np.testing.assert_allclose(dynjax.grad(lambda m: jnp.linalg.pinv(m).sum())(A),
                               jax.grad(lambda m: jjnp.linalg.pinv(m).sum())(A), rtol=1e-8)
    for b in (RNG.normal(size=4), RNG.normal(size=(4, 2))):
        want = [np.asarray(w) for w in jjnp.linalg.lstsq(A, b)]
        both(jnp.linalg.lstsq, lambda a, b: want, [(A, b)], (D, D), rtol=1e-10, atol=1e-12)
    for p in (None, 2, -2, 1, np.inf, "fro"):
        same(jnp.linalg.cond(S, p), np.linalg.cond(S, p), rtol=1e-10)


def test_linalg_aliases_and_tensors():
    A, S, B, v = RNG.normal(size=(4, 3)), RNG.normal(size=(3, 3)), RNG.normal(size=(2, 3, 3)), RNG.normal(size=3)
    L, NL = jnp.linalg, np.linalg
    same(L.cross(A[:, :3], A[::-1]), NL.cross(A[:, :3], A[::-1]), rtol=1e-12)
    same(L.diagonal(B, offset=1), NL.diagonal(B, offset=1))
    same(L.trace(B, offset=-1), NL.trace(B, offset=-1), rtol=1e-12)
    same(L.outer(v, v), NL.outer(v, v))
    same(L.vecdot(A, A), NL.vecdot(A, A), rtol=1e-12)
    same(L.matmul(A, S), NL.matmul(A, S), rtol=1e-12)
    same(L.matrix_transpose(B), NL.matrix_transpose(B))
    same(L.tensordot(B, S, axes=2), NL.tensordot(B, S, axes=2), rtol=1e-12)
    T = RNG.normal(size=(4, 6, 8, 3))
    same(L.tensorinv(T, 2), NL.tensorinv(T, 2), rtol=1e-9, atol=1e-12)
    Ts, bs, Ta = RNG.normal(size=(2, 3, 6)), RNG.normal(size=(2, 3)), RNG.normal(size=(6, 2, 3))
    same(L.tensorsolve(Ts, bs), NL.tensorsolve(Ts, bs), rtol=1e-9)
    same(L.tensorsolve(Ta, bs, axes=(0,)), NL.tensorsolve(Ta, bs, axes=(0,)), rtol=1e-9)


# --- JAX's reduction keywords: where=, initial=, promote_integers, correction, out ---------------------------
XW = np.array([[1.0, 5.0, -2.0], [3.0, np.nan, 4.0], [0.5, 2.0, 1.0]])
MW = np.array([[True, False, True], [True, False, True], [False, False, True]])


@pytest.mark.parametrize("name,kws", [
    ("sum", [{"where": MW}, {"where": MW, "initial": 2.0}, {"initial": 1.0, "axis": 0}]),
    ("prod", [{"where": MW}, {"where": MW, "initial": 2.0, "axis": 1}]),
    ("mean", [{"where": MW}, {"where": MW, "axis": 0}, {"where": MW, "axis": 1, "keepdims": True}]),
    ("var", [{"where": MW}, {"where": MW, "axis": 1, "ddof": 1}, {"correction": 1, "axis": 0}]),
    ("std", [{"where": MW, "axis": 0}]),
    ("any", [{"where": MW}, {"where": MW, "axis": 1}]),
    ("all", [{"where": MW}, {"where": MW, "axis": 0}]),
    ("nansum", [{"where": MW}, {"where": MW, "initial": 1.5}]),
    ("nanmean", [{"where": MW, "axis": 1}])])
def test_reduction_keywords(name, kws):
    v = XW if name not in ("any", "all") else XW > 1
    for kw in kws:
        np_kw = {("ddof" if k == "correction" else k): val for k, val in kw.items()}
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = getattr(np, name)(v, **np_kw)
        rest = {k: val for k, val in kw.items() if k != "where"}
        both(lambda v, m: getattr(jnp, name)(v, where=m, **rest) if "where" in kw else getattr(jnp, name)(v, **rest),
             lambda v, m: want, [(v, MW)], (D, D), rtol=1e-12)


def test_reduction_keywords_more():
    xi = np.array([[1, 5, -2], [3, 0, 4]], np.int8)
    same(jnp.sum(xi, promote_integers=False), jjnp.sum(xi, promote_integers=False))
    same(jnp.sum(xi), jjnp.sum(xi))
    same(jnp.sum(xi, where=MW[:2]), np.sum(xi, where=MW[:2]))
    same(dynjax.qjit(lambda v: v.sum(where=v > 0))(XW[0]), np.sum(XW[0], where=XW[0] > 0))
    np.testing.assert_allclose(dynjax.grad(lambda v: jnp.mean(v, where=MW[0]))(XW[0]),
                               jax.grad(lambda v: jjnp.mean(v, where=MW[0]))(XW[0]))
    same(jnp.argmax(XW[0], keepdims=True), np.argmax(XW[0], keepdims=True))
    with pytest.raises(NotImplementedError, match="out"):
        jnp.sum(XW, out=np.zeros(()))
    with pytest.raises(ValueError, match="simultaneously"):
        jnp.var(XW, ddof=1, correction=1)
    with pytest.raises(TypeError, match="boolean"):
        jnp.sum(XW, where=1)


def test_moveaxis_sequences_and_ndarray_isinstance():
    x = np.zeros((2, 3, 4, 5))
    for s, d in [(0, -1), ([0, 1], [1, 0]), ([0, 2], [3, 0]), ((1,), (0,)), ([-1, 0], [0, -1]), ([0, 1, 2], [2, 1, 0])]:
        assert jnp.moveaxis(x, s, d).shape == np.moveaxis(x, s, d).shape, (s, d)
    both(lambda v: jnp.moveaxis(v, [0, 2], [3, 0]), lambda v: np.moveaxis(v, [0, 2], [3, 0]),
         [(np.arange(120.0).reshape(2, 3, 4, 5),)], D)
    with pytest.raises(ValueError, match="same number"):
        jnp.moveaxis(x, [0, 1], [0])
    checked = []
    dynjax.make_jaxpr(lambda v: checked.append(isinstance(v, jnp.ndarray)) or v)(np.ones(2))
    assert checked == [True] and isinstance(np.ones(2), jnp.ndarray) and not isinstance([1.0], jnp.ndarray)


def test_vmap_of_new_functions():
    X = RNG.normal(size=(4, 6))
    Y = RNG.normal(size=(4, 6))
    cases = [(jnp.gradient, np.gradient), (jnp.unwrap, np.unwrap), (jnp.i0, np.i0),
             (lambda v: jnp.trapezoid(v), lambda v: np.trapezoid(v)),
             (lambda v: jnp.polyval(v, 0.7), lambda v: np.polyval(v, 0.7)),
             (lambda v: jnp.nanvar(v), np.nanvar), (jnp.arcsinh, np.arcsinh),
             (lambda v: jnp.pad(v, (1, 2), mode="reflect"), lambda v: np.pad(v, (1, 2), mode="reflect")),
             (lambda v: jnp.sort(v, descending=True), lambda v: np.sort(v)[::-1]),
             (lambda v: jnp.kaiser(6, 2.0) * v, lambda v: np.kaiser(6, 2.0) * v)]
    for f, nf in cases:
        same(dynjax.vmap(f)(X), np.stack([nf(r) for r in X]), rtol=1e-12, atol=1e-14)
    same(dynjax.vmap(jnp.logaddexp)(X, Y), np.logaddexp(X, Y), rtol=1e-12)
    same(dynjax.vmap(lambda a, b: jnp.cross(a[:3], b[:3]))(X, Y), np.cross(X[:, :3], Y[:, :3]), rtol=1e-12)
    same(dynjax.vmap(lambda a, b: jnp.vecdot(a, b))(X, Y), np.vecdot(X, Y), rtol=1e-12)
    same(dynjax.vmap(lambda a: jnp.polymul(a, a))(X), np.stack([np.polymul(r, r) for r in X]), rtol=1e-12)
