"""``linear_transpose(fun, *primals)``: the transpose of a linear function, as JAX's.

``fun`` is traced once, with the types of ``primals`` (their values are not used; a
``ShapeDtypeStruct`` works too), into a jaxpr in a scope nested in the caller's, so the
input types keep the caller's dynamic dims. Calling the returned function with an output
cotangent runs that jaxpr backwards with ``backward_pass`` (``transpose.py``), the same
machinery ``vjp`` transposes its linear jaxprs with: its inputs are the linear
(``UndefinedPrimal``) values, the values ``fun`` closes over are known.

Errors follow JAX: mixing integer and floating-point inputs and outputs is a ``TypeError``,
so is a cotangent whose structure or type differs from the output's; a function that is not
linear in its inputs (``sin(x)``, ``x * x``) raises ``NotImplementedError`` naming the
primitive when the transpose is called (as JAX), before any cotangent is computed. An affine function (``x + 1``) is transposed
as its linear part, as in JAX.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..core.avals import is_inexact_dtype, make_aval, same_dim
from ..core.errors import api_boundary
from ..core.expansion import trace_nested
from ..core.jaxpr import Var
from ..core.primitive import transpose_rules
from ..core.pytree import tree_flatten, tree_unflatten
from ..core.trace import typeof
from ..lax import primitives as P
from .transpose import UndefinedPrimal, backward_pass, zeros

__all__ = ["linear_transpose"]

#: Primitives linear in each operand separately: applied to two linear values, not linear.
_BILINEAR = {P.mul_p, P.dot_general_p}


def _input_aval(x, k):
    from ..tracing import ShapeDtypeStruct
    if isinstance(x, ShapeDtypeStruct):
        if any(d is None for d in x.shape):
            raise TypeError(f"linear_transpose: primal {k} is a ShapeDtypeStruct with a dynamic size; "
                            "pass an array (a traced one inside qjit) instead")
        return make_aval(tuple(x.shape), np.dtype(x.dtype))
    try:
        return typeof(x)
    except TypeError:
        raise TypeError(f"linear_transpose: primal {k} is a {type(x).__name__}, not an array, a "
                        "scalar or a ShapeDtypeStruct") from None


def _check_linear(jaxpr, nconsts):
    """Raise ``NotImplementedError`` for an equation that is not linear in the inputs."""
    linear = {id(v) for v in jaxpr.invars[nconsts:]}
    for eqn in jaxpr.eqns:
        flags = [isinstance(a, Var) and id(a) in linear for a in eqn.invars]
        if not any(flags):
            continue
        name = eqn.primitive.name
        if eqn.primitive not in transpose_rules:
            raise NotImplementedError(
                f"linear_transpose: the function is not linear in its inputs: transpose rule (for "
                f"reverse-mode differentiation) for '{name}' not implemented")
        if (eqn.primitive in _BILINEAR and sum(flags) > 1) or (eqn.primitive is P.div_p and flags[1]):
            raise NotImplementedError(
                f"linear_transpose: the function is not linear in its inputs: '{name}' of two values "
                "that depend on the inputs" if eqn.primitive in _BILINEAR else
                "linear_transpose: the function is not linear in its inputs: division by a value that "
                "depends on the inputs")
        linear.update(id(v) for v in eqn.outvars)


@api_boundary
def linear_transpose(fun: Callable, *primals, reduce_axes=()) -> Callable:
    """Transpose the linear function ``fun`` at inputs of the types of ``primals``.

    Returns ``f_transpose(out_cotangent)``, which gives a tuple with one input cotangent per
    primal (zeros for an input the output does not depend on). ``fun`` must be linear in
    its inputs; it may close over other values. ``reduce_axes`` is accepted for JAX's
    signature and must be empty (JAX deprecated it)."""
    if not callable(fun):
        raise TypeError(f"linear_transpose: the first argument must be a function, got {type(fun).__name__}")
    if tuple(reduce_axes):
        raise NotImplementedError("linear_transpose: reduce_axes is not supported (JAX deprecated it)")
    leaves, in_tree = tree_flatten(tuple(primals))
    in_avals = [_input_aval(x, k).strip_weak_type() for k, x in enumerate(leaves)]

    def flat(*xs):
        return fun(*tree_unflatten(in_tree, list(xs)))

    prog = trace_nested(flat, tuple((a, True) for a in in_avals), tree_flatten, expand=False)
    jaxpr, consts, out_tree = prog.jaxpr, list(prog.consts), prog.out_tree
    nconsts = len(consts)
    out_avals = [v.aval for v in jaxpr.outvars]
    in_float = [is_inexact_dtype(a.dtype) for a in in_avals]
    out_float = [is_inexact_dtype(a.dtype) for a in out_avals]
    if not ((all(in_float) and all(out_float)) or (not any(in_float) and not any(out_float))):
        raise TypeError("linear_transpose only supports [float or complex] -> [float or complex], and "
                        f"integer -> integer functions, but got {[a.dtype for a in in_avals]} -> "
                        f"{[a.dtype for a in out_avals]}.")
    # the output types with the caller's dims (jaxpr input dims replaced by the primals')
    dim_of = {id(v): d for v, d in zip(jaxpr.invars, consts)}

    def caller_aval(a):
        return a.update(shape=tuple(dim_of.get(id(d), d) if isinstance(d, Var) else d for d in a.shape))

    expected = [caller_aval(a) for a in out_avals]

    def transpose_fun(out_cotangent):
        _check_linear(jaxpr, nconsts)      # when called, as JAX raises it
        ct_leaves, ct_tree = tree_flatten(out_cotangent)
        if ct_tree != out_tree:
            raise TypeError(f"linear_transpose: cotangent tree does not match function output, expected "
                            f"{out_tree} but got {ct_tree}")
        cts = []
        for k, (c, e) in enumerate(zip(ct_leaves, expected)):
            try:
                a = typeof(c)
            except TypeError:
                raise TypeError(f"linear_transpose: cotangent {k} is a {type(c).__name__}, not an "
                                "array or a scalar") from None
            ok = a.ndim == e.ndim and all(same_dim(p, q) for p, q in zip(a.shape, e.shape))
            if not ok or (a.dtype != e.dtype and not (a.weak_type and a.ndim == 0
                                                      and np.can_cast(a.dtype, e.dtype, "same_kind"))):
                raise TypeError(f"linear_transpose: cotangent type does not match function output, "
                                f"expected {e.str_short()} but got {a.str_short()} (cotangent {k})")
            if a.dtype != e.dtype:
                c = P.convert_element_type_p.bind(c, new_dtype=e.dtype, weak_type=False)
            cts.append(c)
        args = consts + [UndefinedPrimal(a) for a in in_avals]
        in_cts = backward_pass(jaxpr, args, cts)[nconsts:]
        out = [zeros(a) if c is None else c for c, a in zip(in_cts, in_avals)]
        return tuple(tree_unflatten(in_tree, out))

    return transpose_fun
