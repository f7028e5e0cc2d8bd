"""Turn gathers of one window at constant start indices into ``stablehlo.slice``.

A slice over a dynamic axis (``x[1:]`` with ``x`` of run-time length) lowers to
``stablehlo.real_dynamic_slice`` / ``dynamic_gather``; once shape refinement has made the sizes
static, what is left is a ``stablehlo.gather`` of a single window whose start indices are a
constant. XLA compiles it as a gather (slower to compile and to run than a slice: it is what
made dynjax's modules compile slower than jax's for programs with such slices). A gather that
reads one whole window — every result axis an offset axis, no collapsed or batching axes, one
start index per operand axis — is a slice: :func:`constant_gathers_to_slices` replaces it,
clamping the start indices the way gather does (so the window lies inside the operand).
Called by :func:`mlir_passes.specialize.specialize` after refinement.
"""
from __future__ import annotations

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo


def _gathers(op, out):
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                o = inner.operation
                if o.name == "stablehlo.gather":
                    out.append(o)
                _gathers(o, out)
    return out


def _constant_starts(value: ir.Value):
    """The int values of a constant rank-1 start-index operand, or None."""
    owner = value.owner
    if not isinstance(owner, ir.Operation) and hasattr(owner, "operation"):
        owner = owner.operation
    if not isinstance(owner, ir.Operation) or owner.name != "stablehlo.constant":
        return None
    try:
        dense = ir.DenseIntElementsAttr(owner.attributes["value"])
    except (ValueError, TypeError):
        return None
    t = ir.RankedTensorType(value.type)
    if t.rank != 1:
        return None
    if dense.is_splat:
        return [int(dense.get_splat_value().value)] * t.shape[0]
    return [int(v) for v in dense]


def _as_slice(gather: ir.Operation):
    """``(starts, limits)`` when ``gather`` reads one window at constant starts, else None."""
    operand, indices = gather.operands[0], gather.operands[1]
    ot = ir.RankedTensorType(operand.type)
    rt = ir.RankedTensorType(gather.results[0].type)
    if not (ot.has_static_shape and rt.has_static_shape) or rt.rank != ot.rank:
        return None
    dn = stablehlo.GatherDimensionNumbers(gather.attributes["dimension_numbers"])
    every = list(range(ot.rank))
    if (list(dn.offset_dims) != every or list(dn.collapsed_slice_dims) or list(dn.operand_batching_dims)
            or list(dn.start_indices_batching_dims) or list(dn.start_index_map) != every
            or dn.index_vector_dim != 0):
        return None
    sizes = list(ir.DenseI64ArrayAttr(gather.attributes["slice_sizes"]))
    if sizes != list(rt.shape):
        return None
    starts = _constant_starts(indices)
    if starts is None or len(starts) != ot.rank:
        return None
    # gather clamps each start so that the window lies inside the operand
    starts = [min(max(s, 0), d - z) for s, d, z in zip(starts, ot.shape, sizes)]
    return starts, [s + z for s, z in zip(starts, sizes)]


def constant_gathers_to_slices(module: ir.Module) -> int:
    """Rewrite every single-window, constant-start ``stablehlo.gather`` of ``module`` as a
    ``stablehlo.slice``; returns how many were rewritten. Needs ``module``'s context active."""
    count = 0
    for gather in _gathers(module.operation, []):
        plan = _as_slice(gather)
        if plan is None:
            continue
        starts, limits = plan
        with ir.InsertionPoint(gather), gather.location:
            new = stablehlo.SliceOp(gather.operands[0], starts, limits, [1] * len(starts)).result
        gather.results[0].replace_all_uses_with(new)
        indices = gather.operands[1].owner
        gather.erase()
        if not list(indices.results[0].uses):   # the start indices' constant, now unused
            indices.erase()
        count += 1
    return count
