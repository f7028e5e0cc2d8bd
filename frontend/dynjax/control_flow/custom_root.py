"""``lax.custom_root``: a root finder differentiated by the implicit function theorem.

``custom_root(f, initial_guess, solve, tangent_solve, has_aux=False)`` returns
``solve(f, initial_guess)``, a root ``x*`` of ``f`` (e.g. Newton's method in a
``while_loop``). Its derivative with respect to the values ``f`` closes over (its
parameters ``p``) is not taken through ``solve``'s iterations: from ``f(x*(p), p) = 0``,

    ∂f/∂x · x*' = -∂f/∂p · p'      so      x*' = -tangent_solve(g, ∂f/∂p · p')

where ``g(v) = ∂f/∂x · v`` is ``f`` linearized at the root (JAX's semantics; the initial
guess gets a zero derivative, and so does anything ``solve`` closes over beyond ``f``).

It is a composition, not a primitive: ``f`` and ``solve`` are closure-converted (traced
into jaxprs whose closed-over values become explicit), and the root is a ``custom_jvp``
function of ``f``'s floating-point parameters whose jvp rule is the formula above. The
tangent is computed by ``tangent_solve`` on a linear function (a ``jvp`` of ``f``), so it
is linear in ``p'``: reverse mode transposes it (``tangent_solve`` must then be
transposable, e.g. ``y / g(1.0)``, ``jnp.linalg.solve`` of ``jacobian(g)``, or a
``custom_linear_solve``), and ``vmap`` batches it, in every order.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..core.avals import is_inexact_dtype
from ..core.errors import api_boundary
from ..core.interpret import eval_jaxpr
from ..core.jaxpr import Var
from ..core.pytree import tree_flatten, tree_unflatten
from ..core.trace import leaf_avals, typeof
from .linear_solve import trace_vector_fun, vector_function

__all__ = ["custom_root"]


def dim_inputs(jaxpr) -> set:
    """The positions of the inputs of ``jaxpr`` used as a dim of another input's type."""
    pos = {id(v): i for i, v in enumerate(jaxpr.invars)}
    return {pos[id(d)] for v in jaxpr.invars for d in v.aval.shape if isinstance(d, Var) and id(d) in pos}


def eval_with_dims_of_args(jaxpr, values):
    """``eval_jaxpr`` where an input used as a dim of another input's type takes that dim
    from the value actually passed for the other input: a size passed as an operand of a
    call is then the very dim of the arrays' types, not an equal copy."""
    from ..transforms.custom_batching import dims_of_args
    return eval_jaxpr(jaxpr, [], *dims_of_args(jaxpr, values, [False] * len(values)))


@api_boundary
def custom_root(f: Callable, initial_guess: Any, solve: Callable, tangent_solve: Callable, has_aux: bool = False):
    """Find a root of ``f`` with ``solve(f, initial_guess)``, differentiated implicitly
    (JAX's ``lax.custom_root``). ``tangent_solve(g, y)`` solves the linear system
    ``g(x) = y`` for the linearization ``g`` of ``f`` at the root. With ``has_aux``,
    ``solve`` returns ``(root, aux)`` and so does this function; ``aux`` is not differentiated."""
    from ..transforms.custom import custom_jvp
    from ..transforms.jvp import jvp
    who = "custom_root"
    for fun, name in ((f, "f"), (solve, "solve"), (tangent_solve, "tangent_solve")):
        if not callable(fun):
            raise TypeError(f"{who}: {name} must be a function, got {type(fun).__name__}")
    leaves, tree = tree_flatten(initial_guess)
    avals = [a.strip_weak_type() for a in leaf_avals(leaves, lambda k, x: (
        f"{who}: initial_guess must be a pytree of arrays, got a leaf of type {type(x).__name__}"))]
    if not all(is_inexact_dtype(a.dtype) for a in avals):
        raise TypeError(f"{who}: initial_guess must hold floating-point (or complex) arrays, got "
                        f"{[a.str_short() for a in avals]}")

    aux_trees = {}

    def on_vector(fun, what, aux):
        return vector_function(fun, tree, who, what, "initial_guess", "root", aux, aux_trees)

    # f with its parameters explicit: f_jaxpr(params..., x...) -> residual leaves
    f_jaxpr, f_consts, _ = trace_vector_fun(on_vector(f, "f", False), avals, who, "f")
    # solve, closure-converted; what it closes over (f's parameters included) is not differentiated
    s_jaxpr, s_consts, _ = trace_vector_fun(on_vector(lambda x0: solve(f, x0), "solve", has_aux), avals, who,
                                            "solve")
    aux_tree = aux_trees["solve"] if has_aux else None
    nx = len(leaves)
    # inputs that are dims of other inputs' types are taken from those (eval_with_dims_of_args):
    # a placeholder stands for them, so no size travels as an operand of its own
    s_consts = [np.int64(0) if k in dim_inputs(s_jaxpr) else c for k, c in enumerate(s_consts)]
    f_consts = [np.int64(0) if k in dim_inputs(f_jaxpr) else c for k, c in enumerate(f_consts)]
    diff_pos = [k for k, c in enumerate(f_consts) if is_inexact_dtype(typeof(c).dtype)]
    fixed = [c for k, c in enumerate(f_consts) if k not in diff_pos]

    def f_flat(params, xs, fixed_vals):
        full, it, jt = [], iter(params), iter(fixed_vals)
        for k in range(len(f_consts)):
            full.append(next(it) if k in diff_pos else next(jt))
        return eval_with_dims_of_args(f_jaxpr, full + list(xs))

    # the solver's values and f's integer values are arguments, never closed over (the rule
    # may run in a later trace); the rule ignores their tangents: they are not differentiated
    def root(params, x0, solve_consts, fixed_vals):
        return list(eval_with_dims_of_args(s_jaxpr, list(solve_consts) + list(x0)))

    root = custom_jvp(root)

    @root.defjvp
    def root_jvp(primals, tangents):
        params, x0, solve_consts, fixed_vals = primals
        params_dot = tangents[0]
        out = root(params, x0, solve_consts, fixed_vals)
        sol = out[:nx]
        _, rhs = jvp(lambda ps: f_flat(ps, sol, fixed_vals), (list(params),), (list(params_dot),))

        def g(v):
            v_leaves, v_tree = tree_flatten(v)
            if v_tree != tree:
                raise TypeError(f"{who}: the linearized f takes a value with the structure of "
                                f"initial_guess ({tree}), got {v_tree}")
            _, t = jvp(lambda xs: f_flat(params, xs, fixed_vals), (list(sol),), (list(v_leaves),))
            return tree_unflatten(tree, list(t))
        sol_dot = tangent_solve(g, tree_unflatten(tree, list(rhs)))
        d_leaves, d_tree = tree_flatten(sol_dot)
        if d_tree != tree:
            raise TypeError(f"{who}: tangent_solve must return a value with the structure of "
                            f"initial_guess ({tree}), got {d_tree}")
        from ..numpy import zeros_like
        t_out = [-d for d in d_leaves] + [zeros_like(a) for a in out[nx:]]
        return out, t_out

    params = [f_consts[k] for k in diff_pos]
    outs = root(params, list(leaves), list(s_consts), list(fixed))
    x = tree_unflatten(tree, outs[:nx])
    if has_aux:
        return x, tree_unflatten(aux_tree, outs[nx:])
    return x
