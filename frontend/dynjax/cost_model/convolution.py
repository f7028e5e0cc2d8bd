"""Cost rule of ``conv_general_dilated`` (``dynjax.lax.convolution``).

Every output element is a sum of ``I * prod(window)`` products (``I`` the kernel's input
features, ``C / feature_group_count``): ``2 * N' * O * prod(out spatial) * I *
prod(window)`` FLOPs, as formulas in the dynamic batch and spatial sizes. The zeros that
dilation inserts are counted as XLA's naive convolution computes them (not at all for the
input: the window positions are what count). Bytes are the generic reads and writes.
"""
from __future__ import annotations

from ..core.symbolic import Expr
from ..lax import convolution as _C
from . import Cost, cost_rules


def _conv_cost(eqn, sz):
    rhs = eqn.invars[1].aval
    rhs_spec = eqn.params["dimension_numbers"].rhs_spec
    per_output = sz.value(rhs.shape[rhs_spec[1]])
    for i in rhs_spec[2:]:
        per_output = per_output * sz.value(rhs.shape[i])
    z = Expr.const(0)
    return Cost(sz.elements(eqn.outvars[0].aval) * per_output * 2, z, z, z)


cost_rules[_C.conv_general_dilated_p] = _conv_cost
