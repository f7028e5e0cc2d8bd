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
from jaxlib.mlir.dialects import stablehlo as hlo

from .manual import ManualMesh, program_devices


def _annotated(ctx, target, x, result_type, sharding):
    op = hlo.CustomCallOp([result_type], [x], target, has_side_effect=False)
    op.attributes["mhlo.sharding"] = ir.StringAttr.get(sharding)
    return op.results[0]


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
    inner = ctx.nested()
    inner.manual = ManualMesh(mesh.axis_names, mesh.device_ids, devices)
    outs = inner.lower_jaxpr(body, blocks)
    results = []
    for o, spec, v, w in zip(outs, out_specs, body.outvars, eqn.outvars):
        o = _annotated(ctx, "Sharding", o, ctx.ir_type(v.aval), "{manual}")
        whole = NamedSharding(mesh, spec).layout(len(w.aval.shape)).hlo(devices)
        results.append(_annotated(ctx, "SPMDShardToFullShape", o, ctx.ir_type(w.aval), whole))
    return results
