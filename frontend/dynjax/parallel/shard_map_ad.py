"""Reverse mode through ``shard_map`` as per-device programs.

Linearizing (partial evaluation) splits the body: the equations that do not depend on the
tangents run in one ``shard_map`` (the known part), which also returns the values the other
equations need (residuals: a body input is passed on as the argument it was cut from; a
value computed per device leaves with one leading axis per mapped mesh axis, split over
it, so each device's value comes back to it); the others form the linear ``shard_map``.

Its transpose is a ``shard_map`` of the body's transpose. A result whose spec does not name
a mapped axis is one copy of a value every device along that axis holds the same (the
replication check guarantees it), so the whole result is also the *mean* of those copies:
each device receives its cotangent divided by the number of copies; an argument whose spec
does not name a mapped axis was copied to every device along it, so its cotangent is the
``psum`` of the devices' cotangents over those axes. The collectives inside transpose as
JAX's (``psum`` into ``psum``, ``all_gather`` into ``psum_scatter``, ``ppermute`` into the
inverse permutation).

A body this cannot split (one holding a loop, a cond, an effect, or a linear operand the body
does not take) is differentiated through the whole-array program instead: same values.
"""
from __future__ import annotations

from typing import Any, List

import numpy as np

from ..core.staging import has_effect
from ..core.jaxpr import Literal, Var
from ..core.primitive import partial_eval_rules
from ..core.trace import typeof
from ..lax import api as lax
from ..lax.collectives import COLLECTIVE_SET, psum
from ..transforms.transpose import UndefinedPrimal, backward_pass, is_undefined, zeros
from .sharding import PartitionSpec


class NotSplit(Exception):
    """This shard_map is differentiated through its whole-array program."""


def _unnamed(spec: PartitionSpec, mapped) -> tuple:
    named = {n for d in range(len(spec)) for n in spec._names(d)}
    return tuple(n for n in mapped if n not in named)


def _leading(x, m: int):
    """``x`` with ``m`` leading axes of length one."""
    shape = tuple(typeof(x).shape)
    return lax.broadcast_in_dim(x, (1,) * m + shape, tuple(range(m, m + len(shape))))


def _strip(x, m: int):
    """``x`` without its ``m`` leading axes of length one."""
    return lax.squeeze(x, tuple(range(m))) if m else x


def _run(eqns, env):
    def read(a):
        return a.val if isinstance(a, Literal) else env[id(a)]
    for e in eqns:
        outs = e.primitive.bind(*[read(a) for a in e.invars], **e.params)
        for v, o in zip(e.outvars, outs if e.primitive.multiple_results else [outs]):
            env[id(v)] = o
    return read


def split_linearize(eqn, known, flags):
    """The partial-evaluation rule of ``shard_map`` as two per-device ``shard_map`` s (see the
    module docstring); raises NotSplit when it does not apply."""
    from .shard_map import bind_shard_map
    p = eqn.params
    body, mesh, mapped, bi = p["body"], p["mesh"], p["mapped"], p["body_inputs"]
    if any(f for k, f in enumerate(flags) if k not in set(bi)):
        raise NotSplit
    if any(e.primitive in partial_eval_rules or has_effect(e) for e in body.eqns):
        raise NotSplit
    bflags = [flags[i] for i in bi]
    unknown = {id(v) for v, f in zip(body.invars, bflags) if f}
    known_eqns, unknown_eqns = [], []
    # values computed from literals alone (``float(4)`` of a pmean) are the same on every
    # device: the linear part recomputes them rather than take them as per-device residuals
    constant, constant_eqns = set(), []
    for e in body.eqns:
        if any(isinstance(a, Var) and id(a) in unknown for a in e.invars):
            unknown_eqns.append(e)
            unknown.update(id(v) for v in e.outvars)
        else:
            known_eqns.append(e)
            if e.primitive not in COLLECTIVE_SET and all(not isinstance(a, Var) or id(a) in constant
                                                         for a in e.invars):
                constant.update(id(v) for v in e.outvars)
                constant_eqns.append(e)
    out_unknown = [isinstance(v, Var) and id(v) in unknown for v in body.outvars]
    position = {id(v): j for j, v in enumerate(body.invars)}
    needed, seen = [], set()
    for e in unknown_eqns:
        for a in e.invars:
            if isinstance(a, Var) and id(a) not in unknown and id(a) not in seen and id(a) not in constant:
                seen.add(id(a))
                needed.append(a)
    passed = [position[id(a)] for a in needed if id(a) in position]          # known inputs
    computed = [a for a in needed if id(a) not in position]                  # per-device values
    m = len(mapped)
    res_spec = PartitionSpec(*mapped)
    known_in = [j for j, f in enumerate(bflags) if not f]

    def known_fn(*blocks):
        env = {id(body.invars[j]): b for j, b in zip(known_in, blocks)}
        read = _run(known_eqns, env)
        return [read(v) for v, u in zip(body.outvars, out_unknown) if not u] + \
            [_leading(read(a), m) for a in computed]
    known_specs = [s for s, u in zip(p["out_specs"], out_unknown) if not u]
    outs = bind_shard_map(known_fn, [known[bi[j]] for j in known_in], [p["in_specs"][j] for j in known_in],
                          mesh, mapped, lambda _: known_specs + [res_spec] * len(computed))
    nk = len(known_specs)
    known_outs, residuals = iter(outs[:nk]), outs[nk:]
    lin_in = [j for j, f in enumerate(bflags) if f]

    def stage(vals):
        def lin_fn(*blocks):
            it = iter(blocks)
            env = {id(body.invars[j]): next(it) for j in passed}
            for a in computed:
                env[id(a)] = _strip(next(it), m)
            for j in lin_in:
                env[id(body.invars[j])] = next(it)
            read = _run(constant_eqns + unknown_eqns, env)
            return [read(v) for v, u in zip(body.outvars, out_unknown) if u]
        leaves = [known[bi[j]] for j in passed] + list(residuals) + [vals[bi[j]] for j in lin_in]
        specs = [p["in_specs"][j] for j in passed] + [res_spec] * len(computed) + [p["in_specs"][j] for j in lin_in]
        lin = iter(bind_shard_map(lin_fn, leaves, specs, mesh, mapped,
                                  lambda _: [s for s, u in zip(p["out_specs"], out_unknown) if u]))
        return [next(lin) if u else None for u in out_unknown]
    return [None if u else next(known_outs) for u in out_unknown], stage


def split_transpose(cts, operands, p) -> List[Any]:
    """The transpose of a ``shard_map`` linear in some operands, as a ``shard_map`` of the
    body's transpose (see the module docstring); raises NotSplit when it does not apply."""
    from .shard_map import bind_shard_map, block_shape
    body, mesh, mapped, bi = p["body"], p["mesh"], p["mapped"], p["body_inputs"]
    if any(is_undefined(x) for k, x in enumerate(operands) if k not in set(bi)):
        raise NotSplit
    lin = [j for j, i in enumerate(bi) if is_undefined(operands[i])]
    res = [j for j, i in enumerate(bi) if not is_undefined(operands[i])]
    ct_at = [k for k, c in enumerate(cts) if c is not None]
    out: List[Any] = [None] * len(operands)
    if not ct_at or not lin:
        return out
    lin_avals = [operands[bi[j]].aval for j in lin]

    def t_fn(*blocks):
        args: List[Any] = [None] * len(body.invars)
        for j, b in zip(res, blocks[:len(res)]):
            args[j] = b
        block_avals = []
        for j, a in zip(lin, lin_avals):
            block_avals.append(a.update(shape=block_shape(a.shape, p["in_specs"][j], mesh)))
            args[j] = UndefinedPrimal(block_avals[-1])
        full: List[Any] = [None] * len(body.outvars)
        for k, c in zip(ct_at, blocks[len(res):len(res) + len(ct_at)]):
            copies = int(np.prod([mesh.shape[n] for n in _unnamed(p["out_specs"][k], mapped)]))
            full[k] = c if copies == 1 else lax.div(c, np.asarray(copies, typeof(c).dtype))
        got = backward_pass(body, args, full)
        results = []
        for j, a in zip(lin, block_avals):
            c = got[j] if got[j] is not None else zeros(a)
            over = _unnamed(p["in_specs"][j], mapped)
            results.append(psum(c, over) if over else c)
        return results
    leaves = [operands[bi[j]] for j in res] + [cts[k] for k in ct_at]
    specs = [p["in_specs"][j] for j in res] + [p["out_specs"][k] for k in ct_at]
    # an empty array of each linear operand's split lengths, split as the operand: the body
    # takes the block lengths of those splits as its own, and the cotangents are put back to
    # the operands' lengths (also when blocks differ in length, ``execution/uneven_blocks.py``)
    for j, a in zip(lin, lin_avals):
        spec = p["in_specs"][j]
        split = [d for d in range(len(a.shape)) if spec._names(d) and not isinstance(a.shape[d], int)]
        if split:
            leaves.append(zeros(a.update(shape=tuple(a.shape[d] if d in split else 0 for d in range(len(a.shape))))))
            specs.append(spec)
    for j, c in zip(lin, bind_shard_map(t_fn, leaves, specs, mesh, mapped, lambda _: [p["in_specs"][j] for j in lin])):
        out[bi[j]] = c
    return out
