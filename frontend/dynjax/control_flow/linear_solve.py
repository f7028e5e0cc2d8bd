"""``lax.custom_linear_solve``: a linear solve with implicit derivatives, as a primitive.

``custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False,
has_aux=False)`` returns ``x = solve(matvec, b)``, the solution of ``matvec(x) = b``, and
differentiates it as the solution of a linear system, never through ``solve``'s own
iterations (JAX's semantics):

* forward mode: ``x' = solve(matvec, b' - matvec'(x))``, where ``matvec'`` is the
  derivative of ``matvec`` with respect to the values it closes over (a matrix that is
  itself a function of the inputs);
* transposition (reverse mode), linear in ``b``: ``ct_b = transpose_solve(vecmat, ct_x)``,
  where ``vecmat`` is ``matvec``'s transpose (``linear_transpose``); with ``symmetric``,
  ``vecmat = matvec`` and ``transpose_solve = solve``.

Why a primitive, not a composition of ``custom_jvp`` / ``custom_vjp``: the tangent ``x'`` is
again a linear solve, and reverse mode transposes it. With ``custom_jvp`` the tangent would
be traced through ``solve`` (typically a ``while_loop``, which cannot be transposed), and
``custom_vjp`` gives no forward mode. A primitive whose transpose is the same primitive
with ``(matvec, solve)`` and ``(vecmat, transpose_solve)`` swapped gives both, in every
order (``jvp`` of ``grad``, ``vmap`` of either).

The equation holds four nested programs, each taking its own constants (the values the
user's function closes over) and then the vector's leaves:

    custom_linear_solve[const_lengths=(m, v, s, t) jaxprs=(matvec, vecmat, solve, tsolve)
                        num_aux=k]  Cm Cv Cs Ct b...   ->  x... aux...

``vecmat`` and ``tsolve`` are ``None`` without ``transpose_solve``; then only reverse mode
is an error. Evaluating, typing, lowering and costing the equation use ``solve`` alone.
The results have ``b``'s types (dims included), followed by ``solve``'s auxiliary outputs
with ``has_aux``. The derivative rules are in ``transforms/linear_solve_rules.py``.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from ..core.avals import make_aval, same_dim
from ..core.errors import api_boundary
from ..core.expansion import trace_nested
from ..core.interpret import eval_jaxpr
from ..core.jaxpr import Literal, Var
from ..core.primitive import Primitive, abstract_eval_rules, as_dim, impl_rules
from ..core.pytree import tree_flatten, tree_unflatten
from ..core.trace import leaf_avals, typeof
from ..lax.base import aval as aval_of
from ..lowering.core import register_lowering

__all__ = ["custom_linear_solve", "custom_linear_solve_p", "bind_linear_solve", "split_operands",
           "trace_vector_fun", "check_like_vector"]

custom_linear_solve_p = Primitive("custom_linear_solve", multiple_results=True)

_SOLVE, _VECTOR = 2, 4     # the solve program's place among the four; the vector's block


# ----------------------------------------------------------------------------------------------
# Tracing the user's functions
# ----------------------------------------------------------------------------------------------
def trace_vector_fun(fun: Callable, vec_avals, who: str, what: str):
    """Trace ``fun`` (taking the flat leaves of a vector, returning a pytree) in a nested
    scope. Returns ``(jaxpr, consts, out_tree)``; the jaxpr takes ``consts`` (captured
    values: closed-over arrays and dims) then the leaves."""
    prog = trace_nested(fun, tuple((a, True) for a in vec_avals), tree_flatten, expand=False)
    inputs = {id(v) for v in prog.jaxpr.invars}
    for k, v in enumerate(prog.jaxpr.outvars):
        if any(isinstance(d, Var) and id(d) not in inputs for d in v.aval.shape):
            raise TypeError(f"{who}: output {k} of {what} has a dimension computed inside the function; "
                            "its outputs may only have static dimensions or dimensions of its inputs")
    return prog.jaxpr, list(prog.consts), prog.out_tree


def check_like_vector(leaves, tree, vec_leaves, vec_tree, who, what, vec_name):
    """JAX's checks of a function's output against the vector: a ``TypeError`` for another
    pytree structure, a ``ValueError`` for other shapes. Returns the leaves, converted to the
    vector's dtypes (a float32 solution of a float64 system is a float64 one)."""
    from ..lax import api as lax
    if tree != vec_tree:
        raise TypeError(f"{who}: {what}() output pytree structure must match {vec_name}, got {tree} and {vec_tree}.")
    out = []
    for x, v in zip(leaves, vec_leaves):
        a, e = typeof(x), typeof(v)
        if a.ndim != e.ndim or not all(same_dim(p, q) for p, q in zip(a.shape, e.shape)):
            raise ValueError(f"{who}: {what}() output shapes must match {vec_name}, got "
                             f"{[typeof(y).str_short() for y in leaves]} and "
                             f"{[typeof(y).str_short() for y in vec_leaves]}")
        out.append(x if a.dtype == e.dtype else lax.convert_element_type(x, e.dtype))
    return out


def vector_function(fun: Callable, tree, who: str, what: str, vec_name: str, answer: str, aux: bool,
                    aux_trees: dict):
    """``fun`` of a vector (a pytree of ``tree``'s structure) as a function of its flat leaves,
    for ``trace_vector_fun``: it returns the leaves of ``fun``'s result, checked against the
    vector (``check_like_vector``), then, with ``aux``, the leaves of the aux value ``fun``
    returns beside it (their structure kept in ``aux_trees[what]``)."""
    def flat(*xs):
        out = fun(tree_unflatten(tree, list(xs)))
        if aux:
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise TypeError(f"{who}(has_aux=True): {what} must return a pair ({answer}, aux), got "
                                f"{type(out).__name__}")
            out, aux_out = out
        x_leaves, x_tree = tree_flatten(out)
        x_leaves = check_like_vector(x_leaves, x_tree, list(xs), tree, who, what, vec_name)
        aux_leaves, aux_trees[what] = tree_flatten(aux_out) if aux else ([], None)
        return x_leaves + aux_leaves
    return flat


def bind_linear_solve(funs, consts, b_leaves, num_aux: int):
    """Bind one equation: ``funs`` are the four jaxprs (two may be None), ``consts`` their
    constant lists, ``b_leaves`` the right-hand side."""
    lengths = tuple(len(c) for c in consts)
    flat_consts = [x for c in consts for x in c]
    return custom_linear_solve_p.bind(*flat_consts, *b_leaves, const_lengths=lengths, jaxprs=tuple(funs),
                                      num_aux=num_aux)


def _as_leaf(x, who):
    if isinstance(x, (list, tuple)):
        x = np.asarray(x)
    leaf_avals([x], lambda k, x: f"{who}: b must be a pytree of arrays, got a leaf of type {type(x).__name__}")
    return x


@api_boundary
def custom_linear_solve(matvec: Callable, b: Any, solve: Callable, transpose_solve: Optional[Callable] = None,
                        symmetric: bool = False, has_aux: bool = False):
    """The solution ``x`` of ``matvec(x) = b`` computed by ``solve(matvec, b)``, with
    derivatives by implicit differentiation (JAX's ``lax.custom_linear_solve``).

    ``matvec``: the linear map, a function of a vector with ``b``'s structure. ``solve``:
    ``solve(matvec, b) -> x``. ``transpose_solve``: ``transpose_solve(vecmat, b) -> x``, which
    solves the transposed system (``vecmat`` is ``matvec``'s transpose, or ``matvec`` itself
    with ``symmetric``); needed for reverse mode unless ``symmetric``, where ``solve`` then
    serves. With ``has_aux``, ``solve`` (and ``transpose_solve``) return ``(x, aux)``, and so
    does this function; ``aux`` is not differentiated."""
    who = "custom_linear_solve"
    for f, name in ((matvec, "matvec"), (solve, "solve")):
        if not callable(f):
            raise TypeError(f"{who}: {name} must be a function, got {type(f).__name__}")
    if transpose_solve is not None and not callable(transpose_solve):
        raise TypeError(f"{who}: transpose_solve must be a function or None, got {type(transpose_solve).__name__}")
    leaves, tree = tree_flatten(b)
    leaves = [_as_leaf(x, who) for x in leaves]
    if not leaves:
        raise TypeError(f"{who}: b must contain at least one array")
    avals = [typeof(x).strip_weak_type() for x in leaves]
    leaves = [np.asarray(x, a.dtype) if not hasattr(x, "aval") and np.ndim(x) == 0 else x
              for x, a in zip(leaves, avals)]
    nvec = len(leaves)
    box = {}

    def on_vector(fun, what, aux):
        return vector_function(fun, tree, who, what, "b", "x", aux, box)

    mv, mv_c, _ = trace_vector_fun(on_vector(matvec, "matvec", False), avals, who, "matvec")
    s, s_c, _ = trace_vector_fun(on_vector(lambda v: solve(matvec, v), "solve", has_aux), avals, who, "solve")
    num_aux = len(s.outvars) - nvec
    if transpose_solve is None and symmetric:
        vm, vm_c, ts, ts_c = mv, mv_c, s, s_c
    elif transpose_solve is not None:
        if symmetric:
            vecmat, (vm, vm_c) = matvec, (mv, mv_c)
        else:
            from ..transforms.linear_transpose import linear_transpose

            def vecmat(v):
                (ct,) = linear_transpose(matvec, tree_unflatten(tree, leaves))(v)
                return ct
            vm, vm_c, _ = trace_vector_fun(on_vector(vecmat, "vecmat", False), avals, who, "the transpose of matvec")
        ts, ts_c, _ = trace_vector_fun(on_vector(lambda v: transpose_solve(vecmat, v), "transpose_solve", has_aux),
                                       avals, who, "transpose_solve")
    else:
        vm = ts = None
        vm_c = ts_c = []
    outs = bind_linear_solve((mv, vm, s, ts), (mv_c, vm_c, s_c, ts_c), leaves, num_aux)
    x = tree_unflatten(tree, list(outs[:nvec]))
    if has_aux:
        return x, tree_unflatten(box["solve"], list(outs[nvec:]))
    return x


# ----------------------------------------------------------------------------------------------
# Evaluation, typing, lowering: the solve program
# ----------------------------------------------------------------------------------------------
def split_operands(operands: Sequence[Any], const_lengths) -> List[List[Any]]:
    """The four constant blocks and the vector leaves."""
    out, k = [], 0
    for n in const_lengths:
        out.append(list(operands[k:k + n]))
        k += n
    out.append(list(operands[k:]))
    return out


def solve_operand_indices(const_lengths, num_operands: int) -> List[int]:
    """The positions of the solve program's operands (its constants, then the vector)."""
    start = sum(const_lengths[:_SOLVE])
    return list(range(start, start + const_lengths[_SOLVE])) + list(range(sum(const_lengths), num_operands))


def _solve_inputs(operands, const_lengths):
    blocks = split_operands(operands, const_lengths)
    return blocks[_SOLVE] + blocks[_VECTOR]


def _impl(*operands, const_lengths, jaxprs, num_aux):
    return [np.asarray(x) for x in eval_jaxpr(jaxprs[_SOLVE], [], *_solve_inputs(operands, const_lengths))]


def _abstract_eval(*operands, const_lengths, jaxprs, num_aux):
    b = split_operands(operands, const_lengths)[_VECTOR]
    solve = jaxprs[_SOLVE]
    ins = _solve_inputs(operands, const_lengths)
    if len(solve.invars) != len(ins):
        raise TypeError(f"custom_linear_solve: the solve program takes {len(solve.invars)} inputs, "
                        f"got {len(ins)} operands")
    pos = {id(v): i for i, v in enumerate(solve.invars)}

    def dim(d):
        if isinstance(d, (int, np.integer)):
            return int(d)
        if isinstance(d, Literal):
            return int(d.val)
        return as_dim(ins[pos[id(d)]])
    outs = [aval_of(x).strip_weak_type() for x in b]
    for v in solve.outvars[len(b):]:
        outs.append(make_aval(tuple(dim(d) for d in v.aval.shape), v.aval.dtype, v.aval.weak_type))
    return outs


def _lowering(ctx, eqn, *args, const_lengths, jaxprs, num_aux):
    return ctx.lower_jaxpr(jaxprs[_SOLVE], _solve_inputs(list(args), const_lengths))


impl_rules[custom_linear_solve_p] = _impl
abstract_eval_rules[custom_linear_solve_p] = _abstract_eval
register_lowering(custom_linear_solve_p, _lowering)


def _fixed_inputs(eqn):
    """Every nested program takes its constant block and the vector, which never change."""
    lengths = eqn.params["const_lengths"]
    nb = len(eqn.invars) - sum(lengths)
    start = np.cumsum((0,) + tuple(lengths))
    out = []
    for k, j in enumerate(eqn.params["jaxprs"]):
        if j is None:
            continue
        ops = list(range(start[k], start[k] + lengths[k])) + list(range(sum(lengths), sum(lengths) + nb))
        out.append([(i, int(o)) for i, o in enumerate(ops)])
    return out


def register_with_the_planner_and_cost_model():
    """Called once everything is imported (``transforms/linear_solve_rules.py``)."""
    from ..cost_model import _WHOLE, cost_rules, jaxpr_cost
    from ..execution import analysis
    analysis.fixed_input_rules[custom_linear_solve_p] = _fixed_inputs

    def cost(eqn, sz):
        return jaxpr_cost(eqn.params["jaxprs"][_SOLVE], sz)
    cost_rules[custom_linear_solve_p] = cost
    _WHOLE.add(custom_linear_solve_p)
