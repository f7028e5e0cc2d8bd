"""The rematerialization policies of ``dynjax.checkpoint`` (JAX's ``jax.checkpoint_policies``).

A policy decides, for one primitive application inside a checkpointed function, whether its
results may be *saved* for the backward pass (kept as residuals) instead of being recomputed
there. It is called as ``policy(primitive, *operand_avals, **params)`` and returns a bool, so a
user's function with that signature is a policy too. ``policy=None`` saves nothing.

The names here print as themselves in a jaxpr (``policy=dots_saveable``).
"""
from __future__ import annotations

from typing import Callable

__all__ = ["everything_saveable", "nothing_saveable", "dots_saveable", "checkpoint_dots",
           "dots_with_no_batch_dims_saveable", "checkpoint_dots_with_no_batch_dims",
           "save_anything_except_these_names", "save_any_names_but_these", "save_only_these_names",
           "save_from_both_policies"]


class Policy:
    """A named policy: calling it asks the wrapped function; its repr is its name (a jaxpr
    prints it)."""

    def __init__(self, fun: Callable, name: str):
        self.fun = fun
        self.name = name

    def __call__(self, prim, *avals, **params) -> bool:
        return bool(self.fun(prim, *avals, **params))

    def __repr__(self):
        return self.name


def _is_dot(prim) -> bool:
    from .lax.primitives import dot_general_p
    return prim is dot_general_p


def _is_name(prim) -> bool:
    from .transforms.remat import name_p
    return prim is name_p


everything_saveable = Policy(lambda prim, *avals, **params: True, "everything_saveable")
everything_saveable.__doc__ = "Save every value: the same residuals as without checkpoint."

nothing_saveable = Policy(lambda prim, *avals, **params: False, "nothing_saveable")
nothing_saveable.__doc__ = "Save nothing: recompute every value from the function's inputs (the default)."

dots_saveable = Policy(lambda prim, *avals, **params: _is_dot(prim), "dots_saveable")
dots_saveable.__doc__ = "Save the results of matrix products (``dot_general``), recompute the rest."
checkpoint_dots = dots_saveable


def _no_batch_dims(prim, *avals, **params) -> bool:
    if not _is_dot(prim):
        return False
    (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
    return not lhs_batch and not rhs_batch


dots_with_no_batch_dims_saveable = Policy(_no_batch_dims, "dots_with_no_batch_dims_saveable")
dots_with_no_batch_dims_saveable.__doc__ = "Save the results of ``dot_general`` without batch dimensions."
checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable


def _names(who, names):
    for n in names:
        try:
            hash(n)
        except TypeError:
            raise TypeError(f"{who}: names must be hashable (strings), got a {type(n).__name__}") from None
    return frozenset(names)


def save_only_these_names(*names) -> Policy:
    """Save only the values labelled by ``checkpoint_name`` with one of ``names``."""
    wanted = _names("save_only_these_names", names)
    return Policy(lambda prim, *avals, **params: _is_name(prim) and params["name"] in wanted,
                  f"save_only_these_names({', '.join(map(repr, names))})")


def save_any_names_but_these(*names) -> Policy:
    """Save the values labelled by ``checkpoint_name`` with any name except ``names``."""
    unwanted = _names("save_any_names_but_these", names)
    return Policy(lambda prim, *avals, **params: _is_name(prim) and params["name"] not in unwanted,
                  f"save_any_names_but_these({', '.join(map(repr, names))})")


def save_anything_except_these_names(*names) -> Policy:
    """Save every value except the ones labelled by ``checkpoint_name`` with one of ``names``
    (those are recomputed)."""
    unwanted = _names("save_anything_except_these_names", names)
    return Policy(lambda prim, *avals, **params: not (_is_name(prim) and params["name"] in unwanted),
                  f"save_anything_except_these_names({', '.join(map(repr, names))})")


def save_from_both_policies(policy_1: Callable, policy_2: Callable) -> Policy:
    """Save a value when either policy saves it."""
    for k, p in enumerate((policy_1, policy_2)):
        if not callable(p):
            raise TypeError(f"save_from_both_policies: policy_{k + 1} must be a policy (a function), "
                            f"got {type(p).__name__}")
    return Policy(lambda prim, *avals, **params: bool(policy_1(prim, *avals, **params))
                  or bool(policy_2(prim, *avals, **params)),
                  f"save_from_both_policies({policy_1!r}, {policy_2!r})")
