"""``dynjax.numpy``: the numpy API on traced (and concrete) arrays with dynamic shapes.

Outside any trace these functions compute eagerly and return numpy arrays; inside
``make_jaxpr`` / ``qjit`` they record primitives. Sizes may be traced integers.
"""
from ..core.avals import (bfloat16, bool_, complex64, complex128, finfo, float16, float32, float64,  # noqa: F401
                          iinfo, int8, int16, int32, int64, uint8, uint16, uint32, uint64)
from .creation import (arange, array, asarray, empty, empty_like, eye, full, full_like,  # noqa: F401
                       identity, linspace, ones, ones_like, zeros, zeros_like)
from .indexing import at, getitem  # noqa: F401
from .selection import (argwhere, bincount, compress, digitize, extract, flatnonzero, histogram,  # noqa: F401
                        interp, nonzero, put, searchsorted, take, take_along_axis, unique, unique_all,
                        unique_counts, unique_inverse, unique_values)
from .linalg_ops import convolve, dot, inner, kron, matmul, outer, tensordot, vdot  # noqa: F401
from .linalg_ops import correlate  # noqa: F401,E402
from .einsum import diag, diagonal, einsum, trace  # noqa: F401
from .reductions import (all, amax, amin, any, argmax, argmin, count_nonzero, cumprod, cumsum,  # noqa: F401
                         max, mean, min, nancumprod, nancumsum, nanmax, nanmean, nanmin, nansum, prod,
                         ptp, size, std, sum, var)
from .shape_ops import (astype, broadcast_to, concatenate, diff, expand_dims, flip, fliplr,  # noqa: F401
                        flipud, hstack, moveaxis, ndim, pad, ravel, reshape, roll, shape, squeeze,
                        stack, swapaxes, transpose, vstack, atleast_1d, atleast_2d, atleast_3d,
                        tril, triu)
from .sorting import argsort, sort  # noqa: F401
from .arrangement import (append, array_split, delete, dsplit, hsplit, indices, insert, meshgrid,  # noqa: F401
                          repeat, rot90, split, tile, vsplit)
from .statistics import (average, median, nanmedian, nanpercentile, nanquantile, percentile,  # noqa: F401
                         quantile)
from .ufuncs import (abs, absolute, add, angle, arccos, arcsin, arctan, arctan2, bitwise_and,  # noqa: F401
                     bitwise_or, bitwise_xor, cbrt, ceil, clip, conj, conjugate, cos, cosh, divide, equal, exp,
                     expm1, floor, floor_divide, greater, greater_equal, imag, invert, iscomplexobj,
                     isfinite, isrealobj, less,
                     less_equal, log, log1p, logical_and, logical_not, logical_or, logical_xor,
                     maximum, minimum, mod, multiply, negative, not_equal, power, real, remainder, rint,
                     sign, sin, sinh, sqrt, square, subtract, tan, tanh, true_divide, where,
                     isnan, isinf, log2, log10, exp2, deg2rad, rad2deg,
                     around, round, fmod, left_shift, right_shift, bitwise_left_shift,
                     bitwise_right_shift, bitwise_not, bitwise_invert, hypot, sinc, signbit, copysign,
                     heaviside, nan_to_num, isclose, allclose)
from ._promote import promote_types, result_type  # noqa: F401
from . import indexing  # noqa: F401

pi = 3.141592653589793
e = 2.718281828459045
inf = float("inf")
nan = float("nan")
newaxis = None
bool = bool_
from . import linalg  # noqa: F401,E402  (dynjax.numpy.linalg: solve, inv, det, qr, eigh, svd, norm, ...)
from .elementwise import (acos, acosh, arccosh, arcsinh, arctanh, asin, asinh, atan, atan2,  # noqa: F401,E402
                          atanh, bitwise_count, degrees, divmod, fabs, float_power, fmax, fmin, frexp,
                          gcd, i0, iscomplex, isneginf, isposinf, isreal, lcm, ldexp, logaddexp,
                          logaddexp2, modf, nextafter, positive, pow, radians, reciprocal, spacing, trunc)
from .polynomial import (poly, polyadd, polyder, polydiv, polyfit, polyint, polymul, polysub,  # noqa: F401,E402
                         polyval, roots, vander)
from .setops import intersect1d, isin, setdiff1d, setxor1d, union1d  # noqa: F401,E402
from .windows import (bartlett, blackman, copy, fromfunction, geomspace, hamming, hanning,  # noqa: F401,E402
                      kaiser, logspace, tri)
from .index_tricks import (c_, diag_indices, diag_indices_from, fill_diagonal, index_exp, ix_,  # noqa: F401,E402
                           mask_indices, mgrid, ogrid, r_, ravel_multi_index, s_, tril_indices,
                           tril_indices_from, triu_indices, triu_indices_from, unravel_index)
from . import fft  # noqa: F401,E402  (dynjax.numpy.fft: fft, rfft, fftn, fftfreq, fftshift, ...)
from .sorting import argpartition, lexsort, partition, sort_complex  # noqa: F401,E402
from .reshaping import (block, broadcast_arrays, broadcast_shapes, column_stack, concat, diagflat,  # noqa: F401,E402
                        dstack, ediff1d, matrix_transpose, permute_dims, resize, rollaxis, trim_zeros,
                        unstack)
from .functional import (apply_along_axis, apply_over_axes, choose, piecewise, place,  # noqa: F401,E402
                         put_along_axis, select, vectorize)
from .moments import corrcoef, cov, nanargmax, nanargmin, nanprod, nanstd, nanvar  # noqa: F401,E402
from .calculus import (array_equal, array_equiv, cross, gradient, matvec, packbits, trapezoid,  # noqa: F401,E402
                       unpackbits, unwrap, vecdot, vecmat)
from .histograms import histogram2d, histogram_bin_edges, histogramdd  # noqa: F401,E402
from .cumulative import cumulative_prod, cumulative_sum  # noqa: F401,E402  (numpy 2's cumulative_*)
from .dtypes import (bfloat16, bool_, can_cast, cdouble, character, complex64, complex128,  # noqa: F401,E402
                     complex_, complexfloating, csingle, double, dtype, euler_gamma, flexible, float16,
                     float32, float64, float_, floating, generic, half, inexact, int8, int16, int32, int64,
                     int_, integer, isdtype, isscalar, issubdtype, iterable,
                     number, object_, signedinteger, single, uint, uint8, uint16, uint32, uint64,
                     unsignedinteger)
from .dtypes import bool_ as bool  # noqa: F401,E402
from . import array_methods  # noqa: F401,E402  (ndarray methods of traced values: x.std(), x.sort(), x.mT, ...)
from .padding import pad  # noqa: F401,E402  (every mode, traced widths: replaces shape_ops.pad)
from .reduction_keywords import (all, any, argmax, argmin, cumprod, cumsum, mean, nancumprod,  # noqa: F401,E402,E501
                                 nancumsum, nanmean, nansum, prod, std, sum, var)
from .dtypes import ndarray  # noqa: F401,E402  (isinstance(x, jnp.ndarray))
