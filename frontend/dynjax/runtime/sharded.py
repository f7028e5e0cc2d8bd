"""Programs partitioned over several devices by XLA's SPMD partitioner.

A :class:`Layout` says how one array lies over devices, in plain numbers (no jaxlib types):
``tiles[d]`` pieces along dimension ``d`` and a grid of device ids of shape
``tiles + (replicas,)``: the device at ``grid[i0, ..., r]`` holds piece ``(i0, ...)`` (every
one of the ``replicas`` devices of a piece holds a copy). ``dynjax.parallel`` builds layouts
from meshes and partition specs.

:func:`compile_sharded` annotates a static module with the layouts of its arguments and
results (``mlir_passes.shardings``) and compiles it for the devices with the partitioner on.
A :class:`ShardedExecutable` takes whole numpy arrays: it cuts each into the pieces its
layout gives every device, runs the per-device programs (which exchange data through XLA's
collectives), and puts each result back together from the pieces the devices return.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np
import jaxlib._jax as _jax
from jaxlib import xla_client as _xc

from . import xla as _xla
from .compile_options import compile_options


class Layout:
    """How an array lies over devices: ``tiles`` pieces per dimension, ``grid`` of device ids
    with shape ``tiles + (replicas,)``."""

    __slots__ = ("tiles", "grid")

    def __init__(self, tiles: Sequence[int], grid):
        self.tiles = tuple(int(t) for t in tiles)
        grid = np.asarray(grid, dtype=np.int64)
        if grid.ndim == len(self.tiles):
            grid = grid[..., None]
        if grid.shape[:-1] != self.tiles:
            raise ValueError(f"Layout: a device grid of shape {grid.shape} for tiles {self.tiles}")
        self.grid = grid

    @classmethod
    def replicated(cls, ndim: int, device_ids: Sequence[int]) -> "Layout":
        return cls((1,) * ndim, np.asarray(device_ids, np.int64).reshape((1,) * ndim + (-1,)))

    @property
    def replicas(self) -> int:
        return self.grid.shape[-1]

    @property
    def is_replicated(self) -> bool:
        return all(t == 1 for t in self.tiles)

    def hlo(self, device_ids: Optional[Sequence[int]] = None) -> str:
        """XLA's HloSharding text of this layout, for a program on ``device_ids`` (the
        sharding names devices by their position among them; default: ids are positions)."""
        if self.is_replicated:
            return "{replicated}"
        dims = list(self.tiles) + ([self.replicas] if self.replicas > 1 else [])
        position = {int(d): k for k, d in enumerate(device_ids)} if device_ids is not None else None
        ids = ",".join(str(int(d) if position is None else position[int(d)]) for d in self.grid.reshape(-1))
        last = " last_tile_dim_replicate" if self.replicas > 1 else ""
        return "{devices=[" + ",".join(map(str, dims)) + "]" + ids + last + "}"

    def positions(self, device_ids: Sequence[int]):
        """``(tiles, grid)`` with the grid's device ids replaced by their positions among
        ``device_ids`` (partition numbers): what a module's sharding annotations name."""
        position = {int(d): k for k, d in enumerate(device_ids)}
        return self.tiles, np.vectorize(lambda d: position[int(d)], otypes=[np.int64])(self.grid)

    def piece_of(self, shape: Sequence[int]) -> dict:
        """Device id -> the index (a tuple of slices) of the piece of an array of ``shape``
        it holds. A dimension of length ``n`` in ``t`` pieces is cut in pieces of
        ``ceil(n / t)`` (the last ones shorter, possibly empty), as XLA cuts them."""
        out = {}
        for at in np.ndindex(*self.grid.shape):
            idx = []
            for d, (i, t) in enumerate(zip(at[:-1], self.tiles)):
                step = -(-int(shape[d]) // t) if t > 1 else int(shape[d])
                lo = min(i * step, int(shape[d]))
                idx.append(slice(lo, min(lo + step, int(shape[d]))))
            out[int(self.grid[at])] = tuple(idx)
        return out

    def __eq__(self, other):
        return isinstance(other, Layout) and self.tiles == other.tiles and np.array_equal(self.grid, other.grid)

    def __hash__(self):
        return hash((self.tiles, self.grid.tobytes()))

    def __repr__(self):
        return f"Layout({self.hlo()})"


def _layout_from_op_sharding(op, ndim: int, device_ids: Sequence[int]) -> Layout:
    """The layout of an XLA OpSharding (an executable's result)."""
    hs = _xc.HloSharding.from_proto(op)
    if hs.is_replicated() or hs.is_maximal():
        return Layout.replicated(ndim, device_ids if not hs.is_maximal() else device_ids[:1])
    dims = list(hs.tile_assignment_dimensions())
    devices = [device_ids[i] for i in hs.tile_assignment_devices()]   # positions -> ids
    replicas = 1
    if hs.replicate_on_last_tile_dim():
        replicas = dims.pop()
    elif len(dims) > ndim:       # subgroups (all replicated): fold them into the replicas
        replicas = int(np.prod(dims[ndim:]))
        dims = dims[:ndim]
    return Layout(dims, np.asarray(devices, np.int64).reshape(tuple(dims) + (replicas,)))


def _aval(t: str):
    return _xla._aval_from_type(t)


class ShardedExecutable:
    """A program compiled for several devices; called with whole numpy arrays, returns whole
    numpy arrays."""

    def __init__(self, loaded, device_ids, in_types, out_types, in_layouts, out_layouts, text=""):
        self.loaded = loaded
        self.text = text   # the annotated module XLA partitioned (introspection)
        self.generation = _xla.generation   # a forked child retires it (runtime/xla.py)
        self.device_ids = list(device_ids)
        self.in_avals = [_aval(t) for t in in_types]
        self.out_avals = [_aval(t) for t in out_types]
        self.in_layouts = list(in_layouts)
        self.out_layouts = list(out_layouts)
        by_id = {d.id: d for d in _xla.all_devices()}
        self.devices = [by_id[i] for i in self.device_ids]
        mine = {d.id for d in _xla.local_devices()}
        # this process puts the pieces of its own devices (every process passes whole arrays)
        self.local = [d for d in self.devices if d.id in mine]
        device_list = _jax.DeviceList(tuple(self.devices))
        self._shardings = [_jax.GSPMDSharding(device_list, _xc.HloSharding.from_string(lay.hlo(self.device_ids)))
                           for lay in self.in_layouts]

    def scalar_types(self, i: int) -> tuple:
        """The scalar types input ``i`` takes as they are: none (every argument becomes a
        numpy array here), as ``Executable.scalar_types`` says for one device."""
        return ()

    def partitioned_hlo(self) -> str:
        """The per-device program XLA's partitioner made (introspection)."""
        return "\n".join(m.to_string() for m in self.loaded.hlo_modules())

    def __call__(self, args: Sequence) -> List[np.ndarray]:
        if self.generation != _xla.generation:
            raise _xla.StaleExecutableError(
                "this sharded executable was compiled by the XLA client of the parent process, "
                "which does not survive fork(); call the qjit function again in a fresh process")
        bufs = []
        for i, (x, aval, lay, sharding) in enumerate(zip(args, self.in_avals, self.in_layouts, self._shardings)):
            x = np.asarray(x)
            if x.shape != aval.shape or x.dtype != aval.dtype:
                x = _xla._slow_arg(x, aval, i)
            pieces = lay.piece_of(aval.shape)
            xs = [np.ascontiguousarray(x[pieces[d.id]]) for d in self.local]
            bufs.append(_xla._bdp(aval, sharding, xs, self.local, True, False, _xla._ZERO_COPY, True))
        results = self.loaded.execute_sharded(bufs).disassemble_into_single_device_arrays()
        outs = []
        for aval, lay, per_device in zip(self.out_avals, self.out_layouts, results):
            whole = np.empty(aval.shape, aval.dtype)
            pieces = lay.piece_of(aval.shape)
            filled = set()
            for piece in per_device:
                idx = pieces.get(piece.sharding._device.id)
                key = None if idx is None else tuple((s.start, s.stop) for s in idx)
                if key is None or key in filled:
                    continue
                part = np.asarray(piece)
                whole[idx] = part[tuple(slice(0, s.stop - s.start) for s in idx)]
                filled.add(key)
            outs.append(whole)
        return outs


def compile_sharded(static_module, in_layouts: Sequence[Optional[Layout]], out_layouts: Sequence[Optional[Layout]],
                    device_ids: Sequence[int]) -> ShardedExecutable:
    """Compile a fully static module for the devices ``device_ids`` (one partition each), its
    arguments laid out by ``in_layouts`` (None: replicated) and its results by
    ``out_layouts`` (None: as XLA's sharding propagation decides)."""
    from mlir_passes.specialize import main_signature
    if _xla._compile_elsewhere:
        raise RuntimeError("a sharded program cannot be compiled in a process forked after its parent "
                           "compiled (XLA's compiler does not survive fork); start the process with "
                           "the 'spawn' method instead")
    client = _xla.get_client()
    in_types, out_types = main_signature(static_module)
    n = len(device_ids)
    in_layouts = [lay if lay is not None else Layout.replicated(_aval(t).ndim, device_ids)
                  for lay, t in zip(in_layouts, in_types)]
    if _xla.process_count() > 1:
        # every process returns whole results: each gets all of every output
        out_layouts = [Layout.replicated(_aval(t).ndim, device_ids) for t in out_types]
    text = sharded_text(static_module, in_layouts, out_layouts, device_ids)
    opts = compile_options()
    opts.num_partitions = n
    opts.num_replicas = 1
    build = opts.executable_build_options
    build.use_spmd_partitioning = True
    build.use_shardy_partitioner = True
    build.allow_spmd_sharding_propagation_to_output = [lay is None for lay in out_layouts]
    opts.device_assignment = _xc.DeviceAssignment.create(np.asarray([list(device_ids)], np.int64))
    by_id = {d.id: d for d in _xla.all_devices()}
    try:
        devices = [by_id[i] for i in device_ids]
    except KeyError as e:
        raise ValueError(f"no device with id {e.args[0]} (devices: {sorted(by_id)})") from None
    try:
        loaded = client.compile_and_load(text, _jax.DeviceList(tuple(devices)), opts)
    except _jax.JaxRuntimeError as e:
        raise ValueError(f"XLA failed to compile the partitioned module: {e}") from None
    final = [lay if lay is not None else _layout_from_op_sharding(op, _aval(t).ndim, device_ids)
             for lay, op, t in zip(out_layouts, loaded.get_output_shardings(), out_types)]
    return ShardedExecutable(loaded, device_ids, in_types, out_types, in_layouts, final, text)


def sharded_text(static_module, in_layouts: Sequence[Optional[Layout]], out_layouts: Sequence[Optional[Layout]],
                 device_ids: Sequence[int]) -> str:
    """The module :func:`compile_sharded` compiles: ``static_module`` annotated with the
    layouts (None: left to XLA) for a program on ``device_ids``."""
    from mlir_passes.shardings import annotate_shardings
    return annotate_shardings(static_module, [lay.positions(device_ids) if lay is not None else None
                                              for lay in in_layouts],
                              [lay.positions(device_ids) if lay is not None else None for lay in out_layouts],
                              len(device_ids))


def device_pieces(x: np.ndarray, layout: Layout) -> List[Tuple[int, np.ndarray]]:
    """``(device id, piece)`` for every device of ``layout`` (the pieces of ``x`` each holds)."""
    return [(d, x[idx]) for d, idx in layout.piece_of(x.shape).items()]
