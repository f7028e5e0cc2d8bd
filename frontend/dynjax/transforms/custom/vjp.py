"""``custom_vjp``: a function with a user-defined reverse-mode derivative. The jvp rule of
its call primitive ``custom_vjp_call`` runs the user's ``fwd`` and emits ``custom_lin``, a
primitive linear in the tangents whose transpose rule runs the user's ``bwd``."""
from __future__ import annotations

from typing import Callable, Sequence

from ...core.avals import is_inexact_dtype, make_aval
from ...core.errors import api_boundary
from ...core.primitive import abstract_eval_rules, impl_rules, jvp_rules, transpose_rules
from ...core.trace import typeof
from ...lax.base import aval as aval_of
from ...lowering.core import register_lowering
from ..jvp import Zero, instantiate
from ..partial_eval import linearizing
from ..transpose import is_undefined
from .call import (FORWARD_ERROR, CustomVJPForwardError, _bind_call, _call_abstract, _check_output_types,
                   _closure_check, _CustomFunction, _fun_name, _Rules, _split_operands, custom_lin_p,
                   custom_vjp_call_p)

__all__ = ["custom_vjp"]


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
    cotangents for the other arguments only.

    ``defvjp(fwd, bwd, symbolic_zeros=True)``: ``fwd`` receives each argument leaf as a
    ``CustomVJPPrimal`` (``.value``, ``.perturbed``), and ``bwd`` receives a
    ``SymbolicZero`` for each output whose cotangent is zero. Forward mode (``jvp``,
    ``jacfwd``) of a ``custom_vjp`` function is a TypeError, as in JAX.
    """
    who = "custom_vjp"

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = (), nondiff_argnames: Sequence[str] = ()):
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.fwd = None
        self.bwd = None
        self.symbolic_zeros = False
        self.optimize_remat = False

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False,
               optimize_remat: bool = False) -> None:
        """Set the forward pass ``fwd(*args) -> (output, residuals)`` and the backward pass
        ``bwd(residuals, ct) -> tuple of cotangents, one per positional argument``.
        ``symbolic_zeros``: see the class docstring. ``optimize_remat`` (an optimization of
        JAX's under ``remat``) is accepted and has no effect: ``fwd`` always runs once."""
        for name, f in (("fwd", fwd), ("bwd", bwd)):
            if not callable(f):
                raise TypeError(f"custom_vjp.defvjp: {name} must be a function, got {type(f).__name__}")
        self.fwd, self.bwd = fwd, bwd
        self.symbolic_zeros = bool(symbolic_zeros)
        self.optimize_remat = bool(optimize_remat)

    @api_boundary
    def __call__(self, *args, **kwargs):
        if self.fwd is None:
            raise AttributeError(f"custom_vjp function {_fun_name(self.fun)} has no VJP rule: "
                                 "define one with f.defvjp(fwd, bwd) before calling it")

        def make_rules(nargs, nondiff, num_nd, in_tree, out_tree):
            return _Rules("custom_vjp", _fun_name(self.fun), nargs, nondiff, num_nd, in_tree, out_tree,
                          fwd=self.fwd, bwd=self.bwd, symbolic_zeros=self.symbolic_zeros)
        return _bind_call(custom_vjp_call_p, "custom_vjp", self.fun, args, kwargs, self.nondiff_argnums,
                          make_rules)


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, num_consts, rules):
    """Runs ``fwd`` and emits ``custom_lin`` for ``bwd`` -- only for reverse mode: outside
    a linearization (a plain ``jvp``) this is JAX's TypeError, raised now, while tracing.
    (A ``jvp`` nested inside a linearization is caught when its ``custom_lin`` is
    evaluated, differentiated or lowered.)"""
    if not linearizing():
        raise TypeError(FORWARD_ERROR)
    _closure_check(rules, tangents, num_consts)
    nd, args = _split_operands(primals, num_consts, rules)
    expected = _call_abstract(*primals, call_jaxpr=call_jaxpr, num_consts=num_consts, rules=rules)
    perturbed = [not isinstance(t, Zero) for t in tangents[num_consts:]]
    out_leaves, res_leaves, res_tree = rules.apply_fwd(nd, args, expected, perturbed)
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
    raise TypeError(FORWARD_ERROR)


def _custom_lin_jvp(primals, tangents, **params):
    """Forward mode applied to the linear part of a ``custom_vjp`` function (the outer
    derivative of ``jvp`` of it): the same error as the ``jvp`` itself."""
    raise TypeError(FORWARD_ERROR)


def _custom_lin_lowering(ctx, eqn, *args, **params):
    raise CustomVJPForwardError(FORWARD_ERROR)


def _custom_lin_transpose(cts, *operands, num_res, num_out, res_tree, rules):
    res, outs = operands[:num_res], operands[num_res:num_res + num_out]
    ts = operands[num_res + num_out:]
    if any(is_undefined(x) for x in list(res) + list(outs)):
        raise AssertionError("custom_lin: a residual or primal output is linear")
    # a zero output cotangent stays symbolic: apply_bwd shows it as the rule asked
    cts = [Zero(typeof(o).strip_weak_type()) if c is None else c for c, o in zip(cts, outs)]
    nd = list(res[:rules.num_nd])
    arg_avals = [t.aval if is_undefined(t) else None for t in ts]
    out = rules.apply_bwd(nd, list(res[rules.num_nd:]), res_tree, cts, arg_avals)
    return [None] * (num_res + num_out) + list(out)


abstract_eval_rules[custom_lin_p] = _custom_lin_abstract
impl_rules[custom_lin_p] = _custom_lin_impl
jvp_rules[custom_lin_p] = _custom_lin_jvp
register_lowering(custom_lin_p, _custom_lin_lowering)
transpose_rules[custom_lin_p] = _custom_lin_transpose
