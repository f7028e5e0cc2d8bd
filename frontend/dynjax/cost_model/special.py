"""Cost rules of the special-function primitives (``dynjax.lax.special``).

Each result element counts as transcendental operations: one for the functions XLA expands
into a single rational approximation (``erf``, ``erfc``, ``erf_inv``, ``lgamma``,
``digamma``, ``bessel_i1e``), and a bound on the terms of the series for the others
(``zeta`` and ``polygamma``: XLA sums a dozen terms and an Euler-Maclaurin correction;
``igamma`` / ``igammac`` / ``bessel_i0e`` / ``regularized_incomplete_beta``,
``igamma_grad_a`` / ``random_gamma_grad``: loops that stop at convergence, counted at a
typical 50 terms; see ``lax/special_series.py``).
"""
from __future__ import annotations

from ..lax import special as _S
from . import _per_element, cost_rules

for _p in (_S.erf_p, _S.erfc_p, _S.erf_inv_p, _S.lgamma_p, _S.digamma_p, _S.bessel_i1e_p):
    cost_rules[_p] = _per_element(trans=1)
for _p in (_S.zeta_p, _S.polygamma_p):
    cost_rules[_p] = _per_element(flops=40, trans=12)
for _p in (_S.igamma_p, _S.igammac_p, _S.bessel_i0e_p, _S.regularized_incomplete_beta_p):
    cost_rules[_p] = _per_element(flops=400, trans=4)
for _p in (_S.igamma_grad_a_p, _S.random_gamma_grad_p):   # two loops, derivatives carried
    cost_rules[_p] = _per_element(flops=1200, trans=6)
