"""Lowering of the ``fft`` primitive (``dynjax.lax.fft``) to ``stablehlo.fft``.

``stablehlo.fft`` takes its ``fft_length`` as a static attribute, so:

* **static lengths** lower to the op itself::

      %0 = stablehlo.fft %x, type = FFT, length = [8] : (tensor<?x8xcomplex<f64>>) -> ...

* **dynamic lengths** lower to a placeholder ``stablehlo.custom_call @dynjax_fft`` whose result
  shape is a shape operand (``indices_of_shape_operands``, as the LAPACK calls of
  ``lowering/linalg.py``) and whose ``backend_config`` holds ``fft_type`` and ``fft_rank``.
  Specialization (``mlir_passes/specialize.py``) refines it to static types and then
  ``mlir_passes.fft.static_ffts`` replaces it with ``stablehlo.fft`` of the now known lengths.

A transform over an empty axis (or an empty batch) is a zero result (XLA's FFT does not take
a length of 0): lowered as a splat when static, and by ``static_ffts`` at specialization.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from ..lax.fft import FftType, fft_p
from .context import is_static
from .core import register_lowering

#: the call target of the placeholder on dynamic lengths (rewritten by mlir_passes.fft)
DYNAMIC_FFT_TARGET = "dynjax_fft"


def _i32(v: int) -> ir.Attribute:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(v))


@register_lowering(fft_p)
def _fft_lowering(ctx, eqn, x, *sizes, fft_type, fft_lengths):
    a, out = eqn.invars[0].aval, eqn.outvars[0].aval
    t = FftType(int(fft_type))
    k = len(fft_lengths)
    if is_static(a.shape) and is_static(out.shape):
        if 0 in a.shape or 0 in out.shape:
            return ctx.full(0, out.dtype, out.shape)
        lengths = list(a.shape[a.ndim - k:])
        if t == FftType.IRFFT:
            lengths[-1] = out.shape[-1]
        return hlo.FftOp(x, hlo.FftTypeAttr.get(t.name), [int(d) for d in lengths],
                         results=[ctx.ir_type(out)]).result
    config = ir.DictAttr.get({"fft_type": _i32(int(t)), "fft_rank": _i32(k)})
    op = hlo.CustomCallOp([ctx.ir_type(out)], [x, ctx.shape_tensor(list(out.shape))], DYNAMIC_FFT_TARGET,
                          has_side_effect=False, backend_config=config, api_version=_i32(4))
    op.operation.attributes["indices_of_shape_operands"] = ir.DenseIntElementsAttr.get(
        np.array([1], dtype=np.int64))
    return op.result
