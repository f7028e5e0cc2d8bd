"""Shardy (``sdy``) annotations: how a value lies over the devices of a partitioned program.

XLA's Shardy partitioner reads shardings as named axes of a mesh: ``sdy.mesh @m =
<["a0"=2, "r"=2], device_ids=[...]>`` declares the devices (by partition position) at each
mesh coordinate, and ``#sdy.sharding<@m, [{"a0"}, {}]>`` splits dimension 0 over axis
``a0``. dynjax describes a layout as a device grid (``tiles`` pieces per dimension, then
the copies): :func:`grid_mesh` turns such a grid into a mesh of its own (one axis per split
dimension, ``r`` for the copies) and the sharding on it; meshes are module symbols named
after their content (:func:`ensure_mesh`), so equal layouts share one.
"""
from __future__ import annotations

import hashlib
from typing import List, Sequence, Tuple

import numpy as np
from jaxlib.mlir import ir


def mesh_text(axes: Sequence[Tuple[str, int]], positions: Sequence[int]) -> str:
    """``#sdy.mesh`` of ``axes`` (name, size) whose devices, in row-major coordinate order,
    are the partitions ``positions``."""
    body = "[" + ", ".join(f'"{n}"={int(s)}' for n, s in axes) + "]"
    positions = [int(p) for p in positions]
    if positions != list(range(len(positions))) and len(positions) > 1:
        body += ", device_ids=[" + ", ".join(map(str, positions)) + "]"
    return "<" + body + ">"


def mesh_name(text: str) -> str:
    return "dynjax_mesh_" + hashlib.sha1(text.encode()).hexdigest()[:12]


def grid_mesh(tiles: Sequence[int], grid: np.ndarray) -> Tuple[str, List[List[str]]]:
    """The mesh of a device grid (``grid[tile coords..., copy]`` = partition position) and
    the axes each dimension is split over."""
    grid = np.asarray(grid).reshape(tuple(int(t) for t in tiles) + (-1,))
    axes, dims = [], []
    for d, t in enumerate(tiles):
        if int(t) > 1:
            axes.append((f"a{d}", int(t)))
            dims.append([f"a{d}"])
        else:
            dims.append([])
    if grid.shape[-1] > 1 or not axes:
        axes.append(("r", int(grid.shape[-1])))
    return mesh_text(axes, grid.reshape(-1)), dims


def sharding_text(mesh: str, dims: Sequence[Sequence[str]]) -> str:
    """``#sdy.sharding`` on mesh symbol ``mesh``, dimension ``d`` split over ``dims[d]``."""
    inner = ", ".join("{" + ", ".join(f'"{a}"' for a in axes) + "}" for axes in dims)
    return f"#sdy.sharding<@{mesh}, [{inner}]>"


def ensure_mesh(module_op, text: str) -> str:
    """The name of the ``sdy.mesh`` symbol ``text`` in the module (``module_op``: its
    operation), declared at the top of its body first if absent."""
    name = mesh_name(text)
    body = module_op.regions[0].blocks[0]
    for op in body.operations:
        if op.operation.name == "sdy.mesh" and ir.StringAttr(op.operation.attributes["sym_name"]).value == name:
            return name
    first = body.operations[0] if len(body.operations) else None
    point = ir.InsertionPoint(first) if first is not None else ir.InsertionPoint(body)
    decl = ir.Operation.parse(f"sdy.mesh @{name} = {text}")
    point.insert(decl)
    return name
