"""``dynjax.scipy.special``: error-function relatives and integrals (``erfcx``, ``dawsn``,
``exp1``, ``expi``, ``expn``, ``spence``, ``sici``, ``fresnel``, ``owens_t``).

Each is written with elementwise ``dynjax.lax`` operations: fixed-length sums (unrolled),
``select`` between regions, and ``lax.while_loop`` for series and continued fractions that
stop when every element has converged. So they take any shape (dynamic dims included), run
eagerly and compiled, and batch; their derivatives are closed forms given by ``custom_jvp``
(JAX's where JAX defines them). They compute in float64 whatever the operand's float dtype
and round the result (float32 results are then correctly rounded to a few ulps).

* ``erfcx(x) = exp(x**2) erfc(x)``: ``exp(x**2)`` with ``x**2`` split exactly (``x = hi + lo``,
  ``hi`` of 24 bits), times ``erfc``, up to ``x = 2``; the continued fraction of ``erfc`` up to
  25; the asymptotic series ``(1 - 1/(2x^2) + 3/(4x^4) - ...) / (x sqrt(pi))`` (8 terms) beyond.
* ``dawsn(x)``: the Maclaurin series below ``|x| = 0.2``; Rybicki's sum ``pi**-1/2 sum_{n odd}
  exp(-(x - n h)**2) / n`` (``h = 0.2``, 34 terms around ``x / h``; its error is of order
  ``exp(-(pi / 2h)**2) ~ 1e-27``) up to 50; the asymptotic series beyond.
* ``expn(n, x)`` (``exp1 = expn(1, .)``): the power series with the ``digamma(n)`` term for
  ``x <= 1``, the continued fraction of ``E_n`` (modified Lentz) beyond.
* ``expi(x)``: ``-E1(-x)`` for ``x < 0``; for ``x > 0`` the series ``gamma + log x + sum
  x**k / (k k!)`` up to 40 and the asymptotic series ``e**x / x sum k! / x**k`` beyond; near
  the zero ``x0 = 0.3725...`` of ``Ei``, the integral ``int_x0^x e**t / t dt`` by a 16-point
  Gauss-Legendre rule (relative accuracy through the zero).
* ``spence(x) = Li2(1 - x)``: the series ``sum z**k / k**2`` with ``|z| <= 1/2`` after the
  reflection / Landen identities of the dilogarithm.
* ``sici(x)``: power series for ``|x| <= 4``; beyond, the continued fraction of ``E1(ix)``
  (complex, modified Lentz).
* ``fresnel(x)``: power series for ``|x| <= 1.5``; beyond, ``C + iS = (1 + i)/2 (1 - erfc(w))``
  with ``w = sqrt(pi)/2 (1 - i) x`` and the continued fraction of ``erfc``.
* ``owens_t(h, a)``: for ``|a| <= 1`` the integral ``h int_0^{a h} exp(-t**2/2) / (h**2 + t**2)
  dt exp(-h**2/2) / 2pi`` by a 40-point Gauss-Legendre rule (on ``[0, min(a h, 12)]``); for
  ``|a| > 1`` the identity ``T(h, a) = (Q(h) + Q(ah)) / 2 - Q(h) Q(ah) - T(ah, 1/a)``
  (``Q`` the normal upper tail).
"""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core.avals import is_complex_dtype
from ..core.trace import typeof
from ..nn.functions import _quiet
from ..transforms.custom import custom_jvp
from .special import _float, _ndtr

__all__ = ["erfcx", "dawsn", "exp1", "expi", "expn", "spence", "sici", "fresnel", "owens_t"]

F64 = np.dtype(np.float64)
EULER = 0.57721566490153286061
SQRT_PI = 1.7724538509055160273
MAX_ITERATIONS = 2000


def _k(v):
    return np.float64(v)


def _wide(name, *xs):
    """The operands promoted (integers to float64), real, broadcast, in float64; and the
    result dtype."""
    out = _float(*xs)
    out = list(out) if len(xs) > 1 else [out]
    dt = typeof(out[0]).dtype
    if is_complex_dtype(dt):
        raise ValueError(f"{name} does not support complex-valued inputs.")
    return [lax.convert_element_type(v, F64) for v in out], dt


def _narrow(v, dt):
    return lax.convert_element_type(v, dt)


def _until_done(body, state):
    """``while i < MAX_ITERATIONS and not all(done): state = body(state)`` for ``state = (i,
    done, ...)`` (any shape; an empty array does no step)."""
    def cond(s):
        return (s[0] < MAX_ITERATIONS) & jnp.any(~s[1])
    return lax.while_loop(cond, body, state)


def _gauss_legendre(n):
    """Nodes and weights of the ``n``-point Gauss-Legendre rule on ``[0, 1]``."""
    t, w = np.polynomial.legendre.leggauss(n)
    return (t + 1) / 2, w / 2


# ----------------------------------------------------------------------------------------------
# erfcx, dawsn
# ----------------------------------------------------------------------------------------------
def _exp_square(x):
    """``exp(x**2)`` without the rounding of ``x**2`` (``|x| <= 27``)."""
    hi = lax.convert_element_type(lax.convert_element_type(x, np.float32), F64)
    lo = x - hi
    return jnp.exp(hi * hi) * jnp.exp(lo * (_k(2) * hi + lo))


def _erfcx_cf(x):
    """``erfcx(x)`` for ``x >= 2`` by the continued fraction ``1 / sqrt(pi) / (x + (1/2) / (x +
    1 / (x + (3/2) / (x + ...))))`` (modified Lentz): no ``exp(x**2)`` or ``erfc`` rounding."""
    d0 = _k(1) / x

    def body(s):
        i, done, c, d, h = s
        a = lax.convert_element_type(i + 1, F64) * _k(0.5)
        d = _k(1) / (x + a * d)
        c = x + a / c
        delta = c * d
        h = h * delta
        return i + 1, done | (jnp.abs(delta - _k(1)) <= _k(1e-16)), c, d, h

    c0 = jnp.full_like(x, 1 / 1e-300)
    *_, h = _until_done(body, (np.int64(0), jnp.zeros_like(x) != jnp.zeros_like(x), c0, d0, d0))
    return h / _k(SQRT_PI)


def _erfcx_f(x):
    xc = jnp.clip(x, _k(-27), _k(2))
    middle = _exp_square(xc) * lax.erfc(xc)
    mid_cf = _erfcx_cf(jnp.clip(x, _k(2), _k(25)))
    xa = jnp.maximum(x, _k(25))
    y = _k(0.5) / (xa * xa)
    total, term = jnp.ones_like(x), jnp.ones_like(x)
    for k in range(1, 8):
        term = term * _k(-(2 * k - 1)) * y
        total = total + term
    tail = total / (xa * _k(SQRT_PI))
    return jnp.where(x >= _k(25), tail, jnp.where(x > _k(2), mid_cf, middle))


@custom_jvp
def _erfcx(x):
    return _erfcx_f(x)


@_erfcx.defjvp
def _erfcx_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = _erfcx(x)
    return y, t * (_k(2) * x * y - _k(2 / SQRT_PI))


@_quiet
def erfcx(x):
    """The scaled complementary error function ``exp(x**2) erfc(x)``."""
    (x,), dt = _wide("erfcx", x)
    return _narrow(_erfcx(x), dt)


def _dawsn_f(x):
    ax = jnp.abs(x)
    # the Maclaurin series sum (-2)**k x**(2k+1) / (2k+1)!! (|x| < 0.2: 12 terms)
    xs = jnp.minimum(ax, _k(0.2))
    x2 = xs * xs
    term, total = xs, xs
    for k in range(1, 13):
        term = term * _k(-2) * x2 / _k(2 * k + 1)
        total = total + term
    small = total
    # Rybicki: n odd around x / h; m the even integer nearest x / h, x = m h + r
    h = 0.2
    xm = jnp.clip(ax, _k(0.2), _k(50))
    m = _k(2) * jnp.round(xm / _k(2 * h))
    r = xm - m * _k(h)
    acc = jnp.zeros_like(x)
    for k in range(-33, 34, 2):
        acc = acc + jnp.exp(-(r - _k(k * h)) ** 2) / (m + _k(k))
    mid = acc / _k(SQRT_PI)
    # the asymptotic series 1/(2x) sum (2k-1)!! / (2 x**2)**k (|x| > 50: 7 terms)
    xa = jnp.maximum(ax, _k(50))
    y = _k(0.5) / (xa * xa)
    term, total = jnp.ones_like(x), jnp.ones_like(x)
    for k in range(1, 8):
        term = term * _k(2 * k - 1) * y
        total = total + term
    large = total / (_k(2) * xa)
    out = jnp.where(ax < _k(0.2), small, jnp.where(ax <= _k(50), mid, large))
    return jnp.where(x < _k(0), -out, out)


@custom_jvp
def _dawsn(x):
    return _dawsn_f(x)


@_dawsn.defjvp
def _dawsn_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = _dawsn(x)
    return y, t * (_k(1) - _k(2) * x * y)


@_quiet
def dawsn(x):
    """Dawson's integral ``exp(-x**2) int_0^x exp(t**2) dt``."""
    (x,), dt = _wide("dawsn", x)
    return _narrow(_dawsn(x), dt)


# ----------------------------------------------------------------------------------------------
# exponential integrals
# ----------------------------------------------------------------------------------------------
def _expn_f(n, x):
    """``E_n(x)`` for whole ``n >= 0`` and ``x >= 0`` (NaN elsewhere)."""
    whole = (n >= _k(0)) & (n == jnp.floor(n)) & (n < _k(np.inf))
    bad = ~whole | (x < _k(0)) | (x != x)
    at_zero = x == _k(0)
    series = (x <= _k(1)) & ~bad & ~at_zero
    frac = (x > _k(1)) & ~bad
    n_s = jnp.where(bad, _k(1), n)
    # the power series (x <= 1): sum over k != n-1 of -(-x)**k / (k! (k - n + 1)) plus the
    # k = n-1 term (-x)**(n-1) / (n-1)! (digamma(n) - log x); n = 0 is exp(-x) / x
    xs = jnp.where(series, x, _k(0.5))
    nm1 = n_s - _k(1)
    first = jnp.where(nm1 == _k(0), -jnp.log(xs) - _k(EULER), _k(1) / jnp.where(nm1 == _k(0), _k(1), nm1))
    psi = lax.digamma(jnp.maximum(n_s, _k(1)))
    zero_term = jnp.where(nm1 == _k(0), _k(0), jnp.zeros_like(x))

    def series_body(s):
        i, done, fact, total = s
        k = lax.convert_element_type(i + 1, F64)
        fact = fact * (-xs) / k
        hit = k == nm1
        delta = jnp.where(hit, fact * (psi - jnp.log(xs)), -fact / jnp.where(hit, _k(1), k - nm1))
        total = total + delta
        done = done | ((jnp.abs(delta) <= jnp.abs(total) * _k(1e-17)) & (k > nm1))
        return i + 1, done, fact, total

    init = (np.int64(0), ~series, jnp.ones_like(x), first + zero_term)
    *_, s_total = _until_done(series_body, init)
    s_val = jnp.where(n_s == _k(0), jnp.exp(-xs) / xs, s_total)
    # the continued fraction (x > 1): modified Lentz
    xf = jnp.where(frac, x, _k(2))
    nf = jnp.where(frac, n_s, _k(1))
    tiny = _k(1e-300)
    b0 = xf + nf

    def cf_body(s):
        i, done, b, c, d, h = s
        k = lax.convert_element_type(i + 1, F64)
        an = -k * (nf - _k(1) + k)
        b = b + _k(2)
        d = _k(1) / jnp.where(jnp.abs(an * d + b) < tiny, tiny, an * d + b)
        c = b + an / c
        c = jnp.where(jnp.abs(c) < tiny, tiny, c)
        delta = c * d
        h = h * delta
        done = done | (jnp.abs(delta - _k(1)) <= _k(1e-16))
        return i + 1, done, b, c, d, h

    d0 = _k(1) / b0
    *_, h = _until_done(cf_body, (np.int64(0), ~frac, b0, jnp.full_like(x, 1e300), d0, d0))
    cf_val = jnp.where(xf > _k(745), _k(0), h * jnp.exp(-xf))
    out = jnp.where(series, s_val, cf_val)
    zero_val = jnp.where(n_s <= _k(1), _k(np.inf), _k(1) / jnp.where(n_s <= _k(1), _k(1), n_s - _k(1)))
    out = jnp.where(at_zero, zero_val, out)
    return jnp.where(bad, _k(np.nan), out)


@custom_jvp
def _expn(n, x):
    return _expn_f(n, x)


@_expn.defjvp
def _expn_jvp(primals, tangents):
    (n, x), (_, t) = primals, tangents
    y = _expn(n, x)
    # E_n' = -E_{n-1}; E_0(x) = exp(-x) / x, so E_0' = -E_0 (1 + 1/x)
    below = jnp.where(n == _k(0), -y * (_k(1) + _k(1) / x), -_expn(jnp.maximum(n - _k(1), _k(0)), x))
    return y, t * below


@_quiet
def expn(n, x):
    """The generalized exponential integral ``E_n(x) = int_1^inf exp(-x t) / t**n dt`` for whole
    ``n >= 0`` (NaN for other ``n``, as JAX) and ``x >= 0`` (``1 / (n - 1)`` at ``x = 0`` for
    ``n > 1``, ``inf`` for ``n <= 1``); differentiable in ``x``."""
    (n, x), dt = _wide("expn", n, x)
    return _narrow(_expn(n, x), dt)


@_quiet
def exp1(x):
    """The exponential integral ``E1(x) = int_x^inf exp(-t) / t dt`` (``x >= 0``; NaN below)."""
    (x,), dt = _wide("exp1", x)
    return _narrow(_expn(jnp.ones_like(x), x), dt)


_EI_ROOT = 0.37250741078136663   # the float64 nearest the zero 0.3725074107813666344619... of Ei
_EI_AT_ROOT = -5.1196989365556847e-17   # Ei(_EI_ROOT), computed with 40 digits
_GL16 = _gauss_legendre(16)


def _expi_f(x):
    pos = x > _k(0)
    # the series gamma + log x + sum x**k / (k k!) (0 < x <= 40; positive terms)
    xs = jnp.where(pos & (x <= _k(40)), x, _k(1))

    def series_body(s):
        i, done, term, total = s
        k = lax.convert_element_type(i + 1, F64)
        term = term * xs / k
        delta = term / k
        total = total + delta
        return i + 1, done | (delta <= total * _k(1e-17)), term, total

    n0 = jnp.zeros_like(x) != jnp.zeros_like(x)
    *_, total = _until_done(series_body, (np.int64(0), n0 | ~(pos & (x <= _k(40))), jnp.ones_like(x),
                                          jnp.zeros_like(x)))
    series = _k(EULER) + jnp.log(xs) + total
    # near the zero x0: the integral of e**t / t from x0 (16-point Gauss-Legendre)
    near = jnp.abs(x - _k(_EI_ROOT)) < _k(0.15)
    xn = jnp.where(near, x, _k(_EI_ROOT))
    span = xn - _k(_EI_ROOT)
    acc = jnp.zeros_like(x)
    for node, weight in zip(*_GL16):
        t = _k(_EI_ROOT) + span * _k(node)
        acc = acc + _k(weight) * jnp.exp(t) / t
    root = acc * span + _k(_EI_AT_ROOT)
    # the asymptotic series e**x / x sum k! / x**k (x > 40; up to 40 terms)
    xa = jnp.maximum(x, _k(40))
    term, tot = jnp.ones_like(x), jnp.ones_like(x)
    for k in range(1, 41):
        term = term * _k(k) / xa
        tot = tot + term
    large = jnp.where(xa > _k(710), _k(np.inf), jnp.exp(xa) / xa * tot)
    positive = jnp.where(near, root, jnp.where(x <= _k(40), series, large))
    negative = -_expn_f(jnp.ones_like(x), jnp.where(pos, _k(1), -x))
    out = jnp.where(pos, positive, negative)
    return jnp.where(x == _k(0), _k(-np.inf), out)


@custom_jvp
def _expi(x):
    return _expi_f(x)


@_expi.defjvp
def _expi_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _expi(x), t * jnp.exp(x) / x


@_quiet
def expi(x):
    """The exponential integral ``Ei(x) = -PV int_{-x}^inf exp(-t) / t dt`` (``-inf`` at 0,
    ``inf`` at ``inf``, ``-0.0`` at ``-inf``, as scipy)."""
    (x,), dt = _wide("expi", x)
    return _narrow(_expi(x), dt)


# ----------------------------------------------------------------------------------------------
# spence
# ----------------------------------------------------------------------------------------------
_PI2_6 = np.pi ** 2 / 6


def _li2_small(z):
    """``sum_k z**k / k**2`` for ``|z| <= 1/2`` (56 terms: ``2**-56 / 56**2 < 1e-20``)."""
    total, power = jnp.zeros_like(z), jnp.ones_like(z)
    for k in range(1, 57):
        power = power * z
        total = total + power / _k(k * k)
    return total


def _spence_f(x):
    bad = (x < _k(0)) | (x != x)
    xs = jnp.where(bad, _k(1), x)
    # x in [0, 1/2): pi^2/6 - log x log(1-x) - Li2(x)
    xa = jnp.minimum(xs, _k(0.5))
    logs = jnp.where(xa == _k(0), _k(0), jnp.log(jnp.where(xa == _k(0), _k(1), xa)) * jnp.log1p(-xa))
    r1 = _k(_PI2_6) - logs - _li2_small(xa)
    # x in [1/2, 3/2]: Li2(1 - x) directly
    r2 = _li2_small(_k(1) - jnp.clip(xs, _k(0.5), _k(1.5)))
    # x in (3/2, 2]: -Li2((x-1)/x) - log(x)**2 / 2
    xb = jnp.clip(xs, _k(1.5), _k(2))
    r3 = -_li2_small((xb - _k(1)) / xb) - _k(0.5) * jnp.log(xb) ** 2
    # x > 2: -pi^2/6 - log(1 - 1/x) log x + Li2(1/x) - log(x)**2 / 2
    xc = jnp.maximum(xs, _k(2))
    lx = jnp.log(xc)
    r4 = -_k(_PI2_6) - jnp.log1p(-_k(1) / xc) * lx + _li2_small(_k(1) / xc) - _k(0.5) * lx * lx
    out = jnp.where(xs < _k(0.5), r1, jnp.where(xs <= _k(1.5), r2, jnp.where(xs <= _k(2), r3, r4)))
    return jnp.where(bad, _k(np.nan), out)


@custom_jvp
def _spence(x):
    return _spence_f(x)


@_spence.defjvp
def _spence_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    one = x == _k(1)
    slope = jnp.where(one, _k(-1), jnp.log(x) / (_k(1) - jnp.where(one, _k(0), x)))
    return _spence(x), t * slope


@_quiet
def spence(x):
    """Spence's function ``int_1^x log t / (1 - t) dt = Li2(1 - x)`` (``x >= 0``; NaN below)."""
    (x,), dt = _wide("spence", x)
    return _narrow(_spence(x), dt)


# ----------------------------------------------------------------------------------------------
# sici, fresnel: power series near 0, complex continued fractions beyond
# ----------------------------------------------------------------------------------------------
def _c128(re, im):
    return lax.complex(re, im)


def _cf_lentz(b0, step, done0):
    """Modified Lentz evaluation of ``1 / (b0 + a1 / (b1 + a2 / (b2 + ...)))`` for complex
    ``b``: ``step(k, b) -> (a_k, b_k)`` (``a_k`` real); stops at ``|delta - 1| <= 1e-16``
    elementwise."""
    tiny = _k(1e-300)

    def fix(v):
        return jnp.where(jnp.abs(v) < tiny, np.complex128(tiny), v)

    d0 = _k(1) / b0

    def body(s):
        i, done, b, c, d, h = s
        a, b = step(lax.convert_element_type(i + 1, F64), b)
        d = _k(1) / fix(a * d + b)
        c = fix(b + a / c)
        delta = c * d
        h = h * delta
        return i + 1, done | (jnp.abs(delta - _k(1)) <= _k(1e-16)), b, c, d, h

    c0 = jnp.full_like(b0, 1e300)
    *_, h = _until_done(body, (np.int64(0), done0, b0, c0, d0, d0))
    return h


def _sici_f(x):
    ax = jnp.abs(x)
    # power series (|x| <= 4): Si = sum (-1)^k x^(2k+1) / ((2k+1)(2k+1)!),
    # Ci = gamma + log x + sum (-1)^k x^(2k) / (2k (2k)!)
    xs = jnp.minimum(ax, _k(4))
    x2 = xs * xs
    term = xs                      # (-1)^k x^(2k+1) / (2k+1)!
    si = xs
    cterm = jnp.ones_like(x)       # (-1)^k x^(2k) / (2k)!
    ci = jnp.zeros_like(x)
    for k in range(1, 30):
        cterm = -cterm * x2 / _k((2 * k - 1) * (2 * k))
        ci = ci + cterm / _k(2 * k)
        term = -term * x2 / _k((2 * k) * (2 * k + 1))
        si = si + term / _k(2 * k + 1)
    ci = _k(EULER) + jnp.log(jnp.where(xs == _k(0), _k(1), xs)) + ci
    ci = jnp.where(xs == _k(0), _k(-np.inf), ci)
    # beyond: E1(i x) = e^{-ix} / (1 + ix - 1 / (3 + ix - 4 / (5 + ix - ...))); Ci = -Re E1(ix),
    # Si = pi/2 + Im E1(ix)
    far = ax > _k(4)
    xf = jnp.where(far & (ax < _k(np.inf)), ax, _k(5))
    b0 = _c128(jnp.ones_like(x), xf)

    def step(k, b):
        return -(k * k), b + _k(2)

    h = _cf_lentz(b0, step, ~(far & (ax < _k(np.inf))))
    e1 = _c128(jnp.cos(xf), -jnp.sin(xf)) * h
    si_far = _k(np.pi / 2) + lax.imag(e1)
    ci_far = -lax.real(e1)
    si_far = jnp.where(ax == _k(np.inf), _k(np.pi / 2), si_far)
    ci_far = jnp.where(ax == _k(np.inf), _k(0), ci_far)
    si = jnp.where(far, si_far, si)
    ci = jnp.where(far, ci_far, ci)
    si = jnp.where(x < _k(0), -si, si)
    ci = jnp.where(x == _k(-np.inf), _k(np.nan), ci)
    return si, ci


@custom_jvp
def _sici(x):
    return _sici_f(x)


@_sici.defjvp
def _sici_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    si, ci = _sici(x)
    zero = x == _k(0)
    xs = jnp.where(zero, _k(1), x)
    dsi = jnp.where(zero, _k(1), jnp.sin(xs) / xs)
    return (si, ci), (t * dsi, t * jnp.cos(x) / x)


@_quiet
def sici(x):
    """The sine and cosine integrals ``(Si(x), Ci(x))``: ``Si = int_0^x sin t / t dt``, ``Ci =
    gamma + log x + int_0^x (cos t - 1) / t dt`` (for ``x < 0``, the real part ``Ci(|x|)``,
    as scipy)."""
    (x,), dt = _wide("sici", x)
    si, ci = _sici(x)
    return _narrow(si, dt), _narrow(ci, dt)


def _fresnel_f(x):
    ax = jnp.abs(x)
    # power series (|x| <= 1.5): with u = pi x^2 / 2,
    # C = x sum (-1)^k u^(2k) / ((4k+1)(2k)!), S = x sum (-1)^k u^(2k+1) / ((4k+3)(2k+1)!)
    xs = jnp.minimum(ax, _k(1.5))
    u = _k(np.pi / 2) * xs * xs
    power = jnp.ones_like(x)       # u^j / j!
    c, s = jnp.zeros_like(x), jnp.zeros_like(x)
    for j in range(0, 40):
        if j:
            power = power * u / _k(j)
        sign = 1.0 if (j // 2) % 2 == 0 else -1.0
        if j % 2 == 0:
            c = c + _k(sign / (2 * j + 1)) * power
        else:
            s = s + _k(sign / (2 * j + 1)) * power
    c, s = xs * c, xs * s
    # beyond: C + iS = (1 + i)/2 (1 - (1 - i) x e^{i pi x^2/2} K), K the continued fraction
    # 1 / (b0 - 1*2 / (b1 - 3*4 / (b2 - ...))), b_n = 1 + 4n - i pi x^2
    far = (ax > _k(1.5)) & (ax < _k(np.inf))
    xf = jnp.where(far, ax, _k(2))
    b0 = _c128(jnp.ones_like(x), -_k(np.pi) * xf * xf)

    def step(k, b):
        n = _k(2) * k - _k(1)
        return -(n * (n + _k(1))), b + _k(4)

    h = _cf_lentz(b0, step, ~far)
    arg = _k(np.pi / 2) * xf * xf
    inner = _c128(xf, -xf) * _c128(jnp.cos(arg), jnp.sin(arg)) * h
    cs = _c128(_k(0.5) * jnp.ones_like(x), _k(0.5) * jnp.ones_like(x)) * (_k(1) - inner)
    c = jnp.where(far, lax.real(cs), c)
    s = jnp.where(far, lax.imag(cs), s)
    c = jnp.where(ax == _k(np.inf), _k(0.5), c)
    s = jnp.where(ax == _k(np.inf), _k(0.5), s)
    neg = x < _k(0)
    return jnp.where(neg, -s, s), jnp.where(neg, -c, c)


@custom_jvp
def _fresnel(x):
    return _fresnel_f(x)


@_fresnel.defjvp
def _fresnel_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    s, c = _fresnel(x)
    arg = _k(np.pi / 2) * x * x
    return (s, c), (t * jnp.sin(arg), t * jnp.cos(arg))


@_quiet
def fresnel(x):
    """The Fresnel integrals ``(S(x), C(x)) = (int_0^x sin(pi t^2 / 2) dt, int_0^x cos(pi t^2 /
    2) dt)``."""
    (x,), dt = _wide("fresnel", x)
    s, c = _fresnel(x)
    return _narrow(s, dt), _narrow(c, dt)


# ----------------------------------------------------------------------------------------------
# Owen's T function
# ----------------------------------------------------------------------------------------------
_GL40 = _gauss_legendre(40)


def _owens_t_small_a(h, a):
    """``T(h, a)`` for ``h >= 0``, ``0 <= a <= 1``."""
    upper = jnp.minimum(a * h, _k(12))
    hs = jnp.where(h == _k(0), _k(1), h)
    acc = jnp.zeros_like(h)
    for node, weight in zip(*_GL40):
        t = upper * _k(node)
        acc = acc + _k(weight) * jnp.exp(_k(-0.5) * t * t) / (hs * hs + t * t)
    val = hs * upper * acc * jnp.exp(_k(-0.5) * h * h) / _k(2 * np.pi)
    return jnp.where(h == _k(0), jnp.arctan(a) / _k(2 * np.pi), val)


def _owens_t_f(h, a):
    bad = (h != h) | (a != a)
    sign = jnp.where(a < _k(0), _k(-1), _k(1))
    h, a = jnp.abs(jnp.where(bad, _k(0), h)), jnp.abs(jnp.where(bad, _k(0), a))
    big = a > _k(1)
    a_in = jnp.where(big, _k(1) / jnp.where(big, a, _k(1)), a)
    h_in = jnp.where(big, jnp.where(a == _k(np.inf), _k(0), a * h), h)
    t_in = _owens_t_small_a(h_in, a_in)
    q_h = _ndtr(-h)
    q_ah = _ndtr(-h_in)
    q_ah = jnp.where(a == _k(np.inf), jnp.where(h == _k(0), _k(0.5), _k(0)), q_ah)
    t_in = jnp.where(a == _k(np.inf), _k(0), t_in)
    reflected = _k(0.5) * (q_h + q_ah) - q_h * q_ah - t_in
    out = jnp.where(big, reflected, t_in)
    out = jnp.where(h == _k(np.inf), _k(0), out)
    return jnp.where(bad, _k(np.nan), sign * out)


@custom_jvp
def _owens_t(h, a):
    return _owens_t_f(h, a)


@_owens_t.defjvp
def _owens_t_jvp(primals, tangents):
    (h, a), (th, ta) = primals, tangents
    y = _owens_t(h, a)
    dh = _k(-0.5) * jnp.exp(_k(-0.5) * h * h) / _k(np.sqrt(2 * np.pi)) * lax.erf(a * h / _k(np.sqrt(2)))
    one_a2 = _k(1) + a * a
    da = jnp.exp(_k(-0.5) * h * h * one_a2) / (_k(2 * np.pi) * one_a2)
    return y, th * dh + ta * da


@_quiet
def owens_t(h, a):
    """Owen's T function ``T(h, a) = 1/(2 pi) int_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx``."""
    (h, a), dt = _wide("owens_t", h, a)
    return _narrow(_owens_t(h, a), dt)
