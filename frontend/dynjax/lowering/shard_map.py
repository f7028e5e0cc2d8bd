"""Lowering of ``shard_map`` (``parallel/shard_map_rules.py`` registers it).

In a program partitioned over exactly the mesh's devices (``lowering.manual.partitioned_over``)
and with static shapes, the per-device body is lowered in a Shardy manual computation
(``sdy.manual_computation`` over every mesh axis, on the mesh as an ``sdy.mesh`` of the
module): its operands enter split as their specs say, the body runs on blocks (a private
function of the module, called in the region), its collectives lowered to StableHLO
collectives (``lowering/collectives.py``), and the results leave put back together as their
specs say. Everywhere else (one device, sizes still dynamic, a mesh over other devices, a
shard_map inside another's body, a mesh axis not mapped) the whole-array program is lowered
in place: the same values.
"""
from __future__ import annotations

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func

from mlir_passes.sdy import ensure_mesh, mesh_text

from .manual import ManualMesh, program_devices


def _sdy_mesh(ctx, mesh, manual) -> str:
    """The ``sdy.mesh`` symbol of ``mesh`` (its devices by partition position)."""
    axes = [(n, mesh.shape[n]) for n in mesh.axis_names]
    return ensure_mesh(ctx.module.operation, mesh_text(axes, manual.positions.reshape(-1)))


def _per_value(name, specs, ranks) -> ir.Attribute:
    """``#sdy.sharding_per_value`` of values split as ``specs`` on mesh symbol ``name``."""
    rows = []
    for spec, rank in zip(specs, ranks):
        dims = ", ".join("{" + ", ".join(f'"{a}"' for a in (spec._names(d) if d < len(spec) else ())) + "}"
                         for d in range(rank))
        rows.append(f"<@{name}, [{dims}]>")
    return ir.Attribute.parse("#sdy.sharding_per_value<[" + ", ".join(rows) + "]>")


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
    call = func.CallOp(out_types, ir.FlatSymbolRefAttr.get(name), blocks)
    return list(call.results)


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
    manual = ManualMesh(mesh.axis_names, mesh.device_ids, devices)
    name = _sdy_mesh(ctx, mesh, manual)
    operands = [args[i] for i in body_inputs]
    axes = ", ".join(f'"{n}"' for n in mesh.axis_names)
    op = ir.Operation.create(
        "sdy.manual_computation", results=[ctx.ir_type(w.aval) for w in eqn.outvars], operands=operands,
        attributes={"in_shardings": _per_value(name, in_specs, [len(eqn.invars[i].aval.shape) for i in body_inputs]),
                    "out_shardings": _per_value(name, out_specs, [len(w.aval.shape) for w in eqn.outvars]),
                    "manual_axes": ir.Attribute.parse(f"#sdy<manual_axes{{{axes}}}>")},
        regions=1)
    region = op.regions[0].blocks.append(*[ctx.ir_type(v.aval) for v in body.invars])
    with ir.InsertionPoint(region):
        outs = _call_body(ctx, body, list(region.arguments), manual)
        ir.Operation.create("sdy.return", operands=outs)
    return list(op.results)
