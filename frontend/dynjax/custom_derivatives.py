"""``dynjax.custom_derivatives``: the names of ``jax.custom_derivatives`` -- functions with
user-defined derivatives and the objects their rules receive (``transforms/custom/``)."""
from .transforms.custom import (CustomVJPPrimal, SymbolicZero, closure_convert, custom_gradient,  # noqa: F401
                                custom_jvp, custom_jvp_call_p, custom_vjp, custom_vjp_call_p,
                                custom_vjp_primal_tree_values, zero_from_primal)

__all__ = ["CustomVJPPrimal", "SymbolicZero", "closure_convert", "custom_gradient", "custom_jvp",
           "custom_vjp", "custom_jvp_call_p", "custom_vjp_call_p", "custom_vjp_primal_tree_values",
           "zero_from_primal"]
