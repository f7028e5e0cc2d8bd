"""Convolutions: the ``conv_general_dilated`` primitive and JAX's ``lax`` convolution API.

``conv_general_dilated(lhs, rhs, ...)`` is XLA's general convolution: any number of spatial
dims, strides, explicit or ``'SAME'`` / ``'SAME_LOWER'`` / ``'VALID'`` padding, input
(``lhs_dilation``, a transposed convolution) and kernel (``rhs_dilation``, atrous) dilation,
grouped convolution (``feature_group_count``) and ``batch_group_count`` (the filter
gradient of a grouped convolution).

In the *canonical* layouts ``lhs`` is ``(N, C, spatial...)``, ``rhs`` is ``(O, I,
window...)`` and the result is ``(N / batch_group_count, O, spatial'...)``;
``dimension_numbers`` (a ``ConvDimensionNumbers`` of three permutations) say where each of
those axes sits in the actual arrays. With ``G = feature_group_count`` the features are
split group-major: ``C = G * I``, ``O = G * O_g`` and output feature ``g * O_g + o`` sees
only input features ``g * I ... g * I + I - 1``. With ``B = batch_group_count`` the batch
is split group-major (``N = B * N'``) and output feature ``b * O_b + o`` sees only the batch
members ``b * N' ... b * N' + N' - 1``.

Spatially, ``lhs`` is first dilated (``lhs_dilation - 1`` zeros between elements: size
``(n - 1) * d + 1``, 0 for an empty axis), then padded (negative padding crops), and the
dilated window (``(k - 1) * d + 1``) slides over it with the stride: the output has
``max(padded - window + stride, 0) // stride`` elements.

**Dynamic sizes.** Batch and spatial dims may be dynamic. The output sizes (and the pad
amounts of ``'SAME'`` with a stride > 1) are then size expressions of the input dims,
computed by the wrapper with integer ``lax`` operations and passed to the primitive as
trailing operands, the catalogue's convention: ``padding`` holds ``None`` for a dynamic pad
amount, ``out_shape`` (the result in canonical order) ``None`` for a dynamic size::

    conv_general_dilated[..., padding=((0, 0),), out_shape=(None, 4, None)] lhs rhs n o

The numpy impl (the reference semantics) dilates and pads explicitly, then contracts
strided windows (``sliding_window_view``) with the kernel in one ``einsum`` per group.
"""
from __future__ import annotations

import operator
from typing import NamedTuple, Sequence, Union

import numpy as np

from ..core.avals import canonical_dtype, int64
from ..core.primitive import as_dim
from ..core.trace import Tracer, typeof
from .base import (aval, check_dim_operands, define, describe_shapes, dim_str, result_aval,
                   same_dim)

__all__ = ["ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_permutations",
           "conv_general_dilated_p", "conv_general_dilated", "conv", "conv_with_general_padding",
           "conv_transpose", "conv_general_dilated_patches", "padtype_to_pads", "conv_shape_tuple",
           "conv_general_shape_tuple", "conv_transpose_shape_tuple", "ConvGeneralDilatedDimensionNumbers"]


class ConvDimensionNumbers(NamedTuple):
    """Where the axes of a convolution sit: ``lhs_spec`` lists the positions of
    ``(batch, feature, spatial...)`` of ``lhs``, ``rhs_spec`` those of ``(out feature, in
    feature, spatial...)`` of ``rhs``, ``out_spec`` those of ``(batch, feature,
    spatial...)`` of the result."""
    lhs_spec: Sequence[int]
    rhs_spec: Sequence[int]
    out_spec: Sequence[int]


#: what ``conv_general_dilated``'s ``dimension_numbers`` takes
ConvGeneralDilatedDimensionNumbers = Union[tuple[str, str, str], ConvDimensionNumbers, None]


# ----------------------------------------------------------------------------------------------
# dimension numbers
# ----------------------------------------------------------------------------------------------
def conv_general_permutations(dimension_numbers):
    """The three permutations of a string triple such as ``('NHWC', 'HWIO', 'NHWC')``.
    Spatial axes are ordered as their letters appear in the kernel spec."""
    lhs_s, rhs_s, out_s = dimension_numbers
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(pairs):
        spec = dimension_numbers[i]
        if not spec.count(a) == spec.count(b) == 1:
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                            f"'{a}' and '{b}' exactly once, got {spec}.")
        if len(spec) != len(set(spec)):
            raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate "
                            f"characters, got {spec}.")
    if not (set(lhs_s) - set("NC") == set(rhs_s) - set("OI") == set(out_s) - set("NC")):
        raise TypeError("convolution dimension_numbers elements must each have the same set of "
                        f"spatial characters, got {tuple(dimension_numbers)}.")
    spatial_order = [c for c in rhs_s if c not in "OI"]

    def perm(spec, pair):
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spec.index(c) for c in spatial_order)
    return tuple(perm(s, p) for s, p in zip(dimension_numbers, pairs))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """``dimension_numbers`` (``None``, a string triple, or a ``ConvDimensionNumbers``) as a
    ``ConvDimensionNumbers`` of tuples; ``None`` means the canonical layouts (``NCHW``,
    ``OIHW``, ``NCHW`` for two spatial dims)."""
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return ConvDimensionNumbers(*(tuple(int(i) for i in s) for s in dimension_numbers))
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError("convolution requires lhs and rhs ndim to be equal, got "
                        f"{len(lhs_shape)} and {len(rhs_shape)}.")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (list, tuple)):
        raise TypeError("convolution dimension_numbers must be tuple/list or None, got "
                        f"{type(dimension_numbers)}.")
    if len(dimension_numbers) != 3:
        raise TypeError("convolution dimension_numbers list/tuple must be length 3, got "
                        f"{len(dimension_numbers)}.")
    if not all(isinstance(s, str) for s in dimension_numbers):
        raise TypeError("convolution dimension_numbers elements must be strings, got "
                        f"{tuple(type(s) for s in dimension_numbers)}.")
    for i, s in enumerate(dimension_numbers):
        if len(s) != len(lhs_shape):
            raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the ndim "
                            f"of lhs and rhs, got {len(s)} for lhs and rhs ranks "
                            f"{len(lhs_shape)} and {len(rhs_shape)}.")
    return ConvDimensionNumbers(*conv_general_permutations(tuple(dimension_numbers)))


def _check_dnums(dn: ConvDimensionNumbers, ndim: int) -> None:
    for name, spec in zip(("lhs_spec", "rhs_spec", "out_spec"), dn):
        if sorted(spec) != list(range(ndim)):
            raise TypeError(f"conv_general_dilated: dimension_numbers.{name} must be a "
                            f"permutation of range({ndim}), got {tuple(spec)}")


# ----------------------------------------------------------------------------------------------
# size arithmetic on ints or traced sizes
# ----------------------------------------------------------------------------------------------
def _api():
    from . import api
    return api


def _is_int(d) -> bool:
    return isinstance(d, (int, np.integer)) and not isinstance(d, bool)


def _add(a, b):
    return int(a) + int(b) if _is_int(a) and _is_int(b) else _api().add(a, b)


def _sub(a, b):
    return int(a) - int(b) if _is_int(a) and _is_int(b) else _api().sub(a, b)


def _mul(a, b):
    return int(a) * int(b) if _is_int(a) and _is_int(b) else _api().mul(a, b)


def _max0(a):
    return max(int(a), 0) if _is_int(a) else _api().max(a, 0)


def _div_nonneg(a, c: int):
    """``a // c`` for ``a >= 0`` and a positive int ``c``."""
    return int(a) // c if _is_int(a) else (a if c == 1 else _api().div(a, c))


def _size(d):
    """An int, or a traced size as an int64 tracer (a literal becomes an int)."""
    if isinstance(d, Tracer):
        lit = getattr(d, "literal", None)
        if lit is not None:
            return int(lit.val)
        if d.aval.dtype != int64:
            return _api().convert_element_type(d, int64)
        return d
    return int(d)


def dilate_dim(n, d: int):
    """The size of an axis of ``n`` elements with ``d - 1`` zeros between neighbours
    (0 for an empty axis): ``(d - 1) * max(n - 1, 0) + n``."""
    if d == 1:
        return n
    if _is_int(n):
        return 0 if n == 0 else (n - 1) * d + 1
    return _add(_mul(d - 1, _max0(_sub(n, 1))), n)


def conv_out_dim(padded, window, stride: int):
    """How many windows of ``window`` elements fit at ``stride`` into ``padded``."""
    return _div_nonneg(_max0(_add(_sub(padded, window), stride)), stride)


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """``(low, high)`` pads of ``'SAME'`` (the odd element at the end), ``'SAME_LOWER'``
    (at the start) or ``'VALID'`` (none); sizes may be traced (the pads then are too)."""
    if not isinstance(padding, str):
        raise TypeError(f"padding must be a string, got {padding!r}")
    mode = padding.upper()
    if mode not in ("SAME", "SAME_LOWER", "VALID"):
        raise RuntimeError("Unrecognized padding type: expected 'VALID', 'SAME', or "
                           f"'SAME_LOWER', got {padding}.")
    if mode == "VALID":
        return [(0, 0)] * len(in_shape)
    pads = []
    for n, w, s in zip(in_shape, window_shape, window_strides):
        out = _div_nonneg(_add(n, s - 1), s)                       # ceil(n / s)
        total = _max0(_sub(_add(_mul(_sub(out, 1), s), w), n))
        small = _div_nonneg(total, 2)
        big = _sub(total, small)
        pads.append((small, big) if mode == "SAME" else (big, small))
    return pads


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """The result shape of a convolution of canonical layouts (``NC...``, ``OI...``): ``pads``
    is ``'SAME'`` / ``'SAME_LOWER'`` / ``'VALID'`` or one ``(low, high)`` pair per spatial axis.
    Sizes may be traced (the result's are then too)."""
    lhs_shape, rhs_shape = tuple(lhs_shape), tuple(rhs_shape)
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                        f"{len(lhs_shape) - 2}, got {len(pads)}.")
    padded = [_add(_add(n, lo), hi) for n, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(_is_int(p) and p < 0 for p in padded):
        raise ValueError("Negative padding is larger than the size of the corresponding dimension: "
                         f"got padding={list(pads)} for lhs_shape[2:]={lhs_shape[2:]}")
    space = tuple(conv_out_dim(p, w, int(st)) for p, w, st in zip(padded, rhs_shape[2:], strides))
    n = lhs_shape[0]
    if batch_group_count > 1:
        n = _div_nonneg(n, int(batch_group_count))
    return (n, rhs_shape[0]) + space


def _take(shape, perm):
    return tuple(shape[i] for i in perm)


def _untake(shape, perm):
    out = [None] * len(perm)
    for i, p in enumerate(perm):
        out[p] = shape[i]
    return tuple(out)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The result shape of ``conv_general_dilated`` (no dilation) for string
    ``dimension_numbers`` such as ``('NHWC', 'HWIO', 'NHWC')``."""
    lp, rp, op = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple(_take(tuple(lhs_shape), lp), _take(tuple(rhs_shape), rp),
                           window_strides, padding)
    return _untake(out, op)


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The result shape of ``conv_transpose`` (no dilation) for string ``dimension_numbers``;
    ``padding`` is ``'SAME'`` / ``'VALID'`` or one pair per spatial axis."""
    lp, rp, op = conv_general_permutations(dimension_numbers)
    lt, rt = _take(tuple(lhs_shape), lp), _take(tuple(rhs_shape), rp)
    if isinstance(padding, str):
        padding = [_transpose_pads(int(k), int(st), padding) for k, st in zip(rt[2:], window_strides)]
    totals = [sum(int(v) for v in p) for p in padding]
    space = tuple(_add(_sub(_mul(_sub(i, 1), int(st)), k), 2 + t)
                  for i, k, st, t in zip(lt[2:], rt[2:], window_strides, totals))
    return _untake((lt[0], rt[0]) + space, op)


# ----------------------------------------------------------------------------------------------
# the primitive
# ----------------------------------------------------------------------------------------------
def _split_dyn(padding, out_shape, dyn):
    npad = sum(v is None for pair in padding for v in pair)
    nout = sum(d is None for d in out_shape)
    if len(dyn) != npad + nout:
        raise TypeError(f"conv_general_dilated: expected {npad + nout} dynamic size operands, "
                        f"got {len(dyn)}")
    return dyn[:npad], dyn[npad:]


def _fill(static, dyn, conv):
    it = iter(dyn)
    return tuple(conv(next(it)) if v is None else v for v in static)


def _canonical_shapes(lav, rav, dn):
    lhs = tuple(lav.shape[i] for i in dn.lhs_spec)
    rhs = tuple(rav.shape[i] for i in dn.rhs_spec)
    return lhs, rhs


def _check(lav, rav, *, window_strides, lhs_dilation, rhs_dilation, dimension_numbers,
           feature_group_count, batch_group_count, preferred_element_type):
    """JAX's shape and dtype checks; the result dtype."""
    if lav.ndim != rav.ndim:
        raise ValueError("conv_general_dilated lhs and rhs must have the same number of dimensions, "
                         f"but got {describe_shapes(lav)} and {describe_shapes(rav)}.")
    if lav.ndim < 2:
        raise ValueError("conv_general_dilated lhs and rhs must have at least 2 dimensions, got "
                         f"{describe_shapes(lav)}")
    dn = dimension_numbers
    _check_dnums(dn, lav.ndim)
    nsp = lav.ndim - 2
    for name, v in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                    ("rhs_dilation", rhs_dilation)):
        if len(v) != nsp:
            raise ValueError(f"conv_general_dilated {name} must have {nsp} entries (one per "
                             f"spatial dimension), got {len(v)}")
        if any(int(s) < 1 for s in v):
            raise ValueError(f"conv_general_dilated {name} must be positive, got {tuple(v)}")
    if lav.dtype != rav.dtype:
        raise TypeError("conv_general_dilated requires arguments to have the same dtypes, got "
                        f"{lav.dtype.name}, {rav.dtype.name}.")
    if lav.dtype == np.dtype(bool):
        raise TypeError("conv_general_dilated does not accept dtype bool")
    G, B = feature_group_count, batch_group_count
    if G < 1:
        raise ValueError(f"conv_general_dilated feature_group_count must be a positive integer, got {G}.")
    if B < 1:
        raise ValueError(f"conv_general_dilated batch_group_count must be a positive integer, got {B}.")
    if G > 1 and B > 1:
        raise ValueError("At most one of batch_group_count and feature_group_count may be > 1, "
                         f"got batch_group_count={B} and feature_group_count={G}")
    (n, c, *_), (o, i, *_) = _canonical_shapes(lav, rav, dn)
    # dynamic feature sizes (the transposes contract over a batch axis) are checked where
    # they can be: equal when ungrouped; grouped ones are trusted
    if _is_int(c) and c % G:
        raise ValueError("conv_general_dilated feature_group_count must divide lhs feature "
                         f"dimension size, but {G} does not divide {c}.")
    if (c // G != i) if (_is_int(c) and _is_int(i)) else (G == 1 and not same_dim(c, i)):
        raise ValueError("conv_general_dilated lhs feature dimension size divided by "
                         "feature_group_count must equal the rhs input feature dimension size, "
                         f"but {describe_shapes(lav)} and {describe_shapes(rav)} have "
                         f"{dim_str(c)} // {G} != {dim_str(i)}.")
    if _is_int(o) and o % G:
        raise ValueError("conv_general_dilated rhs output feature dimension size must be a "
                         f"multiple of feature_group_count, but {o} is not a multiple of {G}.")
    if B > 1 and _is_int(n) and n % B:
        raise ValueError("conv_general_dilated batch_group_count must divide lhs batch dimension "
                         f"size, but {B} does not divide {n}.")
    if _is_int(o) and o % B:
        raise ValueError("conv_general_dilated rhs output feature dimension size must be a "
                         f"multiple of batch_group_count, but {o} is not a multiple of {B}.")
    return lav.dtype if preferred_element_type is None else np.dtype(preferred_element_type)


def _abstract(lhs, rhs, *dyn, window_strides, padding, lhs_dilation, rhs_dilation,
              dimension_numbers, feature_group_count, batch_group_count, precision,
              preferred_element_type, out_shape):
    lav, rav = aval(lhs), aval(rhs)
    dtype = _check(lav, rav, window_strides=window_strides, lhs_dilation=lhs_dilation,
                   rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
                   feature_group_count=feature_group_count, batch_group_count=batch_group_count,
                   preferred_element_type=preferred_element_type)
    dyn_pad, dyn_out = _split_dyn(padding, out_shape, dyn)
    check_dim_operands("conv_general_dilated", dyn)
    nsp = lav.ndim - 2
    if len(padding) != nsp or len(out_shape) != nsp + 2:
        raise TypeError(f"conv_general_dilated: padding needs {nsp} pairs and out_shape "
                        f"{nsp + 2} entries, got {padding} and {out_shape}")
    (n, _, *sp), (o, _, *win) = _canonical_shapes(lav, rav, dimension_numbers)
    shape = list(_fill(out_shape, dyn_out, as_dim))
    # the batch and feature sizes follow from the operands
    if batch_group_count == 1 and not same_dim(shape[0], n):
        raise TypeError(f"conv_general_dilated: out_shape batch {shape[0]} is not lhs's batch {n}")
    if not same_dim(shape[1], o):
        raise TypeError(f"conv_general_dilated: out_shape feature {shape[1]} is not rhs's {o}")
    # where everything is static, the spatial sizes are checked
    flat = [v for pair in padding for v in pair]
    if all(v is not None for v in flat):
        for k in range(nsp):
            d, w = sp[k], win[k]
            if not (_is_int(d) and _is_int(w)):
                continue
            padded = dilate_dim(d, lhs_dilation[k]) + padding[k][0] + padding[k][1]
            if padded < 0:
                raise ValueError("Negative padding is larger than the size of the corresponding "
                                 f"dimension: got padding={padding} for lhs spatial shape {tuple(sp)}")
            want = conv_out_dim(padded, dilate_dim(w, rhs_dilation[k]), window_strides[k])
            if _is_int(shape[2 + k]) and shape[2 + k] != want:
                raise TypeError(f"conv_general_dilated: out_shape {out_shape} disagrees with the "
                                f"computed spatial size {want} of dimension {k}")
    out = [None] * lav.ndim
    for pos, d in zip(dimension_numbers.out_spec, shape):
        out[pos] = d
    return result_aval(tuple(out), dtype)


def _dilate_pad(x, axes, dilation, pads):
    """``x`` with ``d - 1`` zeros between elements along each axis, then padded (negative
    amounts crop)."""
    for ax, d, (lo, hi) in zip(axes, dilation, pads):
        n = x.shape[ax]
        if d > 1 and n > 0:
            shape = list(x.shape)
            shape[ax] = (n - 1) * d + 1
            y = np.zeros(shape, x.dtype)
            idx = [slice(None)] * x.ndim
            idx[ax] = slice(None, None, d)
            y[tuple(idx)] = x
            x = y
        n = x.shape[ax]
        if lo + hi + n < 0:
            raise ValueError("Negative padding is larger than the size of the corresponding "
                             f"dimension: got padding ({lo}, {hi}) for size {n}")
        widths = [(0, 0)] * x.ndim
        widths[ax] = (max(lo, 0), max(hi, 0))
        x = np.pad(x, widths)
        idx = [slice(None)] * x.ndim
        idx[ax] = slice(max(-lo, 0), x.shape[ax] - max(-hi, 0))
        x = x[tuple(idx)]
    return x


def _impl(lhs, rhs, *dyn, window_strides, padding, lhs_dilation, rhs_dilation,
          dimension_numbers, feature_group_count, batch_group_count, precision,
          preferred_element_type, out_shape):
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    params = dict(window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
                  rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
                  feature_group_count=feature_group_count, batch_group_count=batch_group_count,
                  precision=precision, preferred_element_type=preferred_element_type)
    dtype = _check(aval(lhs), aval(rhs), window_strides=window_strides, lhs_dilation=lhs_dilation,
                   rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
                   feature_group_count=feature_group_count, batch_group_count=batch_group_count,
                   preferred_element_type=preferred_element_type)
    dyn_pad, _ = _split_dyn(padding, out_shape, dyn)
    pads = [(int(lo), int(hi)) for lo, hi in
            zip(*[iter(_fill([v for p in padding for v in p], dyn_pad, int))] * 2)]
    dn = dimension_numbers
    nsp = lhs.ndim - 2
    x = np.transpose(lhs, dn.lhs_spec).astype(dtype, copy=False)   # (N, C, spatial)
    k = np.transpose(rhs, dn.rhs_spec).astype(dtype, copy=False)   # (O, I, window)
    sp_axes = tuple(range(2, 2 + nsp))
    x = _dilate_pad(x, sp_axes, lhs_dilation, pads)
    k = _dilate_pad(k, sp_axes, rhs_dilation, [(0, 0)] * nsp)
    N, C = x.shape[:2]
    O, I = k.shape[:2]
    win = k.shape[2:]
    G, B = feature_group_count, batch_group_count
    if B > 1 and N % B:
        raise ValueError("conv_general_dilated batch_group_count must divide lhs batch dimension "
                         f"size, but {B} does not divide {N}.")
    if C != G * I or O % (G * B):
        raise ValueError(f"conv_general_dilated: lhs has {C} features and rhs {I} input and {O} "
                         f"output features, which feature_group_count={G} and "
                         f"batch_group_count={B} do not fit")
    outsp = tuple(max(p - w + s, 0) // s for p, w, s in zip(x.shape[2:], win, window_strides))
    shape = (N // B, O) + outsp
    if 0 in shape or 0 in win or C == 0 or N == 0:
        res = np.zeros(shape, dtype)
    else:
        view = np.lib.stride_tricks.sliding_window_view(x, win, axis=sp_axes)
        view = view[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in window_strides)]
        view = view[(slice(None), slice(None)) + tuple(slice(0, m) for m in outsp)]
        letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        s_out, s_win = letters[:nsp], letters[nsp:2 * nsp]
        # view: (N, C, out..., win...); groups: N -> (B, N'), C -> (G, I); O -> (G or B, O_g)
        v = view.reshape((B, N // B, G, I) + view.shape[2:])
        kk = k.reshape((G * B, O // (G * B), I) + win)
        if B > 1:   # output feature group b sees batch group b
            expr = f"bni{s_out}{s_win},boi{s_win}->nbo{s_out}"
            res = np.einsum(expr, v[:, :, 0], kk, optimize=True)
        else:       # output feature group g sees input feature group g
            expr = f"ngi{s_out}{s_win},goi{s_win}->ngo{s_out}"
            res = np.einsum(expr, v[0], kk, optimize=True)
        res = np.asarray(res, dtype).reshape(shape)
    return np.ascontiguousarray(np.transpose(res, np.argsort(dn.out_spec)))


conv_general_dilated_p = define("conv_general_dilated", _impl, _abstract)


# ----------------------------------------------------------------------------------------------
# the API
# ----------------------------------------------------------------------------------------------
def _ints(name, v, n):
    if v is None:
        return (1,) * n
    try:
        out = tuple(operator.index(s) for s in v)
    except TypeError:
        raise TypeError(f"conv_general_dilated: {name} must be a sequence of integers, got {v!r}") from None
    if len(out) != n:
        raise ValueError(f"conv_general_dilated: {name} must have {n} entries (one per spatial "
                         f"dimension), got {len(out)}")
    return out


def _precision(p):
    if p is None or isinstance(p, (str, int)):
        return p
    if isinstance(p, (tuple, list)):
        return tuple(_precision(q) for q in p)
    return str(p)


def bind_conv(lhs, rhs, *, window_strides, pads, lhs_dilation, rhs_dilation, dimension_numbers,
              feature_group_count=1, batch_group_count=1, precision=None,
              preferred_element_type=None, out_spatial=None):
    """Bind the primitive with explicit ``pads`` (ints or traced sizes); the output spatial
    sizes are computed (or given as ``out_spatial``, which callers use when they know them,
    e.g. the transpose rules that produce an operand's cotangent)."""
    lav, rav = typeof(lhs), typeof(rhs)
    dn = dimension_numbers
    (n, _, *sp), (o, _, *win) = _canonical_shapes(lav, rav, dn)
    pads = [(_size(lo), _size(hi)) for lo, hi in pads]
    if out_spatial is None:
        out_spatial = []
        for k in range(len(sp)):
            padded = _add(_add(dilate_dim(_size(sp[k]), lhs_dilation[k]), pads[k][0]), pads[k][1])
            window = dilate_dim(_size(win[k]), rhs_dilation[k])
            out_spatial.append(conv_out_dim(padded, window, window_strides[k]))
    nb = n if batch_group_count == 1 else _div_nonneg(_size(n), batch_group_count)
    out_dims = [nb, o] + [_size(d) for d in out_spatial]
    from .api import canonicalize_dim
    out_dims = [d if _is_int(d) or d is n else canonicalize_dim(d) for d in out_dims]
    static_pads = tuple((lo if _is_int(lo) else None, hi if _is_int(hi) else None) for lo, hi in pads)
    dyn_pads = [v for pair in pads for v in pair if not _is_int(v)]
    out_static = tuple(d if _is_int(d) else None for d in out_dims)
    dyn_out = [d for d in out_dims if not _is_int(d)]
    return conv_general_dilated_p.bind(
        lhs, rhs, *dyn_pads, *dyn_out, window_strides=tuple(window_strides), padding=static_pads,
        lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=dn, feature_group_count=int(feature_group_count),
        batch_group_count=int(batch_group_count), precision=_precision(precision),
        preferred_element_type=preferred_element_type, out_shape=out_static)


def _as_operand(x, name):
    if isinstance(x, Tracer):
        return x
    from ..numpy import asarray
    return asarray(x)


def _check_group_count(name, v):
    try:
        v = operator.index(v)
    except TypeError:
        raise TypeError(f"conv_general_dilated: {name} must be an integer, got {v!r}") from None
    if v < 1:
        raise ValueError(f"conv_general_dilated {name} must be a positive integer, got {v}.")
    return v


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count=1, batch_group_count=1,
                         precision=None, preferred_element_type=None):
    """General n-dimensional convolution with strides, padding, dilations and groups (XLA's
    ``Conv``); see the module docstring for the semantics. ``padding`` is ``'SAME'``,
    ``'SAME_LOWER'``, ``'VALID'`` or a sequence of ``(low, high)`` pairs (ints or traced
    sizes); ``dimension_numbers`` is ``None`` (``NCHW, OIHW, NCHW``), a string triple such
    as ``('NHWC', 'HWIO', 'NHWC')`` or a ``ConvDimensionNumbers``."""
    lhs, rhs = _as_operand(lhs, "lhs"), _as_operand(rhs, "rhs")
    lav, rav = typeof(lhs), typeof(rhs)
    dn = conv_dimension_numbers(lav.shape, rav.shape, dimension_numbers)
    if lav.ndim != rav.ndim:
        raise TypeError("convolution requires lhs and rhs ndim to be equal, got "
                        f"{lav.ndim} and {rav.ndim}.")
    _check_dnums(dn, lav.ndim)
    nsp = lav.ndim - 2
    strides = _ints("window_strides", window_strides, nsp)
    ld = _ints("lhs_dilation", lhs_dilation, nsp)
    rd = _ints("rhs_dilation", rhs_dilation, nsp)
    for name, v in (("window_strides", strides), ("lhs_dilation", ld), ("rhs_dilation", rd)):
        if any(s < 1 for s in v):
            raise ValueError(f"conv_general_dilated: {name} must be positive, got {v}")
    G = _check_group_count("feature_group_count", feature_group_count)
    B = _check_group_count("batch_group_count", batch_group_count)
    if preferred_element_type is not None:
        preferred_element_type = canonical_dtype(preferred_element_type)
    (_, _, *sp), (_, _, *win) = _canonical_shapes(lav, rav, dn)
    if isinstance(padding, str):
        if any(d != 1 for d in ld):
            raise ValueError("String padding is not implemented for transposed convolution using "
                             "this op. Please either exactly specify the required padding or use "
                             "conv_transpose.")
        windows = [dilate_dim(_size(w), r) for w, r in zip(win, rd)]
        pads = padtype_to_pads([_size(d) for d in sp], windows, strides, padding)
    else:
        try:
            pads = [(lo, hi) for lo, hi in padding]
            pads = [tuple(v if isinstance(v, Tracer) else operator.index(v) for v in p) for p in pads]
        except (TypeError, ValueError):
            raise ValueError("padding argument to conv_general_dilated should be a string or a "
                             f"sequence of (low, high) pairs, got {padding}") from None
        if len(pads) != nsp:
            raise TypeError("Wrong number of explicit pads for convolution: expected "
                            f"{nsp}, got {len(pads)}.")
    _check(lav, rav, window_strides=strides, lhs_dilation=ld, rhs_dilation=rd,
           dimension_numbers=dn, feature_group_count=G, batch_group_count=B,
           preferred_element_type=preferred_element_type)
    return bind_conv(lhs, rhs, window_strides=strides, pads=pads, lhs_dilation=ld,
                     rhs_dilation=rd, dimension_numbers=dn, feature_group_count=G,
                     batch_group_count=B, precision=precision,
                     preferred_element_type=preferred_element_type)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """``conv_general_dilated`` in the canonical layouts without dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    """``conv_general_dilated`` in the canonical layouts."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


def _transpose_pads(k: int, s: int, padding):
    """The pads of a transposed convolution with window ``k`` and stride ``s`` that undoes a
    forward convolution with ``padding`` ('SAME', 'VALID' or a pair)."""
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        lo = k - 1
    elif isinstance(padding, tuple):
        lo, hi = (k - p - 1 for p in padding)
        total = lo + hi
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return lo, total - lo


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None,
                   use_consistent_padding=False):
    """A fractionally strided convolution (JAX's ``lax.conv_transpose``): ``lhs`` is dilated
    by ``strides``. ``'SAME'`` / ``'VALID'`` (and, with ``use_consistent_padding``, pairs)
    name the padding of the forward convolution this one transposes; other pairs are the
    padding of this one. ``transpose_kernel`` flips the window and swaps the kernel's
    feature axes (TensorFlow's ``Conv2DTranspose``). The default layouts are ``NC``/``IO``,
    ``NHC``/``HIO``, ``NHWC``/``HWIO`` and ``NHWDC``/``HWDIO``."""
    lhs, rhs = _as_operand(lhs, "lhs"), _as_operand(rhs, "rhs")
    lav, rav = typeof(lhs), typeof(rhs)
    if lav.ndim != rav.ndim or lav.ndim < 2:
        raise TypeError("conv_transpose: lhs and rhs must have the same rank, at least 2, got "
                        f"{describe_shapes(lav)} and {describe_shapes(rav)}")
    nd = lav.ndim
    if dimension_numbers is None:
        defaults = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
                    5: ("NHWDC", "HWDIO", "NHWDC")}
        if nd not in defaults:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = defaults[nd]
    dn = conv_dimension_numbers(lav.shape, rav.shape, dimension_numbers)
    nsp = nd - 2
    strides = _ints("strides", strides, nsp)
    rd = _ints("rhs_dilation", rhs_dilation, nsp)
    win = [rav.shape[i] for i in dn.rhs_spec[2:]]
    if not all(_is_int(w) for w in win):
        raise TypeError("conv_transpose: the kernel's spatial dims must be static")
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        modes = [padding] * nsp if isinstance(padding, str) else [tuple(p) for p in padding]
        pads = [_transpose_pads(dilate_dim(w, r), s, m) for w, r, s, m in zip(win, rd, strides, modes)]
    else:
        pads = padding
    if transpose_kernel:
        from .api import rev, transpose
        rhs = rev(rhs, dn.rhs_spec[2:])
        perm = list(range(nd))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = perm[dn.rhs_spec[1]], perm[dn.rhs_spec[0]]
        rhs = transpose(rhs, perm)
    return conv_general_dilated(lhs, rhs, (1,) * nsp, pads, strides, rd, dn, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None,
                                 rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
    """The patches a ``conv_general_dilated`` with a window of ``filter_shape`` would
    contract: the result has ``C * prod(filter_shape)`` features, ordered ``(c, window...)``
    (channel major), in the layout of ``dimension_numbers``' output spec. Computed as a
    grouped convolution with a one-hot kernel."""
    lhs = _as_operand(lhs, "lhs")
    lav = typeof(lhs)
    nsp = lav.ndim - 2
    filter_shape = tuple(operator.index(k) for k in filter_shape)
    if len(filter_shape) != nsp:
        raise ValueError(f"conv_general_dilated_patches: filter_shape must have {nsp} entries, "
                         f"got {filter_shape}")
    dn = conv_dimension_numbers(lav.shape, (1,) * lav.ndim, dimension_numbers)
    c = lav.shape[dn.lhs_spec[1]]
    if not _is_int(c):
        raise TypeError("conv_general_dilated_patches: the feature dimension must be static")
    spatial = int(np.prod(filter_shape))
    dtype = lav.dtype if preferred_element_type is None else canonical_dtype(preferred_element_type)
    eye = np.eye(spatial, dtype=dtype).reshape((spatial, 1) + filter_shape)
    kernel = np.tile(eye, (c, 1) + (1,) * nsp)                 # (C * spatial, 1, window) canonical
    rhs = np.transpose(kernel, np.argsort(dn.rhs_spec))
    from .api import convert_element_type
    if lav.dtype != dtype:
        lhs = convert_element_type(lhs, dtype)
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dn,
                                feature_group_count=c, precision=precision,
                                preferred_element_type=None)


# ----------------------------------------------------------------------------------------------
# layout helpers of the transformation rules (transpose, vmap)
# ----------------------------------------------------------------------------------------------


def canonical_dn(ndim: int) -> ConvDimensionNumbers:
    """The dimension numbers of the canonical layouts of rank ``ndim``."""
    iota = tuple(range(ndim))
    return ConvDimensionNumbers(iota, iota, iota)


def to_canonical(x, spec):
    """``x`` with the axes listed by ``spec`` brought into that order."""
    from .api import transpose
    return x if tuple(spec) == tuple(range(len(spec))) else transpose(x, tuple(spec))


def from_canonical(x, spec):
    """The inverse of ``to_canonical``."""
    from .api import transpose
    return x if tuple(spec) == tuple(range(len(spec))) else transpose(x, tuple(int(i) for i in np.argsort(spec)))


def split_axis(x, axis: int, outer, inner=None):
    """Axis ``axis`` of ``x`` (size ``outer * inner``) as two axes ``(outer, inner)``, the
    first major; sizes are ints or traced sizes, ``inner`` computed when ``outer`` is static."""
    from .api import reshape
    shape = [_size(d) for d in typeof(x).shape]
    if inner is None:
        if not _is_int(outer):
            raise TypeError("split_axis: give the inner size with a dynamic outer size")
        inner = _div_nonneg(shape[axis], outer)
    shape[axis:axis + 1] = [_size(outer), _size(inner)]
    return reshape(x, shape)


def merge_axes(x, axis: int):
    """Axes ``axis`` and ``axis + 1`` of ``x`` as one (the first major)."""
    from .api import reshape
    shape = [_size(d) for d in typeof(x).shape]
    shape[axis:axis + 2] = [_mul(shape[axis], shape[axis + 1])]
    return reshape(x, shape)


def swap_axes(x, a: int, b: int):
    from .api import transpose
    perm = list(range(typeof(x).ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return transpose(x, perm)
