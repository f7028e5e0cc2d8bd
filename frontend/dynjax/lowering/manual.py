"""What a per-device (manually partitioned) program knows about its devices.

A program partitioned over several devices (a sharded ``qjit``) is lowered inside
``partitioned_over(device_ids)``: partition ``k`` of the program runs on ``device_ids[k]``.
A ``shard_map`` over a mesh of exactly those devices then lowers its body as the per-device
program, with a :class:`ManualMesh` on the lowering context (``ctx.manual``): the position
(partition id) of every mesh device, from which the collectives of the body take their
``replica_groups`` (one group per line of devices along the named axis, in axis order; for
a tuple of axis names, one group per set of devices differing only in those coordinates,
ordered first name major),
``source_target_pairs`` and their ``axis_index`` (a table indexed by ``partition_id``).
Outside a ``shard_map`` region ``ctx.manual`` is None and a collective cannot be lowered.
"""
from __future__ import annotations

import contextlib
import threading
from typing import List, Optional, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo


class _Program(threading.local):
    def __init__(self):
        self.devices: Optional[List[int]] = None
        self.channel = 0
        self.bodies = 0


_program = _Program()


@contextlib.contextmanager
def partitioned_over(device_ids: Sequence[int]):
    """Lower the programs of the block as partitioned over ``device_ids`` (in partition order)."""
    saved = (_program.devices, _program.channel, _program.bodies)
    _program.devices, _program.channel, _program.bodies = [int(d) for d in device_ids], 0, 0
    try:
        yield
    finally:
        _program.devices, _program.channel, _program.bodies = saved


def program_devices() -> Optional[List[int]]:
    """The device ids of the partitioned program being lowered (None: one device)."""
    return _program.devices


class ManualMesh:
    """A mesh seen from a per-device program: ``positions`` holds the partition id of the
    device at each mesh coordinate."""

    def __init__(self, axis_names: Sequence[str], device_ids: np.ndarray, program: Sequence[int]):
        at = {int(d): k for k, d in enumerate(program)}
        self.axis_names = tuple(axis_names)
        self.positions = np.vectorize(lambda d: at[int(d)], otypes=[np.int64])(device_ids)

    # ``name`` below is one mesh axis name or a tuple of them: the devices that differ only
    # in those coordinates, ordered by them, the first name major (JAX's order of a tuple)
    def binds(self, name) -> bool:
        """Whether every axis of ``name`` is an axis of this mesh."""
        return all(n in self.axis_names for n in self._tuple(name))

    def size(self, name) -> int:
        return int(np.prod([self.positions.shape[a] for a in self._axes(name)]))

    @staticmethod
    def _tuple(name):
        return name if isinstance(name, tuple) else (name,)

    def _axes(self, name) -> list:
        try:
            return [self.axis_names.index(n) for n in self._tuple(name)]
        except ValueError:
            raise KeyError(name) from None

    def groups(self, name) -> np.ndarray:
        """The partition ids of each group of devices along the axes ``name`` (one row per
        group, in the order of the members' linear index along them)."""
        axes = self._axes(name)
        moved = np.moveaxis(self.positions, axes, list(range(-len(axes), 0)))
        return moved.reshape(-1, self.size(name))

    def coordinates(self, name) -> np.ndarray:
        """``table[p]``: the linear index along the axes ``name`` of the device of partition ``p``."""
        axes = self._axes(name)
        table = np.zeros(self.positions.size, np.int32)
        for coord in np.ndindex(*self.positions.shape):
            table[self.positions[coord]] = np.ravel_multi_index([coord[a] for a in axes],
                                                                [self.positions.shape[a] for a in axes])
        return table

    # -- attributes of the collectives ---------------------------------------------------------
    def replica_groups(self, name) -> ir.DenseIntElementsAttr:
        return ir.DenseIntElementsAttr.get(np.ascontiguousarray(self.groups(name), np.int64))

    def pairs(self, name, perm) -> ir.DenseIntElementsAttr:
        """``source_target_pairs`` of a permutation ``perm`` (pairs of coordinates along
        ``name``), applied on every line of devices along it."""
        rows = [(int(line[s]), int(line[d])) for line in self.groups(name) for s, d in perm]
        return ir.DenseIntElementsAttr.get(np.asarray(rows, np.int64).reshape(len(rows), 2))

    @staticmethod
    def body_name() -> str:
        """A new name for the function of a shard_map's body (unique in the module)."""
        _program.bodies += 1
        return f"shmap_body_{_program.bodies}"

    @staticmethod
    def channel() -> ir.Attribute:
        """A new device-to-device channel (ids unique in the module, from 1)."""
        _program.channel += 1
        return hlo.ChannelHandle.get(_program.channel, 1)
