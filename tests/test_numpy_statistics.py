"""var / std / count_nonzero and the classification and scaled elementwise functions against
numpy: axes, ddof, keepdims, special values, sizes 0, 1 and larger, eager and compiled with
a dynamic axis (one trace)."""
import warnings

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp

SPECIAL = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 1e-300, 7.0])


def compare(fn_np, fn_dj, x, **kw):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = fn_np(x, **kw)
        got = fn_dj(x, **kw)
        compiled = dynjax.qjit(lambda v: fn_dj(v, **kw), abstracted_axes={0: "n"})(x)
    for g in (got, compiled):
        g = np.asarray(g)
        assert g.shape == np.shape(want) and g.dtype == np.asarray(want).dtype, (g.shape, g.dtype, np.shape(want))
        rtol = 1e-12 if g.dtype.itemsize >= 8 else 1e-6   # float32: one rounding of a constant
        np.testing.assert_allclose(g, want, rtol=rtol, atol=1e-300, equal_nan=True)


@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std(name):
    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 7):
        x = rng.normal(size=(n, 3))
        for kw in ({}, {"axis": 0}, {"axis": 1}, {"axis": 0, "ddof": 1}, {"axis": (0, 1), "keepdims": True},
                   {"axis": 1, "ddof": 2, "keepdims": True}):
            compare(getattr(np, name), getattr(jnp, name), x, **kw)
        z = x + 1j * rng.normal(size=(n, 3))   # a complex input has a real variance
        compare(getattr(np, name), getattr(jnp, name), z, axis=0)
        compare(getattr(np, name), getattr(jnp, name), (x * 10).astype(np.int32), axis=0)


def test_var_one_trace_across_sizes():
    f = dynjax.qjit(lambda v: jnp.var(v, ddof=1), abstracted_axes={0: "n"})
    for n in (0, 1, 2, 9):
        x = np.linspace(-1, 2, n)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_allclose(f(x), np.var(x, ddof=1), rtol=1e-12, equal_nan=True)
    assert f.cache_info()["traces"] == 1


def test_count_nonzero():
    x = np.array([[0, 1, 2], [0, 0, 3]])
    for n in (0, 1, 2):
        for kw in ({}, {"axis": 0}, {"axis": 1, "keepdims": True}):
            compare(np.count_nonzero, jnp.count_nonzero, x[:n], **kw)
    compare(np.count_nonzero, jnp.count_nonzero, SPECIAL)


@pytest.mark.parametrize("name", ["isnan", "isinf", "log2", "log10", "exp2", "deg2rad", "rad2deg"])
def test_elementwise(name):
    for x in (SPECIAL, SPECIAL[:0], SPECIAL[:1], np.arange(-3, 4), np.arange(4.0, dtype=np.float32)):
        if name in ("log2", "log10", "exp2", "deg2rad", "rad2deg") and x.dtype.kind == "i":
            x = x.astype(np.float64)   # numpy would compute integers in float16 / float32
        compare(getattr(np, name), getattr(jnp, name), x)
    if name in ("isnan", "isinf"):
        z = np.array([1 + 1j, complex(np.nan, 0), complex(0, np.inf), complex(np.inf, np.nan)])
        compare(getattr(np, name), getattr(jnp, name), z)


@pytest.mark.parametrize("name", ["nansum", "nanmean", "nanmax", "nanmin"])
def test_nan_reductions(name):
    x = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [-2.0, 0.5, np.inf]])
    for n in (1, 2, 3):
        for kw in ({}, {"axis": 0}, {"axis": 1}, {"axis": 1, "keepdims": True}):
            compare(getattr(np, name), getattr(jnp, name), x[:n], **kw)
    compare(getattr(np, name), getattr(jnp, name), np.arange(6).reshape(2, 3), axis=1)
    if name in ("nansum", "nanmean"):
        compare(getattr(np, name), getattr(jnp, name), x[:0], axis=0)


@pytest.mark.parametrize("name", ["tril", "triu"])
def test_triangles(name):
    for n, m in [(0, 3), (1, 1), (3, 4), (4, 2)]:
        x = np.arange(1.0, 1 + n * m).reshape(n, m)
        for k in (-1, 0, 2):
            compare(lambda v, k=k: getattr(np, name)(v, k), lambda v, k=k: getattr(jnp, name)(v, k), x)
    compare(getattr(np, name), getattr(jnp, name), np.ones((2, 3, 3)))


def test_atleast_tensordot_kron():
    for f in ("atleast_1d", "atleast_2d", "atleast_3d"):
        for x in (np.float64(2.0), np.arange(3.0), np.ones((2, 3)), np.ones((0, 2, 1))):
            got, want = getattr(jnp, f)(x), getattr(np, f)(x)
            assert np.shape(got) == want.shape
            np.testing.assert_array_equal(got, want)
    rng = np.random.default_rng(0)
    for n in (0, 1, 4):
        a, b = rng.normal(size=(n, 3, 2)), rng.normal(size=(3, 2, 5))
        compare(lambda v: np.tensordot(v, b, 2), lambda v: jnp.tensordot(v, b, 2), a)
        compare(lambda v: np.tensordot(v, b, ([1], [0])), lambda v: jnp.tensordot(v, b, ([1], [0])), a)
        p, q = rng.normal(size=(n, 2)), rng.normal(size=(3, 2))
        compare(lambda v: np.kron(v, q), lambda v: jnp.kron(v, q), p)
        compare(lambda v: np.kron(q, v), lambda v: jnp.kron(q, v), p)
    compare(lambda v: np.kron(v, np.arange(3.0)), lambda v: jnp.kron(v, np.arange(3.0)), np.ones(4))
