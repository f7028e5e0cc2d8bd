"""Functions with user-defined derivatives: ``custom_jvp`` and ``custom_vjp``.

``custom_jvp(fun)`` / ``custom_vjp(fun)`` wrap ``fun``; calling the wrapper traces ``fun``
into a jaxpr (in a scope nested in the caller's, like a branch of ``cond``) and binds one
equation of a call primitive whose params hold that jaxpr and the user's rules:

* ``custom_jvp_call`` (operands ``C N A``: the values ``fun`` closes over, the traced leaves
  of the ``nondiff_argnums`` arguments, then the flat arguments; ``num_consts`` counts
  ``C N``, ``rules.num_nd`` counts ``N``). Evaluating it -- eagerly, while staging, when
  lowering -- runs the jaxpr, so ``fun`` is what executes; only differentiation is
  different: its jvp rule calls the user's ``jvp(primals, tangents)`` on the primals and the
  (instantiated) tangents.
* ``custom_vjp_call`` (same layout). Its jvp rule runs ``fwd`` on the primals, which gives
  the outputs and the *residuals*, and emits ``custom_lin``, a primitive linear in the
  tangents. Linearizing (``grad``, ``vjp``) keeps ``custom_lin`` in the linear jaxpr; its
  transpose rule calls ``bwd(residuals, cotangents)``.
* ``custom_lin`` (operands ``R O T``: the ``N`` operands and the residual leaves, primal
  outputs, argument tangents).
  Its result types are the primal outputs' types (hence the ``O`` operands: their dims).
  It has no forward meaning: forward-mode differentiation of a ``custom_vjp`` function is
  an error, raised when ``custom_lin`` is evaluated or lowered.

Under ``vmap`` each of the three primitives batches into itself, with batched rules
(``custom_batching.py``), so derivatives taken of a ``vmap`` still use the user's rules.

The jaxpr's output dims must be static or dims of the inputs (a size computed inside
``fun`` is a ``TypeError``): the call's result types are the jaxpr's, with input dims
replaced by the operands'.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, List, Sequence

import numpy as np

from ..core.avals import is_inexact_dtype, make_aval, same_dim
from ..core.errors import api_boundary
from ..core.expansion import trace_nested
from ..core.interpret import eval_jaxpr
from ..core.jaxpr import Literal, Var
from ..core.primitive import (Primitive, abstract_eval_rules, as_dim, impl_rules, jvp_rules,
                              transpose_rules)
from ..core.pytree import tree_flatten, tree_unflatten
from ..core.trace import Tracer, typeof
from ..lax import api as lax
from ..lax.base import aval as aval_of
from ..lowering.core import LoweringError, register_lowering
from .jvp import Zero, instantiate
from .transpose import backward_pass, is_undefined, zeros

__all__ = ["custom_jvp", "custom_vjp", "custom_jvp_call_p", "custom_vjp_call_p", "custom_lin_p"]

custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)
custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_lin_p = Primitive("custom_lin", multiple_results=True)

_FORWARD_ERROR = ("forward-mode differentiation (jvp) of a custom_vjp function is not supported; "
                  "use custom_jvp (grad, vjp and jacrev of a custom_vjp function work)")


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

    def __init__(self, who, name, nargs, nondiff, num_nd, in_tree, out_tree, jvp=None, fwd=None, bwd=None):
        self.who = who
        self.name = name
        self.nargs = nargs
        self.nondiff = nondiff          # {position: (treedef, leaves, slots)}
        self.num_nd = num_nd
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.jvp, self.fwd, self.bwd = jvp, fwd, bwd

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
        their tangents (in the outputs' types; ``Zero`` for outputs that are not inexact)."""
        res = self.jvp(*self.nondiff_values(nd), tree_unflatten(self.in_tree, args),
                       tree_unflatten(self.in_tree, tangents))
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

    def apply_fwd(self, nd, args, out_avals=None):
        """``fwd(*args)``: returns ``(outputs, residual leaves, residual treedef)``."""
        res = self.fwd(*self.full_args(nd, args))
        if not isinstance(res, (tuple, list)) or len(res) != 2:
            raise TypeError(f"custom_vjp: the fwd function of {self.name} must return a pair "
                            f"(output, residuals), got {type(res).__name__}")
        out_leaves, out_tree = tree_flatten(res[0])
        _check_structure(self, out_tree, "the output of fwd")
        _check_leaves(self, out_leaves, "the output of fwd")
        res_leaves, res_tree = tree_flatten(res[1])
        for x in res_leaves:
            try:
                typeof(x)
            except TypeError:
                raise TypeError(f"custom_vjp: the residuals of {self.name} must be arrays (a pytree of "
                                f"them), got a {type(x).__name__}") from None
        return list(out_leaves), list(res_leaves), res_tree

    def apply_bwd(self, nd, res, res_tree, cts, arg_avals):
        """``bwd(*nondiff, residuals, ct)`` on flat lists: one cotangent per differentiable
        argument leaf, in that leaf's type ``arg_avals[k]``, or None for a zero one."""
        in_cts = self.bwd(*self.nondiff_values(nd), tree_unflatten(res_tree, list(res)),
                          tree_unflatten(self.out_tree, list(cts)))
        ndiff = len(self.in_tree.children)
        if isinstance(in_cts, list):
            in_cts = tuple(in_cts)
        if not isinstance(in_cts, tuple) or len(in_cts) != ndiff:
            got = f"a tuple of {len(in_cts)}" if isinstance(in_cts, tuple) else f"a {type(in_cts).__name__}"
            raise TypeError(f"custom_vjp: the bwd function of {self.name} must return a tuple with one "
                            f"cotangent per differentiable positional argument ({ndiff}), got {got}")
        leaves: List[Any] = []
        for i, (c, sub) in enumerate(zip(in_cts, self.in_tree.children)):
            if c is None:
                leaves += [None] * sub.num_leaves
                continue
            c_leaves, c_tree = tree_flatten(c)
            if c_tree != sub:
                raise TypeError(f"custom_vjp: the cotangent {i} returned by bwd of {self.name} has the "
                                f"structure {c_tree} but the argument has {sub}")
            leaves += c_leaves
        return [None if c is None or a is None else _as_cotangent(self, c, a, k)
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
    shape = []
    for d in aval.shape:
        if isinstance(d, (int, np.integer)):
            shape.append(int(d))
        elif isinstance(d, Literal):
            shape.append(int(d.val))
        elif id(d) in pos:
            shape.append(as_dim(operands[pos[id(d)]]))
        else:
            raise TypeError(_computed_dim_message(rules, k))
    return tuple(shape)


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
    from ..execution import analysis
    analysis.call_primitives.update({custom_jvp_call_p, custom_vjp_call_p})


_register_with_the_planner()


# ----------------------------------------------------------------------------------------------
# Binding a call
# ----------------------------------------------------------------------------------------------
def _resolve_args(fun, who, args, kwargs):
    if not kwargs:
        return tuple(args)
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{who}: cannot match the arguments to {_fun_name(fun)}: {e}") from None
    if bound.kwargs:
        raise TypeError(f"{who}: keyword-only arguments ({', '.join(bound.kwargs)}) are not supported; "
                        "pass them positionally or close over them")
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
    out = []
    for x in leaves:
        if isinstance(x, (list, tuple)):
            x = np.asarray(x)
        try:
            typeof(x)
        except TypeError:
            raise TypeError(f"{who}: an argument leaf is a {type(x).__name__}, not an array or a "
                            "scalar; pass non-array arguments with nondiff_argnums") from None
        out.append(x)
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
    who = "custom"

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        if not callable(fun):
            raise TypeError(f"{self.who}: expected a function, got {type(fun).__name__}")
        self.fun = fun
        self.nondiff_argnums = tuple(int(i) for i in nondiff_argnums)
        functools.update_wrapper(self, fun)

    def __get__(self, obj, objtype=None):   # decorating a method
        if obj is None:
            return self
        return functools.partial(self, obj)


# ----------------------------------------------------------------------------------------------
# custom_jvp
# ----------------------------------------------------------------------------------------------
class custom_jvp(_CustomFunction):
    """A function with a user-defined forward-mode derivative (JVP)::

        @dynjax.custom_jvp
        def f(x, y):
            return jnp.sin(x) * y

        @f.defjvp
        def f_jvp(primals, tangents):
            x, y = primals
            x_dot, y_dot = tangents
            return f(x, y), jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot

    Calling ``f`` runs the original function (eagerly, or staged under ``qjit``). Under
    ``jvp``, ``grad``, ``vjp``, ``jacfwd`` / ``jacrev``, the rule is used instead of
    differentiating ``f``'s body: ``f_jvp(primals, tangents)`` receives tuples of the
    positional arguments and of their tangents (arrays of zeros for arguments that are not
    differentiated) and returns ``(primal_out, tangent_out)`` with the output's structure.
    For reverse mode the tangent must be computed linearly from ``tangents`` (it is
    transposed).

    ``nondiff_argnums`` names positional arguments that are not differentiated (Python
    values, functions...): they are passed first to the rule,
    ``f_jvp(*nondiff_args, primals, tangents)``, and left out of ``primals``. Keyword
    arguments are matched to positions. Outputs may only have static sizes or sizes of the
    inputs. ``f`` may not close over a value being differentiated (pass it as an argument).
    """
    who = "custom_jvp"

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        super().__init__(fun, nondiff_argnums)
        self.jvp = None

    def defjvp(self, jvp: Callable) -> Callable:
        """Set the JVP rule ``jvp(primals, tangents) -> (primal_out, tangent_out)``; returns
        ``jvp`` (so it can be used as a decorator)."""
        if not callable(jvp):
            raise TypeError(f"custom_jvp.defjvp: expected a function, got {type(jvp).__name__}")
        self.jvp = jvp
        return jvp

    @api_boundary
    def __call__(self, *args, **kwargs):
        if self.jvp is None:
            raise AttributeError(f"custom_jvp function {_fun_name(self.fun)} has no JVP rule: "
                                 "define one with @f.defjvp before calling it")

        def make_rules(nargs, nondiff, num_nd, in_tree, out_tree):
            return _Rules("custom_jvp", _fun_name(self.fun), nargs, nondiff, num_nd, in_tree, out_tree,
                          jvp=self.jvp)
        return _bind_call(custom_jvp_call_p, "custom_jvp", self.fun, args, kwargs, self.nondiff_argnums,
                          make_rules)


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
    for k, x in enumerate(leaves):
        try:
            typeof(x)
        except TypeError:
            raise TypeError(f"{rules.who}: output {k} of {what} is a {type(x).__name__}, not an "
                            "array") from None


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
    if isinstance(t, Zero) or not is_inexact_dtype(pa.dtype):
        return Zero(pa.strip_weak_type())
    if t is None:
        raise TypeError(f"{rules.who}: {what} {k} is None; return zeros for a zero tangent")
    ta = typeof(t)
    if ta.dtype != pa.dtype:
        t = lax.convert_element_type(t, pa.dtype)
    if ta.ndim == 0 and pa.ndim:
        return lax.broadcast_in_dim(t, pa.shape, ())
    if ta.ndim != pa.ndim or not all(same_dim(p, q) or not (isinstance(p, int) and isinstance(q, int))
                                     for p, q in zip(ta.shape, pa.shape)):
        raise TypeError(f"{rules.who}: {what} {k} has type {ta.str_short()} for an output of type "
                        f"{pa.str_short()}; it must have the output's shape")
    return t


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, num_consts, rules):
    _closure_check(rules, tangents, num_consts)
    nd, args = _split_operands(primals, num_consts, rules)
    ts = [instantiate(t) for t in tangents[num_consts:]]
    expected = _call_abstract(*primals, call_jaxpr=call_jaxpr, num_consts=num_consts, rules=rules)
    p_leaves, t_leaves = rules.apply_jvp(nd, args, ts, expected)
    _check_output_types(rules, p_leaves, expected, "the primal output of the JVP rule")
    t_out = [_as_tangent(rules, t, p, k, "tangent output") for k, (t, p) in enumerate(zip(t_leaves, p_leaves))]
    return p_leaves, t_out


jvp_rules[custom_jvp_call_p] = _custom_jvp_call_jvp


# ----------------------------------------------------------------------------------------------
# custom_vjp
# ----------------------------------------------------------------------------------------------
class custom_vjp(_CustomFunction):
    """A function with a user-defined reverse-mode derivative (VJP)::

        @dynjax.custom_vjp
        def clip_gradient(x):
            return x

        def fwd(x):
            return x, None                      # (output, residuals)

        def bwd(residuals, ct):
            return (jnp.clip(ct, -1.0, 1.0),)   # one cotangent per positional argument

        clip_gradient.defvjp(fwd, bwd)

    Calling the function runs the original (eagerly, or staged under ``qjit``). Under
    ``grad`` / ``vjp`` / ``jacrev``, ``fwd(*args)`` runs instead and returns the output and
    residuals (a pytree of arrays saved for the backward pass);
    ``bwd(residuals, ct)`` receives the output's cotangent and returns a tuple with one
    cotangent per positional argument (``None`` for a zero cotangent). Residuals and
    cotangents have the dynamic sizes of the primals under ``qjit``.

    With ``nondiff_argnums``, ``fwd`` still takes every argument, ``bwd`` takes the
    non-differentiable arguments first, ``bwd(*nondiff_args, residuals, ct)``, and returns
    cotangents for the other arguments only. Forward mode (``jvp``, ``jacfwd``) of a
    ``custom_vjp`` function is a TypeError.
    """
    who = "custom_vjp"

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        super().__init__(fun, nondiff_argnums)
        self.fwd = None
        self.bwd = None

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        """Set the forward pass ``fwd(*args) -> (output, residuals)`` and the backward pass
        ``bwd(residuals, ct) -> tuple of cotangents, one per positional argument``."""
        for name, f in (("fwd", fwd), ("bwd", bwd)):
            if not callable(f):
                raise TypeError(f"custom_vjp.defvjp: {name} must be a function, got {type(f).__name__}")
        self.fwd, self.bwd = fwd, bwd

    @api_boundary
    def __call__(self, *args, **kwargs):
        if self.fwd is None:
            raise AttributeError(f"custom_vjp function {_fun_name(self.fun)} has no VJP rule: "
                                 "define one with f.defvjp(fwd, bwd) before calling it")

        def make_rules(nargs, nondiff, num_nd, in_tree, out_tree):
            return _Rules("custom_vjp", _fun_name(self.fun), nargs, nondiff, num_nd, in_tree, out_tree,
                          fwd=self.fwd, bwd=self.bwd)
        return _bind_call(custom_vjp_call_p, "custom_vjp", self.fun, args, kwargs, self.nondiff_argnums,
                          make_rules)


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, num_consts, rules):
    _closure_check(rules, tangents, num_consts)
    nd, args = _split_operands(primals, num_consts, rules)
    expected = _call_abstract(*primals, call_jaxpr=call_jaxpr, num_consts=num_consts, rules=rules)
    out_leaves, res_leaves, res_tree = rules.apply_fwd(nd, args, expected)
    _check_output_types(rules, out_leaves, expected, "the output of fwd")
    ts = [instantiate(t) for t in tangents[num_consts:]]
    # the non-differentiable operands travel with the residuals: bwd receives them
    lin = custom_lin_p.bind(*nd, *res_leaves, *out_leaves, *ts, num_res=len(nd) + len(res_leaves),
                            num_out=len(out_leaves), res_tree=res_tree, rules=rules)
    t_out = [Zero(typeof(o).strip_weak_type()) if not is_inexact_dtype(typeof(o).dtype) else t
             for o, t in zip(out_leaves, lin)]
    return list(out_leaves), t_out


jvp_rules[custom_vjp_call_p] = _custom_vjp_call_jvp


# ----------------------------------------------------------------------------------------------
# custom_lin: the linear part, transposed by ``bwd``
# ----------------------------------------------------------------------------------------------
def _custom_lin_abstract(*operands, num_res, num_out, res_tree, rules):
    outs = operands[num_res:num_res + num_out]
    return [make_aval(aval_of(x).shape, aval_of(x).dtype) for x in outs]


def _custom_lin_impl(*operands, **params):
    raise TypeError(_FORWARD_ERROR)


def _custom_lin_lowering(ctx, eqn, *args, **params):
    raise CustomVJPForwardError(_FORWARD_ERROR)


def _custom_lin_transpose(cts, *operands, num_res, num_out, res_tree, rules):
    res, outs = operands[:num_res], operands[num_res:num_res + num_out]
    ts = operands[num_res + num_out:]
    if any(is_undefined(x) for x in list(res) + list(outs)):
        raise AssertionError("custom_lin: a residual or primal output is linear")
    cts = [zeros(typeof(o).strip_weak_type()) if c is None else c for c, o in zip(cts, outs)]
    nd = list(res[:rules.num_nd])
    arg_avals = [t.aval if is_undefined(t) else None for t in ts]
    out = rules.apply_bwd(nd, list(res[rules.num_nd:]), res_tree, cts, arg_avals)
    return [None] * (num_res + num_out) + list(out)


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


abstract_eval_rules[custom_lin_p] = _custom_lin_abstract
impl_rules[custom_lin_p] = _custom_lin_impl
register_lowering(custom_lin_p, _custom_lin_lowering)
transpose_rules[custom_lin_p] = _custom_lin_transpose
