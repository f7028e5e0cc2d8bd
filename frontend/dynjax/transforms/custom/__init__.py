"""Functions with user-defined derivatives (JAX's ``jax.custom_derivatives``): ``custom_jvp``,
``custom_vjp``, ``custom_gradient``, ``closure_convert``.

``custom_jvp(fun)`` / ``custom_vjp(fun)`` wrap ``fun``; calling the wrapper traces ``fun``
into a jaxpr (in a scope nested in the caller's, like a branch of ``cond``) and binds one
equation of a call primitive whose params hold that jaxpr and the user's rules:

* ``custom_jvp_call`` (operands ``C N A``: the values ``fun`` closes over, the traced leaves
  of the ``nondiff_argnums`` arguments, then the flat arguments; ``num_consts`` counts
  ``C N``, ``rules.num_nd`` counts ``N``). Evaluating it -- eagerly, while staging, when
  lowering -- runs the jaxpr, so ``fun`` is what executes; only differentiation is
  different: its jvp rule calls the user's ``jvp(primals, tangents)`` on the primals and the
  tangents (arrays, or ``SymbolicZero`` objects for the undifferentiated arguments when the
  rule asked for symbolic zeros).
* ``custom_vjp_call`` (same layout). Its jvp rule runs ``fwd`` on the primals, which gives
  the outputs and the *residuals*, and emits ``custom_lin``, a primitive linear in the
  tangents. Linearizing (``grad``, ``vjp``) keeps ``custom_lin`` in the linear jaxpr; its
  transpose rule calls ``bwd(residuals, cotangents)``.
* ``custom_lin`` (operands ``R O T``: the ``N`` operands and the residual leaves, primal
  outputs, argument tangents).
  Its result types are the primal outputs' types (hence the ``O`` operands: their dims).
  It has no forward meaning: forward-mode differentiation of a ``custom_vjp`` function is
  JAX's TypeError, raised by the jvp rule of ``custom_vjp_call`` outside a linearization,
  and otherwise when ``custom_lin`` is evaluated, differentiated or lowered.

Under ``vmap`` each of the three primitives batches into itself, with batched rules
(``custom_batching.py``), so derivatives taken of a ``vmap`` still use the user's rules.

The jaxpr's output dims must be static or dims of the inputs (a size computed inside
``fun`` is a ``TypeError``): the call's result types are the jaxpr's, with input dims
replaced by the operands'.

Modules: ``call.py`` (the call primitives, evaluating / typing / lowering / binding a call,
the checks of what a rule returns), ``jvp.py`` (``custom_jvp``), ``vjp.py`` (``custom_vjp``
and ``custom_lin``), ``symbolic.py`` (``SymbolicZero``, ``CustomVJPPrimal``),
``closure.py`` (``closure_convert``, ``custom_gradient``); the batching rules are in
``transforms/custom_batching.py``.
"""
from .call import CustomVJPForwardError, custom_jvp_call_p, custom_lin_p, custom_vjp_call_p  # noqa: F401
from .closure import closure_convert, custom_gradient  # noqa: F401
from .jvp import custom_jvp  # noqa: F401
from .symbolic import CustomVJPPrimal, SymbolicZero, custom_vjp_primal_tree_values, zero_from_primal  # noqa: F401
from .vjp import custom_vjp  # noqa: F401

__all__ = ["custom_jvp", "custom_vjp", "custom_gradient", "closure_convert", "SymbolicZero", "CustomVJPForwardError",
           "CustomVJPPrimal", "custom_vjp_primal_tree_values", "zero_from_primal", "custom_jvp_call_p", "custom_vjp_call_p", "custom_lin_p"]
