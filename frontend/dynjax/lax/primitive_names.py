"""The primitives under JAX's names (``dynjax.lax.add_p``, ``dot_general_p``, ``erf_p``,
``cond_p`` ...), for code that registers rules against them or binds them: each is dynjax's
own ``Primitive`` object. Only primitives with JAX's meaning are exported (their params may
differ: dynjax's carry dynamic sizes as operands). The JAX names that are left out, and why,
are listed by ``doc/gen_support_table.py`` (for instance dynjax's ``gather`` / ``scatter``
primitives index whole axes with index rows, JAX's take dimension numbers, and dynjax's
``scan`` takes its length as an operand).
"""
from __future__ import annotations

from . import barrier as _barrier
from . import bits as _bits
from . import cumulative as _cumulative
from . import primitives as _P
from . import special as _special
from .convolution import conv_general_dilated_p  # noqa: F401
from .fft import fft_p  # noqa: F401  (dynjax.lax.fft is the function, not the module)
from ..control_flow import primitives as _control_flow

_SAME_MEANING = (
    "abs acos add and argmax argmin asin atan atan2 broadcast_in_dim cbrt ceil complex concatenate "
    "conj convert_element_type cos cosh cumprod cumsum div dot_general dynamic_slice "
    "dynamic_update_slice eq exp expm1 floor ge gt imag integer_pow iota is_finite le log log1p "
    "logistic lt max min mul ne neg not or pad pow real reduce_max reduce_min reduce_prod "
    "reduce_sum rem reshape rev round rsqrt select_n shift_left sign sin sinh slice sort sqrt "
    "squeeze sub tan tanh transpose xor").split()

__all__ = ["conv_general_dilated_p", "fft_p"]
for _module, _names in ((_P, _SAME_MEANING),
                        (_bits, ("population_count", "clz", "nextafter", "reduce_precision",
                                 "bitcast_convert_type")),
                        (_special, ("erf", "erfc", "erf_inv", "lgamma", "digamma", "bessel_i0e",
                                    "bessel_i1e", "igamma", "igammac", "polygamma", "zeta",
                                    "igamma_grad_a", "regularized_incomplete_beta")),
                        (_cumulative, ("cummax", "cummin")),
                        (_barrier, ("optimization_barrier",)),
                        (_control_flow, ("cond",))):
    for _name in _names:
        globals()[f"{_name}_p"] = getattr(_module, f"{_name}_p")
        __all__.append(f"{_name}_p")
# JAX's ``while`` primitive: operands ``cond_consts body_consts carry`` with ``cond_jaxpr`` /
# ``body_jaxpr`` / ``cond_nconsts`` / ``body_nconsts``; dynjax's carry begins with the loop's
# dynamic sizes (``nimplicit`` of them), which are carried values like the others.
while_p = _control_flow.while_loop_p
__all__.append("while_p")
del _module, _names, _name
