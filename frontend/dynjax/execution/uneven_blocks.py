"""Host checks of a ``shard_map`` whose dynamic dimension does not split evenly at a call.

``n`` rows over ``t`` blocks are blocks of ``B = ceil(n / t)`` rows, device ``k`` holding
rows ``[k*B, min((k+1)*B, n))`` (13 over 4: 4, 4, 4, 1), as XLA tiles an unevenly split
dimension. The body was traced once with one block length, a size input of it; at such a
call that size differs between devices (the padded program gives each device its own,
``padding_shard_map.py``). Anything whose shape involves it is then per-device data:

* a collective of such a value would combine arrays of different shapes: a ``ValueError``
  naming the collective and the user's line (a collective of a value whose shape does not
  involve the block length, a per-block sum or ``x.shape[0]`` itself, is fine);
* a result must be a block of the length it was cut from, put back over the same mesh
  axes (``out_specs``), or hold each device's value on leading axes split over those axes
  (what linearizing a ``shard_map`` passes from its known part to its linear part), and
  then only another ``shard_map`` that splits it the same way may use it;
* one block length split over different mesh axes (two arguments of length ``n``, one over
  ``x`` and one over ``y``) would be two lengths on one device.

Only the padded program runs such a call (the whole-array program reshapes ``n`` into
``(t, n / t)``): the program's exact executable at that size is the padded program of
exactly that size (``segment.Segment._compile``).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from ..core.jaxpr import Literal, Var
from ..core.jaxpr import at_user_line as _at


def device_lengths(n: int, t: int) -> List[int]:
    """The block lengths of ``n`` rows over ``t`` blocks of ``ceil(n / t)`` rows."""
    big = -(-n // t)
    return [min(max(n - k * big, 0), big) for k in range(t)]


def describe_lengths(lengths: List[int]) -> str:
    """``4, 4, 4, 1``; for many blocks, runs of equal lengths: ``4 (x2047), 3``."""
    if len(lengths) <= 8:
        return ", ".join(map(str, lengths))
    runs: List[List[int]] = []
    for v in lengths:
        if runs and runs[-1][0] == v:
            runs[-1][1] += 1
        else:
            runs.append([v, 1])
    return ", ".join(f"{v} (x{c})" if c > 1 else str(v) for v, c in runs)


class Uneven:
    """What a ``shard_map`` splitting unevenly at a call means for the host checks: the
    body's per-device sizes (one dict per distinct device: id of the body's block length
    input -> its length there), the results that hold each device's value on leading axes
    (``(outvar, spec, [(dim, mesh axes of its block length)])``: only another shard_map may
    use them) and a description."""

    def __init__(self, per_device: List[Dict[int, int]], stacked: list, what: str):
        self.per_device, self.stacked, self.what = per_device, stacked, what


def _splits(eqn, size):
    """Per dynamic dimension the shard_map splits in ``t > 1`` blocks, at these sizes:
    ``(names, t, n, block, d)`` (``n`` None when unknown, ``block`` the body's dim)."""
    from .padding_shard_map import dynamic_splits
    body = eqn.params["body"]
    return [(tuple(names), t, size(whole), body.invars[m].aval.shape[d], d)
            for m, d, t, names, whole, _, _ in dynamic_splits(eqn)]


def check_uneven(eqn, size) -> Optional[Uneven]:
    """None when every dynamic dimension this shard_map splits is a multiple of its blocks
    (or of unknown length); else what the host checks need (``Uneven``), after raising a
    ``ValueError`` for what cannot run with blocks of different lengths (module docstring)."""
    p = eqn.params
    body = p["body"]
    splits = _splits(eqn, size)
    uneven = [s for s in splits if s[2] is not None and s[2] % s[1]]
    if not uneven:
        return None
    names0, t0, n0, _, d0 = uneven[0]
    what = (f"shard_map: dimension {d0} of length {n0} splits into {t0} blocks over mesh axes {names0} "
            f"of {describe_lengths(device_lengths(n0, t0))} rows{_at(eqn)}")
    positions = {id(v): m for m, v in enumerate(body.invars)}
    split_of: Dict[int, Tuple[tuple, List[int]]] = {}     # id of a block length input -> (names, lengths)
    for names, t, n, block, _ in splits:
        if n is None or not isinstance(block, Var) or id(block) not in positions:
            continue
        lengths = device_lengths(n, t)
        if id(block) in split_of and split_of[id(block)][0] != names:
            raise ValueError(f"{what}: the function uses one block length for blocks over mesh axes "
                             f"{split_of[id(block)][0]} and {names}, which differ on a device when the "
                             "length does not divide evenly")
        split_of[id(block)] = (names, lengths)
    varying = {k: frozenset(names) for k, (names, lengths) in split_of.items() if len(set(lengths)) > 1}
    _check_collectives(body, varying, what)
    stacked = _check_results(eqn, split_of, varying, what)
    # the sizes of each device, to check the body at each of them
    mesh = p["mesh"]
    per_device, seen = [], set()
    for device in np.ndindex(*[mesh.shape[n] for n in mesh.axis_names]):
        coord = dict(zip(mesh.axis_names, device))
        sizes = {}
        for k, (names, lengths) in split_of.items():
            index = 0
            for n in names:
                index = index * mesh.shape[n] + coord[n]
            sizes[k] = lengths[index]
        key = tuple(sorted(sizes.items()))
        if key not in seen:
            seen.add(key)
            per_device.append(sizes)
    return Uneven(per_device, stacked, what)


def _taint(jaxpr, varying: Dict[int, frozenset]) -> Dict[int, frozenset]:
    """``varying`` (id of an integer scalar of ``jaxpr`` that differs between devices -> the
    mesh axes along which it does) and every value computed from them, with the axes of
    what it is computed from (less those a collective reduces over: a ``psum`` over ``x``
    is the same on every device along ``x``)."""
    from ..lax.collectives import all_gather_p, pmax_p, pmin_p, psum_p
    out = dict(varying)
    for e in jaxpr.eqns:
        axes = frozenset().union(*[out[id(a)] for a in e.invars if isinstance(a, Var) and id(a) in out])
        if axes and e.primitive in (psum_p, pmax_p, pmin_p, all_gather_p):
            axes = axes - _collective_axes(e)
        if axes:
            for v in e.outvars:
                out[id(v)] = out.get(id(v), frozenset()) | axes
    return out


def _varies_over(aval, tainted: Dict[int, frozenset]) -> frozenset:
    """The mesh axes along which the shape of ``aval`` differs between devices."""
    return frozenset().union(*[tainted[id(d)] for d in getattr(aval, "shape", ())
                               if isinstance(d, Var) and id(d) in tainted])


def _collective_axes(e) -> frozenset:
    name = e.params.get("axis_name")
    return frozenset(name if isinstance(name, (tuple, list)) else (name,))


def _check_collectives(jaxpr, varying: Dict[int, frozenset], what: str) -> None:
    """A collective (in ``jaxpr`` or a program nested in it) over mesh axes along which the
    shape of its operand differs between devices: a ValueError naming it and the user's
    line. (Along the other axes the devices it combines have blocks of one length: a psum
    over ``y`` of blocks split over ``x`` is fine.)"""
    from ..lax.collectives import COLLECTIVE_SET
    from .analysis import nested_jaxprs
    tainted = _taint(jaxpr, varying)
    for e in jaxpr.eqns:
        if e.primitive in COLLECTIVE_SET:
            axes = frozenset().union(*[_varies_over(a.aval, tainted) for a in e.invars if not isinstance(a, Literal)])
            if axes & _collective_axes(e):
                raise ValueError(f"{what}: {e.primitive.name}{_at(e)} combines values whose shape involves "
                                 "the block length, which differs between the devices it combines at this "
                                 "size (only a length that divides evenly gives blocks of one shape)")
        axes = frozenset().union(*[tainted[id(a)] for a in e.invars if isinstance(a, Var) and id(a) in tainted])
        if axes:
            for sub in nested_jaxprs(e):     # every size a nested program takes may vary
                _check_collectives(sub, {id(v): axes for v in sub.invars if not v.aval.shape}, what)


def _check_results(eqn, split_of, varying: Dict[int, frozenset], what: str) -> list:
    """Results whose shape involves a block length that differs between devices: a block
    put back over its split's mesh axes, or (returned) each device's value on leading axes
    split over them; anything else is a ValueError."""
    p = eqn.params
    body = p["body"]
    tainted = _taint(body, varying)
    stacked = []
    for k, (v, w, spec) in enumerate(zip(body.outvars, eqn.outvars, p["out_specs"])):
        if isinstance(v, Literal):
            continue
        named = {n for d in range(len(spec)) for n in spec._names(d)}
        if id(v) in tainted and not tainted[id(v)] <= named:
            raise ValueError(f"{what}: result {k} of the mapped function is computed from the block "
                             f"length, which differs between devices along mesh axes "
                             f"{tuple(sorted(tainted[id(v)] - named))} at this size, but its out_specs "
                             f"{spec} does not split it over them")
        stack = []
        for d, dim in enumerate(v.aval.shape):
            if not (isinstance(dim, Var) and id(dim) in tainted):
                continue
            names = split_of[id(dim)][0] if id(dim) in varying else None
            if names is not None and tuple(spec._names(d)) == names:
                continue
            if names is not None and not spec._names(d) and set(names) <= named:
                stack.append((d, names))
                continue
            raise ValueError(f"{what}: result {k} of the mapped function has a dimension ({d}) computed "
                             "from the block length, which differs between devices at this size; only "
                             "a block of that length put back over the same mesh axes (out_specs) can "
                             "be returned")
        if stack:
            stacked.append((w, spec, stack))
    return stacked


def check_stacked_uses(jaxpr, stacked, what: str, size) -> None:
    """Each device's values on leading axes (``Uneven.stacked``) may only go to another
    ``shard_map`` that splits them as they were put together (and whose body takes their
    block length as its own): a ValueError otherwise."""
    for w, spec, dims in stacked:
        if any(v is w for v in jaxpr.outvars):
            raise ValueError(f"{what}: a result holds each device's block of a length that differs "
                             "between devices; it cannot be returned")
        for e in jaxpr.eqns:
            for i, a in enumerate(e.invars):
                if a is not w:
                    continue
                p = e.params
                ok = e.primitive.name == "shard_map" and i in p["body_inputs"]
                if ok:
                    m = list(p["body_inputs"]).index(i)
                    ok = tuple(p["in_specs"][m]) == tuple(spec)
                    taken = {(id(b), names) for names, _, n, b, _ in _splits(e, size) if n is not None}
                    block = p["body"].invars[m].aval.shape
                    ok = ok and all((id(block[d]), names) in taken for d, names in dims)
                if not ok:
                    raise ValueError(f"{what}: a result holds each device's block of a length that "
                                     f"differs between devices; {e.primitive.name}{_at(e)} cannot use it")
