"""Turn the placeholder ``stablehlo.custom_call @dynjax_fft`` into ``stablehlo.fft``.

``stablehlo.fft`` takes its lengths as a static attribute, so dynjax lowers an FFT over a
dynamic axis to a custom call whose result shape is a shape operand
(``dynjax/lowering/fft.py``). Shape refinement makes its operand and result types static;
:func:`static_ffts` then replaces each such call with ``stablehlo.fft`` whose ``fft_length``
is read from those types (the trailing ``fft_rank`` axes of the operand, the last one taken
from the result for ``IRFFT``), or with a zero tensor when an axis is empty (XLA's FFT takes no
length 0). Called by :func:`mlir_passes.specialize.specialize` after refinement.
"""
from __future__ import annotations

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

TARGET = "dynjax_fft"
_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")


def _collect(op, out):
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                o = inner.operation
                if o.name == "stablehlo.custom_call" and \
                        ir.StringAttr(o.attributes["call_target_name"]).value == TARGET:
                    out.append(o)
                _collect(o, out)
    return out


def _zeros(t: ir.RankedTensorType) -> ir.Value:
    et = str(t.element_type)
    complex_ = et.startswith("complex<")
    part = ir.F32Type.get() if et in ("f32", "complex<f32>") else ir.F64Type.get()
    scalar = ir.RankedTensorType.get([], part)
    c = stablehlo.ConstantOp(ir.DenseElementsAttr.get_splat(scalar, ir.FloatAttr.get(part, 0.0))).result
    if complex_:
        c = stablehlo.ComplexOp(c, c).result
    return stablehlo.BroadcastInDimOp(t, c, []).result


def static_ffts(module: ir.Module) -> int:
    """Rewrite every ``@dynjax_fft`` call of ``module`` (whose types must be static by now);
    returns how many were rewritten. Needs ``module``'s context to be active."""
    calls = _collect(module.operation, [])
    for call in calls:
        x = call.operands[0]
        xt = ir.RankedTensorType(x.type)
        rt = ir.RankedTensorType(call.results[0].type)
        if not (xt.has_static_shape and rt.has_static_shape):
            raise ValueError(f"{TARGET}: the FFT's shapes stayed dynamic: {xt} -> {rt}")
        config = ir.DictAttr(call.attributes["backend_config"])
        kind = _TYPES[ir.IntegerAttr(config["fft_type"]).value]
        rank = ir.IntegerAttr(config["fft_rank"]).value
        lengths = list(xt.shape[xt.rank - rank:])
        if kind == "IRFFT":
            lengths[-1] = rt.shape[-1]
        with ir.InsertionPoint(call):
            if 0 in xt.shape or 0 in rt.shape:
                new = _zeros(rt)
            else:
                new = stablehlo.FftOp(x, stablehlo.FftTypeAttr.get(kind), lengths, results=[rt]).result
        call.results[0].replace_all_uses_with(new)
        call.erase()
    return len(calls)
