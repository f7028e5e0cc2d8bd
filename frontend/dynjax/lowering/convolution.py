"""Lowering of ``conv_general_dilated`` (``dynjax.lax.convolution``) to StableHLO.

With static pad amounts the primitive is one ``stablehlo.convolution`` whose result type has
``?`` for its dynamic dims; specialization (jaxlib's ``refine_polymorphic_shapes``) infers
them from the refined operands. Pad amounts that depend on a dynamic size (``'SAME'`` with
a stride > 1, the transposes of a convolution on a dynamic axis) go to a
``stablehlo.dynamic_conv`` whose padding is a ``tensor<Sx2xi64>`` operand; refinement folds
it into a ``stablehlo.convolution`` once the sizes are constants.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from ..lax import convolution as _C
from .context import tensor_type
from .core import register_lowering

_I64 = np.dtype(np.int64)


def _dimension_numbers(dn) -> ir.Attribute:
    lhs, rhs, out = dn
    return hlo.ConvDimensionNumbers.get(
        input_batch_dimension=lhs[0], input_feature_dimension=lhs[1],
        input_spatial_dimensions=list(lhs[2:]),
        kernel_output_feature_dimension=rhs[0], kernel_input_feature_dimension=rhs[1],
        kernel_spatial_dimensions=list(rhs[2:]),
        output_batch_dimension=out[0], output_feature_dimension=out[1],
        output_spatial_dimensions=list(out[2:]))


@register_lowering(_C.conv_general_dilated_p)
def _conv_general_dilated(ctx, eqn, lhs, rhs, *dyn, window_strides, padding, lhs_dilation,
                          rhs_dilation, dimension_numbers, feature_group_count, batch_group_count,
                          precision, preferred_element_type, out_shape):
    out = eqn.outvars[0].aval
    npad = sum(v is None for pair in padding for v in pair)
    pad_atoms = iter(eqn.invars[2:2 + npad])
    flat = [v if v is not None else next(pad_atoms) for pair in padding for v in pair]
    lhs = ctx.convert(lhs, out.dtype)
    rhs = ctx.convert(rhs, out.dtype)
    result_type = tensor_type(out.shape, out.dtype)
    common = dict(window_strides=list(window_strides), lhs_dilation=list(lhs_dilation),
                  rhs_dilation=list(rhs_dilation))
    dn = _dimension_numbers(dimension_numbers)
    if npad == 0:
        pads = ir.DenseIntElementsAttr.get(np.asarray(flat, dtype=np.int64).reshape(-1, 2))
        return hlo.ConvolutionOp(result_type, lhs, rhs, dn, feature_group_count, batch_group_count,
                                 padding=pads, **common).result
    pads = ctx.shape_tensor(flat)
    pads = hlo.ReshapeOp(tensor_type((len(padding), 2), _I64), pads).result
    return hlo.DynamicConvOp(result_type, lhs, rhs, pads, dn, feature_group_count, batch_group_count,
                             **common).result
