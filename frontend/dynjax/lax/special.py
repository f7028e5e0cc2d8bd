"""Special-function primitives: error functions, gamma-family functions, Bessel functions.

Unary, elementwise, real floating-point operands (float16 / bfloat16 / float32 / float64):

* ``erf``, ``erfc``, ``erf_inv`` (the inverse of ``erf`` on ``[-1, 1]``);
* ``lgamma`` (``log |Gamma(x)|``), ``digamma`` (``Gamma'(x) / Gamma(x)``);
* ``bessel_i0e``, ``bessel_i1e`` (the exponentially scaled modified Bessel functions
  ``exp(-|x|) I0(x)`` and ``exp(-|x|) I1(x)``).

Binary, elementwise, two operands of one real floating-point dtype and equal shapes (a
rank-0 operand broadcasts, as for the other elementwise primitives):

* ``igamma(a, x)`` / ``igammac(a, x)``: the regularized lower / upper incomplete gamma
  functions ``P(a, x)`` and ``Q(a, x) = 1 - P(a, x)``;
* ``zeta(x, q)``: the Hurwitz zeta function ``sum_k (k + q) ** -x``;
* ``polygamma(m, x)``: the ``m``-th derivative of ``digamma`` (``m`` a whole number held in a
  float array, as in JAX);
* ``igamma_grad_a(a, x)``: ``d P(a, x) / da``; ``random_gamma_grad(a, x)``: the derivative
  ``-(dP/da) / (dP/dx)`` of a Gamma(a) sample ``x`` with respect to ``a`` (the implicit
  reparameterization gradient of ``random.gamma``).

Ternary, elementwise: ``regularized_incomplete_beta(a, b, x)`` (``lax.betainc``), the
regularized incomplete beta function ``I_x(a, b)``.

The ``impl`` rules (eager evaluation, the reference semantics) call ``scipy.special`` (scipy
is installed with jaxlib; ``igamma_grad_a`` and ``random_gamma_grad``, which scipy lacks, run
the algorithm of their lowering, ``lax/special_series.py``, on numpy) and then set the special values where XLA's algorithms, which the
compiled programs run, define them differently from scipy, so that eager and compiled code
agree: ``lgamma(-inf) = +inf``; ``digamma`` is NaN at zero and at the negative integers;
``erf_inv(-0.0)`` and ``bessel_i1e(-0.0)`` are ``-0.0``; ``igamma`` / ``igammac`` are NaN for
``a = inf``; ``zeta(x, q)`` is ``inf`` at ``x = 1``, ``inf`` for an even ``x`` and NaN for any
other ``x`` at a pole ``q = 0, -1, ..., -inf``, and NaN for ``q = inf`` and for ``x = inf``
with ``q <= 1``; ``polygamma`` follows (``(-1)**(m+1) m! zeta(m + 1, x)``), and is NaN for an
order ``m`` that is not a whole number.

16-bit floats are computed in float32 and rounded, as XLA does.
"""
from __future__ import annotations

import importlib

import numpy as np

from .base import aval, check_dtypes_equal, check_same_shapes, define, result_aval
from .primitives import check_kinds

__all__ = ["erf_p", "erfc_p", "erf_inv_p", "lgamma_p", "digamma_p", "bessel_i0e_p", "bessel_i1e_p",
           "igamma_p", "igammac_p", "zeta_p", "polygamma_p", "igamma_grad_a_p", "random_gamma_grad_p",
           "regularized_incomplete_beta_p", "UNARY", "BINARY", "TERNARY",
           "erf", "erfc", "erf_inv", "lgamma", "digamma", "bessel_i0e", "bessel_i1e",
           "igamma", "igammac", "zeta", "polygamma", "igamma_grad_a", "random_gamma_grad", "betainc"]


class _ScipySpecial:
    """``scipy.special``, imported when an eager evaluation first needs it: the import takes
    a third of a second, which every process that imports dynjax would otherwise pay."""

    def __getattr__(self, name):   # only for names not looked up before
        value = getattr(importlib.import_module("scipy.special"), name)
        setattr(self, name, value)
        return value


_sc = _ScipySpecial()


def _compute_dtype(dt):
    """float16 / bfloat16 are computed in float32 (scipy has no bfloat16 kernels)."""
    return np.float32 if np.dtype(dt).itemsize == 2 else dt


# ----------------------------------------------------------------------------------------------
# the numpy (scipy) semantics, with XLA's special values
# ----------------------------------------------------------------------------------------------
def _lgamma(x):
    return np.where(x == -np.inf, np.inf, _sc.gammaln(x))


def _digamma(x):
    pole = (x <= 0) & (x == np.floor(x))
    return np.where(pole, np.nan, _sc.psi(x))


def _erf_inv(x):
    return np.copysign(_sc.erfinv(x), x)


def _i1e(x):
    return np.copysign(_sc.i1e(x), x)


def _igamma(a, x):
    return np.where(a == np.inf, np.nan, _sc.gammainc(a, x))


def _igammac(a, x):
    return np.where(a == np.inf, np.nan, _sc.gammaincc(a, x))


def _poles(q):
    """Where ``q`` is a pole of the Hurwitz zeta function / of polygamma: 0, -1, -2, ..., -inf."""
    return (q <= 0) & (q == np.floor(q))


def _even(x):
    return (x == np.floor(x)) & (np.fmod(x, 2) == 0)


def _zeta(x, q):
    # XLA's special values, in priority order: the pole x = 1 (inf, whatever q); NaN operands;
    # a pole of q (inf for an even x, where every term has one sign, else NaN); x < 1; q = inf;
    # x = inf with q <= 1 (NaN)
    out = np.select([x == 1, np.isnan(x) | np.isnan(q), _poles(q) & _even(x), _poles(q), x < 1,
                     q == np.inf, (x == np.inf) & (q <= 1)],
                    [np.inf, np.nan, np.inf, np.nan, np.nan, np.nan, np.nan], _sc.zeta(x, q))
    return out


def _polygamma(m, x):
    # m = 0: digamma; m = 1, 2, ...: (-1)**(m + 1) m! zeta(m + 1, x) with zeta's special values
    # (a pole of x gives inf for an odd m, else NaN; x = inf gives NaN); other m: NaN
    whole = np.isfinite(m) & (m >= 0) & (m == np.floor(m))
    order = np.where(whole, m, 0).astype(np.int64)
    out = np.select([m == 0, np.isnan(x), _poles(x) & (np.fmod(m, 2) == 1), _poles(x), x == np.inf],
                    [_digamma(x), np.nan, np.inf, np.nan, np.nan], _sc.polygamma(order, x))
    return np.where(whole, out, np.nan)


# ----------------------------------------------------------------------------------------------
# primitives
# ----------------------------------------------------------------------------------------------
def _unary(name, fn):
    def abstract(x):
        a = aval(x)
        check_kinds(name, "float", a)
        return result_aval(a.shape, a.dtype, a.weak_type)

    def impl(x):
        x = np.asarray(x)
        check_kinds(name, "float", aval(x))   # eager refuses what tracing refuses
        with np.errstate(all="ignore"):
            out = fn(x.astype(_compute_dtype(x.dtype)))
        return np.asarray(out, x.dtype)
    return define(name, impl, abstract)


def _binary(name, fn):
    def abstract(x, y):
        a, b = aval(x), aval(y)
        check_kinds(name, "float", a)
        check_dtypes_equal(name, a, b)
        if a.ndim and b.ndim:
            check_same_shapes(name, a, b)
        return result_aval(a.shape if a.ndim else b.shape, a.dtype, a.weak_type and b.weak_type)

    def impl(x, y):
        x, y = np.asarray(x), np.asarray(y)
        abstract(x, y)   # eager refuses what tracing refuses
        ct = _compute_dtype(x.dtype)
        with np.errstate(all="ignore"):
            out = fn(x.astype(ct), y.astype(ct))
        return np.asarray(out, x.dtype)
    return define(name, impl, abstract)


def _series(name):
    """The numpy semantics of a function scipy lacks: its compiled algorithm run eagerly on
    flat operands (``lax/special_series.py``)."""
    def fn(*args):
        from . import special_series
        args = np.broadcast_arrays(*args)
        flat = [np.ascontiguousarray(a).reshape(-1) for a in args]
        return np.asarray(getattr(special_series, name)(*flat)).reshape(args[0].shape)
    return fn


def _ternary(name, fn, compute_dtype=_compute_dtype):
    def abstract(a, b, x):
        avs = [aval(v) for v in (a, b, x)]
        check_kinds(name, "float", avs[0])
        for other in avs[1:]:
            check_dtypes_equal(name, avs[0], other)
        ranked = [v for v in avs if v.ndim]
        for other in ranked[1:]:
            check_same_shapes(name, ranked[0], other)
        shape = ranked[0].shape if ranked else ()
        return result_aval(shape, avs[0].dtype, all(v.weak_type for v in avs))

    def impl(a, b, x):
        a, b, x = np.asarray(a), np.asarray(b), np.asarray(x)
        abstract(a, b, x)   # eager refuses what tracing refuses
        ct = compute_dtype(a.dtype)
        with np.errstate(all="ignore"):
            out = fn(a.astype(ct), b.astype(ct), x.astype(ct))
        return np.asarray(out, a.dtype)
    return define(name, impl, abstract)


erf_p = _unary("erf", lambda *xs: _sc.erf(*xs))
erfc_p = _unary("erfc", lambda *xs: _sc.erfc(*xs))
erf_inv_p = _unary("erf_inv", _erf_inv)
lgamma_p = _unary("lgamma", _lgamma)
digamma_p = _unary("digamma", _digamma)
bessel_i0e_p = _unary("bessel_i0e", lambda *xs: _sc.i0e(*xs))
bessel_i1e_p = _unary("bessel_i1e", _i1e)
igamma_p = _binary("igamma", _igamma)
igammac_p = _binary("igammac", _igammac)
zeta_p = _binary("zeta", _zeta)
polygamma_p = _binary("polygamma", _polygamma)
igamma_grad_a_p = _binary("igamma_grad_a", _series("igamma_grad_a"))
random_gamma_grad_p = _binary("random_gamma_grad", _series("random_gamma_grad"))
# in float64 whatever the dtype (scipy's float32 kernel loses 1e-2 relative near 1e-26)
regularized_incomplete_beta_p = _ternary("regularized_incomplete_beta", lambda *xs: _sc.betainc(*xs),
                                         lambda dt: np.float64)

#: the family's primitives by arity (the batching, padding and cost rules treat them alike)
UNARY = (erf_p, erfc_p, erf_inv_p, lgamma_p, digamma_p, bessel_i0e_p, bessel_i1e_p)
BINARY = (igamma_p, igammac_p, zeta_p, polygamma_p, igamma_grad_a_p, random_gamma_grad_p)
TERNARY = (regularized_incomplete_beta_p,)


# ----------------------------------------------------------------------------------------------
# the thin lax API (strict dtypes, as dynjax.lax; Python scalars become weakly typed operands)
# ----------------------------------------------------------------------------------------------
def erf(x):
    """The error function ``2 / sqrt(pi) * integral_0^x exp(-t**2) dt``."""
    return erf_p.bind(x)


def erfc(x):
    """The complementary error function ``1 - erf(x)``, accurate where ``erf(x)`` is near 1."""
    return erfc_p.bind(x)


def erf_inv(x):
    """The inverse error function: ``erf(erf_inv(y)) == y`` on ``[-1, 1]`` (``+-inf`` at ``+-1``)."""
    return erf_inv_p.bind(x)


def lgamma(x):
    """``log |Gamma(x)|``."""
    return lgamma_p.bind(x)


def digamma(x):
    """The digamma function ``Gamma'(x) / Gamma(x)`` (NaN at the poles ``0, -1, -2, ...``)."""
    return digamma_p.bind(x)


def bessel_i0e(x):
    """``exp(-|x|) * I0(x)``, the exponentially scaled modified Bessel function of order 0."""
    return bessel_i0e_p.bind(x)


def bessel_i1e(x):
    """``exp(-|x|) * I1(x)``, the exponentially scaled modified Bessel function of order 1."""
    return bessel_i1e_p.bind(x)


def igamma(a, x):
    """The regularized lower incomplete gamma function ``P(a, x)``."""
    return igamma_p.bind(a, x)


def igammac(a, x):
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``."""
    return igammac_p.bind(a, x)


def zeta(x, q):
    """The Hurwitz zeta function ``sum_{k >= 0} (k + q) ** -x``."""
    return zeta_p.bind(x, q)


def polygamma(m, x):
    """The ``m``-th derivative of ``digamma`` at ``x`` (``m`` a whole number, same dtype as ``x``)."""
    return polygamma_p.bind(m, x)


def igamma_grad_a(a, x):
    """``d P(a, x) / da``, the derivative of ``igamma`` in its first operand."""
    return igamma_grad_a_p.bind(a, x)


def random_gamma_grad(a, x):
    """``-(dP(a, x)/da) / (dP(a, x)/dx)``: how a Gamma(a) sample ``x`` moves with ``a`` when its
    quantile is held (the implicit reparameterization gradient)."""
    return random_gamma_grad_p.bind(a, x)


def betainc(a, b, x):
    """The regularized incomplete beta function ``I_x(a, b)`` (``regularized_incomplete_beta``)."""
    return regularized_incomplete_beta_p.bind(a, b, x)
