"""The loop expansion strategy: which carried dimensions become loop-carried values.

A single-pass tracer sees only iteration 0, so the body is traced under an assumption
and re-traced until the assumption holds (a small fixpoint, usually one or two passes).
The assumption is about every iteration, not just the first: it holds when the body,
given carried values of the assumed types, returns values of the same assumed types.

1. Each dim of a carried array starts *invariant*: the body sees the enclosing scope's
   dim (captured as a constant, like the seed's overview program, where the body's
   ``a + a0`` type-checks because both use the same captured dim).
2. If the body returns a different dim at an invariant position, that position becomes
   *variant*: a loop-carried implicit value, and the body is traced again. Variant
   positions whose initial dims are equal start out sharing one implicit value (they
   are assumed equal in every iteration).
3. With preserved dimensions (the default), all positions that share a dim vary together,
   and positions that shared a dim at input must share one at output too, otherwise the
   seed's "dimensions are not the same any more" error. With
   ``allow_array_resizing=True`` (``preserve_dimensions=False``) a position varies alone
   (the others keep the outer dim while the body returns it), and a shared implicit value
   whose positions come back with different dims is *split* by the dims they returned,
   and the body traced again.

The result: a dim the body returns unchanged stays the outer dim after the loop, and
carried arrays whose dims are equal in every iteration share one dim after the loop.
The body's implicit outputs are the new values of the variant dims, in order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Sequence

from ..core.avals import DBIdx, same_dim
from ..core.expansion import NestedProgram, deduce_input_type, is_symbolic, trace_nested
from ..core.trace import typeof
from ..lax.base import describe_shapes


class _Retrace(Exception):
    """Internal: the body changed dims assumed invariant; trace again with more variants."""

    def __init__(self, positions, splits=()):
        self.positions = positions   # invariant positions whose dim the body changed
        self.splits = splits         # per shared implicit value that diverged: its positions by dim


@dataclass
class LoopBody:
    program: NestedProgram
    implicit_inits: List[Any]     # enclosing-scope values of the implicit carried dims
    nimplicit: int
    in_type: tuple                # the body's expanded input type (without constants)


def trace_loop_body(body: Callable, prefix_avals: Sequence, carry_init: Sequence, carry_tree,
                    suffix_avals: Sequence, preserve: bool, name: str,
                    split_outputs: Callable = None) -> LoopBody:
    """Trace a loop body ``body(*prefix, *carries, *suffix)`` with the strategy above.

    ``split_outputs(result) -> (carry_leaves, carry_tree, extra_leaves)`` separates the
    body's result into new carries (which must match the initial carries' structure,
    dtypes and ranks) and extra per-iteration outputs (scan's stacked ``ys``).
    The body jaxpr's invars are ``consts, prefix, implicit, carries, suffix``; its
    outvars ``implicit, carries, extras``.
    """
    carry_avals = [typeof(x) for x in carry_init]
    positions = [(k, ax) for k, a in enumerate(carry_avals) for ax in range(a.ndim)]
    group = _initial_groups(carry_avals, positions)
    variant = {}            # (k, ax) -> the label of its implicit value (equal labels share one)
    fresh_labels = iter(range(1 << 30))
    nprefix = len(prefix_avals)
    for _ in range(1 + 2 * len(positions)):
        implicit, implicit_type, carry_type = deduce_input_type(
            carry_init, lambda k, ax, d: (k, ax) in variant, first_index=nprefix,
            slot_key=lambda k, ax, d: variant[(k, ax)])
        in_type = tuple((a, True) for a in prefix_avals) + implicit_type + carry_type + tuple(
            (a, True) for a in suffix_avals)
        slot = {(k, ax): d.val - nprefix for k, (a, _) in enumerate(carry_type)
                for ax, d in enumerate(a.shape) if isinstance(d, DBIdx)}

        def hook(arg_tracers, out_leaves, nimplicit=len(implicit), slot=slot):
            ncarry = len(carry_avals)
            carries_out, extras = out_leaves[:ncarry], out_leaves[ncarry:]
            carry_in = arg_tracers[nprefix + nimplicit:nprefix + nimplicit + ncarry]
            returned = [[] for _ in range(nimplicit)]   # per implicit value: (position, dim out)
            grow = set()
            for k, (xi, xo) in enumerate(zip(carry_in, carries_out)):
                ai, ao = typeof(xi), typeof(xo)
                for ax, (di, do) in enumerate(zip(ai.shape, ao.shape)):
                    if (k, ax) in slot:
                        returned[slot[(k, ax)]].append(((k, ax), do))
                    elif not same_dim(di, do):
                        grow.add((k, ax))
            splits = [_by_dim(r) for r in returned]
            for parts in splits:
                if len(parts) > 1 and preserve:
                    (k0, _), ((k1, ax1), _) = parts[0][0][0], parts[1][0]
                    raise TypeError(
                        f"{name}: the loop body returns arrays whose dimensions were the same at "
                        f"input but are not the same any more at output (carried values "
                        f"{min(k0, k1)} and {max(k0, k1)}, axis {ax1}); pass "
                        "allow_array_resizing=True to let them differ")
            splits = [parts for parts in splits if len(parts) > 1]
            if grow or splits:
                raise _Retrace(grow, splits)
            new_dims = [r[0][1] for r in returned]
            return list(new_dims) + list(carries_out) + list(extras), \
                (False,) * nimplicit + (True,) * (len(carries_out) + len(extras))

        def flatten_result(result):
            leaves, tree, extras = split_outputs(result)
            _check_carry_structure(name, carry_tree, carry_avals, tree, leaves)
            return list(leaves) + list(extras), (tree, len(extras))

        try:
            prog = trace_nested(body, in_type, flatten_result, outputs_hook=hook)
        except _Retrace as r:
            grown = set(r.positions)
            if preserve:  # a shared dim varies for all positions that share it
                grown |= {p for p in positions if any(group[p] == group[g] for g in r.positions)
                          and is_symbolic(carry_avals[p[0]].shape[p[1]])}
            for p in grown - set(variant):
                variant[p] = group[p]
            for parts in r.splits:   # positions assumed equal that came back different
                for part in parts[1:]:
                    label = ("split", next(fresh_labels))
                    for p, _ in part:
                        variant[p] = label
            continue
        return LoopBody(prog, implicit, len(implicit), in_type)
    raise AssertionError("loop expansion did not converge")


def _initial_groups(carry_avals, positions):
    """Per carried position, a label shared by the positions whose initial dims are the same
    symbolic dim (``same_dim``); a static dim is a group of its own."""
    group = {}
    for k, ax in positions:
        d = carry_avals[k].shape[ax]
        group[(k, ax)] = ("pos", k, ax)
        if is_symbolic(d):
            for q in positions:
                if q == (k, ax):
                    break
                e = carry_avals[q[0]].shape[q[1]]
                if is_symbolic(e) and same_dim(d, e):
                    group[(k, ax)] = group[q]
                    break
    return group


def _by_dim(returned):
    """``[(position, dim)]`` grouped into lists of equal dims (``same_dim``), in order."""
    parts = []
    for p, d in returned:
        for part in parts:
            if same_dim(part[0][1], d):
                part.append((p, d))
                break
        else:
            parts.append([(p, d)])
    return parts


def _check_carry_structure(name, in_tree, in_avals, out_tree, out_leaves):
    if out_tree != in_tree:
        raise TypeError(f"{name}: the loop body must return the same structure as its carried "
                        f"arguments: got {out_tree}, expected {in_tree}")
    for k, (a, x) in enumerate(zip(in_avals, out_leaves)):
        b = typeof(x)
        if a.dtype != b.dtype:
            raise TypeError(f"{name}: carried value {k} enters the loop as {a.dtype.name} but the body "
                            f"returns {b.dtype.name}; convert it with .astype({a.dtype.name})")
        if a.ndim != b.ndim:
            raise TypeError(f"{name}: carried value {k} enters the loop with rank {a.ndim} but the body "
                            f"returns rank {b.ndim} ({describe_shapes(a, b)})")
