"""The call primitives behind ``custom_jvp`` / ``custom_vjp`` and what they share: the
rules a call carries (``_Rules``), how a call is evaluated, typed, lowered and bound, and
the checks of what the user's rules return. The package docstring (``__init__.py``)
describes the primitives' operands."""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, List, Sequence

import numpy as np

from ...core.avals import is_inexact_dtype, make_aval, same_dim
from ...core.expansion import shape_from_operands, trace_nested
from ...core.interpret import eval_jaxpr
from ...core.jaxpr import Var
from ...core.primitive import Primitive, abstract_eval_rules, impl_rules, transpose_rules
from ...core.pytree import tree_flatten, tree_unflatten
from ...core.trace import Tracer, leaf_avals, typeof
from ...lax import api as lax
from ...lax.base import aval as aval_of
from ...lowering.core import LoweringError, register_lowering
from ..jvp import Zero, instantiate
from ..transpose import backward_pass
from .symbolic import CustomVJPPrimal, SymbolicZero, from_symbolic, to_symbolic

__all__ = ["custom_jvp_call_p", "custom_vjp_call_p", "custom_lin_p", "CustomVJPForwardError"]

custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)
custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_lin_p = Primitive("custom_lin", multiple_results=True)

# JAX's message (grad, vjp and jacrev of a custom_vjp function work; use custom_jvp for jvp)
FORWARD_ERROR = "can't apply forward-mode autodiff (jvp) to a custom_vjp function."


class CustomVJPForwardError(LoweringError, TypeError):
    """``custom_lin`` was evaluated or lowered: a ``custom_vjp`` function under forward mode."""


# ----------------------------------------------------------------------------------------------
# The rules a call carries (held in the equation's params)
# ----------------------------------------------------------------------------------------------
class _Rules:
    """What one call of a ``custom_jvp`` / ``custom_vjp`` function needs for differentiation:
    the user's functions, the non-differentiable arguments, and the pytree structures of the
    differentiable arguments (``in_tree``, a tuple) and of the outputs (``out_tree``).

    A non-differentiable argument whose leaves include traced values is passed as operands of
    the call (the last ``num_nd`` of its constant block), not held here: its values then
    follow the call through every transformation (``vmap`` batches them). ``nondiff`` maps
    each non-differentiable position to ``(treedef, leaves, slots)``, where ``slots[i]`` is
    the index of leaf ``i`` among those operands, or None for a leaf held as is.

    The ``apply_*`` methods run the user's rules on flat lists of values and check what
    they return; the batched rules of a ``vmap``-ed call (``custom_batching.py``) provide
    the same methods."""

    def __init__(self, who, name, nargs, nondiff, num_nd, in_tree, out_tree, jvp=None, fwd=None, bwd=None,
                 symbolic_zeros=False):
        self.who = who
        self.name = name
        self.nargs = nargs
        self.nondiff = nondiff          # {position: (treedef, leaves, slots)}
        self.num_nd = num_nd
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.jvp, self.fwd, self.bwd = jvp, fwd, bwd
        self.symbolic_zeros = symbolic_zeros

    def _user_zeros(self, ts):
        """(Co)tangents for the user's rule: the symbolic ``Zero`` entries become
        ``SymbolicZero`` objects if the rule asked for them, arrays of zeros otherwise."""
        return [to_symbolic(t) if self.symbolic_zeros else instantiate(t) for t in ts]

    def __repr__(self):
        return f"<{self.who} {self.name}>"

    def nondiff_values(self, nd_ops=()):
        """The non-differentiable arguments, in order, with ``nd_ops`` (the call's operands
        for their traced leaves) put in."""
        return [_rebuild(self.nondiff[i], nd_ops) for i in sorted(self.nondiff)]

    def full_args(self, nd_ops, diff_leaves):
        """The positional arguments of ``fun``: the non-differentiable ones put back."""
        nondiff = {i: _rebuild(self.nondiff[i], nd_ops) for i in self.nondiff}
        return _merge(self.nargs, nondiff, tree_unflatten(self.in_tree, diff_leaves))

    # --- the user's rules on flat values ---------------------------------------------------------
    def apply_jvp(self, nd, args, tangents, out_avals=None):
        """``jvp(*nondiff, primals, tangents)`` on flat lists: returns the flat primal outputs and
        their tangents (in the outputs' types; ``Zero`` for outputs that are not inexact or
        that the rule returned as a ``SymbolicZero``). ``tangents`` may hold ``Zero``s."""
        res = self.jvp(*self.nondiff_values(nd), tree_unflatten(self.in_tree, args),
                       tree_unflatten(self.in_tree, self._user_zeros(tangents)))
        if not isinstance(res, (tuple, list)) or len(res) != 2:
            raise TypeError(f"custom_jvp: the JVP rule of {self.name} must return a pair "
                            f"(primal_out, tangent_out), got {type(res).__name__}")
        p_leaves, p_tree = tree_flatten(res[0])
        t_leaves, t_tree = tree_flatten(res[1])
        _check_structure(self, p_tree, "the primal output of the JVP rule")
        _check_leaves(self, p_leaves, "the primal output of the JVP rule")
        if t_tree != p_tree:
            raise TypeError(f"custom_jvp: the JVP rule of {self.name} returns a tangent of structure "
                            f"{t_tree} for a primal output of structure {p_tree}")
        t_out = [_as_tangent(self, t, p, k, "tangent output") for k, (t, p) in enumerate(zip(t_leaves, p_leaves))]
        return list(p_leaves), t_out

    def apply_fwd(self, nd, args, out_avals=None, perturbed=None):
        """``fwd(*args)``: returns ``(outputs, residual leaves, residual treedef)``. With
        symbolic zeros, each argument leaf is given as ``CustomVJPPrimal(value, perturbed)``
        (``perturbed[k]``: whether leaf ``k`` is differentiated; all of them if None)."""
        if self.symbolic_zeros:
            flags = [True] * len(args) if perturbed is None else perturbed
            args = [CustomVJPPrimal(x, p) for x, p in zip(args, flags)]
        res = self.fwd(*self.full_args(nd, args))
        if not isinstance(res, (tuple, list)) or len(res) != 2:
            raise TypeError(f"custom_vjp: the fwd function of {self.name} must return a pair "
                            f"(output, residuals), got {type(res).__name__}")
        out_leaves, out_tree = tree_flatten(res[0])
        _check_structure(self, out_tree, "the output of fwd")
        _check_leaves(self, out_leaves, "the output of fwd")
        res_leaves, res_tree = tree_flatten(res[1])
        leaf_avals(res_leaves, lambda k, x: (f"custom_vjp: the residuals of {self.name} must be arrays "
                                             f"(a pytree of them), got a {type(x).__name__}"))
        return list(out_leaves), list(res_leaves), res_tree

    def apply_bwd(self, nd, res, res_tree, cts, arg_avals):
        """``bwd(*nondiff, residuals, ct)`` on flat lists: one cotangent per differentiable
        argument leaf, in that leaf's type ``arg_avals[k]``, or None for a zero one (``None``
        or a ``SymbolicZero`` returned by ``bwd``). ``cts`` may hold ``Zero``s."""
        in_cts = self.bwd(*self.nondiff_values(nd), tree_unflatten(res_tree, list(res)),
                          tree_unflatten(self.out_tree, self._user_zeros(cts)))
        ndiff = len(self.in_tree.children)
        if isinstance(in_cts, list):
            in_cts = tuple(in_cts)
        if not isinstance(in_cts, tuple) or len(in_cts) != ndiff:
            got = f"a tuple of {len(in_cts)}" if isinstance(in_cts, tuple) else f"a {type(in_cts).__name__}"
            raise TypeError(f"custom_vjp: the bwd function of {self.name} must return a tuple with one "
                            f"cotangent per differentiable positional argument ({ndiff}), got {got}")
        leaves: List[Any] = []
        for i, (c, sub) in enumerate(zip(in_cts, self.in_tree.children)):
            if c is None or isinstance(c, SymbolicZero):
                leaves += [None] * sub.num_leaves
                continue
            c_leaves, c_tree = tree_flatten(c)
            if c_tree != sub:
                raise TypeError(f"custom_vjp: the cotangent {i} returned by bwd of {self.name} has the "
                                f"structure {c_tree} but the argument has {sub}")
            leaves += c_leaves
        return [None if c is None or isinstance(c, SymbolicZero) or a is None else _as_cotangent(self, c, a, k)
                for k, (c, a) in enumerate(zip(leaves, arg_avals))]


def _rebuild(spec, nd_ops):
    tree, leaves, slots = spec
    return tree_unflatten(tree, [x if k is None else nd_ops[k] for x, k in zip(leaves, slots)])


def _merge(nargs, nondiff, diff_args):
    it = iter(diff_args)
    return tuple(nondiff[i] if i in nondiff else next(it) for i in range(nargs))


def _fun_name(fun) -> str:
    return getattr(fun, "__name__", type(fun).__name__)


# ----------------------------------------------------------------------------------------------
# Evaluating, typing and lowering a call: the jaxpr of ``fun``
# ----------------------------------------------------------------------------------------------
def _call_impl(*operands, call_jaxpr, num_consts, rules):
    return [np.asarray(x) for x in eval_jaxpr(call_jaxpr, [], *operands)]


def _call_abstract(*operands, call_jaxpr, num_consts, rules):
    invars = call_jaxpr.invars
    if len(invars) != len(operands):
        raise TypeError(f"{rules.who}: the function's jaxpr takes {len(invars)} inputs but got "
                        f"{len(operands)} operands")
    pos = {id(v): i for i, v in enumerate(invars)}
    for v, x in zip(invars, operands):
        a = aval_of(x)
        if a.dtype != v.aval.dtype or a.ndim != v.aval.ndim:
            raise TypeError(f"{rules.who}: operand of type {a.str_short()} for an input of type "
                            f"{v.aval.str_short()}")
    return [make_aval(_result_shape(v.aval, pos, operands, rules, k), v.aval.dtype, v.aval.weak_type)
            for k, v in enumerate(call_jaxpr.outvars)]


def _result_shape(aval, pos, operands, rules, k):
    return shape_from_operands(aval, pos, operands, lambda: TypeError(_computed_dim_message(rules, k)))


def _computed_dim_message(rules, k):
    return (f"{rules.who}: output {k} of {rules.name} has a dimension computed inside the function; "
            "the outputs of a custom_jvp / custom_vjp function may only have static dimensions or "
            "dimensions of its inputs (compute the size outside and pass an array of that size in, "
            "or reshape the output to such a size)")


def _call_lowering(ctx, eqn, *args, call_jaxpr, num_consts, rules):
    return ctx.lower_jaxpr(call_jaxpr, list(args))


def _call_transpose(cts, *operands, call_jaxpr, num_consts, rules):
    """A call used linearly (a custom function applied to tangents): transpose its jaxpr."""
    return backward_pass(call_jaxpr, operands, cts)


for _p in (custom_jvp_call_p, custom_vjp_call_p):
    impl_rules[_p] = _call_impl
    abstract_eval_rules[_p] = _call_abstract
    register_lowering(_p, _call_lowering)
    transpose_rules[_p] = _call_transpose


def _register_with_the_planner():
    """The nested jaxpr takes the equation's operands in order: tell the execution planner
    (which checks the dims used inside nested programs)."""
    from ...execution import analysis
    analysis.call_primitives.update({custom_jvp_call_p, custom_vjp_call_p})


_register_with_the_planner()


# ----------------------------------------------------------------------------------------------
# Binding a call
# ----------------------------------------------------------------------------------------------
def _resolve_args(fun, who, args, kwargs):
    """The positional arguments of a call: keyword arguments are matched to positions
    with ``fun``'s signature, as JAX does (a keyword-only parameter is a TypeError)."""
    if not kwargs:
        return tuple(args)
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise TypeError(f"The input arguments to the {who}-decorated function {_fun_name(fun)} could "
                        f"not be resolved to positional-only arguments. Binding failed with the error:\n{e}") from None
    if bound.kwargs:
        raise TypeError(f"The input arguments to the {who}-decorated function {_fun_name(fun)} could "
                        "not be resolved to positional-only arguments: the keyword arguments "
                        f"{', '.join(bound.kwargs)} could not be resolved to positions (keyword-only "
                        "parameters are not supported; pass them positionally or close over them)")
    return tuple(bound.args)


def _split_args(who, args, nondiff_argnums):
    nondiff = {}
    for i in nondiff_argnums:
        if not -len(args) <= i < len(args):
            raise TypeError(f"{who}: nondiff_argnums entry {i} is out of range for {len(args)} arguments")
        nondiff[i % len(args)] = args[i]
    diff = tuple(a for i, a in enumerate(args) if i not in nondiff)
    return nondiff, diff


def _flat_diff_args(who, diff):
    leaves, in_tree = tree_flatten(diff)
    out = [np.asarray(x) if isinstance(x, (list, tuple)) else x for x in leaves]
    leaf_avals(out, lambda k, x: (f"{who}: an argument leaf is a {type(x).__name__}, not an array or a "
                                  "scalar; pass non-array arguments with nondiff_argnums"))
    return out, in_tree


def _nondiff_operands(nondiff):
    """Split the non-differentiable arguments into what the rules hold and the traced leaves,
    which become operands of the call. Returns ``(spec, operands)`` (see ``_Rules``)."""
    spec, ops = {}, []
    for i in sorted(nondiff):
        leaves, tree = tree_flatten(nondiff[i])
        slots = []
        for x in leaves:
            if isinstance(x, Tracer):
                slots.append(len(ops))
                ops.append(x)
            else:
                slots.append(None)
        spec[i] = (tree, [None if k is not None else x for x, k in zip(leaves, slots)], slots)
    return spec, ops


def _bind_call(prim, who, fun, args, kwargs, nondiff_argnums, make_rules):
    args = _resolve_args(fun, who, args, kwargs)
    nondiff, diff = _split_args(who, args, nondiff_argnums)
    nd_spec, nd_ops = _nondiff_operands(nondiff)
    leaves, in_tree = _flat_diff_args(who, diff)
    n_nd = len(nd_ops)
    in_type = tuple((typeof(x), True) for x in nd_ops + leaves)

    def flat(*xs):
        nd = {i: _rebuild(nd_spec[i], xs[:n_nd]) for i in nd_spec}
        return fun(*_merge(len(args), nd, tree_unflatten(in_tree, xs[n_nd:])))

    prog = trace_nested(flat, in_type, tree_flatten, expand=False)
    rules = make_rules(len(args), nd_spec, n_nd, in_tree, prog.out_tree)
    inputs = {id(v) for v in prog.jaxpr.invars}
    for k, v in enumerate(prog.jaxpr.outvars):   # a clear error now, not at the first use
        if any(isinstance(d, Var) and id(d) not in inputs for d in v.aval.shape):
            raise TypeError(_computed_dim_message(rules, k))
    # operands: the values fun closes over, the traced non-differentiable leaves, the arguments
    outs = prim.bind(*prog.consts, *nd_ops, *leaves, call_jaxpr=prog.jaxpr, num_consts=prog.nconsts + n_nd,
                     rules=rules)
    return tree_unflatten(prog.out_tree, outs)


class _CustomFunction:
    """What ``custom_jvp`` and ``custom_vjp`` share: the wrapped function, its
    non-differentiable positions, and use as a method decorator."""
    who = "custom"

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = (), nondiff_argnames: Sequence[str] = ()):
        if not callable(fun):
            raise TypeError(f"{self.who}: expected a function, got {type(fun).__name__}")
        self.fun = fun
        self.nondiff_argnums = tuple(int(i) for i in nondiff_argnums) + _argnames_to_nums(
            self.who, fun, nondiff_argnames, nondiff_argnums)
        self.nondiff_argnames = tuple(nondiff_argnames)
        functools.update_wrapper(self, fun)

    def __get__(self, obj, objtype=None):   # decorating a method
        if obj is None:
            return self
        return functools.partial(self, obj)


def _argnames_to_nums(who, fun, names, nums):
    """The positions of the parameters ``names`` of ``fun`` (``nondiff_argnames``)."""
    if isinstance(names, str):
        names = (names,)
    if not names:
        return ()
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: nondiff_argnames needs a function with a signature") from None
    out = []
    for n in names:
        if n not in params:
            raise TypeError(f"{who}: nondiff_argnames entry {n!r} is not a parameter of {_fun_name(fun)}")
        if params.index(n) not in nums:
            out.append(params.index(n))
    return tuple(out)


def _closure_check(rules, tangents, num_consts):
    n_closed = num_consts - rules.num_nd
    if any(not isinstance(t, Zero) for t in tangents[:n_closed]):
        raise TypeError(
            f"{rules.who}: {rules.name} closes over a value that is being differentiated; the "
            f"custom rule cannot account for it. Pass the value as an argument of {rules.name} "
            "instead")
    if any(not isinstance(t, Zero) for t in tangents[n_closed:num_consts]):
        raise TypeError(
            f"{rules.who}: an argument of {rules.name} listed in nondiff_argnums is being "
            "differentiated; the custom rule cannot account for it. Take it out of nondiff_argnums")


def _check_structure(rules, tree, what):
    if tree != rules.out_tree:
        raise TypeError(f"{rules.who}: {what} has the structure {tree} but {rules.name} returns "
                        f"{rules.out_tree}")


def _check_leaves(rules, leaves, what):
    leaf_avals(leaves, lambda k, x: f"{rules.who}: output {k} of {what} is a {type(x).__name__}, not an array")


def _check_output_types(rules, leaves, expected, what):
    for k, (x, e) in enumerate(zip(leaves, expected)):
        a = typeof(x)
        if a.dtype != e.dtype or a.ndim != e.ndim or not all(
                not (isinstance(p, int) and isinstance(q, int)) or p == q for p, q in zip(a.shape, e.shape)):
            raise TypeError(f"{rules.who}: output {k} of {what} has type {a.str_short()} but "
                            f"{rules.name} returns {e.str_short()}")


def _split_operands(operands, num_consts, rules):
    """``(nondiff operands, arguments)`` of a call: the constant block ends with the former."""
    return list(operands[num_consts - rules.num_nd:num_consts]), list(operands[num_consts:])


def _as_tangent(rules, t, primal, k, what):
    """The tangent ``t`` given for ``primal``, in the primal's type (a Python scalar or a
    rank-0 tangent is broadcast, another dtype converted); a TypeError if it does not fit."""
    pa = typeof(primal)
    t = from_symbolic(t)
    if isinstance(t, Zero) or not is_inexact_dtype(pa.dtype):
        return Zero(pa.strip_weak_type())
    if t is None:
        raise TypeError(f"{rules.who}: {what} {k} is None; return zeros for a zero tangent")
    try:
        ta = typeof(t)
    except TypeError:
        raise TypeError(f"{rules.who}: {what} {k} of the rule of {rules.name} is a {type(t).__name__}, "
                        "not an array") from None
    if ta.dtype != pa.dtype:
        t = lax.convert_element_type(t, pa.dtype)
    if ta.ndim == 0 and pa.ndim:
        return lax.broadcast_in_dim(t, pa.shape, ())
    if ta.ndim != pa.ndim or not all(same_dim(p, q) or not (isinstance(p, int) and isinstance(q, int))
                                     for p, q in zip(ta.shape, pa.shape)):
        raise TypeError(f"{rules.who}: {what} {k} has type {ta.str_short()} for an output of type "
                        f"{pa.str_short()}; it must have the output's shape")
    return t



def _as_cotangent(rules, c, aval, k):
    ca = typeof(c)
    if ca.dtype != aval.dtype:
        c = lax.convert_element_type(c, aval.dtype)
    if ca.ndim == 0 and aval.ndim:
        return lax.broadcast_in_dim(c, aval.shape, ())
    if ca.ndim != aval.ndim or not all(same_dim(p, q) or not (isinstance(p, int) and isinstance(q, int))
                                       for p, q in zip(ca.shape, aval.shape)):
        raise TypeError(f"custom_vjp: the cotangent of argument leaf {k} returned by bwd of {rules.name} "
                        f"has type {ca.str_short()} but the argument has type {aval.str_short()}")
    return c

