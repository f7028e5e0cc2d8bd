"""The loop expansion strategy: which carried dimensions become loop-carried values.

A single-pass tracer sees only iteration 0, so the body is traced under an assumption
and re-traced until the assumption holds (a small fixpoint, usually one or two passes):

1. Each symbolic dim of a carried array starts *invariant*: the body sees the enclosing
   scope's dim (captured as a constant, like the seed's overview program, where the
   body's ``a + a0`` type-checks because both use the same captured dim).
   With ``preserve_dimensions=False`` (``allow_array_resizing=True``) every occurrence of
   a symbolic dim is instead its own loop-carried value from the start, as the seed
   prescribes; then ``b + b_`` inside the body is an error even when ``b0`` fed both.
2. If the body returns a different dim at an invariant position, that position becomes
   *variant*: a loop-carried implicit value (one per dim shared by several arguments
   when dimensions are preserved, one per occurrence otherwise), and the body is traced
   again. Static dims that change become variant the same way.
3. With preserved dimensions, positions that shared a dim at input must share one at
   output too, otherwise the seed's "dimensions are not the same any more" error.

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

    def __init__(self, positions):
        self.positions = positions


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
    variant = set()
    if not preserve:
        variant = {(k, ax) for k, a in enumerate(carry_avals) for ax, d in enumerate(a.shape) if is_symbolic(d)}
    nprefix = len(prefix_avals)
    for _ in range(1 + sum(a.ndim for a in carry_avals)):
        implicit, implicit_type, carry_type = deduce_input_type(
            carry_init, lambda k, ax, d: (k, ax) in variant, share=preserve, first_index=nprefix)
        in_type = tuple((a, True) for a in prefix_avals) + implicit_type + carry_type + tuple(
            (a, True) for a in suffix_avals)
        slot = {(k, ax): d.val - nprefix for k, (a, _) in enumerate(carry_type)
                for ax, d in enumerate(a.shape) if isinstance(d, DBIdx)}

        def hook(arg_tracers, out_leaves, nimplicit=len(implicit), slot=slot):
            ncarry = len(carry_avals)
            carries_out, extras = out_leaves[:ncarry], out_leaves[ncarry:]
            carry_in = arg_tracers[nprefix + nimplicit:nprefix + nimplicit + ncarry]
            new_dims = [None] * nimplicit
            first_position = {}
            grow = set()
            for k, (xi, xo) in enumerate(zip(carry_in, carries_out)):
                ai, ao = typeof(xi), typeof(xo)
                for ax, (di, do) in enumerate(zip(ai.shape, ao.shape)):
                    if (k, ax) in slot:
                        c = slot[(k, ax)]
                        if new_dims[c] is None:
                            new_dims[c], first_position[c] = do, k
                        elif not same_dim(new_dims[c], do):
                            raise TypeError(
                                f"{name}: the loop body returns arrays whose dimensions were the same at "
                                f"input but are not the same any more at output (carried values "
                                f"{first_position[c]} and {k}, axis {ax}); pass "
                                "allow_array_resizing=True to let them differ")
                    elif not same_dim(di, do):
                        grow.add((k, ax))
            if grow:
                raise _Retrace(grow)
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
                dims = {id(carry_avals[k].shape[ax]) for k, ax in grown
                        if is_symbolic(carry_avals[k].shape[ax])}
                grown |= {(k, ax) for k, a in enumerate(carry_avals) for ax, d in enumerate(a.shape)
                          if is_symbolic(d) and id(d) in dims}
            if grown <= variant:
                raise AssertionError("loop expansion did not converge")
            variant |= grown
            continue
        return LoopBody(prog, implicit, len(implicit), in_type)
    raise AssertionError("loop expansion did not converge")


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
