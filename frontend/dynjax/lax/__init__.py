"""``dynjax.lax``: primitive operations and lax-style control flow.

The functions here bind primitives directly (strict shapes and dtypes, no broadcasting
or promotion); ``dynjax.numpy`` builds numpy semantics on top of them.
"""
from .api import *  # noqa: F401,F403
from .api import abs, complex, max, min, pow, round, slice  # noqa: F401  (shadowed builtins)
from . import effects, primitives  # noqa: F401
from . import symbolic_rules  # noqa: F401  (registers the dimension arithmetic)


from ..control_flow.lax_api import cond, fori_loop, scan, switch, while_loop  # noqa: E402,F401
from ..control_flow.linear_solve import custom_linear_solve  # noqa: E402,F401
from ..control_flow.custom_root import custom_root  # noqa: E402,F401
from . import special  # noqa: E402,F401  (erf, lgamma, igamma, ...: the special-function primitives)
from .special import (bessel_i0e, bessel_i1e, betainc, digamma, erf, erf_inv, erfc,  # noqa: E402,F401
                      igamma, igamma_grad_a, igammac, lgamma, polygamma, random_gamma_grad, zeta)
from .convolution import (ConvDimensionNumbers, conv, conv_dimension_numbers,  # noqa: E402,F401
                          conv_general_dilated, conv_general_dilated_patches,
                          conv_general_permutations, conv_general_shape_tuple, conv_shape_tuple,
                          conv_transpose, conv_transpose_shape_tuple, conv_with_general_padding,
                          padtype_to_pads, ConvGeneralDilatedDimensionNumbers)
from . import callbacks  # noqa: E402,F401  (the pure_callback primitive)
from .cumulative import associative_scan, cummax, cumlogsumexp, cummin  # noqa: E402,F401
from .fft import FftType, fft  # noqa: E402,F401  (the fft primitive; lax.fft is the function)
# JAX's lax names: derived functions (replacing the thin wrappers of api.py where the names
# coincide), bit-level primitives, general gather / scatter, and the primitives as <name>_p
from .derived import (Precision, RoundingMethod, acosh, argmax, argmin, asinh, atanh,  # noqa: E402,F401
                      batch_matmul, broadcast_shapes, broadcast_to_rank, clamp, collapse, dot,
                      dot_general, empty, exp2, expand_dims, full, full_like, map, pow, reciprocal,
                      reduce_and, reduce_max, reduce_min, reduce_or, reduce_prod, reduce_sum,
                      reduce_xor, reshape, round, square, squeeze, stop_gradient, zeros_like_array)
from .slicing_functions import (dynamic_index_in_dim, dynamic_slice,  # noqa: E402,F401
                                dynamic_slice_in_dim, dynamic_update_index_in_dim,
                                dynamic_update_slice, dynamic_update_slice_in_dim, index_in_dim,
                                slice_in_dim, split)
from .sorting import (approx_max_k, approx_min_k, sort, sort_key_val,  # noqa: E402,F401
                      top_k)
from .bits import (bitcast_convert_type, clz, nextafter, population_count,  # noqa: E402,F401
                   reduce_precision, shift_right_arithmetic, shift_right_logical)
from .slicing import (GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers,  # noqa: E402,F401
                      gather, scatter, scatter_add, scatter_apply, scatter_max, scatter_min,
                      scatter_mul, scatter_sub)
from .primitive_names import *  # noqa: E402,F401,F403
from . import prng  # noqa: E402,F401  (the threefry2x32 primitive)
from .reduce_window import reduce, reduce_window, reduce_window_shape_tuple  # noqa: E402,F401
from .derived import (DotDimensionNumbers, PrecisionLike,  # noqa: E402,F401
                      broadcast_like, dtype, index_take, mulhi, stack, tile, unstack)
from .ragged import RaggedDotDimensionNumbers, ragged_dot, ragged_dot_general  # noqa: E402,F401
from .barrier import optimization_barrier  # noqa: E402,F401  (the optimization_barrier primitive)
from .rng import RandomAlgorithm, rng_bit_generator  # noqa: E402,F401  (XLA's bit generators)
from .collectives import (all_gather, all_to_all, axis_index, axis_size, pmax, pmean,  # noqa: E402,F401
                          pmin, ppermute, pshuffle, psum, psum_scatter)
from .collectives import (all_gather_p, all_to_all_p, axis_index_p, pmax_p, pmin_p,  # noqa: E402,F401
                          ppermute_p, psum_p)
from .sharding import sharding_constraint_p  # noqa: E402,F401
from ..parallel.constraints import with_sharding_constraint  # noqa: E402,F401  (JAX's lax name)
