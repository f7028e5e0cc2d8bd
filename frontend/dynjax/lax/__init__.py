"""``dynjax.lax``: primitive operations and lax-style control flow.

The functions here bind primitives directly (strict shapes and dtypes, no broadcasting
or promotion); ``dynjax.numpy`` builds numpy semantics on top of them.
"""
from .api import *  # noqa: F401,F403
from .api import abs, complex, max, min, pow, round, slice  # noqa: F401  (shadowed builtins)
from . import effects, primitives  # noqa: F401
from . import symbolic_rules  # noqa: F401  (registers the dimension arithmetic)


from ..control_flow.lax_api import cond, fori_loop, scan, switch, while_loop  # noqa: E402,F401
from . import special  # noqa: E402,F401  (erf, lgamma, igamma, ...: the special-function primitives)
from .special import (bessel_i0e, bessel_i1e, digamma, erf, erf_inv, erfc, igamma,  # noqa: E402,F401
                      igammac, lgamma, polygamma, zeta)
from .convolution import (ConvDimensionNumbers, conv, conv_dimension_numbers,  # noqa: E402,F401
                          conv_general_dilated, conv_general_dilated_patches, conv_transpose,
                          conv_with_general_padding)
from . import callbacks  # noqa: E402,F401  (the pure_callback primitive)
from .fft import FftType, fft  # noqa: E402,F401  (the fft primitive; lax.fft is the function)
