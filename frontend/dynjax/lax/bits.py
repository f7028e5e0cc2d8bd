"""Bit-level primitives: population count, leading zeros, ``nextafter``, ``reduce_precision``
and ``bitcast_convert_type`` (each with its numpy impl and abstract evaluation), and the thin
``dynjax.lax`` functions that bind them or are built on them (``shift_right_logical``,
``shift_right_arithmetic``).

All are elementwise, except that ``bitcast_convert_type`` between types of different widths
adds (wider to narrower) or removes (narrower to wider) a trailing axis of the width ratio,
as XLA's ``bitcast_convert`` does. Their rules: ``lowering/bits.py``,
``transforms/jvp/bits.py``, ``transforms/batching/bits.py``, ``cost_model/bits.py``; their
padding rules are in ``execution/padding.py`` (elementwise: nothing to do).
"""
from __future__ import annotations

import numpy as np

from ..core.avals import canonical_dtype, dtype_category, is_integer_dtype
from ..core.trace import typeof
from .base import aval, check_dtypes_equal, check_same_shapes, define, result_aval
from .primitives import check_kinds

__all__ = ["population_count", "clz", "nextafter", "reduce_precision", "bitcast_convert_type",
           "shift_right_logical", "shift_right_arithmetic", "population_count_p", "clz_p",
           "nextafter_p", "reduce_precision_p", "bitcast_convert_type_p"]


def _uint_of(dtype) -> np.dtype:
    return np.dtype(f"u{np.dtype(dtype).itemsize}")


def _int_of(dtype) -> np.dtype:
    return np.dtype(f"i{np.dtype(dtype).itemsize}")


# --- population_count and clz ----------------------------------------------------------------
def _bits_of(x):
    """The elements of ``x`` as a flat array of unsigned integers of the same width."""
    return np.ascontiguousarray(x).reshape(-1).view(_uint_of(x.dtype))


def _popcount_impl(x):
    x = np.asarray(x)
    check_kinds("population_count", "integer", aval(x))
    u = _bits_of(x)
    bytes_ = np.unpackbits(u.view(np.uint8)).reshape(u.shape + (8 * x.dtype.itemsize,))
    return bytes_.sum(axis=-1).astype(x.dtype).reshape(x.shape)


def _clz_impl(x):
    x = np.asarray(x)
    check_kinds("clz", "integer", aval(x))
    u = _bits_of(x)
    nbits = 8 * x.dtype.itemsize
    out = np.full(u.shape, nbits, dtype=np.int64)
    for b in range(nbits):   # the highest set bit decides (later, higher bits overwrite)
        out = np.where((u >> u.dtype.type(b)) & u.dtype.type(1), nbits - 1 - b, out)
    return out.astype(x.dtype).reshape(x.shape)


def _int_unary_abstract(name):
    def rule(x):
        a = aval(x)
        check_kinds(name, "integer", a)
        return result_aval(a.shape, a.dtype, a.weak_type)
    return rule


population_count_p = define("population_count", _popcount_impl, _int_unary_abstract("population_count"))
clz_p = define("clz", _clz_impl, _int_unary_abstract("clz"))


# --- nextafter -------------------------------------------------------------------------------
def _nextafter_impl(x, y):
    _nextafter_abstract(x, y)   # eager refuses what tracing refuses
    x, y = np.asarray(x), np.asarray(y)
    dt = x.dtype
    if dt.itemsize < 4 and dt not in (np.float16,):
        # ml_dtypes' narrow floats: step the bit pattern (the lowering's algorithm)
        return _nextafter_bits(x, y)
    out = np.asarray(np.nextafter(x, y), dt)
    return np.where(x == y, y, out).astype(dt)   # y itself when equal (-0.0 toward +0.0 too)


def _nextafter_bits(x, y):
    """The next representable value after ``x`` toward ``y``, by stepping the bit pattern: the
    magnitude grows by one unit when moving away from zero, shrinks otherwise; from a zero, the
    smallest subnormal with ``y``'s sign; ``y`` itself when equal; NaN when either is NaN."""
    dt = x.dtype
    u = _uint_of(dt)
    x, y = np.broadcast_arrays(x, y)
    xb = np.ascontiguousarray(x).reshape(-1).view(u)
    yb = np.ascontiguousarray(y).reshape(-1).view(u)
    xf, yf = x.reshape(-1).astype(np.float32), y.reshape(-1).astype(np.float32)
    grow = np.where(xf < 0, xf > yf, xf < yf)
    stepped = np.where(grow, xb + u.type(1), xb - u.type(1)).astype(u)
    from_zero = (yb & u.type(1 << (8 * dt.itemsize - 1))) | u.type(1)
    out = np.where(xf == 0, from_zero, stepped)
    out = np.where(xf == yf, yb, out).astype(u)
    res = out.view(dt)
    res = np.where(np.isnan(xf) | np.isnan(yf), np.asarray(np.nan, dt), res)
    return np.asarray(res, dt).reshape(x.shape)


def _nextafter_abstract(x, y):
    a, b = aval(x), aval(y)
    check_dtypes_equal("nextafter", a, b)
    if a.ndim and b.ndim:
        check_same_shapes("nextafter", a, b)
    check_kinds("nextafter", "float", a)
    return result_aval(a.shape if a.ndim else b.shape, a.dtype, a.weak_type and b.weak_type)


nextafter_p = define("nextafter", _nextafter_impl, _nextafter_abstract)


# --- reduce_precision ------------------------------------------------------------------------
def _float_layout(dt):
    """(exponent bits, mantissa bits) of a float dtype (ml_dtypes' too: bfloat16, float8)."""
    from ..core.avals import finfo
    info = finfo(dt)
    return int(info.nexp), int(info.nmant)


def _reduce_precision_impl(x, *, exponent_bits, mantissa_bits):
    """XLA's reduce_precision on the bit patterns: the mantissa rounded to ``mantissa_bits``
    (to nearest, ties to even), then values above the reduced exponent range become infinities
    and values at or below its smallest exponent become zeros (signs kept); NaNs stay NaNs
    while ``mantissa_bits > 0``."""
    x = np.asarray(x)
    check_kinds("reduce_precision", "float", aval(x))
    dt = x.dtype
    u = _uint_of(dt)
    src_e, src_m = _float_layout(dt)
    bits = np.array(x, ndmin=1).view(u).copy()
    if mantissa_bits < src_m:
        shift = src_m - mantissa_bits
        last = u.type(1 << shift)
        base_bias = u.type((1 << (shift - 1)) - 1)
        x_last = (bits & last) >> u.type(shift)
        bits = ((bits + base_bias + x_last) & ~u.type((1 << shift) - 1)).astype(u)
    if exponent_bits < src_e:
        sign_mask = u.type(1 << (src_e + src_m))
        exp_mask = u.type(((1 << src_e) - 1) << src_m)
        src_bias = (1 << (src_e - 1)) - 1
        red_bias = (1 << (exponent_bits - 1)) - 1
        max_e = src_bias + red_bias
        min_e = src_bias - red_bias
        sign = bits & sign_mask
        e = bits & exp_mask
        overflow = e > u.type(max_e << src_m)
        underflow = e <= u.type(min_e << src_m)
        bits = np.where(overflow, sign | exp_mask, np.where(underflow, sign, bits)).astype(u)
    out = bits.view(dt).reshape(x.shape)
    if mantissa_bits > 0:
        out = np.where(np.isnan(x.astype(np.float32) if dt.itemsize < 4 else x), x, out)
    return np.asarray(out, dt)


def _reduce_precision_abstract(x, *, exponent_bits, mantissa_bits):
    a = aval(x)
    check_kinds("reduce_precision", "float", a)
    return result_aval(a.shape, a.dtype, a.weak_type)


reduce_precision_p = define("reduce_precision", _reduce_precision_impl, _reduce_precision_abstract)


# --- bitcast_convert_type --------------------------------------------------------------------
_BITCASTABLE = ("signed", "unsigned", "float", "complex")


def _bitcast_shape(name, a, new_dtype):
    if dtype_category(a.dtype) not in _BITCASTABLE or dtype_category(new_dtype) not in _BITCASTABLE:
        raise TypeError(f"{name}: cannot bitcast {a.dtype.name} to {np.dtype(new_dtype).name} "
                        "(bool is not bitcastable)")
    if dtype_category(a.dtype) == "complex" or dtype_category(new_dtype) == "complex":
        raise TypeError(f"{name}: complex types are not bitcastable (got {a.dtype.name} to "
                        f"{np.dtype(new_dtype).name})")
    old, new = a.dtype.itemsize, np.dtype(new_dtype).itemsize
    if old == new:
        return tuple(a.shape)
    if name == "bitcast_convert_type_p":
        raise TypeError(f"the bitcast_convert_type primitive reinterprets types of one width, got "
                        f"{a.dtype.name} to {np.dtype(new_dtype).name} (lax.bitcast_convert_type "
                        "changes widths)")
    if old > new:
        return tuple(a.shape) + (old // new,)
    if not a.ndim or a.shape[-1] != new // old:
        raise TypeError(f"{name}: converting {a.dtype.name} to the wider {np.dtype(new_dtype).name} "
                        f"needs a last axis of size {new // old}, got shape {a.str_short()}")
    return tuple(a.shape[:-1])


def _bitcast_impl(x, *, new_dtype):
    x = np.asarray(x)   # (np.ascontiguousarray would make a scalar a 1-element vector)
    shape = _bitcast_shape("bitcast_convert_type_p", aval(x), new_dtype)
    return np.array(x.reshape(-1).view(new_dtype).reshape(shape))


def _bitcast_abstract(x, *, new_dtype):
    a = aval(x)
    return result_aval(_bitcast_shape("bitcast_convert_type_p", a, new_dtype), canonical_dtype(new_dtype))


bitcast_convert_type_p = define("bitcast_convert_type", _bitcast_impl, _bitcast_abstract)


# --- the lax API -----------------------------------------------------------------------------
def population_count(x):
    """The number of set bits of each element (integers)."""
    return population_count_p.bind(x)


def clz(x):
    """The number of leading zero bits of each element (integers)."""
    return clz_p.bind(x)


def nextafter(x1, x2):
    """The next representable float after ``x1`` in the direction of ``x2``."""
    return nextafter_p.bind(x1, x2)


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    """``operand`` rounded to a float format of ``exponent_bits`` / ``mantissa_bits`` bits
    (and kept in its own dtype), as XLA's ``reduce_precision``."""
    exponent_bits, mantissa_bits = int(exponent_bits), int(mantissa_bits)
    if exponent_bits < 1:
        raise ValueError(f"reduce_precision: exponent_bits must be >= 1, got {exponent_bits}")
    if mantissa_bits < 0:
        raise ValueError(f"reduce_precision: mantissa_bits must be >= 0, got {mantissa_bits}")
    if not hasattr(operand, "aval") and not isinstance(operand, np.ndarray):
        operand = np.asarray(operand, np.float64 if isinstance(operand, float) else None)
    return reduce_precision_p.bind(operand, exponent_bits=exponent_bits, mantissa_bits=mantissa_bits)


def bitcast_convert_type(operand, new_dtype):
    """The bits of ``operand`` read as ``new_dtype``: the shape is unchanged for types of the
    same width; a trailing axis of the width ratio is added (to a narrower type: its parts,
    least significant first) or removed (from a narrower type, whose last axis must have that
    size). The primitive reinterprets types of one width; width changes are shifts and
    conversions of the unsigned patterns (which shape refinement handles at dynamic sizes)."""
    from . import api, primitives as P
    new_dtype = canonical_dtype(new_dtype)
    a = typeof(operand)
    if a.dtype == new_dtype:
        return operand
    shape = _bitcast_shape("bitcast_convert_type", a, new_dtype)
    old_w, new_w = a.dtype.itemsize, np.dtype(new_dtype).itemsize
    if old_w == new_w:
        return bitcast_convert_type_p.bind(operand, new_dtype=new_dtype)
    old_u, new_u = _uint_of(a.dtype), _uint_of(new_dtype)
    u = bitcast_convert_type(operand, old_u)
    if old_w > new_w:
        parts = []
        for j in range(old_w // new_w):
            part = P.shift_right_p.bind(u, np.asarray(8 * new_w * j, old_u))
            part = bitcast_convert_type(P.convert_element_type_p.bind(part, new_dtype=new_u, weak_type=False),
                                        new_dtype)
            parts.append(api.broadcast_in_dim(part, tuple(a.shape) + (1,), tuple(range(a.ndim))))
        return api.concatenate(parts, a.ndim)
    acc = None
    last = a.ndim - 1
    for j in range(new_w // old_w):
        starts = [0] * a.ndim
        starts[last] = j
        limits = [d if isinstance(d, int) else None for d in a.shape]
        limits[last] = j + 1
        piece = api.squeeze(api.slice(u, starts, limits), (last,))
        piece = P.convert_element_type_p.bind(piece, new_dtype=new_u, weak_type=False)
        piece = P.shift_left_p.bind(piece, np.asarray(8 * old_w * j, new_u))
        acc = piece if acc is None else P.or_p.bind(acc, piece)
    del shape
    return bitcast_convert_type(acc, new_dtype)


def _shift_as(name, x, y, view_of):
    """``shift_right`` (arithmetic for signed, logical for unsigned types) on the bits of
    ``x`` and ``y`` read as the type ``view_of(dtype)``, read back as ``x``'s type."""
    from . import primitives as P
    a = typeof(x)
    if not is_integer_dtype(a.dtype):
        raise TypeError(f"{name} needs integer operands, got {a.str_short()}")
    if isinstance(y, (int, np.integer)) and not isinstance(y, np.ndarray):
        y = np.asarray(y).astype(a.dtype)
    view = view_of(a.dtype)
    if a.dtype == view:
        return P.shift_right_p.bind(x, y)
    out = P.shift_right_p.bind(bitcast_convert_type(x, view), bitcast_convert_type(y, view))
    return bitcast_convert_type(out, a.dtype)


def shift_right_logical(x, y):
    """``x >> y`` filling with zeros (a signed ``x``'s bits read as unsigned); a count outside
    ``[0, bits)`` gives 0."""
    return _shift_as("shift_right_logical", x, y, _uint_of)


def shift_right_arithmetic(x, y):
    """``x >> y`` filling with the sign bit (an unsigned ``x``'s bits read as signed); a count
    outside ``[0, bits)`` gives the sign fill."""
    return _shift_as("shift_right_arithmetic", x, y, _int_of)
