"""Running a traced program partitioned over several devices.

A sharded call (``qjit(f, in_shardings=...)``, or arguments put with ``device_put(x,
sharding)``) runs the program as one static padded program (``padding.pad_jaxpr``) that
XLA's SPMD partitioner splits over the devices (``runtime.sharded``). Padding is what makes
dynamic sizes work with shardings: a dimension split in ``t`` pieces must have a length that
is a multiple of ``t``, and a dynamic one is padded to such a bound (its bucket, rounded
up), its padding masked like any padded program's, so that reductions and the collectives
the partitioner inserts see only the logical elements. One trace serves every size, and one
executable every size of a bucket. A static dimension split unevenly is refused, as JAX does.

A program that cannot be padded (a primitive without a padding rule, sizes from data
between segments) runs on one device; ``DYNJAX_LOG=tiers`` says so.
"""
from __future__ import annotations

import math
from typing import Any, List, Optional, Sequence

import numpy as np

from ..core.jaxpr import ClosedJaxpr
from . import compile_log, explain
from .analysis import is_int_scalar, needed_vars
from .lru import BoundedCache
from .padded_runs import PaddedRun
from .padding import NotPaddable, bucket, pad_jaxpr


class ShardedProgram:
    """A traced program (its closed jaxpr, implicit dims first) run partitioned. ``run``
    returns the outputs, or None when the program cannot run partitioned."""

    def __init__(self, closed: ClosedJaxpr, stats, describe_input=None):
        self.jaxpr = closed.jaxpr
        self.consts = list(closed.consts)
        self.stats = stats
        self.describe_input = describe_input or (lambda i: f"input {i}")
        need = needed_vars(self.jaxpr)
        self.sized = [i for i, v in enumerate(self.jaxpr.invars) if is_int_scalar(v) and id(v) in need]
        self.runs = BoundedCache(stats.cache_size, executables=True)
        self.usable = True
        self.last_run: Optional[PaddedRun] = None   # introspection only
        self.checked: set = set()   # the tuples of sizes whose host checks passed

    def _bounds(self, args, in_layouts):
        """Each size input's bound: its bucket, rounded up to a multiple of the number of
        pieces of every dimension it is the length of."""
        position = {id(self.jaxpr.invars[i]): i for i in self.sized}
        multiple = {i: 1 for i in self.sized}
        for k, (v, lay) in enumerate(zip(self.jaxpr.invars, in_layouts)):
            if lay is None:
                continue
            for d, (dim, t) in enumerate(zip(v.aval.shape, lay.tiles)):
                if t == 1:
                    continue
                if isinstance(dim, int):
                    if dim % t:
                        raise ValueError(f"{self.describe_input(k)}: dimension {d} of length {dim} is "
                                         f"split over {t} devices, which does not divide it (a static "
                                         "dimension must split evenly; a dynamic one is padded)")
                    continue
                j = position.get(id(dim))
                if j is None:
                    raise NotPaddable(f"dimension {d} of {self.describe_input(k)} has no size input")
                multiple[j] = math.lcm(multiple[j], t)
        return tuple([(i, -(-bucket(int(args[i])) // multiple[i]) * multiple[i]) for i in self.sized])

    def run(self, args: Sequence[Any], in_layouts, out_layouts, device_ids) -> Optional[List[Any]]:
        if not self.usable:
            return None
        if any(int(args[i]) < 0 for i in self.sized):
            return None
        self._check(args)
        try:
            bounds = self._bounds(args, in_layouts)
        except NotPaddable as e:
            return self._unusable(e)
        key = (bounds, tuple(in_layouts), tuple(out_layouts), tuple(device_ids))
        try:
            run = self.runs.get_or_fill(key, lambda: self._build(dict(bounds), in_layouts, out_layouts, device_ids))
        except NotPaddable as e:
            return self._unusable(e)
        self.last_run = run
        self.stats.padded_runs += 1
        explain.maybe(explain.tiers, lambda: f"sharded over devices {list(device_ids)}, size bounds "
                      f"{[b for _, b in bounds]}")
        return run(args)

    def _check(self, args):
        """The host checks of sizes an exact compile makes (mismatched reshapes, a shard_map
        block split unevenly...), once per distinct tuple of sizes."""
        from .size_checks import check_sizes
        values = tuple(int(args[i]) for i in self.sized)
        if values in self.checked:
            return
        check_sizes(self.jaxpr, {id(self.jaxpr.invars[i]): v for i, v in zip(self.sized, values)},
                    self.describe_input, {id(self.jaxpr.invars[i]): i for i in self.sized})
        if len(self.checked) < 4096:
            self.checked.add(values)

    def _unusable(self, e):
        self.usable = False
        reason = str(e)
        explain.maybe(explain.tiers, lambda: f"a sharded program runs on one device: {reason}")
        return None

    def _build(self, bounds, in_layouts, out_layouts, device_ids) -> PaddedRun:
        from ..lowering import module_text
        from ..lowering.manual import partitioned_over
        from ..runtime.sharded import Layout, compile_sharded
        program = pad_jaxpr(self.jaxpr, self.consts, bounds)
        what = f"sharded over devices {list(device_ids)}" + (
            ", " + explain.bucket_text([bounds[i] for i in self.sized], self.describe_input, self.sized)
            if self.sized else "")
        eqns = (lambda: compile_log.equations_text(compile_log.count_equations(program.closed.jaxpr)))
        with compile_log.step("lower", self.stats, what, sizes=eqns) as st:
            with partitioned_over(device_ids):   # a shard_map lowers its per-device program
                text = module_text(program.closed)
            st.sizes = compile_log.sizes_with_ops(eqns, text)
        self.stats.lowerings += 1
        n_extra = len(program.closed.jaxpr.invars) - len(self.jaxpr.invars)
        ins = list(in_layouts) + [None] * n_extra
        outs: List[Optional[Layout]] = []
        at_out = {at: k for k, at in enumerate(program.out_index) if at is not None}
        for j, v in enumerate(program.closed.jaxpr.outvars):
            k = at_out.get(j)
            if k is None:     # the packed sizes: every device has them
                outs.append(Layout.replicated(len(v.aval.shape), device_ids))
            else:
                outs.append(out_layouts[k])
        with compile_log.step("compile", self.stats, what, lambda: "a new layout or size bound",
                              sizes=compile_log.sizes_with_ops(eqns, text)):
            exe = compile_sharded(text, ins, outs, device_ids)
        exe.call_exact = lambda args, interruptible=None: exe(args)
        self.stats.padded_compilations += 1
        return PaddedRun(program, exe, text)


# --- the qjit call path -----------------------------------------------------------------------
def _is_sharding(s) -> bool:
    return s is None or hasattr(s, "layout")


def check_shardings(prefix, what: str):
    """``prefix`` when every leaf is a sharding or None; else a TypeError naming ``what``."""
    from ..core import pytree
    for s in pytree.tree_leaves(prefix, is_leaf=_is_sharding):
        if not _is_sharding(s):
            raise TypeError(f"{what}: each leaf must be a dynjax.sharding.Sharding (e.g. a "
                            f"NamedSharding) or None, got {type(s).__name__}")
    return prefix


def prefix_leaves(prefix, value) -> List[Any]:
    """The entries of ``prefix`` (a pytree prefix of ``value`` whose leaves are shardings or
    None) repeated over the leaves of the subtree of ``value`` each covers."""
    from ..core import pytree
    tree = pytree.tree_structure(prefix, is_leaf=_is_sharding)
    entries = pytree.tree_leaves(prefix, is_leaf=_is_sharding)
    subtrees = pytree.flatten_up_to(tree, value)
    out: List[Any] = []
    for s, sub in zip(entries, subtrees):
        if not _is_sharding(s):
            raise TypeError(f"a sharding must be a dynjax.sharding.Sharding or None, got {type(s).__name__}")
        out += [s] * len(pytree.tree_leaves(sub))
    return out


def leaf_shardings(in_shardings, positional, leaves) -> Optional[List[Any]]:
    """The sharding of each argument leaf: from ``in_shardings`` (a prefix of the positional
    arguments), else the one the argument records (``device_put(x, sharding)``); None when
    no leaf has one."""
    out = [getattr(x, "sharding", None) if type(x) is not np.ndarray and isinstance(x, np.ndarray) else None
           for x in leaves]
    if in_shardings is not None:
        for k, s in enumerate(prefix_leaves(in_shardings, tuple(positional))):
            if s is not None:
                out[k] = s
    return out if any(s is not None for s in out) else None


def _devices_of(shardings) -> Optional[List[int]]:
    """The device ids of the mesh every named sharding among ``shardings`` shares."""
    ids = None
    for s in shardings:
        mesh = getattr(s, "mesh", None)
        if mesh is None:
            continue
        these = [int(i) for i in mesh.device_ids.reshape(-1)]
        if ids is None:
            ids = these
        elif sorted(ids) != sorted(these):
            raise ValueError(f"shardings over different devices in one call: {ids} and {these}")
    return ids


def run_sharded(entry, leaves, placed, out_shardings, program_args):
    """Run trace ``entry`` partitioned as ``placed`` (per argument leaf) and
    ``out_shardings`` (a prefix of the results) say; None when it runs on one device after
    all (no mesh, or a program that cannot be padded)."""
    from ..core import pytree
    from ..parallel.arrays import ShardedArray
    traced = entry.traced
    explicit_tree = pytree.tree_unflatten(traced.out_tree, list(range(len(entry.explicit))))
    outs_given = prefix_leaves(out_shardings, explicit_tree) if out_shardings is not None else \
        [None] * len(entry.explicit)
    device_ids = _devices_of(list(placed or []) + outs_given)
    if device_ids is None:
        return None
    dims, values = program_args(entry, leaves)
    placed = placed or [None] * len(values)
    in_layouts = [None] * len(dims) + [
        s.layout(np.ndim(x)) if getattr(s, "mesh", None) is not None else None for s, x in zip(placed, values)]
    outvars = traced.closed_jaxpr.jaxpr.outvars
    out_layouts = [None] * len(outvars)
    for k, s in zip(entry.explicit, outs_given):
        if s is not None:
            out_layouts[k] = s.layout(len(outvars[k].aval.shape))
    program = getattr(entry, "sharded", None)
    if program is None:
        program = entry.sharded = ShardedProgram(traced.closed_jaxpr, entry.program.stats,
                                                 entry.program.describe_input)
    outs = program.run(list(dims) + list(values), in_layouts, out_layouts, device_ids)
    if outs is None:
        return None
    results = [outs[i] for i in entry.explicit]
    results = [ShardedArray(r, s) if s is not None else r for r, s in zip(results, outs_given)]
    return pytree.tree_unflatten(traced.out_tree, results)
