"""var / std / count_nonzero and the classification and scaled elementwise functions against
numpy: axes, ddof, keepdims, special values, sizes 0, 1 and larger, eager and compiled with
a dynamic axis (one trace)."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dynjax
import dynjax.numpy as jnp
from helpers import examples

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


# --- order statistics and weighted means ---------------------------------------------------------
def both_ways(fn_np, fn_dj, x, exact=True, compile=True, **kw):
    """numpy vs eager dynjax (bit for bit when ``exact``), and compiled over a dynamic first
    axis vs eager (within an ulp: XLA contracts ``a + d * t`` into a fused multiply-add)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.asarray(fn_np(x, **kw))
        got = np.asarray(fn_dj(x, **kw))
        compiled = np.asarray(dynjax.qjit(lambda v: fn_dj(v, **kw), abstracted_axes={0: "n"})(x)) \
            if compile else got
    for g in (got, compiled):
        assert g.shape == want.shape and g.dtype == want.dtype, (g.shape, g.dtype, want.shape, want.dtype, kw)
    rtol = 1e-15 if want.dtype.itemsize >= 8 else 1e-6
    if exact:
        np.testing.assert_array_equal(got, want, err_msg=str(kw))
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-15, equal_nan=True, err_msg=str(kw))
    np.testing.assert_allclose(compiled, got, rtol=rtol, atol=1e-15, equal_nan=True, err_msg=str(kw))


def with_nans(rng, shape):
    x = rng.normal(size=shape)
    if x.size:
        x.flat[rng.integers(0, x.size, max(1, x.size // 4))] = np.nan
    if x.ndim == 2 and x.shape[1] > 1:
        x[:, -1] = np.nan   # a column of NaNs only
    return x


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median(name):
    rng = np.random.default_rng(3)
    for shape in [(0, 3), (1, 3), (2, 3), (5, 4), (8, 1)]:
        for x in (rng.normal(size=shape), with_nans(rng, shape), rng.integers(-5, 5, shape)):
            for kw in ({}, {"axis": 0}, {"axis": 1}, {"axis": -1, "keepdims": True}, {"axis": (0, 1)},
                       {"axis": None, "keepdims": True}):
                if x.shape[0] == 0 and kw.get("axis") in (1, -1):
                    continue
                both_ways(getattr(np, name), getattr(jnp, name), x, **kw)
    for dt in (np.float32, np.float16, np.uint8, np.int64):   # 16-bit: numpy's float32 mean
        both_ways(getattr(np, name), getattr(jnp, name), (rng.normal(size=(7, 2)) * 20).astype(dt), axis=0)


METHODS = ["linear", "lower", "higher", "nearest", "midpoint"]


@pytest.mark.parametrize("name", ["quantile", "nanquantile", "percentile", "nanpercentile"])
def test_quantiles(name):
    rng = np.random.default_rng(4)
    scale = 100 if "percentile" in name else 1
    qs = [0.0, 0.5, 1.0, 0.3, [0.0, 0.25, 0.7, 1.0], np.array([[0.1, 0.9], [0.5, 0.35]])]
    for shape in [(1, 3), (2, 3), (6, 4)]:
        xs = [rng.normal(size=shape), rng.integers(-9, 9, shape)]
        if name.startswith("nan"):
            xs.append(with_nans(rng, shape))
        for x in xs:
            for q in qs:
                q = np.multiply(q, scale).tolist() if isinstance(q, list) else (
                    q * scale if not isinstance(q, np.ndarray) else q * scale)
                for method in METHODS:
                    for kw in ({}, {"axis": 0}, {"axis": 1, "keepdims": True}):
                        # compiled: one of the shapes (the others only change sizes)
                        both_ways(lambda v, **k: getattr(np, name)(v, q, **k),
                                  lambda v, **k: getattr(jnp, name)(v, q, **k), x, exact=True,
                                  compile=shape == (6, 4) and x.dtype.kind == "f" and not kw, method=method, **kw)
    x32 = rng.normal(size=(5, 2)).astype(np.float32)   # a Python q keeps float32, an array promotes
    both_ways(lambda v: getattr(np, name)(v, 0.3 * scale), lambda v: getattr(jnp, name)(v, 0.3 * scale), x32)
    both_ways(lambda v: getattr(np, name)(v, np.array([0.3 * scale])),
              lambda v: getattr(jnp, name)(v, np.array([0.3 * scale])), x32)


def test_quantile_with_traced_q_and_dynamic_lengths():
    f = dynjax.qjit(lambda v, q: jnp.quantile(v, q), abstracted_axes=({0: "n"}, {0: "k"}))
    rng = np.random.default_rng(5)
    for n, k in [(1, 1), (5, 3), (9, 0), (2, 6)]:
        v, q = rng.normal(size=n), rng.uniform(size=k)
        np.testing.assert_allclose(f(v, q), np.quantile(v, q), rtol=1e-15, atol=1e-15)
    assert f.cache_info()["traces"] == 1


def test_quantile_of_nothing_is_nan():
    # numpy raises on an empty quantile and warns on an empty median; a dynamic axis that turns
    # out empty gives NaN in both
    f = dynjax.qjit(lambda v: (jnp.quantile(v, 0.5), jnp.median(v), jnp.nanquantile(v, [0.1, 0.2])),
                    abstracted_axes={0: "n"})
    for r in f(np.zeros(0)):
        assert np.all(np.isnan(r))
    for r, want in zip(f(np.array([np.nan, np.nan])), (np.nan, np.nan, [np.nan, np.nan])):
        np.testing.assert_array_equal(r, want)


_Q_COMPILED = {m: dynjax.qjit(lambda v, q, m=m: (jnp.quantile(v, q, axis=0, method=m),
                                                 jnp.nanquantile(v, q, axis=0, method=m)),
                               abstracted_axes=({0: "n"}, {0: "k"})) for m in METHODS}


@settings(max_examples=examples(40))
@given(n=st.integers(0, 9), m=st.integers(1, 3), seed=st.integers(0, 2**16),
       method=st.sampled_from(METHODS), q=st.lists(st.floats(0, 1), min_size=1, max_size=4))
def test_quantiles_hypothesis(n, m, seed, method, q):
    """Random values with ties and NaNs at random sizes (0 included), random quantiles: one
    compiled program per method serves them all."""
    rng = np.random.default_rng(seed)
    x = np.round(rng.normal(size=(n, m)), 1)   # ties
    x[rng.uniform(size=x.shape) < 0.2] = np.nan
    q = np.array(q)
    compiled = _Q_COMPILED[method](x, q)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eager = (jnp.quantile(x, q, axis=0, method=method), jnp.nanquantile(x, q, axis=0, method=method))
        if n:
            np.testing.assert_array_equal(eager[0], np.quantile(x, q, axis=0, method=method))
            np.testing.assert_array_equal(eager[1], np.nanquantile(x, q, axis=0, method=method))
        else:   # numpy raises (quantile) or drops the q axis (nanquantile) on empty input
            assert eager[0].shape == eager[1].shape == (len(q), m)
            assert np.all(np.isnan(eager[0])) and np.all(np.isnan(eager[1]))
    for c, e in zip(compiled, eager):
        np.testing.assert_allclose(c, e, rtol=1e-15, atol=1e-15, equal_nan=True)


def test_quantile_errors():
    with pytest.raises(ValueError, match=r"quantiles must be in the range \[0, 1\]"):
        jnp.quantile(np.ones(3), 1.5)
    with pytest.raises(ValueError, match=r"percentiles must be in the range \[0, 100\]"):
        jnp.percentile(np.ones(3), [50, -1])
    with pytest.raises(ValueError, match="method 'weibull' is not supported"):
        jnp.quantile(np.ones(3), 0.5, method="weibull")
    with pytest.raises(TypeError, match="complex values have no order"):
        jnp.median(np.ones(3, complex))
    with pytest.raises(TypeError, match="out= argument"):
        jnp.median(np.ones(3), out=np.ones(()))


def test_average():
    rng = np.random.default_rng(6)
    for n in (1, 2, 5):
        x = rng.normal(size=(n, 3))
        both_ways(np.average, jnp.average, x)
        both_ways(np.average, jnp.average, x, axis=0)
        both_ways(np.average, jnp.average, x, exact=False, axis=1, weights=np.array([1.0, 2.0, 0.5]))
        both_ways(lambda v: np.average(v, weights=v ** 2 + 1), lambda v: jnp.average(v, weights=v ** 2 + 1), x,
                  exact=False)
        both_ways(np.average, jnp.average, x, exact=False, axis=1, weights=np.array([1.0, 2.0, 0.5]),
                  keepdims=True)
        both_ways(lambda v, **k: np.average(v, **k)[1], lambda v, **k: jnp.average(v, **k)[1], x,
                  axis=1, weights=np.array([1.0, 2.0, 0.5]), returned=True)
        both_ways(lambda v, **k: np.average(v, **k)[1], lambda v, **k: jnp.average(v, **k)[1], x,
                  axis=0, returned=True)
        both_ways(np.average, jnp.average, rng.integers(0, 9, (n, 3)), axis=0)
    # weights along a dynamic axis, traced
    f = dynjax.qjit(lambda v, w: jnp.average(v, axis=0, weights=w), abstracted_axes=({0: "n"}, {0: "n"}))
    for n in (1, 4):
        v, w = rng.normal(size=(n, 2)), rng.uniform(size=n)
        np.testing.assert_allclose(f(v, w), np.average(v, axis=0, weights=w), rtol=1e-14)
    with pytest.raises(ValueError, match=r"length of weights \(2\) differs"):
        jnp.average(np.ones((3, 4)), axis=0, weights=np.ones(2))
    with pytest.raises(TypeError, match="axis must be given"):
        jnp.average(np.ones((3, 4)), weights=np.ones(4))


def test_mean_of_16_bit_floats_is_computed_in_float32():
    x = (np.random.default_rng(7).normal(size=(7, 3)) * 10).astype(np.float16)
    both_ways(np.mean, jnp.mean, x, axis=0)
