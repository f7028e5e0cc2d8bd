"""``dynjax.scipy.special``, continued: the functions written as compositions of the
special-function primitives (``jax.scipy.special``'s names, signatures and special values).

* the gamma family: ``gamma`` (``gammasgn(x) exp(lgamma(x))``), ``gammasgn``, ``loggamma``
  (real operands: ``lgamma`` for ``x > 0``, NaN elsewhere), ``beta``, ``betainc`` (the
  ``lax.betainc`` primitive), ``poch`` (with JAX's
  derivatives ``(digamma(z + m) - digamma(z)) poch`` and ``digamma(z + m) poch``),
  ``factorial`` (0 for negative ``n``), ``comb`` (0 outside ``0 <= k <= N``; with
  ``repetition``: ``comb(N + k - 1, k)``), ``multigammaln(a, d)`` (``d`` a Python int);
* the entropies: ``entr`` (``-x log x``, ``-inf`` for ``x < 0``), ``rel_entr`` (``p log(p /
  q)``, 0 at ``p = 0 <= q``, ``inf`` elsewhere off the positive quadrant), ``kl_div``
  (``rel_entr(p, q) - p + q``), with the derivative ``log x + 1`` of ``x log x``;
* ``boxcox`` / ``boxcox1p`` (``expm1(lmbda log x) / lmbda``, ``log x`` at ``lmbda = 0``);
* ``softmax`` / ``log_softmax`` (over all axes by default, as scipy);
* ``bernoulli(n)``: the first ``n + 1`` Bernoulli numbers (``B_1 = -1/2``), exact rationals
  rounded to float64 (``+-inf`` once they overflow).

Operands are promoted as in ``special.py`` (integers and bools to float64).
"""
from __future__ import annotations

import functools
import operator
from fractions import Fraction

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core.avals import is_complex_dtype
from ..core.trace import typeof
from ..nn import functions as _nn
from ..nn.functions import _quiet
from ..transforms.custom import custom_jvp
from .special import _c, _float, xlogy

__all__ = ["gamma", "gammasgn", "loggamma", "beta", "betainc", "poch", "factorial", "comb", "multigammaln",
           "entr", "rel_entr", "kl_div", "boxcox", "boxcox1p", "softmax", "log_softmax", "bernoulli"]


def _real(name, *xs):
    """``xs`` promoted (``_float``); complex operands are refused as JAX refuses them."""
    out = _float(*xs)
    first = out[0] if len(xs) > 1 else out
    if is_complex_dtype(typeof(first).dtype):
        raise ValueError(f"{name} does not support complex-valued inputs.")
    return out


def _no_complex(name, x):
    if is_complex_dtype(typeof(x).dtype):
        raise NotImplementedError(f"{name}: complex operands are not implemented in dynjax "
                                  "(real floating-point operands only)")


# ----------------------------------------------------------------------------------------------
# the gamma family
# ----------------------------------------------------------------------------------------------
def _gammasgn(x):
    floor_x = lax.floor(x)
    negative = x < _c(0, x)
    nan = (negative & (x == floor_x)) | (x != x)
    minus = (negative & (lax.rem(floor_x, _c(2, x)) != _c(0, x))) | ((x == _c(0, x)) & jnp.signbit(x))
    return jnp.where(nan, _c(np.nan, x), jnp.where(minus, _c(-1, x), _c(1, x)))


@_quiet
def gammasgn(x):
    """The sign of the gamma function: NaN at the poles ``0 > x = floor(x)`` (``-inf``
    included) and for NaN, ``-1`` for ``-0.0`` and where ``Gamma(x) < 0``, else ``+1``."""
    x = _float(x)
    _no_complex("gammasgn", x)
    return _gammasgn(x)


def _gamma(x):
    return _gammasgn(x) * lax.exp(lax.lgamma(x))


@_quiet
def gamma(x):
    """The gamma function ``gammasgn(x) * exp(lgamma(x))`` (real operands): ``+-inf`` at
    ``+-0``, NaN at the negative integers and at ``-inf``."""
    x = _float(x)
    _no_complex("gamma", x)
    return _gamma(x)


@_quiet
def loggamma(x):
    """The principal branch of ``log Gamma(x)``; for real operands ``lgamma(x)`` where ``x > 0``
    and NaN elsewhere (complex operands are not implemented)."""
    x = _float(x)
    _no_complex("loggamma", x)
    return jnp.where(x > _c(0, x), lax.lgamma(x), _c(np.nan, x))


@_quiet
def beta(a, b):
    """The beta function ``Gamma(a) Gamma(b) / Gamma(a + b)``, as ``sign * exp(betaln(a, b))``."""
    a, b = _real("beta", a, b)
    sign = _gammasgn(a) * _gammasgn(b) * _gammasgn(a + b)
    return sign * lax.exp(lax.lgamma(a) + lax.lgamma(b) - lax.lgamma(a + b))


@_quiet
def betainc(a, b, x):
    """The regularized incomplete beta function ``I_x(a, b)`` (the ``lax.betainc`` primitive:
    scipy eagerly, a continued fraction compiled; differentiable in ``x``)."""
    return lax.betainc(*_real("betainc", a, b, x))


@custom_jvp
def _poch(z, m):
    return jnp.where(m == _c(0, m), jnp.ones_like(z), _gamma(z + m) / _gamma(z))


@_poch.defjvp
def _poch_jvp(primals, tangents):
    (z, m), (tz, tm) = primals, tangents
    y = _poch(z, m)
    dzm = lax.digamma(z + m)
    return y, (dzm - lax.digamma(z)) * y * tz + dzm * y * tm


@_quiet
def poch(z, m):
    """The Pochhammer symbol ``Gamma(z + m) / Gamma(z)`` (1 where ``m == 0``)."""
    return _poch(*_real("poch", z, m))


@_quiet
def factorial(n, exact: bool = False):
    """``n! = Gamma(n + 1)`` as floats (0 for ``n < 0``); ``exact=True`` is not supported, as
    in JAX."""
    if exact:
        raise NotImplementedError("factorial with exact=True")
    n = _real("factorial", n)
    return jnp.where(n < _c(0, n), jnp.zeros_like(n), lax.exp(lax.lgamma(n + _c(1, n))))


@_quiet
def comb(N, k, *, repetition: bool = False):
    """``N choose k`` from ``lgamma`` (0 unless ``0 <= k <= N``); with ``repetition``
    ``comb(N + k - 1, k)``, and 1 for ``k == 0 <= N``."""
    N, k = _real("comb", N, k)
    if repetition:
        return jnp.where((k == _c(0, k)) & (N >= _c(0, N)), jnp.ones_like(N),
                         comb(N + k - _c(1, k), k))
    ok = (k <= N) & (N >= _c(0, N)) & (k >= _c(0, k))
    Ns, ks = jnp.where(ok, N, jnp.zeros_like(N)), jnp.where(ok, k, jnp.zeros_like(k))
    one = _c(1, N)
    val = lax.exp(lax.lgamma(Ns + one) - lax.lgamma(ks + one) - lax.lgamma(Ns + one - ks))
    return jnp.where(ok, val, jnp.zeros_like(val))


@_quiet
def multigammaln(a, d):
    """``log Gamma_d(a) = d (d - 1) / 4 log(pi) + sum_{i < d} lgamma(a - i / 2)`` for a Python
    int ``d`` (the sum over a new last axis)."""
    try:
        d = operator.index(d)
    except TypeError:
        raise TypeError(f"multigammaln: d must be a concrete integer, got {type(d).__name__}") from None
    a = _real("multigammaln", a)
    halves = np.arange(d, dtype=typeof(a).dtype) / 2
    terms = lax.lgamma(jnp.expand_dims(a, -1) - halves)
    return jnp.sum(terms, axis=-1) + _c(0.25 * d * (d - 1) * np.log(np.pi), a)


# ----------------------------------------------------------------------------------------------
# entropies
# ----------------------------------------------------------------------------------------------
@custom_jvp
def _xlogx(x):
    return xlogy(x, x)


@_xlogx.defjvp
def _xlogx_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _xlogx(x), t * (jnp.log(x) + _c(1, x))


@_quiet
def entr(x):
    """``-x log x`` (0 at 0, ``-inf`` for ``x < 0``)."""
    x = _real("entr", x)
    return jnp.where(x < _c(0, x), _c(-np.inf, x), -_xlogx(x))


@_quiet
def rel_entr(p, q):
    """``p log(p / q)`` for ``p, q > 0``; 0 for ``p == 0 <= q``; ``inf`` otherwise."""
    p, q = _real("rel_entr", p, q)
    zero = _c(0, p)
    pos = (p > zero) & (q > zero)
    p_zero = (p == zero) & (q >= zero)
    ps, qs = jnp.where(pos, p, jnp.ones_like(p)), jnp.where(pos, q, jnp.ones_like(q))
    val = _xlogx(ps) - xlogy(ps, qs)
    return jnp.where(pos, val, jnp.where(p_zero, zero, _c(np.inf, p)))


@_quiet
def kl_div(p, q):
    """``p log(p / q) - p + q`` (``q`` at ``p == 0 <= q``, ``inf`` elsewhere off the positive
    quadrant)."""
    p, q = _real("kl_div", p, q)
    return rel_entr(p, q) - p + q


# ----------------------------------------------------------------------------------------------
# Box-Cox, softmax
# ----------------------------------------------------------------------------------------------
def _boxcox(log_x, lmbda):
    zero = lmbda == _c(0, lmbda)
    safe = jnp.where(zero, jnp.ones_like(lmbda), lmbda)
    return jnp.where(zero, log_x, jnp.expm1(safe * log_x) / safe)


@_quiet
def boxcox(x, lmbda):
    """The Box-Cox transform ``(x**lmbda - 1) / lmbda`` (``log x`` at ``lmbda == 0``)."""
    x, lmbda = _float(x, lmbda)
    return _boxcox(jnp.log(x), lmbda)


@_quiet
def boxcox1p(x, lmbda):
    """The Box-Cox transform of ``1 + x``: ``((1 + x)**lmbda - 1) / lmbda`` (``log1p(x)`` at
    ``lmbda == 0``)."""
    x, lmbda = _float(x, lmbda)
    return _boxcox(jnp.log1p(x), lmbda)


def softmax(x, /, *, axis=None):
    """``exp(x) / sum(exp(x))`` over ``axis`` (all axes when None, as scipy)."""
    return _nn.softmax(x, axis=axis)


def log_softmax(x, /, *, axis=None):
    """``x - logsumexp(x)`` over ``axis`` (all axes when None, as scipy)."""
    return _nn.log_softmax(x, axis=axis)


# ----------------------------------------------------------------------------------------------
# Bernoulli numbers
# ----------------------------------------------------------------------------------------------
_EXACT_UP_TO = 262   # |B_m| > float64's max for every even m >= 260


@functools.lru_cache(maxsize=None)
def _bernoulli_exact(n):
    """B_0 .. B_n (B_1 = -1/2) as Fractions: ``B_2k = (-1)**(k-1) 2k T_k / (4**k (4**k - 1))``
    from the tangent numbers ``T_k`` (integers, by Brent and Harvey's recurrence)."""
    half = n // 2
    t = [0] * (half + 1)
    if half:
        t[1] = 1
    for k in range(2, half + 1):
        t[k] = (k - 1) * t[k - 1]
    for k in range(2, half + 1):
        for j in range(k, half + 1):
            t[j] = (j - k) * t[j - 1] + (j - k + 2) * t[j]
    b = [Fraction(1), Fraction(-1, 2)] + [Fraction(0)] * max(n - 1, 0)
    for k in range(1, half + 1):
        b[2 * k] = Fraction((-1) ** (k - 1) * 2 * k * t[k], 4 ** k * (4 ** k - 1))
    return tuple(b[:n + 1])


def _to_float(f):
    try:
        return float(f)
    except OverflowError:
        return np.inf if f > 0 else -np.inf


def bernoulli(n: int):
    """The Bernoulli numbers ``B_0 .. B_n`` (``B_1 = -1/2``), float64, for a Python int ``n``."""
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"bernoulli: n must be a concrete integer, got {type(n).__name__}") from None
    if n < 0:
        raise ValueError("n must be a non-negative integer.")
    exact = _bernoulli_exact(min(n, _EXACT_UP_TO))
    vals = [_to_float(f) for f in exact]
    for m in range(len(vals), n + 1):
        vals.append(0.0 if m % 2 else (np.inf if m % 4 == 2 else -np.inf))
    return jnp.asarray(np.array(vals, dtype=np.float64))
