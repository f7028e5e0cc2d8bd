"""Elementwise and cumulative numpy functions added for the numpy surface: round/around,
fmod, shifts (and ``<<`` / ``>>``), hypot, sinc, signbit, copysign, heaviside, nan_to_num,
isclose/allclose, cumprod, nancumsum/nancumprod, ptp. Each against numpy at sizes 0, 1 and
more with special values, eager and compiled over a dynamic axis (one trace)."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dynjax
import dynjax.numpy as jnp
from helpers import examples

SPECIAL = np.array([0.0, -0.0, 1.5, -2.5, 0.5, 2.675, -7.125, np.inf, -np.inf, np.nan, 1e-300, 1e300, 3.0])


def check(fn_np, fn_dj, *args, exact=True, sizes=(None, 0, 1)):
    """``fn_dj`` eagerly equals numpy; compiled with the arguments' first axes dynamic (one
    name: they have equal lengths) it equals the eager result bit for bit, at the full size
    and at sizes 0 and 1, from one trace."""
    axes = tuple({0: "n"} if np.ndim(a) else None for a in args)
    compiled = dynjax.qjit(fn_dj, abstracted_axes=axes)
    for k in sizes:
        a = tuple(v if k is None or not np.ndim(v) else v[:k] for v in args)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = np.asarray(fn_np(*a))
            got = np.asarray(fn_dj(*a))
            comp = np.asarray(compiled(*a))
        assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
        assert comp.dtype == got.dtype and comp.shape == got.shape
        for result, oracle in ((got, want), (comp, got)):
            if exact:
                np.testing.assert_array_equal(result, oracle)
            else:   # libm vs XLA's sin, fused multiply-adds: within an ulp or two
                np.testing.assert_allclose(result, oracle, rtol=5e-16 if want.dtype.itemsize >= 8 else 2.5e-7,
                                           equal_nan=True)
    assert compiled.cache_info()["traces"] == 1


@pytest.mark.parametrize("decimals", [0, 1, 2, -1, -2])
def test_round(decimals):
    check(lambda x: np.round(x, decimals), lambda x: jnp.round(x, decimals), SPECIAL)
    check(lambda x: np.around(x, decimals), lambda x: jnp.around(x, decimals), SPECIAL.astype(np.float32))
    check(lambda x: np.round(x, decimals), lambda x: jnp.round(x, decimals), np.arange(-25, 26, 5))
    z = SPECIAL[:6] + 1j * SPECIAL[::-1][:6]
    check(lambda x: np.round(x, decimals), lambda x: jnp.round(x, decimals), z)


def test_fmod_and_shifts():
    a = np.array([-7, -1, 0, 5, 9, 2**30], np.int32)
    b = np.array([3, -2, 4, -5, 1, 7], np.int32)
    check(np.fmod, jnp.fmod, a, b)
    check(np.fmod, jnp.fmod, SPECIAL, SPECIAL[::-1])
    check(np.fmod, jnp.fmod, a.astype(np.uint16), np.abs(b).astype(np.uint16))
    counts = np.array([0, 1, 5, 31, 2, 3], np.int32)
    for x in (a, a.astype(np.int8), np.abs(a).astype(np.uint32), np.array([-128, 127, -1, 64, 3, 1], np.int8)):
        c = counts.astype(x.dtype) % (8 * x.dtype.itemsize)
        check(np.left_shift, jnp.left_shift, x, c)
        check(np.right_shift, jnp.right_shift, x, c)
        check(lambda p, q: p << q, lambda p, q: p << q, x, c)
        check(lambda p, q: p >> q, lambda p, q: p >> q, x, c)
        check(lambda p: p >> 1, lambda p: p >> 1, x)
        check(lambda p: 1 << (p & 3), lambda p: 1 << (p & 3), x)
    with pytest.raises(TypeError):
        jnp.left_shift(np.ones(3), 1)


def test_shift_counts_out_of_range():
    """A count outside [0, bits) gives 0 (left, logical right) or the sign fill (arithmetic
    right), the same eagerly and compiled; numpy's kernels agree on this machine's dtypes."""
    x = np.array([5, -5, 1, -1], np.int32)
    s = np.array([32, 40, -1, 33], np.int32)
    f = dynjax.qjit(lambda x, s: (x << s, x >> s), abstracted_axes=({0: "n"}, {0: "n"}))
    for got in (f(x, s), (jnp.left_shift(x, s), jnp.right_shift(x, s))):
        np.testing.assert_array_equal(got[0], [0, 0, 0, 0])
        np.testing.assert_array_equal(got[1], [0, -1, 0, -1])


@settings(max_examples=examples(30))
@given(st.lists(st.integers(-2**31, 2**31 - 1), min_size=0, max_size=8), st.integers(0, 31),
       st.sampled_from([np.int32, np.uint32, np.int64]))
def test_shifts_hypothesis(values, count, dtype):
    x = np.array(values, np.int64).astype(dtype)
    c = np.full(x.shape, count, dtype)
    check(np.left_shift, jnp.left_shift, x, c)
    check(np.right_shift, jnp.right_shift, x, c)


@pytest.mark.parametrize("name", ["hypot", "copysign", "heaviside"])
def test_binary_float_functions(name):
    rng = np.random.default_rng(0)
    x, y = SPECIAL, np.roll(SPECIAL, 3)
    check(getattr(np, name), getattr(jnp, name), x, y, exact=name != "hypot")
    check(getattr(np, name), getattr(jnp, name), x.astype(np.float32), y.astype(np.float32), exact=name != "hypot")
    p, q = rng.normal(size=20) * 1e200, rng.normal(size=20) * 1e200   # hypot without overflow
    check(getattr(np, name), getattr(jnp, name), p, q, exact=name != "hypot")


@pytest.mark.parametrize("name", ["sinc", "signbit", "nan_to_num"])
def test_unary_float_functions(name):
    check(getattr(np, name), getattr(jnp, name), SPECIAL, exact=name != "sinc")
    check(getattr(np, name), getattr(jnp, name), SPECIAL.astype(np.float32), exact=name != "sinc")
    check(getattr(np, name), getattr(jnp, name), np.arange(-3, 4))
    if name == "nan_to_num":
        check(lambda x: np.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0),
              lambda x: jnp.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0), SPECIAL)
        z = SPECIAL + 1j * np.roll(SPECIAL, 2)
        check(np.nan_to_num, jnp.nan_to_num, z)
        bf = SPECIAL.astype(jnp.bfloat16)   # the largest bfloat16, not float32's
        got = jnp.nan_to_num(bf)
        assert got.dtype == bf.dtype and got[7] == jnp.finfo(jnp.bfloat16).max


def test_isclose_allclose():
    a = np.array([1.0, 1.0 + 1e-9, np.nan, np.inf, -np.inf, 0.0, 1e-9])
    b = np.array([1.0, 1.0, np.nan, np.inf, np.inf, 1e-9, 0.0])
    check(np.isclose, jnp.isclose, a, b)
    check(lambda p, q: np.isclose(p, q, equal_nan=True), lambda p, q: jnp.isclose(p, q, equal_nan=True), a, b)
    check(lambda p, q: np.isclose(p, q, rtol=0.5, atol=0), lambda p, q: jnp.isclose(p, q, rtol=0.5, atol=0), a, b)
    assert jnp.allclose(a[:2], b[:2]) is True and jnp.allclose(a, b) is False
    f = dynjax.qjit(lambda p, q: jnp.allclose(p, q, equal_nan=True), abstracted_axes=({0: "n"}, {0: "n"}))
    assert bool(f(a[:3], b[:3])) and not bool(f(a, b)) and bool(f(a[:0], b[:0]))


@pytest.mark.parametrize("name", ["cumprod", "nancumsum", "nancumprod"])
def test_cumulative(name):
    rng = np.random.default_rng(1)
    x = rng.choice([0.5, 2.0, -1.0, 1.0, 0.25, np.nan, 4.0], size=(300, 2))   # exact products
    for axis in (None, 0, 1, -1):
        check(lambda v: getattr(np, name)(v, axis=axis), lambda v: getattr(jnp, name)(v, axis=axis), x)
    for dt in (np.int8, np.uint16, bool, np.int64):
        v = rng.integers(0, 3, (9, 2)).astype(dt)
        check(lambda v: getattr(np, name)(v, axis=0), lambda v: getattr(jnp, name)(v, axis=0), v)
    check(lambda v: getattr(np, name)(v, axis=0, dtype=np.float32),
          lambda v: getattr(jnp, name)(v, axis=0, dtype=np.float32), x)


def test_cumprod_gradient():
    x = np.array([0.5, 2.0, 3.0, -1.5])
    g = dynjax.grad(lambda v: jnp.sum(jnp.cumprod(v)))(x)
    want = [sum(np.prod(np.delete(x[:i + 1], j)) for i in range(j, 4)) for j in range(4)]
    np.testing.assert_allclose(g, want, rtol=1e-14)


def test_ptp():
    x = np.array([[3.0, -1.0, 2.0], [0.5, 7.0, np.nan]])
    for kw in ({}, {"axis": 0}, {"axis": 1, "keepdims": True}):
        check(lambda v: np.ptp(v, **kw), lambda v: jnp.ptp(v, **kw), x, sizes=(None, 1))
    check(np.ptp, jnp.ptp, np.array([5, -3, 9], np.int16), sizes=(None, 1))
    with pytest.raises(ValueError, match="zero-size array"):
        jnp.ptp(np.zeros(0))
