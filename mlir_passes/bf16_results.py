"""``@main``'s bfloat16 results returned as their 16-bit patterns.

jaxlib brings a bfloat16 result to the host through a call that tries to import jax (numpy's
buffer protocol has no bfloat16): a failed import at every call where jax is not installed
(79 µs against 7.8 µs for a float32 result), and jax's whole import (0.4 s) at the first such
call where it is. ``results_as_bits`` rewrites a static module so that each bfloat16 result is
``stablehlo.bitcast_convert`` to ``i16`` just before ``@main`` returns it; the runtime reads
those bits as an int16 array and views them as bfloat16 (``dynjax.runtime.xla``).
"""
from __future__ import annotations

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from .specialize import _isa, parsed_main

__all__ = ["results_as_bits"]


def results_as_bits(module) -> tuple[str, tuple[int, ...]]:
    """The text of ``module`` (text or bytecode, a static ``@main``) with each bfloat16 result
    of ``@main`` bitcast to ``i16``, and the positions of those results (empty, and the module
    unchanged, when it has none)."""
    with parsed_main(module) as (_, m, main, ftype):
        bf16 = ir.BF16Type.get()
        i16 = ir.IntegerType.get_signless(16)
        results = list(ftype.results)
        at = tuple(k for k, t in enumerate(results)
                   if _isa(ir.RankedTensorType, t) and ir.RankedTensorType(t).element_type == bf16)
        if not at:
            return (module if isinstance(module, str) else str(m)), ()
        block = main.regions[0].blocks[0]
        ret = list(block.operations)[-1]
        with ir.InsertionPoint(ret):
            for k in at:
                t = ir.RankedTensorType(results[k])
                bits = ir.RankedTensorType.get(t.shape, i16)
                ret.operands[k] = stablehlo.bitcast_convert(bits, ret.operands[k])
                results[k] = bits
        main.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(list(ftype.inputs), results))
        return str(m), at
