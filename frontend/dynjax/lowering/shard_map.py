"""Lowering of ``shard_map`` (``parallel/shard_map_rules.py`` registers it).

In a program partitioned over exactly the mesh's devices (``lowering.manual.partitioned_over``)
and with static shapes, the per-device body is lowered in a manual-sharding region, as XLA's
SPMD partitioner expects it: each operand is annotated with its sharding
(``custom_call @Sharding``) and cut to the device's block (``@SPMDFullToShardShape``, sharding
``{manual}``); the body runs on blocks, its collectives lowered to StableHLO collectives
(``lowering/collectives.py``); each result is marked ``{manual}`` and put back together
(``@SPMDShardToFullShape``, with the result's sharding). Everywhere else (one device, sizes
still dynamic, a mesh over other devices, a shard_map inside another's body, a mesh axis
not mapped) the whole-array program is lowered in place: the same values.
"""
from __future__ import annotations

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func
from jaxlib.mlir.dialects import stablehlo as hlo

from .manual import ManualMesh, program_devices


def _annotated(ctx, target, x, result_type, sharding):
    op = hlo.CustomCallOp([result_type], [x], target, has_side_effect=False)
    op.attributes["mhlo.sharding"] = ir.StringAttr.get(sharding)
    return op.results[0]


def _call_body(ctx, body, blocks, manual):
    """Lower ``body`` as a private function of the module, called on ``blocks``: its
    operations stay apart from the rest of the program (XLA would otherwise merge, say, an
    iota of the body with an equal one outside it, mixing manual and automatic shardings)."""
    in_types = [b.type for b in blocks]
    out_types = [ctx.ir_type(v.aval) for v in body.outvars]
    name = manual.body_name()
    with ir.InsertionPoint(ctx.module.body):
        fn = func.FuncOp(name, ir.FunctionType.get(in_types, out_types))
        fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
        entry = fn.add_entry_block()
    with ir.InsertionPoint(entry):
        inner = ctx.nested()
        inner.manual = manual
        outs = inner.lower_jaxpr(body, list(entry.arguments))
        func.ReturnOp([inner.cast(o, t) for o, t in zip(outs, out_types)])
    _mark_manual(list(entry.operations))
    call = func.CallOp(out_types, ir.FlatSymbolRefAttr.get(name), blocks)
    _mark_manual([call])
    return list(call.results)


def _mark_manual(ops) -> None:
    """Give every operation of the body the ``{manual}`` sharding: the partitioner leaves them
    as they are (without it, a value the body makes from nothing, an iota or a constant,
    would be given a sharding of its own, which XLA cannot mix with manual ones)."""
    for op in ops:
        n = len(op.results)
        if n == 0:
            continue
        text = "{manual}" if n == 1 else "{" + ", ".join(["{manual}"] * n) + "}"
        op.attributes["mhlo.sharding"] = ir.StringAttr.get(text)


def _per_device(eqn, mesh, mapped):
    """The program's device ids when this shard_map can be lowered as a per-device program."""
    devices = program_devices()
    if devices is None or tuple(mapped) != tuple(mesh.axis_names):
        return None
    if sorted(int(d) for d in mesh.device_ids.reshape(-1)) != sorted(devices):
        return None
    avals = [a.aval for a in eqn.invars] + [v.aval for v in eqn.outvars]
    if not all(isinstance(d, int) for a in avals for d in a.shape):
        return None
    return devices


def lower_shard_map(ctx, eqn, *args, jaxpr, body, body_inputs, in_specs, out_specs, mesh, mapped):
    devices = _per_device(eqn, mesh, mapped) if ctx.manual is None else None
    if devices is None:
        return ctx.lower_jaxpr(jaxpr, list(args))
    from ..parallel.sharding import NamedSharding
    blocks = []
    for i, spec, v in zip(body_inputs, in_specs, body.invars):
        aval = eqn.invars[i].aval
        whole = NamedSharding(mesh, spec).layout(len(aval.shape)).hlo(devices)
        x = _annotated(ctx, "Sharding", args[i], ctx.ir_type(aval), whole)
        blocks.append(_annotated(ctx, "SPMDFullToShardShape", x, ctx.ir_type(v.aval), "{manual}"))
    outs = _call_body(ctx, body, blocks, ManualMesh(mesh.axis_names, mesh.device_ids, devices))
    results = []
    for o, spec, v, w in zip(outs, out_specs, body.outvars, eqn.outvars):
        o = _annotated(ctx, "Sharding", o, ctx.ir_type(v.aval), "{manual}")
        whole = NamedSharding(mesh, spec).layout(len(w.aval.shape)).hlo(devices)
        results.append(_annotated(ctx, "SPMDShardToFullShape", o, ctx.ir_type(w.aval), whole))
    return results
