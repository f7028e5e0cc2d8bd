"""Division by a literal scalar, compiled: numpy's correctly rounded quotient, bit for bit.

The divisor goes through an optimization barrier, so that XLA cannot turn the division into
a multiplication by a rounded reciprocal -- except a power of two whose reciprocal is a
normal number of the dtype, where that multiplication is exact and the barrier is left out
(``lit_tests/mlir/division_by_literals.py`` checks which). Checked for powers of two on both
sides of that line (``2**127``: its reciprocal is subnormal in float32 and bfloat16, normal
in float64) and other divisors at the extremes of each float dtype: quotients near the
smallest normal number, overflow, infinities, NaN and signed zeros. XLA:CPU flushes
subnormals to zero (see ``test_eager_vs_compiled.test_xla_flushes_subnormals``): operands
are normal, and a subnormal quotient is compared as a zero of its sign (float16 keeps them:
it is computed in float32)."""
import ml_dtypes
import numpy as np
import pytest

import dynjax

DTYPES = [np.float64, np.float32, np.float16, ml_dtypes.bfloat16]
POWERS = [8.0, 0.25, -2.0, 2.0 ** 20, 2.0 ** -20, 1.0, -1.0, 2.0 ** 127, -(2.0 ** -126)]
OTHERS = [3.0, -10.0, 0.1]


def _operands(dtype):
    info = ml_dtypes.finfo(dtype)
    rng = np.random.default_rng(0)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, float(info.max), -float(info.max),
               float(info.tiny), -float(info.tiny) * 1.5, 1.0, -7.0]
    values = np.concatenate([np.asarray(special), rng.standard_normal(200) * 1e3,
                             rng.uniform(1, 64, 40) * float(info.tiny)]).astype(dtype)
    wide = values.astype(np.float64)
    return values[~((wide != 0) & (np.abs(wide) < float(info.tiny)))]   # (none is subnormal)


def _flushed(a, dtype):
    """``a`` with its subnormal elements replaced by zeros of their sign (not for float16,
    which XLA computes in float32, where its subnormals are normal numbers)."""
    if dtype == np.float16:
        return a
    wide = a.astype(np.float64)
    sub = (wide != 0) & (np.abs(wide) < float(ml_dtypes.finfo(dtype).tiny))
    return np.where(sub, np.copysign(0.0, wide), wide).astype(dtype)


def _bits(a):
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("c", POWERS + OTHERS)
def test_quotient_bits(xla_defaults, dtype, c):
    x = _operands(dtype)
    got = dynjax.qjit(lambda x: x / c)(x)
    with np.errstate(all="ignore"):
        # the quotient in float64 rounded to ``dtype``: correctly rounded for the narrower
        # dtypes too (53 >= 2 p + 2 bits: rounding twice cannot differ from rounding once)
        divisor = float(np.asarray(c, dtype))
        want = _flushed((x / divisor if dtype == np.float64 else (x.astype(np.float64) / divisor)).astype(dtype), dtype)
    assert got.dtype == want.dtype
    nan = np.isnan(want.astype(np.float64))
    np.testing.assert_array_equal(np.isnan(got.astype(np.float64)), nan)
    np.testing.assert_array_equal(_bits(got)[~nan], _bits(want)[~nan])
