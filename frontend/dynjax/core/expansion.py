"""Input/output type deduction and parsing: the seed's general binding algorithm.

Python tracers carry their dims inside their avals ("collapsed"); jaxprs pass dims as
separate implicit values ("expanded"). The functions here convert between the two:

* ``deduce_input_type(args, is_implicit, share)`` - expand arguments for a nested
  program: dims chosen by ``is_implicit`` become implicit arguments (``DBIdx``); other
  symbolic dims stay references to the enclosing scope's tracers.
* ``parse_input_type(trace, in_type)`` - create the argument tracers of a nested scope;
  dims that refer to the enclosing scope are captured as constants.
* ``expand_outputs(outs, inputs)`` - prepend, as implicit outputs, every output dim that
  is neither an input nor another output.
* ``trace_nested(fun, in_type)`` - run the whole ``abstractEval`` step: open a scope,
  parse the input type, call ``fun``, expand its outputs and close the scope.

Creating the result tracers in the caller's scope is the primitive's abstract
evaluation: the nested jaxpr's ``out_type`` maps ``InDBIdx`` to operands and
``OutDBIdx`` to other results (see ``JaxprTrace.process_primitive``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from .avals import DBIdx, dim_aval, make_aval
from .jaxpr import Jaxpr, Literal
from .staging import JaxprTrace, new_jaxpr_trace
from .trace import Tracer, current_trace, typeof


def is_symbolic(d) -> bool:
    return not isinstance(d, int)


def deduce_input_type(args: Sequence[Any],
                      is_implicit: Callable[[int, int, Any], bool] = lambda k, ax, d: is_symbolic(d),
                      share: bool = True, first_index: int = 0,
                      slot_key: Optional[Callable[[int, int, Any], Any]] = None):
    """Expand ``args`` with implicit dimension arguments.

    ``is_implicit(k, axis, dim)`` chooses the dims of argument ``k`` that become implicit
    arguments; the others stay as they are (ints, or references to the enclosing scope's
    dim tracers, which the nested scope captures as constants). With ``share`` one implicit
    argument stands for each distinct symbolic dim (by identity); otherwise every chosen
    position gets its own; ``slot_key(k, axis, dim)``, if given, decides instead: the chosen
    positions with equal keys share one implicit argument. Returns
    ``(implicit_dims, implicit_in_type, args_in_type)`` where
    the ``DBIdx`` indices count from ``first_index`` (the position of the first implicit
    argument in the final input type).
    """
    implicit: List[Any] = []
    slot = {}
    rows = []
    for k, a in enumerate(typeof(x) for x in args):
        row = []
        for ax, d in enumerate(a.shape):
            if not is_implicit(k, ax, d):
                row.append(d)
                continue
            if slot_key is not None:
                key = slot_key(k, ax, d)
            else:
                key = id(d) if share and is_symbolic(d) else ("pos", k, ax)
            if key not in slot:
                slot[key] = len(implicit)
                implicit.append(d)
            row.append(DBIdx(first_index + slot[key]))
        rows.append(a.update(shape=tuple(row), weak_type=False))
    return implicit, tuple((dim_aval(), False) for _ in implicit), tuple((a, True) for a in rows)


def parse_input_type(trace: JaxprTrace, in_type, names=(), same_as=None) -> List[Tracer]:
    """Create argument tracers in ``trace`` for an in_type (outer dims get captured). The
    leading integer inputs may be given ``names`` for their symbolic sizes (``n``).

    ``same_as``, if given, holds per input an enclosing scope's value that the input is
    known to equal on every run (or None). An integer scalar input equal to an outer size
    takes that size's symbolic expression, and stands for it in the nested scope: using the
    outer size there (a closed-over array of that size) refers to the input instead of
    capturing it again (``JaxprTrace.lift`` reuses a variable of equal expression). So the
    nested program's dims that are outer dims keep their expressions, and compare equal to
    the outer ones and to each other."""
    tracers: List[Tracer] = []
    for k, (aval, _) in enumerate(in_type):
        shape = []
        for d in aval.shape:
            if isinstance(d, DBIdx):
                shape.append(tracers[d.val])
            elif isinstance(d, Tracer):
                shape.append(trace.full_raise(d))
            else:
                shape.append(d)
        name = names[k] if k < len(names) else None
        outer = _enclosing_size(same_as[k]) if same_as is not None else None
        tracers.append(trace.new_arg(make_aval(shape, aval.dtype, aval.weak_type), name,
                                     sym=outer.sym if outer is not None else None))
    return tracers


def expand_outputs(outs: Sequence[Tracer], inputs: Sequence[Tracer]) -> Tuple[list, tuple]:
    """Prepend implicit outputs for dims of ``outs`` that are not inputs or outputs.

    Returns ``(expanded_outs, out_explicit)``.
    """
    known = {id(t) for t in inputs} | {id(o) for o in outs}
    implicit = []
    for o in outs:
        for d in typeof(o).shape:
            if isinstance(d, Tracer) and id(d) not in known:
                known.add(id(d))
                implicit.append(d)
    return implicit + list(outs), (False,) * len(implicit) + (True,) * len(outs)


def _enclosing_size(x):
    """``x`` when it is an integer scalar with a symbolic value, traced in the current
    staging scope or an enclosing one (a scope a program nested here may refer to)."""
    if getattr(x, "sym", None) is None:
        return None
    owner = getattr(x, "_trace", None)
    scope = current_trace()
    while isinstance(scope, JaxprTrace):
        if scope is owner:
            return x if owner.active else None
        scope = scope.parent
    return None


@dataclass
class NestedProgram:
    """A traced nested program in closed form (the seed's ``abstractEval`` result)."""
    jaxpr: Jaxpr                 # invars: consts + expanded inputs; outvars: expanded outputs
    consts: list                 # enclosing-scope values for the leading const invars
    out_tree: Any                # pytree structure of the explicit outputs
    num_implicit_out: int

    @property
    def nconsts(self) -> int:
        return len(self.consts)


def trace_nested(fun: Callable, in_type, out_tree_fn: Callable, expand: bool = True,
                 outputs_hook: Optional[Callable] = None, same_as=None) -> NestedProgram:
    """Trace ``fun`` in a fresh scope nested in the current one.

    ``fun`` receives the explicit argument tracers and returns a pytree;
    ``out_tree_fn(result)`` flattens it into ``(leaves, treedef)``. ``outputs_hook``, if
    given, may rewrite ``(arg_tracers, leaves)`` into the expanded output list itself
    (loops use it to emit one implicit output per carried dim); otherwise outputs are
    expanded with ``expand_outputs``. ``same_as`` (see ``parse_input_type``) names, per
    input in ``in_type``, the enclosing scope's value it is known to equal, if any (a cond
    branch receives exactly the operands): an outer size then keeps its expression inside.
    """
    parent = current_trace()
    parent = parent if isinstance(parent, JaxprTrace) else None
    with new_jaxpr_trace(parent) as scope:
        arg_tracers = parse_input_type(scope, in_type, same_as=same_as)
        explicit = [t for t, (_, e) in zip(arg_tracers, in_type) if e]
        result = fun(*explicit)
        leaves, tree = out_tree_fn(result)
        leaves = [scope.full_raise(x) for x in leaves]
        if outputs_hook is not None:
            outs, out_explicit = outputs_hook(arg_tracers, leaves)
        elif expand:
            inputs = list(arg_tracers) + [inner for _, inner in scope.captured]
            outs, out_explicit = expand_outputs(leaves, inputs)
        else:
            outs, out_explicit = leaves, (True,) * len(leaves)
        jaxpr, consts = scope.close(arg_tracers, outs, [e for _, e in in_type], out_explicit)
    return NestedProgram(jaxpr, consts, tree, out_explicit.count(False))


def shape_from_operands(aval, positions, operands, computed_dim_error):
    """The shape of a nested program's output ``aval`` in a call on ``operands``: static dims
    and literals as they are, a dim that is an input of the program (``positions``: the id of
    the input var -> its operand's index) the operand's value; a dim computed inside the
    program raises ``computed_dim_error()`` (an exception to raise)."""
    from .primitive import as_dim
    shape = []
    for d in aval.shape:
        if isinstance(d, (int, np.integer)):
            shape.append(int(d))
        elif isinstance(d, Literal):
            shape.append(int(d.val))
        elif id(d) in positions:
            shape.append(as_dim(operands[positions[id(d)]]))
        else:
            raise computed_dim_error()
    return tuple(shape)
