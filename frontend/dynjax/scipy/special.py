"""``dynjax.scipy.special``: error and gamma-family functions, Bessel and zeta functions,
``expit`` / ``logit``, ``xlogy`` / ``xlog1py``, ``logsumexp`` and the normal distribution's
``ndtr`` / ``ndtri`` / ``log_ndtr`` (``jax.scipy.special``'s names and signatures).

Integer and bool operands are promoted to float64; binary functions promote and broadcast
their operands as ``dynjax.numpy`` does. The special-function primitives live in
``dynjax.lax.special``; the rest is written here with ``dynjax.numpy``:

* ``ndtr(x)``: ``(1 + erf(x / sqrt 2)) / 2`` near 0, ``erfc(|x| / sqrt 2) / 2`` (or its
  complement) beyond, so that both tails keep their relative accuracy;
* ``log_ndtr(x)``: ``-ndtr(-x)`` above 8 (5 in float32), ``log1p(-ndtr(-x))`` above 0,
  ``log(ndtr(x))`` down to -20 (-10),
  and the asymptotic series ``-x**2/2 - log(-x) - log(2 pi)/2 + log(1 + sum_n (-1)**n
  (2n-1)!! / x**(2n))`` of ``series_order`` terms below; derivative ``exp(log phi(x) - log_ndtr(x))``;
* ``ndtri(p)``: an initial guess (``sqrt 2 erf_inv(2q - 1)`` for the lower-tail probability
  ``q = min(p, 1 - p)`` above 1e-3, the tail asymptote below) refined by four Newton steps
  on ``log_ndtr(x) = log q`` (with 12 terms of the tail series); derivative ``sqrt(2 pi) exp(x**2 / 2)``;
* ``xlogy`` / ``xlog1py`` are 0 where ``x == 0`` (also for ``y == 0``), with JAX's derivatives.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core.avals import is_inexact_dtype
from ..core.trace import typeof
from ..numpy._promote import broadcast_arrays
from ..nn.functions import _quiet, logsumexp  # noqa: F401  (the same function as jax.nn's)
from ..transforms.custom import custom_jvp

__all__ = ["erf", "erfc", "erfinv", "gammaln", "digamma", "polygamma", "expit", "logit", "xlogy",
           "xlog1py", "logsumexp", "ndtr", "ndtri", "log_ndtr", "betaln", "gammainc", "gammaincc",
           "i0e", "i1e", "i0", "i1", "zeta"]


def _float(*xs):
    """The operands promoted to one inexact dtype (ints and bools to float64) and broadcast."""
    arrs = [jnp.asarray(x) if not hasattr(x, "aval") else x for x in xs]
    dt = jnp.result_type(*arrs)
    if not is_inexact_dtype(dt):
        dt = np.dtype(np.float64)
    arrs = [jnp.asarray(a, dtype=dt) for a in arrs]
    if len(arrs) > 1:
        arrs = broadcast_arrays(*arrs)
    return arrs if len(arrs) > 1 else arrs[0]


def _c(value, like):
    return np.asarray(value, dtype=typeof(like).dtype)


@_quiet
def erf(x):
    """The error function."""
    return lax.erf(_float(x))


@_quiet
def erfc(x):
    """The complementary error function ``1 - erf(x)``."""
    return lax.erfc(_float(x))


@_quiet
def erfinv(x):
    """The inverse error function."""
    return lax.erf_inv(_float(x))


@_quiet
def gammaln(x):
    """``log |Gamma(x)|``."""
    return lax.lgamma(_float(x))


@_quiet
def digamma(x):
    """The digamma function ``Gamma'(x) / Gamma(x)``."""
    return lax.digamma(_float(x))


@_quiet
def polygamma(n, x):
    """The ``n``-th derivative of ``digamma`` (``n`` a whole number)."""
    n, x = _float(n, x)
    return lax.polygamma(n, x)


@_quiet
def gammainc(a, x):
    """The regularized lower incomplete gamma function ``P(a, x)``."""
    return lax.igamma(*_float(a, x))


@_quiet
def gammaincc(a, x):
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``."""
    return lax.igammac(*_float(a, x))


@_quiet
def i0e(x):
    """``exp(-|x|) I0(x)``."""
    return lax.bessel_i0e(_float(x))


@_quiet
def i1e(x):
    """``exp(-|x|) I1(x)``."""
    return lax.bessel_i1e(_float(x))


@_quiet
def i0(x):
    """The modified Bessel function ``I0(x) = exp(|x|) i0e(x)``."""
    x = _float(x)
    return jnp.exp(jnp.abs(x)) * lax.bessel_i0e(x)


@_quiet
def i1(x):
    """The modified Bessel function ``I1(x) = exp(|x|) i1e(x)``."""
    x = _float(x)
    return jnp.exp(jnp.abs(x)) * lax.bessel_i1e(x)


@_quiet
def zeta(x, q=None):
    """The Hurwitz zeta function ``sum_k (k + q)**-x``; the Riemann zeta function when ``q`` is
    None (only ``q`` given is an error, as in JAX)."""
    if q is None:
        x = _float(x)
        return lax.zeta(x, jnp.ones_like(x))
    return lax.zeta(*_float(x, q))


@_quiet
def betaln(a, b):
    """``log |B(a, b)| = lgamma(a) + lgamma(b) - lgamma(a + b)``."""
    a, b = _float(a, b)
    return lax.lgamma(a) + lax.lgamma(b) - lax.lgamma(a + b)


@_quiet
def expit(x):
    """The logistic sigmoid ``1 / (1 + exp(-x))``."""
    return lax.logistic(_float(x))


@_quiet
def logit(x):
    """``log(x / (1 - x))``, the inverse of ``expit``."""
    x = _float(x)
    return jnp.log(x / (_c(1, x) - x))


@custom_jvp
def _xlogy(x, y):
    return jnp.where(x == _c(0, x), jnp.zeros_like(x), x * jnp.log(y))


@_xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return _xlogy(x, y), tx * jnp.log(y) + ty * x / y


@_quiet
def xlogy(x, y):
    """``x * log(y)``, and 0 where ``x == 0``."""
    return _xlogy(*_float(x, y))


@custom_jvp
def _xlog1py(x, y):
    return jnp.where(x == _c(0, x), jnp.zeros_like(x), x * jnp.log1p(y))


@_xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return _xlog1py(x, y), tx * jnp.log1p(y) + ty * x / (_c(1, y) + y)


@_quiet
def xlog1py(x, y):
    """``x * log1p(y)``, and 0 where ``x == 0``."""
    return _xlog1py(*_float(x, y))


# ----------------------------------------------------------------------------------------------
# the normal distribution
# ----------------------------------------------------------------------------------------------
def _ndtr(x):
    half_sqrt2 = _c(np.sqrt(0.5), x)
    z = jnp.abs(x) * half_sqrt2
    one = _c(1, x)
    y = jnp.where(z < half_sqrt2, one + lax.erf(x * half_sqrt2),
                  jnp.where(x > _c(0, x), _c(2, x) - lax.erfc(z), lax.erfc(z)))
    return _c(0.5, x) * y


@_quiet
def ndtr(x):
    """The standard normal CDF ``Phi(x)``."""
    return _ndtr(_float(x))


def _bounds(x):
    """(lower, upper) ends of the middle segment of ``log_ndtr`` for ``x``'s dtype."""
    return (-20.0, 8.0) if typeof(x).dtype == np.float64 else (-10.0, 5.0)


def _log_phi(x):
    """``log`` of the standard normal density."""
    return _c(-0.5, x) * x * x - _c(0.5 * np.log(2 * np.pi), x)


def _log_ndtr_lower(x, series_order):
    """The asymptotic series of ``log Phi(x)`` for very negative ``x``."""
    x2 = x * x
    total = jnp.ones_like(x)
    term = jnp.ones_like(x)
    for n in range(1, series_order + 1):
        term = term * _c(-(2 * n - 1), x) / x2
        total = total + term
    return _log_phi(x) - jnp.log(-x) + jnp.log(total)


def _make_log_ndtr(series_order):
    @custom_jvp
    def f(x):
        lo, hi = _bounds(x)
        lo_c, hi_c = _c(lo, x), _c(hi, x)
        # each branch on operands inside its own range (no inf / NaN in the unused ones)
        upper = -_ndtr(-jnp.maximum(x, hi_c))
        xm = jnp.clip(x, lo_c, hi_c)
        # log1p(-Phi(-x)) above 0 keeps the relative accuracy of log Phi(x) near 0
        middle = jnp.where(xm > _c(0, x), jnp.log1p(-_ndtr(-xm)), jnp.log(_ndtr(xm)))
        lower = _log_ndtr_lower(jnp.minimum(x, lo_c), series_order)
        return jnp.where(x > hi_c, upper, jnp.where(x > lo_c, middle, lower))

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        y = f(x)
        return y, t * jnp.exp(_log_phi(x) - y)
    return f


_LOG_NDTR = {}


@_quiet
def log_ndtr(x, series_order: int = 3):
    """``log Phi(x)``, accurate in both tails (see the module docstring); ``series_order``
    (0 to 30) is the number of terms of the asymptotic series for very negative ``x``."""
    if not isinstance(series_order, (int, np.integer)) or isinstance(series_order, bool):
        raise TypeError(f"log_ndtr: series_order must be a Python int, got {type(series_order).__name__}")
    if not 0 <= series_order <= 30:
        raise ValueError(f"log_ndtr: series_order must be in [0, 30], got {series_order}")
    x = _float(x)
    if series_order not in _LOG_NDTR:
        _LOG_NDTR[series_order] = _make_log_ndtr(int(series_order))
    return _LOG_NDTR[series_order](x)


@custom_jvp
def _ndtri(p):
    q = jnp.minimum(p, _c(1, p) - p)
    lower_tail = p < _c(0.5, p)
    ok = (q > _c(0, p)) & (p == p)
    qs = jnp.where(ok, q, jnp.full_like(p, 0.25))
    # the initial guess: erf_inv where 2q - 1 keeps q's precision, the asymptote in the far tail
    guess_mid = _c(np.sqrt(2), p) * lax.erf_inv(_c(2, p) * jnp.maximum(qs, _c(1e-3, p)) - _c(1, p))
    t = jnp.sqrt(_c(-2, p) * jnp.log(qs))
    guess_tail = -(t - (jnp.log(t) + _c(np.log(4 * np.pi), p) / _c(2, p)) / t)
    x = jnp.where(qs > _c(1e-3, p), guess_mid, guess_tail)
    log_q = jnp.log(qs)
    for _ in range(4):   # Newton on log_ndtr(x) = log q (quadratic: 1e-3 -> rounding)
        y = log_ndtr(x, series_order=12)
        x = x - (y - log_q) * jnp.exp(y - _log_phi(x))
    x = jnp.where(lower_tail, x, -x)
    x = jnp.where(p == _c(0, p), jnp.full_like(p, -np.inf), jnp.where(p == _c(1, p), jnp.full_like(p, np.inf), x))
    x = jnp.where(p == _c(0.5, p), jnp.zeros_like(p), x)
    return jnp.where((p < _c(0, p)) | (p > _c(1, p)) | (p != p), jnp.full_like(p, np.nan), x)


@_ndtri.defjvp
def _ndtri_jvp(primals, tangents):
    (p,), (t,) = primals, tangents
    x = _ndtri(p)
    return x, t * jnp.exp(-_log_phi(x))


@_quiet
def ndtri(p):
    """The inverse of ``ndtr``: ``x`` with ``Phi(x) = p`` (``-inf`` at 0, ``inf`` at 1, NaN
    outside ``[0, 1]``)."""
    return _ndtri(_float(p))


# the rest of jax.scipy.special (written in their own modules, which import the helpers above)
from .special_more import *  # noqa: E402,F401,F403
from .special_integrals import *  # noqa: E402,F401,F403
from .special_hyper import *  # noqa: E402,F401,F403
from . import special_more as _more, special_integrals as _integrals, special_hyper as _hyper  # noqa: E402

__all__ += _more.__all__ + _integrals.__all__ + _hyper.__all__
