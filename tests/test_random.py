"""dynjax.random against JAX: the same key, shape and dtype give JAX's numbers.

* values recorded once from jax 0.10.2 (``RECORDED``; floats as their bit patterns) and live
  comparisons with the installed jax (x64 on, as dynjax's defaults are JAX's x64 defaults);
* eager and compiled (``qjit``) at static and dynamic sizes (0, 1, 7, 100) from one trace;
* ``vmap`` over split keys, a ``fori_loop`` carrying a key, ``grad`` through samples;
* errors: bad keys, shapes and dtypes.

Bit-for-bit: integer results everywhere; floats compiled (XLA evaluates the same operations
as in JAX's programs) and eagerly for ``uniform`` / ``bernoulli`` / ``categorical`` (no
transcendental function). Eagerly, samplers with ``log`` / ``erf_inv`` use numpy's functions:
compared within a few ulps. Float64 samplers built on ``log1p`` (exponential, laplace,
logistic) also differ by a few ulps compiled: dynjax's float64 ``log1p`` is the accurate one.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import jax
jax.config.update("jax_enable_x64", True)
import jax.random as jr  # noqa: E402

import dynjax  # noqa: E402
import dynjax.numpy as jnp  # noqa: E402
from dynjax import lax, random  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = (np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64))
SIZES = (0, 1, 7, 100)

RECORDED = {
    (0, 'key'): ('uint32', (2,), [0, 0]),
    (0, 'split'): ('uint32', (3, 2), [1797259609, 2579123966, 928981903, 3453687069, 4146024105, 2718843009]),
    (0, 'fold_in_7'): ('uint32', (2,), [2716826189, 292468403]),
    (0, 'bits_u32_5'): ('uint32', (5,), [4070199207, 4202968722, 1427181096, 2012915765, 2447653815]),
    (0, 'bits_u64_2x2'): ('uint64', (2, 2), [7719171245655871230, 3989946895414531357, 17807037942121513089, 10597664315880824766]),
    (0, 'uniform_f32_5'): ('float32', (5,), [1064475214, 1064993846, 1051337244, 1055913296, 1058137146]),
    (0, 'uniform_f64_5'): ('float64', (5,), [4601209873087491728, 4596960885320641928, 4606870062290452936, 4603349860324515098, 4602969089573600120]),
    (0, 'normal_f32_5'): ('float32', (5,), [1070576317, 1073847792, 3202220055, 3181445666, 1043616044]),
    (0, 'normal_f64_5'): ('float64', (5,), [13819956301806572573, 13828615798116809546, 4610857746434946967, 4595935814102313387, 4590491565605667708]),
    (0, 'randint_i32_6'): ('int32', (6,), [-1, -10, 2, 3, 1, -3]),
    (0, 'bernoulli_6'): ('bool', (6,), [1, 1, 0, 0, 0, 1]),
    (0, 'permutation_8'): ('int64', (8,), [0, 1, 5, 6, 4, 3, 2, 7]),
    (0, 'categorical_4'): ('int64', (4,), [2, 2, 2, 1]),
    (42, 'key'): ('uint32', (2,), [0, 42]),
    (42, 'split'): ('uint32', (3, 2), [1832780943, 270669613, 64467757, 2916123636, 2465931498, 255383827]),
    (42, 'fold_in_7'): ('uint32', (2,), [2547012911, 1371500959]),
    (42, 'bits_u32_5'): ('uint32', (5,), [2098992034, 2919706841, 2646866425, 2409546199, 1935504149]),
    (42, 'bits_u64_2x2'): ('uint64', (2, 2), [7871734211187709741, 276886910877598708, 10591095138341673235, 13462782411356743825]),
    (42, 'uniform_f32_5'): ('float32', (5,), [1056585764, 1059981104, 1058915320, 1057988288, 1055308516]),
    (42, 'uniform_f64_5'): ('float64', (5,), [4601358860358518916, 4579806337745978368, 4603346652718294810, 4604748843769571700, 4604370374266218970]),
    (42, 'normal_f32_5'): ('float32', (5,), [3169312533, 1055861736, 1050109537, 1042103076, 3187541227]),
    (42, 'normal_f64_5'): ('float64', (5,), [13819194999123091801, 13835440466195626554, 4595903083341743200, 4603690015613010774, 4602491918895960593]),
    (42, 'randint_i32_6'): ('int32', (6,), [-6, 4, 1, -1, -1, 9]),
    (42, 'bernoulli_6'): ('bool', (6,), [1, 1, 0, 0, 0, 0]),
    (42, 'permutation_8'): ('int64', (8,), [7, 4, 2, 5, 3, 6, 0, 1]),
    (42, 'categorical_4'): ('int64', (4,), [3, 3, 2, 1]),
}


def _bits_view(a):
    a = np.atleast_1d(np.asarray(a))
    if a.dtype.kind == "f" or a.dtype == BF16:
        return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])
    return a


def assert_bitwise(got, expected):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape, \
        (got.dtype, got.shape, expected.dtype, expected.shape)
    bad = _bits_view(got) != _bits_view(expected)
    assert not np.any(bad), f"{int(np.sum(bad))} of {got.size} differ: {got.ravel()[:5]} vs {expected.ravel()[:5]}"


def assert_ulps(got, expected, ulps):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    g, e = got.astype(np.float64), expected.astype(np.float64)
    spacing = np.abs(np.spacing(expected.astype(np.float32 if got.dtype.itemsize <= 4 else np.float64))).astype(np.float64)
    if got.dtype.itemsize == 2:
        spacing = spacing * 2.0 ** (23 - ml_dtypes.finfo(got.dtype).nmant)
    assert np.all(np.abs(g - e) <= ulps * spacing), np.max(np.abs(g - e) / spacing)


def assert_close(got, expected, eps_count):
    """Within ``eps_count`` machine epsilons of the dtype, relative and absolute (the samplers
    are O(1); near 0, log(u) - log1p(-u) and the like cancel, so absolute errors count)."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    eps = float(ml_dtypes.finfo(got.dtype).eps)
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64),
                               rtol=eps_count * eps, atol=eps_count * eps)


def _recorded(dtype, shape, values):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return np.array(values, np.uint32 if dt == np.float32 else np.uint64).view(dt).reshape(shape)
    return np.array(values, np.uint64 if dt == np.uint64 else np.int64).astype(dt).reshape(shape)


_RECORDED_FNS = {
    "key": lambda k: k,
    "split": lambda k: random.split(k, 3),
    "fold_in_7": lambda k: random.fold_in(k, 7),
    "bits_u32_5": lambda k: random.bits(k, (5,), np.uint32),
    "bits_u64_2x2": lambda k: random.bits(k, (2, 2), np.uint64),
    "uniform_f32_5": lambda k: random.uniform(k, (5,), np.float32),
    "uniform_f64_5": lambda k: random.uniform(k, (5,), np.float64),
    "normal_f32_5": lambda k: random.normal(k, (5,), np.float32),
    "normal_f64_5": lambda k: random.normal(k, (5,), np.float64),
    "randint_i32_6": lambda k: random.randint(k, (6,), -10, 10, np.int32),
    "bernoulli_6": lambda k: random.bernoulli(k, 0.5, (6,)),
    "permutation_8": lambda k: random.permutation(k, 8),
    "categorical_4": lambda k: random.categorical(k, np.log(np.array([0.1, 0.2, 0.3, 0.4])), shape=(4,)),
}
_TRANSCENDENTAL = {"normal_f32_5", "normal_f64_5"}


@pytest.mark.parametrize("seed", (0, 42))
def test_recorded_values(seed):
    """Compiled: every recorded value bit for bit; eager: bit for bit except erf_inv (ulps)."""
    names = list(_RECORDED_FNS)
    compiled = dynjax.qjit(lambda s: [_RECORDED_FNS[n](random.PRNGKey(s)) for n in names])(seed)
    for name, got in zip(names, compiled):
        expected = _recorded(*RECORDED[(seed, name)])
        assert_bitwise(got, expected)
        eager = _RECORDED_FNS[name](random.PRNGKey(seed))
        if name in _TRANSCENDENTAL:
            assert_ulps(eager, expected, 4)
        else:
            assert_bitwise(eager, expected)


# --- keys ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", (0, 1, 42, -1, 2 ** 32 + 5, 2 ** 63 - 1, np.int32(-7), np.uint32(9)))
def test_prng_key(seed):
    assert_bitwise(random.PRNGKey(seed), jr.PRNGKey(seed))
    assert_bitwise(random.key_data(random.key(seed)), jr.key_data(jr.key(seed)))


def test_keys_compiled_from_a_traced_seed():
    f = dynjax.qjit(lambda s: (random.PRNGKey(s), random.fold_in(random.PRNGKey(3), s)))
    for s in (0, 5, -1, 2 ** 40):
        k, fk = f(s)
        assert_bitwise(k, jr.PRNGKey(s))
        assert_bitwise(fk, jr.fold_in(jr.PRNGKey(3), s % 2 ** 32))


def test_split_fold_in_shapes():
    k = jr.PRNGKey(11)
    kd = np.asarray(k)
    for num in (1, 2, 5, (2, 3)):
        assert_bitwise(random.split(kd, num), jr.split(k, num))
    for data in (0, 1, 2 ** 32 - 1, np.uint32(77), np.int64(123)):
        assert_bitwise(random.fold_in(kd, data), jr.fold_in(k, data))
    assert_bitwise(random.wrap_key_data(kd), kd)


# --- eager table ---------------------------------------------------------------------------------
KEYS = (0, 7, 2 ** 33 + 1)
SHAPES = ((), (1,), (7,), (3, 5))


@pytest.mark.parametrize("seed", KEYS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_eager_table(seed, shape):
    k = jr.PRNGKey(seed)
    kd = np.asarray(k)
    for dt in (np.uint8, np.uint16, np.uint32, np.uint64):
        assert_bitwise(random.bits(kd, shape, dt), jr.bits(k, shape, dt))
    for dt in FLOATS:
        assert_bitwise(random.uniform(kd, shape, dt), jr.uniform(k, shape, dt))
        # minval + u * (maxval - minval): XLA fuses a multiply-add, numpy rounds twice (1 ulp)
        # (an ulp of the product, up to 5)
        np.testing.assert_allclose(np.asarray(random.uniform(kd, shape, dt, -2.0, 3.0), np.float64),
                                   np.asarray(jr.uniform(k, shape, dt, -2.0, 3.0), np.float64),
                                   rtol=0, atol=5 * float(ml_dtypes.finfo(dt).eps))
        assert_bitwise(random.bernoulli(kd, dt.type(0.3), shape), jr.bernoulli(k, dt.type(0.3), shape))
        for fn in ("normal", "gumbel", "exponential", "laplace", "logistic"):
            # float64: XLA's log1p (in JAX's numbers) is up to ~130 ulps off near -0.4
            assert_close(getattr(random, fn)(kd, shape, dt), getattr(jr, fn)(k, shape, dt),
                         256 if dt.itemsize == 8 else 8)
    for dt in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32):
        for lo, hi in ((0, 10), (3, 3), (5, 2), (0, 256), (-7, 1000)):
            if np.dtype(dt).kind == "u" and lo < 0:
                continue
            assert_bitwise(random.randint(kd, shape, lo, hi, dt), jr.randint(k, shape, lo, hi, dt))
    assert_bitwise(random.randint(kd, shape, 0, 5), jr.randint(k, shape, 0, 5))   # int64 default


def test_eager_selection():
    k = jr.PRNGKey(3)
    kd = np.asarray(k)
    logits = np.random.default_rng(0).normal(size=(4, 6))
    assert_bitwise(random.categorical(kd, logits), jr.categorical(k, logits))
    assert_bitwise(random.categorical(kd, logits, axis=0, shape=(5, 6)), jr.categorical(k, logits, axis=0, shape=(5, 6)))
    assert_bitwise(random.categorical(kd, logits, shape=(3, 4), replace=False),
                   jr.categorical(k, logits, shape=(3, 4), replace=False))
    for n in (0, 1, 2, 10, 2000):
        assert_bitwise(random.permutation(kd, n), jr.permutation(k, n))
    x = np.arange(12.0).reshape(3, 4)
    assert_bitwise(random.permutation(kd, x, axis=1), jr.permutation(k, x, axis=1))
    assert_bitwise(random.permutation(kd, x, axis=1, independent=True), jr.permutation(k, x, axis=1, independent=True))
    assert_bitwise(random.choice(kd, 10, (5,)), jr.choice(k, 10, (5,)))
    assert_bitwise(random.choice(kd, 10, (2, 3), replace=False), jr.choice(k, 10, (2, 3), replace=False))
    p = np.array([0.1, 0.2, 0.3, 0.4])
    assert_bitwise(random.choice(kd, 4, (20,), p=p), jr.choice(k, 4, (20,), p=p))
    assert_bitwise(random.choice(kd, 4, (3,), replace=False, p=p), jr.choice(k, 4, (3,), replace=False, p=p))
    assert_bitwise(random.choice(kd, x, (2,), axis=1), jr.choice(k, x, (2,), axis=1))
    assert_bitwise(random.choice(kd, 5, (0,)), jr.choice(k, 5, (0,)))


# --- compiled, one trace for every size ----------------------------------------------------------
@pytest.fixture
def exact_tier(monkeypatch):
    """Every size compiled exactly: under the default policy a new size may be served eagerly
    (tier 0, numpy's transcendental functions) while its bucket compiles."""
    monkeypatch.setenv("DYNJAX_TIERS", "exact")


@pytest.mark.slow
def test_compiled_dynamic_sizes_bitwise(exact_tier):
    """``n`` is an int argument: one trace, and at every n exactly JAX's numbers for that n."""
    k = jr.PRNGKey(5)
    kd = np.asarray(k)
    dts = (np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64))

    @dynjax.qjit
    def f(key, n):
        out = [random.bits(key, (n,), np.uint32), random.randint(key, (n, 2), -5, 50, np.int16),
               random.permutation(key, n), random.bernoulli(key, 0.25, (n,)),
               random.categorical(key, jnp.zeros((n, 3)))]
        for dt in dts:
            out += [random.uniform(key, (n, 3), dt), random.normal(key, (n,), dt),
                    random.gumbel(key, (n,), dt)]
        return out

    for n in SIZES:
        got = f(kd, n)
        expected = [jr.bits(k, (n,), np.uint32), jr.randint(k, (n, 2), -5, 50, np.int16),
                    jr.permutation(k, n), jr.bernoulli(k, 0.25, (n,)),
                    jr.categorical(k, np.zeros((n, 3)))]
        for dt in dts:
            expected += [jr.uniform(k, (n, 3), dt), jr.normal(k, (n,), dt), jr.gumbel(k, (n,), dt)]
        for i, (g, e) in enumerate(zip(got, expected)):
            if i >= 5 and dts[(i - 5) // 3].itemsize == 2 and (i - 5) % 3 == 2:
                # gumbel's log(log) at 16 bits: XLA rounds the inner log differently
                assert_close(g, e, 4)
            else:
                assert_bitwise(g, e)
    assert f.cache_info()["traces"] == 1


def test_padded_buckets_hold_the_exact_values(monkeypatch):
    """Tier 1: the bucket executable's values at the logical positions are those of the size."""
    monkeypatch.setenv("DYNJAX_TIERS", "padded")
    k = jr.PRNGKey(2)
    f = dynjax.qjit(lambda key, n: (random.bits(key, (n, 2), np.uint32), random.normal(key, (n,), np.float32),
                                    random.permutation(key, n)))
    for n in (3, 7, 20):
        b, z, p = f(np.asarray(k), n)
        assert_bitwise(b, jr.bits(k, (n, 2), np.uint32))
        assert_bitwise(z, jr.normal(k, (n,), np.float32))
        assert_bitwise(p, jr.permutation(k, n))
    assert f.cache_info()["padded_runs"] > 0


def test_abstracted_axis_and_float32_samplers(exact_tier):
    k = jr.PRNGKey(9)
    kd = np.asarray(k)
    f = dynjax.qjit(lambda key, x: (random.normal(key, x.shape, np.float32) * x,
                                    random.exponential(key, x.shape, np.float32),
                                    random.laplace(key, x.shape, np.float32),
                                    random.logistic(key, x.shape, np.float32)),
                    abstracted_axes=(None, {0: "n"}))
    for n in (0, 1, 7):
        x = np.ones(n, np.float32)
        got = f(kd, x)
        assert_bitwise(got[0], jr.normal(k, (n,), np.float32))
        for g, fn in zip(got[1:], ("exponential", "laplace", "logistic")):
            assert_bitwise(g, getattr(jr, fn)(k, (n,), np.float32))


# --- transformations ------------------------------------------------------------------------------
def test_vmap_over_split_keys(exact_tier):
    k = jr.PRNGKey(0)
    keys = np.asarray(jr.split(k, 5))
    expected = jax.vmap(lambda kk: jr.normal(kk, (3,)))(jr.split(k, 5))
    assert_ulps(dynjax.vmap(lambda kk: random.normal(kk, (3,)))(keys), expected, 4)
    assert_bitwise(dynjax.qjit(dynjax.vmap(lambda kk: random.normal(kk, (3,))))(keys), expected)
    assert_bitwise(dynjax.vmap(lambda kk: random.uniform(kk, (2, 2)))(keys),
                   jax.vmap(lambda kk: jr.uniform(kk, (2, 2)))(jr.split(k, 5)))
    assert_bitwise(dynjax.vmap(lambda kk: random.split(kk))(keys), jax.vmap(jr.split)(jr.split(k, 5)))
    assert_bitwise(dynjax.vmap(lambda kk: random.randint(kk, (4,), 0, 9))(keys),
                   jax.vmap(lambda kk: jr.randint(kk, (4,), 0, 9))(jr.split(k, 5)))


def test_fori_loop_carrying_a_key():
    def body(i, carry):
        key, acc = carry
        key, sub = random.split(key)
        return key, acc + random.uniform(sub, (4,))

    def jbody(i, carry):
        key, acc = carry
        key, sub = jr.split(key)
        return key, acc + jr.uniform(sub, (4,))

    expected = jax.lax.fori_loop(0, 6, jbody, (jr.PRNGKey(1), jax.numpy.zeros(4)))
    got = dynjax.qjit(lambda k: lax.fori_loop(0, 6, body, (k, jnp.zeros(4))))(np.asarray(jr.PRNGKey(1)))
    assert_bitwise(got[0], expected[0])
    assert_bitwise(got[1], expected[1])
    eager = lax.fori_loop(0, 6, body, (random.PRNGKey(1), jnp.zeros(4)))
    assert_bitwise(eager[1], expected[1])


def test_grad_reparameterization():
    """d/dmu and d/dsigma of mean(mu + sigma * eps): 1 and mean(eps); the key has no derivative."""
    key = random.PRNGKey(4)

    def loss(mu, sigma):
        eps = random.normal(key, (50,))
        return jnp.mean(mu + sigma * eps)

    eps = np.asarray(dynjax.qjit(lambda k: random.normal(k, (50,)))(key))
    for g in (dynjax.grad(loss, argnums=(0, 1)), dynjax.qjit(dynjax.grad(loss, argnums=(0, 1)))):
        dmu, dsigma = g(0.5, 2.0)
        np.testing.assert_allclose(dmu, 1.0, rtol=1e-14)
        np.testing.assert_allclose(dsigma, eps.mean(), rtol=1e-9)
    # a sample's derivative with respect to a float that only reaches it through the bits is 0
    d = dynjax.grad(lambda s: jnp.sum(random.uniform(random.PRNGKey(lax.convert_element_type(s, np.int64)), (3,)) * 0 + s))(1.0)
    np.testing.assert_allclose(d, 3.0)   # the sum of three copies of s


# --- distributions (sanity, tolerance from the sample size) --------------------------------------
def test_moments():
    k = random.PRNGKey(123)
    n = 20000
    tol = 5 / np.sqrt(n)
    z = np.asarray(random.normal(k, (n,)))
    assert abs(z.mean()) < tol and abs(z.var() - 1) < 3 * tol
    u = np.asarray(random.uniform(k, (n,), minval=2.0, maxval=4.0))
    assert u.min() >= 2.0 and u.max() < 4.0 and abs(u.mean() - 3.0) < tol
    r = np.asarray(random.randint(k, (n,), 0, 10))
    assert r.min() == 0 and r.max() == 9 and abs(r.mean() - 4.5) < 30 * tol
    t = np.asarray(random.truncated_normal(k, -1.0, 0.5, (n,)))
    assert t.min() > -1.0 and t.max() < 0.5


# --- errors --------------------------------------------------------------------------------------
def test_bad_keys():
    for bad in (np.zeros(3, np.uint32), np.zeros(2, np.float32), np.zeros(2, np.int32), 5):
        with pytest.raises(TypeError, match="key"):
            random.normal(bad, (3,))
    with pytest.raises(ValueError, match="single key"):
        random.uniform(np.zeros((4, 2), np.uint32), (3,))
    with pytest.raises(TypeError, match="key"):
        dynjax.qjit(lambda k: random.uniform(k, (2,)))(np.zeros(3, np.uint32))


def test_bad_arguments():
    k = random.PRNGKey(0)
    with pytest.raises(ValueError, match="float"):
        random.uniform(k, (2,), np.int32)
    with pytest.raises(TypeError, match="integer"):
        random.randint(k, (2,), 0, 5, np.float32)
    with pytest.raises(ValueError, match="unsigned"):
        random.bits(k, (2,), np.int32)
    with pytest.raises(ValueError, match="negative"):
        random.normal(k, (-1,))
    with pytest.raises(TypeError, match="floating"):
        random.bernoulli(k, 1, (2,))
    with pytest.raises(ValueError, match="larger sample"):
        random.choice(k, 3, (4,), replace=False)
    with pytest.raises(TypeError, match="scalar"):
        random.fold_in(k, np.arange(2))
    # maxval <= minval gives minval, as in JAX
    np.testing.assert_array_equal(random.randint(k, (4,), 5, 2), np.full(4, 5))


# --- dynjax.nn.initializers ----------------------------------------------------------------------
def _jax_at_xla_defaults(init, key, shape, dt):
    """JAX's value of ``init(key, shape, dt)`` compiled with XLA's default options, as a user
    runs it: the suite's XLA_FLAGS (conftest.py) turn LLVM's optimizations off, and without
    them XLA rounds a few values of a fused uniform differently in the last bit."""
    from helpers import XLA_DEFAULT_OPTIONS
    return jax.jit(init, static_argnums=(1, 2), compiler_options=XLA_DEFAULT_OPTIONS)(key, shape, dt)


@pytest.mark.slow
def test_initializers_against_jax(exact_tier, xla_defaults):
    # bit for bit: dynjax's and JAX's programs both compiled with XLA's defaults
    import jax.nn.initializers as ji
    from dynjax.nn import initializers as di
    k = jr.PRNGKey(3)
    kd = np.asarray(k)
    assert_bitwise(di.zeros(kd, (3, 4)), ji.zeros(k, (3, 4)))
    assert_bitwise(di.ones(kd, (2,), np.float32), ji.ones(k, (2,), np.float32))
    assert_bitwise(di.constant(2.5)(kd, (2, 2)), ji.constant(2.5)(k, (2, 2)))
    for dt in (np.float32, np.float64):
        shape = (3, 3, 4, 5)
        names = ("glorot_uniform", "glorot_normal", "he_normal", "he_uniform", "lecun_normal",
                 "lecun_uniform")
        f = dynjax.qjit(lambda kk: [getattr(di, n)()(kk, shape, dt) for n in names]
                        + [di.uniform()(kk, (4, 5), dt), di.normal()(kk, (4, 5), dt),
                           di.truncated_normal()(kk, (4, 5), dt)])
        got = f(kd)
        for g, n in zip(got, names):
            assert_bitwise(g, _jax_at_xla_defaults(getattr(ji, n)(), k, shape, dt))
        assert_bitwise(got[-3], _jax_at_xla_defaults(ji.uniform(), k, (4, 5), dt))
        # normal(...) * stddev: XLA folds the two constant factors differently in JAX's program
        assert_close(got[-2], ji.normal()(k, (4, 5), dt), 4)
        assert_close(got[-1], ji.truncated_normal()(k, (4, 5), dt), 4)
        assert_close(di.glorot_normal()(kd, shape, dt), ji.glorot_normal()(k, shape, dt), 256)
        vs = di.variance_scaling(0.5, "fan_geo_avg", "normal", in_axis=(0, 1), out_axis=3)
        assert_close(dynjax.qjit(lambda kk: vs(kk, shape, dt))(kd),
                     ji.variance_scaling(0.5, "fan_geo_avg", "normal", in_axis=(0, 1), out_axis=3)(k, shape, dt), 4)
        for oshape in ((6, 4), (3, 5), (2, 3, 4)):
            q = np.asarray(di.orthogonal()(kd, oshape, dt))
            np.testing.assert_allclose(q, ji.orthogonal()(k, oshape, dt), atol=50 * np.finfo(dt).eps)
    with pytest.raises(ValueError, match="2D"):
        di.orthogonal()(kd, (3,))
    with pytest.raises(ValueError, match="mode"):
        di.variance_scaling(1.0, "fan_bad", "normal")


def test_clone_key_impl_key_dtype():
    """JAX's key helpers on dynjax's keys (raw uint32[..., 2] data)."""
    key = random.PRNGKey(3)
    assert random.clone(key) is key
    np.testing.assert_array_equal(random.uniform(random.clone(key), (3,)), random.uniform(key, (3,)))
    assert random.key_impl(key) == jr.key_impl(jr.PRNGKey(3)) == "threefry2x32"
    assert random.key_impl(random.split(key, 4)) == "threefry2x32"
    assert dynjax.qjit(lambda k: random.clone(k))(key).dtype == np.uint32
    assert random.key_dtype() == random.key_dtype("threefry2x32") == np.dtype(np.uint32)
    assert random.key_dtype() == random.key_data(key).dtype
    with pytest.raises(ValueError, match="unrecognized PRNG implementation"):
        random.key_dtype("foo")
    with pytest.raises(ValueError):
        jr.key_dtype("foo")
    with pytest.raises(ValueError):
        random.key_dtype("rbg")      # a JAX implementation that dynjax does not have
    with pytest.raises(TypeError):
        random.key_impl(np.ones(3))
