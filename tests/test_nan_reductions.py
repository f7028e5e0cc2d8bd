"""Reductions over data holding NaN and infinities: compiled results equal numpy's.

XLA:CPU (jaxlib 0.10.2) hands a reduction whose body is a single ``maximum`` / ``minimum`` to a
YNNPACK fusion, which drops a NaN from rows of 64 or more elements (``max([nan, 1, ...])``
came out a number, in jax too). dynjax's float max / min reductions carry a NaN forward in
their body (``lowering/reductions.py: _nan_keeping``), which XLA then emits itself; these
tests run with XLA's default emitters and optimization level, as a user's process does
(``xla_defaults``), on the exact tier and on the padded one."""
import numpy as np
import pytest

import dynjax
import dynjax.numpy as dnp
from ml_dtypes import bfloat16

DTYPES = [np.float64, np.float32, np.float16, bfloat16]
SHAPES = [(300, 300), (64, 64), (65, 130), (1000,), (3, 70, 65)]


def _data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    flat = x.reshape(-1)
    # a NaN, an inf and a -inf at spread positions (not the first or last of a row)
    for k, v in zip((len(flat) // 2 + 1, len(flat) // 3 + 2, len(flat) // 5 + 3), (np.nan, np.inf, -np.inf)):
        flat[k] = v
    return x.astype(dtype)


def _reductions(x):
    axes = [None] + list(range(x.ndim))
    outs = []
    for ax in axes:
        outs += [dnp.max(x, axis=ax), dnp.min(x, axis=ax), dnp.nanmax(x, axis=ax), dnp.nanmin(x, axis=ax)]
        if ax is not None:
            outs += [dnp.argmax(x, axis=ax), dnp.argmin(x, axis=ax)]
    return outs


def _numpy_reductions(x):
    axes = [None] + list(range(x.ndim))
    outs = []
    with np.errstate(invalid="ignore"):
        for ax in axes:
            outs += [np.max(x, axis=ax), np.min(x, axis=ax), np.nanmax(x, axis=ax), np.nanmin(x, axis=ax)]
            if ax is not None:
                outs += [np.argmax(x, axis=ax), np.argmin(x, axis=ax)]
    return outs


@pytest.mark.parametrize("tier", ["exact", "padded"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_max_min_keep_nan(xla_defaults, monkeypatch, tier, dtype):
    monkeypatch.setenv("DYNJAX_TIERS", tier)
    f = dynjax.qjit(_reductions)
    for seed, shape in enumerate(SHAPES):
        x = _data(shape, dtype, seed)
        got = f(x)
        want = _numpy_reductions(x.astype(np.float64))
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            g = np.asarray(g)
            if g.dtype.kind == "i":
                np.testing.assert_array_equal(g, w, err_msg=f"{shape} result {k}")
            else:
                np.testing.assert_array_equal(g.astype(np.float64), w, err_msg=f"{shape} result {k}")
        # the rows holding the NaN are NaN, and only those
        assert np.isnan(np.asarray(got[0])) == np.isnan(x.astype(np.float64)).any()


@pytest.mark.parametrize("tier", ["exact", "padded"])
def test_softmax_and_logsumexp_rows_with_nan(xla_defaults, monkeypatch, tier):
    """A row with a NaN is NaN in softmax and logsumexp; the other rows are unaffected (the
    max inside both is the reduction YNNPACK dropped NaNs from)."""
    monkeypatch.setenv("DYNJAX_TIERS", tier)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((200, 300))
    x[17, 250] = np.nan
    x[30, :] = -np.inf
    f = dynjax.qjit(lambda x: (dynjax.nn.softmax(x, axis=1), dynjax.scipy.special.logsumexp(x, axis=1)))
    sm, lse = f(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = x.max(axis=1, keepdims=True)
        e = np.exp(x - m)
        want_sm = e / e.sum(axis=1, keepdims=True)
        want_lse = np.log(np.exp(x - np.where(np.isfinite(m), m, 0)).sum(axis=1)) + np.where(np.isfinite(m), m, 0)[:, 0]
    assert np.isnan(sm[17]).all() and np.isnan(lse[17])
    assert np.isnan(sm[30]).all() and lse[30] == -np.inf
    rows = [i for i in range(200) if i not in (17, 30)]
    np.testing.assert_allclose(sm[rows], want_sm[rows], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(lse[rows], want_lse[rows], rtol=1e-12)


def _softmax_family_numpy(x, mask, b):
    """numpy references in float64, JAX's definitions with numpy's max (which keeps NaN):
    softmax, log_softmax, logsumexp, a softmax with ``where=mask``, a logsumexp with ``b``."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        m = x.max(axis=1, keepdims=True)
        e = np.exp(x - m)
        sm = e / e.sum(axis=1, keepdims=True)
        lsm = (x - m) - np.log(np.exp(x - m).sum(axis=1, keepdims=True))
        m0 = np.where(np.isfinite(m), m, 0)
        lse = np.log(np.exp(x - m0).sum(axis=1)) + m0[:, 0]
        mm = np.where(mask, x, -np.inf).max(axis=1, keepdims=True)
        em = np.where(mask, np.exp(x - mm), 0)
        masked = np.where(mask, em / em.sum(axis=1, keepdims=True), 0)
        keep = b != 0
        mb = np.where(keep, x, -np.inf).max(axis=1, keepdims=True)
        mb = np.where(np.isfinite(mb), mb, 0)
        lse_b = np.log(np.where(keep, np.exp(x - mb) * b, 0).sum(axis=1)) + mb[:, 0]
    return sm, lsm, lse, masked, lse_b


@pytest.mark.parametrize("tier", ["exact", "padded"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=lambda d: np.dtype(d).name)
def test_softmax_family_shift_may_drop_nan(xla_defaults, monkeypatch, tier, dtype):
    """softmax, log_softmax and logsumexp shift by a max that may drop a NaN
    (``reduce_max[keep_nan=False]``, which XLA:CPU runs in its fast kernels): their results
    are still NaN exactly where a NaN takes part -- a NaN at the row's largest position, an
    all-NaN row, a NaN beside +inf -- and a NaN that ``where`` or ``b == 0`` leaves out changes
    nothing."""
    monkeypatch.setenv("DYNJAX_TIERS", tier)
    rng = np.random.default_rng(11)
    x = rng.standard_normal((90, 130))
    x[3, 40] = np.nan                      # a NaN in a row
    x[5, 7], x[5, 8] = np.nan, 50.0        # a NaN beside the row's largest element
    x[6, :] = np.nan                       # all NaN
    x[8, 9], x[8, 10] = np.nan, np.inf     # a NaN beside +inf
    x[9, :] = -np.inf                      # all -inf
    x[12, 0] = np.nan                      # left out by where / b below
    x[14, 20] = np.inf
    x = x.astype(dtype)
    mask = np.ones(x.shape, bool)
    mask[12, 0] = mask[20, 5:9] = False
    b = np.ones(x.shape, dtype)
    b[12, 0] = 0
    nn, special = dynjax.nn, dynjax.scipy.special
    f = dynjax.qjit(lambda x, mask, b: (nn.softmax(x, axis=1), nn.log_softmax(x, axis=1),
                                        special.logsumexp(x, axis=1), nn.softmax(x, axis=1, where=mask),
                                        special.logsumexp(x, axis=1, b=b)))
    assert "keep_nan=False" in str(dynjax.make_jaxpr(f)(x, mask, b))
    got = f(x, mask, b)
    want = _softmax_family_numpy(x.astype(np.float64), mask, b.astype(np.float64))
    tol = 1e-12 if dtype == np.float64 else 2e-5
    for k, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g, np.float64)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"result {k}: NaN positions")
        np.testing.assert_array_equal(np.isinf(g), np.isinf(w), err_msg=f"result {k}: inf positions")
        finite = np.isfinite(w)
        np.testing.assert_allclose(g[finite], w[finite], rtol=tol, atol=tol, err_msg=f"result {k}")
    # the rows the where-mask and b == 0 keep the NaN out of are numbers
    assert np.isfinite(got[3][12]).all() and np.isfinite(got[4][12])


def test_dot_with_nan_and_inf(xla_defaults):
    """Dots go to YNNPACK: a NaN or an inf in an operand gives numpy's NaN / inf."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((130, 70))
    b = rng.standard_normal((70, 90))
    a[5, 3] = np.nan
    a[9, 4] = np.inf
    b[6, 11] = -np.inf
    got = dynjax.qjit(lambda a, b: a @ b)(a, b)
    with np.errstate(invalid="ignore", over="ignore"):
        want = a @ b
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-12, atol=1e-12)
