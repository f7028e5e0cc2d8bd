"""Sharding annotations on a static module, for XLA's SPMD partitioner (Shardy).

A program compiled for several devices says how each argument and result of ``@main`` is
laid out over them with an ``sdy.sharding`` attribute on a mesh of the module
(``mlir_passes/sdy.py``: a layout's device grid is a mesh of its own, e.g. dimension 0
split in four: ``<["a0"=4]>`` and ``[{"a0"}, {}]``), and the module says how many
partitions it runs on (``mhlo.num_partitions``). XLA's partitioner then rewrites the module
into the per-device program, inserting the collectives the layouts require.
:func:`annotate_shardings` adds those attributes to a module that the lowering produced.
"""
from __future__ import annotations

from typing import Optional, Sequence

from jaxlib.mlir import ir

from .sdy import ensure_mesh, grid_mesh, sharding_text
from .specialize import _find_main, _lock, _parse, _spec_context


def _with_sharding(module_op, attrs: Optional[ir.ArrayAttr], k: int, layout):
    """The dictionary attribute of argument/result ``k`` with ``sdy.sharding`` set from
    ``layout`` (``(tiles, grid of partition positions)``)."""
    entries = {}
    if attrs is not None:
        for named in ir.DictAttr(attrs[k]):
            entries[named.name] = named.attr
    if layout is not None:
        text, dims = grid_mesh(*layout)
        entries["sdy.sharding"] = ir.Attribute.parse(sharding_text(ensure_mesh(module_op, text), dims))
    return ir.DictAttr.get(entries)


def annotate_shardings(module, in_shardings: Sequence[Optional[tuple]], out_shardings: Sequence[Optional[tuple]],
                       num_partitions: int) -> str:
    """``module`` (text or bytecode, fully static) with ``sdy.sharding`` on the arguments
    and results of ``@main`` whose layout is given (``(tiles, grid of partition
    positions)``; None: left to the partitioner's propagation) and ``mhlo.num_partitions``
    on the module; returns MLIR text."""
    with _lock:
        ctx = _spec_context()
        with ctx, ir.Location.unknown(ctx):
            m = _parse(module, ctx)
            main = _find_main(m)
            ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
            if len(in_shardings) != len(ftype.inputs) or len(out_shardings) != len(ftype.results):
                raise ValueError(f"annotate_shardings: @main has {len(ftype.inputs)} arguments and "
                                 f"{len(ftype.results)} results, got {len(in_shardings)} and "
                                 f"{len(out_shardings)} shardings")
            for key, shardings in (("arg_attrs", in_shardings), ("res_attrs", out_shardings)):
                old = ir.ArrayAttr(main.attributes[key]) if key in main.attributes else None
                main.attributes[key] = ir.ArrayAttr.get(
                    [_with_sharding(m.operation, old, k, s) for k, s in enumerate(shardings)])
            i32 = ir.IntegerType.get_signless(32)
            m.operation.attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(i32, int(num_partitions))
            m.operation.attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(i32, 1)
            return str(m)
