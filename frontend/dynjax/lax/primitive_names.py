"""The primitives under JAX's names (``dynjax.lax.add_p``, ``dot_general_p`` ...), for code
that registers rules against them or binds them: each is dynjax's own ``Primitive`` object
(``lax/primitives.py``, ``lax/bits.py``). Only primitives with JAX's meaning are exported:
dynjax's ``gather`` / ``scatter`` primitives index whole axes with index rows (JAX's take
dimension numbers), so they keep their module names only.
"""
from __future__ import annotations

from . import bits as _bits
from . import primitives as _P

_SAME_MEANING = (
    "abs acos add and argmax argmin asin atan atan2 broadcast_in_dim cbrt ceil complex concatenate "
    "conj convert_element_type cos cosh cumprod cumsum div dot_general dynamic_slice "
    "dynamic_update_slice eq exp expm1 floor ge gt imag integer_pow iota is_finite le log log1p "
    "logistic lt max min mul ne neg not or pad pow real reduce_max reduce_min reduce_prod "
    "reduce_sum rem reshape rev round rsqrt select_n shift_left sign sin sinh slice sort sqrt "
    "squeeze sub tan tanh transpose xor").split()

__all__ = []
for _name in _SAME_MEANING:
    globals()[f"{_name}_p"] = getattr(_P, f"{_name}_p")
    __all__.append(f"{_name}_p")
for _name in ("population_count", "clz", "nextafter", "reduce_precision", "bitcast_convert_type"):
    globals()[f"{_name}_p"] = getattr(_bits, f"{_name}_p")
    __all__.append(f"{_name}_p")
del _name
