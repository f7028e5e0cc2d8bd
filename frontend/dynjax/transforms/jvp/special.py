"""Jvp rules of the special-function primitives (``dynjax.lax.special``).

The derivatives in closed form (as JAX uses them):

* ``erf' = 2 / sqrt(pi) exp(-x**2)``, ``erfc' = -erf'``, ``erf_inv' = sqrt(pi) / 2 exp(y**2)``;
* ``lgamma' = digamma``, ``digamma' = polygamma(1, .)``, ``polygamma(m, .)' = polygamma(m + 1, .)``;
* ``bessel_i0e' = i1e - sign(x) i0e``, ``bessel_i1e' = i0e - (sign(x) + 1 / x) i1e`` (1/2 at 0);
* ``d igamma(a, x) / dx = x**(a - 1) e**-x / Gamma(a) = -d igammac(a, x) / dx``;
* ``d zeta(x, q) / dq = -x zeta(x + 1, q)``;
* ``d igamma(a, x) / da = igamma_grad_a(a, x) = -d igammac(a, x) / da``;
* ``d igamma_grad_a(a, x) / dx = x**(a - 1) e**-x / Gamma(a) (log x - digamma(a))``;
* ``d random_gamma_grad(a, x) / dx = digamma(a) - log x - r ((a - 1) / x - 1)`` (``r`` the
  result: the derivative of ``-(dP/da) / p`` with ``p = dP/dx`` and ``dp/da = p (log x -
  digamma(a))``);
* ``d betainc(a, b, x) / dx = x**(a - 1) (1 - x)**(b - 1) / B(a, b)``.

The derivatives with respect to ``x`` of ``zeta``, ``m`` of ``polygamma``, ``a`` of
``igamma_grad_a`` and ``random_gamma_grad`` (second derivatives in ``a``), and ``a`` / ``b``
of ``betainc`` (JAX has none of them either) are not implemented: a non-zero tangent there
raises ``NotImplementedError`` naming the operand (a constant operand, whose tangent is
symbolically zero, is fine).
"""
from __future__ import annotations

import numpy as np

from ...core.primitive import jvp_rules
from ...lax import primitives as P
from ...lax import special as S
from . import Zero, _accumulate, _const, _safe, _to_shape

mul, add, sub, div, neg = (P.mul_p.bind, P.add_p.bind, P.sub_p.bind, P.div_p.bind, P.neg_p.bind)


def _unary(primitive, slope):
    """``slope(x, y)`` is the derivative at ``x`` (``y`` the result)."""
    def rule(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        y = primitive.bind(x, **params)
        return y, mul(t, slope(x, y))
    jvp_rules[primitive] = rule


def _erf_slope(x, y):
    return mul(_const(x, 2 / np.sqrt(np.pi)), P.exp_p.bind(neg(mul(x, x))))


def _i1e_slope(x, y):
    zero = P.eq_p.bind(x, _const(x, 0))
    y_over_x = div(y, _safe(x, zero))
    y_over_x = P.select_n_p.bind(zero, y_over_x, _to_shape(_const(x, 0.5), x))
    return sub(S.bessel_i0e_p.bind(x), add(mul(P.sign_p.bind(x), y), y_over_x))


_unary(S.erf_p, _erf_slope)
_unary(S.erfc_p, lambda x, y: neg(_erf_slope(x, y)))
_unary(S.erf_inv_p, lambda x, y: mul(_const(y, np.sqrt(np.pi) / 2), P.exp_p.bind(mul(y, y))))
_unary(S.lgamma_p, lambda x, y: S.digamma_p.bind(x))
_unary(S.digamma_p, lambda x, y: S.polygamma_p.bind(_const(x, 1), x))
_unary(S.bessel_i0e_p, lambda x, y: sub(S.bessel_i1e_p.bind(x), mul(P.sign_p.bind(x), y)))
_unary(S.bessel_i1e_p, _i1e_slope)


def _binary(primitive, first_name, slope_second):
    """A rule differentiable in the second operand only: ``slope_second(p, x, out)``; a
    non-zero tangent of the first operand raises."""
    def rule(primals, tangents, **params):
        (p, x), (tp, tx) = primals, tangents
        out = primitive.bind(p, x, **params)
        if not isinstance(tp, Zero):
            raise NotImplementedError(
                f"the derivative of {primitive.name} with respect to its first operand "
                f"({first_name}) is not implemented; only {primitive.name}'s second operand "
                "may depend on what is differentiated")
        terms = [] if isinstance(tx, Zero) else [mul(tx, slope_second(p, x, out))]
        return out, _accumulate(terms, out)
    jvp_rules[primitive] = rule


def _igamma_slope(a, x, out):
    # exp((a - 1) log x - x - lgamma(a))
    one = _const(x, 1)
    log_x = P.log_p.bind(x)
    return P.exp_p.bind(sub(sub(mul(sub(a, one), log_x), x), S.lgamma_p.bind(a)))


def _rule(primitive, slopes):
    """A rule for ``primitive`` whose derivative in operand ``i`` is ``slopes[i](*operands,
    out)``, or, where ``slopes[i]`` is an operand name, not implemented (a non-zero tangent
    there raises)."""
    def rule(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        terms = []
        for t, slope in zip(tangents, slopes):
            if isinstance(t, Zero):
                continue
            if isinstance(slope, str):
                raise NotImplementedError(
                    f"the derivative of {primitive.name} with respect to its operand {slope} is "
                    "not implemented")
            terms.append(mul(t, slope(*primals, out)))
        return out, _accumulate(terms, out)
    jvp_rules[primitive] = rule


def _igamma_grad_a_dx(a, x, out):
    return mul(_igamma_slope(a, x, out), sub(P.log_p.bind(x), S.digamma_p.bind(a)))


def _random_gamma_grad_dx(a, x, r):
    one = _const(x, 1)
    shape_term = sub(div(sub(a, one), x), one)
    return sub(sub(S.digamma_p.bind(a), P.log_p.bind(x)), mul(r, shape_term))


def _betainc_dx(a, b, x, out):
    one = _const(x, 1)
    log_beta = sub(add(S.lgamma_p.bind(a), S.lgamma_p.bind(b)), S.lgamma_p.bind(add(a, b)))
    log_density = add(mul(sub(a, one), P.log_p.bind(x)), mul(sub(b, one), P.log1p_p.bind(neg(x))))
    return P.exp_p.bind(sub(log_density, log_beta))


_rule(S.igamma_p, [lambda a, x, out: S.igamma_grad_a_p.bind(a, x), _igamma_slope])
_rule(S.igammac_p, [lambda a, x, out: neg(S.igamma_grad_a_p.bind(a, x)),
                    lambda a, x, out: neg(_igamma_slope(a, x, out))])
_rule(S.igamma_grad_a_p, ["a", _igamma_grad_a_dx])
_rule(S.random_gamma_grad_p, ["a", _random_gamma_grad_dx])
_rule(S.regularized_incomplete_beta_p, ["a", "b", _betainc_dx])
_binary(S.zeta_p, "x", lambda s, q, out: neg(mul(s, S.zeta_p.bind(add(s, _const(s, 1)), q))))
_binary(S.polygamma_p, "m", lambda m, x, out: S.polygamma_p.bind(add(m, _const(m, 1)), x))
