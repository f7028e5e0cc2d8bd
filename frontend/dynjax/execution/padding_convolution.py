"""The padding rule of convolutions (``execution/padding.py``'s interpretation, continued):
``conv_general_dilated`` and so its transposes, the gradients by the input and the kernel."""
from __future__ import annotations

from ..lax import convolution as _convolution
from .padding import NotPaddable, _resize_axis, lax_shape, padding_rules


def _conv(ctx, eqn, lhs, rhs, *dyn):
    """A convolution on operands whose padding (along every dynamic axis) is zero: a zero
    contributes nothing to a window, and past a logical length it is what the convolution's
    own padding would read, so every output inside the logical lengths is exact. A high pad
    that depends on a size (transposes, strided ``SAME``) only lengthens the output: the
    padded program pads so that each spatial output has its bound's length. A low pad that
    depends on a size (it would shift the windows), and groups that split a dynamic axis
    (the padding would move the group boundaries), stay unpadded."""
    p = eqn.params
    if any(lo is None for lo, _ in p["padding"]):
        raise NotPaddable("conv_general_dilated with a low padding that depends on a dynamic size")
    a, b = eqn.invars[0].aval, eqn.invars[1].aval
    dn = p["dimension_numbers"]
    groups = p["feature_group_count"] * p["batch_group_count"]
    if ((p["batch_group_count"] > 1 and ctx.is_dynamic(a.shape[dn.lhs_spec[0]]))
            or (p["feature_group_count"] > 1 and ctx.is_dynamic(a.shape[dn.lhs_spec[1]]))
            or (groups > 1 and ctx.is_dynamic(b.shape[dn.rhs_spec[0]]))):
        raise NotPaddable("conv_general_dilated whose feature or batch groups split a dynamic axis")
    lhs = ctx.fill(lhs, eqn.invars[0], range(a.ndim), 0)
    rhs = ctx.fill(rhs, eqn.invars[1], range(b.ndim), 0)
    want = ctx.padded_shape(eqn.outvars[0].aval)
    lhs_shape, rhs_shape = lax_shape(lhs), lax_shape(rhs)
    pads = []
    for k, (lo, hi) in enumerate(p["padding"]):
        if hi is None:   # the high pad that gives this spatial output its bound's length
            n = _dilated(lhs_shape[dn.lhs_spec[2 + k]], p["lhs_dilation"][k])
            w = _dilated(rhs_shape[dn.rhs_spec[2 + k]], p["rhs_dilation"][k])
            hi = (max(want[dn.out_spec[2 + k]], 1) - 1) * p["window_strides"][k] + w - n - lo
        pads.append((lo, hi))
    out = _convolution.bind_conv(
        lhs, rhs, window_strides=p["window_strides"], pads=pads,
        lhs_dilation=p["lhs_dilation"], rhs_dilation=p["rhs_dilation"], dimension_numbers=dn,
        feature_group_count=p["feature_group_count"], batch_group_count=p["batch_group_count"],
        precision=p["precision"], preferred_element_type=p["preferred_element_type"])
    # an output axis at least as long as its bound holds every logical length: cut it to the
    # bound; a shorter one could miss outputs (a dynamic window longer than its logical size)
    for axis, length in enumerate(want):
        if lax_shape(out)[axis] < length:
            raise NotPaddable("conv_general_dilated whose padded output is shorter than its bound")
        out = _resize_axis(out, axis, length)
    return out


def _dilated(n: int, d: int) -> int:
    return 0 if n == 0 else (n - 1) * d + 1


padding_rules[_convolution.conv_general_dilated_p] = _conv
