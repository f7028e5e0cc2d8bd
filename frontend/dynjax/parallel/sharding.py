"""Meshes, partition specs and shardings: how an array is laid out over devices.

JAX's vocabulary (``jax.sharding``): a :class:`Mesh` arranges devices in an n-dimensional grid
with named axes; a :class:`PartitionSpec` says, per dimension of an array, which mesh axes
split it (``P("data", None)``: rows split over the ``data`` axis, columns whole); a
:class:`NamedSharding` pairs the two; a :class:`SingleDeviceSharding` keeps an array whole on
one device. Mesh axes that a spec does not name replicate the array.

A sharding's :meth:`~NamedSharding.layout` is the plain description the runtime compiles
with (``runtime.sharded.Layout``): pieces per dimension and the grid of device ids.
"""
from __future__ import annotations

import collections
import math
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from ..runtime import sharded as _sharded


def _device_id(d) -> int:
    return int(getattr(d, "id", d))


class PartitionSpec(tuple):
    """Per array dimension: ``None`` (not split), a mesh axis name, or a tuple of names
    (split over their product, the first name major). Trailing dimensions not given are not
    split."""

    #: a dimension the compiler may lay out as it likes (``with_sharding_constraint``)
    UNCONSTRAINED = "__unconstrained__"

    def __new__(cls, *partitions):
        for p in partitions:
            names = p if isinstance(p, tuple) else (p,)
            for name in names:
                if name is not None and not isinstance(name, str):
                    raise TypeError(f"PartitionSpec: an entry must be None, a mesh axis name or a "
                                    f"tuple of names, got {p!r}")
        return super().__new__(cls, partitions)

    def __repr__(self):
        return "PartitionSpec(" + ", ".join(repr(p) for p in self) + ")"

    def _names(self, dim: int) -> Tuple[str, ...]:
        if dim >= len(self) or self[dim] is None or self[dim] == self.UNCONSTRAINED:
            return ()
        p = self[dim]
        return p if isinstance(p, tuple) else (p,)


P = PartitionSpec


class Mesh:
    """Devices in a grid with named axes: ``Mesh(np.array(devices).reshape(2, 2), ("x", "y"))``.

    ``shape`` maps each axis name to its size; ``size`` is the number of devices. Used as a
    context manager (``with mesh:``), it is the mesh that ``shard_map`` and bare
    ``PartitionSpec`` shardings refer to."""

    def __init__(self, devices, axis_names, *, axis_types=None):
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        axis_names = tuple(axis_names)
        arr = np.array(devices, dtype=object)
        if arr.ndim != len(axis_names):
            raise ValueError(f"Mesh: devices of rank {arr.ndim} need {arr.ndim} axis names, got "
                             f"{len(axis_names)}: {axis_names}")
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"Mesh: axis names must be distinct, got {axis_names}")
        ids = [_device_id(d) for d in arr.reshape(-1)]
        if len(set(ids)) != len(ids):
            raise ValueError("Mesh: a device appears more than once")
        self.devices = arr
        self.axis_names = axis_names
        self.axis_types = axis_types

    @property
    def shape(self) -> "collections.OrderedDict[str, int]":
        return collections.OrderedDict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> Tuple[int, ...]:
        return tuple(self.devices.shape)

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(_device_id, otypes=[np.int64])(self.devices) if self.size else \
            np.zeros(self.devices.shape, np.int64)

    @property
    def empty(self) -> bool:
        return self.size == 0

    def __enter__(self):
        _MESHES.append(self)
        return self

    def __exit__(self, *exc):
        _MESHES.pop()
        return False

    def __eq__(self, other):
        return (isinstance(other, Mesh) and self.axis_names == other.axis_names
                and np.array_equal(self.device_ids, other.device_ids))

    def __hash__(self):
        return hash((self.axis_names, self.device_ids.tobytes(), self.devices.shape))

    def __repr__(self):
        axes = ", ".join(f"{n!r}: {s}" for n, s in self.shape.items())
        return f"Mesh({axes})"


_MESHES: list = []


def current_mesh() -> Optional[Mesh]:
    """The innermost mesh entered with ``with mesh:``, or None."""
    return _MESHES[-1] if _MESHES else None


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str], *, devices=None, axis_types=None) -> Mesh:
    """A mesh of ``prod(axis_shapes)`` devices (the first ones of ``dynjax.devices()`` unless
    ``devices`` is given) with the given axis sizes and names."""
    from .devices import devices as all_devices
    axis_shapes = tuple(int(s) for s in axis_shapes)
    need = math.prod(axis_shapes)
    pool = list(devices) if devices is not None else all_devices()
    if need > len(pool):
        raise ValueError(f"make_mesh: axis sizes {axis_shapes} need {need} devices, but only "
                         f"{len(pool)} are available (set XLA_FLAGS=--xla_force_host_platform_device_count=N "
                         "or DYNJAX_NUM_CPU_DEVICES=N before the first use of dynjax for N CPU devices)")
    if len(axis_names) != len(axis_shapes):
        raise ValueError(f"make_mesh: {len(axis_shapes)} axis sizes but {len(axis_names)} names")
    return Mesh(np.array(pool[:need], dtype=object).reshape(axis_shapes), tuple(axis_names), axis_types=axis_types)


class Sharding:
    """The base class of shardings (``isinstance`` checks)."""

    def layout(self, ndim: int) -> "_sharded.Layout":   # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def device_set(self) -> set:
        return set(self._devices())

    @property
    def addressable_devices(self) -> set:
        return self.device_set

    @property
    def num_devices(self) -> int:
        return len(self._devices())

    def is_fully_replicated_for(self, ndim: int) -> bool:
        return self.layout(ndim).is_replicated

    def shard_shape(self, global_shape: Sequence[int]) -> Tuple[int, ...]:
        """The shape of the piece each device holds (JAX requires even pieces)."""
        lay = self.layout(len(global_shape))
        for d, (n, t) in enumerate(zip(global_shape, lay.tiles)):
            if n % t:
                raise ValueError(f"shard_shape: dimension {d} of length {n} does not split evenly "
                                 f"in {t} pieces")
        return tuple(n // t for n, t in zip(global_shape, lay.tiles))

    def devices_indices_map(self, global_shape: Sequence[int]) -> Dict[Any, Tuple[slice, ...]]:
        """Device -> the index of the piece of an array of ``global_shape`` it holds."""
        by_id = {_device_id(d): d for d in self._devices()}
        pieces = self.layout(len(global_shape)).piece_of(tuple(global_shape))
        return {by_id[i]: idx for i, idx in pieces.items()}

    def is_equivalent_to(self, other: "Sharding", ndim: int) -> bool:
        return isinstance(other, Sharding) and self.layout(ndim) == other.layout(ndim)


class NamedSharding(Sharding):
    """An array laid out over ``mesh`` as ``spec`` says (see :class:`PartitionSpec`)."""

    def __init__(self, mesh: Mesh, spec: PartitionSpec = PartitionSpec(), *, memory_kind=None):
        if not isinstance(mesh, Mesh):
            raise TypeError(f"NamedSharding: mesh must be a Mesh, got {type(mesh).__name__}")
        if not isinstance(spec, PartitionSpec):
            if isinstance(spec, (tuple, list)):
                spec = PartitionSpec(*spec)
            else:
                raise TypeError(f"NamedSharding: spec must be a PartitionSpec, got {type(spec).__name__}")
        used = [n for dim in range(len(spec)) for n in spec._names(dim)]
        for n in used:
            if n not in mesh.axis_names:
                raise ValueError(f"NamedSharding: {spec} names the axis {n!r}, which the mesh "
                                 f"{mesh} does not have")
        if len(set(used)) != len(used):
            raise ValueError(f"NamedSharding: {spec} uses a mesh axis twice")
        self.mesh = mesh
        self.spec = spec
        self.memory_kind = memory_kind

    def _devices(self):
        return list(self.mesh.devices.reshape(-1))

    @property
    def is_fully_replicated(self) -> bool:
        return all(not self.spec._names(d) for d in range(len(self.spec)))

    def layout(self, ndim: int) -> "_sharded.Layout":
        if len(self.spec) > ndim:
            raise ValueError(f"{self.spec} has {len(self.spec)} entries, for an array of rank {ndim}")
        names = list(self.mesh.axis_names)
        order, tiles = [], []
        for d in range(ndim):
            axes = self.spec._names(d)
            order.extend(names.index(a) for a in axes)
            tiles.append(math.prod(self.mesh.shape[a] for a in axes))
        rest = [i for i in range(len(names)) if i not in order]
        grid = np.transpose(self.mesh.device_ids, order + rest)
        return _sharded.Layout(tiles, grid.reshape(tuple(tiles) + (-1,)))

    def __eq__(self, other):
        return isinstance(other, NamedSharding) and self.mesh == other.mesh and \
            _normalized(self.spec) == _normalized(other.spec)

    def __hash__(self):
        return hash((self.mesh, _normalized(self.spec)))

    def __repr__(self):
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec})"


def _normalized(spec: PartitionSpec):
    entries = [tuple(spec._names(d)) for d in range(len(spec))]
    while entries and not entries[-1]:
        entries.pop()
    return tuple(entries)


class SingleDeviceSharding(Sharding):
    """An array kept whole on one device."""

    def __init__(self, device, *, memory_kind=None):
        self.device = device
        self.memory_kind = memory_kind

    def _devices(self):
        return [self.device]

    @property
    def is_fully_replicated(self) -> bool:
        return True

    def layout(self, ndim: int) -> "_sharded.Layout":
        return _sharded.Layout.replicated(ndim, [_device_id(self.device)])

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding) and _device_id(self.device) == _device_id(other.device)

    def __hash__(self):
        return hash(("single", _device_id(self.device)))

    def __repr__(self):
        return f"SingleDeviceSharding(device={self.device!r})"


def block_count(spec: PartitionSpec, d: int, mesh: Mesh) -> int:
    """How many blocks ``spec`` cuts dimension ``d`` into over ``mesh`` (1 when it is not split)."""
    pieces = 1
    for n in spec._names(d):
        pieces *= mesh.shape[n]
    return pieces
